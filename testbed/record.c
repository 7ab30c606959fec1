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
#include <pthread.h>
#include <stdatomic.h>
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

/*
 * On real verbs a workload may poll from threads of its own (the port
 * workload's proxy).  Each thread appends to a buffer of its own, found
 * through a thread-local cache: no lock and no atomic on the path of a
 * verb (a lock per record cost about as much as the rest of the record
 * under emulation, docs/recording.md).  The buffers are merged by time
 * once the threads stopped (tb_tap_collect).
 */
static _Atomic uint64_t tap_ids;
/*
 * initial-exec: read at a fixed offset from the thread pointer, where the
 * default model for a shared library calls __tls_get_addr on every
 * record (16 bytes: glibc's surplus holds them even after a dlopen).
 */
static _Thread_local __attribute__((tls_model("initial-exec"))) struct {
	uint64_t id;
	struct tb_tap_buf *buf;
} tap_tls;

static struct tb_tap_buf *tap_buf(struct tv_tb_tap *t)
{
	struct tb_tap_buf *b;

	if (tap_tls.id == t->id)
		return tap_tls.buf;
	b = calloc(1, sizeof(*b));
	if (!b) {
		/* The record is lost: the recording must fail (sticky). */
		pthread_mutex_lock(&t->lock);
		t->err = -ENOMEM;
		pthread_mutex_unlock(&t->lock);
		return NULL;
	}
	pthread_mutex_lock(&t->lock);
	b->next = t->bufs;
	t->bufs = b;
	pthread_mutex_unlock(&t->lock);
	tap_tls.id = t->id;
	tap_tls.buf = b;
	return b;
}

static int tap_push(struct tv_tb_tap *t, const struct tb_tap_rec *rec)
{
	struct tb_tap_buf *b = tap_buf(t);
	struct tb_tap_rec *r;
	size_t cap;

	if (!b || b->err)
		return b ? b->err : -ENOMEM;
	if (b->n == b->cap) {
		cap = b->cap ? b->cap * 2 : 4096;
		r = realloc(b->recs, cap * sizeof(*r));
		if (!r)
			return b->err = -ENOMEM;
		b->recs = r;
		b->cap = cap;
	}
	b->recs[b->n++] = *rec;
	/*
	 * Relaxed: a count, read by replay --sim's gate on this thread; only
	 * a replay (t->poll) reads it, so a recording pays no atomic.
	 */
	if (t->poll && rec->src == TB_TAP_SRC_VERBS && rec->node < t->nnodes)
		atomic_fetch_add_explicit(&t->nodes[rec->node].events, 1,
					  memory_order_relaxed);
	return 0;
}

/* Merge buffer b into t->recs (both in time order; ties: t->recs first). */
static int collect_one(struct tv_tb_tap *t, struct tb_tap_buf *b)
{
	struct tb_tap_rec *m;
	size_t i = 0, j = 0, k = 0;

	if (!t->n) {
		t->recs = b->recs;
		t->n = b->n;
		b->recs = NULL;
		b->n = 0;
		return 0;
	}
	m = malloc((t->n + b->n + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	while (i < t->n || j < b->n)
		m[k++] = j == b->n || (i < t->n &&
				       t->recs[i].t_ns <= b->recs[j].t_ns) ?
			 t->recs[i++] : b->recs[j++];
	free(t->recs);
	t->recs = m;
	t->n = k;
	return 0;
}

int tb_tap_collect(struct tv_tb_tap *t)
{
	struct tb_tap_buf *b;
	int rc = t->err;

	pthread_mutex_lock(&t->lock);
	/* Oldest buffer first: the thread that started recording. */
	for (struct tb_tap_buf *prev = NULL, *cur = t->bufs, *nx; cur;
	     prev = cur, cur = nx) {
		nx = cur->next;
		cur->next = prev;
		if (!nx)
			t->bufs = cur;
	}
	while (!rc && (b = t->bufs)) {
		rc = b->err ? b->err : collect_one(t, b);
		t->bufs = b->next;
		free(b->recs);
		free(b);
	}
	t->err = rc;
	pthread_mutex_unlock(&t->lock);
	return rc;
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
	uint32_t site_node;
	size_t n;

	pts = tv_flt_points(&n);
	if (!pt)
		return;
	rec.point = (uint16_t)(pt - pts);
	/* A wrapper point: the hit number the firing node itself counted. */
	if (tv_flt_firing_site(&site_node, &rec.node_hit) && site_node != node)
		rec.node_hit = 0;
	tap_push(t, &rec);
}

void tb_tap_step(struct tv_tb_tap *t, uint32_t node, uint64_t at_ns,
		 uint64_t now_ns)
{
	struct tb_tap_rec rec = {
		.t_ns = now_ns - t->t0_ns, .node = node,
		.src = TB_TAP_SRC_STEP, .hit = at_ns,
	};

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
	t->id = atomic_fetch_add_explicit(&tap_ids, 1, memory_order_relaxed) + 1;
	pthread_mutex_init(&t->lock, NULL);
	*tap_p = t;
	return 0;
}

void tb_tap_free(struct tv_tb_tap *t)
{
	if (!t)
		return;
	while (t->bufs) {
		struct tb_tap_buf *b = t->bufs;

		t->bufs = b->next;
		free(b->recs);
		free(b);
	}
	pthread_mutex_destroy(&t->lock);
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

	if (r->src == TB_TAP_SRC_STEP)
		return json_pack("{s:I, s:I, s:s, s:s, s:i, s:o}",
				 "i", (json_int_t)i, "t", (json_int_t)r->t_ns,
				 "src", "workload", "kind", "STEP",
				 "node", (int)r->node,
				 "at_ns", tv_tb_json_u64(r->hit));
	if (r->src == TB_TAP_SRC_FIRE) {
		json_t *l;

		pts = tv_flt_points(&n);
		l = json_pack("{s:I, s:I, s:s, s:s, s:i, s:s, s:o}",
			      "i", (json_int_t)i, "t", (json_int_t)r->t_ns,
			      "src", "fault", "kind", "FIRE",
			      "node", (int)r->node,
			      "point", r->point < n ? pts[r->point].name : "?",
			      "hit", tv_tb_json_u64(r->hit));
		if (l && r->node_hit && json_object_set_new(l, "node_hit",
				tv_tb_json_u64(r->node_hit))) {
			json_decref(l);
			l = NULL;
		}
		return l;
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
	int rc = tb_tap_collect(t);

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
static json_t *opt_count(bool none, uint64_t v)
{
	return none ? json_null() : json_integer((json_int_t)v);
}

int tb_tap_summary(uint64_t events, const struct tv_tb_result *res,
		   const struct tv_tb_failures *fails, bool no_ops,
		   json_t **sum_p)
{
	json_t *kinds = json_array(), *msgs = json_array(), *sum;
	int err = 0;

	for (size_t i = 0; kinds && msgs && i < fails->count &&
			   i < TV_TB_FAILURES_KEPT; i++) {
		tv_ju_push(kinds, json_string(tv_tb_fail_kind_name(
					fails->msg_kinds[i])), &err);
		tv_ju_push(msgs, tv_tb_json_str(fails->msgs[i] ?
					      fails->msgs[i] : "?"), &err);
	}
	if (err || !kinds || !msgs) {
		/* A summary short of a failure would compare wrong. */
		json_decref(kinds);
		json_decref(msgs);
		return -ENOMEM;
	}
	/* json_pack takes the "o" values, even when it fails. */
	sum = json_pack("{s:b, s:I, s:s, s:o, s:o, s:o, s:I, s:o, s:o}",
			"summary", 1, "events", (json_int_t)events,
			"result", res->failures ? "FAIL" : "PASS",
			"ops", opt_count(no_ops, res->ops),
			"ops_ok", opt_count(no_ops, res->ops_ok),
			"ops_failed", opt_count(no_ops, res->ops_failed),
			"failure_count", (json_int_t)res->failures,
			"failure_kinds", kinds, "failures", msgs);
	if (!sum)
		return -ENOMEM;
	*sum_p = sum;
	return 0;
}

/* ---- the public face ---------------------------------------------------------- */

int tv_tb_tap_create(uint32_t nodes, struct tv_tb_tap **tap_p)
{
	int ret = tb_tap_new(nodes, tap_p);

	if (!ret)
		(*tap_p)->t0_ns = tb_wall_ns();
	return ret;
}

int tv_tb_tap_attach(struct tv_tb_tap *tap, uint32_t node,
		     struct tv_vf_device *wrapped)
{
	return tb_tap_attach(tap, node, wrapped);
}

int tv_tb_tap_write(struct tv_tb_tap *t, const char *path, size_t *events_p)
{
	FILE *f;
	int ret = t->err;

	if (ret)
		return ret;
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fputs("{\"tensorverbs_bench_recording\":1}\n", f) < 0)
		ret = -EIO;
	if (!ret)
		ret = write_records(t, f);
	if (fclose(f) && !ret)
		ret = -EIO;
	if (!ret)
		*events_p = t->n;
	return ret;
}

void tv_tb_tap_free(struct tv_tb_tap *t)
{
	tb_tap_free(t);
}

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

static int record_write(struct tv_tb_tap *t, FILE *f,
			const struct tv_tb_result *res,
			const struct tv_tb_failures *fails)
{
	json_t *sum = NULL;
	int rc = tb_trace_write_line(f, t->hdr);

	if (!rc)
		rc = write_records(t, f);
	if (!rc)
		rc = tb_tap_summary(t->n, res, fails, t->no_ops, &sum);
	if (!rc)
		rc = tb_trace_write_line(f, sum);
	json_decref(sum);
	return rc;
}

int tv_tb_record_finish(struct tv_tb_tap *t, const struct tv_tb_result *res,
			const struct tv_tb_failures *fails)
{
	FILE *f;
	int rc = t->err;

	if (rc)
		goto out;
	f = fopen(t->path, "w");
	if (!f) {
		rc = -errno;
		goto out;
	}
	rc = record_write(t, f, res, fails);
	if (fclose(f) && !rc)
		rc = -EIO;
out:
	tb_tap_free(t);
	return rc;
}

int tb_record_finish_mem(struct tv_tb_tap *t, const struct tv_tb_result *res,
			 const struct tv_tb_failures *fails, char **buf_p,
			 size_t *len_p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc = t->err;

	if (rc)
		goto out;
	f = open_memstream(&buf, &len);
	if (!f) {
		rc = -errno;
		goto out;
	}
	rc = record_write(t, f, res, fails);
	if (fclose(f) && !rc)
		rc = -ENOMEM;
	if (rc) {
		free(buf);
		goto out;
	}
	*buf_p = buf;
	*len_p = len;
out:
	tb_tap_free(t);
	return rc;
}

/* ---- merging the recordings of one run's processes -------------------------------- */

struct merge_in {
	json_t *hdr, *sum;
	json_t **evs;
	size_t nevs;
	uint64_t t0_ns;            /* on the clock the merge uses */
};

struct merge_ev {
	uint64_t t_ns;             /* absolute, on the merge's clock */
	size_t file, idx;
	json_t *ev;
};

/*
 * A recording after its header: event lines (each with an integer "t"
 * and "node"), then one summary, nothing after it.  Lines are the
 * caller's (json_decref each) even when it fails.
 */
int tb_rec_read_body(struct tb_trace_reader *rd, json_t ***lines_p,
		     size_t *n_p, json_t **sum_p, char *err, size_t cap)
{
	char terr[TB_TRACE_ERR_MAX];
	json_t *obj, **lines;
	int rc;

	while (!(rc = tb_trace_reader_next(rd, &obj, terr))) {
		if (!*sum_p && tb_trace_is_summary(obj)) {
			*sum_p = obj;
			continue;
		}
		if (*sum_p || !tb_trace_is_event(obj) ||
		    !json_is_integer(json_object_get(obj, "t")) ||
		    !json_is_string(json_object_get(obj, "kind")) ||
		    !json_is_integer(json_object_get(obj, "node"))) {
			json_decref(obj);
			snprintf(err, cap, "%.900s:%" PRIu64 ": %s", rd->path, rd->line,
				 *sum_p ? "a line after the summary" :
				 "not an event of a recording (\"i\", \"t\", "
				 "\"src\", \"kind\" and a \"node\" number)");
			return -EINVAL;
		}
		lines = realloc(*lines_p, (*n_p + 1) * sizeof(*lines));
		if (!lines) {
			json_decref(obj);
			return -ENOMEM;
		}
		*lines_p = lines;
		lines[(*n_p)++] = obj;
	}
	if (rc != -ENODATA) {
		snprintf(err, cap, "%s", terr);
		return rc;
	}
	if (!*sum_p) {
		snprintf(err, cap, "%.900s: no summary line (a truncated recording?)",
			 rd->path);
		return -EINVAL;
	}
	return 0;
}

/* A recording from its file (f NULL) or from f, named path in messages. */
static int merge_read(const char *path, FILE *f, struct merge_in *in,
		      char *err, size_t cap)
{
	char terr[TB_TRACE_ERR_MAX];
	struct tb_trace_reader rd = { .f = f, .path = path };
	struct tb_trace_header h;
	int rc = f ? 0 : tb_trace_reader_open(path, &rd);

	if (rc) {
		snprintf(err, cap, "%s: %s", path, strerror(-rc));
		return rc;
	}
	rc = tb_trace_read_header(&rd, &in->hdr, &h, terr);
	if (rc)
		snprintf(err, cap, "%s", terr);
	else if (!json_is_string(json_object_get(json_object_get(in->hdr,
			"recording"), "backend"))) {
		snprintf(err, cap, "%.900s: not a recording (no \"recording\" "
			 "in its header)", path);
		rc = -EINVAL;
	}
	if (!rc)
		rc = tb_rec_read_body(&rd, &in->evs, &in->nevs, &in->sum, err,
				      cap);
	tb_trace_reader_close(&rd);
	return rc;
}

static uint64_t rec_u64(json_t *hdr, const char *key)
{
	json_t *v = json_object_get(json_object_get(hdr, "recording"), key);

	return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

static const char *rec_str(json_t *hdr, const char *key)
{
	const char *s = json_string_value(json_object_get(
		json_object_get(hdr, "recording"), key));

	return s ? s : "";
}

/* One run: same scenario, seed and backend; one recording per node. */
static int merge_check(struct merge_in *in, size_t n, const char *const *paths,
		       char *err, size_t cap)
{
	/* Else merge_write() copies a header nobody read: not -ENOMEM. */
	if (!n) {
		snprintf(err, cap, "no recordings to merge");
		return -EINVAL;
	}
	for (size_t i = 1; i < n; i++) {
		const char *what = NULL;

		if (!json_equal(json_object_get(in[i].hdr, "scenario"),
				json_object_get(in[0].hdr, "scenario")))
			what = "another scenario";
		else if (!json_equal(json_object_get(in[i].hdr, "seed"),
				     json_object_get(in[0].hdr, "seed")))
			what = "another seed";
		else if (strcmp(rec_str(in[i].hdr, "backend"),
				rec_str(in[0].hdr, "backend")))
			what = "another backend";
		if (what) {
			snprintf(err, cap, "%s: %s than %s: not the same run", paths[i],
				 what, paths[0]);
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++) {
			if (rec_u64(in[i].hdr, "node") != rec_u64(in[j].hdr, "node"))
				continue;
			snprintf(err, cap, "%s: node %" PRIu64 " again (%s has it): "
				 "one recording per node", paths[i],
				 rec_u64(in[i].hdr, "node"), paths[j]);
			return -EINVAL;
		}
	}
	return 0;
}

static int merge_cmp(const void *a, const void *b)
{
	const struct merge_ev *x = a, *y = b;

	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Every event on one clock: monotonic on one host, else wall time. */
static struct merge_ev *merge_order(struct merge_in *in, size_t n,
				    size_t *count_p, uint64_t *base_p)
{
	bool one_host = true;
	struct merge_ev *all;
	size_t total = 0, k = 0;

	for (size_t i = 0; i < n; i++) {
		total += in[i].nevs;
		one_host &= !strcmp(rec_str(in[i].hdr, "host"),
				    rec_str(in[0].hdr, "host"));
	}
	*base_p = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		in[i].t0_ns = rec_u64(in[i].hdr, one_host ? "t0_monotonic_ns" :
						 "t0_realtime_ns");
		if (in[i].t0_ns < *base_p)
			*base_p = in[i].t0_ns;
	}
	all = calloc(total + 1, sizeof(*all));
	for (size_t i = 0; all && i < n; i++)
		for (size_t j = 0; j < in[i].nevs; j++, k++) {
			all[k].t_ns = in[i].t0_ns + (uint64_t)json_integer_value(
				json_object_get(in[i].evs[j], "t"));
			all[k].file = i;
			all[k].idx = j;
			all[k].ev = in[i].evs[j];
		}
	if (all)
		qsort(all, total, sizeof(*all), merge_cmp);
	*count_p = total;
	return all;
}

/* The run's outcome: failed if a node failed; counts when all have them. */
static json_t *merge_summary(struct merge_in *in, size_t n, size_t events)
{
	json_t *kinds = json_array(), *msgs = json_array(), *k, *m;
	bool fail = false, lost = false;
	json_int_t count = 0;

	for (size_t i = 0; i < n; i++) {
		fail |= !strcmp(json_string_value(json_object_get(in[i].sum,
					"result")) ?: "", "FAIL");
		count += json_integer_value(json_object_get(in[i].sum,
							    "failure_count"));
		k = json_object_get(in[i].sum, "failure_kinds");
		m = json_object_get(in[i].sum, "failures");
		/* A failure lost to memory would merge into another outcome. */
		lost |= json_is_array(k) && json_array_extend(kinds, k);
		lost |= json_is_array(m) && json_array_extend(msgs, m);
	}
	if (lost) {
		json_decref(kinds);
		json_decref(msgs);
		return NULL;
	}
	return json_pack("{s:b, s:I, s:s, s:n, s:n, s:n, s:I, s:o, s:o}",
			 "summary", 1, "events", (json_int_t)events,
			 "result", fail ? "FAIL" : "PASS", "ops", "ops_ok",
			 "ops_failed", "failure_count", count, "failure_kinds", kinds,
			 "failures", msgs);
}

static int merge_write(const char *out, struct merge_in *in, size_t n,
		       struct merge_ev *all, size_t total, uint64_t base)
{
	json_t *hdr = json_deep_copy(in[0].hdr), *rec, *nodes, *sum;
	FILE *f;
	int rc = 0;

	rec = hdr ? json_object_get(hdr, "recording") : NULL;
	nodes = json_array();
	for (size_t i = 0; nodes && i < n; i++)
		tv_ju_push(nodes, json_integer((json_int_t)rec_u64(in[i].hdr,
								 "node")), &rc);
	if (!rec || !nodes || rc) {
		json_decref(nodes);
		rc = -ENOMEM;
		goto out;
	}
	tv_ju_set(rec, "nodes", nodes, &rc);
	if (rc)
		goto out;
	/* One process's: the merged clock starts at the earliest start. */
	json_object_del(rec, "node");
	json_object_del(rec, "t0_monotonic_ns");
	json_object_del(rec, "t0_realtime_ns");
	tv_ju_set(rec, "merged", json_integer((json_int_t)n), &rc);
	if (rc)
		goto out;
	f = fopen(out, "w");
	if (!f) {
		rc = -errno;
		goto out;
	}
	rc = tb_trace_write_line(f, hdr);
	for (size_t k = 0; !rc && k < total; k++) {
		tv_ju_set(all[k].ev, "i", json_integer((json_int_t)k), &rc);
		tv_ju_set(all[k].ev, "t",
			json_integer((json_int_t)(all[k].t_ns - base)), &rc);
		if (!rc)
			rc = tb_trace_write_line(f, all[k].ev);
	}
	sum = rc ? NULL : merge_summary(in, n, total);
	if (!rc)
		rc = sum ? tb_trace_write_line(f, sum) : -ENOMEM;
	json_decref(sum);
	if (fclose(f) && !rc)
		rc = -EIO;
out:
	json_decref(hdr);
	return rc;
}

/*
 * The merge of n recordings named names[i], read from their files, or
 * from files[i] when files is not NULL (each closed here).
 */
static int merge(const char *out, const char *const *names, FILE **files,
		 size_t n, char *err, size_t cap)
{
	struct merge_in *in = calloc(n ? n : 1, sizeof(*in));
	struct merge_ev *all = NULL;
	uint64_t base = 0;
	size_t total = 0;
	int rc = in ? 0 : -ENOMEM;

	err[0] = 0;
	for (size_t i = 0; i < n; i++) {
		FILE *f = files ? files[i] : NULL;

		if (!rc)
			rc = merge_read(names[i], f, &in[i], err, cap);
		else if (f)
			fclose(f);
	}
	if (!rc)
		rc = merge_check(in, n, names, err, cap);
	if (!rc) {
		all = merge_order(in, n, &total, &base);
		rc = all ? merge_write(out, in, n, all, total, base) : -ENOMEM;
	}
	if (rc && !err[0])
		snprintf(err, cap, "%s: %s", out, strerror(-rc));
	for (size_t i = 0; in && i < n; i++) {
		json_decref(in[i].hdr);
		json_decref(in[i].sum);
		for (size_t j = 0; j < in[i].nevs; j++)
			json_decref(in[i].evs[j]);
		free(in[i].evs);
	}
	free(in);
	free(all);
	return rc;
}

int tv_tb_record_merge(const char *out, const char *const *paths, size_t n,
		       char *err, size_t cap)
{
	return merge(out, paths, NULL, n, err, cap);
}

int tb_record_merge_mem(const char *out, char *const *bufs,
			const uint64_t *lens, size_t n, char *err, size_t cap)
{
	char (*names)[48] = calloc(n ? n : 1, sizeof(*names));
	const char **np = calloc(n ? n : 1, sizeof(*np));
	FILE **files = calloc(n ? n : 1, sizeof(*files));
	int rc = names && np && files ? 0 : -ENOMEM;

	err[0] = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "rank %zu's recording", i);
		np[i] = names[i];
		if (!lens[i]) {
			snprintf(err, cap, "%s: empty", names[i]);
			rc = -EINVAL;
			break;
		}
		files[i] = fmemopen(bufs[i], lens[i], "r");
		if (!files[i])
			rc = -errno;
	}
	if (!rc)
		rc = merge(out, np, files, n, err, cap);
	else
		for (size_t i = 0; files && i < n; i++)
			if (files[i])
				fclose(files[i]);
	if (rc && !err[0])
		snprintf(err, cap, "%s: %s", out, strerror(-rc));
	free(files);
	free(np);
	free(names);
	return rc;
}
