/*
 * The port workload's swarm generator and shrink edits (docs/swarm.md).
 *
 * A seed draws a world (2-5 nodes, a signal mode, a FIFO and CQ size, the
 * FIFO's visibility lag, the simulator's placement mode, sometimes a
 * device without atomics or a slow link), one to four programs of any
 * kind with sizes from tiny to tens of KiB, and a fault mix from the
 * points this workload may arm.  Shrinking drops programs, sequence
 * operations and fault rules, and makes sizes and counts smaller.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pt.h"

#define GEN_TIMEOUT_NS 1000000000ull /* generous: delays may pile up */

struct gen {
	struct tv_prng p;
	uint32_t nodes;
	int err;                   /* sticky: -ENOMEM once anything failed */
};

static uint64_t below(struct gen *g, uint64_t n)
{
	return tv_prng_below(&g->p, n);
}

static uint64_t pick(struct gen *g, const uint64_t *v, size_t n)
{
	return v[below(g, n)];
}

/*
 * Every value goes in through set or tv_ju_push, so that a failed
 * allocation anywhere shows in g->err, checked once in pt_generate: a
 * scenario missing a key would be another scenario.
 */
static void set(struct gen *g, json_t *o, const char *k, json_t *v)
{
	tv_ju_set(o, k, v, &g->err);
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

/* 2 or more distinct nodes, in a shuffled ring order. */
static json_t *gen_nodes(struct gen *g, uint32_t min)
{
	uint32_t ids[PT_MAX_NODES], n = min + (uint32_t)below(g, g->nodes -
							      min + 1);
	json_t *a = json_array();

	for (uint32_t i = 0; i < g->nodes; i++)
		ids[i] = i;
	for (uint32_t i = g->nodes - 1; i > 0; i--) {
		uint32_t j = (uint32_t)below(g, i + 1), t = ids[i];

		ids[i] = ids[j];
		ids[j] = t;
	}
	for (uint32_t i = 0; a && i < n; i++)
		tv_ju_push(a, jint(ids[i]), &g->err);
	return a;
}

static json_t *gen_pair(struct gen *g)
{
	uint64_t a = below(g, g->nodes);
	uint64_t b = (a + 1 + below(g, g->nodes - 1)) % g->nodes;

	return json_pack("[I,I]", (json_int_t)a, (json_int_t)b);
}

static json_t *gen_seq_op(struct gen *g, uint64_t bytes)
{
	static const char *const ops[] = {
		"put", "put", "put_with_signal", "put_with_signal",
		"put_with_signal_and_flush", "signal", "flush", "recycle",
	};
	const char *op = ops[below(g, 8)];
	json_t *o = json_pack("{s:s}", "op", op);
	uint64_t len, dst, src;

	if (!o || strncmp(op, "put", 3))
		return o;
	len = below(g, 4) ? tv_tb_gen_log_uniform(&g->p, 1, bytes) :
			    below(g, 2) * bytes;
	dst = below(g, bytes - len + 1) & ~7ull;
	src = below(g, bytes - len + 1);
	set(g, o, "dst_off", jint(dst));
	set(g, o, "src_off", jint(src));
	set(g, o, "bytes", jint(len));
	return o;
}

static json_t *gen_sequence(struct gen *g, json_t *p)
{
	uint32_t from = (uint32_t)below(g, g->nodes);
	uint32_t to = (from + 1 + (uint32_t)below(g, g->nodes - 1)) % g->nodes;
	uint64_t bytes = tv_tb_gen_log_uniform(&g->p, 64, 65536);
	json_t *ops = json_array();
	uint64_t n = 1 + below(g, 40);

	for (uint64_t i = 0; ops && i < n; i++)
		tv_ju_push(ops, gen_seq_op(g, bytes), &g->err);
	set(g, p, "from", jint(from));
	set(g, p, "to", jint(to));
	set(g, p, "bytes", jint(bytes));
	set(g, p, "ops", ops);
	return p;
}

static json_t *gen_program(struct gen *g)
{
	static const char *const kinds[PT_NKINDS] = {
		"ping_pong", "packet_ping_pong", "allgather", "allreduce",
		"all_to_all", "sequence",
	};
	uint64_t k = below(g, PT_NKINDS);
	json_t *p = json_pack("{s:s}", "kind", kinds[k]);

	if (!p)
		return NULL;
	if (below(g, 3) == 0)
		set(g, p, "start_ns", jint(below(g, 50000)));
	switch ((enum pt_kind)k) {
	case PT_PING_PONG:
		set(g, p, "nodes", gen_pair(g));
		set(g, p, "bytes", jint(below(g, 4) ? tv_tb_gen_log_uniform(
				&g->p, 1, 65536) : 0));
		set(g, p, "iters", jint(1 + below(g, 20)));
		set(g, p, "flush_every", jint(below(g, 5)));
		break;
	case PT_PACKET_PING_PONG: {
		bool ll8 = below(g, 2);
		uint64_t w = ll8 ? 4 : 8;

		set(g, p, "nodes", gen_pair(g));
		set(g, p, "bytes", jint(w * (1 + below(g, 128))));
		set(g, p, "iters", jint(1 + below(g, 20)));
		set(g, p, "format", json_string(ll8 ? "ll8" : "ll16"));
		set(g, p, "flush_every", jint(below(g, 8)));
		break;
	}
	case PT_ALLGATHER:
	case PT_ALL_TO_ALL:
		set(g, p, "nodes", gen_nodes(g, 2));
		set(g, p, "bytes",
		    jint(tv_tb_gen_log_uniform(&g->p, 1, 16384)));
		break;
	case PT_ALLREDUCE: {
		json_t *nodes = gen_nodes(g, 2);
		/* Before set: a failed set frees nodes. */
		size_t nn = json_array_size(nodes);

		set(g, p, "nodes", nodes);
		set(g, p, "count", jint(nn * tv_tb_gen_log_uniform(&g->p, 1,
								   2048)));
		break;
	}
	case PT_SEQUENCE:
		return gen_sequence(g, p);
	case PT_NKINDS:
		break;
	}
	return p;
}

static json_t *gen_port(struct gen *g)
{
	static const uint64_t fifo[] = { 2, 4, 16, 128 };
	static const uint64_t cq[] = { 16, 64, 1024 };
	static const uint64_t gap[] = { 1, 10, 100, 1000 };
	static const char *const sig[] = { "auto", "atomic", "write_imm" };
	json_t *o = json_object();

	if (!o)
		return NULL;
	set(g, o, "signal", json_string(sig[below(g, 3)]));
	set(g, o, "fifo_size", jint(pick(g, fifo, 4)));
	set(g, o, "cq_size", jint(pick(g, cq, 3)));
	set(g, o, "op_gap_ns", jint(pick(g, gap, 4)));
	set(g, o, "timeout_ns", jint(GEN_TIMEOUT_NS));
	if (below(g, 2))
		set(g, o, "lag_ns", json_pack("{s:I,s:I}", "min",
					      (json_int_t)0, "max", (json_int_t)
					      tv_tb_gen_log_uniform(&g->p, 1,
								    5000)));
	return o;
}

static json_t *gen_sim(struct gen *g, json_t *port)
{
	static const char *const pl[] = { "in_order", "random8", "block128" };
	json_t *o = json_pack("{s:s}", "placement", pl[below(g, 3)]);
	/* NULL only when port or its signal was lost (g->err is set). */
	const char *sig = json_string_value(json_object_get(port, "signal"));

	/* A device without atomics: the signal falls back (auto) or the
	 * scenario says write_imm; "atomic" there cannot work, not drawn. */
	if (o && below(g, 6) == 0 && sig && strcmp(sig, "atomic"))
		set(g, o, "atomics", json_false());
	return o;
}

static void mark_node(bool has[2], json_t *v)
{
	if (json_integer_value(v) < 2)
		has[json_integer_value(v)] = true;
}

/*
 * Does the program use both nodes 0 and 1 (the slow link's ends)?  No
 * allocation here: a failure could not be told from "no".
 */
static bool uses_slow_pair(json_t *p)
{
	json_t *nodes = json_object_get(p, "nodes"), *v;
	bool has[2] = { false, false };
	size_t i;

	if (!nodes) {
		/* A sequence: from and to; the rest default to every node. */
		if (!json_object_get(p, "from"))
			return true;
		mark_node(has, json_object_get(p, "from"));
		mark_node(has, json_object_get(p, "to"));
	}
	json_array_foreach(nodes, i, v)
		mark_node(has, v);
	return has[0] && has[1];
}

static bool delays_injected(json_t *sc)
{
	json_t *r;
	size_t i;

	json_array_foreach(json_object_get(sc, "faults"), i, r) {
		const char *p = json_string_value(json_object_get(r, "point"));

		if (p && (strstr(p, "delay") || strstr(p, "stall") ||
			  !strcmp(p, "node/crash")))
			return true;
	}
	return false;
}

/*
 * With a slow link between nodes 0 and 1, and nothing that delays on
 * purpose, the programs away from that link get deadlines a fast link
 * meets easily (300 us): a flush on the slow link must never hold them
 * up (MSCCL++ #802), and a proxy that blocks on it misses them.
 */
static int tight_deadlines(json_t *sc)
{
	json_t *links = json_object_get(sc, "links"), *p;
	json_t *port = json_object_get(sc, "port");
	size_t i;
	int err = 0;

	if (!links || delays_injected(sc) ||
	    json_integer_value(json_object_get(port, "cq_size")) < 64 ||
	    json_integer_value(json_object_get(json_array_get(links, 0),
					       "latency_ns")) < 200000)
		return 0;
	json_array_foreach(json_object_get(sc, "programs"), i, p)
		if (!uses_slow_pair(p))
			tv_ju_set(p, "timeout_ns", jint(300000), &err);
	return err;
}

/*
 * One seed in eight is a latency seed: no faults, at least three nodes, a
 * slow link between 0 and 1 with a flushing program on it, and the other
 * programs held to tight deadlines (tight_deadlines) - the pattern in
 * which a flush that blocks the proxy shows.
 */
static json_t *gen_latency_programs(struct gen *g)
{
	json_t *progs = json_array();
	json_t *slow = json_pack("{s:s,s:[I,I],s:I,s:I,s:I}", "kind",
				 "ping_pong", "nodes", (json_int_t)0,
				 (json_int_t)1, "bytes",
				 (json_int_t)tv_tb_gen_log_uniform(&g->p, 1,
								   65536),
				 "iters", (json_int_t)(1 + below(g, 4)),
				 "flush_every", (json_int_t)1);
	uint64_t n = 1 + below(g, 3);
	int err = 0;

	/* tv_ju_push takes slow and p even when progs is NULL: no leak. */
	tv_ju_push(progs, slow, &err);
	for (uint64_t i = 0; !err && i < n; i++) {
		json_t *p = json_pack("{s:s,s:[I,I],s:I,s:I,s:I}", "kind",
				      "ping_pong", "nodes",
				      (json_int_t)below(g, 2),
				      (json_int_t)(2 + below(g, g->nodes - 2)),
				      "bytes", (json_int_t)
				      tv_tb_gen_log_uniform(&g->p, 1, 8192),
				      "iters", (json_int_t)(2 + below(g, 20)),
				      "start_ns", (json_int_t)below(g, 20000));

		tv_ju_push(progs, p, &err);
	}
	if (err) {
		json_decref(progs);
		return NULL;
	}
	return progs;
}

int pt_generate(uint64_t seed, uint32_t without, json_t **sc_p)
{
	struct gen g = { .err = 0 };
	json_t *sc = json_pack("{s:s,s:I}", "workload", "port", "seed",
			       (json_int_t)seed), *progs, *port, *sim;
	bool latency;
	int rc;

	if (!sc)
		return -ENOMEM;
	tv_prng_init(&g.p, seed ^ 0x706f7274ull); /* "port" */
	latency = below(&g, 8) == 0;
	g.nodes = (latency ? 3 : 2) + (uint32_t)below(&g, latency ? 3 : 4);
	set(&g, sc, "nodes", jint(g.nodes));
	/* sim before port goes in: a failed set frees port. */
	port = gen_port(&g);
	sim = gen_sim(&g, port);
	set(&g, sc, "port", port);
	set(&g, sc, "sim", sim);
	/* A slow link between 0 and 1, often slow enough to matter. */
	if (latency || below(&g, 3) == 0)
		set(&g, sc, "links", json_pack("[{s:I,s:I,s:I}]", "from",
					   (json_int_t)0, "to", (json_int_t)1,
					   "latency_ns", (json_int_t)
					   tv_tb_gen_log_uniform(&g.p,
						   latency || below(&g, 2) ?
						   200000 : 1000, 2000000)));
	if (latency) {
		progs = gen_latency_programs(&g);
	} else {
		uint64_t n;

		progs = json_array();
		n = 1 + below(&g, 4);
		for (uint64_t i = 0; progs && i < n; i++)
			tv_ju_push(progs, gen_program(&g), &g.err);
	}
	set(&g, sc, "programs", progs);
	rc = g.err;
	if (!rc && !latency)
		rc = tv_tb_swarm_gen_faults(&g.p, sc, without, 2000000,
					    &tv_port_workload);
	if (!rc)
		rc = tight_deadlines(sc);
	if (rc) {
		json_decref(sc);
		return rc;
	}
	*sc_p = sc;
	return 0;
}

/* ---- shrink -------------------------------------------------------------------- */

static json_t *progs_of(json_t *sc)
{
	return json_object_get(sc, "programs");
}

static int edit_drop_program(json_t *sc, size_t i,
			     const struct tv_tb_shrink_state *cur)
{
	json_t *a = progs_of(sc);

	if (i >= json_array_size(a))
		return -ENOENT;
	if (json_array_size(a) < 2)
		return -EAGAIN;
	return json_array_remove(a, i) ? -ENOMEM : 0;
}

/* Place i: the i-th operation of all sequences together. */
static int edit_drop_seq_op(json_t *sc, size_t i,
			    const struct tv_tb_shrink_state *cur)
{
	json_t *p;
	size_t k;

	json_array_foreach(progs_of(sc), k, p) {
		json_t *ops = json_object_get(p, "ops");
		size_t n = json_array_size(ops);

		if (i < n)
			return n < 2 ? -EAGAIN :
			       json_array_remove(ops, i) ? -ENOMEM : 0;
		i -= n;
	}
	return -ENOENT;
}

/* Halve key (down to floor) of program i. */
static int halve(json_t *sc, size_t i, const char *key, uint64_t floor,
		 uint64_t unit)
{
	json_t *p = json_array_get(progs_of(sc), i), *v;
	uint64_t x;

	if (!p)
		return -ENOENT;
	v = json_object_get(p, key);
	if (!json_is_integer(v))
		return -EAGAIN;
	x = (uint64_t)json_integer_value(v);
	if (x <= floor)
		return -EAGAIN;
	x = x / 2 / unit * unit;
	/* Only the new integer allocates: -1 is its failure. */
	return json_object_set_new(p, key, jint(x < floor ? floor : x)) ?
	       -ENOMEM : 0;
}

static int edit_halve_iters(json_t *sc, size_t i,
			    const struct tv_tb_shrink_state *cur)
{
	return halve(sc, i, "iters", 1, 1);
}

static int edit_halve_bytes(json_t *sc, size_t i,
			    const struct tv_tb_shrink_state *cur)
{
	json_t *p = json_array_get(progs_of(sc), i);
	const char *k = json_string_value(json_object_get(p, "kind"));

	if (!p)
		return -ENOENT;
	/* Sequences name offsets inside "bytes"; packets want words. */
	if (k && !strcmp(k, "sequence"))
		return -EAGAIN;
	if (k && !strcmp(k, "packet_ping_pong"))
		return halve(sc, i, "bytes", 8, 8);
	return halve(sc, i, "bytes", 0, 1);
}

static int edit_fewer_nodes(json_t *sc, size_t i,
			    const struct tv_tb_shrink_state *cur)
{
	json_t *p = json_array_get(progs_of(sc), i), *nodes;
	const char *k;

	if (!p)
		return -ENOENT;
	nodes = json_object_get(p, "nodes");
	k = json_string_value(json_object_get(p, "kind"));
	if (json_array_size(nodes) < 3 || (k && !strcmp(k, "allreduce")))
		return -EAGAIN; /* allreduce's count is per node */
	/* A valid index: json_array_remove() cannot fail here. */
	json_array_remove(nodes, json_array_size(nodes) - 1);
	return 0;
}

static const struct tv_tb_shrink_edit pt_edit_list[] = {
	{ "drop a program", edit_drop_program },
	{ "drop a sequence operation", edit_drop_seq_op },
	{ "halve a program's iterations", edit_halve_iters },
	{ "halve a program's bytes", edit_halve_bytes },
	{ "take a node out of a program", edit_fewer_nodes },
};

const struct tv_tb_shrink_edit *const pt_edits[PT_NEDITS] = {
	&tv_tb_edit_pin_faults,
	&tv_tb_edit_drop_fault,
	&tv_tb_edit_lower_fault,
	&pt_edit_list[0], &pt_edit_list[1],
	&tv_tb_edit_aim_earlier,
	&pt_edit_list[2], &pt_edit_list[3], &pt_edit_list[4],
};

void pt_describe(json_t *sc, uint64_t ops, char *buf, size_t cap)
{
	snprintf(buf, cap, "%" PRIu64 " operations, %zu programs", ops,
		 json_array_size(progs_of(sc)));
}
