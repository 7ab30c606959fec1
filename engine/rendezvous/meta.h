/*
 * This file is private to tensorverbs' engine: copying and clearing a
 * struct tv_meta by what it means, for the engine and its codec.
 */
#ifndef TV_ENGINE_META_H
#define TV_ENGINE_META_H

#include <assert.h>
#include <stdbool.h>
#include <string.h>

#include <tensorverbs/tensor.h>

/*
 * *dst = *src for what a shape means: the rank and that many dims.  Dims
 * past the rank are never read (tv_shape_equal, the codec, the proto), and
 * a whole struct is 264 bytes: about 0.1 us to copy on emulated CPUs,
 * where a fetch copied four of them.  Rank 1, the usual case, needs no
 * call.
 */
static inline void tv__shape_copy(struct tv_shape *dst,
				  const struct tv_shape *src)
{
	assert(src->rank <= TV_MAX_RANK);
	dst->rank = src->rank;
	if (src->rank == 1)
		dst->dims[0] = src->dims[0];
	else if (src->rank)
		memcpy(dst->dims, src->dims, src->rank * sizeof(src->dims[0]));
}

/* tv_shape_equal(), inlined where a fetch's request is answered. */
static inline bool tv__shape_equal(const struct tv_shape *a,
				   const struct tv_shape *b)
{
	uint32_t i;

	assert(a && b);
	if (a->rank != b->rank || a->rank > TV_MAX_RANK)
		return false;
	for (i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}

/* What zeroing a struct tv_meta gave, but the dims past rank 0. */
static inline void tv__meta_clear(struct tv_meta *m)
{
	m->dtype = TV_DT_INVALID;
	m->shape.rank = 0;
	m->is_dead = false;
	m->tensor_bytes = 0;
}

static inline void tv__meta_copy(struct tv_meta *dst, const struct tv_meta *src)
{
	dst->dtype = src->dtype;
	tv__shape_copy(&dst->shape, &src->shape);
	dst->is_dead = src->is_dead;
	dst->tensor_bytes = src->tensor_bytes;
}

#endif /* TV_ENGINE_META_H */
