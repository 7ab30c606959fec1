/*
 * Internal test header (tests/ only): a simulator run with an invariant of
 * the test's own (a "poke") that acts on the workload's state at an event,
 * once, when its function says it is done; and a shrinker edit checked on
 * a scenario (tests/common/poke.c).
 */
#ifndef TV_TESTS_POKE_H
#define TV_TESTS_POKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

struct poke {
	bool (*fn)(struct poke *k, struct tv_tb_run *run, void *st);
	bool done;
	int arg;          /* the test's, for fn */
	uint64_t u[8];    /* what fn saw, for the test */
	char name[64];
};

/* The scenario in text (the test fails on a refusal). */
struct tv_tb_scenario *poke_load(const char *text);
/* sc run with seed, the poke k (or none) and a trace (or NULL). */
struct tv_tb_run *run_poked_traced(struct tv_tb_scenario *sc, uint64_t seed,
				   struct poke *k, struct tv_tb_trace *trace);
/* text run with seed and the poke; its scenario in *sc_p. */
struct tv_tb_run *run_poked(const char *text, uint64_t seed, struct poke *k,
			    struct tv_tb_scenario **sc_p);
/* The run's first failure, or "(none)". */
const char *first_failure(const struct tv_tb_run *run);

/* wl's shrink edit named what (the test fails without one). */
const struct tv_tb_shrink_edit *edit_of(const struct tv_tb_workload_ops *wl,
					const char *what);
/* Edit what of wl at i on before: want_rc, and after (NULL: unchanged). */
void edit_expect_wl(const struct tv_tb_workload_ops *wl, const char *what,
		    const char *before, size_t i, int want_rc,
		    const char *after);

#endif
