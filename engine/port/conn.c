/*
 * Connections: one RC QP to one peer.  Writes and signals are posted
 * signaled (as MSCCL++ does: a flush counts completions), in-flight work
 * stays at most max_write_queue below the CQ size (MSCCL++ #415/#808:
 * past it a post waits in the connection's ring, it never overruns the
 * CQ), and the first failed completion fails the connection with its
 * verbs status name (never strerror of a status: MSCCL++ #315/#323).
 *
 * Everything here runs on the connection's thread (the proxy thread);
 * producers only read flush_done_pos and failed (atomics, see port_int.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "port_int.h"

#define PORT_SEND_WR_MAX 8192u /* MSCCL++'s maxSendWr */
#define PORT_MIN_RNR_TIMER 0x12

static uint64_t in_flight(const struct tv_port_conn *conn)
{
	return conn->posted - conn->completed;
}

void port_conn_fail(struct tv_port_conn *conn, int code, const char *fmt, ...)
{
	struct tv_port_event ev;
	va_list ap;

	if (atomic_load_explicit(&conn->failed, memory_order_relaxed))
		return; /* the first cause is the one that counts */
	va_start(ap, fmt);
	vsnprintf(conn->err, sizeof(conn->err), fmt, ap);
	va_end(ap);
	/* Release: a producer that sees failed reads the whole message. */
	atomic_store_explicit(&conn->failed, -EIO, memory_order_release);
	port_event_init(&ev, TV_PORT_EV_CONN_ERROR, conn->ctx->cfg.node_id);
	ev.peer = conn->peer;
	ev.qp_num = conn->qp->qp_num;
	ev.code = code;
	ev.msg = conn->err;
	port_emit(conn->ctx, &ev);
}

/* ---- set-up -------------------------------------------------------------- */

static int conn_alloc(struct tv_port_ctx *ctx, struct tv_port_conn *conn)
{
	conn->defer_cap = ctx->cfg.cq_size;
	conn->defer = calloc(conn->defer_cap, sizeof(*conn->defer));
	conn->flush_cap = ctx->cfg.fifo_size;
	conn->flushes = calloc(conn->flush_cap, sizeof(*conn->flushes));
	conn->scratch = aligned_alloc(64, PORT_SCRATCH_BYTES);
	conn->stage = calloc(PORT_STAGE_MAX, sizeof(*conn->stage));
	if (!conn->defer || !conn->flushes || !conn->scratch || !conn->stage)
		return -ENOMEM;
	memset(conn->scratch, 0, PORT_SCRATCH_BYTES);
	return 0;
}

static void conn_free(struct tv_port_conn *conn)
{
	free(conn->defer);
	free(conn->flushes);
	free(conn->scratch);
	free(conn->stage);
	free(conn);
}

static int conn_qp(struct tv_port_ctx *ctx, struct tv_port_conn *conn)
{
	bool imm = ctx->mode == TV_PORT_SIGNAL_WRITE_IMM;
	struct tv_vf_qp_init_attr init = {
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.max_recv_wr = imm ? ctx->cfg.recv_depth : 0,
		/* Small puts go in the WQE: no DMA read of the source. */
		.max_inline_data = PORT_INLINE_BYTES,
	};
	int ret;

	/* The send queue is MSCCL++'s 8192 deep; the CQ is what bounds. */
	init.max_send_wr = ctx->max_qp_wr < PORT_SEND_WR_MAX ?
				   ctx->max_qp_wr : PORT_SEND_WR_MAX;
	ret = tv_vf_create_cq(ctx->dev, ctx->cfg.cq_size, &conn->send_cq);
	if (ret)
		return ret;
	if (imm) {
		ret = tv_vf_create_cq(ctx->dev, ctx->cfg.recv_depth,
				      &conn->recv_cq);
		if (ret)
			goto err_send_cq;
	}
	init.send_cq = conn->send_cq;
	init.recv_cq = imm ? conn->recv_cq : conn->send_cq;
	ret = tv_vf_create_qp(ctx->pd, &init, &conn->qp);
	if (ret)
		goto err_recv_cq;
	/* Registered once: nothing is registered on the signal path. */
	ret = tv_vf_reg_mr(ctx->pd, conn->scratch, PORT_SCRATCH_BYTES,
			   TV_ACCESS_LOCAL_WRITE, &conn->scratch_mr);
	if (ret)
		goto err_qp;
	return 0;

err_qp:
	tv_vf_destroy_qp(conn->qp);
err_recv_cq:
	if (conn->recv_cq)
		tv_vf_destroy_cq(conn->recv_cq);
err_send_cq:
	tv_vf_destroy_cq(conn->send_cq);
	return ret;
}

int tv_port_conn_create(struct tv_port_ctx *ctx, uint32_t peer,
			struct tv_port_conn **conn_p)
{
	struct tv_port_conn *conn;
	int ret;

	if (!ctx || !conn_p)
		return -EINVAL;
	conn = calloc(1, sizeof(*conn));
	if (!conn)
		return -ENOMEM;
	conn->ctx = ctx;
	conn->peer = peer;
	ret = conn_alloc(ctx, conn);
	if (!ret)
		ret = conn_qp(ctx, conn);
	if (ret) {
		conn_free(conn);
		return ret;
	}
	ctx->nr_conns++;
	*conn_p = conn;
	return 0;
}

int tv_port_conn_endpoint(struct tv_port_conn *conn,
			  struct tv_vf_qp_endpoint *ep_p)
{
	return tv_vf_qp_endpoint(conn->qp, ep_p);
}

static int post_recvs(struct tv_port_conn *conn)
{
	/* No SGE: a zero-length write-with-immediate brings no data. */
	struct tv_vf_recv_wr wr = { .wr_id = 0, .num_sge = 0 };
	struct tv_vf_recv_wr *bad = NULL;
	int ret;

	while (conn->recvs_posted < conn->ctx->cfg.recv_depth) {
		ret = tv_vf_post_recv(conn->qp, &wr, &bad);
		if (ret)
			return ret;
		conn->recvs_posted++;
	}
	return 0;
}

int tv_port_conn_connect(struct tv_port_conn *conn,
			 const struct tv_vf_qp_endpoint *remote)
{
	struct tv_port_ctx *ctx = conn->ctx;
	struct tv_vf_qp_endpoint local;
	struct tv_vf_connect_cfg cc;
	int ret;

	if (conn->connected || !remote)
		return -EINVAL;
	ret = tv_vf_qp_endpoint(conn->qp, &local);
	if (ret)
		return ret;
	cc = ctx->connect;
	cc.timeout = ctx->cfg.qp_timeout;
	cc.retry_cnt = ctx->cfg.qp_retry_cnt;
	cc.rnr_retry = 7;
	cc.min_rnr_timer = PORT_MIN_RNR_TIMER;
	cc.access = TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE |
		    TV_ACCESS_REMOTE_READ;
	if (ctx->mode == TV_PORT_SIGNAL_ATOMIC)
		cc.access |= TV_ACCESS_REMOTE_ATOMIC;
	ret = tv_vf_connect_qp(conn->qp, &cc, &local, remote);
	if (!ret && ctx->mode == TV_PORT_SIGNAL_WRITE_IMM)
		ret = post_recvs(conn);
	if (ret)
		return ret;
	conn->connected = true;
	return 0;
}

int tv_port_conn_destroy(struct tv_port_conn *conn)
{
	bool failed;

	if (!conn)
		return 0;
	failed = atomic_load_explicit(&conn->failed, memory_order_relaxed);
	if (conn->nr_sems || conn->in_proxy)
		return -EBUSY;
	/* Work in flight would complete into freed memory: flush first,
	 * unless the QP failed (its work is flushed, or discarded now). */
	if (!failed && (in_flight(conn) || conn->defer_len))
		return -EBUSY;
	tv_vf_destroy_qp(conn->qp);
	tv_vf_dereg_mr(conn->scratch_mr);
	if (conn->recv_cq)
		tv_vf_destroy_cq(conn->recv_cq);
	tv_vf_destroy_cq(conn->send_cq);
	conn->ctx->nr_conns--;
	conn_free(conn);
	return 0;
}

void tv_port_conn_abort(struct tv_port_conn *conn, const char *why)
{
	port_conn_fail(conn, -ECONNABORTED, "aborted: %s", why ? why : "?");
}

uint32_t tv_port_conn_peer(const struct tv_port_conn *conn)
{
	return conn->peer;
}

const char *tv_port_conn_error(const struct tv_port_conn *conn)
{
	return atomic_load_explicit(&conn->failed, memory_order_acquire) ?
		       conn->err : "";
}

bool tv_port_conn_failed(const struct tv_port_conn *conn)
{
	return atomic_load_explicit(&conn->failed, memory_order_acquire) != 0;
}

void tv_port_conn_stats(const struct tv_port_conn *conn,
			struct tv_port_conn_stats *st_p)
{
	*st_p = conn->st;
	st_p->posted = conn->posted;
	st_p->completed = conn->completed;
}

/* ---- posting ------------------------------------------------------------- */

static const char *op_name(enum tv_port_post_op op)
{
	switch (op) {
	case TV_PORT_OP_WRITE: return "write";
	case TV_PORT_OP_ATOMIC_ADD: return "fetch-and-add";
	case TV_PORT_OP_WRITE_IMM: return "write-with-imm";
	}
	return "?";
}

static enum tv_vf_wr_opcode wr_opcode(enum tv_port_post_op op)
{
	switch (op) {
	case TV_PORT_OP_ATOMIC_ADD: return TV_WR_ATOMIC_FETCH_AND_ADD;
	case TV_PORT_OP_WRITE_IMM: return TV_WR_RDMA_WRITE_WITH_IMM;
	case TV_PORT_OP_WRITE: break;
	}
	return TV_WR_RDMA_WRITE;
}

static void emit_post(struct tv_port_conn *conn, const struct port_post *p,
		      enum tv_port_event_kind kind, uint64_t seq)
{
	struct tv_port_event ev;

	port_event_init(&ev, kind, conn->ctx->cfg.node_id);
	ev.peer = conn->peer;
	ev.qp_num = conn->qp->qp_num;
	ev.op = p->op;
	ev.seq = seq;
	ev.addr = p->remote_addr;
	ev.rkey = p->rkey;
	ev.length = p->length;
	ev.value = p->op == TV_PORT_OP_WRITE_IMM ? p->imm : p->add;
	port_emit(conn->ctx, &ev);
}

/*
 * The staged posts as one chain: WR i (1-based over the connection's
 * life) has wr_id i.  Signaled: the chain's last and every
 * PORT_SIGNAL_EVERY-th, so a completion says "everything up to wr_id is
 * done" (RC completes in order) and the CQ sees a fraction of the posts;
 * an error completes unsignaled WRs too.
 */
int port_conn_post_staged(struct tv_port_conn *conn)
{
	struct tv_vf_send_wr wr[PORT_STAGE_MAX], *bad = NULL;
	struct tv_vf_sge sge[PORT_STAGE_MAX];
	uint64_t first = conn->posted - conn->staged + 1;
	uint32_t n = conn->staged;
	int ret;

	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct port_post *p = &conn->stage[i];
		uint64_t id = first + i;
		bool inl = p->op != TV_PORT_OP_ATOMIC_ADD && p->length &&
			   p->length <= conn->qp->max_inline_data;

		sge[i] = (struct tv_vf_sge){ p->local_addr, p->length, p->lkey };
		wr[i] = (struct tv_vf_send_wr){
			.wr_id = id, .sg_list = &sge[i],
			.num_sge = p->length ? 1 : 0, .opcode = wr_opcode(p->op),
			.send_flags = (i + 1 == n || id % PORT_SIGNAL_EVERY == 0 ?
				       TV_SEND_SIGNALED : 0) |
				      (inl ? TV_SEND_INLINE : 0),
			.imm_data = p->imm, .remote_addr = p->remote_addr,
			.rkey = p->rkey, .compare_add = p->add,
			.next = i + 1 < n ? &wr[i + 1] : NULL,
		};
	}
	conn->staged = 0;
	ret = tv_vf_post_send(conn->qp, wr, &bad);
	if (ret) {
		port_conn_fail(conn, ret, "post_send of a %s failed: %s",
			       op_name(conn->stage[bad ? bad - wr : 0].op),
			       strerror(-ret));
		return -EIO;
	}
	for (uint32_t i = 0; i < n; i++)
		emit_post(conn, &conn->stage[i], TV_PORT_EV_POST, first + i);
	return 0;
}

void port_conn_batch(struct tv_port_conn *conn, bool on)
{
	conn->batching = on;
}

static int post_now(struct tv_port_conn *conn, const struct port_post *p)
{
	conn->stage[conn->staged++] = *p;
	conn->posted++;
	if (in_flight(conn) > conn->st.max_in_flight)
		conn->st.max_in_flight = in_flight(conn);
	/* Outside a proxy turn every post goes at once. */
	if (!conn->batching || conn->staged == PORT_STAGE_MAX)
		return port_conn_post_staged(conn);
	return 0;
}

/* Must this post wait (room, an injected hold)? */
static bool must_wait(struct tv_port_conn *conn)
{
	if (conn->ctx->cfg.test_breakage & TV_PORT_BREAK_NO_FLOW_CONTROL)
		return false;
	if (in_flight(conn) >= conn->ctx->cfg.max_write_queue)
		return true;
	if (!conn->hold_until_ns)
		return false;
	if (port_now_ns(conn->ctx) < conn->hold_until_ns)
		return true;
	conn->hold_until_ns = 0;
	return false;
}

static int submit(struct tv_port_conn *conn, const struct port_post *p)
{
	struct port_post *slot;

	if (atomic_load_explicit(&conn->failed, memory_order_relaxed))
		return -EIO;
	if (!conn->connected)
		return -ENOTCONN;
	/* Behind earlier deferred posts: a QP's order is the program's. */
	if (!conn->defer_len && !must_wait(conn))
		return post_now(conn, p);
	if (conn->defer_len == conn->defer_cap)
		return -EAGAIN;
	slot = &conn->defer[(conn->defer_head + conn->defer_len) %
			    conn->defer_cap];
	*slot = *p;
	conn->defer_len++;
	conn->st.deferred++;
	emit_post(conn, p, TV_PORT_EV_DEFER, conn->posted);
	return 0;
}

static int drain_deferred(struct tv_port_conn *conn)
{
	bool was = conn->batching;
	int n = 0;

	/* What waited goes out as chains, not one doorbell each. */
	conn->batching = true;
	while (conn->defer_len && !must_wait(conn)) {
		if (post_now(conn, &conn->defer[conn->defer_head]))
			break;
		conn->defer_head = (conn->defer_head + 1) % conn->defer_cap;
		conn->defer_len--;
		n++;
	}
	conn->batching = was;
	if (!was && port_conn_post_staged(conn))
		return -EIO;
	return tv_port_conn_failed(conn) ? -EIO : n;
}

int port_conn_post_room(const struct tv_port_conn *conn, uint32_t n)
{
	return conn->defer_cap - conn->defer_len >= n ? 0 : -EAGAIN;
}

void port_conn_delay_next(struct tv_port_conn *conn, uint64_t not_before_ns)
{
	conn->hold_until_ns = not_before_ns;
}

static int range_ok(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

int tv_port_conn_write(struct tv_port_conn *conn,
		       const struct tv_port_mem_handle *dst, uint64_t dst_off,
		       const struct tv_port_mem *src, uint64_t src_off,
		       uint64_t size_bytes)
{
	struct port_post p = { .op = TV_PORT_OP_WRITE };
	int ret;

	if (!conn || !dst || !src || src->ctx != conn->ctx)
		return -EINVAL;
	/* Checked here, not left to a remote access error. */
	if (!range_ok(dst_off, size_bytes, dst->size_bytes) ||
	    !range_ok(src_off, size_bytes, src->size) ||
	    size_bytes > PORT_MAX_MSG_BYTES)
		return -EINVAL;
	p.remote_addr = dst->addr + dst_off;
	p.rkey = dst->rkey;
	p.local_addr = (uint64_t)(uintptr_t)src->addr + src_off;
	p.lkey = src->mr->lkey;
	p.length = (uint32_t)size_bytes;
	ret = submit(conn, &p);
	if (!ret) {
		conn->st.writes++;
		conn->st.write_bytes += size_bytes;
	}
	return ret;
}

int tv_port_conn_update_and_sync(struct tv_port_conn *conn,
				 const struct tv_port_mem_handle *dst,
				 uint64_t dst_off, uint64_t *src,
				 uint64_t new_value)
{
	struct port_post p = { .op = TV_PORT_OP_ATOMIC_ADD };
	int ret;

	if (!conn || !dst || !src || !range_ok(dst_off, 8, dst->size_bytes) ||
	    ((dst->addr + dst_off) & 7))
		return -EINVAL;
	p.remote_addr = dst->addr + dst_off;
	p.rkey = dst->rkey;
	if (conn->ctx->mode == TV_PORT_SIGNAL_WRITE_IMM) {
		/* The target rebuilds 64 bits from 32: one step < 2^32. */
		if (new_value < *src || new_value - *src > UINT32_MAX)
			return -ERANGE;
		p.op = TV_PORT_OP_WRITE_IMM;
		p.imm = (uint32_t)new_value;
	} else {
		/* A delta (MSCCL++): the old value comes back to scratch. */
		p.add = new_value - *src;
		p.local_addr = (uint64_t)(uintptr_t)conn->scratch;
		p.lkey = conn->scratch_mr->lkey;
		p.length = 8;
	}
	ret = submit(conn, &p);
	if (ret)
		return ret;
	*src = new_value;
	if (p.op == TV_PORT_OP_WRITE_IMM)
		conn->st.imm_signals++;
	else
		conn->st.atomics++;
	return 0;
}

int tv_port_conn_write_and_sync(struct tv_port_conn *conn,
				const struct tv_port_mem_handle *dst,
				uint64_t dst_off,
				const struct tv_port_mem *src, uint64_t src_off,
				uint64_t size_bytes,
				const struct tv_port_mem_handle *sync,
				uint64_t sync_off, uint64_t *value,
				uint64_t new_value)
{
	struct port_post p = { .op = TV_PORT_OP_WRITE_IMM };
	int ret;

	if (!conn || !dst || !src || !value || src->ctx != conn->ctx ||
	    !range_ok(dst_off, size_bytes, dst->size_bytes) ||
	    !range_ok(src_off, size_bytes, src->size) ||
	    size_bytes > PORT_MAX_MSG_BYTES)
		return -EINVAL;
	if (conn->ctx->mode != TV_PORT_SIGNAL_WRITE_IMM) {
		/* Two work requests: the write, then the fetch-and-add. */
		if (port_conn_post_room(conn, 2))
			return -EAGAIN;
		ret = tv_port_conn_write(conn, dst, dst_off, src, src_off,
					 size_bytes);
		return ret ? ret : tv_port_conn_update_and_sync(
			conn, sync, sync_off, value, new_value);
	}
	/* One: the data, and the token's low 32 bits as its immediate (the
	 * receive completion comes after the data is placed). */
	if (new_value < *value || new_value - *value > UINT32_MAX)
		return -ERANGE;
	p.remote_addr = dst->addr + dst_off;
	p.rkey = dst->rkey;
	p.local_addr = (uint64_t)(uintptr_t)src->addr + src_off;
	p.lkey = src->mr->lkey;
	p.length = (uint32_t)size_bytes;
	p.imm = (uint32_t)new_value;
	ret = submit(conn, &p);
	if (ret)
		return ret;
	*value = new_value;
	conn->st.writes++;
	conn->st.write_bytes += size_bytes;
	conn->st.imm_signals++;
	return 0;
}

/* ---- completions --------------------------------------------------------- */

static int poll_send(struct tv_port_conn *conn)
{
	struct tv_vf_wc wc[64];
	uint32_t batch = conn->ctx->cfg.poll_batch < 64 ?
				 conn->ctx->cfg.poll_batch : 64;
	int n = tv_vf_poll_cq(conn->send_cq, (int)batch, wc);

	if (n < 0) {
		port_conn_fail(conn, n, "poll_cq of the send queue failed: %s",
			       strerror(-n));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		/* wr_id i: every WR up to i is done (in order, signaled or
		 * not); a flushed one names itself. */
		if (wc[i].wr_id > conn->completed && wc[i].wr_id <= conn->posted)
			conn->completed = wc[i].wr_id;
		if (wc[i].status == TV_WC_SUCCESS)
			continue;
		/* The first failure names the cause; flushes follow it. */
		port_conn_fail(conn, -EIO,
			       "an IB work item failed: %s (status %d, work "
			       "request %" PRIu64 " to node %u)",
			       tv_vf_wc_status_str(wc[i].status),
			       (int)wc[i].status, wc[i].wr_id, conn->peer);
	}
	return n;
}

/* Write-imm mode: the low 32 bits of the peer's new value, rebuilt. */
static void apply_imm(struct tv_port_conn *conn, uint32_t imm)
{
	uint64_t high = conn->imm_value & ~(uint64_t)UINT32_MAX;
	struct tv_port_event ev;

	if (imm < (uint32_t)conn->imm_value)
		high += 1ull << 32;
	conn->imm_value = high | imm;
	conn->st.imm_received++;
	port_sem_store_inbound(conn->imm_sem, conn->imm_value);
	port_event_init(&ev, TV_PORT_EV_IMM_APPLIED, conn->ctx->cfg.node_id);
	ev.peer = conn->peer;
	ev.qp_num = conn->qp->qp_num;
	ev.value = conn->imm_value;
	port_emit(conn->ctx, &ev);
}

static int recv_one(struct tv_port_conn *conn, const struct tv_vf_wc *wc)
{
	conn->recvs_posted--;
	if (wc->status != TV_WC_SUCCESS) {
		port_conn_fail(conn, -EIO,
			       "recv work completion failed: %s (status %d, "
			       "from node %u)",
			       tv_vf_wc_status_str(wc->status),
			       (int)wc->status, conn->peer);
		return -EIO;
	}
	/* Whatever the peer sends is checked: only signals come here (a
	 * write with immediate: zero bytes, or a put with its signal). */
	if (wc->opcode != TV_WC_RECV_RDMA_WITH_IMM ||
	    !(wc->wc_flags & TV_WC_WITH_IMM)) {
		port_conn_fail(conn, -EPROTO,
			       "node %u sent something that is not a signal "
			       "(opcode %d, %u bytes)", conn->peer,
			       (int)wc->opcode, wc->byte_len);
		return -EIO;
	}
	if (!conn->imm_sem) {
		port_conn_fail(conn, -EPROTO,
			       "node %u signalled a connection with no "
			       "semaphore", conn->peer);
		return -EIO;
	}
	apply_imm(conn, wc->imm_data);
	return 0;
}

static int poll_recv(struct tv_port_conn *conn)
{
	struct tv_vf_wc wc[16];
	int n = tv_vf_poll_cq(conn->recv_cq, 16, wc);

	if (n < 0) {
		port_conn_fail(conn, n, "poll_cq of the receive queue "
			       "failed: %s", strerror(-n));
		return 0;
	}
	for (int i = 0; i < n; i++)
		if (recv_one(conn, &wc[i]))
			return n;
	if (!atomic_load_explicit(&conn->failed, memory_order_relaxed) &&
	    post_recvs(conn))
		port_conn_fail(conn, -EIO, "post_recv failed");
	return n;
}

static int complete_flushes(struct tv_port_conn *conn)
{
	int n = 0;

	while (conn->flush_len) {
		struct port_flush *f = &conn->flushes[conn->flush_head];
		struct tv_port_event ev;

		if (conn->completed < f->want)
			break;
		/* Release: the completions counted happen-before it. */
		atomic_store_explicit(&conn->flush_done_pos, f->pos + 1,
				      memory_order_release);
		port_event_init(&ev, TV_PORT_EV_FLUSH_DONE,
				conn->ctx->cfg.node_id);
		ev.peer = conn->peer;
		ev.qp_num = conn->qp->qp_num;
		ev.pos = f->pos;
		ev.value = f->want;
		port_emit(conn->ctx, &ev);
		conn->flush_head = (conn->flush_head + 1) % conn->flush_cap;
		conn->flush_len--;
		n++;
	}
	return n;
}

/* A failed connection posts nothing more: what waits is dropped. */
static void drop_pending(struct tv_port_conn *conn)
{
	conn->defer_len = 0;
	conn->flush_len = 0;
}

int tv_port_conn_progress(struct tv_port_conn *conn)
{
	bool was_failed = tv_port_conn_failed(conn);
	int n = 0, r;

	if (!conn->connected)
		return 0;
	n += poll_send(conn);
	if (conn->recv_cq)
		n += poll_recv(conn);
	if (!tv_port_conn_failed(conn)) {
		r = drain_deferred(conn);
		n += r > 0 ? r : 0;
		n += complete_flushes(conn);
	}
	if (tv_port_conn_failed(conn)) {
		drop_pending(conn);
		if (!was_failed)
			return -EIO;
	}
	return n;
}

int port_conn_request_flush(struct tv_port_conn *conn, uint64_t pos)
{
	struct tv_port_event ev;
	struct port_flush *f;

	if (tv_port_conn_failed(conn))
		return -EIO;
	if (conn->flush_len == conn->flush_cap)
		return -EAGAIN;
	f = &conn->flushes[(conn->flush_head + conn->flush_len) %
			   conn->flush_cap];
	f->pos = pos;
	/* Everything posted or waiting to be, before this trigger. */
	f->want = conn->posted + conn->defer_len;
	conn->flush_len++;
	port_event_init(&ev, TV_PORT_EV_FLUSH_REQ, conn->ctx->cfg.node_id);
	ev.peer = conn->peer;
	ev.qp_num = conn->qp->qp_num;
	ev.pos = pos;
	ev.value = f->want;
	port_emit(conn->ctx, &ev);
	complete_flushes(conn);
	return 0;
}

int tv_port_conn_flush_poll(struct tv_port_conn *conn)
{
	if (tv_port_conn_progress(conn) < 0 || tv_port_conn_failed(conn))
		return -EIO;
	return !conn->defer_len && !in_flight(conn) ? 0 : -EAGAIN;
}

int tv_port_conn_flush(struct tv_port_conn *conn, uint64_t deadline_ns)
{
	int ret;

	for (;;) {
		ret = tv_port_conn_flush_poll(conn);
		if (ret != -EAGAIN)
			return ret;
		if (tv_vf_now_ns(conn->ctx->dev) >= deadline_ns)
			return -ETIMEDOUT;
		/* Sleeps until a completion, a hold's end or the deadline. */
		if (conn->hold_until_ns && conn->hold_until_ns < deadline_ns)
			tv_vf_wake_at(conn->ctx->dev, conn->hold_until_ns);
		ret = tv_vf_wait(conn->ctx->dev, deadline_ns);
		if (ret && ret != -ETIMEDOUT)
			return ret;
	}
}
