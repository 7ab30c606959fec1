/*
 * The engine's protocol paths and error paths, on the simulator.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "harness.h"

static const int64_t d_4x8[] = { 4, 8 };
static const int64_t d_16[] = { 16 };
static const int64_t d_3x5x7[] = { 3, 5, 7 };
static const int64_t d_5x3x7[] = { 5, 3, 7 };

/* Send from node 0, receive on node 1, all on host. */
static void transfer(struct h_world *w, uint64_t step, const char *name,
		     enum tv_dtype dt, uint32_t rank, const int64_t *dims,
		     uint8_t fill)
{
	struct tv_tensor *t = h_tensor(w, 0, dt, rank, dims, TV_PLACE_HOST,
				       fill);
	struct h_recv r;

	ck_assert_int_eq(tv_engine_send(w->eng[0], step, name, t), 0);
	tv_tensor_unref(t);
	h_recv(w, 1, 0, step, name, TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_OK);
	ck_assert_int_eq(tv_tensor_dtype(r.tensor), dt);
	ck_assert_uint_eq(tv_tensor_shape(r.tensor)->rank, rank);
	ck_assert(h_check_fill(r.tensor, fill));
	h_recv_release(&r);
}

START_TEST(first_request_goes_through_metadata)
{
	struct h_world *w = h_world_default();
	struct tv_engine_stats s0, s1;

	transfer(w, 1, "w", TV_DT_FLOAT, 2, d_4x8, 7);
	s0 = h_stats(w, 0);
	s1 = h_stats(w, 1);
	ck_assert_uint_eq(s1.msgs_sent[TV_MSG_TENSOR_REQUEST], 1);
	ck_assert_uint_eq(s0.msgs_sent[TV_MSG_META_DATA_UPDATE], 1);
	ck_assert_uint_eq(s1.msgs_sent[TV_MSG_TENSOR_RE_REQUEST], 1);
	ck_assert_uint_eq(s0.tensor_writes, 1);
	ck_assert_uint_eq(s0.tensor_bytes_written, 4 * 8 * 4);
	/* The clone was written, not the tensor itself. */
	ck_assert_uint_eq(s0.staged_writes, 1);
	ck_assert_uint_eq(s0.acks_recv, 1);
	ck_assert_uint_eq(s1.acks_recv, 2);
	ck_assert_uint_eq(s1.recvs_ok, 1);
	ck_assert_uint_eq(s1.live_requests, 0);
	ck_assert_uint_eq(s0.live_responses, 0);
	ck_assert_uint_eq(w->max_in_flight, 1);
	ck_assert_uint_eq(w->writes_checked, 1);
	/* Nothing cached yet: the general path on both sides. */
	ck_assert_uint_eq(s1.fast_requests, 0);
	ck_assert_uint_eq(s0.fast_responses, 0);
	h_world_free(w);
}
END_TEST

/*
 * Cached requests issued together: only the first finds the channel idle
 * and posts from the call; the others queue behind its message buffer and
 * go the general way.  All of them arrive, in any order of completion.
 */
START_TEST(fast_path_only_on_an_idle_channel)
{
	struct h_world *w = h_world_default();
	struct h_recv r[4];
	struct tv_tensor *t;
	uint64_t step;

	transfer(w, 1, "w", TV_DT_FLOAT, 2, d_4x8, 1);
	for (step = 2; step < 6; step++) {
		t = h_tensor(w, 0, TV_DT_FLOAT, 2, d_4x8, TV_PLACE_HOST,
			     (uint8_t)step);
		ck_assert_int_eq(tv_engine_send(w->eng[0], step, "w", t), 0);
		tv_tensor_unref(t);
	}
	for (step = 2; step < 6; step++)
		h_recv(w, 1, 0, step, "w", TV_PLACE_HOST, &r[step - 2]);
	ck_assert_uint_eq(h_stats(w, 1).fast_requests, 1);
	ck_assert_uint_eq(h_stats(w, 1).queued_msgs, 3);
	h_run(w);
	for (step = 2; step < 6; step++) {
		ck_assert_int_eq(r[step - 2].status.code, TV_OK);
		ck_assert(h_check_fill(r[step - 2].tensor, (uint8_t)step));
		h_recv_release(&r[step - 2]);
	}
	ck_assert_uint_eq(h_stats(w, 1).fast_requests, 1);
	ck_assert_uint_eq(h_stats(w, 1).msgs_sent[TV_MSG_TENSOR_REQUEST], 5);
	/* Every one of them was cached: all four writes left from the fast path. */
	ck_assert_uint_eq(h_stats(w, 0).fast_responses, 4);
	h_world_free(w);
}
END_TEST

/* A device receive goes through a proxy: never the request fast path. */
START_TEST(fast_path_not_for_device_receives)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t;
	struct h_recv r;
	uint64_t step;

	for (step = 1; step <= 3; step++) {
		t = h_tensor(w, 0, TV_DT_FLOAT, 2, d_4x8, TV_PLACE_HOST, 3);
		ck_assert_int_eq(tv_engine_send(w->eng[0], step, "dev", t), 0);
		tv_tensor_unref(t);
		h_recv(w, 1, 0, step, "dev", TV_PLACE_DEVICE, &r);
		h_run(w);
		ck_assert_int_eq(r.status.code, TV_OK);
		ck_assert(h_check_fill(r.tensor, 3));
		h_recv_release(&r);
	}
	ck_assert_uint_eq(h_stats(w, 1).fast_requests, 0);
	ck_assert_uint_eq(h_stats(w, 1).proxy_copies, 3);
	/* The sender's side of it is the same as for a host receive. */
	ck_assert_uint_eq(h_stats(w, 0).fast_responses, 2);
	h_world_free(w);
}
END_TEST

START_TEST(cached_metadata_writes_zero_copy)
{
	struct h_world *w = h_world_default();
	struct tv_engine_stats s0, s1;

	transfer(w, 1, "w", TV_DT_FLOAT, 2, d_4x8, 1);
	transfer(w, 2, "w", TV_DT_FLOAT, 2, d_4x8, 2);
	transfer(w, 3, "w", TV_DT_FLOAT, 2, d_4x8, 3);
	s0 = h_stats(w, 0);
	s1 = h_stats(w, 1);
	ck_assert_uint_eq(s0.msgs_sent[TV_MSG_META_DATA_UPDATE], 1);
	ck_assert_uint_eq(s1.msgs_sent[TV_MSG_TENSOR_REQUEST], 3);
	ck_assert_uint_eq(s1.msgs_sent[TV_MSG_TENSOR_RE_REQUEST], 1);
	ck_assert_uint_eq(s0.zero_copy_writes, 2);
	/* Steps 2 and 3 took the fast path on both sides; step 1 could not. */
	ck_assert_uint_eq(s1.fast_requests, 2);
	ck_assert_uint_eq(s0.fast_responses, 2);
	/*
	 * Node 0 ACKs 3 requests and the RE_REQUEST: the first request's
	 * ACK goes alone (a META_DATA_UPDATE answers it), the other three
	 * ride on the tensor writes.  Node 1's one ACK (of the update) is
	 * alone: it writes no tensors.
	 */
	ck_assert_uint_eq(s0.acks_sent, 4);
	ck_assert_uint_eq(s0.acks_ridden, 3);
	ck_assert_uint_eq(s1.acks_sent, 1);
	ck_assert_uint_eq(s1.acks_ridden, 0);
	ck_assert_uint_eq(s1.acks_recv, 4);
	/* One pool block registered per side, not one MR per tensor. */
	ck_assert_uint_eq(s1.pool_blocks, 1);
	h_world_free(w);
}
END_TEST

START_TEST(shape_and_dtype_changes_between_steps)
{
	struct h_world *w = h_world_default();
	struct tv_engine_stats s0;

	transfer(w, 1, "emb", TV_DT_FLOAT, 2, d_4x8, 1);
	transfer(w, 2, "emb", TV_DT_FLOAT, 1, d_16, 2);     /* smaller */
	transfer(w, 3, "emb", TV_DT_INT64, 3, d_3x5x7, 3);  /* larger */
	transfer(w, 4, "emb", TV_DT_UINT8, 3, d_3x5x7, 4);  /* dtype */
	transfer(w, 5, "emb", TV_DT_UINT8, 3, d_3x5x7, 5);  /* cached */
	/* Same dtype, rank and bytes, other dims: not the cached metadata. */
	transfer(w, 6, "emb", TV_DT_UINT8, 3, d_5x3x7, 6);
	s0 = h_stats(w, 0);
	ck_assert_uint_eq(s0.msgs_sent[TV_MSG_META_DATA_UPDATE], 5);
	ck_assert_uint_eq(s0.zero_copy_writes, 1);
	ck_assert_uint_eq(s0.fast_responses, 1);
	h_world_free(w);
}
END_TEST

START_TEST(dead_tensor)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t;
	struct h_recv r1, r2;

	ck_assert_int_eq(tv_tensor_create_dead(w->eng[0], TV_DT_FLOAT, &t), 0);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "d", t), 0);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 2, "d", t), 0);
	tv_tensor_unref(t);
	h_recv(w, 1, 0, 1, "d", TV_PLACE_HOST, &r1);
	h_run(w);
	h_recv(w, 1, 0, 2, "d", TV_PLACE_HOST, &r2);
	h_run(w);
	ck_assert_int_eq(r1.status.code, TV_OK);
	ck_assert(tv_tensor_is_dead(r1.tensor));
	ck_assert(tv_tensor_is_dead(r2.tensor));
	ck_assert_uint_eq(h_stats(w, 0).tensor_bytes_written, 0);
	ck_assert_uint_eq(h_stats(w, 0).msgs_sent[TV_MSG_META_DATA_UPDATE], 1);
	h_recv_release(&r1);
	h_recv_release(&r2);
	h_world_free(w);
}
END_TEST

START_TEST(zero_element_tensor)
{
	struct h_world *w = h_world_default();
	static const int64_t d0[] = { 0, 5 };

	transfer(w, 1, "z", TV_DT_DOUBLE, 2, d0, 0);
	transfer(w, 2, "z", TV_DT_DOUBLE, 2, d0, 0);
	ck_assert_uint_eq(h_stats(w, 0).tensor_bytes_written, 0);
	h_world_free(w);
}
END_TEST

static void string_step(struct h_world *w, uint64_t step, uint64_t n)
{
	struct tv_shape shape = { .rank = 1, .dims = { (int64_t)n } };
	struct tv_tensor *t;
	struct h_recv r;
	char buf[64];
	const void *p;
	size_t len;
	uint64_t i;

	ck_assert_int_eq(tv_tensor_create(w->eng[0], TV_DT_STRING, &shape,
					  TV_PLACE_HOST, &t), 0);
	for (i = 0; i < n; i++) {
		len = (size_t)snprintf(buf, sizeof(buf), "s%llu-%llu%c!",
				       (unsigned long long)step,
				       (unsigned long long)i, 0);
		ck_assert_int_eq(tv_tensor_set_string(t, i, buf, len), 0);
	}
	ck_assert_int_eq(tv_engine_send(w->eng[0], step, "str", t), 0);
	tv_tensor_unref(t);
	h_recv(w, 1, 0, step, "str", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.status.code, TV_OK);
	ck_assert_int_eq(tv_tensor_dtype(r.tensor), TV_DT_STRING);
	ck_assert_uint_eq(tv_tensor_num_elements(r.tensor), n);
	for (i = 0; i < n; i++) {
		size_t want = (size_t)snprintf(buf, sizeof(buf), "s%llu-%llu%c!",
					       (unsigned long long)step,
					       (unsigned long long)i, 0);

		ck_assert_int_eq(tv_tensor_get_string(r.tensor, i, &p, &len), 0);
		ck_assert_uint_eq(len, want);
		ck_assert_int_eq(memcmp(p, buf, len), 0);
	}
	h_recv_release(&r);
}

START_TEST(string_tensor_serialized)
{
	struct h_world *w = h_world_default();

	string_step(w, 1, 3);
	string_step(w, 2, 3);  /* same proto size: cached path */
	string_step(w, 3, 40); /* resized */
	string_step(w, 4, 0);
	ck_assert_uint_eq(h_stats(w, 0).zero_copy_writes, 0);
	ck_assert_uint_eq(h_stats(w, 0).msgs_sent[TV_MSG_META_DATA_UPDATE], 3);
	h_world_free(w);
}
END_TEST

START_TEST(device_placement_uses_proxies)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t;
	struct h_recv r;
	int step;

	for (step = 1; step <= 2; step++) {
		t = h_tensor(w, 0, TV_DT_INT32, 2, d_4x8, TV_PLACE_DEVICE,
			     (uint8_t)(9 + step));
		ck_assert_int_eq(tv_engine_send(w->eng[0], (uint64_t)step,
						"g", t), 0);
		tv_tensor_unref(t);
		h_recv(w, 1, 0, (uint64_t)step, "g", TV_PLACE_DEVICE, &r);
		h_run(w);
		ck_assert_int_eq(r.status.code, TV_OK);
		ck_assert_int_eq(tv_tensor_placement(r.tensor),
				 TV_PLACE_DEVICE);
		ck_assert(h_check_fill(r.tensor, (uint8_t)(9 + step)));
		h_recv_release(&r);
	}
	ck_assert_uint_eq(h_stats(w, 1).proxy_copies, 2);
	/* The sender's device tensor always goes through a host copy. */
	ck_assert_uint_eq(h_stats(w, 0).staged_writes, 2);
	ck_assert_uint_eq(h_stats(w, 0).zero_copy_writes, 0);
	h_world_free(w);
}
END_TEST

START_TEST(recv_before_send_waits_for_tensor)
{
	struct h_world *w = h_world_default();
	struct tv_tensor *t;
	struct h_recv r;

	h_recv(w, 1, 0, 9, "late", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.calls, 0);
	ck_assert_uint_eq(h_stats(w, 0).unmatched_requests, 1);
	t = h_tensor(w, 0, TV_DT_FLOAT, 1, d_16, TV_PLACE_HOST, 5);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 9, "late", t), 0);
	tv_tensor_unref(t);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_OK);
	ck_assert(h_check_fill(r.tensor, 5));
	ck_assert_uint_eq(h_stats(w, 0).unmatched_requests, 0);
	h_recv_release(&r);
	h_world_free(w);
}
END_TEST

START_TEST(sender_error_reaches_receiver)
{
	struct h_world *w = h_world_default();
	struct h_recv r1, r2;

	ck_assert_int_eq(tv_engine_send_error(w->eng[0], 1, "x", TV_NOT_FOUND,
					      "tensor x is gone"), 0);
	h_recv(w, 1, 0, 1, "x", TV_PLACE_HOST, &r1);
	h_recv(w, 1, 0, 2, "x", TV_PLACE_HOST, &r2); /* error comes later */
	h_run(w);
	ck_assert_int_eq(tv_engine_send_error(w->eng[0], 2, "x", TV_ABORTED,
					      "step 2 aborted"), 0);
	h_run(w);
	ck_assert_int_eq(r1.calls, 1);
	ck_assert_int_eq(r1.status.code, TV_NOT_FOUND);
	ck_assert_str_eq(r1.status.message, "tensor x is gone");
	ck_assert_ptr_null(r1.tensor);
	ck_assert_int_eq(r2.status.code, TV_ABORTED);
	ck_assert_str_eq(r2.status.message, "step 2 aborted");
	ck_assert_uint_eq(h_stats(w, 0).msgs_sent[TV_MSG_ERROR_STATUS], 2);
	h_world_free(w);
}
END_TEST

/* A done callback that receives again while it is being told why. */
struct chain {
	struct h_world *w;
	struct h_recv next;
	int calls;
	char seen[TV_STATUS_MSG_MAX + 1];
};

static void chain_done(void *arg, const struct tv_status *st,
		       struct tv_tensor *t)
{
	struct chain *c = arg;

	c->calls++;
	/* Starting a receive sends a message: st must survive that. */
	h_recv(c->w, 1, 0, 2, "again", TV_PLACE_HOST, &c->next);
	snprintf(c->seen, sizeof(c->seen), "%s", st->message);
	tv_tensor_unref(t);
}

START_TEST(callback_may_receive_while_reading_its_status)
{
	struct h_world *w = h_world_default();
	struct chain c = { .w = w };

	ck_assert_int_eq(tv_engine_send_error(w->eng[0], 1, "x", TV_ABORTED,
					      "the reason"), 0);
	ck_assert_int_eq(tv_engine_recv_async(w->eng[1], w->ch[1][0], 1, "x",
					      TV_PLACE_HOST, chain_done, &c), 0);
	h_run(w);
	ck_assert_int_eq(c.calls, 1);
	ck_assert_str_eq(c.seen, "the reason");
	ck_assert_int_eq(tv_engine_send_error(w->eng[0], 2, "again", TV_ABORTED,
					      "second"), 0);
	h_run(w);
	ck_assert_int_eq(c.next.calls, 1);
	ck_assert_str_eq(c.next.status.message, "second");
	h_world_free(w);
}
END_TEST

START_TEST(many_requests_queue_behind_credits)
{
	struct h_opts o;
	struct h_world *w;
	struct h_recv r[100];
	char name[32];
	int i;

	h_opts_default(&o);
	o.queue_depth = 4; /* one request in flight at most */
	w = h_world_new(&o);
	for (i = 0; i < 100; i++) {
		struct tv_tensor *t = h_tensor(w, 0, TV_DT_UINT8, 1, d_16,
					       TV_PLACE_HOST, (uint8_t)i);

		snprintf(name, sizeof(name), "t%d", i);
		ck_assert_int_eq(tv_engine_send(w->eng[0], 1, name, t), 0);
		tv_tensor_unref(t);
		h_recv(w, 1, 0, 1, name, TV_PLACE_HOST, &r[i]);
	}
	ck_assert_uint_eq(w->ch[1][0]->inflight, 1);
	h_run(w);
	for (i = 0; i < 100; i++) {
		ck_assert_int_eq(r[i].calls, 1);
		ck_assert_int_eq(r[i].status.code, TV_OK);
		ck_assert(h_check_fill(r[i].tensor, (uint8_t)i));
		h_recv_release(&r[i]);
	}
	ck_assert_int_eq(w->max_in_flight, 1);
	ck_assert_uint_eq(h_stats(w, 1).queued_msgs, 0);
	h_world_free(w);
}
END_TEST

START_TEST(both_sides_send_at_once)
{
	struct h_world *w = h_world_default();
	struct h_recv r[40];
	char name[32];
	int i;

	/* Each node is receiver and sender on the same channel. */
	for (i = 0; i < 40; i++) {
		uint32_t src = (uint32_t)(i & 1), dst = src ^ 1;
		struct tv_tensor *t = h_tensor(w, src, TV_DT_INT16, 1, d_16,
					       TV_PLACE_HOST, (uint8_t)i);

		snprintf(name, sizeof(name), "b%d", i);
		ck_assert_int_eq(tv_engine_send(w->eng[src], 3, name, t), 0);
		tv_tensor_unref(t);
		h_recv(w, dst, src, 3, name, TV_PLACE_HOST, &r[i]);
	}
	h_run(w);
	for (i = 0; i < 40; i++) {
		ck_assert_int_eq(r[i].status.code, TV_OK);
		ck_assert(h_check_fill(r[i].tensor, (uint8_t)i));
		h_recv_release(&r[i]);
	}
	h_world_free(w);
}
END_TEST

static void free_wrapped(void *arg, void *data)
{
	(*(int *)arg)++;
	free(data);
}

START_TEST(unregistered_host_memory_is_staged)
{
	struct h_world *w = h_world_default();
	struct tv_shape shape = { .rank = 1, .dims = { 64 } };
	struct tv_tensor *t;
	struct h_recv r;
	uint8_t *mem = malloc(64);
	int freed = 0, i;

	for (i = 0; i < 64; i++)
		mem[i] = (uint8_t)(3 + i);
	ck_assert_int_eq(tv_tensor_wrap_host(w->eng[0], TV_DT_UINT8, &shape,
					     mem, free_wrapped, &freed, &t), 0);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "u", t), 0);
	tv_tensor_unref(t);
	h_recv(w, 1, 0, 1, "u", TV_PLACE_HOST, &r);
	h_run(w);
	/* TensorFlow #23220: never lkey 0, never LOC_PROT_ERR. */
	ck_assert_int_eq(r.status.code, TV_OK);
	ck_assert(h_check_fill(r.tensor, 3));
	ck_assert_int_eq(freed, 1);
	ck_assert_uint_eq(w->channel_errors, 0);
	h_recv_release(&r);
	h_world_free(w);
}
END_TEST

START_TEST(checksum_validation_passes)
{
	struct h_opts o;
	struct h_world *w;

	h_opts_default(&o);
	o.validate = true;
	w = h_world_new(&o);
	static const int64_t d0[] = { 0 };
	struct tv_tensor *t;
	struct h_recv r;

	transfer(w, 1, "c", TV_DT_FLOAT, 2, d_4x8, 1);
	transfer(w, 2, "c", TV_DT_FLOAT, 2, d_4x8, 2);
	/* Empty payloads are checksummed too (an empty hash is not 0). */
	transfer(w, 3, "c", TV_DT_FLOAT, 1, d0, 0);
	ck_assert_int_eq(tv_tensor_create_dead(w->eng[0], TV_DT_FLOAT, &t), 0);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 4, "c", t), 0);
	tv_tensor_unref(t);
	h_recv(w, 1, 0, 4, "c", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.status.code, TV_OK);
	ck_assert(tv_tensor_is_dead(r.tensor));
	h_recv_release(&r);
	/* Validation forces the metadata path to carry the checksum. */
	ck_assert_uint_eq(h_stats(w, 0).msgs_sent[TV_MSG_META_DATA_UPDATE], 4);
	ck_assert_uint_eq(h_stats(w, 1).checksum_failures, 0);
	h_world_free(w);
}
END_TEST

/* Corrupt the first byte of every tensor write as it lands. */
static void corrupt_hook(struct h_world *w, const struct tv_sim_event *ev)
{
	if (ev->kind == TV_SIM_EV_DELIVER && ev->has_imm &&
	    tv_imm_is_write(ev->imm) && ev->length)
		((uint8_t *)(uintptr_t)ev->remote_addr)[0] ^= 0x5a;
}

START_TEST(checksum_mismatch_is_data_loss)
{
	struct h_opts o;
	struct h_world *w;
	struct tv_tensor *t;
	struct h_recv r;

	h_opts_default(&o);
	o.validate = true;
	w = h_world_new(&o);
	w->sim_hook = corrupt_hook;
	t = h_tensor(w, 0, TV_DT_FLOAT, 2, d_4x8, TV_PLACE_HOST, 1);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "c", t), 0);
	tv_tensor_unref(t);
	h_recv(w, 1, 0, 1, "c", TV_PLACE_HOST, &r);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_DATA_LOSS);
	ck_assert_ptr_nonnull(strstr(r.status.message, "checksum mismatch"));
	ck_assert_uint_eq(h_stats(w, 1).checksum_failures, 1);
	h_world_free(w);
}
END_TEST

START_TEST(request_index_wraps_without_collision)
{
	struct h_world *w = h_world_default();
	struct tv_channel *ch = w->ch[1][0];
	struct h_recv held, r[4];
	struct tv_tensor *t;
	char name[16];
	int i;

	ch->next_index = TV_IMM_MAX_REQUEST - 1;
	h_recv(w, 1, 0, 1, "held", TV_PLACE_HOST, &held); /* MAX-1, stays */
	h_run(w);
	ck_assert_uint_eq(w->last_index[1], TV_IMM_MAX_REQUEST - 1);
	for (i = 0; i < 4; i++) {
		if (i == 2)
			ch->next_index = TV_IMM_MAX_REQUEST - 1;
		t = h_tensor(w, 0, TV_DT_UINT8, 1, d_16, TV_PLACE_HOST,
			     (uint8_t)i);
		snprintf(name, sizeof(name), "n%d", i);
		ck_assert_int_eq(tv_engine_send(w->eng[0], 1, name, t), 0);
		tv_tensor_unref(t);
		h_recv(w, 1, 0, 1, name, TV_PLACE_HOST, &r[i]);
		h_run(w);
		ck_assert_int_eq(r[i].status.code, TV_OK);
		ck_assert(h_check_fill(r[i].tensor, (uint8_t)i));
		h_recv_release(&r[i]);
		/* MAX, then 0; after the rewind MAX-1 is live: MAX, 0. */
		ck_assert_uint_eq(w->last_index[1], (i % 2) ?
					0 : TV_IMM_MAX_REQUEST);
	}
	t = h_tensor(w, 0, TV_DT_UINT8, 1, d_16, TV_PLACE_HOST, 77);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "held", t), 0);
	tv_tensor_unref(t);
	h_run(w);
	ck_assert_int_eq(held.status.code, TV_OK);
	ck_assert(h_check_fill(held.tensor, 77));
	h_recv_release(&held);
	h_world_free(w);
}
END_TEST

/* ---- inline posts ------------------------------------------------------ */

static const int64_t d_4x64[] = { 4, 64 }; /* float: 1 KiB, never inline */

/* What the simulator saw posted with a payload, by node and by size. */
struct posts_seen {
	uint32_t limit;
	uint64_t small[2], large[2];
};

static void count_posts(struct h_world *w, const struct tv_sim_event *ev)
{
	struct posts_seen *c = w->hook_arg;

	if (ev->kind != TV_SIM_EV_POST_SEND || !ev->length || ev->node > 1)
		return;
	if (ev->length <= c->limit)
		c->small[ev->node]++;
	else
		c->large[ev->node]++;
}

/* Steps 1-3 of a 128-byte tensor (cached from step 2) and of a 1 KiB one. */
static void small_and_large(struct h_world *w)
{
	for (uint64_t step = 1; step <= 3; step++) {
		transfer(w, step, "w", TV_DT_FLOAT, 2, d_4x8, (uint8_t)step);
		transfer(w, step, "big", TV_DT_FLOAT, 2, d_4x64,
			 (uint8_t)(step + 9));
	}
}

START_TEST(small_payloads_post_inline)
{
	struct h_world *w = h_world_default();
	struct posts_seen c = { .limit = 128 };
	struct tv_engine_stats s0, s1;

	ck_assert_uint_eq(w->ch[0][1]->qp->max_inline_data, 128);
	w->sim_hook = count_posts;
	w->hook_arg = &c;
	small_and_large(w);
	s0 = h_stats(w, 0);
	s1 = h_stats(w, 1);
	/* Every post of up to 128 bytes went inline, and no other. */
	ck_assert_uint_eq(s0.inline_posts, c.small[0]);
	ck_assert_uint_eq(s1.inline_posts, c.small[1]);
	/* Six requests (and two RE_REQUESTs); three writes of "w". */
	ck_assert_uint_ge(s1.inline_posts, 6);
	ck_assert_uint_ge(s0.inline_posts, 3);
	ck_assert_uint_ge(c.large[0], 3); /* the writes of "big" */
	h_world_free(w);
}
END_TEST

START_TEST(inline_posts_can_be_turned_off)
{
	struct h_opts o;
	struct h_world *w;
	struct posts_seen c = { .limit = 128 };

	h_opts_default(&o);
	o.max_inline_bytes = 0;
	w = h_world_new(&o);
	ck_assert_uint_eq(w->ch[0][1]->qp->max_inline_data, 0);
	w->sim_hook = count_posts;
	w->hook_arg = &c;
	small_and_large(w);
	ck_assert_uint_eq(h_stats(w, 0).inline_posts, 0);
	ck_assert_uint_eq(h_stats(w, 1).inline_posts, 0);
	ck_assert_uint_ge(c.small[1], 6); /* the same requests, not inline */
	h_world_free(w);
}
END_TEST

/* More than the device has (the simulator's 512): QPs without inline. */
START_TEST(too_much_inline_falls_back_to_none)
{
	struct h_opts o;
	struct h_world *w;

	h_opts_default(&o);
	o.max_inline_bytes = 4096;
	w = h_world_new(&o);
	ck_assert_uint_eq(w->ch[0][1]->qp->max_inline_data, 0);
	ck_assert_uint_eq(w->ch[1][0]->qp->max_inline_data, 0);
	small_and_large(w);
	ck_assert_uint_eq(h_stats(w, 1).inline_posts, 0);
	h_world_free(w);
}
END_TEST

/* Overwrites a tensor as soon as node 0 posts a tensor write. */
struct scribble {
	struct tv_tensor *t;
	uint32_t posts;
};

static void scribble_on_write(struct h_world *w, const struct tv_sim_event *ev)
{
	struct scribble *s = w->hook_arg;

	if (ev->kind != TV_SIM_EV_POST_SEND || ev->node != 0 ||
	    !ev->has_imm || !tv_imm_is_write(ev->imm) || !s->t)
		return;
	memset(tv_tensor_data(s->t), 0xee, tv_tensor_size_bytes(s->t));
	s->posts++;
}

/*
 * Step 2 of a tensor (cached metadata: a zero-copy write from its own
 * memory), overwritten by the test once the write is posted.  true: the
 * receiver got the bytes of the post, false: those of the overwrite.
 */
static bool taken_at_post(struct h_world *w, const char *name,
			  const int64_t *dims)
{
	struct scribble s = { 0 };
	struct h_recv r;
	bool at_post;

	transfer(w, 1, name, TV_DT_FLOAT, 2, dims, 1);
	s.t = h_tensor(w, 0, TV_DT_FLOAT, 2, dims, TV_PLACE_HOST, 2);
	w->sim_hook = scribble_on_write;
	w->hook_arg = &s;
	ck_assert_int_eq(tv_engine_send(w->eng[0], 2, name, s.t), 0);
	h_recv(w, 1, 0, 2, name, TV_PLACE_HOST, &r);
	h_run(w);
	w->sim_hook = NULL;
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_OK);
	ck_assert_uint_eq(s.posts, 1);
	at_post = h_check_fill(r.tensor, 2);
	if (!at_post) {
		const uint8_t *p = tv_tensor_data(r.tensor);

		for (size_t i = 0; i < tv_tensor_size_bytes(r.tensor); i++)
			ck_assert_uint_eq(p[i], 0xee);
	}
	h_recv_release(&r);
	tv_tensor_unref(s.t);
	return at_post;
}

/*
 * What inline means: the payload is copied into the work request, so
 * the source may change once the post returns; a zero-copy write reads
 * its source when it executes (why the sender holds the tensor until the
 * write completes).
 */
START_TEST(inline_payload_is_taken_at_post)
{
	struct h_world *w = h_world_default();
	struct h_opts o;

	ck_assert(taken_at_post(w, "w", d_4x8));
	ck_assert(!taken_at_post(w, "big", d_4x64));
	h_world_free(w);
	h_opts_default(&o);
	o.max_inline_bytes = 0;
	w = h_world_new(&o);
	ck_assert(!taken_at_post(w, "w", d_4x8));
	h_world_free(w);
}
END_TEST

START_TEST(large_tensor_gets_its_own_block)
{
	struct h_world *w = h_world_default();
	static const int64_t d_big[] = { 3, 1024, 1024 }; /* 12 MiB float */

	transfer(w, 1, "big", TV_DT_FLOAT, 3, d_big, 11);
	transfer(w, 2, "big", TV_DT_FLOAT, 3, d_big, 12);
	ck_assert_uint_eq(h_stats(w, 0).zero_copy_writes, 1);
	h_world_free(w);
}
END_TEST

/* A busy two-way workload; returns the world's event hash. */
static uint64_t workload_hash(uint64_t seed)
{
	struct h_opts o;
	struct h_world *w;
	struct h_recv r[30];
	char name[16];
	uint64_t h;
	int i;

	h_opts_default(&o);
	o.seed = seed;
	o.nodes = 3;
	o.queue_depth = 6;
	w = h_world_new(&o);
	for (i = 0; i < 30; i++) {
		uint32_t src = (uint32_t)(i % 3), dst = (uint32_t)((i + 1) % 3);
		struct tv_tensor *t = h_tensor(w, src, TV_DT_FLOAT, 1, d_16,
					       TV_PLACE_HOST, (uint8_t)i);

		snprintf(name, sizeof(name), "w%d", i);
		ck_assert_int_eq(tv_engine_send(w->eng[src], 1, name, t), 0);
		tv_tensor_unref(t);
		h_recv(w, dst, src, 1, name, TV_PLACE_HOST, &r[i]);
	}
	h_run(w);
	for (i = 0; i < 30; i++) {
		ck_assert_int_eq(r[i].status.code, TV_OK);
		h_recv_release(&r[i]);
	}
	h = tv_sim_event_hash(w->sim);
	h_world_free(w);
	return h;
}

START_TEST(same_seed_same_event_stream)
{
	uint64_t a = workload_hash(42), b = workload_hash(42);
	uint64_t c = workload_hash(43);

	/* Heap addresses differ between the runs: nothing may depend on them. */
	ck_assert_uint_eq(a, b);
	ck_assert_uint_ne(a, c);
}
END_TEST

Suite *engine_paths_suite(void);
Suite *engine_errors_suite(void);
Suite *engine_units_suite(void);
Suite *engine_limits_suite(void);

Suite *engine_paths_suite(void)
{
	Suite *s = suite_create("engine-paths");
	TCase *tc = tcase_create("paths");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, first_request_goes_through_metadata);
	tcase_add_test(tc, cached_metadata_writes_zero_copy);
	tcase_add_test(tc, fast_path_only_on_an_idle_channel);
	tcase_add_test(tc, fast_path_not_for_device_receives);
	tcase_add_test(tc, shape_and_dtype_changes_between_steps);
	tcase_add_test(tc, dead_tensor);
	tcase_add_test(tc, zero_element_tensor);
	tcase_add_test(tc, string_tensor_serialized);
	tcase_add_test(tc, device_placement_uses_proxies);
	tcase_add_test(tc, recv_before_send_waits_for_tensor);
	tcase_add_test(tc, sender_error_reaches_receiver);
	tcase_add_test(tc, callback_may_receive_while_reading_its_status);
	tcase_add_test(tc, many_requests_queue_behind_credits);
	tcase_add_test(tc, both_sides_send_at_once);
	tcase_add_test(tc, unregistered_host_memory_is_staged);
	tcase_add_test(tc, checksum_validation_passes);
	tcase_add_test(tc, checksum_mismatch_is_data_loss);
	tcase_add_test(tc, request_index_wraps_without_collision);
	tcase_add_test(tc, large_tensor_gets_its_own_block);
	tcase_add_test(tc, small_payloads_post_inline);
	tcase_add_test(tc, inline_posts_can_be_turned_off);
	tcase_add_test(tc, too_much_inline_falls_back_to_none);
	tcase_add_test(tc, inline_payload_is_taken_at_post);
	tcase_add_test(tc, same_seed_same_event_stream);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(engine_paths_suite());
	int failed;

	srunner_add_suite(sr, engine_errors_suite());
	srunner_add_suite(sr, engine_units_suite());
	srunner_add_suite(sr, engine_limits_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
