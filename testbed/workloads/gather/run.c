/*
 * The gather workload on the simulator: every node is a server (its
 * partition, filled with rows the checker can recompute) and a client
 * (its batches, one gather at a time, in order).  The host's part of
 * reconnecting is here: both ends of a failed QP pair are reset,
 * connected again, and the client gets the server's current handle.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fiu-local.h>

#include "gw.h"

void gw_row(uint64_t seed, const struct gw_scenario *sc, uint64_t id,
	    uint8_t *buf)
{
	uint64_t x = (seed ^ 0x6a09e667f3bcc909ull) + id * 0x9e3779b97f4a7c15ull;
	uint32_t rb = sc->cfg.row_bytes;

	/* Sparse features have all-zero rows; the rest never has a zero. */
	if (sc->zero_every && id % sc->zero_every == sc->zero_every - 1) {
		memset(buf, 0, rb);
		return;
	}
	for (uint32_t i = 0; i < rb; i++) {
		x += 0x9e3779b97f4a7c15ull;
		uint64_t z = x;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		buf[i] = (uint8_t)((z ^ (z >> 31)) | 1);
	}
}

/* Node's partition as quiver lays it out: the replicated rows, its range. */
void gw_fill_part(const struct gw_scenario *sc, uint64_t seed, uint32_t node,
		  uint8_t *part)
{
	uint32_t rb = sc->cfg.row_bytes;
	uint64_t first, end, row = 0;

	tv_gather_range(&sc->cfg, node, &first, &end);
	for (uint64_t id = 0; id < sc->cfg.replicated_rows; id++, row++)
		gw_row(seed, sc, id, part + row * rb);
	for (uint64_t id = first; id < end; id++, row++)
		gw_row(seed, sc, id, part + row * rb);
}

/* Client c's QP k to server s, both ends in this process. */
int gw_connect_pair(struct tv_gather_ctx *cc, struct tv_gather_ctx *sc,
		    uint32_t c, uint32_t s, uint32_t k)
{
	struct tv_gather_part_handle h;
	struct tv_vf_qp_endpoint ec, es;
	int rc;

	tv_gather_part_handle(sc, &h);
	rc = tv_gather_set_peer(cc, &h);
	if (!rc)
		rc = tv_gather_qp_endpoint(cc, s, k, TV_GATHER_CLIENT, &ec);
	if (!rc)
		rc = tv_gather_qp_endpoint(sc, c, k, TV_GATHER_SERVER, &es);
	if (!rc)
		rc = tv_gather_qp_connect(sc, c, k, TV_GATHER_SERVER, &ec);
	if (!rc)
		rc = tv_gather_qp_connect(cc, s, k, TV_GATHER_CLIENT, &es);
	return rc;
}

static int connect_pair(struct gw_runner *r, uint32_t c, uint32_t s,
			uint32_t k)
{
	return gw_connect_pair(r->nodes[c].ctx, r->nodes[s].ctx, c, s, k);
}

/* The host's reconnect: both ends reset, the server's handle refreshed. */
static int reconnect_cb(void *arg, struct tv_gather_ctx *g, uint32_t peer,
			uint32_t qp)
{
	struct gw_node *n = arg;
	struct gw_runner *r = n->r;
	int rc;

	(void)g;
	if (r->nodes[peer].lost)
		return -EHOSTDOWN;
	if (r->nodes[peer].down || !r->nodes[peer].ctx)
		return -EAGAIN; /* it restarts: ask again later */
	rc = tv_gather_qp_reset(n->ctx, peer, qp, TV_GATHER_CLIENT);
	if (!rc)
		rc = tv_gather_qp_reset(r->nodes[peer].ctx, n->id, qp,
					TV_GATHER_SERVER);
	return rc ? rc : connect_pair(r, n->id, peer, qp);
}

static void node_config(struct gw_runner *r, struct gw_node *n,
			struct tv_gather_config *cfg)
{
	*cfg = r->sc->cfg;
	cfg->node_id = n->id;
	cfg->test_breakage = r->breakage;
	cfg->observe = gw_observe;
	cfg->observe_ctx = n;
	cfg->reconnect = reconnect_cb;
	cfg->reconnect_ctx = n;
}

static int node_setup(struct gw_runner *r, struct gw_node *n)
{
	const struct gw_scenario *sc = r->sc;
	size_t out_bytes = (sc->max_count ? sc->max_count : 1) *
			   (size_t)sc->cfg.row_bytes;
	struct tv_gather_config cfg;
	char why[256] = "";
	int rc;

	node_config(r, n, &cfg);
	rc = tv_tb_run_device(r->run, n->id, &n->dev);
	if (rc)
		return rc;
	if (!n->part) {
		n->part = calloc(1, tv_gather_part_bytes(&cfg, n->id));
		n->out = calloc(1, out_bytes);
		n->ids = calloc(sc->max_count + 1, sizeof(*n->ids));
		n->queue = calloc(sc->nbatches + 1, sizeof(*n->queue));
		if (!n->part || !n->out || !n->ids || !n->queue)
			return -ENOMEM;
	}
	gw_fill_part(r->sc, r->seed, n->id, n->part);
	rc = tv_gather_ctx_create(n->dev, &cfg, n->part, why, sizeof(why),
				  &n->ctx);
	if (rc) {
		/* A restart that fails is the testbed's to count (the node is
		 * then gone for good); at set-up it fails the run. */
		if (!n->gen)
			tv_tb_fail(r->run, TV_TB_FK_RUNNER, "node %u's gather "
				   "engine: %s (%s)", n->id, strerror(-rc),
				   why);
		return rc;
	}
	if (sc->direct)
		rc = tv_gather_out_register(n->ctx, n->out, out_bytes);
	return rc;
}

static int connect_all(struct gw_runner *r)
{
	const struct gw_scenario *sc = r->sc;
	int rc = 0;

	for (uint32_t c = 0; c < sc->nodes; c++)
		for (uint32_t s = 0; s < sc->nodes; s++)
			for (uint32_t k = 0; c != s && !rc &&
					     k < sc->cfg.qps_per_peer; k++) {
				rc = connect_pair(r, c, s, k);
				if (rc)
					tv_tb_fail(r->run, TV_TB_FK_RUNNER,
						   "QP %u from node %u to node "
						   "%u: %s (%s%s)", k, c, s,
						   strerror(-rc),
						   tv_gather_error(
							   r->nodes[c].ctx),
						   tv_gather_error(
							   r->nodes[s].ctx));
			}
	return rc;
}

/* ---- batches -------------------------------------------------------------- */

static double zipf_norm(uint64_t n, double s)
{
	double h = 0;

	for (uint64_t k = 1; k <= n && k <= 100000; k++)
		h += 1.0 / pow((double)k, s);
	return h;
}

/* Rank by inverse CDF over the first 100000 ranks (hot rows first). */
static uint64_t zipf_draw(struct tv_prng *p, uint64_t n, double s, double h)
{
	double u = (double)(tv_prng_next(p) >> 11) / 9007199254740992.0 * h;
	double acc = 0;
	uint64_t k;

	for (k = 1; k < n && k < 100000; k++) {
		acc += 1.0 / pow((double)k, s);
		if (acc >= u)
			break;
	}
	return k - 1;
}

static size_t boundary_ids(const struct gw_scenario *sc, uint64_t *ids,
			   size_t cap)
{
	size_t n = 0;

	if (sc->cfg.replicated_rows && n + 2 <= cap) {
		ids[n++] = 0;
		ids[n++] = sc->cfg.replicated_rows - 1;
	}
	for (uint32_t k = 0; k < sc->nodes && n + 2 <= cap; k++) {
		uint64_t first, end;

		tv_gather_range(&sc->cfg, k, &first, &end);
		ids[n++] = first;
		ids[n++] = end - 1;
	}
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Batch b's ids, drawn from its own stream: the same whatever runs first
 * (and in every process of a run on real verbs). */
void gw_batch_ids(const struct gw_scenario *sc, uint64_t seed, size_t b,
		  uint64_t *ids)
{
	const struct gw_batch *bt = &sc->batches[b];
	uint64_t rows = sc->cfg.rows;
	struct tv_prng p;
	size_t nb = 0;
	double h = 0;

	tv_prng_init(&p, seed * 0x9e3779b97f4a7c15ull + b + 1);
	if (bt->dist == GW_IDS) {
		memcpy(ids, bt->ids, bt->count * sizeof(*ids));
		return;
	}
	if (bt->dist == GW_ZIPF)
		h = zipf_norm(rows, bt->zipf_s);
	if (bt->dist == GW_BOUNDARY)
		nb = boundary_ids(sc, ids, bt->count);
	for (size_t i = 0; i < bt->count; i++) {
		if (bt->dist == GW_BOUNDARY && nb)
			ids[i] = ids[i % nb];
		else if (bt->dist == GW_ZIPF)
			ids[i] = zipf_draw(&p, rows, bt->zipf_s, h);
		else
			ids[i] = tv_prng_below(&p, rows);
		if (bt->dups && (i & 1))
			ids[i] = ids[i - 1];
	}
	if (bt->dist == GW_SORTED)
		qsort(ids, bt->count, sizeof(*ids), cmp_u64);
}

/* gather/server/rereg: a server re-registers its partition (a restart
 * of its registration) just as a client starts a gather. */
static void servers_rereg(struct gw_runner *r, struct gw_node *client)
{
	for (uint32_t s = 0; s < r->sc->nodes; s++) {
		struct gw_node *n = &r->nodes[s];
		bool fire = false;
		int rc;

		if (s == client->id || n->down || !n->ctx)
			continue;
		fiu_do_on("gather/server/rereg", fire = true);
		if (!fire)
			continue;
		rc = tv_gather_reregister(n->ctx);
		if (rc)
			tv_tb_run_refused(r->run, "re-registration", rc);
	}
}

static void batch_end(struct gw_runner *r, struct gw_node *n);

static void batch_start(struct gw_runner *r, struct gw_node *n, size_t b)
{
	const struct gw_batch *bt = &r->sc->batches[b];
	struct gw_batch_run *br = &r->runs[b];
	uint64_t now = tv_sim_now_ns(tv_tb_run_sim(r->run));
	size_t bad = 0;
	int rc;

	servers_rereg(r, n);
	gw_batch_ids(r->sc, r->seed, b, n->ids);
	/* quiver's staging tensor starts as torch.zeros. */
	memset(n->out, 0, (size_t)bt->count * r->sc->cfg.row_bytes);
	br->started = true;
	br->start_ns = now;
	n->running = b + 1; /* its end may come inside the start */
	rc = tv_gather_start(n->ctx, n->ids, bt->count, n->out,
			     now + r->sc->timeout_ns, &bad);
	if (rc) {
		n->running = 0;
		br->refused = true;
	}
	if (rc == -ERANGE) {
		/* Refused before anything was posted: what the engine owes. */
		br->ended = true;
		br->result = rc;
		br->end_ns = now;
		return;
	}
	if (rc) {
		tv_tb_run_refused(r->run, "gather start", rc);
		br->ended = true;
		br->result = rc;
		br->end_ns = now;
		return;
	}
	batch_end(r, n); /* local rows only: it is over already */
}

static void node_next(struct gw_runner *r, struct gw_node *n)
{
	while (!n->running && n->qlen && !n->down) {
		size_t b = n->queue[n->qhead++];

		n->qlen--;
		batch_start(r, n, b);
	}
}

static void due_fn(void *arg)
{
	struct gw_due *d = arg;
	struct gw_runner *r = d->r;
	const struct gw_batch *bt = &r->sc->batches[d->b];
	struct gw_node *n = &r->nodes[bt->node];
	uint32_t prev = tv_tb_run_enter(r->run, bt->node);

	if (tv_tb_run_gate(r->run, bt->node, "gather", d->b, "batch")) {
		r->runs[d->b].cancelled = true;
	} else {
		/* Each batch is queued once: the array never wraps. */
		n->queue[n->qhead + n->qlen++] = d->b;
		node_next(r, n);
	}
	tv_tb_run_leave(r->run, prev);
}

static int schedule_batches(struct gw_runner *r)
{
	struct gw_due *d = calloc(r->sc->nbatches + 1, sizeof(*d));
	int rc = 0;

	if (!d)
		return -ENOMEM;
	r->dues = d;
	for (size_t b = 0; !rc && b < r->sc->nbatches; b++) {
		d[b] = (struct gw_due){ r, b };
		rc = tv_tb_run_schedule_op(r->run, r->sc->batches[b].at_ns,
					   r->sc->batches[b].node, due_fn,
					   &d[b]);
	}
	return rc;
}

/* ---- progress ------------------------------------------------------------- */

static void batch_end(struct gw_runner *r, struct gw_node *n)
{
	const struct tv_gather_result *res = NULL;
	size_t b = n->running - 1;
	int rc = tv_gather_test(n->ctx, &res);

	if (rc == -EAGAIN)
		return;
	n->running = 0;
	r->runs[b].ended = true;
	r->runs[b].result = rc;
	r->runs[b].end_ns = tv_sim_now_ns(tv_tb_run_sim(r->run));
	gw_check_batch(r, b, res, rc);
}

void gw_progress(struct tv_tb_run *run, void *st, uint32_t node)
{
	struct gw_runner *r = st;
	struct gw_node *n = &r->nodes[node];
	int rc;

	(void)run;
	if (!r->ready || n->down || !n->ctx)
		return;
	rc = tv_gather_progress(n->ctx);
	if (rc < 0)
		tv_tb_fail(r->run, TV_TB_FK_RUNNER, "node %u: progress: %s (%s)",
			   node, strerror(-rc), tv_gather_error(n->ctx));
	if (n->running)
		batch_end(r, n);
	node_next(r, n);
}

/* ---- set-up and teardown ------------------------------------------------- */

static uint32_t breakage_bits(const char *name, bool *quiver_check_p)
{
	*quiver_check_p = name && !strcmp(name, "accept-zero-rows");
	if (!name)
		return 0;
	if (!strcmp(name, "ignore-errors") || *quiver_check_p)
		return TV_GATHER_BREAK_IGNORE_ERRORS;
	if (!strcmp(name, "signal-aliasing"))
		return TV_GATHER_BREAK_SIGNAL_ALIASING;
	if (!strcmp(name, "rd-atomic"))
		return TV_GATHER_BREAK_RD_ATOMIC;
	return 0;
}

int gw_setup(struct tv_tb_run *run, void **state_p)
{
	const struct tv_tb_scenario *core = tv_tb_run_scenario(run);
	struct gw_runner *r = calloc(1, sizeof(*r));
	int rc = 0;

	if (!r)
		return -ENOMEM;
	*state_p = r; /* freed by state_free whatever happens */
	r->run = run;
	r->sc = tv_tb_scenario_wl(core);
	r->seed = tv_tb_run_seed(run);
	r->breakage = breakage_bits(tv_tb_run_breakage(run), &r->quiver_check);
	r->nodes = calloc(r->sc->nodes, sizeof(*r->nodes));
	r->runs = calloc(r->sc->nbatches + 1, sizeof(*r->runs));
	if (!r->nodes || !r->runs)
		return -ENOMEM;
	for (uint32_t i = 0; !rc && i < r->sc->nodes; i++) {
		r->nodes[i].r = r;
		r->nodes[i].id = i;
		rc = node_setup(r, &r->nodes[i]);
	}
	if (!rc)
		rc = connect_all(r);
	if (!rc)
		rc = schedule_batches(r);
	r->ready = !rc;
	return rc;
}

static void node_teardown(struct gw_runner *r, struct gw_node *n)
{
	int rc;

	if (!n->ctx)
		return;
	rc = tv_gather_ctx_destroy(n->ctx);
	if (rc == -EBUSY) {
		tv_tb_fail(r->run, TV_TB_FK_LEAK, "teardown: node %u's gather "
			   "engine still has work in flight", n->id);
		tv_gather_ctx_abort(n->ctx);
		rc = tv_gather_ctx_destroy(n->ctx);
	}
	if (rc)
		tv_tb_fail(r->run, TV_TB_FK_LEAK, "teardown: node %u's gather "
			   "engine: %s", n->id, strerror(-rc));
	else
		n->ctx = NULL;
}

static void add_stats(struct gw_runner *r, const struct gw_node *n)
{
	struct tv_gather_stats s;
	struct tv_gather_stats *t = &r->total;

	if (!n->ctx)
		return;
	tv_gather_stats(n->ctx, &s);
	t->gathers += s.gathers;
	t->gathers_failed += s.gathers_failed;
	t->rows_local += s.rows_local;
	t->rows_replicated += s.rows_replicated;
	t->rows_remote += s.rows_remote;
	t->rows_failed += s.rows_failed;
	t->reads_posted += s.reads_posted;
	t->post_lists += s.post_lists;
	t->retries += s.retries;
	t->reconnects += s.reconnects;
	t->error_cqes += s.error_cqes;
	t->post_failures += s.post_failures;
	t->bytes_read += s.bytes_read;
	t->staging_bytes += s.staging_bytes;
	if (s.max_sq_used > t->max_sq_used)
		t->max_sq_used = s.max_sq_used;
	t->sq_depth = s.sq_depth;
}

void gw_teardown(struct tv_tb_run *run, void *st)
{
	struct gw_runner *r = st;

	(void)run;
	if (!r->nodes)
		return;
	for (uint32_t i = 0; i < r->sc->nodes; i++)
		node_teardown(r, &r->nodes[i]);
}

void gw_state_free(void *st)
{
	struct gw_runner *r = st;

	for (uint32_t i = 0; r->nodes && i < r->sc->nodes; i++) {
		free(r->nodes[i].part);
		free(r->nodes[i].out);
		free(r->nodes[i].ids);
		free(r->nodes[i].queue);
	}
	free(r->nodes);
	free(r->runs);
	free(r->dues);
	free(r);
}

/* ---- node/crash ------------------------------------------------------------ */

/*
 * A crash: the node's engine dies with its QPs and registrations; its
 * running gather and queued batches end with it (excused, never
 * reported).  Its clients find out as real ones do (READs towards a QP
 * that is gone exhaust the retries) and reconnect once it is back.
 */
void gw_node_crash(struct tv_tb_run *run, void *st, uint32_t node)
{
	struct gw_runner *r = st;
	struct gw_node *n = &r->nodes[node];

	(void)run;
	add_stats(r, n);
	if (n->running)
		r->runs[n->running - 1].cancelled = true;
	for (size_t i = 0; i < n->qlen; i++)
		r->runs[n->queue[n->qhead + i]].cancelled = true;
	n->running = 0;
	n->qhead += n->qlen;
	n->qlen = 0;
	n->down = true;
	if (n->ctx) {
		tv_gather_ctx_abort(n->ctx);
		if (tv_gather_ctx_destroy(n->ctx))
			tv_tb_fail(r->run, TV_TB_FK_RUNNER,
				   "node %u crash: its engine stays", node);
		n->ctx = NULL;
	}
}

int gw_node_restart(struct tv_tb_run *run, void *st, uint32_t node)
{
	struct gw_runner *r = st;
	struct gw_node *n = &r->nodes[node];
	int rc;

	(void)run;
	n->gen++;
	rc = node_setup(r, n);
	if (rc)
		return rc;
	n->down = false;
	/* Its own client QPs start down: its peers' new handles come with
	 * the reconnects (a fresh process knows nobody yet). */
	for (uint32_t s = 0; s < r->sc->nodes; s++)
		for (uint32_t k = 0; s != node && !rc &&
				     k < r->sc->cfg.qps_per_peer; k++)
			if (!r->nodes[s].down && r->nodes[s].ctx)
				rc = reconnect_cb(n, n->ctx, s, k);
	return rc;
}

void gw_collect_stats(struct gw_runner *r)
{
	for (uint32_t i = 0; i < r->sc->nodes; i++)
		add_stats(r, &r->nodes[i]);
}

void gw_node_lost(struct tv_tb_run *run, void *st, uint32_t node)
{
	struct gw_runner *r = st;

	(void)run;
	r->nodes[node].lost = true;
}
