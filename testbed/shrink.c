/*
 * Shrinking (docs/swarm.md): reduce a failing scenario (with its fault
 * plan) or trace while it still fails the same way.
 *
 * Greedy, deterministic delta debugging over the scenario's JSON: each
 * kind of edit of the scenario's workload (workload.h: its edit table, the
 * plan's edits among them) is tried at every place it applies, in the
 * table's order; an edit is kept when the edited scenario still fails with
 * the target kind of violation (the kind of the original's first
 * failure).  Passes repeat until none keeps anything.  Every candidate
 * runs in a child process: a crash or a hang is an outcome, not the end
 * of the shrinker.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tb_int.h"

#define SHRINK_RUN_WALL_S 120

struct shrink {
	const struct tv_tb_workload_ops *ops;
	uint64_t max_runs;          /* budget: stop reducing after this many */
	uint64_t seed;
	const char *breakage;       /* TV_BREAK, or NULL */
	char breakage_buf[32];
	enum tv_tb_fail_kind kind;  /* the violation that must stay */
	uint64_t runs;
};

/* What a child reports of one candidate (well under PIPE_BUF). */
struct shrink_res {
	uint32_t invalid;
	uint32_t kinds;
	uint32_t first;
	uint32_t pad;
	uint64_t failures;
	uint64_t sim_events;
	uint64_t trace_events;
	struct tv_tb_shrink_state st;
	char msg[512];
};

/* ---- running a candidate ---------------------------------------------- */

static void child_run(json_t *sc, const struct shrink *s, int fd)
{
	struct tb_outcome out;
	struct shrink_res r = { 0 };

	alarm(SHRINK_RUN_WALL_S);
	if (tb_run_json(sc, s->seed, s->breakage, true, &out)) {
		r.kinds = 1u << TV_TB_FK_RUNNER;
		r.first = TV_TB_FK_RUNNER;
	} else {
		r.invalid = out.invalid;
		r.kinds = out.kinds;
		r.first = out.first;
		r.failures = out.failures;
		r.st.ops = out.ops;
		r.sim_events = out.res.sim_events;
		r.trace_events = out.trace_events;
		memcpy(r.st.fires, out.res.point_fires, sizeof(r.st.fires));
		memcpy(r.st.first_hit, out.res.point_first_hit,
		       sizeof(r.st.first_hit));
		memcpy(r.st.last_hit, out.res.point_last_hit,
		       sizeof(r.st.last_hit));
		memcpy(r.msg, out.first_msg, sizeof(r.msg) - 1);
	}
	tv_tb_child_exit(write(fd, &r, sizeof(r)) == sizeof(r) ? 0 : 3);
}

static int run_candidate(json_t *sc, struct shrink *s, struct shrink_res *r_p)
{
	struct shrink_res r = { 0 };
	int fds[2], status = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(fds))
		return -errno;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid == 0) {
		close(fds[0]);
		child_run(sc, s, fds[1]);
	}
	close(fds[1]);
	n = read(fds[0], &r, sizeof(r));
	close(fds[0]);
	waitpid(pid, &status, 0);
	s->runs++;
	if (n != (ssize_t)sizeof(r)) {
		/* It died: a crash (or a hang the alarm ended) is a result. */
		memset(&r, 0, sizeof(r));
		r.kinds = 1u << TV_TB_FK_CRASH;
		r.first = TV_TB_FK_CRASH;
		r.failures = 1;
		snprintf(r.msg, sizeof(r.msg), "the run died (status 0x%x)",
			 status);
	}
	*r_p = r;
	return 0;
}

static bool still_fails(json_t *sc, struct shrink *s, struct shrink_res *r_p)
{
	struct shrink_res r;

	if (run_candidate(sc, s, &r) || r.invalid)
		return false;
	if (!(r.kinds & (1u << s->kind)))
		return false;
	*r_p = r;
	return true;
}

/* ---- the greedy loop ------------------------------------------------------ */

/* One kind of edit at every place; returns how many were kept. */
static int shrink_pass(json_t **cur, struct shrink *s,
		       const struct tv_tb_shrink_edit *edit,
		       struct shrink_res *best)
{
	int kept = 0;

	for (size_t i = 0;;) {
		json_t *cand = json_deep_copy(*cur);
		struct shrink_res r;
		int rc;

		if (!cand)
			return -ENOMEM;
		if (s->runs >= s->max_runs) {
			json_decref(cand);
			return kept;
		}
		rc = edit->fn(cand, i, &best->st);
		if (rc == -ENOENT) {
			json_decref(cand);
			return kept;
		}
		/* Kept: place i again (the next element, or more of it). */
		if (!rc && !json_equal(cand, *cur) && still_fails(cand, s, &r)) {
			json_decref(*cur);
			*cur = cand;
			*best = r;
			kept++;
			continue;
		}
		json_decref(cand);
		i++;
	}
}

static int shrink_loop(json_t **cur, struct shrink *s, struct shrink_res *best)
{
	int kept;

	do {
		kept = 0;
		for (size_t e = 0; e < s->ops->nedits; e++) {
			int n = shrink_pass(cur, s, s->ops->edits[e], best);

			if (n < 0)
				return n;
			kept += n;
		}
	} while (kept && s->runs < s->max_runs);
	return 0;
}

/* ---- input and output ----------------------------------------------------- */

/* A trace: its scenario with its plan as "faults", its seed, breakage. */
static int load_trace(const char *path, json_t **sc_p, struct shrink *s,
		      bool has_seed, char *err, size_t cap)
{
	struct tb_trace_reader rd;
	struct tb_trace_header h;
	char terr[TB_TRACE_ERR_MAX];
	json_t *hdr, *sc;
	int rc;

	rc = tb_trace_reader_open(path, &rd);
	if (!rc) {
		rc = tb_trace_read_header(&rd, &hdr, &h, terr);
		tb_trace_reader_close(&rd);
	}
	if (rc) {
		/* terr names the file already. */
		if (rc == -EINVAL)
			snprintf(err, cap, "%s", terr);
		else
			snprintf(err, cap, "%s: %s", path, strerror(-rc));
		return rc;
	}
	sc = json_deep_copy(h.scenario);
	if (sc && json_is_array(h.plan))
		json_object_set(sc, "faults", h.plan);
	else if (sc)
		json_object_del(sc, "faults");
	if (!has_seed)
		s->seed = h.seed;
	if (h.breakage) {
		snprintf(s->breakage_buf, sizeof(s->breakage_buf), "%s",
			 h.breakage);
		s->breakage = s->breakage_buf;
	}
	json_decref(hdr);
	if (!sc)
		return -ENOMEM;
	*sc_p = sc;
	return 0;
}

static bool is_trace(const char *path)
{
	FILE *f = fopen(path, "r");
	char head[64] = "";
	size_t n;

	if (!f)
		return false;
	n = fread(head, 1, sizeof(head) - 1, f);
	fclose(f);
	head[n] = '\0';
	return strstr(head, "\"tensorverbs_trace\"") != NULL;
}

static int load_input(const char *path, json_t **sc_p, struct shrink *s,
		      bool has_seed, char *err, size_t cap)
{
	json_error_t jerr;
	json_t *sc, *seed;

	if (is_trace(path))
		return load_trace(path, sc_p, s, has_seed, err, cap);
	sc = json_load_file(path, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
			    &jerr);
	if (!json_is_object(sc)) {
		/* Valid JSON that is no object has no line (jerr.line is -1). */
		int rc = sc ? -EINVAL : tb_json_load_errno(&jerr);

		if (sc)
			snprintf(err, cap, "%s: not a JSON object", path);
		else if (rc == -ENOMEM)
			snprintf(err, cap, "%s: %s", path, strerror(ENOMEM));
		else
			snprintf(err, cap, "%s:%d: %s", path, jerr.line,
				 jerr.text);
		json_decref(sc);
		return rc;
	}
	seed = json_object_get(sc, "seed");
	if (!has_seed)
		s->seed = json_is_integer(seed) ?
			  (uint64_t)json_integer_value(seed) : 1;
	*sc_p = sc;
	return 0;
}

/* Which workload's edits: the one the scenario names. */
static int find_workload(json_t *sc, struct shrink *s, char *err, size_t cap)
{
	json_t *w = json_object_get(sc, "workload");

	s->ops = !w ? tv_tb_workload_default() :
		 json_is_string(w) ? tv_tb_workload_find(json_string_value(w)) :
				     NULL;
	if (!s->ops) {
		snprintf(err, cap, "invalid scenario: $.workload: unknown workload");
		return -EINVAL;
	}
	if (!s->ops->nedits) {
		snprintf(err, cap, "workload %s has no shrink edits",
			 s->ops->name);
		return -EINVAL;
	}
	return 0;
}

static void describe(const struct shrink *s, json_t *sc,
		     const struct shrink_res *r, char *buf, size_t cap)
{
	char wl[128] = "";
	int n;

	if (s->ops->describe)
		s->ops->describe(sc, r->st.ops, wl, sizeof(wl));
	else
		snprintf(wl, sizeof(wl), "%" PRIu64 " %s", r->st.ops,
			 s->ops->unit);
	n = snprintf(buf, cap, "%s, %" PRId64 " nodes, %zu fault rules, %" PRIu64
		     " sim events, %" PRIu64 " trace events", wl,
		     (int64_t)json_integer_value(json_object_get(sc, "nodes")),
		     json_array_size(json_object_get(sc, "faults")),
		     r->sim_events, r->trace_events);
	(void)n;
}

static int write_min(json_t *sc, const char *out, const struct shrink *s,
		     char *err, size_t cap)
{
	int e;

	/* The seed goes in: `run MIN.json` alone reproduces it. */
	if (json_object_set_new(sc, "seed", json_integer((json_int_t)s->seed))) {
		snprintf(err, cap, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	errno = 0;
	if (!json_dump_file(sc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER))
		return 0;
	/* jansson leaves errno from the write or the allocation that failed. */
	e = errno ? errno : EIO;
	snprintf(err, cap, "cannot write %s: %s", out, strerror(e));
	return -e;
}

/* The original must fail, with the kind asked for if one was. */
static int check_original(json_t *sc, struct shrink *s, bool has_kind,
			  struct shrink_res *r_p, char *err, size_t cap)
{
	int rc = run_candidate(sc, s, r_p);

	if (rc)
		return rc;
	if (r_p->invalid) {
		snprintf(err, cap, "invalid scenario: %s", r_p->msg);
		return -EINVAL;
	}
	if (!r_p->kinds) {
		snprintf(err, cap, "it does not fail with seed %" PRIu64 "%s: nothing to shrink",
			 s->seed, s->breakage ? "" :
			 " (TV_BREAK unset: was it a broken-engine run?)");
		return -EINVAL;
	}
	if (has_kind && !(r_p->kinds & (1u << s->kind))) {
		snprintf(err, cap, "it does not fail with [%s]",
			 tv_tb_fail_kind_name(s->kind));
		return -EINVAL;
	}
	if (!has_kind)
		s->kind = (enum tv_tb_fail_kind)r_p->first;
	return 0;
}

static void fill_report(const struct shrink *s, json_t *sc,
			const struct shrink_res *first,
			const struct shrink_res *best, uint64_t t0,
			struct tv_tb_shrink_report *rep)
{
	describe(s, sc, best, rep->after, sizeof(rep->after));
	snprintf(rep->first_msg, sizeof(rep->first_msg), "%s", first->msg);
	snprintf(rep->msg, sizeof(rep->msg), "%s", best->msg);
	snprintf(rep->breakage, sizeof(rep->breakage), "%s",
		 s->breakage ? s->breakage : "");
	rep->kind = s->kind;
	rep->seed = s->seed;
	rep->runs = s->runs;
	rep->budget_reached = s->runs >= s->max_runs;
	rep->ops = best->st.ops;
	rep->sim_events = best->sim_events;
	rep->unit = s->ops->unit;
	rep->secs = (double)(tb_wall_ns() - t0) / 1e9;
}

int tv_tb_shrink(const char *in, const char *out,
		 const struct tv_tb_shrink_opts *opts,
		 struct tv_tb_shrink_report *rep_p, char *err,
		 size_t err_bytes)
{
	struct shrink s = {
		.max_runs = opts->max_runs ? opts->max_runs : 10000,
		.seed = opts->has_seed ? opts->seed : 1,
		.breakage = opts->breakage, .kind = opts->kind,
	};
	struct tv_tb_shrink_report rep = { 0 };
	struct shrink_res first, best;
	uint64_t t0 = tb_wall_ns();
	json_t *sc = NULL;
	int rc;

	err[0] = '\0';
	rc = load_input(in, &sc, &s, opts->has_seed, err, err_bytes);
	if (!rc)
		rc = find_workload(sc, &s, err, err_bytes);
	if (!rc)
		rc = check_original(sc, &s, opts->has_kind, &first, err,
				    err_bytes);
	if (rc)
		goto out;
	describe(&s, sc, &first, rep.before, sizeof(rep.before));
	best = first;
	rc = shrink_loop(&sc, &s, &best);
	if (!rc)
		rc = write_min(sc, out, &s, err, err_bytes);
	if (!rc) {
		fill_report(&s, sc, &first, &best, t0, &rep);
		*rep_p = rep;
	}
out:
	if (rc && !err[0])
		snprintf(err, err_bytes, "%s", strerror(-rc));
	json_decref(sc);
	return rc;
}
