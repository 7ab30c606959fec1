/*
 * The fault layer's error paths and edge cases: the injector's argument
 * checks and its decisions outside a firing, plans that are refused (each
 * with its message), the wrapper's argument checks, failures of the inner
 * device passed through, the points' early outs (short messages, corruption
 * that cannot be made, a duplicate that cannot be posted), completions put
 * receives first, taps without a poll hook, and allocation failures
 * injected into calloc/malloc/realloc (-Wl,--wrap, see CMakeLists.txt).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fiu.h>

#include <tensorverbs/faults.h>
#include <tensorverbs/sim.h>

#include "common/check_main.h"
#include "common/wrap_alloc.h"
#include "flt_priv.h"
#include "wire.h"

/* ---- a wrapped two-node world ------------------------------------------------ */

#define BUFSZ 4096u

struct w {
	struct tv_sim *sim;
	struct tv_flt *flt;
	struct tv_vf_device *dev[2];
	struct tv_vf_pd *pd[2];
	struct tv_vf_cq *cq[2];  /* send and receive CQ of the QP */
	struct tv_vf_qp *qp[2];
	struct tv_vf_mr *mr[2];
	uint8_t *buf[2];
};

static void w_open(struct w *w, const char *plan, uint32_t depth)
{
	struct tv_sim_config sc;
	struct tv_vf_qp_init_attr init = { 0 };
	struct tv_vf_connect_cfg cc;
	struct tv_vf_qp_endpoint ep[2];
	char err[256] = "";

	memset(w, 0, sizeof(*w));
	tv_sim_config_default(&sc);
	sc.seed = 7;
	sc.num_nodes = 2;
	sc.link.latency_ns = 1000;
	sc.link.bytes_per_sec = 1000000000ull;
	ck_assert_int_eq(tv_sim_create(&sc, &w->sim), 0);
	ck_assert_int_eq(tv_flt_create(3, &w->flt), 0);
	if (plan)
		ck_assert_msg(tv_flt_plan_parse(w->flt, plan, err,
						sizeof(err)) == 0,
			      "%.200s", err);
	for (int n = 0; n < 2; n++) {
		ck_assert_int_eq(tv_flt_wrap(w->flt,
					     tv_sim_device(w->sim, (uint32_t)n),
					     &w->dev[n]),
				 0);
		ck_assert_int_eq(tv_vf_alloc_pd(w->dev[n], &w->pd[n]), 0);
		ck_assert_int_eq(tv_vf_create_cq(w->dev[n], 64, &w->cq[n]), 0);
		init.send_cq = w->cq[n];
		init.recv_cq = w->cq[n];
		init.max_send_wr = depth;
		init.max_recv_wr = depth;
		init.max_send_sge = 4;
		init.max_recv_sge = 4;
		ck_assert_int_eq(tv_vf_create_qp(w->pd[n], &init, &w->qp[n]),
				 0);
		w->buf[n] = aligned_alloc(4096, BUFSZ);
		ck_assert_ptr_nonnull(w->buf[n]);
		memset(w->buf[n], 0, BUFSZ);
		ck_assert_int_eq(tv_vf_reg_mr(w->pd[n], w->buf[n], BUFSZ,
					      TV_ACCESS_LOCAL_WRITE |
						      TV_ACCESS_REMOTE_WRITE |
						      TV_ACCESS_REMOTE_READ,
					      &w->mr[n]),
				 0);
		ck_assert_int_eq(tv_vf_qp_endpoint(w->qp[n], &ep[n]), 0);
	}
	tv_vf_connect_cfg_default(&cc);
	cc.timeout = 1;
	cc.retry_cnt = 2;
	cc.rnr_retry = 7;
	cc.min_rnr_timer = 1;
	ck_assert_int_eq(tv_vf_connect_qp(w->qp[0], &cc, &ep[0], &ep[1]), 0);
	ck_assert_int_eq(tv_vf_connect_qp(w->qp[1], &cc, &ep[1], &ep[0]), 0);
	ck_assert_int_eq(tv_flt_activate(w->flt), 0);
}

static void w_close(struct w *w)
{
	tv_flt_destroy(w->flt); /* deactivates */
	for (int n = 0; n < 2; n++) {
		ck_assert_int_eq(tv_vf_destroy_qp(w->qp[n]), 0);
		ck_assert_int_eq(tv_vf_dereg_mr(w->mr[n]), 0);
		ck_assert_int_eq(tv_vf_destroy_cq(w->cq[n]), 0);
		ck_assert_int_eq(tv_vf_dealloc_pd(w->pd[n]), 0);
		tv_flt_unwrap(w->dev[n]);
		free(w->buf[n]);
	}
	ck_assert_int_eq(tv_sim_destroy(w->sim), 0); /* nothing leaked */
}

static uint64_t addr_of(const struct w *w, int n, uint32_t off)
{
	return (uint64_t)(uintptr_t)w->buf[n] + off;
}

/* One WR from node `from` with one SGE of its buffer [loff, loff+len). */
static int post_w(struct w *w, int from, enum tv_vf_wr_opcode op,
		  uint32_t loff, uint32_t len, uint32_t roff, uint32_t imm,
		  uint64_t wr_id)
{
	struct tv_vf_sge sge = {
		.addr = addr_of(w, from, loff), .length = len,
		.lkey = w->mr[from]->lkey,
	};
	struct tv_vf_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = TV_SEND_SIGNALED, .imm_data = imm,
		.remote_addr = addr_of(w, !from, roff),
		.rkey = w->mr[!from]->rkey,
	};
	struct tv_vf_send_wr *bad = NULL;

	return tv_vf_post_send(w->qp[from], &wr, &bad);
}

static int post_rx_w(struct w *w, int n, uint32_t off, uint32_t len,
		     uint64_t wr_id)
{
	struct tv_vf_sge sge = {
		.addr = addr_of(w, n, off), .length = len,
		.lkey = w->mr[n]->lkey,
	};
	struct tv_vf_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	};
	struct tv_vf_recv_wr *bad = NULL;

	return tv_vf_post_recv(w->qp[n], &wr, &bad);
}

static void run_w(struct w *w)
{
	ck_assert_int_eq(tv_sim_run(w->sim, 0, 0), 0);
}

/* Exactly one completion on node n's CQ. */
static struct tv_vf_wc poll_one(struct w *w, int n)
{
	struct tv_vf_wc wc[2];

	memset(wc, 0, sizeof(wc));
	ck_assert_int_eq(tv_vf_poll_cq(w->cq[n], 2, wc), 1);
	return wc[0];
}

static uint64_t fires_of(struct tv_flt *flt, const char *point)
{
	struct tv_flt_point_stats st;

	ck_assert_int_eq(tv_flt_stats(flt, point, &st), 0);
	return st.fires;
}

static void pattern(uint8_t *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 13);
}

/* ---- the injector ------------------------------------------------------------ */

START_TEST(flt_arm_refusals)
{
	struct tv_flt *flt = NULL, *other;
	struct tv_flt_rule r;
	struct tv_flt_point_stats st;

	oom_arm(0);
	ck_assert_int_eq(tv_flt_create(1, &flt), -ENOMEM);
	ck_assert(oom_disarm());
	ck_assert_ptr_null(flt);
	ck_assert_int_eq(tv_flt_create(1, &flt), 0);

	tv_flt_rule_default(&r);
	ck_assert_int_eq(tv_flt_arm(flt, "no/such/point", &r), -ENOENT);
	r.probability = NAN;
	ck_assert_int_eq(tv_flt_arm(flt, "vf/write/drop", &r), -EINVAL);
	r.probability = 1.5;
	ck_assert_int_eq(tv_flt_arm(flt, "vf/write/drop", &r), -EINVAL);
	r.probability = -0.5;
	ck_assert_int_eq(tv_flt_arm(flt, "vf/write/drop", &r), -EINVAL);
	r.probability = 1.0;
	r.after_ns = 10;
	r.before_ns = 10;
	ck_assert_int_eq(tv_flt_arm(flt, "vf/write/drop", &r), -EINVAL);
	r.before_ns = 0; /* no end: fine */
	ck_assert_int_eq(tv_flt_arm(flt, "vf/write/drop", &r), 0);
	/* Node rules: vf/ points only, TV_FLT_NODE_RULES of them. */
	tv_flt_rule_default(&r);
	r.has_node = true;
	ck_assert_int_eq(tv_flt_arm(flt, "sim/deliver/delay", &r), -EINVAL);
	for (int i = 0; i < TV_FLT_NODE_RULES; i++)
		ck_assert_int_eq(tv_flt_arm(flt, "vf/ack/drop", &r), 0);
	ck_assert_int_eq(tv_flt_arm(flt, "vf/ack/drop", &r), -ENOSPC);

	ck_assert_int_eq(tv_flt_stats(flt, "no/such/point", &st), -ENOENT);
	ck_assert_int_eq(tv_flt_stats(flt, "vf/ack/drop", &st), 0);
	ck_assert_uint_eq(st.hits, 0);
	ck_assert_uint_eq(tv_flt_total_fires(flt), 0);

	/* One injector active at a time; deactivating twice is harmless. */
	ck_assert_int_eq(tv_flt_create(2, &other), 0);
	ck_assert_int_eq(tv_flt_activate(flt), 0);
	ck_assert_int_eq(tv_flt_activate(other), -EBUSY);
	tv_flt_deactivate(flt);
	tv_flt_deactivate(flt);
	ck_assert_int_eq(fiu_fail("vf/write/drop"), 0);
	ck_assert_int_eq(tv_flt_activate(other), 0);
	tv_flt_destroy(other);
	tv_flt_destroy(flt);
	tv_flt_destroy(NULL);
}
END_TEST

static int observed;

static void count_observe(void *ctx, const char *point, uint64_t hit)
{
	(void)ctx;
	(void)point;
	(void)hit;
	observed++;
}

/* The decision and the draws with nothing to decide. */
START_TEST(flt_decide_without_rule)
{
	struct tv_flt *flt;
	int64_t arg = 77;
	uint32_t node;
	uint64_t hit;

	ck_assert(!tv__flt_decide("vf/write/drop", &arg)); /* none active */
	ck_assert_uint_eq(tv__flt_draw(100), 0);
	ck_assert(!tv_flt_firing_site(&node, &hit));

	ck_assert_int_eq(tv_flt_create(5, &flt), 0);
	ck_assert_int_eq(tv_flt_plan_parse(flt, "vf/write/drop", NULL, 0), 0);
	tv_flt_set_observer(flt, count_observe, NULL);
	ck_assert_int_eq(tv_flt_activate(flt), 0);
	ck_assert(!tv__flt_decide("no/such/point", &arg));
	ck_assert(!tv__flt_decide("vf/ack/drop", &arg)); /* not armed */
	ck_assert_int_eq(arg, 77);
	ck_assert_uint_eq(tv__flt_draw(0), 0);
	ck_assert_uint_lt(tv__flt_draw(8), 8);
	ck_assert_int_eq(observed, 0);
	ck_assert(tv__flt_decide("vf/write/drop", &arg));
	ck_assert_int_eq(arg, 0);
	ck_assert_int_eq(observed, 1);
	ck_assert_uint_eq(fires_of(flt, "vf/write/drop"), 1);
	ck_assert_uint_eq(tv_flt_total_fires(flt), 1);
	tv_flt_destroy(flt);
}
END_TEST

/* ---- plans ------------------------------------------------------------------ */

/* Parse into a fresh injector: the return, and the message in err. */
static int parse(const char *plan, char *err, size_t n)
{
	struct tv_flt *flt;
	int ret;

	ck_assert_int_eq(tv_flt_create(1, &flt), 0);
	if (err && n)
		err[0] = '\0';
	ret = tv_flt_plan_parse(flt, plan, err, n);
	tv_flt_destroy(flt);
	return ret;
}

static void refused(const char *plan, const char *needle)
{
	char err[256];

	ck_assert_msg(parse(plan, err, sizeof(err)) == -EINVAL,
		      "accepted: %.100s", plan);
	ck_assert_msg(strstr(err, needle) != NULL, "%.100s: '%.150s'", plan,
		      err);
}

START_TEST(plan_refusals)
{
	char tiny[1] = { 'x' };

	/* JSON */
	refused("[1]", "needs a \"point\"");
	refused("[{\"nth\": 1}]", "needs a \"point\"");
	refused("[{\"point\": \"vf/write/drop\", \"nth\": 2.5}]",
		"bad value for 'nth'");
	refused("[{\"point\": \"vf/write/drop\", \"nth\": -1.0}]",
		"bad value for 'nth'");
	refused("[{\"point\": \"vf/write/drop\", \"nth\": -3}]",
		"bad value for 'nth'");
	refused("[{\"point\": \"vf/write/drop\", \"count\": \"x\"}]",
		"bad value for 'count'");
	refused("[{\"point\": \"vf/write/drop\", \"probability\": \"x\"}]",
		"bad value for 'probability'");
	refused("[{\"point\": \"vf/write/drop\", \"arg\": 1.5}]",
		"bad value for 'arg'");
	refused("[{\"point\": \"vf/write/drop\", \"node\": 4294967295}]",
		"bad value for 'node'");
	refused("[{\"point\": \"vf/write/drop\", \"colour\": 1}]",
		"unknown key 'colour'");
	refused("[{\"point\": \"vf/nothing\"}]", "unknown fault point");
	refused("[{\"point\": \"vf/write/drop\", \"probability\": 2}]",
		"(probability 0..1");
	refused("[{\"point\": \"sim/deliver/delay\", \"node\": 1}]",
		"for vf/ points only");
	refused("[{\"point\": 5}]", "needs a \"point\"");
	refused("[{\"point\": \"vf/write/drop\"", "invalid JSON");
	/* The command-line form */
	refused("vf/write/drop:nth", "bad setting 'nth'");
	refused("vf/write/drop:p=abc", "bad setting 'p'");
	refused("vf/write/drop:p=", "bad setting 'p'");
	refused("vf/write/drop:nth=-1", "bad setting 'nth'");
	refused("vf/write/drop:nth=12x", "bad setting 'nth'");
	refused("vf/write/drop:nth=", "bad setting 'nth'");
	refused("vf/write/drop:colour=1", "bad setting 'colour'");
	refused("vf/write/drop:node=4294967295", "bad setting 'node'");
	refused("vf/nothing:nth=1", "unknown fault point 'vf/nothing'");
	refused("vf/write/drop:before=5,after=5", "inconsistent rule");
	refused("vf/write/drop:nth=99999999999999999999999", "bad setting 'nth'");
	/* The first bad item stops the plan. */
	refused("vf/nothing;vf/write/drop:nth=x", "unknown fault point 'vf/nothing'");
	refused("[1, {\"point\": \"vf/write/drop\", \"nth\": \"x\"}]",
		"needs a \"point\"");
	refused("vf/ack/drop:node=0;vf/ack/drop:node=0;vf/ack/drop:node=0;"
		"vf/ack/drop:node=0;vf/ack/drop:node=0;vf/ack/drop:node=0;"
		"vf/ack/drop:node=0;vf/ack/drop:node=0;vf/ack/drop:node=0;"
		"vf/ack/drop:node=0;vf/ack/drop:node=0;vf/ack/drop:node=0;"
		"vf/ack/drop:node=0;vf/ack/drop:node=0;vf/ack/drop:node=0;"
		"vf/ack/drop:node=0;vf/ack/drop:node=0",
		"more node rules than");
	/* No room for a message: refused all the same, nothing written. */
	ck_assert_int_eq(parse("vf/nothing", NULL, 0), -EINVAL);
	ck_assert_int_eq(parse("vf/nothing", tiny, 0), -EINVAL);
	ck_assert_int_eq(tiny[0], 'x');
}
END_TEST

/* Which of 10 hits of vf/write/drop fire under plan (t = 100 * hit). */
static uint64_t now_v;

static uint64_t clock_v(void *ctx)
{
	(void)ctx;
	return now_v;
}

static uint32_t mask_of(const char *plan)
{
	struct tv_flt *flt;
	char err[256] = "";
	uint32_t mask = 0;

	ck_assert_int_eq(tv_flt_create(1, &flt), 0);
	ck_assert_msg(tv_flt_plan_parse(flt, plan, err, sizeof(err)) == 0,
		      "%.200s", err);
	tv_flt_set_clock(flt, clock_v, NULL);
	ck_assert_int_eq(tv_flt_activate(flt), 0);
	for (int i = 0; i < 10; i++) {
		now_v = (uint64_t)i * 100;
		if (fiu_fail("vf/write/drop"))
			mask |= 1u << i;
	}
	tv_flt_destroy(flt);
	return mask;
}

START_TEST(plan_accepted_forms)
{
	/* Whole reals are counts; leading blanks before either form. */
	ck_assert_uint_eq(mask_of(" \n\t[{\"point\": \"vf/write/drop\", "
				  "\"nth\": 3.0, \"count\": 2e0}]"),
			  (1u << 2) | (1u << 3));
	ck_assert_uint_eq(mask_of("[{\"point\": \"vf/write/drop\", "
				  "\"after_ns\": 300, \"before_ns\": 500.0, "
				  "\"arg\": -4, \"probability\": 1}]"),
			  (1u << 3) | (1u << 4));
	ck_assert_uint_eq(mask_of("\t vf/write/drop:after=0x64,before=200,"
				  "arg=9,p=1.0"),
			  1u << 1);
	ck_assert_uint_eq(mask_of("vf/write/drop:p=0"), 0);
	ck_assert_uint_eq(mask_of("[{\"point\": \"vf/write/drop\", "
				  "\"probability\": 0.0}]"), 0);
	ck_assert_int_eq(parse("[{\"point\": \"vf/write/drop\", "
			       "\"probability\": 0.25}]", NULL, 0), 0);
	ck_assert_uint_eq(mask_of("[]"), 0);
	/* A node rule alone: libfiu's hits carry no site, none fires. */
	ck_assert_uint_eq(mask_of("vf/write/drop:node=3"), 0);
}
END_TEST

/* ---- the wrapper: arguments and the inner device ------------------------------ */

static void tap_count(void *ctx, const struct tv_flt_tap_event *ev)
{
	(void)ev;
	(*(int *)ctx)++;
}

START_TEST(wrap_argument_checks)
{
	struct tv_sim_config sc;
	struct tv_sim *sim;
	struct tv_flt *flt;
	struct tv_vf_device *dev = NULL, *inner;
	struct tv_flt_tap tap = { 0 };
	int n = 0;

	tv_sim_config_default(&sc);
	sc.num_nodes = 1;
	ck_assert_int_eq(tv_sim_create(&sc, &sim), 0);
	inner = tv_sim_device(sim, 0);
	ck_assert_int_eq(tv_flt_create(1, &flt), 0);
	ck_assert_int_eq(tv_flt_wrap(NULL, inner, &dev), -EINVAL);
	ck_assert_int_eq(tv_flt_wrap(flt, NULL, &dev), -EINVAL);
	ck_assert_int_eq(tv_flt_wrap(flt, inner, NULL), -EINVAL);
	oom_arm(0);
	ck_assert_int_eq(tv_flt_wrap(flt, inner, &dev), -ENOMEM);
	ck_assert(oom_disarm());
	ck_assert_ptr_null(dev);
	ck_assert_int_eq(tv_flt_wrap(flt, inner, &dev), 0);
	ck_assert_ptr_eq(tv_vf_base_device(dev), inner);

	ck_assert_int_eq(tv_flt_wrap_set_node(NULL, 1), -EINVAL);
	ck_assert_int_eq(tv_flt_wrap_set_node(inner, 1), -EINVAL);
	ck_assert_int_eq(tv_flt_set_tap(NULL, &tap), -EINVAL);
	ck_assert_int_eq(tv_flt_set_tap(inner, &tap), -EINVAL);
	ck_assert_int_eq(tv_flt_set_tap(dev, &tap), -EINVAL); /* no event */
	tap.event = tap_count;
	tap.ctx = &n;
	ck_assert_int_eq(tv_flt_set_tap(dev, &tap), 0);
	ck_assert_int_eq(tv_flt_set_tap(dev, NULL), 0); /* untapped again */
	ck_assert_uint_eq(tv_flt_tap_qp_index(NULL, 0x100), TV_FLT_TAP_NONE);
	ck_assert_uint_eq(tv_flt_tap_qp_index(inner, 0x100), TV_FLT_TAP_NONE);
	ck_assert_uint_eq(tv_flt_tap_qp_index(dev, 0x100), TV_FLT_TAP_NONE);
	tv_flt_unwrap(dev);
	tv_flt_unwrap(NULL);
	tv_flt_destroy(flt);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

START_TEST(wrap_passes_inner_results)
{
	struct w w;
	struct tv_vf_cq *cq = NULL;
	struct tv_vf_qp *qp = NULL;
	struct tv_vf_mr *mr = NULL;
	struct tv_vf_qp_init_attr init = { 0 };
	struct tv_vf_qp_attr attr;
	struct tv_vf_sge sg = { 0 };
	struct tv_vf_send_wr swr = { .sg_list = &sg, .num_sge = 5 };
	struct tv_vf_recv_wr rwr = { .sg_list = &sg, .num_sge = 5 };
	struct tv_vf_send_wr *sbad = NULL;
	struct tv_vf_recv_wr *rbad = NULL;
	uint8_t gid[16], want[16];

	w_open(&w, NULL, 8);
	/* Queries go to the inner device. */
	ck_assert_int_eq(tv_vf_query_gid(w.dev[1], 1, 0, gid), 0);
	ck_assert_int_eq(tv_vf_query_gid(tv_sim_device(w.sim, 1), 1, 0, want),
			 0);
	ck_assert_mem_eq(gid, want, 16);
	ck_assert_int_eq(tv_vf_query_gid(w.dev[1], 2, 0, gid), -EINVAL);
	ck_assert_int_eq(tv_vf_query_qp(w.qp[0], &attr), 0);
	ck_assert_int_eq(attr.qp_state, TV_QPS_RTS);
	ck_assert_int_eq(w.qp[0]->state, TV_QPS_RTS);
	ck_assert_int_eq(tv_vf_wait_fds(w.dev[0], 0, NULL, 0), -EOPNOTSUPP);
	/* Waits go to the simulator: nothing queued, nobody to wake it. */
	ck_assert_int_eq(tv_vf_wait(w.dev[0], 0), -EDEADLK);
	ck_assert_uint_eq(tv_vf_now_ns(w.dev[0]), 0);

	/* The inner device's refusals, and nothing of the wrapper left. */
	ck_assert_int_eq(tv_vf_create_cq(w.dev[0], 0, &cq), -EINVAL);
	ck_assert_ptr_null(cq);
	init.send_cq = w.cq[0];
	init.recv_cq = w.cq[0];
	init.max_send_sge = 33;
	ck_assert_int_eq(tv_vf_create_qp(w.pd[0], &init, &qp), -EINVAL);
	ck_assert_ptr_null(qp);
	ck_assert_int_eq(tv_vf_reg_mr(w.pd[0], w.buf[0], 0,
				      TV_ACCESS_LOCAL_WRITE, &mr),
			 -EINVAL);
	ck_assert_ptr_null(mr);
	ck_assert_int_eq(tv_vf_dealloc_pd(w.pd[0]), -EBUSY);
	ck_assert_int_eq(tv_vf_destroy_cq(w.cq[0]), -EBUSY);
	/* A post the inner QP refuses names its WR. */
	ck_assert_int_eq(tv_vf_post_send(w.qp[0], &swr, &sbad), -EINVAL);
	ck_assert_ptr_eq(sbad, &swr);
	ck_assert_int_eq(tv_vf_post_recv(w.qp[0], &rwr, &rbad), -EINVAL);
	ck_assert_ptr_eq(rbad, &rwr);
	/* A modify the inner QP refuses changes nothing. */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = TV_QPS_INIT;
	ck_assert_int_eq(tv_vf_modify_qp(w.qp[0], &attr, TV_QP_STATE),
			 -EINVAL);
	ck_assert_int_eq(w.qp[0]->state, TV_QPS_RTS);
	w_close(&w);
}
END_TEST

/* The Nth allocation of each wrapped create fails: the wrapper's own or
 * the simulator's underneath; nothing is left behind either way. */
START_TEST(wrap_allocation_failures)
{
	struct w w;
	struct tv_vf_pd *pd = NULL;
	struct tv_vf_cq *cq = NULL;
	struct tv_vf_mr *mr = NULL;
	struct tv_vf_qp *qp = NULL;
	struct tv_vf_qp_init_attr init = { 0 };
	long n;
	int ret;

	w_open(&w, NULL, 8);
	for (n = 0;; n++) {
		oom_arm(n);
		ret = tv_vf_alloc_pd(w.dev[0], &pd);
		if (!oom_disarm())
			break;
		ck_assert_int_eq(ret, -ENOMEM);
		ck_assert_ptr_null(pd);
	}
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(ret, 0);
	for (n = 0;; n++) {
		oom_arm(n);
		ret = tv_vf_create_cq(w.dev[0], 4, &cq);
		if (!oom_disarm())
			break;
		ck_assert_int_eq(ret, -ENOMEM);
		ck_assert_ptr_null(cq);
	}
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(ret, 0);
	for (n = 0;; n++) {
		oom_arm(n);
		ret = tv_vf_reg_mr(pd, w.buf[0], 64, TV_ACCESS_LOCAL_WRITE, &mr);
		if (!oom_disarm())
			break;
		ck_assert_int_eq(ret, -ENOMEM);
		ck_assert_ptr_null(mr);
	}
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(ret, 0);
	init.send_cq = cq;
	init.recv_cq = cq;
	init.max_send_wr = 2;
	init.max_recv_wr = 2;
	for (n = 0;; n++) {
		oom_arm(n);
		ret = tv_vf_create_qp(pd, &init, &qp);
		if (!oom_disarm())
			break;
		ck_assert_int_eq(ret, -ENOMEM);
		ck_assert_ptr_null(qp);
	}
	/* wrapper, simulator (QP, four queues), the wrapper's QPN map */
	ck_assert_int_eq(n, 7);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(tv_flt_tap_qp_index(w.dev[0], qp->qp_num), 1);
	ck_assert_int_eq(tv_vf_destroy_qp(qp), 0);
	ck_assert_int_eq(tv_vf_dereg_mr(mr), 0);
	ck_assert_int_eq(tv_vf_destroy_cq(cq), 0);
	ck_assert_int_eq(tv_vf_dealloc_pd(pd), 0);
	w_close(&w);
}
END_TEST

/* ---- the points' edges ---------------------------------------------------------- */

/* vf/cq/reorder: a receive completion polled after a send one comes first. */
START_TEST(cq_reorder_puts_receives_first)
{
	struct w w;
	struct tv_vf_wc wc[4];

	w_open(&w, "vf/cq/reorder", 8);
	ck_assert_int_eq(post_rx_w(&w, 1, 0, 64, 10), 0);
	ck_assert_int_eq(post_w(&w, 1, TV_WR_RDMA_WRITE, 0, 16, 0, 0, 11), 0);
	run_w(&w);
	ck_assert_int_eq(post_w(&w, 0, TV_WR_SEND, 0, 16, 0, 0, 12), 0);
	run_w(&w);
	/* Node 1: the write's completion came first, the receive later. */
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[1], 4, wc), 2);
	ck_assert_uint_eq(wc[0].wr_id, 10);
	ck_assert_int_eq(wc[0].opcode, TV_WC_RECV);
	ck_assert_uint_eq(wc[1].wr_id, 11);
	ck_assert_int_eq(wc[1].opcode, TV_WC_RDMA_WRITE);
	ck_assert_uint_eq(poll_one(&w, 0).wr_id, 12);
	/* Two writes, then a receive: the receive moves past both. */
	ck_assert_int_eq(post_rx_w(&w, 1, 0, 64, 13), 0);
	ck_assert_int_eq(post_w(&w, 1, TV_WR_RDMA_WRITE, 0, 16, 0, 0, 14), 0);
	ck_assert_int_eq(post_w(&w, 1, TV_WR_RDMA_WRITE, 0, 16, 0, 0, 15), 0);
	run_w(&w);
	ck_assert_int_eq(post_w(&w, 0, TV_WR_SEND, 0, 16, 0, 0, 16), 0);
	run_w(&w);
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[1], 4, wc), 3);
	ck_assert_uint_eq(wc[0].wr_id, 13);
	ck_assert_uint_eq(wc[1].wr_id, 14);
	ck_assert_uint_eq(wc[2].wr_id, 15);
	ck_assert_uint_eq(poll_one(&w, 0).wr_id, 16);
	/* Hit by each poll that got something. */
	ck_assert_uint_eq(fires_of(w.flt, "vf/cq/reorder"), 4);
	w_close(&w);
}
END_TEST

/* A message too short for a header, or of no known type, is never
 * dropped; one of type 0 is (a zero-length write: nothing arrives). */
START_TEST(msg_drop_needs_a_header)
{
	struct w w;
	struct tv_vf_wc wc;

	struct tv_vf_send_wr bare = {
		.wr_id = 4, .opcode = TV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = TV_SEND_SIGNALED, .imm_data = TV_IMM_MESSAGE,
	};
	struct tv_vf_send_wr *bad;

	w_open(&w, "vf/msg/drop/META_DATA_UPDATE", 8);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(post_rx_w(&w, 1, 0, 0, 20 + (uint64_t)i), 0);
	w.buf[0][3] = 0;  /* META_DATA_UPDATE */
	w.buf[0][103] = 9; /* no such type */
	ck_assert_int_eq(post_w(&w, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 3, 0,
				TV_IMM_MESSAGE, 1),
			 0);
	ck_assert_int_eq(post_w(&w, 0, TV_WR_RDMA_WRITE_WITH_IMM, 100, 8, 100,
				TV_IMM_MESSAGE, 2),
			 0);
	ck_assert_int_eq(post_w(&w, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 8, 200,
				TV_IMM_MESSAGE, 3),
			 0);
	/* No SGE at all; an ACK that carries bytes (no corruption point). */
	bare.remote_addr = addr_of(&w, 1, 0);
	bare.rkey = w.mr[1]->rkey;
	ck_assert_int_eq(tv_vf_post_send(w.qp[0], &bare, &bad), 0);
	ck_assert_int_eq(post_w(&w, 0, TV_WR_RDMA_WRITE_WITH_IMM, 300, 8, 300,
				TV_IMM_ACK, 5),
			 0);
	run_w(&w);
	ck_assert_uint_eq(fires_of(w.flt, "vf/msg/drop/META_DATA_UPDATE"), 1);
	/* Two messages arrived, the third was dropped, then the bare one
	 * and the ACK. */
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[1], 1, &wc), 1);
	ck_assert_uint_eq(wc.imm_data, TV_IMM_MESSAGE);
	ck_assert_uint_eq(wc.byte_len, 3);
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[1], 1, &wc), 1);
	ck_assert_uint_eq(wc.byte_len, 8);
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[1], 1, &wc), 1);
	ck_assert_uint_eq(wc.imm_data, TV_IMM_MESSAGE);
	ck_assert_uint_eq(wc.byte_len, 0);
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[1], 1, &wc), 1);
	ck_assert_uint_eq(wc.imm_data, TV_IMM_ACK);
	ck_assert_uint_eq(wc.byte_len, 8);
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[1], 1, &wc), 0);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(tv_vf_poll_cq(w.cq[0], 1, &wc), 1);
	w_close(&w);
}
END_TEST

/* An ACK riding on a tensor write is dropped alone: the write lands with
 * its index, the flag gone.  A write without the flag is not a hit. */
START_TEST(ack_drop_on_a_tensor_write)
{
	struct w w;
	struct tv_vf_wc wc;
	struct tv_flt_point_stats st;

	w_open(&w, "vf/ack/drop", 8);
	ck_assert_int_eq(post_rx_w(&w, 1, 0, 0, 30), 0);
	ck_assert_int_eq(post_rx_w(&w, 1, 0, 0, 31), 0);
	pattern(w.buf[0], 32, 5);
	ck_assert_int_eq(post_w(&w, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 32, 0,
				5u | TV_IMM_ACK_FLAG, 1),
			 0);
	ck_assert_int_eq(post_w(&w, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 32, 64,
				6u, 2),
			 0);
	run_w(&w);
	ck_assert_int_eq(tv_flt_stats(w.flt, "vf/ack/drop", &st), 0);
	ck_assert_uint_eq(st.hits, 1);
	ck_assert_uint_eq(st.fires, 1);
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[1], 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 30);
	ck_assert_uint_eq(wc.imm_data, 5);
	ck_assert_mem_eq(w.buf[1], w.buf[0], 32);
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[1], 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 31);
	ck_assert_uint_eq(wc.imm_data, 6);
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[1], 1, &wc), 0);
	w_close(&w);
}
END_TEST

/* Corruption that cannot be made: the WR goes as it was. */
static void corrupt_fails(const char *plan, int how)
{
	struct w w;
	struct tv_vf_wc wc;
	long n;

	w_open(&w, plan, 8);
	pattern(w.buf[0], 256, 9);
	if (how == 1) /* the copy's registration fails */
		tv_sim_fail_reg_mr(w.sim, 0, 1, -EIO);
	for (n = 0; n < (how == 2 ? 2 : 1); n++) {
		if (how == 2) /* the copy's two allocations, in turn */
			oom_arm(n);
		ck_assert_int_eq(post_w(&w, 0, TV_WR_RDMA_WRITE, 0,
					how == 3 ? 0 : 256, 0, 0,
					(uint64_t)n),
				 0);
		if (how == 2)
			ck_assert(oom_disarm());
		run_w(&w);
		wc = poll_one(&w, 0);
		ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
		if (how == 3) /* nothing to carry */
			ck_assert_uint_eq(w.buf[1][0], 0);
		else
			ck_assert_mem_eq(w.buf[1], w.buf[0], 256);
	}
	ck_assert_uint_ge(fires_of(w.flt, "vf/write/corrupt"), 1);
	w_close(&w);
}

START_TEST(corrupt_copy_not_registered)
{
	corrupt_fails("vf/write/corrupt", 1);
}
END_TEST

START_TEST(corrupt_copy_no_memory)
{
	corrupt_fails("vf/write/corrupt", 2);
}
END_TEST

START_TEST(corrupt_zero_length)
{
	corrupt_fails("vf/write/corrupt", 3);
}
END_TEST

START_TEST(corrupt_negative_bits)
{
	corrupt_fails("[{\"point\": \"vf/write/corrupt\", \"arg\": -2}]", 0);
}
END_TEST

/* More than 64 bits asked: 64 draws, from a write of two SGEs gathered;
 * the sender's own bytes stay intact. */
START_TEST(corrupt_many_bits_two_sges)
{
	struct w w;
	struct tv_vf_sge sg[2];
	struct tv_vf_send_wr wr = {
		.wr_id = 1, .sg_list = sg, .num_sge = 2,
		.opcode = TV_WR_RDMA_WRITE, .send_flags = TV_SEND_SIGNALED,
	};
	struct tv_vf_send_wr *bad;
	uint8_t want[200];
	static uint8_t src[BUFSZ];
	int differ = 0;

	w_open(&w, "vf/write/corrupt:arg=1000", 8);
	pattern(w.buf[0], BUFSZ, 3);
	memcpy(src, w.buf[0], BUFSZ);
	sg[0] = (struct tv_vf_sge){ addr_of(&w, 0, 0), 100, w.mr[0]->lkey };
	sg[1] = (struct tv_vf_sge){ addr_of(&w, 0, 1000), 100,
				    w.mr[0]->lkey };
	memcpy(want, w.buf[0], 100);
	memcpy(want + 100, w.buf[0] + 1000, 100);
	wr.remote_addr = addr_of(&w, 1, 0);
	wr.rkey = w.mr[1]->rkey;
	ck_assert_int_eq(tv_vf_post_send(w.qp[0], &wr, &bad), 0);
	run_w(&w);
	ck_assert_int_eq(poll_one(&w, 0).status, TV_WC_SUCCESS);
	for (int i = 0; i < 200; i++)
		differ += __builtin_popcount(w.buf[1][i] ^ want[i]);
	/* 64 draws, a pair on one bit undoes it: even, at most 64. */
	ck_assert_int_gt(differ, 0);
	ck_assert_int_le(differ, 64);
	ck_assert_int_eq(differ % 2, 0);
	ck_assert_mem_eq(w.buf[0], src, BUFSZ);
	w_close(&w);
}
END_TEST

/* vf/write/dup on a full send queue: the twin cannot go, nor the WR. */
START_TEST(dup_twin_refused)
{
	struct w w;
	struct tv_vf_sge sge;
	struct tv_vf_send_wr wr = {
		.wr_id = 2, .sg_list = &sge, .num_sge = 1,
		.opcode = TV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = TV_SEND_SIGNALED, .imm_data = 4,
	};
	struct tv_vf_send_wr *bad = NULL;

	w_open(&w, "vf/write/dup", 1);
	ck_assert_int_eq(post_w(&w, 0, TV_WR_RDMA_WRITE, 0, 8, 0, 0, 1), 0);
	sge = (struct tv_vf_sge){ addr_of(&w, 0, 0), 8, w.mr[0]->lkey };
	wr.remote_addr = addr_of(&w, 1, 0);
	wr.rkey = w.mr[1]->rkey;
	ck_assert_int_eq(tv_vf_post_send(w.qp[0], &wr, &bad), -ENOMEM);
	ck_assert_ptr_eq(bad, &wr);
	ck_assert_uint_eq(fires_of(w.flt, "vf/write/dup"), 1);
	run_w(&w);
	ck_assert_uint_eq(poll_one(&w, 0).wr_id, 1);
	w_close(&w);
}
END_TEST

/* A duplicate's twin flushed with its WR: polled one at a time, the
 * caller only gets its own WR. */
START_TEST(dup_twin_flushed_unseen)
{
	struct w w;
	struct tv_vf_qp_attr err = { .qp_state = TV_QPS_ERR };
	struct tv_vf_wc wc[4];

	w_open(&w, "vf/write/dup", 8);
	ck_assert_int_eq(post_w(&w, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 8, 0, 7,
				3),
			 0);
	ck_assert_int_eq(tv_vf_modify_qp(w.qp[0], &err, TV_QP_STATE), 0);
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[0], 1, wc), 1);
	ck_assert_uint_eq(wc[0].wr_id, 3);
	ck_assert_int_eq(wc[0].status, TV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[0], 4, wc), 0);
	ck_assert_uint_eq(fires_of(w.flt, "vf/write/dup"), 1);
	run_w(&w);
	w_close(&w);
}
END_TEST

/* sim/deliver/delay with an arg: each delivery that much later. */
START_TEST(sim_delay_with_arg)
{
	struct w w;
	uint64_t t;

	w_open(&w, "sim/deliver/delay:arg=5000", 8);
	ck_assert_int_eq(post_w(&w, 0, TV_WR_RDMA_WRITE, 0, 16, 0, 0, 1), 0);
	ck_assert_int_eq(tv_vf_wait(w.dev[0], UINT64_MAX), 0);
	t = tv_sim_now_ns(w.sim);
	/* 16 ns on the wire, 1000 ns of link, 5000 ns late, 1000 ns back */
	ck_assert_uint_eq(t, 16 + 1000 + 5000 + 1000);
	ck_assert_int_eq(poll_one(&w, 0).status, TV_WC_SUCCESS);
	ck_assert_uint_eq(fires_of(w.flt, "sim/deliver/delay"), 1);
	w_close(&w);
}
END_TEST

/* ---- taps -------------------------------------------------------------------- */

struct tap_log {
	int n;
	struct tv_flt_tap_event ev[32];
};

static void tap_log_event(void *ctx, const struct tv_flt_tap_event *ev)
{
	struct tap_log *log = ctx;

	ck_assert_int_lt(log->n, 32);
	log->ev[log->n++] = *ev;
}

START_TEST(tap_without_poll_hook)
{
	struct w w;
	struct tap_log log = { 0 };
	struct tv_flt_tap tap = { .event = tap_log_event, .ctx = &log };
	static struct tap_log log0;
	struct tv_flt_tap tap0 = { .event = tap_log_event, .ctx = &log0 };
	struct tv_vf_mr *big;
	struct tv_vf_sge sg[2];
	struct tv_vf_recv_wr rwr = { .wr_id = 40, .sg_list = sg, .num_sge = 2 };
	struct tv_vf_recv_wr *bad;
	struct tv_vf_qp_attr attr = { .qp_state = TV_QPS_INIT };
	struct tv_vf_wc wc[2];

	w_open(&w, NULL, 8);
	ck_assert_int_eq(tv_flt_set_tap(w.dev[1], &tap), 0);
	/* An MR longer than 32 bits says so in the tap's len. */
	ck_assert_int_eq(tv_vf_reg_mr(w.pd[1], w.buf[1], 1ull << 33,
				      TV_ACCESS_LOCAL_WRITE, &big),
			 0);
	ck_assert_int_eq(log.n, 1);
	ck_assert_int_eq(log.ev[0].kind, TV_FLT_TAP_REG_MR);
	ck_assert_uint_eq(log.ev[0].len, UINT32_MAX);
	/* A refused modify is no state change. */
	ck_assert_int_eq(tv_vf_modify_qp(w.qp[1], &attr, TV_QP_STATE),
			 -EINVAL);
	ck_assert_int_eq(log.n, 1);
	sg[0] = (struct tv_vf_sge){ addr_of(&w, 1, 0), 10, w.mr[1]->lkey };
	sg[1] = (struct tv_vf_sge){ addr_of(&w, 1, 100), 22, w.mr[1]->lkey };
	ck_assert_int_eq(tv_vf_post_recv(w.qp[1], &rwr, &bad), 0);
	ck_assert_int_eq(log.n, 2);
	ck_assert_int_eq(log.ev[1].kind, TV_FLT_TAP_POST_RECV);
	ck_assert_uint_eq(log.ev[1].len, 32);
	ck_assert_uint_eq(log.ev[1].qp, 0);
	ck_assert_int_eq(tv_flt_set_tap(w.dev[0], &tap0), 0);
	ck_assert_int_eq(post_w(&w, 0, TV_WR_SEND_WITH_IMM, 0, 16, 0, 0xabc,
				1),
			 0);
	ck_assert_int_eq(log0.n, 1);
	ck_assert_int_eq(log0.ev[0].kind, TV_FLT_TAP_POST_SEND);
	ck_assert(log0.ev[0].has_imm);
	ck_assert_uint_eq(log0.ev[0].imm, 0xabc);
	ck_assert_uint_eq(log0.ev[0].len, 16);
	run_w(&w);
	ck_assert_int_eq(tv_vf_poll_cq(w.cq[1], 2, wc), 1);
	ck_assert_int_eq(log.n, 3);
	ck_assert_int_eq(log.ev[2].kind, TV_FLT_TAP_POLL);
	ck_assert_uint_eq(log.ev[2].wr_id, 40);
	ck_assert_uint_eq(log.ev[2].len, 16);
	ck_assert(log.ev[2].has_imm);
	ck_assert_uint_eq(log.ev[2].imm, 0xabc);
	ck_assert_uint_eq(log.ev[2].cq, 0);
	ck_assert_int_eq(tv_vf_dereg_mr(big), 0);
	w_close(&w);
}
END_TEST

static Suite *faults_edges_suite(void)
{
	Suite *s = suite_create("faults_edges");
	TCase *tc = tcase_create("edges");

	tcase_add_test(tc, flt_arm_refusals);
	tcase_add_test(tc, flt_decide_without_rule);
	tcase_add_test(tc, plan_refusals);
	tcase_add_test(tc, plan_accepted_forms);
	tcase_add_test(tc, wrap_argument_checks);
	tcase_add_test(tc, wrap_passes_inner_results);
	tcase_add_test(tc, wrap_allocation_failures);
	tcase_add_test(tc, cq_reorder_puts_receives_first);
	tcase_add_test(tc, msg_drop_needs_a_header);
	tcase_add_test(tc, ack_drop_on_a_tensor_write);
	tcase_add_test(tc, corrupt_copy_not_registered);
	tcase_add_test(tc, corrupt_copy_no_memory);
	tcase_add_test(tc, corrupt_zero_length);
	tcase_add_test(tc, corrupt_negative_bits);
	tcase_add_test(tc, corrupt_many_bits_two_sges);
	tcase_add_test(tc, dup_twin_refused);
	tcase_add_test(tc, dup_twin_flushed_unseen);
	tcase_add_test(tc, sim_delay_with_arg);
	tcase_add_test(tc, tap_without_poll_hook);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(faults_edges_suite());
}
