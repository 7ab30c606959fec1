/*
 * This file is private to the tensorverbs CLI: running a scenario on the
 * simulator with every invariant checked.
 */
#ifndef TV_CLI_RUNNER_H
#define TV_CLI_RUNNER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <tensorverbs/engine.h>

#include "check.h"
#include "scenario.h"

struct trace_rec;

struct run_opts {
	uint64_t seed;
	bool verbose;              /* print every engine and sim event */
	struct trace_rec *rec;     /* record every event (trace.h), or NULL */
	uint32_t test_breakage;    /* TV_BREAK_* for every engine (tests only) */
};

/* Fault points a result counts firings of (tv_flt_points() order). */
#define RUN_MAX_POINTS 32

struct run_result {
	uint64_t seed;
	size_t failures;
	uint64_t event_hash;
	uint64_t sim_events;
	uint64_t virtual_ns;       /* the clock when the world went quiet */
	uint64_t last_recv_ns;     /* the last recv's first done callback */
	uint64_t wall_ns;          /* of tv_sim_run only */
	uint64_t recvs_ok;
	uint64_t recvs_error;      /* completed with an error status */
	uint64_t bytes_received;   /* payload of tensors received ok */
	uint64_t checked_writes;
	uint64_t checked_msgs;
	struct tv_engine_stats total; /* summed over every node */
	/* faults */
	uint64_t fault_fires;
	uint64_t point_fires[RUN_MAX_POINTS];
	uint64_t point_first_hit[RUN_MAX_POINTS]; /* hit number of the first */
	uint64_t point_last_hit[RUN_MAX_POINTS];  /* ... and last firing */
	uint64_t dup_landed;       /* duplicated writes that landed (allowed) */
	uint64_t refused;          /* sends and recvs the engine refused */
	/* node/crash (docs/faults.md) */
	uint64_t crashes;          /* engines destroyed by the point */
	uint64_t restarts;         /* fresh engines that came back */
	uint64_t restart_failures; /* restarts a fault made fail */
	uint64_t skipped_ops;      /* sends and recvs of a node that was down */
	uint64_t crash_cancelled;  /* receives cancelled by their node's crash */
};

/*
 * Runs sc with opts->seed.  Failures go to *fails (the caller prints and
 * frees them); returns 0, or a negative errno if the run could not even be
 * attempted (out of memory).
 */
int runner_run(const struct scenario *sc, const struct run_opts *opts,
	       struct failures *fails, struct run_result *res_p);

uint64_t runner_wall_ns(void);

/*
 * TV_BREAK (tests of the test tools only): "no-ack-timeout" gives
 * TV_BREAK_NO_ACK_TIMEOUT; unset or empty gives 0.  -EINVAL otherwise.
 */
int runner_breakage_from_env(uint32_t *bits_p);
const char *runner_breakage_name(uint32_t bits);

#endif /* TV_CLI_RUNNER_H */
