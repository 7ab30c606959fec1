/*
 * This file is private to the port-channel workload (docs/port.md): its
 * scenario, the programs compiled into per-node tasks, a run on the
 * simulator, its invariants.
 *
 * scenario.c parses "port" and "programs"; programs.c turns each program
 * into one task per node (a list of operations) and knows each program's
 * final buffers; run.c makes the engines (a context, a proxy, memory per
 * node; a connection, semaphores and channels per program and pair) and
 * runs the proxies; task.c runs the tasks, one operation after another,
 * in virtual time; check.c holds the invariants fed by the engines' and
 * the simulator's events; trace.c writes the engines' events and the
 * tasks' operations to traces.
 */
#ifndef TV_PT_H
#define TV_PT_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/port.h>
#include <tensorverbs/workload.h>

#define PT_MAX_NODES 64u
#define PT_MAX_PROGRAMS 64u
#define PT_MAX_OPS 1000000u        /* every task's operations together */
#define PT_MAX_NODE_BYTES (64u << 20)
#define PT_MAX_ITERS 100000u
#define PT_MAX_SEQ_OPS 10000u

enum pt_kind {
	PT_PING_PONG = 0,
	PT_PACKET_PING_PONG,
	PT_ALLGATHER,
	PT_ALLREDUCE,
	PT_ALL_TO_ALL,
	PT_SEQUENCE,
	PT_NKINDS
};

enum pt_format {
	PT_LL16 = 0,
	PT_LL8,
	PT_PLAIN,                  /* data, then a flag word: last-byte polling */
};

enum pt_op_kind {
	PT_OP_FILL = 0,   /* own[a, +len) = pattern(src_node, iter, pat_off) */
	PT_OP_FILL_F32,   /* own[a, +len) = float pattern (exact sums) */
	PT_OP_PUT,        /* to peer: own[b, +len) -> peer[a, +len]; flags */
	PT_OP_SIGNAL,
	PT_OP_FLUSH,
	PT_OP_WAIT,       /* a signal from peer; check what it covers */
	PT_OP_REDUCE,     /* own[a, +len) += own[b, +len) as floats */
	PT_OP_COPY,       /* own[a, +len) = own[b, +len) */
	PT_OP_PACK,       /* own[a..] = packets of own[b, +len), flag */
	PT_OP_POLL,       /* packets at own[a..] with flag -> own[b, +len) */
	PT_OP_RECYCLE,    /* the channel's semaphore starts from zero */
	PT_NOPS
};

#define PT_PUT_SIGNAL 1u
#define PT_PUT_FLUSH 2u
#define PT_PUT_PACKETS 4u         /* LL packets (or plain, TV_BREAK) */

struct pt_op {
	enum pt_op_kind kind;
	uint32_t peer;            /* the channel's other node */
	uint32_t flags;           /* PUT: PT_PUT_* */
	uint64_t a;               /* offsets in the node's buffer, bytes */
	uint64_t b;
	uint64_t len;
	uint32_t iter;            /* FILL, PACK, POLL (flag = iter + 1) */
	uint32_t src_node;        /* FILL, POLL: whose pattern */
	uint64_t pat_off;         /* FILL, POLL: where in the pattern */
	enum pt_format format;    /* PACK, POLL */
	uint64_t plain_len;       /* PUT of packets: length if plain */
};

struct pt_task {
	uint32_t node;
	uint32_t prog;
	struct pt_op *ops;
	size_t nops;
	size_t cap;
};

/* A channel pair of a program: one connection between a and b. */
struct pt_pair {
	uint32_t prog;
	uint32_t a;
	uint32_t b;
};

struct pt_program {
	enum pt_kind kind;
	uint32_t nnodes;
	uint32_t nodes[PT_MAX_NODES];  /* participants, in ring order */
	uint64_t bytes;                /* per message / chunk */
	uint64_t count;                /* allreduce: floats */
	uint32_t iters;
	uint32_t flush_every;
	enum pt_format format;
	uint64_t start_ns;
	uint64_t timeout_ns;           /* of each blocking operation */
	/* [node]: where the program's region starts, and its size. */
	uint64_t region_off[PT_MAX_NODES];
	uint64_t region_bytes[PT_MAX_NODES];
	/* sequence: the sender's source, the receiver's destination */
	uint32_t from;
	uint32_t to;
	bool recycles;
};

struct pt_scenario {
	uint32_t nodes;
	enum tv_port_signal_mode mode;
	uint32_t fifo_size;
	uint32_t cq_size;
	uint32_t max_write_queue;
	uint64_t lag_min_ns;           /* FIFO visibility, producers <-> proxy */
	uint64_t lag_max_ns;
	uint64_t op_gap_ns;            /* a producer's time per operation */
	uint64_t poll_ns;              /* first poll interval of a blocked op */
	uint64_t poll_max_ns;
	uint64_t timeout_ns;           /* default of the programs' */
	struct pt_program *progs;
	size_t nprogs;
	struct pt_task *tasks;
	size_t ntasks;
	struct pt_pair *pairs;
	size_t npairs;
	uint64_t node_bytes[PT_MAX_NODES];
	uint32_t node_sems[PT_MAX_NODES];  /* semaphores on each node */
	uint64_t nops;
};

/* scenario.c */
int pt_scenario_parse(struct tv_ju *jc, json_t *root,
		      struct tv_tb_scenario *core, void **wl_p);
void pt_scenario_free(void *wl);
/*
 * The engine's configuration for node id of sc, on the simulator and on
 * real verbs alike (the runner adds its observer, timeouts, breakage).
 */
void pt_engine_config(const struct pt_scenario *sc, uint32_t id,
		      struct tv_port_config *cfg);
const char *pt_kind_name(enum pt_kind kind);
const char *pt_op_name(enum pt_op_kind kind);

/* programs.c */
int pt_compile(struct tv_ju *jc, struct pt_scenario *sc, size_t prog,
	       const char *path, json_t *ops);
/* The bytes pattern(seed, prog, node, iter) has at position pos. */
void pt_pattern(uint64_t seed, uint32_t prog, uint32_t node, uint32_t iter,
		uint64_t pos, uint8_t *out, uint64_t len);
void pt_pattern_f32(uint64_t seed, uint32_t prog, uint32_t node,
		    uint64_t first, uint8_t *out, uint64_t len);
/*
 * The program's region of node as it must be at the end, into out (the
 * region's size): the bytes [*off_p, + *len_p) of it are known (packets
 * and scratch are not).  0 or -ENOMEM.
 */
int pt_final_region(const struct pt_scenario *sc, uint64_t seed,
		    size_t prog, uint32_t node, uint8_t *out, uint64_t *off_p,
		    uint64_t *len_p);

/* ---- a run ----------------------------------------------------------------- */

struct pt_runner;

/* One direction of a pair: what the sender pushed, what the receiver saw. */
struct pt_dir {
	uint32_t from;
	uint32_t to;
	struct pt_put *puts;       /* in push order */
	size_t nputs;
	size_t cap;
	uint64_t *signals;         /* [k]: puts pushed before signal k + 1 */
	size_t nsignals;
	size_t scap;
	uint64_t waits_ok;         /* the receiver's waits that returned */
	uint64_t delivered;        /* signals that reached the receiver */
	uint64_t recycled_at;      /* signals before the last recycle */
	uint64_t overtaken;        /* covered puts a later one overlapped */
};

struct pt_put {
	uint64_t dst_off;          /* in the receiver's buffer */
	uint64_t len;
	uint64_t digest;           /* of the source when it was pushed */
};

struct pt_link {
	struct pt_runner *r;
	uint32_t pair;
	uint32_t node[2];          /* a, b */
	struct tv_port_conn *conn[2];
	struct tv_port_sem *sem[2];
	uint32_t sem_id[2];
	uint64_t token_off[2];
	struct tv_port_chan *chan[2];
	uint32_t qpn[2];
	struct pt_dir dir[2];      /* [0]: a -> b, [1]: b -> a */
	/* per end: sends posted and their completions (the simulator's) */
	uint64_t posts[2];
	uint64_t cqes[2];
	/* RECYCLE meetings: arrivals per end, resets done */
	uint64_t recycle_arrived[2];
	uint64_t recycles;
};

struct pt_pending_slot {
	struct pt_node *n;
	uint64_t pos;
	struct tv_port_trigger t;
	bool live;
};

struct pt_node {
	struct pt_runner *r;
	uint32_t id;
	bool up;
	/* node/crash: its engine died with everything on it; a restart
	 * brings back a node with no connections (MSCCL++ has no re-join). */
	bool crashed;
	struct tv_vf_device *dev;
	struct tv_port_ctx *ctx;
	struct tv_port_proxy *proxy;
	uint8_t *data;
	uint8_t *tokens;
	uint64_t data_bytes;
	uint64_t token_bytes;
	struct tv_port_mem *mdata;
	struct tv_port_mem *mtok;
	uint32_t local_id;
	uint32_t remote_id[PT_MAX_NODES];
	bool has_remote[PT_MAX_NODES];
	bool proxy_due;            /* a proxy turn is scheduled */
	/* the FIFO's visibility layer (lag_ns) */
	struct pt_pending_slot *pending;   /* [fifo_size] */
	uint64_t tail_to_publish;
	bool tail_due;
	/* the checker's view of the FIFO */
	struct tv_port_trigger *pushed;    /* [pos] */
	uint64_t npushed;
	uint64_t pushed_cap;
	uint64_t handled;                  /* next position to be handled */
	uint64_t stored;                   /* slot stores seen */
};

enum pt_task_state {
	PT_TASK_IDLE = 0,          /* not started */
	PT_TASK_RUNNING,
	PT_TASK_DONE,
	PT_TASK_FAILED,
	PT_TASK_CANCELLED,         /* its node crashed */
};

struct pt_task_run {
	struct pt_runner *r;
	size_t idx;
	const struct pt_task *t;
	enum pt_task_state state;
	size_t pc;                 /* the operation running or next */
	bool op_started;
	uint64_t op_start_ns;
	uint64_t deadline_ns;
	uint64_t poll_ns;          /* current poll interval (backs off) */
	uint64_t flush_pos;        /* a flush in progress: its position */
	int phase;                 /* inside a multi-step operation */
	uint64_t recycle_no;       /* RECYCLE: which meeting of the link */
	uint32_t polls_here;
	int err;
	char *msg;                 /* why it failed */
	uint64_t ops_ok;
	uint64_t bytes_ok;
};

struct pt_runner {
	struct tv_tb_run *run;
	const struct pt_scenario *sc;
	uint64_t seed;
	uint32_t breakage;         /* TV_PORT_BREAK_* */
	bool plain_packets;        /* TV_BREAK=ll-last-byte */
	bool faulty;
	struct tv_prng lag_prng;
	struct pt_node *nodes;
	struct pt_link *links;     /* [sc->npairs] */
	struct pt_task_run *tasks; /* [sc->ntasks] */
	struct tv_tb_windows *win;
	bool win_ready;
	/* for the summary */
	struct tv_port_proxy_stats proxy_total;
	struct tv_port_conn_stats conn_total;
	uint64_t waits;
	uint64_t checked_puts;
	uint64_t overtaken;
	uint64_t polls;
	uint64_t deferred_stores;
};

/* run.c */
int pt_setup(struct tv_tb_run *run, void **state_p);
int pt_node_setup(struct pt_runner *r, struct pt_node *n);
void pt_link_end_teardown(struct pt_runner *r, struct pt_link *l, int e);
void pt_node_teardown(struct pt_runner *r, struct pt_node *n);
void pt_progress(struct tv_tb_run *run, void *st, uint32_t node);
void pt_teardown(struct tv_tb_run *run, void *st);
void pt_state_free(void *st);
void pt_proxy_kick(struct pt_node *n);
struct pt_link *pt_link_of(struct pt_runner *r, uint32_t prog, uint32_t a,
			   uint32_t b, int *end_p);

/* crash.c */
void pt_node_crash(struct tv_tb_run *run, void *st, uint32_t node);
int pt_node_restart(struct tv_tb_run *run, void *st, uint32_t node);

/* task.c */
int pt_tasks_schedule(struct pt_runner *r);
void pt_task_cancel(struct pt_task_run *tr, const char *why);

/* check.c */
void pt_observe(void *ctx, const struct tv_port_event *ev);
void pt_sim_event(struct tv_tb_run *run, void *st,
		  const struct tv_sim_event *ev);
void pt_check(struct tv_tb_run *run, void *st);
void pt_check_end(struct tv_tb_run *run, void *st);
/* A wait returned: the puts its signal covers are in place. */
void pt_check_wait(struct pt_runner *r, struct pt_link *l, int dir,
		   const struct pt_task_run *tr);
/* Packets were read: their data is what the sender packed. */
void pt_check_packets(struct pt_runner *r, const struct pt_task_run *tr,
		      const struct pt_op *op);
int pt_dir_put(struct pt_dir *d, uint64_t dst_off, uint64_t len,
	       uint64_t digest);
int pt_dir_signal(struct pt_dir *d);
uint64_t pt_digest(const uint8_t *p, uint64_t len);

/* trace.c */
void pt_trace_engine(struct tv_tb_run *run, const struct tv_port_event *ev);
void pt_trace_op(struct pt_runner *r, const struct pt_task_run *tr,
		 const char *what, int code);
void pt_show_parse(json_t *line, struct tv_tb_show_event *e);
extern const struct tv_tb_draw pt_draw;

/* swarm.c */
#define PT_NEDITS 9
int pt_generate(uint64_t seed, uint32_t without, json_t **sc_p);
extern const struct tv_tb_shrink_edit *const pt_edits[PT_NEDITS];
void pt_describe(json_t *sc, uint64_t ops, char *buf, size_t cap);

/* workload.c */
extern const struct tv_tb_workload_ops tv_port_workload;

#endif /* TV_PT_H */
