/*
 * A run under faults (docs/faults.md): one injector seeded with the run's
 * seed, every node's device wrapped by it (tv_tb_run_device), the plan
 * armed after set-up, each firing counted, traced and told to the
 * workload, and expect_faults checked after the run.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_int.h"

static void fault_fired(void *ctx, const char *point, uint64_t hit)
{
	struct tv_tb_run *r = ctx;
	const struct tv_flt_point_info *pts, *pt = tv_flt_point_find(point);
	size_t n;

	pts = tv_flt_points(&n);
	/* Which hits fired: shrinking pins a rule to exactly those. */
	if (pt && pt - pts < TV_TB_MAX_POINTS) {
		if (!r->res.point_first_hit[pt - pts])
			r->res.point_first_hit[pt - pts] = hit;
		r->res.point_last_hit[pt - pts] = hit;
	}
	r->fires++;
	if (tv_tb_workload_may_fail(r->ops, point))
		r->unrecoverable_fires++;
	if (!strcmp(point, "sim/cq/overflow"))
		r->chk.overflow_fires++;
	if (r->ops->fault_fired)
		r->ops->fault_fired(r, r->wl, point, hit);
	if (r->opts.verbose)
		printf("[%12" PRIu64 " ns] fault  %s hit %" PRIu64 " (node %d)\n",
		       tv_sim_now_ns(r->sim), point, hit,
		       r->actor == TV_TB_NO_NODE ? -1 : (int)r->actor);
	if (r->rec)
		tb_rec_fault_event(r->rec, point, hit, r->actor);
	if (r->opts.tap)
		tb_tap_fire(r->opts.tap, r->actor, point, hit,
			    tv_sim_now_ns(r->sim));
}

int tb_faults_setup(struct tv_tb_run *r)
{
	char err[TV_TB_PLAN_ERR_MAX];
	int rc;

	if (!r->faulty && !r->opts.tap)
		return 0;
	/* A recording without a plan: the wrapper's taps, no rule. */
	if (!r->faulty)
		rc = tv_flt_create(r->opts.seed, &r->flt);
	else
		rc = tb_plan_injector(r->sc->faults, r->opts.seed, &r->flt,
				      err, sizeof(err));
	if (rc) {
		tv_tb_fail(r, TV_TB_FK_RUNNER, "fault plan: %s",
			   rc == -EINVAL ? err : strerror(-rc));
		return rc;
	}
	tv_flt_set_observer(r->flt, fault_fired, r);
	return 0;
}

int tb_faults_start(struct tv_tb_run *r)
{
	int rc;

	if (!r->flt)
		return 0;
	/* After set-up: faults hit the workload, not the world's making. */
	rc = tv_flt_activate(r->flt);
	if (rc)
		tv_tb_fail(r, TV_TB_FK_RUNNER, "tv_flt_activate: %s",
			   strerror(-rc));
	return rc;
}

void tb_faults_stop(struct tv_tb_run *r)
{
	if (r->flt)
		tv_flt_deactivate(r->flt);
}

void tb_faults_free(struct tv_tb_run *r)
{
	for (uint32_t n = 0; r->nodes && n < r->sc->nodes; n++) {
		if (r->flt && r->nodes[n].has_dev)
			tv_flt_unwrap(r->nodes[n].dev);
		r->nodes[n].dev = NULL;
		r->nodes[n].has_dev = false;
	}
	tv_flt_destroy(r->flt);
	r->flt = NULL;
}

uint64_t tv_tb_run_point_fires(const struct tv_tb_run *r, const char *point)
{
	struct tv_flt_point_stats st = { 0 };

	if (r->flt)
		tv_flt_stats(r->flt, point, &st);
	return st.fires;
}

static bool is_corruption(const char *point)
{
	size_t n = strlen(point);

	return n > 8 && !strcmp(point + n - 8, "/corrupt");
}

uint64_t tv_tb_run_corrupt_fires(const struct tv_tb_run *r)
{
	const struct tv_flt_point_info *pts;
	uint64_t sum = 0;
	size_t npts;

	pts = tv_flt_points(&npts);
	for (size_t i = 0; r->flt && i < npts; i++)
		if (is_corruption(pts[i].name))
			sum += tv_tb_run_point_fires(r, pts[i].name);
	return sum;
}

const char *tv_tb_run_outcome(const struct tv_tb_run *r)
{
	if (r->res.failures)
		return "FAIL";
	if (r->res.corrupt_undetected && !r->sc->has_corrupt_expect)
		return "CORRUPTED";
	return "PASS";
}

void tb_check_corruption(struct tv_tb_run *r)
{
	const struct tv_tb_scenario *sc = r->sc;
	const struct tv_tb_result *res = &r->res;

	if (!sc->has_corrupt_expect)
		return;
	if (res->corrupt_detected < sc->detected_min ||
	    res->corrupt_detected > sc->detected_max)
		tv_tb_fail(r, TV_TB_FK_EXPECT, "expect_corruption detected: %"
			   PRIu64 ", expected %" PRIu64 "..%" PRIu64 " (%"
			   PRIu64 " corruptions fired)", res->corrupt_detected,
			   sc->detected_min, sc->detected_max,
			   res->corrupt_fires);
	if (res->corrupt_undetected < sc->undetected_min ||
	    res->corrupt_undetected > sc->undetected_max)
		tv_tb_fail(r, TV_TB_FK_EXPECT, "expect_corruption undetected: %"
			   PRIu64 ", expected %" PRIu64 "..%" PRIu64 " (%"
			   PRIu64 " corruptions fired)",
			   res->corrupt_undetected, sc->undetected_min,
			   sc->undetected_max, res->corrupt_fires);
}

void tb_check_faults(struct tv_tb_run *r)
{
	const struct tv_flt_point_info *pts;
	size_t npts;

	pts = tv_flt_points(&npts);
	assert(npts <= TV_TB_MAX_POINTS);
	for (size_t i = 0; i < npts && i < TV_TB_MAX_POINTS; i++) {
		r->res.point_fires[i] = tv_tb_run_point_fires(r, pts[i].name);
		r->res.fault_fires += r->res.point_fires[i];
	}
	r->res.corrupt_fires = tv_tb_run_corrupt_fires(r);
	for (size_t i = 0; i < r->sc->nfault_expects; i++) {
		const struct tb_fault_expect *fe = &r->sc->fault_expects[i];
		uint64_t n = tv_tb_run_point_fires(r, fe->point);

		if (n < fe->min || n > fe->max)
			tv_tb_fail(r, TV_TB_FK_EXPECT,
				   "expect_faults %s: fired %" PRIu64 " times, expected %" PRIu64 "..%" PRIu64,
				   fe->point, n, fe->min, fe->max);
	}
}
