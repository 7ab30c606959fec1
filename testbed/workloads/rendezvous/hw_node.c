/* A rendezvous engine on an RDMA device: RDMA_* env, rdma_cm, engine. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/cm.h>
#include <tensorverbs/faults.h>
#include <tensorverbs/ibverbs.h>

#include "rv_hw.h"

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
	ec.max_recv_bytes = o->max_recv_bytes;
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
	msg[0] = '\0';
	ret = tv_ibv_config_check_env(msg, cap, &env);
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
		goto fail;
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
		tv_flt_wrap_set_node(n->dev, o->id);
		ret = o->hw ? tv_tb_hw_tap_device(o->hw, n->dev) :
		      o->tap ? tv_tb_tap_attach(o->tap, o->id, n->dev) : 0;
		if (ret) {
			snprintf(msg, cap, "recording: %s", strerror(-ret));
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
	/* The backends say what they refused; a call that failed, errno. */
	if (!msg[0])
		snprintf(msg, cap, "%s", strerror(-ret));
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
