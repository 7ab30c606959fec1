/*
 * The port-channel and gather workloads on the simulator: the arms the
 * other suites leave.  Scenario keys at their limits, a producer stall
 * without an arg, a recycle whose peer crashed after it arrived, a FIFO
 * tail published after its node crashed, trace lines of engine events the
 * engines never send (an unknown kind, a post of no known operation) and
 * how `show` draws them, the invariants fed events that are not theirs to
 * check (a READ of no server QP, a send, a write from no peer), the
 * gather checker fed results that lie, swarm seeds whose deadlines depend
 * on the fault mix, shrink edits of programs and batches without a kind
 * or a count.  Every test asserts what the arm does: the refusal's text,
 * the failure's kind and message, the books, the output.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "common/poke.h"
#include "common/tb_files.h"
#include "run_int.h"
#include "tb_int.h"
#include "workloads/gather/gw.h"
#include "workloads/port/pt.h"

/* ---- helpers ------------------------------------------------------------- */

static size_t count_of(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *t = s; (t = strstr(t, what)) != NULL; t++)
		n++;
	return n;
}

/* The line of text holding what (a new string), or NULL. */
static char *line_with(const char *text, const char *what)
{
	const char *p = strstr(text, what), *b, *e;
	char *out;

	if (!p)
		return NULL;
	for (b = p; b > text && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	if (!e)
		e = p + strlen(p);
	out = strndup(b, (size_t)(e - b));
	ck_assert_ptr_nonnull(out);
	return out;
}

#define PT_HEAD "{\"workload\": \"port\", \"nodes\": 2, "
#define PT3_HEAD "{\"workload\": \"port\", \"nodes\": 3, "
#define GW_HEAD "{\"workload\": \"gather\", \"nodes\": 2, "
#define GW3_HEAD "{\"workload\": \"gather\", \"nodes\": 3, "

/* ---- port: scenarios at their limits ------------------------------------- */

/* 65 programs: one more than a scenario takes, refused before any is read. */
START_TEST(test_port_too_many_programs)
{
	char text[4096], *p = text;
	struct bad_sc bad = { text, "$.programs: needs 1 to 64 programs" };

	p += sprintf(p, PT_HEAD "\"programs\": [");
	for (int i = 0; i < 65; i++)
		p += sprintf(p, "%s{\"kind\": \"ping_pong\"}", i ? ", " : "");
	strcpy(p, "]}");
	check_bad(&bad, 1, "port");
}
END_TEST

/*
 * A program of no kind the compiler knows (PT_NKINDS; a value outside the
 * enum): pt_compile lays out no region and refuses it, and its final
 * region is unknown (-EINVAL).  A node outside a program has no bytes of
 * it to compare.
 */
START_TEST(test_port_compile_unknown_kind)
{
	struct pt_program prog = { .kind = PT_NKINDS, .nnodes = 2,
				   .nodes = { 0, 1 }, .bytes = 64 };
	struct pt_scenario sc = { .nodes = 3, .progs = &prog, .nprogs = 1 };
	char err[TV_TB_ERR_MAX] = "";
	struct tv_ju jc = { err, sizeof(err) };
	uint8_t out[3 * 64], want[64];
	uint64_t off = 99, len = 99;

	ck_assert_int_eq(pt_compile(&jc, &sc, 0, "$.programs[0]", NULL),
			 -EINVAL);
	/* Its tasks were made, with nothing in them and no region. */
	ck_assert_uint_eq(sc.ntasks, 2);
	ck_assert_uint_eq(sc.nops, 0);
	ck_assert_uint_eq(sc.node_bytes[0], 0);
	ck_assert_uint_eq(prog.region_bytes[1], 0);
	ck_assert_uint_eq(sc.npairs, 0);
	ck_assert_str_eq(err, "");
	pt_scenario_free(NULL); /* nothing to free: no crash */

	ck_assert_int_eq(pt_final_region(&sc, 1, 0, 0, out, &off, &len),
			 -EINVAL);
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(len, 0);
	prog.kind = (enum pt_kind)77;
	off = len = 99;
	ck_assert_int_eq(pt_final_region(&sc, 1, 0, 1, out, &off, &len),
			 -EINVAL);
	ck_assert_uint_eq(off, 0);

	/* An allgather of nodes 0 and 1 asked about node 2: every chunk is
	 * the pattern, and none of node 2's bytes are compared. */
	prog.kind = PT_ALLGATHER;
	prog.region_bytes[2] = 0;
	ck_assert_int_eq(pt_final_region(&sc, 5, 0, 2, out, &off, &len), 0);
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(len, 0);
	for (uint32_t k = 0; k < 2; k++) {
		pt_pattern(5, 0, k, 0, k * 64, want, 64);
		ck_assert_mem_eq(out + k * 64, want, 64);
	}
	for (size_t i = 0; i < sc.ntasks; i++)
		free(sc.tasks[i].ops);
	free(sc.tasks);
	free(sc.pairs);

	/* A value outside the enum (no scenario makes one): no region, and
	 * the compiler's switch emits nothing for it. */
	memset(&sc, 0, sizeof(sc));
	memset(&prog, 0, sizeof(prog));
	prog = (struct pt_program){ .kind = (enum pt_kind)77, .nnodes = 2,
				    .nodes = { 0, 1 }, .bytes = 64 };
	sc = (struct pt_scenario){ .nodes = 2, .progs = &prog, .nprogs = 1 };
	ck_assert_int_eq(pt_compile(&jc, &sc, 0, "$.programs[0]", NULL), 0);
	ck_assert_uint_eq(sc.ntasks, 2);
	ck_assert_uint_eq(sc.nops, 0);
	ck_assert_uint_eq(prog.region_bytes[0], 0);
	ck_assert_uint_eq(sc.npairs, 0);
	free(sc.tasks);
}
END_TEST

/* pt_link_of: another program's pair, or no pair of those nodes: none. */
START_TEST(test_port_link_of_none)
{
	struct pt_pair pairs[2] = { { 0, 0, 1 }, { 1, 1, 2 } };
	struct pt_scenario sc = { .nodes = 3, .pairs = pairs, .npairs = 2 };
	struct pt_link links[2] = { { .node = { 0, 1 } },
				    { .node = { 1, 2 } } };
	struct pt_runner r = { .sc = &sc, .links = links };
	int e = -1;

	ck_assert_ptr_eq(pt_link_of(&r, 0, 1, 0, &e), &links[0]);
	ck_assert_int_eq(e, 1);
	ck_assert_ptr_eq(pt_link_of(&r, 1, 1, 2, &e), &links[1]);
	ck_assert_int_eq(e, 0);
	e = -1;
	/* Nodes 1 and 2 are paired by program 1, not program 0. */
	ck_assert_ptr_null(pt_link_of(&r, 0, 1, 2, &e));
	ck_assert_ptr_null(pt_link_of(&r, 1, 0, 1, &e));
	ck_assert_ptr_null(pt_link_of(&r, 2, 0, 1, &e));
	ck_assert_int_eq(e, -1);
}
END_TEST

/*
 * A node that is not up is never kicked (nothing scheduled: the run is
 * not even looked at), and a node that is up without a proxy has no
 * proxy turn (the proxy is not touched).
 */
START_TEST(test_port_idle_node)
{
	struct pt_runner r = { .run = NULL };
	struct pt_node nodes[1] = { { .r = &r, .id = 0 } };

	r.nodes = nodes;
	nodes[0].up = false;
	pt_proxy_kick(&nodes[0]);
	ck_assert(!nodes[0].proxy_due);
	nodes[0].up = true;
	nodes[0].proxy = NULL;
	pt_progress(NULL, &r, 0);
	ck_assert(!nodes[0].proxy_due);
	ck_assert(nodes[0].up);
}
END_TEST

/* ---- port: a producer stall without an arg ------------------------------- */

/*
 * port/producer/stall on node 0's first operation: without an arg the
 * producer waits the default 100 us before it, with one that long.  The
 * sequence's fill, then its flush, each op_gap_ns (100) apart.
 */
static uint64_t stalled_flush_start(const char *arg)
{
	char text[512];
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	const struct pt_runner *r;
	uint64_t t;

	snprintf(text, sizeof(text), PT_HEAD "\"faults\": [{\"point\":"
		 " \"port/producer/stall\", \"nth\": 1,"
		 " \"count\": 1%s}], \"programs\": [{\"kind\": \"sequence\","
		 " \"from\": 0, \"to\": 1, \"bytes\": 64, \"ops\":"
		 " [{\"op\": \"flush\"}]}]}", arg);
	run = run_scenario_text(text, 1, NULL, &sc);
	r = run->wl;
	ck_assert_msg(tv_tb_run_result(run)->failures == 0, "%s",
		      first_failure(run));
	ck_assert_uint_eq(tv_tb_run_result(run)->fault_fires, 1);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 2);
	/* Node 0's task: the fill (stalled), the flush. */
	ck_assert_uint_eq(r->sc->tasks[0].node, 0);
	ck_assert_int_eq(r->tasks[0].state, PT_TASK_DONE);
	t = r->tasks[0].op_start_ns;
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
	return t;
}

START_TEST(test_port_stall_default_arg)
{
	uint64_t dflt = stalled_flush_start("");
	uint64_t given = stalled_flush_start(", \"arg\": 5000");

	/* The fill at the stall's end, the flush op_gap_ns later. */
	ck_assert_uint_eq(dflt, 100000 + 100);
	ck_assert_uint_eq(given, 5000 + 100);
}
END_TEST

/* ---- port: packets of no bytes ------------------------------------------- */

START_TEST(test_port_packets_no_bytes)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(
		PT_HEAD "\"programs\": [{\"kind\": \"packet_ping_pong\","
		" \"bytes\": 0, \"iters\": 1}]}", 1, NULL, &sc);
	const struct tv_tb_result *res = tv_tb_run_result(run);
	const struct pt_runner *r = run->wl;

	ck_assert_msg(res->failures == 0, "%s", first_failure(run));
	/* Each way: fill, pack, put, poll; the empty packets read as
	 * complete at once, and their (no) bytes checked. */
	ck_assert_uint_eq(res->ops_ok, 8);
	ck_assert_uint_eq(res->ops_failed, 0);
	ck_assert_uint_eq(res->bytes, 0);
	ck_assert_uint_eq(r->polls, 2);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- port: a recycle whose peer crashed after it came -------------------- */

/*
 * Program 0 runs node 0 -> node 1 over a slow link (50 us): node 1 gets
 * the signal, comes to recycle and waits there while node 0's flush waits
 * for the signal's completion.  Program 1 starts on node 1 at 70 us; its
 * first operation is the sixth of the run (node 0's fill, signal, flush;
 * node 1's wait, recycle), where node/crash fires: node 1's semaphore of
 * program 0 goes with it.  When node 0 comes to recycle its
 * peer has come, but it cannot be reset: node 0 waits, finds node 1's
 * task over, and fails naming it (allowed: its program's node crashed).
 */
#define RECYCLE_CRASH                                                          \
	PT3_HEAD "\"links\": [{\"from\": 0, \"to\": 1, \"latency_ns\": 50000}],"\
	" \"port\": {\"poll_max_ns\": 1000},"                                  \
	" \"faults\": [{\"point\": \"node/crash\", \"nth\": 6,"                \
	" \"count\": 1, \"arg\": 100000000}],"                                 \
	" \"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1,"     \
	" \"bytes\": 64, \"ops\": [{\"op\": \"signal\"}, {\"op\": \"recycle\"}]},"\
	" {\"kind\": \"sequence\", \"from\": 1, \"to\": 2, \"bytes\": 64,"     \
	" \"start_ns\": 70000, \"ops\": [{\"op\": \"flush\"}]}]}"

START_TEST(test_port_recycle_peer_crashed)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(RECYCLE_CRASH, 1, NULL, &sc);
	const struct pt_runner *r = run->wl;
	const struct tv_tb_result *res = tv_tb_run_result(run);
	const struct pt_task_run *t0 = NULL, *t1 = NULL;

	ck_assert_msg(res->failures == 0, "%s", first_failure(run));
	ck_assert_uint_eq(res->crashes, 1);
	for (size_t i = 0; i < r->sc->ntasks; i++) {
		if (r->sc->tasks[i].prog == 0 && r->sc->tasks[i].node == 0)
			t0 = &r->tasks[i];
		if (r->sc->tasks[i].prog == 0 && r->sc->tasks[i].node == 1)
			t1 = &r->tasks[i];
	}
	ck_assert_ptr_nonnull(t0);
	ck_assert_ptr_nonnull(t1);
	ck_assert_int_eq(t1->state, PT_TASK_CANCELLED);
	ck_assert_str_eq(t1->msg, "node 1 crashed");
	ck_assert_int_eq(t0->state, PT_TASK_FAILED);
	ck_assert_int_eq(t0->err, -ECANCELED);
	ck_assert_str_eq(t0->msg, "node 0, program 0 (sequence), operation 3 "
			 "(recycle): node 1's task ended before it met this "
			 "one to recycle their semaphores");
	/* Both came; no reset was made. */
	ck_assert_uint_eq(r->links[0].recycle_arrived[0], 1);
	ck_assert_uint_eq(r->links[0].recycle_arrived[1], 1);
	ck_assert_uint_eq(r->links[0].recycles, 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- port: a FIFO tail published after its node crashed ------------------ */

/*
 * The FIFO's writes show 50 us late (lag_ns): node 0's put and flush
 * reach its proxy at ~50 us, the proxy publishes the tail that frees
 * their slots 50 us after that.  The flush is done at ~55 us and node 0's
 * next operation crashes it (node/crash, its 4th hit): the publication
 * lands on a node without a proxy (the restart is 1 s later) or, with
 * the restart 1 us later, on a node whose new FIFO it is not about:
 * either way it is dropped, and the new FIFO starts empty.
 */
static void tail_after_crash(const char *restart_ns)
{
	char text[1024];
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	const struct pt_runner *r;
	const struct tv_tb_result *res;

	snprintf(text, sizeof(text), PT_HEAD "\"port\": {\"lag_ns\":"
		 " {\"min\": 50000, \"max\": 50000}, \"poll_max_ns\": 1000},"
		 " \"faults\": [{\"point\": \"node/crash\","
		 " \"nth\": 4, \"count\": 1, \"arg\": %s}],"
		 " \"programs\": [{\"kind\": \"sequence\", \"from\": 0,"
		 " \"to\": 1, \"bytes\": 64, \"ops\": [{\"op\": \"put\","
		 " \"bytes\": 8}, {\"op\": \"flush\"}, {\"op\": \"put\","
		 " \"bytes\": 8}]}]}", restart_ns);
	run = run_scenario_text(text, 1, NULL, &sc);
	r = run->wl;
	res = tv_tb_run_result(run);
	ck_assert_msg(res->failures == 0, "%s", first_failure(run));
	ck_assert_uint_eq(res->crashes, 1);
	ck_assert_uint_eq(res->restarts, 1);
	/* Fill, put, flush done; the second put never ran. */
	ck_assert_uint_eq(r->tasks[0].ops_ok, 3);
	ck_assert_int_eq(r->tasks[0].state, PT_TASK_CANCELLED);
	ck_assert(r->nodes[0].crashed);
	/* The put's and the flush's triggers went through the lag. */
	ck_assert_uint_eq(r->deferred_stores, 2);
	/* The dead FIFO's publication did not reach the new one. */
	ck_assert(!r->nodes[0].tail_due);
	ck_assert_uint_eq(r->nodes[0].npushed, 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}

START_TEST(test_port_tail_after_crash)
{
	tail_after_crash("1000000000");
	tail_after_crash("1000");
}
END_TEST

/* ---- port: events that are not the invariants' to check ------------------ */

/*
 * Three nodes, one program between nodes 0 and 1.  At the first event
 * after the windows open, the test feeds the checker what no engine of
 * this run makes: executions of sends and READs and one from a node that
 * is none, a delivery to a node that is none, completions out of the
 * link's range, a flush done on a QP of no link, a post before the
 * windows are open; all are ignored.  A write from node 2, which node 0
 * registered nothing for, is the one failure.
 */
static bool poke_sim_events(struct poke *k, struct tv_tb_run *run, void *st)
{
	struct pt_runner *r = st;
	struct pt_link *l = &r->links[0];
	struct tv_sim_event ev = {
		.kind = TV_SIM_EV_DELIVER, .node = 0, .peer = 1,
		.status = TV_WC_SUCCESS, .remote_addr = 0x10, .length = 8,
		.rkey = 0x5, .qp_num = l->qpn[0],
	};
	struct tv_port_event pe = { .kind = TV_PORT_EV_FLUSH_DONE, .node = 0,
				    .qp_num = 0xabcdef, .pos = 3, .value = 99 };
	uint64_t posts = l->posts[0], cqes = l->cqes[0];
	uint64_t delivered = l->dir[1].delivered;

	if (!r->win_ready || !l->posts[0])
		return false;
	ev.opcode = TV_WR_SEND;
	pt_sim_event(run, r, &ev);
	ev.opcode = TV_WR_SEND_WITH_IMM;
	pt_sim_event(run, r, &ev);
	ev.opcode = TV_WR_RDMA_READ;
	pt_sim_event(run, r, &ev);
	ev.opcode = TV_WR_RDMA_WRITE;
	ev.peer = 99;
	pt_sim_event(run, r, &ev);
	ev.node = 99;
	pt_sim_event(run, r, &ev);
	/* Completions: one already counted (0), one never posted. */
	ev = (struct tv_sim_event){ .kind = TV_SIM_EV_CQE, .node = 0,
				    .qp_num = l->qpn[0], .wr_id = 0 };
	pt_sim_event(run, r, &ev);
	ev.wr_id = l->posts[0] + 5;
	pt_sim_event(run, r, &ev);
	pt_observe(r, &pe);
	/* Before the windows are open nothing is counted. */
	r->win_ready = false;
	ev = (struct tv_sim_event){ .kind = TV_SIM_EV_POST_SEND, .node = 0,
				    .qp_num = l->qpn[0], .peer = 1 };
	pt_sim_event(run, r, &ev);
	r->win_ready = true;
	k->u[0] = l->posts[0] == posts && l->cqes[0] == cqes &&
		  l->dir[1].delivered == delivered;
	/* The one that is caught. */
	ev = (struct tv_sim_event){ .kind = TV_SIM_EV_DELIVER, .node = 0,
				    .peer = 2, .status = TV_WC_SUCCESS,
				    .opcode = TV_WR_RDMA_WRITE,
				    .remote_addr = 0x1000, .length = 8,
				    .rkey = 0x5, .qp_num = 0x777 };
	pt_sim_event(run, r, &ev);
	return true;
}

START_TEST(test_port_foreign_events)
{
	struct poke k = { .fn = poke_sim_events };
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_poked(
		PT3_HEAD "\"programs\": [{\"kind\": \"ping_pong\", \"nodes\":"
		" [0, 1], \"bytes\": 64, \"iters\": 2}]}", 1, &k, &sc);
	const struct tv_tb_failures *f = tv_tb_run_failures(run);

	ck_assert(k.done);
	ck_assert_uint_eq(k.u[0], 1);
	ck_assert_uint_eq(f->count, 1);
	ck_assert_int_eq(f->first, TV_TB_FK_WRITE);
	ck_assert_str_eq(f->msgs[0], "invariant: node 2 wrote 8 bytes at 0x1000"
			 " (rkey 0x5) on node 0, outside what node 0 registered"
			 " for it");
	/* The program itself ran as ever. */
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_failed, 0);
	/* Tearing down (the run is over): a post is not counted. */
	{
		struct pt_runner *r = run->wl;
		struct pt_link *l = &r->links[0];
		uint64_t posts = l->posts[0];
		struct tv_sim_event ev = { .kind = TV_SIM_EV_POST_SEND,
					   .node = l->node[0], .peer = l->node[1],
					   .qp_num = l->qpn[0] };

		ck_assert(tv_tb_run_tearing_down(run) && r->win_ready);
		pt_sim_event(run, r, &ev);
		ck_assert_uint_eq(l->posts[0], posts);
	}
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/*
 * The final check again after teardown: the connections are gone (NULL),
 * which is not a failed connection, so the program is still held to its
 * reference: as it ran, nothing; with a byte of node 1's destination
 * changed, that byte named.
 */
START_TEST(test_port_check_after_teardown)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(
		PT_HEAD "\"programs\": [{\"kind\": \"ping_pong\","
		" \"bytes\": 64, \"iters\": 2}]}", 1, NULL, &sc);
	struct pt_runner *r = run->wl;
	const struct tv_tb_failures *f = tv_tb_run_failures(run);
	const struct pt_program *p = &r->sc->progs[0];
	uint8_t *b;

	ck_assert_msg(f->count == 0, "%s", first_failure(run));
	ck_assert_ptr_null(r->links[0].conn[0]);
	ck_assert_ptr_null(r->links[0].conn[1]);
	pt_check(run, r);
	ck_assert_uint_eq(f->count, 0);
	/* The destination half [64, 128) of node 1's region. */
	b = r->nodes[1].data + p->region_off[1] + 100;
	*b ^= 0xff;
	pt_check(run, r);
	ck_assert_uint_eq(f->count, 1);
	ck_assert_int_eq(f->first, TV_TB_FK_DATA);
	ck_assert_msg(strstr(f->msgs[0], "invariant: program 0 (ping_pong) "
			     "ended with node 1's byte 100 of its region"),
		      "%s", f->msgs[0]);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- port: trace lines of events no engine sends, and their drawing ------ */

/*
 * A traced run of a sequence that recycles.  At its first event with the
 * tasks running, the test writes engine events through the trace: a
 * refused trigger, a post of operation 0 and of operation 7 (no names),
 * an event of kind 77, and a FAIL line without a code.  The trace has
 * them as such; `show` draws the refusal and the FAIL and the RECYCLE in
 * Chrome's format.
 */
static bool poke_trace(struct poke *k, struct tv_tb_run *run, void *st)
{
	struct pt_runner *r = st;
	struct tv_port_event ev = { .kind = TV_PORT_EV_BAD_TRIGGER, .node = 0,
				    .peer = 1, .pos = 7, .length = 5,
				    .msg = "cov refused" };

	(void)k;
	if (!r->win_ready || r->tasks[0].state != PT_TASK_RUNNING)
		return false;
	ck_assert_int_eq(tv_port_trigger_pack(TV_PORT_TRIGGER_DATA, 1, 2, 3, 0,
					      40, 0, &ev.trig), 0);
	pt_trace_engine(run, &ev);
	ev = (struct tv_port_event){ .kind = TV_PORT_EV_POST, .node = 0,
				     .peer = 1, .op = 0, .length = 11 };
	pt_trace_engine(run, &ev);
	ev.op = 7;
	ev.length = 12;
	pt_trace_engine(run, &ev);
	ev = (struct tv_port_event){ .kind = (enum tv_port_event_kind)77,
				     .node = 1, .peer = 0, .value = 13 };
	pt_trace_engine(run, &ev);
	pt_trace_op(r, &r->tasks[0], "FAIL", 0);
	snprintf(k->name, sizeof(k->name), "p0 %s",
		 pt_op_name(r->tasks[0].t->ops[r->tasks[0].pc].kind));
	return true;
}

START_TEST(test_port_trace_odd_events)
{
	struct tv_tb_show_opts so = { .last = UINT64_MAX };
	char path[256], chrome[256], err[TV_TB_ERR_MAX], want[96], *s, *l;
	struct tv_tb_scenario *sc;
	struct tv_tb_trace *t;
	struct tv_tb_run *run;
	struct poke k = { .fn = poke_trace };

	mk_tmpdir();
	tmp_path(path, sizeof(path), "odd.jsonl");
	sc = poke_load(PT_HEAD "\"programs\": [{\"kind\": \"sequence\","
		  " \"from\": 0, \"to\": 1, \"bytes\": 64,"
		  " \"ops\": [{\"op\": \"signal\"}, {\"op\": \"recycle\"}]}]}");
	ck_assert_int_eq(tv_tb_trace_create(path, sc, "odd.json", 1, NULL, &t),
			 0);
	run = run_poked_traced(sc, 1, &k, t);
	ck_assert_int_eq(tv_tb_trace_finish(t, run), 0);
	ck_assert(k.done);
	ck_assert_msg(tv_tb_run_result(run)->failures == 0, "%s",
		      first_failure(run));
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);

	s = read_all(path);
	l = line_with(s, "\"BAD_TRIGGER\"");
	ck_assert_ptr_nonnull(l);
	ck_assert_msg(strstr(l, "\"type\":\"data\"") &&
		      strstr(l, "\"pos\":7") && strstr(l, "\"len\":40") &&
		      strstr(l, "\"name\":\"cov refused\""), "%s", l);
	free(l);
	l = line_with(s, "\"len\":11");
	ck_assert_ptr_nonnull(l);
	ck_assert_msg(strstr(l, "\"kind\":\"POST\"") &&
		      strstr(l, "\"op\":null") && strstr(l, "\"pos\":null"),
		      "%s", l);
	free(l);
	l = line_with(s, "\"len\":12");
	ck_assert_ptr_nonnull(l);
	ck_assert_msg(strstr(l, "\"op\":null"), "%s", l);
	free(l);
	l = line_with(s, "\"value\":13");
	ck_assert_ptr_nonnull(l);
	ck_assert_msg(strstr(l, "\"kind\":\"?\"") && strstr(l, "\"type\":null"),
		      "%s", l);
	free(l);
	l = line_with(s, "\"kind\":\"FAIL\"");
	ck_assert_ptr_nonnull(l);
	snprintf(want, sizeof(want), "\"name\":\"%s\"", k.name);
	ck_assert_msg(strstr(l, "\"code\":null") && strstr(l, want), "%s", l);
	free(l);
	ck_assert_uint_eq(count_of(s, "\"kind\":\"RECYCLE\""), 1);
	free(s);

	tmp_path(chrome, sizeof(chrome), "odd.chrome.json");
	so.chrome_path = chrome;
	ck_assert_msg(tv_tb_show(path, &so, err, sizeof(err)) == 0, "%s", err);
	s = read_all(chrome);
	ck_assert_msg(strstr(s, "BAD_TRIGGER: cov refused") != NULL, "%.400s",
		      s);
	snprintf(want, sizeof(want), "%s FAIL", k.name);
	ck_assert_msg(strstr(s, want) != NULL, "%.400s", s);
	ck_assert_msg(strstr(s, "p0 recycle RECYCLE") != NULL, "%.400s", s);
	free(s);
	rm_tmpdir();
}
END_TEST

/* A line's fields as `show` takes them: tag, index and code when there. */
START_TEST(test_port_show_parse)
{
	struct tv_tb_show_event e;
	struct tv_tb_svg_mark m;
	json_t *line;

	memset(&e, 0, sizeof(e));
	line = json_pack("{s:s}", "type", "data|flag");
	pt_show_parse(line, &e);
	ck_assert_str_eq(e.tag, "data|flag");
	ck_assert(!e.has_idx);
	ck_assert_str_eq(e.status, "");
	json_decref(line);

	memset(&e, 0, sizeof(e));
	line = json_pack("{s:s,s:s,s:n}", "op", "write", "pos", "x", "code");
	pt_show_parse(line, &e);
	ck_assert_str_eq(e.tag, "write");
	ck_assert(!e.has_idx);
	ck_assert_str_eq(e.status, "");
	json_decref(line);

	memset(&e, 0, sizeof(e));
	line = json_pack("{s:i,s:i}", "pos", 9, "code", -110);
	pt_show_parse(line, &e);
	ck_assert_str_eq(e.tag, "");
	ck_assert(e.has_idx);
	ck_assert_uint_eq(e.idx, 9);
	ck_assert_str_eq(e.status, "error -110");
	json_decref(line);

	/* A kind the drawing has no mark for: none. */
	memset(&m, 0, sizeof(m));
	strcpy(e.kind, "SLOT_STORE");
	pt_draw.svg_event(&e, &m);
	ck_assert_int_eq(m.kind, TV_TB_MARK_NONE);
}
END_TEST

/* ---- port: a connection error, and CQs below the receive depth ----------- */

/*
 * vf/qp/error on a post of the ping-pong: its connection fails, and a
 * task with it, naming the connection.  A fault that nothing recovers
 * from fired (no node crashed): the failure is allowed, not reported.
 */
START_TEST(test_port_qp_error_allowed)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(
		PT_HEAD "\"faults\": [{\"point\": \"vf/qp/error\", \"nth\": 2,"
		" \"count\": 1}], \"programs\": [{\"kind\": \"ping_pong\","
		" \"bytes\": 64, \"iters\": 4, \"timeout_ns\": 1000000}]}",
		1, NULL, &sc);
	const struct pt_runner *r = run->wl;
	const struct tv_tb_result *res = tv_tb_run_result(run);
	size_t failed = 0;

	ck_assert_msg(res->failures == 0, "%s", first_failure(run));
	ck_assert_uint_eq(res->fault_fires, 1);
	ck_assert_uint_eq(res->crashes, 0);
	ck_assert_uint_eq(tv_tb_run_unrecoverable_fires(run), 1);
	for (size_t i = 0; i < r->sc->ntasks; i++) {
		if (r->tasks[i].state != PT_TASK_FAILED)
			continue;
		failed++;
		ck_assert_msg(strstr(r->tasks[i].msg, "program 0 (ping_pong)"),
			      "%s", r->tasks[i].msg);
	}
	ck_assert_uint_ge(failed, 1);
	ck_assert_uint_eq(res->ops_failed, failed);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/*
 * Over a 100 us link a ping-pong whose operations have 10 us each: both
 * waits run out.  With "allow_error_completions" the failures are the
 * scenario's to expect; without, and with no fault fired, each is an
 * outcome failure saying so.
 */
static struct tv_tb_run *slow_waits(const char *allow,
				    struct tv_tb_scenario **sc_p)
{
	char text[512];

	snprintf(text, sizeof(text), PT_HEAD "\"allow_error_completions\": %s,"
		 " \"links\": [{\"from\": 0, \"to\": 1, \"latency_ns\":"
		 " 100000}], \"programs\": [{\"kind\": \"ping_pong\","
		 " \"bytes\": 64, \"iters\": 1, \"timeout_ns\": 10000}]}",
		 allow);
	return run_scenario_text(text, 1, NULL, sc_p);
}

START_TEST(test_port_errors_allowed_by_scenario)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = slow_waits("true", &sc);
	const struct tv_tb_failures *f;
	const struct pt_runner *r = run->wl;

	ck_assert_msg(tv_tb_run_result(run)->failures == 0, "%s",
		      first_failure(run));
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_failed, 2);
	ck_assert_int_eq(r->tasks[1].state, PT_TASK_FAILED);
	ck_assert_int_eq(r->tasks[1].err, -ETIMEDOUT);
	ck_assert_msg(strstr(r->tasks[1].msg, "node 1, program 0 (ping_pong), "
			     "operation 0 (wait): no signal from node 0 within "),
		      "%s", r->tasks[1].msg);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);

	run = slow_waits("false", &sc);
	f = tv_tb_run_failures(run);
	ck_assert_uint_eq(f->count, 2);
	ck_assert_int_eq(f->first, TV_TB_FK_OUTCOME);
	for (size_t i = 0; i < 2; i++)
		ck_assert_msg(strstr(f->msgs[i], " (and no fault that could "
				     "cause it fired)") &&
			      !strstr(f->msgs[i], "a crash ends"), "%s",
			      f->msgs[i]);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/*
 * The smallest CQ a scenario may ask for (8, and 12) is below the
 * engine's default receive depth (16): the runner gives the engine a
 * depth that fits, and the ping-pong runs in both signal modes, never
 * more than max_write_queue (cq_size - 4) in flight.
 */
START_TEST(test_port_small_cq)
{
	static const char *const modes[] = { "atomic", "write_imm" };
	static const unsigned cqs[] = { 8, 12 };

	for (int m = 0; m < 2; m++) {
		char text[512];
		struct tv_tb_scenario *sc;
		struct tv_tb_run *run;
		const struct pt_runner *r;
		const struct tv_tb_result *res;

		snprintf(text, sizeof(text), PT_HEAD "\"port\": {\"cq_size\": %u,"
			 " \"signal\": \"%s\"}, \"programs\": [{\"kind\":"
			 " \"ping_pong\", \"bytes\": 64, \"iters\": 6,"
			 " \"flush_every\": 2}]}", cqs[m], modes[m]);
		run = run_scenario_text(text, 1, NULL, &sc);
		r = run->wl;
		res = tv_tb_run_result(run);
		ck_assert_msg(res->failures == 0, "cq %u %s: %s", cqs[m],
			      modes[m], first_failure(run));
		ck_assert_uint_eq(res->ops_ok, 36);
		ck_assert_uint_eq(res->ops_failed, 0);
		ck_assert_uint_eq(res->bytes, 12 * 64);
		ck_assert_uint_le(r->conn_total.max_in_flight, cqs[m] - 4);
		ck_assert_uint_eq(r->conn_total.imm_signals, m ? 12 : 0);
		tv_tb_run_free(run);
		tv_tb_scenario_free(sc);
	}
}
END_TEST

/* ---- port: the swarm's deadlines and the shrinker's edits ---------------- */

/*
 * Seed 415 draws four nodes, a slow link (432 us) and a fault mix of cq
 * reordering only: nothing delays on purpose, so the two programs away
 * from nodes 0 and 1 get the tight deadline, the allreduce over all four
 * keeps the default.  Seed 297's mix has node/crash first: no program
 * gets one, though its link is as slow.
 */
START_TEST(test_port_swarm_fault_mix)
{
	json_t *sc, *progs, *p;
	size_t i;

	ck_assert_int_eq(tv_tb_swarm_generate(415, 0, "port", &sc), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(
		json_object_get(sc, "links"), 0), "latency_ns")), 431672);
	ck_assert_uint_eq(json_array_size(json_object_get(sc, "faults")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
		json_object_get(sc, "faults"), 0), "point")), "vf/cq/reorder");
	progs = json_object_get(sc, "programs");
	ck_assert_uint_eq(json_array_size(progs), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_array_get(progs, 0), "timeout_ns")), 300000);
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_array_get(progs, 1), "timeout_ns")), 300000);
	ck_assert_str_eq(json_string_value(json_object_get(
		json_array_get(progs, 2), "kind")), "allreduce");
	ck_assert_ptr_null(json_object_get(json_array_get(progs, 2),
					   "timeout_ns"));
	json_decref(sc);

	ck_assert_int_eq(tv_tb_swarm_generate(297, 0, "port", &sc), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(
		json_object_get(sc, "links"), 0), "latency_ns")), 480199);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
		json_object_get(sc, "faults"), 0), "point")), "node/crash");
	json_array_foreach(json_object_get(sc, "programs"), i, p)
		ck_assert_ptr_null(json_object_get(p, "timeout_ns"));
	json_decref(sc);
}
END_TEST

static void pt_edit_expect(const char *what, const char *before, size_t i,
			   int want_rc, const char *after)
{
	edit_expect_wl(&tv_port_workload, what, before, i, want_rc, after);
}

/* Programs without a kind: sizes halve plainly, nodes drop from the end. */
START_TEST(test_port_edits_no_kind)
{
	pt_edit_expect("halve a program's bytes",
		       "{\"programs\": [{\"bytes\": 100}]}", 0, 0,
		       "{\"programs\": [{\"bytes\": 50}]}");
	pt_edit_expect("take a node out of a program",
		       "{\"programs\": [{\"nodes\": [2, 0, 1]}]}", 0, 0,
		       "{\"programs\": [{\"nodes\": [2, 0]}]}");
	pt_edit_expect("take a node out of a program",
		       "{\"programs\": [{\"nodes\": [2, 0]}]}", 0, -EAGAIN,
		       NULL);
}
END_TEST

/* ---- gather: scenario keys at their edges -------------------------------- */

static const struct bad_sc bad_gather[] = {
	{ GW_HEAD "\"batches\": [{\"node\": 0, \"dist\": \"zipf\", \"zipf_s\": \"x\"}]}",
	  "$.batches[0]: zipf_s: must be a number in (0, 4]" },
	{ GW_HEAD "\"batches\": [{\"node\": 0, \"dist\": \"zipf\", \"zipf_s\": 4.5}]}",
	  "$.batches[0]: zipf_s: must be a number in (0, 4]" },
	{ GW_HEAD "\"batches\": [{\"node\": 0, \"dist\": \"zipf\", \"zipf_s\": -1}]}",
	  "$.batches[0]: zipf_s: must be a number in (0, 4]" },
};

START_TEST(test_gather_refused_edges)
{
	check_bad(bad_gather, sizeof(bad_gather) / sizeof(bad_gather[0]),
		  "gather");
}
END_TEST

/* The workload's own guard on the node count (the core refuses first). */
START_TEST(test_gather_parse_one_node)
{
	struct tv_tb_scenario core;
	char err[TV_TB_ERR_MAX] = "";
	struct tv_ju jc = { err, sizeof(err) };
	json_t *root = json_loads("{\"batches\": []}", 0, NULL);
	void *wl = (void *)&core;

	ck_assert_ptr_nonnull(root);
	memset(&core, 0, sizeof(core));
	core.nodes = 1;
	ck_assert_int_eq(gw_scenario_parse(&jc, root, &core, &wl), -EINVAL);
	ck_assert_ptr_eq(wl, (void *)&core);
	ck_assert_str_eq(err, "$.nodes: the gather workload takes 2 to 16 "
			 "nodes");
	core.nodes = 17;
	err[0] = '\0';
	ck_assert_int_eq(gw_scenario_parse(&jc, root, &core, &wl), -EINVAL);
	ck_assert_str_eq(err, "$.nodes: the gather workload takes 2 to 16 "
			 "nodes");
	json_decref(root);
}
END_TEST

/*
 * zipf_s as an integer and as a real; over more rows than the zipf table
 * holds (100000 ranks): accepted and run, every row right.  A batch of no
 * rows: an output buffer of one row anyway, the gather done at once.
 */
START_TEST(test_gather_zipf_and_empty)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(
		GW_HEAD "\"gather\": {\"rows\": 200000, \"row_bytes\": 8},"
		" \"batches\": [{\"node\": 0, \"dist\": \"zipf\", \"zipf_s\": 2,"
		" \"count\": 16}, {\"node\": 1, \"dist\": \"zipf\","
		" \"zipf_s\": 0.5, \"count\": 16, \"at_ns\": 10}]}",
		1, NULL, &sc);
	const struct gw_scenario *g;
	const struct tv_tb_result *res = tv_tb_run_result(run);

	ck_assert_msg(res->failures == 0, "%s", first_failure(run));
	g = tv_tb_scenario_wl(sc);
	ck_assert(g->batches[0].zipf_s == 2.0);
	ck_assert(g->batches[1].zipf_s == 0.5);
	ck_assert_uint_eq(res->ops_ok, 2);
	ck_assert_uint_eq(res->bytes, 2 * 16 * 8);
	ck_assert_uint_eq(((const struct gw_runner *)run->wl)->rows_checked,
			  32);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);

	run = run_scenario_text(GW_HEAD "\"gather\": {\"rows\": 512,"
				" \"row_bytes\": 64}, \"batches\": [{\"node\":"
				" 0, \"count\": 0}, {\"node\": 1, \"ids\": []}]}",
				1, NULL, &sc);
	res = tv_tb_run_result(run);
	ck_assert_msg(res->failures == 0, "%s", first_failure(run));
	g = tv_tb_scenario_wl(sc);
	ck_assert_uint_eq(g->max_count, 0);
	ck_assert_uint_eq(res->ops_ok, 2);
	ck_assert_uint_eq(res->bytes, 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
	gw_scenario_free(NULL); /* nothing to free: no crash */
}
END_TEST

/*
 * zipf_s so small that every rank weighs 1: the table's 100000 ranks
 * are equally likely, and the draw of seed 214105's first batch (its
 * uniform 0.999999) lands past the 99999th: the last rank the table
 * holds, id 99999, though the tensor has 200000 rows.
 */
START_TEST(test_gather_zipf_last_rank)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(
		GW_HEAD "\"gather\": {\"rows\": 200000, \"row_bytes\": 8},"
		" \"batches\": [{\"node\": 0, \"dist\": \"zipf\","
		" \"zipf_s\": 1e-300, \"count\": 1}]}", 214105, NULL, &sc);
	const struct gw_runner *r = run->wl;
	const struct tv_tb_result *res = tv_tb_run_result(run);

	ck_assert_msg(res->failures == 0, "%s", first_failure(run));
	ck_assert_uint_eq(res->ops_ok, 1);
	ck_assert_uint_eq(r->nodes[0].ids[0], 99999);
	ck_assert_uint_eq(r->rows_checked, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- gather: the checker fed results that lie ---------------------------- */

#define GW_SMALL                                                               \
	GW_HEAD "\"gather\": {\"rows\": 512, \"row_bytes\": 64},"              \
	" \"batches\": [{\"node\": 0, \"ids\": [1, 300, 3]}]}"

/*
 * After an honest run (its rows still in node 0's output), the batch's
 * check is fed results that do not fit it: none, a result code that does
 * not match its failed rows, a row count that is not the batch's, failed
 * rows that name another id, no status, or an index twice, and a failed
 * row where no fault fired.  Each is its own failure, with its text.
 */
START_TEST(test_gather_check_batch_lies)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(GW_SMALL, 1, NULL, &sc);
	struct gw_runner *r = run->wl;
	const struct tv_tb_failures *f = tv_tb_run_failures(run);
	struct tv_gather_row_error er[2] = {
		{ .index = 1, .id = 300, .peer = 1, .status = 5, .cause = 5 },
		{ .index = 1, .id = 300, .peer = 1, .status = 5 },
	};
	struct tv_gather_result res = { .rows = 3 };
	const char *want[] = {
		"batch 0 on node 0 ended without a result (0)",
		"batch 0 on node 0 ended without a result (-2)",
		"batch 0: result -5 with 0 failed rows of 3 (batch of 3)",
		"batch 0: result -22 with 0 failed rows of 3 (batch of 3)",
		"batch 0: result 0 with 0 failed rows of 2 (batch of 3)",
		"invariant: batch 0: failed row 0 names index 1, id 301, "
		"status 5: not a row of the batch, or twice, or no status",
		"invariant: batch 0: failed row 0 names index 1, id 300, "
		"status 0: not a row of the batch, or twice, or no status",
		"invariant: batch 0: failed row 1 names index 1, id 300, "
		"status 5: not a row of the batch, or twice, or no status",
		"batch 0 on node 0: 1 rows failed without a fault (first: id "
		"300, status 5, cause 5)",
	};

	ck_assert_msg(f->count == 0, "%s", first_failure(run));
	ck_assert_uint_eq(r->rows_checked, 3);
	/* Not set up: the books are not counted (again). */
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 1);
	r->ready = false;
	gw_check(run, r);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 1);
	r->ready = true;
	gw_check(run, r);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 2);
	gw_check_batch(r, 0, NULL, 0);
	gw_check_batch(r, 0, &res, -ENOENT);
	gw_check_batch(r, 0, &res, -EIO);
	gw_check_batch(r, 0, &res, -EINVAL);
	res.rows = 2;
	gw_check_batch(r, 0, &res, 0);
	res.rows = 3;
	res.failed_rows = 1;
	res.errors = er;
	er[0].id = 301;
	gw_check_batch(r, 0, &res, -EIO);
	er[0].id = 300;
	er[0].status = 0;
	gw_check_batch(r, 0, &res, -EIO);
	er[0].status = 5;
	res.failed_rows = 2;
	gw_check_batch(r, 0, &res, -EIO);
	/* One good failed row: named right, but nothing could fail it.  The
	 * other two rows are checked against their owners': still right. */
	r->rows_checked = 0;
	res.failed_rows = 1;
	gw_check_batch(r, 0, &res, -EIO);
	ck_assert_uint_eq(r->rows_checked, 2);
	ck_assert_uint_eq(r->rows_failed, 1);
	ck_assert_uint_eq(r->runs[0].failed_rows, 1);

	ck_assert_uint_eq(f->count, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < f->count; i++)
		ck_assert_str_eq(f->msgs[i], want[i]);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* The first bad row of an output: without failed rows, and quiver's way. */
START_TEST(test_gather_first_bad_row)
{
	struct gw_scenario sc = { .nodes = 2 };
	uint64_t ids[3] = { 4, 9, 9 }, zero = 0;
	uint8_t out[3 * 16], failed[3] = { 0, 1, 0 };

	tv_gather_config_default(&sc.cfg);
	sc.cfg.nodes = 2;
	sc.cfg.rows = 64;
	sc.cfg.row_bytes = 16;
	for (int i = 0; i < 3; i++)
		gw_row(7, &sc, ids[i], out + 16 * i);
	ck_assert_int_eq(gw_first_bad_row(&sc, 7, ids, 3, out, NULL, false,
					  &zero), -1);
	out[16 + 3] ^= 1;
	ck_assert_int_eq(gw_first_bad_row(&sc, 7, ids, 3, out, NULL, false,
					  &zero), 1);
	/* Failed: not compared. */
	ck_assert_int_eq(gw_first_bad_row(&sc, 7, ids, 3, out, failed, false,
					  &zero), -1);
	/* An all-zero row: quiver's check takes it, counted. */
	memset(out + 32, 0, 16);
	ck_assert_int_eq(gw_first_bad_row(&sc, 7, ids, 3, out, failed, false,
					  &zero), 2);
	ck_assert_int_eq(gw_first_bad_row(&sc, 7, ids, 3, out, failed, true,
					  &zero), -1);
	ck_assert_uint_eq(zero, 1);
}
END_TEST

/* ---- gather: events that are not the invariants' to check ---------------- */

/*
 * Three nodes, a batch of node 0 reading from nodes 1 and 2.  At the
 * first event after set-up the test feeds the checker READs it must not
 * judge (at a node that is none, from a node that is none, at no server
 * QP of the pair, a WRITE) and three it must: under another rkey, below
 * the partition, longer than it.  And engine events: a reconnect to a
 * peer whose engine is gone, kinds with no name, an END while nothing
 * runs.
 */
static bool poke_gather_events(struct poke *k, struct tv_tb_run *run, void *st)
{
	struct gw_runner *r = st;
	struct gw_node *s = &r->nodes[1];
	struct tv_gather_part_handle h;
	struct tv_vf_qp_endpoint ep;
	struct tv_gather_ctx *keep;
	struct tv_gather_event ge = { .kind = TV_GATHER_EV_QP_UP, .node = 0,
				      .peer = 2, .qp = 0, .n = 100000 };
	uint64_t size = tv_gather_part_bytes(&r->sc->cfg, 1);
	struct tv_sim_event ev = {
		.kind = TV_SIM_EV_DELIVER, .opcode = TV_WR_RDMA_READ,
		.status = TV_WC_SUCCESS, .node = 99, .peer = 0, .length = 64,
	};

	if (!r->ready || r->nodes[0].running)
		return false;
	tv_gather_part_handle(s->ctx, &h);
	ck_assert_int_eq(tv_gather_qp_endpoint(s->ctx, 0, 0, TV_GATHER_SERVER,
					       &ep), 0);
	ev.rkey = h.rkey;
	ev.remote_addr = h.addr;
	gw_sim_event(run, r, &ev);            /* no such node */
	ev.node = 1;
	ev.peer = 99;
	gw_sim_event(run, r, &ev);            /* no such peer */
	ev.peer = 1;
	ev.qp_num = ep.qp_num;
	gw_sim_event(run, r, &ev);            /* its own: no QP to itself */
	ev.peer = 0;
	ev.qp_num = ep.qp_num ^ 0x4000;
	ev.rkey = 0;
	gw_sim_event(run, r, &ev);            /* not one of its QPs */
	ev.qp_num = ep.qp_num;
	ev.opcode = TV_WR_RDMA_WRITE;
	gw_sim_event(run, r, &ev);            /* not a READ */
	ev.opcode = TV_WR_RDMA_READ;
	gw_sim_event(run, r, &ev);            /* caught: rkey */
	ev.rkey = h.rkey;
	ev.remote_addr = h.addr - 64;
	gw_sim_event(run, r, &ev);            /* caught: below */
	ev.remote_addr = h.addr;
	ev.length = (uint32_t)size + 64;
	gw_sim_event(run, r, &ev);            /* caught: too long */
	k->u[0] = ep.qp_num;
	k->u[1] = h.rkey;
	k->u[2] = h.addr;
	k->u[3] = size;

	/* Node 2's engine gone: its reconnect is not judged. */
	keep = r->nodes[2].ctx;
	r->nodes[2].ctx = NULL;
	gw_observe(&r->nodes[0], &ge);
	r->nodes[2].ctx = keep;
	ge = (struct tv_gather_event){ .kind = (enum tv_gather_event_kind)0,
				       .node = 0 };
	gw_observe(&r->nodes[0], &ge);
	ge.kind = (enum tv_gather_event_kind)42;
	gw_observe(&r->nodes[0], &ge);
	ge.kind = TV_GATHER_EV_END;
	gw_observe(&r->nodes[0], &ge);
	k->u[4] = r->runs[0].ends;
	return true;
}

START_TEST(test_gather_foreign_events)
{
	struct poke k = { .fn = poke_gather_events };
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_poked(
		GW3_HEAD "\"gather\": {\"rows\": 3000, \"row_bytes\": 64,"
		" \"qps_per_peer\": 2},"
		" \"batches\": [{\"node\": 0, \"count\": 64, \"at_ns\": 5000}]}",
		1, &k, &sc);
	const struct tv_tb_failures *f = tv_tb_run_failures(run);
	struct gw_runner *r = run->wl;
	char want[3][256];
	struct tv_sim_event cqe = { .kind = TV_SIM_EV_CQE, .node = 0,
				    .status = TV_WC_REM_INV_REQ_ERR };

	ck_assert(k.done);
	ck_assert_uint_eq(k.u[4], 0);
	snprintf(want[0], sizeof(want[0]), "invariant: node 0 read 64 bytes at "
		 "0x%" PRIx64 " (rkey 0x0) of node 1, outside its partition "
		 "[0x%" PRIx64 ", +%" PRIu64 ") under rkey 0x%x", k.u[2], k.u[2],
		 k.u[3], (unsigned)k.u[1]);
	snprintf(want[1], sizeof(want[1]), "invariant: node 0 read 64 bytes at "
		 "0x%" PRIx64 " (rkey 0x%x) of node 1, outside its partition "
		 "[0x%" PRIx64 ", +%" PRIu64 ") under rkey 0x%x", k.u[2] - 64,
		 (unsigned)k.u[1], k.u[2], k.u[3], (unsigned)k.u[1]);
	snprintf(want[2], sizeof(want[2]), "invariant: node 0 read %" PRIu64
		 " bytes at 0x%" PRIx64 " (rkey 0x%x) of node 1, outside its "
		 "partition [0x%" PRIx64 ", +%" PRIu64 ") under rkey 0x%x",
		 k.u[3] + 64, k.u[2], (unsigned)k.u[1], k.u[2], k.u[3],
		 (unsigned)k.u[1]);
	ck_assert_uint_eq(f->count, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(f->msg_kinds[i], TV_TB_FK_WRITE);
		ck_assert_str_eq(f->msgs[i], want[i]);
	}
	/* The batch itself: one END, fine. */
	ck_assert_uint_eq(r->runs[0].ends, 1);
	ck_assert_int_eq(r->runs[0].result, 0);
	/* Tearing down (the run is over): a refused READ is not judged. */
	ck_assert(tv_tb_run_tearing_down(run));
	gw_sim_event(run, r, &cqe);
	ck_assert_uint_eq(f->count, 3);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- gather: QP pairs that cannot be connected --------------------------- */

static bool poke_connect(struct poke *k, struct tv_tb_run *run, void *st)
{
	struct gw_runner *r = st;
	struct tv_gather_ctx *c0, *c1;

	(void)run;
	if (!r->ready)
		return false;
	c0 = r->nodes[0].ctx;
	c1 = r->nodes[1].ctx;
	/* Its own handle: node 0 is not its own peer. */
	k->u[0] = (uint64_t)(int64_t)gw_connect_pair(c0, c0, 0, 0, 0);
	/* QP 99 of 2. */
	k->u[1] = (uint64_t)(int64_t)gw_connect_pair(c0, c1, 0, 1, 99);
	/* A client that is no node. */
	k->u[2] = (uint64_t)(int64_t)gw_connect_pair(c0, c1, 7, 1, 0);
	return true;
}

START_TEST(test_gather_connect_refused)
{
	struct poke k = { .fn = poke_connect };
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_poked(
		GW_HEAD "\"gather\": {\"rows\": 512, \"row_bytes\": 64,"
		" \"qps_per_peer\": 2},"
		" \"batches\": [{\"node\": 0, \"count\": 32, \"at_ns\": 1000}]}",
		1, &k, &sc);

	ck_assert(k.done);
	ck_assert_int_eq((int)(int64_t)k.u[0], -EPROTO);
	ck_assert_int_eq((int)(int64_t)k.u[1], -EINVAL);
	ck_assert_int_eq((int)(int64_t)k.u[2], -EINVAL);
	/* Nothing was changed: the batch runs as ever. */
	ck_assert_msg(tv_tb_run_result(run)->failures == 0, "%s",
		      first_failure(run));
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- gather: progress and crash of nodes without an engine --------------- */

/*
 * gw_progress before set-up is over, and on a node whose engine is gone
 * while it is not down: nothing (its running batch and queue stay).  A
 * crash of a node without an engine still ends its batches.
 */
START_TEST(test_gather_no_engine)
{
	struct gw_batch batches[3] = { { .node = 0 }, { .node = 0 },
				       { .node = 0 } };
	struct gw_scenario sc = { .nodes = 1, .batches = batches,
				  .nbatches = 3 };
	struct gw_batch_run runs[3];
	size_t queue[3] = { 1, 2, 0 };
	struct gw_runner r = { .sc = &sc, .runs = runs };
	struct gw_node n = { .r = &r, .id = 0, .running = 1, .queue = queue,
			     .qhead = 0, .qlen = 2 };

	memset(runs, 0, sizeof(runs));
	r.nodes = &n;
	r.ready = false;
	gw_progress(NULL, &r, 0);
	ck_assert_uint_eq(n.running, 1);
	ck_assert_uint_eq(n.qlen, 2);
	r.ready = true;
	gw_progress(NULL, &r, 0);
	ck_assert_uint_eq(n.running, 1);
	ck_assert_uint_eq(n.qlen, 2);
	ck_assert_uint_eq(n.qhead, 0);

	gw_node_crash(NULL, &r, 0);
	ck_assert(n.down);
	ck_assert_uint_eq(n.running, 0);
	ck_assert_uint_eq(n.qlen, 0);
	ck_assert_uint_eq(n.qhead, 2);
	for (int b = 0; b < 3; b++)
		ck_assert(runs[b].cancelled);
	ck_assert_ptr_null(n.ctx);
}
END_TEST

/* ---- gather: a restart while another server is down ---------------------- */

/*
 * Nodes 1 and 2 crash at their first batch (node/crash, its first two
 * hits), each back 1 ms later: node 1's restart comes while node 2 is
 * still down (10 ns apart), so it reconnects its client QPs to node 0
 * only (node 2's clients reconnect to it when they need it).
 */
START_TEST(test_gather_restart_peer_down)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(
		GW3_HEAD "\"gather\": {\"rows\": 3000, \"row_bytes\": 64,"
		" \"qps_per_peer\": 2},"
		" \"faults\": [{\"point\": \"node/crash\", \"nth\": 1,"
		" \"count\": 2, \"arg\": 1000000}],"
		" \"batches\": [{\"node\": 1, \"count\": 16},"
		" {\"node\": 2, \"count\": 16, \"at_ns\": 10}]}",
		1, NULL, &sc);
	const struct gw_runner *r = run->wl;
	const struct tv_tb_result *res = tv_tb_run_result(run);

	ck_assert_msg(res->failures == 0, "%s", first_failure(run));
	ck_assert_uint_eq(res->crashes, 2);
	ck_assert_uint_eq(res->restarts, 2);
	ck_assert(r->runs[0].cancelled && r->runs[1].cancelled);
	ck_assert_uint_eq(res->ops_ok, 0);
	for (int i = 0; i < 3; i++)
		ck_assert(!r->nodes[i].down);
	ck_assert_uint_eq(r->nodes[1].gen, 1);
	ck_assert_uint_eq(r->nodes[2].gen, 1);
	/* Asked of node 2 while it was down, the reconnect would have said
	 * -EAGAIN and failed the restart: node 1 would be lost. */
	ck_assert_uint_eq(res->restart_failures, 0);
	ck_assert(!r->nodes[1].lost && !r->nodes[2].lost);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- gather: the shrinker's edit of a batch with neither count nor ids --- */

START_TEST(test_gather_halve_no_count)
{
	struct tv_tb_shrink_state st = { 0 };
	json_t *sc = json_loads("{\"batches\": [{\"node\": 0},"
				" {\"node\": 1, \"count\": 2}]}", 0, NULL);
	const struct tv_tb_shrink_edit *halve = NULL;
	char desc[64];

	ck_assert_ptr_nonnull(sc);
	for (size_t i = 0; i < GW_NEDITS; i++)
		if (!strcmp(gw_edits[i]->what, "halve a batch"))
			halve = gw_edits[i];
	ck_assert_ptr_nonnull(halve);
	ck_assert_int_eq(halve->fn(sc, 0, &st), -EAGAIN);
	ck_assert_int_eq(halve->fn(sc, 1, &st), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(
		json_object_get(sc, "batches"), 1), "count")), 1);
	ck_assert_ptr_null(json_object_get(json_array_get(
		json_object_get(sc, "batches"), 0), "count"));
	gw_describe(sc, 2, desc, sizeof(desc));
	ck_assert_str_eq(desc, "2 batches, 1 rows");
	json_decref(sc);
}
END_TEST

/* One case a test: CK_RUN_CASE=test_... runs one. */
#define ADD(t) do { tc = tcase_create(#t); tcase_set_timeout(tc, 60); \
		    tcase_add_test(tc, t); suite_add_tcase(s, tc); } while (0)

static Suite *suite(void)
{
	Suite *s = suite_create("cov_port_gather");
	TCase *tc;

	ADD(test_port_too_many_programs);
	ADD(test_port_compile_unknown_kind);
	ADD(test_port_link_of_none);
	ADD(test_port_idle_node);
	ADD(test_port_stall_default_arg);
	ADD(test_port_packets_no_bytes);
	ADD(test_port_recycle_peer_crashed);
	ADD(test_port_tail_after_crash);
	ADD(test_port_foreign_events);
	ADD(test_port_check_after_teardown);
	ADD(test_port_trace_odd_events);
	ADD(test_port_show_parse);
	ADD(test_port_qp_error_allowed);
	ADD(test_port_small_cq);
	ADD(test_port_errors_allowed_by_scenario);
	ADD(test_port_swarm_fault_mix);
	ADD(test_port_edits_no_kind);
	ADD(test_gather_refused_edges);
	ADD(test_gather_parse_one_node);
	ADD(test_gather_zipf_and_empty);
	ADD(test_gather_zipf_last_rank);
	ADD(test_gather_check_batch_lies);
	ADD(test_gather_first_bad_row);
	ADD(test_gather_foreign_events);
	ADD(test_gather_connect_refused);
	ADD(test_gather_no_engine);
	ADD(test_gather_restart_peer_down);
	ADD(test_gather_halve_no_count);
	return s;
}

int main(void)
{
	return tv_check_main(suite());
}
