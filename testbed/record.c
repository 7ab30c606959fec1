/*
 * Recordings (docs/recording.md): what every node's verbs facade was asked
 * and answered, as the fault wrapper's tap saw it (faults.h), with the
 * fault firings, kept in memory as fixed binary records while the run goes
 * (a JSON line per verb would cost more than the verb on a fast path) and
 * written as a trace file at the end: the same header as a trace (seed,
 * scenario, plan, build), a "recording" key saying where it was made, one
 * "verbs" or "fault" line per record, and a summary with the outcome.
 *
 * The same taps let replay --sim drive the simulator (replay_sim.c): the
 * tap's poll hook gets each completion before the engine does.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/faults.h>

#include "run_int.h"
#include "tb_int.h"

static const char *const tap_kind_names[] = {
	[TV_FLT_TAP_REG_MR] = "REG_MR", [TV_FLT_TAP_QP_STATE] = "QP_STATE",
	[TV_FLT_TAP_POST_SEND] = "POST_SEND",
	[TV_FLT_TAP_POST_RECV] = "POST_RECV", [TV_FLT_TAP_POLL] = "POLL",
};

const char *tb_tap_kind_name(uint32_t kind)
{
	return kind < TB_ARRAY_SIZE(tap_kind_names) ? tap_kind_names[kind] : NULL;
}

int tb_tap_kind_parse(const char *name, uint32_t *kind_p)
{
	for (uint32_t k = 0; k < TB_ARRAY_SIZE(tap_kind_names); k++) {
		if (tap_kind_names[k] && !strcmp(name, tap_kind_names[k])) {
			*kind_p = k;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- collecting ------------------------------------------------------------ */

static int tap_push(struct tv_tb_tap *t, const struct tb_tap_rec *rec)
{
	struct tb_tap_rec *r;
	size_t cap;

	if (t->err)
		return t->err;
	if (t->n == t->cap) {
		cap = t->cap ? t->cap * 2 : 4096;
		r = realloc(t->recs, cap * sizeof(*r));
		if (!r)
			return t->err = -ENOMEM;
		t->recs = r;
		t->cap = cap;
	}
	t->recs[t->n++] = *rec;
	return 0;
}

static void tap_event(void *ctx, const struct tv_flt_tap_event *ev)
{
	struct tb_tap_node *tn = ctx;
	struct tb_tap_rec rec = {
		.t_ns = tv_vf_now_ns(tn->dev) - tn->tap->t0_ns,
		.node = tn->node,
		.src = TB_TAP_SRC_VERBS,
		.ev = *ev,
	};

	tap_push(tn->tap, &rec);
}

int tb_tap_attach(struct tv_tb_tap *t, uint32_t node,
		  struct tv_vf_device *wrapped)
{
	struct tb_tap_node *tn;
	struct tv_flt_tap tap = { .event = tap_event };

	if (node >= t->nnodes)
		return -EINVAL;
	tn = &t->nodes[node];
	tn->tap = t;
	tn->node = node;
	tn->dev = wrapped;
	tap.ctx = tn;
	if (t->poll)
		tap.poll = t->poll;
	return tv_flt_set_tap(wrapped, &tap);
}

void tb_tap_fire(struct tv_tb_tap *t, uint32_t node, const char *point,
		 uint64_t hit, uint64_t now_ns)
{
	const struct tv_flt_point_info *pts, *pt = tv_flt_point_find(point);
	struct tb_tap_rec rec = {
		.t_ns = now_ns - t->t0_ns, .node = node,
		.src = TB_TAP_SRC_FIRE, .hit = hit,
	};
	size_t n;

	pts = tv_flt_points(&n);
	if (!pt)
		return;
	rec.point = (uint16_t)(pt - pts);
	tap_push(t, &rec);
}

int tb_tap_new(uint32_t nodes, struct tv_tb_tap **tap_p)
{
	struct tv_tb_tap *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->nodes = calloc(nodes ? nodes : 1, sizeof(*t->nodes));
	if (!t->nodes) {
		free(t);
		return -ENOMEM;
	}
	t->nnodes = nodes;
	*tap_p = t;
	return 0;
}

void tb_tap_free(struct tv_tb_tap *t)
{
	if (!t)
		return;
	free(t->recs);
	free(t->nodes);
	free(t->path);
	json_decref(t->hdr);
	free(t);
}

/* ---- writing ---------------------------------------------------------------- */

static json_t *verbs_op(const struct tv_flt_tap_event *ev)
{
	switch (ev->kind) {
	case TV_FLT_TAP_POST_SEND:
		return tb_json_wr_op(ev->opcode);
	case TV_FLT_TAP_POLL:
		return tb_json_wc_op(ev->opcode);
	default:
		return json_null();
	}
}

static json_t *verbs_state(const struct tv_flt_tap_event *ev)
{
	if (ev->kind != TV_FLT_TAP_QP_STATE)
		return json_null();
	if (ev->state > TV_QPS_ERR)
		return json_integer(ev->state);
	return json_string(tv_vf_qp_state_str((enum tv_vf_qp_state)ev->state));
}

static json_t *opt_index(uint32_t v)
{
	return v == TV_FLT_TAP_NONE ? json_null() : json_integer(v);
}

json_t *tb_tap_line(const struct tb_tap_rec *r, uint64_t i)
{
	const struct tv_flt_tap_event *ev = &r->ev;
	const struct tv_flt_point_info *pts;
	size_t n;

	if (r->src == TB_TAP_SRC_FIRE) {
		pts = tv_flt_points(&n);
		return json_pack("{s:I, s:I, s:s, s:s, s:i, s:s, s:o}",
				 "i", (json_int_t)i, "t", (json_int_t)r->t_ns,
				 "src", "fault", "kind", "FIRE",
				 "node", (int)r->node,
				 "point", r->point < n ? pts[r->point].name : "?",
				 "hit", tv_tb_json_u64(r->hit));
	}
	return json_pack("{s:I, s:I, s:s, s:s, s:i, s:o, s:o, s:o, s:o, s:o,"
			 " s:I, s:o, s:o, s:o}",
			 "i", (json_int_t)i, "t", (json_int_t)r->t_ns,
			 "src", "verbs", "kind", tb_tap_kind_name(ev->kind),
			 "node", (int)r->node, "qp", opt_index(ev->qp),
			 "cq", opt_index(ev->cq), "op", verbs_op(ev),
			 "status", ev->kind == TV_FLT_TAP_POLL ?
				   tb_json_wc_status(ev->status) : json_null(),
			 "state", verbs_state(ev), "len", (json_int_t)ev->len,
			 "imm", ev->has_imm ? tb_json_hex(ev->imm) : json_null(),
			 "flags", tb_json_hex(ev->flags),
			 "wr_id", tb_json_hex(ev->wr_id));
}

static int write_records(struct tv_tb_tap *t, FILE *f)
{
	json_t *line;
	int rc = 0;

	for (size_t i = 0; !rc && i < t->n; i++) {
		line = tb_tap_line(&t->recs[i], i);
		if (!line)
			return -ENOMEM;
		rc = tb_trace_write_line(f, line);
		json_decref(line);
	}
	return rc;
}

/* The outcome: what replay --sim compares. */
int tb_tap_summary(uint64_t events, const struct tv_tb_result *res,
		   const struct tv_tb_failures *fails, json_t **sum_p)
{
	json_t *kinds = json_array(), *msgs = json_array(), *sum;

	for (size_t i = 0; kinds && msgs && i < fails->count &&
			   i < TV_TB_FAILURES_KEPT; i++) {
		json_array_append_new(kinds,
				      json_string(tv_tb_fail_kind_name(fails->msg_kinds[i])));
		json_array_append_new(msgs, tv_tb_json_str(fails->msgs[i] ?
							   fails->msgs[i] : "?"));
	}
	sum = json_pack("{s:b, s:I, s:s, s:I, s:I, s:I, s:I, s:o, s:o}",
			"summary", 1, "events", (json_int_t)events,
			"result", res->failures ? "FAIL" : "PASS",
			"ops", (json_int_t)res->ops,
			"ops_ok", (json_int_t)res->ops_ok,
			"ops_failed", (json_int_t)res->ops_failed,
			"failure_count", (json_int_t)res->failures,
			"failure_kinds", kinds ? kinds : json_array(),
			"failures", msgs ? msgs : json_array());
	if (!sum)
		return -ENOMEM;
	*sum_p = sum;
	return 0;
}

/* ---- the public face ---------------------------------------------------------- */

int tv_tb_record_create(const char *path, const struct tv_tb_scenario *sc,
			const char *scenario_file, uint64_t seed,
			const char *backend, struct tv_tb_tap **tap_p)
{
	struct tv_tb_tap *t;
	json_t *rec;
	int rc;

	if (!path || !sc || !backend || !tap_p)
		return -EINVAL;
	rc = tb_tap_new(sc->nodes, &t);
	if (rc)
		return rc;
	rc = -ENOMEM;
	t->path = strdup(path);
	if (!t->path)
		goto fail;
	rc = tb_trace_header_new(seed, sc->json, scenario_file,
				 tv_tb_scenario_has_faults(sc) ? sc->faults :
								 NULL,
				 NULL, &t->hdr);
	if (rc)
		goto fail;
	rec = json_pack("{s:s, s:s}", "backend", backend, "clock",
			strcmp(backend, "sim") ? "monotonic" : "virtual");
	if (!rec || json_object_set_new(t->hdr, "recording", rec)) {
		rc = -ENOMEM;
		goto fail;
	}
	*tap_p = t;
	return 0;
fail:
	tb_tap_free(t);
	return rc;
}

int tv_tb_record_finish(struct tv_tb_tap *t, const struct tv_tb_result *res,
			const struct tv_tb_failures *fails)
{
	FILE *f;
	json_t *sum = NULL;
	int rc = t->err;

	if (rc)
		goto out;
	f = fopen(t->path, "w");
	if (!f) {
		rc = -errno;
		goto out;
	}
	rc = tb_trace_write_line(f, t->hdr);
	if (!rc)
		rc = write_records(t, f);
	if (!rc)
		rc = tb_tap_summary(t->n, res, fails, &sum);
	if (!rc)
		rc = tb_trace_write_line(f, sum);
	json_decref(sum);
	if (fclose(f) && !rc)
		rc = -EIO;
out:
	tb_tap_free(t);
	return rc;
}
