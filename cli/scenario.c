/*
 * Scenario parser, first half: the top level (nodes, links, simulator and
 * engine options, expected statistics) and loading.  See docs/scenarios.md.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/engine.h>

#include "plan.h"
#include "scenario_int.h"
#include "wire.h"

#define SC_MAX_NODES 256u
#define SC_DEFAULT_LATENCY_NS 2000ull
#define SC_DEFAULT_BANDWIDTH 12500000000ull /* 100 Gbit/s */
#define SC_DEFAULT_GRACE_NS 10000000000ull  /* 10 s after the last op */
#define SC_DEFAULT_MAX_EVENTS 500000000ull

static const char *const top_keys[] = {
	"name", "description", "seed", "nodes", "link", "links", "sim",
	"engine", "allow_error_completions", "step_interval_ns", "steps",
	"expect_stats", "faults", "expect_faults", "late_nodes", NULL
};
static const char *const link_keys[] = {
	"latency_ns", "bandwidth_bytes_per_sec", NULL
};
static const char *const link_override_keys[] = {
	"from", "to", "latency_ns", "bandwidth_bytes_per_sec", "symmetric",
	NULL
};
static const char *const sim_keys[] = {
	"jitter_ns_max", "deadline_ns", "max_events", NULL
};
static const char *const engine_keys[] = {
	"validate_checksum", "queue_depth", "pool_block_bytes",
	"ack_timeout_ns", "recv_timeout_ns", "max_retries", "reconnect", NULL
};
static const char *const late_keys[] = { "node", "start_ns", NULL };

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

static int parse_link_fields(struct ju_ctx *jc, const char *path, json_t *obj,
			     const struct tv_sim_link *def,
			     struct tv_sim_link *link_p)
{
	struct tv_sim_link link;

	if (ju_get_uint(jc, path, obj, "latency_ns", def->latency_ns,
			1000000000000ull, &link.latency_ns) ||
	    ju_get_uint(jc, path, obj, "bandwidth_bytes_per_sec",
			def->bytes_per_sec, UINT64_MAX, &link.bytes_per_sec))
		return -EINVAL;
	*link_p = link;
	return 0;
}

static int parse_links(struct ju_ctx *jc, json_t *arr, struct scenario *sc)
{
	char path[JU_PATH_MAX];
	json_t *v;
	size_t i;

	if (ju_need_array(jc, "$.links", arr))
		return -EINVAL;
	sc->links = calloc(json_array_size(arr) * 2 + 1, sizeof(*sc->links));
	if (!sc->links)
		return -ENOMEM;
	json_array_foreach(arr, i, v) {
		struct sc_link_override *o = &sc->links[sc->nlinks];
		uint64_t from, to;
		bool sym;

		ju_path_idx(path, "$.links", i);
		if (ju_need_object(jc, path, v) ||
		    ju_check_keys(jc, path, v, link_override_keys) ||
		    ju_need_uint(jc, path, v, "from", sc->nodes - 1, &from) ||
		    ju_need_uint(jc, path, v, "to", sc->nodes - 1, &to) ||
		    ju_get_bool(jc, path, v, "symmetric", true, &sym) ||
		    parse_link_fields(jc, path, v, &sc->link, &o->link))
			return -EINVAL;
		if (from == to)
			return ju_fail(jc, path, "'from' and 'to' are equal");
		o->from = (uint32_t)from;
		o->to = (uint32_t)to;
		sc->nlinks++;
		if (sym) {
			sc->links[sc->nlinks] = *o;
			sc->links[sc->nlinks].from = o->to;
			sc->links[sc->nlinks].to = o->from;
			sc->nlinks++;
		}
	}
	return 0;
}

/* Fault tolerance: each key remembered as given, or left to the runner. */
static int parse_engine_ft(struct ju_ctx *jc, json_t *eng,
			   struct scenario *sc)
{
	uint64_t v;

	sc->has_ack_timeout = json_object_get(eng, "ack_timeout_ns") != NULL;
	sc->has_recv_timeout = json_object_get(eng, "recv_timeout_ns") != NULL;
	sc->has_max_retries = json_object_get(eng, "max_retries") != NULL;
	sc->has_reconnect = json_object_get(eng, "reconnect") != NULL;
	if (ju_get_uint(jc, "$.engine", eng, "ack_timeout_ns", 0,
			UINT64_MAX / 4, &sc->ack_timeout_ns) ||
	    ju_get_uint(jc, "$.engine", eng, "recv_timeout_ns", 0,
			UINT64_MAX / 4, &sc->recv_timeout_ns) ||
	    ju_get_uint(jc, "$.engine", eng, "max_retries", 0, 1000000, &v) ||
	    ju_get_bool(jc, "$.engine", eng, "reconnect", false,
			&sc->reconnect))
		return -EINVAL;
	sc->max_retries = (uint32_t)v;
	return 0;
}

static int parse_options(struct ju_ctx *jc, json_t *root, struct scenario *sc)
{
	json_t *sim = json_object_get(root, "sim");
	json_t *eng = json_object_get(root, "engine");
	json_t *empty = json_object();
	uint64_t v;
	int rc = -EINVAL;

	if (!empty)
		return -ENOMEM;
	if ((sim && (ju_need_object(jc, "$.sim", sim) ||
		     ju_check_keys(jc, "$.sim", sim, sim_keys))) ||
	    (eng && (ju_need_object(jc, "$.engine", eng) ||
		     ju_check_keys(jc, "$.engine", eng, engine_keys))))
		goto out;
	sim = sim ? sim : empty;
	eng = eng ? eng : empty;
	if (ju_get_uint(jc, "$.sim", sim, "jitter_ns_max", 0, UINT32_MAX,
			&sc->jitter_ns_max) ||
	    ju_get_uint(jc, "$.sim", sim, "deadline_ns", 0, UINT64_MAX / 2,
			&sc->deadline_ns) ||
	    ju_get_uint(jc, "$.sim", sim, "max_events", SC_DEFAULT_MAX_EVENTS,
			UINT64_MAX, &sc->max_events) ||
	    ju_get_bool(jc, "$.engine", eng, "validate_checksum", false,
			&sc->validate_checksum) ||
	    ju_get_uint(jc, "$.engine", eng, "queue_depth", 0, 65536, &v) ||
	    ju_get_uint(jc, "$.engine", eng, "pool_block_bytes", 0,
			SC_MAX_TENSOR_BYTES * 4, &sc->pool_block_bytes) ||
	    parse_engine_ft(jc, eng, sc) ||
	    ju_get_bool(jc, "$", root, "allow_error_completions", false,
			&sc->allow_error_completions))
		goto out;
	sc->queue_depth = (uint32_t)v;
	rc = 0;
out:
	json_decref(empty);
	return rc;
}

static int parse_faults(struct ju_ctx *jc, json_t *root, struct scenario *sc)
{
	json_t *plan = json_object_get(root, "faults");
	char err[PLAN_ERR_MAX];

	if (!plan)
		return 0;
	if (plan_validate(plan, err, sizeof(err)))
		return ju_fail(jc, "$.faults", "%s", err);
	sc->faults = json_deep_copy(plan);
	return sc->faults ? 0 : -ENOMEM;
}

/* "expect_faults": {"point": N or {"min": A, "max": B}}. */
static int parse_expect_faults(struct ju_ctx *jc, json_t *root,
			       struct scenario *sc)
{
	json_t *obj = json_object_get(root, "expect_faults"), *v;
	char sub[JU_PATH_MAX];
	const char *point;
	size_t n = 0;

	if (!obj)
		return 0;
	if (ju_need_object(jc, "$.expect_faults", obj))
		return -EINVAL;
	sc->fault_expects = calloc(json_object_size(obj) + 1,
				   sizeof(*sc->fault_expects));
	if (!sc->fault_expects)
		return -ENOMEM;
	json_object_foreach(obj, point, v) {
		struct sc_fault_expect *fe = &sc->fault_expects[n];

		ju_path_key(sub, "$.expect_faults", point);
		if (!tv_flt_point_find(point))
			return ju_fail(jc, sub,
				       "unknown fault point (see: tensorverbs faults)");
		if (sc_parse_range(jc, sub, v, &fe->min, &fe->max))
			return -EINVAL;
		fe->point = strdup(point);
		if (!fe->point)
			return -ENOMEM;
		sc->nfault_expects = ++n;
	}
	return 0;
}

/* "late_nodes": [{"node", "start_ns"}]: channels connect then. */
static int parse_late_nodes(struct ju_ctx *jc, json_t *root,
			    struct scenario *sc)
{
	json_t *arr = json_object_get(root, "late_nodes"), *v;
	char path[JU_PATH_MAX];
	size_t i;

	sc->start_ns = calloc(sc->nodes, sizeof(*sc->start_ns));
	if (!sc->start_ns)
		return -ENOMEM;
	if (!arr)
		return 0;
	if (ju_need_array(jc, "$.late_nodes", arr))
		return -EINVAL;
	json_array_foreach(arr, i, v) {
		uint64_t node, start;

		ju_path_idx(path, "$.late_nodes", i);
		if (ju_need_object(jc, path, v) ||
		    ju_check_keys(jc, path, v, late_keys) ||
		    ju_need_uint(jc, path, v, "node", sc->nodes - 1, &node) ||
		    ju_need_uint(jc, path, v, "start_ns", UINT64_MAX / 4,
				 &start))
			return -EINVAL;
		if (sc->start_ns[node])
			return ju_fail(jc, path, "node %llu is late twice",
				       (unsigned long long)node);
		sc->start_ns[node] = start;
	}
	return 0;
}

/* A late node does nothing before it starts: it does not exist yet. */
static int check_late(struct ju_ctx *jc, const struct scenario *sc,
		      uint32_t node, uint64_t at_ns, const char *verb,
		      const char *name, uint64_t step_id)
{
	if (at_ns >= sc->start_ns[node])
		return 0;
	return ju_fail(jc, "$.late_nodes",
		       "node %u starts at %llu ns but %s '%s' of step %llu at %llu ns",
		       node, (unsigned long long)sc->start_ns[node], verb, name,
		       (unsigned long long)step_id, (unsigned long long)at_ns);
}

static int check_late_nodes(struct ju_ctx *jc, const struct scenario *sc)
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

static int parse_steps(struct ju_ctx *jc, json_t *root, struct scenario *sc)
{
	json_t *arr = json_object_get(root, "steps"), *v;
	uint64_t interval, start = 0;
	char path[JU_PATH_MAX];
	size_t i;
	int rc;

	if (!arr)
		return ju_fail(jc, "$", "missing required key 'steps'");
	if (ju_need_array(jc, "$.steps", arr) ||
	    ju_get_uint(jc, "$", root, "step_interval_ns",
			SC_DEFAULT_STEP_INTERVAL_NS, UINT32_MAX, &interval))
		return -EINVAL;
	json_array_foreach(arr, i, v) {
		ju_path_idx(path, "$.steps", i);
		if (json_is_object(v) &&
		    ju_get_uint(jc, path, v, "at_ns", i ? start + interval : 0,
				UINT64_MAX / 4, &start))
			return -EINVAL;
		rc = sc_parse_step(jc, path, v, sc, i + 1, start);
		if (rc)
			return rc;
		sc->nsteps++;
	}
	if (sc->nrecvs == 0 && sc->nsends == 0)
		return ju_fail(jc, "$.steps", "no sends and no recvs");
	return 0;
}

static int parse_top(struct ju_ctx *jc, json_t *root, struct scenario *sc)
{
	const struct tv_sim_link def = {
		.latency_ns = SC_DEFAULT_LATENCY_NS,
		.bytes_per_sec = SC_DEFAULT_BANDWIDTH,
	};
	json_t *v;
	uint64_t n;
	int rc;

	if (ju_need_object(jc, "$", root) ||
	    ju_check_keys(jc, "$", root, top_keys))
		return -EINVAL;
	if (ju_get_str(jc, "$", root, "name", false, &sc->name))
		return -EINVAL;
	v = json_object_get(root, "description");
	if (v && !json_is_string(v))
		return ju_fail(jc, "$.description", "must be a string");
	if (ju_get_uint(jc, "$", root, "seed", 1, UINT64_MAX, &sc->seed) ||
	    ju_need_uint(jc, "$", root, "nodes", SC_MAX_NODES, &n))
		return -EINVAL;
	if (n < 2)
		return ju_fail(jc, "$.nodes", "needs at least 2 nodes");
	sc->nodes = (uint32_t)n;
	sc->link = def;
	v = json_object_get(root, "link");
	if (v && (ju_need_object(jc, "$.link", v) ||
		  ju_check_keys(jc, "$.link", v, link_keys) ||
		  parse_link_fields(jc, "$.link", v, &def, &sc->link)))
		return -EINVAL;
	v = json_object_get(root, "links");
	if (v && (rc = parse_links(jc, v, sc)))
		return rc;
	rc = parse_options(jc, root, sc);
	if (!rc)
		rc = parse_faults(jc, root, sc);
	if (!rc)
		rc = parse_late_nodes(jc, root, sc);
	if (!rc)
		rc = parse_steps(jc, root, sc);
	if (!rc)
		rc = check_late_nodes(jc, sc);
	if (rc)
		return rc;
	v = json_object_get(root, "expect_stats");
	if (v && (rc = sc_parse_stats(jc, "$.expect_stats", v, sc)))
		return rc;
	rc = parse_expect_faults(jc, root, sc);
	if (rc)
		return rc;
	if (sc->deadline_ns == 0)
		sc->deadline_ns = sc->last_at_ns + SC_DEFAULT_GRACE_NS;
	return 0;
}

int scenario_from_json(json_t *root, const char *origin,
		       struct scenario **sc_p, char err[SC_ERR_MAX])
{
	struct ju_ctx jc = { .err = err, .err_len = SC_ERR_MAX };
	struct scenario *sc = calloc(1, sizeof(*sc));
	int rc;

	err[0] = '\0';
	if (!sc)
		return -ENOMEM;
	sc->origin = strdup(origin);
	rc = sc->origin ? parse_top(&jc, root, sc) : -ENOMEM;
	if (rc) {
		if (err[0] == '\0')
			snprintf(err, SC_ERR_MAX, "%s", strerror(-rc));
		scenario_free(sc);
		return rc;
	}
	if (!sc->name && !(sc->name = strdup(origin))) {
		scenario_free(sc);
		return -ENOMEM;
	}
	*sc_p = sc;
	return 0;
}

static int load_json(json_t *root, const json_error_t *jerr,
		     const char *origin, struct scenario **sc_p,
		     char err[SC_ERR_MAX])
{
	int rc;

	if (!root) {
		snprintf(err, SC_ERR_MAX, "%s:%d:%d: invalid JSON: %s", origin,
			 jerr->line, jerr->column, jerr->text);
		return -EINVAL;
	}
	rc = scenario_from_json(root, origin, sc_p, err);
	json_decref(root);
	return rc;
}

int scenario_load_file(const char *path, struct scenario **sc_p,
		       char err[SC_ERR_MAX])
{
	json_error_t jerr;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);

	return load_json(root, &jerr, path, sc_p, err);
}

int scenario_load_string(const char *text, const char *origin,
			 struct scenario **sc_p, char err[SC_ERR_MAX])
{
	json_error_t jerr;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);

	return load_json(root, &jerr, origin, sc_p, err);
}

void scenario_free(struct scenario *sc)
{
	if (!sc)
		return;
	for (size_t i = 0; i < sc->nsends; i++)
		sc_send_release(&sc->sends[i]);
	for (size_t i = 0; i < sc->nrecvs; i++)
		sc_recv_release(&sc->recvs[i]);
	for (size_t i = 0; i < sc->nstats; i++)
		free(sc->stats[i].path);
	for (size_t i = 0; i < sc->nfault_expects; i++)
		free(sc->fault_expects[i].point);
	free(sc->fault_expects);
	free(sc->start_ns);
	json_decref(sc->faults);
	free(sc->sends);
	free(sc->recvs);
	free(sc->stats);
	free(sc->links);
	free(sc->name);
	free(sc->origin);
	free(sc);
}

bool scenario_has_faults(const struct scenario *sc)
{
	return sc->faults && json_array_size(sc->faults) > 0;
}

int scenario_set_faults(struct scenario *sc, json_t *plan, bool replace)
{
	json_t *copy;

	assert(json_is_array(plan));
	if (replace || !sc->faults) {
		copy = json_deep_copy(plan);
		if (!copy)
			return -ENOMEM;
		json_decref(sc->faults);
		sc->faults = copy;
		return 0;
	}
	return plan_merge(sc->faults, plan);
}
