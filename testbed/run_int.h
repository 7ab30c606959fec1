/*
 * This file is private to tensorverbs' testbed: a run on the simulator,
 * as its files share it (run.c builds, drives and tears down the world;
 * run_faults.c injects faults; run_crash.c crashes and restarts nodes;
 * check.c holds the generic invariants of simulator events).
 */
#ifndef TV_TESTBED_RUN_INT_H
#define TV_TESTBED_RUN_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "tb_int.h"

/* node/crash without an arg: the node is back 2 ms later. */
#define RUN_CRASH_RESTART_NS 2000000ull

struct tb_node {
	struct tv_tb_run *run;
	uint32_t id;
	enum tv_tb_node_state state;
	bool has_dev;
	struct tv_vf_device *dev;  /* the simulator's, or the fault wrapper */
};

/* The invariants every workload gets, from simulator events. */
struct tb_check {
	bool allow_errors;
	uint64_t overflow_fires;   /* sim/cq/overflow: overflows expected */
	uint64_t error_cqes;
};

/* An operation the run's op_gate may hold back (tv_tb_run_schedule_op). */
struct tb_gated_op {
	struct tb_gated_op *next;  /* every one made: freed with the run */
	struct tv_tb_run *run;
	uint32_t node;
	uint64_t at_ns;
	void (*fn)(void *arg);
	void *arg;
};

struct tv_tb_run {
	const struct tv_tb_scenario *sc;
	const struct tv_tb_workload_ops *ops;
	struct tv_tb_run_opts opts;
	struct tb_rec *rec;        /* every event, or NULL */
	struct tb_gated_op *gated; /* with opts.op_gate only */
	void *wl;                  /* the workload's state */
	struct tv_tb_failures fails;
	struct tv_sim *sim;
	struct tb_node *nodes;
	struct tb_check chk;
	bool tearing_down;
	struct tv_tb_result res;
	/* faults */
	struct tv_flt *flt;
	bool faulty;               /* the scenario has a plan */
	uint32_t actor;            /* node whose code runs now, for traces */
	uint64_t fires;            /* every firing so far */
	uint64_t unrecoverable_fires;
};

/* run_faults.c */
int tb_faults_setup(struct tv_tb_run *r);
int tb_faults_start(struct tv_tb_run *r);
void tb_faults_stop(struct tv_tb_run *r);
/* The wrappers go after the workload's nodes that used them. */
void tb_faults_free(struct tv_tb_run *r);
void tb_check_faults(struct tv_tb_run *r);
/* After check_end: expect_corruption against what the workload counted. */
void tb_check_corruption(struct tv_tb_run *r);

/* run_crash.c: a line in --verbose and a "node" event in the trace. */
void tb_node_note(struct tv_tb_run *r, const char *kind, uint32_t node,
		  const char *op, uint64_t step_id, const char *name);

/* check.c */
void tb_check_sim_event(struct tv_tb_run *r, const struct tv_sim_event *ev);

#endif /* TV_TESTBED_RUN_INT_H */
