/*
 * The gather workload's swarm generator and shrink edits (docs/swarm.md).
 *
 * A seed draws a world (2-4 nodes, a device profile, sometimes a per-QP
 * message cost or a slow link), a tensor (rows, row size, a replicated
 * prefix, sparse all-zero rows), the engine's shape (QPs per peer, post
 * list size, window, sorting, staging or a registered output), one to
 * six batches of any distribution, and a fault mix.  Shrinking drops
 * batches and fault rules and halves counts.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gw.h"

extern const struct tv_tb_workload_ops tv_gather_workload;

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static uint64_t below(struct tv_prng *p, uint64_t n)
{
	return tv_prng_below(p, n);
}

/*
 * The builders below put every value in through tv_ju_set and tv_ju_push
 * and check once: a value lost to a failed allocation must give -ENOMEM,
 * never a scenario missing a key (another scenario).  Each returns NULL
 * on failure, which its caller's tv_ju_set turns into -ENOMEM.
 */
static json_t *gen_gather(struct tv_prng *p, uint32_t nodes, uint64_t *rows_p)
{
	static const uint64_t rbs[] = { 8, 64, 256, 2048 };
	uint64_t rows = tv_tb_gen_log_uniform(p, 16 * nodes, 8192);
	uint64_t rb = rbs[below(p, 4)];
	uint64_t pl = tv_tb_gen_log_uniform(p, 1, 128);
	json_t *g = json_object();
	int err = 0;

	/* Set first: the caller draws with rows even when this fails. */
	*rows_p = rows;
	if (!g)
		return NULL;
	tv_ju_set(g, "rows", jint(rows), &err);
	tv_ju_set(g, "row_bytes", jint(rb), &err);
	if (below(p, 2))
		tv_ju_set(g, "replicated_rows", jint(below(p, rows / 4 + 1)),
			  &err);
	if (!below(p, 4))
		tv_ju_set(g, "zero_every", jint(2 + below(p, 8)), &err);
	tv_ju_set(g, "qps_per_peer", jint(1 + below(p, 8)), &err);
	tv_ju_set(g, "post_list", jint(pl), &err);
	tv_ju_set(g, "window", jint(1 + below(p, 4)), &err);
	tv_ju_set(g, "sort", json_boolean(below(p, 2)), &err);
	if (!below(p, 3))
		tv_ju_set(g, "direct", json_true(), &err);
	else
		tv_ju_set(g, "staging_bytes", jint(pl * rb * (1 + below(p, 4))),
			  &err);
	tv_ju_set(g, "qp_timeout", jint(8 + below(p, 8)), &err);
	/* Generous: 2000 rows one at a time over a 1 ms link take 2 s. */
	tv_ju_set(g, "timeout_ns", jint(10000000000ull), &err);
	if (err) {
		json_decref(g);
		return NULL;
	}
	return g;
}

static json_t *gen_batch(struct tv_prng *p, uint32_t nodes, uint64_t rows,
			 uint64_t *at)
{
	static const char *const dists[] = { "uniform", "zipf", "sorted",
					     "boundary" };
	json_t *b = json_object();
	int err = 0;

	if (!b)
		return NULL;
	*at += below(p, 3) ? below(p, 200000) : 0;
	tv_ju_set(b, "node", jint(below(p, nodes)), &err);
	tv_ju_set(b, "at_ns", jint(*at), &err);
	if (!below(p, 8)) {
		json_t *ids = json_array();

		for (uint64_t k = 0, m = 1 + below(p, 8); ids && k < m; k++)
			tv_ju_push(ids, jint(below(p, rows)), &err);
		tv_ju_set(b, "ids", ids, &err);
	} else {
		tv_ju_set(b, "dist", json_string(dists[below(p, 4)]), &err);
		tv_ju_set(b, "count", jint(tv_tb_gen_log_uniform(p, 1, 2000)),
			  &err);
		if (below(p, 4) == 0)
			tv_ju_set(b, "dups", json_true(), &err);
	}
	if (err) {
		json_decref(b);
		return NULL;
	}
	return b;
}

static json_t *gen_batches(struct tv_prng *p, uint32_t nodes, uint64_t rows)
{
	json_t *arr = json_array();
	uint64_t n = 1 + below(p, 6), at = 0;
	int err = 0;

	for (uint64_t i = 0; arr && !err && i < n; i++)
		tv_ju_push(arr, gen_batch(p, nodes, rows, &at), &err);
	if (err) {
		json_decref(arr);
		return NULL;
	}
	return arr;
}

static json_t *gen_sim(struct tv_prng *p)
{
	json_t *sim = json_object();
	int err = 0;

	if (!sim)
		return NULL;
	tv_ju_set(sim, "profile", json_string(below(p, 2) ? "mlx5" : "rxe"),
		  &err);
	if (!below(p, 3))
		tv_ju_set(sim, "qp_op_ns", jint(below(p, 500)), &err);
	if (!below(p, 3))
		tv_ju_set(sim, "post_ns", jint(below(p, 1000)), &err);
	/* Devices whose READ depth is not quiver's hard-coded 16. */
	if (!below(p, 3))
		tv_ju_set(sim, "max_qp_rd_atom", jint(8u << below(p, 5)), &err);
	/* Six batches of a node, one after another, may take a minute. */
	tv_ju_set(sim, "deadline_ns", jint(120000000000ull), &err);
	if (err) {
		json_decref(sim);
		return NULL;
	}
	return sim;
}

int gw_generate(uint64_t seed, uint32_t without, json_t **sc_p)
{
	struct tv_prng p;
	json_t *sc = json_pack("{s:s,s:I}", "workload", "gather", "seed",
			       (json_int_t)seed);
	uint32_t nodes;
	uint64_t rows;
	int err = 0;

	if (!sc)
		return -ENOMEM;
	tv_prng_init(&p, seed ^ 0x676174686572ull); /* "gather" */
	nodes = 2 + (uint32_t)below(&p, 3);
	tv_ju_set(sc, "nodes", jint(nodes), &err);
	tv_ju_set(sc, "gather", gen_gather(&p, nodes, &rows), &err);
	tv_ju_set(sc, "sim", gen_sim(&p), &err);
	if (!below(&p, 4))
		tv_ju_set(sc, "links", json_pack(
			"[{s:I,s:I,s:I}]", "from", (json_int_t)1, "to",
			(json_int_t)0, "latency_ns",
			(json_int_t)tv_tb_gen_log_uniform(&p, 1000, 500000)),
			&err);
	tv_ju_set(sc, "batches", gen_batches(&p, nodes, rows), &err);
	if (!err)
		err = tv_tb_swarm_gen_faults(&p, sc, without, 2000000,
					     &tv_gather_workload);
	if (err) {
		json_decref(sc);
		return err;
	}
	*sc_p = sc;
	return 0;
}

/* ---- shrink -------------------------------------------------------------------- */

static int edit_drop_batch(json_t *sc, size_t i,
			   const struct tv_tb_shrink_state *cur)
{
	json_t *arr = json_object_get(sc, "batches");

	(void)cur;
	if (i >= json_array_size(arr))
		return -ENOENT;
	if (json_array_size(arr) < 2)
		return -EAGAIN;
	return json_array_remove(arr, i) ? -ENOMEM : 0;
}

static int edit_halve_count(json_t *sc, size_t i,
			    const struct tv_tb_shrink_state *cur)
{
	json_t *b = json_array_get(json_object_get(sc, "batches"), i), *v;
	json_t *ids;

	(void)cur;
	if (!b)
		return -ENOENT;
	ids = json_object_get(b, "ids");
	if (ids) {
		size_t n = json_array_size(ids);

		if (n < 2)
			return -EAGAIN;
		while (json_array_size(ids) > n / 2)
			json_array_remove(ids, json_array_size(ids) - 1);
		return 0;
	}
	v = json_object_get(b, "count");
	if (!json_is_integer(v) || json_integer_value(v) < 2)
		return -EAGAIN;
	return json_object_set_new(b, "count",
				   jint((uint64_t)json_integer_value(v) / 2)) ?
	       -ENOMEM : 0;
}

static const struct tv_tb_shrink_edit gw_edit_list[] = {
	{ "drop a batch", edit_drop_batch },
	{ "halve a batch", edit_halve_count },
};

const struct tv_tb_shrink_edit *const gw_edits[GW_NEDITS] = {
	&tv_tb_edit_pin_faults,
	&tv_tb_edit_drop_fault,
	&tv_tb_edit_lower_fault,
	&gw_edit_list[0],
	&tv_tb_edit_aim_earlier,
	&gw_edit_list[1],
};


void gw_describe(json_t *sc, uint64_t ops, char *buf, size_t cap)
{
	json_t *arr = json_object_get(sc, "batches"), *b;
	uint64_t rows = 0;
	size_t i;

	json_array_foreach(arr, i, b) {
		json_t *ids = json_object_get(b, "ids");

		rows += ids ? json_array_size(ids) :
			      (uint64_t)json_integer_value(
				      json_object_get(b, "count"));
	}
	snprintf(buf, cap, "%" PRIu64 " batches, %" PRIu64 " rows", ops,
		 rows);
}
