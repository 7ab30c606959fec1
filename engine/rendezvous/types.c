/*
 * Status codes, data types, shapes and tensor metadata: the small value
 * types every other part of tensorverbs (and the wire codec) relies on.
 * Metadata arrives from the peer, so every check here assumes hostile input.
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <tensorverbs/tensor.h>

#include "meta.h"
#include "serialize.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Indexed by enum tv_code, which is dense from 0 to TV_CODE_MAX. */
static const char *const code_names[TV_CODE_MAX + 1] = {
	[TV_OK] = "OK",
	[TV_CANCELLED] = "CANCELLED",
	[TV_UNKNOWN] = "UNKNOWN",
	[TV_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
	[TV_DEADLINE_EXCEEDED] = "DEADLINE_EXCEEDED",
	[TV_NOT_FOUND] = "NOT_FOUND",
	[TV_ALREADY_EXISTS] = "ALREADY_EXISTS",
	[TV_PERMISSION_DENIED] = "PERMISSION_DENIED",
	[TV_RESOURCE_EXHAUSTED] = "RESOURCE_EXHAUSTED",
	[TV_FAILED_PRECONDITION] = "FAILED_PRECONDITION",
	[TV_ABORTED] = "ABORTED",
	[TV_OUT_OF_RANGE] = "OUT_OF_RANGE",
	[TV_UNIMPLEMENTED] = "UNIMPLEMENTED",
	[TV_INTERNAL] = "INTERNAL",
	[TV_UNAVAILABLE] = "UNAVAILABLE",
	[TV_DATA_LOSS] = "DATA_LOSS",
	[TV_UNAUTHENTICATED] = "UNAUTHENTICATED",
};

/*
 * The dtypes tensorverbs knows, indexed by DataType value (sparse: the
 * gaps have no name): a lookup is one bounds check, no scan.
 */
static const struct dtype_info {
	enum tv_dtype dtype;
	const char *name; /* TensorFlow's spelling (DataTypeString); NULL: none */
	size_t size;      /* 0: not DMA-able, serialized as a TensorProto */
} dtypes[] = {
#define DT(v, n, sz) [v] = { v, n, sz }
	DT(TV_DT_FLOAT, "float", 4),	DT(TV_DT_DOUBLE, "double", 8),
	DT(TV_DT_INT32, "int32", 4),	DT(TV_DT_UINT8, "uint8", 1),
	DT(TV_DT_INT16, "int16", 2),	DT(TV_DT_INT8, "int8", 1),
	DT(TV_DT_STRING, "string", 0),	DT(TV_DT_INT64, "int64", 8),
	DT(TV_DT_BOOL, "bool", 1),	DT(TV_DT_BFLOAT16, "bfloat16", 2),
	DT(TV_DT_UINT16, "uint16", 2),	DT(TV_DT_HALF, "half", 2),
	DT(TV_DT_UINT32, "uint32", 4),	DT(TV_DT_UINT64, "uint64", 8),
#undef DT
};

void tv_status_set(struct tv_status *st, enum tv_code code, const char *fmt,
		   ...)
{
	va_list ap;

	assert(st && fmt);
	st->code = code;
	va_start(ap, fmt);
	/* vsnprintf truncates and always terminates: exactly what we want. */
	vsnprintf(st->message, sizeof(st->message), fmt, ap);
	va_end(ap);
	st->details[0] = '\0';
}

void tv_status_ok(struct tv_status *st)
{
	assert(st);
	st->code = TV_OK;
	st->message[0] = '\0';
	st->details[0] = '\0';
}

const char *tv_code_name(enum tv_code code)
{
	/* The value may come from a peer: never index out of the table. */
	if ((unsigned int)code > TV_CODE_MAX)
		return "INVALID_CODE";
	return code_names[code];
}

int tv_code_from_name(const char *name, enum tv_code *code_p)
{
	unsigned int i;

	if (!name)
		return -EINVAL;
	for (i = 0; i <= TV_CODE_MAX; i++) {
		if (strcmp(name, code_names[i]) == 0) {
			*code_p = (enum tv_code)i;
			return 0;
		}
	}
	return -EINVAL;
}

static const struct dtype_info *dtype_lookup(enum tv_dtype dtype)
{
	/* The value may come from a peer: never index out of the table. */
	if ((unsigned int)dtype >= ARRAY_SIZE(dtypes) || !dtypes[dtype].name)
		return NULL;
	return &dtypes[dtype];
}

size_t tv_dtype_size(enum tv_dtype dtype)
{
	const struct dtype_info *info = dtype_lookup(dtype);

	return info ? info->size : 0;
}

bool tv_dtype_valid(enum tv_dtype dtype)
{
	return dtype_lookup(dtype) != NULL;
}

bool tv_dtype_dmaable(enum tv_dtype dtype)
{
	return tv_dtype_size(dtype) != 0;
}

const char *tv_dtype_name(enum tv_dtype dtype)
{
	const struct dtype_info *info = dtype_lookup(dtype);

	return info ? info->name : "invalid";
}

int tv_dtype_from_name(const char *name, enum tv_dtype *dtype_p)
{
	size_t i;

	if (!name)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(dtypes); i++) {
		if (dtypes[i].name && strcmp(name, dtypes[i].name) == 0) {
			*dtype_p = dtypes[i].dtype;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * The product of the non-zero dims must fit in int64, whatever the order of
 * the dims and even when one of them is 0: a shape like [0, 2^62, 8] is
 * rejected rather than accepted or refused depending on where the 0 sits.
 */
int tv_shape_num_elements(const struct tv_shape *shape, uint64_t *n_p)
{
	int64_t product = 1;
	bool has_zero = false;
	uint32_t i;

	assert(shape);
	if (shape->rank > TV_MAX_RANK)
		return -EINVAL;
	for (i = 0; i < shape->rank; i++) {
		int64_t d = shape->dims[i];

		if (d < 0)
			return -EINVAL;
		if (d == 0) {
			has_zero = true;
			continue;
		}
		if (__builtin_mul_overflow(product, d, &product))
			return -EOVERFLOW;
	}
	assert(product >= 1);
	*n_p = has_zero ? 0 : (uint64_t)product;
	return 0;
}

/* Dims past rank are ignored: they are not part of the shape. */
bool tv_shape_equal(const struct tv_shape *a, const struct tv_shape *b)
{
	return tv__shape_equal(a, b);
}

bool tv_meta_equal(const struct tv_meta *a, const struct tv_meta *b)
{
	assert(a && b);
	return a->dtype == b->dtype && a->is_dead == b->is_dead &&
	       a->tensor_bytes == b->tensor_bytes &&
	       tv_shape_equal(&a->shape, &b->shape);
}

/*
 * -EINVAL when a rule is broken, -EOVERFLOW when a size does not fit.
 * Dead tensors carry no data at all; strings carry a serialized TensorProto
 * whose size is only bounded (its exact value depends on the contents).
 */
int tv_meta_validate(const struct tv_meta *meta)
{
	uint64_t elements, bytes;
	size_t esize;
	int ret;

	assert(meta);
	if (!tv_dtype_valid(meta->dtype))
		return -EINVAL;
	ret = tv_shape_num_elements(&meta->shape, &elements);
	if (ret)
		return ret;
	if (meta->is_dead)
		return meta->tensor_bytes == 0 ? 0 : -EINVAL;
	esize = tv_dtype_size(meta->dtype);
	if (esize == 0) {
		if (meta->tensor_bytes > TV_SERIALIZED_BYTES_MAX)
			return -EOVERFLOW;
		return 0;
	}
	if (__builtin_mul_overflow(elements, (uint64_t)esize, &bytes))
		return -EOVERFLOW;
	return meta->tensor_bytes == bytes ? 0 : -EINVAL;
}
