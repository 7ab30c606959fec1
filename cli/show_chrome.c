/*
 * `show --chrome`: the trace in Chrome's trace event format, for
 * chrome://tracing and Perfetto (ui.perfetto.dev opens the file as is).
 *
 * One process per node, three threads in each, by role:
 *   1 "receiver": requests it makes (TENSOR_REQUEST, RE_REQUEST sent,
 *     META_DATA_UPDATE / ERROR_STATUS received), tensor writes arriving,
 *     and each request's lifetime as an async slice (first REQ_ADVERTISE
 *     to RECV_DONE);
 *   2 "sender": requests it serves and the tensor writes it posts;
 *   3 "verbs": ACKs, QP states, error completions, channel errors.
 * A flow arrow (ph s -> f) links each tensor write's post to its delivery.
 * Times are virtual: 1 us in the viewer is 1 us of simulated time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "scenario_int.h" /* sc_grow */
#include "show.h"
#include "wire.h"   /* the protocol's immediates */

#define TID_RECEIVER 1
#define TID_SENDER 2
#define TID_VERBS 3

struct open_req {
	uint32_t node, peer, idx;
	uint64_t id;
	char name[SHOW_NAME_MAX + 16];
};

struct open_write {
	uint32_t from, to;
	uint64_t wr_id;
	uint32_t imm;
	uint64_t len;
	uint64_t id;
};

struct chrome {
	FILE *out;
	bool first;
	int err;
	uint64_t next_id;
	struct open_req *reqs;
	size_t nreqs, reqs_cap;
	struct open_write *writes;
	size_t nwrites, writes_cap;
};

static void put(struct chrome *c, json_t *ev)
{
	if (!ev) {
		c->err = -ENOMEM;
		return;
	}
	if (!c->err) {
		fputs(c->first ? "\n" : ",\n", c->out);
		c->first = false;
		/* 15 digits: virtual times in us keep their nanoseconds. */
		if (json_dumpf(ev, c->out, JSON_COMPACT | JSON_PRESERVE_ORDER |
			       JSON_REAL_PRECISION(15)))
			c->err = -EIO;
	}
	json_decref(ev);
}

static double ts_us(const struct show_event *e)
{
	return (double)e->t / 1000.0;
}

static void instant(struct chrome *c, const struct show_event *e, int tid,
		    const char *cat, const char *name, bool bad)
{
	put(c, json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:f, s:{s:I, s:o}}",
			 "ph", "i", "s", "t", "cat", cat, "name", name,
			 "pid", (json_int_t)e->node, "tid", tid, "ts", ts_us(e),
			 "args", "trace_index", (json_int_t)e->i, "peer",
			 e->peer == SHOW_NONE ? json_null() :
			 json_integer(e->peer)));
	if (bad)
		/* cname colours the mark in chrome://tracing. */
		put(c, json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:f, s:s}",
				 "ph", "i", "s", "t", "cat", "error", "name", "error",
				 "pid", (json_int_t)e->node, "tid", tid, "ts",
				 ts_us(e), "cname", "terrible"));
}

/* ---- tensor writes: a slice at each end, a flow between them ----------- */

static void write_slice(struct chrome *c, const struct show_event *e,
			uint32_t pid, int tid, const char *ph, uint64_t id)
{
	char name[48];

	snprintf(name, sizeof(name), "write #%u%s (%" PRIu64 " B)",
		 tv_imm_index(e->imm),
		 e->imm & TV_IMM_ACK_FLAG ? " +ACK" : "", e->len);
	put(c, json_pack("{s:s, s:s, s:s, s:I, s:i, s:f, s:f, s:{s:I, s:I}}",
			 "ph", "X", "cat", "write", "name", name,
			 "pid", (json_int_t)pid, "tid", tid, "ts", ts_us(e),
			 "dur", 0.001, "args", "trace_index", (json_int_t)e->i,
			 "bytes", (json_int_t)e->len));
	/* The flow binds to the slice just written (same thread and ts). */
	put(c, json_pack("{s:s, s:s, s:s, s:I, s:I, s:i, s:f, s:s}",
			 "ph", ph, "cat", "write", "name", "write",
			 "id", (json_int_t)id, "pid", (json_int_t)pid, "tid", tid,
			 "ts", ts_us(e), "bp", "e"));
}

static void on_write_post(struct chrome *c, const struct show_event *e)
{
	struct open_write *w;

	if (sc_grow((void **)&c->writes, c->nwrites + 1, &c->writes_cap,
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
	write_slice(c, e, e->node, TID_SENDER, "s", w->id);
}

static void on_write_deliver(struct chrome *c, const struct show_event *e)
{
	for (size_t k = 0; k < c->nwrites; k++) {
		struct open_write *w = &c->writes[k];

		if (w->from != e->peer || w->to != e->node ||
		    w->wr_id != e->wr_id || w->imm != e->imm || w->len != e->len)
			continue;
		write_slice(c, e, e->node, TID_RECEIVER, "f", w->id);
		/* Order does not matter: the list is searched, not queued. */
		c->writes[k] = c->writes[--c->nwrites];
		return;
	}
}

/* ---- request lifetimes: async slices ------------------------------------ */

static struct open_req *find_req(struct chrome *c, const struct show_event *e)
{
	for (size_t k = 0; k < c->nreqs; k++)
		if (c->reqs[k].node == e->node && c->reqs[k].peer == e->peer &&
		    c->reqs[k].idx == e->idx)
			return &c->reqs[k];
	return NULL;
}

static void req_async(struct chrome *c, const struct show_event *e,
		      const struct open_req *r, const char *ph)
{
	char id[24];

	snprintf(id, sizeof(id), "0x%" PRIx64, r->id);
	put(c, json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:f, s:{s:I, s:I}}",
			 "ph", ph, "cat", "request", "name", r->name, "id", id,
			 "pid", (json_int_t)e->node, "tid", TID_RECEIVER,
			 "ts", ts_us(e), "args", "step", (json_int_t)e->step,
			 "from_node", (json_int_t)e->peer));
}

static void on_advertise(struct chrome *c, const struct show_event *e)
{
	struct open_req *r;

	if (find_req(c, e))
		return;
	if (sc_grow((void **)&c->reqs, c->nreqs + 1, &c->reqs_cap,
		 sizeof(*c->reqs))) {
		c->err = -ENOMEM;
		return;
	}
	r = &c->reqs[c->nreqs++];
	r->node = e->node;
	r->peer = e->peer;
	r->idx = e->idx;
	r->id = ++c->next_id;
	snprintf(r->name, sizeof(r->name), "#%u %s", e->idx, e->name);
	req_async(c, e, r, "b");
}

static void on_recv_done(struct chrome *c, const struct show_event *e)
{
	struct open_req *r = find_req(c, e);
	bool bad = show_is_error_status(e->status);
	char name[SHOW_NAME_MAX + 48];

	snprintf(name, sizeof(name), "done #%u %s: %s", e->idx, e->name,
		 e->status);
	instant(c, e, TID_RECEIVER, "request", name, bad);
	if (!r)
		return;
	req_async(c, e, r, "e");
	*r = c->reqs[--c->nreqs];
}

/* ---- dispatch ----------------------------------------------------------- */

/* Requests are the receiver's; updates and errors the sender's. */
static int msg_tid(const struct show_event *e)
{
	bool from_receiver = !strcmp(e->msg, "TENSOR_REQUEST") ||
			     !strcmp(e->msg, "TENSOR_RE_REQUEST");
	bool sending = !strcmp(e->kind, "MSG_SEND");

	return from_receiver == sending ? TID_RECEIVER : TID_SENDER;
}

static void on_engine(struct chrome *c, const struct show_event *e)
{
	char name[SHOW_NAME_MAX + 64];

	if (!strcmp(e->kind, "MSG_SEND") || !strcmp(e->kind, "MSG_RECV")) {
		snprintf(name, sizeof(name), "%s %s #%u %s",
			 e->kind[4] == 'S' ? "send" : "recv", e->msg, e->idx,
			 e->name);
		instant(c, e, msg_tid(e), "message", name,
			!strcmp(e->msg, "ERROR_STATUS"));
	} else if (!strcmp(e->kind, "ACK_SEND") || !strcmp(e->kind, "ACK_RECV")) {
		instant(c, e, TID_VERBS, "ack", e->kind, false);
	} else if (!strcmp(e->kind, "TENSOR_WRITE")) {
		snprintf(name, sizeof(name), "TENSOR_WRITE #%u %s", e->idx,
			 e->name);
		instant(c, e, TID_SENDER, "write", name, false);
	} else if (!strcmp(e->kind, "REQ_ADVERTISE")) {
		on_advertise(c, e);
	} else if (!strcmp(e->kind, "RECV_DONE")) {
		on_recv_done(c, e);
	} else if (!strcmp(e->kind, "CHANNEL_ERROR")) {
		snprintf(name, sizeof(name), "channel error: %s %s", e->status,
			 e->name);
		instant(c, e, TID_VERBS, "error", name, true);
	}
}

/*
 * A QP going to ERR flushes every posted receive at once: one mark for the
 * whole run of identical error completions, with its count.
 */
static size_t same_errors(const struct show_trace *tr, size_t k)
{
	const struct show_event *e = &tr->ev[k];
	size_t n = 1;

	while (k + n < tr->nev) {
		const struct show_event *f = &tr->ev[k + n];

		if (f->src != SHOW_SIM || f->node != e->node || f->t != e->t ||
		    strcmp(f->kind, e->kind) || strcmp(f->status, e->status) ||
		    strcmp(f->op, e->op))
			break;
		n++;
	}
	return n;
}

static void on_sim(struct chrome *c, const struct show_event *e, size_t count)
{
	bool tensor = e->has_imm && tv_imm_is_write(e->imm);
	char name[128];

	if (!strcmp(e->kind, "POST_SEND") && tensor && e->peer != SHOW_NONE) {
		on_write_post(c, e);
	} else if (!strcmp(e->kind, "DELIVER") && tensor) {
		on_write_deliver(c, e);
	} else if (!strcmp(e->kind, "QP_STATE")) {
		snprintf(name, sizeof(name), "QP %u -> %s", e->qpn, e->state);
		instant(c, e, TID_VERBS, "qp", name, !strcmp(e->state, "ERR"));
	} else if ((!strcmp(e->kind, "CQE") && show_is_error_status(e->status)) ||
		   !strcmp(e->kind, "RNR") || !strcmp(e->kind, "CQ_OVERFLOW")) {
		snprintf(name, sizeof(name), "%s %s %s x%zu", e->kind,
			 e->status, e->op, count);
		instant(c, e, TID_VERBS, "error", name, true);
	}
}

static void put_names(struct chrome *c, const struct show_trace *tr)
{
	static const char *const threads[] = {
		[TID_RECEIVER] = "receiver", [TID_SENDER] = "sender",
		[TID_VERBS] = "verbs",
	};
	char name[32];

	for (uint32_t n = 0; n < tr->nodes; n++) {
		snprintf(name, sizeof(name), "node %u", n);
		put(c, json_pack("{s:s, s:s, s:I, s:{s:s}}", "ph", "M", "name",
				 "process_name", "pid", (json_int_t)n, "args",
				 "name", name));
		for (int t = TID_RECEIVER; t <= TID_VERBS; t++)
			put(c, json_pack("{s:s, s:s, s:I, s:i, s:{s:s}}", "ph",
					 "M", "name", "thread_name", "pid",
					 (json_int_t)n, "tid", t, "args", "name",
					 threads[t]));
	}
}

int show_chrome(const struct show_trace *tr, const struct show_range *rg,
		FILE *out)
{
	struct chrome c = { .out = out, .first = true };

	fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"seed\":%" PRIu64
		",\"result\":\"%s\"},\"traceEvents\":[", tr->seed,
		tr->result[0] ? tr->result : "?");
	put_names(&c, tr);
	for (size_t k = 0, n; k < tr->nev && !c.err; k += n) {
		const struct show_event *e = &tr->ev[k];

		n = 1;
		if (e->i < rg->first || e->i > rg->last || e->node == SHOW_NONE)
			continue;
		if (e->src == SHOW_SIM && !strcmp(e->kind, "CQE") &&
		    show_is_error_status(e->status))
			n = same_errors(tr, k);
		if (e->src == SHOW_SIM)
			on_sim(&c, e, n);
		else if (e->src == SHOW_ENGINE)
			on_engine(&c, e);
		else
			instant(&c, e, TID_VERBS, "fault",
				e->name[0] ? e->name : e->kind, true);
	}
	fputs("\n]}\n", out);
	free(c.reqs);
	free(c.writes);
	if (!c.err && ferror(out))
		c.err = -EIO;
	return c.err;
}
