/*
 * The engine's error paths: hostile peers, QP failures, allocation and
 * registration failures, teardown with work pending, bad arguments.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "harness.h"

static const int64_t d_4x8[] = { 4, 8 };

/*
 * Write raw bytes from node from's tx buffer into node to's rx buffer with
 * an immediate, bypassing the busy/idle protocol (a misbehaving peer).
 */
static void raw_write(struct h_world *w, uint32_t from, uint32_t to,
		      const void *bytes, size_t len, uint32_t imm)
{
	struct tv_channel *ch = w->ch[from][to];
	struct tv_vf_sge sge = {
		.addr = (uint64_t)(uintptr_t)ch->tx_mem,
		.length = (uint32_t)len,
		.lkey = ch->tx_mr->lkey,
	};
	struct tv_vf_send_wr wr = {
		.wr_id = TV_WRID_ACK, /* completes like an ACK: no state */
		.opcode = TV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = TV_SEND_SIGNALED,
		.imm_data = imm,
		.remote_addr = ch->remote_rx_addr,
		.rkey = ch->remote_rx_rkey,
		.sg_list = len ? &sge : NULL,
		.num_sge = len ? 1 : 0,
	};
	struct tv_vf_send_wr *bad;

	if (len)
		memcpy(ch->tx_mem, bytes, len);
	ck_assert_int_eq(tv_vf_post_send(ch->qp, &wr, &bad), 0);
	ch->sq_outstanding++;
}

static void raw_msg(struct h_world *w, uint32_t from, uint32_t to,
		    const struct tv_msg *msg)
{
	uint8_t buf[8192];
	size_t len;

	ck_assert_int_eq(tv_wire_encode(msg, buf, sizeof(buf), &len), 0);
	raw_write(w, from, to, buf, len, TV_IMM_MESSAGE);
}

static void pending_recv(struct h_world *w, const char *name, struct h_recv *r)
{
	h_recv(w, 1, 0, 1, name, TV_PLACE_HOST, r);
	h_run(w);
	ck_assert_int_eq(r->calls, 0);
}

START_TEST(malformed_message_fails_channel)
{
	struct h_world *w = h_world_default();
	static const uint8_t junk[40] = { 0xde, 0xad, 0xbe, 0xef };
	struct h_recv r, late;

	pending_recv(w, "a", &r);
	raw_write(w, 0, 1, junk, sizeof(junk), TV_IMM_MESSAGE);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_DATA_LOSS);
	ck_assert_ptr_nonnull(strstr(r.status.message, "malformed message"));
	ck_assert(w->ch[1][0]->failed);
	/* A receive on a failed channel completes at once, with why. */
	h_recv(w, 1, 0, 2, "b", TV_PLACE_HOST, &late);
	ck_assert_int_eq(late.calls, 1);
	ck_assert_int_eq(late.status.code, TV_DATA_LOSS);
	w->violations = 0; /* the raw write broke the ACK accounting */
	h_world_free(w);
}
END_TEST

START_TEST(message_for_unknown_request_fails_channel)
{
	struct h_world *w = h_world_default();
	struct tv_msg msg;
	struct h_recv r;

	pending_recv(w, "a", &r);
	memset(&msg, 0, sizeof(msg));
	msg.type = TV_MSG_ERROR_STATUS;
	strcpy(msg.name, "a");
	msg.name_len = 1;
	msg.step_id = 1;
	msg.request_index = 999;
	tv_status_set(&msg.status, TV_INTERNAL, "bogus");
	raw_msg(w, 0, 1, &msg);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_DATA_LOSS);
	ck_assert_ptr_nonnull(strstr(r.status.message, "no pending request"));
	w->violations = 0;
	h_world_free(w);
}
END_TEST

START_TEST(stray_tensor_write_fails_channel)
{
	struct h_world *w = h_world_default();
	struct h_recv r;

	pending_recv(w, "a", &r);
	/* Index of the live request, but it has no metadata yet. */
	raw_write(w, 0, 1, NULL, 0, w->last_index[1]);
	h_run(w);
	ck_assert_int_eq(r.status.code, TV_DATA_LOSS);
	ck_assert_ptr_nonnull(strstr(r.status.message, "awaits none"));
	w->violations = 0;
	h_world_free(w);
}
END_TEST

START_TEST(duplicate_request_index_fails_channel)
{
	struct h_world *w = h_world_default();
	struct tv_msg msg;
	struct h_recv r;

	pending_recv(w, "a", &r);
	memset(&msg, 0, sizeof(msg));
	msg.type = TV_MSG_TENSOR_REQUEST;
	strcpy(msg.name, "other");
	msg.name_len = 5;
	msg.step_id = 1;
	msg.request_index = w->last_index[1];
	raw_msg(w, 1, 0, &msg);
	h_run(w);
	ck_assert(w->ch[0][1]->failed);
	ck_assert_ptr_nonnull(strstr(w->ch[0][1]->fail_status.message,
				     "reused live request index"));
	ck_assert_uint_eq(h_stats(w, 0).live_responses, 0);
	ck_assert_uint_eq(h_stats(w, 0).unmatched_requests, 0);
	w->violations = 0;
	h_world_free(w);
}
END_TEST

/* Shrink the bytes every RE_REQUEST advertises, as it lands. */
static void shrink_hook(struct h_world *w, const struct tv_sim_event *ev)
{
	struct tv_msg msg;
	uint8_t *rx;
	size_t len;

	if (ev->kind != TV_SIM_EV_DELIVER || ev->node != 0 || !ev->has_imm ||
	    ev->imm != TV_IMM_MESSAGE)
		return;
	rx = w->ch[0][1]->rx_mem;
	ck_assert_int_eq(tv_wire_decode(rx, ev->length, &msg), 0);
	if (msg.type != TV_MSG_TENSOR_RE_REQUEST)
		return;
	msg.remote_bytes = 4;
	ck_assert_int_eq(tv_wire_encode(&msg, rx, ev->length, &len), 0);
	ck_assert_uint_eq(len, ev->length);
}

START_TEST(sender_never_writes_past_advertised_buffer)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t = h_tensor(w, 0, TV_DT_FLOAT, 2, d_4x8,
				       TV_PLACE_HOST, 1);
	struct h_recv r;

	w->sim_hook = shrink_hook;
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "t", t), 0);
	tv_tensor_unref(t);
	h_recv(w, 1, 0, 1, "t", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.status.code, TV_INTERNAL);
	ck_assert_ptr_nonnull(strstr(r.status.message, "refusing to write"));
	ck_assert_uint_eq(h_stats(w, 0).tensor_writes, 0);
	h_world_free(w);
}
END_TEST

START_TEST(receiver_allocation_failure_cancels_request)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t = h_tensor(w, 0, TV_DT_FLOAT, 2, d_4x8,
				       TV_PLACE_HOST, 1);
	struct h_recv r;

	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "t", t), 0);
	tv_tensor_unref(t);
	tv_sim_fail_reg_mr(w->sim, 1, 1, -ENOMEM);
	h_recv(w, 1, 0, 1, "t", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_RESOURCE_EXHAUSTED);
	/* The sender let go of its clone when the 0-byte RE_REQUEST came. */
	ck_assert_uint_eq(h_stats(w, 0).live_responses, 0);
	ck_assert_uint_eq(h_stats(w, 0).tensor_writes, 0);
	/* And the next step works. */
	t = h_tensor(w, 0, TV_DT_FLOAT, 2, d_4x8, TV_PLACE_HOST, 2);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 2, "t", t), 0);
	tv_tensor_unref(t);
	h_recv_expect(w, 1, 0, 2, "t", 2);
	h_world_free(w);
}
END_TEST

/*
 * The fast path's allocation fails (the cached size needs a new pool
 * block, whose registration fails): the receive fails at once, nothing is
 * sent, and the next receive, with memory, goes through.
 */
START_TEST(fast_path_allocation_failure_fails_the_receive)
{
	static const int64_t big[] = { 1024, 1024 }; /* a whole pool block */
	struct h_world *w = h_world_default();
	struct tv_tensor *t;
	struct h_recv r1, r2;
	uint64_t step;

	for (step = 1; step <= 3; step++) {
		t = h_tensor(w, 0, TV_DT_FLOAT, 2, big, TV_PLACE_HOST,
			     (uint8_t)step);
		ck_assert_int_eq(tv_engine_send(w->eng[0], step, "b", t), 0);
		tv_tensor_unref(t);
	}
	h_recv(w, 1, 0, 1, "b", TV_PLACE_HOST, &r1);
	h_run(w);
	ck_assert_int_eq(r1.status.code, TV_OK);
	/* r1's result holds the one block: step 2 needs another. */
	tv_sim_fail_reg_mr(w->sim, 1, 1, -ENOMEM);
	h_recv(w, 1, 0, 2, "b", TV_PLACE_HOST, &r2);
	ck_assert_int_eq(r2.calls, 1);
	ck_assert_int_eq(r2.status.code, TV_RESOURCE_EXHAUSTED);
	ck_assert_ptr_nonnull(strstr(r2.status.message, "receive buffer"));
	ck_assert_uint_eq(h_stats(w, 1).fast_requests, 0);
	ck_assert_uint_eq(h_stats(w, 1).msgs_sent[TV_MSG_TENSOR_REQUEST], 1);
	ck_assert_uint_eq(h_stats(w, 1).live_requests, 0);
	h_recv_release(&r1);
	h_recv_expect(w, 1, 0, 3, "b", 3);
	h_world_free(w);
}
END_TEST

START_TEST(peer_cannot_make_us_allocate_without_bound)
{
	struct h_world *w = h_world_default();
	static const int64_t big[] = { 1024, 1024 }; /* 4 MiB of float */
	struct tv_tensor *t = h_tensor(w, 0, TV_DT_FLOAT, 2, big,
				       TV_PLACE_HOST, 1);
	struct h_recv r;

	w->eng[1]->cfg.max_recv_bytes = 1u << 20;
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "huge", t), 0);
	tv_tensor_unref(t);
	h_recv(w, 1, 0, 1, "huge", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.status.code, TV_RESOURCE_EXHAUSTED);
	ck_assert_ptr_nonnull(strstr(r.status.message, "max_recv_bytes"));
	/* The sender let go of its clone; nothing was written. */
	ck_assert_uint_eq(h_stats(w, 0).live_responses, 0);
	ck_assert_uint_eq(h_stats(w, 0).tensor_writes, 0);
	h_world_free(w);
}
END_TEST

START_TEST(sender_registration_failure_becomes_error_status)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t = h_tensor(w, 0, TV_DT_FLOAT, 2, d_4x8,
				       TV_PLACE_DEVICE, 1);
	struct h_recv r;

	/* The device tensor needs a registered host copy: that fails. */
	tv_sim_fail_reg_mr(w->sim, 0, 1, -EFAULT);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "t", t), 0);
	tv_tensor_unref(t);
	h_recv(w, 1, 0, 1, "t", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_INTERNAL);
	ck_assert_ptr_nonnull(strstr(r.status.message, "preparing the send"));
	ck_assert_uint_eq(h_stats(w, 0).msgs_sent[TV_MSG_ERROR_STATUS], 1);
	h_world_free(w);
}
END_TEST

START_TEST(qp_error_fails_requests_on_both_sides)
{
	struct h_world *w = h_world_default();
	struct h_recv r, r2;

	pending_recv(w, "a", &r);
	ck_assert_int_eq(tv_sim_qp_fail(w->ch[1][0]->qp,
					TV_WC_RETRY_EXC_ERR), 0);
	h_recv(w, 1, 0, 1, "b", TV_PLACE_HOST, &r2);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_UNAVAILABLE);
	ck_assert_int_eq(r2.calls, 1);
	ck_assert_int_eq(r2.status.code, TV_UNAVAILABLE);
	ck_assert(w->ch[1][0]->failed);
	ck_assert_uint_eq(h_stats(w, 1).live_requests, 0);
	h_world_free(w);
}
END_TEST

START_TEST(destroy_cancels_pending_receives)
{
	struct h_world *w = h_world_default();
	struct h_recv r;

	pending_recv(w, "never", &r);
	h_world_free(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_CANCELLED);
}
END_TEST

START_TEST(destroy_with_held_tensor_is_busy)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t = h_tensor(w, 0, TV_DT_FLOAT, 2, d_4x8,
				       TV_PLACE_HOST, 1);

	ck_assert_int_eq(tv_engine_destroy(w->eng[0]), -EBUSY);
	/* Nothing usable is left but the tensor; release, destroy again. */
	tv_tensor_unref(t);
	ck_assert_int_eq(tv_engine_destroy(w->eng[0]), 0);
	ck_assert_int_eq(tv_engine_destroy(w->eng[1]), 0);
	ck_assert_int_eq(tv_sim_destroy(w->sim), 0);
	free(w);
}
END_TEST

START_TEST(blocking_recv)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t = h_tensor(w, 0, TV_DT_FLOAT, 2, d_4x8,
				       TV_PLACE_HOST, 4);
	struct tv_tensor *got = NULL;
	struct tv_status st;
	int ret;

	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "t", t), 0);
	ck_assert_int_eq(tv_engine_recv(w->eng[1], w->ch[1][0], 1, "t",
					TV_PLACE_HOST, 1000000000ull, &st,
					&got), 0);
	ck_assert_int_eq(st.code, TV_OK);
	ck_assert(h_check_fill(got, 4));
	tv_tensor_unref(got);
	got = NULL;
	/* Nothing will ever come: the world runs dry or the clock runs out. */
	ret = tv_engine_recv(w->eng[1], w->ch[1][0], 2, "t", TV_PLACE_HOST,
			     1000000ull, &st, &got);
	ck_assert(ret == -ETIMEDOUT || ret == -EDEADLK);
	ck_assert_ptr_null(got);
	/* The orphaned request still completes, and its result is freed. */
	ck_assert_int_eq(tv_engine_send(w->eng[0], 2, "t", t), 0);
	tv_tensor_unref(t);
	h_run(w);
	ck_assert_uint_eq(h_stats(w, 1).recvs_ok, 2);
	h_world_free(w);
}
END_TEST

static void never_done(void *arg, const struct tv_status *st,
		       struct tv_tensor *t)
{
	ck_abort_msg("a rejected receive must never complete");
}

START_TEST(api_rejects_bad_arguments)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t = h_tensor(w, 0, TV_DT_FLOAT, 2, d_4x8,
				       TV_PLACE_HOST, 1);
	struct tv_shape bad_rank = { .rank = TV_MAX_RANK + 1 };
	struct tv_shape neg = { .rank = 1, .dims = { -1 } };
	struct tv_engine_config ec;
	struct tv_channel_info info;
	struct tv_channel *ch;
	struct tv_engine *e;
	struct tv_tensor *u;
	char longname[TV_NAME_MAX + 2];
	struct h_recv r;

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "", t), -EINVAL);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, longname, t),
			 -ENAMETOOLONG);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "t", t), 0);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "t", t), -EEXIST);
	ck_assert_int_eq(tv_engine_send(w->eng[1], 1, "t", t), -EINVAL);
	ck_assert_int_eq(tv_engine_send_error(w->eng[0], 1, "e", TV_OK, "x"),
			 -EINVAL);
	ck_assert_int_eq(tv_engine_recv_async(w->eng[1], w->ch[1][0], 1, "t",
					      (enum tv_placement)7, never_done,
					      NULL), -EINVAL);
	ck_assert_int_eq(tv_engine_recv_async(w->eng[1], w->ch[0][1], 1, "t",
					      TV_PLACE_HOST, never_done, NULL),
			 -EINVAL);
	ck_assert_int_eq(tv_engine_recv_async(w->eng[1], w->ch[1][0], 1, "t",
					      TV_PLACE_HOST, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(tv_tensor_create(w->eng[0], (enum tv_dtype)99,
					  &neg, TV_PLACE_HOST, &u), -EINVAL);
	ck_assert_int_eq(tv_tensor_create(w->eng[0], TV_DT_FLOAT, &bad_rank,
					  TV_PLACE_HOST, &u), -EINVAL);
	ck_assert_int_ne(tv_tensor_create(w->eng[0], TV_DT_FLOAT, &neg,
					  TV_PLACE_HOST, &u), 0);
	ck_assert_int_eq(tv_tensor_set_string(t, 0, "x", 1), -EINVAL);
	ck_assert_int_eq(tv_channel_create(w->eng[0], 1, &ch), -EEXIST);
	ck_assert_int_eq(tv_channel_create(w->eng[0], TV_MAX_CHANNELS, &ch),
			 -EINVAL);
	ck_assert_int_eq(tv_channel_info(w->ch[0][1], &info), 0);
	ck_assert_int_eq(tv_channel_connect(w->ch[0][1], &info), -EINVAL);
	tv_engine_config_default(&ec);
	ec.queue_depth = 2;
	ck_assert_int_eq(tv_engine_create(tv_sim_device(w->sim, 0), &ec, &e),
			 -EINVAL);
	tv_tensor_unref(t);
	h_recv(w, 1, 0, 1, "t", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.status.code, TV_OK);
	h_recv_release(&r);
	h_world_free(w);
}
END_TEST

START_TEST(stub_facade_fails_cleanly)
{
	struct tv_vf_device dev = { .ops = &tv_vf_stub_ops };
	struct tv_engine_config ec;
	struct tv_engine *e = NULL;

	tv_engine_config_default(&ec);
	ck_assert_int_eq(tv_engine_create(&dev, &ec, &e), -EOPNOTSUPP);
	ck_assert_ptr_null(e);
}
END_TEST

Suite *engine_errors_suite(void);

Suite *engine_errors_suite(void)
{
	Suite *s = suite_create("engine-errors");
	TCase *tc = tcase_create("errors");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, malformed_message_fails_channel);
	tcase_add_test(tc, message_for_unknown_request_fails_channel);
	tcase_add_test(tc, stray_tensor_write_fails_channel);
	tcase_add_test(tc, duplicate_request_index_fails_channel);
	tcase_add_test(tc, sender_never_writes_past_advertised_buffer);
	tcase_add_test(tc, receiver_allocation_failure_cancels_request);
	tcase_add_test(tc, fast_path_allocation_failure_fails_the_receive);
	tcase_add_test(tc, peer_cannot_make_us_allocate_without_bound);
	tcase_add_test(tc, sender_registration_failure_becomes_error_status);
	tcase_add_test(tc, qp_error_fails_requests_on_both_sides);
	tcase_add_test(tc, destroy_cancels_pending_receives);
	tcase_add_test(tc, destroy_with_held_tensor_is_busy);
	tcase_add_test(tc, blocking_recv);
	tcase_add_test(tc, api_rejects_bad_arguments);
	tcase_add_test(tc, stub_facade_fails_cleanly);
	suite_add_tcase(s, tc);
	return s;
}
