/*
 * This file is private to tensorverbs' testbed: what its files share.
 * The scenario core (scenario.c), the run on the simulator (run.c, with
 * its faults in run_faults.c and node crashes in run_crash.c), the
 * generic invariants (check.c), the trace recorder (trace.c), and the
 * helpers of swarm, shrink and show.  Workloads see none of this: they
 * get workload.h.
 */
#ifndef TV_TESTBED_TB_INT_H
#define TV_TESTBED_TB_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include <tensorverbs/faults.h>
#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#define TB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- scenario.c ----------------------------------------------------------- */

struct tb_link_override {
	uint32_t from;
	uint32_t to;
	struct tv_sim_link link;
};

/* expect_faults: the point fired min..max times. */
struct tb_fault_expect {
	char *point;
	uint64_t min;
	uint64_t max;
};

struct tv_tb_scenario {
	const struct tv_tb_workload_ops *ops;
	void *wl;                  /* the workload's parsed part */
	json_t *json;              /* what it was parsed from (a reference) */
	char *name;
	char *origin;              /* file path, or a label for built-ins */
	uint64_t seed;
	uint32_t nodes;
	struct tv_sim_link link;
	struct tb_link_override *links;
	size_t nlinks;
	/* simulator */
	uint64_t jitter_ns_max;
	enum tv_sim_placement placement; /* inside one RDMA write */
	enum tv_sim_profile profile; /* the device the nodes behave like */
	uint64_t qp_op_ns;         /* a QP's requests: at most one per this */
	uint64_t post_ns;          /* a node's post_send calls: one per this */
	/* The device's max_qp_rd_atom and max_qp_init_rd_atom (0: the
	 * profile's): a device whose initiator depth is not 16. */
	uint64_t max_qp_rd_atom;
	bool no_atomics;           /* the devices have no RDMA atomics */
	uint64_t deadline_ns;      /* virtual time limit of the run */
	uint64_t max_events;
	/* what counts as a failure */
	bool allow_error_completions;
	/* the fault plan, a JSON array (docs/faults.md), or NULL: none */
	json_t *faults;
	struct tb_fault_expect *fault_expects;
	size_t nfault_expects;
	/* expect_corruption: detected and undetected, each a range */
	bool has_corrupt_expect;
	uint64_t detected_min, detected_max;
	uint64_t undetected_min, undetected_max;
	/* [nodes]: when a node starts (late_nodes; 0: at set-up) */
	uint64_t *start_ns;
	uint64_t nops;             /* the workload's operations */
	uint64_t last_at_ns;       /* the latest operation's time */
};

/* Keys of the scenario core, on the simulator and on real verbs. */
extern const char *const tb_core_keys[];
extern const char *const tb_core_hw_keys[];

/* ---- failures.c ------------------------------------------------------------ */

__attribute__((format(printf, 3, 4)))
void tb_failures_add(struct tv_tb_failures *f, enum tv_tb_fail_kind kind,
		     const char *fmt, ...);
void tb_failures_vadd(struct tv_tb_failures *f, enum tv_tb_fail_kind kind,
		      const char *fmt, va_list ap);
void tb_failures_free(struct tv_tb_failures *f);

/* ---- plan.c ---------------------------------------------------------------- */

/* Rules of over replace base's rules for the same point; others append. */
int tb_plan_merge(json_t *base, json_t *over);
/* An injector seeded with seed, every rule of plan armed. */
int tb_plan_injector(json_t *plan, uint64_t seed, struct tv_flt **flt_p,
		     char *err, size_t err_bytes);
/* The rule for point, or NULL. */
json_t *tb_plan_rule(json_t *plan, const char *point);
/* Bit i set: point i of tv_flt_points() has a rule in the plan. */
uint32_t tb_plan_mask(json_t *plan);

/*
 * The error of a jansson load that gave NULL: -ENOMEM when its text is
 * empty (jansson says nothing only when an allocation failed), else
 * -EINVAL (the text says why).
 */
int tb_json_load_errno(const json_error_t *jerr);

/* ---- trace.c: the recorder ------------------------------------------------- */

#define TB_TRACE_FORMAT 1
#define TB_TRACE_ERR_MAX 1024

/* Gets each event line; ev is borrowed.  Returns 0 or a negative errno. */
typedef int (*tb_emit_fn)(void *ctx, json_t *ev);

/* Where an rkey's addresses are measured from (see tv_tb_trace_addr). */
struct tb_anchor {
	uint64_t key;              /* (node + 1) << 32 | rkey; 0 = empty slot */
	uint64_t base;             /* first raw address seen under the key */
};

/*
 * One recorder turns events into JSON lines and hands each to an emit
 * function: a trace file writes it, replay compares it, swarm and shrink
 * count it.  All use the very same encoding.
 */
struct tb_rec {
	tb_emit_fn emit;
	void *emit_ctx;
	struct tv_sim *sim;        /* virtual time of events; may be NULL */
	const char *wl_src;        /* the workload's "src" */
	uint64_t count;            /* event lines emitted */
	int err;                   /* first error (sticky); lines stop after it */
	struct tb_anchor *anchors;
	size_t anchors_cap;
	size_t anchors_used;
};

void tb_rec_init(struct tb_rec *t, tb_emit_fn emit, void *ctx);
void tb_rec_fini(struct tb_rec *t);
void tb_rec_sim_event(struct tb_rec *t, const struct tv_sim_event *ev);
/* A fault fired: hit is the point's hit number, node who ran (or none). */
void tb_rec_fault_event(struct tb_rec *t, const char *point, uint64_t hit,
			uint32_t node);
/* A node's life: CRASH, RESTART, RESTART_FAILED, or SKIP of an operation. */
void tb_rec_node_event(struct tb_rec *t, const char *kind, uint32_t node,
		       const char *op, uint64_t step_id, const char *name);
/* A new line {"i", "t", "src", "kind"} (NULL when out of memory). */
json_t *tb_rec_line(struct tb_rec *t, const char *src, const char *kind);
void tb_rec_emit(struct tb_rec *t, json_t *obj);
json_t *tb_rec_addr(struct tb_rec *t, uint32_t mem_node, uint32_t rkey,
		    uint64_t addr);

/* Header and summary lines; scenario and plan (NULL: none) are borrowed. */
int tb_trace_header_new(uint64_t seed, json_t *scenario,
			const char *scenario_file, json_t *plan,
			const char *breakage, json_t **hdr_p);
int tb_trace_summary_new(const struct tb_rec *t, const struct tv_tb_run *run,
			 json_t **sum_p);
/* One compact line, newline-terminated. */
int tb_trace_write_line(FILE *f, json_t *obj);

/* What a header says, validated; json fields are borrowed from hdr. */
struct tb_trace_header {
	uint64_t seed;
	json_t *scenario;
	const char *scenario_file; /* NULL for a built-in scenario */
	json_t *plan;              /* a JSON array, or JSON null: no faults */
	const char *build_id;
	const char *breakage;      /* TV_BREAK the run had, or NULL */
};

int tb_trace_header_parse(json_t *hdr, struct tb_trace_header *h_p,
			  char err[TB_TRACE_ERR_MAX]);

struct tb_trace_reader {
	FILE *f;
	const char *path;
	char *buf;
	size_t cap;
	uint64_t line;             /* 1-based number of the last line read */
};

int tb_trace_reader_open(const char *path, struct tb_trace_reader *r_p);
void tb_trace_reader_close(struct tb_trace_reader *r);
/* 0, -ENODATA at the end of the file, -EINVAL (err says why) or -errno. */
int tb_trace_reader_next(struct tb_trace_reader *r, json_t **obj_p,
			 char err[TB_TRACE_ERR_MAX]);
bool tb_trace_is_event(json_t *obj);
bool tb_trace_is_summary(json_t *obj);
/* The trace's first line, parsed; *hdr_p is kept for h's borrowed parts. */
int tb_trace_read_header(struct tb_trace_reader *rd, json_t **hdr_p,
			 struct tb_trace_header *h_p,
			 char err[TB_TRACE_ERR_MAX]);
/* The recorder of a trace file (for tv_tb_run). */
struct tb_rec *tb_trace_rec(struct tv_tb_trace *trace);

/* ---- record.c: recordings of the verbs (docs/recording.md) ----------------- */

#include <pthread.h>

#include <tensorverbs/faults.h>

json_t *tb_json_hex(uint64_t v);
json_t *tb_json_wr_op(uint32_t op);
json_t *tb_json_wc_op(uint32_t op);
json_t *tb_json_wc_status(uint32_t status);

enum { TB_TAP_SRC_VERBS = 0, TB_TAP_SRC_FIRE = 1, TB_TAP_SRC_STEP = 2 };

/* One recorded line, binary until the file is written. */
struct tb_tap_rec {
	uint64_t t_ns;             /* since the recording's start */
	uint64_t hit;              /* FIRE: the point's hit; STEP: at_ns */
	uint64_t node_hit;         /* FIRE: the node's own hit, 0: unknown */
	uint32_t node;
	uint16_t point;            /* FIRE: index in tv_flt_points() */
	uint8_t src;               /* TB_TAP_SRC_* */
	struct tv_flt_tap_event ev; /* VERBS */
};

struct tb_tap_node {
	struct tv_tb_tap *tap;
	uint32_t node;
	struct tv_vf_device *dev;  /* the wrapped device */
	_Atomic uint64_t events;   /* its verbs events so far */
};

typedef int (*tb_tap_poll_fn)(void *ctx, uint32_t cq, struct tv_vf_wc *wc,
			      int got, int cap);

/* One thread's records: appended by that thread alone, without a lock. */
struct tb_tap_buf {
	struct tb_tap_buf *next;
	struct tb_tap_rec *recs;
	size_t n, cap;
	int err;                   /* sticky: -ENOMEM */
};

struct tv_tb_tap {
	pthread_mutex_t lock;      /* bufs: a thread's first record */
	struct tb_tap_buf *bufs;
	uint64_t id;               /* never reused: threads' cached buffers */
	/* After tb_tap_collect(): every buffer's records in time order. */
	struct tb_tap_rec *recs;
	size_t n;
	int err;                   /* sticky: -ENOMEM */
	uint64_t t0_ns;            /* the device clock at the start */
	uint32_t nnodes;
	struct tb_tap_node *nodes;
	tb_tap_poll_fn poll;       /* replay --sim: per node ctx = nodes[n] */
	void *follow;              /* replay --sim's state, or NULL */
	char *path;                /* recording: where to write */
	bool no_ops;               /* the outcome has no operation counts */
	json_t *hdr;
};

const char *tb_tap_kind_name(uint32_t kind);
int tb_tap_kind_parse(const char *name, uint32_t *kind_p);
int tb_tap_new(uint32_t nodes, struct tv_tb_tap **tap_p);
void tb_tap_free(struct tv_tb_tap *t);
int tb_tap_attach(struct tv_tb_tap *t, uint32_t node,
		  struct tv_vf_device *wrapped);
void tb_tap_fire(struct tv_tb_tap *t, uint32_t node, const char *point,
		 uint64_t hit, uint64_t now_ns);
/* The threads' records as one array (t->recs, t->n), once they stopped. */
int tb_tap_collect(struct tv_tb_tap *t);
/* A node starts the scenario's time point at_ns (serve: its STEP line). */
void tb_tap_step(struct tv_tb_tap *t, uint32_t node, uint64_t at_ns,
		 uint64_t now_ns);
json_t *tb_tap_line(const struct tb_tap_rec *r, uint64_t i);
/* tv_tb_record_finish() into a malloc'd buffer (rank 0 gathers it). */
int tb_record_finish_mem(struct tv_tb_tap *t, const struct tv_tb_result *res,
			 const struct tv_tb_failures *fails, char **buf_p,
			 size_t *len_p);
/* tv_tb_record_merge() of n recordings in memory, named "rank K's". */
int tb_record_merge_mem(const char *out, char *const *bufs,
			const uint64_t *lens, size_t n, char *err, size_t cap);
int tb_rec_read_body(struct tb_trace_reader *rd, json_t ***lines_p,
		     size_t *n_p, json_t **sum_p, char *err, size_t cap);
int tb_tap_summary(uint64_t events, const struct tv_tb_result *res,
		   const struct tv_tb_failures *fails, bool no_ops,
		   json_t **sum_p);

/* ---- run.c ------------------------------------------------------------------ */

/* A run with a recorder of the caller's (replay, counting), or none. */
/*
 * mpi.c / mpi_none.c, for validate across hosts: a broadcast from rank 0,
 * an all-gather of len bytes a rank, the smallest of an int, a barrier
 * (the same binary on every rank: records travel as bytes).
 */
void tb_mpi_bcast(void *buf, size_t len);
void tb_mpi_allgather(const void *mine, size_t len, void *all);
int tb_mpi_min(int v);
void tb_mpi_barrier(void);
/*
 * Every rank's len bytes to rank 0 (serve --record under mpirun): rank 0
 * gets one malloc'd buffer per rank and their lengths (free each, then
 * both arrays); the others nothing.  Every rank calls it exactly once.
 * -ENOTSUP outside MPI, -ENOMEM on every rank if rank 0 cannot hold it.
 */
int tb_mpi_gather_bytes(const char *mine, uint64_t len, char ***bufs_p,
			uint64_t **lens_p);
/* swarm.c: this process's seeds; swarm_mpi.c / mpi_none.c: the ranks'. */
int tb_swarm_local(const struct tv_tb_swarm_opts *opts,
		   struct tv_tb_swarm_report *rep_p);
int tb_swarm_mpi(const struct tv_tb_swarm_opts *opts, uint32_t rank,
		 uint32_t size, struct tv_tb_swarm_report *rep_p);

int tb_run(const struct tv_tb_scenario *sc, const struct tv_tb_run_opts *opts,
	   struct tb_rec *rec, struct tv_tb_run **run_p);
uint64_t tb_wall_ns(void);
/* A scenario from JSON, run with seed, the outcome kept (swarm, shrink). */
struct tb_outcome {
	bool invalid;              /* the JSON was not a valid scenario */
	size_t failures;
	uint32_t kinds;            /* bit (1 << kind) */
	enum tv_tb_fail_kind first;
	char first_msg[512];
	uint64_t ops;
	uint64_t trace_events;     /* lines a trace would have (count_events) */
	struct tv_tb_result res;
};

int tb_run_json(json_t *root, uint64_t seed, const char *breakage,
		bool count_events, struct tb_outcome *out_p);

/* ---- util.c ----------------------------------------------------------------- */

/*
 * In a forked child: execvpe(argv[0], argv, envp), after writing the
 * child's coverage counters in a coverage build (as tv_tb_child_exit());
 * _exit(127) if the exec fails (a shell's "command not found").
 */
__attribute__((noreturn)) void tv_tb_child_exec(char *const argv[],
						char *const envp[]);

#endif /* TV_TESTBED_TB_INT_H */
