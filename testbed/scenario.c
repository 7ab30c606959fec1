/*
 * The scenario core (docs/scenarios.md): what every workload's scenario
 * shares (name, seed, nodes, links, the simulator's options, the fault
 * plan and its expectations, late nodes), then the workload's own keys,
 * parsed by the workload named in "workload" ("rendezvous" when absent).
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_int.h"

#define SC_MAX_NODES 256u
#define SC_DEFAULT_LATENCY_NS 2000ull
#define SC_DEFAULT_BANDWIDTH 12500000000ull /* 100 Gbit/s */
#define SC_DEFAULT_GRACE_NS 10000000000ull  /* 10 s after the last op */
#define SC_DEFAULT_MAX_EVENTS 500000000ull
#define SC_MAX_QP_OP_NS 1000000000ull /* 1 s per request: surely a typo */

const char *const tb_core_keys[] = {
	"workload", "name", "description", "seed", "nodes", "link", "links",
	"sim", "allow_error_completions", "faults", "expect_faults",
	"expect_corruption", "late_nodes", NULL
};
/* Link timing, jitter, late nodes: the simulator's alone. */
const char *const tb_core_hw_keys[] = {
	"workload", "name", "description", "seed", "nodes", "link", "sim",
	"faults", "expect_faults", NULL
};
static const char *const link_keys[] = {
	"latency_ns", "bandwidth_bytes_per_sec", NULL
};
static const char *const link_override_keys[] = {
	"from", "to", "latency_ns", "bandwidth_bytes_per_sec", "symmetric",
	NULL
};
static const char *const sim_keys[] = {
	"jitter_ns_max", "deadline_ns", "max_events", "placement", "atomics",
	"profile", "qp_op_ns", "post_ns", "max_qp_rd_atom", NULL
};
static const char *const late_keys[] = { "node", "start_ns", NULL };

static int parse_link_fields(struct tv_ju *jc, const char *path, json_t *obj,
			     const struct tv_sim_link *def,
			     struct tv_sim_link *link_p)
{
	struct tv_sim_link link;

	if (tv_ju_get_uint(jc, path, obj, "latency_ns", def->latency_ns,
			   1000000000000ull, &link.latency_ns) ||
	    tv_ju_get_uint(jc, path, obj, "bandwidth_bytes_per_sec",
			   def->bytes_per_sec, UINT64_MAX, &link.bytes_per_sec))
		return -EINVAL;
	*link_p = link;
	return 0;
}

static int parse_links(struct tv_ju *jc, json_t *arr, struct tv_tb_scenario *sc)
{
	char path[TV_JU_PATH_MAX];
	json_t *v;
	size_t i;

	if (tv_ju_need_array(jc, "$.links", arr))
		return -EINVAL;
	sc->links = calloc(json_array_size(arr) * 2 + 1, sizeof(*sc->links));
	if (!sc->links)
		return -ENOMEM;
	json_array_foreach(arr, i, v) {
		struct tb_link_override *o = &sc->links[sc->nlinks];
		uint64_t from, to;
		bool sym;

		tv_ju_path_idx(path, "$.links", i);
		if (tv_ju_need_object(jc, path, v) ||
		    tv_ju_check_keys(jc, path, v, link_override_keys) ||
		    tv_ju_need_uint(jc, path, v, "from", sc->nodes - 1, &from) ||
		    tv_ju_need_uint(jc, path, v, "to", sc->nodes - 1, &to) ||
		    tv_ju_get_bool(jc, path, v, "symmetric", true, &sym) ||
		    parse_link_fields(jc, path, v, &sc->link, &o->link))
			return -EINVAL;
		if (from == to)
			return tv_ju_fail(jc, path, "'from' and 'to' are equal");
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

/* "placement": "in_order" (default), "random8", "block128" (sim.h). */
static int parse_placement(struct tv_ju *jc, json_t *sim,
			   enum tv_sim_placement *placement_p)
{
	char *name = NULL;
	int rc;

	rc = tv_ju_get_str(jc, "$.sim", sim, "placement", false, &name);
	if (rc)
		return rc;
	if (!name) {
		*placement_p = TV_SIM_PLACE_IN_ORDER;
		return 0;
	}
	rc = tv_sim_placement_parse(name, placement_p);
	free(name);
	if (rc)
		return tv_ju_fail(jc, "$.sim.placement", "must be \"in_order\", "
				  "\"random8\" or \"block128\"");
	return 0;
}

/* "profile": "mlx5" (default) or "rxe" (sim.h). */
static int parse_profile(struct tv_ju *jc, json_t *sim,
			 enum tv_sim_profile *profile_p)
{
	char *name = NULL;
	int rc;

	rc = tv_ju_get_str(jc, "$.sim", sim, "profile", false, &name);
	if (rc)
		return rc;
	if (!name) {
		*profile_p = TV_SIM_PROFILE_MLX5;
		return 0;
	}
	rc = tv_sim_profile_parse(name, profile_p);
	free(name);
	if (rc)
		return tv_ju_fail(jc, "$.sim.profile",
				  "must be \"mlx5\" or \"rxe\"");
	return 0;
}

static int parse_sim(struct tv_ju *jc, json_t *root, struct tv_tb_scenario *sc)
{
	json_t *sim = json_object_get(root, "sim");
	json_t *empty = json_object();
	bool atomics = true;
	int rc = -EINVAL;

	if (!empty)
		return -ENOMEM;
	if (sim && (tv_ju_need_object(jc, "$.sim", sim) ||
		    tv_ju_check_keys(jc, "$.sim", sim, sim_keys)))
		goto out;
	sim = sim ? sim : empty;
	if (tv_ju_get_uint(jc, "$.sim", sim, "jitter_ns_max", 0, UINT32_MAX,
			   &sc->jitter_ns_max) ||
	    tv_ju_get_uint(jc, "$.sim", sim, "deadline_ns", 0, UINT64_MAX / 2,
			   &sc->deadline_ns) ||
	    tv_ju_get_uint(jc, "$.sim", sim, "max_events",
			   SC_DEFAULT_MAX_EVENTS, UINT64_MAX, &sc->max_events) ||
	    tv_ju_get_bool(jc, "$", root, "allow_error_completions", false,
			   &sc->allow_error_completions) ||
	    tv_ju_get_bool(jc, "$.sim", sim, "atomics", true, &atomics) ||
	    tv_ju_get_uint(jc, "$.sim", sim, "qp_op_ns", 0, SC_MAX_QP_OP_NS,
			   &sc->qp_op_ns) ||
	    tv_ju_get_uint(jc, "$.sim", sim, "post_ns", 0, SC_MAX_QP_OP_NS,
			   &sc->post_ns) ||
	    tv_ju_get_uint(jc, "$.sim", sim, "max_qp_rd_atom", 0, 128,
			   &sc->max_qp_rd_atom) ||
	    parse_placement(jc, sim, &sc->placement) ||
	    parse_profile(jc, sim, &sc->profile))
		goto out;
	sc->no_atomics = !atomics;
	rc = 0;
out:
	json_decref(empty);
	return rc;
}

static int parse_faults(struct tv_ju *jc, json_t *root,
			struct tv_tb_scenario *sc)
{
	json_t *plan = json_object_get(root, "faults");
	char err[TV_TB_PLAN_ERR_MAX] = "";
	json_t *r;
	size_t i;
	int rc;

	if (!plan)
		return 0;
	rc = tv_tb_plan_validate(plan, err, sizeof(err));
	if (rc == -ENOMEM)
		return rc;
	if (rc)
		return tv_ju_fail(jc, "$.faults", "%s", err);
	json_array_foreach(plan, i, r) {
		const char *p = json_string_value(json_object_get(r, "point"));
		const struct tv_flt_point_info *info = tv_flt_point_find(p);
		char path[TV_JU_PATH_MAX];

		tv_ju_path_idx(path, "$.faults", i);
		if (!tv_tb_workload_has_point(sc->ops, p))
			return tv_ju_fail(jc, path, "%s belongs to the %s "
					  "workload, not to %s", p,
					  info ? info->workload : "?",
					  sc->ops->name);
	}
	sc->faults = json_deep_copy(plan);
	return sc->faults ? 0 : -ENOMEM;
}

/* "expect_faults": {"point": N or {"min": A, "max": B}}. */
static int parse_expect_faults(struct tv_ju *jc, json_t *root,
			       struct tv_tb_scenario *sc)
{
	json_t *obj = json_object_get(root, "expect_faults"), *v;
	char sub[TV_JU_PATH_MAX];
	const char *point;
	size_t n = 0;

	if (!obj)
		return 0;
	if (tv_ju_need_object(jc, "$.expect_faults", obj))
		return -EINVAL;
	sc->fault_expects = calloc(json_object_size(obj) + 1,
				   sizeof(*sc->fault_expects));
	if (!sc->fault_expects)
		return -ENOMEM;
	json_object_foreach(obj, point, v) {
		struct tb_fault_expect *fe = &sc->fault_expects[n];

		tv_ju_path_key(sub, "$.expect_faults", point);
		if (!tv_flt_point_find(point))
			return tv_ju_fail(jc, sub,
					  "unknown fault point (see: tensorverbs faults)");
		if (tv_ju_range(jc, sub, v, &fe->min, &fe->max))
			return -EINVAL;
		fe->point = strdup(point);
		if (!fe->point)
			return -ENOMEM;
		sc->nfault_expects = ++n;
	}
	return 0;
}

/*
 * "expect_corruption": {"detected": N or {"min", "max"}, "undetected":
 * ...}: what the corruptions that fired came to (docs/faults.md).  A key
 * left out is 0 (none of that kind).
 */
static int parse_expect_corruption(struct tv_ju *jc, json_t *root,
				   struct tv_tb_scenario *sc)
{
	static const char *const keys[] = { "detected", "undetected", NULL };
	json_t *obj = json_object_get(root, "expect_corruption"), *v;

	if (!obj)
		return 0;
	if (tv_ju_need_object(jc, "$.expect_corruption", obj) ||
	    tv_ju_check_keys(jc, "$.expect_corruption", obj, keys))
		return -EINVAL;
	sc->has_corrupt_expect = true;
	v = json_object_get(obj, "detected");
	if (v && tv_ju_range(jc, "$.expect_corruption.detected", v,
			     &sc->detected_min, &sc->detected_max))
		return -EINVAL;
	v = json_object_get(obj, "undetected");
	if (v && tv_ju_range(jc, "$.expect_corruption.undetected", v,
			     &sc->undetected_min, &sc->undetected_max))
		return -EINVAL;
	return 0;
}

/* "late_nodes": [{"node", "start_ns"}]: the node starts then. */
static int parse_late_nodes(struct tv_ju *jc, json_t *root,
			    struct tv_tb_scenario *sc)
{
	json_t *arr = json_object_get(root, "late_nodes"), *v;
	char path[TV_JU_PATH_MAX];
	size_t i;

	sc->start_ns = calloc(sc->nodes, sizeof(*sc->start_ns));
	if (!sc->start_ns)
		return -ENOMEM;
	if (!arr)
		return 0;
	if (tv_ju_need_array(jc, "$.late_nodes", arr))
		return -EINVAL;
	json_array_foreach(arr, i, v) {
		uint64_t node, start;

		tv_ju_path_idx(path, "$.late_nodes", i);
		if (tv_ju_need_object(jc, path, v) ||
		    tv_ju_check_keys(jc, path, v, late_keys) ||
		    tv_ju_need_uint(jc, path, v, "node", sc->nodes - 1, &node) ||
		    tv_ju_need_uint(jc, path, v, "start_ns", UINT64_MAX / 4,
				    &start))
			return -EINVAL;
		if (sc->start_ns[node])
			return tv_ju_fail(jc, path, "node %llu is late twice",
					  (unsigned long long)node);
		sc->start_ns[node] = start;
	}
	return 0;
}

/* Which workload: "workload" names one of the registry. */
static int parse_workload(struct tv_ju *jc, json_t *root,
			  struct tv_tb_scenario *sc)
{
	json_t *v = json_object_get(root, "workload");
	const struct tv_tb_workload_ops *const *all;
	char known[160] = "";
	size_t n, used = 0;

	if (!v) {
		sc->ops = tv_tb_workload_default();
		return 0;
	}
	sc->ops = json_is_string(v) ? tv_tb_workload_find(json_string_value(v)) :
				      NULL;
	if (sc->ops)
		return 0;
	all = tv_tb_workloads(&n);
	for (size_t i = 0; i < n && used < sizeof(known); i++)
		used += (size_t)snprintf(known + used, sizeof(known) - used,
					 "%s%s", i ? ", " : "", all[i]->name);
	if (!json_is_string(v))
		return tv_ju_fail(jc, "$.workload",
				  "must be a workload name (known: %s)", known);
	return tv_ju_fail(jc, "$.workload", "unknown workload '%s' (known: %s)",
			  json_string_value(v), known);
}

/*
 * The core's keys and the workload's: nothing else at the top.  The table
 * is as long as the two lists (a workload may declare any number: a
 * fixed one dropped the last keys, which were then refused as unknown).
 */
static int check_top_keys(struct tv_ju *jc, json_t *root,
			  const struct tv_tb_workload_ops *ops)
{
	const char **keys;
	size_t n = 0, cap = 1;
	int rc;

	for (const char *const *k = tb_core_keys; *k; k++)
		cap++;
	for (const char *const *k = ops->keys; k && *k; k++)
		cap++;
	keys = malloc(cap * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (const char *const *k = tb_core_keys; *k; k++)
		keys[n++] = *k;
	for (const char *const *k = ops->keys; k && *k; k++)
		keys[n++] = *k;
	keys[n] = NULL;
	assert(n + 1 == cap);
	rc = tv_ju_check_keys(jc, "$", root, keys);
	free(keys);
	return rc;
}

static int parse_world(struct tv_ju *jc, json_t *root,
		       struct tv_tb_scenario *sc)
{
	const struct tv_sim_link def = {
		.latency_ns = SC_DEFAULT_LATENCY_NS,
		.bytes_per_sec = SC_DEFAULT_BANDWIDTH,
	};
	json_t *v;
	uint64_t n;
	int rc;

	rc = tv_ju_get_str(jc, "$", root, "name", false, &sc->name);
	if (rc)
		return rc;
	v = json_object_get(root, "description");
	if (v && !json_is_string(v))
		return tv_ju_fail(jc, "$.description", "must be a string");
	if (tv_ju_get_uint(jc, "$", root, "seed", 1, UINT64_MAX, &sc->seed) ||
	    tv_ju_need_uint(jc, "$", root, "nodes", SC_MAX_NODES, &n))
		return -EINVAL;
	if (n < 2)
		return tv_ju_fail(jc, "$.nodes", "needs at least 2 nodes");
	sc->nodes = (uint32_t)n;
	sc->link = def;
	v = json_object_get(root, "link");
	if (v && (tv_ju_need_object(jc, "$.link", v) ||
		  tv_ju_check_keys(jc, "$.link", v, link_keys) ||
		  parse_link_fields(jc, "$.link", v, &def, &sc->link)))
		return -EINVAL;
	v = json_object_get(root, "links");
	return v ? parse_links(jc, v, sc) : 0;
}

static int parse_top(struct tv_ju *jc, json_t *root, struct tv_tb_scenario *sc)
{
	int rc;

	if (tv_ju_need_object(jc, "$", root))
		return -EINVAL;
	rc = parse_workload(jc, root, sc);
	if (!rc)
		rc = check_top_keys(jc, root, sc->ops);
	if (!rc)
		rc = parse_world(jc, root, sc);
	if (!rc)
		rc = parse_sim(jc, root, sc);
	if (!rc)
		rc = parse_faults(jc, root, sc);
	if (!rc)
		rc = parse_late_nodes(jc, root, sc);
	/* The workload's keys: what every node does, and when. */
	if (!rc)
		rc = sc->ops->parse(jc, root, sc, &sc->wl);
	if (!rc)
		rc = parse_expect_faults(jc, root, sc);
	if (!rc)
		rc = parse_expect_corruption(jc, root, sc);
	if (rc)
		return rc;
	if (sc->deadline_ns == 0)
		sc->deadline_ns = sc->last_at_ns + SC_DEFAULT_GRACE_NS;
	return 0;
}

int tv_tb_scenario_from_json(json_t *root, const char *origin,
			     struct tv_tb_scenario **sc_p,
			     char err[TV_TB_ERR_MAX])
{
	struct tv_ju jc = { .err = err, .err_len = TV_TB_ERR_MAX };
	struct tv_tb_scenario *sc = calloc(1, sizeof(*sc));
	int rc = -ENOMEM;

	err[0] = '\0';
	if (!sc)
		goto fail;
	sc->json = json_incref(root);
	sc->origin = strdup(origin);
	if (sc->origin)
		rc = parse_top(&jc, root, sc);
	if (!rc && !sc->name && !(sc->name = strdup(origin)))
		rc = -ENOMEM;
	if (!rc) {
		*sc_p = sc;
		return 0;
	}
	tv_tb_scenario_free(sc);
fail:
	/* Every failure says why, out of memory too. */
	if (err[0] == '\0')
		snprintf(err, TV_TB_ERR_MAX, "%s", strerror(-rc));
	return rc;
}

static int load_json(json_t *root, const json_error_t *jerr,
		     const char *origin, struct tv_tb_scenario **sc_p,
		     char err[TV_TB_ERR_MAX])
{
	int rc;

	if (!root) {
		rc = tb_json_load_errno(jerr);
		if (rc == -ENOMEM)
			snprintf(err, TV_TB_ERR_MAX, "%s: %s", origin,
				 strerror(ENOMEM));
		else
			snprintf(err, TV_TB_ERR_MAX, "%s:%d:%d: invalid JSON: %s",
				 origin, jerr->line, jerr->column, jerr->text);
		return rc;
	}
	rc = tv_tb_scenario_from_json(root, origin, sc_p, err);
	json_decref(root);
	return rc;
}

int tv_tb_scenario_load_file(const char *path, struct tv_tb_scenario **sc_p,
			     char err[TV_TB_ERR_MAX])
{
	json_error_t jerr;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES |
				      JSON_ALLOW_NUL, &jerr);

	return load_json(root, &jerr, path, sc_p, err);
}

int tv_tb_scenario_load_string(const char *text, const char *origin,
			       struct tv_tb_scenario **sc_p,
			       char err[TV_TB_ERR_MAX])
{
	json_error_t jerr;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES |
				  JSON_ALLOW_NUL, &jerr);

	return load_json(root, &jerr, origin, sc_p, err);
}

void tv_tb_scenario_free(struct tv_tb_scenario *sc)
{
	if (!sc)
		return;
	if (sc->wl && sc->ops->scenario_free)
		sc->ops->scenario_free(sc->wl);
	for (size_t i = 0; i < sc->nfault_expects; i++)
		free(sc->fault_expects[i].point);
	free(sc->fault_expects);
	free(sc->start_ns);
	json_decref(sc->faults);
	json_decref(sc->json);
	free(sc->links);
	free(sc->name);
	free(sc->origin);
	free(sc);
}

bool tv_tb_scenario_has_faults(const struct tv_tb_scenario *sc)
{
	return sc->faults && json_array_size(sc->faults) > 0;
}

json_t *tv_tb_scenario_faults(const struct tv_tb_scenario *sc)
{
	return sc->faults;
}

int tv_tb_scenario_set_faults(struct tv_tb_scenario *sc, json_t *plan,
			      bool replace)
{
	json_t *copy;

	assert(!plan || json_is_array(plan));
	if (!plan) {
		json_decref(sc->faults);
		sc->faults = NULL;
		return 0;
	}
	if (replace || !sc->faults) {
		copy = json_deep_copy(plan);
		if (!copy)
			return -ENOMEM;
		json_decref(sc->faults);
		sc->faults = copy;
		return 0;
	}
	return tb_plan_merge(sc->faults, plan);
}

const char *tv_tb_scenario_name(const struct tv_tb_scenario *sc)
{
	return sc->name;
}

const char *tv_tb_scenario_origin(const struct tv_tb_scenario *sc)
{
	return sc->origin;
}

uint64_t tv_tb_scenario_seed(const struct tv_tb_scenario *sc)
{
	return sc->seed;
}

uint32_t tv_tb_scenario_nodes(const struct tv_tb_scenario *sc)
{
	return sc->nodes;
}

uint64_t tv_tb_scenario_ops(const struct tv_tb_scenario *sc)
{
	return sc->nops;
}

const struct tv_tb_workload_ops *
tv_tb_scenario_workload(const struct tv_tb_scenario *sc)
{
	return sc->ops;
}

json_t *tv_tb_scenario_json(const struct tv_tb_scenario *sc)
{
	return sc->json;
}

uint64_t tv_tb_scenario_start_ns(const struct tv_tb_scenario *sc,
				 uint32_t node)
{
	assert(node < sc->nodes);
	return sc->start_ns[node];
}

bool tv_tb_scenario_allow_errors(const struct tv_tb_scenario *sc)
{
	return sc->allow_error_completions;
}

const void *tv_tb_scenario_wl(const struct tv_tb_scenario *sc)
{
	return sc->wl;
}

void tv_tb_scenario_note_time(struct tv_tb_scenario *sc, uint64_t at_ns)
{
	if (at_ns > sc->last_at_ns)
		sc->last_at_ns = at_ns;
}

void tv_tb_scenario_set_ops(struct tv_tb_scenario *sc, uint64_t ops)
{
	sc->nops = ops;
}
