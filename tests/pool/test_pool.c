/*
 * Tests of the registered-memory pool (engine/pool.c).
 *
 * They run against a tiny fake facade device defined here (counting,
 * key-assigning, failure-injecting reg_mr/dereg_mr) so that they depend on
 * no backend.  Allocation failures are injected through libfiu.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FIU_ENABLE
#include <fiu-control.h>
#include <fiu.h>
#endif

#include "common/check_main.h"
#include "pool.h"

#ifdef NDEBUG
#error "the pool tests check assertions: build them without NDEBUG"
#endif

#define PAGE 4096u
#define ACCESS (TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE)
/* Mirrors POOL_IDLE_DEDICATED_MAX in pool.c; test_dedicated_cap checks it. */
#define IDLE_DEDICATED_MAX 2
#define FAKE_MR_MAX 1024

static size_t round64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/* ---- the fake device -------------------------------------------------- */

static struct fake {
	struct tv_vf_device dev;
	struct tv_vf_ops ops;
	struct tv_vf_pd *pd;
	int pds_live;

	unsigned reg_calls;     /* every call, failed ones too */
	unsigned reg_ok;
	unsigned dereg_calls;
	unsigned reg_fail_nth;  /* fail reg call number N (1-based); 0: never */
	int reg_fail_err;
	uint32_t next_key;
	unsigned reg_base;      /* reg_calls when the pool under test began */

	struct tv_vf_mr *mrs[FAKE_MR_MAX]; /* the live ones */
	size_t mr_count;
	uint32_t dereg_lkeys[FAKE_MR_MAX]; /* in the order deregistered */
	size_t dereg_logged;
} fk;

static int fake_alloc_pd(struct tv_vf_device *dev, struct tv_vf_pd **pd_p)
{
	struct tv_vf_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->dev = dev;
	fk.pds_live++;
	*pd_p = pd;
	return 0;
}

static int fake_dealloc_pd(struct tv_vf_pd *pd)
{
	/* Like real verbs: a PD with registered memory is busy. */
	if (fk.mr_count != 0)
		return -EBUSY;
	fk.pds_live--;
	free(pd);
	return 0;
}

static int fake_reg_mr(struct tv_vf_pd *pd, void *addr, size_t length,
		       uint32_t access, struct tv_vf_mr **mr_p)
{
	uintptr_t a = (uintptr_t)addr;
	struct tv_vf_mr *mr;
	size_t i;

	fk.reg_calls++;
	if (fk.reg_fail_nth == fk.reg_calls)
		return fk.reg_fail_err;
	ck_assert_ptr_eq(pd, fk.pd);
	ck_assert_uint_eq(access, ACCESS);
	ck_assert_uint_eq(a % PAGE, 0);
	ck_assert_uint_eq(length % PAGE, 0);
	ck_assert_uint_gt(length, 0);
	for (i = 0; i < fk.mr_count; i++) {
		uintptr_t b = (uintptr_t)fk.mrs[i]->addr;

		ck_assert_msg(a + length <= b || b + fk.mrs[i]->length <= a,
			      "registration overlaps a live MR");
	}
	ck_assert_uint_lt(fk.mr_count, FAKE_MR_MAX);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->access = access;
	/* Never 0: lkey 0 is what TensorFlow bug #23220 sent. */
	mr->lkey = 0x1000 + fk.next_key;
	mr->rkey = 0x800000 + fk.next_key;
	fk.next_key++;
	fk.mrs[fk.mr_count++] = mr;
	fk.reg_ok++;
	*mr_p = mr;
	return 0;
}

static int fake_dereg_mr(struct tv_vf_mr *mr)
{
	size_t i;

	fk.dereg_calls++;
	for (i = 0; i < fk.mr_count; i++) {
		if (fk.mrs[i] == mr)
			break;
	}
	ck_assert_msg(i < fk.mr_count, "dereg of an unknown MR");
	if (fk.dereg_logged < FAKE_MR_MAX)
		fk.dereg_lkeys[fk.dereg_logged++] = mr->lkey;
	fk.mrs[i] = fk.mrs[--fk.mr_count];
	free(mr);
	return 0;
}

static const struct tv_vf_ops fake_ops = {
	.name = "pool-fake",
	.alloc_pd = fake_alloc_pd,
	.dealloc_pd = fake_dealloc_pd,
	.reg_mr = fake_reg_mr,
	.dereg_mr = fake_dereg_mr,
};

static void setup(void)
{
	memset(&fk, 0, sizeof(fk));
	fk.ops = fake_ops;
	tv_vf_ops_fill_stubs(&fk.ops);
	fk.dev.ops = &fk.ops;
	ck_assert_int_eq(tv_vf_alloc_pd(&fk.dev, &fk.pd), 0);
}

static void teardown(void)
{
	ck_assert_int_eq(tv_vf_dealloc_pd(fk.pd), 0);
	ck_assert_int_eq(fk.pds_live, 0);
}

/* The live MR holding addr, or NULL. */
static const struct tv_vf_mr *fake_mr_of(const void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	size_t i;

	for (i = 0; i < fk.mr_count; i++) {
		uintptr_t b = (uintptr_t)fk.mrs[i]->addr;

		if (a >= b && a - b < fk.mrs[i]->length)
			return fk.mrs[i];
	}
	return NULL;
}

static size_t fake_bytes_registered(void)
{
	size_t i, sum = 0;

	for (i = 0; i < fk.mr_count; i++)
		sum += fk.mrs[i]->length;
	return sum;
}

/* ---- helpers ----------------------------------------------------------- */

static struct tv_pool *mkpool(size_t block_bytes)
{
	struct tv_pool *pool = NULL;

	fk.reg_base = fk.reg_calls;
	ck_assert_int_eq(tv_pool_create(fk.pd, block_bytes, ACCESS, &pool), 0);
	ck_assert_ptr_nonnull(pool);
	return pool;
}

#define CHECK_STATS(pool, nblocks, nbytes, nreg, nlive, nlive_bytes)       \
	do {                                                                \
		struct tv_pool_stats s_;                                    \
		tv_pool_stats(pool, &s_);                                   \
		ck_assert_uint_eq(s_.blocks, (nblocks));                    \
		ck_assert_uint_eq(s_.bytes_registered, (nbytes));           \
		ck_assert_uint_eq(s_.reg_calls, (nreg));                    \
		ck_assert_uint_eq(s_.live_allocs, (nlive));                 \
		ck_assert_uint_eq(s_.live_bytes, (nlive_bytes));            \
	} while (0)

/* The pool's view agrees with the device's (one pool at a time). */
#define CHECK_AGREES(pool)                                                  \
	do {                                                                \
		struct tv_pool_stats s_;                                    \
		tv_pool_stats(pool, &s_);                                   \
		ck_assert_uint_eq(s_.blocks, fk.mr_count);                  \
		ck_assert_uint_eq(s_.bytes_registered,                      \
				  fake_bytes_registered());                 \
		ck_assert_uint_eq(s_.reg_calls, fk.reg_calls - fk.reg_base);\
	} while (0)

static struct tv_pool_buf alloc_ok(struct tv_pool *pool, size_t size)
{
	struct tv_pool_buf buf;
	const struct tv_vf_mr *mr;

	ck_assert_int_eq(tv_pool_alloc(pool, size, &buf), 0);
	ck_assert_uint_eq(buf.size_bytes, size);
	ck_assert_uint_eq((uintptr_t)buf.addr % 64, 0);
	mr = fake_mr_of(buf.addr);
	ck_assert_ptr_nonnull(mr);
	/* The whole buffer lies in the MR whose keys it carries. */
	ck_assert_uint_le((uintptr_t)buf.addr + size,
			  (uintptr_t)mr->addr + mr->length);
	ck_assert_uint_eq(buf.lkey, mr->lkey);
	ck_assert_uint_eq(buf.rkey, mr->rkey);
	return buf;
}

static void destroy_clean(struct tv_pool *pool)
{
	tv_pool_destroy(pool);
	ck_assert_uint_eq(fk.mr_count, 0);
	ck_assert_uint_eq(fk.dereg_calls, fk.reg_ok);
}

static uint8_t pattern(uint32_t tag, size_t j)
{
	return (uint8_t)(tag * 131u + j * 7u + 1u);
}

static void fill(const struct tv_pool_buf *buf, uint32_t tag)
{
	uint8_t *p = buf->addr;
	size_t j;

	for (j = 0; j < buf->size_bytes; j++)
		p[j] = pattern(tag, j);
}

static bool intact(const struct tv_pool_buf *buf, uint32_t tag)
{
	const uint8_t *p = buf->addr;
	size_t j;

	for (j = 0; j < buf->size_bytes; j++) {
		if (p[j] != pattern(tag, j))
			return false;
	}
	return true;
}

static bool overlap(const struct tv_pool_buf *a, const struct tv_pool_buf *b)
{
	uintptr_t x = (uintptr_t)a->addr, y = (uintptr_t)b->addr;

	return x < y + b->size_bytes && y < x + a->size_bytes;
}

/* ---- arguments --------------------------------------------------------- */

START_TEST(test_create_args)
{
	struct tv_pool *sentinel = (struct tv_pool *)&fk;
	struct tv_pool *pool = sentinel;

	ck_assert_int_eq(tv_pool_create(NULL, PAGE, ACCESS, &pool), -EINVAL);
	ck_assert_int_eq(tv_pool_create(fk.pd, 0, ACCESS, &pool), -EINVAL);
	ck_assert_int_eq(tv_pool_create(fk.pd, SIZE_MAX, ACCESS, &pool),
			 -EINVAL);
	ck_assert_ptr_eq(pool, sentinel);
	ck_assert_uint_eq(fk.reg_calls, 0);
	tv_pool_destroy(NULL);
}
END_TEST

START_TEST(test_alloc_bad_sizes)
{
	struct tv_pool *pool = mkpool(PAGE);
	struct tv_pool_buf buf, before;

	memset(&buf, 0xab, sizeof(buf));
	before = buf;
	ck_assert_int_eq(tv_pool_alloc(pool, 0, &buf), -EINVAL);
	/* Rounding these up would overflow: no memory can be had. */
	ck_assert_int_eq(tv_pool_alloc(pool, SIZE_MAX, &buf), -ENOMEM);
	ck_assert_int_eq(tv_pool_alloc(pool, SIZE_MAX - 4000, &buf), -ENOMEM);
	ck_assert_mem_eq(&buf, &before, sizeof(buf));
	CHECK_STATS(pool, 0, 0, 0, 0, 0);
	ck_assert_uint_eq(fk.reg_calls, 0);
	destroy_clean(pool);
}
END_TEST

/* ---- carving ----------------------------------------------------------- */

START_TEST(test_many_small_one_reg)
{
	enum { N = 1000 };
	struct tv_pool *pool = mkpool(1u << 20);
	static struct tv_pool_buf bufs[N];
	const struct tv_vf_mr *mr;
	size_t i;

	for (i = 0; i < N; i++)
		bufs[i] = alloc_ok(pool, 100);
	/* One registration for the block, none per allocation. */
	ck_assert_uint_eq(fk.reg_calls, 1);
	CHECK_STATS(pool, 1, 1u << 20, 1, N, N * 128);
	mr = fake_mr_of(bufs[0].addr);
	ck_assert_ptr_eq(bufs[0].addr, mr->addr);
	/* A fresh block is carved front to back, 64-byte rounded. */
	for (i = 1; i < N; i++)
		ck_assert_ptr_eq(bufs[i].addr, (char *)bufs[0].addr + i * 128);

	for (i = 0; i < N; i++)
		tv_pool_free(pool, &bufs[i]);
	CHECK_STATS(pool, 1, 1u << 20, 1, 0, 0);
	ck_assert_uint_eq(fk.dereg_calls, 0);
	/* Still registered and whole again. */
	bufs[0] = alloc_ok(pool, 1u << 20);
	ck_assert_ptr_eq(bufs[0].addr, mr->addr);
	ck_assert_uint_eq(fk.reg_calls, 1);
	tv_pool_free(pool, &bufs[0]);
	destroy_clean(pool);
	ck_assert_uint_eq(fk.dereg_calls, 1);
}
END_TEST

START_TEST(test_alignment)
{
	static const size_t sizes[] = { 1, 2, 3, 63, 64, 65, 127, 128, 129,
					1000, 4095, 4096, 4097 };
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	struct tv_pool *pool = mkpool(64 * 1024);
	struct tv_pool_buf bufs[N];
	size_t i, live = 0;

	for (i = 0; i < N; i++) {
		bufs[i] = alloc_ok(pool, sizes[i]);
		live += round64(sizes[i]);
		if (i > 0)
			ck_assert_ptr_eq(bufs[i].addr,
					 (char *)bufs[i - 1].addr +
					 round64(sizes[i - 1]));
	}
	CHECK_STATS(pool, 1, 64 * 1024, 1, N, live);
	for (i = 0; i < N; i++)
		tv_pool_free(pool, &bufs[i]);
	CHECK_STATS(pool, 1, 64 * 1024, 1, 0, 0);
	destroy_clean(pool);
}
END_TEST

START_TEST(test_block_bytes_rounded_to_page)
{
	struct tv_pool *pool = mkpool(5000);
	struct tv_pool_buf a, b;

	/* 8000 fits the 8192-byte rounded block: no dedicated block. */
	a = alloc_ok(pool, 8000);
	b = alloc_ok(pool, 192);
	ck_assert_ptr_eq(b.addr, (char *)a.addr + 8000);
	CHECK_STATS(pool, 1, 8192, 1, 2, 8192);
	tv_pool_free(pool, &a);
	tv_pool_free(pool, &b);
	destroy_clean(pool);
}
END_TEST

START_TEST(test_reuse_after_free)
{
	struct tv_pool *pool = mkpool(PAGE);
	struct tv_pool_buf a, b, c, d;

	a = alloc_ok(pool, 256);
	b = alloc_ok(pool, 256);
	tv_pool_free(pool, &a);
	c = alloc_ok(pool, 256);
	ck_assert_ptr_eq(c.addr, a.addr);
	tv_pool_free(pool, &b);
	tv_pool_free(pool, &c);
	d = alloc_ok(pool, 512);
	ck_assert_ptr_eq(d.addr, a.addr);
	CHECK_STATS(pool, 1, PAGE, 1, 1, 512);
	tv_pool_free(pool, &d);
	destroy_clean(pool);
	ck_assert_uint_eq(fk.reg_calls, 1);
}
END_TEST

/* Free A, B, C (D stays live after them) in every order: they merge. */
START_TEST(test_coalesce_inner)
{
	static const int perms[6][3] = { { 0, 1, 2 }, { 0, 2, 1 },
					 { 1, 0, 2 }, { 1, 2, 0 },
					 { 2, 0, 1 }, { 2, 1, 0 } };
	int p, i;

	for (p = 0; p < 6; p++) {
		struct tv_pool *pool = mkpool(PAGE);
		struct tv_pool_buf bufs[4], merged;
		unsigned reg_before = fk.reg_calls;

		for (i = 0; i < 4; i++)
			bufs[i] = alloc_ok(pool, 1024);
		for (i = 0; i < 3; i++)
			tv_pool_free(pool, &bufs[perms[p][i]]);
		CHECK_STATS(pool, 1, PAGE, 1, 1, 1024);
		/* Only a merged 3 KiB extent holds this in the same block. */
		merged = alloc_ok(pool, 3072);
		ck_assert_ptr_eq(merged.addr, bufs[0].addr);
		ck_assert_uint_eq(fk.reg_calls, reg_before + 1);
		CHECK_STATS(pool, 1, PAGE, 1, 2, PAGE);
		tv_pool_free(pool, &merged);
		tv_pool_free(pool, &bufs[3]);
		destroy_clean(pool);
	}
}
END_TEST

/* Free all four quarters of a block in each of the 24 orders. */
START_TEST(test_coalesce_all_orders)
{
	int perm[4], p, i;

	for (p = 0; p < 24; p++) {
		struct tv_pool *pool = mkpool(PAGE);
		struct tv_pool_buf bufs[4], whole;
		int pool_ix[4] = { 0, 1, 2, 3 }, rest = p, n = 4;

		/* The p-th permutation, by its factorial-base digits. */
		for (i = 0; i < 4; i++) {
			int f = (i == 0) ? 6 : (i == 1) ? 2 : 1;
			int k = rest / f;

			rest %= f;
			perm[i] = pool_ix[k];
			memmove(&pool_ix[k], &pool_ix[k + 1],
				(size_t)(n - k - 1) * sizeof(int));
			n--;
		}
		for (i = 0; i < 4; i++)
			bufs[i] = alloc_ok(pool, 1024);
		for (i = 0; i < 4; i++)
			tv_pool_free(pool, &bufs[perm[i]]);
		whole = alloc_ok(pool, PAGE);
		ck_assert_ptr_eq(whole.addr, bufs[0].addr);
		CHECK_STATS(pool, 1, PAGE, 1, 1, PAGE);
		tv_pool_free(pool, &whole);
		destroy_clean(pool);
	}
	ck_assert_uint_eq(fk.reg_calls, 24);
}
END_TEST

START_TEST(test_best_fit)
{
	struct tv_pool *pool = mkpool(PAGE);
	struct tv_pool_buf a, b, c, d, e, x, y, z;

	a = alloc_ok(pool, 512);
	b = alloc_ok(pool, 64);
	c = alloc_ok(pool, 256);
	d = alloc_ok(pool, 64);
	e = alloc_ok(pool, PAGE - 896); /* the block is now full */
	tv_pool_free(pool, &a);
	tv_pool_free(pool, &c);
	/* Holes of 512 and 256: the smaller one that fits wins. */
	x = alloc_ok(pool, 100);
	ck_assert_ptr_eq(x.addr, c.addr);
	y = alloc_ok(pool, 128);
	ck_assert_ptr_eq(y.addr, (char *)c.addr + 128);
	z = alloc_ok(pool, 512);
	ck_assert_ptr_eq(z.addr, a.addr);
	CHECK_STATS(pool, 1, PAGE, 1, 6, PAGE);
	tv_pool_free(pool, &b);
	tv_pool_free(pool, &d);
	tv_pool_free(pool, &e);
	tv_pool_free(pool, &x);
	tv_pool_free(pool, &y);
	tv_pool_free(pool, &z);
	destroy_clean(pool);
}
END_TEST

START_TEST(test_new_block_when_full)
{
	struct tv_pool *pool = mkpool(PAGE);
	struct tv_pool_buf x, y, z;
	uint32_t lkey, rkey;

	x = alloc_ok(pool, PAGE);
	y = alloc_ok(pool, 64);
	CHECK_STATS(pool, 2, 2 * PAGE, 2, 2, PAGE + 64);
	CHECK_AGREES(pool);
	ck_assert_ptr_ne(fake_mr_of(x.addr), fake_mr_of(y.addr));
	ck_assert_uint_ne(x.lkey, y.lkey);
	ck_assert_int_eq(tv_pool_lookup(pool, x.addr, PAGE, &lkey, &rkey), 0);
	ck_assert_uint_eq(lkey, x.lkey);
	ck_assert_uint_eq(rkey, x.rkey);
	ck_assert_int_eq(tv_pool_lookup(pool, y.addr, 64, &lkey, &rkey), 0);
	ck_assert_uint_eq(lkey, y.lkey);
	ck_assert_uint_eq(rkey, y.rkey);

	/* Best fit prefers y's partly used block over x's empty one. */
	tv_pool_free(pool, &x);
	z = alloc_ok(pool, 64);
	ck_assert_ptr_eq(z.addr, (char *)y.addr + 64);
	CHECK_STATS(pool, 2, 2 * PAGE, 2, 2, 128);
	tv_pool_free(pool, &y);
	tv_pool_free(pool, &z);
	destroy_clean(pool);
	ck_assert_uint_eq(fk.dereg_calls, 2);
}
END_TEST

/*
 * Which block serves an allocation must not depend on where malloc put
 * the blocks: a seed must describe its run whatever else the process
 * allocates.  Blocks of 1 MiB are mmapped by glibc, downwards: the newer
 * block B lies below the older A, and an address-ordered choice took B.
 */
START_TEST(test_choice_ignores_addresses)
{
	struct tv_pool *pool = mkpool(1u << 20);
	struct tv_pool_buf a, b, c;

	a = alloc_ok(pool, 1u << 20);
	b = alloc_ok(pool, 1u << 20);
	/* The premise: B's memory is below A's. */
	ck_assert_msg((uintptr_t)b.addr < (uintptr_t)a.addr,
		      "blocks were not mmapped downwards (a %p, b %p)",
		      a.addr, b.addr);
	tv_pool_free(pool, &a);
	tv_pool_free(pool, &b);
	/* Two empty blocks, equal fits: the older one, A. */
	c = alloc_ok(pool, 64);
	ck_assert_ptr_eq(c.addr, a.addr);
	tv_pool_free(pool, &c);
	destroy_clean(pool);
}
END_TEST

/*
 * Destroy deregisters the oldest block first, whatever the addresses: the
 * device's next keys must not depend on malloc (the simulator reuses the
 * slot freed last, and a rendezvous node restarting after a crash gave its
 * message buffer another rkey in a second run of one scenario in the same
 * process when the order followed the addresses).
 */
START_TEST(test_destroy_oldest_first)
{
	struct tv_pool *pool = mkpool(1u << 20);
	struct tv_pool_buf b[3];
	uint32_t first_lkey;
	int i;

	for (i = 0; i < 3; i++)
		b[i] = alloc_ok(pool, 1u << 20);
	/* The premise: mmapped downwards, address order is age reversed. */
	ck_assert_msg((uintptr_t)b[2].addr < (uintptr_t)b[1].addr &&
		      (uintptr_t)b[1].addr < (uintptr_t)b[0].addr,
		      "blocks were not mmapped downwards (%p %p %p)",
		      b[0].addr, b[1].addr, b[2].addr);
	first_lkey = fake_mr_of(b[0].addr)->lkey;
	for (i = 0; i < 3; i++)
		tv_pool_free(pool, &b[i]);
	fk.dereg_logged = 0;
	destroy_clean(pool);
	ck_assert_uint_eq(fk.dereg_logged, 3);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(fk.dereg_lkeys[i], first_lkey + (uint32_t)i);
}
END_TEST

/* ---- dedicated blocks -------------------------------------------------- */

START_TEST(test_large_dedicated)
{
	struct tv_pool *pool = mkpool(PAGE);
	struct tv_pool_buf l1, l2, l3, l4, s, edge, over;

	l1 = alloc_ok(pool, 10000);
	CHECK_STATS(pool, 1, 12288, 1, 1, 10048);
	ck_assert_ptr_eq(l1.addr, fake_mr_of(l1.addr)->addr);
	ck_assert_uint_eq(fake_mr_of(l1.addr)->length, 12288);

	/* A small request never lands in a dedicated block's tail. */
	s = alloc_ok(pool, 100);
	ck_assert_ptr_ne(fake_mr_of(s.addr), fake_mr_of(l1.addr));
	CHECK_STATS(pool, 2, 12288 + PAGE, 2, 2, 10048 + 128);

	/* Freed, the dedicated block stays registered and is reused. */
	tv_pool_free(pool, &l1);
	CHECK_STATS(pool, 2, 12288 + PAGE, 2, 1, 128);
	ck_assert_uint_eq(fk.dereg_calls, 0);
	l2 = alloc_ok(pool, 9000);
	ck_assert_ptr_eq(l2.addr, l1.addr);
	CHECK_STATS(pool, 2, 12288 + PAGE, 2, 2, 9024 + 128);

	/* Reusing 12 KiB for 5056 bytes would waste over half: new block. */
	tv_pool_free(pool, &l2);
	l3 = alloc_ok(pool, 5000);
	ck_assert_ptr_ne(fake_mr_of(l3.addr), fake_mr_of(l1.addr));
	CHECK_STATS(pool, 3, 12288 + PAGE + 8192, 3, 2, 5056 + 128);

	/* Too big for the idle 12 KiB block: new block. */
	l4 = alloc_ok(pool, 20000);
	CHECK_STATS(pool, 4, 12288 + PAGE + 8192 + 20480, 4, 3,
		    5056 + 128 + 20032);

	/* block_bytes exactly is standard; one byte more is dedicated. */
	edge = alloc_ok(pool, PAGE);
	over = alloc_ok(pool, PAGE + 1);
	CHECK_STATS(pool, 6, 12288 + 2 * PAGE + 8192 + 20480 + 8192, 6, 5,
		    5056 + 128 + 20032 + PAGE + PAGE + 64);
	CHECK_AGREES(pool);

	tv_pool_free(pool, &s);
	tv_pool_free(pool, &l3);
	tv_pool_free(pool, &l4);
	tv_pool_free(pool, &edge);
	tv_pool_free(pool, &over);
	CHECK_AGREES(pool);
	destroy_clean(pool);
}
END_TEST

START_TEST(test_dedicated_cap)
{
	enum { N = IDLE_DEDICATED_MAX + 2 };
	struct tv_pool *pool = mkpool(PAGE);
	struct tv_pool_buf bufs[N];
	uint32_t lkey = 0, rkey = 0;
	int i;

	for (i = 0; i < N; i++)
		bufs[i] = alloc_ok(pool, 2 * PAGE);
	CHECK_STATS(pool, N, N * 2 * PAGE, N, N, N * 2 * PAGE);
	for (i = 0; i < N; i++) {
		tv_pool_free(pool, &bufs[i]);
		/* Up to the cap the idle blocks stay; beyond, they go. */
		if (i < IDLE_DEDICATED_MAX) {
			ck_assert_uint_eq(fk.dereg_calls, 0);
			CHECK_STATS(pool, N, N * 2 * PAGE, N, N - i - 1,
				    (N - i - 1) * 2 * PAGE);
		} else {
			ck_assert_uint_eq(fk.dereg_calls,
					  i + 1 - IDLE_DEDICATED_MAX);
			CHECK_STATS(pool, N - (i + 1 - IDLE_DEDICATED_MAX),
				    (N - (i + 1 - IDLE_DEDICATED_MAX)) *
				    2 * PAGE, N, N - i - 1,
				    (N - i - 1) * 2 * PAGE);
		}
		CHECK_AGREES(pool);
	}
	ck_assert_int_eq(tv_pool_lookup(pool, bufs[0].addr, 1, &lkey, &rkey),
			 0);
	ck_assert_uint_eq(lkey, bufs[0].lkey);
	ck_assert_int_eq(tv_pool_lookup(pool, bufs[N - 1].addr, 1, &lkey,
					&rkey), -ENOENT);
	destroy_clean(pool);
}
END_TEST

/* ---- lookup ------------------------------------------------------------ */

START_TEST(test_lookup)
{
	struct tv_pool *pool = mkpool(PAGE);
	struct tv_pool_buf a, full, b;
	uint32_t lkey = 7, rkey = 9;
	uintptr_t base;
	char stack_buf[64];
	char *heap_buf = malloc(256);

	ck_assert_ptr_nonnull(heap_buf);
	a = alloc_ok(pool, 100);
	base = (uintptr_t)a.addr;
	ck_assert_uint_eq(base, (uintptr_t)fake_mr_of(a.addr)->addr);

#define LOOK(addr, len) \
	tv_pool_lookup(pool, (const void *)(addr), (len), &lkey, &rkey)
	ck_assert_int_eq(LOOK(base, 100), 0);
	ck_assert_uint_eq(lkey, a.lkey);
	ck_assert_uint_eq(rkey, a.rkey);
	lkey = 7;
	rkey = 9;
	ck_assert_int_eq(LOOK(base, PAGE), 0);           /* the whole block */
	ck_assert_uint_eq(lkey, a.lkey);
	ck_assert_int_eq(LOOK(base + 1000, 24), 0);      /* registered, free */
	ck_assert_int_eq(LOOK(base + PAGE - 1, 1), 0);   /* the last byte */
	ck_assert_int_eq(LOOK(base, 0), 0);

	/* Outputs are written only on success. */
	lkey = 7;
	rkey = 9;
	ck_assert_int_eq(LOOK(base + PAGE - 1, 2), -ENOENT); /* straddles end */
	ck_assert_int_eq(LOOK(base, PAGE + 1), -ENOENT);
	ck_assert_int_eq(LOOK(base + PAGE, 1), -ENOENT);     /* just past */
	ck_assert_int_eq(LOOK(base + PAGE, 0), -ENOENT);
	ck_assert_int_eq(LOOK(base - 1, 1), -ENOENT);        /* just before */
	ck_assert_int_eq(LOOK(base - 1, 2), -ENOENT);   /* straddles start */
	ck_assert_int_eq(LOOK(base + 64, SIZE_MAX), -ENOENT);
	ck_assert_int_eq(LOOK(stack_buf, sizeof(stack_buf)), -ENOENT);
	ck_assert_int_eq(LOOK(heap_buf, 256), -ENOENT); /* bug #23220's case */
	ck_assert_int_eq(LOOK(0, 0), -ENOENT);
	ck_assert_uint_eq(lkey, 7);
	ck_assert_uint_eq(rkey, 9);

	/* With more blocks, each range maps to its own block's keys. */
	full = alloc_ok(pool, PAGE - 128);
	b = alloc_ok(pool, 300);
	ck_assert_uint_ne(b.lkey, a.lkey);
	ck_assert_int_eq(LOOK(b.addr, 300), 0);
	ck_assert_uint_eq(lkey, b.lkey);
	ck_assert_uint_eq(rkey, b.rkey);
	ck_assert_int_eq(LOOK(base + 50, 50), 0);
	ck_assert_uint_eq(lkey, a.lkey);
	ck_assert_uint_eq(rkey, a.rkey);
	/* Even if the two blocks happen to be adjacent, a range across both
	 * is in no one block. */
	ck_assert_int_eq(LOOK(base + PAGE - 8, 16), -ENOENT);
	ck_assert_int_eq(LOOK((uintptr_t)b.addr - 8, 16), -ENOENT);
#undef LOOK

	tv_pool_free(pool, &a);
	tv_pool_free(pool, &full);
	tv_pool_free(pool, &b);
	destroy_clean(pool);
	free(heap_buf);
}
END_TEST

/* Lookups across many blocks, to exercise the binary search. */
START_TEST(test_lookup_many_blocks)
{
	enum { N = 40 };
	struct tv_pool *pool = mkpool(PAGE);
	struct tv_pool_buf bufs[N];
	uint32_t lkey, rkey;
	int i;

	for (i = 0; i < N; i++)
		bufs[i] = alloc_ok(pool, (i % 3 == 0) ? 3 * PAGE : PAGE);
	CHECK_AGREES(pool);
	for (i = 0; i < N; i++) {
		const struct tv_vf_mr *mr = fake_mr_of(bufs[i].addr);
		void *last = (char *)mr->addr + mr->length - 1;

		ck_assert_int_eq(tv_pool_lookup(pool, last, 1, &lkey, &rkey),
				 0);
		ck_assert_uint_eq(lkey, mr->lkey);
		ck_assert_uint_eq(rkey, mr->rkey);
		ck_assert_int_eq(tv_pool_lookup(pool, mr->addr, mr->length,
						&lkey, &rkey), 0);
		ck_assert_uint_eq(lkey, mr->lkey);
		ck_assert_int_eq(tv_pool_lookup(pool, mr->addr,
						mr->length + 1, &lkey, &rkey),
				 -ENOENT);
	}
	for (i = 0; i < N; i++)
		tv_pool_free(pool, &bufs[i]);
	destroy_clean(pool);
}
END_TEST

/* ---- registration failures -------------------------------------------- */

START_TEST(test_reg_fail)
{
	static const int errs[] = { -EPERM, -EIO, -EFAULT, -ENOMEM };
	size_t e;

	for (e = 0; e < sizeof(errs) / sizeof(errs[0]); e++) {
		struct tv_pool *pool = mkpool(PAGE);
		struct tv_pool_buf a, b, before;
		unsigned base = fk.reg_calls;
		uint32_t lkey, rkey;

		fk.reg_fail_err = errs[e];
		fk.reg_fail_nth = base + 1;
		memset(&b, 0x5a, sizeof(b));
		before = b;
		/* The registration's own error, and nothing left behind. */
		ck_assert_int_eq(tv_pool_alloc(pool, 100, &b), errs[e]);
		ck_assert_mem_eq(&b, &before, sizeof(b));
		CHECK_STATS(pool, 0, 0, 1, 0, 0);
		ck_assert_uint_eq(fk.mr_count, 0);

		/* The next try works. */
		a = alloc_ok(pool, PAGE);
		CHECK_STATS(pool, 1, PAGE, 2, 1, PAGE);

		/* A second standard block fails; the first is untouched. */
		fk.reg_fail_nth = base + 3;
		ck_assert_int_eq(tv_pool_alloc(pool, 64, &b), errs[e]);
		CHECK_STATS(pool, 1, PAGE, 3, 1, PAGE);
		ck_assert_int_eq(tv_pool_lookup(pool, a.addr, PAGE, &lkey,
						&rkey), 0);
		ck_assert_uint_eq(lkey, a.lkey);

		/* A dedicated block fails the same way. */
		fk.reg_fail_nth = base + 4;
		ck_assert_int_eq(tv_pool_alloc(pool, 3 * PAGE, &b), errs[e]);
		CHECK_STATS(pool, 1, PAGE, 4, 1, PAGE);
		CHECK_AGREES(pool);
		ck_assert_uint_eq(fk.mr_count, 1);

		tv_pool_free(pool, &a);
		destroy_clean(pool);
	}
}
END_TEST

/*
 * Fail registration N, for N = 1, 2, ... until none fails, in a scenario
 * that makes many blocks; after each, the pool must be consistent and
 * clean up to nothing.
 */
static int scenario_step(struct tv_pool *pool, int step,
			 struct tv_pool_buf *buf_p)
{
	/* 10 full blocks (grows the block array), 20 small ones (grows one
	 * block's extent array), then 2 dedicated blocks. */
	if (step < 10)
		return tv_pool_alloc(pool, PAGE, buf_p);
	if (step < 30)
		return tv_pool_alloc(pool, 64, buf_p);
	return tv_pool_alloc(pool, 2 * PAGE + 1, buf_p);
}

enum { SCENARIO_STEPS = 32 };

/* Runs the scenario; returns the first error (0 if none). */
static int run_scenario(struct tv_pool *pool)
{
	struct tv_pool_buf bufs[SCENARIO_STEPS];
	size_t live_bytes = 0;
	int i, j, err = 0;

	for (i = 0; i < SCENARIO_STEPS; i++) {
		err = scenario_step(pool, i, &bufs[i]);
		if (err)
			break;
		live_bytes += round64(bufs[i].size_bytes);
		fill(&bufs[i], (uint32_t)i);
	}
	{
		struct tv_pool_stats s;

		tv_pool_stats(pool, &s);
		ck_assert_uint_eq(s.live_allocs, (unsigned)i);
		ck_assert_uint_eq(s.live_bytes, live_bytes);
	}
	CHECK_AGREES(pool);
	/* Every allocation that succeeded is whole and free-able. */
	for (j = 0; j < i; j++) {
		ck_assert(intact(&bufs[j], (uint32_t)j));
		tv_pool_free(pool, &bufs[j]);
	}
	return err;
}

START_TEST(test_reg_fail_nth)
{
	unsigned n;

	for (n = 1;; n++) {
		struct tv_pool *pool = mkpool(PAGE);
		unsigned base = fk.reg_calls;
		int err;

		fk.reg_fail_err = -EIO;
		fk.reg_fail_nth = base + n;
		err = run_scenario(pool);
		destroy_clean(pool);
		if (fk.reg_calls < base + n) {
			ck_assert_int_eq(err, 0);
			break;
		}
		ck_assert_int_eq(err, -EIO);
	}
	/* 10 + 1 standard blocks and 2 dedicated ones: 13 registrations. */
	ck_assert_uint_eq(n, 14);
}
END_TEST

#ifdef FIU_ENABLE
static unsigned fiu_hits, fiu_fail_at;

static int fail_nth_cb(const char *name, int *failnum, void **failinfo,
		       unsigned int *flags)
{
	fiu_hits++;
	return fiu_hits == fiu_fail_at;
}

START_TEST(test_alloc_fail_nth)
{
	unsigned n, hits_after_scenario;

	ck_assert_int_eq(fiu_init(0), 0);
	ck_assert_int_eq(fiu_enable_external("tv_pool/*", 1, NULL, 0,
					     fail_nth_cb), 0);
	for (n = 1;; n++) {
		struct tv_pool *pool = NULL;
		int err;

		fiu_hits = 0;
		fiu_fail_at = n;
		fk.reg_base = fk.reg_calls;
		err = tv_pool_create(fk.pd, PAGE, ACCESS, &pool);
		if (err) {
			ck_assert_int_eq(err, -ENOMEM);
			ck_assert_ptr_null(pool);
			continue;
		}
		err = run_scenario(pool);
		hits_after_scenario = fiu_hits;
		destroy_clean(pool);
		/* Neither free nor destroy allocates: they cannot fail. */
		ck_assert_uint_eq(fiu_hits, hits_after_scenario);
		if (fiu_hits < n) {
			ck_assert_int_eq(err, 0);
			break;
		}
		ck_assert_int_eq(err, -ENOMEM);
	}
	/* At least the pool, and three allocations per block (13 blocks). */
	ck_assert_uint_ge(n, 1 + 3 * 13);
	ck_assert_int_eq(fiu_disable("tv_pool/*"), 0);
}
END_TEST
#endif

/* ---- data integrity ---------------------------------------------------- */

START_TEST(test_patterns_no_overlap)
{
	enum { N = 300, M = 100 };
	struct tv_pool *pool = mkpool(16 * 1024);
	static struct tv_pool_buf bufs[N + M];
	static bool live[N + M];
	int i, j;

	for (i = 0; i < N; i++) {
		size_t size = (i % 50 == 49) ? 20000 + (size_t)i :
			      (size_t)(i * 37 % 3000) + 1;

		bufs[i] = alloc_ok(pool, size);
		live[i] = true;
		fill(&bufs[i], (uint32_t)i);
	}
	for (i = 0; i < N; i += 3) {
		ck_assert(intact(&bufs[i], (uint32_t)i));
		tv_pool_free(pool, &bufs[i]);
		live[i] = false;
	}
	for (i = N; i < N + M; i++) {
		bufs[i] = alloc_ok(pool, (size_t)(i * 53 % 2000) + 1);
		live[i] = true;
		fill(&bufs[i], (uint32_t)i);
	}
	for (i = 0; i < N + M; i++) {
		if (!live[i])
			continue;
		ck_assert_msg(intact(&bufs[i], (uint32_t)i),
			      "allocation %d was overwritten", i);
		for (j = i + 1; j < N + M; j++)
			ck_assert(!live[j] || !overlap(&bufs[i], &bufs[j]));
	}
	for (i = 0; i < N + M; i++) {
		if (live[i])
			tv_pool_free(pool, &bufs[i]);
	}
	CHECK_AGREES(pool);
	destroy_clean(pool);
}
END_TEST

static uint64_t xorshift64(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

static uint64_t stress_seed(void)
{
	const char *env = getenv("TV_SEED");

	return env ? strtoull(env, NULL, 0) : 0x9e3779b97f4a7c15ull;
}

#define STRESS_CHECK(cond, seed, op, what)                                  \
	ck_assert_msg(cond, "%s at op %zu; reproduce: TV_SEED=%llu test_pool", \
		      what, (size_t)(op), (unsigned long long)(seed))

/* Checks every live allocation against the pool's and device's counts. */
static void stress_balance(struct tv_pool *pool,
			   const struct tv_pool_buf *bufs, size_t n,
			   uint64_t seed, size_t op)
{
	struct tv_pool_stats s;
	uint64_t bytes = 0;
	size_t i;

	for (i = 0; i < n; i++)
		bytes += round64(bufs[i].size_bytes);
	tv_pool_stats(pool, &s);
	STRESS_CHECK(s.live_allocs == n && s.live_bytes == bytes, seed, op,
		     "stats off");
	CHECK_AGREES(pool);
	/* Blocks are never lost: made minus released is what is live. */
	ck_assert_uint_eq(fk.reg_ok - fk.dereg_calls, s.blocks);
}

START_TEST(test_random_stress)
{
	enum { OPS = 20000, LIVE_MAX = 256, BLOCK = 16 * 1024 };
	static struct tv_pool_buf bufs[LIVE_MAX];
	static uint32_t tags[LIVE_MAX];
	uint64_t seed = stress_seed(), rng = seed ? seed : 1;
	struct tv_pool *pool = mkpool(BLOCK);
	uint32_t next_tag = 0, lkey, rkey;
	size_t n = 0, i, op;

	for (op = 0; op < OPS; op++) {
		uint64_t r = xorshift64(&rng);
		bool do_alloc = n == 0 || (n < LIVE_MAX && r % 100 < 55);

		if (do_alloc) {
			uint64_t kind = (r >> 8) % 100, v = r >> 16;
			size_t size = kind < 80 ? 1 + v % 1024 :
				      kind < 95 ? 1025 + v % (BLOCK - 1024) :
				      BLOCK + 1 + v % (3 * BLOCK);
			struct tv_pool_buf b = alloc_ok(pool, size);

			for (i = 0; i < n; i++)
				STRESS_CHECK(!overlap(&b, &bufs[i]), seed, op,
					     "overlap");
			ck_assert_int_eq(tv_pool_lookup(pool, b.addr, size,
							&lkey, &rkey), 0);
			ck_assert_uint_eq(lkey, b.lkey);
			ck_assert_uint_eq(rkey, b.rkey);
			tags[n] = next_tag++;
			fill(&b, tags[n]);
			bufs[n++] = b;
		} else {
			size_t k = (size_t)((r >> 8) % n);

			STRESS_CHECK(intact(&bufs[k], tags[k]), seed, op,
				     "data overwritten");
			tv_pool_free(pool, &bufs[k]);
			bufs[k] = bufs[--n];
			tags[k] = tags[n];
		}
		if (op % 1000 == 0)
			stress_balance(pool, bufs, n, seed, op);
	}
	stress_balance(pool, bufs, n, seed, op);
	while (n > 0) {
		ck_assert(intact(&bufs[n - 1], tags[n - 1]));
		tv_pool_free(pool, &bufs[--n]);
	}
	stress_balance(pool, bufs, 0, seed, op);
	destroy_clean(pool);
}
END_TEST

/* ---- lifetimes --------------------------------------------------------- */

START_TEST(test_destroy_after_frees)
{
	struct tv_pool *pool = mkpool(PAGE);
	struct tv_pool_buf bufs[6];
	int i;

	bufs[0] = alloc_ok(pool, PAGE);
	bufs[1] = alloc_ok(pool, 1);
	bufs[2] = alloc_ok(pool, PAGE);
	bufs[3] = alloc_ok(pool, 5 * PAGE);
	bufs[4] = alloc_ok(pool, 7 * PAGE);
	bufs[5] = alloc_ok(pool, 9 * PAGE);
	CHECK_STATS(pool, 6, 3 * PAGE + 21 * PAGE, 6, 6,
		    2 * PAGE + 64 + 21 * PAGE);
	for (i = 5; i >= 0; i--)
		tv_pool_free(pool, &bufs[i]);
	/* One dedicated block went over the idle cap. */
	CHECK_STATS(pool, 5, 3 * PAGE + 16 * PAGE, 6, 0, 0);
	ck_assert_uint_eq(fk.dereg_calls, 1);
	destroy_clean(pool);
	ck_assert_uint_eq(fk.dereg_calls, 6);
}
END_TEST

START_TEST(test_destroy_with_live_aborts)
{
	struct tv_pool *pool = mkpool(PAGE);

	(void)alloc_ok(pool, 64);
	tv_pool_destroy(pool); /* must assert */
}
END_TEST

START_TEST(test_double_free_aborts)
{
	struct tv_pool *pool = mkpool(PAGE);
	struct tv_pool_buf a, b;

	a = alloc_ok(pool, 64);
	b = alloc_ok(pool, 64);
	(void)b;
	tv_pool_free(pool, &a);
	tv_pool_free(pool, &a); /* must assert */
}
END_TEST

START_TEST(test_foreign_free_aborts)
{
	struct tv_pool *p1 = mkpool(PAGE), *p2 = mkpool(PAGE);
	struct tv_pool_buf a;

	a = alloc_ok(p1, 64);
	(void)alloc_ok(p2, 64);
	tv_pool_free(p2, &a); /* a's block is not p2's: must assert */
}
END_TEST

static Suite *pool_suite(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_create_args);
	tcase_add_test(tc, test_alloc_bad_sizes);
	tcase_add_test(tc, test_many_small_one_reg);
	tcase_add_test(tc, test_alignment);
	tcase_add_test(tc, test_block_bytes_rounded_to_page);
	tcase_add_test(tc, test_reuse_after_free);
	tcase_add_test(tc, test_coalesce_inner);
	tcase_add_test(tc, test_coalesce_all_orders);
	tcase_add_test(tc, test_best_fit);
	tcase_add_test(tc, test_new_block_when_full);
	tcase_add_test(tc, test_choice_ignores_addresses);
	tcase_add_test(tc, test_destroy_oldest_first);
	tcase_add_test(tc, test_large_dedicated);
	tcase_add_test(tc, test_dedicated_cap);
	tcase_add_test(tc, test_lookup);
	tcase_add_test(tc, test_lookup_many_blocks);
	tcase_add_test(tc, test_reg_fail);
	tcase_add_test(tc, test_reg_fail_nth);
#ifdef FIU_ENABLE
	tcase_add_test(tc, test_alloc_fail_nth);
#endif
	tcase_add_test(tc, test_patterns_no_overlap);
	tcase_add_test(tc, test_random_stress);
	tcase_add_test(tc, test_destroy_after_frees);
	tcase_add_test_raise_signal(tc, test_destroy_with_live_aborts,
				    SIGABRT);
	tcase_add_test_raise_signal(tc, test_double_free_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_foreign_free_aborts, SIGABRT);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(pool_suite());
}
