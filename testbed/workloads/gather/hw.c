/*
 * The gather workload on real verbs (`tensorverbs serve`, workload.h "real
 * verbs"): this process is one node, a server of its partition (passive:
 * its responder QPs post nothing) and a client of its own batches.  The
 * partition handle and every QP endpoint go to the peers over the
 * coordinator (tv_tb_hw_allgather), decoded as the hostile bytes they
 * are; the QPs are then connected directly (RTR/RTS with the peer's GID).
 *
 * Each time point runs this node's batches of that time, one after
 * another, and checks every row against the owner's (the rows are a
 * function of the run's seed and the id, the same in every process).
 * There is no reconnect across processes: a QP that fails stays down and
 * its post lists move to the peer's other QPs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tensorverbs/ibverbs.h>

#include "gw.h"
#include "le.h"   /* engine/: little-endian bytes */

#define GH_MAGIC 0x47485654u      /* "TVHG" */
#define GH_VERSION 1u
#define GH_HEAD_BYTES (16u + TV_GATHER_HANDLE_BYTES)
#define GH_EP_BYTES TV_TB_EP_BYTES
#define GH_MSG_MAX 256

enum { S_GATHERS, S_OK, S_ROWS, S_FAILED, S_BAD, S_N };

struct gh {
	struct tv_tb_hw *hw;
	const struct gw_scenario *sc;
	uint32_t me;
	uint64_t seed;
	struct tv_tb_hw_device d;
	struct tv_vf_connect_cfg connect;
	struct tv_gather_ctx *ctx;
	uint8_t *part;
	uint8_t *out;
	uint64_t *ids;
	uint8_t *failed;
	/* this node's books */
	uint64_t gathers, gathers_ok, rows, rows_failed, rows_bad, bytes;
	uint64_t elapsed_ns;
	struct tv_gather_stats st;  /* the engine's, kept past close */
	/* every node's, on node 0 */
	bool have_all;
	uint64_t all[S_N];           /* summed over the nodes */
};

/* ---- the set-up blob ------------------------------------------------------ */

static size_t blob_len(uint32_t nodes, uint32_t qps)
{
	return GH_HEAD_BYTES + (size_t)nodes * qps * 2 * GH_EP_BYTES;
}

/* Entry of (peer, k, role) in a blob: its offset. */
static size_t ep_off(uint32_t qps, uint32_t peer, uint32_t k,
		     enum tv_gather_role role)
{
	return GH_HEAD_BYTES + (((size_t)peer * qps + k) * 2 + role) *
				       GH_EP_BYTES;
}

int gw_blob_make(struct tv_gather_ctx *ctx, uint32_t me, uint32_t nodes,
		 uint32_t qps, uint8_t **blob_p, size_t *len_p)
{
	size_t len = blob_len(nodes, qps);
	struct tv_gather_part_handle ph;
	uint8_t *b = calloc(1, len);
	int ret = 0;

	if (!b)
		return -ENOMEM;
	tv_le_put(b, GH_MAGIC, 4);
	tv_le_put(b + 4, GH_VERSION, 4);
	tv_le_put(b + 8, me, 4);
	tv_le_put(b + 12, qps, 4);
	tv_gather_part_handle(ctx, &ph);
	tv_gather_handle_encode(&ph, b + 16, TV_GATHER_HANDLE_BYTES);
	for (uint32_t p = 0; !ret && p < nodes; p++)
		for (uint32_t k = 0; p != me && !ret && k < qps; k++)
			for (int role = 0; !ret && role < 2; role++) {
				struct tv_vf_qp_endpoint ep;

				ret = tv_gather_qp_endpoint(ctx, p, k, role,
							    &ep);
				if (!ret)
					tv_tb_ep_put(b + ep_off(qps, p, k,
								role), &ep);
			}
	if (ret) {
		free(b);
		return ret;
	}
	*blob_p = b;
	*len_p = len;
	return 0;
}

int gw_blob_apply(struct tv_gather_ctx *ctx, uint32_t me, uint32_t nodes,
		  uint32_t qps, uint32_t p, const uint8_t *b, size_t len,
		  char *msg, size_t cap)
{
	struct tv_gather_part_handle ph;
	int ret;

	if (len != blob_len(nodes, qps) || tv_le_get(b, 4) != GH_MAGIC ||
	    tv_le_get(b + 4, 4) != GH_VERSION || tv_le_get(b + 8, 4) != p ||
	    tv_le_get(b + 12, 4) != qps) {
		snprintf(msg, cap, "node %u's set-up data is not ours (%zu "
			 "bytes, wrong magic, version, node or QP count)", p,
			 len);
		return -EPROTO;
	}
	ret = tv_gather_handle_decode(b + 16, TV_GATHER_HANDLE_BYTES, &ph);
	if (!ret)
		ret = tv_gather_set_peer(ctx, &ph);
	if (ret) {
		snprintf(msg, cap, "node %u's partition handle: %s", p,
			 tv_gather_error(ctx)[0] ? tv_gather_error(ctx) :
			 "malformed");
		return -EPROTO;
	}
	for (uint32_t k = 0; k < qps; k++)
		for (int role = 0; role < 2; role++) {
			struct tv_vf_qp_endpoint ep;

			/* Our client k talks to its server k, and back. */
			if (tv_tb_ep_get(b + ep_off(qps, me, k, !role), &ep)) {
				snprintf(msg, cap, "node %u's endpoint %u is "
					 "malformed", p, k);
				return -EPROTO;
			}
			ret = tv_gather_qp_connect(ctx, p, k, role, &ep);
			if (ret) {
				snprintf(msg, cap, "%s", tv_gather_error(ctx));
				return ret;
			}
		}
	return 0;
}

/* ---- open, connect, close -------------------------------------------------- */

static int open_engine(struct gh *h, char *msg, size_t cap)
{
	const struct gw_scenario *sc = h->sc;
	struct tv_gather_config cfg = sc->cfg;
	size_t out_bytes = (sc->max_count ? sc->max_count : 1) *
			   (size_t)sc->cfg.row_bytes;
	char why[200] = "";
	int ret;

	cfg.node_id = h->me;
	tv_ibv_connect_cfg(h->d.base, &h->connect);
	cfg.connect = &h->connect;
	h->part = calloc(1, tv_gather_part_bytes(&cfg, h->me));
	h->out = calloc(1, out_bytes);
	h->ids = calloc(sc->max_count + 1, sizeof(*h->ids));
	h->failed = calloc(sc->max_count + 1, 1);
	if (!h->part || !h->out || !h->ids || !h->failed)
		return -ENOMEM;
	gw_fill_part(sc, h->seed, h->me, h->part);
	ret = tv_gather_ctx_create(h->d.dev, &cfg, h->part, why, sizeof(why),
				   &h->ctx);
	if (!ret && sc->direct)
		ret = tv_gather_out_register(h->ctx, h->out, out_bytes);
	if (ret)
		snprintf(msg, cap, "the gather engine: %s%s%s", strerror(-ret),
			 why[0] ? ": " : "", why);
	return ret;
}

static int gh_open(struct tv_tb_hw *hw, void **st_p, char *msg, size_t cap)
{
	struct gh *h = calloc(1, sizeof(*h));
	int ret;

	if (!h)
		return -ENOMEM;
	*st_p = h;
	h->hw = hw;
	h->sc = tv_tb_scenario_wl(tv_tb_hw_scenario(hw));
	h->me = tv_tb_hw_node(hw);
	h->seed = tv_tb_hw_seed(hw);
	ret = tv_tb_hw_open_device(hw, &h->d, msg, cap);
	if (!ret)
		ret = open_engine(h, msg, cap);
	return ret;
}

static int gh_connect(struct tv_tb_hw *hw, void *st)
{
	struct gh *h = st;
	uint8_t *mine = NULL, **all = NULL;
	size_t len = 0, *lens = NULL;
	char msg[GH_MSG_MAX] = "";
	int ret = gw_blob_make(h->ctx, h->me, h->sc->nodes,
			       h->sc->cfg.qps_per_peer, &mine, &len);

	if (!ret)
		ret = tv_tb_hw_allgather(hw, mine, len, &all, &lens);
	for (uint32_t p = 0; !ret && p < h->sc->nodes; p++)
		if (p != h->me)
			ret = gw_blob_apply(h->ctx, h->me, h->sc->nodes,
					    h->sc->cfg.qps_per_peer, p, all[p],
					    lens[p], msg, sizeof(msg));
	if (ret)
		tv_tb_hw_fail(hw, TV_TB_FK_RUNNER, "set-up: %s",
			      msg[0] ? msg : strerror(-ret));
	for (uint32_t n = 0; all && n < h->sc->nodes; n++)
		free(all[n]);
	free(all);
	free(lens);
	free(mine);
	return ret;
}

static int gh_close(struct tv_tb_hw *hw, void *st)
{
	struct gh *h = st;
	int ret;

	(void)hw;
	if (h->ctx)
		tv_gather_stats(h->ctx, &h->st);
	ret = tv_gather_ctx_destroy(h->ctx);
	if (!ret)
		h->ctx = NULL;
	tv_tb_hw_close_device(&h->d, !ret);
	return ret;
}

static void gh_state_free(void *st)
{
	struct gh *h = st;

	free(h->part);
	free(h->out);
	free(h->ids);
	free(h->failed);
	free(h);
}

/* ---- the loop --------------------------------------------------------------- */

static int gh_progress(struct tv_tb_hw *hw, void *st)
{
	struct gh *h = st;

	(void)hw;
	return h->ctx ? tv_gather_progress(h->ctx) : 0;
}

static void gh_sleep(struct tv_tb_hw *hw, void *st, uint64_t until_ns,
		     struct pollfd *extra, unsigned nextra)
{
	struct gh *h = st;

	(void)hw;
	tv_tb_hw_sleep_device(h->d.dev, until_ns, extra, nextra);
}

static int gh_times(struct tv_tb_hw *hw, void *st, uint64_t **times_p,
		    size_t *n_p)
{
	struct gh *h = st;
	uint64_t *t = calloc(h->sc->nbatches + 1, sizeof(*t));
	size_t n = 0;

	(void)hw;
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < h->sc->nbatches; i++)
		n = tv_tb_times_add(t, n, h->sc->batches[i].at_ns);
	*times_p = t;
	*n_p = n;
	return 0;
}

struct gh_wait {
	struct gh *h;
	const struct tv_gather_result *res;
	int rc;
};

static bool cond_ended(void *ctx, uint64_t arg)
{
	struct gh_wait *w = ctx;

	(void)arg;
	w->rc = tv_gather_test(w->h->ctx, &w->res);
	return w->rc != -EAGAIN;
}

static void batch_check(struct gh *h, size_t b, const struct gh_wait *w)
{
	const struct gw_batch *bt = &h->sc->batches[b];
	uint64_t zero = 0;
	long bad;

	memset(h->failed, 0, bt->count);
	for (size_t e = 0; e < w->res->failed_rows; e++)
		if (w->res->errors[e].index < bt->count)
			h->failed[w->res->errors[e].index] = 1;
	h->rows_failed += w->res->failed_rows;
	if (w->res->failed_rows && !tv_tb_hw_recovering(h->hw))
		tv_tb_hw_fail(h->hw, TV_TB_FK_OUTCOME, "batch %zu: %zu rows "
			      "failed without a fault (first: id %" PRIu64
			      ", status %d, cause %d)", b,
			      w->res->failed_rows, w->res->errors[0].id,
			      w->res->errors[0].status,
			      w->res->errors[0].cause);
	bad = gw_first_bad_row(h->sc, h->seed, h->ids, bt->count, h->out,
			       h->failed, false, &zero);
	if (bad >= 0) {
		h->rows_bad++;
		tv_tb_hw_fail(h->hw, TV_TB_FK_DATA, "invariant: batch %zu: row "
			      "%ld (id %" PRIu64 ") was delivered as good but "
			      "is not node %u's row", b, bad, h->ids[bad],
			      tv_gather_owner(&h->sc->cfg, h->ids[bad]));
	}
}

static int batch_run(struct gh *h, size_t b)
{
	const struct gw_batch *bt = &h->sc->batches[b];
	struct gh_wait w = { .h = h };
	size_t bad = 0;
	int rc;

	gw_batch_ids(h->sc, h->seed, b, h->ids);
	memset(h->out, 0, (size_t)bt->count * h->sc->cfg.row_bytes);
	h->gathers++;
	rc = tv_gather_start(h->ctx, h->ids, bt->count, h->out,
			     tv_vf_now_ns(h->d.dev) + h->sc->timeout_ns, &bad);
	if (rc == -ERANGE)
		return 0; /* refused before anything was posted: as it must */
	if (rc) {
		tv_tb_hw_fail(h->hw, TV_TB_FK_RUNNER, "batch %zu: start: %s",
			      b, strerror(-rc));
		return rc;
	}
	rc = tv_tb_hw_wait(h->hw, cond_ended, &w, 0, "a gather to end");
	if (rc)
		return rc;
	h->rows += w.res->rows;
	h->gathers_ok += w.rc == 0;
	h->elapsed_ns += w.res->elapsed_ns;
	h->bytes += (uint64_t)(w.res->rows - w.res->failed_rows) *
		    h->sc->cfg.row_bytes;
	batch_check(h, b, &w);
	return 0;
}

static int gh_time_point(struct tv_tb_hw *hw, void *st, uint64_t t)
{
	struct gh *h = st;
	int rc = 0;

	(void)hw;
	for (size_t b = 0; !rc && b < h->sc->nbatches; b++)
		if (h->sc->batches[b].node == h->me &&
		    h->sc->batches[b].at_ns == t)
			rc = batch_run(h, b);
	return rc;
}

/* Servers are passive: they stay until every client is done. */
static int gh_finish(struct tv_tb_hw *hw, void *st)
{
	(void)st;
	return tv_tb_hw_barrier(hw, "every node's gathers to end");
}

static void gh_quiesce(struct tv_tb_hw *hw, void *st)
{
	(void)hw;
	(void)st;
}

/* ---- what is reported ----------------------------------------------------------- */

static void gh_stats(struct tv_tb_hw *hw, void *st, uint64_t *v)
{
	struct gh *h = st;

	(void)hw;
	v[S_GATHERS] = h->gathers;
	v[S_OK] = h->gathers_ok;
	v[S_ROWS] = h->rows;
	v[S_FAILED] = h->rows_failed;
	v[S_BAD] = h->rows_bad;
}

static void gh_check_end(struct tv_tb_hw *hw, void *st,
			 const uint64_t *const *all)
{
	struct gh *h = st;

	(void)hw;
	if (!all)
		return;
	tv_tb_hw_stats_sum(all, h->sc->nodes, S_N, h->all);
	h->have_all = true;
}

static void gh_summary(struct tv_tb_hw *hw, void *st, FILE *out)
{
	struct gh *h = st;
	struct tv_gather_stats s = h->st;
	double secs = (double)h->elapsed_ns / 1e9;

	(void)hw;
	if (h->ctx)
		tv_gather_stats(h->ctx, &s);
	fprintf(out, "%" PRIu64 "/%" PRIu64 " gathers ok here, %" PRIu64
		" rows (%" PRIu64 " by %" PRIu64 " READs, %" PRIu64
		" failed), %.1f MB/s", h->gathers_ok, h->gathers, h->rows,
		s.rows_remote, s.reads_posted, h->rows_failed,
		secs > 0 ? (double)h->bytes / secs / 1e6 : 0.0);
	if (h->have_all)
		fprintf(out, "; all nodes: %" PRIu64 "/%" PRIu64 " gathers, %"
			PRIu64 " rows, %" PRIu64 " failed, %" PRIu64 " wrong",
			h->all[S_OK], h->all[S_GATHERS], h->all[S_ROWS],
			h->all[S_FAILED], h->all[S_BAD]);
}

const struct tv_tb_hw_ops gw_hw_ops = {
	.open = gh_open,
	.close = gh_close,
	.state_free = gh_state_free,
	.connect = gh_connect,
	.progress = gh_progress,
	.sleep = gh_sleep,
	.times = gh_times,
	.time_point = gh_time_point,
	.finish = gh_finish,
	.quiesce = gh_quiesce,
	.nstats = S_N,
	.stats = gh_stats,
	.check_end = gh_check_end,
	.summary = gh_summary,
};
