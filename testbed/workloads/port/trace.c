/*
 * The port engines' events and the producers' operations as trace lines
 * (docs/trace.md, docs/port.md): {"src": "port", "kind": "PUSH", "node",
 * "peer", "pos", "type", "op", "len", "value", "code", "name"}, every key
 * always there (null where it does not apply); and how `tensorverbs show`
 * draws them: pushes and the proxy's work as notes, the posts' arrows
 * labelled, failures in red.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pt.h"

static const char *const kind_names[] = {
	[TV_PORT_EV_PUSH] = "PUSH", [TV_PORT_EV_SLOT_STORE] = "SLOT_STORE",
	[TV_PORT_EV_HANDLE] = "HANDLE", [TV_PORT_EV_POST] = "POST",
	[TV_PORT_EV_DEFER] = "DEFER", [TV_PORT_EV_FLUSH_REQ] = "FLUSH_REQ",
	[TV_PORT_EV_FLUSH_DONE] = "FLUSH_DONE", [TV_PORT_EV_SIGNAL] = "SIGNAL",
	[TV_PORT_EV_IMM_APPLIED] = "IMM_APPLIED",
	[TV_PORT_EV_CONN_ERROR] = "CONN_ERROR",
	[TV_PORT_EV_BAD_TRIGGER] = "BAD_TRIGGER",
};

static const char *const post_names[] = {
	[TV_PORT_OP_WRITE] = "write",
	[TV_PORT_OP_ATOMIC_ADD] = "fetch_add",
	[TV_PORT_OP_WRITE_IMM] = "write_imm",
};

/* "data|flag|sync" of a trigger's type bits. */
static void type_text(uint32_t type, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s%s%s", type & TV_PORT_TRIGGER_DATA ? "data" : "",
		 (type & TV_PORT_TRIGGER_DATA) && (type & 6) ? "|" : "",
		 type & TV_PORT_TRIGGER_FLAG ? ((type & TV_PORT_TRIGGER_SYNC) ?
						"flag|" : "flag") : "",
		 type & TV_PORT_TRIGGER_SYNC ? "sync" : "");
}

static bool has_trigger(enum tv_port_event_kind k)
{
	return k == TV_PORT_EV_PUSH || k == TV_PORT_EV_SLOT_STORE ||
	       k == TV_PORT_EV_HANDLE || k == TV_PORT_EV_BAD_TRIGGER;
}

static bool has_pos(enum tv_port_event_kind k)
{
	return has_trigger(k) || k == TV_PORT_EV_FLUSH_REQ ||
	       k == TV_PORT_EV_FLUSH_DONE;
}

static bool has_post(enum tv_port_event_kind k)
{
	return k == TV_PORT_EV_POST || k == TV_PORT_EV_DEFER;
}

static int set_fields(json_t *o, const struct tv_port_event *ev)
{
	struct tv_port_trigger_fields f;
	char type[24] = "";
	uint64_t len = ev->length;

	tv_port_trigger_unpack(&ev->trig, &f);
	if (has_trigger(ev->kind)) {
		type_text(f.type, type, sizeof(type));
		len = f.size_bytes;
	}
	return json_object_set_new(o, "node", json_integer(ev->node)) |
	       json_object_set_new(o, "peer", tv_tb_json_node(ev->peer)) |
	       json_object_set_new(o, "pos", has_pos(ev->kind) ?
				   tv_tb_json_u64(ev->pos) : json_null()) |
	       json_object_set_new(o, "type", has_trigger(ev->kind) ?
				   json_string(type) : json_null()) |
	       json_object_set_new(o, "op", has_post(ev->kind) &&
				   ev->op < 4 && post_names[ev->op] ?
				   json_string(post_names[ev->op]) :
				   json_null()) |
	       json_object_set_new(o, "len", tv_tb_json_u64(len)) |
	       json_object_set_new(o, "value", tv_tb_json_u64(ev->value)) |
	       json_object_set_new(o, "code", ev->code ?
				   json_integer(ev->code) : json_null()) |
	       json_object_set_new(o, "name", tv_tb_json_str(ev->msg));
}

void pt_trace_engine(struct tv_tb_run *run, const struct tv_port_event *ev)
{
	const char *kind = (size_t)ev->kind < sizeof(kind_names) /
			   sizeof(kind_names[0]) ? kind_names[ev->kind] : NULL;
	json_t *o = tv_tb_trace_line_new(run, kind ? kind : "?");

	if (!o)
		return;
	if (set_fields(o, ev)) {
		json_decref(o);
		o = NULL;
	}
	tv_tb_trace_emit(run, o);
}

void pt_trace_op(struct pt_runner *r, const struct pt_task_run *tr,
		 const char *what, int code)
{
	const struct pt_op *op = &tr->t->ops[tr->pc];
	json_t *o = tv_tb_trace_line_new(r->run, what);
	char name[TV_TB_SHOW_NAME_MAX];

	if (!o)
		return;
	snprintf(name, sizeof(name), "p%u %s", tr->t->prog,
		 pt_op_name(op->kind));
	if (json_object_set_new(o, "node", json_integer(tr->t->node)) |
	    json_object_set_new(o, "peer", op->kind == PT_OP_PUT ||
				op->kind == PT_OP_WAIT ||
				op->kind == PT_OP_SIGNAL ||
				op->kind == PT_OP_FLUSH ||
				op->kind == PT_OP_RECYCLE ?
				json_integer(op->peer) : json_null()) |
	    json_object_set_new(o, "pos", json_integer((json_int_t)tr->pc)) |
	    json_object_set_new(o, "type", json_null()) |
	    json_object_set_new(o, "op", json_string(pt_op_name(op->kind))) |
	    json_object_set_new(o, "len", tv_tb_json_u64(op->len)) |
	    json_object_set_new(o, "value", json_integer(tr->t->prog)) |
	    json_object_set_new(o, "code", code ? json_integer(code) :
				json_null()) |
	    json_object_set_new(o, "name", json_string(name))) {
		json_decref(o);
		o = NULL;
	}
	tv_tb_trace_emit(r->run, o);
}

/* ---- drawings ------------------------------------------------------------------ */

enum { ST_WRITE, ST_SIGNAL, ST_FIFO, ST_FLUSH, ST_OP };

static const struct tv_tb_draw_style styles[] = {
	[ST_WRITE] = { "#2a9d3a", "put (RDMA write)" },
	[ST_SIGNAL] = { "#1f5fbf", "signal (atomic / write-imm)" },
	[ST_FIFO] = { "#a0a0a0", "FIFO push / proxy" },
	[ST_FLUSH] = { "#7a3db8", "flush" },
	[ST_OP] = { "#d9822b", "producer operation" },
};

#define TID_PRODUCER 1
#define TID_PROXY 2
#define TID_VERBS 3

static const char *const threads[] = {
	[TID_PRODUCER] = "producers", [TID_PROXY] = "proxy",
	[TID_VERBS] = "verbs",
};

void pt_show_parse(json_t *line, struct tv_tb_show_event *e)
{
	const char *op = json_string_value(json_object_get(line, "op"));
	const char *type = json_string_value(json_object_get(line, "type"));
	json_t *pos = json_object_get(line, "pos");
	json_t *code = json_object_get(line, "code");

	snprintf(e->tag, sizeof(e->tag), "%s", op ? op : type ? type : "");
	if (json_is_integer(pos)) {
		e->has_idx = true;
		e->idx = (uint32_t)json_integer_value(pos);
	}
	if (json_is_integer(code))
		snprintf(e->status, sizeof(e->status), "error %d",
			 (int)json_integer_value(code));
}

static void svg_event(const struct tv_tb_show_event *e,
		      struct tv_tb_svg_mark *m)
{
	if (!strcmp(e->kind, "POST")) {
		m->kind = TV_TB_MARK_LABEL;
		m->style = !strcmp(e->tag, "write") ? ST_WRITE : ST_SIGNAL;
		m->width = !strcmp(e->tag, "write") ? 2.2 : 1.4;
		snprintf(m->text, sizeof(m->text), "%s %" PRIu64 " B", e->tag,
			 e->len);
	} else if (!strcmp(e->kind, "FLUSH_DONE")) {
		m->kind = TV_TB_MARK_NOTE;
		m->style = ST_FLUSH;
		snprintf(m->text, sizeof(m->text), "flush @%u done", e->idx);
	} else if (!strcmp(e->kind, "CONN_ERROR") ||
		   !strcmp(e->kind, "FAIL")) {
		m->kind = TV_TB_MARK_NOTE;
		m->style = -1;
		snprintf(m->text, sizeof(m->text), "%s: %s", e->kind, e->name);
	} else if (!strcmp(e->kind, "RECYCLE")) {
		m->kind = TV_TB_MARK_NOTE;
		m->style = ST_OP;
		snprintf(m->text, sizeof(m->text), "semaphores recycled");
	}
}

static void chrome_event(struct tv_tb_chrome *c,
			 const struct tv_tb_show_event *e)
{
	char name[TV_TB_SHOW_NAME_MAX + 48];
	bool bad = tv_tb_show_is_error(e->status);

	if (!strcmp(e->kind, "DONE") || !strcmp(e->kind, "FAIL") ||
	    !strcmp(e->kind, "RECYCLE")) {
		snprintf(name, sizeof(name), "%s %s", e->name, e->kind);
		tv_tb_chrome_instant(c, e, TID_PRODUCER, "op", name, bad ||
				     !strcmp(e->kind, "FAIL"));
	} else if (!strcmp(e->kind, "PUSH")) {
		snprintf(name, sizeof(name), "push @%u %s", e->idx, e->tag);
		tv_tb_chrome_instant(c, e, TID_PRODUCER, "fifo", name, false);
	} else if (!strcmp(e->kind, "HANDLE") || !strcmp(e->kind, "DEFER") ||
		   !strcmp(e->kind, "FLUSH_REQ") ||
		   !strcmp(e->kind, "FLUSH_DONE")) {
		snprintf(name, sizeof(name), "%s @%u %s", e->kind, e->idx,
			 e->tag);
		tv_tb_chrome_instant(c, e, TID_PROXY, "proxy", name, false);
	} else if (!strcmp(e->kind, "CONN_ERROR") ||
		   !strcmp(e->kind, "BAD_TRIGGER")) {
		snprintf(name, sizeof(name), "%s: %s", e->kind, e->name);
		tv_tb_chrome_instant(c, e, TID_VERBS, "error", name, true);
	}
}

const struct tv_tb_draw pt_draw = {
	.styles = styles,
	.nstyles = sizeof(styles) / sizeof(styles[0]),
	.svg_event = svg_event,
	.threads = threads,
	.nthreads = sizeof(threads) / sizeof(threads[0]),
	.verbs_tid = TID_VERBS,
	.chrome_event = chrome_event,
};
