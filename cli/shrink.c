/* `tensorverbs shrink FILE`: a minimal reproducer (testbed.h, docs/swarm.md). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char shrink_usage[] =
	"usage: tensorverbs shrink FILE [--out MIN.json] [--seed N] [--kind KIND]\n"
	"\n"
	"FILE is a failing scenario (its \"faults\" plan included, e.g. from\n"
	"tensorverbs swarm) or a trace of a failing run.  Reduces it while it\n"
	"still fails with the same kind of violation (fewer fault rules, lower\n"
	"counts, and its workload's edits: fewer steps or programs, smaller\n"
	"sizes, fewer nodes, simpler data).  Writes the minimal\n"
	"reproducer (default: FILE with .min.json) and prints its size and the\n"
	"command that reproduces it.\n"
	"\n"
	"options:\n"
	"  --out FILE   where the minimal scenario goes\n"
	"  --seed N     seed of the runs (default: the trace's, or the file's\n"
	"               \"seed\")\n"
	"  --max-runs N stop after N runs with what is smallest so far\n"
	"               (default 10000)\n"
	"  --kind KIND  the violation to keep (default: the first one's):\n"
	"               runner expect data callback hang in-flight write error\n"
	"               leak outcome crash\n"
	"\n"
	"exit status: 0 written, 2 bad usage, or FILE does not fail.\n";

static int parse_shrink_args(int argc, char **argv, const char **in_p,
			     const char **out_p, struct tv_tb_shrink_opts *o)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 's' },
		{ "kind", required_argument, NULL, 'k' },
		{ "max-runs", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': *out_p = optarg; break;
		case 's':
			if (cli_parse_u64(optarg, &o->seed))
				goto bad;
			o->has_seed = true;
			break;
		case 'k':
			if (tv_tb_fail_kind_from_name(optarg, &o->kind))
				goto bad;
			o->has_kind = true;
			break;
		case 'm':
			if (cli_parse_u64(optarg, &o->max_runs) || !o->max_runs)
				goto bad;
			break;
		case 'h': fputs(shrink_usage, stdout); return 1;
		default: goto bad;
		}
	}
	if (argc - optind != 1)
		goto bad;
	*in_p = argv[optind];
	return cli_breakage_from_env("shrink", &o->breakage);
bad:
	fputs(shrink_usage, stderr);
	return -EINVAL;
}

static void default_out(const char *in, char *out, size_t cap)
{
	size_t n = strlen(in);

	if (n > 6 && !strcmp(in + n - 6, ".jsonl"))
		n -= 6;
	else if (n > 5 && !strcmp(in + n - 5, ".json"))
		n -= 5;
	snprintf(out, cap, "%.*s.min.json", (int)n, in);
}

static void report(const char *argv0, const char *in, const char *out,
		   const struct tv_tb_shrink_report *r)
{
	printf("shrink: %s fails with [%s]: %s\n", in,
	       tv_tb_fail_kind_name(r->kind), r->first_msg);
	printf("shrink: before: %s\n", r->before);
	printf("shrink: after:  %s\n", r->after);
	printf("shrink: %" PRIu64 " runs in %.1f s%s; still fails [%s]: %s\n",
	       r->runs, r->secs, r->budget_reached ?
	       " (--max-runs reached: smaller may exist)" : "",
	       tv_tb_fail_kind_name(r->kind), r->msg);
	printf("minimal: %s (%" PRIu64 " %s, %" PRIu64 " sim events)\n",
	       out, r->ops, r->unit, r->sim_events);
	printf("reproduce: ");
	if (r->breakage[0])
		printf("TV_BREAK=%s ", r->breakage);
	cli_put_shell_word(stdout, argv0);
	printf(" run ");
	cli_put_shell_word(stdout, out);
	printf(" --seed %" PRIu64 "\n", r->seed);
}

int cli_shrink(int argc, char **argv, const char *argv0)
{
	struct tv_tb_shrink_opts o = { .max_runs = 10000 };
	struct tv_tb_shrink_report r;
	const char *in = NULL, *out = NULL;
	char out_buf[4096], err[1200];
	int rc;

	rc = parse_shrink_args(argc, argv, &in, &out, &o);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (!out) {
		default_out(in, out_buf, sizeof(out_buf));
		out = out_buf;
	}
	rc = tv_tb_shrink(in, out, &o, &r, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "tensorverbs shrink: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	report(argv0, in, out, &r);
	return CLI_EXIT_OK;
}
