/*
 * tensorverbs — the testbed: scenarios, deterministic runs with every
 * invariant checked, traces and their replay, drawings, swarms and
 * shrinking, for any protocol that plugs in as a workload (workload.h).
 *
 * A program that tests with it:
 *
 *	struct tv_tb_scenario *sc;
 *	struct tv_tb_run *run;
 *	char err[TV_TB_ERR_MAX];
 *
 *	tv_tb_scenario_load_file("scenarios/basic_transfer.json", &sc, err);
 *	tv_tb_run_opts_init(&opts, sc);       (seed: the scenario's)
 *	tv_tb_run(sc, &opts, &run);           (0: it ran; checks may fail)
 *	tv_tb_run_result(run)->failures ...   (0: every invariant held)
 *	tv_tb_run_free(run);
 *	tv_tb_scenario_free(sc);
 *
 * Everything runs on the deterministic simulator (sim.h): the same
 * scenario, seed and fault plan give the same run, event for event.
 * Functions return 0 or a negative errno; output parameters come last and
 * are written only on success.  docs/testbed.md has the whole picture.
 */
#ifndef TENSORVERBS_TESTBED_H
#define TENSORVERBS_TESTBED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include <jansson.h>

#include <tensorverbs/sim.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tv_tb_workload_ops;
struct tv_tb_scenario;
struct tv_tb_run;

/* Error messages: JSON path first ("$.steps[2].sends[0].shape[1]: ..."). */
#define TV_TB_ERR_MAX 512

/* ---- failures ---------------------------------------------------------- */

/*
 * What a failure is about.  Shrinking keeps a reduced run only while it
 * fails the same way, so every failure says which kind of invariant (or
 * expectation) it broke.
 */
enum tv_tb_fail_kind {
	TV_TB_FK_RUNNER = 0, /* the run could not be set up or driven */
	TV_TB_FK_EXPECT,     /* a scenario expectation (expect, expect_stats) */
	TV_TB_FK_DATA,       /* data not intact: wrong bytes, dtype, shape */
	TV_TB_FK_CALLBACK,   /* a completion callback broke its contract */
	TV_TB_FK_HANG,       /* never completed, not quiescent */
	TV_TB_FK_IN_FLIGHT,  /* more in flight than the protocol allows */
	TV_TB_FK_WRITE,      /* a write outside advertised/registered memory */
	TV_TB_FK_ERROR,      /* an error completion or channel error not allowed */
	TV_TB_FK_LEAK,       /* something left at quiescence or at teardown */
	TV_TB_FK_OUTCOME,    /* an operation failed without a cause allowing it */
	TV_TB_FK_CRASH,      /* the run died (swarm and shrink workers only) */
	TV_TB_FK_COUNT
};

const char *tv_tb_fail_kind_name(enum tv_tb_fail_kind kind);
/* -EINVAL for an unknown name. */
int tv_tb_fail_kind_from_name(const char *name, enum tv_tb_fail_kind *kind_p);

#define TV_TB_FAILURES_KEPT 40

/* Every failure is counted; the first TV_TB_FAILURES_KEPT keep their text. */
struct tv_tb_failures {
	char *msgs[TV_TB_FAILURES_KEPT];
	enum tv_tb_fail_kind msg_kinds[TV_TB_FAILURES_KEPT];
	size_t count;
	uint32_t kinds;              /* bit (1 << kind) for every kind seen */
	enum tv_tb_fail_kind first;  /* kind of the first failure */
};

/* "FAIL: <text>" a line each, then "... and N more". */
void tv_tb_failures_print(const struct tv_tb_failures *f, FILE *out);

/* ---- scenarios --------------------------------------------------------- */

/*
 * A scenario is a JSON object (docs/scenarios.md): the core keys every
 * workload shares (name, seed, nodes, links, sim, faults, late nodes ...)
 * and the keys of its workload ("workload": "rendezvous" when absent).
 * Parsing is strict: an unknown key, a value out of range or an
 * inconsistency is refused with its JSON path in err.
 */
int tv_tb_scenario_load_file(const char *path, struct tv_tb_scenario **sc_p,
			     char err[TV_TB_ERR_MAX]);
int tv_tb_scenario_load_string(const char *text, const char *origin,
			       struct tv_tb_scenario **sc_p,
			       char err[TV_TB_ERR_MAX]);
/* root is borrowed (the scenario keeps a reference for traces). */
int tv_tb_scenario_from_json(json_t *root, const char *origin,
			     struct tv_tb_scenario **sc_p,
			     char err[TV_TB_ERR_MAX]);
void tv_tb_scenario_free(struct tv_tb_scenario *sc);

const char *tv_tb_scenario_name(const struct tv_tb_scenario *sc);
/* The file it came from, or the label it was given. */
const char *tv_tb_scenario_origin(const struct tv_tb_scenario *sc);
uint64_t tv_tb_scenario_seed(const struct tv_tb_scenario *sc);
uint32_t tv_tb_scenario_nodes(const struct tv_tb_scenario *sc);
/* The workload's operations (rendezvous: receives). */
uint64_t tv_tb_scenario_ops(const struct tv_tb_scenario *sc);
const struct tv_tb_workload_ops *
tv_tb_scenario_workload(const struct tv_tb_scenario *sc);
/* The JSON it was parsed from (borrowed). */
json_t *tv_tb_scenario_json(const struct tv_tb_scenario *sc);

/* The fault plan (docs/faults.md): a JSON array of rules, or NULL. */
bool tv_tb_scenario_has_faults(const struct tv_tb_scenario *sc);
json_t *tv_tb_scenario_faults(const struct tv_tb_scenario *sc);
/*
 * Replace the plan (replace = true; plan NULL: none) or extend it: a rule
 * for a point the plan already has replaces that rule.  plan is borrowed.
 */
int tv_tb_scenario_set_faults(struct tv_tb_scenario *sc, json_t *plan,
			      bool replace);

/* ---- fault plans --------------------------------------------------------- */

#define TV_TB_PLAN_ERR_MAX 256

/*
 * text: a JSON array of rules, or "point[:key=value,...][;point...]".
 * *plan_p: a new JSON array, validated by the fault layer, one rule a
 * point.  -EINVAL: err says why, naming the point or the value.
 */
int tv_tb_plan_from_text(const char *text, json_t **plan_p, char *err,
			 size_t err_bytes);
int tv_tb_plan_validate(json_t *plan, char *err, size_t err_bytes);
/* May a run fail (not just recover) once this point fired? */
bool tv_tb_point_may_fail(const char *point);

/* ---- runs ---------------------------------------------------------------- */

/*
 * An invariant of the caller's own, checked on every run it is given to:
 * sim_event sees every simulator event as it happens (after the testbed's
 * own checks of it), at_end runs once the world went quiet, before
 * teardown.  Either may be NULL; a violation is reported with tv_tb_fail().
 */
struct tv_tb_invariant {
	const char *name;
	void *ctx;
	void (*sim_event)(void *ctx, struct tv_tb_run *run,
			  const struct tv_sim_event *ev);
	void (*at_end)(void *ctx, struct tv_tb_run *run);
};

struct tv_tb_trace;

struct tv_tb_run_opts {
	uint64_t seed;
	bool verbose;                /* print every event on stdout */
	struct tv_tb_trace *trace;   /* record every event, or NULL */
	/*
	 * TV_BREAK: a workload's deliberately broken variant, for the tests
	 * of the test tools (swarm, shrink) only.  NULL: none.
	 */
	const char *breakage;
	const struct tv_tb_invariant *invariants;
	size_t ninvariants;
	/*
	 * Record what every node's verbs facade was asked and answered
	 * (tv_tb_record_create), or NULL.  The devices get the fault wrapper
	 * even without a plan: its tap is what records.
	 */
	struct tv_tb_tap *tap;
	/*
	 * May node's scenario operation due at at_ns start now, waited_ns
	 * after it was due?  NULL: always.  A false answer asks again a
	 * microsecond later (virtual time).  replay --sim starts each
	 * operation where the recording's node started it, among its verbs
	 * events (tv_tb_run_schedule_op()).
	 */
	bool (*op_gate)(void *ctx, uint32_t node, uint64_t at_ns,
			uint64_t waited_ns);
	void *op_gate_ctx;
};

/* seed: the scenario's; everything else off. */
void tv_tb_run_opts_init(struct tv_tb_run_opts *opts,
			 const struct tv_tb_scenario *sc);

/* Fault points a result counts firings of (tv_flt_points() order). */
#define TV_TB_MAX_POINTS 32

struct tv_tb_result {
	uint64_t seed;
	size_t failures;             /* 0: every invariant held */
	uint64_t event_hash;         /* the simulator's hash of every event */
	uint64_t sim_events;
	uint64_t virtual_ns;         /* the clock when the world went quiet */
	uint64_t last_op_ns;         /* the workload's last operation's end */
	uint64_t wall_ns;            /* of the simulator's run loop only */
	/* The workload's operations (rendezvous: receives). */
	uint64_t ops;
	uint64_t ops_ok;
	uint64_t ops_failed;         /* completed with an error status */
	uint64_t bytes;              /* payload of the operations that were ok */
	uint64_t refused;            /* operations refused under faults */
	/* faults */
	uint64_t fault_fires;
	uint64_t point_fires[TV_TB_MAX_POINTS];
	uint64_t point_first_hit[TV_TB_MAX_POINTS]; /* hit of the first firing */
	uint64_t point_last_hit[TV_TB_MAX_POINTS];  /* ... and of the last */
	/* node/crash */
	uint64_t crashes;
	uint64_t restarts;
	uint64_t restart_failures;
	uint64_t skipped_ops;        /* operations of a node that was down */
	/* silent data corruption (docs/faults.md, "Corruption") */
	bool validated;              /* the workload checks data in flight */
	uint64_t corrupt_fires;      /* corruption points that fired */
	uint64_t corrupt_detected;   /* caught: a checksum, a decoder */
	uint64_t corrupt_undetected; /* delivered as ok with flipped bytes */
};

/*
 * Runs sc on the simulator with every invariant checked.  0: the run
 * happened (its result says whether it passed; free it); a negative errno
 * when it could not even be attempted (-ENOMEM, -EINVAL for an unknown
 * breakage).
 */
int tv_tb_run(const struct tv_tb_scenario *sc,
	      const struct tv_tb_run_opts *opts, struct tv_tb_run **run_p);
const struct tv_tb_result *tv_tb_run_result(const struct tv_tb_run *run);
const struct tv_tb_failures *tv_tb_run_failures(const struct tv_tb_run *run);
/*
 * The run's outcome class: "FAIL" (an invariant or expectation broke),
 * "CORRUPTED" (corrupted bytes were delivered as ok and the scenario did
 * not expect it: the corruption went undetected), or "PASS".
 */
const char *tv_tb_run_outcome(const struct tv_tb_run *run);
/* Corruption points that fired so far in this run (for workloads). */
uint64_t tv_tb_run_corrupt_fires(const struct tv_tb_run *run);
/* The summary `tensorverbs run` prints (scenario, world, faults, time). */
void tv_tb_run_print_summary(const struct tv_tb_run *run, FILE *out);
void tv_tb_run_free(struct tv_tb_run *run);

/* For invariants (and workloads): the run as it goes. */
__attribute__((format(printf, 3, 4)))
void tv_tb_fail(struct tv_tb_run *run, enum tv_tb_fail_kind kind,
		const char *fmt, ...);
const struct tv_tb_scenario *tv_tb_run_scenario(const struct tv_tb_run *run);
uint64_t tv_tb_run_now_ns(const struct tv_tb_run *run);
uint64_t tv_tb_run_seed(const struct tv_tb_run *run);

/* Checks a TV_BREAK name against every workload; -EINVAL if none has it. */
int tv_tb_breakage_check(const char *name);
/* "a, b" of every workload's breakage names, for error messages. */
void tv_tb_breakage_names(char *buf, size_t cap);

/* ---- traces ------------------------------------------------------------ */

/*
 * A trace is JSON Lines (docs/trace.md): a header (seed, the scenario as
 * parsed, the fault plan, the build), one line per event in execution
 * order, and a summary.  scenario_file: the path to name in the header
 * (NULL for a built-in scenario).
 */
int tv_tb_trace_create(const char *path, const struct tv_tb_scenario *sc,
		       const char *scenario_file, uint64_t seed,
		       const char *breakage, struct tv_tb_trace **trace_p);
/*
 * Writes the summary of run (NULL: a run that could not be attempted) and
 * closes the file.  Returns the first error the trace met, if any.
 */
int tv_tb_trace_finish(struct tv_tb_trace *trace, const struct tv_tb_run *run);

/*
 * Recordings (docs/recording.md): a trace file of the verbs every node
 * posted and polled, with the fault firings and the outcome, made on the
 * simulator or on real verbs (backend: "sim", "ibverbs"), that
 * `replay --sim` runs again in the simulator.  Create before the run (pass
 * it in tv_tb_run_opts.tap), finish after it: writes the file and frees.
 */
struct tv_tb_tap;
int tv_tb_record_create(const char *path, const struct tv_tb_scenario *sc,
			const char *scenario_file, uint64_t seed,
			const char *backend, struct tv_tb_tap **tap_p);
int tv_tb_record_finish(struct tv_tb_tap *tap, const struct tv_tb_result *res,
			const struct tv_tb_failures *fails);
/*
 * The recordings of one run's processes (serve --record, one per node)
 * as one recording of the whole run, its events in time order (one
 * host's monotonic clock, or wall time across hosts).  err says which
 * input is wrong.
 */
int tv_tb_record_merge(const char *out, const char *const *paths, size_t n,
		       char *err, size_t cap);

/* "0.1.0+v0.1-12-gabcdef-dirty": version and git describe at build. */
const char *tv_tb_build_id(void);

enum tv_tb_replay_state {
	TV_TB_REPLAY_SAME = 0,
	TV_TB_REPLAY_DIVERGED,
	TV_TB_REPLAY_MALFORMED,
};

struct tv_tb_replay_report {
	enum tv_tb_replay_state state;
	uint64_t events;            /* events identical before the end/divergence */
	uint64_t line;              /* the trace's line of the divergence */
	bool summary_only;          /* every event identical, the summary not */
	char diff[256];             /* the keys that differ: "len, kind" */
	char *previous;             /* the last line both agree on, or NULL */
	char *expected;             /* the recorded line, NULL: none */
	char *actual;               /* the new line, NULL: none */
	char result[8];             /* the recorded result, "" if unknown */
	char build_warning[192];    /* made by another build, or "" */
	char err[1024];             /* MALFORMED: why */
};

/*
 * Runs the trace's scenario again with its seed, plan and breakage, and
 * compares every event.  0 and the report (free it) whatever the state;
 * a negative errno when the file cannot be read at all (err in report).
 */
int tv_tb_replay(const char *path, struct tv_tb_replay_report *rep_p);
void tv_tb_replay_report_free(struct tv_tb_replay_report *rep);

/*
 * replay --sim (docs/recording.md): a recording's scenario run in the
 * simulator with its seed and faults, every CQ handing out its
 * completions in the recorded order; then every node's verbs and the
 * outcome compared with the recording.
 */
struct tv_tb_replay_sim_report {
	char backend[16];           /* where it was recorded */
	uint64_t events;            /* recorded event lines */
	uint64_t sim_events;        /* the simulator's, as its taps saw them */
	bool diverged;
	uint64_t div_index;         /* the recorded event's "i" (or events) */
	uint32_t div_node;
	int64_t div_qp;             /* its QP's index, -1: the node's own */
	bool div_polls;             /* among the QP's completions, else posts */
	uint64_t div_k;             /* its rank among that QP's events */
	char *expected;             /* the recorded line, NULL: none */
	char *actual;               /* what the simulator did, NULL: nothing */
	size_t held;                /* completions still held at the end */
	size_t gave_up;             /* QPs that stopped following (diverged) */
	bool same_outcome;          /* result, ops, ok and failed agree */
	bool same_failure_kind;     /* both failed; the simulator's first
				     * failure's kind is one the recording has */
	uint64_t fires;             /* fault firings recorded ... */
	uint64_t fires_same;        /* ... and fired again: node, point, hit */
	uint64_t ops_places;        /* recorded time points (STEP lines) */
	uint64_t ops_waited;        /* operations held back to their place */
	uint64_t ops_forced;        /* ... started after waiting the most */
#define TV_TB_REPLAY_GATE_MAX_NS (5ull * 1000 * 1000) /* the most (virtual) */
	char rec_result[8], sim_result[8];
	char rec_summary[96], sim_summary[96];
#define TV_TB_REPLAY_SIM_FAILS 3
	char sim_failures[TV_TB_REPLAY_SIM_FAILS][256]; /* the first, or "" */
	char err[1024];             /* when it returns an error: why */
};

/* 0 and the report (free it), or a negative errno with err set. */
int tv_tb_replay_sim(const char *path, struct tv_tb_replay_sim_report *rep);
void tv_tb_replay_sim_report_free(struct tv_tb_replay_sim_report *rep);

/* Drawings of a trace: an SVG sequence diagram, a Chrome/Perfetto trace. */
struct tv_tb_show_opts {
	const char *svg_path;       /* or NULL */
	const char *chrome_path;    /* or NULL */
	uint64_t first;             /* only events with these trace indices */
	uint64_t last;
	size_t max_rows;            /* SVG rows at most */
};

int tv_tb_show(const char *trace_path, const struct tv_tb_show_opts *o,
	       char *err, size_t err_bytes);

/* ---- swarm and shrink -------------------------------------------------- */

#define TV_TB_SWARM_KEEP 16

struct tv_tb_swarm_opts {
	uint64_t seeds;             /* seeds first .. first + seeds - 1 */
	uint64_t first;
	unsigned jobs;              /* worker processes */
	const char *out_dir;        /* a failing seed's scenario and trace */
	bool keep_going;            /* do not stop at the first violation */
	const char *breakage;       /* TV_BREAK, or NULL */
	uint32_t without;           /* fault points never armed (bit a point) */
	const char *workload;       /* only this workload's scenarios; NULL: all */
	const char *argv0;          /* how the reproduce command names us */
	FILE *progress;             /* progress lines, or NULL */
};

struct tv_tb_swarm_failure {
	uint64_t seed;
	enum tv_tb_fail_kind first;
	uint64_t failures;
	char msg[512];
	char file[4096];            /* written: scenario and plan */
	char trace[4096];           /* written: its trace */
	int rerun_status;           /* exit status of its rerun (1: reproduced) */
	bool written;
};

enum { TV_TB_CORRUPT_SEEDS, TV_TB_CORRUPT_FIRED, TV_TB_CORRUPT_DETECTED,
       TV_TB_CORRUPT_UNDETECTED, TV_TB_CORRUPT_N };

struct tv_tb_swarm_report {
	uint64_t done;
	uint64_t ops;
	uint64_t events;
	uint64_t no_faults;         /* seeds without any fault */
	uint64_t bad_no_faults;
	uint64_t violations;
	uint64_t on[TV_TB_MAX_POINTS];    /* seeds with the point armed */
	uint64_t fires[TV_TB_MAX_POINTS];
	uint64_t bad[TV_TB_MAX_POINTS];   /* ... that failed */
	/*
	 * Corruption (docs/faults.md): by configuration, [0] validation off,
	 * [1] on; each: seeds where a corruption fired, corruptions fired,
	 * detected (a checksum, the decoder), undetected (delivered as ok).
	 */
	uint64_t corrupt[2][TV_TB_CORRUPT_N];
	struct tv_tb_swarm_failure fail[TV_TB_SWARM_KEEP]; /* smallest seeds */
	size_t nfail;
	double secs;
};

/* "vf/write/dup,sim/deliver/delay" -> bits; -EINVAL naming the culprit. */
int tv_tb_swarm_points(const char *list, uint32_t *bits_p, char *err,
		       size_t err_bytes);
/* ---- MPI (docs/multihost.md) ------------------------------------------------ */

/*
 * Under mpirun (Open MPI's environment): MPI_Init, and the rank and size
 * the rest asks for; otherwise nothing.  A build without MPI started by
 * mpirun refuses (-ENOTSUP, printed) rather than run the whole job once
 * per rank.  tv_tb_swarm() splits its seeds over the ranks; every rank
 * gets the combined report.
 */
int tv_tb_mpi_init(int *argc, char ***argv);
void tv_tb_mpi_finalize(void);
/* Launched by mpirun and initialised: true, with rank and size. */
bool tv_tb_mpi_world(uint32_t *rank_p, uint32_t *size_p);
/*
 * Every rank's address for serve (docs/multihost.md): mine in, all of
 * them out (all[r] is rank r's), with MPI_Allgather.  -ENOTSUP without
 * MPI.
 */
int tv_tb_mpi_allgather_addr(const struct sockaddr_storage *mine,
			     struct sockaddr_storage *all);
/*
 * Under mpirun: every rank's address (all[r], size entries), the IPv4 of
 * its RDMA device's RoCE GID ($RDMA_DEVICE per rank: mpirun -x) at
 * port_base + r, gathered with MPI.  Every rank takes part; one without
 * an address says so on stderr (who: the command) and all get -ENODEV.
 * -ENOTSUP without MPI or without libibverbs.
 */
int tv_tb_mpi_addrs(const char *who, uint16_t port_base,
		    struct sockaddr_storage *all);
/* The worst of the ranks' exit statuses (every rank gets it). */
int tv_tb_mpi_worst(int status);
/*
 * This host's RDMA device ($RDMA_DEVICE, else the first with one): the
 * IPv4 address of its RoCE GID, with port.  -ENODEV (msg says why).
 * Only in builds with libibverbs.
 */
int tv_tb_hw_device_addr(uint16_t port, struct sockaddr_storage *ss_p,
			 char *msg, size_t cap);

/* ---- validate: does RDMA work here, for every protocol? (docs/validate.md) -- */

struct tv_tb_validate_opts {
	const char *out_dir;          /* report.json, report.html, logs/ */
	/* NULL-terminated; the first holds basic_transfer.json and gather/ */
	const char *const *scenario_dirs;
	const char *self;             /* this program (serve, bench) */
	uint32_t timeout_s;           /* per scenario process */
	bool bench;                   /* the benchmarks, if perftest is there */
	FILE *progress;               /* a line per check, or NULL */
};

struct tv_tb_validation;

/*
 * The devices and what each protocol needs of them, the RDMA_* variables,
 * every scenario of the folders as one process per node on the devices,
 * the fault scenarios real verbs can run, the benchmarks beside perftest.
 * Children are killed on a timeout, a failure and Ctrl-C.  0 (the checks
 * say how it went) or -errno; only in builds with libibverbs.
 */
int tv_tb_validate(const struct tv_tb_validate_opts *o,
		   struct tv_tb_validation **v_p);
/* report.json and report.html in out_dir (and the JSON to json_copy). */
int tv_tb_validation_write(const struct tv_tb_validation *v,
			   const char *json_copy);
int tv_tb_validation_junit(const struct tv_tb_validation *v, const char *path);
size_t tv_tb_validation_failed(const struct tv_tb_validation *v);
void tv_tb_validation_free(struct tv_tb_validation *v);

/* ---- results for CI systems (docs/results.md) ---------------------------- */

/*
 * A run's result as JSON ("tensorverbs_result": 1, "kind": "run"):
 * scenario, workload, seed, passed, the event hash, operations, faults
 * fired, failures (kind and message), and reproduce (the command, or
 * NULL).  NULL on -ENOMEM.
 */
json_t *tv_tb_run_result_json(const struct tv_tb_run *run,
			      const char *reproduce);
/* A swarm's ("kind": "swarm"): seeds, violations, the fault table, failures. */
json_t *tv_tb_swarm_result_json(const struct tv_tb_swarm_opts *opts,
				const struct tv_tb_swarm_report *rep);
/* o to path, indented, keys sorted (consumes nothing): 0 or -errno. */
int tv_tb_json_write(const char *path, json_t *o);

/* One JUnit test case: failure NULL and skipped NULL for a pass. */
struct tv_tb_junit_case {
	const char *classname;       /* "tensorverbs.run", "tensorverbs.swarm" */
	const char *name;
	double time_s;
	const char *failure;         /* the message attribute, or NULL */
	const char *type;            /* the failure's type, e.g. "hang" */
	const char *text;            /* its body: what failed, the reproducer */
	const char *skipped;         /* why it was skipped, or NULL */
};

/* JUnit XML (testsuites/testsuite/testcase/failure) to path: 0 or -errno. */
int tv_tb_junit_write(const char *path, const char *suite,
		      const struct tv_tb_junit_case *cases, size_t n);
/*
 * Seed s draws a workload's scenario and a fault mix and runs it checked,
 * in opts->jobs forked workers.  The failures (the smallest one, every one
 * kept with keep_going) are written to out_dir.
 */
int tv_tb_swarm(const struct tv_tb_swarm_opts *opts,
		struct tv_tb_swarm_report *rep_p);
/* The scenario seed s draws (with "faults" and "seed": run alone it is s). */
int tv_tb_swarm_generate(uint64_t seed, uint32_t without, const char *workload,
			 json_t **sc_p);

struct tv_tb_shrink_opts {
	uint64_t max_runs;          /* stop after this many runs */
	bool has_seed;
	uint64_t seed;              /* else the trace's, or the file's "seed" */
	bool has_kind;
	enum tv_tb_fail_kind kind;  /* else the first failure's */
	const char *breakage;       /* TV_BREAK, or NULL (a trace may say) */
};

struct tv_tb_shrink_report {
	char before[256];
	char after[256];
	char first_msg[512];        /* the original's first failure */
	char msg[512];              /* the minimal one's */
	enum tv_tb_fail_kind kind;
	uint64_t seed;
	char breakage[32];          /* "" if none */
	uint64_t runs;
	bool budget_reached;
	uint64_t ops;
	uint64_t sim_events;
	const char *unit;           /* what an operation is called */
	double secs;
};

/*
 * Reduces a failing scenario (with its plan) or trace while it fails with
 * the same kind of violation, and writes the minimal one to out.  -EINVAL:
 * err says why (it does not fail, it is not a scenario ...).
 */
int tv_tb_shrink(const char *in, const char *out,
		 const struct tv_tb_shrink_opts *opts,
		 struct tv_tb_shrink_report *rep_p, char *err,
		 size_t err_bytes);

/* ---- real verbs: one scenario node per process ------------------------------ */

#define TV_TB_MAX_NODES 256

/*
 * `tensorverbs serve`: node `node` of a scenario as this process, on the
 * RDMA device that holds its address (rdma_cm finds it; RDMA_DEVICE and
 * the other RDMA_* variables apply).  Every node of the scenario is one
 * such process, each given every node's address; node 0 also runs the
 * step coordinator (TCP, on its own address and port number).
 */
struct tv_tb_serve_opts {
	const char *scenario_path;
	uint32_t node;
	struct sockaddr_storage addrs[TV_TB_MAX_NODES];
	bool have_addr[TV_TB_MAX_NODES];
	bool has_seed;
	uint64_t seed;               /* else the scenario's */
	uint32_t timeout_s;          /* the whole run */
	uint32_t connect_attempts;   /* 0: the connection manager's default */
	uint32_t retry_delay_ms;
	bool reconnect;              /* failed connections are made again */
	uint64_t ack_timeout_ms;     /* 0: the scenario's, else the engine's */
	uint64_t inject_disconnect_step; /* tests: drop connections then */
	const char *faults;          /* --faults text, added to the plan */
	int64_t faults_node;         /* only that node arms it; < 0: all */
	bool fiu_ctrl;               /* libfiu's remote control (fiu-ctrl) */
	bool verbose;
	/*
	 * A recording of this node, or NULL.  Under mpirun every rank
	 * records and rank 0 gathers them into this one file.
	 */
	const char *record_path;
};

/* Exit statuses of tv_tb_serve (as automake and ctest count a skip). */
enum {
	TV_TB_SERVE_PASS = 0,
	TV_TB_SERVE_FAIL = 1,
	TV_TB_SERVE_USAGE = 2,       /* bad scenario, options or RDMA_* */
	TV_TB_SERVE_SKIP = 77,       /* the scenario cannot run on hardware */
};

void tv_tb_serve_opts_init(struct tv_tb_serve_opts *o);
/* Runs this process's node; prints its verdict; returns an exit status. */
int tv_tb_serve(const struct tv_tb_serve_opts *o);
/* "J=ADDR:PORT" (ADDR an IPv4 or IPv6 address); -EINVAL if malformed. */
int tv_tb_parse_peer(const char *text, uint32_t *node_p,
		     struct sockaddr_storage *addr_p);

/* ---- workloads ----------------------------------------------------------- */

/* Every workload this build knows, the built-in ones first. */
const struct tv_tb_workload_ops *const *tv_tb_workloads(size_t *n_p);
const struct tv_tb_workload_ops *tv_tb_workload_find(const char *name);
const char *tv_tb_workload_name(const struct tv_tb_workload_ops *ops);
/* What a scenario without a "workload" key runs: "rendezvous". */
const struct tv_tb_workload_ops *tv_tb_workload_default(void);
/*
 * A workload of the caller's own (workload.h), known from now on to
 * scenarios, swarms and traces.  -EEXIST: the name is taken.
 */
int tv_tb_workload_register(const struct tv_tb_workload_ops *ops);

/* ---- small helpers ------------------------------------------------------- */

/* A strict unsigned number: decimal or 0x hex, nothing after; -EINVAL. */
int tv_tb_parse_u64(const char *s, uint64_t *v_p);
/* "4.0 KiB", "12.345 us", "1.25 M" (a rate, before its unit). */
void tv_tb_fmt_bytes(double bytes, char *buf, size_t cap);
void tv_tb_fmt_ns(double ns, char *buf, size_t cap);
void tv_tb_fmt_rate(double per_sec, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* TENSORVERBS_TESTBED_H */
