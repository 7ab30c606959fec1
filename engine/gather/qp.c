/*
 * The gather engine's QPs: for every peer, qps_per_peer requester QPs
 * (ours, towards its partition) and as many responder QPs (its requests
 * into ours; they post nothing).  Connect, reset, failure, reconnect.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gather_int.h"

static int qp_new(struct tv_gather_ctx *ctx, enum tv_gather_role role,
		  struct tv_vf_qp **qp_p)
{
	struct tv_vf_qp_init_attr ia = {
		.send_cq = role == TV_GATHER_CLIENT ? ctx->cq : ctx->srv_cq,
		.recv_cq = role == TV_GATHER_CLIENT ? ctx->cq : ctx->srv_cq,
		.max_send_wr = role == TV_GATHER_CLIENT ? ctx->sq_depth : 1,
		.max_recv_wr = 1,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.sq_sig_all = 0,
	};

	return tv_vf_create_qp(ctx->pd, &ia, qp_p);
}

int g_peers_create(struct tv_gather_ctx *ctx)
{
	uint32_t nq = ctx->cfg.qps_per_peer;
	int ret;

	ctx->peers = calloc(ctx->cfg.nodes, sizeof(*ctx->peers));
	if (!ctx->peers)
		return -ENOMEM;
	for (uint32_t p = 0; p < ctx->cfg.nodes; p++) {
		struct g_peer *peer = &ctx->peers[p];

		peer->cli = calloc(nq, sizeof(*peer->cli));
		peer->srv = calloc(nq, sizeof(*peer->srv));
		if (!peer->cli || !peer->srv)
			return -ENOMEM;
		if (p == ctx->cfg.node_id)
			continue;
		for (uint32_t k = 0; k < nq; k++) {
			ret = qp_new(ctx, TV_GATHER_CLIENT, &peer->cli[k].qp);
			if (!ret)
				ret = qp_new(ctx, TV_GATHER_SERVER,
					     &peer->srv[k]);
			if (ret)
				return ret;
		}
	}
	return 0;
}

void g_peers_destroy(struct tv_gather_ctx *ctx)
{
	for (uint32_t p = 0; ctx->peers && p < ctx->cfg.nodes; p++) {
		struct g_peer *peer = &ctx->peers[p];

		for (uint32_t k = 0; k < ctx->cfg.qps_per_peer; k++) {
			if (peer->cli && peer->cli[k].qp)
				tv_vf_destroy_qp(peer->cli[k].qp);
			if (peer->srv && peer->srv[k])
				tv_vf_destroy_qp(peer->srv[k]);
		}
		free(peer->cli);
		free(peer->srv);
		free(peer->pend);
	}
	free(ctx->peers);
	ctx->peers = NULL;
}

static int qp_lookup(struct tv_gather_ctx *ctx, uint32_t peer, uint32_t k,
		     enum tv_gather_role role, struct tv_vf_qp ***qp_pp)
{
	struct g_peer *p;

	if (peer >= ctx->cfg.nodes || peer == ctx->cfg.node_id ||
	    k >= ctx->cfg.qps_per_peer || role > TV_GATHER_SERVER)
		return -EINVAL;
	p = &ctx->peers[peer];
	*qp_pp = role == TV_GATHER_CLIENT ? &p->cli[k].qp : &p->srv[k];
	return 0;
}

int tv_gather_qp_endpoint(struct tv_gather_ctx *ctx, uint32_t peer,
			  uint32_t qp, enum tv_gather_role role,
			  struct tv_vf_qp_endpoint *ep_p)
{
	struct tv_vf_qp **q;
	int ret = qp_lookup(ctx, peer, qp, role, &q);

	return ret ? ret : tv_vf_qp_endpoint(*q, ep_p);
}

/* The client's max_rd_atomic: what we may issue and the server accepts. */
static uint8_t client_rd_atomic(const struct tv_gather_ctx *ctx,
				const struct g_peer *p)
{
	uint32_t mine = ctx->attr.max_qp_init_rd_atom ?
				ctx->attr.max_qp_init_rd_atom :
				ctx->attr.max_qp_rd_atom;

	/* quiver sets the device's limit and never asks the server. */
	if (!g_broken(ctx, TV_GATHER_BREAK_RD_ATOMIC) &&
	    p->h.max_dest_rd_atomic < mine)
		mine = p->h.max_dest_rd_atomic;
	if (mine > 255)
		mine = 255;
	return (uint8_t)(mine ? mine : 1);
}

int tv_gather_qp_connect(struct tv_gather_ctx *ctx, uint32_t peer,
			 uint32_t qp, enum tv_gather_role role,
			 const struct tv_vf_qp_endpoint *remote)
{
	struct tv_vf_connect_cfg cc = ctx->conn;
	struct tv_vf_qp_endpoint local;
	struct tv_vf_qp **q;
	struct g_peer *p;
	int ret = qp_lookup(ctx, peer, qp, role, &q);

	if (ret)
		return ret;
	p = &ctx->peers[peer];
	if (role == TV_GATHER_CLIENT) {
		if (!p->has_handle)
			return -ENOTCONN;
		cc.max_rd_atomic = client_rd_atomic(ctx, p);
		cc.max_dest_rd_atomic = 1;
		cc.access = TV_ACCESS_LOCAL_WRITE;
	} else {
		cc.max_rd_atomic = 1;
		cc.max_dest_rd_atomic = ctx->max_dest_rd_atomic;
		cc.access = TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_READ;
	}
	ret = tv_vf_qp_endpoint(*q, &local);
	if (!ret)
		ret = tv_vf_connect_qp(*q, &cc, &local, remote);
	if (ret) {
		/* modify_qp says only EINVAL: name what we asked for. */
		g_set_error(ctx, "connecting %s QP %u of peer %u (max_rd_atomic "
			    "%u, max_dest_rd_atomic %u; the device allows %u "
			    "and %u): %s",
			    role == TV_GATHER_CLIENT ? "client" : "server", qp,
			    peer, cc.max_rd_atomic, cc.max_dest_rd_atomic,
			    ctx->attr.max_qp_init_rd_atom,
			    ctx->attr.max_qp_rd_atom, strerror(-ret));
		return ret;
	}
	if (role == TV_GATHER_CLIENT) {
		struct g_qp *g = &p->cli[qp];

		g->rd_atomic = cc.max_rd_atomic;
		g->state = GQ_UP;
		g->cause = 0;
		g_emit(ctx, TV_GATHER_EV_QP_UP, peer, qp, 0, g->rd_atomic, 0,
		       0);
	}
	return 0;
}

int tv_gather_qp_reset(struct tv_gather_ctx *ctx, uint32_t peer, uint32_t qp,
		       enum tv_gather_role role)
{
	struct tv_vf_qp **q, *fresh;
	int ret = qp_lookup(ctx, peer, qp, role, &q);

	if (ret)
		return ret;
	ret = qp_new(ctx, role, &fresh);
	if (ret)
		return ret;
	if (role == TV_GATHER_CLIENT) {
		struct g_qp *g = &ctx->peers[peer].cli[qp];

		/* Destroying drops its WRs without completions: account
		 * for them first (their READs land nowhere after this). */
		if (g->inflight)
			g_qp_drop_lists(ctx, peer, qp, -ECONNRESET);
		g->posted_wrs = g->reclaimed_wrs = 0;
		g->state = GQ_DOWN;
		g->rd_atomic = 0;
	}
	tv_vf_destroy_qp(*q);
	*q = fresh;
	return 0;
}

uint32_t tv_gather_qp_rd_atomic(const struct tv_gather_ctx *ctx,
				uint32_t peer, uint32_t qp)
{
	if (peer >= ctx->cfg.nodes || peer == ctx->cfg.node_id ||
	    qp >= ctx->cfg.qps_per_peer)
		return 0;
	return ctx->peers[peer].cli[qp].state == GQ_UP ?
		       ctx->peers[peer].cli[qp].rd_atomic : 0;
}

void g_qp_fail(struct tv_gather_ctx *ctx, uint32_t peer, uint32_t k,
	       int cause)
{
	struct g_qp *g = &ctx->peers[peer].cli[k];

	if (g->state != GQ_UP)
		return;
	g->state = GQ_FAILED;
	g->cause = cause;
	g->retry_at_ns = 0;
	g_emit(ctx, TV_GATHER_EV_QP_DOWN, peer, k, 0, g->inflight, cause, 0);
}

static int reconnect_one(struct tv_gather_ctx *ctx, uint32_t peer,
			 uint32_t k, uint64_t now)
{
	struct g_qp *g = &ctx->peers[peer].cli[k];
	int ret = -ENOTCONN;

	if (ctx->cfg.reconnect)
		ret = ctx->cfg.reconnect(ctx->cfg.reconnect_ctx, ctx, peer, k);
	if (!ret && g->state == GQ_UP) {
		ctx->st.reconnects++;
		return 1;
	}
	if (ret == -EAGAIN || (!ret && g->state != GQ_UP)) {
		g->retry_at_ns = now + ctx->cfg.reconnect_backoff_ns;
		tv_vf_wake_at(ctx->dev, g->retry_at_ns);
		return 0;
	}
	g->state = GQ_DEAD;
	g_set_error(ctx, "QP %u to node %u stays down: reconnect: %s", k,
		    peer, strerror(-ret));
	return 1;
}

/* Failed QPs with nothing in flight any more: the host reconnects them. */
int g_reconnect_due(struct tv_gather_ctx *ctx, uint64_t now)
{
	int done = 0;

	for (uint32_t p = 0; p < ctx->cfg.nodes; p++) {
		if (p == ctx->cfg.node_id)
			continue;
		for (uint32_t k = 0; k < ctx->cfg.qps_per_peer; k++) {
			struct g_qp *g = &ctx->peers[p].cli[k];

			if (g->state != GQ_FAILED || g->inflight ||
			    now < g->retry_at_ns)
				continue;
			done += reconnect_one(ctx, p, k, now);
		}
	}
	return done;
}

/*
 * The shared CQ overflowed (it never should: it has room for every WR):
 * it is unusable and its QPs are in ERR.  A new CQ, new client QPs on
 * it, their lists read again once the host has reconnected them.  All or
 * nothing: when the device refuses one of the new objects everything
 * stays on the old CQ, whose next poll says overflow again.
 */
int g_cq_rebuild(struct tv_gather_ctx *ctx)
{
	uint32_t nq = ctx->cfg.qps_per_peer, np = ctx->cfg.nodes;
	struct tv_vf_cq *old = ctx->cq, *cq;
	struct tv_vf_qp **fresh;
	int ret;

	fresh = calloc((size_t)np * nq, sizeof(*fresh));
	if (!fresh)
		return -ENOMEM;
	ret = tv_vf_create_cq(ctx->dev, ctx->cq_size, &cq);
	if (ret)
		goto out;
	ctx->cq = cq; /* qp_new puts client QPs on ctx->cq */
	for (uint32_t p = 0; !ret && p < np; p++)
		for (uint32_t k = 0; !ret && p != ctx->cfg.node_id && k < nq;
		     k++)
			ret = qp_new(ctx, TV_GATHER_CLIENT, &fresh[p * nq + k]);
	if (ret) {
		for (size_t i = 0; i < (size_t)np * nq; i++)
			if (fresh[i])
				tv_vf_destroy_qp(fresh[i]);
		tv_vf_destroy_cq(cq);
		ctx->cq = old;
		goto out;
	}
	for (uint32_t p = 0; p < np; p++) {
		for (uint32_t k = 0; p != ctx->cfg.node_id && k < nq; k++) {
			struct g_qp *g = &ctx->peers[p].cli[k];

			if (g->inflight)
				g_qp_drop_lists(ctx, p, k, -EOVERFLOW);
			tv_vf_destroy_qp(g->qp);
			g->qp = fresh[p * nq + k];
			g->posted_wrs = g->reclaimed_wrs = 0;
			if (g->state == GQ_UP || g->state == GQ_FAILED) {
				g->state = GQ_FAILED;
				g->cause = -EOVERFLOW;
				g->retry_at_ns = 0;
			}
		}
	}
	tv_vf_destroy_cq(old);
out:
	free(fresh);
	return ret;
}
