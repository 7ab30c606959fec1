/*
 * The wire codec against docs/wire-format.md.  Malformed messages are built
 * by an independent encoder written from the document (struct raw), then
 * sealed with the documented checksum, so each test reaches the one check
 * it is about.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <xxhash.h>

#include "peek_oracle.h"
#include "serialize.h"
#include "suites.h"
#include "wire.h"

#define HDR 16
#define F_META 0x1
#define F_SUM 0x2
/* Documented: name 512, message 1024, details 1024 in an ERROR_STATUS. */
#define MAX_BYTES (16 + 4 + 8 + 2 + 512 + 4 + 2 + 1024 + 2 + 1024)

/* ------------------------------------------------------------------ */
/* An encoder written from the document, for hand-made messages */

struct raw {
	uint8_t b[8192];
	size_t n;
};

static void raw_u8(struct raw *r, uint8_t v)
{
	ck_assert_uint_lt(r->n, sizeof(r->b));
	r->b[r->n++] = v;
}

static void raw_le(struct raw *r, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		raw_u8(r, (uint8_t)(v >> (8 * i)));
}

static void raw_bytes(struct raw *r, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		raw_u8(r, ((const uint8_t *)p)[i]);
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes the checksum of a message of len bytes (body_len as is). */
static void reseal(uint8_t *b, size_t len)
{
	uint64_t h = XXH3_64bits_withSeed(b + HDR, len - HDR,
					  XXH3_64bits(b, 12));

	put_le(b + 12, (uint32_t)(h ^ (h >> 32)), 4);
}

/* Starts a message: header with body_len and checksum filled by finish. */
static void raw_start(struct raw *r, uint8_t type, uint16_t flags)
{
	r->n = 0;
	raw_u8(r, 'T');
	raw_u8(r, 'V');
	raw_u8(r, 2); /* the version docs/wire-format.md describes */
	raw_u8(r, type);
	raw_le(r, flags, 2);
	raw_le(r, 0, 2);
	raw_le(r, 0, 4);
	raw_le(r, 0, 4);
}

static void raw_finish(struct raw *r)
{
	put_le(r->b + 8, r->n - HDR, 4);
	reseal(r->b, r->n);
}

static void raw_common(struct raw *r, uint32_t index, uint64_t step,
		       const char *name, uint16_t name_len)
{
	raw_le(r, index, 4);
	raw_le(r, step, 8);
	raw_le(r, name_len, 2);
	raw_bytes(r, name, name_len);
}

static void raw_meta(struct raw *r, uint32_t dtype, uint8_t dead,
		     uint8_t rank, uint64_t bytes, const uint64_t *dims)
{
	raw_le(r, dtype, 4);
	raw_u8(r, dead);
	raw_u8(r, rank);
	raw_le(r, bytes, 8);
	for (int i = 0; i < rank; i++)
		raw_le(r, dims[i], 8);
}

static void raw_remote(struct raw *r, uint64_t addr, uint64_t bytes,
		       uint32_t rkey)
{
	raw_le(r, addr, 8);
	raw_le(r, bytes, 8);
	raw_le(r, rkey, 4);
}

static int raw_decode(const struct raw *r)
{
	struct tv_msg m;

	return tv_wire_decode(r->b, r->n, &m);
}

/* ------------------------------------------------------------------ */
/* Messages */

static void set_name(struct tv_msg *m, const char *name)
{
	m->name_len = (uint16_t)strlen(name);
	strcpy(m->name, name);
}

static void set_float_meta(struct tv_meta *meta, int64_t d0, int64_t d1)
{
	memset(meta, 0, sizeof(*meta));
	meta->dtype = TV_DT_FLOAT;
	meta->shape.rank = 2;
	meta->shape.dims[0] = d0;
	meta->shape.dims[1] = d1;
	meta->tensor_bytes = (uint64_t)(d0 * d1 * 4);
}

static struct tv_msg *new_msg(enum tv_msg_type type)
{
	struct tv_msg *m = calloc(1, sizeof(*m));

	ck_assert_ptr_nonnull(m);
	m->type = type;
	set_name(m, "edge_1/recv:0;step");
	m->step_id = 0x0102030405060708ull;
	m->request_index = 42;
	switch (type) {
	case TV_MSG_TENSOR_REQUEST:
	case TV_MSG_TENSOR_RE_REQUEST:
		m->remote_addr = 0x7f0000001000ull;
		m->remote_bytes = 4096;
		m->rkey = 0xdeadbeef;
		m->meta_valid = 1;
		set_float_meta(&m->meta, 16, 64);
		break;
	case TV_MSG_META_DATA_UPDATE:
		m->meta_valid = 1;
		set_float_meta(&m->meta, 3, 5);
		m->has_checksum = 1;
		m->checksum = 0x1122334455667788ull;
		break;
	case TV_MSG_ERROR_STATUS:
		tv_status_set(&m->status, TV_NOT_FOUND, "no tensor %d", 7);
		strcpy(m->status.details, "details");
		break;
	default:
		break;
	}
	return m;
}

static void assert_msg_eq(const struct tv_msg *a, const struct tv_msg *b)
{
	ck_assert_int_eq(a->type, b->type);
	ck_assert_uint_eq(a->name_len, b->name_len);
	ck_assert_str_eq(a->name, b->name);
	ck_assert_uint_eq(a->step_id, b->step_id);
	ck_assert_uint_eq(a->request_index, b->request_index);
	ck_assert_uint_eq(a->remote_addr, b->remote_addr);
	ck_assert_uint_eq(a->rkey, b->rkey);
	ck_assert_uint_eq(a->remote_bytes, b->remote_bytes);
	ck_assert_uint_eq(a->meta_valid, b->meta_valid);
	ck_assert(tv_meta_equal(&a->meta, &b->meta));
	ck_assert_uint_eq(a->has_checksum, b->has_checksum);
	ck_assert_uint_eq(a->checksum, b->checksum);
	ck_assert_int_eq(a->status.code, b->status.code);
	ck_assert_str_eq(a->status.message, b->status.message);
	ck_assert_str_eq(a->status.details, b->status.details);
}

/* Encodes, decodes, compares with expect (the carried fields of m). */
static size_t round_trip(const struct tv_msg *m, const struct tv_msg *expect)
{
	uint8_t *buf = malloc(tv_wire_max_bytes());
	struct tv_msg *out = calloc(1, sizeof(*out));
	size_t len = 0;

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(tv_wire_encode(m, buf, tv_wire_max_bytes(), &len), 0);
	ck_assert_uint_ge(len, HDR);
	ck_assert_uint_le(len, tv_wire_max_bytes());
	ck_assert_int_eq(tv_wire_decode(buf, len, out), 0);
	assert_msg_eq(out, expect ? expect : m);
	free(out);
	free(buf);
	return len;
}

/* ------------------------------------------------------------------ */
/* Round trips */

START_TEST(golden_request_bytes)
{
	/* The exact bytes of a small request, from the document's tables. */
	struct tv_msg *m = new_msg(TV_MSG_TENSOR_REQUEST);
	uint64_t dims[2] = { 16, 64 };
	uint8_t buf[1024];
	struct raw r;
	size_t len;

	raw_start(&r, TV_MSG_TENSOR_REQUEST, F_META);
	raw_common(&r, 42, 0x0102030405060708ull, m->name, m->name_len);
	raw_remote(&r, 0x7f0000001000ull, 4096, 0xdeadbeef);
	raw_meta(&r, TV_DT_FLOAT, 0, 2, 4096, dims);
	raw_finish(&r);
	ck_assert_int_eq(tv_wire_encode(m, buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, r.n);
	ck_assert_int_eq(memcmp(buf, r.b, len), 0);
	/* Little-endian, spot-checked by hand. */
	ck_assert_uint_eq(buf[0], 'T');
	ck_assert_uint_eq(buf[1], 'V');
	ck_assert_uint_eq(buf[2], TV_WIRE_VERSION);
	ck_assert_uint_eq(buf[3], 2);
	ck_assert_uint_eq(buf[4], F_META);
	ck_assert_uint_eq(buf[8], len - HDR);
	ck_assert_uint_eq(buf[16], 42);
	ck_assert_uint_eq(buf[20], 0x08);
	ck_assert_uint_eq(buf[27], 0x01);
	free(m);
}
END_TEST

START_TEST(round_trip_each_type)
{
	for (int t = 0; t < TV_MSG_TYPE_COUNT; t++) {
		struct tv_msg *m = new_msg((enum tv_msg_type)t);

		round_trip(m, NULL);
		free(m);
	}
}
END_TEST

START_TEST(round_trip_request_edges)
{
	struct tv_msg *m = new_msg(TV_MSG_TENSOR_RE_REQUEST);

	/* No cached metadata: a first request. */
	m->meta_valid = 0;
	memset(&m->meta, 0, sizeof(m->meta));
	m->remote_addr = 0;
	m->remote_bytes = 0;
	m->rkey = 0;
	round_trip(m, NULL);
	/* Extremes of every integer. */
	m->type = TV_MSG_TENSOR_REQUEST;
	m->request_index = TV_IMM_MAX_REQUEST;
	m->step_id = UINT64_MAX;
	m->rkey = UINT32_MAX;
	m->remote_addr = UINT64_MAX - 10;
	m->remote_bytes = 10; /* ends exactly at the top */
	round_trip(m, NULL);
	m->remote_addr = 0;
	m->remote_bytes = UINT64_MAX;
	m->request_index = 0;
	m->step_id = 0;
	round_trip(m, NULL);
	free(m);
}
END_TEST

START_TEST(round_trip_meta_edges)
{
	struct tv_msg *m = new_msg(TV_MSG_META_DATA_UPDATE);
	int i;

	/* Max rank with a large but fitting product, as uint8. */
	m->meta.dtype = TV_DT_UINT8;
	m->meta.shape.rank = TV_MAX_RANK;
	for (i = 0; i < TV_MAX_RANK; i++)
		m->meta.shape.dims[i] = i < 31 ? 1 : INT64_MAX;
	m->meta.tensor_bytes = INT64_MAX;
	round_trip(m, NULL);
	/* Zero-size dims among huge ones: zero bytes. */
	m->meta.dtype = TV_DT_DOUBLE;
	m->meta.shape.dims[0] = 0;
	m->meta.shape.dims[31] = INT64_MAX;
	m->meta.tensor_bytes = 0;
	round_trip(m, NULL);
	/* Dead DMA-able tensor with a shape, and checksum 0 but present. */
	set_float_meta(&m->meta, 2, 2);
	m->meta.is_dead = true;
	m->meta.tensor_bytes = 0;
	m->checksum = 0;
	round_trip(m, NULL);
	/* Strings: any size up to the bound; checksum absent. */
	m->meta.is_dead = false;
	m->meta.dtype = TV_DT_STRING;
	m->meta.tensor_bytes = TV_SERIALIZED_BYTES_MAX;
	m->has_checksum = 0;
	round_trip(m, NULL);
	/* A dead string scalar. */
	memset(&m->meta, 0, sizeof(m->meta));
	m->meta.dtype = TV_DT_STRING;
	m->meta.is_dead = true;
	round_trip(m, NULL);
	free(m);
}
END_TEST

START_TEST(round_trip_error_edges)
{
	struct tv_msg *m = new_msg(TV_MSG_ERROR_STATUS);
	size_t len;

	m->status.message[0] = '\0';
	m->status.details[0] = '\0';
	round_trip(m, NULL);
	for (int c = 1; c <= TV_CODE_MAX; c++) {
		m->status.code = (enum tv_code)c;
		round_trip(m, NULL);
	}
	/* The largest message of all. */
	memset(m->name, 'n', TV_NAME_MAX);
	m->name[TV_NAME_MAX] = '\0';
	m->name_len = TV_NAME_MAX;
	memset(m->status.message, 'm', TV_STATUS_MSG_MAX);
	m->status.message[TV_STATUS_MSG_MAX] = '\0';
	memset(m->status.details, 'd', TV_STATUS_DETAILS_MAX);
	m->status.details[TV_STATUS_DETAILS_MAX] = '\0';
	len = round_trip(m, NULL);
	ck_assert_uint_eq(len, MAX_BYTES);
	ck_assert_uint_eq(tv_wire_max_bytes(), MAX_BYTES);
	free(m);
}
END_TEST

START_TEST(max_bytes_is_upper_bound)
{
	/* The largest request and update fit too. */
	struct tv_msg *m;
	size_t len;

	for (int t = 0; t < 3; t++) {
		m = new_msg((enum tv_msg_type)t);
		memset(m->name, 'x', TV_NAME_MAX);
		m->name[TV_NAME_MAX] = '\0';
		m->name_len = TV_NAME_MAX;
		m->meta_valid = 1;
		m->meta.dtype = TV_DT_STRING;
		m->meta.shape.rank = TV_MAX_RANK;
		for (int i = 0; i < TV_MAX_RANK; i++)
			m->meta.shape.dims[i] = 1;
		m->meta.tensor_bytes = 99;
		len = round_trip(m, NULL);
		ck_assert_uint_eq(len, t == TV_MSG_META_DATA_UPDATE ?
				       16 + 14 + 512 + 270 + 8 :
				       16 + 14 + 512 + 20 + 270);
		ck_assert_uint_lt(len, tv_wire_max_bytes());
		free(m);
	}
}
END_TEST

START_TEST(uncarried_fields_decode_as_zero)
{
	struct tv_msg *m = new_msg(TV_MSG_ERROR_STATUS);
	struct tv_msg *want = new_msg(TV_MSG_ERROR_STATUS);

	/* Encoding ignores values the type does not carry... */
	m->remote_addr = 1;
	m->remote_bytes = 2;
	m->rkey = 3;
	m->checksum = 4;
	m->meta.tensor_bytes = 5;
	want->remote_addr = want->remote_bytes = 0;
	want->rkey = 0;
	round_trip(m, want);
	free(m);
	free(want);
	/* ...and so does a request without metadata or status. */
	m = new_msg(TV_MSG_TENSOR_REQUEST);
	want = new_msg(TV_MSG_TENSOR_REQUEST);
	m->meta_valid = 0;
	m->status.code = TV_ABORTED;
	strcpy(m->status.message, "ignored");
	m->checksum = 9;
	want->meta_valid = 0;
	memset(&want->meta, 0, sizeof(want->meta));
	round_trip(m, want);
	free(m);
	free(want);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Encoder: invalid input and small buffers */

static int encode_err(const struct tv_msg *m)
{
	uint8_t buf[4096];
	size_t len = 77;
	int ret = tv_wire_encode(m, buf, sizeof(buf), &len);

	ck_assert(ret == 0 || len == 77); /* len written only on success */
	return ret;
}

START_TEST(encode_rejects_invalid)
{
	struct tv_msg *m = new_msg(TV_MSG_TENSOR_REQUEST);

	ck_assert_int_eq(encode_err(NULL), -EINVAL);
	ck_assert_int_eq(encode_err(m), 0);
	m->type = TV_MSG_TYPE_COUNT;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->type = TV_MSG_TENSOR_REQUEST;
	m->name_len = 0;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->name_len = 3; /* not strlen(name) */
	ck_assert_int_eq(encode_err(m), -EINVAL);
	memset(m->name, 'a', sizeof(m->name)); /* no NUL at all */
	m->name_len = TV_NAME_MAX + 1;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->name_len = TV_NAME_MAX;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	set_name(m, "t");
	m->request_index = TV_IMM_MAX_REQUEST + 1;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->request_index = 0;
	m->meta_valid = 2;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->meta_valid = 1;
	m->meta.tensor_bytes++;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->meta.tensor_bytes--;
	m->has_checksum = 1; /* only updates carry one */
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->has_checksum = 0;
	m->remote_addr = UINT64_MAX;
	m->remote_bytes = 1;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	free(m);
}
END_TEST

START_TEST(encode_rejects_invalid_update_error)
{
	struct tv_msg *m = new_msg(TV_MSG_META_DATA_UPDATE);

	m->meta_valid = 0;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->meta_valid = 1;
	m->has_checksum = 2;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->has_checksum = 1;
	m->meta.shape.dims[0] = -3;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	free(m);

	m = new_msg(TV_MSG_ERROR_STATUS);
	m->status.code = TV_OK;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->status.code = (enum tv_code)(TV_CODE_MAX + 1);
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->status.code = TV_ABORTED;
	m->meta_valid = 1;
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->meta_valid = 0;
	memset(m->status.message, 'm', sizeof(m->status.message));
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->status.message[0] = '\0';
	memset(m->status.details, 'd', sizeof(m->status.details));
	ck_assert_int_eq(encode_err(m), -EINVAL);
	m->status.details[TV_STATUS_DETAILS_MAX] = '\0';
	ck_assert_int_eq(encode_err(m), 0);
	free(m);
}
END_TEST

START_TEST(encode_small_buffers)
{
	const size_t guard = 32;

	for (int t = 0; t < TV_MSG_TYPE_COUNT; t++) {
		struct tv_msg *m = new_msg((enum tv_msg_type)t);
		uint8_t *buf = malloc(tv_wire_max_bytes() + guard);
		size_t len = 0, cap, got, i;

		ck_assert_ptr_nonnull(buf);
		ck_assert_int_eq(tv_wire_encode(m, buf, tv_wire_max_bytes(),
						&len), 0);
		for (cap = 0; cap <= len; cap++) {
			memset(buf, 0xCC, len + guard);
			got = 12345;
			ck_assert_int_eq(tv_wire_encode(m, buf, cap, &got),
					 cap < len ? -ENOBUFS : 0);
			/* Nothing at all is written when it does not fit. */
			for (i = cap < len ? 0 : len; i < len + guard; i++)
				ck_assert_uint_eq(buf[i], 0xCC);
			ck_assert_uint_eq(got, cap < len ? 12345 : len);
		}
		ck_assert_int_eq(tv_wire_encode(m, NULL, 0, &got), -ENOBUFS);
		free(buf);
		free(m);
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* Decoder: header */

static size_t encode_new(enum tv_msg_type type, uint8_t *buf, size_t cap)
{
	struct tv_msg *m = new_msg(type);
	size_t len = 0;

	ck_assert_int_eq(tv_wire_encode(m, buf, cap, &len), 0);
	free(m);
	return len;
}

static int decode(const uint8_t *buf, size_t len)
{
	struct tv_msg *m = calloc(1, sizeof(*m));
	int ret;

	ck_assert_ptr_nonnull(m);
	m->step_id = 0xABAB;
	ret = tv_wire_decode(buf, len, m);
	if (ret)
		ck_assert_uint_eq(m->step_id, 0xABAB); /* untouched */
	free(m);
	return ret;
}

START_TEST(decode_rejects_bad_identity)
{
	uint8_t buf[4096];
	size_t len = encode_new(TV_MSG_TENSOR_REQUEST, buf, sizeof(buf));

	ck_assert_int_eq(decode(buf, len), 0);
	buf[0] = 'X';
	reseal(buf, len);
	ck_assert_int_eq(decode(buf, len), -EPROTO);
	buf[0] = 'T';
	buf[1] = 'v';
	reseal(buf, len);
	ck_assert_int_eq(decode(buf, len), -EPROTO);
	buf[1] = 'V';
	buf[2] = 0;
	reseal(buf, len);
	ck_assert_int_eq(decode(buf, len), -EPROTO);
	buf[2] = TV_WIRE_VERSION + 1;
	reseal(buf, len);
	ck_assert_int_eq(decode(buf, len), -EPROTO);
	/* A wrong magic is told even before the checksum is checked. */
	buf[2] = TV_WIRE_VERSION;
	buf[0] = 0;
	ck_assert_int_eq(decode(buf, len), -EPROTO);
	ck_assert_int_eq(tv_wire_decode(NULL, len, NULL), -EINVAL);
}
END_TEST

START_TEST(decode_rejects_bad_type_flags_reserved)
{
	uint8_t buf[4096];
	size_t len = encode_new(TV_MSG_TENSOR_REQUEST, buf, sizeof(buf));
	struct raw r;

	for (int type = TV_MSG_TYPE_COUNT; type < 256; type += 7) {
		buf[3] = (uint8_t)type;
		reseal(buf, len);
		ck_assert_int_eq(decode(buf, len), -EBADMSG);
	}
	buf[3] = TV_MSG_TENSOR_REQUEST;
	for (int bit = 1; bit < 16; bit++) { /* F_META is bit 0 */
		put_le(buf + 4, F_META | 1u << bit, 2);
		reseal(buf, len);
		ck_assert_int_eq(decode(buf, len), -EBADMSG);
	}
	put_le(buf + 4, F_META, 2);
	for (int bit = 0; bit < 16; bit++) {
		put_le(buf + 6, 1u << bit, 2);
		reseal(buf, len);
		ck_assert_int_eq(decode(buf, len), -EBADMSG);
	}
	put_le(buf + 6, 0, 2);
	reseal(buf, len);
	ck_assert_int_eq(decode(buf, len), 0);

	/* An error status with the metadata flag. */
	raw_start(&r, TV_MSG_ERROR_STATUS, F_META);
	raw_common(&r, 1, 1, "n", 1);
	raw_le(&r, TV_ABORTED, 4);
	raw_le(&r, 0, 2);
	raw_le(&r, 0, 2);
	raw_finish(&r);
	ck_assert_int_eq(raw_decode(&r), -EBADMSG);
	put_le(r.b + 4, 0, 2);
	reseal(r.b, r.n);
	ck_assert_int_eq(raw_decode(&r), 0);
}
END_TEST

START_TEST(decode_rejects_bad_lengths)
{
	uint8_t buf[8192];
	size_t len = encode_new(TV_MSG_META_DATA_UPDATE, buf, sizeof(buf));
	uint32_t blen = (uint32_t)(len - HDR);

	/* body_len one off either way for the bytes given. */
	put_le(buf + 8, blen + 1, 4);
	reseal(buf, len);
	ck_assert_int_eq(decode(buf, len), -EBADMSG);
	put_le(buf + 8, blen - 1, 4);
	reseal(buf, len);
	ck_assert_int_eq(decode(buf, len), -EBADMSG);
	/* Longer than any message can be. */
	put_le(buf + 8, UINT32_MAX, 4);
	ck_assert_int_eq(decode(buf, len), -EMSGSIZE);
	put_le(buf + 8, (uint32_t)(MAX_BYTES - HDR + 1), 4);
	ck_assert_int_eq(decode(buf, len), -EMSGSIZE);
	/* Trailing garbage after a complete message... */
	put_le(buf + 8, blen, 4);
	reseal(buf, len);
	buf[len] = 0;
	ck_assert_int_eq(decode(buf, len + 1), -EBADMSG);
	/* ...even when body_len and checksum cover it. */
	put_le(buf + 8, blen + 1, 4);
	reseal(buf, len + 1);
	ck_assert_int_eq(decode(buf, len + 1), -EBADMSG);
	/* The engine must pass the write's length, not the buffer size. */
	put_le(buf + 8, blen, 4);
	reseal(buf, len);
	ck_assert_int_eq(decode(buf, len), 0);
	ck_assert_int_eq(decode(buf, MAX_BYTES), -EBADMSG);
}
END_TEST

START_TEST(decode_rejects_checksum_mismatch)
{
	uint8_t buf[4096];
	size_t len = encode_new(TV_MSG_ERROR_STATUS, buf, sizeof(buf));

	buf[12] ^= 1;
	ck_assert_int_eq(decode(buf, len), -EBADMSG);
	buf[12] ^= 1;
	buf[len - 1] ^= 0x20; /* 's' of details -> 'S': valid but torn */
	ck_assert_int_eq(decode(buf, len), -EBADMSG);
	reseal(buf, len);
	ck_assert_int_eq(decode(buf, len), 0);
	buf[3] = TV_MSG_TENSOR_REQUEST; /* header bytes are covered too */
	ck_assert_int_eq(decode(buf, len), -EBADMSG);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Decoder: fields */

static int decode_request_name(const char *name, uint16_t name_len,
			       uint32_t index)
{
	struct raw r;

	raw_start(&r, TV_MSG_TENSOR_RE_REQUEST, 0);
	raw_common(&r, index, 5, name, name_len);
	raw_remote(&r, 0x1000, 8, 1);
	raw_finish(&r);
	return raw_decode(&r);
}

START_TEST(decode_rejects_bad_name_index)
{
	char name[TV_NAME_MAX + 2];

	memset(name, 'q', sizeof(name));
	ck_assert_int_eq(decode_request_name(name, 1, 0), 0);
	ck_assert_int_eq(decode_request_name(name, TV_NAME_MAX, 0), 0);
	ck_assert_int_eq(decode_request_name(name, 0, 0), -EBADMSG);
	ck_assert_int_eq(decode_request_name(name, TV_NAME_MAX + 1, 0),
			 -EBADMSG);
	name[7] = '\0';
	ck_assert_int_eq(decode_request_name(name, 20, 0), -EBADMSG);
	ck_assert_int_eq(decode_request_name(name, 8, 0), -EBADMSG);
	ck_assert_int_eq(decode_request_name(name, 7, 0), 0);
	ck_assert_int_eq(decode_request_name("n", 1, TV_IMM_MAX_REQUEST), 0);
	ck_assert_int_eq(decode_request_name("n", 1, TV_IMM_MAX_REQUEST + 1),
			 -EBADMSG);
	ck_assert_int_eq(decode_request_name("n", 1, UINT32_MAX), -EBADMSG);
}
END_TEST

START_TEST(decode_rejects_bad_remote)
{
	struct raw r;

	raw_start(&r, TV_MSG_TENSOR_REQUEST, 0);
	raw_common(&r, 1, 2, "t", 1);
	raw_remote(&r, UINT64_MAX - 8, 8, 1); /* end == UINT64_MAX */
	raw_finish(&r);
	ck_assert_int_eq(raw_decode(&r), 0);
	put_le(r.b + HDR + 15 + 8, 9, 8); /* remote_bytes */
	reseal(r.b, r.n);
	ck_assert_int_eq(raw_decode(&r), -EBADMSG);
	put_le(r.b + HDR + 15, 2, 8); /* remote_addr */
	put_le(r.b + HDR + 15 + 8, UINT64_MAX, 8);
	reseal(r.b, r.n);
	ck_assert_int_eq(raw_decode(&r), -EBADMSG);
}
END_TEST

/* An update carrying exactly this metadata (rank dims from dims). */
static int decode_meta(uint32_t dtype, uint8_t dead, uint8_t rank,
		       uint64_t bytes, const uint64_t *dims)
{
	struct raw r;

	raw_start(&r, TV_MSG_META_DATA_UPDATE, 0);
	raw_common(&r, 3, 4, "m", 1);
	raw_meta(&r, dtype, dead, rank, bytes, dims);
	raw_finish(&r);
	return raw_decode(&r);
}

START_TEST(decode_rejects_bad_meta)
{
	uint64_t dims[TV_MAX_RANK + 1];
	const uint64_t two63 = UINT64_C(1) << 63;

	for (int i = 0; i <= TV_MAX_RANK; i++)
		dims[i] = 1;
	dims[0] = 6;
	ck_assert_int_eq(decode_meta(TV_DT_INT16, 0, 1, 12, dims), 0);
	/* Unknown dtypes, including the holes of the enum. */
	ck_assert_int_eq(decode_meta(0, 0, 1, 12, dims), -EBADMSG);
	ck_assert_int_eq(decode_meta(8, 0, 1, 12, dims), -EBADMSG);
	ck_assert_int_eq(decode_meta(24, 0, 1, 12, dims), -EBADMSG);
	ck_assert_int_eq(decode_meta(UINT32_MAX, 0, 1, 12, dims), -EBADMSG);
	/* is_dead is a boolean byte. */
	ck_assert_int_eq(decode_meta(TV_DT_INT16, 2, 1, 12, dims), -EBADMSG);
	/* Rank. */
	ck_assert_int_eq(decode_meta(TV_DT_INT16, 0, TV_MAX_RANK, 12, dims),
			 0);
	ck_assert_int_eq(decode_meta(TV_DT_INT16, 0, TV_MAX_RANK + 1, 12,
				     dims), -EBADMSG);
	/* Dims: negative as int64, and products that overflow. */
	dims[1] = two63;
	ck_assert_int_eq(decode_meta(TV_DT_INT8, 0, 2, 0, dims), -EBADMSG);
	dims[1] = UINT64_MAX;
	ck_assert_int_eq(decode_meta(TV_DT_INT8, 0, 2, 0, dims), -EBADMSG);
	dims[0] = two63 - 1;
	dims[1] = 1;
	ck_assert_int_eq(decode_meta(TV_DT_INT8, 0, 2, two63 - 1, dims), 0);
	dims[1] = 2;
	ck_assert_int_eq(decode_meta(TV_DT_INT8, 0, 2, 0, dims), -EBADMSG);
	dims[2] = 0; /* a zero does not excuse the overflow */
	ck_assert_int_eq(decode_meta(TV_DT_INT8, 0, 3, 0, dims), -EBADMSG);
	/* Elements fit, bytes do not. */
	dims[0] = two63 - 1;
	ck_assert_int_eq(decode_meta(TV_DT_INT64, 0, 1, UINT64_MAX - 7, dims),
			 -EBADMSG);
}
END_TEST

START_TEST(decode_rejects_bad_tensor_bytes)
{
	uint64_t dims[2] = { 3, 5 };
	const uint64_t smax = TV_SERIALIZED_BYTES_MAX;

	ck_assert_int_eq(decode_meta(TV_DT_DOUBLE, 0, 2, 120, dims), 0);
	ck_assert_int_eq(decode_meta(TV_DT_DOUBLE, 0, 2, 119, dims), -EBADMSG);
	ck_assert_int_eq(decode_meta(TV_DT_DOUBLE, 0, 2, 121, dims), -EBADMSG);
	ck_assert_int_eq(decode_meta(TV_DT_DOUBLE, 0, 2, 0, dims), -EBADMSG);
	/* Dead: no bytes whatever the shape. */
	ck_assert_int_eq(decode_meta(TV_DT_DOUBLE, 1, 2, 0, dims), 0);
	ck_assert_int_eq(decode_meta(TV_DT_DOUBLE, 1, 2, 120, dims), -EBADMSG);
	ck_assert_int_eq(decode_meta(TV_DT_STRING, 1, 2, 1, dims), -EBADMSG);
	/* Strings: bounded only. */
	ck_assert_int_eq(decode_meta(TV_DT_STRING, 0, 2, 7, dims), 0);
	ck_assert_int_eq(decode_meta(TV_DT_STRING, 0, 2, smax, dims), 0);
	ck_assert_int_eq(decode_meta(TV_DT_STRING, 0, 2, smax + 1, dims),
			 -EBADMSG);
}
END_TEST

static int decode_error(uint32_t code, const char *msg, uint16_t mlen,
			const char *det, uint16_t dlen)
{
	struct raw r;

	raw_start(&r, TV_MSG_ERROR_STATUS, 0);
	raw_common(&r, 9, 9, "e", 1);
	raw_le(&r, code, 4);
	raw_le(&r, mlen, 2);
	raw_bytes(&r, msg, mlen);
	raw_le(&r, dlen, 2);
	raw_bytes(&r, det, dlen);
	raw_finish(&r);
	return raw_decode(&r);
}

START_TEST(decode_rejects_bad_status)
{
	char text[TV_STATUS_MSG_MAX + 2];
	const uint16_t big = TV_STATUS_MSG_MAX;

	memset(text, 't', sizeof(text));
	ck_assert_int_eq(decode_error(TV_INTERNAL, text, 3, text, 2), 0);
	ck_assert_int_eq(decode_error(TV_OK, text, 3, text, 2), -EBADMSG);
	ck_assert_int_eq(decode_error(TV_CODE_MAX + 1, text, 3, text, 2),
			 -EBADMSG);
	ck_assert_int_eq(decode_error(UINT32_MAX, text, 3, text, 2), -EBADMSG);
	ck_assert_int_eq(decode_error(TV_CODE_MAX, text, big, text, big), 0);
	ck_assert_int_eq(decode_error(TV_ABORTED, text, big + 1, text, 0),
			 -EBADMSG);
	ck_assert_int_eq(decode_error(TV_ABORTED, text, 0, text, big + 1),
			 -EBADMSG);
	text[1] = '\0';
	ck_assert_int_eq(decode_error(TV_ABORTED, text, 3, "d", 1), -EBADMSG);
	ck_assert_int_eq(decode_error(TV_ABORTED, "m", 1, text, 3), -EBADMSG);
	ck_assert_int_eq(decode_error(TV_ABORTED, "m", 1, text, 1), 0);
}
END_TEST

START_TEST(decode_rejects_missing_and_extra_parts)
{
	uint64_t dims[1] = { 2 };
	struct raw r;

	/* FLAG_META without the metadata. */
	raw_start(&r, TV_MSG_TENSOR_REQUEST, F_META);
	raw_common(&r, 1, 1, "t", 1);
	raw_remote(&r, 0, 0, 0);
	raw_finish(&r);
	ck_assert_int_eq(raw_decode(&r), -EBADMSG);
	/* Metadata without FLAG_META. */
	raw_start(&r, TV_MSG_TENSOR_REQUEST, 0);
	raw_common(&r, 1, 1, "t", 1);
	raw_remote(&r, 0, 0, 0);
	raw_meta(&r, TV_DT_FLOAT, 0, 1, 8, dims);
	raw_finish(&r);
	ck_assert_int_eq(raw_decode(&r), -EBADMSG);
	/* A checksum without FLAG_CHECKSUM, and the flag without one. */
	raw_start(&r, TV_MSG_META_DATA_UPDATE, 0);
	raw_common(&r, 1, 1, "t", 1);
	raw_meta(&r, TV_DT_FLOAT, 0, 1, 8, dims);
	raw_finish(&r);
	ck_assert_int_eq(raw_decode(&r), 0);
	put_le(r.b + 4, F_SUM, 2);
	reseal(r.b, r.n);
	ck_assert_int_eq(raw_decode(&r), -EBADMSG);
	put_le(r.b + 4, 0, 2);
	raw_le(&r, 1234, 8);
	raw_finish(&r);
	ck_assert_int_eq(raw_decode(&r), -EBADMSG);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Decoder: every truncation, every byte flip */

/* The messages these tests damage: every type, every optional part. */
static size_t sample(int i, uint8_t *buf, size_t cap)
{
	struct tv_msg *m = new_msg((enum tv_msg_type)(i % 4));
	size_t len = 0;

	if (i >= 4) {
		m->meta_valid = m->type == TV_MSG_META_DATA_UPDATE;
		m->has_checksum = 0;
		m->meta.is_dead = true;
		m->meta.tensor_bytes = 0;
		memset(m->status.message, 'M', TV_STATUS_MSG_MAX);
		m->status.message[TV_STATUS_MSG_MAX] = '\0';
	}
	ck_assert_int_eq(tv_wire_encode(m, buf, cap, &len), 0);
	free(m);
	return len;
}

#define N_SAMPLES 8

START_TEST(decode_rejects_every_truncation)
{
	uint8_t *buf = malloc(tv_wire_max_bytes());
	size_t len, cut;

	ck_assert_ptr_nonnull(buf);
	for (int s = 0; s < N_SAMPLES; s++) {
		len = sample(s, buf, tv_wire_max_bytes());
		for (cut = 0; cut < len; cut++)
			ck_assert_int_ne(decode(buf, cut), 0);
		/* With a header that agrees: the body parser must notice. */
		for (cut = HDR; cut < len; cut++) {
			len = sample(s, buf, tv_wire_max_bytes());
			put_le(buf + 8, cut - HDR, 4);
			reseal(buf, cut);
			ck_assert_int_eq(decode(buf, cut), -EBADMSG);
		}
	}
	free(buf);
}
END_TEST

/* A message the decoder accepted must re-encode to the same bytes. */
static void check_accepted(const uint8_t *buf, size_t len)
{
	struct tv_msg *m = calloc(1, sizeof(*m));
	uint8_t *again = malloc(tv_wire_max_bytes());
	size_t len2 = 0;

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(again);
	if (tv_wire_decode(buf, len, m) == 0) {
		ck_assert_int_eq(tv_meta_validate(&m->meta),
				 m->meta_valid ? 0 : -EINVAL);
		ck_assert_uint_eq(strlen(m->name), m->name_len);
		ck_assert_int_eq(tv_wire_encode(m, again, tv_wire_max_bytes(),
						&len2), 0);
		ck_assert_uint_eq(len2, len);
		ck_assert_int_eq(memcmp(buf, again, len), 0);
	}
	free(again);
	free(m);
}

START_TEST(decode_survives_every_byte_flip)
{
	static const uint8_t masks[] = { 0x01, 0x10, 0x80, 0xFF };
	uint8_t *buf = malloc(tv_wire_max_bytes());
	size_t len, pos;
	unsigned int accepted = 0, k;

	ck_assert_ptr_nonnull(buf);
	for (int s = 0; s < N_SAMPLES; s++) {
		len = sample(s, buf, tv_wire_max_bytes());
		for (pos = 0; pos < len; pos++) {
			for (k = 0; k < sizeof(masks); k++) {
				buf[pos] ^= masks[k];
				/* The checksum catches every raw flip... */
				ck_assert_int_ne(decode(buf, len), 0);
				/* ...and the parser copes once resealed. */
				if (pos < 12 || pos >= HDR)
					reseal(buf, len);
				check_accepted(buf, len);
				accepted += decode(buf, len) == 0;
				buf[pos] ^= masks[k];
				reseal(buf, len);
			}
		}
	}
	/* Flips in ids and text are harmless: some must be accepted. */
	ck_assert_uint_gt(accepted, 0);
	free(buf);
}
END_TEST

START_TEST(decode_survives_random_damage)
{
	uint8_t *buf = malloc(tv_wire_max_bytes());
	uint64_t x = 0x9E3779B97F4A7C15ull; /* fixed seed: reproducible */
	size_t len;

	ck_assert_ptr_nonnull(buf);
	for (int iter = 0; iter < 20000; iter++) {
		len = sample(iter % N_SAMPLES, buf, tv_wire_max_bytes());
		for (int k = 0; k < 1 + iter % 5; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[HDR + (x >> 8) % (len - HDR)] = (uint8_t)x;
		}
		reseal(buf, len);
		check_accepted(buf, len);
	}
	free(buf);
}
END_TEST

/*
 * The engine's fast paths (tv__wire_encode_built, tv__wire_decode_scratch)
 * give the bytes and messages of the public codec, and the scratch decode
 * clears what the type does not carry even over a dirty scratch.
 */
START_TEST(engine_paths_match_public_codec)
{
	uint8_t *a = malloc(tv_wire_max_bytes()), *b = malloc(tv_wire_max_bytes());
	struct tv_msg *out = calloc(1, sizeof(*out));
	size_t la, lb;

	ck_assert(a && b && out);
	for (int t = 0; t < TV_MSG_TYPE_COUNT; t++) {
		struct tv_msg *m = new_msg((enum tv_msg_type)t);

		ck_assert_int_eq(tv_wire_encode(m, a, tv_wire_max_bytes(), &la), 0);
		ck_assert_int_eq(tv__wire_encode_built(m, b, tv_wire_max_bytes(),
						       &lb), 0);
		ck_assert_uint_eq(la, lb);
		ck_assert_int_eq(memcmp(a, b, la), 0);
		/* Dirty scratch: every field of another type set. */
		free(out);
		out = new_msg((enum tv_msg_type)((t + 1) % TV_MSG_TYPE_COUNT));
		out->has_checksum = 1;
		out->checksum = 99;
		out->remote_addr = 7;
		ck_assert_int_eq(tv__wire_decode_scratch(a, la, out), 0);
		assert_msg_eq(out, m);
		/* A flipped byte fails both decoders alike. */
		a[HDR + 1] ^= 0x40;
		ck_assert_int_eq(tv__wire_decode_scratch(a, la, out),
				 tv_wire_decode(a, la, m));
		ck_assert_int_ne(tv__wire_decode_scratch(a, la, out), 0);
		free(m);
	}
	free(out);
	free(b);
	free(a);
}
END_TEST

/*
 * The engine encodes its requests from a view (tv__wire_encode_req): the
 * public encoder's bytes, with and without metadata, and from a name
 * that is not NUL-terminated.
 */
START_TEST(engine_request_view_matches_public_codec)
{
	uint8_t *a = malloc(tv_wire_max_bytes()), *b = malloc(tv_wire_max_bytes());
	static const enum tv_msg_type types[] = { TV_MSG_TENSOR_REQUEST,
						  TV_MSG_TENSOR_RE_REQUEST };
	char name[64];
	size_t la, lb;

	ck_assert(a && b);
	for (int t = 0; t < 2; t++) {
		for (int with_meta = 0; with_meta < 2; with_meta++) {
			struct tv_msg *m = new_msg(types[t]);
			struct tv__wire_req r;

			if (!with_meta) {
				m->meta_valid = 0;
				memset(&m->meta, 0, sizeof(m->meta));
			}
			memset(name, 'x', sizeof(name));
			memcpy(name, m->name, m->name_len); /* no NUL after it */
			r = (struct tv__wire_req){
				.type = m->type,
				.request_index = m->request_index,
				.step_id = m->step_id,
				.name = name,
				.name_len = m->name_len,
				.remote_addr = m->remote_addr,
				.rkey = m->rkey,
				.remote_bytes = m->remote_bytes,
				.meta = m->meta_valid ? &m->meta : NULL,
			};
			ck_assert_int_eq(tv_wire_encode(m, a, tv_wire_max_bytes(),
							&la), 0);
			ck_assert_int_eq(tv__wire_encode_req(&r, b,
							     tv_wire_max_bytes(),
							     &lb), 0);
			ck_assert_uint_eq(la, lb);
			ck_assert_int_eq(memcmp(a, b, la), 0);
			/* One byte short: -ENOBUFS. */
			ck_assert_int_eq(tv__wire_encode_req(&r, b, lb - 1, &lb),
					 -ENOBUFS);
			free(m);
		}
	}
	free(b);
	free(a);
}
END_TEST

/*
 * The publisher's early answer reads a request in place
 * (tv__wire_peek_request): the fields of the public codec's request, not
 * a message of another kind or without metadata, and the decoder's answer
 * (peek_oracle.h) on every byte flip, resealed, of requests with several
 * shapes, and on every truncation.
 */
START_TEST(peek_request_matches_decoder)
{
	static const uint64_t dims[] = { 3, 0, 7 };
	uint8_t *buf = malloc(tv_wire_max_bytes());
	struct tv_msg *m = new_msg(TV_MSG_TENSOR_REQUEST);
	struct tv__wire_req_view v;
	unsigned int peeked = 0;
	size_t len, pos;
	const char *why;

	ck_assert(buf && m);
	ck_assert_int_eq(tv_wire_encode(m, buf, tv_wire_max_bytes(), &len), 0);
	ck_assert(tv__wire_peek_request(buf, len, &v));
	ck_assert_uint_eq(v.request_index, m->request_index);
	ck_assert_uint_eq(v.step_id, m->step_id);
	ck_assert_uint_eq(v.name_len, m->name_len);
	ck_assert_int_eq(memcmp(v.name, m->name, m->name_len), 0);
	ck_assert_uint_eq(v.remote_addr, m->remote_addr);
	ck_assert_uint_eq(v.remote_bytes, m->remote_bytes);
	ck_assert_uint_eq(v.rkey, m->rkey);
	ck_assert_uint_eq(v.dtype, TV_DT_FLOAT);
	ck_assert_uint_eq(v.rank, 2);
	ck_assert_uint_eq(tv__wire_view_dim(&v, 1), 64);
	ck_assert_uint_eq(v.tensor_bytes, m->meta.tensor_bytes);
	for (int s = 0; s < N_SAMPLES; s++) {
		len = sample(s, buf, tv_wire_max_bytes());
		/* Only one sample is a TENSOR_REQUEST with metadata. */
		ck_assert(tv__wire_peek_request(buf, len, &v) ==
			  (s == TV_MSG_TENSOR_REQUEST));
		for (pos = 0; pos < len * 2; pos++) {
			/* 0x80 reaches the sign bits, 0x21 the small values. */
			uint8_t mask = pos % 2 ? 0x80 : 0x21;

			buf[pos / 2] ^= mask;
			if (pos / 2 < 12 || pos / 2 >= HDR)
				reseal(buf, len);
			why = peek_vs_decode(buf, len);
			ck_assert_msg(!why, "sample %d flip %#x at %zu: %s", s,
				      mask, pos / 2, why);
			peeked += tv__wire_peek_request(buf, len, &v);
			buf[pos / 2] ^= mask;
			reseal(buf, len);
		}
		for (pos = 0; pos < len; pos++)
			ck_assert_ptr_null(peek_vs_decode(buf, pos));
	}
	/* Rank 3 with a zero dim; a dim past INT64_MAX; a NUL in the name. */
	m->meta.shape.rank = 3;
	for (int i = 0; i < 3; i++)
		m->meta.shape.dims[i] = (int64_t)dims[i];
	m->meta.tensor_bytes = 0;
	ck_assert_int_eq(tv_wire_encode(m, buf, tv_wire_max_bytes(), &len), 0);
	ck_assert_ptr_null(peek_vs_decode(buf, len));
	ck_assert(tv__wire_peek_request(buf, len, &v) && v.rank == 3);
	put_le(buf + len - 8, UINT64_MAX, 8);
	reseal(buf, len);
	ck_assert(tv__wire_peek_request(buf, len, &v));
	ck_assert_int_ne(decode(buf, len), 0);
	ck_assert_ptr_null(peek_vs_decode(buf, len));
	buf[HDR + 4 + 8 + 2 + 1] = '\0';
	reseal(buf, len);
	ck_assert(tv__wire_peek_request(buf, len, &v));
	ck_assert_ptr_null(peek_vs_decode(buf, len));
	/* Flips that keep a request a request: the peek must have read some. */
	ck_assert_uint_gt(peeked, 0);
	free(m);
	free(buf);
}
END_TEST

START_TEST(msg_type_names)
{
	ck_assert_str_eq(tv_msg_type_name(TV_MSG_META_DATA_UPDATE),
			 "META_DATA_UPDATE");
	ck_assert_str_eq(tv_msg_type_name(TV_MSG_TENSOR_RE_REQUEST),
			 "TENSOR_RE_REQUEST");
	ck_assert_str_eq(tv_msg_type_name(TV_MSG_TENSOR_REQUEST),
			 "TENSOR_REQUEST");
	ck_assert_str_eq(tv_msg_type_name(TV_MSG_ERROR_STATUS),
			 "ERROR_STATUS");
	ck_assert_str_eq(tv_msg_type_name(TV_MSG_TYPE_COUNT), "INVALID");
}
END_TEST

Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *rt = tcase_create("round_trip");
	TCase *enc = tcase_create("encode");
	TCase *dec = tcase_create("decode");

	tcase_add_test(rt, golden_request_bytes);
	tcase_add_test(rt, round_trip_each_type);
	tcase_add_test(rt, round_trip_request_edges);
	tcase_add_test(rt, round_trip_meta_edges);
	tcase_add_test(rt, round_trip_error_edges);
	tcase_add_test(rt, max_bytes_is_upper_bound);
	tcase_add_test(rt, uncarried_fields_decode_as_zero);
	tcase_add_test(rt, msg_type_names);
	tcase_add_test(rt, engine_paths_match_public_codec);
	tcase_add_test(rt, engine_request_view_matches_public_codec);
	tcase_add_test(rt, peek_request_matches_decoder);
	tcase_add_test(enc, encode_rejects_invalid);
	tcase_add_test(enc, encode_rejects_invalid_update_error);
	tcase_add_test(enc, encode_small_buffers);
	tcase_add_test(dec, decode_rejects_bad_identity);
	tcase_add_test(dec, decode_rejects_bad_type_flags_reserved);
	tcase_add_test(dec, decode_rejects_bad_lengths);
	tcase_add_test(dec, decode_rejects_checksum_mismatch);
	tcase_add_test(dec, decode_rejects_bad_name_index);
	tcase_add_test(dec, decode_rejects_bad_remote);
	tcase_add_test(dec, decode_rejects_bad_meta);
	tcase_add_test(dec, decode_rejects_bad_tensor_bytes);
	tcase_add_test(dec, decode_rejects_bad_status);
	tcase_add_test(dec, decode_rejects_missing_and_extra_parts);
	tcase_add_test(dec, decode_rejects_every_truncation);
	tcase_add_test(dec, decode_survives_every_byte_flip);
	tcase_add_test(dec, decode_survives_random_damage);
	tcase_set_timeout(dec, 120);
	suite_add_tcase(s, rt);
	suite_add_tcase(s, enc);
	suite_add_tcase(s, dec);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(wire_suite());
	int failed;

	srunner_add_suite(sr, types_suite());
	srunner_add_suite(sr, serialize_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
