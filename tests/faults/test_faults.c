/*
 * Fault injection: the injector's decisions, plans, and the engine
 * surviving each fault point on the simulator (no hang, no loss, no leak).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <fiu.h>

#include "common/check_main.h"
#include "engine_int.h"
#include "harness.h"

static const int64_t d_64[] = { 64 };

/* ---- the injector ------------------------------------------------------ */

START_TEST(catalogue_is_complete)
{
	const struct tv_flt_point_info *p;
	size_t n, i, j;

	p = tv_flt_points(&n);
	ck_assert_uint_ge(n, 12);
	for (i = 0; i < n; i++) {
		ck_assert_ptr_nonnull(p[i].description);
		ck_assert_uint_gt(strlen(p[i].description), 10);
		ck_assert_ptr_eq(tv_flt_point_find(p[i].name), &p[i]);
		for (j = i + 1; j < n; j++)
			ck_assert_str_ne(p[i].name, p[j].name);
	}
	ck_assert_ptr_null(tv_flt_point_find("no/such/point"));
}
END_TEST

static uint64_t now_value;

static uint64_t fake_clock(void *ctx)
{
	return now_value;
}

/* Which of 20 hits of point fire under rule text. */
static uint32_t fire_mask(uint64_t seed, const char *plan)
{
	struct tv_flt *flt;
	char err[256];
	uint32_t mask = 0;
	int i;

	ck_assert_int_eq(tv_flt_create(seed, &flt), 0);
	ck_assert_msg(!tv_flt_plan_parse(flt, plan, err, sizeof(err)), "%s",
		      err);
	tv_flt_set_clock(flt, fake_clock, NULL);
	ck_assert_int_eq(tv_flt_activate(flt), 0);
	for (i = 0; i < 20; i++) {
		now_value = (uint64_t)i * 100;
		if (fiu_fail("vf/write/drop"))
			mask |= 1u << i;
	}
	tv_flt_destroy(flt); /* deactivates */
	ck_assert_int_eq(fiu_fail("vf/write/drop"), 0);
	return mask;
}

START_TEST(rules_nth_count_window_probability)
{
	uint32_t a, b;
	int differ = 0;
	uint64_t s;

	ck_assert_uint_eq(fire_mask(1, "vf/write/drop"), 0xFFFFF);
	ck_assert_uint_eq(fire_mask(1, "vf/write/drop:nth=3,count=2"),
			  (1u << 2) | (1u << 3));
	ck_assert_uint_eq(fire_mask(1, "vf/write/drop:after=500,before=800"),
			  (1u << 5) | (1u << 6) | (1u << 7));
	ck_assert_uint_eq(fire_mask(1, "[{\"point\": \"vf/write/drop\", "
				       "\"nth\": 20}]"), 1u << 19);
	ck_assert_uint_eq(fire_mask(1, "vf/write/drop:p=0"), 0);
	/* Same seed, same decisions; other seeds, other decisions. */
	a = fire_mask(7, "vf/write/drop:p=0.5");
	b = fire_mask(7, "vf/write/drop:p=0.5");
	ck_assert_uint_eq(a, b);
	for (s = 8; s < 16; s++)
		differ += fire_mask(s, "vf/write/drop:p=0.5") != a;
	ck_assert_int_gt(differ, 5);
}
END_TEST

START_TEST(plans_are_validated)
{
	struct tv_flt *flt;
	char err[256];

	ck_assert_int_eq(tv_flt_create(1, &flt), 0);
	ck_assert_int_eq(tv_flt_plan_parse(flt, "vf/nope", err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "unknown fault point 'vf/nope'"));
	ck_assert_int_eq(tv_flt_plan_parse(flt, "vf/ack/drop:p=2", err,
					   sizeof(err)), -EINVAL);
	ck_assert_int_eq(tv_flt_plan_parse(flt, "vf/ack/drop:nth=x", err,
					   sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "bad setting"));
	ck_assert_int_eq(tv_flt_plan_parse(flt, "vf/ack/drop:after=9,before=3",
					   err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(tv_flt_plan_parse(flt, "[{\"point\": \"vf/ack/drop\","
					   " \"often\": 1}]", err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "unknown key 'often'"));
	ck_assert_int_eq(tv_flt_plan_parse(flt, "[{\"nth\": 1}]", err,
					   sizeof(err)), -EINVAL);
	ck_assert_int_eq(tv_flt_plan_parse(flt, "[1,", err, sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(tv_flt_plan_parse(flt, "vf/ack/drop:count=1;"
					   "vf/qp/error:nth=4", err,
					   sizeof(err)), 0);
	tv_flt_destroy(flt);
}
END_TEST

/* ---- the engine under faults ------------------------------------------ */

static struct h_world *fworld(const char *plan, bool reconnect,
			      uint64_t recv_timeout_ns)
{
	struct h_opts o;
	struct h_world *w;
	char err[256];

	h_opts_default(&o);
	ck_assert_int_eq(tv_flt_create(99, &o.flt), 0);
	ck_assert_msg(!tv_flt_plan_parse(o.flt, plan, err, sizeof(err)), "%s",
		      err);
	o.reconnect = reconnect;
	o.ack_timeout_ns = 1000000; /* 1 ms of virtual time */
	o.recv_timeout_ns = recv_timeout_ns;
	w = h_world_new(&o);
	/* Faults start with the workload, not with the set-up. */
	ck_assert_int_eq(tv_flt_activate(w->flt), 0);
	return w;
}

static uint64_t fires(struct h_world *w, const char *point)
{
	struct tv_flt_point_stats st;

	ck_assert_int_eq(tv_flt_stats(w->flt, point, &st), 0);
	return st.fires;
}

/* n transfers node 0 -> node 1; returns how many came through intact. */
static int transfers(struct h_world *w, uint64_t step, int n,
		     struct h_recv *r)
{
	char name[16];
	int i, ok = 0;

	for (i = 0; i < n; i++) {
		struct tv_tensor *t = h_tensor(w, 0, TV_DT_UINT8, 1, d_64,
					       TV_PLACE_HOST, (uint8_t)(i + step));

		snprintf(name, sizeof(name), "t%d", i);
		ck_assert_int_eq(tv_engine_send(w->eng[0], step, name, t), 0);
		tv_tensor_unref(t);
		h_recv(w, 1, 0, step, name, TV_PLACE_HOST, &r[i]);
	}
	h_run(w);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(r[i].calls, 1); /* exactly once, never hung */
		if (r[i].status.code == TV_OK) {
			ck_assert(h_check_fill(r[i].tensor,
					       (uint8_t)(i + step)));
			ok++;
		}
		h_recv_release(&r[i]);
	}
	return ok;
}

START_TEST(lost_ack_without_reconnect_fails_clearly)
{
	struct h_world *w = fworld("vf/ack/drop:count=1", false, 0);
	struct h_recv r[1];

	ck_assert_int_eq(transfers(w, 1, 1, r), 0);
	ck_assert_int_eq(r[0].status.code, TV_UNAVAILABLE);
	ck_assert_ptr_nonnull(strstr(r[0].status.message, "no ACK"));
	ck_assert_uint_eq(h_stats(w, 1).ack_timeouts +
				  h_stats(w, 0).ack_timeouts, 1);
	h_world_free(w);
}
END_TEST

static void survives(const char *plan, const char *point, int n)
{
	struct h_world *w = fworld(plan, true, 0);
	struct h_recv r[8];

	ck_assert_int_le(n, 8);
	ck_assert_int_eq(transfers(w, 1, n, r), n);
	ck_assert_uint_ge(fires(w, point), 1);
	ck_assert_uint_ge(w->reconnects, 1);
	/* And the channel keeps serving. */
	ck_assert_int_eq(transfers(w, 2, n, r), n);
	h_world_free(w);
}

START_TEST(lost_ack_is_recovered)
{
	/* TensorFlow #11416: the tx buffer's remote status stayed busy. */
	survives("vf/ack/drop:count=1", "vf/ack/drop", 4);
	survives("vf/ack/drop:nth=3,count=2", "vf/ack/drop", 4);
}
END_TEST

START_TEST(broken_engine_hangs_on_lost_ack)
{
	struct h_opts o;
	struct h_world *w;
	struct h_recv r;
	struct tv_tensor *t;
	char err[128];

	/* The switch the swarm test relies on really removes the handling. */
	h_opts_default(&o);
	ck_assert_int_eq(tv_flt_create(5, &o.flt), 0);
	ck_assert_int_eq(tv_flt_plan_parse(o.flt, "vf/ack/drop:count=1", err,
					   sizeof(err)), 0);
	o.reconnect = true;
	o.ack_timeout_ns = 1000000;
	w = h_world_new(&o);
	w->eng[1]->cfg.test_breakage = TV_BREAK_NO_ACK_TIMEOUT;
	w->eng[0]->cfg.test_breakage = TV_BREAK_NO_ACK_TIMEOUT;
	ck_assert_int_eq(tv_flt_activate(w->flt), 0);
	t = h_tensor(w, 0, TV_DT_UINT8, 1, d_64, TV_PLACE_HOST, 1);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "t", t), 0);
	tv_tensor_unref(t);
	h_recv(w, 1, 0, 1, "t", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.calls, 0); /* hung: TensorFlow #11416 again */
	ck_assert_uint_eq(h_stats(w, 1).ack_timeouts, 0);
	h_world_free(w); /* teardown cancels it */
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_CANCELLED);
}
END_TEST

START_TEST(lost_messages_are_recovered)
{
	survives("vf/msg/drop/TENSOR_REQUEST:count=1",
		 "vf/msg/drop/TENSOR_REQUEST", 3);
	survives("vf/msg/drop/META_DATA_UPDATE:count=1",
		 "vf/msg/drop/META_DATA_UPDATE", 3);
	survives("vf/msg/drop/TENSOR_RE_REQUEST:count=1",
		 "vf/msg/drop/TENSOR_RE_REQUEST", 3);
}
END_TEST

START_TEST(lost_error_status_is_recovered)
{
	struct h_world *w = fworld("vf/msg/drop/ERROR_STATUS:count=1", true, 0);
	struct h_recv r;

	ck_assert_int_eq(tv_engine_send_error(w->eng[0], 1, "e", TV_NOT_FOUND,
					      "gone for good"), 0);
	h_recv(w, 1, 0, 1, "e", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_NOT_FOUND);
	ck_assert_str_eq(r.status.message, "gone for good");
	ck_assert_uint_eq(fires(w, "vf/msg/drop/ERROR_STATUS"), 1);
	h_world_free(w);
}
END_TEST

START_TEST(qp_error_mid_transfer_is_recovered)
{
	survives("vf/qp/error:nth=5,count=1", "vf/qp/error", 4);
}
END_TEST

START_TEST(duplicated_write_is_detected_and_recovered)
{
	struct h_world *w = fworld("vf/write/dup:count=1", true, 0);
	struct h_recv r[4];

	ck_assert_int_eq(transfers(w, 1, 4, r), 4);
	/*
	 * The second copy lands after the first completed the request: the
	 * harness sees a write into a buffer no longer advertised (same
	 * bytes here).  The engine cannot stop a peer writing with a valid
	 * rkey; it sees the stray completion and resets the channel.  (Per-
	 * request memory windows would turn the landing into an access
	 * error.)
	 */
	ck_assert_int_eq(w->violations, 1);
	ck_assert_uint_eq(h_stats(w, 1).channel_failures, 1);
	ck_assert_uint_ge(w->reconnects, 1);
	w->violations = 0;
	ck_assert_int_eq(transfers(w, 2, 4, r), 4);
	ck_assert_int_eq(w->violations, 0);
	h_world_free(w);
}
END_TEST

START_TEST(delayed_delivery_only_slows_down)
{
	struct h_world *w = fworld("sim/deliver/delay:p=0.5,arg=200000", true,
				   0);
	struct h_recv r[8];

	ck_assert_int_eq(transfers(w, 1, 8, r), 8);
	ck_assert_uint_ge(fires(w, "sim/deliver/delay"), 4);
	ck_assert_uint_eq(w->reconnects, 0);
	h_world_free(w);
}
END_TEST

START_TEST(delay_past_the_ack_timeout_resets_and_recovers)
{
	/* 3 ms late, the ACK timeout is 1 ms: indistinguishable from loss. */
	struct h_world *w = fworld("sim/deliver/delay:nth=2,count=1,arg=3000000",
				   true, 0);
	struct h_recv r[4];

	ck_assert_int_eq(transfers(w, 1, 4, r), 4);
	ck_assert_uint_eq(fires(w, "sim/deliver/delay"), 1);
	ck_assert_uint_ge(w->reconnects, 1);
	h_world_free(w);
}
END_TEST

/*
 * The order real hardware allows: a tensor write lands at the receiver
 * (its completion queued, not yet handled), the sender sees success and
 * lets its tensor go, and only then the receiver's channel fails.
 */
static int stall_state;

static void node1_progress(void *arg, uint32_t node)
{
	tv_engine_progress(arg);
}

static void fail_receiver(void *arg)
{
	struct h_world *w = arg;

	ck_assert_int_eq(tv_channel_fail(w->ch[1][0], TV_UNAVAILABLE,
					 "peer went away"), 0);
	tv_sim_set_progress(w->sim, 1, node1_progress, w->eng[1]);
	tv_engine_progress(w->eng[1]);
}

static void stall_then_fail(struct h_world *w, const struct tv_sim_event *ev)
{
	if (ev->kind != TV_SIM_EV_CQE || ev->status != TV_WC_SUCCESS)
		return;
	if (stall_state == 0 && ev->node == 1 &&
	    ev->opcode == TV_WC_RECV_RDMA_WITH_IMM &&
	    tv_imm_is_write(ev->imm)) {
		tv_sim_set_progress(w->sim, 1, NULL, NULL); /* not handled */
		stall_state = 1;
	} else if (stall_state == 1 && ev->node == 0 &&
		   ev->opcode == TV_WC_RDMA_WRITE &&
		   (ev->wr_id & 7) == TV_WRID_WRITE_TAG) {
		/* The sender handles its success first, then the failure. */
		ck_assert_int_eq(tv_sim_schedule(w->sim, ev->time_ns + 1000, 1,
						 fail_receiver, w), 0);
		stall_state = 2;
	}
}

START_TEST(write_that_landed_before_a_failure_still_completes)
{
	struct h_world *w = fworld("vf/ack/drop:p=0", true, 100000000);
	struct h_recv r[2];

	w->sim_hook = stall_then_fail;
	ck_assert_int_eq(transfers(w, 1, 2, r), 2);
	ck_assert_int_eq(stall_state, 2);
	ck_assert_uint_eq(h_stats(w, 1).channel_failures, 1);
	ck_assert_uint_eq(h_stats(w, 1).recv_timeouts, 0);
	ck_assert_uint_ge(w->reconnects, 1);
	h_world_free(w);
}
END_TEST

/* A reconnect callback whose peer is down for the first two asks. */
static int down_for;

static int flaky_reconnect(void *ctx, struct tv_channel *ch)
{
	struct h_world *w = ctx;

	if (down_for-- > 0)
		return -EAGAIN;
	ck_assert_int_eq(tv_channel_reset(w->ch[0][1]), 0);
	ck_assert_int_eq(tv_channel_reset(w->ch[1][0]), 0);
	w->msgs_in_flight[0][1] = w->msgs_in_flight[1][0] = 0;
	w->reconnects++;
	{
		struct tv_channel_info a, b;

		ck_assert_int_eq(tv_channel_info(w->ch[0][1], &a), 0);
		ck_assert_int_eq(tv_channel_info(w->ch[1][0], &b), 0);
		ck_assert_int_eq(tv_channel_connect(w->ch[0][1], &b), 0);
		ck_assert_int_eq(tv_channel_connect(w->ch[1][0], &a), 0);
	}
	return 0;
}

START_TEST(reconnect_waits_for_a_restarting_peer)
{
	struct h_world *w = fworld("vf/ack/drop:count=1", true, 500000000);
	struct h_recv r[3];
	uint64_t t0;

	down_for = 2;
	w->eng[0]->cfg.reconnect = flaky_reconnect;
	w->eng[1]->cfg.reconnect = flaky_reconnect;
	t0 = tv_sim_now_ns(w->sim);
	ck_assert_int_eq(transfers(w, 1, 3, r), 3);
	ck_assert_int_eq(down_for, -1);
	ck_assert_uint_eq(w->reconnects, 1);
	/* Back-off: 1 then 2 ACK timeouts (1 ms) before the third ask. */
	ck_assert_uint_ge(tv_sim_now_ns(w->sim) - t0, 3000000);
	h_world_free(w);
}
END_TEST

START_TEST(lost_write_times_out_with_its_cause)
{
	struct h_world *w = fworld("vf/write/drop:count=1", true, 50000000);
	struct h_recv r[3];

	/* Unrecoverable (the sender let go after its write completed). */
	ck_assert_int_eq(transfers(w, 1, 3, r), 2);
	ck_assert_uint_eq(h_stats(w, 1).recv_timeouts, 1);
	/* The channel was reset so the lost write can never land late. */
	ck_assert_uint_ge(w->reconnects, 1);
	ck_assert_int_eq(transfers(w, 2, 3, r), 3);
	h_world_free(w);
}
END_TEST

START_TEST(timeout_message_names_the_state)
{
	struct h_world *w = fworld("vf/write/drop", false, 50000000);
	struct h_recv r;

	h_recv(w, 1, 0, 1, "never", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.status.code, TV_DEADLINE_EXCEEDED);
	ck_assert_ptr_nonnull(strstr(r.status.message, "'never' step 1"));
	ck_assert_ptr_nonnull(strstr(r.status.message, "waiting for the sender"));
	h_world_free(w);
}
END_TEST

static void lone_progress(void *arg, uint32_t node)
{
	tv_engine_progress(arg);
}

/*
 * A receive on a channel that never connects (its peer crashed and never
 * came back): nothing else happens on the node, so no progress arms its
 * timers; the deadline alone must wake it.
 */
START_TEST(deadline_wakes_a_node_without_traffic)
{
	struct tv_sim_config sc;
	struct tv_engine_config ec;
	struct tv_sim *sim;
	struct tv_engine *e;
	struct tv_channel *ch;
	struct h_recv r = { 0 };

	tv_sim_config_default(&sc);
	sc.num_nodes = 2;
	ck_assert_int_eq(tv_sim_create(&sc, &sim), 0);
	tv_engine_config_default(&ec);
	ec.queue_depth = 8;
	ec.pool_block_bytes = 1u << 16;
	ec.recv_timeout_ns = 5000000;
	ck_assert_int_eq(tv_engine_create(tv_sim_device(sim, 0), &ec, &e), 0);
	tv_sim_set_progress(sim, 0, lone_progress, e);
	ck_assert_int_eq(tv_channel_create(e, 1, &ch), 0);
	ck_assert_int_eq(tv_engine_recv_async(e, ch, 1, "w", TV_PLACE_HOST,
					      h_recv_done, &r), 0);
	ck_assert_int_eq(tv_sim_run(sim, 0, 1000), 0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_DEADLINE_EXCEEDED);
	ck_assert_ptr_nonnull(strstr(r.status.message, "waiting to be sent"));
	ck_assert_uint_eq(tv_sim_now_ns(sim), 5000000);
	ck_assert_int_eq(tv_engine_destroy(e), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

START_TEST(registration_failure_reaches_receiver)
{
	struct h_world *w = fworld("vf/reg_mr/fail:count=1", true, 0);
	struct tv_tensor *t = h_tensor(w, 0, TV_DT_FLOAT, 1, d_64,
				       TV_PLACE_DEVICE, 3);
	struct h_recv r;

	/* The sender's staging copy needs its first pool block. */
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "g", t), 0);
	tv_tensor_unref(t);
	h_recv(w, 1, 0, 1, "g", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_ne(r.status.code, TV_OK);
	ck_assert_uint_eq(fires(w, "vf/reg_mr/fail"), 1);
	h_recv_release(&r);
	h_world_free(w);
}
END_TEST

START_TEST(missing_receive_is_bounded_by_the_deadline)
{
	struct h_world *w = fworld("vf/recv/drop:count=200", true, 20000000);
	struct h_recv r[4];
	int ok = transfers(w, 1, 4, r);

	/* RNR retries forever at the sender; the deadline ends it all. */
	ck_assert_int_ge(ok, 0);
	ck_assert_uint_ge(fires(w, "vf/recv/drop"), 1);
	h_world_free(w);
}
END_TEST

/* A receive the engine may refuse (allocation failure): false if so. */
static bool try_recv(struct h_world *w, uint64_t step, const char *name,
		     enum tv_placement place, struct h_recv *r)
{
	memset(r, 0, sizeof(*r));
	return tv_engine_recv_async(w->eng[1], w->ch[1][0], step, name, place,
				    h_recv_done, r) == 0;
}

/* Publish (step, name) as a small tensor, if the engine lets us. */
static void try_send(struct h_world *w, uint64_t step, const char *name,
		     enum tv_dtype dt, enum tv_placement place)
{
	struct tv_shape shape = { .rank = 1, .dims = { 3 } };
	struct tv_tensor *t;

	if (tv_tensor_create(w->eng[0], dt, &shape, place, &t))
		return;
	if (dt == TV_DT_STRING)
		tv_tensor_set_string(t, 1, "ab", 2);
	tv_engine_send(w->eng[0], step, name, t);
	tv_tensor_unref(t);
}

/*
 * Fail the Nth engine allocation, N = 1, 2, ... until nothing fires: every
 * receive completes (ok or error), nothing leaks (SQLite's faultsim loop).
 */
static bool alloc_round(uint64_t nth)
{
	static const char *const names[] = { "a", "b", "s", "d", "e" };
	struct h_recv r[6];
	bool accepted[6], fired;
	struct h_world *w;
	char plan[64];
	int i;

	snprintf(plan, sizeof(plan), "engine/alloc:nth=%llu,count=1",
		 (unsigned long long)nth);
	w = fworld(plan, true, 100000000);
	try_send(w, 1, "a", TV_DT_FLOAT, TV_PLACE_HOST);
	try_send(w, 1, "b", TV_DT_INT8, TV_PLACE_DEVICE);
	try_send(w, 1, "s", TV_DT_STRING, TV_PLACE_HOST);
	try_send(w, 1, "d", TV_DT_INT32, TV_PLACE_HOST);
	tv_engine_send_error(w->eng[0], 1, "e", TV_ABORTED, "x");
	for (i = 0; i < 5; i++)
		accepted[i] = try_recv(w, 1, names[i],
				       i == 3 ? TV_PLACE_DEVICE : TV_PLACE_HOST,
				       &r[i]);
	h_run(w);
	for (i = 0; i < 5; i++) {
		/* Exactly once when accepted, never when refused. */
		ck_assert_int_eq(r[i].calls, accepted[i] ? 1 : 0);
		ck_assert_msg(!r[i].calls || r[i].status.code != TV_OK ||
			      r[i].tensor,
			      "nth %llu recv %d: ok without tensor",
			      (unsigned long long)nth, i);
		h_recv_release(&r[i]);
	}
	/*
	 * "a" again, from its cached metadata: the sender answers before it
	 * decodes (tv__response_early), and its response may be what fails.
	 */
	try_send(w, 2, "a", TV_DT_FLOAT, TV_PLACE_HOST);
	accepted[5] = try_recv(w, 2, "a", TV_PLACE_HOST, &r[5]);
	h_run(w);
	ck_assert_int_eq(r[5].calls, accepted[5] ? 1 : 0);
	ck_assert(!r[5].calls || r[5].status.code != TV_OK || r[5].tensor);
	h_recv_release(&r[5]);
	fired = fires(w, "engine/alloc") > 0;
	h_world_free(w); /* asserts no leak, nothing pending */
	return fired;
}

START_TEST(every_allocation_failure_is_survived)
{
	uint64_t n;

	for (n = 1; n < 10000; n++)
		if (!alloc_round(n))
			break;
	/* The loop walked real allocation sites, then ran clean. */
	ck_assert_uint_gt(n, 20);
	ck_assert_uint_lt(n, 10000);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("faults");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, catalogue_is_complete);
	tcase_add_test(tc, rules_nth_count_window_probability);
	tcase_add_test(tc, plans_are_validated);
	tcase_add_test(tc, lost_ack_without_reconnect_fails_clearly);
	tcase_add_test(tc, lost_ack_is_recovered);
	tcase_add_test(tc, broken_engine_hangs_on_lost_ack);
	tcase_add_test(tc, lost_messages_are_recovered);
	tcase_add_test(tc, lost_error_status_is_recovered);
	tcase_add_test(tc, qp_error_mid_transfer_is_recovered);
	tcase_add_test(tc, duplicated_write_is_detected_and_recovered);
	tcase_add_test(tc, delayed_delivery_only_slows_down);
	tcase_add_test(tc, delay_past_the_ack_timeout_resets_and_recovers);
	tcase_add_test(tc, write_that_landed_before_a_failure_still_completes);
	tcase_add_test(tc, reconnect_waits_for_a_restarting_peer);
	tcase_add_test(tc, lost_write_times_out_with_its_cause);
	tcase_add_test(tc, timeout_message_names_the_state);
	tcase_add_test(tc, deadline_wakes_a_node_without_traffic);
	tcase_add_test(tc, registration_failure_reaches_receiver);
	tcase_add_test(tc, missing_receive_is_bounded_by_the_deadline);
	tcase_add_test(tc, every_allocation_failure_is_survived);
	suite_add_tcase(s, tc);
	return tv_check_main(s);
}
