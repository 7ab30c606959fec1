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
};

struct run_result {
	uint64_t seed;
	size_t failures;
	uint64_t event_hash;
	uint64_t sim_events;
	uint64_t virtual_ns;
	uint64_t wall_ns;          /* of tv_sim_run only */
	uint64_t recvs_ok;
	uint64_t recvs_error;      /* completed with an error status */
	uint64_t bytes_received;   /* payload of tensors received ok */
	uint64_t checked_writes;
	uint64_t checked_msgs;
	struct tv_engine_stats total; /* summed over every node */
};

/*
 * Runs sc with opts->seed.  Failures go to *fails (the caller prints and
 * frees them); returns 0, or a negative errno if the run could not even be
 * attempted (out of memory).
 */
int runner_run(const struct scenario *sc, const struct run_opts *opts,
	       struct failures *fails, struct run_result *res_p);

uint64_t runner_wall_ns(void);

#endif /* TV_CLI_RUNNER_H */
