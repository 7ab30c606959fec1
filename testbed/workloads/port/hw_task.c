/*
 * The port workload's producers on real verbs: one thread per task, the
 * operations of programs.c run with the engine's blocking forms (spin,
 * then yield) and each operation's deadline; packets checked as they are
 * read; this node's regions checked against the reference at the end.
 * The engine's observer keeps the FIFO's books from every thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fiu-local.h>

#include <tensorverbs/faults.h>

#include "pt_hw.h"

#define STALL_DEFAULT_NS 100000ull

static uint64_t now_ns(const struct ph *h)
{
	return tv_vf_now_ns(h->dev);
}

__attribute__((format(printf, 3, 4)))
static int task_err(struct ph_task *pt, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pt->msg, sizeof(pt->msg), fmt, ap);
	va_end(ap);
	pt->err = err;
	return err;
}

static struct ph_link *link_of(struct ph *h, uint32_t prog, uint32_t peer)
{
	for (uint32_t i = 0; i < h->nlinks; i++)
		if (h->links[i].peer == peer &&
		    h->sc->pairs[h->links[i].pair].prog == prog)
			return &h->links[i];
	return NULL;
}

/* A push, again while the FIFO is full, until the deadline. */
static int push(struct ph_task *pt, struct ph_link *l, const struct pt_op *op,
		uint64_t deadline, uint64_t *pos_p)
{
	int rc;

	for (;;) {
		if (op->kind == PT_OP_SIGNAL)
			rc = tv_port_chan_signal(l->chan, pos_p);
		else if (op->kind == PT_OP_FLUSH)
			rc = tv_port_chan_flush(l->chan, pos_p);
		else if (!(op->flags & PT_PUT_SIGNAL))
			rc = tv_port_chan_put(l->chan, op->a, op->b, op->len,
					      pos_p);
		else if (op->flags & PT_PUT_FLUSH)
			rc = tv_port_chan_put_with_signal_and_flush(
				l->chan, op->a, op->b, op->len, pos_p);
		else
			rc = tv_port_chan_put_with_signal(l->chan, op->a, op->b,
							  op->len, pos_p);
		if (rc != -EAGAIN)
			return rc;
		if (now_ns(pt->h) >= deadline)
			return -ETIMEDOUT;
		sched_yield();
	}
}

static int chan_op(struct ph_task *pt, const struct pt_op *op,
		   uint64_t deadline)
{
	struct ph *h = pt->h;
	struct ph_link *l = link_of(h, pt->t->prog, op->peer);
	uint64_t pos = 0;
	bool flush;
	int rc;

	if (!l)
		return task_err(pt, -ENOENT, "no connection to node %u",
				op->peer);
	if (op->kind == PT_OP_WAIT) {
		rc = tv_port_chan_wait(l->chan, deadline);
		/* The counters are atomics: safe to read from this thread. */
		return rc ? task_err(pt, rc, "wait for node %u: %s%s%s "
				     "(inbound %" PRIu64 ", expected %" PRIu64
				     ")", op->peer, strerror(-rc), rc == -EIO ?
				     ": " : "", rc == -EIO ?
				     tv_port_conn_error(l->conn) : "",
				     tv_port_sem_inbound(l->sem),
				     tv_port_sem_expected(l->sem)) : 0;
	}
	flush = op->kind == PT_OP_FLUSH ||
		(op->kind == PT_OP_PUT && (op->flags & PT_PUT_FLUSH));
	rc = push(pt, l, op, deadline, &pos);
	if (!rc && op->kind == PT_OP_PUT)
		pt->bytes += op->len;
	/* A put with a flush and no signal: the flush is its own trigger. */
	if (!rc && flush && op->kind == PT_OP_PUT &&
	    !(op->flags & PT_PUT_SIGNAL)) {
		struct pt_op f = { .kind = PT_OP_FLUSH, .peer = op->peer };

		rc = push(pt, l, &f, deadline, &pos);
	}
	if (!rc && flush)
		rc = tv_port_chan_flush_wait(l->chan, pos, deadline);
	if (rc)
		return task_err(pt, rc, "%s to node %u: %s%s%s",
				pt_op_name(op->kind), op->peer, strerror(-rc),
				rc == -EIO ? ": " : "",
				rc == -EIO ? tv_port_conn_error(l->conn) : "");
	return 0;
}

static bool packets_ready(const struct pt_op *op, uint8_t *data)
{
	uint32_t flag = op->iter + 1;

	if (op->format == PT_LL8)
		return tv_port_ll8_unpack(data + op->a, data + op->b, op->len,
					  flag) == op->len / 4;
	return tv_port_ll16_unpack(data + op->a, data + op->b, op->len,
				   flag) == op->len / 8;
}

static int poll_op(struct ph_task *pt, const struct pt_op *op,
		   uint64_t deadline)
{
	struct ph *h = pt->h;
	uint8_t *want;
	int bad;

	while (!packets_ready(op, h->data)) {
		if (now_ns(h) >= deadline)
			return task_err(pt, -ETIMEDOUT, "packets #%u from node "
					"%u never came", op->iter + 1,
					op->src_node);
		sched_yield();
	}
	want = malloc(op->len ? op->len : 1);
	if (!want)
		return task_err(pt, -ENOMEM, "checking packets");
	pt_pattern(h->seed, pt->t->prog, op->src_node, op->iter, 0, want,
		   op->len);
	bad = memcmp(want, h->data + op->b, op->len);
	free(want);
	if (bad) {
		pt->data_bad++;
		return task_err(pt, -EBADMSG, "packets #%u from node %u read "
				"as complete hold other data than was sent",
				op->iter + 1, op->src_node);
	}
	return 0;
}

static int local_op(struct ph_task *pt, const struct pt_op *op)
{
	struct ph *h = pt->h;
	uint8_t *d = h->data;

	switch (op->kind) {
	case PT_OP_FILL:
		pt_pattern(h->seed, pt->t->prog, op->src_node, op->iter,
			   op->pat_off, d + op->a, op->len);
		return 0;
	case PT_OP_FILL_F32:
		pt_pattern_f32(h->seed, pt->t->prog, op->src_node, 0, d + op->a,
			       op->len);
		return 0;
	case PT_OP_REDUCE:
		for (uint64_t i = 0; i + 4 <= op->len; i += 4) {
			float a, b;

			memcpy(&a, d + op->a + i, 4);
			memcpy(&b, d + op->b + i, 4);
			a += b;
			memcpy(d + op->a + i, &a, 4);
		}
		return 0;
	case PT_OP_COPY:
		memmove(d + op->a, d + op->b, op->len);
		return 0;
	case PT_OP_PACK:
		return op->format == PT_LL8 ?
			       tv_port_ll8_pack(d + op->a, d + op->b, op->len,
						op->iter + 1) :
			       tv_port_ll16_pack(d + op->a, d + op->b, op->len,
						 op->iter + 1);
	default:
		return task_err(pt, -EINVAL, "operation %s on real verbs",
				pt_op_name(op->kind));
	}
}

static void stall(void)
{
	struct timespec ts;
	bool fire = false;
	uint64_t ns = 0;

	fiu_do_on("port/producer/stall",
		  (fire = true, ns = (uint64_t)TV_FLT_ARG(STALL_DEFAULT_NS)));
	if (!fire)
		return;
	ts.tv_sec = (time_t)(ns / 1000000000ull);
	ts.tv_nsec = (long)(ns % 1000000000ull);
	nanosleep(&ts, NULL);
}

static void *task_main(void *arg)
{
	struct ph_task *pt = arg;
	const struct pt_program *p = &pt->h->sc->progs[pt->t->prog];
	int rc = 0;

	for (size_t i = 0; !rc && i < pt->t->nops; i++) {
		const struct pt_op *op = &pt->t->ops[i];
		uint64_t deadline = now_ns(pt->h) + p->timeout_ns;

		stall();
		switch (op->kind) {
		case PT_OP_PUT: case PT_OP_SIGNAL: case PT_OP_FLUSH:
		case PT_OP_WAIT:
			rc = chan_op(pt, op, deadline);
			break;
		case PT_OP_POLL:
			rc = poll_op(pt, op, deadline);
			break;
		default:
			rc = local_op(pt, op);
			break;
		}
		if (!rc)
			pt->ops_ok++;
	}
	/* Release: the thread's counters are read after its state. */
	atomic_store_explicit(&pt->state, rc ? PH_FAILED : PH_DONE,
			      memory_order_release);
	return NULL;
}

/* ---- the tasks, from the testbed's thread ----------------------------------- */

int ph_tasks_init(struct ph *h)
{
	size_t n = 0;

	h->tasks = calloc(h->sc->ntasks + 1, sizeof(*h->tasks));
	if (!h->tasks)
		return -ENOMEM;
	for (size_t i = 0; i < h->sc->ntasks; i++) {
		if (h->sc->tasks[i].node != h->me)
			continue;
		h->tasks[n].h = h;
		h->tasks[n].t = &h->sc->tasks[i];
		atomic_init(&h->tasks[n].state, PH_IDLE);
		n++;
	}
	h->ntasks = n;
	return 0;
}

void ph_tasks_free(struct ph *h)
{
	ph_tasks_join(h);
	free(h->tasks);
	h->tasks = NULL;
}

int ph_tasks_start(struct ph *h, uint64_t t)
{
	for (size_t i = 0; i < h->ntasks; i++) {
		struct ph_task *pt = &h->tasks[i];
		int rc;

		if (h->sc->progs[pt->t->prog].start_ns != t || pt->started)
			continue;
		atomic_store_explicit(&pt->state, PH_RUNNING,
				      memory_order_relaxed);
		rc = pthread_create(&pt->th, NULL, task_main, pt);
		if (rc) {
			atomic_store(&pt->state, PH_FAILED);
			task_err(pt, -rc, "pthread_create: %s", strerror(rc));
			return -rc;
		}
		pt->started = true;
	}
	return 0;
}

bool ph_tasks_running(struct ph *h)
{
	for (size_t i = 0; i < h->ntasks; i++)
		if (atomic_load_explicit(&h->tasks[i].state,
					 memory_order_acquire) == PH_RUNNING)
			return true;
	return false;
}

static bool cond_tasks(void *ctx, uint64_t arg)
{
	(void)arg;
	return !ph_tasks_running(ctx);
}

void ph_tasks_join(struct ph *h)
{
	for (size_t i = 0; h->tasks && i < h->ntasks; i++) {
		struct ph_task *pt = &h->tasks[i];

		if (pt->started && !pt->joined) {
			pthread_join(pt->th, NULL);
			pt->joined = true;
		}
	}
}

/*
 * After a failure, what each of this node's connections did (read on the
 * proxy's thread, which owns them): a signal that was never sent, never
 * completed or never applied shows here, on real hardware, where there
 * is no trace.
 */
static void dump_links(const struct ph *h)
{
	for (uint32_t i = 0; i < h->nlinks; i++) {
		const struct ph_link *l = &h->links[i];
		struct tv_port_conn_stats cs;

		tv_port_conn_stats(l->conn, &cs);
		printf("  node %u -> node %u (program %u): %" PRIu64 " posted, %"
		       PRIu64 " completed, %" PRIu64 " deferred, %" PRIu64
		       " atomics, %" PRIu64 " imm signals sent, %" PRIu64
		       " applied; semaphore outbound %" PRIu64 ", inbound %"
		       PRIu64 ", expected %" PRIu64 "%s%s\n", h->me, l->peer,
		       h->sc->pairs[l->pair].prog, cs.posted, cs.completed,
		       cs.deferred, cs.atomics, cs.imm_signals, cs.imm_received,
		       tv_port_sem_outbound(l->sem), tv_port_sem_inbound(l->sem),
		       tv_port_sem_expected(l->sem),
		       tv_port_conn_failed(l->conn) ? "; failed: " : "",
		       tv_port_conn_error(l->conn));
	}
	fflush(stdout);
}

int ph_tasks_wait(struct ph *h)
{
	bool failed = false;

	int rc = tv_tb_hw_wait(h->hw, cond_tasks, h, 0,
			       "this node's producers");

	if (rc)
		return rc; /* a thread still runs: close() joins it */
	ph_tasks_join(h);
	for (size_t i = 0; i < h->ntasks; i++) {
		struct ph_task *pt = &h->tasks[i];

		if (atomic_load(&pt->state) != PH_FAILED || pt->err == 1)
			continue;
		pt->err = 1; /* reported */
		failed = true;
		h->data_bad += pt->data_bad;
		if (pt->data_bad || !tv_tb_hw_recovering(h->hw))
			tv_tb_hw_fail(h->hw, pt->data_bad ? TV_TB_FK_DATA :
				      TV_TB_FK_OUTCOME, "node %u, program %u "
				      "(%s): %s", h->me, pt->t->prog,
				      pt_kind_name(h->sc->progs[pt->t->prog].kind),
				      pt->msg);
		else /* not a failure of the run, but never without its why */
			printf("  node %u, program %u (%s): %s (tolerated: "
			       "faults were injected)\n", h->me, pt->t->prog,
			       pt_kind_name(h->sc->progs[pt->t->prog].kind),
			       pt->msg);
	}
	if (failed)
		dump_links(h);
	return 0;
}

void ph_tasks_stats(const struct ph *h, uint64_t *ok_p, uint64_t *ops_p,
		    uint64_t *failed_p, uint64_t *bytes_p)
{
	for (size_t i = 0; h->tasks && i < h->ntasks; i++) {
		const struct ph_task *pt = &h->tasks[i];

		*ops_p += pt->t->nops;
		if (!pt->started ||
		    atomic_load_explicit(&pt->state, memory_order_acquire) ==
			    PH_RUNNING)
			continue;
		*ok_p += pt->ops_ok;
		*bytes_p += pt->bytes;
		*failed_p += atomic_load(&pt->state) == PH_FAILED;
	}
}

/* ---- checks -------------------------------------------------------------------- */

static bool all_done(const struct ph *h)
{
	for (size_t i = 0; i < h->ntasks; i++)
		if (atomic_load(&h->tasks[i].state) != PH_DONE)
			return false;
	return true;
}

/*
 * Program prog's region of ours against the reference: 1 and the first
 * byte that differs in why, 0 when none does, -ENOMEM.
 */
static int region_differs(struct ph *h, uint32_t prog, char *why,
			  size_t cap)
{
	const struct pt_program *p = &h->sc->progs[prog];
	uint8_t *want = calloc(1, p->region_bytes[h->me] + 1);
	const uint8_t *got = h->data + p->region_off[h->me];
	uint64_t off, len;
	int bad = 0;

	if (!want || pt_final_region(h->sc, h->seed, prog, h->me, want, &off,
				     &len)) {
		free(want);
		return -ENOMEM;
	}
	for (uint64_t b = off; !bad && b < off + len; b++)
		if (got[b] != want[b]) {
			snprintf(why, cap, "program %u (%s) ended with node "
				 "%u's byte %" PRIu64 " 0x%02x, the reference "
				 "says 0x%02x", prog, pt_kind_name(p->kind),
				 h->me, b, got[b], want[b]);
			bad = 1;
		}
	free(want);
	return bad;
}

/*
 * Every task of ours done: each region must be what the reference says.
 * Without faults a difference fails here; with faults armed a peer's
 * failed put may explain it, so it is counted for node 0 (ph_check_end)
 * and named in this node's log.
 */
void ph_check_final(struct ph *h)
{
	bool faults = tv_tb_hw_recovering(h->hw);
	char why[320];

	if (!all_done(h))
		return;
	for (size_t t = 0; t < h->ntasks; t++) {
		int rc = region_differs(h, h->tasks[t].t->prog, why,
					sizeof(why));

		if (rc < 0) {
			tv_tb_hw_fail(h->hw, TV_TB_FK_RUNNER, "final check: %s",
				      strerror(-rc));
			return;
		}
		if (!rc)
			continue;
		if (faults) {
			h->final_bad++;
			printf("node %u: %s (faults armed: node 0 judges it)\n",
			       h->me, why);
		} else {
			h->data_bad++;
			tv_tb_hw_fail(h->hw, TV_TB_FK_DATA, "%s", why);
		}
	}
	if (h->bad[0])
		tv_tb_hw_fail(h->hw, TV_TB_FK_RUNNER, "%s", h->bad);
}

void ph_observe(void *ctx, const struct tv_port_event *ev)
{
	struct ph *h = ctx;

	switch (ev->kind) {
	case TV_PORT_EV_PUSH:
		/* Relaxed: a count, nothing is read through it. */
		atomic_fetch_add_explicit(&h->pushed, 1, memory_order_relaxed);
		break;
	case TV_PORT_EV_HANDLE:
		/* The proxy thread alone: in order, each once. */
		if (ev->pos != h->handled++ && !h->bad[0])
			snprintf(h->bad, sizeof(h->bad), "invariant: the proxy "
				 "took FIFO position %" PRIu64 ", expected %"
				 PRIu64, ev->pos, h->handled - 1);
		break;
	case TV_PORT_EV_BAD_TRIGGER:
		pthread_mutex_lock(&h->lock);
		if (!h->bad[0])
			snprintf(h->bad, sizeof(h->bad), "the proxy refused a "
				 "trigger of ours: %s", ev->msg ? ev->msg : "?");
		pthread_mutex_unlock(&h->lock);
		break;
	case TV_PORT_EV_CONN_ERROR:
		tv_tb_hw_log(h->hw, "connection to node %u failed: %s",
			     ev->peer, ev->msg ? ev->msg : "?");
		break;
	default:
		break;
	}
}
