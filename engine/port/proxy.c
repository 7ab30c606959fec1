/*
 * The proxy service (MSCCL++'s ProxyService, era C): one consumer of the
 * FIFO that turns each trigger into work on its channel's connection.
 *
 *  - DATA: one RDMA write (source: a local memory id, destination: a
 *    peer's memory id);
 *  - FLAG: the channel's semaphore signal (fetch-and-add or write-imm);
 *  - SYNC: a flush request recorded on the connection with the position
 *    of its trigger; the connection completes it when its completions
 *    have caught up and publishes flush_done_pos.  The proxy goes on with
 *    the next trigger meanwhile: a slow connection never stalls the
 *    others (MSCCL++ #802; TV_PORT_BREAK_BLOCKING_FLUSH brings the stall
 *    back for the regression).
 *
 * A trigger whose connection has no room left (its deferred ring, its
 * flush ring) stays at the FIFO's tail until there is; one that names an
 * unknown id or a range outside its memory is dropped and recorded (the
 * proxy's error, and the channel's flushes fail with it).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fiu-local.h>

#include <tensorverbs/faults.h>

#include "port_int.h"

#define PROXY_DEFAULT_STALL_NS 100000ull  /* port/proxy/stall: 100 us */
#define PROXY_DEFAULT_SEM_DELAY_NS 50000ull /* port/sem/delay: 50 us */

int tv_port_proxy_create(struct tv_port_ctx *ctx,
			 const struct tv_port_fifo_vis *vis, void *vis_ctx,
			 struct tv_port_proxy **proxy_p)
{
	struct tv_port_proxy *p;
	int ret;

	if (!ctx || !proxy_p)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->ctx = ctx;
	p->mems = calloc(TV_PORT_MAX_MEMORIES, sizeof(*p->mems));
	p->sems = calloc(TV_PORT_MAX_SEMAPHORES, sizeof(*p->sems));
	p->conns = calloc(TV_PORT_MAX_SEMAPHORES, sizeof(*p->conns));
	ret = -ENOMEM;
	if (!p->mems || !p->sems || !p->conns)
		goto err;
	ret = tv_port_fifo_create(ctx->cfg.fifo_size, ctx->cfg.test_breakage,
				  vis, vis_ctx, &p->fifo);
	if (ret)
		goto err;
	p->fifo->observe = ctx->cfg.observe;
	p->fifo->observe_ctx = ctx->cfg.observe_ctx;
	p->fifo->node = ctx->cfg.node_id;
	ctx->nr_proxies++;
	*proxy_p = p;
	return 0;
err:
	free(p->mems);
	free(p->sems);
	free(p->conns);
	free(p);
	return ret;
}

int tv_port_proxy_destroy(struct tv_port_proxy *proxy)
{
	if (!proxy)
		return 0;
	if (proxy->nr_chans)
		return -EBUSY;
	for (uint32_t i = 0; i < proxy->nr_conns; i++)
		proxy->conns[i]->in_proxy = false;
	proxy->ctx->nr_proxies--;
	tv_port_fifo_destroy(proxy->fifo);
	free(proxy->mems);
	free(proxy->sems);
	free(proxy->conns);
	free(proxy);
	return 0;
}

int tv_port_proxy_add_local(struct tv_port_proxy *proxy,
			    struct tv_port_mem *mem, uint32_t *id_p)
{
	if (!mem || mem->ctx != proxy->ctx)
		return -EINVAL;
	if (proxy->nr_mems == TV_PORT_MAX_MEMORIES)
		return -ENOSPC;
	proxy->mems[proxy->nr_mems] = (struct port_memref){ .local = true,
							     .mem = mem };
	*id_p = proxy->nr_mems++;
	return 0;
}

int tv_port_proxy_add_remote(struct tv_port_proxy *proxy,
			     const struct tv_port_mem_handle *h,
			     uint32_t *id_p)
{
	if (!h || !h->size_bytes || h->addr + h->size_bytes < h->addr)
		return -EINVAL;
	if (proxy->nr_mems == TV_PORT_MAX_MEMORIES)
		return -ENOSPC;
	proxy->mems[proxy->nr_mems] = (struct port_memref){ .h = *h };
	*id_p = proxy->nr_mems++;
	return 0;
}

int tv_port_proxy_add_sem(struct tv_port_proxy *proxy,
			  struct tv_port_sem *sem, uint32_t *id_p)
{
	uint32_t i;

	if (!sem || sem->conn->ctx != proxy->ctx)
		return -EINVAL;
	if (proxy->nr_sems == TV_PORT_MAX_SEMAPHORES)
		return -ENOSPC;
	for (i = 0; i < proxy->nr_conns; i++)
		if (proxy->conns[i] == sem->conn)
			break;
	if (i == proxy->nr_conns) {
		/* A connection belongs to one proxy: one thread polls it. */
		if (sem->conn->in_proxy)
			return -EBUSY;
		sem->conn->in_proxy = true;
		proxy->conns[proxy->nr_conns++] = sem->conn;
	}
	proxy->sems[proxy->nr_sems] = sem;
	*id_p = proxy->nr_sems++;
	return 0;
}

struct tv_port_fifo *tv_port_proxy_fifo(struct tv_port_proxy *proxy)
{
	return proxy->fifo;
}

const char *tv_port_proxy_error(const struct tv_port_proxy *proxy)
{
	return atomic_load_explicit(&proxy->bad, memory_order_acquire) ?
		       proxy->err : "";
}

void tv_port_proxy_stats(const struct tv_port_proxy *proxy,
			 struct tv_port_proxy_stats *st_p)
{
	*st_p = proxy->st;
}

/* ---- triggers ------------------------------------------------------------ */

__attribute__((format(printf, 4, 5)))
static void bad_trigger(struct tv_port_proxy *proxy, uint64_t pos,
			const struct tv_port_trigger *t, const char *fmt, ...)
{
	struct tv_port_event ev;
	char why[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	proxy->st.bad_triggers++;
	if (!atomic_load_explicit(&proxy->bad, memory_order_relaxed)) {
		snprintf(proxy->err, sizeof(proxy->err),
			 "the trigger at FIFO position %" PRIu64 " is not "
			 "usable: %s", pos, why);
		atomic_store_explicit(&proxy->bad, true, memory_order_release);
	}
	port_event_init(&ev, TV_PORT_EV_BAD_TRIGGER, proxy->ctx->cfg.node_id);
	ev.pos = pos;
	ev.trig = *t;
	ev.msg = why;
	port_emit(proxy->ctx, &ev);
}

/* A DATA trigger's memory ids: a peer's destination, a local source. */
static int resolve_data(struct tv_port_proxy *proxy,
			const struct tv_port_trigger_fields *f, uint64_t pos,
			const struct tv_port_trigger *t,
			const struct port_memref **dst_p,
			const struct port_memref **src_p)
{
	if (f->dst_id >= proxy->nr_mems || f->src_id >= proxy->nr_mems) {
		bad_trigger(proxy, pos, t, "memory id %u or %u of %u",
			    f->dst_id, f->src_id, proxy->nr_mems);
		return -EINVAL;
	}
	*dst_p = &proxy->mems[f->dst_id];
	*src_p = &proxy->mems[f->src_id];
	if ((*dst_p)->local || !(*src_p)->local) {
		bad_trigger(proxy, pos, t, "destination %u must be a peer's "
			    "memory and source %u ours", f->dst_id, f->src_id);
		return -EINVAL;
	}
	return 0;
}

/* An injected late signal: this connection's posts wait a while. */
static void sem_delay(struct tv_port_proxy *proxy, struct tv_port_sem *sem)
{
	bool delay = false;
	uint64_t ns = 0;

	fiu_do_on("port/sem/delay",
		  (delay = true, ns = (uint64_t)TV_FLT_ARG(
				   PROXY_DEFAULT_SEM_DELAY_NS)));
	if (delay)
		port_conn_delay_next(sem->conn, port_now_ns(proxy->ctx) + ns);
}

/*
 * DATA, FLAG or both: a put with its signal is one work request where the
 * signal mode allows (write-imm: the data carries the immediate).
 */
static int handle_work(struct tv_port_proxy *proxy, struct tv_port_sem *sem,
		       const struct tv_port_trigger_fields *f, uint64_t pos,
		       const struct tv_port_trigger *t)
{
	const struct port_memref *dst = NULL, *src = NULL;
	bool data = f->type & TV_PORT_TRIGGER_DATA;
	bool flag = f->type & TV_PORT_TRIGGER_FLAG;
	int ret = 0;

	if (data && resolve_data(proxy, f, pos, t, &dst, &src))
		return -EINVAL;
	if (flag)
		sem_delay(proxy, sem);
	if (data && flag)
		ret = port_sem_put_signal(sem, &dst->h, f->dst_off, src->mem,
					  f->src_off, f->size_bytes);
	else if (data)
		ret = tv_port_conn_write(sem->conn, &dst->h, f->dst_off,
					 src->mem, f->src_off, f->size_bytes);
	else if (flag)
		ret = tv_port_sem_signal(sem);
	if (ret == -EINVAL)
		bad_trigger(proxy, pos, t, "%" PRIu64 " bytes from %" PRIu64
			    " of memory %u to %" PRIu64 " of memory %u: out "
			    "of range", f->size_bytes, f->src_off, f->src_id,
			    f->dst_off, f->dst_id);
	else if (ret == -ENOTCONN) /* nothing posted: never silently */
		bad_trigger(proxy, pos, t, "semaphore %u has no peer (no "
			    "remote handle, or its connection is not "
			    "connected)", f->sem_id);
	proxy->st.data += data;
	proxy->st.flags += flag;
	return ret;
}

/* Everything of one trigger, or nothing: -EAGAIN leaves it queued. */
static int handle(struct tv_port_proxy *proxy,
		  const struct tv_port_trigger *t, uint64_t pos)
{
	struct tv_port_trigger_fields f;
	struct tv_port_sem *sem;
	struct tv_port_conn *conn;
	uint32_t posts;
	int ret = 0;

	tv_port_trigger_unpack(t, &f);
	if (f.sem_id >= proxy->nr_sems || !f.type) {
		bad_trigger(proxy, pos, t, "semaphore id %u of %u, type %u",
			    f.sem_id, proxy->nr_sems, f.type);
		return 0;
	}
	sem = proxy->sems[f.sem_id];
	conn = sem->conn;
	if (tv_port_conn_failed(conn)) {
		proxy->st.dropped++; /* its flushes and waits say why */
		return 0;
	}
	posts = !!(f.type & TV_PORT_TRIGGER_DATA) +
		!!(f.type & TV_PORT_TRIGGER_FLAG);
	if (port_conn_post_room(conn, posts) ||
	    ((f.type & TV_PORT_TRIGGER_SYNC) &&
	     conn->flush_len == conn->flush_cap))
		return -EAGAIN;
	if (posts)
		ret = handle_work(proxy, sem, &f, pos, t);
	if (!ret && (f.type & TV_PORT_TRIGGER_SYNC)) {
		ret = port_conn_request_flush(conn, pos);
		proxy->st.syncs++;
		if (!ret && (proxy->ctx->cfg.test_breakage &
			     TV_PORT_BREAK_BLOCKING_FLUSH))
			proxy->blocked_on = conn;
	}
	/* -EIO: the connection failed now; -EINVAL, -ENOTCONN: a bad
	 * trigger. */
	assert(ret != -EAGAIN);
	return 0;
}

static void emit_handle(struct tv_port_proxy *proxy, uint64_t pos,
			const struct tv_port_trigger *t)
{
	struct tv_port_event ev;

	port_event_init(&ev, TV_PORT_EV_HANDLE, proxy->ctx->cfg.node_id);
	ev.pos = pos;
	ev.trig = *t;
	port_emit(proxy->ctx, &ev);
}

/* TV_PORT_BREAK_BLOCKING_FLUSH: MSCCL++'s old blocking conn.flush(). */
static bool blocked(struct tv_port_proxy *proxy)
{
	struct tv_port_conn *c = proxy->blocked_on;

	if (!c)
		return false;
	if (tv_port_conn_failed(c) || (!c->flush_len && !c->defer_len &&
				       c->posted == c->completed)) {
		proxy->blocked_on = NULL;
		return false;
	}
	return true;
}

static bool stalled(struct tv_port_proxy *proxy)
{
	bool stall = false;
	uint64_t ns = 0;

	if (proxy->stall_until_ns) {
		if (port_now_ns(proxy->ctx) < proxy->stall_until_ns)
			return true;
		proxy->stall_until_ns = 0;
	}
	fiu_do_on("port/proxy/stall",
		  (stall = true,
		   ns = (uint64_t)TV_FLT_ARG(PROXY_DEFAULT_STALL_NS)));
	if (stall)
		proxy->stall_until_ns = port_now_ns(proxy->ctx) + ns;
	return stall;
}

int tv_port_proxy_progress(struct tv_port_proxy *proxy, uint32_t budget)
{
	struct tv_port_trigger t;
	uint64_t pos;
	int n = 0;

	if (stalled(proxy))
		return 0;
	for (uint32_t i = 0; i < proxy->nr_conns; i++) {
		struct tv_port_conn *c = proxy->conns[i];
		int r;

		/* MSCCL++ before #415: completions were polled only by a
		 * flush, so a burst of puts filled the CQ unseen. */
		if ((proxy->ctx->cfg.test_breakage &
		     TV_PORT_BREAK_NO_FLOW_CONTROL) && !c->flush_len)
			continue;
		r = tv_port_conn_progress(c);
		n += r > 0 ? r : 0;
	}
	/* A turn's posts go out as one chain per connection (a doorbell). */
	for (uint32_t i = 0; i < proxy->nr_conns; i++)
		port_conn_batch(proxy->conns[i], true);
	for (uint32_t k = 0; k < budget && !blocked(proxy); k++) {
		if (!tv_port_fifo_poll(proxy->fifo, &t, &pos))
			break;
		if (handle(proxy, &t, pos) == -EAGAIN)
			break; /* its connection has no room yet */
		emit_handle(proxy, pos, &t);
		tv_port_fifo_pop(proxy->fifo);
		proxy->st.triggers++;
		n++;
	}
	for (uint32_t i = 0; i < proxy->nr_conns; i++) {
		port_conn_batch(proxy->conns[i], false);
		port_conn_post_staged(proxy->conns[i]);
	}
	return n;
}

/* ---- for the owner: when is the proxy worth progressing? ----------------- */

bool tv_port_proxy_idle(const struct tv_port_proxy *proxy)
{
	for (uint32_t i = 0; i < proxy->nr_conns; i++) {
		const struct tv_port_conn *c = proxy->conns[i];

		if (c->posted != c->completed || c->defer_len || c->flush_len)
			return false;
	}
	return tv_port_fifo_head(proxy->fifo) == proxy->fifo->tail;
}

/* The earliest of the times still ahead: a stall's end, a hold's. */
uint64_t tv_port_proxy_wake_ns(const struct tv_port_proxy *proxy)
{
	uint64_t now = port_now_ns(proxy->ctx);
	uint64_t t = proxy->stall_until_ns > now ? proxy->stall_until_ns : 0;

	for (uint32_t i = 0; i < proxy->nr_conns; i++) {
		uint64_t h = proxy->conns[i]->hold_until_ns;

		if (h > now && (!t || h < t))
			t = h;
	}
	return t;
}
