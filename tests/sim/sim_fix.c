/* The simulator tests' fixture (sim_fix.h). */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "sim_fix.h"

void cfg_test(struct tv_sim_config *cfg)
{
	tv_sim_config_default(cfg);
	cfg->seed = 42;
	cfg->num_nodes = 2;
	cfg->link.latency_ns = LAT;
	cfg->link.bytes_per_sec = 1000000000ull;
}

void side_init(struct fix *f, uint32_t node, uint32_t depth)
{
	struct side *s = &f->s[node];
	struct tv_vf_qp_init_attr init = { 0 };

	s->dev = tv_sim_device(f->sim, node);
	ck_assert_ptr_nonnull(s->dev);
	ck_assert_int_eq(tv_vf_alloc_pd(s->dev, &s->pd), 0);
	ck_assert_int_eq(tv_vf_create_cq(s->dev, CQ_DEPTH, &s->scq), 0);
	ck_assert_int_eq(tv_vf_create_cq(s->dev, CQ_DEPTH, &s->rcq), 0);
	init.send_cq = s->scq;
	init.recv_cq = s->rcq;
	init.max_send_wr = depth;
	init.max_recv_wr = depth;
	init.max_send_sge = 4;
	init.max_recv_sge = 4;
	ck_assert_int_eq(tv_vf_create_qp(s->pd, &init, &s->qp), 0);
	/* Page-aligned, as registered buffers usually are: placement units
	 * (aligned words and blocks) then line up with offsets. */
	s->buf = aligned_alloc(4096, BUF);
	ck_assert_ptr_nonnull(s->buf);
	memset(s->buf, 0, BUF);
	ck_assert_int_eq(tv_vf_reg_mr(s->pd, s->buf, BUF,
				      TV_ACCESS_LOCAL_WRITE |
					      TV_ACCESS_REMOTE_WRITE |
					      TV_ACCESS_REMOTE_READ,
				      &s->mr),
			 0);
}

void fix_init_cfg(struct fix *f, const struct tv_sim_config *cfg)
{
	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(tv_sim_create(cfg, &f->sim), 0);
	side_init(f, 0, 16);
	side_init(f, 1, 16);
}

void fix_init(struct fix *f)
{
	struct tv_sim_config cfg;

	cfg_test(&cfg);
	fix_init_cfg(f, &cfg);
}

void conn_cfg(struct tv_vf_connect_cfg *cc)
{
	tv_vf_connect_cfg_default(cc);
	cc->timeout = 1;      /* 8192 ns per try */
	cc->retry_cnt = 2;
	cc->rnr_retry = 7;
	cc->min_rnr_timer = 1; /* 10 us */
}

void connect_pair_cfg(struct fix *f, const struct tv_vf_connect_cfg *cc)
{
	struct tv_vf_qp_endpoint e0, e1;

	ck_assert_int_eq(tv_vf_qp_endpoint(f->s[0].qp, &e0), 0);
	ck_assert_int_eq(tv_vf_qp_endpoint(f->s[1].qp, &e1), 0);
	ck_assert_int_eq(tv_vf_connect_qp(f->s[0].qp, cc, &e0, &e1), 0);
	ck_assert_int_eq(tv_vf_connect_qp(f->s[1].qp, cc, &e1, &e0), 0);
	ck_assert_int_eq(f->s[0].qp->state, TV_QPS_RTS);
	ck_assert_int_eq(f->s[1].qp->state, TV_QPS_RTS);
}

void connect_pair(struct fix *f)
{
	struct tv_vf_connect_cfg cc;

	conn_cfg(&cc);
	connect_pair_cfg(f, &cc);
}

void side_fini(struct side *s)
{
	if (s->qp)
		ck_assert_int_eq(tv_vf_destroy_qp(s->qp), 0);
	if (s->mr)
		ck_assert_int_eq(tv_vf_dereg_mr(s->mr), 0);
	ck_assert_int_eq(tv_vf_destroy_cq(s->scq), 0);
	ck_assert_int_eq(tv_vf_destroy_cq(s->rcq), 0);
	ck_assert_int_eq(tv_vf_dealloc_pd(s->pd), 0);
	free(s->buf);
}

void fix_fini(struct fix *f)
{
	side_fini(&f->s[0]);
	side_fini(&f->s[1]);
	ck_assert_int_eq(tv_sim_destroy(f->sim), 0);
}

uint64_t raddr(const struct side *s, uint32_t off)
{
	return (uint64_t)(uintptr_t)s->buf + off;
}

/* One send WR from side `from`, local bytes [loff, loff+len) of its MR. */
int post_op(struct fix *f, int from, enum tv_vf_wr_opcode op,
		   uint32_t loff, uint32_t len, uint32_t roff, uint32_t flags,
		   uint64_t wr_id)
{
	struct side *s = &f->s[from], *peer = &f->s[!from];
	struct tv_vf_sge sge = {
		.addr = raddr(s, loff), .length = len, .lkey = s->mr->lkey,
	};
	struct tv_vf_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = len ? 1 : 0,
		.opcode = op, .send_flags = flags, .imm_data = 0xfeed0000u + (uint32_t)wr_id,
		.remote_addr = raddr(peer, roff), .rkey = peer->mr->rkey,
	};
	struct tv_vf_send_wr *bad = NULL;

	return tv_vf_post_send(s->qp, &wr, &bad);
}

int post_rx(struct fix *f, int side, uint32_t off, uint32_t len,
		   uint64_t wr_id)
{
	struct side *s = &f->s[side];
	struct tv_vf_sge sge = {
		.addr = raddr(s, off), .length = len, .lkey = s->mr->lkey,
	};
	struct tv_vf_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = len ? 1 : 0,
	};
	struct tv_vf_recv_wr *bad = NULL;

	return tv_vf_post_recv(s->qp, &wr, &bad);
}

/* Exactly one completion must be waiting on cq; return it. */
struct tv_vf_wc poll1(struct tv_vf_cq *cq)
{
	struct tv_vf_wc wc[2];

	memset(wc, 0, sizeof(wc));
	ck_assert_int_eq(tv_vf_poll_cq(cq, 2, wc), 1);
	return wc[0];
}

/* The next completion on cq, whatever follows it. */
struct tv_vf_wc poll_next(struct tv_vf_cq *cq)
{
	struct tv_vf_wc wc;

	memset(&wc, 0, sizeof(wc));
	ck_assert_int_eq(tv_vf_poll_cq(cq, 1, &wc), 1);
	return wc;
}

void run_all(struct fix *f)
{
	ck_assert_int_eq(tv_sim_run(f->sim, 0, 0), 0);
}

/* Run until cq has a completion; return the virtual time it appeared. */
uint64_t run_until_cqe(struct fix *f, int side)
{
	ck_assert_int_eq(tv_vf_wait(f->s[side].dev, UINT64_MAX), 0);
	return tv_sim_now_ns(f->sim);
}

void fill(uint8_t *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

