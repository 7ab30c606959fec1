/* One scenario node on an RDMA device: RDMA_* env, rdma_cm, engine. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma_node.h"

#ifdef TV_HAVE_RDMACM
#include <tensorverbs/cm.h>
#include <tensorverbs/faults.h>
#include <tensorverbs/ibverbs.h>

/* RDMA_* syntax, then against the machine: unknown device, bad MTU ... */
static int env_config(char *msg, size_t cap, struct tv_ibv_config *env_p)
{
	struct tv_ibv_device_info *infos = NULL;
	struct tv_ibv_config res;
	size_t count = 0, idx;
	int ret;

	ret = tv_ibv_config_from_env(msg, cap, env_p);
	if (ret)
		return ret;
	ret = tv_ibv_query_all(&infos, &count);
	if (ret) {
		snprintf(msg, cap, "cannot list RDMA devices: %s",
			 strerror(-ret));
		return ret;
	}
	ret = tv_ibv_config_resolve(env_p, infos, count, msg, cap, &res, &idx);
	tv_ibv_free_all(infos, count);
	return ret;
}

static int open_engine(struct rnode *n, const struct rnode_opts *o, char *msg,
		       size_t cap)
{
	struct tv_engine_config ec;
	struct tv_ibv_config ic;
	int ret;

	tv_engine_config_default(&ec);
	tv_ibv_device_config(n->base, &ic);
	ec.node_id = o->id;
	ec.queue_depth = o->queue_depth ? o->queue_depth : ic.queue_depth;
	if (o->pool_block_bytes)
		ec.pool_block_bytes = (size_t)o->pool_block_bytes;
	ec.validate_checksum = o->validate_checksum;
	if (o->ack_timeout_ns)
		ec.ack_timeout_ns = o->ack_timeout_ns;
	ec.recv_timeout_ns = o->recv_timeout_ns;
	if (o->max_retries)
		ec.max_retries = o->max_retries;
	if (o->max_inline_set)
		ec.max_inline_bytes = o->max_inline_bytes;
	ec.observe = o->observe;
	ec.observe_ctx = o->observe_ctx;
	tv_ibv_connect_cfg(n->base, &ec.connect);
	if (o->reconnect) {
		ec.reconnect = tv_cm_reconnect;
		ec.reconnect_ctx = n->cm;
	}
	ret = tv_engine_create(n->dev, &ec, &n->engine);
	if (ret)
		snprintf(msg, cap, "tv_engine_create: %s", strerror(-ret));
	return ret;
}

int rnode_open(struct rnode *n, const struct rnode_opts *o, char *msg,
	       size_t cap)
{
	struct tv_cm_config cc;
	struct tv_ibv_config env, cfg;
	int ret;

	memset(n, 0, sizeof(*n));
	n->id = o->id;
	ret = env_config(msg, cap, &env);
	if (ret)
		return ret;
	tv_cm_config_default(&cc);
	cc.node_id = o->id;
	cc.num_nodes = o->nodes;
	cc.addr = o->addr;
	if (o->connect_attempts)
		cc.connect_attempts = o->connect_attempts;
	if (o->retry_delay_ms)
		cc.retry_delay_ms = o->retry_delay_ms;
	ret = tv_cm_create(&cc, msg, cap, &n->cm);
	if (ret)
		return ret;
	ret = tv_cm_ibv_config(n->cm, &env, msg, cap, &cfg);
	if (!ret)
		ret = tv_ibv_open(&cfg, msg, cap, &n->base);
	if (ret)
		goto fail;
	n->dev = n->base;
	snprintf(n->dev_name, sizeof(n->dev_name), "%s", cfg.device);
	/* The fault layer goes between the engine and the device. */
	if (o->flt) {
		ret = tv_flt_wrap(o->flt, n->base, &n->dev);
		if (ret) {
			n->dev = NULL;
			snprintf(msg, cap, "tv_flt_wrap: %s", strerror(-ret));
			goto fail;
		}
	}
	ret = open_engine(n, o, msg, cap);
	if (!ret)
		ret = tv_cm_attach(n->cm, n->engine, msg, cap);
	if (ret)
		goto fail;
	return 0;
fail:
	rnode_close(n);
	return ret;
}

int rnode_close(struct rnode *n)
{
	int ret = 0;

	/* Disconnect first: the engine's QPs go with the engine. */
	tv_cm_close(n->cm);
	if (n->engine)
		ret = tv_engine_destroy(n->engine);
	if (!ret && n->dev && n->dev != n->base)
		tv_flt_unwrap(n->dev);
	if (n->base && !ret)
		tv_ibv_close(n->base);
	tv_cm_destroy(n->cm);
	memset(n, 0, sizeof(*n));
	return ret;
}

#else /* !TV_HAVE_RDMACM */

int rnode_open(struct rnode *n, const struct rnode_opts *o, char *msg,
	       size_t cap)
{
	(void)o;
	memset(n, 0, sizeof(*n));
	snprintf(msg, cap, "built without librdmacm/libibverbs (install "
		 "librdmacm-dev and libibverbs-dev, then rebuild)");
	return -ENOSYS;
}

int rnode_close(struct rnode *n)
{
	memset(n, 0, sizeof(*n));
	return 0;
}

#endif

int rnode_parse_peer(const char *text, uint32_t *node_p,
		     struct sockaddr_storage *addr_p)
{
	char *end;
	unsigned long v;

	if (!text || text[0] < '0' || text[0] > '9')
		return -EINVAL;
	v = strtoul(text, &end, 10);
	if (*end != '=' || v > 255)
		return -EINVAL;
#ifdef TV_HAVE_RDMACM
	if (tv_cm_parse_addr(end + 1, addr_p))
		return -EINVAL;
#else
	(void)addr_p;
#endif
	*node_p = (uint32_t)v;
	return 0;
}
