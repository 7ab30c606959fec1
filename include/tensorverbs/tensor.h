/*
 * tensorverbs — tensors, their metadata and status codes.
 */
#ifndef TENSORVERBS_TENSOR_H
#define TENSORVERBS_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: the values of TensorFlow's error::Code. */
enum tv_code {
	TV_OK = 0,
	TV_CANCELLED = 1,
	TV_UNKNOWN = 2,
	TV_INVALID_ARGUMENT = 3,
	TV_DEADLINE_EXCEEDED = 4,
	TV_NOT_FOUND = 5,
	TV_ALREADY_EXISTS = 6,
	TV_PERMISSION_DENIED = 7,
	TV_RESOURCE_EXHAUSTED = 8,
	TV_FAILED_PRECONDITION = 9,
	TV_ABORTED = 10,
	TV_OUT_OF_RANGE = 11,
	TV_UNIMPLEMENTED = 12,
	TV_INTERNAL = 13,
	TV_UNAVAILABLE = 14,
	TV_DATA_LOSS = 15,
	TV_UNAUTHENTICATED = 16,
	TV_CODE_MAX = 16
};

#define TV_STATUS_MSG_MAX 1024     /* bytes of message text, no NUL */
#define TV_STATUS_DETAILS_MAX 1024 /* bytes of details text, no NUL */

struct tv_status {
	enum tv_code code;
	char message[TV_STATUS_MSG_MAX + 1];
	char details[TV_STATUS_DETAILS_MAX + 1];
};

/* Sets code and a printf-formatted message (truncated), clears details. */
void tv_status_set(struct tv_status *st, enum tv_code code, const char *fmt,
		   ...) __attribute__((format(printf, 3, 4)));
void tv_status_ok(struct tv_status *st);
const char *tv_code_name(enum tv_code code);
/* "NOT_FOUND" -> TV_NOT_FOUND; -EINVAL when unknown. */
int tv_code_from_name(const char *name, enum tv_code *code_p);

/* Data types: the values of TensorFlow's DataType enum. */
enum tv_dtype {
	TV_DT_INVALID = 0,
	TV_DT_FLOAT = 1,
	TV_DT_DOUBLE = 2,
	TV_DT_INT32 = 3,
	TV_DT_UINT8 = 4,
	TV_DT_INT16 = 5,
	TV_DT_INT8 = 6,
	TV_DT_STRING = 7,
	TV_DT_INT64 = 9,
	TV_DT_BOOL = 10,
	TV_DT_BFLOAT16 = 14,
	TV_DT_UINT16 = 17,
	TV_DT_HALF = 19,
	TV_DT_UINT32 = 22,
	TV_DT_UINT64 = 23,
};

/* Bytes per element; 0 for TV_DT_STRING and for unknown types. */
size_t tv_dtype_size(enum tv_dtype dtype);
bool tv_dtype_valid(enum tv_dtype dtype);
/* Can the bytes be copied as they are (false for strings)? */
bool tv_dtype_dmaable(enum tv_dtype dtype);
const char *tv_dtype_name(enum tv_dtype dtype); /* "float", "string" ... */
int tv_dtype_from_name(const char *name, enum tv_dtype *dtype_p);

#define TV_MAX_RANK 32
#define TV_NAME_MAX 512 /* bytes of a tensor name, no NUL */

struct tv_shape {
	uint32_t rank;
	int64_t dims[TV_MAX_RANK];
};

/* Elements of a shape; -EOVERFLOW if the product overflows int64. */
int tv_shape_num_elements(const struct tv_shape *shape, uint64_t *n_p);
bool tv_shape_equal(const struct tv_shape *a, const struct tv_shape *b);

/*
 * What a receiver must know to allocate a tensor.  tensor_bytes is the
 * byte size of the data for DMA-able tensors and the size of the
 * serialized TensorProto for strings; 0 for dead tensors.
 */
struct tv_meta {
	enum tv_dtype dtype;
	struct tv_shape shape;
	bool is_dead;
	uint64_t tensor_bytes;
};

bool tv_meta_equal(const struct tv_meta *a, const struct tv_meta *b);
/* Checks internal consistency: dtype known, dims >= 0, sizes agree. */
int tv_meta_validate(const struct tv_meta *meta);

enum tv_placement {
	TV_PLACE_HOST = 0,   /* CPU memory from the registered pool */
	TV_PLACE_DEVICE = 1, /* "device" memory that cannot be registered */
};

struct tv_engine;
struct tv_tensor;

/*
 * Tensors are reference counted.  Host tensors live in registered pool
 * memory (zero-copy sends); device tensors come from the engine's device
 * allocator and go through proxies.  A tensor must not outlive its engine.
 */
int tv_tensor_create(struct tv_engine *engine, enum tv_dtype dtype,
		     const struct tv_shape *shape, enum tv_placement place,
		     struct tv_tensor **tensor_p);
/* A dead tensor (TensorFlow's is_dead): no data, only the flag. */
int tv_tensor_create_dead(struct tv_engine *engine, enum tv_dtype dtype,
			  struct tv_tensor **tensor_p);
/*
 * Wrap caller-owned host memory that was NOT registered: sending it goes
 * through a registered copy (never lkey 0).  free_fn(arg, data) runs when
 * the last reference goes.
 */
int tv_tensor_wrap_host(struct tv_engine *engine, enum tv_dtype dtype,
			const struct tv_shape *shape, void *data,
			void (*free_fn)(void *arg, void *data), void *arg,
			struct tv_tensor **tensor_p);

void tv_tensor_ref(struct tv_tensor *t);
void tv_tensor_unref(struct tv_tensor *t);

enum tv_dtype tv_tensor_dtype(const struct tv_tensor *t);
const struct tv_shape *tv_tensor_shape(const struct tv_tensor *t);
bool tv_tensor_is_dead(const struct tv_tensor *t);
enum tv_placement tv_tensor_placement(const struct tv_tensor *t);
uint64_t tv_tensor_num_elements(const struct tv_tensor *t);
/* Data of a DMA-able tensor (NULL for strings, dead or empty tensors). */
void *tv_tensor_data(struct tv_tensor *t);
size_t tv_tensor_size_bytes(const struct tv_tensor *t);

/* Strings: element i of a TV_DT_STRING tensor. */
int tv_tensor_set_string(struct tv_tensor *t, uint64_t index,
			 const void *bytes, size_t len);
int tv_tensor_get_string(const struct tv_tensor *t, uint64_t index,
			 const void **bytes_p, size_t *len_p);

/* 64-bit content checksum (XXH3) over dtype, shape and data/strings. */
uint64_t tv_tensor_checksum(const struct tv_tensor *t);

#ifdef __cplusplus
}
#endif
#endif /* TENSORVERBS_TENSOR_H */
