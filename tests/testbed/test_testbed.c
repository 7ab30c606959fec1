/*
 * Tests of the testbed as a library (testbed.h, workload.h): the registry
 * of workloads, the scenario core's "workload" key, a workload of the
 * test's own plugged in at run time (parse, schedule, checks, summary,
 * trace lines, replay, swarm), and invariants of the caller's.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "common/toy_wl.h"

static const char basic[] =
	"{\"name\": \"b\", \"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0,"
	" \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}],"
	" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]}";

static struct tv_tb_scenario *load(const char *text, int want_rc, char *err)
{
	struct tv_tb_scenario *sc = NULL;
	char buf[TV_TB_ERR_MAX];
	int rc = tv_tb_scenario_load_string(text, "test", &sc, err ? err : buf);

	ck_assert_int_eq(rc, want_rc);
	return sc;
}

static uint64_t hash_of(const struct tv_tb_scenario *sc, uint64_t seed)
{
	struct tv_tb_run_opts o = { .seed = seed };
	struct tv_tb_run *run;
	uint64_t h;

	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->failures, 0);
	h = tv_tb_run_result(run)->event_hash;
	tv_tb_run_free(run);
	return h;
}

/* ---- the registry and the "workload" key ------------------------------- */

START_TEST(test_registry)
{
	size_t n;
	const struct tv_tb_workload_ops *const *w = tv_tb_workloads(&n);

	ck_assert_uint_ge(n, 1);
	ck_assert_str_eq(tv_tb_workload_name(w[0]), "rendezvous");
	ck_assert_ptr_eq(tv_tb_workload_default(), w[0]);
	ck_assert_ptr_eq(tv_tb_workload_find("rendezvous"), w[0]);
	ck_assert_ptr_null(tv_tb_workload_find("nope"));
	ck_assert_int_eq(tv_tb_workload_register(w[0]), -EEXIST);
	ck_assert_int_eq(tv_tb_breakage_check("no-ack-timeout"), 0);
	ck_assert_int_eq(tv_tb_breakage_check("everything"), -EINVAL);
}
END_TEST

START_TEST(test_workload_key)
{
	char err[TV_TB_ERR_MAX], text[1024];
	struct tv_tb_scenario *a = load(basic, 0, NULL), *b;

	/* Named or absent: the same workload, the same run. */
	snprintf(text, sizeof(text), "{\"workload\": \"rendezvous\", %s",
		 basic + 1);
	b = load(text, 0, NULL);
	ck_assert_ptr_eq(tv_tb_scenario_workload(a), tv_tb_scenario_workload(b));
	ck_assert_uint_eq(hash_of(a, 3), hash_of(b, 3));
	ck_assert_uint_eq(tv_tb_scenario_ops(a), 1);
	ck_assert_uint_eq(tv_tb_scenario_nodes(a), 2);
	ck_assert_str_eq(tv_tb_scenario_name(a), "b");
	tv_tb_scenario_free(a);
	tv_tb_scenario_free(b);
	snprintf(text, sizeof(text), "{\"workload\": \"nope\", %s", basic + 1);
	load(text, -EINVAL, err);
	ck_assert_str_eq(err, "$.workload: unknown workload 'nope' (known: rendezvous, port, gather)");
	snprintf(text, sizeof(text), "{\"workload\": 3, %s", basic + 1);
	load(text, -EINVAL, err);
	ck_assert_ptr_nonnull(strstr(err, "$.workload: must be a workload name"));
	/* A key of no workload and not of the core. */
	snprintf(text, sizeof(text), "{\"ticks\": 3, %s", basic + 1);
	load(text, -EINVAL, err);
	ck_assert_ptr_nonnull(strstr(err, "$: unknown key 'ticks'"));
}
END_TEST

START_TEST(test_unknown_breakage_refused)
{
	struct tv_tb_scenario *sc = load(basic, 0, NULL);
	struct tv_tb_run_opts o = { .seed = 1, .breakage = "everything" };
	struct tv_tb_run *run = NULL;

	ck_assert_int_eq(tv_tb_run(sc, &o, &run), -EINVAL);
	ck_assert_ptr_null(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- invariants of the caller's ------------------------------------------ */

struct counter {
	uint64_t events;
	uint64_t delivers;
	uint64_t fail_below;
};

static void count_event(void *ctx, struct tv_tb_run *run,
			const struct tv_sim_event *ev)
{
	struct counter *c = ctx;

	(void)run;
	c->events++;
	c->delivers += ev->kind == TV_SIM_EV_DELIVER;
}

static void at_end(void *ctx, struct tv_tb_run *run)
{
	struct counter *c = ctx;

	if (c->delivers < c->fail_below)
		tv_tb_fail(run, TV_TB_FK_EXPECT, "only %" PRIu64 " deliveries",
			   c->delivers);
}

START_TEST(test_invariant_sees_and_fails)
{
	struct tv_tb_scenario *sc = load(basic, 0, NULL);
	struct counter c = { .fail_below = 1000 };
	struct tv_tb_invariant inv = {
		.name = "counter", .ctx = &c, .sim_event = count_event,
		.at_end = at_end,
	};
	struct tv_tb_run_opts o = { .seed = 1, .invariants = &inv,
				    .ninvariants = 1 };
	const struct tv_tb_failures *f;
	struct tv_tb_run *run;

	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	/* It saw every event the simulator counted (destroy's too). */
	ck_assert_uint_ge(c.events, tv_tb_run_result(run)->sim_events);
	ck_assert_uint_gt(c.delivers, 0);
	f = tv_tb_run_failures(run);
	ck_assert_uint_eq(f->count, 1);
	ck_assert_int_eq(f->first, TV_TB_FK_EXPECT);
	ck_assert_ptr_nonnull(strstr(f->msgs[0], "deliveries"));
	ck_assert_uint_eq(tv_tb_run_result(run)->failures, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- a workload of the test's own ----------------------------------------- */

/* "toy": tests/common/toy_wl.c, with a check that counts its ticks. */
static void toy_check_end(struct tv_tb_run *run, void *st)
{
	struct toy_run *t = st;

	if (t->done + t->skipped != t->n)
		tv_tb_fail(run, TV_TB_FK_HANG, "%" PRIu64 " of %" PRIu64 " ticks",
			   t->done + t->skipped, t->n);
}

static void toy_summary(const struct tv_tb_run *run, const void *st,
			enum tv_tb_summary_part part, FILE *out)
{
	const struct toy_run *t = st;

	(void)run;
	if (part == TV_TB_SUMMARY_MAIN)
		fprintf(out, "ticks       %" PRIu64 " done\n", t->done);
}

static int toy_generate(uint64_t seed, uint32_t without, json_t **sc_p)
{
	(void)without;
	*sc_p = json_pack("{s:s, s:I, s:i, s:I, s:[]}", "workload", "toy",
			  "seed", (json_int_t)seed, "nodes", 2, "ticks",
			  (json_int_t)(1 + seed % 5), "faults");
	return *sc_p ? 0 : -ENOMEM;
}

static const struct tv_tb_workload_ops toy = {
	.name = "toy", .about = "ticks", .unit = "ticks", .last_op = "tick",
	.keys = toy_keys, .parse = toy_parse, .scenario_free = free,
	.setup = toy_setup, .progress = toy_progress,
	.check_end = toy_check_end, .state_free = toy_free,
	.summary = toy_summary, .generate = toy_generate, .event_src = "toy",
};

static void register_toy(void)
{
	if (!tv_tb_workload_find("toy"))
		ck_assert_int_eq(tv_tb_workload_register(&toy), 0);
}

static const char toy_text[] =
	"{\"workload\": \"toy\", \"name\": \"t\", \"nodes\": 3, \"ticks\": 4}";

START_TEST(test_toy_runs)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char buf[4096] = "";
	FILE *f;

	register_toy();
	sc = load(toy_text, 0, NULL);
	ck_assert_str_eq(tv_tb_workload_name(tv_tb_scenario_workload(sc)), "toy");
	ck_assert_uint_eq(tv_tb_scenario_ops(sc), 12);
	tv_tb_run_opts_init(&o, sc);
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->failures, 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 12);
	ck_assert_uint_eq(tv_tb_run_result(run)->last_op_ns, 4000);
	f = fmemopen(buf, sizeof(buf), "w");
	tv_tb_run_print_summary(run, f);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "ticks       12 done\n"));
	ck_assert_ptr_nonnull(strstr(buf, "time        4.000 us virtual\n"));
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
	/* Its own keys are checked too: ticks is required. */
	load("{\"workload\": \"toy\", \"nodes\": 2}", -EINVAL, buf);
	ck_assert_str_eq(buf, "$: missing required key 'ticks'");
	load("{\"workload\": \"toy\", \"nodes\": 2, \"ticks\": 1, \"steps\": []}",
	     -EINVAL, buf);
	ck_assert_ptr_nonnull(strstr(buf, "unknown key 'steps'"));
}
END_TEST

START_TEST(test_toy_traces_and_replays)
{
	char path[] = "/tmp/tv-toy-XXXXXX";
	struct tv_tb_replay_report rep = { 0 };
	struct tv_tb_scenario *sc;
	struct tv_tb_trace *tr;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char line[256];
	int fd = mkstemp(path), ticks = 0;
	FILE *f;

	ck_assert_int_ge(fd, 0);
	close(fd);
	register_toy();
	sc = load(toy_text, 0, NULL);
	tv_tb_run_opts_init(&o, sc);
	ck_assert_int_eq(tv_tb_trace_create(path, sc, NULL, o.seed, NULL, &tr), 0);
	o.trace = tr;
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	ck_assert_int_eq(tv_tb_trace_finish(tr, run), 0);
	tv_tb_run_free(run);
	f = fopen(path, "r");
	while (fgets(line, sizeof(line), f))
		ticks += strstr(line, "\"src\":\"toy\",\"kind\":\"TICK\"") != NULL;
	fclose(f);
	ck_assert_int_eq(ticks, 12);
	/* Replay rebuilds the toy world from the trace alone. */
	ck_assert_int_eq(tv_tb_replay(path, &rep), 0);
	ck_assert_int_eq(rep.state, TV_TB_REPLAY_SAME);
	ck_assert_str_eq(rep.result, "PASS");
	tv_tb_replay_report_free(&rep);
	tv_tb_scenario_free(sc);
	unlink(path);
}
END_TEST

START_TEST(test_toy_swarm)
{
	struct tv_tb_swarm_opts o = {
		.seeds = 20, .first = 1, .jobs = 2, .out_dir = "/tmp",
		.workload = "toy",
	};
	struct tv_tb_swarm_report rep;
	json_t *sc;

	register_toy();
	ck_assert_int_eq(tv_tb_swarm_generate(3, 0, "toy", &sc), 0);
	ck_assert_str_eq(json_string_value(json_object_get(sc, "workload")), "toy");
	json_decref(sc);
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), 0);
	ck_assert_uint_eq(rep.done, 20);
	ck_assert_uint_eq(rep.violations, 0);
	/* 1 + seed % 5 ticks on 2 nodes, seeds 1..20. */
	ck_assert_uint_eq(rep.ops, 2 * (4 * (1 + 2 + 3 + 4 + 5)));
}
END_TEST

/* ---- advertised windows ------------------------------------------------- */

START_TEST(test_windows)
{
	struct tv_tb_windows *w;
	struct tv_tb_window a = { .addr = 0x1000, .length = 256, .rkey = 7,
				  .id = 1, .open_seq = 1 };
	struct tv_tb_window b = a, *e;
	const struct tv_tb_window *o;
	uint32_t idx = 99;

	ck_assert_int_eq(tv_tb_windows_create(3, &w), 0);
	/* Enough windows to make the table grow, and each found again. */
	for (uint32_t i = 0; i < 3000; i++) {
		a.id = i;
		ck_assert_int_eq(tv_tb_windows_open(w, i % 3, (i + 1) % 3, i, &a), 0);
	}
	for (uint32_t i = 0; i < 3000; i++) {
		e = tv_tb_windows_find(w, i % 3, (i + 1) % 3, i);
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->id, i);
	}
	ck_assert_ptr_null(tv_tb_windows_find(w, 0, 2, 0));
	e = tv_tb_windows_find(w, 0, 1, 0);
	ck_assert(tv_tb_window_holds(e, 0x1000, 256, 7));
	ck_assert(tv_tb_window_holds(e, 0x10ff, 1, 7));
	ck_assert(tv_tb_window_holds(e, 0x9999, 0, 1));   /* empty: always */
	ck_assert(!tv_tb_window_holds(e, 0x1000, 257, 7));
	ck_assert(!tv_tb_window_holds(e, 0x0fff, 2, 7));
	ck_assert(!tv_tb_window_holds(e, 0x1000, 8, 8)); /* another rkey */
	ck_assert(!tv_tb_window_holds(e, UINT64_MAX, 2, 7));
	/* A new connection 0 <-> 1 closes both ways, not 1 <-> 2. */
	ck_assert_int_eq(tv_tb_windows_open(w, 1, 0, 7, &a), 0);
	tv_tb_windows_close_pair(w, 0, 1, 5);
	ck_assert(tv_tb_windows_find(w, 0, 1, 0)->done);
	ck_assert(tv_tb_windows_find(w, 1, 0, 7)->done);
	ck_assert(!tv_tb_windows_find(w, 1, 2, 1)->done);
	ck_assert_uint_eq(tv_tb_windows_find(w, 0, 1, 0)->done_seq, 5);
	/* Node 2 crashed: its windows are done, others' are not. */
	tv_tb_windows_close_node(w, 2, 6);
	ck_assert(tv_tb_windows_find(w, 2, 0, 2)->done);
	ck_assert(!tv_tb_windows_find(w, 1, 2, 1)->done);
	/* Memory of a done window advertised again since: found. */
	e = tv_tb_windows_find(w, 0, 1, 0);
	b.addr = 0x1080;
	b.open_seq = 9;
	ck_assert_int_eq(tv_tb_windows_open(w, 0, 2, 5000, &b), 0);
	o = tv_tb_windows_reused(w, 0, e, &idx);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(idx, 5000);
	b.open_seq = 4;   /* opened before e was done: not a reuse */
	ck_assert_int_eq(tv_tb_windows_open(w, 0, 2, 5000, &b), 0);
	ck_assert_ptr_null(tv_tb_windows_reused(w, 0, e, &idx));
	tv_tb_windows_destroy(w);
}
END_TEST

static Suite *testbed_suite(void)
{
	Suite *s = suite_create("testbed");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_registry);
	tcase_add_test(tc, test_workload_key);
	tcase_add_test(tc, test_unknown_breakage_refused);
	tcase_add_test(tc, test_invariant_sees_and_fails);
	tcase_add_test(tc, test_toy_runs);
	tcase_add_test(tc, test_toy_traces_and_replays);
	tcase_add_test(tc, test_toy_swarm);
	tcase_add_test(tc, test_windows);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	json_object_seed(1);
	return tv_check_main(testbed_suite());
}
