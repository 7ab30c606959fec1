/*
 * This file is private to tensorverbs' engine: the registered-memory pool.
 *
 * Tensors are carved out of large blocks that are registered once per
 * block (HKUST's "register the allocator's region" idea), never per tensor.
 * Blocks stay registered until the pool is destroyed and are reused.
 */
#ifndef TV_ENGINE_POOL_H
#define TV_ENGINE_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/vf.h>

struct tv_pool;
struct tv_pool_block;

struct tv_pool_buf {
	void *addr;
	size_t size_bytes; /* as requested */
	uint32_t lkey;
	uint32_t rkey;
	struct tv_pool_block *block; /* private to the pool */
};

struct tv_pool_stats {
	uint64_t blocks;
	uint64_t bytes_registered;
	uint64_t reg_calls;
	uint64_t live_allocs;
	uint64_t live_bytes;
};

/* access: TV_ACCESS_* flags every block is registered with. */
int tv_pool_create(struct tv_vf_pd *pd, size_t block_bytes, uint32_t access,
		   struct tv_pool **pool_p);
/* Deregisters and frees every block; live allocations are a bug (assert). */
void tv_pool_destroy(struct tv_pool *pool);

/*
 * size_bytes > 0.  Returns -ENOMEM when memory cannot be had and the
 * registration's error when reg_mr fails.  Addresses are 64-byte aligned.
 */
int tv_pool_alloc(struct tv_pool *pool, size_t size_bytes,
		  struct tv_pool_buf *buf_p);
void tv_pool_free(struct tv_pool *pool, const struct tv_pool_buf *buf);

/* Is [addr, addr+len) inside one registered block?  0 and keys, or -ENOENT. */
int tv_pool_lookup(const struct tv_pool *pool, const void *addr, size_t len,
		   uint32_t *lkey_p, uint32_t *rkey_p);

void tv_pool_stats(const struct tv_pool *pool, struct tv_pool_stats *stats_p);

#endif /* TV_ENGINE_POOL_H */
