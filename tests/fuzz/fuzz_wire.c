/*
 * Fuzz target: the wire codec (engine/rendezvous/wire.c, docs/wire-format.md).
 *
 * 1. Decode the input as it is.  On failure: a documented error and the
 *    output untouched.  On success: the decoder's promises hold, the
 *    message passes the encoder's validation and re-encodes to the very
 *    same bytes, the encoder writes nothing into a buffer one byte short,
 *    and the strict prefix and one extra byte are rejected.
 * 2. The same with body_len and the checksum fixed up, so the fuzzer gets
 *    past the checksum and explores the body rules.
 * 3. The other direction: a message built from the input (fz_build_msg);
 *    if the encoder accepts it, the decoder returns exactly it.
 * In 1 and 2, the publisher's in-place read of a request
 * (tv__wire_peek_request) agrees with the decoder (tests/wire/peek_oracle.h).
 */
#include <errno.h>
#include <string.h>

#include <xxhash.h>

#include "fuzz.h"
#include "../wire/peek_oracle.h"

#define HDR_BYTES 16
#define WIRE_CAP 4096 /* > tv_wire_max_bytes() */

static bool all_bytes(const void *p, size_t n, uint8_t v)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

static bool meta_zero(const struct tv_meta *m)
{
	uint32_t i;

	for (i = 0; i < TV_MAX_RANK; i++)
		if (m->shape.dims[i])
			return false;
	return !m->dtype && !m->shape.rank && !m->is_dead && !m->tensor_bytes;
}

static bool meta_same(const struct tv_meta *a, const struct tv_meta *b)
{
	return a->dtype == b->dtype && a->is_dead == b->is_dead &&
	       a->tensor_bytes == b->tensor_bytes &&
	       a->shape.rank == b->shape.rank &&
	       !memcmp(a->shape.dims, b->shape.dims, sizeof(a->shape.dims));
}

/* Field by field: the struct's padding is nobody's business. */
static bool msg_same(const struct tv_msg *a, const struct tv_msg *b)
{
	return a->type == b->type && a->name_len == b->name_len &&
	       !strcmp(a->name, b->name) && a->step_id == b->step_id &&
	       a->request_index == b->request_index &&
	       a->remote_addr == b->remote_addr && a->rkey == b->rkey &&
	       a->remote_bytes == b->remote_bytes &&
	       a->meta_valid == b->meta_valid && meta_same(&a->meta, &b->meta) &&
	       a->has_checksum == b->has_checksum &&
	       a->checksum == b->checksum &&
	       a->status.code == b->status.code &&
	       !strcmp(a->status.message, b->status.message) &&
	       !strcmp(a->status.details, b->status.details);
}

/* docs/wire-format.md, "Decoding": what holds after a successful decode. */
static void check_decoded(const struct tv_msg *m)
{
	bool req = m->type == TV_MSG_TENSOR_REQUEST ||
		   m->type == TV_MSG_TENSOR_RE_REQUEST;

	FZ_CHECK((unsigned int)m->type < TV_MSG_TYPE_COUNT);
	FZ_CHECK(m->name_len >= 1 && m->name_len <= TV_NAME_MAX);
	FZ_CHECK(strnlen(m->name, sizeof(m->name)) == m->name_len);
	FZ_CHECK(m->request_index <= TV_IMM_MAX_REQUEST);
	FZ_CHECK(m->meta_valid <= 1 && m->has_checksum <= 1);
	FZ_CHECK(!m->meta_valid || tv_meta_validate(&m->meta) == 0);
	FZ_CHECK(m->meta_valid || meta_zero(&m->meta));
	FZ_CHECK(m->has_checksum || !m->checksum);
	FZ_CHECK(strnlen(m->status.message, sizeof(m->status.message)) <=
		 TV_STATUS_MSG_MAX);
	FZ_CHECK(strnlen(m->status.details, sizeof(m->status.details)) <=
		 TV_STATUS_DETAILS_MAX);
	if (req)
		FZ_CHECK(!m->has_checksum);
	else
		FZ_CHECK(!m->remote_addr && !m->rkey && !m->remote_bytes);
	if (m->type == TV_MSG_META_DATA_UPDATE)
		FZ_CHECK(m->meta_valid);
	if (m->type == TV_MSG_ERROR_STATUS)
		FZ_CHECK(!m->meta_valid && !m->has_checksum &&
			 m->status.code != TV_OK &&
			 (unsigned int)m->status.code <= TV_CODE_MAX);
	else
		FZ_CHECK(m->status.code == TV_OK && !m->status.message[0] &&
			 !m->status.details[0]);
}

static void check_decode(const uint8_t *buf, size_t len)
{
	static struct tv_msg msg, again;
	static uint8_t out[WIRE_CAP + 1];
	size_t olen = 0;
	int ret;

	FZ_CHECK(!peek_vs_decode(buf, len));
	memset(&msg, 0xA5, sizeof(msg));
	ret = tv_wire_decode(buf, len, &msg);
	if (ret) {
		FZ_CHECK(ret == -EBADMSG || ret == -EPROTO ||
			 ret == -EMSGSIZE);
		FZ_CHECK(all_bytes(&msg, sizeof(msg), 0xA5)); /* untouched */
		return;
	}
	FZ_CHECK(len >= HDR_BYTES && len <= tv_wire_max_bytes());
	check_decoded(&msg);
	/* Passes the encoder's validation and round-trips byte for byte. */
	ret = tv_wire_encode(&msg, out, sizeof(out), &olen);
	FZ_CHECK(ret == 0);
	FZ_CHECK(olen == len && !memcmp(out, buf, len));
	/* One byte short: -ENOBUFS, nothing written. */
	memset(out, 0x5A, len);
	ret = tv_wire_encode(&msg, out, len - 1, &olen);
	FZ_CHECK(ret == -ENOBUFS && all_bytes(out, len, 0x5A));
	/* Every strict prefix is invalid, and so is any extra byte. */
	FZ_CHECK(tv_wire_decode(buf, len - 1, &again) != 0);
	memcpy(out, buf, len);
	out[len] = 0;
	FZ_CHECK(tv_wire_decode(out, len + 1, &again) != 0);
}

/* body_len = the bytes present, and the checksum the spec asks for. */
static void fix_header(uint8_t *buf, size_t len)
{
	uint32_t body = (uint32_t)(len - HDR_BYTES), sum;
	unsigned int i;
	uint64_t h;

	for (i = 0; i < 4; i++)
		buf[8 + i] = (uint8_t)(body >> (8 * i));
	h = XXH3_64bits_withSeed(buf + HDR_BYTES, body, XXH3_64bits(buf, 12));
	sum = (uint32_t)(h ^ (h >> 32));
	for (i = 0; i < 4; i++)
		buf[12 + i] = (uint8_t)(sum >> (8 * i));
}

static void check_encode(const uint8_t *data, size_t size)
{
	static const struct fz_known none;
	static struct tv_msg msg, back;
	static uint8_t out[WIRE_CAP];
	struct fz_cur c = { data, size };
	size_t len;

	fz_build_msg(&c, &none, &msg);
	if (tv_wire_encode(&msg, out, sizeof(out), &len))
		return;
	FZ_CHECK(len >= HDR_BYTES && len <= tv_wire_max_bytes());
	FZ_CHECK(tv_wire_decode(out, len, &back) == 0);
	/* Fields the type does not carry are not sent: clear them. */
	if (msg.type != TV_MSG_ERROR_STATUS)
		memset(&msg.status, 0, sizeof(msg.status));
	if (msg.type == TV_MSG_META_DATA_UPDATE || msg.type ==
						   TV_MSG_ERROR_STATUS)
		msg.remote_addr = msg.remote_bytes = msg.rkey = 0;
	if (!msg.meta_valid)
		memset(&msg.meta, 0, sizeof(msg.meta));
	FZ_CHECK(msg_same(&msg, &back));
	check_decode(out, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t fixed[WIRE_CAP];

	check_decode(data, size);
	if (size >= HDR_BYTES && size <= sizeof(fixed)) {
		memcpy(fixed, data, size);
		fix_header(fixed, size);
		if (memcmp(fixed, data, size))
			check_decode(fixed, size);
	}
	check_encode(data, size);
	return 0;
}
