/*
 * The oracle that pins the publisher's early answer to the decoder, shared
 * by tests/wire (every byte flip of a request) and tests/fuzz (whatever
 * the fuzzer finds).  engine/rendezvous/response.c answers a request it has only
 * peeked at (tv__wire_peek_request), once its name equals a tag's name and
 * its metadata a tensor's, and then uses the fields the decoder would have
 * given, without decoding.  That is sound if:
 *  - a view the peek accepts whose unchecked bytes are valid (name without
 *    NUL, metadata tv_meta_validate() takes) is a message the decoder
 *    accepts, field for field;
 *  - a view the peek accepts that the decoder refuses has invalid unchecked
 *    bytes (the other side of the same rule);
 *  - the view points inside the buffer;
 *  - every TENSOR_REQUEST with metadata the decoder accepts, the peek
 *    accepts (or the fast path would be lost).
 * peek_vs_decode() returns NULL when all hold, else what broke.
 */
#ifndef TV_TESTS_PEEK_ORACLE_H
#define TV_TESTS_PEEK_ORACLE_H

#include <stdint.h>
#include <string.h>

#include "wire.h"

/* The view's metadata, if each unchecked field is one the decoder takes. */
static inline bool peek_view_meta(const struct tv__wire_req_view *v,
				  struct tv_meta *m)
{
	uint32_t i;

	memset(m, 0, sizeof(*m));
	if (!tv_dtype_valid((enum tv_dtype)v->dtype) || v->is_dead > 1)
		return false;
	m->dtype = (enum tv_dtype)v->dtype;
	m->is_dead = v->is_dead;
	m->tensor_bytes = v->tensor_bytes;
	m->shape.rank = v->rank;
	for (i = 0; i < v->rank; i++) {
		if (tv__wire_view_dim(v, i) > INT64_MAX)
			return false;
		m->shape.dims[i] = (int64_t)tv__wire_view_dim(v, i);
	}
	return tv_meta_validate(m) == 0;
}

static inline const char *peek_vs_decode(const uint8_t *buf, size_t len)
{
	static struct tv_msg msg;
	struct tv__wire_req_view v;
	struct tv_meta meta;
	bool peeked, valid;
	int ret;

	memset(&v, 0, sizeof(v));
	peeked = tv__wire_peek_request(buf, len, &v);
	ret = tv_wire_decode(buf, len, &msg);
	if (!ret && msg.type == TV_MSG_TENSOR_REQUEST && msg.meta_valid &&
	    !peeked)
		return "a request with metadata the decoder takes, peek refused";
	if (!peeked)
		return NULL;
	if ((const uint8_t *)v.name < buf + 16 ||
	    (const uint8_t *)v.name + v.name_len > v.dims ||
	    v.dims + 8 * (size_t)v.rank != buf + len)
		return "the view points outside the message";
	valid = peek_view_meta(&v, &meta) &&
		!memchr(v.name, '\0', v.name_len);
	if (ret)
		return valid ? "peek took valid bytes the decoder refused" : NULL;
	if (!valid)
		return "the decoder took bytes the oracle calls invalid";
	if (msg.type != TV_MSG_TENSOR_REQUEST || !msg.meta_valid ||
	    msg.request_index != v.request_index ||
	    msg.step_id != v.step_id || msg.name_len != v.name_len ||
	    memcmp(msg.name, v.name, v.name_len) ||
	    msg.remote_addr != v.remote_addr ||
	    msg.remote_bytes != v.remote_bytes || msg.rkey != v.rkey ||
	    !tv_meta_equal(&msg.meta, &meta))
		return "the view's fields differ from the decoder's";
	return NULL;
}

#endif /* TV_TESTS_PEEK_ORACLE_H */
