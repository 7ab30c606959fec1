/*
 * The verbs facade: the complete stub table and backend-neutral helpers.
 */
#include <errno.h>
#include <string.h>

#include <tensorverbs/vf.h>

static int stub_query_device(struct tv_vf_device *dev,
			     struct tv_vf_device_attr *attr_p)
{
	return -EOPNOTSUPP;
}

static int stub_query_port(struct tv_vf_device *dev, uint8_t port,
			   struct tv_vf_port_attr *attr_p)
{
	return -EOPNOTSUPP;
}

static int stub_query_gid(struct tv_vf_device *dev, uint8_t port, int index,
			  uint8_t gid_p[16])
{
	return -EOPNOTSUPP;
}

static int stub_alloc_pd(struct tv_vf_device *dev, struct tv_vf_pd **pd_p)
{
	return -EOPNOTSUPP;
}

static int stub_dealloc_pd(struct tv_vf_pd *pd)
{
	return -EOPNOTSUPP;
}

static int stub_reg_mr(struct tv_vf_pd *pd, void *addr, size_t length,
		       uint32_t access, struct tv_vf_mr **mr_p)
{
	return -EOPNOTSUPP;
}

static int stub_dereg_mr(struct tv_vf_mr *mr)
{
	return -EOPNOTSUPP;
}

static int stub_create_cq(struct tv_vf_device *dev, uint32_t cqe,
			  struct tv_vf_cq **cq_p)
{
	return -EOPNOTSUPP;
}

static int stub_destroy_cq(struct tv_vf_cq *cq)
{
	return -EOPNOTSUPP;
}

static int stub_poll_cq(struct tv_vf_cq *cq, int n, struct tv_vf_wc *wc)
{
	return -EOPNOTSUPP;
}

static int stub_create_qp(struct tv_vf_pd *pd,
			  const struct tv_vf_qp_init_attr *init,
			  struct tv_vf_qp **qp_p)
{
	return -EOPNOTSUPP;
}

static int stub_modify_qp(struct tv_vf_qp *qp, const struct tv_vf_qp_attr *attr,
			  uint32_t mask)
{
	return -EOPNOTSUPP;
}

static int stub_query_qp(struct tv_vf_qp *qp, struct tv_vf_qp_attr *attr_p)
{
	return -EOPNOTSUPP;
}

static int stub_destroy_qp(struct tv_vf_qp *qp)
{
	return -EOPNOTSUPP;
}

static int stub_qp_endpoint(struct tv_vf_qp *qp, struct tv_vf_qp_endpoint *ep_p)
{
	return -EOPNOTSUPP;
}

static int stub_post_send(struct tv_vf_qp *qp, struct tv_vf_send_wr *wr,
			  struct tv_vf_send_wr **bad_wr_p)
{
	if (bad_wr_p)
		*bad_wr_p = wr;
	return -EOPNOTSUPP;
}

static int stub_post_recv(struct tv_vf_qp *qp, struct tv_vf_recv_wr *wr,
			  struct tv_vf_recv_wr **bad_wr_p)
{
	if (bad_wr_p)
		*bad_wr_p = wr;
	return -EOPNOTSUPP;
}

static uint64_t stub_now_ns(struct tv_vf_device *dev)
{
	return 0;
}

static int stub_wake_at(struct tv_vf_device *dev, uint64_t deadline_ns)
{
	return -EOPNOTSUPP;
}

static struct tv_vf_device *stub_inner(struct tv_vf_device *dev)
{
	(void)dev;
	return NULL; /* not a layer: the device is the backend's own */
}

static int stub_wait(struct tv_vf_device *dev, uint64_t deadline_ns)
{
	return -EOPNOTSUPP;
}

static int stub_wait_fds(struct tv_vf_device *dev, uint64_t deadline_ns,
			 struct pollfd *fds, unsigned int nfds)
{
	return -EOPNOTSUPP;
}

const struct tv_vf_ops tv_vf_stub_ops = {
	.name = "stub",
	.query_device = stub_query_device,
	.query_port = stub_query_port,
	.query_gid = stub_query_gid,
	.alloc_pd = stub_alloc_pd,
	.dealloc_pd = stub_dealloc_pd,
	.reg_mr = stub_reg_mr,
	.dereg_mr = stub_dereg_mr,
	.create_cq = stub_create_cq,
	.destroy_cq = stub_destroy_cq,
	.poll_cq = stub_poll_cq,
	.create_qp = stub_create_qp,
	.modify_qp = stub_modify_qp,
	.query_qp = stub_query_qp,
	.destroy_qp = stub_destroy_qp,
	.qp_endpoint = stub_qp_endpoint,
	.post_send = stub_post_send,
	.post_recv = stub_post_recv,
	.now_ns = stub_now_ns,
	.wake_at = stub_wake_at,
	.wait = stub_wait,
	.wait_fds = stub_wait_fds,
	.inner = stub_inner,
};

/* Copy one op from the stub table when the backend left it NULL. */
#define FILL(op)                                      \
	do {                                          \
		if (!ops->op)                         \
			ops->op = tv_vf_stub_ops.op;  \
	} while (0)

void tv_vf_ops_fill_stubs(struct tv_vf_ops *ops)
{
	FILL(query_device);
	FILL(query_port);
	FILL(query_gid);
	FILL(alloc_pd);
	FILL(dealloc_pd);
	FILL(reg_mr);
	FILL(dereg_mr);
	FILL(create_cq);
	FILL(destroy_cq);
	FILL(poll_cq);
	FILL(create_qp);
	FILL(modify_qp);
	FILL(query_qp);
	FILL(destroy_qp);
	FILL(qp_endpoint);
	FILL(post_send);
	FILL(post_recv);
	FILL(now_ns);
	FILL(wake_at);
	FILL(wait);
	FILL(wait_fds);
	FILL(inner);
}

const char *tv_vf_wc_status_str(enum tv_vf_wc_status status)
{
	static const char *const names[TV_WC_STATUS_COUNT] = {
		[TV_WC_SUCCESS] = "success",
		[TV_WC_LOC_LEN_ERR] = "local length error",
		[TV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[TV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[TV_WC_LOC_PROT_ERR] = "local protection error",
		[TV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[TV_WC_MW_BIND_ERR] = "memory management operation error",
		[TV_WC_BAD_RESP_ERR] = "bad response error",
		[TV_WC_LOC_ACCESS_ERR] = "local access error",
		[TV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[TV_WC_REM_ACCESS_ERR] = "remote access error",
		[TV_WC_REM_OP_ERR] = "remote operation error",
		[TV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[TV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[TV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[TV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[TV_WC_REM_ABORT_ERR] = "aborted error",
		[TV_WC_INV_EECN_ERR] = "invalid EE context number",
		[TV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[TV_WC_FATAL_ERR] = "fatal error",
		[TV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[TV_WC_GENERAL_ERR] = "general error",
	};
	if ((unsigned)status >= TV_WC_STATUS_COUNT)
		return "unknown";
	return names[status];
}

const char *tv_vf_qp_state_str(enum tv_vf_qp_state state)
{
	switch (state) {
	case TV_QPS_RESET: return "RESET";
	case TV_QPS_INIT: return "INIT";
	case TV_QPS_RTR: return "RTR";
	case TV_QPS_RTS: return "RTS";
	case TV_QPS_SQD: return "SQD";
	case TV_QPS_SQE: return "SQE";
	case TV_QPS_ERR: return "ERR";
	}
	return "unknown";
}

int tv_vf_mtu_bytes(enum tv_vf_mtu mtu)
{
	if (mtu < TV_MTU_256 || mtu > TV_MTU_4096)
		return -EINVAL;
	return 128 << mtu;
}

void tv_vf_connect_cfg_default(struct tv_vf_connect_cfg *cfg)
{
	/* The values the TensorFlow verbs transport used. */
	memset(cfg, 0, sizeof(*cfg));
	cfg->port_num = 1;
	cfg->sgid_index = 0;
	cfg->timeout = 14;
	cfg->retry_cnt = 7;
	cfg->rnr_retry = 7;
	cfg->min_rnr_timer = 12;
}

static int connect_to_init(struct tv_vf_qp *qp,
			   const struct tv_vf_connect_cfg *cfg)
{
	struct tv_vf_qp_attr attr = {
		.qp_state = TV_QPS_INIT,
		.pkey_index = cfg->pkey_index,
		.port_num = cfg->port_num,
		.qp_access_flags = cfg->access ? cfg->access :
				   TV_ACCESS_LOCAL_WRITE |
				   TV_ACCESS_REMOTE_WRITE |
				   TV_ACCESS_REMOTE_READ,
	};
	return tv_vf_modify_qp(qp, &attr, TV_QP_STATE | TV_QP_PKEY_INDEX |
					       TV_QP_PORT | TV_QP_ACCESS_FLAGS);
}

static int connect_to_rtr(struct tv_vf_qp *qp,
			  const struct tv_vf_connect_cfg *cfg,
			  const struct tv_vf_qp_endpoint *remote,
			  uint8_t rd_atomic)
{
	struct tv_vf_port_attr port;
	struct tv_vf_qp_attr attr = {
		.qp_state = TV_QPS_RTR,
		.path_mtu = cfg->path_mtu,
		.dest_qp_num = remote->qp_num,
		.rq_psn = remote->psn,
		.max_dest_rd_atomic = rd_atomic,
		.min_rnr_timer = cfg->min_rnr_timer,
		.dlid = remote->lid,
		.sgid_index = cfg->sgid_index,
		.sl = cfg->sl,
		.traffic_class = cfg->traffic_class,
		.port_num = cfg->port_num,
	};
	int ret;

	if (!attr.path_mtu) {
		ret = tv_vf_query_port(qp->dev, cfg->port_num, &port);
		if (ret)
			return ret;
		attr.path_mtu = port.active_mtu;
	}
	memcpy(attr.dgid, remote->gid, sizeof(attr.dgid));
	return tv_vf_modify_qp(qp, &attr,
			       TV_QP_STATE | TV_QP_AV | TV_QP_PATH_MTU |
				       TV_QP_DEST_QPN | TV_QP_RQ_PSN |
				       TV_QP_MAX_DEST_RD_ATOMIC |
				       TV_QP_MIN_RNR_TIMER);
}

static int connect_to_rts(struct tv_vf_qp *qp,
			  const struct tv_vf_connect_cfg *cfg,
			  const struct tv_vf_qp_endpoint *local,
			  uint8_t rd_atomic)
{
	struct tv_vf_qp_attr attr = {
		.qp_state = TV_QPS_RTS,
		.sq_psn = local->psn,
		.timeout = cfg->timeout,
		.retry_cnt = cfg->retry_cnt,
		.rnr_retry = cfg->rnr_retry,
		.max_rd_atomic = rd_atomic,
	};
	return tv_vf_modify_qp(qp, &attr,
			       TV_QP_STATE | TV_QP_SQ_PSN | TV_QP_TIMEOUT |
				       TV_QP_RETRY_CNT | TV_QP_RNR_RETRY |
				       TV_QP_MAX_QP_RD_ATOMIC);
}

int tv_vf_connect_qp(struct tv_vf_qp *qp, const struct tv_vf_connect_cfg *cfg,
		     const struct tv_vf_qp_endpoint *local,
		     const struct tv_vf_qp_endpoint *remote)
{
	struct tv_vf_device_attr dev_attr;
	uint8_t rd_atomic = cfg->max_rd_atomic;
	int ret;

	if (!rd_atomic) {
		/* Use what the device allows (the original hard-coded 1). */
		ret = tv_vf_query_device(qp->dev, &dev_attr);
		if (ret)
			return ret;
		rd_atomic = dev_attr.max_qp_rd_atom < 16 ?
				    (uint8_t)dev_attr.max_qp_rd_atom : 16;
		if (!rd_atomic)
			rd_atomic = 1;
	}
	ret = connect_to_init(qp, cfg);
	if (ret)
		return ret;
	ret = connect_to_rtr(qp, cfg, remote, cfg->max_dest_rd_atomic ?
						      cfg->max_dest_rd_atomic :
						      rd_atomic);
	if (ret)
		return ret;
	return connect_to_rts(qp, cfg, local, rd_atomic);
}
