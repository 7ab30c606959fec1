/*
 * The gather workload's scenario keys (docs/gather.md): "gather" (the
 * tensor, the engine's configuration, each gather's deadline) and
 * "batches" (who gathers which ids, when).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gw.h"

#define GW_DEFAULT_TIMEOUT_NS 100000000ull /* 100 ms a gather */

const char *const gw_dist_names[GW_NDISTS] = {
	[GW_IDS] = "ids", [GW_UNIFORM] = "uniform", [GW_ZIPF] = "zipf",
	[GW_SORTED] = "sorted", [GW_BOUNDARY] = "boundary",
};

static const char *const gather_keys[] = {
	"rows", "row_bytes", "replicated_rows", "qps_per_peer", "post_list",
	"window", "sort", "staging_bytes", "direct", "max_retries",
	"timeout_ns", "qp_timeout", "qp_retry_cnt", "zero_every", NULL
};

static const char *const batch_keys[] = {
	"node", "at_ns", "ids", "dist", "count", "zipf_s", "dups", NULL
};

static int parse_sizes(struct tv_ju *jc, json_t *g, struct gw_scenario *sc)
{
	struct tv_gather_config *c = &sc->cfg;
	uint64_t rows, rb, rep, zero;

	if (tv_ju_get_uint(jc, "$.gather", g, "rows", 4096, 1ull << 32,
			   &rows) ||
	    tv_ju_get_uint(jc, "$.gather", g, "row_bytes", 256, 1u << 16,
			   &rb) ||
	    tv_ju_get_uint(jc, "$.gather", g, "replicated_rows", 0, 1ull << 32,
			   &rep) ||
	    tv_ju_get_uint(jc, "$.gather", g, "zero_every", 0, 1ull << 32,
			   &zero))
		return -EINVAL;
	if (!rows || !rb)
		return tv_ju_fail(jc, !rows ? "$.gather.rows" :
				  "$.gather.row_bytes", "must be > 0");
	if (rep >= rows)
		return tv_ju_fail(jc, "$.gather.replicated_rows",
				  "must be below rows (%llu)",
				  (unsigned long long)rows);
	if ((rows - rep) < sc->nodes)
		return tv_ju_fail(jc, "$.gather.rows", "%llu rows outside the "
				  "replicated ones leave a node of %u without "
				  "a row", (unsigned long long)(rows - rep),
				  sc->nodes);
	if (rows * rb > (1ull << 32))
		return tv_ju_fail(jc, "$.gather.rows", "rows x row_bytes is "
				  "above 4 GiB");
	c->rows = rows;
	c->row_bytes = (uint32_t)rb;
	c->replicated_rows = rep;
	sc->zero_every = (uint32_t)zero;
	return 0;
}

static int parse_engine(struct tv_ju *jc, json_t *g, struct gw_scenario *sc)
{
	struct tv_gather_config *c = &sc->cfg;
	uint64_t qps, pl, win, stg, ret, to, t, rc;

	if (tv_ju_get_uint(jc, "$.gather", g, "qps_per_peer", 8, 64, &qps) ||
	    tv_ju_get_uint(jc, "$.gather", g, "post_list", 128, 4096, &pl) ||
	    tv_ju_get_uint(jc, "$.gather", g, "window", 2, 64, &win) ||
	    tv_ju_get_uint(jc, "$.gather", g, "staging_bytes", 0, 1ull << 30,
			   &stg) ||
	    tv_ju_get_uint(jc, "$.gather", g, "max_retries", 3, 100, &ret) ||
	    tv_ju_get_uint(jc, "$.gather", g, "timeout_ns",
			   GW_DEFAULT_TIMEOUT_NS, 3600000000000ull, &to) ||
	    tv_ju_get_uint(jc, "$.gather", g, "qp_timeout", 14, 31, &t) ||
	    tv_ju_get_uint(jc, "$.gather", g, "qp_retry_cnt", 7, 7, &rc) ||
	    tv_ju_get_bool(jc, "$.gather", g, "sort", false, &c->sort_ids) ||
	    tv_ju_get_bool(jc, "$.gather", g, "direct", false, &sc->direct))
		return -EINVAL;
	if (!qps || !pl || !win)
		return tv_ju_fail(jc, "$.gather", "qps_per_peer, post_list and "
				  "window must be > 0");
	c->qps_per_peer = (uint32_t)qps;
	c->post_list = (uint32_t)pl;
	c->window = (uint32_t)win;
	c->staging_bytes = stg;
	c->max_retries = (uint32_t)ret;
	c->qp_timeout = (uint8_t)t;
	c->qp_retry_cnt = (uint8_t)rc;
	sc->timeout_ns = to;
	return 0;
}

static int parse_gather(struct tv_ju *jc, json_t *root, struct gw_scenario *sc)
{
	json_t *g = json_object_get(root, "gather");
	json_t *empty = json_object();
	int rc = -EINVAL;

	if (!empty)
		return -ENOMEM;
	tv_gather_config_default(&sc->cfg);
	sc->cfg.nodes = sc->nodes;
	if (g && (tv_ju_need_object(jc, "$.gather", g) ||
		  tv_ju_check_keys(jc, "$.gather", g, gather_keys)))
		goto out;
	g = g ? g : empty;
	rc = parse_sizes(jc, g, sc);
	if (!rc)
		rc = parse_engine(jc, g, sc);
out:
	json_decref(empty);
	return rc;
}

static int parse_ids(struct tv_ju *jc, const char *path, json_t *arr,
		     const struct gw_scenario *sc, struct gw_batch *b)
{
	json_t *v;
	size_t i;

	if (tv_ju_need_array(jc, path, arr))
		return -EINVAL;
	if (json_array_size(arr) > GW_MAX_BATCH)
		return tv_ju_fail(jc, path, "at most %u ids", GW_MAX_BATCH);
	b->ids = calloc(json_array_size(arr) + 1, sizeof(*b->ids));
	if (!b->ids)
		return -ENOMEM;
	json_array_foreach(arr, i, v) {
		char el[TV_JU_PATH_MAX];

		tv_ju_path_idx(el, path, i);
		/* An id out of range is the engine's to refuse: let it. */
		if (tv_ju_uint(jc, el, v, UINT64_MAX >> 1, &b->ids[i]))
			return -EINVAL;
	}
	b->count = (uint32_t)json_array_size(arr);
	(void)sc;
	return 0;
}

static int parse_dist(struct tv_ju *jc, const char *path, json_t *bj,
		      struct gw_batch *b)
{
	char *s = NULL;
	json_t *zs = json_object_get(bj, "zipf_s");
	int rc = 0;

	rc = tv_ju_get_str(jc, path, bj, "dist", false, &s);
	if (rc)
		return rc;
	b->dist = GW_UNIFORM;
	for (int d = GW_UNIFORM; s && d < GW_NDISTS; d++)
		if (!strcmp(s, gw_dist_names[d]))
			b->dist = (enum gw_dist)d;
	if (s && strcmp(s, gw_dist_names[b->dist]))
		rc = tv_ju_fail(jc, path, "dist: must be \"uniform\", \"zipf\", "
				"\"sorted\" or \"boundary\"");
	free(s);
	b->zipf_s = 1.0;
	if (!rc && zs) {
		if (!json_is_number(zs) || !(json_number_value(zs) > 0.0) ||
		    json_number_value(zs) > 4.0)
			return tv_ju_fail(jc, path, "zipf_s: must be a number "
					  "in (0, 4]");
		b->zipf_s = json_number_value(zs);
	}
	return rc;
}

static int parse_batch(struct tv_ju *jc, const char *path, json_t *bj,
		       struct gw_scenario *sc, struct gw_batch *b)
{
	json_t *ids = json_object_get(bj, "ids");
	char sub[TV_JU_PATH_MAX];
	uint64_t node, count;

	if (tv_ju_need_object(jc, path, bj) ||
	    tv_ju_check_keys(jc, path, bj, batch_keys) ||
	    tv_ju_get_uint(jc, path, bj, "node", 0, sc->nodes - 1, &node) ||
	    tv_ju_get_uint(jc, path, bj, "at_ns", 0, 3600000000000ull,
			   &b->at_ns) ||
	    tv_ju_get_bool(jc, path, bj, "dups", false, &b->dups))
		return -EINVAL;
	b->node = (uint32_t)node;
	if (ids) {
		if (json_object_get(bj, "dist") || json_object_get(bj, "count"))
			return tv_ju_fail(jc, path, "\"ids\" or \"dist\" and "
					  "\"count\", not both");
		tv_ju_path_key(sub, path, "ids");
		b->dist = GW_IDS;
		return parse_ids(jc, sub, ids, sc, b);
	}
	if (tv_ju_get_uint(jc, path, bj, "count", 256, GW_MAX_BATCH, &count))
		return -EINVAL;
	b->count = (uint32_t)count;
	return parse_dist(jc, path, bj, b);
}

static int parse_batches(struct tv_ju *jc, json_t *root,
			 struct gw_scenario *sc)
{
	json_t *arr = json_object_get(root, "batches"), *bj;
	size_t i;
	int rc;

	if (!arr)
		return tv_ju_fail(jc, "$.batches", "is required");
	if (tv_ju_need_array(jc, "$.batches", arr))
		return -EINVAL;
	sc->batches = calloc(json_array_size(arr) + 1, sizeof(*sc->batches));
	if (!sc->batches)
		return -ENOMEM;
	json_array_foreach(arr, i, bj) {
		char path[TV_JU_PATH_MAX];

		tv_ju_path_idx(path, "$.batches", i);
		sc->nbatches = i + 1;
		rc = parse_batch(jc, path, bj, sc, &sc->batches[i]);
		if (rc)
			return rc;
		if (sc->batches[i].count > sc->max_count)
			sc->max_count = sc->batches[i].count;
	}
	return 0;
}

void gw_scenario_free(void *wl)
{
	struct gw_scenario *sc = wl;

	if (!sc)
		return;
	for (size_t i = 0; i < sc->nbatches; i++)
		free(sc->batches[i].ids);
	free(sc->batches);
	free(sc);
}

int gw_scenario_parse(struct tv_ju *jc, json_t *root,
		      struct tv_tb_scenario *core, void **wl_p)
{
	struct gw_scenario *sc = calloc(1, sizeof(*sc));
	uint64_t last = 0;
	int rc;

	if (!sc)
		return -ENOMEM;
	sc->nodes = tv_tb_scenario_nodes(core);
	if (sc->nodes < 2 || sc->nodes > GW_MAX_NODES) {
		rc = tv_ju_fail(jc, "$.nodes", "the gather workload takes 2 to "
				"%u nodes", GW_MAX_NODES);
		goto err;
	}
	rc = parse_gather(jc, root, sc);
	if (!rc)
		rc = parse_batches(jc, root, sc);
	if (rc)
		goto err;
	for (size_t i = 0; i < sc->nbatches; i++)
		if (sc->batches[i].at_ns > last)
			last = sc->batches[i].at_ns;
	tv_tb_scenario_note_time(core, last);
	tv_tb_scenario_set_ops(core, sc->nbatches);
	*wl_p = sc;
	return 0;
err:
	gw_scenario_free(sc);
	return rc;
}
