/*
 * A world of engines on the simulator for the engine's tests.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "harness.h"
#include "wire.h"

void h_opts_default(struct h_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->nodes = 2;
	o->queue_depth = 64;
	o->pool_block_bytes = 1u << 20;
	o->latency_ns = 2000;
	o->bytes_per_sec = 10ull << 30;
	o->max_inline_bytes = -1;
}

static struct h_adv *adv_find(struct h_world *w, uint32_t node,
			      uint32_t peer, uint32_t index)
{
	uint32_t i;

	for (i = w->nadv; i-- > 0;)
		if (w->adv[i].node == node && w->adv[i].peer == peer &&
		    w->adv[i].index == index && w->adv[i].live)
			return &w->adv[i];
	return NULL;
}

static void h_observe(void *ctx, const struct tv_engine_event *ev)
{
	struct h_world *w = ctx;
	struct h_adv *a;

	switch (ev->kind) {
	case TV_EV_MSG_SEND:
		/* One control message in flight per channel direction. */
		if (++w->msgs_in_flight[ev->node][ev->peer] > 1) {
			w->violations++;
			if (getenv("H_DEBUG"))
				fprintf(stderr, "violation: 2 msgs in flight %u->%u\n", ev->node, ev->peer);
		}
		if (w->msgs_in_flight[ev->node][ev->peer] > w->max_in_flight)
			w->max_in_flight = w->msgs_in_flight[ev->node][ev->peer];
		break;
	case TV_EV_ACK_RECV:
		if (--w->msgs_in_flight[ev->node][ev->peer] < 0) {
			w->violations++;
			if (getenv("H_DEBUG"))
				fprintf(stderr, "violation: ack without msg %u->%u\n", ev->node, ev->peer);
		}
		break;
	case TV_EV_REQ_ADVERTISE:
		a = adv_find(w, ev->node, ev->peer, ev->request_index);
		if (!a) {
			ck_assert_uint_lt(w->nadv, H_MAX_ADV);
			a = &w->adv[w->nadv++];
		}
		a->node = ev->node;
		a->peer = ev->peer;
		a->index = ev->request_index;
		a->addr = ev->addr;
		a->length = ev->length;
		a->live = true;
		w->last_index[ev->node] = ev->request_index;
		break;
	case TV_EV_RECV_DONE:
		a = adv_find(w, ev->node, ev->peer, ev->request_index);
		if (a)
			a->live = false;
		break;
	case TV_EV_CHANNEL_ERROR:
		w->channel_errors++;
		break;
	default:
		break;
	}
}

/* Every tensor write lands inside what its receiver advertised. */
static void h_sim_observe(void *arg, const struct tv_sim_event *ev)
{
	struct h_world *w = arg;
	struct h_adv *a;

	if (ev->kind == TV_SIM_EV_DELIVER && ev->has_imm &&
	    tv_imm_is_write(ev->imm)) {
		a = adv_find(w, ev->node, ev->peer, tv_imm_index(ev->imm));
		w->writes_checked++;
		if (!a || ev->length > a->length ||
		    (ev->length && (ev->remote_addr < a->addr ||
				    ev->remote_addr + ev->length >
					    a->addr + a->length))) {
			w->violations++;
			if (getenv("H_DEBUG"))
				fprintf(stderr, "violation: write imm %u to node %u t=%llu\n", ev->imm, ev->node, (unsigned long long)ev->time_ns);
		}
	}
	if (w->sim_hook)
		w->sim_hook(w, ev);
}

static void h_progress(void *arg, uint32_t node)
{
	tv_engine_progress(arg);
}

static void h_link(struct h_world *w, uint32_t a, uint32_t b)
{
	struct tv_channel_info ia, ib;

	ck_assert_int_eq(tv_channel_info(w->ch[a][b], &ia), 0);
	ck_assert_int_eq(tv_channel_info(w->ch[b][a], &ib), 0);
	ck_assert_int_eq(tv_channel_connect(w->ch[a][b], &ib), 0);
	ck_assert_int_eq(tv_channel_connect(w->ch[b][a], &ia), 0);
}

static void h_connect(struct h_world *w, uint32_t a, uint32_t b)
{
	ck_assert_int_eq(tv_channel_create(w->eng[a], b, &w->ch[a][b]), 0);
	ck_assert_int_eq(tv_channel_create(w->eng[b], a, &w->ch[b][a]), 0);
	h_link(w, a, b);
}

/* The out-of-band path: both ends start afresh and exchange again. */
static int h_reconnect(void *ctx, struct tv_channel *ch)
{
	struct h_world *w = ctx;
	uint32_t a, b;

	for (a = 0; a < w->nodes; a++)
		for (b = 0; b < w->nodes; b++)
			if (w->ch[a][b] == ch)
				goto found;
	return -ENOENT;
found:
	if (tv_channel_reset(w->ch[a][b]) || tv_channel_reset(w->ch[b][a]))
		return -EIO;
	/* A new connection: what was in flight on the old one is gone. */
	w->msgs_in_flight[a][b] = 0;
	w->msgs_in_flight[b][a] = 0;
	w->reconnects++;
	h_link(w, a, b);
	return 0;
}

struct h_world *h_world_new(const struct h_opts *o)
{
	struct tv_sim_config sc;
	struct tv_engine_config ec;
	struct h_world *w = calloc(1, sizeof(*w));
	uint32_t i, j;

	ck_assert_ptr_nonnull(w);
	tv_sim_config_default(&sc);
	sc.seed = o->seed;
	sc.num_nodes = o->nodes;
	sc.link.latency_ns = o->latency_ns;
	sc.link.bytes_per_sec = o->bytes_per_sec;
	ck_assert_int_eq(tv_sim_create(&sc, &w->sim), 0);
	tv_sim_set_observer(w->sim, h_sim_observe, w);
	w->nodes = o->nodes;
	w->flt = o->flt;
	for (i = 0; i < o->nodes; i++) {
		w->dev[i] = tv_sim_device(w->sim, i);
		if (w->flt)
			ck_assert_int_eq(tv_flt_wrap(w->flt, w->dev[i],
						     &w->dev[i]), 0);
		tv_engine_config_default(&ec);
		if (o->ack_timeout_ns)
			ec.ack_timeout_ns = o->ack_timeout_ns;
		ec.recv_timeout_ns = o->recv_timeout_ns;
		if (o->reconnect) {
			ec.reconnect = h_reconnect;
			ec.reconnect_ctx = w;
		}
		ec.node_id = i;
		ec.queue_depth = o->queue_depth;
		ec.pool_block_bytes = o->pool_block_bytes;
		ec.validate_checksum = o->validate;
		if (o->max_inline_bytes >= 0)
			ec.max_inline_bytes = (uint32_t)o->max_inline_bytes;
		ec.max_recv_bytes = o->max_recv_bytes;
		ec.observe = h_observe;
		ec.observe_ctx = w;
		ck_assert_int_eq(tv_engine_create(w->dev[i], &ec, &w->eng[i]),
				 0);
		tv_sim_set_progress(w->sim, i, h_progress, w->eng[i]);
	}
	for (i = 0; i < o->nodes; i++)
		for (j = i + 1; j < o->nodes; j++)
			h_connect(w, i, j);
	return w;
}

struct h_world *h_world_default(void)
{
	struct h_opts o;

	h_opts_default(&o);
	return h_world_new(&o);
}

struct tv_engine_stats h_stats(struct h_world *w, uint32_t node)
{
	struct tv_engine_stats s;

	tv_engine_stats(w->eng[node], &s);
	return s;
}

void h_run(struct h_world *w)
{
	uint32_t i;

	/* Work queued by API calls made outside callbacks goes out first. */
	for (i = 0; i < w->nodes; i++)
		tv_engine_progress(w->eng[i]);
	ck_assert_int_eq(tv_sim_run(w->sim, 0, 50u * 1000 * 1000), 0);
}

void h_world_free(struct h_world *w)
{
	uint32_t i;

	w->sim_hook = NULL; /* hooks may look at channels being freed */
	for (i = 0; i < w->nodes; i++)
		ck_assert_int_eq(tv_engine_destroy(w->eng[i]), 0);
	if (w->flt) {
		tv_flt_deactivate(w->flt);
		for (i = 0; i < w->nodes; i++)
			tv_flt_unwrap(w->dev[i]);
		tv_flt_destroy(w->flt);
	}
	ck_assert_int_eq(tv_sim_destroy(w->sim), 0);
	ck_assert_int_eq(w->violations, 0);
	free(w);
}

struct tv_tensor *h_tensor(struct h_world *w, uint32_t node,
			   enum tv_dtype dt, uint32_t rank,
			   const int64_t *dims, enum tv_placement place,
			   uint8_t fill)
{
	struct tv_shape shape = { .rank = rank };
	struct tv_tensor *t;
	uint8_t *p;
	size_t i;

	memcpy(shape.dims, dims, rank * sizeof(*dims));
	ck_assert_int_eq(tv_tensor_create(w->eng[node], dt, &shape, place, &t),
			 0);
	p = tv_tensor_data(t);
	for (i = 0; i < tv_tensor_size_bytes(t); i++)
		p[i] = (uint8_t)(fill + i);
	return t;
}

void h_recv_done(void *arg, const struct tv_status *st, struct tv_tensor *t)
{
	struct h_recv *r = arg;

	r->calls++;
	r->status = *st;
	r->tensor = t;
}

void h_recv(struct h_world *w, uint32_t node, uint32_t from, uint64_t step,
	    const char *name, enum tv_placement place, struct h_recv *r)
{
	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(tv_engine_recv_async(w->eng[node], w->ch[node][from],
					      step, name, place, h_recv_done, r),
			 0);
}

bool h_check_fill(struct tv_tensor *t, uint8_t fill)
{
	const uint8_t *p = tv_tensor_data(t);
	size_t i;

	for (i = 0; i < tv_tensor_size_bytes(t); i++)
		if (p[i] != (uint8_t)(fill + i))
			return false;
	return true;
}

void h_recv_expect(struct h_world *w, uint32_t node, uint32_t from,
		   uint64_t step, const char *name, uint8_t fill)
{
	struct h_recv r;

	h_recv(w, node, from, step, name, TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.status.code, TV_OK);
	ck_assert(h_check_fill(r.tensor, fill));
	h_recv_release(&r);
}

void h_recv_release(struct h_recv *r)
{
	tv_tensor_unref(r->tensor);
	r->tensor = NULL;
}
