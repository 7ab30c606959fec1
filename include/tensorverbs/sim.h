/*
 * tensorverbs — the deterministic verbs simulator.
 *
 * Many nodes in one process, each exposing a struct tv_vf_device whose ops
 * implement RC semantics over virtual time.  One 64-bit seed drives one root
 * PRNG from which every other stream is derived; events at the same virtual
 * time are ordered by a seeded tie-break, so the same seed always gives the
 * same run, bit for bit, and different seeds explore different orders.
 *
 * Single-threaded: a world and everything in it belongs to one thread.
 */
#ifndef TENSORVERBS_SIM_H
#define TENSORVERBS_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/vf.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- deterministic PRNG (xoshiro256**, seeded through splitmix64) ------ */

struct tv_prng {
	uint64_t s[4];
};

void tv_prng_init(struct tv_prng *prng, uint64_t seed);
uint64_t tv_prng_next(struct tv_prng *prng);
/* Uniform in [0, bound), bound > 0, without modulo bias. */
uint64_t tv_prng_below(struct tv_prng *prng, uint64_t bound);
/* A new independent stream; advances the parent. */
void tv_prng_fork(struct tv_prng *parent, struct tv_prng *child_p);

/* ---- configuration ---------------------------------------------------- */

struct tv_sim_link {
	uint64_t latency_ns;      /* one way, per message */
	uint64_t bytes_per_sec;   /* 0 = infinite */
};

/*
 * The IB spec promises nothing about the order in which the bytes of one
 * RDMA write reach the responder's memory, only that all of them are there
 * when its completion (or a later in-order operation) is seen.
 *  IN_ORDER: every byte lands at once, when the write is delivered.
 *  RANDOM8: the write's naturally aligned 8-byte words land in up to
 *    TV_SIM_PLACE_GROUPS groups at seeded times between its first byte
 *    leaving and its delivery, the groups in seeded order: a reader
 *    polling a word of the destination can see it before the others.
 *  BLOCK128: the same with aligned 128-byte blocks (each in order
 *    inside), as devices that guarantee only ..._ALIGNED_128_BYTES do.
 * Which group a unit belongs to is drawn per unit for small writes, and
 * dealt round-robin (groups in seeded order) past TV_SIM_PLACE_DRAWN
 * units, so that placing a large write costs what copying it does.
 */
enum tv_sim_placement {
	TV_SIM_PLACE_IN_ORDER = 0,
	TV_SIM_PLACE_RANDOM8,
	TV_SIM_PLACE_BLOCK128,
};

#define TV_SIM_PLACE_GROUPS 8u
#define TV_SIM_PLACE_DRAWN 4096u

const char *tv_sim_placement_str(enum tv_sim_placement placement);
/* "in_order", "random8", "block128"; -EINVAL for anything else. */
int tv_sim_placement_parse(const char *name,
			   enum tv_sim_placement *placement_p);

/*
 * Which device the simulated nodes behave like where devices differ
 * (docs/simulator.md, "Device profiles"):
 *  MLX5: a send-queue slot comes back when a CQE at or after its WR is
 *    polled; retry_cnt 7 is 7 retries; a misaligned atomic fails at the
 *    responder (REM_INV_REQ_ERR); a READ or atomic beyond the responder's
 *    max_dest_rd_atomic is NAKed; rd_atomic limits 16.
 *  RXE: a slot comes back when its WR completes, polled or not;
 *    retry_cnt 7 retries forever; a misaligned atomic is refused at post
 *    (-EINVAL); the responder NAKs READs and atomics only when its
 *    max_dest_rd_atomic is 0; rd_atomic limits 128.
 */
enum tv_sim_profile {
	TV_SIM_PROFILE_MLX5 = 0,
	TV_SIM_PROFILE_RXE,
};

const char *tv_sim_profile_str(enum tv_sim_profile profile);
/* "mlx5", "rxe"; -EINVAL for anything else. */
int tv_sim_profile_parse(const char *name, enum tv_sim_profile *profile_p);

struct tv_sim_config {
	uint64_t seed;
	uint32_t num_nodes;
	struct tv_sim_link link;      /* default for every pair of nodes */
	/* Device limits reported by query_device and enforced. */
	uint32_t max_qp_wr;           /* default 4096 */
	uint32_t max_cqe;             /* default 65536 */
	uint32_t max_mr;              /* default 65536 */
	/* Outstanding READs/atomics a QP may accept as a responder
	 * (max_dest_rd_atomic) and have as a requester (max_rd_atomic);
	 * 0: the profile's (16 mlx5, 128 rxe); at most 128. */
	uint32_t max_qp_rd_atom;
	uint32_t max_qp_init_rd_atom;
	enum tv_vf_mtu active_mtu;    /* default TV_MTU_4096 */
	/* Per-node processing delay added to every delivery (ns). */
	uint64_t jitter_ns_max;       /* 0 = none; drawn from the seed */
	/* A device without RDMA atomics (atomic_cap TV_ATOMIC_NONE). */
	bool no_atomics;
	/* Where the bytes of one RDMA write land, and when (see below). */
	enum tv_sim_placement placement;
	/* The device whose differences the nodes copy; default MLX5. */
	enum tv_sim_profile profile;
	/*
	 * One RNIC processing unit per QP: a QP's requests leave at most
	 * one per qp_op_ns (a message-rate limit besides the link's
	 * bandwidth).  0 = none.
	 */
	uint64_t qp_op_ns;
	/*
	 * One ibv_post_send call on a node: its doorbell and the poster's
	 * CPU, serialized per node.  The WRs of a call leave no earlier than
	 * the end of their call's post_ns, so a list of 128 pays it once
	 * where 128 single posts pay it 128 times.  0 = none.
	 */
	uint64_t post_ns;
};

void tv_sim_config_default(struct tv_sim_config *cfg);

/* ---- what the simulator reports of itself ------------------------------ */

enum tv_sim_event_kind {
	TV_SIM_EV_POST_SEND = 1,   /* a WR accepted by post_send */
	TV_SIM_EV_POST_RECV,       /* a WR accepted by post_recv */
	TV_SIM_EV_DELIVER,         /* a request executed at the responder */
	TV_SIM_EV_RNR,             /* responder had no receive posted */
	TV_SIM_EV_CQE,             /* a completion queued on a CQ */
	TV_SIM_EV_QP_STATE,        /* a QP changed state (status = new state) */
	TV_SIM_EV_CQ_OVERFLOW,     /* a CQ overflowed */
	TV_SIM_EV_TIMER,           /* a wake_at deadline fired */
	TV_SIM_EV_USER,            /* a tv_sim_schedule() callback ran */
};

/* One observable step of a run; also what the event hash is made of. */
struct tv_sim_event {
	uint64_t seq;          /* 0, 1, 2 ... in execution order */
	uint64_t time_ns;
	enum tv_sim_event_kind kind;
	uint32_t node;         /* where it happened */
	uint32_t peer;         /* the other node, or UINT32_MAX */
	uint32_t qp_num;
	uint32_t opcode;       /* wr opcode (post/deliver) or wc opcode (CQE) */
	uint32_t status;       /* wc status (CQE), new qp state (QP_STATE) */
	uint32_t imm;          /* immediate, when the op carries one */
	uint32_t has_imm;
	uint64_t wr_id;
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t length;       /* bytes moved or requested */
};

typedef void (*tv_sim_observer_fn)(void *arg, const struct tv_sim_event *ev);
/* Called by the world when a node may make progress (new CQEs, a timer). */
typedef void (*tv_sim_progress_fn)(void *arg, uint32_t node);
typedef void (*tv_sim_user_fn)(void *arg);

struct tv_sim_stats {
	uint64_t events;           /* events executed */
	uint64_t work_requests;    /* send WRs posted */
	uint64_t bytes_moved;
	uint64_t cqes;
	uint64_t rnr_naks;
	uint64_t error_cqes;
	uint64_t now_ns;
};

struct tv_sim;

int tv_sim_create(const struct tv_sim_config *cfg, struct tv_sim **sim_p);
/* Frees every object still alive; returns how many the users leaked. */
int tv_sim_destroy(struct tv_sim *sim);

int tv_sim_set_link(struct tv_sim *sim, uint32_t from, uint32_t to,
		    const struct tv_sim_link *link);
struct tv_vf_device *tv_sim_device(struct tv_sim *sim, uint32_t node);
uint32_t tv_sim_num_nodes(const struct tv_sim *sim);

void tv_sim_set_progress(struct tv_sim *sim, uint32_t node,
			 tv_sim_progress_fn fn, void *arg);
void tv_sim_set_observer(struct tv_sim *sim, tv_sim_observer_fn fn,
			 void *arg);

/* Run fn(arg) on behalf of node at virtual time at_ns (>= now). */
int tv_sim_schedule(struct tv_sim *sim, uint64_t at_ns, uint32_t node,
		    tv_sim_user_fn fn, void *arg);

/*
 * Execute one event: returns 1 if one ran, 0 if the queue is empty,
 * or a negative errno.  Progress callbacks run after the event, for every
 * node the event made runnable, in node order.
 */
int tv_sim_step(struct tv_sim *sim);
/*
 * Run until the queue is empty (returns 0), virtual time would pass
 * until_ns (returns -ETIMEDOUT), or max_events ran (returns -EAGAIN).
 * 0 for either limit means none.
 */
int tv_sim_run(struct tv_sim *sim, uint64_t until_ns, uint64_t max_events);

uint64_t tv_sim_now_ns(const struct tv_sim *sim);
void tv_sim_stats(const struct tv_sim *sim, struct tv_sim_stats *stats_p);
/* A 64-bit hash over every event so far (struct tv_sim_event fields). */
uint64_t tv_sim_event_hash(const struct tv_sim *sim);
/* The world's root stream: derive other streams with tv_prng_fork(). */
struct tv_prng *tv_sim_prng(struct tv_sim *sim);

/*
 * Move a QP to ERR as a fatal transport error would (retry exceeded):
 * outstanding WRs flush, the in-flight head completes with status.
 */
int tv_sim_qp_fail(struct tv_vf_qp *qp, enum tv_vf_wc_status status);
/* Make the next n reg_mr calls on node fail with err (negative errno). */
void tv_sim_fail_reg_mr(struct tv_sim *sim, uint32_t node, uint32_t n,
			int err);

#ifdef __cplusplus
}
#endif
#endif /* TENSORVERBS_SIM_H */
