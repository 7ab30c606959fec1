/*
 * Queue pairs: creation, the IB state machine, posting, flushing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_priv.h"

/* ---- create / destroy ----------------------------------------------------- */

static int qp_check_init(struct sim_node *node, struct tv_vf_pd *pd,
			 const struct tv_vf_qp_init_attr *init)
{
	const struct tv_sim_config *cfg = &node->sim->cfg;

	if (!init || !init->send_cq || !init->recv_cq)
		return -EINVAL;
	if (init->send_cq->dev != pd->dev || init->recv_cq->dev != pd->dev)
		return -EINVAL;
	if (init->max_send_wr > cfg->max_qp_wr ||
	    init->max_recv_wr > cfg->max_qp_wr)
		return -EINVAL;
	if (init->max_send_sge > SIM_MAX_SGE ||
	    init->max_recv_sge > SIM_MAX_SGE)
		return -EINVAL;
	/* As hardware: more inline data than the device has is refused. */
	if (init->max_inline_data > SIM_MAX_INLINE)
		return -EINVAL;
	if (node->nr_qps >= SIM_MAX_QP ||
	    node->qp_tab_len >= SIM_QPN_MAX - SIM_QPN_BASE)
		return -ENOMEM;
	return 0;
}

/* Room for one more QPN in the table (QPNs are never reused). */
static int qp_tab_reserve(struct sim_node *node)
{
	uint32_t ncap;
	struct sim_qp **tab;

	if (node->qp_tab_len < node->qp_tab_cap)
		return 0;
	ncap = node->qp_tab_cap ? node->qp_tab_cap * 2 : 64;
	tab = realloc(node->qp_tab, ncap * sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	node->qp_tab = tab;
	node->qp_tab_cap = ncap;
	return 0;
}

static int qp_alloc_queues(struct sim_qp *qp)
{
	/* A zero-depth queue still gets one slot: no calloc(0) corner. */
	size_t sq = qp->max_send_wr ? qp->max_send_wr : 1;
	size_t rq = qp->max_recv_wr ? qp->max_recv_wr : 1;
	size_t ssge = qp->max_send_sge ? qp->max_send_sge : 1;
	size_t rsge = qp->max_recv_sge ? qp->max_recv_sge : 1;

	qp->sq = calloc(sq, sizeof(*qp->sq));
	qp->sq_sges = calloc(sq * ssge, sizeof(*qp->sq_sges));
	qp->rq = calloc(rq, sizeof(*qp->rq));
	qp->rq_sges = calloc(rq * rsge, sizeof(*qp->rq_sges));
	if (!qp->sq || !qp->sq_sges || !qp->rq || !qp->rq_sges)
		return -ENOMEM;
	if (qp->max_inline_data) {
		qp->sq_inline = calloc(sq, qp->max_inline_data);
		if (!qp->sq_inline)
			return -ENOMEM;
	}
	for (size_t i = 0; i < sq; i++) {
		qp->sq[i].sges = &qp->sq_sges[i * ssge];
		qp->sq[i].inline_buf = qp->sq_inline ?
			&qp->sq_inline[i * qp->max_inline_data] : NULL;
	}
	for (size_t i = 0; i < rq; i++)
		qp->rq[i].sges = &qp->rq_sges[i * rsge];
	return 0;
}

static void qp_free_queues(struct sim_qp *qp)
{
	free(qp->rq_sges);
	free(qp->rq);
	free(qp->sq_inline);
	free(qp->sq_sges);
	free(qp->sq);
}

int sim_op_create_qp(struct tv_vf_pd *pd,
		     const struct tv_vf_qp_init_attr *init,
		     struct tv_vf_qp **qp_p)
{
	struct sim_node *node = to_sim_node(pd->dev);
	struct sim_qp *qp;
	int ret;

	ret = qp_check_init(node, pd, init);
	if (ret)
		return ret;
	ret = qp_tab_reserve(node);
	if (ret)
		return ret;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->max_send_wr = init->max_send_wr;
	qp->max_recv_wr = init->max_recv_wr;
	qp->max_send_sge = init->max_send_sge;
	qp->max_recv_sge = init->max_recv_sge;
	qp->max_inline_data = init->max_inline_data;
	ret = qp_alloc_queues(qp);
	if (ret)
		goto err_queues;
	qp->node = node;
	qp->sq_sig_all = init->sq_sig_all != 0;
	qp->psn = (uint32_t)tv_prng_next(&node->prng) & SIM_PSN_MASK;
	qp->base = (struct tv_vf_qp){
		.dev = pd->dev, .pd = pd,
		.send_cq = init->send_cq, .recv_cq = init->recv_cq,
		.qp_num = SIM_QPN_BASE + node->qp_tab_len,
		.state = TV_QPS_RESET,
		.max_inline_data = qp->max_inline_data,
	};
	qp->attr.qp_state = TV_QPS_RESET;
	qp->tx_wake_ns = UINT64_MAX;
	node->qp_tab[node->qp_tab_len++] = qp;
	sim_list_add_tail(&node->qps, &qp->link);
	node->nr_qps++;
	to_sim_pd(pd)->nr_qps++;
	to_sim_cq(init->send_cq)->nr_qps++;
	to_sim_cq(init->recv_cq)->nr_qps++;
	*qp_p = &qp->base;
	return 0;

err_queues:
	qp_free_queues(qp);
	free(qp);
	return ret;
}

struct sim_qp *sim_qp_lookup(struct tv_sim *sim, uint32_t node, uint32_t qpn)
{
	struct sim_node *n;

	if (node >= sim->cfg.num_nodes)
		return NULL;
	n = &sim->nodes[node];
	if (qpn < SIM_QPN_BASE || qpn - SIM_QPN_BASE >= n->qp_tab_len)
		return NULL;
	return n->qp_tab[qpn - SIM_QPN_BASE];
}

/* Pending events find no QP under this number and are dropped. */
void sim_qp_free(struct sim_qp *qp)
{
	struct sim_node *node = qp->node;

	assert(node->qp_tab[qp->base.qp_num - SIM_QPN_BASE] == qp);
	assert(node->nr_qps > 0);
	node->qp_tab[qp->base.qp_num - SIM_QPN_BASE] = NULL;
	sim_list_del(&qp->link);
	node->nr_qps--;
	to_sim_pd(qp->base.pd)->nr_qps--;
	to_sim_cq(qp->base.send_cq)->nr_qps--;
	to_sim_cq(qp->base.recv_cq)->nr_qps--;
	qp_free_queues(qp);
	free(qp);
}

int sim_op_destroy_qp(struct tv_vf_qp *qp)
{
	sim_qp_free(to_sim_qp(qp));
	return 0;
}

int sim_op_query_qp(struct tv_vf_qp *qp, struct tv_vf_qp_attr *attr_p)
{
	struct sim_qp *sqp = to_sim_qp(qp);

	assert(sqp->attr.qp_state == qp->state);
	*attr_p = sqp->attr;
	return 0;
}

int sim_op_qp_endpoint(struct tv_vf_qp *qp, struct tv_vf_qp_endpoint *ep_p)
{
	struct sim_qp *sqp = to_sim_qp(qp);
	struct tv_vf_qp_endpoint ep;

	memset(&ep, 0, sizeof(ep));
	ep.qp_num = qp->qp_num;
	ep.psn = sqp->psn;
	ep.lid = (uint16_t)(sqp->node->id + 1);
	sim_gid_of(sqp->node->id, ep.gid);
	*ep_p = ep;
	return 0;
}

/* ---- completions and flushing -------------------------------------------- */

static enum tv_vf_wc_opcode wc_opcode_of(enum tv_vf_wr_opcode op)
{
	switch (op) {
	case TV_WR_RDMA_WRITE:
	case TV_WR_RDMA_WRITE_WITH_IMM:
		return TV_WC_RDMA_WRITE;
	case TV_WR_SEND:
	case TV_WR_SEND_WITH_IMM:
		return TV_WC_SEND;
	case TV_WR_RDMA_READ:
		return TV_WC_RDMA_READ;
	case TV_WR_ATOMIC_CMP_AND_SWP:
		return TV_WC_COMP_SWAP;
	case TV_WR_ATOMIC_FETCH_AND_ADD:
		return TV_WC_FETCH_ADD;
	}
	assert(0 && "opcode checked at post time");
	return TV_WC_SEND;
}

void sim_qp_complete_send(struct tv_sim *sim, struct sim_qp *qp,
			  const struct sim_swr *swr,
			  enum tv_vf_wc_status status)
{
	struct tv_vf_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = swr->wr_id;
	wc.status = status;
	wc.opcode = wc_opcode_of(swr->opcode);
	wc.byte_len = status == TV_WC_SUCCESS ? swr->length : 0;
	wc.qp_num = qp->base.qp_num;
	sim_cq_push(sim, to_sim_cq(qp->base.send_cq), &wc, swr->idx);
}

static void qp_flush_recv(struct tv_sim *sim, struct sim_qp *qp,
			  uint64_t wr_id)
{
	struct tv_vf_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = TV_WC_WR_FLUSH_ERR;
	wc.opcode = TV_WC_RECV;
	wc.qp_num = qp->base.qp_num;
	sim_cq_push(sim, to_sim_cq(qp->base.recv_cq), &wc, SIM_NO_SLOT);
}

void sim_qp_set_state(struct tv_sim *sim, struct sim_qp *qp,
		      enum tv_vf_qp_state state)
{
	struct tv_sim_event ev;

	if (qp->base.state == state)
		return;
	qp->base.state = state;
	qp->attr.qp_state = state;
	sim_event_init(&ev, TV_SIM_EV_QP_STATE, qp->node->id);
	ev.qp_num = qp->base.qp_num;
	ev.status = state;
	sim_emit(sim, &ev, 0);
}

/* Forget every WR and invalidate every event in flight for this QP. */
static void qp_drop_all(struct sim_qp *qp)
{
	qp->sq_head = qp->sq_exec = qp->sq_tx = qp->sq_tail;
	qp->rq_head = qp->rq_tail;
	qp->tx_gen++;
	qp->err_gen++;
	qp->tx_held = false;
	qp->rd_out = 0;
	qp->rd_exec = 0;
	qp->tx_wake_ns = UINT64_MAX; /* its event has a stale tx_gen now */
}

void sim_qp_to_err(struct tv_sim *sim, struct sim_qp *qp,
		   enum tv_vf_wc_status head_status)
{
	uint64_t sq_head = qp->sq_head, sq_tail = qp->sq_tail;
	uint64_t rq_head = qp->rq_head, rq_tail = qp->rq_tail;

	if (qp->base.state == TV_QPS_ERR)
		return;
	/*
	 * State first and queues emptied before any completion is pushed: a
	 * push may overflow a CQ, which sends its QPs (this one included) to
	 * ERR; they must find this QP already there.  The slots stay intact.
	 */
	qp_drop_all(qp);
	sim_qp_set_state(sim, qp, TV_QPS_ERR);
	for (uint64_t i = sq_head; i < sq_tail; i++)
		sim_qp_complete_send(sim, qp, sim_sq_slot(qp, i),
				     i == sq_head ? head_status :
						    TV_WC_WR_FLUSH_ERR);
	for (uint64_t i = rq_head; i < rq_tail; i++)
		qp_flush_recv(sim, qp, sim_rq_slot(qp, i)->wr_id);
}

int tv_sim_qp_fail(struct tv_vf_qp *qp, enum tv_vf_wc_status status)
{
	struct sim_qp *sqp = to_sim_qp(qp);

	if (status == TV_WC_SUCCESS || (unsigned)status >= TV_WC_STATUS_COUNT)
		return -EINVAL;
	if (qp->state == TV_QPS_RESET)
		return -EINVAL;
	sim_qp_to_err(sqp->node->sim, sqp, status);
	return 0;
}

void sim_qp_reset(struct tv_sim *sim, struct sim_qp *qp)
{
	qp_drop_all(qp);
	/* The queue starts empty again; CQEs still queued of the WRs
	 * dropped name indices below sq_free and free nothing. */
	qp->sq_free = qp->sq_tail;
	memset(&qp->attr, 0, sizeof(qp->attr));
	sim_qp_set_state(sim, qp, TV_QPS_RESET);
}
