/*
 * The port-channel engine's context (a device, a PD, the configuration)
 * and registered memory with its wire handle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"
#include "port_int.h"

void tv_port_config_default(struct tv_port_config *cfg)
{
	/* MSCCL++'s EndpointConfig::Ib defaults, where it has them. */
	memset(cfg, 0, sizeof(*cfg));
	cfg->signal_mode = TV_PORT_SIGNAL_AUTO;
	cfg->cq_size = 1024;
	cfg->recv_depth = 16;
	cfg->fifo_size = 128;
	cfg->poll_batch = 64;
	cfg->qp_timeout = 18;
	cfg->qp_retry_cnt = 7;
}

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* Defaults for zeros; -EINVAL for what cannot work. */
static int config_check(const struct tv_port_config *in,
			const struct tv_vf_device_attr *attr,
			struct tv_port_config *out_p)
{
	struct tv_port_config def, c = *in;

	tv_port_config_default(&def);
	if (!c.cq_size)
		c.cq_size = def.cq_size;
	if (!c.recv_depth)
		c.recv_depth = def.recv_depth;
	if (!c.fifo_size)
		c.fifo_size = def.fifo_size;
	if (!c.poll_batch)
		c.poll_batch = def.poll_batch;
	/* A few CQEs of room: the write-imm receives share nothing, but a
	 * flush's accounting and MSCCL++'s own margin (posted + 4). */
	if (c.cq_size < 8 || c.cq_size > attr->max_cqe)
		return -EINVAL;
	if (!c.max_write_queue)
		c.max_write_queue = c.cq_size - 4;
	if (c.max_write_queue > c.cq_size - 4 ||
	    c.max_write_queue > attr->max_qp_wr)
		return -EINVAL;
	if (!pow2(c.fifo_size) || c.fifo_size > (1u << 20))
		return -EINVAL;
	if (c.recv_depth > attr->max_qp_wr || c.recv_depth > c.cq_size)
		return -EINVAL;
	if (c.signal_mode > TV_PORT_SIGNAL_WRITE_IMM || c.qp_retry_cnt > 7 ||
	    c.qp_timeout > 31)
		return -EINVAL;
	*out_p = c;
	return 0;
}

int tv_port_ctx_create(struct tv_vf_device *dev,
		       const struct tv_port_config *cfg,
		       struct tv_port_ctx **ctx_p)
{
	struct tv_vf_device_attr attr;
	struct tv_port_ctx *ctx;
	int ret;

	if (!dev || !cfg || !ctx_p)
		return -EINVAL;
	ret = tv_vf_query_device(dev, &attr);
	if (ret)
		return ret;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ret = config_check(cfg, &attr, &ctx->cfg);
	if (ret)
		goto err_free;
	ctx->mode = ctx->cfg.signal_mode;
	if (ctx->mode == TV_PORT_SIGNAL_AUTO)
		/* MSCCL++ falls back the same way (endpoint.cc). */
		ctx->mode = attr.atomic_cap == TV_ATOMIC_NONE ?
				    TV_PORT_SIGNAL_WRITE_IMM :
				    TV_PORT_SIGNAL_ATOMIC;
	if (ctx->mode == TV_PORT_SIGNAL_ATOMIC &&
	    attr.atomic_cap == TV_ATOMIC_NONE) {
		ret = -EOPNOTSUPP;
		goto err_free;
	}
	ctx->max_qp_wr = attr.max_qp_wr;
	ctx->dev = dev;
	if (cfg->connect)
		ctx->connect = *cfg->connect;
	else
		tv_vf_connect_cfg_default(&ctx->connect);
	ctx->cfg.connect = NULL; /* ours is ctx->connect */
	ret = tv_vf_alloc_pd(dev, &ctx->pd);
	if (ret)
		goto err_free;
	*ctx_p = ctx;
	return 0;

err_free:
	free(ctx);
	return ret;
}

int tv_port_ctx_destroy(struct tv_port_ctx *ctx)
{
	int ret;

	if (!ctx)
		return 0;
	if (ctx->nr_mems || ctx->nr_conns || ctx->nr_proxies)
		return -EBUSY;
	ret = tv_vf_dealloc_pd(ctx->pd);
	if (ret)
		return ret;
	free(ctx);
	return 0;
}

const struct tv_port_config *tv_port_ctx_config(const struct tv_port_ctx *ctx)
{
	return &ctx->cfg;
}

enum tv_port_signal_mode tv_port_ctx_signal_mode(const struct tv_port_ctx *ctx)
{
	return ctx->mode;
}

uint64_t port_now_ns(const struct tv_port_ctx *ctx)
{
	return tv_vf_now_ns(ctx->dev);
}

void port_event_init(struct tv_port_event *ev, enum tv_port_event_kind kind,
		     uint32_t node)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->node = node;
	ev->peer = UINT32_MAX;
}

void port_emit(const struct tv_port_ctx *ctx, struct tv_port_event *ev)
{
	if (ctx->cfg.observe)
		ctx->cfg.observe(ctx->cfg.observe_ctx, ev);
}

/* ---- memory -------------------------------------------------------------- */

int tv_port_mem_register(struct tv_port_ctx *ctx, void *addr,
			 size_t size_bytes, struct tv_port_mem **mem_p)
{
	uint32_t access = TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE |
			  TV_ACCESS_REMOTE_READ;
	struct tv_port_mem *mem;
	int ret;

	if (!ctx || !addr || !size_bytes || !mem_p)
		return -EINVAL;
	if (ctx->mode == TV_PORT_SIGNAL_ATOMIC)
		access |= TV_ACCESS_REMOTE_ATOMIC;
	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return -ENOMEM;
	ret = tv_vf_reg_mr(ctx->pd, addr, size_bytes, access, &mem->mr);
	if (ret) {
		free(mem);
		return ret;
	}
	mem->ctx = ctx;
	mem->addr = addr;
	mem->size = size_bytes;
	ctx->nr_mems++;
	*mem_p = mem;
	return 0;
}

int tv_port_mem_deregister(struct tv_port_mem *mem)
{
	int ret;

	if (!mem)
		return 0;
	ret = tv_vf_dereg_mr(mem->mr);
	if (ret)
		return ret;
	mem->ctx->nr_mems--;
	free(mem);
	return 0;
}

void *tv_port_mem_addr(const struct tv_port_mem *mem)
{
	return mem->addr;
}

size_t tv_port_mem_size(const struct tv_port_mem *mem)
{
	return mem->size;
}

void tv_port_mem_handle(const struct tv_port_mem *mem,
			struct tv_port_mem_handle *h_p)
{
	h_p->addr = (uint64_t)(uintptr_t)mem->addr;
	h_p->size_bytes = mem->size;
	h_p->rkey = mem->mr->rkey;
	h_p->node = mem->ctx->cfg.node_id;
}

/* ---- the handle's bytes: little-endian (le.h) ---------------------------- */

int tv_port_mem_handle_encode(const struct tv_port_mem_handle *h,
			      uint8_t *buf, size_t cap)
{
	if (cap < TV_PORT_HANDLE_BYTES)
		return -ENOSPC;
	tv_le_put(buf, PORT_HANDLE_MAGIC, 4);
	tv_le_put(buf + 4, PORT_HANDLE_VERSION, 2);
	tv_le_put(buf + 6, 0, 2);
	tv_le_put(buf + 8, h->node, 4);
	tv_le_put(buf + 12, h->rkey, 4);
	tv_le_put(buf + 16, h->addr, 8);
	tv_le_put(buf + 24, h->size_bytes, 8);
	return 0;
}

int tv_port_mem_handle_decode(const uint8_t *buf, size_t len,
			      struct tv_port_mem_handle *h_p)
{
	struct tv_port_mem_handle h;

	if (!buf || len < TV_PORT_HANDLE_BYTES)
		return -EPROTO;
	if (tv_le_get(buf, 4) != PORT_HANDLE_MAGIC ||
	    tv_le_get(buf + 4, 2) != PORT_HANDLE_VERSION || tv_le_get(buf + 6, 2))
		return -EPROTO;
	h.node = (uint32_t)tv_le_get(buf + 8, 4);
	h.rkey = (uint32_t)tv_le_get(buf + 12, 4);
	h.addr = tv_le_get(buf + 16, 8);
	h.size_bytes = tv_le_get(buf + 24, 8);
	/* A window that wraps the address space or holds nothing lies. */
	if (!h.size_bytes || h.addr + h.size_bytes < h.addr)
		return -EPROTO;
	*h_p = h;
	return 0;
}
