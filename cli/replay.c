/*
 * `tensorverbs replay FILE`: run a trace's scenario again with its seed and
 * compare the new event stream with the recorded one, line by line.
 *
 * The comparison runs while the world runs: the recorder hands each new
 * event to compare_event(), which reads the next recorded line.  At the
 * first difference recording stops (the run still finishes, so teardown is
 * the same as ever) and the two lines are printed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plan.h"
#include "trace.h"

static const char replay_usage[] =
	"usage: tensorverbs replay TRACE.jsonl\n"
	"\n"
	"Re-runs the scenario embedded in a trace written by `tensorverbs run\n"
	"--trace` with the trace's seed, and compares every event with the\n"
	"recorded one (wall-clock fields excepted).  The header's fault plan\n"
	"is armed again, with the same seed: faults fire at the same hits.\n"
	"\n"
	"exit status: 0 identical, 1 the runs diverge (the first divergent\n"
	"event is printed), 2 bad usage or a malformed trace.\n";

/* Fields never compared: wall-clock time, and failure texts (they may
 * quote raw addresses; their number is compared). */
static const char *const ignored_keys[] = { "wall_ns", "failures", NULL };

enum cmp_state {
	CMP_SAME = 0,
	CMP_DIVERGED,
	CMP_MALFORMED,
};

struct replay_cmp {
	struct trace_reader rd;
	enum cmp_state state;
	json_t *expected;        /* the recorded line, NULL: the trace ended */
	json_t *actual;          /* the new line, NULL: the run ended */
	json_t *last_same;       /* the last event both agree on */
	char err[TRACE_ERR_MAX];
};

static bool ignored(const char *key)
{
	for (const char *const *k = ignored_keys; *k; k++)
		if (!strcmp(*k, key))
			return true;
	return false;
}

static void append_key(char *out, size_t cap, size_t *used,
		       const char *key)
{
	size_t room = *used < cap ? cap - *used : 0;

	*used += (size_t)snprintf(room ? out + *used : NULL, room, "%s%s",
				  *used ? ", " : "", key);
}

/* Keys whose values differ (ignored keys aside), as "a, b"; "" if none. */
static void diff_keys(json_t *a, json_t *b, char *out, size_t cap)
{
	const char *key;
	json_t *v;
	size_t used = 0;

	out[0] = '\0';
	json_object_foreach(a, key, v) {
		if (!ignored(key) && !json_equal(v, json_object_get(b, key)))
			append_key(out, cap, &used, key);
	}
	json_object_foreach(b, key, v) {
		if (!ignored(key) && !json_object_get(a, key))
			append_key(out, cap, &used, key);
	}
}

static bool lines_equal(json_t *a, json_t *b)
{
	char keys[8];

	diff_keys(a, b, keys, sizeof(keys));
	return keys[0] == '\0';
}

static void cmp_diverge(struct replay_cmp *c, json_t *expected,
			json_t *actual)
{
	c->state = CMP_DIVERGED;
	c->expected = expected;
	c->actual = actual ? json_incref(actual) : NULL;
}

static int compare_event(void *ctx, json_t *ev)
{
	struct replay_cmp *c = ctx;
	json_t *exp;
	int rc;

	rc = trace_reader_next(&c->rd, &exp, c->err);
	if (rc == -ENODATA) {
		snprintf(c->err, sizeof(c->err),
			 "%s: the trace ends without a summary line (truncated?)",
			 c->rd.path);
		c->state = CMP_MALFORMED;
		return -ECANCELED;
	}
	if (rc) {
		c->state = CMP_MALFORMED;
		return -ECANCELED;
	}
	if (!trace_is_event(exp) && !trace_is_summary(exp)) {
		snprintf(c->err, sizeof(c->err),
			 "%s:%" PRIu64 ": neither an event nor the summary",
			 c->rd.path, c->rd.line);
		json_decref(exp);
		c->state = CMP_MALFORMED;
		return -ECANCELED;
	}
	if (!trace_is_event(exp) || !lines_equal(exp, ev)) {
		/* A summary here: the recorded run had no more events. */
		cmp_diverge(c, exp, ev);
		return -ECANCELED;
	}
	json_decref(c->last_same);
	c->last_same = exp;
	return 0;
}

static void print_line(const char *label, json_t *line, const char *none)
{
	char *text = line ? json_dumps(line, JSON_COMPACT |
				       JSON_PRESERVE_ORDER) : NULL;

	printf("  %-9s %s\n", label, text ? text : none);
	free(text);
}

static void print_divergence(const struct replay_cmp *c, uint64_t index)
{
	char keys[256] = "";

	if (c->expected && c->actual)
		diff_keys(c->expected, c->actual, keys, sizeof(keys));
	if (c->expected && c->actual && trace_is_summary(c->actual)) {
		printf("replay: all %" PRIu64 " events identical, but the summary differs in: %s\n",
		       index, keys);
		print_line("expected:", c->expected, "");
		print_line("actual:", c->actual, "");
		return;
	}
	printf("replay: first divergence at event %" PRIu64 " (line %" PRIu64
	       " of %s)%s%s\n", index, c->rd.line, c->rd.path,
	       keys[0] ? "; differs in: " : "", keys);
	if (c->last_same)
		print_line("previous:", c->last_same, "");
	print_line("expected:", c->expected, "(the trace has no more events)");
	print_line("actual:", c->actual, "(the run has no more events)");
}

/* After the run: the recorded summary, then nothing. */
static int compare_summary(struct replay_cmp *c, json_t *sum)
{
	json_t *exp, *extra;
	int rc;

	rc = trace_reader_next(&c->rd, &exp, c->err);
	if (rc == -ENODATA)
		snprintf(c->err, sizeof(c->err),
			 "%s: the trace ends without a summary line (truncated?)",
			 c->rd.path);
	if (rc) {
		c->state = CMP_MALFORMED;
		return rc;
	}
	if (trace_is_event(exp) || !lines_equal(exp, sum)) {
		cmp_diverge(c, exp, trace_is_event(exp) ? NULL : sum);
		return 0;
	}
	json_decref(c->last_same);
	c->last_same = exp;
	rc = trace_reader_next(&c->rd, &extra, c->err);
	if (rc == -ENODATA)
		return 0;
	if (!rc) {
		json_decref(extra);
		snprintf(c->err, sizeof(c->err),
			 "%s:%" PRIu64 ": a line after the summary",
			 c->rd.path, c->rd.line);
	}
	c->state = CMP_MALFORMED;
	return -EINVAL;
}

static int parse_replay_args(int argc, char **argv, const char **file_p)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(replay_usage, stdout);
			return 1;
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

/* The header's plan is the run's: it replaces the scenario's own. */
static int header_plan(struct replay_cmp *c, json_t *plan,
		       struct scenario *sc)
{
	char err[PLAN_ERR_MAX];
	int rc;

	if (json_is_null(plan)) {
		json_decref(sc->faults);
		sc->faults = NULL;
		return 0;
	}
	rc = plan_validate(plan, err, sizeof(err));
	if (rc) {
		snprintf(c->err, sizeof(c->err), "the trace's plan is invalid: %s",
			 err);
		return rc;
	}
	return scenario_set_faults(sc, plan, true);
}

/* Line 1: the header, the scenario it embeds, and the plan. */
static int load_header(struct replay_cmp *c, uint64_t *seed_p,
		       uint32_t *breakage_p, struct scenario **sc_p)
{
	struct trace_header h;
	char err[SC_ERR_MAX];
	json_t *hdr;
	int rc;

	rc = trace_reader_next(&c->rd, &hdr, c->err);
	if (rc == -ENODATA)
		snprintf(c->err, sizeof(c->err), "%s: empty file", c->rd.path);
	if (rc)
		return rc;
	rc = trace_header_parse(hdr, &h, c->err);
	if (!rc && strcmp(h.build_id, trace_build_id()))
		fprintf(stderr, "replay: warning: trace made by build %s, this is %s; comparing anyway\n",
			h.build_id, trace_build_id());
	if (!rc) {
		rc = scenario_from_json(h.scenario, h.scenario_file ?
					h.scenario_file : c->rd.path, sc_p, err);
		if (rc)
			snprintf(c->err, sizeof(c->err),
				 "the trace's scenario is invalid: %s", err);
		else if ((rc = header_plan(c, h.plan, *sc_p)))
			scenario_free(*sc_p), *sc_p = NULL;
	}
	if (!rc) {
		*seed_p = h.seed;
		*breakage_p = h.test_breakage;
	}
	json_decref(hdr);
	return rc;
}

/* Runs the world with compare_event() as the recorder's output. */
static int replay_run(struct replay_cmp *c, const struct scenario *sc,
		      uint64_t seed, uint32_t breakage, struct trace_rec *rec)
{
	struct failures fails = { 0 };
	struct run_result res = { 0 };
	struct run_opts opts = {
		.seed = seed, .rec = rec, .test_breakage = breakage,
	};
	json_t *sum;
	int rc;

	rc = runner_run(sc, &opts, &fails, &res);
	if (rc)
		res.failures = 1;
	if (c->state == CMP_SAME) {
		rc = trace_summary_new(rec, &res, &fails, &sum);
		if (!rc) {
			compare_summary(c, sum);
			json_decref(sum);
		}
	}
	failures_free(&fails);
	return rc;
}

static int replay_report(struct replay_cmp *c, const struct trace_rec *rec)
{
	const char *res;

	switch (c->state) {
	case CMP_MALFORMED:
		fprintf(stderr, "tensorverbs replay: malformed trace: %s\n",
			c->err);
		return CLI_EXIT_USAGE;
	case CMP_DIVERGED:
		print_divergence(c, rec->count);
		return CLI_EXIT_FAIL;
	case CMP_SAME:
		break;
	}
	res = json_string_value(json_object_get(c->last_same, "result"));
	printf("replay: %" PRIu64 " events identical to %s%s%s\n", rec->count,
	       c->rd.path, res ? ", result " : "", res ? res : "");
	return CLI_EXIT_OK;
}

int cli_replay(int argc, char **argv, const char *argv0)
{
	struct replay_cmp c = { 0 };
	struct trace_rec rec;
	struct scenario *sc = NULL;
	const char *file;
	uint64_t seed;
	uint32_t breakage = 0;
	int rc = parse_replay_args(argc, argv, &file), exit_code;

	(void)argv0;
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	rc = trace_reader_open(file, &c.rd);
	if (rc) {
		fprintf(stderr, "tensorverbs replay: %s: %s\n", file,
			strerror(-rc));
		return CLI_EXIT_USAGE;
	}
	rc = load_header(&c, &seed, &breakage, &sc);
	if (rc) {
		fprintf(stderr, "tensorverbs replay: malformed trace: %s\n",
			c.err);
		exit_code = CLI_EXIT_USAGE;
		goto close_reader;
	}
	trace_rec_init(&rec, compare_event, &c);
	rc = replay_run(&c, sc, seed, breakage, &rec);
	if (rc) {
		fprintf(stderr, "tensorverbs replay: %s\n", strerror(-rc));
		exit_code = CLI_EXIT_USAGE;
	} else {
		exit_code = replay_report(&c, &rec);
	}
	trace_rec_fini(&rec);
	json_decref(c.expected);
	json_decref(c.actual);
	json_decref(c.last_same);
	scenario_free(sc);
close_reader:
	trace_reader_close(&c.rd);
	return exit_code;
}
