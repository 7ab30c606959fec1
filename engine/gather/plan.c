/*
 * Starting a gather: ids checked before anything is posted, local and
 * replicated rows copied, remote rows ordered (by peer, then id when
 * sorting, else request order) and cut into post lists.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gather_int.h"

void g_op_clear(struct g_op *op)
{
	op->nrr = 0;
	op->nlists = 0;
	op->open = 0;
	op->nerrs = 0;
	op->expired = false;
	op->result = 0;
	memset(&op->res, 0, sizeof(op->res));
}

void g_op_free(struct g_op *op)
{
	free(op->rr);
	free(op->lists);
	free(op->errs);
	memset(op, 0, sizeof(*op));
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*arr, n * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

static int rrow_cmp_id(const void *a, const void *b)
{
	const struct g_rrow *x = a, *y = b;

	if (x->peer != y->peer)
		return x->peer < y->peer ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int rrow_cmp_pos(const void *a, const void *b)
{
	const struct g_rrow *x = a, *y = b;

	if (x->peer != y->peer)
		return x->peer < y->peer ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Local and replicated rows now; remote ones into op->rr. */
static void split_rows(struct tv_gather_ctx *ctx, const uint64_t *ids,
		       size_t n)
{
	struct g_op *op = &ctx->op;
	uint32_t rb = ctx->cfg.row_bytes;
	uint64_t c = ctx->cfg.replicated_rows;

	for (size_t i = 0; i < n; i++) {
		uint64_t id = ids[i];
		const uint8_t *src = NULL;

		if (id < c) {
			src = ctx->part + id * rb;
			op->res.replicated_rows++;
		} else if (id >= ctx->first && id < ctx->end) {
			src = ctx->part + (c + id - ctx->first) * rb;
			op->res.local_rows++;
		}
		if (src) {
			memcpy(op->out + i * rb, src, rb);
			continue;
		}
		op->rr[op->nrr++] = (struct g_rrow){
			.id = id, .pos = (uint32_t)i,
			.peer = tv_gather_owner(&ctx->cfg, id),
		};
	}
}

/* Each peer's rows, in order, cut into post lists. */
static int cut_lists(struct tv_gather_ctx *ctx)
{
	struct g_op *op = &ctx->op;
	uint32_t pl = ctx->cfg.post_list;
	size_t i = 0;
	int ret;

	while (i < op->nrr) {
		uint32_t peer = op->rr[i].peer;
		size_t j = i;

		while (j < op->nrr && op->rr[j].peer == peer && j - i < pl)
			j++;
		ret = grow((void **)&op->lists, &op->lists_cap,
			   op->nlists + 1, sizeof(*op->lists));
		if (ret)
			return ret;
		op->lists[op->nlists] = (struct g_list){
			.peer = peer, .first = (uint32_t)i,
			.n = (uint32_t)(j - i), .qp = G_NONE,
			.stage = G_NONE, .fail_from = (uint32_t)(j - i),
		};
		if (!g_pend_push(&ctx->peers[peer], (uint32_t)op->nlists,
				 false))
			return -ENOMEM;
		op->nlists++;
		i = j;
	}
	op->open = op->nlists;
	return 0;
}

static bool out_registered(const struct tv_gather_ctx *ctx, const void *out,
			   size_t bytes)
{
	const uint8_t *o = out;

	return ctx->out_mr && o >= ctx->out_reg &&
	       bytes <= ctx->out_reg_bytes &&
	       (size_t)(o - ctx->out_reg) <= ctx->out_reg_bytes - bytes;
}

static int check_ids(struct tv_gather_ctx *ctx, const uint64_t *ids,
		     size_t n, size_t *bad_p)
{
	for (size_t i = 0; i < n; i++) {
		if (ids[i] < ctx->cfg.rows)
			continue;
		g_set_error(ctx, "ids[%zu] = %llu: the tensor has %llu rows", i,
			    (unsigned long long)ids[i],
			    (unsigned long long)ctx->cfg.rows);
		if (bad_p)
			*bad_p = i;
		return -ERANGE;
	}
	return 0;
}

int tv_gather_start(struct tv_gather_ctx *ctx, const uint64_t *ids, size_t n,
		    void *out, uint64_t deadline_ns, size_t *bad_p)
{
	struct g_op *op = &ctx->op;
	int ret;

	if (op->active)
		return -EBUSY;
	if ((!ids || !out) && n)
		return -EINVAL;
	if (n > G_MAX_ROWS || n > SIZE_MAX / ctx->cfg.row_bytes) {
		g_set_error(ctx, "%zu ids: at most %u per gather", n,
			    G_MAX_ROWS);
		return -EINVAL;
	}
	ret = check_ids(ctx, ids, n, bad_p);
	if (ret)
		return ret;
	g_op_clear(op);
	ret = grow((void **)&op->rr, &op->rr_cap, n, sizeof(*op->rr));
	if (ret)
		return ret;
	op->no++;
	op->n = n;
	op->out = out;
	op->direct = out_registered(ctx, out, n * ctx->cfg.row_bytes);
	op->deadline_ns = deadline_ns;
	op->t0_ns = tv_vf_now_ns(ctx->dev);
	op->res.rows = n;
	split_rows(ctx, ids, n);
	/* Not with no rows: op->rr may be NULL yet (qsort's is nonnull). */
	if (op->nrr > 1)
		qsort(op->rr, op->nrr, sizeof(*op->rr),
		      ctx->cfg.sort_ids ? rrow_cmp_id : rrow_cmp_pos);
	ret = grow((void **)&op->errs, &op->errs_cap, op->nrr ? op->nrr : 1,
		   sizeof(*op->errs));
	if (!ret)
		ret = cut_lists(ctx);
	if (ret) {
		for (uint32_t p = 0; p < ctx->cfg.nodes; p++)
			ctx->peers[p].pend_len = 0;
		return ret;
	}
	op->res.remote_rows = op->nrr;
	op->active = true;
	op->unreported = false;
	ctx->st.gathers++;
	g_emit(ctx, TV_GATHER_EV_START, G_NONE, G_NONE, 0, (uint32_t)n, 0, 0);
	if (deadline_ns)
		tv_vf_wake_at(ctx->dev, deadline_ns);
	g_dispatch(ctx);
	g_check_end(ctx);
	return 0;
}
