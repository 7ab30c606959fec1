/*
 * The fault half of a swarm seed (docs/swarm.md), the same for every
 * workload: each fault kind switched on or off, then its rate drawn, so
 * that most seeds exercise a few kinds hard instead of every kind a
 * little (swarm testing, Groce et al. 2012).  Every draw comes from the
 * tv_prng stream the workload's generator hands over.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "tb_int.h"

double tv_tb_gen_unit(struct tv_prng *p)
{
	return (double)(tv_prng_next(p) >> 11) * 0x1p-53;
}

uint64_t tv_tb_gen_log_uniform(struct tv_prng *p, uint64_t lo, uint64_t hi)
{
	double v = exp(log((double)lo) + tv_tb_gen_unit(p) *
		       (log((double)hi) - log((double)lo)));

	return v < (double)lo ? lo : v > (double)hi ? hi : (uint64_t)v;
}

static uint64_t below(struct tv_prng *p, uint64_t n)
{
	return tv_prng_below(p, n);
}

static bool chance(struct tv_prng *p, uint64_t num, uint64_t den)
{
	return below(p, den) < num;
}


static int rule_arg(struct tv_prng *g, json_t *rule, const char *point)
{
	static const int errnos[] = { 0, EINVAL, EFAULT };
	int e;

	/* Stalls and late signals: 1 us .. 1 ms. */
	if (!strcmp(point, "port/proxy/stall") ||
	    !strcmp(point, "port/producer/stall") ||
	    !strcmp(point, "port/sem/delay"))
		return json_object_set_new(rule, "arg", json_integer(
			(json_int_t)tv_tb_gen_log_uniform(g, 1000, 1000000)));
	if (!strcmp(point, "sim/deliver/delay"))
		return json_object_set_new(rule, "arg", json_integer(
			(json_int_t)tv_tb_gen_log_uniform(g, 1000, 50000000)));
	/* Corruption: 1 bit mostly, up to 8 (what a bad cable or DMA does). */
	if (strstr(point, "/corrupt"))
		return chance(g, 1, 2) ? json_object_set_new(rule, "arg",
			json_integer(1 + (json_int_t)below(g, 8))) : 0;
	if (strcmp(point, "vf/reg_mr/fail"))
		return 0;
	/* 0: the point's default, ENOMEM. */
	e = errnos[below(g, 3)];
	return e ? json_object_set_new(rule, "arg", json_integer(e)) : 0;
}

/*
 * When a rule fires: the Nth hits, a rate, or a rate inside a window.
 * storm: rates six times higher (up to 30 %), for seeds that test
 * recovery under a hail of faults.
 */
static json_t *gen_rule(struct tv_prng *g, const char *point, uint64_t span_ns,
			bool storm)
{
	json_t *r = json_pack("{s:s}", "point", point);
	uint64_t style = below(g, 3), after;
	int err = 0;

	if (!r)
		return NULL;
	if (style == 0) {
		tv_ju_set(r, "nth", json_integer(1 + (json_int_t)below(g, 40)),
			  &err);
		tv_ju_set(r, "count", json_integer(1 + (json_int_t)below(g, 3)),
			  &err);
	} else {
		/* 0.1 % .. 5 %, or in a window 5 % .. 50 %. */
		double p = style == 1 ? 0.001 * pow(50.0, tv_tb_gen_unit(g)) :
					0.05 * pow(10.0, tv_tb_gen_unit(g));

		if (storm)
			p = p * 6 < 1 ? p * 6 : 1;
		tv_ju_set(r, "probability", json_real(p), &err);
		if (chance(g, 1, 2))
			tv_ju_set(r, "count", json_integer(
				1 + (json_int_t)below(g, 5)), &err);
	}
	if (style == 2) {
		after = below(g, span_ns);
		tv_ju_set(r, "after_ns", json_integer((json_int_t)after), &err);
		tv_ju_set(r, "before_ns", json_integer(
			(json_int_t)(after + 1 + below(g, 2000000))), &err);
	}
	/* A rule missing a key would be another rule: none at all. */
	if (rule_arg(g, r, point) || err) {
		json_decref(r);
		return NULL;
	}
	return r;
}

/*
 * node/crash: the Nth operations, or a low rate, and always at most 1-3
 * crashes (each one tears a whole engine down and makes a new one; a
 * window at a high rate would keep nodes down for most of the run).  The
 * restart comes 50 us - 100 ms later (log-uniform: before, around and
 * well after the 20 ms ACK timeout), or after the default 2 ms.
 */
static json_t *gen_crash_rule(struct tv_prng *g, bool storm)
{
	json_t *r = json_pack("{s:s}", "point", "node/crash");
	double p;
	int err = 0;

	if (!r)
		return NULL;
	if (chance(g, 1, 2)) {
		tv_ju_set(r, "nth", json_integer(1 + (json_int_t)below(g, 40)),
			  &err);
	} else {
		/* 0.1 % .. 5 % of the operations; storms six times that. */
		p = 0.001 * pow(50.0, tv_tb_gen_unit(g));
		tv_ju_set(r, "probability", json_real(storm ? p * 6 : p), &err);
	}
	tv_ju_set(r, "count", json_integer(1 + (json_int_t)below(g, 3)), &err);
	if (chance(g, 3, 4))
		tv_ju_set(r, "arg", json_integer((json_int_t)
			tv_tb_gen_log_uniform(g, 50000, 100000000)), &err);
	if (err) {
		json_decref(r);
		return NULL;
	}
	return r;
}

/*
 * One seed in ten runs without faults, half with recoverable kinds only
 * (every receive must then succeed), the rest with every kind eligible.
 * Each eligible kind is on with probability 1/2; one seed in eight is a
 * storm.
 */
int tv_tb_swarm_gen_faults(struct tv_prng *g, json_t *root, uint32_t without,
			   uint64_t span, const struct tv_tb_workload_ops *wl)
{
	const struct tv_flt_point_info *pts;
	uint64_t mode = below(g, 10);
	bool storm = chance(g, 1, 8);
	json_t *plan = json_array();
	size_t n;

	if (!plan)
		return -ENOMEM;
	pts = tv_flt_points(&n);
	for (size_t i = 0; i < n && mode > 0; i++) {
		bool eligible = mode >= 6 ||
				!tv_tb_workload_may_fail(wl, pts[i].name);
		json_t *r;

		/* Another workload's point: no draw at all, so that adding
		 * a workload's points changes no other workload's seeds. */
		if (!tv_tb_workload_has_point(wl, pts[i].name))
			continue;
		if (!eligible || !chance(g, 1, 2))
			continue;
		if (!strcmp(pts[i].name, "node/crash"))
			r = gen_crash_rule(g, storm);
		else
			r = gen_rule(g, pts[i].name, span ? span : 1, storm);
		if (r && (without & (1u << i))) {
			json_decref(r);
			continue;
		}
		if (!r || json_array_append_new(plan, r)) {
			json_decref(plan);
			return -ENOMEM;
		}
	}
	/* json_object_set_new says -1; the generators' callers want errno. */
	return json_object_set_new(root, "faults", plan) ? -ENOMEM : 0;
}

