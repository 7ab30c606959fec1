/*
 * Limits of the send queue and of the device that the simulator enforces
 * beyond the RC rules of test_sim.c: outstanding READs and atomics
 * (max_rd_atomic, max_dest_rd_atomic), send-queue slots of unsignaled WRs,
 * the device profiles (mlx5, rxe) and the per-QP processing cost
 * (qp_op_ns).  Each test fails if its behaviour is missing.
 *
 * Timing as in test_sim.c unless a test says otherwise: 1000 ns latency,
 * 1 ns per byte, so a READ of 8 bytes posted at 0 executes at 1000 and
 * completes at 2008.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <tensorverbs/sim.h>

#include "common/check_main.h"
#include "sim_fix.h"

#define ATOMIC_ACCESS                                                   \
	(TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE |               \
	 TV_ACCESS_REMOTE_READ | TV_ACCESS_REMOTE_ATOMIC)

/* ---- helpers ------------------------------------------------------------ */

/* What a connection of the tests asks, beyond the fixture's defaults. */
struct rd_conn {
	uint8_t max_rd_atomic;      /* as a requester */
	uint8_t max_dest_rd_atomic; /* as a responder */
	uint8_t retry_cnt;
	uint8_t timeout;
	uint32_t access;
};

static void rd_conn_default(struct rd_conn *c)
{
	c->max_rd_atomic = 16;
	c->max_dest_rd_atomic = 16;
	c->retry_cnt = 2;
	c->timeout = 1;
	c->access = TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE |
		    TV_ACCESS_REMOTE_READ;
}

/* RESET -> RTS towards remote, every attribute spelled out (0 included,
 * which tv_vf_connect_qp would replace by its default). */
static int qp_up(struct tv_vf_qp *qp, const struct rd_conn *c,
		 const struct tv_vf_qp_endpoint *remote)
{
	struct tv_vf_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = TV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = c->access;
	ret = tv_vf_modify_qp(qp, &a, TV_QP_STATE | TV_QP_PKEY_INDEX |
					      TV_QP_PORT | TV_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	a.qp_state = TV_QPS_RTR;
	a.path_mtu = TV_MTU_1024;
	a.dest_qp_num = remote->qp_num;
	a.rq_psn = remote->psn;
	memcpy(a.dgid, remote->gid, sizeof(a.dgid));
	a.max_dest_rd_atomic = c->max_dest_rd_atomic;
	a.min_rnr_timer = 1;
	ret = tv_vf_modify_qp(qp, &a, TV_QP_STATE | TV_QP_AV |
					      TV_QP_PATH_MTU | TV_QP_DEST_QPN |
					      TV_QP_RQ_PSN |
					      TV_QP_MAX_DEST_RD_ATOMIC |
					      TV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	a.qp_state = TV_QPS_RTS;
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = 7;
	a.max_rd_atomic = c->max_rd_atomic;
	return tv_vf_modify_qp(qp, &a, TV_QP_STATE | TV_QP_SQ_PSN |
					       TV_QP_TIMEOUT | TV_QP_RETRY_CNT |
					       TV_QP_RNR_RETRY |
					       TV_QP_MAX_QP_RD_ATOMIC);
}

/* Side 0 and side 1 of the fixture, each with its own attributes. */
static void connect_rd(struct fix *f, const struct rd_conn *c0,
		       const struct rd_conn *c1)
{
	struct tv_vf_qp_endpoint e0, e1;

	ck_assert_int_eq(tv_vf_qp_endpoint(f->s[0].qp, &e0), 0);
	ck_assert_int_eq(tv_vf_qp_endpoint(f->s[1].qp, &e1), 0);
	ck_assert_int_eq(qp_up(f->s[0].qp, c0, &e1), 0);
	ck_assert_int_eq(qp_up(f->s[1].qp, c1, &e0), 0);
}

/* Side 0 may have `init` READs out; side 1 accepts `dest` of them. */
static void connect_depths(struct fix *f, uint8_t init, uint8_t dest)
{
	struct rd_conn c0, c1;

	rd_conn_default(&c0);
	rd_conn_default(&c1);
	c0.max_rd_atomic = init;
	c1.max_dest_rd_atomic = dest;
	connect_rd(f, &c0, &c1);
}

static void fix_init_profile(struct fix *f, enum tv_sim_profile profile)
{
	struct tv_sim_config cfg;

	cfg_test(&cfg);
	cfg.profile = profile;
	fix_init_cfg(f, &cfg);
}

/* Deliveries at node 1, in execution order. */
struct deliveries {
	uint32_t n;
	uint64_t at[64];
	uint64_t wr_id[64];
	uint32_t status[64];
};

static void record_delivery(void *arg, const struct tv_sim_event *ev)
{
	struct deliveries *d = arg;

	if (ev->kind != TV_SIM_EV_DELIVER || d->n == 64)
		return;
	d->at[d->n] = ev->time_ns;
	d->wr_id[d->n] = ev->wr_id;
	d->status[d->n] = ev->status;
	d->n++;
}

/* n signaled WRs of 8 bytes from side 0, wr_ids first.. first+n-1. */
static void post_n(struct fix *f, enum tv_vf_wr_opcode op, int n,
		   uint64_t first)
{
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(post_op(f, 0, op, 8u * (uint32_t)i, 8, 0,
					 TV_SEND_SIGNALED, first + i), 0);
}

/* The next CQE of cq has this wr_id and status. */
static void expect_cqe(struct tv_vf_cq *cq, uint64_t wr_id,
		       enum tv_vf_wc_status status)
{
	struct tv_vf_wc wc = poll_next(cq);

	ck_assert_uint_eq(wc.wr_id, wr_id);
	ck_assert_int_eq(wc.status, status);
}

/* ---- max_rd_atomic: the requester's outstanding READs ------------------- */

START_TEST(test_rd_requester_waits)
{
	struct fix f;
	struct deliveries d = { 0 };

	fix_init(&f);
	connect_depths(&f, 2, 2);
	tv_sim_set_observer(f.sim, record_delivery, &d);
	fill(f.s[1].buf, BUF, 5);
	post_n(&f, TV_WR_RDMA_READ, 4, 1);
	run_all(&f);
	ck_assert_uint_eq(d.n, 4);
	/* Two go at once; READ 3 leaves when READ 1's data is back (2008),
	 * READ 4 when READ 2's is (its 8 bytes queued behind: 2016). */
	ck_assert_uint_eq(d.at[0], 1000);
	ck_assert_uint_eq(d.at[1], 1000);
	ck_assert_uint_eq(d.at[2], 3008);
	ck_assert_uint_eq(d.at[3], 3016);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 4024);
	for (uint64_t i = 1; i <= 4; i++)
		expect_cqe(f.s[0].scq, i, TV_WC_SUCCESS);
	ck_assert_mem_eq(f.s[0].buf + 24, f.s[1].buf, 8);
	fix_fini(&f);
}
END_TEST

/* The send queue is processed in order: a WRITE behind a waiting READ
 * waits too, although it needs no max_rd_atomic slot. */
START_TEST(test_rd_write_waits_behind_read)
{
	struct fix f;
	struct deliveries d = { 0 };

	fix_init(&f);
	connect_depths(&f, 1, 1);
	tv_sim_set_observer(f.sim, record_delivery, &d);
	post_n(&f, TV_WR_RDMA_READ, 2, 1);
	post_n(&f, TV_WR_RDMA_WRITE, 1, 3);
	run_all(&f);
	ck_assert_uint_eq(d.n, 3);
	ck_assert_uint_eq(d.at[0], 1000);
	/* Both leave at 2008, when READ 1's data is back. */
	ck_assert_uint_eq(d.wr_id[1], 2);
	ck_assert_uint_eq(d.at[1], 3008);
	ck_assert_uint_eq(d.wr_id[2], 3);
	ck_assert_uint_eq(d.at[2], 3016);
	for (uint64_t i = 1; i <= 3; i++)
		expect_cqe(f.s[0].scq, i, TV_WC_SUCCESS);
	fix_fini(&f);
}
END_TEST

/* ---- max_dest_rd_atomic: the responder's resources ---------------------- */

/* Requester 8, responder 2, 8 READs at once: the third finds no
 * resource, an invalid request (class C) that fails both QPs. */
START_TEST(test_rd_responder_naks_excess)
{
	struct fix f;
	struct deliveries d = { 0 };

	fix_init(&f);
	connect_depths(&f, 8, 2);
	tv_sim_set_observer(f.sim, record_delivery, &d);
	post_n(&f, TV_WR_RDMA_READ, 8, 1);
	run_all(&f);
	expect_cqe(f.s[0].scq, 1, TV_WC_SUCCESS);
	expect_cqe(f.s[0].scq, 2, TV_WC_SUCCESS);
	expect_cqe(f.s[0].scq, 3, TV_WC_REM_INV_REQ_ERR);
	for (uint64_t i = 4; i <= 8; i++)
		expect_cqe(f.s[0].scq, i, TV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_ERR);
	ck_assert_int_eq(f.s[1].qp->state, TV_QPS_ERR);
	ck_assert_uint_eq(d.n, 3);
	ck_assert_uint_eq(d.status[2], TV_WC_REM_INV_REQ_ERR);
	fix_fini(&f);
}
END_TEST

/* No error when the requester never has more out than the responder
 * takes: equal depths, or fewer READs than the responder's depth. */
START_TEST(test_rd_responder_within_depth)
{
	static const uint8_t init[] = { 2, 8, 8 };
	static const uint8_t dest[] = { 2, 8, 2 };
	static const int reads[] = { 8, 8, 2 };
	struct fix f;

	for (int k = 0; k < 3; k++) {
		fix_init(&f);
		connect_depths(&f, init[k], dest[k]);
		post_n(&f, TV_WR_RDMA_READ, reads[k], 1);
		run_all(&f);
		for (int i = 1; i <= reads[k]; i++)
			expect_cqe(f.s[0].scq, (uint64_t)i, TV_WC_SUCCESS);
		ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RTS);
		ck_assert_int_eq(f.s[1].qp->state, TV_QPS_RTS);
		fix_fini(&f);
	}
}
END_TEST

/* rxe recycles its responder resources: only a depth of 0 refuses. */
START_TEST(test_rd_responder_rxe)
{
	struct fix f;

	fix_init_profile(&f, TV_SIM_PROFILE_RXE);
	connect_depths(&f, 8, 2);
	post_n(&f, TV_WR_RDMA_READ, 8, 1);
	run_all(&f);
	for (uint64_t i = 1; i <= 8; i++)
		expect_cqe(f.s[0].scq, i, TV_WC_SUCCESS);
	fix_fini(&f);

	fix_init_profile(&f, TV_SIM_PROFILE_RXE);
	connect_depths(&f, 8, 0);
	post_n(&f, TV_WR_RDMA_READ, 2, 1);
	run_all(&f);
	expect_cqe(f.s[0].scq, 1, TV_WC_REM_INV_REQ_ERR);
	expect_cqe(f.s[0].scq, 2, TV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(f.s[1].qp->state, TV_QPS_ERR);
	fix_fini(&f);
}
END_TEST

/* ---- the limits at modify_qp, and the depths kept ----------------------- */

START_TEST(test_rd_limits_at_modify)
{
	struct tv_sim_config cfg;
	struct tv_vf_device_attr da;
	struct tv_vf_qp_attr qa;
	struct rd_conn c;
	struct tv_vf_qp_endpoint e1;
	struct fix f;

	cfg_test(&cfg);
	cfg.max_qp_init_rd_atom = 4;
	fix_init_cfg(&f, &cfg);
	ck_assert_int_eq(tv_vf_query_device(f.s[0].dev, &da), 0);
	ck_assert_uint_eq(da.max_qp_rd_atom, 16);
	ck_assert_uint_eq(da.max_qp_init_rd_atom, 4);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[1].qp, &e1), 0);
	/* The requester's depth is held to max_qp_init_rd_atom; the QP is
	 * left in RTR, its attributes unchanged. */
	rd_conn_default(&c);
	c.max_rd_atomic = 5;
	ck_assert_int_eq(qp_up(f.s[0].qp, &c, &e1), -EINVAL);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RTR);
	ck_assert_int_eq(tv_vf_query_qp(f.s[0].qp, &qa), 0);
	ck_assert_uint_eq(qa.max_rd_atomic, 0);
	ck_assert_uint_eq(qa.max_dest_rd_atomic, 16);
	/* The responder's to max_qp_rd_atom. */
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp,
					 &(struct tv_vf_qp_attr){
						 .qp_state = TV_QPS_RESET },
					 TV_QP_STATE), 0);
	c.max_rd_atomic = 4;
	c.max_dest_rd_atomic = 17;
	ck_assert_int_eq(qp_up(f.s[0].qp, &c, &e1), -EINVAL);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_INIT);
	fix_fini(&f);
}
END_TEST

/* Both devices round up to a power of two; on 0 they differ. */
START_TEST(test_rd_depth_rounding)
{
	static const enum tv_sim_profile prof[] = {
		TV_SIM_PROFILE_MLX5, TV_SIM_PROFILE_RXE,
	};
	static const uint8_t zero_is[] = { 1, 0 };
	struct tv_vf_qp_attr qa;
	struct fix f;

	for (int k = 0; k < 2; k++) {
		fix_init_profile(&f, prof[k]);
		connect_depths(&f, 3, 0);
		ck_assert_int_eq(tv_vf_query_qp(f.s[0].qp, &qa), 0);
		ck_assert_uint_eq(qa.max_rd_atomic, 4);
		ck_assert_uint_eq(qa.max_dest_rd_atomic, 16);
		ck_assert_int_eq(tv_vf_query_qp(f.s[1].qp, &qa), 0);
		ck_assert_uint_eq(qa.max_dest_rd_atomic, zero_is[k]);
		fix_fini(&f);
	}
}
END_TEST

/* rxe with max_rd_atomic 0: a READ never leaves, nor what follows it;
 * mlx5 takes 0 as 1 and reads. */
START_TEST(test_rd_zero_depth)
{
	struct deliveries d = { 0 };
	struct fix f;

	fix_init_profile(&f, TV_SIM_PROFILE_RXE);
	connect_depths(&f, 0, 16);
	tv_sim_set_observer(f.sim, record_delivery, &d);
	post_n(&f, TV_WR_RDMA_READ, 1, 1);
	post_n(&f, TV_WR_RDMA_WRITE, 1, 2);
	run_all(&f);
	ck_assert_uint_eq(d.n, 0);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 1,
				       &(struct tv_vf_wc){ 0 }), 0);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RTS);
	ck_assert_int_eq(tv_sim_qp_fail(f.s[0].qp, TV_WC_WR_FLUSH_ERR), 0);
	expect_cqe(f.s[0].scq, 1, TV_WC_WR_FLUSH_ERR);
	expect_cqe(f.s[0].scq, 2, TV_WC_WR_FLUSH_ERR);
	fix_fini(&f);

	fix_init(&f);
	connect_depths(&f, 0, 16);
	post_n(&f, TV_WR_RDMA_READ, 2, 1);
	run_all(&f);
	expect_cqe(f.s[0].scq, 1, TV_WC_SUCCESS);
	expect_cqe(f.s[0].scq, 2, TV_WC_SUCCESS);
	/* One at a time: the second left when the first's data was back. */
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 2 * 2008);
	fix_fini(&f);
}
END_TEST

/* ---- send-queue slots --------------------------------------------------- */

/* Post 8-byte writes from side 0, flags for each; n of them. */
static int post_writes(struct fix *f, int n, uint32_t flags, uint64_t first)
{
	int ret = 0;

	for (int i = 0; i < n && !ret; i++)
		ret = post_op(f, 0, TV_WR_RDMA_WRITE, 0, 8, 0, flags,
			      first + (uint64_t)i);
	return ret;
}

/*
 * mlx5: a completed WR keeps its slot until a CQE at or after it is
 * polled.  16 deep: 15 unsignaled and one signaled fill it; when all
 * completed the 17th still does not fit, until the CQE is polled.
 */
START_TEST(test_sq_slots_mlx5)
{
	struct fix f;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(post_writes(&f, 15, 0, 1), 0);
	ck_assert_int_eq(post_writes(&f, 1, TV_SEND_SIGNALED, 16), 0);
	ck_assert_int_eq(post_writes(&f, 1, 0, 17), -ENOMEM);
	run_all(&f);
	ck_assert_int_eq(post_writes(&f, 1, 0, 17), -ENOMEM);
	expect_cqe(f.s[0].scq, 16, TV_WC_SUCCESS);
	ck_assert_int_eq(post_writes(&f, 16, 0, 17), 0);
	ck_assert_int_eq(post_writes(&f, 1, 0, 33), -ENOMEM);
	/* Never signaled, never given back: this QP can send no more. */
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 1,
				       &(struct tv_vf_wc){ 0 }), 0);
	ck_assert_int_eq(post_writes(&f, 1, TV_SEND_SIGNALED, 33), -ENOMEM);
	fix_fini(&f);
}
END_TEST

/* A polled CQE gives back its WR's slot and those before it, no more. */
START_TEST(test_sq_slots_partial_poll)
{
	struct fix f;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(post_writes(&f, 7, 0, 1), 0);
	ck_assert_int_eq(post_writes(&f, 1, TV_SEND_SIGNALED, 8), 0);
	ck_assert_int_eq(post_writes(&f, 7, 0, 9), 0);
	ck_assert_int_eq(post_writes(&f, 1, TV_SEND_SIGNALED, 16), 0);
	run_all(&f);
	expect_cqe(f.s[0].scq, 8, TV_WC_SUCCESS);
	ck_assert_int_eq(post_writes(&f, 8, 0, 17), 0);
	ck_assert_int_eq(post_writes(&f, 1, 0, 25), -ENOMEM);
	fix_fini(&f);
}
END_TEST

/* The contract of a chain that does not fit: the WRs before the first
 * that did not are posted, *bad_wr_p names it. */
START_TEST(test_sq_chain_bad_wr)
{
	struct fix f;
	struct tv_vf_sge sge;
	struct tv_vf_send_wr wr[3], *bad = NULL;
	struct tv_sim_stats st;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(post_writes(&f, 15, 0, 1), 0);
	sge = (struct tv_vf_sge){ raddr(&f.s[0], 0), 8, f.s[0].mr->lkey };
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 3; i++) {
		wr[i].wr_id = 100 + i;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = TV_WR_RDMA_WRITE;
		wr[i].send_flags = TV_SEND_SIGNALED;
		wr[i].remote_addr = raddr(&f.s[1], 0);
		wr[i].rkey = f.s[1].mr->rkey;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, wr, &bad), -ENOMEM);
	ck_assert_ptr_eq(bad, &wr[1]);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.work_requests, 16);
	run_all(&f);
	expect_cqe(f.s[0].scq, 100, TV_WC_SUCCESS);
	fix_fini(&f);
}
END_TEST

/* rxe: the slots come back when the WRs complete, with no poll. */
START_TEST(test_sq_slots_rxe)
{
	struct fix f;

	fix_init_profile(&f, TV_SIM_PROFILE_RXE);
	connect_pair(&f);
	ck_assert_int_eq(post_writes(&f, 16, 0, 1), 0);
	ck_assert_int_eq(post_writes(&f, 1, 0, 17), -ENOMEM);
	run_all(&f);
	ck_assert_int_eq(post_writes(&f, 16, 0, 17), 0);
	ck_assert_int_eq(post_writes(&f, 1, 0, 33), -ENOMEM);
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 1,
				       &(struct tv_vf_wc){ 0 }), 0);
	fix_fini(&f);
}
END_TEST

/* An error always completes, signaled or not (IBA 10.7.3.1), and the
 * WRs after it flush, unsignaled ones included. */
START_TEST(test_unsignaled_error_cqe)
{
	struct fix f;
	struct tv_vf_sge sge;
	struct tv_vf_send_wr wr = { 0 }, *bad = NULL;

	fix_init(&f);
	connect_pair(&f);
	sge = (struct tv_vf_sge){ raddr(&f.s[0], 0), 8, f.s[0].mr->lkey };
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = TV_WR_RDMA_WRITE;
	wr.remote_addr = raddr(&f.s[1], 0);
	wr.rkey = f.s[1].mr->rkey ^ 0x100; /* names no MR */
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), 0);
	ck_assert_int_eq(post_writes(&f, 2, 0, 2), 0);
	ck_assert_int_eq(post_writes(&f, 1, TV_SEND_SIGNALED, 4), 0);
	run_all(&f);
	expect_cqe(f.s[0].scq, 1, TV_WC_REM_ACCESS_ERR);
	for (uint64_t i = 2; i <= 4; i++)
		expect_cqe(f.s[0].scq, i, TV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 1,
				       &(struct tv_vf_wc){ 0 }), 0);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_ERR);
	fix_fini(&f);
}
END_TEST

/* ---- device profiles ---------------------------------------------------- */

START_TEST(test_profile_names_and_limits)
{
	struct tv_sim_config cfg;
	struct tv_vf_device_attr da;
	enum tv_sim_profile p = TV_SIM_PROFILE_RXE;
	struct tv_sim *sim;

	ck_assert_int_eq(tv_sim_profile_parse("mlx5", &p), 0);
	ck_assert_int_eq(p, TV_SIM_PROFILE_MLX5);
	ck_assert_int_eq(tv_sim_profile_parse("rxe", &p), 0);
	ck_assert_int_eq(p, TV_SIM_PROFILE_RXE);
	ck_assert_int_eq(tv_sim_profile_parse("MLX5", &p), -EINVAL);
	ck_assert_int_eq(tv_sim_profile_parse(NULL, &p), -EINVAL);
	ck_assert_int_eq(p, TV_SIM_PROFILE_RXE);
	ck_assert_str_eq(tv_sim_profile_str(TV_SIM_PROFILE_MLX5), "mlx5");
	ck_assert_ptr_null(tv_sim_profile_str((enum tv_sim_profile)7));
	/* The default is mlx5's, 16 and 16; rxe's 128 and 128. */
	cfg_test(&cfg);
	ck_assert_int_eq(cfg.profile, TV_SIM_PROFILE_MLX5);
	cfg.profile = TV_SIM_PROFILE_RXE;
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), 0);
	ck_assert_int_eq(tv_vf_query_device(tv_sim_device(sim, 0), &da), 0);
	ck_assert_uint_eq(da.max_qp_rd_atom, 128);
	ck_assert_uint_eq(da.max_qp_init_rd_atom, 128);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
	cfg.profile = (enum tv_sim_profile)7;
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), -EINVAL);
	cfg.profile = TV_SIM_PROFILE_MLX5;
	cfg.max_qp_rd_atom = 129;
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), -EINVAL);
}
END_TEST

/* A QP towards a QP number nobody has, retry_cnt rc, timeout 1. */
static void connect_nowhere(struct fix *f, uint8_t rc)
{
	struct tv_vf_qp_endpoint e1;
	struct rd_conn c;

	rd_conn_default(&c);
	c.retry_cnt = rc;
	ck_assert_int_eq(tv_vf_qp_endpoint(f->s[1].qp, &e1), 0);
	e1.qp_num = 0x777;
	ck_assert_int_eq(qp_up(f->s[0].qp, &c, &e1), 0);
}

/* retry_cnt 7: 7 retries on mlx5, forever on rxe; 6 is 6 on both. */
START_TEST(test_retry_cnt_seven)
{
	struct fix f;

	fix_init(&f);
	connect_nowhere(&f, 7);
	ck_assert_int_eq(post_writes(&f, 1, 0, 1), 0);
	/* 8192 ns per try, 8 tries. */
	ck_assert_uint_eq(run_until_cqe(&f, 0), 8 * 8192);
	expect_cqe(f.s[0].scq, 1, TV_WC_RETRY_EXC_ERR);
	fix_fini(&f);

	fix_init_profile(&f, TV_SIM_PROFILE_RXE);
	connect_nowhere(&f, 6);
	ck_assert_int_eq(post_writes(&f, 1, 0, 1), 0);
	ck_assert_uint_eq(run_until_cqe(&f, 0), 7 * 8192);
	expect_cqe(f.s[0].scq, 1, TV_WC_RETRY_EXC_ERR);
	fix_fini(&f);

	fix_init_profile(&f, TV_SIM_PROFILE_RXE);
	connect_nowhere(&f, 7);
	ck_assert_int_eq(post_writes(&f, 1, 0, 1), 0);
	ck_assert_int_eq(tv_sim_run(f.sim, 10000000, 0), -ETIMEDOUT);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RTS);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 1,
				       &(struct tv_vf_wc){ 0 }), 0);
	fix_fini(&f);
}
END_TEST

/* Both sides' MRs with atomic access, QPs connected to take atomics. */
static void atomics_up(struct fix *f)
{
	struct rd_conn c;

	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(tv_vf_dereg_mr(f->s[i].mr), 0);
		f->s[i].mr = NULL;
		ck_assert_int_eq(tv_vf_reg_mr(f->s[i].pd, f->s[i].buf, BUF,
					      ATOMIC_ACCESS, &f->s[i].mr), 0);
	}
	rd_conn_default(&c);
	c.access = ATOMIC_ACCESS;
	connect_rd(f, &c, &c);
}

/* A fetch-and-add on remote offset 4: mlx5 posts it and the responder
 * NAKs it; rxe's provider refuses it at post. */
START_TEST(test_misaligned_atomic_profiles)
{
	struct tv_sim_stats st;
	struct fix f;

	fix_init(&f);
	atomics_up(&f);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 4,
				 TV_SEND_SIGNALED, 1), 0);
	run_all(&f);
	expect_cqe(f.s[0].scq, 1, TV_WC_REM_INV_REQ_ERR);
	ck_assert_int_eq(f.s[1].qp->state, TV_QPS_ERR);
	fix_fini(&f);

	fix_init_profile(&f, TV_SIM_PROFILE_RXE);
	atomics_up(&f);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 4,
				 TV_SEND_SIGNALED, 1), -EINVAL);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.work_requests, 0);
	/* Aligned, it works there too. */
	ck_assert_int_eq(post_op(&f, 0, TV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 8,
				 TV_SEND_SIGNALED, 2), 0);
	run_all(&f);
	expect_cqe(f.s[0].scq, 2, TV_WC_SUCCESS);
	fix_fini(&f);
}
END_TEST

/* Not a difference: a zero-length READ or WRITE names no memory, so an
 * invalid rkey passes on both (google/rdma-unit-test). */
START_TEST(test_zero_length_bad_rkey_profiles)
{
	static const enum tv_sim_profile prof[] = {
		TV_SIM_PROFILE_MLX5, TV_SIM_PROFILE_RXE,
	};
	static const enum tv_vf_wr_opcode ops[] = {
		TV_WR_RDMA_READ, TV_WR_RDMA_WRITE,
	};
	struct tv_vf_send_wr wr = { 0 }, *bad = NULL;
	struct fix f;

	for (int k = 0; k < 2; k++) {
		fix_init_profile(&f, prof[k]);
		connect_pair(&f);
		for (int i = 0; i < 2; i++) {
			wr.wr_id = (uint64_t)i + 1;
			wr.opcode = ops[i];
			wr.send_flags = TV_SEND_SIGNALED;
			wr.remote_addr = 0x1000;
			wr.rkey = 0xdead01;
			ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad),
					 0);
		}
		run_all(&f);
		expect_cqe(f.s[0].scq, 1, TV_WC_SUCCESS);
		expect_cqe(f.s[0].scq, 2, TV_WC_SUCCESS);
		ck_assert_int_eq(f.s[1].qp->state, TV_QPS_RTS);
		fix_fini(&f);
	}
}
END_TEST

/* ---- qp_op_ns: one processing unit per QP ------------------------------- */

#define MANY_QPS 8u
#define MANY_WRS 1024u

/* Two nodes, nqp QP pairs, every WR signaled onto one CQ per node. */
struct many {
	struct tv_sim *sim;
	struct tv_vf_pd *pd[2];
	struct tv_vf_cq *cq[2];
	struct tv_vf_qp *qp[2][MANY_QPS];
	struct tv_vf_mr *mr[2];
	uint8_t *buf[2];
	uint32_t nqp;
};

static void many_side(struct many *m, uint32_t n, uint32_t depth)
{
	struct tv_vf_device *dev = tv_sim_device(m->sim, n);
	struct tv_vf_qp_init_attr init = { 0 };

	ck_assert_int_eq(tv_vf_alloc_pd(dev, &m->pd[n]), 0);
	ck_assert_int_eq(tv_vf_create_cq(dev, MANY_WRS, &m->cq[n]), 0);
	init.send_cq = init.recv_cq = m->cq[n];
	init.max_send_wr = init.max_recv_wr = depth;
	init.max_send_sge = init.max_recv_sge = 1;
	for (uint32_t q = 0; q < m->nqp; q++)
		ck_assert_int_eq(tv_vf_create_qp(m->pd[n], &init,
						 &m->qp[n][q]), 0);
	m->buf[n] = calloc(1, BUF);
	ck_assert_ptr_nonnull(m->buf[n]);
	ck_assert_int_eq(tv_vf_reg_mr(m->pd[n], m->buf[n], BUF,
				      TV_ACCESS_LOCAL_WRITE |
					      TV_ACCESS_REMOTE_WRITE |
					      TV_ACCESS_REMOTE_READ,
				      &m->mr[n]), 0);
}

static void many_init(struct many *m, const struct tv_sim_config *cfg,
		      uint32_t nqp)
{
	struct tv_vf_connect_cfg cc;
	struct tv_vf_qp_endpoint e0, e1;

	memset(m, 0, sizeof(*m));
	m->nqp = nqp;
	ck_assert_int_eq(tv_sim_create(cfg, &m->sim), 0);
	many_side(m, 0, MANY_WRS / nqp);
	many_side(m, 1, MANY_WRS / nqp);
	conn_cfg(&cc);
	for (uint32_t q = 0; q < nqp; q++) {
		tv_vf_qp_endpoint(m->qp[0][q], &e0);
		tv_vf_qp_endpoint(m->qp[1][q], &e1);
		ck_assert_int_eq(tv_vf_connect_qp(m->qp[0][q], &cc, &e0, &e1),
				 0);
		ck_assert_int_eq(tv_vf_connect_qp(m->qp[1][q], &cc, &e1, &e0),
				 0);
	}
}

static void many_fini(struct many *m)
{
	for (uint32_t n = 0; n < 2; n++) {
		for (uint32_t q = 0; q < m->nqp; q++)
			ck_assert_int_eq(tv_vf_destroy_qp(m->qp[n][q]), 0);
		ck_assert_int_eq(tv_vf_dereg_mr(m->mr[n]), 0);
		ck_assert_int_eq(tv_vf_destroy_cq(m->cq[n]), 0);
		ck_assert_int_eq(tv_vf_dealloc_pd(m->pd[n]), 0);
		free(m->buf[n]);
	}
	ck_assert_int_eq(tv_sim_destroy(m->sim), 0);
}

/*
 * MANY_WRS WRs of len bytes from node 0, dealt round-robin over nqp
 * QPs, all posted at 0 one at a time; the virtual time when the last
 * completes.
 */
/* nwr WRs posted in calls of chain WRs each, call k on QP k % nqp. */
static uint64_t many_run_chained(const struct tv_sim_config *cfg,
				 uint32_t nqp, enum tv_vf_wr_opcode op,
				 uint32_t len, uint32_t nwr, uint32_t chain)
{
	struct tv_vf_wc wc[64];
	struct tv_vf_sge sge[MANY_WRS];
	struct tv_vf_send_wr wr[MANY_WRS], *bad = NULL;
	struct many m;
	uint32_t done = 0;
	uint64_t t;
	int n;

	ck_assert_uint_le(nwr, MANY_WRS);
	many_init(&m, cfg, nqp);
	for (uint32_t i = 0; i < nwr; i++) {
		sge[i] = (struct tv_vf_sge){
			(uint64_t)(uintptr_t)m.buf[0], len, m.mr[0]->lkey,
		};
		wr[i] = (struct tv_vf_send_wr){
			.wr_id = i, .sg_list = &sge[i], .num_sge = 1,
			.opcode = op, .send_flags = TV_SEND_SIGNALED,
			.remote_addr = (uint64_t)(uintptr_t)m.buf[1],
			.rkey = m.mr[1]->rkey,
			.next = (i + 1) % chain && i + 1 < nwr ? &wr[i + 1] :
								  NULL,
		};
	}
	for (uint32_t k = 0; k * chain < nwr; k++)
		ck_assert_int_eq(tv_vf_post_send(m.qp[0][k % nqp],
						 &wr[k * chain], &bad), 0);
	ck_assert_int_eq(tv_sim_run(m.sim, 0, 0), 0);
	t = tv_sim_now_ns(m.sim);
	while ((n = tv_vf_poll_cq(m.cq[0], 64, wc)) > 0)
		for (int i = 0; i < n; i++, done++)
			ck_assert_int_eq(wc[i].status, TV_WC_SUCCESS);
	ck_assert_uint_eq(done, nwr);
	many_fini(&m);
	return t;
}

static uint64_t many_run(const struct tv_sim_config *cfg, uint32_t nqp,
			 enum tv_vf_wr_opcode op, uint32_t len, uint32_t nwr)
{
	return many_run_chained(cfg, nqp, op, len, nwr, 1);
}

/*
 * 1024 READs of 8 bytes, qp_op_ns 100 and a link that is never the
 * bottleneck (100 ns, infinite bandwidth): one QP sends one READ per
 * 100 ns, eight QPs eight.  Without qp_op_ns one QP is 8x faster.
 */
START_TEST(test_qp_op_ns_message_rate)
{
	struct tv_sim_config cfg;
	uint64_t one, eight, free_run;

	cfg_test(&cfg);
	cfg.link.latency_ns = 100;
	cfg.link.bytes_per_sec = 0;
	cfg.qp_op_ns = 100;
	one = many_run(&cfg, 1, TV_WR_RDMA_READ, 8, MANY_WRS);
	eight = many_run(&cfg, MANY_QPS, TV_WR_RDMA_READ, 8, MANY_WRS);
	/* The last READ leaves at 1023 * 100 (127 * 100 on 8), then one
	 * round trip. */
	ck_assert_uint_eq(one, 1023 * 100 + 200);
	ck_assert_uint_eq(eight, 127 * 100 + 200);
	ck_assert_uint_ge(one * 10, eight * 75);
	ck_assert_uint_le(one * 10, eight * 85);
	cfg.qp_op_ns = 0;
	free_run = many_run(&cfg, 1, TV_WR_RDMA_READ, 8, MANY_WRS);
	ck_assert_uint_le(free_run * 4, one);
}
END_TEST

/* When the link is the bottleneck (1000-byte writes, 1000 ns each at
 * 1e9 bytes/s) more QPs do not help: qp_op_ns adds to the link. */
START_TEST(test_qp_op_ns_link_bound)
{
	struct tv_sim_config cfg;
	uint64_t one, eight;

	cfg_test(&cfg);
	cfg.link.latency_ns = 100;
	cfg.qp_op_ns = 100;
	one = many_run(&cfg, 1, TV_WR_RDMA_WRITE, 1000, 64);
	eight = many_run(&cfg, MANY_QPS, TV_WR_RDMA_WRITE, 1000, 64);
	/* The last write leaves at 63000, ends on the wire 1000 later,
	 * 100 of latency, 100 for the ACK. */
	ck_assert_uint_eq(one, 64 * 1000 + 200);
	ck_assert_uint_eq(eight, one);
}
END_TEST

/*
 * post_ns: one post_send call's doorbell, one after another on a node.
 * 1024 small writes over 8 QPs (no other limit, a fast link; writes, so
 * that max_rd_atomic does not pace them): one a call pays 1024
 * doorbells, lists of 128 pay 8.
 */
START_TEST(test_post_ns_lists)
{
	struct tv_sim_config cfg;
	uint64_t singles, lists, free_run;

	cfg_test(&cfg);
	cfg.link.latency_ns = 100;
	cfg.link.bytes_per_sec = 0;
	cfg.post_ns = 400;
	singles = many_run_chained(&cfg, MANY_QPS, TV_WR_RDMA_WRITE, 8,
				   MANY_WRS, 1);
	lists = many_run_chained(&cfg, MANY_QPS, TV_WR_RDMA_WRITE, 8,
				 MANY_WRS, 128);
	/* The last call ends at 1024 x 400 (8 x 400), then a round trip. */
	ck_assert_uint_eq(singles, 1024 * 400 + 200);
	ck_assert_uint_eq(lists, 8 * 400 + 200);
	cfg.post_ns = 0;
	free_run = many_run_chained(&cfg, MANY_QPS, TV_WR_RDMA_WRITE, 8,
				    MANY_WRS, 1);
	ck_assert_uint_eq(free_run, 200);
}
END_TEST

/* Same seed, same run: the paced transmissions are deterministic. */
START_TEST(test_qp_op_ns_deterministic)
{
	struct tv_sim_config cfg;
	struct many m[2];
	uint64_t h[2];

	cfg_test(&cfg);
	cfg.qp_op_ns = 250;
	cfg.jitter_ns_max = 300;
	for (int k = 0; k < 2; k++) {
		many_init(&m[k], &cfg, 4);
		for (uint32_t i = 0; i < 64; i++) {
			struct tv_vf_sge sge = {
				(uint64_t)(uintptr_t)m[k].buf[0], 8,
				m[k].mr[0]->lkey,
			};
			struct tv_vf_send_wr wr = {
				.wr_id = i, .sg_list = &sge, .num_sge = 1,
				.opcode = i % 3 ? TV_WR_RDMA_WRITE :
						  TV_WR_RDMA_READ,
				.send_flags = TV_SEND_SIGNALED,
				.remote_addr = (uint64_t)(uintptr_t)m[k].buf[1],
				.rkey = m[k].mr[1]->rkey,
			}, *bad = NULL;

			ck_assert_int_eq(tv_vf_post_send(m[k].qp[0][i % 4],
							 &wr, &bad), 0);
		}
		ck_assert_int_eq(tv_sim_run(m[k].sim, 0, 0), 0);
		h[k] = tv_sim_event_hash(m[k].sim);
		many_fini(&m[k]);
	}
	ck_assert_uint_eq(h[0], h[1]);
}
END_TEST

static Suite *rd_suite(void)
{
	Suite *s = suite_create("sim_rd");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_rd_requester_waits);
	tcase_add_test(tc, test_rd_write_waits_behind_read);
	tcase_add_test(tc, test_rd_responder_naks_excess);
	tcase_add_test(tc, test_rd_responder_within_depth);
	tcase_add_test(tc, test_rd_responder_rxe);
	tcase_add_test(tc, test_rd_limits_at_modify);
	tcase_add_test(tc, test_rd_depth_rounding);
	tcase_add_test(tc, test_rd_zero_depth);
	tcase_add_test(tc, test_sq_slots_mlx5);
	tcase_add_test(tc, test_sq_slots_partial_poll);
	tcase_add_test(tc, test_sq_chain_bad_wr);
	tcase_add_test(tc, test_sq_slots_rxe);
	tcase_add_test(tc, test_unsignaled_error_cqe);
	tcase_add_test(tc, test_profile_names_and_limits);
	tcase_add_test(tc, test_retry_cnt_seven);
	tcase_add_test(tc, test_misaligned_atomic_profiles);
	tcase_add_test(tc, test_zero_length_bad_rkey_profiles);
	tcase_add_test(tc, test_qp_op_ns_message_rate);
	tcase_add_test(tc, test_post_ns_lists);
	tcase_add_test(tc, test_qp_op_ns_link_bound);
	tcase_add_test(tc, test_qp_op_ns_deterministic);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(rd_suite());
}
