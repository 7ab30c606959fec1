/*
 * The rendezvous engine's channels (engine/rendezvous/channel.c): error
 * paths and edge cases.  Bad arguments and wrong states, the device's
 * calls failing in turn (a test double over the simulator's ops table:
 * the Nth call of an op fails), every engine allocation of a channel's
 * creation failing in turn (the engine/alloc point), a peer that sends
 * what is not a message, posts and re-posts refused, resets that cannot
 * make their new QP.  Every test says which code, state or message it
 * expects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <fiu.h>
#include <fiu-control.h>

#include "alloc_point.h"
#include "common/check_main.h"
#include "common/vf_double.h"
#include "engine_int.h" /* white box: a channel's QP, CQ, failure */
#include "harness.h"

/* ---- helpers --------------------------------------------------------------- */

static struct tv_sim *sim_new(void)
{
	struct tv_sim_config sc;
	struct tv_sim *sim;

	tv_sim_config_default(&sc);
	sc.num_nodes = 2;
	ck_assert_int_eq(tv_sim_create(&sc, &sim), 0);
	return sim;
}

static struct tv_engine *engine_new(struct tv_sim *sim, uint32_t node)
{
	struct tv_engine_config ec;
	struct tv_engine *e;

	tv_engine_config_default(&ec);
	ec.node_id = node;
	ck_assert_int_eq(tv_engine_create(tv_sim_device(sim, node), &ec, &e),
			 0);
	return e;
}

static bool has(const char *s, const char *sub)
{
	return strstr(s, sub) != NULL;
}

/* A tensor from node 1 to node 0, run until nothing is left: the
 * receive's end (exactly one). */
static void transfer(struct h_world *w, struct h_recv *r)
{
	struct tv_tensor *t;
	int64_t dims[1] = { 64 };

	t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 3);
	ck_assert_int_eq(tv_engine_send(w->eng[1], 1, "t", t), 0);
	tv_tensor_unref(t);
	h_recv(w, 0, 1, 1, "t", TV_PLACE_HOST, r);
	h_run(w);
	ck_assert_int_eq(r->calls, 1);
}

/* ---- creation --------------------------------------------------------------- */

START_TEST(test_create_arguments)
{
	struct tv_sim *sim = sim_new();
	struct tv_engine *e = engine_new(sim, 0);
	struct tv_channel *ch = NULL, *c2 = NULL;

	ck_assert_int_eq(tv_channel_create(NULL, 1, &ch), -EINVAL);
	ck_assert_int_eq(tv_channel_create(e, 1, NULL), -EINVAL);
	ck_assert_int_eq(tv_channel_create(e, TV_MAX_CHANNELS, &ch), -EINVAL);
	ck_assert_ptr_null(ch);
	ck_assert_int_eq(tv_channel_create(e, 3, &ch), 0);
	ck_assert_int_eq(tv_channel_create(e, 3, &c2), -EEXIST);
	ck_assert_int_eq(tv_channel_create(e, 1, &c2), 0); /* below: no grow */
	ck_assert_ptr_null(tv_engine_channel(e, 2));
	ck_assert_ptr_null(tv_engine_channel(e, 4));
	ck_assert_ptr_null(tv_engine_channel(NULL, 1));
	ck_assert_ptr_eq(tv_engine_channel(e, 3), ch);
	ck_assert_uint_eq(tv_channel_peer(ch), 3);
	ck_assert(!tv_channel_failed(ch));
	ck_assert_int_eq(tv_engine_destroy(e), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* Each device call of a channel's creation fails in turn: the error, no
 * channel in the slot, nothing leaked. */
START_TEST(test_create_device_failures)
{
	struct tv_sim *sim = sim_new();
	struct tv_vf_device *dev = tv_sim_device(sim, 0);
	struct tv_engine *e = engine_new(sim, 0);
	struct tv_channel *ch = NULL;
	int *const points[] = {
		&vfd.fail_nth.reg_mr,    &vfd.fail_nth.reg_mr,
		&vfd.fail_nth.create_cq, &vfd.fail_nth.create_qp,
		&vfd.fail_nth.modify_qp, &vfd.fail_nth.post_recv
	};
	const int nth[] = { 1, 2, 1, 1, 1, 3 };

	vfd_hook(dev);
	for (size_t i = 0; i < sizeof(nth) / sizeof(nth[0]); i++) {
		*points[i] = nth[i];
		ck_assert_int_eq(tv_channel_create(e, 1, &ch), -ENOMEM);
		ck_assert_int_eq(*points[i], 0); /* it did fire */
		ck_assert_ptr_null(ch);
		ck_assert_ptr_null(tv_engine_channel(e, 1));
	}
	/* A device that takes no inline data: the QP without it. */
	vfd.fail_err = -EINVAL;
	vfd.fail_nth.create_qp = 1;
	ck_assert_int_eq(tv_channel_create(e, 1, &ch), 0);
	ck_assert_uint_eq(ch->qp->max_inline_data, 0);
	vfd.fail_err = -ENOMEM;
	vfd_unhook(dev);
	ck_assert_int_eq(tv_engine_destroy(e), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* Every engine allocation of a channel's creation fails in turn. */
START_TEST(test_create_allocations_fail)
{
	struct tv_sim *sim = sim_new();
	struct tv_engine *e = engine_new(sim, 0);
	struct tv_channel *ch = NULL;
	long n;
	int ret;

	alloc_point_on();
	for (n = 0;; n++) {
		alloc_arm(n);
		/* A higher peer each time: the slots grow every time, and
		 * the Nth allocation is the same one in every round. */
		ret = tv_channel_create(e, 100 + (uint32_t)n, &ch);
		if (!alloc_disarm()) {
			ck_assert_int_eq(ret, 0);
			break;
		}
		ck_assert_msg(ret == -ENOMEM, "allocation %ld: %d", n, ret);
		ck_assert_ptr_null(tv_engine_channel(e, 100 + (uint32_t)n));
	}
	fiu_disable("engine/alloc");
	ck_assert_int_ge(n, 5); /* slots, the channel, maps, buffers */
	ck_assert_ptr_eq(tv_engine_channel(e, 100 + (uint32_t)n), ch);
	ck_assert_int_eq(tv_engine_destroy(e), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* ---- info and connect ------------------------------------------------------- */

START_TEST(test_info_connect_arguments)
{
	struct h_world *w = h_world_default();
	struct tv_channel *ch, *conn = w->ch[0][1];
	struct tv_channel_info info, mine;

	ck_assert_int_eq(tv_channel_info(NULL, &info), -EINVAL);
	ck_assert_int_eq(tv_channel_info(conn, NULL), -EINVAL);
	ck_assert_int_eq(tv_channel_info(w->ch[1][0], &info), 0);
	ck_assert_int_eq(tv_channel_connect(NULL, &info), -EINVAL);
	ck_assert_int_eq(tv_channel_connect(conn, NULL), -EINVAL);
	ck_assert_int_eq(tv_channel_connect(conn, &info), -EINVAL); /* again */
	/* A spare channel on node 0, not connected. */
	ck_assert_int_eq(tv_channel_create(w->eng[0], 5, &ch), 0);
	info.rx_bytes = (uint32_t)tv_wire_max_bytes() - 1;
	ck_assert_int_eq(tv_channel_connect(ch, &info), -EINVAL);
	info.rx_bytes = (uint32_t)tv_wire_max_bytes();
	info.rx_addr = 0;
	ck_assert_int_eq(tv_channel_connect(ch, &info), -EINVAL);
	ck_assert_int_eq(tv_channel_info(w->ch[1][0], &info), 0);
	vfd_hook(w->dev[0]);
	vfd.fail_nth.qp_endpoint = 1;
	ck_assert_int_eq(tv_channel_info(ch, &mine), -ENOMEM);
	vfd.fail_nth.qp_endpoint = 1;
	ck_assert_int_eq(tv_channel_connect(ch, &info), -ENOMEM);
	vfd.fail_nth.modify_qp = 1;
	ck_assert_int_ne(tv_channel_connect(ch, &info), 0);
	vfd_unhook(w->dev[0]);
	ck_assert(!ch->connected);
	/* Failing from outside: arguments, then the state. */
	ck_assert_int_eq(tv_channel_fail(NULL, TV_UNAVAILABLE, "x"), -EINVAL);
	ck_assert_int_eq(tv_channel_fail(ch, TV_UNAVAILABLE, NULL), -EINVAL);
	ck_assert_int_eq(tv_channel_fail(ch, TV_OK, "x"), -EINVAL);
	ck_assert(!tv_channel_failed(ch));
	ck_assert_int_eq(tv_channel_fail(ch, TV_UNAVAILABLE, "cm says gone"),
			 0);
	ck_assert(tv_channel_failed(ch));
	ck_assert_int_eq(tv_channel_reset(NULL), -EINVAL);
	h_world_free(w);
}
END_TEST

/* ---- posting refused -------------------------------------------------------- */

/* The request message cannot be posted: the channel fails, the receive
 * gets the reason. */
START_TEST(test_message_post_refused)
{
	struct h_world *w = h_world_default();
	struct h_recv r;

	vfd_hook(w->dev[0]);
	vfd.fail_nth.post_send = 1;
	h_recv(w, 0, 1, 1, "t", TV_PLACE_HOST, &r);
	h_run(w);
	vfd_unhook(w->dev[0]);
	ck_assert(tv_channel_failed(w->ch[0][1]));
	ck_assert_msg(has(w->ch[0][1]->fail_status.message,
			  "posting a TENSOR_REQUEST failed: Cannot allocate"),
		      "%.200s", w->ch[0][1]->fail_status.message);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_ne(r.status.code, TV_OK);
	h_recv_release(&r);
	h_world_free(w);
}
END_TEST

/* Node 0 receives from node 1, whose device fails the first call that
 * *countdown counts: node 1's channel fails, saying expect. */
static void receiver_post_refused(int *countdown, const char *expect)
{
	struct h_world *w = h_world_default();
	struct h_recv r;

	vfd_hook(w->dev[1]);
	*countdown = 1;
	h_recv(w, 0, 1, 1, "t", TV_PLACE_HOST, &r);
	h_run(w);
	vfd_unhook(w->dev[1]);
	ck_assert(tv_channel_failed(w->ch[1][0]));
	ck_assert_msg(has(w->ch[1][0]->fail_status.message, expect), "%.200s",
		      w->ch[1][0]->fail_status.message);
	h_recv_release(&r);
	h_world_free(w);
}

/* The receiver's ACK cannot be posted: its channel fails. */
START_TEST(test_ack_post_refused)
{
	/* node 1's first post: the ACK of the request */
	receiver_post_refused(&vfd.fail_nth.post_send,
			      "posting an ACK failed");
}
END_TEST

/* A receive cannot be posted again after a write-with-imm used it. */
START_TEST(test_recv_repost_refused)
{
	receiver_post_refused(&vfd.fail_nth.post_recv,
			      "re-posting a receive failed");
}
END_TEST


/* The sender's tensor write cannot be posted: its channel fails, and the
 * receiver hears of it instead of waiting. */
START_TEST(test_write_post_refused)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t;
	struct h_recv r;
	int64_t dims[1] = { 256 };

	t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 5);
	ck_assert_int_eq(tv_engine_send(w->eng[1], 1, "t", t), 0);
	tv_tensor_unref(t);
	vfd_hook(w->dev[1]);
	vfd.fail_wr_mask = 7;
	vfd.fail_wr_tag = TV_WRID_WRITE_TAG;
	vfd.fail_wr_armed = true;
	h_recv(w, 0, 1, 1, "t", TV_PLACE_HOST, &r);
	h_run(w);
	vfd_unhook(w->dev[1]);
	ck_assert(!vfd.fail_wr_armed); /* it was tried, and refused */
	ck_assert(tv_channel_failed(w->ch[1][0]));
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_ne(r.status.code, TV_OK);
	h_recv_release(&r);
	h_world_free(w);
}
END_TEST

/* A lying device completes a send twice: the second names no posted
 * work, and the channel fails (TV_INTERNAL) instead of counting below 0. */
START_TEST(test_completion_for_nothing)
{
	struct h_world *w = h_world_default();
	struct h_recv r;

	vfd_hook(w->dev[1]);
	vfd.dup_armed = true;
	vfd.dup_wr_id = TV_WRID_ACK;
	transfer(w, &r);
	vfd_unhook(w->dev[1]);
	h_recv_release(&r);
	ck_assert(!vfd.dup_armed && !vfd.dup_held);
	ck_assert(tv_channel_failed(w->ch[1][0]));
	ck_assert_int_eq(w->ch[1][0]->fail_status.code, TV_INTERNAL);
	ck_assert_msg(has(w->ch[1][0]->fail_status.message,
			  "for no posted work on the channel to node 0"),
		      "%.200s", w->ch[1][0]->fail_status.message);
	h_world_free(w);
}
END_TEST

/* ---- a peer that is not an engine ----------------------------------------- */

/* A raw QP on node 1 sends a SEND: node 0's channel fails (DATA_LOSS). */
START_TEST(test_peer_sends_not_a_write)
{
	struct tv_sim *sim = sim_new();
	struct tv_vf_device *d1 = tv_sim_device(sim, 1);
	struct tv_engine *e = engine_new(sim, 0);
	struct tv_channel *ch;
	struct tv_channel_info mine, theirs;
	struct tv_vf_pd *pd;
	struct tv_vf_cq *cq;
	struct tv_vf_qp *qp;
	struct tv_vf_mr *mr;
	struct tv_vf_qp_init_attr init = { .max_send_wr = 4, .max_recv_wr = 4,
					   .max_send_sge = 1,
					   .max_recv_sge = 1 };
	struct tv_vf_connect_cfg cc;
	struct tv_vf_send_wr wr = { .wr_id = 1, .num_sge = 0,
				    .opcode = TV_WR_SEND,
				    .send_flags = TV_SEND_SIGNALED }, *bad;
	size_t bytes = tv_wire_max_bytes();
	void *rx = calloc(1, bytes);

	ck_assert_int_eq(tv_channel_create(e, 1, &ch), 0);
	ck_assert_int_eq(tv_vf_alloc_pd(d1, &pd), 0);
	ck_assert_int_eq(tv_vf_create_cq(d1, 16, &cq), 0);
	init.send_cq = init.recv_cq = cq;
	ck_assert_int_eq(tv_vf_create_qp(pd, &init, &qp), 0);
	ck_assert_int_eq(tv_vf_reg_mr(pd, rx, bytes, TV_ACCESS_LOCAL_WRITE |
				      TV_ACCESS_REMOTE_WRITE, &mr), 0);
	memset(&theirs, 0, sizeof(theirs));
	ck_assert_int_eq(tv_vf_qp_endpoint(qp, &theirs.ep), 0);
	theirs.rx_addr = (uint64_t)(uintptr_t)rx;
	theirs.rx_rkey = mr->rkey;
	theirs.rx_bytes = (uint32_t)bytes;
	ck_assert_int_eq(tv_channel_info(ch, &mine), 0);
	ck_assert_int_eq(tv_channel_connect(ch, &theirs), 0);
	tv_vf_connect_cfg_default(&cc);
	ck_assert_int_eq(tv_vf_connect_qp(qp, &cc, &theirs.ep, &mine.ep), 0);
	ck_assert_int_eq(tv_vf_post_send(qp, &wr, &bad), 0);
	ck_assert_int_eq(tv_sim_run(sim, 0, 0), 0);
	tv_engine_progress(e);
	ck_assert(tv_channel_failed(ch));
	ck_assert_int_eq(ch->fail_status.code, TV_DATA_LOSS);
	ck_assert_msg(has(ch->fail_status.message,
			  "unexpected receive opcode"), "%.200s",
		      ch->fail_status.message);
	ck_assert_int_eq(tv_engine_destroy(e), 0);
	ck_assert_int_eq(tv_sim_run(sim, 0, 0), 0);
	ck_assert_int_eq(tv_vf_destroy_qp(qp), 0);
	ck_assert_int_eq(tv_vf_dereg_mr(mr), 0);
	ck_assert_int_eq(tv_vf_destroy_cq(cq), 0);
	ck_assert_int_eq(tv_vf_dealloc_pd(pd), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
	free(rx);
}
END_TEST

/* ---- resets that cannot make their new QP ------------------------------------ */

START_TEST(test_reset_refused)
{
	struct h_world *w = h_world_default();
	struct tv_channel *ch = w->ch[0][1];
	struct tv_channel_info a, b;

	vfd_hook(w->dev[0]);
	vfd.fail_nth.create_cq = 1;
	ck_assert_int_eq(tv_channel_reset(ch), -ENOMEM);
	ck_assert_ptr_null(ch->qp);
	ck_assert_ptr_null(ch->cq);
	/* No QP: no info, no connect, progress has nothing to poll. */
	ck_assert_int_eq(tv_channel_info(ch, &a), -ENOTCONN);
	ck_assert_int_eq(tv__channel_progress(ch), 0);
	/* Regression: a reset after one that could not make its QP used to
	 * tear down the QP it did not have (a NULL dereference).  Now its
	 * receives cannot be posted: the reset says so. */
	vfd.fail_nth.post_recv = 1;
	ck_assert_int_eq(tv_channel_reset(ch), -ENOMEM);
	vfd_unhook(w->dev[0]);
	ck_assert(tv_channel_failed(ch));
	/* Both ends afresh: it works again. */
	ck_assert_int_eq(tv_channel_reset(ch), 0);
	ck_assert_int_eq(tv_channel_reset(w->ch[1][0]), 0);
	ck_assert(!tv_channel_failed(ch));
	ck_assert_int_eq(tv_channel_info(ch, &a), 0);
	ck_assert_int_eq(tv_channel_info(w->ch[1][0], &b), 0);
	ck_assert_int_eq(tv_channel_connect(ch, &b), 0);
	ck_assert_int_eq(tv_channel_connect(w->ch[1][0], &a), 0);
	{
		struct tv_tensor *t;
		int64_t dims[1] = { 64 };

		t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 9);
		ck_assert_int_eq(tv_engine_send(w->eng[1], 1, "t", t), 0);
		tv_tensor_unref(t);
		h_recv_expect(w, 0, 1, 1, "t", 9);
	}
	h_world_free(w);
}
END_TEST

static Suite *edges_suite(void)
{
	Suite *s = suite_create("channel_edges");
	TCase *tc = tcase_create("channel");

	tcase_add_test(tc, test_create_arguments);
	tcase_add_test(tc, test_create_device_failures);
	tcase_add_test(tc, test_create_allocations_fail);
	tcase_add_test(tc, test_info_connect_arguments);
	tcase_add_test(tc, test_message_post_refused);
	tcase_add_test(tc, test_ack_post_refused);
	tcase_add_test(tc, test_recv_repost_refused);
	tcase_add_test(tc, test_write_post_refused);
	tcase_add_test(tc, test_completion_for_nothing);
	tcase_add_test(tc, test_peer_sends_not_a_write);
	tcase_add_test(tc, test_reset_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(edges_suite());
}
