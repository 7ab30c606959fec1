/*
 * The Chrome trace event format of a trace, for chrome://tracing and
 * Perfetto (ui.perfetto.dev opens the file as is).
 *
 * One process per node, with the threads the workload names (rendezvous:
 * "receiver", "sender", "verbs").  QP states, error completions and
 * faults go to the workload's verbs thread; a flow arrow (ph s -> f) links
 * each data write's post to its delivery (the workload says which writes
 * are data); the workload's own events become instants and async slices
 * (tv_tb_chrome_instant, tv_tb_chrome_async_*).  Times are virtual: 1 us
 * in the viewer is 1 us of simulated time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "show_int.h"

struct open_req {
	uint32_t node, peer;
	uint64_t key;
	uint64_t id;
	char name[TV_TB_SHOW_NAME_MAX + 16];
	int tid;
};

struct open_write {
	int tid_deliver;
	uint32_t from, to;
	uint64_t wr_id;
	uint32_t imm;
	uint64_t len;
	uint64_t id;
};

struct tv_tb_chrome {
	FILE *out;
	bool first;
	int err;
	uint64_t next_id;
	struct open_req *reqs;
	size_t nreqs, reqs_cap;
	struct open_write *writes;
	size_t nwrites, writes_cap;
};

static void put(struct tv_tb_chrome *c, json_t *ev)
{
	if (!ev) {
		c->err = -ENOMEM;
		return;
	}
	if (!c->err) {
		fputs(c->first ? "\n" : ",\n", c->out);
		c->first = false;
		/* 15 digits: virtual times in us keep their nanoseconds. */
		errno = 0;
		if (json_dumpf(ev, c->out, JSON_COMPACT | JSON_PRESERVE_ORDER |
			       JSON_REAL_PRECISION(15)))
			c->err = errno == ENOMEM ? -ENOMEM : -EIO;
	}
	json_decref(ev);
}

static double ts_us(const struct tv_tb_show_event *e)
{
	return (double)e->t / 1000.0;
}

void tv_tb_chrome_instant(struct tv_tb_chrome *c,
			  const struct tv_tb_show_event *e, int tid,
			  const char *cat, const char *name, bool bad)
{
	put(c, json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:f, s:{s:I, s:o}}",
			 "ph", "i", "s", "t", "cat", cat, "name", name,
			 "pid", (json_int_t)e->node, "tid", tid, "ts", ts_us(e),
			 "args", "trace_index", (json_int_t)e->i, "peer",
			 e->peer == TV_TB_SHOW_NONE ? json_null() :
			 json_integer(e->peer)));
	if (bad)
		/* cname colours the mark in chrome://tracing. */
		put(c, json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:f, s:s}",
				 "ph", "i", "s", "t", "cat", "error", "name", "error",
				 "pid", (json_int_t)e->node, "tid", tid, "ts",
				 ts_us(e), "cname", "terrible"));
}

/* ---- data writes: a slice at each end, a flow between them -------------- */

static void write_slice(struct tv_tb_chrome *c, const struct tv_tb_show_event *e,
			const char *name, int tid, const char *ph, uint64_t id)
{
	put(c, json_pack("{s:s, s:s, s:s, s:I, s:i, s:f, s:f, s:{s:I, s:I}}",
			 "ph", "X", "cat", "write", "name", name,
			 "pid", (json_int_t)e->node, "tid", tid, "ts", ts_us(e),
			 "dur", 0.001, "args", "trace_index", (json_int_t)e->i,
			 "bytes", (json_int_t)e->len));
	/* The flow binds to the slice just written (same thread and ts). */
	put(c, json_pack("{s:s, s:s, s:s, s:I, s:I, s:i, s:f, s:s}",
			 "ph", ph, "cat", "write", "name", "write",
			 "id", (json_int_t)id, "pid", (json_int_t)e->node,
			 "tid", tid, "ts", ts_us(e), "bp", "e"));
}

static void on_write_post(struct tv_tb_chrome *c,
			  const struct tv_tb_show_event *e, const char *name,
			  int tid_post, int tid_deliver)
{
	struct open_write *w;

	if (tv_ju_grow((void **)&c->writes, c->nwrites, &c->writes_cap,
		       sizeof(*c->writes))) {
		c->err = -ENOMEM;
		return;
	}
	w = &c->writes[c->nwrites++];
	w->from = e->node;
	w->to = e->peer;
	w->wr_id = e->wr_id;
	w->imm = e->imm;
	w->len = e->len;
	w->id = ++c->next_id;
	w->tid_deliver = tid_deliver;
	write_slice(c, e, name, tid_post, "s", w->id);
}

static void on_write_deliver(struct tv_tb_chrome *c,
			     const struct tv_tb_show_event *e, const char *name)
{
	for (size_t k = 0; k < c->nwrites; k++) {
		struct open_write *w = &c->writes[k];

		if (w->from != e->peer || w->to != e->node ||
		    w->wr_id != e->wr_id || w->imm != e->imm || w->len != e->len)
			continue;
		write_slice(c, e, name, w->tid_deliver, "f", w->id);
		/* Order does not matter: the list is searched, not queued. */
		c->writes[k] = c->writes[--c->nwrites];
		return;
	}
}

/* ---- async slices (a workload's request lifetimes) ---------------------- */

static struct open_req *find_req(struct tv_tb_chrome *c,
				 const struct tv_tb_show_event *e, uint64_t key)
{
	for (size_t k = 0; k < c->nreqs; k++)
		if (c->reqs[k].node == e->node && c->reqs[k].peer == e->peer &&
		    c->reqs[k].key == key)
			return &c->reqs[k];
	return NULL;
}

static void req_async(struct tv_tb_chrome *c, const struct tv_tb_show_event *e,
		      const struct open_req *r, const char *ph)
{
	char id[24];

	snprintf(id, sizeof(id), "0x%" PRIx64, r->id);
	put(c, json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:f, s:{s:I, s:I}}",
			 "ph", ph, "cat", "request", "name", r->name, "id", id,
			 "pid", (json_int_t)e->node, "tid", r->tid,
			 "ts", ts_us(e), "args", "step", (json_int_t)e->step,
			 "from_node", (json_int_t)e->peer));
}

void tv_tb_chrome_async_begin(struct tv_tb_chrome *c,
			      const struct tv_tb_show_event *e, int tid,
			      uint64_t key, const char *name)
{
	struct open_req *r;

	if (find_req(c, e, key))
		return;
	if (tv_ju_grow((void **)&c->reqs, c->nreqs, &c->reqs_cap,
		       sizeof(*c->reqs))) {
		c->err = -ENOMEM;
		return;
	}
	r = &c->reqs[c->nreqs++];
	r->node = e->node;
	r->peer = e->peer;
	r->key = key;
	r->tid = tid;
	r->id = ++c->next_id;
	snprintf(r->name, sizeof(r->name), "%s", name);
	req_async(c, e, r, "b");
}

void tv_tb_chrome_async_end(struct tv_tb_chrome *c,
			    const struct tv_tb_show_event *e, uint64_t key)
{
	struct open_req *r = find_req(c, e, key);

	if (!r)
		return;
	req_async(c, e, r, "e");
	*r = c->reqs[--c->nreqs];
}

/* ---- dispatch ------------------------------------------------------------ */

/*
 * A QP going to ERR flushes every posted receive at once: one mark for the
 * whole run of identical error completions, with its count.
 */
static size_t same_errors(const struct show_trace *tr, size_t k)
{
	const struct tv_tb_show_event *e = &tr->ev[k];
	size_t n = 1;

	while (k + n < tr->nev) {
		const struct tv_tb_show_event *f = &tr->ev[k + n];

		if (f->src != TV_TB_SHOW_SIM || f->node != e->node ||
		    f->t != e->t || strcmp(f->kind, e->kind) ||
		    strcmp(f->status, e->status) || strcmp(f->op, e->op))
			break;
		n++;
	}
	return n;
}

static void on_sim(struct tv_tb_chrome *c, const struct tv_tb_draw *d,
		   const struct tv_tb_show_event *e, size_t count)
{
	int tid_post = 0, tid_deliver = 0;
	bool post = !strcmp(e->kind, "POST_SEND") && e->peer != TV_TB_SHOW_NONE;
	bool deliver = !strcmp(e->kind, "DELIVER");
	char name[128];

	if ((post || deliver) && d->chrome_flow &&
	    d->chrome_flow(e, name, sizeof(name), &tid_post, &tid_deliver)) {
		if (post)
			on_write_post(c, e, name, tid_post, tid_deliver);
		else
			on_write_deliver(c, e, name);
	} else if (!strcmp(e->kind, "QP_STATE")) {
		snprintf(name, sizeof(name), "QP %u -> %s", e->qpn, e->state);
		tv_tb_chrome_instant(c, e, d->verbs_tid, "qp", name,
				     !strcmp(e->state, "ERR"));
	} else if ((!strcmp(e->kind, "CQE") && tv_tb_show_is_error(e->status)) ||
		   !strcmp(e->kind, "RNR") || !strcmp(e->kind, "CQ_OVERFLOW")) {
		snprintf(name, sizeof(name), "%s %s %s x%zu", e->kind,
			 e->status, e->op, count);
		tv_tb_chrome_instant(c, e, d->verbs_tid, "error", name, true);
	}
}

static void put_names(struct tv_tb_chrome *c, const struct show_trace *tr,
		      const struct tv_tb_draw *d)
{
	char name[32];

	for (uint32_t n = 0; n < tr->nodes; n++) {
		snprintf(name, sizeof(name), "node %u", n);
		put(c, json_pack("{s:s, s:s, s:I, s:{s:s}}", "ph", "M", "name",
				 "process_name", "pid", (json_int_t)n, "args",
				 "name", name));
		for (size_t t = 1; t < d->nthreads; t++)
			put(c, json_pack("{s:s, s:s, s:I, s:i, s:{s:s}}", "ph",
					 "M", "name", "thread_name", "pid",
					 (json_int_t)n, "tid", (int)t, "args",
					 "name", d->threads[t]));
	}
}

/* A workload without drawing ops: one thread, its events as instants. */
static void default_event(struct tv_tb_chrome *c,
			  const struct tv_tb_show_event *e)
{
	tv_tb_chrome_instant(c, e, 1, "event", e->kind,
			     tv_tb_show_is_error(e->status));
}

static const char *const default_threads[] = { NULL, "events" };
static const struct tv_tb_draw default_draw = {
	.threads = default_threads, .nthreads = 2, .verbs_tid = 1,
	.chrome_event = default_event,
};

int show_chrome(const struct show_trace *tr, const struct show_range *rg,
		FILE *out)
{
	const struct tv_tb_draw *d = tr->ops->draw && tr->ops->draw->chrome_event ?
				     tr->ops->draw : &default_draw;
	struct tv_tb_chrome c = { .out = out, .first = true };

	fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"seed\":%" PRIu64
		",\"result\":\"%s\"},\"traceEvents\":[", tr->seed,
		tr->result[0] ? tr->result : "?");
	put_names(&c, tr, d);
	for (size_t k = 0, n; k < tr->nev && !c.err; k += n) {
		const struct tv_tb_show_event *e = &tr->ev[k];

		n = 1;
		if (e->i < rg->first || e->i > rg->last ||
		    e->node == TV_TB_SHOW_NONE)
			continue;
		if (e->src == TV_TB_SHOW_SIM && !strcmp(e->kind, "CQE") &&
		    tv_tb_show_is_error(e->status))
			n = same_errors(tr, k);
		if (e->src == TV_TB_SHOW_SIM)
			on_sim(&c, d, e, n);
		else if (e->src == TV_TB_SHOW_WORKLOAD)
			d->chrome_event(&c, e);
		else
			tv_tb_chrome_instant(&c, e, d->verbs_tid, "fault",
					     e->name[0] ? e->name : e->kind,
					     true);
	}
	fputs("\n]}\n", out);
	free(c.reqs);
	free(c.writes);
	if (!c.err && ferror(out))
		c.err = -EIO;
	return c.err;
}
