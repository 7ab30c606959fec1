/*
 * Tensors: reference-counted, their data in registered pool memory (host),
 * in the device allocator's memory (device), or caller-owned (wrapped).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "engine_int.h"

static int tensor_new(struct tv_engine *e, enum tv_dtype dtype,
		      const struct tv_shape *shape, enum tv_placement place,
		      struct tv_tensor **t_p)
{
	struct tv_tensor *t;
	uint64_t n;
	int ret;

	if (!tv_dtype_valid(dtype) || !shape || shape->rank > TV_MAX_RANK)
		return -EINVAL;
	ret = tv_shape_num_elements(shape, &n);
	if (ret)
		return ret;
	if (dtype != TV_DT_STRING && n > SIZE_MAX / tv_dtype_size(dtype))
		return -EOVERFLOW;
	t = tv__fl_calloc(&e->free_tensors, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->engine = e;
	t->refs = 1;
	t->dtype = dtype;
	tv__shape_copy(&t->shape, shape);
	t->place = place;
	t->num_elements = n;
	if (dtype != TV_DT_STRING)
		t->size_bytes = (size_t)n * tv_dtype_size(dtype);
	*t_p = t;
	return 0;
}

static int tensor_alloc_data(struct tv_tensor *t)
{
	struct tv_engine *e = t->engine;
	int ret;

	if (!t->size_bytes)
		return 0;
	if (t->place == TV_PLACE_DEVICE) {
		t->data = e->cfg.device_alloc(e->cfg.device_ctx, t->size_bytes);
		if (!t->data)
			return -ENOMEM;
		t->mem = TV_MEM_DEVICE;
		return 0;
	}
	ret = tv_pool_alloc(e->pool, t->size_bytes, &t->buf);
	if (ret)
		return ret;
	t->data = t->buf.addr;
	t->mem = TV_MEM_POOL;
	return 0;
}

int tv_tensor_create(struct tv_engine *e, enum tv_dtype dtype,
		     const struct tv_shape *shape, enum tv_placement place,
		     struct tv_tensor **tensor_p)
{
	struct tv_tensor *t;
	int ret;

	if (!e || !tensor_p ||
	    (place != TV_PLACE_HOST && place != TV_PLACE_DEVICE))
		return -EINVAL;
	/* Strings are host objects, as in TensorFlow. */
	if (dtype == TV_DT_STRING)
		place = TV_PLACE_HOST;
	ret = tensor_new(e, dtype, shape, place, &t);
	if (ret)
		return ret;
	if (dtype == TV_DT_STRING && t->num_elements) {
		if (t->num_elements > SIZE_MAX / sizeof(*t->strings)) {
			ret = -EOVERFLOW;
			goto err_free;
		}
		t->strings = tv__calloc((size_t)t->num_elements,
				    sizeof(*t->strings));
		if (!t->strings) {
			ret = -ENOMEM;
			goto err_free;
		}
	}
	ret = tensor_alloc_data(t);
	if (ret)
		goto err_strings;
	e->stats.live_tensors++;
	*tensor_p = t;
	return 0;

err_strings:
	free(t->strings);
err_free:
	free(t);
	return ret;
}

struct tv_tensor *tv__tensor_reserve(struct tv_engine *e)
{
	bool empty;
	struct tv_tensor *t = tv__fl_pop(&e->free_tensors, &empty);

	return empty ? tv__malloc(sizeof(*t)) : t;
}

void tv__tensor_unreserve(struct tv_engine *e, struct tv_tensor *t)
{
	tv__fl_free(&e->free_tensors, t);
}

void tv__tensor_init_pool(struct tv_tensor *t, struct tv_engine *e,
			  const struct tv_meta *m, const struct tv_pool_buf *buf)
{
	size_t esize = tv_dtype_size(m->dtype);

	/* What tv_tensor_create() checks, tv_meta_validate() held. */
	assert(tv_dtype_valid(m->dtype) && m->dtype != TV_DT_STRING);
	assert(!m->is_dead && esize && m->tensor_bytes % esize == 0);
	memset(t, 0, sizeof(*t));
	t->engine = e;
	t->refs = 1;
	t->dtype = m->dtype;
	tv__shape_copy(&t->shape, &m->shape);
	t->place = TV_PLACE_HOST;
	t->num_elements = m->tensor_bytes / esize;
	t->size_bytes = m->tensor_bytes;
	t->mem = TV_MEM_POOL;
	t->buf = *buf;
	t->data = buf->addr;
	e->stats.live_tensors++;
}

int tv_tensor_create_dead(struct tv_engine *e, enum tv_dtype dtype,
			  struct tv_tensor **tensor_p)
{
	struct tv_shape scalar = { .rank = 0 };
	struct tv_tensor *t;
	int ret;

	if (!e || !tensor_p)
		return -EINVAL;
	ret = tensor_new(e, dtype, &scalar, TV_PLACE_HOST, &t);
	if (ret)
		return ret;
	/* A dead tensor carries no data at all. */
	t->is_dead = true;
	t->num_elements = 0;
	t->size_bytes = 0;
	e->stats.live_tensors++;
	*tensor_p = t;
	return 0;
}

int tv_tensor_wrap_host(struct tv_engine *e, enum tv_dtype dtype,
			const struct tv_shape *shape, void *data,
			void (*free_fn)(void *arg, void *data), void *arg,
			struct tv_tensor **tensor_p)
{
	struct tv_tensor *t;
	int ret;

	if (!e || !tensor_p || dtype == TV_DT_STRING)
		return -EINVAL;
	ret = tensor_new(e, dtype, shape, TV_PLACE_HOST, &t);
	if (ret)
		return ret;
	if (t->size_bytes && !data) {
		free(t);
		return -EINVAL;
	}
	t->mem = TV_MEM_WRAPPED;
	t->data = data;
	t->free_fn = free_fn;
	t->free_arg = arg;
	e->stats.live_tensors++;
	*tensor_p = t;
	return 0;
}

int tv__tensor_adopt_strings(struct tv_engine *e, const struct tv_shape *shape,
			     struct tv_str *items, uint64_t count,
			     struct tv_tensor **tensor_p)
{
	struct tv_tensor *t;
	int ret;

	ret = tensor_new(e, TV_DT_STRING, shape, TV_PLACE_HOST, &t);
	if (ret)
		return ret;
	if (t->num_elements != count) {
		free(t);
		return -EINVAL;
	}
	t->strings = items;
	e->stats.live_tensors++;
	*tensor_p = t;
	return 0;
}

void tv_tensor_ref(struct tv_tensor *t)
{
	assert(t->refs > 0);
	t->refs++;
}

static void tensor_free(struct tv_tensor *t)
{
	struct tv_engine *e = t->engine;
	bool kept = false;
	uint64_t i;

	switch (t->mem) {
	case TV_MEM_POOL:
		if (t->q_armed)
			kept = tv__quarantine_tensor(e, t);
		else
			tv_pool_free(e->pool, &t->buf);
		break;
	case TV_MEM_DEVICE:
		e->cfg.device_free(e->cfg.device_ctx, t->data);
		break;
	case TV_MEM_WRAPPED:
		if (t->free_fn)
			t->free_fn(t->free_arg, t->data);
		break;
	case TV_MEM_NONE:
		break;
	}
	if (t->strings) {
		for (i = 0; i < t->num_elements; i++)
			free(t->strings[i].ptr);
		free(t->strings);
	}
	assert(e->stats.live_tensors > 0);
	e->stats.live_tensors--;
	/* In quarantine the struct holds the buffer: freed on release. */
	if (!kept)
		tv__fl_free(&e->free_tensors, t);
}

void tv_tensor_unref(struct tv_tensor *t)
{
	if (!t)
		return;
	assert(t->refs > 0);
	if (--t->refs == 0)
		tensor_free(t);
}

enum tv_dtype tv_tensor_dtype(const struct tv_tensor *t)
{
	return t->dtype;
}

const struct tv_shape *tv_tensor_shape(const struct tv_tensor *t)
{
	return &t->shape;
}

bool tv_tensor_is_dead(const struct tv_tensor *t)
{
	return t->is_dead;
}

enum tv_placement tv_tensor_placement(const struct tv_tensor *t)
{
	return t->place;
}

uint64_t tv_tensor_num_elements(const struct tv_tensor *t)
{
	return t->num_elements;
}

void *tv_tensor_data(struct tv_tensor *t)
{
	return t->data;
}

size_t tv_tensor_size_bytes(const struct tv_tensor *t)
{
	return t->size_bytes;
}

int tv_tensor_set_string(struct tv_tensor *t, uint64_t index,
			 const void *bytes, size_t len)
{
	void *copy = NULL;

	if (t->dtype != TV_DT_STRING || index >= t->num_elements ||
	    (len && !bytes))
		return -EINVAL;
	if (len) {
		copy = tv__malloc(len);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, bytes, len);
	}
	free(t->strings[index].ptr);
	t->strings[index].ptr = copy;
	t->strings[index].len = len;
	return 0;
}

int tv_tensor_get_string(const struct tv_tensor *t, uint64_t index,
			 const void **bytes_p, size_t *len_p)
{
	if (t->dtype != TV_DT_STRING || index >= t->num_elements)
		return -EINVAL;
	*bytes_p = t->strings[index].ptr;
	*len_p = t->strings[index].len;
	return 0;
}

uint64_t tv__checksum(const void *data, size_t len)
{
	return XXH3_64bits(data, len);
}

uint64_t tv_tensor_checksum(const struct tv_tensor *t)
{
	XXH3_state_t st;
	uint8_t hdr[2 + 4 + 1];
	uint64_t i, h;

	/* Only fails for a NULL state: ours is on the stack. */
	XXH3_64bits_reset(&st);
	hdr[0] = (uint8_t)t->dtype;
	hdr[1] = (uint8_t)(t->dtype >> 8);
	memcpy(&hdr[2], &t->shape.rank, 4);
	hdr[6] = t->is_dead;
	XXH3_64bits_update(&st, hdr, sizeof(hdr));
	XXH3_64bits_update(&st, t->shape.dims,
			   t->shape.rank * sizeof(t->shape.dims[0]));
	if (t->strings) {
		for (i = 0; i < t->num_elements; i++) {
			uint64_t len = t->strings[i].len;

			XXH3_64bits_update(&st, &len, sizeof(len));
			XXH3_64bits_update(&st, t->strings[i].ptr, len);
		}
	} else if (t->size_bytes) {
		XXH3_64bits_update(&st, t->data, t->size_bytes);
	}
	h = XXH3_64bits_digest(&st);
	return h;
}
