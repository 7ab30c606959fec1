/*
 * This file is private to the tensorverbs CLI: swarm testing
 * (docs/swarm.md).  A seed draws a whole scenario and a fault mix; the
 * swarm command runs many seeds in worker processes, shrink reduces a
 * failing one.
 */
#ifndef TV_CLI_SWARM_H
#define TV_CLI_SWARM_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "check.h"
#include "runner.h"
#include "scenario.h"

/*
 * The scenario of seed, as JSON, with its fault plan under "faults" and
 * "seed": seed: `tensorverbs run` of the file alone reproduces the run.
 * Everything comes from tv_prng streams derived from seed.
 */
int swarm_generate(uint64_t seed, uint32_t without, json_t **sc_p);

/*
 * without: bit i set keeps point i of tv_flt_points() out of every plan
 * (the draws are made all the same: other seeds' mixes do not move).
 */
/* Bit i set: point i of tv_flt_points() has a rule in the plan. */
uint32_t swarm_plan_mask(json_t *plan);

/* One run, checked; the outcome of a scenario given as JSON. */
struct swarm_outcome {
	bool invalid;              /* the JSON was not a valid scenario */
	size_t failures;
	uint32_t kinds;            /* bit (1 << enum fail_kind) */
	enum fail_kind first;
	char first_msg[512];
	uint64_t transfers;        /* recvs */
	uint64_t trace_events;     /* lines a trace would have (count_events) */
	struct run_result res;
};

/*
 * Run root with seed (breakage: TV_BREAK_* bits) in this process;
 * count_events: also count the event lines a trace of it would have.
 */
int swarm_run_json(json_t *root, uint64_t seed, uint32_t breakage,
		   bool count_events, struct swarm_outcome *out_p);

int cli_swarm(int argc, char **argv, const char *argv0);
int cli_shrink(int argc, char **argv, const char *argv0);

#endif /* TV_CLI_SWARM_H */
