/*
 * The gather engine's error paths and edges: configurations it must
 * refuse, calls in the wrong state, hostile handles, verbs calls that
 * fail (a test double over the simulator's ops table: the Nth call of an
 * op fails), a CQ that shows nothing, reconnects that do not reconnect.
 * Every test says which return code, state, row status or message it
 * expects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <fiu.h>
#include <fiu-control.h>

#include "common/check_main.h"
#include "common/vf_double.h"
#include "common/wrap_alloc.h"
#include "gather_fix.h"
#include "gather_int.h" /* white box: QP states, the reconnect callback */

#define T_SECOND 1000000000ull

/* ---- helpers --------------------------------------------------------------- */

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

static bool has(const char *s, const char *sub)
{
	return strstr(s, sub) != NULL;
}

/* Every id is remote for node 0 of 2 (node 1's range is [505, 1000)). */
static uint64_t *remote_ids(size_t n, uint64_t seed)
{
	uint64_t *ids = uniform_ids(n, 495, seed);

	for (size_t i = 0; i < n; i++)
		ids[i] += 505;
	return ids;
}

static void gather_right(struct gworld *w, uint32_t node, const uint64_t *ids,
			 size_t n, uint8_t *out)
{
	const struct tv_gather_result *res = NULL;
	int ret = tv_gather(w->ctx[node], ids, n, out, T_SECOND, &res);

	ck_assert_msg(ret == 0, "gather: %d (%.200s)", ret,
		      tv_gather_error(w->ctx[node]));
	ck_assert_uint_eq(res->failed_rows, 0);
	ck_assert_int_lt(gfix_check(ids, n, out, w->cfg.row_bytes), 0);
}

/* The world stepped and node 0 progressed until its gather ended: the
 * result. */
static const struct tv_gather_result *step_until_done(struct gworld *w)
{
	const struct tv_gather_result *res = NULL;

	while (tv_gather_test(w->ctx[0], &res) == -EAGAIN) {
		ck_assert_int_ge(tv_sim_step(w->sim), 0);
		ck_assert_int_ge(tv_gather_progress(w->ctx[0]), 0);
	}
	return res;
}

/* One context on node 0 of a world of two simulated nodes. */
static int ctx_try(struct tv_sim *sim, const struct tv_gather_config *cfg,
		   char *why, size_t cap)
{
	static uint8_t part[1 << 20];
	struct tv_gather_ctx *ctx = NULL;
	int ret = tv_gather_ctx_create(tv_sim_device(sim, 0), cfg, part, why,
				       cap, &ctx);

	if (!ret)
		ck_assert_int_eq(tv_gather_ctx_destroy(ctx), 0);
	else
		ck_assert_ptr_null(ctx);
	return ret;
}

static struct tv_sim *sim_new(uint32_t nodes)
{
	struct tv_sim_config sc;
	struct tv_sim *sim;

	tv_sim_config_default(&sc);
	sc.num_nodes = nodes;
	ck_assert_int_eq(tv_sim_create(&sc, &sim), 0);
	return sim;
}

static void cfg2(struct tv_gather_config *cfg)
{
	gfix_config(cfg);
	cfg->nodes = 2;
}

/* ---- the context ------------------------------------------------------------ */

START_TEST(test_config_refusals)
{
	struct tv_sim *sim = sim_new(2);
	struct tv_gather_config cfg;
	struct tv_gather_ctx *ctx = NULL;
	static uint8_t part[64];
	char why[256];

	cfg2(&cfg);
	ck_assert_int_eq(tv_gather_ctx_create(NULL, &cfg, part, NULL, 0, &ctx),
			 -EINVAL);
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), NULL,
					      part, NULL, 0, &ctx), -EINVAL);
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), &cfg,
					      NULL, NULL, 0, &ctx), -EINVAL);
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), &cfg,
					      part, NULL, 0, NULL), -EINVAL);
	ck_assert_ptr_null(ctx);
#define REFUSED(field, value, msg)                                            \
	do {                                                                  \
		struct tv_gather_config c = cfg;                              \
		c.field = value;                                              \
		why[0] = 0;                                                   \
		ck_assert_int_eq(ctx_try(sim, &c, why, sizeof(why)), -EINVAL); \
		ck_assert_msg(has(why, msg), "%s: %.200s", #field, why);      \
	} while (0)
	REFUSED(nodes, 0, "node 0 of 0 nodes");
	REFUSED(node_id, 2, "node 2 of 2 nodes");
	REFUSED(rows, 0, "rows 0, row_bytes 64");
	REFUSED(row_bytes, 0, "row_bytes 0");
	REFUSED(replicated_rows, 1001, "replicated_rows 1001");
	REFUSED(rows, 1ull << 62, "exceeds the device's max_mr_size");
	REFUSED(post_list, G_MAX_POST_LIST + 1, "post_list 4097 (at most 4096)");
	REFUSED(qps_per_peer, 1025, "qps_per_peer 1025");
	REFUSED(window, 1025, "window 1025");
	REFUSED(window, 1024, "send-queue slots, the device has max_qp_wr");
	REFUSED(qp_retry_cnt, 8, "qp_retry_cnt 8");
	REFUSED(qp_timeout, 32, "qp_timeout 32");
	/* A node whose range is empty has nothing to serve. */
	{
		struct tv_gather_config c = cfg;

		c.rows = 1;
		c.replicated_rows = 0;
		ck_assert_int_eq(ctx_try(sim, &c, why, sizeof(why)), -EINVAL);
		ck_assert_str_eq(why, "node 0 has no rows to serve");
	}
	/* Without room for the message, still refused. */
	{
		struct tv_gather_config c = cfg;

		c.nodes = 0;
		ck_assert_int_eq(ctx_try(sim, &c, NULL, 0), -EINVAL);
	}
#undef REFUSED
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* Zeros take the defaults; the connect configuration is copied. */
START_TEST(test_config_defaults)
{
	struct tv_sim *sim = sim_new(2);
	struct tv_gather_config cfg;
	struct tv_vf_connect_cfg cc;
	const struct tv_gather_config *got;
	struct tv_gather_ctx *ctx;
	struct tv_gather_stats st;
	static uint8_t part[64 * 1000];

	cfg2(&cfg);
	cfg.qps_per_peer = cfg.post_list = cfg.window = 0;
	cfg.staging_bytes = cfg.reconnect_backoff_ns = 0;
	tv_vf_connect_cfg_default(&cc);
	cc.sl = 2;
	cfg.connect = &cc;
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), &cfg, part,
					      NULL, 0, &ctx), 0);
	got = tv_gather_ctx_config(ctx);
	ck_assert_uint_eq(got->qps_per_peer, 8);
	ck_assert_uint_eq(got->post_list, 128);
	ck_assert_uint_eq(got->window, 2);
	ck_assert_uint_eq(got->staging_bytes, 4u << 20);
	ck_assert_uint_eq(got->reconnect_backoff_ns, 100000);
	ck_assert_ptr_null(got->connect);
	ck_assert_uint_eq(ctx->conn.sl, 2);
	ck_assert_uint_eq(ctx->conn.timeout, cfg.qp_timeout);
	ck_assert_int_eq(tv_gather_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tv_gather_ctx_destroy(NULL), 0);
	/* Staging: at least one post list, at most 65536 of them. */
	cfg2(&cfg);
	cfg.staging_bytes = 1;
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), &cfg, part,
					      NULL, 0, &ctx), 0);
	tv_gather_stats(ctx, &st);
	ck_assert_uint_eq(st.staging_bytes, 16 * 64);
	ck_assert_int_eq(tv_gather_ctx_destroy(ctx), 0);
	cfg.post_list = 1;
	cfg.row_bytes = 8;
	cfg.staging_bytes = 8 * 65537;
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), &cfg, part,
					      NULL, 0, &ctx), 0);
	tv_gather_stats(ctx, &st);
	ck_assert_uint_eq(st.staging_bytes, 8 * 65536);
	ck_assert_int_eq(tv_gather_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
	/* The aliasing design's deeper queues, where the device has them. */
	{
		struct tv_sim_config sc;

		tv_sim_config_default(&sc);
		sc.num_nodes = 2;
		sc.max_qp_wr = 32;
		ck_assert_int_eq(tv_sim_create(&sc, &sim), 0);
	}
	cfg2(&cfg);
	cfg.test_breakage = TV_GATHER_BREAK_SIGNAL_ALIASING;
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), &cfg, part,
					      NULL, 0, &ctx), 0);
	tv_gather_stats(ctx, &st);
	ck_assert_uint_eq(st.sq_depth, 32); /* not 4 x 32 */
	ck_assert_int_eq(tv_gather_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* Each device call of a context's creation fails in turn: the error
 * comes back with a message, and the simulator finds nothing leaked. */
START_TEST(test_create_device_failures)
{
	struct tv_sim *sim = sim_new(2);
	struct tv_vf_device *dev = tv_sim_device(sim, 0);
	struct tv_gather_config cfg;
	char why[256];
	int *const points[] = {
		&vfd.fail_nth.alloc_pd,  &vfd.fail_nth.create_cq,
		&vfd.fail_nth.create_cq, &vfd.fail_nth.reg_mr,
		&vfd.fail_nth.reg_mr,    &vfd.fail_nth.create_qp,
		&vfd.fail_nth.create_qp, &vfd.fail_nth.create_qp
	};
	const int nth[] = { 1, 1, 2, 1, 2, 1, 2, 4 };

	cfg2(&cfg);
	vfd_hook(dev);
	vfd.fail_nth.query_device = 1;
	why[0] = 0;
	ck_assert_int_eq(ctx_try(sim, &cfg, why, sizeof(why)), -ENOMEM);
	ck_assert_str_eq(why, ""); /* not a configuration's fault */
	for (size_t i = 0; i < sizeof(nth) / sizeof(nth[0]); i++) {
		*points[i] = nth[i];
		why[0] = 0;
		ck_assert_int_eq(ctx_try(sim, &cfg, why, sizeof(why)), -ENOMEM);
		ck_assert_msg(!strcmp(why, "device objects: Cannot allocate "
				      "memory"), "%zu: %.200s", i, why);
		ck_assert_int_eq(*points[i], 0); /* it did fire */
	}
	/* A device's -EINVAL is passed on as it is: no message of ours. */
	vfd.fail_err = -EINVAL;
	vfd.fail_nth.create_cq = 1;
	why[0] = 0;
	ck_assert_int_eq(ctx_try(sim, &cfg, why, sizeof(why)), -EINVAL);
	ck_assert_str_eq(why, "");
	vfd.fail_err = -ENOMEM;
	ck_assert_int_eq(ctx_try(sim, &cfg, why, sizeof(why)), 0);
	vfd_unhook(dev);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* The device's READ depths: above 255 clamped, 0 taken as 1, the
 * requester's own limit missing (the responder's stands for it). */
START_TEST(test_rd_atomic_limits)
{
	struct tv_sim *sim = sim_new(2);
	struct tv_gather_config cfg;
	struct tv_gather_ctx *ctx;
	struct tv_gather_part_handle h;
	struct tv_vf_qp_endpoint ep;
	static uint8_t part[64 * 1000];

	cfg2(&cfg);
	vfd_hook(tv_sim_device(sim, 0));
	vfd.tweak_rd = true;
	vfd.rd_atom = 300;
	vfd.init_rd_atom = 0;
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), &cfg, part,
					      NULL, 0, &ctx), 0);
	ck_assert_uint_eq(ctx->max_dest_rd_atomic, 255);
	/* A handle says what the server takes: 255 here, so the client asks
	 * for 255 (the device's 300, clamped), which the simulator refuses:
	 * the message names what was asked. */
	h = (struct tv_gather_part_handle){ .node = 1, .row_bytes = 64,
					    .replicated_rows = 10, .addr = 4096,
					    .rkey = 1, .max_dest_rd_atomic = 255 };
	tv_gather_range(tv_gather_ctx_config(ctx), 1, &h.first, &h.end);
	ck_assert_int_eq(tv_gather_set_peer(ctx, &h), 0);
	ck_assert_int_eq(tv_gather_qp_endpoint(ctx, 1, 0, TV_GATHER_CLIENT,
					       &ep), 0);
	ck_assert_int_ne(tv_gather_qp_connect(ctx, 1, 0, TV_GATHER_CLIENT, &ep),
			 0);
	ck_assert_msg(has(tv_gather_error(ctx), "connecting client QP 0 of peer "
			  "1 (max_rd_atomic 255, max_dest_rd_atomic 1; the "
			  "device allows 0 and 300)"),
		      "%.200s", tv_gather_error(ctx));
	ck_assert_uint_eq(tv_gather_qp_rd_atomic(ctx, 1, 0), 0);
	ck_assert_int_eq(tv_gather_ctx_destroy(ctx), 0);
	vfd.rd_atom = 0;
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), &cfg, part,
					      NULL, 0, &ctx), 0);
	ck_assert_uint_eq(ctx->max_dest_rd_atomic, 1);
	/* A device that says 0 for both: the client asks for 1. */
	ck_assert_int_eq(tv_gather_set_peer(ctx, &h), 0);
	ck_assert_int_eq(tv_gather_qp_endpoint(ctx, 1, 0, TV_GATHER_CLIENT,
					       &ep), 0);
	vfd.fail_nth.modify_qp = 1; /* so that it fails, naming what it asked */
	ck_assert_int_eq(tv_gather_qp_connect(ctx, 1, 0, TV_GATHER_CLIENT, &ep),
			 -ENOMEM);
	ck_assert_msg(has(tv_gather_error(ctx), "(max_rd_atomic 1, "),
		      "%.200s", tv_gather_error(ctx));
	ck_assert_int_eq(tv_gather_ctx_destroy(ctx), 0);
	/* quiver PR #26: 16 accepted, the device's whole limit asked. */
	vfd.rd_atom = 300;
	vfd.init_rd_atom = 300;
	cfg.test_breakage = TV_GATHER_BREAK_RD_ATOMIC;
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), &cfg, part,
					      NULL, 0, &ctx), 0);
	ck_assert_uint_eq(ctx->max_dest_rd_atomic, 16);
	h.max_dest_rd_atomic = 16;
	ck_assert_int_eq(tv_gather_set_peer(ctx, &h), 0);
	ck_assert_int_eq(tv_gather_qp_endpoint(ctx, 1, 0, TV_GATHER_CLIENT,
					       &ep), 0);
	ck_assert_int_ne(tv_gather_qp_connect(ctx, 1, 0, TV_GATHER_CLIENT, &ep),
			 0);
	ck_assert_msg(has(tv_gather_error(ctx), "(max_rd_atomic 255, "),
		      "%.200s", tv_gather_error(ctx));
	ck_assert_int_eq(tv_gather_ctx_destroy(ctx), 0);
	vfd.tweak_rd = false;
	vfd_unhook(tv_sim_device(sim, 0));
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* ---- QPs: arguments and failures -------------------------------------------- */

START_TEST(test_qp_arguments)
{
	struct tv_sim *sim = sim_new(3);
	struct tv_gather_config cfg;
	struct tv_gather_ctx *ctx;
	struct tv_vf_qp_endpoint ep = { 0 };
	struct tv_vf_qp *before;
	static uint8_t part[64 * 1000];

	gfix_config(&cfg);
	cfg.nodes = 3;
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 0), &cfg, part,
					      NULL, 0, &ctx), 0);
	ck_assert_int_eq(tv_gather_qp_endpoint(ctx, 3, 0, TV_GATHER_CLIENT,
					       &ep), -EINVAL);
	ck_assert_int_eq(tv_gather_qp_endpoint(ctx, 0, 0, TV_GATHER_CLIENT,
					       &ep), -EINVAL);
	ck_assert_int_eq(tv_gather_qp_endpoint(ctx, 1, 4, TV_GATHER_CLIENT,
					       &ep), -EINVAL);
	ck_assert_int_eq(tv_gather_qp_endpoint(ctx, 1, 0,
					       (enum tv_gather_role)2, &ep),
			 -EINVAL);
	ck_assert_int_eq(tv_gather_qp_connect(ctx, 3, 0, TV_GATHER_SERVER, &ep),
			 -EINVAL);
	ck_assert_int_eq(tv_gather_qp_reset(ctx, 1, 4, TV_GATHER_SERVER),
			 -EINVAL);
	ck_assert_uint_eq(tv_gather_qp_rd_atomic(ctx, 3, 0), 0);
	/* A client QP before its server's handle: nothing to negotiate. */
	ck_assert_int_eq(tv_gather_qp_connect(ctx, 1, 0, TV_GATHER_CLIENT, &ep),
			 -ENOTCONN);
	/* The device refuses: the error, and a message naming the QP. */
	vfd_hook(tv_sim_device(sim, 0));
	vfd.fail_nth.qp_endpoint = 1;
	ck_assert_int_eq(tv_gather_qp_connect(ctx, 2, 1, TV_GATHER_SERVER, &ep),
			 -ENOMEM);
	ck_assert_msg(has(tv_gather_error(ctx), "connecting server QP 1 of peer "
			  "2"), "%.200s", tv_gather_error(ctx));
	vfd.fail_nth.modify_qp = 1;
	ck_assert_int_eq(tv_gather_qp_connect(ctx, 2, 1, TV_GATHER_SERVER, &ep),
			 -ENOMEM);
	/* A reset that cannot make the new QP keeps the old one. */
	before = ctx->peers[1].cli[2].qp;
	vfd.fail_nth.create_qp = 1;
	ck_assert_int_eq(tv_gather_qp_reset(ctx, 1, 2, TV_GATHER_CLIENT),
			 -ENOMEM);
	ck_assert_ptr_eq(ctx->peers[1].cli[2].qp, before);
	ck_assert_int_eq(tv_gather_qp_reset(ctx, 1, 2, TV_GATHER_CLIENT), 0);
	ck_assert_ptr_ne(ctx->peers[1].cli[2].qp, before);
	vfd_unhook(tv_sim_device(sim, 0));
	ck_assert_int_eq(tv_gather_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* ---- handles ------------------------------------------------------------------ */

static int decode_with(const uint8_t *good, size_t off, const void *val,
		       size_t len)
{
	uint8_t b[TV_GATHER_HANDLE_BYTES];
	struct tv_gather_part_handle h;

	memcpy(b, good, sizeof(b));
	memcpy(b + off, val, len);
	return tv_gather_handle_decode(b, sizeof(b), &h);
}

START_TEST(test_handle_lies)
{
	struct tv_gather_config cfg;
	struct gworld w;
	struct tv_gather_part_handle h, d;
	uint8_t buf[TV_GATHER_HANDLE_BYTES];
	uint64_t zero = 0, big = 600;
	uint32_t zero32 = 0;
	uint8_t z = 0, x = 9;

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	tv_gather_part_handle(w.ctx[1], &h);
	ck_assert_int_eq(tv_gather_handle_encode(&h, buf, sizeof(buf) - 1),
			 -ENOSPC);
	ck_assert_int_eq(tv_gather_handle_encode(&h, buf, sizeof(buf)), 0);
	ck_assert_int_eq(tv_gather_handle_decode(NULL, sizeof(buf), &d),
			 -EPROTO);
	ck_assert_int_eq(decode_with(buf, 4, &x, 1), -EPROTO);  /* version */
	ck_assert_int_eq(decode_with(buf, 7, &x, 1), -EPROTO);  /* zero byte */
	ck_assert_int_eq(decode_with(buf, 52, &x, 1), -EPROTO); /* zero word */
	ck_assert_int_eq(decode_with(buf, 6, &z, 1), -EPROTO);  /* rd depth */
	ck_assert_int_eq(decode_with(buf, 12, &zero32, 4), -EPROTO); /* rows */
	{
		uint64_t first = 1001, end = 10; /* first > end */

		ck_assert_int_eq(decode_with(buf, 16, &first, 8), -EPROTO);
		ck_assert_int_eq(decode_with(buf, 24, &end, 8), -EPROTO);
	}
	/* More replicated rows than the range's first id. */
	ck_assert_int_eq(decode_with(buf, 32, &big, 8), -EPROTO);
	{
		/* Nothing at all: no replicated rows and an empty range. */
		uint8_t b[TV_GATHER_HANDLE_BYTES];
		uint64_t first;

		memcpy(b, buf, sizeof(b));
		memcpy(b + 32, &zero, 8);
		memcpy(&first, b + 16, 8);
		memcpy(b + 24, &first, 8);
		ck_assert_int_eq(tv_gather_handle_decode(b, sizeof(b), &d),
				 -EPROTO);
	}
	/* Decodable, but not what the configuration says. */
	d = h;
	d.row_bytes = 32;
	ck_assert_int_eq(tv_gather_set_peer(w.ctx[0], &d), -EPROTO);
	d = h;
	d.replicated_rows = 11;
	ck_assert_int_eq(tv_gather_set_peer(w.ctx[0], &d), -EPROTO);
	d = h;
	d.first += 1;
	ck_assert_int_eq(tv_gather_set_peer(w.ctx[0], &d), -EPROTO);
	d = h;
	d.node = 2;
	ck_assert_int_eq(tv_gather_set_peer(w.ctx[0], &d), -EPROTO);
	ck_assert_msg(has(tv_gather_error(w.ctx[0]), "a handle of node 2: not "
			  "a peer of node 0"), "%.200s",
		      tv_gather_error(w.ctx[0]));
	gfix_fini(&w);
}
END_TEST

/* A re-registration the device refuses leaves the old one in place. */
START_TEST(test_reregister_refused)
{
	struct tv_gather_config cfg;
	struct gworld w;
	struct tv_gather_part_handle a, b;
	uint64_t *ids = remote_ids(100, 3);
	uint8_t *out = calloc(100, 64);

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	tv_gather_part_handle(w.ctx[1], &a);
	tv_sim_fail_reg_mr(w.sim, 1, 1, -ENOSPC);
	ck_assert_int_eq(tv_gather_reregister(w.ctx[1]), -ENOSPC);
	tv_gather_part_handle(w.ctx[1], &b);
	ck_assert_uint_eq(a.rkey, b.rkey);
	gather_right(&w, 0, ids, 100, out); /* the old key still reads */
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* ---- gathers: arguments and states ----------------------------------------- */

START_TEST(test_start_states)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t *ids = remote_ids(200, 5);
	uint8_t *out = calloc(64, 64), *big = calloc(512, 64);
	uint8_t *reg = big + 128 * 64;
	const struct tv_gather_result *res = NULL;
	uint64_t bad_id = 1000;
	size_t bad = 77;

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	ck_assert_int_eq(tv_gather_test(w.ctx[0], &res), -ENOENT);
	ck_assert_int_eq(tv_gather_start(w.ctx[0], NULL, 1, out, 0, NULL),
			 -EINVAL);
	ck_assert_int_eq(tv_gather_start(w.ctx[0], ids, 1, NULL, 0, NULL),
			 -EINVAL);
	ck_assert_int_eq(tv_gather_start(w.ctx[0], ids,
					 (size_t)G_MAX_ROWS + 1, out, 0, NULL),
			 -EINVAL);
	ck_assert_msg(has(tv_gather_error(w.ctx[0]), "at most 4294967295"),
		      "%.200s", tv_gather_error(w.ctx[0]));
	ck_assert_int_eq(tv_gather_start(w.ctx[0], &bad_id, 1, out, 0, NULL),
			 -ERANGE);
	ck_assert_int_eq(tv_gather_start(w.ctx[0], &bad_id, 1, out, 0, &bad),
			 -ERANGE);
	ck_assert_uint_eq(bad, 0);
	/* Nothing to gather: it ends at once, right.  (Regression: on a
	 * context that never gathered, this sorted a NULL array of no rows,
	 * which UBSan stops in the sanitizer build.) */
	ck_assert_int_eq(tv_gather_start(w.ctx[0], NULL, 0, NULL, 0, NULL), 0);
	ck_assert_int_eq(tv_gather_test(w.ctx[0], &res), 0);
	ck_assert_uint_eq(res->rows, 0);
	/* Nothing remote: it ends at once too (the result may be ignored). */
	{
		uint64_t mine[3] = { 3, 10, 504 };

		ck_assert_int_eq(tv_gather_start(w.ctx[0], mine, 3, out, 0,
						 NULL), 0);
		ck_assert_int_eq(tv_gather_test(w.ctx[0], NULL), 0);
		ck_assert_int_eq(tv_gather_test(w.ctx[0], NULL), -ENOENT);
		ck_assert_int_lt(gfix_check(mine, 3, out, 64), 0);
	}
	/* Registration of the output: arguments, twice, during a gather. */
	ck_assert_int_eq(tv_gather_out_register(w.ctx[0], NULL, 64), -EINVAL);
	ck_assert_int_eq(tv_gather_out_register(w.ctx[0], reg, 0), -EINVAL);
	ck_assert_int_eq(tv_gather_out_deregister(w.ctx[0]), 0); /* none */
	tv_sim_fail_reg_mr(w.sim, 0, 1, -EFAULT);
	ck_assert_int_eq(tv_gather_out_register(w.ctx[0], reg, 128 * 64),
			 -EFAULT);
	ck_assert_int_eq(tv_gather_out_register(w.ctx[0], reg, 128 * 64), 0);
	ck_assert_int_eq(tv_gather_out_register(w.ctx[0], reg, 128 * 64),
			 -EBUSY);
	/* out inside the registered buffer, but past its end: staged. */
	ck_assert_int_eq(tv_gather_start(w.ctx[0], ids, 64, reg + 65 * 64,
					 T_SECOND * 10, NULL), 0);
	ck_assert(!w.ctx[0]->op.direct);
	ck_assert_int_eq(tv_gather_start(w.ctx[0], ids, 64, out, 0, NULL),
			 -EBUSY);
	ck_assert_int_eq(tv_gather_test(w.ctx[0], &res), -EAGAIN);
	ck_assert_int_eq(tv_gather_out_deregister(w.ctx[0]), -EBUSY);
	ck_assert_int_eq(tv_gather_out_register(w.ctx[0], out, 64), -EBUSY);
	ck_assert_int_eq(tv_gather_ctx_destroy(w.ctx[0]), -EBUSY);
	res = step_until_done(&w);
	ck_assert_uint_eq(res->failed_rows, 0);
	ck_assert_int_lt(gfix_check(ids, 64, reg + 65 * 64, 64), 0);
	/* Before the registered buffer, or more than it holds: staged. */
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 64, big, T_SECOND, &res), 0);
	ck_assert(!w.ctx[0]->op.direct);
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 200, reg, T_SECOND, &res), 0);
	ck_assert(!w.ctx[0]->op.direct);
	ck_assert_int_lt(gfix_check(ids, 200, reg, 64), 0);
	/* Inside it: the READs land there. */
	memset(reg, 0, 128 * 64);
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 128, reg, T_SECOND, &res), 0);
	ck_assert(w.ctx[0]->op.direct);
	ck_assert_int_lt(gfix_check(ids, 128, reg, 64), 0);
	/* The device refuses to deregister: it stays registered. */
	vfd_hook(w.ctx[0]->dev);
	vfd.fail_nth.dereg_mr = 1;
	ck_assert_int_eq(tv_gather_out_deregister(w.ctx[0]), -ENOMEM);
	vfd_unhook(w.ctx[0]->dev);
	ck_assert_ptr_nonnull(w.ctx[0]->out_mr);
	ck_assert_int_eq(tv_gather_out_deregister(w.ctx[0]), 0);
	free(ids);
	free(out);
	free(big);
	gfix_fini(&w);
}
END_TEST

/* ---- gathers: the device misbehaves ------------------------------------------ */

/* post_send refuses part of a list: the QP goes to ERR, the list is read
 * again elsewhere, the flushes of what was taken are not its any more. */
static void post_refused(int bad_at)
{
	struct tv_gather_config cfg;
	struct tv_gather_stats st;
	struct gworld w;
	uint64_t *ids = remote_ids(200, 7);
	uint8_t *out = calloc(200, 64);

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	vfd_hook(w.ctx[0]->dev);
	vfd.fail_nth.post_send = 2;
	vfd.bad_at = bad_at;
	gather_right(&w, 0, ids, 200, out);
	vfd_unhook(w.ctx[0]->dev);
	tv_gather_stats(w.ctx[0], &st);
	ck_assert_uint_eq(st.post_failures, 1);
	ck_assert_uint_ge(st.retries, 1);
	ck_assert_msg(has(tv_gather_error(w.ctx[0]), "post_send of 16 READs on "
			  "QP 1 to node 1: Cannot allocate memory"), "%.200s",
		      tv_gather_error(w.ctx[0]));
	free(ids);
	free(out);
	gfix_fini(&w);
}

START_TEST(test_post_refused)
{
	post_refused(VFD_BAD_NONE); /* says nothing of where */
	post_refused(0);  /* at the first */
	post_refused(5);  /* five taken */
}
END_TEST

/* poll_cq fails: progress says so, the blocking call returns it; once
 * the CQ answers again the gather ends right. */
START_TEST(test_poll_fails)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t *ids = remote_ids(100, 9);
	uint8_t *out = calloc(100, 64);
	const struct tv_gather_result *res;

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	vfd_hook(w.ctx[0]->dev);
	vfd.poll_err = -EIO;
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 100, out, T_SECOND, &res),
			 -EIO);
	ck_assert_str_eq(tv_gather_error(w.ctx[0]),
			 "poll_cq: Input/output error");
	vfd.poll_err = 0;
	vfd_unhook(w.ctx[0]->dev);
	ck_assert_int_eq(tv_gather_test(w.ctx[0], &res), -EAGAIN);
	/* Still running: no output registration now. */
	ck_assert_int_eq(tv_gather_out_register(w.ctx[0], out, 100 * 64),
			 -EBUSY);
	res = step_until_done(&w);
	ck_assert_uint_eq(res->failed_rows, 0);
	ck_assert_int_lt(gfix_check(ids, 100, out, 64), 0);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

START_TEST(test_wait_interrupted)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t *ids = remote_ids(100, 9);
	uint8_t *out = calloc(100, 64);
	const struct tv_gather_result *res;

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	vfd_hook(w.ctx[0]->dev);
	vfd.fail_nth.wait = 1;
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 100, out, T_SECOND, &res),
			 -EINTR);
	vfd_unhook(w.ctx[0]->dev);
	ck_assert_int_eq(tv_gather_test(w.ctx[0], &res), -EAGAIN);
	res = step_until_done(&w);
	ck_assert_uint_eq(res->failed_rows, 0);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/*
 * Completions that never come, with no deadline: when the world has
 * nothing left to do the blocking call expires the gather itself, and
 * when even the flushes do not come it drops the lists: it returns, with
 * every remote row named (-ETIMEDOUT).
 */
START_TEST(test_world_runs_dry)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t *ids = remote_ids(100, 11);
	uint8_t *out = calloc(100, 64);
	const struct tv_gather_result *res = NULL;

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	vfd_hook(w.ctx[0]->dev);
	vfd.swallow = true;
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 100, out, 0, &res), -EIO);
	vfd.swallow = false;
	vfd_unhook(w.ctx[0]->dev);
	ck_assert_uint_eq(res->failed_rows, 100);
	for (size_t i = 0; i < res->failed_rows; i++)
		ck_assert_int_eq(res->errors[i].cause, -ETIMEDOUT);
	ck_assert_msg(has(tv_gather_error(w.ctx[0]), "the deadline passed"),
		      "%.200s", tv_gather_error(w.ctx[0]));
	/* What the CQ held is stale now: polled and ignored. */
	ck_assert_int_gt(tv_gather_progress(w.ctx[0]), 0);
	ck_assert_int_eq(tv_gather_test(w.ctx[0], &res), -ENOENT);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* ---- reconnects that do not reconnect ---------------------------------------- */

static uint32_t lazy_calls;

/* Says 0 but leaves the QP down the first time. */
static int lazy_reconnect(void *arg, struct tv_gather_ctx *g, uint32_t peer,
			  uint32_t qp)
{
	struct gworld *w = arg;

	if (lazy_calls++ == 0)
		return 0;
	return gfix_reconnect(w, tv_gather_ctx_config(g)->node_id, peer, qp);
}

START_TEST(test_reconnect_says_done_but_is_not)
{
	struct tv_gather_config cfg;
	struct gworld w;
	struct tv_gather_stats st;
	uint64_t *ids = remote_ids(200, 13);
	uint8_t *out = calloc(200, 64);
	const struct tv_gather_result *res = NULL;
	uint32_t calls;

	gfix_config(&cfg);
	cfg.qps_per_peer = 1;
	cfg.reconnect_backoff_ns = 20000;
	gfix_init(&w, 2, &cfg, NULL);
	w.ctx[0]->cfg.reconnect = lazy_reconnect;
	ck_assert_int_eq(tv_gather_reregister(w.ctx[1]), 0);
	ck_assert_int_eq(tv_gather_start(w.ctx[0], ids, 200, out, 0, NULL), 0);
	while (tv_gather_test(w.ctx[0], &res) == -EAGAIN) {
		ck_assert_int_ge(tv_sim_step(w.sim), 0);
		ck_assert_int_ge(tv_gather_progress(w.ctx[0]), 0);
		/* Again at once: a QP in its back-off is not asked again. */
		calls = lazy_calls;
		ck_assert_int_ge(tv_gather_progress(w.ctx[0]), 0);
		if (calls == 1)
			ck_assert_uint_eq(lazy_calls, 1);
	}
	ck_assert_uint_eq(res->failed_rows, 0);
	ck_assert_int_lt(gfix_check(ids, 200, out, 64), 0);
	ck_assert_uint_eq(lazy_calls, 2);
	tv_gather_stats(w.ctx[0], &st);
	ck_assert_uint_eq(st.reconnects, 1);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* No reconnect at all: the failed QP stays down and its lists go to the
 * peer's other QPs; with none left, the rows fail naming the cause. */
START_TEST(test_no_reconnect_callback)
{
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t *ids = remote_ids(200, 15);
	uint8_t *out = calloc(200, 64);
	const struct tv_gather_result *res = NULL;

	gfix_config(&cfg);
	cfg.qps_per_peer = 2;
	gfix_init(&w, 2, &cfg, NULL);
	w.ctx[0]->cfg.reconnect = NULL;
	ck_assert_int_eq(tv_gather_reregister(w.ctx[1]), 0);
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 200, out, T_SECOND, &res),
			 -EIO);
	ck_assert_uint_eq(res->failed_rows, 200);
	ck_assert_int_eq(w.ctx[0]->peers[1].cli[0].state, GQ_DEAD);
	ck_assert_int_eq(w.ctx[0]->peers[1].cli[1].state, GQ_DEAD);
	ck_assert_msg(has(tv_gather_error(w.ctx[0]), "stays down: reconnect: "),
		      "%.200s", tv_gather_error(w.ctx[0]));
	/* A dead peer: the next gather fails at once, -EHOSTDOWN. */
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 1, out, T_SECOND, &res),
			 -EIO);
	ck_assert_int_eq(res->errors[0].status, -EHOSTDOWN);
	ck_assert_int_eq(res->errors[0].cause, TV_WC_REM_ACCESS_ERR);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* A client that never got the server's handle: its rows fail at once. */
START_TEST(test_peer_without_handle)
{
	struct tv_sim *sim = sim_new(2);
	struct tv_gather_config cfg;
	struct tv_gather_ctx *ctx;
	const struct tv_gather_result *res = NULL;
	static uint8_t part[64 * 1000];
	uint64_t ids[3] = { 20, 1, 700 };
	uint8_t out[3 * 64];

	cfg2(&cfg);
	cfg.node_id = 1; /* rows [505, 1000) are ours; [10, 505) node 0's */
	ck_assert_int_eq(tv_gather_ctx_create(tv_sim_device(sim, 1), &cfg, part,
					      NULL, 0, &ctx), 0);
	ck_assert_int_eq(tv_gather(ctx, ids, 3, out, T_SECOND, &res), -EIO);
	ck_assert_uint_eq(res->failed_rows, 1);
	ck_assert_uint_eq(res->errors[0].index, 0);
	ck_assert_int_eq(res->errors[0].cause, -ENOTCONN);
	ck_assert_uint_eq(res->replicated_rows, 1);
	ck_assert_uint_eq(res->local_rows, 1);
	ck_assert_int_eq(tv_gather_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST


/* ---- quiver's hazards, and a host that resets a busy QP ----------------------- */

/* Errors printed and counted as done: the gather says ok, rows are wrong. */
START_TEST(test_ignore_errors_breakage)
{
	struct tv_gather_config cfg;
	struct tv_gather_stats st;
	struct gworld w;
	uint64_t *ids = remote_ids(64, 21);
	uint8_t *out = calloc(64, 64);
	const struct tv_gather_result *res = NULL;

	gfix_config(&cfg);
	cfg.test_breakage = TV_GATHER_BREAK_IGNORE_ERRORS;
	gfix_init(&w, 2, &cfg, NULL);
	ck_assert_int_eq(tv_gather_reregister(w.ctx[1]), 0);
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 64, out, T_SECOND, &res), 0);
	ck_assert_uint_eq(res->failed_rows, 0);
	tv_gather_stats(w.ctx[0], &st);
	ck_assert_uint_gt(st.error_cqes, 0);
	ck_assert_int_ge(gfix_check(ids, 64, out, 64), 0); /* a wrong row */
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* Only the last QP's lists signal; one completion stands for its round
 * (deeper send queues, as quiver's): lists of the other QPs are taken as
 * done before their READs landed, and their staged rows copied out too
 * early.  The gather says ok; a row is wrong. */
START_TEST(test_signal_aliasing_breakage)
{
	struct tv_gather_config cfg;
	struct tv_gather_stats st;
	struct gworld w;
	uint64_t *ids = remote_ids(200, 23);
	uint8_t *out = calloc(200, 64);
	const struct tv_gather_result *res = NULL;

	gfix_config(&cfg);
	cfg.test_breakage = TV_GATHER_BREAK_SIGNAL_ALIASING;
	cfg.staging_bytes = 200 * 64;
	gfix_init(&w, 2, &cfg, NULL);
	tv_gather_stats(w.ctx[0], &st);
	ck_assert_uint_eq(st.sq_depth, 4 * 16 * 2);
	ck_assert_int_eq(tv_gather(w.ctx[0], ids, 200, out, T_SECOND, &res), 0);
	ck_assert_uint_eq(res->failed_rows, 0);
	ck_assert_int_ge(gfix_check(ids, 200, out, 64), 0);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* The host resets a client QP whose lists are in flight: they are
 * accounted for (-ECONNRESET) and read again; every row right. */
START_TEST(test_reset_busy_qp)
{
	struct tv_gather_config cfg;
	struct tv_gather_stats st;
	struct gworld w;
	uint64_t *ids = remote_ids(100, 25);
	uint8_t *out = calloc(100, 64);
	const struct tv_gather_result *res = NULL;
	uint32_t k;

	gfix_config(&cfg);
	cfg.staging_bytes = 100 * 64;
	gfix_init(&w, 2, &cfg, NULL);
	ck_assert_int_eq(tv_gather_start(w.ctx[0], ids, 100, out, 0, NULL), 0);
	for (k = 0; k < 4 && !w.ctx[0]->peers[1].cli[k].inflight; k++)
		;
	ck_assert_uint_lt(k, 4);
	ck_assert_int_eq(gfix_reconnect(&w, 0, 1, k), 0);
	ck_assert_uint_eq(w.ctx[0]->peers[1].cli[k].inflight, 0);
	res = step_until_done(&w);
	ck_assert_uint_eq(res->failed_rows, 0);
	ck_assert_uint_ge(res->retries, 1);
	ck_assert_int_lt(gfix_check(ids, 100, out, 64), 0);
	tv_gather_stats(w.ctx[0], &st);
	ck_assert_uint_ge(st.retries, 1);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* A device with a small max_cqe: the shared CQ is what it allows. */
START_TEST(test_cq_clamped)
{
	struct tv_gather_config cfg;
	struct tv_sim_config sc;
	struct gworld w;
	uint64_t *ids = remote_ids(100, 27);
	uint8_t *out = calloc(100, 64);

	gfix_config(&cfg);
	tv_sim_config_default(&sc);
	sc.num_nodes = 2;
	sc.max_cqe = 64; /* 4 QPs x 32 slots + 16 would be 144 */
	cfg.sort_ids = true;
	gfix_init(&w, 2, &cfg, &sc);
	ids[7] = ids[3]; /* a duplicate: sorted by id, then position */
	ck_assert_uint_eq(w.ctx[0]->cq_size, 64);
	gather_right(&w, 0, ids, 100, out);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* ---- the CQ rebuilt after an overflow, when the device refuses ---------------- */

/*
 * Regression: a rebuild that could not make one of the new QPs used to
 * leave the old CQ behind (ctx->cq already the new one, the old one
 * forgotten while QPs still used it): a leak at destroy, and lists on
 * the QPs not replaced waiting on a CQ nobody polls.  Now the rebuild is
 * all or nothing: the next progress tries again.
 */
static void rebuild_refused(int *point, int nth)
{
	struct tv_vf_cq *old_cq;
	uint32_t turns = 0;
	struct tv_gather_config cfg;
	struct gworld w;
	uint64_t *ids = remote_ids(300, 17);
	uint8_t *out = calloc(300, 64);
	const struct tv_gather_result *res = NULL;
	int ret, fails = 0;

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	ck_assert_int_eq(fiu_init(0), 0);
	ck_assert_int_eq(fiu_enable("sim/cq/overflow", 1, NULL, FIU_ONETIME),
			 0);
	ck_assert_int_eq(tv_gather_start(w.ctx[0], ids, 300, out,
					 tv_sim_now_ns(w.sim) + T_SECOND, NULL),
			 0);
	old_cq = w.ctx[0]->cq;
	vfd_hook(w.ctx[0]->dev);
	if (point)
		*point = nth;
	while ((ret = tv_gather_test(w.ctx[0], &res)) == -EAGAIN) {
		int r;

		ck_assert_int_ge(tv_sim_step(w.sim), 0);
		ck_assert_msg(++turns < 200000, "the gather never ends");
		/* No device refusal: its own array for the new QPs fails. */
		if (!point && !fails &&
		    tv_vf_poll_cq(w.ctx[0]->cq, 0, NULL) == -EOVERFLOW)
			oom_arm(0);
		r = tv_gather_progress(w.ctx[0]);
		oom_disarm();
		if (r < 0) {
			/* Refused: nothing changed; the host calls again. */
			ck_assert_int_eq(r, -ENOMEM);
			ck_assert_ptr_eq(w.ctx[0]->cq, old_cq);
			fails++;
			ck_assert_int_ge(tv_gather_progress(w.ctx[0]), 0);
			ck_assert_ptr_ne(w.ctx[0]->cq, old_cq);
		}
	}
	vfd_unhook(w.ctx[0]->dev);
	fiu_disable("sim/cq/overflow");
	ck_assert_int_eq(fails, 1);
	ck_assert_msg(ret == 0, "%d: %zu failed, status %d cause %d "
		      "attempts %u: %.200s", ret, res->failed_rows,
		      res->failed_rows ? res->errors[0].status : 0,
		      res->failed_rows ? res->errors[0].cause : 0,
		      res->failed_rows ? res->errors[0].attempts : 0,
		      tv_gather_error(w.ctx[0]));
	ck_assert_int_lt(gfix_check(ids, 300, out, 64), 0);
	free(ids);
	free(out);
	gfix_fini(&w); /* the simulator counts what was leaked: nothing */
}

START_TEST(test_cq_rebuild_refused)
{
	/* The new CQ; the first new QP; the third; the array for them. */
	int *const point[] = { &vfd.fail_nth.create_cq,
			       &vfd.fail_nth.create_qp,
			       &vfd.fail_nth.create_qp, NULL };
	const int nth[] = { 1, 1, 3, 0 };

	rebuild_refused(point[_i], nth[_i]);
}
END_TEST


/* ---- every allocation fails in turn ------------------------------------------ */

START_TEST(test_allocations_fail)
{
	struct tv_gather_config cfg;
	struct tv_gather_ctx *ctx = NULL;
	struct gworld w;
	uint64_t *ids = remote_ids(300, 29);
	uint8_t *out = calloc(300, 64);
	const struct tv_gather_result *res = NULL;
	static uint8_t part[64 * 1000];
	char why[128];

	gfix_config(&cfg);
	gfix_init(&w, 2, &cfg, NULL);
	/* A third context on node 0's device: every allocation of it. */
	cfg.nodes = 2;
	OOM_LOOP(tv_gather_ctx_create(tv_sim_device(w.sim, 0), &cfg, part, why,
				      sizeof(why), &ctx));
	ck_assert_int_eq(tv_gather_ctx_destroy(ctx), 0);
	/* Starting a gather: refused cleanly, then it runs right. */
	OOM_LOOP(tv_gather_start(w.ctx[0], ids, 300, out, 0, NULL));
	res = step_until_done(&w);
	ck_assert_uint_eq(res->failed_rows, 0);
	ck_assert_int_lt(gfix_check(ids, 300, out, 64), 0);
	/* A context's first start allocates its rows, its errors, then its
	 * lists: the third refused (the loop above had the earlier ones
	 * succeed and kept them). */
	for (size_t i = 0; i < 300; i++)
		ids[i] -= 495; /* node 0's rows, remote for node 1 */
	oom_arm(2);
	ck_assert_int_eq(tv_gather_start(w.ctx[1], ids, 300, out, 0, NULL),
			 -ENOMEM);
	ck_assert(oom_disarm());
	ck_assert_int_eq(tv_gather_test(w.ctx[1], &res), -ENOENT);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

/* ---- events ------------------------------------------------------------------- */

struct evcount {
	uint32_t n[TV_GATHER_EV_END + 1];
};

static void observe(void *ctx, const struct tv_gather_event *ev)
{
	struct evcount *c = ctx;

	ck_assert_int_le(ev->kind, TV_GATHER_EV_END);
	c->n[ev->kind]++;
}

START_TEST(test_observer)
{
	struct tv_gather_config cfg;
	struct gworld w;
	struct evcount c;
	uint64_t *ids = remote_ids(40, 19);
	uint8_t *out = calloc(40, 64);

	memset(&c, 0, sizeof(c));
	gfix_config(&cfg);
	cfg.observe = observe;
	cfg.observe_ctx = &c;
	gfix_init(&w, 2, &cfg, NULL);
	/* Four client QPs on each of two nodes came up. */
	ck_assert_uint_eq(c.n[TV_GATHER_EV_QP_UP], 8);
	/* Registered, and left so at destroy: destroy deregisters it. */
	ck_assert_int_eq(tv_gather_out_register(w.ctx[0], out, 40 * 64), 0);
	gather_right(&w, 0, ids, 40, out);
	ck_assert_uint_eq(c.n[TV_GATHER_EV_START], 1);
	ck_assert_uint_eq(c.n[TV_GATHER_EV_POST], 3); /* 16 + 16 + 8 */
	ck_assert_uint_eq(c.n[TV_GATHER_EV_LIST_DONE], 3);
	ck_assert_uint_eq(c.n[TV_GATHER_EV_END], 1);
	free(ids);
	free(out);
	gfix_fini(&w);
}
END_TEST

static Suite *edges_suite(void)
{
	Suite *s = suite_create("gather_edges");
	TCase *tc = tcase_create("ctx");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_config_refusals);
	tcase_add_test(tc, test_config_defaults);
	tcase_add_test(tc, test_create_device_failures);
	tcase_add_test(tc, test_rd_atomic_limits);
	tcase_add_test(tc, test_qp_arguments);
	tcase_add_test(tc, test_handle_lies);
	tcase_add_test(tc, test_reregister_refused);
	tcase_add_test(tc, test_allocations_fail);
	suite_add_tcase(s, tc);
	tc = tcase_create("gathers");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_start_states);
	tcase_add_test(tc, test_post_refused);
	tcase_add_test(tc, test_poll_fails);
	tcase_add_test(tc, test_wait_interrupted);
	tcase_add_test(tc, test_world_runs_dry);
	tcase_add_test(tc, test_reconnect_says_done_but_is_not);
	tcase_add_test(tc, test_no_reconnect_callback);
	tcase_add_test(tc, test_peer_without_handle);
	tcase_add_loop_test(tc, test_cq_rebuild_refused, 0, 4);
	tcase_add_test(tc, test_ignore_errors_breakage);
	tcase_add_test(tc, test_signal_aliasing_breakage);
	tcase_add_test(tc, test_reset_busy_qp);
	tcase_add_test(tc, test_cq_clamped);
	tcase_add_test(tc, test_observer);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(edges_suite());
}
