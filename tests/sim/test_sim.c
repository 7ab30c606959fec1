/*
 * The simulator's semantics, one test per rule and per error path.
 *
 * Unless a test says otherwise the world has two nodes joined by links of
 * 1000 ns latency and 1e9 bytes/s (1 ns per byte), so that every virtual
 * time below can be worked out by hand:
 *   request arrives  = depart + len + 1000
 *   ACK arrives      = execution + 1000
 *   read data back   = execution + len + 1000
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <tensorverbs/sim.h>

#include "common/check_main.h"
#include "sim_fix.h"

/* ---- inline data ------------------------------------------------------------ */

/* Both sides' QPs again, asking for inline bytes. */
static void requp_inline(struct fix *f, uint32_t inline_bytes)
{
	for (int i = 0; i < 2; i++) {
		struct side *s = &f->s[i];
		struct tv_vf_qp_init_attr init = {
			.send_cq = s->scq, .recv_cq = s->rcq,
			.max_send_wr = 16, .max_recv_wr = 16,
			.max_send_sge = 4, .max_recv_sge = 4,
			.max_inline_data = inline_bytes,
		};

		ck_assert_int_eq(tv_vf_destroy_qp(s->qp), 0);
		s->qp = NULL;
		ck_assert_int_eq(tv_vf_create_qp(s->pd, &init, &s->qp), 0);
		ck_assert_uint_eq(s->qp->max_inline_data, inline_bytes);
	}
}

START_TEST(test_inline_takes_bytes_at_post)
{
	struct fix f;
	uint8_t src[64], want[64];
	struct tv_vf_sge sge = { .addr = (uint64_t)(uintptr_t)src,
				 .length = sizeof(src), .lkey = 0 };
	struct tv_vf_send_wr wr = {
		.wr_id = 9, .sg_list = &sge, .num_sge = 1,
		.opcode = TV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = TV_SEND_INLINE | TV_SEND_SIGNALED,
		.imm_data = 77,
	}, *bad = NULL;
	struct tv_vf_wc wc;

	fix_init(&f);
	requp_inline(&f, 64);
	connect_pair(&f);
	ck_assert_int_eq(post_rx(&f, 1, 0, 0, 5), 0);
	/* Unregistered memory, lkey 0: the WQE carries the bytes. */
	fill(src, sizeof(src), 3);
	memcpy(want, src, sizeof(want));
	wr.remote_addr = raddr(&f.s[1], 128);
	wr.rkey = f.s[1].mr->rkey;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), 0);
	/* Reused at once: what was posted is what lands. */
	memset(src, 0xee, sizeof(src));
	run_all(&f);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	wc = poll1(f.s[1].rcq);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_uint_eq(wc.imm_data, 77);
	ck_assert_uint_eq(wc.byte_len, 64);
	ck_assert_mem_eq(f.s[1].buf + 128, want, sizeof(want));
	fix_fini(&f);
}
END_TEST

START_TEST(test_inline_limits)
{
	struct tv_sim_config cfg;
	struct fix f;
	uint8_t src[65] = { 0 };
	struct tv_vf_sge sge = { .addr = (uint64_t)(uintptr_t)src,
				 .length = sizeof(src) };
	struct tv_vf_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = TV_WR_RDMA_WRITE,
		.send_flags = TV_SEND_INLINE,
	}, *bad = NULL;
	struct tv_vf_qp_init_attr init = { 0 };
	struct tv_vf_qp *qp = NULL;

	cfg_test(&cfg);
	fix_init_cfg(&f, &cfg);
	requp_inline(&f, 64);
	connect_pair(&f);
	wr.remote_addr = raddr(&f.s[1], 0);
	wr.rkey = f.s[1].mr->rkey;
	/* One byte over what the QP took. */
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	/* Reads carry no payload to inline. */
	sge.length = 8;
	wr.opcode = TV_WR_RDMA_READ;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), -EINVAL);
	/* More than the device has: refused at creation. */
	init.send_cq = f.s[0].scq;
	init.recv_cq = f.s[0].rcq;
	init.max_send_wr = init.max_recv_wr = 4;
	init.max_inline_data = 4096;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	ck_assert_ptr_null(qp);
	fix_fini(&f);
}
END_TEST

/* ---- PRNG ------------------------------------------------------------------ */

START_TEST(test_prng)
{
	struct tv_prng a, b, c;
	uint64_t x;

	tv_prng_init(&a, 7);
	tv_prng_init(&b, 7);
	for (int i = 0; i < 100; i++)
		ck_assert_uint_eq(tv_prng_next(&a), tv_prng_next(&b));
	tv_prng_fork(&a, &c);
	ck_assert_uint_ne(tv_prng_next(&a), tv_prng_next(&c));
	tv_prng_init(&b, 8);
	ck_assert_uint_ne(tv_prng_next(&a), tv_prng_next(&b));
	for (int i = 0; i < 1000; i++) {
		x = tv_prng_below(&a, 3);
		ck_assert_uint_lt(x, 3);
	}
	ck_assert_uint_eq(tv_prng_below(&a, 1), 0);
	/* xoshiro256** reference value for splitmix64(0) seeding. */
	tv_prng_init(&a, 0);
	ck_assert_uint_eq(a.s[0], 0xe220a8397b1dcdafull);
}
END_TEST

/* ---- device ---------------------------------------------------------------- */

START_TEST(test_query)
{
	struct tv_sim_config cfg;
	struct tv_sim *sim;
	struct tv_vf_device_attr da;
	struct tv_vf_port_attr pa;
	uint8_t gid[16];

	cfg_test(&cfg);
	cfg.num_nodes = 3;
	cfg.active_mtu = TV_MTU_1024;
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), 0);
	ck_assert_uint_eq(tv_sim_num_nodes(sim), 3);
	ck_assert_ptr_null(tv_sim_device(sim, 3));
	ck_assert_int_eq(tv_vf_query_device(tv_sim_device(sim, 2), &da), 0);
	ck_assert_str_eq(da.name, "tvsim2");
	ck_assert_uint_eq(da.max_qp_wr, 4096);
	ck_assert_uint_eq(da.max_cqe, 65536);
	ck_assert_uint_eq(da.max_qp_rd_atom, 16);
	ck_assert_uint_eq(da.phys_port_cnt, 1);
	ck_assert_int_eq(tv_vf_query_port(tv_sim_device(sim, 2), 1, &pa), 0);
	ck_assert_int_eq(pa.state, TV_PORT_ACTIVE);
	ck_assert_int_eq(pa.active_mtu, TV_MTU_1024);
	ck_assert_uint_eq(pa.lid, 3);
	ck_assert_uint_eq(pa.link_layer, 2);
	ck_assert_int_eq(tv_vf_query_port(tv_sim_device(sim, 2), 2, &pa),
			 -EINVAL);
	ck_assert_int_eq(tv_vf_query_gid(tv_sim_device(sim, 2), 1, 0, gid), 0);
	ck_assert_uint_eq(gid[15], 2);
	ck_assert_uint_eq(gid[0], 0xfe);
	ck_assert_int_eq(tv_vf_query_gid(tv_sim_device(sim, 2), 1, 1, gid),
			 -EINVAL);
	ck_assert_str_eq(tv_sim_device(sim, 0)->ops->name, "sim");
	ck_assert_int_eq(tv_sim_destroy(sim), 0);

	cfg.num_nodes = 0;
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), -EINVAL);
}
END_TEST

START_TEST(test_endpoint)
{
	struct fix f;
	struct tv_vf_qp_endpoint ep;
	uint8_t gid[16];

	fix_init(&f);
	ck_assert_int_eq(tv_vf_qp_endpoint(f.s[1].qp, &ep), 0);
	ck_assert_uint_eq(ep.qp_num, f.s[1].qp->qp_num);
	ck_assert_uint_ge(ep.qp_num, 2);
	ck_assert_uint_eq(ep.lid, 2);
	ck_assert_uint_le(ep.psn, 0xffffff);
	ck_assert_int_eq(tv_vf_query_gid(f.s[1].dev, 1, 0, gid), 0);
	ck_assert_mem_eq(ep.gid, gid, 16);
	fix_fini(&f);
}
END_TEST

/* ---- state machine ---------------------------------------------------------- */

START_TEST(test_qp_state_legal)
{
	struct fix f;
	struct tv_vf_qp_attr qa;
	struct tv_vf_qp_endpoint e1;

	fix_init(&f);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RESET);
	connect_pair(&f);
	ck_assert_int_eq(tv_vf_query_qp(f.s[0].qp, &qa), 0);
	ck_assert_int_eq(qa.qp_state, TV_QPS_RTS);
	ck_assert_int_eq(qa.path_mtu, TV_MTU_4096);
	ck_assert_uint_eq(qa.timeout, 1);
	ck_assert_uint_eq(qa.retry_cnt, 2);
	ck_assert_uint_eq(qa.rnr_retry, 7);
	ck_assert_uint_eq(qa.min_rnr_timer, 1);
	ck_assert_uint_eq(qa.dest_qp_num, f.s[1].qp->qp_num);
	ck_assert_uint_eq(qa.max_rd_atomic, 16);
	tv_vf_qp_endpoint(f.s[1].qp, &e1);
	ck_assert_uint_eq(qa.rq_psn, e1.psn);
	ck_assert_mem_eq(qa.dgid, e1.gid, 16);

	/* RTS -> RTS with an optional attribute. */
	qa.min_rnr_timer = 12;
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp, &qa,
					 TV_QP_STATE | TV_QP_MIN_RNR_TIMER), 0);
	ck_assert_int_eq(tv_vf_query_qp(f.s[0].qp, &qa), 0);
	ck_assert_uint_eq(qa.min_rnr_timer, 12);
	/* any -> ERR -> RESET -> INIT -> INIT */
	qa.qp_state = TV_QPS_ERR;
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp, &qa, TV_QP_STATE), 0);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_ERR);
	qa.qp_state = TV_QPS_RESET;
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp, &qa, TV_QP_STATE), 0);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RESET);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = TV_QPS_INIT;
	qa.port_num = 1;
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp, &qa,
					 TV_QP_STATE | TV_QP_PORT |
						 TV_QP_PKEY_INDEX |
						 TV_QP_ACCESS_FLAGS), 0);
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp, &qa,
					 TV_QP_STATE | TV_QP_ACCESS_FLAGS), 0);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_INIT);
	/* RESET -> ERR is legal too. */
	qa.qp_state = TV_QPS_ERR;
	ck_assert_int_eq(tv_vf_modify_qp(f.s[1].qp, &qa, TV_QP_STATE), 0);
	ck_assert_int_eq(f.s[1].qp->state, TV_QPS_ERR);
	fix_fini(&f);
}
END_TEST

static void expect_modify_fails(struct tv_vf_qp *qp, enum tv_vf_qp_state to,
				uint32_t mask)
{
	struct tv_vf_qp_attr qa = { .qp_state = to, .port_num = 1,
				    .path_mtu = TV_MTU_1024 };
	enum tv_vf_qp_state before = qp->state;
	struct tv_vf_qp_attr q2;

	ck_assert_int_eq(tv_vf_modify_qp(qp, &qa, TV_QP_STATE | mask), -EINVAL);
	ck_assert_int_eq(qp->state, before);
	ck_assert_int_eq(tv_vf_query_qp(qp, &q2), 0);
	ck_assert_int_eq(q2.qp_state, before);
}

#define RTR_MASK                                                       \
	(TV_QP_AV | TV_QP_PATH_MTU | TV_QP_DEST_QPN | TV_QP_RQ_PSN |   \
	 TV_QP_MAX_DEST_RD_ATOMIC | TV_QP_MIN_RNR_TIMER)
#define RTS_MASK                                                          \
	(TV_QP_SQ_PSN | TV_QP_TIMEOUT | TV_QP_RETRY_CNT | TV_QP_RNR_RETRY | \
	 TV_QP_MAX_QP_RD_ATOMIC)
#define INIT_MASK (TV_QP_PKEY_INDEX | TV_QP_PORT | TV_QP_ACCESS_FLAGS)

START_TEST(test_qp_state_illegal)
{
	struct fix f;
	struct tv_vf_qp *qp;
	struct tv_vf_qp_attr qa;

	fix_init(&f);
	qp = f.s[0].qp;
	/* From RESET only INIT (and RESET/ERR). */
	expect_modify_fails(qp, TV_QPS_RTR, RTR_MASK);
	expect_modify_fails(qp, TV_QPS_RTS, RTS_MASK);
	expect_modify_fails(qp, TV_QPS_SQD, 0);
	expect_modify_fails(qp, (enum tv_vf_qp_state)42, 0);
	/* Missing required attributes. */
	expect_modify_fails(qp, TV_QPS_INIT, TV_QP_PKEY_INDEX | TV_QP_PORT);
	expect_modify_fails(qp, TV_QPS_INIT, TV_QP_ACCESS_FLAGS);
	/* An attribute that transition does not take. */
	expect_modify_fails(qp, TV_QPS_INIT, INIT_MASK | TV_QP_TIMEOUT);
	/* ->RESET / ->ERR take no attribute. */
	expect_modify_fails(qp, TV_QPS_ERR, TV_QP_PORT);

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = TV_QPS_INIT;
	qa.port_num = 2; /* no such port */
	ck_assert_int_eq(tv_vf_modify_qp(qp, &qa, TV_QP_STATE | INIT_MASK),
			 -EINVAL);
	qa.port_num = 1;
	qa.qp_access_flags = 1u << 7; /* unknown flag */
	ck_assert_int_eq(tv_vf_modify_qp(qp, &qa, TV_QP_STATE | INIT_MASK),
			 -EINVAL);
	qa.qp_access_flags = TV_ACCESS_LOCAL_WRITE;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &qa, TV_QP_STATE | INIT_MASK), 0);

	/* INIT: RTS is two steps away; RTR needs every RTR attribute. */
	expect_modify_fails(qp, TV_QPS_RTS, RTS_MASK);
	expect_modify_fails(qp, TV_QPS_RTR, RTR_MASK & ~TV_QP_MIN_RNR_TIMER);
	expect_modify_fails(qp, TV_QPS_RTR, RTR_MASK & ~TV_QP_AV);
	/* Values: path_mtu above the active MTU, too many rd atomics. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = TV_QPS_RTR;
	qa.path_mtu = TV_MTU_4096 + 1;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &qa, TV_QP_STATE | RTR_MASK),
			 -EINVAL);
	qa.path_mtu = TV_MTU_4096;
	qa.max_dest_rd_atomic = 17;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &qa, TV_QP_STATE | RTR_MASK),
			 -EINVAL);
	qa.max_dest_rd_atomic = 16;
	qa.min_rnr_timer = 32;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &qa, TV_QP_STATE | RTR_MASK),
			 -EINVAL);
	qa.min_rnr_timer = 12;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &qa, TV_QP_STATE | RTR_MASK), 0);
	ck_assert_int_eq(qp->state, TV_QPS_RTR);
	/* RTR: back to INIT is illegal; RTS needs its attributes. */
	expect_modify_fails(qp, TV_QPS_INIT, INIT_MASK);
	expect_modify_fails(qp, TV_QPS_RTS, RTS_MASK & ~TV_QP_SQ_PSN);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = TV_QPS_RTS;
	qa.retry_cnt = 8;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &qa, TV_QP_STATE | RTS_MASK),
			 -EINVAL);
	qa.retry_cnt = 7;
	ck_assert_int_eq(tv_vf_modify_qp(qp, &qa, TV_QP_STATE | RTS_MASK), 0);
	/* RTS: no way back to RTR or INIT. */
	expect_modify_fails(qp, TV_QPS_RTR, RTR_MASK);
	expect_modify_fails(qp, TV_QPS_INIT, INIT_MASK);
	fix_fini(&f);
}
END_TEST

/* ---- posting --------------------------------------------------------------- */

START_TEST(test_post_wrong_state)
{
	struct fix f;
	struct tv_vf_sge sge;
	struct tv_vf_send_wr wr = { .wr_id = 1, .opcode = TV_WR_RDMA_WRITE };
	struct tv_vf_send_wr *bad = NULL;
	struct tv_vf_qp_attr qa = { .qp_state = TV_QPS_INIT, .port_num = 1 };

	fix_init(&f);
	sge = (struct tv_vf_sge){ raddr(&f.s[0], 0), 8, f.s[0].mr->lkey };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	/* RESET: neither send nor receive. */
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	ck_assert_int_eq(post_rx(&f, 0, 0, 8, 1), -EINVAL);
	/* INIT: receive yes, send no. */
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp, &qa,
					 TV_QP_STATE | INIT_MASK), 0);
	bad = NULL;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	ck_assert_int_eq(post_rx(&f, 0, 0, 8, 1), 0);
	/* Dropping to RESET forgets the receive without a completion. */
	qa.qp_state = TV_QPS_RESET;
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp, &qa, TV_QP_STATE), 0);
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].rcq, 1, (struct tv_vf_wc[1]){}), 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_post_rtr_send_rejected)
{
	struct fix f;
	struct tv_vf_qp_endpoint e0, e1;
	struct tv_vf_connect_cfg cc;
	struct tv_vf_qp_attr qa = { .qp_state = TV_QPS_RTS };

	fix_init(&f);
	conn_cfg(&cc);
	tv_vf_qp_endpoint(f.s[0].qp, &e0);
	tv_vf_qp_endpoint(f.s[1].qp, &e1);
	ck_assert_int_eq(tv_vf_connect_qp(f.s[0].qp, &cc, &e0, &e1), 0);
	/* Take s[0] back: ERR then RESET then up to RTR only. */
	qa.qp_state = TV_QPS_RESET;
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp, &qa, TV_QP_STATE), 0);
	cc.retry_cnt = 8; /* makes the RTS step fail: the QP stays RTR */
	ck_assert_int_eq(tv_vf_connect_qp(f.s[0].qp, &cc, &e0, &e1), -EINVAL);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_RTR);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0, 0, 1),
			 -EINVAL);
	ck_assert_int_eq(post_rx(&f, 0, 0, 8, 1), 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_post_in_err_flushes)
{
	struct fix f;
	struct tv_vf_qp_attr qa = { .qp_state = TV_QPS_ERR };
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp, &qa, TV_QP_STATE), 0);
	/* Unsignaled, yet a flushed WR always completes. */
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0, 0, 77), 0);
	ck_assert_int_eq(post_rx(&f, 0, 0, 8, 78), 0);
	wc = poll1(f.s[0].scq);
	ck_assert_uint_eq(wc.wr_id, 77);
	ck_assert_int_eq(wc.status, TV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc.qp_num, f.s[0].qp->qp_num);
	wc = poll1(f.s[0].rcq);
	ck_assert_uint_eq(wc.wr_id, 78);
	ck_assert_int_eq(wc.status, TV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(wc.opcode, TV_WC_RECV);
	/* wait() reports the node runnable at once. */
	ck_assert_int_eq(tv_vf_wait(f.s[0].dev, 0), 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_post_limits)
{
	struct fix f;
	struct tv_vf_sge sge[5];
	struct tv_vf_send_wr wr[3];
	struct tv_vf_send_wr *bad = NULL;
	struct tv_sim_stats st;

	fix_init(&f);
	connect_pair(&f);
	for (int i = 0; i < 5; i++)
		sge[i] = (struct tv_vf_sge){ raddr(&f.s[0], 8u * i), 8,
					     f.s[0].mr->lkey };
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 3; i++) {
		wr[i].wr_id = 100 + i;
		wr[i].opcode = TV_WR_RDMA_WRITE;
		wr[i].sg_list = sge;
		wr[i].num_sge = 1;
		wr[i].remote_addr = raddr(&f.s[1], 0);
		wr[i].rkey = f.s[1].mr->rkey;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	/* The chain posts in order up to the bad WR, which is reported. */
	wr[1].num_sge = 5; /* max_send_sge is 4 */
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr[0], &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &wr[1]);
	wr[1].num_sge = -1;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr[1], &bad), -EINVAL);
	wr[1].num_sge = 1;
	wr[1].opcode = (enum tv_vf_wr_opcode)9;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr[1], &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &wr[1]);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.work_requests, 1);
	/* Fill the 16-deep send queue: the 17th is -ENOMEM. */
	wr[0].next = NULL;
	for (int i = 1; i < 16; i++) {
		wr[0].send_flags = i == 15 ? TV_SEND_SIGNALED : 0;
		ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr[0], &bad), 0);
	}
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr[0], &bad), -ENOMEM);
	/* Same for receives. */
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(post_rx(&f, 1, 0, 8, i), 0);
	ck_assert_int_eq(post_rx(&f, 1, 0, 8, 16), -ENOMEM);
	/* Once completed, and the last one's CQE polled (the default
	 * profile's rule, test_sim_rd.c), the slots are free again. */
	run_all(&f);
	ck_assert_uint_eq(poll1(f.s[0].scq).wr_id, 100);
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr[0], &bad), 0);
	fix_fini(&f);
}
END_TEST

/* ---- data movement ------------------------------------------------------------ */

START_TEST(test_write_data_and_timing)
{
	struct fix f;
	struct tv_vf_sge sge[2];
	struct tv_vf_send_wr wr = { 0 };
	struct tv_vf_send_wr *bad = NULL;
	struct tv_vf_wc wc;
	struct tv_sim_stats st;

	fix_init(&f);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 3);
	/* Gather two SGEs (60 + 40 bytes) into one remote range. */
	sge[0] = (struct tv_vf_sge){ raddr(&f.s[0], 100), 60, f.s[0].mr->lkey };
	sge[1] = (struct tv_vf_sge){ raddr(&f.s[0], 1000), 40, f.s[0].mr->lkey };
	wr.wr_id = 5;
	wr.sg_list = sge;
	wr.num_sge = 2;
	wr.opcode = TV_WR_RDMA_WRITE;
	wr.send_flags = TV_SEND_SIGNALED;
	wr.remote_addr = raddr(&f.s[1], 2000);
	wr.rkey = f.s[1].mr->rkey;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), 0);
	/* depart 0, 100 bytes = 100 ns on the wire, +1000 latency: executed
	 * at 1100; the ACK takes 1000 more. */
	ck_assert_uint_eq(run_until_cqe(&f, 0), 2100);
	wc = poll1(f.s[0].scq);
	ck_assert_uint_eq(wc.wr_id, 5);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, TV_WC_RDMA_WRITE);
	ck_assert_mem_eq(f.s[1].buf + 2000, f.s[0].buf + 100, 60);
	ck_assert_mem_eq(f.s[1].buf + 2060, f.s[0].buf + 1000, 40);
	ck_assert_uint_eq(f.s[1].buf[1999], 0);
	ck_assert_uint_eq(f.s[1].buf[2100], 0);
	/* A plain write consumes no receive and tells the responder nothing. */
	ck_assert_int_eq(tv_vf_poll_cq(f.s[1].rcq, 1, &wc), 0);
	run_all(&f);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.bytes_moved, 100);
	ck_assert_uint_eq(st.work_requests, 1);
	ck_assert_uint_eq(st.cqes, 1);
	ck_assert_uint_eq(st.error_cqes, 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_read_data_and_timing)
{
	struct fix f;
	struct tv_vf_sge sge[2];
	struct tv_vf_send_wr wr = { 0 };
	struct tv_vf_send_wr *bad = NULL;
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	fill(f.s[1].buf, BUF, 9);
	/* Scatter 300 remote bytes into 200 + 100 local bytes. */
	sge[0] = (struct tv_vf_sge){ raddr(&f.s[0], 0), 200, f.s[0].mr->lkey };
	sge[1] = (struct tv_vf_sge){ raddr(&f.s[0], 3000), 100,
				     f.s[0].mr->lkey };
	wr.wr_id = 6;
	wr.sg_list = sge;
	wr.num_sge = 2;
	wr.opcode = TV_WR_RDMA_READ;
	wr.send_flags = TV_SEND_SIGNALED;
	wr.remote_addr = raddr(&f.s[1], 500);
	wr.rkey = f.s[1].mr->rkey;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), 0);
	/* The request carries no payload: at the responder at 1000; 300
	 * bytes back: 300 + 1000. */
	ck_assert_uint_eq(run_until_cqe(&f, 0), 2300);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, TV_WC_RDMA_READ);
	ck_assert_uint_eq(wc.byte_len, 300);
	ck_assert_mem_eq(f.s[0].buf, f.s[1].buf + 500, 200);
	ck_assert_mem_eq(f.s[0].buf + 3000, f.s[1].buf + 700, 100);
	ck_assert_uint_eq(f.s[0].buf[200], 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_send_recv)
{
	struct fix f;
	struct tv_vf_sge rs[2];
	struct tv_vf_recv_wr rwr = { 0 };
	struct tv_vf_recv_wr *rbad = NULL;
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 1);
	/* The receive scatters into 50 + 100 bytes; 120 are sent. */
	rs[0] = (struct tv_vf_sge){ raddr(&f.s[1], 0), 50, f.s[1].mr->lkey };
	rs[1] = (struct tv_vf_sge){ raddr(&f.s[1], 1000), 100,
				    f.s[1].mr->lkey };
	rwr.wr_id = 900;
	rwr.sg_list = rs;
	rwr.num_sge = 2;
	ck_assert_int_eq(tv_vf_post_recv(f.s[1].qp, &rwr, &rbad), 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_SEND, 10, 120, 0,
				 TV_SEND_SIGNALED, 11), 0);
	/* The receive completes when the request executes: 120 + 1000. */
	ck_assert_uint_eq(run_until_cqe(&f, 1), 1120);
	wc = poll1(f.s[1].rcq);
	ck_assert_uint_eq(wc.wr_id, 900);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, TV_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, 120);
	ck_assert_uint_eq(wc.wc_flags & TV_WC_WITH_IMM, 0);
	ck_assert_uint_eq(wc.qp_num, f.s[1].qp->qp_num);
	ck_assert_mem_eq(f.s[1].buf, f.s[0].buf + 10, 50);
	ck_assert_mem_eq(f.s[1].buf + 1000, f.s[0].buf + 60, 70);
	ck_assert_uint_eq(f.s[1].buf[1070], 0);
	ck_assert_uint_eq(run_until_cqe(&f, 0), 2120);
	wc = poll1(f.s[0].scq);
	ck_assert_uint_eq(wc.wr_id, 11);
	ck_assert_int_eq(wc.opcode, TV_WC_SEND);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	fix_fini(&f);
}
END_TEST

START_TEST(test_send_with_imm)
{
	struct fix f;
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(post_rx(&f, 1, 0, 64, 3), 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_SEND_WITH_IMM, 0, 16, 0, 0, 4),
			 0);
	run_all(&f);
	wc = poll1(f.s[1].rcq);
	ck_assert_int_eq(wc.opcode, TV_WC_RECV);
	ck_assert_uint_eq(wc.wc_flags, TV_WC_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0xfeed0004u);
	ck_assert_uint_eq(wc.byte_len, 16);
	fix_fini(&f);
}
END_TEST

START_TEST(test_write_with_imm)
{
	struct fix f;
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 5);
	ck_assert_int_eq(post_rx(&f, 1, 0, 0, 31), 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 256,
				 1024, TV_SEND_SIGNALED, 7), 0);
	ck_assert_uint_eq(run_until_cqe(&f, 1), 1256);
	wc = poll1(f.s[1].rcq);
	ck_assert_uint_eq(wc.wr_id, 31);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, TV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.wc_flags, TV_WC_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0xfeed0007u);
	ck_assert_uint_eq(wc.byte_len, 256);
	ck_assert_mem_eq(f.s[1].buf + 1024, f.s[0].buf, 256);
	ck_assert_uint_eq(run_until_cqe(&f, 0), 2256);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.opcode, TV_WC_RDMA_WRITE);
	fix_fini(&f);
}
END_TEST

START_TEST(test_zero_length_write_imm)
{
	struct fix f;
	struct tv_vf_send_wr wr = { 0 };
	struct tv_vf_send_wr *bad = NULL;
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(post_rx(&f, 1, 0, 0, 12), 0);
	/* The ACK of the protocol: no SGE, no address, no key. */
	wr.wr_id = 13;
	wr.opcode = TV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = 0xfffffffeu;
	wr.send_flags = TV_SEND_SIGNALED;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), 0);
	ck_assert_uint_eq(run_until_cqe(&f, 1), 1000);
	wc = poll1(f.s[1].rcq);
	ck_assert_uint_eq(wc.wr_id, 12);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, TV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0xfffffffeu);
	ck_assert_uint_eq(wc.byte_len, 0);
	ck_assert_uint_eq(run_until_cqe(&f, 0), 2000);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_int_eq(f.s[1].qp->state, TV_QPS_RTS);
	fix_fini(&f);
}
END_TEST

START_TEST(test_signaled_vs_unsignaled)
{
	struct fix f;
	struct tv_vf_wc wc[8];

	fix_init(&f);
	connect_pair(&f);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
					 i % 3 == 2 ? TV_SEND_SIGNALED : 0,
					 i), 0);
	run_all(&f);
	/* Only the signaled WRs complete, still in posting order. */
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 8, wc), 2);
	ck_assert_uint_eq(wc[0].wr_id, 2);
	ck_assert_uint_eq(wc[1].wr_id, 5);
	fix_fini(&f);
}
END_TEST

START_TEST(test_sq_sig_all)
{
	struct fix f;
	struct tv_vf_wc wc[8];
	struct tv_vf_qp_init_attr init = { 0 };
	struct tv_vf_connect_cfg cc;

	fix_init(&f);
	ck_assert_int_eq(tv_vf_destroy_qp(f.s[0].qp), 0);
	init.send_cq = f.s[0].scq;
	init.recv_cq = f.s[0].rcq;
	init.max_send_wr = 4;
	init.max_send_sge = 1;
	init.sq_sig_all = 1;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &f.s[0].qp), 0);
	conn_cfg(&cc);
	connect_pair_cfg(&f, &cc);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0, 0,
					 i), 0);
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 8, wc), 3);
	for (int i = 0; i < 3; i++)
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i);
	fix_fini(&f);
}
END_TEST

/* ---- remote and local protection -------------------------------------------- */

/* The requester's WR fails with status; both QPs end in ERR. */
static void expect_remote_error(struct fix *f, enum tv_vf_wc_status status,
				uint64_t at_ns)
{
	struct tv_vf_wc wc;

	ck_assert_uint_eq(run_until_cqe(f, 0), at_ns);
	wc = poll1(f->s[0].scq);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(wc.status, status);
	ck_assert_int_eq(f->s[0].qp->state, TV_QPS_ERR);
	ck_assert_int_eq(f->s[1].qp->state, TV_QPS_ERR);
	run_all(f);
}

START_TEST(test_rkey_wrong)
{
	struct fix f;
	struct tv_vf_sge sge;
	struct tv_vf_send_wr wr = { 0 };
	struct tv_vf_send_wr *bad = NULL;
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	fill(f.s[0].buf, BUF, 1);
	ck_assert_int_eq(post_rx(&f, 1, 0, 8, 50), 0);
	sge = (struct tv_vf_sge){ raddr(&f.s[0], 0), 64, f.s[0].mr->lkey };
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = TV_WR_RDMA_WRITE;
	wr.remote_addr = raddr(&f.s[1], 0);
	wr.rkey = f.s[1].mr->lkey; /* the lkey is not the rkey */
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), 0);
	/* NAK: executed at 1064, back at 2064 (errors are always reported). */
	expect_remote_error(&f, TV_WC_REM_ACCESS_ERR, 2064);
	for (uint32_t i = 0; i < BUF; i++)
		ck_assert_uint_eq(f.s[1].buf[i], 0);
	/* The responder QP went to ERR and flushed its receive. */
	wc = poll1(f.s[1].rcq);
	ck_assert_uint_eq(wc.wr_id, 50);
	ck_assert_int_eq(wc.status, TV_WC_WR_FLUSH_ERR);
	fix_fini(&f);
}
END_TEST

START_TEST(test_rkey_out_of_bounds)
{
	struct fix f;

	fix_init(&f);
	connect_pair(&f);
	/* 64 bytes at BUF - 32: the last 32 are outside the MR. */
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 64, BUF - 32, 0,
				 1), 0);
	expect_remote_error(&f, TV_WC_REM_ACCESS_ERR, 2064);
	ck_assert_uint_eq(f.s[1].buf[BUF - 32], 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_read_out_of_bounds_below)
{
	struct fix f;
	struct tv_vf_sge sge;
	struct tv_vf_send_wr wr = { 0 };
	struct tv_vf_send_wr *bad = NULL;

	fix_init(&f);
	connect_pair(&f);
	sge = (struct tv_vf_sge){ raddr(&f.s[0], 0), 16, f.s[0].mr->lkey };
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = TV_WR_RDMA_READ;
	wr.remote_addr = raddr(&f.s[1], 0) - 1; /* one byte below the MR */
	wr.rkey = f.s[1].mr->rkey;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), 0);
	expect_remote_error(&f, TV_WC_REM_ACCESS_ERR, 2000);
	fix_fini(&f);
}
END_TEST

START_TEST(test_remote_access_flags)
{
	struct fix f;
	struct tv_vf_mr *ro;

	fix_init(&f);
	connect_pair(&f);
	/* An MR that allows local write only: no remote write. */
	ck_assert_int_eq(tv_vf_dereg_mr(f.s[1].mr), 0);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[1].pd, f.s[1].buf, BUF,
				      TV_ACCESS_LOCAL_WRITE, &f.s[1].mr), 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0, 0, 1), 0);
	expect_remote_error(&f, TV_WC_REM_ACCESS_ERR, 2008);
	fix_fini(&f);

	/* Remote write but no remote read: a read fails. */
	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(tv_vf_dereg_mr(f.s[1].mr), 0);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[1].pd, f.s[1].buf, BUF,
				      TV_ACCESS_LOCAL_WRITE |
					      TV_ACCESS_REMOTE_WRITE,
				      &ro), 0);
	f.s[1].mr = ro;
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_READ, 0, 8, 0, 0, 1), 0);
	expect_remote_error(&f, TV_WC_REM_ACCESS_ERR, 2000);
	fix_fini(&f);
}
END_TEST

START_TEST(test_rkey_other_pd)
{
	struct fix f;
	struct tv_vf_pd *pd2;
	struct tv_vf_mr *mr2;
	struct tv_vf_mr *orig;

	fix_init(&f);
	connect_pair(&f);
	/* A valid rkey of the responder's node, but of another PD. */
	ck_assert_int_eq(tv_vf_alloc_pd(f.s[1].dev, &pd2), 0);
	ck_assert_int_eq(tv_vf_reg_mr(pd2, f.s[1].buf, BUF,
				      TV_ACCESS_LOCAL_WRITE |
					      TV_ACCESS_REMOTE_WRITE |
					      TV_ACCESS_REMOTE_READ,
				      &mr2), 0);
	orig = f.s[1].mr;
	f.s[1].mr = mr2;
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0, 0, 1), 0);
	expect_remote_error(&f, TV_WC_REM_ACCESS_ERR, 2008);
	f.s[1].mr = orig;
	ck_assert_int_eq(tv_vf_dereg_mr(mr2), 0);
	ck_assert_int_eq(tv_vf_dealloc_pd(pd2), 0);
	fix_fini(&f);
}
END_TEST

/* TensorFlow #23220: lkey 0 on the source of a send. */
START_TEST(test_lkey_zero)
{
	struct fix f;
	struct tv_vf_sge sge;
	struct tv_vf_send_wr wr = { 0 };
	struct tv_vf_send_wr *bad = NULL;
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(post_rx(&f, 1, 0, 64, 9), 0);
	sge = (struct tv_vf_sge){ raddr(&f.s[0], 0), 64, 0 };
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = TV_WR_SEND;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), 0);
	/* Detected where the HCA reads the source: at 1064, reported then. */
	ck_assert_uint_eq(run_until_cqe(&f, 0), 1064);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_LOC_PROT_ERR);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_ERR);
	/* The responder saw nothing: its receive is still posted. */
	run_all(&f);
	ck_assert_int_eq(f.s[1].qp->state, TV_QPS_RTS);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[1].rcq, 1, &wc), 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_lkey_bad_variants)
{
	struct fix f;
	struct tv_vf_wc wc;
	uint8_t stack_buf[64];
	struct tv_vf_sge sge;
	struct tv_vf_send_wr wr = { 0 };
	struct tv_vf_send_wr *bad = NULL;
	struct tv_vf_mr *ro;

	/* An address outside the lkey's MR (an unregistered buffer). */
	fix_init(&f);
	connect_pair(&f);
	sge = (struct tv_vf_sge){ (uintptr_t)stack_buf, 64, f.s[0].mr->lkey };
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = TV_WR_RDMA_WRITE;
	wr.remote_addr = raddr(&f.s[1], 0);
	wr.rkey = f.s[1].mr->rkey;
	ck_assert_int_eq(tv_vf_post_send(f.s[0].qp, &wr, &bad), 0);
	run_until_cqe(&f, 0);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_LOC_PROT_ERR);
	fix_fini(&f);

	/* A read into an MR without LOCAL_WRITE. */
	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(tv_vf_dereg_mr(f.s[0].mr), 0);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, f.s[0].buf, BUF,
				      TV_ACCESS_REMOTE_READ, &ro), 0);
	f.s[0].mr = ro;
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_READ, 0, 8, 0, 0, 1), 0);
	run_until_cqe(&f, 0);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_LOC_PROT_ERR);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_ERR);
	fix_fini(&f);
}
END_TEST

START_TEST(test_send_too_long)
{
	struct fix f;
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(post_rx(&f, 1, 0, 32, 40), 0);
	ck_assert_int_eq(post_rx(&f, 1, 0, 32, 41), 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_SEND, 0, 33, 0, 0, 1), 0);
	ck_assert_uint_eq(run_until_cqe(&f, 1), 1033);
	ck_assert_int_eq(f.s[1].qp->state, TV_QPS_ERR);
	wc = poll_next(f.s[1].rcq);
	ck_assert_uint_eq(wc.wr_id, 40);
	ck_assert_int_eq(wc.status, TV_WC_LOC_LEN_ERR);
	wc = poll1(f.s[1].rcq);
	ck_assert_uint_eq(wc.wr_id, 41);
	ck_assert_int_eq(wc.status, TV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(run_until_cqe(&f, 0), 2033);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_REM_INV_REQ_ERR);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_ERR);
	fix_fini(&f);
}
END_TEST

/* ---- RNR ----------------------------------------------------------------------- */

static void connect_rnr(struct fix *f, uint8_t rnr_retry)
{
	struct tv_vf_connect_cfg cc;

	conn_cfg(&cc);
	cc.rnr_retry = rnr_retry;
	connect_pair_cfg(f, &cc);
}

START_TEST(test_rnr_retry_zero)
{
	struct fix f;
	struct tv_vf_wc wc;
	struct tv_sim_stats st;

	fix_init(&f);
	connect_rnr(&f, 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 0, 0, 0,
				 1), 0);
	/* First RNR NAK at 1000 is final: back at 2000. */
	ck_assert_uint_eq(run_until_cqe(&f, 0), 2000);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_RNR_RETRY_EXC_ERR);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_ERR);
	ck_assert_int_eq(f.s[1].qp->state, TV_QPS_RTS);
	run_all(&f);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.rnr_naks, 1);
	fix_fini(&f);
}
END_TEST

/* rnr_retry n: n retries 10 us apart, the (n+1)th NAK fails the WR. */
START_TEST(test_rnr_retry_n)
{
	struct fix f;
	struct tv_vf_wc wc;
	struct tv_sim_stats st;
	uint8_t n = (uint8_t)_i;

	fix_init(&f);
	connect_rnr(&f, n);
	fill(f.s[0].buf, BUF, 2);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 100, 0,
				 0, 1), 0);
	/* Each round: 100 B + 1000 to arrive, 1000 for the NAK, 10000 timer. */
	ck_assert_uint_eq(run_until_cqe(&f, 0), 2100 + 12100ull * n);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_RNR_RETRY_EXC_ERR);
	run_all(&f);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.rnr_naks, n + 1u);
	/* An RNR NAK writes nothing. */
	ck_assert_uint_eq(f.s[1].buf[0], 0);
	fix_fini(&f);
}
END_TEST

struct late_recv {
	struct fix *f;
	int posted;
};

static void post_late_recv(void *arg)
{
	struct late_recv *lr = arg;

	ck_assert_int_eq(post_rx(lr->f, 1, 0, 0, 99), 0);
	lr->posted++;
}

START_TEST(test_rnr_infinite_recovers)
{
	struct fix f;
	struct tv_vf_wc wc;
	struct tv_sim_stats st;
	struct late_recv lr = { &f, 0 };

	fix_init(&f);
	connect_rnr(&f, 7);
	fill(f.s[0].buf, BUF, 2);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 100, 0,
				 TV_SEND_SIGNALED, 1), 0);
	/* A second write queued behind it must wait for it. */
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 200, 50, 200,
				 TV_SEND_SIGNALED, 2), 0);
	/* The receive appears at 1 ms: RNR rounds every 12100 ns from 1100
	 * (1100, 13200, ...); the first after 1 ms is 1100 + 83 * 12100. */
	ck_assert_int_eq(tv_sim_schedule(f.sim, 1000000, 1, post_late_recv,
					 &lr), 0);
	ck_assert_uint_eq(run_until_cqe(&f, 1), 1100 + 83 * 12100ull);
	wc = poll1(f.s[1].rcq);
	ck_assert_uint_eq(wc.wr_id, 99);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_mem_eq(f.s[1].buf, f.s[0].buf, 100);
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_mem_eq(f.s[1].buf + 200, f.s[0].buf + 200, 50);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.rnr_naks, 83);
	ck_assert_int_eq(lr.posted, 1);
	fix_fini(&f);
}
END_TEST

/* ---- transport retries ------------------------------------------------------------ */

static void connect_one_way(struct fix *f, uint32_t dest_qpn)
{
	struct tv_vf_connect_cfg cc;
	struct tv_vf_qp_endpoint e0, e1;

	conn_cfg(&cc);
	tv_vf_qp_endpoint(f->s[0].qp, &e0);
	tv_vf_qp_endpoint(f->s[1].qp, &e1);
	e1.qp_num = dest_qpn;
	ck_assert_int_eq(tv_vf_connect_qp(f->s[0].qp, &cc, &e0, &e1), 0);
}

static void expect_retry_exceeded(struct fix *f)
{
	struct tv_vf_wc wc;

	ck_assert_int_eq(post_op(f, 0, TV_WR_RDMA_WRITE, 0, 100, 0, 0, 1), 0);
	ck_assert_int_eq(post_op(f, 0, TV_WR_RDMA_WRITE, 0, 100, 0, 0, 2), 0);
	/* timeout 1 = 8192 ns per try, retry_cnt 2: three tries. */
	ck_assert_uint_eq(run_until_cqe(f, 0), 3 * 8192);
	wc = poll_next(f->s[0].scq);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(wc.status, TV_WC_RETRY_EXC_ERR);
	wc = poll_next(f->s[0].scq);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(wc.status, TV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(f->s[0].qp->state, TV_QPS_ERR);
	run_all(f);
	ck_assert_uint_eq(f->s[1].buf[0], 0);
}

START_TEST(test_retry_missing_qp)
{
	struct fix f;

	fix_init(&f);
	connect_one_way(&f, 0x777);
	expect_retry_exceeded(&f);
	fix_fini(&f);
}
END_TEST

START_TEST(test_retry_peer_not_ready)
{
	struct fix f;

	/* The peer QP exists but stays in RESET. */
	fix_init(&f);
	connect_one_way(&f, f.s[1].qp->qp_num);
	expect_retry_exceeded(&f);
	fix_fini(&f);
}
END_TEST

START_TEST(test_retry_peer_connected_elsewhere)
{
	struct fix f;
	struct tv_vf_connect_cfg cc;
	struct tv_vf_qp_endpoint e0, e1;

	fix_init(&f);
	conn_cfg(&cc);
	tv_vf_qp_endpoint(f.s[0].qp, &e0);
	tv_vf_qp_endpoint(f.s[1].qp, &e1);
	ck_assert_int_eq(tv_vf_connect_qp(f.s[0].qp, &cc, &e0, &e1), 0);
	/* The peer is RTS, but towards QPN 0x999 of node 0. */
	e0.qp_num = 0x999;
	ck_assert_int_eq(tv_vf_connect_qp(f.s[1].qp, &cc, &e1, &e0), 0);
	expect_retry_exceeded(&f);
	fix_fini(&f);
}
END_TEST

START_TEST(test_retry_bad_gid)
{
	struct fix f;
	struct tv_vf_connect_cfg cc;
	struct tv_vf_qp_endpoint e0, e1;

	fix_init(&f);
	conn_cfg(&cc);
	tv_vf_qp_endpoint(f.s[0].qp, &e0);
	tv_vf_qp_endpoint(f.s[1].qp, &e1);
	e1.gid[15] = 9; /* node 9 does not exist */
	ck_assert_int_eq(tv_vf_connect_qp(f.s[0].qp, &cc, &e0, &e1), 0);
	expect_retry_exceeded(&f);
	fix_fini(&f);
}
END_TEST

static void connect_peer_late(void *arg)
{
	struct fix *f = arg;
	struct tv_vf_connect_cfg cc;
	struct tv_vf_qp_endpoint e0, e1;

	conn_cfg(&cc);
	tv_vf_qp_endpoint(f->s[0].qp, &e0);
	tv_vf_qp_endpoint(f->s[1].qp, &e1);
	ck_assert_int_eq(tv_vf_connect_qp(f->s[1].qp, &cc, &e1, &e0), 0);
}

/* A peer that comes up within the retry window is reached (#18630). */
START_TEST(test_retry_peer_late_recovers)
{
	struct fix f;
	struct tv_vf_wc wc;

	fix_init(&f);
	connect_one_way(&f, f.s[1].qp->qp_num);
	fill(f.s[0].buf, BUF, 4);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 100, 0,
				 TV_SEND_SIGNALED, 1), 0);
	ck_assert_int_eq(tv_sim_schedule(f.sim, 10000, 1, connect_peer_late,
					 &f), 0);
	/* Try 1 lost at 1100, retransmitted at 8192, arrives 9292 (lost),
	 * again at 16384: executed 17484, ACK at 18484. */
	ck_assert_uint_eq(run_until_cqe(&f, 0), 18484);
	wc = poll1(f.s[0].scq);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_mem_eq(f.s[1].buf, f.s[0].buf, 100);
	fix_fini(&f);
}
END_TEST

/* ---- ERR and flushing ------------------------------------------------------------ */

START_TEST(test_flush_on_err)
{
	struct fix f;
	struct tv_vf_wc wc[16];
	struct tv_vf_qp_attr qa = { .qp_state = TV_QPS_ERR };

	fix_init(&f);
	connect_pair(&f);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(post_rx(&f, 0, 0, 8, 100 + i), 0);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0, 0,
					 i), 0);
	/* The first write is ACKed at 2008; stop at 1500: all 5 in flight. */
	ck_assert_int_eq(tv_sim_run(f.sim, 1500, 0), -ETIMEDOUT);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 1500);
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp, &qa, TV_QP_STATE), 0);
	/* Unsignaled or not: every outstanding send flushes, in order. */
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 16, wc), 5);
	for (int i = 0; i < 5; i++) {
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i);
		ck_assert_int_eq(wc[i].status, TV_WC_WR_FLUSH_ERR);
	}
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].rcq, 16, wc), 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(wc[i].wr_id, 100u + i);
		ck_assert_int_eq(wc[i].status, TV_WC_WR_FLUSH_ERR);
		ck_assert_int_eq(wc[i].opcode, TV_WC_RECV);
	}
	/* Events already scheduled for these WRs change nothing. */
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 16, wc), 0);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].rcq, 16, wc), 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_qp_fail)
{
	struct fix f;
	struct tv_vf_wc wc[8];

	fix_init(&f);
	ck_assert_int_eq(tv_sim_qp_fail(f.s[0].qp, TV_WC_RETRY_EXC_ERR),
			 -EINVAL); /* RESET */
	connect_pair(&f);
	ck_assert_int_eq(tv_sim_qp_fail(f.s[0].qp, TV_WC_SUCCESS), -EINVAL);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
					 TV_SEND_SIGNALED, i), 0);
	ck_assert_int_eq(post_rx(&f, 0, 0, 8, 50), 0);
	ck_assert_int_eq(tv_sim_qp_fail(f.s[0].qp, TV_WC_RETRY_EXC_ERR), 0);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_ERR);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 8, wc), 3);
	ck_assert_int_eq(wc[0].status, TV_WC_RETRY_EXC_ERR);
	ck_assert_uint_eq(wc[0].wr_id, 0);
	ck_assert_int_eq(wc[1].status, TV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(wc[2].status, TV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc[2].wr_id, 2);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].rcq, 8, wc), 1);
	ck_assert_int_eq(wc[0].status, TV_WC_WR_FLUSH_ERR);
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 8, wc), 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_reset_drops_without_completion)
{
	struct fix f;
	struct tv_vf_wc wc[8];
	struct tv_vf_qp_attr qa = { .qp_state = TV_QPS_RESET };
	struct tv_sim_stats st;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(post_rx(&f, 0, 0, 8, 50), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
					 TV_SEND_SIGNALED, i), 0);
	ck_assert_int_eq(tv_vf_modify_qp(f.s[0].qp, &qa, TV_QP_STATE), 0);
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 8, wc), 0);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].rcq, 8, wc), 0);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.bytes_moved, 0);
	ck_assert_uint_eq(st.cqes, 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_destroy_qp_in_flight)
{
	struct fix f;
	struct tv_vf_wc wc[8];

	fix_init(&f);
	connect_pair(&f);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
					 TV_SEND_SIGNALED, i), 0);
	ck_assert_int_eq(tv_vf_destroy_qp(f.s[0].qp), 0);
	f.s[0].qp = NULL;
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 8, wc), 0);
	ck_assert_uint_eq(f.s[1].buf[0], 0);
	fix_fini(&f);
}
END_TEST

/* ---- CQ overflow ---------------------------------------------------------------- */

static int count_kind_ev[16];

static void count_observer(void *arg, const struct tv_sim_event *ev)
{
	(void)arg;
	ck_assert_int_lt(ev->kind, 16);
	count_kind_ev[ev->kind]++;
}

START_TEST(test_cq_overflow)
{
	struct fix f;
	struct tv_vf_cq *small;
	struct tv_vf_qp *qp2;
	struct tv_vf_qp_init_attr init = { 0 };
	struct tv_vf_wc wc[8];

	fix_init(&f);
	memset(count_kind_ev, 0, sizeof(count_kind_ev));
	tv_sim_set_observer(f.sim, count_observer, NULL);
	/* Replace s[0]'s QP by one whose send CQ holds 2 entries. */
	ck_assert_int_eq(tv_vf_destroy_qp(f.s[0].qp), 0);
	ck_assert_int_eq(tv_vf_create_cq(f.s[0].dev, 2, &small), 0);
	init.send_cq = small;
	init.recv_cq = f.s[0].rcq;
	init.max_send_wr = 8;
	init.max_recv_wr = 8;
	init.max_send_sge = 1;
	init.max_recv_sge = 1;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &f.s[0].qp), 0);
	/* A second QP on the same CQ, still in RESET. */
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp2), 0);
	connect_pair(&f);
	ck_assert_int_eq(post_rx(&f, 0, 0, 8, 60), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0,
					 TV_SEND_SIGNALED, i), 0);
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(small, 8, wc), -EOVERFLOW);
	ck_assert_int_eq(tv_vf_poll_cq(small, 8, wc), -EOVERFLOW);
	ck_assert_int_eq(count_kind_ev[TV_SIM_EV_CQ_OVERFLOW], 1);
	ck_assert_int_eq(f.s[0].qp->state, TV_QPS_ERR);
	ck_assert_int_eq(qp2->state, TV_QPS_ERR);
	/* The receive CQ is fine: the receive was flushed into it. */
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].rcq, 8, wc), 1);
	ck_assert_int_eq(wc[0].status, TV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc[0].wr_id, 60);
	ck_assert_int_eq(tv_vf_destroy_cq(small), -EBUSY);
	ck_assert_int_eq(tv_vf_destroy_qp(qp2), 0);
	ck_assert_int_eq(tv_vf_destroy_qp(f.s[0].qp), 0);
	f.s[0].qp = NULL;
	ck_assert_int_eq(tv_vf_destroy_cq(small), 0);
	fix_fini(&f);
}
END_TEST

/* ---- PD / MR / CQ objects ---------------------------------------------------------- */

START_TEST(test_reg_mr_checks)
{
	struct fix f;
	struct tv_vf_mr *mr[4];
	uint8_t buf[64];

	fix_init(&f);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 64,
				      TV_ACCESS_REMOTE_WRITE, &mr[0]), -EINVAL);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 0,
				      TV_ACCESS_LOCAL_WRITE, &mr[0]), -EINVAL);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 64, 1u << 9, &mr[0]),
			 -EINVAL);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, NULL, 64, 0, &mr[0]),
			 -EINVAL);
	/* Keys: non-zero, lkey != rkey, unique per node. */
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 64, 0, &mr[0]), 0);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 32,
				      TV_ACCESS_REMOTE_READ, &mr[1]), 0);
	ck_assert_uint_ne(mr[0]->lkey, 0);
	ck_assert_uint_ne(mr[0]->lkey, mr[0]->rkey);
	ck_assert_uint_ne(mr[0]->lkey, mr[1]->lkey);
	ck_assert_uint_ne(mr[0]->rkey, mr[1]->rkey);
	ck_assert_uint_ne(mr[0]->lkey, f.s[0].mr->lkey);
	ck_assert_ptr_eq(mr[1]->addr, buf);
	ck_assert_uint_eq(mr[1]->length, 32);
	ck_assert_uint_eq(mr[1]->access, TV_ACCESS_REMOTE_READ);
	ck_assert_ptr_eq(mr[1]->pd, f.s[0].pd);
	ck_assert_int_eq(tv_vf_dereg_mr(mr[0]), 0);
	ck_assert_int_eq(tv_vf_dereg_mr(mr[1]), 0);

	/* Fault injection: the next two calls fail, the third works. */
	tv_sim_fail_reg_mr(f.sim, 0, 2, -ENOMEM);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 64, 0, &mr[0]), -ENOMEM);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 64, 0, &mr[0]), -ENOMEM);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 64, 0, &mr[0]), 0);
	ck_assert_int_eq(tv_vf_dereg_mr(mr[0]), 0);
	/* Only node 0 was affected. */
	tv_sim_fail_reg_mr(f.sim, 0, 1, -EFAULT);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[1].pd, buf, 64, 0, &mr[0]), 0);
	ck_assert_int_eq(tv_vf_dereg_mr(mr[0]), 0);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 64, 0, &mr[0]), -EFAULT);
	fix_fini(&f);
}
END_TEST

START_TEST(test_reg_mr_limit)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_mr *mr[3];
	struct tv_vf_device_attr da;
	uint8_t buf[64];

	cfg_test(&cfg);
	cfg.max_mr = 3; /* the fixture's MR is the first */
	fix_init_cfg(&f, &cfg);
	ck_assert_int_eq(tv_vf_query_device(f.s[0].dev, &da), 0);
	ck_assert_uint_eq(da.max_mr, 3);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 64, 0, &mr[0]), 0);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 64, 0, &mr[1]), 0);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 64, 0, &mr[2]), -ENOMEM);
	ck_assert_int_eq(tv_vf_dereg_mr(mr[0]), 0);
	ck_assert_int_eq(tv_vf_reg_mr(f.s[0].pd, buf, 64, 0, &mr[2]), 0);
	/* A reused slot gets a new key: the old one is stale. */
	ck_assert_uint_ne(mr[2]->lkey, 0);
	ck_assert_int_eq(tv_vf_dereg_mr(mr[1]), 0);
	ck_assert_int_eq(tv_vf_dereg_mr(mr[2]), 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_busy_objects)
{
	struct fix f;
	struct tv_vf_cq *cq;
	struct tv_vf_device_attr da;

	fix_init(&f);
	ck_assert_int_eq(tv_vf_dealloc_pd(f.s[0].pd), -EBUSY); /* MR + QP */
	ck_assert_int_eq(tv_vf_destroy_cq(f.s[0].scq), -EBUSY);
	ck_assert_int_eq(tv_vf_destroy_cq(f.s[0].rcq), -EBUSY);
	ck_assert_int_eq(tv_vf_destroy_qp(f.s[0].qp), 0);
	f.s[0].qp = NULL;
	ck_assert_int_eq(tv_vf_dealloc_pd(f.s[0].pd), -EBUSY); /* MR */
	ck_assert_int_eq(tv_vf_dereg_mr(f.s[0].mr), 0);
	f.s[0].mr = NULL;
	/* CQ limits. */
	ck_assert_int_eq(tv_vf_query_device(f.s[0].dev, &da), 0);
	ck_assert_int_eq(tv_vf_create_cq(f.s[0].dev, 0, &cq), -EINVAL);
	ck_assert_int_eq(tv_vf_create_cq(f.s[0].dev, da.max_cqe + 1, &cq),
			 -EINVAL);
	ck_assert_int_eq(tv_vf_create_cq(f.s[0].dev, da.max_cqe, &cq), 0);
	ck_assert_int_eq(tv_vf_destroy_cq(cq), 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_create_qp_caps)
{
	struct fix f;
	struct tv_vf_qp_init_attr init = { 0 };
	struct tv_vf_qp *qp = NULL;
	struct tv_vf_cq *other;

	fix_init(&f);
	init.send_cq = f.s[0].scq;
	init.recv_cq = f.s[0].rcq;
	init.max_send_wr = 4097;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	init.max_send_wr = 4;
	init.max_recv_wr = 4097;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	init.max_recv_wr = 4;
	init.max_send_sge = 33;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	init.max_send_sge = 1;
	init.max_recv_sge = 33;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	init.max_recv_sge = 1;
	init.send_cq = NULL;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	/* A CQ of another device. */
	other = f.s[1].scq;
	init.send_cq = other;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), -EINVAL);
	ck_assert_ptr_null(qp);
	init.send_cq = f.s[0].scq;
	ck_assert_int_eq(tv_vf_create_qp(f.s[0].pd, &init, &qp), 0);
	ck_assert_int_eq(qp->state, TV_QPS_RESET);
	ck_assert_uint_ne(qp->qp_num, f.s[0].qp->qp_num);
	ck_assert_int_eq(tv_vf_destroy_qp(qp), 0);
	fix_fini(&f);
}
END_TEST

/* ---- ordering and timing ------------------------------------------------------------ */

START_TEST(test_in_order_with_jitter)
{
	struct tv_sim_config cfg;
	struct fix f;
	struct tv_vf_wc wc[64];
	int got = 0;

	cfg_test(&cfg);
	cfg.jitter_ns_max = 5000; /* far more than the spacing of requests */
	cfg.link.bytes_per_sec = 0;
	fix_init_cfg(&f, &cfg);
	connect_pair(&f);
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(post_rx(&f, 1, 0, 0, 1000 + i), 0);
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE_WITH_IMM,
					 4u * i, 4, 4u * i,
					 TV_SEND_SIGNALED, i), 0);
	run_all(&f);
	got = tv_vf_poll_cq(f.s[1].rcq, 64, wc);
	ck_assert_int_eq(got, 16);
	for (int i = 0; i < 16; i++) {
		/* The i-th receive matched the i-th write. */
		ck_assert_uint_eq(wc[i].wr_id, 1000u + i);
		ck_assert_uint_eq(wc[i].imm_data, 0xfeed0000u + i);
	}
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 64, wc), 16);
	for (int i = 0; i < 16; i++)
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i);
	fix_fini(&f);
}
END_TEST

struct time_log {
	uint64_t deliver_ns[8];
	int n;
};

static void deliver_times(void *arg, const struct tv_sim_event *ev)
{
	struct time_log *log = arg;

	if (ev->kind == TV_SIM_EV_DELIVER && log->n < 8)
		log->deliver_ns[log->n++] = ev->time_ns;
}

START_TEST(test_bandwidth_latency)
{
	struct fix f;
	struct time_log log = { 0 };
	struct tv_sim_link slow = { .latency_ns = 5000,
				    .bytes_per_sec = 250000000ull };
	struct tv_vf_wc wc[4];

	fix_init(&f);
	connect_pair(&f);
	tv_sim_set_observer(f.sim, deliver_times, &log);
	/* 0 -> 1: 4 ns per byte, 5 us; 1 -> 0 keeps the default. */
	ck_assert_int_eq(tv_sim_set_link(f.sim, 0, 1, &slow), 0);
	ck_assert_int_eq(tv_sim_set_link(f.sim, 0, 2, &slow), -EINVAL);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 1000, 0,
				 TV_SEND_SIGNALED, 1), 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 10, 0,
				 TV_SEND_SIGNALED, 2), 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_READ, 0, 500, 0,
				 TV_SEND_SIGNALED, 3), 0);
	ck_assert_uint_eq(run_until_cqe(&f, 0), 9000 + 1000);
	/* W1 busy [0,4000) arrives 9000; W2 [4000,4040) arrives 9040;
	 * the read request (no payload) departs 4040, arrives 9040. */
	ck_assert_int_eq(log.n, 3);
	ck_assert_uint_eq(log.deliver_ns[0], 9000);
	ck_assert_uint_eq(log.deliver_ns[1], 9040);
	ck_assert_uint_eq(log.deliver_ns[2], 9040);
	run_all(&f);
	ck_assert_int_eq(tv_vf_poll_cq(f.s[0].scq, 4, wc), 3);
	/* The read data (500 ns on the 1 -> 0 link) back at 10540. */
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 10540);
	ck_assert_uint_eq(wc[2].wr_id, 3);
	fix_fini(&f);
}
END_TEST

START_TEST(test_wait_results)
{
	struct fix f;

	fix_init(&f);
	connect_pair(&f);
	/* Nothing queued at all. */
	ck_assert_int_eq(tv_vf_wait(f.s[0].dev, 5000), -EDEADLK);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 100, 0,
				 TV_SEND_SIGNALED, 1), 0);
	/* The CQE is due at 2100: a deadline before it times out there. */
	ck_assert_int_eq(tv_vf_wait(f.s[0].dev, 1500), -ETIMEDOUT);
	ck_assert_uint_eq(tv_vf_now_ns(f.s[0].dev), 1500);
	ck_assert_int_eq(tv_vf_wait(f.s[0].dev, 2099), -ETIMEDOUT);
	ck_assert_uint_eq(tv_vf_now_ns(f.s[0].dev), 2099);
	ck_assert_int_eq(tv_vf_wait(f.s[0].dev, 2100), 0);
	ck_assert_uint_eq(tv_vf_now_ns(f.s[0].dev), 2100);
	/* Node 1 got nothing, and nothing else can happen. */
	ck_assert_int_eq(tv_vf_wait(f.s[1].dev, UINT64_MAX), -EDEADLK);
	/* Virtual time has no real fds to sleep on; the clock stays put. */
	ck_assert_int_eq(tv_vf_wait_fds(f.s[0].dev, 3000, NULL, 0),
			 -EOPNOTSUPP);
	ck_assert_uint_eq(tv_vf_now_ns(f.s[0].dev), 2100);
	poll1(f.s[0].scq);
	fix_fini(&f);
}
END_TEST

struct prog_log {
	uint32_t nodes[32];
	uint64_t times[32];
	int n;
	struct tv_sim *sim;
};

static void log_progress(void *arg, uint32_t node)
{
	struct prog_log *pl = arg;

	ck_assert_int_lt(pl->n, 32);
	pl->nodes[pl->n] = node;
	pl->times[pl->n] = tv_sim_now_ns(pl->sim);
	pl->n++;
}

START_TEST(test_timers_and_progress)
{
	struct tv_sim_config cfg;
	struct tv_sim *sim;
	struct prog_log pl = { .n = 0 };
	struct tv_vf_device *d[3];
	struct tv_sim_stats st;

	cfg_test(&cfg);
	cfg.num_nodes = 3;
	ck_assert_int_eq(tv_sim_create(&cfg, &sim), 0);
	pl.sim = sim;
	for (uint32_t i = 0; i < 3; i++) {
		d[i] = tv_sim_device(sim, i);
		tv_sim_set_progress(sim, i, log_progress, &pl);
	}
	ck_assert_int_eq(tv_vf_wake_at(d[2], 500), 0);
	ck_assert_int_eq(tv_vf_wake_at(d[2], 800), 0);  /* covered */
	ck_assert_int_eq(tv_vf_wake_at(d[1], 500), 0);
	ck_assert_int_eq(tv_vf_wake_at(d[1], 500), 0);  /* duplicate */
	ck_assert_int_eq(tv_vf_wake_at(d[0], 900), 0);
	ck_assert_int_eq(tv_vf_wake_at(d[0], 300), 0);  /* replaces 900 */
	ck_assert_int_eq(tv_sim_run(sim, 0, 0), 0);
	/* 0 at 300; 1 and 2 at 500 (each timer is one event, so each
	 * runs its callback after its own event). */
	ck_assert_int_eq(pl.n, 3);
	ck_assert_uint_eq(pl.nodes[0], 0);
	ck_assert_uint_eq(pl.times[0], 300);
	ck_assert_uint_eq(pl.times[1], 500);
	ck_assert_uint_eq(pl.times[2], 500);
	ck_assert_uint_ne(pl.nodes[1], pl.nodes[2]);
	tv_sim_stats(sim, &st);
	ck_assert_uint_eq(st.events, 3);
	ck_assert_uint_eq(st.now_ns, 500);
	/* wait() sees a timer as a reason to progress. */
	ck_assert_int_eq(tv_vf_wake_at(d[1], 700), 0);
	tv_sim_set_progress(sim, 1, NULL, NULL);
	/* The timer at 500 made node 1 runnable and no wait() saw it yet. */
	ck_assert_int_eq(tv_vf_wait(d[1], 1000), 0);
	ck_assert_uint_eq(tv_sim_now_ns(sim), 500);
	ck_assert_int_eq(tv_vf_wait(d[1], 1000), 0);
	ck_assert_uint_eq(tv_sim_now_ns(sim), 700);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* ---- progress callbacks that post (re-entrancy) ------------------------------------ */

struct pingpong {
	struct fix *f;
	int rounds[2];
	int limit;
};

/* Each completion on a node makes it answer with a write-with-imm. */
static void pingpong_progress(void *arg, uint32_t node)
{
	struct pingpong *pp = arg;
	struct fix *f = pp->f;
	struct tv_vf_wc wc[4];
	int n;

	while ((n = tv_vf_poll_cq(f->s[node].scq, 4, wc)) > 0)
		for (int i = 0; i < n; i++)
			ck_assert_int_eq(wc[i].status, TV_WC_SUCCESS);
	n = tv_vf_poll_cq(f->s[node].rcq, 4, wc);
	ck_assert_int_ge(n, 0);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(wc[i].status, TV_WC_SUCCESS);
		ck_assert_int_eq(post_rx(f, (int)node, 0, 0, 0), 0);
		/* Signaled, and polled above: on the default (mlx5)
		 * profile that is what gives the send slots back. */
		if (++pp->rounds[node] < pp->limit)
			ck_assert_int_eq(post_op(f, (int)node,
						 TV_WR_RDMA_WRITE_WITH_IMM, 0,
						 8, 0, TV_SEND_SIGNALED, 1),
					 0);
		/* A callback cannot run the loop it is called from. */
		ck_assert_int_eq(tv_sim_step(f->sim), -EBUSY);
	}
}

START_TEST(test_progress_pingpong)
{
	struct fix f;
	struct pingpong pp = { &f, { 0, 0 }, 50 };

	fix_init(&f);
	connect_pair(&f);
	tv_sim_set_progress(f.sim, 0, pingpong_progress, &pp);
	tv_sim_set_progress(f.sim, 1, pingpong_progress, &pp);
	ck_assert_int_eq(post_rx(&f, 0, 0, 0, 0), 0);
	ck_assert_int_eq(post_rx(&f, 1, 0, 0, 0), 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 8, 0,
				 TV_SEND_SIGNALED, 1), 0);
	run_all(&f);
	/* Node 1 answers 49 times, node 0 49 times + the first write. */
	ck_assert_int_eq(pp.rounds[1], 50);
	ck_assert_int_eq(pp.rounds[0], 49);
	/* 99 one-way trips of 8 + 1000 ns, last ACK 1000 ns later. */
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 99 * 1008ull + 1000);
	fix_fini(&f);
}
END_TEST

/* ---- determinism -------------------------------------------------------------------- */

struct order_sig {
	uint64_t h;
};

/* A signature of the order of events that ignores keys (seeded). */
static void order_observer(void *arg, const struct tv_sim_event *ev)
{
	struct order_sig *sig = arg;
	uint64_t v = ((uint64_t)ev->kind << 56) ^ ((uint64_t)ev->node << 40) ^
		     ((uint64_t)ev->peer << 24) ^ ev->wr_id ^
		     (ev->time_ns << 8);

	sig->h = (sig->h ^ v) * 0x100000001b3ull;
}

#define STORM_NODES 4

struct storm {
	struct tv_sim *sim;
	struct side s[STORM_NODES][STORM_NODES];
	uint8_t *mem[STORM_NODES];
	struct tv_vf_mr *mr[STORM_NODES];
	struct tv_vf_pd *pd[STORM_NODES];
	struct tv_vf_cq *cq[STORM_NODES];
};

static void storm_setup(struct storm *w, uint64_t seed)
{
	struct tv_sim_config cfg;
	struct tv_vf_qp_init_attr init = { 0 };
	struct tv_vf_connect_cfg cc;
	struct tv_vf_qp_endpoint ea, eb;

	cfg_test(&cfg);
	cfg.seed = seed;
	cfg.num_nodes = STORM_NODES;
	cfg.link.bytes_per_sec = 0; /* everything arrives at once */
	ck_assert_int_eq(tv_sim_create(&cfg, &w->sim), 0);
	for (int n = 0; n < STORM_NODES; n++) {
		struct tv_vf_device *d = tv_sim_device(w->sim, (uint32_t)n);

		ck_assert_int_eq(tv_vf_alloc_pd(d, &w->pd[n]), 0);
		ck_assert_int_eq(tv_vf_create_cq(d, 1024, &w->cq[n]), 0);
		w->mem[n] = calloc(1, BUF);
		ck_assert_int_eq(tv_vf_reg_mr(w->pd[n], w->mem[n], BUF, 7,
					      &w->mr[n]), 0);
		init.send_cq = init.recv_cq = w->cq[n];
		init.max_send_wr = init.max_recv_wr = 16;
		init.max_send_sge = init.max_recv_sge = 1;
		for (int m = 0; m < STORM_NODES; m++)
			ck_assert_int_eq(tv_vf_create_qp(w->pd[n], &init,
							 &w->s[n][m].qp), 0);
	}
	conn_cfg(&cc);
	for (int n = 0; n < STORM_NODES; n++)
		for (int m = 0; m < STORM_NODES; m++) {
			tv_vf_qp_endpoint(w->s[n][m].qp, &ea);
			tv_vf_qp_endpoint(w->s[m][n].qp, &eb);
			ck_assert_int_eq(tv_vf_connect_qp(w->s[n][m].qp, &cc,
							  &ea, &eb), 0);
		}
}

static void storm_post(struct storm *w)
{
	for (int n = 0; n < STORM_NODES; n++)
		for (int m = 0; m < STORM_NODES; m++) {
			struct tv_vf_sge sge = {
				(uintptr_t)w->mem[n] + 64u * m, 8,
				w->mr[n]->lkey,
			};
			struct tv_vf_send_wr wr = {
				.wr_id = (uint64_t)(n * 16 + m), .sg_list = &sge,
				.num_sge = 1,
				.opcode = TV_WR_RDMA_WRITE_WITH_IMM,
				.send_flags = TV_SEND_SIGNALED,
				.remote_addr = (uintptr_t)w->mem[m] + 64u * n,
				.rkey = w->mr[m]->rkey,
			};
			struct tv_vf_recv_wr rwr = { .wr_id = 500 };
			struct tv_vf_send_wr *bad;
			struct tv_vf_recv_wr *rbad;

			ck_assert_int_eq(tv_vf_post_recv(w->s[m][n].qp, &rwr,
							 &rbad), 0);
			ck_assert_int_eq(tv_vf_post_send(w->s[n][m].qp, &wr,
							 &bad), 0);
		}
}

static void storm_teardown(struct storm *w)
{
	/* Leave the objects to tv_sim_destroy(), which must count them. */
	int expect = STORM_NODES * (STORM_NODES + 3);

	ck_assert_int_eq(tv_sim_destroy(w->sim), expect);
	for (int n = 0; n < STORM_NODES; n++)
		free(w->mem[n]);
}

static void storm_run(uint64_t seed, uint64_t *hash_p, uint64_t *order_p,
		      struct tv_sim_stats *st_p)
{
	struct storm w;
	struct order_sig sig = { 14695981039346656037ull };

	storm_setup(&w, seed);
	tv_sim_set_observer(w.sim, order_observer, &sig);
	storm_post(&w);
	ck_assert_int_eq(tv_sim_run(w.sim, 0, 0), 0);
	*hash_p = tv_sim_event_hash(w.sim);
	*order_p = sig.h;
	tv_sim_stats(w.sim, st_p);
	storm_teardown(&w);
}

START_TEST(test_determinism_same_seed)
{
	uint64_t h1, h2, o1, o2;
	struct tv_sim_stats s1, s2;

	storm_run(1234, &h1, &o1, &s1);
	storm_run(1234, &h2, &o2, &s2);
	ck_assert_uint_eq(h1, h2);
	ck_assert_uint_eq(o1, o2);
	ck_assert_mem_eq(&s1, &s2, sizeof(s1));
	ck_assert_uint_eq(s1.work_requests, STORM_NODES * STORM_NODES);
	/* 16 sender CQEs and 16 receiver CQEs. */
	ck_assert_uint_eq(s1.cqes, 2 * STORM_NODES * STORM_NODES);
	ck_assert_uint_eq(s1.error_cqes, 0);
	ck_assert_uint_eq(s1.bytes_moved, 8 * STORM_NODES * STORM_NODES);
	ck_assert_uint_eq(s1.now_ns, 2000);
}
END_TEST

START_TEST(test_determinism_seeds_differ)
{
	uint64_t orders[20], hashes[20];
	struct tv_sim_stats st;
	int distinct = 0;

	for (int i = 0; i < 20; i++) {
		storm_run(100 + (uint64_t)i, &hashes[i], &orders[i], &st);
		/* Only the order differs, never the outcome. */
		ck_assert_uint_eq(st.cqes, 2 * STORM_NODES * STORM_NODES);
		ck_assert_uint_eq(st.now_ns, 2000);
	}
	for (int i = 0; i < 20; i++) {
		int seen = 0;

		for (int j = 0; j < i; j++)
			seen |= orders[j] == orders[i];
		distinct += !seen;
	}
	ck_assert_int_ge(distinct, 2);
	ck_assert_uint_ne(hashes[0], hashes[1]);
}
END_TEST

/* ---- lifetime ---------------------------------------------------------------------- */

START_TEST(test_destroy_counts_leaks)
{
	struct fix f;
	int leaked;

	fix_init(&f);
	connect_pair(&f);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE, 0, 8, 0, 0, 1), 0);
	/* 2 PDs, 2 MRs, 4 CQs, 2 QPs, with an event still queued. */
	leaked = tv_sim_destroy(f.sim);
	ck_assert_int_eq(leaked, 10);
	free(f.s[0].buf);
	free(f.s[1].buf);
	ck_assert_int_eq(tv_sim_destroy(NULL), 0);
}
END_TEST

static void user_cb(void *arg)
{
	uint64_t *at = arg;

	*at += 1;
}

START_TEST(test_schedule_user)
{
	struct fix f;
	uint64_t calls = 0;

	fix_init(&f);
	memset(count_kind_ev, 0, sizeof(count_kind_ev));
	tv_sim_set_observer(f.sim, count_observer, NULL);
	ck_assert_int_eq(tv_sim_schedule(f.sim, 100, 0, user_cb, &calls), 0);
	ck_assert_int_eq(tv_sim_schedule(f.sim, 100, 1, user_cb, &calls), 0);
	ck_assert_int_eq(tv_sim_schedule(f.sim, 100, 2, user_cb, &calls),
			 -EINVAL);
	ck_assert_int_eq(tv_sim_schedule(f.sim, 100, 0, NULL, &calls), -EINVAL);
	ck_assert_int_eq(tv_sim_step(f.sim), 1);
	ck_assert_uint_eq(calls, 1);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 100);
	ck_assert_int_eq(tv_sim_schedule(f.sim, 99, 0, user_cb, &calls),
			 -EINVAL);
	ck_assert_int_eq(tv_sim_schedule(f.sim, 1000, 0, user_cb, &calls), 0);
	ck_assert_int_eq(tv_sim_run(f.sim, 0, 1), -EAGAIN);
	ck_assert_uint_eq(calls, 2);
	ck_assert_int_eq(tv_sim_run(f.sim, 500, 0), -ETIMEDOUT);
	ck_assert_uint_eq(tv_sim_now_ns(f.sim), 500);
	ck_assert_int_eq(tv_sim_run(f.sim, 0, 0), 0);
	ck_assert_uint_eq(calls, 3);
	ck_assert_int_eq(count_kind_ev[TV_SIM_EV_USER], 3);
	ck_assert_int_eq(tv_sim_step(f.sim), 0);
	fix_fini(&f);
}
END_TEST

START_TEST(test_observer_stream)
{
	struct fix f;
	struct tv_sim_stats st;

	fix_init(&f);
	memset(count_kind_ev, 0, sizeof(count_kind_ev));
	tv_sim_set_observer(f.sim, count_observer, NULL);
	connect_pair(&f); /* 3 state changes per QP */
	ck_assert_int_eq(post_rx(&f, 1, 0, 0, 1), 0);
	ck_assert_int_eq(post_op(&f, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 8, 0,
				 TV_SEND_SIGNALED, 1), 0);
	run_all(&f);
	ck_assert_int_eq(count_kind_ev[TV_SIM_EV_QP_STATE], 6);
	ck_assert_int_eq(count_kind_ev[TV_SIM_EV_POST_RECV], 1);
	ck_assert_int_eq(count_kind_ev[TV_SIM_EV_POST_SEND], 1);
	ck_assert_int_eq(count_kind_ev[TV_SIM_EV_DELIVER], 1);
	ck_assert_int_eq(count_kind_ev[TV_SIM_EV_CQE], 2);
	tv_sim_stats(f.sim, &st);
	ck_assert_uint_eq(st.events, 2); /* the delivery and the ACK */
	ck_assert_uint_ne(tv_sim_event_hash(f.sim), 0);
	ck_assert_ptr_nonnull(tv_sim_prng(f.sim));
	fix_fini(&f);
}
END_TEST

static Suite *sim_suite(void)
{
	Suite *s = suite_create("sim");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_prng);
	tcase_add_test(tc, test_inline_takes_bytes_at_post);
	tcase_add_test(tc, test_inline_limits);
	tcase_add_test(tc, test_query);
	tcase_add_test(tc, test_endpoint);
	tcase_add_test(tc, test_qp_state_legal);
	tcase_add_test(tc, test_qp_state_illegal);
	tcase_add_test(tc, test_post_wrong_state);
	tcase_add_test(tc, test_post_rtr_send_rejected);
	tcase_add_test(tc, test_post_in_err_flushes);
	tcase_add_test(tc, test_post_limits);
	tcase_add_test(tc, test_write_data_and_timing);
	tcase_add_test(tc, test_read_data_and_timing);
	tcase_add_test(tc, test_send_recv);
	tcase_add_test(tc, test_send_with_imm);
	tcase_add_test(tc, test_write_with_imm);
	tcase_add_test(tc, test_zero_length_write_imm);
	tcase_add_test(tc, test_signaled_vs_unsignaled);
	tcase_add_test(tc, test_sq_sig_all);
	tcase_add_test(tc, test_rkey_wrong);
	tcase_add_test(tc, test_rkey_out_of_bounds);
	tcase_add_test(tc, test_read_out_of_bounds_below);
	tcase_add_test(tc, test_remote_access_flags);
	tcase_add_test(tc, test_rkey_other_pd);
	tcase_add_test(tc, test_lkey_zero);
	tcase_add_test(tc, test_lkey_bad_variants);
	tcase_add_test(tc, test_send_too_long);
	tcase_add_test(tc, test_rnr_retry_zero);
	tcase_add_loop_test(tc, test_rnr_retry_n, 1, 7);
	tcase_add_test(tc, test_rnr_infinite_recovers);
	tcase_add_test(tc, test_retry_missing_qp);
	tcase_add_test(tc, test_retry_peer_not_ready);
	tcase_add_test(tc, test_retry_peer_connected_elsewhere);
	tcase_add_test(tc, test_retry_bad_gid);
	tcase_add_test(tc, test_retry_peer_late_recovers);
	tcase_add_test(tc, test_flush_on_err);
	tcase_add_test(tc, test_qp_fail);
	tcase_add_test(tc, test_reset_drops_without_completion);
	tcase_add_test(tc, test_destroy_qp_in_flight);
	tcase_add_test(tc, test_cq_overflow);
	tcase_add_test(tc, test_reg_mr_checks);
	tcase_add_test(tc, test_reg_mr_limit);
	tcase_add_test(tc, test_busy_objects);
	tcase_add_test(tc, test_create_qp_caps);
	tcase_add_test(tc, test_in_order_with_jitter);
	tcase_add_test(tc, test_bandwidth_latency);
	tcase_add_test(tc, test_wait_results);
	tcase_add_test(tc, test_timers_and_progress);
	tcase_add_test(tc, test_progress_pingpong);
	tcase_add_test(tc, test_determinism_same_seed);
	tcase_add_test(tc, test_determinism_seeds_differ);
	tcase_add_test(tc, test_destroy_counts_leaks);
	tcase_add_test(tc, test_schedule_user);
	tcase_add_test(tc, test_observer_stream);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(sim_suite());
}
