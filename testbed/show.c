/*
 * The drawings of a trace (docs/trace.md): an SVG sequence diagram and a
 * Chrome/Perfetto trace.  This file reads the trace; show_svg.c and
 * show_chrome.c draw it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "show_int.h"

const char show_col_error[] = "#d62728";

bool tv_tb_show_is_error(const char *status)
{
	return status[0] && strcmp(status, "SUCCESS") && strcmp(status, "OK");
}

/* ---- reading the trace -------------------------------------------------- */

static void get_str(json_t *obj, const char *key, char *buf, size_t cap)
{
	const char *s = json_string_value(json_object_get(obj, key));
	size_t n = s ? strlen(s) : 0;

	buf[0] = '\0';
	if (!s)
		return;
	if (n < cap) {
		memcpy(buf, s, n + 1);
		return;
	}
	/* Long names are cut: the drawings have no room for them anyway. */
	snprintf(buf, cap, "%.*s...", (int)(cap - 4), s);
}

/* Integers, or "0x..." strings (wr_id, imm, large values). */
static bool get_u64(json_t *obj, const char *key, uint64_t *v_p)
{
	json_t *v = json_object_get(obj, key);

	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*v_p = (uint64_t)json_integer_value(v);
		return true;
	}
	return json_is_string(v) && !tv_tb_parse_u64(json_string_value(v), v_p);
}

static uint32_t get_node(json_t *obj, const char *key)
{
	uint64_t v;

	return get_u64(obj, key, &v) && v < TV_TB_SHOW_NONE ? (uint32_t)v : TV_TB_SHOW_NONE;
}

static void parse_event(const struct show_trace *tr, json_t *obj,
			struct tv_tb_show_event *e)
{
	const char *src = json_string_value(json_object_get(obj, "src"));
	/* As the trace names them (tv_tb_trace_line_new). */
	const char *wl = tr->ops->event_src ? tr->ops->event_src :
					      tr->ops->name;
	uint64_t v;

	memset(e, 0, sizeof(*e));
	get_u64(obj, "i", &e->i);
	get_u64(obj, "t", &e->t);
	e->src = !strcmp(src, "sim") ? TV_TB_SHOW_SIM :
		 wl && !strcmp(src, wl) ? TV_TB_SHOW_WORKLOAD :
					  TV_TB_SHOW_OTHER;
	get_str(obj, "kind", e->kind, sizeof(e->kind));
	e->node = get_node(obj, "node");
	e->peer = get_node(obj, "peer");
	e->qpn = get_u64(obj, "qpn", &v) ? (uint32_t)v : 0;
	get_str(obj, "op", e->op, sizeof(e->op));
	get_str(obj, "status", e->status, sizeof(e->status));
	get_str(obj, "state", e->state, sizeof(e->state));
	/* v holds the last key read: only what was there counts. */
	e->has_imm = get_u64(obj, "imm", &v);
	e->imm = e->has_imm ? (uint32_t)v : 0;
	get_u64(obj, "wr_id", &e->wr_id);
	e->has_idx = get_u64(obj, "idx", &v);
	e->idx = e->has_idx ? (uint32_t)v : 0;
	get_u64(obj, "step", &e->step);
	get_u64(obj, "len", &e->len);
	get_str(obj, "name", e->name, sizeof(e->name));
	/* What the workload's events carry (its code, message type ...). */
	if (e->src == TV_TB_SHOW_WORKLOAD && tr->ops->show_parse)
		tr->ops->show_parse(obj, e);
	/* A fault firing: its point and hit number stand in for a name. */
	if (e->src == TV_TB_SHOW_OTHER && get_u64(obj, "hit", &v)) {
		char point[TV_TB_SHOW_NAME_MAX];

		get_str(obj, "point", point, sizeof(point));
		snprintf(e->name, sizeof(e->name), "%.40s (hit %" PRIu64 ")",
			 point, v);
	}
}

/*
 * A node a scenario cannot have is refused: the drawings give every node a
 * lane, and a lying "node": 4000000000 would have them draw four billion.
 */
static int check_node(const struct tb_trace_reader *rd, json_t *obj,
		      const char *key, char err[TB_TRACE_ERR_MAX])
{
	uint64_t v;

	if (!get_u64(obj, key, &v) || v < TV_TB_MAX_NODES)
		return 0;
	snprintf(err, TB_TRACE_ERR_MAX,
		 "%s:%" PRIu64 ": %s %" PRIu64 " out of range (a scenario has at most %d nodes)",
		 rd->path, rd->line, key, v, TV_TB_MAX_NODES);
	return -EINVAL;
}

static int push_event(struct show_trace *tr, const struct tb_trace_reader *rd,
		      size_t *cap, json_t *obj, char err[TB_TRACE_ERR_MAX])
{
	struct tv_tb_show_event *e;
	int rc;

	if (tr->nev == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;

		e = realloc(tr->ev, ncap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		tr->ev = e;
		*cap = ncap;
	}
	e = &tr->ev[tr->nev];
	rc = check_node(rd, obj, "node", err);
	if (!rc)
		rc = check_node(rd, obj, "peer", err);
	if (rc)
		return rc;
	parse_event(tr, obj, e);
	/* Posted receives are most of a trace and drawn by neither view. */
	if (e->src == TV_TB_SHOW_SIM && !strcmp(e->kind, "POST_RECV"))
		return 0;
	if (e->node != TV_TB_SHOW_NONE && e->node >= tr->nodes)
		tr->nodes = e->node + 1;
	if (e->peer != TV_TB_SHOW_NONE && e->peer >= tr->nodes)
		tr->nodes = e->peer + 1;
	tr->nev++;
	return 0;
}

static int read_header(struct tb_trace_reader *rd, struct show_trace *tr,
		       char err[TB_TRACE_ERR_MAX])
{
	struct tb_trace_header h;
	json_t *hdr, *w;
	uint64_t nodes = 0;
	int rc = tb_trace_read_header(rd, &hdr, &h, err);

	if (rc)
		return rc;
	/* Another workload's events are drawn as marks, not refused. */
	w = json_object_get(h.scenario, "workload");
	tr->ops = json_is_string(w) ? tv_tb_workload_find(json_string_value(w)) :
				      tv_tb_workload_default();
	if (!tr->ops)
		tr->ops = tv_tb_workload_default();
	tr->seed = h.seed;
	get_str(h.scenario, "name", tr->scenario_name,
		sizeof(tr->scenario_name));
	if (get_u64(h.scenario, "nodes", &nodes) && nodes <= TV_TB_MAX_NODES)
		tr->nodes = (uint32_t)nodes;
	json_decref(hdr);
	return 0;
}

static int read_trace(struct tb_trace_reader *rd, struct show_trace *tr,
		      char err[TB_TRACE_ERR_MAX])
{
	size_t cap = 0;
	json_t *obj;
	int rc = read_header(rd, tr, err);

	/* No header line at all (an empty file): nothing says what it is. */
	if (rc == -ENODATA) {
		snprintf(err, TB_TRACE_ERR_MAX, "%s: empty: no header line",
			 rd->path);
		return -EINVAL;
	}
	while (!rc && !(rc = tb_trace_reader_next(rd, &obj, err))) {
		if (tb_trace_is_event(obj)) {
			rc = push_event(tr, rd, &cap, obj, err);
		} else if (tb_trace_is_summary(obj)) {
			get_str(obj, "result", tr->result, sizeof(tr->result));
			/* Printed into SVG and JSON as is: only known words. */
			if (strcmp(tr->result, "PASS") && strcmp(tr->result, "FAIL"))
				strcpy(tr->result, "?");
		} else {
			snprintf(err, TB_TRACE_ERR_MAX,
				 "%s:%" PRIu64 ": neither an event nor the summary",
				 rd->path, rd->line);
			rc = -EINVAL;
		}
		json_decref(obj);
	}
	if (rc == -ENOMEM)
		snprintf(err, TB_TRACE_ERR_MAX, "out of memory");
	return rc == -ENODATA ? 0 : rc;
}

static int write_one(const char *path, const struct show_trace *tr,
		     const struct show_range *rg,
		     int (*draw)(const struct show_trace *,
				 const struct show_range *, FILE *),
		     char *err, size_t cap)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f) {
		rc = -errno;
		goto report;
	}
	rc = draw(tr, rg, f);
	if (fclose(f) && !rc)
		rc = -EIO;
	if (!rc)
		return 0;
report:
	snprintf(err, cap, "cannot write %s: %s", path, strerror(-rc));
	return rc;
}

int tv_tb_show(const char *trace_path, const struct tv_tb_show_opts *o,
	       char *err, size_t err_bytes)
{
	struct show_range rg = {
		.first = o->first, .last = o->last,
		.max_rows = o->max_rows ? o->max_rows : 4000,
	};
	struct show_trace tr = { .path = trace_path };
	struct tb_trace_reader rd;
	char terr[TB_TRACE_ERR_MAX] = "";
	int rc;

	rc = tb_trace_reader_open(trace_path, &rd);
	if (rc) {
		snprintf(err, err_bytes, "%s: %s", trace_path, strerror(-rc));
		return rc;
	}
	rc = read_trace(&rd, &tr, terr);
	tb_trace_reader_close(&rd);
	if (rc)
		snprintf(err, err_bytes, "malformed trace: %s", terr);
	if (!rc && o->svg_path)
		rc = write_one(o->svg_path, &tr, &rg, show_svg, err, err_bytes);
	if (!rc && o->chrome_path)
		rc = write_one(o->chrome_path, &tr, &rg, show_chrome, err,
			       err_bytes);
	free(tr.ev);
	return rc;
}
