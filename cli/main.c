/*
 * tensorverbs: the command line.  Subcommands live in their own files;
 * this one dispatches, prints usage and refuses the ones not written yet
 * (they fail loudly rather than pretend).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "devices.h"
#include "serve.h"

#ifndef TV_VERSION
#define TV_VERSION "unknown"
#endif

static const char usage_text[] =
	"usage: tensorverbs <command> [options]\n"
	"\n"
	"commands:\n"
	"  run [SCENARIO.json] [--seed N] [--quiet] [--print-hash]\n"
	"      [--trace FILE] [--verbose]\n"
	"        run a scenario (any workload) on the simulator and check\n"
	"        every invariant; without a file, run the built-in demo\n"
	"  replay TRACE.jsonl\n"
	"        run a trace's scenario again and compare every event\n"
	"  replay RECORDING.jsonl --sim\n"
	"        run a recording (run/serve --record) in the simulator, its\n"
	"        completions in the recorded order; report the divergences\n"
	"  merge OUT.jsonl RECORDING.jsonl...\n"
	"        join the recordings of one run's processes\n"
	"  show TRACE.jsonl [--svg OUT.svg] [--chrome OUT.json]\n"
	"        draw a trace: sequence diagram, Chrome/Perfetto trace\n"
	"  bench sim [--seconds S] [--seed N] [--workload W]\n"
	"        simulator throughput benchmark (events/s, transfers/s)\n"
	"  bench rxe [--sizes LIST] [--addr0 A:P --addr1 A:P] (in the rxe VM)\n"
	"        engine fetch bandwidth and latency between two RDMA devices\n"
	"  serve SCENARIO.json --node K --addr ADDR:PORT [--peer J=ADDR:PORT]...\n"
	"        one scenario node as a process on an RDMA device (rdma_cm);\n"
	"        every node of the scenario is one such process\n"
	"  fetch SCENARIO.json --node K ...\n"
	"        the same: a node fetches the tensors its recvs name and\n"
	"        answers the requests for its sends\n"
	"  swarm --seeds N [--jobs J] [--first S] [--out DIR] [--keep-going]\n"
	"        swarm testing: generated scenarios and fault mixes, every\n"
	"        invariant checked; a violation's reproducer goes to DIR\n"
	"  shrink FILE [--out MIN.json]\n"
	"        reduce a failing scenario or trace while it fails the same way\n"
	"  validate [--out DIR]\n"
	"        does RDMA work here, for every protocol?  report.json, .html\n"
	"  faults\n"
	"        list the fault points, what fires and what arg means\n"
	"  devices\n"
	"        list RDMA devices, ports, GIDs and limits (libibverbs)\n"
	"  version\n"
	"        print the version\n"
	"  help, --help\n"
	"        this text; `tensorverbs run --help` for one command\n"
	"\n"
	"exit status: 0 success, 1 a check failed, 2 bad usage or scenario\n";


static void usage(FILE *out)
{
	fputs(usage_text, out);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	/*
	 * jansson seeds its hash tables from /dev/urandom; a fixed seed keeps
	 * parsing (and so heap layout) the same from run to run.
	 */
	json_object_seed(1);
	if (!cmd) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") ||
	    !strcmp(cmd, "-h")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("tensorverbs %s\n", TV_VERSION);
		return CLI_EXIT_OK;
	}
	if (!strcmp(cmd, "run"))
		return cli_run(argc - 1, argv + 1, argv[0]);
	/* One node program: every node fetches and answers (rdma_run.h). */
	if (!strcmp(cmd, "serve") || !strcmp(cmd, "fetch"))
		return cli_serve(argc - 1, argv + 1, argv[0]);
	if (!strcmp(cmd, "bench"))
		return cli_bench(argc - 1, argv + 1, argv[0]);
	if (!strcmp(cmd, "replay"))
		return cli_replay(argc - 1, argv + 1, argv[0]);
	if (!strcmp(cmd, "merge"))
		return cli_merge(argc - 1, argv + 1, argv[0]);
	if (!strcmp(cmd, "show"))
		return cli_show(argc - 1, argv + 1, argv[0]);
	if (!strcmp(cmd, "swarm"))
		return cli_swarm(argc - 1, argv + 1, argv[0]);
	if (!strcmp(cmd, "shrink"))
		return cli_shrink(argc - 1, argv + 1, argv[0]);
	if (!strcmp(cmd, "validate"))
		return cli_validate(argc - 1, argv + 1, argv[0]);
	if (!strcmp(cmd, "faults"))
		return cli_faults(argc - 1, argv + 1, argv[0]);
	if (!strcmp(cmd, "devices"))
		return cli_devices(argc - 1, argv + 1, argv[0]);
	fprintf(stderr, "tensorverbs: unknown command '%s'\n\n", cmd);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
