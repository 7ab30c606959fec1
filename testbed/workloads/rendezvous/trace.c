/*
 * The rendezvous engines' events as trace lines (docs/trace.md):
 * {"src": "engine", "kind": "MSG_SEND", "node", "peer", "msg", "idx",
 * "step", "name", "rkey", "off", "len", "code"}, every key always there
 * (null where it does not apply), addresses as offsets (workload.h).
 */
#include <stddef.h>
#include <stdio.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/workload.h>

#include "rv_run.h"
#include "rv_scenario.h"

static const char *const engine_kind_names[] = {
	[TV_EV_MSG_SEND] = "MSG_SEND", [TV_EV_MSG_RECV] = "MSG_RECV",
	[TV_EV_ACK_SEND] = "ACK_SEND", [TV_EV_ACK_RECV] = "ACK_RECV",
	[TV_EV_REQ_ADVERTISE] = "REQ_ADVERTISE",
	[TV_EV_TENSOR_WRITE] = "TENSOR_WRITE",
	[TV_EV_RECV_DONE] = "RECV_DONE",
	[TV_EV_CHANNEL_ERROR] = "CHANNEL_ERROR",
};

const char *rv_engine_event_name(enum tv_engine_event_kind k)
{
	if ((size_t)k >= sizeof(engine_kind_names) / sizeof(engine_kind_names[0]) ||
	    !engine_kind_names[k])
		return NULL;
	return engine_kind_names[k];
}

static bool engine_has_request(enum tv_engine_event_kind k)
{
	return k != TV_EV_ACK_SEND && k != TV_EV_ACK_RECV &&
	       k != TV_EV_CHANNEL_ERROR;
}

static json_t *engine_code(const struct tv_engine_event *ev)
{
	/* RECV_DONE and CHANNEL_ERROR carry a status code; 0 means none. */
	if ((ev->kind == TV_EV_RECV_DONE || ev->kind == TV_EV_CHANNEL_ERROR) &&
	    ev->code >= 0 && ev->code <= TV_CODE_MAX)
		return json_string(tv_code_name((enum tv_code)ev->code));
	return ev->code ? json_integer(ev->code) : json_null();
}

static int set_fields(json_t *obj, const struct tv_engine_event *ev,
		      json_t *off)
{
	bool msg = ev->kind == TV_EV_MSG_SEND || ev->kind == TV_EV_MSG_RECV;
	bool req = engine_has_request(ev->kind);

	return json_object_set_new(obj, "node", json_integer(ev->node)) |
	       json_object_set_new(obj, "peer", tv_tb_json_node(ev->peer)) |
	       json_object_set_new(obj, "msg", msg ? json_string(
		       scenario_msg_type_name((int)ev->msg_type)) :
		       json_null()) |
	       json_object_set_new(obj, "idx", req ?
				   json_integer(ev->request_index) :
				   json_null()) |
	       json_object_set_new(obj, "step", req ?
				   tv_tb_json_u64(ev->step_id) : json_null()) |
	       json_object_set_new(obj, "name", tv_tb_json_str(ev->name)) |
	       json_object_set_new(obj, "rkey", ev->rkey ?
				   json_sprintf("0x%x", ev->rkey) :
				   json_null()) |
	       json_object_set_new(obj, "off", off) |
	       json_object_set_new(obj, "len", tv_tb_json_u64(ev->length)) |
	       json_object_set_new(obj, "code", engine_code(ev));
}

void rv_trace_engine_event(struct tv_tb_run *run,
			   const struct tv_engine_event *ev)
{
	/* Addresses name the receiver's memory: ours, or the peer's. */
	uint32_t mem_node = ev->kind == TV_EV_TENSOR_WRITE ? ev->peer : ev->node;
	const char *kind = rv_engine_event_name(ev->kind);
	char raw[16];
	json_t *obj, *off;

	if (!kind) {
		snprintf(raw, sizeof(raw), "%d", (int)ev->kind);
		kind = raw;
	}
	off = tv_tb_trace_addr(run, mem_node, ev->rkey, ev->addr);
	if (!off)
		return;
	obj = tv_tb_trace_line_new(run, kind);
	if (!obj) {
		json_decref(off);
		return;
	}
	if (set_fields(obj, ev, off)) {
		json_decref(obj);
		obj = NULL;
	}
	tv_tb_trace_emit(run, obj);
}
