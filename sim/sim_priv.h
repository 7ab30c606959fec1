/*
 * This file is private to tensorverbs' simulator: nothing outside sim/
 * includes it.  It holds the world's internal objects and the functions the
 * simulator's source files share (prefix sim_).
 */
#ifndef TENSORVERBS_SIM_PRIV_H
#define TENSORVERBS_SIM_PRIV_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/sim.h>

/* Limits the configuration does not expose. */
#define SIM_MAX_NODES 1024u
#define SIM_MAX_SGE 32u
#define SIM_MAX_INLINE 512u /* bytes a TV_SEND_INLINE post may carry */
#define SIM_MAX_QP 16384u
#define SIM_MAX_CQ 16384u
#define SIM_MAX_MR_SIZE (1ull << 40)
#define SIM_MAX_MSG_BYTES (1ull << 31) /* the IB message size limit */
#define SIM_QPN_BASE 0x100u            /* QPN 0 and 1 are special in IB */
#define SIM_QPN_MAX 0xffffffu
#define SIM_PSN_MASK 0xffffffu
#define SIM_PORT 1
#define SIM_RNR_INFINITE 7
#define SIM_RETRY_INFINITE 7 /* rxe profile: retry_cnt 7 never runs out */
#define SIM_MAX_RD_ATOM 128u /* a power of two that fits the 8-bit attrs */
#define SIM_NO_SLOT UINT64_MAX /* a CQE of no send-queue slot */
#define SIM_ACCESS_ALL                                          \
	(TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE |       \
	 TV_ACCESS_REMOTE_READ | TV_ACCESS_REMOTE_ATOMIC)

/* ---- intrusive list ---------------------------------------------------- */

struct sim_list {
	struct sim_list *prev;
	struct sim_list *next;
};

static inline void sim_list_init(struct sim_list *head)
{
	head->prev = head;
	head->next = head;
}

static inline void sim_list_add_tail(struct sim_list *head,
				     struct sim_list *item)
{
	item->prev = head->prev;
	item->next = head;
	head->prev->next = item;
	head->prev = item;
}

static inline void sim_list_del(struct sim_list *item)
{
	item->prev->next = item->next;
	item->next->prev = item->prev;
	item->prev = item;
	item->next = item;
}

/* ---- event queue ------------------------------------------------------- */

enum sim_ev_kind {
	SIM_EV_DELIVER = 1, /* a request reaches the responder */
	SIM_EV_ACK,         /* a response (ACK, NAK, read data) reaches us */
	SIM_EV_RETX,        /* RNR or transport timer: retransmit */
	SIM_EV_TIMER,       /* wake_at() */
	SIM_EV_USER,        /* tv_sim_schedule() */
	SIM_EV_PLACE,       /* part of a write lands early (place.c) */
	SIM_EV_TX,          /* qp_op_ns: the QP may send its next request */
};

/*
 * What an event refers to.  Never a pointer to a QP: the QP may be gone by
 * the time the event runs, so we name it (node, qpn) and check a generation.
 */
struct sim_ev {
	enum sim_ev_kind kind;
	uint32_t node;
	uint32_t qpn;
	uint32_t gen;
	tv_sim_user_fn fn;
	void *arg;
	uint64_t idx;       /* PLACE: the WR's send-queue index */
	uint32_t part;      /* PLACE: which group of units */
	uint32_t tok;       /* PLACE: the transmission it belongs to */
	uint32_t next_free; /* pool free list link */
};

/* Heap entries are small and carry the whole ordering key. */
struct sim_heap_ent {
	uint64_t time_ns;
	uint64_t tiebreak; /* drawn from the seed when scheduled */
	uint64_t seq;      /* scheduling order: makes the key total */
	uint32_t idx;      /* into the event pool */
};

struct sim_evq {
	struct sim_heap_ent *heap;
	uint32_t len;
	uint32_t cap;
	struct sim_ev *pool;
	uint32_t pool_cap;
	uint32_t free_head; /* UINT32_MAX: none */
	uint64_t seq;
};

int sim_evq_init(struct sim_evq *q, uint32_t cap);
void sim_evq_fini(struct sim_evq *q);
int sim_evq_push(struct sim_evq *q, uint64_t time_ns, uint64_t tiebreak,
		 const struct sim_ev *ev);
bool sim_evq_peek(const struct sim_evq *q, uint64_t *time_ns_p);
bool sim_evq_pop(struct sim_evq *q, uint64_t *time_ns_p, struct sim_ev *ev_p);

/* ---- verbs objects ----------------------------------------------------- */

struct sim_node;

struct sim_pd {
	struct tv_vf_pd base;
	struct sim_list link;
	uint32_t nr_mrs;
	uint32_t nr_qps;
};

struct sim_mr {
	struct tv_vf_mr base;
	struct sim_list link;
	uint32_t slot;
};

struct sim_cq {
	struct tv_vf_cq base;
	struct sim_list link;
	struct sim_node *node;
	struct tv_vf_wc *ring;
	uint64_t *sq_idx;  /* [cqe]: the send WR's queue index or SIM_NO_SLOT */
	uint32_t head;
	uint32_t count;
	uint32_t nr_qps; /* attachments: a QP using it for both counts 2 */
	bool overflow;
};

/* A posted send WR, copied at post time (the caller's WR is not kept). */
struct sim_swr {
	uint64_t wr_id;
	uint64_t idx;          /* send-queue index; SIM_NO_SLOT: none (ERR) */
	uint64_t remote_addr;
	uint64_t depart_ns;    /* last transmission's departure */
	struct tv_vf_sge *sges;
	uint8_t *inline_buf;   /* this slot's max_inline_data bytes */
	bool is_inline;        /* payload copied into inline_buf at post */
	uint32_t num_sge;
	uint32_t length;       /* sum of the SGE lengths */
	enum tv_vf_wr_opcode opcode;
	uint32_t imm_data;
	uint32_t rkey;
	uint64_t compare_add;  /* atomics */
	uint64_t swap;
	uint64_t place_salt;   /* placement of this transmission (place.c) */
	uint32_t place_tok;
	enum tv_vf_wc_status status; /* set when executed */
	uint8_t rnr_left;
	uint8_t retry_left;
	bool signaled;
};

struct sim_rwr {
	uint64_t wr_id;
	struct tv_vf_sge *sges;
	uint32_t num_sge;
	uint32_t length;
};

/*
 * The send queue is a ring indexed by ever-growing counters:
 *   sq_free <= sq_head <= sq_exec <= sq_tx <= sq_tail
 * [free, head): completed, slot not yet given back (mlx5 profile: no CQE
 * at or after it polled yet); [head, exec): executed at the responder,
 * waiting for the response; [exec, tx): on the wire; [tx, tail): not
 * transmitted yet.
 */
struct sim_qp {
	struct tv_vf_qp base;
	struct sim_list link;
	struct sim_node *node;
	struct tv_vf_qp_attr attr;
	bool sq_sig_all;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t psn;

	struct sim_swr *sq;
	struct tv_vf_sge *sq_sges;
	uint8_t *sq_inline;    /* max_inline_data bytes per slot */
	uint32_t max_inline_data;
	uint64_t sq_free;
	uint64_t sq_head;
	uint64_t sq_exec;
	uint64_t sq_tx;
	uint64_t sq_tail;

	struct sim_rwr *rq;
	struct tv_vf_sge *rq_sges;
	uint64_t rq_head;
	uint64_t rq_tail;

	/* Events carry one of these; a mismatch means "stale, ignore". */
	uint32_t tx_gen;  /* requests on the wire, retransmit timers */
	uint32_t err_gen; /* responses */
	bool tx_held;     /* RNR/timeout back-off or fatal: transmit nothing */
	uint64_t last_arrival_ns; /* in-order delivery per QP */
	uint64_t last_resp_ns;    /* in-order responses per QP */
	uint32_t place_tok;       /* transmissions placed in parts so far */
	/* READs and atomics in [head, tx) and in [head, exec): the
	 * requester's outstanding ones (max_rd_atomic), and those the
	 * responder holds resources for (its max_dest_rd_atomic). */
	uint32_t rd_out;
	uint32_t rd_exec;
	uint64_t op_next_ns;      /* qp_op_ns: the earliest next departure */
	uint64_t tx_wake_ns;      /* a SIM_EV_TX armed then; or UINT64_MAX */
};

struct sim_node {
	struct tv_vf_device base;
	struct tv_sim *sim;
	uint32_t id;
	struct tv_prng prng; /* keys, PSNs */
	uint64_t post_done_ns; /* post_ns: when the last post_send call ends */

	struct sim_list pds;
	struct sim_list mrs;
	struct sim_list cqs;
	struct sim_list qps;
	uint32_t nr_pds;
	uint32_t nr_mrs;
	uint32_t nr_cqs;
	uint32_t nr_qps;

	/* MR table: key = (slot + 1) << 8 | generation byte. */
	struct sim_mr **mr_slots;
	uint8_t *mr_slot_gen;
	uint32_t *mr_free;  /* stack of free slots */
	uint32_t mr_nr_free;
	uint32_t mr_slots_cap;
	uint32_t mr_slots_used; /* slots ever handed out */

	/* QP table: qpn = SIM_QPN_BASE + index, never reused. */
	struct sim_qp **qp_tab;
	uint32_t qp_tab_len;
	uint32_t qp_tab_cap;

	uint32_t fail_reg_mr_n;
	int fail_reg_mr_err;

	tv_sim_progress_fn progress;
	void *progress_arg;
	bool runnable_cb;   /* queued for the progress callback */
	bool runnable_wait; /* wait() has something to report */
	uint64_t timer_at_ns; /* UINT64_MAX: no timer armed */
	uint32_t timer_gen;
};

struct sim_link_state {
	struct tv_sim_link cfg;
	uint64_t busy_until_ns;
};

struct tv_sim {
	struct tv_sim_config cfg;
	struct tv_prng root;
	struct tv_prng tie_prng; /* tie-breaks of simultaneous events */
	struct tv_prng net_prng; /* jitter */
	struct tv_prng place_prng; /* placement; not forked from root */
	uint64_t now_ns;
	struct sim_evq evq;
	struct sim_node *nodes;
	struct sim_link_state *links; /* [from * num_nodes + to] */

	tv_sim_observer_fn observer;
	void *observer_arg;
	uint64_t ev_seq;
	uint64_t hash;
	struct tv_sim_stats stats;

	uint32_t *runq; /* nodes waiting for their progress callback */
	uint32_t *runq_snap; /* the pass being run (allocated once) */
	uint32_t runq_len;
	bool in_callback; /* a progress or user callback is running */
};

static inline struct sim_node *to_sim_node(struct tv_vf_device *dev)
{
	return TV_CONTAINER_OF(dev, struct sim_node, base);
}

static inline struct sim_pd *to_sim_pd(struct tv_vf_pd *pd)
{
	return TV_CONTAINER_OF(pd, struct sim_pd, base);
}

static inline struct sim_mr *to_sim_mr(struct tv_vf_mr *mr)
{
	return TV_CONTAINER_OF(mr, struct sim_mr, base);
}

static inline struct sim_cq *to_sim_cq(struct tv_vf_cq *cq)
{
	return TV_CONTAINER_OF(cq, struct sim_cq, base);
}

static inline struct sim_qp *to_sim_qp(struct tv_vf_qp *qp)
{
	return TV_CONTAINER_OF(qp, struct sim_qp, base);
}

static inline struct sim_swr *sim_sq_slot(struct sim_qp *qp, uint64_t idx)
{
	assert(qp->max_send_wr > 0);
	return &qp->sq[idx % qp->max_send_wr];
}

/* The opcodes that hold a max_rd_atomic slot while outstanding. */
static inline bool sim_is_rd_atomic(enum tv_vf_wr_opcode op)
{
	return op == TV_WR_RDMA_READ || op == TV_WR_ATOMIC_CMP_AND_SWP ||
	       op == TV_WR_ATOMIC_FETCH_AND_ADD;
}

static inline bool sim_is_rxe(const struct tv_sim *sim)
{
	return sim->cfg.profile == TV_SIM_PROFILE_RXE;
}

/*
 * Slots the send queue holds.  mlx5 gives a completed WR's slot back
 * only when a CQE at or after it is polled (rdma-core mlx5 cq.c,
 * wq->tail = wqe_head[idx] + 1); rxe's kernel as soon as it completes
 * (rxe_comp.c do_complete advances the consumer index, signaled or not).
 */
static inline uint64_t sim_sq_used(const struct sim_qp *qp)
{
	uint64_t first = sim_is_rxe(qp->node->sim) ? qp->sq_head : qp->sq_free;

	assert(qp->sq_free <= qp->sq_head && qp->sq_head <= qp->sq_tail);
	return qp->sq_tail - first;
}

static inline struct sim_rwr *sim_rq_slot(struct sim_qp *qp, uint64_t idx)
{
	assert(qp->max_recv_wr > 0);
	return &qp->rq[idx % qp->max_recv_wr];
}

/* ---- world (world.c) ---------------------------------------------------- */


void sim_event_init(struct tv_sim_event *ev, enum tv_sim_event_kind kind,
		    uint32_t node);
/* canon_addr: remote_addr as hashed (never a raw pointer when avoidable). */
void sim_emit(struct tv_sim *sim, struct tv_sim_event *ev, uint64_t canon_addr);
int sim_schedule(struct tv_sim *sim, uint64_t at_ns, const struct sim_ev *ev);
void sim_mark_runnable(struct tv_sim *sim, struct sim_node *node);
int sim_wait(struct sim_node *node, uint64_t deadline_ns);
int sim_wake_at(struct sim_node *node, uint64_t deadline_ns);

/* ---- objects (objects.c) ------------------------------------------------- */

struct sim_mr *sim_mr_lookup(struct sim_node *node, uint32_t key, bool rkey);
/* sq_idx: the send WR's queue index (a polled CQE frees up to it), or
 * SIM_NO_SLOT for receives and WRs that never took a slot. */
void sim_cq_push(struct tv_sim *sim, struct sim_cq *cq,
		 const struct tv_vf_wc *wc, uint64_t sq_idx);
void sim_gid_of(uint32_t node, uint8_t gid_p[16]);
/* The node a GID names, or UINT32_MAX. */
uint32_t sim_gid_node(const struct tv_sim *sim, const uint8_t gid[16]);
uint64_t sim_canon_addr(struct tv_sim *sim, uint32_t node, uint32_t rkey,
			uint64_t addr);
void sim_free_mr(struct sim_mr *mr);
void sim_free_cq(struct sim_cq *cq);
void sim_free_pd(struct sim_pd *pd);

/* ---- device profiles (profile.c) ---------------------------------------- */

uint32_t sim_profile_rd_atom(enum tv_sim_profile profile);
uint8_t sim_rd_atomic_depth(enum tv_sim_profile profile, uint8_t asked);

/* ---- QPs (qp.c) ---------------------------------------------------------- */

struct sim_qp *sim_qp_lookup(struct tv_sim *sim, uint32_t node, uint32_t qpn);
void sim_qp_set_state(struct tv_sim *sim, struct sim_qp *qp,
		      enum tv_vf_qp_state state);
/* Move to ERR: the send head completes with head_status, the rest flush. */
void sim_qp_to_err(struct tv_sim *sim, struct sim_qp *qp,
		   enum tv_vf_wc_status head_status);
void sim_qp_complete_send(struct tv_sim *sim, struct sim_qp *qp,
			  const struct sim_swr *swr,
			  enum tv_vf_wc_status status);
void sim_qp_reset(struct tv_sim *sim, struct sim_qp *qp);
void sim_qp_free(struct sim_qp *qp);

/* ---- the ops (objects.c, qp.c), gathered in ops.c ------------------------ */

const struct tv_vf_ops *sim_ops_table(void);

int sim_op_query_device(struct tv_vf_device *dev,
			struct tv_vf_device_attr *attr_p);
int sim_op_query_port(struct tv_vf_device *dev, uint8_t port_num,
		      struct tv_vf_port_attr *attr_p);
int sim_op_query_gid(struct tv_vf_device *dev, uint8_t port_num, int index,
		     uint8_t gid_p[16]);
int sim_op_alloc_pd(struct tv_vf_device *dev, struct tv_vf_pd **pd_p);
int sim_op_dealloc_pd(struct tv_vf_pd *pd);
int sim_op_reg_mr(struct tv_vf_pd *pd, void *addr, size_t length,
		  uint32_t access, struct tv_vf_mr **mr_p);
int sim_op_dereg_mr(struct tv_vf_mr *mr);
int sim_op_create_cq(struct tv_vf_device *dev, uint32_t cqe,
		     struct tv_vf_cq **cq_p);
int sim_op_destroy_cq(struct tv_vf_cq *cq);
int sim_op_poll_cq(struct tv_vf_cq *cq, int num_entries, struct tv_vf_wc *wc);
int sim_op_create_qp(struct tv_vf_pd *pd,
		     const struct tv_vf_qp_init_attr *init,
		     struct tv_vf_qp **qp_p);
int sim_op_modify_qp(struct tv_vf_qp *qp, const struct tv_vf_qp_attr *attr,
		     uint32_t attr_mask);
int sim_op_query_qp(struct tv_vf_qp *qp, struct tv_vf_qp_attr *attr_p);
int sim_op_destroy_qp(struct tv_vf_qp *qp);
int sim_op_qp_endpoint(struct tv_vf_qp *qp, struct tv_vf_qp_endpoint *ep_p);
int sim_op_post_send(struct tv_vf_qp *qp, struct tv_vf_send_wr *wr,
		     struct tv_vf_send_wr **bad_wr_p);
int sim_op_post_recv(struct tv_vf_qp *qp, struct tv_vf_recv_wr *wr,
		     struct tv_vf_recv_wr **bad_wr_p);

/* ---- transfers (xfer.c) -------------------------------------------------- */

/* A resolved piece of memory: where a SGE or a remote range lies. */
struct sim_seg {
	uint8_t *p;
	uint32_t len;
};

/* Local SGEs against the node's MRs (key, PD, bounds, access need). */
int sim_sge_resolve(struct sim_node *node, struct tv_vf_pd *pd,
		    const struct tv_vf_sge *sg, uint32_t n, uint32_t need,
		    struct sim_seg *segs);
/* rkey, PD, QP and MR access, bounds at the responder; NULL if any fails. */
uint8_t *sim_remote_resolve(struct sim_qp *resp, uint32_t rkey, uint64_t addr,
			    uint32_t len, uint32_t access);
/* The QP a request of req reaches, if it exists, can receive and is ours. */
struct sim_qp *sim_find_responder(struct tv_sim *sim, struct sim_qp *req,
				  uint32_t peer);
void sim_seg_copy(const struct sim_seg *dst, uint32_t nd,
		  const struct sim_seg *src, uint32_t ns);
/* The local segments of a posted WR (inline or resolved); 0 or -EACCES. */
int sim_swr_local(struct sim_qp *req, const struct sim_swr *swr,
		  struct sim_seg *local);

int sim_xfer_transmit(struct tv_sim *sim, struct sim_qp *qp);
/* Schedule the early parts of the WR at idx, delivered at arrive_ns. */
int sim_place_schedule(struct tv_sim *sim, struct sim_qp *qp, uint64_t idx,
		       uint64_t arrive_ns);
bool sim_xfer_place(struct tv_sim *sim, const struct sim_ev *ev);
bool sim_xfer_deliver(struct tv_sim *sim, const struct sim_ev *ev);
bool sim_xfer_ack(struct tv_sim *sim, const struct sim_ev *ev);
bool sim_xfer_retx(struct tv_sim *sim, const struct sim_ev *ev);
bool sim_xfer_tx(struct tv_sim *sim, const struct sim_ev *ev);

#endif /* TENSORVERBS_SIM_PRIV_H */
