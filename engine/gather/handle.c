/*
 * Partition handles: what a server publishes so that clients can READ
 * its rows, on the wire as TV_GATHER_HANDLE_BYTES little-endian bytes
 * (docs/gather.md), decoded field by field as hostile input.
 */
#include <errno.h>
#include <string.h>

#include "gather_int.h"
#include "le.h"

#define HANDLE_MAGIC 0x48475654u /* "TVGH" */
#define HANDLE_VERSION 1u

void tv_gather_part_handle(const struct tv_gather_ctx *ctx,
			   struct tv_gather_part_handle *h_p)
{
	*h_p = (struct tv_gather_part_handle){
		.node = ctx->cfg.node_id,
		.first = ctx->first,
		.end = ctx->end,
		.replicated_rows = ctx->cfg.replicated_rows,
		.row_bytes = ctx->cfg.row_bytes,
		.addr = (uint64_t)(uintptr_t)ctx->part,
		.rkey = ctx->part_mr->rkey,
		.max_dest_rd_atomic = ctx->max_dest_rd_atomic,
	};
}

/*
 *  0 magic u32 | 4 version u16 | 6 max_dest_rd_atomic u8 | 7 zero u8
 *  8 node u32 | 12 row_bytes u32 | 16 first u64 | 24 end u64
 * 32 replicated_rows u64 | 40 addr u64 | 48 rkey u32 | 52 zero u32
 */
int tv_gather_handle_encode(const struct tv_gather_part_handle *h,
			    uint8_t *buf, size_t cap)
{
	if (cap < TV_GATHER_HANDLE_BYTES)
		return -ENOSPC;
	memset(buf, 0, TV_GATHER_HANDLE_BYTES);
	tv_le_put(buf, HANDLE_MAGIC, 4);
	tv_le_put(buf + 4, HANDLE_VERSION, 2);
	buf[6] = h->max_dest_rd_atomic;
	tv_le_put(buf + 8, h->node, 4);
	tv_le_put(buf + 12, h->row_bytes, 4);
	tv_le_put(buf + 16, h->first, 8);
	tv_le_put(buf + 24, h->end, 8);
	tv_le_put(buf + 32, h->replicated_rows, 8);
	tv_le_put(buf + 40, h->addr, 8);
	tv_le_put(buf + 48, h->rkey, 4);
	return 0;
}

int tv_gather_handle_decode(const uint8_t *buf, size_t len,
			    struct tv_gather_part_handle *h_p)
{
	struct tv_gather_part_handle h;
	unsigned __int128 size;

	if (!buf || len != TV_GATHER_HANDLE_BYTES ||
	    tv_le_get(buf, 4) != HANDLE_MAGIC ||
	    tv_le_get(buf + 4, 2) != HANDLE_VERSION || buf[7] ||
	    tv_le_get(buf + 52, 4))
		return -EPROTO;
	h.max_dest_rd_atomic = buf[6];
	h.node = (uint32_t)tv_le_get(buf + 8, 4);
	h.row_bytes = (uint32_t)tv_le_get(buf + 12, 4);
	h.first = tv_le_get(buf + 16, 8);
	h.end = tv_le_get(buf + 24, 8);
	h.replicated_rows = tv_le_get(buf + 32, 8);
	h.addr = tv_le_get(buf + 40, 8);
	h.rkey = (uint32_t)tv_le_get(buf + 48, 4);
	if (!h.max_dest_rd_atomic || !h.row_bytes || h.first > h.end ||
	    h.replicated_rows > h.first)
		return -EPROTO;
	size = ((unsigned __int128)h.replicated_rows + h.end - h.first) *
	       h.row_bytes;
	if (!size || size > UINT64_MAX - h.addr)
		return -EPROTO;
	*h_p = h;
	return 0;
}

int tv_gather_set_peer(struct tv_gather_ctx *ctx,
		       const struct tv_gather_part_handle *h)
{
	uint64_t first, end;

	if (h->node >= ctx->cfg.nodes || h->node == ctx->cfg.node_id) {
		g_set_error(ctx, "a handle of node %u: not a peer of node %u",
			    h->node, ctx->cfg.node_id);
		return -EPROTO;
	}
	tv_gather_range(&ctx->cfg, h->node, &first, &end);
	if (h->first != first || h->end != end ||
	    h->row_bytes != ctx->cfg.row_bytes ||
	    h->replicated_rows != ctx->cfg.replicated_rows) {
		g_set_error(ctx, "node %u's handle says rows [%llu, %llu) of "
			    "%u bytes with %llu replicated; expected [%llu, "
			    "%llu) of %u bytes with %llu", h->node,
			    (unsigned long long)h->first,
			    (unsigned long long)h->end, h->row_bytes,
			    (unsigned long long)h->replicated_rows,
			    (unsigned long long)first,
			    (unsigned long long)end, ctx->cfg.row_bytes,
			    (unsigned long long)ctx->cfg.replicated_rows);
		return -EPROTO;
	}
	ctx->peers[h->node].h = *h;
	ctx->peers[h->node].has_handle = true;
	return 0;
}

int tv_gather_reregister(struct tv_gather_ctx *ctx)
{
	struct tv_vf_mr *mr;
	int ret;

	/* New first, then the old one goes: a failure leaves it as it was. */
	ret = tv_vf_reg_mr(ctx->pd, ctx->part, ctx->part_bytes,
			   TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_READ, &mr);
	if (ret)
		return ret;
	tv_vf_dereg_mr(ctx->part_mr);
	ctx->part_mr = mr;
	return 0;
}
