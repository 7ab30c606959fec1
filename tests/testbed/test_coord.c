/*
 * The coordinator of `tensorverbs serve` (testbed/coord.c) in one
 * process on loopback: three nodes join, pass barriers, and all-gather
 * blobs (empty, small, larger than a line), and a malformed line aborts;
 * node 0 running out of memory for a peer's statistics fails its own run,
 * not the peer's name.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "common/check_main.h"
#include "common/wrap_alloc.h"
#include "coord.h"

#define NODES 3

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void coords_init(struct coord *c, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };
	char msg[256];

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	for (uint32_t n = 0; n < NODES; n++)
		ck_assert_int_eq(coord_init(&c[n], n, NODES,
					    (struct sockaddr *)&a, 42, 1, msg,
					    sizeof(msg)), 0);
}

static void poll_all(struct coord *c, bool (*done)(struct coord *c))
{
	uint64_t t0 = mono_ns();

	while (!done(c)) {
		for (uint32_t n = 0; n < NODES; n++)
			coord_poll(&c[n], mono_ns() + 1000000000ull);
		ck_assert_msg(mono_ns() - t0 < 5000000000ull, "stuck");
	}
}

static bool all_joined(struct coord *c)
{
	for (uint32_t n = 0; n < NODES; n++)
		if (!c[n].joined)
			return false;
	return true;
}

static bool all_gathered(struct coord *c)
{
	for (uint32_t n = 0; n < NODES; n++)
		if (!coord_ag_done(&c[n]))
			return false;
	return true;
}

static void gather(struct coord *c, size_t *lens)
{
	uint8_t *mine[NODES];

	for (uint32_t n = 0; n < NODES; n++) {
		mine[n] = malloc(lens[n] + 1);
		for (size_t i = 0; i < lens[n]; i++)
			mine[n][i] = (uint8_t)(n * 31 + i * 7);
		ck_assert_int_eq(coord_ag_start(&c[n], mine[n], lens[n]), 0);
	}
	poll_all(c, all_gathered);
	for (uint32_t n = 0; n < NODES; n++) {
		uint8_t **b;
		size_t *l;

		ck_assert_int_eq(coord_ag_take(&c[n], &b, &l), 0);
		for (uint32_t k = 0; k < NODES; k++) {
			ck_assert_uint_eq(l[k], lens[k]);
			if (lens[k])
				ck_assert_mem_eq(b[k], mine[k], lens[k]);
			free(b[k]);
		}
		free(b);
		free(l);
	}
	for (uint32_t n = 0; n < NODES; n++)
		free(mine[n]);
}

START_TEST(test_allgather)
{
	struct coord c[NODES];
	size_t small[NODES] = { 5, 0, 40 };
	size_t big[NODES] = { 1000, 777, 3 };

	coords_init(c, (uint16_t)(41000 + (getpid() % 4000)));
	poll_all(c, all_joined);
	gather(c, small);
	gather(c, big);  /* a second one, in pieces of many lines */
	ck_assert_int_eq(coord_ag_take(&c[0], &(uint8_t **){ NULL },
				       &(size_t *){ NULL }), -EAGAIN);
	ck_assert_int_eq(coord_ag_start(&c[1], "", COORD_AG_MAX + 1),
			 -EMSGSIZE);
	for (uint32_t n = 0; n < NODES; n++)
		coord_fini(&c[n]);
}
END_TEST

/*
 * Node 0 cannot keep node 1's STATS (its calloc fails): the line is lost
 * for good, so every later poll says -ENOMEM, and nobody blames node 1
 * for a malformed line (it once said "node 1 sent no statistics").
 */
START_TEST(test_stats_no_memory)
{
	struct coord c[NODES];
	uint64_t v = 7;
	uint64_t t0 = mono_ns();
	int rc;

	coords_init(c, (uint16_t)(49000 + (getpid() % 4000)));
	poll_all(c, all_joined);
	ck_assert_int_eq(coord_send_stats(&c[1], &v), 0);
	while (coord_poll(&c[1], mono_ns()) > 0)
		;
	oom_arm(0);
	do
		rc = coord_poll(&c[0], mono_ns());
	while (rc >= 0 && mono_ns() - t0 < 5000000000ull);
	ck_assert(oom_disarm());
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_int_eq(coord_poll(&c[0], mono_ns()), -ENOMEM);
	ck_assert_int_eq(coord_error(&c[0]), -ENOMEM);
	ck_assert_int_eq(coord_error(&c[1]), 0);
	ck_assert(!c[0].aborted);
	ck_assert_ptr_null(coord_stats(&c[0], 1));
	for (uint32_t n = 0; n < NODES; n++)
		coord_fini(&c[n]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("coord");
	TCase *tc = tcase_create("coord");

	tcase_add_test(tc, test_allgather);
	tcase_add_test(tc, test_stats_no_memory);
	suite_add_tcase(s, tc);
	return tv_check_main(s);
}
