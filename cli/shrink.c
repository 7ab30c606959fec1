/*
 * `tensorverbs shrink FILE`: reduce a failing scenario (with its fault
 * plan) or trace while it still fails the same way (docs/swarm.md).
 *
 * Greedy, deterministic delta debugging over the scenario's JSON: each
 * kind of edit (drop a step, a transfer, a fault rule, a node; lower a
 * rule's counts; halve a tensor; simplify a dtype, a receive, the world)
 * is tried at every place it applies, in a fixed order; an edit is kept
 * when the edited scenario still fails with the target kind of violation
 * (the kind of the original's first failure).  Passes repeat until none
 * keeps anything.  Every candidate runs in a child process: a crash or a
 * hang is an outcome, not the end of the shrinker.
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tensorverbs/faults.h>

#include "cli.h"
#include "swarm.h"
#include "trace.h"

#define SHRINK_RUN_WALL_S 120

static const char shrink_usage[] =
	"usage: tensorverbs shrink FILE [--out MIN.json] [--seed N] [--kind KIND]\n"
	"\n"
	"FILE is a failing scenario (its \"faults\" plan included, e.g. from\n"
	"tensorverbs swarm) or a trace of a failing run.  Reduces it while it\n"
	"still fails with the same kind of violation: fewer steps, transfers,\n"
	"nodes and fault rules, lower fault counts, smaller tensors, simpler\n"
	"dtypes.  Writes the minimal reproducer (default: FILE with .min.json)\n"
	"and prints its size and the command that reproduces it.\n"
	"\n"
	"options:\n"
	"  --out FILE   where the minimal scenario goes\n"
	"  --seed N     seed of the runs (default: the trace's, or the file's\n"
	"               \"seed\")\n"
	"  --max-runs N stop after N runs with what is smallest so far\n"
	"               (default 10000)\n"
	"  --kind KIND  the violation to keep (default: the first one's):\n"
	"               runner expect data callback hang in-flight write error\n"
	"               leak outcome crash\n"
	"\n"
	"exit status: 0 written, 2 bad usage, or FILE does not fail.\n";

struct shrink {
	uint64_t max_runs;          /* budget: stop reducing after this many */
	uint64_t seed;
	uint32_t breakage;
	enum fail_kind kind;        /* the violation that must stay */
	uint64_t runs;
};

/* What a child reports of one candidate. */
struct shrink_res {
	uint32_t invalid;
	uint32_t kinds;
	uint32_t first;
	uint32_t pad;
	uint64_t failures;
	uint64_t transfers;
	uint64_t sim_events;
	uint64_t trace_events;
	uint64_t fires[RUN_MAX_POINTS];
	uint64_t first_hit[RUN_MAX_POINTS];
	uint64_t last_hit[RUN_MAX_POINTS];
	char msg[512];
};

/* ---- running a candidate ---------------------------------------------- */

static void child_run(json_t *sc, const struct shrink *s, int fd)
{
	struct swarm_outcome out;
	struct shrink_res r = { 0 };

	alarm(SHRINK_RUN_WALL_S);
	if (swarm_run_json(sc, s->seed, s->breakage, true, &out)) {
		r.kinds = 1u << FK_RUNNER;
		r.first = FK_RUNNER;
	} else {
		r.invalid = out.invalid;
		r.kinds = out.kinds;
		r.first = out.first;
		r.failures = out.failures;
		r.transfers = out.transfers;
		r.sim_events = out.res.sim_events;
		r.trace_events = out.trace_events;
		memcpy(r.fires, out.res.point_fires, sizeof(r.fires));
		memcpy(r.first_hit, out.res.point_first_hit, sizeof(r.first_hit));
		memcpy(r.last_hit, out.res.point_last_hit, sizeof(r.last_hit));
		memcpy(r.msg, out.first_msg, sizeof(r.msg) - 1);
	}
	_exit(write(fd, &r, sizeof(r)) == sizeof(r) ? 0 : 3);
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
		r.kinds = 1u << FK_CRASH;
		r.first = FK_CRASH;
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

/* ---- edits: each changes sc in place at place i -------------------------- */

/*
 * 0: changed; -EAGAIN: nothing to change at i (try i + 1); -ENOENT: no
 * place i or beyond.  cur: how the scenario as it is now ran.
 */
typedef int (*edit_fn)(json_t *sc, size_t i, const struct shrink_res *cur);

static json_t *steps_of(json_t *sc)
{
	return json_object_get(sc, "steps");
}

static int edit_drop_step(json_t *sc, size_t i,
		           const struct shrink_res *cur)
{
	json_t *steps = steps_of(sc);

	if (i >= json_array_size(steps))
		return -ENOENT;
	if (json_array_size(steps) < 2)
		return -EAGAIN;
	return json_array_remove(steps, i) ? -ENOMEM : 0;
}

/* The send of a step a recv consumes: same sender, same name. */
static size_t send_of(json_t *step, json_t *recv)
{
	json_t *sends = json_object_get(step, "sends"), *s;
	size_t k;

	json_array_foreach(sends, k, s)
		if (json_equal(json_object_get(s, "from"),
			       json_object_get(recv, "from")) &&
		    json_equal(json_object_get(s, "name"),
			       json_object_get(recv, "name")))
			return k;
	return SIZE_MAX;
}

/* Place i: the i-th recv overall (with its send), then unasked sends. */
static int edit_drop_transfer(json_t *sc, size_t i,
		               const struct shrink_res *cur)
{
	json_t *step;
	size_t si;

	json_array_foreach(steps_of(sc), si, step) {
		json_t *recvs = json_object_get(step, "recvs");
		json_t *sends = json_object_get(step, "sends");
		size_t nr = json_array_size(recvs), k;

		if (i < nr) {
			k = send_of(step, json_array_get(recvs, i));
			json_array_remove(recvs, i);
			if (k != SIZE_MAX)
				json_array_remove(sends, k);
			return 0;
		}
		i -= nr;
	}
	json_array_foreach(steps_of(sc), si, step) {
		json_t *sends = json_object_get(step, "sends");
		size_t ns = json_array_size(sends);

		if (i < ns)
			return json_array_remove(sends, i) ? -ENOMEM : 0;
		i -= ns;
	}
	return -ENOENT;
}

static size_t count_transfers(json_t *sc)
{
	json_t *step;
	size_t si, n = 0;

	json_array_foreach(steps_of(sc), si, step) {
		size_t nr = json_array_size(json_object_get(step, "recvs"));
		size_t ns = json_array_size(json_object_get(step, "sends"));

		/* Each recv with its send, and each send nobody asks for. */
		n += nr + (ns > nr ? ns - nr : 0);
	}
	return n;
}

/*
 * Delta debugging's coarse steps: half of the transfers at once, then
 * quarters ... down to pairs; single ones are edit_drop_transfer's.
 */
static int edit_drop_block(json_t *sc, size_t i, const struct shrink_res *cur)
{
	size_t n = count_transfers(sc), size, blocks, first, len;

	(void)cur;
	for (size = n / 2; size >= 2; size /= 2) {
		blocks = (n + size - 1) / size;
		if (i < blocks)
			break;
		i -= blocks;
	}
	if (size < 2)
		return -ENOENT;
	first = i * size;
	len = first + size <= n ? size : n - first;
	for (size_t k = 0; k < len; k++)
		if (edit_drop_transfer(sc, first, cur))
			return -EAGAIN;
	return 0;
}

static int edit_drop_fault(json_t *sc, size_t i,
		            const struct shrink_res *cur)
{
	json_t *plan = json_object_get(sc, "faults");

	if (i >= json_array_size(plan))
		return -ENOENT;
	return json_array_remove(plan, i) ? -ENOMEM : 0;
}

/* Lower a rule: fire once, earlier, always, at any time, default arg. */
static int edit_fault_simpler(json_t *sc, size_t i,
		               const struct shrink_res *cur)
{
	json_t *r = json_array_get(json_object_get(sc, "faults"), i / 5);
	json_t *v;

	if (!r)
		return -ENOENT;
	switch (i % 5) {
	case 0:
		v = json_object_get(r, "count");
		if (v && json_integer_value(v) <= 1)
			return -EAGAIN;
		return json_object_set_new(r, "count", json_integer(
			v ? json_integer_value(v) / 2 : 1));
	case 1:
		v = json_object_get(r, "nth");
		if (!v || json_integer_value(v) <= 1)
			return -EAGAIN;
		return json_object_set_new(r, "nth",
					   json_integer(json_integer_value(v) / 2));
	case 2:
		if (!json_object_get(r, "after_ns") &&
		    !json_object_get(r, "before_ns"))
			return -EAGAIN;
		json_object_del(r, "after_ns");
		return json_object_del(r, "before_ns"), 0;
	case 3:
		return json_object_del(r, "probability") ? -EAGAIN : 0;
	default:
		return json_object_del(r, "arg") ? -EAGAIN : 0;
	}
}

/* Every send (key "sends") or receive ("recvs") of every step, in order. */
static json_t *nth_item(json_t *sc, const char *key, size_t i)
{
	json_t *step;
	size_t si;

	json_array_foreach(steps_of(sc), si, step) {
		json_t *items = json_object_get(step, key);
		size_t n = json_array_size(items);

		if (i < n)
			return json_array_get(items, i);
		i -= n;
	}
	return NULL;
}

static int halve_shape(json_t *shape, bool drop_ones)
{
	bool changed = false;
	json_t *d;
	size_t k;

	json_array_foreach(shape, k, d) {
		json_int_t v = json_integer_value(d);

		if (drop_ones && v == 1) {
			json_array_remove(shape, k);
			return 0;
		}
		if (!drop_ones && v > 1) {
			json_array_set_new(shape, k, json_integer(v / 2));
			changed = true;
		}
	}
	return changed ? 0 : -EAGAIN;
}

/* A send made simpler: smaller, fewer dims, bytes, host, a tensor. */
static int edit_send_simpler(json_t *sc, size_t i,
		              const struct shrink_res *cur)
{
	json_t *s = nth_item(sc, "sends", i / 6), *shape;
	const char *dt;

	if (!s)
		return -ENOENT;
	shape = json_object_get(s, "shape");
	dt = json_string_value(json_object_get(s, "dtype"));
	switch (i % 6) {
	case 0:
		return shape && !json_object_get(s, "strings") ?
		       halve_shape(shape, false) : -EAGAIN;
	case 1:
		return shape && !json_object_get(s, "strings") ?
		       halve_shape(shape, true) : -EAGAIN;
	case 2:
		if (!dt || !strcmp(dt, "uint8"))
			return -EAGAIN;
		json_object_del(s, "strings");
		return json_object_set_new(s, "dtype", json_string("uint8"));
	case 3:
		if (json_object_del(s, "placement") & json_object_del(s, "memory"))
			return -EAGAIN;
		return 0;
	case 4:
		/* An error or a dead tensor becomes one plain byte. */
		if (!json_object_get(s, "error") && !json_object_get(s, "dead"))
			return -EAGAIN;
		json_object_del(s, "error");
		json_object_del(s, "dead");
		json_object_set_new(s, "dtype", json_string("uint8"));
		return json_object_set_new(s, "shape", json_pack("[i]", 1));
	default:
		if (json_object_del(s, "at_ns") & json_object_del(s, "fill"))
			return -EAGAIN;
		return 0;
	}
}

static int edit_recv_simpler(json_t *sc, size_t i,
		              const struct shrink_res *cur)
{
	json_t *r = nth_item(sc, "recvs", i / 2);

	if (!r)
		return -ENOENT;
	if (i % 2 == 0) {
		if (json_object_del(r, "placement") & json_object_del(r, "at_ns"))
			return -EAGAIN;
		return 0;
	}
	if (!strcmp(json_string_value(json_object_get(r, "expect")) ?
		    json_string_value(json_object_get(r, "expect")) : "", "any"))
		return -EAGAIN;
	return json_object_set_new(r, "expect", json_string("any"));
}

/* Keys of the scenario (or of its engine and sim) that may go. */
static int edit_world_simpler(json_t *sc, size_t i,
		               const struct shrink_res *cur)
{
	static const char *const top[] = {
		"links", "late_nodes", "expect_stats", "expect_faults",
		"step_interval_ns", "link", "allow_error_completions", "sim",
		"description",
	};
	static const char *const eng[] = {
		"validate_checksum", "pool_block_bytes",
	};
	const size_t ntop = sizeof(top) / sizeof(top[0]);
	const size_t neng = sizeof(eng) / sizeof(eng[0]);
	json_t *e = json_object_get(sc, "engine"), *q;

	if (i < ntop)
		return json_object_del(sc, top[i]) ? -EAGAIN : 0;
	if (i < ntop + neng)
		return e && !json_object_del(e, eng[i - ntop]) ? 0 : -EAGAIN;
	if (i == ntop + neng)
		return json_object_del(json_object_get(sc, "sim"),
				       "jitter_ns_max") ? -EAGAIN : 0;
	if (i > ntop + neng + 1)
		return -ENOENT;
	/* Fewer receives posted: far fewer events in a trace. */
	q = json_object_get(e, "queue_depth");
	if (!e || (q && json_integer_value(q) <= 4))
		return -EAGAIN;
	return json_object_set_new(e, "queue_depth", json_integer(4));
}

static bool uses(json_t *o, const char *key, json_int_t n)
{
	return json_integer_value(json_object_get(o, key)) == n;
}

/*
 * A rule whose firings depend on draws (a probability) or a time window
 * moves whenever anything else changes.  Pinned to the hit it fired at
 * (nth = that hit, count 1) it fires there whatever the rest does, so
 * the other reductions can go on.  Place 0: every rule to its first
 * firing, 1: to its last; then rule k alone, first then last.
 */
static bool rule_fired(json_t *r, const struct shrink_res *cur)
{
	const struct tv_flt_point_info *pts, *pt;
	size_t n;

	pts = tv_flt_points(&n);
	pt = tv_flt_point_find(json_string_value(json_object_get(r, "point")));
	return pt && pt - pts < RUN_MAX_POINTS && cur->fires[pt - pts];
}

static int pin_rule(json_t *r, const struct shrink_res *cur, bool last)
{
	const struct tv_flt_point_info *pts, *pt;
	size_t n, k;
	uint64_t hit;

	pts = tv_flt_points(&n);
	pt = tv_flt_point_find(json_string_value(json_object_get(r, "point")));
	if (!pt)
		return -EAGAIN;
	k = (size_t)(pt - pts);
	hit = last ? cur->last_hit[k] : cur->first_hit[k];
	if (!hit || k >= RUN_MAX_POINTS)
		return -EAGAIN;
	if (json_integer_value(json_object_get(r, "nth")) == (json_int_t)hit &&
	    json_integer_value(json_object_get(r, "count")) == 1 &&
	    !json_object_get(r, "probability"))
		return -EAGAIN;
	json_object_del(r, "probability");
	json_object_del(r, "after_ns");
	json_object_del(r, "before_ns");
	json_object_set_new(r, "nth", json_integer((json_int_t)hit));
	return json_object_set_new(r, "count", json_integer(1));
}

static int edit_pin_faults(json_t *sc, size_t i, const struct shrink_res *cur)
{
	json_t *plan = json_object_get(sc, "faults"), *r;
	size_t k;
	int changed = -EAGAIN;

	if (i < 2) {
		/* Pinned, no rule draws: one that never fired does nothing. */
		for (k = json_array_size(plan); k-- > 0;) {
			r = json_array_get(plan, k);
			if (!rule_fired(r, cur)) {
				json_array_remove(plan, k);
				changed = 0;
			} else if (pin_rule(r, cur, i == 1) == 0) {
				changed = 0;
			}
		}
		return changed;
	}
	r = json_array_get(plan, (i - 2) / 2);
	return r ? pin_rule(r, cur, (i - 2) % 2) : -ENOENT;
}

/*
 * Dropping a transfer moves every later hit of a point: the one rule of
 * a pinned plan then fires elsewhere.  Place i = (transfer i / 64, hit
 * i % 64 + 1): drop the transfer and aim the rule at that hit, so a
 * reduction that needs both at once is still found.
 */
#define SHRINK_REAIM_HITS 64
#define SHRINK_REAIM_TRANSFERS 16

/* The plan's one rule if it fires once, at a counted hit; else NULL. */
static json_t *one_shot_rule(json_t *sc)
{
	json_t *plan = json_object_get(sc, "faults"), *r = json_array_get(plan, 0);

	if (json_array_size(plan) != 1 ||
	    json_integer_value(json_object_get(r, "nth")) < 1 ||
	    json_integer_value(json_object_get(r, "count")) != 1 ||
	    json_object_get(r, "probability"))
		return NULL;
	return r;
}

/* Both re-aiming edits: drop transfer t, then aim the one-shot rule r. */
static int drop_and_aim(json_t *sc, json_t *r, size_t t,
			const struct shrink_res *cur, json_int_t nth)
{
	int rc = edit_drop_transfer(sc, t, cur);

	if (rc)
		return rc;
	return json_object_set_new(r, "nth", json_integer(nth));
}

static int edit_drop_and_reaim(json_t *sc, size_t i,
			       const struct shrink_res *cur)
{
	json_t *r = one_shot_rule(sc);

	/* Transfers x 64 runs: only for the last few transfers. */
	if (!r || cur->transfers > SHRINK_REAIM_TRANSFERS)
		return -ENOENT;
	return drop_and_aim(sc, r, i / SHRINK_REAIM_HITS, cur,
			    (json_int_t)(i % SHRINK_REAIM_HITS) + 1);
}

/*
 * The same with any number of transfers, for a plan whose failure needs its
 * rule on one particular hit (a lost ACK hangs only if nothing is sent after
 * it): a transfer brings a few hits of a point, so dropping one moves that
 * hit a few places earlier.  Place i = (transfer i / 8, i % 8 earlier).
 */
#define SHRINK_SHIFT_HITS 8

static int edit_drop_and_shift(json_t *sc, size_t i,
			       const struct shrink_res *cur)
{
	json_t *r = one_shot_rule(sc);
	json_int_t nth, shift = (json_int_t)(i % SHRINK_SHIFT_HITS);

	if (!r)
		return -ENOENT;
	nth = json_integer_value(json_object_get(r, "nth"));
	return drop_and_aim(sc, r, i / SHRINK_SHIFT_HITS, cur,
			    nth - shift > 1 ? nth - shift : 1);
}

/*
 * A transfer and a rule that only it needed go together: dropped one at a
 * time, either changes the failure (a lost request with nothing else lost
 * times out instead of hanging).  Transfers x rules runs: near the end only.
 */
static int edit_drop_transfer_rule(json_t *sc, size_t i,
				   const struct shrink_res *cur)
{
	json_t *plan = json_object_get(sc, "faults");
	size_t nr = json_array_size(plan);
	int rc;

	if (!nr || cur->transfers > SHRINK_REAIM_TRANSFERS)
		return -ENOENT;
	rc = edit_drop_transfer(sc, i / nr, cur);
	if (rc)
		return rc;
	return json_array_remove(plan, i % nr) ? -ENOMEM : 0;
}

/*
 * A rule pinned late (nth = the 74th ACK) keeps every transfer before that
 * hit alive.  Place i = (rule i / 64, hit i % 64 + 1): aim a pinned,
 * one-shot rule at an earlier hit; once the failure comes earlier, the
 * transfers after it can go.
 */
static int edit_aim_earlier(json_t *sc, size_t i, const struct shrink_res *cur)
{
	json_t *r = json_array_get(json_object_get(sc, "faults"),
				   i / SHRINK_REAIM_HITS);
	json_int_t nth, hit = (json_int_t)(i % SHRINK_REAIM_HITS) + 1;

	if (!r)
		return -ENOENT;
	nth = json_integer_value(json_object_get(r, "nth"));
	if (nth <= 1 || hit >= nth || json_object_get(r, "probability") ||
	    json_integer_value(json_object_get(r, "count")) != 1)
		return -EAGAIN;
	return json_object_set_new(r, "nth", json_integer(hit));
}

/* ---- fewer nodes ---------------------------------------------------------- */

/* Place i = (n, m): node n's transfers go to node m instead. */
static int edit_merge_node(json_t *sc, size_t i, const struct shrink_res *cur)
{
	static const char *const keys[] = { "from", "to", "node" };
	json_int_t nodes = json_integer_value(json_object_get(sc, "nodes"));
	json_int_t n = (json_int_t)i / nodes, m = (json_int_t)i % nodes;
	bool changed = false;
	json_t *step, *o;
	size_t si, k;

	(void)cur;
	if (n >= nodes)
		return -ENOENT;
	if (n == m)
		return -EAGAIN;
	/* A transfer between n and m would become a loop: invalid. */
	json_array_foreach(steps_of(sc), si, step) {
		json_t *lists[] = { json_object_get(step, "sends"),
				    json_object_get(step, "recvs") };

		for (size_t l = 0; l < 2; l++)
			json_array_foreach(lists[l], k, o)
				for (size_t q = 0; q < 3; q++)
					if (uses(o, keys[q], n)) {
						json_object_set_new(o, keys[q],
								    json_integer(m));
						changed = true;
					}
	}
	return changed ? 0 : -EAGAIN;
}


static bool node_used(json_t *sc, json_int_t n)
{
	json_t *step, *o;
	size_t si, k;

	json_array_foreach(steps_of(sc), si, step) {
		json_array_foreach(json_object_get(step, "sends"), k, o)
			if (uses(o, "from", n) || uses(o, "to", n))
				return true;
		json_array_foreach(json_object_get(step, "recvs"), k, o)
			if (uses(o, "node", n) || uses(o, "from", n))
				return true;
	}
	return false;
}

/* Keys naming nodes: above n they move down one. */
static void renumber(json_t *arr, const char *const *keys, json_int_t n)
{
	json_t *o;
	size_t k;

	json_array_foreach(arr, k, o) {
		for (const char *const *key = keys; *key; key++) {
			json_t *v = json_object_get(o, *key);

			if (json_is_integer(v) && json_integer_value(v) > n)
				json_object_set_new(o, *key, json_integer(
					json_integer_value(v) - 1));
		}
	}
}

/* Entries of arr that name node n under one of keys go. */
static void drop_naming(json_t *arr, const char *const *keys, json_int_t n)
{
	for (size_t k = json_array_size(arr); k-- > 0;)
		for (const char *const *key = keys; *key; key++)
			if (uses(json_array_get(arr, k), *key, n)) {
				json_array_remove(arr, k);
				break;
			}
}

static int edit_drop_node(json_t *sc, size_t i,
		           const struct shrink_res *cur)
{
	static const char *const send_keys[] = { "from", "to", NULL };
	static const char *const recv_keys[] = { "node", "from", NULL };
	static const char *const node_key[] = { "node", NULL };
	json_int_t nodes = json_integer_value(json_object_get(sc, "nodes"));
	json_int_t n = (json_int_t)i;
	json_t *step;
	size_t si;

	if (n >= nodes)
		return -ENOENT;
	if (nodes <= 2 || node_used(sc, n))
		return -EAGAIN;
	json_array_foreach(steps_of(sc), si, step) {
		renumber(json_object_get(step, "sends"), send_keys, n);
		renumber(json_object_get(step, "recvs"), recv_keys, n);
	}
	drop_naming(json_object_get(sc, "links"), send_keys, n);
	renumber(json_object_get(sc, "links"), send_keys, n);
	drop_naming(json_object_get(sc, "late_nodes"), node_key, n);
	renumber(json_object_get(sc, "late_nodes"), node_key, n);
	drop_naming(json_object_get(sc, "expect_stats"), node_key, n);
	renumber(json_object_get(sc, "expect_stats"), node_key, n);
	return json_object_set_new(sc, "nodes", json_integer(nodes - 1));
}

/* ---- the greedy loop ------------------------------------------------------ */

static const struct {
	const char *what;
	edit_fn fn;
} edits[] = {
	/* The plan first: pinned, fewer, lower rules survive other edits. */
	{ "pin fault rules to their hits", edit_pin_faults },
	{ "drop a fault rule", edit_drop_fault },
	{ "lower a fault rule", edit_fault_simpler },
	{ "drop a step", edit_drop_step },
	{ "drop a block of transfers", edit_drop_block },
	{ "drop a transfer", edit_drop_transfer },
	{ "drop a transfer, aim the fault anew", edit_drop_and_reaim },
	{ "drop a transfer, aim the fault a little earlier", edit_drop_and_shift },
	{ "drop a transfer with a fault rule", edit_drop_transfer_rule },
	{ "aim a fault at an earlier hit", edit_aim_earlier },
	{ "merge two nodes", edit_merge_node },
	{ "drop a node", edit_drop_node },
	{ "simplify a send", edit_send_simpler },
	{ "simplify a recv", edit_recv_simpler },
	{ "simplify the world", edit_world_simpler },
};

/* One kind of edit at every place; returns how many were kept. */
static int shrink_pass(json_t **cur, struct shrink *s, size_t e,
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
		rc = edits[e].fn(cand, i, best);
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
		for (size_t e = 0; e < sizeof(edits) / sizeof(edits[0]); e++) {
			int n = shrink_pass(cur, s, e, best);

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
		      bool has_seed)
{
	struct trace_reader rd;
	struct trace_header h;
	char err[TRACE_ERR_MAX];
	json_t *hdr, *sc;
	int rc;

	rc = trace_reader_open(path, &rd);
	if (rc)
		return rc;
	rc = trace_reader_next(&rd, &hdr, err);
	if (!rc && (rc = trace_header_parse(hdr, &h, err)))
		json_decref(hdr);
	trace_reader_close(&rd);
	if (rc) {
		fprintf(stderr, "tensorverbs shrink: %s: %s\n", path,
			rc == -EINVAL ? err : strerror(-rc));
		return rc;
	}
	sc = json_deep_copy(h.scenario);
	if (sc && json_is_array(h.plan))
		json_object_set(sc, "faults", h.plan);
	else if (sc)
		json_object_del(sc, "faults");
	if (!has_seed)
		s->seed = h.seed;
	if (h.test_breakage)
		s->breakage = h.test_breakage;
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
		      bool has_seed)
{
	json_error_t jerr;
	json_t *sc, *seed;

	if (is_trace(path))
		return load_trace(path, sc_p, s, has_seed);
	sc = json_load_file(path, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
			    &jerr);
	if (!json_is_object(sc)) {
		fprintf(stderr, "tensorverbs shrink: %s:%d: %s\n", path,
			jerr.line, sc ? "not a JSON object" : jerr.text);
		json_decref(sc);
		return -EINVAL;
	}
	seed = json_object_get(sc, "seed");
	if (!has_seed)
		s->seed = json_is_integer(seed) ?
			  (uint64_t)json_integer_value(seed) : 1;
	*sc_p = sc;
	return 0;
}

static void describe(json_t *sc, const struct shrink_res *r, char *buf,
		     size_t cap)
{
	size_t steps = json_array_size(steps_of(sc));

	snprintf(buf, cap,
		 "%" PRIu64 " transfers, %zu steps, %" PRId64 " nodes, %zu fault rules, %" PRIu64 " sim events, %" PRIu64 " trace events",
		 r->transfers, steps,
		 (int64_t)json_integer_value(json_object_get(sc, "nodes")),
		 json_array_size(json_object_get(sc, "faults")), r->sim_events,
		 r->trace_events);
}

static void default_out(const char *in, char *out, size_t cap)
{
	size_t n = strlen(in);

	if (n > 6 && !strcmp(in + n - 6, ".jsonl"))
		n -= 6;
	else if (n > 5 && !strcmp(in + n - 5, ".json"))
		n -= 5;
	snprintf(out, cap, "%.*s.min.json", (int)n, in);
}

static int parse_shrink_args(int argc, char **argv, const char **in_p,
			     const char **out_p, struct shrink *s,
			     bool *has_seed_p, bool *has_kind_p)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 's' },
		{ "kind", required_argument, NULL, 'k' },
		{ "max-runs", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': *out_p = optarg; break;
		case 's':
			if (cli_parse_u64(optarg, &s->seed))
				goto bad;
			*has_seed_p = true;
			break;
		case 'k':
			if (fail_kind_from_name(optarg, &s->kind))
				goto bad;
			*has_kind_p = true;
			break;
		case 'm':
			if (cli_parse_u64(optarg, &s->max_runs) || !s->max_runs)
				goto bad;
			break;
		case 'h': fputs(shrink_usage, stdout); return 1;
		default: goto bad;
		}
	}
	if (argc - optind != 1)
		goto bad;
	*in_p = argv[optind];
	if (runner_breakage_from_env(&s->breakage)) {
		fprintf(stderr, "tensorverbs shrink: bad TV_BREAK (known: no-ack-timeout)\n");
		return -EINVAL;
	}
	return 0;
bad:
	fputs(shrink_usage, stderr);
	return -EINVAL;
}

static int write_min(json_t *sc, const char *out, const struct shrink *s)
{
	/* The seed goes in: `run MIN.json` alone reproduces it. */
	if (json_object_set_new(sc, "seed", json_integer((json_int_t)s->seed)) ||
	    json_dump_file(sc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER)) {
		fprintf(stderr, "tensorverbs shrink: cannot write %s\n", out);
		return -EIO;
	}
	return 0;
}

static void report(const char *argv0, const char *out, const struct shrink *s,
		   const char *before, const char *after,
		   const struct shrink_res *best, double secs)
{
	printf("shrink: before: %s\n", before);
	printf("shrink: after:  %s\n", after);
	printf("shrink: %" PRIu64 " runs in %.1f s%s; still fails [%s]: %s\n",
	       s->runs, secs, s->runs >= s->max_runs ?
	       " (--max-runs reached: smaller may exist)" : "",
	       fail_kind_name(s->kind), best->msg);
	printf("minimal: %s (%" PRIu64 " transfers, %" PRIu64 " sim events)\n",
	       out, best->transfers, best->sim_events);
	printf("reproduce: ");
	if (s->breakage)
		printf("TV_BREAK=%s ", runner_breakage_name(s->breakage));
	cli_put_shell_word(stdout, argv0);
	printf(" run ");
	cli_put_shell_word(stdout, out);
	printf(" --seed %" PRIu64 "\n", s->seed);
}

/* The original must fail, with the kind asked for if one was. */
static int check_original(json_t *sc, struct shrink *s, bool has_kind,
			  struct shrink_res *r_p)
{
	int rc = run_candidate(sc, s, r_p);

	if (rc)
		return rc;
	if (r_p->invalid) {
		fprintf(stderr, "tensorverbs shrink: invalid scenario: %s\n",
			r_p->msg);
		return -EINVAL;
	}
	if (!r_p->kinds) {
		fprintf(stderr, "tensorverbs shrink: it does not fail with seed %" PRIu64 "%s: nothing to shrink\n",
			s->seed, s->breakage ? "" : " (TV_BREAK unset: was it a broken-engine run?)");
		return -EINVAL;
	}
	if (has_kind && !(r_p->kinds & (1u << s->kind))) {
		fprintf(stderr, "tensorverbs shrink: it does not fail with [%s]\n",
			fail_kind_name(s->kind));
		return -EINVAL;
	}
	if (!has_kind)
		s->kind = (enum fail_kind)r_p->first;
	return 0;
}

int cli_shrink(int argc, char **argv, const char *argv0)
{
	struct shrink s = { .seed = 1, .max_runs = 10000 };
	struct shrink_res first, best;
	const char *in = NULL, *out = NULL;
	char out_buf[4096], before[256], after[256];
	bool has_seed = false, has_kind = false;
	uint64_t t0 = runner_wall_ns();
	json_t *sc = NULL;
	int rc;

	rc = parse_shrink_args(argc, argv, &in, &out, &s, &has_seed, &has_kind);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (!out) {
		default_out(in, out_buf, sizeof(out_buf));
		out = out_buf;
	}
	rc = load_input(in, &sc, &s, has_seed);
	if (!rc)
		rc = check_original(sc, &s, has_kind, &first);
	if (rc)
		goto out;
	describe(sc, &first, before, sizeof(before));
	printf("shrink: %s fails with [%s]: %s\n", in,
	       fail_kind_name(s.kind), first.msg);
	best = first;
	rc = shrink_loop(&sc, &s, &best);
	if (!rc) {
		describe(sc, &best, after, sizeof(after));
		rc = write_min(sc, out, &s);
	}
	if (!rc)
		report(argv0, out, &s, before, after, &best,
		       (double)(runner_wall_ns() - t0) / 1e9);
out:
	json_decref(sc);
	return rc ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}
