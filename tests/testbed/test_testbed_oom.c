/*
 * The testbed's allocation failures (issue 24): every entry point swept
 * SQLite-style (do_faultsim_test).  Allocation N fails, for N = 0, 1, 2 ...
 * until the call succeeds; each failure must be clean (-ENOMEM, or the
 * API's documented failure naming "Cannot allocate memory"), and the
 * call that finally succeeds must give what an unfailed call gives (the
 * same event hash, the same bytes).  What a failure leaves behind ASan
 * reports (ci/sanitize.sh runs this suite too).
 *
 * The allocators are wrapped by the linker (tests/common/wrap_alloc.c:
 * malloc, calloc, realloc, aligned_alloc, strdup, strndup, vasprintf,
 * asprintf, getline, open_memstream, fmemopen); jansson allocates inside
 * its shared library, so its allocation functions are set to ones that
 * count in the same countdown (json_set_alloc_funcs).
 *
 * jansson's parser is not safe against failed allocations: its lexer
 * drops a byte it cannot append (lex_save ignores strbuffer_append_byte's
 * failure), so a "successful" parse can return "send-before-rev" for
 * "send-before-recv", and it reports some failures as syntax errors.  No
 * caller can detect that, so the testbed's parses (json_loads, json_loadb,
 * json_load_file, wrapped too) count as one allocation each: failed as a
 * whole the way a careful parser fails (NULL, no error text), else run
 * with the countdown paused.  Its encoder likewise: json_dumps can return
 * '{"point":"vf/write/corrupt",":1}' when an allocation of its loop check
 * fails, so json_dumps, json_dumpf and json_dump_file are one allocation
 * each too (NULL or -1 as a whole).
 */
#include <check.h>
#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "common/tb_files.h"
#include "common/wrap_alloc.h"
#include "tb_int.h"

#define SC(rel) TV_OOM_SOURCE_DIR "/" rel

static const char basic[] =
	"{\"name\": \"b\", \"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0,"
	" \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}],"
	" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]}";

/* ---- jansson through the countdown ----------------------------------------- */

static json_malloc_t saved_malloc;
static json_free_t saved_free;

/* malloc here is __wrap_malloc (this file is linked with --wrap=malloc). */
/* By the testbed's call into jansson in the site sweeps (wrap_alloc.h). */
static void *j_malloc(size_t n)
{
	return oom_library_malloc(n);
}

json_t *__real_json_loads(const char *input, size_t flags, json_error_t *e);
json_t *__real_json_loadb(const char *buf, size_t len, size_t flags,
			  json_error_t *e);
json_t *__real_json_load_file(const char *path, size_t flags,
			      json_error_t *e);
json_t *__wrap_json_loads(const char *input, size_t flags, json_error_t *e);
json_t *__wrap_json_loadb(const char *buf, size_t len, size_t flags,
			  json_error_t *e);
json_t *__wrap_json_load_file(const char *path, size_t flags,
			      json_error_t *e);

char *__real_json_dumps(const json_t *j, size_t flags);
int __real_json_dumpf(const json_t *j, FILE *f, size_t flags);
int __real_json_dump_file(const json_t *j, const char *path, size_t flags);
char *__wrap_json_dumps(const json_t *j, size_t flags);
int __wrap_json_dumpf(const json_t *j, FILE *f, size_t flags);
int __wrap_json_dump_file(const json_t *j, const char *path, size_t flags);

char *__wrap_json_dumps(const json_t *j, size_t flags)
{
	char *s;

	if (oom_take()) {
		errno = ENOMEM;
		return NULL;
	}
	oom_pause();
	s = __real_json_dumps(j, flags);
	oom_resume();
	return s;
}

int __wrap_json_dumpf(const json_t *j, FILE *f, size_t flags)
{
	int rc;

	if (oom_take()) {
		errno = ENOMEM;
		return -1;
	}
	oom_pause();
	rc = __real_json_dumpf(j, f, flags);
	oom_resume();
	return rc;
}

int __wrap_json_dump_file(const json_t *j, const char *path, size_t flags)
{
	int rc;

	if (oom_take()) {
		errno = ENOMEM;
		return -1;
	}
	oom_pause();
	rc = __real_json_dump_file(j, path, flags);
	oom_resume();
	return rc;
}

/* A parse that failed on memory, as jansson leaves its error: no text. */
static json_t *parse_failed(json_error_t *e)
{
	if (e) {
		memset(e, 0, sizeof(*e));
		e->line = e->column = -1;
	}
	return NULL;
}

json_t *__wrap_json_loads(const char *input, size_t flags, json_error_t *e)
{
	json_t *j;

	if (oom_take())
		return parse_failed(e);
	oom_pause();
	j = __real_json_loads(input, flags, e);
	oom_resume();
	return j;
}

json_t *__wrap_json_loadb(const char *buf, size_t len, size_t flags,
			  json_error_t *e)
{
	json_t *j;

	if (oom_take())
		return parse_failed(e);
	oom_pause();
	j = __real_json_loadb(buf, len, flags, e);
	oom_resume();
	return j;
}

json_t *__wrap_json_load_file(const char *path, size_t flags,
			      json_error_t *e)
{
	json_t *j;

	if (oom_take())
		return parse_failed(e);
	oom_pause();
	j = __real_json_load_file(path, flags, e);
	oom_resume();
	return j;
}



static void j_free(void *p)
{
	free(p);
}

static void setup(void)
{
	json_get_alloc_funcs(&saved_malloc, &saved_free);
	oom_library_init();
	json_set_alloc_funcs(j_malloc, j_free);
	mk_tmpdir();
}

static bool by_site; /* sweep_any(): by site, not by countdown */

static void setup_sites(void)
{
	setup();
	by_site = true;
}

static void teardown(void)
{
	by_site = false;
	oom_disarm();
	rm_tmpdir();
	json_set_alloc_funcs(saved_malloc, saved_free);
}

/* Swarm and shrink fork workers: their allocations are not the sweep's. */
static void child_disarm(void)
{
	oom_disarm();
}

/* ---- the sweep ---------------------------------------------------------------- */

/*
 * attempt(ctx) makes the call and checks what it gave: 0 when it
 * succeeded with the right content (asserted inside), -ENOMEM when it
 * failed cleanly.  The sweep fails allocation n for every n below full
 * (the set-up and everything a short call does), then every stride-th,
 * until no failure fires; it returns the iterations.  A call that absorbs
 * a failure (it succeeded, with the right content) is allowed: the
 * testbed has none today (absorbed == 0 is asserted by the callers that
 * expect none).
 */
/* Runs that passed with other events than the unfailed run's. */
static long other_events;
/*
 * Runs whose every operation ended as the unfailed run's, that failed
 * only a scenario expectation about counts: the failed allocation was
 * the fault layer's own (a corruption that fired could not copy the
 * bytes to flip, so the write went intact, as faults/wrap.c documents,
 * and the expected undetected corruption never happened).
 */
static long other_counts;

/*
 * Runs that passed with an operation refused after a fault the protocol
 * cannot recover from had fired (run_verdict).
 */
static long other_refused;

/* The allocation failed now: for the messages of the checks. */
static long sweep_n = -1;

struct sweep {
	long iters;
	long absorbed;
	unsigned long allocs;      /* of the call that succeeded unfailed */
};

static struct sweep sweep(const char *what, int (*attempt)(void *ctx),
			  void *ctx, long full, long stride)
{
	struct sweep s = { 0 };
	long n;
	int rc;

	/* This sweep's own figures, printed at its end. */
	other_events = other_counts = 0;
	for (n = 0;; n += (n < full ? 1 : stride)) {
		bool fired;

		sweep_n = n;
		oom_arm(n);
		rc = attempt(ctx);
		s.allocs = oom_calls();
		fired = oom_disarm();
		s.iters++;
		if (!fired) {
			ck_assert_msg(rc == 0, "%s: unfailed call: %d", what, rc);
			break;
		}
		if (rc == 0) {
			s.absorbed++;
			continue;
		}
		ck_assert_msg(rc == -ENOMEM, "%s, allocation %ld: %d (%s)", what,
			      n, rc, strerror(-rc));
	}
	ck_assert_msg(s.iters > 1, "%s allocates nothing", what);
	printf("%s: %ld iterations, %lu allocations, %ld absorbed, %ld passed "
	       "with other events, %ld with other counts\n", what, s.iters,
	       s.allocs, s.absorbed, other_events, other_counts);
	return s;
}

/* Every allocation up to 400, then about 300 more spread over the rest. */
static long stride_for(unsigned long allocs)
{
	return allocs > 400 ? (long)(allocs - 400) / 300 + 1 : 1;
}

/* How many allocations attempt makes when nothing fails. */
static unsigned long count_allocs(int (*attempt)(void *ctx), void *ctx)
{
	unsigned long n;

	oom_arm(LONG_MAX);
	ck_assert_int_eq(attempt(ctx), 0);
	n = oom_calls();
	ck_assert(!oom_disarm());
	return n;
}

static struct sweep sweep_auto(const char *what, int (*attempt)(void *ctx),
			       void *ctx)
{
	unsigned long n = count_allocs(attempt, ctx);

	return sweep(what, attempt, ctx, 400, stride_for(n));
}

/*
 * Every allocation site once (wrap_alloc.h's site mode): the sites an
 * unfailed call allocates from, then the call again for each with that
 * site's first allocation failed, each checked as the sweeps check.  The
 * stride of sweep_auto passes over sites a long run reaches only late (a
 * crash, a restart, a reconnect, the teardown); this one does not.
 */
static void sweep_sites(const char *what, int (*attempt)(void *ctx),
			void *ctx)
{
	const void *const *sites;
	size_t n, fired_n = 0;
	long absorbed = 0;

	other_events = other_counts = other_refused = 0;
	oom_sites_start();
	ck_assert_int_eq(attempt(ctx), 0);
	n = oom_sites_stop(&sites);
	ck_assert_msg(n > 0, "%s allocates nothing", what);
	for (size_t i = 0; i < n; i++) {
		bool fired;
		int rc;

		sweep_n = (long)i;
		/* OOM_SITE_TRACE=1: each site named before its run, for
		 * addr2line when a check below fails. */
		if (getenv("OOM_SITE_TRACE")) {
			fprintf(stderr, "site %zu ", i);
			backtrace_symbols_fd((void *const *)&sites[i], 1, 2);
		}
		oom_arm_site(sites[i]);
		rc = attempt(ctx);
		fired = oom_disarm();
		if (!fired) {
			/* Its first allocation came during the checks. */
			ck_assert_msg(rc == 0, "%s: site %zu unfailed: %d", what,
				      i, rc);
			continue;
		}
		fired_n++;
		if (rc == 0) {
			absorbed++;
			continue;
		}
		ck_assert_msg(rc == -ENOMEM, "%s, site %zu (%p): %d (%s)", what,
			      i, sites[i], rc, strerror(-rc));
	}
	ck_assert_uint_gt(fired_n, 0);
	printf("%s: %zu allocation sites, %zu failed, %ld absorbed, %ld passed "
	       "with other events, %ld with other counts, %ld refused after "
	       "an unrecoverable fault\n", what, n, fired_n, absorbed,
	       other_events, other_counts, other_refused);
}

/*
 * The countdown's sweep, or in the "sites_files" case (its fixture sets
 * by_site) the sweep by allocation site: the same tests run both ways.
 */
static void sweep_any(const char *what, int (*attempt)(void *ctx), void *ctx)
{
	if (by_site)
		sweep_sites(what, attempt, ctx);
	else
		sweep_auto(what, attempt, ctx);
}

/* ---- a run's failure: the result must name the allocation ------------------ */

static bool names_enomem(const struct tv_tb_failures *f)
{
	size_t kept = f->count < TV_TB_FAILURES_KEPT ? f->count :
		      TV_TB_FAILURES_KEPT;

	/*
	 * The testbed says "Cannot allocate memory"; an engine fails what the
	 * allocation was for with RESOURCE_EXHAUSTED (tensor.h: code 8), as
	 * the rendezvous engine's channel errors and receives do.
	 */
	for (size_t i = 0; i < kept; i++)
		if (f->msgs[i] && (strstr(f->msgs[i], strerror(ENOMEM)) ||
				   strstr(f->msgs[i], "(code 8)") ||
				   strstr(f->msgs[i], "RESOURCE_EXHAUSTED")))
			return true;
	/* Its text could not be kept: the failure itself is counted. */
	for (size_t i = 0; i < kept; i++)
		if (!f->msgs[i])
			return true;
	return false;
}

static bool only_expect(const struct tv_tb_failures *f)
{
	size_t kept = f->count < TV_TB_FAILURES_KEPT ? f->count :
		      TV_TB_FAILURES_KEPT;

	for (size_t i = 0; i < kept; i++)
		if (f->msg_kinds[i] != TV_TB_FK_EXPECT)
			return false;
	return kept == f->count;
}

static void print_failures(const struct tv_tb_failures *f)
{
	size_t kept = f->count < TV_TB_FAILURES_KEPT ? f->count :
		      TV_TB_FAILURES_KEPT;

	for (size_t i = 0; i < kept; i++)
		fprintf(stderr, "  [%s] %s\n", tv_tb_fail_kind_name(f->msg_kinds[i]),
		       f->msgs[i] ? f->msgs[i] : "(null)");
}

/*
 * A run that met a failed allocation: -ENOMEM, or a result that failed
 * and says "Cannot allocate memory"; a run that passed has the unfailed
 * run's operations, bytes and outcome, every invariant (data intact)
 * checked.  Its events may differ where an engine absorbs a failure by
 * design (the rendezvous engine's metadata cache: "a failed insert only
 * costs a round trip", engine/rendezvous/request.c): those are counted,
 * and the tests that compare bytes compare them only for the same events.
 */
static int run_verdict(int rc, struct tv_tb_run *run,
		       const struct tv_tb_result *want)
{
	const struct tv_tb_result *res;
	const struct tv_tb_failures *f;
	bool enomem;

	if (rc)
		return rc;
	res = tv_tb_run_result(run);
	f = tv_tb_run_failures(run);
	if (!f->count && res->refused > want->refused &&
	    tv_tb_run_unrecoverable_fires(run)) {
		/*
		 * A refusal after a fault the protocol cannot recover from is
		 * what such a fault owes (tv_tb_run_refused): a failed
		 * allocation refused then is counted with them, its operation
		 * not done.
		 */
		other_refused++;
		ck_assert_uint_eq(res->ops, want->ops);
		ck_assert_uint_lt(res->ops_ok, want->ops_ok);
		ck_assert_str_eq(tv_tb_run_outcome(run), "PASS");
		tv_tb_run_free(run);
		return 0;
	}
	if (!f->count) {
		if (res->event_hash != want->event_hash)
			other_events++;
		else
			ck_assert_uint_eq(res->sim_events, want->sim_events);
		ck_assert_uint_eq(res->ops, want->ops);
		ck_assert_uint_eq(res->ops_ok, want->ops_ok);
		ck_assert_uint_eq(res->bytes, want->bytes);
		ck_assert_str_eq(tv_tb_run_outcome(run), "PASS");
		tv_tb_run_free(run);
		return 0;
	}
	ck_assert_str_eq(tv_tb_run_outcome(run), "FAIL");
	/* (Its bytes may differ: the unfailed run's corrupted ones do not
	 * count.) */
	if (only_expect(f) && res->ops_ok == want->ops_ok &&
	    res->ops == want->ops) {
		other_counts++;
		tv_tb_run_free(run);
		return -ENOMEM;
	}
	enomem = names_enomem(f);
	if (!enomem)
		print_failures(f);
	ck_assert_msg(enomem, "allocation %ld: a failed run that does not say "
		      "why", sweep_n);
	tv_tb_run_free(run);
	return -ENOMEM;
}

/* got is want: else the first difference, short (Check's messages are). */
static void same_text(const char *got, const char *want)
{
	size_t i = 0;

	while (got[i] && got[i] == want[i])
		i++;
	ck_assert_msg(got[i] == want[i], "allocation %ld: differs at %zu: "
		      "'%.120s' instead of '%.120s'", sweep_n, i,
		      got + (i > 40 ? i - 40 : 0), want + (i > 40 ? i - 40 : 0));
}

/* ---- scenario load ------------------------------------------------------------ */

struct load_ctx {
	const char *path;
	const char *text;
	char name[128];
	uint64_t nops;
	uint32_t nodes;
};

static int load_attempt(void *arg)
{
	struct load_ctx *c = arg;
	struct tv_tb_scenario *sc;
	char err[TV_TB_ERR_MAX] = "";
	int rc;

	rc = c->path ? tv_tb_scenario_load_file(c->path, &sc, err) :
	     tv_tb_scenario_load_string(c->text, "oom", &sc, err);
	oom_pause();
	if (rc) {
		ck_assert_msg(rc == -ENOMEM, "allocation %ld: %d: %s", sweep_n,
			      rc, err);
		return rc;
	}
	if (c->name[0]) {
		ck_assert_str_eq(tv_tb_scenario_name(sc), c->name);
		ck_assert_uint_eq(tv_tb_scenario_ops(sc), c->nops);
		ck_assert_uint_eq(tv_tb_scenario_nodes(sc), c->nodes);
	} else {
		snprintf(c->name, sizeof(c->name), "%s",
			 tv_tb_scenario_name(sc));
		c->nops = tv_tb_scenario_ops(sc);
		c->nodes = tv_tb_scenario_nodes(sc);
	}
	tv_tb_scenario_free(sc);
	return 0;
}

static const char *const load_files[] = {
	SC("scenarios/send_before_recv.json"),
	SC("scenarios/corruption/undetected.json"),
	SC("scenarios/many_concurrent.json"),
	SC("scenarios/port/ping_pong.json"),
	SC("scenarios/port/collectives.json"),
	SC("scenarios/gather/direct_single_qp.json"),
	SC("scenarios/gather/hot_cache.json"),
	SC("scenarios/string_tensor.json"),        /* strings, explicit */
	SC("scenarios/slow_link.json"),            /* link overrides */
	SC("scenarios/corruption/cached_metadata.json"), /* expectations */
	SC("scenarios/gather/sorted_dups.json"),   /* explicit ids */
};

/* Every scenario file: its whole parse swept (a few hundred allocations). */
START_TEST(test_oom_scenario_load)
{
	struct load_ctx c = { .path = load_files[_i] };

	ck_assert_int_eq(load_attempt(&c), 0);
	sweep(c.path, load_attempt, &c, LONG_MAX, 1);
}
END_TEST

START_TEST(test_oom_scenario_load_string)
{
	struct load_ctx c = { .text = basic };

	ck_assert_int_eq(load_attempt(&c), 0);
	sweep("load_string", load_attempt, &c, LONG_MAX, 1);
}
END_TEST

/* ---- runs of each workload ------------------------------------------------------ */

struct run_ctx {
	struct tv_tb_scenario *sc;
	struct tv_tb_result want;
};

static int run_attempt(void *arg)
{
	struct run_ctx *c = arg;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run = NULL;
	int rc;

	tv_tb_run_opts_init(&o, c->sc);
	rc = tv_tb_run(c->sc, &o, &run);
	oom_pause();
	return run_verdict(rc, run, &c->want);
}

static void run_baseline(struct run_ctx *c, const char *path)
{
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char err[TV_TB_ERR_MAX];

	ck_assert_msg(tv_tb_scenario_load_file(path, &c->sc, err) == 0, "%s",
		      err);
	tv_tb_run_opts_init(&o, c->sc);
	ck_assert_int_eq(tv_tb_run(c->sc, &o, &run), 0);
	ck_assert_uint_eq(tv_tb_run_failures(run)->count, 0);
	c->want = *tv_tb_run_result(run);
	tv_tb_run_free(run);
}

static const char *const run_files[] = {
	SC("scenarios/send_before_recv.json"),
	SC("scenarios/corruption/undetected.json"),
	SC("scenarios/port/ping_pong.json"),
	SC("scenarios/gather/direct_single_qp.json"),
};

/*
 * A run: its set-up (every allocation), then its run loop and teardown
 * at a stride (sweep_auto): a run makes thousands of allocations, each
 * run of the sweep all of them.
 */
START_TEST(test_oom_run)
{
	struct run_ctx c = { 0 };

	run_baseline(&c, run_files[_i]);
	sweep_auto(run_files[_i], run_attempt, &c);
	tv_tb_scenario_free(c.sc);
}
END_TEST

/*
 * Runs by allocation site: the four above and runs that reach what they
 * do not (faults, crashes and restarts of each workload, reconnects).
 */
static const char *const site_files[] = {
	SC("scenarios/send_before_recv.json"),
	SC("scenarios/corruption/undetected.json"),
	SC("scenarios/port/ping_pong.json"),
	SC("scenarios/gather/direct_single_qp.json"),
	SC("scenarios/cached_metadata.json"),
	SC("scenarios/port/collectives.json"),
	SC("scenarios/gather/two_servers.json"),
	SC("tests/regressions/port_point_node_crash.json"),
	SC("tests/regressions/peer_restart_republish.json"),
	SC("tests/regressions/node_crash_gone_mid_write.json"),
	SC("tests/regressions/gather_point_server_rereg.json"),
	SC("tests/regressions/point_qp_error_twice.json"),
	SC("tests/regressions/point_engine_alloc.json"),
	SC("tests/regressions/tf18630_late_peer.json"),
	SC("tests/regressions/port_point_fifo_full.json"),
	SC("tests/regressions/port_161_wait_deadline.json"),
	SC("tests/regressions/port_415_cq_overflow.json"),
	SC("tests/regressions/gather_ignored_error.json"),
	SC("tests/regressions/gather_zero_rows.json"),
	SC("tests/regressions/point_msg_drop_re_request.json"),
	SC("tests/regressions/dup_late_landing.json"),
	SC("scenarios/string_tensor.json"),
	SC("scenarios/many_concurrent.json"),
	SC("tests/regressions/tf23220_unregistered_source.json"),
};

START_TEST(test_oom_run_sites)
{
	struct run_ctx c = { 0 };

	run_baseline(&c, site_files[_i]);
	sweep_sites(site_files[_i], run_attempt, &c);
	tv_tb_scenario_free(c.sc);
}
END_TEST

/* ---- fault plans ------------------------------------------------------------------ */

struct plan_ctx {
	const char *text;
	json_t *want;
};

static int plan_attempt(void *arg)
{
	struct plan_ctx *c = arg;
	char err[TV_TB_PLAN_ERR_MAX] = "";
	json_t *plan = NULL;
	int rc = tv_tb_plan_from_text(c->text, &plan, err, sizeof(err));

	oom_pause();
	if (rc) {
		ck_assert_msg(rc == -ENOMEM, "allocation %ld: %d: %s", sweep_n,
			      rc, err);
		return rc;
	}
	if (c->want)
		ck_assert_msg(json_equal(plan, c->want), "another plan");
	else
		c->want = json_incref(plan);
	json_decref(plan);
	return 0;
}

START_TEST(test_oom_plan_text)
{
	static const char *const texts[] = {
		"vf/ack/drop:nth=3,count=1;sim/deliver/delay:p=0.5,arg=2000",
		"[{\"point\": \"vf/write/corrupt\", \"nth\": 1, \"count\": 1},"
		" {\"point\": \"vf/ack/drop\", \"probability\": 0.25}]",
	};
	struct plan_ctx c = { .text = texts[_i] };

	ck_assert_int_eq(plan_attempt(&c), 0);
	sweep(c.text, plan_attempt, &c, LONG_MAX, 1);
	json_decref(c.want);
}
END_TEST

/* A scenario's plan extended and replaced. */
struct setf_ctx {
	struct tv_tb_scenario *sc;
	json_t *over;
	json_t *want;
};

static int setf_attempt(void *arg)
{
	struct setf_ctx *c = arg;
	struct tv_tb_scenario *sc;
	char err[TV_TB_ERR_MAX];
	int rc;

	rc = tv_tb_scenario_from_json(tv_tb_scenario_json(c->sc), "oom", &sc,
				      err);
	if (rc) {
		oom_pause();
		ck_assert_msg(rc == -ENOMEM, "allocation %ld: %d: %s", sweep_n,
			      rc, err);
		return rc;
	}
	rc = tv_tb_scenario_set_faults(sc, c->over, false);
	oom_pause();
	if (rc) {
		ck_assert_int_eq(rc, -ENOMEM);
		tv_tb_scenario_free(sc);
		return rc;
	}
	if (c->want)
		ck_assert(json_equal(tv_tb_scenario_faults(sc), c->want));
	else
		c->want = json_deep_copy(tv_tb_scenario_faults(sc));
	tv_tb_scenario_free(sc);
	return 0;
}

START_TEST(test_oom_set_faults)
{
	struct setf_ctx c = { 0 };
	char err[TV_TB_ERR_MAX];

	ck_assert_int_eq(tv_tb_scenario_load_file(
		SC("scenarios/corruption/undetected.json"), &c.sc, err), 0);
	ck_assert_int_eq(tv_tb_plan_from_text("vf/ack/drop:nth=2;vf/write/corrupt:nth=3",
					      &c.over, err, sizeof(err)), 0);
	ck_assert_int_eq(setf_attempt(&c), 0);
	ck_assert_uint_eq(json_array_size(c.want), 2);
	sweep("set_faults", setf_attempt, &c, LONG_MAX, 1);
	json_decref(c.want);
	json_decref(c.over);
	tv_tb_scenario_free(c.sc);
}
END_TEST

/* ---- traces, replay, show ------------------------------------------------------------ */

struct trace_ctx {
	struct tv_tb_scenario *sc;
	char path[256];
	char *want;                /* the unfailed trace's bytes */
	struct tv_tb_result res;
};

/*
 * Every number after key becomes one "0": wall times differ from run to
 * run, in their digits and in how many (999999 ns against 1000000 ns
 * once made two equal traces differ).
 */
static void zero_key(char *s, const char *key)
{
	char *p = s;

	while ((p = strstr(p, key))) {
		char *q;

		p += strlen(key);
		for (q = p; *q >= '0' && *q <= '9'; q++)
			;
		if (q == p)
			continue;
		*p++ = '0';
		memmove(p, q, strlen(q) + 1);
	}
}

/* Traces and recordings hold times of the wall clock: all but those. */
static void strip_times(char *s)
{
	zero_key(s, "\"t_ns\":");
	zero_key(s, "\"wall_ns\":");
}

/* A trace of other events: a header, its events, its summary, whole. */
static void check_trace_whole(const char *text, uint64_t hash)
{
	int n = count_lines(text);
	char *last = line_of(text, n - 1), want[40];
	json_t *sum = json_loads(last, 0, NULL);

	ck_assert_ptr_nonnull(sum);
	ck_assert(tb_trace_is_summary(sum));
	ck_assert_int_eq(n, 2 + json_integer_value(json_object_get(sum,
								    "events")));
	ck_assert_str_eq(json_string_value(json_object_get(sum, "result")),
			 "PASS");
	snprintf(want, sizeof(want), "0x%016" PRIx64, hash);
	ck_assert_str_eq(json_string_value(json_object_get(sum, "event_hash")),
			 want);
	json_decref(sum);
	free(last);
}

static int trace_attempt(void *arg)
{
	struct trace_ctx *c = arg;
	struct tv_tb_trace *t;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run = NULL;
	char *got;
	int rc, frc;

	unlink(c->path);
	rc = tv_tb_trace_create(c->path, c->sc, "oom.json", 3, NULL, &t);
	if (rc)
		return rc;
	tv_tb_run_opts_init(&o, c->sc);
	o.seed = 3;
	o.trace = t;
	rc = tv_tb_run(c->sc, &o, &run);
	frc = tv_tb_trace_finish(t, rc ? NULL : run);
	oom_pause();
	if (!rc && frc) {
		tv_tb_run_free(run);
		return frc;
	}
	if (rc)
		return rc;
	if (c->want) {
		uint64_t hash = tv_tb_run_result(run)->event_hash;

		if (run_verdict(0, run, &c->res))
			return -ENOMEM;
		got = read_all(c->path);
		strip_times(got);
		if (hash == c->res.event_hash)
			same_text(got, c->want);
		else
			check_trace_whole(got, hash);
		free(got);
		return 0;
	}
	if (c->want)
		return -ENOMEM;
	ck_assert_uint_eq(tv_tb_run_failures(run)->count, 0);
	c->res = *tv_tb_run_result(run);
	c->want = read_all(c->path);
	strip_times(c->want);
	tv_tb_run_free(run);
	return 0;
}

START_TEST(test_oom_trace_write)
{
	struct trace_ctx c = { 0 };
	char err[TV_TB_ERR_MAX];

	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "oom", &c.sc, err), 0);
	tmp_path(c.path, sizeof(c.path), "t.jsonl");
	ck_assert_int_eq(trace_attempt(&c), 0);
	sweep_any("trace", trace_attempt, &c);
	free(c.want);
	tv_tb_scenario_free(c.sc);
}
END_TEST

struct replay_ctx {
	char path[256];
	uint64_t events;
};

static int replay_attempt(void *arg)
{
	struct replay_ctx *c = arg;
	struct tv_tb_replay_report rep;
	int rc;

	memset(&rep, 0, sizeof(rep));
	rc = tv_tb_replay(c->path, &rep);
	oom_pause();
	if (rc) {
		ck_assert_msg(rc == -ENOMEM, "%d: %s", rc, rep.err);
		return rc;
	}
	/*
	 * The run replayed met the failure: it went another way (an engine
	 * absorbs some failures, a run fails on others), which is a
	 * divergence, never SAME; a replay that could not even start says
	 * why.
	 */
	if (rep.state != TV_TB_REPLAY_SAME) {
		bool enomem = rep.state == TV_TB_REPLAY_DIVERGED ||
			      strstr(rep.err, strerror(ENOMEM)) != NULL;

		ck_assert_msg(enomem, "state %d: '%s' (%s / %s)", rep.state,
			      rep.err, rep.expected ? rep.expected : "-",
			      rep.actual ? rep.actual : "-");
		tv_tb_replay_report_free(&rep);
		return -ENOMEM;
	}
	if (c->events)
		ck_assert_uint_eq(rep.events, c->events);
	c->events = rep.events;
	ck_assert_str_eq(rep.result, "PASS");
	tv_tb_replay_report_free(&rep);
	return 0;
}

START_TEST(test_oom_replay)
{
	struct replay_ctx c = { 0 };

	trace_text(basic, "r.jsonl", 5, NULL, c.path, sizeof(c.path));
	ck_assert_int_eq(replay_attempt(&c), 0);
	ck_assert_uint_gt(c.events, 10);
	sweep_any("replay", replay_attempt, &c);
}
END_TEST

struct show_ctx {
	char trace[256], svg[256], chrome[256];
	char *want_svg, *want_chrome;
};

static int show_attempt(void *arg)
{
	struct show_ctx *c = arg;
	struct tv_tb_show_opts o = { .svg_path = c->svg,
				     .chrome_path = c->chrome };
	char err[256] = "";
	char *svg, *chrome;
	int rc;

	unlink(c->svg);
	unlink(c->chrome);
	rc = tv_tb_show(c->trace, &o, err, sizeof(err));
	oom_pause();
	if (rc) {
		ck_assert_msg(rc == -ENOMEM, "allocation %ld: %d: %s", sweep_n,
			      rc, err);
		ck_assert_msg(strstr(err, strerror(ENOMEM)) ||
			      strstr(err, "out of memory"), "%s", err);
		return rc;
	}
	svg = read_all(c->svg);
	chrome = read_all(c->chrome);
	if (c->want_svg) {
		same_text(svg, c->want_svg);
		same_text(chrome, c->want_chrome);
		free(svg);
		free(chrome);
	} else {
		c->want_svg = svg;
		c->want_chrome = chrome;
	}
	return 0;
}

START_TEST(test_oom_show)
{
	static const char *const files[] = {
		SC("scenarios/send_before_recv.json"),
		SC("scenarios/port/ping_pong.json"),
		SC("scenarios/gather/direct_single_qp.json"),
	};
	struct show_ctx c = { 0 };
	char *text = read_all(files[_i]);

	trace_text(text, "s.jsonl", 1, NULL, c.trace, sizeof(c.trace));
	free(text);
	tmp_path(c.svg, sizeof(c.svg), "s.svg");
	tmp_path(c.chrome, sizeof(c.chrome), "s.json");
	ck_assert_int_eq(show_attempt(&c), 0);
	ck_assert_msg(strstr(c.want_svg, "<svg") != NULL, "%.100s", c.want_svg);
	sweep_any(files[_i], show_attempt, &c);
	free(c.want_svg);
	free(c.want_chrome);
}
END_TEST

/* ---- recordings ------------------------------------------------------------------ */

struct rec_ctx {
	struct tv_tb_scenario *sc;
	char path[256];
	char *want;
	struct tv_tb_result res;
};


static int rec_attempt(void *arg)
{
	struct rec_ctx *c = arg;
	struct tv_tb_tap *tap;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run = NULL;
	uint64_t hash;
	char *got;
	int rc, frc;

	unlink(c->path);
	rc = tv_tb_record_create(c->path, c->sc, "oom.json", 2, "sim", &tap);
	if (rc)
		return rc;
	tv_tb_run_opts_init(&o, c->sc);
	o.seed = 2;
	o.tap = tap;
	rc = tv_tb_run(c->sc, &o, &run);
	if (rc) {
		tb_tap_free(tap);
		return rc;
	}
	frc = tv_tb_record_finish(tap, tv_tb_run_result(run),
				  tv_tb_run_failures(run));
	oom_pause();
	if (frc) {
		ck_assert_int_eq(frc, -ENOMEM);
		tv_tb_run_free(run);
		return frc;
	}
	if (!c->want) {
		ck_assert_uint_eq(tv_tb_run_failures(run)->count, 0);
		c->res = *tv_tb_run_result(run);
		c->want = read_all(c->path);
		strip_times(c->want);
		tv_tb_run_free(run);
		return 0;
	}
	hash = tv_tb_run_result(run)->event_hash;
	rc = run_verdict(0, run, &c->res);
	if (rc)
		return rc;
	got = read_all(c->path);
	strip_times(got);
	if (hash == c->res.event_hash)
		same_text(got, c->want);
	else
		ck_assert_msg(strstr(got, "\"result\":\"PASS\"") != NULL,
			      "%.200s", got);
	free(got);
	return 0;
}

START_TEST(test_oom_record)
{
	struct rec_ctx c = { 0 };
	char err[TV_TB_ERR_MAX];

	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "oom", &c.sc, err), 0);
	tmp_path(c.path, sizeof(c.path), "rec.jsonl");
	ck_assert_int_eq(rec_attempt(&c), 0);
	sweep_any("record", rec_attempt, &c);
	free(c.want);
	tv_tb_scenario_free(c.sc);
}
END_TEST

struct rsim_ctx {
	char path[256];
	uint64_t events;
};

static int rsim_attempt(void *arg)
{
	struct rsim_ctx *c = arg;
	struct tv_tb_replay_sim_report rep;
	int rc;

	memset(&rep, 0, sizeof(rep));
	rc = tv_tb_replay_sim(c->path, &rep);
	oom_pause();
	if (rc) {
		ck_assert_msg(rc == -ENOMEM, "%d: %s", rc, rep.err);
		return rc;
	}
	/* As for replay: the run met the failure and went another way. */
	if (rep.diverged || !rep.same_outcome) {
		bool enomem = rep.diverged ||
			      strstr(rep.sim_failures[0], strerror(ENOMEM)) ||
			      strstr(rep.err, strerror(ENOMEM));

		ck_assert_msg(enomem, "allocation %ld: %s/%s, diverged at %"
			      PRIu64 ": %s / %s; %s", sweep_n, rep.rec_result,
			      rep.sim_result, rep.div_index,
			      rep.expected ? rep.expected : "-",
			      rep.actual ? rep.actual : "-",
			      rep.sim_failures[0]);
		tv_tb_replay_sim_report_free(&rep);
		return -ENOMEM;
	}
	ck_assert_str_eq(rep.sim_result, "PASS");
	if (c->events)
		ck_assert_uint_eq(rep.sim_events, c->events);
	c->events = rep.sim_events;
	tv_tb_replay_sim_report_free(&rep);
	return 0;
}

START_TEST(test_oom_replay_sim)
{
	static const char *const files[] = {
		SC("scenarios/send_before_recv.json"),
		SC("scenarios/port/ping_pong.json"),
		SC("scenarios/gather/direct_single_qp.json"),
	};
	struct rsim_ctx c = { 0 };
	char *text = read_all(files[_i]);

	record_text(text, "rs.jsonl", 1, "sim", c.path, sizeof(c.path));
	free(text);
	ck_assert_int_eq(rsim_attempt(&c), 0);
	ck_assert_uint_gt(c.events, 0);
	sweep_any(files[_i], rsim_attempt, &c);
}
END_TEST

struct merge_ctx {
	char out[256];
	const char *paths[2];
	char *bufs[2];
	uint64_t lens[2];
	bool mem;
	char *want;
};

static int merge_attempt(void *arg)
{
	struct merge_ctx *c = arg;
	char err[256] = "";
	char *got;
	int rc;

	unlink(c->out);
	rc = c->mem ? tb_record_merge_mem(c->out, c->bufs, c->lens, 2, err,
					  sizeof(err)) :
	     tv_tb_record_merge(c->out, c->paths, 2, err, sizeof(err));
	oom_pause();
	if (rc) {
		ck_assert_msg(rc == -ENOMEM, "allocation %ld: %d: %s", sweep_n,
			      rc, err);
		return rc;
	}
	got = read_all(c->out);
	if (c->want) {
		same_text(got, c->want);
		free(got);
	} else {
		c->want = got;
	}
	return 0;
}

/* buf's header (its first line) says node's recording, host "h". */
static void set_rec_node(char **buf, int node)
{
	char *nl = strchr(*buf, '\n'), *hdr_text, *out;
	json_t *hdr, *rec;
	size_t len;

	ck_assert_ptr_nonnull(nl);
	*nl = 0;
	hdr = json_loads(*buf, 0, NULL);
	ck_assert_ptr_nonnull(hdr);
	rec = json_object_get(hdr, "recording");
	ck_assert_ptr_nonnull(rec);
	ck_assert_int_eq(json_object_set_new(rec, "node", json_integer(node)), 0);
	ck_assert_int_eq(json_object_set_new(rec, "host", json_string("h")), 0);
	hdr_text = json_dumps(hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
	ck_assert_ptr_nonnull(hdr_text);
	len = strlen(hdr_text) + 1 + strlen(nl + 1);
	out = malloc(len + 1);
	ck_assert_ptr_nonnull(out);
	snprintf(out, len + 1, "%s\n%s", hdr_text, nl + 1);
	free(hdr_text);
	json_decref(hdr);
	free(*buf);
	*buf = out;
}

/* Two nodes' recordings (serve --record), merged from files and memory. */
START_TEST(test_oom_merge)
{
	struct merge_ctx c = { .mem = _i == 1 };
	struct tv_tb_scenario *sc;
	char err[TV_TB_ERR_MAX], p[2][256];
	size_t len;

	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "oom", &sc, err), 0);
	for (int i = 0; i < 2; i++) {
		c.bufs[i] = record_mem(sc, 1, &len);
		tmp_path(p[i], sizeof(p[i]), i ? "n1.jsonl" : "n0.jsonl");
		set_rec_node(&c.bufs[i], i);
		c.lens[i] = strlen(c.bufs[i]);
		write_file(p[i], c.bufs[i]);
		c.paths[i] = p[i];
	}
	tmp_path(c.out, sizeof(c.out), "m.jsonl");
	ck_assert_int_eq(merge_attempt(&c), 0);
	ck_assert_msg(strstr(c.want, "\"merged\":2") != NULL, "%.300s", c.want);
	sweep_any(c.mem ? "merge_mem" : "merge", merge_attempt, &c);
	free(c.want);
	free(c.bufs[0]);
	free(c.bufs[1]);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- swarm generation ---------------------------------------------------------------- */

struct gen_ctx {
	const char *workload;
	uint64_t seed;
	json_t *want;
};

static int gen_attempt(void *arg)
{
	struct gen_ctx *c = arg;
	json_t *sc = NULL;
	int rc = tv_tb_swarm_generate(c->seed, 0, c->workload, &sc);

	oom_pause();
	if (rc) {
		ck_assert_int_eq(rc, -ENOMEM);
		return rc;
	}
	if (c->want)
		ck_assert_msg(json_equal(sc, c->want), "another scenario");
	else
		c->want = json_incref(sc);
	json_decref(sc);
	return 0;
}

START_TEST(test_oom_swarm_generate)
{
	static const char *const wls[] = { "rendezvous", "port", "gather" };

	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct gen_ctx c = { .workload = wls[_i], .seed = seed };
		char what[64];

		ck_assert_int_eq(gen_attempt(&c), 0);
		snprintf(what, sizeof(what), "generate %s %" PRIu64, wls[_i],
			 seed);
		sweep(what, gen_attempt, &c, LONG_MAX, 1);
		json_decref(c.want);
	}
}
END_TEST

/* ---- reports: result JSON, JUnit, summary ----------------------------------------- */

struct report_ctx {
	struct tv_tb_run *run;
	char json_path[256], junit_path[256];
	char *want_json, *want_junit;
};

static int report_attempt(void *arg)
{
	struct report_ctx *c = arg;
	struct tv_tb_junit_case cs[2] = {
		{ .classname = "tensorverbs.run", .name = "a", .time_s = 0.5 },
		{ .classname = "tensorverbs.run", .name = "b<&>",
		  .failure = "hang", .type = "hang", .text = "x\ny" },
	};
	json_t *o;
	char *got;
	int rc;

	o = tv_tb_run_result_json(c->run, "tensorverbs run x.json");
	if (!o)
		return -ENOMEM;
	unlink(c->json_path);
	rc = tv_tb_json_write(c->json_path, o);
	json_decref(o);
	if (rc)
		return rc;
	unlink(c->junit_path);
	rc = tv_tb_junit_write(c->junit_path, "oom", cs, 2);
	if (rc)
		return rc;
	oom_pause();
	got = read_all(c->json_path);
	if (c->want_json) {
		same_text(got, c->want_json);
		free(got);
		got = read_all(c->junit_path);
		same_text(got, c->want_junit);
		free(got);
	} else {
		c->want_json = got;
		c->want_junit = read_all(c->junit_path);
	}
	return 0;
}

START_TEST(test_oom_reports)
{
	struct report_ctx c = { 0 };
	struct tv_tb_scenario *sc;

	c.run = run_scenario_text(basic, 1, NULL, &sc);
	tmp_path(c.json_path, sizeof(c.json_path), "r.json");
	tmp_path(c.junit_path, sizeof(c.junit_path), "j.xml");
	ck_assert_int_eq(report_attempt(&c), 0);
	ck_assert_msg(strstr(c.want_json, "\"passed\": true") != NULL, "%s",
		      c.want_json);
	sweep("reports", report_attempt, &c, LONG_MAX, 1);
	free(c.want_json);
	free(c.want_junit);
	tv_tb_run_free(c.run);
	tv_tb_scenario_free(sc);
}
END_TEST

struct sw_report_ctx {
	struct tv_tb_swarm_opts opts;
	struct tv_tb_swarm_report rep;
	json_t *want;
};

static int sw_report_attempt(void *arg)
{
	struct sw_report_ctx *c = arg;
	json_t *o = tv_tb_swarm_result_json(&c->opts, &c->rep);

	oom_pause();
	if (!o)
		return -ENOMEM;
	if (c->want)
		ck_assert(json_equal(o, c->want));
	else
		c->want = json_incref(o);
	json_decref(o);
	return 0;
}

START_TEST(test_oom_swarm_report)
{
	struct sw_report_ctx c = { .opts = { .seeds = 10, .first = 1 } };

	c.rep.done = 10;
	c.rep.violations = 1;
	c.rep.on[0] = 3;
	c.rep.fires[0] = 5;
	c.rep.nfail = 1;
	c.rep.fail[0] = (struct tv_tb_swarm_failure){ .seed = 4,
		.first = TV_TB_FK_HANG, .failures = 1, .msg = "hang",
		.file = "f.json", .trace = "f.jsonl", .written = true };
	ck_assert_int_eq(sw_report_attempt(&c), 0);
	sweep("swarm report", sw_report_attempt, &c, LONG_MAX, 1);
	json_decref(c.want);
}
END_TEST

/* ---- windows, JSON helpers ------------------------------------------------------------- */

static int windows_attempt(void *arg)
{
	struct tv_tb_windows *w;
	int rc;

	(void)arg;
	rc = tv_tb_windows_create(3, &w);
	if (rc)
		return rc;
	/* Enough windows to grow the table (1024 slots, half full) twice. */
	for (uint32_t i = 0; !rc && i < 1100; i++) {
		struct tv_tb_window win = { .addr = 0x10000 * (uint64_t)(i + 1),
					    .length = 4096, .rkey = 0x100 + i,
					    .id = i };

		rc = tv_tb_windows_open(w, i % 3, (i + 1) % 3, i, &win);
	}
	oom_pause();
	for (uint32_t i = 0; !rc && i < 1100; i++) {
		struct tv_tb_window *f = tv_tb_windows_find(w, i % 3,
							    (i + 1) % 3, i);

		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(f->id, i);
		ck_assert_uint_eq(f->rkey, 0x100 + i);
	}
	tv_tb_windows_destroy(w);
	return rc;
}

START_TEST(test_oom_windows)
{
	struct sweep s = sweep("windows", windows_attempt, NULL, LONG_MAX, 1);

	ck_assert_uint_eq(s.allocs, 4); /* the table, its slots, two growths */
}
END_TEST

static int ju_attempt(void *arg)
{
	char jerr[TV_TB_ERR_MAX] = "";
	struct tv_ju jc = { .err = jerr };
	json_t *o = json_pack("{s:s}", "k", "value");
	char *s = NULL;
	uint64_t *arr = NULL;
	size_t cap = 0;
	int rc;

	(void)arg;
	if (!o)
		return -ENOMEM;
	rc = tv_ju_get_str(&jc, "$", o, "k", true, &s);
	json_decref(o);
	if (rc)
		return rc;
	for (size_t n = 0; n < 100; n++) {
		rc = tv_ju_grow((void **)&arr, n, &cap, sizeof(*arr));
		if (rc)
			break;
		arr[n] = n;
	}
	oom_pause();
	ck_assert_str_eq(s, "value");
	free(s);
	for (size_t n = 0; !rc && n < 100; n++)
		ck_assert_uint_eq(arr[n], n);
	free(arr);
	return rc;
}

START_TEST(test_oom_json_helpers)
{
	sweep("json helpers", ju_attempt, NULL, LONG_MAX, 1);
}
END_TEST

/* ---- shrink ------------------------------------------------------------------------------ */

struct shrink_ctx {
	char in[256], out[256];
	char *want;
	uint64_t ops;
};

static int shrink_attempt(void *arg)
{
	struct shrink_ctx *c = arg;
	struct tv_tb_shrink_opts o = { .max_runs = 40 };
	struct tv_tb_shrink_report rep;
	char err[256] = "";
	char *got;
	int rc;

	unlink(c->out);
	rc = tv_tb_shrink(c->in, c->out, &o, &rep, err, sizeof(err));
	oom_pause();
	if (rc) {
		ck_assert_msg(rc == -ENOMEM, "allocation %ld: %d: %s", sweep_n,
			      rc, err);
		return rc;
	}
	got = read_all(c->out);
	if (c->want) {
		same_text(got, c->want);
		ck_assert_uint_eq(rep.ops, c->ops);
		free(got);
	} else {
		c->want = got;
		c->ops = rep.ops;
	}
	return 0;
}

/*
 * The shrinker's own allocations (loading, edits, writing): its
 * candidates run in forked children, whose allocations are not counted
 * (child_disarm).
 */
START_TEST(test_oom_shrink)
{
	static const char wrong_shape[] =
		"{\"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1,"
		" \"name\": \"t\", \"dtype\": \"float\", \"shape\": [4, 4]},"
		" {\"from\": 0, \"to\": 1, \"name\": \"u\", \"dtype\": \"float\","
		" \"shape\": [4]}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\","
		" \"expect\": {\"shape\": [4, 5]}},"
		" {\"node\": 1, \"from\": 0, \"name\": \"u\"}]}]}";
	struct shrink_ctx c = { 0 };

	ck_assert_int_eq(pthread_atfork(NULL, NULL, child_disarm), 0);
	tmp_path(c.in, sizeof(c.in), "in.json");
	tmp_path(c.out, sizeof(c.out), "min.json");
	write_file(c.in, wrong_shape);
	ck_assert_int_eq(shrink_attempt(&c), 0);
	ck_assert_uint_eq(c.ops, 1);
	sweep_any("shrink", shrink_attempt, &c);
	free(c.want);
}
END_TEST

static Suite *oom_suite(void)
{
	Suite *s = suite_create("testbed_oom");
	TCase *tc;

#define OOM_CASE(name) (tc = tcase_create(name), \
			tcase_add_checked_fixture(tc, setup, teardown), \
			tcase_set_timeout(tc, 120), suite_add_tcase(s, tc))
	OOM_CASE("load");
	tcase_add_loop_test(tc, test_oom_scenario_load, 0,
			    (int)TB_ARRAY_SIZE(load_files));
	tcase_add_test(tc, test_oom_scenario_load_string);
	OOM_CASE("run");
	tcase_add_loop_test(tc, test_oom_run, 0, (int)TB_ARRAY_SIZE(run_files));
	OOM_CASE("plan");
	tcase_add_loop_test(tc, test_oom_plan_text, 0, 2);
	tcase_add_test(tc, test_oom_set_faults);
	OOM_CASE("trace");
	tcase_add_test(tc, test_oom_trace_write);
	tcase_add_test(tc, test_oom_replay);
	tcase_add_loop_test(tc, test_oom_show, 0, 3);
	OOM_CASE("record");
	tcase_add_test(tc, test_oom_record);
	tcase_add_loop_test(tc, test_oom_replay_sim, 0, 3);
	tcase_add_loop_test(tc, test_oom_merge, 0, 2);
	OOM_CASE("swarm");
	tcase_add_loop_test(tc, test_oom_swarm_generate, 0, 3);
	tcase_add_test(tc, test_oom_shrink);
	/*
	 * ctest runs this case as its own test: CK_RUN_CASE=sites there,
	 * CK_EXCLUDE_TAGS=sites in the other (Check has no case exclusion).
	 */
	OOM_CASE("sites");
	tcase_set_tags(tc, "sites");
	tcase_add_loop_test(tc, test_oom_run_sites, 0,
			    (int)TB_ARRAY_SIZE(site_files));
	/*
	 * The file writers and readers again, by site: jansson's allocations
	 * are sites of their own there (the testbed's call into jansson,
	 * wrap_alloc.h), which the countdown's stride passes over.
	 */
	tc = tcase_create("sites_files");
	tcase_add_checked_fixture(tc, setup_sites, teardown);
	tcase_set_timeout(tc, 300);
	tcase_set_tags(tc, "sites");
	suite_add_tcase(s, tc);
	tcase_add_test(tc, test_oom_trace_write);
	tcase_add_test(tc, test_oom_replay);
	tcase_add_loop_test(tc, test_oom_show, 0, 3);
	tcase_add_test(tc, test_oom_record);
	tcase_add_loop_test(tc, test_oom_replay_sim, 0, 3);
	tcase_add_loop_test(tc, test_oom_merge, 0, 2);
	tcase_add_test(tc, test_oom_shrink);
	OOM_CASE("report");
	tcase_add_test(tc, test_oom_reports);
	tcase_add_test(tc, test_oom_swarm_report);
	tcase_add_test(tc, test_oom_windows);
	tcase_add_test(tc, test_oom_json_helpers);
#undef OOM_CASE
	return s;
}

int main(void)
{
	return tv_check_main(oom_suite());
}
