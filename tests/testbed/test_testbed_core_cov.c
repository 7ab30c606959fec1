/*
 * The protocol-neutral testbed core on the simulator, the paths the other
 * suites leave: the strict JSON accessors, recordings made from several
 * threads and kept in memory, merges of odd recordings, trace lines built
 * from events no run makes, headers that are almost headers, shrink's and
 * swarm's options and workers that die, JUnit text with control bytes, and
 * a workload of the test's own with none of the optional hooks.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tensorverbs/faults.h>
#include <tensorverbs/sim.h>
#include <tensorverbs/testbed.h>
#include <tensorverbs/vf.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "common/tb_files.h"
#include "common/toy_wl.h"
#include "tb_int.h"

static const char basic[] =
	"{\"name\": \"b\", \"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0,"
	" \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}],"
	" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]}";

/* A receive that expects another shape: fails with [data]. */
static const char wrong_shape[] =
	"{\"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [4, 4]}],"
	" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"shape\": [4, 5]}}]}]}";

/* text with its header (line 0) changed by fn, written to tmpdir/name. */
static void with_header(const char *text, const char *name, char *path,
			size_t cap, void (*fn)(json_t *h))
{
	char *hdr = line_of(text, 0), *edited;
	json_t *h = json_loads(hdr, 0, NULL);

	ck_assert_ptr_nonnull(h);
	fn(h);
	free(hdr);
	hdr = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
	edited = edit_lines(text, 0, hdr, NULL);
	tmp_path(path, cap, name);
	write_file(path, edited);
	free(edited);
	free(hdr);
	json_decref(h);
}

/* ---- a workload of the test's own, with none of the optional hooks ------- */

/*
 * "coretoy": tests/common/toy_wl.c's ticks, with every knob used: setup
 * dies on request so swarm's and shrink's workers can be seen dying, the
 * first tick refused, the end check failing on purpose ("fail").  No
 * summary, no last_op, no shrink edits, no drawing: the core's own
 * fallbacks show.
 */
static void toy_crash(struct tv_tb_run *run, void *st, uint32_t node)
{
	(void)run;
	(void)st;
	(void)node;
}

static int toy_restart(struct tv_tb_run *run, void *st, uint32_t node)
{
	(void)run;
	(void)st;
	(void)node;
	return 0;
}

static void toy_check_end(struct tv_tb_run *run, void *st)
{
	const struct toy_sc *s = tv_tb_scenario_wl(tv_tb_run_scenario(run));
	struct toy_run *t = st;

	if (s->fail)
		tv_tb_fail(run, TV_TB_FK_EXPECT, "coretoy: %" PRIu64 " ticks done, "
			   "failing on purpose", t->done);
}

/*
 * Seed 2: no scenario at all; 3: the worker exits 7; 5: it is killed;
 * 6: an invalid scenario; 4, 7 and up from 100: a failing one.
 */
static int toy_generate(uint64_t seed, uint32_t without, json_t **sc_p)
{
	(void)without;
	if (seed == 2)
		return -EDOM;
	*sc_p = json_pack("{s:s, s:I, s:i, s:i}", "workload", "coretoy",
			  "seed", (json_int_t)seed, "nodes", seed == 6 ? 1 : 2,
			  "ticks", 2);
	if (!*sc_p)
		return -ENOMEM;
	if (seed == 3)
		json_object_set_new(*sc_p, "die", json_integer(7));
	if (seed == 5)
		json_object_set_new(*sc_p, "kill", json_true());
	if (seed == 4 || seed == 7 || seed >= 100)
		json_object_set_new(*sc_p, "fail", json_true());
	return 0;
}

static const struct tv_tb_workload_ops toy = {
	.name = "coretoy", .about = "ticks", .unit = "ticks",
	.keys = toy_keys, .parse = toy_parse, .scenario_free = free,
	.setup = toy_setup, .progress = toy_progress,
	.node_crash = toy_crash, .node_restart = toy_restart,
	.check_end = toy_check_end, .state_free = toy_free,
	.generate = toy_generate, .event_src = "coretoy",
};

static void register_toy(void)
{
	if (!tv_tb_workload_find("coretoy"))
		ck_assert_int_eq(tv_tb_workload_register(&toy), 0);
}

static struct tv_tb_run *run_text(const char *text, uint64_t seed,
				  struct tv_tb_scenario **sc_p)
{
	return run_scenario_text(text, seed, NULL, sc_p);
}

/* The summary's fallbacks: no workload lines, "operation", crashes. */
START_TEST(test_toy_summary_fallbacks)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	char *s;

	register_toy();
	run = run_text("{\"workload\": \"coretoy\", \"name\": \"ct\", \"nodes\": 2,"
		       " \"ticks\": 3, \"faults\": [{\"point\": \"node/crash\","
		       " \"nth\": 2, \"count\": 1}]}", 1, &sc);
	ck_assert_uint_eq(tv_tb_run_result(run)->failures, 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->crashes, 1);
	ck_assert_uint_eq(((struct toy_run *)tv_tb_run_wl(run))->actor_seen, 1);
	s = run_summary_text(run);
	ck_assert_msg(strstr(s, "scenario    ct (cov)\n") != NULL, "%s", s);
	ck_assert_msg(strstr(s, "faults      1 fired: node/crash x1\n") != NULL,
		      "%s", s);
	ck_assert_msg(strstr(s, "crashes     1 crashes, 1 restarts (0 failed), ") != NULL,
		      "%s", s);
	ck_assert_msg(strstr(s, "virtual to the last operation; quiet at") != NULL ||
		      strstr(s, "time        ") != NULL, "%s", s);
	free(s);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* A refusal with no fault fired is a failure of the run, naming it. */
START_TEST(test_toy_refused)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	const struct tv_tb_failures *f;

	register_toy();
	run = run_text("{\"workload\": \"coretoy\", \"nodes\": 2, \"ticks\": 1,"
		       " \"refuse\": true}", 1, &sc);
	f = tv_tb_run_failures(run);
	ck_assert_uint_eq(f->count, 1);
	ck_assert_int_eq(f->msg_kinds[0], TV_TB_FK_RUNNER);
	ck_assert_str_eq(f->msgs[0], "tick 0: No buffer space available");
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 1);
	/* Outside a trace, trace lines are NULL and emits are dropped. */
	ck_assert_ptr_null(tv_tb_trace_line_new(run, "X"));
	ck_assert_ptr_null(tv_tb_trace_addr(run, 0, 1, 2));
	tv_tb_trace_emit(run, json_object());
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- the strict JSON accessors -------------------------------------------- */

START_TEST(test_json_accessors)
{
	char err[TV_TB_ERR_MAX] = "";
	struct tv_ju jc = { err, sizeof(err) };
	static const char *const few[] = { "a", "b", NULL };
	static const char *const long_keys[] = {
		"key_number_000000000000000000000000000000000000000000001",
		"key_number_000000000000000000000000000000000000000000002",
		"key_number_000000000000000000000000000000000000000000003",
		"key_number_000000000000000000000000000000000000000000004",
		"key_number_000000000000000000000000000000000000000000005",
		"key_number_000000000000000000000000000000000000000000006",
		NULL };
	json_t *o = json_loads("{\"r\": 2.5, \"neg\": -1.0, \"big\": 1e30,"
			       " \"e9\": 1e9, \"s\": \"x\", \"b\": 1, \"n\": 5,"
			       " \"rng\": {\"min\": 1, \"zz\": 2},"
			       " \"rng2\": {\"min\": \"x\"}, \"rng3\": {\"max\": -1},"
			       " \"obj\": {}, \"arr\": []}", 0, NULL);
	uint64_t v = 0, lo = 0, hi = 0;
	bool bv = true;
	char *sv = (char *)"unset";
	char tiny[8] = "";
	struct tv_ju small = { tiny, sizeof(tiny) };

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(tv_ju_get_uint(&jc, "$", o, "e9", 0, UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 1000000000);
	ck_assert_int_eq(tv_ju_get_uint(&jc, "$", o, "r", 0, 10, &v), -EINVAL);
	ck_assert_str_eq(err, "$.r: must be a whole number >= 0, got 2.5");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_get_uint(&jc, "$", o, "neg", 0, 10, &v), -EINVAL);
	ck_assert_str_eq(err, "$.neg: must be a whole number >= 0, got -1");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_get_uint(&jc, "$", o, "big", 0, UINT64_MAX, &v),
			 -EINVAL);
	ck_assert_str_eq(err, "$.big: must be a whole number >= 0, got 1e+30");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_get_uint(&jc, "$", o, "s", 0, 10, &v), -EINVAL);
	ck_assert_str_eq(err, "$.s: must be an integer");
	/* The first, innermost error stays. */
	ck_assert_int_eq(tv_ju_get_uint(&jc, "$", o, "n", 0, 3, &v), -EINVAL);
	ck_assert_str_eq(err, "$.s: must be an integer");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_get_uint(&jc, "$", o, "n", 0, 3, &v), -EINVAL);
	ck_assert_str_eq(err, "$.n: must be <= 3, got 5");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_get_bool(&jc, "$", o, "b", false, &bv), -EINVAL);
	ck_assert_str_eq(err, "$.b: must be true or false");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_get_bool(&jc, "$", o, "none", true, &bv), 0);
	ck_assert(bv);
	ck_assert_int_eq(tv_ju_get_str(&jc, "$", o, "n", false, &sv), -EINVAL);
	ck_assert_str_eq(err, "$.n: must be a string");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_get_str(&jc, "$", o, "none", true, &sv), -EINVAL);
	ck_assert_str_eq(err, "$: missing required key 'none'");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_get_str(&jc, "$", o, "none", false, &sv), 0);
	ck_assert_ptr_null(sv);
	ck_assert_int_eq(tv_ju_get_str(&jc, "$", o, "s", true, &sv), 0);
	ck_assert_str_eq(sv, "x");
	free(sv);
	ck_assert_int_eq(tv_ju_need_object(&jc, "$.obj", json_object_get(o, "obj")), 0);
	ck_assert_int_eq(tv_ju_need_array(&jc, "$.arr", json_object_get(o, "arr")), 0);
	ck_assert_int_eq(tv_ju_need_array(&jc, "$.obj", json_object_get(o, "obj")),
			 -EINVAL);
	ck_assert_str_eq(err, "$.obj: must be an array");
	err[0] = 0;
	/* Ranges: a number is both ends; an object is checked key by key. */
	ck_assert_int_eq(tv_ju_range(&jc, "$.n", json_object_get(o, "n"), &lo, &hi), 0);
	ck_assert_uint_eq(lo, 5);
	ck_assert_uint_eq(hi, 5);
	ck_assert_int_eq(tv_ju_range(&jc, "$.s", json_object_get(o, "s"), &lo, &hi),
			 -EINVAL);
	ck_assert_str_eq(err, "$.s: must be an integer");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_range(&jc, "$.rng", json_object_get(o, "rng"), &lo, &hi),
			 -EINVAL);
	ck_assert_str_eq(err, "$.rng: unknown key 'zz' (allowed: min, max)");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_range(&jc, "$.rng2", json_object_get(o, "rng2"), &lo, &hi),
			 -EINVAL);
	ck_assert_str_eq(err, "$.rng2.min: must be an integer");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_range(&jc, "$.rng3", json_object_get(o, "rng3"), &lo, &hi),
			 -EINVAL);
	ck_assert_str_eq(err, "$.rng3.max: must be >= 0, got -1");
	err[0] = 0;
	/* An allowed list longer than the message holds is cut short. */
	ck_assert_int_eq(tv_ju_check_keys(&jc, "$", json_object_get(o, "rng"),
					  long_keys), -EINVAL);
	ck_assert_msg(strstr(err, "$: unknown key 'min' (allowed: key_number_0") != NULL,
		      "%s", err);
	ck_assert_msg(strstr(err, "000004") != NULL && strstr(err, "000005") == NULL,
		      "%s", err);
	err[0] = 0;
	ck_assert_int_eq(tv_ju_check_keys(&jc, "$", json_object_get(o, "obj"), few), 0);
	/* A path longer than the buffer: the error is cut, still an error. */
	ck_assert_int_eq(tv_ju_fail(&small, "$.a.very.long.path", "x %d", 1), -EINVAL);
	ck_assert_str_eq(tiny, "$.a.ver");
	json_decref(o);
}
END_TEST

/*
 * The accessors are a workload's API: a value it looked up and did not
 * find (json_object_get's NULL) is refused as the wrong type, not read.
 */
START_TEST(test_json_accessors_null)
{
	char err[TV_TB_ERR_MAX] = "";
	struct tv_ju jc = { err, sizeof(err) };
	uint64_t v = 7, lo = 7, hi = 7;

	ck_assert_int_eq(tv_ju_uint(&jc, "$.u", NULL, 10, &v), -EINVAL);
	ck_assert_str_eq(err, "$.u: must be an integer");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_need_object(&jc, "$.o", NULL), -EINVAL);
	ck_assert_str_eq(err, "$.o: must be an object");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_need_array(&jc, "$.a", NULL), -EINVAL);
	ck_assert_str_eq(err, "$.a: must be an array");
	err[0] = 0;
	ck_assert_int_eq(tv_ju_range(&jc, "$.r", NULL, &lo, &hi), -EINVAL);
	ck_assert_str_eq(err, "$.r: must be an integer");
	ck_assert_uint_eq(v, 7);
	ck_assert_uint_eq(lo, 7);
	ck_assert_uint_eq(hi, 7);
}
END_TEST

/* ---- taps and recordings ----------------------------------------------------- */

struct tap_thread {
	struct tv_tb_tap *t;
	uint32_t node;
	uint64_t t_ns[3];
};

static void *tap_thread_fn(void *arg)
{
	struct tap_thread *a = arg;

	for (int i = 0; i < 3; i++)
		tb_tap_step(a->t, a->node, 100 + (uint64_t)i, a->t->t0_ns + a->t_ns[i]);
	return NULL;
}

/* Two threads' records merge into one time order (ties: the first's). */
START_TEST(test_tap_threads_merge)
{
	struct tv_tb_tap *t;
	struct tap_thread a, b;
	pthread_t ta, tb;
	char path[128], *text;
	size_t events = 0;
	json_t *l;
	static const int want_node[] = { 0, 1, 0, 1, 1, 0 };

	mk_tmpdir();
	ck_assert_int_eq(tv_tb_tap_create(2, &t), 0);
	a = (struct tap_thread){ t, 0, { 10, 30, 60 } };
	b = (struct tap_thread){ t, 1, { 20, 40, 50 } };
	ck_assert_int_eq(pthread_create(&ta, NULL, tap_thread_fn, &a), 0);
	ck_assert_int_eq(pthread_join(ta, NULL), 0);
	ck_assert_int_eq(pthread_create(&tb, NULL, tap_thread_fn, &b), 0);
	ck_assert_int_eq(pthread_join(tb, NULL), 0);
	tmp_path(path, sizeof(path), "tap.jsonl");
	ck_assert_int_eq(tv_tb_tap_write(t, path, &events), 0);
	ck_assert_uint_eq(events, 6);
	text = read_all(path);
	ck_assert_int_eq(count_lines(text), 7);
	for (int i = 0; i < 6; i++) {
		char *s = line_of(text, i + 1);

		l = json_loads(s, 0, NULL);
		ck_assert_ptr_nonnull(l);
		ck_assert_int_eq(json_integer_value(json_object_get(l, "i")), i);
		ck_assert_int_eq(json_integer_value(json_object_get(l, "node")),
				 want_node[i]);
		json_decref(l);
		free(s);
	}
	free(text);
	tv_tb_tap_free(t);

	/* Records never written are freed with the tap. */
	ck_assert_int_eq(tv_tb_tap_create(1, &t), 0);
	a = (struct tap_thread){ t, 0, { 1, 2, 3 } };
	ck_assert_int_eq(pthread_create(&ta, NULL, tap_thread_fn, &a), 0);
	ck_assert_int_eq(pthread_join(ta, NULL), 0);
	ck_assert_ptr_nonnull(t->bufs);
	ck_assert_uint_eq(t->bufs->n, 3);
	tv_tb_tap_free(t);
	rm_tmpdir();
}
END_TEST

/* Lines of records no simulator run makes: raw numbers stay numbers. */
START_TEST(test_tap_lines)
{
	struct tb_tap_rec r;
	json_t *l, *v;
	size_t npts;

	tv_flt_points(&npts);
	memset(&r, 0, sizeof(r));
	r.src = TB_TAP_SRC_FIRE;
	r.point = (uint16_t)npts;     /* beyond the table */
	r.hit = 4;
	r.node_hit = 2;
	r.node = 1;
	l = tb_tap_line(&r, 7);
	ck_assert_str_eq(json_string_value(json_object_get(l, "point")), "?");
	ck_assert_int_eq(json_integer_value(json_object_get(l, "node_hit")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "hit")), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "i")), 7);
	json_decref(l);

	memset(&r, 0, sizeof(r));
	r.src = TB_TAP_SRC_VERBS;
	r.ev.kind = TV_FLT_TAP_QP_STATE;
	r.ev.qp = 0;
	r.ev.cq = TV_FLT_TAP_NONE;
	r.ev.state = TV_QPS_ERR + 5;
	l = tb_tap_line(&r, 0);
	ck_assert_str_eq(json_string_value(json_object_get(l, "kind")), "QP_STATE");
	ck_assert_int_eq(json_integer_value(json_object_get(l, "state")),
			 TV_QPS_ERR + 5);
	ck_assert(json_is_null(json_object_get(l, "cq")));
	ck_assert(json_is_null(json_object_get(l, "op")));
	json_decref(l);
	r.ev.state = TV_QPS_ERR;
	l = tb_tap_line(&r, 0);
	ck_assert_str_eq(json_string_value(json_object_get(l, "state")),
			 tv_vf_qp_state_str(TV_QPS_ERR));
	json_decref(l);

	r.ev.kind = TV_FLT_TAP_POLL;
	r.ev.cq = 2;
	r.ev.opcode = TV_WC_SEND;
	r.ev.has_imm = true;
	r.ev.imm = 0xab;
	l = tb_tap_line(&r, 0);
	ck_assert_str_eq(json_string_value(json_object_get(l, "op")), "SEND");
	ck_assert_int_eq(json_integer_value(json_object_get(l, "cq")), 2);
	ck_assert_ptr_nonnull(json_string_value(json_object_get(l, "imm")));
	json_decref(l);

	v = tb_json_wc_op(TV_WC_COMP_SWAP);
	ck_assert_str_eq(json_string_value(v), "COMP_SWAP");
	json_decref(v);
	v = tb_json_wc_op(999);
	ck_assert_int_eq(json_integer_value(v), 999);
	json_decref(v);
	v = tb_json_wr_op(999);
	ck_assert_int_eq(json_integer_value(v), 999);
	json_decref(v);
}
END_TEST

/* serve --record on one rank: the recording in memory, then merged. */
START_TEST(test_record_finish_mem)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_tap *tap;
	char err[TV_TB_ERR_MAX], out[128], *buf = NULL, *text;
	size_t len = 0;
	uint64_t len64;

	mk_tmpdir();
	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "b", &sc, err), 0);
	buf = record_mem(sc, 1, &len);
	ck_assert_uint_gt(len, 0);
	ck_assert_msg(strncmp(buf, "{\"tensorverbs_trace\":1", 22) == 0, "%.100s",
		      buf);
	ck_assert_msg(strstr(buf, "\"backend\":\"ibverbs\"") != NULL, "%.300s", buf);
	ck_assert_msg(strstr(buf, "\"summary\":true") != NULL, "%s", buf);
	ck_assert_int_eq(access("unused.jsonl", F_OK), -1);
	/* The one rank's bytes merge into a file. */
	tmp_path(out, sizeof(out), "m.jsonl");
	len64 = len;
	ck_assert_int_eq(tb_record_merge_mem(out, &buf, &len64, 1, err,
					     sizeof(err)), 0);
	text = read_all(out);
	ck_assert_msg(strstr(text, "\"merged\":1") != NULL, "%.300s", text);
	free(text);
	free(buf);

	/* A tap that failed earlier gives its error, and is freed. */
	ck_assert_int_eq(tv_tb_record_create("unused.jsonl", sc, NULL, 1,
					     "ibverbs", &tap), 0);
	tap->err = -ENOMEM;
	buf = NULL;
	ck_assert_int_eq(tb_record_finish_mem(tap, &(struct tv_tb_result){ 0 },
					      &(struct tv_tb_failures){ 0 },
					      &buf, &len), -ENOMEM);
	ck_assert_ptr_null(buf);
	tv_tb_scenario_free(sc);
	rm_tmpdir();
}
END_TEST

/*
 * text's header with its recording's node, host and start times set, in
 * a malloc'd buffer; fail: the summary says FAIL.
 */
static char *rank_recording(const char *text, int node, const char *host,
			    int64_t t0, bool fail, uint64_t *len_p)
{
	char *copy = strdup(text), *nl = strchr(copy, '\n'), *hdr_text, *out,
	     *body;
	json_t *hdr, *rec;
	size_t len;

	ck_assert_ptr_nonnull(nl);
	*nl = 0;
	hdr = json_loads(copy, 0, NULL);
	ck_assert_ptr_nonnull(hdr);
	rec = json_object_get(hdr, "recording");
	json_object_set_new(rec, "node", json_integer(node));
	json_object_set_new(rec, "host", json_string(host));
	json_object_set_new(rec, "t0_monotonic_ns", json_integer(t0));
	json_object_set_new(rec, "t0_realtime_ns", json_integer(5000 - t0));
	hdr_text = json_dumps(hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
	body = strdup(nl + 1);
	if (fail) {
		char *p = strstr(body, "\"result\":\"PASS\"");

		ck_assert_ptr_nonnull(p);
		memcpy(p, "\"result\":\"FAIL\"", 15);
	}
	len = strlen(hdr_text) + 1 + strlen(body);
	out = malloc(len + 1);
	snprintf(out, len + 1, "%s\n%s", hdr_text, body);
	free(hdr_text);
	free(body);
	json_decref(hdr);
	free(copy);
	*len_p = len;
	return out;
}

/* First "t" of an event line in text. */
static int64_t first_t(const char *text, int node)
{
	int n = count_lines(text);

	for (int i = 1; i < n; i++) {
		char *s = line_of(text, i);
		json_t *l = json_loads(s, 0, NULL);
		int64_t t = -1;

		free(s);
		if (json_integer_value(json_object_get(l, "node")) == node &&
		    json_is_integer(json_object_get(l, "t")) &&
		    !json_object_get(l, "summary"))
			t = json_integer_value(json_object_get(l, "t"));
		json_decref(l);
		if (t >= 0)
			return t;
	}
	return -1;
}

/*
 * Merges on one host (the monotonic clocks, ties in rank order) and on
 * two (the wall clocks), a failing rank's summary, a bad first rank.
 */
START_TEST(test_record_merge_clocks)
{
	char a[128], out[128], err[1024], *text, *bufs[2], *m;
	uint64_t lens[2];
	json_t *sum;

	mk_tmpdir();
	record_text(basic, "a.jsonl", 1, "ibverbs", a, sizeof(a));
	text = read_all(a);
	tmp_path(out, sizeof(out), "m.jsonl");
	/* One host, both at 0: equal times, rank 0's line first. */
	bufs[0] = rank_recording(text, 0, "h", 0, false, &lens[0]);
	bufs[1] = rank_recording(text, 1, "h", 0, true, &lens[1]);
	ck_assert_int_eq(tb_record_merge_mem(out, bufs, lens, 2, err,
					     sizeof(err)), 0);
	m = read_all(out);
	ck_assert_int_eq(count_lines(m), 2 * (count_lines(text) - 2) + 2);
	{
		char *l1 = line_of(m, 1), *l2 = line_of(m, 2), *o1 = line_of(text, 1);
		json_t *j1 = json_loads(l1, 0, NULL), *j2 = json_loads(l2, 0, NULL),
		       *jo = json_loads(o1, 0, NULL);

		/* The same event from both ranks, rank 0's first. */
		ck_assert_int_eq(json_integer_value(json_object_get(j1, "t")),
				 json_integer_value(json_object_get(jo, "t")));
		ck_assert_int_eq(json_integer_value(json_object_get(j2, "t")),
				 json_integer_value(json_object_get(jo, "t")));
		ck_assert_int_eq(json_integer_value(json_object_get(j1, "i")), 0);
		ck_assert_int_eq(json_integer_value(json_object_get(j2, "i")), 1);
		json_decref(j1);
		json_decref(j2);
		json_decref(jo);
		free(l1);
		free(l2);
		free(o1);
	}
	{
		char *sl = line_of(m, count_lines(m) - 1);

		sum = json_loads(sl, 0, NULL);
		free(sl);
		ck_assert_str_eq(json_string_value(json_object_get(sum, "result")),
				 "FAIL");
		ck_assert(json_is_null(json_object_get(sum, "ops")));
		json_decref(sum);
	}
	free(m);
	free(bufs[0]);
	free(bufs[1]);

	/* Two hosts: the wall clocks (rank 1 started 4000 ns earlier). */
	bufs[0] = rank_recording(text, 0, "h0", 0, false, &lens[0]);
	bufs[1] = rank_recording(text, 1, "h1", 4000, false, &lens[1]);
	ck_assert_int_eq(tb_record_merge_mem(out, bufs, lens, 2, err,
					     sizeof(err)), 0);
	m = read_all(out);
	/* Rank 1 (wall 1000) comes 4000 ns before rank 0 (wall 5000). */
	ck_assert_int_eq(first_t(m, 0), first_t(text, 0));
	{
		char *l1 = line_of(m, 1);
		json_t *j1 = json_loads(l1, 0, NULL);

		ck_assert_int_eq(json_integer_value(json_object_get(j1, "t")),
				 first_t(text, 0) < first_t(text, 1) ?
				 first_t(text, 0) : first_t(text, 1));
		json_decref(j1);
		free(l1);
	}
	free(m);
	free(bufs[1]);
	/* A first rank that is not a recording: the others are closed. */
	bufs[1] = bufs[0];
	bufs[0] = strdup("{\"tensorverbs_trace\": 1}\n");
	lens[1] = lens[0];
	lens[0] = strlen(bufs[0]);
	ck_assert_int_eq(tb_record_merge_mem(out, bufs, lens, 2, err,
					     sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "rank 0's recording: header needs \"seed\"") != NULL,
		      "%s", err);
	free(bufs[0]);
	free(bufs[1]);
	free(text);
	rm_tmpdir();
}
END_TEST

/* A recording's event line whose "t" is not a number is refused. */
START_TEST(test_record_body_t_not_number)
{
	char a[128], path[128], *text, *l, *edited;
	json_t *j;
	const char *paths[1];

	mk_tmpdir();
	record_text(basic, "a.jsonl", 1, "sim", a, sizeof(a));
	text = read_all(a);
	l = line_of(text, 2);
	j = json_loads(l, 0, NULL);
	free(l);
	json_object_set_new(j, "t", json_string("soon"));
	l = json_dumps(j, JSON_COMPACT);
	edited = edit_lines(text, 2, l, NULL);
	tmp_path(path, sizeof(path), "t.jsonl");
	write_file(path, edited);
	{
		struct tv_tb_replay_sim_report rep;
		char err[1024];

		ck_assert_int_eq(tv_tb_replay_sim(path, &rep), -EINVAL);
		ck_assert_msg(strstr(rep.err, "t.jsonl:3: not an event of a recording") != NULL,
			      "%s", rep.err);
		tv_tb_replay_sim_report_free(&rep);
		paths[0] = path;
		tmp_path(a, sizeof(a), "m.jsonl");
		ck_assert_int_eq(tv_tb_record_merge(a, paths, 1, err, sizeof(err)),
				 -EINVAL);
		ck_assert_msg(strstr(err, "t.jsonl:3: not an event of a recording") != NULL,
			      "%s", err);
	}
	json_object_set_new(j, "t", json_integer(1));
	json_object_set_new(j, "node", json_null());
	free(l);
	free(edited);
	l = json_dumps(j, JSON_COMPACT);
	edited = edit_lines(text, 2, l, NULL);
	write_file(path, edited);
	{
		struct tv_tb_replay_sim_report rep;

		ck_assert_int_eq(tv_tb_replay_sim(path, &rep), -EINVAL);
		ck_assert_msg(strstr(rep.err, "t.jsonl:3: not an event of a recording") != NULL,
			      "%s", rep.err);
		tv_tb_replay_sim_report_free(&rep);
	}
	json_decref(j);
	free(l);
	free(edited);
	free(text);
	rm_tmpdir();
}
END_TEST

/* ---- trace lines from events no run makes ----------------------------------- */

static int collect_emit(void *ctx, json_t *ev)
{
	return json_array_append(ctx, ev) ? -ENOMEM : 0;
}

START_TEST(test_trace_rec_lines)
{
	json_t *got = json_array(), *l;
	struct tb_rec t;
	struct tv_sim_event ev;

	tb_rec_init(&t, collect_emit, got);
	/* No simulator: time 0. */
	tb_rec_fault_event(&t, "vf/ack/drop", 3, TV_TB_NO_NODE);
	tb_rec_node_event(&t, "CRASH", 1, NULL, 0, NULL);
	tb_rec_node_event(&t, "SKIP", 1, "send", 4, "x");
	memset(&ev, 0, sizeof(ev));
	ev.kind = TV_SIM_EV_QP_STATE;
	ev.status = TV_QPS_ERR + 3;
	ev.node = 0;
	ev.peer = UINT32_MAX;
	tb_rec_sim_event(&t, &ev);
	ev.kind = (enum tv_sim_event_kind)77;
	tb_rec_sim_event(&t, &ev);
	ev.kind = TV_SIM_EV_POST_SEND;
	ev.opcode = 99;
	ev.peer = 1;
	ev.rkey = 5;
	ev.remote_addr = 0x1000;
	tb_rec_sim_event(&t, &ev);
	ev.remote_addr = 0x0f00;
	tb_rec_sim_event(&t, &ev);
	ev.kind = TV_SIM_EV_CQE;
	ev.status = 77;
	ev.opcode = 77;
	ev.rkey = 0;
	ev.remote_addr = 0;
	tb_rec_sim_event(&t, &ev);
	ck_assert_int_eq(t.err, 0);
	ck_assert_uint_eq(t.count, 8);
	ck_assert_uint_eq(json_array_size(got), 8);

	l = json_array_get(got, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "t")), 0);
	ck_assert(json_is_null(json_object_get(l, "node")));
	ck_assert_str_eq(json_string_value(json_object_get(l, "point")), "vf/ack/drop");
	l = json_array_get(got, 1);
	ck_assert(json_is_null(json_object_get(l, "op")));
	ck_assert(json_is_null(json_object_get(l, "step")));
	l = json_array_get(got, 2);
	ck_assert_str_eq(json_string_value(json_object_get(l, "op")), "send");
	ck_assert_int_eq(json_integer_value(json_object_get(l, "step")), 4);
	l = json_array_get(got, 3);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "state")),
			 TV_QPS_ERR + 3);
	ck_assert(json_is_null(json_object_get(l, "peer")));
	ck_assert(json_is_null(json_object_get(l, "roff")));
	l = json_array_get(got, 4);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "kind")), 77);
	l = json_array_get(got, 5);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "op")), 99);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "roff")), 0);
	l = json_array_get(got, 6);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "roff")), -0x100);
	l = json_array_get(got, 7);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "status")), 77);
	ck_assert_int_eq(json_integer_value(json_object_get(l, "op")), 77);
	ck_assert(json_is_null(json_object_get(l, "rkey")));

	/* After an error, nothing more is made. */
	t.err = -EIO;
	tb_rec_fault_event(&t, "vf/ack/drop", 4, 0);
	tb_rec_node_event(&t, "CRASH", 0, NULL, 0, NULL);
	tb_rec_sim_event(&t, &ev);
	ck_assert_ptr_null(tb_rec_line(&t, "x", "Y"));
	ck_assert_uint_eq(json_array_size(got), 8);
	tb_rec_fini(&t);
	json_decref(got);
}
END_TEST

/* A trace finished without its run has no summary: replay says so. */
START_TEST(test_trace_finish_without_run)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_trace *t;
	char path[128], err[TV_TB_ERR_MAX], *text;

	mk_tmpdir();
	tmp_path(path, sizeof(path), "norun.jsonl");
	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "b", &sc, err), 0);
	ck_assert_int_eq(tv_tb_trace_create(path, sc, NULL, 1, "no-ack-timeout",
					    &t), 0);
	ck_assert_int_eq(tv_tb_trace_finish(t, NULL), 0);
	text = read_all(path);
	ck_assert_int_eq(count_lines(text), 1);
	ck_assert_msg(strstr(text, "\"test_breakage\":\"no-ack-timeout\"") != NULL,
		      "%s", text);
	free(text);
	replay_expect(path, TV_TB_REPLAY_MALFORMED,
		      "the trace ends without a summary line (truncated?)");
	ck_assert_int_eq(tv_tb_trace_create("/nonexistent/dir/t.jsonl", sc, NULL,
					    1, NULL, &t), -ENOENT);
	tv_tb_scenario_free(sc);
	rm_tmpdir();
}
END_TEST

static void hdr_plan_object(json_t *h) { json_object_set_new(h, "plan", json_object()); }
static void hdr_file_number(json_t *h) { json_object_set_new(h, "scenario_file", json_integer(3)); }
static void hdr_no_build(json_t *h) { json_object_del(h, "build_id"); }
static void hdr_seed_negative(json_t *h) { json_object_set_new(h, "seed", json_integer(-4)); }
static void hdr_breakage_number(json_t *h) { json_object_set_new(h, "test_breakage", json_integer(1)); }
static void hdr_scenario_array(json_t *h) { json_object_set_new(h, "scenario", json_array()); }
static void hdr_fmt_string(json_t *h) { json_object_set_new(h, "tensorverbs_trace", json_string("1")); }
static void hdr_no_plan(json_t *h) { json_object_del(h, "plan"); }
static void hdr_file_null(json_t *h) { json_object_set_new(h, "scenario_file", json_null()); }

/* Headers that are almost headers, each refused saying what one needs. */
START_TEST(test_trace_header_fields)
{
	static const struct {
		void (*fn)(json_t *h);
		const char *msg;
	} bad[] = {
		{ hdr_plan_object, "header needs \"plan\" (an array or null)" },
		{ hdr_file_number, "header needs \"scenario_file\" (a string or null)" },
		{ hdr_no_build, "header needs \"build_id\" (a string)" },
		{ hdr_seed_negative, "header needs \"seed\" (an integer >= 0)" },
		{ hdr_scenario_array, "header needs \"scenario\" (an object)" },
		{ hdr_no_plan, "header needs \"plan\" (an array or null)" },
		{ hdr_breakage_number, "header: unknown \"test_breakage\"" },
		{ hdr_fmt_string, "line 1 is not a tensorverbs trace header" },
	};
	char good[128], path[128], *text, *edited;

	mk_tmpdir();
	trace_text(basic, "good.jsonl", 3, NULL, good, sizeof(good));
	text = read_all(good);
	for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++) {
		char name[32];

		snprintf(name, sizeof(name), "h%zu.jsonl", i);
		with_header(text, name, path, sizeof(path), bad[i].fn);
		replay_expect(path, TV_TB_REPLAY_MALFORMED, bad[i].msg);
		ck_assert(strstr(path, name) != NULL);
	}
	/* A null scenario_file is no file: it replays. */
	with_header(text, "fnull.jsonl", path, sizeof(path), hdr_file_null);
	replay_expect(path, TV_TB_REPLAY_SAME, NULL);

	/* The last line without its newline is still a line. */
	tmp_path(path, sizeof(path), "nonl.jsonl");
	edited = strdup(text);
	edited[strlen(edited) - 1] = '\0';
	write_file(path, edited);
	replay_expect(path, TV_TB_REPLAY_SAME, NULL);
	free(edited);

	/* An "i" with a "src" that is not a string: neither kind of line. */
	edited = edit_lines(text, 1, "{\"i\": 0, \"src\": 4}", NULL);
	tmp_path(path, sizeof(path), "src.jsonl");
	write_file(path, edited);
	replay_expect(path, TV_TB_REPLAY_MALFORMED,
		      "src.jsonl:2: neither an event nor the summary");
	free(edited);

	/*
	 * A directory opens, but cannot be read: the error names it and
	 * says why (it used to be "malformed" with an empty message).
	 */
	{
		struct tv_tb_replay_sim_report srep;
		struct tv_tb_show_opts so = { .last = UINT64_MAX };
		char want[128], err[1024] = "";

		snprintf(want, sizeof(want), "%s: %s", tmpdir_path(), strerror(EISDIR));
		replay_expect(tmpdir_path(), TV_TB_REPLAY_MALFORMED, want);
		ck_assert_int_eq(tv_tb_replay_sim(tmpdir_path(), &srep), -EISDIR);
		ck_assert_msg(strstr(srep.err, want) != NULL, "%s", srep.err);
		tv_tb_replay_sim_report_free(&srep);
		ck_assert_int_eq(tv_tb_show(tmpdir_path(), &so, err, sizeof(err)), -EISDIR);
		ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	}
	free(text);
	rm_tmpdir();
}
END_TEST

/* ---- shrink's inputs and options ------------------------------------------ */

static void shrink_fails(const char *in, const char *out,
			 const struct tv_tb_shrink_opts *o, int rc,
			 const char *msg)
{
	struct tv_tb_shrink_report rep;
	char err[1024];

	memset(&rep, 0, sizeof(rep));
	ck_assert_int_eq(tv_tb_shrink(in, out, o, &rep, err, sizeof(err)), rc);
	ck_assert_msg(strstr(err, msg) != NULL, "err '%s' lacks '%s'", err, msg);
}

START_TEST(test_shrink_inputs)
{
	struct tv_tb_shrink_opts o = { .max_runs = 3 };
	struct tv_tb_shrink_report rep;
	char in[128], out[128], tr[128], err[1024], *text;
	json_t *min;

	mk_tmpdir();
	register_toy();
	tmp_path(out, sizeof(out), "min.json");

	tmp_path(in, sizeof(in), "arr.json");
	write_file(in, "[1, 2]\n");
	/* Valid JSON, not an object: no line number (it used to say -1). */
	shrink_fails(in, out, &o, -EINVAL, "arr.json: not a JSON object");
	tmp_path(in, sizeof(in), "broken.json");
	write_file(in, "{\n\"nodes\": ,\n}\n");
	shrink_fails(in, out, &o, -EINVAL, "broken.json:2: ");

	tmp_path(in, sizeof(in), "wl.json");
	write_file(in, "{\"workload\": 5, \"nodes\": 2}\n");
	shrink_fails(in, out, &o, -EINVAL,
		     "invalid scenario: $.workload: unknown workload");

	tmp_path(in, sizeof(in), "toy.json");
	write_file(in, "{\"workload\": \"coretoy\", \"nodes\": 2, \"ticks\": 1}\n");
	shrink_fails(in, out, &o, -EINVAL, "workload coretoy has no shrink edits");

	/* A kind it does not fail with. */
	tmp_path(in, sizeof(in), "ws.json");
	write_file(in, wrong_shape);
	o.has_kind = true;
	o.kind = TV_TB_FK_HANG;
	shrink_fails(in, out, &o, -EINVAL, "it does not fail with [hang]");
	o.has_kind = false;

	/* A passing one, with a breakage: no hint about TV_BREAK. */
	tmp_path(in, sizeof(in), "pass.json");
	write_file(in, basic);
	o.breakage = "no-ack-timeout";
	o.has_seed = true;
	o.seed = 1;
	memset(&rep, 0, sizeof(rep));
	ck_assert_int_eq(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "it does not fail with seed 1: nothing to shrink");
	o.breakage = NULL;
	o.has_seed = false;

	/* The output cannot be written. */
	tmp_path(in, sizeof(in), "ws.json");
	shrink_fails(in, "/nonexistent/dir/min.json", &o, -ENOENT,
		     "cannot write /nonexistent/dir/min.json: No such file or directory");
	/* A full disk. */
	shrink_fails(in, "/dev/full", &o, -ENOSPC,
		     "cannot write /dev/full: No space left on device");

	/* A scenario's own seed is the run's. */
	tmp_path(in, sizeof(in), "seeded.json");
	{
		json_t *j = json_loads(wrong_shape, 0, NULL);

		json_object_set_new(j, "seed", json_integer(42));
		ck_assert_int_eq(json_dump_file(j, in, 0), 0);
		json_decref(j);
	}
	memset(&rep, 0, sizeof(rep));
	ck_assert_msg(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(rep.seed, 42);
	ck_assert_int_eq(rep.kind, TV_TB_FK_EXPECT);
	ck_assert_uint_le(rep.runs, 3);
	ck_assert(rep.budget_reached);
	min = json_load_file(out, 0, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(min, "seed")), 42);
	json_decref(min);

	/* A trace with a plan: the plan comes back as the faults, the seed
	 * given wins over the trace's. */
	trace_text("{\"nodes\": 2, \"faults\": [{\"point\": \"vf/ack/drop\", \"count\": 1}],"
		   " \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [4, 4]}],"
		   " \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"shape\": [4, 5]}}]}]}",
		   "ws.jsonl", 9, NULL, tr, sizeof(tr));
	o.has_seed = true;
	o.seed = 11;
	o.max_runs = 0;
	memset(&rep, 0, sizeof(rep));
	ck_assert_msg(tv_tb_shrink(tr, out, &o, &rep, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(rep.seed, 11);
	ck_assert(!rep.budget_reached);
	ck_assert_str_eq(rep.breakage, "");
	text = read_all(out);
	ck_assert_msg(strstr(text, "\"seed\": 11") != NULL, "%s", text);
	free(text);

	/* A trace whose header is wrong: the message names the file. */
	{
		char *t2 = read_all(tr);

		with_header(t2, "badhdr.jsonl", in, sizeof(in), hdr_no_build);
		free(t2);
	}
	shrink_fails(in, out, &o, -EINVAL, "badhdr.jsonl: header needs");
	rm_tmpdir();
}
END_TEST

/* ---- swarm: generators that fail, workers that die ------------------------- */

static void swarm_one(uint64_t seed, const char *dir,
		      struct tv_tb_swarm_report *rep)
{
	struct tv_tb_swarm_opts o = { .seeds = 1, .first = seed, .jobs = 1,
				      .out_dir = dir, .workload = "coretoy" };

	ck_assert_int_eq(tv_tb_swarm(&o, rep), 0);
	ck_assert_uint_eq(rep->nfail, 1);
	ck_assert_uint_eq(rep->fail[0].seed, seed);
}

START_TEST(test_swarm_toy_failures)
{
	struct tv_tb_swarm_report rep;
	struct tv_tb_swarm_opts o = { .seeds = 1, .jobs = 1, .workload = "coretoy" };
	char dir[128];
	json_t *j, *f;

	mk_tmpdir();
	register_toy();
	/*
	 * Workers still running when the swarm has its answer are ended
	 * with SIGTERM; each worker resets it to the default action, so
	 * the handler Check gave this process (which would end the whole
	 * process group) is not what runs.
	 */
	tmp_path(dir, sizeof(dir), "out");
	/* No scenario: a runner failure with the generator's error. */
	swarm_one(2, dir, &rep);
	ck_assert_int_eq(rep.fail[0].first, TV_TB_FK_RUNNER);
	ck_assert_str_eq(rep.fail[0].msg, strerror(EDOM));
	ck_assert(!rep.fail[0].written);
	o.first = 2;
	j = tv_tb_swarm_result_json(&o, &rep);
	ck_assert_ptr_nonnull(j);
	f = json_array_get(json_object_get(j, "failures"), 0);
	ck_assert(json_is_null(json_object_get(f, "scenario_file")));
	ck_assert(json_is_null(json_object_get(f, "trace")));
	ck_assert(json_is_false(json_object_get(f, "reproduced")));
	json_decref(j);

	/* The worker exits: a crash, the status said; the rerun exits too. */
	swarm_one(3, dir, &rep);
	ck_assert_int_eq(rep.fail[0].first, TV_TB_FK_CRASH);
	ck_assert_str_eq(rep.fail[0].msg, "the worker exited with 7");
	ck_assert(rep.fail[0].written);
	ck_assert_int_eq(rep.fail[0].rerun_status, 7);

	/* Killed: the signal named; the rerun is killed as well. */
	swarm_one(5, dir, &rep);
	ck_assert_int_eq(rep.fail[0].first, TV_TB_FK_CRASH);
	ck_assert_msg(strstr(rep.fail[0].msg, "the run died of signal 9 (") != NULL,
		      "%s", rep.fail[0].msg);
	ck_assert_int_eq(rep.fail[0].rerun_status, 128 + SIGKILL);

	/* An invalid scenario is the generator's fault. */
	swarm_one(6, dir, &rep);
	ck_assert_int_eq(rep.fail[0].first, TV_TB_FK_RUNNER);
	ck_assert_str_eq(rep.fail[0].msg, "invalid scenario: $.nodes: needs at least 2 nodes");
	ck_assert(rep.fail[0].written);
	ck_assert_int_eq(rep.fail[0].rerun_status, 2);

	/* A failing one reproduces; out_dir cannot be made: not written. */
	swarm_one(4, dir, &rep);
	ck_assert_int_eq(rep.fail[0].first, TV_TB_FK_EXPECT);
	ck_assert_int_eq(rep.fail[0].rerun_status, 1);
	swarm_one(4, "/nonexistent/dir/out", &rep);
	ck_assert(!rep.fail[0].written);
	rm_tmpdir();
}
END_TEST

/* ---- JUnit ------------------------------------------------------------------- */

START_TEST(test_junit_control_bytes)
{
	struct tv_tb_junit_case c[2] = {
		{ .classname = "tensorverbs.run", .name = "a\x01" "b\tc",
		  .failure = "line1\nline2\x02", .time_s = 1.5 },
		{ .classname = "tensorverbs.run", .name = "ok" },
	};
	char path[128], *text;

	mk_tmpdir();
	tmp_path(path, sizeof(path), "j.xml");
	ck_assert_int_eq(tv_tb_junit_write(path, "s\x1f", c, 2), 0);
	text = read_all(path);
	ck_assert_msg(strstr(text, "name=\"ab\tc\" time=\"1.500\"") != NULL, "%s", text);
	/* No type: "failure"; no text: the message again. */
	ck_assert_msg(strstr(text, "<failure message=\"line1\nline2\" type=\"failure\">line1\nline2</failure>") != NULL,
		      "%s", text);
	ck_assert_msg(strstr(text, "name=\"ok\" time=\"0.000\"/>") != NULL, "%s", text);
	ck_assert_msg(strchr(text, '\x01') == NULL && strchr(text, '\x1f') == NULL,
		      "%s", text);
	free(text);
	rm_tmpdir();
}
END_TEST


/* ---- workloads, invariants, breakages ----------------------------------- */

static const struct tv_tb_workload_ops no_name = { .about = "x" };
static const struct tv_tb_workload_ops no_parse = { .name = "np" };
static const struct tv_tb_workload_ops no_setup = { .name = "ns",
						    .parse = toy_parse };
static const struct tv_tb_workload_ops no_progress = {
	.name = "npr", .parse = toy_parse, .setup = toy_setup };

START_TEST(test_workload_register_refused)
{
	char names[512];

	register_toy();
	ck_assert_int_eq(tv_tb_workload_register(NULL), -EINVAL);
	ck_assert_int_eq(tv_tb_workload_register(&no_name), -EINVAL);
	ck_assert_int_eq(tv_tb_workload_register(&no_parse), -EINVAL);
	ck_assert_int_eq(tv_tb_workload_register(&no_setup), -EINVAL);
	ck_assert_int_eq(tv_tb_workload_register(&no_progress), -EINVAL);
	ck_assert_ptr_null(tv_tb_workload_find("npr"));
	ck_assert_int_eq(tv_tb_workload_register(&toy), -EEXIST);
	/* A core point is every workload's; another's is not. */
	ck_assert(tv_tb_workload_has_point(&toy, "node/crash"));
	ck_assert(!tv_tb_workload_has_point(&toy, "port/fifo/full"));
	ck_assert(!tv_tb_workload_has_point(&toy, "no/such/point"));
	/* A workload without breakages adds none to the list. */
	ck_assert_int_eq(tv_tb_breakage_check("no-ack-timeout"), 0);
	ck_assert_int_eq(tv_tb_breakage_check("coretoy-broken"), -EINVAL);
	tv_tb_breakage_names(names, sizeof(names));
	ck_assert_msg(strstr(names, "no-ack-timeout") != NULL, "%s", names);
}
END_TEST

struct inv_count {
	uint64_t events, ends;
};

static void inv_event(void *ctx, struct tv_tb_run *run,
		      const struct tv_sim_event *ev)
{
	(void)run;
	(void)ev;
	((struct inv_count *)ctx)->events++;
}

static void inv_end(void *ctx, struct tv_tb_run *run)
{
	((struct inv_count *)ctx)->ends++;
	tv_tb_fail(run, TV_TB_FK_EXPECT, "invariant at end");
}

/* The caller's invariants: each half optional; a breakage not the toy's. */
START_TEST(test_toy_invariants_and_breakage)
{
	struct inv_count a = { 0 }, b = { 0 };
	struct tv_tb_invariant inv[2] = {
		{ .name = "events", .ctx = &a, .sim_event = inv_event },
		{ .name = "end", .ctx = &b, .at_end = inv_end },
	};
	struct tv_tb_scenario *sc;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run = NULL;
	struct tb_outcome out;
	char err[TV_TB_ERR_MAX];
	json_t *root;

	register_toy();
	ck_assert_int_eq(tv_tb_scenario_load_string(
		"{\"workload\": \"coretoy\", \"nodes\": 2, \"ticks\": 2}", "inv",
		&sc, err), 0);
	tv_tb_run_opts_init(&o, sc);
	o.invariants = inv;
	o.ninvariants = 2;
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	ck_assert_uint_eq(a.events, tv_tb_run_result(run)->sim_events);
	ck_assert_uint_gt(a.events, 0);
	ck_assert_uint_eq(b.ends, 1);
	ck_assert_uint_eq(b.events, 0);
	ck_assert_uint_eq(tv_tb_run_failures(run)->count, 1);
	ck_assert_str_eq(tv_tb_run_failures(run)->msgs[0], "invariant at end");
	tv_tb_run_free(run);
	run = NULL;
	o.invariants = NULL;
	o.ninvariants = 0;
	o.breakage = "no-ack-timeout";
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), -EINVAL);
	ck_assert_ptr_null(run);
	tv_tb_scenario_free(sc);

	root = json_loads("{\"workload\": \"coretoy\", \"nodes\": 2, \"ticks\": 2}",
			  0, NULL);
	ck_assert_int_eq(tb_run_json(root, 1, "no-ack-timeout", false, &out), 0);
	ck_assert(out.invalid);
	ck_assert_str_eq(out.first_msg,
			 "breakage 'no-ack-timeout' unknown to workload coretoy");
	json_decref(root);
}
END_TEST

/*
 * A setup that fails (not for memory) ends the run there: no operation
 * ran, the run is freed without the workload's state, and it fails as a
 * runner failure naming the workload (it passed with 0 failures before).
 */
START_TEST(test_toy_setup_error)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;

	register_toy();
	run = run_text("{\"workload\": \"coretoy\", \"nodes\": 2, \"ticks\": 2,"
		       " \"err\": 5}", 1, &sc);
	ck_assert_ptr_null(tv_tb_run_wl(run));
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->sim_events, 0);
	/* A run whose set-up failed fails, naming the workload and why. */
	ck_assert_uint_eq(tv_tb_run_failures(run)->count, 1);
	ck_assert_uint_eq(tv_tb_run_result(run)->failures, 1);
	ck_assert_str_eq(tv_tb_run_outcome(run), "FAIL");
	ck_assert_msg(strstr(tv_tb_run_failures(run)->msgs[0],
			     "coretoy: the run's set-up failed: ") != NULL,
		      "%s", tv_tb_run_failures(run)->msgs[0]);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- fault plans: node rules, the text form's every key -------------------- */

static void plan_ok(const char *text)
{
	char err[512] = "";
	json_t *p = json_loads(text, 0, NULL);

	ck_assert_ptr_nonnull(p);
	ck_assert_msg(tv_tb_plan_validate(p, err, sizeof(err)) == 0, "%s: %s",
		      text, err);
	json_decref(p);
}

static void plan_bad(const char *text, const char *msg)
{
	char err[512] = "";
	json_t *p = json_loads(text, 0, NULL);

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(tv_tb_plan_validate(p, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, msg) != NULL, "%s: '%s' lacks '%s'", text,
		      err, msg);
	json_decref(p);
}

START_TEST(test_plan_node_rules)
{
	json_t *plan = NULL, *r;
	char err[512];

	/* Node rules: told apart by node, then nth. */
	plan_ok("[{\"point\": \"vf/ack/drop\", \"node\": 0, \"nth\": 1},"
		" {\"point\": \"vf/ack/drop\", \"node\": 1, \"nth\": 1},"
		" {\"point\": \"vf/ack/drop\", \"node\": 1, \"nth\": 2}]");
	plan_ok("[{\"point\": \"vf/ack/drop\", \"node\": 0},"
		" {\"point\": \"vf/ack/drop\"}]");
	plan_ok("[{\"point\": \"vf/ack/drop\", \"node\": 0},"
		" {\"point\": \"vf/ack/drop\", \"node\": 0, \"nth\": 3}]");
	plan_bad("[{\"point\": \"vf/ack/drop\", \"node\": 1, \"nth\": 2},"
		 " {\"point\": \"vf/ack/drop\", \"node\": 1, \"nth\": 2}]",
		 "vf/ack/drop");
	plan_bad("[{\"point\": \"vf/ack/drop\", \"node\": 1},"
		 " {\"point\": \"vf/ack/drop\", \"node\": 1}]", "vf/ack/drop");
	plan_bad("[{\"point\": 3}]", "rule 0 needs a \"point\"");
	ck_assert_uint_eq(tb_plan_mask(NULL), 0);

	/* The text form after blanks, every key. */
	ck_assert_msg(tv_tb_plan_from_text(" \n\tvf/ack/drop:nth=2,count=3,after=5,"
					   "before=900,node=1,p=0.5;node/crash:arg=0x10",
					   &plan, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(json_array_size(plan), 2);
	r = json_array_get(plan, 0);
	ck_assert_str_eq(json_string_value(json_object_get(r, "point")), "vf/ack/drop");
	ck_assert_int_eq(json_integer_value(json_object_get(r, "nth")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "count")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "after_ns")), 5);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "before_ns")), 900);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "node")), 1);
	ck_assert(json_real_value(json_object_get(r, "probability")) == 0.5);
	r = json_array_get(plan, 1);
	ck_assert_str_eq(json_string_value(json_object_get(r, "point")), "node/crash");
	ck_assert_int_eq(json_integer_value(json_object_get(r, "arg")), 16);
	ck_assert(tb_plan_mask(plan) != 0);
	json_decref(plan);
	plan = NULL;
	ck_assert_int_eq(tv_tb_plan_from_text("\t[{\"point\": \"vf/ack/drop\"}]",
					      &plan, err, sizeof(err)), 0);
	ck_assert_uint_eq(json_array_size(plan), 1);
	json_decref(plan);
}
END_TEST


/* ---- replay --sim: plans from bare firings, a changed completion ---------- */

/* Each FIRE line of text loses its node_hit; extra lines go before line 1. */
static char *bare_fires(const char *text)
{
	size_t cap = strlen(text) + 512;
	char *out = calloc(1, cap), *o = out;
	const char *p = text, *e;

	ck_assert_ptr_nonnull(out);
	/* One pass over the lines (line_of() per line was quadratic). */
	for (int i = 0; (e = strchr(p, '\n')) != NULL; i++, p = e + 1) {
		char *l = strndup(p, (size_t)(e - p));
		json_t *j = json_loads(l, 0, NULL);

		if (!j)
			ck_abort_msg("line %d is not JSON: %s", i, l);
		if (i == 1)
			o += sprintf(o, "{\"i\":0,\"t\":0,\"src\":\"fault\",\"kind\":\"FIRE\",\"node\":0}\n"
				     "{\"i\":0,\"t\":0,\"src\":\"fault\",\"kind\":\"FIRE\",\"node\":0,\"point\":\"vf/ack/drop\"}\n");
		if (json_object_get(j, "node_hit")) {
			json_object_del(j, "node_hit");
			free(l);
			l = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
		}
		o += sprintf(o, "%s\n", l);
		json_decref(j);
		free(l);
	}
	return out;
}

START_TEST(test_replay_sim_plan_and_divergence)
{
	char a[128], path[128], *text, *edited;
	struct tv_tb_replay_sim_report rep;
	int n, k = -1;

	mk_tmpdir();
	/* Recorded on "hardware", two firings without their node's hits:
	 * one rule, its count two; lines with no point or hit are skipped. */
	record_text("{\"nodes\": 2, \"faults\": [{\"point\": \"vf/ack/drop\", \"count\": 2}], "
		    "\"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]},"
		    " {\"from\": 0, \"to\": 1, \"name\": \"u\", \"dtype\": \"float\", \"shape\": [8]}],"
		    " \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}, {\"node\": 1, \"from\": 0, \"name\": \"u\"}]}]}",
		    "hw.jsonl", 1, "ibverbs", a, sizeof(a));
	text = read_all(a);
	edited = bare_fires(text);
	free(text);
	tmp_path(path, sizeof(path), "bare.jsonl");
	write_file(path, edited);
	free(edited);
	ck_assert_int_eq(tv_tb_replay_sim(path, &rep), 0);
	ck_assert_str_eq(rep.backend, "ibverbs");
	ck_assert_uint_eq(rep.fires, 4);
	ck_assert_uint_ge(rep.fires_same, 2);
	tv_tb_replay_sim_report_free(&rep);

	/* A sim recording whose first completion's status changed. */
	record_text(basic, "a.jsonl", 1, "sim", a, sizeof(a));
	text = read_all(a);
	n = count_lines(text);
	for (int i = 1; i < n && k < 0; i++) {
		char *l = line_of(text, i);

		if (strstr(l, "\"kind\":\"POLL\""))
			k = i;
		free(l);
	}
	ck_assert_int_gt(k, 0);
	{
		char *l = line_of(text, k);
		json_t *j = json_loads(l, 0, NULL);

		json_object_set_new(j, "status", json_string("WR_FLUSH_ERR"));
		free(l);
		l = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
		edited = edit_lines(text, k, l, NULL);
		json_decref(j);
		free(l);
	}
	tmp_path(path, sizeof(path), "div.jsonl");
	write_file(path, edited);
	free(edited);
	ck_assert_int_eq(tv_tb_replay_sim(path, &rep), 0);
	ck_assert(rep.diverged);
	/*
	 * The completion is the simulator's to make; what differs is what
	 * the engine does after it: the next recorded post, on the QP.
	 */
	ck_assert_msg(rep.div_index == (uint64_t)k, "div %" PRIu64 " k %d",
		      rep.div_index, k);
	ck_assert(!rep.div_polls);
	ck_assert_int_eq(rep.div_qp, 0);
	ck_assert_uint_eq(rep.div_node, 0);
	ck_assert_ptr_nonnull(rep.expected);
	ck_assert_msg(strstr(rep.expected, "\"kind\":\"POST_SEND\"") != NULL, "%s",
		      rep.expected);
	ck_assert_ptr_nonnull(rep.actual);
	ck_assert_msg(strstr(rep.actual, "\"state\":\"ERR\"") != NULL, "%s",
		      rep.actual);
	tv_tb_replay_sim_report_free(&rep);
	free(text);
	rm_tmpdir();
}
END_TEST


/* ---- show: a workload without drawings, events no run makes -------------- */

static void show_both(const char *path, char **svg_p, char **chrome_p)
{
	struct tv_tb_show_opts o = { .last = UINT64_MAX };
	char svg[128], chrome[128], err[512] = "";
	json_t *j;

	tmp_path(svg, sizeof(svg), "d.svg");
	tmp_path(chrome, sizeof(chrome), "d.json");
	o.svg_path = svg;
	o.chrome_path = chrome;
	ck_assert_msg(tv_tb_show(path, &o, err, sizeof(err)) == 0, "%s", err);
	j = json_load_file(chrome, 0, NULL);
	ck_assert_msg(j != NULL, "%s: Chrome JSON does not parse", path);
	json_decref(j);
	*svg_p = read_all(svg);
	*chrome_p = read_all(chrome);
}

START_TEST(test_show_toy_and_odd_events)
{
	char path[128], *text, *edited, *svg, *chrome, *sum;
	int n;

	mk_tmpdir();
	register_toy();
	/* The toy has no drawing: the core's rows, its lines as notes. */
	trace_text("{\"workload\": \"coretoy\", \"name\": \"toyshow\", \"nodes\": 2,"
		   " \"ticks\": 2, \"fail\": true}", "toy.jsonl", 1, NULL, path,
		   sizeof(path));
	show_both(path, &svg, &chrome);
	ck_assert_msg(strstr(svg, "toyshow") != NULL, "%.400s", svg);
	ck_assert_msg(strstr(svg, "FAIL") != NULL, "%.400s", svg);
	ck_assert_msg(strstr(chrome, "\"traceEvents\"") != NULL, "%.200s", chrome);
	free(svg);
	free(chrome);

	/* Simulator events of every odd kind, before the summary. */
	trace_text(basic, "b.jsonl", 1, NULL, path, sizeof(path));
	text = read_all(path);
	n = count_lines(text);
	sum = line_of(text, n - 1);
	edited = edit_lines(text, n - 1,
		"{\"i\":900,\"t\":5000,\"src\":\"sim\",\"seq\":1,\"kind\":\"RNR\",\"node\":1,\"peer\":0,\"qpn\":3,\"op\":\"SEND\",\"status\":\"RNR_RETRY_EXC_ERR\",\"state\":null,\"imm\":null,\"wr_id\":\"0x1\",\"rkey\":null,\"roff\":null,\"len\":0}\n"
		"{\"i\":901,\"t\":6000,\"src\":\"sim\",\"seq\":2,\"kind\":\"CQE\",\"node\":0,\"peer\":null,\"qpn\":3,\"op\":\"SEND\",\"status\":\"WR_FLUSH_ERR\",\"state\":null,\"imm\":null,\"wr_id\":\"0x1\",\"rkey\":null,\"roff\":null,\"len\":0}\n"
		"{\"i\":902,\"t\":6000,\"src\":\"sim\",\"seq\":3,\"kind\":\"CQE\",\"node\":0,\"peer\":null,\"qpn\":3,\"op\":\"SEND\",\"status\":\"WR_FLUSH_ERR\",\"state\":null,\"imm\":null,\"wr_id\":\"0x2\",\"rkey\":null,\"roff\":null,\"len\":0}\n"
		"{\"i\":903,\"t\":6000,\"src\":\"sim\",\"seq\":4,\"kind\":\"CQE\",\"node\":0,\"peer\":null,\"qpn\":3,\"op\":\"SEND\",\"status\":\"REM_ACCESS_ERR\",\"state\":null,\"imm\":null,\"wr_id\":\"0x3\",\"rkey\":null,\"roff\":null,\"len\":0}\n"
		"{\"i\":904,\"t\":7000,\"src\":\"sim\",\"seq\":5,\"kind\":\"QP_STATE\",\"node\":0,\"peer\":null,\"qpn\":3,\"op\":null,\"status\":null,\"state\":\"ERR\",\"imm\":null,\"wr_id\":\"0x0\",\"rkey\":null,\"roff\":null,\"len\":0}\n"
		"{\"i\":905,\"t\":8000,\"src\":\"sim\",\"seq\":6,\"kind\":\"DELIVER\",\"node\":1,\"peer\":0,\"qpn\":3,\"op\":\"RDMA_WRITE_WITH_IMM\",\"status\":null,\"state\":null,\"imm\":\"0x7\",\"wr_id\":\"0x99\",\"rkey\":null,\"roff\":null,\"len\":4}\n"
		"{\"i\":906,\"t\":9000,\"src\":\"sim\",\"seq\":7,\"kind\":\"CQ_OVERFLOW\",\"node\":1,\"peer\":null,\"qpn\":0,\"op\":null,\"status\":null,\"state\":null,\"imm\":null,\"wr_id\":\"0x0\",\"rkey\":null,\"roff\":null,\"len\":0}",
		NULL);
	{
		char *t2 = malloc(strlen(edited) + strlen(sum) + 2);

		sprintf(t2, "%s%s\n", edited, sum);
		free(edited);
		edited = t2;
	}
	tmp_path(path, sizeof(path), "odd.jsonl");
	write_file(path, edited);
	show_both(path, &svg, &chrome);
	ck_assert_msg(strstr(svg, "RNR from node 0") != NULL, "%s", svg);
	ck_assert_msg(strstr(chrome, "RNR RNR_RETRY_EXC_ERR SEND x1") != NULL, "%s", chrome);
	/* Two equal error completions at one time are one, counted. */
	ck_assert_msg(strstr(chrome, "CQE WR_FLUSH_ERR SEND x2") != NULL, "%s", chrome);
	ck_assert_msg(strstr(chrome, "CQE REM_ACCESS_ERR SEND x1") != NULL, "%s", chrome);
	ck_assert_msg(strstr(chrome, "CQ_OVERFLOW") != NULL, "%s", chrome);
	ck_assert_msg(strstr(chrome, "QP 3 -> ERR") != NULL, "%s", chrome);
	free(svg);
	free(chrome);
	free(edited);
	free(sum);
	free(text);
	rm_tmpdir();
}
END_TEST

/* ---- record: odd summaries, headers of merges ----------------------------- */

START_TEST(test_record_summary_and_headers)
{
	struct tv_tb_failures f = { 0 };
	struct tv_tb_result res = { .failures = 2, .ops = 3 };
	json_t *sum, *msgs;
	char a[128], out[128], err[1024], *text, *bufs[2];
	uint64_t lens[2];
	uint32_t kind = 0;
	struct tv_tb_scenario *sc;
	char serr[TV_TB_ERR_MAX];

	/* No operation counts; a failure without its message. */
	tb_failures_add(&f, TV_TB_FK_HANG, "first");
	tb_failures_add(&f, TV_TB_FK_DATA, "second");
	free(f.msgs[1]);
	f.msgs[1] = NULL;
	ck_assert_int_eq(tb_tap_summary(9, &res, &f, true, &sum), 0);
	ck_assert(json_is_null(json_object_get(sum, "ops")));
	ck_assert(json_is_null(json_object_get(sum, "ops_ok")));
	ck_assert_str_eq(json_string_value(json_object_get(sum, "result")), "FAIL");
	msgs = json_object_get(sum, "failures");
	ck_assert_uint_eq(json_array_size(msgs), 2);
	ck_assert_str_eq(json_string_value(json_array_get(msgs, 1)), "?");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(sum,
				"failure_kinds"), 0)), "hang");
	json_decref(sum);
	tb_failures_free(&f);
	ck_assert_int_eq(tb_tap_kind_parse("", &kind), -EINVAL);

	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "b", &sc, serr), 0);
	ck_assert_int_eq(tv_tb_record_create("x", sc, NULL, 1, "sim", NULL),
			 -EINVAL);
	tv_tb_scenario_free(sc);

	mk_tmpdir();
	record_text(basic, "a.jsonl", 1, "ibverbs", a, sizeof(a));
	text = read_all(a);
	tmp_path(out, sizeof(out), "m.jsonl");
	/* A recording whose backend is not a string is not one. */
	bufs[0] = rank_recording(text, 0, "h", 0, false, &lens[0]);
	{
		char *p = strstr(bufs[0], "\"backend\":\"ibverbs\"");

		ck_assert_ptr_nonnull(p);
		memcpy(p, "\"backend\":12345678 ", 19);
	}
	ck_assert_int_eq(tb_record_merge_mem(out, bufs, lens, 1, err,
					     sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "rank 0's recording: not a recording (no \"recording\" in its header)");
	free(bufs[0]);
	/* Ranks without a node number are node 0 twice. */
	bufs[0] = rank_recording(text, 0, "h", 0, false, &lens[0]);
	bufs[1] = rank_recording(text, 0, "h", 0, false, &lens[1]);
	{
		char *p = strstr(bufs[1], "\"node\":0,");

		ck_assert_ptr_nonnull(p);
		memcpy(p, "\"nodx\":0,", 9);
	}
	ck_assert_int_eq(tb_record_merge_mem(out, bufs, lens, 2, err,
					     sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "rank 1's recording: node 0 again (rank 0's recording has it)") != NULL,
		      "%s", err);
	free(bufs[0]);
	free(bufs[1]);
	free(text);
	rm_tmpdir();
}
END_TEST


/* ---- the fault-plan shrink edits, one by one --------------------------------- */

static json_t *sc_with(const char *faults)
{
	char text[512];
	json_t *sc;

	snprintf(text, sizeof(text), "{\"nodes\": 2, \"faults\": %s}", faults);
	sc = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(sc);
	return sc;
}

static json_t *rule0(json_t *sc)
{
	return json_array_get(json_object_get(sc, "faults"), 0);
}

static json_int_t rule_int(json_t *sc, size_t k, const char *key)
{
	return json_integer_value(json_object_get(json_array_get(
		json_object_get(sc, "faults"), k), key));
}

START_TEST(test_shrink_plan_edits)
{
	struct tv_tb_shrink_state cur = { 0 };
	const struct tv_flt_point_info *pts, *pt = tv_flt_point_find("vf/ack/drop");
	int (*lower)(json_t *, size_t, const struct tv_tb_shrink_state *) =
		tv_tb_edit_lower_fault.fn;
	int (*pin)(json_t *, size_t, const struct tv_tb_shrink_state *) =
		tv_tb_edit_pin_faults.fn;
	int (*aim)(json_t *, size_t, const struct tv_tb_shrink_state *) =
		tv_tb_edit_aim_earlier.fn;
	int (*drop)(json_t *, size_t, const struct tv_tb_shrink_state *) =
		tv_tb_edit_drop_fault.fn;
	size_t n, k;
	json_t *sc;

	pts = tv_flt_points(&n);
	ck_assert_ptr_nonnull(pt);
	k = (size_t)(pt - pts);

	/* Lower: count halves (or becomes 1), nth halves, the window and the
	 * probability and the arg go; each says when it has nothing to do. */
	sc = sc_with("[{\"point\": \"vf/ack/drop\"}]");
	ck_assert_int_eq(lower(sc, 0, &cur), 0);
	ck_assert_int_eq(rule_int(sc, 0, "count"), 1);
	ck_assert_int_eq(lower(sc, 0, &cur), -EAGAIN);
	ck_assert_int_eq(lower(sc, 1, &cur), -EAGAIN);
	ck_assert_int_eq(lower(sc, 2, &cur), -EAGAIN);
	ck_assert_int_eq(lower(sc, 3, &cur), -EAGAIN);
	ck_assert_int_eq(lower(sc, 4, &cur), -EAGAIN);
	ck_assert_int_eq(lower(sc, 5, &cur), -ENOENT);
	json_decref(sc);
	sc = sc_with("[{\"point\": \"vf/ack/drop\", \"count\": 6, \"nth\": 1,"
		     " \"before_ns\": 9, \"probability\": 0.5, \"arg\": 3}]");
	ck_assert_int_eq(lower(sc, 0, &cur), 0);
	ck_assert_int_eq(rule_int(sc, 0, "count"), 3);
	ck_assert_int_eq(lower(sc, 1, &cur), -EAGAIN);
	ck_assert_int_eq(lower(sc, 2, &cur), 0);
	ck_assert_ptr_null(json_object_get(rule0(sc), "before_ns"));
	ck_assert_int_eq(lower(sc, 3, &cur), 0);
	ck_assert_ptr_null(json_object_get(rule0(sc), "probability"));
	ck_assert_int_eq(lower(sc, 4, &cur), 0);
	ck_assert_ptr_null(json_object_get(rule0(sc), "arg"));
	json_decref(sc);
	sc = sc_with("[]");
	ck_assert_int_eq(drop(sc, 0, &cur), -ENOENT);
	json_decref(sc);

	/* Pin: a rule of no known point, one that never fired, one pinned
	 * already; rule k alone, first then last hit. */
	sc = sc_with("[{\"point\": \"no/such\"}, {\"point\": \"vf/ack/drop\", \"p\": 1}]");
	json_object_del(json_array_get(json_object_get(sc, "faults"), 1), "p");
	json_object_set_new(json_array_get(json_object_get(sc, "faults"), 1),
			    "probability", json_real(0.5));
	ck_assert_int_eq(pin(sc, 2, &cur), -EAGAIN);    /* rule 0: no point */
	ck_assert_int_eq(pin(sc, 4, &cur), -EAGAIN);    /* never fired: no hit */
	cur.fires[k] = 2;
	cur.first_hit[k] = 3;
	cur.last_hit[k] = 7;
	ck_assert_int_eq(pin(sc, 5, &cur), 0);
	ck_assert_int_eq(rule_int(sc, 1, "nth"), 7);
	ck_assert_int_eq(rule_int(sc, 1, "count"), 1);
	ck_assert_ptr_null(json_object_get(json_array_get(json_object_get(sc, "faults"), 1),
					   "probability"));
	ck_assert_int_eq(pin(sc, 5, &cur), -EAGAIN);    /* pinned there already */
	ck_assert_int_eq(pin(sc, 6, &cur), -ENOENT);
	/* Every rule at once: the unknown one (never fired) goes. */
	ck_assert_int_eq(pin(sc, 0, &cur), 0);
	ck_assert_uint_eq(json_array_size(json_object_get(sc, "faults")), 1);
	ck_assert_int_eq(rule_int(sc, 0, "nth"), 3);
	ck_assert_int_eq(pin(sc, 0, &cur), -EAGAIN);
	/* One-shot now: aimed at an earlier hit, not at a later one. */
	ck_assert_ptr_nonnull(tv_tb_plan_one_shot_rule(sc));
	ck_assert_int_eq(aim(sc, 2, &cur), -EAGAIN);    /* hit 3 = nth */
	ck_assert_int_eq(aim(sc, 1, &cur), 0);
	ck_assert_int_eq(rule_int(sc, 0, "nth"), 2);
	ck_assert_int_eq(aim(sc, 64, &cur), -ENOENT);
	json_decref(sc);
	/* Not one-shot: two rules; nth 0; count 2; a probability. */
	sc = sc_with("[{\"point\": \"vf/ack/drop\", \"nth\": 1, \"count\": 1},"
		     " {\"point\": \"vf/write/dup\"}]");
	ck_assert_ptr_null(tv_tb_plan_one_shot_rule(sc));
	json_decref(sc);
	sc = sc_with("[{\"point\": \"vf/ack/drop\", \"count\": 1}]");
	ck_assert_ptr_null(tv_tb_plan_one_shot_rule(sc));
	json_decref(sc);
	sc = sc_with("[{\"point\": \"vf/ack/drop\", \"nth\": 5, \"count\": 2}]");
	ck_assert_ptr_null(tv_tb_plan_one_shot_rule(sc));
	ck_assert_int_eq(aim(sc, 1, &cur), -EAGAIN);
	json_decref(sc);
	sc = sc_with("[{\"point\": \"vf/ack/drop\", \"nth\": 5, \"count\": 1, \"probability\": 0.5}]");
	ck_assert_ptr_null(tv_tb_plan_one_shot_rule(sc));
	ck_assert_int_eq(aim(sc, 1, &cur), -EAGAIN);
	json_decref(sc);
}
END_TEST


/* ---- swarm's fault mixes: points left out, the toy's core points ---------- */

START_TEST(test_swarm_gen_faults_without)
{
	const struct tv_tb_workload_ops *rv = tv_tb_workload_find("rendezvous");
	size_t with_rules = 0, crash_rules = 0;
	struct tv_prng p;

	register_toy();
	ck_assert_ptr_nonnull(rv);
	for (uint64_t seed = 1; seed <= 40; seed++) {
		json_t *a = json_object(), *b = json_object(), *c = json_object(), *r;
		size_t i;

		/* Every point left out: an empty plan, the same draws made. */
		tv_prng_init(&p, seed);
		ck_assert_int_eq(tv_tb_swarm_gen_faults(&p, a, UINT32_MAX, 0, rv), 0);
		ck_assert_uint_eq(json_array_size(json_object_get(a, "faults")), 0);
		tv_prng_init(&p, seed);
		ck_assert_int_eq(tv_tb_swarm_gen_faults(&p, b, 0, 0, rv), 0);
		with_rules += json_array_size(json_object_get(b, "faults")) > 0;
		/* The toy has only the core's points: node/crash among them. */
		tv_prng_init(&p, seed);
		ck_assert_int_eq(tv_tb_swarm_gen_faults(&p, c, 0, 1000, &toy), 0);
		json_array_foreach(json_object_get(c, "faults"), i, r) {
			const char *pt = json_string_value(json_object_get(r, "point"));

			ck_assert_msg(tv_tb_workload_has_point(&toy, pt), "%s", pt);
			crash_rules += !strcmp(pt, "node/crash");
		}
		json_decref(a);
		json_decref(b);
		json_decref(c);
	}
	ck_assert_uint_gt(with_rules, 20);
	ck_assert_uint_gt(crash_rules, 0);
	/* An empty range is its one value. */
	tv_prng_init(&p, 1);
	ck_assert_uint_eq(tv_tb_gen_log_uniform(&p, 7, 7), 7);
}
END_TEST


/* ---- scenario keys the other tables leave ------------------------------- */

#define SENDS "\"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}], \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]"

START_TEST(test_scenario_more_refused)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "{\"nodes\": 2, \"link\": {\"bandwidth_bytes_per_sec\": -1}, " SENDS "}",
		  "$.link.bandwidth_bytes_per_sec: must be >= 0, got -1" },
		{ "{\"nodes\": 2, \"links\": [{\"from\": 0, \"to\": 1, \"latency_ns\": \"x\"}], " SENDS "}",
		  "$.links[0].latency_ns: must be an integer" },
		{ "{\"nodes\": 2, \"links\": [{\"from\": 0, \"to\": 1, \"colour\": 1}], " SENDS "}",
		  "$.links[0]: unknown key 'colour'" },
		{ "{\"nodes\": 2, \"links\": [{\"from\": 0}], " SENDS "}",
		  "$.links[0]: missing required key 'to'" },
		{ "{\"nodes\": 2, \"sim\": {\"jitter_ns_max\": 4294967296}, " SENDS "}",
		  "$.sim.jitter_ns_max: must be <= 4294967295" },
		{ "{\"nodes\": 2, \"sim\": {\"deadline_ns\": -5}, " SENDS "}",
		  "$.sim.deadline_ns: must be >= 0, got -5" },
		{ "{\"nodes\": 2, \"sim\": {\"max_events\": \"many\"}, " SENDS "}",
		  "$.sim.max_events: must be an integer" },
		{ "{\"nodes\": 2, \"allow_error_completions\": 1, " SENDS "}",
		  "$.allow_error_completions: must be true or false" },
		{ "{\"nodes\": 2, \"sim\": {\"qp_op_ns\": -1}, " SENDS "}",
		  "$.sim.qp_op_ns: must be >= 0" },
		{ "{\"nodes\": 2, \"sim\": {\"post_ns\": 0.5}, " SENDS "}",
		  "$.sim.post_ns: must be a whole number >= 0, got 0.5" },
		{ "{\"nodes\": 2, \"sim\": {\"max_qp_rd_atom\": 129}, " SENDS "}",
		  "$.sim.max_qp_rd_atom: must be <= 128, got 129" },
		{ "{\"nodes\": 2, \"late_nodes\": [{\"node\": 1, \"start_ns\": 5, \"why\": 1}], " SENDS "}",
		  "$.late_nodes[0]: unknown key 'why'" },
		{ "{\"nodes\": 2, \"late_nodes\": [{\"node\": 2, \"start_ns\": 5}], " SENDS "}",
		  "$.late_nodes[0].node" },
		{ "{\"nodes\": 2, \"seed\": -1, " SENDS "}",
		  "$.seed: must be >= 0, got -1" },
		{ "{\"nodes\": 2, \"seed\": \"one\", " SENDS "}",
		  "$.seed: must be an integer" },
		{ "{\"nodes\": 2, \"expect_faults\": {\"vf/ack/drop\": {\"min\": \"a\"}}, " SENDS "}",
		  "$.expect_faults.vf/ack/drop.min: must be an integer" },
	};
	struct tv_tb_scenario *sc;
	char err[TV_TB_ERR_MAX];

	for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++) {
		err[0] = 0;
		ck_assert_msg(tv_tb_scenario_load_string(bad[i].text, "more", &sc,
							 err) == -EINVAL,
			      "%zu: accepted", i);
		ck_assert_msg(strstr(err, bad[i].msg) != NULL,
			      "%zu: '%s' lacks '%s'", i, err, bad[i].msg);
	}
}
END_TEST


/* A trace made under a breakage: shrink runs it under that breakage too. */
START_TEST(test_shrink_trace_breakage)
{
	struct tv_tb_shrink_opts o = { .max_runs = 2 };
	struct tv_tb_shrink_report rep;
	char tr[128], out[128], err[1024];

	mk_tmpdir();
	trace_text(wrong_shape, "ws.jsonl", 4, "no-ack-timeout", tr, sizeof(tr));
	tmp_path(out, sizeof(out), "min.json");
	memset(&rep, 0, sizeof(rep));
	ck_assert_msg(tv_tb_shrink(tr, out, &o, &rep, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(rep.breakage, "no-ack-timeout");
	ck_assert_uint_eq(rep.seed, 4);
	ck_assert_uint_eq(rep.runs, 2);
	ck_assert(rep.budget_reached);
	ck_assert_int_eq(rep.kind, TV_TB_FK_EXPECT);
	ck_assert_msg(strstr(rep.before, "0 fault rules") != NULL, "%s", rep.before);
	rm_tmpdir();
}
END_TEST

/* ---- outputs that cannot be written: /dev/full -------------------------- */

/*
 * /dev/full opens and takes buffered bytes, then fails each write with
 * ENOSPC: small outputs fail at fclose, large ones at the flushes on the
 * way (ferror).  Both must be an error, not a file silently cut short.
 */
START_TEST(test_outputs_dev_full)
{
	struct tv_tb_junit_case c = { .classname = "tensorverbs.run",
				      .name = "big" };
	struct tv_tb_scenario *sc;
	struct tv_tb_trace *t;
	char err[TV_TB_ERR_MAX], a[128], *text, *hdr, *sum, *big, *bufs[1];
	uint64_t lens[1];
	size_t n;

	/* A trace with its header only: lost at fclose. */
	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "b", &sc, err), 0);
	ck_assert_int_eq(tv_tb_trace_create("/dev/full", sc, NULL, 1, NULL, &t),
			 0);
	ck_assert_int_eq(tv_tb_trace_finish(t, NULL), -EIO);
	tv_tb_scenario_free(sc);

	/* A merge whose one recording has no events: lost at fclose. */
	mk_tmpdir();
	record_text(basic, "a.jsonl", 1, "ibverbs", a, sizeof(a));
	text = read_all(a);
	n = (size_t)count_lines(text);
	hdr = line_of(text, 0);
	sum = line_of(text, (int)n - 1);
	{
		char *two = malloc(strlen(hdr) + strlen(sum) + 3);

		sprintf(two, "%s\n%s\n", hdr, sum);
		bufs[0] = rank_recording(two, 0, "h", 0, false, &lens[0]);
		free(two);
	}
	ck_assert_uint_lt(lens[0], 4096);
	ck_assert_int_eq(tb_record_merge_mem("/dev/full", bufs, lens, 1, err,
					     sizeof(err)), -EIO);
	free(bufs[0]);
	free(hdr);
	free(sum);
	free(text);

	/* JUnit: a small report fails at fclose (ENOSPC, said as such)... */
	ck_assert_int_eq(tv_tb_junit_write("/dev/full", "s", &c, 1), -ENOSPC);
	/* ... a large one on the way: an I/O error. */
	big = malloc(64 * 1024);
	memset(big, 'x', 64 * 1024 - 1);
	big[64 * 1024 - 1] = '\0';
	c.failure = big;
	ck_assert_int_eq(tv_tb_junit_write("/dev/full", "s", &c, 1), -EIO);
	free(big);
	rm_tmpdir();
}
END_TEST

/*
 * A disk that fills up after room bytes: a stream of the test's own,
 * unbuffered, so each write of the library is one write here.
 */
static ssize_t full_after_write(void *cookie, const char *buf, size_t n)
{
	size_t *room = cookie;

	(void)buf;
	if (!*room) {
		errno = ENOSPC;
		return -1;
	}
	if (n > *room)
		n = *room;
	*room -= n;
	return (ssize_t)n;
}

/* The line's JSON fits, its newline does not: still an error. */
START_TEST(test_trace_line_newline_lost)
{
	json_t *obj = json_pack("{s:i, s:s}", "i", 1, "src", "x");
	char *dump = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	size_t room = strlen(dump);
	FILE *f = fopencookie(&room, "w", (cookie_io_functions_t){
		.write = full_after_write });

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(setvbuf(f, NULL, _IONBF, 0), 0);
	ck_assert_int_eq(tb_trace_write_line(f, obj), -EIO);
	ck_assert_uint_eq(room, 0);
	fclose(f);
	/* With a byte more, the line is whole. */
	room = strlen(dump) + 1;
	f = fopencookie(&room, "w", (cookie_io_functions_t){
		.write = full_after_write });
	ck_assert_int_eq(setvbuf(f, NULL, _IONBF, 0), 0);
	ck_assert_int_eq(tb_trace_write_line(f, obj), 0);
	ck_assert_uint_eq(room, 0);
	fclose(f);
	free(dump);
	json_decref(obj);
}
END_TEST

/* Drawings to /dev/full: a small one fails at fclose, a large one before. */
START_TEST(test_show_dev_full)
{
	struct tv_tb_show_opts o = { .last = UINT64_MAX,
				     .chrome_path = "/dev/full" };
	char path[128], err[512] = "";

	mk_tmpdir();
	register_toy();
	trace_text("{\"workload\": \"coretoy\", \"nodes\": 2, \"ticks\": 1}",
		   "toy.jsonl", 1, NULL, path, sizeof(path));
	ck_assert_int_eq(tv_tb_show(path, &o, err, sizeof(err)), -EIO);
	ck_assert_str_eq(err, "cannot write /dev/full: Input/output error");
	err[0] = '\0';
	trace_text(basic, "b.jsonl", 1, NULL, path, sizeof(path));
	ck_assert_int_eq(tv_tb_show(path, &o, err, sizeof(err)), -EIO);
	ck_assert_str_eq(err, "cannot write /dev/full: Input/output error");
	err[0] = '\0';
	o.chrome_path = NULL;
	o.svg_path = "/dev/full";
	ck_assert_int_eq(tv_tb_show(path, &o, err, sizeof(err)), -EIO);
	ck_assert_str_eq(err, "cannot write /dev/full: Input/output error");
	rm_tmpdir();
}
END_TEST

/* ---- more workloads of the test's own ------------------------------------ */

/* A crashed node's process cannot start again. */
static int restart_fails(struct tv_tb_run *run, void *st, uint32_t node)
{
	(void)run;
	(void)st;
	(void)node;
	return -EIO;
}

/*
 * "coreshrink": the toy with two of the plan's edits, no describe, and
 * restarts that fail (a crash is a [runner] failure).
 */
static const struct tv_tb_shrink_edit *const shrink_edits[] = {
	&tv_tb_edit_drop_fault, &tv_tb_edit_lower_fault,
};

static const struct tv_tb_workload_ops toy_shrink = {
	.name = "coreshrink", .about = "ticks", .unit = "ticks",
	.keys = toy_keys, .parse = toy_parse, .scenario_free = free,
	.setup = toy_setup, .progress = toy_progress,
	.node_crash = toy_crash, .node_restart = restart_fails,
	.state_free = toy_free, .edits = shrink_edits, .nedits = 2,
};

/* "coreleak": its set-up takes a protection domain it never gives back. */
static int leak_setup(struct tv_tb_run *run, void **st_p)
{
	struct tv_vf_device *dev;
	struct tv_vf_pd *pd;
	int rc = toy_setup(run, st_p);

	if (!rc)
		rc = tv_tb_run_device(run, 0, &dev);
	if (!rc)
		rc = tv_vf_alloc_pd(dev, &pd);
	return rc;
}

static const struct tv_tb_workload_ops toy_leak = {
	.name = "coreleak", .about = "ticks", .unit = "ticks",
	.keys = toy_keys, .parse = toy_parse, .scenario_free = free,
	.setup = leak_setup, .progress = toy_progress,
	.state_free = toy_free,
};

/* "corerestart": a crashed node's process cannot start again. */
static const struct tv_tb_workload_ops toy_restart_fails = {
	.name = "corerestart", .about = "ticks", .unit = "ticks",
	.keys = toy_keys, .parse = toy_parse, .scenario_free = free,
	.setup = toy_setup, .progress = toy_progress,
	.node_crash = toy_crash, .node_restart = restart_fails,
	.state_free = toy_free,
};

/*
 * "coreslow": every seed from 100 fails; seed 100's generation takes
 * long, so the other worker's larger failing seeds arrive first.
 */
static int slow_generate(uint64_t seed, uint32_t without, json_t **sc_p)
{
	(void)without;
	if (seed == 100)
		usleep(600 * 1000);
	*sc_p = json_pack("{s:s, s:I, s:i, s:i, s:b}", "workload", "coreslow",
			  "seed", (json_int_t)seed, "nodes", 2, "ticks", 1,
			  "fail", seed >= 100);
	return *sc_p ? 0 : -ENOMEM;
}

static const struct tv_tb_workload_ops toy_slow = {
	.name = "coreslow", .about = "ticks", .unit = "ticks",
	.keys = toy_keys, .parse = toy_parse, .scenario_free = free,
	.setup = toy_setup, .progress = toy_progress,
	.check_end = toy_check_end, .state_free = toy_free,
	.generate = slow_generate,
};

static void register_ops(const struct tv_tb_workload_ops *ops)
{
	if (!tv_tb_workload_find(ops->name))
		ck_assert_int_eq(tv_tb_workload_register(ops), 0);
}

/*
 * Leaves this process spare free descriptors below its limit (the lowest
 * free one is where the next open lands); returns the limit it had.
 */
static rlim_t limit_fds(int spare)
{
	struct rlimit rl;
	rlim_t was;
	int k = dup(0);

	ck_assert_int_ge(k, 0);
	close(k);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	was = rl.rlim_cur;
	rl.rlim_cur = (rlim_t)k + (rlim_t)spare;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	return was;
}

static void restore_fds(rlim_t was)
{
	struct rlimit rl;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = was;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

/* ---- shrink: candidates that die, a pipe it cannot make ----------------- */

START_TEST(test_shrink_crash_and_pipe)
{
	struct tv_tb_shrink_opts o = { .max_runs = 20 };
	struct tv_tb_shrink_report rep;
	char in[128], out[128], err[1024];
	json_t *min;
	rlim_t was;

	mk_tmpdir();
	register_ops(&toy_shrink);
	tmp_path(in, sizeof(in), "die.json");
	tmp_path(out, sizeof(out), "min.json");
	write_file(in, "{\"workload\": \"coreshrink\", \"nodes\": 2,"
		   " \"ticks\": 1, \"die\": 7,"
		   " \"faults\": [{\"point\": \"node/crash\"}]}");
	o.has_kind = true;
	o.kind = TV_TB_FK_CRASH;
	memset(&rep, 0, sizeof(rep));
	ck_assert_msg(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)) == 0,
		      "%s", err);
	/* A death is a crash; the rule goes, the death stays. */
	ck_assert_int_eq(rep.kind, TV_TB_FK_CRASH);
	ck_assert_str_eq(rep.first_msg, "the run died (status 0x700)");
	ck_assert_str_eq(rep.msg, "the run died (status 0x700)");
	/* No describe hook: the ops count and the workload's unit. */
	ck_assert_str_eq(rep.before, "0 ticks, 2 nodes, 1 fault rules, "
			 "0 sim events, 0 trace events");
	ck_assert_str_eq(rep.after, "0 ticks, 2 nodes, 0 fault rules, "
			 "0 sim events, 0 trace events");
	ck_assert_uint_eq(rep.runs, 2);
	ck_assert(!rep.budget_reached);
	min = json_load_file(out, 0, NULL);
	ck_assert_ptr_nonnull(min);
	ck_assert_uint_eq(json_array_size(json_object_get(min, "faults")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(min, "die")), 7);
	json_decref(min);

	/* A crash whose restart fails: without it the run passes. */
	tmp_path(in, sizeof(in), "restart.json");
	write_file(in, "{\"workload\": \"coreshrink\", \"nodes\": 2,"
		   " \"ticks\": 2, \"faults\": [{\"point\": \"node/crash\","
		   " \"nth\": 4, \"count\": 1}]}");
	o.has_kind = true;
	o.kind = TV_TB_FK_RUNNER;
	memset(&rep, 0, sizeof(rep));
	ck_assert_msg(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)) == 0,
		      "%s", err);
	/*
	 * Dropping the rule passes (not kept); its nth halves twice and
	 * still fails the same way; count 1 and nth 1 cannot go lower.
	 */
	ck_assert_int_eq(rep.kind, TV_TB_FK_RUNNER);
	ck_assert_str_eq(rep.first_msg, "node 0 restart at 2002000 ns: "
			 "Input/output error (no fault fired)");
	ck_assert_str_eq(rep.msg, "node 0 restart at 2001000 ns: "
			 "Input/output error (no fault fired)");
	ck_assert_uint_eq(rep.runs, 5);
	ck_assert_str_eq(rep.after, "4 ticks, 2 nodes, 1 fault rules, "
			 "5 sim events, 13 trace events");
	min = json_load_file(out, 0, NULL);
	ck_assert_ptr_nonnull(min);
	ck_assert_int_eq(rule_int(min, 0, "nth"), 1);
	ck_assert_int_eq(rule_int(min, 0, "count"), 1);
	json_decref(min);
	o.has_kind = false;

	/* No descriptor for the candidate's pipe: the error says why. */
	tmp_path(in, sizeof(in), "ok.json");
	write_file(in, "{\"workload\": \"coreshrink\", \"nodes\": 2,"
		   " \"ticks\": 1}");
	was = limit_fds(1);
	memset(&rep, 0, sizeof(rep));
	ck_assert_int_eq(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)),
			 -EMFILE);
	restore_fds(was);
	ck_assert_str_eq(err, strerror(EMFILE));
	rm_tmpdir();
}
END_TEST

/* ---- swarm: no pipe, a reproducer it cannot write, late small seeds ----- */

START_TEST(test_swarm_pipe_dump_order)
{
	struct tv_tb_swarm_opts o = { .seeds = 40, .first = 100, .jobs = 2,
				      .workload = "coreslow" };
	struct tv_tb_swarm_report rep;
	char dir[128], blocker[160];
	rlim_t was;

	mk_tmpdir();
	register_toy();
	register_ops(&toy_slow);
	/* seed-4.json is a directory: the reproducer cannot be written. */
	tmp_path(dir, sizeof(dir), "out");
	ck_assert_int_eq(mkdir(dir, 0777), 0);
	snprintf(blocker, sizeof(blocker), "%s/seed-4.json", dir);
	ck_assert_int_eq(mkdir(blocker, 0777), 0);
	swarm_one(4, dir, &rep);
	ck_assert(!rep.fail[0].written);
	ck_assert_str_eq(rep.fail[0].file, blocker);

	/*
	 * Seed 100 arrives after larger ones (its generation sleeps; on a
	 * loaded machine fewer may have come, so no count is asserted): it
	 * still comes first, the swarm stops once it is in, and the other
	 * worker's follow in order with none missing.
	 */
	o.out_dir = dir;
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), 0);
	ck_assert_uint_ge(rep.nfail, 1);
	ck_assert_uint_le(rep.nfail, TV_TB_SWARM_KEEP);
	ck_assert_uint_ge(rep.violations, rep.nfail);
	ck_assert_uint_eq(rep.fail[0].seed, 100);
	for (size_t i = 1; i < rep.nfail; i++)
		ck_assert_uint_eq(rep.fail[i].seed, 99 + 2 * i);
	ck_assert_int_eq(rep.fail[0].first, TV_TB_FK_EXPECT);
	ck_assert(rep.fail[0].written);
	ck_assert_int_eq(rep.fail[0].rerun_status, 1);

	/* The second worker's pipe cannot be made: the first is stopped. */
	was = limit_fds(2);
	o.seeds = 4;
	o.first = 1;
	o.workload = "coretoy";
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), -EMFILE);
	restore_fds(was);
	rm_tmpdir();
}
END_TEST

/* ---- runs that go wrong in the core's own parts ------------------------- */

/* The run failed once, with kind and msg. */
static void one_failure(struct tv_tb_run *run, enum tv_tb_fail_kind kind,
			const char *msg)
{
	const struct tv_tb_failures *f = tv_tb_run_failures(run);

	ck_assert_uint_eq(f->count, 1);
	ck_assert_int_eq(f->msg_kinds[0], kind);
	ck_assert_str_eq(f->msgs[0], msg);
	ck_assert_str_eq(tv_tb_run_outcome(run), "FAIL");
}

START_TEST(test_run_core_failures)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run = NULL;
	struct tv_tb_tap *tap;
	struct tv_flt *flt;
	char err[TV_TB_ERR_MAX];

	register_toy();
	register_ops(&toy_leak);
	register_ops(&toy_restart_fails);

	run = run_text("{\"workload\": \"coreleak\", \"nodes\": 2,"
		       " \"ticks\": 1}", 1, &sc);
	/* The simulator gives it back at the end, counted as a leak. */
	one_failure(run, TV_TB_FK_LEAK,
		    "tv_sim_destroy: 1 verbs objects leaked");
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 2);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);

	run = run_text("{\"workload\": \"corerestart\", \"nodes\": 2,"
		       " \"ticks\": 3, \"faults\": [{\"point\": \"node/crash\","
		       " \"nth\": 2, \"count\": 1}]}", 1, &sc);
	/* Hit 2 is node 1's first tick; no fault made the restart fail. */
	one_failure(run, TV_TB_FK_RUNNER,
		    "node 1 restart at 2001000 ns: Input/output error "
		    "(no fault fired)");
	ck_assert_uint_eq(tv_tb_run_result(run)->crashes, 1);
	ck_assert_uint_eq(tv_tb_run_result(run)->restarts, 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->restart_failures, 1);
	/* Down for good: its other two ticks are skipped. */
	ck_assert_uint_eq(((struct toy_run *)tv_tb_run_wl(run))->skipped, 3);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);

	run = run_text("{\"workload\": \"coretoy\", \"nodes\": 2, \"ticks\": 3,"
		       " \"faults\": [{\"point\": \"node/crash\", \"nth\": 2,"
		       " \"count\": 1, \"arg\": 9223372036854775807}]}", 1,
		       &sc);
	/*
	 * An arg past the end of time: the restart is put at the end of
	 * time, so the node never comes back -- and the simulator, its
	 * restart still queued at the deadline, calls the run not quiescent.
	 */
	one_failure(run, TV_TB_FK_HANG, "not quiescent at the virtual deadline "
		    "of 10000003000 ns (events still queued)");
	ck_assert_uint_eq(tv_tb_run_result(run)->crashes, 1);
	ck_assert_uint_eq(tv_tb_run_result(run)->restarts, 0);
	ck_assert_uint_eq(((struct toy_run *)tv_tb_run_wl(run))->skipped, 3);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);

	run = run_text("{\"workload\": \"coretoy\", \"nodes\": 2, \"ticks\": 3,"
		       " \"faults\": [{\"point\": \"node/crash\", \"nth\": 2,"
		       " \"count\": 1, \"arg\": -1}]}", 1, &sc);
	/* An arg of no time: the default restart, 2 ms later (all 3 ticks). */
	ck_assert_uint_eq(tv_tb_run_failures(run)->count, 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->crashes, 1);
	ck_assert_uint_eq(tv_tb_run_result(run)->restarts, 1);
	ck_assert_uint_eq(((struct toy_run *)tv_tb_run_wl(run))->skipped, 3);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
	register_ops(&toy_slow);
	run = run_text("{\"workload\": \"coreslow\", \"nodes\": 2,"
		       " \"ticks\": 3, \"faults\": [{\"point\": \"node/crash\","
		       " \"nth\": 2, \"count\": 1}]}", 1, &sc);
	/* A workload that cannot crash: the gate never asks, no hit. */
	ck_assert_uint_eq(tv_tb_run_failures(run)->count, 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->crashes, 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 6);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);

	/* A tap for one node on a run of two. */
	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "b", &sc, err), 0);
	ck_assert_int_eq(tv_tb_tap_create(1, &tap), 0);
	tv_tb_run_opts_init(&o, sc);
	o.tap = tap;
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	/* Node 1's device cannot be tapped: its engine is not made. */
	one_failure(run, TV_TB_FK_RUNNER,
		    "tv_engine_create(node 1): Invalid argument");
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 0);
	tv_tb_run_free(run);
	tv_tb_tap_free(tap);
	tv_tb_scenario_free(sc);

	/* Another injector is active. */
	ck_assert_int_eq(tv_flt_create(1, &flt), 0);
	ck_assert_int_eq(tv_flt_activate(flt), 0);
	run = run_text("{\"workload\": \"coretoy\", \"nodes\": 2, \"ticks\": 3,"
		       " \"faults\": [{\"point\": \"node/crash\", \"nth\": 2,"
		       " \"count\": 1}]}", 1, &sc);
	/* libfiu is the process's: one injector at a time. */
	one_failure(run, TV_TB_FK_RUNNER,
		    "tv_flt_activate: Device or resource busy");
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->crashes, 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
	tv_flt_deactivate(flt);
	tv_flt_destroy(flt);
}
END_TEST

START_TEST(test_plan_text_range_and_full_registry)
{
	static char names[16][16];
	static struct tv_tb_workload_ops many[16];
	json_t *plan = NULL;
	char err[512];
	int rc = 0, n = 0;

	/*
	 * The fault layer takes any 64-bit count; a plan in JSON cannot
	 * hold one past INT64_MAX: refused, naming the text.
	 */
	ck_assert_int_eq(tv_tb_plan_from_text(
		"vf/ack/drop:nth=18446744073709551615", &plan, err,
		sizeof(err)), -EINVAL);
	ck_assert_ptr_null(plan);
	ck_assert_str_eq(err, "fault plan: bad value in "
			 "'vf/ack/drop:nth=18446744073709551615'");
	/* The arg is the bits of a 64-bit value: all ones is -1. */
	ck_assert_int_eq(tv_tb_plan_from_text(
		"vf/ack/drop:arg=18446744073709551615", &plan, err,
		sizeof(err)), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_array_get(plan, 0), "arg")), -1);
	json_decref(plan);

	/* The registry holds 16 workloads: the builtins, the toy, ours. */
	register_toy();
	for (int i = 0; i < 16 && !rc; i++) {
		snprintf(names[i], sizeof(names[i]), "fill%d", i);
		many[i] = toy;
		many[i].name = names[i];
		rc = tv_tb_workload_register(&many[i]);
		n += !rc;
	}
	ck_assert_int_eq(rc, -ENOSPC);
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_eq(tv_tb_workload_find(names[n - 1]), &many[n - 1]);
	ck_assert_ptr_null(tv_tb_workload_find(names[n]));
}
END_TEST

/* ---- drawings of traces made by hand ------------------------------------ */

/* A sim line: kind on node (peer, or -1 for none) at t, the rest given. */
#define SIM_LINE(i, t, kind, node, peer, qpn, op, state, imm, wr, len) \
	"{\"i\":" #i ",\"t\":" #t ",\"src\":\"sim\",\"seq\":" #i \
	",\"kind\":\"" kind "\",\"node\":" #node ",\"peer\":" peer \
	",\"qpn\":" #qpn ",\"op\":" \
	op ",\"status\":null,\"state\":" state ",\"imm\":" imm ",\"wr_id\":\"" \
	wr "\",\"rkey\":null,\"roff\":null,\"len\":" #len "}\n"

/*
 * basic's trace with its events replaced by the lines given (each ending
 * in a newline), at tmpdir/name.
 */
static void hand_trace(const char *events, const char *name, char *path,
		       size_t cap)
{
	char *text, *hdr, *sum, *out;
	size_t len;

	trace_text(basic, name, 1, NULL, path, cap);
	text = read_all(path);
	hdr = line_of(text, 0);
	sum = line_of(text, count_lines(text) - 1);
	len = strlen(hdr) + strlen(events) + strlen(sum) + 3;
	out = malloc(len);
	snprintf(out, len, "%s\n%s%s\n", hdr, events, sum);
	write_file(path, out);
	free(out);
	free(sum);
	free(hdr);
	free(text);
}

static char *svg_of(const char *path, uint64_t max_rows)
{
	struct tv_tb_show_opts o = { .last = UINT64_MAX, .max_rows = max_rows };
	char svg[128], err[512] = "";

	tmp_path(svg, sizeof(svg), "d.svg");
	o.svg_path = svg;
	ck_assert_msg(tv_tb_show(path, &o, err, sizeof(err)) == 0, "%s", err);
	return read_all(svg);
}

static size_t count_of(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)) != NULL; p++)
		n++;
	return n;
}

#define TRUNCATED "(truncated: use --from/--to or --max-rows)"

START_TEST(test_show_svg_rows)
{
	static const char qp_err[] =
		SIM_LINE(1, 100, "QP_STATE", 0, "null", 3, "null", "\"RTS\"", "null", "0x0", 0)
		SIM_LINE(2, 100, "QP_STATE", 0, "null", 3, "null", "\"ERR\"", "null", "0x0", 0)
		SIM_LINE(3, 200, "POST_SEND", 0, "1", 3, "\"SEND\"", "null", "null", "0x9", 8);
	static const char peerless[] =
		SIM_LINE(1, 100, "QP_STATE", 0, "null", 3, "null", "\"RTS\"", "null", "0x0", 0)
		SIM_LINE(2, 100, "QP_STATE", 0, "null", 3, "null", "\"ERR\"", "null", "0x0", 0)
		SIM_LINE(3, 150, "POST_SEND", 0, "null", 3, "\"SEND\"", "null", "null", "0x8", 8)
		SIM_LINE(4, 200, "POST_SEND", 0, "1", 3, "\"SEND\"", "null", "null", "0x9", 8);
	/* A post to node 3 of two: the drawing gets its lane. */
	static const char far_peer[] =
		SIM_LINE(1, 100, "POST_SEND", 0, "3", 3, "\"SEND\"", "null", "null", "0x9", 8);
	/* Node 0's second change merges past node 1's note, into its own. */
	static const char two_notes[] =
		SIM_LINE(1, 100, "QP_STATE", 0, "null", 3, "null", "\"RTS\"", "null", "0x0", 0)
		SIM_LINE(2, 100, "QP_STATE", 1, "null", 3, "null", "\"RTS\"", "null", "0x0", 0)
		SIM_LINE(3, 100, "QP_STATE", 0, "null", 3, "null", "\"\\u0001Z\"", "null", "0x0", 0);
	char path[128], *a, *b;

	mk_tmpdir();
	/* A QP going to ERR merges into its note, which turns red. */
	hand_trace(qp_err, "qp.jsonl", path, sizeof(path));
	a = svg_of(path, 0);
	ck_assert_msg(strstr(a, "QP 3 -&gt; RTS -&gt; ERR") != NULL, "%s", a);
	ck_assert_msg(strstr(a, TRUNCATED) == NULL, "%s", a);
	ck_assert_msg(strstr(a, "SEND 8 B") != NULL, "%s", a);
	/* A post with no peer has no arrow to draw: nothing changes. */
	hand_trace(peerless, "peerless.jsonl", path, sizeof(path));
	b = svg_of(path, 0);
	ck_assert_str_eq(a, b);
	free(b);
	free(a);
	/* One row allowed: the post is the row too many. */
	hand_trace(qp_err, "qp.jsonl", path, sizeof(path));
	a = svg_of(path, 1);
	ck_assert_msg(strstr(a, TRUNCATED) != NULL, "%s", a);
	ck_assert_msg(strstr(a, "RTS -&gt; ERR") != NULL, "%s", a);
	ck_assert_msg(strstr(a, "SEND 8 B") == NULL, "%s", a);
	free(a);
	hand_trace(far_peer, "far.jsonl", path, sizeof(path));
	a = svg_of(path, 0);
	ck_assert_msg(strstr(a, ">node 3</text>") != NULL, "%s", a);
	ck_assert_msg(strstr(a, ">node 4</text>") == NULL, "%s", a);
	free(a);
	/* ... and here the second node's note is. */
	hand_trace(two_notes, "notes.jsonl", path, sizeof(path));
	a = svg_of(path, 1);
	ck_assert_msg(strstr(a, TRUNCATED) != NULL, "%s", a);
	ck_assert_uint_eq(count_of(a, "QP 3 -&gt; RTS"), 1);
	free(a);
	a = svg_of(path, 0);
	ck_assert_uint_eq(count_of(a, "QP 3 -&gt; RTS"), 2);
	/* A control byte in a drawing's text is shown as '?'. */
	ck_assert_msg(strstr(a, "QP 3 -&gt; RTS -&gt; ?Z<") != NULL, "%s", a);
	free(a);
	rm_tmpdir();
}
END_TEST

/* Events of traceEvents with phase ph (and id, unless 0). */
static size_t chrome_phases(json_t *ch, const char *ph, json_int_t id)
{
	json_t *evs = json_object_get(ch, "traceEvents"), *e;
	size_t i, n = 0;

	json_array_foreach(evs, i, e) {
		const char *p = json_string_value(json_object_get(e, "ph"));
		json_int_t eid = json_integer_value(json_object_get(e, "id"));

		n += p && !strcmp(p, ph) && (!id || eid == id);
	}
	return n;
}

START_TEST(test_show_chrome_unmatched)
{
	static const char events[] =
		SIM_LINE(1, 100, "POST_SEND", 0, "1", 3, "\"RDMA_WRITE_WITH_IMM\"", "null", "\"0x80000000\"", "0x4", 32)
		SIM_LINE(2, 110, "POST_SEND", 0, "1", 3, "\"RDMA_WRITE_WITH_IMM\"", "null", "\"0x80000001\"", "0x5", 32)
		SIM_LINE(3, 200, "DELIVER", 1, "0", 3, "\"RDMA_WRITE_WITH_IMM\"", "null", "\"0x80000001\"", "0x5", 32)
		SIM_LINE(4, 210, "DELIVER", 1, "0", 3, "\"RDMA_WRITE_WITH_IMM\"", "null", "\"0x80000000\"", "0x4", 32)
		"{\"i\":5,\"t\":300,\"src\":\"engine\",\"kind\":\"RECV_DONE\","
		"\"node\":1,\"peer\":0,\"msg\":null,\"idx\":0,\"step\":1,"
		"\"name\":\"t\",\"rkey\":null,\"off\":null,\"len\":32,"
		"\"code\":null}\n";
	struct tv_tb_show_opts o = { .last = UINT64_MAX };
	char path[128], chrome[128], err[512] = "";
	json_t *ch;

	mk_tmpdir();
	hand_trace(events, "w.jsonl", path, sizeof(path));
	tmp_path(chrome, sizeof(chrome), "c.json");
	o.chrome_path = chrome;
	ck_assert_msg(tv_tb_show(path, &o, err, sizeof(err)) == 0, "%s", err);
	ch = json_load_file(chrome, 0, NULL);
	ck_assert_ptr_nonnull(ch);
	/*
	 * Write #1 lands first: it is found past write #0, still open;
	 * each flow ends with the id it started with.
	 */
	ck_assert_uint_eq(chrome_phases(ch, "s", 0), 2);
	ck_assert_uint_eq(chrome_phases(ch, "f", 0), 2);
	ck_assert_uint_eq(chrome_phases(ch, "s", 1), 1);
	ck_assert_uint_eq(chrome_phases(ch, "f", 1), 1);
	ck_assert_uint_eq(chrome_phases(ch, "f", 2), 1);
	/* A request done that never began: its mark, no slice end. */
	ck_assert_uint_eq(chrome_phases(ch, "b", 0), 0);
	ck_assert_uint_eq(chrome_phases(ch, "e", 0), 0);
	{
		char *text = read_all(chrome);

		ck_assert_msg(strstr(text, "\"done #0 t: \"") != NULL, "%s",
			      text);
		free(text);
	}
	json_decref(ch);
	/* From event 2 on: write #0's post is out of the range. */
	o.first = 2;
	ck_assert_msg(tv_tb_show(path, &o, err, sizeof(err)) == 0, "%s", err);
	ch = json_load_file(chrome, 0, NULL);
	ck_assert_uint_eq(chrome_phases(ch, "s", 0), 1);
	ck_assert_uint_eq(chrome_phases(ch, "f", 0), 1);
	json_decref(ch);
	rm_tmpdir();
}
END_TEST

/* ---- replay --sim: a recording that lies ------------------------------- */

/* text without the lines holding every one of the needles given. */
static char *drop_lines(const char *text, const char *a, const char *b)
{
	char *out = calloc(1, strlen(text) + 1), *o = out;
	const char *p = text, *e;

	ck_assert_ptr_nonnull(out);
	for (; (e = strchr(p, '\n')) != NULL; p = e + 1) {
		size_t n = (size_t)(e - p) + 1;
		char *l = strndup(p, n);

		if (!(strstr(l, a) && strstr(l, b))) {
			memcpy(o, l, n);
			o += n;
		}
		free(l);
	}
	return out;
}

START_TEST(test_replay_sim_lies)
{
	struct tv_tb_replay_sim_report rep;
	char a[128], path[128], *text, *edited;

	mk_tmpdir();
	/* Node 1's completions left out: they pass as they come. */
	record_text(basic, "a.jsonl", 1, "sim", a, sizeof(a));
	text = read_all(a);
	edited = drop_lines(text, "\"kind\":\"POLL\"", "\"node\":1,");
	tmp_path(path, sizeof(path), "nopoll.jsonl");
	write_file(path, edited);
	free(edited);
	free(text);
	ck_assert_msg(tv_tb_replay_sim(path, &rep) == 0, "%s", rep.err);
	/*
	 * The engine sees them all and does what it did; the comparison
	 * finds node 1's completions, a stream the recording lacks, past
	 * its last event.
	 */
	ck_assert(rep.diverged);
	ck_assert_uint_eq(rep.div_node, 1);
	ck_assert_int_eq(rep.div_qp, 0);
	ck_assert(rep.div_polls);
	ck_assert_uint_eq(rep.div_k, 0);
	ck_assert_uint_eq(rep.div_index, rep.events);
	ck_assert_ptr_null(rep.expected);
	ck_assert_ptr_nonnull(rep.actual);
	ck_assert_msg(strstr(rep.actual, "\"kind\":\"POLL\",\"node\":1,") !=
		      NULL, "%s", rep.actual);
	ck_assert(rep.same_outcome);
	ck_assert_uint_eq(rep.held, 0);
	tv_tb_replay_sim_report_free(&rep);

	/* A node said to start after events it never makes. */
	record_text(basic, "h.jsonl", 1, "ibverbs", a, sizeof(a));
	text = read_all(a);
	{
		int n = count_lines(text);
		char *sum = line_of(text, n - 1);

		edited = edit_lines(text, n - 1,
			"{\"i\":9999,\"t\":0,\"src\":\"workload\","
			"\"kind\":\"STEP\",\"node\":0,\"at_ns\":0}",
			NULL);
		{
			char *t2 = malloc(strlen(edited) + strlen(sum) + 2);

			sprintf(t2, "%s%s\n", edited, sum);
			free(edited);
			edited = t2;
		}
		free(sum);
	}
	tmp_path(path, sizeof(path), "gate.jsonl");
	write_file(path, edited);
	free(edited);
	free(text);
	ck_assert_msg(tv_tb_replay_sim(path, &rep) == 0, "%s", rep.err);
	/* Its operation waits the most it may, then goes anyway. */
	ck_assert_uint_eq(rep.ops_places, 1);
	ck_assert_uint_eq(rep.ops_forced, 1);
	ck_assert_uint_eq(rep.ops_waited, 0);
	/* A STEP is where a node started, not an event to compare. */
	ck_assert(!rep.diverged);
	ck_assert(rep.same_outcome);
	tv_tb_replay_sim_report_free(&rep);
	rm_tmpdir();
}
END_TEST

/*
 * A workload with no event_src of its own: its trace lines are its
 * name's, and show draws them as its events.  (A NULL "src" failed each
 * line: the trace was lost as ENOMEM, and swarm's rerun of a failing
 * seed said "not reproduced".)
 */
START_TEST(test_trace_workload_without_src)
{
	struct tv_tb_show_opts o = { .last = UINT64_MAX };
	char path[128], chrome[128], err[512] = "", *text;

	mk_tmpdir();
	register_ops(&toy_slow);
	ck_assert_ptr_null(toy_slow.event_src);
	trace_text("{\"workload\": \"coreslow\", \"nodes\": 2, \"ticks\": 1}",
		   "slow.jsonl", 1, NULL, path, sizeof(path));
	text = read_all(path);
	ck_assert_uint_eq(count_of(text, "\"src\":\"coreslow\","
				   "\"kind\":\"TICK\""), 2);
	free(text);
	tmp_path(chrome, sizeof(chrome), "c.json");
	o.chrome_path = chrome;
	ck_assert_msg(tv_tb_show(path, &o, err, sizeof(err)) == 0, "%s", err);
	text = read_all(chrome);
	ck_assert_uint_eq(count_of(text,
				   "\"cat\":\"event\",\"name\":\"TICK\""), 2);
	ck_assert_uint_eq(count_of(text, "\"cat\":\"fault\""), 0);
	free(text);
	rm_tmpdir();
}
END_TEST

/*
 * n QP notes of node 0, their trace indexes widened by extra[k] digits
 * (1, 10, 100, ...): each widens the drawing by as many bytes.
 */
static char *qp_notes(size_t n, const unsigned *extra)
{
	size_t cap = n * 256 + 1, used = 0;
	char *out = malloc(cap);

	ck_assert_ptr_nonnull(out);
	out[0] = '\0';
	for (size_t k = 0; k < n; k++)
		used += (size_t)snprintf(out + used, cap - used,
			"{\"i\":1%.*s,\"t\":100,\"src\":\"sim\","
			"\"seq\":1,\"kind\":\"QP_STATE\",\"node\":0,"
			"\"peer\":null,\"qpn\":3,\"op\":null,\"status\":null,"
			"\"state\":\"RTS\",\"imm\":null,\"wr_id\":\"0x0\","
			"\"rkey\":null,\"roff\":null,\"len\":0}\n",
			(int)extra[k], "000000000000000000");
	return out;
}

/* The size of the Chrome drawing of qp_notes(n, extra). */
static size_t chrome_size(size_t n, const unsigned *extra, char *path,
			  size_t cap)
{
	struct tv_tb_show_opts o = { .last = UINT64_MAX };
	char chrome[128], err[512] = "", *events = qp_notes(n, extra), *text;
	size_t len;

	hand_trace(events, "pad.jsonl", path, cap);
	free(events);
	tmp_path(chrome, sizeof(chrome), "c.json");
	o.chrome_path = chrome;
	ck_assert_msg(tv_tb_show(path, &o, err, sizeof(err)) == 0, "%s", err);
	text = read_all(chrome);
	len = strlen(text);
	ck_assert_msg(len >= 4 && !strcmp(text + len - 4, "\n]}\n"), "%s",
		      text);
	free(text);
	return len;
}

/*
 * A drawing whose last bytes are the ones the disk has no room for: all
 * but its closing "]}" fill /dev/full's buffer exactly, the close needs
 * the flush that fails.  QP notes make it long, their trace indexes'
 * digits make it long to the byte.
 */
START_TEST(test_show_chrome_last_bytes_lost)
{
	struct tv_tb_show_opts o = { .last = UINT64_MAX,
				     .chrome_path = "/dev/full" };
	unsigned extra[64] = { 0 };
	char path[128], err[512] = "";
	size_t blk, one, per, n, left;
	struct stat st;

	ck_assert_int_eq(stat("/dev/full", &st), 0);
	blk = st.st_blksize > 0 ? (size_t)st.st_blksize : BUFSIZ;
	mk_tmpdir();
	one = chrome_size(1, extra, path, sizeof(path));
	per = chrome_size(2, extra, path, sizeof(path)) - one;
	/* Whole notes up to the buffer; then digits, 18 a note at most. */
	n = (blk + 4 - (one - per)) / per;
	left = blk + 4 - (one - per) - n * per;
	ck_assert_uint_le(n, TB_ARRAY_SIZE(extra));
	for (size_t k = 0; k < n && left; k++) {
		extra[k] = left < 18 ? (unsigned)left : 18;
		left -= extra[k];
	}
	ck_assert_uint_eq(left, 0);
	ck_assert_uint_eq(chrome_size(n, extra, path, sizeof(path)), blk + 4);
	ck_assert_int_eq(tv_tb_show(path, &o, err, sizeof(err)), -EIO);
	ck_assert_str_eq(err, "cannot write /dev/full: Input/output error");
	rm_tmpdir();
}
END_TEST

/* A write of node 0 to node 1, then deliveries each off in one field. */
#define W_POST SIM_LINE(1, 100, "POST_SEND", 0, "1", 3, "\"RDMA_WRITE_WITH_IMM\"", "null", "\"0x80000000\"", "0x9", 8)
#define W_OFF \
	SIM_LINE(2, 200, "DELIVER", 1, "2", 3, "\"RDMA_WRITE_WITH_IMM\"", "null", "\"0x80000000\"", "0x9", 8) \
	SIM_LINE(3, 210, "DELIVER", 2, "0", 3, "\"RDMA_WRITE_WITH_IMM\"", "null", "\"0x80000000\"", "0x9", 8) \
	SIM_LINE(4, 220, "DELIVER", 1, "0", 3, "\"RDMA_WRITE_WITH_IMM\"", "null", "\"0x80000000\"", "0x8", 8) \
	SIM_LINE(5, 230, "DELIVER", 1, "0", 3, "\"RDMA_WRITE_WITH_IMM\"", "null", "null", "0x9", 8) \
	SIM_LINE(6, 240, "DELIVER", 1, "0", 3, "\"RDMA_WRITE_WITH_IMM\"", "null", "\"0x80000001\"", "0x9", 8) \
	SIM_LINE(7, 250, "DELIVER", 1, "0", 3, "\"RDMA_WRITE_WITH_IMM\"", "null", "\"0x80000000\"", "0x9", 9)
#define W_MATCH SIM_LINE(8, 300, "DELIVER", 1, "0", 3, "\"RDMA_WRITE_WITH_IMM\"", "null", "\"0x80000000\"", "0x9", 8)

/* The drawings of path (from event first to last): SVG, Chrome. */
static void draw_range(const char *path, uint64_t first, uint64_t last,
		       char **svg_p, json_t **chrome_p)
{
	struct tv_tb_show_opts o = { .first = first, .last = last };
	char svg[128], chrome[128], err[512] = "";

	tmp_path(svg, sizeof(svg), "d.svg");
	tmp_path(chrome, sizeof(chrome), "d.json");
	o.svg_path = svg;
	o.chrome_path = chrome;
	ck_assert_msg(tv_tb_show(path, &o, err, sizeof(err)) == 0, "%s", err);
	*svg_p = read_all(svg);
	*chrome_p = json_load_file(chrome, 0, NULL);
	ck_assert_ptr_nonnull(*chrome_p);
}

/*
 * A delivery ends a write only when it is that write's in every field:
 * from, to, wr_id, immediate and length.
 */
START_TEST(test_show_deliveries_matched)
{
	char path[128], *svg;
	json_t *ch;

	mk_tmpdir();
	/* None of them is the write's: it was never delivered. */
	hand_trace(W_POST W_OFF, "off.jsonl", path, sizeof(path));
	draw_range(path, 0, UINT64_MAX, &svg, &ch);
	ck_assert_uint_eq(count_of(svg, "(never delivered)"), 1);
	ck_assert_uint_eq(chrome_phases(ch, "s", 0), 1);
	ck_assert_uint_eq(chrome_phases(ch, "f", 0), 0);
	free(svg);
	json_decref(ch);
	/* Drawn up to event 3 only: its delivery may lie beyond. */
	draw_range(path, 0, 3, &svg, &ch);
	ck_assert_uint_eq(count_of(svg, "(never delivered)"), 0);
	ck_assert_uint_eq(count_of(svg, "stroke-dasharray"), 1);
	free(svg);
	json_decref(ch);
	/* The one that is: delivered once, the same again matches nothing. */
	hand_trace(W_POST W_OFF W_MATCH W_MATCH, "match.jsonl", path,
		   sizeof(path));
	draw_range(path, 0, UINT64_MAX, &svg, &ch);
	ck_assert_uint_eq(count_of(svg, "(never delivered)"), 0);
	ck_assert_uint_eq(count_of(svg, "stroke-dasharray"), 0);
	ck_assert_uint_eq(chrome_phases(ch, "s", 0), 1);
	ck_assert_uint_eq(chrome_phases(ch, "f", 0), 1);
	free(svg);
	json_decref(ch);
	/* A trace without events: a drawing of nothing, not cut. */
	hand_trace("", "empty.jsonl", path, sizeof(path));
	draw_range(path, 0, 0, &svg, &ch);
	ck_assert_msg(strstr(svg, ", 0 drawn rows</text>") != NULL, "%s", svg);
	free(svg);
	json_decref(ch);
	rm_tmpdir();
}
END_TEST

/* One case a test: CK_RUN_CASE=test_... runs one. */
#define ADD(t) do { tc = tcase_create(#t); tcase_set_timeout(tc, 120); \
		    tcase_add_test(tc, t); suite_add_tcase(s, tc); } while (0)

static Suite *suite(void)
{
	Suite *s = suite_create("testbed_core_cov");
	TCase *tc;

	ADD(test_toy_summary_fallbacks);
	ADD(test_toy_refused);
	ADD(test_json_accessors);
	ADD(test_json_accessors_null);
	ADD(test_tap_threads_merge);
	ADD(test_tap_lines);
	ADD(test_record_finish_mem);
	ADD(test_record_merge_clocks);
	ADD(test_record_body_t_not_number);
	ADD(test_trace_rec_lines);
	ADD(test_trace_finish_without_run);
	ADD(test_trace_header_fields);
	ADD(test_shrink_inputs);
	ADD(test_swarm_toy_failures);
	ADD(test_junit_control_bytes);
	ADD(test_workload_register_refused);
	ADD(test_toy_invariants_and_breakage);
	ADD(test_toy_setup_error);
	ADD(test_plan_node_rules);
	ADD(test_replay_sim_plan_and_divergence);
	ADD(test_show_toy_and_odd_events);
	ADD(test_record_summary_and_headers);
	ADD(test_shrink_plan_edits);
	ADD(test_swarm_gen_faults_without);
	ADD(test_scenario_more_refused);
	ADD(test_shrink_trace_breakage);
	ADD(test_outputs_dev_full);
	ADD(test_trace_line_newline_lost);
	ADD(test_show_dev_full);
	ADD(test_shrink_crash_and_pipe);
	ADD(test_swarm_pipe_dump_order);
	ADD(test_run_core_failures);
	ADD(test_show_svg_rows);
	ADD(test_show_chrome_unmatched);
	ADD(test_replay_sim_lies);
	ADD(test_trace_workload_without_src);
	ADD(test_show_chrome_last_bytes_lost);
	ADD(test_show_deliveries_matched);
	/* Last: it fills the workload registry. */
	ADD(test_plan_text_range_and_full_registry);
	return s;
}

int main(void)
{
	return tv_check_main(suite());
}
