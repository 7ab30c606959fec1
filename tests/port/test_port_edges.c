/*
 * The port-channel engine's error paths and edges: bad arguments, wrong
 * states, configurations it must refuse, a peer that sends what is not a
 * signal, verbs calls that fail (a test double over the simulator's ops
 * table: the Nth call of an op fails), and a clock that the test moves.
 * Every test says which return code, state or message it expects.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <tensorverbs/faults.h>

#include "common/check_main.h"
#include "common/vf_double.h"
#include "common/wrap_alloc.h"
#include "port_fix.h"
#include "port_int.h" /* white box: a connection's QP, its hold */

#define BIT63 (1ull << 63)

/* ---- small helpers -------------------------------------------------------- */

static struct tv_sim *sim_new(bool no_atomics, uint32_t max_qp_wr)
{
	struct tv_sim_config sc;
	struct tv_sim *sim;

	tv_sim_config_default(&sc);
	sc.seed = 11;
	sc.no_atomics = no_atomics;
	if (max_qp_wr)
		sc.max_qp_wr = max_qp_wr;
	ck_assert_int_eq(tv_sim_create(&sc, &sim), 0);
	return sim;
}

static int ctx_try(struct tv_sim *sim, const struct tv_port_config *pc)
{
	struct tv_port_ctx *ctx = NULL;
	int ret = tv_port_ctx_create(tv_sim_device(sim, 0), pc, &ctx);

	if (!ret)
		ck_assert_int_eq(tv_port_ctx_destroy(ctx), 0);
	else
		ck_assert_ptr_null(ctx); /* written only on success */
	return ret;
}

struct done_arg {
	struct tv_port_conn *conn;
	int ret;
};

static bool conn_flushed(void *arg)
{
	struct done_arg *d = arg;

	d->ret = tv_port_conn_flush_poll(d->conn);
	return d->ret != -EAGAIN;
}

static int flush_direct(struct pworld *w, int i)
{
	struct done_arg d = { w->n[i].conn, -EAGAIN };

	pfix_run_until(w, conn_flushed, &d);
	return d.ret;
}

static bool has(const char *s, const char *sub)
{
	return strstr(s, sub) != NULL;
}

/* ---- context, configuration, memory -------------------------------------- */

START_TEST(test_ctx_config_refused)
{
	struct tv_sim *sim = sim_new(false, 64);
	struct tv_port_config pc;
	struct tv_port_ctx *ctx = NULL;

	pfix_config(&pc, TV_PORT_SIGNAL_ATOMIC);
	ck_assert_int_eq(tv_port_ctx_create(NULL, &pc, &ctx), -EINVAL);
	ck_assert_int_eq(tv_port_ctx_create(tv_sim_device(sim, 0), NULL, &ctx),
			 -EINVAL);
	ck_assert_int_eq(tv_port_ctx_create(tv_sim_device(sim, 0), &pc, NULL),
			 -EINVAL);
	ck_assert_ptr_null(ctx);
	/* cq_size: at least 8, at most the device's max_cqe. */
	pc.cq_size = 4;
	ck_assert_int_eq(ctx_try(sim, &pc), -EINVAL);
	pc.cq_size = 65537;
	ck_assert_int_eq(ctx_try(sim, &pc), -EINVAL);
	/* max_write_queue: at most cq_size - 4 and the device's max_qp_wr. */
	pc.cq_size = 128;
	pc.max_write_queue = 125;
	ck_assert_int_eq(ctx_try(sim, &pc), -EINVAL);
	pc.max_write_queue = 65; /* <= 124 but > max_qp_wr 64 */
	ck_assert_int_eq(ctx_try(sim, &pc), -EINVAL);
	pc.max_write_queue = 64;
	ck_assert_int_eq(ctx_try(sim, &pc), 0);
	/* The FIFO: a power of two up to 2^20. */
	pc.fifo_size = 96;
	ck_assert_int_eq(ctx_try(sim, &pc), -EINVAL);
	pc.fifo_size = 1u << 21;
	ck_assert_int_eq(ctx_try(sim, &pc), -EINVAL);
	pc.fifo_size = 1u << 20;
	ck_assert_int_eq(ctx_try(sim, &pc), 0);
	pc.fifo_size = 0;
	/* Receives: within max_qp_wr and the CQ. */
	pc.recv_depth = 65;
	ck_assert_int_eq(ctx_try(sim, &pc), -EINVAL);
	pc.cq_size = 32;
	pc.max_write_queue = 0;
	pc.recv_depth = 33;
	ck_assert_int_eq(ctx_try(sim, &pc), -EINVAL);
	pc.recv_depth = 0;
	/* Enumerations and the IB fields' widths. */
	pc.signal_mode = TV_PORT_SIGNAL_WRITE_IMM + 1;
	ck_assert_int_eq(ctx_try(sim, &pc), -EINVAL);
	pc.signal_mode = TV_PORT_SIGNAL_ATOMIC;
	pc.qp_retry_cnt = 8;
	ck_assert_int_eq(ctx_try(sim, &pc), -EINVAL);
	pc.qp_retry_cnt = 7;
	pc.qp_timeout = 32;
	ck_assert_int_eq(ctx_try(sim, &pc), -EINVAL);
	pc.qp_timeout = 31;
	ck_assert_int_eq(ctx_try(sim, &pc), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* Zeros take the defaults; the connect configuration is copied. */
START_TEST(test_ctx_defaults_and_connect_cfg)
{
	struct tv_sim *sim = sim_new(false, 0);
	struct tv_port_config pc;
	struct tv_vf_connect_cfg cc;
	const struct tv_port_config *got;
	struct tv_port_ctx *ctx;

	memset(&pc, 0, sizeof(pc));
	tv_vf_connect_cfg_default(&cc);
	cc.sl = 3;
	pc.connect = &cc;
	ck_assert_int_eq(tv_port_ctx_create(tv_sim_device(sim, 0), &pc, &ctx),
			 0);
	got = tv_port_ctx_config(ctx);
	ck_assert_uint_eq(got->cq_size, 1024);
	ck_assert_uint_eq(got->max_write_queue, 1020);
	ck_assert_uint_eq(got->recv_depth, 16);
	ck_assert_uint_eq(got->fifo_size, 128);
	ck_assert_uint_eq(got->poll_batch, 64);
	ck_assert_ptr_null(got->connect); /* ours is a copy */
	ck_assert_uint_eq(ctx->connect.sl, 3);
	ck_assert_int_eq(tv_port_ctx_signal_mode(ctx), TV_PORT_SIGNAL_ATOMIC);
	ck_assert_int_eq(tv_port_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tv_port_ctx_destroy(NULL), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* Without atomics: AUTO becomes write-imm, ATOMIC is refused. */
START_TEST(test_ctx_no_atomics)
{
	struct tv_sim *sim = sim_new(true, 0);
	struct tv_port_config pc;
	struct tv_port_ctx *ctx;

	pfix_config(&pc, TV_PORT_SIGNAL_ATOMIC);
	ck_assert_int_eq(ctx_try(sim, &pc), -EOPNOTSUPP);
	pfix_config(&pc, TV_PORT_SIGNAL_AUTO);
	ck_assert_int_eq(tv_port_ctx_create(tv_sim_device(sim, 0), &pc, &ctx),
			 0);
	ck_assert_int_eq(tv_port_ctx_signal_mode(ctx),
			 TV_PORT_SIGNAL_WRITE_IMM);
	ck_assert_int_eq(tv_port_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* The device's calls fail: the error comes back, nothing is left. */
START_TEST(test_ctx_device_failures)
{
	struct tv_sim *sim = sim_new(false, 0);
	struct tv_vf_device *dev = tv_sim_device(sim, 0);
	struct tv_port_config pc;
	struct tv_port_ctx *ctx = NULL;
	struct tv_port_mem *mem = NULL;
	static uint8_t buf[256];

	pfix_config(&pc, TV_PORT_SIGNAL_ATOMIC);
	vfd_hook(dev);
	vfd.fail_nth.query_device = 1;
	ck_assert_int_eq(tv_port_ctx_create(dev, &pc, &ctx), -ENOMEM);
	vfd.fail_nth.alloc_pd = 1;
	ck_assert_int_eq(tv_port_ctx_create(dev, &pc, &ctx), -ENOMEM);
	ck_assert_ptr_null(ctx);
	ck_assert_int_eq(tv_port_ctx_create(dev, &pc, &ctx), 0);
	/* Registration: arguments, then the device's refusal. */
	ck_assert_int_eq(tv_port_mem_register(NULL, buf, 8, &mem), -EINVAL);
	ck_assert_int_eq(tv_port_mem_register(ctx, NULL, 8, &mem), -EINVAL);
	ck_assert_int_eq(tv_port_mem_register(ctx, buf, 0, &mem), -EINVAL);
	ck_assert_int_eq(tv_port_mem_register(ctx, buf, 8, NULL), -EINVAL);
	tv_sim_fail_reg_mr(sim, 0, 1, -EFAULT);
	ck_assert_int_eq(tv_port_mem_register(ctx, buf, 8, &mem), -EFAULT);
	ck_assert_ptr_null(mem);
	ck_assert_int_eq(tv_port_mem_register(ctx, buf, sizeof(buf), &mem), 0);
	ck_assert_ptr_eq(tv_port_mem_addr(mem), buf);
	ck_assert_uint_eq(tv_port_mem_size(mem), sizeof(buf));
	/* Memory left: the context stays. */
	ck_assert_int_eq(tv_port_ctx_destroy(ctx), -EBUSY);
	vfd.fail_nth.dereg_mr = 1;
	ck_assert_int_eq(tv_port_mem_deregister(mem), -ENOMEM);
	ck_assert_int_eq(tv_port_ctx_destroy(ctx), -EBUSY); /* still there */
	ck_assert_int_eq(tv_port_mem_deregister(mem), 0);
	ck_assert_int_eq(tv_port_mem_deregister(NULL), 0);
	vfd.fail_nth.dealloc_pd = 1;
	ck_assert_int_eq(tv_port_ctx_destroy(ctx), -ENOMEM);
	ck_assert_int_eq(tv_port_ctx_destroy(ctx), 0);
	vfd_unhook(dev);
	ck_assert_int_eq(tv_sim_destroy(sim), 0); /* nothing leaked */
}
END_TEST

START_TEST(test_handle_decode_lies)
{
	struct tv_port_mem_handle h = { 0x10000, 4096, 0x1234, 1 }, out = {
		0, 0, 0, 77
	};
	uint8_t buf[TV_PORT_HANDLE_BYTES], bad[TV_PORT_HANDLE_BYTES];

	ck_assert_int_eq(tv_port_mem_handle_encode(&h, buf, sizeof(buf)), 0);
	ck_assert_int_eq(tv_port_mem_handle_decode(NULL, sizeof(buf), &out),
			 -EPROTO);
	ck_assert_int_eq(tv_port_mem_handle_decode(buf, sizeof(buf) - 1,
						   &out), -EPROTO);
	memcpy(bad, buf, sizeof(bad));
	bad[0] ^= 1; /* magic */
	ck_assert_int_eq(tv_port_mem_handle_decode(bad, sizeof(bad), &out),
			 -EPROTO);
	memcpy(bad, buf, sizeof(bad));
	bad[4] = 2; /* version */
	ck_assert_int_eq(tv_port_mem_handle_decode(bad, sizeof(bad), &out),
			 -EPROTO);
	memcpy(bad, buf, sizeof(bad));
	bad[7] = 1; /* reserved */
	ck_assert_int_eq(tv_port_mem_handle_decode(bad, sizeof(bad), &out),
			 -EPROTO);
	/* Nothing, or a window that wraps. */
	h.size_bytes = 0;
	ck_assert_int_eq(tv_port_mem_handle_encode(&h, bad, sizeof(bad)), 0);
	ck_assert_int_eq(tv_port_mem_handle_decode(bad, sizeof(bad), &out),
			 -EPROTO);
	h.size_bytes = 2;
	h.addr = UINT64_MAX;
	ck_assert_int_eq(tv_port_mem_handle_encode(&h, bad, sizeof(bad)), 0);
	ck_assert_int_eq(tv_port_mem_handle_decode(bad, sizeof(bad), &out),
			 -EPROTO);
	ck_assert_uint_eq(out.node, 77); /* untouched by every refusal */
	ck_assert_int_eq(tv_port_mem_handle_decode(buf, sizeof(buf), &out), 0);
	ck_assert_uint_eq(out.addr, 0x10000);
}
END_TEST

/* ---- connections: set-up ------------------------------------------------- */

/* Each verbs call of a connection's set-up fails in turn: the error comes
 * back, and the simulator finds nothing leaked. */
static void conn_setup_failures(enum tv_port_signal_mode mode)
{
	struct tv_sim *sim = sim_new(false, 0);
	struct tv_vf_device *dev = tv_sim_device(sim, 0);
	struct tv_port_config pc;
	struct tv_port_ctx *ctx;
	struct tv_port_conn *conn = NULL;
	bool imm = mode == TV_PORT_SIGNAL_WRITE_IMM;

	pfix_config(&pc, mode);
	ck_assert_int_eq(tv_port_ctx_create(dev, &pc, &ctx), 0);
	ck_assert_int_eq(tv_port_conn_create(NULL, 1, &conn), -EINVAL);
	ck_assert_int_eq(tv_port_conn_create(ctx, 1, NULL), -EINVAL);
	vfd_hook(dev);
	vfd.fail_nth.create_cq = 1; /* the send CQ */
	ck_assert_int_eq(tv_port_conn_create(ctx, 1, &conn), -ENOMEM);
	if (imm) {
		vfd.fail_nth.create_cq = 2; /* the receive CQ */
		ck_assert_int_eq(tv_port_conn_create(ctx, 1, &conn), -ENOMEM);
	}
	vfd.fail_nth.create_qp = 1;
	ck_assert_int_eq(tv_port_conn_create(ctx, 1, &conn), -ENOMEM);
	tv_sim_fail_reg_mr(sim, 0, 1, -EFAULT); /* the atomics' scratch */
	ck_assert_int_eq(tv_port_conn_create(ctx, 1, &conn), -EFAULT);
	ck_assert_ptr_null(conn);
	ck_assert_uint_eq(ctx->nr_conns, 0);
	ck_assert_int_eq(tv_port_ctx_destroy(ctx), 0);
	vfd_unhook(dev);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}

START_TEST(test_conn_setup_failures_atomic)
{
	conn_setup_failures(TV_PORT_SIGNAL_ATOMIC);
}
END_TEST

START_TEST(test_conn_setup_failures_imm)
{
	conn_setup_failures(TV_PORT_SIGNAL_WRITE_IMM);
}
END_TEST

/* Connecting: twice, with nothing, and when the verbs calls fail. */
START_TEST(test_conn_connect_failures)
{
	struct tv_sim *sim = sim_new(false, 0);
	struct tv_port_config pc;
	struct tv_port_ctx *ctx[2];
	struct tv_port_conn *c[2];
	struct tv_vf_qp_endpoint ep[2];
	struct tv_port_mem_handle h = { 0x1000, 64, 1, 1 };
	static uint8_t buf[64];
	struct tv_port_mem *mem;
	uint64_t v = 0;

	pfix_config(&pc, TV_PORT_SIGNAL_WRITE_IMM);
	for (int i = 0; i < 2; i++) {
		pc.node_id = (uint32_t)i;
		ck_assert_int_eq(tv_port_ctx_create(tv_sim_device(sim, i), &pc,
						    &ctx[i]), 0);
		ck_assert_int_eq(tv_port_conn_create(ctx[i], !i, &c[i]), 0);
		ck_assert_int_eq(tv_port_conn_endpoint(c[i], &ep[i]), 0);
		ck_assert_uint_eq(tv_port_conn_peer(c[i]), !i);
	}
	ck_assert_int_eq(tv_port_mem_register(ctx[0], buf, sizeof(buf), &mem),
			 0);
	/* Not connected yet: nothing is posted. */
	ck_assert_int_eq(tv_port_conn_write(c[0], &h, 0, mem, 0, 8),
			 -ENOTCONN);
	ck_assert_int_eq(tv_port_conn_update_and_sync(c[0], &h, 0, &v, 1),
			 -ENOTCONN);
	ck_assert_int_eq(tv_port_conn_write_and_sync(c[0], &h, 0, mem, 0, 8,
						     &h, 8, &v, 1),
			 -ENOTCONN);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(tv_port_conn_progress(c[0]), 0);
	ck_assert_int_eq(tv_port_conn_connect(c[0], NULL), -EINVAL);
	vfd_hook(tv_sim_device(sim, 0));
	vfd.fail_nth.qp_endpoint = 1;
	ck_assert_int_eq(tv_port_conn_connect(c[0], &ep[1]), -ENOMEM);
	vfd.fail_nth.modify_qp = 1;
	ck_assert_int_eq(tv_port_conn_connect(c[0], &ep[1]), -ENOMEM);
	ck_assert(!c[0]->connected);
	vfd_unhook(tv_sim_device(sim, 0));
	ck_assert_int_eq(tv_port_mem_deregister(mem), 0);
	/* The receives of write-imm mode cannot be posted. */
	vfd_hook(tv_sim_device(sim, 1));
	vfd.fail_nth.post_recv = 3;
	ck_assert_int_eq(tv_port_conn_connect(c[1], &ep[0]), -ENOMEM);
	ck_assert(!c[1]->connected);
	ck_assert_uint_eq(c[1]->recvs_posted, 2);
	vfd_unhook(tv_sim_device(sim, 1));
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(tv_port_conn_destroy(c[i]), 0);
		ck_assert_int_eq(tv_port_ctx_destroy(ctx[i]), 0);
	}
	ck_assert_int_eq(tv_port_conn_destroy(NULL), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

START_TEST(test_conn_connect_twice)
{
	struct pworld w;
	struct tv_vf_qp_endpoint ep;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, false);
	ck_assert_int_eq(tv_port_conn_endpoint(w.n[1].conn, &ep), 0);
	ck_assert_int_eq(tv_port_conn_connect(w.n[0].conn, &ep), -EINVAL);
	tv_port_conn_abort(w.n[0].conn, NULL);
	ck_assert_str_eq(tv_port_conn_error(w.n[0].conn), "aborted: ?");
	pfix_fini(&w);
}
END_TEST

/* ---- connections: arguments ---------------------------------------------- */

START_TEST(test_conn_write_arguments)
{
	struct pworld w;
	struct tv_port_mem_handle peer, big;
	struct tv_port_mem *other, *huge;
	struct tv_port_conn_stats st;
	uint64_t v = 0;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, false);
	other = w.n[1].mdata; /* the peer's context's */
	tv_port_mem_handle(w.n[1].mdata, &peer);
	ck_assert_int_eq(tv_port_conn_write(NULL, &peer, 0, w.n[0].mdata, 0,
					    8), -EINVAL);
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, NULL, 0,
					    w.n[0].mdata, 0, 8), -EINVAL);
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0, NULL, 0, 8),
			 -EINVAL);
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0, other, 0,
					    8), -EINVAL);
	/* Past the IB message size, although inside both memories (the
	 * simulator registers without touching the bytes). */
	ck_assert_int_eq(tv_port_mem_register(w.n[0].ctx, w.n[0].data,
					      (1ull << 31) + 8, &huge), 0);
	big = peer;
	big.size_bytes = 1ull << 32;
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &big, 0, huge, 0,
					    (1ull << 31) + 1), -EINVAL);
	ck_assert_int_eq(tv_port_conn_write_and_sync(
				 w.n[0].conn, &big, 0, huge, 0,
				 (1ull << 31) + 1, &peer, 0, &v, 1),
			 -EINVAL);
	ck_assert_int_eq(tv_port_mem_deregister(huge), 0);
	/* update_and_sync: the arguments. */
	ck_assert_int_eq(tv_port_conn_update_and_sync(NULL, &peer, 0, &v, 1),
			 -EINVAL);
	ck_assert_int_eq(tv_port_conn_update_and_sync(w.n[0].conn, NULL, 0, &v,
						      1), -EINVAL);
	ck_assert_int_eq(tv_port_conn_update_and_sync(w.n[0].conn, &peer, 0,
						      NULL, 1), -EINVAL);
	/* write_and_sync: every argument, each range. */
	ck_assert_int_eq(tv_port_conn_write_and_sync(NULL, &peer, 0,
						     w.n[0].mdata, 0, 8, &peer,
						     0, &v, 1), -EINVAL);
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, NULL, 0,
						     w.n[0].mdata, 0, 8, &peer,
						     0, &v, 1), -EINVAL);
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer, 0,
						     NULL, 0, 8, &peer, 0, &v,
						     1), -EINVAL);
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer, 0,
						     w.n[0].mdata, 0, 8, &peer,
						     0, NULL, 1), -EINVAL);
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer, 0,
						     other, 0, 8, &peer, 0, &v,
						     1), -EINVAL);
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer,
						     FIX_DATA, w.n[0].mdata, 0,
						     8, &peer, 0, &v, 1),
			 -EINVAL);
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer, 0,
						     w.n[0].mdata, FIX_DATA - 4,
						     8, &peer, 0, &v, 1),
			 -EINVAL);
	/* Atomic mode: a write whose sync word is bad still went (two work
	 * requests, as MSCCL++); the word's error comes back. */
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer, 0,
						     w.n[0].mdata, 0, 8, &peer,
						     4, &v, 1), -EINVAL);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer, 0,
						     w.n[0].mdata, 0, 8, &peer,
						     8, &v, 5), 0);
	ck_assert_uint_eq(v, 5);
	ck_assert_int_eq(flush_direct(&w, 0), 0);
	tv_port_conn_stats(w.n[0].conn, &st);
	ck_assert_uint_eq(st.writes, 2);
	ck_assert_uint_eq(st.atomics, 1);
	pfix_run_all(&w);
	ck_assert_uint_eq(*(uint64_t *)(void *)(w.n[1].data + 8), 5);
	pfix_fini(&w);
}
END_TEST

/* Write-imm mode: one work request, the step must fit 32 bits. */
START_TEST(test_write_and_sync_imm)
{
	struct pworld w;
	struct tv_port_mem_handle peer, tok;
	uint64_t off, v = 10;

	pfix_init(&w, TV_PORT_SIGNAL_WRITE_IMM, false);
	tv_port_mem_handle(w.n[1].mdata, &peer);
	tv_port_sem_handle(w.n[1].sem, &tok, &off);
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer, 0,
						     w.n[0].mdata, 0, 8, &tok,
						     off, &v, 9), -ERANGE);
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer, 0,
						     w.n[0].mdata, 0, 8, &tok,
						     off, &v, 11 + (uint64_t)UINT32_MAX),
			 -ERANGE);
	ck_assert_uint_eq(v, 10);
	v = 0;
	w.n[0].data[0] = 0x5a;
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer, 0,
						     w.n[0].mdata, 0, 8, &tok,
						     off, &v, 1), 0);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(flush_direct(&w, 0), 0);
	pfix_run_all(&w);
	ck_assert_uint_eq(tv_port_sem_inbound(w.n[1].sem), 1);
	ck_assert_uint_eq(w.n[1].data[0], 0x5a);
	/* A failed connection refuses it. */
	tv_port_conn_abort(w.n[0].conn, "gone");
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer, 0,
						     w.n[0].mdata, 0, 8, &tok,
						     off, &v, 2), -EIO);
	ck_assert_int_eq(tv_port_conn_update_and_sync(w.n[0].conn, &tok, off,
						      &v, 2), -EIO);
	ck_assert_uint_eq(v, 1);
	pfix_fini(&w);
}
END_TEST

/* ---- connections: posting and completions that fail ---------------------- */

/* post_send refuses: the connection fails naming the operation. */
static void post_send_refused(enum tv_port_signal_mode mode, bool sync,
			      bool set_bad, const char *expect)
{
	struct pworld w;
	struct tv_port_mem_handle peer, tok;
	uint64_t off, v = 0;
	int ret;

	pfix_init(&w, mode, false);
	tv_port_mem_handle(w.n[1].mdata, &peer);
	tv_port_sem_handle(w.n[1].sem, &tok, &off);
	vfd_hook(w.n[0].dev);
	vfd.fail_nth.post_send = 1;
	vfd.bad_at = set_bad ? 0 : VFD_BAD_NONE;
	vfd.fail_err = -ENOMEM;
	ret = sync ? tv_port_conn_update_and_sync(w.n[0].conn, &tok, off, &v,
						  1) :
		     tv_port_conn_write(w.n[0].conn, &peer, 0, w.n[0].mdata, 0,
					8);
	vfd.bad_at = 0;
	vfd_unhook(w.n[0].dev);
	ck_assert_int_eq(ret, -EIO);
	ck_assert_uint_eq(v, 0); /* written only on success */
	ck_assert(tv_port_conn_failed(w.n[0].conn));
	ck_assert_msg(has(tv_port_conn_error(w.n[0].conn), expect), "%s",
		      tv_port_conn_error(w.n[0].conn));
	ck_assert_int_eq(tv_port_conn_flush_poll(w.n[0].conn), -EIO);
	pfix_fini(&w);
}

START_TEST(test_post_send_refused)
{
	post_send_refused(TV_PORT_SIGNAL_ATOMIC, false, false,
			  "post_send of a write failed: Cannot allocate");
	post_send_refused(TV_PORT_SIGNAL_ATOMIC, true, true,
			  "post_send of a fetch-and-add failed");
	post_send_refused(TV_PORT_SIGNAL_WRITE_IMM, true, true,
			  "post_send of a write-with-imm failed");
}
END_TEST

/*
 * Deferred posts go out as chains when completions make room: a chain
 * full at 64 is posted at once, and the post that fails there fails the
 * connection (progress says -EIO once).
 */
static void deferred_refused(uint32_t extra)
{
	struct pworld w;
	struct tv_port_mem_handle peer;
	struct tv_port_conn_stats st;
	uint32_t mwq;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, false);
	mwq = w.n[0].ctx->cfg.max_write_queue;
	tv_port_mem_handle(w.n[1].mdata, &peer);
	for (uint32_t i = 0; i < mwq + extra; i++)
		ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0,
						    w.n[0].mdata, 0, 0), 0);
	tv_port_conn_stats(w.n[0].conn, &st);
	ck_assert_uint_eq(st.deferred, extra);
	ck_assert_int_eq(tv_sim_run(w.sim, 0, 0), 0);
	vfd_hook(w.n[0].dev);
	vfd.fail_nth.post_send = 1;
	ck_assert_int_eq(tv_port_conn_progress(w.n[0].conn), -EIO);
	vfd_unhook(w.n[0].dev);
	ck_assert_msg(has(tv_port_conn_error(w.n[0].conn),
			  "post_send of a write failed"), "%s",
		      tv_port_conn_error(w.n[0].conn));
	/* Failed: what waited is dropped, and the news is not repeated. */
	ck_assert_uint_eq(w.n[0].conn->defer_len, 0);
	ck_assert_int_ge(tv_port_conn_progress(w.n[0].conn), 0);
	pfix_fini(&w);
}

START_TEST(test_deferred_refused)
{
	deferred_refused(3);
	deferred_refused(70);
}
END_TEST

/* write_and_sync in atomic mode wants room for both requests. */
START_TEST(test_write_and_sync_no_room)
{
	struct tv_sim_config sc;
	struct tv_port_config pc;
	struct pworld w;
	struct tv_port_mem_handle peer;
	uint64_t v = 0;
	int n = 0;

	tv_sim_config_default(&sc);
	pfix_config(&pc, TV_PORT_SIGNAL_ATOMIC);
	pc.cq_size = 8; /* max_write_queue 4, a deferred ring of 8 */
	pc.recv_depth = 4;
	pfix_init_cfg(&w, &sc, &pc, false);
	tv_port_mem_handle(w.n[1].mdata, &peer);
	while (tv_port_conn_write(w.n[0].conn, &peer, 0, w.n[0].mdata, 0, 8) ==
	       0)
		n++;
	ck_assert_int_eq(n, 4 + 8);
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer, 0,
						     w.n[0].mdata, 0, 8, &peer,
						     0, &v, 1), -EAGAIN);
	ck_assert_int_eq(tv_port_conn_update_and_sync(w.n[0].conn, &peer, 0,
						      &v, 1), -EAGAIN);
	ck_assert_uint_eq(v, 0);
	/* A connection with work in flight is not destroyed. */
	ck_assert_int_eq(tv_port_sem_destroy(w.n[0].sem), 0);
	w.n[0].sem = NULL;
	ck_assert_int_eq(tv_port_conn_destroy(w.n[0].conn), -EBUSY);
	ck_assert_int_eq(flush_direct(&w, 0), 0);
	pfix_run_all(&w);
	pfix_fini(&w);
}
END_TEST

/* Polling the CQs fails: the connection fails with the call named. */
static void poll_fails(bool recv)
{
	struct pworld w;

	pfix_init(&w, TV_PORT_SIGNAL_WRITE_IMM, false);
	vfd_hook(w.n[0].dev);
	vfd.poll_err = -EIO;
	vfd.poll_err_cq = recv ? w.n[0].conn->recv_cq : w.n[0].conn->send_cq;
	ck_assert_int_eq(tv_port_conn_progress(w.n[0].conn), -EIO);
	vfd.poll_err = 0;
	vfd.poll_err_cq = NULL;
	vfd_unhook(w.n[0].dev);
	ck_assert_msg(has(tv_port_conn_error(w.n[0].conn),
			  recv ? "poll_cq of the receive queue failed" :
				 "poll_cq of the send queue failed"),
		      "%s", tv_port_conn_error(w.n[0].conn));
	ck_assert_int_eq(tv_port_sem_wait_poll(w.n[0].sem, 0), -EIO);
	pfix_fini(&w);
}

START_TEST(test_poll_cq_fails)
{
	poll_fails(false);
	poll_fails(true);
}
END_TEST

/* The receives cannot be posted again after a signal came in. */
START_TEST(test_post_recv_refused_later)
{
	struct pworld w;

	pfix_init(&w, TV_PORT_SIGNAL_WRITE_IMM, false);
	ck_assert_int_eq(tv_port_sem_signal(w.n[0].sem), 0);
	ck_assert_int_eq(tv_sim_run(w.sim, 0, 0), 0);
	vfd_hook(w.n[1].dev);
	vfd.fail_nth.post_recv = 1;
	ck_assert_int_eq(tv_port_conn_progress(w.n[1].conn), -EIO);
	vfd_unhook(w.n[1].dev);
	/* The signal itself was applied before. */
	ck_assert_uint_eq(tv_port_sem_inbound(w.n[1].sem), 1);
	ck_assert_str_eq(tv_port_conn_error(w.n[1].conn), "post_recv failed");
	ck_assert_int_eq(flush_direct(&w, 0), 0);
	pfix_fini(&w);
}
END_TEST

/* The QP fails under posted receives: they complete in error. */
START_TEST(test_recv_flushed)
{
	struct pworld w;

	pfix_init(&w, TV_PORT_SIGNAL_WRITE_IMM, false);
	ck_assert_int_eq(tv_sim_qp_fail(w.n[1].conn->qp,
					TV_WC_RETRY_EXC_ERR), 0);
	pfix_run_all(&w);
	ck_assert(tv_port_conn_failed(w.n[1].conn));
	ck_assert_msg(has(tv_port_conn_error(w.n[1].conn),
			  "recv work completion failed"), "%s",
		      tv_port_conn_error(w.n[1].conn));
	ck_assert_int_eq(tv_port_sem_wait_poll(w.n[1].sem, UINT64_MAX), -EIO);
	pfix_fini(&w);
}
END_TEST

/*
 * A lying peer: a raw QP on node 1 connected to node 0's write-imm
 * connection sends what is not a signal, or signals a connection that
 * has no semaphore.  Node 0's connection fails, naming the peer.
 */
static void raw_peer(bool send, const char *expect)
{
	struct tv_sim *sim = sim_new(false, 0);
	struct tv_vf_device *d1 = tv_sim_device(sim, 1);
	struct tv_port_config pc;
	struct tv_port_ctx *ctx;
	struct tv_port_conn *conn;
	struct tv_port_mem *tok;
	struct tv_port_sem *sem;
	struct tv_vf_pd *pd;
	struct tv_vf_cq *cq;
	struct tv_vf_qp *qp;
	struct tv_vf_qp_init_attr init = { .max_send_wr = 4, .max_recv_wr = 4,
					   .max_send_sge = 1,
					   .max_recv_sge = 1 };
	struct tv_vf_qp_endpoint ep0, ep1;
	struct tv_vf_connect_cfg cc;
	struct tv_vf_send_wr wr = { .wr_id = 1, .num_sge = 0,
				    .send_flags = TV_SEND_SIGNALED }, *bad;
	struct tv_vf_wc wc;
	struct tv_port_mem_handle th;
	static _Alignas(8) uint8_t token[64];

	pfix_config(&pc, TV_PORT_SIGNAL_WRITE_IMM);
	ck_assert_int_eq(tv_port_ctx_create(tv_sim_device(sim, 0), &pc, &ctx),
			 0);
	ck_assert_int_eq(tv_port_mem_register(ctx, token, sizeof(token), &tok),
			 0);
	ck_assert_int_eq(tv_port_conn_create(ctx, 1, &conn), 0);
	ck_assert_int_eq(tv_port_sem_create(conn, tok, 0, &sem), 0);
	if (!send) /* no semaphore: nobody to signal */
		ck_assert_int_eq(tv_port_sem_destroy(sem), 0);
	ck_assert_int_eq(tv_vf_alloc_pd(d1, &pd), 0);
	ck_assert_int_eq(tv_vf_create_cq(d1, 16, &cq), 0);
	init.send_cq = init.recv_cq = cq;
	ck_assert_int_eq(tv_vf_create_qp(pd, &init, &qp), 0);
	ck_assert_int_eq(tv_port_conn_endpoint(conn, &ep0), 0);
	ck_assert_int_eq(tv_vf_qp_endpoint(qp, &ep1), 0);
	ck_assert_int_eq(tv_port_conn_connect(conn, &ep1), 0);
	tv_vf_connect_cfg_default(&cc);
	ck_assert_int_eq(tv_vf_connect_qp(qp, &cc, &ep1, &ep0), 0);
	wr.opcode = send ? TV_WR_SEND : TV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = 1;
	tv_port_mem_handle(tok, &th);
	wr.remote_addr = th.addr;
	wr.rkey = th.rkey;
	ck_assert_int_eq(tv_vf_post_send(qp, &wr, &bad), 0);
	ck_assert_int_eq(tv_sim_run(sim, 0, 0), 0);
	ck_assert_int_eq(tv_port_conn_progress(conn), -EIO);
	ck_assert_msg(has(tv_port_conn_error(conn), expect), "%s",
		      tv_port_conn_error(conn));
	/* Reported once: progress goes on quietly. */
	ck_assert_int_ge(tv_port_conn_progress(conn), 0);
	ck_assert_int_eq(tv_vf_poll_cq(cq, 1, &wc), 1);
	ck_assert_int_eq(wc.status, TV_WC_SUCCESS);
	if (send)
		ck_assert_int_eq(tv_port_sem_destroy(sem), 0);
	ck_assert_int_eq(tv_port_conn_destroy(conn), 0);
	ck_assert_int_eq(tv_port_mem_deregister(tok), 0);
	ck_assert_int_eq(tv_port_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tv_vf_destroy_qp(qp), 0);
	ck_assert_int_eq(tv_vf_destroy_cq(cq), 0);
	ck_assert_int_eq(tv_vf_dealloc_pd(pd), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}

START_TEST(test_peer_sends_not_a_signal)
{
	raw_peer(true, "node 1 sent something that is not a signal (opcode");
}
END_TEST

START_TEST(test_peer_signals_no_semaphore)
{
	raw_peer(false, "node 1 signalled a connection with no semaphore");
}
END_TEST

/* ---- flushes: deadlines, holds, a world with nothing left to do ---------- */

START_TEST(test_conn_flush_deadlines)
{
	struct pworld w;
	struct tv_port_mem_handle peer;
	struct tv_port_conn_stats st;
	uint64_t now;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, false);
	tv_port_mem_handle(w.n[1].mdata, &peer);
	ck_assert_int_eq(tv_port_conn_flush(w.n[0].conn, 0), 0); /* idle */
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0,
					    w.n[0].mdata, 0, 4096), 0);
	now = tv_sim_now_ns(w.sim);
	ck_assert_int_eq(tv_port_conn_flush(w.n[0].conn, now), -ETIMEDOUT);
	ck_assert_int_eq(tv_port_conn_flush(w.n[0].conn, now + 1),
			 -ETIMEDOUT);
	ck_assert_int_eq(tv_port_conn_flush(w.n[0].conn, UINT64_MAX), 0);
	/* A hold: the post waits for it, the flush sleeps until it ends. */
	now = tv_sim_now_ns(w.sim);
	port_conn_delay_next(w.n[0].conn, now + 50000);
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0,
					    w.n[0].mdata, 0, 64), 0);
	tv_port_conn_stats(w.n[0].conn, &st);
	ck_assert_uint_eq(st.deferred, 1);
	ck_assert_int_eq(tv_port_conn_flush(w.n[0].conn, UINT64_MAX), 0);
	ck_assert_uint_ge(tv_sim_now_ns(w.sim), now + 50000);
	/* Completions that never come (a CQ that shows nothing): the world
	 * runs dry, and the flush says so instead of hanging. */
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0,
					    w.n[0].mdata, 0, 64), 0);
	vfd_hook(w.n[0].dev);
	vfd.swallow = true;
	ck_assert_int_eq(tv_port_conn_flush(w.n[0].conn, UINT64_MAX),
			 -EDEADLK);
	vfd.swallow = false;
	vfd_unhook(w.n[0].dev);
	ck_assert_int_eq(tv_port_conn_flush(w.n[0].conn, UINT64_MAX), 0);
	pfix_fini(&w);
}
END_TEST


/* ---- busy objects, full rings, the internal flush request ----------------- */

START_TEST(test_busy_and_full)
{
	struct pworld w;
	struct tv_port_mem_handle peer;
	struct tv_port_proxy *p;
	uint64_t now, v = 0;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, false);
	tv_port_mem_handle(w.n[1].mdata, &peer);
	/* A semaphore keeps its connection; a connection its context. */
	ck_assert_int_eq(tv_port_conn_destroy(w.n[0].conn), -EBUSY);
	ck_assert_int_eq(tv_port_sem_destroy(w.n[0].sem), 0);
	w.n[0].sem = NULL;
	ck_assert_int_eq(tv_port_mem_deregister(w.n[0].mdata), 0);
	ck_assert_int_eq(tv_port_mem_deregister(w.n[0].mtoken), 0);
	w.n[0].mdata = w.n[0].mtoken = NULL;
	ck_assert_int_eq(tv_port_ctx_destroy(w.n[0].ctx), -EBUSY); /* conn */
	/* Held (nothing in flight): deferred work keeps it too. */
	ck_assert_int_eq(tv_port_mem_register(w.n[0].ctx, w.n[0].data,
					      FIX_DATA, &w.n[0].mdata), 0);
	now = tv_sim_now_ns(w.sim);
	port_conn_delay_next(w.n[0].conn, now + 50000);
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0,
					    w.n[0].mdata, 0, 64), 0);
	ck_assert_uint_eq(w.n[0].conn->posted, 0);
	ck_assert_int_eq(tv_port_conn_destroy(w.n[0].conn), -EBUSY);
	/* A deadline before the hold's end: no wake-up for the hold (a
	 * later timer keeps the simulated world from running dry). */
	ck_assert_int_eq(tv_vf_wake_at(w.n[0].dev, now + 1000000), 0);
	ck_assert_int_eq(tv_port_conn_flush(w.n[0].conn, now + 1000),
			 -ETIMEDOUT);
	ck_assert_uint_ge(tv_sim_now_ns(w.sim), now + 1000);
	ck_assert_int_eq(tv_port_conn_flush(w.n[0].conn, UINT64_MAX), 0);
	/* Flush requests: the ring holds fifo_size of them. */
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0,
					    w.n[0].mdata, 0, 64), 0);
	for (uint32_t i = 0; i < w.n[0].conn->flush_cap; i++)
		ck_assert_int_eq(port_conn_request_flush(w.n[0].conn, i), 0);
	ck_assert_int_eq(port_conn_request_flush(w.n[0].conn, 999), -EAGAIN);
	ck_assert_int_eq(tv_port_conn_flush(w.n[0].conn, UINT64_MAX), 0);
	ck_assert_uint_eq(w.n[0].conn->flush_len, 0);
	ck_assert_uint_eq(atomic_load(&w.n[0].conn->flush_done_pos),
			  w.n[0].conn->flush_cap);
	/* A context with only a proxy left is busy too. */
	ck_assert_int_eq(tv_port_proxy_create(w.n[1].ctx, NULL, NULL, &p), 0);
	/* A failed connection: no flush request, no write-and-sync. */
	tv_port_conn_abort(w.n[0].conn, "gone");
	ck_assert_int_eq(port_conn_request_flush(w.n[0].conn, 1000), -EIO);
	ck_assert_int_eq(tv_port_conn_write_and_sync(w.n[0].conn, &peer, 0,
						     w.n[0].mdata, 0, 8, &peer,
						     0, &v, 1), -EIO);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(tv_port_conn_destroy(w.n[0].conn), 0);
	w.n[0].conn = NULL;
	ck_assert_int_eq(tv_port_mem_deregister(w.n[0].mdata), 0);
	w.n[0].mdata = NULL;
	ck_assert_int_eq(tv_port_ctx_destroy(w.n[0].ctx), 0);
	w.n[0].ctx = NULL;
	ck_assert_int_eq(tv_port_sem_destroy(w.n[1].sem), 0);
	w.n[1].sem = NULL;
	ck_assert_int_eq(tv_port_conn_destroy(w.n[1].conn), 0);
	w.n[1].conn = NULL;
	ck_assert_int_eq(tv_port_mem_deregister(w.n[1].mdata), 0);
	ck_assert_int_eq(tv_port_mem_deregister(w.n[1].mtoken), 0);
	w.n[1].mdata = w.n[1].mtoken = NULL;
	ck_assert_int_eq(tv_port_ctx_destroy(w.n[1].ctx), -EBUSY);
	ck_assert_int_eq(tv_port_proxy_destroy(p), 0);
	pfix_fini(&w); /* destroys what is left (NULLs are no-ops) */
}
END_TEST

/* ---- semaphores ----------------------------------------------------------- */

START_TEST(test_sem_arguments)
{
	struct pworld w;
	struct tv_port_sem *s = NULL;
	struct tv_port_mem_handle h;
	uint64_t off;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, false);
	ck_assert_int_eq(tv_port_sem_create(NULL, w.n[0].mtoken, 0, &s),
			 -EINVAL);
	ck_assert_int_eq(tv_port_sem_create(w.n[0].conn, NULL, 0, &s),
			 -EINVAL);
	ck_assert_int_eq(tv_port_sem_create(w.n[0].conn, w.n[0].mtoken, 0,
					    NULL), -EINVAL);
	/* Another context's memory. */
	ck_assert_int_eq(tv_port_sem_create(w.n[0].conn, w.n[1].mtoken, 0, &s),
			 -EINVAL);
	ck_assert_int_eq(tv_port_sem_create(w.n[0].conn, w.n[0].mtoken,
					    FIX_TOKEN + 8, &s), -EINVAL);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(tv_port_sem_destroy(NULL), 0);
	ck_assert_ptr_eq(tv_port_sem_conn(w.n[0].sem), w.n[0].conn);
	tv_port_sem_handle(w.n[1].sem, &h, &off);
	ck_assert_int_eq(tv_port_sem_set_remote(NULL, &h, off), -EINVAL);
	ck_assert_int_eq(tv_port_sem_set_remote(w.n[0].sem, NULL, off),
			 -EINVAL);
	ck_assert_int_eq(tv_port_sem_set_remote(w.n[0].sem, &h,
						FIX_TOKEN + 8), -EINVAL);
	ck_assert_int_eq(tv_port_sem_set_remote(w.n[0].sem, &h, FIX_TOKEN - 4),
			 -EINVAL);
	/* The good remote is still the one used. */
	ck_assert_int_eq(tv_port_sem_signal(w.n[0].sem), 0);
	ck_assert_int_eq(flush_direct(&w, 0), 0);
	pfix_run_all(&w);
	ck_assert_uint_eq(tv_port_sem_inbound(w.n[1].sem), 1);
	pfix_fini(&w);
}
END_TEST

/* A semaphore with no remote cannot signal; one whose post fails does
 * not count the signal. */
START_TEST(test_sem_signal_refused)
{
	struct pworld w;
	struct tv_port_sem *s;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, false);
	ck_assert_int_eq(tv_port_sem_create(w.n[0].conn, w.n[0].mtoken, 64,
					    &s), 0);
	ck_assert_int_eq(tv_port_sem_signal(s), -ENOTCONN);
	ck_assert_uint_eq(tv_port_sem_outbound(s), 0);
	ck_assert_int_eq(tv_port_sem_destroy(s), 0);
	tv_port_conn_abort(w.n[0].conn, "dead");
	ck_assert_int_eq(tv_port_sem_signal(w.n[0].sem), -EIO);
	ck_assert_uint_eq(tv_port_sem_outbound(w.n[0].sem), 0);
	pfix_fini(&w);
}
END_TEST

/* Reset zeroes every counter (and the rebuilt immediate); the broken
 * design keeps the token's old count (MSCCL++ #795). */
static void sem_reset(enum tv_port_signal_mode mode, uint32_t breakage)
{
	struct pworld w;

	pfix_init(&w, mode, false);
	w.n[1].ctx->cfg.test_breakage = breakage; /* white box: from now */
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(tv_port_sem_signal(w.n[0].sem), 0);
	ck_assert_int_eq(flush_direct(&w, 0), 0);
	pfix_run_all(&w);
	ck_assert(tv_port_sem_poll(w.n[1].sem));
	ck_assert_uint_eq(tv_port_sem_inbound(w.n[1].sem), 2);
	tv_port_sem_reset(w.n[1].sem);
	tv_port_sem_reset(w.n[0].sem);
	ck_assert_uint_eq(tv_port_sem_expected(w.n[1].sem), 0);
	ck_assert_uint_eq(tv_port_sem_outbound(w.n[0].sem), 0);
	ck_assert_uint_eq(tv_port_sem_inbound(w.n[1].sem), breakage ? 2 : 0);
	if (mode == TV_PORT_SIGNAL_WRITE_IMM)
		ck_assert_uint_eq(w.n[1].conn->imm_value, 0);
	pfix_fini(&w);
}

START_TEST(test_sem_reset)
{
	sem_reset(TV_PORT_SIGNAL_ATOMIC, 0);
	sem_reset(TV_PORT_SIGNAL_WRITE_IMM, 0);
	sem_reset(TV_PORT_SIGNAL_ATOMIC, TV_PORT_BREAK_NO_SEM_RESET);
}
END_TEST

/* A wait without a deadline (MSCCL++ #161/#377) never times out. */
START_TEST(test_sem_wait_no_timeout_breakage)
{
	struct tv_sim_config sc;
	struct tv_port_config pc;
	struct pworld w;

	tv_sim_config_default(&sc);
	pfix_config(&pc, TV_PORT_SIGNAL_ATOMIC);
	pc.test_breakage = TV_PORT_BREAK_NO_WAIT_TIMEOUT;
	pfix_init_cfg(&w, &sc, &pc, false);
	ck_assert_int_eq(tv_port_sem_wait_poll(w.n[1].sem, 0), -EAGAIN);
	pfix_fini(&w);
}
END_TEST

/* The blocking wait: with progress (write-imm signals are applied by
 * it), and spinning with a clock the test moves one tick per look. */
START_TEST(test_sem_wait_blocking)
{
	struct pworld w;
	uint64_t dl;

	pfix_init(&w, TV_PORT_SIGNAL_WRITE_IMM, false);
	ck_assert_int_eq(tv_port_sem_signal(w.n[0].sem), 0);
	ck_assert_int_eq(tv_sim_run(w.sim, 0, 0), 0);
	ck_assert_uint_eq(tv_port_sem_inbound(w.n[1].sem), 0); /* not yet */
	ck_assert_int_eq(tv_port_sem_wait(w.n[1].sem, UINT64_MAX, true), 0);
	ck_assert_uint_eq(tv_port_sem_expected(w.n[1].sem), 1);
	vfd_hook(w.n[1].dev);
	vfd.fake_clock = true;
	vfd.now = 0;
	dl = 3000;
	ck_assert_int_eq(tv_port_sem_wait(w.n[1].sem, dl, false), -ETIMEDOUT);
	ck_assert_uint_ge(vfd.now, dl);
	vfd.now = 0;
	ck_assert_int_eq(tv_port_sem_wait(w.n[1].sem, dl, true), -ETIMEDOUT);
	vfd.fake_clock = false;
	vfd_unhook(w.n[1].dev);
	ck_assert_uint_eq(tv_port_sem_expected(w.n[1].sem), 1);
	ck_assert_int_eq(flush_direct(&w, 0), 0);
	pfix_fini(&w);
}
END_TEST

/* ---- the proxy ------------------------------------------------------------ */

START_TEST(test_proxy_registrations)
{
	struct pworld w;
	struct tv_port_proxy *p, *q;
	struct tv_port_mem_handle h;
	struct tv_port_sem *s2;
	struct tv_port_chan *ch = NULL;
	uint32_t id = 999, sid, lid, rid;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, false);
	ck_assert_int_eq(tv_port_proxy_create(NULL, NULL, NULL, &p), -EINVAL);
	ck_assert_int_eq(tv_port_proxy_create(w.n[0].ctx, NULL, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(tv_port_proxy_create(w.n[0].ctx, NULL, NULL, &p), 0);
	ck_assert_int_eq(tv_port_proxy_destroy(NULL), 0);
	ck_assert_str_eq(tv_port_proxy_error(p), "");
	/* Memories: ours, then a peer's handle that holds something. */
	ck_assert_int_eq(tv_port_proxy_add_local(p, NULL, &id), -EINVAL);
	ck_assert_int_eq(tv_port_proxy_add_local(p, w.n[1].mdata, &id),
			 -EINVAL);
	tv_port_mem_handle(w.n[1].mdata, &h);
	ck_assert_int_eq(tv_port_proxy_add_remote(p, NULL, &id), -EINVAL);
	h.size_bytes = 0;
	ck_assert_int_eq(tv_port_proxy_add_remote(p, &h, &id), -EINVAL);
	h.size_bytes = 16;
	h.addr = UINT64_MAX - 8;
	ck_assert_int_eq(tv_port_proxy_add_remote(p, &h, &id), -EINVAL);
	ck_assert_uint_eq(id, 999);
	tv_port_mem_handle(w.n[1].mdata, &h);
	ck_assert_int_eq(tv_port_proxy_add_local(p, w.n[0].mdata, &lid), 0);
	ck_assert_int_eq(tv_port_proxy_add_remote(p, &h, &rid), 0);
	for (uint32_t i = 2; i < TV_PORT_MAX_MEMORIES; i++)
		ck_assert_int_eq(tv_port_proxy_add_remote(p, &h, &id), 0);
	ck_assert_uint_eq(id, TV_PORT_MAX_MEMORIES - 1);
	ck_assert_int_eq(tv_port_proxy_add_remote(p, &h, &id), -ENOSPC);
	ck_assert_int_eq(tv_port_proxy_add_local(p, w.n[0].mdata, &id),
			 -ENOSPC);
	/* Semaphores: ours; two on one connection share it. */
	ck_assert_int_eq(tv_port_proxy_add_sem(p, NULL, &id), -EINVAL);
	ck_assert_int_eq(tv_port_proxy_add_sem(p, w.n[1].sem, &id), -EINVAL);
	ck_assert_int_eq(tv_port_sem_create(w.n[0].conn, w.n[0].mtoken, 8,
					    &s2), 0);
	ck_assert_int_eq(tv_port_proxy_add_sem(p, w.n[0].sem, &sid), 0);
	for (uint32_t i = 1; i < TV_PORT_MAX_SEMAPHORES; i++)
		ck_assert_int_eq(tv_port_proxy_add_sem(p, s2, &id), 0);
	ck_assert_uint_eq(p->nr_conns, 1);
	ck_assert_int_eq(tv_port_proxy_add_sem(p, s2, &id), -ENOSPC);
	/* A connection belongs to one proxy. */
	ck_assert_int_eq(tv_port_proxy_create(w.n[0].ctx, NULL, NULL, &q), 0);
	ck_assert_int_eq(tv_port_proxy_add_sem(q, s2, &id), -EBUSY);
	/* A second connection's semaphore: a second connection polled. */
	{
		struct tv_port_conn *c2;
		struct tv_port_sem *s3;
		uint32_t id3;

		ck_assert_int_eq(tv_port_conn_create(w.n[0].ctx, 1, &c2), 0);
		ck_assert_int_eq(tv_port_sem_create(c2, w.n[0].mtoken, 16,
						    &s3), 0);
		ck_assert_int_eq(tv_port_proxy_add_sem(q, s3, &id3), 0);
		ck_assert_int_eq(tv_port_proxy_add_sem(q, s3, &id3), 0);
		ck_assert_uint_eq(q->nr_conns, 1);
		/* ... and another proxy's connection after it: still -EBUSY. */
		ck_assert_int_eq(tv_port_proxy_add_sem(q, s2, &id3), -EBUSY);
		ck_assert_int_eq(tv_port_proxy_destroy(q), 0);
		ck_assert_int_eq(tv_port_sem_destroy(s3), 0);
		ck_assert_int_eq(tv_port_conn_destroy(c2), 0);
	}
	/* Channels: ids in range, a peer's destination, our source. */
	ck_assert_int_eq(tv_port_chan_create(NULL, sid, rid, lid, &ch),
			 -EINVAL);
	ck_assert_int_eq(tv_port_chan_create(p, sid, rid, lid, NULL), -EINVAL);
	ck_assert_int_eq(tv_port_chan_create(p, TV_PORT_MAX_SEMAPHORES, rid,
					     lid, &ch), -EINVAL);
	ck_assert_int_eq(tv_port_chan_create(p, sid, TV_PORT_MAX_MEMORIES, lid,
					     &ch), -EINVAL);
	ck_assert_int_eq(tv_port_chan_create(p, sid, rid, TV_PORT_MAX_MEMORIES,
					     &ch), -EINVAL);
	ck_assert_int_eq(tv_port_chan_create(p, sid, lid, lid, &ch), -EINVAL);
	ck_assert_int_eq(tv_port_chan_create(p, sid, rid, rid, &ch), -EINVAL);
	ck_assert_ptr_null(ch);
	ck_assert_int_eq(tv_port_chan_create(p, sid, rid, lid, &ch), 0);
	ck_assert_ptr_eq(tv_port_chan_sem(ch), w.n[0].sem);
	/* Triggers out of the fields' widths are refused at the producer. */
	ck_assert_int_eq(tv_port_chan_put(ch, 1ull << 32, 0, 8, NULL),
			 -EINVAL);
	ck_assert_int_eq(tv_port_chan_put(ch, 0, 0, 1ull << 32, NULL),
			 -EINVAL);
	ck_assert_int_eq(tv_port_proxy_destroy(p), -EBUSY);
	/* The connection is busy while a proxy has it. */
	ck_assert_int_eq(tv_port_sem_destroy(s2), 0);
	ck_assert_int_eq(tv_port_sem_destroy(w.n[0].sem), 0);
	ck_assert_int_eq(tv_port_conn_destroy(w.n[0].conn), -EBUSY);
	ck_assert_int_eq(tv_port_sem_create(w.n[0].conn, w.n[0].mtoken, 0,
					    &w.n[0].sem), 0);
	tv_port_chan_destroy(ch);
	tv_port_chan_destroy(NULL);
	ck_assert_int_eq(tv_port_proxy_destroy(p), 0);
	ck_assert(!w.n[0].conn->in_proxy);
	pfix_fini(&w);
}
END_TEST

struct chan_arg {
	struct tv_port_chan *chan;
	uint64_t pos;
	int ret;
};

static bool chan_flushed(void *arg)
{
	struct chan_arg *a = arg;

	a->ret = tv_port_chan_flush_done(a->chan, a->pos);
	return a->ret != -EAGAIN;
}

static void push_raw(struct pworld *w, uint32_t type, uint32_t dst,
		     uint32_t src, uint32_t sem)
{
	struct tv_port_trigger t;

	ck_assert_int_eq(tv_port_trigger_pack(type, dst, 0, src, 0, 8, sem,
					      &t), 0);
	ck_assert_int_eq(tv_port_fifo_try_push(tv_port_proxy_fifo(w->n[0].proxy),
					       &t, NULL), 0);
}

/* Triggers the proxy cannot use: dropped, counted, the first one said;
 * a flush not yet done behind them says -EPROTO instead of waiting. */
START_TEST(test_proxy_bad_triggers)
{
	struct pworld w;
	struct tv_port_proxy_stats st;
	const char *err;
	uint64_t pos;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, true);
	/* The fixture's ids: source 0 (ours), destination 1, semaphore 0. */
	push_raw(&w, TV_PORT_TRIGGER_DATA, 1, 0, 5);  /* no semaphore 5 */
	push_raw(&w, 0, 1, 0, 0);                     /* no type */
	push_raw(&w, TV_PORT_TRIGGER_DATA, 0, 0, 0);  /* ours as destination */
	push_raw(&w, TV_PORT_TRIGGER_DATA, 1, 1, 0);  /* a peer's as source */
	push_raw(&w, TV_PORT_TRIGGER_DATA, 1, 9, 0);  /* no source 9 */
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 5), 5);
	tv_port_proxy_stats(w.n[0].proxy, &st);
	ck_assert_uint_eq(st.bad_triggers, 5);
	ck_assert_uint_eq(st.triggers, 5);
	err = tv_port_proxy_error(w.n[0].proxy);
	ck_assert_msg(has(err, "FIFO position 0 is not usable: semaphore id 5 "
			  "of 1, type 1"), "%s", err);
	ck_assert_int_eq(tv_port_chan_flush(w.n[0].chan, &pos), 0);
	ck_assert_int_eq(tv_port_chan_flush_done(w.n[0].chan, pos), -EPROTO);
	ck_assert_int_eq(tv_port_chan_flush_wait(w.n[0].chan, pos, UINT64_MAX),
			 -EPROTO);
	pfix_run_all(&w);
	ck_assert_int_eq(tv_port_chan_flush_done(w.n[0].chan, pos), 0);
	tv_port_proxy_stats(w.n[0].proxy, &st);
	ck_assert_uint_eq(st.bad_triggers, 5);
	pfix_run_all(&w);
	pfix_fini(&w);
}
END_TEST

/* A failed connection: its triggers are dropped, its flushes fail. */
START_TEST(test_proxy_failed_conn)
{
	struct pworld w;
	struct tv_port_proxy_stats st;
	uint64_t pos;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, true);
	ck_assert(tv_port_proxy_idle(w.n[0].proxy));
	ck_assert_int_eq(tv_port_chan_put(w.n[0].chan, 0, 0, 64, NULL), 0);
	ck_assert(!tv_port_proxy_idle(w.n[0].proxy)); /* queued */
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 1), 1);
	ck_assert(!tv_port_proxy_idle(w.n[0].proxy)); /* in flight */
	pfix_run_all(&w);
	ck_assert(tv_port_proxy_idle(w.n[0].proxy));
	tv_port_conn_abort(w.n[0].conn, "gone");
	ck_assert_int_eq(tv_port_chan_put_with_signal(w.n[0].chan, 0, 0, 8,
						      NULL), 0);
	ck_assert_int_eq(tv_port_chan_flush(w.n[0].chan, &pos), 0);
	pfix_run_all(&w);
	tv_port_proxy_stats(w.n[0].proxy, &st);
	ck_assert_uint_eq(st.dropped, 2);
	ck_assert_uint_eq(st.data, 1);
	ck_assert_int_eq(tv_port_chan_flush_done(w.n[0].chan, pos), -EIO);
	ck_assert_int_eq(tv_port_chan_flush_wait(w.n[0].chan, pos, 0), -EIO);
	pfix_fini(&w);
}
END_TEST

/*
 * Regression: a put-with-signal on a channel whose semaphore was never
 * given its peer's handle used to vanish (the proxy consumed it, nothing
 * posted, nothing said, the producer's flush reported success).  It is a
 * trigger the proxy cannot use: said like the others.
 */
START_TEST(test_proxy_sem_without_remote)
{
	struct pworld w;
	struct tv_port_proxy_stats st;
	struct chan_arg a;
	struct tv_port_sem *s;
	struct tv_port_chan *ch;
	uint32_t sid;
	const char *err;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, true);
	ck_assert_int_eq(tv_port_sem_create(w.n[0].conn, w.n[0].mtoken, 64,
					    &s), 0);
	ck_assert_int_eq(tv_port_proxy_add_sem(w.n[0].proxy, s, &sid), 0);
	ck_assert_int_eq(tv_port_chan_create(w.n[0].proxy, sid, 1, 0, &ch), 0);
	ck_assert_int_eq(tv_port_chan_put_with_signal(ch, 0, 0, 8, NULL), 0);
	ck_assert_int_eq(tv_port_chan_signal(ch, NULL), 0);
	a = (struct chan_arg){ ch, 0, 0 };
	ck_assert_int_eq(tv_port_chan_flush(ch, &a.pos), 0);
	ck_assert(pfix_run_until(&w, chan_flushed, &a));
	tv_port_proxy_stats(w.n[0].proxy, &st);
	ck_assert_uint_eq(st.bad_triggers, 2);
	err = tv_port_proxy_error(w.n[0].proxy);
	ck_assert_msg(has(err, "FIFO position 0 is not usable: semaphore 1 "
			  "has no peer"), "%s", err);
	ck_assert_uint_eq(tv_port_sem_outbound(s), 0);
	tv_port_chan_destroy(ch);
	ck_assert_int_eq(tv_port_sem_destroy(s), 0);
	pfix_run_all(&w);
	pfix_fini(&w);
}
END_TEST

/* The blocking flush wait, on a clock the test moves. */
START_TEST(test_chan_flush_wait_deadline)
{
	struct pworld w;
	uint64_t pos;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, true);
	ck_assert_int_eq(tv_port_chan_put_with_signal_and_flush(w.n[0].chan,
								0, 0, 64,
								&pos),
			 0);
	vfd_hook(w.n[0].dev);
	vfd_hook(w.n[1].dev);
	vfd.fake_clock = true;
	vfd.now = 0;
	ck_assert_int_eq(tv_port_chan_flush_wait(w.n[0].chan, pos, 2500),
			 -ETIMEDOUT);
	ck_assert_uint_ge(vfd.now, 2500);
	vfd.now = 0;
	ck_assert_int_eq(tv_port_chan_wait(w.n[1].chan, 2500), -ETIMEDOUT);
	vfd.fake_clock = false;
	vfd_unhook(w.n[0].dev);
	vfd_unhook(w.n[1].dev);
	pfix_run_all(&w);
	ck_assert_int_eq(tv_port_chan_flush_wait(w.n[0].chan, pos, UINT64_MAX),
			 0);
	ck_assert_int_eq(tv_port_chan_wait(w.n[1].chan, UINT64_MAX), 0);
	pfix_fini(&w);
}
END_TEST

/* wake_ns: the earliest hold still ahead, none once passed. */
START_TEST(test_proxy_wake_ns)
{
	struct pworld w;
	uint64_t now;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, true);
	ck_assert_uint_eq(tv_port_proxy_wake_ns(w.n[0].proxy), 0);
	now = tv_sim_now_ns(w.sim);
	port_conn_delay_next(w.n[0].conn, now + 7000);
	ck_assert_uint_eq(tv_port_proxy_wake_ns(w.n[0].proxy), now + 7000);
	/* A post held: nothing in flight, but the proxy is not idle. */
	ck_assert_int_eq(tv_port_chan_put(w.n[0].chan, 0, 0, 8, NULL), 0);
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 8), 1);
	ck_assert_uint_eq(w.n[0].conn->posted, w.n[0].conn->completed);
	ck_assert_uint_eq(w.n[0].conn->defer_len, 1);
	ck_assert(!tv_port_proxy_idle(w.n[0].proxy));
	w.n[0].proxy->stall_until_ns = now + 9000;
	ck_assert_uint_eq(tv_port_proxy_wake_ns(w.n[0].proxy), now + 7000);
	w.n[0].proxy->stall_until_ns = now + 5000;
	ck_assert_uint_eq(tv_port_proxy_wake_ns(w.n[0].proxy), now + 5000);
	/* Stalled: a turn does nothing until the stall ends. */
	ck_assert_int_eq(tv_port_chan_put(w.n[0].chan, 0, 0, 8, NULL), 0);
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 8), 0);
	w.n[0].proxy->stall_until_ns = 0;
	port_conn_delay_next(w.n[0].conn, 0);
	ck_assert_uint_eq(tv_port_proxy_wake_ns(w.n[0].proxy), 0);
	pfix_run_all(&w);
	pfix_fini(&w);
}
END_TEST


/* ---- the proxy's turns: rooms, breakages, faults, events ----------------- */

static void world_cfg(struct pworld *w, uint32_t cq_size, uint32_t fifo_size,
		      uint32_t breakage)
{
	struct tv_sim_config sc;
	struct tv_port_config pc;

	tv_sim_config_default(&sc);
	sc.seed = 5;
	pfix_config(&pc, TV_PORT_SIGNAL_ATOMIC);
	if (cq_size) {
		pc.cq_size = cq_size;
		pc.recv_depth = 4;
	}
	if (fifo_size)
		pc.fifo_size = fifo_size;
	pc.test_breakage = breakage;
	pfix_init_cfg(w, &sc, &pc, true);
}

/* A connection with no room: the trigger stays at the FIFO's tail. */
START_TEST(test_proxy_no_room)
{
	struct pworld w;
	struct tv_port_proxy_stats st;

	world_cfg(&w, 8, 0, 0); /* 4 in flight, 8 deferred */
	for (uint32_t i = 0; i < 20; i++) {
		memset(w.n[0].data + 64 * i, (int)i + 1, 64);
		ck_assert_int_eq(tv_port_chan_put(w.n[0].chan, 64 * i, 64 * i,
						  64, NULL), 0);
	}
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 64), 12);
	ck_assert_uint_eq(tv_port_fifo_tail(tv_port_proxy_fifo(w.n[0].proxy)),
			  12);
	ck_assert_uint_eq(w.n[0].conn->defer_len, 8);
	pfix_run_all(&w);
	tv_port_proxy_stats(w.n[0].proxy, &st);
	ck_assert_uint_eq(st.triggers, 20);
	ck_assert_mem_eq(w.n[1].data, w.n[0].data, 64 * 20);
	pfix_fini(&w);
}
END_TEST

/* The flush ring full: the SYNC trigger waits at the tail. */
START_TEST(test_proxy_flush_ring_full)
{
	struct pworld w;
	struct tv_port_fifo *f;
	uint64_t pos;
	int ret;

	world_cfg(&w, 0, 8, 0);
	f = tv_port_proxy_fifo(w.n[0].proxy);
	ck_assert_int_eq(tv_port_chan_put(w.n[0].chan, 0, 0, 64, NULL), 0);
	for (int i = 0; i < 7; i++)
		ck_assert_int_eq(tv_port_chan_flush(w.n[0].chan, NULL), 0);
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 64), 8);
	ck_assert_uint_eq(w.n[0].conn->flush_len, 7);
	ck_assert_int_eq(tv_port_chan_flush(w.n[0].chan, NULL), 0);
	ck_assert_int_eq(tv_port_chan_flush(w.n[0].chan, &pos), 0);
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 64), 1);
	ck_assert_uint_eq(tv_port_fifo_tail(f), 9);
	ck_assert_uint_eq(w.n[0].conn->flush_len, 8);
	pfix_run_all(&w);
	ret = tv_port_chan_flush_done(w.n[0].chan, pos);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(tv_port_fifo_tail(f), 10);
	pfix_fini(&w);
}
END_TEST

/* MSCCL++ #802's design: a flush blocks the proxy until its connection
 * drains (or fails). */
START_TEST(test_proxy_blocking_flush_breakage)
{
	struct pworld w;
	struct tv_port_fifo *f;
	struct tv_port_proxy_stats st;

	world_cfg(&w, 0, 0, TV_PORT_BREAK_BLOCKING_FLUSH);
	f = tv_port_proxy_fifo(w.n[0].proxy);
	ck_assert_int_eq(tv_port_chan_put(w.n[0].chan, 0, 0, 64, NULL), 0);
	ck_assert_int_eq(tv_port_chan_flush(w.n[0].chan, NULL), 0);
	ck_assert_int_eq(tv_port_chan_put(w.n[0].chan, 64, 64, 64, NULL), 0);
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 64), 2);
	ck_assert_ptr_eq(w.n[0].proxy->blocked_on, w.n[0].conn);
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 64), 0);
	ck_assert_uint_eq(tv_port_fifo_tail(f), 2);
	pfix_run_all(&w);
	ck_assert_ptr_null(w.n[0].proxy->blocked_on);
	ck_assert_uint_eq(tv_port_fifo_tail(f), 3);
	/* Blocked on a connection that fails: unblocked, the rest dropped. */
	ck_assert_int_eq(tv_port_chan_put(w.n[0].chan, 0, 0, 64, NULL), 0);
	ck_assert_int_eq(tv_port_chan_flush(w.n[0].chan, NULL), 0);
	ck_assert_int_eq(tv_port_chan_signal(w.n[0].chan, NULL), 0);
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 64), 2);
	ck_assert_ptr_eq(w.n[0].proxy->blocked_on, w.n[0].conn);
	tv_port_conn_abort(w.n[0].conn, "gone");
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 64), 1);
	ck_assert_ptr_null(w.n[0].proxy->blocked_on);
	tv_port_proxy_stats(w.n[0].proxy, &st);
	ck_assert_uint_eq(st.dropped, 1);
	pfix_run_all(&w);
	pfix_fini(&w);
}
END_TEST

/* MSCCL++ before #415: completions polled only by a flush. */
START_TEST(test_proxy_no_flow_control_breakage)
{
	struct pworld w;
	struct chan_arg a;

	world_cfg(&w, 0, 0, TV_PORT_BREAK_NO_FLOW_CONTROL);
	ck_assert_int_eq(tv_port_chan_put(w.n[0].chan, 0, 0, 64, NULL), 0);
	pfix_run_all(&w);
	ck_assert_uint_eq(w.n[0].conn->posted, 1);
	ck_assert_uint_eq(w.n[0].conn->completed, 0); /* never polled */
	a = (struct chan_arg){ w.n[0].chan, 0, 0 };
	ck_assert_int_eq(tv_port_chan_flush(w.n[0].chan, &a.pos), 0);
	ck_assert(pfix_run_until(&w, chan_flushed, &a));
	ck_assert_int_eq(a.ret, 0);
	ck_assert_uint_eq(w.n[0].conn->completed, 1);
	pfix_fini(&w);
}
END_TEST

/* A put with its signal out of range: a bad trigger, no signal counted. */
START_TEST(test_proxy_put_signal_out_of_range)
{
	struct pworld w;
	struct tv_port_proxy_stats st;

	pfix_init(&w, TV_PORT_SIGNAL_WRITE_IMM, true);
	ck_assert_int_eq(tv_port_chan_put_with_signal(w.n[0].chan, FIX_DATA - 4,
						      0, 8, NULL), 0);
	pfix_run_all(&w);
	tv_port_proxy_stats(w.n[0].proxy, &st);
	ck_assert_uint_eq(st.bad_triggers, 1);
	ck_assert_uint_eq(tv_port_sem_outbound(w.n[0].sem), 0);
	ck_assert_msg(has(tv_port_proxy_error(w.n[0].proxy), "out of range"),
		      "%s", tv_port_proxy_error(w.n[0].proxy));
	pfix_fini(&w);
}
END_TEST

/* The fault points of the proxy: a stall, a late signal. */
static struct tv_flt *arm(const char *point, int64_t arg)
{
	struct tv_flt *flt;
	struct tv_flt_rule r;

	ck_assert_int_eq(tv_flt_create(3, &flt), 0);
	tv_flt_rule_default(&r);
	r.count = 1;
	r.arg = arg;
	ck_assert_int_eq(tv_flt_arm(flt, point, &r), 0);
	ck_assert_int_eq(tv_flt_activate(flt), 0);
	return flt;
}

static void disarm(struct tv_flt *flt)
{
	tv_flt_deactivate(flt);
	tv_flt_destroy(flt);
}

START_TEST(test_proxy_stall_point)
{
	struct pworld w;
	struct tv_flt *flt;
	uint64_t now, wake;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, true);
	flt = arm("port/proxy/stall", 30000);
	ck_assert_int_eq(tv_port_chan_put(w.n[0].chan, 0, 0, 64, NULL), 0);
	now = tv_sim_now_ns(w.sim);
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 8), 0);
	wake = tv_port_proxy_wake_ns(w.n[0].proxy);
	ck_assert_uint_eq(wake, now + 30000);
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 8), 0);
	ck_assert_int_eq(tv_vf_wake_at(w.n[0].dev, wake), 0);
	pfix_run_all(&w);
	ck_assert_uint_ge(tv_sim_now_ns(w.sim), wake);
	ck_assert(tv_port_proxy_idle(w.n[0].proxy));
	ck_assert_uint_eq(w.n[0].conn->completed, 1);
	disarm(flt);
	/* No arg: the default stall, 100 us. */
	flt = arm("port/proxy/stall", 0);
	now = tv_sim_now_ns(w.sim);
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 8), 0);
	ck_assert_uint_eq(tv_port_proxy_wake_ns(w.n[0].proxy), now + 100000);
	disarm(flt);
	pfix_fini(&w);
}
END_TEST

START_TEST(test_proxy_sem_delay_point)
{
	struct pworld w;
	struct tv_flt *flt;
	struct tv_port_conn_stats st;
	uint64_t now, wake;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, true);
	flt = arm("port/sem/delay", 20000);
	ck_assert_int_eq(tv_port_chan_signal(w.n[0].chan, NULL), 0);
	now = tv_sim_now_ns(w.sim);
	ck_assert_int_eq(tv_port_proxy_progress(w.n[0].proxy, 8), 1);
	tv_port_conn_stats(w.n[0].conn, &st);
	ck_assert_uint_eq(st.deferred, 1);
	wake = tv_port_proxy_wake_ns(w.n[0].proxy);
	ck_assert_uint_eq(wake, now + 20000);
	ck_assert_int_eq(tv_vf_wake_at(w.n[0].dev, wake), 0);
	pfix_run_all(&w);
	ck_assert_uint_eq(tv_port_sem_inbound(w.n[1].sem), 1);
	disarm(flt);
	pfix_fini(&w);
}
END_TEST

/* Events: an observer sees the pieces of a put, and a failure's cause. */
struct evlog {
	uint32_t n[TV_PORT_EV_BAD_TRIGGER + 1];
	int last_code;
	char last_msg[PORT_ERR_MAX];
};

static void observe(void *ctx, const struct tv_port_event *ev)
{
	struct evlog *l = ctx;

	ck_assert_int_le(ev->kind, TV_PORT_EV_BAD_TRIGGER);
	l->n[ev->kind]++;
	if (ev->kind == TV_PORT_EV_CONN_ERROR) {
		l->last_code = ev->code;
		snprintf(l->last_msg, sizeof(l->last_msg), "%.150s", ev->msg);
	}
}

START_TEST(test_observer_events)
{
	struct tv_sim_config sc;
	struct tv_port_config pc;
	struct pworld w;
	struct evlog log;
	struct chan_arg a;

	memset(&log, 0, sizeof(log));
	tv_sim_config_default(&sc);
	pfix_config(&pc, TV_PORT_SIGNAL_ATOMIC);
	pc.observe = observe;
	pc.observe_ctx = &log;
	pfix_init_cfg(&w, &sc, &pc, true);
	a = (struct chan_arg){ w.n[0].chan, 0, 0 };
	ck_assert_int_eq(tv_port_chan_put_with_signal_and_flush(w.n[0].chan, 0,
								0, 64, &a.pos),
			 0);
	ck_assert(pfix_run_until(&w, chan_flushed, &a));
	ck_assert_int_eq(a.ret, 0);
	ck_assert_uint_eq(log.n[TV_PORT_EV_PUSH], 1);
	ck_assert_uint_eq(log.n[TV_PORT_EV_SLOT_STORE], 1);
	ck_assert_uint_eq(log.n[TV_PORT_EV_HANDLE], 1);
	ck_assert_uint_eq(log.n[TV_PORT_EV_POST], 2); /* write, add */
	ck_assert_uint_eq(log.n[TV_PORT_EV_SIGNAL], 1);
	ck_assert_uint_eq(log.n[TV_PORT_EV_FLUSH_REQ], 1);
	ck_assert_uint_eq(log.n[TV_PORT_EV_FLUSH_DONE], 1);
	ck_assert_uint_eq(log.n[TV_PORT_EV_CONN_ERROR], 0);
	tv_port_conn_abort(w.n[1].conn, "crash");
	ck_assert_uint_eq(log.n[TV_PORT_EV_CONN_ERROR], 1);
	ck_assert_int_eq(log.last_code, -ECONNABORTED);
	ck_assert_str_eq(log.last_msg, "aborted: crash");
	pfix_run_all(&w);
	pfix_fini(&w);
}
END_TEST


/* ---- every allocation of every creation fails in turn ---------------------- */

START_TEST(test_allocations_fail)
{
	struct tv_sim *sim = sim_new(false, 0);
	struct tv_vf_device *dev = tv_sim_device(sim, 0);
	struct tv_port_config pc;
	struct tv_port_ctx *ctx = NULL, *actx = NULL;
	struct tv_port_mem *mem = NULL;
	struct tv_port_conn *conn = NULL, *aconn = NULL;
	struct tv_port_sem *sem = NULL;
	struct tv_port_proxy *proxy = NULL;
	struct tv_port_chan *chan = NULL;
	struct tv_port_fifo *fifo = NULL;
	struct tv_port_mem_handle h;
	uint32_t lid, rid, sid;
	static _Alignas(64) uint8_t buf[4096];

	pfix_config(&pc, TV_PORT_SIGNAL_WRITE_IMM);
	OOM_LOOP(tv_port_ctx_create(dev, &pc, &ctx));
	OOM_LOOP(tv_port_mem_register(ctx, buf, sizeof(buf), &mem));
	OOM_LOOP(tv_port_conn_create(ctx, 1, &conn));
	OOM_LOOP(tv_port_sem_create(conn, mem, 0, &sem));
	OOM_LOOP(tv_port_proxy_create(ctx, NULL, NULL, &proxy));
	tv_port_mem_handle(mem, &h);
	ck_assert_int_eq(tv_port_proxy_add_local(proxy, mem, &lid), 0);
	ck_assert_int_eq(tv_port_proxy_add_remote(proxy, &h, &rid), 0);
	ck_assert_int_eq(tv_port_proxy_add_sem(proxy, sem, &sid), 0);
	OOM_LOOP(tv_port_chan_create(proxy, sid, rid, lid, &chan));
	OOM_LOOP(tv_port_fifo_create(8, 0, NULL, NULL, &fifo));
	pfix_config(&pc, TV_PORT_SIGNAL_ATOMIC);
	OOM_LOOP(tv_port_ctx_create(tv_sim_device(sim, 1), &pc, &actx));
	OOM_LOOP(tv_port_conn_create(actx, 0, &aconn));
	tv_port_fifo_destroy(fifo);
	tv_port_chan_destroy(chan);
	ck_assert_int_eq(tv_port_proxy_destroy(proxy), 0);
	ck_assert_int_eq(tv_port_sem_destroy(sem), 0);
	ck_assert_int_eq(tv_port_conn_destroy(conn), 0);
	ck_assert_int_eq(tv_port_conn_destroy(aconn), 0);
	ck_assert_int_eq(tv_port_mem_deregister(mem), 0);
	ck_assert_int_eq(tv_port_ctx_destroy(ctx), 0);
	ck_assert_int_eq(tv_port_ctx_destroy(actx), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

/* ---- FIFO and packets: the arguments -------------------------------------- */

static void no_slot(void *ctx, struct tv_port_fifo *f, uint64_t tail)
{
	(void)ctx;
	tv_port_fifo_apply_tail(f, tail);
}

START_TEST(test_fifo_arguments)
{
	struct tv_port_fifo *f = NULL;
	struct tv_port_fifo_vis half = { NULL, no_slot };
	struct tv_port_fifo_vis none = { NULL, NULL };
	struct tv_port_trigger t = { 1, 2 };
	uint64_t pos = 99;

	ck_assert_int_eq(tv_port_fifo_create(8, 0, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(tv_port_fifo_create(1u << 21, 0, NULL, NULL, &f),
			 -EINVAL);
	ck_assert_ptr_null(f);
	tv_port_fifo_destroy(NULL);
	/* A visibility layer may delay only one side: the other is direct. */
	ck_assert_int_eq(tv_port_fifo_create(2, 0, &half, NULL, &f), 0);
	ck_assert_uint_eq(tv_port_fifo_size(f), 2);
	ck_assert_int_eq(tv_port_fifo_try_push(f, &t, &pos), 0);
	ck_assert_uint_eq(pos, 0);
	ck_assert(tv_port_fifo_poll(f, &t, &pos));
	tv_port_fifo_pop(f);
	ck_assert(tv_port_fifo_popped(f, 0));
	tv_port_fifo_destroy(f);
	ck_assert_int_eq(tv_port_fifo_create(2, 0, &none, NULL, &f), 0);
	ck_assert_int_eq(tv_port_fifo_try_push(f, &t, NULL), 0);
	ck_assert(tv_port_fifo_poll(f, &t, &pos));
	ck_assert_uint_eq(t.fst, 1);
	ck_assert_uint_eq(t.snd, 2);
	tv_port_fifo_pop(f);
	ck_assert(tv_port_fifo_popped(f, 0));
	tv_port_fifo_destroy(f);
}
END_TEST

START_TEST(test_packet_arguments)
{
	_Alignas(16) uint8_t pkt[32];
	uint8_t data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, out[8];

	ck_assert_int_eq(tv_port_ll8_pack(pkt, data, 6, 1), -EINVAL);
	ck_assert_int_eq(tv_port_ll8_pack(NULL, data, 8, 1), -EINVAL);
	ck_assert_int_eq(tv_port_ll8_pack(pkt, NULL, 8, 1), -EINVAL);
	ck_assert_int_eq(tv_port_ll8_pack(pkt + 4, data, 8, 1), -EINVAL);
	ck_assert_int_eq(tv_port_ll8_pack(pkt, NULL, 0, 1), 0);
	ck_assert_int_eq(tv_port_ll16_pack(pkt, data, 8, 3), 0);
	ck_assert_uint_eq(tv_port_ll16_unpack(pkt, out, 8, 0), 0);
	ck_assert_uint_eq(tv_port_ll16_unpack(pkt, NULL, 8, 3), 0);
	ck_assert_uint_eq(tv_port_ll16_unpack(pkt, out, 8, 3), 1);
	ck_assert_mem_eq(out, data, 8);
}
END_TEST

static Suite *edges_suite(void)
{
	Suite *s = suite_create("port_edges");
	TCase *tc = tcase_create("ctx");

	tcase_add_test(tc, test_ctx_config_refused);
	tcase_add_test(tc, test_ctx_defaults_and_connect_cfg);
	tcase_add_test(tc, test_ctx_no_atomics);
	tcase_add_test(tc, test_ctx_device_failures);
	tcase_add_test(tc, test_handle_decode_lies);
	tcase_add_test(tc, test_fifo_arguments);
	tcase_add_test(tc, test_packet_arguments);
	tcase_add_test(tc, test_allocations_fail);
	suite_add_tcase(s, tc);
	tc = tcase_create("conn");
	tcase_add_test(tc, test_conn_setup_failures_atomic);
	tcase_add_test(tc, test_conn_setup_failures_imm);
	tcase_add_test(tc, test_conn_connect_failures);
	tcase_add_test(tc, test_conn_connect_twice);
	tcase_add_test(tc, test_conn_write_arguments);
	tcase_add_test(tc, test_write_and_sync_imm);
	tcase_add_test(tc, test_post_send_refused);
	tcase_add_test(tc, test_deferred_refused);
	tcase_add_test(tc, test_write_and_sync_no_room);
	tcase_add_test(tc, test_poll_cq_fails);
	tcase_add_test(tc, test_post_recv_refused_later);
	tcase_add_test(tc, test_recv_flushed);
	tcase_add_test(tc, test_peer_sends_not_a_signal);
	tcase_add_test(tc, test_peer_signals_no_semaphore);
	tcase_add_test(tc, test_conn_flush_deadlines);
	tcase_add_test(tc, test_busy_and_full);
	suite_add_tcase(s, tc);
	tc = tcase_create("sem_proxy_chan");
	tcase_add_test(tc, test_sem_arguments);
	tcase_add_test(tc, test_sem_signal_refused);
	tcase_add_test(tc, test_sem_reset);
	tcase_add_test(tc, test_sem_wait_no_timeout_breakage);
	tcase_add_test(tc, test_sem_wait_blocking);
	tcase_add_test(tc, test_proxy_registrations);
	tcase_add_test(tc, test_proxy_bad_triggers);
	tcase_add_test(tc, test_proxy_failed_conn);
	tcase_add_test(tc, test_proxy_sem_without_remote);
	tcase_add_test(tc, test_chan_flush_wait_deadline);
	tcase_add_test(tc, test_proxy_wake_ns);
	tcase_add_test(tc, test_proxy_no_room);
	tcase_add_test(tc, test_proxy_flush_ring_full);
	tcase_add_test(tc, test_proxy_blocking_flush_breakage);
	tcase_add_test(tc, test_proxy_no_flow_control_breakage);
	tcase_add_test(tc, test_proxy_put_signal_out_of_range);
	tcase_add_test(tc, test_proxy_stall_point);
	tcase_add_test(tc, test_proxy_sem_delay_point);
	tcase_add_test(tc, test_observer_events);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(edges_suite());
}
