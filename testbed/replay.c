/*
 * Replay (docs/trace.md): run a trace's scenario again with its seed,
 * plan and breakage, and compare the new event stream with the recorded
 * one, line by line.
 *
 * The comparison runs while the world runs: the recorder hands each new
 * event to compare_event(), which reads the next recorded line.  At the
 * first difference recording stops (the run still finishes, so teardown
 * is the same as ever) and both lines are kept for the report.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_int.h"

/* Fields never compared: wall-clock time, and failure texts (they may
 * quote raw addresses; their number is compared). */
static const char *const ignored_keys[] = { "wall_ns", "failures", NULL };

struct replay_cmp {
	struct tb_trace_reader rd;
	enum tv_tb_replay_state state;
	json_t *expected;        /* the recorded line, NULL: the trace ended */
	json_t *actual;          /* the new line, NULL: the run ended */
	json_t *last_same;       /* the last event both agree on */
	char err[TB_TRACE_ERR_MAX];
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
	c->state = TV_TB_REPLAY_DIVERGED;
	c->expected = expected;
	c->actual = actual ? json_incref(actual) : NULL;
}

static int compare_event(void *ctx, json_t *ev)
{
	struct replay_cmp *c = ctx;
	json_t *exp;
	int rc;

	rc = tb_trace_reader_next(&c->rd, &exp, c->err);
	if (rc == -ENODATA) {
		snprintf(c->err, sizeof(c->err),
			 "%s: the trace ends without a summary line (truncated?)",
			 c->rd.path);
		c->state = TV_TB_REPLAY_MALFORMED;
		return -ECANCELED;
	}
	if (rc) {
		c->state = TV_TB_REPLAY_MALFORMED;
		return -ECANCELED;
	}
	if (!tb_trace_is_event(exp) && !tb_trace_is_summary(exp)) {
		snprintf(c->err, sizeof(c->err),
			 "%s:%" PRIu64 ": neither an event nor the summary",
			 c->rd.path, c->rd.line);
		json_decref(exp);
		c->state = TV_TB_REPLAY_MALFORMED;
		return -ECANCELED;
	}
	if (!tb_trace_is_event(exp) || !lines_equal(exp, ev)) {
		/* A summary here: the recorded run had no more events. */
		cmp_diverge(c, exp, ev);
		return -ECANCELED;
	}
	json_decref(c->last_same);
	c->last_same = exp;
	return 0;
}

/* After the run: the recorded summary, then nothing. */
static int compare_summary(struct replay_cmp *c, json_t *sum)
{
	json_t *exp, *extra;
	int rc;

	rc = tb_trace_reader_next(&c->rd, &exp, c->err);
	if (rc == -ENODATA)
		snprintf(c->err, sizeof(c->err),
			 "%s: the trace ends without a summary line (truncated?)",
			 c->rd.path);
	if (rc) {
		c->state = TV_TB_REPLAY_MALFORMED;
		return rc;
	}
	if (tb_trace_is_event(exp) || !lines_equal(exp, sum)) {
		cmp_diverge(c, exp, tb_trace_is_event(exp) ? NULL : sum);
		return 0;
	}
	json_decref(c->last_same);
	c->last_same = exp;
	rc = tb_trace_reader_next(&c->rd, &extra, c->err);
	if (rc == -ENODATA)
		return 0;
	if (!rc) {
		json_decref(extra);
		snprintf(c->err, sizeof(c->err),
			 "%s:%" PRIu64 ": a line after the summary",
			 c->rd.path, c->rd.line);
	}
	c->state = TV_TB_REPLAY_MALFORMED;
	return -EINVAL;
}

/* The header's plan is the run's: it replaces the scenario's own. */
static int header_plan(struct replay_cmp *c, json_t *plan,
		       struct tv_tb_scenario *sc)
{
	char err[TV_TB_PLAN_ERR_MAX];
	int rc;

	if (json_is_null(plan))
		return tv_tb_scenario_set_faults(sc, NULL, true);
	rc = tv_tb_plan_validate(plan, err, sizeof(err));
	if (rc) {
		snprintf(c->err, sizeof(c->err),
			 "the trace's plan is invalid: %s", err);
		return rc;
	}
	return tv_tb_scenario_set_faults(sc, plan, true);
}

/* Line 1: the header, the scenario it embeds, and the plan. */
static int load_header(struct replay_cmp *c, uint64_t *seed_p,
		       const char **breakage_p, struct tv_tb_scenario **sc_p,
		       struct tv_tb_replay_report *rep)
{
	struct tb_trace_header h;
	char err[TV_TB_ERR_MAX];
	json_t *hdr;
	int rc;

	rc = tb_trace_read_header(&c->rd, &hdr, &h, c->err);
	if (rc)
		return rc;
	if (strcmp(h.build_id, tv_tb_build_id()))
		snprintf(rep->build_warning, sizeof(rep->build_warning),
			 "trace made by build %.60s, this is %.60s; comparing anyway",
			 h.build_id, tv_tb_build_id());
	rc = tv_tb_scenario_from_json(h.scenario, h.scenario_file ?
				      h.scenario_file : c->rd.path, sc_p, err);
	if (rc)
		snprintf(c->err, sizeof(c->err),
			 "the trace's scenario is invalid: %s", err);
	else if ((rc = header_plan(c, h.plan, *sc_p)))
		tv_tb_scenario_free(*sc_p), *sc_p = NULL;
	if (!rc) {
		*seed_p = h.seed;
		/* A name of a workload's table: it outlives the header. */
		*breakage_p = NULL;
		for (const char *const *b = (*sc_p)->ops->breakages;
		     h.breakage && b && *b; b++)
			if (!strcmp(*b, h.breakage))
				*breakage_p = *b;
		if (h.breakage && !*breakage_p) {
			snprintf(c->err, sizeof(c->err),
				 "header: \"test_breakage\" '%s' is not workload %s's",
				 h.breakage, (*sc_p)->ops->name);
			tv_tb_scenario_free(*sc_p), *sc_p = NULL;
			rc = -EINVAL;
		}
	}
	json_decref(hdr);
	return rc;
}

/* Runs the world with compare_event() as the recorder's output. */
static int replay_run(struct replay_cmp *c, const struct tv_tb_scenario *sc,
		      uint64_t seed, const char *breakage, struct tb_rec *rec)
{
	struct tv_tb_run_opts opts = { .seed = seed, .breakage = breakage };
	struct tv_tb_run *run;
	json_t *sum;
	int rc;

	rc = tb_run(sc, &opts, rec, &run);
	if (rc)
		return rc;
	if (c->state == TV_TB_REPLAY_SAME) {
		rc = tb_trace_summary_new(rec, run, &sum);
		if (!rc) {
			compare_summary(c, sum);
			json_decref(sum);
		}
	}
	tv_tb_run_free(run);
	return rc;
}

static char *line_text(json_t *line)
{
	return line ? json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER) :
		      NULL;
}

static void fill_report(struct replay_cmp *c, const struct tb_rec *rec,
			struct tv_tb_replay_report *rep)
{
	const char *res;

	rep->state = c->state;
	rep->events = rec->count;
	rep->line = c->rd.line;
	snprintf(rep->err, sizeof(rep->err), "%s", c->err);
	if (c->state == TV_TB_REPLAY_DIVERGED) {
		if (c->expected && c->actual)
			diff_keys(c->expected, c->actual, rep->diff,
				  sizeof(rep->diff));
		rep->summary_only = c->expected && c->actual &&
				    tb_trace_is_summary(c->actual);
		rep->previous = line_text(c->last_same);
		rep->expected = line_text(c->expected);
		rep->actual = line_text(c->actual);
	}
	res = json_string_value(json_object_get(c->last_same, "result"));
	snprintf(rep->result, sizeof(rep->result), "%s", res ? res : "");
}

int tv_tb_replay(const char *path, struct tv_tb_replay_report *rep_p)
{
	struct tv_tb_replay_report rep = { 0 };
	struct replay_cmp c = { 0 };
	struct tv_tb_scenario *sc = NULL;
	const char *breakage = NULL;
	struct tb_rec rec;
	uint64_t seed;
	int rc;

	rc = tb_trace_reader_open(path, &c.rd);
	if (rc) {
		snprintf(rep_p->err, sizeof(rep_p->err), "%s: %s", path,
			 strerror(-rc));
		return rc;
	}
	rc = load_header(&c, &seed, &breakage, &sc, &rep);
	if (rc == -ENOMEM) {
		/* Not malformed: it could not be read into memory. */
		snprintf(rep_p->err, sizeof(rep_p->err), "%s: %s", path,
			 strerror(ENOMEM));
		tb_trace_reader_close(&c.rd);
		return rc;
	}
	if (rc) {
		c.state = TV_TB_REPLAY_MALFORMED;
		fill_report(&c, &(struct tb_rec){ 0 }, &rep);
		*rep_p = rep;
		tb_trace_reader_close(&c.rd);
		return 0;
	}
	tb_rec_init(&rec, compare_event, &c);
	rc = replay_run(&c, sc, seed, breakage, &rec);
	if (!rc) {
		fill_report(&c, &rec, &rep);
		*rep_p = rep;
	} else {
		snprintf(rep_p->err, sizeof(rep_p->err), "%s", strerror(-rc));
	}
	tb_rec_fini(&rec);
	json_decref(c.expected);
	json_decref(c.actual);
	json_decref(c.last_same);
	tv_tb_scenario_free(sc);
	tb_trace_reader_close(&c.rd);
	return rc;
}

void tv_tb_replay_report_free(struct tv_tb_replay_report *rep)
{
	free(rep->previous);
	free(rep->expected);
	free(rep->actual);
	rep->previous = rep->expected = rep->actual = NULL;
}
