/*
 * Internal test helpers (tests/ only): runs with a poke, shrink edits
 * checked (tests/common/poke.h).  Used by test_wl_port_gather_cov and
 * test_cov_port_gather.
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "common/poke.h"
#include "run_int.h"

static void poke_event(void *ctx, struct tv_tb_run *run,
		       const struct tv_sim_event *ev)
{
	struct poke *k = ctx;

	(void)ev;
	if (!k->done && run->wl)
		k->done = k->fn(k, run, run->wl);
}

struct tv_tb_scenario *poke_load(const char *text)
{
	struct tv_tb_scenario *sc = NULL;
	char err[TV_TB_ERR_MAX];

	ck_assert_msg(tv_tb_scenario_load_string(text, "poke", &sc, err) == 0,
		      "%s", err);
	return sc;
}

struct tv_tb_run *run_poked_traced(struct tv_tb_scenario *sc, uint64_t seed,
				   struct poke *k, struct tv_tb_trace *trace)
{
	struct tv_tb_invariant inv = { "poke", k, poke_event, NULL };
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;

	tv_tb_run_opts_init(&o, sc);
	o.seed = seed;
	o.trace = trace;
	if (k) {
		o.invariants = &inv;
		o.ninvariants = 1;
	}
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	return run;
}

struct tv_tb_run *run_poked(const char *text, uint64_t seed, struct poke *k,
			    struct tv_tb_scenario **sc_p)
{
	*sc_p = poke_load(text);
	return run_poked_traced(*sc_p, seed, k, NULL);
}

const char *first_failure(const struct tv_tb_run *run)
{
	const struct tv_tb_failures *f = tv_tb_run_failures(run);

	return f->count ? f->msgs[0] : "(none)";
}

const struct tv_tb_shrink_edit *edit_of(const struct tv_tb_workload_ops *wl,
					const char *what)
{
	for (size_t i = 0; i < wl->nedits; i++)
		if (!strcmp(wl->edits[i]->what, what))
			return wl->edits[i];
	ck_abort_msg("%s has no edit '%s'", wl->name, what);
	return NULL;
}

void edit_expect_wl(const struct tv_tb_workload_ops *wl, const char *what,
		    const char *before, size_t i, int want_rc,
		    const char *after)
{
	const struct tv_tb_shrink_edit *e = edit_of(wl, what);
	struct tv_tb_shrink_state st = { 0 };
	json_t *sc = json_loads(before, 0, NULL), *want;
	char *got;
	int rc;

	ck_assert_ptr_nonnull(sc);
	rc = e->fn(sc, i, &st);
	ck_assert_msg(rc == want_rc, "%s [%zu] of %s: rc %d, expected %d",
		      what, i, before, rc, want_rc);
	want = json_loads(after ? after : before, 0, NULL);
	ck_assert_ptr_nonnull(want);
	got = json_dumps(sc, JSON_COMPACT | JSON_SORT_KEYS);
	ck_assert_msg(json_equal(sc, want), "%s [%zu]: got %s", what, i, got);
	free(got);
	json_decref(want);
	json_decref(sc);
}
