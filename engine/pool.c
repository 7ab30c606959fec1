/*
 * The registered-memory pool (contract in pool.h).
 *
 * Registration is the expensive step (it pins pages and programs the NIC's
 * translation tables), so it happens once per block and never per tensor.
 *
 * Policy:
 *  - Standard blocks are block_bytes long (rounded up to a page).  Every
 *    request whose 64-byte-rounded size fits in one is carved from them by
 *    address-ordered best fit over all standard blocks: the smallest free
 *    extent that fits, the lowest address among equals.  This keeps the
 *    pool compact and makes placement deterministic for tests.
 *  - A larger request gets a dedicated block of its page-rounded size,
 *    holding that one allocation.  When freed, the block stays registered
 *    ("idle") and is reused by a later large request that fits it without
 *    wasting more than half of it.  At most POOL_IDLE_DEDICATED_MAX idle
 *    dedicated blocks are kept; a free that would exceed the cap
 *    deregisters and frees that block at once.
 *  - Standard blocks are never released before tv_pool_destroy(): tensor
 *    traffic is cyclic (one training step looks like the next), so the
 *    next step would register them again.
 *  - Bookkeeping lives outside the blocks: a peer holding the rkey may write
 *    anywhere in a block, and must not be able to corrupt the free lists.
 *  - Each block keeps room for live_allocs + 1 free extents (the most that
 *    live allocations can leave), so tv_pool_free() never allocates and
 *    cannot fail.
 *
 * Not thread-safe: the pool belongs to one engine progress thread.
 *
 * Fault injection points (libfiu, compiled out unless FIU_ENABLE):
 * tv_pool/calloc, tv_pool/malloc, tv_pool/realloc, tv_pool/memalign.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <fiu-local.h>

#include "pool.h"
#include "hot.h"

#define POOL_ALIGN 64
#define POOL_PAGE 4096
#define POOL_IDLE_DEDICATED_MAX 2
#define POOL_EXT_INIT 8

/* A free range of a block, as an offset from its base. */
struct pool_extent {
	size_t off;
	size_t len;
};

struct tv_pool_block {
	/* fixed at creation */
	char *base;
	size_t size_bytes;
	struct tv_vf_mr *mr;
	bool dedicated;

	/* free space: sorted by offset, never touching (always coalesced) */
	struct pool_extent *ext;
	size_t ext_count;
	size_t ext_cap;

	uint64_t live_allocs;
};

struct tv_pool {
	/* fixed at creation */
	struct tv_vf_pd *pd;
	size_t block_bytes;
	uint32_t access;

	/*
	 * Every block twice, in one allocation of 2 * block_cap pointers:
	 * blocks[0 .. count) sorted by base address, for binary-search
	 * lookups; blocks[block_cap .. block_cap + count) in the order they
	 * were made, for choosing one.  A choice must never depend on where
	 * malloc put a block: the same run would then go another way when
	 * anything else in the process allocates differently (a trace being
	 * recorded, a build's other code), and a seed would no longer be a
	 * whole description of its run.
	 */
	struct tv_pool_block **blocks;
	size_t block_count;
	size_t block_cap;
	uint64_t idle_dedicated;

	/* what tv_pool_stats() reports; reg_calls counts failed calls too */
	struct tv_pool_stats stats;
};

/* ---- allocation wrappers: the places faults are injected ------------- */

static void *pool_calloc(size_t n, size_t size)
{
	if (fiu_fail("tv_pool/calloc"))
		return NULL;
	return calloc(n, size);
}

static void *pool_malloc(size_t size)
{
	if (fiu_fail("tv_pool/malloc"))
		return NULL;
	return malloc(size);
}

static void *pool_realloc(void *ptr, size_t size)
{
	if (fiu_fail("tv_pool/realloc"))
		return NULL;
	return realloc(ptr, size);
}

static void *pool_memalign(size_t size)
{
	void *mem;

	if (fiu_fail("tv_pool/memalign"))
		return NULL;
	if (posix_memalign(&mem, POOL_PAGE, size) != 0)
		return NULL;
	return mem;
}

/* ---- helpers --------------------------------------------------------- */

/* align is a power of two.  Fails when the result would not fit a size_t. */
static int round_up(size_t n, size_t align, size_t *out_p)
{
	assert(align != 0 && (align & (align - 1)) == 0);
	if (n > SIZE_MAX - (align - 1))
		return -ENOMEM;
	*out_p = (n + align - 1) & ~(align - 1);
	return 0;
}

/* Index of the block holding addr, or block_count when none does. */
static size_t pool_block_index(const struct tv_pool *pool, uintptr_t addr)
{
	size_t lo = 0, hi = pool->block_count;

	/* Find the first block whose base is above addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)pool->blocks[mid]->base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return pool->block_count;
	lo--;
	if (addr - (uintptr_t)pool->blocks[lo]->base >=
	    pool->blocks[lo]->size_bytes)
		return pool->block_count;
	return lo;
}

/* The blocks in the order they were made (see struct tv_pool). */
static struct tv_pool_block **pool_by_age(const struct tv_pool *pool)
{
	/* No blocks yet: no array (NULL + 0 is undefined in C). */
	return pool->blocks ? pool->blocks + pool->block_cap : NULL;
}

/* Make sure a later block insertion cannot fail. */
static int pool_reserve_blocks(struct tv_pool *pool)
{
	struct tv_pool_block **blocks;
	size_t cap;

	if (pool->block_count < pool->block_cap)
		return 0;
	cap = pool->block_cap ? pool->block_cap * 2 : 8;
	blocks = pool_realloc(pool->blocks, 2 * cap * sizeof(*blocks));
	if (!blocks)
		return -ENOMEM;
	/* The age-ordered half moves up to its new place. */
	memmove(blocks + cap, blocks + pool->block_cap,
		pool->block_count * sizeof(*blocks));
	pool->blocks = blocks;
	pool->block_cap = cap;
	return 0;
}

/* Keep room for the extents live_allocs + 1 allocations can leave. */
static int block_reserve_ext(struct tv_pool_block *block)
{
	struct pool_extent *ext;
	size_t cap;

	if (block->ext_cap >= block->live_allocs + 2)
		return 0;
	cap = block->ext_cap * 2;
	ext = pool_realloc(block->ext, cap * sizeof(*ext));
	if (!ext)
		return -ENOMEM;
	block->ext = ext;
	block->ext_cap = cap;
	return 0;
}

static void block_remove_ext(struct tv_pool_block *block, size_t i)
{
	assert(i < block->ext_count);
	memmove(&block->ext[i], &block->ext[i + 1],
		(block->ext_count - i - 1) * sizeof(block->ext[0]));
	block->ext_count--;
}

/* ---- blocks ---------------------------------------------------------- */

/* Allocate and register one block whose whole extent is free. */
static int block_new(struct tv_pool *pool, size_t size, bool dedicated,
		     struct tv_pool_block **block_p)
{
	struct tv_pool_block *block;
	struct tv_vf_mr *mr;
	void *mem;
	int err = -ENOMEM;

	assert(size > 0 && size % POOL_PAGE == 0);
	block = pool_calloc(1, sizeof(*block));
	if (!block)
		goto out;
	block->ext = pool_malloc(POOL_EXT_INIT * sizeof(block->ext[0]));
	if (!block->ext)
		goto free_block;
	mem = pool_memalign(size);
	if (!mem)
		goto free_ext;

	pool->stats.reg_calls++;
	err = tv_vf_reg_mr(pool->pd, mem, size, pool->access, &mr);
	if (err) {
		assert(err < 0);
		goto free_mem;
	}
	assert(mr != NULL);

	block->base = mem;
	block->size_bytes = size;
	block->mr = mr;
	block->dedicated = dedicated;
	block->ext_cap = POOL_EXT_INIT;
	block->ext_count = 1;
	block->ext[0].off = 0;
	block->ext[0].len = size;
	*block_p = block;
	return 0;

free_mem:
	free(mem);
free_ext:
	free(block->ext);
free_block:
	free(block);
out:
	return err;
}

/*
 * Deregister and free a block.  If the device refuses to deregister it may
 * still reach the memory, so the memory is leaked on purpose.
 */
static int block_release(struct tv_pool_block *block)
{
	int err;

	assert(block->live_allocs == 0);
	err = tv_vf_dereg_mr(block->mr);
	if (err == 0)
		free(block->base);
	free(block->ext);
	free(block);
	return err;
}

/* Create a block and insert it in address order. */
static int pool_grow(struct tv_pool *pool, size_t size, bool dedicated,
		     struct tv_pool_block **block_p)
{
	struct tv_pool_block *block;
	size_t i;
	int err;

	err = pool_reserve_blocks(pool);
	if (err)
		return err;
	err = block_new(pool, size, dedicated, &block);
	if (err)
		return err;

	for (i = pool->block_count; i > 0; i--) {
		if ((uintptr_t)pool->blocks[i - 1]->base <
		    (uintptr_t)block->base)
			break;
	}
	memmove(&pool->blocks[i + 1], &pool->blocks[i],
		(pool->block_count - i) * sizeof(pool->blocks[0]));
	pool->blocks[i] = block;
	pool_by_age(pool)[pool->block_count] = block;
	pool->block_count++;
	pool->stats.blocks++;
	pool->stats.bytes_registered += size;
	*block_p = block;
	return 0;
}

/* Drop an idle dedicated block from the pool and release it. */
static void pool_shrink(struct tv_pool *pool, struct tv_pool_block *block)
{
	size_t i = pool_block_index(pool, (uintptr_t)block->base);
	struct tv_pool_block **age;

	assert(i < pool->block_count && pool->blocks[i] == block);
	assert(block->dedicated && block->live_allocs == 0);
	/* Dereg first: a block the device still holds stays ours. */
	if (tv_vf_dereg_mr(block->mr) != 0)
		return;
	memmove(&pool->blocks[i], &pool->blocks[i + 1],
		(pool->block_count - i - 1) * sizeof(pool->blocks[0]));
	age = pool_by_age(pool);
	for (i = 0; age[i] != block; i++)
		assert(i + 1 < pool->block_count);
	memmove(&age[i], &age[i + 1],
		(pool->block_count - i - 1) * sizeof(age[0]));
	pool->block_count--;
	pool->stats.blocks--;
	pool->stats.bytes_registered -= block->size_bytes;
	pool->idle_dedicated--;
	free(block->base);
	free(block->ext);
	free(block);
}

/* ---- carving --------------------------------------------------------- */

/*
 * Best fit over the standard blocks, oldest block first, then by offset:
 * never by address (see struct tv_pool).
 */
static bool pool_best_fit(const struct tv_pool *pool, size_t need,
			  struct tv_pool_block **block_p, size_t *idx_p)
{
	struct tv_pool_block *const *age = pool_by_age(pool);
	struct tv_pool_block *best = NULL;
	size_t best_idx = 0, best_len = SIZE_MAX;
	size_t b, i;

	for (b = 0; b < pool->block_count; b++) {
		struct tv_pool_block *block = age[b];

		if (block->dedicated)
			continue;
		for (i = 0; i < block->ext_count; i++) {
			size_t len = block->ext[i].len;

			/* Strictly smaller: equals keep the oldest, lowest. */
			if (len < need || len >= best_len)
				continue;
			best = block;
			best_idx = i;
			best_len = len;
			if (len == need)
				goto found;
		}
	}
	if (!best)
		return false;
found:
	*block_p = best;
	*idx_p = best_idx;
	return true;
}

/* The smallest idle dedicated block that fits without wasting half of it. */
static struct tv_pool_block *pool_idle_fit(const struct tv_pool *pool,
					   size_t need)
{
	struct tv_pool_block *const *age = pool_by_age(pool);
	struct tv_pool_block *best = NULL;
	size_t b;

	/* Equal sizes: the oldest (see struct tv_pool). */
	for (b = 0; b < pool->block_count; b++) {
		struct tv_pool_block *block = age[b];

		if (!block->dedicated || block->live_allocs != 0)
			continue;
		if (block->size_bytes < need || block->size_bytes / 2 > need)
			continue;
		if (!best || block->size_bytes < best->size_bytes)
			best = block;
	}
	return best;
}

/* Take need bytes from the front of free extent idx; returns the offset. */
static TV__INLINE_HOT size_t block_carve(struct tv_pool_block *block,
					  size_t idx, size_t need)
{
	struct pool_extent *e = &block->ext[idx];
	size_t off = e->off;

	assert(idx < block->ext_count && e->len >= need);
	/* block_reserve_ext() ran: the free after this one cannot overflow. */
	assert(block->ext_cap >= block->live_allocs + 2);
	e->off += need;
	e->len -= need;
	if (e->len == 0)
		block_remove_ext(block, idx);
	block->live_allocs++;
	return off;
}

/* Give [off, off + len) back, merging it with the free neighbours. */
static void block_uncarve(struct tv_pool_block *block, size_t off, size_t len)
{
	struct pool_extent *prev = NULL, *next = NULL;
	size_t lo = 0, hi = block->ext_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (block->ext[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0)
		prev = &block->ext[lo - 1];
	if (lo < block->ext_count)
		next = &block->ext[lo];
	/* Overlapping free space means a double free or a forged buffer. */
	assert(!prev || prev->off + prev->len <= off);
	assert(!next || off + len <= next->off);

	if (prev && prev->off + prev->len == off) {
		prev->len += len;
		if (next && off + len == next->off) {
			prev->len += next->len;
			block_remove_ext(block, lo);
		}
	} else if (next && off + len == next->off) {
		next->off = off;
		next->len += len;
	} else {
		assert(block->ext_count < block->ext_cap);
		memmove(&block->ext[lo + 1], &block->ext[lo],
			(block->ext_count - lo) * sizeof(block->ext[0]));
		block->ext[lo].off = off;
		block->ext[lo].len = len;
		block->ext_count++;
	}
	assert(block->live_allocs > 0);
	block->live_allocs--;
}

static int pool_alloc_standard(struct tv_pool *pool, size_t need,
			       struct tv_pool_block **block_p, size_t *off_p)
{
	struct tv_pool_block *block;
	size_t idx;
	int err;

	if (pool_best_fit(pool, need, &block, &idx)) {
		err = block_reserve_ext(block);
		if (err)
			return err;
	} else {
		/* A fresh block already has room for its first extents. */
		err = pool_grow(pool, pool->block_bytes, false, &block);
		if (err)
			return err;
		idx = 0;
	}
	*off_p = block_carve(block, idx, need);
	*block_p = block;
	return 0;
}

static int pool_alloc_dedicated(struct tv_pool *pool, size_t need,
				struct tv_pool_block **block_p, size_t *off_p)
{
	struct tv_pool_block *block;
	size_t size;
	int err;

	block = pool_idle_fit(pool, need);
	if (block) {
		assert(pool->idle_dedicated > 0);
		pool->idle_dedicated--;
	} else {
		err = round_up(need, POOL_PAGE, &size);
		if (err)
			return err;
		err = pool_grow(pool, size, true, &block);
		if (err)
			return err;
	}
	assert(block->ext_count == 1 && block->ext[0].off == 0);
	*off_p = block_carve(block, 0, need);
	*block_p = block;
	return 0;
}

/* ---- the API --------------------------------------------------------- */

int tv_pool_create(struct tv_vf_pd *pd, size_t block_bytes, uint32_t access,
		   struct tv_pool **pool_p)
{
	struct tv_pool *pool;
	size_t rounded;

	if (!pd || !pool_p || block_bytes == 0)
		return -EINVAL;
	if (round_up(block_bytes, POOL_PAGE, &rounded))
		return -EINVAL;
	pool = pool_calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->pd = pd;
	pool->block_bytes = rounded;
	pool->access = access;
	*pool_p = pool;
	return 0;
}

void tv_pool_destroy(struct tv_pool *pool)
{
	size_t i;

	if (!pool)
		return;
	/* Freeing memory a tensor still points at would be a use after free. */
	assert(pool->stats.live_allocs == 0);
	/*
	 * Oldest block first, never by address: the device sees the
	 * deregistrations in an order that is the same from run to run (the
	 * simulator reuses freed MR slots last-freed first, so an order that
	 * followed malloc's addresses gave the next registrations other rkeys
	 * in a second run of one scenario in the same process).
	 */
	for (i = 0; i < pool->block_count; i++)
		(void)block_release(pool_by_age(pool)[i]);
	free(pool->blocks);
	free(pool);
}

int tv_pool_alloc(struct tv_pool *pool, size_t size_bytes,
		  struct tv_pool_buf *buf_p)
{
	struct tv_pool_block *block;
	size_t need, off;
	int err;

	assert(pool && buf_p);
	if (size_bytes == 0)
		return -EINVAL;
	if (round_up(size_bytes, POOL_ALIGN, &need))
		return -ENOMEM;
	if (need <= pool->block_bytes)
		err = pool_alloc_standard(pool, need, &block, &off);
	else
		err = pool_alloc_dedicated(pool, need, &block, &off);
	if (err)
		return err;

	assert(off % POOL_ALIGN == 0 && off + need <= block->size_bytes);
	pool->stats.live_allocs++;
	pool->stats.live_bytes += need;
	buf_p->addr = block->base + off;
	buf_p->size_bytes = size_bytes;
	buf_p->lkey = block->mr->lkey;
	buf_p->rkey = block->mr->rkey;
	buf_p->block = block;
	return 0;
}

void tv_pool_free(struct tv_pool *pool, const struct tv_pool_buf *buf)
{
	struct tv_pool_block *block = buf->block;
	size_t i, off, need;

	assert(pool && block);
	/* A buffer of another pool, or a forged one, must not be merged in. */
	i = pool_block_index(pool, (uintptr_t)buf->addr);
	assert(i < pool->block_count && pool->blocks[i] == block);
	(void)i;
	/* tv_pool_alloc() rounded the same size without overflow. */
	need = (buf->size_bytes + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1);
	off = (size_t)((char *)buf->addr - block->base);
	assert(buf->size_bytes > 0 && off % POOL_ALIGN == 0);
	assert(need <= block->size_bytes - off);
	assert(pool->stats.live_allocs > 0 && pool->stats.live_bytes >= need);

	block_uncarve(block, off, need);
	pool->stats.live_allocs--;
	pool->stats.live_bytes -= need;

	if (block->dedicated && block->live_allocs == 0) {
		pool->idle_dedicated++;
		if (pool->idle_dedicated > POOL_IDLE_DEDICATED_MAX)
			pool_shrink(pool, block);
	}
}

int tv_pool_lookup(const struct tv_pool *pool, const void *addr, size_t len,
		   uint32_t *lkey_p, uint32_t *rkey_p)
{
	const struct tv_pool_block *block;
	uintptr_t a = (uintptr_t)addr;
	size_t i;

	assert(pool && lkey_p && rkey_p);
	i = pool_block_index(pool, a);
	if (i == pool->block_count)
		return -ENOENT;
	block = pool->blocks[i];
	/* addr is inside the block; written this way it cannot overflow. */
	if (len > block->size_bytes - (a - (uintptr_t)block->base))
		return -ENOENT;
	*lkey_p = block->mr->lkey;
	*rkey_p = block->mr->rkey;
	return 0;
}

void tv_pool_stats(const struct tv_pool *pool, struct tv_pool_stats *stats_p)
{
	assert(pool && stats_p);
	*stats_p = pool->stats;
}
