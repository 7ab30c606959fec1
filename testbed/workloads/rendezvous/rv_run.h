/*
 * This file is private to the rendezvous workload: a run of its scenario
 * on the simulator, as its files share it.  run.c sets up one engine per
 * node, the channels and every send and recv, and checks the engines at
 * the end; recv.c checks what receives got; connect.c connects channels
 * (at set-up, late nodes, reconnects under faults); crash.c is what a
 * node/crash does to an engine; check.c holds the protocol's invariants
 * fed by the engines' and the simulator's events; trace.c records and
 * prints the engines' events.
 */
#ifndef TV_RV_RUN_H
#define TV_RV_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/faults.h>
#include <tensorverbs/workload.h>

#include "rv_check.h"
#include "rv_scenario.h"

/* Defaults when a scenario injects faults (docs/scenarios.md). */
#define RUN_FAULT_ACK_TIMEOUT_NS 10000000ull    /* 10 ms */
#define RUN_FAULT_RECV_TIMEOUT_NS 1000000000ull /* 1 s */

struct runner;

struct node_slot {
	struct runner *r;
	uint32_t id;
	struct tv_engine *engine;  /* NULL while the node is down */
	uint32_t epoch;            /* crashes so far: which engine this is */
	/* Counters of the engines it had before (gauges left out). */
	struct tv_engine_stats past;
	/* tv_engine_destroy said -EBUSY at a crash: tried again at teardown. */
	struct tv_engine *zombie;
};

/* What a send actually published, recorded when it ran. */
struct pub {
	bool done;
	bool is_error;
	bool refused;              /* the engine refused it (faults) */
	bool skipped;              /* its node was down: never published */
	uint32_t epoch;            /* the sender's epoch when published */
	enum tv_dtype dtype;
	struct tv_shape shape;
	bool dead;
	uint64_t digest;
};

struct send_slot {
	struct runner *r;
	size_t idx;
	struct pub pub;
};

struct recv_slot {
	struct runner *r;
	size_t idx;
	unsigned calls;            /* done callback invocations */
	bool started;
	bool refused;              /* tv_engine_recv_async failed (faults) */
	bool skipped;              /* its node was down: never issued */
	bool crashed;              /* its node crashed while it was live */
	uint64_t errors_at_start;  /* channel errors on its channel then */
	uint64_t errors_at_done;
	enum tv_code code;         /* of the first call */
	char *message;             /* of the first call, if it failed */
};

/* A pair of nodes whose channels connect after set-up (late_nodes). */
struct late_pair {
	struct runner *r;
	uint32_t a;
	uint32_t b;
};

struct runner {
	struct tv_tb_run *run;
	const struct scenario *sc;
	uint64_t seed;
	uint32_t test_breakage;    /* TV_BREAK_* for every engine */
	struct node_slot *nodes;
	struct send_slot *sends;
	struct recv_slot *recvs;
	bool *pairs;               /* [a * nodes + b]: a channel a <-> b */
	bool *connected;           /* [a * nodes + b]: connected at least once */
	/*
	 * [a * nodes + b]: a's channel to b was connected since it was made
	 * (a fresh one, made at a restart, is connected without a reset).
	 */
	bool *joined;
	struct late_pair *late;
	size_t nlate;
	struct checker chk;
	bool chk_ready;
	bool faulty;               /* the scenario has a plan */
	uint32_t max_retries;      /* as configured in every engine */
	uint64_t ack_timeout_ns;   /* as configured */
	uint64_t recv_timeout_ns;  /* as configured; 0: no deadline */
	uint64_t reconnect_failures;
	/* for the summary (and the checker's own counters) */
	struct tv_engine_stats total; /* summed over every node */
	uint64_t crash_cancelled;  /* receives cancelled by their node's crash */
};

/* run.c: the workload's run ops (workload.h), and an engine for a node */
int rv_setup(struct tv_tb_run *run, void **state_p);
void rv_progress(struct tv_tb_run *run, void *st, uint32_t node);
void rv_sim_event(struct tv_tb_run *run, void *st,
		  const struct tv_sim_event *ev);
void rv_check(struct tv_tb_run *run, void *st);
void rv_check_end(struct tv_tb_run *run, void *st);
void rv_teardown(struct tv_tb_run *run, void *st);
void rv_state_free(void *st);
int runner_node_engine(struct runner *r, struct node_slot *ns);
void runner_add_stats(struct tv_engine_stats *sum,
		      const struct tv_engine_stats *st);

/*
 * recv.c.  The verdicts on a receive, shared by the simulator's runner
 * and serve's (hw.c), so that both say the same words: each returns true
 * with what is wrong in why (without the receive's name), false when all
 * holds.  rv_error_unexpected: an error status the expectation refuses;
 * rv_meta_wrong: a tensor's dtype, deadness or shape against the given
 * ones (what: "expected", "the sender published"); rv_placement_wrong:
 * memory of another kind than the receive asked for; rv_expect_wrong: the
 * scenario's own checks of a tensor whose bytes digest to digest.
 */
void runner_recv_cb(void *arg);
bool rv_error_unexpected(const struct sc_expect *ex, const struct tv_status *st,
			 char *why, size_t cap);
bool rv_meta_wrong(struct tv_tensor *t, enum tv_dtype dtype,
		   const struct tv_shape *shape, bool dead, const char *what,
		   char *why, size_t cap);
bool rv_placement_wrong(struct tv_tensor *t, enum tv_dtype dtype, bool dead,
			enum tv_placement place, char *why, size_t cap);
bool rv_expect_wrong(const struct sc_recv *rv, struct tv_tensor *t,
		     uint64_t digest, uint64_t run_seed, char *why, size_t cap);
void runner_check_recvs(struct runner *r);

/* connect.c */
int connect_all(struct runner *r);
void rv_fault_fired(struct tv_tb_run *run, void *st, const char *point,
		    uint64_t hit);
void runner_engine_faults(struct runner *r, struct node_slot *ns,
			  struct tv_engine_config *cfg);
int runner_connect_pair(struct runner *r, uint32_t a, uint32_t b);
int runner_schedule_late(struct runner *r);

/* crash.c: the workload's node_crash, node_restart and node_lost ops. */
void rv_node_crash(struct tv_tb_run *run, void *st, uint32_t node);
int rv_node_restart(struct tv_tb_run *run, void *st, uint32_t node);
void rv_node_lost(struct tv_tb_run *run, void *st, uint32_t node);
void runner_crash_teardown(struct runner *r);
void runner_check_crashes(struct runner *r);

/* trace.c: an engine event as a trace line; its kind's name, or NULL. */
void rv_trace_engine_event(struct tv_tb_run *run,
			   const struct tv_engine_event *ev);
const char *rv_engine_event_name(enum tv_engine_event_kind k);

#endif /* TV_RV_RUN_H */
