/* `tensorverbs swarm`: swarm testing (testbed.h, docs/swarm.md). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorverbs/faults.h>

#include "cli.h"

#define SWARM_MAX_JOBS 256

static const char swarm_usage[] =
	"usage: tensorverbs swarm --seeds N [--jobs J] [--first S] [--out DIR]\n"
	"                         [--keep-going] [--without POINT,...]\n"
	"                         [--workload NAME] [--json FILE] [--junit FILE]\n"
	"\n"
	"Swarm testing: seed S draws a scenario of one of the workloads (its\n"
	"generator draws nodes, sizes, orders, links: docs/swarm.md) and a\n"
	"fault mix of the points it may arm (each fault kind on or off, its\n"
	"rate drawn), runs it with every invariant checked, for seeds\n"
	"S .. S+N-1.\n"
	"\n"
	"options:\n"
	"  --seeds N      how many seeds (required)\n"
	"  --first S      the first seed (default 1)\n"
	"  --jobs J       worker processes (default: the number of CPUs)\n"
	"  --out DIR      where a failing seed's scenario and trace go\n"
	"                 (default ./swarm-failures)\n"
	"  --keep-going   do not stop at the first violation\n"
	"  --without P[,P...]  never arm these fault points (tensorverbs faults)\n"
	"  --workload W   only this workload's scenarios (default: every\n"
	"                 workload with a generator)\n"
	"  --json FILE    the result as JSON (docs/results.md)\n"
	"  --junit FILE   JUnit XML: a test case for the seed range, one per\n"
	"                 failing seed with its reproducer\n"
	"\n"
	"Progress is redrawn on a terminal (seeds, rate, violations, time\n"
	"left); a log gets the summary only.\n"
	"\n"
	"At a violation: writes DIR/seed-S.json and DIR/seed-S.jsonl, prints\n"
	"the command that reproduces it and exits 1.  Exit 0: no violation.\n"
	"TV_BREAK=NAME breaks an engine on purpose (tests of the tools only;\n"
	"the names: a bad one lists them).\n";

/* Where --json and --junit go (NULL: nowhere). */
static const char *json_file, *junit_file;

static int parse_opt(struct tv_tb_swarm_opts *a, int c, uint64_t *jobs_p)
{
	char err[160];
	const char *bad = NULL;

	switch (c) {
	case 'n': bad = cli_parse_u64(optarg, &a->seeds) ? "--seeds" : NULL; break;
	case 'f': bad = cli_parse_u64(optarg, &a->first) ? "--first" : NULL; break;
	case 'j': bad = cli_parse_u64(optarg, jobs_p) ? "--jobs" : NULL; break;
	case 'o': a->out_dir = optarg; break;
	case 'k': a->keep_going = true; break;
	case 'W': a->workload = optarg; break;
	case 'J': json_file = optarg; break;
	case 'U': junit_file = optarg; break;
	case 'w':
		if (tv_tb_swarm_points(optarg, &a->without, err, sizeof(err))) {
			fprintf(stderr, "tensorverbs swarm: %s\n", err);
			return -EINVAL;
		}
		break;
	case 'h': fputs(swarm_usage, stdout); return 1;
	default: fputs(swarm_usage, stderr); return -EINVAL;
	}
	if (bad) {
		fprintf(stderr, "tensorverbs swarm: bad %s '%s'\n", bad, optarg);
		return -EINVAL;
	}
	return 0;
}

static int parse_swarm_args(int argc, char **argv, struct tv_tb_swarm_opts *a)
{
	static const struct option opts[] = {
		{ "seeds", required_argument, NULL, 'n' },
		{ "first", required_argument, NULL, 'f' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "out", required_argument, NULL, 'o' },
		{ "keep-going", no_argument, NULL, 'k' },
		{ "without", required_argument, NULL, 'w' },
		{ "workload", required_argument, NULL, 'W' },
		{ "json", required_argument, NULL, 'J' },
		{ "junit", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t jobs = 0;
	int c, rc;

	a->first = 1;
	a->out_dir = "swarm-failures";
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		if ((rc = parse_opt(a, c, &jobs)))
			return rc;
	if (optind != argc || !a->seeds || a->first > INT64_MAX - a->seeds ||
	    jobs > SWARM_MAX_JOBS) {
		fputs(swarm_usage, stderr);
		return -EINVAL;
	}
	if (a->workload && !tv_tb_workload_find(a->workload)) {
		fprintf(stderr, "tensorverbs swarm: unknown workload '%s'\n",
			a->workload);
		return -EINVAL;
	}
	if (!jobs)
		jobs = (uint64_t)sysconf(_SC_NPROCESSORS_ONLN);
	a->jobs = (unsigned)(jobs < 1 ? 1 : jobs > a->seeds ? a->seeds : jobs);
	return cli_breakage_from_env("swarm", &a->breakage);
}

/* What the corruptions came to, per configuration (docs/faults.md). */
static void print_corruption(const struct tv_tb_swarm_report *st)
{
	static const char *const conf[2] = { "validation off",
					     "validation on" };

	if (!st->corrupt[0][TV_TB_CORRUPT_SEEDS] &&
	    !st->corrupt[1][TV_TB_CORRUPT_SEEDS])
		return;
	printf("%-30s %9s %12s %11s %11s\n", "corruption detection", "seeds",
	       "injected", "detected", "undetected");
	for (int v = 0; v < 2; v++) {
		const uint64_t *c = st->corrupt[v];

		printf("%-30s %9" PRIu64 " %12" PRIu64 " %11" PRIu64 " %11"
		       PRIu64 "\n", conf[v], c[TV_TB_CORRUPT_SEEDS],
		       c[TV_TB_CORRUPT_FIRED], c[TV_TB_CORRUPT_DETECTED],
		       c[TV_TB_CORRUPT_UNDETECTED]);
	}
}

static void summary(const struct tv_tb_swarm_opts *a,
		    const struct tv_tb_swarm_report *st)
{
	const struct tv_flt_point_info *pts;
	size_t n;

	pts = tv_flt_points(&n);
	printf("%-30s %9s %12s %11s\n", "fault kind", "seeds on", "fires",
	       "violations");
	for (size_t i = 0; i < n && i < TV_TB_MAX_POINTS; i++) {
		if (a->without & (1u << i))
			printf("%-30s %9s\n", pts[i].name, "--without");
		else
			printf("%-30s %9" PRIu64 " %12" PRIu64 " %11" PRIu64 "\n",
			       pts[i].name, st->on[i], st->fires[i], st->bad[i]);
	}
	printf("%-30s %9" PRIu64 " %12s %11" PRIu64 "\n", "(no faults at all)",
	       st->no_faults, "-", st->bad_no_faults);
	print_corruption(st);
	printf("swarm: %" PRIu64 " seeds (%" PRIu64 "..%" PRIu64 "), %" PRIu64
	       " operations, %" PRIu64 " sim events, %u jobs, %.1f s: %.0f seeds/min; %"
	       PRIu64 " violations\n", st->done, a->first,
	       a->first + a->seeds - 1, st->ops, st->events, a->jobs,
	       st->secs, st->secs > 0 ? (double)st->done * 60.0 / st->secs : 0.0,
	       st->violations);
}

/* --junit: the seed range, then each failing seed kept. */
static int write_junit(const char *argv0, const struct tv_tb_swarm_opts *a,
		       const struct tv_tb_swarm_report *st)
{
	struct tv_tb_junit_case c[TV_TB_SWARM_KEEP + 1] = { 0 };
	char names[TV_TB_SWARM_KEEP + 1][96], texts[TV_TB_SWARM_KEEP][1024];
	char *repro[TV_TB_SWARM_KEEP] = { 0 };
	size_t n = 1;
	int rc;

	snprintf(names[0], sizeof(names[0]), "seeds %" PRIu64 "..%" PRIu64
		 " (%s)", a->first, a->first + a->seeds - 1,
		 a->workload ? a->workload : "every workload");
	c[0] = (struct tv_tb_junit_case){
		.classname = "tensorverbs.swarm", .name = names[0],
		.time_s = st->secs,
		.failure = st->violations ? "violations in the seed range" :
					    NULL,
		.type = "violation",
	};
	for (size_t i = 0; i < st->nfail && n <= TV_TB_SWARM_KEEP; i++, n++) {
		const struct tv_tb_swarm_failure *f = &st->fail[i];

		repro[i] = f->written ? cli_repro_command(a->breakage, argv0,
							   f->file, NULL,
							   f->seed) : NULL;
		snprintf(names[n], sizeof(names[n]), "seed %" PRIu64, f->seed);
		snprintf(texts[i], sizeof(texts[i]), "%s\nreproduce: %s\n",
			 f->msg, repro[i] ? repro[i] : "(scenario not written)");
		c[n] = (struct tv_tb_junit_case){
			.classname = "tensorverbs.swarm", .name = names[n],
			.failure = f->msg, .type = tv_tb_fail_kind_name(f->first),
			.text = texts[i],
		};
	}
	rc = tv_tb_junit_write(junit_file, "tensorverbs swarm", c, n);
	for (size_t i = 0; i < TV_TB_SWARM_KEEP; i++)
		free(repro[i]);
	return rc;
}

static int write_results(const char *argv0, const struct tv_tb_swarm_opts *a,
			 const struct tv_tb_swarm_report *st)
{
	int rc = 0;

	if (json_file) {
		json_t *o = tv_tb_swarm_result_json(a, st);

		rc = tv_tb_json_write(json_file, o);
		json_decref(o);
		if (rc)
			fprintf(stderr, "tensorverbs swarm: cannot write %s: %s\n",
				json_file, strerror(-rc));
	}
	if (junit_file && !rc) {
		rc = write_junit(argv0, a, st);
		if (rc)
			fprintf(stderr, "tensorverbs swarm: cannot write %s: %s\n",
				junit_file, strerror(-rc));
	}
	return rc;
}

static void print_failure(const char *argv0, const struct tv_tb_swarm_opts *a,
			  const struct tv_tb_swarm_failure *f)
{
	printf("FAIL seed %" PRIu64 ": [%s] %s\n", f->seed,
	       tv_tb_fail_kind_name(f->first), f->msg);
	if (!f->written) {
		printf("  %" PRIu64 " failures; cannot write its scenario to %s\n",
		       f->failures, a->out_dir);
		return;
	}
	printf("  %" PRIu64 " failures; scenario and fault plan: %s\n",
	       f->failures, f->file);
	if (f->rerun_status == CLI_EXIT_FAIL)
		printf("  trace: %s\n", f->trace);
	else
		printf("  NOT REPRODUCED in a fresh process (run exit %d): the run is not deterministic; trace: %s\n",
		       f->rerun_status, f->trace);
	printf("reproduce: ");
	if (a->breakage)
		printf("TV_BREAK=%s ", a->breakage);
	cli_put_shell_word(stdout, argv0);
	printf(" run ");
	cli_put_shell_word(stdout, f->file);
	printf(" --seed %" PRIu64 "\n", f->seed);
}

int cli_swarm(int argc, char **argv, const char *argv0)
{
	struct tv_tb_swarm_opts a = { 0 };
	struct tv_tb_swarm_report *st = calloc(1, sizeof(*st));
	uint32_t rank = 0, size = 1;
	int rc, exit_code = CLI_EXIT_USAGE;

	if (!st)
		return CLI_EXIT_USAGE;
	/* Under mpirun the ranks share the seeds; rank 0 reports. */
	if (tv_tb_mpi_init(&argc, &argv)) {
		free(st);
		return CLI_EXIT_USAGE;
	}
	tv_tb_mpi_world(&rank, &size);
	rc = parse_swarm_args(argc, argv, &a);
	if (rc) {
		exit_code = rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
		goto out;
	}
	a.argv0 = argv0;
	a.progress = stderr;
	rc = tv_tb_swarm(&a, st);
	if (rc) {
		fprintf(stderr, "tensorverbs swarm: %s\n", strerror(-rc));
		goto out;
	}
	exit_code = st->violations ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	if (rank)
		goto out; /* every rank has the report: rank 0 tells it */
	if (size > 1)
		printf("swarm: %u MPI ranks, %u jobs each\n", size, a.jobs);
	summary(&a, st);
	for (size_t i = 0; i < st->nfail && (i == 0 || a.keep_going); i++)
		print_failure(argv0, &a, &st->fail[i]);
	if (write_results(argv0, &a, st))
		exit_code = CLI_EXIT_USAGE;
out:
	free(st);
	tv_tb_mpi_finalize();
	return exit_code;
}
