/*
 * The rendezvous protocol's invariants (docs/scenarios.md), fed by the
 * engines' observers and the simulator's events:
 *  - at most one control message in flight per channel direction
 *    (TV_EV_MSG_SEND minus TV_EV_ACK_RECV at the sender stays <= 1);
 *  - every tensor write lands inside the buffer the receiver advertised
 *    for that request index (TV_EV_REQ_ADVERTISE against the simulator's
 *    DELIVER event), and only while the request is live;
 *  - control messages land inside the receiver's rx buffer; ACKs are
 *    empty;
 *  - no channel error unless the scenario allows (or injects faults).
 * The testbed checks error completions and CQ overflows itself.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "rv_check.h"
#include "rv_run.h"
#include "rv_scenario.h"
#include "wire.h"

static uint64_t now_ns(const struct checker *c)
{
	return tv_tb_run_now_ns(c->run);
}

int checker_init(struct checker *c, struct tv_tb_run *run, uint32_t nodes)
{
	size_t n = (size_t)nodes * nodes;

	memset(c, 0, sizeof(*c));
	c->run = run;
	c->nodes = nodes;
	c->in_flight = calloc(n, sizeof(*c->in_flight));
	c->dir_failed = calloc(n, sizeof(*c->dir_failed));
	c->chan_errors = calloc(n, sizeof(*c->chan_errors));
	c->down = calloc(nodes, sizeof(*c->down));
	c->rx = calloc(n, sizeof(*c->rx));
	c->rx_known = calloc(n, sizeof(*c->rx_known));
	if (tv_tb_windows_create(nodes, &c->adv))
		c->adv = NULL;
	if (!c->in_flight || !c->dir_failed || !c->chan_errors || !c->down ||
	    !c->rx || !c->rx_known || !c->adv) {
		checker_fini(c);
		return -ENOMEM;
	}
	return 0;
}

void checker_fini(struct checker *c)
{
	free(c->in_flight);
	free(c->dir_failed);
	free(c->chan_errors);
	free(c->down);
	free(c->rx);
	free(c->rx_known);
	tv_tb_windows_destroy(c->adv);
	memset(c, 0, sizeof(*c));
}

void checker_set_rx(struct checker *c, uint32_t node, uint32_t peer,
		    const struct tv_channel_info *info)
{
	assert(node < c->nodes && peer < c->nodes);
	c->rx[node * c->nodes + peer] = *info;
	c->rx_known[node * c->nodes + peer] = true;
}

/* ---- engine observer ------------------------------------------------- */

static const char *engine_ev_name(enum tv_engine_event_kind k)
{
	const char *name = rv_engine_event_name(k);

	return name ? name : "?";
}

static void trace_engine(const struct checker *c,
			 const struct tv_engine_event *ev)
{
	printf("[%12" PRIu64 " ns] engine %u<->%u %-13s", now_ns(c),
	       ev->node, ev->peer, engine_ev_name(ev->kind));
	if (ev->kind == TV_EV_MSG_SEND || ev->kind == TV_EV_MSG_RECV)
		printf(" %s", scenario_msg_type_name((int)ev->msg_type));
	printf(" idx=%u step=%" PRIu64 " name=%s addr=0x%" PRIx64
	       " len=%" PRIu64 " code=%d\n", ev->request_index, ev->step_id,
	       ev->name ? ev->name : "-", ev->addr, ev->length, ev->code);
}

static void on_msg_send(struct checker *c, const struct tv_engine_event *ev)
{
	size_t d = ev->node * c->nodes + ev->peer;
	int64_t *f = &c->in_flight[d];

	if (++*f > 1 && !c->dir_failed[d])
		tv_tb_fail(c->run, TV_TB_FK_IN_FLIGHT,
			     "invariant: node %u has %" PRId64 " control messages in flight to node %u (max 1) at %" PRIu64 " ns (%s)",
			     ev->node, *f, ev->peer, now_ns(c),
			     scenario_msg_type_name((int)ev->msg_type));
}

static void on_ack_recv(struct checker *c, const struct tv_engine_event *ev)
{
	size_t d = ev->node * c->nodes + ev->peer;
	int64_t *f = &c->in_flight[d];

	if (--*f >= 0)
		return;
	*f = 0;
	/* Completions polled after a failure may report an old ACK. */
	if (!c->dir_failed[d])
		tv_tb_fail(c->run, TV_TB_FK_IN_FLIGHT,
			     "invariant: node %u got an ACK from node %u with no message in flight at %" PRIu64 " ns",
			     ev->node, ev->peer, now_ns(c));
}

static uint64_t name_hash(const char *name)
{
	return name ? XXH3_64bits(name, strlen(name)) : 0;
}

/*
 * A finished request's buffer is no longer a valid destination: a later
 * write for that index is caught.  The entry stays, marked done, so a
 * duplicated write (vf/write/dup) can be told from a stray one.  Only if
 * step and name match: a request that failed before it got an index
 * reports a meaningless one.
 */
static void on_recv_done(struct checker *c, const struct tv_engine_event *ev)
{
	struct tv_tb_window *e = tv_tb_windows_find(c->adv, ev->node, ev->peer,
						    ev->request_index);

	if (e && e->id == ev->step_id && e->id2 == name_hash(ev->name)) {
		e->done = true;
		e->done_seq = c->engine_events;
	}
}

static void on_channel_error(struct checker *c,
			     const struct tv_engine_event *ev)
{
	size_t d = ev->node * c->nodes + ev->peer;

	c->channel_errors++;
	c->chan_errors[d]++;
	/* This end's QP is in ERR: its message in flight is gone. */
	c->dir_failed[d] = true;
	if (!tv_tb_run_tearing_down(c->run) && !c->allow_errors)
		tv_tb_fail(c->run, TV_TB_FK_ERROR,
			     "channel error on node %u towards node %u (code %d) at %" PRIu64 " ns",
			     ev->node, ev->peer, ev->code,
			     now_ns(c));
}

void checker_new_epoch(struct checker *c, uint32_t a, uint32_t b)
{
	assert(a < c->nodes && b < c->nodes && a != b);
	c->in_flight[a * c->nodes + b] = 0;
	c->in_flight[b * c->nodes + a] = 0;
	c->dir_failed[a * c->nodes + b] = false;
	c->dir_failed[b * c->nodes + a] = false;
	/* What either side advertised on the old connection is void. */
	tv_tb_windows_close_pair(c->adv, a, b, c->engine_events);
}

void checker_node_down(struct checker *c, uint32_t n)
{
	assert(n < c->nodes);
	c->down[n] = true;
	for (uint32_t p = 0; p < c->nodes; p++) {
		/* Its messages in flight, and the peers' to it, are gone. */
		c->dir_failed[n * c->nodes + p] = true;
		c->dir_failed[p * c->nodes + n] = true;
	}
	/* Its buffers are freed memory now: no write may land there. */
	tv_tb_windows_close_node(c->adv, n, c->engine_events);
}

void checker_node_up(struct checker *c, uint32_t n)
{
	assert(n < c->nodes);
	c->down[n] = false;
}

void checker_engine_event(void *ctx, const struct tv_engine_event *ev)
{
	struct checker *c = ctx;
	struct tv_tb_window e;

	if (ev->node >= c->nodes || ev->peer >= c->nodes) {
		if (ev->kind != TV_EV_CHANNEL_ERROR)
			tv_tb_fail(c->run, TV_TB_FK_RUNNER,
				     "engine event %s names node %u peer %u",
				     engine_ev_name(ev->kind), ev->node, ev->peer);
		return;
	}
	if (c->trace)
		trace_engine(c, ev);
	c->engine_events++;
	switch (ev->kind) {
	case TV_EV_MSG_SEND:
		on_msg_send(c, ev);
		break;
	case TV_EV_ACK_RECV:
		on_ack_recv(c, ev);
		break;
	case TV_EV_REQ_ADVERTISE:
		e.addr = ev->addr;
		e.length = ev->length;
		e.rkey = ev->rkey;
		e.id = ev->step_id;
		e.id2 = name_hash(ev->name);
		e.done = false;
		e.open_seq = c->engine_events;
		e.done_seq = 0;
		if (tv_tb_windows_open(c->adv, ev->node, ev->peer,
				       ev->request_index, &e))
			tv_tb_fail(c->run, TV_TB_FK_RUNNER,
				   "checker: out of memory");
		break;
	case TV_EV_RECV_DONE:
		on_recv_done(c, ev);
		break;
	case TV_EV_CHANNEL_ERROR:
		on_channel_error(c, ev);
		break;
	default:
		break;
	}
}

/* ---- simulator observer ---------------------------------------------- */

static void check_msg_write(struct checker *c, const struct tv_sim_event *ev)
{
	const struct tv_channel_info *rx = &c->rx[ev->node * c->nodes + ev->peer];

	c->checked_msgs++;
	if (!c->rx_known[ev->node * c->nodes + ev->peer]) {
		tv_tb_fail(c->run, TV_TB_FK_WRITE,
			     "invariant: control message from node %u to node %u, which has no channel to it",
			     ev->peer, ev->node);
		return;
	}
	if (ev->length > rx->rx_bytes || ev->remote_addr < rx->rx_addr ||
	    ev->remote_addr - rx->rx_addr > rx->rx_bytes - ev->length)
		tv_tb_fail(c->run, TV_TB_FK_WRITE,
			     "invariant: control message write [0x%" PRIx64 ", +%u) from node %u overflows node %u's rx buffer [0x%" PRIx64 ", +%u)",
			     ev->remote_addr, ev->length, ev->peer, ev->node,
			     rx->rx_addr, rx->rx_bytes);
}

static bool write_inside(const struct tv_sim_event *ev,
			 const struct tv_tb_window *e)
{
	return tv_tb_window_holds(e, ev->remote_addr, ev->length, ev->rkey);
}

static void check_tensor_write(struct checker *c,
			       const struct tv_sim_event *ev)
{
	uint32_t idx = tv_imm_index(ev->imm), oidx = 0;
	struct tv_tb_window *e = tv_tb_windows_find(c->adv, ev->node, ev->peer,
						    idx);
	const struct tv_tb_window *o;

	c->checked_writes++;
	if (e && e->done && c->dup_fires && write_inside(ev, e)) {
		/*
		 * docs/faults.md: the second copy of a duplicated write lands
		 * in the buffer just delivered (an RC peer holding a valid
		 * rkey cannot be stopped); the engine then resets.  Unless
		 * the buffer went to another request meanwhile.
		 */
		c->dup_landed++;
		o = ev->length ? tv_tb_windows_reused(c->adv, ev->node, e,
						      &oidx) : NULL;
		if (o)
			tv_tb_fail(c->run, TV_TB_FK_WRITE,
				     "invariant: duplicated tensor write (index %u, %u bytes) from node %u landed at %" PRIu64 " ns in node %u's buffer of a finished request, advertised again since for index %u (step %" PRIu64 ")",
				     idx, ev->length, ev->peer, ev->time_ns,
				     ev->node, oidx, o->id);
		return;
	}
	if (!e || e->done) {
		tv_tb_fail(c->run, TV_TB_FK_WRITE,
			     "invariant: tensor write (index %u, %u bytes) from node %u to node %u at %" PRIu64 " ns: no live request advertised a buffer for that index",
			     idx, ev->length, ev->peer, ev->node,
			     ev->time_ns);
		return;
	}
	if (!write_inside(ev, e))
		tv_tb_fail(c->run, TV_TB_FK_WRITE,
			     "invariant: tensor write [0x%" PRIx64 ", +%u) rkey 0x%x from node %u to node %u (index %u) outside the advertised [0x%" PRIx64 ", +%" PRIu64 ") rkey 0x%x",
			     ev->remote_addr, ev->length, ev->rkey, ev->peer,
			     ev->node, idx, e->addr, e->length, e->rkey);
}

static void on_deliver(struct checker *c, const struct tv_sim_event *ev)
{
	if (ev->node >= c->nodes || ev->peer >= c->nodes)
		return;
	/*
	 * A crashed node has no QP: the simulator reports a request that
	 * found no responder (it will be retried, then RETRY_EXC) as
	 * delivered, but nothing was written.
	 */
	if (c->down[ev->node])
		return;
	/* A write the responder refused (flushed, bad key) wrote nothing. */
	if (!ev->has_imm || ev->status != TV_WC_SUCCESS)
		return;
	if (ev->imm == TV_IMM_ACK) {
		if (ev->length != 0)
			tv_tb_fail(c->run, TV_TB_FK_WRITE,
				     "invariant: ACK from node %u to node %u carries %u bytes",
				     ev->peer, ev->node, ev->length);
	} else if (ev->imm == TV_IMM_MESSAGE) {
		check_msg_write(c, ev);
	} else {
		check_tensor_write(c, ev);
	}
}

void checker_sim_event(void *ctx, const struct tv_sim_event *ev)
{
	struct checker *c = ctx;

	if (ev->kind == TV_SIM_EV_DELIVER)
		on_deliver(c, ev);
}

void checker_quiescent(struct checker *c)
{
	for (uint32_t n = 0; n < c->nodes; n++)
		for (uint32_t p = 0; p < c->nodes; p++)
			/* A failed direction never gets its ACK: not a hang. */
			if (c->in_flight[n * c->nodes + p] != 0 &&
			    !c->dir_failed[n * c->nodes + p])
				tv_tb_fail(c->run, TV_TB_FK_HANG,
					     "invariant: at quiescence node %u still waits for the ACK of a control message to node %u (the tensorflow #11416 hang)",
					     n, p);
}
