/*
 * The rendezvous workload on real verbs (workload.h "real verbs"): its
 * node publishes the scenario's sends from this node and issues its
 * recvs in the scenario's order, verifies what arrives against the
 * runner's deterministic fill, checks the engine's invariants from its
 * observer, and tells the testbed what it counted.  The testbed owns the
 * barriers between time points: a recv of step s starts only after this
 * node's recvs of earlier steps completed, and a node settles (every
 * control message it sent is ACKed) before the barrier, so a recv
 * scheduled before a send reaches the sender's table before the tensor
 * is published, as on the simulator, and cached metadata is cached.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include <tensorverbs/cm.h>
#include <tensorverbs/workload.h>

#include "fill.h"
#include "rv_hw.h"
#include "rv_run.h"
#include "rv_scenario.h"

/* What each node reports at the end: its engine's statistics. */
#define RR_STATS_N (sizeof(struct tv_engine_stats) / sizeof(uint64_t))

struct rr;

struct rr_recv {
	struct rr *r;
	size_t idx;
	unsigned int calls;
	bool issued;
};

struct rr {
	struct tv_tb_hw *hw;
	const struct scenario *sc;
	uint32_t me;               /* this process's node */
	struct rnode n;
	bool opened;
	bool *talks;               /* [nodes]: a channel to that node */
	int64_t *in_flight;        /* [nodes]: control messages not ACKed */
	bool reconnect;            /* a failed channel is set up again */
	uint32_t *resets;          /* [nodes]: channel resets seen */
	struct rr_recv *recvs;     /* [nrecvs], ours only are used */
	bool injected;
	size_t recvs_local;
	size_t recvs_done;
	uint64_t recvs_ok;
	uint64_t recvs_err;
	uint64_t bytes_ok;
	uint64_t channel_errors;
};

/* ---- observers ------------------------------------------------------------ */

static const char *ev_name(enum tv_engine_event_kind k)
{
	switch (k) {
	case TV_EV_ACK_SEND: return "ACK sent to";
	case TV_EV_ACK_RECV: return "ACK from";
	case TV_EV_REQ_ADVERTISE: return "advertise to";
	case TV_EV_TENSOR_WRITE: return "tensor write to";
	case TV_EV_RECV_DONE: return "recv done from";
	default: return "event with";
	}
}

/*
 * A channel failed: the engine's words, and the connection manager's last
 * trouble with that peer when it had some (a refused rdma_accept, a
 * connect that timed out): the cause, where the engine only saw a reset.
 */
static void channel_error(struct rr *r, const struct tv_engine_event *ev)
{
	const char *why = NULL;
	char text[600];

	r->channel_errors++;
	if (r->n.cm)
		tv_cm_peer_state(r->n.cm, ev->peer, &why);
	snprintf(text, sizeof(text), "channel to node %u failed: %s%s%.400s%s",
		 ev->peer, ev->name ? ev->name : "?",
		 why && why[0] ? " (the connection's last trouble: " : "",
		 why ? why : "", why && why[0] ? ")" : "");
	tv_tb_hw_log(r->hw, "%s", text);
	if (!tv_tb_hw_recovering(r->hw))
		tv_tb_hw_fail(r->hw, TV_TB_FK_ERROR, "%s", text);
}

static void rr_observe(void *ctx, const struct tv_engine_event *ev)
{
	struct rr *r = ctx;
	int64_t *f;

	if (ev->peer >= r->sc->nodes)
		return;
	f = &r->in_flight[ev->peer];
	if (ev->kind == TV_EV_MSG_SEND && ++*f > 1) {
		tv_tb_hw_fail(r->hw, TV_TB_FK_IN_FLIGHT, "invariant: %" PRId64 " control "
			     "messages in flight to node %u (max 1): %s",
			     *f, ev->peer,
			     scenario_msg_type_name((int)ev->msg_type));
	} else if (ev->kind == TV_EV_ACK_RECV && --*f < 0) {
		tv_tb_hw_fail(r->hw, TV_TB_FK_IN_FLIGHT, "invariant: an ACK from node %u with "
			     "no message in flight", ev->peer);
		*f = 0;
	} else if (ev->kind == TV_EV_CHANNEL_ERROR && !tv_tb_hw_ending(r->hw)) {
		channel_error(r, ev);
	}
	if (ev->kind == TV_EV_MSG_SEND || ev->kind == TV_EV_MSG_RECV)
		tv_tb_hw_log(r->hw, "%s %s to/from node %u idx %u step %" PRIu64 " %s",
		     ev->kind == TV_EV_MSG_SEND ? "send" : "recv",
		     scenario_msg_type_name((int)ev->msg_type), ev->peer,
		     ev->request_index, ev->step_id, ev->name ? ev->name : "");
	else if (ev->kind != TV_EV_CHANNEL_ERROR)
		tv_tb_hw_log(r->hw, "%s node %u idx %u step %" PRIu64 " %s len %" PRIu64
		     " code %d", ev_name(ev->kind), ev->peer,
		     ev->request_index, ev->step_id, ev->name ? ev->name : "",
		     ev->length, ev->code);
}

static void rr_note(void *ctx, uint32_t peer, enum tv_cm_note note,
		    const char *text)
{
	struct rr *r = ctx;

	if (peer >= r->sc->nodes)
		return;
	/* A new QP: whatever was in flight on the old one is gone. */
	if (note == TV_CM_NOTE_RESET) {
		r->in_flight[peer] = 0;
		r->resets[peer]++;
	}
	tv_tb_hw_log(r->hw, "cm: node %u %s%s%s", peer,
	     note == TV_CM_NOTE_CONNECTED ? "connected" :
	     note == TV_CM_NOTE_RESET ? "channel reset" :
	     note == TV_CM_NOTE_DISCONNECTED ? "disconnected" : "failed",
	     text ? ": " : "", text ? text : "");
}

/* ---- sends: the same tensors the simulator runner publishes ---------------- */

static int make_tensor(struct rr *r, const struct sc_send *s,
		       struct tv_tensor **t_p)
{
	uint64_t seed = fill_seed(tv_tb_hw_seed(r->hw), &s->fill, s->step_id, s->name);
	struct tv_tensor *t;
	int ret = 0;

	if (s->dead)
		return tv_tensor_create_dead(r->n.engine, s->dtype, t_p);
	ret = tv_tensor_create(r->n.engine, s->dtype, &s->shape, s->place, &t);
	if (ret)
		return ret;
	if (s->dtype == TV_DT_STRING) {
		ret = fill_tensor_strings(s, seed, t);
	} else if (tv_tensor_size_bytes(t) > 0) {
		if (!tv_tensor_data(t))
			ret = -EFAULT;
		else
			fill_bytes(tv_tensor_data(t), tv_tensor_size_bytes(t),
				   s->dtype, s->fill.pattern, seed);
	}
	if (ret) {
		tv_tensor_unref(t);
		return ret;
	}
	*t_p = t;
	return 0;
}

/*
 * A send that could not be published fails the node; the run stops (the
 * receivers would otherwise wait for it until --timeout).
 */
static int publish(struct rr *r, const struct sc_send *s)
{
	struct tv_tensor *t;
	int ret;

	if (s->is_error) {
		ret = tv_engine_send_error(r->n.engine, s->step_id, s->name,
					   s->err_code,
					   s->err_msg ? s->err_msg : "");
	} else {
		ret = make_tensor(r, s, &t);
		if (!ret) {
			ret = tv_engine_send(r->n.engine, s->step_id, s->name,
					     t);
			tv_tensor_unref(t);
		}
	}
	if (ret) {
		tv_tb_hw_fail(r->hw, TV_TB_FK_RUNNER, "step %" PRIu64 ": send '%s' to node "
			     "%u: %s", s->step_id, s->name, s->to,
			     strerror(-ret));
		return ret;
	}
	tv_tb_hw_log(r->hw, "published step %" PRIu64 " '%s' for node %u", s->step_id,
	     s->name, s->to);
	return 0;
}

/* ---- receives: checked against what the sender publishes ------------------ */

#define RV_FMT "step %" PRIu64 ": recv '%s' from node %u"
#define RV_ARGS(rv) (rv)->step_id, (rv)->name, (rv)->from

static int explicit_strings_digest(const struct sc_bytes *s, size_t n,
				   uint64_t *digest_p)
{
	XXH3_state_t st;

	/* On the stack, as the engine's: nothing to allocate, or to fail. */
	XXH3_INITSTATE(&st);
	XXH3_64bits_reset(&st);
	for (size_t i = 0; i < n; i++) {
		uint64_t len = s[i].len;

		XXH3_64bits_update(&st, &len, sizeof(len));
		XXH3_64bits_update(&st, s[i].data, s[i].len);
	}
	*digest_p = XXH3_64bits_digest(&st);
	return 0;
}

/* What fill_digest_tensor() gives on the tensor the sender publishes. */
static int published_digest(struct rr *r, const struct sc_send *s,
			    const struct sc_fill *fill, uint64_t *digest_p)
{
	uint64_t n;

	if (s->dead) {
		*digest_p = 0;
		return 0;
	}
	if (scenario_num_elements(&s->shape, &n))
		return -EOVERFLOW;
	if (s->dtype == TV_DT_STRING && s->strings && fill == &s->fill)
		return explicit_strings_digest(s->strings, s->nstrings,
					       digest_p);
	return fill_expected_digest(s->dtype, n, fill->pattern,
				    fill_seed(tv_tb_hw_seed(r->hw), fill, s->step_id,
					      s->name), digest_p);
}

static void verify_tensor(struct rr *r, const struct sc_recv *rv,
			  struct tv_tensor *t)
{
	const struct sc_send *s = &r->sc->sends[rv->send_index];
	uint64_t digest, want;
	char why[320];

	if (s->is_error) {
		tv_tb_hw_fail(r->hw, TV_TB_FK_DATA, RV_FMT ": got a tensor, the sender "
			     "publishes an error", RV_ARGS(rv));
		return;
	}
	if (rv_meta_wrong(t, s->dtype, &s->shape, s->dead,
			  "the sender publishes", why, sizeof(why))) {
		tv_tb_hw_fail(r->hw, TV_TB_FK_DATA, RV_FMT ": %s", RV_ARGS(rv),
			      why);
		return;
	}
	if (rv_placement_wrong(t, s->dtype, s->dead, rv->place, why,
			       sizeof(why))) {
		tv_tb_hw_fail(r->hw, TV_TB_FK_DATA, RV_FMT ": %s", RV_ARGS(rv),
			      why);
		return;
	}
	if (fill_digest_tensor(t, &digest) ||
	    published_digest(r, s, &s->fill, &want)) {
		tv_tb_hw_fail(r->hw, TV_TB_FK_DATA, RV_FMT ": cannot digest the data",
			     RV_ARGS(rv));
		return;
	}
	if (digest != want) {
		tv_tb_hw_fail(r->hw, TV_TB_FK_DATA, RV_FMT ": data corrupted (digest "
			     "0x%016" PRIx64 ", published 0x%016" PRIx64 ")",
			     RV_ARGS(rv), digest, want);
		return;
	}
	r->bytes_ok += fill_payload_bytes(t);
	/* The scenario's own checks: the simulator's runner's words. */
	if (rv_expect_wrong(rv, t, digest, tv_tb_hw_seed(r->hw), why,
			    sizeof(why)))
		tv_tb_hw_fail(r->hw, TV_TB_FK_EXPECT, RV_FMT ": %s",
			      RV_ARGS(rv), why);
}

static void check_error(struct rr *r, const struct sc_recv *rv,
			const struct tv_status *st)
{
	char why[TV_STATUS_MSG_MAX * 2 + 96];

	if (rv_error_unexpected(&rv->expect, st, why, sizeof(why)))
		tv_tb_hw_fail(r->hw, TV_TB_FK_EXPECT, RV_FMT ": %s",
			      RV_ARGS(rv), why);
}

static void recv_done(void *arg, const struct tv_status *st,
		      struct tv_tensor *t)
{
	struct rr_recv *rs = arg;
	struct rr *r = rs->r;
	const struct sc_recv *rv = &r->sc->recvs[rs->idx];

	if (++rs->calls > 1) {
		tv_tb_hw_fail(r->hw, TV_TB_FK_CALLBACK, "invariant: " RV_FMT ": done callback "
			     "ran %u times", RV_ARGS(rv), rs->calls);
	} else if (st->code != TV_OK) {
		r->recvs_err++;
		check_error(r, rv, st);
	} else if (!t || rv->expect.kind == SC_EXPECT_ERROR) {
		tv_tb_hw_fail(r->hw, TV_TB_FK_EXPECT, RV_FMT ": %s", RV_ARGS(rv), t ?
			     "expected an error, got a tensor" :
			     "OK without a tensor");
	} else {
		r->recvs_ok++;
		verify_tensor(r, rv, t);
	}
	if (rs->calls == 1)
		r->recvs_done++;
	tv_tb_hw_log(r->hw, RV_FMT ": %s", RV_ARGS(rv), tv_code_name(st->code));
	if (t)
		tv_tensor_unref(t);
}

static void issue_recv(struct rr *r, size_t i)
{
	const struct sc_recv *rv = &r->sc->recvs[i];
	struct tv_channel *ch = tv_engine_channel(r->n.engine, rv->from);
	int ret;

	r->recvs[i].issued = true;
	if (!ch) {
		tv_tb_hw_fail(r->hw, TV_TB_FK_RUNNER, RV_FMT ": no channel", RV_ARGS(rv));
		r->recvs[i].calls = 1;
		r->recvs_done++;
		return;
	}
	ret = tv_engine_recv_async(r->n.engine, ch, rv->step_id, rv->name,
				   rv->place, recv_done, &r->recvs[i]);
	if (ret) {
		tv_tb_hw_fail(r->hw, TV_TB_FK_RUNNER, RV_FMT ": tv_engine_recv_async: %s",
			     RV_ARGS(rv), strerror(-ret));
		r->recvs[i].calls = 1;
		r->recvs_done++;
	}
}

/* ---- the loop ------------------------------------------------------------- */

/*
 * Nothing to do: sleep until a completion, a timer the engine or rdma_cm
 * armed, an event on rdma_cm's socket or on the testbed's (extra), or
 * until_ns (CLOCK_MONOTONIC, the ibverbs device's clock too).  A device
 * that cannot sleep on fds wakes every 1 ms instead.
 */
static void rv_hw_sleep(struct tv_tb_hw *hw, void *st, uint64_t until_ns,
			struct pollfd *extra, unsigned nextra)
{
	struct rr *r = st;
	struct pollfd pfd[TV_VF_WAIT_FDS_MAX];
	unsigned n = 1;

	pfd[0].fd = tv_cm_fd(r->n.cm);
	pfd[0].events = POLLIN;
	for (unsigned i = 0; i < nextra && n < TV_VF_WAIT_FDS_MAX; i++)
		pfd[n++] = extra[i];
	if (tv_vf_wait_fds(r->n.dev, until_ns, pfd, n) != -EOPNOTSUPP)
		return;
	tv_vf_wait(r->n.dev, tv_vf_now_ns(r->n.dev) + 1000000);
}

static int rv_hw_progress(struct tv_tb_hw *hw, void *st)
{
	struct rr *r = st;
	int n, got;

	n = tv_engine_progress(r->n.engine);
	if (n < 0)
		return n;
	got = n;
	n = tv_cm_progress(r->n.cm);
	if (n < 0)
		return n;
	return got + n;
}

/*
 * A channel that failed for good (no reconnect): what was in flight on it
 * is never ACKed, so nothing waits for it (the simulator's checker: a
 * failed direction is not a hang).
 */
static bool dead_channel(const struct rr *r, uint32_t j)
{
	const struct tv_channel *ch;

	if (r->reconnect || !r->n.engine)
		return false;
	ch = tv_engine_channel(r->n.engine, j);
	return ch && tv_channel_failed(ch);
}

static bool cond_settled(void *ctx, uint64_t arg)
{
	struct rr *r = ctx;
	struct tv_engine_stats st;

	(void)arg;
	for (uint32_t j = 0; j < r->sc->nodes; j++)
		if (r->in_flight[j] && !dead_channel(r, j))
			return false;
	tv_engine_stats(r->n.engine, &st);
	return st.queued_msgs == 0;
}

/* Every recv of this node from a step before arg has completed. */
static bool cond_steps_before(void *ctx, uint64_t step)
{
	struct rr *r = ctx;

	for (size_t i = 0; i < r->sc->nrecvs; i++)
		if (r->recvs[i].issued && !r->recvs[i].calls &&
		    r->sc->recvs[i].step_id < step)
			return false;
	return true;
}

static bool cond_local_done(void *ctx, uint64_t arg)
{
	struct rr *r = ctx;
	struct tv_engine_stats st;

	if (r->recvs_done < r->recvs_local || !cond_settled(r, arg))
		return false;
	tv_engine_stats(r->n.engine, &st);
	return st.live_responses == 0 && st.unmatched_requests == 0;
}

static bool cond_quiet(void *ctx, uint64_t arg)
{
	struct rr *r = ctx;
	struct tv_engine_stats st;

	for (size_t i = 0; i < r->sc->nrecvs; i++)
		if (r->recvs[i].issued && !r->recvs[i].calls)
			return false;
	tv_engine_stats(r->n.engine, &st);
	return cond_settled(r, arg) && st.live_responses == 0;
}

/* One peer's connection, up; -ECONNREFUSED with the reason if it failed. */
static int wait_connected(struct rr *r, uint32_t j)
{
	const char *why = "", *stop;
	enum tv_cm_peer_state s;

	while ((s = tv_cm_peer_state(r->n.cm, j, &why)) !=
	       TV_CM_PEER_CONNECTED) {
		if (s == TV_CM_PEER_FAILED) {
			tv_tb_hw_fail(r->hw, TV_TB_FK_HANG, "%s", why);
			return -ECONNREFUSED;
		}
		if (tv_tb_hw_expired(r->hw)) {
			tv_tb_hw_fail(r->hw, TV_TB_FK_HANG,
				      "timed out after %u s waiting for node %u to connect%s%s",
				      tv_tb_hw_opts(r->hw)->timeout_s, j,
				      why[0] ? ": " : "", why);
			return -ETIMEDOUT;
		}
		if ((stop = tv_tb_hw_aborted(r->hw))) {
			tv_tb_hw_fail(r->hw, TV_TB_FK_HANG, "stopped: %s", stop);
			return -ECANCELED;
		}
		if (tv_tb_hw_step(r->hw))
			return -EIO;
	}
	return 0;
}

/* Lower ids connect to higher ones; then wait for every channel. */
static int rv_hw_connect(struct tv_tb_hw *hw, void *st)
{
	const struct tv_tb_serve_opts *o = tv_tb_hw_opts(hw);
	struct rr *r = st;
	int ret;

	for (uint32_t j = r->me + 1; j < r->sc->nodes; j++) {
		if (!r->talks[j])
			continue;
		ret = tv_cm_connect(r->n.cm, j,
				    (const struct sockaddr *)&o->addrs[j]);
		if (ret) {
			tv_tb_hw_fail(hw, TV_TB_FK_RUNNER,
				      "tv_cm_connect(node %u): %s", j,
				      strerror(-ret));
			return ret;
		}
	}
	for (uint32_t j = 0; j < r->sc->nodes; j++) {
		if (r->talks[j] && (ret = wait_connected(r, j)))
			return ret;
	}
	return 0;
}

/* ---- the scenario, time point by time point -------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int rv_hw_times(struct tv_tb_hw *hw, void *st, uint64_t **times_p,
		       size_t *n_p)
{
	const struct scenario *sc = ((struct rr *)st)->sc;
	uint64_t *t = calloc(sc->nsends + sc->nrecvs + 1, sizeof(*t));
	size_t n = 0, k = 0;

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < sc->nsends; i++)
		t[n++] = sc->sends[i].at_ns;
	for (size_t i = 0; i < sc->nrecvs; i++)
		t[n++] = sc->recvs[i].at_ns;
	qsort(t, n, sizeof(*t), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (!k || t[k - 1] != t[i])
			t[k++] = t[i];
	*times_p = t;
	*n_p = k;
	return 0;
}

/*
 * Tests: node 0 drops its connections when the chosen step starts, at a
 * quiet point (every node drained, then a barrier): the connection
 * manager's part, disconnect -> reset -> reconnect, must carry the rest of
 * the run.  (Mid-transfer, a write the sender saw complete but the
 * receiver never processed is not re-sent: docs/rxe-runs.md.)
 */
static int maybe_inject(struct rr *r, uint64_t step)
{
	uint64_t at = tv_tb_hw_opts(r->hw)->inject_disconnect_step;
	int ret;

	if (r->injected || !at || step != at)
		return 0;
	r->injected = true;
	ret = tv_tb_hw_wait(r->hw, cond_quiet, r, 0,
			    "a quiet point to disconnect at");
	if (!ret)
		ret = tv_tb_hw_barrier(r->hw, "the other nodes to be quiet");
	for (uint32_t j = 1; !ret && r->me == 0 && j < r->sc->nodes; j++) {
		if (!r->talks[j])
			continue;
		tv_tb_hw_log(r->hw, "injecting a disconnect towards node %u: %s",
			     j, strerror(-tv_cm_inject_disconnect(r->n.cm, j)));
	}
	return ret;
}

static int rv_hw_time_point(struct tv_tb_hw *hw, void *st, uint64_t t)
{
	struct rr *r = st;
	const struct scenario *sc = r->sc;
	int ret;

	for (size_t i = 0; i < sc->nsends + sc->nrecvs; i++) {
		/* Before anything of the step that starts here. */
		uint64_t at = i < sc->nsends ? sc->sends[i].at_ns :
					       sc->recvs[i - sc->nsends].at_ns;
		uint64_t step = i < sc->nsends ?
					sc->sends[i].step_id :
					sc->recvs[i - sc->nsends].step_id;

		if (at == t && (ret = maybe_inject(r, step)))
			return ret;
	}
	for (size_t i = 0; i < sc->nsends; i++)
		if (sc->sends[i].from == r->me && sc->sends[i].at_ns == t &&
		    (ret = publish(r, &sc->sends[i])))
			return ret;
	for (size_t i = 0; i < sc->nrecvs; i++) {
		const struct sc_recv *rv = &sc->recvs[i];

		if (rv->node != r->me || rv->at_ns != t)
			continue;
		/* Steps run one after the other, as on the simulator. */
		ret = tv_tb_hw_wait(hw, cond_steps_before, r, rv->step_id,
				    "the recvs of the previous steps");
		if (ret)
			return ret;
		issue_recv(r, i);
	}
	return tv_tb_hw_wait(hw, cond_settled, r, 0,
			     "our control messages' ACKs");
}

/* ---- the end --------------------------------------------------------------- */

static void check_live(struct rr *r, const struct tv_engine_stats *st)
{
	/*
	 * As the simulator's runner (run.c): under faults a receive may fail
	 * before it asks (its own allocation, a dead channel) and leave our
	 * tensor published; the sender cannot tell that from a lost request,
	 * so with a plan (on any node: every process is given it) or faults
	 * from fiu-ctrl, more than the unrequested sends may stay.  Fewer
	 * never may.
	 */
	bool faulty = tv_tb_scenario_has_faults(tv_tb_hw_scenario(r->hw)) ||
		      tv_tb_hw_opts(r->hw)->fiu_ctrl;
	uint64_t unrequested = 0;

	for (size_t i = 0; i < r->sc->nsends; i++)
		if (r->sc->sends[i].from == r->me &&
		    !r->sc->sends[i].requested)
			unrequested++;
#define LIVE(field, want)                                                     \
	do {                                                                  \
		if (st->field != (want))                                      \
			tv_tb_hw_fail(r->hw, TV_TB_FK_LEAK, "invariant: " #field \
				      " = %" PRIu64 " at the end, expected %" PRIu64, \
				      st->field, (uint64_t)(want));           \
	} while (0)
	LIVE(live_requests, 0);
	LIVE(live_responses, 0);
	LIVE(queued_msgs, 0);
	LIVE(unmatched_requests, 0);
	if (st->unmatched_sends < unrequested ||
	    (!faulty && st->unmatched_sends > unrequested))
		LIVE(unmatched_sends, unrequested);
#undef LIVE
}

static void check_stats(struct rr *r, int64_t node,
			const struct tv_engine_stats *st, bool all)
{
	for (size_t i = 0; i < r->sc->nstats; i++) {
		const struct sc_stat_expect *e = &r->sc->stats[i];
		uint64_t v = 0;

		if (all ? e->node >= 0 : e->node != node)
			continue;
		scenario_stat_value(st, e->stat, e->msg_type, &v);
		if (v < e->min || v > e->max)
			tv_tb_hw_fail(r->hw, TV_TB_FK_EXPECT,
				      "expect_stats %s: %" PRIu64 ", expected %" PRIu64 "..%" PRIu64 "%s",
				      e->path, v, e->min, e->max,
				      all ? " (all nodes)" : "");
	}
}

/* Node 0: the expectations over every node, from everyone's statistics. */
static void check_all_nodes(struct rr *r, const uint64_t *const *all)
{
	struct tv_engine_stats sum;
	uint64_t *d = (uint64_t *)(void *)&sum;

	memset(&sum, 0, sizeof(sum));
	for (uint32_t n = 0; n < r->sc->nodes; n++)
		for (size_t i = 0; i < RR_STATS_N; i++)
			d[i] += all[n][i];
	check_stats(r, -1, &sum, true);
}

static void rv_hw_check_end(struct tv_tb_hw *hw, void *st,
			    const uint64_t *const *all)
{
	struct rr *r = st;
	struct tv_engine_stats es;

	tv_engine_stats(r->n.engine, &es);
	check_live(r, &es);
	for (uint32_t j = 0; j < r->sc->nodes; j++)
		if (r->in_flight[j] && !dead_channel(r, j))
			tv_tb_hw_fail(hw, TV_TB_FK_HANG,
				      "invariant: the control message to node %u was never ACKed (#11416)",
				      j);
	if (tv_tb_hw_opts(hw)->inject_disconnect_step) {
		/* Retries change message counts: check the reconnect instead. */
		uint32_t j = r->me == 0 ? 1 : 0;

		if (r->talks[j] && !r->resets[j])
			tv_tb_hw_fail(hw, TV_TB_FK_ERROR,
				      "--inject-disconnect: the channel to node %u was never reset",
				      j);
		return;
	}
	/*
	 * Faults: retries change message counts, and each process counts its
	 * own hits.  Every recv still had to pass; the testbed checks
	 * expect_faults over all nodes.
	 */
	if (tv_tb_hw_recovering(hw))
		return;
	check_stats(r, r->me, &es, false);
	if (all)
		check_all_nodes(r, all);
}

/*
 * This node's recvs and writes, then every node's, then ours again.  A
 * node whose channel was reset after we settled re-requests while we wait
 * in the barrier, and we serve it from there: the response lives until our
 * write completes, and that completion reaches us by the fabric while the
 * receiver's "done" comes by the coordinator's TCP, in either order (rxe
 * showed both: validate's fault_qp_error).  Past the barrier no recv is
 * left anywhere, so nothing new is served; the peers wait in the testbed's
 * final barrier, progressing, while our last completions arrive.
 */
static int rv_hw_finish(struct tv_tb_hw *hw, void *st)
{
	int ret = tv_tb_hw_wait(hw, cond_local_done, st, 0,
				"this node's recvs and writes");

	if (!ret)
		ret = tv_tb_hw_barrier(hw, "every node's recvs to complete");
	if (!ret)
		ret = tv_tb_hw_wait(hw, cond_local_done, st, 0,
				    "the writes served to late re-requests");
	return ret;
}

static void rv_hw_quiesce(struct tv_tb_hw *hw, void *st)
{
	tv_cm_quiesce(((struct rr *)st)->n.cm);
}

static void rv_hw_stats(struct tv_tb_hw *hw, void *st, uint64_t *v)
{
	struct tv_engine_stats es;

	_Static_assert(sizeof(es) % sizeof(uint64_t) == 0, "stats: uint64s");
	tv_engine_stats(((struct rr *)st)->n.engine, &es);
	memcpy(v, &es, sizeof(es));
}

static void rv_hw_summary(struct tv_tb_hw *hw, void *st, FILE *out)
{
	struct rr *r = st;
	char b[32];

	tv_tb_fmt_bytes((double)r->bytes_ok, b, sizeof(b));
	fprintf(out, "%zu/%zu recvs done (%" PRIu64 " ok, %s; %" PRIu64
		" with an error status), %" PRIu64 " channel errors",
		r->recvs_done, r->recvs_local, r->recvs_ok, b, r->recvs_err,
		r->channel_errors);
}

/* ---- set-up ------------------------------------------------------------------ */

static int rr_alloc(struct rr *r)
{
	const struct scenario *sc = r->sc;
	uint32_t me = r->me;

	r->talks = calloc(sc->nodes, sizeof(*r->talks));
	r->in_flight = calloc(sc->nodes, sizeof(*r->in_flight));
	r->resets = calloc(sc->nodes, sizeof(*r->resets));
	r->recvs = calloc(sc->nrecvs + 1, sizeof(*r->recvs));
	if (!r->talks || !r->in_flight || !r->resets || !r->recvs)
		return -ENOMEM;
	for (size_t i = 0; i < sc->nsends; i++) {
		if (sc->sends[i].from == me)
			r->talks[sc->sends[i].to] = true;
		if (sc->sends[i].to == me)
			r->talks[sc->sends[i].from] = true;
	}
	for (size_t i = 0; i < sc->nrecvs; i++) {
		r->recvs[i].r = r;
		r->recvs[i].idx = i;
		r->recvs_local += sc->recvs[i].node == me;
	}
	r->talks[me] = false;
	return 0;
}

static void node_opts(struct rr *r, struct rnode_opts *no)
{
	const struct tv_tb_serve_opts *o = tv_tb_hw_opts(r->hw);
	const struct scenario *sc = r->sc;

	memset(no, 0, sizeof(*no));
	no->id = r->me;
	no->nodes = sc->nodes;
	no->addr = o->addrs[r->me];
	no->connect_attempts = o->connect_attempts;
	no->retry_delay_ms = o->retry_delay_ms;
	no->reconnect = o->reconnect && (!sc->has_reconnect || sc->reconnect);
	r->reconnect = no->reconnect;
	no->ack_timeout_ns = sc->has_ack_timeout ? sc->ack_timeout_ns : 0;
	if (o->ack_timeout_ms)
		no->ack_timeout_ns = o->ack_timeout_ms * 1000000ull;
	no->recv_timeout_ns = sc->has_recv_timeout ? sc->recv_timeout_ns : 0;
	no->max_retries = sc->has_max_retries ? sc->max_retries : 0;
	no->queue_depth = sc->queue_depth;
	no->pool_block_bytes = sc->pool_block_bytes;
	no->max_recv_bytes = sc->max_recv_bytes;
	no->validate_checksum = sc->validate_checksum;
	no->observe = rr_observe;
	no->observe_ctx = r;
	no->flt = tv_tb_hw_flt(r->hw);
	no->hw = r->hw;
}

static int rv_hw_open(struct tv_tb_hw *hw, void **st_p, char *msg, size_t cap)
{
	struct rr *r = calloc(1, sizeof(*r));
	struct rnode_opts no;
	int ret;

	if (!r)
		return -ENOMEM;
	*st_p = r;
	r->hw = hw;
	r->sc = tv_tb_scenario_wl(tv_tb_hw_scenario(hw));
	r->me = tv_tb_hw_node(hw);
	ret = rr_alloc(r);
	if (ret)
		return ret;
	node_opts(r, &no);
	ret = rnode_open(&r->n, &no, msg, cap);
	if (ret)
		return ret;
	r->opened = true;
	tv_cm_set_note(r->n.cm, rr_note, r);
	tv_tb_hw_set_device_name(hw, r->n.dev_name);
	tv_tb_hw_log(hw, "%zu recvs here", r->recvs_local);
	return 0;
}

static int rv_hw_close(struct tv_tb_hw *hw, void *st)
{
	struct rr *r = st;

	return r->opened ? rnode_close(&r->n) : 0;
}

static void rv_hw_free(void *st)
{
	struct rr *r = st;

	free(r->talks);
	free(r->in_flight);
	free(r->resets);
	free(r->recvs);
	free(r);
}

const struct tv_tb_hw_ops rv_hw_ops = {
	.open = rv_hw_open,
	.close = rv_hw_close,
	.state_free = rv_hw_free,
	.connect = rv_hw_connect,
	.progress = rv_hw_progress,
	.sleep = rv_hw_sleep,
	.times = rv_hw_times,
	.time_point = rv_hw_time_point,
	.finish = rv_hw_finish,
	.quiesce = rv_hw_quiesce,
	.nstats = RR_STATS_N,
	.stats = rv_hw_stats,
	.check_end = rv_hw_check_end,
	.summary = rv_hw_summary,
};
