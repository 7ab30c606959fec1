/*
 * The rendezvous workload on the simulator, arms its other suites leave:
 * a step whose duplicate send is not its last, a receive that expects
 * strings of a tensor that holds none, the placement verdict both ways,
 * a receive a crash completes ok (its write had landed), a receive that
 * fails before its sender ever published, an engine left with fewer
 * unrequested sends than the runner published (a receive behind the
 * runner's back), a breakage name only a wrapping workload knows, and the
 * workload's scenario_free given nothing.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "common/poke.h"
#include "common/tb_files.h"
#include "tb_int.h"
#include "rv_run.h"
#include "rv_scenario.h"
#include "rv_workload.h"

/* ---- scenarios refused ---------------------------------------------------- */

#define SND(name) "{\"from\": 0, \"to\": 1, \"name\": \"" name "\", \"dtype\": \"float\", \"shape\": [2]}"

/*
 * Three sends, two of one name sorted first: the duplicate is found with
 * sends still to compare, and the scan stops there.
 */
static const struct bad_sc dup_sends[] = {
	{ "{\"nodes\": 2, \"steps\": [{\"sends\": [" SND("b") ", " SND("a") ", "
	  SND("a") "]}]}",
	  "$.steps[0]: two sends of 'a' from node 0" },
	{ "{\"nodes\": 2, \"steps\": [{\"sends\": [" SND("a") ", " SND("c") ", "
	  SND("b") ", " SND("a") "]}]}",
	  "$.steps[0]: two sends of 'a' from node 0" },
};

START_TEST(test_dup_send_not_last)
{
	check_bad(dup_sends, sizeof(dup_sends) / sizeof(dup_sends[0]), "dup");
}
END_TEST

/* ---- what a receive expects --------------------------------------------- */

/*
 * A float tensor of two elements, expected to hold two strings: the count
 * agrees, the first element cannot be read as a string.
 */
START_TEST(test_expect_strings_of_floats)
{
	static const char text[] =
		"{\"nodes\": 2, \"steps\": [{\"sends\": [" SND("t") "],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\","
		" \"expect\": {\"strings\": [\"x\", \"y\"]}}]}]}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(text, 1, NULL, &sc);
	const struct tv_tb_failures *f = tv_tb_run_failures(run);

	ck_assert_uint_eq(f->count, 1);
	ck_assert_int_eq(f->first, TV_TB_FK_EXPECT);
	ck_assert_msg(strstr(f->msgs[0],
			     "string element 0 differs from the expected \"x\""),
		      "%s", f->msgs[0]);
	ck_assert_msg(strstr(f->msgs[0], "'t'"), "%s", f->msgs[0]);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/*
 * A device tensor judged for a receive that asked for host memory, and a
 * host tensor for one that asked for a device (the engine itself places
 * as asked, so a run never meets either): the verdict names both
 * placements.  Dead and string tensors have no placement to get wrong.
 */
static char host_why[64];

static bool poke_placement(struct poke *k, struct tv_tb_run *run, void *st)
{
	struct runner *r = st;
	struct tv_shape shape = { .rank = 1, .dims = { 4 } };
	struct tv_tensor *t;
	char why[64];

	(void)run;
	ck_assert_int_eq(tv_tensor_create(r->nodes[0].engine, TV_DT_FLOAT,
					  &shape, TV_PLACE_DEVICE, &t), 0);
	k->u[0] = rv_placement_wrong(t, TV_DT_FLOAT, false, TV_PLACE_HOST,
				     k->name, sizeof(k->name));
	k->u[1] = rv_placement_wrong(t, TV_DT_FLOAT, true, TV_PLACE_HOST,
				     why, sizeof(why));
	k->u[2] = rv_placement_wrong(t, TV_DT_STRING, false, TV_PLACE_HOST,
				     why, sizeof(why));
	k->u[3] = rv_placement_wrong(t, TV_DT_FLOAT, false, TV_PLACE_DEVICE,
				     why, sizeof(why));
	tv_tensor_unref(t);
	ck_assert_int_eq(tv_tensor_create(r->nodes[0].engine, TV_DT_FLOAT,
					  &shape, TV_PLACE_HOST, &t), 0);
	k->u[4] = rv_placement_wrong(t, TV_DT_FLOAT, false, TV_PLACE_DEVICE,
				     host_why, sizeof(host_why));
	tv_tensor_unref(t);
	return true;
}

START_TEST(test_placement_device_for_host)
{
	static const char text[] =
		"{\"nodes\": 2, \"steps\": [{\"sends\": [" SND("t") "],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]}";
	struct poke k = { .fn = poke_placement };
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_poked(text, 1, &k, &sc);

	ck_assert(k.done);
	ck_assert_uint_eq(k.u[0], 1);
	ck_assert_str_eq(k.name, "placement device, asked for host");
	ck_assert_uint_eq(k.u[1], 0);
	ck_assert_uint_eq(k.u[2], 0);
	ck_assert_uint_eq(k.u[3], 0);
	ck_assert_uint_eq(k.u[4], 1);
	ck_assert_str_eq(host_why, "placement host, asked for device");
	ck_assert_uint_eq(tv_tb_run_failures(run)->count, 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- the engines' counts at quiescence ---------------------------------- */

/* A receive of node 1's own, outside the scenario: what became of it. */
struct rogue {
	struct runner *r;
	int rc;
	unsigned calls;
	enum tv_code code;
};

static struct rogue rg;

static void rogue_done(void *arg, const struct tv_status *status,
		       struct tv_tensor *t)
{
	struct rogue *g = arg;

	g->calls++;
	g->code = status->code;
	if (t)
		tv_tensor_unref(t);
}

static void rogue_recv(void *arg)
{
	struct rogue *g = arg;
	struct tv_engine *e1 = g->r->nodes[1].engine;

	g->rc = tv_engine_recv_async(e1, tv_engine_channel(e1, 0), 1, "u",
				     TV_PLACE_HOST, rogue_done, g);
}

/*
 * Once node 0 published 'u' (no receive of the scenario asks for it),
 * node 1 takes it with a receive of its own, from an event of its own
 * (not from inside the engine's call that reported the event): node 0's
 * engine ends with no unmatched send where the runner counts one.
 */
static bool poke_take_unrequested(struct poke *k, struct tv_tb_run *run,
				  void *st)
{
	struct runner *r = st;

	(void)k;
	if (!r->sends[1].pub.done)
		return false;
	ck_assert_str_eq(r->sc->sends[1].name, "u");
	rg.r = r;
	ck_assert_int_eq(tv_tb_run_schedule(run, tv_tb_run_now_ns(run) + 1000,
					    1, rogue_recv, &rg), 0);
	return true;
}

START_TEST(test_unmatched_sends_fewer)
{
	static const char text[] =
		"{\"nodes\": 2, \"steps\": [{\"sends\": [" SND("t") ", "
		SND("u") "], \"recvs\": [{\"node\": 1, \"from\": 0,"
		" \"name\": \"t\"}]}]}";
	struct poke k = { .fn = poke_take_unrequested };
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	const struct tv_tb_failures *f;

	memset(&rg, 0, sizeof(rg));
	run = run_poked(text, 1, &k, &sc);
	f = tv_tb_run_failures(run);

	ck_assert(k.done);
	ck_assert_int_eq(rg.rc, 0);
	ck_assert_uint_eq(rg.calls, 1);
	ck_assert_int_eq(rg.code, TV_OK);
	ck_assert_uint_eq(f->count, 1);
	ck_assert_uint_eq(run_fails_with(run,
		"invariant: node 0 has unmatched_sends = 0 at quiescence, expected 1"), 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- verdicts after the run ------------------------------------------- */

/*
 * Node 1's polls find nothing from just before the tensor write of 'a'
 * lands (8018 ns) until its crash at 2 ms (its send 'z'): the write
 * waits in its CQ.  The crash's tv_engine_destroy drains the CQ, and the
 * receive it caught completes ok there, not CANCELLED: a crashed receive
 * that is not counted as cancelled, and the run passes.
 */
START_TEST(test_crash_completes_landed_recv)
{
	static const char text[] =
		"{\"nodes\": 2, \"engine\": {\"recv_timeout_ns\": 50000000},"
		" \"faults\": [{\"point\": \"vf/cq/delay\", \"node\": 1,"
		" \"after_ns\": 8017, \"before_ns\": 2000000, \"arg\": 3000000},"
		" {\"point\": \"node/crash\", \"after_ns\": 2000000, \"count\": 1,"
		" \"arg\": 1000000}],"
		" \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"a\","
		" \"dtype\": \"float\", \"shape\": [4]}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"a\"}]},"
		" {\"at_ns\": 2000000, \"sends\": [{\"from\": 1, \"to\": 0,"
		" \"name\": \"z\", \"dtype\": \"float\", \"shape\": [1]}]}]}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(text, 1, NULL, &sc);
	const struct tv_tb_result *res = tv_tb_run_result(run);
	char *sum = run_summary_text(run);

	ck_assert_msg(tv_tb_run_failures(run)->count == 0, "%s",
		      first_failure(run));
	ck_assert_uint_eq(res->crashes, 1);
	ck_assert_uint_eq(res->restarts, 1);
	ck_assert_uint_eq(res->skipped_ops, 1);
	ck_assert_uint_eq(res->ops_ok, 1);
	ck_assert_uint_eq(res->ops_failed, 0);
	/* 'a' completed at the crash, inside tv_engine_destroy. */
	ck_assert_uint_eq(res->last_op_ns, 2000000);
	ck_assert_msg(strstr(sum, "1 crashes, 1 restarts (0 failed), 1 operations"
			     " skipped (node down), 0 receives cancelled"),
		      "%s", sum);
	free(sum);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/*
 * Node 0's ACK of the request is lost, no reconnect: the receive fails
 * UNAVAILABLE at the ACK timeout (1 ms), and the run stops at its virtual
 * deadline (5 ms) before node 0 publishes 'a' (10 ms).  The sender never
 * published, so the failure is held against the recoverable fault, not
 * against a published error.
 */
START_TEST(test_recv_failed_before_publish)
{
	static const char text[] =
		"{\"nodes\": 2, \"engine\": {\"ack_timeout_ns\": 1000000,"
		" \"reconnect\": false}, \"sim\": {\"deadline_ns\": 5000000},"
		" \"faults\": [{\"point\": \"vf/ack/drop\", \"count\": 1}],"
		" \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"a\","
		" \"dtype\": \"float\", \"shape\": [4], \"at_ns\": 10000000}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"a\"}]}]}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(text, 1, NULL, &sc);

	ck_assert_uint_eq(tv_tb_run_result(run)->ops_failed, 1);
	ck_assert_uint_eq(run_fails_with(run,
		"not quiescent at the virtual deadline of 5000000 ns"), 1);
	ck_assert_uint_eq(run_fails_with(run,
		"invariant: step 1: node 1 recv 'a' from node 0: recoverable"
		" fault not recovered: failed with UNAVAILABLE \"no ACK from"
		" node 0 within 1000000 ns"), 1);
	ck_assert_uint_eq(run_fails_with(run, "the sender published"), 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- the workload's ops ------------------------------------------------- */

/*
 * A workload built on the rendezvous one may name breakages of its own:
 * the rendezvous runner hands the engine no breakage bits for a name it
 * does not know.  With one ACK lost, the run under such a name recovers;
 * under "no-ack-timeout", through the same ops, it cannot.
 */
static const char *const wrapped_breakages[] = {
	"no-ack-timeout", "wrapper-only", NULL
};

static struct tv_tb_run *run_breakage(struct tv_tb_workload_ops *ops,
				      const char *breakage,
				      struct tv_tb_scenario **sc_p)
{
	static const char text[] =
		"{\"nodes\": 2, \"faults\": [{\"point\": \"vf/ack/drop\","
		" \"count\": 1}], \"steps\": [{\"sends\": [" SND("t") "],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]}";
	struct tv_tb_scenario *sc = poke_load(text);
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;

	ck_assert_ptr_eq(sc->ops, &tv_rendezvous_workload);
	sc->ops = ops;
	tv_tb_run_opts_init(&o, sc);
	o.seed = 1;
	o.breakage = breakage;
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	*sc_p = sc;
	return run;
}

START_TEST(test_breakage_unknown_to_runner)
{
	struct tv_tb_workload_ops ops = tv_rendezvous_workload;
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;

	ops.breakages = wrapped_breakages;
	run = run_breakage(&ops, "wrapper-only", &sc);
	ck_assert_msg(tv_tb_run_failures(run)->count == 0, "%s",
		      first_failure(run));
	ck_assert_uint_eq(tv_tb_run_result(run)->fault_fires, 1);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);

	run = run_breakage(&ops, "no-ack-timeout", &sc);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 0);
	ck_assert_uint_eq(run_fails_with(run, "recoverable fault not recovered"), 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* Freeing no scenario is nothing, as free(NULL) is. */
START_TEST(test_scenario_free_null)
{
	ck_assert_ptr_nonnull(tv_rendezvous_workload.scenario_free);
	tv_rendezvous_workload.scenario_free(NULL);
	rv_scenario_free(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cov_rendezvous_arms");
	TCase *tc = tcase_create("rendezvous");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dup_send_not_last);
	tcase_add_test(tc, test_expect_strings_of_floats);
	tcase_add_test(tc, test_placement_device_for_host);
	tcase_add_test(tc, test_unmatched_sends_fewer);
	tcase_add_test(tc, test_crash_completes_landed_recv);
	tcase_add_test(tc, test_recv_failed_before_publish);
	tcase_add_test(tc, test_breakage_unknown_to_runner);
	tcase_add_test(tc, test_scenario_free_null);
	suite_add_tcase(s, tc);
	return tv_check_main(s);
}
