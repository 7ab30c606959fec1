/*
 * String tensors as TensorProto bytes, through protobuf-c's generated code.
 *
 * Packing builds a transient TensorProto whose string_val entries point at
 * the caller's bytes: one array allocation, never one per string.  Unpacking
 * parses with a counting allocator so that an allocation failure (-ENOMEM)
 * is told apart from a malformed message (-EBADMSG): protobuf-c returns NULL
 * for both.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "serialize.h"
#include "tensor.pb-c.h"

/* A TensorProto that borrows the caller's shape and strings. */
struct proto_frame {
	Tensorverbs__TensorProto msg;
	Tensorverbs__TensorShapeProto shape;
	Tensorverbs__TensorShapeProto__Dim dims[TV_MAX_RANK];
	Tensorverbs__TensorShapeProto__Dim *dim_ptrs[TV_MAX_RANK];
	ProtobufCBinaryData *vals; /* malloc'd, count entries */
};

static uint8_t empty[1];

static int frame_init(struct proto_frame *f, const struct tv_shape *shape,
		      const struct tv_str *items, uint64_t count)
{
	uint64_t elements;
	size_t i;
	int ret;

	assert(f && shape);
	ret = tv_shape_num_elements(shape, &elements);
	if (ret)
		return -EINVAL;
	if (count != elements || (count && !items))
		return -EINVAL;
	for (i = 0; i < (size_t)count; i++)
		if (items[i].len && !items[i].ptr)
			return -EINVAL;
	if (count > SIZE_MAX / sizeof(*f->vals))
		return -ENOMEM;

	tensorverbs__tensor_proto__init(&f->msg);
	tensorverbs__tensor_shape_proto__init(&f->shape);
	for (i = 0; i < shape->rank; i++) {
		tensorverbs__tensor_shape_proto__dim__init(&f->dims[i]);
		f->dims[i].size = shape->dims[i];
		f->dim_ptrs[i] = &f->dims[i];
	}
	f->shape.n_dim = shape->rank;
	f->shape.dim = f->dim_ptrs;
	f->msg.dtype = TV_DT_STRING;
	f->msg.tensor_shape = &f->shape;

	f->vals = NULL;
	if (count) {
		f->vals = malloc((size_t)count * sizeof(*f->vals));
		if (!f->vals)
			return -ENOMEM;
	}
	for (i = 0; i < (size_t)count; i++) {
		/* "" may come as NULL; protobuf-c would memcpy from it. */
		f->vals[i].data = items[i].len ? items[i].ptr : empty;
		f->vals[i].len = items[i].len;
	}
	f->msg.n_string_val = (size_t)count;
	f->msg.string_val = f->vals;
	return 0;
}

static void frame_release(struct proto_frame *f)
{
	free(f->vals);
	f->vals = NULL;
}

/*
 * get_packed_size sums the string lengths in size_t; strings whose total
 * length wraps size_t cannot exist in memory, so only the bound matters.
 */
static int frame_size(const struct proto_frame *f, size_t *size_p)
{
	size_t size = tensorverbs__tensor_proto__get_packed_size(&f->msg);

	if ((uint64_t)size > TV_SERIALIZED_BYTES_MAX)
		return -EOVERFLOW;
	*size_p = size;
	return 0;
}

int tv_proto_packed_size(const struct tv_shape *shape,
			 const struct tv_str *items, uint64_t count,
			 size_t *size_p)
{
	struct proto_frame f;
	size_t size;
	int ret;

	ret = frame_init(&f, shape, items, count);
	if (ret)
		return ret;
	ret = frame_size(&f, &size);
	frame_release(&f);
	if (ret)
		return ret;
	*size_p = size;
	return 0;
}

int tv_proto_pack(const struct tv_shape *shape, const struct tv_str *items,
		  uint64_t count, uint8_t *out, size_t cap, size_t *len_p)
{
	struct proto_frame f;
	size_t size, written;
	int ret;

	ret = frame_init(&f, shape, items, count);
	if (ret)
		return ret;
	ret = frame_size(&f, &size);
	if (ret)
		goto release;
	if (size > cap) {
		ret = -ENOBUFS;
		goto release;
	}
	assert(out);
	written = tensorverbs__tensor_proto__pack(&f.msg, out);
	assert(written == size);
	*len_p = written;
release:
	frame_release(&f);
	return ret;
}

/* protobuf-c allocator that remembers whether malloc failed. */
static void *oom_alloc(void *data, size_t size)
{
	void *p = malloc(size);

	if (!p)
		*(bool *)data = true;
	return p;
}

static void oom_free(void *data, void *ptr)
{
	free(ptr);
}

/* Shape of a parsed proto, checked as hostile input. */
static int proto_shape(const Tensorverbs__TensorProto *msg,
		       struct tv_shape *shape_p)
{
	struct tv_shape shape;
	size_t i;

	memset(&shape, 0, sizeof(shape));
	/* An absent shape is a scalar, as in TensorFlow's TensorProto. */
	if (msg->tensor_shape) {
		if (msg->tensor_shape->n_dim > TV_MAX_RANK)
			return -EBADMSG;
		shape.rank = (uint32_t)msg->tensor_shape->n_dim;
		for (i = 0; i < shape.rank; i++)
			shape.dims[i] = msg->tensor_shape->dim[i]->size;
	}
	*shape_p = shape;
	return 0;
}

static int copy_items(const Tensorverbs__TensorProto *msg,
		      struct tv_str **items_p)
{
	struct tv_str *items;
	size_t i, n = msg->n_string_val;

	if (n == 0) {
		*items_p = NULL;
		return 0;
	}
	items = calloc(n, sizeof(*items));
	if (!items)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		size_t len = msg->string_val[i].len;

		/* Never NULL, so callers need not special-case "". */
		items[i].ptr = malloc(len ? len : 1);
		if (!items[i].ptr) {
			tv_proto_free_items(items, i);
			return -ENOMEM;
		}
		if (len)
			memcpy(items[i].ptr, msg->string_val[i].data, len);
		items[i].len = len;
	}
	*items_p = items;
	return 0;
}

int tv_proto_unpack(const uint8_t *buf, size_t len,
		    const struct tv_shape *expect_shape,
		    struct tv_shape *shape_p, struct tv_str **items_p,
		    uint64_t *count_p)
{
	bool oom = false;
	ProtobufCAllocator alloc = { oom_alloc, oom_free, &oom };
	Tensorverbs__TensorProto *msg;
	struct tv_shape shape;
	struct tv_str *items;
	uint64_t elements;
	int ret;

	if (!buf && len)
		return -EINVAL;
	msg = tensorverbs__tensor_proto__unpack(&alloc, len, buf);
	if (!msg)
		return oom ? -ENOMEM : -EBADMSG;
	ret = -EBADMSG;
	if (msg->dtype != TV_DT_STRING)
		goto free_msg;
	if (proto_shape(msg, &shape))
		goto free_msg;
	if (tv_shape_num_elements(&shape, &elements))
		goto free_msg;
	if (elements != msg->n_string_val)
		goto free_msg;
	if (expect_shape && !tv_shape_equal(&shape, expect_shape))
		goto free_msg;
	ret = copy_items(msg, &items);
	if (ret)
		goto free_msg;
	*shape_p = shape;
	*items_p = items;
	*count_p = elements;
free_msg:
	tensorverbs__tensor_proto__free_unpacked(msg, &alloc);
	return ret;
}

void tv_proto_free_items(struct tv_str *items, uint64_t count)
{
	uint64_t i;

	if (!items)
		return;
	for (i = 0; i < count; i++)
		free(items[i].ptr);
	free(items);
}
