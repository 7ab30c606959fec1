/*
 * Posting: a peer's waiting post lists go round-robin to its QPs that are
 * up, have a free window and send-queue slots for the whole list (slots
 * counted as mlx5 frees them: only through polled completions), and, when
 * the rows go through staging, a free staging slot.  Only a list's last
 * READ is signaled.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <fiu-local.h>

#include "gather_int.h"

bool g_pend_push(struct g_peer *p, uint32_t li, bool front)
{
	if (p->pend_len == p->pend_cap) {
		size_t cap = p->pend_cap ? p->pend_cap * 2 : 16;
		uint32_t *n = malloc(cap * sizeof(*n));

		if (!n)
			return false;
		for (size_t i = 0; i < p->pend_len; i++)
			n[i] = p->pend[(p->pend_head + i) % p->pend_cap];
		free(p->pend);
		p->pend = n;
		p->pend_cap = cap;
		p->pend_head = 0;
	}
	if (front) {
		p->pend_head = (p->pend_head + p->pend_cap - 1) % p->pend_cap;
		p->pend[p->pend_head] = li;
	} else {
		p->pend[(p->pend_head + p->pend_len) % p->pend_cap] = li;
	}
	p->pend_len++;
	return true;
}

static uint32_t pend_pop(struct g_peer *p)
{
	uint32_t li = p->pend[p->pend_head];

	p->pend_head = (p->pend_head + 1) % p->pend_cap;
	p->pend_len--;
	return li;
}

uint64_t g_sq_used(const struct g_qp *q)
{
	return q->posted_wrs - q->reclaimed_wrs;
}

static uint64_t wr_id(const struct g_op *op, uint32_t li, uint32_t entry)
{
	return (op->no & 0xffff) << 48 | (uint64_t)li << 16 | entry;
}

/* The QP that takes list l now, or G_NONE. */
static uint32_t pick_qp(struct tv_gather_ctx *ctx, struct g_peer *p,
			const struct g_list *l)
{
	uint32_t nq = ctx->cfg.qps_per_peer;

	for (uint32_t i = 0; i < nq; i++) {
		uint32_t k = (p->next_qp + i) % nq;
		struct g_qp *q = &p->cli[k];

		if (q->state != GQ_UP || q->inflight >= ctx->cfg.window)
			continue;
		if (g_sq_used(q) + l->n > ctx->sq_depth)
			continue;
		p->next_qp = (k + 1) % nq;
		return k;
	}
	return G_NONE;
}

/*
 * quiver's old CQ_MOD: only post lists landing on the last QP signal,
 * and the very last one of a peer (its final drain).
 */
static bool signaled(const struct tv_gather_ctx *ctx, uint32_t li,
		     uint32_t k, uint32_t i, uint32_t n)
{
	const struct g_op *op = &ctx->op;

	if (i + 1 != n)
		return false;
	return !g_broken(ctx, TV_GATHER_BREAK_SIGNAL_ALIASING) ||
	       k + 1 == ctx->cfg.qps_per_peer || li + 1 == op->nlists ||
	       op->lists[li + 1].peer != op->lists[li].peer;
}

static void build_wrs(struct tv_gather_ctx *ctx, struct g_list *l,
		      uint32_t li, uint32_t k)
{
	struct g_op *op = &ctx->op;
	const struct tv_gather_part_handle *h = &ctx->peers[l->peer].h;
	uint32_t rb = ctx->cfg.row_bytes;

	for (uint32_t i = 0; i < l->n; i++) {
		const struct g_rrow *r = &op->rr[l->first + i];
		uint8_t *dst;

		dst = op->direct ? op->out + (size_t)r->pos * rb :
				   ctx->staging +
					   ((size_t)l->stage *
						    ctx->cfg.post_list + i) * rb;
		ctx->sges[i] = (struct tv_vf_sge){
			.addr = (uint64_t)(uintptr_t)dst, .length = rb,
			.lkey = op->direct ? ctx->out_mr->lkey :
					     ctx->staging_mr->lkey,
		};
		/* quiver's layout: the replicated rows, then the range. */
		ctx->wrs[i] = (struct tv_vf_send_wr){
			.wr_id = wr_id(op, li, i), .sg_list = &ctx->sges[i],
			.num_sge = 1, .opcode = TV_WR_RDMA_READ,
			.send_flags = signaled(ctx, li, k, i, l->n) ?
					      TV_SEND_SIGNALED : 0,
			.remote_addr = h->addr + (h->replicated_rows + r->id -
						  h->first) * rb,
			.rkey = h->rkey,
			.next = i + 1 < l->n ? &ctx->wrs[i + 1] : NULL,
		};
	}
	/* A READ in the middle of the list fails at the responder. */
	fiu_do_on("gather/read/error", ctx->wrs[l->n / 2].rkey ^= 0x80);
}

/*
 * The device refused (-ENOMEM: the send queue is full) after taking the
 * first posted_n READs.  Which of those ran is unknown (the unsignaled
 * ones that did leave no completion), so the QP goes to ERR, which stops
 * any more placement, and the whole list is read again elsewhere; the
 * flushes of what it took are not this list's any more (on_wc).
 */
static void post_refused(struct tv_gather_ctx *ctx, uint32_t li, int ret)
{
	struct g_list *l = &ctx->op.lists[li];
	struct g_qp *q = &ctx->peers[l->peer].cli[l->qp];
	struct tv_vf_qp_attr a = { .qp_state = TV_QPS_ERR };

	ctx->st.post_failures++;
	g_set_error(ctx, "post_send of %u READs on QP %u to node %u: %s "
		    "(%llu slots held of %u)", l->n, l->qp, l->peer,
		    strerror(-ret), (unsigned long long)g_sq_used(q),
		    ctx->sq_depth);
	g_qp_fail(ctx, l->peer, l->qp, ret);
	tv_vf_modify_qp(q->qp, &a, TV_QP_STATE);
	l->fail_from = 0;
	l->cause = ret;
	g_list_finish(ctx, li);
}

static void post_list(struct tv_gather_ctx *ctx, uint32_t li, uint32_t k)
{
	struct g_list *l = &ctx->op.lists[li];
	struct g_qp *q = &ctx->peers[l->peer].cli[k];
	struct tv_vf_send_wr *bad = NULL;
	int ret;

	build_wrs(ctx, l, li, k);
	l->qp = k;
	l->qp_seq0 = q->posted_wrs;
	l->inflight = true;
	l->fail_from = l->n;
	q->inflight++;
	ret = tv_vf_post_send(q->qp, ctx->wrs, &bad);
	l->posted_n = ret ? (bad ? (uint32_t)(bad - ctx->wrs) : 0) : l->n;
	q->posted_wrs += l->posted_n;
	if (g_sq_used(q) > ctx->st.max_sq_used)
		ctx->st.max_sq_used = g_sq_used(q);
	ctx->st.reads_posted += l->posted_n;
	ctx->st.post_lists++;
	ctx->op.res.post_lists++;
	g_emit(ctx, TV_GATHER_EV_POST, l->peer, k, li, l->posted_n, ret,
	       l->attempts);
	if (!ret)
		return;
	post_refused(ctx, li, ret);
}

static bool peer_dead(const struct tv_gather_ctx *ctx, const struct g_peer *p)
{
	if (!p->has_handle)
		return true;
	for (uint32_t k = 0; k < ctx->cfg.qps_per_peer; k++)
		if (p->cli[k].state != GQ_DEAD)
			return false;
	return true;
}

/* Why a peer's QPs are gone: the first one's failure. */
static int peer_cause(const struct tv_gather_ctx *ctx, const struct g_peer *p)
{
	if (!p->has_handle)
		return -ENOTCONN;
	for (uint32_t k = 0; k < ctx->cfg.qps_per_peer; k++)
		if (p->cli[k].cause)
			return p->cli[k].cause;
	return -EHOSTDOWN;
}

static int dispatch_peer(struct tv_gather_ctx *ctx, uint32_t peer)
{
	struct g_peer *p = &ctx->peers[peer];
	int posted = 0;

	while (p->pend_len) {
		uint32_t li = p->pend[p->pend_head];
		struct g_list *l = &ctx->op.lists[li];
		uint32_t k;

		if (ctx->op.expired || peer_dead(ctx, p)) {
			int st = ctx->op.expired ? -ETIMEDOUT : -EHOSTDOWN;

			pend_pop(p);
			g_fail_rows(ctx, l, 0, st,
				    ctx->op.expired ? st :
				    l->cause ? l->cause : peer_cause(ctx, p));
			continue;
		}
		if (!ctx->op.direct && l->stage == G_NONE &&
		    !ctx->nstage_free)
			return posted;
		k = pick_qp(ctx, p, l);
		if (k == G_NONE)
			return posted;
		pend_pop(p);
		if (!ctx->op.direct && l->stage == G_NONE)
			l->stage = ctx->stage_free[--ctx->nstage_free];
		post_list(ctx, li, k);
		posted++;
	}
	return posted;
}

int g_dispatch(struct tv_gather_ctx *ctx)
{
	int posted = 0;

	if (!ctx->op.active)
		return 0;
	for (uint32_t p = 0; p < ctx->cfg.nodes; p++)
		if (p != ctx->cfg.node_id)
			posted += dispatch_peer(ctx, p);
	return posted;
}
