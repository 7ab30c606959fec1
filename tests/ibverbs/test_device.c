/*
 * The ibverbs backend on a real device (rxe in CI's VM): objects, the
 * connect step on a loopback pair, every posted opcode, immediates in host
 * order, error completions, and the wait/notify path.
 *
 * Without an RDMA device it prints "SKIP: no RDMA device" and exits 77,
 * which ctest reports as skipped (SKIP_RETURN_CODE), never as passed.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorverbs/ibverbs.h>

#include "common/check_main.h"

#define SKIP_EXIT 77
#define BUF_BYTES 4096
#define MS 1000000ull

/* Two QPs on one device, connected to each other. */
struct pair {
	struct tv_vf_device *dev;
	struct tv_vf_pd *pd;
	struct tv_vf_cq *cq[2];
	struct tv_vf_qp *qp[2];
	struct tv_vf_mr *mr[2];
	uint8_t *buf[2];
	bool atomics; /* the device has them: MRs and QPs allow them */
};

static struct tv_vf_device *open_dev(void)
{
	struct tv_vf_device *dev = NULL;
	char msg[256] = "";
	int ret = tv_ibv_open(NULL, msg, sizeof(msg), &dev);

	ck_assert_msg(ret == 0, "tv_ibv_open: %d %s", ret, msg);
	return dev;
}

static void pair_objects(struct pair *p)
{
	struct tv_vf_qp_init_attr init = { .max_send_wr = 64,
					   .max_recv_wr = 64,
					   .max_inline_data = 64 };
	uint32_t acc = TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE |
		       TV_ACCESS_REMOTE_READ;
	struct tv_vf_device_attr attr;

	memset(p, 0, sizeof(*p));
	p->dev = open_dev();
	ck_assert_int_eq(tv_vf_query_device(p->dev, &attr), 0);
	p->atomics = attr.atomic_cap != TV_ATOMIC_NONE;
	if (p->atomics)
		acc |= TV_ACCESS_REMOTE_ATOMIC;
	ck_assert_int_eq(tv_vf_alloc_pd(p->dev, &p->pd), 0);
	for (int i = 0; i < 2; i++) {
		p->buf[i] = calloc(1, BUF_BYTES);
		ck_assert_ptr_nonnull(p->buf[i]);
		ck_assert_int_eq(tv_vf_reg_mr(p->pd, p->buf[i], BUF_BYTES, acc,
					      &p->mr[i]), 0);
		ck_assert_int_eq(tv_vf_create_cq(p->dev, 128, &p->cq[i]), 0);
		init.send_cq = init.recv_cq = p->cq[i];
		ck_assert_int_eq(tv_vf_create_qp(p->pd, &init, &p->qp[i]), 0);
		ck_assert_int_eq(p->qp[i]->state, TV_QPS_RESET);
	}
}

static void pair_open(struct pair *p)
{
	struct tv_vf_qp_endpoint ep[2];
	struct tv_vf_connect_cfg cc;

	pair_objects(p);
	ck_assert_int_eq(tv_ibv_connect_cfg(p->dev, &cc), 0);
	if (p->atomics)
		cc.access = TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE |
			    TV_ACCESS_REMOTE_READ | TV_ACCESS_REMOTE_ATOMIC;
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(tv_vf_qp_endpoint(p->qp[i], &ep[i]), 0);
	ck_assert_uint_le(ep[0].psn, 0xffffff);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(tv_vf_connect_qp(p->qp[i], &cc, &ep[i],
						  &ep[1 - i]), 0);
		ck_assert_int_eq(p->qp[i]->state, TV_QPS_RTS);
	}
}

static void pair_close(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(tv_vf_destroy_qp(p->qp[i]), 0);
		ck_assert_int_eq(tv_vf_destroy_cq(p->cq[i]), 0);
		ck_assert_int_eq(tv_vf_dereg_mr(p->mr[i]), 0);
		free(p->buf[i]);
	}
	ck_assert_int_eq(tv_vf_dealloc_pd(p->pd), 0);
	ck_assert_int_eq(tv_ibv_close(p->dev), 0);
}

/* One completion from cq, sleeping in wait() between polls. */
static void get_wc(struct pair *p, struct tv_vf_cq *cq, struct tv_vf_wc *wc)
{
	uint64_t deadline = tv_vf_now_ns(p->dev) + 5000 * MS;

	for (;;) {
		int n = tv_vf_poll_cq(cq, 1, wc);

		ck_assert_int_ge(n, 0);
		if (n == 1)
			return;
		n = tv_vf_wait(p->dev, deadline);
		ck_assert_msg(n == 0, "no completion on CQ %p in 5 s: %d",
			      (void *)cq, n);
	}
}

static void post_recv(struct pair *p, int side, uint64_t wr_id, int num_sge)
{
	struct tv_vf_sge sge = { (uintptr_t)p->buf[side], 256,
				 p->mr[side]->lkey };
	struct tv_vf_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				    .num_sge = num_sge };
	struct tv_vf_recv_wr *bad = NULL;

	ck_assert_int_eq(tv_vf_post_recv(p->qp[side], &wr, &bad), 0);
	ck_assert_ptr_null(bad);
}

static void post(struct pair *p, int side, enum tv_vf_wr_opcode op,
		 uint32_t len, uint32_t imm, uint32_t rkey)
{
	struct tv_vf_sge sge = { (uintptr_t)p->buf[side], len,
				 p->mr[side]->lkey };
	struct tv_vf_send_wr wr = {
		.wr_id = 0x5eed0000u + op, .sg_list = len ? &sge : NULL,
		.num_sge = len ? 1 : 0, .opcode = op,
		.send_flags = TV_SEND_SIGNALED, .imm_data = imm,
		.remote_addr = (uintptr_t)p->buf[1 - side] + 1024, .rkey = rkey,
	};
	struct tv_vf_send_wr *bad = NULL;

	ck_assert_int_eq(tv_vf_post_send(p->qp[side], &wr, &bad), 0);
}

START_TEST(open_query_close)
{
	struct tv_vf_device *dev = open_dev();
	struct tv_vf_device_attr da;
	struct tv_vf_port_attr pa;
	struct tv_ibv_config cfg;
	uint8_t gid[16];

	ck_assert_str_eq(dev->ops->name, "ibverbs");
	ck_assert_int_eq(tv_vf_query_device(dev, &da), 0);
	ck_assert_uint_gt(da.max_qp_wr, 0);
	ck_assert_int_eq(tv_ibv_device_config(dev, &cfg), 0);
	ck_assert_int_eq(tv_vf_query_port(dev, cfg.port, &pa), 0);
	ck_assert_int_eq(pa.state, TV_PORT_ACTIVE);
	ck_assert_int_le(cfg.mtu, pa.active_mtu);
	ck_assert_int_eq(tv_vf_query_gid(dev, cfg.port, cfg.gid_index, gid), 0);
	printf("device %s port %u gid %d mtu %d\n", cfg.device, cfg.port,
	       cfg.gid_index, tv_vf_mtu_bytes(cfg.mtu));
	ck_assert_int_eq(tv_ibv_close(dev), 0);
}
END_TEST

START_TEST(close_refused_while_objects_live)
{
	struct pair p;

	pair_objects(&p);
	ck_assert_int_eq(tv_ibv_close(p.dev), -EBUSY);
	pair_close(&p);
}
END_TEST

START_TEST(write_with_imm_zero_length_and_host_order)
{
	struct pair p;
	struct tv_vf_wc wc;

	pair_open(&p);
	post_recv(&p, 1, 11, 0);
	/* The ACK of the protocol: no SGE, imm 0xFFFFFFFE. */
	post(&p, 0, TV_WR_RDMA_WRITE_WITH_IMM, 0, 0xfffffffeu, p.mr[1]->rkey);
	get_wc(&p, p.cq[0], &wc);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, TV_WC_RDMA_WRITE);
	get_wc(&p, p.cq[1], &wc);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, TV_WC_RECV_RDMA_WITH_IMM);
	ck_assert(wc.wc_flags & TV_WC_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0xfffffffeu);
	ck_assert_uint_eq(wc.byte_len, 0);
	ck_assert_uint_eq(wc.wr_id, 11);
	/* An asymmetric value shows a missing byte swap. */
	memset(p.buf[0], 0xab, 100);
	post_recv(&p, 1, 12, 0);
	post(&p, 0, TV_WR_RDMA_WRITE_WITH_IMM, 100, 0x00010203u,
	     p.mr[1]->rkey);
	get_wc(&p, p.cq[0], &wc);
	get_wc(&p, p.cq[1], &wc);
	ck_assert_uint_eq(wc.imm_data, 0x00010203u);
	ck_assert_uint_eq(wc.byte_len, 100);
	ck_assert_uint_eq(p.buf[1][1024], 0xab);
	ck_assert_uint_eq(p.buf[1][1123], 0xab);
	ck_assert_uint_eq(p.buf[1][1124], 0);
	pair_close(&p);
}
END_TEST

START_TEST(write_read_send)
{
	struct pair p;
	struct tv_vf_wc wc;

	pair_open(&p);
	memset(p.buf[0], 0x11, 64);
	post(&p, 0, TV_WR_RDMA_WRITE, 64, 0, p.mr[1]->rkey);
	get_wc(&p, p.cq[0], &wc);
	ck_assert_int_eq(wc.opcode, TV_WC_RDMA_WRITE);
	ck_assert_uint_eq(p.buf[1][1024 + 63], 0x11);
	memset(p.buf[1] + 1024, 0x22, 32);
	post(&p, 0, TV_WR_RDMA_READ, 32, 0, p.mr[1]->rkey);
	get_wc(&p, p.cq[0], &wc);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, TV_WC_RDMA_READ);
	ck_assert_uint_eq(p.buf[0][31], 0x22);
	post_recv(&p, 1, 21, 1);
	memset(p.buf[0], 0x33, 48);
	post(&p, 0, TV_WR_SEND, 48, 0, 0);
	get_wc(&p, p.cq[0], &wc);
	ck_assert_int_eq(wc.opcode, TV_WC_SEND);
	get_wc(&p, p.cq[1], &wc);
	ck_assert_int_eq(wc.opcode, TV_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, 48);
	ck_assert_uint_eq(p.buf[1][47], 0x33);
	pair_close(&p);
}
END_TEST

START_TEST(bad_rkey_remote_access_error_then_flush)
{
	struct pair p;
	struct tv_vf_qp_attr qa = { .qp_state = TV_QPS_ERR };
	struct tv_vf_wc wc;

	pair_open(&p);
	/*
	 * Receives outstanding when the QP enters ERR are flushed.  (One
	 * posted after it is flushed too by the IB spec, but rxe in Linux
	 * 6.1 leaves it queued, so the test does not rely on that.)
	 */
	post_recv(&p, 0, 31, 1);
	post(&p, 0, TV_WR_RDMA_WRITE, 16, 0, p.mr[1]->rkey ^ 0x5a5a00u);
	get_wc(&p, p.cq[0], &wc);
	ck_assert_int_eq(wc.status, TV_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(wc.wr_id, 0x5eed0000u + TV_WR_RDMA_WRITE);
	get_wc(&p, p.cq[0], &wc);
	ck_assert_int_eq(wc.status, TV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc.wr_id, 31);
	ck_assert_int_eq(tv_vf_query_qp(p.qp[0], &qa), 0);
	ck_assert_int_eq(qa.qp_state, TV_QPS_ERR);
	ck_assert_int_eq(p.qp[0]->state, TV_QPS_ERR);
	/* Moving a QP to ERR by hand flushes its receives as well. */
	post_recv(&p, 1, 32, 1);
	qa.qp_state = TV_QPS_ERR;
	ck_assert_int_eq(tv_vf_modify_qp(p.qp[1], &qa, TV_QP_STATE), 0);
	ck_assert_int_eq(p.qp[1]->state, TV_QPS_ERR);
	get_wc(&p, p.cq[1], &wc);
	ck_assert_int_eq(wc.status, TV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc.wr_id, 32);
	pair_close(&p);
}
END_TEST

/* Side 0's atomic on side 1's word at roff; the old value to buf[0]. */
static int try_atomic(struct pair *p, enum tv_vf_wr_opcode op,
		      uint32_t roff, uint64_t compare_add, uint64_t swap)
{
	struct tv_vf_sge sge = { (uintptr_t)p->buf[0], 8, p->mr[0]->lkey };
	struct tv_vf_send_wr wr = {
		.wr_id = 0xa7000000u + roff, .sg_list = &sge, .num_sge = 1,
		.opcode = op, .send_flags = TV_SEND_SIGNALED,
		.remote_addr = (uintptr_t)p->buf[1] + roff,
		.rkey = p->mr[1]->rkey, .compare_add = compare_add,
		.swap = swap,
	};
	struct tv_vf_send_wr *bad = NULL;

	return tv_vf_post_send(p->qp[0], &wr, &bad);
}

static void post_atomic(struct pair *p, enum tv_vf_wr_opcode op,
			uint32_t roff, uint64_t compare_add, uint64_t swap)
{
	ck_assert_int_eq(try_atomic(p, op, roff, compare_add, swap), 0);
}

static uint64_t word_at(const uint8_t *b)
{
	uint64_t v;

	memcpy(&v, b, sizeof(v));
	return v;
}

/*
 * Fetch-and-add and compare-and-swap as the simulator does them (host
 * order words, old value in the local SGE), and a misaligned target
 * completing with REM_INV_REQ_ERR.  rxe has atomics (IBV_ATOMIC_HCA); a
 * device without them is not a failure of the backend: said, not run.
 */
START_TEST(atomics_as_the_simulator)
{
	struct pair p;
	struct tv_vf_wc wc;
	uint64_t v = 40;
	int rc;

	pair_open(&p);
	if (!p.atomics) {
		printf("atomics_as_the_simulator: not run: the device "
		       "reports atomic_cap NONE\n");
		pair_close(&p);
		return;
	}
	memcpy(p.buf[1] + 1024, &v, sizeof(v));
	post_atomic(&p, TV_WR_ATOMIC_FETCH_AND_ADD, 1024, 2, 0);
	get_wc(&p, p.cq[0], &wc);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, TV_WC_FETCH_ADD);
	ck_assert_uint_eq(word_at(p.buf[1] + 1024), 42);
	ck_assert_uint_eq(word_at(p.buf[0]), 40);
	post_atomic(&p, TV_WR_ATOMIC_CMP_AND_SWP, 1024, 41, 9);
	get_wc(&p, p.cq[0], &wc);
	ck_assert_int_eq(wc.opcode, TV_WC_COMP_SWAP);
	ck_assert_uint_eq(word_at(p.buf[1] + 1024), 42);
	ck_assert_uint_eq(word_at(p.buf[0]), 42);
	post_atomic(&p, TV_WR_ATOMIC_CMP_AND_SWP, 1024, 42, 9);
	get_wc(&p, p.cq[0], &wc);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_uint_eq(word_at(p.buf[1] + 1024), 9);
	/*
	 * Misaligned.  The responder of the IB spec (ConnectX, rxe's kernel
	 * responder, the simulator) NAKs it: REM_INV_REQ_ERR.  rxe's
	 * user-space provider refuses it before that, at post (its
	 * validate_send_wr: remote_addr & 7 is EINVAL).  Either way nothing
	 * is written.
	 */
	rc = try_atomic(&p, TV_WR_ATOMIC_FETCH_AND_ADD, 1028, 1, 0);
	if (rc == -EINVAL) {
		printf("atomics_as_the_simulator: a misaligned atomic is "
		       "refused at post on this device (rxe's provider)\n");
	} else {
		ck_assert_int_eq(rc, 0);
		get_wc(&p, p.cq[0], &wc);
		ck_assert_int_eq(wc.status, TV_WC_REM_INV_REQ_ERR);
	}
	ck_assert_uint_eq(word_at(p.buf[1] + 1024), 9);
	pair_close(&p);
}
END_TEST

/* What the engine does with small payloads: rxe and ConnectX take 64. */
START_TEST(inline_write_takes_bytes_at_post)
{
	struct pair p;
	struct tv_vf_wc wc;
	uint8_t src[64];
	struct tv_vf_sge sge = { (uintptr_t)src, sizeof(src), 0 };
	struct tv_vf_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = TV_WR_RDMA_WRITE_WITH_IMM, .imm_data = 5,
		.send_flags = TV_SEND_SIGNALED | TV_SEND_INLINE,
	}, *bad = NULL;

	pair_open(&p);
	ck_assert_uint_ge(p.qp[0]->max_inline_data, 64);
	wr.remote_addr = (uintptr_t)p.buf[1] + 512;
	wr.rkey = p.mr[1]->rkey;
	post_recv(&p, 1, 21, 0);
	/* Unregistered stack memory, no lkey, reused once posted. */
	memset(src, 0x3c, sizeof(src));
	ck_assert_int_eq(tv_vf_post_send(p.qp[0], &wr, &bad), 0);
	memset(src, 0xee, sizeof(src));
	get_wc(&p, p.cq[0], &wc);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	get_wc(&p, p.cq[1], &wc);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 64);
	ck_assert_uint_eq(wc.imm_data, 5);
	ck_assert_uint_eq(p.buf[1][512], 0x3c);
	ck_assert_uint_eq(p.buf[1][575], 0x3c);
	ck_assert_uint_eq(p.buf[1][576], 0);
	/* Over what the QP took, and a read: refused before the device. */
	sge.addr = (uintptr_t)p.buf[0];
	sge.lkey = p.mr[0]->lkey;
	sge.length = p.qp[0]->max_inline_data + 1;
	ck_assert_int_eq(tv_vf_post_send(p.qp[0], &wr, &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	sge.length = 8;
	wr.opcode = TV_WR_RDMA_READ;
	ck_assert_int_eq(tv_vf_post_send(p.qp[0], &wr, &bad), -EINVAL);
	pair_close(&p);
}
END_TEST

START_TEST(bad_requests_refused)
{
	struct pair p;
	struct tv_vf_qp_attr qa = { .qp_state = TV_QPS_INIT };
	struct tv_vf_send_wr wr = { .opcode = 99 }, *bad = NULL;
	struct tv_vf_mr *mr = NULL;

	pair_objects(&p);
	ck_assert_int_eq(tv_vf_modify_qp(p.qp[0], &qa, TV_QP_STATE | (1u << 30)),
			 -EINVAL);
	/* RESET -> INIT without its required attributes: the kernel says no. */
	ck_assert_int_eq(tv_vf_modify_qp(p.qp[0], &qa, TV_QP_STATE), -EINVAL);
	ck_assert_int_eq(p.qp[0]->state, TV_QPS_RESET);
	ck_assert_int_eq(tv_vf_post_send(p.qp[0], &wr, &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	ck_assert_int_eq(tv_vf_reg_mr(p.pd, p.buf[0], 64, 1u << 9, &mr),
			 -EINVAL);
	ck_assert_ptr_null(mr);
	pair_close(&p);
}
END_TEST

START_TEST(wait_times_out_and_wakes)
{
	struct tv_vf_device *dev = open_dev();
	struct tv_vf_cq *cq;
	uint64_t t0, t1;

	ck_assert_int_eq(tv_vf_create_cq(dev, 16, &cq), 0);
	t0 = tv_vf_now_ns(dev);
	ck_assert_int_eq(tv_vf_wait(dev, t0 + 30 * MS), -ETIMEDOUT);
	t1 = tv_vf_now_ns(dev);
	ck_assert_uint_ge(t1 - t0, 30 * MS);
	/* wake_at: the earlier deadline wins, wait returns 0 then. */
	ck_assert_int_eq(tv_vf_wake_at(dev, t1 + 40 * MS), 0);
	ck_assert_int_eq(tv_vf_wake_at(dev, t1 + 20 * MS), 0);
	ck_assert_int_eq(tv_vf_wait(dev, t1 + 2000 * MS), 0);
	t0 = tv_vf_now_ns(dev);
	ck_assert_uint_ge(t0 - t1, 20 * MS);
	ck_assert_uint_lt(t0 - t1, 1000 * MS);
	ck_assert_int_eq(tv_vf_destroy_cq(cq), 0);
	/* No CQ, no timer, no deadline: nothing can ever wake it. */
	ck_assert_int_eq(tv_vf_wait(dev, UINT64_MAX), -EDEADLK);
	ck_assert_int_eq(tv_ibv_close(dev), 0);
}
END_TEST

/* wait_fds: the caller's fds wake it as a completion would. */
START_TEST(wait_fds_wakes_on_fds)
{
	struct tv_vf_device *dev = open_dev();
	struct pollfd pfd[TV_VF_WAIT_FDS_MAX + 1];
	struct tv_vf_cq *cq;
	uint64_t t0, t1;
	int pipefd[2];

	ck_assert_int_eq(pipe(pipefd), 0);
	ck_assert_int_eq(tv_vf_create_cq(dev, 16, &cq), 0);
	pfd[0].fd = pipefd[0];
	pfd[0].events = POLLIN;
	/* Nothing readable: the deadline, as wait. */
	t0 = tv_vf_now_ns(dev);
	ck_assert_int_eq(tv_vf_wait_fds(dev, t0 + 30 * MS, pfd, 1), -ETIMEDOUT);
	ck_assert_uint_ge(tv_vf_now_ns(dev) - t0, 30 * MS);
	ck_assert_int_eq(pfd[0].revents, 0);
	/* Readable: back at once with revents, long before the deadline. */
	ck_assert_int_eq(write(pipefd[1], "x", 1), 1);
	t0 = tv_vf_now_ns(dev);
	ck_assert_int_eq(tv_vf_wait_fds(dev, t0 + 5000 * MS, pfd, 1), 0);
	t1 = tv_vf_now_ns(dev);
	ck_assert_uint_lt(t1 - t0, 1000 * MS);
	ck_assert(pfd[0].revents & POLLIN);
	/* A wake_at still wins over a quiet fd, whose revents say so. */
	pfd[0].fd = pipefd[1];
	pfd[0].events = 0;
	pfd[0].revents = POLLIN;
	ck_assert_int_eq(tv_vf_wake_at(dev, t1 + 20 * MS), 0);
	ck_assert_int_eq(tv_vf_wait_fds(dev, t1 + 2000 * MS, pfd, 1), 0);
	ck_assert_uint_ge(tv_vf_now_ns(dev) - t1, 20 * MS);
	ck_assert_int_eq(pfd[0].revents, 0);
	ck_assert_int_eq(tv_vf_wait_fds(dev, t1, pfd, TV_VF_WAIT_FDS_MAX + 1),
			 -EINVAL);
	ck_assert_int_eq(tv_vf_destroy_cq(cq), 0);
	/* No CQ, no timer, no deadline, but an fd: not a deadlock. */
	pfd[0].fd = pipefd[0];
	pfd[0].events = POLLIN;
	ck_assert_int_eq(tv_vf_wait_fds(dev, UINT64_MAX, pfd, 1), 0);
	ck_assert_int_eq(tv_vf_wait(dev, UINT64_MAX), -EDEADLK);
	close(pipefd[0]);
	close(pipefd[1]);
	ck_assert_int_eq(tv_ibv_close(dev), 0);
}
END_TEST

START_TEST(wait_blocks_until_completion)
{
	struct pair p;
	struct tv_vf_wc wc[4];
	uint64_t t0;
	int got = 0;

	pair_open(&p);
	/* Many completions: the stash and the channel both get exercised. */
	for (int i = 0; i < 40; i++)
		post(&p, 0, TV_WR_RDMA_WRITE, 8, 0, p.mr[1]->rkey);
	t0 = tv_vf_now_ns(p.dev);
	while (got < 40) {
		int n = tv_vf_poll_cq(p.cq[0], 4, wc);

		ck_assert_int_ge(n, 0);
		for (int i = 0; i < n; i++)
			ck_assert_int_eq(wc[i].status, TV_WC_SUCCESS);
		got += n;
		if (!n)
			ck_assert_int_eq(tv_vf_wait(p.dev, t0 + 5000 * MS), 0);
	}
	ck_assert_int_eq(tv_vf_poll_cq(p.cq[0], 4, wc), 0);
	ck_assert_int_eq(tv_vf_wait(p.dev, tv_vf_now_ns(p.dev) + 10 * MS),
			 -ETIMEDOUT);
	pair_close(&p);
}
END_TEST

/* 1: a device with an active port exists; prints why not otherwise. */
static int have_device(void)
{
	struct tv_ibv_device_info *infos = NULL;
	size_t count = 0;
	int active = 0;

	if (tv_ibv_query_all(&infos, &count) || !count) {
		printf("SKIP: no RDMA device\n");
		return 0;
	}
	for (size_t i = 0; i < count; i++)
		for (uint32_t j = 0; j < infos[i].num_ports; j++)
			active |= infos[i].ports[j].attr.state == TV_PORT_ACTIVE;
	tv_ibv_free_all(infos, count);
	if (!active)
		printf("SKIP: no RDMA device with an active port\n");
	return active;
}

int main(void)
{
	Suite *s;
	TCase *tc;

	/* Before Check allocates anything: LeakSanitizer checks skips too. */
	if (!have_device())
		return SKIP_EXIT;
	s = suite_create("ibverbs_device");
	tc = tcase_create("device");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, open_query_close);
	tcase_add_test(tc, close_refused_while_objects_live);
	tcase_add_test(tc, write_with_imm_zero_length_and_host_order);
	tcase_add_test(tc, write_read_send);
	tcase_add_test(tc, atomics_as_the_simulator);
	tcase_add_test(tc, bad_rkey_remote_access_error_then_flush);
	tcase_add_test(tc, inline_write_takes_bytes_at_post);
	tcase_add_test(tc, bad_requests_refused);
	tcase_add_test(tc, wait_times_out_and_wakes);
	tcase_add_test(tc, wait_fds_wakes_on_fds);
	tcase_add_test(tc, wait_blocks_until_completion);
	suite_add_tcase(s, tc);
	return tv_check_main(s);
}
