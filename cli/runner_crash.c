/*
 * The node/crash fault (docs/faults.md): a node dies as a process does,
 * its engine destroyed with everything in it (published tensors, pending
 * receives, QPs, buffers), and comes back after the rule's arg with a
 * fresh engine over the same (wrapped) device, its channels made again
 * and connected with every peer out of band.  While it is down its
 * scheduled sends and receives are skipped.  The peers find out the way
 * real peers do: ACK timeouts and transport retries towards QPs that are
 * gone; their reconnect callback (runner_faults.c) answers -EAGAIN until
 * the restart, which resets their side and connects it to the new one.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <fiu-local.h>

#include "runner_int.h"
#include "trace.h"

/* A line in --verbose and a "node" event in the trace (docs/trace.md). */
static void node_note(struct runner *r, const char *kind, uint32_t node,
		      const char *op, uint64_t step_id, const char *name)
{
	if (r->opts->verbose) {
		printf("[%12" PRIu64 " ns] node   %u %s", tv_sim_now_ns(r->sim),
		       node, kind);
		if (op)
			printf(" %s '%s' step %" PRIu64 " (node down)", op,
			       name, step_id);
		printf("\n");
	}
	if (r->opts->rec)
		trace_rec_node_event(r->opts->rec, kind, node, op, step_id,
				     name);
}

bool runner_pair_due(const struct runner *r, uint32_t a, uint32_t b)
{
	uint64_t now = tv_sim_now_ns(r->sim);

	/* A late node's channels connect at its start (late_connect_cb). */
	return r->sc->start_ns[a] <= now && r->sc->start_ns[b] <= now;
}

/* What the engine counted so far; what is alive dies with it. */
static void save_counters(struct node_slot *ns)
{
	struct tv_engine_stats st;

	tv_engine_stats(ns->engine, &st);
	st.pool_blocks = st.pool_bytes_registered = st.pool_live_bytes = 0;
	st.live_requests = st.live_responses = st.queued_msgs = 0;
	st.unmatched_sends = st.unmatched_requests = st.live_tensors = 0;
	runner_add_stats(&ns->past, &st);
}

/* Its receives that are live now: tv_engine_destroy must cancel them. */
static void mark_live_recvs(struct runner *r, uint32_t node)
{
	for (size_t i = 0; i < r->sc->nrecvs; i++) {
		struct recv_slot *rs = &r->recvs[i];

		if (r->sc->recvs[i].node == node && rs->started &&
		    !rs->refused && !rs->calls)
			rs->crashed = true;
	}
}

static void destroy_engine(struct runner *r, struct node_slot *ns)
{
	int rc = tv_engine_destroy(ns->engine);

	/*
	 * The runner holds no tensor between its callbacks, so -EBUSY is a
	 * tensor the engine leaked: only their memory is left; the rest is
	 * tried again at teardown, so the simulator's own count stays exact.
	 */
	if (rc == -EBUSY && !ns->zombie) {
		ns->zombie = ns->engine;
		failures_add(r->fails, FK_LEAK,
			     "node %u crash: tv_engine_destroy: tensors still referenced",
			     ns->id);
	} else if (rc) {
		failures_add(r->fails, FK_RUNNER,
			     "node %u crash: tv_engine_destroy: %s", ns->id,
			     strerror(-rc));
	}
	ns->engine = NULL;
}

static void forget_channels(struct runner *r, uint32_t node)
{
	uint32_t n = r->sc->nodes;

	for (uint32_t p = 0; p < n; p++)
		r->joined[node * n + p] = false;
	checker_node_down(&r->chk, node);
}

static void restart_cb(void *arg);

static void node_crash(struct runner *r, struct node_slot *ns,
		       uint64_t after_ns)
{
	uint64_t ok = r->res.recvs_ok, bad = r->res.recvs_error;
	uint64_t now = tv_sim_now_ns(r->sim);
	int rc;

	assert(ns->state == NODE_UP && ns->engine);
	/* An arg past the end of time: the node never comes back. */
	if (after_ns > UINT64_MAX / 2 - now)
		after_ns = UINT64_MAX / 2 - now;
	node_note(r, "CRASH", ns->id, NULL, 0, NULL);
	r->res.crashes++;
	ns->state = NODE_DOWN;
	ns->epoch++;
	save_counters(ns);
	mark_live_recvs(r, ns->id);
	/* Its receives complete now (CANCELLED), their callbacks run. */
	destroy_engine(r, ns);
	ns->past.recvs_ok += r->res.recvs_ok - ok;
	ns->past.recvs_failed += r->res.recvs_error - bad;
	forget_channels(r, ns->id);
	rc = tv_sim_schedule(r->sim, now + after_ns, ns->id, restart_cb, ns);
	if (rc)
		failures_add(r->fails, FK_RUNNER,
			     "node %u crash: scheduling its restart: %s",
			     ns->id, strerror(-rc));
}

bool runner_node_gate(struct runner *r, uint32_t node, const char *op,
		      uint64_t step_id, const char *name)
{
	struct node_slot *ns = &r->nodes[node];
	int64_t after = 0;
	bool fire = false;

	assert(r->actor == node);
	/* A node that is down cannot crash: no hit. */
	if (ns->state == NODE_UP) {
		fiu_do_on("node/crash", {
			after = TV_FLT_ARG(RUN_CRASH_RESTART_NS);
			fire = true;
		});
		if (fire)
			node_crash(r, ns, after > 0 ? (uint64_t)after :
						      RUN_CRASH_RESTART_NS);
	}
	if (ns->state == NODE_UP)
		return false;
	r->res.skipped_ops++;
	node_note(r, "SKIP", node, op, step_id, name);
	return true;
}

/*
 * The peer's channel to the restarted node has usually failed meanwhile
 * (ACK timeouts, retries exceeded towards QPs that are gone), or still
 * points at them: reset it (what waits on it goes again on the new
 * connection), then the exchange.  A fresh one (the peer restarted too)
 * is connected as it is.
 */
static int rejoin(struct runner *r, uint32_t k, uint32_t p)
{
	uint32_t n = r->sc->nodes, prev = r->actor;
	struct tv_channel *other = tv_engine_channel(r->nodes[p].engine, k);
	int rc = 0;

	assert(other);
	if (r->joined[p * n + k] || tv_channel_failed(other)) {
		r->actor = p;
		rc = tv_channel_reset(other);
		r->actor = prev;
		if (rc)
			return rc;
	}
	/* A new connection: nothing of the old ones is in flight. */
	checker_new_epoch(&r->chk, k, p);
	return runner_connect_pair(r, k, p);
}

/*
 * A node gone for good (its restart failed): the connection manager of
 * whoever has a channel to it says so (RDMA_CM_EVENT_DISCONNECTED).  The
 * connection is torn down (a reset: a write whose flush an overflowed CQ
 * lost would otherwise keep its response for ever), then failed for good
 * (tv_channel_fail; the reconnect answers -EHOSTDOWN): what waits on it
 * fails at once, and what the dead node had asked for is dropped.
 */
static void channel_gone(struct runner *r, uint32_t owner, uint32_t gone)
{
	struct tv_channel *ch = tv_engine_channel(r->nodes[owner].engine, gone);
	uint32_t prev = r->actor, n = r->sc->nodes;
	char msg[64];
	int rc = 0;

	assert(ch && r->nodes[gone].state == NODE_DEAD);
	r->actor = owner;
	if (r->joined[owner * n + gone] || tv_channel_failed(ch))
		rc = tv_channel_reset(ch);
	r->joined[owner * n + gone] = false;
	snprintf(msg, sizeof(msg), "node %u crashed and did not restart", gone);
	if (!rc)
		rc = tv_channel_fail(ch, TV_UNAVAILABLE, msg);
	r->actor = prev;
	if (rc)
		failures_add(r->fails, FK_RUNNER,
			     "node %u's channel to node %u, gone: %s", owner,
			     gone, strerror(-rc));
}

/* Every channel first, then the connections: no half-made peer. */
static int rejoin_all(struct runner *r, struct node_slot *ns)
{
	uint32_t k = ns->id, n = r->sc->nodes;
	struct tv_channel *ch;
	int rc;

	for (uint32_t p = 0; p < n; p++) {
		if (!r->pairs[k * n + p])
			continue;
		rc = tv_channel_create(ns->engine, p, &ch);
		if (rc)
			return rc;
		if (r->nodes[p].state == NODE_DEAD)
			channel_gone(r, k, p);
	}
	for (uint32_t p = 0; p < n; p++) {
		/* A peer that is down connects to us when it restarts. */
		if (!r->pairs[k * n + p] || r->nodes[p].state != NODE_UP ||
		    !runner_pair_due(r, k, p))
			continue;
		rc = rejoin(r, k, p);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Faults stay armed through a restart (a restarting process can fail to
 * allocate too): a restart that fails leaves the node down for good, and
 * is a failure of the run only if no fault fired while it was tried.
 */
static void restart_failed(struct runner *r, struct node_slot *ns, int err,
			   uint64_t fires_before)
{
	node_note(r, "RESTART_FAILED", ns->id, NULL, 0, NULL);
	r->res.restart_failures++;
	if (ns->engine)
		destroy_engine(r, ns);
	ns->state = NODE_DEAD;
	forget_channels(r, ns->id);
	for (uint32_t p = 0; p < r->sc->nodes; p++)
		if (r->pairs[ns->id * r->sc->nodes + p] &&
		    r->nodes[p].state == NODE_UP)
			channel_gone(r, p, ns->id);
	if (r->fires == fires_before)
		failures_add(r->fails, FK_RUNNER,
			     "node %u restart at %" PRIu64 " ns: %s (no fault fired)",
			     ns->id, tv_sim_now_ns(r->sim), strerror(-err));
}

static void restart_cb(void *arg)
{
	struct node_slot *ns = arg;
	struct runner *r = ns->r;
	uint64_t fires = r->fires;
	uint32_t prev = r->actor;
	int rc;

	assert(ns->state == NODE_DOWN && !ns->engine);
	r->actor = ns->id;
	node_note(r, "RESTART", ns->id, NULL, 0, NULL);
	rc = runner_node_engine(r, ns);
	if (!rc) {
		ns->state = NODE_UP;
		checker_node_up(&r->chk, ns->id);
		rc = rejoin_all(r, ns);
	}
	if (rc)
		restart_failed(r, ns, rc, fires);
	else
		r->res.restarts++;
	r->actor = prev;
}

/* At teardown: an engine a crash could not finish destroying. */
void runner_crash_teardown(struct runner *r)
{
	for (uint32_t n = 0; r->nodes && n < r->sc->nodes; n++) {
		struct node_slot *ns = &r->nodes[n];

		if (ns->zombie && tv_engine_destroy(ns->zombie) == 0)
			ns->zombie = NULL;
	}
}

/*
 * After the run: a receive its node's crash caught was called back by
 * tv_engine_destroy (a missing call is reported as never completed).
 */
void runner_check_crashes(struct runner *r)
{
	for (size_t i = 0; i < r->sc->nrecvs; i++) {
		const struct recv_slot *rs = &r->recvs[i];

		if (rs->crashed && rs->calls && rs->code == TV_CANCELLED)
			r->res.crash_cancelled++;
	}
}
