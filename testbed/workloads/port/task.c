/*
 * The producers: one task per program and node, running its operations
 * in order in virtual time, op_gap_ns apart, as a GPU thread block issues
 * them.  A blocked operation (FIFO full, a wait, a flush, packets not
 * there yet) polls again after poll_ns, backing off to poll_max_ns, until
 * its deadline (timeout_ns after it began); a wait's deadline is the
 * engine's to enforce (tv_port_sem_wait_poll), so a wait without one
 * (TV_BREAK=no-wait-timeout) shows as the hang it is.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fiu-local.h>

#include <tensorverbs/faults.h>

#include "pt.h"

#define STALL_DEFAULT_NS 100000ull
#define POLL_EAGER 256 /* polls at poll_ns before backing off (packets) */

static void task_cb(void *arg);

static uint64_t now(const struct pt_runner *r)
{
	return tv_tb_run_now_ns(r->run);
}

static int again(struct pt_task_run *tr, uint64_t at_ns)
{
	int rc = tv_tb_run_schedule(tr->r->run, at_ns, tr->t->node, task_cb,
				    tr);

	if (rc)
		tv_tb_fail(tr->r->run, TV_TB_FK_RUNNER,
			   "scheduling node %u's task: %s", tr->t->node,
			   strerror(-rc));
	return rc;
}

__attribute__((format(printf, 3, 4)))
static int task_fail(struct pt_task_run *tr, int err, const char *fmt, ...)
{
	const struct pt_program *p = &tr->r->sc->progs[tr->t->prog];
	char why[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	free(tr->msg);
	if (asprintf(&tr->msg, "node %u, program %u (%s), operation %zu "
		     "(%s): %s", tr->t->node, tr->t->prog, pt_kind_name(p->kind),
		     tr->pc, pt_op_name(tr->t->ops[tr->pc].kind), why) < 0)
		tr->msg = NULL;
	tr->state = PT_TASK_FAILED;
	tr->err = err;
	pt_trace_op(tr->r, tr, "FAIL", err);
	return err;
}

void pt_task_cancel(struct pt_task_run *tr, const char *why)
{
	if (tr->state != PT_TASK_RUNNING && tr->state != PT_TASK_IDLE)
		return;
	tr->state = PT_TASK_CANCELLED;
	free(tr->msg);
	tr->msg = strdup(why);
}

static struct pt_link *link_for(struct pt_task_run *tr,
				const struct pt_op *op, int *end_p)
{
	struct pt_link *l = pt_link_of(tr->r, tr->t->prog, tr->t->node,
				       op->peer, end_p);

	assert(l); /* every channel op's pair has a link (programs.c) */
	return l;
}

/* ---- pushes and flushes -------------------------------------------------- */

static int push_put(struct pt_task_run *tr, const struct pt_op *op,
		    struct pt_link *l, int e)
{
	struct pt_node *n = &tr->r->nodes[tr->t->node];
	uint64_t len = (op->flags & PT_PUT_PACKETS) && tr->r->plain_packets ?
			       op->plain_len : op->len;
	uint64_t digest = pt_digest(n->data + op->b, len);
	struct tv_port_chan *ch = l->chan[e];
	int rc;

	if (!(op->flags & PT_PUT_SIGNAL))
		rc = tv_port_chan_put(ch, op->a, op->b, len, &tr->flush_pos);
	else if (op->flags & PT_PUT_FLUSH)
		rc = tv_port_chan_put_with_signal_and_flush(ch, op->a, op->b,
							    len, &tr->flush_pos);
	else
		rc = tv_port_chan_put_with_signal(ch, op->a, op->b, len,
						  &tr->flush_pos);
	if (rc)
		return rc;
	pt_proxy_kick(n);
	/*
	 * What the receiver's wait will compare: the source now.  The books
	 * are the runner's, so is their failure: said as such, not left to
	 * the operation's error (a crashed program's errors are allowed).
	 */
	if (pt_dir_put(&l->dir[e], op->a, len, digest) ||
	    ((op->flags & PT_PUT_SIGNAL) && pt_dir_signal(&l->dir[e]))) {
		tv_tb_fail(tr->r->run, TV_TB_FK_RUNNER, "put books: %s",
			   strerror(ENOMEM));
		return -ENOMEM;
	}
	tr->bytes_ok += len;
	return 0;
}

/*
 * phase 0: push the trigger; 1: push a separate flush (a put with a
 * flush and no signal); 2: wait for the flush to be done.
 */
static int exec_put(struct pt_task_run *tr, const struct pt_op *op)
{
	int e, rc;
	struct pt_link *l = link_for(tr, op, &e);
	bool flush = op->flags & PT_PUT_FLUSH;

	if (tr->phase == 0) {
		rc = push_put(tr, op, l, e);
		if (rc)
			return rc;
		tr->phase = !flush ? 3 : (op->flags & PT_PUT_SIGNAL) ? 2 : 1;
	}
	if (tr->phase == 1) {
		rc = tv_port_chan_flush(l->chan[e], &tr->flush_pos);
		if (rc)
			return rc;
		pt_proxy_kick(&tr->r->nodes[tr->t->node]);
		tr->phase = 2;
	}
	if (tr->phase == 2)
		return tv_port_chan_flush_done(l->chan[e], tr->flush_pos);
	return 0;
}

static int exec_signal(struct pt_task_run *tr, const struct pt_op *op)
{
	int e, rc;
	struct pt_link *l = link_for(tr, op, &e);

	rc = tv_port_chan_signal(l->chan[e], NULL);
	if (rc)
		return rc;
	pt_proxy_kick(&tr->r->nodes[tr->t->node]);
	return pt_dir_signal(&l->dir[e]);
}

static int exec_flush(struct pt_task_run *tr, const struct pt_op *op)
{
	int e, rc;
	struct pt_link *l = link_for(tr, op, &e);

	if (tr->phase == 0) {
		rc = tv_port_chan_flush(l->chan[e], &tr->flush_pos);
		if (rc)
			return rc;
		pt_proxy_kick(&tr->r->nodes[tr->t->node]);
		tr->phase = 2;
	}
	return tv_port_chan_flush_done(l->chan[e], tr->flush_pos);
}

static int exec_wait(struct pt_task_run *tr, const struct pt_op *op)
{
	int e, rc;
	struct pt_link *l = link_for(tr, op, &e);

	rc = tv_port_sem_wait_poll(l->sem[e], tr->deadline_ns);
	if (!rc) {
		tr->r->waits++;
		pt_check_wait(tr->r, l, !e, tr);
	}
	return rc;
}

static bool peer_gone(const struct pt_task_run *tr, const struct pt_op *op)
{
	for (size_t i = 0; i < tr->r->sc->ntasks; i++) {
		const struct pt_task_run *o = &tr->r->tasks[i];

		if (o->t->prog == tr->t->prog && o->t->node == op->peer)
			return o->state != PT_TASK_RUNNING &&
			       o->state != PT_TASK_IDLE;
	}
	return true;
}

/*
 * Both ends of the link meet here: the second to come resets both
 * semaphores (no signal is in flight: the sender flushed, the receiver
 * took every signal), then both go on.
 */
static int exec_recycle(struct pt_task_run *tr, const struct pt_op *op)
{
	int e;
	struct pt_link *l = link_for(tr, op, &e);

	if (tr->phase == 0) {
		tr->phase = 2;
		tr->recycle_no = ++l->recycle_arrived[e];
		/* A peer that came and then crashed took its semaphore. */
		if (l->recycle_arrived[!e] >= tr->recycle_no && l->sem[!e]) {
			tv_port_sem_reset(l->sem[0]);
			tv_port_sem_reset(l->sem[1]);
			l->recycles++;
			pt_trace_op(tr->r, tr, "RECYCLE", 0);
		}
	}
	if (l->recycles >= tr->recycle_no)
		return 0;
	/* The other end ended (its error is its own): it will not come. */
	return peer_gone(tr, op) ? -ECANCELED : -EAGAIN;
}

/* ---- local work ------------------------------------------------------------ */

static void exec_reduce(uint8_t *dst, const uint8_t *src, uint64_t len)
{
	for (uint64_t i = 0; i + 4 <= len; i += 4) {
		float a, b;

		memcpy(&a, dst + i, 4);
		memcpy(&b, src + i, 4);
		a += b;
		memcpy(dst + i, &a, 4);
	}
}

static enum pt_format fmt_of(const struct pt_task_run *tr,
			     const struct pt_op *op)
{
	return tr->r->plain_packets ? PT_PLAIN : op->format;
}

static uint64_t up8(uint64_t v)
{
	return (v + 7) & ~7ull;
}

static int exec_pack(struct pt_task_run *tr, const struct pt_op *op,
		     uint8_t *data)
{
	uint32_t flag = op->iter + 1;
	uint64_t w = flag;

	switch (fmt_of(tr, op)) {
	case PT_LL16:
		return tv_port_ll16_pack(data + op->a, data + op->b, op->len,
					 flag);
	case PT_LL8:
		return tv_port_ll8_pack(data + op->a, data + op->b, op->len,
					flag);
	case PT_PLAIN:
		/* The broken design: data, then a flag word after it. */
		memmove(data + op->a, data + op->b, op->len);
		memcpy(data + op->a + up8(op->len), &w, 8);
		return 0;
	}
	return -EINVAL;
}

/* Ready when every packet is; then the data must be what was sent. */
static int exec_poll(struct pt_task_run *tr, const struct pt_op *op,
		     uint8_t *data)
{
	uint32_t flag = op->iter + 1;
	bool ready = false;

	tr->r->polls++;
	switch (fmt_of(tr, op)) {
	case PT_LL16:
		ready = tv_port_ll16_unpack(data + op->a, data + op->b,
					    op->len, flag) == op->len / 8;
		break;
	case PT_LL8:
		ready = tv_port_ll8_unpack(data + op->a, data + op->b, op->len,
					   flag) == op->len / 4;
		break;
	case PT_PLAIN: {
		uint64_t w;

		/* Last-byte polling: the flag word, then the data. */
		memcpy(&w, data + op->a + up8(op->len), 8);
		ready = w == flag;
		if (ready)
			memmove(data + op->b, data + op->a, op->len);
		break;
	}
	}
	if (!ready)
		return -EAGAIN;
	pt_check_packets(tr->r, tr, op);
	return 0;
}

static int exec_local(struct pt_task_run *tr, const struct pt_op *op)
{
	struct pt_runner *r = tr->r;
	uint8_t *data = r->nodes[tr->t->node].data;

	switch (op->kind) {
	case PT_OP_FILL:
		pt_pattern(r->seed, tr->t->prog, op->src_node, op->iter,
			   op->pat_off, data + op->a, op->len);
		return 0;
	case PT_OP_FILL_F32:
		pt_pattern_f32(r->seed, tr->t->prog, op->src_node, 0,
			       data + op->a, op->len);
		return 0;
	case PT_OP_REDUCE:
		exec_reduce(data + op->a, data + op->b, op->len);
		return 0;
	case PT_OP_COPY:
		memmove(data + op->a, data + op->b, op->len);
		return 0;
	case PT_OP_PACK:
		return exec_pack(tr, op, data);
	case PT_OP_POLL:
		return exec_poll(tr, op, data);
	default:
		break;
	}
	return -EINVAL;
}

static int exec_op(struct pt_task_run *tr, const struct pt_op *op)
{
	switch (op->kind) {
	case PT_OP_PUT: return exec_put(tr, op);
	case PT_OP_SIGNAL: return exec_signal(tr, op);
	case PT_OP_FLUSH: return exec_flush(tr, op);
	case PT_OP_WAIT: return exec_wait(tr, op);
	case PT_OP_RECYCLE: return exec_recycle(tr, op);
	default: return exec_local(tr, op);
	}
}

/* ---- the task loop ------------------------------------------------------------ */

static int op_error(struct pt_task_run *tr, const struct pt_op *op, int rc)
{
	struct pt_runner *r = tr->r;
	int e;
	struct pt_link *l;

	if (op->kind == PT_OP_FILL || op->kind == PT_OP_FILL_F32 ||
	    op->kind == PT_OP_REDUCE || op->kind == PT_OP_COPY ||
	    op->kind == PT_OP_PACK || op->kind == PT_OP_POLL)
		return task_fail(tr, rc, "%s", strerror(-rc));
	l = link_for(tr, op, &e);
	if (rc == -EIO)
		return task_fail(tr, rc, "the connection to node %u failed: %s",
				 op->peer, tv_port_conn_error(l->conn[e]));
	if (rc == -ECANCELED)
		return task_fail(tr, rc, "node %u's task ended before it met "
				 "this one to recycle their semaphores",
				 op->peer);
	if (rc == -EPROTO)
		return task_fail(tr, rc, "%s", tv_port_proxy_error(
					 r->nodes[tr->t->node].proxy));
	if (rc == -ETIMEDOUT)
		return task_fail(tr, rc, "no signal from node %u within %" PRIu64
				 " ns (inbound %" PRIu64 ", expected %" PRIu64
				 ")", op->peer, now(r) - tr->op_start_ns,
				 tv_port_sem_inbound(l->sem[e]),
				 tv_port_sem_expected(l->sem[e]));
	return task_fail(tr, rc, "%s", strerror(-rc));
}

static bool op_timed_out(struct pt_task_run *tr, const struct pt_op *op)
{
	/* A wait's deadline is the engine's. */
	if (op->kind == PT_OP_WAIT)
		return false;
	return now(tr->r) >= tr->deadline_ns;
}

static void blocked(struct pt_task_run *tr, const struct pt_op *op)
{
	const struct pt_scenario *sc = tr->r->sc;

	if (op_timed_out(tr, op)) {
		task_fail(tr, -ETIMEDOUT, "still blocked after %" PRIu64 " ns%s",
			  now(tr->r) - tr->op_start_ns,
			  op->kind == PT_OP_POLL ? " (packets not there)" :
			  op->kind == PT_OP_RECYCLE ? " (its peer never came "
			  "to recycle)" :
			  tr->phase == 2 ? " (flush not done)" : " (FIFO full)");
		return;
	}
	again(tr, now(tr->r) + tr->poll_ns);
	/* Packets are polled eagerly (a spinning reader); the rest back off. */
	if (op->kind != PT_OP_POLL || ++tr->polls_here > POLL_EAGER)
		tr->poll_ns = tr->poll_ns * 2 < sc->poll_max_ns ?
				      tr->poll_ns * 2 : sc->poll_max_ns;
}

static bool producer_stalls(struct pt_task_run *tr)
{
	bool stall = false;
	uint64_t ns = 0;

	fiu_do_on("port/producer/stall",
		  (stall = true, ns = (uint64_t)TV_FLT_ARG(STALL_DEFAULT_NS)));
	if (stall)
		again(tr, now(tr->r) + ns);
	return stall;
}

static void op_begin(struct pt_task_run *tr)
{
	const struct pt_program *p = &tr->r->sc->progs[tr->t->prog];

	tr->op_started = true;
	tr->op_start_ns = now(tr->r);
	tr->deadline_ns = tr->op_start_ns + p->timeout_ns;
	tr->poll_ns = tr->r->sc->poll_ns;
	tr->polls_here = 0;
	tr->phase = 0;
}

static void op_done(struct pt_task_run *tr)
{
	tr->op_started = false;
	tr->ops_ok++;
	pt_trace_op(tr->r, tr, "DONE", 0);
	if (++tr->pc == tr->t->nops) {
		tr->state = PT_TASK_DONE;
		return;
	}
	again(tr, now(tr->r) + tr->r->sc->op_gap_ns);
}

static void task_step(struct pt_task_run *tr)
{
	const struct pt_op *op = &tr->t->ops[tr->pc];
	int rc;

	if (!tr->op_started) {
		if (tv_tb_run_gate(tr->r->run, tr->t->node, pt_op_name(op->kind),
				   tr->t->prog, "op")) {
			pt_task_cancel(tr, "its node is down");
			return;
		}
		if (producer_stalls(tr))
			return;
		op_begin(tr);
	}
	rc = exec_op(tr, op);
	if (!rc)
		op_done(tr);
	else if (rc == -EAGAIN)
		blocked(tr, op);
	else
		op_error(tr, op, rc);
}

static void task_cb(void *arg)
{
	struct pt_task_run *tr = arg;
	uint32_t prev = tv_tb_run_enter(tr->r->run, tr->t->node);

	if (tr->state == PT_TASK_IDLE)
		tr->state = PT_TASK_RUNNING;
	if (tr->state == PT_TASK_RUNNING)
		task_step(tr);
	tv_tb_run_leave(tr->r->run, prev);
}

int pt_tasks_schedule(struct pt_runner *r)
{
	for (size_t i = 0; i < r->sc->ntasks; i++) {
		struct pt_task_run *tr = &r->tasks[i];
		int rc;

		tr->r = r;
		tr->idx = i;
		tr->t = &r->sc->tasks[i];
		if (!tr->t->nops) {
			tr->state = PT_TASK_DONE;
			continue;
		}
		rc = again(tr, r->sc->progs[tr->t->prog].start_ns);
		if (rc)
			return rc;
	}
	return 0;
}
