/*
 * The rendezvous scenario's top level (docs/scenarios.md): engine options,
 * steps (scenario_step.c), expect_stats (stats.c), and the check that a
 * late node does nothing before it starts.  The testbed parsed the core
 * keys before (nodes, links, faults, late_nodes).
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/engine.h>

#include "rv_scenario_int.h"

static const char *const engine_keys[] = {
	"validate_checksum", "queue_depth", "pool_block_bytes",
	"max_recv_bytes", "ack_timeout_ns", "recv_timeout_ns", "max_retries", "reconnect", NULL
};

int scenario_num_elements(const struct tv_shape *shape, uint64_t *n_p)
{
	uint64_t n = 1;

	for (uint32_t i = 0; i < shape->rank; i++) {
		if (shape->dims[i] < 0)
			return -EINVAL;
		if (__builtin_mul_overflow(n, (uint64_t)shape->dims[i], &n) ||
		    n > INT64_MAX)
			return -EOVERFLOW;
	}
	*n_p = n;
	return 0;
}

/* Fault tolerance: each key remembered as given, or left to the runner. */
static int parse_engine_ft(struct tv_ju *jc, json_t *eng,
			   struct scenario *sc)
{
	uint64_t v;

	sc->has_ack_timeout = json_object_get(eng, "ack_timeout_ns") != NULL;
	sc->has_recv_timeout = json_object_get(eng, "recv_timeout_ns") != NULL;
	sc->has_max_retries = json_object_get(eng, "max_retries") != NULL;
	sc->has_reconnect = json_object_get(eng, "reconnect") != NULL;
	if (tv_ju_get_uint(jc, "$.engine", eng, "ack_timeout_ns", 0,
			   UINT64_MAX / 4, &sc->ack_timeout_ns) ||
	    tv_ju_get_uint(jc, "$.engine", eng, "recv_timeout_ns", 0,
			   UINT64_MAX / 4, &sc->recv_timeout_ns) ||
	    tv_ju_get_uint(jc, "$.engine", eng, "max_retries", 0, 1000000,
			   &v) ||
	    tv_ju_get_bool(jc, "$.engine", eng, "reconnect", false,
			   &sc->reconnect))
		return -EINVAL;
	sc->max_retries = (uint32_t)v;
	return 0;
}

static int parse_engine(struct tv_ju *jc, json_t *root, struct scenario *sc)
{
	json_t *eng = json_object_get(root, "engine");
	json_t *empty = json_object();
	uint64_t v;
	int rc = -EINVAL;

	if (!empty)
		return -ENOMEM;
	if (eng && (tv_ju_need_object(jc, "$.engine", eng) ||
		    tv_ju_check_keys(jc, "$.engine", eng, engine_keys)))
		goto out;
	eng = eng ? eng : empty;
	if (tv_ju_get_bool(jc, "$.engine", eng, "validate_checksum", false,
			   &sc->validate_checksum) ||
	    tv_ju_get_uint(jc, "$.engine", eng, "queue_depth", 0, 65536, &v) ||
	    tv_ju_get_uint(jc, "$.engine", eng, "pool_block_bytes", 0,
			   SC_MAX_TENSOR_BYTES * 4, &sc->pool_block_bytes) ||
	    tv_ju_get_uint(jc, "$.engine", eng, "max_recv_bytes", 0,
			   UINT64_MAX, &sc->max_recv_bytes) ||
	    parse_engine_ft(jc, eng, sc))
		goto out;
	sc->queue_depth = (uint32_t)v;
	rc = 0;
out:
	json_decref(empty);
	return rc;
}

/* A late node does nothing before it starts: it does not exist yet. */
static int check_late(struct tv_ju *jc, const struct scenario *sc,
		      uint32_t node, uint64_t at_ns, const char *verb,
		      const char *name, uint64_t step_id)
{
	if (at_ns >= sc->start_ns[node])
		return 0;
	return tv_ju_fail(jc, "$.late_nodes",
			  "node %u starts at %llu ns but %s '%s' of step %llu at %llu ns",
			  node, (unsigned long long)sc->start_ns[node], verb,
			  name, (unsigned long long)step_id,
			  (unsigned long long)at_ns);
}

static int check_late_nodes(struct tv_ju *jc, const struct scenario *sc)
{
	int ret = 0;

	for (size_t i = 0; i < sc->nsends && !ret; i++)
		ret = check_late(jc, sc, sc->sends[i].from, sc->sends[i].at_ns,
				 "publishes", sc->sends[i].name,
				 sc->sends[i].step_id);
	for (size_t i = 0; i < sc->nrecvs && !ret; i++)
		ret = check_late(jc, sc, sc->recvs[i].node, sc->recvs[i].at_ns,
				 "receives", sc->recvs[i].name,
				 sc->recvs[i].step_id);
	return ret;
}

static int parse_steps(struct tv_ju *jc, json_t *root, struct scenario *sc)
{
	json_t *arr = json_object_get(root, "steps"), *v;
	uint64_t interval, start = 0;
	char path[TV_JU_PATH_MAX];
	size_t i;
	int rc;

	if (!arr)
		return tv_ju_fail(jc, "$", "missing required key 'steps'");
	if (tv_ju_need_array(jc, "$.steps", arr) ||
	    tv_ju_get_uint(jc, "$", root, "step_interval_ns",
			   SC_DEFAULT_STEP_INTERVAL_NS, UINT32_MAX, &interval))
		return -EINVAL;
	json_array_foreach(arr, i, v) {
		tv_ju_path_idx(path, "$.steps", i);
		if (json_is_object(v) &&
		    tv_ju_get_uint(jc, path, v, "at_ns", i ? start + interval : 0,
				   UINT64_MAX / 4, &start))
			return -EINVAL;
		rc = sc_parse_step(jc, path, v, sc, i + 1, start);
		if (rc)
			return rc;
		sc->nsteps++;
	}
	if (sc->nrecvs == 0 && sc->nsends == 0)
		return tv_ju_fail(jc, "$.steps", "no sends and no recvs");
	return 0;
}

static int parse_all(struct tv_ju *jc, json_t *root, struct scenario *sc)
{
	json_t *v;
	int rc;

	rc = parse_engine(jc, root, sc);
	if (!rc)
		rc = parse_steps(jc, root, sc);
	if (!rc)
		rc = check_late_nodes(jc, sc);
	if (rc)
		return rc;
	v = json_object_get(root, "expect_stats");
	return v ? sc_parse_stats(jc, "$.expect_stats", v, sc) : 0;
}

int rv_scenario_parse(struct tv_ju *jc, json_t *root,
		      struct tv_tb_scenario *core, void **wl_p)
{
	struct scenario *sc = calloc(1, sizeof(*sc));
	int rc;

	if (!sc)
		return -ENOMEM;
	sc->core = core;
	sc->nodes = tv_tb_scenario_nodes(core);
	sc->start_ns = calloc(sc->nodes, sizeof(*sc->start_ns));
	if (!sc->start_ns) {
		free(sc);
		return -ENOMEM;
	}
	for (uint32_t n = 0; n < sc->nodes; n++)
		sc->start_ns[n] = tv_tb_scenario_start_ns(core, n);
	rc = parse_all(jc, root, sc);
	sc->core = NULL;
	if (rc) {
		rv_scenario_free(sc);
		return rc;
	}
	tv_tb_scenario_set_ops(core, sc->nrecvs);
	*wl_p = sc;
	return 0;
}

void rv_scenario_free(void *wl)
{
	struct scenario *sc = wl;

	if (!sc)
		return;
	for (size_t i = 0; i < sc->nsends; i++)
		sc_send_release(&sc->sends[i]);
	for (size_t i = 0; i < sc->nrecvs; i++)
		sc_recv_release(&sc->recvs[i]);
	for (size_t i = 0; i < sc->nstats; i++)
		free(sc->stats[i].path);
	free(sc->sends);
	free(sc->recvs);
	free(sc->stats);
	free(sc->start_ns);
	free(sc);
}
