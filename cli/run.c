/* `tensorverbs run`: one scenario on the simulator, every check on. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/workload.h>

#include "cli.h"

static const char run_usage[] =
	"usage: tensorverbs run [SCENARIO.json] [options]\n"
	"\n"
	"Builds a simulated world from the scenario (docs/scenarios.md) and\n"
	"its workload (\"workload\", default rendezvous: one engine per node,\n"
	"every send and recv at its virtual time), runs it until quiescence\n"
	"and checks every expectation and invariant.  Without a file, runs\n"
	"the default workload's built-in demo.\n"
	"\n"
	"options:\n"
	"  --seed N       seed of the run (default: the scenario's \"seed\")\n"
	"  --faults PLAN  inject faults (docs/faults.md): a JSON array of rules\n"
	"                 or \"point[:key=value,...][;point...]\"; a rule for a\n"
	"                 point the scenario's \"faults\" has replaces it\n"
	"  --quiet, -q    print nothing but failures (and --print-hash)\n"
	"  --print-hash   print the simulator's event hash: event-hash: 0x...\n"
	"  --trace FILE   write every event to FILE as JSON Lines, for\n"
	"                 `tensorverbs replay` and `tensorverbs show`\n"
	"  --record FILE  record what every node's verbs facade was asked and\n"
	"                 answered, for `tensorverbs replay --sim`\n"
	"                 (docs/recording.md)\n"
	"  --verbose, -v  print every workload and simulator event\n"
	"  --json FILE    the result as JSON (docs/results.md)\n"
	"  --junit FILE   the result as JUnit XML: one test case\n"
	"  --help, -h     this text\n"
	"\n"
	"exit status: 0 all checks held, 1 a check failed, 2 bad usage or\n"
	"scenario.  A failure prints the command that reproduces it.\n"
	"\n"
	"TV_BREAK=no-ack-timeout in the environment breaks the engine on\n"
	"purpose (for testing swarm and shrink only; docs/swarm.md).\n";

struct run_args {
	const char *file;
	bool has_seed;
	uint64_t seed;
	bool quiet;
	bool print_hash;
	bool verbose;
	const char *trace_file;
	const char *record_file;
	const char *json_file;
	const char *junit_file;
	const char *faults;        /* --faults PLAN, as given */
	const char *breakage;      /* TV_BREAK, or NULL */
};

static int parse_run_args(int argc, char **argv, struct run_args *a)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "print-hash", no_argument, NULL, 'H' },
		{ "trace", required_argument, NULL, 'T' },
		{ "record", required_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "faults", required_argument, NULL, 'F' },
		{ "json", required_argument, NULL, 'J' },
		{ "junit", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	if (cli_breakage_from_env("run", &a->breakage))
		return -EINVAL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "qvh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cli_parse_u64(optarg, &a->seed)) {
				fprintf(stderr, "tensorverbs run: bad --seed '%s'\n",
					optarg);
				return -EINVAL;
			}
			a->has_seed = true;
			break;
		case 'q': a->quiet = true; break;
		case 'H': a->print_hash = true; break;
		case 'T': a->trace_file = optarg; break;
		case 'R': a->record_file = optarg; break;
		case 'v': a->verbose = true; break;
		case 'F': a->faults = optarg; break;
		case 'J': a->json_file = optarg; break;
		case 'U': a->junit_file = optarg; break;
		case 'h': fputs(run_usage, stdout); return 1;
		default: fputs(run_usage, stderr); return -EINVAL;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "tensorverbs run: one scenario file at most\n");
		return -EINVAL;
	}
	a->file = optind < argc ? argv[optind] : NULL;
	return 0;
}

/* --json and --junit: 0, or -errno (printed). */
static int write_results(const struct run_args *a, const struct tv_tb_run *run,
			 const char *repro)
{
	const struct tv_tb_failures *fl = tv_tb_run_failures(run);
	const struct tv_tb_scenario *sc = tv_tb_run_scenario(run);
	char name[512], text[4096];
	struct tv_tb_junit_case c = { .classname = "tensorverbs.run" };
	json_t *o;
	size_t used = 0;
	int rc = 0;

	if (a->json_file) {
		o = tv_tb_run_result_json(run, repro);
		rc = tv_tb_json_write(a->json_file, o);
		json_decref(o);
		if (rc)
			fprintf(stderr, "tensorverbs run: cannot write %s: %s\n",
				a->json_file, strerror(-rc));
	}
	if (!a->junit_file)
		return rc;
	snprintf(name, sizeof(name), "%s (seed %" PRIu64 ")",
		 tv_tb_scenario_name(sc), tv_tb_run_result(run)->seed);
	c.name = name;
	c.time_s = (double)tv_tb_run_result(run)->wall_ns / 1e9;
	text[0] = 0;
	for (size_t i = 0; i < fl->count && i < TV_TB_FAILURES_KEPT; i++)
		used += (size_t)snprintf(text + used, used < sizeof(text) ?
					 sizeof(text) - used : 0, "%s\n",
					 fl->msgs[i]);
	if (fl->count) {
		c.failure = fl->msgs[0];
		c.type = tv_tb_fail_kind_name(fl->first);
		if (used < sizeof(text))
			snprintf(text + used, sizeof(text) - used,
				 "reproduce: %s\n", repro ? repro : "?");
		c.text = text;
	}
	rc = tv_tb_junit_write(a->junit_file, "tensorverbs run", &c, 1);
	if (rc)
		fprintf(stderr, "tensorverbs run: cannot write %s: %s\n",
			a->junit_file, strerror(-rc));
	return rc;
}

/* The scenario (or the default workload's demo), its --faults applied. */
static int load(const struct run_args *a, struct tv_tb_scenario **sc_p)
{
	const char *origin = a->file ? a->file : "built-in demo";
	char err[TV_TB_ERR_MAX];
	int rc;

	if (a->file)
		rc = tv_tb_scenario_load_file(a->file, sc_p, err);
	else
		rc = tv_tb_scenario_load_string(tv_tb_workload_default()->demo,
						origin, sc_p, err);
	if (rc) {
		/* Out of memory is not the file's fault (nor a usage error). */
		fprintf(stderr, "tensorverbs run: %s %s: %s\n",
			rc == -ENOMEM ? "loading scenario" : "invalid scenario",
			a->file ? a->file : "(demo)", err);
		return rc;
	}
	rc = cli_apply_faults(*sc_p, a->faults, "run");
	if (rc)
		tv_tb_scenario_free(*sc_p);
	return rc;
}

static void report(const struct run_args *a, const struct tv_tb_run *run,
		   int rc)
{
	if (rc)
		fprintf(stderr, "tensorverbs run: %s\n", strerror(-rc));
	else if (!a->quiet)
		tv_tb_run_print_summary(run, stdout);
	if (a->print_hash && !rc)
		printf("event-hash: 0x%016" PRIx64 "\n",
		       tv_tb_run_result(run)->event_hash);
}

/* The run, its trace if asked for: 0, or how it could not be made. */
static int run_traced(const struct run_args *a,
		      const struct tv_tb_scenario *sc,
		      struct tv_tb_run_opts *opts, struct tv_tb_run **run_p,
		      int *trace_rc_p)
{
	struct tv_tb_trace *trace = NULL;
	int rc;

	*trace_rc_p = 0;
	if (a->trace_file) {
		rc = tv_tb_trace_create(a->trace_file, sc, a->file, opts->seed,
					a->breakage, &trace);
		if (rc) {
			fprintf(stderr, "tensorverbs run: cannot write trace %s: %s\n",
				a->trace_file, strerror(-rc));
			*trace_rc_p = rc;
			return rc;
		}
	}
	opts->trace = trace;
	if (a->record_file) {
		rc = tv_tb_record_create(a->record_file, sc, a->file,
					 opts->seed, "sim", &opts->tap);
		if (rc) {
			fprintf(stderr, "tensorverbs run: cannot record to %s: %s\n",
				a->record_file, strerror(-rc));
			if (trace)
				tv_tb_trace_finish(trace, NULL);
			*trace_rc_p = rc;
			return rc;
		}
	}
	rc = tv_tb_run(sc, opts, run_p);
	if (opts->tap) {
		static const struct tv_tb_result none_res;
		static const struct tv_tb_failures none_fails;
		int rrc = tv_tb_record_finish(
			opts->tap, *run_p ? tv_tb_run_result(*run_p) : &none_res,
			*run_p ? tv_tb_run_failures(*run_p) : &none_fails);

		opts->tap = NULL;
		if (rrc) {
			fprintf(stderr, "tensorverbs run: cannot record to %s: %s\n",
				a->record_file, strerror(-rrc));
			*trace_rc_p = rrc;
		}
	}
	if (trace) {
		*trace_rc_p = tv_tb_trace_finish(trace, rc ? NULL : *run_p);
		if (*trace_rc_p)
			fprintf(stderr, "tensorverbs run: cannot write trace %s: %s\n",
				a->trace_file, strerror(-*trace_rc_p));
	}
	return rc;
}

int cli_run(int argc, char **argv, const char *argv0)
{
	struct run_args a = { 0 };
	struct tv_tb_run_opts opts;
	struct tv_tb_run *run = NULL;
	struct tv_tb_scenario *sc;
	char *repro;
	bool failed, corrupt;
	int rc = parse_run_args(argc, argv, &a), trace_rc, exit_code;

	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	rc = load(&a, &sc);
	if (rc)
		return rc == -ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
	tv_tb_run_opts_init(&opts, sc);
	if (a.has_seed)
		opts.seed = a.seed;
	opts.verbose = a.verbose;
	opts.breakage = a.breakage;
	rc = run_traced(&a, sc, &opts, &run, &trace_rc);
	if (rc && !run && trace_rc == rc) {
		exit_code = CLI_EXIT_USAGE;
		goto free_scenario;
	}
	report(&a, run, rc);
	if (run)
		tv_tb_failures_print(tv_tb_run_failures(run), stderr);
	failed = rc || tv_tb_run_result(run)->failures;
	corrupt = !failed && !strcmp(tv_tb_run_outcome(run), "CORRUPTED");
	if (!a.quiet || failed || corrupt)
		printf("result      %s\n", failed ? "FAIL" : corrupt ?
		       "CORRUPTED (corrupted bytes delivered as ok: "
		       "undetected)" : "PASS");
	repro = cli_repro_command(a.breakage, argv0, a.file, a.faults,
				  opts.seed);
	if (failed)
		fprintf(stderr, "reproduce: %s\n", repro ? repro : "?");
	exit_code = failed ? CLI_EXIT_FAIL : corrupt ? CLI_EXIT_CORRUPT :
		    CLI_EXIT_OK;
	if (trace_rc || (run && write_results(&a, run, failed ? repro : NULL)))
		exit_code = CLI_EXIT_USAGE;
	free(repro);
	tv_tb_run_free(run);
free_scenario:
	tv_tb_scenario_free(sc);
	return exit_code;
}
