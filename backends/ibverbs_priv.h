/*
 * This file is private to the libibverbs backend (backends/ibverbs.c,
 * config.c) and the rdma_cm set-up (cm.c).
 *
 * Each backend object embeds its facade object as "base" and gets back to
 * itself with container_of (the to_ibv_backend_*() helpers).
 */
#ifndef TV_BACKENDS_IBVERBS_PRIV_H
#define TV_BACKENDS_IBVERBS_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <tensorverbs/ibverbs.h>
#include <tensorverbs/vf.h>

/* Completions taken by wait()'s final poll, handed out by poll_cq first. */
#define IBV_BACKEND_STASH_WC 16
/* Acknowledge CQ events in batches: ibv_ack_cq_events takes a mutex. */
#define IBV_BACKEND_ACK_BATCH 64
/* Work requests and SGEs converted per ibv_post_send/recv call. */
#define IBV_BACKEND_POST_BATCH 8
#define IBV_BACKEND_MAX_SGE 8

struct ibv_backend_cq;

struct ibv_backend_device {
	struct tv_vf_device base;
	struct tv_vf_ops ops;          /* our table, stubs filled in */

	/* from open */
	struct ibv_context *ctx;
	struct ibv_comp_channel *channel; /* every CQ's events, non-blocking */
	struct tv_ibv_config cfg;      /* resolved */
	struct ibv_device_attr dev_attr;
	enum ibv_port_state port_state_at_open;
	bool ethernet;                 /* RoCE: the AV always has a GRH */

	/* timers and objects */
	uint64_t wake_ns;              /* earliest wake_at, UINT64_MAX: none */
	struct ibv_backend_cq *cqs;            /* every CQ, for wait() */
	uint32_t num_pds, num_mrs, num_cqs, num_qps;
};

struct ibv_backend_pd {
	struct tv_vf_pd base;
	struct ibv_pd *pd;
};

struct ibv_backend_mr {
	struct tv_vf_mr base;
	struct ibv_mr *mr;
};

struct ibv_backend_cq {
	struct tv_vf_cq base;
	struct ibv_cq *cq;
	struct ibv_backend_cq *next;           /* in ibv_backend_device.cqs */
	bool armed;                    /* ibv_req_notify_cq since last event */
	unsigned int unacked;          /* events got but not yet acknowledged */
	unsigned int stash_len;
	unsigned int stash_pos;
	struct ibv_wc stash[IBV_BACKEND_STASH_WC];
};

struct ibv_backend_qp {
	struct tv_vf_qp base;
	struct ibv_qp *qp;
	uint32_t psn;                  /* our initial send PSN, 24 bits */
};

static inline struct ibv_backend_device *
to_ibv_backend_dev(struct tv_vf_device *dev)
{
	return TV_CONTAINER_OF(dev, struct ibv_backend_device, base);
}

static inline struct ibv_backend_pd *to_ibv_backend_pd(struct tv_vf_pd *pd)
{
	return TV_CONTAINER_OF(pd, struct ibv_backend_pd, base);
}

static inline struct ibv_backend_mr *to_ibv_backend_mr(struct tv_vf_mr *mr)
{
	return TV_CONTAINER_OF(mr, struct ibv_backend_mr, base);
}

static inline struct ibv_backend_cq *to_ibv_backend_cq(struct tv_vf_cq *cq)
{
	return TV_CONTAINER_OF(cq, struct ibv_backend_cq, base);
}

static inline struct ibv_backend_qp *to_ibv_backend_qp(struct tv_vf_qp *qp)
{
	return TV_CONTAINER_OF(qp, struct ibv_backend_qp, base);
}

/*
 * The backends' error text for a caller's buffer (config.c): like
 * snprintf(), and nothing when msg is NULL or cap is 0.
 */
void ibb_msg(char *msg, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* TV_BACKENDS_IBVERBS_PRIV_H */
