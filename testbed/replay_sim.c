/*
 * `replay --sim` (docs/recording.md): a recording made on real verbs (or
 * on the simulator) run again in the simulator.  The scenario, seed and
 * plan come from its header; the recorded completions drive the
 * simulator: each node's CQs hand the engine their completions in the
 * recorded order (a completion that comes early is held back until the
 * ones recorded before it came).  Then the verbs each node posted and
 * polled are compared with the recording, and the outcomes.
 *
 * A completion is the same when its node, QP and CQ (creation order),
 * opcode, status, immediate and, for receives, byte count agree; wr_id
 * and flags are not compared (they may hold addresses).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_int.h"
#include "tb_int.h"

/* The completions one CQ of one node must deliver, and those held. */
struct follow_q {
	uint32_t node, cq;
	json_t **exp;              /* borrowed from the recording */
	size_t nexp, pos;
	struct tv_vf_wc *held;
	size_t nheld, capheld;
};

struct follow {
	json_t **lines;            /* the recording's event lines */
	size_t nlines;
	json_t *summary;
	struct follow_q *qs;
	size_t nqs;
	int err;
};

static const char *const cmp_keys[] = {
	"src", "kind", "node", "qp", "cq", "op", "status", "state", "imm",
	"len", "point", "hit",
};

static bool is_recv_poll(json_t *line)
{
	const char *op = json_string_value(json_object_get(line, "op"));

	return op && !strncmp(op, "RECV", 4);
}

/* Equal in every compared key (len of a send completion is undefined). */
static bool lines_match(json_t *a, json_t *b)
{
	bool poll = !strcmp(json_string_value(json_object_get(a, "kind")) ?
			    json_string_value(json_object_get(a, "kind")) : "",
			    "POLL");

	for (size_t k = 0; k < TB_ARRAY_SIZE(cmp_keys); k++) {
		if (poll && !strcmp(cmp_keys[k], "len") && !is_recv_poll(a))
			continue;
		if (!json_equal(json_object_get(a, cmp_keys[k]),
				json_object_get(b, cmp_keys[k])) &&
		    (json_object_get(a, cmp_keys[k]) ||
		     json_object_get(b, cmp_keys[k])))
			return false;
	}
	return true;
}

static struct follow_q *queue_of(struct follow *f, uint32_t node, uint32_t cq)
{
	for (size_t i = 0; i < f->nqs; i++)
		if (f->qs[i].node == node && f->qs[i].cq == cq)
			return &f->qs[i];
	return NULL;
}

static int queue_add(struct follow *f, uint32_t node, uint32_t cq,
		     json_t *line)
{
	struct follow_q *q = queue_of(f, node, cq), *qs;
	json_t **exp;

	if (!q) {
		qs = realloc(f->qs, (f->nqs + 1) * sizeof(*qs));
		if (!qs)
			return -ENOMEM;
		f->qs = qs;
		q = &qs[f->nqs++];
		memset(q, 0, sizeof(*q));
		q->node = node;
		q->cq = cq;
	}
	exp = realloc(q->exp, (q->nexp + 1) * sizeof(*exp));
	if (!exp)
		return -ENOMEM;
	q->exp = exp;
	q->exp[q->nexp++] = line;
	return 0;
}

/* The line the tap would record for a completion the simulator made. */
static json_t *wc_line(struct tb_tap_node *tn, uint32_t cq,
		       const struct tv_vf_wc *wc)
{
	struct tb_tap_rec r = { .node = tn->node, .src = TB_TAP_SRC_VERBS };

	r.ev.kind = TV_FLT_TAP_POLL;
	r.ev.qp = tv_flt_tap_qp_index(tn->dev, wc->qp_num);
	r.ev.cq = cq;
	r.ev.opcode = wc->opcode;
	r.ev.status = wc->status;
	r.ev.len = wc->byte_len;
	r.ev.has_imm = (wc->wc_flags & TV_WC_WITH_IMM) != 0;
	r.ev.imm = r.ev.has_imm ? wc->imm_data : 0;
	return tb_tap_line(&r, 0);
}

static int hold(struct follow_q *q, const struct tv_vf_wc *wc, int n)
{
	struct tv_vf_wc *h;
	size_t cap;

	if (q->nheld + (size_t)n > q->capheld) {
		cap = (q->nheld + (size_t)n) * 2;
		h = realloc(q->held, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		q->held = h;
		q->capheld = cap;
	}
	memcpy(q->held + q->nheld, wc, (size_t)n * sizeof(*wc));
	q->nheld += (size_t)n;
	return 0;
}

/* The held completion matching the next recorded one, or -1. */
static long held_match(struct tb_tap_node *tn, struct follow_q *q)
{
	json_t *line;
	bool same;

	for (size_t i = 0; i < q->nheld; i++) {
		line = wc_line(tn, q->cq, &q->held[i]);
		same = line && lines_match(q->exp[q->pos], line);
		json_decref(line);
		if (same)
			return (long)i;
	}
	return -1;
}

static void unhold(struct follow_q *q, size_t i, struct tv_vf_wc *out)
{
	*out = q->held[i];
	memmove(q->held + i, q->held + i + 1,
		(q->nheld - i - 1) * sizeof(*q->held));
	q->nheld--;
}

/*
 * The tap's poll hook: what the simulator completed joins the held ones;
 * out go, in the recorded order, those that match.  Past the end of the
 * recording (teardown) completions pass as they come.
 */
static int follow_poll(void *ctx, uint32_t cq, struct tv_vf_wc *wc, int got,
		       int cap)
{
	struct tb_tap_node *tn = ctx;
	struct follow *f = tn->tap->follow;
	struct follow_q *q = queue_of(f, tn->node, cq);
	int out = 0;
	long i;

	if (!q)
		return got;
	if (hold(q, wc, got)) {
		f->err = -ENOMEM;
		return got;
	}
	while (out < cap && q->nheld) {
		if (q->pos < q->nexp) {
			i = held_match(tn, q);
			if (i < 0)
				break;
			q->pos++;
		} else {
			i = 0;
		}
		unhold(q, (size_t)i, &wc[out++]);
	}
	return out;
}

/* ---- reading the recording ---------------------------------------------------- */

static int load_events(struct tb_trace_reader *rd, struct follow *f,
		       char *err, size_t cap)
{
	char terr[TB_TRACE_ERR_MAX];
	json_t *obj, **lines;
	int rc;

	while (!(rc = tb_trace_reader_next(rd, &obj, terr))) {
		if (f->summary) {
			json_decref(obj);
			snprintf(err, cap, "%s:%" PRIu64 ": a line after the summary",
				 rd->path, rd->line);
			return -EINVAL;
		}
		if (tb_trace_is_summary(obj)) {
			f->summary = obj;
			continue;
		}
		if (!tb_trace_is_event(obj) ||
		    !json_is_integer(json_object_get(obj, "node"))) {
			json_decref(obj);
			snprintf(err, cap, "%s:%" PRIu64 ": not an event of a recording "
				 "(\"i\", \"t\", \"src\", \"kind\" and a \"node\" number)",
				 rd->path, rd->line);
			return -EINVAL;
		}
		lines = realloc(f->lines, (f->nlines + 1) * sizeof(*lines));
		if (!lines) {
			json_decref(obj);
			return -ENOMEM;
		}
		f->lines = lines;
		f->lines[f->nlines++] = obj;
	}
	if (rc != -ENODATA) {
		snprintf(err, cap, "%s", terr);
		return rc;
	}
	if (!f->summary) {
		snprintf(err, cap, "%s: no summary line (a truncated recording?)",
			 rd->path);
		return -EINVAL;
	}
	return 0;
}

static int index_polls(struct follow *f, char *err, size_t cap)
{
	json_t *l;
	int rc;

	for (size_t i = 0; i < f->nlines; i++) {
		l = f->lines[i];
		if (strcmp(json_string_value(json_object_get(l, "kind")), "POLL"))
			continue;
		if (!json_is_integer(json_object_get(l, "cq"))) {
			snprintf(err, cap, "event %zu: a POLL without a \"cq\" number",
				 i);
			return -EINVAL;
		}
		rc = queue_add(f, (uint32_t)json_integer_value(json_object_get(l, "node")),
			       (uint32_t)json_integer_value(json_object_get(l, "cq")), l);
		if (rc)
			return rc;
	}
	return 0;
}

static void follow_free(struct follow *f)
{
	for (size_t i = 0; i < f->nlines; i++)
		json_decref(f->lines[i]);
	free(f->lines);
	json_decref(f->summary);
	for (size_t i = 0; i < f->nqs; i++) {
		free(f->qs[i].exp);
		free(f->qs[i].held);
	}
	free(f->qs);
}

/* ---- the header and the plan ---------------------------------------------------- */

/* Rules that fire at the recorded hits: a point's first hit, its count. */
static int plan_from_fires(struct follow *f, json_t **plan_p)
{
	json_t *plan = json_array(), *rule, *l;
	const char *point;

	if (!plan)
		return -ENOMEM;
	for (size_t i = 0; i < f->nlines; i++) {
		l = f->lines[i];
		if (strcmp(json_string_value(json_object_get(l, "src")), "fault"))
			continue;
		point = json_string_value(json_object_get(l, "point"));
		if (!point || !json_is_integer(json_object_get(l, "hit")))
			continue;
		rule = tb_plan_rule(plan, point);
		if (rule) {
			json_object_set_new(rule, "count", json_integer(
				json_integer_value(json_object_get(rule, "count")) + 1));
			continue;
		}
		if (json_array_append_new(plan, json_pack("{s:s, s:O, s:i}",
				"point", point, "nth", json_object_get(l, "hit"),
				"count", 1))) {
			json_decref(plan);
			return -ENOMEM;
		}
	}
	*plan_p = plan;
	return 0;
}

struct rec_header {
	uint64_t seed;
	struct tv_tb_scenario *sc;
	char backend[16];
};

static int load_header(struct tb_trace_reader *rd, struct follow *f,
		       struct rec_header *h, char *err, size_t cap)
{
	char terr[TB_TRACE_ERR_MAX];
	struct tb_trace_header th;
	json_t *hdr, *rec, *plan = NULL;
	const char *backend;
	int rc;

	rc = tb_trace_read_header(rd, &hdr, &th, terr);
	if (rc) {
		snprintf(err, cap, "%s", terr);
		return rc;
	}
	rec = json_object_get(hdr, "recording");
	backend = json_string_value(json_object_get(rec, "backend"));
	if (!backend) {
		snprintf(err, cap, "%s: not a recording (its header has no "
			 "\"recording\" with a \"backend\"): make one with run "
			 "--record or serve --record", rd->path);
		json_decref(hdr);
		return -EINVAL;
	}
	snprintf(h->backend, sizeof(h->backend), "%s", backend);
	h->seed = th.seed;
	rc = tv_tb_scenario_from_json(th.scenario, rd->path, &h->sc, terr);
	if (rc)
		snprintf(err, cap, "%s: its scenario is invalid: %s", rd->path, terr);
	if (!rc)
		rc = load_events(rd, f, err, cap);
	/* On the simulator the seed fires the plan at the same hits. */
	if (!rc && strcmp(backend, "sim"))
		rc = plan_from_fires(f, &plan);
	else if (!rc && json_is_array(th.plan))
		plan = json_incref(th.plan);
	if (!rc && plan && json_array_size(plan) &&
	    (rc = tv_tb_plan_validate(plan, terr, sizeof(terr))))
		snprintf(err, cap, "%s: its fault plan is invalid: %s", rd->path, terr);
	if (!rc)
		rc = tv_tb_scenario_set_faults(h->sc, plan && json_array_size(plan) ?
					       plan : NULL, true);
	json_decref(plan);
	json_decref(hdr);
	return rc;
}

/* ---- comparing -------------------------------------------------------------------- */

static char *line_text(json_t *line)
{
	return line ? json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
}

/* Positions of node n's events, in order: lines (recorded) or recs. */
static size_t *node_lines(struct follow *f, uint32_t node, size_t *n_p)
{
	size_t *ix = malloc((f->nlines + 1) * sizeof(*ix)), n = 0;

	for (size_t i = 0; ix && i < f->nlines; i++)
		if ((uint32_t)json_integer_value(json_object_get(f->lines[i],
								 "node")) == node)
			ix[n++] = i;
	*n_p = n;
	return ix;
}

static size_t *node_recs(const struct tv_tb_tap *t, uint32_t node,
			 size_t *n_p)
{
	size_t *ix = malloc((t->n + 1) * sizeof(*ix)), n = 0;

	for (size_t i = 0; ix && i < t->n; i++)
		if (t->recs[i].node == node)
			ix[n++] = i;
	*n_p = n;
	return ix;
}

/* Node n's first event that differs: its rank k, or -1 if none. */
static long node_divergence(struct follow *f, const struct tv_tb_tap *t,
			    const size_t *li, size_t nl, const size_t *ri,
			    size_t nr, json_t **act_p)
{
	json_t *act;

	for (size_t k = 0; k < nl || k < nr; k++) {
		act = k < nr ? tb_tap_line(&t->recs[ri[k]], ri[k]) : NULL;
		if (k < nl && act && lines_match(f->lines[li[k]], act)) {
			json_decref(act);
			continue;
		}
		*act_p = act;
		return (long)k;
	}
	return -1;
}

/*
 * The first recorded event (by its index) the simulator did not do the
 * same: per node, the k-th against the k-th.
 */
static int first_divergence(struct follow *f, const struct tv_tb_tap *t,
			    uint32_t nodes, struct tv_tb_replay_sim_report *rep)
{
	uint64_t best = UINT64_MAX, idx;
	size_t *li, *ri, nl, nr;
	json_t *act, *exp;
	long k;

	for (uint32_t n = 0; n < nodes; n++) {
		li = node_lines(f, n, &nl);
		ri = node_recs(t, n, &nr);
		if (!li || !ri) {
			free(li);
			free(ri);
			return -ENOMEM;
		}
		act = NULL;
		k = node_divergence(f, t, li, nl, ri, nr, &act);
		exp = k >= 0 && (size_t)k < nl ? f->lines[li[k]] : NULL;
		idx = exp ? (uint64_t)json_integer_value(json_object_get(exp, "i")) :
			    f->nlines;
		if (k >= 0 && idx < best) {
			best = idx;
			free(rep->expected);
			free(rep->actual);
			rep->expected = line_text(exp);
			rep->actual = line_text(act);
			rep->div_node = n;
			rep->div_k = (uint64_t)k;
		}
		json_decref(act);
		free(li);
		free(ri);
	}
	rep->diverged = best != UINT64_MAX;
	rep->div_index = best;
	return 0;
}

static void compare_outcome(struct follow *f, const struct tv_tb_result *res,
			    const struct tv_tb_failures *fails,
			    struct tv_tb_replay_sim_report *rep)
{
	json_t *sum = NULL;
	static const char *const keys[] = {
		"result", "ops", "ops_ok", "ops_failed",
	};
	bool same = true;

	if (tb_tap_summary(0, res, fails, false, &sum))
		return;
	/* A node's process does not know its workload's counts: null. */
	for (size_t k = 0; k < TB_ARRAY_SIZE(keys); k++)
		same &= json_is_null(json_object_get(f->summary, keys[k])) ||
			json_equal(json_object_get(f->summary, keys[k]),
				   json_object_get(sum, keys[k]));
	snprintf(rep->rec_result, sizeof(rep->rec_result), "%s",
		 json_string_value(json_object_get(f->summary, "result")) ?: "?");
	snprintf(rep->sim_result, sizeof(rep->sim_result), "%s",
		 json_string_value(json_object_get(sum, "result")));
	rep->same_outcome = same;
	rep->same_failure_kind = !strcmp(rep->rec_result, "FAIL") &&
		!strcmp(rep->sim_result, "FAIL") &&
		json_equal(json_array_get(json_object_get(f->summary, "failure_kinds"), 0),
			   json_array_get(json_object_get(sum, "failure_kinds"), 0));
	snprintf(rep->sim_summary, sizeof(rep->sim_summary),
		 "ops %" PRIu64 ", ok %" PRIu64 ", failed %" PRIu64,
		 res->ops, res->ops_ok, res->ops_failed);
	if (json_is_null(json_object_get(f->summary, "ops")))
		snprintf(rep->rec_summary, sizeof(rep->rec_summary),
			 "%" JSON_INTEGER_FORMAT " failures (operation counts "
			 "not recorded)", json_integer_value(json_object_get(
				 f->summary, "failure_count")));
	else
		snprintf(rep->rec_summary, sizeof(rep->rec_summary),
			 "ops %" JSON_INTEGER_FORMAT ", ok %" JSON_INTEGER_FORMAT
			 ", failed %" JSON_INTEGER_FORMAT,
			 json_integer_value(json_object_get(f->summary, "ops")),
			 json_integer_value(json_object_get(f->summary, "ops_ok")),
			 json_integer_value(json_object_get(f->summary, "ops_failed")));
	json_decref(sum);
}

static size_t held_left(const struct follow *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->nqs; i++)
		n += f->qs[i].nheld;
	return n;
}

/* The run in the simulator, driven by the recording. */
static int run_followed(struct follow *f, struct rec_header *h,
			struct tv_tb_replay_sim_report *rep)
{
	struct tv_tb_run_opts opts;
	struct tv_tb_run *run = NULL;
	struct tv_tb_tap *t;
	int rc;

	rc = tb_tap_new(h->sc->nodes, &t);
	if (rc)
		return rc;
	t->poll = follow_poll;
	t->follow = f;
	tv_tb_run_opts_init(&opts, h->sc);
	opts.seed = h->seed;
	opts.tap = t;
	rc = tv_tb_run(h->sc, &opts, &run);
	if (!rc && !(rc = f->err ? f->err : t->err) &&
	    !(rc = first_divergence(f, t, h->sc->nodes, rep))) {
		compare_outcome(f, tv_tb_run_result(run), tv_tb_run_failures(run),
				rep);
		rep->held = held_left(f);
		rep->sim_events = t->n;
	}
	tv_tb_run_free(run);
	tb_tap_free(t);
	return rc;
}

int tv_tb_replay_sim(const char *path, struct tv_tb_replay_sim_report *rep)
{
	struct tb_trace_reader rd;
	struct follow f = { 0 };
	struct rec_header h = { 0 };
	int rc;

	memset(rep, 0, sizeof(*rep));
	rc = tb_trace_reader_open(path, &rd);
	if (rc) {
		snprintf(rep->err, sizeof(rep->err), "%s: %s", path, strerror(-rc));
		return rc;
	}
	rc = load_header(&rd, &f, &h, rep->err, sizeof(rep->err));
	if (!rc)
		rc = index_polls(&f, rep->err, sizeof(rep->err));
	if (!rc) {
		snprintf(rep->backend, sizeof(rep->backend), "%s", h.backend);
		rep->events = f.nlines;
		rc = run_followed(&f, &h, rep);
		if (rc && !rep->err[0])
			snprintf(rep->err, sizeof(rep->err),
				 "the run in the simulator: %s", strerror(-rc));
	}
	tv_tb_scenario_free(h.sc);
	follow_free(&f);
	tb_trace_reader_close(&rd);
	return rc;
}

void tv_tb_replay_sim_report_free(struct tv_tb_replay_sim_report *rep)
{
	free(rep->expected);
	free(rep->actual);
	rep->expected = rep->actual = NULL;
}
