/* `tensorverbs show TRACE --svg OUT.svg --chrome OUT.json` (testbed.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdint.h>

#include "cli.h"

static const char show_usage[] =
	"usage: tensorverbs show TRACE.jsonl [--svg OUT.svg] [--chrome OUT.json]\n"
	"                        [--from I] [--to I] [--max-rows N]\n"
	"\n"
	"Draws a trace written by `tensorverbs run --trace`:\n"
	"  --svg FILE       a sequence diagram: one lane per node, time down,\n"
	"                   messages, writes, ACKs, errors, QP states\n"
	"  --chrome FILE    Chrome trace event JSON (chrome://tracing, Perfetto):\n"
	"                   a process per node, flows from each write to its\n"
	"                   delivery, request lifetimes\n"
	"  --from I, --to I only the events with these trace indices (inclusive)\n"
	"  --max-rows N     SVG: at most N rows (default 4000)\n"
	"\n"
	"exit status: 0 written, 2 bad usage or a malformed trace.\n";

static int parse_num(const char *opt, const char *s, uint64_t *v_p)
{
	if (cli_parse_u64(s, v_p)) {
		fprintf(stderr, "tensorverbs show: bad %s '%s'\n", opt, s);
		return -EINVAL;
	}
	return 0;
}

static int parse_show_args(int argc, char **argv, const char **file_p,
			   struct tv_tb_show_opts *o)
{
	static const struct option opts[] = {
		{ "svg", required_argument, NULL, 's' },
		{ "chrome", required_argument, NULL, 'c' },
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 't' },
		{ "max-rows", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t rows = 4000;
	int c, rc = 0;

	o->last = UINT64_MAX;
	optind = 1;
	while (!rc && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': o->svg_path = optarg; break;
		case 'c': o->chrome_path = optarg; break;
		case 'f': rc = parse_num("--from", optarg, &o->first); break;
		case 't': rc = parse_num("--to", optarg, &o->last); break;
		case 'm': rc = parse_num("--max-rows", optarg, &rows); break;
		case 'h': fputs(show_usage, stdout); return 1;
		default: rc = -EINVAL; break;
		}
	}
	if (!rc && (argc - optind != 1 || (!o->svg_path && !o->chrome_path) ||
		    !rows))
		rc = -EINVAL;
	if (rc) {
		fputs(show_usage, stderr);
		return rc;
	}
	o->max_rows = (size_t)rows;
	*file_p = argv[optind];
	return 0;
}

int cli_show(int argc, char **argv, const char *argv0)
{
	struct tv_tb_show_opts o = { 0 };
	const char *file;
	char err[1200];
	int rc = parse_show_args(argc, argv, &file, &o);

	(void)argv0;
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	rc = tv_tb_show(file, &o, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "tensorverbs show: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}
