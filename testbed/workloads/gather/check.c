/*
 * The gather workload's invariants (docs/gather.md): every row a gather
 * says it delivered equals its owner's; failed rows are named with a
 * status, and only a fault or a breakage may fail one; every READ lies
 * inside the owner's partition under its current rkey; no READ is
 * refused for exceeding what the responder accepts; the send queue is
 * never over-posted; every gather ends exactly once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw.h"

static const char *const ev_names[] = {
	[TV_GATHER_EV_START] = "start", [TV_GATHER_EV_POST] = "post",
	[TV_GATHER_EV_LIST_DONE] = "list_done",
	[TV_GATHER_EV_QP_DOWN] = "qp_down", [TV_GATHER_EV_QP_UP] = "qp_up",
	[TV_GATHER_EV_END] = "end",
};

static void trace_event(struct gw_node *n, const struct tv_gather_event *ev)
{
	json_t *line = tv_tb_trace_line_new(n->r->run, ev_names[ev->kind]);

	if (!line)
		return;
	json_object_set_new(line, "node", json_integer(ev->node));
	json_object_set_new(line, "peer", tv_tb_json_node(ev->peer));
	json_object_set_new(line, "qp", tv_tb_json_node(ev->qp));
	json_object_set_new(line, "gather", tv_tb_json_u64(ev->gather));
	json_object_set_new(line, "list", tv_tb_json_u64(ev->list));
	json_object_set_new(line, "n", json_integer(ev->n));
	json_object_set_new(line, "status", json_integer(ev->status));
	json_object_set_new(line, "attempt", json_integer(ev->attempt));
	tv_tb_trace_emit(n->r->run, line);
}

/*
 * A client QP may keep at most as many READs outstanding as its server's
 * QP accepts: what it negotiated (ev->n) against what the server says.
 * On rxe an excess is accepted silently, so this is the check that sees
 * it there.
 */
static void check_rd_atomic(struct gw_runner *r,
			    const struct tv_gather_event *ev)
{
	struct tv_gather_part_handle h;

	if (ev->peer >= r->sc->nodes || !r->nodes[ev->peer].ctx)
		return;
	tv_gather_part_handle(r->nodes[ev->peer].ctx, &h);
	if (ev->n > h.max_dest_rd_atomic)
		tv_tb_fail(r->run, TV_TB_FK_IN_FLIGHT, "invariant: node %u's QP "
			   "%u to node %u may keep %u READs outstanding; the "
			   "server accepts %u (max_dest_rd_atomic)", ev->node,
			   ev->qp, ev->peer, ev->n, h.max_dest_rd_atomic);
}

void gw_observe(void *ctx, const struct tv_gather_event *ev)
{
	struct gw_node *n = ctx;
	struct gw_runner *r = n->r;

	if ((unsigned)ev->kind < sizeof(ev_names) / sizeof(ev_names[0]) &&
	    ev_names[ev->kind])
		trace_event(n, ev);
	if (ev->kind == TV_GATHER_EV_END && n->running)
		r->runs[n->running - 1].ends++;
	if (ev->kind == TV_GATHER_EV_QP_UP)
		check_rd_atomic(r, ev);
	/* At once, before the flushes it causes are reported. */
	if (ev->kind == TV_GATHER_EV_POST && ev->status)
		tv_tb_fail(r->run, TV_TB_FK_IN_FLIGHT, "invariant: node %u: "
			   "post_send refused a post list on QP %u to node %u "
			   "(%s): the send queue over-posted", ev->node, ev->qp,
			   ev->peer, strerror(-ev->status));
}

/* quiver's mem_check compares only the rows that are not all zero. */
static bool all_zero(const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * The first row of out (n rows for ids) that is not failed[] and differs
 * from its owner's, or -1.  quiver: all-zero rows are accepted (counted
 * in *zero_p), as its mem_check does.
 */
long gw_first_bad_row(const struct gw_scenario *sc, uint64_t seed,
		      const uint64_t *ids, size_t n, const uint8_t *out,
		      const uint8_t *failed, bool quiver, uint64_t *zero_p)
{
	uint32_t rb = sc->cfg.row_bytes;
	uint8_t *want = malloc(rb);
	long bad = -1;

	if (!want)
		return -1;
	for (size_t i = 0; i < n && bad < 0; i++) {
		const uint8_t *got = out + i * (size_t)rb;

		if (failed && failed[i])
			continue;
		if (quiver && all_zero(got, rb)) {
			(*zero_p)++;
			continue;
		}
		gw_row(seed, sc, ids[i], want);
		if (memcmp(got, want, rb))
			bad = (long)i;
	}
	free(want);
	return bad;
}

static void check_rows(struct gw_runner *r, size_t b, const uint8_t *failed)
{
	const struct gw_batch *bt = &r->sc->batches[b];
	struct gw_node *n = &r->nodes[bt->node];
	uint32_t rb = r->sc->cfg.row_bytes;
	long i = gw_first_bad_row(r->sc, r->seed, n->ids, bt->count, n->out,
				  failed, r->quiver_check, &r->zero_rows_seen);

	for (size_t k = 0; k < bt->count; k++)
		r->rows_checked += !failed[k];
	if (i < 0)
		return;
	tv_tb_fail(r->run, TV_TB_FK_DATA, "invariant: batch %zu on node %u: "
		   "row %ld (id %" PRIu64 ", node %u's) was delivered as good "
		   "but is %s", b, bt->node, i, n->ids[i],
		   tv_gather_owner(&r->sc->cfg, n->ids[i]),
		   all_zero(n->out + (size_t)i * rb, rb) ? "all zero, and the "
		   "owner's is not" : "not the owner's row");
}

/* Failed rows: named, with a status, and excused by a fault. */
static void check_failed(struct gw_runner *r, size_t b,
			 const struct tv_gather_result *res, uint8_t *failed)
{
	const struct gw_batch *bt = &r->sc->batches[b];

	for (size_t e = 0; e < res->failed_rows; e++) {
		const struct tv_gather_row_error *er = &res->errors[e];

		if (er->index >= bt->count ||
		    er->id != r->nodes[bt->node].ids[er->index] ||
		    !er->status || failed[er->index]) {
			tv_tb_fail(r->run, TV_TB_FK_OUTCOME, "invariant: batch "
				   "%zu: failed row %zu names index %zu, id %"
				   PRIu64 ", status %d: not a row of the "
				   "batch, or twice, or no status", b, e,
				   er->index, er->id, er->status);
			return;
		}
		failed[er->index] = 1;
	}
	r->rows_failed += res->failed_rows;
	if (res->failed_rows && !r->breakage &&
	    !tv_tb_run_unrecoverable_fires(r->run))
		tv_tb_fail(r->run, TV_TB_FK_OUTCOME, "batch %zu on node %u: %zu "
			   "rows failed without a fault (first: id %" PRIu64
			   ", status %d, cause %d)", b, bt->node,
			   res->failed_rows, res->errors[0].id,
			   res->errors[0].status, res->errors[0].cause);
}

void gw_check_batch(struct gw_runner *r, size_t b,
		    const struct tv_gather_result *res, int rc)
{
	const struct gw_batch *bt = &r->sc->batches[b];
	uint8_t *failed;

	if (rc == -ENOENT || !res) {
		tv_tb_fail(r->run, TV_TB_FK_OUTCOME, "batch %zu on node %u "
			   "ended without a result (%d)", b, bt->node, rc);
		return;
	}
	if ((rc == -EIO) != (res->failed_rows > 0) || (rc && rc != -EIO) ||
	    res->rows != bt->count) {
		tv_tb_fail(r->run, TV_TB_FK_OUTCOME, "batch %zu: result %d with "
			   "%zu failed rows of %zu (batch of %u)", b, rc,
			   res->failed_rows, res->rows, bt->count);
		return;
	}
	r->runs[b].failed_rows = res->failed_rows;
	failed = calloc(bt->count + 1, 1);
	if (!failed)
		return;
	check_failed(r, b, res, failed);
	check_rows(r, b, failed);
	free(failed);
}

/* The simulator reports arrivals at a QP that is gone too (its requester
 * retries): only what one of the server's QPs executed is checked. */
static bool served_by(struct gw_runner *r, struct gw_node *s,
		      const struct tv_sim_event *ev)
{
	for (uint32_t k = 0; k < r->sc->cfg.qps_per_peer; k++) {
		struct tv_vf_qp_endpoint ep;

		if (!tv_gather_qp_endpoint(s->ctx, ev->peer, k, TV_GATHER_SERVER,
					   &ep) && ep.qp_num == ev->qp_num)
			return true;
	}
	return false;
}

/* Every successful READ lies in the server's partition, current rkey. */
static void check_read(struct gw_runner *r, const struct tv_sim_event *ev)
{
	struct gw_node *s;
	struct tv_gather_part_handle h;
	uint64_t size;

	if (ev->node >= r->sc->nodes)
		return;
	s = &r->nodes[ev->node];
	if (!s->ctx || ev->peer >= r->sc->nodes || !served_by(r, s, ev))
		return;
	tv_gather_part_handle(s->ctx, &h);
	size = tv_gather_part_bytes(&r->sc->cfg, ev->node);
	if (ev->rkey == h.rkey && ev->remote_addr >= h.addr &&
	    ev->length <= size && ev->remote_addr - h.addr <= size - ev->length)
		return;
	tv_tb_fail(r->run, TV_TB_FK_WRITE, "invariant: node %u read %u bytes "
		   "at 0x%" PRIx64 " (rkey 0x%x) of node %u, outside its "
		   "partition [0x%" PRIx64 ", +%" PRIu64 ") under rkey 0x%x",
		   ev->peer, ev->length, ev->remote_addr, ev->rkey, ev->node,
		   h.addr, size, h.rkey);
}

void gw_sim_event(struct tv_tb_run *run, void *st,
		  const struct tv_sim_event *ev)
{
	struct gw_runner *r = st;

	if (!r->ready || tv_tb_run_tearing_down(run))
		return;
	if (ev->kind == TV_SIM_EV_DELIVER && ev->opcode == TV_WR_RDMA_READ &&
	    ev->status == TV_WC_SUCCESS)
		check_read(r, ev);
	if (ev->kind == TV_SIM_EV_CQE && ev->status == TV_WC_REM_INV_REQ_ERR) {
		tv_tb_fail(run, TV_TB_FK_IN_FLIGHT, "invariant: node %u's READ "
			   "was refused by its server (REM_INV_REQ_ERR): more "
			   "READs outstanding than the server's "
			   "max_dest_rd_atomic accepts", ev->node);
	}
}

static void check_engine(struct gw_runner *r)
{
	const struct tv_gather_stats *t = &r->total;

	if (t->max_sq_used > t->sq_depth)
		tv_tb_fail(r->run, TV_TB_FK_IN_FLIGHT, "invariant: %" PRIu64
			   " send-queue slots held on one QP, above its depth %"
			   PRIu64, t->max_sq_used, t->sq_depth);
}

void gw_check(struct tv_tb_run *run, void *st)
{
	struct gw_runner *r = st;
	struct tv_tb_result *res = tv_tb_run_result_mut(run);

	if (!r->ready)
		return;
	gw_collect_stats(r);
	check_engine(r);
	for (size_t b = 0; b < r->sc->nbatches; b++) {
		const struct gw_batch_run *br = &r->runs[b];

		if (br->cancelled)
			continue;
		if (!br->ended)
			tv_tb_fail(run, TV_TB_FK_HANG, "batch %zu on node %u "
				   "never ended%s", b, r->sc->batches[b].node,
				   br->started ? " (started)" : "");
		else if (!br->refused && br->ends != 1)
			tv_tb_fail(run, TV_TB_FK_OUTCOME, "batch %zu on node %u "
				   "ended %u times", b, r->sc->batches[b].node,
				   br->ends);
		if (br->ended && !br->result)
			res->ops_ok++;
		else if (br->ended)
			res->ops_failed++;
		if (br->ended && !br->result)
			res->bytes += (uint64_t)r->sc->batches[b].count *
				      r->sc->cfg.row_bytes;
		if (br->ended && br->end_ns > res->last_op_ns)
			res->last_op_ns = br->end_ns;
	}
}
