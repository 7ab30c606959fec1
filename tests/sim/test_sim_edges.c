/*
 * The simulator's error paths and edge cases: argument checks of every
 * op, the state machine's refusals, the event loop's corners (callbacks
 * that re-enter, runnable nodes without events), the transfers that fail
 * at the responder, and allocation failures injected into the simulator's
 * own calloc/malloc/realloc (this executable links with -Wl,--wrap, see
 * CMakeLists.txt): the Nth allocation fails, for N = 0, 1, 2 ... until
 * none does (SQLite's do_faultsim_test).
 *
 * The tests look inside the world (sim_priv.h) only to fill the event
 * queue to its exact capacity, so that the next push has to grow it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <tensorverbs/sim.h>

#include "common/check_main.h"
#include "common/wrap_alloc.h"
#include "sim_fix.h"
#include "sim_priv.h"

/* ---- helpers --------------------------------------------------------------- */

/* A signalled write of side 0's first len bytes to side 1 goes: its
 * completion, the bytes there. */
static void write_goes(struct fix *f, uint32_t len, uint64_t wr_id)
{
	ck_assert_int_eq(post_op(f, 0, TV_WR_RDMA_WRITE, 0, len, 0,
				 TV_SEND_SIGNALED, wr_id),
			 0);
	ck_assert_int_eq(tv_sim_run(f->sim, 1000000, 0), -ETIMEDOUT);
	ck_assert_uint_eq(poll1(f->s[0].scq).wr_id, wr_id);
	ck_assert_mem_eq(f->s[1].buf, f->s[0].buf, len);
}

static void noop_user(void *arg)
{
	(void)arg;
}

/* User events far away until the event queue is exactly full. */
static void evq_fill(struct tv_sim *sim)
{
	while (sim->evq.len < sim->evq.cap)
		ck_assert_int_eq(tv_sim_schedule(sim, UINT64_MAX / 2, 0,
						 noop_user, NULL),
				 0);
	ck_assert_uint_eq(sim->evq.free_head, UINT32_MAX);
}

/* User events far away until the event queue holds len of them (<= cap). */
static void evq_fill_to(struct tv_sim *sim, uint32_t len)
{
	while (sim->evq.len < len)
		ck_assert_int_eq(tv_sim_schedule(sim, UINT64_MAX / 2, 0,
						 noop_user, NULL),
				 0);
}

/* At its time, fill the event queue and make the next allocation fail:
 * the next event that pushes twice cannot grow the queue. */
static void fill_and_fail_user(void *arg)
{
	struct tv_sim *sim = arg;

	evq_fill(sim);
	oom_arm(0);
}

/* RESET -> RTS with every attribute given (timeout 0 included). */
static int qp_up(struct tv_vf_qp *qp, const struct tv_vf_qp_endpoint *remote,
		 uint8_t timeout, uint8_t retry_cnt, uint8_t rnr_retry)
{
	struct tv_vf_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = TV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE |
			    TV_ACCESS_REMOTE_READ;
	ret = tv_vf_modify_qp(qp, &a, TV_QP_STATE | TV_QP_PKEY_INDEX |
					      TV_QP_PORT | TV_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	a.qp_state = TV_QPS_RTR;
	a.path_mtu = TV_MTU_1024;
	a.dest_qp_num = remote->qp_num;
	a.rq_psn = remote->psn;
	memcpy(a.dgid, remote->gid, sizeof(a.dgid));
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	ret = tv_vf_modify_qp(qp, &a, TV_QP_STATE | TV_QP_AV |
					      TV_QP_PATH_MTU | TV_QP_DEST_QPN |
					      TV_QP_RQ_PSN |
					      TV_QP_MAX_DEST_RD_ATOMIC |
					      TV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	a.qp_state = TV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 16;
	return tv_vf_modify_qp(qp, &a, TV_QP_STATE | TV_QP_SQ_PSN |
					       TV_QP_TIMEOUT | TV_QP_RETRY_CNT |
					       TV_QP_RNR_RETRY |
					       TV_QP_MAX_QP_RD_ATOMIC);
}

static void connect_with(struct fix *f, uint8_t timeout, uint8_t retry_cnt,
			 uint8_t rnr_retry)
{
	struct tv_vf_qp_endpoint e0, e1;

	ck_assert_int_eq(tv_vf_qp_endpoint(f->s[0].qp, &e0), 0);
	ck_assert_int_eq(tv_vf_qp_endpoint(f->s[1].qp, &e1), 0);
	ck_assert_int_eq(qp_up(f->s[0].qp, &e1, timeout, retry_cnt, rnr_retry),
			 0);
	ck_assert_int_eq(qp_up(f->s[1].qp, &e0, timeout, retry_cnt, rnr_retry),
			 0);
}

static void to_init(struct tv_vf_qp *qp)
{
	struct tv_vf_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = TV_QPS_INIT;
	a.port_num = 1;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, TV_QP_STATE |
							 TV_QP_PKEY_INDEX |
							 TV_QP_PORT |
							 TV_QP_ACCESS_FLAGS),
			 0);
}

static void to_state(struct tv_vf_qp *qp, enum tv_vf_qp_state st)
{
	struct tv_vf_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = st;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, TV_QP_STATE), 0);
	ck_assert_int_eq(qp->state, st);
}

/* ---- world: configuration, links, devices ---------------------------------- */

START_TEST(test_config_defaults_and_refusals)
{
	struct tv_sim_config cfg;
	struct tv_sim *sim = NULL;
	struct tv_vf_device_attr da;
	struct tv_vf_port_attr pa;

	cfg_test(&cfg);
	ck_assert_int_eq(tv_sim_create(NULL, &sim), -EINVAL);
	ck_assert_int_eq(tv_sim_create(&cfg, NULL), -EINVAL);
	ck_assert_ptr_null(sim);

	/* Zero limits take the defaults. */
	cfg.max_qp_wr = 0;
	cfg.max_cqe = 0;
	cfg.max_mr = 0;
	cfg.active_mtu = 0;
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), 0);
	ck_assert_int_eq(tv_vf_query_device(tv_sim_device(sim, 0), &da), 0);
	ck_assert_uint_eq(da.max_qp_wr, 4096);
	ck_assert_uint_eq(da.max_cqe, 65536);
	ck_assert_uint_eq(da.max_mr, 65536);
	ck_assert_int_eq(tv_vf_query_port(tv_sim_device(sim, 0), 1, &pa), 0);
	ck_assert_int_eq(pa.active_mtu, TV_MTU_4096);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);

	sim = NULL;
	cfg_test(&cfg);
	cfg.active_mtu = (enum tv_vf_mtu)6;
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), -EINVAL);
	cfg_test(&cfg);
	cfg.max_mr = 1u << 24;
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), -EINVAL);
	cfg_test(&cfg);
	cfg.max_qp_init_rd_atom = 129;
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), -EINVAL);
	cfg_test(&cfg);
	cfg.num_nodes = 1025;
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), -EINVAL);
	ck_assert_ptr_null(sim);
	ck_assert_int_eq(tv_sim_destroy(NULL), 0);
}
END_TEST

START_TEST(test_links_devices_gids)
{
	struct fix f;
	struct tv_sim_link link = { .latency_ns = 5, .bytes_per_sec = 0 };
	uint8_t gid[16];

	fix_init(&f);
	ck_assert_int_eq(tv_sim_set_link(f.sim, 2, 0, &link), -EINVAL);
	ck_assert_int_eq(tv_sim_set_link(f.sim, 0, 2, &link), -EINVAL);
	ck_assert_int_eq(tv_sim_set_link(f.sim, 0, 1, NULL), -EINVAL);
	ck_assert_int_eq(tv_sim_set_link(f.sim, 0, 1, &link), 0);
	ck_assert_ptr_null(tv_sim_device(f.sim, 2));
	ck_assert_uint_eq(tv_sim_num_nodes(f.sim), 2);
	ck_assert_int_eq(tv_vf_query_gid(f.s[0].dev, 2, 0, gid), -EINVAL);
	ck_assert_int_eq(tv_vf_query_gid(f.s[0].dev, 1, 1, gid), -EINVAL);
	ck_assert_int_eq(tv_vf_query_gid(f.s[1].dev, 1, 0, gid), 0);
	ck_assert_uint_eq(gid[15], 1);
	fix_fini(&f);
}
END_TEST

/* ---- allocation failures ---------------------------------------------------- */

START_TEST(test_oom_create_world)
{
	struct tv_sim_config cfg;
	struct tv_sim *sim;
	long n;
	int ret;

	cfg_test(&cfg);
	for (n = 0;; n++) {
		sim = NULL;
		oom_arm(n);
		ret = tv_sim_create(&cfg, &sim);
		if (!oom_disarm())
			break;
		ck_assert_int_eq(ret, -ENOMEM);
		ck_assert_ptr_null(sim); /* written only on success */
	}
	/* nodes, links, runq, the event heap and pool, the world itself */
	ck_assert_int_eq(n, 6);
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

START_TEST(test_oom_objects)
{
	struct tv_sim_config cfg;
	struct tv_sim *sim;
	struct tv_vf_device *dev;
	struct tv_vf_pd *pd = NULL;
	struct tv_vf_cq *cq = NULL;
	struct tv_vf_mr *mr = NULL;
	uint8_t buf[64];
	long n;
	int ret;

	cfg_test(&cfg);
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), 0);
	dev = tv_sim_device(sim, 0);

	oom_arm(0);
	ret = tv_vf_alloc_pd(dev, &pd);
	ck_assert(oom_disarm());
	ck_assert_int_eq(ret, -ENOMEM);
	ck_assert_ptr_null(pd);
	ck_assert_int_eq(tv_vf_alloc_pd(dev, &pd), 0);

	for (n = 0;; n++) {
		oom_arm(n);
		ret = tv_vf_create_cq(dev, 8, &cq);
		if (!oom_disarm())
			break;
		ck_assert_int_eq(ret, -ENOMEM);
		ck_assert_ptr_null(cq);
	}
	ck_assert_int_eq(n, 3); /* the CQ, its ring, its slot indices */
	ck_assert_int_eq(ret, 0);

	/* The first MR grows the slot tables (three of them). */
	for (n = 0;; n++) {
		oom_arm(n);
		ret = tv_vf_reg_mr(pd, buf, sizeof(buf), TV_ACCESS_LOCAL_WRITE,
				   &mr);
		if (!oom_disarm())
			break;
		ck_assert_int_eq(ret, -ENOMEM);
		ck_assert_ptr_null(mr);
	}
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(tv_vf_dereg_mr(mr), 0);
	/* Nothing of the failures is left: the PD has no MR, no QP. */
	ck_assert_int_eq(tv_vf_destroy_cq(cq), 0);
	ck_assert_int_eq(tv_vf_dealloc_pd(pd), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

START_TEST(test_oom_create_qp)
{
	struct tv_sim_config cfg;
	struct tv_sim *sim;
	struct tv_vf_device *dev;
	struct tv_vf_pd *pd;
	struct tv_vf_cq *cq;
	struct tv_vf_qp *qp = NULL;
	struct tv_vf_qp_init_attr init = { 0 };
	long n;
	int ret;

	cfg_test(&cfg);
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), 0);
	dev = tv_sim_device(sim, 0);
	ck_assert_int_eq(tv_vf_alloc_pd(dev, &pd), 0);
	ck_assert_int_eq(tv_vf_create_cq(dev, 8, &cq), 0);
	init.send_cq = cq;
	init.recv_cq = cq;
	init.max_send_wr = 4;
	init.max_recv_wr = 4;
	init.max_send_sge = 1;
	init.max_recv_sge = 1;
	init.max_inline_data = 64;
	/* The first QP of a node makes the QPN table. */
	oom_arm(0);
	ck_assert_int_eq(tv_vf_create_qp(pd, &init, &qp), -ENOMEM);
	ck_assert(oom_disarm());
	ck_assert_ptr_null(to_sim_node(dev)->qp_tab);
	for (n = 0;; n++) {
		oom_arm(n);
		ret = tv_vf_create_qp(pd, &init, &qp);
		if (!oom_disarm())
			break;
		ck_assert_int_eq(ret, -ENOMEM);
		ck_assert_ptr_null(qp);
		/* No half-made QP holds the CQ or the PD. */
		ck_assert_int_eq(to_sim_cq(cq)->nr_qps, 0);
	}
	/* the QP, its four queues, its inline buffers */
	ck_assert_int_eq(n, 6);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(qp->qp_num, 0x100); /* no QPN spent by failures */
	ck_assert_int_eq(tv_vf_destroy_qp(qp), 0);
	ck_assert_int_eq(tv_vf_destroy_cq(cq), 0);
	ck_assert_int_eq(tv_vf_dealloc_pd(pd), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* The event queue grows by doubling its heap and its pool: either fails. */
START_TEST(test_oom_evq_grow)
{
	struct fix f;
	uint32_t cap;

	fix_init(&f);
	evq_fill(f.sim);
	cap = f.sim->evq.cap;
	for (long n = 0; n < 2; n++) {
		oom_arm(n);
		ck_assert_int_eq(tv_sim_schedule(f.sim, 10, 0, noop_user, NULL),
				 -ENOMEM);
		ck_assert(oom_disarm());
		ck_assert_uint_eq(f.sim->evq.len, cap);
	}
	/* A wake_at that cannot queue its timer says so, and arms nothing. */
	oom_arm(0);
	ck_assert_int_eq(tv_vf_wake_at(f.s[0].dev, 100), -ENOMEM);
	ck_assert(oom_disarm());
	ck_assert_int_eq(tv_sim_schedule(f.sim, 10, 0, noop_user, NULL), 0);
	ck_assert_uint_eq(f.sim->evq.cap, 2 * cap);
	ck_assert_uint_eq(f.sim->evq.len, cap + 1);
	fix_fini(&f);
}
END_TEST

/* A post whose request cannot be queued is refused and taken back. */
START_TEST(test_oom_post_send_taken_back)
{
	struct fix f;
	struct tv_sim_stats st;

	fix_init(&f);
	connect_pair(&f);
	evq_fill(f.sim);
	oom_arm(0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 64, 0,
				 TV_SEND_SIGNALED, 1),
			 -ENOMEM);
	ck_assert(oom_disarm());
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.work_requests, 0);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RTS);
	/* The slot was given back: the same WR goes now. */
	fill(f.s[0].buf, 64, 3);
	write_goes(&f, 64, 2);
	fix_fini(&f);
}
END_TEST

/* ---- the event queue itself -------------------------------------------------- */

START_TEST(test_evq_order_ties)
{
	struct sim_evq q;
	struct sim_ev ev = { 0 }, out;
	uint64_t t;

	ck_assert_int_eq(sim_evq_init(&q, 2), 0);
	ck_assert(!sim_evq_peek(&q, &t));
	/* Same time and same tie-break: first pushed, first out. */
	for (uint32_t i = 0; i < 5; i++) {
		ev.idx = i;
		ck_assert_int_eq(sim_evq_push(&q, 7, 3, &ev), 0);
	}
	ev.idx = 99;
	ck_assert_int_eq(sim_evq_push(&q, 7, 1, &ev), 0);
	ev.idx = 98;
	ck_assert_int_eq(sim_evq_push(&q, 5, 9, &ev), 0);
	ck_assert_uint_eq(q.cap, 8);
	ck_assert(sim_evq_peek(&q, &t));
	ck_assert_uint_eq(t, 5);
	ck_assert(sim_evq_pop(&q, &t, &out));
	ck_assert_uint_eq(out.idx, 98);
	ck_assert(sim_evq_pop(&q, &t, &out));
	ck_assert_uint_eq(out.idx, 99);
	for (uint32_t i = 0; i < 5; i++) {
		ck_assert(sim_evq_pop(&q, &t, &out));
		ck_assert_uint_eq(t, 7);
		ck_assert_uint_eq(out.idx, i);
	}
	ck_assert(!sim_evq_pop(&q, &t, &out));
	sim_evq_fini(&q);
	ck_assert_ptr_null(q.heap);
}
END_TEST

/* ---- the event loop ----------------------------------------------------------- */

struct reenter {
	struct fix *f;
	int run, step, wait;
	int ran;
};

static void reenter_user(void *arg)
{
	struct reenter *r = arg;

	r->run = tv_sim_run(r->f->sim, 0, 0);
	r->step = tv_sim_step(r->f->sim);
	r->wait = tv_vf_wait(r->f->s[0].dev, UINT64_MAX);
	r->ran++;
}

START_TEST(test_loop_reentry_busy)
{
	struct fix f;
	struct reenter r = { .f = &f };

	fix_init(&f);
	ck_assert_int_eq(tv_sim_schedule(f.sim, 5, 0, reenter_user, &r), 0);
	ck_assert_int_eq(tv_sim_schedule(f.sim, 5, 2, reenter_user, &r),
			 -EINVAL);
	ck_assert_int_eq(tv_sim_schedule(f.sim, 5, 0, NULL, &r), -EINVAL);
	ck_assert_int_eq(tv_sim_step(f.sim), 1);
	ck_assert_int_eq(r.ran, 1);
	ck_assert_int_eq(r.run, -EBUSY);
	ck_assert_int_eq(r.step, -EBUSY);
	ck_assert_int_eq(r.wait, -EBUSY);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 5);
	/* In the past: refused. */
	ck_assert_int_eq(tv_sim_schedule(f.sim, 4, 0, reenter_user, &r),
			 -EINVAL);
	ck_assert_int_eq(tv_sim_step(f.sim), 0);
	fix_fini(&f);
}
END_TEST

/* Node 1's progress callback posts on its QP in ERR: each post flushes at
 * once and makes node 1 runnable again, with no event queued. */
struct flusher {
	struct fix *f;
	int left;
	int calls;
	int last_ret;
};

static void flusher_progress(void *arg, uint32_t node)
{
	struct flusher *fl = arg;
	struct tv_vf_wc wc[4];

	ck_assert_uint_eq(node, 1);
	fl->calls++;
	while (tv_vf_poll_cq(fl->f->s[1].rcq, 4, wc) > 0)
		;
	if (fl->left > 0) {
		fl->left--;
		fl->last_ret = post_rx(fl->f, 1, 0, 8, 7);
	}
}

START_TEST(test_loop_runnable_without_events)
{
	struct fix f;
	struct flusher fl = { .f = &f, .left = 1500 };

	fix_init(&f);
	to_state(f.s[1].qp, TV_QPS_ERR);
	tv_sim_set_progress(f.sim, 1, flusher_progress, &fl);
	ck_assert_int_eq(post_rx(&f, 1, 0, 8, 7), 0);
	/* More than 1000 passes in a row with an empty queue: run goes on
	 * with the next pass all the same, until the node is quiet. */
	ck_assert_int_eq(tv_sim_run(f.sim, 0, 0), 0);
	ck_assert_int_eq(fl.left, 0);
	ck_assert_int_eq(fl.last_ret, 0);
	ck_assert_int_eq(fl.calls, 1501);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 0);

	/* A wait on node 0 while only node 1 is runnable: node 1's callback
	 * runs, then nothing can ever wake node 0. */
	fl.left = 3;
	fl.calls = 0;
	ck_assert_int_eq(post_rx(&f, 1, 0, 8, 7), 0);
	ck_assert_int_eq(tv_vf_wait(f.s[0].dev, UINT64_MAX), -EDEADLK);
	ck_assert_int_eq(fl.calls, 4);
	ck_assert_int_eq(fl.left, 0);

	/* step: no event, but a runnable node -- it runs, step says 1. */
	ck_assert_int_eq(post_rx(&f, 1, 0, 8, 7), 0);
	ck_assert_int_eq(tv_sim_step(f.sim), 1);
	ck_assert_int_eq(fl.calls, 5);
	ck_assert_int_eq(tv_sim_step(f.sim), 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_loop_deadlines_at_now)
{
	struct fix f;

	fix_init(&f);
	ck_assert_int_eq(tv_sim_schedule(f.sim, 1000, 0, noop_user, NULL), 0);
	ck_assert_int_eq(tv_sim_run(f.sim, 500, 0), -ETIMEDOUT);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 500);
	/* until == now: the clock stays. */
	ck_assert_int_eq(tv_sim_run(f.sim, 500, 0), -ETIMEDOUT);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 500);
	/* A wait whose deadline is now, or already past. */
	ck_assert_int_eq(tv_vf_wait(f.s[0].dev, 500), -ETIMEDOUT);
	ck_assert_int_eq(tv_vf_wait(f.s[0].dev, 200), -ETIMEDOUT);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 500);
	/* wake_at in the past fires now, and a later one is covered by it. */
	ck_assert_int_eq(tv_vf_wake_at(f.s[0].dev, 100), 0);
	ck_assert_int_eq(tv_vf_wake_at(f.s[0].dev, 900), 0);
	ck_assert_int_eq(tv_vf_wait(f.s[0].dev, UINT64_MAX), 0);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 500);
	/* max_events: one event and it stops. */
	ck_assert_int_eq(tv_sim_schedule(f.sim, 600, 0, noop_user, NULL), 0);
	ck_assert_int_eq(tv_sim_run(f.sim, 0, 1), -EAGAIN);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 600);
	run_all(&f);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 1000);
	fix_fini(&f);
}
END_TEST

/* ---- modify_qp -------------------------------------------------------------------- */

START_TEST(test_modify_qp_refusals)
{
	struct fix f;
	struct tv_vf_qp *qp;
	struct tv_vf_qp_attr a;
	const uint32_t rtr = TV_QP_STATE | TV_QP_AV | TV_QP_PATH_MTU |
			     TV_QP_DEST_QPN | TV_QP_RQ_PSN |
			     TV_QP_MAX_DEST_RD_ATOMIC | TV_QP_MIN_RNR_TIMER;
	const uint32_t rts = TV_QP_STATE | TV_QP_SQ_PSN | TV_QP_TIMEOUT |
			     TV_QP_RETRY_CNT | TV_QP_RNR_RETRY |
			     TV_QP_MAX_QP_RD_ATOMIC;

	fix_init(&f);
	qp = f.s[0].qp;
	ck_assert_int_eq(tv_vf_modify_qp(qp, NULL, TV_QP_STATE), -EINVAL);
	memset(&a, 0, sizeof(a));
	a.qp_state = TV_QPS_INIT;
	a.port_num = 1;
	a.pkey_index = 1;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, TV_QP_STATE |
							 TV_QP_PKEY_INDEX |
							 TV_QP_PORT |
							 TV_QP_ACCESS_FLAGS),
			 -EINVAL);
	ck_assert_int_eq(qp->state, TV_QPS_RESET);
	to_init(qp);
	/* INIT -> INIT with nothing but the state: allowed. */
	a.qp_state = TV_QPS_INIT;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, TV_QP_STATE), 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = TV_QPS_RTR;
	a.path_mtu = TV_MTU_1024;
	a.dest_qp_num = 0x100;
	a.max_dest_rd_atomic = 1;
	a.sgid_index = 1;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, rtr), -EINVAL);
	a.sgid_index = 0;
	a.sl = 16;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, rtr), -EINVAL);
	a.sl = 0;
	a.dest_qp_num = 0x1000000;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, rtr), -EINVAL);
	a.dest_qp_num = 0x100;
	a.rq_psn = 0x1000000;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, rtr), -EINVAL);
	a.rq_psn = 0;
	a.path_mtu = (enum tv_vf_mtu)0;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, rtr), -EINVAL);
	a.path_mtu = TV_MTU_1024;
	ck_assert_int_eq(qp->state, TV_QPS_INIT);
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, rtr), 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = TV_QPS_RTS;
	a.sq_psn = 0x1000000;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, rts), -EINVAL);
	a.sq_psn = 0;
	a.timeout = 32;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, rts), -EINVAL);
	a.timeout = 14;
	a.rnr_retry = 8;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, rts), -EINVAL);
	a.rnr_retry = 7;
	a.retry_cnt = 8;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, rts), -EINVAL);
	a.retry_cnt = 7;
	ck_assert_int_eq(qp->state, TV_QPS_RTR);
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, rts), 0);
	ck_assert_int_eq(qp->state, TV_QPS_RTS);
	/* RTS -> RTS: the optional attributes only. */
	a.min_rnr_timer = 32;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, TV_QP_STATE |
							 TV_QP_MIN_RNR_TIMER),
			 -EINVAL);
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, TV_QP_STATE | TV_QP_TIMEOUT),
			 -EINVAL);
	/* RTS -> INIT is no transition. */
	a.qp_state = TV_QPS_INIT;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, TV_QP_STATE), -EINVAL);
	ck_assert_int_eq(qp->state, TV_QPS_RTS);
	fix_fini(&f);
}
END_TEST

/* ---- objects: argument checks ------------------------------------------------- */

START_TEST(test_reg_mr_and_cq_refusals)
{
	struct fix f;
	struct tv_vf_mr *mr = NULL, *mrs[70];
	struct tv_vf_cq *cq = NULL;
	struct tv_vf_wc wc;

	fix_init(&f);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, (void *)(UINTPTR_MAX - 15),
				      64, TV_ACCESS_LOCAL_WRITE, &mr),
			 -EINVAL);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, NULL, 64,
				      TV_ACCESS_LOCAL_WRITE, &mr),
			 -EINVAL);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, f.s[0].buf, 0,
				      TV_ACCESS_LOCAL_WRITE, &mr),
			 -EINVAL);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, f.s[0].buf, 64,
				      TV_ACCESS_REMOTE_WRITE, &mr),
			 -EINVAL);
	ck_assert_ptr_null(mr);
	/* Past 64 MRs the slot tables grow; every key stays distinct. */
	for (int i = 0; i < 70; i++)
		ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, f.s[0].buf + i, 8,
					      TV_ACCESS_LOCAL_WRITE, &mrs[i]),
				 0);
	ck_assert_uint_ne(mrs[69]->lkey, mrs[0]->lkey);
	ck_assert_uint_eq(to_sim_node(f.s[0].dev)->mr_slots_cap, 128);
	for (int i = 0; i < 70; i++)
		ck_assert_int_eq(tv_vf_dereg_mr(mrs[i]), 0);

	ck_assert_int_eq(tv_vf_create_cq(f.s[0].dev, 0, &cq), -EINVAL);
	ck_assert_int_eq(tv_vf_create_cq(f.s[0].dev, 65537, &cq), -EINVAL);
	ck_assert_ptr_null(cq);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, -1, &wc), -EINVAL);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 1, NULL), -EINVAL);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 0, NULL), 0);
	/* Busy objects are refused. */
	ck_assert_int_eq(tv_vf_destroy_cq(f.s[0].scq), -EBUSY);
	ck_assert_int_eq(tv_vf_dealloc_pd(f.s[0].pd), -EBUSY);
	fix_fini(&f);
}
END_TEST

START_TEST(test_create_qp_refusals)
{
	struct fix f;
	struct tv_vf_qp_init_attr init = { 0 };
	struct tv_vf_qp *qp = NULL;

	fix_init(&f);
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, NULL, &qp), -EINVAL);
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	init.send_cq = f.s[0].scq;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	/* A CQ of another device. */
	init.recv_cq = f.s[1].rcq;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	init.recv_cq = f.s[0].rcq;
	init.max_recv_wr = 4097;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	init.max_recv_wr = 0;
	init.max_recv_sge = 33;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	init.max_recv_sge = 0;
	init.max_inline_data = 513;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	ck_assert_ptr_null(qp);
	/* Zero depths and SGEs: still a QP (one slot each inside). */
	init.max_inline_data = 0;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), 0);
	ck_assert_int_eq(qp->state, TV_QPS_RESET);
	ck_assert_int_eq(tv_vf_destroy_qp(qp), 0);
	fix_fini(&f);
}
END_TEST

/* ---- posting: argument checks -------------------------------------------------- */

START_TEST(test_post_refusals)
{
	struct fix f;
	struct tv_vf_sge sg[2] = {
		{ .length = 0x80000000u }, { .length = 1 },
	};
	struct tv_vf_send_wr swr = { .opcode = TV_WR_SEND };
	struct tv_vf_recv_wr rwr = { 0 };

	fix_init(&f);
	connect_pair(&f);
	sg[0].addr = sg[1].addr = raddr(&f.s[0], 0);
	sg[0].lkey = sg[1].lkey = f.s[0].mr->lkey;
	/* num_sge without a list; more than the IB message size. */
	swr.num_sge = 1;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &swr, NULL), -EINVAL);
	swr.sg_list = sg;
	swr.num_sge = 2;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &swr, NULL), -EINVAL);
	rwr.num_sge = 1;
	ck_assert_int_eq(tv_vf_post_recv(f.s[0].qp, &rwr, NULL), -EINVAL);
	rwr.sg_list = sg;
	rwr.num_sge = 2;
	ck_assert_int_eq(tv_vf_post_recv(f.s[0].qp, &rwr, NULL), -EINVAL);
	rwr.num_sge = -1;
	ck_assert_int_eq(tv_vf_post_recv(f.s[0].qp, &rwr, NULL), -EINVAL);
	rwr.num_sge = 5; /* max_recv_sge is 4 */
	ck_assert_int_eq(tv_vf_post_recv(f.s[0].qp, &rwr, NULL), -EINVAL);
	/* The receive queue is full after 16. */
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(post_rx(&f, 0, 0, 8, (uint64_t)i), 0);
	ck_assert_int_eq(post_rx(&f, 0, 0, 8, 16), -ENOMEM);
	fix_fini(&f);
}
END_TEST

/* post_ns: a NULL list is no call, no doorbell. */
START_TEST(test_post_ns_empty_list)
{
	struct tv_sim_config cfg;
	struct fix f;

	cfg_test(&cfg);
	cfg.post_ns = 100;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, NULL, NULL), 0);
	ck_assert_uint_eq(to_sim_node(f.s[0].dev)->post_done_ns, 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
				 TV_SEND_SIGNALED, 1),
			 0);
	ck_assert_uint_eq(to_sim_node(f.s[0].dev)->post_done_ns, 100);
	run_until_cqe(&f, 0);
	ck_assert_int_eq(poll1(f.s[0].scq).status, TV_WC_SUCCESS);
	fix_fini(&f);
}
END_TEST

/* ---- transfers that fail -------------------------------------------------------- */

/* A SEND that finds no receive and may not retry: RNR retries exceeded. */
START_TEST(test_send_rnr_no_retry)
{
	struct fix f;
	struct tv_vf_wc wc;
	struct tv_sim_stats st;

	fix_init(&f);
	connect_with(&f, 1, 2, 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_SEND, 0, 16, 0,
				 TV_SEND_SIGNALED, 5),
			 0);
	run_all(&f);
	wc = poll1(f.s[0].scq);
	ck_assert_uint_eq(wc.wr_id, 5);
	ck_assert_int_eq(wc.status, TV_WC_RNR_RETRY_EXC_ERR);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_ERR);
	ck_assert_int_eq(f.s[1].qp->state, TV_QPS_RTS);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.rnr_naks, 1);
	fix_fini(&f);
}
END_TEST

/* A receive whose own SGE is not registered: the responder's local
 * protection error, the requester's remote operation error. */
START_TEST(test_send_into_bad_receive)
{
	struct fix f;
	struct tv_vf_sge sge;
	struct tv_vf_recv_wr rwr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 };
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	sge.addr = raddr(&f.s[1], 0);
	sge.length = 64;
	sge.lkey = f.s[1].mr->lkey + 0x100; /* no MR there */
	ck_assert_int_eq(tv_vf_post_recv(f.s[1].qp, &rwr, NULL), 0);
	fill(f.s[0].buf, 16, 1);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_SEND, 0, 16, 0,
				 TV_SEND_SIGNALED, 4),
			 0);
	run_all(&f);
	wc = poll1(f.s[1].rcq);
	ck_assert_uint_eq(wc.wr_id, 9);
	ck_assert_int_eq(wc.status, TV_WC_LOC_PROT_ERR);
	ck_assert_int_eq(f.s[1].qp->state, TV_QPS_ERR);
	wc = poll1(f.s[0].scq);
	ck_assert_uint_eq(wc.wr_id, 4);
	ck_assert_int_eq(wc.status, TV_WC_REM_OP_ERR);
	ck_assert_uint_eq(f.s[1].buf[0], 0);
	fix_fini(&f);
}
END_TEST

/* Local SGEs: zero-length ones are skipped; another PD's MR, an MR
 * without the access a READ needs, an address before the MR: refused. */
START_TEST(test_local_sge_checks)
{
	struct fix f;
	struct tv_vf_pd *pd2;
	struct tv_vf_mr *other, *ro;
	struct tv_vf_sge sg[2];
	struct tv_vf_send_wr wr = {
		.wr_id = 1, .sg_list = sg, .num_sge = 2,
		.opcode = TV_WR_RDMA_WRITE, .send_flags = TV_SEND_SIGNALED,
	};
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(tv_vf_alloc_pd(f.s[0].dev, &pd2), 0);
	ck_assert_int_eq(tv_vf_reg_mr(pd2, f.s[0].buf, BUF,
				      TV_ACCESS_LOCAL_WRITE, &other),
			 0);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, f.s[0].buf + 1024, 1024, 0,
				      &ro),
			 0);
	wr.remote_addr = raddr(&f.s[1], 0);
	wr.rkey = f.s[1].mr->rkey;

	/* A zero-length SGE with a bad key, then a good one. */
	fill(f.s[0].buf, 32, 5);
	sg[0] = (struct tv_vf_sge){ .addr = 0, .length = 0, .lkey = 0 };
	sg[1] = (struct tv_vf_sge){ raddr(&f.s[0], 0), 32, f.s[0].mr->lkey };
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, NULL), 0);
	run_until_cqe(&f, 0);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_mem_eq(f.s[1].buf, f.s[0].buf, 32);

	/* READ into an MR without local write. */
	wr.wr_id = 2;
	wr.opcode = TV_WR_RDMA_READ;
	wr.num_sge = 1;
	sg[0] = (struct tv_vf_sge){ raddr(&f.s[0], 1024), 32, ro->lkey };
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, NULL), 0);
	run_all(&f);
	wc = poll1(f.s[0].scq);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(wc.status, TV_WC_LOC_PROT_ERR);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_ERR);

	ck_assert_int_eq(tv_vf_dereg_mr(ro), 0);
	ck_assert_int_eq(tv_vf_dereg_mr(other), 0);
	ck_assert_int_eq(tv_vf_dealloc_pd(pd2), 0);
	fix_fini(&f);
}
END_TEST

static void local_sge_case(const char *what, int kind)
{
	struct fix f;
	struct tv_vf_pd *pd2;
	struct tv_vf_mr *other;
	struct tv_vf_sge sg;
	struct tv_vf_send_wr wr = {
		.wr_id = 3, .sg_list = &sg, .num_sge = 1,
		.opcode = TV_WR_RDMA_WRITE, .send_flags = TV_SEND_SIGNALED,
	};
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(tv_vf_alloc_pd(f.s[0].dev, &pd2), 0);
	ck_assert_int_eq(tv_vf_reg_mr(pd2, f.s[0].buf, BUF,
				      TV_ACCESS_LOCAL_WRITE, &other),
			 0);
	wr.remote_addr = raddr(&f.s[1], 0);
	wr.rkey = f.s[1].mr->rkey;
	if (kind == 0) /* another PD's MR */
		sg = (struct tv_vf_sge){ raddr(&f.s[0], 0), 32, other->lkey };
	else if (kind == 1) /* before the MR */
		sg = (struct tv_vf_sge){ raddr(&f.s[0], 0) - 16, 32,
					 f.s[0].mr->lkey };
	else if (kind == 3) /* runs past the MR's end */
		sg = (struct tv_vf_sge){ raddr(&f.s[0], BUF - 16), 32,
					 f.s[0].mr->lkey };
	else if (kind == 5) { /* the key of an MR deregistered since */
		struct tv_vf_mr *gone;

		ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, f.s[0].buf, 64,
					      TV_ACCESS_LOCAL_WRITE, &gone),
				 0);
		sg = (struct tv_vf_sge){ raddr(&f.s[0], 0), 32, gone->lkey };
		ck_assert_int_eq(tv_vf_dereg_mr(gone), 0);
	} else if (kind == 6) /* the rkey where the lkey belongs */
		sg = (struct tv_vf_sge){ raddr(&f.s[0], 0), 32,
					 f.s[0].mr->rkey };
	else /* remote: before (2) or after (4) the peer's MR */
		sg = (struct tv_vf_sge){ raddr(&f.s[0], 0), 32,
					 f.s[0].mr->lkey };
	if (kind == 2)
		wr.remote_addr -= 64;
	if (kind == 4)
		wr.remote_addr += BUF + 64;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, NULL), 0);
	run_all(&f);
	wc = poll1(f.s[0].scq);
	ck_assert_msg(wc.status == (kind == 2 || kind == 4 ?
					    TV_WC_REM_ACCESS_ERR :
					    TV_WC_LOC_PROT_ERR),
		      "%s: status %d", what, wc.status);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_ERR);
	ck_assert_int_eq(tv_vf_dereg_mr(other), 0);
	ck_assert_int_eq(tv_vf_dealloc_pd(pd2), 0);
	fix_fini(&f);
}

START_TEST(test_sge_other_pd)
{
	local_sge_case("other pd", 0);
}
END_TEST

START_TEST(test_sge_before_mr)
{
	local_sge_case("before mr", 1);
}
END_TEST

START_TEST(test_remote_before_mr)
{
	local_sge_case("remote before mr", 2);
}
END_TEST

START_TEST(test_sge_past_mr_end)
{
	local_sge_case("past mr end", 3);
}
END_TEST

START_TEST(test_remote_past_mr_end)
{
	local_sge_case("remote past mr end", 4);
}
END_TEST

START_TEST(test_sge_stale_key)
{
	local_sge_case("deregistered key", 5);
}
END_TEST

START_TEST(test_sge_rkey_as_lkey)
{
	local_sge_case("rkey as lkey", 6);
}
END_TEST

/* Requests that reach no responder: one in INIT, one whose own path
 * names another node, one to a node that does not exist. */
static void lost_case(int kind, enum tv_vf_wr_opcode op)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_qp_endpoint e0, e1;
	struct tv_vf_wc wc;

	cfg_test(&cfg);
	cfg.num_nodes = 3;
	fix_init_cfg(&f, &cfg);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[0].qp, &e0), 0);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[1].qp, &e1), 0);
	if (kind == 2)
		e1.gid[15] = 7; /* node 7 of 3 */
	if (kind == 3)
		e1.gid[0] ^= 0xff; /* no simulator GID at all */
	if (kind == 4)
		e1.qp_num = 5; /* below the first QPN */
	ck_assert_int_eq(qp_up(f.s[0].qp, &e1, 1, 1, 7), 0);
	if (kind == 0) {
		to_init(f.s[1].qp);
	} else {
		if (kind == 1)
			e0.gid[15] = 2; /* the responder expects node 2 */
		ck_assert_int_eq(qp_up(f.s[1].qp, &e0, 1, 1, 7), 0);
	}
	fill(f.s[0].buf, 16, 1);
	fill(f.s[1].buf, 16, 2);
	ck_assert_int_eq(post_op(&f, 0, op, 0, 16, 0, TV_SEND_SIGNALED, 8), 0);
	run_all(&f);
	wc = poll1(f.s[0].scq);
	ck_assert_uint_eq(wc.wr_id, 8);
	ck_assert_int_eq(wc.status, TV_WC_RETRY_EXC_ERR);
	/* Nothing moved either way. */
	ck_assert_uint_eq(f.s[1].buf[0], 2);
	ck_assert_uint_eq(f.s[0].buf[0], 1);
	fix_fini(&f);
}

START_TEST(test_lost_to_init_responder)
{
	lost_case(0, TV_WR_RDMA_WRITE);
}
END_TEST

/* A lost READ is sent again: it is not outstanding while it waits. */
START_TEST(test_lost_read_retried)
{
	lost_case(0, TV_WR_RDMA_READ);
}
END_TEST

START_TEST(test_lost_not_a_sim_gid)
{
	lost_case(3, TV_WR_RDMA_WRITE);
}
END_TEST

START_TEST(test_lost_no_such_qpn)
{
	lost_case(4, TV_WR_RDMA_WRITE);
}
END_TEST

START_TEST(test_lost_wrong_path)
{
	lost_case(1, TV_WR_RDMA_WRITE);
}
END_TEST

START_TEST(test_lost_no_such_node)
{
	lost_case(2, TV_WR_RDMA_WRITE);
}
END_TEST

/* timeout 0: no transport timer, a lost request waits for ever. */
START_TEST(test_timeout_zero_waits_forever)
{
	struct fix f;
	struct tv_vf_qp_endpoint e0, e1;
	struct tv_vf_wc wc;

	fix_init(&f);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[0].qp, &e0), 0);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[1].qp, &e1), 0);
	ck_assert_int_eq(qp_up(f.s[0].qp, &e1, 0, 1, 7), 0);
	to_init(f.s[1].qp);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 16, 0,
				 TV_SEND_SIGNALED, 8),
			 0);
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 1, &wc), 0);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RTS);
	ck_assert(to_sim_qp(f.s[0].qp)->tx_held);
	fix_fini(&f);
}
END_TEST

/* The send CQE of a QP destroyed before it was polled frees no slot. */
START_TEST(test_poll_after_qp_destroyed)
{
	struct fix f;
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 16, 0,
				 TV_SEND_SIGNALED, 6),
			 0);
	run_until_cqe(&f, 0);
	ck_assert_int_eq(tv_vf_destroy_qp(f.s[0].qp), 0);
	f.s[0].qp = NULL;
	wc = poll1(f.s[0].scq);
	ck_assert_uint_eq(wc.wr_id, 6);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	fix_fini(&f);
}
END_TEST

/* A CQ overflows: only the QPs that use it fail, not a bystander. */
START_TEST(test_cq_overflow_spares_other_qps)
{
	struct fix f;
	struct tv_vf_cq *small, *other;
	struct tv_vf_qp *qp2, *qp3;
	struct tv_vf_qp_init_attr init = {
		.max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct tv_vf_wc wc;

	fix_init(&f);
	ck_assert_int_eq(tv_vf_create_cq(f.s[1].dev, 1, &small), 0);
	ck_assert_int_eq(tv_vf_create_cq(f.s[1].dev, 4, &other), 0);
	init.send_cq = other;
	init.recv_cq = small;
	ck_assert_int_eq(tv_vf_create_qp(f.s[1].pd, &init, &qp2), 0);
	init.recv_cq = other;
	ck_assert_int_eq(tv_vf_create_qp(f.s[1].pd, &init, &qp3), 0);
	to_init(qp3);
	to_state(qp2, TV_QPS_ERR);
	/* Two flushed receives into a CQ of one entry. */
	{
		struct tv_vf_recv_wr rwr = { .wr_id = 1 };

		ck_assert_int_eq(tv_vf_post_recv(qp2, &rwr, NULL), 0);
		ck_assert_int_eq(tv_vf_post_recv(qp2, &rwr, NULL), 0);
	}
	ck_assert_int_eq(tv_vf_poll_cq(small, 1, &wc), -EOVERFLOW);
	ck_assert_int_eq(qp3->state, TV_QPS_INIT);
	ck_assert_int_eq(f.s[1].qp->state, TV_QPS_RESET);
	ck_assert_int_eq(tv_vf_destroy_qp(qp2), 0);
	ck_assert_int_eq(tv_vf_destroy_qp(qp3), 0);
	ck_assert_int_eq(tv_vf_destroy_cq(small), 0);
	ck_assert_int_eq(tv_vf_destroy_cq(other), 0);
	fix_fini(&f);
}
END_TEST

/* ---- placement ---------------------------------------------------------------- */

/* Two SGEs, random placement: every byte lands where it belongs. */
START_TEST(test_place_multi_sge)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_sge sg[2];
	struct tv_vf_send_wr wr = {
		.wr_id = 1, .sg_list = sg, .num_sge = 2,
		.opcode = TV_WR_RDMA_WRITE, .send_flags = TV_SEND_SIGNALED,
	};
	uint8_t want[3000];

	cfg_test(&cfg);
	cfg.placement = TV_SIM_PLACE_RANDOM8;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 11);
	sg[0] = (struct tv_vf_sge){ raddr(&f.s[0], 100), 1000,
				    f.s[0].mr->lkey };
	sg[1] = (struct tv_vf_sge){ raddr(&f.s[0], 2000), 2000,
				    f.s[0].mr->lkey };
	memcpy(want, f.s[0].buf + 100, 1000);
	memcpy(want + 1000, f.s[0].buf + 2000, 2000);
	wr.remote_addr = raddr(&f.s[1], 8);
	wr.rkey = f.s[1].mr->rkey;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, NULL), 0);
	run_all(&f);
	ck_assert_int_eq(poll1(f.s[0].scq).status, TV_WC_SUCCESS);
	ck_assert_mem_eq(f.s[1].buf + 8, want, 3000);
	fix_fini(&f);
}
END_TEST

/* Infinite bandwidth: two writes arrive together, the second has no
 * time left to be placed in pieces and lands whole on delivery. */
START_TEST(test_place_no_room)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_sge sg[2];
	struct tv_vf_send_wr wr[2];

	cfg_test(&cfg);
	cfg.placement = TV_SIM_PLACE_BLOCK128;
	cfg.link.bytes_per_sec = 0;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 21);
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 2; i++) {
		sg[i] = (struct tv_vf_sge){ raddr(&f.s[0], 1024u * (uint32_t)i),
					    1024, f.s[0].mr->lkey };
		wr[i].wr_id = (uint64_t)i;
		wr[i].sg_list = &sg[i];
		wr[i].num_sge = 1;
		wr[i].opcode = TV_WR_RDMA_WRITE;
		wr[i].send_flags = TV_SEND_SIGNALED;
		wr[i].remote_addr = raddr(&f.s[1], 1024u * (uint32_t)i);
		wr[i].rkey = f.s[1].mr->rkey;
	}
	wr[0].next = &wr[1];
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr[0], NULL), 0);
	run_all(&f);
	ck_assert_uint_eq(poll_next(f.s[0].scq).wr_id, 0);
	ck_assert_uint_eq(poll_next(f.s[0].scq).wr_id, 1);
	ck_assert_mem_eq(f.s[1].buf, f.s[0].buf, 2048);
	fix_fini(&f);
}
END_TEST

/* Placement of a write with a bad rkey, and of one whose responder went
 * away: nothing lands before the delivery fails it. */
static void place_fail_case(int kind)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_sge sg;
	struct tv_vf_send_wr wr = {
		.wr_id = 1, .sg_list = &sg, .num_sge = 1,
		.opcode = TV_WR_RDMA_WRITE, .send_flags = TV_SEND_SIGNALED,
	};
	uint8_t zero[2048] = { 0 };
	struct tv_vf_wc wc;

	cfg_test(&cfg);
	cfg.placement = TV_SIM_PLACE_RANDOM8;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 31);
	sg = (struct tv_vf_sge){ raddr(&f.s[0], 0), 2048, f.s[0].mr->lkey };
	wr.remote_addr = raddr(&f.s[1], 0);
	wr.rkey = kind == 0 ? f.s[1].mr->rkey + 0x200 : f.s[1].mr->rkey;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, NULL), 0);
	if (kind == 1)
		to_state(f.s[1].qp, TV_QPS_RESET);
	run_all(&f);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, kind == 0 ? TV_WC_REM_ACCESS_ERR :
						TV_WC_RETRY_EXC_ERR);
	ck_assert_mem_eq(f.s[1].buf, zero, sizeof(zero));
	fix_fini(&f);
}

START_TEST(test_place_bad_rkey)
{
	place_fail_case(0);
}
END_TEST

START_TEST(test_place_responder_gone)
{
	place_fail_case(1);
}
END_TEST

/* The requester destroyed while its write's pieces are on their way. */
START_TEST(test_place_requester_gone)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_wc wc;
	uint8_t zero[2048] = { 0 };

	cfg_test(&cfg);
	cfg.placement = TV_SIM_PLACE_RANDOM8;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 41);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 2048, 0,
				 TV_SEND_SIGNALED, 1),
			 0);
	ck_assert_int_eq(tv_vf_destroy_qp(f.s[0].qp), 0);
	f.s[0].qp = NULL;
	run_all(&f);
	ck_assert_mem_eq(f.s[1].buf, zero, sizeof(zero));
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 1, &wc), 0);
	fix_fini(&f);
}
END_TEST

/* ---- second round: the remaining corners --------------------------------------- */

/* A timer replaced by an earlier one: the later event is stale, step
 * passes over it and finds nothing else. */
START_TEST(test_step_skips_stale_timer)
{
	struct fix f;
	struct tv_sim_stats st;

	fix_init(&f);
	ck_assert_int_eq(tv_vf_wake_at(f.s[0].dev, 1000), 0);
	ck_assert_int_eq(tv_vf_wake_at(f.s[0].dev, 500), 0);
	ck_assert_int_eq(tv_sim_step(f.sim), 1);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 500);
	ck_assert_int_eq(tv_sim_step(f.sim), 0);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 500); /* not moved on */
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.events, 1);
	fix_fini(&f);
}
END_TEST

START_TEST(test_modify_without_state)
{
	struct fix f;
	struct tv_vf_qp_attr a, q;
	struct tv_vf_qp_init_attr init = {
		.send_cq = NULL, .max_send_wr = 1, .max_recv_wr = 1,
	};
	struct tv_vf_qp *qp;

	fix_init(&f);
	connect_pair(&f);
	memset(&a, 0, sizeof(a));
	a.min_rnr_timer = 5;
	a.timeout = 9;
	/* RTS -> RTS when the mask has no state. */
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp, &a, TV_QP_MIN_RNR_TIMER),
			 0);
	ck_assert_int_eq(tv_vf_query_qp(f.s[0].qp, &q), 0);
	ck_assert_uint_eq(q.min_rnr_timer, 5);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RTS);
	/* RESET -> RESET: no attribute allowed, none needed. */
	init.send_cq = f.s[0].scq;
	init.recv_cq = f.s[0].rcq;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), 0);
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, TV_QP_TIMEOUT), -EINVAL);
	ck_assert_int_eq(tv_vf_modify_qp(qp, &a, 0), 0);
	ck_assert_int_eq(qp->state, TV_QPS_RESET);
	/* tv_sim_qp_fail: a real error status, and not on a QP in RESET. */
	ck_assert_int_eq(tv_sim_qp_fail(qp, TV_WC_REM_OP_ERR), -EINVAL);
	ck_assert_int_eq(tv_sim_qp_fail(f.s[0].qp, TV_WC_STATUS_COUNT),
			 -EINVAL);
	ck_assert_int_eq(tv_sim_qp_fail(f.s[0].qp, TV_WC_SUCCESS), -EINVAL);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RTS);
	ck_assert_int_eq(tv_vf_destroy_qp(qp), 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_pd_busy_and_mr_size)
{
	struct fix f;
	struct tv_vf_pd *pd2;
	struct tv_vf_qp *qp;
	struct tv_vf_mr *mr = NULL;
	struct tv_vf_qp_init_attr init = { 0 };

	fix_init(&f);
	ck_assert_int_eq(tv_vf_alloc_pd(f.s[0].dev, &pd2), 0);
	init.send_cq = f.s[0].scq;
	init.recv_cq = f.s[0].rcq;
	ck_assert_int_eq(tv_vf_create_qp(pd2, &init, &qp), 0);
	ck_assert_int_eq(tv_vf_dealloc_pd(pd2), -EBUSY); /* a QP, no MR */
	ck_assert_int_eq(tv_vf_destroy_qp(qp), 0);
	ck_assert_int_eq(tv_vf_reg_mr(pd2, f.s[0].buf, (1ull << 40) + 1,
				      TV_ACCESS_LOCAL_WRITE, &mr),
			 -EINVAL);
	ck_assert_ptr_null(mr);
	ck_assert_int_eq(tv_vf_dealloc_pd(pd2), 0);
	fix_fini(&f);
}
END_TEST

/* The device's CQ and QP counts are bounded. */
START_TEST(test_cq_and_qp_limits)
{
	struct fix f;
	static struct tv_vf_cq *cqs[16384];
	static struct tv_vf_qp *qps[16384];
	struct tv_vf_qp_init_attr init = { 0 };
	uint32_t ncq = 0, nqp = 0;
	int ret;

	fix_init(&f);
	while ((ret = tv_vf_create_cq(f.s[0].dev, 1, &cqs[ncq])) == 0)
		ncq++;
	ck_assert_int_eq(ret, -ENOMEM);
	ck_assert_uint_eq(ncq, 16384 - 2); /* the fixture has two */
	init.send_cq = f.s[0].scq;
	init.recv_cq = f.s[0].rcq;
	while ((ret = tv_vf_create_qp(f.s[0].pd, &init, &qps[nqp])) == 0)
		nqp++;
	ck_assert_int_eq(ret, -ENOMEM);
	ck_assert_uint_eq(nqp, 16384 - 1);
	while (nqp)
		ck_assert_int_eq(tv_vf_destroy_qp(qps[--nqp]), 0);
	while (ncq)
		ck_assert_int_eq(tv_vf_destroy_cq(cqs[--ncq]), 0);
	/* Room again; QP numbers are not reused. */
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qps[0]), 0);
	ck_assert_uint_eq(qps[0]->qp_num, 0x100 + 16384);
	ck_assert_int_eq(tv_vf_destroy_qp(qps[0]), 0);
	fix_fini(&f);
}
END_TEST

/* A completion polled after its QP was reset frees nothing. */
START_TEST(test_poll_after_qp_reset)
{
	struct fix f;
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 16, 0,
				 TV_SEND_SIGNALED, 6),
			 0);
	run_until_cqe(&f, 0);
	to_state(f.s[0].qp, TV_QPS_RESET);
	ck_assert_uint_eq(to_sim_qp(f.s[0].qp)->sq_free, 1);
	wc = poll1(f.s[0].scq);
	ck_assert_uint_eq(wc.wr_id, 6);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_uint_eq(to_sim_qp(f.s[0].qp)->sq_free, 1);
	fix_fini(&f);
}
END_TEST

/* A CQ overflows: a QP that receives into it fails too; a completion
 * for it afterwards is dropped (the overflow was reported once). */
START_TEST(test_cq_overflow_fails_receivers)
{
	struct fix f;
	struct tv_vf_cq *small, *other;
	struct tv_vf_qp *qpe, *qp2, *qp3;
	struct tv_vf_qp_init_attr init = {
		.max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct tv_vf_recv_wr rwr = { .wr_id = 1 };
	struct tv_vf_wc wc;
	struct tv_sim_stats st;

	fix_init(&f);
	ck_assert_int_eq(tv_vf_create_cq(f.s[1].dev, 1, &small), 0);
	ck_assert_int_eq(tv_vf_create_cq(f.s[1].dev, 4, &other), 0);
	init.send_cq = other;
	init.recv_cq = small;
	ck_assert_int_eq(tv_vf_create_qp(f.s[1].pd, &init, &qpe), 0);
	ck_assert_int_eq(tv_vf_create_qp(f.s[1].pd, &init, &qp2), 0);
	init.recv_cq = other;
	ck_assert_int_eq(tv_vf_create_qp(f.s[1].pd, &init, &qp3), 0);
	to_init(qp2);
	to_init(qp3);
	to_state(qpe, TV_QPS_ERR);
	ck_assert_int_eq(tv_vf_post_recv(qpe, &rwr, NULL), 0);
	ck_assert_int_eq(qp2->state, TV_QPS_INIT);
	ck_assert_int_eq(tv_vf_post_recv(qpe, &rwr, NULL), 0);
	ck_assert_int_eq(qp2->state, TV_QPS_ERR);
	ck_assert_int_eq(qp3->state, TV_QPS_INIT);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.cqes, 1);
	ck_assert_int_eq(tv_vf_post_recv(qpe, &rwr, NULL), 0);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.cqes, 1);
	ck_assert_int_eq(tv_vf_poll_cq(small, 1, &wc), -EOVERFLOW);
	ck_assert_int_eq(tv_vf_destroy_qp(qpe), 0);
	ck_assert_int_eq(tv_vf_destroy_qp(qp2), 0);
	ck_assert_int_eq(tv_vf_destroy_qp(qp3), 0);
	ck_assert_int_eq(tv_vf_destroy_cq(small), 0);
	ck_assert_int_eq(tv_vf_destroy_cq(other), 0);
	fix_fini(&f);
}
END_TEST

/* Random placement of what is no plain write, or a small one. */
START_TEST(test_place_small_and_other_ops)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_wc wc;

	cfg_test(&cfg);
	cfg.placement = TV_SIM_PLACE_RANDOM8;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 51);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(post_rx(&f, 1, 3000, 64, 90 + (uint64_t)i), 0);
	/* 16 bytes: two units, fewer than the groups. */
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 16, 0,
				 TV_SEND_SIGNALED, 1),
			 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE_WITH_IMM, 100, 64,
				 100, TV_SEND_SIGNALED, 2),
			 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 0, 0,
				 TV_SEND_SIGNALED, 3),
			 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_SEND, 200, 32, 0,
				 TV_SEND_SIGNALED, 4),
			 0);
	run_all(&f);
	for (uint64_t id = 1; id <= 4; id++) {
		wc = poll_next(f.s[0].scq);
		ck_assert_uint_eq(wc.wr_id, id);
		ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	}
	ck_assert_mem_eq(f.s[1].buf, f.s[0].buf, 16);
	ck_assert_mem_eq(f.s[1].buf + 100, f.s[0].buf + 100, 64);
	ck_assert_mem_eq(f.s[1].buf + 3000, f.s[0].buf + 200, 32);
	wc = poll_next(f.s[1].rcq);
	ck_assert_int_eq(wc.opcode, TV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.byte_len, 64);
	wc = poll_next(f.s[1].rcq);
	ck_assert_int_eq(wc.opcode, TV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.byte_len, 0);
	wc = poll1(f.s[1].rcq);
	ck_assert_int_eq(wc.opcode, TV_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, 32);
	fix_fini(&f);
}
END_TEST

/* The placement events of a post cannot be queued: the post is refused,
 * and the same WR posted again arrives whole. */
START_TEST(test_oom_place_schedule)
{
	struct tv_sim_config cfg;
	struct fix f;

	cfg_test(&cfg);
	cfg.placement = TV_SIM_PLACE_RANDOM8;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 61);
	/* Room for the delivery and one placement event, not the second:
	 * both stay queued, stale (the retry has another placement token). */
	evq_fill_to(f.sim, f.sim->evq.cap - 2);
	oom_arm(0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 2048, 0,
				 TV_SEND_SIGNALED, 1),
			 -ENOMEM);
	ck_assert(oom_disarm());
	write_goes(&f, 2048, 2);
	fix_fini(&f);
}
END_TEST

/* qp_op_ns: the wake-up of a QP that must wait cannot be queued. */
START_TEST(test_oom_tx_wake)
{
	struct tv_sim_config cfg;
	struct fix f;

	cfg_test(&cfg);
	cfg.qp_op_ns = 1000;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	evq_fill_to(f.sim, f.sim->evq.cap - 1);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
				 TV_SEND_SIGNALED, 1),
			 0);
	oom_arm(0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 8, 8, 8,
				 TV_SEND_SIGNALED, 2),
			 -ENOMEM);
	ck_assert(oom_disarm());
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 8, 8, 8,
				 TV_SEND_SIGNALED, 3),
			 0);
	ck_assert_int_eq(tv_sim_run(f.sim, 1000000, 0), -ETIMEDOUT);
	ck_assert_uint_eq(poll_next(f.s[0].scq).wr_id, 1);
	ck_assert_uint_eq(poll1(f.s[0].scq).wr_id, 3);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RTS);
	fix_fini(&f);
}
END_TEST

/* Statuses of the n send completions on side 0, in order. */
static void expect_send_statuses(struct fix *f, const enum tv_vf_wc_status *st,
				 int n)
{
	struct tv_vf_wc wc;

	for (int i = 0; i < n; i++) {
		wc = poll_next(f->s[0].scq);
		ck_assert_msg(wc.status == st[i], "wc %d (wr_id %llu): %d", i,
			      (unsigned long long)wc.wr_id, wc.status);
	}
	ck_assert_int_eq(tv_vf_poll_cq(f->s[0].scq, 1, &wc), 0);
}

/* At t ns the event queue is filled and the next allocation fails: the
 * handler that has to queue an event then fails side 0's QP, whose n send
 * completions have the statuses st. */
static void fail_handler_at(struct fix *f, uint64_t t,
			    const enum tv_vf_wc_status *st, int n)
{
	ck_assert_int_eq(tv_sim_schedule(f->sim, t, 1, fill_and_fail_user,
					 f->sim),
			 0);
	ck_assert_int_eq(tv_sim_run(f->sim, 1000000, 0), -ETIMEDOUT);
	ck_assert(oom_disarm());
	ck_assert_int_eq(f->s[0].qp->state, TV_QPS_ERR);
	expect_send_statuses(f, st, n);
}

/* An event handler that cannot queue what it must: the QP fails with a
 * general error on its oldest WR, the others flushed.  TX: qp_op_ns lets
 * one WR go per 1000 ns; at 1000 the second goes, the third's wake-up
 * cannot be queued. */
START_TEST(test_oom_in_tx_handler)
{
	struct tv_sim_config cfg;
	struct fix f;
	const enum tv_vf_wc_status st[] = {
		TV_WC_GENERAL_ERR, TV_WC_WR_FLUSH_ERR, TV_WC_WR_FLUSH_ERR,
	};

	cfg_test(&cfg);
	cfg.qp_op_ns = 1000;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	for (uint32_t i = 0; i < 3; i++)
		ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 8 * i, 8,
					 8 * i, TV_SEND_SIGNALED, i),
				 0);
	fail_handler_at(&f, 999, st, 3);
	fix_fini(&f);
}
END_TEST

/* RETX: two writes lost to a responder in INIT; their retransmission
 * cannot queue the second delivery. */
START_TEST(test_oom_in_retx_handler)
{
	struct fix f;
	struct tv_vf_qp_endpoint e1;
	const enum tv_vf_wc_status st[] = {
		TV_WC_GENERAL_ERR, TV_WC_WR_FLUSH_ERR,
	};

	fix_init(&f);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[1].qp, &e1), 0);
	ck_assert_int_eq(qp_up(f.s[0].qp, &e1, 1, 3, 7), 0);
	to_init(f.s[1].qp);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
				 TV_SEND_SIGNALED, 1),
			 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 8, 8, 8,
				 TV_SEND_SIGNALED, 2),
			 0);
	/* Both lost by ~1000 ns; sent again 8192 ns after they left. */
	fail_handler_at(&f, 5000, st, 2);
	fix_fini(&f);
}
END_TEST

/* ACK of a READ frees its max_rd_atomic slot: the READ waiting for it and
 * the write after it go, the write's delivery cannot be queued. */
START_TEST(test_oom_in_ack_handler)
{
	struct fix f;
	struct tv_vf_qp_endpoint e0, e1;
	struct tv_vf_qp_attr a;
	const enum tv_vf_wc_status st[] = {
		TV_WC_SUCCESS, TV_WC_GENERAL_ERR, TV_WC_WR_FLUSH_ERR,
	};

	fix_init(&f);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[0].qp, &e0), 0);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[1].qp, &e1), 0);
	ck_assert_int_eq(qp_up(f.s[0].qp, &e1, 1, 3, 7), 0);
	ck_assert_int_eq(qp_up(f.s[1].qp, &e0, 1, 3, 7), 0);
	ck_assert_int_eq(tv_vf_query_qp(f.s[0].qp, &a), 0);
	to_sim_qp(f.s[0].qp)->attr.max_rd_atomic = 1;
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_READ, 0, 8, 0,
				 TV_SEND_SIGNALED, 1),
			 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_READ, 8, 8, 8,
				 TV_SEND_SIGNALED, 2),
			 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 16, 8, 16,
				 TV_SEND_SIGNALED, 3),
			 0);
	/* READ 1 is answered at ~2000 ns. */
	fail_handler_at(&f, 1500, st, 3);
	fix_fini(&f);
}
END_TEST

/* A responder only in RTR receives. */
START_TEST(test_responder_in_rtr)
{
	struct fix f;
	struct tv_vf_qp_endpoint e0, e1;
	struct tv_vf_qp_attr a;

	fix_init(&f);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[0].qp, &e0), 0);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[1].qp, &e1), 0);
	ck_assert_int_eq(qp_up(f.s[0].qp, &e1, 1, 1, 7), 0);
	to_init(f.s[1].qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = TV_QPS_RTR;
	a.path_mtu = TV_MTU_1024;
	a.dest_qp_num = e0.qp_num;
	a.rq_psn = e0.psn;
	memcpy(a.dgid, e0.gid, sizeof(a.dgid));
	a.max_dest_rd_atomic = 1;
	a.qp_access_flags = TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE;
	ck_assert_int_eq(tv_vf_modify_qp(f.s[1].qp, &a,
					 TV_QP_STATE | TV_QP_AV |
						 TV_QP_ACCESS_FLAGS |
						 TV_QP_PATH_MTU |
						 TV_QP_DEST_QPN |
						 TV_QP_RQ_PSN |
						 TV_QP_MAX_DEST_RD_ATOMIC |
						 TV_QP_MIN_RNR_TIMER),
			 0);
	fill(f.s[0].buf, 64, 71);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 64, 0,
				 TV_SEND_SIGNALED, 1),
			 0);
	run_all(&f);
	ck_assert_int_eq(poll1(f.s[0].scq).status, TV_WC_SUCCESS);
	ck_assert_mem_eq(f.s[1].buf, f.s[0].buf, 64);
	ck_assert_int_eq(f.s[1].qp->state, TV_QPS_RTR);
	fix_fini(&f);
}
END_TEST

/* Queued wake-ups and retransmissions of a QP destroyed since: stale. */
START_TEST(test_stale_tx_and_retx)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_qp_endpoint e1;
	struct tv_sim_stats st;

	cfg_test(&cfg);
	cfg.qp_op_ns = 1000;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0, 0, 1), 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 8, 8, 8, 0, 2), 0);
	ck_assert_int_eq(tv_vf_destroy_qp(f.s[0].qp), 0);
	f.s[0].qp = NULL;
	run_all(&f);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.events, 0); /* all of them stale */
	ck_assert_uint_eq(f.s[1].buf[0], 0);
	fix_fini(&f);

	fix_init(&f);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[1].qp, &e1), 0);
	ck_assert_int_eq(qp_up(f.s[0].qp, &e1, 1, 3, 7), 0);
	to_init(f.s[1].qp);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0, 0, 1), 0);
	ck_assert_int_eq(tv_sim_run(f.sim, 5000, 0), -ETIMEDOUT);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.events, 1); /* the lost delivery */
	ck_assert(to_sim_qp(f.s[0].qp)->tx_held);
	ck_assert_int_eq(tv_vf_destroy_qp(f.s[0].qp), 0);
	f.s[0].qp = NULL;
	run_all(&f);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.events, 1);
	fix_fini(&f);
}
END_TEST

/* Loopback on one node, one CQ of one entry: the responder's receive
 * completion overflows the CQ the requester shares, which fails the
 * requester inside its own delivery. */
START_TEST(test_loopback_overflow_fails_requester)
{
	struct fix f;
	struct tv_vf_cq *cq;
	struct tv_vf_qp *a, *b;
	struct tv_vf_qp_endpoint ea, eb;
	struct tv_vf_qp_init_attr init = {
		.max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct tv_vf_wc wc;

	fix_init(&f);
	ck_assert_int_eq(tv_vf_create_cq(f.s[0].dev, 1, &cq), 0);
	init.send_cq = cq;
	init.recv_cq = cq;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &a), 0);
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &b), 0);
	ck_assert_int_eq(tv_vf_qp_endpoint(a, &ea), 0);
	ck_assert_int_eq(tv_vf_qp_endpoint(b, &eb), 0);
	ck_assert_int_eq(qp_up(a, &eb, 1, 1, 7), 0);
	ck_assert_int_eq(qp_up(b, &ea, 1, 1, 7), 0);
	for (int i = 0; i < 2; i++) {
		struct tv_vf_recv_wr rwr = { .wr_id = 10 + (uint64_t)i };
		struct tv_vf_send_wr swr = {
			.wr_id = (uint64_t)i,
			.opcode = TV_WR_RDMA_WRITE_WITH_IMM,
			.remote_addr = raddr(&f.s[0], 0),
			.rkey = f.s[0].mr->rkey,
		};

		ck_assert_int_eq(tv_vf_post_recv(b, &rwr, NULL), 0);
		ck_assert_int_eq(tv_vf_post_send(a, &swr, NULL), 0);
	}
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(cq, 1, &wc), -EOVERFLOW);
	ck_assert_int_eq(a->state, TV_QPS_ERR);
	ck_assert_int_eq(b->state, TV_QPS_ERR);
	ck_assert_int_eq(tv_vf_destroy_qp(a), 0);
	ck_assert_int_eq(tv_vf_destroy_qp(b), 0);
	ck_assert_int_eq(tv_vf_destroy_cq(cq), 0);
	fix_fini(&f);
}
END_TEST

/* ---- third round ----------------------------------------------------------------- */

/* A fault with no errno says -EIO. */
START_TEST(test_fail_reg_mr_default_errno)
{
	struct fix f;
	struct tv_vf_mr *mr = NULL;

	fix_init(&f);
	tv_sim_fail_reg_mr(f.sim, 0, 1, 0);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, f.s[0].buf, 64,
				      TV_ACCESS_LOCAL_WRITE, &mr),
			 -EIO);
	ck_assert_ptr_null(mr);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, f.s[0].buf, 64,
				      TV_ACCESS_LOCAL_WRITE, &mr),
			 0);
	ck_assert_int_eq(tv_vf_dereg_mr(mr), 0);
	fix_fini(&f);
}
END_TEST

/* post_ns with qp_op_ns: the QP's own pace is the later one; a post on
 * a QP in ERR rings no doorbell. */
START_TEST(test_post_ns_and_qp_op_ns)
{
	struct tv_sim_config cfg;
	struct fix f;

	cfg_test(&cfg);
	cfg.post_ns = 100;
	cfg.qp_op_ns = 1000;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
				 TV_SEND_SIGNALED, 1),
			 0);
	/* The doorbell's end: it leaves at 100, and the QP is busy until
	 * 1100. */
	ck_assert_uint_eq(to_sim_qp(f.s[0].qp)->op_next_ns, 100);
	ck_assert_int_eq(tv_sim_run(f.sim, 500, 0), -ETIMEDOUT);
	ck_assert_uint_eq(to_sim_qp(f.s[0].qp)->op_next_ns, 1100);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 8, 8, 8,
				 TV_SEND_SIGNALED, 2),
			 0);
	ck_assert_uint_eq(to_sim_node(f.s[0].dev)->post_done_ns, 600);
	ck_assert_uint_eq(to_sim_qp(f.s[0].qp)->op_next_ns, 1100);
	run_all(&f);
	ck_assert_uint_eq(poll_next(f.s[0].scq).wr_id, 1);
	ck_assert_uint_eq(poll1(f.s[0].scq).wr_id, 2);
	to_state(f.s[0].qp, TV_QPS_ERR);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
				 TV_SEND_SIGNALED, 3),
			 0);
	ck_assert_uint_eq(to_sim_node(f.s[0].dev)->post_done_ns, 600);
	ck_assert_int_eq(poll1(f.s[0].scq).status, TV_WC_WR_FLUSH_ERR);
	fix_fini(&f);
}
END_TEST

/* An inline send whose first SGE is empty: only the bytes are taken. */
START_TEST(test_inline_with_empty_sge)
{
	struct fix f;
	struct tv_vf_qp_init_attr init = { 0 };
	struct tv_vf_qp_endpoint e0, e1;
	struct tv_vf_connect_cfg cc;
	struct tv_vf_qp *qp;
	uint8_t src[24];
	struct tv_vf_sge sg[2] = {
		{ .addr = (uintptr_t)src, .length = 0 },
		{ .addr = (uintptr_t)src, .length = sizeof(src) },
	};
	struct tv_vf_send_wr wr = {
		.wr_id = 1, .sg_list = sg, .num_sge = 2,
		.opcode = TV_WR_RDMA_WRITE,
		.send_flags = TV_SEND_SIGNALED | TV_SEND_INLINE,
	};

	fix_init(&f);
	/* Side 0's QP again, with room for inline data. */
	ck_assert_int_eq(tv_vf_destroy_qp(f.s[0].qp), 0);
	init.send_cq = f.s[0].scq;
	init.recv_cq = f.s[0].rcq;
	init.max_send_wr = 4;
	init.max_send_sge = 2;
	init.max_inline_data = 64;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), 0);
	f.s[0].qp = qp;
	conn_cfg(&cc);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[0].qp, &e0), 0);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[1].qp, &e1), 0);
	ck_assert_int_eq(tv_vf_connect_qp(f.s[0].qp, &cc, &e0, &e1), 0);
	ck_assert_int_eq(tv_vf_connect_qp(f.s[1].qp, &cc, &e1, &e0), 0);
	fill(src, sizeof(src), 81);
	wr.remote_addr = raddr(&f.s[1], 0);
	wr.rkey = f.s[1].mr->rkey;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, NULL), 0);
	memset(src, 0, sizeof(src)); /* taken at post time */
	run_all(&f);
	ck_assert_int_eq(poll1(f.s[0].scq).status, TV_WC_SUCCESS);
	fill(src, sizeof(src), 81);
	ck_assert_mem_eq(f.s[1].buf, src, sizeof(src));
	fix_fini(&f);
}
END_TEST

/* A transport timer shorter than the way there: the retry-exceeded
 * completion is due before the request even arrived -- it comes now. */
START_TEST(test_retry_exceeded_due_in_the_past)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_qp_endpoint e1;
	struct tv_vf_wc wc;
	uint64_t t;

	cfg_test(&cfg);
	cfg.link.latency_ns = 100000;
	fix_init_cfg(&f, &cfg);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[1].qp, &e1), 0);
	ck_assert_int_eq(qp_up(f.s[0].qp, &e1, 1, 0, 7), 0); /* 8192 ns */
	to_init(f.s[1].qp);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
				 TV_SEND_SIGNALED, 1),
			 0);
	t = run_until_cqe(&f, 0);
	ck_assert_uint_eq(t, 100008); /* 8 bytes at 1 GB/s, then the link */
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_RETRY_EXC_ERR);
	fix_fini(&f);
}
END_TEST

/* Events of a QP that went to ERR since they were queued: stale. */
START_TEST(test_stale_events_after_err)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_qp_endpoint e1;
	struct tv_vf_wc wc;
	uint8_t zero[2048] = { 0 };

	/* A TX wake-up (qp_op_ns) and placement events (random8). */
	cfg_test(&cfg);
	cfg.qp_op_ns = 1000;
	cfg.placement = TV_SIM_PLACE_RANDOM8;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 91);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 2048, 0,
				 TV_SEND_SIGNALED, 1),
			 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
				 TV_SEND_SIGNALED, 2),
			 0);
	to_state(f.s[0].qp, TV_QPS_ERR);
	run_all(&f);
	ck_assert_int_eq(poll_next(f.s[0].scq).status, TV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(poll1(f.s[0].scq).status, TV_WC_WR_FLUSH_ERR);
	ck_assert_mem_eq(f.s[1].buf, zero, sizeof(zero));
	fix_fini(&f);

	/* A retransmission. */
	fix_init(&f);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[1].qp, &e1), 0);
	ck_assert_int_eq(qp_up(f.s[0].qp, &e1, 1, 3, 7), 0);
	to_init(f.s[1].qp);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
				 TV_SEND_SIGNALED, 1),
			 0);
	ck_assert_int_eq(tv_sim_run(f.sim, 5000, 0), -ETIMEDOUT);
	ck_assert(to_sim_qp(f.s[0].qp)->tx_held);
	to_state(f.s[0].qp, TV_QPS_ERR);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_WR_FLUSH_ERR);
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 1, &wc), 0);
	fix_fini(&f);
}
END_TEST

/* A placed write whose own SGE is bad: nothing is placed, the delivery
 * fails it. */
START_TEST(test_place_bad_local_sge)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_sge sge;
	struct tv_vf_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = TV_WR_RDMA_WRITE, .send_flags = TV_SEND_SIGNALED,
	};
	uint8_t zero[2048] = { 0 };

	cfg_test(&cfg);
	cfg.placement = TV_SIM_PLACE_RANDOM8;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 93);
	sge = (struct tv_vf_sge){ raddr(&f.s[0], 0), 2048,
				  f.s[0].mr->lkey + 0x100 };
	wr.remote_addr = raddr(&f.s[1], 0);
	wr.rkey = f.s[1].mr->rkey;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, NULL), 0);
	run_all(&f);
	ck_assert_int_eq(poll1(f.s[0].scq).status, TV_WC_LOC_PROT_ERR);
	ck_assert_mem_eq(f.s[1].buf, zero, sizeof(zero));
	fix_fini(&f);
}
END_TEST

/* tv_prng_below rejects the low draws that would bias it: with a bound
 * just past 2^63 about half of them. */
START_TEST(test_prng_below_rejects)
{
	const uint64_t bound = (1ull << 63) + 1;
	const uint64_t threshold = (0 - bound) % bound;
	struct tv_prng a, b;
	int rejected = 0;

	tv_prng_init(&a, 11);
	tv_prng_init(&b, 11);
	for (int i = 0; i < 32; i++) {
		uint64_t v = tv_prng_below(&a, bound), r;

		while ((r = tv_prng_next(&b)) < threshold)
			rejected++;
		ck_assert_uint_eq(v, r % bound);
		ck_assert_uint_lt(v, bound);
	}
	ck_assert_int_gt(rejected, 0);
}
END_TEST

/* A refused post's delivery and placement events, never posted again:
 * stale, nothing lands, nothing completes. */
START_TEST(test_oom_place_no_retry)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_wc wc;
	uint8_t zero[2048] = { 0 };

	cfg_test(&cfg);
	cfg.placement = TV_SIM_PLACE_RANDOM8;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 63);
	evq_fill_to(f.sim, f.sim->evq.cap - 2);
	oom_arm(0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 2048, 0,
				 TV_SEND_SIGNALED, 1),
			 -ENOMEM);
	ck_assert(oom_disarm());
	ck_assert_int_eq(tv_sim_run(f.sim, 1000000, 0), -ETIMEDOUT);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 1, &wc), 0);
	ck_assert_mem_eq(f.s[1].buf, zero, sizeof(zero));
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RTS);
	fix_fini(&f);
}
END_TEST

static Suite *sim_edges_suite(void)
{
	Suite *s = suite_create("sim_edges");
	TCase *tc = tcase_create("edges");

	tcase_add_test(tc, test_config_defaults_and_refusals);
	tcase_add_test(tc, test_links_devices_gids);
	tcase_add_test(tc, test_oom_create_world);
	tcase_add_test(tc, test_oom_objects);
	tcase_add_test(tc, test_oom_create_qp);
	tcase_add_test(tc, test_oom_evq_grow);
	tcase_add_test(tc, test_oom_post_send_taken_back);
	tcase_add_test(tc, test_evq_order_ties);
	tcase_add_test(tc, test_loop_reentry_busy);
	tcase_add_test(tc, test_loop_runnable_without_events);
	tcase_add_test(tc, test_loop_deadlines_at_now);
	tcase_add_test(tc, test_modify_qp_refusals);
	tcase_add_test(tc, test_reg_mr_and_cq_refusals);
	tcase_add_test(tc, test_create_qp_refusals);
	tcase_add_test(tc, test_post_refusals);
	tcase_add_test(tc, test_post_ns_empty_list);
	tcase_add_test(tc, test_send_rnr_no_retry);
	tcase_add_test(tc, test_send_into_bad_receive);
	tcase_add_test(tc, test_local_sge_checks);
	tcase_add_test(tc, test_sge_other_pd);
	tcase_add_test(tc, test_sge_before_mr);
	tcase_add_test(tc, test_remote_before_mr);
	tcase_add_test(tc, test_lost_to_init_responder);
	tcase_add_test(tc, test_lost_wrong_path);
	tcase_add_test(tc, test_lost_no_such_node);
	tcase_add_test(tc, test_timeout_zero_waits_forever);
	tcase_add_test(tc, test_poll_after_qp_destroyed);
	tcase_add_test(tc, test_cq_overflow_spares_other_qps);
	tcase_add_test(tc, test_place_multi_sge);
	tcase_add_test(tc, test_place_no_room);
	tcase_add_test(tc, test_place_bad_rkey);
	tcase_add_test(tc, test_place_responder_gone);
	tcase_add_test(tc, test_place_requester_gone);
	tcase_add_test(tc, test_sge_past_mr_end);
	tcase_add_test(tc, test_remote_past_mr_end);
	tcase_add_test(tc, test_sge_stale_key);
	tcase_add_test(tc, test_sge_rkey_as_lkey);
	tcase_add_test(tc, test_lost_read_retried);
	tcase_add_test(tc, test_lost_not_a_sim_gid);
	tcase_add_test(tc, test_step_skips_stale_timer);
	tcase_add_test(tc, test_modify_without_state);
	tcase_add_test(tc, test_pd_busy_and_mr_size);
	tcase_add_test(tc, test_cq_and_qp_limits);
	tcase_add_test(tc, test_poll_after_qp_reset);
	tcase_add_test(tc, test_cq_overflow_fails_receivers);
	tcase_add_test(tc, test_place_small_and_other_ops);
	tcase_add_test(tc, test_oom_place_schedule);
	tcase_add_test(tc, test_oom_tx_wake);
	tcase_add_test(tc, test_oom_in_tx_handler);
	tcase_add_test(tc, test_oom_in_retx_handler);
	tcase_add_test(tc, test_oom_in_ack_handler);
	tcase_add_test(tc, test_responder_in_rtr);
	tcase_add_test(tc, test_stale_tx_and_retx);
	tcase_add_test(tc, test_loopback_overflow_fails_requester);
	tcase_add_test(tc, test_lost_no_such_qpn);
	tcase_add_test(tc, test_fail_reg_mr_default_errno);
	tcase_add_test(tc, test_post_ns_and_qp_op_ns);
	tcase_add_test(tc, test_inline_with_empty_sge);
	tcase_add_test(tc, test_retry_exceeded_due_in_the_past);
	tcase_add_test(tc, test_stale_events_after_err);
	tcase_add_test(tc, test_place_bad_local_sge);
	tcase_add_test(tc, test_prng_below_rejects);
	tcase_add_test(tc, test_oom_place_no_retry);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(sim_edges_suite());
}
