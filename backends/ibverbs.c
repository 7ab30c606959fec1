/*
 * The libibverbs backend: the verbs facade as a thin mapping onto
 * rdma-core.
 *
 * Conventions at the edge: verbs return a positive errno (or -1 and
 * errno), or NULL and errno; the facade gets 0 or a negative errno.
 * Immediates are big-endian on the wire and host order in the facade.
 */
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "ibverbs_priv.h"

/* ---- conventions at the edge ------------------------------------------ */

/* A verbs return value (0, positive errno, or -1 with errno) to ours. */
static int from_verbs(int ret)
{
	if (ret > 0)
		return -ret;
	if (ret == -1)
		return errno > 0 ? -errno : -EIO;
	return ret;
}

/* After a verbs call returned NULL: the errno it left, negated. */
static int from_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/* ---- enum mappings ---------------------------------------------------- */

int tv_ibv_map_wc_status(int ibv_status, enum tv_vf_wc_status *status_p)
{
	static const enum tv_vf_wc_status map[] = {
		[IBV_WC_SUCCESS] = TV_WC_SUCCESS,
		[IBV_WC_LOC_LEN_ERR] = TV_WC_LOC_LEN_ERR,
		[IBV_WC_LOC_QP_OP_ERR] = TV_WC_LOC_QP_OP_ERR,
		[IBV_WC_LOC_EEC_OP_ERR] = TV_WC_LOC_EEC_OP_ERR,
		[IBV_WC_LOC_PROT_ERR] = TV_WC_LOC_PROT_ERR,
		[IBV_WC_WR_FLUSH_ERR] = TV_WC_WR_FLUSH_ERR,
		[IBV_WC_MW_BIND_ERR] = TV_WC_MW_BIND_ERR,
		[IBV_WC_BAD_RESP_ERR] = TV_WC_BAD_RESP_ERR,
		[IBV_WC_LOC_ACCESS_ERR] = TV_WC_LOC_ACCESS_ERR,
		[IBV_WC_REM_INV_REQ_ERR] = TV_WC_REM_INV_REQ_ERR,
		[IBV_WC_REM_ACCESS_ERR] = TV_WC_REM_ACCESS_ERR,
		[IBV_WC_REM_OP_ERR] = TV_WC_REM_OP_ERR,
		[IBV_WC_RETRY_EXC_ERR] = TV_WC_RETRY_EXC_ERR,
		[IBV_WC_RNR_RETRY_EXC_ERR] = TV_WC_RNR_RETRY_EXC_ERR,
		[IBV_WC_LOC_RDD_VIOL_ERR] = TV_WC_LOC_RDD_VIOL_ERR,
		[IBV_WC_REM_INV_RD_REQ_ERR] = TV_WC_REM_INV_RD_REQ_ERR,
		[IBV_WC_REM_ABORT_ERR] = TV_WC_REM_ABORT_ERR,
		[IBV_WC_INV_EECN_ERR] = TV_WC_INV_EECN_ERR,
		[IBV_WC_INV_EEC_STATE_ERR] = TV_WC_INV_EEC_STATE_ERR,
		[IBV_WC_FATAL_ERR] = TV_WC_FATAL_ERR,
		[IBV_WC_RESP_TIMEOUT_ERR] = TV_WC_RESP_TIMEOUT_ERR,
		[IBV_WC_GENERAL_ERR] = TV_WC_GENERAL_ERR,
	};
	_Static_assert(sizeof(map) / sizeof(map[0]) == TV_WC_STATUS_COUNT,
		       "every facade status has its verbs status");

	/* IBV_WC_TM_* only come from tag-matching SRQs, which we never use. */
	if (ibv_status < 0 || ibv_status >= TV_WC_STATUS_COUNT)
		return -EPROTO;
	*status_p = map[ibv_status];
	return 0;
}

int tv_ibv_map_wc_opcode(int ibv_opcode, enum tv_vf_wc_opcode *opcode_p)
{
	switch (ibv_opcode) {
	case IBV_WC_SEND: *opcode_p = TV_WC_SEND; return 0;
	case IBV_WC_RDMA_WRITE: *opcode_p = TV_WC_RDMA_WRITE; return 0;
	case IBV_WC_RDMA_READ: *opcode_p = TV_WC_RDMA_READ; return 0;
	case IBV_WC_COMP_SWAP: *opcode_p = TV_WC_COMP_SWAP; return 0;
	case IBV_WC_FETCH_ADD: *opcode_p = TV_WC_FETCH_ADD; return 0;
	case IBV_WC_RECV: *opcode_p = TV_WC_RECV; return 0;
	case IBV_WC_RECV_RDMA_WITH_IMM:
		*opcode_p = TV_WC_RECV_RDMA_WITH_IMM;
		return 0;
	}
	/* MW binds, TSO, tag matching: we post none of them. */
	return -EPROTO;
}

static enum tv_vf_port_state port_state_from_ibv(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_INIT: return TV_PORT_INIT;
	case IBV_PORT_ARMED: return TV_PORT_ARMED;
	case IBV_PORT_ACTIVE:
	case IBV_PORT_ACTIVE_DEFER: return TV_PORT_ACTIVE;
	case IBV_PORT_NOP:
	case IBV_PORT_DOWN: break;
	}
	return TV_PORT_DOWN;
}

static int qp_state_to_ibv(enum tv_vf_qp_state s, enum ibv_qp_state *out_p)
{
	switch (s) {
	case TV_QPS_RESET: *out_p = IBV_QPS_RESET; return 0;
	case TV_QPS_INIT: *out_p = IBV_QPS_INIT; return 0;
	case TV_QPS_RTR: *out_p = IBV_QPS_RTR; return 0;
	case TV_QPS_RTS: *out_p = IBV_QPS_RTS; return 0;
	case TV_QPS_SQD: *out_p = IBV_QPS_SQD; return 0;
	case TV_QPS_SQE: *out_p = IBV_QPS_SQE; return 0;
	case TV_QPS_ERR: *out_p = IBV_QPS_ERR; return 0;
	}
	return -EINVAL;
}

static enum tv_vf_qp_state qp_state_from_ibv(enum ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET: return TV_QPS_RESET;
	case IBV_QPS_INIT: return TV_QPS_INIT;
	case IBV_QPS_RTR: return TV_QPS_RTR;
	case IBV_QPS_RTS: return TV_QPS_RTS;
	case IBV_QPS_SQD: return TV_QPS_SQD;
	case IBV_QPS_SQE: return TV_QPS_SQE;
	case IBV_QPS_ERR:
	case IBV_QPS_UNKNOWN: break;
	}
	return TV_QPS_ERR;
}

static const struct {
	uint32_t tv;
	unsigned int ibv;
} access_map[] = {
	{ TV_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE },
	{ TV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE },
	{ TV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ },
	{ TV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC },
};

static int access_to_ibv(uint32_t tv, unsigned int *ibv_p)
{
	unsigned int out = 0;

	for (size_t i = 0; i < sizeof(access_map) / sizeof(access_map[0]); i++)
		if (tv & access_map[i].tv) {
			out |= access_map[i].ibv;
			tv &= ~access_map[i].tv;
		}
	if (tv)
		return -EINVAL;
	*ibv_p = out;
	return 0;
}

static uint32_t access_from_ibv(unsigned int ibv)
{
	uint32_t out = 0;

	for (size_t i = 0; i < sizeof(access_map) / sizeof(access_map[0]); i++)
		if (ibv & access_map[i].ibv)
			out |= access_map[i].tv;
	return out;
}

static const struct {
	uint32_t tv;
	int ibv;
} mask_map[] = {
	{ TV_QP_STATE, IBV_QP_STATE },
	{ TV_QP_ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS },
	{ TV_QP_PKEY_INDEX, IBV_QP_PKEY_INDEX },
	{ TV_QP_PORT, IBV_QP_PORT },
	{ TV_QP_AV, IBV_QP_AV },
	{ TV_QP_PATH_MTU, IBV_QP_PATH_MTU },
	{ TV_QP_TIMEOUT, IBV_QP_TIMEOUT },
	{ TV_QP_RETRY_CNT, IBV_QP_RETRY_CNT },
	{ TV_QP_RNR_RETRY, IBV_QP_RNR_RETRY },
	{ TV_QP_RQ_PSN, IBV_QP_RQ_PSN },
	{ TV_QP_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC },
	{ TV_QP_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER },
	{ TV_QP_SQ_PSN, IBV_QP_SQ_PSN },
	{ TV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC },
	{ TV_QP_DEST_QPN, IBV_QP_DEST_QPN },
};

static int mask_to_ibv(uint32_t tv, int *ibv_p)
{
	int out = 0;

	for (size_t i = 0; i < sizeof(mask_map) / sizeof(mask_map[0]); i++)
		if (tv & mask_map[i].tv) {
			out |= mask_map[i].ibv;
			tv &= ~mask_map[i].tv;
		}
	if (tv)
		return -EINVAL;
	*ibv_p = out;
	return 0;
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* ---- device listing --------------------------------------------------- */

#ifndef TV_HAVE_IBV_QUERY_GID_EX
/*
 * Old rdma-core: read the GID type from sysfs.  The kernel writes
 * "IB/RoCE v1" or "RoCE v2"; InfiniBand ports have no such file.
 */
static enum tv_ibv_gid_type gid_type_sysfs(struct ibv_context *ctx,
					   uint8_t port, uint32_t index,
					   bool ethernet)
{
	char path[512], buf[32] = "";
	FILE *f;

	if (!ethernet)
		return TV_IBV_GID_IB;
	snprintf(path, sizeof(path), "%s/ports/%u/gid_attrs/types/%u",
		 ctx->device->ibdev_path, port, index);
	f = fopen(path, "r");
	if (!f)
		return TV_IBV_GID_UNKNOWN;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	if (!strncmp(buf, "RoCE v2", 7))
		return TV_IBV_GID_ROCE_V2;
	if (!strncmp(buf, "IB/RoCE v1", 10))
		return TV_IBV_GID_ROCE_V1;
	return TV_IBV_GID_UNKNOWN;
}
#endif

/* One GID table entry: 0, -ENODATA when empty, or another error. */
static int query_gid_entry(struct ibv_context *ctx, uint8_t port,
			   uint32_t index, bool ethernet, struct tv_ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	g->index = index;
#ifdef TV_HAVE_IBV_QUERY_GID_EX
	struct ibv_gid_entry e;
	int ret = from_verbs(ibv_query_gid_ex(ctx, port, index, &e, 0));

	(void)ethernet;
	if (ret)
		return ret;
	memcpy(g->raw, e.gid.raw, sizeof(g->raw));
	g->type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? TV_IBV_GID_ROCE_V2 :
		  e.gid_type == IBV_GID_TYPE_ROCE_V1 ? TV_IBV_GID_ROCE_V1 :
		  e.gid_type == IBV_GID_TYPE_IB	     ? TV_IBV_GID_IB :
							TV_IBV_GID_UNKNOWN;
	if (e.ndev_ifindex && !if_indextoname(e.ndev_ifindex, g->netdev))
		g->netdev[0] = '\0';
#else
	union ibv_gid gid;
	int ret = from_verbs(ibv_query_gid(ctx, port, (int)index, &gid));

	if (ret)
		return ret;
	memcpy(g->raw, gid.raw, sizeof(g->raw));
	g->type = gid_type_sysfs(ctx, port, index, ethernet);
#endif
	return all_zero(g->raw, sizeof(g->raw)) ? -ENODATA : 0;
}

static void port_from_ibv(const struct ibv_port_attr *in,
			  struct tv_vf_port_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->state = port_state_from_ibv(in->state);
	out->max_mtu = (enum tv_vf_mtu)in->max_mtu;
	out->active_mtu = (enum tv_vf_mtu)in->active_mtu;
	out->gid_tbl_len = (uint32_t)in->gid_tbl_len;
	out->lid = in->lid;
	out->pkey_tbl_len = in->pkey_tbl_len;
	/* Unspecified is what older kernels report for InfiniBand. */
	out->link_layer = in->link_layer == IBV_LINK_LAYER_ETHERNET ? 2 : 1;
}

static int query_port_info(struct ibv_context *ctx, uint8_t port_num,
			   struct tv_ibv_port_info *pi)
{
	struct ibv_port_attr pa;
	struct tv_ibv_gid g;
	bool ethernet;
	int ret;

	ret = from_verbs(ibv_query_port(ctx, port_num, &pa));
	if (ret)
		return ret;
	pi->port_num = port_num;
	port_from_ibv(&pa, &pi->attr);
	ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	pi->gids = calloc(pa.gid_tbl_len ? (size_t)pa.gid_tbl_len : 1,
			  sizeof(*pi->gids));
	if (!pi->gids)
		return -ENOMEM;
	for (uint32_t i = 0; i < (uint32_t)pa.gid_tbl_len; i++) {
		/* Empty or unreadable entries are simply not listed. */
		if (query_gid_entry(ctx, port_num, i, ethernet, &g) == 0)
			pi->gids[pi->num_gids++] = g;
	}
	return 0;
}

static void dev_attr_from_ibv(const char *name, const struct ibv_device_attr *a,
			      struct tv_vf_device_attr *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->max_mr_size = a->max_mr_size;
	out->max_qp = (uint32_t)a->max_qp;
	out->max_qp_wr = (uint32_t)a->max_qp_wr;
	out->max_sge = (uint32_t)a->max_sge;
	out->max_cq = (uint32_t)a->max_cq;
	out->max_cqe = (uint32_t)a->max_cqe;
	out->max_mr = (uint32_t)a->max_mr;
	out->max_qp_rd_atom = (uint32_t)a->max_qp_rd_atom;
	out->max_qp_init_rd_atom = (uint32_t)a->max_qp_init_rd_atom;
	out->phys_port_cnt = a->phys_port_cnt;
	switch (a->atomic_cap) {
	case IBV_ATOMIC_HCA: out->atomic_cap = TV_ATOMIC_HCA; break;
	case IBV_ATOMIC_GLOB: out->atomic_cap = TV_ATOMIC_GLOB; break;
	default: out->atomic_cap = TV_ATOMIC_NONE; break;
	}
}

static void free_info(struct tv_ibv_device_info *info)
{
	for (uint32_t p = 0; p < info->num_ports; p++)
		free(info->ports[p].gids);
	free(info->ports);
	memset(info, 0, sizeof(*info));
}

static int query_device_info(struct ibv_device *device,
			     struct tv_ibv_device_info *info)
{
	struct ibv_device_attr a;
	struct ibv_context *ctx;
	int ret;

	memset(info, 0, sizeof(*info));
	ctx = ibv_open_device(device);
	if (!ctx)
		return from_errno();
	ret = from_verbs(ibv_query_device(ctx, &a));
	if (ret)
		goto close_device;
	dev_attr_from_ibv(ibv_get_device_name(device), &a, &info->attr);
	snprintf(info->fw_ver, sizeof(info->fw_ver), "%s", a.fw_ver);
	info->node_guid = be64toh(a.node_guid);
	info->ports = calloc(a.phys_port_cnt ? a.phys_port_cnt : 1,
			     sizeof(*info->ports));
	if (!info->ports) {
		ret = -ENOMEM;
		goto close_device;
	}
	for (uint8_t p = 1; p <= a.phys_port_cnt; p++) {
		ret = query_port_info(ctx, p, &info->ports[p - 1]);
		info->num_ports = p; /* so free_info frees this port's GIDs */
		if (ret)
			goto free_info;
	}
	ibv_close_device(ctx);
	return 0;

free_info:
	free_info(info);
close_device:
	ibv_close_device(ctx);
	return ret;
}

int tv_ibv_query_all(struct tv_ibv_device_info **infos_p, size_t *count_p)
{
	struct tv_ibv_device_info *infos;
	struct ibv_device **list;
	int n = 0, ret = 0;

	if (!infos_p || !count_p)
		return -EINVAL;
	list = ibv_get_device_list(&n);
	if (!list) {
		/* ENOSYS: no RDMA in the kernel, which means no device. */
		if (errno == ENOSYS || errno == ENOENT) {
			*infos_p = NULL;
			*count_p = 0;
			return 0;
		}
		return from_errno();
	}
	infos = calloc(n ? (size_t)n : 1, sizeof(*infos));
	if (!infos) {
		ret = -ENOMEM;
		goto free_list;
	}
	for (int i = 0; i < n; i++) {
		ret = query_device_info(list[i], &infos[i]);
		if (ret) {
			tv_ibv_free_all(infos, (size_t)i);
			goto free_list;
		}
	}
	*infos_p = infos;
	*count_p = (size_t)n;
free_list:
	ibv_free_device_list(list);
	return ret;
}

void tv_ibv_free_all(struct tv_ibv_device_info *infos, size_t count)
{
	if (!infos)
		return;
	for (size_t i = 0; i < count; i++)
		free_info(&infos[i]);
	free(infos);
}

int tv_ibv_config_check_env(char *msg, size_t msg_cap,
			    struct tv_ibv_config *env_p)
{
	struct tv_ibv_device_info *infos = NULL;
	struct tv_ibv_config env, res;
	size_t count = 0, idx;
	int ret;

	ret = tv_ibv_config_from_env(msg, msg_cap, &env);
	if (ret)
		return ret;
	ret = tv_ibv_query_all(&infos, &count);
	if (ret) {
		snprintf(msg, msg_cap, "cannot list RDMA devices: %s",
			 strerror(-ret));
		return ret;
	}
	ret = tv_ibv_config_resolve(&env, infos, count, msg, msg_cap, &res,
				    &idx);
	tv_ibv_free_all(infos, count);
	if (!ret)
		*env_p = env;
	return ret;
}

/* ---- device ops ------------------------------------------------------- */

static int ibb_query_device(struct tv_vf_device *vdev,
			    struct tv_vf_device_attr *attr_p)
{
	struct ibv_backend_device *dev = to_ibv_backend_dev(vdev);
	struct ibv_device_attr a;
	int ret;

	if (!attr_p)
		return -EINVAL;
	ret = from_verbs(ibv_query_device(dev->ctx, &a));
	if (ret)
		return ret;
	dev->dev_attr = a;
	dev_attr_from_ibv(ibv_get_device_name(dev->ctx->device), &a, attr_p);
	return 0;
}

static int ibb_query_port(struct tv_vf_device *vdev, uint8_t port_num,
			  struct tv_vf_port_attr *attr_p)
{
	struct ibv_backend_device *dev = to_ibv_backend_dev(vdev);
	struct ibv_port_attr pa;
	int ret;

	if (!attr_p)
		return -EINVAL;
	ret = from_verbs(ibv_query_port(dev->ctx, port_num, &pa));
	if (ret)
		return ret;
	port_from_ibv(&pa, attr_p);
	return 0;
}

static int ibb_query_gid(struct tv_vf_device *vdev, uint8_t port_num,
			 int index, uint8_t gid_p[16])
{
	struct ibv_backend_device *dev = to_ibv_backend_dev(vdev);
	union ibv_gid gid;
	int ret;

	if (!gid_p || index < 0)
		return -EINVAL;
	ret = from_verbs(ibv_query_gid(dev->ctx, port_num, index, &gid));
	if (ret)
		return ret;
	memcpy(gid_p, gid.raw, sizeof(gid.raw));
	return 0;
}

static uint64_t ibb_now_ns(struct tv_vf_device *vdev)
{
	struct timespec ts;

	(void)vdev;
	/* CLOCK_MONOTONIC cannot fail with a valid pointer. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int ibb_wake_at(struct tv_vf_device *vdev, uint64_t deadline_ns)
{
	struct ibv_backend_device *dev = to_ibv_backend_dev(vdev);

	/* One timer, like a timerfd: only an earlier deadline replaces it. */
	if (deadline_ns < dev->wake_ns)
		dev->wake_ns = deadline_ns;
	return 0;
}

/* ---- PD and MR -------------------------------------------------------- */

static int ibb_alloc_pd(struct tv_vf_device *vdev, struct tv_vf_pd **pd_p)
{
	struct ibv_backend_device *dev = to_ibv_backend_dev(vdev);
	struct ibv_backend_pd *pd;
	int ret;

	if (!pd_p)
		return -EINVAL;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->pd = ibv_alloc_pd(dev->ctx);
	if (!pd->pd) {
		ret = from_errno();
		goto free_pd;
	}
	pd->base.dev = vdev;
	dev->num_pds++;
	*pd_p = &pd->base;
	return 0;

free_pd:
	free(pd);
	return ret;
}

static int ibb_dealloc_pd(struct tv_vf_pd *vpd)
{
	struct ibv_backend_pd *pd = to_ibv_backend_pd(vpd);
	struct ibv_backend_device *dev = to_ibv_backend_dev(vpd->dev);
	int ret;

	/* Free only after the lower layer let go (EBUSY: MRs or QPs left). */
	ret = from_verbs(ibv_dealloc_pd(pd->pd));
	if (ret)
		return ret;
	assert(dev->num_pds > 0);
	dev->num_pds--;
	free(pd);
	return 0;
}

static int ibb_reg_mr(struct tv_vf_pd *vpd, void *addr, size_t length,
		      uint32_t access, struct tv_vf_mr **mr_p)
{
	struct ibv_backend_device *dev = to_ibv_backend_dev(vpd->dev);
	struct ibv_backend_mr *mr;
	unsigned int flags;
	int ret;

	if (!mr_p || access_to_ibv(access, &flags))
		return -EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->mr = ibv_reg_mr(to_ibv_backend_pd(vpd)->pd, addr, length,
			    (int)flags);
	if (!mr->mr) {
		ret = from_errno();
		goto free_mr;
	}
	mr->base.pd = vpd;
	mr->base.addr = addr;
	mr->base.length = length;
	mr->base.lkey = mr->mr->lkey;
	mr->base.rkey = mr->mr->rkey;
	mr->base.access = access;
	dev->num_mrs++;
	*mr_p = &mr->base;
	return 0;

free_mr:
	free(mr);
	return ret;
}

static int ibb_dereg_mr(struct tv_vf_mr *vmr)
{
	struct ibv_backend_mr *mr = to_ibv_backend_mr(vmr);
	struct ibv_backend_device *dev = to_ibv_backend_dev(vmr->pd->dev);
	int ret;

	ret = from_verbs(ibv_dereg_mr(mr->mr));
	if (ret)
		return ret;
	assert(dev->num_mrs > 0);
	dev->num_mrs--;
	free(mr);
	return 0;
}

/* ---- CQ: create, destroy, poll ---------------------------------------- */

static int ibb_create_cq(struct tv_vf_device *vdev, uint32_t cqe,
			 struct tv_vf_cq **cq_p)
{
	struct ibv_backend_device *dev = to_ibv_backend_dev(vdev);
	struct ibv_backend_cq *cq;
	int ret;

	if (!cq_p || !cqe || cqe > (uint32_t)dev->dev_attr.max_cqe)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	/* Every CQ reports to the device's one channel: wait() polls one fd. */
	cq->cq = ibv_create_cq(dev->ctx, (int)cqe, cq, dev->channel, 0);
	if (!cq->cq) {
		ret = from_errno();
		goto free_cq;
	}
	cq->base.dev = vdev;
	cq->base.cqe = (uint32_t)cq->cq->cqe;
	cq->next = dev->cqs;
	dev->cqs = cq;
	dev->num_cqs++;
	*cq_p = &cq->base;
	return 0;

free_cq:
	free(cq);
	return ret;
}

static void unlink_cq(struct ibv_backend_device *dev, struct ibv_backend_cq *cq)
{
	struct ibv_backend_cq **pp = &dev->cqs;

	while (*pp && *pp != cq)
		pp = &(*pp)->next;
	assert(*pp == cq);
	*pp = cq->next;
}

static int ibb_destroy_cq(struct tv_vf_cq *vcq)
{
	struct ibv_backend_cq *cq = to_ibv_backend_cq(vcq);
	struct ibv_backend_device *dev = to_ibv_backend_dev(vcq->dev);
	int ret;

	/* ibv_destroy_cq waits for every event it handed out to be acked. */
	if (cq->unacked) {
		ibv_ack_cq_events(cq->cq, cq->unacked);
		cq->unacked = 0;
	}
	ret = from_verbs(ibv_destroy_cq(cq->cq));
	if (ret)
		return ret;
	unlink_cq(dev, cq);
	assert(dev->num_cqs > 0);
	dev->num_cqs--;
	free(cq);
	return 0;
}

/*
 * One completion to the facade.  Only wr_id, status, qp_num and
 * vendor_err are valid in an error completion (ibv_poll_cq(3)); the
 * others are left zero, and the opcode is passed through as verbs gave it.
 */
static void wc_from_ibv(const struct ibv_wc *in, struct tv_vf_wc *out)
{
	enum tv_vf_wc_status st = TV_WC_GENERAL_ERR;
	enum tv_vf_wc_opcode op;

	memset(out, 0, sizeof(*out));
	out->wr_id = in->wr_id;
	out->vendor_err = in->vendor_err;
	out->qp_num = in->qp_num;
	(void)tv_ibv_map_wc_status(in->status, &st);
	out->opcode = (enum tv_vf_wc_opcode)in->opcode;
	if (tv_ibv_map_wc_opcode(in->opcode, &op) == 0)
		out->opcode = op;
	else if (st == TV_WC_SUCCESS)
		st = TV_WC_GENERAL_ERR; /* an op we never post: do not guess */
	out->status = st;
	if (st != TV_WC_SUCCESS)
		return;
	out->byte_len = in->byte_len;
	if (in->wc_flags & IBV_WC_WITH_IMM) {
		out->wc_flags |= TV_WC_WITH_IMM;
		out->imm_data = be32toh(in->imm_data);
	}
}

static int ibb_poll_cq(struct tv_vf_cq *vcq, int num_entries,
		       struct tv_vf_wc *wc)
{
	struct ibv_backend_cq *cq = to_ibv_backend_cq(vcq);
	struct ibv_wc tmp[16];
	int got = 0;

	if (num_entries < 0 || (num_entries && !wc))
		return -EINVAL;
	/* What wait()'s final poll took comes first, in order. */
	while (got < num_entries && cq->stash_pos < cq->stash_len)
		wc_from_ibv(&cq->stash[cq->stash_pos++], &wc[got++]);
	if (cq->stash_pos == cq->stash_len)
		cq->stash_pos = cq->stash_len = 0;
	while (got < num_entries) {
		int want = num_entries - got < 16 ? num_entries - got : 16;
		int n = ibv_poll_cq(cq->cq, want, tmp);

		if (n < 0)
			return got ? got : -EIO; /* never drop taken entries */
		for (int i = 0; i < n; i++)
			wc_from_ibv(&tmp[i], &wc[got++]);
		if (n < want)
			break;
	}
	return got;
}

/* ---- wait: the completion channel ------------------------------------- */

/*
 * Arm every CQ that is not armed, then poll each once more.  A completion
 * that arrived before the arm raises no event, so the poll after arming
 * is what closes the race; what it finds is kept for poll_cq.
 * 1: a CQ has completions, 0: none, < 0: error.
 */
static int arm_and_check(struct ibv_backend_device *dev)
{
	int found = 0;

	for (struct ibv_backend_cq *cq = dev->cqs; cq; cq = cq->next) {
		int n;

		if (!cq->armed) {
			int ret = from_verbs(ibv_req_notify_cq(cq->cq, 0));

			if (ret)
				return ret;
			cq->armed = true;
		}
		if (cq->stash_len) {
			found = 1;
			continue;
		}
		n = ibv_poll_cq(cq->cq, IBV_BACKEND_STASH_WC, cq->stash);
		if (n < 0)
			return -EIO;
		cq->stash_len = (unsigned int)n;
		cq->stash_pos = 0;
		found |= n > 0;
	}
	return found;
}

/* Take every queued event; 1 when there was one. */
static int drain_events(struct ibv_backend_device *dev)
{
	int got = 0;

	for (;;) {
		struct ibv_cq *icq;
		void *ctx;
		struct ibv_backend_cq *cq;

		/* The channel fd is non-blocking: EAGAIN ends the loop. */
		if (ibv_get_cq_event(dev->channel, &icq, &ctx))
			return errno == EAGAIN || errno == EWOULDBLOCK ?
				       got : from_errno();
		cq = ctx;
		assert(cq && cq->cq == icq);
		cq->armed = false;
		if (++cq->unacked >= IBV_BACKEND_ACK_BATCH) {
			ibv_ack_cq_events(cq->cq, cq->unacked);
			cq->unacked = 0;
		}
		got = 1;
	}
}

/*
 * Sleep on the channel fd and fds[0..nfds) for at most timeout_ns.  1: the
 * channel is readable; 2: only one of fds has an event (revents set).
 */
static int wait_fd(struct ibv_backend_device *dev, uint64_t timeout_ns,
		   struct pollfd *fds, unsigned int nfds)
{
	struct pollfd pfd[1 + TV_VF_WAIT_FDS_MAX];
	struct timespec ts;
	unsigned int i;
	int n;

	assert(nfds <= TV_VF_WAIT_FDS_MAX);
	pfd[0].fd = dev->channel->fd;
	pfd[0].events = POLLIN;
	pfd[0].revents = 0;
	for (i = 0; i < nfds; i++) {
		pfd[1 + i] = fds[i];
		pfd[1 + i].revents = 0;
	}
	if (timeout_ns > (uint64_t)365 * 86400 * 1000000000u)
		timeout_ns = (uint64_t)365 * 86400 * 1000000000u;
	ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
	ts.tv_nsec = (long)(timeout_ns % 1000000000u);
	n = ppoll(pfd, 1 + nfds, &ts, NULL);
	if (n < 0)
		return errno == EINTR ? 0 : from_errno();
	for (i = 0; i < nfds; i++)
		fds[i].revents = pfd[1 + i].revents;
	if (!n)
		return 0;
	return pfd[0].revents ? 1 : 2;
}

static int ibb_wait_fds(struct tv_vf_device *vdev, uint64_t deadline_ns,
			struct pollfd *fds, unsigned int nfds)
{
	struct ibv_backend_device *dev = to_ibv_backend_dev(vdev);

	if (nfds > TV_VF_WAIT_FDS_MAX || (nfds && !fds))
		return -EINVAL;
	/* A return for a completion or a timer says nothing of the fds. */
	for (unsigned int i = 0; i < nfds; i++)
		fds[i].revents = 0;
	for (;;) {
		uint64_t now, until;
		int ret = arm_and_check(dev);

		if (ret)
			return ret < 0 ? ret : 0;
		now = ibb_now_ns(vdev);
		if (dev->wake_ns <= now) {
			dev->wake_ns = UINT64_MAX;
			return 0;
		}
		if (deadline_ns <= now)
			return -ETIMEDOUT;
		if (!dev->cqs && dev->wake_ns == UINT64_MAX &&
		    deadline_ns == UINT64_MAX && !nfds)
			return -EDEADLK; /* nothing could ever wake us */
		until = dev->wake_ns < deadline_ns ? dev->wake_ns : deadline_ns;
		ret = wait_fd(dev, until - now, fds, nfds);
		if (ret < 0 || ret == 2)
			return ret < 0 ? ret : 0;
		if (ret == 1) {
			ret = drain_events(dev);
			if (ret)
				return ret < 0 ? ret : 0;
		}
		/* Timed out or a signal: the top of the loop decides. */
	}
}

static int ibb_wait(struct tv_vf_device *vdev, uint64_t deadline_ns)
{
	return ibb_wait_fds(vdev, deadline_ns, NULL, 0);
}

/* ---- QP --------------------------------------------------------------- */

static uint32_t random_psn(void)
{
	uint32_t v = 0;

	/* A random PSN keeps a stale packet of an old QP out of a new one. */
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = (uint32_t)(ibb_now_ns(NULL) * 2654435761u);
	return v & 0xffffff;
}

static int ibb_create_qp(struct tv_vf_pd *vpd,
			 const struct tv_vf_qp_init_attr *init,
			 struct tv_vf_qp **qp_p)
{
	struct ibv_backend_device *dev = to_ibv_backend_dev(vpd->dev);
	struct ibv_qp_init_attr ia;
	struct ibv_backend_qp *qp;
	uint32_t depth = dev->cfg.queue_depth;

	if (!init || !qp_p || !init->send_cq || !init->recv_cq ||
	    init->send_cq->dev != vpd->dev || init->recv_cq->dev != vpd->dev)
		return -EINVAL;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = to_ibv_backend_cq(init->send_cq)->cq;
	ia.recv_cq = to_ibv_backend_cq(init->recv_cq)->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = init->sq_sig_all;
	/* Zero means "the configured RDMA_QP_QUEUE_DEPTH" and one SGE. */
	ia.cap.max_send_wr = init->max_send_wr ? init->max_send_wr : depth;
	ia.cap.max_recv_wr = init->max_recv_wr ? init->max_recv_wr : depth;
	ia.cap.max_send_sge = init->max_send_sge ? init->max_send_sge : 1;
	ia.cap.max_recv_sge = init->max_recv_sge ? init->max_recv_sge : 1;
	ia.cap.max_inline_data = init->max_inline_data;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->qp = ibv_create_qp(to_ibv_backend_pd(vpd)->pd, &ia);
	if (!qp->qp && errno == EINVAL && ia.cap.max_inline_data) {
		/* Inline is an optimisation: a device with less gets none. */
		ia.cap.max_inline_data = 0;
		qp->qp = ibv_create_qp(to_ibv_backend_pd(vpd)->pd, &ia);
	}
	if (!qp->qp) {
		int ret = from_errno();

		free(qp);
		return ret;
	}
	/* What the provider granted (it may round up; 0 without inline). */
	qp->base.max_inline_data = ia.cap.max_inline_data;
	qp->psn = random_psn();
	qp->base.dev = vpd->dev;
	qp->base.pd = vpd;
	qp->base.send_cq = init->send_cq;
	qp->base.recv_cq = init->recv_cq;
	qp->base.qp_num = qp->qp->qp_num;
	qp->base.state = TV_QPS_RESET;
	dev->num_qps++;
	*qp_p = &qp->base;
	return 0;
}

static int ibb_destroy_qp(struct tv_vf_qp *vqp)
{
	struct ibv_backend_qp *qp = to_ibv_backend_qp(vqp);
	struct ibv_backend_device *dev = to_ibv_backend_dev(vqp->dev);
	int ret;

	ret = from_verbs(ibv_destroy_qp(qp->qp));
	if (ret)
		return ret;
	assert(dev->num_qps > 0);
	dev->num_qps--;
	free(qp);
	return 0;
}

/* The address vector: always global on RoCE, global on IB with a GID. */
static void av_to_ibv(const struct ibv_backend_device *dev,
		      const struct tv_vf_qp_attr *a, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->dlid = a->dlid;
	ah->sl = a->sl;
	ah->port_num = a->port_num ? a->port_num : dev->cfg.port;
	ah->is_global = dev->ethernet || !all_zero(a->dgid, sizeof(a->dgid));
	if (!ah->is_global)
		return;
	memcpy(ah->grh.dgid.raw, a->dgid, sizeof(a->dgid));
	ah->grh.sgid_index = a->sgid_index;
	ah->grh.hop_limit = 64;
	ah->grh.traffic_class = a->traffic_class;
}

static int qp_attr_to_ibv(const struct ibv_backend_device *dev,
			  const struct tv_vf_qp_attr *a, uint32_t mask,
			  struct ibv_qp_attr *o)
{
	unsigned int access = 0;
	int ret;

	memset(o, 0, sizeof(*o));
	if (mask & TV_QP_STATE) {
		ret = qp_state_to_ibv(a->qp_state, &o->qp_state);
		if (ret)
			return ret;
	}
	if ((mask & TV_QP_ACCESS_FLAGS) &&
	    access_to_ibv(a->qp_access_flags, &access))
		return -EINVAL;
	if ((mask & TV_QP_PATH_MTU) &&
	    (a->path_mtu < TV_MTU_256 || a->path_mtu > TV_MTU_4096))
		return -EINVAL;
	o->qp_access_flags = access;
	o->path_mtu = (enum ibv_mtu)a->path_mtu;
	o->pkey_index = a->pkey_index;
	o->port_num = a->port_num;
	o->rq_psn = a->rq_psn;
	o->sq_psn = a->sq_psn;
	o->dest_qp_num = a->dest_qp_num;
	o->max_rd_atomic = a->max_rd_atomic;
	o->max_dest_rd_atomic = a->max_dest_rd_atomic;
	o->min_rnr_timer = a->min_rnr_timer;
	o->timeout = a->timeout;
	o->retry_cnt = a->retry_cnt;
	o->rnr_retry = a->rnr_retry;
	av_to_ibv(dev, a, &o->ah_attr);
	return 0;
}

static int ibb_modify_qp(struct tv_vf_qp *vqp, const struct tv_vf_qp_attr *attr,
			 uint32_t attr_mask)
{
	struct ibv_backend_device *dev = to_ibv_backend_dev(vqp->dev);
	struct ibv_qp_attr a;
	int mask, ret;

	if (!attr || mask_to_ibv(attr_mask, &mask))
		return -EINVAL;
	ret = qp_attr_to_ibv(dev, attr, attr_mask, &a);
	if (ret)
		return ret;
	ret = from_verbs(ibv_modify_qp(to_ibv_backend_qp(vqp)->qp, &a, mask));
	if (ret)
		return ret;
	if (attr_mask & TV_QP_STATE)
		vqp->state = attr->qp_state;
	return 0;
}

static void qp_attr_from_ibv(const struct ibv_qp_attr *a,
			     struct tv_vf_qp_attr *o)
{
	memset(o, 0, sizeof(*o));
	o->qp_state = qp_state_from_ibv(a->qp_state);
	o->path_mtu = (enum tv_vf_mtu)a->path_mtu;
	o->qp_access_flags = access_from_ibv(a->qp_access_flags);
	o->rq_psn = a->rq_psn;
	o->sq_psn = a->sq_psn;
	o->dest_qp_num = a->dest_qp_num;
	o->pkey_index = a->pkey_index;
	o->dlid = a->ah_attr.dlid;
	memcpy(o->dgid, a->ah_attr.grh.dgid.raw, sizeof(o->dgid));
	o->sgid_index = a->ah_attr.grh.sgid_index;
	o->sl = a->ah_attr.sl;
	o->traffic_class = a->ah_attr.grh.traffic_class;
	o->port_num = a->port_num;
	o->max_rd_atomic = a->max_rd_atomic;
	o->max_dest_rd_atomic = a->max_dest_rd_atomic;
	o->min_rnr_timer = a->min_rnr_timer;
	o->timeout = a->timeout;
	o->retry_cnt = a->retry_cnt;
	o->rnr_retry = a->rnr_retry;
}

static int ibb_query_qp(struct tv_vf_qp *vqp, struct tv_vf_qp_attr *attr_p)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	int mask = 0, ret;

	if (!attr_p)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(mask_map) / sizeof(mask_map[0]); i++)
		mask |= mask_map[i].ibv;
	ret = from_verbs(
		ibv_query_qp(to_ibv_backend_qp(vqp)->qp, &a, mask, &init));
	if (ret)
		return ret;
	qp_attr_from_ibv(&a, attr_p);
	/* The hardware may have moved it to ERR since our last modify. */
	vqp->state = attr_p->qp_state;
	return 0;
}

static int ibb_qp_endpoint(struct tv_vf_qp *vqp, struct tv_vf_qp_endpoint *ep_p)
{
	struct ibv_backend_device *dev = to_ibv_backend_dev(vqp->dev);
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int ret;

	if (!ep_p)
		return -EINVAL;
	ret = from_verbs(ibv_query_port(dev->ctx, dev->cfg.port, &pa));
	if (ret)
		return ret;
	ret = from_verbs(ibv_query_gid(dev->ctx, dev->cfg.port,
				       dev->cfg.gid_index, &gid));
	if (ret)
		return ret;
	memset(ep_p, 0, sizeof(*ep_p));
	ep_p->qp_num = vqp->qp_num;
	ep_p->psn = to_ibv_backend_qp(vqp)->psn;
	ep_p->lid = pa.lid;
	memcpy(ep_p->gid, gid.raw, sizeof(ep_p->gid));
	return 0;
}

/* ---- posting ---------------------------------------------------------- */

static int sges_to_ibv(const struct tv_vf_sge *in, int n, struct ibv_sge *out)
{
	if (n < 0 || n > IBV_BACKEND_MAX_SGE || (n && !in))
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		out[i].addr = in[i].addr;
		out[i].length = in[i].length;
		out[i].lkey = in[i].lkey;
	}
	return 0;
}

static uint64_t inline_bytes(const struct tv_vf_send_wr *w)
{
	uint64_t len = 0;

	for (int i = 0; i < w->num_sge; i++)
		len += w->sg_list[i].length;
	return len;
}

static int send_wr_to_ibv(const struct tv_vf_send_wr *w,
			  struct ibv_send_wr *o, struct ibv_sge *sge)
{
	/*
	 * Every member our opcodes use, and no memset: 128 bytes cost 50 ns
	 * a post on emulated CPUs.  qp_type, bind_mw and tso belong to XRC,
	 * MW binds and TSO, which we never post; providers read them only then.
	 */
	o->next = NULL;
	o->imm_data = 0;
	o->wr.rdma.remote_addr = 0;
	o->wr.rdma.rkey = 0;
	if (sges_to_ibv(w->sg_list, w->num_sge, sge) ||
	    (w->send_flags & ~(uint32_t)(TV_SEND_SIGNALED | TV_SEND_INLINE)))
		return -EINVAL;
	switch (w->opcode) {
	case TV_WR_RDMA_WRITE: o->opcode = IBV_WR_RDMA_WRITE; break;
	case TV_WR_RDMA_WRITE_WITH_IMM:
		o->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		break;
	case TV_WR_SEND: o->opcode = IBV_WR_SEND; break;
	case TV_WR_SEND_WITH_IMM: o->opcode = IBV_WR_SEND_WITH_IMM; break;
	case TV_WR_RDMA_READ: o->opcode = IBV_WR_RDMA_READ; break;
	case TV_WR_ATOMIC_CMP_AND_SWP:
		o->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		break;
	case TV_WR_ATOMIC_FETCH_AND_ADD:
		o->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		break;
	default: return -EINVAL;
	}
	if ((w->send_flags & TV_SEND_INLINE) &&
	    o->opcode != IBV_WR_RDMA_WRITE &&
	    o->opcode != IBV_WR_RDMA_WRITE_WITH_IMM &&
	    o->opcode != IBV_WR_SEND && o->opcode != IBV_WR_SEND_WITH_IMM)
		return -EINVAL;
	o->wr_id = w->wr_id;
	o->sg_list = w->num_sge ? sge : NULL; /* zero-length: no SGE at all */
	o->num_sge = w->num_sge;
	o->send_flags = (w->send_flags & TV_SEND_SIGNALED ? IBV_SEND_SIGNALED : 0) |
			(w->send_flags & TV_SEND_INLINE ? IBV_SEND_INLINE : 0);
	/* The wire is big-endian; the original skipped this conversion. */
	if (o->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
	    o->opcode == IBV_WR_SEND_WITH_IMM)
		o->imm_data = htobe32(w->imm_data);
	if (o->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    o->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		/* wr.atomic overlays wr.rdma: set every member it has. */
		o->wr.atomic.remote_addr = w->remote_addr;
		o->wr.atomic.compare_add = w->compare_add;
		o->wr.atomic.swap = w->swap;
		o->wr.atomic.rkey = w->rkey;
	} else if (o->opcode != IBV_WR_SEND &&
		   o->opcode != IBV_WR_SEND_WITH_IMM) {
		o->wr.rdma.remote_addr = w->remote_addr;
		o->wr.rdma.rkey = w->rkey;
	}
	return 0;
}

/*
 * Convert and post in batches.  As with verbs, the WRs before *bad_wr_p
 * were posted, it and the ones after were not.
 */
static int ibb_post_send(struct tv_vf_qp *vqp, struct tv_vf_send_wr *wr,
			 struct tv_vf_send_wr **bad_wr_p)
{
	struct ibv_sge sge[IBV_BACKEND_POST_BATCH][IBV_BACKEND_MAX_SGE];
	struct ibv_send_wr batch[IBV_BACKEND_POST_BATCH], *bad = NULL;
	struct tv_vf_send_wr *src[IBV_BACKEND_POST_BATCH];
	struct ibv_qp *qp = to_ibv_backend_qp(vqp)->qp;
	struct tv_vf_send_wr *w = wr;
	int n, ret = 0;

	while (w && !ret) {
		for (n = 0; w && n < IBV_BACKEND_POST_BATCH; w = w->next) {
			ret = send_wr_to_ibv(w, &batch[n], sge[n]);
			/* Providers differ (EINVAL, ENOMEM, silence): say it once. */
			if (!ret && (w->send_flags & TV_SEND_INLINE) &&
			    inline_bytes(w) > vqp->max_inline_data)
				ret = -EINVAL;
			if (ret)
				break;
			if (n)
				batch[n - 1].next = &batch[n];
			src[n++] = w;
		}
		if (n) {
			int r = from_verbs(ibv_post_send(qp, batch, &bad));

			if (r) {
				if (bad_wr_p)
					*bad_wr_p = bad ? src[bad - batch] : src[0];
				return r;
			}
		}
	}
	if (ret && bad_wr_p)
		*bad_wr_p = w;
	return ret;
}

static int ibb_post_recv(struct tv_vf_qp *vqp, struct tv_vf_recv_wr *wr,
			 struct tv_vf_recv_wr **bad_wr_p)
{
	struct ibv_sge sge[IBV_BACKEND_POST_BATCH][IBV_BACKEND_MAX_SGE];
	struct ibv_recv_wr batch[IBV_BACKEND_POST_BATCH], *bad = NULL;
	struct tv_vf_recv_wr *src[IBV_BACKEND_POST_BATCH];
	struct ibv_qp *qp = to_ibv_backend_qp(vqp)->qp;
	struct tv_vf_recv_wr *w = wr;
	int n, ret = 0;

	while (w && !ret) {
		for (n = 0; w && n < IBV_BACKEND_POST_BATCH; w = w->next) {
			ret = sges_to_ibv(w->sg_list, w->num_sge, sge[n]);
			if (ret)
				break;
			memset(&batch[n], 0, sizeof(batch[n]));
			batch[n].wr_id = w->wr_id;
			batch[n].sg_list = w->num_sge ? sge[n] : NULL;
			batch[n].num_sge = w->num_sge;
			if (n)
				batch[n - 1].next = &batch[n];
			src[n++] = w;
		}
		if (n) {
			int r = from_verbs(ibv_post_recv(qp, batch, &bad));

			if (r) {
				if (bad_wr_p)
					*bad_wr_p = bad ? src[bad - batch] : src[0];
				return r;
			}
		}
	}
	if (ret && bad_wr_p)
		*bad_wr_p = w;
	return ret;
}

/* ---- open and close ---------------------------------------------------- */

static const struct tv_vf_ops ibb_ops = {
	.name = "ibverbs",
	.query_device = ibb_query_device,
	.query_port = ibb_query_port,
	.query_gid = ibb_query_gid,
	.alloc_pd = ibb_alloc_pd,
	.dealloc_pd = ibb_dealloc_pd,
	.reg_mr = ibb_reg_mr,
	.dereg_mr = ibb_dereg_mr,
	.create_cq = ibb_create_cq,
	.destroy_cq = ibb_destroy_cq,
	.poll_cq = ibb_poll_cq,
	.create_qp = ibb_create_qp,
	.modify_qp = ibb_modify_qp,
	.query_qp = ibb_query_qp,
	.destroy_qp = ibb_destroy_qp,
	.qp_endpoint = ibb_qp_endpoint,
	.post_send = ibb_post_send,
	.post_recv = ibb_post_recv,
	.now_ns = ibb_now_ns,
	.wake_at = ibb_wake_at,
	.wait = ibb_wait,
	.wait_fds = ibb_wait_fds,
};

static struct ibv_context *open_by_name(const char *name)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	errno = ENODEV;
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	ibv_free_device_list(list);
	return ctx;
}

/* The verbs objects of an open device: context, channel, attributes. */
static int dev_init(struct ibv_backend_device *dev,
		    const struct tv_ibv_device_info *info)
{
	int flags, ret;

	dev->ctx = open_by_name(dev->cfg.device);
	if (!dev->ctx)
		return from_errno();
	dev->channel = ibv_create_comp_channel(dev->ctx);
	if (!dev->channel) {
		ret = from_errno();
		goto close_device;
	}
	/* Non-blocking, so wait() can drain every event without sleeping. */
	flags = fcntl(dev->channel->fd, F_GETFL);
	if (flags < 0 ||
	    fcntl(dev->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		ret = from_errno();
		goto destroy_channel;
	}
	ret = from_verbs(ibv_query_device(dev->ctx, &dev->dev_attr));
	if (ret)
		goto destroy_channel;
	dev->ethernet = info->ports[dev->cfg.port - 1].attr.link_layer == 2;
	return 0;

destroy_channel:
	ibv_destroy_comp_channel(dev->channel);
close_device:
	ibv_close_device(dev->ctx);
	return ret;
}

int tv_ibv_open(const struct tv_ibv_config *cfg, char *msg, size_t msg_cap,
		struct tv_vf_device **dev_p)
{
	struct tv_ibv_device_info *infos = NULL;
	struct ibv_backend_device *dev;
	struct tv_ibv_config defaults;
	size_t count = 0, idx = 0;
	int ret;

	if (!dev_p)
		return -EINVAL;
	if (!cfg) {
		tv_ibv_config_default(&defaults);
		cfg = &defaults;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	ret = tv_ibv_query_all(&infos, &count);
	if (ret)
		goto free_dev;
	ret = tv_ibv_config_resolve(cfg, infos, count, msg, msg_cap, &dev->cfg,
				    &idx);
	if (ret)
		goto free_infos;
	ret = dev_init(dev, &infos[idx]);
	if (ret)
		goto free_infos;
	dev->ops = ibb_ops;
	tv_vf_ops_fill_stubs(&dev->ops);
	dev->base.ops = &dev->ops;
	dev->wake_ns = UINT64_MAX;
	tv_ibv_free_all(infos, count);
	*dev_p = &dev->base;
	return 0;

free_infos:
	tv_ibv_free_all(infos, count);
free_dev:
	free(dev);
	return ret;
}

int tv_ibv_close(struct tv_vf_device *vdev)
{
	struct ibv_backend_device *dev;
	int ret;

	if (!vdev || vdev->ops->wait != ibb_wait)
		return -EINVAL;
	dev = to_ibv_backend_dev(vdev);
	/* Every init has its close: refuse while objects are alive. */
	if (dev->num_pds || dev->num_mrs || dev->num_cqs || dev->num_qps)
		return -EBUSY;
	assert(!dev->cqs);
	ret = from_verbs(ibv_destroy_comp_channel(dev->channel));
	if (ret)
		return ret;
	ret = from_verbs(ibv_close_device(dev->ctx));
	free(dev);
	return ret;
}

int tv_ibv_device_config(struct tv_vf_device *vdev,
			 struct tv_ibv_config *cfg_p)
{
	if (!vdev || !cfg_p || vdev->ops->wait != ibb_wait)
		return -EINVAL;
	*cfg_p = to_ibv_backend_dev(vdev)->cfg;
	return 0;
}

int tv_ibv_connect_cfg(struct tv_vf_device *vdev,
		       struct tv_vf_connect_cfg *cfg_p)
{
	struct tv_vf_connect_cfg c;
	const struct tv_ibv_config *cfg;

	if (!vdev || !cfg_p || vdev->ops->wait != ibb_wait)
		return -EINVAL;
	cfg = &to_ibv_backend_dev(vdev)->cfg;
	tv_vf_connect_cfg_default(&c);
	c.port_num = cfg->port;
	assert(cfg->gid_index >= 0 && cfg->gid_index <= 255);
	c.sgid_index = (uint8_t)cfg->gid_index;
	c.pkey_index = cfg->pkey_index;
	c.path_mtu = cfg->mtu;
	c.timeout = cfg->timeout;
	c.retry_cnt = cfg->retry_cnt;
	c.sl = cfg->sl;
	c.traffic_class = cfg->traffic_class;
	*cfg_p = c;
	return 0;
}
