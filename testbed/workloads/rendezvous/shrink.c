/*
 * The rendezvous workload's shrink edits (docs/swarm.md): drop a step, a
 * block of transfers, a transfer (with or without its fault rule, aiming
 * a one-shot rule anew), merge or drop nodes, make sends, receives and the
 * world simpler.  The testbed's greedy loop tries each at every place.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tensorverbs/workload.h>

#include "rv_run.h"
#include "rv_workload.h"

static json_t *steps_of(json_t *sc)
{
	return json_object_get(sc, "steps");
}

static int edit_drop_step(json_t *sc, size_t i,
		           const struct tv_tb_shrink_state *cur)
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
		               const struct tv_tb_shrink_state *cur)
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
static int edit_drop_block(json_t *sc, size_t i, const struct tv_tb_shrink_state *cur)
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
		              const struct tv_tb_shrink_state *cur)
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
		              const struct tv_tb_shrink_state *cur)
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
		               const struct tv_tb_shrink_state *cur)
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
 * Dropping a transfer moves every later hit of a point: the one rule of
 * a pinned plan then fires elsewhere.  Place i = (transfer i / 64, hit
 * i % 64 + 1): drop the transfer and aim the rule at that hit, so a
 * reduction that needs both at once is still found.
 */
#define SHRINK_REAIM_HITS 64
#define SHRINK_REAIM_TRANSFERS 16

/* Both re-aiming edits: drop transfer t, then aim the one-shot rule r. */
static int drop_and_aim(json_t *sc, json_t *r, size_t t,
			const struct tv_tb_shrink_state *cur, json_int_t nth)
{
	int rc = edit_drop_transfer(sc, t, cur);

	if (rc)
		return rc;
	return json_object_set_new(r, "nth", json_integer(nth));
}

static int edit_drop_and_reaim(json_t *sc, size_t i,
			       const struct tv_tb_shrink_state *cur)
{
	json_t *r = tv_tb_plan_one_shot_rule(sc);

	/* Transfers x 64 runs: only for the last few transfers. */
	if (!r || cur->ops > SHRINK_REAIM_TRANSFERS)
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
			       const struct tv_tb_shrink_state *cur)
{
	json_t *r = tv_tb_plan_one_shot_rule(sc);
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
				   const struct tv_tb_shrink_state *cur)
{
	json_t *plan = json_object_get(sc, "faults");
	size_t nr = json_array_size(plan);
	int rc;

	if (!nr || cur->ops > SHRINK_REAIM_TRANSFERS)
		return -ENOENT;
	rc = edit_drop_transfer(sc, i / nr, cur);
	if (rc)
		return rc;
	return json_array_remove(plan, i % nr) ? -ENOMEM : 0;
}

/* ---- fewer nodes ---------------------------------------------------------- */

/* Place i = (n, m): node n's transfers go to node m instead. */
static int edit_merge_node(json_t *sc, size_t i, const struct tv_tb_shrink_state *cur)
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
		           const struct tv_tb_shrink_state *cur)
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


/* ---- the table: the plan first (pinned, fewer, lower rules survive) ---- */

static const struct tv_tb_shrink_edit rv_edit_list[] = {
	{ "drop a step", edit_drop_step },
	{ "drop a block of transfers", edit_drop_block },
	{ "drop a transfer", edit_drop_transfer },
	{ "drop a transfer, aim the fault anew", edit_drop_and_reaim },
	{ "drop a transfer, aim the fault a little earlier", edit_drop_and_shift },
	{ "drop a transfer with a fault rule", edit_drop_transfer_rule },
	{ "merge two nodes", edit_merge_node },
	{ "drop a node", edit_drop_node },
	{ "simplify a send", edit_send_simpler },
	{ "simplify a recv", edit_recv_simpler },
	{ "simplify the world", edit_world_simpler },
};

const struct tv_tb_shrink_edit *const rv_edits[RV_NEDITS] = {
	&tv_tb_edit_pin_faults,
	&tv_tb_edit_drop_fault,
	&tv_tb_edit_lower_fault,
	&rv_edit_list[0], &rv_edit_list[1], &rv_edit_list[2], &rv_edit_list[3],
	&rv_edit_list[4], &rv_edit_list[5],
	&tv_tb_edit_aim_earlier,
	&rv_edit_list[6], &rv_edit_list[7], &rv_edit_list[8], &rv_edit_list[9],
	&rv_edit_list[10],
};

void rv_describe(json_t *sc, uint64_t ops, char *buf, size_t cap)
{
	snprintf(buf, cap, "%" PRIu64 " transfers, %zu steps", ops,
		 json_array_size(steps_of(sc)));
}
