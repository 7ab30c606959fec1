/*
 * The registered-memory pool (engine/pool.c): the edges test_pool leaves.
 * A device that refuses to deregister (a dedicated block being shrunk
 * stays in the pool; a block released at destroy leaks its memory on
 * purpose, which the test then frees), page-aligned memory that cannot be
 * had (posix_memalign through the test's __wrap_), and creation's
 * arguments.  Every test checks the pool's counters and that the next
 * allocation works.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/check_main.h"
#include "common/wrap_alloc.h"
#include "pool.h"

#define PAGE 4096u
#define ACCESS (TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE)
#define MR_MAX 64

/* ---- a fake device: registrations kept, deregistrations refused on demand - */

static struct {
	struct tv_vf_device dev;
	struct tv_vf_ops ops;
	struct tv_vf_pd *pd;
	struct tv_vf_mr *mrs[MR_MAX];
	size_t mr_count;
	unsigned reg_calls, dereg_calls;
	unsigned dereg_refuse;  /* the next this many deregs fail (-EBUSY) */
	uint32_t next_key;
} fk;

static int fake_alloc_pd(struct tv_vf_device *dev, struct tv_vf_pd **pd_p)
{
	struct tv_vf_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->dev = dev;
	*pd_p = pd;
	return 0;
}

static int fake_dealloc_pd(struct tv_vf_pd *pd)
{
	if (fk.mr_count)
		return -EBUSY;
	free(pd);
	return 0;
}

static int fake_reg_mr(struct tv_vf_pd *pd, void *addr, size_t length,
		       uint32_t access, struct tv_vf_mr **mr_p)
{
	struct tv_vf_mr *mr = calloc(1, sizeof(*mr));

	fk.reg_calls++;
	ck_assert_ptr_nonnull(mr);
	ck_assert_uint_lt(fk.mr_count, MR_MAX);
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->access = access;
	mr->lkey = 0x1000 + fk.next_key;
	mr->rkey = 0x800000 + fk.next_key++;
	fk.mrs[fk.mr_count++] = mr;
	*mr_p = mr;
	return 0;
}

static int fake_dereg_mr(struct tv_vf_mr *mr)
{
	size_t i;

	fk.dereg_calls++;
	if (fk.dereg_refuse) {
		fk.dereg_refuse--;
		return -EBUSY;
	}
	for (i = 0; i < fk.mr_count && fk.mrs[i] != mr; i++)
		;
	ck_assert_msg(i < fk.mr_count, "dereg of an unknown MR");
	fk.mrs[i] = fk.mrs[--fk.mr_count];
	free(mr);
	return 0;
}

static void setup(void)
{
	memset(&fk, 0, sizeof(fk));
	fk.ops.name = "pool-edges-fake";
	fk.ops.alloc_pd = fake_alloc_pd;
	fk.ops.dealloc_pd = fake_dealloc_pd;
	fk.ops.reg_mr = fake_reg_mr;
	fk.ops.dereg_mr = fake_dereg_mr;
	tv_vf_ops_fill_stubs(&fk.ops);
	fk.dev.ops = &fk.ops;
	ck_assert_int_eq(tv_vf_alloc_pd(&fk.dev, &fk.pd), 0);
}

static void teardown(void)
{
	ck_assert_uint_eq(fk.mr_count, 0);
	ck_assert_int_eq(tv_vf_dealloc_pd(fk.pd), 0);
}

static struct tv_pool_stats stats(struct tv_pool *pool)
{
	struct tv_pool_stats s;

	tv_pool_stats(pool, &s);
	return s;
}

/* The device's MR of addr, or NULL. */
static struct tv_vf_mr *mr_of(const void *addr)
{
	for (size_t i = 0; i < fk.mr_count; i++)
		if (fk.mrs[i]->addr == addr)
			return fk.mrs[i];
	return NULL;
}

/* ---- tests ------------------------------------------------------------------ */

START_TEST(test_create_arguments)
{
	struct tv_pool *pool = NULL;

	ck_assert_int_eq(tv_pool_create(NULL, PAGE, ACCESS, &pool), -EINVAL);
	ck_assert_int_eq(tv_pool_create(fk.pd, PAGE, ACCESS, NULL), -EINVAL);
	ck_assert_int_eq(tv_pool_create(fk.pd, 0, ACCESS, &pool), -EINVAL);
	ck_assert_int_eq(tv_pool_create(fk.pd, SIZE_MAX, ACCESS, &pool),
			 -EINVAL); /* no page multiple that large */
	ck_assert_ptr_null(pool);
	tv_pool_destroy(NULL);
	ck_assert_uint_eq(fk.reg_calls, 0);
}
END_TEST

/* A block's page-aligned memory cannot be had: -ENOMEM, nothing
 * registered or counted; the next allocation gets it. */
START_TEST(test_memalign_fails)
{
	struct tv_pool *pool = NULL;
	struct tv_pool_buf b, d;
	struct tv_pool_stats s;

	ck_assert_int_eq(tv_pool_create(fk.pd, 4 * PAGE, ACCESS, &pool), 0);
	oom_arm(0);
	ck_assert_int_eq(tv_pool_alloc(pool, 100, &b), -ENOMEM);
	ck_assert_uint_eq(oom_failures(), 1);
	oom_arm(0); /* a dedicated block's too */
	ck_assert_int_eq(tv_pool_alloc(pool, 8 * PAGE, &d), -ENOMEM);
	ck_assert_uint_eq(oom_failures(), 1);
	s = stats(pool);
	ck_assert_uint_eq(s.blocks, 0);
	ck_assert_uint_eq(s.bytes_registered, 0);
	ck_assert_uint_eq(s.reg_calls, 0);
	ck_assert_uint_eq(s.live_allocs, 0);
	ck_assert_uint_eq(fk.reg_calls, 0);
	ck_assert_int_eq(tv_pool_alloc(pool, 100, &b), 0);
	ck_assert_ptr_nonnull(mr_of(b.addr));
	s = stats(pool);
	ck_assert_uint_eq(s.blocks, 1);
	ck_assert_uint_eq(s.bytes_registered, 4 * PAGE);
	ck_assert_uint_eq(s.live_allocs, 1);
	tv_pool_free(pool, &b);
	tv_pool_destroy(pool);
	ck_assert_uint_eq(fk.dereg_calls, 1);
}
END_TEST

/*
 * Three dedicated blocks freed: the third idle one is shrunk away, but the
 * device refuses to deregister it: it stays registered in the pool (the
 * device may still reach it), and serves the next allocation of its size.
 */
START_TEST(test_shrink_dereg_refused)
{
	struct tv_pool *pool = NULL;
	struct tv_pool_buf d[3], again;
	struct tv_pool_stats s;
	void *third;

	ck_assert_int_eq(tv_pool_create(fk.pd, 4 * PAGE, ACCESS, &pool), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(tv_pool_alloc(pool, 8 * PAGE, &d[i]), 0);
	s = stats(pool);
	ck_assert_uint_eq(s.blocks, 3);
	ck_assert_uint_eq(s.bytes_registered, 24 * PAGE);
	tv_pool_free(pool, &d[0]);
	tv_pool_free(pool, &d[1]);
	ck_assert_uint_eq(fk.dereg_calls, 0); /* two idle ones are kept */
	third = d[2].addr;
	fk.dereg_refuse = 1;
	tv_pool_free(pool, &d[2]);
	ck_assert_uint_eq(fk.dereg_calls, 1);
	ck_assert_ptr_nonnull(mr_of(third)); /* still registered */
	s = stats(pool);
	ck_assert_uint_eq(s.blocks, 3);
	ck_assert_uint_eq(s.bytes_registered, 24 * PAGE);
	ck_assert_uint_eq(s.live_allocs, 0);
	ck_assert_uint_eq(s.live_bytes, 0);
	/* The idle blocks serve allocations again, without registering. */
	ck_assert_int_eq(tv_pool_alloc(pool, 8 * PAGE, &again), 0);
	ck_assert_uint_eq(stats(pool).reg_calls, 3);
	ck_assert_ptr_nonnull(mr_of(again.addr));
	/* Freed, it is one idle block too many: this one goes. */
	tv_pool_free(pool, &again);
	ck_assert_uint_eq(fk.dereg_calls, 2);
	ck_assert_ptr_null(mr_of(again.addr));
	ck_assert_uint_eq(fk.mr_count, 2);
	ck_assert_uint_eq(stats(pool).blocks, 2);
	ck_assert_uint_eq(stats(pool).bytes_registered, 16 * PAGE);
	tv_pool_destroy(pool);
	ck_assert_uint_eq(fk.mr_count, 0);
}
END_TEST

/* At destroy the device refuses one deregistration: the block's memory
 * is left to the device (not freed by the pool); the rest is released. */
START_TEST(test_destroy_dereg_refused)
{
	struct tv_pool *pool = NULL;
	struct tv_pool_buf a, big;
	struct tv_vf_mr *mr;
	void *mem;

	ck_assert_int_eq(tv_pool_create(fk.pd, 4 * PAGE, ACCESS, &pool), 0);
	ck_assert_int_eq(tv_pool_alloc(pool, 64, &a), 0);
	ck_assert_int_eq(tv_pool_alloc(pool, 8 * PAGE, &big), 0);
	ck_assert_uint_eq(fk.mr_count, 2);
	tv_pool_free(pool, &a);
	tv_pool_free(pool, &big);
	fk.dereg_refuse = 1;
	tv_pool_destroy(pool);
	ck_assert_uint_eq(fk.dereg_calls, 2);
	/* One MR is left on the device, its memory unfreed: write to all
	 * of it (ASan would see a use after free), then let it go. */
	ck_assert_uint_eq(fk.mr_count, 1);
	mr = fk.mrs[0];
	mem = mr->addr;
	memset(mem, 0x5a, mr->length);
	ck_assert_int_eq(tv_vf_dereg_mr(mr), 0);
	free(mem);
	ck_assert_uint_eq(fk.mr_count, 0);
}
END_TEST

/* A shared block filled exactly (its last free extent used up), and a
 * dedicated block whose allocation is not a page multiple (a free tail
 * left): both freed, everything merges back. */
START_TEST(test_exact_fill_and_dedicated_tail)
{
	struct tv_pool *pool = NULL;
	struct tv_pool_buf b[64], d, more;
	struct tv_pool_stats s;

	ck_assert_int_eq(tv_pool_create(fk.pd, PAGE, ACCESS, &pool), 0);
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(tv_pool_alloc(pool, 64, &b[i]), 0);
	s = stats(pool);
	ck_assert_uint_eq(s.blocks, 1);
	ck_assert_uint_eq(s.live_bytes, PAGE);
	/* Full: the next one takes a new block. */
	ck_assert_int_eq(tv_pool_alloc(pool, 64, &more), 0);
	ck_assert_uint_eq(stats(pool).blocks, 2);
	ck_assert_int_eq(tv_pool_alloc(pool, 8 * PAGE + 64, &d), 0);
	s = stats(pool);
	ck_assert_uint_eq(s.blocks, 3);
	ck_assert_uint_eq(s.bytes_registered, 2 * PAGE + 9 * PAGE);
	ck_assert_ptr_nonnull(mr_of(d.addr));
	for (int i = 0; i < 64; i++)
		tv_pool_free(pool, &b[i]);
	tv_pool_free(pool, &more);
	tv_pool_free(pool, &d);
	s = stats(pool);
	ck_assert_uint_eq(s.live_allocs, 0);
	ck_assert_uint_eq(s.live_bytes, 0);
	/* The first block is whole again: one page-sized allocation fits. */
	ck_assert_int_eq(tv_pool_alloc(pool, PAGE, &more), 0);
	ck_assert_uint_eq(stats(pool).reg_calls, 3);
	tv_pool_free(pool, &more);
	tv_pool_destroy(pool);
}
END_TEST

static Suite *pool_edges_suite(void)
{
	Suite *s = suite_create("pool_edges");
	TCase *tc = tcase_create("edges");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_create_arguments);
	tcase_add_test(tc, test_memalign_fails);
	tcase_add_test(tc, test_shrink_dereg_refused);
	tcase_add_test(tc, test_destroy_dereg_refused);
	tcase_add_test(tc, test_exact_fill_and_dedicated_tail);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(pool_edges_suite());
}
