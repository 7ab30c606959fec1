/* String tensors as TensorProto bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "serialize.h"
#include "suites.h"
#include "tensor.pb-c.h"

static struct tv_shape shape1(int64_t d0)
{
	struct tv_shape s = { .rank = 1 };

	s.dims[0] = d0;
	return s;
}

/* Packs, unpacks with and without an expected shape, compares. */
static void round_trip(const struct tv_shape *shape, const struct tv_str *in,
		       uint64_t count)
{
	struct tv_shape got = { 0 };
	struct tv_str *out = NULL;
	uint64_t n = 12345, i;
	size_t size = 0, len = 0;
	uint8_t *buf;

	ck_assert_int_eq(tv_proto_packed_size(shape, in, count, &size), 0);
	ck_assert_uint_gt(size, 0); /* dtype is always there */
	buf = malloc(size + 1);
	ck_assert_ptr_nonnull(buf);
	buf[size] = 0xA5;
	ck_assert_int_eq(tv_proto_pack(shape, in, count, buf, size, &len), 0);
	ck_assert_uint_eq(len, size);
	ck_assert_uint_eq(buf[size], 0xA5);

	ck_assert_int_eq(tv_proto_unpack(buf, len, shape, &got, &out, &n), 0);
	ck_assert_uint_eq(n, count);
	ck_assert(tv_shape_equal(&got, shape));
	for (i = 0; i < count; i++) {
		ck_assert_ptr_nonnull(out[i].ptr);
		ck_assert_uint_eq(out[i].len, in[i].len);
		if (in[i].len)
			ck_assert_int_eq(memcmp(out[i].ptr, in[i].ptr,
						in[i].len), 0);
	}
	if (count == 0)
		ck_assert_ptr_null(out);
	tv_proto_free_items(out, n);

	ck_assert_int_eq(tv_proto_unpack(buf, len, NULL, &got, &out, &n), 0);
	ck_assert_uint_eq(n, count);
	tv_proto_free_items(out, n);
	free(buf);
}

START_TEST(round_trip_small)
{
	char a[] = "hello", b[] = "", c[] = { 'x', '\0', 'y', '\0' };
	struct tv_str items[3] = {
		{ a, 5 }, { b, 0 }, { c, sizeof(c) },
	};
	struct tv_shape s = shape1(3);

	round_trip(&s, items, 3);
}
END_TEST

START_TEST(round_trip_shapes)
{
	char bytes[256];
	struct tv_str items[6];
	struct tv_shape s = { .rank = 2, .dims = { 2, 3 } };
	struct tv_shape scalar = { 0 };
	struct tv_shape empty = { .rank = 3, .dims = { 4, 0, 9 } };
	int i;

	for (i = 0; i < 256; i++)
		bytes[i] = (char)i;
	for (i = 0; i < 6; i++) {
		items[i].ptr = bytes + i;
		items[i].len = (size_t)(250 - 40 * i);
	}
	round_trip(&s, items, 6);
	round_trip(&scalar, items, 1);
	round_trip(&empty, NULL, 0);
}
END_TEST

START_TEST(round_trip_empty_strings_and_max_rank)
{
	struct tv_str items[4];
	struct tv_shape s = { .rank = TV_MAX_RANK };
	int i;

	for (i = 0; i < TV_MAX_RANK; i++)
		s.dims[i] = 1;
	s.dims[3] = 4;
	for (i = 0; i < 4; i++) {
		items[i].ptr = NULL; /* empty strings may have no bytes */
		items[i].len = 0;
	}
	round_trip(&s, items, 4);
}
END_TEST

START_TEST(round_trip_large)
{
	const uint64_t count = 1000;
	const size_t big = 1 << 20;
	struct tv_str *items = calloc(count, sizeof(*items));
	struct tv_shape s = { .rank = 2, .dims = { 10, 100 } };
	uint8_t *blob = malloc(big);
	uint64_t i;

	ck_assert_ptr_nonnull(items);
	ck_assert_ptr_nonnull(blob);
	for (i = 0; i < big; i++)
		blob[i] = (uint8_t)(i * 2654435761u >> 13);
	for (i = 0; i < count; i++) {
		items[i].ptr = blob + i * 7;
		items[i].len = (size_t)(i * 31 % 2000);
	}
	items[count - 1].ptr = blob;
	items[count - 1].len = big; /* one string of a MiB */
	round_trip(&s, items, count);
	free(blob);
	free(items);
}
END_TEST

START_TEST(pack_rejects)
{
	char a[] = "a";
	struct tv_str items[2] = { { a, 1 }, { a, 1 } };
	struct tv_shape s = shape1(2), bad = shape1(-1);
	uint8_t buf[64];
	size_t size = 0, len = 99;

	ck_assert_int_eq(tv_proto_packed_size(&s, items, 3, &size), -EINVAL);
	ck_assert_int_eq(tv_proto_packed_size(&s, items, 1, &size), -EINVAL);
	ck_assert_int_eq(tv_proto_packed_size(&bad, items, 0, &size), -EINVAL);
	ck_assert_int_eq(tv_proto_packed_size(&s, NULL, 2, &size), -EINVAL);
	ck_assert_uint_eq(size, 0);

	ck_assert_int_eq(tv_proto_packed_size(&s, items, 2, &size), 0);
	memset(buf, 0xEE, sizeof(buf));
	ck_assert_int_eq(tv_proto_pack(&s, items, 2, buf, size - 1, &len),
			 -ENOBUFS);
	ck_assert_uint_eq(len, 99);
	for (size_t i = 0; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], 0xEE); /* nothing written */
	ck_assert_int_eq(tv_proto_pack(&s, items, 1, buf, sizeof(buf), &len),
			 -EINVAL);
}
END_TEST

/* Packs a hand-built proto for the unpack tests. */
static size_t pack_raw(int32_t dtype, const int64_t *dims, size_t rank,
		       bool with_shape, size_t nvals, uint8_t *out)
{
	Tensorverbs__TensorProto msg = TENSORVERBS__TENSOR_PROTO__INIT;
	Tensorverbs__TensorShapeProto sp = TENSORVERBS__TENSOR_SHAPE_PROTO__INIT;
	Tensorverbs__TensorShapeProto__Dim d[40], *dp[40];
	ProtobufCBinaryData vals[8];
	size_t i;

	ck_assert_uint_le(rank, 40);
	ck_assert_uint_le(nvals, 8);
	for (i = 0; i < rank; i++) {
		tensorverbs__tensor_shape_proto__dim__init(&d[i]);
		d[i].size = dims[i];
		dp[i] = &d[i];
	}
	sp.n_dim = rank;
	sp.dim = dp;
	for (i = 0; i < nvals; i++) {
		vals[i].data = (uint8_t *)"v";
		vals[i].len = 1;
	}
	msg.dtype = dtype;
	msg.tensor_shape = with_shape ? &sp : NULL;
	msg.n_string_val = nvals;
	msg.string_val = vals;
	ck_assert_uint_le(tensorverbs__tensor_proto__get_packed_size(&msg), 512);
	return tensorverbs__tensor_proto__pack(&msg, out);
}

static int unpack_count(const uint8_t *buf, size_t len,
			const struct tv_shape *expect, uint64_t *n_p)
{
	struct tv_shape got;
	struct tv_str *items = NULL;
	int ret = tv_proto_unpack(buf, len, expect, &got, &items, n_p);

	if (ret == 0)
		tv_proto_free_items(items, *n_p);
	return ret;
}

START_TEST(unpack_rejects_bad_contents)
{
	uint8_t buf[512];
	int64_t dims[40];
	uint64_t n = 0;
	size_t len, i;

	for (i = 0; i < 40; i++)
		dims[i] = 1;
	dims[0] = 2;
	len = pack_raw(TV_DT_STRING, dims, 1, true, 2, buf);
	ck_assert_int_eq(unpack_count(buf, len, NULL, &n), 0);
	ck_assert_uint_eq(n, 2);

	len = pack_raw(TV_DT_FLOAT, dims, 1, true, 2, buf);
	ck_assert_int_eq(unpack_count(buf, len, NULL, &n), -EBADMSG);
	len = pack_raw(TV_DT_STRING, dims, 1, true, 3, buf); /* count */
	ck_assert_int_eq(unpack_count(buf, len, NULL, &n), -EBADMSG);
	len = pack_raw(TV_DT_STRING, dims, 1, true, 1, buf);
	ck_assert_int_eq(unpack_count(buf, len, NULL, &n), -EBADMSG);
	len = pack_raw(TV_DT_STRING, dims, TV_MAX_RANK + 1, true, 2, buf);
	ck_assert_int_eq(unpack_count(buf, len, NULL, &n), -EBADMSG);
	dims[0] = -2;
	len = pack_raw(TV_DT_STRING, dims, 1, true, 0, buf);
	ck_assert_int_eq(unpack_count(buf, len, NULL, &n), -EBADMSG);
	dims[0] = INT64_MAX;
	dims[1] = 2;
	dims[2] = 0;
	len = pack_raw(TV_DT_STRING, dims, 3, true, 0, buf); /* overflow */
	ck_assert_int_eq(unpack_count(buf, len, NULL, &n), -EBADMSG);
	/* No shape at all is a scalar: one string. */
	len = pack_raw(TV_DT_STRING, dims, 0, false, 1, buf);
	ck_assert_int_eq(unpack_count(buf, len, NULL, &n), 0);
	ck_assert_uint_eq(n, 1);
	len = pack_raw(TV_DT_STRING, dims, 0, false, 2, buf);
	ck_assert_int_eq(unpack_count(buf, len, NULL, &n), -EBADMSG);
}
END_TEST

START_TEST(unpack_rejects_shape_mismatch)
{
	char a[] = "ab";
	struct tv_str items[2] = { { a, 2 }, { a, 1 } };
	struct tv_shape s = shape1(2);
	struct tv_shape other = { .rank = 2, .dims = { 1, 2 } };
	struct tv_shape got = { 0 };
	struct tv_str *out = (struct tv_str *)&got; /* must stay untouched */
	uint64_t n = 5;
	uint8_t buf[64];
	size_t len;

	ck_assert_int_eq(tv_proto_pack(&s, items, 2, buf, sizeof(buf), &len),
			 0);
	ck_assert_int_eq(tv_proto_unpack(buf, len, &other, &got, &out, &n),
			 -EBADMSG);
	ck_assert_ptr_eq(out, (struct tv_str *)&got);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(got.rank, 0);
	other = shape1(3);
	ck_assert_int_eq(tv_proto_unpack(buf, len, &other, &got, &out, &n),
			 -EBADMSG);
}
END_TEST

START_TEST(unpack_rejects_malformed_bytes)
{
	char a[] = "hello world";
	struct tv_str items[2] = { { a, 11 }, { a, 5 } };
	struct tv_shape s = shape1(2);
	uint8_t buf[64], junk[] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF };
	uint64_t n;
	size_t len, cut;

	ck_assert_int_eq(tv_proto_pack(&s, items, 2, buf, sizeof(buf), &len),
			 0);
	/* Every truncation cuts a field short or loses a string. */
	for (cut = 0; cut < len; cut++)
		ck_assert_int_eq(unpack_count(buf, cut, NULL, &n), -EBADMSG);
	ck_assert_int_eq(unpack_count(junk, sizeof(junk), NULL, &n), -EBADMSG);
	/* string_val (field 8, length-delimited) claiming 100 bytes. */
	buf[len] = 0x42;
	buf[len + 1] = 100;
	ck_assert_int_eq(unpack_count(buf, len + 2, NULL, &n), -EBADMSG);
}
END_TEST

Suite *serialize_suite(void)
{
	Suite *s = suite_create("serialize");
	TCase *tc = tcase_create("serialize");

	tcase_add_test(tc, round_trip_small);
	tcase_add_test(tc, round_trip_shapes);
	tcase_add_test(tc, round_trip_empty_strings_and_max_rank);
	tcase_add_test(tc, round_trip_large);
	tcase_add_test(tc, pack_rejects);
	tcase_add_test(tc, unpack_rejects_bad_contents);
	tcase_add_test(tc, unpack_rejects_shape_mismatch);
	tcase_add_test(tc, unpack_rejects_malformed_bytes);
	suite_add_tcase(s, tc);
	return s;
}
