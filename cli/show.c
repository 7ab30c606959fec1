/*
 * `tensorverbs show TRACE --svg OUT.svg --chrome OUT.json`: read a trace and
 * draw it.  The drawings are in show_svg.c and show_chrome.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "show.h"
#include "trace.h"

static const char show_usage[] =
	"usage: tensorverbs show TRACE.jsonl [--svg OUT.svg] [--chrome OUT.json]\n"
	"                        [--from I] [--to I] [--max-rows N]\n"
	"\n"
	"Draws a trace written by `tensorverbs run --trace`:\n"
	"  --svg FILE       a sequence diagram: one lane per node, time down,\n"
	"                   messages, tensor writes, ACKs, errors, QP states\n"
	"  --chrome FILE    Chrome trace event JSON (chrome://tracing, Perfetto):\n"
	"                   a process per node, flows from each write to its\n"
	"                   delivery, request lifetimes\n"
	"  --from I, --to I only the events with these trace indices (inclusive)\n"
	"  --max-rows N     SVG: at most N rows (default 4000)\n"
	"\n"
	"exit status: 0 written, 2 bad usage or a malformed trace.\n";

struct show_args {
	const char *file;
	const char *svg;
	const char *chrome;
	struct show_range rg;
};

bool show_is_error_status(const char *status)
{
	return status[0] && strcmp(status, "SUCCESS") && strcmp(status, "OK");
}

static int parse_num(const char *opt, const char *s, uint64_t *v_p)
{
	if (cli_parse_u64(s, v_p)) {
		fprintf(stderr, "tensorverbs show: bad %s '%s'\n", opt, s);
		return -EINVAL;
	}
	return 0;
}

static int parse_show_args(int argc, char **argv, struct show_args *a)
{
	static const struct option opts[] = {
		{ "svg", required_argument, NULL, 's' },
		{ "chrome", required_argument, NULL, 'c' },
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 't' },
		{ "max-rows", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t rows = 4000;
	int c, rc = 0;

	a->rg.last = UINT64_MAX;
	optind = 1;
	while (!rc && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': a->svg = optarg; break;
		case 'c': a->chrome = optarg; break;
		case 'f': rc = parse_num("--from", optarg, &a->rg.first); break;
		case 't': rc = parse_num("--to", optarg, &a->rg.last); break;
		case 'm': rc = parse_num("--max-rows", optarg, &rows); break;
		case 'h': fputs(show_usage, stdout); return 1;
		default: rc = -EINVAL; break;
		}
	}
	if (!rc && (argc - optind != 1 || (!a->svg && !a->chrome) || !rows))
		rc = -EINVAL;
	if (rc) {
		fputs(show_usage, stderr);
		return rc;
	}
	a->rg.max_rows = (size_t)rows;
	a->file = argv[optind];
	return 0;
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
	return json_is_string(v) && !cli_parse_u64(json_string_value(v), v_p);
}

static uint32_t get_node(json_t *obj, const char *key)
{
	uint64_t v;

	return get_u64(obj, key, &v) && v < SHOW_NONE ? (uint32_t)v : SHOW_NONE;
}

static void parse_event(json_t *obj, struct show_event *e)
{
	const char *src = json_string_value(json_object_get(obj, "src"));
	uint64_t v;

	memset(e, 0, sizeof(*e));
	get_u64(obj, "i", &e->i);
	get_u64(obj, "t", &e->t);
	e->src = !strcmp(src, "sim") ? SHOW_SIM :
		 !strcmp(src, "engine") ? SHOW_ENGINE : SHOW_OTHER;
	get_str(obj, "kind", e->kind, sizeof(e->kind));
	e->node = get_node(obj, "node");
	e->peer = get_node(obj, "peer");
	e->qpn = get_u64(obj, "qpn", &v) ? (uint32_t)v : 0;
	get_str(obj, "op", e->op, sizeof(e->op));
	get_str(obj, e->src == SHOW_ENGINE ? "code" : "status", e->status,
		sizeof(e->status));
	get_str(obj, "state", e->state, sizeof(e->state));
	get_str(obj, "msg", e->msg, sizeof(e->msg));
	e->has_imm = get_u64(obj, "imm", &v);
	e->imm = (uint32_t)v;
	get_u64(obj, "wr_id", &e->wr_id);
	e->has_idx = get_u64(obj, "idx", &v);
	e->idx = (uint32_t)v;
	get_u64(obj, "step", &e->step);
	get_u64(obj, "len", &e->len);
	get_str(obj, "name", e->name, sizeof(e->name));
	/* A fault firing: its point and hit number stand in for a name. */
	if (e->src == SHOW_OTHER && get_u64(obj, "hit", &v)) {
		char point[SHOW_NAME_MAX];

		get_str(obj, "point", point, sizeof(point));
		snprintf(e->name, sizeof(e->name), "%.40s (hit %" PRIu64 ")",
			 point, v);
	}
}

static int push_event(struct show_trace *tr, size_t *cap, json_t *obj)
{
	struct show_event *e;

	if (tr->nev == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;

		e = realloc(tr->ev, ncap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		tr->ev = e;
		*cap = ncap;
	}
	e = &tr->ev[tr->nev];
	parse_event(obj, e);
	/* Posted receives are most of a trace and drawn by neither view. */
	if (e->src == SHOW_SIM && !strcmp(e->kind, "POST_RECV"))
		return 0;
	if (e->node != SHOW_NONE && e->node >= tr->nodes)
		tr->nodes = e->node + 1;
	if (e->peer != SHOW_NONE && e->peer >= tr->nodes)
		tr->nodes = e->peer + 1;
	tr->nev++;
	return 0;
}

static int read_header(struct trace_reader *rd, struct show_trace *tr,
		       char err[TRACE_ERR_MAX])
{
	struct trace_header h;
	json_t *hdr;
	uint64_t nodes = 0;
	int rc;

	rc = trace_reader_next(rd, &hdr, err);
	if (rc == -ENODATA)
		snprintf(err, TRACE_ERR_MAX, "%s: empty file", rd->path);
	if (rc)
		return rc;
	rc = trace_header_parse(hdr, &h, err);
	if (!rc) {
		tr->seed = h.seed;
		get_str(h.scenario, "name", tr->scenario_name,
			sizeof(tr->scenario_name));
		if (get_u64(h.scenario, "nodes", &nodes) && nodes <= 4096)
			tr->nodes = (uint32_t)nodes;
	}
	json_decref(hdr);
	return rc;
}

static int read_trace(struct trace_reader *rd, struct show_trace *tr,
		      char err[TRACE_ERR_MAX])
{
	size_t cap = 0;
	json_t *obj;
	int rc = read_header(rd, tr, err);

	while (!rc && !(rc = trace_reader_next(rd, &obj, err))) {
		if (trace_is_event(obj)) {
			rc = push_event(tr, &cap, obj);
		} else if (trace_is_summary(obj)) {
			get_str(obj, "result", tr->result, sizeof(tr->result));
			/* Printed into SVG and JSON as is: only known words. */
			if (strcmp(tr->result, "PASS") && strcmp(tr->result, "FAIL"))
				strcpy(tr->result, "?");
		} else {
			snprintf(err, TRACE_ERR_MAX,
				 "%s:%" PRIu64 ": neither an event nor the summary",
				 rd->path, rd->line);
			rc = -EINVAL;
		}
		json_decref(obj);
	}
	if (rc == -ENOMEM)
		snprintf(err, TRACE_ERR_MAX, "out of memory");
	return rc == -ENODATA ? 0 : rc;
}

static int write_one(const char *path, const struct show_trace *tr,
		     const struct show_range *rg,
		     int (*draw)(const struct show_trace *,
				 const struct show_range *, FILE *))
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
	fprintf(stderr, "tensorverbs show: cannot write %s: %s\n", path,
		strerror(-rc));
	return rc;
}

int cli_show(int argc, char **argv, const char *argv0)
{
	struct show_args a = { 0 };
	struct show_trace tr = { 0 };
	struct trace_reader rd;
	char err[TRACE_ERR_MAX] = "";
	int rc = parse_show_args(argc, argv, &a);

	(void)argv0;
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	rc = trace_reader_open(a.file, &rd);
	if (rc) {
		fprintf(stderr, "tensorverbs show: %s: %s\n", a.file,
			strerror(-rc));
		return CLI_EXIT_USAGE;
	}
	tr.path = a.file;
	rc = read_trace(&rd, &tr, err);
	trace_reader_close(&rd);
	if (rc)
		fprintf(stderr, "tensorverbs show: malformed trace: %s\n", err);
	if (!rc && a.svg)
		rc = write_one(a.svg, &tr, &a.rg, show_svg);
	if (!rc && a.chrome)
		rc = write_one(a.chrome, &tr, &a.rg, show_chrome);
	free(tr.ev);
	return rc ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}
