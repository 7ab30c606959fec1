/* Value types: codes, dtypes, shapes, metadata and status. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <tensorverbs/tensor.h>

#include "serialize.h"
#include "suites.h"

static const struct {
	enum tv_dtype dtype;
	const char *name;
	size_t size;
} known[] = {
	{ TV_DT_FLOAT, "float", 4 },	 { TV_DT_DOUBLE, "double", 8 },
	{ TV_DT_INT32, "int32", 4 },	 { TV_DT_UINT8, "uint8", 1 },
	{ TV_DT_INT16, "int16", 2 },	 { TV_DT_INT8, "int8", 1 },
	{ TV_DT_STRING, "string", 0 },	 { TV_DT_INT64, "int64", 8 },
	{ TV_DT_BOOL, "bool", 1 },	 { TV_DT_BFLOAT16, "bfloat16", 2 },
	{ TV_DT_UINT16, "uint16", 2 },	 { TV_DT_HALF, "half", 2 },
	{ TV_DT_UINT32, "uint32", 4 },	 { TV_DT_UINT64, "uint64", 8 },
};

#define N_KNOWN (sizeof(known) / sizeof(known[0]))

START_TEST(dtype_names_sizes_round_trip)
{
	size_t i;

	for (i = 0; i < N_KNOWN; i++) {
		enum tv_dtype back = TV_DT_INVALID;

		ck_assert(tv_dtype_valid(known[i].dtype));
		ck_assert_uint_eq(tv_dtype_size(known[i].dtype), known[i].size);
		ck_assert(tv_dtype_dmaable(known[i].dtype) ==
			  (known[i].size != 0));
		ck_assert_str_eq(tv_dtype_name(known[i].dtype), known[i].name);
		ck_assert_int_eq(tv_dtype_from_name(known[i].name, &back), 0);
		ck_assert_int_eq(back, known[i].dtype);
	}
}
END_TEST

START_TEST(dtype_unknown)
{
	/* Every value 0..99 not in the list is unknown. */
	enum tv_dtype out = TV_DT_FLOAT;
	int v;

	for (v = 0; v < 100; v++) {
		bool listed = false;
		size_t i;

		for (i = 0; i < N_KNOWN; i++)
			listed |= (int)known[i].dtype == v;
		ck_assert(tv_dtype_valid((enum tv_dtype)v) == listed);
		if (!listed) {
			ck_assert_uint_eq(tv_dtype_size((enum tv_dtype)v), 0);
			ck_assert(!tv_dtype_dmaable((enum tv_dtype)v));
			ck_assert_str_eq(tv_dtype_name((enum tv_dtype)v),
					 "invalid");
		}
	}
	ck_assert_int_eq(tv_dtype_from_name("float32", &out), -EINVAL);
	ck_assert_int_eq(tv_dtype_from_name("", &out), -EINVAL);
	ck_assert_int_eq(tv_dtype_from_name("invalid", &out), -EINVAL);
	ck_assert_int_eq(tv_dtype_from_name(NULL, &out), -EINVAL);
	ck_assert_int_eq(out, TV_DT_FLOAT); /* untouched on failure */
}
END_TEST

START_TEST(code_names_round_trip)
{
	static const char *const names[] = {
		"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
		"DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
		"PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
		"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
		"UNAUTHENTICATED",
	};
	enum tv_code c, back;

	ck_assert_uint_eq(sizeof(names) / sizeof(names[0]), TV_CODE_MAX + 1);
	for (c = TV_OK; c <= TV_CODE_MAX; c++) {
		back = TV_CODE_MAX;
		ck_assert_str_eq(tv_code_name(c), names[c]);
		ck_assert_int_eq(tv_code_from_name(names[c], &back), 0);
		ck_assert_int_eq(back, c);
	}
	ck_assert_str_eq(tv_code_name((enum tv_code)17), "INVALID_CODE");
	ck_assert_str_eq(tv_code_name((enum tv_code)-1), "INVALID_CODE");
	back = TV_ABORTED;
	ck_assert_int_eq(tv_code_from_name("not_found", &back), -EINVAL);
	ck_assert_int_eq(tv_code_from_name("INVALID_CODE", &back), -EINVAL);
	ck_assert_int_eq(tv_code_from_name(NULL, &back), -EINVAL);
	ck_assert_int_eq(back, TV_ABORTED);
}
END_TEST

START_TEST(shape_num_elements)
{
	struct tv_shape s = { 0 };
	uint64_t n = 99;

	ck_assert_int_eq(tv_shape_num_elements(&s, &n), 0);
	ck_assert_uint_eq(n, 1); /* a scalar */
	s.rank = 3;
	s.dims[0] = 2; s.dims[1] = 3; s.dims[2] = 7;
	ck_assert_int_eq(tv_shape_num_elements(&s, &n), 0);
	ck_assert_uint_eq(n, 42);
	s.dims[1] = 0;
	ck_assert_int_eq(tv_shape_num_elements(&s, &n), 0);
	ck_assert_uint_eq(n, 0);
	s.rank = 1;
	s.dims[0] = INT64_MAX;
	ck_assert_int_eq(tv_shape_num_elements(&s, &n), 0);
	ck_assert_uint_eq(n, (uint64_t)INT64_MAX);
	s.rank = TV_MAX_RANK;
	for (unsigned i = 0; i < TV_MAX_RANK; i++)
		s.dims[i] = 1;
	ck_assert_int_eq(tv_shape_num_elements(&s, &n), 0);
	ck_assert_uint_eq(n, 1);
}
END_TEST

START_TEST(shape_rejects)
{
	struct tv_shape s = { 0 };
	uint64_t n = 77;

	s.rank = 2;
	s.dims[0] = INT64_C(1) << 32;
	s.dims[1] = INT64_C(1) << 31; /* 2^63 > INT64_MAX */
	ck_assert_int_eq(tv_shape_num_elements(&s, &n), -EOVERFLOW);
	s.dims[1] = (INT64_C(1) << 31) - 1; /* just fits */
	ck_assert_int_eq(tv_shape_num_elements(&s, &n), 0);
	ck_assert_uint_eq(n, (UINT64_C(1) << 63) - (UINT64_C(1) << 32));
	/* A zero dim does not hide an overflow, wherever it sits. */
	s.rank = 3;
	s.dims[0] = 0; s.dims[1] = INT64_MAX; s.dims[2] = 2;
	ck_assert_int_eq(tv_shape_num_elements(&s, &n), -EOVERFLOW);
	s.dims[0] = INT64_MAX; s.dims[1] = 2; s.dims[2] = 0;
	ck_assert_int_eq(tv_shape_num_elements(&s, &n), -EOVERFLOW);
	s.rank = 2;
	s.dims[0] = 4; s.dims[1] = -1;
	n = 77;
	ck_assert_int_eq(tv_shape_num_elements(&s, &n), -EINVAL);
	s.dims[1] = INT64_MIN;
	ck_assert_int_eq(tv_shape_num_elements(&s, &n), -EINVAL);
	s.dims[1] = 1;
	s.rank = TV_MAX_RANK + 1;
	ck_assert_int_eq(tv_shape_num_elements(&s, &n), -EINVAL);
	ck_assert_uint_eq(n, 77);
}
END_TEST

START_TEST(shape_equal)
{
	struct tv_shape a = { 0 }, b = { 0 };

	ck_assert(tv_shape_equal(&a, &b));
	a.rank = b.rank = 2;
	a.dims[0] = b.dims[0] = 5;
	a.dims[1] = b.dims[1] = 6;
	a.dims[2] = 1; /* past rank: not part of the shape */
	ck_assert(tv_shape_equal(&a, &b));
	b.dims[1] = 7;
	ck_assert(!tv_shape_equal(&a, &b));
	b.dims[1] = 6;
	b.rank = 3;
	ck_assert(!tv_shape_equal(&a, &b));
	a.rank = b.rank = TV_MAX_RANK + 1;
	ck_assert(!tv_shape_equal(&a, &b));
}
END_TEST

static struct tv_meta float_meta(void)
{
	struct tv_meta m = { .dtype = TV_DT_FLOAT };

	m.shape.rank = 2;
	m.shape.dims[0] = 3;
	m.shape.dims[1] = 5;
	m.tensor_bytes = 60;
	return m;
}

START_TEST(meta_validate_rules)
{
	struct tv_meta m = float_meta();

	ck_assert_int_eq(tv_meta_validate(&m), 0);
	m.tensor_bytes = 59;
	ck_assert_int_eq(tv_meta_validate(&m), -EINVAL);
	m.tensor_bytes = 0;
	ck_assert_int_eq(tv_meta_validate(&m), -EINVAL);
	m = float_meta();
	m.dtype = TV_DT_INVALID;
	ck_assert_int_eq(tv_meta_validate(&m), -EINVAL);
	m.dtype = (enum tv_dtype)8; /* a hole in the enum */
	ck_assert_int_eq(tv_meta_validate(&m), -EINVAL);
	m = float_meta();
	m.shape.dims[1] = -5;
	ck_assert_int_eq(tv_meta_validate(&m), -EINVAL);
	m = float_meta();
	m.shape.rank = TV_MAX_RANK + 1;
	ck_assert_int_eq(tv_meta_validate(&m), -EINVAL);
	m = float_meta();
	m.shape.dims[0] = INT64_MAX;
	m.shape.dims[1] = 2;
	ck_assert_int_eq(tv_meta_validate(&m), -EOVERFLOW);
	/* Elements fit in int64 but bytes do not fit in uint64. */
	m.dtype = TV_DT_DOUBLE;
	m.shape.rank = 1;
	m.shape.dims[0] = INT64_MAX;
	m.tensor_bytes = (uint64_t)INT64_MAX * 8; /* wrapped value */
	ck_assert_int_eq(tv_meta_validate(&m), -EOVERFLOW);
	/* Zero elements: zero bytes. */
	m = float_meta();
	m.shape.dims[0] = 0;
	m.tensor_bytes = 0;
	ck_assert_int_eq(tv_meta_validate(&m), 0);
}
END_TEST

START_TEST(meta_validate_dead_and_strings)
{
	struct tv_meta m = float_meta();

	m.is_dead = true;
	ck_assert_int_eq(tv_meta_validate(&m), -EINVAL); /* 60 bytes */
	m.tensor_bytes = 0;
	ck_assert_int_eq(tv_meta_validate(&m), 0);
	m.dtype = TV_DT_STRING;
	ck_assert_int_eq(tv_meta_validate(&m), 0);
	m.tensor_bytes = 1;
	ck_assert_int_eq(tv_meta_validate(&m), -EINVAL);
	/* Live strings: any size up to the documented bound. */
	m.is_dead = false;
	m.tensor_bytes = 0;
	ck_assert_int_eq(tv_meta_validate(&m), 0);
	m.tensor_bytes = 12345;
	ck_assert_int_eq(tv_meta_validate(&m), 0);
	m.tensor_bytes = TV_SERIALIZED_BYTES_MAX;
	ck_assert_int_eq(tv_meta_validate(&m), 0);
	m.tensor_bytes = TV_SERIALIZED_BYTES_MAX + 1;
	ck_assert_int_eq(tv_meta_validate(&m), -EOVERFLOW);
	m.tensor_bytes = 10;
	m.shape.dims[0] = -1;
	ck_assert_int_eq(tv_meta_validate(&m), -EINVAL);
}
END_TEST

START_TEST(meta_equal)
{
	struct tv_meta a = float_meta(), b = float_meta();

	ck_assert(tv_meta_equal(&a, &b));
	b.shape.dims[5] = 9; /* past rank */
	ck_assert(tv_meta_equal(&a, &b));
	b = float_meta();
	b.dtype = TV_DT_INT32;
	ck_assert(!tv_meta_equal(&a, &b));
	b = float_meta();
	b.shape.dims[0] = 4;
	ck_assert(!tv_meta_equal(&a, &b));
	b = float_meta();
	b.is_dead = true;
	ck_assert(!tv_meta_equal(&a, &b));
	b = float_meta();
	b.tensor_bytes = 61;
	ck_assert(!tv_meta_equal(&a, &b));
}
END_TEST

START_TEST(status_set_and_truncation)
{
	struct tv_status st;
	char big[3000];

	memset(&st, 'x', sizeof(st));
	tv_status_set(&st, TV_NOT_FOUND, "tensor %s step %d", "a/b", 7);
	ck_assert_int_eq(st.code, TV_NOT_FOUND);
	ck_assert_str_eq(st.message, "tensor a/b step 7");
	ck_assert_str_eq(st.details, "");

	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tv_status_set(&st, TV_INTERNAL, "%s", big);
	ck_assert_uint_eq(strlen(st.message), TV_STATUS_MSG_MAX);
	ck_assert_int_eq(st.message[TV_STATUS_MSG_MAX - 1], 'm');

	strcpy(st.details, "d");
	tv_status_ok(&st);
	ck_assert_int_eq(st.code, TV_OK);
	ck_assert_str_eq(st.message, "");
	ck_assert_str_eq(st.details, "");
}
END_TEST

Suite *types_suite(void)
{
	Suite *s = suite_create("types");
	TCase *tc = tcase_create("types");

	tcase_add_test(tc, dtype_names_sizes_round_trip);
	tcase_add_test(tc, dtype_unknown);
	tcase_add_test(tc, code_names_round_trip);
	tcase_add_test(tc, shape_num_elements);
	tcase_add_test(tc, shape_rejects);
	tcase_add_test(tc, shape_equal);
	tcase_add_test(tc, meta_validate_rules);
	tcase_add_test(tc, meta_validate_dead_and_strings);
	tcase_add_test(tc, meta_equal);
	tcase_add_test(tc, status_set_and_truncation);
	suite_add_tcase(s, tc);
	return s;
}
