/*
 * Small units of the engine: the hash map, the tensor API, teardown of
 * published-but-never-requested tensors.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "harness.h"

struct item {
	struct tv_hnode node;
	int key;
};

START_TEST(hmap_collisions_and_growth)
{
	struct tv_hmap map;
	struct item items[300];
	struct tv_hnode *n = NULL;
	int i, found = 0, walked = 0;

	ck_assert_int_eq(tv_hmap_init(&map, 4), 0);
	/* Every third item shares hash 7: chains across growth. */
	for (i = 0; i < 300; i++) {
		items[i].key = i;
		tv_hmap_insert(&map, &items[i].node,
			       i % 3 ? tv_hash_u64((uint64_t)i) : 7);
	}
	ck_assert_uint_eq(map.count, 300);
	ck_assert_uint_ge(map.nbuckets, 256);
	for (n = tv_hmap_first(&map, 7); n; n = tv_hmap_next_same(n)) {
		struct item *it = TV_CONTAINER_OF(n, struct item, node);

		/* Insertion order survives the rehashes. */
		ck_assert_int_eq(it->key, found * 3);
		found++;
	}
	ck_assert_int_eq(found, 100);
	for (n = tv_hmap_iter(&map, NULL); n; n = tv_hmap_iter(&map, n))
		walked++;
	ck_assert_int_eq(walked, 300);
	for (i = 0; i < 300; i++)
		tv_hmap_remove(&map, &items[i].node);
	ck_assert_ptr_null(tv_hmap_any(&map));
	ck_assert_ptr_null(tv_hmap_iter(&map, NULL));
	ck_assert_ptr_null(tv_hmap_first(&map, 7));
	tv_hmap_fini(&map);
}
END_TEST

START_TEST(tensor_api)
{
	struct h_world *w;
	struct h_opts o;
	struct tv_shape s2 = { .rank = 2, .dims = { 2, 3 } };
	struct tv_tensor *a, *b, *str, *dead;
	const void *p;
	size_t len;

	h_opts_default(&o);
	w = h_world_new(&o);
	ck_assert_uint_eq(tv_engine_node_id(w->eng[1]), 1);
	ck_assert_ptr_eq(tv_engine_device(w->eng[1]),
			 tv_sim_device(w->sim, 1));
	ck_assert_int_eq(tv_tensor_create(w->eng[0], TV_DT_INT32, &s2,
					  TV_PLACE_HOST, &a), 0);
	ck_assert_int_eq(tv_tensor_create(w->eng[0], TV_DT_INT32, &s2,
					  TV_PLACE_DEVICE, &b), 0);
	ck_assert_uint_eq(tv_tensor_num_elements(a), 6);
	ck_assert_uint_eq(tv_tensor_size_bytes(a), 24);
	memset(tv_tensor_data(a), 1, 24);
	memset(tv_tensor_data(b), 1, 24);
	/* Same content, same checksum, wherever it lives. */
	ck_assert_uint_eq(tv_tensor_checksum(a), tv_tensor_checksum(b));
	((uint8_t *)tv_tensor_data(b))[23] = 2;
	ck_assert_uint_ne(tv_tensor_checksum(a), tv_tensor_checksum(b));
	ck_assert_int_eq(tv_tensor_create(w->eng[0], TV_DT_STRING, &s2,
					  TV_PLACE_DEVICE, &str), 0);
	/* Strings are host objects. */
	ck_assert_int_eq(tv_tensor_placement(str), TV_PLACE_HOST);
	ck_assert_ptr_null(tv_tensor_data(str));
	ck_assert_int_eq(tv_tensor_set_string(str, 6, "x", 1), -EINVAL);
	ck_assert_int_eq(tv_tensor_set_string(str, 0, NULL, 3), -EINVAL);
	ck_assert_int_eq(tv_tensor_set_string(str, 5, "abc", 3), 0);
	ck_assert_int_eq(tv_tensor_set_string(str, 5, "de", 2), 0);
	ck_assert_int_eq(tv_tensor_get_string(str, 5, &p, &len), 0);
	ck_assert_uint_eq(len, 2);
	ck_assert_int_eq(memcmp(p, "de", 2), 0);
	ck_assert_int_eq(tv_tensor_get_string(str, 6, &p, &len), -EINVAL);
	ck_assert_int_eq(tv_tensor_get_string(a, 0, &p, &len), -EINVAL);
	ck_assert_uint_ne(tv_tensor_checksum(str), tv_tensor_checksum(a));
	ck_assert_int_eq(tv_tensor_create_dead(w->eng[0], TV_DT_FLOAT, &dead),
			 0);
	ck_assert(tv_tensor_is_dead(dead));
	ck_assert_uint_eq(tv_tensor_size_bytes(dead), 0);
	ck_assert_int_eq(tv_tensor_wrap_host(w->eng[0], TV_DT_FLOAT, &s2, NULL,
					     NULL, NULL, &b), -EINVAL);
	ck_assert_int_eq(tv_tensor_wrap_host(w->eng[0], TV_DT_STRING, &s2,
					     NULL, NULL, NULL, &b), -EINVAL);
	tv_tensor_ref(a);
	tv_tensor_unref(a);
	tv_tensor_unref(a);
	tv_tensor_unref(b);
	tv_tensor_unref(str);
	tv_tensor_unref(dead);
	tv_tensor_unref(NULL);
	h_world_free(w);
}
END_TEST

START_TEST(unrequested_sends_are_freed_at_teardown)
{
	struct h_world *w;
	struct h_opts o;
	static const int64_t d[] = { 10 };
	struct tv_tensor *t;
	struct tv_engine_stats s;

	h_opts_default(&o);
	w = h_world_new(&o);
	t = h_tensor(w, 0, TV_DT_FLOAT, 1, d, TV_PLACE_HOST, 1);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 1, "a", t), 0);
	ck_assert_int_eq(tv_engine_send(w->eng[0], 2, "a", t), 0);
	ck_assert_int_eq(tv_engine_send_error(w->eng[0], 3, "a", TV_ABORTED,
					      "no"), 0);
	tv_tensor_unref(t);
	tv_engine_stats(w->eng[0], &s);
	ck_assert_uint_eq(s.unmatched_sends, 3);
	ck_assert_uint_eq(s.live_tensors, 1);
	h_world_free(w); /* asserts destroy returned 0: nothing held */
}
END_TEST

/*
 * engine/text.h against libc, for every length up to 40 (both loops, and
 * the word loop's tail) and a NUL at every position.
 */
START_TEST(text_helpers_match_libc)
{
	unsigned char src[48];
	char dst[48], other[48];

	for (size_t n = 0; n <= 40; n++) {
		for (size_t i = 0; i < sizeof(src); i++)
			src[i] = (unsigned char)('a' + (i * 7 + n) % 26);
		memset(dst, 'x', sizeof(dst));
		ck_assert(tv__text_copy(dst, src, n));
		ck_assert_int_eq(memcmp(dst, src, n), 0);
		ck_assert_int_eq(dst[n], 'x'); /* no byte past n written */
		memcpy(other, src, n);
		ck_assert(tv__bytes_equal(dst, other, n));
		for (size_t i = 0; i < n; i++) {
			other[i] ^= 0x20;
			ck_assert(!tv__bytes_equal(dst, other, n));
			other[i] ^= 0x20;
		}
		for (size_t z = 0; z < n; z++) {
			unsigned char keep = src[z];

			src[z] = '\0';
			ck_assert(!tv__text_copy(dst, src, n));
			ck_assert_uint_eq(tv__text_len((const char *)src, n), z);
			ck_assert_uint_eq(tv__text_len((const char *)src, n),
					  strnlen((const char *)src, n));
			src[z] = keep;
		}
		ck_assert_uint_eq(tv__text_len((const char *)src, n), n);
		tv__name_copy(dst, (const char *)src, n);
		ck_assert_uint_eq(strlen(dst), n);
	}
}
END_TEST

Suite *engine_units_suite(void);

Suite *engine_units_suite(void)
{
	Suite *s = suite_create("engine-units");
	TCase *tc = tcase_create("units");

	tcase_add_test(tc, hmap_collisions_and_growth);
	tcase_add_test(tc, tensor_api);
	tcase_add_test(tc, unrequested_sends_are_freed_at_teardown);
	tcase_add_test(tc, text_helpers_match_libc);
	suite_add_tcase(s, tc);
	return s;
}
