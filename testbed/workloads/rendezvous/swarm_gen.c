/*
 * The rendezvous workload's swarm generator (docs/swarm.md): a seed draws
 * a world, steps of transfers and (testbed/swarm_faults.c) a fault mix.
 * Every draw comes from tv_prng streams forked from the seed; nothing
 * else (no rand(), no clock), so a seed is a complete description of its
 * run.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/faults.h>
#include <tensorverbs/workload.h>
#include <tensorverbs/sim.h>
#include <tensorverbs/tensor.h>

#include <tensorverbs/workload.h>

#include "rv_workload.h"

#define GEN_MAX_NODES 5
#define GEN_MAX_STEPS 6
#define GEN_MAX_TRANSFERS 40      /* per step */
#define GEN_NAMES 16              /* tensor names per sender */
#define GEN_MAX_BYTES (1u << 20)
#define GEN_MAX_STRINGS 64

/*
 * Fault tolerance in every swarm run: the ACK timeout well above any
 * queueing a generated workload causes, generous retries, and a receive
 * deadline above (max_retries + 1) ACK timeouts, so that only a fault the
 * engine fails to handle can make a receive miss it.
 */
#define GEN_ACK_TIMEOUT_NS 20000000ull     /* 20 ms */
#define GEN_RECV_TIMEOUT_NS 2000000000ull  /* 2 s */
#define GEN_MAX_RETRIES 20
#define GEN_MAX_EVENTS 5000000ull

struct gen_last {
	json_t *send;              /* what (from, name) carried last, or NULL */
};

struct gen {
	struct tv_prng p;
	uint32_t nodes;
	uint64_t interval_ns;
	struct gen_last last[GEN_MAX_NODES][GEN_NAMES];
};

static uint64_t below(struct gen *g, uint64_t n)
{
	return tv_prng_below(&g->p, n);
}

static bool chance(struct gen *g, uint64_t num, uint64_t den)
{
	return below(g, den) < num;
}

/* Log-uniform in [lo, hi]: small values as likely as large decades. */
static uint64_t log_uniform(struct gen *g, uint64_t lo, uint64_t hi)
{
	return tv_tb_gen_log_uniform(&g->p, lo, hi);
}

static json_t *gen_link(struct gen *g)
{
	static const double bandwidths[] = { 0, 1.25e9, 2.5e9, 12.5e9, 1e11 };

	return json_pack("{s:I, s:f}", "latency_ns",
			 (json_int_t)log_uniform(g, 500, 100000),
			 "bandwidth_bytes_per_sec",
			 bandwidths[below(g, sizeof(bandwidths) /
					     sizeof(bandwidths[0]))]);
}

static int gen_links(struct gen *g, json_t *root)
{
	json_t *arr = json_array(), *o;
	uint32_t a = (uint32_t)below(g, g->nodes);
	uint32_t b = (a + 1 + (uint32_t)below(g, g->nodes - 1)) % g->nodes;
	int err = 0;

	if (!arr)
		return -ENOMEM;
	o = gen_link(g);
	if (o) {
		tv_ju_set(o, "from", json_integer(a), &err);
		tv_ju_set(o, "to", json_integer(b), &err);
		tv_ju_set(o, "symmetric", json_boolean(chance(g, 1, 2)), &err);
	}
	/* o is arr's and arr root's from here on, even when this fails. */
	tv_ju_push(arr, o, &err);
	tv_ju_set(root, "links", arr, &err);
	return err;
}

static json_t *gen_engine(struct gen *g)
{
	static const uint32_t depths[] = { 4, 5, 8, 16, 64 };
	static const uint32_t pools[] = { 0, 65536, 1u << 20 };
	uint32_t depth = depths[below(g, 5)], pool = pools[below(g, 3)];
	json_t *e;

	e = json_pack("{s:i, s:b, s:I, s:I, s:i, s:b}",
		      "queue_depth", depth,
		      "validate_checksum", chance(g, 1, 4),
		      "ack_timeout_ns", (json_int_t)GEN_ACK_TIMEOUT_NS,
		      "recv_timeout_ns", (json_int_t)GEN_RECV_TIMEOUT_NS,
		      "max_retries", GEN_MAX_RETRIES, "reconnect", 1);
	/* 0: the engine's default block size. */
	if (e && pool &&
	    json_object_set_new(e, "pool_block_bytes", json_integer(pool))) {
		json_decref(e);
		return NULL;
	}
	return e;
}

static int gen_world(struct gen *g, json_t *root)
{
	static const uint64_t intervals[] = { 200000, 1000000, 5000000 };
	json_t *sim;
	int err = 0;

	g->nodes = 2 + (uint32_t)below(g, GEN_MAX_NODES - 1);
	g->interval_ns = intervals[below(g, 3)];
	sim = json_pack("{s:I}", "max_events", (json_int_t)GEN_MAX_EVENTS);
	if (sim && chance(g, 1, 3))
		tv_ju_set(sim, "jitter_ns_max",
			  json_integer(1 + (json_int_t)below(g, 5000)), &err);
	/* sim goes in even after a failure: root owns it, no leak. */
	tv_ju_set(root, "nodes", json_integer(g->nodes), &err);
	tv_ju_set(root, "link", gen_link(g), &err);
	tv_ju_set(root, "sim", sim, &err);
	tv_ju_set(root, "engine", gen_engine(g), &err);
	tv_ju_set(root, "step_interval_ns",
		  json_integer((json_int_t)g->interval_ns), &err);
	if (err)
		return err;
	if (chance(g, 1, 4))
		return gen_links(g, root);
	return 0;
}

/* ---- tensors ------------------------------------------------------------ */

static const char *const gen_dtypes[] = {
	"float", "double", "int8", "int16", "int32", "int64", "uint8",
	"uint16", "uint32", "uint64", "bool", "half", "bfloat16", "string",
};
#define GEN_NDTYPES (sizeof(gen_dtypes) / sizeof(gen_dtypes[0]))

/* Elements split over rank dims (their product is close to n). */
static json_t *gen_shape(struct gen *g, uint64_t n)
{
	uint32_t rank = (uint32_t)below(g, 4);
	json_t *shape = json_array();
	int err = 0;

	if (!shape)
		return NULL;
	if (rank == 0 && n > 1)
		rank = 1;
	for (uint32_t i = 0; i < rank && !err; i++) {
		uint64_t d = i + 1 == rank ? n : 1 + below(g, n < 64 ? n : 64);

		if (i + 1 < rank)
			n = n / d ? n / d : 1;
		tv_ju_push(shape, json_integer((json_int_t)d), &err);
	}
	/* An empty tensor now and then: a zero anywhere in the shape. */
	if (!err && rank && chance(g, 1, 12) &&
	    json_array_set_new(shape, below(g, rank), json_integer(0)))
		err = -ENOMEM;
	if (err) {
		json_decref(shape);
		return NULL;
	}
	return shape;
}

static int gen_tensor(struct gen *g, json_t *s)
{
	const char *dt = gen_dtypes[below(g, GEN_NDTYPES)];
	enum tv_dtype dtype;
	uint64_t n;
	int err = 0;

	tv_dtype_from_name(dt, &dtype);
	tv_ju_set(s, "dtype", json_string(dt), &err);
	if (chance(g, 1, 12)) {
		tv_ju_set(s, "dead", json_true(), &err);
		return err;
	}
	if (dtype == TV_DT_STRING)
		n = below(g, GEN_MAX_STRINGS + 1);
	else
		n = log_uniform(g, 1, GEN_MAX_BYTES) / tv_dtype_size(dtype);
	tv_ju_set(s, "shape", gen_shape(g, n ? n : 1), &err);
	if (chance(g, 1, 5))
		tv_ju_set(s, "placement", json_string("device"), &err);
	else if (dtype != TV_DT_STRING && chance(g, 1, 8))
		tv_ju_set(s, "memory", json_string("unregistered"), &err);
	return err;
}

static int gen_error(struct gen *g, json_t *s, uint32_t from, uint64_t k)
{
	static const char *const codes[] = {
		"NOT_FOUND", "ABORTED", "INTERNAL", "RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION", "INVALID_ARGUMENT", "OUT_OF_RANGE",
		"UNAVAILABLE", "CANCELLED", "DATA_LOSS",
	};
	char msg[TV_STATUS_MSG_MAX + 1];
	json_t *err;

	if (chance(g, 1, 8)) {
		/* A long message, to the wire format's limit. */
		memset(msg, 'a' + (int)below(g, 26), TV_STATUS_MSG_MAX);
		msg[TV_STATUS_MSG_MAX] = '\0';
	} else {
		snprintf(msg, sizeof(msg), "swarm error %" PRIu64 " on node %u",
			 k, from);
	}
	err = json_pack("{s:s, s:s}", "code", codes[below(g, 10)], "message",
			msg);
	return json_object_set_new(s, "error", err) ? -ENOMEM : 0;
}

/* ---- steps -------------------------------------------------------------- */

/* A send of (from, name j): often what it carried last time (cache hit). */
static json_t *gen_send(struct gen *g, uint32_t from, uint32_t to,
			uint32_t j, uint64_t k)
{
	struct gen_last *last = &g->last[from][j];
	json_t *s;
	char name[16];
	int err = 0;

	snprintf(name, sizeof(name), "t%u", j);
	if (last->send && chance(g, 1, 2)) {
		s = json_deep_copy(last->send);
		if (s)
			tv_ju_set(s, "to", json_integer(to), &err);
	} else {
		s = json_pack("{s:i, s:i, s:s}", "from", from, "to", to,
			      "name", name);
		if (s)
			err = chance(g, 1, 12) ? gen_error(g, s, from, k) :
						 gen_tensor(g, s);
	}
	if (!s || err)
		goto nomem;
	/* A lost copy would skip the next cache-hit draw: another seed. */
	json_decref(last->send);
	last->send = json_deep_copy(s);
	if (!last->send)
		goto nomem;
	if (chance(g, 1, 2))
		tv_ju_set(s, "at_ns", json_integer(
			(json_int_t)below(g, g->interval_ns)), &err);
	if (err)
		goto nomem;
	return s;
nomem:
	json_decref(s);
	return NULL;
}

static json_t *gen_recv(struct gen *g, json_t *send)
{
	json_t *r = json_pack("{s:O, s:O, s:O, s:s}",
			      "node", json_object_get(send, "to"),
			      "from", json_object_get(send, "from"),
			      "name", json_object_get(send, "name"),
			      "expect", "any");
	int err = 0;

	if (!r)
		return NULL;
	if (chance(g, 1, 5))
		tv_ju_set(r, "placement", json_string("device"), &err);
	if (chance(g, 1, 2))
		tv_ju_set(r, "at_ns", json_integer(
			(json_int_t)below(g, g->interval_ns)), &err);
	if (err) {
		json_decref(r);
		return NULL;
	}
	return r;
}

static int gen_transfer(struct gen *g, json_t *sends, json_t *recvs,
			uint32_t *used, uint64_t k)
{
	uint32_t from = (uint32_t)below(g, g->nodes);
	uint32_t to = (from + 1 + (uint32_t)below(g, g->nodes - 1)) % g->nodes;
	uint32_t j = (uint32_t)below(g, GEN_NAMES);
	json_t *s;

	/* A sender's names are unique within a step. */
	if (used[from] & (1u << j))
		return 0;
	used[from] |= 1u << j;
	s = gen_send(g, from, to, j, k);
	if (!s || json_array_append_new(sends, s))
		return -ENOMEM;
	/* Now and then nobody asks: the tensor stays published. */
	if (chance(g, 1, 20))
		return 0;
	return json_array_append_new(recvs, gen_recv(g, s)) ? -ENOMEM : 0;
}

static json_t *gen_step(struct gen *g, uint64_t *k)
{
	uint32_t used[GEN_MAX_NODES] = { 0 };
	json_t *sends = json_array(), *recvs = json_array();
	uint64_t n = log_uniform(g, 1, GEN_MAX_TRANSFERS);
	int rc = 0;

	/* The first transfer cannot clash: every step has a send. */
	for (uint64_t i = 0; sends && recvs && !rc && i < n; i++)
		rc = gen_transfer(g, sends, recvs, used, (*k)++);
	/* A step cut short is another step: none at all. */
	if (rc) {
		json_decref(sends);
		json_decref(recvs);
		return NULL;
	}
	/* "o" takes sends and recvs, even NULL or on failure. */
	return json_pack("{s:o, s:o}", "sends", sends, "recvs", recvs);
}

static int gen_steps(struct gen *g, json_t *root)
{
	uint64_t nsteps = 1 + below(g, GEN_MAX_STEPS), k = 0;
	json_t *steps = json_array();
	int err = 0;

	if (!steps)
		return -ENOMEM;
	for (uint64_t i = 0; i < nsteps && !err; i++)
		tv_ju_push(steps, gen_step(g, &k), &err);
	tv_ju_set(root, "steps", steps, &err);
	return err;
}

int rv_generate(uint64_t seed, uint32_t without, json_t **sc_p)
{
	struct tv_prng root;
	struct gen g = { 0 };
	char name[48];
	json_t *sc;
	int rc;

	/* Separate streams: more steps never change the world's draws. */
	tv_prng_init(&root, seed ^ 0x7377617266ull);
	snprintf(name, sizeof(name), "swarm-%" PRIu64, seed);
	sc = json_pack("{s:s, s:s, s:I}", "name", name, "description",
		       "generated by tensorverbs swarm (docs/swarm.md)", "seed",
		       (json_int_t)seed);
	if (!sc)
		return -ENOMEM;
	tv_prng_fork(&root, &g.p);
	rc = gen_world(&g, sc);
	tv_prng_fork(&root, &g.p);
	if (!rc)
		rc = gen_steps(&g, sc);
	tv_prng_fork(&root, &g.p);
	if (!rc)
		rc = tv_tb_swarm_gen_faults(&g.p, sc, without,
					    json_array_size(json_object_get(sc, "steps")) *
					    g.interval_ns, &tv_rendezvous_workload);
	for (uint32_t a = 0; a < GEN_MAX_NODES; a++)
		for (uint32_t j = 0; j < GEN_NAMES; j++)
			json_decref(g.last[a][j].send);
	if (rc) {
		json_decref(sc);
		return rc;
	}
	*sc_p = sc;
	return 0;
}
