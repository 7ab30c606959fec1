/*
 * Simulator-side arms of the testbed's scenario, plan, shrink, swarm and
 * runner code no other suite takes (issue 24): workloads of the test's
 * own registered at run time (no keys, no frees, no generator, a
 * generator that fails, shrink edits that change nothing or break the
 * scenario, more keys than 64, the last of them taken), link overrides with
 * a stray key, fault plans as bare point names, plan edits on rules
 * with time windows or already pinned, a swarm whose breakage no
 * workload knows.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include <tensorverbs/faults.h>
#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "common/tb_files.h"

/* ---- a workload of the test's own: nothing allocated, always fails ---- */

/*
 * Its parsed part and its state are static (nothing to free: no
 * scenario_free, no state_free); it has no keys of its own, and its end
 * check fails on purpose, naming what set-up saw of node 1's start.
 */
struct arms_state {
	uint32_t nodes;
	bool due_1_0;            /* tv_tb_run_pair_due(1, 0) at set-up */
	bool due_0_1;
};

static uint32_t arms_parsed_nodes;
static struct arms_state arms_st;

static int arms_parse(struct tv_ju *jc, json_t *root,
		      struct tv_tb_scenario *sc, void **wl_p)
{
	(void)jc;
	(void)root;
	arms_parsed_nodes = tv_tb_scenario_nodes(sc);
	tv_tb_scenario_set_ops(sc, arms_parsed_nodes);
	*wl_p = &arms_parsed_nodes;
	return 0;
}

static int arms_setup(struct tv_tb_run *run, void **st_p)
{
	arms_st = (struct arms_state){
		.nodes = tv_tb_scenario_nodes(tv_tb_run_scenario(run)),
		.due_1_0 = tv_tb_run_pair_due(run, 1, 0),
		.due_0_1 = tv_tb_run_pair_due(run, 0, 1),
	};
	*st_p = &arms_st;
	return 0;
}

static void arms_progress(struct tv_tb_run *run, void *st, uint32_t node)
{
	(void)run;
	(void)st;
	(void)node;
}

static void arms_check(struct tv_tb_run *run, void *st)
{
	struct arms_state *a = st;

	tv_tb_fail(run, TV_TB_FK_EXPECT, "arms: %u nodes, 1-0 %s, 0-1 %s",
		   a->nodes, a->due_1_0 ? "due" : "not due",
		   a->due_0_1 ? "due" : "not due");
}

/* Shrink edits: one that changes nothing, fewer nodes, one node only. */
static int edit_nothing(json_t *sc, size_t i,
			const struct tv_tb_shrink_state *cur)
{
	(void)sc;
	(void)cur;
	return i ? -ENOENT : 0;
}

static int edit_fewer_nodes(json_t *sc, size_t i,
			    const struct tv_tb_shrink_state *cur)
{
	json_int_t n = json_integer_value(json_object_get(sc, "nodes"));

	(void)cur;
	if (i)
		return -ENOENT;
	if (n <= 2)
		return -EAGAIN;
	return json_object_set_new(sc, "nodes", json_integer(n - 1));
}

static int edit_one_node(json_t *sc, size_t i,
			 const struct tv_tb_shrink_state *cur)
{
	(void)cur;
	if (i)
		return -ENOENT;
	return json_object_set_new(sc, "nodes", json_integer(1));
}

static const struct tv_tb_shrink_edit e_nothing = { "nothing", edit_nothing };
static const struct tv_tb_shrink_edit e_fewer = { "fewer nodes",
						  edit_fewer_nodes };
static const struct tv_tb_shrink_edit e_one = { "one node", edit_one_node };
static const struct tv_tb_shrink_edit *const arms_edits[] = {
	&e_nothing, &e_fewer, &e_one,
};

static const struct tv_tb_workload_ops arms_wl = {
	.name = "simarms",
	.unit = "nodes",
	.parse = arms_parse,
	.setup = arms_setup,
	.progress = arms_progress,
	.check = arms_check,
	.edits = arms_edits,
	.nedits = 3,
};

/* Its twin with a generator that always fails. */
static int gen_fails(uint64_t seed, uint32_t without, json_t **sc_p)
{
	(void)seed;
	(void)without;
	(void)sc_p;
	return -EIO;
}

static const struct tv_tb_workload_ops arms_gen_wl = {
	.name = "simarmsgen",
	.unit = "nodes",
	.parse = arms_parse,
	.setup = arms_setup,
	.progress = arms_progress,
	.generate = gen_fails,
};

/* A workload with more keys than the core's key table has room for. */
#define MANY_KEYS 60
static char many_names[MANY_KEYS][8];
static const char *many_keys[MANY_KEYS + 1];

static int many_parse(struct tv_ju *jc, json_t *root,
		      struct tv_tb_scenario *sc, void **wl_p)
{
	(void)jc;
	(void)root;
	(void)sc;
	*wl_p = NULL;
	return 0;
}

static const struct tv_tb_workload_ops many_wl = {
	.name = "simmany",
	.unit = "keys",
	.keys = many_keys,
	.parse = many_parse,
	.setup = arms_setup,
	.progress = arms_progress,
};

static void register_arms(void)
{
	for (int i = 0; i < MANY_KEYS; i++) {
		snprintf(many_names[i], sizeof(many_names[i]), "k%02d", i);
		many_keys[i] = many_names[i];
	}
	if (!tv_tb_workload_find(arms_wl.name)) {
		ck_assert_int_eq(tv_tb_workload_register(&arms_wl), 0);
		ck_assert_int_eq(tv_tb_workload_register(&arms_gen_wl), 0);
		ck_assert_int_eq(tv_tb_workload_register(&many_wl), 0);
	}
}

static struct tv_tb_scenario *load_ok(const char *text)
{
	struct tv_tb_scenario *sc = NULL;
	char err[TV_TB_ERR_MAX];

	ck_assert_msg(tv_tb_scenario_load_string(text, "arms", &sc, err) == 0,
		      "%s", err);
	return sc;
}

/* ---- scenario: workloads without keys or frees, link overrides ---------- */

START_TEST(test_workload_without_keys_or_frees)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	const struct tv_tb_failures *f;
	char err[TV_TB_ERR_MAX];

	register_arms();
	/* No keys of its own: the core's alone, anything else refused. */
	ck_assert_int_eq(tv_tb_scenario_load_string(
		"{\"workload\": \"simarms\", \"nodes\": 2, \"ticks\": 1}",
		"arms", &sc, err), -EINVAL);
	ck_assert_str_eq(err, "$: unknown key 'ticks' (allowed: workload, "
			 "name, description, seed, nodes, link, links, sim, "
			 "allow_error_completions, faults, expect_faults, "
			 "expect_corruption, late_nodes)");

	sc = load_ok("{\"workload\": \"simarms\", \"nodes\": 3,"
		     " \"late_nodes\": [{\"node\": 1, \"start_ns\": 5000}]}");
	ck_assert_ptr_eq(tv_tb_scenario_wl(sc), &arms_parsed_nodes);
	ck_assert_uint_eq(tv_tb_scenario_ops(sc), 3);
	tv_tb_run_opts_init(&o, sc);
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	/* Node 1 starts at 5 us: at set-up no pair with it is due. */
	f = tv_tb_run_failures(run);
	ck_assert_uint_eq(f->count, 1);
	ck_assert_int_eq(f->msg_kinds[0], TV_TB_FK_EXPECT);
	ck_assert_str_eq(f->msgs[0], "arms: 3 nodes, 1-0 not due, 0-1 not due");
	ck_assert_ptr_eq(tv_tb_run_wl(run), &arms_st);
	/* No state_free, no scenario_free: the static parts stay as they are. */
	tv_tb_run_free(run);
	ck_assert_uint_eq(arms_st.nodes, 3);
	tv_tb_scenario_free(sc);
	ck_assert_uint_eq(arms_parsed_nodes, 3);
}
END_TEST

START_TEST(test_workload_many_keys)
{
	struct tv_tb_scenario *sc;

	register_arms();
	/* 13 core keys and 60 of its own. */
	sc = load_ok("{\"workload\": \"simmany\", \"nodes\": 2, \"k00\": 1,"
		     " \"k40\": 2}");
	ck_assert_ptr_null(tv_tb_scenario_wl(sc));
	tv_tb_scenario_free(sc);
}
END_TEST

/*
 * Regression: check_top_keys() (testbed/scenario.c) copied the core's
 * keys and the workload's into a table of 64 and dropped the rest
 * without a word, so that a workload declaring more than 51 keys of its
 * own had its last ones refused as "unknown key".  The table is now as
 * long as the two lists: the last key is taken, and a key of neither is
 * still refused.
 */
START_TEST(test_workload_last_key_taken)
{
	static const struct bad_sc bad[] = {
		{ "{\"workload\": \"simmany\", \"nodes\": 2, \"k60\": 1}",
		  "$: unknown key 'k60'" },
	};
	struct tv_tb_scenario *sc;

	register_arms();
	sc = load_ok("{\"workload\": \"simmany\", \"nodes\": 2, \"k59\": 1}");
	ck_assert_ptr_null(tv_tb_scenario_wl(sc));
	tv_tb_scenario_free(sc);
	check_bad(bad, 1, "k59");
}
END_TEST

START_TEST(test_link_override_stray_key)
{
	static const struct bad_sc bad[] = {
		{ "{\"workload\": \"simarms\", \"nodes\": 2, \"links\": [{\"from\": 0,"
		  " \"to\": 1, \"latency_ns\": 5, \"jitter\": 1}]}",
		  "$.links[0]: unknown key 'jitter'" },
	};

	register_arms();
	check_bad(bad, 1, "links");
}
END_TEST

/* ---- fault plans: a bare point, a plan that is no array --------------- */

START_TEST(test_plan_bare_point_and_not_array)
{
	char err[TV_TB_PLAN_ERR_MAX];
	json_t *plan, *obj = json_object();
	char *s;

	ck_assert_msg(tv_tb_plan_from_text("vf/ack/drop;node/crash:nth=2",
					   &plan, err, sizeof(err)) == 0,
		      "%s", err);
	s = json_dumps(plan, JSON_COMPACT | JSON_SORT_KEYS);
	ck_assert_str_eq(s, "[{\"point\":\"vf/ack/drop\"},"
			 "{\"nth\":2,\"point\":\"node/crash\"}]");
	free(s);
	json_decref(plan);

	ck_assert_int_eq(tv_tb_plan_validate(obj, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "fault plan: expected an array of rules");
	json_decref(obj);
}
END_TEST

/* ---- plan edits: a window dropped, a pinned rule's count lowered ------- */

static size_t point_index(const char *name)
{
	const struct tv_flt_point_info *pts, *pt = tv_flt_point_find(name);
	size_t n;

	pts = tv_flt_points(&n);
	ck_assert_ptr_nonnull(pt);
	return (size_t)(pt - pts);
}

static void plan_edit(const struct tv_tb_shrink_edit *e,
		      const struct tv_tb_shrink_state *st, const char *before,
		      size_t i, int want_rc, const char *after)
{
	json_t *sc = json_loads(before, 0, NULL), *want = json_loads(after, 0, NULL);
	char *got;

	ck_assert_ptr_nonnull(sc);
	ck_assert_ptr_nonnull(want);
	ck_assert_int_eq(e->fn(sc, i, st), want_rc);
	got = json_dumps(sc, JSON_COMPACT | JSON_SORT_KEYS);
	ck_assert_msg(json_equal(sc, want), "%s [%zu]: got %s", e->what, i, got);
	free(got);
	json_decref(want);
	json_decref(sc);
}

START_TEST(test_plan_edits_window_and_pinned)
{
	struct tv_tb_shrink_state st = { 0 };

	/* A rule with only "after_ns": its window goes (place 2). */
	plan_edit(&tv_tb_edit_lower_fault, &st,
		  "{\"faults\": [{\"point\": \"vf/ack/drop\", \"after_ns\": 5}]}",
		  2, 0, "{\"faults\": [{\"point\": \"vf/ack/drop\"}]}");
	/* Already at the hit it fired at, but twice: pinned to once. */
	st.fires[point_index("vf/ack/drop")] = 2;
	st.first_hit[point_index("vf/ack/drop")] = 3;
	plan_edit(&tv_tb_edit_pin_faults, &st,
		  "{\"faults\": [{\"point\": \"vf/ack/drop\", \"nth\": 3,"
		  " \"count\": 2}]}", 2, 0,
		  "{\"faults\": [{\"point\": \"vf/ack/drop\", \"nth\": 3,"
		  " \"count\": 1}]}");
	/* At that hit, its count left to the default: made explicit. */
	plan_edit(&tv_tb_edit_pin_faults, &st,
		  "{\"faults\": [{\"point\": \"vf/ack/drop\", \"nth\": 3}]}",
		  2, 0, "{\"faults\": [{\"point\": \"vf/ack/drop\", \"nth\": 3,"
		  " \"count\": 1}]}");
	/* At that hit, once, but drawn: the draw goes. */
	plan_edit(&tv_tb_edit_pin_faults, &st,
		  "{\"faults\": [{\"point\": \"vf/ack/drop\", \"nth\": 3,"
		  " \"count\": 1, \"probability\": 0.5}]}", 2, 0,
		  "{\"faults\": [{\"point\": \"vf/ack/drop\", \"nth\": 3,"
		  " \"count\": 1}]}");
	/* Pinned already, once: nothing to do. */
	plan_edit(&tv_tb_edit_pin_faults, &st,
		  "{\"faults\": [{\"point\": \"vf/ack/drop\", \"nth\": 3,"
		  " \"count\": 1}]}", 2, -EAGAIN,
		  "{\"faults\": [{\"point\": \"vf/ack/drop\", \"nth\": 3,"
		  " \"count\": 1}]}");
}
END_TEST

/* ---- shrink: edits that change nothing or break it, the budget --------- */

static void shrink_ok(const char *text, uint64_t max_runs,
		      struct tv_tb_shrink_report *rep, json_t **min_p)
{
	struct tv_tb_shrink_opts o = { .max_runs = max_runs };
	char in[128], out[128], err[1024];

	tmp_path(in, sizeof(in), "in.json");
	tmp_path(out, sizeof(out), "min.json");
	write_file(in, text);
	memset(rep, 0, sizeof(*rep));
	ck_assert_msg(tv_tb_shrink(in, out, &o, rep, err, sizeof(err)) == 0,
		      "%s", err);
	*min_p = json_load_file(out, 0, NULL);
	ck_assert_ptr_nonnull(*min_p);
}

START_TEST(test_shrink_unchanged_and_invalid_candidates)
{
	struct tv_tb_shrink_report rep;
	json_t *min;

	mk_tmpdir();
	register_arms();
	/*
	 * No "seed" in the file: seed 1.  "nothing" is never run (it is the
	 * scenario as it is), "fewer nodes" is kept once, "one node" is
	 * refused by the parser each pass (never kept).
	 */
	shrink_ok("{\"workload\": \"simarms\", \"nodes\": 3}", 100, &rep, &min);
	ck_assert_uint_eq(rep.seed, 1);
	ck_assert_int_eq(rep.kind, TV_TB_FK_EXPECT);
	ck_assert_str_eq(rep.first_msg, "arms: 3 nodes, 1-0 due, 0-1 due");
	ck_assert_str_eq(rep.msg, "arms: 2 nodes, 1-0 due, 0-1 due");
	ck_assert_uint_eq(rep.runs, 4);
	ck_assert(!rep.budget_reached);
	ck_assert_int_eq(json_integer_value(json_object_get(min, "nodes")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(min, "seed")), 1);
	json_decref(min);
	rm_tmpdir();
}
END_TEST

START_TEST(test_shrink_seed_not_integer)
{
	struct tv_tb_shrink_opts o = { .max_runs = 5 };
	struct tv_tb_shrink_report rep;
	char in[128], out[128], err[1024];

	mk_tmpdir();
	register_arms();
	tmp_path(in, sizeof(in), "in.json");
	tmp_path(out, sizeof(out), "min.json");
	/* Not a seed: seed 1 for the original, which the parser refuses. */
	write_file(in, "{\"workload\": \"simarms\", \"nodes\": 2,"
		   " \"seed\": \"x\"}");
	ck_assert_int_eq(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "invalid scenario: ") == err &&
		      strstr(err, "$.seed") != NULL, "%s", err);
	rm_tmpdir();
}
END_TEST

START_TEST(test_shrink_budget_ends_a_keeping_pass)
{
	struct tv_tb_shrink_report rep;
	json_t *min;

	mk_tmpdir();
	register_arms();
	/* The original and one kept candidate use the budget of 2. */
	shrink_ok("{\"workload\": \"simarms\", \"nodes\": 4, \"seed\": 7}", 2,
		  &rep, &min);
	ck_assert_uint_eq(rep.seed, 7);
	ck_assert_uint_eq(rep.runs, 2);
	ck_assert(rep.budget_reached);
	ck_assert_str_eq(rep.msg, "arms: 3 nodes, 1-0 due, 0-1 due");
	ck_assert_int_eq(json_integer_value(json_object_get(min, "nodes")), 3);
	json_decref(min);
	rm_tmpdir();
}
END_TEST

/* ---- swarm: no generator, a failing one, an unknown breakage ------------ */

START_TEST(test_swarm_generate_without_generator)
{
	json_t *sc = NULL;

	register_arms();
	/* simarms has no generator: as good as an unknown name. */
	ck_assert_int_eq(tv_tb_swarm_generate(1, 0, "simarms", &sc), -ENOENT);
	ck_assert_ptr_null(sc);
	ck_assert_int_eq(tv_tb_swarm_generate(1, 0, "simarmsgen", &sc), -EIO);
}
END_TEST

static void swarm_one(const char *workload, const char *breakage,
		      struct tv_tb_swarm_report *rep)
{
	struct tv_tb_swarm_opts o = {
		.seeds = 1, .first = 3, .jobs = 1, .workload = workload,
		.breakage = breakage, .argv0 = "tensorverbs",
		/* The worker ends of itself (nothing is stopped early). */
		.keep_going = true,
	};
	char dir[128];

	tmp_path(dir, sizeof(dir), "out");
	o.out_dir = dir;
	memset(rep, 0, sizeof(*rep));
	ck_assert_int_eq(tv_tb_swarm(&o, rep), 0);
	ck_assert_uint_eq(rep->done, 1);
	ck_assert_uint_eq(rep->violations, 1);
	ck_assert_uint_eq(rep->nfail, 1);
	ck_assert_uint_eq(rep->fail[0].seed, 3);
	ck_assert_int_eq(rep->fail[0].first, TV_TB_FK_RUNNER);
}

START_TEST(test_swarm_generator_fails)
{
	struct tv_tb_swarm_report rep;

	signal(SIGTERM, SIG_DFL);
	mk_tmpdir();
	register_arms();
	swarm_one("simarmsgen", NULL, &rep);
	ck_assert_str_eq(rep.fail[0].msg, strerror(EIO));
	/* Nothing to write: the generator fails again. */
	ck_assert(!rep.fail[0].written);
	rm_tmpdir();
}
END_TEST

START_TEST(test_swarm_unknown_breakage)
{
	struct tv_tb_swarm_report rep;

	signal(SIGTERM, SIG_DFL);
	mk_tmpdir();
	swarm_one("gather", "no-such-break", &rep);
	ck_assert_str_eq(rep.fail[0].msg, "breakage 'no-such-break' unknown "
			 "to workload gather");
	/* Written, and its rerun refused too (status 2: not reproduced). */
	ck_assert(rep.fail[0].written);
	ck_assert_int_eq(rep.fail[0].rerun_status, 2);
	rm_tmpdir();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cov_sim_arms");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_workload_without_keys_or_frees);
	tcase_add_test(tc, test_workload_many_keys);
	tcase_add_test(tc, test_workload_last_key_taken);
	tcase_add_test(tc, test_link_override_stray_key);
	tcase_add_test(tc, test_plan_bare_point_and_not_array);
	tcase_add_test(tc, test_plan_edits_window_and_pinned);
	tcase_add_test(tc, test_shrink_unchanged_and_invalid_candidates);
	tcase_add_test(tc, test_shrink_seed_not_integer);
	tcase_add_test(tc, test_shrink_budget_ends_a_keeping_pass);
	tcase_add_test(tc, test_swarm_generate_without_generator);
	tcase_add_test(tc, test_swarm_generator_fails);
	tcase_add_test(tc, test_swarm_unknown_breakage);
	suite_add_tcase(s, tc);
	return tv_check_main(s);
}
