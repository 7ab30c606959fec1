/*
 * tensorverbs — the verbs facade.
 *
 * A narrow ops table shaped like libibverbs, so that the real backend
 * (rdma-core) is a thin mapping and the simulator implements the very same
 * semantics.  The engine only ever talks to these objects; it includes
 * nothing from rdma-core and reads no clock directly.
 *
 * Conventions (see docs/conventions in shared/):
 *  - every function returns 0 or a negative errno, except tv_vf_poll_cq()
 *    which, like ibv_poll_cq(), returns the number of completions (>= 0) or
 *    a negative errno;
 *  - output parameters come last, end in _p, and are written only on success;
 *  - a backend that lacks an op returns -EOPNOTSUPP (tv_vf_stub_ops).
 *
 * Backend objects embed these structs as their first member ("base") and
 * get back to their own type with container_of().
 */
#ifndef TENSORVERBS_VF_H
#define TENSORVERBS_VF_H

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TV_CONTAINER_OF(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct tv_vf_ops;

/* ---- enums (values mirror libibverbs so the mapping is 1:1) ---------- */

enum tv_vf_wc_status {
	TV_WC_SUCCESS = 0,
	TV_WC_LOC_LEN_ERR,
	TV_WC_LOC_QP_OP_ERR,
	TV_WC_LOC_EEC_OP_ERR,
	TV_WC_LOC_PROT_ERR,
	TV_WC_WR_FLUSH_ERR,
	TV_WC_MW_BIND_ERR,
	TV_WC_BAD_RESP_ERR,
	TV_WC_LOC_ACCESS_ERR,
	TV_WC_REM_INV_REQ_ERR,
	TV_WC_REM_ACCESS_ERR,
	TV_WC_REM_OP_ERR,
	TV_WC_RETRY_EXC_ERR,
	TV_WC_RNR_RETRY_EXC_ERR,
	TV_WC_LOC_RDD_VIOL_ERR,
	TV_WC_REM_INV_RD_REQ_ERR,
	TV_WC_REM_ABORT_ERR,
	TV_WC_INV_EECN_ERR,
	TV_WC_INV_EEC_STATE_ERR,
	TV_WC_FATAL_ERR,
	TV_WC_RESP_TIMEOUT_ERR,
	TV_WC_GENERAL_ERR,
	TV_WC_STATUS_COUNT
};

/* Completion opcodes, same values as enum ibv_wc_opcode. */
enum tv_vf_wc_opcode {
	TV_WC_SEND = 0,
	TV_WC_RDMA_WRITE = 1,
	TV_WC_RDMA_READ = 2,
	TV_WC_COMP_SWAP = 3,
	TV_WC_FETCH_ADD = 4,
	TV_WC_RECV = 128,
	TV_WC_RECV_RDMA_WITH_IMM = 129,
};

/* Send opcodes, same values as enum ibv_wr_opcode. */
enum tv_vf_wr_opcode {
	TV_WR_RDMA_WRITE = 0,
	TV_WR_RDMA_WRITE_WITH_IMM = 1,
	TV_WR_SEND = 2,
	TV_WR_SEND_WITH_IMM = 3,
	TV_WR_RDMA_READ = 4,
	/*
	 * 64-bit atomics on the remote word at remote_addr (8-byte aligned,
	 * else the WR completes with TV_WC_REM_INV_REQ_ERR): the old value
	 * lands in the one local 8-byte SGE, which needs LOCAL_WRITE.
	 * compare_add is the value to compare (CAS) or to add (FAA); swap the
	 * value stored when the compare matched.  Little-endian words (the
	 * byte order of the hosts we run on, as the NIC reads host memory).
	 */
	TV_WR_ATOMIC_CMP_AND_SWP = 5,
	TV_WR_ATOMIC_FETCH_AND_ADD = 6,
};

/* Same values as enum ibv_atomic_cap. */
enum tv_vf_atomic_cap {
	TV_ATOMIC_NONE = 0,
	TV_ATOMIC_HCA = 1,  /* atomic among this HCA's operations */
	TV_ATOMIC_GLOB = 2, /* atomic with the CPU's too */
};

enum tv_vf_send_flags {
	TV_SEND_SIGNALED = 1u << 1, /* == IBV_SEND_SIGNALED */
	/*
	 * == IBV_SEND_INLINE: the payload is copied into the work request
	 * at post time (up to the QP's max_inline_data bytes), so the
	 * source may be reused at once and needs no lkey.  Writes and sends.
	 */
	TV_SEND_INLINE = 1u << 3,
};

enum tv_vf_wc_flags {
	TV_WC_WITH_IMM = 1u << 1, /* == IBV_WC_WITH_IMM */
};

enum tv_vf_access {
	TV_ACCESS_LOCAL_WRITE = 1,
	TV_ACCESS_REMOTE_WRITE = 1u << 1,
	TV_ACCESS_REMOTE_READ = 1u << 2,
	TV_ACCESS_REMOTE_ATOMIC = 1u << 3,
};

enum tv_vf_qp_state {
	TV_QPS_RESET = 0,
	TV_QPS_INIT,
	TV_QPS_RTR,
	TV_QPS_RTS,
	TV_QPS_SQD,
	TV_QPS_SQE,
	TV_QPS_ERR,
};

/* Same values as enum ibv_mtu. */
enum tv_vf_mtu {
	TV_MTU_256 = 1,
	TV_MTU_512 = 2,
	TV_MTU_1024 = 3,
	TV_MTU_2048 = 4,
	TV_MTU_4096 = 5,
};

enum tv_vf_port_state {
	TV_PORT_DOWN = 1,
	TV_PORT_INIT = 2,
	TV_PORT_ARMED = 3,
	TV_PORT_ACTIVE = 4,
};

/* Which fields of struct tv_vf_qp_attr a modify applies. */
enum tv_vf_qp_attr_mask {
	TV_QP_STATE = 1u << 0,
	TV_QP_ACCESS_FLAGS = 1u << 3,
	TV_QP_PKEY_INDEX = 1u << 4,
	TV_QP_PORT = 1u << 5,
	TV_QP_AV = 1u << 7,
	TV_QP_PATH_MTU = 1u << 8,
	TV_QP_TIMEOUT = 1u << 9,
	TV_QP_RETRY_CNT = 1u << 10,
	TV_QP_RNR_RETRY = 1u << 11,
	TV_QP_RQ_PSN = 1u << 12,
	TV_QP_MAX_QP_RD_ATOMIC = 1u << 13,
	TV_QP_MIN_RNR_TIMER = 1u << 15,
	TV_QP_SQ_PSN = 1u << 16,
	TV_QP_MAX_DEST_RD_ATOMIC = 1u << 17,
	TV_QP_DEST_QPN = 1u << 20,
};

/* ---- attributes ------------------------------------------------------- */

struct tv_vf_device_attr {
	char name[64];
	uint64_t max_mr_size;
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_qp_rd_atom;
	uint32_t max_qp_init_rd_atom;
	uint8_t phys_port_cnt;
	enum tv_vf_atomic_cap atomic_cap;
};

struct tv_vf_port_attr {
	enum tv_vf_port_state state;
	enum tv_vf_mtu max_mtu;
	enum tv_vf_mtu active_mtu;
	uint32_t gid_tbl_len;
	uint16_t lid;
	uint16_t pkey_tbl_len;
	uint8_t link_layer; /* 1 = InfiniBand, 2 = Ethernet (RoCE) */
};

/* What a peer needs to know to connect to one of our QPs. */
struct tv_vf_qp_endpoint {
	uint32_t qp_num;
	uint32_t psn;
	uint16_t lid;
	uint8_t gid[16];
};

struct tv_vf_qp_attr {
	enum tv_vf_qp_state qp_state;
	enum tv_vf_mtu path_mtu;
	uint32_t qp_access_flags;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint16_t pkey_index;
	uint16_t dlid;
	uint8_t dgid[16];
	uint8_t sgid_index;
	uint8_t sl;
	uint8_t traffic_class;
	uint8_t port_num;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer; /* IB encoding, 0..31 */
	uint8_t timeout;       /* IB encoding: 4.096 us * 2^timeout */
	uint8_t retry_cnt;     /* 0..7 */
	uint8_t rnr_retry;     /* 0..7, 7 = infinite */
};

struct tv_vf_qp_init_attr {
	struct tv_vf_cq *send_cq;
	struct tv_vf_cq *recv_cq;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	int sq_sig_all;
	/* Bytes a TV_SEND_INLINE post may carry; 0: none.  A backend may
	 * grant less (even 0): struct tv_vf_qp says what it took. */
	uint32_t max_inline_data;
};

/* ---- objects (embedded by backends) ----------------------------------- */

struct tv_vf_device {
	const struct tv_vf_ops *ops;
	void *user_ctx;           /* free for the device's owner */
};

struct tv_vf_pd {
	struct tv_vf_device *dev;
};

struct tv_vf_mr {
	struct tv_vf_pd *pd;
	void *addr;
	size_t length;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t access;
};

struct tv_vf_cq {
	struct tv_vf_device *dev;
	uint32_t cqe; /* capacity */
};

struct tv_vf_qp {
	struct tv_vf_device *dev;
	struct tv_vf_pd *pd;
	struct tv_vf_cq *send_cq;
	struct tv_vf_cq *recv_cq;
	uint32_t qp_num;
	enum tv_vf_qp_state state; /* kept up to date by the backend */
	uint32_t max_inline_data;  /* granted: TV_SEND_INLINE up to this */
	void *user_ctx;            /* free for the QP's owner */
};

/* ---- work requests and completions ------------------------------------ */

struct tv_vf_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct tv_vf_send_wr {
	uint64_t wr_id;
	struct tv_vf_send_wr *next;
	struct tv_vf_sge *sg_list;
	int num_sge; /* 0 is valid: e.g. a zero-length write-with-imm */
	enum tv_vf_wr_opcode opcode;
	uint32_t send_flags;
	uint32_t imm_data; /* host order; the wire order is the backend's job */
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add; /* atomics: see TV_WR_ATOMIC_* */
	uint64_t swap;
};

struct tv_vf_recv_wr {
	uint64_t wr_id;
	struct tv_vf_recv_wr *next;
	struct tv_vf_sge *sg_list;
	int num_sge;
};

struct tv_vf_wc {
	uint64_t wr_id;
	enum tv_vf_wc_status status;
	enum tv_vf_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data; /* host order, valid when wc_flags & TV_WC_WITH_IMM */
	uint32_t qp_num;
	uint32_t wc_flags;
};

/* ---- the ops table ---------------------------------------------------- */

struct tv_vf_ops {
	const char *name;

	int (*query_device)(struct tv_vf_device *dev,
			    struct tv_vf_device_attr *attr_p);
	int (*query_port)(struct tv_vf_device *dev, uint8_t port_num,
			  struct tv_vf_port_attr *attr_p);
	int (*query_gid)(struct tv_vf_device *dev, uint8_t port_num, int index,
			 uint8_t gid_p[16]);

	int (*alloc_pd)(struct tv_vf_device *dev, struct tv_vf_pd **pd_p);
	int (*dealloc_pd)(struct tv_vf_pd *pd);

	int (*reg_mr)(struct tv_vf_pd *pd, void *addr, size_t length,
		      uint32_t access, struct tv_vf_mr **mr_p);
	int (*dereg_mr)(struct tv_vf_mr *mr);

	int (*create_cq)(struct tv_vf_device *dev, uint32_t cqe,
			 struct tv_vf_cq **cq_p);
	int (*destroy_cq)(struct tv_vf_cq *cq);
	int (*poll_cq)(struct tv_vf_cq *cq, int num_entries,
		       struct tv_vf_wc *wc);

	int (*create_qp)(struct tv_vf_pd *pd,
			 const struct tv_vf_qp_init_attr *init,
			 struct tv_vf_qp **qp_p);
	int (*modify_qp)(struct tv_vf_qp *qp, const struct tv_vf_qp_attr *attr,
			 uint32_t attr_mask);
	int (*query_qp)(struct tv_vf_qp *qp, struct tv_vf_qp_attr *attr_p);
	int (*destroy_qp)(struct tv_vf_qp *qp);
	/* Our side of a connection: qp_num, psn, lid, gid for the peer. */
	int (*qp_endpoint)(struct tv_vf_qp *qp, struct tv_vf_qp_endpoint *ep_p);

	int (*post_send)(struct tv_vf_qp *qp, struct tv_vf_send_wr *wr,
			 struct tv_vf_send_wr **bad_wr_p);
	int (*post_recv)(struct tv_vf_qp *qp, struct tv_vf_recv_wr *wr,
			 struct tv_vf_recv_wr **bad_wr_p);

	/* Time: monotonic nanoseconds (virtual in the simulator). */
	uint64_t (*now_ns)(struct tv_vf_device *dev);
	/* Ask to be progressed again no later than deadline_ns. */
	int (*wake_at)(struct tv_vf_device *dev, uint64_t deadline_ns);
	/*
	 * Block until progress may be possible on this device (a completion,
	 * a wake_at deadline) or deadline_ns passes.  0: go and progress;
	 * -ETIMEDOUT: the deadline passed; -EDEADLK: nothing can ever happen
	 * again (the simulator's event queue is empty).  The simulator runs
	 * its event loop inside this call.
	 */
	int (*wait)(struct tv_vf_device *dev, uint64_t deadline_ns);
	/*
	 * As wait, and also 0 once one of fds[0..nfds) has one of its events
	 * (revents filled in, as poll(2) does): for a loop with other event
	 * sources (rdma_cm's channel, a coordinator's sockets) that would
	 * otherwise wake up now and then to look at them.  -EINVAL for more
	 * than TV_VF_WAIT_FDS_MAX; -EOPNOTSUPP where the device has no fd to
	 * sleep on (the simulator's virtual time).
	 */
	int (*wait_fds)(struct tv_vf_device *dev, uint64_t deadline_ns,
			struct pollfd *fds, unsigned int nfds);
	/*
	 * A layer over another device (the fault layer): the device it wraps.
	 * NULL (the stub) for a backend's own device.
	 */
	struct tv_vf_device *(*inner)(struct tv_vf_device *dev);
};

#define TV_VF_WAIT_FDS_MAX 64

/* A table whose every op returns -EOPNOTSUPP (now_ns returns 0). */
extern const struct tv_vf_ops tv_vf_stub_ops;

/* Fill every NULL op of *ops from tv_vf_stub_ops. */
void tv_vf_ops_fill_stubs(struct tv_vf_ops *ops);

const char *tv_vf_wc_status_str(enum tv_vf_wc_status status);
const char *tv_vf_qp_state_str(enum tv_vf_qp_state state);
int tv_vf_mtu_bytes(enum tv_vf_mtu mtu);

/* ---- thin dispatchers ------------------------------------------------- */

/* The backend's own device under any layers (tv_flt_wrap()). */
static inline struct tv_vf_device *tv_vf_base_device(struct tv_vf_device *dev)
{
	struct tv_vf_device *in;

	while (dev && dev->ops->inner && (in = dev->ops->inner(dev)))
		dev = in;
	return dev;
}

static inline int tv_vf_query_device(struct tv_vf_device *dev,
				     struct tv_vf_device_attr *attr_p)
{
	return dev->ops->query_device(dev, attr_p);
}

static inline int tv_vf_query_port(struct tv_vf_device *dev, uint8_t port,
				   struct tv_vf_port_attr *attr_p)
{
	return dev->ops->query_port(dev, port, attr_p);
}

static inline int tv_vf_query_gid(struct tv_vf_device *dev, uint8_t port,
				  int index, uint8_t gid_p[16])
{
	return dev->ops->query_gid(dev, port, index, gid_p);
}

static inline int tv_vf_alloc_pd(struct tv_vf_device *dev,
				 struct tv_vf_pd **pd_p)
{
	return dev->ops->alloc_pd(dev, pd_p);
}

static inline int tv_vf_dealloc_pd(struct tv_vf_pd *pd)
{
	return pd->dev->ops->dealloc_pd(pd);
}

static inline int tv_vf_reg_mr(struct tv_vf_pd *pd, void *addr, size_t length,
			       uint32_t access, struct tv_vf_mr **mr_p)
{
	return pd->dev->ops->reg_mr(pd, addr, length, access, mr_p);
}

static inline int tv_vf_dereg_mr(struct tv_vf_mr *mr)
{
	return mr->pd->dev->ops->dereg_mr(mr);
}

static inline int tv_vf_create_cq(struct tv_vf_device *dev, uint32_t cqe,
				  struct tv_vf_cq **cq_p)
{
	return dev->ops->create_cq(dev, cqe, cq_p);
}

static inline int tv_vf_destroy_cq(struct tv_vf_cq *cq)
{
	return cq->dev->ops->destroy_cq(cq);
}

static inline int tv_vf_poll_cq(struct tv_vf_cq *cq, int num_entries,
				struct tv_vf_wc *wc)
{
	return cq->dev->ops->poll_cq(cq, num_entries, wc);
}

static inline int tv_vf_create_qp(struct tv_vf_pd *pd,
				  const struct tv_vf_qp_init_attr *init,
				  struct tv_vf_qp **qp_p)
{
	return pd->dev->ops->create_qp(pd, init, qp_p);
}

static inline int tv_vf_modify_qp(struct tv_vf_qp *qp,
				  const struct tv_vf_qp_attr *attr,
				  uint32_t attr_mask)
{
	return qp->dev->ops->modify_qp(qp, attr, attr_mask);
}

static inline int tv_vf_query_qp(struct tv_vf_qp *qp,
				 struct tv_vf_qp_attr *attr_p)
{
	return qp->dev->ops->query_qp(qp, attr_p);
}

static inline int tv_vf_destroy_qp(struct tv_vf_qp *qp)
{
	return qp->dev->ops->destroy_qp(qp);
}

static inline int tv_vf_qp_endpoint(struct tv_vf_qp *qp,
				    struct tv_vf_qp_endpoint *ep_p)
{
	return qp->dev->ops->qp_endpoint(qp, ep_p);
}

static inline int tv_vf_post_send(struct tv_vf_qp *qp,
				  struct tv_vf_send_wr *wr,
				  struct tv_vf_send_wr **bad_wr_p)
{
	return qp->dev->ops->post_send(qp, wr, bad_wr_p);
}

static inline int tv_vf_post_recv(struct tv_vf_qp *qp,
				  struct tv_vf_recv_wr *wr,
				  struct tv_vf_recv_wr **bad_wr_p)
{
	return qp->dev->ops->post_recv(qp, wr, bad_wr_p);
}

static inline uint64_t tv_vf_now_ns(struct tv_vf_device *dev)
{
	return dev->ops->now_ns(dev);
}

static inline int tv_vf_wake_at(struct tv_vf_device *dev, uint64_t deadline_ns)
{
	return dev->ops->wake_at(dev, deadline_ns);
}

static inline int tv_vf_wait(struct tv_vf_device *dev, uint64_t deadline_ns)
{
	return dev->ops->wait(dev, deadline_ns);
}

static inline int tv_vf_wait_fds(struct tv_vf_device *dev,
				 uint64_t deadline_ns, struct pollfd *fds,
				 unsigned int nfds)
{
	/* Newer than the rest: a table written before it may lack it. */
	if (!dev->ops->wait_fds)
		return -EOPNOTSUPP;
	return dev->ops->wait_fds(dev, deadline_ns, fds, nfds);
}

/*
 * The connect step: RESET -> INIT -> RTR -> RTS towards a remote endpoint,
 * with the parameters a TensorFlow verbs QP used (overridable by cfg).
 * On failure the QP is left in whatever state the failing step left it.
 */
struct tv_vf_connect_cfg {
	uint8_t port_num;
	uint8_t sgid_index;
	uint16_t pkey_index;
	enum tv_vf_mtu path_mtu; /* 0: the port's active MTU */
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t sl;
	uint8_t traffic_class;
	uint8_t max_rd_atomic; /* 0: min(16, device max_qp_rd_atom) */
	/* What this QP accepts as a responder; 0: the same as max_rd_atomic. */
	uint8_t max_dest_rd_atomic;
	/* What the peer may do to us; 0: LOCAL_WRITE | REMOTE_WRITE |
	 * REMOTE_READ (add REMOTE_ATOMIC to be an atomics target). */
	uint32_t access;
};

void tv_vf_connect_cfg_default(struct tv_vf_connect_cfg *cfg);
int tv_vf_connect_qp(struct tv_vf_qp *qp, const struct tv_vf_connect_cfg *cfg,
		     const struct tv_vf_qp_endpoint *local,
		     const struct tv_vf_qp_endpoint *remote);

#ifdef __cplusplus
}
#endif
#endif /* TENSORVERBS_VF_H */
