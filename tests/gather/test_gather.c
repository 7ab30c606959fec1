/*
 * The gather engine on the simulator: every row right (local, replicated,
 * remote; sorted or not; staged or direct; duplicates and boundary ids),
 * ids refused before anything is posted, a failed READ retried on a reset
 * QP, failed rows named when no retry can help, deadlines, hostile
 * handles, configurations that cannot work.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <fiu.h>
#include <fiu-control.h>

#include "common/check_main.h"
#include "gather_fix.h"

#define T_SECOND 1000000000ull

static size_t boundary_ids(const struct tv_gather_config *c, uint32_t nodes,
			   uint64_t *ids)
{
	size_t n = 0;

	ids[n++] = 0;
	ids[n++] = c->replicated_rows - 1;
	for (uint32_t k = 0; k < nodes; k++) {
		struct tv_gather_config cc = *c;
		uint64_t first, end;

		cc.nodes = nodes;
		tv_gather_range(&cc, k, &first, &end);
		ids[n++] = first;
		ids[n++] = end - 1;
	}
	ids[n++] = c->rows - 1;
	ids[n++] = c->rows - 1; /* a duplicate */
	return n;
}

static uint64_t *uniform_ids(size_t n, uint64_t rows, uint64_t seed)
{
	uint64_t *ids = malloc(n * sizeof(*ids)), x = seed;

	ck_assert_ptr_nonnull(ids);
	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		ids[i] = (x >> 33) % rows;
	}
	return ids;
}

static void gather_ok(struct gworld *w, uint32_t node, const uint64_t *ids,
		      size_t n, uint8_t *out)
{
	const struct tv_gather_result *res = NULL;
	long bad;
	int ret;

	ret = tv_gather(w->ctx[node], ids, n, out, T_SECOND, &res);
	ck_assert_msg(ret == 0, "gather: %d (%s), %zu rows failed", ret,
		      tv_gather_error(w->ctx[node]),
		      res ? res->failed_rows : 0);
	ck_assert_uint_eq(res->rows, n);
	ck_assert_uint_eq(res->local_rows + res->replicated_rows +
				  res->remote_rows, n);
	bad = gfix_check(ids, n, out, w->cfg.row_bytes);
	ck_assert_msg(bad < 0, "row %ld (id %llu) is wrong", bad,
		      bad < 0 ? 0ull : (unsigned long long)ids[bad]);
	/* The end is reported once. */
	ck_assert_int_eq(tv_gather_test(w->ctx[node], NULL), -ENOENT);
}

START_TEST(test_rows_right)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t ids[600];
	uint8_t *out;
	size_t n;

	gfix_config(&cfg);
	cfg.sort_ids = _i & 1;
	gfix_init(&w, 3, &cfg, NULL);
	n = boundary_ids(&w.cfg, 3, ids);
	uint64_t *more = uniform_ids(500, cfg.rows, 7 + _i);
	memcpy(ids + n, more, 500 * sizeof(*ids));
	free(more);
	n += 500;
	out = calloc(n, cfg.row_bytes);
	for (uint32_t node = 0; node < 3; node++) {
		memset(out, 0, n * cfg.row_bytes);
		gather_ok(&w, node, ids, n, out);
	}
	struct tv_gather_stats st;
	tv_gather_stats(w.ctx[0], &st);
	ck_assert_uint_gt(st.reads_posted, 0);
	ck_assert_uint_le(st.max_sq_used, st.sq_depth);
	ck_assert_uint_eq(st.post_failures, 0);
	/* Staging: 2 post lists of 16 rows, reused all along. */
	ck_assert_uint_eq(st.staging_bytes, 2 * 16 * 64);
	free(out);
	gfix_fini(&w);
}
END_TEST

START_TEST(test_direct_out)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t *ids = uniform_ids(300, 1000, 3);
	uint8_t *out = calloc(300, 64);
	struct tv_gather_stats st;

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	ck_assert_int_eq(tv_gather_out_register(w.ctx[1], out, 300 * 64), 0);
	gather_ok(&w, 1, ids, 300, out);
	tv_gather_stats(w.ctx[1], &st);
	ck_assert_uint_gt(st.bytes_read, 0);
	ck_assert_int_eq(tv_gather_out_deregister(w.ctx[1]), 0);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* Everything is registered at set-up: with every later registration
 * failing, gathers (staged, several rounds of the staging slots) work. */
START_TEST(test_no_registration_on_path)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t *ids = uniform_ids(700, 1000, 5);
	uint8_t *out = calloc(700, 64);

	gfix_config(&cfg);
	gfix_init(&w, 3, &cfg, NULL);
	tv_sim_fail_reg_mr(w.sim, 0, 1000000, -ENOMEM);
	gather_ok(&w, 0, ids, 700, out);
	gather_ok(&w, 0, ids, 350, out);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

START_TEST(test_bad_id_refused)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t ids[3] = { 5, 1000, 7 };
	uint8_t out[3 * 64];
	struct tv_gather_stats st;
	size_t bad = 99;

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	ck_assert_int_eq(tv_gather_start(w.ctx[0], ids, 3, out, 0, &bad),
			 -ERANGE);
	ck_assert_uint_eq(bad, 1);
	ck_assert_ptr_nonnull(strstr(tv_gather_error(w.ctx[0]), "ids[1]"));
	tv_gather_stats(w.ctx[0], &st);
	ck_assert_uint_eq(st.reads_posted, 0);
	ck_assert_uint_eq(st.gathers, 0);
	gfix_fini(&w);
}
END_TEST

/* The server re-registers (a restart): READs with the old rkey fail with
 * REM_ACCESS_ERR; the QP is reset, the handle refreshed, rows re-read. */
START_TEST(test_rereg_retried)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t *ids = uniform_ids(400, 1000, 11);
	uint8_t *out = calloc(400, 64);
	struct tv_gather_stats st;

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	ck_assert_int_eq(tv_gather_reregister(w.ctx[1]), 0);
	gather_ok(&w, 0, ids, 400, out);
	tv_gather_stats(w.ctx[0], &st);
	ck_assert_uint_gt(st.error_cqes, 0);
	ck_assert_uint_gt(st.retries, 0);
	ck_assert_uint_gt(st.reconnects, 0);
	ck_assert_uint_gt(w.reconnects, 0);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* No reconnect possible: every row of that server is named, none is
 * delivered as good. */
START_TEST(test_failed_rows_named)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t *ids = uniform_ids(400, 1000, 13);
	uint8_t *out = calloc(400, 64);
	const struct tv_gather_result *res = NULL;
	uint64_t first, end;

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	w.refuse_reconnect = true;
	ck_assert_int_eq(tv_gather_reregister(w.ctx[1]), 0);
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 400, out, T_SECOND, &res),
			 -EIO);
	tv_gather_range(&w.cfg, 1, &first, &end);
	size_t remote = 0;
	for (size_t i = 0; i < 400; i++)
		remote += ids[i] >= first;
	ck_assert_uint_eq(res->remote_rows, remote);
	ck_assert_uint_eq(res->failed_rows, remote);
	bool seen_access = false;
	for (size_t i = 0; i < res->failed_rows; i++) {
		const struct tv_gather_row_error *e = &res->errors[i];

		ck_assert_uint_eq(ids[e->index], e->id);
		ck_assert_uint_ge(e->id, first);
		ck_assert_int_ne(e->status, 0);
		seen_access |= e->status == TV_WC_REM_ACCESS_ERR ||
			       e->cause == TV_WC_REM_ACCESS_ERR;
	}
	ck_assert_msg(seen_access, "status %d cause %d", res->errors[0].status,
		      res->errors[0].cause);
	/* The rows that did not fail are right. */
	for (size_t i = 0; i < 400; i++) {
		uint8_t want[64];

		if (ids[i] >= first)
			continue;
		gfix_row(ids[i], want, 64);
		ck_assert(!memcmp(out + i * 64, want, 64));
	}
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

START_TEST(test_deadline)
{
	struct tv_gather_config cfg;
	struct tv_sim_config sc;
	struct gworld w;
	uint64_t *ids = uniform_ids(200, 1000, 17);
	uint8_t *out = calloc(200, 64);
	const struct tv_gather_result *res = NULL;

	gfix_config(&cfg);
	cfg.qp_timeout = 20; /* longer than the deadline */
	tv_sim_config_default(&sc);
	sc.num_nodes = 2;
	sc.link.latency_ns = 50000000; /* 50 ms each way */
	gfix_init(&w, 2, &cfg, &sc);
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 200, out, 10000000, &res),
			 -EIO);
	ck_assert_uint_gt(res->failed_rows, 0);
	for (size_t i = 0; i < res->failed_rows; i++)
		ck_assert_int_eq(res->errors[i].cause, -ETIMEDOUT);
	ck_assert_uint_lt(tv_sim_now_ns(w.sim), 50000000);
	/* The next gather gets reconnected QPs and no stale rows. */
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 200, out, 10 * T_SECOND,
				   &res), 0);
	ck_assert_int_lt(gfix_check(ids, 200, out, 64), 0);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

static bool handle_eq(const struct tv_gather_part_handle *a,
		      const struct tv_gather_part_handle *b)
{
	return a->node == b->node && a->first == b->first &&
	       a->end == b->end && a->replicated_rows == b->replicated_rows &&
	       a->row_bytes == b->row_bytes && a->addr == b->addr &&
	       a->rkey == b->rkey &&
	       a->max_dest_rd_atomic == b->max_dest_rd_atomic;
}

START_TEST(test_handles_hostile)
{
	struct tv_gather_config cfg;
	struct tv_gather_part_handle h, d;
	struct gworld w;
	uint8_t buf[TV_GATHER_HANDLE_BYTES], bad[TV_GATHER_HANDLE_BYTES];

	gfix_config(&cfg);
	gfix_init(&w, 3, &cfg, NULL);
	tv_gather_part_handle(w.ctx[1], &h);
	ck_assert_int_eq(tv_gather_handle_encode(&h, buf, sizeof(buf)), 0);
	ck_assert_int_eq(tv_gather_handle_decode(buf, sizeof(buf), &d), 0);
	ck_assert_uint_eq(d.rkey, h.rkey);
	ck_assert_uint_eq(d.addr, h.addr);
	ck_assert_uint_eq(d.end, h.end);
	ck_assert_int_eq(tv_gather_handle_decode(buf, sizeof(buf) - 1, &d),
			 -EPROTO);
	for (size_t i = 0; i < sizeof(buf); i++) {
		/* Every flipped byte is refused or decodes to other fields
		 * (compared one by one: the struct has padding). */
		memcpy(bad, buf, sizeof(buf));
		bad[i] ^= 0xff;
		if (!tv_gather_handle_decode(bad, sizeof(bad), &d))
			ck_assert(!handle_eq(&d, &h));
	}
	memcpy(bad, buf, sizeof(buf));
	memset(bad + 40, 0xff, 8); /* addr + size wraps */
	ck_assert_int_eq(tv_gather_handle_decode(bad, sizeof(bad), &d),
			 -EPROTO);
	/* A handle whose range is not the one the configuration says. */
	d = h;
	d.end++;
	ck_assert_int_eq(tv_gather_set_peer(w.ctx[0], &d), -EPROTO);
	ck_assert_ptr_nonnull(strstr(tv_gather_error(w.ctx[0]), "node 1"));
	d = h;
	d.node = 0;
	ck_assert_int_eq(tv_gather_set_peer(w.ctx[0], &d), -EPROTO);
	gfix_fini(&w);
}
END_TEST

START_TEST(test_config_refused)
{
	struct tv_sim *sim;
	struct tv_sim_config sc;
	struct tv_gather_config cfg;
	struct tv_gather_ctx *ctx;
	char why[256] = "";
	uint8_t part[64 * 1000];

	tv_sim_config_default(&sc);
	sc.num_nodes = 1;
	sc.max_qp_wr = 64;
	ck_assert_int_eq(tv_sim_create(&sc, &sim), 0);
	gfix_config(&cfg);
	cfg.nodes = 1;
	cfg.post_list = 64;
	cfg.window = 2;
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), &cfg,
					      part, why, sizeof(why), &ctx),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "max_qp_wr"));
	cfg.post_list = 16;
	cfg.replicated_rows = 2000;
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), &cfg,
					      part, why, sizeof(why), &ctx),
			 -EINVAL);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* The peer is not back at first: the reconnect is asked again after the
 * back-off until it answers, and every row is right. */
START_TEST(test_reconnect_later)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t *ids = uniform_ids(300, 1000, 19);
	uint8_t *out = calloc(300, 64);
	uint64_t t0;

	gfix_config(&cfg);
	cfg.qps_per_peer = 1; /* no other QP to move the lists to */
	cfg.reconnect_backoff_ns = 50000;
	gfix_init(&w, 2, &cfg, NULL);
	w.not_yet = 3;
	ck_assert_int_eq(tv_gather_reregister(w.ctx[1]), 0);
	t0 = tv_sim_now_ns(w.sim);
	gather_ok(&w, 0, ids, 300, out);
	ck_assert_uint_ge(w.reconnects, 4);
	/* Three back-offs went by before the QP came back. */
	ck_assert_uint_ge(tv_sim_now_ns(w.sim) - t0, 3 * 50000);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* The shared CQ overflows (a fault: it has room for every READ): the
 * engine builds a new one and new QPs, and the gather still ends right. */
START_TEST(test_cq_overflow_rebuilt)
{
	struct tv_gather_config cfg;
	struct tv_gather_stats st;
	struct gworld w;
	uint64_t *ids = uniform_ids(300, 1000, 23);
	uint8_t *out = calloc(300, 64);

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	ck_assert_int_eq(fiu_init(0), 0);
	ck_assert_int_eq(fiu_enable("sim/cq/overflow", 1, NULL, FIU_ONETIME),
			 0);
	gather_ok(&w, 0, ids, 300, out);
	fiu_disable("sim/cq/overflow");
	tv_gather_stats(w.ctx[0], &st);
	ck_assert_uint_gt(st.reconnects, 0);
	ck_assert_ptr_nonnull(strstr(tv_gather_error(w.ctx[0]), "overflow"));
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* The client's READ depth: what the device allows and the server takes. */
START_TEST(test_rd_atomic_negotiated)
{
	struct tv_gather_config cfg;
	struct tv_sim_config sc;
	struct gworld w;

	gfix_config(&cfg);
	tv_sim_config_default(&sc);
	sc.num_nodes = 2;
	sc.max_qp_rd_atom = 64;        /* the server accepts 64 */
	sc.max_qp_init_rd_atom = 8;    /* the client may issue 8 */
	gfix_init(&w, 2, &cfg, &sc);
	ck_assert_uint_eq(tv_gather_qp_rd_atomic(w.ctx[0], 1, 0), 8);
	ck_assert_uint_eq(tv_gather_qp_rd_atomic(w.ctx[0], 0, 0), 0); /* self */
	ck_assert_uint_eq(tv_gather_qp_rd_atomic(w.ctx[0], 1, 99), 0);
	gfix_fini(&w);
}
END_TEST

/* A process dying mid-gather: abort, then destroy goes through. */
START_TEST(test_abort_mid_gather)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t *ids = uniform_ids(500, 1000, 29);
	uint8_t *out = calloc(500, 64);

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	ck_assert_int_eq(tv_gather_start(w.ctx[0], ids, 500, out, 0, NULL), 0);
	ck_assert_int_eq(tv_gather_test(w.ctx[0], NULL), -EAGAIN);
	ck_assert_int_eq(tv_gather_start(w.ctx[0], ids, 5, out, 0, NULL),
			 -EBUSY);
	ck_assert_int_eq(tv_gather_ctx_destroy(w.ctx[0]), -EBUSY);
	tv_gather_ctx_abort(w.ctx[0]);
	ck_assert_int_eq(tv_gather_ctx_destroy(w.ctx[0]), 0);
	w.ctx[0] = NULL;
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

static Suite *gather_suite(void)
{
	Suite *s = suite_create("gather");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_rows_right, 0, 2);
	tcase_add_test(tc, test_direct_out);
	tcase_add_test(tc, test_no_registration_on_path);
	tcase_add_test(tc, test_bad_id_refused);
	tcase_add_test(tc, test_rereg_retried);
	tcase_add_test(tc, test_failed_rows_named);
	tcase_add_test(tc, test_deadline);
	tcase_add_test(tc, test_handles_hostile);
	tcase_add_test(tc, test_config_refused);
	tcase_add_test(tc, test_reconnect_later);
	tcase_add_test(tc, test_cq_overflow_rebuilt);
	tcase_add_test(tc, test_rd_atomic_negotiated);
	tcase_add_test(tc, test_abort_mid_gather);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(gather_suite());
}
