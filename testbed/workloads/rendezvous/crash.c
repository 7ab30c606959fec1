/*
 * What the node/crash fault (docs/faults.md) does to the rendezvous
 * workload.  The testbed decides when a node crashes and when it comes
 * back; here a crash destroys the node's engine with everything in it
 * (published tensors, pending receives, QPs, buffers), and a restart makes
 * a fresh engine over the same (wrapped) device, its channels made again
 * and connected with every peer out of band.  The peers find out the way
 * real peers do: ACK timeouts and transport retries towards QPs that are
 * gone; their reconnect callback (connect.c) answers -EAGAIN until the
 * restart, which resets their side and connects it to the new one.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rv_run.h"

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
		tv_tb_fail(r->run, TV_TB_FK_LEAK,
			     "node %u crash: tv_engine_destroy: tensors still referenced",
			     ns->id);
	} else if (rc) {
		tv_tb_fail(r->run, TV_TB_FK_RUNNER,
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

void rv_node_crash(struct tv_tb_run *run, void *st, uint32_t node)
{
	struct runner *r = st;
	struct node_slot *ns = &r->nodes[node];
	struct tv_tb_result *res = tv_tb_run_result_mut(run);
	uint64_t ok = res->ops_ok, bad = res->ops_failed;

	assert(ns->engine);
	ns->epoch++;
	save_counters(ns);
	mark_live_recvs(r, ns->id);
	/* Its receives complete now (CANCELLED), their callbacks run. */
	destroy_engine(r, ns);
	ns->past.recvs_ok += res->ops_ok - ok;
	ns->past.recvs_failed += res->ops_failed - bad;
	forget_channels(r, ns->id);
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
	uint32_t n = r->sc->nodes, prev;
	struct tv_channel *other = tv_engine_channel(r->nodes[p].engine, k);
	int rc = 0;

	assert(other);
	if (r->joined[p * n + k] || tv_channel_failed(other)) {
		prev = tv_tb_run_enter(r->run, p);
		rc = tv_channel_reset(other);
		tv_tb_run_leave(r->run, prev);
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
	uint32_t prev, n = r->sc->nodes;
	char msg[64];
	int rc = 0;

	assert(ch && tv_tb_run_node_state(r->run, gone) == TV_TB_NODE_DEAD);
	prev = tv_tb_run_enter(r->run, owner);
	if (r->joined[owner * n + gone] || tv_channel_failed(ch))
		rc = tv_channel_reset(ch);
	r->joined[owner * n + gone] = false;
	snprintf(msg, sizeof(msg), "node %u crashed and did not restart", gone);
	if (!rc)
		rc = tv_channel_fail(ch, TV_UNAVAILABLE, msg);
	tv_tb_run_leave(r->run, prev);
	if (rc)
		tv_tb_fail(r->run, TV_TB_FK_RUNNER,
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
		if (tv_tb_run_node_state(r->run, p) == TV_TB_NODE_DEAD)
			channel_gone(r, k, p);
	}
	for (uint32_t p = 0; p < n; p++) {
		/* A peer that is down connects to us when it restarts. */
		if (!r->pairs[k * n + p] ||
		    tv_tb_run_node_state(r->run, p) != TV_TB_NODE_UP ||
		    !tv_tb_run_pair_due(r->run, k, p))
			continue;
		rc = rejoin(r, k, p);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Its restart failed (a fault): the node is gone for good.  What is left
 * of its engine goes, and every peer's channel to it fails.
 */
void rv_node_lost(struct tv_tb_run *run, void *st, uint32_t node)
{
	struct runner *r = st;
	struct node_slot *ns = &r->nodes[node];

	if (ns->engine)
		destroy_engine(r, ns);
	forget_channels(r, ns->id);
	for (uint32_t p = 0; p < r->sc->nodes; p++)
		if (r->pairs[ns->id * r->sc->nodes + p] &&
		    tv_tb_run_node_state(run, p) == TV_TB_NODE_UP)
			channel_gone(r, p, ns->id);
}

int rv_node_restart(struct tv_tb_run *run, void *st, uint32_t node)
{
	struct runner *r = st;
	struct node_slot *ns = &r->nodes[node];
	int rc;

	assert(!ns->engine);
	rc = runner_node_engine(r, ns);
	if (rc)
		return rc;
	checker_node_up(&r->chk, ns->id);
	return rejoin_all(r, ns);
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
			r->crash_cancelled++;
	}
}
