/* Failures and the invariant checker fed by the two observers. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "check.h"
#include "scenario.h"
#include "wire.h"

void failures_add(struct failures *f, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	if (f->count < FAILURES_KEPT) {
		va_start(ap, fmt);
		if (vasprintf(&msg, fmt, ap) >= 0)
			f->msgs[f->count] = msg;
		va_end(ap);
	}
	f->count++;
}

void failures_print(const struct failures *f, FILE *out)
{
	for (size_t i = 0; i < f->count && i < FAILURES_KEPT; i++)
		fprintf(out, "FAIL: %s\n", f->msgs[i] ? f->msgs[i] : "?");
	if (f->count > FAILURES_KEPT)
		fprintf(out, "FAIL: ... and %zu more\n",
			f->count - FAILURES_KEPT);
}

void failures_free(struct failures *f)
{
	for (size_t i = 0; i < FAILURES_KEPT; i++)
		free(f->msgs[i]);
	memset(f, 0, sizeof(*f));
}

int checker_init(struct checker *c, struct tv_sim *sim, uint32_t nodes,
		 struct failures *fails)
{
	size_t n = (size_t)nodes * nodes;

	memset(c, 0, sizeof(*c));
	c->sim = sim;
	c->nodes = nodes;
	c->fails = fails;
	c->active = true;
	c->in_flight = calloc(n, sizeof(*c->in_flight));
	c->rx = calloc(n, sizeof(*c->rx));
	c->rx_known = calloc(n, sizeof(*c->rx_known));
	c->adv_cap = 1024;
	c->adv = calloc(c->adv_cap, sizeof(*c->adv));
	if (!c->in_flight || !c->rx || !c->rx_known || !c->adv) {
		checker_fini(c);
		return -ENOMEM;
	}
	return 0;
}

void checker_fini(struct checker *c)
{
	free(c->in_flight);
	free(c->rx);
	free(c->rx_known);
	free(c->adv);
	memset(c, 0, sizeof(*c));
}

void checker_set_rx(struct checker *c, uint32_t node, uint32_t peer,
		    const struct tv_channel_info *info)
{
	assert(node < c->nodes && peer < c->nodes);
	c->rx[node * c->nodes + peer] = *info;
	c->rx_known[node * c->nodes + peer] = true;
}

/* ---- advertised destinations: (node, peer, index) -> buffer --------- */

static uint64_t adv_key(const struct checker *c, uint32_t node, uint32_t peer,
			uint32_t index)
{
	/* +1 keeps every key non-zero: 0 marks an empty slot. */
	return ((uint64_t)(node * c->nodes + peer) + 1) << 32 | index;
}

static size_t adv_slot(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xFF51AFD7ED558CCDull;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

static struct adv_entry *adv_find(struct checker *c, uint64_t key)
{
	for (size_t i = adv_slot(key, c->adv_cap);; i = (i + 1) & (c->adv_cap - 1)) {
		if (c->adv[i].key == key)
			return &c->adv[i];
		if (c->adv[i].key == 0)
			return NULL;
	}
}

static int adv_grow(struct checker *c)
{
	size_t ncap = c->adv_cap * 2;
	struct adv_entry *old = c->adv, *nadv = calloc(ncap, sizeof(*nadv));

	if (!nadv)
		return -ENOMEM;
	for (size_t i = 0; i < c->adv_cap; i++) {
		size_t j;

		if (old[i].key == 0)
			continue;
		for (j = adv_slot(old[i].key, ncap); nadv[j].key;
		     j = (j + 1) & (ncap - 1))
			;
		nadv[j] = old[i];
	}
	free(old);
	c->adv = nadv;
	c->adv_cap = ncap;
	return 0;
}

static void adv_put(struct checker *c, const struct adv_entry *e)
{
	struct adv_entry *slot = adv_find(c, e->key);
	size_t i;

	if (slot) {
		*slot = *e;
		return;
	}
	if ((c->adv_used + 1) * 2 > c->adv_cap && adv_grow(c)) {
		failures_add(c->fails, "checker: out of memory");
		return;
	}
	for (i = adv_slot(e->key, c->adv_cap); c->adv[i].key;
	     i = (i + 1) & (c->adv_cap - 1))
		;
	c->adv[i] = *e;
	c->adv_used++;
}

/* Remove with backward shift, so probe chains stay unbroken. */
static void adv_del(struct checker *c, uint64_t key)
{
	struct adv_entry *e = adv_find(c, key);
	size_t mask = c->adv_cap - 1, hole, i;

	if (!e)
		return;
	hole = (size_t)(e - c->adv);
	c->adv[hole].key = 0;
	c->adv_used--;
	for (i = (hole + 1) & mask; c->adv[i].key; i = (i + 1) & mask) {
		size_t home = adv_slot(c->adv[i].key, c->adv_cap);

		/* Move it back if its home is not in (hole, i]. */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			c->adv[hole] = c->adv[i];
			c->adv[i].key = 0;
			hole = i;
		}
	}
}

/* ---- engine observer ------------------------------------------------- */

static const char *engine_ev_name(enum tv_engine_event_kind k)
{
	static const char *const names[] = {
		[TV_EV_MSG_SEND] = "MSG_SEND", [TV_EV_MSG_RECV] = "MSG_RECV",
		[TV_EV_ACK_SEND] = "ACK_SEND", [TV_EV_ACK_RECV] = "ACK_RECV",
		[TV_EV_REQ_ADVERTISE] = "REQ_ADVERTISE",
		[TV_EV_TENSOR_WRITE] = "TENSOR_WRITE",
		[TV_EV_RECV_DONE] = "RECV_DONE",
		[TV_EV_CHANNEL_ERROR] = "CHANNEL_ERROR",
	};

	if ((unsigned)k >= sizeof(names) / sizeof(names[0]) || !names[k])
		return "?";
	return names[k];
}

static void trace_engine(const struct checker *c,
			 const struct tv_engine_event *ev)
{
	printf("[%12" PRIu64 " ns] engine %u<->%u %-13s", tv_sim_now_ns(c->sim),
	       ev->node, ev->peer, engine_ev_name(ev->kind));
	if (ev->kind == TV_EV_MSG_SEND || ev->kind == TV_EV_MSG_RECV)
		printf(" %s", scenario_msg_type_name((int)ev->msg_type));
	printf(" idx=%u step=%" PRIu64 " name=%s addr=0x%" PRIx64
	       " len=%" PRIu64 " code=%d\n", ev->request_index, ev->step_id,
	       ev->name ? ev->name : "-", ev->addr, ev->length, ev->code);
}

static void on_msg_send(struct checker *c, const struct tv_engine_event *ev)
{
	int64_t *f = &c->in_flight[ev->node * c->nodes + ev->peer];

	if (++*f > 1)
		failures_add(c->fails,
			     "invariant: node %u has %" PRId64 " control messages in flight to node %u (max 1) at %" PRIu64 " ns (%s)",
			     ev->node, *f, ev->peer, tv_sim_now_ns(c->sim),
			     scenario_msg_type_name((int)ev->msg_type));
}

static void on_ack_recv(struct checker *c, const struct tv_engine_event *ev)
{
	int64_t *f = &c->in_flight[ev->node * c->nodes + ev->peer];

	if (--*f < 0) {
		failures_add(c->fails,
			     "invariant: node %u got an ACK from node %u with no message in flight at %" PRIu64 " ns",
			     ev->node, ev->peer, tv_sim_now_ns(c->sim));
		*f = 0;
	}
}

static uint64_t name_hash(const char *name)
{
	return name ? XXH3_64bits(name, strlen(name)) : 0;
}

/*
 * Forget the buffer of a finished request, so a later write for that
 * index is caught.  Only if step and name match: a request that failed
 * before it got an index reports a meaningless one.
 */
static void on_recv_done(struct checker *c, const struct tv_engine_event *ev)
{
	uint64_t key = adv_key(c, ev->node, ev->peer, ev->request_index);
	struct adv_entry *e = adv_find(c, key);

	if (e && e->step_id == ev->step_id && e->name_hash == name_hash(ev->name))
		adv_del(c, key);
}

void checker_engine_event(void *ctx, const struct tv_engine_event *ev)
{
	struct checker *c = ctx;
	struct adv_entry e;

	if (ev->node >= c->nodes || ev->peer >= c->nodes) {
		if (ev->kind != TV_EV_CHANNEL_ERROR)
			failures_add(c->fails, "engine event %s names node %u peer %u",
				     engine_ev_name(ev->kind), ev->node, ev->peer);
		return;
	}
	if (c->trace)
		trace_engine(c, ev);
	switch (ev->kind) {
	case TV_EV_MSG_SEND:
		on_msg_send(c, ev);
		break;
	case TV_EV_ACK_RECV:
		on_ack_recv(c, ev);
		break;
	case TV_EV_REQ_ADVERTISE:
		e.key = adv_key(c, ev->node, ev->peer, ev->request_index);
		e.addr = ev->addr;
		e.length = ev->length;
		e.rkey = ev->rkey;
		e.step_id = ev->step_id;
		e.name_hash = name_hash(ev->name);
		adv_put(c, &e);
		break;
	case TV_EV_RECV_DONE:
		on_recv_done(c, ev);
		break;
	case TV_EV_CHANNEL_ERROR:
		c->channel_errors++;
		if (c->active && !c->allow_errors)
			failures_add(c->fails,
				     "channel error on node %u towards node %u (code %d) at %" PRIu64 " ns",
				     ev->node, ev->peer, ev->code,
				     tv_sim_now_ns(c->sim));
		break;
	default:
		break;
	}
}

/* ---- simulator observer ---------------------------------------------- */

static void trace_sim(const struct tv_sim_event *ev)
{
	static const char *const names[] = {
		[TV_SIM_EV_POST_SEND] = "POST_SEND",
		[TV_SIM_EV_POST_RECV] = "POST_RECV",
		[TV_SIM_EV_DELIVER] = "DELIVER", [TV_SIM_EV_RNR] = "RNR",
		[TV_SIM_EV_CQE] = "CQE", [TV_SIM_EV_QP_STATE] = "QP_STATE",
		[TV_SIM_EV_CQ_OVERFLOW] = "CQ_OVERFLOW",
		[TV_SIM_EV_TIMER] = "TIMER", [TV_SIM_EV_USER] = "USER",
	};
	const char *name = (unsigned)ev->kind < sizeof(names) / sizeof(names[0]) &&
			   names[ev->kind] ? names[ev->kind] : "?";

	printf("[%12" PRIu64 " ns] sim    node %u peer %d %-9s op=%u st=%u",
	       ev->time_ns, ev->node,
	       ev->peer == UINT32_MAX ? -1 : (int)ev->peer, name, ev->opcode,
	       ev->status);
	if (ev->has_imm)
		printf(" imm=0x%x", ev->imm);
	printf(" addr=0x%" PRIx64 " len=%u wr_id=0x%" PRIx64 " qpn=%u rkey=0x%x\n",
	       ev->remote_addr, ev->length, ev->wr_id, ev->qp_num, ev->rkey);
}

static void check_msg_write(struct checker *c, const struct tv_sim_event *ev)
{
	const struct tv_channel_info *rx = &c->rx[ev->node * c->nodes + ev->peer];

	c->checked_msgs++;
	if (!c->rx_known[ev->node * c->nodes + ev->peer]) {
		failures_add(c->fails,
			     "invariant: control message from node %u to node %u, which has no channel to it",
			     ev->peer, ev->node);
		return;
	}
	if (ev->length > rx->rx_bytes || ev->remote_addr < rx->rx_addr ||
	    ev->remote_addr - rx->rx_addr > rx->rx_bytes - ev->length)
		failures_add(c->fails,
			     "invariant: control message write [0x%" PRIx64 ", +%u) from node %u overflows node %u's rx buffer [0x%" PRIx64 ", +%u)",
			     ev->remote_addr, ev->length, ev->peer, ev->node,
			     rx->rx_addr, rx->rx_bytes);
}

static void check_tensor_write(struct checker *c,
			       const struct tv_sim_event *ev)
{
	struct adv_entry *e =
		adv_find(c, adv_key(c, ev->node, ev->peer, ev->imm));

	c->checked_writes++;
	if (!e) {
		failures_add(c->fails,
			     "invariant: tensor write (imm %u, %u bytes) from node %u to node %u at %" PRIu64 " ns: no live request advertised a buffer for that index",
			     ev->imm, ev->length, ev->peer, ev->node,
			     ev->time_ns);
		return;
	}
	if (ev->length == 0)
		return;
	if (ev->rkey != e->rkey || ev->remote_addr < e->addr ||
	    ev->length > e->length ||
	    ev->remote_addr - e->addr > e->length - ev->length)
		failures_add(c->fails,
			     "invariant: tensor write [0x%" PRIx64 ", +%u) rkey 0x%x from node %u to node %u (index %u) outside the advertised [0x%" PRIx64 ", +%" PRIu64 ") rkey 0x%x",
			     ev->remote_addr, ev->length, ev->rkey, ev->peer,
			     ev->node, ev->imm, e->addr, e->length, e->rkey);
}

static void on_deliver(struct checker *c, const struct tv_sim_event *ev)
{
	if (ev->node >= c->nodes || ev->peer >= c->nodes)
		return;
	if (!ev->has_imm)
		return;
	if (ev->imm == TV_IMM_ACK) {
		if (ev->length != 0)
			failures_add(c->fails,
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

	if (c->trace)
		trace_sim(ev);
	if (ev->kind == TV_SIM_EV_DELIVER) {
		on_deliver(c, ev);
	} else if (ev->kind == TV_SIM_EV_CQE && ev->status != TV_WC_SUCCESS &&
		   c->active) {
		c->error_cqes++;
		if (!c->allow_errors)
			failures_add(c->fails,
				     "error completion on node %u: %s (opcode %u) at %" PRIu64 " ns",
				     ev->node,
				     tv_vf_wc_status_str((enum tv_vf_wc_status)ev->status),
				     ev->opcode, ev->time_ns);
	} else if (ev->kind == TV_SIM_EV_CQ_OVERFLOW && c->active) {
		failures_add(c->fails, "CQ overflow on node %u at %" PRIu64 " ns",
			     ev->node, ev->time_ns);
	}
}

void checker_quiescent(struct checker *c)
{
	for (uint32_t n = 0; n < c->nodes; n++)
		for (uint32_t p = 0; p < c->nodes; p++)
			if (c->in_flight[n * c->nodes + p] != 0)
				failures_add(c->fails,
					     "invariant: at quiescence node %u still waits for the ACK of a control message to node %u (the tensorflow #11416 hang)",
					     n, p);
}
