/*
 * The rendezvous engine (engine/rendezvous/ but channel.c, which
 * test_channel_edges covers) and engine/map.c: error paths and edge cases.
 * Configurations and arguments refused, every allocation of an engine's
 * creation and of a transfer failing in turn (engine/alloc, and the
 * test's __wrap_ allocators for the plain malloc()s of serialize.c),
 * names long enough to live on the heap, blocking receives that time out
 * while waiting for a credit, timers off, wrapped tensors in registered
 * memory, a write of the wrong length, string tensors too big to
 * serialize, and the hash map's collisions and failed growth.  Every test
 * says which code, message or counter it expects, and that the next
 * transfer works.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <fiu.h>
#include <fiu-control.h>

#include "alloc_point.h"
#include "common/check_main.h"
#include "common/vf_double.h"
#include "common/wrap_alloc.h"
#include "engine_int.h" /* white box: the engine's config, a channel */
#include "harness.h"
#include "map.h"
#include "serialize.h"
#include "wire.h"

/* ---- the device double (common/vf_double.h), and completions that lie ---- */

static struct {
	int32_t byte_len_delta;  /* added to the next tensor write's length */
	long oom_on_write;       /* >= 0: oom_arm() this when one is polled */
	long alloc_on_msg;       /* >= 0: alloc_arm() this when a message is */
} lie = { .oom_on_write = -1, .alloc_on_msg = -1 };

/* vfd.on_poll: what poll_cq found, as lie says. */
static void lie_on_poll(struct tv_vf_wc *wc, int n)
{
	for (int i = 0; i < n; i++) {
		if (wc[i].opcode != TV_WC_RECV_RDMA_WITH_IMM ||
		    wc[i].status != TV_WC_SUCCESS)
			continue;
		if (wc[i].imm_data == TV_IMM_MESSAGE && lie.alloc_on_msg >= 0) {
			alloc_arm(lie.alloc_on_msg);
			lie.alloc_on_msg = -1;
		}
		if (!tv_imm_is_write(wc[i].imm_data))
			continue;
		if (lie.byte_len_delta) {
			wc[i].byte_len += (uint32_t)lie.byte_len_delta;
			lie.byte_len_delta = 0;
		}
		if (lie.oom_on_write >= 0) {
			oom_arm(lie.oom_on_write);
			lie.oom_on_write = -1;
		}
	}
}

static void lie_hook(struct tv_vf_device *dev)
{
	vfd_hook(dev);
	vfd.on_poll = lie_on_poll;
}

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

static bool has(const char *s, const char *sub)
{
	return strstr(s, sub) != NULL;
}

/* A name of len bytes: "n" then digits, unique per tag. */
static void long_name(char *buf, size_t len, char tag)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)('a' + (i * 7 + (size_t)tag) % 26);
	buf[0] = tag;
	buf[len] = '\0';
}

/* Send 64 bytes (fill) from node 1 as (step, name); receive on node 0 and
 * check them. */
static void transfer_ok(struct h_world *w, uint64_t step, const char *name,
			uint8_t fill)
{
	struct tv_tensor *t;
	int64_t dims[1] = { 64 };

	t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, fill);
	ck_assert_int_eq(tv_engine_send(w->eng[1], step, name, t), 0);
	tv_tensor_unref(t);
	h_recv_expect(w, 0, 1, step, name, fill);
}

/* ---- engine creation ---------------------------------------------------- */

START_TEST(test_engine_config_refused)
{
	struct tv_sim *sim = sim_new();
	struct tv_vf_device *dev = tv_sim_device(sim, 0);
	struct tv_engine_config ec;
	struct tv_engine *e = NULL;
	struct tv_shape shape = { .rank = 1, .dims = { 16 } };
	struct tv_tensor *t;

	tv_engine_config_default(&ec);
	ck_assert_int_eq(tv_engine_create(NULL, &ec, &e), -EINVAL);
	ck_assert_int_eq(tv_engine_create(dev, NULL, &e), -EINVAL);
	ck_assert_int_eq(tv_engine_create(dev, &ec, NULL), -EINVAL);
	ec.queue_depth = 3;
	ck_assert_int_eq(tv_engine_create(dev, &ec, &e), -EINVAL);
	ec.queue_depth = 65537;
	ck_assert_int_eq(tv_engine_create(dev, &ec, &e), -EINVAL);
	ec.queue_depth = 65536;
	ec.pool_block_bytes = 0;
	ck_assert_int_eq(tv_engine_create(dev, &ec, &e), -EINVAL);
	ec.pool_block_bytes = 4096;
	ec.device_free = NULL; /* device_alloc without device_free */
	ck_assert_int_eq(tv_engine_create(dev, &ec, &e), -EINVAL);
	ec.device_alloc = NULL;
	ck_assert_ptr_null(e);
	ck_assert_int_eq(tv_engine_destroy(NULL), -EINVAL);
	/* Neither: the defaults (malloc); max_recv_bytes 0: the default. */
	ec.max_recv_bytes = 0;
	ck_assert_int_eq(tv_engine_create(dev, &ec, &e), 0);
	ck_assert_ptr_nonnull(e->cfg.device_alloc);
	ck_assert_ptr_nonnull(e->cfg.device_free);
	ck_assert_uint_eq(e->cfg.max_recv_bytes, 4ull << 30); /* 4 GiB */
	ck_assert_int_eq(tv_tensor_create(e, TV_DT_INT32, &shape,
					  TV_PLACE_DEVICE, &t), 0);
	ck_assert_int_eq(tv_tensor_placement(t), TV_PLACE_DEVICE);
	memset(tv_tensor_data(t), 7, 64);
	tv_tensor_unref(t);
	ck_assert_int_eq(tv_engine_destroy(e), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* Each engine allocation of a creation fails in turn, then the pool's. */
START_TEST(test_engine_create_allocations_fail)
{
	struct tv_sim *sim = sim_new();
	struct tv_vf_device *dev = tv_sim_device(sim, 0);
	struct tv_engine_config ec;
	struct tv_engine *e = NULL;
	long n;
	int ret;

	tv_engine_config_default(&ec);
	/* Under fiu-run the engine's points go live by themselves. */
	ck_assert_int_eq(setenv("FIU_ENABLE", "", 1), 0);
	alloc_point_on();
	for (n = 0;; n++) {
		alloc_arm(n);
		ret = tv_engine_create(dev, &ec, &e);
		if (!alloc_disarm()) {
			ck_assert_int_eq(ret, 0);
			break;
		}
		ck_assert_msg(ret == -ENOMEM, "allocation %ld: %d", n, ret);
	}
	ck_assert_int_eq(n, 3); /* the engine, the tag and waiter maps */
	ck_assert_int_eq(tv_engine_destroy(e), 0);
	fiu_disable("engine/alloc");
	/* The pool's own allocation. */
	ck_assert_int_eq(fiu_enable("tv_pool/calloc", 1, NULL, FIU_ONETIME), 0);
	e = NULL;
	ck_assert_int_eq(tv_engine_create(dev, &ec, &e), -ENOMEM);
	ck_assert_ptr_null(e);
	fiu_disable("tv_pool/calloc");
	unsetenv("FIU_ENABLE");
	ck_assert_int_eq(setenv("FIU_CTRL_FIFO", "/nonexistent", 1), 0);
	ck_assert_int_eq(tv_engine_create(dev, &ec, &e), 0);
	ck_assert_int_eq(tv_engine_destroy(e), 0);
	unsetenv("FIU_CTRL_FIFO");
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* ---- publishing and receiving: arguments ----------------------------------- */

START_TEST(test_send_recv_arguments)
{
	struct h_world *w = h_world_default();
	struct tv_engine *e0 = w->eng[0], *e1 = w->eng[1];
	struct tv_tensor *t, *got = NULL;
	struct tv_status st;
	int64_t dims[1] = { 64 };
	char big[TV_NAME_MAX + 2];
	struct tv_engine_stats before = h_stats(w, 1), after;

	t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 1);
	ck_assert_int_eq(tv_engine_send(NULL, 1, "t", t), -EINVAL);
	ck_assert_int_eq(tv_engine_send(e1, 1, "t", NULL), -EINVAL);
	ck_assert_int_eq(tv_engine_send(e0, 1, "t", t), -EINVAL); /* e1's */
	ck_assert_int_eq(tv_engine_send(e1, 1, NULL, t), -EINVAL);
	ck_assert_int_eq(tv_engine_send(e1, 1, "", t), -EINVAL);
	long_name(big, TV_NAME_MAX + 1, 'x');
	ck_assert_int_eq(tv_engine_send(e1, 1, big, t), -ENAMETOOLONG);
	ck_assert_int_eq(tv_engine_send_error(NULL, 1, "e", TV_DATA_LOSS, "m"),
			 -EINVAL);
	ck_assert_int_eq(tv_engine_send_error(e1, 1, "e", TV_OK, "m"), -EINVAL);
	ck_assert_int_eq(tv_engine_send_error(e1, 1, "e", TV_CODE_MAX + 1, "m"),
			 -EINVAL);
	ck_assert_int_eq(tv_engine_send_error(e1, 1, "e", TV_DATA_LOSS, NULL),
			 -EINVAL);
	after = h_stats(w, 1);
	ck_assert_uint_eq(after.unmatched_sends, before.unmatched_sends);
	ck_assert_int_eq(tv_engine_send(e1, 1, "t", t), 0);
	ck_assert_int_eq(tv_engine_send(e1, 1, "t", t), -EEXIST);
	ck_assert_uint_eq(h_stats(w, 1).unmatched_sends, 1);
	tv_tensor_unref(t);

	/* Receives. */
	ck_assert_int_eq(tv_engine_recv_async(NULL, w->ch[0][1], 1, "t",
					      TV_PLACE_HOST, h_recv_done, NULL),
			 -EINVAL);
	ck_assert_int_eq(tv_engine_recv_async(e0, NULL, 1, "t", TV_PLACE_HOST,
					      h_recv_done, NULL), -EINVAL);
	ck_assert_int_eq(tv_engine_recv_async(e0, w->ch[1][0], 1, "t",
					      TV_PLACE_HOST, h_recv_done, NULL),
			 -EINVAL); /* node 1's channel */
	ck_assert_int_eq(tv_engine_recv_async(e0, w->ch[0][1], 1, "t",
					      TV_PLACE_HOST, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(tv_engine_recv_async(e0, w->ch[0][1], 1, "t",
					      (enum tv_placement)7,
					      h_recv_done, NULL), -EINVAL);
	ck_assert_int_eq(tv_engine_recv(e0, w->ch[0][1], 1, "t", TV_PLACE_HOST,
					1000, NULL, &got), -EINVAL);
	ck_assert_int_eq(tv_engine_recv(e0, w->ch[0][1], 1, "t", TV_PLACE_HOST,
					1000, &st, NULL), -EINVAL);
	ck_assert_int_eq(tv_engine_recv(e0, w->ch[0][1], 1, big, TV_PLACE_HOST,
					1000, &st, &got), -ENAMETOOLONG);
	ck_assert_int_eq(tv_engine_recv(e0, w->ch[0][1], 1, NULL,
					TV_PLACE_HOST, 1000, &st, &got),
			 -EINVAL);
	ck_assert_uint_eq(h_stats(w, 0).recvs_started, 0);
	ck_assert_uint_eq(h_stats(w, 0).live_requests, 0);
	/* None of it stuck: the transfer works. */
	h_recv_expect(w, 0, 1, 1, "t", 1);
	ck_assert_uint_eq(h_stats(w, 1).unmatched_sends, 0);
	h_world_free(w);
}
END_TEST

/* ---- names on the heap ------------------------------------------------------ */

/* Names of 96 bytes and more are kept on the heap (tags, requests,
 * responses): a tensor and an error both get through, under the longest
 * name there is. */
START_TEST(test_long_names)
{
	struct h_world *w = h_world_default();
	char name[TV_NAME_MAX + 1], ename[200];
	struct h_recv r;

	long_name(name, TV_NAME_MAX, 'L');
	transfer_ok(w, 1, name, 9);
	long_name(name, 96, 'M');
	/* The receive first: the request waits on the sender's side. */
	h_recv(w, 0, 1, 2, name, TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.calls, 0);
	ck_assert_uint_eq(h_stats(w, 1).unmatched_requests, 1);
	{
		struct tv_tensor *t;
		int64_t dims[1] = { 64 };

		t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 4);
		ck_assert_int_eq(tv_engine_send(w->eng[1], 2, name, t), 0);
		tv_tensor_unref(t);
	}
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_OK);
	ck_assert(h_check_fill(r.tensor, 4));
	h_recv_release(&r);
	long_name(ename, 150, 'E');
	ck_assert_int_eq(tv_engine_send_error(w->eng[1], 3, ename,
					      TV_FAILED_PRECONDITION,
					      "no such op"), 0);
	h_recv(w, 0, 1, 3, ename, TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_FAILED_PRECONDITION);
	ck_assert_str_eq(r.status.message, "no such op");
	ck_assert_ptr_null(r.tensor);
	ck_assert_uint_eq(h_stats(w, 1).unmatched_sends, 0);
	ck_assert_uint_eq(h_stats(w, 1).unmatched_requests, 0);
	h_world_free(w);
}
END_TEST

/* A long name's copy cannot be made: the send and the receive say -ENOMEM
 * and leave nothing behind; the same calls then work. */
START_TEST(test_long_name_copy_fails)
{
	struct h_world *w = h_world_default();
	char name[TV_NAME_MAX + 1];
	struct tv_tensor *t;
	struct h_recv r;
	int64_t dims[1] = { 64 };

	long_name(name, 300, 'N');
	t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 2);
	alloc_point_on();
	alloc_arm(1); /* the tag, then its name */
	ck_assert_int_eq(tv_engine_send(w->eng[1], 1, name, t), -ENOMEM);
	ck_assert(alloc_disarm());
	ck_assert_uint_eq(h_stats(w, 1).unmatched_sends, 0);
	alloc_arm(1); /* the request, then its name */
	ck_assert_int_eq(tv_engine_recv_async(w->eng[0], w->ch[0][1], 1, name,
					      TV_PLACE_HOST, h_recv_done, &r),
			 -ENOMEM);
	ck_assert(alloc_disarm());
	ck_assert_uint_eq(h_stats(w, 0).live_requests, 0);
	ck_assert_uint_eq(h_stats(w, 0).recvs_started, 0);
	fiu_disable("engine/alloc");
	ck_assert_int_eq(tv_engine_send(w->eng[1], 1, name, t), 0);
	tv_tensor_unref(t);
	h_recv_expect(w, 0, 1, 1, name, 2);
	h_world_free(w);
}
END_TEST

/*
 * Every engine allocation of a whole transfer (receive first, so that the
 * sender's response is made when the tensor is published; long names, so
 * that every name is copied) fails in turn: the receive ends exactly once
 * or its start says -ENOMEM, nothing stays alive on either side once the
 * channel is done with it, and a clean transfer works afterwards.
 */
START_TEST(test_transfer_allocations_fail)
{
	char name[200];
	long n;

	long_name(name, 120, 'T');
	alloc_point_on();
	for (n = 0; n < 64; n++) {
		struct h_world *w = h_world_default();
		struct tv_tensor *t;
		struct h_recv r;
		int64_t dims[1] = { 64 };
		int ret, sret;
		bool fired;

		memset(&r, 0, sizeof(r));
		t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 6);
		alloc_arm(n);
		ret = tv_engine_recv_async(w->eng[0], w->ch[0][1], 1, name,
					   TV_PLACE_HOST, h_recv_done, &r);
		h_run(w);
		sret = tv_engine_send(w->eng[1], 1, name, t);
		h_run(w);
		fired = alloc_disarm();
		tv_tensor_unref(t);
		if (!fired) {
			ck_assert_int_eq(ret, 0);
			ck_assert_int_eq(sret, 0);
			ck_assert_int_eq(r.calls, 1);
			ck_assert_int_eq(r.status.code, TV_OK);
			h_recv_release(&r);
			h_world_free(w);
			break;
		}
		ck_assert_msg(ret == 0 || ret == -ENOMEM, "%ld: recv %d", n,
			      ret);
		ck_assert_msg(sret == 0 || sret == -ENOMEM, "%ld: send %d", n,
			      sret);
		if (ret == 0) {
			ck_assert_msg(r.calls <= 1, "%ld: %d calls", n,
				      r.calls);
			if (r.calls && r.status.code != TV_OK)
				ck_assert_ptr_null(r.tensor);
		}
		h_recv_release(&r);
		/* The channel failed or not, a new transfer gets through
		 * (a failed channel is reset first, as the host would). */
		if (tv_channel_failed(w->ch[0][1]) ||
		    tv_channel_failed(w->ch[1][0])) {
			struct tv_channel_info a, b;

			ck_assert_int_eq(tv_channel_reset(w->ch[0][1]), 0);
			ck_assert_int_eq(tv_channel_reset(w->ch[1][0]), 0);
			ck_assert_int_eq(tv_channel_info(w->ch[0][1], &a), 0);
			ck_assert_int_eq(tv_channel_info(w->ch[1][0], &b), 0);
			ck_assert_int_eq(tv_channel_connect(w->ch[0][1], &b),
					 0);
			ck_assert_int_eq(tv_channel_connect(w->ch[1][0], &a),
					 0);
			/* What was in flight on the old QPs is gone (as the
			 * harness's own reconnect says). */
			w->msgs_in_flight[0][1] = 0;
			w->msgs_in_flight[1][0] = 0;
			h_run(w);
		}
		transfer_ok(w, 2, name, 8);
		h_world_free(w); /* asserts nothing leaked */
	}
	ck_assert_msg(n >= 4 && n < 64, "%ld allocations", n);
	fiu_disable("engine/alloc");
}
END_TEST

/* ---- blocking receives -------------------------------------------------------- */

/*
 * A blocking receive that times out while its request waits for a credit
 * (queue_depth 4: one request in flight) lives on without its caller: it
 * completes later and its tensor is dropped.
 */
START_TEST(test_blocking_recv_times_out_waiting_for_credit)
{
	struct h_opts o;
	struct h_world *w;
	struct tv_tensor *t, *got = NULL;
	struct tv_status st;
	struct h_recv a, c;
	int64_t dims[1] = { 64 };

	h_opts_default(&o);
	o.queue_depth = 4;
	w = h_world_new(&o);
	ck_assert_uint_eq(w->ch[0][1]->inflight_max, 1);
	h_recv(w, 0, 1, 1, "a", TV_PLACE_HOST, &a); /* takes the credit */
	h_recv(w, 0, 1, 1, "c", TV_PLACE_HOST, &c); /* waits for it */
	h_run(w);
	/* Nothing in the simulated world can complete it: the wait says
	 * so (-EDEADLK) before the 1 ms are up. */
	ck_assert_int_eq(tv_engine_recv(w->eng[0], w->ch[0][1], 1, "b",
					TV_PLACE_HOST, 1000 * 1000, &st, &got),
			 -EDEADLK);
	ck_assert_ptr_null(got);
	ck_assert(!tv_list_empty(&w->ch[0][1]->credit_wait));
	ck_assert_uint_eq(h_stats(w, 0).live_requests, 3);
	/* All published: "a" and "c" reach their callers, "b" nobody. */
	t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 1);
	ck_assert_int_eq(tv_engine_send(w->eng[1], 1, "a", t), 0);
	ck_assert_int_eq(tv_engine_send(w->eng[1], 1, "b", t), 0);
	ck_assert_int_eq(tv_engine_send(w->eng[1], 1, "c", t), 0);
	tv_tensor_unref(t);
	h_run(w);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(a.status.code, TV_OK);
	ck_assert_int_eq(c.calls, 1);
	ck_assert_int_eq(c.status.code, TV_OK);
	ck_assert(h_check_fill(c.tensor, 1));
	h_recv_release(&a);
	h_recv_release(&c);
	ck_assert_uint_eq(h_stats(w, 0).recvs_ok, 3);
	ck_assert_uint_eq(h_stats(w, 0).live_requests, 0);
	ck_assert_uint_eq(h_stats(w, 0).live_tensors, 0);
	transfer_ok(w, 2, "c", 3);
	h_world_free(w);
}
END_TEST

/* Without ACK timeouts, receive deadlines or reconnects no timer pass
 * runs; transfers and a blocking receive still work. */
START_TEST(test_no_timers)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t, *got = NULL;
	struct tv_status st;
	int64_t dims[1] = { 64 };

	for (int i = 0; i < 2; i++) {
		w->eng[i]->cfg.ack_timeout_ns = 0;
		ck_assert_uint_eq(w->eng[i]->cfg.recv_timeout_ns, 0);
		ck_assert_ptr_null(w->eng[i]->cfg.reconnect);
	}
	transfer_ok(w, 1, "t", 5);
	t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 7);
	ck_assert_int_eq(tv_engine_send(w->eng[1], 2, "u", t), 0);
	tv_tensor_unref(t);
	tv_engine_progress(w->eng[1]);
	ck_assert_int_eq(tv_engine_recv(w->eng[0], w->ch[0][1], 2, "u",
					TV_PLACE_HOST, 1000ull * 1000 * 1000,
					&st, &got), 0);
	ck_assert_int_eq(st.code, TV_OK);
	ck_assert(h_check_fill(got, 7));
	tv_tensor_unref(got);
	ck_assert_uint_eq(h_stats(w, 0).ack_timeouts, 0);
	h_world_free(w);
}
END_TEST

static int never_reconnect(void *ctx, struct tv_channel *ch)
{
	(void)ctx;
	(void)ch;
	ck_abort_msg("no channel fails here");
	return -EIO;
}

/* The timer pass with only a receive deadline, or only a reconnect
 * callback, configured: transfers work, nothing expires. */
START_TEST(test_timers_partly_configured)
{
	struct h_world *w = h_world_default();

	for (int i = 0; i < 2; i++) {
		w->eng[i]->cfg.ack_timeout_ns = 0;
		w->eng[i]->cfg.recv_timeout_ns = 1000ull * 1000 * 1000;
	}
	transfer_ok(w, 1, "t", 5);
	for (int i = 0; i < 2; i++) {
		w->eng[i]->cfg.recv_timeout_ns = 0;
		w->eng[i]->cfg.reconnect = never_reconnect;
	}
	transfer_ok(w, 2, "t", 6);
	for (int i = 0; i < 2; i++)
		w->eng[i]->cfg.reconnect = NULL;
	ck_assert_uint_eq(h_stats(w, 0).recv_timeouts, 0);
	ck_assert_uint_eq(h_stats(w, 0).ack_timeouts, 0);
	ck_assert_uint_eq(h_stats(w, 0).reconnects, 0);
	ck_assert_uint_eq(h_stats(w, 0).recvs_ok, 2);
	h_world_free(w);
}
END_TEST

/* ---- tensors ------------------------------------------------------------------ */

START_TEST(test_tensor_arguments)
{
	struct h_world *w = h_world_default();
	struct tv_engine *e = w->eng[0];
	struct tv_shape s1 = { .rank = 1, .dims = { 4 } };
	struct tv_shape huge = { .rank = 1, .dims = { INT64_C(1) << 62 } };
	struct tv_shape big = { .rank = 1, .dims = { 8 << 20 } };
	struct tv_shape deep = { .rank = TV_MAX_RANK + 1 };
	struct tv_shape wide = { .rank = 2, .dims = { INT64_MAX, 2 } };
	struct tv_tensor *t = NULL;
	uint64_t live = h_stats(w, 0).live_tensors;
	uint32_t data[4] = { 1, 2, 3, 4 };
	struct tv_str *items;

	ck_assert_int_eq(tv_tensor_create(NULL, TV_DT_INT32, &s1,
					  TV_PLACE_HOST, &t), -EINVAL);
	ck_assert_int_eq(tv_tensor_create(e, TV_DT_INT32, &s1, TV_PLACE_HOST,
					  NULL), -EINVAL);
	ck_assert_int_eq(tv_tensor_create(e, TV_DT_INT32, &s1,
					  (enum tv_placement)5, &t), -EINVAL);
	ck_assert_int_eq(tv_tensor_create(e, TV_DT_INVALID, &s1,
					  TV_PLACE_HOST, &t), -EINVAL);
	ck_assert_int_eq(tv_tensor_create(e, TV_DT_INT32, NULL, TV_PLACE_HOST,
					  &t), -EINVAL);
	ck_assert_int_eq(tv_tensor_create(e, TV_DT_INT32, &deep, TV_PLACE_HOST,
					  &t), -EINVAL);
	ck_assert_int_eq(tv_tensor_create(e, TV_DT_DOUBLE, &huge,
					  TV_PLACE_HOST, &t), -EOVERFLOW);
	ck_assert_int_eq(tv_tensor_create(e, TV_DT_STRING, &huge,
					  TV_PLACE_HOST, &t), -EOVERFLOW);
	ck_assert_int_eq(tv_tensor_create_dead(NULL, TV_DT_FLOAT, &t), -EINVAL);
	ck_assert_int_eq(tv_tensor_create_dead(e, TV_DT_FLOAT, NULL), -EINVAL);
	ck_assert_int_eq(tv_tensor_create_dead(e, TV_DT_INVALID, &t), -EINVAL);
	ck_assert_int_eq(tv_tensor_wrap_host(NULL, TV_DT_INT32, &s1, data, NULL,
					     NULL, &t), -EINVAL);
	ck_assert_int_eq(tv_tensor_wrap_host(e, TV_DT_INT32, &s1, data, NULL,
					     NULL, NULL), -EINVAL);
	ck_assert_int_eq(tv_tensor_wrap_host(e, TV_DT_STRING, &s1, data, NULL,
					     NULL, &t), -EINVAL);
	ck_assert_int_eq(tv_tensor_wrap_host(e, TV_DT_INT32, &deep, data, NULL,
					     NULL, &t), -EINVAL);
	ck_assert_int_eq(tv_tensor_wrap_host(e, TV_DT_INT32, &s1, NULL, NULL,
					     NULL, &t), -EINVAL);
	/* Strings adopted: the count must be the shape's. */
	items = calloc(3, sizeof(*items));
	ck_assert_ptr_nonnull(items);
	ck_assert_int_eq(tv__tensor_adopt_strings(e, &s1, items, 3, &t),
			 -EINVAL);
	ck_assert_int_eq(tv__tensor_adopt_strings(e, &wide, items, 3, &t),
			 -EOVERFLOW);
	free(items);
	ck_assert_ptr_null(t);
	ck_assert_uint_eq(h_stats(w, 0).live_tensors, live);
	/* The pool cannot register the memory of a tensor larger than its
	 * blocks. */
	lie_hook(w->dev[0]);
	vfd.fail_nth.reg_mr = 1;
	ck_assert_int_eq(tv_tensor_create(e, TV_DT_FLOAT, &big, TV_PLACE_HOST,
					  &t), -ENOMEM);
	ck_assert_int_eq(vfd.fail_nth.reg_mr, 0);
	vfd_unhook(w->dev[0]);
	ck_assert_ptr_null(t);
	ck_assert_uint_eq(h_stats(w, 0).live_tensors, live);
	ck_assert_uint_eq(h_stats(w, 0).pool_live_bytes, 0);
	/* An empty wrapped tensor needs no data. */
	s1.dims[0] = 0;
	ck_assert_int_eq(tv_tensor_wrap_host(e, TV_DT_INT32, &s1, NULL, NULL,
					     NULL, &t), 0);
	ck_assert_uint_eq(tv_tensor_size_bytes(t), 0);
	{
		struct tv_tensor *t2;

		/* No bytes: the checksum is the dtype's and shape's. */
		ck_assert_int_eq(tv_tensor_wrap_host(e, TV_DT_INT32, &s1, NULL,
						     NULL, NULL, &t2), 0);
		ck_assert_uint_eq(tv_tensor_checksum(t), tv_tensor_checksum(t2));
		tv_tensor_unref(t2);
	}
	tv_tensor_unref(t);
	tv_tensor_unref(NULL);
	ck_assert_uint_eq(h_stats(w, 0).live_tensors, live);
	transfer_ok(w, 1, "t", 1);
	h_world_free(w);
}
END_TEST

/* A host tensor wrapped around memory the pool registered goes out
 * without a copy (the pool's keys found by lookup). */
START_TEST(test_wrapped_registered_zero_copy)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *pool_t, *wrapped;
	struct tv_shape shape = { .rank = 1, .dims = { 256 } };
	int64_t dims[1] = { 256 };
	struct tv_engine_stats before, after;

	/* The first transfer of a name is staged (META_DATA_UPDATE); the
	 * receiver has the metadata from then on. */
	pool_t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 10);
	ck_assert_int_eq(tv_engine_send(w->eng[1], 1, "w", pool_t), 0);
	tv_tensor_unref(pool_t);
	h_recv_expect(w, 0, 1, 1, "w", 10);
	pool_t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 11);
	ck_assert_int_eq(tv_tensor_wrap_host(w->eng[1], TV_DT_UINT8, &shape,
					     tv_tensor_data(pool_t), NULL, NULL,
					     &wrapped), 0);
	before = h_stats(w, 1);
	ck_assert_int_eq(tv_engine_send(w->eng[1], 2, "w", wrapped), 0);
	tv_tensor_unref(wrapped);
	h_recv_expect(w, 0, 1, 2, "w", 11);
	after = h_stats(w, 1);
	ck_assert_uint_eq(after.tensor_writes, before.tensor_writes + 1);
	ck_assert_uint_eq(after.zero_copy_writes, before.zero_copy_writes + 1);
	ck_assert_uint_eq(after.staged_writes, before.staged_writes);
	ck_assert_uint_eq(after.pool_live_bytes, before.pool_live_bytes);
	tv_tensor_unref(pool_t);
	h_world_free(w);
}
END_TEST

/* ---- a write of the wrong length ------------------------------------------------ */

START_TEST(test_write_wrong_length)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t;
	struct h_recv r;
	int64_t dims[1] = { 64 };

	t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 3);
	ck_assert_int_eq(tv_engine_send(w->eng[1], 1, "t", t), 0);
	tv_tensor_unref(t);
	lie_hook(w->dev[0]);
	lie.byte_len_delta = -1;
	h_recv(w, 0, 1, 1, "t", TV_PLACE_HOST, &r);
	h_run(w);
	vfd_unhook(w->dev[0]);
	ck_assert_int_eq(lie.byte_len_delta, 0); /* it did fire */
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_DATA_LOSS);
	ck_assert_str_eq(r.status.message,
			 "tensor 't' arrived with 63 bytes, expected 64");
	ck_assert_ptr_null(r.tensor);
	ck_assert(!tv_channel_failed(w->ch[0][1]));
	ck_assert_uint_eq(h_stats(w, 0).live_requests, 0);
	ck_assert_uint_eq(h_stats(w, 0).recvs_failed, 1);
	transfer_ok(w, 2, "t", 4);
	h_world_free(w);
}
END_TEST

/* ---- failures on the way ------------------------------------------------------ */

static void *no_device_memory(void *ctx, size_t size)
{
	(void)ctx;
	(void)size;
	return NULL;
}

/* With the metadata cached, a device receive allocates its buffer before
 * the request goes out: that failing, RESOURCE_EXHAUSTED at once. */
START_TEST(test_cached_meta_dest_alloc_fails)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t;
	struct h_recv r;
	int64_t dims[1] = { 64 };
	void *(*real_alloc)(void *, size_t) = w->eng[0]->cfg.device_alloc;
	struct tv_engine_stats before;

	transfer_ok(w, 1, "d", 1); /* node 0 has the metadata of "d" now */
	t = h_tensor(w, 1, TV_DT_UINT8, 1, dims, TV_PLACE_HOST, 2);
	ck_assert_int_eq(tv_engine_send(w->eng[1], 2, "d", t), 0);
	before = h_stats(w, 0);
	w->eng[0]->cfg.device_alloc = no_device_memory;
	h_recv(w, 0, 1, 2, "d", TV_PLACE_DEVICE, &r);
	h_run(w);
	w->eng[0]->cfg.device_alloc = real_alloc;
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_RESOURCE_EXHAUSTED);
	ck_assert_str_eq(r.status.message,
			 "allocating the receive buffer failed");
	ck_assert_ptr_null(r.tensor);
	ck_assert(!tv_channel_failed(w->ch[0][1]));
	ck_assert_uint_eq(h_stats(w, 0).live_requests, 0);
	ck_assert_uint_eq(h_stats(w, 0).pool_live_bytes,
			  before.pool_live_bytes);
	ck_assert_uint_eq(h_stats(w, 0).recvs_failed, before.recvs_failed + 1);
	/* The tensor is still published: a device receive now gets it. */
	h_recv(w, 0, 1, 2, "d", TV_PLACE_DEVICE, &r);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_OK);
	ck_assert(h_check_fill(r.tensor, 2));
	h_recv_release(&r);
	tv_tensor_unref(t);
	h_world_free(w);
}
END_TEST

/* The sender cannot register the serialized copy of a string tensor
 * larger than its pool's blocks: the receiver gets RESOURCE_EXHAUSTED. */
START_TEST(test_string_serialize_no_memory)
{
	struct h_opts o;
	struct h_world *w;
	struct tv_shape s1 = { .rank = 1, .dims = { 1 } };
	struct tv_tensor *t;
	struct h_recv r;
	size_t len = 64 * 1024;
	char *big = malloc(len);

	ck_assert_ptr_nonnull(big);
	memset(big, 'q', len);
	h_opts_default(&o);
	o.pool_block_bytes = 16 * 1024;
	w = h_world_new(&o);
	ck_assert_int_eq(tv_tensor_create(w->eng[1], TV_DT_STRING, &s1,
					  TV_PLACE_HOST, &t), 0);
	ck_assert_int_eq(tv_tensor_set_string(t, 0, big, len), 0);
	free(big);
	ck_assert_int_eq(tv_engine_send(w->eng[1], 1, "s", t), 0);
	tv_tensor_unref(t);
	lie_hook(w->dev[1]);
	vfd.fail_nth.reg_mr = 1; /* the dedicated block of the copy */
	h_recv(w, 0, 1, 1, "s", TV_PLACE_HOST, &r);
	h_run(w);
	vfd_unhook(w->dev[1]);
	ck_assert_int_eq(vfd.fail_nth.reg_mr, 0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_RESOURCE_EXHAUSTED);
	ck_assert_msg(has(r.status.message, "preparing the send"), "%.200s",
		      r.status.message);
	ck_assert_ptr_null(r.tensor);
	ck_assert_uint_eq(h_stats(w, 1).pool_live_bytes, 0);
	ck_assert_uint_eq(h_stats(w, 1).live_responses, 0);
	transfer_ok(w, 2, "t", 5);
	h_world_free(w);
}
END_TEST

/* A channel failed from outside, without reconnect, while requests wait
 * for a credit: all of them end with the channel's status. */
START_TEST(test_fail_with_requests_waiting_for_credit)
{
	struct h_opts o;
	struct h_world *w;
	struct h_recv r[3];
	const char *names[3] = { "a", "b", "c" };

	h_opts_default(&o);
	o.queue_depth = 4; /* one request in flight */
	w = h_world_new(&o);
	for (int i = 0; i < 3; i++)
		h_recv(w, 0, 1, 1, names[i], TV_PLACE_HOST, &r[i]);
	h_run(w);
	ck_assert(!tv_list_empty(&w->ch[0][1]->credit_wait));
	ck_assert_int_eq(tv_channel_fail(w->ch[0][1], TV_UNAVAILABLE,
					 "peer went away"), 0);
	h_run(w);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(r[i].calls, 1);
		ck_assert_int_eq(r[i].status.code, TV_UNAVAILABLE);
		ck_assert_msg(has(r[i].status.message, "peer went away"),
			      "%.200s", r[i].status.message);
		ck_assert_ptr_null(r[i].tensor);
	}
	ck_assert(tv_list_empty(&w->ch[0][1]->credit_wait));
	ck_assert_uint_eq(h_stats(w, 0).live_requests, 0);
	ck_assert_uint_eq(h_stats(w, 0).recvs_failed, 3);
	/* A receive on the failed channel ends at once, the same way. */
	h_recv(w, 0, 1, 2, "d", TV_PLACE_HOST, &r[0]);
	ck_assert_int_eq(r[0].calls, 1);
	ck_assert_int_eq(r[0].status.code, TV_UNAVAILABLE);
	h_world_free(w);
}
END_TEST

/*
 * An empty tensor's metadata arrives: each engine allocation from the
 * receiver's poll of that message on fails in turn.  The metadata's cache
 * entry failing costs nothing (the receive succeeds, uncached); the
 * tensor's failing ends the receive with RESOURCE_EXHAUSTED.  Either way
 * the receive ends once, the channel stays up, nothing is left alive.
 */
START_TEST(test_empty_tensor_allocations_fail)
{
	bool exhausted = false;
	long n;

	alloc_point_on();
	for (n = 0; n < 16; n++) {
		struct h_world *w = h_world_default();
		struct tv_tensor *t;
		struct h_recv r;
		int64_t dims[1] = { 0 };
		bool fired;

		t = h_tensor(w, 1, TV_DT_FLOAT, 1, dims, TV_PLACE_HOST, 0);
		ck_assert_int_eq(tv_engine_send(w->eng[1], 1, "e", t), 0);
		tv_tensor_unref(t);
		lie_hook(w->dev[0]);
		lie.alloc_on_msg = n; /* node 0's first message: the metadata */
		/* On the device: the empty tensor is made with the metadata. */
		h_recv(w, 0, 1, 1, "e", TV_PLACE_DEVICE, &r);
		h_run(w);
		fired = alloc_disarm();
		vfd_unhook(w->dev[0]);
		ck_assert_int_eq(lie.alloc_on_msg, -1);
		ck_assert_int_eq(r.calls, 1);
		if (r.status.code == TV_RESOURCE_EXHAUSTED) {
			ck_assert(fired);
			ck_assert_str_eq(r.status.message,
					 "decoding tensor 'e' failed: Cannot "
					 "allocate memory");
			ck_assert_ptr_null(r.tensor);
			exhausted = true;
		} else {
			ck_assert_int_eq(r.status.code, TV_OK);
			ck_assert_uint_eq(tv_tensor_size_bytes(r.tensor), 0);
		}
		h_recv_release(&r);
		ck_assert(!tv_channel_failed(w->ch[0][1]));
		ck_assert_uint_eq(h_stats(w, 0).live_requests, 0);
		ck_assert_uint_eq(h_stats(w, 1).live_responses, 0);
		transfer_ok(w, 2, "t", 1);
		h_world_free(w);
		if (!fired)
			break;
	}
	fiu_disable("engine/alloc");
	ck_assert(exhausted);
	ck_assert_int_ge(n, 2);
	ck_assert_int_lt(n, 16);
}
END_TEST

/* ---- serialization ------------------------------------------------------------- */

START_TEST(test_serialize_edges)
{
	struct tv_shape s2 = { .rank = 1, .dims = { 2 } };
	struct tv_str items[2] = { { (char *)"ab", 2 }, { NULL, 3 } };
	struct tv_str *out = NULL;
	struct tv_shape got;
	uint64_t count;
	uint8_t buf[64];
	size_t size, len;
	long n;
	int ret;

	/* A string with bytes but no pointer. */
	ck_assert_int_eq(tv_proto_packed_size(&s2, items, 2, &size), -EINVAL);
	ck_assert_int_eq(tv_proto_pack(&s2, items, 2, buf, sizeof(buf), &len),
			 -EINVAL);
	/* Past TV_SERIALIZED_BYTES_MAX: only the lengths are summed, so the
	 * strings need not exist. */
	items[0].ptr = (char *)buf;
	items[0].len = (size_t)TV_SERIALIZED_BYTES_MAX;
	items[1].ptr = (char *)buf;
	items[1].len = 1;
	ck_assert_int_eq(tv_proto_packed_size(&s2, items, 2, &size),
			 -EOVERFLOW);
	ck_assert_int_eq(tv_proto_pack(&s2, items, 2, buf, sizeof(buf), &len),
			 -EOVERFLOW);
	ck_assert_int_eq(tv_proto_unpack(NULL, 3, NULL, &got, &out, &count),
			 -EINVAL);
	/* No bytes at all: an empty message, not a string tensor. */
	ck_assert_int_eq(tv_proto_unpack(NULL, 0, NULL, &got, &out, &count),
			 -EBADMSG);
	ck_assert_int_eq(tv_wire_decode(buf, sizeof(buf), NULL), -EINVAL);
	ck_assert_int_eq(tv_wire_decode(NULL, sizeof(buf), NULL), -EINVAL);
	/* The frame's allocation fails. */
	items[0].ptr = (char *)"ab";
	items[0].len = 2;
	items[1].ptr = (char *)"";
	items[1].len = 0;
	oom_arm(0);
	ret = tv_proto_packed_size(&s2, items, 2, &size);
	ck_assert(oom_disarm());
	ck_assert_int_eq(ret, -ENOMEM);
	ck_assert_int_eq(tv_proto_pack(&s2, items, 2, buf, sizeof(buf), &len),
			 0);
	/* Each allocation of an unpack fails in turn. */
	for (n = 0;; n++) {
		oom_arm(n);
		ret = tv_proto_unpack(buf, len, &s2, &got, &out, &count);
		if (!oom_disarm())
			break;
		ck_assert_msg(ret == -ENOMEM, "allocation %ld: %d", n, ret);
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_int_ge(n, 4); /* protobuf-c's, the array, both strings */
	ck_assert_uint_eq(count, 2);
	ck_assert_uint_eq(out[0].len, 2);
	ck_assert_mem_eq(out[0].ptr, "ab", 2);
	ck_assert_uint_eq(out[1].len, 0);
	tv_proto_free_items(out, count);
	tv_proto_free_items(NULL, 3);
}
END_TEST

/* h_recv_done(), with plain allocations failing no more (Check's own
 * allocations come after it). */
static volatile bool oom_fired_in_recv;

static void recv_done_disarm(void *arg, const struct tv_status *st,
			     struct tv_tensor *t)
{
	oom_fired_in_recv = oom_disarm();
	h_recv_done(arg, st, t);
}

/* A string tensor whose receive cannot decode it for want of memory:
 * RESOURCE_EXHAUSTED, and the next one gets through. */
START_TEST(test_string_decode_out_of_memory)
{
	struct h_world *w = h_world_default();
	struct tv_shape s2 = { .rank = 1, .dims = { 2 } };
	struct tv_tensor *t, *t2;
	struct h_recv r;
	long n;

	ck_assert_int_eq(tv_tensor_create(w->eng[1], TV_DT_STRING, &s2,
					  TV_PLACE_HOST, &t), 0);
	ck_assert_int_eq(tv_tensor_set_string(t, 0, "hello", 5), 0);
	ck_assert_int_eq(tv_tensor_set_string(t, 1, "world!", 6), 0);
	lie_hook(w->dev[0]);
	for (n = 0; n < 64; n++) {
		char name[16];
		bool fired;

		snprintf(name, sizeof(name), "s%ld", n);
		ck_assert_int_eq(tv_engine_send(w->eng[1], 1, name, t), 0);
		memset(&r, 0, sizeof(r));
		ck_assert_int_eq(tv_engine_recv_async(w->eng[0], w->ch[0][1], 1,
						      name, TV_PLACE_HOST,
						      recv_done_disarm, &r), 0);
		/* From the receiver's poll of the tensor's write to the
		 * receive's end, its nth plain allocation fails. */
		oom_fired_in_recv = false;
		lie.oom_on_write = n;
		h_run(w);
		fired = oom_fired_in_recv;
		ck_assert_int_eq(lie.oom_on_write, -1);
		ck_assert_int_eq(r.calls, 1);
		if (!fired)
			break;
		ck_assert_int_eq(r.status.code, TV_RESOURCE_EXHAUSTED);
		ck_assert_msg(has(r.status.message, "decoding tensor 's") &&
			      has(r.status.message, "Cannot allocate memory"),
			      "%.200s", r.status.message);
		ck_assert_ptr_null(r.tensor);
		ck_assert(!tv_channel_failed(w->ch[0][1]));
	}
	vfd_unhook(w->dev[0]);
	ck_assert_int_ge(n, 4);
	ck_assert_int_lt(n, 64);
	ck_assert_int_eq(r.status.code, TV_OK);
	{
		const void *b;
		size_t l;

		ck_assert_int_eq(tv_tensor_get_string(r.tensor, 1, &b, &l), 0);
		ck_assert_uint_eq(l, 6);
		ck_assert_mem_eq(b, "world!", 6);
	}
	t2 = r.tensor;
	ck_assert_uint_eq(tv_tensor_num_elements(t2), 2);
	h_recv_release(&r);
	tv_tensor_unref(t);
	ck_assert_uint_eq(h_stats(w, 0).live_requests, 0);
	h_world_free(w);
}
END_TEST

/* ---- the hash map ----------------------------------------------------------------- */

START_TEST(test_map_edges)
{
	struct tv_hmap m;
	struct tv_hnode nodes[20];
	struct tv_hnode *it;
	size_t seen;

	alloc_point_on();
	/* A hint past 2^30 buckets is capped there; that calloc failing. */
	alloc_arm(0);
	ck_assert_int_eq(tv_hmap_init(&m, ((size_t)1 << 31) + 1), -ENOMEM);
	ck_assert(alloc_disarm());
	ck_assert_int_eq(tv_hmap_init(&m, 1), 0);
	ck_assert_uint_eq(m.nbuckets, 16);
	ck_assert_ptr_null(tv_hmap_any(&m));
	ck_assert_ptr_null(tv_hmap_iter(&m, NULL));
	/* Hashes 1 and 17 share a bucket: next_same skips the other. */
	tv_hmap_insert(&m, &nodes[0], 1);
	tv_hmap_insert(&m, &nodes[1], 17);
	tv_hmap_insert(&m, &nodes[2], 1);
	ck_assert_ptr_eq(tv_hmap_first(&m, 1), &nodes[0]);
	ck_assert_ptr_eq(tv_hmap_next_same(&nodes[0]), &nodes[2]);
	ck_assert_ptr_null(tv_hmap_next_same(&nodes[2]));
	ck_assert_ptr_eq(tv_hmap_first(&m, 17), &nodes[1]);
	ck_assert_ptr_null(tv_hmap_next_same(&nodes[1]));
	ck_assert_ptr_null(tv_hmap_first(&m, 33));
	/* Fill to the table's size; its growth fails: the old one stays. */
	for (int i = 3; i < 16; i++)
		tv_hmap_insert(&m, &nodes[i], (uint64_t)i * 0x10001);
	ck_assert_uint_eq(m.count, 16);
	alloc_arm(0);
	tv_hmap_insert(&m, &nodes[16], 16 * 0x10001);
	ck_assert(alloc_disarm());
	ck_assert_uint_eq(m.nbuckets, 16);
	ck_assert_uint_eq(m.count, 17);
	ck_assert_ptr_eq(tv_hmap_first(&m, 16 * 0x10001), &nodes[16]);
	for (seen = 0, it = NULL; (it = tv_hmap_iter(&m, it));)
		seen++;
	ck_assert_uint_eq(seen, 17);
	/* The next insert grows it, chains kept in order. */
	tv_hmap_insert(&m, &nodes[17], 33);
	ck_assert_uint_eq(m.nbuckets, 32);
	ck_assert_ptr_eq(tv_hmap_first(&m, 1), &nodes[0]);
	ck_assert_ptr_eq(tv_hmap_next_same(&nodes[0]), &nodes[2]);
	ck_assert_ptr_eq(tv_hmap_first(&m, 33), &nodes[17]);
	fiu_disable("engine/alloc");
	for (int i = 0; i < 18; i++)
		tv_hmap_remove(&m, &nodes[i]);
	ck_assert_uint_eq(m.count, 0);
	ck_assert_ptr_null(tv_hmap_any(&m));
	tv_hmap_fini(&m);
}
END_TEST

static Suite *edges_suite(void)
{
	Suite *s = suite_create("rendezvous_edges");
	TCase *tc = tcase_create("edges");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_engine_config_refused);
	tcase_add_test(tc, test_engine_create_allocations_fail);
	tcase_add_test(tc, test_send_recv_arguments);
	tcase_add_test(tc, test_long_names);
	tcase_add_test(tc, test_long_name_copy_fails);
	tcase_add_test(tc, test_transfer_allocations_fail);
	tcase_add_test(tc, test_blocking_recv_times_out_waiting_for_credit);
	tcase_add_test(tc, test_no_timers);
	tcase_add_test(tc, test_timers_partly_configured);
	tcase_add_test(tc, test_tensor_arguments);
	tcase_add_test(tc, test_wrapped_registered_zero_copy);
	tcase_add_test(tc, test_write_wrong_length);
	tcase_add_test(tc, test_cached_meta_dest_alloc_fails);
	tcase_add_test(tc, test_string_serialize_no_memory);
	tcase_add_test(tc, test_fail_with_requests_waiting_for_credit);
	tcase_add_test(tc, test_empty_tensor_allocations_fail);
	tcase_add_test(tc, test_serialize_edges);
	tcase_add_test(tc, test_string_decode_out_of_memory);
	tcase_add_test(tc, test_map_edges);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(edges_suite());
}
