/*
 * modify_qp: the IB RC state machine with its required and optional
 * attribute masks (IBA 1.4 table 91, as libibverbs' ib_modify_qp_is_ok).
 */
#include <errno.h>
#include <string.h>

#include "sim_priv.h"

#define RTR_REQ                                                           \
	(TV_QP_AV | TV_QP_PATH_MTU | TV_QP_DEST_QPN | TV_QP_RQ_PSN |      \
	 TV_QP_MAX_DEST_RD_ATOMIC | TV_QP_MIN_RNR_TIMER)
#define RTS_REQ                                                           \
	(TV_QP_SQ_PSN | TV_QP_TIMEOUT | TV_QP_RETRY_CNT | TV_QP_RNR_RETRY | \
	 TV_QP_MAX_QP_RD_ATOMIC)
#define INIT_ATTRS (TV_QP_PKEY_INDEX | TV_QP_PORT | TV_QP_ACCESS_FLAGS)

/* Required and optional masks of cur -> next; -EINVAL if illegal. */
static int qp_transition(enum tv_vf_qp_state cur, enum tv_vf_qp_state next,
			 uint32_t *req_p, uint32_t *opt_p)
{
	uint32_t req = 0, opt = 0;

	if (next == TV_QPS_RESET || next == TV_QPS_ERR) {
		/* Any state may go there, with no other attribute. */
	} else if (cur == TV_QPS_RESET && next == TV_QPS_INIT) {
		req = INIT_ATTRS;
	} else if (cur == TV_QPS_INIT && next == TV_QPS_INIT) {
		opt = INIT_ATTRS;
	} else if (cur == TV_QPS_INIT && next == TV_QPS_RTR) {
		req = RTR_REQ;
		opt = TV_QP_PKEY_INDEX | TV_QP_ACCESS_FLAGS;
	} else if (cur == TV_QPS_RTR && next == TV_QPS_RTS) {
		req = RTS_REQ;
		opt = TV_QP_ACCESS_FLAGS | TV_QP_MIN_RNR_TIMER;
	} else if (cur == TV_QPS_RTS && next == TV_QPS_RTS) {
		opt = TV_QP_ACCESS_FLAGS | TV_QP_MIN_RNR_TIMER;
	} else {
		return -EINVAL;
	}
	*req_p = req;
	*opt_p = opt;
	return 0;
}

static bool mtu_ok(const struct sim_node *node, enum tv_vf_mtu mtu)
{
	return mtu >= TV_MTU_256 && mtu <= node->sim->cfg.active_mtu;
}

/* Values of the attributes the mask names; nothing is applied here. */
static int qp_check_values(const struct sim_node *node,
			   const struct tv_vf_qp_attr *a, uint32_t mask)
{
	const struct tv_sim_config *cfg = &node->sim->cfg;

	if ((mask & TV_QP_PORT) && a->port_num != SIM_PORT)
		return -EINVAL;
	if ((mask & TV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return -EINVAL;
	if ((mask & TV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~SIM_ACCESS_ALL))
		return -EINVAL;
	if ((mask & TV_QP_ACCESS_FLAGS) && cfg->no_atomics &&
	    (a->qp_access_flags & TV_ACCESS_REMOTE_ATOMIC))
		return -EOPNOTSUPP;
	if ((mask & TV_QP_PATH_MTU) && !mtu_ok(node, a->path_mtu))
		return -EINVAL;
	if ((mask & TV_QP_AV) && (a->sgid_index != 0 || a->sl > 15))
		return -EINVAL;
	if ((mask & TV_QP_DEST_QPN) && a->dest_qp_num > SIM_QPN_MAX)
		return -EINVAL;
	if ((mask & TV_QP_RQ_PSN) && a->rq_psn > SIM_PSN_MASK)
		return -EINVAL;
	if ((mask & TV_QP_SQ_PSN) && a->sq_psn > SIM_PSN_MASK)
		return -EINVAL;
	if ((mask & TV_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > cfg->max_qp_rd_atom)
		return -EINVAL;
	/* The requester's side has its own device limit (ibv_query_device:
	 * max_qp_init_rd_atom). */
	if ((mask & TV_QP_MAX_QP_RD_ATOMIC) &&
	    a->max_rd_atomic > cfg->max_qp_init_rd_atom)
		return -EINVAL;
	if ((mask & TV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & TV_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & TV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & TV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	return 0;
}

static void qp_apply(struct tv_vf_qp_attr *d, const struct tv_vf_qp_attr *a,
		     uint32_t mask, enum tv_sim_profile profile)
{
	if (mask & TV_QP_PORT)
		d->port_num = a->port_num;
	if (mask & TV_QP_PKEY_INDEX)
		d->pkey_index = a->pkey_index;
	if (mask & TV_QP_ACCESS_FLAGS)
		d->qp_access_flags = a->qp_access_flags;
	if (mask & TV_QP_PATH_MTU)
		d->path_mtu = a->path_mtu;
	if (mask & TV_QP_AV) {
		d->dlid = a->dlid;
		memcpy(d->dgid, a->dgid, sizeof(d->dgid));
		d->sgid_index = a->sgid_index;
		d->sl = a->sl;
		d->traffic_class = a->traffic_class;
	}
	if (mask & TV_QP_DEST_QPN)
		d->dest_qp_num = a->dest_qp_num;
	if (mask & TV_QP_RQ_PSN)
		d->rq_psn = a->rq_psn;
	if (mask & TV_QP_SQ_PSN)
		d->sq_psn = a->sq_psn;
	/* Rounded as the device does (profile.c); query_qp reports it. */
	if (mask & TV_QP_MAX_DEST_RD_ATOMIC)
		d->max_dest_rd_atomic =
			sim_rd_atomic_depth(profile, a->max_dest_rd_atomic);
	if (mask & TV_QP_MAX_QP_RD_ATOMIC)
		d->max_rd_atomic =
			sim_rd_atomic_depth(profile, a->max_rd_atomic);
	if (mask & TV_QP_MIN_RNR_TIMER)
		d->min_rnr_timer = a->min_rnr_timer;
	if (mask & TV_QP_TIMEOUT)
		d->timeout = a->timeout;
	if (mask & TV_QP_RETRY_CNT)
		d->retry_cnt = a->retry_cnt;
	if (mask & TV_QP_RNR_RETRY)
		d->rnr_retry = a->rnr_retry;
}

int sim_op_modify_qp(struct tv_vf_qp *qp, const struct tv_vf_qp_attr *attr,
		     uint32_t attr_mask)
{
	struct sim_qp *sqp = to_sim_qp(qp);
	struct tv_sim *sim = sqp->node->sim;
	enum tv_vf_qp_state cur = qp->state;
	enum tv_vf_qp_state next = cur;
	uint32_t req, opt, attrs = attr_mask & ~(uint32_t)TV_QP_STATE;
	int ret;

	if (!attr)
		return -EINVAL;
	if (attr_mask & TV_QP_STATE)
		next = attr->qp_state;
	ret = qp_transition(cur, next, &req, &opt);
	if (ret)
		return ret;
	if ((attrs & req) != req || (attrs & ~(req | opt)))
		return -EINVAL;
	ret = qp_check_values(sqp->node, attr, attrs);
	if (ret)
		return ret;

	/* Validated: from here on nothing fails. */
	if (next == TV_QPS_RESET) {
		sim_qp_reset(sim, sqp);
		return 0;
	}
	if (next == TV_QPS_ERR) {
		sim_qp_to_err(sim, sqp, TV_WC_WR_FLUSH_ERR);
		return 0;
	}
	qp_apply(&sqp->attr, attr, attrs, sim->cfg.profile);
	sim_qp_set_state(sim, sqp, next);
	return 0;
}
