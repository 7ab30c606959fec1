/*
 * `tensorverbs swarm`: many seeds, each a generated scenario and fault
 * mix (swarm_gen.c), every invariant checked (docs/swarm.md).
 *
 * libfiu is process-global, so parallel runs are processes: J workers
 * are forked, worker j runs seeds first + j, first + j + J, ... in order
 * and sends one fixed-size record per seed up its pipe.  The parent
 * aggregates, shows progress, and at a violation waits until every
 * smaller seed is done, so the seed it reports is the smallest failing
 * one whatever the number of jobs.  Then it writes the scenario and a
 * trace of that seed (in a child: the run may crash) and prints the one
 * command that reproduces it.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tensorverbs/faults.h>

#include "cli.h"
#include "swarm.h"
#include "trace.h"

#define SWARM_MAX_JOBS 256
#define SWARM_SEED_WALL_S 120    /* a seed running longer is a hang */
#define SWARM_KEEP 16            /* failing seeds written with --keep-going */

static const char swarm_usage[] =
	"usage: tensorverbs swarm --seeds N [--jobs J] [--first S] [--out DIR]\n"
	"                         [--keep-going] [--without POINT,...]\n"
	"\n"
	"Swarm testing: seed S draws a scenario (2-5 nodes, 1-6 steps, tensors\n"
	"of every dtype up to 1 MiB, links, queue depths, orders, sender\n"
	"errors) and a fault mix (each fault kind on or off, its rate drawn),\n"
	"runs it with every invariant checked, for seeds S .. S+N-1.\n"
	"\n"
	"options:\n"
	"  --seeds N      how many seeds (required)\n"
	"  --first S      the first seed (default 1)\n"
	"  --jobs J       worker processes (default: the number of CPUs)\n"
	"  --out DIR      where a failing seed's scenario and trace go\n"
	"                 (default ./swarm-failures)\n"
	"  --keep-going   do not stop at the first violation\n"
	"  --without P[,P...]  never arm these fault points (tensorverbs faults)\n"
	"\n"
	"At a violation: writes DIR/seed-S.json and DIR/seed-S.jsonl, prints\n"
	"the command that reproduces it and exits 1.  Exit 0: no violation.\n"
	"TV_BREAK=no-ack-timeout breaks the engine on purpose (tests only).\n";

struct swarm_args {
	uint64_t seeds;
	uint64_t first;
	unsigned jobs;
	const char *out;
	bool keep_going;
	uint32_t breakage;
	uint32_t without;          /* points never armed (bit per point) */
};

/* One seed's result, as a worker sends it (well under PIPE_BUF). */
struct swarm_rec {
	uint64_t seed;
	uint32_t mask;             /* fault kinds on */
	uint32_t kinds;            /* failure kinds; 0: passed */
	uint32_t first;            /* kind of the first failure */
	uint32_t pad;
	uint64_t failures;
	uint64_t transfers;
	uint64_t events;
	uint64_t fires[RUN_MAX_POINTS];
	char msg[512];
};

struct worker {
	pid_t pid;
	int fd;
	uint64_t next;             /* the next seed it will report */
	bool eof;
	size_t got;                /* bytes of buf filled */
	struct swarm_rec buf;
};

struct swarm_stats {
	uint64_t done;
	uint64_t transfers;
	uint64_t events;
	uint64_t no_faults;
	uint64_t violations;
	uint64_t on[RUN_MAX_POINTS];
	uint64_t fires[RUN_MAX_POINTS];
	uint64_t bad[RUN_MAX_POINTS];
	uint64_t bad_no_faults;
	struct swarm_rec fail[SWARM_KEEP]; /* the smallest failing seeds */
	size_t nfail;
};

/* ---- one seed ------------------------------------------------------------ */

static int count_line(void *ctx, json_t *ev)
{
	(void)ctx;
	(void)ev;
	return 0;
}

int swarm_run_json(json_t *root, uint64_t seed, uint32_t breakage,
		   bool count_events, struct swarm_outcome *out_p)
{
	struct run_opts opts = { .seed = seed, .test_breakage = breakage };
	struct failures fails = { 0 };
	struct trace_rec rec;
	struct scenario *sc;
	char err[SC_ERR_MAX];
	int rc;

	memset(out_p, 0, sizeof(*out_p));
	rc = scenario_from_json(root, "swarm", &sc, err);
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		out_p->invalid = true;
		snprintf(out_p->first_msg, sizeof(out_p->first_msg),
			 "invalid scenario: %.480s", err);
		return 0;
	}
	if (count_events) {
		/* The very encoder traces use: the count is a trace's. */
		trace_rec_init(&rec, count_line, NULL);
		opts.rec = &rec;
	}
	rc = runner_run(sc, &opts, &fails, &out_p->res);
	if (count_events) {
		out_p->trace_events = rec.count;
		trace_rec_fini(&rec);
	}
	if (!rc) {
		out_p->failures = fails.count;
		out_p->kinds = fails.kinds;
		out_p->first = fails.first;
		out_p->transfers = sc->nrecvs;
		if (fails.count)
			snprintf(out_p->first_msg, sizeof(out_p->first_msg),
				 "%s", fails.msgs[0] ? fails.msgs[0] : "?");
	}
	failures_free(&fails);
	scenario_free(sc);
	return rc;
}

static void run_seed(const struct swarm_args *a, uint64_t seed,
		     struct swarm_rec *rec)
{
	struct swarm_outcome out;
	json_t *root;
	int rc;

	memset(rec, 0, sizeof(*rec));
	rec->seed = seed;
	rc = swarm_generate(seed, a->without, &root);
	if (!rc) {
		rec->mask = swarm_plan_mask(json_object_get(root, "faults"));
		rc = swarm_run_json(root, seed, a->breakage, false, &out);
		json_decref(root);
	}
	if (rc || out.invalid) {
		/* The generator must only make valid scenarios. */
		rec->kinds = 1u << FK_RUNNER;
		rec->first = FK_RUNNER;
		rec->failures = 1;
		snprintf(rec->msg, sizeof(rec->msg), "%s",
			 rc ? strerror(-rc) : out.first_msg);
		return;
	}
	rec->kinds = out.kinds;
	rec->first = out.first;
	rec->failures = out.failures;
	rec->transfers = out.transfers;
	rec->events = out.res.sim_events;
	memcpy(rec->fires, out.res.point_fires, sizeof(rec->fires));
	memcpy(rec->msg, out.first_msg, sizeof(rec->msg) - 1);
}

/* ---- workers ------------------------------------------------------------- */

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void worker_main(const struct swarm_args *a, unsigned j, int fd)
{
	struct swarm_rec rec;

	for (uint64_t s = a->first + j; s < a->first + a->seeds; s += a->jobs) {
		/* A seed that never ends is a hang: SIGALRM ends the worker. */
		alarm(SWARM_SEED_WALL_S);
		run_seed(a, s, &rec);
		alarm(0);
		if (write_all(fd, &rec, sizeof(rec)))
			_exit(3);
	}
	_exit(0);
}

static int spawn(const struct swarm_args *a, struct worker *w, unsigned n)
{
	for (unsigned j = 0; j < n; j++) {
		int fds[2];

		if (pipe(fds))
			return -errno;
		/* Nothing buffered may be written twice by the children. */
		fflush(stdout);
		fflush(stderr);
		w[j].pid = fork();
		if (w[j].pid < 0)
			return -errno;
		if (w[j].pid == 0) {
			close(fds[0]);
			for (unsigned k = 0; k < j; k++)
				close(w[k].fd);
			worker_main(a, j, fds[1]);
		}
		close(fds[1]);
		w[j].fd = fds[0];
		w[j].next = a->first + j;
	}
	return 0;
}

/* ---- the parent ---------------------------------------------------------- */

static void keep_failure(struct swarm_stats *st, const struct swarm_rec *r)
{
	size_t i = st->nfail;

	st->violations++;
	if (st->nfail < SWARM_KEEP)
		st->nfail++;
	else if (r->seed > st->fail[SWARM_KEEP - 1].seed)
		return;
	else
		i = SWARM_KEEP - 1;
	/* Sorted by seed: fail[0] is the smallest failing seed. */
	while (i > 0 && st->fail[i - 1].seed > r->seed) {
		st->fail[i] = st->fail[i - 1];
		i--;
	}
	st->fail[i] = *r;
}

static void account(struct swarm_stats *st, const struct swarm_rec *r,
		    size_t npoints)
{
	st->done++;
	st->transfers += r->transfers;
	st->events += r->events;
	if (!r->mask)
		st->no_faults++;
	for (size_t i = 0; i < npoints; i++) {
		if (!(r->mask & (1u << i)))
			continue;
		st->on[i]++;
		st->fires[i] += r->fires[i];
		if (r->kinds)
			st->bad[i]++;
	}
	if (r->kinds && !r->mask)
		st->bad_no_faults++;
	if (r->kinds)
		keep_failure(st, r);
}

/* The worker died before reporting seed w->next: a crash or a hang. */
static void worker_died(struct worker *w, const struct swarm_args *a,
			struct swarm_stats *st, size_t npoints)
{
	struct swarm_rec r = { .seed = w->next, .kinds = 1u << FK_CRASH,
			       .first = FK_CRASH, .failures = 1 };
	int status = 0;

	waitpid(w->pid, &status, 0);
	w->pid = 0;
	if (w->next >= a->first + a->seeds)
		return;
	if (WIFSIGNALED(status))
		snprintf(r.msg, sizeof(r.msg), "the run died of signal %d (%s)%s",
			 WTERMSIG(status), strsignal(WTERMSIG(status)),
			 WTERMSIG(status) == SIGALRM ?
			 ": it ran longer than the per-seed limit" : "");
	else
		snprintf(r.msg, sizeof(r.msg), "the worker exited with %d",
			 WEXITSTATUS(status));
	account(st, &r, npoints);
}

/* Read what the worker sent; whole records are accounted. */
static void drain(struct worker *w, const struct swarm_args *a,
		  struct swarm_stats *st, size_t npoints)
{
	char *buf = (char *)&w->buf;
	ssize_t n = read(w->fd, buf + w->got, sizeof(w->buf) - w->got);

	if (n < 0 && errno == EINTR)
		return;
	if (n <= 0) {
		w->eof = true;
		close(w->fd);
		worker_died(w, a, st, npoints);
		return;
	}
	w->got += (size_t)n;
	if (w->got < sizeof(w->buf))
		return;
	assert(w->buf.seed == w->next);
	account(st, &w->buf, npoints);
	w->next += a->jobs;
	w->got = 0;
}

/* Done when every worker ended, or passed the smallest failing seed. */
static bool finished(const struct worker *w, unsigned n,
		     const struct swarm_stats *st, bool keep_going)
{
	for (unsigned j = 0; j < n; j++) {
		if (w[j].eof)
			continue;
		if (keep_going || !st->nfail || w[j].next < st->fail[0].seed)
			return false;
	}
	return true;
}

static void progress(const struct swarm_args *a, const struct swarm_stats *st,
		     uint64_t t0, uint64_t *last, bool final)
{
	uint64_t now = runner_wall_ns();
	bool tty = isatty(STDERR_FILENO);
	double min = (double)(now - t0) / 60e9;

	/* A line every second on a terminal, every 10 s in a log. */
	if (!final && now - *last < (tty ? 1000000000ull : 10000000000ull))
		return;
	*last = now;
	fflush(stdout);
	fprintf(stderr, "%sswarm: %" PRIu64 "/%" PRIu64 " seeds, %.0f seeds/min, %"
		PRIu64 " violations%s", tty ? "\r" : "", st->done, a->seeds,
		min > 0 ? (double)st->done / min : 0.0, st->violations,
		tty && !final ? "" : "\n");
}

static int collect(const struct swarm_args *a, struct worker *w,
		   struct swarm_stats *st, size_t npoints)
{
	struct pollfd pfd[SWARM_MAX_JOBS];
	uint64_t t0 = runner_wall_ns(), last = t0;

	while (!finished(w, a->jobs, st, a->keep_going)) {
		unsigned n = 0;

		for (unsigned j = 0; j < a->jobs; j++)
			if (!w[j].eof)
				pfd[n++] = (struct pollfd){ .fd = w[j].fd,
							    .events = POLLIN };
		if (poll(pfd, n, 1000) < 0 && errno != EINTR)
			return -errno;
		for (unsigned j = 0, k = 0; j < a->jobs; j++) {
			if (w[j].eof)
				continue;
			if (pfd[k++].revents)
				drain(&w[j], a, st, npoints);
		}
		progress(a, st, t0, &last, false);
	}
	progress(a, st, t0, &last, true);
	return 0;
}

/* Workers still running after the answer is known: ours to stop. */
static void stop_workers(struct worker *w, unsigned n)
{
	for (unsigned j = 0; j < n; j++) {
		if (!w[j].pid)
			continue;
		kill(w[j].pid, SIGTERM);
		waitpid(w[j].pid, NULL, 0);
		if (!w[j].eof)
			close(w[j].fd);
	}
}

/* ---- reporting ----------------------------------------------------------- */

static void summary(const struct swarm_args *a, const struct swarm_stats *st,
		    double secs)
{
	const struct tv_flt_point_info *pts;
	size_t n;

	pts = tv_flt_points(&n);
	printf("%-30s %9s %12s %11s\n", "fault kind", "seeds on", "fires",
	       "violations");
	for (size_t i = 0; i < n && i < RUN_MAX_POINTS; i++) {
		if (a->without & (1u << i))
			printf("%-30s %9s\n", pts[i].name, "--without");
		else
			printf("%-30s %9" PRIu64 " %12" PRIu64 " %11" PRIu64 "\n",
			       pts[i].name, st->on[i], st->fires[i], st->bad[i]);
	}
	printf("%-30s %9" PRIu64 " %12s %11" PRIu64 "\n", "(no faults at all)",
	       st->no_faults, "-", st->bad_no_faults);
	printf("swarm: %" PRIu64 " seeds (%" PRIu64 "..%" PRIu64 "), %" PRIu64
	       " transfers, %" PRIu64 " sim events, %u jobs, %.1f s: %.0f seeds/min; %"
	       PRIu64 " violations\n", st->done, a->first,
	       a->first + a->seeds - 1, st->transfers, st->events, a->jobs,
	       secs, secs > 0 ? (double)st->done * 60.0 / secs : 0.0,
	       st->violations);
}

static void print_repro(const char *argv0, const struct swarm_args *a,
			const char *file, uint64_t seed)
{
	printf("reproduce: ");
	if (a->breakage)
		printf("TV_BREAK=%s ", runner_breakage_name(a->breakage));
	cli_put_shell_word(stdout, argv0);
	printf(" run ");
	cli_put_shell_word(stdout, file);
	printf(" --seed %" PRIu64 "\n", seed);
}

/*
 * Record the failing seed again, in a child (it may crash), through the
 * very `run` the reproduce command uses; its exit status says whether the
 * failure came back in a fresh process.
 */
static int record_trace(const char *argv0, const char *file,
			const char *trace, uint64_t seed)
{
	char seed_s[32];
	pid_t pid;
	int status;

	snprintf(seed_s, sizeof(seed_s), "%" PRIu64, seed);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char *argv[] = { "run", (char *)file, "--seed", seed_s,
				 "--quiet", "--trace", (char *)trace, NULL };

		/* Quiet: the report says it all; the exit status matters. */
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		_exit(cli_run(7, argv, argv0));
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int write_failure(const char *argv0, const struct swarm_args *a,
			 const struct swarm_rec *r)
{
	char file[4096], trace[4096];
	json_t *root;
	int rc;

	if (mkdir(a->out, 0777) && errno != EEXIST) {
		fprintf(stderr, "tensorverbs swarm: cannot create %s: %s\n",
			a->out, strerror(errno));
		return -errno;
	}
	snprintf(file, sizeof(file), "%s/seed-%" PRIu64 ".json", a->out, r->seed);
	snprintf(trace, sizeof(trace), "%s/seed-%" PRIu64 ".jsonl", a->out,
		 r->seed);
	rc = swarm_generate(r->seed, a->without, &root);
	if (rc)
		return rc;
	rc = json_dump_file(root, file, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (rc) {
		fprintf(stderr, "tensorverbs swarm: cannot write %s\n", file);
		return -EIO;
	}
	printf("FAIL seed %" PRIu64 ": [%s] %s\n", r->seed,
	       fail_kind_name((enum fail_kind)r->first), r->msg);
	printf("  %" PRIu64 " failures; scenario and fault plan: %s\n",
	       r->failures, file);
	rc = record_trace(argv0, file, trace, r->seed);
	if (rc == CLI_EXIT_FAIL)
		printf("  trace: %s\n", trace);
	else
		printf("  NOT REPRODUCED in a fresh process (run exit %d): the run is not deterministic; trace: %s\n",
		       rc, trace);
	print_repro(argv0, a, file, r->seed);
	return 0;
}

/* ---- the command --------------------------------------------------------- */

/* "vf/write/dup,sim/deliver/delay" -> bits of tv_flt_points(). */
static int parse_without(const char *list, uint32_t *bits_p)
{
	const struct tv_flt_point_info *pts;
	char *copy = strdup(list), *p, *save = NULL;
	size_t n;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	pts = tv_flt_points(&n);
	for (p = strtok_r(copy, ",", &save); p && !rc;
	     p = strtok_r(NULL, ",", &save)) {
		const struct tv_flt_point_info *pt = tv_flt_point_find(p);

		if (!pt) {
			fprintf(stderr, "tensorverbs swarm: unknown fault point '%s' (see: tensorverbs faults)\n",
				p);
			rc = -EINVAL;
		} else {
			*bits_p |= 1u << (pt - pts);
		}
	}
	free(copy);
	return rc;
}

static int parse_swarm_args(int argc, char **argv, struct swarm_args *a)
{
	static const struct option opts[] = {
		{ "seeds", required_argument, NULL, 'n' },
		{ "first", required_argument, NULL, 'f' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "out", required_argument, NULL, 'o' },
		{ "keep-going", no_argument, NULL, 'k' },
		{ "without", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t jobs = 0;
	int c;

	a->first = 1;
	a->out = "swarm-failures";
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *bad = NULL;

		switch (c) {
		case 'n': bad = cli_parse_u64(optarg, &a->seeds) ? "--seeds" : NULL; break;
		case 'f': bad = cli_parse_u64(optarg, &a->first) ? "--first" : NULL; break;
		case 'j': bad = cli_parse_u64(optarg, &jobs) ? "--jobs" : NULL; break;
		case 'o': a->out = optarg; break;
		case 'k': a->keep_going = true; break;
		case 'w':
			if (parse_without(optarg, &a->without))
				return -EINVAL;
			break;
		case 'h': fputs(swarm_usage, stdout); return 1;
		default: fputs(swarm_usage, stderr); return -EINVAL;
		}
		if (bad) {
			fprintf(stderr, "tensorverbs swarm: bad %s '%s'\n", bad,
				optarg);
			return -EINVAL;
		}
	}
	if (optind != argc || !a->seeds || a->first > INT64_MAX - a->seeds ||
	    jobs > SWARM_MAX_JOBS) {
		fputs(swarm_usage, stderr);
		return -EINVAL;
	}
	if (!jobs)
		jobs = (uint64_t)sysconf(_SC_NPROCESSORS_ONLN);
	a->jobs = (unsigned)(jobs < 1 ? 1 : jobs > a->seeds ? a->seeds : jobs);
	if (runner_breakage_from_env(&a->breakage)) {
		fprintf(stderr, "tensorverbs swarm: bad TV_BREAK (known: no-ack-timeout)\n");
		return -EINVAL;
	}
	return 0;
}

int cli_swarm(int argc, char **argv, const char *argv0)
{
	struct swarm_args a = { 0 };
	struct worker w[SWARM_MAX_JOBS] = { 0 };
	struct swarm_stats *st = calloc(1, sizeof(*st));
	uint64_t t0 = runner_wall_ns();
	size_t npoints;
	int rc, exit_code = CLI_EXIT_USAGE;

	if (!st)
		return CLI_EXIT_USAGE;
	rc = parse_swarm_args(argc, argv, &a);
	if (rc) {
		exit_code = rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
		goto out;
	}
	tv_flt_points(&npoints);
	assert(npoints <= RUN_MAX_POINTS);
	rc = spawn(&a, w, a.jobs);
	if (!rc)
		rc = collect(&a, w, st, npoints);
	stop_workers(w, a.jobs);
	if (rc) {
		fprintf(stderr, "tensorverbs swarm: %s\n", strerror(-rc));
		goto out;
	}
	summary(&a, st, (double)(runner_wall_ns() - t0) / 1e9);
	for (size_t i = 0; i < st->nfail && (i == 0 || a.keep_going); i++)
		write_failure(argv0, &a, &st->fail[i]);
	exit_code = st->violations ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
	free(st);
	return exit_code;
}
