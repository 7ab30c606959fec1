/*
 * The engine's limits on what a peer may make it do: max_recv_bytes, the
 * largest tensor one receive allocates and pins on the peer's word (its
 * META_DATA_UPDATE says how big).  Refused before any allocation, the
 * sender let go, the channel kept.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "engine_int.h"
#include "harness.h"

#define LIMIT (1ull << 20)

static const int64_t d_small[] = { 4, 8 };         /* 128 bytes */
static const int64_t d_limit[] = { 256, 1024 };    /* exactly 1 MiB */
static const int64_t d_over[] = { 256, 1024 + 1 }; /* 1 MiB + 1 KiB */

static struct h_world *limits_world(void)
{
	struct h_opts o;

	h_opts_default(&o);
	/* Blocks smaller than the tensors: an allocation would show. */
	o.pool_block_bytes = 64u << 10;
	o.max_recv_bytes = LIMIT;
	return h_world_new(&o);
}

static void publish(struct h_world *w, uint64_t step, const char *name,
		    const int64_t *dims, uint8_t fill)
{
	struct tv_tensor *t = h_tensor(w, 0, TV_DT_FLOAT, 2, dims,
				       TV_PLACE_HOST, fill);

	ck_assert_int_eq(tv_engine_send(w->eng[0], step, name, t), 0);
	tv_tensor_unref(t);
}

/* What the receiver allocated and registered, summed up. */
struct footprint {
	uint64_t pool_blocks, pool_bytes, pool_live, mrs, tensors;
};

static struct footprint footprint(struct h_world *w, uint32_t node)
{
	struct tv_engine_stats s = h_stats(w, node);

	return (struct footprint){ s.pool_blocks, s.pool_bytes_registered,
				   s.pool_live_bytes, s.mr_registrations,
				   s.live_tensors };
}

static void footprint_same(struct footprint a, struct footprint b)
{
	ck_assert_uint_eq(a.pool_blocks, b.pool_blocks);
	ck_assert_uint_eq(a.pool_bytes, b.pool_bytes);
	ck_assert_uint_eq(a.pool_live, b.pool_live);
	ck_assert_uint_eq(a.mrs, b.mrs);
	ck_assert_uint_eq(a.tensors, b.tensors);
}

/* Receive name at step, expect the refusal of bytes, with every detail. */
static void expect_refused(struct h_world *w, uint64_t step,
			   const char *name, enum tv_placement place,
			   uint64_t bytes)
{
	struct h_recv r;
	char want[96];

	h_recv(w, 1, 0, step, name, place, &r);
	h_run(w);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.status.code, TV_RESOURCE_EXHAUSTED);
	ck_assert_ptr_null(r.tensor);
	snprintf(want, sizeof(want), "'%s'", name);
	ck_assert_ptr_nonnull(strstr(r.status.message, want));
	snprintf(want, sizeof(want), "%llu bytes", (unsigned long long)bytes);
	ck_assert_ptr_nonnull(strstr(r.status.message, want));
	snprintf(want, sizeof(want), "max_recv_bytes (%llu)",
		 (unsigned long long)LIMIT);
	ck_assert_ptr_nonnull(strstr(r.status.message, want));
	h_recv_release(&r);
}

START_TEST(zero_means_the_default)
{
	struct tv_engine_config cfg;
	struct h_opts o;
	struct h_world *w;

	tv_engine_config_default(&cfg);
	ck_assert_uint_eq(cfg.max_recv_bytes, 4ull << 30);
	h_opts_default(&o);
	o.max_recv_bytes = 0;
	w = h_world_new(&o);
	ck_assert_uint_eq(w->eng[1]->cfg.max_recv_bytes, 4ull << 30);
	h_world_free(w);
}
END_TEST

START_TEST(over_the_limit_is_refused_before_allocating)
{
	struct h_world *w = limits_world();
	static const uint64_t over = 256 * 1025 * 4;
	struct footprint before = footprint(w, 1);
	struct tv_engine_stats s0, s1;

	publish(w, 1, "huge", d_over, 1);
	expect_refused(w, 1, "huge", TV_PLACE_HOST, over);
	/* Not a byte allocated or registered for it on the receiver. */
	footprint_same(before, footprint(w, 1));
	s0 = h_stats(w, 0);
	s1 = h_stats(w, 1);
	/* The cancelling RE_REQUEST let the sender go; nothing was written. */
	ck_assert_uint_eq(s1.msgs_sent[TV_MSG_TENSOR_RE_REQUEST], 1);
	ck_assert_uint_eq(s0.live_responses, 0);
	ck_assert_uint_eq(s0.tensor_writes, 0);
	ck_assert_uint_eq(s0.channel_failures + s1.channel_failures, 0);
	ck_assert_uint_eq(s1.live_requests, 0);

	/* A device receive (a proxy would be staged) is refused alike. */
	publish(w, 2, "huge", d_over, 2);
	expect_refused(w, 2, "huge", TV_PLACE_DEVICE, over);
	footprint_same(before, footprint(w, 1));
	/* Refused metadata is not cached: the sender was asked again. */
	ck_assert_uint_eq(h_stats(w, 1).msgs_recv[TV_MSG_META_DATA_UPDATE], 2);

	/* The same channel still carries a normal transfer. */
	publish(w, 3, "small", d_small, 3);
	h_recv_expect(w, 1, 0, 3, "small", 3);
	ck_assert_int_eq(w->violations, 0);
	h_world_free(w);
}
END_TEST

START_TEST(exactly_the_limit_is_received)
{
	struct h_world *w = limits_world();

	publish(w, 1, "edge", d_limit, 4);
	h_recv_expect(w, 1, 0, 1, "edge", 4);
	h_world_free(w);
}
END_TEST

/*
 * A tensor whose metadata is cached grows past the limit: the request went
 * out with a destination advertised, the sender's META_DATA_UPDATE asks
 * for more, and the receiver lets both go.  Back to its size, it flows.
 */
START_TEST(cached_tensor_growing_past_the_limit)
{
	struct h_world *w = limits_world();
	struct footprint before;

	publish(w, 1, "w", d_small, 5);
	h_recv_expect(w, 1, 0, 1, "w", 5);
	before = footprint(w, 1);
	publish(w, 2, "w", d_over, 6);
	expect_refused(w, 2, "w", TV_PLACE_HOST, 256 * 1025 * 4);
	/* The small destination it had advertised was let go, no more. */
	ck_assert_uint_eq(footprint(w, 1).pool_blocks, before.pool_blocks);
	ck_assert_uint_eq(footprint(w, 1).pool_bytes, before.pool_bytes);
	ck_assert_uint_eq(footprint(w, 1).tensors, 0);
	publish(w, 3, "w", d_small, 7);
	h_recv_expect(w, 1, 0, 3, "w", 7);
	ck_assert_uint_eq(h_stats(w, 0).channel_failures, 0);
	ck_assert_uint_eq(h_stats(w, 1).channel_failures, 0);
	h_world_free(w);
}
END_TEST

Suite *engine_limits_suite(void);

Suite *engine_limits_suite(void)
{
	Suite *s = suite_create("engine-limits");
	TCase *tc = tcase_create("limits");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, zero_means_the_default);
	tcase_add_test(tc, over_the_limit_is_refused_before_allocating);
	tcase_add_test(tc, exactly_the_limit_is_received);
	tcase_add_test(tc, cached_tensor_growing_past_the_limit);
	suite_add_tcase(s, tc);
	return s;
}
