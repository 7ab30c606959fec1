/*
 * tensorverbs — the workload interface: how a protocol plugs into the
 * testbed (testbed.h).
 *
 * A workload is a const ops table, like the verbs facade: its scenario
 * keys and their parser, what it sets up on every node and schedules in
 * virtual time, its own invariants and expectations, its summary lines,
 * its swarm generator and shrink edits, the trace events it records and
 * how they are drawn, and its runs on real verbs.  The testbed owns
 * everything else: the simulated world and its devices (wrapped by the
 * fault layer), the scenario core, node crashes and late nodes, the
 * generic invariants, traces, replay, swarms, shrinking and drawings.
 * docs/testbed.md, "Adding a workload", walks through one.
 *
 * Optional ops may be NULL; the testbed then does without (no summary
 * lines, no swarm seeds of this workload ...).
 */
#ifndef TENSORVERBS_WORKLOAD_H
#define TENSORVERBS_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <poll.h>

#include <jansson.h>

#include <tensorverbs/sim.h>
#include <tensorverbs/testbed.h>
#include <tensorverbs/vf.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- strict JSON, with the path of what is rejected ------------------- */

#define TV_JU_PATH_MAX 256

/*
 * Every accessor names the JSON path of what it rejects, so a scenario
 * author reads "$.steps[2].sends[0].shape[1]: must be an integer >= 0".
 * The first error wins; each returns 0 or -EINVAL (-ENOMEM).
 */
struct tv_ju {
	char *err;        /* TV_TB_ERR_MAX bytes */
	size_t err_len;
};

__attribute__((format(printf, 3, 4)))
int tv_ju_fail(struct tv_ju *jc, const char *path, const char *fmt, ...);
/* Child paths: "$.a" + "b" -> "$.a.b"; "$.a" + 3 -> "$.a[3]". */
void tv_ju_path_key(char out[TV_JU_PATH_MAX], const char *path,
		    const char *key);
void tv_ju_path_idx(char out[TV_JU_PATH_MAX], const char *path, size_t idx);
/* A key of obj not in the NULL-terminated list allowed is refused. */
int tv_ju_check_keys(struct tv_ju *jc, const char *path, json_t *obj,
		     const char *const *allowed);
/* An integer in [0, max]; integral reals (1e9) are accepted too. */
int tv_ju_uint(struct tv_ju *jc, const char *path, json_t *v, uint64_t max,
	       uint64_t *v_p);
/* Optional member: *v_p = def when absent. */
int tv_ju_get_uint(struct tv_ju *jc, const char *path, json_t *obj,
		   const char *key, uint64_t def, uint64_t max, uint64_t *v_p);
int tv_ju_need_uint(struct tv_ju *jc, const char *path, json_t *obj,
		    const char *key, uint64_t max, uint64_t *v_p);
int tv_ju_get_bool(struct tv_ju *jc, const char *path, json_t *obj,
		   const char *key, bool def, bool *v_p);
/* A string without NUL bytes; *s_p is a new copy, or NULL when absent. */
int tv_ju_get_str(struct tv_ju *jc, const char *path, json_t *obj,
		  const char *key, bool required, char **s_p);
int tv_ju_need_object(struct tv_ju *jc, const char *path, json_t *v);
int tv_ju_need_array(struct tv_ju *jc, const char *path, json_t *v);
/* A value N (exactly) or {"min": A, "max": B}, either optional. */
int tv_ju_range(struct tv_ju *jc, const char *path, json_t *v,
		uint64_t *min_p, uint64_t *max_p);
/* Grow *arr (of elem-sized items) so that n + 1 fit. */
int tv_ju_grow(void **arr, size_t n, size_t *cap, size_t elem);
/*
 * json_object_set_new and json_array_append_new (both take v, even NULL
 * or on failure) with a failure kept in *err: -ENOMEM, sticky.  For
 * builders (generators, reports) that add many values and check once: a
 * value lost to a failed allocation must not make another document.
 */
void tv_ju_set(json_t *o, const char *key, json_t *v, int *err);
void tv_ju_push(json_t *a, json_t *v, int *err);

/* ---- what a workload's parser may ask of the scenario core ------------- */

/* When node starts (late_nodes; 0: at set-up). */
uint64_t tv_tb_scenario_start_ns(const struct tv_tb_scenario *sc,
				 uint32_t node);
bool tv_tb_scenario_allow_errors(const struct tv_tb_scenario *sc);
/* The workload's parsed part (what its parse op returned). */
const void *tv_tb_scenario_wl(const struct tv_tb_scenario *sc);
/* The parser says when its last operation is scheduled (default deadline). */
void tv_tb_scenario_note_time(struct tv_tb_scenario *sc, uint64_t at_ns);
void tv_tb_scenario_set_ops(struct tv_tb_scenario *sc, uint64_t ops);

/* ---- what a workload may do during a run -------------------------------- */

enum tv_tb_node_state {
	TV_TB_NODE_UP = 0,
	TV_TB_NODE_DOWN,             /* crashed; its restart is scheduled */
	TV_TB_NODE_DEAD,             /* its restart failed: gone for good */
};

#define TV_TB_NO_NODE UINT32_MAX

struct tv_sim *tv_tb_run_sim(const struct tv_tb_run *run);
/* The workload's state (what its setup op made). */
void *tv_tb_run_wl(const struct tv_tb_run *run);
bool tv_tb_run_verbose(const struct tv_tb_run *run);
/* The TV_BREAK name the run has (tests of the tools only), or NULL. */
const char *tv_tb_run_breakage(const struct tv_tb_run *run);
/*
 * Node n's device: the simulator's, wrapped by the fault layer when the
 * scenario injects faults.  The same device every time (a restarted node
 * gets the wrapper its first engine had).
 */
int tv_tb_run_device(struct tv_tb_run *run, uint32_t node,
		     struct tv_vf_device **dev_p);
/*
 * fn(arg) at virtual time at_ns, in node's event stream.  fn says whose
 * code runs with tv_tb_run_enter()/tv_tb_run_leave(): fault firings and
 * trace events are attributed to that node.
 */
int tv_tb_run_schedule(struct tv_tb_run *run, uint64_t at_ns, uint32_t node,
		       void (*fn)(void *arg), void *arg);
/*
 * The same for one of the scenario's operations (a send, a receive, a
 * batch): the run may hold it back until the node is where a recording
 * started it (tv_tb_run_opts.op_gate).
 */
int tv_tb_run_schedule_op(struct tv_tb_run *run, uint64_t at_ns,
			  uint32_t node, void (*fn)(void *arg), void *arg);
/* Whose code runs now: set (returns the previous one) and restore. */
uint32_t tv_tb_run_enter(struct tv_tb_run *run, uint32_t node);
void tv_tb_run_leave(struct tv_tb_run *run, uint32_t prev);
uint32_t tv_tb_run_actor(const struct tv_tb_run *run);
/*
 * Before each scenario operation of a node (the actor): the node/crash
 * point.  True when the node is down (it crashed now or before): the
 * operation is skipped, counted and traced, never started.
 */
bool tv_tb_run_gate(struct tv_tb_run *run, uint32_t node, const char *op,
		    uint64_t step_id, const char *name);
enum tv_tb_node_state tv_tb_run_node_state(const struct tv_tb_run *run,
					   uint32_t node);
/* Both nodes have started (late_nodes) by now. */
bool tv_tb_run_pair_due(const struct tv_tb_run *run, uint32_t a, uint32_t b);
/* Is the run tearing down (what completes now was cancelled by it)? */
bool tv_tb_run_tearing_down(const struct tv_tb_run *run);
/*
 * The workload refused an operation (err): under an injected allocation or
 * registration failure that is the engine doing its job (counted);
 * otherwise a failure of the run.
 */
void tv_tb_run_refused(struct tv_tb_run *run, const char *what, int err);
/* The result as it is being made: the workload fills its own fields. */
struct tv_tb_result *tv_tb_run_result_mut(struct tv_tb_run *run);

/* Faults: the scenario has a plan; firings so far (all, unrecoverable). */
bool tv_tb_run_faulty(const struct tv_tb_run *run);
uint64_t tv_tb_run_fires(const struct tv_tb_run *run);
uint64_t tv_tb_run_unrecoverable_fires(const struct tv_tb_run *run);
uint64_t tv_tb_run_point_fires(const struct tv_tb_run *run, const char *point);

/*
 * Trace lines of the workload's events (docs/trace.md).  line_new gives
 * {"i", "t", "src": ops->event_src (else ops->name), "kind": kind}, or
 * NULL when the run records nothing; the workload adds its keys, then
 * emits it (consumed).
 * An address is written as its distance from the first address the trace
 * saw in the same (node, rkey): heap addresses differ from run to run.
 */
json_t *tv_tb_trace_line_new(struct tv_tb_run *run, const char *kind);
json_t *tv_tb_trace_addr(struct tv_tb_run *run, uint32_t mem_node,
			 uint32_t rkey, uint64_t addr);
void tv_tb_trace_emit(struct tv_tb_run *run, json_t *line);
/* JSON of an unsigned 64-bit value (a "0x" string above INT64_MAX). */
json_t *tv_tb_json_u64(uint64_t v);
/* A C string; bytes that are not UTF-8 become \xNN text.  NULL: null. */
json_t *tv_tb_json_str(const char *s);
/* A node number, or null for TV_TB_NO_NODE. */
json_t *tv_tb_json_node(uint32_t node);

/* ---- advertised windows ------------------------------------------------------ */

/*
 * The invariant "remote writes land only inside memory the target
 * advertised, while it is live" (TV_TB_FK_WRITE) needs a table of what
 * each node advertised to each peer: node's window for peer under an
 * index (a request's buffer, a slot, a partition), [addr, +length) under
 * rkey, live until done.  A done window stays, so a late duplicate can be
 * told from a stray write, and so can memory advertised again since.
 */
struct tv_tb_window {
	uint64_t addr;
	uint64_t length;
	uint32_t rkey;
	uint64_t id;               /* the advertiser's names for what it is, */
	uint64_t id2;              /*   compared when it completes */
	bool done;                 /* completed, or its connection is gone */
	uint64_t open_seq;         /* the caller's event count when opened */
	uint64_t done_seq;         /* ... and when done */
};

struct tv_tb_windows;

int tv_tb_windows_create(uint32_t nodes, struct tv_tb_windows **w_p);
void tv_tb_windows_destroy(struct tv_tb_windows *w);
/* Open (or replace) node's window for peer under index; -ENOMEM. */
int tv_tb_windows_open(struct tv_tb_windows *w, uint32_t node, uint32_t peer,
		       uint32_t index, const struct tv_tb_window *win);
struct tv_tb_window *tv_tb_windows_find(struct tv_tb_windows *w,
					uint32_t node, uint32_t peer,
					uint32_t index);
/* A new connection between a and b: every live window of theirs is done. */
void tv_tb_windows_close_pair(struct tv_tb_windows *w, uint32_t a, uint32_t b,
			      uint64_t seq);
/* node is gone (a crash): every live window it advertised is done. */
void tv_tb_windows_close_node(struct tv_tb_windows *w, uint32_t node,
			      uint64_t seq);
/*
 * A window of node with e's rkey overlapping e, opened after e was done:
 * the memory is someone else's now.  NULL if none; *index_p its index.
 */
const struct tv_tb_window *tv_tb_windows_reused(const struct tv_tb_windows *w,
						uint32_t node,
						const struct tv_tb_window *e,
						uint32_t *index_p);
/* [addr, +length) under rkey lies inside e (an empty write always does). */
bool tv_tb_window_holds(const struct tv_tb_window *e, uint64_t addr,
			uint64_t length, uint32_t rkey);

/* ---- shrinking ------------------------------------------------------------ */

/*
 * One kind of edit at place i of a candidate scenario (JSON, changed in
 * place): 0 changed; -EAGAIN nothing to change at i (try i + 1); -ENOENT
 * no place i or beyond.  cur: how the scenario as it is now ran.
 */
struct tv_tb_shrink_state {
	uint64_t ops;
	uint64_t fires[TV_TB_MAX_POINTS];
	uint64_t first_hit[TV_TB_MAX_POINTS];
	uint64_t last_hit[TV_TB_MAX_POINTS];
};

struct tv_tb_shrink_edit {
	const char *what;
	int (*fn)(json_t *sc, size_t i, const struct tv_tb_shrink_state *cur);
};

/* The edits of fault plans every workload's table can include. */
extern const struct tv_tb_shrink_edit tv_tb_edit_pin_faults;
extern const struct tv_tb_shrink_edit tv_tb_edit_drop_fault;
extern const struct tv_tb_shrink_edit tv_tb_edit_lower_fault;
extern const struct tv_tb_shrink_edit tv_tb_edit_aim_earlier;
/* The plan's one rule if it fires once at a counted hit ("nth"), or NULL. */
json_t *tv_tb_plan_one_shot_rule(json_t *sc);

/* ---- swarm ---------------------------------------------------------------- */

/* Uniform in [0, 1); log-uniform in [lo, hi] (small as likely as large). */
double tv_tb_gen_unit(struct tv_prng *p);
uint64_t tv_tb_gen_log_uniform(struct tv_prng *p, uint64_t lo, uint64_t hi);
/*
 * Appends "faults" to root: a fault mix drawn from p (each of the
 * workload's eligible kinds on or off, then its rate), as every
 * workload's generator does.  span_ns: the virtual time the workload
 * spans (rule windows lie in it).
 */
int tv_tb_swarm_gen_faults(struct tv_prng *p, json_t *root, uint32_t without,
			   uint64_t span_ns,
			   const struct tv_tb_workload_ops *wl);
/* May operations of wl fail (not just recover) once point fired? */
bool tv_tb_workload_may_fail(const struct tv_tb_workload_ops *wl,
			     const char *point);
/* May a scenario of wl arm point (its own, or a common one)? */
bool tv_tb_workload_has_point(const struct tv_tb_workload_ops *wl,
			      const char *point);

/* ---- drawings --------------------------------------------------------------- */

#define TV_TB_SHOW_NAME_MAX 64
#define TV_TB_SHOW_NONE UINT32_MAX

enum tv_tb_show_src {
	TV_TB_SHOW_SIM,
	TV_TB_SHOW_WORKLOAD,         /* the workload's own events */
	TV_TB_SHOW_OTHER,            /* faults, node life, unknown sources */
};

/* One trace line, as the drawings read it. */
struct tv_tb_show_event {
	uint64_t i;                  /* index in the trace */
	uint64_t t;                  /* virtual time, ns */
	enum tv_tb_show_src src;
	char kind[24];
	uint32_t node;
	uint32_t peer;               /* TV_TB_SHOW_NONE if none */
	uint32_t qpn;
	char op[24];                 /* sim: opcode name */
	char status[24];             /* sim: WC status; workload: its code */
	char state[8];               /* sim QP_STATE: the new state */
	bool has_imm;
	uint32_t imm;
	uint64_t wr_id;
	uint64_t len;
	char name[TV_TB_SHOW_NAME_MAX]; /* cut with "..." */
	/* Filled by the workload's show_parse: what its events carry. */
	char tag[24];                /* rendezvous: the message type */
	bool has_idx;
	uint32_t idx;
	uint64_t step;
};

/* Is status (a WC status or a code name) an error? */
bool tv_tb_show_is_error(const char *status);

enum tv_tb_mark_kind {
	TV_TB_MARK_NONE = 0,
	TV_TB_MARK_LABEL,            /* labels the node's latest unlabelled post */
	TV_TB_MARK_NOTE,             /* a note on the node's lane */
};

/* What the SVG makes of one workload event. */
struct tv_tb_svg_mark {
	enum tv_tb_mark_kind kind;
	int style;                   /* index into draw->styles; -1: error red */
	double width;                /* arrow: line width (0: default) */
	bool quiet;                  /* arrow label only drawn if it was lost */
	char text[192];
};

/* A colour of the workload's legend, as "#rrggbb", and what it means. */
struct tv_tb_draw_style {
	const char *color;
	const char *what;
};

struct tv_tb_chrome;
/* Chrome trace events, for a workload's chrome_event op. */
void tv_tb_chrome_instant(struct tv_tb_chrome *c,
			  const struct tv_tb_show_event *e, int tid,
			  const char *cat, const char *name, bool bad);
/* An async slice keyed by (node, peer, key): begin once, end once. */
void tv_tb_chrome_async_begin(struct tv_tb_chrome *c,
			      const struct tv_tb_show_event *e, int tid,
			      uint64_t key, const char *name);
void tv_tb_chrome_async_end(struct tv_tb_chrome *c,
			    const struct tv_tb_show_event *e, uint64_t key);

struct tv_tb_draw {
	const struct tv_tb_draw_style *styles; /* the legend */
	size_t nstyles;
	void (*svg_event)(const struct tv_tb_show_event *e,
			  struct tv_tb_svg_mark *m);
	/* Chrome: threads 1..n of each node's process (index 0 unused). */
	const char *const *threads;
	size_t nthreads;
	int verbs_tid;               /* where QP states and errors go */
	/* Is a simulator post or delivery a data write (flow, its name)? */
	bool (*chrome_flow)(const struct tv_tb_show_event *e, char *name,
			    size_t cap, int *tid_post, int *tid_deliver);
	void (*chrome_event)(struct tv_tb_chrome *c,
			     const struct tv_tb_show_event *e);
};

/* ---- real verbs: one scenario node per process ----------------------------- */

/*
 * One node of a scenario as a process on an RDMA device (tv_tb_serve).
 * Virtual times do not exist on hardware; their order does: every
 * distinct time point of the scenario is a barrier across the processes
 * (a small TCP star around node 0), and a node settles (its own work
 * acknowledged) before it enters one.  The testbed owns the options, the
 * RDMA_* configuration's check, the fault injector, the loop, the
 * barriers, the deadline, the end (every node's statistics gathered on
 * node 0) and the verdict; the workload owns its device, connections and
 * engine, and what it does at each time point.
 */
struct tv_tb_hw;

struct tv_flt;

struct tv_tb_hw_ops {
	/*
	 * May this scenario run on real verbs at all (beyond its keys)?
	 * false and why: serve skips it, saying so.  NULL: yes.
	 */
	bool (*applicable)(const struct tv_tb_scenario *sc, char *why,
			   size_t cap);
	/*
	 * Device, connection manager, engine.  -EINVAL / -ENODEV: the
	 * configuration is refused (msg names the variable or the address).
	 */
	int (*open)(struct tv_tb_hw *hw, void **st_p, char *msg, size_t cap);
	/* 0, or a negative errno for what it left behind (a leak). */
	int (*close)(struct tv_tb_hw *hw, void *st);
	void (*state_free)(void *st);
	/* Every connection up (tv_tb_hw_step until then); 0 or -errno. */
	int (*connect)(struct tv_tb_hw *hw, void *st);
	/* Work done now: items handled, or a negative errno. */
	int (*progress)(struct tv_tb_hw *hw, void *st);
	/* Nothing to do: sleep until until_ns or an event (extra fds too). */
	void (*sleep)(struct tv_tb_hw *hw, void *st, uint64_t until_ns,
		      struct pollfd *extra, unsigned nextra);
	/* The scenario's distinct operation times, sorted (malloc'd). */
	int (*times)(struct tv_tb_hw *hw, void *st, uint64_t **times_p,
		     size_t *n_p);
	/* This node's operations at time t, then settle; 0 or -errno. */
	int (*time_point)(struct tv_tb_hw *hw, void *st, uint64_t t);
	/* Wait until this node's own work is done; 0 or -errno. */
	int (*finish)(struct tv_tb_hw *hw, void *st);
	/* Done: a peer going away is expected from now on. */
	void (*quiesce)(struct tv_tb_hw *hw, void *st);
	/* What each node reports at the end, nstats uint64s. */
	size_t nstats;
	void (*stats)(struct tv_tb_hw *hw, void *st, uint64_t *v);
	/* Its checks at the end; all[n]: node n's stats (node 0), else NULL. */
	void (*check_end)(struct tv_tb_hw *hw, void *st,
			  const uint64_t *const *all);
	/* The middle of the verdict line: "3/3 recvs done (...)". */
	void (*summary)(struct tv_tb_hw *hw, void *st, FILE *out);
};

const struct tv_tb_serve_opts *tv_tb_hw_opts(const struct tv_tb_hw *hw);
const struct tv_tb_scenario *tv_tb_hw_scenario(const struct tv_tb_hw *hw);
uint32_t tv_tb_hw_node(const struct tv_tb_hw *hw);
uint64_t tv_tb_hw_seed(const struct tv_tb_hw *hw);
/* The injector to wrap the device with, or NULL: no faults here. */
struct tv_flt *tv_tb_hw_flt(const struct tv_tb_hw *hw);
/* Channel failures are part of the run (faults, an injected disconnect). */
bool tv_tb_hw_recovering(const struct tv_tb_hw *hw);
/* Done (finish returned): disconnects are expected. */
bool tv_tb_hw_ending(const struct tv_tb_hw *hw);
/* The node name the device has, for the verdict line. */
void tv_tb_hw_set_device_name(struct tv_tb_hw *hw, const char *name);
__attribute__((format(printf, 3, 4)))
void tv_tb_hw_fail(struct tv_tb_hw *hw, enum tv_tb_fail_kind kind,
		   const char *fmt, ...);
/* --verbose: "[node K  1.234 s] ..." on stdout. */
__attribute__((format(printf, 2, 3)))
void tv_tb_hw_log(struct tv_tb_hw *hw, const char *fmt, ...);
/*
 * One turn of the loop: the workload's progress, the coordinator's, and
 * a sleep when neither had work.  0, or -EIO when progress failed
 * (reported).  Callers waiting on something of their own check
 * tv_tb_hw_expired() and tv_tb_hw_aborted() between turns.
 */
int tv_tb_hw_step(struct tv_tb_hw *hw);
/* The run's deadline passed (-ETIMEDOUT is theirs to report). */
bool tv_tb_hw_expired(const struct tv_tb_hw *hw);
/* Another node gave up: why, or NULL. */
const char *tv_tb_hw_aborted(const struct tv_tb_hw *hw);
/*
 * Turn the loop until cond(ctx, arg) holds: 0; or the deadline passed,
 * another node gave up, progress failed (reported as a hang or runner
 * failure naming what): a negative errno.
 */
int tv_tb_hw_wait(struct tv_tb_hw *hw, bool (*cond)(void *ctx, uint64_t arg),
		  void *ctx, uint64_t arg, const char *what);
/* Every node enters the barrier; 0 when all did, else as tv_tb_hw_wait. */
int tv_tb_hw_barrier(struct tv_tb_hw *hw, const char *what);
/*
 * Out-of-band set-up data, as MSCCL++'s bootstrap exchanges queue pair
 * numbers and memory handles: every node publishes len bytes (up to
 * 1 MiB) over the coordinator, and gets every node's, (*blobs_p)[n] of
 * (*lens_p)[n] bytes for node n (free each, then both arrays).  The
 * bytes are the peers': decode them as hostile.  0, or as tv_tb_hw_wait.
 */
int tv_tb_hw_allgather(struct tv_tb_hw *hw, const void *mine, size_t len,
		       uint8_t ***blobs_p, size_t **lens_p);

/*
 * This node's RDMA device (the one behind its address: rdma_cm finds it),
 * wrapped by the run's fault injector if any; cm stays open for the
 * workload.  -EINVAL / -ENODEV with msg naming the variable or address.
 */
struct tv_cm;
struct tv_tb_hw_device {
	struct tv_cm *cm;
	struct tv_vf_device *base;   /* the ibverbs device */
	struct tv_vf_device *dev;    /* what the engine uses (maybe wrapped) */
	char name[64];               /* the device's */
};
/* The device behind addr, unwrapped (benchmarks open two in a process). */
int tv_tb_open_device_at(const struct sockaddr_storage *addr, uint32_t node,
			 uint32_t nodes, struct tv_tb_hw_device *d,
			 char *msg, size_t cap);
int tv_tb_hw_open_device(struct tv_tb_hw *hw, struct tv_tb_hw_device *d,
			 char *msg, size_t cap);
/*
 * serve --record: a device the workload wrapped with tv_tb_hw_flt() gets
 * this node's tap (docs/recording.md); before any object is made on it.
 * 0 when the run does not record.
 */
int tv_tb_hw_tap_device(struct tv_tb_hw *hw, struct tv_vf_device *wrapped);
/*
 * A tap outside a run (benchmarks measuring what recording costs): the
 * verbs of devices wrapped by the fault layer, kept in memory from now,
 * written as recording event lines (docs/recording.md) after a header
 * line {"tensorverbs_bench_recording":1}.
 */
int tv_tb_tap_create(uint32_t nodes, struct tv_tb_tap **tap_p);
int tv_tb_tap_attach(struct tv_tb_tap *tap, uint32_t node,
		     struct tv_vf_device *wrapped);
int tv_tb_tap_write(struct tv_tb_tap *tap, const char *path,
		    size_t *events_p);
void tv_tb_tap_free(struct tv_tb_tap *tap);
/* close_base false: the device stays open (objects on it leaked). */
void tv_tb_hw_close_device(struct tv_tb_hw_device *d, bool close_base);

/* check_end's all[]: each statistic summed over the nodes that sent it. */
void tv_tb_hw_stats_sum(const uint64_t *const *all, uint32_t nodes,
			size_t nstats, uint64_t *sum);
/* t into times[0..n), sorted and distinct (room for one more): the new n. */
size_t tv_tb_times_add(uint64_t *times, size_t n, uint64_t t);
/* The sleep op's usual body: until a completion, an fd or until_ns. */
void tv_tb_hw_sleep_device(struct tv_vf_device *dev, uint64_t until_ns,
			   struct pollfd *extra, unsigned nextra);

/* ---- benchmarks -------------------------------------------------------------- */

struct tv_tb_bench {
	const char *name;            /* `tensorverbs bench NAME` */
	const char *about;
	/* argv[0] is NAME; returns the exit status. */
	int (*main)(int argc, char **argv, const char *argv0);
};

/*
 * A benchmark's processes across hosts (`bench NAME --node N`, or a rank
 * each under mpirun): barriers and an all-gather of set-up bytes over a
 * TCP star around node 0, on node 0's address and port (TCP's port
 * space, not rdma_cm's).  A wait turns the idle hook when one is set (a
 * proxy that must keep going), else sleeps on the sockets; it ends when
 * what it waits for is done and what this node owes the others is sent
 * (the caller may spin on RDMA next), with -ETIMEDOUT after timeout_ns,
 * or -ECANCELED when a peer aborted (tv_tb_peers_error() says why).  The all-gather's
 * bytes are the peers': decode them as hostile (free each blob, then
 * both arrays).
 */
/*
 * A QP endpoint in set-up bytes: TV_TB_EP_BYTES, little-endian (QPN, PSN,
 * LID, two zero bytes, GID).  Reading checks it: -EPROTO for a QPN or PSN
 * past 24 bits or non-zero padding (*ep_p untouched).
 */
#define TV_TB_EP_BYTES 28
void tv_tb_ep_put(uint8_t *p, const struct tv_vf_qp_endpoint *ep);
int tv_tb_ep_get(const uint8_t *p, struct tv_vf_qp_endpoint *ep_p);

struct tv_tb_peers;
int tv_tb_peers_open(uint32_t node, uint32_t nodes,
		     const struct sockaddr_storage *addr0, uint64_t fingerprint,
		     uint64_t timeout_ns, struct tv_tb_peers **peers_p,
		     char *msg, size_t cap);
void tv_tb_peers_close(struct tv_tb_peers *p);
void tv_tb_peers_set_idle(struct tv_tb_peers *p, void (*idle)(void *arg),
			  void *arg);
int tv_tb_peers_barrier(struct tv_tb_peers *p, const char *what);
int tv_tb_peers_allgather(struct tv_tb_peers *p, const void *mine, size_t len,
			  uint8_t ***blobs_p, size_t **lens_p);
/* One turn without waiting (for a loop of the caller's): 0, or
 * -ECANCELED when a peer aborted or its connection closed. */
int tv_tb_peers_poll(struct tv_tb_peers *p);
/* This node failed: the others stop waiting (they get -ECANCELED). */
void tv_tb_peers_abort(struct tv_tb_peers *p, const char *why);
const char *tv_tb_peers_error(const struct tv_tb_peers *p);
/*
 * Under mpirun, a benchmark's two nodes: node = rank, each rank's address
 * the IPv4 of its device's RoCE GID ($RDMA_DEVICE per rank) at port_base
 * + rank, gathered from every rank.  1 when not under mpirun (nothing
 * written); 0 with both written; a negative errno (printed, naming the
 * rank) when the world is not two ranks or a rank has no address.
 */
int tv_tb_mpi_bench_pair(const char *who, uint16_t port_base,
			 struct sockaddr_storage addr[2], uint32_t *node_p);

/* ---- the ops table ------------------------------------------------------------- */

/* Which lines tv_tb_run_print_summary() asks for. */
enum tv_tb_summary_part {
	TV_TB_SUMMARY_MAIN,          /* after "seed": world, transfers ... */
	TV_TB_SUMMARY_FAULTS,        /* after "faults": how it recovered */
};

struct tv_tb_workload_ops {
	const char *name;            /* the scenario's "workload" */
	const char *about;           /* one line, for listings */
	const char *unit;            /* an operation, plural: "transfers" */
	const char *last_op;         /* what ends its time: "recv" */

	/* -- the scenario: its keys (NULL-terminated) and their parser -- */
	const char *const *keys;
	const char *const *hw_keys;  /* of keys, those real verbs can run */
	int (*parse)(struct tv_ju *jc, json_t *root, struct tv_tb_scenario *sc,
		     void **wl_p);
	void (*scenario_free)(void *wl);

	/* -- a run on the simulator -- */
	/* Nodes, connections, operations scheduled; *state_p for the rest. */
	int (*setup)(struct tv_tb_run *run, void **state_p);
	void (*progress)(struct tv_tb_run *run, void *st, uint32_t node);
	/* Its checks of a simulator event (after the testbed's own). */
	void (*sim_event)(struct tv_tb_run *run, void *st,
			  const struct tv_sim_event *ev);
	void (*fault_fired)(struct tv_tb_run *run, void *st, const char *point,
			    uint64_t hit);
	/* node/crash: node's state dies with it; a restart; a lost node. */
	void (*node_crash)(struct tv_tb_run *run, void *st, uint32_t node);
	int (*node_restart)(struct tv_tb_run *run, void *st, uint32_t node);
	void (*node_lost)(struct tv_tb_run *run, void *st, uint32_t node);
	/* After the run: before and after the fault expectations. */
	void (*check)(struct tv_tb_run *run, void *st);
	void (*check_end)(struct tv_tb_run *run, void *st);
	/* Its nodes go; the simulator is still there (leaks are counted). */
	void (*teardown)(struct tv_tb_run *run, void *st);
	void (*state_free)(void *st);
	void (*summary)(const struct tv_tb_run *run, const void *st,
			enum tv_tb_summary_part part, FILE *out);

	/*
	 * -- faults: common points this workload cannot recover from, on
	 * top of those the catalogue says may fail (NULL-terminated; a
	 * connection error is routine for one protocol, fatal for another).
	 * A plan may arm common points and the workload's own (faults.h).
	 */
	const char *const *unrecoverable_points;

	/* -- deliberately broken variants (TV_BREAK), NULL-terminated -- */
	const char *const *breakages;

	/* -- swarm and shrink -- */
	int (*generate)(uint64_t seed, uint32_t without, json_t **sc_p);
	const struct tv_tb_shrink_edit *const *edits;
	size_t nedits;
	/* "12 transfers, 3 steps" of a candidate (the ops count is known). */
	void (*describe)(json_t *sc, uint64_t ops, char *buf, size_t cap);

	/* -- traces and drawings -- */
	const char *event_src;       /* "src" of its trace lines; NULL: name */
	void (*show_parse)(json_t *line, struct tv_tb_show_event *e);
	const struct tv_tb_draw *draw;

	/* -- built-ins -- */
	const char *demo;            /* a scenario, for `run` without a file */
	int (*bench_scenario)(json_t **sc_p); /* for `bench sim` */
	const struct tv_tb_bench *benches;
	size_t nbenches;

	/* -- real verbs (NULL: simulator only) -- */
	const struct tv_tb_hw_ops *hw;
};

/*
 * The end of a process a workload forked (a benchmark's second node):
 * _exit(status), after writing the child's coverage counters in a
 * coverage build (-DTV_COVERAGE=ON), which _exit would drop.
 */
__attribute__((noreturn)) void tv_tb_child_exit(int status);

#ifdef __cplusplus
}
#endif
#endif /* TENSORVERBS_WORKLOAD_H */
