/*
 * The gather engine's context: configuration, partition layout, device
 * objects registered once (partition, staging, the caller's output),
 * statistics and events.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gather_int.h"

void tv_gather_config_default(struct tv_gather_config *cfg)
{
	/* quiver's PipeParam and QP attributes where it has them. */
	memset(cfg, 0, sizeof(*cfg));
	cfg->nodes = 1;
	cfg->row_bytes = 8;
	cfg->qps_per_peer = 8;
	cfg->post_list = 128;
	cfg->window = 2;
	cfg->staging_bytes = 4u << 20;
	cfg->max_retries = 3;
	cfg->qp_timeout = 14;
	cfg->qp_retry_cnt = 7;
	cfg->reconnect_backoff_ns = 100000;
}

void tv_gather_range(const struct tv_gather_config *cfg, uint32_t node,
		     uint64_t *first_p, uint64_t *end_p)
{
	uint64_t c = cfg->replicated_rows < cfg->rows ? cfg->replicated_rows :
							cfg->rows;
	unsigned __int128 span = cfg->rows - c;

	/* quiver's range partition of what is not replicated. */
	*first_p = c + (uint64_t)(span * node / cfg->nodes);
	*end_p = c + (uint64_t)(span * (node + 1) / cfg->nodes);
}

uint32_t tv_gather_owner(const struct tv_gather_config *cfg, uint64_t id)
{
	uint32_t lo = 0, hi = cfg->nodes - 1;

	/* Binary search over the ranges (each computed, none stored). */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		uint64_t first, end;

		tv_gather_range(cfg, mid, &first, &end);
		if (id >= first)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

size_t tv_gather_part_bytes(const struct tv_gather_config *cfg, uint32_t node)
{
	uint64_t first, end;

	tv_gather_range(cfg, node, &first, &end);
	return (size_t)((cfg->replicated_rows + end - first) * cfg->row_bytes);
}

void g_set_error(struct tv_gather_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
	va_end(ap);
}

const char *tv_gather_error(const struct tv_gather_ctx *ctx)
{
	return ctx->err;
}

bool g_broken(const struct tv_gather_ctx *ctx, enum tv_gather_breakage b)
{
	return ctx->cfg.test_breakage & b;
}

void g_emit(struct tv_gather_ctx *ctx, enum tv_gather_event_kind kind,
	    uint32_t peer, uint32_t qp, uint64_t list, uint32_t n, int status,
	    uint32_t attempt)
{
	struct tv_gather_event ev = {
		.kind = kind, .node = ctx->cfg.node_id, .peer = peer,
		.qp = qp, .gather = ctx->op.no, .list = list, .n = n,
		.status = status, .attempt = attempt,
	};

	if (ctx->cfg.observe)
		ctx->cfg.observe(ctx->cfg.observe_ctx, &ev);
}

#define BAD(...) (snprintf(why, cap, __VA_ARGS__), -EINVAL)

/* Defaults for zeros; -EINVAL (and why) for what cannot work. */
static int config_check(const struct tv_gather_config *in,
			const struct tv_vf_device_attr *a, char *why,
			size_t cap, struct tv_gather_config *out_p)
{
	struct tv_gather_config d, c = *in;
	unsigned __int128 total;

	tv_gather_config_default(&d);
	c.qps_per_peer = c.qps_per_peer ? c.qps_per_peer : d.qps_per_peer;
	c.post_list = c.post_list ? c.post_list : d.post_list;
	c.window = c.window ? c.window : d.window;
	c.staging_bytes = c.staging_bytes ? c.staging_bytes : d.staging_bytes;
	if (!c.reconnect_backoff_ns)
		c.reconnect_backoff_ns = d.reconnect_backoff_ns;
	if (!c.nodes || c.node_id >= c.nodes)
		return BAD("node %u of %u nodes", c.node_id, c.nodes);
	if (!c.rows || !c.row_bytes || c.replicated_rows > c.rows)
		return BAD("rows %llu, row_bytes %u, replicated_rows %llu",
			   (unsigned long long)c.rows, c.row_bytes,
			   (unsigned long long)c.replicated_rows);
	total = (unsigned __int128)c.rows * c.row_bytes;
	if (total > a->max_mr_size || total > (SIZE_MAX >> 1))
		return BAD("rows x row_bytes exceeds the device's max_mr_size");
	if (c.post_list > G_MAX_POST_LIST || c.qps_per_peer > 1024 ||
	    c.window > 1024)
		return BAD("post_list %u (at most %u), qps_per_peer %u, window %u",
			   c.post_list, G_MAX_POST_LIST, c.qps_per_peer,
			   c.window);
	if ((uint64_t)c.post_list * c.window > a->max_qp_wr)
		return BAD("post_list x window = %llu send-queue slots, the "
			   "device has max_qp_wr %u",
			   (unsigned long long)c.post_list * c.window,
			   a->max_qp_wr);
	if (c.qp_retry_cnt > 7 || c.qp_timeout > 31)
		return BAD("qp_retry_cnt %u, qp_timeout %u", c.qp_retry_cnt,
			   c.qp_timeout);
	*out_p = c;
	return 0;
}

static int staging_create(struct tv_gather_ctx *ctx)
{
	uint64_t slot = (uint64_t)ctx->cfg.post_list * ctx->cfg.row_bytes;
	uint64_t slots = ctx->cfg.staging_bytes / slot;
	int ret;

	/* At least one post list, however small the configured size. */
	ctx->stage_slots = (uint32_t)(slots ? (slots > 65536 ? 65536 : slots) :
					     1);
	ctx->staging = aligned_alloc(64, ((slot * ctx->stage_slots + 63) / 64) *
						 64);
	ctx->stage_free = calloc(ctx->stage_slots, sizeof(uint32_t));
	if (!ctx->staging || !ctx->stage_free)
		return -ENOMEM;
	memset(ctx->staging, 0, slot * ctx->stage_slots);
	ret = tv_vf_reg_mr(ctx->pd, ctx->staging, slot * ctx->stage_slots,
			   TV_ACCESS_LOCAL_WRITE, &ctx->staging_mr);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < ctx->stage_slots; i++)
		ctx->stage_free[i] = ctx->stage_slots - 1 - i;
	ctx->nstage_free = ctx->stage_slots;
	ctx->st.staging_bytes = slot * ctx->stage_slots;
	return 0;
}

static int objects_create(struct tv_gather_ctx *ctx)
{
	uint64_t cqe = (uint64_t)(ctx->cfg.nodes - 1) * ctx->cfg.qps_per_peer *
			       ctx->sq_depth + 16;
	int ret;

	/* Every WR may complete in error: room for all of them. */
	if (cqe > ctx->attr.max_cqe)
		cqe = ctx->attr.max_cqe;
	ctx->cq_size = (uint32_t)cqe;
	ret = tv_vf_alloc_pd(ctx->dev, &ctx->pd);
	if (!ret)
		ret = tv_vf_create_cq(ctx->dev, ctx->cq_size, &ctx->cq);
	if (!ret)
		ret = tv_vf_create_cq(ctx->dev, 16, &ctx->srv_cq);
	if (!ret)
		ret = tv_vf_reg_mr(ctx->pd, ctx->part, ctx->part_bytes,
				   TV_ACCESS_LOCAL_WRITE |
					   TV_ACCESS_REMOTE_READ,
				   &ctx->part_mr);
	if (!ret)
		ret = staging_create(ctx);
	if (!ret)
		ret = g_peers_create(ctx);
	return ret;
}

static void objects_destroy(struct tv_gather_ctx *ctx)
{
	g_peers_destroy(ctx);
	if (ctx->out_mr)
		tv_vf_dereg_mr(ctx->out_mr);
	if (ctx->staging_mr)
		tv_vf_dereg_mr(ctx->staging_mr);
	if (ctx->part_mr)
		tv_vf_dereg_mr(ctx->part_mr);
	if (ctx->srv_cq)
		tv_vf_destroy_cq(ctx->srv_cq);
	if (ctx->cq)
		tv_vf_destroy_cq(ctx->cq);
	if (ctx->pd)
		tv_vf_dealloc_pd(ctx->pd);
	free(ctx->staging);
	free(ctx->stage_free);
	free(ctx->wrs);
	free(ctx->sges);
	free(ctx->wcs);
	g_op_free(&ctx->op);
	free(ctx);
}

static void rd_atomic_setup(struct tv_gather_ctx *ctx)
{
	uint32_t dest = ctx->attr.max_qp_rd_atom;

	/* What our responders accept: all the device has (quiver's
	 * hard-coded 16 in the broken variant). */
	if (g_broken(ctx, TV_GATHER_BREAK_RD_ATOMIC))
		dest = 16;
	if (dest > 255)
		dest = 255;
	ctx->max_dest_rd_atomic = (uint8_t)(dest ? dest : 1);
}

int tv_gather_ctx_create(struct tv_vf_device *dev,
			 const struct tv_gather_config *cfg, void *partition,
			 char *why, size_t why_cap,
			 struct tv_gather_ctx **ctx_p)
{
	char dummy[8];
	struct tv_gather_ctx *ctx;
	int ret;

	if (!why) {
		why = dummy;
		why_cap = sizeof(dummy);
	}
	if (!dev || !cfg || !partition || !ctx_p)
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->dev = dev;
	ret = tv_vf_query_device(dev, &ctx->attr);
	if (!ret)
		ret = config_check(cfg, &ctx->attr, why, why_cap, &ctx->cfg);
	if (ret)
		goto fail;
	if (cfg->connect)
		ctx->conn = *cfg->connect;
	else
		tv_vf_connect_cfg_default(&ctx->conn);
	ctx->conn.timeout = ctx->cfg.qp_timeout;
	ctx->conn.retry_cnt = ctx->cfg.qp_retry_cnt;
	ctx->cfg.connect = NULL;
	tv_gather_range(&ctx->cfg, ctx->cfg.node_id, &ctx->first, &ctx->end);
	ctx->part = partition;
	ctx->part_bytes = tv_gather_part_bytes(&ctx->cfg, ctx->cfg.node_id);
	ctx->sq_depth = ctx->cfg.post_list * ctx->cfg.window;
	/* quiver's QPs are far deeper (8191) than its window (2048 a pipe):
	 * the aliasing variant only overflows where slots never return. */
	if (g_broken(ctx, TV_GATHER_BREAK_SIGNAL_ALIASING) &&
	    ctx->sq_depth * 4ull <= ctx->attr.max_qp_wr)
		ctx->sq_depth *= 4;
	ctx->st.sq_depth = ctx->sq_depth;
	rd_atomic_setup(ctx);
	ctx->wrs = calloc(ctx->cfg.post_list, sizeof(*ctx->wrs));
	ctx->sges = calloc(ctx->cfg.post_list, sizeof(*ctx->sges));
	ctx->wcs = calloc(64, sizeof(*ctx->wcs));
	ret = ctx->wrs && ctx->sges && ctx->wcs ? 0 : -ENOMEM;
	if (!ret && ctx->part_bytes == 0) {
		snprintf(why, why_cap, "node %u has no rows to serve",
			 ctx->cfg.node_id);
		ret = -EINVAL;
		goto fail;
	}
	if (!ret)
		ret = objects_create(ctx);
	if (ret) {
		if (ret != -EINVAL)
			snprintf(why, why_cap, "device objects: %s",
				 strerror(-ret));
		goto fail;
	}
	*ctx_p = ctx;
	return 0;
fail:
	objects_destroy(ctx);
	return ret;
}

static bool ctx_busy(const struct tv_gather_ctx *ctx)
{
	if (ctx->op.active)
		return true;
	for (uint32_t p = 0; ctx->peers && p < ctx->cfg.nodes; p++)
		for (uint32_t k = 0; ctx->peers[p].cli &&
				     k < ctx->cfg.qps_per_peer; k++)
			if (ctx->peers[p].cli[k].inflight)
				return true;
	return false;
}

int tv_gather_ctx_destroy(struct tv_gather_ctx *ctx)
{
	if (!ctx)
		return 0;
	if (ctx_busy(ctx))
		return -EBUSY;
	objects_destroy(ctx);
	return 0;
}

void tv_gather_ctx_abort(struct tv_gather_ctx *ctx)
{
	/* A dying process: its QPs die with whatever they hold (the kernel
	 * destroys them), and nothing of its gather is reported. */
	for (uint32_t p = 0; p < ctx->cfg.nodes; p++)
		for (uint32_t k = 0; k < ctx->cfg.qps_per_peer; k++)
			ctx->peers[p].cli[k].inflight = 0;
	ctx->op.active = false;
}

const struct tv_gather_config *tv_gather_ctx_config(
	const struct tv_gather_ctx *ctx)
{
	return &ctx->cfg;
}

int tv_gather_out_register(struct tv_gather_ctx *ctx, void *out,
			   size_t size_bytes)
{
	struct tv_vf_mr *mr;
	int ret;

	if (!out || !size_bytes)
		return -EINVAL;
	if (ctx->out_mr || ctx->op.active)
		return -EBUSY;
	ret = tv_vf_reg_mr(ctx->pd, out, size_bytes, TV_ACCESS_LOCAL_WRITE, &mr);
	if (ret)
		return ret;
	ctx->out_mr = mr;
	ctx->out_reg = out;
	ctx->out_reg_bytes = size_bytes;
	return 0;
}

int tv_gather_out_deregister(struct tv_gather_ctx *ctx)
{
	int ret;

	if (!ctx->out_mr)
		return 0;
	if (ctx->op.active)
		return -EBUSY;
	ret = tv_vf_dereg_mr(ctx->out_mr);
	if (ret)
		return ret;
	ctx->out_mr = NULL;
	ctx->out_reg = NULL;
	ctx->out_reg_bytes = 0;
	return 0;
}

void tv_gather_stats(const struct tv_gather_ctx *ctx,
		     struct tv_gather_stats *st_p)
{
	*st_p = ctx->st;
}
