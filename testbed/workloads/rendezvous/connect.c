/*
 * The rendezvous workload's connections: every pair that talks gets a
 * channel on both nodes at set-up, connected out of band (each side's
 * tv_channel_info to the other) at once, or when the later of the two
 * nodes starts (late_nodes, TensorFlow #18630).  Under faults a failed
 * channel is re-established the way a real deployment would: both ends
 * reset, endpoints exchanged again, both connected.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rv_run.h"

/* vf/write/dup: a duplicate may land in a buffer just delivered. */
void rv_fault_fired(struct tv_tb_run *run, void *st, const char *point,
		    uint64_t hit)
{
	struct runner *r = st;

	if (!strcmp(point, "vf/write/dup"))
		r->chk.dup_fires++;
}

/* Called by the engine of node ns->id for its failed channel ch. */
static int reconnect_cb(void *ctx, struct tv_channel *ch)
{
	struct node_slot *ns = ctx;
	struct runner *r = ns->r;
	uint32_t a = ns->id, b = tv_channel_peer(ch);
	struct tv_channel *other;
	int rc;

	assert(b < r->sc->nodes && tv_engine_channel(ns->engine, b) == ch);
	/*
	 * The peer crashed (node/crash): not there yet, ask again later (the
	 * engine backs off; its restart connects us anyway); or its restart
	 * failed: it is gone for good, what waits fails.
	 */
	if (tv_tb_run_node_state(r->run, b) == TV_TB_NODE_DOWN)
		return -EAGAIN;
	if (tv_tb_run_node_state(r->run, b) == TV_TB_NODE_DEAD)
		return -EHOSTDOWN;
	/* Never connected (a late node): there is nothing to re-establish. */
	if (!r->connected[a * r->sc->nodes + b])
		return -ENOTCONN;
	other = tv_engine_channel(r->nodes[b].engine, a);
	rc = tv_channel_reset(ch);
	if (!rc)
		rc = tv_channel_reset(other);
	if (!rc) {
		/* A new connection: what was in flight on the old one is gone. */
		checker_new_epoch(&r->chk, a, b);
		rc = runner_connect_pair(r, a, b);
	}
	if (rc)
		r->reconnect_failures++;
	return rc;
}

void runner_engine_faults(struct runner *r, struct node_slot *ns,
			  struct tv_engine_config *cfg)
{
	const struct scenario *sc = r->sc;
	bool reconnect = sc->has_reconnect ? sc->reconnect : r->faulty;

	/*
	 * Under faults a receive gets a deadline, so "never completed" is a
	 * hang and not a slow peer, and the ACK timeout is far below it, so
	 * a lost message is found and retried long before that deadline.
	 */
	if (sc->has_ack_timeout)
		cfg->ack_timeout_ns = sc->ack_timeout_ns;
	else if (r->faulty)
		cfg->ack_timeout_ns = RUN_FAULT_ACK_TIMEOUT_NS;
	if (sc->has_recv_timeout)
		cfg->recv_timeout_ns = sc->recv_timeout_ns;
	else if (r->faulty)
		cfg->recv_timeout_ns = RUN_FAULT_RECV_TIMEOUT_NS;
	if (sc->has_max_retries)
		cfg->max_retries = sc->max_retries;
	r->max_retries = cfg->max_retries;
	r->ack_timeout_ns = cfg->ack_timeout_ns;
	r->recv_timeout_ns = cfg->recv_timeout_ns;
	if (reconnect) {
		cfg->reconnect = reconnect_cb;
		cfg->reconnect_ctx = ns;
	}
}

static void late_connect_cb(void *arg)
{
	struct late_pair *lp = arg;
	struct runner *r = lp->r;
	uint32_t prev, n = r->sc->nodes;
	int rc;

	/*
	 * A node that is down connects when it restarts; one that restarted
	 * just now, at this very time, did already.
	 */
	if (tv_tb_run_node_state(r->run, lp->a) != TV_TB_NODE_UP ||
	    tv_tb_run_node_state(r->run, lp->b) != TV_TB_NODE_UP ||
	    (r->joined[lp->a * n + lp->b] && r->joined[lp->b * n + lp->a]))
		return;
	prev = tv_tb_run_enter(r->run, r->sc->start_ns[lp->a] >
				       r->sc->start_ns[lp->b] ? lp->a : lp->b);
	rc = runner_connect_pair(r, lp->a, lp->b);
	tv_tb_run_leave(r->run, prev);
	if (rc)
		tv_tb_fail(r->run, TV_TB_FK_RUNNER,
			     "late channel %u<->%u connect: %s", lp->a, lp->b,
			     strerror(-rc));
}

int runner_schedule_late(struct runner *r)
{
	const uint64_t *start = r->sc->start_ns;

	for (size_t i = 0; i < r->nlate; i++) {
		struct late_pair *lp = &r->late[i];
		uint32_t late = start[lp->a] > start[lp->b] ? lp->a : lp->b;
		int rc;

		rc = tv_sim_schedule(tv_tb_run_sim(r->run), start[late], late,
				     late_connect_cb, lp);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- connecting at set-up ------------------------------------------------ */

/* The out-of-band exchange: each side learns the other's QP and buffer. */
int runner_connect_pair(struct runner *r, uint32_t a, uint32_t b)
{
	struct tv_channel *ca = tv_engine_channel(r->nodes[a].engine, b);
	struct tv_channel *cb = tv_engine_channel(r->nodes[b].engine, a);
	struct tv_channel_info ia, ib;
	int rc;

	assert(ca && cb);
	rc = tv_channel_info(ca, &ia);
	if (!rc)
		rc = tv_channel_info(cb, &ib);
	if (rc)
		return rc;
	/* Each side's rx buffer is where the other side's messages land. */
	checker_set_rx(&r->chk, a, b, &ia);
	checker_set_rx(&r->chk, b, a, &ib);
	rc = tv_channel_connect(ca, &ib);
	if (!rc)
		rc = tv_channel_connect(cb, &ia);
	if (!rc) {
		r->connected[a * r->sc->nodes + b] = true;
		r->connected[b * r->sc->nodes + a] = true;
		r->joined[a * r->sc->nodes + b] = true;
		r->joined[b * r->sc->nodes + a] = true;
	}
	return rc;
}

static int create_pair(struct runner *r, uint32_t a, uint32_t b)
{
	const struct scenario *sc = r->sc;
	struct tv_channel *ca, *cb;
	int rc;

	rc = tv_channel_create(r->nodes[a].engine, b, &ca);
	if (!rc)
		rc = tv_channel_create(r->nodes[b].engine, a, &cb);
	if (rc) {
		tv_tb_fail(r->run, TV_TB_FK_RUNNER, "channel %u<->%u setup: %s",
			     a, b, strerror(-rc));
		return rc;
	}
	/* A late node's channels connect when it starts (#18630). */
	if (sc->start_ns[a] || sc->start_ns[b]) {
		r->late[r->nlate++] = (struct late_pair){ r, a, b };
		return 0;
	}
	rc = runner_connect_pair(r, a, b);
	if (rc)
		tv_tb_fail(r->run, TV_TB_FK_RUNNER, "channel %u<->%u connect: %s",
			     a, b, strerror(-rc));
	return rc;
}

int connect_all(struct runner *r)
{
	const struct scenario *sc = r->sc;
	uint32_t n = sc->nodes;

	for (size_t i = 0; i < sc->nsends; i++) {
		r->pairs[sc->sends[i].from * n + sc->sends[i].to] = true;
		r->pairs[sc->sends[i].to * n + sc->sends[i].from] = true;
	}
	for (uint32_t a = 0; a < n; a++) {
		for (uint32_t b = a + 1; b < n; b++) {
			int rc;

			if (!r->pairs[a * n + b])
				continue;
			rc = create_pair(r, a, b);
			if (rc)
				return rc;
		}
	}
	return 0;
}
