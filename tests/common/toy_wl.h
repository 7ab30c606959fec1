/*
 * Internal test header (tests/ only, not part of the library's API): a
 * workload with no engine at all, for the testbed's own suites.
 *
 * Each node runs "ticks" operations, one every 1 us, each through the
 * node/crash gate and traced (a "TICK" line with its node and number).
 * Knobs for the tests of the core's error paths: "die" (setup exits with
 * that status), "kill" (setup is killed by SIGKILL), "err" (setup fails
 * with -err), "refuse" (node 0 refuses its first tick), "fail" (the
 * suite's end check may fail on purpose).  A suite builds its own ops
 * table around these (its name, checks, summary, generator).
 */
#ifndef TV_TESTS_TOY_WL_H
#define TV_TESTS_TOY_WL_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/workload.h>

struct toy_sc {
	uint64_t ticks, die, err;
	bool kill, refuse, fail;
	uint32_t nodes;
};

struct toy_run;

struct toy_tick {
	struct tv_tb_run *run;
	struct toy_run *t;
	uint32_t node;
	uint64_t i;
};

struct toy_run {
	struct toy_tick *ticks;
	uint64_t n, done, skipped;
	uint32_t actor_seen;       /* tv_tb_run_actor() inside the last tick */
};

extern const char *const toy_keys[];

int toy_parse(struct tv_ju *jc, json_t *root, struct tv_tb_scenario *sc,
	      void **wl_p);
int toy_setup(struct tv_tb_run *run, void **st_p);
void toy_progress(struct tv_tb_run *run, void *st, uint32_t node);
void toy_free(void *st);

#endif
