/*
 * The port and gather workloads' invariants catch what they guard.
 *
 * A checker that never fires proves nothing: each test here runs a real
 * scenario on the simulator and, through an invariant of the test's own
 * (tv_tb_run_opts.invariants), makes the world lie the way a broken
 * engine would: an event the engine never sent (a FIFO position out of
 * order, a flush done early, a READ outside the partition), bytes changed
 * after they landed, or the books at the end (a task left running, a
 * signal never waited for).  Each must end in the failure kind and the
 * message the workload documents (docs/port.md, docs/gather.md), and the
 * same run without the lie must pass, so the failure is the lie's.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/testbed.h>

#include "common/check_main.h"
#include "run_int.h"
#include "workloads/gather/gw.h"
#include "workloads/port/pt.h"

#define PORT_SC                                                              \
	"{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": " \
	"\"ping_pong\", \"nodes\": [0, 1], \"bytes\": 4096, \"iters\": 8, "   \
	"\"flush_every\": 2}]}"
#define GATHER_SC                                                            \
	"{\"workload\": \"gather\", \"nodes\": 3, \"gather\": {\"rows\": "   \
	"3000, \"row_bytes\": 256, \"qps_per_peer\": 2, \"post_list\": 16}, " \
	"\"batches\": [{\"node\": 0, \"dist\": \"uniform\", \"count\": 500}]}"

/* What the test's invariant does to the world, and when. */
struct lie {
	void (*on_event)(struct lie *l, struct tv_tb_run *run, void *st,
			 const struct tv_sim_event *ev);
	void (*at_end)(struct lie *l, struct tv_tb_run *run, void *st);
	bool done;
	int arg;
};

static void lie_event(void *ctx, struct tv_tb_run *run,
		      const struct tv_sim_event *ev)
{
	struct lie *l = ctx;

	if (l->on_event && !l->done)
		l->on_event(l, run, run->wl, ev);
}

static void lie_end(void *ctx, struct tv_tb_run *run)
{
	struct lie *l = ctx;

	if (l->at_end)
		l->at_end(l, run, run->wl);
}

/* Runs text with the lie (or none); the run, for its failures. */
static struct tv_tb_run *run_with(const char *text, struct lie *l,
				  struct tv_tb_scenario **sc_p)
{
	struct tv_tb_invariant inv = { "lie", l, lie_event, lie_end };
	struct tv_tb_scenario *sc;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char err[TV_TB_ERR_MAX];

	ck_assert_msg(tv_tb_scenario_load_string(text, "lie", &sc, err) == 0,
		      "%s", err);
	tv_tb_run_opts_init(&o, sc);
	if (l) {
		o.invariants = &inv;
		o.ninvariants = 1;
	}
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	*sc_p = sc;
	return run;
}

static void run_free(struct tv_tb_run *run, struct tv_tb_scenario *sc)
{
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}

/* The run failed with kind, one of its kept messages holding text. */
static void expect_failure(const struct tv_tb_run *run,
			   enum tv_tb_fail_kind kind, const char *text)
{
	const struct tv_tb_failures *f = tv_tb_run_failures(run);
	size_t kept = f->count < TV_TB_FAILURES_KEPT ? f->count :
						       TV_TB_FAILURES_KEPT;

	for (size_t i = 0; i < kept; i++)
		if (f->msg_kinds[i] == kind && f->msgs[i] &&
		    strstr(f->msgs[i], text))
			return;
	ck_abort_msg("no failure of kind %d with \"%s\" among %zu (first: "
		     "%s)", (int)kind, text, f->count,
		     f->count ? f->msgs[0] : "none");
}

/* The lie ran (so the failure is its) and was caught. */
static void lie_caught(const char *text, struct lie *l,
		       enum tv_tb_fail_kind kind, const char *msg)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;

	l->done = false;
	run = run_with(text, l, &sc);
	ck_assert_msg(l->done, "the lie never found its moment");
	expect_failure(run, kind, msg);
	run_free(run, sc);
}

START_TEST(test_honest_runs_pass)
{
	const char *texts[] = { PORT_SC, GATHER_SC };

	for (size_t i = 0; i < 2; i++) {
		struct lie none = { 0 };
		struct tv_tb_scenario *sc;
		struct tv_tb_run *run = run_with(texts[i], &none, &sc);

		ck_assert_msg(tv_tb_run_failures(run)->count == 0, "%s: %s",
			      texts[i], tv_tb_run_failures(run)->msgs[0]);
		ck_assert_uint_gt(tv_tb_run_result(run)->ops_ok, 0);
		run_free(run, sc);
	}
}
END_TEST

/* ---- port: the engines' events ----------------------------------------- */

static struct pt_runner *pt_ready(void *st)
{
	struct pt_runner *r = st;

	return r && r->win_ready ? r : NULL;
}

static void port_event(struct pt_runner *r, enum tv_port_event_kind kind,
		       uint32_t node, uint64_t pos, const char *msg)
{
	struct tv_port_event ev = { .kind = kind, .node = node, .pos = pos,
				    .peer = UINT32_MAX, .msg = msg };

	if (kind == TV_PORT_EV_HANDLE && pos < r->nodes[node].npushed)
		ev.trig = r->nodes[node].pushed[pos];
	pt_observe(r, &ev);
}

static void lie_fifo(struct lie *l, struct tv_tb_run *run, void *st,
		     const struct tv_sim_event *ev)
{
	struct pt_runner *r = pt_ready(st);
	struct pt_node *n;

	(void)run;
	(void)ev;
	if (!r || !r->nodes[0].npushed)
		return;
	n = &r->nodes[0];
	switch (l->arg) {
	case 0: /* a position the FIFO never gave */
		port_event(r, TV_PORT_EV_PUSH, 0, n->npushed + 7, NULL);
		break;
	case 1: /* a slot written over before the proxy took it */
		port_event(r, TV_PORT_EV_SLOT_STORE, 0,
			   n->handled + r->sc->fifo_size, NULL);
		break;
	case 2: /* the proxy takes a position out of order */
		port_event(r, TV_PORT_EV_HANDLE, 0, n->handled + 1000, NULL);
		break;
	case 3: /* the proxy takes another trigger than the one pushed */
		if (n->handled >= n->npushed)
			return;
		{
			struct tv_port_event h = {
				.kind = TV_PORT_EV_HANDLE, .node = 0,
				.pos = n->handled,
				.trig = n->pushed[n->handled] };

			h.trig.fst ^= 1;
			pt_observe(r, &h);
		}
		break;
	case 4:
		port_event(r, TV_PORT_EV_BAD_TRIGGER, 0, 0, "a test's trigger");
		break;
	case 5:
		port_event(r, TV_PORT_EV_BAD_TRIGGER, 1, 0, NULL);
		break;
	}
	l->done = true;
}

START_TEST(test_port_fifo_lies)
{
	static const struct {
		enum tv_tb_fail_kind kind;
		const char *msg;
	} want[] = {
		{ TV_TB_FK_RUNNER, "node 0's FIFO gave position" },
		{ TV_TB_FK_DATA, "FIFO slot of position" },
		{ TV_TB_FK_DATA, "node 0's proxy took FIFO position" },
		{ TV_TB_FK_DATA, "that is not the one pushed there" },
		{ TV_TB_FK_RUNNER, "refused a trigger of ours: a test's trigger" },
		{ TV_TB_FK_RUNNER, "node 1's proxy refused a trigger of ours: ?" },
	};

	for (int i = 0; i < (int)(sizeof(want) / sizeof(want[0])); i++) {
		struct lie l = { .on_event = lie_fifo, .arg = i };

		lie_caught(PORT_SC, &l, want[i].kind, want[i].msg);
	}
}
END_TEST

/* A flush reported done with more posted before it than completed. */
static void lie_flush(struct lie *l, struct tv_tb_run *run, void *st,
		      const struct tv_sim_event *ev)
{
	struct pt_runner *r = pt_ready(st);
	struct pt_link *k;
	struct tv_port_event f = { .kind = TV_PORT_EV_FLUSH_DONE, .pos = 3 };

	(void)run;
	(void)ev;
	if (!r)
		return;
	k = &r->links[0];
	f.node = k->node[0];
	f.qp_num = k->qpn[0];
	f.value = k->cqes[0] + 5;
	pt_observe(r, &f);
	l->done = true;
}

START_TEST(test_port_flush_early)
{
	struct lie l = { .on_event = lie_flush };

	lie_caught(PORT_SC, &l, TV_TB_FK_DATA, "flush at FIFO position 3 was "
		   "done after");
}
END_TEST

/* ---- port: the simulator's events --------------------------------------- */

static void lie_sim(struct lie *l, struct tv_tb_run *run, void *st,
		    const struct tv_sim_event *ev)
{
	struct pt_runner *r = pt_ready(st);
	struct pt_link *k;

	(void)ev;
	if (!r)
		return;
	k = &r->links[0];
	if (l->arg == 0) { /* a write outside what the target registered */
		struct tv_sim_event w = {
			.kind = TV_SIM_EV_DELIVER, .node = 1, .peer = 0,
			.opcode = TV_WR_RDMA_WRITE, .status = TV_WC_SUCCESS,
			.remote_addr = 8, .length = 4, .rkey = 0x77 };

		pt_sim_event(run, r, &w);
	} else { /* more posted than the CQ holds */
		struct tv_sim_event p = {
			.kind = TV_SIM_EV_POST_SEND, .node = k->node[0],
			.qp_num = k->qpn[0], .peer = k->node[1] };

		for (uint32_t i = 0; i <= r->sc->cq_size; i++)
			pt_sim_event(run, r, &p);
	}
	l->done = true;
}

START_TEST(test_port_sim_lies)
{
	struct lie w = { .on_event = lie_sim, .arg = 0 };
	struct lie p = { .on_event = lie_sim, .arg = 1 };

	lie_caught(PORT_SC, &w, TV_TB_FK_WRITE, "node 0 wrote 4 bytes at 0x8 "
		   "(rkey 0x77) on node 1, outside what node 1 registered");
	lie_caught(PORT_SC, &p, TV_TB_FK_IN_FLIGHT, "work requests in flight "
		   "to node 1, more than its CQ's");
}
END_TEST

/*
 * Bytes a put landed changed before the wait that covers them returns
 * (an engine that signals before its data is in place, as seen by the
 * receiver): at the signal's arrival the first put's bytes flip.
 */
static void lie_data(struct lie *l, struct tv_tb_run *run, void *st,
		     const struct tv_sim_event *ev)
{
	struct pt_runner *r = pt_ready(st);
	struct pt_dir *d;

	(void)run;
	(void)ev;
	if (!r)
		return;
	d = &r->links[0].dir[0];
	if (d->delivered < 1 || d->waits_ok || !d->nputs)
		return;
	r->nodes[d->to].data[d->puts[0].dst_off] ^= 0xff;
	l->done = true;
}

/* A wait that returns before its signal came. */
static void lie_wait(struct lie *l, struct tv_tb_run *run, void *st,
		     const struct tv_sim_event *ev)
{
	struct pt_runner *r = pt_ready(st);

	(void)run;
	(void)ev;
	if (!r)
		return;
	pt_check_wait(r, &r->links[0], 0, &r->tasks[1]);
	l->done = true;
}

START_TEST(test_port_wait_lies)
{
	struct lie d = { .on_event = lie_data };
	struct lie w = { .on_event = lie_wait };

	lie_caught(PORT_SC, &d, TV_TB_FK_DATA, "that node 0 put before its "
		   "signal are not what it sent");
	lie_caught(PORT_SC, &w, TV_TB_FK_DATA, "node 1's wait #1 (program 0) "
		   "returned at");
}
END_TEST

/* Packets read as complete: right bytes pass, wrong ones are caught. */
static void lie_packets(struct lie *l, struct tv_tb_run *run, void *st)
{
	struct pt_runner *r = st;
	struct pt_op op = { .kind = PT_OP_POLL, .b = 64, .len = 48,
			    .src_node = 1, .iter = 3 };
	const struct pt_task_run *tr = &r->tasks[0];
	uint8_t *got = r->nodes[tr->t->node].data + op.b;
	size_t before = tv_tb_run_failures(run)->count;

	pt_pattern(r->seed, tr->t->prog, op.src_node, op.iter, 0, got, op.len);
	pt_check_packets(r, tr, &op);
	ck_assert_uint_eq(tv_tb_run_failures(run)->count, before);
	got[40] ^= 0x10;
	got[7] ^= 0x01;
	pt_check_packets(r, tr, &op);
	ck_assert_uint_eq(tv_tb_run_failures(run)->count, before + 1);
	l->done = true;
}

START_TEST(test_port_torn_packets)
{
	struct lie l = { .at_end = lie_packets };

	lie_caught(PORT_SC, &l, TV_TB_FK_DATA, "node 0 read node 1's packets "
		   "#4 (program 0) at");
	lie_caught(PORT_SC, &l, TV_TB_FK_DATA, "2 of 48 bytes were not the "
		   "ones sent (first at 7)");
}
END_TEST

/* ---- port: the books at the end ------------------------------------------ */

static void lie_books(struct lie *l, struct tv_tb_run *run, void *st)
{
	struct pt_runner *r = st;
	const struct pt_program *p = &r->sc->progs[0];

	switch (l->arg) {
	case 0: /* a task failed with no fault to excuse it */
		r->tasks[0].state = PT_TASK_FAILED;
		break;
	case 1: /* a task that never ended */
		r->tasks[1].state = PT_TASK_RUNNING;
		r->tasks[1].pc = 2;
		break;
	case 2: /* a trigger left in the FIFO */
		r->nodes[1].npushed++;
		break;
	case 3: /* a signal nobody waited for */
		r->links[0].dir[0].waits_ok--;
		break;
	case 4: { /* a final byte that is not the reference's */
		uint8_t *want = calloc(1, p->region_bytes[1] + 1);
		uint64_t off = 0, len = 0;

		ck_assert_ptr_nonnull(want);
		ck_assert_int_eq(pt_final_region(r->sc, r->seed, 0, 1, want,
						 &off, &len), 0);
		ck_assert_uint_gt(len, 0);
		r->nodes[1].data[p->region_off[1] + off] = want[off] ^ 0x80;
		free(want);
		break;
	}
	}
	pt_check(run, r);
	l->done = true;
}

START_TEST(test_port_books)
{
	static const struct {
		enum tv_tb_fail_kind kind;
		const char *msg;
	} want[] = {
		{ TV_TB_FK_OUTCOME, "failed (and no fault that could cause it "
				    "fired)" },
		{ TV_TB_FK_HANG, "node 1, program 0 (ping_pong) never "
				 "finished: stuck at operation 2 of" },
		{ TV_TB_FK_HANG, "node 1's proxy left 1 of" },
		{ TV_TB_FK_DATA, "signals to node 1, which waited" },
		{ TV_TB_FK_DATA, "invariant: program 0 (ping_pong) ended with "
				 "node 1's byte" },
	};

	for (int i = 0; i < (int)(sizeof(want) / sizeof(want[0])); i++) {
		struct lie l = { .at_end = lie_books, .arg = i };

		lie_caught(PORT_SC, &l, want[i].kind, want[i].msg);
	}
}
END_TEST

/* ---- gather ------------------------------------------------------------------ */

static struct gw_runner *gw_ready(void *st)
{
	struct gw_runner *r = st;

	return r && r->ready ? r : NULL;
}

static void lie_gather_events(struct lie *l, struct tv_tb_run *run, void *st,
			      const struct tv_sim_event *ev)
{
	struct gw_runner *r = gw_ready(st);
	struct tv_gather_event g = { .node = 0, .peer = 1, .qp = 0 };

	(void)run;
	(void)ev;
	if (!r)
		return;
	switch (l->arg) {
	case 0: /* more READs outstanding than the server accepts */
		g.kind = TV_GATHER_EV_QP_UP;
		g.n = 1000;
		break;
	case 1: /* post_send refused a list: the send queue over-posted */
		g.kind = TV_GATHER_EV_POST;
		g.status = -ENOMEM;
		break;
	case 2: /* a second END of the batch running */
		if (!r->nodes[0].running)
			return;
		g.kind = TV_GATHER_EV_END;
		break;
	}
	gw_observe(&r->nodes[0], &g);
	l->done = true;
}

START_TEST(test_gather_engine_lies)
{
	static const struct {
		enum tv_tb_fail_kind kind;
		const char *msg;
	} want[] = {
		{ TV_TB_FK_IN_FLIGHT, "node 0's QP 0 to node 1 may keep 1000 "
				      "READs outstanding; the server accepts" },
		{ TV_TB_FK_IN_FLIGHT, "node 0: post_send refused a post list "
				      "on QP 0 to node 1" },
		{ TV_TB_FK_OUTCOME, "batch 0 on node 0 ended 2 times" },
	};

	for (int i = 0; i < (int)(sizeof(want) / sizeof(want[0])); i++) {
		struct lie l = { .on_event = lie_gather_events, .arg = i };

		lie_caught(GATHER_SC, &l, want[i].kind, want[i].msg);
	}
}
END_TEST

/* A READ served outside the server's partition; a READ refused. */
static void lie_gather_sim(struct lie *l, struct tv_tb_run *run, void *st,
			   const struct tv_sim_event *ev)
{
	struct gw_runner *r = gw_ready(st);
	struct tv_sim_event e = { .peer = 0, .status = TV_WC_SUCCESS };
	struct tv_gather_part_handle h;
	struct tv_vf_qp_endpoint ep;

	(void)ev;
	if (!r)
		return;
	if (l->arg == 1) {
		e.kind = TV_SIM_EV_CQE;
		e.node = 0;
		e.status = TV_WC_REM_INV_REQ_ERR;
		gw_sim_event(run, r, &e);
		l->done = true;
		return;
	}
	ck_assert_int_eq(tv_gather_qp_endpoint(r->nodes[1].ctx, 0, 0,
					       TV_GATHER_SERVER, &ep), 0);
	tv_gather_part_handle(r->nodes[1].ctx, &h);
	e.kind = TV_SIM_EV_DELIVER;
	e.node = 1;
	e.qp_num = ep.qp_num;
	e.opcode = TV_WR_RDMA_READ;
	e.rkey = h.rkey;
	e.length = 256;
	e.remote_addr = h.addr + tv_gather_part_bytes(&r->sc->cfg, 1);
	gw_sim_event(run, r, &e);
	l->done = true;
}

START_TEST(test_gather_sim_lies)
{
	struct lie out = { .on_event = lie_gather_sim, .arg = 0 };
	struct lie refused = { .on_event = lie_gather_sim, .arg = 1 };

	lie_caught(GATHER_SC, &out, TV_TB_FK_WRITE, "node 0 read 256 bytes at");
	lie_caught(GATHER_SC, &out, TV_TB_FK_WRITE, "of node 1, outside its "
		   "partition");
	lie_caught(GATHER_SC, &refused, TV_TB_FK_IN_FLIGHT, "node 0's READ was "
		   "refused by its server (REM_INV_REQ_ERR)");
}
END_TEST

/*
 * A batch's result that does not add up, fed to the batch check at the
 * end (the client still holds the batch's ids and rows).
 */
static void lie_gather_result(struct lie *l, struct tv_tb_run *run, void *st)
{
	struct gw_runner *r = st;
	struct gw_node *n = &r->nodes[0];
	uint32_t count = r->sc->batches[0].count;
	uint32_t rb = r->sc->cfg.row_bytes;
	struct tv_gather_row_error er = { .index = 0, .id = n->ids[0],
					  .status = 5 };
	struct tv_gather_result res = { .rows = count };

	(void)run;
	switch (l->arg) {
	case 0:
		gw_check_batch(r, 0, NULL, -ENOENT);
		break;
	case 1:
		res.rows = count - 1;
		gw_check_batch(r, 0, &res, 0);
		break;
	case 2: /* a failed row that is not a row of the batch */
		er.index = count + 5;
		res.failed_rows = 1;
		res.errors = &er;
		gw_check_batch(r, 0, &res, -EIO);
		break;
	case 3: /* a row failed, and no fault could fail it */
		res.failed_rows = 1;
		res.errors = &er;
		gw_check_batch(r, 0, &res, -EIO);
		break;
	case 4: /* a row delivered as good that is not the owner's */
		n->out[1 * (size_t)rb + 3] ^= 0x40;
		gw_check_batch(r, 0, &res, 0);
		break;
	case 5: /* a row delivered as all zero */
		memset(n->out + 2 * (size_t)rb, 0, rb);
		gw_check_batch(r, 0, &res, 0);
		break;
	case 6: /* the books: a batch that began and never ended */
		r->runs[0].ended = false;
		gw_check(run, r);
		break;
	}
	l->done = true;
}

START_TEST(test_gather_results)
{
	static const struct {
		enum tv_tb_fail_kind kind;
		const char *msg;
	} want[] = {
		{ TV_TB_FK_OUTCOME, "batch 0 on node 0 ended without a result "
				    "(-2)" },
		{ TV_TB_FK_OUTCOME, "batch 0: result 0 with 0 failed rows of "
				    "499 (batch of 500)" },
		{ TV_TB_FK_OUTCOME, "failed row 0 names index 505" },
		{ TV_TB_FK_OUTCOME, "batch 0 on node 0: 1 rows failed without "
				    "a fault" },
		{ TV_TB_FK_DATA, "row 1 (id" },
		{ TV_TB_FK_DATA, "was delivered as good but is all zero, and "
				 "the owner's is not" },
		{ TV_TB_FK_HANG, "batch 0 on node 0 never ended (started)" },
	};

	for (int i = 0; i < (int)(sizeof(want) / sizeof(want[0])); i++) {
		struct lie l = { .at_end = lie_gather_result, .arg = i };

		lie_caught(GATHER_SC, &l, want[i].kind, want[i].msg);
	}
}
END_TEST

/* ---- rendezvous ----------------------------------------------------------- */

/*
 * The tensor write's bytes change in the receiver's memory once they
 * landed (the simulator's memory is the process's: remote_addr is where
 * they are), before the receiver reads them; no corruption point fired
 * and validation is off, so the receiver's check is what must see it.
 */
static void lie_tensor_bytes(struct lie *l, struct tv_tb_run *run, void *st,
			     const struct tv_sim_event *ev)
{
	(void)run;
	(void)st;
	if (ev->kind != TV_SIM_EV_DELIVER || ev->status != TV_WC_SUCCESS ||
	    ev->opcode != TV_WR_RDMA_WRITE_WITH_IMM || ev->length != 1024)
		return;
	((uint8_t *)(uintptr_t)ev->remote_addr)[17] ^= 0x04;
	l->done = true;
}

START_TEST(test_rendezvous_bytes_changed)
{
	struct lie l = { .on_event = lie_tensor_bytes };
	char *text = NULL;
	FILE *f = fopen(TV_SCENARIOS_DIR "/basic_transfer.json", "r");
	size_t cap = 0;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_gt(getdelim(&text, &cap, '\0', f), 0);
	fclose(f);
	lie_caught(text, &l, TV_TB_FK_DATA, "data corrupted (digest 0x");
	free(text);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("wl_invariants");
	TCase *tc = tcase_create("lies");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_honest_runs_pass);
	tcase_add_test(tc, test_port_fifo_lies);
	tcase_add_test(tc, test_port_flush_early);
	tcase_add_test(tc, test_port_sim_lies);
	tcase_add_test(tc, test_port_wait_lies);
	tcase_add_test(tc, test_port_torn_packets);
	tcase_add_test(tc, test_port_books);
	tcase_add_test(tc, test_gather_engine_lies);
	tcase_add_test(tc, test_gather_sim_lies);
	tcase_add_test(tc, test_gather_results);
	tcase_add_test(tc, test_rendezvous_bytes_changed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(suite());
}
