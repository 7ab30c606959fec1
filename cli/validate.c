/* `tensorverbs validate`: does RDMA work here, for every protocol? */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char validate_usage[] =
	"usage: tensorverbs validate [--out DIR] [--scenarios DIR]\n"
	"                            [--timeout S] [--no-bench] [--json FILE]\n"
	"                            [--junit FILE]\n"
	"\n"
	"On this host's RDMA devices (RDMA_DEVICE: only that one): the\n"
	"devices and what each protocol needs of them, the RDMA_* variables,\n"
	"every scenario of DIR, DIR/port and DIR/gather (default scenarios/)\n"
	"as one process per node (node j on device j mod the devices), the\n"
	"fault scenarios real verbs can run, and with perftest installed\n"
	"each protocol's benchmark beside it.  Writes DIR/report.json and\n"
	"DIR/report.html (default validate-report/; docs/validate.md).\n"
	"\n"
	"  --timeout S    per scenario process (default 180)\n"
	"  --no-bench     skip the benchmarks\n"
	"  --json FILE    report.json here too\n"
	"  --junit FILE   every check as a JUnit test case\n"
	"\n"
	"Across hosts: mpirun -np N tensorverbs validate [options], a rank per\n"
	"host (RDMA_DEVICE per rank with mpirun -x).  Every rank checks its\n"
	"devices; scenario node j runs on rank j mod N; the benchmarks run\n"
	"node 0 on rank 0 and node 1 on rank 1, perftest's server on rank 1;\n"
	"rank 0 writes the report (the others' logs under DIR/rankR).\n"
	"\n"
	"exit status: 0 every check passed or was skipped, 1 a check failed,\n"
	"2 bad usage or the report could not be written.\n";

int cli_validate(int argc, char **argv, const char *argv0)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "scenarios", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "no-bench", no_argument, NULL, 'B' },
		{ "junit", required_argument, NULL, 'U' },
		{ "json", required_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct tv_tb_validate_opts o = {
		.out_dir = "validate-report", .self = "/proc/self/exe",
		.timeout_s = 180, .bench = true, .progress = stdout,
	};
	const char *junit = NULL, *json = NULL, *base = "scenarios";
	char port_dir[4096], gather_dir[4096];
	const char *dirs[4];
	char self[4096];
	ssize_t n;
	struct tv_tb_validation *v = NULL;
	uint64_t t;
	uint32_t rank, size;
	int c, rc;

	(void)argv0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': o.out_dir = optarg; break;
		case 's': base = optarg; break;
		case 'B': o.bench = false; break;
		case 'U': junit = optarg; break;
		case 'J': json = optarg; break;
		case 't':
			if (cli_parse_u64(optarg, &t) || !t || t > 86400) {
				fprintf(stderr, "tensorverbs validate: bad "
					"--timeout '%s'\n", optarg);
				return CLI_EXIT_USAGE;
			}
			o.timeout_s = (uint32_t)t;
			break;
		case 'h': fputs(validate_usage, stdout); return CLI_EXIT_OK;
		default: fputs(validate_usage, stderr); return CLI_EXIT_USAGE;
		}
	}
	snprintf(port_dir, sizeof(port_dir), "%s/port", base);
	snprintf(gather_dir, sizeof(gather_dir), "%s/gather", base);
	dirs[0] = base;
	dirs[1] = port_dir;
	dirs[2] = gather_dir;
	dirs[3] = NULL;
	o.scenario_dirs = dirs;
	/* Our own path, so that ps names the serve processes we start. */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		o.self = self;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tv_tb_mpi_init(&argc, &argv))
		return CLI_EXIT_USAGE;
	rc = tv_tb_validate(&o, &v);
	if (rc) {
		fprintf(stderr, "tensorverbs validate: %s\n", strerror(-rc));
		tv_tb_mpi_finalize();
		return CLI_EXIT_USAGE;
	}
	if (tv_tb_mpi_world(&rank, &size) && rank) {
		/* Rank 0 has every check and writes the report. */
		tv_tb_validation_free(v);
		c = tv_tb_mpi_worst(CLI_EXIT_OK);
		tv_tb_mpi_finalize();
		return c;
	}
	rc = tv_tb_validation_write(v, json);
	if (!rc && junit)
		rc = tv_tb_validation_junit(v, junit);
	if (rc)
		fprintf(stderr, "tensorverbs validate: cannot write the report: "
			"%s\n", strerror(-rc));
	else
		printf("validate: %s: report in %s/report.html and "
		       "report.json\n", tv_tb_validation_failed(v) ? "FAIL" :
		       "PASS", o.out_dir);
	c = rc ? CLI_EXIT_USAGE : tv_tb_validation_failed(v) ? CLI_EXIT_FAIL :
							       CLI_EXIT_OK;
	tv_tb_validation_free(v);
	c = tv_tb_mpi_worst(c);
	tv_tb_mpi_finalize();
	return c;
}
