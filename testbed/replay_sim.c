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

/* The completions one QP of one node delivers on one CQ, and those held. */
struct follow_q {
	uint32_t node, cq, qp;
	json_t **exp;              /* borrowed from the recording */
	size_t nexp, pos;
	struct tv_vf_wc *held;
	json_t **held_lines;       /* each held completion as the tap's line */
	uint64_t first_held_ns;    /* when the oldest held one was held */
	size_t nheld, capheld;
	bool gave_up;              /* diverged: completions pass as they come */
};

/*
 * A QP whose simulator made this many completions that never came next in
 * the recording has diverged for good: holding more would only stall the
 * run (and cost a comparison per held completion each time).
 */
#define FOLLOW_MAX_HELD 128
/*
 * Nor may a completion of a device's recording be held longer than this
 * (virtual time): the engine would wait for it, and its timers, not the
 * recording, would decide what happens next.  The hold arms a wake-up
 * for then.  (A simulator's recording replays identically: nothing waits
 * for a completion that never comes, and an extra wake-up would be an
 * event the recorded run did not have.)
 */
#define FOLLOW_MAX_HOLD_NS (1000ull * 1000)

/*
 * Where a node started a time point of the scenario on real verbs: after
 * `need` of its verbs events (its STEP line).  The simulator starts the
 * node's operations due then only once its node made as many.
 */
struct follow_gate {
	uint32_t node;
	uint64_t at_ns;
	uint64_t need;
};

/*
 * An operation waits for its place this long at most (virtual time): the
 * events before it may never all come in the simulator (another order of
 * completions, a message the simulator did not need to retry).
 */
#define FOLLOW_GATE_MAX_NS TV_TB_REPLAY_GATE_MAX_NS

struct follow {
	json_t **lines;            /* the recording's event lines */
	size_t nlines;
	struct follow_gate *gates; /* by node, then at_ns */
	size_t ngates;
	struct tv_tb_tap *tap;     /* the simulator's events */
	uint64_t *first_at;        /* per node: the first time point asked */
	bool hw;                   /* recorded on a device, not simulated */
	uint64_t ops_waited, ops_forced;
	json_t *summary;
	struct follow_q *qs;
	size_t nqs;
	size_t gave_up;            /* queues that stopped following */
	int err;
};

static const char *const cmp_keys[] = {
	"src", "kind", "node", "qp", "cq", "op", "status", "state", "imm",
	"len", "point", "hit", "node_hit",
};

static bool is_recv_poll(json_t *line)
{
	const char *op = json_string_value(json_object_get(line, "op"));

	return op && !strncmp(op, "RECV", 4);
}

/* Equal in every compared key. */
static bool lines_match(json_t *a, json_t *b)
{
	const char *kind = json_string_value(json_object_get(a, "kind"));
	const char *status = json_string_value(json_object_get(a, "status"));
	bool poll = kind && !strcmp(kind, "POLL");
	bool success = !status || !strcmp(status, "SUCCESS");

	for (size_t k = 0; k < TB_ARRAY_SIZE(cmp_keys); k++) {
		/*
		 * A send completion's byte_len, immediate and WITH_IMM flag
		 * are undefined (ibv_poll_cq(3): relevant for receives): rxe
		 * sets WITH_IMM and an immediate of 0 on the send side of an
		 * RDMA_WRITE_WITH_IMM, a ConnectX does not.
		 */
		if (poll && !is_recv_poll(a) && (!strcmp(cmp_keys[k], "len") ||
						  !strcmp(cmp_keys[k], "imm")))
			continue;
		/*
		 * An error completion is valid in wr_id, status, qp_num and
		 * vendor_err only (ibv_poll_cq(3)): rxe flushes a receive as
		 * opcode SEND, the simulator as RECV.
		 */
		/*
		 * A firing on a device counts in the node's own hits: the
		 * injector's count spans every node in the simulator, one
		 * process on real verbs, none for fiu-ctrl's firings.
		 */
		if (!strcmp(cmp_keys[k], "hit") && json_object_get(a, "node_hit"))
			continue;
		if (poll && !success && (!strcmp(cmp_keys[k], "op") ||
					 !strcmp(cmp_keys[k], "len") ||
					 !strcmp(cmp_keys[k], "imm")))
			continue;
		if (!json_equal(json_object_get(a, cmp_keys[k]),
				json_object_get(b, cmp_keys[k])) &&
		    (json_object_get(a, cmp_keys[k]) ||
		     json_object_get(b, cmp_keys[k])))
			return false;
	}
	return true;
}

static struct follow_q *queue_of(struct follow *f, uint32_t node, uint32_t cq,
				 uint32_t qp)
{
	for (size_t i = 0; i < f->nqs; i++)
		if (f->qs[i].node == node && f->qs[i].cq == cq &&
		    f->qs[i].qp == qp)
			return &f->qs[i];
	return NULL;
}

static int queue_add(struct follow *f, uint32_t node, uint32_t cq,
		     uint32_t qp, json_t *line)
{
	struct follow_q *q = queue_of(f, node, cq, qp), *qs;
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
		q->qp = qp;
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

static int hold(struct tb_tap_node *tn, struct follow_q *q,
		const struct tv_vf_wc *wc)
{
	struct tv_vf_wc *h;
	json_t **l, *line;
	size_t cap;

	if (q->nheld == q->capheld) {
		cap = q->capheld ? q->capheld * 2 : 16;
		h = realloc(q->held, cap * sizeof(*h));
		if (h)
			q->held = h;
		l = h ? realloc(q->held_lines, cap * sizeof(*l)) : NULL;
		if (!l)
			return -ENOMEM;
		q->held_lines = l;
		q->capheld = cap;
	}
	line = wc_line(tn, q->cq, wc);
	if (!line)
		return -ENOMEM;
	if (!q->nheld && ((struct follow *)tn->tap->follow)->hw) {
		q->first_held_ns = tv_vf_now_ns(tn->dev);
		tv_vf_wake_at(tn->dev, q->first_held_ns + FOLLOW_MAX_HOLD_NS);
	}
	q->held[q->nheld] = *wc;
	q->held_lines[q->nheld++] = line;
	return 0;
}

/* The held completion matching the next recorded one, or -1. */
static long held_match(struct follow_q *q)
{
	for (size_t i = 0; i < q->nheld; i++)
		if (lines_match(q->exp[q->pos], q->held_lines[i]))
			return (long)i;
	return -1;
}

static void unhold(struct follow_q *q, size_t i, struct tv_vf_wc *out)
{
	*out = q->held[i];
	json_decref(q->held_lines[i]);
	memmove(q->held + i, q->held + i + 1,
		(q->nheld - i - 1) * sizeof(*q->held));
	memmove(q->held_lines + i, q->held_lines + i + 1,
		(q->nheld - i - 1) * sizeof(*q->held_lines));
	q->nheld--;
}

/* Out of q, in the recorded order, what matches: at most room. */
static int release(struct follow *f, struct follow_q *q, uint64_t now_ns,
		   struct tv_vf_wc *out, int room)
{
	int n = 0;
	long i;

	if (!q->gave_up && (q->nheld > FOLLOW_MAX_HELD ||
			    (f->hw && q->nheld && now_ns - q->first_held_ns >=
					 FOLLOW_MAX_HOLD_NS))) {
		q->gave_up = true;
		f->gave_up++;
	}
	while (n < room && q->nheld) {
		if (q->pos < q->nexp && !q->gave_up) {
			i = held_match(q);
			if (i < 0)
				break;
			q->pos++;
		} else {
			i = 0;
		}
		unhold(q, (size_t)i, &out[n++]);
		q->first_held_ns = now_ns;
	}
	return n;
}

/*
 * The tap's poll hook.  Each completion joins its QP's held ones, and
 * out go, in that QP's recorded order, those that match.  RC orders a
 * QP's completions; across the QPs of a shared CQ the order is the
 * device's timing, which is not forced: an engine that posts on one QP
 * after a completion of another would wait for ever.  Past the end of
 * the recording (teardown) completions pass as they come.
 */
static int follow_poll(void *ctx, uint32_t cq, struct tv_vf_wc *wc, int got,
		       int cap)
{
	struct tb_tap_node *tn = ctx;
	struct follow *f = tn->tap->follow;
	struct tv_vf_wc *in = malloc(((size_t)got + 1) * sizeof(*in));
	uint64_t now = tv_vf_now_ns(tn->dev);
	struct follow_q *q;
	int out = 0;

	if (!in) {
		f->err = -ENOMEM;
		return got;
	}
	memcpy(in, wc, (size_t)got * sizeof(*in));
	for (int k = 0; k < got; k++) {
		q = queue_of(f, tn->node, cq,
			     tv_flt_tap_qp_index(tn->dev, in[k].qp_num));
		if (!q) {
			wc[out++] = in[k];
			continue;
		}
		if (hold(tn, q, &in[k])) {
			f->err = -ENOMEM;
			break;
		}
		out += release(f, q, now, wc + out, cap - out);
	}
	free(in);
	/*
	 * Held too long on this CQ (an empty poll after the wake-up); still
	 * held: the wake-up again (a node has one deadline, and an earlier
	 * one of the engine's may have covered the hold's, then moved on).
	 */
	for (size_t i = 0; i < f->nqs && out < cap; i++) {
		q = &f->qs[i];
		if (q->node != tn->node || q->cq != cq || !q->nheld)
			continue;
		out += release(f, q, now, wc + out, cap - out);
		if (f->hw && q->nheld)
			tv_vf_wake_at(tn->dev, q->first_held_ns +
					       FOLLOW_MAX_HOLD_NS);
	}
	return out;
}

/* ---- reading the recording ---------------------------------------------------- */

static int index_polls(struct follow *f, char *err, size_t cap)
{
	const char *kind;
	json_t *l;
	int rc;

	for (size_t i = 0; i < f->nlines; i++) {
		l = f->lines[i];
		/* tb_rec_read_body refuses an event without a "kind" string. */
		kind = json_string_value(json_object_get(l, "kind"));
		if (strcmp(kind, "POLL"))
			continue;
		if (!json_is_integer(json_object_get(l, "cq"))) {
			snprintf(err, cap, "event %zu: a POLL without a \"cq\" number",
				 i);
			return -EINVAL;
		}
		rc = queue_add(f, (uint32_t)json_integer_value(json_object_get(l, "node")),
			       (uint32_t)json_integer_value(json_object_get(l, "cq")),
			       json_is_integer(json_object_get(l, "qp")) ?
			       (uint32_t)json_integer_value(json_object_get(l, "qp")) :
			       TV_FLT_TAP_NONE, l);
		if (rc)
			return rc;
	}
	return 0;
}

static int gate_cmp(const void *a, const void *b)
{
	const struct follow_gate *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->at_ns < y->at_ns ? -1 : x->at_ns > y->at_ns;
}

/* The STEP lines, each with the count of its node's verbs events before. */
static int index_gates(struct follow *f, uint32_t nodes)
{
	uint64_t *seen = calloc(nodes ? nodes : 1, sizeof(*seen));
	const char *src;
	uint32_t node;
	json_t *l;

	f->gates = calloc(f->nlines + 1, sizeof(*f->gates));
	f->first_at = malloc((nodes ? nodes : 1) * sizeof(*f->first_at));
	if (!seen || !f->gates || !f->first_at) {
		free(seen);
		return -ENOMEM;
	}
	for (uint32_t n = 0; n < nodes; n++)
		f->first_at[n] = UINT64_MAX;
	for (size_t i = 0; i < f->nlines; i++) {
		l = f->lines[i];
		node = (uint32_t)json_integer_value(json_object_get(l, "node"));
		src = json_string_value(json_object_get(l, "src"));
		if (node >= nodes || !src)
			continue;
		if (!strcmp(src, "verbs"))
			seen[node]++;
		else if (!strcmp(src, "workload") &&
			 json_is_integer(json_object_get(l, "at_ns")))
			f->gates[f->ngates++] = (struct follow_gate){ node,
				(uint64_t)json_integer_value(json_object_get(l, "at_ns")),
				seen[node] };
	}
	qsort(f->gates, f->ngates, sizeof(*f->gates), gate_cmp);
	free(seen);
	return 0;
}

/*
 * tv_tb_run_opts.op_gate: has the node made the events it made before
 * its first operations?  Only the first time point waits: that is where
 * processes on real verbs start unevenly (one node's first message is
 * polled before the other node's operations start).  Later counts differ
 * with the protocol's timing-dependent choices (rxe is slow enough that
 * an ACK goes alone rather than riding on a tensor write), and holding
 * each later operation to a count it never reaches would only delay it.
 */
static bool follow_gate(void *ctx, uint32_t node, uint64_t at_ns,
			uint64_t waited_ns)
{
	struct follow *f = ctx;
	struct follow_gate key = { node, at_ns, 0 };
	const struct follow_gate *g;

	if (node >= f->tap->nnodes)
		return true;
	if (f->first_at[node] == UINT64_MAX)
		f->first_at[node] = at_ns;
	if (at_ns != f->first_at[node])
		return true;
	g = bsearch(&key, f->gates, f->ngates, sizeof(key), gate_cmp);
	if (!g ||
	    f->tap->nodes[node].events >= g->need) {
		f->ops_waited += waited_ns > 0;
		return true;
	}
	if (waited_ns < FOLLOW_GATE_MAX_NS)
		return false;
	f->ops_forced++;
	return true;
}

static void follow_free(struct follow *f)
{
	free(f->gates);
	free(f->first_at);
	for (size_t i = 0; i < f->nlines; i++)
		json_decref(f->lines[i]);
	free(f->lines);
	json_decref(f->summary);
	for (size_t i = 0; i < f->nqs; i++) {
		free(f->qs[i].exp);
		free(f->qs[i].held);
		for (size_t j = 0; j < f->qs[i].nheld; j++)
			json_decref(f->qs[i].held_lines[j]);
		free(f->qs[i].held_lines);
	}
	free(f->qs);
}

/* ---- the header and the plan ---------------------------------------------------- */

/*
 * A firing at the node's own hit of a wrapper point, as a node rule:
 * once, at that hit.  Each process counted its own hits (and fiu-ctrl's
 * firings have no other number).
 */
static int plan_add_node_fire(json_t *plan, const char *point, json_t *l)
{
	return json_array_append_new(plan, json_pack("{s:s, s:O, s:O, s:i}",
			"point", point, "node", json_object_get(l, "node"),
			"nth", json_object_get(l, "node_hit"), "count", 1));
}

/* Rules that fire at the recorded hits: a point's first hit, its count. */
static int plan_from_fires(struct follow *f, json_t **plan_p)
{
	json_t *plan = json_array(), *rule, *l;
	const char *point;
	int rc = 0;

	if (!plan)
		return -ENOMEM;
	for (size_t i = 0; i < f->nlines && !rc; i++) {
		l = f->lines[i];
		if (strcmp(json_string_value(json_object_get(l, "src")), "fault"))
			continue;
		point = json_string_value(json_object_get(l, "point"));
		if (!point)
			continue;
		if (json_is_integer(json_object_get(l, "node_hit"))) {
			rc = plan_add_node_fire(plan, point, l);
			continue;
		}
		if (!json_is_integer(json_object_get(l, "hit")))
			continue;
		rule = tb_plan_rule(plan, point);
		if (rule && !json_object_get(rule, "node")) {
			json_object_set_new(rule, "count", json_integer(
				json_integer_value(json_object_get(rule, "count")) + 1));
			continue;
		}
		rc = json_array_append_new(plan, json_pack("{s:s, s:O, s:i}",
				"point", point, "nth", json_object_get(l, "hit"),
				"count", 1));
	}
	if (rc) {
		json_decref(plan);
		return -ENOMEM;
	}
	*plan_p = plan;
	return 0;
}

/*
 * A run on a device has no virtual deadline: its timeouts are long (the
 * rxe suite gives gathers 20 s under TCG), and the simulator's default
 * (the last operation + 10 s) would end the replay with a timer pending.
 */
#define REPLAY_HW_DEADLINE_NS (120ull * 1000 * 1000 * 1000)

static json_t *hw_scenario(json_t *scenario)
{
	json_t *sc = json_deep_copy(scenario), *sim;

	if (!sc)
		return NULL;
	sim = json_object_get(sc, "sim");
	if (!sim) {
		sim = json_object();
		json_object_set_new(sc, "sim", sim);
	}
	if (sim && !json_object_get(sim, "deadline_ns"))
		json_object_set_new(sim, "deadline_ns",
				    json_integer((json_int_t)REPLAY_HW_DEADLINE_NS));
	return sc;
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
	json_t *hdr, *rec, *plan = NULL, *scj;
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
	f->hw = strcmp(backend, "sim") != 0;
	h->seed = th.seed;
	scj = strcmp(backend, "sim") ? hw_scenario(th.scenario) :
				       json_incref(th.scenario);
	rc = scj ? tv_tb_scenario_from_json(scj, rd->path, &h->sc, terr) :
		   -ENOMEM;
	json_decref(scj);
	if (rc)
		snprintf(err, cap, "%.200s: its scenario is invalid: %.700s", rd->path, terr);
	if (!rc)
		rc = tb_rec_read_body(rd, &f->lines, &f->nlines, &f->summary,
				      err, cap);
	/* On the simulator the seed fires the plan at the same hits. */
	if (!rc && strcmp(backend, "sim"))
		rc = plan_from_fires(f, &plan);
	else if (!rc && json_is_array(th.plan))
		plan = json_incref(th.plan);
	if (!rc && plan && json_array_size(plan) &&
	    (rc = tv_tb_plan_validate(plan, terr, sizeof(terr))))
		snprintf(err, cap, "%.200s: its fault plan is invalid: %.700s", rd->path, terr);
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

/*
 * Events are compared per stream: a node's QP (its states, posts and
 * completions), or the node itself (registrations, firings).  Streams
 * interleave by timing, on a device more than in the simulator (rdma_cm
 * brings QPs up one connection at a time); inside a stream the order is
 * the protocol's.
 */
/* -2: not compared (a STEP: where the node started operations). */
static int64_t stream_of_line(json_t *l)
{
	json_t *qp = json_object_get(l, "qp");
	const char *kind = json_string_value(json_object_get(l, "kind"));
	const char *src = json_string_value(json_object_get(l, "src"));
	bool poll = kind && !strcmp(kind, "POLL");

	if (src && !strcmp(src, "workload"))
		return -2;
	return json_is_integer(qp) ? 2 * json_integer_value(qp) + poll : -1;
}

/* -1: the node's own; 2 qp: a QP's states and posts; 2 qp + 1: its completions. */
static int64_t stream_of_rec(const struct tb_tap_rec *r)
{
	if (r->src != TB_TAP_SRC_VERBS || r->ev.qp == TV_FLT_TAP_NONE)
		return -1;
	return 2 * (int64_t)r->ev.qp + (r->ev.kind == TV_FLT_TAP_POLL);
}

/* Positions of the events of (node, stream), in order. */
static size_t *stream_lines(struct follow *f, uint32_t node, int64_t st,
			    size_t *n_p)
{
	size_t *ix = malloc((f->nlines + 1) * sizeof(*ix)), n = 0;

	for (size_t i = 0; ix && i < f->nlines; i++)
		if ((uint32_t)json_integer_value(json_object_get(f->lines[i],
								 "node")) == node &&
		    stream_of_line(f->lines[i]) == st)
			ix[n++] = i;
	*n_p = n;
	return ix;
}

static size_t *stream_recs(const struct tv_tb_tap *t, uint32_t node,
			   int64_t st, size_t *n_p)
{
	size_t *ix = malloc((t->n + 1) * sizeof(*ix)), n = 0;

	for (size_t i = 0; ix && i < t->n; i++)
		if (t->recs[i].node == node && stream_of_rec(&t->recs[i]) == st)
			ix[n++] = i;
	*n_p = n;
	return ix;
}

/* The first event of a stream that differs: its rank k, or -1 if none. */
static long stream_divergence(struct follow *f, const struct tv_tb_tap *t,
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

/* The largest QP index either side has on node n. */
static int64_t max_stream(struct follow *f, const struct tv_tb_tap *t,
			  uint32_t node)
{
	int64_t m = -1;

	for (size_t i = 0; i < f->nlines; i++)
		if ((uint32_t)json_integer_value(json_object_get(f->lines[i],
								 "node")) == node &&
		    stream_of_line(f->lines[i]) > m)
			m = stream_of_line(f->lines[i]);
	for (size_t i = 0; i < t->n; i++)
		if (t->recs[i].node == node && stream_of_rec(&t->recs[i]) > m)
			m = stream_of_rec(&t->recs[i]);
	return m;
}

static void note_divergence(struct tv_tb_replay_sim_report *rep,
			    uint64_t *best, json_t *exp, json_t *act,
			    uint64_t nlines, uint32_t node, int64_t st, long k)
{
	uint64_t idx = exp ? (uint64_t)json_integer_value(json_object_get(exp, "i")) :
			     nlines;

	if (idx >= *best)
		return;
	*best = idx;
	free(rep->expected);
	free(rep->actual);
	rep->expected = line_text(exp);
	rep->actual = line_text(act);
	rep->div_node = node;
	rep->div_qp = st < 0 ? -1 : st / 2;
	rep->div_polls = st >= 0 && st % 2;
	rep->div_k = (uint64_t)k;
}

/* The first recorded event (by its index) the simulator did otherwise. */
static int first_divergence(struct follow *f, const struct tv_tb_tap *t,
			    uint32_t nodes, struct tv_tb_replay_sim_report *rep)
{
	uint64_t best = UINT64_MAX;
	size_t *li, *ri, nl, nr;
	json_t *act;
	long k;

	for (uint32_t n = 0; n < nodes; n++) {
		int64_t last = max_stream(f, t, n);

		for (int64_t st = -1; st <= last; st++) {
			li = stream_lines(f, n, st, &nl);
			ri = stream_recs(t, n, st, &nr);
			if (!li || !ri) {
				free(li);
				free(ri);
				return -ENOMEM;
			}
			act = NULL;
			k = stream_divergence(f, t, li, nl, ri, nr, &act);
			if (k >= 0)
				note_divergence(rep, &best, (size_t)k < nl ?
						f->lines[li[k]] : NULL, act,
						f->nlines, n, st, k);
			json_decref(act);
			free(li);
			free(ri);
		}
	}
	rep->diverged = best != UINT64_MAX;
	rep->div_index = best;
	return 0;
}

/*
 * The simulator's first failure is of a kind the recording has.  Not the
 * recording's first: a merged recording lists node 0's failures first, and
 * node 0 often only relays another node's ("stopped while waiting ...:
 * node 1: ..."), where the simulator, one process, fails at the cause.
 */
static bool kind_recorded(json_t *kinds, json_t *kind)
{
	json_t *k;
	size_t i;

	json_array_foreach(kinds, i, k)
		if (json_equal(k, kind))
			return true;
	return false;
}

static int compare_outcome(struct follow *f, const struct tv_tb_result *res,
			   const struct tv_tb_failures *fails,
			   struct tv_tb_replay_sim_report *rep)
{
	json_t *sum = NULL;
	static const char *const keys[] = {
		"result", "ops", "ops_ok", "ops_failed",
	};
	bool same = true;
	int rc = tb_tap_summary(0, res, fails, false, &sum);

	if (rc)
		return rc;
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
		kind_recorded(json_object_get(f->summary, "failure_kinds"),
			      json_array_get(json_object_get(sum, "failure_kinds"), 0));
	for (size_t i = 0; i < fails->count && i < TV_TB_REPLAY_SIM_FAILS; i++)
		snprintf(rep->sim_failures[i], sizeof(rep->sim_failures[i]), "%s",
			 fails->msgs[i] ? fails->msgs[i] : "?");
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
	return 0;
}

/* Did the simulator fire this recorded FIRE: its node, point and hit? */
static bool fire_again(const struct tv_tb_tap *t, const size_t *fx,
		       size_t nfx, json_t *l)
{
	const struct tv_flt_point_info *pts, *pt;
	json_t *nh = json_object_get(l, "node_hit");
	uint64_t hit = (uint64_t)json_integer_value(nh ? nh :
					json_object_get(l, "hit"));
	json_int_t node = json_integer_value(json_object_get(l, "node"));
	const char *name = json_string_value(json_object_get(l, "point"));
	size_t n;

	/*
	 * A FIRE line without a "point" string fired nothing we know (the
	 * plan skips it too): tv_flt_point_find(NULL) crashed the replay.
	 */
	pt = name ? tv_flt_point_find(name) : NULL;
	if (!pt)
		return false;
	pts = tv_flt_points(&n);
	for (size_t i = 0; i < nfx; i++) {
		const struct tb_tap_rec *r = &t->recs[fx[i]];

		if (r->point == pt - pts && r->node == node &&
		    (nh ? r->node_hit : r->hit) == hit)
			return true;
	}
	return false;
}

/* The simulator's firings are found once, then matched per recorded one. */
static int compare_fires(const struct follow *f, const struct tv_tb_tap *t,
			 struct tv_tb_replay_sim_report *rep)
{
	size_t *fx = malloc((t->n + 1) * sizeof(*fx)), nfx = 0;

	/* Without it no fire would count as the same: a wrong report. */
	if (!fx)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++)
		if (t->recs[i].src == TB_TAP_SRC_FIRE)
			fx[nfx++] = i;
	for (size_t i = 0; i < f->nlines; i++) {
		json_t *l = f->lines[i];

		if (strcmp(json_string_value(json_object_get(l, "src")), "fault"))
			continue;
		rep->fires++;
		rep->fires_same += fire_again(t, fx, nfx, l);
	}
	free(fx);
	return 0;
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
	f->tap = t;
	tv_tb_run_opts_init(&opts, h->sc);
	opts.seed = h->seed;
	opts.tap = t;
	if (f->ngates) {
		opts.op_gate = follow_gate;
		opts.op_gate_ctx = f;
	}
	rc = tv_tb_run(h->sc, &opts, &run);
	if (!rc)
		rc = tb_tap_collect(t);
	if (!rc && !(rc = f->err ? f->err : t->err) &&
	    !(rc = first_divergence(f, t, h->sc->nodes, rep)) &&
	    !(rc = compare_outcome(f, tv_tb_run_result(run),
				   tv_tb_run_failures(run), rep)) &&
	    !(rc = compare_fires(f, t, rep))) {
		rep->held = held_left(f);
		rep->ops_places = f->ngates;
		rep->ops_waited = f->ops_waited;
		rep->ops_forced = f->ops_forced;
		rep->gave_up = f->gave_up;
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
	if (!rc)
		rc = index_gates(&f, h.sc->nodes);
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
