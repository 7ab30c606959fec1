/*
 * The rendezvous workload on the simulator, the paths the other suites
 * leave: the invariant checker fed events that break each invariant, the
 * runner's verdicts on receives that never complete, scenario keys of the
 * wrong type, the shrinker's edits on scenarios made for them, the swarm
 * generator over many seeds, and the small naming helpers.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/sim.h>
#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "common/tb_files.h"
#include "tb_int.h"
#include "rv_check.h"
#include "rv_run.h"
#include "rv_scenario.h"
#include "rv_workload.h"
#include "fill.h"
#include "wire.h"
#include "engine_int.h"

static const char basic[] =
	"{\"name\": \"b\", \"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0,"
	" \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}],"
	" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]}";

/* ---- the checker, fed by hand --------------------------------------------- */

/*
 * A clean run of `basic` lends its run (for tv_tb_fail and the clock) to a
 * checker of our own, which the test then feeds events one at a time.
 */
struct hand {
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	struct checker c;
	size_t base;       /* failures the run had before */
};

static void hand_init(struct hand *h, uint32_t nodes)
{
	h->run = run_scenario_text(basic, 1, NULL, &h->sc);
	h->base = tv_tb_run_failures(h->run)->count;
	ck_assert_uint_eq(h->base, 0);
	ck_assert_int_eq(checker_init(&h->c, h->run, nodes), 0);
}

static void hand_fini(struct hand *h)
{
	checker_fini(&h->c);
	tv_tb_run_free(h->run);
	tv_tb_scenario_free(h->sc);
}

static size_t hand_fails(const struct hand *h)
{
	return tv_tb_run_failures(h->run)->count - h->base;
}

static void eng(struct hand *h, enum tv_engine_event_kind k, uint32_t node,
		uint32_t peer)
{
	struct tv_engine_event ev = { .kind = k, .node = node, .peer = peer,
				      .msg_type = TV_MSG_TENSOR_REQUEST };

	checker_engine_event(&h->c, &ev);
}

static void advertise(struct hand *h, uint32_t node, uint32_t peer,
		      uint32_t idx, uint64_t addr, uint64_t len, uint32_t rkey,
		      uint64_t step, const char *name)
{
	struct tv_engine_event ev = {
		.kind = TV_EV_REQ_ADVERTISE, .node = node, .peer = peer,
		.request_index = idx, .addr = addr, .length = len,
		.rkey = rkey, .step_id = step, .name = name,
	};

	checker_engine_event(&h->c, &ev);
}

static void recv_done_ev(struct hand *h, uint32_t node, uint32_t peer,
			 uint32_t idx, uint64_t step, const char *name)
{
	struct tv_engine_event ev = {
		.kind = TV_EV_RECV_DONE, .node = node, .peer = peer,
		.request_index = idx, .step_id = step, .name = name,
	};

	checker_engine_event(&h->c, &ev);
}

static void deliver(struct hand *h, uint32_t node, uint32_t peer,
		    uint32_t imm, uint64_t addr, uint32_t len, uint32_t rkey)
{
	struct tv_sim_event ev = {
		.kind = TV_SIM_EV_DELIVER, .node = node, .peer = peer,
		.imm = imm, .has_imm = 1, .status = TV_WC_SUCCESS,
		.remote_addr = addr, .length = len, .rkey = rkey,
	};

	checker_sim_event(&h->c, &ev);
}

static const char *last_fail(const struct hand *h)
{
	const struct tv_tb_failures *f = tv_tb_run_failures(h->run);

	ck_assert_uint_gt(f->count, 0);
	ck_assert_uint_le(f->count, TV_TB_FAILURES_KEPT);
	return f->msgs[f->count - 1];
}

/* Two control messages in flight in one direction: IN_FLIGHT, once. */
START_TEST(test_chk_two_in_flight)
{
	struct hand h;

	hand_init(&h, 2);
	eng(&h, TV_EV_MSG_SEND, 0, 1);
	ck_assert_uint_eq(hand_fails(&h), 0);
	eng(&h, TV_EV_MSG_SEND, 0, 1);
	ck_assert_uint_eq(hand_fails(&h), 1);
	ck_assert_ptr_nonnull(strstr(last_fail(&h),
		"invariant: node 0 has 2 control messages in flight to node 1 (max 1)"));
	ck_assert_ptr_nonnull(strstr(last_fail(&h), "(TENSOR_REQUEST)"));
	ck_assert_int_eq(tv_tb_run_failures(h.run)->first, TV_TB_FK_IN_FLIGHT);
	/* Once the direction failed, a second message is no longer counted. */
	h.c.dir_failed[0 * 2 + 1] = true;
	eng(&h, TV_EV_MSG_SEND, 0, 1);
	ck_assert_uint_eq(hand_fails(&h), 1);
	/* Nor is a message in flight at quiescence a hang. */
	checker_quiescent(&h.c);
	ck_assert_uint_eq(hand_fails(&h), 1);
	hand_fini(&h);
}
END_TEST

/* An ACK with nothing in flight: IN_FLIGHT, unless the direction failed. */
START_TEST(test_chk_stray_ack)
{
	struct hand h;

	hand_init(&h, 3);
	eng(&h, TV_EV_MSG_SEND, 2, 1);
	eng(&h, TV_EV_ACK_RECV, 2, 1);
	ck_assert_uint_eq(hand_fails(&h), 0);
	eng(&h, TV_EV_ACK_RECV, 2, 1);
	ck_assert_uint_eq(hand_fails(&h), 1);
	ck_assert_ptr_nonnull(strstr(last_fail(&h),
		"invariant: node 2 got an ACK from node 1 with no message in flight"));
	ck_assert_int_eq(h.c.in_flight[2 * 3 + 1], 0);
	/* After a failure an old ACK may still be polled: no failure. */
	checker_node_down(&h.c, 1);
	eng(&h, TV_EV_ACK_RECV, 2, 1);
	ck_assert_uint_eq(hand_fails(&h), 1);
	ck_assert_int_eq(h.c.in_flight[2 * 3 + 1], 0);
	/* A new epoch: the direction counts again. */
	checker_node_up(&h.c, 1);
	checker_new_epoch(&h.c, 1, 2);
	eng(&h, TV_EV_ACK_RECV, 2, 1);
	ck_assert_uint_eq(hand_fails(&h), 2);
	/* A message left unacknowledged at quiescence is the #11416 hang. */
	eng(&h, TV_EV_MSG_SEND, 0, 2);
	checker_quiescent(&h.c);
	ck_assert_uint_eq(hand_fails(&h), 3);
	ck_assert_ptr_nonnull(strstr(last_fail(&h),
		"at quiescence node 0 still waits for the ACK of a control message to node 2"));
	ck_assert_int_eq(tv_tb_run_failures(h.run)->kinds &
			 (1u << TV_TB_FK_HANG), 1u << TV_TB_FK_HANG);
	hand_fini(&h);
}
END_TEST

/* An engine event naming a node outside the world: RUNNER (not for errors). */
START_TEST(test_chk_event_bad_node)
{
	struct hand h;

	hand_init(&h, 2);
	eng(&h, TV_EV_MSG_SEND, 2, 0);
	ck_assert_uint_eq(hand_fails(&h), 1);
	ck_assert_str_eq(last_fail(&h),
			 "engine event MSG_SEND names node 2 peer 0");
	eng(&h, (enum tv_engine_event_kind)77, 0, 5);
	ck_assert_uint_eq(hand_fails(&h), 2);
	ck_assert_str_eq(last_fail(&h), "engine event ? names node 0 peer 5");
	/* A channel error with no peer (a failed connect) is not a failure. */
	eng(&h, TV_EV_CHANNEL_ERROR, 0, UINT32_MAX);
	ck_assert_uint_eq(hand_fails(&h), 2);
	ck_assert_uint_eq(h.c.engine_events, 0);
	/* Nor is a simulator delivery to or from outside the world. */
	deliver(&h, 0, UINT32_MAX, TV_IMM_MESSAGE, 0, 8, 0);
	deliver(&h, 9, 0, TV_IMM_MESSAGE, 0, 8, 0);
	ck_assert_uint_eq(hand_fails(&h), 2);
	ck_assert_uint_eq(h.c.checked_msgs, 0);
	hand_fini(&h);
}
END_TEST

/* Control messages: to a node with no channel, and outside the rx buffer. */
START_TEST(test_chk_msg_writes)
{
	struct tv_channel_info rx = { 0 };
	struct hand h;

	hand_init(&h, 2);
	deliver(&h, 1, 0, TV_IMM_MESSAGE, 0x1000, 16, 0);
	ck_assert_uint_eq(hand_fails(&h), 1);
	ck_assert_str_eq(last_fail(&h),
		"invariant: control message from node 0 to node 1, which has no channel to it");
	rx.rx_addr = 0x1000;
	rx.rx_bytes = 64;
	checker_set_rx(&h.c, 1, 0, &rx);
	deliver(&h, 1, 0, TV_IMM_MESSAGE, 0x1000, 64, 0);   /* fits exactly */
	deliver(&h, 1, 0, TV_IMM_MESSAGE, 0x1030, 16, 0);   /* fits at the end */
	ck_assert_uint_eq(hand_fails(&h), 1);
	deliver(&h, 1, 0, TV_IMM_MESSAGE, 0x1000, 65, 0);   /* too long */
	ck_assert_uint_eq(hand_fails(&h), 2);
	ck_assert_str_eq(last_fail(&h),
		"invariant: control message write [0x1000, +65) from node 0 overflows node 1's rx buffer [0x1000, +64)");
	deliver(&h, 1, 0, TV_IMM_MESSAGE, 0xff8, 16, 0);    /* before it */
	deliver(&h, 1, 0, TV_IMM_MESSAGE, 0x1038, 16, 0);   /* past its end */
	ck_assert_uint_eq(hand_fails(&h), 4);
	ck_assert_ptr_nonnull(strstr(last_fail(&h), "[0x1038, +16)"));
	ck_assert_uint_eq(h.c.checked_msgs, 6);
	/* ACKs are empty. */
	deliver(&h, 0, 1, TV_IMM_ACK, 0, 0, 0);
	ck_assert_uint_eq(hand_fails(&h), 4);
	deliver(&h, 0, 1, TV_IMM_ACK, 0, 4, 0);
	ck_assert_uint_eq(hand_fails(&h), 5);
	ck_assert_str_eq(last_fail(&h),
			 "invariant: ACK from node 1 to node 0 carries 4 bytes");
	ck_assert_int_eq(tv_tb_run_failures(h.run)->kinds &
			 (1u << TV_TB_FK_WRITE), 1u << TV_TB_FK_WRITE);
	hand_fini(&h);
}
END_TEST

/* Tensor writes: with no request, outside the window, after it finished. */
START_TEST(test_chk_tensor_writes)
{
	struct hand h;

	hand_init(&h, 2);
	deliver(&h, 1, 0, 3, 0x2000, 32, 7);
	ck_assert_uint_eq(hand_fails(&h), 1);
	ck_assert_ptr_nonnull(strstr(last_fail(&h),
		"invariant: tensor write (index 3, 32 bytes) from node 0 to node 1"));
	ck_assert_ptr_nonnull(strstr(last_fail(&h),
		"no live request advertised a buffer for that index"));
	advertise(&h, 1, 0, 3, 0x2000, 64, 7, 5, "t");
	deliver(&h, 1, 0, 3 | TV_IMM_ACK_FLAG, 0x2000, 64, 7);  /* all of it */
	ck_assert_uint_eq(hand_fails(&h), 1);
	deliver(&h, 1, 0, 3, 0x2000, 32, 8);                    /* wrong rkey */
	ck_assert_uint_eq(hand_fails(&h), 2);
	ck_assert_str_eq(last_fail(&h),
		"invariant: tensor write [0x2000, +32) rkey 0x8 from node 0 to node 1 (index 3) outside the advertised [0x2000, +64) rkey 0x7");
	deliver(&h, 1, 0, 3, 0x2030, 32, 7);                    /* overruns */
	ck_assert_uint_eq(hand_fails(&h), 3);
	/* Done for another request (name differs): the window stays live. */
	recv_done_ev(&h, 1, 0, 3, 5, "u");
	deliver(&h, 1, 0, 3, 0x2000, 8, 7);
	ck_assert_uint_eq(hand_fails(&h), 3);
	/* Done for this one: a later write is stray (no vf/write/dup fired). */
	recv_done_ev(&h, 1, 0, 3, 5, "t");
	deliver(&h, 1, 0, 3, 0x2000, 8, 7);
	ck_assert_uint_eq(hand_fails(&h), 4);
	ck_assert_ptr_nonnull(strstr(last_fail(&h), "no live request"));
	/* A write the responder refused wrote nothing: not checked. */
	{
		struct tv_sim_event ev = {
			.kind = TV_SIM_EV_DELIVER, .node = 1, .peer = 0,
			.imm = 9, .has_imm = 1, .status = TV_WC_REM_ACCESS_ERR,
			.length = 8,
		};

		checker_sim_event(&h.c, &ev);
		ev.status = TV_WC_SUCCESS;
		ev.has_imm = 0;
		checker_sim_event(&h.c, &ev);
		ev.has_imm = 1;
		ev.kind = TV_SIM_EV_POST_SEND;
		checker_sim_event(&h.c, &ev);
	}
	ck_assert_uint_eq(hand_fails(&h), 4);
	ck_assert_uint_eq(h.c.checked_writes, 6);
	/* Writes to a crashed node were never written. */
	checker_node_down(&h.c, 1);
	deliver(&h, 1, 0, 42, 0x9000, 8, 7);
	ck_assert_uint_eq(hand_fails(&h), 4);
	ck_assert_uint_eq(h.c.checked_writes, 6);
	hand_fini(&h);
}
END_TEST

/*
 * vf/write/dup: the second copy landing in the buffer just delivered is
 * allowed, unless that buffer was advertised again for another request.
 */
START_TEST(test_chk_dup_write)
{
	struct hand h;

	hand_init(&h, 2);
	h.c.dup_fires = 1;
	advertise(&h, 1, 0, 4, 0x4000, 128, 9, 1, "a");
	deliver(&h, 1, 0, 4, 0x4000, 128, 9);
	recv_done_ev(&h, 1, 0, 4, 1, "a");
	deliver(&h, 1, 0, 4, 0x4000, 128, 9);      /* the duplicate */
	ck_assert_uint_eq(hand_fails(&h), 0);
	ck_assert_uint_eq(h.c.dup_landed, 1);
	/* Outside the finished window: an ordinary stray write. */
	deliver(&h, 1, 0, 4, 0x5000, 8, 9);
	ck_assert_uint_eq(hand_fails(&h), 1);
	ck_assert_ptr_nonnull(strstr(last_fail(&h), "no live request"));
	/* The buffer goes to index 6; a duplicate for 4 now lands in it. */
	advertise(&h, 1, 0, 6, 0x4040, 64, 9, 2, "b");
	deliver(&h, 1, 0, 4, 0x4000, 128, 9);
	ck_assert_uint_eq(hand_fails(&h), 2);
	ck_assert_ptr_nonnull(strstr(last_fail(&h),
		"invariant: duplicated tensor write (index 4, 128 bytes) from node 0 landed"));
	ck_assert_ptr_nonnull(strstr(last_fail(&h),
		"advertised again since for index 6 (step 2)"));
	ck_assert_uint_eq(h.c.dup_landed, 2);
	/* An empty duplicate overwrites nothing. */
	deliver(&h, 1, 0, 4, 0x4000, 0, 9);
	ck_assert_uint_eq(hand_fails(&h), 2);
	ck_assert_uint_eq(h.c.dup_landed, 3);
	hand_fini(&h);
}
END_TEST

/*
 * An advertisement without a name (the engine may leave it NULL) closes
 * on a RECV_DONE without one too: a later write to it is stray.
 */
START_TEST(test_chk_unnamed_window)
{
	struct hand h;

	hand_init(&h, 2);
	advertise(&h, 1, 0, 2, 0x3000, 32, 5, 7, NULL);
	deliver(&h, 1, 0, 2, 0x3000, 32, 5);
	ck_assert_uint_eq(hand_fails(&h), 0);
	/* Named: another request's done, the window stays live. */
	recv_done_ev(&h, 1, 0, 2, 7, "t");
	deliver(&h, 1, 0, 2, 0x3000, 8, 5);
	ck_assert_uint_eq(hand_fails(&h), 0);
	recv_done_ev(&h, 1, 0, 2, 7, NULL);
	deliver(&h, 1, 0, 2, 0x3000, 8, 5);
	ck_assert_uint_eq(hand_fails(&h), 1);
	ck_assert_ptr_nonnull(strstr(last_fail(&h),
		"invariant: tensor write (index 2, 8 bytes) from node 0 to node 1"));
	ck_assert_ptr_nonnull(strstr(last_fail(&h), "no live request"));
	hand_fini(&h);
}
END_TEST

/* Channel errors are counted; after the run (tearing down) not failures. */
START_TEST(test_chk_channel_error_counted)
{
	struct hand h;

	hand_init(&h, 2);
	eng(&h, TV_EV_MSG_SEND, 0, 1);
	eng(&h, TV_EV_CHANNEL_ERROR, 0, 1);
	ck_assert_uint_eq(h.c.channel_errors, 1);
	ck_assert_uint_eq(h.c.chan_errors[0 * 2 + 1], 1);
	ck_assert(h.c.dir_failed[0 * 2 + 1]);
	ck_assert_uint_eq(hand_fails(&h), 0);
	checker_quiescent(&h.c);
	ck_assert_uint_eq(hand_fails(&h), 0);
	hand_fini(&h);
}
END_TEST

/* ---- the small helpers ------------------------------------------------------ */

START_TEST(test_helper_names)
{
	struct tv_engine_stats st;
	uint64_t v = 0;

	ck_assert_str_eq(rv_engine_event_name(TV_EV_MSG_SEND), "MSG_SEND");
	ck_assert_str_eq(rv_engine_event_name(TV_EV_CHANNEL_ERROR),
			 "CHANNEL_ERROR");
	ck_assert_ptr_null(rv_engine_event_name((enum tv_engine_event_kind)1000));
	/* Kinds start at 1: 0 is a hole in the table, not a name. */
	ck_assert_ptr_null(rv_engine_event_name((enum tv_engine_event_kind)0));
	ck_assert_str_eq(scenario_msg_type_name(TV_MSG_ERROR_STATUS),
			 "ERROR_STATUS");
	ck_assert_str_eq(scenario_msg_type_name(-1), "?");
	ck_assert_str_eq(scenario_msg_type_name(TV_MSG_TYPE_COUNT), "?");

	memset(&st, 0, sizeof(st));
	st.msgs_sent[TV_MSG_TENSOR_REQUEST] = 3;
	st.msgs_recv[TV_MSG_ERROR_STATUS] = 4;
	st.retries = 5;
	ck_assert_int_eq(scenario_stat_value(&st, "msgs_sent",
					     TV_MSG_TENSOR_REQUEST, &v), 0);
	ck_assert_uint_eq(v, 3);
	ck_assert_int_eq(scenario_stat_value(&st, "msgs_recv",
					     TV_MSG_ERROR_STATUS, &v), 0);
	ck_assert_uint_eq(v, 4);
	ck_assert_int_eq(scenario_stat_value(&st, "retries", -1, &v), 0);
	ck_assert_uint_eq(v, 5);
	v = 77;
	ck_assert_int_eq(scenario_stat_value(&st, "retries",
					     TV_MSG_TENSOR_REQUEST, &v), -ENOENT);
	ck_assert_int_eq(scenario_stat_value(&st, "nope", -1, &v), -ENOENT);
	ck_assert_uint_eq(v, 77);
	ck_assert_str_eq(scenario_stat_name("retries"), "retries");
	ck_assert_str_eq(scenario_stat_name("msgs_recv"), "msgs_recv");
	ck_assert_ptr_null(scenario_stat_name("nope"));
}
END_TEST


/* ---- the runner's verdicts --------------------------------------------------- */

/*
 * TV_BREAK=no-ack-timeout, no receive deadline and one dropped ACK: the
 * channel hangs, and of the 12 receives queued behind it the first ten
 * are named, all counted in one more line.
 */
START_TEST(test_run_many_hung_recvs)
{
	static const char text[] =
		"{\"nodes\": 2, \"engine\": {\"recv_timeout_ns\": 0}, \"faults\": [{\"point\": \"vf/ack/drop\", \"nth\": 1, \"count\": 1}],"
		" \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\","
		" \"dtype\": \"float\", \"shape\": [4], \"repeat\": 12}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\", \"repeat\": 12}]}]}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(text, 3, "no-ack-timeout", &sc);
	const struct tv_tb_failures *f = tv_tb_run_failures(run);

	ck_assert_uint_eq(run_fails_with(run, "never completed (done callback not run at quiescence)"), 10);
	ck_assert_uint_eq(run_fails_with(run, "invariant: 12 recvs never completed"), 1);
	ck_assert_int_ne(f->kinds & (1u << TV_TB_FK_HANG), 0);
	ck_assert_uint_eq(run_fails_with(run, "at quiescence node 1 still waits for the ACK of a control message to node 0"), 1);
	/* The engines' books agree: everything still queued or live. */
	ck_assert_uint_eq(run_fails_with(run, "node 1 has queued_msgs = 12 at quiescence, expected 0"), 1);
	ck_assert_uint_eq(run_fails_with(run, "node 1 has live_requests = 12 at quiescence"), 1);
	ck_assert_uint_eq(f->count, 15);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_failed, 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/*
 * Repeated sends that publish an error with a message, and repeated
 * receives that expect it: every copy carries the message.
 */
START_TEST(test_run_repeat_error_message)
{
	static const char text[] =
		"{\"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\","
		" \"error\": {\"code\": \"NOT_FOUND\", \"message\": \"gone\"}, \"repeat\": 3},"
		" {\"from\": 0, \"to\": 1, \"name\": \"b\", \"dtype\": \"bool\", \"shape\": [5],"
		" \"memory\": \"pool\", \"fill\": {\"pattern\": \"random\", \"seed\": 4}},"
		" {\"from\": 0, \"to\": 1, \"name\": \"e\", \"dtype\": \"string\", \"shape\": [0]}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\", \"repeat\": 3,"
		" \"expect\": {\"error\": \"NOT_FOUND\", \"message\": \"gone\"}},"
		" {\"node\": 1, \"from\": 0, \"name\": \"b\", \"expect\": {\"fill\": {\"pattern\": \"random\", \"seed\": 4}}},"
		" {\"node\": 1, \"from\": 0, \"name\": \"e\", \"expect\": {\"strings\": []}}]}]}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(text, 5, NULL, &sc);

	ck_assert_msg(tv_tb_run_failures(run)->count == 0, "%s",
		      tv_tb_run_failures(run)->msgs[0]);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_failed, 3);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 2);
	ck_assert_str_eq(tv_tb_run_outcome(run), "PASS");
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* The same, but the receives expect another message: EXPECT fails. */
START_TEST(test_run_error_message_differs)
{
	static const char text[] =
		"{\"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\","
		" \"error\": {\"code\": \"NOT_FOUND\", \"message\": \"gone\"}}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\","
		" \"expect\": {\"error\": \"NOT_FOUND\", \"message\": \"here\"}}]}]}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(text, 5, NULL, &sc);

	ck_assert_uint_eq(tv_tb_run_failures(run)->count, 1);
	ck_assert_int_eq(tv_tb_run_failures(run)->first, TV_TB_FK_EXPECT);
	ck_assert_ptr_nonnull(strstr(tv_tb_run_failures(run)->msgs[0], "here"));
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST


/*
 * Expectations that do not hold: a shape too long to print whole (cut at
 * the buffer), a string of the same length with other bytes.  Each is one
 * EXPECT failure; a bool iota fill expected as iota holds.
 */
START_TEST(test_run_expect_mismatches)
{
	static const char text[] =
		"{\"nodes\": 2, \"steps\": [{\"sends\": ["
		" {\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [1]},"
		" {\"from\": 0, \"to\": 1, \"name\": \"s\", \"dtype\": \"string\", \"shape\": [1], \"strings\": [\"ab\"]},"
		" {\"from\": 0, \"to\": 1, \"name\": \"b\", \"dtype\": \"bool\", \"shape\": [6], \"fill\": {\"pattern\": \"iota\"}},"
		" {\"from\": 0, \"to\": 1, \"name\": \"z\", \"dtype\": \"int32\", \"shape\": [], \"placement\": \"host\"}],"
		" \"recvs\": ["
		" {\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"shape\": [0, 1000000000000, 1000000000000,"
		" 1000000000000, 1000000000000, 1000000000000, 1000000000000, 1000000000000, 1000000000000,"
		" 1000000000000, 1000000000000, 1000000000000]}},"
		" {\"node\": 1, \"from\": 0, \"name\": \"s\", \"expect\": {\"strings\": [\"ac\"]}},"
		" {\"node\": 1, \"from\": 0, \"name\": \"b\", \"expect\": {\"fill\": {\"pattern\": \"iota\"}}},"
		" {\"node\": 1, \"from\": 0, \"name\": \"z\", \"expect\": \"ok\"}]}]}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(text, 2, NULL, &sc);
	const struct tv_tb_failures *f = tv_tb_run_failures(run);

	ck_assert_uint_eq(f->count, 2);
	ck_assert_int_eq(f->kinds, 1u << TV_TB_FK_EXPECT);
	ck_assert_uint_eq(run_fails_with(run,
		"recv 't' from node 0: shape [1], expected [0,1000000000000,"), 1);
	/* 127 characters of the expected shape, no closing bracket. */
	ck_assert_uint_eq(run_fails_with(run, "1000000000000]"), 0);
	ck_assert_uint_eq(run_fails_with(run,
		"recv 's' from node 0: string element 0 differs from the expected \"ac\""), 1);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 4);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- scenarios refused --------------------------------------------------------- */

#define SEND0 "{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]"
#define RECV0 "{\"node\": 1, \"from\": 0, \"name\": \"t\"}"
#define STEP(send, recv) "\"steps\": [{\"sends\": [" send "], \"recvs\": [" recv "]}]}"
#define HEAD "{\"nodes\": 2, "

static const struct bad_sc bad_rv[] = {
	{ HEAD "\"steps\": [{\"at_ns\": \"x\", \"sends\": [" SEND0 "}]}]}", "$.steps[0].at_ns" },
	{ HEAD "\"step_interval_ns\": -1, " STEP(SEND0 "}", RECV0), "$.step_interval_ns" },
	{ HEAD "\"engine\": {\"ack_timeout_ns\": \"x\"}, " STEP(SEND0 "}", RECV0), "$.engine.ack_timeout_ns" },
	{ HEAD "\"engine\": {\"recv_timeout_ns\": -1}, " STEP(SEND0 "}", RECV0), "$.engine.recv_timeout_ns" },
	{ HEAD "\"engine\": {\"validate_checksum\": 1}, " STEP(SEND0 "}", RECV0), "$.engine.validate_checksum" },
	{ HEAD "\"engine\": {\"queue_depth\": 65537}, " STEP(SEND0 "}", RECV0), "$.engine.queue_depth" },
	{ HEAD "\"engine\": {\"pool_block_bytes\": \"x\"}, " STEP(SEND0 "}", RECV0), "$.engine.pool_block_bytes" },
	{ HEAD "\"engine\": {\"max_recv_bytes\": \"x\"}, " STEP(SEND0 "}", RECV0), "$.engine.max_recv_bytes" },
	{ HEAD STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": 3}", RECV0), "$.steps[0].sends[0].shape: must be an array" },
	{ HEAD STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [\"a\"]}", RECV0), "$.steps[0].sends[0].shape[0]" },
	{ HEAD STEP(SEND0 ", \"fill\": {\"pattern\": 1}}", RECV0), "$.steps[0].sends[0].fill.pattern: must be \"random\"" },
	{ HEAD STEP(SEND0 ", \"fill\": {\"seed\": \"x\"}}", RECV0), "$.steps[0].sends[0].fill.seed" },
	{ HEAD STEP(SEND0 ", \"fill\": 3}", RECV0), "$.steps[0].sends[0].fill: must be an object" },
	{ HEAD STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"error\": {\"code\": 5}}", RECV0), "$.steps[0].sends[0].error.code: must be a status code name" },
	{ HEAD STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"error\": {\"code\": \"NOT_FOUND\", \"message\": 5}}", RECV0), "$.steps[0].sends[0].error.message" },
	{ HEAD STEP(SEND0 ", \"memory\": 5}", RECV0), "$.steps[0].sends[0].memory: must be \"pool\" or \"unregistered\"" },
	{ HEAD STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"dead\": true, \"memory\": \"unregistered\"}", RECV0), "$.steps[0].sends[0].memory: unregistered memory holds a live host tensor" },
	{ HEAD STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"string\", \"shape\": [1], \"memory\": \"unregistered\"}", RECV0), "$.steps[0].sends[0].memory: unregistered memory" },
	{ HEAD STEP(SEND0 ", \"dead\": \"yes\"}", RECV0), "$.steps[0].sends[0].dead" },
	{ HEAD STEP(SEND0 ", \"repeat\": \"x\"}", RECV0), "$.steps[0].sends[0].repeat" },
	{ HEAD STEP(SEND0 ", \"stagger_ns\": -1}", RECV0), "$.steps[0].sends[0].stagger_ns" },
	{ HEAD STEP("{\"from\": 0, \"to\": 2, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}", RECV0), "$.steps[0].sends[0].to" },
	{ HEAD STEP("{\"from\": 0, \"to\": 1, \"name\": 5, \"dtype\": \"float\", \"shape\": [8]}", RECV0), "$.steps[0].sends[0].name" },
	{ HEAD STEP(SEND0 ", \"at_ns\": \"x\"}", RECV0), "$.steps[0].sends[0].at_ns" },
	{ HEAD STEP(SEND0 "}", "7"), "$.steps[0].recvs[0]: must be an object" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 2, \"from\": 0, \"name\": \"t\"}"), "$.steps[0].recvs[0].node" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": 5}"), "$.steps[0].recvs[0].name" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"at_ns\": \"x\"}"), "$.steps[0].recvs[0].at_ns" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"repeat\": \"x\"}"), "$.steps[0].recvs[0].repeat" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"bogus\": 1}"), "$.steps[0].recvs[0]" },
	{ HEAD "\"steps\": [{\"sends\": [" SEND0 "}], \"recvs\": 4}]}", "$.steps[0].recvs: must be an array" },
	{ HEAD "\"steps\": [{\"sends\": 4}]}", "$.steps[0].sends: must be an array" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"error\": 5}}"), "$.steps[0].recvs[0].expect.error" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"error\": \"NOT_FOUND\", \"message\": 5}}"), "$.steps[0].recvs[0].expect.message" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": \"maybe\"}"), "$.steps[0].recvs[0].expect: must be \"ok\", \"any\"" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": 5}"), "$.steps[0].recvs[0].expect: must be \"ok\", \"any\"" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"dtype\": 5}}"), "$.steps[0].recvs[0].expect.dtype: must be a dtype name string" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"\"}"), "$.steps[0].recvs[0]: 'name' must not be empty" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"stagger_ns\": -1}"), "$.steps[0].recvs[0].stagger_ns" },
	{ HEAD STEP(SEND0 ", \"placement\": 5}", RECV0), "$.steps[0].sends[0].placement: must be \"host\" or \"device\"" },
	{ HEAD STEP("7", RECV0), "$.steps[0].sends[0]: must be an object" },
	{ HEAD "\"steps\": [{\"step_id\": \"x\", \"sends\": [" SEND0 "}]}]}", "$.steps[0].step_id" },
	{ HEAD "\"steps\": [7]}", "$.steps[0]: must be an object" },
	{ HEAD STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"error\": {}}", RECV0), "$.steps[0].sends[0].error.code: must be a status code name" },
	{ HEAD STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"error\": {\"code\": \"OK\"}}", RECV0), "$.steps[0].sends[0].error.code: an error cannot be OK" },
	{ HEAD STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"error\": {\"code\": \"NOPE\"}}", RECV0), "$.steps[0].sends[0].error.code: must be a status code name" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"error\": \"OK\"}}"), "$.steps[0].recvs[0].expect.error: must be an error code name" },
	{ HEAD STEP(SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"error\": \"NOPE\"}}"), "$.steps[0].recvs[0].expect.error: must be an error code name" },
	{ HEAD "\"late_nodes\": [{\"node\": 0, \"start_ns\": 5000000}], "
	  STEP(SEND0 "}, {\"from\": 0, \"to\": 1, \"name\": \"u\", \"dead\": true, \"dtype\": \"int32\"}", RECV0),
	  "$.late_nodes: node 0 starts at 5000000 ns but publishes 't' of step 1 at 0 ns" },
};

START_TEST(test_scenario_refused)
{
	check_bad(bad_rv, sizeof(bad_rv) / sizeof(bad_rv[0]), "rv");
}
END_TEST

/* ---- the shrinker's edits, applied by hand ------------------------------------- */

static const struct tv_tb_shrink_edit *edit_named(const char *what)
{
	for (size_t i = 0; i < RV_NEDITS; i++)
		if (!strcmp(rv_edits[i]->what, what))
			return rv_edits[i];
	ck_abort_msg("no edit '%s'", what);
	return NULL;
}

static json_t *jload(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);

	ck_assert_msg(j != NULL, "%s", je.text);
	return j;
}

static void assert_json(json_t *j, const char *want)
{
	json_t *w = jload(want);
	char *got = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);

	ck_assert_msg(json_equal(j, w), "got %s", got);
	free(got);
	json_decref(w);
}

/* An error or a dead send becomes one plain byte; placement and memory go. */
START_TEST(test_shrink_send_simpler)
{
	const struct tv_tb_shrink_edit *e = edit_named("simplify a send");
	struct tv_tb_shrink_state cur = { .ops = 2 };
	json_t *sc = jload("{\"nodes\": 2, \"steps\": [{\"sends\": ["
		"{\"from\": 0, \"to\": 1, \"name\": \"a\", \"error\": {\"code\": \"NOT_FOUND\"}},"
		"{\"from\": 0, \"to\": 1, \"name\": \"b\", \"dtype\": \"float\", \"shape\": [4],"
		" \"placement\": \"device\"},"
		"{\"from\": 0, \"to\": 1, \"name\": \"c\", \"dtype\": \"float\", \"dead\": true}]}]}");

	/* send 0, case 4: the error goes. */
	ck_assert_int_eq(e->fn(sc, 0 * 6 + 4, &cur), 0);
	/* send 1, case 4: neither error nor dead. */
	ck_assert_int_eq(e->fn(sc, 1 * 6 + 4, &cur), -EAGAIN);
	/* send 1, case 3: the placement goes; then nothing is left to drop. */
	ck_assert_int_eq(e->fn(sc, 1 * 6 + 3, &cur), 0);
	ck_assert_int_eq(e->fn(sc, 1 * 6 + 3, &cur), -EAGAIN);
	/* send 2, case 4: dead goes. */
	ck_assert_int_eq(e->fn(sc, 2 * 6 + 4, &cur), 0);
	/* send 2, case 0: a shape of one element halves to itself? */
	ck_assert_int_eq(e->fn(sc, 3 * 6, &cur), -ENOENT);
	assert_json(sc, "{\"nodes\": 2, \"steps\": [{\"sends\": ["
		"{\"from\": 0, \"to\": 1, \"name\": \"a\", \"dtype\": \"uint8\", \"shape\": [1]},"
		"{\"from\": 0, \"to\": 1, \"name\": \"b\", \"dtype\": \"float\", \"shape\": [4]},"
		"{\"from\": 0, \"to\": 1, \"name\": \"c\", \"dtype\": \"uint8\", \"shape\": [1]}]}]}");
	json_decref(sc);
}
END_TEST

/* A node only a recv names (no send) is still in use: not dropped. */
START_TEST(test_shrink_drop_node_recv_only)
{
	const struct tv_tb_shrink_edit *e = edit_named("drop a node");
	struct tv_tb_shrink_state cur = { .ops = 1 };
	json_t *sc = jload("{\"nodes\": 4, \"steps\": [{\"sends\": ["
		"{\"from\": 0, \"to\": 1, \"name\": \"a\", \"dtype\": \"float\", \"shape\": [4]}],"
		" \"recvs\": [{\"node\": 3, \"from\": 0, \"name\": \"a\"}]}],"
		" \"links\": [{\"from\": 2, \"to\": 3}, {\"from\": 0, \"to\": 3}]}");

	ck_assert_int_eq(e->fn(sc, 3, &cur), -EAGAIN);
	ck_assert_int_eq(e->fn(sc, 4, &cur), -ENOENT);
	/* Node 2 is unused: it goes, its link with it, 3 becomes 2. */
	ck_assert_int_eq(e->fn(sc, 2, &cur), 0);
	assert_json(sc, "{\"nodes\": 3, \"steps\": [{\"sends\": ["
		"{\"from\": 0, \"to\": 1, \"name\": \"a\", \"dtype\": \"float\", \"shape\": [4]}],"
		" \"recvs\": [{\"node\": 2, \"from\": 0, \"name\": \"a\"}]}],"
		" \"links\": [{\"from\": 0, \"to\": 2}]}");
	json_decref(sc);
}
END_TEST

/* ---- the swarm's generator -------------------------------------------------- */

/* Every scenario the generator draws is one the loader takes. */
START_TEST(test_swarm_gen_valid)
{
	for (uint64_t seed = 0; seed < 100; seed++) {
		struct tv_tb_scenario *sc = NULL;
		char err[TV_TB_ERR_MAX];
		json_t *j = NULL;
		char *text;

		ck_assert_int_eq(rv_generate(seed, 0, &j), 0);
		ck_assert_ptr_nonnull(json_object_get(j, "steps"));
		text = json_dumps(j, 0);
		ck_assert_ptr_nonnull(text);
		ck_assert_msg(tv_tb_scenario_load_string(text, "gen", &sc, err) == 0,
			      "seed %" PRIu64 ": %s", seed, err);
		tv_tb_scenario_free(sc);
		free(text);
		json_decref(j);
	}
}
END_TEST

/* ---- added: trace lines, outcome rule arms, drop edits, late + crash ------ */

/*
 * An engine event of a kind the trace has no name for is recorded under
 * its number; a RECV_DONE whose code is out of range, and any other kind
 * with a code, record the code as a number.
 */
START_TEST(test_trace_unknown_kind)
{
	char path[] = "/tmp/tv_rv_cov_traceXXXXXX";
	struct tv_tb_scenario *sc;
	struct tv_tb_trace *tr;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char err[TV_TB_ERR_MAX], line[65536];
	size_t n77 = 0, nneg = 0;
	FILE *f;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_msg(tv_tb_scenario_load_string(basic, "cov", &sc, err) == 0,
		      "%s", err);
	ck_assert_int_eq(tv_tb_trace_create(path, sc, NULL, 1, NULL, &tr), 0);
	tv_tb_run_opts_init(&o, sc);
	o.seed = 1;
	o.trace = tr;
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	ck_assert_uint_eq(tv_tb_run_failures(run)->count, 0);
	{
		struct tv_engine_event ev = {
			.kind = (enum tv_engine_event_kind)77, .node = 0,
			.peer = 1, .code = 5, .length = 3,
		};

		rv_trace_engine_event(run, &ev);
		ev.kind = TV_EV_RECV_DONE;
		ev.code = -1;
		ev.name = "neg";
		rv_trace_engine_event(run, &ev);
		ev.code = TV_CODE_MAX + 1;
		rv_trace_engine_event(run, &ev);
	}
	ck_assert_int_eq(tv_tb_trace_finish(tr, run), 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);

	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		json_error_t je;
		json_t *j = json_loads(line, 0, &je), *k;

		ck_assert_msg(j != NULL, "%s", je.text);
		k = json_object_get(j, "kind");
		if (json_is_string(k) && !strcmp(json_string_value(k), "77")) {
			n77++;
			ck_assert_str_eq(json_string_value(json_object_get(j, "src")),
					 "engine");
			ck_assert_int_eq(json_integer_value(json_object_get(j, "code")), 5);
			ck_assert_int_eq(json_integer_value(json_object_get(j, "idx")), 0);
			ck_assert(json_is_null(json_object_get(j, "msg")));
			ck_assert(json_is_null(json_object_get(j, "off")));
		}
		if (json_is_string(json_object_get(j, "name")) &&
		    !strcmp(json_string_value(json_object_get(j, "name")), "neg")) {
			ck_assert(json_is_integer(json_object_get(j, "code")));
			ck_assert_int_eq(json_integer_value(json_object_get(j, "code")),
					 nneg ? TV_CODE_MAX + 1 : -1);
			nneg++;
		}
		json_decref(j);
	}
	fclose(f);
	unlink(path);
	ck_assert_uint_eq(n77, 1);
	ck_assert_uint_eq(nneg, 2);
}
END_TEST

/*
 * Receives that fail with what the sender published, where the outcome
 * rule's other excuses are looked at and do not apply: DEADLINE_EXCEEDED
 * with no receive deadline (not too late), RESOURCE_EXHAUSTED naming
 * max_recv_bytes or not while a limit is set (published errors are not
 * over the limit), NOT_FOUND with no message.  None is a failure.
 */
START_TEST(test_run_published_error_excuses)
{
	static const char text[] =
		"{\"nodes\": 2, \"engine\": {\"max_recv_bytes\": 64, \"recv_timeout_ns\": 0},"
		" \"steps\": [{\"sends\": ["
		" {\"from\": 0, \"to\": 1, \"name\": \"d\", \"error\": {\"code\": \"DEADLINE_EXCEEDED\", \"message\": \"slow\"}},"
		" {\"from\": 0, \"to\": 1, \"name\": \"m\", \"error\": {\"code\": \"RESOURCE_EXHAUSTED\", \"message\": \"over max_recv_bytes\"}},"
		" {\"from\": 0, \"to\": 1, \"name\": \"r\", \"error\": {\"code\": \"RESOURCE_EXHAUSTED\", \"message\": \"full\"}},"
		" {\"from\": 0, \"to\": 1, \"name\": \"n\", \"error\": {\"code\": \"NOT_FOUND\"}},"
		" {\"from\": 0, \"to\": 1, \"name\": \"k\", \"dtype\": \"float\", \"shape\": [4]}],"
		" \"recvs\": ["
		" {\"node\": 1, \"from\": 0, \"name\": \"d\", \"expect\": {\"error\": \"DEADLINE_EXCEEDED\", \"message\": \"slow\"}},"
		" {\"node\": 1, \"from\": 0, \"name\": \"m\", \"expect\": {\"error\": \"RESOURCE_EXHAUSTED\"}},"
		" {\"node\": 1, \"from\": 0, \"name\": \"r\", \"expect\": \"any\"},"
		" {\"node\": 1, \"from\": 0, \"name\": \"n\", \"expect\": {\"error\": \"NOT_FOUND\"}},"
		" {\"node\": 1, \"from\": 0, \"name\": \"k\"}]}]}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(text, 9, NULL, &sc);

	ck_assert_msg(tv_tb_run_failures(run)->count == 0, "%s",
		      tv_tb_run_failures(run)->msgs[0]);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_failed, 4);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 1);
	ck_assert_str_eq(tv_tb_run_outcome(run), "PASS");
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/*
 * A string tensor over max_recv_bytes: the engine refuses it, and the
 * runner takes the engine's word for a string's size.  A string expected
 * with another length is an EXPECT failure.
 */
START_TEST(test_run_string_over_limit)
{
	static const char text[] =
		"{\"nodes\": 2, \"engine\": {\"max_recv_bytes\": 32},"
		" \"steps\": [{\"sends\": ["
		" {\"from\": 0, \"to\": 1, \"name\": \"s\", \"dtype\": \"string\", \"shape\": [2],"
		" \"strings\": [\"0123456789abcdef0123456789abcdef\", \"0123456789abcdef0123456789abcdef\"]},"
		" {\"from\": 0, \"to\": 1, \"name\": \"u\", \"dtype\": \"string\", \"shape\": [1], \"strings\": [\"ab\"]}],"
		" \"recvs\": ["
		" {\"node\": 1, \"from\": 0, \"name\": \"s\", \"expect\": {\"error\": \"RESOURCE_EXHAUSTED\", \"message\": \"max_recv_bytes\"}},"
		" {\"node\": 1, \"from\": 0, \"name\": \"u\", \"expect\": {\"strings\": [\"abc\"]}}]}]}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(text, 4, NULL, &sc);
	const struct tv_tb_failures *f = tv_tb_run_failures(run);

	ck_assert_msg(f->count == 1, "%zu: %s", (size_t)f->count, f->msgs[0]);
	ck_assert_int_eq(f->first, TV_TB_FK_EXPECT);
	ck_assert_uint_eq(run_fails_with(run,
		"recv 'u' from node 0: string element 0 differs from the expected \"abc\""), 1);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_failed, 1);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* A recv with no send of its own goes alone; blocks past the halves. */
START_TEST(test_shrink_drop_unmatched_and_blocks)
{
	const struct tv_tb_shrink_edit *tr = edit_named("drop a transfer");
	const struct tv_tb_shrink_edit *bl = edit_named("drop a block of transfers");
	struct tv_tb_shrink_state cur = { .ops = 6 };
	json_t *sc = jload("{\"nodes\": 2, \"steps\": [{\"sends\": ["
		"{\"from\": 0, \"to\": 1, \"name\": \"a\"}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"x\"},"
		" {\"node\": 1, \"from\": 1, \"name\": \"a\"},"
		" {\"node\": 1, \"from\": 0, \"name\": \"a\"}]}]}");

	/* Recv 0 ('x'): no send of that name; recv 1: another sender. */
	ck_assert_int_eq(tr->fn(sc, 0, &cur), 0);
	ck_assert_int_eq(tr->fn(sc, 0, &cur), 0);
	assert_json(sc, "{\"nodes\": 2, \"steps\": [{\"sends\": ["
		"{\"from\": 0, \"to\": 1, \"name\": \"a\"}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"a\"}]}]}");
	json_decref(sc);

	/* Eight unasked sends: halves of 4 (places 0, 1), then pairs (2..5). */
	sc = jload("{\"nodes\": 2, \"steps\": [{\"sends\": ["
		"{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"c\"}, {\"name\": \"d\"},"
		" {\"name\": \"e\"}, {\"name\": \"f\"}, {\"name\": \"g\"}, {\"name\": \"h\"}]}]}");
	ck_assert_int_eq(bl->fn(sc, 6, &cur), -ENOENT);
	ck_assert_int_eq(bl->fn(sc, 3, &cur), 0);      /* pair 1: c, d */
	assert_json(sc, "{\"nodes\": 2, \"steps\": [{\"sends\": ["
		"{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"e\"},"
		" {\"name\": \"f\"}, {\"name\": \"g\"}, {\"name\": \"h\"}]}]}");
	/* Six left: halves of 3 only (3 / 2 is no pair); place 2 is past. */
	ck_assert_int_eq(bl->fn(sc, 2, &cur), -ENOENT);
	ck_assert_int_eq(bl->fn(sc, 1, &cur), 0);
	assert_json(sc, "{\"nodes\": 2, \"steps\": [{\"sends\": ["
		"{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"e\"}]}]}");
	json_decref(sc);
	/* Five: halves of 2 in three blocks, the last one short. */
	sc = jload("{\"nodes\": 2, \"steps\": [{\"sends\": ["
		"{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"c\"},"
		" {\"name\": \"d\"}, {\"name\": \"e\"}]}]}");
	ck_assert_int_eq(bl->fn(sc, 2, &cur), 0);
	assert_json(sc, "{\"nodes\": 2, \"steps\": [{\"sends\": ["
		"{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"c\"}, {\"name\": \"d\"}]}]}");
	json_decref(sc);
}
END_TEST

/*
 * node/crash on the early node of a late pair before the late node
 * starts (at 5 ms).  Restarted after the start (arg 10 ms): the late
 * connect finds it down and leaves the pair to the restart, which
 * connects it.  Restarted before (2 ms): the restart leaves the pair (not
 * due yet) to the late connect.  Restarted at the very start (4.9 ms).
 * The early node either way round (late node 1, or 0).  Every variant:
 * the crashed receive is skipped, and the next step goes through.
 */
START_TEST(test_crash_late_pair)
{
	static const struct { unsigned late; unsigned long arg; } v[] = {
		{ 1, 10000000 }, { 1, 2000000 }, { 0, 10000000 }, { 0, 2000000 },
		{ 1, 4900000 }, { 0, 4900000 },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		unsigned late = v[i].late, early = 1 - late;
		char text[2048];
		struct tv_tb_scenario *sc;
		struct tv_tb_run *run;
		const struct tv_tb_result *res;

		snprintf(text, sizeof(text),
			"{\"nodes\": 2, \"engine\": {\"queue_depth\": 8, \"recv_timeout_ns\": 50000000},"
			" \"late_nodes\": [{\"node\": %u, \"start_ns\": 5000000}],"
			" \"faults\": [{\"point\": \"node/crash\", \"after_ns\": 100000, \"count\": 1, \"arg\": %lu}],"
			" \"steps\": [{\"sends\": [{\"from\": %u, \"to\": %u, \"name\": \"a\", \"dtype\": \"float\", \"shape\": [4], \"at_ns\": 5000000}],"
			" \"recvs\": [{\"node\": %u, \"from\": %u, \"name\": \"a\", \"at_ns\": 100000, \"expect\": \"any\"}]},"
			" {\"at_ns\": 30000000, \"sends\": [{\"from\": %u, \"to\": %u, \"name\": \"b\", \"dtype\": \"float\", \"shape\": [4]},"
			" {\"from\": %u, \"to\": %u, \"name\": \"c\", \"dtype\": \"int32\", \"shape\": [2]}],"
			" \"recvs\": [{\"node\": %u, \"from\": %u, \"name\": \"b\"}, {\"node\": %u, \"from\": %u, \"name\": \"c\"}]}],"
			" \"expect_faults\": {\"node/crash\": 1}}",
			late, v[i].arg, late, early, early, late,
			late, early, early, late, early, late, late, early);
		run = run_scenario_text(text, 3, NULL, &sc);
		res = tv_tb_run_result(run);
		ck_assert_msg(tv_tb_run_failures(run)->count == 0, "%zu: %s", i,
			      tv_tb_run_failures(run)->msgs[0]);
		ck_assert_uint_eq(res->ops_ok, 2);
		ck_assert_uint_eq(res->ops_failed, 0);
		ck_assert_str_eq(tv_tb_run_outcome(run), "PASS");
		tv_tb_run_free(run);
		tv_tb_scenario_free(sc);
	}
}
END_TEST

/*
 * The simpler-send edits that do not apply (no shape, strings, already
 * bytes, no dtype), the world's sim and queue depth edits, the re-aiming
 * edits past 16 transfers, and a node dropped with keys that are not
 * numbers, a recv naming the node only as its sender, late nodes and
 * per-node stats.
 */
START_TEST(test_shrink_edit_edges)
{
	const struct tv_tb_shrink_edit *se = edit_named("simplify a send");
	const struct tv_tb_shrink_edit *w = edit_named("simplify the world");
	const struct tv_tb_shrink_edit *ra = edit_named("drop a transfer, aim the fault anew");
	const struct tv_tb_shrink_edit *dr = edit_named("drop a transfer with a fault rule");
	const struct tv_tb_shrink_edit *dn = edit_named("drop a node");
	struct tv_tb_shrink_state cur = { .ops = 4 }, many = { .ops = 17 };
	json_t *sc = jload("{\"nodes\": 2, \"steps\": [{\"sends\": ["
		"{\"from\": 0, \"to\": 1, \"name\": \"a\", \"dtype\": \"float\"},"
		"{\"from\": 0, \"to\": 1, \"name\": \"b\", \"dtype\": \"string\", \"shape\": [1], \"strings\": [\"x\"]},"
		"{\"from\": 0, \"to\": 1, \"name\": \"c\", \"dtype\": \"uint8\", \"shape\": [2]},"
		"{\"from\": 0, \"to\": 1, \"name\": \"d\", \"shape\": [2]}]}]}");

	ck_assert_int_eq(se->fn(sc, 0 * 6 + 0, &cur), -EAGAIN);
	ck_assert_int_eq(se->fn(sc, 0 * 6 + 1, &cur), -EAGAIN);
	ck_assert_int_eq(se->fn(sc, 1 * 6 + 0, &cur), -EAGAIN);
	ck_assert_int_eq(se->fn(sc, 1 * 6 + 1, &cur), -EAGAIN);
	ck_assert_int_eq(se->fn(sc, 2 * 6 + 2, &cur), -EAGAIN);
	ck_assert_int_eq(se->fn(sc, 3 * 6 + 2, &cur), -EAGAIN);
	ck_assert_int_eq(se->fn(sc, 1 * 6 + 2, &cur), 0);
	assert_json(sc, "{\"nodes\": 2, \"steps\": [{\"sends\": ["
		"{\"from\": 0, \"to\": 1, \"name\": \"a\", \"dtype\": \"float\"},"
		"{\"from\": 0, \"to\": 1, \"name\": \"b\", \"dtype\": \"uint8\", \"shape\": [1]},"
		"{\"from\": 0, \"to\": 1, \"name\": \"c\", \"dtype\": \"uint8\", \"shape\": [2]},"
		"{\"from\": 0, \"to\": 1, \"name\": \"d\", \"shape\": [2]}]}]}");
	json_decref(sc);

	/* Places 11 (sim.jitter_ns_max) and 12 (queue_depth 4); 13 is past. */
	sc = jload("{\"nodes\": 2, \"sim\": {\"jitter_ns_max\": 5, \"profile\": \"rxe\"},"
		   " \"engine\": {\"queue_depth\": 16}, \"steps\": [],"
		   " \"faults\": [{\"point\": \"vf/ack/drop\", \"nth\": 3, \"count\": 1}]}");
	ck_assert_int_eq(w->fn(sc, 11, &cur), 0);
	ck_assert_int_eq(w->fn(sc, 11, &cur), -EAGAIN);
	ck_assert_int_eq(w->fn(sc, 12, &cur), 0);
	ck_assert_int_eq(w->fn(sc, 12, &cur), -EAGAIN);
	ck_assert_int_eq(w->fn(sc, 13, &cur), -ENOENT);
	/* More than 16 transfers: no re-aiming, no rule dropped with one. */
	ck_assert_int_eq(ra->fn(sc, 0, &many), -ENOENT);
	ck_assert_int_eq(dr->fn(sc, 0, &many), -ENOENT);
	assert_json(sc, "{\"nodes\": 2, \"sim\": {\"profile\": \"rxe\"},"
		    " \"engine\": {\"queue_depth\": 4}, \"steps\": [],"
		    " \"faults\": [{\"point\": \"vf/ack/drop\", \"nth\": 3, \"count\": 1}]}");
	json_decref(sc);
	/* An engine with no queue_depth gets one of 4. */
	sc = jload("{\"nodes\": 2, \"engine\": {}}");
	ck_assert_int_eq(w->fn(sc, 12, &cur), 0);
	assert_json(sc, "{\"nodes\": 2, \"engine\": {\"queue_depth\": 4}}");
	json_decref(sc);

	sc = jload("{\"nodes\": 4, \"steps\": [{\"sends\": ["
		"{\"from\": 0, \"to\": 1, \"name\": \"a\"},"
		"{\"from\": 0, \"to\": \"z\", \"name\": \"c\"}],"
		" \"recvs\": [{\"node\": 1, \"from\": 3, \"name\": \"b\"}]}],"
		" \"links\": [{\"from\": 0, \"to\": 3}, {\"from\": 2, \"to\": 1}],"
		" \"late_nodes\": [{\"node\": 3, \"start_ns\": 5}],"
		" \"expect_stats\": [{\"node\": 2, \"recvs_ok\": 1}, {\"recvs_ok\": 2}]}");
	ck_assert_int_eq(dn->fn(sc, 3, &cur), -EAGAIN);   /* a recv's sender */
	ck_assert_int_eq(dn->fn(sc, 2, &cur), 0);
	assert_json(sc, "{\"nodes\": 3, \"steps\": [{\"sends\": ["
		"{\"from\": 0, \"to\": 1, \"name\": \"a\"},"
		"{\"from\": 0, \"to\": \"z\", \"name\": \"c\"}],"
		" \"recvs\": [{\"node\": 1, \"from\": 2, \"name\": \"b\"}]}],"
		" \"links\": [{\"from\": 0, \"to\": 2}],"
		" \"late_nodes\": [{\"node\": 2, \"start_ns\": 5}],"
		" \"expect_stats\": [{\"recvs_ok\": 2}]}");
	json_decref(sc);
}
END_TEST

/*
 * engine/alloc at the instant an unregistered send wraps its memory: the
 * wrap fails, the runner frees the buffer it made, and the send is
 * refused (counted under faults, not a failure); its receive fails by its
 * deadline, excused by the fault.
 */
START_TEST(test_run_unregistered_wrap_fails)
{
	static const char text[] =
		"{\"nodes\": 2, \"engine\": {\"recv_timeout_ns\": 5000000},"
		" \"faults\": [{\"point\": \"engine/alloc\", \"after_ns\": 1000000, \"before_ns\": 1000001, \"count\": 1}],"
		" \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"u\", \"dtype\": \"int32\", \"shape\": [16],"
		" \"memory\": \"unregistered\", \"at_ns\": 1000000}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"u\", \"expect\": {\"error\": \"DEADLINE_EXCEEDED\"}}]}],"
		" \"expect_faults\": {\"engine/alloc\": 1}}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(text, 2, NULL, &sc);
	const struct tv_tb_result *res = tv_tb_run_result(run);

	ck_assert_msg(tv_tb_run_failures(run)->count == 0, "%s",
		      tv_tb_run_failures(run)->msgs[0]);
	ck_assert_uint_eq(res->refused, 1);
	ck_assert_uint_eq(res->ops_failed, 1);
	ck_assert_uint_eq(res->ops_ok, 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- a misbehaving world: hooks around the workload's ops ---------------- */

/*
 * The runner exists to catch an engine (or its own bookkeeping) breaking
 * a contract.  A correct engine never does, so these tests run the real
 * workload through a copy of its ops table with hooks around set-up,
 * crash and teardown: at a chosen virtual time the hook plays the broken
 * engine (a done callback called again, or with the wrong arguments; a
 * tensor reference the engine never gives back), and the test asserts
 * the runner's verdict.  Check runs each test in a process of its own, so
 * the hook state is a plain static.
 */
struct hook {
	void (*at)(struct runner *r);       /* once, at at_ns on node */
	uint64_t at_ns;
	uint32_t node;
	/* Around rv_node_crash and rv_teardown (NULL: nothing). */
	void (*crash)(struct runner *r, uint32_t node);
	void (*after_crash)(struct runner *r, uint32_t node);
	void (*teardown)(struct runner *r);
	void (*after_teardown)(struct runner *r);
	unsigned crashes;
	struct tv_tensor *held[2];           /* references kept on purpose */
	struct tv_engine *eng[2];            /* the engines they pin */
	bool fired;
};

static struct hook hk;
static struct tv_tb_workload_ops hook_ops;

static void hook_at_cb(void *arg)
{
	hk.fired = true;
	hk.at(arg);
}

static int hook_setup(struct tv_tb_run *run, void **state_p)
{
	int rc = rv_setup(run, state_p);

	if (!rc && hk.at)
		rc = tv_tb_run_schedule(run, hk.at_ns, hk.node, hook_at_cb,
					*state_p);
	return rc;
}

static void hook_crash(struct tv_tb_run *run, void *st, uint32_t node)
{
	if (hk.crash)
		hk.crash(st, node);
	rv_node_crash(run, st, node);
	if (hk.after_crash)
		hk.after_crash(st, node);
	hk.crashes++;
}

static void hook_teardown(struct tv_tb_run *run, void *st)
{
	if (hk.teardown)
		hk.teardown(st);
	rv_teardown(run, st);
	if (hk.after_teardown)
		hk.after_teardown(st);
}

/* text run with seed through the hooked ops (hk set by the caller). */
static struct tv_tb_run *hook_run(const char *text, uint64_t seed,
				  struct tv_tb_scenario **sc_p)
{
	hook_ops = tv_rendezvous_workload;
	hook_ops.setup = hook_setup;
	hook_ops.node_crash = hook_crash;
	hook_ops.teardown = hook_teardown;
	return run_scenario_ops(text, seed, &hook_ops, sc_p);
}

/* A host or device tensor of n floats on node's engine (one reference). */
static struct tv_tensor *floats(struct runner *r, uint32_t node, int64_t n,
				enum tv_placement place)
{
	struct tv_shape shape = { .rank = 1, .dims = { n } };
	struct tv_tensor *t = NULL;

	ck_assert_int_eq(tv_tensor_create(r->nodes[node].engine, TV_DT_FLOAT,
					  &shape, place, &t), 0);
	return t;
}

/* The recv of `name` in the scenario: its slot. */
static struct recv_slot *slot_of(struct runner *r, const char *name)
{
	for (size_t i = 0; i < r->sc->nrecvs; i++)
		if (!strcmp(r->sc->recvs[i].name, name))
			return &r->recvs[i];
	ck_abort_msg("no recv '%s'", name);
	return NULL;
}

/* The engine's live request on node's channel from peer (the only one). */
static struct tv_request *live_request(struct runner *r, uint32_t node,
				       uint32_t peer)
{
	struct tv_channel *ch = tv_engine_channel(r->nodes[node].engine, peer);

	ck_assert_ptr_nonnull(ch);
	for (uint32_t i = 0; i <= TV_IMM_MAX_REQUEST; i++) {
		struct tv_request *req = tv__request_find(ch, i);

		if (req)
			return req;
	}
	ck_abort_msg("no live request on node %u from %u", node, peer);
	return NULL;
}

/*
 * At 2 ms: recv 't' (node 1, issued at 0) waits for a send due at 5 ms.
 * Its request holds the runner's done callback; the hook calls it as a
 * broken engine would, on 't' and on slots whose receives are not issued
 * until 10 ms.  Every later real completion is a second call.
 */
static void break_callbacks(struct runner *r)
{
	struct tv_request *req = live_request(r, 1, 0);
	tv_recv_done_fn done = req->done;
	struct tv_status ok, nf;

	ck_assert_ptr_eq(req->arg, slot_of(r, "t"));
	tv_status_ok(&ok);
	tv_status_set(&nf, TV_NOT_FOUND, "broken");
	/* 't': OK with no tensor. */
	done(req->arg, &ok, NULL);
	/* 'q': an error status that comes with a tensor. */
	done(slot_of(r, "q"), &nf, floats(r, 1, 4, TV_PLACE_HOST));
	/* 'e': a tensor, although its sender published an error. */
	done(slot_of(r, "e"), &ok, floats(r, 1, 4, TV_PLACE_HOST));
	/* 'u': a tensor before its sender published anything (5 ms). */
	done(slot_of(r, "u"), &ok, floats(r, 1, 4, TV_PLACE_HOST));
	/* 'p': the published dtype and shape, but on the device. */
	done(slot_of(r, "p"), &ok, floats(r, 1, 4, TV_PLACE_DEVICE));
}

START_TEST(test_recv_callback_contract)
{
	static const char text[] =
		"{\"nodes\": 2, \"engine\": {\"recv_timeout_ns\": 0}, \"steps\": [{\"sends\": ["
		" {\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [4], \"at_ns\": 5000000},"
		" {\"from\": 0, \"to\": 1, \"name\": \"u\", \"dtype\": \"float\", \"shape\": [4], \"at_ns\": 5000000},"
		" {\"from\": 0, \"to\": 1, \"name\": \"q\", \"dtype\": \"float\", \"shape\": [4]},"
		" {\"from\": 0, \"to\": 1, \"name\": \"p\", \"dtype\": \"float\", \"shape\": [4]},"
		" {\"from\": 0, \"to\": 1, \"name\": \"e\", \"error\": {\"code\": \"NOT_FOUND\", \"message\": \"no\"}}],"
		" \"recvs\": ["
		" {\"node\": 1, \"from\": 0, \"name\": \"t\"},"
		" {\"node\": 1, \"from\": 0, \"name\": \"u\", \"at_ns\": 10000000},"
		" {\"node\": 1, \"from\": 0, \"name\": \"q\", \"at_ns\": 10000000},"
		" {\"node\": 1, \"from\": 0, \"name\": \"p\", \"at_ns\": 10000000},"
		" {\"node\": 1, \"from\": 0, \"name\": \"e\", \"at_ns\": 10000000, \"expect\": \"any\"}]}]}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	const struct tv_tb_failures *f;

	memset(&hk, 0, sizeof(hk));
	hk.at = break_callbacks;
	hk.at_ns = 2000000;
	hk.node = 1;
	run = hook_run(text, 1, &sc);
	f = tv_tb_run_failures(run);
	ck_assert(hk.fired);
	ck_assert_uint_eq(f->count, 12);
	ck_assert_int_eq(f->first, TV_TB_FK_CALLBACK);
	ck_assert_str_eq(f->msgs[0],
		"step 1: node 1 recv 't' from node 0: OK status without a tensor");
	ck_assert_str_eq(f->msgs[1],
		"step 1: node 1 recv 'q' from node 0: error status with a tensor");
	/* The status is still held to the expectation (ok). */
	ck_assert_str_eq(f->msgs[2],
		"step 1: node 1 recv 'q' from node 0: expected ok, got NOT_FOUND: broken");
	ck_assert_int_eq(f->msg_kinds[2], TV_TB_FK_EXPECT);
	ck_assert_str_eq(f->msgs[3],
		"step 1: node 1 recv 'e' from node 0: got a tensor, but the sender published an error");
	ck_assert_str_eq(f->msgs[4],
		"step 1: node 1 recv 'u' from node 0: got a tensor, but the sender has not published yet");
	ck_assert_str_eq(f->msgs[5],
		"step 1: node 1 recv 'p' from node 0: placement device, asked for host");
	for (int i = 3; i <= 5; i++)
		ck_assert_int_eq(f->msg_kinds[i], TV_TB_FK_DATA);
	/* The real completions: a second call each, with its own status. */
	ck_assert_uint_eq(run_fails_with(run, "done callback ran 2 times"), 5);
	ck_assert_uint_eq(run_fails_with(run,
		"invariant: step 1: node 1 recv 't' from node 0: done callback ran 2 times (status OK)"), 1);
	ck_assert_uint_eq(run_fails_with(run,
		"recv 'e' from node 0: done callback ran 2 times (status NOT_FOUND)"), 1);
	/* 'q' failed (first call): the outcome rule finds no excuse. */
	ck_assert_str_eq(f->msgs[11],
		"invariant: step 1: node 1 recv 'q' from node 0: failed with NOT_FOUND \"broken\" although the sender published a tensor and no fault fired");
	ck_assert_int_eq(f->msg_kinds[11], TV_TB_FK_OUTCOME);
	/* Counted by the first calls only: e, u, p ok; q failed. */
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 3);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_failed, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* A tensor of dtype and n elements on node 1's engine, bytes set to fill. */
static struct tv_tensor *tensor1(struct runner *r, enum tv_dtype dtype,
				 int64_t n, uint8_t fill)
{
	struct tv_shape shape = { .rank = 1, .dims = { n } };
	struct tv_tensor *t = NULL;

	ck_assert_int_eq(tv_tensor_create(r->nodes[1].engine, dtype, &shape,
					  TV_PLACE_HOST, &t), 0);
	memset(tv_tensor_data(t), fill, tv_tensor_size_bytes(t));
	return t;
}

/*
 * At 2 ms every send but 't' is published; the hook answers their
 * receives (issued at 10 ms) as a broken engine would: a tensor that is
 * not what was published (dtype, shape, deadness, bytes), a limit error
 * for a dead tensor, and the published error code with another message.
 */
static void break_verdicts(struct runner *r)
{
	tv_recv_done_fn done = live_request(r, 1, 0)->done;
	struct tv_tensor *dead = NULL;
	struct tv_status st;

	done(slot_of(r, "d"), &(struct tv_status){ .code = TV_OK },
	     tensor1(r, TV_DT_INT32, 4, 0));
	done(slot_of(r, "s"), &(struct tv_status){ .code = TV_OK },
	     tensor1(r, TV_DT_FLOAT, 3, 0));
	ck_assert_int_eq(tv_tensor_create_dead(r->nodes[1].engine,
					       TV_DT_FLOAT, &dead), 0);
	done(slot_of(r, "z"), &(struct tv_status){ .code = TV_OK }, dead);
	done(slot_of(r, "c"), &(struct tv_status){ .code = TV_OK },
	     tensor1(r, TV_DT_FLOAT, 4, 0xab));
	/* Over max_recv_bytes, says it: but a dead tensor has no bytes. */
	tv_status_set(&st, TV_RESOURCE_EXHAUSTED, "over max_recv_bytes");
	done(slot_of(r, "x"), &st, NULL);
	/* NOT_FOUND as published, but with a message the sender never had. */
	tv_status_set(&st, TV_NOT_FOUND, "other");
	done(slot_of(r, "n"), &st, NULL);
}

START_TEST(test_recv_callback_verdicts)
{
	static const char text[] =
		"{\"nodes\": 2, \"engine\": {\"recv_timeout_ns\": 0, \"max_recv_bytes\": 1024},"
		" \"steps\": [{\"sends\": ["
		" {\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [4], \"at_ns\": 5000000},"
		" {\"from\": 0, \"to\": 1, \"name\": \"d\", \"dtype\": \"float\", \"shape\": [4]},"
		" {\"from\": 0, \"to\": 1, \"name\": \"s\", \"dtype\": \"float\", \"shape\": [4]},"
		" {\"from\": 0, \"to\": 1, \"name\": \"z\", \"dtype\": \"float\", \"shape\": [4]},"
		" {\"from\": 0, \"to\": 1, \"name\": \"c\", \"dtype\": \"float\", \"shape\": [4]},"
		" {\"from\": 0, \"to\": 1, \"name\": \"x\", \"dtype\": \"float\", \"dead\": true},"
		" {\"from\": 0, \"to\": 1, \"name\": \"n\", \"error\": {\"code\": \"NOT_FOUND\"}}],"
		" \"recvs\": ["
		" {\"node\": 1, \"from\": 0, \"name\": \"t\"},"
		" {\"node\": 1, \"from\": 0, \"name\": \"d\", \"at_ns\": 10000000},"
		" {\"node\": 1, \"from\": 0, \"name\": \"s\", \"at_ns\": 10000000},"
		" {\"node\": 1, \"from\": 0, \"name\": \"z\", \"at_ns\": 10000000},"
		" {\"node\": 1, \"from\": 0, \"name\": \"c\", \"at_ns\": 10000000},"
		" {\"node\": 1, \"from\": 0, \"name\": \"x\", \"at_ns\": 10000000, \"expect\": \"any\"},"
		" {\"node\": 1, \"from\": 0, \"name\": \"n\", \"at_ns\": 10000000, \"expect\": {\"error\": \"NOT_FOUND\"}}]}]}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	const struct tv_tb_failures *f;
	uint8_t bytes[4 * sizeof(float)];
	char want[256];

	memset(&hk, 0, sizeof(hk));
	hk.at = break_verdicts;
	hk.at_ns = 2000000;
	hk.node = 1;
	run = hook_run(text, 1, &sc);
	f = tv_tb_run_failures(run);
	ck_assert(hk.fired);
	ck_assert_uint_eq(f->count, 12);
	ck_assert_int_eq(f->first, TV_TB_FK_DATA);
	ck_assert_str_eq(f->msgs[0],
		"step 1: node 1 recv 'd' from node 0: dtype int32, the sender published float");
	ck_assert_str_eq(f->msgs[1],
		"step 1: node 1 recv 's' from node 0: shape [3], the sender published [4]");
	ck_assert_str_eq(f->msgs[2],
		"step 1: node 1 recv 'z' from node 0: is_dead 1, the sender published 0");
	/* No corruption point fired: a failure, without the validation note. */
	memset(bytes, 0xab, sizeof(bytes));
	snprintf(want, sizeof(want),
		 "step 1: node 1 recv 'c' from node 0: data corrupted (digest 0x%016" PRIx64 ", published 0x",
		 (uint64_t)XXH3_64bits(bytes, sizeof(bytes)));
	ck_assert_msg(!strncmp(f->msgs[3], want, strlen(want)), "%s", f->msgs[3]);
	ck_assert_ptr_null(strstr(f->msgs[3], "validation"));
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(f->msg_kinds[i], TV_TB_FK_DATA);
	ck_assert_uint_eq(run_fails_with(run, "done callback ran 2 times"), 6);
	ck_assert_str_eq(f->msgs[10],
		"invariant: step 1: node 1 recv 'x' from node 0: failed with RESOURCE_EXHAUSTED \"over max_recv_bytes\" although the sender published a tensor and no fault fired");
	ck_assert_str_eq(f->msgs[11],
		"invariant: step 1: node 1 recv 'n' from node 0: got NOT_FOUND \"other\", the sender published NOT_FOUND \"\"");
	ck_assert_int_eq(f->msg_kinds[10], TV_TB_FK_OUTCOME);
	ck_assert_int_eq(f->msg_kinds[11], TV_TB_FK_OUTCOME);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 5);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_failed, 2);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* At 2 ms: 'x' (published at 0, received from 10 ms) fails NOT_FOUND. */
static void fail_x(struct runner *r)
{
	struct tv_request *req = live_request(r, 1, 0);
	struct tv_status st;

	tv_status_set(&st, TV_NOT_FOUND, "fake");
	req->done(slot_of(r, "x"), &st, NULL);
}

/*
 * Under a fault that fired and is recoverable (one delivery 1 us late),
 * a receive of a published tensor that failed all the same, with no
 * channel failure behind it (no retry used): "not recovered".
 */
START_TEST(test_recv_fault_not_recovered)
{
	static const char text[] =
		"{\"nodes\": 2, \"faults\": [{\"point\": \"sim/deliver/delay\", \"count\": 1, \"arg\": 1000}],"
		" \"steps\": [{\"sends\": ["
		" {\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [4], \"at_ns\": 5000000},"
		" {\"from\": 0, \"to\": 1, \"name\": \"x\", \"dtype\": \"float\", \"shape\": [4]}],"
		" \"recvs\": ["
		" {\"node\": 1, \"from\": 0, \"name\": \"t\"},"
		" {\"node\": 1, \"from\": 0, \"name\": \"x\", \"at_ns\": 10000000, \"expect\": \"any\"}]}],"
		" \"expect_faults\": {\"sim/deliver/delay\": 1}}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	const struct tv_tb_failures *f;

	memset(&hk, 0, sizeof(hk));
	hk.at = fail_x;
	hk.at_ns = 2000000;
	hk.node = 1;
	run = hook_run(text, 1, &sc);
	f = tv_tb_run_failures(run);
	ck_assert(hk.fired);
	ck_assert_uint_eq(f->count, 2);
	/* The engine's real answer later is a second call. */
	ck_assert_str_eq(f->msgs[0],
		"invariant: step 1: node 1 recv 'x' from node 0: done callback ran 2 times (status OK)");
	ck_assert_str_eq(f->msgs[1],
		"invariant: step 1: node 1 recv 'x' from node 0: recoverable fault not recovered: failed with NOT_FOUND \"fake\" (1 faults fired, none unrecoverable; 0 channel failures during the receive, max_retries 3)");
	ck_assert_int_eq(f->msg_kinds[1], TV_TB_FK_OUTCOME);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_failed, 1);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/*
 * A receive that times out (1 us) right where its node starts (late, at
 * 5 ms): the tensor was published at 0, but the channel to it only came
 * up then, too late for a round trip (ack_timeout_ns 1 ms) before the
 * deadline: excused.  The same receive on a node there from the start
 * had 5 ms: an OUTCOME failure.
 */
START_TEST(test_recv_too_late_late_node)
{
	static const char fmt[] =
		"{\"nodes\": 2, \"allow_error_completions\": true,"
		" \"engine\": {\"recv_timeout_ns\": 1000, \"ack_timeout_ns\": 1000000},%s"
		" \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"a\", \"dtype\": \"float\", \"shape\": [4]}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"a\", \"at_ns\": 5000000, \"expect\": \"any\"}]}]}";
	static const char *const late[] = {
		" \"late_nodes\": [{\"node\": 1, \"start_ns\": 5000000}],", "",
	};

	for (int i = 0; i < 2; i++) {
		struct tv_tb_scenario *sc;
		struct tv_tb_run *run;
		const struct tv_tb_failures *f;
		char text[1024];

		snprintf(text, sizeof(text), fmt, late[i]);
		run = run_scenario_text(text, 2, NULL, &sc);
		f = tv_tb_run_failures(run);
		ck_assert_uint_eq(tv_tb_run_result(run)->ops_failed, 1);
		ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 0);
		if (i == 0) {
			ck_assert_msg(f->count == 0, "%s", f->msgs[0]);
		} else {
			ck_assert_uint_eq(f->count, 1);
			ck_assert_int_eq(f->first, TV_TB_FK_OUTCOME);
			ck_assert_uint_eq(run_fails_with(run,
				"invariant: step 1: node 1 recv 'a' from node 0: failed with DEADLINE_EXCEEDED"), 1);
		}
		tv_tb_run_free(run);
		tv_tb_scenario_free(sc);
	}
}
END_TEST

/*
 * node/crash of node 0 at 1 ms (its send 'a'), restarted at 3 ms; 'b' at
 * 30 ms goes through.  crashes: how many times it crashes (count).
 */
static void crash_text(char *buf, size_t cap, unsigned crashes)
{
	snprintf(buf, cap,
		"{\"nodes\": 2, \"engine\": {\"recv_timeout_ns\": 50000000},"
		" \"faults\": [{\"point\": \"node/crash\", \"after_ns\": 1000000, \"count\": %u, \"arg\": 2000000}],"
		" \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"a\", \"dtype\": \"float\", \"shape\": [4], \"at_ns\": 1000000}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"a\", \"expect\": \"any\"}]},"
		" {\"at_ns\": 10000000, \"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"c\", \"dtype\": \"float\", \"shape\": [4]}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"c\", \"at_ns\": 1000000, \"expect\": \"any\"}]},"
		" {\"at_ns\": 30000000, \"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"b\", \"dtype\": \"float\", \"shape\": [4]}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"b\"}]}],"
		" \"expect_faults\": {\"node/crash\": %u}}", crashes, crashes);
}

/* The crashing engine still has a tensor out: tv_engine_destroy -EBUSY. */
static void leak_at_crash(struct runner *r, uint32_t node)
{
	unsigned k = hk.crashes;

	ck_assert_uint_lt(k, 2);
	hk.eng[k] = r->nodes[node].engine;
	hk.held[k] = floats(r, node, 4, TV_PLACE_HOST);
}

/* Single crash: the tensor comes back before teardown frees the zombie. */
static void give_back_after_crash(struct runner *r, uint32_t node)
{
	ck_assert_ptr_eq(r->nodes[node].zombie, hk.eng[0]);
	ck_assert_ptr_null(r->nodes[node].engine);
	tv_tensor_unref(hk.held[0]);
	hk.held[0] = NULL;
}

static void zombie_gone(struct runner *r)
{
	ck_assert_ptr_null(r->nodes[0].zombie);
}

START_TEST(test_crash_destroy_busy)
{
	char text[2048];
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	const struct tv_tb_failures *f;
	const struct tv_tb_result *res;

	crash_text(text, sizeof(text), 1);
	memset(&hk, 0, sizeof(hk));
	hk.crash = leak_at_crash;
	hk.after_crash = give_back_after_crash;
	hk.after_teardown = zombie_gone;
	run = hook_run(text, 3, &sc);
	f = tv_tb_run_failures(run);
	res = tv_tb_run_result(run);
	/* Only the leak: the zombie went at teardown, no verbs object left. */
	ck_assert_uint_eq(f->count, 1);
	ck_assert_str_eq(f->msgs[0],
		"node 0 crash: tv_engine_destroy: tensors still referenced");
	ck_assert_int_eq(f->first, TV_TB_FK_LEAK);
	ck_assert_uint_eq(res->crashes, 1);
	ck_assert_uint_eq(res->restarts, 1);
	/* 'a' skipped (its node down); 'c' (expect any) and 'b' arrive. */
	ck_assert_uint_eq(res->skipped_ops, 1);
	ck_assert_uint_eq(res->ops_ok, 2);
	ck_assert_uint_eq(res->ops_failed, 1);
	ck_assert_uint_eq(hk.crashes, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/*
 * Two crashes with a tensor out each time.  The second finds a zombie
 * already: a RUNNER failure, and its engine is the test's to free.  The
 * first one's tensor is held past teardown too, so the zombie cannot go
 * there either (the other arm); the test frees both after.
 */
static void free_by_hand(struct runner *r)
{
	ck_assert_ptr_eq(r->nodes[0].zombie, hk.eng[0]);
	for (int k = 0; k < 2; k++) {
		tv_tensor_unref(hk.held[k]);
		ck_assert_int_eq(tv_engine_destroy(hk.eng[k]), 0);
	}
	r->nodes[0].zombie = NULL;
}

START_TEST(test_crash_destroy_busy_twice)
{
	char text[2048];
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	const struct tv_tb_failures *f;
	const struct tv_tb_result *res;

	crash_text(text, sizeof(text), 2);
	memset(&hk, 0, sizeof(hk));
	hk.crash = leak_at_crash;
	hk.after_teardown = free_by_hand;
	run = hook_run(text, 3, &sc);
	f = tv_tb_run_failures(run);
	res = tv_tb_run_result(run);
	ck_assert_uint_eq(f->count, 2);
	ck_assert_str_eq(f->msgs[0],
		"node 0 crash: tv_engine_destroy: tensors still referenced");
	ck_assert_int_eq(f->msg_kinds[0], TV_TB_FK_LEAK);
	ck_assert_str_eq(f->msgs[1],
		"node 0 crash: tv_engine_destroy: Device or resource busy");
	ck_assert_int_eq(f->msg_kinds[1], TV_TB_FK_RUNNER);
	ck_assert_uint_eq(res->crashes, 2);
	ck_assert_uint_eq(res->restarts, 2);
	ck_assert_uint_eq(res->skipped_ops, 2);
	ck_assert_uint_eq(res->ops_ok, 1);
	ck_assert_uint_eq(hk.crashes, 2);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* At teardown node 0's engine still has a tensor out: LEAK, by name. */
static void leak_at_teardown(struct runner *r)
{
	hk.eng[0] = r->nodes[0].engine;
	hk.held[0] = floats(r, 0, 2, TV_PLACE_HOST);
}

static void give_back_after_teardown(struct runner *r)
{
	ck_assert_ptr_null(r->nodes[0].engine);
	tv_tensor_unref(hk.held[0]);
	ck_assert_int_eq(tv_engine_destroy(hk.eng[0]), 0);
}

START_TEST(test_teardown_destroy_busy)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	const struct tv_tb_failures *f;

	memset(&hk, 0, sizeof(hk));
	hk.teardown = leak_at_teardown;
	hk.after_teardown = give_back_after_teardown;
	run = hook_run(basic, 1, &sc);
	f = tv_tb_run_failures(run);
	ck_assert_uint_eq(f->count, 1);
	ck_assert_str_eq(f->msgs[0],
		"tv_engine_destroy(node 0): Device or resource busy (tensors still referenced)");
	ck_assert_int_eq(f->first, TV_TB_FK_LEAK);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/*
 * The element count behind an unregistered send's buffer: a negative
 * dimension and a product past INT64_MAX are refused (the parser never
 * hands either over: this is the helper's own contract).
 */
START_TEST(test_scenario_num_elements)
{
	struct tv_shape neg = { .rank = 2, .dims = { 3, -1 } };
	struct tv_shape big = { .rank = 2, .dims = { INT64_MAX, 2 } };
	struct tv_shape edge = { .rank = 2, .dims = { INT64_MAX, 1 } };
	struct tv_shape ok = { .rank = 3, .dims = { 2, 3, 4 } };
	struct tv_shape scalar = { .rank = 0 };
	uint64_t n = 77;

	ck_assert_int_eq(scenario_num_elements(&neg, &n), -EINVAL);
	ck_assert_int_eq(scenario_num_elements(&big, &n), -EOVERFLOW);
	ck_assert_uint_eq(n, 77);
	ck_assert_int_eq(scenario_num_elements(&edge, &n), 0);
	ck_assert_uint_eq(n, (uint64_t)INT64_MAX);
	ck_assert_int_eq(scenario_num_elements(&ok, &n), 0);
	ck_assert_uint_eq(n, 24);
	ck_assert_int_eq(scenario_num_elements(&scalar, &n), 0);
	ck_assert_uint_eq(n, 1);
}
END_TEST

/* ---- the suite -------------------------------------------------------------- */

#define ADD(fn) do { TCase *tc = tcase_create(#fn); \
	tcase_set_timeout(tc, 120); tcase_add_test(tc, fn); \
	suite_add_tcase(s, tc); } while (0)

int main(void)
{
	Suite *s = suite_create("wl_rendezvous_cov");

	ADD(test_chk_two_in_flight);
	ADD(test_chk_stray_ack);
	ADD(test_chk_event_bad_node);
	ADD(test_chk_msg_writes);
	ADD(test_chk_tensor_writes);
	ADD(test_chk_dup_write);
	ADD(test_chk_channel_error_counted);
	ADD(test_chk_unnamed_window);
	ADD(test_helper_names);
	ADD(test_run_many_hung_recvs);
	ADD(test_run_repeat_error_message);
	ADD(test_run_error_message_differs);
	ADD(test_run_expect_mismatches);
	ADD(test_scenario_refused);
	ADD(test_shrink_send_simpler);
	ADD(test_shrink_drop_node_recv_only);
	ADD(test_swarm_gen_valid);
	ADD(test_trace_unknown_kind);
	ADD(test_run_published_error_excuses);
	ADD(test_run_string_over_limit);
	ADD(test_shrink_drop_unmatched_and_blocks);
	ADD(test_crash_late_pair);
	ADD(test_shrink_edit_edges);
	ADD(test_run_unregistered_wrap_fails);
	ADD(test_recv_callback_contract);
	ADD(test_recv_callback_verdicts);
	ADD(test_recv_too_late_late_node);
	ADD(test_recv_fault_not_recovered);
	ADD(test_crash_destroy_busy);
	ADD(test_crash_destroy_busy_twice);
	ADD(test_teardown_destroy_busy);
	ADD(test_scenario_num_elements);
	return tv_check_main(s);
}
