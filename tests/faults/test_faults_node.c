/*
 * Node rules and firings libfiu decides alone (fiu-ctrl, fiu-run): what a
 * recording from real verbs needs to be replayed at the same places.
 * Each wrapped device counts its own hits of each vf/ point; a node rule
 * fires at that count on its node only; a firing enabled through libfiu
 * directly is counted and observed with the site where it happened.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <fiu.h>
#include <fiu-control.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/faults.h>
#include <tensorverbs/sim.h>

#include "common/check_main.h"

struct seen {
	int calls;
	char point[64];
	uint64_t hit;
	bool has_site;
	uint32_t node;
	uint64_t node_hit;
};

static void observe(void *ctx, const char *point, uint64_t hit)
{
	struct seen *s = ctx;

	s->calls++;
	snprintf(s->point, sizeof(s->point), "%s", point);
	s->hit = hit;
	s->has_site = tv_flt_firing_site(&s->node, &s->node_hit);
}

struct two {
	struct tv_sim *sim;
	struct tv_flt *flt;
	struct tv_vf_device *dev[2];
	struct tv_vf_pd *pd[2];
	uint8_t buf[64];
	struct seen seen;
};

static void two_open(struct two *w, const char *plan)
{
	struct tv_sim_config sc;
	char err[256] = "";

	memset(w, 0, sizeof(*w));
	tv_sim_config_default(&sc);
	sc.num_nodes = 2;
	ck_assert_int_eq(tv_sim_create(&sc, &w->sim), 0);
	ck_assert_int_eq(tv_flt_create(1, &w->flt), 0);
	if (plan)
		ck_assert_msg(tv_flt_plan_parse(w->flt, plan, err,
						sizeof(err)) == 0, "%s", err);
	tv_flt_set_observer(w->flt, observe, &w->seen);
	for (uint32_t n = 0; n < 2; n++) {
		ck_assert_int_eq(tv_flt_wrap(w->flt, tv_sim_device(w->sim, n),
					     &w->dev[n]), 0);
		ck_assert_int_eq(tv_flt_wrap_set_node(w->dev[n], n), 0);
		ck_assert_int_eq(tv_vf_alloc_pd(w->dev[n], &w->pd[n]), 0);
	}
	ck_assert_int_eq(tv_flt_activate(w->flt), 0);
}

static void two_close(struct two *w)
{
	tv_flt_destroy(w->flt); /* deactivates */
	for (uint32_t n = 0; n < 2; n++) {
		ck_assert_int_eq(tv_vf_dealloc_pd(w->pd[n]), 0);
		tv_flt_unwrap(w->dev[n]);
	}
	ck_assert_int_eq(tv_sim_destroy(w->sim), 0);
}

/* Register and deregister once on node n: 0, or the failure. */
static int reg_once(struct two *w, uint32_t n)
{
	struct tv_vf_mr *mr;
	int ret = tv_vf_reg_mr(w->pd[n], w->buf, sizeof(w->buf),
			       TV_ACCESS_LOCAL_WRITE, &mr);

	if (!ret)
		ck_assert_int_eq(tv_vf_dereg_mr(mr), 0);
	return ret;
}

START_TEST(node_rule_fires_on_its_node_at_its_hit)
{
	struct two w;
	struct tv_flt_point_stats st;

	two_open(&w, "vf/reg_mr/fail:node=1,nth=3,count=1,arg=5");
	/* Node 0's hits do not count for node 1's rule. */
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(reg_once(&w, 0), 0);
	ck_assert_int_eq(reg_once(&w, 1), 0);
	ck_assert_int_eq(reg_once(&w, 1), 0);
	ck_assert_int_eq(reg_once(&w, 1), -5); /* EIO: the rule's arg */
	ck_assert_int_eq(reg_once(&w, 1), 0);
	ck_assert_int_eq(w.seen.calls, 1);
	ck_assert_str_eq(w.seen.point, "vf/reg_mr/fail");
	ck_assert(w.seen.has_site);
	ck_assert_uint_eq(w.seen.node, 1);
	ck_assert_uint_eq(w.seen.node_hit, 3);
	ck_assert_uint_eq(w.seen.hit, 7); /* the injector counts every node */
	ck_assert_int_eq(tv_flt_stats(w.flt, "vf/reg_mr/fail", &st), 0);
	ck_assert_uint_eq(st.fires, 1);
	ck_assert_uint_eq(st.hits, 8);
	two_close(&w);
}
END_TEST

START_TEST(node_rules_of_one_point_fire_each_once)
{
	struct two w;
	int fails0 = 0, fails1 = 0;

	/* One point, three node rules: as replay --sim makes from FIREs. */
	two_open(&w, "[{\"point\":\"vf/reg_mr/fail\",\"node\":0,\"nth\":2,\"count\":1},"
		     "{\"point\":\"vf/reg_mr/fail\",\"node\":1,\"nth\":2,\"count\":1},"
		     "{\"point\":\"vf/reg_mr/fail\",\"node\":1,\"nth\":4,\"count\":1}]");
	for (int i = 1; i <= 6; i++) {
		int r0 = reg_once(&w, 0), r1 = reg_once(&w, 1);

		ck_assert_int_eq(r0, i == 2 ? -ENOMEM : 0);
		ck_assert_int_eq(r1, i == 2 || i == 4 ? -ENOMEM : 0);
		fails0 += r0 != 0;
		fails1 += r1 != 0;
	}
	ck_assert_int_eq(fails0, 1);
	ck_assert_int_eq(fails1, 2);
	ck_assert_uint_eq(tv_flt_total_fires(w.flt), 3);
	two_close(&w);
}
END_TEST

START_TEST(node_rule_and_every_node_rule_together)
{
	struct two w;

	/* The rule for every node keeps its own count of firings. */
	two_open(&w, "[{\"point\":\"vf/reg_mr/fail\",\"nth\":5,\"count\":1},"
		     "{\"point\":\"vf/reg_mr/fail\",\"node\":0,\"nth\":1,\"count\":1}]");
	ck_assert_int_eq(reg_once(&w, 0), -ENOMEM); /* node rule, hit 1 */
	ck_assert_int_eq(reg_once(&w, 1), 0);
	ck_assert_int_eq(reg_once(&w, 1), 0);
	ck_assert_int_eq(reg_once(&w, 0), 0);
	ck_assert_int_eq(reg_once(&w, 1), -ENOMEM); /* 5th hit overall */
	ck_assert_int_eq(reg_once(&w, 0), 0);
	ck_assert_uint_eq(tv_flt_total_fires(w.flt), 2);
	two_close(&w);
}
END_TEST

START_TEST(node_rules_are_validated)
{
	struct tv_flt *flt;
	char err[256] = "", plan[4096];
	size_t off = 0;

	ck_assert_int_eq(tv_flt_create(1, &flt), 0);
	/* Only the wrapper's points know the node they are hit on. */
	ck_assert_int_eq(tv_flt_plan_parse(flt, "engine/alloc:node=1", err,
					   sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "node rule is for vf/ points"));
	ck_assert_int_eq(tv_flt_plan_parse(flt, "vf/qp/error:node=-1", err,
					   sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "bad setting 'node"));
	ck_assert_int_eq(tv_flt_plan_parse(flt, "[{\"point\":\"vf/qp/error\","
					   "\"node\":\"one\"}]", err,
					   sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "bad value for 'node'"));
	ck_assert_int_eq(tv_flt_plan_parse(flt, "[{\"point\":\"vf/qp/error\","
					   "\"node\":4294967295}]", err,
					   sizeof(err)), -EINVAL);
	tv_flt_destroy(flt);
	/* One more node rule than the injector keeps for a point. */
	ck_assert_int_eq(tv_flt_create(1, &flt), 0);
	off += (size_t)snprintf(plan + off, sizeof(plan) - off, "[");
	for (int i = 0; i <= TV_FLT_NODE_RULES; i++)
		off += (size_t)snprintf(plan + off, sizeof(plan) - off,
					"%s{\"point\":\"vf/qp/error\",\"node\":0,\"nth\":%d}",
					i ? "," : "", i + 1);
	snprintf(plan + off, sizeof(plan) - off, "]");
	ck_assert_int_eq(tv_flt_plan_parse(flt, plan, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "more node rules"));
	tv_flt_destroy(flt);
}
END_TEST

/*
 * What fiu-ctrl(1) does in a running process: libfiu's own enable.  A
 * program that enables points itself says so first (serve --fiu-ctrl and
 * fiu-run do), or the points do not ask libfiu.
 */
START_TEST(libfiu_firing_is_counted_and_observed)
{
	struct two w;
	struct tv_flt_point_stats st;

	tv_engine_fault_points_live();
	two_open(&w, NULL);
	ck_assert_int_eq(reg_once(&w, 1), 0);
	ck_assert_int_eq(reg_once(&w, 1), 0);
	ck_assert_int_eq(w.seen.calls, 0);
	ck_assert_int_eq(fiu_enable("vf/reg_mr/fail", 1, NULL, FIU_ONETIME), 0);
	ck_assert_int_eq(reg_once(&w, 1), -ENOMEM);
	ck_assert_int_eq(reg_once(&w, 1), 0); /* onetime */
	ck_assert_int_eq(w.seen.calls, 1);
	ck_assert_str_eq(w.seen.point, "vf/reg_mr/fail");
	ck_assert_uint_eq(w.seen.hit, 0); /* the injector saw no hit */
	ck_assert(w.seen.has_site);
	ck_assert_uint_eq(w.seen.node, 1);
	ck_assert_uint_eq(w.seen.node_hit, 3);
	ck_assert_int_eq(tv_flt_stats(w.flt, "vf/reg_mr/fail", &st), 0);
	ck_assert_uint_eq(st.fires, 1);
	ck_assert_uint_eq(tv_flt_total_fires(w.flt), 1);
	fiu_disable("vf/reg_mr/fail");
	two_close(&w);
}
END_TEST

/*
 * Before the injector is active (a node still connecting), a libfiu
 * firing is observed all the same, by the device's injector.
 */
START_TEST(libfiu_firing_before_activation)
{
	struct two w;

	tv_engine_fault_points_live();
	two_open(&w, NULL);
	tv_flt_deactivate(w.flt);
	ck_assert_int_eq(fiu_enable("vf/reg_mr/fail", 1, (void *)(intptr_t)EIO,
				    FIU_ONETIME), 0);
	ck_assert_int_eq(reg_once(&w, 0), -EIO); /* failinfo: the errno */
	ck_assert_int_eq(reg_once(&w, 0), 0);
	ck_assert_int_eq(w.seen.calls, 1);
	ck_assert(w.seen.has_site);
	ck_assert_uint_eq(w.seen.node, 0);
	ck_assert_uint_eq(w.seen.node_hit, 1);
	ck_assert_uint_eq(tv_flt_total_fires(w.flt), 1);
	fiu_disable("vf/reg_mr/fail");
	two_close(&w);
}
END_TEST

/* Outside an observer, and on a device without a node: no site. */
START_TEST(no_site_outside_a_firing)
{
	struct two w;
	uint32_t node = 77;
	uint64_t hit = 77;

	ck_assert(!tv_flt_firing_site(&node, &hit));
	ck_assert_uint_eq(node, 77);
	ck_assert_uint_eq(hit, 77);
	two_open(&w, "vf/reg_mr/fail:count=1");
	ck_assert_int_eq(tv_flt_wrap_set_node(w.dev[0], UINT32_MAX), 0);
	ck_assert_int_eq(reg_once(&w, 0), -ENOMEM);
	ck_assert_int_eq(w.seen.calls, 1);
	ck_assert(!w.seen.has_site);
	ck_assert_int_eq(tv_flt_wrap_set_node(tv_sim_device(w.sim, 0), 0),
			 -EINVAL);
	ck_assert_int_eq(tv_flt_wrap_set_node(NULL, 0), -EINVAL);
	two_close(&w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("faults_node");
	TCase *tc = tcase_create("faults_node");

	tcase_add_test(tc, node_rule_fires_on_its_node_at_its_hit);
	tcase_add_test(tc, node_rules_of_one_point_fire_each_once);
	tcase_add_test(tc, node_rule_and_every_node_rule_together);
	tcase_add_test(tc, node_rules_are_validated);
	tcase_add_test(tc, libfiu_firing_is_counted_and_observed);
	tcase_add_test(tc, libfiu_firing_before_activation);
	tcase_add_test(tc, no_site_outside_a_firing);
	suite_add_tcase(s, tc);
	return tv_check_main(s);
}
