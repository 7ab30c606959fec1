/*
 * This file is private to tensorverbs' gather engine (engine/gather/):
 * the context, its peers and QPs, and the gather in progress.
 */
#ifndef TV_GATHER_INT_H
#define TV_GATHER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/gather.h>

#define G_NONE UINT32_MAX
/* wr_id: gather number (16 bits) | post list (32) | entry (16). */
#define G_MAX_POST_LIST 4096u
#define G_MAX_ROWS 0xffffffffu

enum g_qp_state {
	GQ_DOWN = 0,   /* not connected yet (or reset, waiting for connect) */
	GQ_UP,
	GQ_FAILED,     /* an error completion: drain, then reconnect */
	GQ_DEAD,       /* reconnect refused: never used again */
};

struct g_qp {
	struct tv_vf_qp *qp;
	enum g_qp_state state;
	uint32_t rd_atomic;
	/* Send-queue slots, as mlx5 frees them: only through polled CQEs. */
	uint64_t posted_wrs;
	uint64_t reclaimed_wrs;
	uint32_t inflight;       /* post lists */
	int cause;               /* what failed it */
	uint64_t retry_at_ns;    /* reconnect back-off */
};

struct g_peer {
	bool has_handle;
	struct tv_gather_part_handle h;
	struct g_qp *cli;        /* qps_per_peer requester QPs */
	struct tv_vf_qp **srv;   /* qps_per_peer responder QPs */
	uint32_t next_qp;        /* round robin */
	uint32_t *pend;          /* FIFO of post lists waiting (ring) */
	size_t pend_head;
	size_t pend_len;
	size_t pend_cap;
};

struct g_list {
	uint32_t peer;
	uint32_t first;          /* into op.rr */
	uint32_t n;
	uint32_t posted_n;       /* entries the device took */
	uint32_t attempts;
	uint32_t qp;
	uint64_t qp_seq0;        /* the QP's posted_wrs before this list */
	uint32_t stage;          /* staging slot, or G_NONE */
	uint32_t fail_from;      /* first failed entry; n when none */
	int cause;
	bool inflight;
	bool done;
};

struct g_rrow {
	uint64_t id;
	uint32_t pos;            /* index in ids[] */
	uint32_t peer;
	int status;              /* its own failure, 0 if none */
};

struct g_op {
	bool active;
	bool unreported;         /* ended, tv_gather_test not told yet */
	bool expired;
	uint64_t no;
	size_t n;
	uint8_t *out;
	bool direct;             /* READs land in out (registered) */
	uint64_t deadline_ns;
	uint64_t t0_ns;
	struct g_rrow *rr;
	size_t nrr;
	size_t rr_cap;
	struct g_list *lists;
	size_t nlists;
	size_t lists_cap;
	size_t open;             /* lists not done */
	struct tv_gather_row_error *errs;
	size_t nerrs;
	size_t errs_cap;
	int result;
	struct tv_gather_result res;
};

struct tv_gather_ctx {
	struct tv_vf_device *dev;
	struct tv_gather_config cfg;
	struct tv_vf_connect_cfg conn;
	struct tv_vf_device_attr attr;
	struct tv_vf_pd *pd;
	struct tv_vf_cq *cq;       /* every client QP's, as in quiver */
	struct tv_vf_cq *srv_cq;   /* responder QPs: nothing completes */
	uint32_t sq_depth;
	uint32_t cq_size;
	uint64_t first;            /* own range */
	uint64_t end;
	uint8_t *part;
	size_t part_bytes;
	struct tv_vf_mr *part_mr;
	uint8_t *staging;
	struct tv_vf_mr *staging_mr;
	uint32_t stage_slots;
	uint32_t *stage_free;
	uint32_t nstage_free;
	uint8_t *out_reg;
	size_t out_reg_bytes;
	struct tv_vf_mr *out_mr;
	struct g_peer *peers;
	uint8_t max_dest_rd_atomic; /* what our responder QPs accept */
	struct g_op op;
	struct tv_gather_stats st;
	struct tv_vf_send_wr *wrs; /* post_list of them */
	struct tv_vf_sge *sges;
	struct tv_vf_wc *wcs;
	char err[256];
};

__attribute__((format(printf, 2, 3)))
void g_set_error(struct tv_gather_ctx *ctx, const char *fmt, ...);
void g_emit(struct tv_gather_ctx *ctx, enum tv_gather_event_kind kind,
	    uint32_t peer, uint32_t qp, uint64_t list, uint32_t n, int status,
	    uint32_t attempt);
bool g_broken(const struct tv_gather_ctx *ctx, enum tv_gather_breakage b);

/* qp.c */
int g_peers_create(struct tv_gather_ctx *ctx);
void g_peers_destroy(struct tv_gather_ctx *ctx);
void g_qp_fail(struct tv_gather_ctx *ctx, uint32_t peer, uint32_t k,
	       int cause);
int g_reconnect_due(struct tv_gather_ctx *ctx, uint64_t now);
int g_cq_rebuild(struct tv_gather_ctx *ctx);

/* post.c */
int g_dispatch(struct tv_gather_ctx *ctx);
bool g_pend_push(struct g_peer *p, uint32_t li, bool front);
uint64_t g_sq_used(const struct g_qp *q);

/* complete.c */
int g_poll(struct tv_gather_ctx *ctx);
void g_list_finish(struct tv_gather_ctx *ctx, uint32_t li);
void g_fail_rows(struct tv_gather_ctx *ctx, struct g_list *l, uint32_t from,
		 int status, int cause);
void g_check_end(struct tv_gather_ctx *ctx);
void g_expire(struct tv_gather_ctx *ctx);
void g_qp_drop_lists(struct tv_gather_ctx *ctx, uint32_t peer, uint32_t k,
		     int cause);

/* plan.c */
void g_op_clear(struct g_op *op);
void g_op_free(struct g_op *op);

#endif /* TV_GATHER_INT_H */
