/*
 * The arms no other suite takes in replay --sim (testbed/replay_sim.c),
 * the swarm (testbed/swarm.c) and the trace writer and reader
 * (testbed/trace.c): recordings edited by hand into shapes a real run
 * never writes (a POLL whose "cq" is a string, a line without "kind", a
 * firing whose "node_hit" is not a number, summaries without their keys),
 * trace headers wrong in one field each, and a swarm whose workers die of
 * SIGALRM, whose forks fail and whose children are reaped by the kernel.
 */

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <tensorverbs/faults.h>
#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "common/tb_files.h"
#include "tb_int.h"

#define RV_STEPS "\"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}], \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]"

static const char basic[] = "{\"name\": \"b\", \"nodes\": 2, " RV_STEPS "}";
static const char ack_drop[] =
	"{\"nodes\": 2, \"faults\": [{\"point\": \"vf/ack/drop\", \"count\": 1}], " RV_STEPS "}";
static const char wrong_shape[] =
	"{\"name\": \"neg-wrong-shape\", \"nodes\": 2,"
	" \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [4, 4]}],"
	" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"shape\": [4, 5]}}]}]}";

/* ---- recordings as arrays of lines ---------------------------------------- */

/* Every line of a recording (header, events, summary), parsed. */
static json_t *load_lines(const char *path)
{
	char *text = read_all(path), *p = text, *e;
	json_t *arr = json_array(), *l;

	ck_assert_ptr_nonnull(arr);
	for (; *p; p = e + 1) {
		e = strchr(p, '\n');
		ck_assert_ptr_nonnull(e);
		*e = '\0';
		l = json_loads(p, 0, NULL);
		ck_assert_ptr_nonnull(l);
		ck_assert_int_eq(json_array_append_new(arr, l), 0);
	}
	free(text);
	return arr;
}

/* arr written as a recording at tmpdir/name (path). */
static void save_lines(json_t *arr, const char *name, char *path, size_t cap)
{
	FILE *f;
	json_t *l;
	size_t i;

	tmp_path(path, cap, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	json_array_foreach(arr, i, l)
		ck_assert_int_eq(tb_trace_write_line(f, l), 0);
	ck_assert_int_eq(fclose(f), 0);
}

/* The line whose "i" is ev (events only), or -1. */
static long line_of_event(json_t *arr, json_int_t ev)
{
	json_t *l;
	size_t i;

	json_array_foreach(arr, i, l)
		if (tb_trace_is_event(l) &&
		    json_integer_value(json_object_get(l, "i")) == ev)
			return (long)i;
	return -1;
}

static json_t *event(json_t *arr, json_int_t ev)
{
	long k = line_of_event(arr, ev);

	ck_assert_int_ge(k, 0);
	return json_array_get(arr, (size_t)k);
}

static json_t *summary_of(json_t *arr)
{
	json_t *s = json_array_get(arr, json_array_size(arr) - 1);

	ck_assert(tb_trace_is_summary(s));
	return s;
}

static void replay_ok(const char *path, struct tv_tb_replay_sim_report *rep)
{
	int rc = tv_tb_replay_sim(path, rep);

	ck_assert_msg(rc == 0, "%s: rc %d: %s", path, rc, rep->err);
}

/* ---- replay --sim: recorded lines it compares --------------------------- */

/*
 * A recorded receive completion without its "op": it is no receive (its
 * length is not compared), and its opcode differs from the simulator's,
 * so the simulator's completion is held: the node stalls until its peer's
 * channel times out (1 s), its queues give up following, and the held
 * completion is handed out only then.  The replay diverges there.
 */
START_TEST(test_replay_poll_without_op)
{
	struct tv_tb_replay_sim_report rep;
	char a[128], path[128];
	json_t *arr;

	mk_tmpdir();
	record_text(basic, "a.jsonl", 1, "sim", a, sizeof(a));
	arr = load_lines(a);
	ck_assert_str_eq(json_string_value(json_object_get(event(arr, 2060), "op")),
			 "RECV_RDMA_WITH_IMM");
	json_object_del(event(arr, 2060), "op");
	save_lines(arr, "noop.jsonl", path, sizeof(path));
	replay_ok(path, &rep);
	ck_assert(rep.diverged);
	ck_assert_uint_eq(rep.div_index, 2060);
	ck_assert_uint_eq(rep.div_node, 0);
	ck_assert_int_eq(rep.div_qp, 0);
	ck_assert(rep.div_polls);
	ck_assert_uint_eq(rep.div_k, 0);
	ck_assert_ptr_nonnull(rep.expected);
	ck_assert_msg(strstr(rep.expected, "\"op\"") == NULL, "%s", rep.expected);
	ck_assert_ptr_nonnull(rep.actual);
	ck_assert_msg(strstr(rep.actual, "\"t\":1000000000,") != NULL &&
		      strstr(rep.actual, "\"op\":\"RECV_RDMA_WITH_IMM\"") != NULL,
		      "%s", rep.actual);
	ck_assert_uint_eq(rep.gave_up, 2);
	ck_assert(!rep.same_outcome);
	ck_assert_str_eq(rep.sim_result, "FAIL");
	ck_assert_msg(strstr(rep.sim_failures[0], "channel error") != NULL, "%s",
		      rep.sim_failures[0]);
	tv_tb_replay_sim_report_free(&rep);
	json_decref(arr);
	rm_tmpdir();
}
END_TEST

/*
 * An event line without "kind" (the reader takes it: "i", "t", "src" and
 * "node" are all it checks) is no POLL and no completion: the replay
 * compares it and diverges there.  It crashed the replay (strcmp(NULL)).
 */
START_TEST(test_replay_line_without_kind)
{
	struct tv_tb_replay_sim_report rep;
	char a[128], path[128];
	json_t *arr;

	/* Refused by the reader, naming the line (replay --sim's strcmp of
	 * the missing kind crashed before). */
	mk_tmpdir();
	record_text(basic, "a.jsonl", 1, "sim", a, sizeof(a));
	arr = load_lines(a);
	json_object_del(event(arr, 0), "kind");
	save_lines(arr, "nokind.jsonl", path, sizeof(path));
	ck_assert_int_eq(tv_tb_replay_sim(path, &rep), -EINVAL);
	ck_assert_msg(strstr(rep.err, "nokind.jsonl:2: not an event of a "
			     "recording") != NULL, "%s", rep.err);
	tv_tb_replay_sim_report_free(&rep);
	json_decref(arr);
	rm_tmpdir();
}
END_TEST

/* A POLL whose "cq" is there but not a number is refused, by position. */
START_TEST(test_replay_poll_cq_not_number)
{
	struct tv_tb_replay_sim_report rep;
	char a[128], path[128], want[96];
	json_t *arr;
	long k;

	mk_tmpdir();
	record_text(basic, "a.jsonl", 1, "sim", a, sizeof(a));
	arr = load_lines(a);
	k = line_of_event(arr, 2060);
	json_object_set_new(event(arr, 2060), "cq", json_string("0"));
	save_lines(arr, "cqstr.jsonl", path, sizeof(path));
	ck_assert_int_eq(tv_tb_replay_sim(path, &rep), -EINVAL);
	/* Positions count events from 0: the header is line 0. */
	snprintf(want, sizeof(want), "event %ld: a POLL without a \"cq\" number",
		 k - 1);
	ck_assert_str_eq(rep.err, want);
	tv_tb_replay_sim_report_free(&rep);
	json_decref(arr);
	rm_tmpdir();
}
END_TEST

/*
 * A POLL without a QP number is a queue of its own, which no completion
 * of the simulator's joins: the QP's queue then expects its next recorded
 * completion first and holds the simulator's, the run stalls until the
 * channel times out (on a simulator's recording nothing is held only so
 * long), and the line is compared among the node's own events, where
 * the simulator has nothing.
 */
START_TEST(test_replay_poll_without_qp)
{
	struct tv_tb_replay_sim_report rep;
	char a[128], path[128];
	json_t *arr;

	mk_tmpdir();
	record_text(basic, "a.jsonl", 1, "sim", a, sizeof(a));
	arr = load_lines(a);
	json_object_set_new(event(arr, 2060), "qp", json_null());
	save_lines(arr, "noqp.jsonl", path, sizeof(path));
	replay_ok(path, &rep);
	ck_assert(rep.diverged);
	ck_assert_uint_eq(rep.div_index, 2060);
	ck_assert_int_eq(rep.div_qp, -1);
	ck_assert_uint_eq(rep.div_k, 3);
	ck_assert_ptr_null(rep.actual);
	ck_assert_uint_eq(rep.gave_up, 2);
	ck_assert(!rep.same_outcome);
	ck_assert_str_eq(rep.rec_result, "PASS");
	ck_assert_str_eq(rep.sim_result, "FAIL");
	ck_assert_msg(strstr(rep.sim_failures[0], "channel error") != NULL, "%s",
		      rep.sim_failures[0]);
	tv_tb_replay_sim_report_free(&rep);
	json_decref(arr);
	rm_tmpdir();
}
END_TEST

/*
 * The recorded flush of a receive made a success near the end: the
 * simulator's flushes from there on never come next, and stay held (too
 * few to give up): the report counts them.
 */
START_TEST(test_replay_held_at_end)
{
	struct tv_tb_replay_sim_report rep;
	char a[128], path[128];
	json_t *arr, *l;
	long last = -1;
	size_t i;

	mk_tmpdir();
	record_text(basic, "a.jsonl", 1, "sim", a, sizeof(a));
	arr = load_lines(a);
	json_array_foreach(arr, i, l)
		if (tb_trace_is_event(l) &&
		    !strcmp(json_string_value(json_object_get(l, "kind")), "POLL") &&
		    json_integer_value(json_object_get(l, "node")) == 1 &&
		    json_integer_value(json_object_get(l, "qp")) == 0)
			last = (long)i;
	ck_assert_int_gt(last, 10);
	l = json_array_get(arr, (size_t)last - 9);
	ck_assert_str_eq(json_string_value(json_object_get(l, "status")),
			 "WR_FLUSH_ERR");
	json_object_set_new(l, "status", json_string("SUCCESS"));
	save_lines(arr, "held.jsonl", path, sizeof(path));
	replay_ok(path, &rep);
	ck_assert_uint_eq(rep.held, 10);
	ck_assert_uint_eq(rep.gave_up, 0);
	ck_assert(rep.diverged);
	ck_assert_uint_eq(rep.div_node, 1);
	ck_assert_int_eq(rep.div_qp, 0);
	ck_assert(rep.div_polls);
	ck_assert_uint_eq(rep.div_index, (uint64_t)json_integer_value(
		json_object_get(l, "i")));
	ck_assert_ptr_null(rep.actual);
	ck_assert(rep.same_outcome);
	tv_tb_replay_sim_report_free(&rep);
	json_decref(arr);
	rm_tmpdir();
}
END_TEST

/* STEP lines without a number "at_ns" mark no place for operations. */
START_TEST(test_replay_steps_without_at)
{
	struct tv_tb_replay_sim_report rep;
	char a[128], path[128];
	json_t *arr;
	long k;

	mk_tmpdir();
	record_text(basic, "a.jsonl", 1, "sim", a, sizeof(a));
	arr = load_lines(a);
	k = line_of_event(arr, 2058);
	json_array_insert_new(arr, (size_t)k, json_pack(
		"{s:i, s:i, s:s, s:s, s:i, s:i}", "i", 0, "t", 0,
		"src", "workload", "kind", "STEP", "node", 0, "at_ns", 0));
	json_array_insert_new(arr, (size_t)k, json_pack(
		"{s:i, s:i, s:s, s:s, s:i, s:s}", "i", 0, "t", 0,
		"src", "workload", "kind", "STEP", "node", 1, "at_ns", "0"));
	json_array_insert_new(arr, (size_t)k, json_pack(
		"{s:i, s:i, s:s, s:s, s:i}", "i", 0, "t", 0,
		"src", "workload", "kind", "STEP", "node", 1));
	save_lines(arr, "steps.jsonl", path, sizeof(path));
	replay_ok(path, &rep);
	ck_assert_uint_eq(rep.ops_places, 1);
	ck_assert(!rep.diverged);
	ck_assert(rep.same_outcome);
	tv_tb_replay_sim_report_free(&rep);
	json_decref(arr);
	rm_tmpdir();
}
END_TEST

/* ---- replay --sim: the scenario and plan of a recording on a device ------- */

/*
 * A device's scenario with a "sim" object of its own: the replay keeps
 * it, and its deadline when it has one (else 120 s): a deadline too
 * short for the run fails the replay as it failed the recording.
 */
START_TEST(test_replay_hw_sim_object)
{
	struct tv_tb_replay_sim_report rep;
	char a[128];

	mk_tmpdir();
	record_text("{\"nodes\": 2, \"sim\": {\"placement\": \"in_order\"}, " RV_STEPS "}",
		    "obj.jsonl", 1, "ibverbs", a, sizeof(a));
	replay_ok(a, &rep);
	ck_assert_str_eq(rep.backend, "ibverbs");
	ck_assert_str_eq(rep.sim_result, "PASS");
	ck_assert(rep.same_outcome);
	tv_tb_replay_sim_report_free(&rep);

	record_text("{\"nodes\": 2, \"sim\": {\"deadline_ns\": 3000}, " RV_STEPS "}",
		    "dl.jsonl", 1, "ibverbs", a, sizeof(a));
	replay_ok(a, &rep);
	ck_assert_str_eq(rep.rec_result, "FAIL");
	ck_assert_str_eq(rep.sim_result, "FAIL");
	ck_assert(rep.same_outcome);
	ck_assert_msg(strstr(rep.sim_failures[0], "deadline") != NULL, "%s",
		      rep.sim_failures[0]);
	tv_tb_replay_sim_report_free(&rep);
	rm_tmpdir();
}
END_TEST

static void fire_edit(const char *name, json_t *edit_node_hit,
		      json_t *edit_hit, json_t *extra,
		      struct tv_tb_replay_sim_report *rep, int want_rc)
{
	char a[128], path[128];
	json_t *arr, *fire;
	long k;

	record_text(ack_drop, "hw.jsonl", 1, "ibverbs", a, sizeof(a));
	arr = load_lines(a);
	k = line_of_event(arr, 2062);
	fire = event(arr, 2062);
	ck_assert_str_eq(json_string_value(json_object_get(fire, "kind")), "FIRE");
	if (edit_node_hit)
		json_object_set_new(fire, "node_hit", edit_node_hit);
	else
		json_object_del(fire, "node_hit");
	if (edit_hit)
		json_object_set_new(fire, "hit", edit_hit);
	if (extra)
		json_array_insert_new(arr, (size_t)k + 1, extra);
	save_lines(arr, name, path, sizeof(path));
	ck_assert_int_eq(tv_tb_replay_sim(path, rep), want_rc);
	json_decref(arr);
}

/*
 * Firings of a device's recording become the plan: a "node_hit" that is
 * not a number makes the firing's global hit the rule (the simulator
 * fires the point there again, but the firing compares as another one);
 * a "hit" that is not a number either makes no rule (nothing fires);
 * a global firing after a node rule of the same point is a rule of its
 * own (not a count added to the node rule): both fire again.
 */
START_TEST(test_replay_hw_fires)
{
	struct tv_tb_replay_sim_report rep;

	mk_tmpdir();
	fire_edit("nh.jsonl", json_string("x"), NULL, NULL, &rep, 0);
	ck_assert_uint_eq(rep.fires, 1);
	ck_assert_uint_eq(rep.fires_same, 0);
	ck_assert(rep.diverged);
	ck_assert_uint_eq(rep.div_index, 2062);
	ck_assert_ptr_nonnull(rep.actual);
	ck_assert_msg(strstr(rep.actual, "\"point\":\"vf/ack/drop\"") != NULL,
		      "%s", rep.actual);
	ck_assert(rep.same_outcome);
	tv_tb_replay_sim_report_free(&rep);

	fire_edit("hx.jsonl", NULL, json_string("1"), NULL, &rep, 0);
	ck_assert_uint_eq(rep.fires, 1);
	ck_assert_uint_eq(rep.fires_same, 0);
	ck_assert(rep.diverged);
	ck_assert_uint_eq(rep.div_index, 2062);
	ck_assert_msg(!rep.actual || !strstr(rep.actual, "vf/ack/drop"),
		      "fired without a rule: %s", rep.actual);
	tv_tb_replay_sim_report_free(&rep);

	fire_edit("two.jsonl", json_integer(1), NULL,
		  json_pack("{s:i, s:i, s:s, s:s, s:i, s:s, s:i}", "i", 2062,
			    "t", 2005, "src", "fault", "kind", "FIRE", "node", 1,
			    "point", "vf/ack/drop", "hit", 2),
		  &rep, 0);
	ck_assert_uint_eq(rep.fires, 2);
	ck_assert_uint_eq(rep.fires_same, 2);
	tv_tb_replay_sim_report_free(&rep);
	rm_tmpdir();
}
END_TEST

/* ---- replay --sim: the outcomes compared ---------------------------------- */

static void summary_edit(const char *text, const char *name,
			 const char *del, const char *key, json_t *val,
			 struct tv_tb_replay_sim_report *rep)
{
	char a[128], path[128];
	json_t *arr;

	record_text(text, "s.jsonl", 5, "sim", a, sizeof(a));
	arr = load_lines(a);
	if (del)
		json_object_del(summary_of(arr), del);
	if (key)
		json_object_set_new(summary_of(arr), key, val);
	save_lines(arr, name, path, sizeof(path));
	replay_ok(path, rep);
	json_decref(arr);
}

START_TEST(test_replay_summary_edits)
{
	struct tv_tb_replay_sim_report rep;

	mk_tmpdir();
	/* No "ops": not the same outcome, and counted as 0. */
	summary_edit(basic, "noops.jsonl", "ops", NULL, NULL, &rep);
	ck_assert(!rep.diverged);
	ck_assert(!rep.same_outcome);
	ck_assert_str_eq(rep.rec_summary, "ops 0, ok 1, failed 0");
	ck_assert_str_eq(rep.sim_summary, "ops 1, ok 1, failed 0");
	tv_tb_replay_sim_report_free(&rep);

	/* No "result": "?". */
	summary_edit(basic, "nores.jsonl", "result", NULL, NULL, &rep);
	ck_assert_str_eq(rep.rec_result, "?");
	ck_assert_str_eq(rep.sim_result, "PASS");
	ck_assert(!rep.same_outcome);
	ck_assert(!rep.same_failure_kind);
	tv_tb_replay_sim_report_free(&rep);

	/* Recorded failing, passing in the simulator. */
	summary_edit(basic, "recfail.jsonl", NULL, "result",
		     json_string("FAIL"), &rep);
	ck_assert_str_eq(rep.rec_result, "FAIL");
	ck_assert_str_eq(rep.sim_result, "PASS");
	ck_assert(!rep.same_outcome);
	ck_assert(!rep.same_failure_kind);
	tv_tb_replay_sim_report_free(&rep);

	/* Both fail, but of a kind the recording does not list. */
	summary_edit(wrong_shape, "kinds.jsonl", NULL, "failure_kinds",
		     json_pack("[s]", "no-such-kind"), &rep);
	ck_assert_str_eq(rep.rec_result, "FAIL");
	ck_assert_str_eq(rep.sim_result, "FAIL");
	ck_assert(rep.same_outcome);
	ck_assert(!rep.same_failure_kind);
	tv_tb_replay_sim_report_free(&rep);
	rm_tmpdir();
}
END_TEST

/* ---- the trace writer and reader ------------------------------------------ */

static json_t *good_header(void)
{
	json_t *h;

	ck_assert_int_eq(tb_trace_header_new(7, json_pack("{s:i}", "nodes", 2),
					     NULL, NULL, NULL, &h), 0);
	/* header_new took its own reference to the scenario: drop ours. */
	json_decref(json_object_get(h, "scenario"));
	return h;
}

static void header_refused(json_t *h, const char *key, json_t *val,
			   const char *msg)
{
	struct tb_trace_header th;
	char err[TB_TRACE_ERR_MAX];
	json_t *c = json_deep_copy(h);

	if (val)
		json_object_set_new(c, key, val);
	else
		json_object_del(c, key);
	ck_assert_int_eq(tb_trace_header_parse(c, &th, err), -EINVAL);
	ck_assert_str_eq(err, msg);
	json_decref(c);
}

/* Each header field wrong alone: the first wrong one is named. */
START_TEST(test_trace_header_fields)
{
	struct tb_trace_header th;
	char err[TB_TRACE_ERR_MAX];
	json_t *h = good_header();

	ck_assert_int_eq(tb_trace_header_parse(h, &th, err), 0);
	ck_assert_ptr_null(th.scenario_file);
	ck_assert_uint_eq(th.seed, 7);
	header_refused(h, "seed", json_real(1.5), "header needs \"seed\" (an integer >= 0)");
	header_refused(h, "seed", json_integer(-1), "header needs \"seed\" (an integer >= 0)");
	header_refused(h, "scenario", NULL, "header needs \"scenario\" (an object)");
	header_refused(h, "scenario", json_pack("[i]", 2), "header needs \"scenario\" (an object)");
	header_refused(h, "plan", json_object(), "header needs \"plan\" (an array or null)");
	header_refused(h, "scenario_file", json_integer(3),
		       "header needs \"scenario_file\" (a string or null)");
	header_refused(h, "build_id", NULL, "header needs \"build_id\" (a string)");
	header_refused(h, "build_id", json_integer(1), "header needs \"build_id\" (a string)");

	/* Without "scenario_file" at all: a built-in scenario, taken. */
	json_object_del(h, "scenario_file");
	json_object_set_new(h, "seed", json_string("12"));
	ck_assert_int_eq(tb_trace_header_parse(h, &th, err), 0);
	ck_assert_ptr_null(th.scenario_file);
	ck_assert_uint_eq(th.seed, 12);
	json_decref(h);
}
END_TEST

/* Events need a number "i" and a string "src"; a summary a true "summary". */
START_TEST(test_trace_line_kinds)
{
	static const struct {
		const char *text;
		bool event, summary;
	} t[] = {
		{ "{\"i\": 1, \"src\": \"sim\"}", true, false },
		{ "{\"i\": \"1\", \"src\": \"sim\"}", false, false },
		{ "{\"src\": \"sim\"}", false, false },
		{ "{\"i\": 1}", false, false },
		{ "{\"i\": 1, \"src\": 5}", false, false },
		{ "{\"summary\": true}", false, true },
		{ "{\"summary\": false}", false, false },
		{ "{\"summary\": 1}", false, false },
		{ "{}", false, false },
	};

	for (size_t i = 0; i < TB_ARRAY_SIZE(t); i++) {
		json_t *o = json_loads(t[i].text, 0, NULL);

		ck_assert_ptr_nonnull(o);
		ck_assert_msg(tb_trace_is_event(o) == t[i].event, "%s", t[i].text);
		ck_assert_msg(tb_trace_is_summary(o) == t[i].summary, "%s",
			      t[i].text);
		json_decref(o);
	}
}
END_TEST

/* Closing a reader twice (or one never opened) is harmless. */
START_TEST(test_trace_reader_close_twice)
{
	struct tb_trace_reader rd;
	char path[128], err[TB_TRACE_ERR_MAX];
	json_t *o;

	mk_tmpdir();
	tmp_path(path, sizeof(path), "l.jsonl");
	write_file(path, "{\"a\": 1}\n");
	ck_assert_int_eq(tb_trace_reader_open(path, &rd), 0);
	ck_assert_int_eq(tb_trace_reader_next(&rd, &o, err), 0);
	json_decref(o);
	ck_assert_uint_eq(rd.line, 1);
	tb_trace_reader_close(&rd);
	ck_assert_ptr_null(rd.f);
	ck_assert_ptr_null(rd.buf);
	ck_assert_uint_eq(rd.line, 0);
	tb_trace_reader_close(&rd);
	ck_assert_ptr_null(rd.f);
	ck_assert_ptr_null(rd.path);
	rm_tmpdir();
}
END_TEST

static int no_emit(void *ctx, json_t *ev)
{
	(void)ctx;
	(void)ev;
	return 0;
}

/*
 * An address under rkey 0 is still an address: offsets from the first
 * one seen under (node, 0); only a zero rkey with a zero address is null.
 */
START_TEST(test_trace_addr_rkey_zero)
{
	struct tb_rec rec;
	json_t *v;

	tb_rec_init(&rec, no_emit, NULL);
	v = tb_rec_addr(&rec, 1, 0, 0x1000);
	ck_assert(json_is_integer(v));
	ck_assert_int_eq(json_integer_value(v), 0);
	json_decref(v);
	v = tb_rec_addr(&rec, 1, 0, 0x1040);
	ck_assert_int_eq(json_integer_value(v), 0x40);
	json_decref(v);
	v = tb_rec_addr(&rec, 1, 0, 0xff0);
	ck_assert_int_eq(json_integer_value(v), -0x10);
	json_decref(v);
	v = tb_rec_addr(&rec, 1, 0, 0);
	ck_assert(json_is_null(v));
	json_decref(v);
	ck_assert_uint_eq(rec.anchors_used, 1);
	ck_assert_int_eq(rec.err, 0);
	tb_rec_fini(&rec);
}
END_TEST

/*
 * A trace whose recorder failed reports that failure even when closing
 * the file fails too (a full disk: /dev/full).
 */
START_TEST(test_trace_finish_first_error)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_trace *t;
	char err[TV_TB_ERR_MAX];

	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "b", &sc, err), 0);
	ck_assert_int_eq(tv_tb_trace_create("/dev/full", sc, NULL, 1, NULL, &t), 0);
	tb_rec_emit(tb_trace_rec(t), NULL);
	ck_assert_int_eq(tb_trace_rec(t)->err, -ENOMEM);
	ck_assert_int_eq(tv_tb_trace_finish(t, NULL), -ENOMEM);
	/* Alone, the full disk is an I/O error. */
	ck_assert_int_eq(tv_tb_trace_create("/dev/full", sc, NULL, 1, NULL, &t), 0);
	ck_assert_int_eq(tv_tb_trace_finish(t, NULL), -EIO);
	tv_tb_scenario_free(sc);
}
END_TEST

/* A breakage name JSON cannot hold (not UTF-8): no header. */
START_TEST(test_trace_header_bad_breakage)
{
	json_t *sc = json_pack("{s:i}", "nodes", 2), *h = NULL;

	ck_assert_int_eq(tb_trace_header_new(1, sc, NULL, NULL, "br\xff", &h),
			 -ENOMEM);
	ck_assert_ptr_null(h);
	ck_assert_int_eq(sc->refcount, 1);
	json_decref(sc);
}
END_TEST

/* ---- the swarm ------------------------------------------------------------- */

/* The first unknown point ends the list: later ones are not looked at. */
START_TEST(test_swarm_points_stop_at_unknown)
{
	uint32_t bits = 1;
	char err[256];

	ck_assert_int_eq(tv_tb_swarm_points("vf/bogus,vf/ack/drop,also-bogus",
					    &bits, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "unknown fault point 'vf/bogus' (see: tensorverbs faults)");
	ck_assert_uint_eq(bits, 1);
}
END_TEST

static uint64_t count_lines_of(const char *path)
{
	char *t = read_all(path);
	uint64_t n = (uint64_t)count_lines(t);

	free(t);
	return n;
}

/*
 * A breakage of another workload: every seed is a runner failure, and
 * the rerun cannot run it either (its trace has the header only), or,
 * with the trace's path taken by a folder, cannot even write the trace.
 */
START_TEST(test_swarm_breakage_unknown)
{
	struct tv_tb_swarm_opts o = { .seeds = 1, .first = 4, .jobs = 1,
				      .workload = "rendezvous", .keep_going = true,
				      .breakage = "fifo-sentinel" };
	struct tv_tb_swarm_report rep;
	char dir[128], busy[192];
	struct stat stbuf;

	signal(SIGTERM, SIG_DFL);
	mk_tmpdir();
	tmp_path(dir, sizeof(dir), "out");
	o.out_dir = dir;
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), 0);
	ck_assert_uint_eq(rep.violations, 1);
	ck_assert_uint_eq(rep.nfail, 1);
	ck_assert_uint_eq(rep.fail[0].seed, 4);
	ck_assert_int_eq(rep.fail[0].first, TV_TB_FK_RUNNER);
	ck_assert_uint_eq(rep.fail[0].failures, 1);
	ck_assert_str_eq(rep.fail[0].msg,
			 "breakage 'fifo-sentinel' unknown to workload rendezvous");
	ck_assert(rep.fail[0].written);
	ck_assert_int_eq(rep.fail[0].rerun_status, 2);
	ck_assert_uint_eq(count_lines_of(rep.fail[0].trace), 1);

	/* The trace's path is a folder: the rerun cannot create it. */
	snprintf(busy, sizeof(busy), "%s/seed-5.jsonl", dir);
	ck_assert_int_eq(mkdir(busy, 0777), 0);
	o.first = 5;
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), 0);
	ck_assert_uint_eq(rep.fail[0].seed, 5);
	ck_assert(rep.fail[0].written);
	ck_assert_int_eq(rep.fail[0].rerun_status, 2);
	ck_assert_str_eq(rep.fail[0].trace, busy);
	ck_assert_int_eq(stat(busy, &stbuf), 0);
	ck_assert(S_ISDIR(stbuf.st_mode));
	ck_assert_int_eq(access(rep.fail[0].file, R_OK), 0);
	rm_tmpdir();
}
END_TEST

/*
 * The kernel reaps the children (SIGCHLD ignored): the rerun's status
 * cannot be had, and says so (-ECHILD) rather than a made-up one.
 */
START_TEST(test_swarm_children_reaped)
{
	struct tv_tb_swarm_opts o = { .seeds = 2, .first = 1, .jobs = 1,
				      .workload = "rendezvous",
				      .breakage = "fifo-sentinel" };
	struct tv_tb_swarm_report rep;
	char dir[128];

	signal(SIGTERM, SIG_DFL);
	signal(SIGCHLD, SIG_IGN);
	mk_tmpdir();
	tmp_path(dir, sizeof(dir), "out");
	o.out_dir = dir;
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), 0);
	signal(SIGCHLD, SIG_DFL);
	ck_assert_uint_eq(rep.nfail, 1);
	ck_assert_uint_eq(rep.fail[0].seed, 1);
	ck_assert(rep.fail[0].written);
	ck_assert_int_eq(rep.fail[0].rerun_status, -ECHILD);
	rm_tmpdir();
}
END_TEST

#if defined(__x86_64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_X86_64
#define SYS_FORK_HERE SYS_fork
#elif defined(__aarch64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_AARCH64
#define SYS_FORK_HERE SYS_clone
#endif

/*
 * From now on every fork of this process (of every thread of it, with
 * SECCOMP_FILTER_FLAG_TSYNC) fails with EAGAIN (clone3 says ENOSYS, so
 * glibc falls back to clone), and kill(-1, ...) with EPERM: should the
 * swarm ever signal every process again, it hurts nothing here.
 */
static int deny_forks(unsigned flags)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_HERE, 0, 6),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 435 /* clone3 */, 6, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_FORK_HERE, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kill, 0, 1),
		BPF_JUMP(BPF_JMP | BPF_JA, 3, 0, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAGAIN),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		/* kill: pid -1 (its low word) refused. */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = TB_ARRAY_SIZE(f), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog) ?
	       -errno : 0;
}

static int open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

/*
 * No worker can be made: the swarm fails with fork's error, and leaves
 * nothing behind: no pipe, stdin open.  (It sent SIGTERM to pid -1,
 * every process the user may signal, and closed fd 0.)
 */
START_TEST(test_swarm_fork_fails)
{
	struct tv_tb_swarm_opts o = { .seeds = 4, .first = 1, .jobs = 2,
				      .workload = "rendezvous" };
	struct tv_tb_swarm_report rep;
	int status, p[2], res[3] = { 0 };
	pid_t pid;

	signal(SIGTERM, SIG_DFL);
	ck_assert_int_eq(pipe(p), 0);
	/* The filter stays for the process's life: a process of its own. */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int before;

		close(p[0]);
		res[2] = deny_forks(0);
		before = open_fds();
		res[0] = tv_tb_swarm(&o, &rep);
		/* A leaked pipe counts +2 (both ends), a closed fd 0 -1. */
		res[1] = open_fds() - before;
		if (write(p[1], res, sizeof(res)) != (ssize_t)sizeof(res))
			tv_tb_child_exit(3);
		tv_tb_child_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], res, sizeof(res)), (ssize_t)sizeof(res));
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(res[2], 0);
	ck_assert_int_eq(res[0], -EAGAIN);
	ck_assert_int_eq(res[1], 0);
}
END_TEST

/* ---- the swarm: a worker that hangs, a parent that is interrupted ---------- */

static volatile sig_atomic_t usr1_seen;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_seen++;
}

struct killer {
	pthread_t main;
	pid_t parent;
	pid_t worker;
	void (*act)(struct killer *k); /* once the worker runs */
	int result;                    /* what act says it did */
};

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A child of parent now, or 0 (the /proc/PID/stat of each process). */
static pid_t child_of(pid_t parent)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	while (d && !found && (e = readdir(d))) {
		char path[300], buf[512], *p;
		long ppid;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		/* "PID (COMM) STATE PPID ..." */
		if (p && sscanf(p + 1, " %*c %ld", &ppid) == 1 && ppid == parent)
			found = (pid_t)atol(e->d_name);
		fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

/* The first child of the parent (the swarm's worker), waited for. */
static pid_t first_child(pid_t parent)
{
	pid_t pid = 0;

	for (int i = 0; i < 5000 && !pid; i++) {
		pid = child_of(parent);
		if (!pid)
			sleep_ms(2);
	}
	return pid;
}

/* Is the parent's main thread waiting in poll()? */
static bool in_poll(pid_t parent)
{
	char path[64];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", parent, parent);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
	return nr == SYS_poll || nr == SYS_ppoll;
}

/*
 * Once the worker runs: the parent, waiting for it, is interrupted by a
 * signal with a handler (poll fails with EINTR); after more than a second
 * (a progress line is due), the worker is sent SIGALRM as if its seed had
 * run past the limit.
 */
static void alarm_act(struct killer *k)
{
	for (int i = 0; i < 500 && !usr1_seen; i++) {
		if (in_poll(k->parent))
			pthread_kill(k->main, SIGUSR1);
		sleep_ms(2);
	}
	sleep_ms(1300);
	kill(k->worker, SIGALRM);
}

static void *killer_main(void *arg)
{
	struct killer *k = arg;

	k->worker = first_child(k->parent);
	if (k->worker > 0)
		k->act(k);
	return NULL;
}

static void start_killer(struct killer *k, pthread_t *th,
			 void (*act)(struct killer *k))
{
	k->main = pthread_self();
	k->parent = getpid();
	k->act = act;
	k->result = -1;
	ck_assert_int_eq(pthread_create(th, NULL, killer_main, k), 0);
}

START_TEST(test_swarm_worker_alarm)
{
	struct tv_tb_swarm_opts o = { .seeds = 1000000, .first = 1, .jobs = 1,
				      .workload = "rendezvous" };
	struct tv_tb_swarm_report rep;
	struct killer k;
	struct sigaction sa = { .sa_handler = on_usr1 };
	char dir[128], out[8192], want[160];
	int master, slave;
	size_t got = 0;
	ssize_t n;
	pthread_t th;

	signal(SIGTERM, SIG_DFL);
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	master = posix_openpt(O_RDWR | O_NOCTTY);
	ck_assert_int_ge(master, 0);
	ck_assert_int_eq(grantpt(master), 0);
	ck_assert_int_eq(unlockpt(master), 0);
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	ck_assert_int_ge(slave, 0);
	o.progress = fdopen(slave, "w");
	ck_assert_ptr_nonnull(o.progress);
	mk_tmpdir();
	tmp_path(dir, sizeof(dir), "out");
	o.out_dir = dir;
	start_killer(&k, &th, alarm_act);
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	fflush(o.progress);
	ck_assert_int_gt(k.worker, 0);
	ck_assert_msg(usr1_seen > 0, "the parent was never interrupted");

	/* The seed the worker was running is the failure, a crash. */
	ck_assert_uint_eq(rep.nfail, 1);
	ck_assert_uint_eq(rep.violations, 1);
	ck_assert_uint_eq(rep.done, rep.fail[0].seed);
	ck_assert_int_eq(rep.fail[0].first, TV_TB_FK_CRASH);
	snprintf(want, sizeof(want),
		 "the run died of signal %d (%s): it ran longer than the per-seed limit",
		 SIGALRM, strsignal(SIGALRM));
	ck_assert_str_eq(rep.fail[0].msg, want);
	/* Run again in a fresh process, it passes: no hang there. */
	ck_assert(rep.fail[0].written);
	ck_assert_int_eq(rep.fail[0].rerun_status, 0);

	/* A line while it ran (seconds left), and the final one. */
	while (got < sizeof(out) - 1) {
		struct pollfd pfd = { .fd = master, .events = POLLIN };

		if (poll(&pfd, 1, 100) <= 0)
			break;
		n = read(master, out + got, sizeof(out) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = '\0';
	ck_assert_msg(strstr(out, "/1000000 seeds") != NULL, "%s", out);
	ck_assert_msg(strstr(out, " violations, 0 s left") != NULL, "%s", out);
	{
		/* The first line is not the final one: many seconds left. */
		const char *l = strstr(out, "0 violations, ");
		unsigned long left = 0;

		ck_assert_msg(l != NULL, "%s", out);
		ck_assert_int_eq(sscanf(l, "0 violations, %lu s left", &left), 1);
		ck_assert_uint_gt(left, 0);
	}
	fclose(o.progress);
	close(master);
	rm_tmpdir();
}
END_TEST

/* fd is the read end of a pipe. */
static bool pipe_reader(int fd)
{
	char path[64], link[64], line[128];
	unsigned flags = O_WRONLY;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	if (strncmp(link, "pipe:", 5))
		return false;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "flags: %o", &flags) == 1)
			break;
	fclose(f);
	return (flags & O_ACCMODE) == O_RDONLY;
}

/* Read ends of pipes open before the swarm started (Check's own). */
static bool old_pipe[1024];

static void note_pipes(void)
{
	for (int fd = 0; fd < 1024; fd++)
		old_pipe[fd] = pipe_reader(fd);
}

/* The read end of the worker's pipe, in the parent, or -1. */
static int worker_pipe_fd(void)
{
	for (int fd = 3; fd < 1024; fd++)
		if (!old_pipe[fd] && pipe_reader(fd))
			return fd;
	return -1;
}

/* The parent loses its end of the worker's pipe (closed under it). */
static void close_pipe_act(struct killer *k)
{
	sleep_ms(50);
	k->result = worker_pipe_fd();
	if (k->result >= 0)
		close(k->result);
}

/*
 * The worker's pipe has no reader any more (SIGPIPE ignored): its next
 * record cannot be sent, it exits 3, and the parent, whose read failed,
 * reports the seed the worker was on as a crash, with that status.
 */
START_TEST(test_swarm_pipe_lost)
{
	struct tv_tb_swarm_opts o = { .seeds = 1000000, .first = 1, .jobs = 1,
				      .workload = "rendezvous" };
	struct tv_tb_swarm_report rep;
	struct killer k;
	char dir[128];
	pthread_t th;

	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	mk_tmpdir();
	tmp_path(dir, sizeof(dir), "out");
	o.out_dir = dir;
	note_pipes();
	start_killer(&k, &th, close_pipe_act);
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_ge(k.result, 3);
	ck_assert_uint_eq(rep.nfail, 1);
	ck_assert_int_eq(rep.fail[0].first, TV_TB_FK_CRASH);
	ck_assert_str_eq(rep.fail[0].msg, "the worker exited with 3");
	ck_assert_uint_eq(rep.done, rep.fail[0].seed);
	ck_assert(rep.fail[0].written);
	ck_assert_int_eq(rep.fail[0].rerun_status, 0);
	rm_tmpdir();
}
END_TEST

/* The parent may open no file at all: poll() of one fd fails (EINVAL). */
static void no_files_act(struct killer *k)
{
	struct rlimit rl;

	(void)k;
	sleep_ms(50);
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = 0;
	setrlimit(RLIMIT_NOFILE, &rl);
}

START_TEST(test_swarm_poll_fails)
{
	struct tv_tb_swarm_opts o = { .seeds = 1000000, .first = 1, .jobs = 1,
				      .workload = "rendezvous" };
	struct tv_tb_swarm_report rep = { .done = 77 };
	struct rlimit saved, rl;
	struct killer k;
	pthread_t th;
	int rc;

	signal(SIGTERM, SIG_DFL);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &saved), 0);
	start_killer(&k, &th, no_files_act);
	rc = tv_tb_swarm(&o, &rep);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &saved), 0);
	ck_assert_uint_eq(rl.rlim_cur, 0);
	ck_assert_int_eq(rc, -EINVAL);
	/* No report on failure. */
	ck_assert_uint_eq(rep.done, 77);
	/* Its worker is gone: stopped and reaped. */
	ck_assert_int_gt(k.worker, 0);
	ck_assert_int_eq(kill(k.worker, 0), -1);
	ck_assert_int_eq(errno, ESRCH);
}
END_TEST

/* Once the worker runs: forks fail, then the worker "hangs" (SIGALRM). */
static void forks_fail_act(struct killer *k)
{
	sleep_ms(50);
	if (deny_forks(SECCOMP_FILTER_FLAG_TSYNC) == 0)
		k->result = 0;
	sleep_ms(200);
	kill(k->worker, SIGALRM);
}

/*
 * The failing seed's rerun cannot be forked: its status is fork's error
 * and no trace is written.  (In a process of its own: the filter stays.)
 */
START_TEST(test_swarm_rerun_fork_fails)
{
	struct tv_tb_swarm_opts o = { .seeds = 1000000, .first = 1, .jobs = 1,
				      .workload = "rendezvous" };
	struct tv_tb_swarm_report rep;
	struct { int rc, on, status, written, trace_there, file_there; } r = { 0 };
	int status, p[2];
	char dir[128];
	pid_t pid;

	signal(SIGTERM, SIG_DFL);
	mk_tmpdir();
	tmp_path(dir, sizeof(dir), "out");
	o.out_dir = dir;
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct killer k;
		pthread_t th;

		close(p[0]);
		start_killer(&k, &th, forks_fail_act);
		r.rc = tv_tb_swarm(&o, &rep);
		pthread_join(th, NULL);
		r.on = k.result == 0;
		r.status = rep.fail[0].rerun_status;
		r.written = rep.nfail == 1 && rep.fail[0].written;
		r.trace_there = access(rep.fail[0].trace, F_OK) == 0;
		r.file_there = access(rep.fail[0].file, F_OK) == 0;
		tv_tb_child_exit(write(p[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 3);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &r, sizeof(r)), (ssize_t)sizeof(r));
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_msg(r.on, "the seccomp filter could not be set");
	ck_assert(r.written);
	ck_assert_int_eq(r.status, -EAGAIN);
	ck_assert(r.file_there);
	ck_assert(!r.trace_there);
	rm_tmpdir();
}
END_TEST

/* The first seed from 1 the breakage makes fail, found in this process. */
static uint64_t first_failing_seed(const char *workload, const char *breakage)
{
	for (uint64_t seed = 1; seed < 200; seed++) {
		struct tb_outcome out;
		json_t *root;

		ck_assert_int_eq(tv_tb_swarm_generate(seed, 0, workload, &root), 0);
		ck_assert_int_eq(tb_run_json(root, seed, breakage, false, &out), 0);
		json_decref(root);
		ck_assert(!out.invalid);
		if (out.failures)
			return seed;
	}
	ck_abort_msg("%s: no failing seed", breakage);
	return 0;
}

static off_t file_size(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return st.st_size;
}

/*
 * The rerun of a failing seed reproduces it (1), unless its trace cannot
 * be written out whole (files may be only so large: RLIMIT_FSIZE, with
 * SIGXFSZ ignored, as the children inherit): then it says it could not
 * run it (2), and the trace stops at the limit.
 */
START_TEST(test_swarm_rerun_trace_cut)
{
	struct tv_tb_swarm_opts o = { .seeds = 1, .jobs = 1, .keep_going = true,
				      .workload = "rendezvous",
				      .breakage = "no-ack-timeout" };
	struct tv_tb_swarm_report rep;
	struct rlimit saved, rl;
	char dir[128];
	off_t whole;

	signal(SIGTERM, SIG_DFL);
	o.first = first_failing_seed("rendezvous", "no-ack-timeout");
	mk_tmpdir();
	tmp_path(dir, sizeof(dir), "a");
	o.out_dir = dir;
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), 0);
	ck_assert_uint_eq(rep.nfail, 1);
	ck_assert_uint_eq(rep.fail[0].seed, o.first);
	ck_assert_int_eq(rep.fail[0].rerun_status, 1);
	whole = file_size(rep.fail[0].trace);
	/* Room for the scenario, the header, and coverage data. */
	ck_assert_int_gt(whole, 2 * 65536);

	tmp_path(dir, sizeof(dir), "b");
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
	rl = saved;
	rl.rlim_cur = (rlim_t)whole / 2;
	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), 0);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &saved), 0);
	ck_assert_uint_eq(rep.nfail, 1);
	ck_assert(rep.fail[0].written);
	ck_assert_int_eq(rep.fail[0].rerun_status, 2);
	ck_assert_int_eq(file_size(rep.fail[0].trace), whole / 2);
	rm_tmpdir();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cov_replay_trace");
	TCase *tc;

#define ADD(t)                                   \
	do {                                     \
		tc = tcase_create(#t);           \
		tcase_set_timeout(tc, 60);       \
		tcase_add_test(tc, t);           \
		suite_add_tcase(s, tc);          \
	} while (0)
	ADD(test_replay_poll_without_op);
	ADD(test_replay_line_without_kind);
	ADD(test_replay_poll_cq_not_number);
	ADD(test_replay_poll_without_qp);
	ADD(test_replay_held_at_end);
	ADD(test_replay_steps_without_at);
	ADD(test_replay_hw_sim_object);
	ADD(test_replay_hw_fires);
	ADD(test_replay_summary_edits);
	ADD(test_trace_header_fields);
	ADD(test_trace_line_kinds);
	ADD(test_trace_reader_close_twice);
	ADD(test_trace_addr_rkey_zero);
	ADD(test_trace_finish_first_error);
	ADD(test_trace_header_bad_breakage);
	ADD(test_swarm_points_stop_at_unknown);
	ADD(test_swarm_breakage_unknown);
	ADD(test_swarm_children_reaped);
	ADD(test_swarm_fork_fails);
	ADD(test_swarm_worker_alarm);
	ADD(test_swarm_pipe_lost);
	ADD(test_swarm_poll_fails);
	ADD(test_swarm_rerun_fork_fails);
	ADD(test_swarm_rerun_trace_cut);
	return s;
}

int main(void)
{
	return tv_check_main(suite());
}
