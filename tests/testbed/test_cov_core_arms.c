/*
 * The arms of the testbed core on the simulator side (issue 24) no other
 * suite takes: the run's summary (two points fired, corruption with none
 * injected, no wall time, no workload state, a workload without summary
 * lines), expect_corruption and expect_faults exceeded, a verbose fault
 * line of no node, simulator events of kinds this build does not name,
 * a failure whose text was lost and more failures than kept, JUnit text
 * with a carriage return and no names, a window wholly past another,
 * replays of a trace that ends early or names a breakage its workload
 * lacks, drawings of hand-made traces (odd values, notes and labels of a
 * workload's own drawing, requests, no summary), and a leaf's abort that
 * cannot be flushed, nor its close's last words.  Two regressions: a
 * fault summary without workload state, a close behind a handshake.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include <tensorverbs/faults.h>
#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "common/coord_peer.h"
#include "common/poke.h"
#include "common/tb_files.h"
#include "coord.h"
#include "run_int.h"
#include "tb_int.h"

static const char basic[] =
	"{\"name\": \"b\", \"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0,"
	" \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}],"
	" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]}";

/* basic with a delivery the simulator delays (1 fire). */
static const char delayed[] =
	"{\"name\": \"d\", \"nodes\": 2, \"faults\": [{\"point\": "
	"\"sim/deliver/delay\", \"nth\": 1, \"count\": 1}],"
	" \"steps\": [{\"sends\": [{\"from\": 0,"
	" \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}],"
	" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]}";

static void assert_has(const char *text, const char *part)
{
	ck_assert_msg(strstr(text, part) != NULL, "'%.600s' lacks '%s'", text,
		      part);
}

static void assert_lacks(const char *text, const char *part)
{
	ck_assert_msg(strstr(text, part) == NULL, "'%.600s' has '%s'", text,
		      part);
}

/* ---- summary.c ------------------------------------------------------------ */

/*
 * Two points fired (a comma between them), corruption undetected though
 * none was injected (validation on), no wall time (rate 0).
 */
START_TEST(test_summary_odd_results)
{
	const struct tv_flt_point_info *pts;
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	char want[256], *s;
	size_t n;

	pts = tv_flt_points(&n);
	ck_assert_uint_ge(n, 2);
	run = run_scenario_text(delayed, 3, NULL, &sc);
	ck_assert(tv_tb_scenario_has_faults(sc));
	memset(run->res.point_fires, 0, sizeof(run->res.point_fires));
	run->res.point_fires[0] = 2;
	run->res.point_fires[1] = 3;
	run->res.fault_fires = 5;
	run->res.corrupt_fires = 0;
	run->res.corrupt_undetected = 1;
	run->res.validated = true;
	run->res.wall_ns = 0;
	s = run_summary_text(run);
	snprintf(want, sizeof(want), "faults      5 fired: %s x2, %s x3\n",
		 pts[0].name, pts[1].name);
	assert_has(s, want);
	assert_has(s, "corruption  0 injected, 0 detected (checksum or "
		   "decoder), 1 undetected: delivered as ok with flipped "
		   "bytes (validation on)\n");
	assert_has(s, "sim events in 0 ns wall (0.0 events/s)\n");
	free(s);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* No workload state (its set-up failed): no workload lines, the rest. */
START_TEST(test_summary_no_state)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	char *s, *full;
	void *wl;

	run = run_scenario_text(basic, 3, NULL, &sc);
	full = run_summary_text(run);
	assert_has(full, "\nworld       2 nodes");
	wl = run->wl;
	run->wl = NULL;
	s = run_summary_text(run);
	run->wl = wl;
	ck_assert_msg(!strncmp(s, "scenario    b (cov)\nseed        3\ntime"
			       "        ", 44), "%s", s);
	assert_lacks(s, "world");
	free(s);
	free(full);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

static int setup_refused(struct tv_tb_run *run, void **state_p)
{
	(void)run;
	(void)state_p;
	return -EIO;     /* before it made any state */
}

/*
 * Regression: a run whose workload set-up failed before making its state
 * (run->wl NULL, a legal run: test_toy_setup_error) under a fault plan:
 * tv_tb_run_print_summary() guarded the workload's MAIN summary with
 * run->wl but print_faults() called ops->summary(run, NULL, FAULTS), and
 * rendezvous's summary_faults() dereferenced the NULL state (SIGSEGV in
 * `tensorverbs run`'s report).
 */
START_TEST(test_summary_faults_without_state)
{
	struct tv_tb_workload_ops ops = *tv_tb_workload_find("rendezvous");
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	char *s;

	ops.setup = setup_refused;
	run = run_scenario_ops(delayed, 3, &ops, &sc);
	ck_assert_ptr_null(run->wl);
	s = run_summary_text(run);
	assert_has(s, "faults      0 fired\n");
	free(s);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* A workload without summary lines: no crash line when none crashed. */
START_TEST(test_summary_no_workload_lines)
{
	struct tv_tb_workload_ops ops = *tv_tb_workload_find("rendezvous");
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	char *s;

	ops.summary = NULL;
	run = run_scenario_ops(delayed, 3, &ops, &sc);
	ck_assert_uint_eq(run->res.crashes, 0);
	s = run_summary_text(run);
	assert_has(s, "faults      1 fired: sim/deliver/delay x1\n");
	assert_lacks(s, "crashes");
	assert_has(s, "\ntime        ");
	free(s);
	run->res.crashes = 1;
	s = run_summary_text(run);
	assert_has(s, "crashes     1 crashes, 0 restarts (0 failed), 0 "
		   "operations skipped (node down)\n");
	free(s);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- run_faults.c ---------------------------------------------------------- */

static const char *const corrupt_cases[][2] = {
	/* Detected more often than expected (validation on). */
	{ "{\"name\": \"c1\", \"nodes\": 2, \"engine\": {\"validate_checksum\":"
	  " true}, \"faults\": [{\"point\": \"vf/write/corrupt\", \"nth\": 1,"
	  " \"count\": 1}], \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1,"
	  " \"name\": \"w\", \"dtype\": \"float\", \"shape\": [64]}],"
	  " \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"w\", \"expect\":"
	  " {\"error\": \"DATA_LOSS\"}}]}],"
	  " \"expect_corruption\": {\"detected\": 0, \"undetected\": 0}}",
	  "expect_corruption detected: 1, expected 0..0 (1 corruptions fired)" },
	/* Undetected more often than expected (validation off). */
	{ "{\"name\": \"c2\", \"nodes\": 2, \"faults\": [{\"point\":"
	  " \"vf/write/corrupt\", \"nth\": 1, \"count\": 1}], \"steps\":"
	  " [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"w\", \"dtype\":"
	  " \"float\", \"shape\": [64]}], \"recvs\": [{\"node\": 1, \"from\":"
	  " 0, \"name\": \"w\"}]}],"
	  " \"expect_corruption\": {\"detected\": 0, \"undetected\": 0}}",
	  "expect_corruption undetected: 1, expected 0..0 (1 corruptions "
	  "fired)" },
	/* A point that fired more often than expect_faults allows. */
	{ "{\"name\": \"c3\", \"nodes\": 2, \"faults\": [{\"point\":"
	  " \"sim/deliver/delay\", \"nth\": 1, \"count\": 1}], \"steps\":"
	  " [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"w\", \"dtype\":"
	  " \"float\", \"shape\": [64]}], \"recvs\": [{\"node\": 1, \"from\":"
	  " 0, \"name\": \"w\"}]}],"
	  " \"expect_faults\": {\"sim/deliver/delay\": 0}}",
	  "expect_faults sim/deliver/delay: fired 1 times, expected 0..0" },
};

/* Each scenario fails its expectation, named with the counts. */
START_TEST(test_expectations_exceeded)
{
	for (size_t i = 0; i < sizeof(corrupt_cases) / sizeof(corrupt_cases[0]);
	     i++) {
		struct tv_tb_scenario *sc;
		struct tv_tb_run *run;
		const struct tv_tb_failures *f;
		bool seen = false;

		run = run_scenario_text(corrupt_cases[i][0], 5, NULL, &sc);
		f = tv_tb_run_failures(run);
		for (size_t k = 0; k < f->count && k < TV_TB_FAILURES_KEPT; k++)
			seen |= f->msgs[k] && !strcmp(f->msgs[k],
						      corrupt_cases[i][1]);
		ck_assert_msg(seen, "case %zu: first failure '%s'", i,
			      first_failure(run));
		ck_assert(f->kinds & (1u << TV_TB_FK_EXPECT));
		tv_tb_run_free(run);
		tv_tb_scenario_free(sc);
	}
}
END_TEST

/*
 * --verbose prints each firing with the node whose code ran: a CQ that
 * overflows as the simulator delivers runs no node's code (-1).
 */
START_TEST(test_verbose_fault_outside_node)
{
	static const char text[] =
		"{\"name\": \"v\", \"nodes\": 2, \"faults\": [{\"point\":"
		" \"sim/cq/overflow\", \"nth\": 1, \"count\": 1}], \"steps\":"
		" [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"w\","
		" \"dtype\": \"float\", \"shape\": [64]}], \"recvs\": [{\"node\":"
		" 1, \"from\": 0, \"name\": \"w\"}]}]}";
	struct tv_tb_scenario *sc;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char err[TV_TB_ERR_MAX], path[256], *out;
	int saved;

	mk_tmpdir();
	ck_assert_msg(tv_tb_scenario_load_string(text, "v", &sc, err) == 0,
		      "%s", err);
	tv_tb_run_opts_init(&o, sc);
	o.seed = 9;
	o.verbose = true;
	tmp_path(path, sizeof(path), "verbose.txt");
	saved = stdout_to(path);
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	stdout_back(saved);
	out = read_all(path);
	assert_has(out, "fault  sim/cq/overflow hit 1 (node -1)\n");
	free(out);
	ck_assert_uint_eq(tv_tb_run_result(run)->fault_fires, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
	rm_tmpdir();
}
END_TEST

/* ---- check.c, failures.c, trace.c, report.c: what a run says --------------- */

/* Events of a kind this build has no name for print as "?" (verbose). */
START_TEST(test_check_unnamed_kinds)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	struct tv_sim_event ev = { .peer = UINT32_MAX };
	char path[256], *out;
	int saved;

	mk_tmpdir();
	run = run_scenario_text(basic, 1, NULL, &sc);
	run->opts.verbose = true;
	tmp_path(path, sizeof(path), "kinds.txt");
	saved = stdout_to(path);
	ev.kind = 0;          /* below the first kind: no name */
	ev.node = 1;
	tb_check_sim_event(run, &ev);
	ev.kind = 200;        /* past the table */
	ev.node = 0;
	tb_check_sim_event(run, &ev);
	stdout_back(saved);
	out = read_all(path);
	assert_has(out, "sim    node 1 peer -1 ?         op=0 st=0 addr=0x0");
	assert_has(out, "sim    node 0 peer -1 ?         op=0 st=0 addr=0x0");
	ck_assert_int_eq(count_lines(out), 2);
	free(out);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
	rm_tmpdir();
}
END_TEST

/*
 * A failure whose text could not be kept (vasprintf failed: NULL) prints
 * as "?", goes into a trace's summary as "?", and into the result JSON as
 * null; past TV_TB_FAILURES_KEPT the texts stop and the JSON lists the
 * kept ones only.
 */
START_TEST(test_failure_text_lost)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	struct tb_rec rec;
	json_t *sum, *res;
	char *buf = NULL, *msg;
	size_t len = 0;
	FILE *out;

	run = run_scenario_text(basic, 1, NULL, &sc);
	ck_assert_uint_eq(run->fails.count, 0);
	for (int i = 0; i < TV_TB_FAILURES_KEPT + 2; i++)
		tv_tb_fail(run, TV_TB_FK_EXPECT, "failure %d", i);
	msg = run->fails.msgs[0];
	run->fails.msgs[0] = NULL;

	out = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(out);
	tv_tb_failures_print(&run->fails, out);
	ck_assert_int_eq(fclose(out), 0);
	ck_assert_msg(!strncmp(buf, "FAIL: ?\nFAIL: failure 1\n", 24), "%s",
		      buf);
	assert_has(buf, "FAIL: ... and 2 more\n");
	free(buf);

	tb_rec_init(&rec, NULL, NULL);
	ck_assert_int_eq(tb_trace_summary_new(&rec, run, &sum), 0);
	ck_assert_str_eq(json_string_value(json_array_get(
		json_object_get(sum, "failures"), 0)), "?");
	ck_assert_uint_eq(json_array_size(json_object_get(sum, "failures")),
			  TV_TB_FAILURES_KEPT);
	json_decref(sum);
	tb_rec_fini(&rec);

	res = tv_tb_run_result_json(run, NULL);
	ck_assert_ptr_nonnull(res);
	sum = json_object_get(res, "failures");
	ck_assert_uint_eq(json_array_size(sum), TV_TB_FAILURES_KEPT);
	ck_assert(json_is_null(json_object_get(json_array_get(sum, 0),
					       "message")));
	ck_assert_str_eq(json_string_value(json_object_get(
		json_array_get(sum, 1), "message")), "failure 1");
	json_decref(res);

	run->fails.msgs[0] = msg;
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* JUnit: a carriage return is kept, other controls go; no names: empty. */
START_TEST(test_junit_cr_and_no_names)
{
	const struct tv_tb_junit_case cases[] = {
		{ .classname = NULL, .name = NULL, .time_s = 0.5,
		  .failure = "line one\r\nline\x01 two", .type = "hang",
		  .text = "a\tb" },
	};
	char path[256], *xml;

	mk_tmpdir();
	tmp_path(path, sizeof(path), "j.xml");
	ck_assert_int_eq(tv_tb_junit_write(path, NULL, cases, 1), 0);
	xml = read_all(path);
	assert_has(xml, "<testsuite name=\"\" tests=\"1\" failures=\"1\"");
	assert_has(xml, "<testcase classname=\"\" name=\"\" time=\"0.500\">");
	assert_has(xml, "<failure message=\"line one\r\nline two\" "
		   "type=\"hang\">a\tb</failure>");
	free(xml);
	rm_tmpdir();
}
END_TEST

/* ---- windows.c --------------------------------------------------------------- */

/* A window with the rkey, opened after e was done, but wholly past e. */
START_TEST(test_windows_reused_disjoint)
{
	struct tv_tb_windows *w;
	struct tv_tb_window o = { .addr = 100, .length = 10, .rkey = 5,
				  .open_seq = 10 };
	struct tv_tb_window e = { .addr = 200, .length = 10, .rkey = 5,
				  .done = true, .done_seq = 5 };
	struct tv_tb_window before = { .addr = 50, .length = 10, .rkey = 5,
				       .done = true, .done_seq = 5 };
	uint32_t idx = 77;

	ck_assert_int_eq(tv_tb_windows_create(2, &w), 0);
	ck_assert_int_eq(tv_tb_windows_open(w, 0, 1, 3, &o), 0);
	ck_assert_ptr_null(tv_tb_windows_reused(w, 0, &e, &idx));
	ck_assert_ptr_null(tv_tb_windows_reused(w, 0, &before, &idx));
	ck_assert_uint_eq(idx, 77);
	e.addr = 105;
	ck_assert_ptr_eq(tv_tb_windows_reused(w, 0, &e, &idx),
			 tv_tb_windows_find(w, 0, 1, 3));
	ck_assert_uint_eq(idx, 3);
	tv_tb_windows_destroy(w);
}
END_TEST

/* ---- replay.c ------------------------------------------------------------------ */

/* path's text with line n (0-based) dropped. */
static void drop_line(const char *path, int n)
{
	char *text = read_all(path), *out = edit_lines(text, n, NULL, NULL);

	write_file(path, out);
	free(out);
	free(text);
}

/*
 * A trace whose last event was cut out: the summary comes where the run
 * still has an event.  Diverged there, the recorded summary against the
 * new event (not a summary-only difference).
 */
START_TEST(test_replay_summary_early)
{
	struct tv_tb_replay_report rep;
	char path[256], *text;
	int n;

	mk_tmpdir();
	trace_text(basic, "early.jsonl", 4, NULL, path, sizeof(path));
	text = read_all(path);
	n = count_lines(text);
	free(text);
	drop_line(path, n - 2);
	memset(&rep, 0, sizeof(rep));
	ck_assert_int_eq(tv_tb_replay(path, &rep), 0);
	ck_assert_int_eq(rep.state, TV_TB_REPLAY_DIVERGED);
	ck_assert_uint_eq(rep.events, (uint64_t)n - 3);
	ck_assert_uint_eq(rep.line, (uint64_t)n - 1);
	ck_assert(!rep.summary_only);
	ck_assert_ptr_nonnull(rep.expected);
	ck_assert_ptr_nonnull(rep.actual);
	ck_assert_msg(!strncmp(rep.expected, "{\"summary\":true", 15), "%s",
		      rep.expected);
	ck_assert_msg(!strncmp(rep.actual, "{\"i\":", 5), "%s", rep.actual);
	assert_has(rep.diff, "summary");
	tv_tb_replay_report_free(&rep);
	rm_tmpdir();
}
END_TEST

/* rendezvous's ops under another name, without breakages. */
static struct tv_tb_workload_ops nobreak_ops;

static void register_nobreak(void)
{
	if (tv_tb_workload_find("corenobreak"))
		return;
	nobreak_ops = *tv_tb_workload_find("rendezvous");
	nobreak_ops.name = "corenobreak";
	nobreak_ops.breakages = NULL;
	ck_assert_int_eq(tv_tb_workload_register(&nobreak_ops), 0);
}

/*
 * A trace's header names a breakage this build knows (rendezvous's) for
 * a workload that has none at all: refused, naming the workload.
 */
START_TEST(test_replay_breakage_of_no_workload)
{
	static const char text[] =
		"{\"workload\": \"corenobreak\", \"name\": \"nb\", \"nodes\": 2,"
		" \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\":"
		" \"t\", \"dtype\": \"float\", \"shape\": [8]}], \"recvs\":"
		" [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]}";
	char path[256], *trace, *hdr, *out, *l0;
	json_t *h;

	mk_tmpdir();
	register_nobreak();
	trace_text(text, "nb.jsonl", 2, NULL, path, sizeof(path));
	replay_expect(path, TV_TB_REPLAY_SAME, NULL);
	trace = read_all(path);
	l0 = line_of(trace, 0);
	h = json_loads(l0, 0, NULL);
	free(l0);
	ck_assert_ptr_nonnull(h);
	json_object_set_new(h, "test_breakage", json_string("no-ack-timeout"));
	hdr = json_dumps(h, JSON_COMPACT);
	out = edit_lines(trace, 0, hdr, NULL);
	write_file(path, out);
	replay_expect(path, TV_TB_REPLAY_MALFORMED,
		      "header: \"test_breakage\" 'no-ack-timeout' is not "
		      "workload corenobreak's");
	free(out);
	free(hdr);
	json_decref(h);
	free(trace);
	rm_tmpdir();
}
END_TEST

/* ---- show.c, show_svg.c, show_chrome.c: drawings of hand-made traces ----------- */

/*
 * A workload whose drawing labels a write with a width and a style its
 * legend lacks, and notes in the error red; no Chrome events of its own
 * (the default drawing).  Another draws nothing of its own events.
 */
static const struct tv_tb_draw_style draw_styles[] = {
	{ "#123456", "the only style" },
};

static void draw_svg(const struct tv_tb_show_event *e, struct tv_tb_svg_mark *m)
{
	if (!strcmp(e->kind, "LBL")) {
		m->kind = TV_TB_MARK_LABEL;
		m->style = 5;
		m->width = 2.5;
		snprintf(m->text, sizeof(m->text), "labelled");
	} else if (!strcmp(e->kind, "LBL0")) {
		m->kind = TV_TB_MARK_LABEL;
		m->style = 0;
		snprintf(m->text, sizeof(m->text), "plain label");
	} else if (!strcmp(e->kind, "NOTE")) {
		m->kind = TV_TB_MARK_NOTE;
		m->style = -1;
		snprintf(m->text, sizeof(m->text), "a note");
	}
}

/* Chrome: BEG and END open and close a request keyed by len. */
static void draw_chrome(struct tv_tb_chrome *c, const struct tv_tb_show_event *e)
{
	if (!strcmp(e->kind, "BEG"))
		tv_tb_chrome_async_begin(c, e, 1, e->len, "req");
	else if (!strcmp(e->kind, "END"))
		tv_tb_chrome_async_end(c, e, e->len);
	else
		tv_tb_chrome_instant(c, e, 1, "event", e->kind, false);
}

static const char *const draw_threads[] = { NULL, "work" };
static const struct tv_tb_draw draw_own = {
	.styles = draw_styles, .nstyles = 1, .svg_event = draw_svg,
	.threads = draw_threads, .nthreads = 2, .verbs_tid = 1,
	.chrome_event = draw_chrome,
};
static const struct tv_tb_draw draw_none = {
	.styles = draw_styles, .nstyles = 1,
};
static struct tv_tb_workload_ops draw_ops, plain_ops;

static void register_drawers(void)
{
	if (tv_tb_workload_find("coredraw"))
		return;
	draw_ops = *tv_tb_workload_find("rendezvous");
	draw_ops.name = "coredraw";
	draw_ops.event_src = "coredraw";
	draw_ops.show_parse = NULL;
	draw_ops.draw = &draw_own;
	ck_assert_int_eq(tv_tb_workload_register(&draw_ops), 0);
	plain_ops = draw_ops;
	plain_ops.name = "coreplain";
	plain_ops.event_src = "coreplain";
	plain_ops.draw = &draw_none;
	ck_assert_int_eq(tv_tb_workload_register(&plain_ops), 0);
}

#define HAND_HDR(wl, nodes) \
	"{\"tensorverbs_trace\":1,\"seed\":7,\"scenario\":{\"workload\":\"" \
	wl "\",\"name\":\"hand\",\"nodes\":" nodes "},\"plan\":null," \
	"\"build_id\":\"x\"}\n"
#define SIM(i, t, rest) \
	"{\"i\":" #i ",\"t\":" #t ",\"src\":\"sim\"," rest "}\n"
#define CQE_ERR(i, t, node) \
	SIM(i, t, "\"kind\":\"CQE\",\"node\":" #node ",\"qpn\":256," \
	    "\"op\":\"RDMA_WRITE\",\"status\":\"REM_ACCESS_ERR\"")

/*
 * A header whose node count is past the limit (the events say how many),
 * an error completion first of all, a workload that draws none of its
 * events in the SVG and has no Chrome events of its own.
 */
static const char plain_trace[] =
	HAND_HDR("coreplain", "1000")
	CQE_ERR(0, 0, 1)
	"{\"i\":1,\"t\":0,\"src\":\"coreplain\",\"kind\":\"STEP\",\"node\":0,"
	"\"status\":\"OK\"}\n"
	"{\"summary\":true,\"result\":\"FAIL\"}\n";

/* No summary line: the result is unknown ("?"). */
static const char hand_trace[] =
	HAND_HDR("coredraw", "2")
	SIM(0, 0, "\"kind\":\"QP_STATE\",\"node\":0,\"qpn\":256,\"state\":\"INIT\"")
	/* A QP note at another time than the one before: not merged. */
	SIM(1, 10, "\"kind\":\"QP_STATE\",\"node\":0,\"qpn\":256,\"state\":\"RTR\"")
	CQE_ERR(2, 10, 0)              /* after a QP note */
	/* A post to no peer; a wr_id that is no number. */
	SIM(3, 20, "\"kind\":\"POST_SEND\",\"node\":0,\"wr_id\":\"zz\"")
	SIM(4, 20, "\"kind\":\"POST_SEND\",\"node\":0,\"peer\":null")
	SIM(5, 20, "\"kind\":\"POST_SEND\",\"node\":0,\"peer\":1,\"len\":8")
	CQE_ERR(6, 20, 1)              /* after a post */
	"{\"i\":7,\"t\":20,\"src\":\"coredraw\",\"kind\":\"LBL\",\"node\":0,"
	"\"peer\":1}\n"
	SIM(19, 21, "\"kind\":\"POST_SEND\",\"node\":1,\"peer\":0,\"len\":8")
	"{\"i\":20,\"t\":21,\"src\":\"coredraw\",\"kind\":\"LBL0\",\"node\":1}\n"
	/* Requests: another peer, another key, then one ends. */
	"{\"i\":21,\"t\":22,\"src\":\"coredraw\",\"kind\":\"BEG\",\"node\":0,"
	"\"peer\":1,\"len\":1}\n"
	"{\"i\":22,\"t\":22,\"src\":\"coredraw\",\"kind\":\"BEG\",\"node\":0,"
	"\"peer\":2,\"len\":1}\n"
	"{\"i\":23,\"t\":22,\"src\":\"coredraw\",\"kind\":\"BEG\",\"node\":0,"
	"\"peer\":1,\"len\":2}\n"
	"{\"i\":24,\"t\":22,\"src\":\"coredraw\",\"kind\":\"END\",\"node\":0,"
	"\"peer\":1,\"len\":2}\n"
	"{\"i\":25,\"t\":22,\"src\":\"coredraw\",\"kind\":\"BEG\",\"node\":1,"
	"\"peer\":0,\"len\":1}\n"
	CQE_ERR(8, 30, 1)
	CQE_ERR(9, 30, 1)              /* the same: counted */
	CQE_ERR(10, 30, 0)             /* another lane */
	CQE_ERR(11, 31, 0)             /* another time */
	SIM(12, 31, "\"kind\":\"RNR\",\"node\":0,\"peer\":1")  /* another text */
	"{\"i\":13,\"t\":31,\"src\":\"coredraw\",\"kind\":\"NOTE\",\"node\":1}\n"
	CQE_ERR(14, 32, 1)
	"{\"i\":15,\"t\":32,\"src\":\"coredraw\",\"kind\":\"NOTE\",\"node\":1}\n"
	CQE_ERR(16, 33, 1)
	CQE_ERR(17, 33, 0)
	/* A node's life: no hit, no name, a time that is not one. */
	"{\"i\":18,\"t\":-5,\"src\":\"node\",\"kind\":\"CRASH\",\"node\":1}\n";

static void show_hand(const char *text, const char *name, char *svg,
		      char *chrome)
{
	struct tv_tb_show_opts o = { .first = 0, .last = UINT64_MAX };
	char path[256], spath[256], cpath[256], err[512] = "";

	tmp_path(path, sizeof(path), name);
	write_file(path, text);
	tmp_path(spath, sizeof(spath), "hand.svg");
	tmp_path(cpath, sizeof(cpath), "hand.json");
	o.svg_path = spath;
	o.chrome_path = cpath;
	ck_assert_msg(tv_tb_show(path, &o, err, sizeof(err)) == 0, "%s", err);
	strcpy(svg, spath);
	strcpy(chrome, cpath);
}

START_TEST(test_show_plain_workload)
{
	char spath[256], cpath[256], *svg, *chrome;

	mk_tmpdir();
	register_drawers();
	show_hand(plain_trace, "plain.jsonl", spath, cpath);
	svg = read_all(spath);
	assert_has(svg, "seed 7, result FAIL, 1 drawn rows");
	assert_has(svg, "CQE REM_ACCESS_ERR (RDMA_WRITE)");
	free(svg);
	chrome = read_all(cpath);
	assert_has(chrome, "\"process_name\",\"pid\":1,");
	assert_lacks(chrome, "\"pid\":2,");
	assert_has(chrome, "\"cat\":\"event\",\"name\":\"STEP\"");
	free(chrome);
	rm_tmpdir();
}
END_TEST

START_TEST(test_show_hand_trace)
{
	char spath[256], cpath[256], *svg, *chrome;
	json_t *cj;

	mk_tmpdir();
	register_drawers();
	show_hand(hand_trace, "hand.jsonl", spath, cpath);
	svg = read_all(spath);
	assert_has(svg, "seed 7, result ?, ");
	assert_has(svg, "QP 256 -&gt; INIT");
	assert_has(svg, "QP 256 -&gt; RTR");
	assert_has(svg, "labelled");
	assert_has(svg, "stroke-width=\"2.5\"");
	assert_has(svg, "CRASH ");
	assert_has(svg, "RNR from node 1");
	assert_has(svg, "a note");
	free(svg);
	chrome = read_all(cpath);
	cj = json_loads(chrome, 0, NULL);
	ck_assert_msg(cj != NULL, "%.400s", chrome);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(
		cj, "otherData"), "result")), "?");
	assert_has(chrome, "\"name\":\"CRASH\"");
	assert_has(chrome, "\"name\":\"thread_name\"");
	assert_has(chrome, "\"ph\":\"e\"");
	json_decref(cj);
	free(chrome);
	rm_tmpdir();
}
END_TEST

/* ---- coord.c, peers.c: the coordinator ---------------------------------------- */

/* A loopback listener on a free port, with the backlog given. */
static int listener(uint16_t *port_p, int backlog)
{
	struct sockaddr_storage a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	*port_p = free_port();
	a = addr_of(*port_p);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a,
			      sizeof(struct sockaddr_in)), 0);
	ck_assert_int_eq(listen(fd, backlog), 0);
	return fd;
}

/*
 * Node 1 of 2 whose connection to node 0 stays in its handshake: node 0
 * listens with its backlog full (one connection nobody accepts).
 */
static struct tv_tb_peers *stuck_leaf(int *lfd_p, int *filler_p)
{
	struct sockaddr_storage a;
	struct tv_tb_peers *p;
	struct pollfd pfd;
	char msg[256] = "";
	uint16_t port;

	*lfd_p = listener(&port, 0);
	a = addr_of(port);
	*filler_p = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			   0);
	ck_assert_int_ge(*filler_p, 0);
	ck_assert(connect(*filler_p, (struct sockaddr *)&a,
			  sizeof(struct sockaddr_in)) == 0 ||
		  errno == EINPROGRESS);
	pfd = (struct pollfd){ .fd = *filler_p, .events = POLLOUT };
	ck_assert_int_eq(poll(&pfd, 1, 2000), 1);  /* the backlog is full */
	ck_assert_int_eq(tv_tb_peers_open(1, 2, &a, FP, WAIT_NS, &p, msg,
					  sizeof(msg)), 0);
	ck_assert_int_eq(tv_tb_peers_poll(p), 0);   /* connecting, HELLO queued */
	return p;
}

/*
 * The leaf aborts while its connection is still being made: the ABORT
 * cannot go out, and the flush gives up after its second rather than
 * waiting for it.
 */
START_TEST(test_peers_abort_unflushed)
{
	struct tv_tb_peers *p;
	uint64_t t0, waited;
	int lfd, filler;

	p = stuck_leaf(&lfd, &filler);
	t0 = mono_ns();
	tv_tb_peers_abort(p, "gave up");
	waited = mono_ns() - t0;
	ck_assert_msg(waited >= 900000000ull && waited < 3000000000ull,
		      "waited %" PRIu64 " ns", waited);
	ck_assert_int_eq(tv_tb_peers_poll(p), -ECANCELED);
	ck_assert_str_eq(tv_tb_peers_error(p), "node 1: gave up");
	tv_tb_peers_close(p); /* a second more: test_peers_close_waits_a_second */
	close(filler);
	close(lfd);
}
END_TEST

/*
 * Regression: closing a leaf whose output is still queued made its socket
 * blocking and wrote (coord_fini(): "whatever is queued still goes
 * out"), with no time limit: behind a handshake node 0 does not answer
 * (its backlog full), tv_tb_peers_close() (and serve's end) hung until
 * TCP gave up, about two minutes (forever for a node 0 that stopped
 * reading with its buffers full).  The last words now get a second.
 */
START_TEST(test_peers_close_waits_a_second)
{
	struct tv_tb_peers *p;
	uint64_t t0;
	int lfd, filler;

	p = stuck_leaf(&lfd, &filler);
	tv_tb_peers_abort(p, "gave up");
	t0 = mono_ns();
	tv_tb_peers_close(p);
	ck_assert_uint_lt(mono_ns() - t0, 2000000000ull);
	close(filler);
	close(lfd);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cov_core_arms");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_summary_odd_results);
	tcase_add_test(tc, test_summary_no_state);
	tcase_add_test(tc, test_summary_no_workload_lines);
	tcase_add_test(tc, test_summary_faults_without_state);
	tcase_add_test(tc, test_expectations_exceeded);
	tcase_add_test(tc, test_verbose_fault_outside_node);
	tcase_add_test(tc, test_check_unnamed_kinds);
	tcase_add_test(tc, test_failure_text_lost);
	tcase_add_test(tc, test_junit_cr_and_no_names);
	tcase_add_test(tc, test_windows_reused_disjoint);
	tcase_add_test(tc, test_replay_summary_early);
	tcase_add_test(tc, test_replay_breakage_of_no_workload);
	tcase_add_test(tc, test_show_plain_workload);
	tcase_add_test(tc, test_show_hand_trace);
	tcase_add_test(tc, test_peers_abort_unflushed);
	tcase_add_test(tc, test_peers_close_waits_a_second);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(suite());
}
