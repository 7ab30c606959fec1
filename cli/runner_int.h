/*
 * This file is private to the tensorverbs CLI: what the runner's files
 * share (runner.c builds and runs the world, runner_recv.c checks what
 * receives got, runner_faults.c injects faults and reconnects).
 */
#ifndef TV_CLI_RUNNER_INT_H
#define TV_CLI_RUNNER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/faults.h>

#include "runner.h"

/* Defaults when a scenario injects faults (docs/scenarios.md). */
#define RUN_FAULT_ACK_TIMEOUT_NS 10000000ull    /* 10 ms */
#define RUN_FAULT_RECV_TIMEOUT_NS 1000000000ull /* 1 s */

#define RUN_NO_NODE UINT32_MAX
/* node/crash without an arg: the node is back 2 ms later. */
#define RUN_CRASH_RESTART_NS 2000000ull

struct runner;

/* A node's life under node/crash (cli/runner_crash.c). */
enum node_state {
	NODE_UP = 0,
	NODE_DOWN,                 /* crashed; its restart is scheduled */
	NODE_DEAD,                 /* its restart failed (a fault): for good */
};

struct node_slot {
	struct runner *r;
	uint32_t id;
	struct tv_engine *engine;  /* NULL while the node is down */
	struct tv_vf_device *dev;  /* the fault wrapper, or NULL */
	enum node_state state;
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
	const struct scenario *sc;
	const struct run_opts *opts;
	struct failures *fails;
	struct tv_sim *sim;
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
	bool tearing_down;         /* engine destroy cancels what is left */
	struct run_result res;
	/* faults */
	struct tv_flt *flt;
	bool faulty;               /* the scenario has a plan */
	uint32_t max_retries;      /* as configured in every engine */
	uint64_t ack_timeout_ns;   /* as configured */
	uint64_t recv_timeout_ns;  /* as configured; 0: no deadline */
	uint32_t actor;            /* node whose code runs now, for traces */
	uint64_t fires;            /* every firing so far */
	uint64_t unrecoverable_fires;
	uint64_t reconnect_failures;
};

/* runner.c */
void runner_fail_or_tolerate(struct runner *r, const char *what, int err);
/* ns's engine over its (wrapped) device: at set-up and at a restart. */
int runner_node_engine(struct runner *r, struct node_slot *ns);
void runner_add_stats(struct tv_engine_stats *sum,
		      const struct tv_engine_stats *st);

/* runner_recv.c */
void runner_recv_cb(void *arg);
void runner_check_recvs(struct runner *r);

/* runner_faults.c */
void runner_engine_faults(struct runner *r, struct node_slot *ns,
			  struct tv_engine_config *cfg);
int runner_faults_setup(struct runner *r);
int runner_wrap_device(struct runner *r, uint32_t node,
		       struct tv_vf_device **dev_p);
int runner_faults_start(struct runner *r);
void runner_faults_stop(struct runner *r);
void runner_faults_free(struct runner *r);
void runner_check_faults(struct runner *r);
int runner_connect_pair(struct runner *r, uint32_t a, uint32_t b);
int runner_schedule_late(struct runner *r);

/* runner_crash.c */
/*
 * Before each scenario operation of a node: the node/crash point.  True
 * when the node is down (it crashed now or earlier): the operation is
 * skipped and recorded, never started.
 */
bool runner_node_gate(struct runner *r, uint32_t node, const char *op,
		      uint64_t step_id, const char *name);
/* Is the pair due to be connected (both nodes started)? */
bool runner_pair_due(const struct runner *r, uint32_t a, uint32_t b);
void runner_crash_teardown(struct runner *r);
void runner_check_crashes(struct runner *r);

#endif /* TV_CLI_RUNNER_INT_H */
