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
	"                         [--workload NAME]\n"
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
	"\n"
	"At a violation: writes DIR/seed-S.json and DIR/seed-S.jsonl, prints\n"
	"the command that reproduces it and exits 1.  Exit 0: no violation.\n"
	"TV_BREAK=NAME breaks an engine on purpose (tests of the tools only;\n"
	"the names: a bad one lists them).\n";

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
	printf("swarm: %" PRIu64 " seeds (%" PRIu64 "..%" PRIu64 "), %" PRIu64
	       " operations, %" PRIu64 " sim events, %u jobs, %.1f s: %.0f seeds/min; %"
	       PRIu64 " violations\n", st->done, a->first,
	       a->first + a->seeds - 1, st->ops, st->events, a->jobs,
	       st->secs, st->secs > 0 ? (double)st->done * 60.0 / st->secs : 0.0,
	       st->violations);
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
	int rc, exit_code = CLI_EXIT_USAGE;

	if (!st)
		return CLI_EXIT_USAGE;
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
	summary(&a, st);
	for (size_t i = 0; i < st->nfail && (i == 0 || a.keep_going); i++)
		print_failure(argv0, &a, &st->fail[i]);
	exit_code = st->violations ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
	free(st);
	return exit_code;
}
