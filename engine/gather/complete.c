/*
 * Completions: a post list is accounted for when the completion of its
 * last posted READ is polled (success: every READ of it landed, RC
 * completes in order; error or flush: the READs before the first failed
 * one landed, the rest did not).  Failed rows are retried as a new post
 * list on the peer's QPs until max_retries, then named in the result.
 * The gather ends, exactly once, when every list is accounted for.
 */
#include <errno.h>
#include <string.h>

#include "gather_int.h"

static void copy_out(struct tv_gather_ctx *ctx, const struct g_list *l,
		     uint32_t upto)
{
	struct g_op *op = &ctx->op;
	uint32_t rb = ctx->cfg.row_bytes;

	if (op->direct || l->stage == G_NONE)
		return;
	for (uint32_t i = 0; i < upto; i++) {
		const struct g_rrow *r = &op->rr[l->first + i];

		memcpy(op->out + (size_t)r->pos * rb,
		       ctx->staging + ((size_t)l->stage * ctx->cfg.post_list +
				       i) * rb, rb);
	}
}

static void stage_release(struct tv_gather_ctx *ctx, struct g_list *l)
{
	if (l->stage == G_NONE)
		return;
	ctx->stage_free[ctx->nstage_free++] = l->stage;
	l->stage = G_NONE;
}

static void list_done(struct tv_gather_ctx *ctx, struct g_list *l)
{
	stage_release(ctx, l);
	l->done = true;
	ctx->op.open--;
}

void g_fail_rows(struct tv_gather_ctx *ctx, struct g_list *l, uint32_t from,
		 int status, int cause)
{
	struct g_op *op = &ctx->op;

	for (uint32_t i = from; i < l->n; i++) {
		struct g_rrow *r = &op->rr[l->first + i];

		if (op->nerrs == op->errs_cap)
			break; /* cannot happen: errs sized at the end */
		op->errs[op->nerrs++] = (struct tv_gather_row_error){
			.index = r->pos, .id = r->id, .peer = r->peer,
			.status = r->status ? r->status : status,
			.cause = cause, .attempts = l->attempts + 1,
		};
	}
	ctx->st.rows_failed += l->n - from;
	g_emit(ctx, TV_GATHER_EV_LIST_DONE, l->peer, l->qp,
	       (uint64_t)(l - op->lists), l->n - from, cause ? cause : status,
	       l->attempts);
	list_done(ctx, l);
}

/* What is left of l after its first failure goes again, or fails. */
static void list_retry_or_fail(struct tv_gather_ctx *ctx, uint32_t li)
{
	struct g_op *op = &ctx->op;
	struct g_list *l = &op->lists[li];
	uint32_t from = l->fail_from;

	copy_out(ctx, l, from);
	if (op->expired || l->attempts >= ctx->cfg.max_retries) {
		g_fail_rows(ctx, l, from, -EIO,
			    op->expired ? -ETIMEDOUT : l->cause);
		return;
	}
	/* Rows before the failure landed: only the rest is read again,
	 * into the first entries of the same staging slot. */
	for (uint32_t i = from; i < l->n; i++)
		op->rr[l->first + i].status = 0;
	l->first += from;
	l->n -= from;
	l->fail_from = l->n;
	l->attempts++;
	l->qp = G_NONE;
	ctx->st.retries++;
	op->res.retries++;
	if (!g_pend_push(&ctx->peers[l->peer], li, true))
		g_fail_rows(ctx, l, 0, -ENOMEM, -ENOMEM);
}

void g_list_finish(struct tv_gather_ctx *ctx, uint32_t li)
{
	struct g_list *l = &ctx->op.lists[li];
	struct g_qp *q = &ctx->peers[l->peer].cli[l->qp];

	l->inflight = false;
	q->inflight--;
	if (l->fail_from == l->n) {
		copy_out(ctx, l, l->n);
		ctx->st.bytes_read += (uint64_t)l->n * ctx->cfg.row_bytes;
		g_emit(ctx, TV_GATHER_EV_LIST_DONE, l->peer, l->qp, li, l->n,
		       0, l->attempts);
		list_done(ctx, l);
		return;
	}
	list_retry_or_fail(ctx, li);
}

/* Lists in flight on a QP that is being destroyed: none of them landed. */
void g_qp_drop_lists(struct tv_gather_ctx *ctx, uint32_t peer, uint32_t k,
		     int cause)
{
	struct g_op *op = &ctx->op;

	for (size_t li = 0; op->active && li < op->nlists; li++) {
		struct g_list *l = &op->lists[li];

		if (!l->inflight || l->peer != peer || l->qp != k)
			continue;
		l->fail_from = 0;
		l->cause = cause;
		g_list_finish(ctx, (uint32_t)li);
	}
	ctx->peers[peer].cli[k].inflight = 0;
}

/* quiver's old accounting: one signaled completion stands for its round. */
static void alias_complete(struct tv_gather_ctx *ctx, struct g_list *done)
{
	struct g_op *op = &ctx->op;

	for (size_t li = 0; li < op->nlists; li++) {
		struct g_list *l = &op->lists[li];
		struct g_qp *q;

		if (!l->inflight || l == done || l->peer != done->peer)
			continue;
		q = &ctx->peers[l->peer].cli[l->qp];
		q->reclaimed_wrs = q->posted_wrs;
		g_list_finish(ctx, (uint32_t)li);
	}
}

static void on_error(struct tv_gather_ctx *ctx, struct g_list *l,
		     uint32_t entry, enum tv_vf_wc_status status)
{
	struct g_qp *q = &ctx->peers[l->peer].cli[l->qp];
	int st = (int)status;

	ctx->st.error_cqes++;
	if (q->state == GQ_UP)
		g_set_error(ctx, "READ of row %llu from node %u on QP %u: %s",
			    (unsigned long long)ctx->op.rr[l->first + entry].id,
			    l->peer, l->qp, tv_vf_wc_status_str(status));
	g_qp_fail(ctx, l->peer, l->qp, st);
	ctx->op.rr[l->first + entry].status = st;
	if (entry < l->fail_from) {
		/* The first failure of this attempt names the cause. */
		l->fail_from = entry;
		l->cause = status == TV_WC_WR_FLUSH_ERR && q->cause ? q->cause :
								      st;
	}
}

static void on_wc(struct tv_gather_ctx *ctx, const struct tv_vf_wc *wc)
{
	struct g_op *op = &ctx->op;
	uint32_t li = (uint32_t)(wc->wr_id >> 16);
	uint32_t entry = (uint32_t)(wc->wr_id & 0xffff);
	struct g_list *l;
	struct g_qp *q;

	if (!op->active || (wc->wr_id >> 48) != (op->no & 0xffff) ||
	    li >= op->nlists)
		return; /* not ours any more: a reset QP's, counted nowhere */
	l = &op->lists[li];
	if (!l->inflight || entry >= l->posted_n)
		return;
	q = &ctx->peers[l->peer].cli[l->qp];
	/* A flush from the QP an earlier attempt of this list was refused
	 * on (post_refused): that attempt is accounted for already. */
	if (wc->qp_num != q->qp->qp_num)
		return;
	/* mlx5 frees slots up to the polled WQE, signaled or in error. */
	if (l->qp_seq0 + entry + 1 > q->reclaimed_wrs)
		q->reclaimed_wrs = l->qp_seq0 + entry + 1;
	if (wc->status != TV_WC_SUCCESS) {
		if (g_broken(ctx, TV_GATHER_BREAK_IGNORE_ERRORS)) {
			/* "Request failed", and carry on as if it had not. */
			ctx->st.error_cqes++;
		} else {
			on_error(ctx, l, entry, wc->status);
		}
	}
	if (entry + 1 < l->posted_n)
		return;
	if (g_broken(ctx, TV_GATHER_BREAK_SIGNAL_ALIASING))
		alias_complete(ctx, l);
	g_list_finish(ctx, li);
}

int g_poll(struct tv_gather_ctx *ctx)
{
	int total = 0, n;

	do {
		n = tv_vf_poll_cq(ctx->cq, 64, ctx->wcs);
		if (n == -EOVERFLOW) {
			g_set_error(ctx, "the completion queue overflowed: "
				    "rebuilt, its QPs reconnect");
			ctx->st.error_cqes++;
			return g_cq_rebuild(ctx);
		}
		if (n < 0) {
			g_set_error(ctx, "poll_cq: %s", strerror(-n));
			return n;
		}
		for (int i = 0; i < n; i++)
			on_wc(ctx, &ctx->wcs[i]);
		total += n;
	} while (n == 64);
	return total;
}

/* The deadline: nothing more is posted, what is in flight is flushed. */
void g_expire(struct tv_gather_ctx *ctx)
{
	struct tv_vf_qp_attr a = { .qp_state = TV_QPS_ERR };

	ctx->op.expired = true;
	g_set_error(ctx, "gather %llu: the deadline passed",
		    (unsigned long long)ctx->op.no);
	for (uint32_t p = 0; p < ctx->cfg.nodes; p++) {
		if (p == ctx->cfg.node_id)
			continue;
		for (uint32_t k = 0; k < ctx->cfg.qps_per_peer; k++) {
			struct g_qp *q = &ctx->peers[p].cli[k];

			if (!q->inflight)
				continue;
			g_qp_fail(ctx, p, k, -ETIMEDOUT);
			tv_vf_modify_qp(q->qp, &a, TV_QP_STATE);
		}
	}
	g_dispatch(ctx); /* fails what waits */
}

void g_check_end(struct tv_gather_ctx *ctx)
{
	struct g_op *op = &ctx->op;

	if (!op->active || op->open)
		return;
	op->active = false;
	op->unreported = true;
	op->res.failed_rows = op->nerrs;
	op->res.errors = op->errs;
	op->res.elapsed_ns = tv_vf_now_ns(ctx->dev) - op->t0_ns;
	op->result = op->nerrs ? -EIO : 0;
	ctx->st.rows_local += op->res.local_rows;
	ctx->st.rows_replicated += op->res.replicated_rows;
	ctx->st.rows_remote += op->res.remote_rows;
	if (op->nerrs)
		ctx->st.gathers_failed++;
	g_emit(ctx, TV_GATHER_EV_END, G_NONE, G_NONE, 0,
	       (uint32_t)op->nerrs, op->result, 0);
}

/*
 * The device keeps one timer, the earliest asked for, and forgets it once
 * it fired: what the engine still waits for is asked again each time.
 */
static void arm_timers(struct tv_gather_ctx *ctx)
{
	if (ctx->op.active && !ctx->op.expired && ctx->op.deadline_ns)
		tv_vf_wake_at(ctx->dev, ctx->op.deadline_ns);
	for (uint32_t p = 0; p < ctx->cfg.nodes; p++)
		for (uint32_t k = 0; p != ctx->cfg.node_id &&
				     k < ctx->cfg.qps_per_peer; k++) {
			const struct g_qp *q = &ctx->peers[p].cli[k];

			if (q->state == GQ_FAILED && q->retry_at_ns)
				tv_vf_wake_at(ctx->dev, q->retry_at_ns);
		}
}

int tv_gather_progress(struct tv_gather_ctx *ctx)
{
	uint64_t now = tv_vf_now_ns(ctx->dev);
	int ret, done = 0;

	ret = g_poll(ctx);
	if (ret < 0)
		return ret;
	done += ret;
	if (ctx->op.active && !ctx->op.expired && ctx->op.deadline_ns &&
	    now >= ctx->op.deadline_ns)
		g_expire(ctx);
	done += g_reconnect_due(ctx, now);
	done += g_dispatch(ctx);
	g_check_end(ctx);
	arm_timers(ctx);
	return done;
}

int tv_gather_test(struct tv_gather_ctx *ctx,
		   const struct tv_gather_result **res_p)
{
	if (ctx->op.active)
		return -EAGAIN;
	if (!ctx->op.unreported)
		return -ENOENT;
	ctx->op.unreported = false;
	if (res_p)
		*res_p = &ctx->op.res;
	return ctx->op.result;
}

/* Flushes of an expired gather come at once; if they never do, the
 * lists are dropped so that the call always returns. */
static void drop_all(struct tv_gather_ctx *ctx)
{
	for (uint32_t p = 0; p < ctx->cfg.nodes; p++)
		for (uint32_t k = 0; p != ctx->cfg.node_id &&
				     k < ctx->cfg.qps_per_peer; k++)
			if (ctx->peers[p].cli[k].inflight)
				g_qp_drop_lists(ctx, p, k, -ETIMEDOUT);
	g_check_end(ctx);
}

static int blocking_wait(struct tv_gather_ctx *ctx, uint64_t deadline)
{
	uint64_t now = tv_vf_now_ns(ctx->dev);
	uint64_t until = deadline && !ctx->op.expired ? deadline :
						      now + 1000000000ull;
	int ret = tv_vf_wait(ctx->dev, until);

	if (ret != -ETIMEDOUT && ret != -EDEADLK)
		return ret;
	/* The time is up, or nothing more can come. */
	if (!ctx->op.expired)
		g_expire(ctx);
	else
		drop_all(ctx);
	return 0;
}

int tv_gather(struct tv_gather_ctx *ctx, const uint64_t *ids, size_t n,
	      void *out, uint64_t timeout_ns,
	      const struct tv_gather_result **res_p)
{
	uint64_t deadline = timeout_ns ? tv_vf_now_ns(ctx->dev) + timeout_ns :
					 0;
	int ret = tv_gather_start(ctx, ids, n, out, deadline, NULL);

	while (!ret && ctx->op.active) {
		ret = tv_gather_progress(ctx);
		if (ret < 0)
			break;
		ret = 0;
		if (!ctx->op.active)
			break;
		ret = blocking_wait(ctx, deadline);
	}
	if (ret)
		return ret;
	return tv_gather_test(ctx, res_p);
}
