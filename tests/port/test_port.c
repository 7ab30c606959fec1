/*
 * The port-channel engine on the simulator: trigger bits, handles on the
 * wire, the FIFO (lap parity, full, visibility lag, the sentinel design
 * of MSCCL++ #864), connections (writes, both signal modes, flushes and
 * their errors, flow control below the CQ), semaphores, the proxy and
 * port channels (asynchronous flushes), LL8/LL16 packets.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/check_main.h"
#include "port_fix.h"

#define BIT63 (1ull << 63)

/* ---- triggers and handles ---------------------------------------------------- */

START_TEST(test_trigger_layout)
{
	struct tv_port_trigger t;
	struct tv_port_trigger_fields f;

	/* MSCCL++: fst = srcOffset << 32 | size; snd = ((((sem << 3 |
	 * type) << 9 | dstId) << 9 | srcId) << 32) | dstOffset. */
	ck_assert_int_eq(tv_port_trigger_pack(3, 17, 0x1234, 5, 0xabcd, 4096,
					      700, &t), 0);
	ck_assert_uint_eq(t.fst, (0xabcdull << 32) | 4096);
	ck_assert_uint_eq(t.snd, ((((700ull << 3 | 3) << 9 | 17) << 9 | 5)
				  << 32) | 0x1234);
	ck_assert_uint_eq(t.snd & BIT63, 0);
	tv_port_trigger_unpack(&t, &f);
	ck_assert_uint_eq(f.type, 3);
	ck_assert_uint_eq(f.dst_id, 17);
	ck_assert_uint_eq(f.src_id, 5);
	ck_assert_uint_eq(f.sem_id, 700);
	ck_assert_uint_eq(f.dst_off, 0x1234);
	ck_assert_uint_eq(f.src_off, 0xabcd);
	ck_assert_uint_eq(f.size_bytes, 4096);
	/* Every field at its widest, then one past. */
	ck_assert_int_eq(tv_port_trigger_pack(7, 511, 0xffffffff, 511,
					      0xffffffff, 0xffffffff, 1023,
					      &t), 0);
	ck_assert_uint_eq(t.snd & BIT63, 0);
	ck_assert_uint_eq(t.fst, UINT64_MAX);
	ck_assert_int_eq(tv_port_trigger_pack(8, 0, 0, 0, 0, 0, 0, &t),
			 -EINVAL);
	ck_assert_int_eq(tv_port_trigger_pack(1, 512, 0, 0, 0, 0, 0, &t),
			 -EINVAL);
	ck_assert_int_eq(tv_port_trigger_pack(1, 0, 0, 512, 0, 0, 0, &t),
			 -EINVAL);
	ck_assert_int_eq(tv_port_trigger_pack(1, 0, 0, 0, 0, 0, 1024, &t),
			 -EINVAL);
	ck_assert_int_eq(tv_port_trigger_pack(1, 0, 1ull << 32, 0, 0, 0, 0,
					      &t), -EINVAL);
	ck_assert_int_eq(tv_port_trigger_pack(1, 0, 0, 0, 1ull << 32, 0, 0,
					      &t), -EINVAL);
	ck_assert_int_eq(tv_port_trigger_pack(1, 0, 0, 0, 0, 1ull << 32, 0,
					      &t), -EINVAL);
}
END_TEST

START_TEST(test_handle_wire)
{
	struct tv_port_mem_handle h = { 0x7f0012345000ull, 65536, 0xabcd12,
					3 }, back;
	uint8_t buf[TV_PORT_HANDLE_BYTES + 4];

	ck_assert_int_eq(tv_port_mem_handle_encode(&h, buf, 8), -ENOSPC);
	ck_assert_int_eq(tv_port_mem_handle_encode(&h, buf, sizeof(buf)), 0);
	/* Little-endian fields at fixed offsets (docs/port.md). */
	ck_assert_uint_eq(buf[0], 'T');
	ck_assert_uint_eq(buf[3], 'M');
	ck_assert_uint_eq(buf[12], 0x12);
	ck_assert_uint_eq(buf[16], 0x00);
	ck_assert_uint_eq(buf[17], 0x50);
	ck_assert_int_eq(tv_port_mem_handle_decode(buf, TV_PORT_HANDLE_BYTES,
						   &back), 0);
	ck_assert_mem_eq(&back, &h, sizeof(h));
	/* Hostile bytes: short, foreign, another version, reserved bits,
	 * an empty window, a window that wraps. */
	ck_assert_int_eq(tv_port_mem_handle_decode(buf, 31, &back), -EPROTO);
	ck_assert_int_eq(tv_port_mem_handle_decode(NULL, 32, &back), -EPROTO);
	for (int i = 0; i < 8; i++) {
		uint8_t bad[TV_PORT_HANDLE_BYTES];

		memcpy(bad, buf, sizeof(bad));
		switch (i) {
		case 0: bad[0] ^= 1; break;
		case 1: bad[4] = 2; break;
		case 2: bad[6] = 1; break;
		case 3: memset(bad + 24, 0, 8); break;
		case 4: memset(bad + 16, 0xff, 8); break;
		default: continue;
		}
		ck_assert_int_eq(tv_port_mem_handle_decode(bad, sizeof(bad),
							   &back), -EPROTO);
	}
}
END_TEST

/* ---- the FIFO ------------------------------------------------------------------ */

static struct tv_port_trigger trig(uint64_t fst, uint64_t snd)
{
	return (struct tv_port_trigger){ fst, snd };
}

START_TEST(test_fifo_laps)
{
	struct tv_port_fifo *f;
	struct tv_port_trigger t;
	uint64_t pos;

	ck_assert_int_eq(tv_port_fifo_create(3, 0, NULL, NULL, &f), -EINVAL);
	ck_assert_int_eq(tv_port_fifo_create(0, 0, NULL, NULL, &f), -EINVAL);
	ck_assert_int_eq(tv_port_fifo_create(4, 0, NULL, NULL, &f), 0);
	ck_assert(!tv_port_fifo_poll(f, &t, &pos));
	/* Bit 63 is the FIFO's. */
	ck_assert_int_eq(tv_port_fifo_try_push(f, &(struct tv_port_trigger){
						       1, BIT63 }, &pos),
			 -EINVAL);
	/* 1000 laps of a 4-slot ring, the all-zero trigger included. */
	for (uint64_t i = 0; i < 4000; i += 4) {
		for (uint64_t k = 0; k < 4; k++) {
			t = trig(i + k == 8 ? 0 : i + k, k == 2 ? 0 : 7);
			ck_assert_int_eq(tv_port_fifo_try_push(f, &t, &pos), 0);
			ck_assert_uint_eq(pos, i + k);
		}
		ck_assert_int_eq(tv_port_fifo_try_push(f, &t, &pos), -EAGAIN);
		for (uint64_t k = 0; k < 4; k++) {
			ck_assert(tv_port_fifo_poll(f, &t, &pos));
			ck_assert_uint_eq(pos, i + k);
			ck_assert_uint_eq(t.fst, i + k == 8 ? 0 : i + k);
			ck_assert_uint_eq(t.snd, k == 2 ? 0 : 7);
			ck_assert(!tv_port_fifo_popped(f, pos));
			tv_port_fifo_pop(f);
			ck_assert(tv_port_fifo_popped(f, pos));
		}
		ck_assert(!tv_port_fifo_poll(f, &t, &pos));
	}
	ck_assert_uint_eq(tv_port_fifo_head(f), 4000);
	ck_assert_uint_eq(tv_port_fifo_tail(f), 4000);
	tv_port_fifo_destroy(f);
}
END_TEST

/* MSCCL++ #864: with "fst == 0 means empty", a zero-byte put at offset 0
 * is never seen, and everything behind it waits forever. */
START_TEST(test_fifo_zero_trigger_sentinel)
{
	struct tv_port_fifo *good, *broken;
	struct tv_port_trigger t, zero = trig(0, 1ull << 50), after = trig(5, 9);
	uint64_t pos;

	ck_assert_int_eq(tv_port_fifo_create(8, 0, NULL, NULL, &good), 0);
	ck_assert_int_eq(tv_port_fifo_create(8, TV_PORT_BREAK_SENTINEL, NULL,
					     NULL, &broken), 0);
	for (int i = 0; i < 2; i++) {
		struct tv_port_fifo *f = i ? broken : good;

		ck_assert_int_eq(tv_port_fifo_try_push(f, &after, &pos), 0);
		ck_assert_int_eq(tv_port_fifo_try_push(f, &zero, &pos), 0);
		ck_assert_int_eq(tv_port_fifo_try_push(f, &after, &pos), 0);
		ck_assert(tv_port_fifo_poll(f, &t, &pos));
		tv_port_fifo_pop(f);
	}
	ck_assert(tv_port_fifo_poll(good, &t, &pos));
	ck_assert_uint_eq(t.fst, 0);
	ck_assert_uint_eq(pos, 1);
	/* The broken ring calls it empty, with two triggers in it. */
	ck_assert(!tv_port_fifo_poll(broken, &t, &pos));
	ck_assert_uint_eq(tv_port_fifo_head(broken) - tv_port_fifo_tail(broken),
			  2);
	tv_port_fifo_destroy(good);
	tv_port_fifo_destroy(broken);
}
END_TEST

/* A visibility layer that holds stores until the test lets them go. */
struct held {
	uint64_t pos[16];
	struct tv_port_trigger t[16];
	int nslots;
	uint64_t tail;
	bool tail_held;
};

static void held_slot(void *ctx, struct tv_port_fifo *f, uint64_t pos,
		      const struct tv_port_trigger *t)
{
	struct held *h = ctx;

	(void)f;
	h->pos[h->nslots] = pos;
	h->t[h->nslots++] = *t;
}

static void held_tail(void *ctx, struct tv_port_fifo *f, uint64_t tail)
{
	struct held *h = ctx;

	(void)f;
	h->tail = tail;
	h->tail_held = true;
}

static const struct tv_port_fifo_vis held_vis = { held_slot, held_tail };

START_TEST(test_fifo_visibility_lag)
{
	struct held h = { .nslots = 0 };
	struct tv_port_fifo *f;
	struct tv_port_trigger t;
	uint64_t pos;

	ck_assert_int_eq(tv_port_fifo_create(2, 0, &held_vis, &h, &f), 0);
	ck_assert_int_eq(tv_port_fifo_try_push(f, &(struct tv_port_trigger){
						       1, 1 }, &pos), 0);
	ck_assert_int_eq(tv_port_fifo_try_push(f, &(struct tv_port_trigger){
						       2, 2 }, &pos), 0);
	/* Positions are taken, stores not seen yet. */
	ck_assert(!tv_port_fifo_poll(f, &t, &pos));
	/* The second store lands first: the consumer still waits for the
	 * first (in order, one slot at a time). */
	tv_port_fifo_apply_slot(f, h.pos[1], &h.t[1]);
	ck_assert(!tv_port_fifo_poll(f, &t, &pos));
	tv_port_fifo_apply_slot(f, h.pos[0], &h.t[0]);
	ck_assert(tv_port_fifo_poll(f, &t, &pos));
	ck_assert_uint_eq(t.fst, 1);
	tv_port_fifo_pop(f);
	/* Producers do not see the pop yet: still full for them. */
	ck_assert(h.tail_held);
	ck_assert_int_eq(tv_port_fifo_try_push(f, &t, &pos), -EAGAIN);
	ck_assert(!tv_port_fifo_popped(f, 0));
	tv_port_fifo_apply_tail(f, h.tail);
	ck_assert(tv_port_fifo_popped(f, 0));
	ck_assert_int_eq(tv_port_fifo_try_push(f, &t, &pos), 0);
	ck_assert_uint_eq(pos, 2);
	tv_port_fifo_destroy(f);
}
END_TEST

/* ---- connections and semaphores ---------------------------------------------------- */

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

START_TEST(test_conn_write_flush)
{
	struct pworld w;
	struct tv_port_mem_handle peer;
	struct tv_port_conn_stats st;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, false);
	tv_port_mem_handle(w.n[1].mdata, &peer);
	for (int i = 0; i < 4096; i++)
		w.n[0].data[i] = (uint8_t)(i * 13 + 1);
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 1000,
					    w.n[0].mdata, 0, 4096), 0);
	/* Zero bytes are a legal write too. */
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0,
					    w.n[0].mdata, 0, 0), 0);
	/* Ranges are checked before anything is posted. */
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, FIX_DATA - 8,
					    w.n[0].mdata, 0, 16), -EINVAL);
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0,
					    w.n[0].mdata, FIX_DATA, 1),
			 -EINVAL);
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer,
					    UINT64_MAX - 2, w.n[0].mdata, 0,
					    8), -EINVAL);
	ck_assert_int_eq(flush_direct(&w, 0), 0);
	ck_assert_mem_eq(w.n[1].data + 1000, w.n[0].data, 4096);
	tv_port_conn_stats(w.n[0].conn, &st);
	ck_assert_uint_eq(st.posted, 2);
	ck_assert_uint_eq(st.completed, 2);
	ck_assert_uint_eq(st.writes, 2);
	ck_assert_str_eq(tv_port_conn_error(w.n[0].conn), "");
	pfix_fini(&w);
}
END_TEST

static void signal_and_wait(enum tv_port_signal_mode mode)
{
	struct pworld w;
	struct tv_port_conn_stats st;

	pfix_init(&w, mode, false);
	ck_assert_int_eq(tv_port_ctx_signal_mode(w.n[0].ctx), mode);
	ck_assert(!tv_port_sem_poll(w.n[1].sem));
	for (int i = 1; i <= 3; i++)
		ck_assert_int_eq(tv_port_sem_signal(w.n[0].sem), 0);
	ck_assert_uint_eq(tv_port_sem_outbound(w.n[0].sem), 3);
	ck_assert_int_eq(flush_direct(&w, 0), 0);
	pfix_run_all(&w);
	ck_assert_uint_eq(tv_port_sem_inbound(w.n[1].sem), 3);
	for (int i = 1; i <= 3; i++) {
		ck_assert(tv_port_sem_poll(w.n[1].sem));
		ck_assert_uint_eq(tv_port_sem_expected(w.n[1].sem), i);
	}
	ck_assert(!tv_port_sem_poll(w.n[1].sem));
	/* No signal left: a distinct error at the deadline, never a hang. */
	ck_assert_int_eq(tv_port_sem_wait_poll(w.n[1].sem, UINT64_MAX),
			 -EAGAIN);
	ck_assert_int_eq(tv_port_sem_wait_poll(w.n[1].sem,
					       tv_sim_now_ns(w.sim)),
			 -ETIMEDOUT);
	ck_assert_uint_eq(tv_port_sem_expected(w.n[1].sem), 3);
	tv_port_conn_stats(w.n[0].conn, &st);
	if (mode == TV_PORT_SIGNAL_ATOMIC) {
		ck_assert_uint_eq(st.atomics, 3);
	} else {
		ck_assert_uint_eq(st.imm_signals, 3);
		tv_port_conn_stats(w.n[1].conn, &st);
		ck_assert_uint_eq(st.imm_received, 3);
	}
	pfix_fini(&w);
}

/*
 * A process that dies takes its connections with their work in flight:
 * abort fails the connection with the cause, and destroy then goes
 * through (otherwise it refuses, -EBUSY, to catch a leak).
 */
START_TEST(test_conn_abort)
{
	struct pworld w;
	struct tv_port_mem_handle peer;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, false);
	tv_port_mem_handle(w.n[1].mdata, &peer);
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0,
					    w.n[0].mdata, 0, 4096), 0);
	ck_assert_int_eq(tv_port_sem_destroy(w.n[0].sem), 0);
	w.n[0].sem = NULL;
	ck_assert_int_eq(tv_port_conn_destroy(w.n[0].conn), -EBUSY);
	ck_assert(!tv_port_conn_failed(w.n[0].conn));
	tv_port_conn_abort(w.n[0].conn, "its node crashed");
	ck_assert(tv_port_conn_failed(w.n[0].conn));
	ck_assert_str_eq(tv_port_conn_error(w.n[0].conn),
			 "aborted: its node crashed");
	/* The first cause stays the one reported. */
	tv_port_conn_abort(w.n[0].conn, "again");
	ck_assert_str_eq(tv_port_conn_error(w.n[0].conn),
			 "aborted: its node crashed");
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0,
					    w.n[0].mdata, 0, 8), -EIO);
	ck_assert_int_eq(tv_port_conn_destroy(w.n[0].conn), 0);
	w.n[0].conn = NULL;
	/* What was in flight lands or not; nothing else is left to run. */
	pfix_run_all(&w);
	pfix_fini(&w);
}
END_TEST

START_TEST(test_signal_atomic)
{
	signal_and_wait(TV_PORT_SIGNAL_ATOMIC);
}
END_TEST

START_TEST(test_signal_write_imm)
{
	signal_and_wait(TV_PORT_SIGNAL_WRITE_IMM);
}
END_TEST

/* The receiver rebuilds 64 bits from 32: across the 2^32 boundary. */
START_TEST(test_write_imm_wraps_32_bits)
{
	struct pworld w;
	struct tv_port_mem_handle h;
	uint64_t off, v = 0;

	pfix_init(&w, TV_PORT_SIGNAL_WRITE_IMM, false);
	tv_port_sem_handle(w.n[1].sem, &h, &off);
	ck_assert_int_eq(tv_port_conn_update_and_sync(w.n[0].conn, &h, off, &v,
						      0xfffffff0ull), 0);
	ck_assert_int_eq(tv_port_conn_update_and_sync(w.n[0].conn, &h, off, &v,
						      0x100000005ull), 0);
	ck_assert_uint_eq(v, 0x100000005ull);
	/* A step of 2^32 or backwards cannot be carried in 32 bits. */
	ck_assert_int_eq(tv_port_conn_update_and_sync(w.n[0].conn, &h, off, &v,
						      0x200000005ull), -ERANGE);
	ck_assert_int_eq(tv_port_conn_update_and_sync(w.n[0].conn, &h, off, &v,
						      4), -ERANGE);
	ck_assert_uint_eq(v, 0x100000005ull);
	ck_assert_int_eq(flush_direct(&w, 0), 0);
	pfix_run_all(&w);
	ck_assert_uint_eq(tv_port_sem_inbound(w.n[1].sem), 0x100000005ull);
	pfix_fini(&w);
}
END_TEST

START_TEST(test_update_and_sync_checks)
{
	struct pworld w;
	struct tv_port_mem_handle h;
	uint64_t off, v = 0;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, false);
	tv_port_sem_handle(w.n[1].sem, &h, &off);
	ck_assert_int_eq(tv_port_conn_update_and_sync(w.n[0].conn, &h, 4, &v,
						      1), -EINVAL);
	ck_assert_int_eq(tv_port_conn_update_and_sync(w.n[0].conn, &h,
						      FIX_TOKEN - 4, &v, 1),
			 -EINVAL);
	ck_assert_uint_eq(v, 0);
	/* Semaphores: 8-byte aligned token words, inside the memory. */
	{
		struct tv_port_sem *s;

		ck_assert_int_eq(tv_port_sem_create(w.n[0].conn, w.n[0].mtoken,
						    4, &s), -EINVAL);
		ck_assert_int_eq(tv_port_sem_create(w.n[0].conn, w.n[0].mtoken,
						    FIX_TOKEN, &s), -EINVAL);
		ck_assert_int_eq(tv_port_sem_set_remote(w.n[0].sem, &h, 3),
				 -EINVAL);
	}
	pfix_fini(&w);
}
END_TEST

START_TEST(test_write_imm_one_sem_per_conn)
{
	struct pworld w;
	struct tv_port_sem *s;

	pfix_init(&w, TV_PORT_SIGNAL_WRITE_IMM, false);
	ck_assert_int_eq(tv_port_sem_create(w.n[0].conn, w.n[0].mtoken, 8, &s),
			 -EBUSY);
	pfix_fini(&w);
}
END_TEST

/* MSCCL++ #315/#323: the status by name, never strerror of a status. */
START_TEST(test_flush_names_the_status)
{
	struct pworld w;
	struct tv_port_mem_handle peer;
	const char *err;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, false);
	tv_port_mem_handle(w.n[1].mdata, &peer);
	peer.rkey ^= 0x100; /* another generation of the key */
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0,
					    w.n[0].mdata, 0, 64), 0);
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 64,
					    w.n[0].mdata, 0, 64), 0);
	ck_assert_int_eq(flush_direct(&w, 0), -EIO);
	err = tv_port_conn_error(w.n[0].conn);
	ck_assert_msg(strstr(err, "an IB work item failed: remote access "
			     "error (status 10"), "%s", err);
	ck_assert_ptr_null(strstr(err, "Cannot allocate memory"));
	ck_assert(tv_port_conn_failed(w.n[0].conn));
	/* Failed: nothing more is posted, waits report it. */
	ck_assert_int_eq(tv_port_conn_write(w.n[0].conn, &peer, 0,
					    w.n[0].mdata, 0, 8), -EIO);
	ck_assert_int_eq(tv_port_sem_wait_poll(w.n[0].sem, UINT64_MAX), -EIO);
	pfix_run_all(&w);
	pfix_fini(&w);
}
END_TEST

/* MSCCL++ #415/#808: in-flight work stays below the CQ, posts wait. */
static void burst(bool broken, uint64_t *max_in_flight_p, bool *failed_p)
{
	struct tv_sim_config sc;
	struct tv_port_config pc;
	struct pworld w;
	struct tv_port_mem_handle peer;
	struct tv_port_conn_stats st;

	tv_sim_config_default(&sc);
	pfix_config(&pc, TV_PORT_SIGNAL_ATOMIC);
	pc.cq_size = 32;
	pc.test_breakage = broken ? TV_PORT_BREAK_NO_FLOW_CONTROL : 0;
	pfix_init_cfg(&w, &sc, &pc, false);
	tv_port_mem_handle(w.n[1].mdata, &peer);
	for (int i = 0; i < 200; i++) {
		int ret;

		/* The deferred ring is full: completions make room. */
		while ((ret = tv_port_conn_write(w.n[0].conn, &peer, 64 * i,
						 w.n[0].mdata, 64 * i, 64)) ==
		       -EAGAIN)
			ck_assert(pfix_step(&w));
		ck_assert_msg(ret == 0 || (broken && ret == -EIO), "%d", ret);
	}
	/* The completions pile up while nobody polls (a busy proxy). */
	ck_assert_int_eq(tv_sim_run(w.sim, 0, 0), 0);
	flush_direct(&w, 0);
	pfix_run_all(&w);
	tv_port_conn_stats(w.n[0].conn, &st);
	*max_in_flight_p = st.max_in_flight;
	*failed_p = tv_port_conn_failed(w.n[0].conn);
	if (!broken) {
		ck_assert_uint_gt(st.deferred, 100);
		ck_assert_uint_eq(st.completed, 200);
		ck_assert_mem_eq(w.n[1].data, w.n[0].data, 200 * 64);
	}
	pfix_fini(&w);
}

START_TEST(test_flow_control)
{
	uint64_t max;
	bool failed;

	burst(false, &max, &failed);
	ck_assert_uint_le(max, 28);
	ck_assert(!failed);
	/* The broken design overruns the CQ and the connection fails. */
	burst(true, &max, &failed);
	ck_assert_uint_gt(max, 32);
	ck_assert(failed);
}
END_TEST

/* ---- the proxy and port channels --------------------------------------------------- */

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

static bool chan_signalled(void *arg)
{
	return tv_port_chan_poll(((struct chan_arg *)arg)->chan);
}

static void put_signal_wait(enum tv_port_signal_mode mode)
{
	struct pworld w;
	struct chan_arg a0, a1;
	struct tv_port_proxy_stats st;

	pfix_init(&w, mode, true);
	for (int i = 0; i < 8192; i++)
		w.n[0].data[i] = (uint8_t)(i * 7 + 3);
	a0 = (struct chan_arg){ w.n[0].chan, 0, 0 };
	a1 = (struct chan_arg){ w.n[1].chan, 0, 0 };
	ck_assert_int_eq(tv_port_chan_put(w.n[0].chan, 100, 0, 4096, NULL),
			 0);
	ck_assert_int_eq(tv_port_chan_put_with_signal(w.n[0].chan, 8192, 4096,
						      4096, NULL), 0);
	ck_assert(pfix_run_until(&w, chan_signalled, &a1));
	/* The signal came after both writes: their data is in place. */
	ck_assert_mem_eq(w.n[1].data + 100, w.n[0].data, 4096);
	ck_assert_mem_eq(w.n[1].data + 8192, w.n[0].data + 4096, 4096);
	ck_assert_int_eq(tv_port_chan_flush(w.n[0].chan, &a0.pos), 0);
	ck_assert(pfix_run_until(&w, chan_flushed, &a0));
	ck_assert_int_eq(a0.ret, 0);
	ck_assert_int_eq(tv_port_chan_put_with_signal_and_flush(
				 w.n[0].chan, 0, 0, 8, &a0.pos), 0);
	ck_assert(pfix_run_until(&w, chan_flushed, &a0));
	ck_assert_int_eq(a0.ret, 0);
	ck_assert(pfix_run_until(&w, chan_signalled, &a1));
	tv_port_proxy_stats(w.n[0].proxy, &st);
	ck_assert_uint_eq(st.triggers, 4);
	ck_assert_uint_eq(st.data, 3);
	ck_assert_uint_eq(st.flags, 2);
	ck_assert_uint_eq(st.syncs, 2);
	ck_assert(tv_port_proxy_idle(w.n[0].proxy));
	pfix_fini(&w);
}

START_TEST(test_chan_atomic)
{
	put_signal_wait(TV_PORT_SIGNAL_ATOMIC);
}
END_TEST

START_TEST(test_chan_write_imm)
{
	put_signal_wait(TV_PORT_SIGNAL_WRITE_IMM);
}
END_TEST

/* A trigger naming what the proxy does not have: dropped, said, and the
 * channel's flush fails instead of hanging. */
START_TEST(test_bad_trigger)
{
	struct pworld w;
	struct tv_port_trigger t;
	struct chan_arg a;
	uint64_t pos;

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, true);
	a = (struct chan_arg){ w.n[0].chan, 0, 0 };
	/* Out of the destination's range. */
	ck_assert_int_eq(tv_port_chan_put(w.n[0].chan, FIX_DATA - 4, 0, 8,
					  NULL), 0);
	/* Memory id 9 does not exist. */
	ck_assert_int_eq(tv_port_trigger_pack(TV_PORT_TRIGGER_DATA, 9, 0, 0,
					      0, 8, 0, &t), 0);
	ck_assert_int_eq(tv_port_fifo_try_push(
				 tv_port_proxy_fifo(w.n[0].proxy), &t, &pos),
			 0);
	ck_assert_int_eq(tv_port_chan_flush(w.n[0].chan, &a.pos), 0);
	ck_assert(pfix_run_until(&w, chan_flushed, &a));
	ck_assert_int_eq(a.ret, 0); /* nothing was posted: done, */
	ck_assert_msg(strstr(tv_port_proxy_error(w.n[0].proxy),
			     "FIFO position 0"), "%s",
		      tv_port_proxy_error(w.n[0].proxy));
	pfix_run_all(&w);
	pfix_fini(&w);
}
END_TEST

/* ---- LL packets ---------------------------------------------------------------------- */

START_TEST(test_ll16_packets)
{
	_Alignas(16) uint8_t pkt[16 * 4];
	uint8_t data[32], out[32];

	for (int i = 0; i < 32; i++)
		data[i] = (uint8_t)(i + 1);
	ck_assert_int_eq(tv_port_ll16_pack(pkt, data, 32, 0), -EINVAL);
	ck_assert_int_eq(tv_port_ll16_pack(pkt, data, 12, 1), -EINVAL);
	ck_assert_int_eq(tv_port_ll16_pack(pkt, data, 32, 5), 0);
	/* {data1, flag1, data2, flag2}, 32-bit little-endian. */
	ck_assert_uint_eq(pkt[0], 1);
	ck_assert_uint_eq(pkt[4], 5);
	ck_assert_uint_eq(pkt[8], 5);
	ck_assert_uint_eq(pkt[12], 5);
	ck_assert_uint_eq(tv_port_ll16_unpack(pkt, out, 32, 5), 4);
	ck_assert_mem_eq(out, data, 32);
	ck_assert_uint_eq(tv_port_ll16_unpack(pkt, out, 32, 6), 0);
	/* Half a packet landed (its second word is older): not ready,
	 * and the reader stops there. */
	memset(pkt + 16 + 8, 0, 8);
	ck_assert_uint_eq(tv_port_ll16_unpack(pkt, out, 32, 5), 1);
}
END_TEST

START_TEST(test_ll8_packets)
{
	_Alignas(8) uint8_t pkt[8 * 4];
	uint8_t data[16], out[16];

	for (int i = 0; i < 16; i++)
		data[i] = (uint8_t)(0xa0 + i);
	ck_assert_int_eq(tv_port_ll8_pack(pkt, data, 16, 9), 0);
	ck_assert_uint_eq(pkt[4], 9);
	ck_assert_uint_eq(tv_port_ll8_unpack(pkt, out, 16, 9), 4);
	ck_assert_mem_eq(out, data, 16);
	memset(pkt + 16, 0, 8);
	ck_assert_uint_eq(tv_port_ll8_unpack(pkt, out, 16, 9), 2);
	ck_assert_uint_eq(tv_port_ll8_unpack(pkt + 1, out, 16, 9), 0);
}
END_TEST

static Suite *port_suite(void)
{
	Suite *s = suite_create("port");
	TCase *tc = tcase_create("pieces");

	tcase_add_test(tc, test_trigger_layout);
	tcase_add_test(tc, test_handle_wire);
	tcase_add_test(tc, test_fifo_laps);
	tcase_add_test(tc, test_fifo_zero_trigger_sentinel);
	tcase_add_test(tc, test_fifo_visibility_lag);
	tcase_add_test(tc, test_ll16_packets);
	tcase_add_test(tc, test_ll8_packets);
	suite_add_tcase(s, tc);
	tc = tcase_create("verbs");
	tcase_add_test(tc, test_conn_write_flush);
	tcase_add_test(tc, test_conn_abort);
	tcase_add_test(tc, test_signal_atomic);
	tcase_add_test(tc, test_signal_write_imm);
	tcase_add_test(tc, test_write_imm_wraps_32_bits);
	tcase_add_test(tc, test_update_and_sync_checks);
	tcase_add_test(tc, test_write_imm_one_sem_per_conn);
	tcase_add_test(tc, test_flush_names_the_status);
	tcase_add_test(tc, test_flow_control);
	tcase_add_test(tc, test_chan_atomic);
	tcase_add_test(tc, test_chan_write_imm);
	tcase_add_test(tc, test_bad_trigger);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(port_suite());
}
