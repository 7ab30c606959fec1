/*
 * One scenario node on a real RDMA device (rdma_run.h): publish this
 * node's sends, issue its recvs in the scenario's order, verify what
 * arrives against the runner's deterministic fill, check the engine's
 * invariants from its observer, and agree with the other processes on
 * barriers and on the end.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "check.h"
#include "cli.h"
#include "coord.h"
#include "fill.h"
#include "rdma_faults.h"
#include "rdma_node.h"
#include "rdma_run.h"

#ifdef TV_HAVE_RDMACM
#include <tensorverbs/cm.h>

#define RR_STATS_N (sizeof(struct tv_engine_stats) / sizeof(uint64_t))
/* What each node reports at the end: its engine stats, its fault firings. */
#define RR_REPORT_N (RR_STATS_N + RR_FAULT_SLOTS)

struct rr;

struct rr_recv {
	struct rr *r;
	size_t idx;
	unsigned int calls;
	bool issued;
};

struct rr {
	const struct scenario *sc;
	const struct rr_opts *o;
	struct rnode n;
	struct rr_faults flt;
	struct coord co;
	bool co_ready;
	struct failures fails;
	bool *talks;               /* [nodes]: a channel to that node */
	int64_t *in_flight;        /* [nodes]: control messages not ACKed */
	uint32_t *resets;          /* [nodes]: channel resets seen */
	struct rr_recv *recvs;     /* [nrecvs], ours only are used */
	uint64_t *times;           /* distinct at_ns, sorted */
	size_t ntimes;
	uint64_t bar_seq;
	uint64_t t0_ns;
	uint64_t deadline_ns;
	bool ending;               /* done: disconnects are expected now */
	bool injected;
	size_t recvs_local;
	size_t recvs_done;
	uint64_t recvs_ok;
	uint64_t recvs_err;
	uint64_t bytes_ok;
	uint64_t channel_errors;
	uint64_t fault_fires;      /* by this process's injector */
	char dev_name[64];
};

/*
 * Channel failures are part of the run, to be recovered from: a dropped
 * connection (--inject-disconnect) or injected faults.
 */
static bool rr_recovering(const struct rr *r)
{
	return r->o->inject_disconnect_step || r->o->fiu_ctrl ||
	       json_array_size(r->o->faults);
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void vlog(struct rr *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void vlog(struct rr *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->o->verbose)
		return;
	printf("[node %u %9.3f s] ", r->o->node,
	       (double)(wall_ns() - r->t0_ns) / 1e9);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

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

static void rr_observe(void *ctx, const struct tv_engine_event *ev)
{
	struct rr *r = ctx;
	int64_t *f;

	if (ev->peer >= r->sc->nodes)
		return;
	f = &r->in_flight[ev->peer];
	if (ev->kind == TV_EV_MSG_SEND && ++*f > 1) {
		failures_add(&r->fails, FK_IN_FLIGHT, "invariant: %" PRId64 " control "
			     "messages in flight to node %u (max 1): %s",
			     *f, ev->peer,
			     scenario_msg_type_name((int)ev->msg_type));
	} else if (ev->kind == TV_EV_ACK_RECV && --*f < 0) {
		failures_add(&r->fails, FK_IN_FLIGHT, "invariant: an ACK from node %u with "
			     "no message in flight", ev->peer);
		*f = 0;
	} else if (ev->kind == TV_EV_CHANNEL_ERROR && !r->ending) {
		r->channel_errors++;
		vlog(r, "channel to node %u failed: %s", ev->peer,
		     ev->name ? ev->name : "?");
		if (!rr_recovering(r))
			failures_add(&r->fails, FK_ERROR, "channel to node %u failed: "
				     "%s", ev->peer, ev->name ? ev->name : "?");
	}
	if (ev->kind == TV_EV_MSG_SEND || ev->kind == TV_EV_MSG_RECV)
		vlog(r, "%s %s to/from node %u idx %u step %" PRIu64 " %s",
		     ev->kind == TV_EV_MSG_SEND ? "send" : "recv",
		     scenario_msg_type_name((int)ev->msg_type), ev->peer,
		     ev->request_index, ev->step_id, ev->name ? ev->name : "");
	else if (ev->kind != TV_EV_CHANNEL_ERROR)
		vlog(r, "%s node %u idx %u step %" PRIu64 " %s len %" PRIu64
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
	vlog(r, "cm: node %u %s%s%s", peer,
	     note == TV_CM_NOTE_CONNECTED ? "connected" :
	     note == TV_CM_NOTE_RESET ? "channel reset" :
	     note == TV_CM_NOTE_DISCONNECTED ? "disconnected" : "failed",
	     text ? ": " : "", text ? text : "");
}

/* ---- sends: the same tensors the simulator runner publishes ---------------- */

static int make_tensor(struct rr *r, const struct sc_send *s,
		       struct tv_tensor **t_p)
{
	uint64_t seed = fill_seed(r->o->seed, &s->fill, s->step_id, s->name);
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

static void publish(struct rr *r, const struct sc_send *s)
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
	if (ret)
		failures_add(&r->fails, FK_RUNNER, "step %" PRIu64 ": send '%s' to node "
			     "%u: %s", s->step_id, s->name, s->to,
			     strerror(-ret));
	vlog(r, "published step %" PRIu64 " '%s' for node %u", s->step_id,
	     s->name, s->to);
}

/* ---- receives: checked against what the sender publishes ------------------ */

#define RV_FMT "step %" PRIu64 ": recv '%s' from node %u"
#define RV_ARGS(rv) (rv)->step_id, (rv)->name, (rv)->from

static int explicit_strings_digest(const struct sc_bytes *s, size_t n,
				   uint64_t *digest_p)
{
	XXH3_state_t *st = XXH3_createState();

	if (!st)
		return -ENOMEM;
	XXH3_64bits_reset(st);
	for (size_t i = 0; i < n; i++) {
		uint64_t len = s[i].len;

		XXH3_64bits_update(st, &len, sizeof(len));
		XXH3_64bits_update(st, s[i].data, s[i].len);
	}
	*digest_p = XXH3_64bits_digest(st);
	XXH3_freeState(st);
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
				    fill_seed(r->o->seed, fill, s->step_id,
					      s->name), digest_p);
}

static bool check_meta(struct rr *r, const struct sc_recv *rv,
		       enum tv_dtype dtype, const struct tv_shape *shape,
		       bool dead, struct tv_tensor *t, const char *what)
{
	if (tv_tensor_dtype(t) != dtype || tv_tensor_is_dead(t) != dead ||
	    (shape && !dead && !tv_shape_equal(tv_tensor_shape(t), shape))) {
		failures_add(&r->fails, FK_DATA, RV_FMT ": got dtype %s dead %d rank "
			     "%u, %s dtype %s dead %d rank %u", RV_ARGS(rv),
			     tv_dtype_name(tv_tensor_dtype(t)),
			     tv_tensor_is_dead(t), tv_tensor_shape(t)->rank,
			     what, tv_dtype_name(dtype), dead,
			     shape ? shape->rank : 0);
		return false;
	}
	return true;
}

static void check_extra(struct rr *r, const struct sc_recv *rv,
			const struct sc_send *s, struct tv_tensor *t,
			uint64_t digest)
{
	const struct sc_expect *ex = &rv->expect;
	uint64_t want;

	if ((ex->has_dtype || ex->has_dead || ex->has_shape) &&
	    !check_meta(r, rv, ex->has_dtype ? ex->dtype : tv_tensor_dtype(t),
			ex->has_shape ? &ex->shape : NULL,
			ex->has_dead ? ex->dead : tv_tensor_is_dead(t), t,
			"expected"))
		return;
	if (ex->strings) {
		if (explicit_strings_digest(ex->strings, ex->nstrings, &want) ||
		    want != digest)
			failures_add(&r->fails, FK_DATA, RV_FMT ": strings differ from "
				     "the expected ones", RV_ARGS(rv));
	}
	if (ex->has_fill && !published_digest(r, s, &ex->fill, &want) &&
	    want != digest)
		failures_add(&r->fails, FK_DATA, RV_FMT ": data differs from the "
			     "expected fill", RV_ARGS(rv));
}

static void verify_tensor(struct rr *r, const struct sc_recv *rv,
			  struct tv_tensor *t)
{
	const struct sc_send *s = &r->sc->sends[rv->send_index];
	uint64_t digest, want;

	if (s->is_error) {
		failures_add(&r->fails, FK_DATA, RV_FMT ": got a tensor, the sender "
			     "publishes an error", RV_ARGS(rv));
		return;
	}
	if (!check_meta(r, rv, s->dtype, &s->shape, s->dead, t,
			"the sender publishes"))
		return;
	if (!s->dead && tv_tensor_placement(t) != rv->place) {
		failures_add(&r->fails, FK_DATA, RV_FMT ": wrong placement",
			     RV_ARGS(rv));
		return;
	}
	if (fill_digest_tensor(t, &digest) ||
	    published_digest(r, s, &s->fill, &want)) {
		failures_add(&r->fails, FK_DATA, RV_FMT ": cannot digest the data",
			     RV_ARGS(rv));
		return;
	}
	if (digest != want) {
		failures_add(&r->fails, FK_DATA, RV_FMT ": data corrupted (digest "
			     "0x%016" PRIx64 ", published 0x%016" PRIx64 ")",
			     RV_ARGS(rv), digest, want);
		return;
	}
	r->bytes_ok += fill_payload_bytes(t);
	check_extra(r, rv, s, t, digest);
}

static void check_error(struct rr *r, const struct sc_recv *rv,
			const struct tv_status *st)
{
	const struct sc_expect *ex = &rv->expect;

	if (ex->kind == SC_EXPECT_ANY)
		return; /* the scenario allows either outcome */
	if (ex->kind != SC_EXPECT_ERROR)
		failures_add(&r->fails, FK_EXPECT, RV_FMT ": expected ok, got %s: %s",
			     RV_ARGS(rv), tv_code_name(st->code), st->message);
	else if (st->code != ex->code)
		failures_add(&r->fails, FK_EXPECT, RV_FMT ": expected %s, got %s: %s",
			     RV_ARGS(rv), tv_code_name(ex->code),
			     tv_code_name(st->code), st->message);
	else if (ex->message && !strstr(st->message, ex->message))
		failures_add(&r->fails, FK_EXPECT, RV_FMT ": message \"%s\" lacks \"%s\"",
			     RV_ARGS(rv), st->message, ex->message);
}

static void recv_done(void *arg, const struct tv_status *st,
		      struct tv_tensor *t)
{
	struct rr_recv *rs = arg;
	struct rr *r = rs->r;
	const struct sc_recv *rv = &r->sc->recvs[rs->idx];

	if (++rs->calls > 1) {
		failures_add(&r->fails, FK_CALLBACK, "invariant: " RV_FMT ": done callback "
			     "ran %u times", RV_ARGS(rv), rs->calls);
	} else if (st->code != TV_OK) {
		r->recvs_err++;
		check_error(r, rv, st);
	} else if (!t || rv->expect.kind == SC_EXPECT_ERROR) {
		failures_add(&r->fails, FK_EXPECT, RV_FMT ": %s", RV_ARGS(rv), t ?
			     "expected an error, got a tensor" :
			     "OK without a tensor");
	} else {
		r->recvs_ok++;
		verify_tensor(r, rv, t);
	}
	if (rs->calls == 1)
		r->recvs_done++;
	vlog(r, RV_FMT ": %s", RV_ARGS(rv), tv_code_name(st->code));
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
		failures_add(&r->fails, FK_RUNNER, RV_FMT ": no channel", RV_ARGS(rv));
		r->recvs[i].calls = 1;
		r->recvs_done++;
		return;
	}
	ret = tv_engine_recv_async(r->n.engine, ch, rv->step_id, rv->name,
				   rv->place, recv_done, &r->recvs[i]);
	if (ret) {
		failures_add(&r->fails, FK_RUNNER, RV_FMT ": tv_engine_recv_async: %s",
			     RV_ARGS(rv), strerror(-ret));
		r->recvs[i].calls = 1;
		r->recvs_done++;
	}
}

/* ---- the loop -------------------------------------------------------------- */

typedef bool (*rr_cond)(struct rr *r, uint64_t arg);

/*
 * Nothing to do: sleep until a completion, a timer the engine or rdma_cm
 * armed (wake_at), or an event on rdma_cm's or the coordinator's sockets.
 * 100 ms at most: the run's own timeout is all the loop checks by the
 * clock.  A device that cannot sleep on fds wakes every 1 ms instead.
 */
static void loop_sleep(struct rr *r)
{
	struct pollfd pfd[TV_VF_WAIT_FDS_MAX];
	uint64_t now = tv_vf_now_ns(r->n.dev), until = now + 100000000ull;
	uint64_t co_wake = UINT64_MAX;
	int n = 1, c = 0;

	pfd[0].fd = tv_cm_fd(r->n.cm);
	pfd[0].events = POLLIN;
	if (r->co_ready)
		c = coord_pollfds(&r->co, pfd + 1, TV_VF_WAIT_FDS_MAX - 1,
				  &co_wake);
	if (c >= 0) {
		n += c;
		until = co_wake < until ? co_wake : until;
		if (tv_vf_wait_fds(r->n.dev, until, pfd, (unsigned int)n) !=
		    -EOPNOTSUPP)
			return;
	}
	tv_vf_wait(r->n.dev, now + 1000000);
}

static int loop_once(struct rr *r)
{
	int n, got = 0;

	n = tv_engine_progress(r->n.engine);
	if (n < 0) {
		failures_add(&r->fails, FK_RUNNER, "tv_engine_progress: %s", strerror(-n));
		return n;
	}
	got += n;
	n = tv_cm_progress(r->n.cm);
	if (n < 0) {
		failures_add(&r->fails, FK_RUNNER, "tv_cm_progress: %s", strerror(-n));
		return n;
	}
	got += n;
	if (r->co_ready)
		got += coord_poll(&r->co, wall_ns());
	if (!got)
		loop_sleep(r);
	return 0;
}

static int wait_for(struct rr *r, rr_cond cond, uint64_t arg, const char *what)
{
	for (;;) {
		if (cond(r, arg))
			return 0;
		if (r->co_ready && r->co.aborted) {
			failures_add(&r->fails, FK_HANG, "stopped while waiting for %s: "
				     "%s", what, r->co.abort_msg);
			return -ECANCELED;
		}
		if (wall_ns() > r->deadline_ns) {
			failures_add(&r->fails, FK_HANG, "timed out after %u s waiting "
				     "for %s", r->o->timeout_s, what);
			return -ETIMEDOUT;
		}
		if (loop_once(r))
			return -EIO;
	}
}

static bool cond_settled(struct rr *r, uint64_t arg)
{
	struct tv_engine_stats st;

	(void)arg;
	for (uint32_t j = 0; j < r->sc->nodes; j++)
		if (r->in_flight[j])
			return false;
	tv_engine_stats(r->n.engine, &st);
	return st.queued_msgs == 0;
}

static bool cond_barrier(struct rr *r, uint64_t seq)
{
	return coord_barrier_done(&r->co, seq);
}

static bool cond_joined(struct rr *r, uint64_t arg)
{
	(void)arg;
	return r->co.joined;
}

/* Every recv of this node from a step before arg has completed. */
static bool cond_steps_before(struct rr *r, uint64_t step)
{
	for (size_t i = 0; i < r->sc->nrecvs; i++)
		if (r->recvs[i].issued && !r->recvs[i].calls &&
		    r->sc->recvs[i].step_id < step)
			return false;
	return true;
}

static bool cond_local_done(struct rr *r, uint64_t arg)
{
	struct tv_engine_stats st;

	if (r->recvs_done < r->recvs_local || !cond_settled(r, arg))
		return false;
	tv_engine_stats(r->n.engine, &st);
	return st.live_responses == 0 && st.unmatched_requests == 0;
}

static int barrier(struct rr *r, const char *what)
{
	uint64_t seq = ++r->bar_seq;
	int ret = coord_barrier_enter(&r->co, seq);

	if (ret) {
		failures_add(&r->fails, FK_RUNNER, "coordinator: %s", strerror(-ret));
		return ret;
	}
	return wait_for(r, cond_barrier, seq, what);
}

/* Wait for every channel: -ECONNREFUSED with the reason on a failure. */
static int connect_all(struct rr *r)
{
	uint32_t me = r->o->node;

	for (uint32_t j = me + 1; j < r->sc->nodes; j++) {
		int ret;

		if (!r->talks[j])
			continue;
		ret = tv_cm_connect(r->n.cm, j,
				    (const struct sockaddr *)&r->o->addrs[j]);
		if (ret) {
			failures_add(&r->fails, FK_RUNNER, "tv_cm_connect(node %u): %s", j,
				     strerror(-ret));
			return ret;
		}
	}
	for (uint32_t j = 0; j < r->sc->nodes; j++) {
		const char *why = "";
		enum tv_cm_peer_state s;

		while (r->talks[j] &&
		       (s = tv_cm_peer_state(r->n.cm, j, &why)) !=
			       TV_CM_PEER_CONNECTED) {
			if (s == TV_CM_PEER_FAILED) {
				failures_add(&r->fails, FK_HANG, "%s", why);
				return -ECONNREFUSED;
			}
			if (wall_ns() > r->deadline_ns) {
				failures_add(&r->fails, FK_HANG, "timed out after %u s "
					     "waiting for node %u to connect%s%s",
					     r->o->timeout_s, j, why[0] ?
					     ": " : "", why);
				return -ETIMEDOUT;
			}
			if (r->co_ready && r->co.aborted) {
				failures_add(&r->fails, FK_HANG, "stopped: %s",
					     r->co.abort_msg);
				return -ECANCELED;
			}
			if (loop_once(r))
				return -EIO;
		}
	}
	return 0;
}

/* ---- the scenario, time point by time point -------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int build_times(struct rr *r)
{
	const struct scenario *sc = r->sc;
	size_t n = 0;

	r->times = calloc(sc->nsends + sc->nrecvs + 1, sizeof(*r->times));
	if (!r->times)
		return -ENOMEM;
	for (size_t i = 0; i < sc->nsends; i++)
		r->times[n++] = sc->sends[i].at_ns;
	for (size_t i = 0; i < sc->nrecvs; i++)
		r->times[n++] = sc->recvs[i].at_ns;
	qsort(r->times, n, sizeof(*r->times), cmp_u64);
	r->ntimes = 0;
	for (size_t i = 0; i < n; i++)
		if (!r->ntimes || r->times[r->ntimes - 1] != r->times[i])
			r->times[r->ntimes++] = r->times[i];
	return 0;
}

static bool cond_quiet(struct rr *r, uint64_t arg)
{
	struct tv_engine_stats st;

	for (size_t i = 0; i < r->sc->nrecvs; i++)
		if (r->recvs[i].issued && !r->recvs[i].calls)
			return false;
	tv_engine_stats(r->n.engine, &st);
	return cond_settled(r, arg) && st.live_responses == 0;
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
	int ret;

	if (r->injected || !r->o->inject_disconnect_step ||
	    step != r->o->inject_disconnect_step)
		return 0;
	r->injected = true;
	ret = wait_for(r, cond_quiet, 0, "a quiet point to disconnect at");
	if (!ret)
		ret = barrier(r, "the other nodes to be quiet");
	for (uint32_t j = 1; !ret && r->o->node == 0 && j < r->sc->nodes; j++) {
		if (!r->talks[j])
			continue;
		vlog(r, "injecting a disconnect towards node %u: %s", j,
		     strerror(-tv_cm_inject_disconnect(r->n.cm, j)));
	}
	return ret;
}

static int run_time_point(struct rr *r, uint64_t t)
{
	const struct scenario *sc = r->sc;
	uint32_t me = r->o->node;
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
		if (sc->sends[i].from == me && sc->sends[i].at_ns == t)
			publish(r, &sc->sends[i]);
	for (size_t i = 0; i < sc->nrecvs; i++) {
		const struct sc_recv *rv = &sc->recvs[i];

		if (rv->node != me || rv->at_ns != t)
			continue;
		/* Steps run one after the other, as on the simulator. */
		ret = wait_for(r, cond_steps_before, rv->step_id,
			       "the recvs of the previous steps");
		if (ret)
			return ret;
		issue_recv(r, i);
	}
	ret = wait_for(r, cond_settled, 0, "our control messages' ACKs");
	if (!ret)
		ret = barrier(r, "the other nodes (time point barrier)");
	return ret;
}

/* ---- the end --------------------------------------------------------------- */

static void check_live(struct rr *r, const struct tv_engine_stats *st)
{
	uint64_t unrequested = 0;

	for (size_t i = 0; i < r->sc->nsends; i++)
		if (r->sc->sends[i].from == r->o->node &&
		    !r->sc->sends[i].requested)
			unrequested++;
#define LIVE(field, want)                                                     \
	do {                                                                  \
		if (st->field != (want))                                      \
			failures_add(&r->fails, FK_LEAK, "invariant: " #field " = %"   \
				     PRIu64 " at the end, expected %" PRIu64, \
				     st->field, (uint64_t)(want));            \
	} while (0)
	LIVE(live_requests, 0);
	LIVE(live_responses, 0);
	LIVE(queued_msgs, 0);
	LIVE(unmatched_requests, 0);
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
			failures_add(&r->fails, FK_EXPECT, "expect_stats %s: %" PRIu64
				     ", expected %" PRIu64 "..%" PRIu64 "%s",
				     e->path, v, e->min, e->max,
				     all ? " (all nodes)" : "");
	}
}

/* Node 0: the expectations over every node, from everyone's STATS. */
/* expect_faults against every process's firings together. */
static void check_fires(struct rr *r, const uint64_t fires[RR_FAULT_SLOTS])
{
	const struct tv_flt_point_info *pts;
	size_t npts;

	pts = tv_flt_points(&npts);
	for (size_t i = 0; i < r->sc->nfault_expects; i++) {
		const struct sc_fault_expect *fe = &r->sc->fault_expects[i];
		uint64_t n = 0;

		for (size_t p = 0; p < npts && p < RR_FAULT_SLOTS; p++)
			if (!strcmp(pts[p].name, fe->point))
				n = fires[p];
		if (n < fe->min || n > fe->max)
			failures_add(&r->fails, FK_EXPECT, "expect_faults %s: fired "
				     "%" PRIu64 " times on all nodes, expected %"
				     PRIu64 "..%" PRIu64, fe->point, n, fe->min,
				     fe->max);
	}
}

static void check_all_nodes(struct rr *r, bool with_stats)
{
	struct tv_engine_stats sum;
	uint64_t *d = (uint64_t *)(void *)&sum, fires[RR_FAULT_SLOTS] = { 0 };

	memset(&sum, 0, sizeof(sum));
	for (uint32_t n = 0; n < r->sc->nodes; n++) {
		const uint64_t *s = coord_stats(&r->co, n);

		if (!s) {
			failures_add(&r->fails, FK_RUNNER, "node %u sent no statistics", n);
			return;
		}
		for (size_t i = 0; i < RR_STATS_N; i++)
			d[i] += s[i];
		for (size_t i = 0; i < RR_FAULT_SLOTS; i++)
			fires[i] += s[RR_STATS_N + i];
	}
	if (with_stats)
		check_stats(r, -1, &sum, true);
	check_fires(r, fires);
}

static void check_end(struct rr *r)
{
	struct tv_engine_stats st;

	tv_engine_stats(r->n.engine, &st);
	check_live(r, &st);
	for (uint32_t j = 0; j < r->sc->nodes; j++)
		if (r->in_flight[j])
			failures_add(&r->fails, FK_HANG, "invariant: the control message "
				     "to node %u was never ACKed (#11416)", j);
	if (r->o->inject_disconnect_step) {
		/* Retries change message counts: check the reconnect instead. */
		uint32_t j = r->o->node == 0 ? 1 : 0;

		if (r->talks[j] && !r->resets[j])
			failures_add(&r->fails, FK_ERROR, "--inject-disconnect: the "
				     "channel to node %u was never reset", j);
		return;
	}
	/*
	 * Faults: retries change message counts, and each process counts its
	 * own hits (rdma_faults.h).  Every recv still had to pass; node 0
	 * checks expect_faults over all nodes.
	 */
	if (rr_recovering(r)) {
		if (r->o->node == 0)
			check_all_nodes(r, false);
		return;
	}
	check_stats(r, r->o->node, &st, false);
	if (r->o->node == 0)
		check_all_nodes(r, true);
}

static int finish(struct rr *r)
{
	struct tv_engine_stats st;
	uint64_t report[RR_REPORT_N];
	int ret;

	ret = wait_for(r, cond_local_done, 0, "this node's recvs and writes");
	if (ret)
		return ret;
	/* Everything of ours is done: a peer's DREQ no longer hurts. */
	r->ending = true;
	rr_faults_stop(&r->flt);
	tv_cm_quiesce(r->n.cm);
	tv_engine_stats(r->n.engine, &st);
	_Static_assert(sizeof(st) % sizeof(uint64_t) == 0, "stats: uint64s");
	memcpy(report, &st, sizeof(st));
	rr_faults_fires(&r->flt, report + RR_STATS_N);
	ret = coord_send_stats(&r->co, report);
	if (!ret)
		ret = barrier(r, "the other nodes to finish");
	if (ret)
		return ret;
	check_end(r);
	return 0;
}

/* ---- setup and the whole run ----------------------------------------------- */

static int rr_alloc(struct rr *r)
{
	const struct scenario *sc = r->sc;
	uint32_t me = r->o->node;

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
	return build_times(r);
}

static int rr_open(struct rr *r, char *msg, size_t cap)
{
	struct rnode_opts no = { 0 };
	int ret;

	no.id = r->o->node;
	no.nodes = r->sc->nodes;
	no.addr = r->o->addrs[r->o->node];
	no.connect_attempts = r->o->connect_attempts;
	no.retry_delay_ms = r->o->retry_delay_ms;
	no.reconnect = r->o->reconnect &&
		       (!r->sc->has_reconnect || r->sc->reconnect);
	no.ack_timeout_ns = r->sc->has_ack_timeout ? r->sc->ack_timeout_ns : 0;
	if (r->o->ack_timeout_ms)
		no.ack_timeout_ns = r->o->ack_timeout_ms * 1000000ull;
	no.recv_timeout_ns = r->sc->has_recv_timeout ?
				     r->sc->recv_timeout_ns : 0;
	no.max_retries = r->sc->has_max_retries ? r->sc->max_retries : 0;
	no.queue_depth = r->sc->queue_depth;
	no.pool_block_bytes = r->sc->pool_block_bytes;
	no.validate_checksum = r->sc->validate_checksum;
	no.observe = rr_observe;
	no.observe_ctx = r;
	ret = rr_faults_init(&r->flt, r->o->faults_node < 0 ||
					      r->o->faults_node == r->o->node ?
				     r->o->faults : NULL,
			     r->o->seed, r->o->fiu_ctrl, msg, cap);
	if (ret)
		return ret;
	no.flt = r->flt.flt;
	ret = rnode_open(&r->n, &no, msg, cap);
	if (ret)
		return ret;
	tv_cm_set_note(r->n.cm, rr_note, r);
	snprintf(r->dev_name, sizeof(r->dev_name), "%s", r->n.dev_name);
	ret = coord_init(&r->co, r->o->node, r->sc->nodes,
			 (const struct sockaddr *)&r->o->addrs[0],
			 r->o->fingerprint, RR_REPORT_N, msg, cap);
	if (ret)
		return ret;
	r->co_ready = true;
	return 0;
}

static int rr_steps(struct rr *r)
{
	int ret = connect_all(r);

	if (!ret)
		ret = wait_for(r, cond_joined, 0, "every node to join");
	if (!ret)
		ret = barrier(r, "the other nodes to start");
	/* Faults hit the workload, not the connecting (as on the simulator). */
	if (!ret) {
		char msg[256];

		ret = rr_faults_start(&r->flt, msg, sizeof(msg));
		if (ret)
			failures_add(&r->fails, FK_RUNNER, "%s", msg);
	}
	vlog(r, "start: %zu time points, %zu recvs here", r->ntimes,
	     r->recvs_local);
	for (size_t i = 0; !ret && i < r->ntimes; i++)
		ret = run_time_point(r, r->times[i]);
	if (!ret)
		ret = finish(r);
	return ret;
}

static void rr_summary(struct rr *r, int rc, double secs)
{
	char b[32];

	cli_fmt_bytes((double)r->bytes_ok, b, sizeof(b));
	failures_print(&r->fails, stdout);
	printf("serve: %s node %u on %s: %s: %zu/%zu recvs done (%" PRIu64
	       " ok, %s; %" PRIu64 " with an error status), %zu time points, "
	       "%" PRIu64 " channel errors, %" PRIu64 " faults fired here, "
	       "%.2f s\n", r->sc->name,
	       r->o->node, r->dev_name[0] ? r->dev_name : "?",
	       rc == CLI_EXIT_OK ? "PASS" : "FAIL", r->recvs_done,
	       r->recvs_local, r->recvs_ok, b, r->recvs_err, r->ntimes,
	       r->channel_errors, r->fault_fires, secs);
	fflush(stdout);
}

static void rr_free(struct rr *r)
{
	free(r->talks);
	free(r->in_flight);
	free(r->resets);
	free(r->recvs);
	free(r->times);
	failures_free(&r->fails);
}

int rr_run(const struct scenario *sc, const struct rr_opts *o)
{
	struct rr r = { .sc = sc, .o = o };
	char msg[512] = "";
	int ret, rc = CLI_EXIT_FAIL;

	r.t0_ns = wall_ns();
	r.deadline_ns = r.t0_ns + (uint64_t)o->timeout_s * 1000000000ull;
	if (rr_alloc(&r)) {
		fprintf(stderr, "tensorverbs serve: out of memory\n");
		goto out;
	}
	ret = rr_open(&r, msg, sizeof(msg));
	if (ret) {
		fprintf(stderr, "tensorverbs serve: node %u: %s\n", o->node,
			msg[0] ? msg : strerror(-ret));
		rc = ret == -EINVAL || ret == -ENODEV ? CLI_EXIT_USAGE :
							CLI_EXIT_FAIL;
		failures_add(&r.fails, FK_RUNNER, "%s", msg);
		goto close;
	}
	ret = rr_steps(&r);
	if (ret && r.co_ready)
		coord_abort(&r.co, "node %u: %s", o->node, r.fails.count &&
			    r.fails.msgs[0] ? r.fails.msgs[0] : strerror(-ret));
	rc = r.fails.count ? CLI_EXIT_FAIL : CLI_EXIT_OK;
close:
	if (r.co_ready)
		coord_fini(&r.co);
	r.fault_fires = r.flt.flt ? tv_flt_total_fires(r.flt.flt) : 0;
	ret = rnode_close(&r.n);
	rr_faults_free(&r.flt); /* after the unwrap in rnode_close() */
	if (ret) {
		failures_add(&r.fails, FK_LEAK, "tv_engine_destroy: %s (tensors still "
			     "referenced)", strerror(-ret));
		rc = CLI_EXIT_FAIL;
	}
	if (rc != CLI_EXIT_USAGE)
		rr_summary(&r, rc, (double)(wall_ns() - r.t0_ns) / 1e9);
out:
	rr_free(&r);
	return rc;
}

#else /* !TV_HAVE_RDMACM */

int rr_run(const struct scenario *sc, const struct rr_opts *o)
{
	(void)sc;
	(void)o;
	fprintf(stderr, "tensorverbs serve: built without librdmacm/libibverbs "
		"(install librdmacm-dev and libibverbs-dev, then rebuild)\n");
	return CLI_EXIT_FAIL;
}

#endif
