/*
 * Swarm testing (docs/swarm.md): many seeds, each a generated scenario of
 * a workload and a fault mix, every invariant checked.
 *
 * libfiu is process-global, so parallel runs are processes: J workers
 * are forked, worker j runs seeds first + j, first + j + J, ... in order
 * and sends one fixed-size record per seed up its pipe.  The parent
 * aggregates, shows progress, and at a violation waits until every
 * smaller seed is done, so the seed it reports is the smallest failing
 * one whatever the number of jobs.  Then it writes the scenario and a
 * trace of that seed (in a child: the run may crash) and says whether
 * the failure came back in a fresh process.
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
#include <tensorverbs/sim.h>

#include "tb_int.h"

#define SWARM_MAX_JOBS 256
#define SWARM_SEED_WALL_S 120    /* a seed running longer is a hang */
#define SWARM_KEEP TV_TB_SWARM_KEEP /* failing seeds kept (written with keep_going) */

/* One seed's result, as a worker sends it (well under PIPE_BUF). */
struct swarm_rec {
	uint64_t seed;
	uint32_t mask;             /* fault kinds on */
	uint32_t kinds;            /* failure kinds; 0: passed */
	uint32_t first;            /* kind of the first failure */
	uint32_t validated;        /* the workload checked data in flight */
	uint64_t failures;
	uint64_t corrupt[3];       /* fired, detected, undetected */
	uint64_t ops;
	uint64_t events;
	uint64_t fires[TV_TB_MAX_POINTS];
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
	uint64_t ops;
	uint64_t events;
	uint64_t no_faults;
	uint64_t violations;
	uint64_t on[TV_TB_MAX_POINTS];
	uint64_t fires[TV_TB_MAX_POINTS];
	uint64_t bad[TV_TB_MAX_POINTS];
	uint64_t bad_no_faults;
	uint64_t corrupt[2][TV_TB_CORRUPT_N];
	struct swarm_rec fail[SWARM_KEEP]; /* the smallest failing seeds */
	size_t nfail;
};

/* ---- one seed ------------------------------------------------------------ */

/* Workloads a swarm draws from: those with a generator (or the one asked). */
static size_t generators(const char *only,
			 const struct tv_tb_workload_ops **out, size_t cap)
{
	const struct tv_tb_workload_ops *const *w;
	size_t n, k = 0;

	w = tv_tb_workloads(&n);
	for (size_t i = 0; i < n && k < cap; i++)
		if (w[i]->generate && (!only || !strcmp(only, w[i]->name)))
			out[k++] = w[i];
	return k;
}

int tv_tb_swarm_generate(uint64_t seed, uint32_t without, const char *workload,
			 json_t **sc_p)
{
	const struct tv_tb_workload_ops *gens[16];
	size_t n = generators(workload, gens, TB_ARRAY_SIZE(gens)), pick = 0;
	struct tv_prng p;

	if (!n)
		return -ENOENT;
	/*
	 * The workload comes from a stream of its own: a workload's scenarios
	 * stay what they are when others join the swarm's mix.
	 */
	if (n > 1) {
		tv_prng_init(&p, seed ^ 0x776f726b6c6f6164ull);
		pick = tv_prng_below(&p, n);
	}
	return gens[pick]->generate(seed, without, sc_p);
}

static void run_seed(const struct tv_tb_swarm_opts *a, uint64_t seed,
		     struct swarm_rec *rec)
{
	struct tb_outcome out;
	json_t *root;
	int rc;

	memset(rec, 0, sizeof(*rec));
	rec->seed = seed;
	rc = tv_tb_swarm_generate(seed, a->without, a->workload, &root);
	if (!rc) {
		rec->mask = tb_plan_mask(json_object_get(root, "faults"));
		rc = tb_run_json(root, seed, a->breakage, false, &out);
		json_decref(root);
	}
	if (rc || out.invalid) {
		/* The generator must only make valid scenarios. */
		rec->kinds = 1u << TV_TB_FK_RUNNER;
		rec->first = TV_TB_FK_RUNNER;
		rec->failures = 1;
		snprintf(rec->msg, sizeof(rec->msg), "%s",
			 rc ? strerror(-rc) : out.first_msg);
		return;
	}
	rec->kinds = out.kinds;
	rec->first = out.first;
	rec->failures = out.failures;
	rec->ops = out.ops;
	rec->events = out.res.sim_events;
	memcpy(rec->fires, out.res.point_fires, sizeof(rec->fires));
	memcpy(rec->msg, out.first_msg, sizeof(rec->msg) - 1);
	rec->validated = out.res.validated;
	rec->corrupt[0] = out.res.corrupt_fires;
	rec->corrupt[1] = out.res.corrupt_detected;
	rec->corrupt[2] = out.res.corrupt_undetected;
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

/* The signals a worker must take with their default actions. */
static void stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGALRM);
	sigaddset(set, SIGTERM);
}

static void worker_main(const struct tv_tb_swarm_opts *a, unsigned j, int fd)
{
	struct swarm_rec rec;
	sigset_t stop;

	/*
	 * The default actions, whatever the embedding program installed:
	 * SIGALRM must end a hung worker, and the SIGTERM that ends a worker
	 * no longer needed must end only it (Check's handler, inherited,
	 * killed the test's whole process group).
	 */
	signal(SIGALRM, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	/* spawn() held them back: one sent before now is taken now. */
	stop_signals(&stop);
	sigprocmask(SIG_UNBLOCK, &stop, NULL);

	for (uint64_t s = a->first + j; s < a->first + a->seeds; s += a->jobs) {
		/* A seed that never ends is a hang: SIGALRM ends the worker. */
		alarm(SWARM_SEED_WALL_S);
		run_seed(a, s, &rec);
		alarm(0);
		if (write_all(fd, &rec, sizeof(rec)))
			tv_tb_child_exit(3);
	}
	tv_tb_child_exit(0);
}

static int spawn(const struct tv_tb_swarm_opts *a, struct worker *w,
		 unsigned n)
{
	sigset_t stop, old;

	stop_signals(&stop);
	for (unsigned j = 0; j < n; j++) {
		int fds[2], err;

		if (pipe(fds))
			return -errno;
		/* Nothing buffered may be written twice by the children. */
		fflush(stdout);
		fflush(stderr);
		/*
		 * A worker stopped at once (the next one could not be made)
		 * must not run the SIGTERM handler it inherited before it
		 * reset it: that one is the embedding program's (Check's
		 * ended the test's whole process group).
		 */
		sigprocmask(SIG_BLOCK, &stop, &old);
		w[j].pid = fork();
		err = errno;
		if (w[j].pid == 0) {
			close(fds[0]);
			for (unsigned k = 0; k < j; k++)
				close(w[k].fd);
			worker_main(a, j, fds[1]);
		}
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (w[j].pid < 0) {
			/*
			 * No worker: stop_workers() must not kill(-1) (every
			 * process we may signal) nor close w[j].fd (fd 0).
			 */
			w[j].pid = 0;
			close(fds[0]);
			close(fds[1]);
			return -err;
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
	st->ops += r->ops;
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
	if (r->corrupt[0]) {
		uint64_t *c = st->corrupt[r->validated ? 1 : 0];

		c[TV_TB_CORRUPT_SEEDS]++;
		c[TV_TB_CORRUPT_FIRED] += r->corrupt[0];
		c[TV_TB_CORRUPT_DETECTED] += r->corrupt[1];
		c[TV_TB_CORRUPT_UNDETECTED] += r->corrupt[2];
	}
	if (r->kinds)
		keep_failure(st, r);
}

/* The worker died before reporting seed w->next: a crash or a hang. */
static void worker_died(struct worker *w, const struct tv_tb_swarm_opts *a,
			struct swarm_stats *st, size_t npoints)
{
	struct swarm_rec r = { .seed = w->next, .kinds = 1u << TV_TB_FK_CRASH,
			       .first = TV_TB_FK_CRASH, .failures = 1 };
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
static void drain(struct worker *w, const struct tv_tb_swarm_opts *a,
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

static void progress(const struct tv_tb_swarm_opts *a,
		     const struct swarm_stats *st, uint64_t t0, uint64_t *last,
		     bool final)
{
	uint64_t now = tb_wall_ns();
	bool tty;
	double min = (double)(now - t0) / 60e9;

	double rate = min > 0 ? (double)st->done / min : 0.0;
	double left_s = rate > 0 ? (double)(a->seeds - st->done) / rate * 60 : 0;

	if (!a->progress)
		return;
	/* On a terminal, a line redrawn every second; in a log, nothing
	 * (the summary says it all). */
	tty = isatty(fileno(a->progress));
	if (!tty || (!final && now - *last < 1000000000ull))
		return;
	*last = now;
	fflush(stdout);
	fprintf(a->progress, "\rswarm: %" PRIu64 "/%" PRIu64 " seeds, %.0f "
		"seeds/min, %" PRIu64 " violations, %.0f s left ", st->done,
		a->seeds, rate, st->violations, final ? 0.0 : left_s);
	if (final)
		fputc('\n', a->progress);
}

static int collect(const struct tv_tb_swarm_opts *a, struct worker *w,
		   struct swarm_stats *st, size_t npoints)
{
	struct pollfd pfd[SWARM_MAX_JOBS];
	uint64_t t0 = tb_wall_ns(), last = t0;

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

/* ---- a failing seed, written and run again -------------------------------- */

/* In the child: the very run `run FILE --seed S --trace T` makes. */
static int rerun_child(const char *file, const char *trace, uint64_t seed,
		       const char *breakage)
{
	struct tv_tb_run_opts opts = { .seed = seed, .breakage = breakage };
	struct tv_tb_scenario *sc;
	struct tv_tb_trace *t;
	struct tv_tb_run *run = NULL;
	char err[TV_TB_ERR_MAX];
	int rc, status = 2;

	if (tv_tb_scenario_load_file(file, &sc, err))
		return 2;
	if (tv_tb_trace_create(trace, sc, file, seed, breakage, &t))
		goto out;
	opts.trace = t;
	rc = tv_tb_run(sc, &opts, &run);
	if (tv_tb_trace_finish(t, rc ? NULL : run) == 0 && !rc)
		status = tv_tb_run_result(run)->failures ? 1 : 0;
	tv_tb_run_free(run);
out:
	tv_tb_scenario_free(sc);
	return status;
}

/*
 * Record the failing seed again, in a child (it may crash); its exit
 * status says whether the failure came back in a fresh process (1).
 */
static int record_trace(const char *file, const char *trace, uint64_t seed,
			const char *breakage)
{
	pid_t pid;
	int status;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		tv_tb_child_exit(rerun_child(file, trace, seed, breakage));
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int write_failure(const struct tv_tb_swarm_opts *a,
			 const struct swarm_rec *r,
			 struct tv_tb_swarm_failure *f)
{
	json_t *root;
	int rc;

	if (mkdir(a->out_dir, 0777) && errno != EEXIST)
		return -errno;
	snprintf(f->file, sizeof(f->file), "%s/seed-%" PRIu64 ".json",
		 a->out_dir, r->seed);
	snprintf(f->trace, sizeof(f->trace), "%s/seed-%" PRIu64 ".jsonl",
		 a->out_dir, r->seed);
	rc = tv_tb_swarm_generate(r->seed, a->without, a->workload, &root);
	if (rc)
		return rc;
	rc = json_dump_file(root, f->file, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (rc)
		return -EIO;
	f->rerun_status = record_trace(f->file, f->trace, r->seed,
				       a->breakage);
	f->written = true;
	return 0;
}

static void report_of(const struct swarm_stats *st,
		      struct tv_tb_swarm_report *rep)
{
	rep->done = st->done;
	rep->ops = st->ops;
	rep->events = st->events;
	rep->no_faults = st->no_faults;
	rep->bad_no_faults = st->bad_no_faults;
	rep->violations = st->violations;
	memcpy(rep->on, st->on, sizeof(rep->on));
	memcpy(rep->fires, st->fires, sizeof(rep->fires));
	memcpy(rep->bad, st->bad, sizeof(rep->bad));
	memcpy(rep->corrupt, st->corrupt, sizeof(rep->corrupt));
	rep->nfail = st->nfail;
	for (size_t i = 0; i < st->nfail; i++) {
		rep->fail[i].seed = st->fail[i].seed;
		rep->fail[i].first = (enum tv_tb_fail_kind)st->fail[i].first;
		rep->fail[i].failures = st->fail[i].failures;
		memcpy(rep->fail[i].msg, st->fail[i].msg, sizeof(rep->fail[i].msg));
	}
}

/* ---- the swarm ------------------------------------------------------------ */

int tv_tb_swarm_points(const char *list, uint32_t *bits_p, char *err,
		       size_t err_bytes)
{
	const struct tv_flt_point_info *pts;
	char *copy = strdup(list), *p, *save = NULL;
	uint32_t bits = 0;
	size_t n;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	pts = tv_flt_points(&n);
	for (p = strtok_r(copy, ",", &save); p && !rc;
	     p = strtok_r(NULL, ",", &save)) {
		const struct tv_flt_point_info *pt = tv_flt_point_find(p);

		if (!pt) {
			snprintf(err, err_bytes,
				 "unknown fault point '%s' (see: tensorverbs faults)",
				 p);
			rc = -EINVAL;
		} else {
			bits |= 1u << (pt - pts);
		}
	}
	free(copy);
	if (!rc)
		*bits_p |= bits;
	return rc;
}

/* This process's share of the seeds (all of them without MPI). */
int tb_swarm_local(const struct tv_tb_swarm_opts *opts,
		   struct tv_tb_swarm_report *rep_p)
{
	struct worker w[SWARM_MAX_JOBS] = { 0 };
	struct tv_tb_swarm_report *rep;
	struct swarm_stats *st;
	const struct tv_tb_workload_ops *gens[1];
	uint64_t t0 = tb_wall_ns();
	size_t npoints;
	int rc;

	if (!opts->seeds || !opts->jobs || opts->jobs > SWARM_MAX_JOBS ||
	    opts->first > INT64_MAX - opts->seeds)
		return -EINVAL;
	if (!generators(opts->workload, gens, 1))
		return -ENOENT;
	st = calloc(1, sizeof(*st));
	rep = calloc(1, sizeof(*rep));
	if (!st || !rep) {
		rc = -ENOMEM;
		goto out;
	}
	tv_flt_points(&npoints);
	assert(npoints <= TV_TB_MAX_POINTS);
	rc = spawn(opts, w, opts->jobs);
	if (!rc)
		rc = collect(opts, w, st, npoints);
	stop_workers(w, opts->jobs);
	if (rc)
		goto out;
	report_of(st, rep);
	rep->secs = (double)(tb_wall_ns() - t0) / 1e9;
	for (size_t i = 0; i < rep->nfail && (i == 0 || opts->keep_going); i++)
		write_failure(opts, &st->fail[i], &rep->fail[i]);
	*rep_p = *rep;
out:
	free(rep);
	free(st);
	return rc;
}

int tv_tb_swarm(const struct tv_tb_swarm_opts *opts,
		struct tv_tb_swarm_report *rep_p)
{
	uint32_t rank, size;

	/* Under mpirun the ranks split the seeds, rank 0 adds them up. */
	if (tv_tb_mpi_world(&rank, &size) && size > 1)
		return tb_swarm_mpi(opts, rank, size, rep_p);
	return tb_swarm_local(opts, rep_p);
}
