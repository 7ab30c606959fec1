/*
 * Shrink edits of fault plans (docs/swarm.md), for every workload's edit
 * table: pin rules to the hits they fired at, drop a rule, lower one,
 * aim a one-shot rule at an earlier hit.
 */
#include <errno.h>
#include <string.h>

#include "tb_int.h"

/* Aim a one-shot rule at one of its first hits (a shrink edit). */
#define SHRINK_REAIM_HITS 64

static int edit_drop_fault(json_t *sc, size_t i,
		            const struct tv_tb_shrink_state *cur)
{
	json_t *plan = json_object_get(sc, "faults");

	if (i >= json_array_size(plan))
		return -ENOENT;
	return json_array_remove(plan, i) ? -ENOMEM : 0;
}

/* Lower a rule: fire once, earlier, always, at any time, default arg. */
static int edit_fault_simpler(json_t *sc, size_t i,
		               const struct tv_tb_shrink_state *cur)
{
	json_t *r = json_array_get(json_object_get(sc, "faults"), i / 5);
	json_t *v;

	if (!r)
		return -ENOENT;
	switch (i % 5) {
	case 0:
		v = json_object_get(r, "count");
		if (v && json_integer_value(v) <= 1)
			return -EAGAIN;
		return json_object_set_new(r, "count", json_integer(
			v ? json_integer_value(v) / 2 : 1));
	case 1:
		v = json_object_get(r, "nth");
		if (!v || json_integer_value(v) <= 1)
			return -EAGAIN;
		return json_object_set_new(r, "nth",
					   json_integer(json_integer_value(v) / 2));
	case 2:
		if (!json_object_get(r, "after_ns") &&
		    !json_object_get(r, "before_ns"))
			return -EAGAIN;
		json_object_del(r, "after_ns");
		return json_object_del(r, "before_ns"), 0;
	case 3:
		return json_object_del(r, "probability") ? -EAGAIN : 0;
	default:
		return json_object_del(r, "arg") ? -EAGAIN : 0;
	}
}

/*
 * A rule whose firings depend on draws (a probability) or a time window
 * moves whenever anything else changes.  Pinned to the hit it fired at
 * (nth = that hit, count 1) it fires there whatever the rest does, so
 * the other reductions can go on.  Place 0: every rule to its first
 * firing, 1: to its last; then rule k alone, first then last.
 */
static bool rule_fired(json_t *r, const struct tv_tb_shrink_state *cur)
{
	const struct tv_flt_point_info *pts, *pt;
	size_t n;

	pts = tv_flt_points(&n);
	pt = tv_flt_point_find(json_string_value(json_object_get(r, "point")));
	return pt && pt - pts < TV_TB_MAX_POINTS && cur->fires[pt - pts];
}

static int pin_rule(json_t *r, const struct tv_tb_shrink_state *cur, bool last)
{
	const struct tv_flt_point_info *pts, *pt;
	size_t n, k;
	uint64_t hit;

	pts = tv_flt_points(&n);
	pt = tv_flt_point_find(json_string_value(json_object_get(r, "point")));
	if (!pt)
		return -EAGAIN;
	k = (size_t)(pt - pts);
	hit = last ? cur->last_hit[k] : cur->first_hit[k];
	if (!hit || k >= TV_TB_MAX_POINTS)
		return -EAGAIN;
	if (json_integer_value(json_object_get(r, "nth")) == (json_int_t)hit &&
	    json_integer_value(json_object_get(r, "count")) == 1 &&
	    !json_object_get(r, "probability"))
		return -EAGAIN;
	json_object_del(r, "probability");
	json_object_del(r, "after_ns");
	json_object_del(r, "before_ns");
	json_object_set_new(r, "nth", json_integer((json_int_t)hit));
	return json_object_set_new(r, "count", json_integer(1));
}

static int edit_pin_faults(json_t *sc, size_t i, const struct tv_tb_shrink_state *cur)
{
	json_t *plan = json_object_get(sc, "faults"), *r;
	size_t k;
	int changed = -EAGAIN;

	if (i < 2) {
		/* Pinned, no rule draws: one that never fired does nothing. */
		for (k = json_array_size(plan); k-- > 0;) {
			r = json_array_get(plan, k);
			if (!rule_fired(r, cur)) {
				json_array_remove(plan, k);
				changed = 0;
			} else if (pin_rule(r, cur, i == 1) == 0) {
				changed = 0;
			}
		}
		return changed;
	}
	r = json_array_get(plan, (i - 2) / 2);
	return r ? pin_rule(r, cur, (i - 2) % 2) : -ENOENT;
}

/* The plan's one rule if it fires once, at a counted hit; else NULL. */
json_t *tv_tb_plan_one_shot_rule(json_t *sc)
{
	json_t *plan = json_object_get(sc, "faults"), *r = json_array_get(plan, 0);

	if (json_array_size(plan) != 1 ||
	    json_integer_value(json_object_get(r, "nth")) < 1 ||
	    json_integer_value(json_object_get(r, "count")) != 1 ||
	    json_object_get(r, "probability"))
		return NULL;
	return r;
}

/*
 * A rule pinned late (nth = the 74th ACK) keeps every transfer before that
 * hit alive.  Place i = (rule i / 64, hit i % 64 + 1): aim a pinned,
 * one-shot rule at an earlier hit; once the failure comes earlier, the
 * transfers after it can go.
 */
static int edit_aim_earlier(json_t *sc, size_t i, const struct tv_tb_shrink_state *cur)
{
	json_t *r = json_array_get(json_object_get(sc, "faults"),
				   i / SHRINK_REAIM_HITS);
	json_int_t nth, hit = (json_int_t)(i % SHRINK_REAIM_HITS) + 1;

	if (!r)
		return -ENOENT;
	nth = json_integer_value(json_object_get(r, "nth"));
	if (nth <= 1 || hit >= nth || json_object_get(r, "probability") ||
	    json_integer_value(json_object_get(r, "count")) != 1)
		return -EAGAIN;
	return json_object_set_new(r, "nth", json_integer(hit));
}


const struct tv_tb_shrink_edit tv_tb_edit_pin_faults = {
	"pin fault rules to their hits", edit_pin_faults
};
const struct tv_tb_shrink_edit tv_tb_edit_drop_fault = {
	"drop a fault rule", edit_drop_fault
};
const struct tv_tb_shrink_edit tv_tb_edit_lower_fault = {
	"lower a fault rule", edit_fault_simpler
};
const struct tv_tb_shrink_edit tv_tb_edit_aim_earlier = {
	"aim a fault at an earlier hit", edit_aim_earlier
};
