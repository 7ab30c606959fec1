/*
 * post_send and post_recv: validate, copy the WR into the queue, report it,
 * and hand send WRs to the transmitter.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "sim_priv.h"

static bool opcode_ok(enum tv_vf_wr_opcode op)
{
	return op == TV_WR_RDMA_WRITE || op == TV_WR_RDMA_WRITE_WITH_IMM ||
	       op == TV_WR_SEND || op == TV_WR_SEND_WITH_IMM ||
	       op == TV_WR_RDMA_READ || op == TV_WR_ATOMIC_CMP_AND_SWP ||
	       op == TV_WR_ATOMIC_FETCH_AND_ADD;
}

static bool is_atomic(enum tv_vf_wr_opcode op)
{
	return op == TV_WR_ATOMIC_CMP_AND_SWP ||
	       op == TV_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * An atomic names one 8-byte local buffer for the old value.  Hardware
 * is laxer (mlx5 takes other sizes, rxe several SGEs); we are not, so
 * that code which works here works on both.  A device without atomics
 * refuses them at post.  rxe's provider also refuses a misaligned
 * target at post (validate_send_wr: remote_addr & 7), where mlx5 posts
 * it and the responder NAKs it (xfer.c).
 */
static int atomic_check(const struct sim_qp *qp,
			const struct tv_vf_send_wr *wr, uint32_t len)
{
	if (!is_atomic(wr->opcode))
		return 0;
	if (qp->node->sim->cfg.no_atomics)
		return -EOPNOTSUPP;
	if (wr->num_sge != 1 || len != 8)
		return -EINVAL;
	if (sim_is_rxe(qp->node->sim) && (wr->remote_addr & 7))
		return -EINVAL;
	return 0;
}

static bool has_imm(enum tv_vf_wr_opcode op)
{
	return op == TV_WR_RDMA_WRITE_WITH_IMM || op == TV_WR_SEND_WITH_IMM;
}

static bool is_send(enum tv_vf_wr_opcode op)
{
	return op == TV_WR_SEND || op == TV_WR_SEND_WITH_IMM;
}

/* Sum of the SGE lengths, or -EINVAL past the IB message size. */
static int sge_total(const struct tv_vf_sge *sg, int n, uint32_t *len_p)
{
	uint64_t len = 0;

	if (n > 0 && !sg)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		len += sg[i].length;
	if (len > SIM_MAX_MSG_BYTES)
		return -EINVAL;
	*len_p = (uint32_t)len;
	return 0;
}

static void emit_post_send(struct tv_sim *sim, struct sim_qp *qp,
			   const struct sim_swr *swr)
{
	struct tv_sim_event ev;
	uint32_t peer = sim_gid_node(sim, qp->attr.dgid);
	uint64_t canon = 0;

	sim_event_init(&ev, TV_SIM_EV_POST_SEND, qp->node->id);
	ev.peer = peer;
	ev.qp_num = qp->base.qp_num;
	ev.opcode = swr->opcode;
	ev.has_imm = has_imm(swr->opcode);
	ev.imm = ev.has_imm ? swr->imm_data : 0;
	ev.wr_id = swr->wr_id;
	ev.length = swr->length;
	if (!is_send(swr->opcode)) {
		ev.remote_addr = swr->remote_addr;
		ev.rkey = swr->rkey;
		canon = sim_canon_addr(sim, peer, swr->rkey, swr->remote_addr);
	}
	sim_emit(sim, &ev, canon);
}

static void swr_fill(struct sim_qp *qp, struct sim_swr *swr,
		     const struct tv_vf_send_wr *wr, uint32_t len)
{
	swr->wr_id = wr->wr_id;
	swr->remote_addr = wr->remote_addr;
	swr->num_sge = (uint32_t)wr->num_sge;
	if (wr->num_sge)
		memcpy(swr->sges, wr->sg_list,
		       (size_t)wr->num_sge * sizeof(*swr->sges));
	swr->length = len;
	swr->opcode = wr->opcode;
	swr->imm_data = wr->imm_data;
	swr->rkey = wr->rkey;
	swr->compare_add = wr->compare_add;
	swr->swap = wr->swap;
	swr->status = TV_WC_SUCCESS;
	swr->rnr_left = qp->attr.rnr_retry;
	swr->retry_left = qp->attr.retry_cnt;
	swr->signaled = qp->sq_sig_all || (wr->send_flags & TV_SEND_SIGNALED);
	swr->depart_ns = 0;
	swr->is_inline = false;
}

/*
 * TV_SEND_INLINE: the payload is taken now, from the caller's memory as it
 * is, with no lkey (the WQE carries it): one local segment from then on,
 * and the caller may reuse its buffer as soon as the post returns.
 */
static void swr_take_inline(struct sim_swr *swr,
			    const struct tv_vf_send_wr *wr)
{
	uint32_t off = 0;

	for (int i = 0; i < wr->num_sge; i++) {
		const struct tv_vf_sge *sg = &wr->sg_list[i];

		if (sg->length)
			memcpy(swr->inline_buf + off,
			       (const void *)(uintptr_t)sg->addr, sg->length);
		off += sg->length;
	}
	assert(off == swr->length);
	swr->is_inline = true;
	swr->num_sge = swr->length ? 1 : 0;
	swr->sges[0] = (struct tv_vf_sge){
		.addr = (uint64_t)(uintptr_t)swr->inline_buf,
		.length = swr->length,
	};
}

/* Inline: writes and sends only, no more than the QP took at creation. */
static int inline_check(const struct sim_qp *qp,
			const struct tv_vf_send_wr *wr, uint32_t len)
{
	if (!(wr->send_flags & TV_SEND_INLINE))
		return 0;
	if (wr->opcode == TV_WR_RDMA_READ || is_atomic(wr->opcode) ||
	    len > qp->max_inline_data)
		return -EINVAL;
	return 0;
}

static int post_one_send(struct tv_sim *sim, struct sim_qp *qp,
			 const struct tv_vf_send_wr *wr)
{
	struct sim_swr tmp, *swr;
	struct tv_vf_sge sges[SIM_MAX_SGE];
	uint32_t len;
	int ret;

	if (qp->base.state != TV_QPS_RTS && qp->base.state != TV_QPS_ERR)
		return -EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge ||
	    !opcode_ok(wr->opcode))
		return -EINVAL;
	ret = sge_total(wr->sg_list, wr->num_sge, &len);
	if (!ret)
		ret = inline_check(qp, wr, len);
	if (!ret)
		ret = atomic_check(qp, wr, len);
	if (ret)
		return ret;
	if (qp->base.state == TV_QPS_ERR) {
		/* Accepted, and flushed at once, as hardware does. */
		tmp.sges = sges;
		swr_fill(qp, &tmp, wr, len);
		tmp.idx = SIM_NO_SLOT; /* takes no slot (docs/simulator.md) */
		sim->stats.work_requests++;
		emit_post_send(sim, qp, &tmp);
		sim_qp_complete_send(sim, qp, &tmp, TV_WC_WR_FLUSH_ERR);
		return 0;
	}
	if (sim_sq_used(qp) >= qp->max_send_wr)
		return -ENOMEM;
	swr = sim_sq_slot(qp, qp->sq_tail);
	swr_fill(qp, swr, wr, len);
	swr->idx = qp->sq_tail;
	if (wr->send_flags & TV_SEND_INLINE)
		swr_take_inline(swr, wr);
	qp->sq_tail++;
	ret = sim_xfer_transmit(sim, qp);
	if (ret && qp->sq_tx == qp->sq_tail - 1) {
		/* This WR was the one that could not go: take it back. */
		qp->sq_tail--;
		return ret;
	}
	sim->stats.work_requests++;
	emit_post_send(sim, qp, swr);
	if (ret) /* one ahead of it could not go: fail as an event would */
		sim_qp_to_err(sim, qp, TV_WC_GENERAL_ERR);
	return 0;
}

/*
 * post_ns: this call's doorbell.  Calls of a node are one after another
 * (one poster); its WRs may leave once it is over.
 */
static void post_doorbell(struct tv_sim *sim, struct sim_qp *qp)
{
	struct sim_node *n = qp->node;
	uint64_t start = n->post_done_ns > sim->now_ns ? n->post_done_ns :
							 sim->now_ns;

	n->post_done_ns = start + sim->cfg.post_ns;
	if (qp->op_next_ns < n->post_done_ns)
		qp->op_next_ns = n->post_done_ns;
}

int sim_op_post_send(struct tv_vf_qp *qp, struct tv_vf_send_wr *wr,
		     struct tv_vf_send_wr **bad_wr_p)
{
	struct sim_qp *sqp = to_sim_qp(qp);
	struct tv_sim *sim = sqp->node->sim;
	int ret;

	if (sim->cfg.post_ns && wr && qp->state == TV_QPS_RTS)
		post_doorbell(sim, sqp);
	for (; wr; wr = wr->next) {
		ret = post_one_send(sqp->node->sim, sqp, wr);
		if (ret) {
			if (bad_wr_p)
				*bad_wr_p = wr;
			return ret;
		}
	}
	return 0;
}

static void emit_post_recv(struct tv_sim *sim, struct sim_qp *qp,
			   uint64_t wr_id, uint32_t len)
{
	struct tv_sim_event ev;

	sim_event_init(&ev, TV_SIM_EV_POST_RECV, qp->node->id);
	ev.qp_num = qp->base.qp_num;
	ev.wr_id = wr_id;
	ev.length = len;
	sim_emit(sim, &ev, 0);
}

static int post_one_recv(struct tv_sim *sim, struct sim_qp *qp,
			 const struct tv_vf_recv_wr *wr)
{
	struct sim_rwr *rwr;
	struct tv_vf_wc wc;
	uint32_t len;
	int ret;

	if (qp->base.state == TV_QPS_RESET)
		return -EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_recv_sge)
		return -EINVAL;
	ret = sge_total(wr->sg_list, wr->num_sge, &len);
	if (ret)
		return ret;
	if (qp->base.state == TV_QPS_ERR) {
		emit_post_recv(sim, qp, wr->wr_id, len);
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr->wr_id;
		wc.status = TV_WC_WR_FLUSH_ERR;
		wc.opcode = TV_WC_RECV;
		wc.qp_num = qp->base.qp_num;
		sim_cq_push(sim, to_sim_cq(qp->base.recv_cq), &wc, SIM_NO_SLOT);
		return 0;
	}
	if (qp->rq_tail - qp->rq_head >= qp->max_recv_wr)
		return -ENOMEM;
	rwr = sim_rq_slot(qp, qp->rq_tail);
	rwr->wr_id = wr->wr_id;
	rwr->num_sge = (uint32_t)wr->num_sge;
	rwr->length = len;
	if (wr->num_sge)
		memcpy(rwr->sges, wr->sg_list,
		       (size_t)wr->num_sge * sizeof(*rwr->sges));
	qp->rq_tail++;
	emit_post_recv(sim, qp, wr->wr_id, len);
	return 0;
}

int sim_op_post_recv(struct tv_vf_qp *qp, struct tv_vf_recv_wr *wr,
		     struct tv_vf_recv_wr **bad_wr_p)
{
	struct sim_qp *sqp = to_sim_qp(qp);
	int ret;

	for (; wr; wr = wr->next) {
		ret = post_one_recv(sqp->node->sim, sqp, wr);
		if (ret) {
			if (bad_wr_p)
				*bad_wr_p = wr;
			return ret;
		}
	}
	return 0;
}
