/*
 * Transfers: requests on the wire, their execution at the responder (where
 * every key, address, length and state is checked: every byte is hostile),
 * responses, RNR and transport retries.
 */
#include <errno.h>
#include <string.h>

#include <fiu-local.h>

#include <tensorverbs/faults.h>

#include "sim_priv.h"

enum xfer_result {
	XR_OK,    /* executed; ACK or read response goes back */
	XR_NAK,   /* the responder refused it; a NAK goes back */
	XR_LOCAL, /* our own SGEs are bad; nothing was sent */
	XR_LOST,  /* no responder: nothing comes back, the timer fires */
	XR_RNR,   /* no receive posted: RNR NAK */
};

struct xfer_out {
	enum xfer_result res;
	enum tv_vf_wc_status status;
	uint32_t peer;
	uint32_t resp_len; /* bytes coming back (RDMA read) */
	uint8_t rnr_timer; /* the responder's min_rnr_timer */
};

/* IB's RNR NAK timer encoding (IBA table 45), in ns; 0 is the longest. */
static const uint64_t rnr_timer_ns[32] = {
	655360000, 10000, 20000, 30000, 40000, 60000, 80000, 120000,
	160000, 240000, 320000, 480000, 640000, 960000, 1280000, 1920000,
	2560000, 3840000, 5120000, 7680000, 10240000, 15360000, 20480000,
	30720000, 40960000, 61440000, 81920000, 122880000, 163840000,
	245760000, 327680000, 491520000,
};

static uint64_t ser_ns(uint64_t len, uint64_t bytes_per_sec)
{
	/* len <= 2^31 and 1e9 < 2^30: the product fits in 64 bits. */
	if (!len || !bytes_per_sec)
		return 0;
	return (len * 1000000000ull + bytes_per_sec - 1) / bytes_per_sec;
}

/*
 * Put len bytes on the link from -> to at the current time: the message
 * departs when the link is free, occupies it for its serialization time and
 * arrives one latency (plus seeded jitter) after its last byte left.
 */
static uint64_t link_send(struct tv_sim *sim, uint32_t from, uint32_t to,
			  uint64_t len, uint64_t *depart_p)
{
	uint32_t n = sim->cfg.num_nodes;
	struct sim_link_state nowhere = { .cfg = sim->cfg.link };
	struct sim_link_state *l = &nowhere;
	uint64_t depart, ser, arrive;

	assert(from < n);
	if (to < n)
		l = &sim->links[(size_t)from * n + to];
	depart = l->busy_until_ns > sim->now_ns ? l->busy_until_ns :
						  sim->now_ns;
	ser = ser_ns(len, l->cfg.bytes_per_sec);
	l->busy_until_ns = depart + ser;
	arrive = depart + ser + l->cfg.latency_ns;
	if (sim->cfg.jitter_ns_max)
		arrive += tv_prng_below(&sim->net_prng,
					sim->cfg.jitter_ns_max + 1);
	*depart_p = depart;
	return arrive;
}

static bool wants_local_write(enum tv_vf_wr_opcode op)
{
	return op == TV_WR_RDMA_READ || op == TV_WR_ATOMIC_CMP_AND_SWP ||
	       op == TV_WR_ATOMIC_FETCH_AND_ADD;
}

static int xfer_transmit_one(struct tv_sim *sim, struct sim_qp *qp,
			     uint32_t peer)
{
	struct sim_swr *swr = sim_sq_slot(qp, qp->sq_tx);
	struct sim_ev ev = {
		.kind = SIM_EV_DELIVER, .node = qp->node->id,
		.qpn = qp->base.qp_num, .gen = qp->tx_gen,
	};
	/* Reads and atomics carry no payload out; their responses do. */
	uint64_t len = wants_local_write(swr->opcode) ? 0 : swr->length;
	uint64_t arrive;
	int ret;

	arrive = link_send(sim, qp->node->id, peer, len, &swr->depart_ns);
	/* A fault: this request (and, RC being in order, its successors) late. */
	fiu_do_on("sim/deliver/delay", arrive += (uint64_t)TV_FLT_ARG(1000000));
	/* RC delivers in order: never before the previous request. */
	if (arrive < qp->last_arrival_ns)
		arrive = qp->last_arrival_ns;
	ret = sim_schedule(sim, arrive, &ev);
	if (!ret)
		ret = sim_place_schedule(sim, qp, qp->sq_tx, arrive);
	if (ret)
		return ret;
	qp->last_arrival_ns = arrive;
	qp->sq_tx++;
	if (sim_is_rd_atomic(swr->opcode))
		qp->rd_out++;
	if (sim->cfg.qp_op_ns)
		qp->op_next_ns = swr->depart_ns + sim->cfg.qp_op_ns;
	return 0;
}

/* qp_op_ns: come back when the QP's processing unit is free again. */
static int tx_wake_arm(struct tv_sim *sim, struct sim_qp *qp)
{
	struct sim_ev ev = {
		.kind = SIM_EV_TX, .node = qp->node->id,
		.qpn = qp->base.qp_num, .gen = qp->tx_gen,
	};
	int ret;

	if (qp->tx_wake_ns != UINT64_MAX)
		return 0; /* armed: it sends, then re-arms if need be */
	ret = sim_schedule(sim, qp->op_next_ns, &ev);
	if (ret)
		return ret;
	qp->tx_wake_ns = qp->op_next_ns;
	return 0;
}

/*
 * Send what may go, in posting order.  A READ or atomic beyond
 * max_rd_atomic waits for a response to free a slot (sim_xfer_ack), and
 * every WR after it waits too: the send queue is processed in order.
 */
int sim_xfer_transmit(struct tv_sim *sim, struct sim_qp *qp)
{
	uint32_t peer = sim_gid_node(sim, qp->attr.dgid);
	int ret;

	assert(qp->base.state == TV_QPS_RTS);
	while (!qp->tx_held && qp->sq_tx < qp->sq_tail) {
		struct sim_swr *swr = sim_sq_slot(qp, qp->sq_tx);

		if (sim_is_rd_atomic(swr->opcode) &&
		    qp->rd_out >= qp->attr.max_rd_atomic)
			return 0;
		if ((sim->cfg.qp_op_ns || sim->cfg.post_ns) &&
		    sim->now_ns < qp->op_next_ns)
			return tx_wake_arm(sim, qp);
		ret = xfer_transmit_one(sim, qp, peer);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- checks ---------------------------------------------------------------- */

/* Local SGEs against the node's MRs: key, PD, bounds, access. */
int sim_sge_resolve(struct sim_node *node, struct tv_vf_pd *pd,
		       const struct tv_vf_sge *sg, uint32_t n, uint32_t need,
		       struct sim_seg *segs)
{
	for (uint32_t i = 0; i < n; i++) {
		struct sim_mr *mr;
		uintptr_t base;

		segs[i] = (struct sim_seg){ NULL, 0 };
		if (!sg[i].length)
			continue;
		mr = sim_mr_lookup(node, sg[i].lkey, false);
		if (!mr || mr->base.pd != pd || (mr->base.access & need) != need)
			return -EACCES;
		base = (uintptr_t)mr->base.addr;
		if (sg[i].addr < base || sg[i].addr - base > mr->base.length ||
		    sg[i].length > mr->base.length - (sg[i].addr - base))
			return -EACCES;
		segs[i] = (struct sim_seg){
			(uint8_t *)mr->base.addr + (sg[i].addr - base),
			sg[i].length,
		};
	}
	return 0;
}

/* rkey, PD, access and bounds at the responder; NULL if any fails. */
uint8_t *sim_remote_resolve(struct sim_qp *resp, uint32_t rkey,
			       uint64_t addr, uint32_t len, uint32_t access)
{
	struct sim_mr *mr;
	uintptr_t base;

	if (!(resp->attr.qp_access_flags & access))
		return NULL;
	mr = sim_mr_lookup(resp->node, rkey, true);
	if (!mr || mr->base.pd != resp->base.pd || !(mr->base.access & access))
		return NULL;
	base = (uintptr_t)mr->base.addr;
	if (addr < base || addr - base > mr->base.length ||
	    len > mr->base.length - (addr - base))
		return NULL;
	return (uint8_t *)mr->base.addr + (addr - base);
}

/* The QP our request reaches, if it exists, can receive and is ours. */
struct sim_qp *sim_find_responder(struct tv_sim *sim, struct sim_qp *req,
				     uint32_t peer)
{
	struct sim_qp *resp;

	if (peer == UINT32_MAX)
		return NULL;
	resp = sim_qp_lookup(sim, peer, req->attr.dest_qp_num);
	if (!resp)
		return NULL;
	if (resp->base.state != TV_QPS_RTR && resp->base.state != TV_QPS_RTS)
		return NULL;
	if (resp->attr.dest_qp_num != req->base.qp_num ||
	    sim_gid_node(sim, resp->attr.dgid) != req->node->id)
		return NULL;
	return resp;
}

void sim_seg_copy(const struct sim_seg *dst, uint32_t nd,
		     const struct sim_seg *src, uint32_t ns)
{
	uint32_t di = 0, si = 0, doff = 0, soff = 0;

	while (di < nd && si < ns) {
		uint32_t n;

		if (doff == dst[di].len) {
			di++;
			doff = 0;
			continue;
		}
		if (soff == src[si].len) {
			si++;
			soff = 0;
			continue;
		}
		n = dst[di].len - doff;
		if (src[si].len - soff < n)
			n = src[si].len - soff;
		/* memmove: a loopback transfer may overlap itself. */
		memmove(dst[di].p + doff, src[si].p + soff, n);
		doff += n;
		soff += n;
	}
}

/* ---- execution at the responder --------------------------------------------- */

static void push_recv_cqe(struct tv_sim *sim, struct sim_qp *resp,
			  uint64_t wr_id, enum tv_vf_wc_status status,
			  enum tv_vf_wc_opcode opcode, uint32_t len,
			  const struct sim_swr *swr)
{
	struct tv_vf_wc wc;
	bool imm = swr->opcode == TV_WR_RDMA_WRITE_WITH_IMM ||
		   swr->opcode == TV_WR_SEND_WITH_IMM;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = status;
	wc.opcode = opcode;
	wc.qp_num = resp->base.qp_num;
	if (status == TV_WC_SUCCESS) {
		wc.byte_len = len;
		wc.wc_flags = imm ? TV_WC_WITH_IMM : 0;
		wc.imm_data = imm ? swr->imm_data : 0;
	}
	sim_cq_push(sim, to_sim_cq(resp->base.recv_cq), &wc, SIM_NO_SLOT);
}

static void out_nak(struct xfer_out *out, enum tv_vf_wc_status status)
{
	out->res = XR_NAK;
	out->status = status;
}

static void exec_write(struct tv_sim *sim, struct sim_qp *resp,
		       const struct sim_swr *swr, const struct sim_seg *local,
		       struct xfer_out *out)
{
	bool imm = swr->opcode == TV_WR_RDMA_WRITE_WITH_IMM;
	struct sim_seg dst;

	if (imm && resp->rq_head == resp->rq_tail) {
		out->res = XR_RNR;
		out->rnr_timer = resp->attr.min_rnr_timer;
		return;
	}
	/* A zero-length write names no memory: no rkey check (IBA 9.4.1). */
	if (swr->length) {
		dst.p = sim_remote_resolve(resp, swr->rkey, swr->remote_addr,
				       swr->length, TV_ACCESS_REMOTE_WRITE);
		if (!dst.p) {
			out_nak(out, TV_WC_REM_ACCESS_ERR);
			sim_qp_to_err(sim, resp, TV_WC_WR_FLUSH_ERR);
			return;
		}
		dst.len = swr->length;
		sim_seg_copy(&dst, 1, local, swr->num_sge);
		sim->stats.bytes_moved += swr->length;
	}
	if (imm) {
		uint64_t wr_id = sim_rq_slot(resp, resp->rq_head)->wr_id;

		resp->rq_head++;
		push_recv_cqe(sim, resp, wr_id, TV_WC_SUCCESS,
			      TV_WC_RECV_RDMA_WITH_IMM, swr->length, swr);
	}
	out->res = XR_OK;
}

static void exec_send(struct tv_sim *sim, struct sim_qp *resp,
		      const struct sim_swr *swr, const struct sim_seg *local,
		      struct xfer_out *out)
{
	struct sim_seg rsegs[SIM_MAX_SGE];
	struct sim_rwr *rwr;
	uint64_t wr_id;

	if (resp->rq_head == resp->rq_tail) {
		out->res = XR_RNR;
		out->rnr_timer = resp->attr.min_rnr_timer;
		return;
	}
	rwr = sim_rq_slot(resp, resp->rq_head);
	wr_id = rwr->wr_id;
	if (rwr->length < swr->length) {
		resp->rq_head++;
		push_recv_cqe(sim, resp, wr_id, TV_WC_LOC_LEN_ERR, TV_WC_RECV,
			      0, swr);
		sim_qp_to_err(sim, resp, TV_WC_WR_FLUSH_ERR);
		out_nak(out, TV_WC_REM_INV_REQ_ERR);
		return;
	}
	if (sim_sge_resolve(resp->node, resp->base.pd, rwr->sges, rwr->num_sge,
			TV_ACCESS_LOCAL_WRITE, rsegs)) {
		resp->rq_head++;
		push_recv_cqe(sim, resp, wr_id, TV_WC_LOC_PROT_ERR, TV_WC_RECV,
			      0, swr);
		sim_qp_to_err(sim, resp, TV_WC_WR_FLUSH_ERR);
		out_nak(out, TV_WC_REM_OP_ERR);
		return;
	}
	sim_seg_copy(rsegs, rwr->num_sge, local, swr->num_sge);
	sim->stats.bytes_moved += swr->length;
	resp->rq_head++;
	push_recv_cqe(sim, resp, wr_id, TV_WC_SUCCESS, TV_WC_RECV,
		      swr->length, swr);
	out->res = XR_OK;
}

static void exec_read(struct tv_sim *sim, struct sim_qp *resp,
		      const struct sim_swr *swr, const struct sim_seg *local,
		      struct xfer_out *out)
{
	struct sim_seg src;

	if (swr->length) {
		src.p = sim_remote_resolve(resp, swr->rkey, swr->remote_addr,
				       swr->length, TV_ACCESS_REMOTE_READ);
		if (!src.p) {
			out_nak(out, TV_WC_REM_ACCESS_ERR);
			sim_qp_to_err(sim, resp, TV_WC_WR_FLUSH_ERR);
			return;
		}
		src.len = swr->length;
		/* The local SGEs were checked for LOCAL_WRITE already. */
		sim_seg_copy(local, swr->num_sge, &src, 1);
		sim->stats.bytes_moved += swr->length;
	}
	out->res = XR_OK;
	out->resp_len = swr->length;
}

/*
 * An atomic on the responder's 8-byte word, in the host's byte order (the
 * order the CPU that polls the word reads it in).  Alignment is checked
 * after access, as rxe does: a misaligned target is an invalid request
 * (IBA class C), and the responder's QP goes to error as for any NAK.
 */
static void exec_atomic(struct tv_sim *sim, struct sim_qp *resp,
			const struct sim_swr *swr, const struct sim_seg *local,
			struct xfer_out *out)
{
	struct sim_seg old_seg;
	uint64_t old, val;
	uint8_t *dst;

	dst = sim_remote_resolve(resp, swr->rkey, swr->remote_addr, 8,
				 TV_ACCESS_REMOTE_ATOMIC);
	if (!dst || (swr->remote_addr & 7)) {
		out_nak(out, dst ? TV_WC_REM_INV_REQ_ERR : TV_WC_REM_ACCESS_ERR);
		sim_qp_to_err(sim, resp, TV_WC_WR_FLUSH_ERR);
		return;
	}
	/*
	 * One 8-byte load and store: a thread polling the word (a waiter
	 * while another thread drives the world) sees the old or the new
	 * value, and release orders the data placed before it, as the NIC's
	 * ordered writes do for a poller on real hardware.
	 */
	old = __atomic_load_n((uint64_t *)(void *)dst, __ATOMIC_RELAXED);
	if (swr->opcode == TV_WR_ATOMIC_FETCH_AND_ADD)
		val = old + swr->compare_add;
	else
		val = old == swr->compare_add ? swr->swap : old;
	__atomic_store_n((uint64_t *)(void *)dst, val, __ATOMIC_RELEASE);
	/* The old value goes back in the response: into the 8-byte SGE. */
	old_seg = (struct sim_seg){ (uint8_t *)&old, sizeof(old) };
	sim_seg_copy(local, swr->num_sge, &old_seg, 1);
	sim->stats.bytes_moved += sizeof(old);
	out->res = XR_OK;
	out->resp_len = sizeof(old);
}

int sim_swr_local(struct sim_qp *req, const struct sim_swr *swr,
		  struct sim_seg *local)
{
	uint32_t need = wants_local_write(swr->opcode) ? TV_ACCESS_LOCAL_WRITE :
							 0;

	if (swr->is_inline) {
		/* Taken at post (swr_take_inline): no key to check. */
		local[0] = (struct sim_seg){ swr->inline_buf, swr->length };
		return 0;
	}
	return sim_sge_resolve(req->node, req->base.pd, swr->sges,
			       swr->num_sge, need, local);
}

/*
 * Has the responder no resources left for one more READ or atomic of
 * req?  It holds one for every request that arrived and whose response
 * has not reached the requester yet (RC is one to one: they are all
 * req's).  One more than max_dest_rd_atomic is an invalid request (IBA
 * class C), as rxe names it (RESPST_ERR_TOO_MANY_RDMA_ATM_REQ).  rxe
 * itself raises it only when max_dest_rd_atomic is 0 and otherwise
 * recycles its resources ("it is the requesters job", rxe_resp.c
 * check_resource).
 */
static bool rd_atomic_refused(const struct tv_sim *sim,
			      const struct sim_qp *req,
			      const struct sim_qp *resp)
{
	if (sim_is_rxe(sim))
		return resp->attr.max_dest_rd_atomic == 0;
	return req->rd_exec >= resp->attr.max_dest_rd_atomic;
}

static void xfer_execute(struct tv_sim *sim, struct sim_qp *req,
			 const struct sim_swr *swr, struct xfer_out *out)
{
	struct sim_seg local[SIM_MAX_SGE];
	struct sim_qp *resp;

	out->peer = sim_gid_node(sim, req->attr.dgid);
	/* TensorFlow #23220: lkey 0 / unregistered source buffer. */
	if (sim_swr_local(req, swr, local)) {
		out->res = XR_LOCAL;
		out->status = TV_WC_LOC_PROT_ERR;
		return;
	}
	resp = sim_find_responder(sim, req, out->peer);
	if (!resp) {
		out->res = XR_LOST;
		return;
	}
	/* Before the keys: rxe checks resources (CHK_RESOURCE) first. */
	if (sim_is_rd_atomic(swr->opcode) &&
	    rd_atomic_refused(sim, req, resp)) {
		out_nak(out, TV_WC_REM_INV_REQ_ERR);
		sim_qp_to_err(sim, resp, TV_WC_WR_FLUSH_ERR);
		return;
	}
	switch (swr->opcode) {
	case TV_WR_RDMA_WRITE:
	case TV_WR_RDMA_WRITE_WITH_IMM:
		exec_write(sim, resp, swr, local, out);
		break;
	case TV_WR_SEND:
	case TV_WR_SEND_WITH_IMM:
		exec_send(sim, resp, swr, local, out);
		break;
	case TV_WR_RDMA_READ:
		exec_read(sim, resp, swr, local, out);
		break;
	case TV_WR_ATOMIC_CMP_AND_SWP:
	case TV_WR_ATOMIC_FETCH_AND_ADD:
		exec_atomic(sim, resp, swr, local, out);
		break;
	}
}

/* ---- the requester's side of the outcome ------------------------------------ */

/* Stop sending: requests already on the wire will be ignored. */
static void req_hold(struct sim_qp *req)
{
	req->tx_held = true;
	req->tx_gen++;
	req->tx_wake_ns = UINT64_MAX; /* its SIM_EV_TX is stale now */
}

/* Schedule the response of the next executed WR (responses are in order). */
static int req_sched_ack(struct tv_sim *sim, struct sim_qp *req, uint64_t t)
{
	struct sim_ev ev = {
		.kind = SIM_EV_ACK, .node = req->node->id,
		.qpn = req->base.qp_num, .gen = req->err_gen,
	};
	int ret;

	if (t < sim->now_ns)
		t = sim->now_ns;
	if (t < req->last_resp_ns)
		t = req->last_resp_ns;
	ret = sim_schedule(sim, t, &ev);
	if (ret)
		return ret;
	req->last_resp_ns = t;
	return 0;
}

/* Go back to the current WR and send it (and what follows) again at t. */
static int req_rewind(struct tv_sim *sim, struct sim_qp *req, uint64_t t)
{
	struct sim_ev ev = {
		.kind = SIM_EV_RETX, .node = req->node->id,
		.qpn = req->base.qp_num,
	};

	req_hold(req);
	/* What was on the wire is sent again: its READs are not out. */
	for (uint64_t i = req->sq_exec; i < req->sq_tx; i++)
		if (sim_is_rd_atomic(sim_sq_slot(req, i)->opcode))
			req->rd_out--;
	assert(req->rd_exec <= req->rd_out);
	req->sq_tx = req->sq_exec;
	ev.gen = req->tx_gen;
	return sim_schedule(sim, t < sim->now_ns ? sim->now_ns : t, &ev);
}

/* The WR at sq_exec is finished at the responder with status. */
static int req_finish(struct tv_sim *sim, struct sim_qp *req,
		      struct sim_swr *swr, enum tv_vf_wc_status status,
		      uint64_t t)
{
	swr->status = status;
	req->sq_exec++;
	if (sim_is_rd_atomic(swr->opcode))
		req->rd_exec++;
	if (status != TV_WC_SUCCESS)
		req_hold(req);
	return req_sched_ack(sim, req, t);
}

static int conclude_lost(struct tv_sim *sim, struct sim_qp *req,
			 struct sim_swr *swr, struct xfer_out *out)
{
	uint64_t timer_ns = 4096ull << req->attr.timeout;

	out->status = TV_WC_RETRY_EXC_ERR;
	if (!req->attr.timeout) {
		/* Timeout 0 means no transport timer: wait forever. */
		req_hold(req);
		out->status = TV_WC_SUCCESS;
		return 0;
	}
	if (!swr->retry_left)
		return req_finish(sim, req, swr, TV_WC_RETRY_EXC_ERR,
				  swr->depart_ns + timer_ns);
	/* rxe_comp.c: "if (qp->comp.retry_cnt != 7) ...--": 7 is forever
	 * there, 7 retries on mlx5 (docs/simulator.md, Device profiles). */
	if (!sim_is_rxe(sim) || req->attr.retry_cnt != SIM_RETRY_INFINITE)
		swr->retry_left--;
	out->status = TV_WC_SUCCESS;
	return req_rewind(sim, req, swr->depart_ns + timer_ns);
}

static int conclude_rnr(struct tv_sim *sim, struct sim_qp *req,
			struct sim_swr *swr, struct xfer_out *out)
{
	uint64_t depart;
	uint64_t nak_at = link_send(sim, out->peer, req->node->id, 0, &depart);

	sim->stats.rnr_naks++;
	if (req->attr.rnr_retry != SIM_RNR_INFINITE && !swr->rnr_left) {
		out->status = TV_WC_RNR_RETRY_EXC_ERR;
		return req_finish(sim, req, swr, out->status, nak_at);
	}
	if (req->attr.rnr_retry != SIM_RNR_INFINITE)
		swr->rnr_left--;
	out->status = TV_WC_SUCCESS;
	return req_rewind(sim, req, nak_at + rnr_timer_ns[out->rnr_timer & 31]);
}

static int xfer_conclude(struct tv_sim *sim, struct sim_qp *req,
			 struct sim_swr *swr, struct xfer_out *out)
{
	uint32_t me = req->node->id;
	uint64_t depart;

	switch (out->res) {
	case XR_OK:
		return req_finish(sim, req, swr, TV_WC_SUCCESS,
				  link_send(sim, out->peer, me, out->resp_len,
					    &depart));
	case XR_NAK:
		return req_finish(sim, req, swr, out->status,
				  link_send(sim, out->peer, me, 0, &depart));
	case XR_LOCAL:
		return req_finish(sim, req, swr, out->status, sim->now_ns);
	case XR_LOST:
		return conclude_lost(sim, req, swr, out);
	case XR_RNR:
		return conclude_rnr(sim, req, swr, out);
	}
	assert(0 && "unknown result");
	return -EINVAL;
}

static void emit_deliver(struct tv_sim *sim, struct sim_qp *req,
			 const struct sim_swr *swr, const struct xfer_out *out)
{
	struct tv_sim_event ev;
	bool send = swr->opcode == TV_WR_SEND ||
		    swr->opcode == TV_WR_SEND_WITH_IMM;
	uint64_t canon = 0;

	sim_event_init(&ev, out->res == XR_RNR ? TV_SIM_EV_RNR :
						 TV_SIM_EV_DELIVER, out->peer);
	ev.peer = req->node->id;
	ev.qp_num = req->attr.dest_qp_num;
	ev.opcode = swr->opcode;
	ev.status = out->status;
	ev.has_imm = swr->opcode == TV_WR_RDMA_WRITE_WITH_IMM ||
		     swr->opcode == TV_WR_SEND_WITH_IMM;
	ev.imm = ev.has_imm ? swr->imm_data : 0;
	ev.wr_id = swr->wr_id;
	ev.length = swr->length;
	if (!send) {
		ev.remote_addr = swr->remote_addr;
		ev.rkey = swr->rkey;
		canon = sim_canon_addr(sim, out->peer, swr->rkey,
				       swr->remote_addr);
	}
	sim_emit(sim, &ev, canon);
}

bool sim_xfer_deliver(struct tv_sim *sim, const struct sim_ev *ev)
{
	struct sim_qp *req = sim_qp_lookup(sim, ev->node, ev->qpn);
	struct xfer_out out = { .status = TV_WC_SUCCESS };
	struct sim_swr *swr;
	int ret = 0;

	/*
	 * Nothing on the wire: the delivery of a post that was refused after
	 * it was queued (its placement could not be, -ENOMEM) and taken back.
	 */
	if (!req || ev->gen != req->tx_gen || req->sq_exec >= req->sq_tx)
		return false;
	assert(req->base.state == TV_QPS_RTS && !req->tx_held);
	assert(req->sq_tx <= req->sq_tail);
	swr = sim_sq_slot(req, req->sq_exec);
	xfer_execute(sim, req, swr, &out);
	/* Canonical address before a failed responder's MR could go away:
	 * nothing frees MRs here, so the order is only for readability. */
	if (req->base.state == TV_QPS_RTS)
		ret = xfer_conclude(sim, req, swr, &out);
	/* else: a loopback responder error or a CQ overflow failed us too. */
	emit_deliver(sim, req, swr, &out);
	if (ret)
		sim_qp_to_err(sim, req, TV_WC_GENERAL_ERR);
	return true;
}

bool sim_xfer_ack(struct tv_sim *sim, const struct sim_ev *ev)
{
	struct sim_qp *qp = sim_qp_lookup(sim, ev->node, ev->qpn);
	struct sim_swr swr;
	bool rd;

	if (!qp || ev->gen != qp->err_gen)
		return false;
	assert(qp->sq_head < qp->sq_exec);
	/* Completions leave in posting order: responses come in order. */
	swr = *sim_sq_slot(qp, qp->sq_head);
	qp->sq_head++;
	rd = sim_is_rd_atomic(swr.opcode);
	if (rd) {
		assert(qp->rd_out > 0 && qp->rd_exec > 0);
		qp->rd_out--;
		qp->rd_exec--;
	}
	if (swr.status != TV_WC_SUCCESS) {
		sim_qp_complete_send(sim, qp, &swr, swr.status);
		sim_qp_to_err(sim, qp, TV_WC_WR_FLUSH_ERR);
	} else if (swr.signaled) {
		sim_qp_complete_send(sim, qp, &swr, TV_WC_SUCCESS);
	}
	/* A freed max_rd_atomic slot lets a waiting READ go (a CQ overflow
	 * above may have failed the QP). */
	if (rd && qp->base.state == TV_QPS_RTS && sim_xfer_transmit(sim, qp))
		sim_qp_to_err(sim, qp, TV_WC_GENERAL_ERR);
	return true;
}

bool sim_xfer_tx(struct tv_sim *sim, const struct sim_ev *ev)
{
	struct sim_qp *qp = sim_qp_lookup(sim, ev->node, ev->qpn);

	if (!qp || ev->gen != qp->tx_gen)
		return false;
	assert(qp->base.state == TV_QPS_RTS && !qp->tx_held);
	qp->tx_wake_ns = UINT64_MAX;
	if (sim_xfer_transmit(sim, qp))
		sim_qp_to_err(sim, qp, TV_WC_GENERAL_ERR);
	return true;
}

bool sim_xfer_retx(struct tv_sim *sim, const struct sim_ev *ev)
{
	struct sim_qp *qp = sim_qp_lookup(sim, ev->node, ev->qpn);

	if (!qp || ev->gen != qp->tx_gen)
		return false;
	assert(qp->base.state == TV_QPS_RTS && qp->tx_held);
	qp->tx_held = false;
	if (sim_xfer_transmit(sim, qp))
		sim_qp_to_err(sim, qp, TV_WC_GENERAL_ERR);
	return true;
}
