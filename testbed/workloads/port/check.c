/*
 * The port workload's invariants (docs/port.md), each from an independent
 * source where one exists (the simulator's events rather than the
 * engine's own books):
 *  - a wait returns only after its signal reached the node, and then the
 *    data of every put before that signal is in place (digests taken from
 *    the source when the put was pushed); every signal is waited for once;
 *  - packets are read only once all of them are there, with the data sent;
 *  - the FIFO: triggers handled in order, each once, as pushed; a slot is
 *    never written again before the proxy took what it held;
 *  - a flush is done only when its connection completed everything posted
 *    before it; work in flight never exceeds the CQ;
 *  - writes land only in memory the target registered for that peer;
 *  - every task ends (done, or failed with its cause where a fault allows
 *    it), nothing is left in the FIFO, and the final buffers are the
 *    reference's.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "pt.h"

uint64_t pt_digest(const uint8_t *p, uint64_t len)
{
	return XXH3_64bits(p, len);
}

/* Did one of the program's nodes crash (node/crash)? */
static bool program_crashed(const struct pt_runner *r, uint32_t prog)
{
	const struct pt_program *p = &r->sc->progs[prog];

	for (uint32_t i = 0; i < p->nnodes; i++)
		if (r->nodes[p->nodes[i]].crashed)
			return true;
	return false;
}

/*
 * May the program's operations fail?  When the scenario allows errors,
 * or a fault fired that nothing recovers from.  A crash is such a fault
 * only for the programs of the node that crashed: the others share its
 * peers' proxies, and must finish as if nothing happened (a flush or a
 * dead connection that held up another channel would be MSCCL++ #802).
 */
static bool error_allowed(const struct pt_runner *r, uint32_t prog)
{
	uint64_t fires = tv_tb_run_unrecoverable_fires(r->run);
	uint64_t crashes = tv_tb_run_result(r->run)->crashes;

	assert(crashes <= fires);
	return tv_tb_scenario_allow_errors(tv_tb_run_scenario(r->run)) ||
	       fires > crashes || (crashes && program_crashed(r, prog));
}

int pt_dir_put(struct pt_dir *d, uint64_t dst_off, uint64_t len,
	       uint64_t digest)
{
	if (d->nputs == d->cap &&
	    tv_ju_grow((void **)&d->puts, d->nputs, &d->cap, sizeof(*d->puts)))
		return -ENOMEM;
	d->puts[d->nputs++] = (struct pt_put){ dst_off, len, digest };
	return 0;
}

int pt_dir_signal(struct pt_dir *d)
{
	if (d->nsignals == d->scap &&
	    tv_ju_grow((void **)&d->signals, d->nsignals, &d->scap,
		       sizeof(*d->signals)))
		return -ENOMEM;
	d->signals[d->nsignals++] = d->nputs;
	return 0;
}

/* ---- waits and packets ------------------------------------------------------ */

static bool overlaps(const struct pt_put *a, const struct pt_put *b)
{
	return a->dst_off < b->dst_off + b->len &&
	       b->dst_off < a->dst_off + a->len;
}

/*
 * A later put, already pushed (one the same signal covers, or one after
 * it), may have landed over it: its bytes are not decided.
 */
static bool overtaken(const struct pt_dir *d, size_t i)
{
	for (size_t q = i + 1; q < d->nputs; q++)
		if (overlaps(&d->puts[i], &d->puts[q]))
			return true;
	return false;
}

/*
 * Bytes not what was sent, after a corruption point fired: port channels
 * have no checksum (an LL packet's flag catches a torn packet, not a
 * flipped bit), so this is the outcome "corrupted, undetected"
 * (docs/faults.md), counted; true when it is that.
 */
static bool pt_corrupted(struct pt_runner *r)
{
	if (!tv_tb_run_corrupt_fires(r->run))
		return false;
	tv_tb_run_result_mut(r->run)->corrupt_undetected++;
	return true;
}

void pt_check_wait(struct pt_runner *r, struct pt_link *l, int dir,
		   const struct pt_task_run *tr)
{
	struct pt_dir *d = &l->dir[dir];
	const uint8_t *data = r->nodes[d->to].data;
	uint64_t k = d->waits_ok++;
	size_t start, end;

	if (k >= d->nsignals || d->delivered <= k) {
		tv_tb_fail(r->run, TV_TB_FK_DATA,
			   "invariant: node %u's wait #%" PRIu64 " (program %u) "
			   "returned at %" PRIu64 " ns, but node %u has sent %zu "
			   "signals and %" PRIu64 " reached it",
			   d->to, k + 1, tr->t->prog, tv_tb_run_now_ns(r->run),
			   d->from, d->nsignals, d->delivered);
		return;
	}
	start = k ? d->signals[k - 1] : 0;
	end = d->signals[k];
	for (size_t i = start; i < end; i++) {
		const struct pt_put *p = &d->puts[i];

		if (overtaken(d, i)) {
			d->overtaken++;
			r->overtaken++;
			continue;
		}
		r->checked_puts++;
		if (pt_digest(data + p->dst_off, p->len) != p->digest &&
		    !pt_corrupted(r))
			tv_tb_fail(r->run, TV_TB_FK_DATA,
				   "invariant: node %u's wait #%" PRIu64
				   " (program %u) returned at %" PRIu64 " ns, but "
				   "the %" PRIu64 " bytes at offset %" PRIu64
				   " that node %u put before its signal are not "
				   "what it sent",
				   d->to, k + 1, tr->t->prog,
				   tv_tb_run_now_ns(r->run), p->len, p->dst_off,
				   d->from);
	}
}



void pt_check_packets(struct pt_runner *r, const struct pt_task_run *tr,
		      const struct pt_op *op)
{
	const uint8_t *got = r->nodes[tr->t->node].data + op->b;
	uint8_t *want = malloc(op->len ? op->len : 1);
	uint64_t bad = 0, first = 0;

	if (!want) {
		tv_tb_fail(r->run, TV_TB_FK_RUNNER, "checking packets: %s",
			   strerror(ENOMEM));
		return;
	}
	pt_pattern(r->seed, tr->t->prog, op->src_node, op->iter, 0, want,
		   op->len);
	for (uint64_t i = op->len; i-- > 0;)
		if (got[i] != want[i]) {
			bad++;
			first = i;
		}
	free(want);
	if (bad && !pt_corrupted(r))
		tv_tb_fail(r->run, TV_TB_FK_DATA,
			   "invariant: node %u read node %u's packets #%u "
			   "(program %u) at %" PRIu64 " ns as complete, but "
			   "%" PRIu64 " of %" PRIu64 " bytes were not the ones "
			   "sent (first at %" PRIu64 "): a torn write read by "
			   "polling a flag", tr->t->node, op->src_node,
			   op->iter + 1, tr->t->prog, tv_tb_run_now_ns(r->run),
			   bad, op->len, first);
}

/* ---- the engines' events ------------------------------------------------------ */

static void fifo_push(struct pt_runner *r, struct pt_node *n,
		      const struct tv_port_event *ev)
{
	if (ev->pos != n->npushed)
		tv_tb_fail(r->run, TV_TB_FK_RUNNER,
			   "invariant: node %u's FIFO gave position %" PRIu64
			   " after %" PRIu64 " pushes", n->id, ev->pos,
			   n->npushed);
	if (n->npushed == n->pushed_cap &&
	    tv_ju_grow((void **)&n->pushed, n->npushed, &n->pushed_cap,
		       sizeof(*n->pushed))) {
		tv_tb_fail(r->run, TV_TB_FK_RUNNER, "FIFO books: %s",
			   strerror(ENOMEM));
		return;
	}
	n->pushed[n->npushed++] = ev->trig;
}

static void fifo_store(struct pt_runner *r, struct pt_node *n,
		       const struct tv_port_event *ev)
{
	n->stored++;
	/* Its slot held pos - size: that one must have been taken. */
	if (ev->pos >= n->handled + r->sc->fifo_size)
		tv_tb_fail(r->run, TV_TB_FK_DATA,
			   "invariant: node %u's FIFO slot of position %" PRIu64
			   " written while position %" PRIu64 " in it was not "
			   "taken yet", n->id, ev->pos,
			   ev->pos - r->sc->fifo_size);
}

static void fifo_handle(struct pt_runner *r, struct pt_node *n,
			const struct tv_port_event *ev)
{
	if (ev->pos != n->handled || ev->pos >= n->npushed) {
		tv_tb_fail(r->run, TV_TB_FK_DATA,
			   "invariant: node %u's proxy took FIFO position %"
			   PRIu64 ", expected %" PRIu64 " (%" PRIu64 " pushed)",
			   n->id, ev->pos, n->handled, n->npushed);
		return;
	}
	if (n->pushed[ev->pos].fst != ev->trig.fst ||
	    n->pushed[ev->pos].snd != ev->trig.snd)
		tv_tb_fail(r->run, TV_TB_FK_DATA,
			   "invariant: node %u's proxy took a trigger at "
			   "position %" PRIu64 " that is not the one pushed "
			   "there (%016" PRIx64 ":%016" PRIx64 " vs %016" PRIx64
			   ":%016" PRIx64 ")", n->id, ev->pos, ev->trig.fst,
			   ev->trig.snd, n->pushed[ev->pos].fst,
			   n->pushed[ev->pos].snd);
	n->handled++;
}

/* The link end whose QP this is on node. */
static struct pt_link *link_by_qpn(struct pt_runner *r, uint32_t node,
				   uint32_t qpn, int *end_p)
{
	for (size_t i = 0; i < r->sc->npairs; i++)
		for (int e = 0; e < 2; e++)
			if (r->links[i].node[e] == node &&
			    r->links[i].qpn[e] == qpn) {
				*end_p = e;
				return &r->links[i];
			}
	return NULL;
}

static void flush_done(struct pt_runner *r, const struct tv_port_event *ev)
{
	int e;
	struct pt_link *l = link_by_qpn(r, ev->node, ev->qp_num, &e);

	if (l && l->cqes[e] < ev->value)
		tv_tb_fail(r->run, TV_TB_FK_DATA,
			   "invariant: node %u's flush at FIFO position %" PRIu64
			   " was done after %" PRIu64 " completions on its "
			   "connection to node %u, but %" PRIu64 " work requests "
			   "were posted before it", ev->node, ev->pos,
			   l->cqes[e], l->node[!e], ev->value);
}

void pt_observe(void *ctx, const struct tv_port_event *ev)
{
	struct pt_runner *r = ctx;
	struct pt_node *n = &r->nodes[ev->node];

	pt_trace_engine(r->run, ev);
	switch (ev->kind) {
	case TV_PORT_EV_PUSH: fifo_push(r, n, ev); break;
	case TV_PORT_EV_SLOT_STORE: fifo_store(r, n, ev); break;
	case TV_PORT_EV_HANDLE: fifo_handle(r, n, ev); break;
	case TV_PORT_EV_FLUSH_DONE: flush_done(r, ev); break;
	case TV_PORT_EV_BAD_TRIGGER:
		tv_tb_fail(r->run, TV_TB_FK_RUNNER,
			   "node %u's proxy refused a trigger of ours: %s",
			   ev->node, ev->msg ? ev->msg : "?");
		break;
	default:
		break;
	}
}

/* ---- the simulator's events --------------------------------------------------- */

static bool is_signal_op(uint32_t op)
{
	return op == TV_WR_ATOMIC_FETCH_AND_ADD ||
	       op == TV_WR_RDMA_WRITE_WITH_IMM;
}

/* A write or an atomic executed on node: inside what it registered? */
static void check_write(struct pt_runner *r, const struct tv_sim_event *ev)
{
	struct tv_tb_window *w;

	if (ev->status != TV_WC_SUCCESS || ev->peer >= r->sc->nodes ||
	    ev->opcode == TV_WR_SEND || ev->opcode == TV_WR_SEND_WITH_IMM ||
	    ev->opcode == TV_WR_RDMA_READ)
		return;
	for (uint32_t idx = 0; idx < 2; idx++) {
		w = tv_tb_windows_find(r->win, ev->node, ev->peer, idx);
		if (w && tv_tb_window_holds(w, ev->remote_addr, ev->length,
					    ev->rkey))
			return;
	}
	tv_tb_fail(r->run, TV_TB_FK_WRITE,
		   "invariant: node %u wrote %u bytes at 0x%" PRIx64 " (rkey "
		   "0x%x) on node %u, outside what node %u registered for it",
		   ev->peer, ev->length, ev->remote_addr, ev->rkey, ev->node,
		   ev->node);
}

static void count_send(struct pt_runner *r, const struct tv_sim_event *ev,
		       bool post)
{
	int e;
	struct pt_link *l = link_by_qpn(r, ev->node, ev->qp_num, &e);

	if (!l)
		return;
	/* A completion of wr_id i: every WR up to i is done (the engine
	 * signals some of them; RC completes in order). */
	if (post)
		l->posts[e]++;
	else if (ev->wr_id > l->cqes[e] && ev->wr_id <= l->posts[e])
		l->cqes[e] = ev->wr_id;
	if (l->posts[e] - l->cqes[e] > r->sc->cq_size &&
	    !(r->breakage & TV_PORT_BREAK_NO_FLOW_CONTROL))
		tv_tb_fail(r->run, TV_TB_FK_IN_FLIGHT,
			   "invariant: node %u has %" PRIu64 " work requests in "
			   "flight to node %u, more than its CQ's %u",
			   ev->node, l->posts[e] - l->cqes[e], l->node[!e],
			   r->sc->cq_size);
}

void pt_sim_event(struct tv_tb_run *run, void *st,
		  const struct tv_sim_event *ev)
{
	struct pt_runner *r = st;
	int e;
	struct pt_link *l;

	if (tv_tb_run_tearing_down(run) || !r->win_ready)
		return;
	switch (ev->kind) {
	case TV_SIM_EV_POST_SEND:
		count_send(r, ev, true);
		break;
	case TV_SIM_EV_CQE:
		if (!(ev->opcode & TV_WC_RECV))
			count_send(r, ev, false);
		break;
	case TV_SIM_EV_DELIVER:
		/* A crashed node has no QP: what the simulator reports as
		 * delivered to it found no responder and wrote nothing (the
		 * sender's retries run out). */
		if (ev->node < r->sc->nodes && r->nodes[ev->node].crashed)
			break;
		check_write(r, ev);
		l = link_by_qpn(r, ev->node, ev->qp_num, &e);
		if (l && ev->status == TV_WC_SUCCESS && is_signal_op(ev->opcode))
			l->dir[!e].delivered++;
		break;
	default:
		break;
	}
}

/* ---- after the run -------------------------------------------------------------- */

static void check_task(struct pt_runner *r, const struct pt_task_run *tr)
{
	const struct pt_program *p = &r->sc->progs[tr->t->prog];

	switch (tr->state) {
	case PT_TASK_DONE:
	case PT_TASK_CANCELLED:
		return;
	case PT_TASK_FAILED:
		if (!error_allowed(r, tr->t->prog))
			tv_tb_fail(r->run, TV_TB_FK_OUTCOME,
				   "%s (and no fault that could cause it "
				   "fired%s)", tr->msg ? tr->msg : "failed",
				   tv_tb_run_result(r->run)->crashes ?
				   ": a crash ends only its node's programs" :
				   "");
		return;
	case PT_TASK_IDLE:
	case PT_TASK_RUNNING:
		break;
	}
	tv_tb_fail(r->run, TV_TB_FK_HANG,
		   "node %u, program %u (%s) never finished: stuck at operation "
		   "%zu of %zu (%s)", tr->t->node, tr->t->prog,
		   pt_kind_name(p->kind), tr->pc, tr->t->nops,
		   pt_op_name(tr->t->ops[tr->pc].kind));
}

/* Every task done, and no node of it crashed (its memory went with it,
 * even when its own task had finished before). */
static bool program_done(const struct pt_runner *r, size_t prog)
{
	if (program_crashed(r, (uint32_t)prog))
		return false;
	for (size_t i = 0; i < r->sc->ntasks; i++)
		if (r->sc->tasks[i].prog == prog &&
		    r->tasks[i].state != PT_TASK_DONE)
			return false;
	return true;
}

/*
 * Done, and none of its connections failed: a put nobody flushed or
 * waited for after it may be lost with its connection (its error is the
 * connection's, surfaced to whoever uses it next), so only a program
 * whose connections all lived is held to the reference.
 */
static bool program_intact(const struct pt_runner *r, size_t prog)
{
	if (!program_done(r, prog))
		return false;
	for (size_t i = 0; i < r->sc->npairs; i++)
		for (int e = 0; e < 2; e++)
			if (r->sc->pairs[i].prog == prog &&
			    r->links[i].conn[e] &&
			    tv_port_conn_failed(r->links[i].conn[e]))
				return false;
	return true;
}

static void check_final(struct pt_runner *r, size_t prog)
{
	const struct pt_program *p = &r->sc->progs[prog];

	for (uint32_t i = 0; i < p->nnodes; i++) {
		uint32_t node = p->nodes[i];
		const uint8_t *got = r->nodes[node].data + p->region_off[node];
		uint8_t *want = calloc(1, p->region_bytes[node] + 1);
		uint64_t off, len;

		if (!want || pt_final_region(r->sc, r->seed, prog, node, want,
					     &off, &len)) {
			tv_tb_fail(r->run, TV_TB_FK_RUNNER, "final buffers: %s",
				   strerror(ENOMEM));
			free(want);
			return;
		}
		for (uint64_t b = off; b < off + len; b++)
			if (got[b] != want[b] && pt_corrupted(r)) {
				break;
			} else if (got[b] != want[b]) {
				tv_tb_fail(r->run, TV_TB_FK_DATA,
					   "invariant: program %u (%s) ended "
					   "with node %u's byte %" PRIu64 " of "
					   "its region 0x%02x, the reference "
					   "says 0x%02x", (unsigned)prog,
					   pt_kind_name(p->kind), node, b,
					   got[b], want[b]);
				break;
			}
		free(want);
	}
}

static void check_links(struct pt_runner *r)
{
	for (size_t i = 0; i < r->sc->npairs; i++) {
		if (!program_done(r, r->sc->pairs[i].prog))
			continue;
		for (int d = 0; d < 2; d++) {
			const struct pt_dir *dir = &r->links[i].dir[d];

			if (dir->waits_ok != dir->nsignals)
				tv_tb_fail(r->run, TV_TB_FK_DATA,
					   "invariant: node %u sent %zu signals "
					   "to node %u, which waited %" PRIu64
					   " times", dir->from, dir->nsignals,
					   dir->to, dir->waits_ok);
		}
	}
}

void pt_check(struct tv_tb_run *run, void *st)
{
	struct pt_runner *r = st;

	for (size_t i = 0; i < r->sc->ntasks; i++)
		check_task(r, &r->tasks[i]);
	for (uint32_t n = 0; n < r->sc->nodes; n++)
		if (r->nodes[n].up && r->nodes[n].handled != r->nodes[n].npushed)
			tv_tb_fail(run, TV_TB_FK_HANG,
				   "node %u's proxy left %" PRIu64 " of %" PRIu64
				   " triggers in its FIFO", n,
				   r->nodes[n].npushed - r->nodes[n].handled,
				   r->nodes[n].npushed);
	check_links(r);
	for (size_t p = 0; p < r->sc->nprogs; p++)
		if (program_intact(r, p))
			check_final(r, p);
}

void pt_check_end(struct tv_tb_run *run, void *st)
{
	struct pt_runner *r = st;
	struct tv_tb_result *res = tv_tb_run_result_mut(run);

	memset(&r->proxy_total, 0, sizeof(r->proxy_total));
	memset(&r->conn_total, 0, sizeof(r->conn_total));
	res->ops_ok = res->ops_failed = res->bytes = 0;
	for (size_t i = 0; i < r->sc->ntasks; i++) {
		res->ops_ok += r->tasks[i].ops_ok;
		res->ops_failed += r->tasks[i].state == PT_TASK_FAILED;
		res->bytes += r->tasks[i].bytes_ok;
	}
	for (uint32_t n = 0; n < r->sc->nodes; n++) {
		struct tv_port_proxy_stats ps;

		if (!r->nodes[n].proxy)
			continue;
		tv_port_proxy_stats(r->nodes[n].proxy, &ps);
		r->proxy_total.triggers += ps.triggers;
		r->proxy_total.data += ps.data;
		r->proxy_total.flags += ps.flags;
		r->proxy_total.syncs += ps.syncs;
		r->proxy_total.dropped += ps.dropped;
	}
	for (size_t i = 0; i < r->sc->npairs; i++)
		for (int e = 0; e < 2; e++) {
			struct tv_port_conn_stats cs;

			if (!r->links[i].conn[e])
				continue;
			tv_port_conn_stats(r->links[i].conn[e], &cs);
			r->conn_total.posted += cs.posted;
			r->conn_total.deferred += cs.deferred;
			r->conn_total.atomics += cs.atomics;
			r->conn_total.imm_signals += cs.imm_signals;
			if (cs.max_in_flight > r->conn_total.max_in_flight)
				r->conn_total.max_in_flight = cs.max_in_flight;
		}
}
