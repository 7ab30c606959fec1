/*
 * tensorverbs — distributed feature gather with RDMA READ (quiver's
 * design, made fault-tolerant).  docs/gather.md has the whole picture.
 *
 * A tensor of `rows` rows of `row_bytes` bytes is range-partitioned over
 * `nodes` nodes; rows [0, replicated_rows) are replicated on every node
 * (quiver's hot-row cache).  Node n's partition is laid out as quiver
 * lays it: the replicated rows, then its own range, registered once for
 * remote READ.  A context (struct tv_gather_ctx) per process or simulated
 * node is both a server (its partition, passive) and a client: it gathers
 * rows by id, local and replicated rows by copy, remote rows by one RDMA
 * READ each, a peer's rows cut into post lists spread round-robin over
 * that peer's QPs, only the last READ of a post list signaled.
 *
 * Unlike quiver, every row of a gather is right or named: a failed post
 * list is retried (on another QP of the peer, and on its QP once the host
 * has reset and reconnected it), up to max_retries times, and a gather
 * ends exactly once, either ok or with the rows that failed, each with
 * its id and the verbs status (or the deadline) that failed it.
 *
 * Connections.  For every ordered pair (client c, server s) there are
 * qps_per_peer QP pairs: c's requester QP k and s's responder QP k (the
 * responder posts nothing).  The host exchanges endpoints
 * (tv_gather_qp_endpoint / tv_gather_qp_connect) and partition handles
 * (tv_gather_part_handle, TV_GATHER_HANDLE_BYTES on the wire, decoded as
 * hostile).  When a client QP fails, progress calls the host's reconnect
 * callback once its work is accounted for; the host resets both ends
 * (tv_gather_qp_reset), exchanges, connects and, when the server came
 * back with new memory, gives the client its new handle.
 *
 * One gather runs at a time on a context.  Every function returns 0 or a
 * negative errno; output parameters come last and are written only on
 * success.
 */
#ifndef TENSORVERBS_GATHER_H
#define TENSORVERBS_GATHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/vf.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * quiver's hazards, built in on purpose for regressions and the swarm
 * (docs/gather.md).  Never set outside tests.
 */
enum tv_gather_breakage {
	/* An error completion is printed and counted as done (quiver's
	 * batchPollSendCompletionQueue): the gather reports success. */
	TV_GATHER_BREAK_IGNORE_ERRORS = 1u << 0,
	/* Only the last QP's post lists are signaled (the old CQ_MOD
	 * aliasing): the other QPs' send-queue slots are never reclaimed on
	 * mlx5; a signaled completion is taken for all of its round. */
	TV_GATHER_BREAK_SIGNAL_ALIASING = 1u << 1,
	/* max_rd_atomic = the device's limit, max_dest_rd_atomic = 16
	 * hard-coded, never negotiated with the peer (quiver PR #26). */
	TV_GATHER_BREAK_RD_ATOMIC = 1u << 2,
};

struct tv_gather_event;
typedef void (*tv_gather_observe_fn)(void *ctx,
				     const struct tv_gather_event *ev);

struct tv_gather_ctx;

struct tv_gather_config {
	uint32_t node_id;
	uint32_t nodes;
	uint64_t rows;
	uint32_t row_bytes;
	uint64_t replicated_rows;    /* the hot prefix on every node */
	uint32_t qps_per_peer;       /* default 8 (quiver's QP_NUM) */
	uint32_t post_list;          /* READs per post list; default 128 */
	uint32_t window;             /* post lists in flight per QP; default 2 */
	bool sort_ids;               /* post in id order, scatter back */
	/* Staging for remote rows when out is not registered; default
	 * 4 MiB, at least one post list of rows. */
	uint64_t staging_bytes;
	uint32_t max_retries;        /* per post list; default 3 */
	/* Transport: ACK timeout (4.096 us * 2^n) and retries (7, 14: quiver). */
	uint8_t qp_timeout;
	uint8_t qp_retry_cnt;
	/*
	 * The host's reconnect: QP k towards server peer failed and its work
	 * is accounted for.  Reset both ends, exchange, connect (refresh the
	 * handle if the server re-registered).  0: done; -EAGAIN: ask again
	 * later (the peer is not back); else the QP stays down.  NULL: a
	 * failed QP stays down and its post lists move to the peer's others.
	 */
	int (*reconnect)(void *ctx, struct tv_gather_ctx *g, uint32_t peer,
			 uint32_t qp);
	void *reconnect_ctx;
	uint64_t reconnect_backoff_ns; /* after -EAGAIN; default 100 us */
	uint32_t test_breakage;      /* enum tv_gather_breakage bits */
	tv_gather_observe_fn observe; /* may be NULL */
	void *observe_ctx;
	/* The device's way to connect, or NULL for the defaults. */
	const struct tv_vf_connect_cfg *connect;
};

void tv_gather_config_default(struct tv_gather_config *cfg);

/* Rows [first, end) node owns (replicated rows excluded). */
void tv_gather_range(const struct tv_gather_config *cfg, uint32_t node,
		     uint64_t *first_p, uint64_t *end_p);
/* Who owns id (replicated rows: every node; this says the range owner). */
uint32_t tv_gather_owner(const struct tv_gather_config *cfg, uint64_t id);

/*
 * The context: its device, PD, shared send CQ, its partition (the caller's
 * memory of tv_gather_part_bytes(), registered for remote READ), staging.
 * -EINVAL for a configuration that cannot work (a message in *why when
 * why is not NULL).
 */
int tv_gather_ctx_create(struct tv_vf_device *dev,
			 const struct tv_gather_config *cfg, void *partition,
			 char *why, size_t why_cap,
			 struct tv_gather_ctx **ctx_p);
/* -EBUSY while a gather runs or QPs have work in flight. */
int tv_gather_ctx_destroy(struct tv_gather_ctx *ctx);
/* The process is going away: every QP to ERR, then destroy proceeds. */
void tv_gather_ctx_abort(struct tv_gather_ctx *ctx);
size_t tv_gather_part_bytes(const struct tv_gather_config *cfg,
			    uint32_t node);
const struct tv_gather_config *tv_gather_ctx_config(
	const struct tv_gather_ctx *ctx);

/* ---- the partition handle: what a client needs to READ a server ---- */

struct tv_gather_part_handle {
	uint32_t node;
	uint64_t first;              /* its range */
	uint64_t end;
	uint64_t replicated_rows;
	uint32_t row_bytes;
	uint64_t addr;
	uint32_t rkey;
	uint8_t max_dest_rd_atomic;  /* what its responder QPs accept */
};

#define TV_GATHER_HANDLE_BYTES 56

void tv_gather_part_handle(const struct tv_gather_ctx *ctx,
			   struct tv_gather_part_handle *h_p);
int tv_gather_handle_encode(const struct tv_gather_part_handle *h,
			    uint8_t *buf, size_t cap);
/* -EPROTO: not a handle (magic, version, sizes that do not add up). */
int tv_gather_handle_decode(const uint8_t *buf, size_t len,
			    struct tv_gather_part_handle *h_p);
/*
 * The server's handle, checked against this context's configuration
 * (its range, row size, replicated rows): -EPROTO names what differs.
 */
int tv_gather_set_peer(struct tv_gather_ctx *ctx,
		       const struct tv_gather_part_handle *h);
/*
 * The server deregisters and registers its partition again (a restart):
 * a new rkey; clients holding the old handle fail with REM_ACCESS_ERR.
 */
int tv_gather_reregister(struct tv_gather_ctx *ctx);

/* ---- QPs ---------------------------------------------------------------- */

enum tv_gather_role {
	TV_GATHER_CLIENT = 0,        /* requester QP k towards server peer */
	TV_GATHER_SERVER,            /* responder QP k for client peer */
};

int tv_gather_qp_endpoint(struct tv_gather_ctx *ctx, uint32_t peer,
			  uint32_t qp, enum tv_gather_role role,
			  struct tv_vf_qp_endpoint *ep_p);
/*
 * RESET -> RTS towards the remote endpoint.  A client QP's max_rd_atomic
 * is min(the device's max_qp_init_rd_atom, the server's
 * max_dest_rd_atomic from its handle): set the peer first.
 */
int tv_gather_qp_connect(struct tv_gather_ctx *ctx, uint32_t peer,
			 uint32_t qp, enum tv_gather_role role,
			 const struct tv_vf_qp_endpoint *remote);
/* A new QP in place of the old (its work is dropped, accounted first). */
int tv_gather_qp_reset(struct tv_gather_ctx *ctx, uint32_t peer, uint32_t qp,
		       enum tv_gather_role role);
/* The negotiated max_rd_atomic of client QP k towards peer (0: down). */
uint32_t tv_gather_qp_rd_atomic(const struct tv_gather_ctx *ctx,
				uint32_t peer, uint32_t qp);

/* ---- gathers ------------------------------------------------------------ */

struct tv_gather_row_error {
	size_t index;                /* in ids[] */
	uint64_t id;
	uint32_t peer;               /* the server it was read from */
	/* Its own completion status (TV_WC_*, FLUSH when another READ of
	 * its post list failed first), or -ETIMEDOUT (the deadline),
	 * -EHOSTDOWN (no QP to the peer left), a negative errno. */
	int status;
	int cause;                   /* the first failure of its post list */
	uint32_t attempts;
};

struct tv_gather_result {
	size_t rows;
	size_t local_rows;           /* own range, by copy */
	size_t replicated_rows;      /* the hot prefix, by copy */
	size_t remote_rows;          /* by READ */
	size_t failed_rows;
	const struct tv_gather_row_error *errors; /* failed_rows of them */
	uint64_t post_lists;
	uint64_t retries;            /* post lists posted again */
	uint64_t elapsed_ns;
};

/*
 * Start gathering ids[0..n) into out (n * row_bytes bytes; row i of out
 * is row ids[i]).  out may be registered (tv_gather_out_register): the
 * READs land in it directly; otherwise they go through the staging
 * buffer, in rounds when it is smaller than the remote rows.  ids is
 * copied.  -ERANGE: an id >= rows (the first such index in *bad_p if not
 * NULL), nothing posted.  -EBUSY: a gather is running.  deadline_ns on
 * the device's clock (0: none).
 */
int tv_gather_start(struct tv_gather_ctx *ctx, const uint64_t *ids, size_t n,
		    void *out, uint64_t deadline_ns, size_t *bad_p);
/* Poll completions, post, retry, reconnect: items handled, or -errno. */
int tv_gather_progress(struct tv_gather_ctx *ctx);
/*
 * -EAGAIN while the gather runs; 0 when every row is in out; -EIO when
 * rows failed (the result names them).  The result is the context's, valid
 * until the next start.  Reports the end once: afterwards -ENOENT.
 */
int tv_gather_test(struct tv_gather_ctx *ctx,
		   const struct tv_gather_result **res_p);
/* Blocking: start, progress and wait until the end or timeout_ns. */
int tv_gather(struct tv_gather_ctx *ctx, const uint64_t *ids, size_t n,
	      void *out, uint64_t timeout_ns,
	      const struct tv_gather_result **res_p);
/* Register the caller's output buffer once (READs land in it directly). */
int tv_gather_out_register(struct tv_gather_ctx *ctx, void *out,
			   size_t size_bytes);
int tv_gather_out_deregister(struct tv_gather_ctx *ctx);
/* The engine's own message about its last failure. */
const char *tv_gather_error(const struct tv_gather_ctx *ctx);

/* ---- statistics and events ---------------------------------------------- */

struct tv_gather_stats {
	uint64_t gathers;
	uint64_t gathers_failed;
	uint64_t rows_local;
	uint64_t rows_replicated;
	uint64_t rows_remote;
	uint64_t rows_failed;
	uint64_t reads_posted;
	uint64_t post_lists;
	uint64_t retries;
	uint64_t reconnects;
	uint64_t error_cqes;
	uint64_t post_failures;      /* post_send refused (-ENOMEM: over-post) */
	uint64_t max_sq_used;        /* slots held on one QP, at most */
	uint64_t sq_depth;
	uint64_t staging_bytes;      /* registered for staging */
	uint64_t bytes_read;
};

void tv_gather_stats(const struct tv_gather_ctx *ctx,
		     struct tv_gather_stats *st_p);

enum tv_gather_event_kind {
	TV_GATHER_EV_START = 1,      /* a gather started (n = rows) */
	TV_GATHER_EV_POST,           /* a post list (n = READs) on peer/qp */
	TV_GATHER_EV_LIST_DONE,      /* it completed (status 0) or failed */
	TV_GATHER_EV_QP_DOWN,        /* a client QP failed */
	TV_GATHER_EV_QP_UP,          /* reconnected */
	TV_GATHER_EV_END,            /* the gather ended (status 0 or -EIO) */
};

struct tv_gather_event {
	enum tv_gather_event_kind kind;
	uint32_t node;
	uint32_t peer;
	uint32_t qp;
	uint64_t gather;             /* 1, 2, ... per context */
	uint64_t list;               /* post list number in the gather */
	uint32_t n;
	int status;
	uint32_t attempt;
};

#ifdef __cplusplus
}
#endif
#endif /* TENSORVERBS_GATHER_H */
