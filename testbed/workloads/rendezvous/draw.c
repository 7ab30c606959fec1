/*
 * How `tensorverbs show` draws the rendezvous engines' events (docs/trace.md):
 * in the SVG, each control message, tensor write and ACK labels the arrow
 * of the post it made, receives and channel errors are notes; in Chrome's
 * format, three threads a node ("receiver": the requests it makes, the
 * writes arriving, each request's lifetime as an async slice; "sender":
 * the requests it serves and the writes it posts; "verbs": ACKs, QP
 * states, errors), and a flow from each tensor write's post to its
 * delivery.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <tensorverbs/workload.h>

#include "rv_workload.h"
#include "wire.h"   /* the protocol's immediates */

enum { ST_REQUEST, ST_META, ST_REREQ, ST_ERROR, ST_WRITE, ST_ACK };

static const struct tv_tb_draw_style styles[] = {
	[ST_REQUEST] = { "#1f5fbf", "TENSOR_REQUEST" },
	[ST_META] = { "#d9822b", "META_DATA_UPDATE" },
	[ST_REREQ] = { "#7a3db8", "TENSOR_RE_REQUEST" },
	[ST_ERROR] = { "#d62728", "ERROR_STATUS / error" },
	[ST_WRITE] = { "#2a9d3a", "tensor write" },
	[ST_ACK] = { "#a0a0a0", "ACK" },
};

#define TID_RECEIVER 1
#define TID_SENDER 2
#define TID_VERBS 3

static const char *const threads[] = {
	[TID_RECEIVER] = "receiver", [TID_SENDER] = "sender",
	[TID_VERBS] = "verbs",
};

void rv_show_parse(json_t *line, struct tv_tb_show_event *e)
{
	const char *msg = json_string_value(json_object_get(line, "msg"));
	const char *code = json_string_value(json_object_get(line, "code"));

	snprintf(e->tag, sizeof(e->tag), "%s", msg ? msg : "");
	snprintf(e->status, sizeof(e->status), "%s", code ? code : "");
}

/* ---- SVG ------------------------------------------------------------------ */

static void label(const struct tv_tb_show_event *e, struct tv_tb_svg_mark *m)
{
	char b[32];

	m->kind = TV_TB_MARK_LABEL;
	if (!strcmp(e->kind, "ACK_SEND")) {
		m->style = ST_ACK;
		m->quiet = true;
		m->width = 0.8;
		snprintf(m->text, sizeof(m->text), "ack");
	} else if (!strcmp(e->kind, "TENSOR_WRITE")) {
		tv_tb_fmt_bytes((double)e->len, b, sizeof(b));
		m->style = ST_WRITE;
		m->width = 2.6;
		snprintf(m->text, sizeof(m->text), "write #%u %s, %s", e->idx,
			 e->name, b);
	} else {
		m->style = !strcmp(e->tag, "TENSOR_REQUEST") ? ST_REQUEST :
			   !strcmp(e->tag, "META_DATA_UPDATE") ? ST_META :
			   !strcmp(e->tag, "TENSOR_RE_REQUEST") ? ST_REREQ :
								  ST_ERROR;
		m->width = 1.6;
		snprintf(m->text, sizeof(m->text), "%s #%u %s", e->tag, e->idx,
			 e->name);
	}
}

static void svg_event(const struct tv_tb_show_event *e,
		      struct tv_tb_svg_mark *m)
{
	bool ok = !tv_tb_show_is_error(e->status);

	if (!strcmp(e->kind, "MSG_SEND") || !strcmp(e->kind, "ACK_SEND") ||
	    !strcmp(e->kind, "TENSOR_WRITE")) {
		label(e, m);
	} else if (!strcmp(e->kind, "RECV_DONE")) {
		m->kind = TV_TB_MARK_NOTE;
		m->style = ok ? ST_WRITE : -1;
		snprintf(m->text, sizeof(m->text), "%s #%u %s%s%s",
			 ok ? "done" : "FAILED", e->idx, e->name, ok ? "" : ": ",
			 ok ? "" : e->status);
	} else if (!strcmp(e->kind, "CHANNEL_ERROR")) {
		m->kind = TV_TB_MARK_NOTE;
		m->style = -1;
		snprintf(m->text, sizeof(m->text), "channel to %u failed: %s %s",
			 e->peer, e->status, e->name);
	}
}

/* ---- Chrome ----------------------------------------------------------------- */

static bool chrome_flow(const struct tv_tb_show_event *e, char *name,
			size_t cap, int *tid_post, int *tid_deliver)
{
	if (!e->has_imm || !tv_imm_is_write(e->imm))
		return false;
	snprintf(name, cap, "write #%u%s (%" PRIu64 " B)", tv_imm_index(e->imm),
		 e->imm & TV_IMM_ACK_FLAG ? " +ACK" : "", e->len);
	*tid_post = TID_SENDER;
	*tid_deliver = TID_RECEIVER;
	return true;
}

/* Requests are the receiver's; updates and errors the sender's. */
static int msg_tid(const struct tv_tb_show_event *e)
{
	bool from_receiver = !strcmp(e->tag, "TENSOR_REQUEST") ||
			     !strcmp(e->tag, "TENSOR_RE_REQUEST");
	bool sending = !strcmp(e->kind, "MSG_SEND");

	return from_receiver == sending ? TID_RECEIVER : TID_SENDER;
}

static void on_recv_done(struct tv_tb_chrome *c,
			 const struct tv_tb_show_event *e)
{
	char name[TV_TB_SHOW_NAME_MAX + 48];

	snprintf(name, sizeof(name), "done #%u %s: %s", e->idx, e->name,
		 e->status);
	tv_tb_chrome_instant(c, e, TID_RECEIVER, "request", name,
			     tv_tb_show_is_error(e->status));
	tv_tb_chrome_async_end(c, e, e->idx);
}

static void chrome_event(struct tv_tb_chrome *c,
			 const struct tv_tb_show_event *e)
{
	char name[TV_TB_SHOW_NAME_MAX + 64];

	if (!strcmp(e->kind, "MSG_SEND") || !strcmp(e->kind, "MSG_RECV")) {
		snprintf(name, sizeof(name), "%s %s #%u %s",
			 e->kind[4] == 'S' ? "send" : "recv", e->tag, e->idx,
			 e->name);
		tv_tb_chrome_instant(c, e, msg_tid(e), "message", name,
				     !strcmp(e->tag, "ERROR_STATUS"));
	} else if (!strcmp(e->kind, "ACK_SEND") || !strcmp(e->kind, "ACK_RECV")) {
		tv_tb_chrome_instant(c, e, TID_VERBS, "ack", e->kind, false);
	} else if (!strcmp(e->kind, "TENSOR_WRITE")) {
		snprintf(name, sizeof(name), "TENSOR_WRITE #%u %s", e->idx,
			 e->name);
		tv_tb_chrome_instant(c, e, TID_SENDER, "write", name, false);
	} else if (!strcmp(e->kind, "REQ_ADVERTISE")) {
		snprintf(name, sizeof(name), "#%u %s", e->idx, e->name);
		tv_tb_chrome_async_begin(c, e, TID_RECEIVER, e->idx, name);
	} else if (!strcmp(e->kind, "RECV_DONE")) {
		on_recv_done(c, e);
	} else if (!strcmp(e->kind, "CHANNEL_ERROR")) {
		snprintf(name, sizeof(name), "channel error: %s %s", e->status,
			 e->name);
		tv_tb_chrome_instant(c, e, TID_VERBS, "error", name, true);
	}
}

const struct tv_tb_draw rv_draw = {
	.styles = styles,
	.nstyles = sizeof(styles) / sizeof(styles[0]),
	.svg_event = svg_event,
	.threads = threads,
	.nthreads = sizeof(threads) / sizeof(threads[0]),
	.verbs_tid = TID_VERBS,
	.chrome_flow = chrome_flow,
	.chrome_event = chrome_event,
};
