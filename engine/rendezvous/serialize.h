/*
 * This file is private to tensorverbs' engine: serialization of tensors that
 * cannot be copied as bytes (TV_DT_STRING) into a TensorProto-shaped message
 * (engine/tensor.proto: dtype=1, tensor_shape=2, string_val=8), so that a
 * TensorFlow peer could read the payload.
 */
#ifndef TV_ENGINE_SERIALIZE_H
#define TV_ENGINE_SERIALIZE_H

#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/tensor.h>

/*
 * Largest serialized tensor tensorverbs accepts (tensor_bytes of a string
 * tensor's metadata): a bound on what a peer can make us allocate.
 */
#define TV_SERIALIZED_BYTES_MAX (UINT64_C(1) << 40)

/* One string element: len bytes at ptr, any bytes (NUL included). */
struct tv_str {
	void *ptr;
	size_t len;
};

/*
 * Bytes of the TensorProto for these strings.  count must equal the
 * elements of shape (-EINVAL otherwise, or for an invalid shape);
 * -EOVERFLOW past TV_SERIALIZED_BYTES_MAX; -ENOMEM.
 */
int tv_proto_packed_size(const struct tv_shape *shape,
			 const struct tv_str *items, uint64_t count,
			 size_t *size_p);
/* As above, writing the bytes to out; -ENOBUFS if cap is too small. */
int tv_proto_pack(const struct tv_shape *shape, const struct tv_str *items,
		  uint64_t count, uint8_t *out, size_t cap, size_t *len_p);
/*
 * Allocates *items_p (array of count tv_str, each ptr malloc'd and never
 * NULL, even for an empty string; free with tv_proto_free_items).  Returns
 * -EBADMSG for a malformed proto, dtype != string, an invalid shape, count
 * != elements of shape, or a shape differing from expect_shape when it is
 * not NULL; -ENOMEM.  With zero strings *items_p is NULL.
 */
int tv_proto_unpack(const uint8_t *buf, size_t len,
		    const struct tv_shape *expect_shape,
		    struct tv_shape *shape_p, struct tv_str **items_p,
		    uint64_t *count_p);
void tv_proto_free_items(struct tv_str *items, uint64_t count);

#endif /* TV_ENGINE_SERIALIZE_H */
