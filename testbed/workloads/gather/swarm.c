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

static json_t *gen_gather(struct tv_prng *p, uint32_t nodes, uint64_t *rows_p)
{
	static const uint64_t rbs[] = { 8, 64, 256, 2048 };
	uint64_t rows = tv_tb_gen_log_uniform(p, 16 * nodes, 8192);
	uint64_t rb = rbs[below(p, 4)];
	uint64_t pl = tv_tb_gen_log_uniform(p, 1, 128);
	json_t *g = json_object();

	json_object_set_new(g, "rows", jint(rows));
	json_object_set_new(g, "row_bytes", jint(rb));
	if (below(p, 2))
		json_object_set_new(g, "replicated_rows",
				    jint(below(p, rows / 4 + 1)));
	if (!below(p, 4))
		json_object_set_new(g, "zero_every", jint(2 + below(p, 8)));
	json_object_set_new(g, "qps_per_peer", jint(1 + below(p, 8)));
	json_object_set_new(g, "post_list", jint(pl));
	json_object_set_new(g, "window", jint(1 + below(p, 4)));
	json_object_set_new(g, "sort", json_boolean(below(p, 2)));
	if (!below(p, 3))
		json_object_set_new(g, "direct", json_true());
	else
		json_object_set_new(g, "staging_bytes",
				    jint(pl * rb * (1 + below(p, 4))));
	json_object_set_new(g, "qp_timeout", jint(8 + below(p, 8)));
	/* Generous: 2000 rows one at a time over a 1 ms link take 2 s. */
	json_object_set_new(g, "timeout_ns", jint(10000000000ull));
	*rows_p = rows;
	return g;
}

static json_t *gen_batches(struct tv_prng *p, uint32_t nodes, uint64_t rows)
{
	static const char *const dists[] = { "uniform", "zipf", "sorted",
					     "boundary" };
	json_t *arr = json_array();
	uint64_t n = 1 + below(p, 6), at = 0;

	for (uint64_t i = 0; arr && i < n; i++) {
		json_t *b = json_object();

		at += below(p, 3) ? below(p, 200000) : 0;
		json_object_set_new(b, "node", jint(below(p, nodes)));
		json_object_set_new(b, "at_ns", jint(at));
		if (!below(p, 8)) {
			json_t *ids = json_array();

			for (uint64_t k = 0, m = 1 + below(p, 8); k < m; k++)
				json_array_append_new(ids, jint(below(p, rows)));
			json_object_set_new(b, "ids", ids);
		} else {
			json_object_set_new(b, "dist",
					    json_string(dists[below(p, 4)]));
			json_object_set_new(b, "count",
					    jint(tv_tb_gen_log_uniform(p, 1,
								       2000)));
			if (below(p, 4) == 0)
				json_object_set_new(b, "dups", json_true());
		}
		json_array_append_new(arr, b);
	}
	return arr;
}

int gw_generate(uint64_t seed, uint32_t without, json_t **sc_p)
{
	struct tv_prng p;
	json_t *sc = json_pack("{s:s,s:I}", "workload", "gather", "seed",
			       (json_int_t)seed), *sim;
	uint32_t nodes;
	uint64_t rows;
	int rc;

	if (!sc)
		return -ENOMEM;
	tv_prng_init(&p, seed ^ 0x676174686572ull); /* "gather" */
	nodes = 2 + (uint32_t)below(&p, 3);
	json_object_set_new(sc, "nodes", jint(nodes));
	json_object_set_new(sc, "gather", gen_gather(&p, nodes, &rows));
	sim = json_object();
	json_object_set_new(sim, "profile",
			    json_string(below(&p, 2) ? "mlx5" : "rxe"));
	if (!below(&p, 3))
		json_object_set_new(sim, "qp_op_ns", jint(below(&p, 500)));
	if (!below(&p, 3))
		json_object_set_new(sim, "post_ns", jint(below(&p, 1000)));
	/* Devices whose READ depth is not quiver's hard-coded 16. */
	if (!below(&p, 3))
		json_object_set_new(sim, "max_qp_rd_atom",
				    jint(8u << below(&p, 5)));
	/* Six batches of a node, one after another, may take a minute. */
	json_object_set_new(sim, "deadline_ns", jint(120000000000ull));
	json_object_set_new(sc, "sim", sim);
	if (!below(&p, 4))
		json_object_set_new(sc, "links", json_pack(
			"[{s:I,s:I,s:I}]", "from", (json_int_t)1, "to",
			(json_int_t)0, "latency_ns",
			(json_int_t)tv_tb_gen_log_uniform(&p, 1000, 500000)));
	json_object_set_new(sc, "batches", gen_batches(&p, nodes, rows));
	rc = tv_tb_swarm_gen_faults(&p, sc, without, 2000000,
				    &tv_gather_workload);
	if (rc) {
		json_decref(sc);
		return rc;
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
				   jint((uint64_t)json_integer_value(v) / 2));
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
