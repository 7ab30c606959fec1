/*
 * The port-channel and gather workloads on the simulator, the paths the
 * other suites leave: scenario keys of the wrong type (refused with the
 * culprit's path), the limit on operations met at every step of every
 * kind of program, programs of zero iterations and zero bytes, the
 * shrinker's edits, ids a gather engine refuses.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "common/poke.h"
#include "common/tb_files.h"
#include "run_int.h"
#include "tb_int.h"
#include "workloads/gather/gw.h"
#include "workloads/port/pt.h"

/* Not in a header: the registry (testbed/workloads.c) names it. */
extern const struct tv_tb_workload_ops tv_gather_workload;

/* ---- port: keys of the wrong type ------------------------------------------ */

#define PT_HEAD "{\"workload\": \"port\", \"nodes\": 2, "
#define PT_PP "\"programs\": [{\"kind\": \"ping_pong\"}]"
#define PT_SEQ(ops) "\"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"ops\": [" ops "]}]}"

static const struct bad_sc bad_port[] = {
	{ PT_HEAD "\"port\": {\"signal\": 5}, " PT_PP "}", "$.port.signal" },
	{ PT_HEAD "\"port\": {\"fifo_size\": \"x\"}, " PT_PP "}", "$.port.fifo_size" },
	{ PT_HEAD "\"port\": {\"cq_size\": -1}, " PT_PP "}", "$.port.cq_size" },
	{ PT_HEAD "\"port\": {\"max_write_queue\": 70000}, " PT_PP "}", "$.port.max_write_queue" },
	{ PT_HEAD "\"port\": {\"lag_ns\": \"x\"}, " PT_PP "}", "$.port.lag_ns" },
	{ PT_HEAD "\"port\": {\"op_gap_ns\": \"x\"}, " PT_PP "}", "$.port.op_gap_ns" },
	{ PT_HEAD "\"port\": {\"poll_ns\": -3}, " PT_PP "}", "$.port.poll_ns" },
	{ PT_HEAD "\"port\": {\"poll_max_ns\": 1000000001}, " PT_PP "}", "$.port.poll_max_ns" },
	{ PT_HEAD "\"port\": {\"timeout_ns\": 3600000000001}, " PT_PP "}", "$.port.timeout_ns" },
	{ PT_HEAD "\"programs\": [{\"kind\": 3}]}", "$.programs[0].kind" },
	{ PT_HEAD "\"programs\": [{\"kind\": \"packet_ping_pong\", \"format\": 16}]}", "$.programs[0].format" },
	{ PT_HEAD "\"programs\": [{\"kind\": \"allgather\", \"bytes\": \"x\"}]}", "$.programs[0].bytes" },
	{ PT_HEAD "\"programs\": [{\"kind\": \"allreduce\", \"count\": 4194305}]}", "$.programs[0].count" },
	{ PT_HEAD "\"programs\": [{\"kind\": \"allreduce\", \"count\": 0}]}", "$.programs[0]: count: must be a positive multiple of the 2 nodes" },
	{ PT_HEAD "\"programs\": [{\"kind\": \"ping_pong\", \"iters\": 100001}]}", "$.programs[0].iters" },
	{ PT_HEAD "\"programs\": [{\"kind\": \"ping_pong\", \"flush_every\": -1}]}", "$.programs[0].flush_every" },
	{ PT_HEAD "\"programs\": [{\"kind\": \"ping_pong\", \"timeout_ns\": \"x\"}]}", "$.programs[0].timeout_ns" },
	{ PT_HEAD "\"programs\": [{\"kind\": \"allgather\", \"nodes\": [\"a\", 1]}]}", "$.programs[0].nodes[0]" },
	{ PT_HEAD "\"programs\": [{\"kind\": \"sequence\", \"from\": \"x\", \"to\": 1, \"ops\": []}]}", "$.programs[0].from" },
	{ PT_HEAD "\"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 2, \"ops\": []}]}", "$.programs[0].to" },
	{ PT_HEAD "\"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"bytes\": 16777217, \"ops\": []}]}", "$.programs[0].bytes" },
	{ PT_HEAD "\"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"nodes\": [0, 1], \"ops\": []}]}", "$.programs[0]" },
	{ PT_HEAD PT_SEQ("{\"op\": \"put\", \"dst_off\": \"x\"}"), "$.programs[0].ops[0].dst_off" },
	{ PT_HEAD PT_SEQ("{\"op\": \"put\", \"src_off\": 65537}"), "$.programs[0].ops[0].src_off" },
	{ PT_HEAD PT_SEQ("{\"op\": \"put\", \"bytes\": 65537}"), "$.programs[0].ops[0].bytes" },
	{ PT_HEAD PT_SEQ("{\"op\": \"put\", \"src_off\": 65000, \"bytes\": 1000}"), "$.programs[0].ops[0]: [0, +1000) or [65000, +1000) is outside the program's 65536 bytes" },
	{ PT_HEAD PT_SEQ("{\"op\": \"put\", \"size\": 8}"), "$.programs[0].ops[0]" },
	{ PT_HEAD PT_SEQ("{\"op\": 5}"), "$.programs[0].ops[0]: op: must be put" },
	{ PT_HEAD PT_SEQ("{\"bytes\": 8}"), "$.programs[0].ops[0]: op: must be put" },
	{ PT_HEAD PT_SEQ("{\"op\": \"flush\", \"dst_off\": 0}"), "$.programs[0].ops[0]: a flush moves no data" },
	{ PT_HEAD PT_SEQ("{\"op\": \"flush\"}, {\"op\": \"signal\", \"bytes\": 8}"), "$.programs[0].ops[1]: a signal moves no data" },
	{ "{\"workload\": \"port\", \"nodes\": 65, " PT_PP "}", "$.nodes: the port workload takes at most 64 nodes" },
};

START_TEST(test_port_refused)
{
	check_bad(bad_port, sizeof(bad_port) / sizeof(bad_port[0]), "port");
}
END_TEST

/* "nodes" of more than 64 entries: refused before its entries are read. */
START_TEST(test_port_nodes_too_many)
{
	char text[1024], *p = text, err[TV_TB_ERR_MAX];
	struct tv_tb_scenario *sc = NULL;

	p += sprintf(p, PT_HEAD "\"programs\": [{\"kind\": \"allgather\", \"nodes\": [");
	for (int i = 0; i < 65; i++)
		p += sprintf(p, "%s0", i ? ", " : "");
	strcpy(p, "]}]}");
	ck_assert_int_eq(tv_tb_scenario_load_string(text, "cov", &sc, err),
			 -EINVAL);
	ck_assert_ptr_null(sc);
	ck_assert_str_eq(err, "$.programs[0].nodes: needs 2 to 64 nodes");
}
END_TEST

/* ---- port: the limit on operations, met at each step ------------------------ */

/*
 * Two ping-pongs (6 operations an iteration) and a sequence of flushes
 * (one fill, then one operation a flush) leave exactly `room` of the
 * 1000000 operations a scenario may have; the fourth program, compiled
 * last, meets the limit at its operation number room (from 0).
 */
struct limit_case {
	const char *prog;   /* the fourth program */
	unsigned room;
	const char *msg;    /* NULL: accepted */
};

#define LIM_MORE "$.programs[3]: more than 1000000 operations in all"
#define LIM_PP "{\"kind\": \"ping_pong\", \"nodes\": [1, 0], \"iters\": 1, \"flush_every\": 1}"
#define LIM_PK "{\"kind\": \"packet_ping_pong\", \"nodes\": [0, 1], \"iters\": 1, \"bytes\": 8}"
#define LIM_AG "{\"kind\": \"allgather\", \"nodes\": [0, 1], \"bytes\": 8}"
#define LIM_AR "{\"kind\": \"allreduce\", \"nodes\": [0, 1], \"count\": 2}"
#define LIM_A2A "{\"kind\": \"all_to_all\", \"nodes\": [0, 1], \"bytes\": 8}"
#define LIM_SEQ "{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"bytes\": 64, \"ops\": [{\"op\": \"recycle\"}, {\"op\": \"signal\"}, {\"op\": \"put_with_signal\", \"bytes\": 8}]}"

static const struct limit_case limits[] = {
	/* fill, put, wait; the peer's fill, put, wait */
	{ LIM_PP, 0, LIM_MORE }, { LIM_PP, 1, LIM_MORE },
	{ LIM_PP, 2, LIM_MORE }, { LIM_PP, 3, LIM_MORE },
	{ LIM_PP, 4, LIM_MORE }, { LIM_PP, 5, LIM_MORE },
	{ LIM_PP, 6, NULL },
	/* fill, pack, put, poll; the answer's the same */
	{ LIM_PK, 0, LIM_MORE }, { LIM_PK, 1, LIM_MORE },
	{ LIM_PK, 2, LIM_MORE }, { LIM_PK, 3, LIM_MORE },
	{ LIM_PK, 4, LIM_MORE }, { LIM_PK, 7, LIM_MORE },
	{ LIM_PK, 8, NULL },
	/* per node: fill, put, wait */
	{ LIM_AG, 0, LIM_MORE }, { LIM_AG, 1, LIM_MORE },
	{ LIM_AG, 2, LIM_MORE }, { LIM_AG, 6, NULL },
	/* per node: fill, put, wait, reduce, put, wait */
	{ LIM_AR, 0, LIM_MORE }, { LIM_AR, 1, LIM_MORE },
	{ LIM_AR, 2, LIM_MORE }, { LIM_AR, 3, LIM_MORE },
	{ LIM_AR, 4, LIM_MORE }, { LIM_AR, 5, LIM_MORE },
	{ LIM_AR, 12, NULL },
	/* per node: fill, fill, copy, put, wait */
	{ LIM_A2A, 0, LIM_MORE }, { LIM_A2A, 2, LIM_MORE },
	{ LIM_A2A, 3, LIM_MORE }, { LIM_A2A, 4, LIM_MORE },
	{ LIM_A2A, 10, NULL },
	/* fill; recycle: flush, the two resets; signal: it, the wait; put,
	 * the wait.  An operation that cannot be added is named; a wait
	 * that cannot be added makes the program's count the culprit. */
	{ LIM_SEQ, 0, LIM_MORE },
	{ LIM_SEQ, 1, "$.programs[3].ops[0]: too many operations" },
	{ LIM_SEQ, 2, "$.programs[3].ops[0]: too many operations" },
	{ LIM_SEQ, 3, LIM_MORE },
	{ LIM_SEQ, 4, "$.programs[3].ops[1]: too many operations" },
	{ LIM_SEQ, 5, LIM_MORE },
	{ LIM_SEQ, 6, "$.programs[3].ops[2]: too many operations" },
	{ LIM_SEQ, 7, LIM_MORE },
	{ LIM_SEQ, 8, NULL },
};

START_TEST(test_port_op_limit)
{
	const struct limit_case *c = &limits[_i];
	unsigned flushes = 3999 - c->room;
	size_t cap = 512 + 20 * (size_t)flushes + strlen(c->prog);
	char *text = malloc(cap), *p = text, err[TV_TB_ERR_MAX] = "";
	struct tv_tb_scenario *sc = NULL;
	int rc;

	ck_assert_ptr_nonnull(text);
	/* 600000 + 396000 + (1 + flushes) = 1000000 - room */
	p += sprintf(p, PT_HEAD "\"programs\": ["
		     "{\"kind\": \"ping_pong\", \"iters\": 100000},"
		     "{\"kind\": \"ping_pong\", \"iters\": 66000},"
		     "{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"ops\": [");
	for (unsigned i = 0; i < flushes; i++)
		p += sprintf(p, "%s{\"op\": \"flush\"}", i ? "," : "");
	sprintf(p, "]}, %s]}", c->prog);
	rc = tv_tb_scenario_load_string(text, "limit", &sc, err);
	free(text);
	if (!c->msg) {
		ck_assert_msg(rc == 0, "room %u: %s", c->room, err);
		ck_assert_uint_eq(tv_tb_scenario_ops(sc), 1000000);
		tv_tb_scenario_free(sc);
		return;
	}
	ck_assert_msg(rc == -EINVAL, "case %d: rc %d", _i, rc);
	ck_assert_ptr_null(sc);
	ck_assert_msg(!strcmp(err, c->msg), "case %d (room %u): '%s', "
		      "expected '%s'", _i, c->room, err, c->msg);
}
END_TEST

/* ---- port: programs of no iterations, a sequence of no bytes ----------------- */

START_TEST(test_port_empty_programs)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(
		PT_HEAD "\"programs\": [{\"kind\": \"ping_pong\", \"iters\": 0},"
		" {\"kind\": \"packet_ping_pong\", \"iters\": 0, \"format\": \"ll8\"},"
		" {\"kind\": \"sequence\", \"from\": 1, \"to\": 0, \"bytes\": 0,"
		"  \"ops\": [{\"op\": \"signal\"}, {\"op\": \"flush\"}]}]}",
		3, NULL, &sc);
	const struct tv_tb_result *res = tv_tb_run_result(run);
	char *sum;

	ck_assert_msg(res->failures == 0, "%s", tv_tb_run_failures(run)->msgs[0]);
	/* The sequence's fill, signal, its wait, flush: nothing else. */
	ck_assert_uint_eq(res->ops, 4);
	ck_assert_uint_eq(res->ops_ok, 4);
	ck_assert_uint_eq(res->ops_failed, 0);
	ck_assert_uint_eq(res->bytes, 0);
	sum = run_summary_text(run);
	ck_assert_msg(strstr(sum, "3 programs, 6 tasks, 1 connections") != NULL,
		      "%s", sum);
	ck_assert_msg(strstr(sum, "tasks 6 done, 0 failed") != NULL, "%s", sum);
	free(sum);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* Names of what is not a kind or an operation. */
START_TEST(test_port_names)
{
	ck_assert_str_eq(pt_kind_name(PT_ALL_TO_ALL), "all_to_all");
	ck_assert_str_eq(pt_kind_name(PT_NKINDS), "?");
	ck_assert_str_eq(pt_op_name(PT_OP_RECYCLE), "recycle");
	ck_assert_str_eq(pt_op_name(PT_NOPS), "?");
}
END_TEST

/* ---- port: the shrinker's edits ------------------------------------------------ */

static void edit_expect(const char *what, const char *before, size_t i,
			int want_rc, const char *after)
{
	edit_expect_wl(&tv_port_workload, what, before, i, want_rc, after);
}

START_TEST(test_port_edits)
{
	const char *three =
		"{\"programs\": [{\"kind\": \"allgather\", \"nodes\": [2, 0, 1]},"
		" {\"kind\": \"allreduce\", \"nodes\": [0, 1, 2]},"
		" {\"kind\": \"ping_pong\", \"nodes\": [0, 1], \"iters\": 1, \"bytes\": 4096},"
		" {\"kind\": \"packet_ping_pong\", \"bytes\": 24, \"iters\": \"x\"},"
		" {\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"ops\": [{\"op\": \"flush\"}]}]}";
	char desc[128];
	json_t *sc;

	edit_expect("take a node out of a program", three, 0, 0,
		    "{\"programs\": [{\"kind\": \"allgather\", \"nodes\": [2, 0]},"
		    " {\"kind\": \"allreduce\", \"nodes\": [0, 1, 2]},"
		    " {\"kind\": \"ping_pong\", \"nodes\": [0, 1], \"iters\": 1, \"bytes\": 4096},"
		    " {\"kind\": \"packet_ping_pong\", \"bytes\": 24, \"iters\": \"x\"},"
		    " {\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"ops\": [{\"op\": \"flush\"}]}]}");
	/* allreduce's count is per node; two nodes are the least. */
	edit_expect("take a node out of a program", three, 1, -EAGAIN, NULL);
	edit_expect("take a node out of a program", three, 2, -EAGAIN, NULL);
	edit_expect("take a node out of a program", three, 5, -ENOENT, NULL);
	/* Iterations: not a number, or at the floor, stay. */
	edit_expect("halve a program's iterations", three, 2, -EAGAIN, NULL);
	edit_expect("halve a program's iterations", three, 3, -EAGAIN, NULL);
	edit_expect("halve a program's iterations", three, 9, -ENOENT, NULL);
	/* Bytes: packets halve in 8-byte words, sequences keep theirs. */
	edit_expect("halve a program's bytes", three, 3, 0,
		    "{\"programs\": [{\"kind\": \"allgather\", \"nodes\": [2, 0, 1]},"
		    " {\"kind\": \"allreduce\", \"nodes\": [0, 1, 2]},"
		    " {\"kind\": \"ping_pong\", \"nodes\": [0, 1], \"iters\": 1, \"bytes\": 4096},"
		    " {\"kind\": \"packet_ping_pong\", \"bytes\": 8, \"iters\": \"x\"},"
		    " {\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"ops\": [{\"op\": \"flush\"}]}]}");
	edit_expect("halve a program's bytes", three, 4, -EAGAIN, NULL);
	edit_expect("halve a program's bytes", three, 0, -EAGAIN, NULL);
	edit_expect("halve a program's bytes", three, 7, -ENOENT, NULL);
	/* A sequence of one operation keeps it; past the last: none. */
	edit_expect("drop a sequence operation", three, 0, -EAGAIN, NULL);
	edit_expect("drop a sequence operation", three, 1, -ENOENT, NULL);
	edit_expect("drop a program", three, 5, -ENOENT, NULL);
	edit_expect("drop a program", "{\"programs\": [{\"kind\": \"ping_pong\"}]}",
		    0, -EAGAIN, NULL);

	sc = json_loads(three, 0, NULL);
	tv_port_workload.describe(sc, 77, desc, sizeof(desc));
	ck_assert_str_eq(desc, "77 operations, 5 programs");
	json_decref(sc);
}
END_TEST

/* ---- port: a connection that fails, traced and drawn ------------------------------ */

/*
 * The QP of a ping-pong goes to ERR (vf/qp/error): the operations fail
 * with the connection's cause, which the scenario allows; the trace's
 * CONN_ERROR and FAIL lines are drawn as notes (SVG) and error instants
 * (Chrome).
 */
START_TEST(test_port_show_conn_error)
{
	struct tv_tb_show_opts so = { .last = UINT64_MAX };
	struct tv_tb_scenario *sc;
	struct tv_tb_trace *t;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char err[TV_TB_ERR_MAX], path[128], svg[128], chrome[128], *s;
	const struct tv_tb_result *res;

	mk_tmpdir();
	tmp_path(path, sizeof(path), "t.jsonl");
	ck_assert_msg(tv_tb_scenario_load_string(
		PT_HEAD "\"faults\": [{\"point\": \"vf/qp/error\", \"nth\": 3, \"count\": 1}],"
		" \"programs\": [{\"kind\": \"ping_pong\", \"bytes\": 256, \"iters\": 4}]}",
		"conn-error", &sc, err) == 0, "%s", err);
	ck_assert_int_eq(tv_tb_trace_create(path, sc, "cov.json", 1, NULL, &t),
			 0);
	tv_tb_run_opts_init(&o, sc);
	o.seed = 1;
	o.trace = t;
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	ck_assert_int_eq(tv_tb_trace_finish(t, run), 0);
	res = tv_tb_run_result(run);
	ck_assert_msg(res->failures == 0, "%s", tv_tb_run_failures(run)->msgs[0]);
	ck_assert_uint_eq(res->fault_fires, 1);
	ck_assert_uint_ge(res->ops_failed, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);

	tmp_path(svg, sizeof(svg), "d.svg");
	tmp_path(chrome, sizeof(chrome), "d.json");
	so.svg_path = svg;
	so.chrome_path = chrome;
	ck_assert_msg(tv_tb_show(path, &so, err, sizeof(err)) == 0, "%s", err);
	s = read_all(svg);
	ck_assert_msg(strstr(s, "CONN_ERROR: ") != NULL, "%.300s", s);
	ck_assert_msg(strstr(s, "FAIL: ") != NULL, "%.300s", s);
	free(s);
	s = read_all(chrome);
	ck_assert_msg(strstr(s, "CONN_ERROR: ") != NULL, "%.300s", s);
	ck_assert_msg(strstr(s, " FAIL") != NULL, "%.300s", s);
	free(s);
	rm_tmpdir();
}
END_TEST

/* ---- gather: keys of the wrong type --------------------------------------------- */

#define GW_HEAD "{\"workload\": \"gather\", \"nodes\": 2, "
#define GW_B "\"batches\": [{\"node\": 0, \"count\": 16}]}"

static const struct bad_sc bad_gather[] = {
	{ GW_HEAD "\"gather\": {\"rows\": \"x\"}, " GW_B, "$.gather.rows" },
	{ GW_HEAD "\"gather\": {\"row_bytes\": 65537}, " GW_B, "$.gather.row_bytes" },
	{ GW_HEAD "\"gather\": {\"replicated_rows\": -1}, " GW_B, "$.gather.replicated_rows" },
	{ GW_HEAD "\"gather\": {\"zero_every\": \"x\"}, " GW_B, "$.gather.zero_every" },
	{ GW_HEAD "\"gather\": {\"qps_per_peer\": 65}, " GW_B, "$.gather.qps_per_peer" },
	{ GW_HEAD "\"gather\": {\"post_list\": \"x\"}, " GW_B, "$.gather.post_list" },
	{ GW_HEAD "\"gather\": {\"window\": 65}, " GW_B, "$.gather.window" },
	{ GW_HEAD "\"gather\": {\"staging_bytes\": 1073741825}, " GW_B, "$.gather.staging_bytes" },
	{ GW_HEAD "\"gather\": {\"max_retries\": 101}, " GW_B, "$.gather.max_retries" },
	{ GW_HEAD "\"gather\": {\"timeout_ns\": \"x\"}, " GW_B, "$.gather.timeout_ns" },
	{ GW_HEAD "\"gather\": {\"qp_retry_cnt\": 8}, " GW_B, "$.gather.qp_retry_cnt" },
	{ GW_HEAD "\"gather\": {\"direct\": 1}, " GW_B, "$.gather.direct: must be true or false" },
	{ GW_HEAD "\"gather\": {\"qps_per_peer\": 0}, " GW_B, "$.gather: qps_per_peer, post_list and window must be > 0" },
	{ GW_HEAD "\"gather\": {\"post_list\": 0}, " GW_B, "$.gather: qps_per_peer, post_list and window must be > 0" },
	{ GW_HEAD "\"batches\": [{\"node\": 0, \"dist\": 5}]}", "$.batches[0].dist" },
	{ GW_HEAD "\"batches\": [{\"node\": 0, \"dist\": \"zipf\", \"zipf_s\": 0}]}", "$.batches[0]: zipf_s: must be a number in (0, 4]" },
	{ GW_HEAD "\"batches\": [{\"node\": 0, \"count\": 4, \"bogus\": 1}]}", "$.batches[0]" },
	{ GW_HEAD "\"batches\": [{\"node\": 0, \"ids\": [1], \"dist\": \"zipf\"}]}", "$.batches[0]: \"ids\" or \"dist\" and \"count\", not both" },
	{ GW_HEAD "\"batches\": [{\"node\": 0, \"count\": -1}]}", "$.batches[0].count" },
	{ GW_HEAD "\"batches\": [{\"node\": 0, \"count\": 1048577}]}", "$.batches[0].count" },
	{ GW_HEAD "\"batches\": [{\"node\": 0, \"count\": 4}, {\"node\": \"x\"}]}", "$.batches[1].node" },
	{ "{\"workload\": \"gather\", \"nodes\": 17, " GW_B, "$.nodes: the gather workload takes 2 to 16 nodes" },
};

START_TEST(test_gather_refused)
{
	check_bad(bad_gather, sizeof(bad_gather) / sizeof(bad_gather[0]),
		  "gather");
}
END_TEST

/* ---- gather: the shrinker's edits ------------------------------------------------- */

static void gw_edit_expect(size_t k, const char *before, size_t i,
			   int want_rc, const char *after)
{
	struct tv_tb_shrink_state st = { 0 };
	json_t *sc = json_loads(before, 0, NULL), *want;
	int rc;

	ck_assert_ptr_nonnull(sc);
	rc = gw_edits[k]->fn(sc, i, &st);
	ck_assert_msg(rc == want_rc, "%s [%zu]: rc %d, expected %d",
		      gw_edits[k]->what, i, rc, want_rc);
	want = json_loads(after ? after : before, 0, NULL);
	ck_assert_ptr_nonnull(want);
	if (!json_equal(sc, want)) {
		char *got = json_dumps(sc, JSON_COMPACT);

		ck_abort_msg("%s [%zu]: got %s", gw_edits[k]->what, i, got);
	}
	json_decref(want);
	json_decref(sc);
}

START_TEST(test_gather_edits)
{
	const char *b = "{\"batches\": [{\"node\": 0, \"ids\": [5, 6, 7, 8, 9]},"
			" {\"node\": 1, \"ids\": [3]}, {\"node\": 1, \"count\": 1},"
			" {\"node\": 0, \"count\": \"x\"}, {\"node\": 0, \"count\": 9}]}";
	size_t drop = GW_NEDITS, halve = GW_NEDITS;
	char desc[128];
	json_t *sc;

	for (size_t k = 0; k < GW_NEDITS; k++) {
		if (!strcmp(gw_edits[k]->what, "drop a batch"))
			drop = k;
		if (!strcmp(gw_edits[k]->what, "halve a batch"))
			halve = k;
	}
	ck_assert_uint_lt(drop, GW_NEDITS);
	ck_assert_uint_lt(halve, GW_NEDITS);
	/* Ids: the first half kept (5 -> 2). */
	gw_edit_expect(halve, b, 0, 0,
		       "{\"batches\": [{\"node\": 0, \"ids\": [5, 6]},"
		       " {\"node\": 1, \"ids\": [3]}, {\"node\": 1, \"count\": 1},"
		       " {\"node\": 0, \"count\": \"x\"}, {\"node\": 0, \"count\": 9}]}");
	gw_edit_expect(halve, b, 1, -EAGAIN, NULL);
	gw_edit_expect(halve, b, 2, -EAGAIN, NULL);
	gw_edit_expect(halve, b, 3, -EAGAIN, NULL);
	gw_edit_expect(halve, b, 4, 0,
		       "{\"batches\": [{\"node\": 0, \"ids\": [5, 6, 7, 8, 9]},"
		       " {\"node\": 1, \"ids\": [3]}, {\"node\": 1, \"count\": 1},"
		       " {\"node\": 0, \"count\": \"x\"}, {\"node\": 0, \"count\": 4}]}");
	gw_edit_expect(halve, b, 5, -ENOENT, NULL);
	gw_edit_expect(drop, b, 5, -ENOENT, NULL);
	gw_edit_expect(drop, "{\"batches\": [{\"node\": 0}]}", 0, -EAGAIN, NULL);
	gw_edit_expect(drop, b, 3, 0,
		       "{\"batches\": [{\"node\": 0, \"ids\": [5, 6, 7, 8, 9]},"
		       " {\"node\": 1, \"ids\": [3]}, {\"node\": 1, \"count\": 1},"
		       " {\"node\": 0, \"count\": 9}]}");

	sc = json_loads(b, 0, NULL);
	tv_gather_workload.describe(sc, 5, desc, sizeof(desc));
	/* 5 + 1 + 1 + 0 ("x" is no count) + 9 rows */
	ck_assert_str_eq(desc, "5 batches, 16 rows");
	json_decref(sc);
}
END_TEST

/* ---- gather: ids the engine refuses -------------------------------------------- */

START_TEST(test_gather_id_out_of_range)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(
		GW_HEAD "\"gather\": {\"rows\": 512, \"row_bytes\": 64},"
		" \"batches\": [{\"node\": 0, \"ids\": [1, 600, 3]},"
		" {\"node\": 0, \"ids\": [4, 300, 2], \"at_ns\": 1000}]}",
		1, NULL, &sc);
	const struct tv_tb_result *res = tv_tb_run_result(run);

	/* Refused before anything was posted; the next one runs. */
	ck_assert_msg(res->failures == 0, "%s", tv_tb_run_failures(run)->msgs[0]);
	ck_assert_uint_eq(res->ops, 2);
	ck_assert_uint_eq(res->ops_ok, 1);
	ck_assert_uint_eq(res->ops_failed, 1);
	ck_assert_uint_eq(res->bytes, 3 * 64);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST


/* ---- a run with an invariant of the test's own ------------------------------- */

/* Some kept failure of kind holds text. */
static bool has_failure(const struct tv_tb_run *run, enum tv_tb_fail_kind kind,
			const char *text)
{
	const struct tv_tb_failures *f = tv_tb_run_failures(run);

	for (size_t i = 0; i < f->count && i < TV_TB_FAILURES_KEPT; i++)
		if (f->msg_kinds[i] == kind && strstr(f->msgs[i], text))
			return true;
	return false;
}

/* ---- port: recycles, drawn ----------------------------------------------- */

/*
 * A sequence that recycles its semaphores twice: each meeting of both
 * ends is traced as RECYCLE and drawn as a note in the SVG.
 */
START_TEST(test_port_recycle_drawn)
{
	struct tv_tb_show_opts so = { .last = UINT64_MAX };
	char path[128], svg[128], err[TV_TB_ERR_MAX], *s, *t;
	int notes = 0;

	mk_tmpdir();
	trace_text(PT_HEAD "\"programs\": [{\"kind\": \"sequence\","
		   " \"from\": 0, \"to\": 1, \"bytes\": 64,"
		   " \"ops\": [{\"op\": \"signal\"},"
		   " {\"op\": \"recycle\"}, {\"op\": \"put_with_signal\","
		   " \"bytes\": 8}, {\"op\": \"recycle\"}]}]}",
		   "r.jsonl", 1, NULL, path, sizeof(path));
	s = read_all(path);
	/* One RECYCLE line a meeting: from whichever end came second. */
	for (t = s; (t = strstr(t, "\"RECYCLE\"")) != NULL; t++)
		notes++;
	ck_assert_int_eq(notes, 2);
	free(s);
	tmp_path(svg, sizeof(svg), "r.svg");
	so.svg_path = svg;
	ck_assert_msg(tv_tb_show(path, &so, err, sizeof(err)) == 0, "%s", err);
	s = read_all(svg);
	notes = 0;
	for (t = s; (t = strstr(t, "semaphores recycled")) != NULL; t++)
		notes++;
	ck_assert_msg(notes >= 2, "%d notes: %.300s", notes, s);
	free(s);
	rm_tmpdir();
}
END_TEST

/* ---- port: a post on a QP that is no link's ------------------------------ */

static bool poke_stray_post(struct poke *k, struct tv_tb_run *run, void *st)
{
	struct pt_runner *r = st;
	struct pt_link *l = &r->links[0];
	struct tv_sim_event p = {
		.kind = TV_SIM_EV_POST_SEND, .node = l->node[0],
		.qp_num = l->qpn[0] ^ 0x5a5a, .peer = l->node[1] };
	uint64_t posts = l->posts[0];

	if (!r->win_ready)
		return false;
	/* Far more than the CQ holds: had it counted, the check would fire. */
	for (uint32_t i = 0; i <= 2 * r->sc->cq_size; i++)
		pt_sim_event(run, r, &p);
	k->arg = l->posts[0] == posts;
	return true;
}

START_TEST(test_port_stray_post)
{
	struct poke k = { .fn = poke_stray_post };
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_poked(
		PT_HEAD "\"port\": {\"cq_size\": 16}, \"programs\": [{\"kind\":"
		" \"ping_pong\", \"bytes\": 64, \"iters\": 2}]}", 1, &k, &sc);

	ck_assert(k.done);
	ck_assert_int_eq(k.arg, 1);
	ck_assert_msg(tv_tb_run_result(run)->failures == 0, "%s",
		      first_failure(run));
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- gather: a server crashes with batches queued, restarts -------------- */

/*
 * Node 1 runs batch 0 (reads from node 0 take microseconds), batch 1 is
 * queued behind it, and the crash (node/crash, nth 3) comes at batch
 * 2's start: all three end with the node, excused.  Node 0's batch 3
 * reads from the dead server: its READs run out of retries (one ACK
 * timeout, 67 ms) long before the restart at 300 ms, so the engine asks
 * to reconnect while node 1 is down (-EAGAIN, again later).
 */
#define GW_CRASH(faults, more)                                                 \
	GW_HEAD "\"gather\": {\"rows\": 4096, \"row_bytes\": 64,"              \
	" \"qp_retry_cnt\": 0, \"timeout_ns\": 1000000000},"                   \
	" \"faults\": [{\"point\": \"node/crash\", \"nth\": 3, \"count\": 1,"  \
	" \"arg\": 300000000}" faults "],"                                     \
	" \"batches\": [{\"node\": 1, \"dist\": \"uniform\","                  \
	" \"count\": 512},"                                                    \
	" {\"node\": 1, \"count\": 64, \"at_ns\": 100},"                       \
	" {\"node\": 1, \"count\": 64, \"at_ns\": 200},"                       \
	" {\"node\": 0, \"dist\": \"uniform\", \"count\": 256,"                \
	" \"at_ns\": 300}"                                                     \
	more "]}"

/* Batches 0 to 2 ended with node 1, unstarted ones too; batch 3 failed. */
static void crash_books(const struct tv_tb_run *run)
{
	const struct gw_runner *r = run->wl;

	ck_assert_msg(tv_tb_run_result(run)->failures == 0, "%s",
		      first_failure(run));
	ck_assert_uint_eq(tv_tb_run_result(run)->crashes, 1);
	ck_assert(r->runs[0].started && r->runs[0].cancelled);
	ck_assert(!r->runs[0].ended);
	for (size_t b = 1; b < 3; b++)
		ck_assert(!r->runs[b].started && r->runs[b].cancelled);
	ck_assert(r->runs[3].ended && !r->runs[3].cancelled);
	ck_assert_int_eq(r->runs[3].result, -EIO);
}

START_TEST(test_gather_crash_queued)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(GW_CRASH("", ""), 1, NULL,
						  &sc);

	const struct gw_runner *r = run->wl;
	const struct tv_tb_result *res = tv_tb_run_result(run);

	crash_books(run);
	ck_assert_uint_eq(res->restarts, 1);
	ck_assert_uint_eq(res->restart_failures, 0);
	ck_assert_uint_eq(res->ops_ok, 0);
	ck_assert_uint_eq(res->ops_failed, 1);
	ck_assert(!r->nodes[1].down && !r->nodes[1].lost);
	/* Every client QP of the restarted node, reconnected once. */
	ck_assert_uint_eq(r->total.reconnects, 8);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/*
 * The restart fails (vf/reg_mr/fail at its instant): node 1 is gone for
 * good (node_lost), and node 0's reconnects are told -EHOSTDOWN.
 */
START_TEST(test_gather_crash_lost)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(GW_CRASH(
		", {\"point\": \"vf/reg_mr/fail\", \"after_ns\": 300000200,"
		" \"before_ns\": 300000201}",
		", {\"node\": 0, \"dist\": \"uniform\", \"count\": 256,"
		" \"at_ns\": 400000000}"), 1, NULL, &sc);

	const struct gw_runner *r = run->wl;
	const struct tv_tb_result *res = tv_tb_run_result(run);

	crash_books(run);
	ck_assert_uint_eq(res->restarts, 0);
	ck_assert_uint_eq(res->restart_failures, 1);
	ck_assert(r->nodes[1].down && r->nodes[1].lost);
	ck_assert_ptr_null(r->nodes[1].ctx);
	/* Batch 4 asks a server that is gone: it fails, nothing reconnects. */
	ck_assert(r->runs[4].ended);
	ck_assert_int_eq(r->runs[4].result, -EIO);
	ck_assert_uint_eq(res->ops_ok, 0);
	ck_assert_uint_eq(res->ops_failed, 2);
	ck_assert_uint_eq(r->total.reconnects, 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- gather: the run ends with a gather in flight ------------------------ */

START_TEST(test_gather_deadline_in_flight)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(
		GW_HEAD "\"sim\": {\"deadline_ns\": 2000},"
		" \"gather\": {\"rows\": 4096, \"row_bytes\": 64},"
		" \"batches\": [{\"node\": 0, \"dist\": \"uniform\","
		" \"count\": 1024}]}",
		1, NULL, &sc);

	ck_assert_uint_eq(tv_tb_run_failures(run)->count, 3);
	ck_assert(has_failure(run, TV_TB_FK_HANG, "not quiescent at the "
			      "virtual deadline of 2000 ns"));
	ck_assert(has_failure(run, TV_TB_FK_HANG, "batch 0 on node 0 never "
			      "ended (started)"));
	ck_assert(has_failure(run, TV_TB_FK_LEAK, "teardown: node 0's gather "
			      "engine still has work in flight"));
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- gather: a re-registration refused ----------------------------------- */

START_TEST(test_gather_rereg_refused)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_scenario_text(
		GW_HEAD "\"gather\": {\"rows\": 4096, \"row_bytes\": 64},"
		" \"faults\": [{\"point\": \"gather/server/rereg\","
		" \"count\": 1},"
		" {\"point\": \"vf/reg_mr/fail\", \"count\": 1}],"
		" \"batches\": [{\"node\": 0, \"dist\": \"uniform\","
		" \"count\": 64, \"at_ns\": 1000}]}",
		1, NULL, &sc);
	const struct tv_tb_result *res = tv_tb_run_result(run);

	/* Refused under a fault that may refuse: counted, not a failure. */
	ck_assert_msg(res->failures == 0, "%s", first_failure(run));
	ck_assert_uint_eq(res->fault_fires, 2);
	ck_assert_uint_eq(res->refused, 1);
	ck_assert_uint_eq(res->ops_ok, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST


/* ---- gather: the books of the send queues lie ---------------------------- */

/* The engine's books claim more slots held than a QP has. */
static bool poke_sq(struct poke *k, struct tv_tb_run *run, void *st)
{
	struct gw_runner *r = st;

	(void)run;
	if (!r->ready)
		return false;
	r->total.max_sq_used = 100000;
	return true;
}

START_TEST(test_gather_sq_lie)
{
	struct poke k = { .fn = poke_sq };
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_poked(
		GW_HEAD "\"gather\": {\"rows\": 512, \"row_bytes\": 64},"
		" \"batches\": [{\"node\": 0, \"count\": 16}]}", 1, &k, &sc);

	ck_assert(k.done);
	ck_assert_uint_eq(tv_tb_run_failures(run)->count, 1);
	ck_assert_int_eq(tv_tb_run_failures(run)->first, TV_TB_FK_IN_FLIGHT);
	ck_assert_str_eq(first_failure(run), "invariant: 100000 send-queue "
			 "slots held on one QP, above its depth 256");
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* A reconnect reported for a peer that is no node, or has no engine. */
static bool poke_qp_up(struct poke *k, struct tv_tb_run *run, void *st)
{
	struct gw_runner *r = st;
	struct tv_gather_event ev = { .kind = TV_GATHER_EV_QP_UP, .node = 0,
				      .qp = 0, .n = 1000 };

	(void)run;
	if (!r->ready)
		return false;
	ev.peer = r->sc->nodes + 5;
	gw_observe(&r->nodes[0], &ev);
	/* The same with a real peer is caught: the check is alive. */
	if (k->arg) {
		ev.peer = 1;
		gw_observe(&r->nodes[0], &ev);
	}
	return true;
}

START_TEST(test_gather_qp_up_stray)
{
	const char *text = GW_HEAD "\"gather\": {\"rows\": 512,"
		" \"row_bytes\": 64},"
		" \"batches\": [{\"node\": 0, \"count\": 16}]}";
	struct poke k = { .fn = poke_qp_up, .arg = 0 };
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_poked(text, 1, &k, &sc);

	ck_assert(k.done);
	ck_assert_msg(tv_tb_run_result(run)->failures == 0, "%s",
		      first_failure(run));
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);

	k = (struct poke){ .fn = poke_qp_up, .arg = 1 };
	run = run_poked(text, 1, &k, &sc);
	ck_assert_uint_eq(tv_tb_run_failures(run)->count, 1);
	ck_assert_msg(strstr(first_failure(run), "invariant: node 0's QP 0 to "
			     "node 1 may keep 1000 READs outstanding") != NULL,
		      "%s", first_failure(run));
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* More ids in a batch than a gather takes. */
START_TEST(test_gather_too_many_ids)
{
	size_t n = GW_MAX_BATCH + 1;
	char *text = malloc(128 + 2 * n), *p = text, err[TV_TB_ERR_MAX];
	struct tv_tb_scenario *sc = NULL;

	ck_assert_ptr_nonnull(text);
	p += sprintf(p, GW_HEAD "\"batches\": [{\"node\": 0, \"ids\": [");
	for (size_t i = 0; i < n; i++) {
		*p++ = '0';
		*p++ = i + 1 < n ? ',' : ']';
	}
	strcpy(p, "}]}");
	ck_assert_int_eq(tv_tb_scenario_load_string(text, "ids", &sc, err),
			 -EINVAL);
	free(text);
	ck_assert_ptr_null(sc);
	ck_assert_str_eq(err, "$.batches[0].ids: at most 1048576 ids");
}
END_TEST

/* ---- port: a trigger the proxy cannot use -------------------------------- */

/* Before the producers start, a trigger naming no memory in node 0's FIFO. */
static bool poke_bad_trigger(struct poke *k, struct tv_tb_run *run, void *st)
{
	struct pt_runner *r = st;
	struct tv_port_trigger t;
	uint64_t pos;

	(void)run;
	if (!r->win_ready || !r->nodes[0].proxy)
		return false;
	ck_assert_int_eq(tv_port_trigger_pack(TV_PORT_TRIGGER_DATA, 200, 0,
					      r->nodes[0].local_id, 0, 8,
					      0, &t), 0);
	k->arg = tv_port_fifo_try_push(tv_port_proxy_fifo(r->nodes[0].proxy),
				       &t, &pos);
	return true;
}

START_TEST(test_port_bad_trigger)
{
	struct poke k = { .fn = poke_bad_trigger };
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_poked(
		PT_HEAD "\"programs\": [{\"kind\": \"ping_pong\","
		" \"bytes\": 64, \"iters\": 2, \"flush_every\": 1}]}", 1, &k,
		&sc);
	const struct tv_tb_failures *f = tv_tb_run_failures(run);

	ck_assert(k.done);
	ck_assert_int_eq(k.arg, 0);
	ck_assert_int_eq(f->first, TV_TB_FK_RUNNER);
	ck_assert(has_failure(run, TV_TB_FK_RUNNER, "node 0's proxy refused "
			      "a trigger of ours: memory id 200 or 0 of 2"));
	/* The put's flush never completes: its task names the proxy's error. */
	ck_assert(has_failure(run, TV_TB_FK_OUTCOME, "node 0, program 0 "
			      "(ping_pong), operation 1 (put): the trigger at "
			      "FIFO position 0 is not usable: memory id 200 or "
			      "0 of 2"));
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST


/* ---- port: a proxy with more than a turn's work -------------------------- */

/*
 * The proxy stalls (port/proxy/stall, 1 ms) while the producer pushes
 * 4200 empty puts: when it wakes, 64 rounds of 64 triggers leave work,
 * and it has itself called again after the others' turns.
 */
START_TEST(test_port_proxy_backlog)
{
	enum { PUTS = 4200 };
	char *text = malloc(512 + 32 * PUTS), *p = text;
	struct tv_tb_scenario *sc;
	const struct tv_tb_result *res;
	struct tv_tb_run *run;
	const struct pt_runner *r;

	ck_assert_ptr_nonnull(text);
	p += sprintf(p, PT_HEAD "\"port\": {\"fifo_size\": 8192, \"cq_size\": "
		     "8192, \"max_write_queue\": 4096, \"op_gap_ns\": 0},"
		     " \"faults\": [{\"point\": \"port/proxy/stall\","
		     " \"nth\": 1, \"count\": 1, \"arg\": 1000000}],"
		     " \"programs\": [{\"kind\": \"sequence\", \"from\": 0,"
		     " \"to\": 1, \"bytes\": 8, \"ops\": [");
	for (int i = 0; i < PUTS; i++)
		p += sprintf(p, "%s{\"op\": \"put\", \"bytes\": 0}",
			     i ? "," : "");
	strcpy(p, "]}]}");
	run = run_scenario_text(text, 1, NULL, &sc);
	free(text);
	r = run->wl;
	res = tv_tb_run_result(run);
	ck_assert_msg(res->failures == 0, "%s", first_failure(run));
	ck_assert_uint_eq(res->fault_fires, 1);
	/* The fill and every put, each handled once by the proxy. */
	ck_assert_uint_eq(res->ops, PUTS + 1);
	ck_assert_uint_eq(res->ops_ok, PUTS + 1);
	ck_assert_uint_eq(r->proxy_total.triggers, PUTS);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- port: swarm's latency deadlines ------------------------------------- */

/*
 * Seed 601 draws a slow link between nodes 0 and 1 (no latency seed, no
 * fault that delays): a sequence from node 1 to node 3 names no "nodes"
 * but from and to, away from the slow pair, so it gets the tight
 * deadline; the all-to-all over every node keeps the default.
 */
START_TEST(test_port_swarm_slow_pair)
{
	json_t *sc, *progs, *seq;

	ck_assert_int_eq(tv_tb_swarm_generate(601, 0, "port", &sc), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(
		json_object_get(sc, "links"), 0), "latency_ns")), 688398);
	progs = json_object_get(sc, "programs");
	ck_assert_uint_eq(json_array_size(progs), 3);
	seq = json_array_get(progs, 0);
	ck_assert_str_eq(json_string_value(json_object_get(seq, "kind")),
			 "sequence");
	ck_assert_ptr_null(json_object_get(seq, "nodes"));
	ck_assert_int_eq(json_integer_value(json_object_get(seq, "from")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(seq, "to")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(seq, "timeout_ns")),
			 300000);
	ck_assert_ptr_null(json_object_get(json_array_get(progs, 2),
					   "timeout_ns"));
	json_decref(sc);
}
END_TEST

/* One case a test: CK_RUN_CASE=test_... runs one. */
#define ADD(t) do { tc = tcase_create(#t); tcase_set_timeout(tc, 120); \
		    tcase_add_test(tc, t); suite_add_tcase(s, tc); } while (0)

static Suite *suite(void)
{
	Suite *s = suite_create("wl_port_gather_cov");
	TCase *tc;

	ADD(test_port_refused);
	ADD(test_port_nodes_too_many);
	tc = tcase_create("test_port_op_limit");
	tcase_set_timeout(tc, 240);
	tcase_add_loop_test(tc, test_port_op_limit, 0,
			    (int)(sizeof(limits) / sizeof(limits[0])));
	suite_add_tcase(s, tc);
	ADD(test_port_empty_programs);
	ADD(test_port_names);
	ADD(test_port_edits);
	ADD(test_port_show_conn_error);
	ADD(test_gather_refused);
	ADD(test_gather_edits);
	ADD(test_gather_id_out_of_range);
	ADD(test_port_recycle_drawn);
	ADD(test_port_stray_post);
	ADD(test_gather_crash_queued);
	ADD(test_gather_crash_lost);
	ADD(test_gather_deadline_in_flight);
	ADD(test_gather_rereg_refused);
	ADD(test_gather_sq_lie);
	ADD(test_gather_qp_up_stray);
	ADD(test_port_swarm_slow_pair);
	ADD(test_port_proxy_backlog);
	ADD(test_gather_too_many_ids);
	ADD(test_port_bad_trigger);
	return s;
}

int main(void)
{
	return tv_check_main(suite());
}
