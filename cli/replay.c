/* `tensorverbs replay FILE`: run a trace again and compare (testbed.h). */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char replay_usage[] =
	"usage: tensorverbs replay TRACE.jsonl\n"
	"       tensorverbs replay RECORDING.jsonl --sim\n"
	"\n"
	"Re-runs the scenario embedded in a trace written by `tensorverbs run\n"
	"--trace` with the trace's seed, and compares every event with the\n"
	"recorded one (wall-clock fields excepted).  The header's fault plan\n"
	"is armed again, with the same seed: faults fire at the same hits.\n"
	"\n"
	"\n"
	"--sim: a recording (`run --record`, `serve --record`, `merge`; made\n"
	"on real verbs or on the simulator) is run in the simulator, each CQ\n"
	"handing out its completions in the recorded order, the recorded\n"
	"faults firing at their hits; then every node's verbs and the\n"
	"outcome are compared (docs/recording.md).  Prints \"replayed\n"
	"identically\", or the first divergence and whether the outcome (or\n"
	"the failure kind) was reproduced.\n"
	"\n"
	"exit status: 0 identical, 1 the runs diverge (the first divergent\n"
	"event is printed), 2 bad usage or a malformed trace.\n";

static int parse_replay_args(int argc, char **argv, const char **file_p,
			     bool *sim_p)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "sim", no_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(replay_usage, stdout);
			return 1;
		}
		if (c == 'S') {
			*sim_p = true;
			continue;
		}
		fputs(replay_usage, stderr);
		return -EINVAL;
	}
	if (argc - optind != 1) {
		fputs(replay_usage, stderr);
		return -EINVAL;
	}
	*file_p = argv[optind];
	return 0;
}

static void print_line(const char *label, const char *line, const char *none)
{
	printf("  %-9s %s\n", label, line ? line : none);
}

static void print_divergence(const struct tv_tb_replay_report *r,
			     const char *path)
{
	if (r->summary_only) {
		printf("replay: all %" PRIu64 " events identical, but the summary differs in: %s\n",
		       r->events, r->diff);
		print_line("expected:", r->expected, "");
		print_line("actual:", r->actual, "");
		return;
	}
	printf("replay: first divergence at event %" PRIu64 " (line %" PRIu64
	       " of %s)%s%s\n", r->events, r->line, path,
	       r->diff[0] ? "; differs in: " : "", r->diff);
	if (r->previous)
		print_line("previous:", r->previous, "");
	print_line("expected:", r->expected, "(the trace has no more events)");
	print_line("actual:", r->actual, "(the run has no more events)");
}

static const char *sim_verdict(const struct tv_tb_replay_sim_report *r)
{
	if (r->same_outcome && !r->diverged && !r->held && !r->gave_up)
		return "replayed identically";
	if (r->same_failure_kind)
		return "reproduced: same failure kind";
	return r->same_outcome ? "same outcome" : "outcome differs";
}

static int replay_sim(const char *file)
{
	struct tv_tb_replay_sim_report r;
	const char *v;
	int rc = tv_tb_replay_sim(file, &r);

	if (rc) {
		fprintf(stderr, "tensorverbs replay --sim: %s\n", r.err);
		tv_tb_replay_sim_report_free(&r);
		return CLI_EXIT_USAGE;
	}
	v = sim_verdict(&r);
	printf("replay --sim: %s (%s recording, %" PRIu64 " events; "
	       "recorded %s: %s; simulator %s: %s)\n", v, r.backend, r.events,
	       r.rec_result, r.rec_summary, r.sim_result, r.sim_summary);
	if (r.diverged) {
		if (r.div_qp >= 0)
			printf("replay --sim: first divergence at recorded event %" PRIu64
			       " (node %u, QP %" PRId64 ": its %s %" PRIu64 ")\n",
			       r.div_index, r.div_node, r.div_qp,
			       r.div_polls ? "completion" : "state change or post",
			       r.div_k);
		else
			printf("replay --sim: first divergence at recorded event %" PRIu64
			       " (node %u's own events: its event %" PRIu64 ")\n",
			       r.div_index, r.div_node, r.div_k);
		print_line("recorded:", r.expected, "(the recording has no more events of that node)");
		print_line("simulator:", r.actual, "(the simulator did nothing more on that node)");
	}
	if (r.ops_places)
		printf("replay --sim: operations: %" PRIu64 " recorded time points; %"
		       PRIu64 " first operation(s) held back to their recorded place, %"
		       PRIu64 " started without it after %.0f ms\n",
		       r.ops_places, r.ops_waited, r.ops_forced,
		       TV_TB_REPLAY_GATE_MAX_NS / 1e6);
	if (r.fires)
		printf("replay --sim: faults: %" PRIu64 " recorded firing(s), %" PRIu64
		       " fired again in the simulator (same node, point and hit)\n",
		       r.fires, r.fires_same);
	for (int i = 0; i < TV_TB_REPLAY_SIM_FAILS && r.sim_failures[i][0]; i++)
		printf("replay --sim: the simulator's run: FAIL: %s\n",
		       r.sim_failures[i]);
	if (r.gave_up)
		printf("replay --sim: %zu QP(s) stopped following the recording "
		       "(more than 128 completions that never came next)\n",
		       r.gave_up);
	if (r.held)
		printf("replay --sim: %zu completion(s) never matched the "
		       "recorded order (held back at the end)\n", r.held);
	tv_tb_replay_sim_report_free(&r);
	return strcmp(v, "replayed identically") ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cli_replay(int argc, char **argv, const char *argv0)
{
	struct tv_tb_replay_report r = { 0 };
	const char *file;
	bool sim = false;
	int rc = parse_replay_args(argc, argv, &file, &sim), exit_code;

	(void)argv0;
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (sim)
		return replay_sim(file);
	rc = tv_tb_replay(file, &r);
	if (rc) {
		fprintf(stderr, "tensorverbs replay: %s\n", r.err);
		return CLI_EXIT_USAGE;
	}
	if (r.build_warning[0])
		fprintf(stderr, "replay: warning: %s\n", r.build_warning);
	switch (r.state) {
	case TV_TB_REPLAY_MALFORMED:
		fprintf(stderr, "tensorverbs replay: malformed trace: %s\n",
			r.err);
		exit_code = CLI_EXIT_USAGE;
		break;
	case TV_TB_REPLAY_DIVERGED:
		print_divergence(&r, file);
		exit_code = CLI_EXIT_FAIL;
		break;
	default:
		printf("replay: %" PRIu64 " events identical to %s%s%s\n",
		       r.events, file, r.result[0] ? ", result " : "",
		       r.result);
		exit_code = CLI_EXIT_OK;
	}
	tv_tb_replay_report_free(&r);
	return exit_code;
}

static const char merge_usage[] =
	"usage: tensorverbs merge OUT.jsonl RECORDING.jsonl...\n"
	"\n"
	"Joins the recordings of one run's processes (`serve --record`, one\n"
	"per node) into one recording of the whole run, its events in time\n"
	"order, for `replay --sim` (docs/recording.md).  They must share the\n"
	"scenario, seed and backend, one per node.\n"
	"\n"
	"exit status: 0 written, 2 bad usage or an input that is not one of\n"
	"the run's recordings (named).\n";

int cli_merge(int argc, char **argv, const char *argv0)
{
	char err[1024];
	int rc;

	(void)argv0;
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(merge_usage, stdout);
		return CLI_EXIT_OK;
	}
	if (argc < 3 || argv[1][0] == '-') {
		fputs(merge_usage, stderr);
		return CLI_EXIT_USAGE;
	}
	rc = tv_tb_record_merge(argv[1], (const char *const *)argv + 2,
				(size_t)argc - 2, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "tensorverbs merge: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	printf("merge: %d recordings into %s\n", argc - 2, argv[1]);
	return CLI_EXIT_OK;
}
