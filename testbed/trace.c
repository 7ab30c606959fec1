/*
 * Run traces (docs/trace.md): events -> JSON lines, the header and
 * summary lines, a line reader, and trace files.
 *
 * Event lines hold no pointer and no wall clock, so two runs of the same
 * scenario and seed give identical lines: replay re-runs the header and
 * compares, show draws the events.  The simulator's events, fault firings
 * and node lives are encoded here; a workload's own events are lines it
 * fills itself (tv_tb_trace_line_new), with the same helpers.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/tensor.h>
#include <tensorverbs/vf.h>

#include "run_int.h"

#ifndef TV_BUILD_ID
#define TV_BUILD_ID "unknown"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

const char *tv_tb_build_id(void)
{
	return TV_BUILD_ID;
}

/* ---- names ------------------------------------------------------------ */

static const char *const sim_kind_names[] = {
	[TV_SIM_EV_POST_SEND] = "POST_SEND", [TV_SIM_EV_POST_RECV] = "POST_RECV",
	[TV_SIM_EV_DELIVER] = "DELIVER", [TV_SIM_EV_RNR] = "RNR",
	[TV_SIM_EV_CQE] = "CQE", [TV_SIM_EV_QP_STATE] = "QP_STATE",
	[TV_SIM_EV_CQ_OVERFLOW] = "CQ_OVERFLOW", [TV_SIM_EV_TIMER] = "TIMER",
	[TV_SIM_EV_USER] = "USER",
};

/* The enum names, as ibverbs spells them (IBV_WC_<name>). */
static const char *const wc_status_names[TV_WC_STATUS_COUNT] = {
	"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR",
	"LOC_PROT_ERR", "WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR",
	"LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR", "REM_OP_ERR",
	"RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR",
	"REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR",
	"INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR",
};

static const char *const wr_opcode_names[] = {
	[TV_WR_RDMA_WRITE] = "RDMA_WRITE",
	[TV_WR_RDMA_WRITE_WITH_IMM] = "RDMA_WRITE_WITH_IMM",
	[TV_WR_SEND] = "SEND", [TV_WR_SEND_WITH_IMM] = "SEND_WITH_IMM",
	[TV_WR_RDMA_READ] = "RDMA_READ",
	[TV_WR_ATOMIC_CMP_AND_SWP] = "ATOMIC_CMP_AND_SWP",
	[TV_WR_ATOMIC_FETCH_AND_ADD] = "ATOMIC_FETCH_AND_ADD",
};

static const char *name_of(const char *const *names, size_t n, uint32_t v)
{
	return v < n ? names[v] : NULL;
}

static const char *wc_opcode_name(uint32_t op)
{
	switch (op) {
	case TV_WC_SEND: return "SEND";
	case TV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case TV_WC_RDMA_READ: return "RDMA_READ";
	case TV_WC_COMP_SWAP: return "COMP_SWAP";
	case TV_WC_FETCH_ADD: return "FETCH_ADD";
	case TV_WC_RECV: return "RECV";
	case TV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	}
	return NULL;
}

/* ---- JSON value helpers ------------------------------------------------ */

/* A name, or the raw number when the value has none (never lose data). */
static json_t *j_name(const char *name, uint32_t raw)
{
	return name ? json_string(name) : json_integer(raw);
}

/* Unsigned 64-bit: JSON integers of jansson are signed. */
json_t *tv_tb_json_u64(uint64_t v)
{
	if (v <= INT64_MAX)
		return json_integer((json_int_t)v);
	return json_sprintf("0x%" PRIx64, v);
}

static json_t *j_hex(uint64_t v)
{
	return json_sprintf("0x%" PRIx64, v);
}

json_t *tb_json_hex(uint64_t v)
{
	return j_hex(v);
}

json_t *tb_json_wr_op(uint32_t op)
{
	return j_name(name_of(wr_opcode_names, ARRAY_SIZE(wr_opcode_names),
			      op), op);
}

json_t *tb_json_wc_op(uint32_t op)
{
	return j_name(wc_opcode_name(op), op);
}

json_t *tb_json_wc_status(uint32_t status)
{
	return j_name(name_of(wc_status_names, ARRAY_SIZE(wc_status_names),
			      status), status);
}

json_t *tv_tb_json_node(uint32_t node)
{
	return node == UINT32_MAX ? json_null() : json_integer(node);
}

/* A C string as JSON; bytes that are not UTF-8 become \xNN text. */
json_t *tv_tb_json_str(const char *s)
{
	json_t *v;
	char *esc, *p;

	if (!s)
		return json_null();
	v = json_string(s);
	if (v)
		return v;
	esc = malloc(strlen(s) * 4 + 1);
	if (!esc)
		return NULL;
	p = esc;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c < 0x80)
			*p++ = (char)*c;
		else
			p += sprintf(p, "\\x%02x", *c);
	}
	*p = '\0';
	v = json_string(esc);
	free(esc);
	return v;
}

/* ---- addresses --------------------------------------------------------- */

static size_t anchor_slot(uint64_t key, size_t cap)
{
	key ^= key >> 31;
	key *= 0x9E3779B97F4A7C15ull;
	key ^= key >> 29;
	return (size_t)key & (cap - 1);
}

static struct tb_anchor *anchor_find(struct tb_anchor *a, size_t cap,
					uint64_t key, bool *found_p)
{
	size_t i;

	assert(cap && !(cap & (cap - 1)));
	for (i = anchor_slot(key, cap); a[i].key; i = (i + 1) & (cap - 1)) {
		if (a[i].key == key) {
			*found_p = true;
			return &a[i];
		}
	}
	*found_p = false;
	return &a[i];
}

static int anchors_grow(struct tb_rec *t)
{
	size_t ncap = t->anchors_cap ? t->anchors_cap * 2 : 64;
	struct tb_anchor *na = calloc(ncap, sizeof(*na));
	bool found;

	if (!na)
		return -ENOMEM;
	for (size_t i = 0; i < t->anchors_cap; i++) {
		if (t->anchors[i].key)
			*anchor_find(na, ncap, t->anchors[i].key, &found) =
				t->anchors[i];
	}
	free(t->anchors);
	t->anchors = na;
	t->anchors_cap = ncap;
	return 0;
}

/*
 * A raw address is a pointer into this process's heap: it differs from run
 * to run.  What is stable is where it lies relative to the other addresses
 * of the same memory region, so an address is written as its distance from
 * the first address the trace saw under the same (memory node, rkey).  The
 * first use of a key is therefore 0 and later ones may be negative.
 */
static int rec_addr(struct tb_rec *t, uint32_t mem_node,
			  uint32_t rkey, uint64_t addr, json_t **off_p)
{
	/* +1 keeps every key non-zero: 0 marks an empty slot. */
	uint64_t key = ((uint64_t)mem_node << 32 | rkey) + 1;
	struct tb_anchor *a;
	bool found = false;
	int rc;

	if (!rkey && !addr) {
		*off_p = json_null();
		return 0;
	}
	if ((t->anchors_used + 1) * 2 > t->anchors_cap) {
		rc = anchors_grow(t);
		if (rc)
			return rc;
	}
	a = anchor_find(t->anchors, t->anchors_cap, key, &found);
	if (!found) {
		a->key = key;
		a->base = addr;
		t->anchors_used++;
	}
	*off_p = json_integer((json_int_t)(addr - a->base));
	return 0;
}

/* ---- the recorder ------------------------------------------------------ */

void tb_rec_init(struct tb_rec *t, tb_emit_fn emit, void *ctx)
{
	memset(t, 0, sizeof(*t));
	t->emit = emit;
	t->emit_ctx = ctx;
}

void tb_rec_fini(struct tb_rec *t)
{
	free(t->anchors);
	t->anchors = NULL;
	t->anchors_cap = 0;
	t->anchors_used = 0;
}

void tb_rec_emit(struct tb_rec *t, json_t *obj)
{
	int rc;

	if (!obj) {
		t->err = -ENOMEM;
		return;
	}
	rc = t->emit(t->emit_ctx, obj);
	json_decref(obj);
	if (rc)
		t->err = rc;
	else
		t->count++;
}

json_t *tb_rec_line(struct tb_rec *t, const char *src, const char *kind)
{
	json_t *obj;

	if (t->err)
		return NULL;
	obj = json_pack("{s:I, s:I, s:s, s:s}", "i", (json_int_t)t->count,
			"t", (json_int_t)(t->sim ? tv_sim_now_ns(t->sim) : 0),
			"src", src, "kind", kind);
	if (!obj)
		t->err = -ENOMEM;
	return obj;
}

json_t *tb_rec_addr(struct tb_rec *t, uint32_t mem_node, uint32_t rkey,
		    uint64_t addr)
{
	json_t *off;
	int rc;

	if (t->err)
		return NULL;
	rc = rec_addr(t, mem_node, rkey, addr, &off);
	if (rc) {
		t->err = rc;
		return NULL;
	}
	return off;
}

/* ---- what workloads record ---------------------------------------------- */

/* A workload without an event_src of its own: its lines are its name's. */
static const char *event_src(const struct tv_tb_workload_ops *ops)
{
	return ops->event_src ? ops->event_src : ops->name;
}

json_t *tv_tb_trace_line_new(struct tv_tb_run *run, const char *kind)
{
	/* A NULL "src" made every line fail, the trace lost as ENOMEM. */
	return run->rec ? tb_rec_line(run->rec, event_src(run->ops), kind) :
			  NULL;
}

json_t *tv_tb_trace_addr(struct tv_tb_run *run, uint32_t mem_node,
			 uint32_t rkey, uint64_t addr)
{
	return run->rec ? tb_rec_addr(run->rec, mem_node, rkey, addr) : NULL;
}

void tv_tb_trace_emit(struct tv_tb_run *run, json_t *line)
{
	if (run->rec)
		tb_rec_emit(run->rec, line);
	else
		json_decref(line);
}

/* The sim's opcode field: a WR opcode, a WC opcode, or nothing. */
static json_t *sim_op(const struct tv_sim_event *ev)
{
	switch (ev->kind) {
	case TV_SIM_EV_POST_SEND:
	case TV_SIM_EV_DELIVER:
	case TV_SIM_EV_RNR:
		return j_name(name_of(wr_opcode_names,
				      ARRAY_SIZE(wr_opcode_names), ev->opcode),
			      ev->opcode);
	case TV_SIM_EV_CQE:
		return j_name(wc_opcode_name(ev->opcode), ev->opcode);
	default:
		return json_null();
	}
}

static json_t *sim_status(const struct tv_sim_event *ev)
{
	if (ev->kind != TV_SIM_EV_CQE && ev->kind != TV_SIM_EV_DELIVER &&
	    ev->kind != TV_SIM_EV_RNR)
		return json_null();
	return j_name(name_of(wc_status_names, ARRAY_SIZE(wc_status_names),
			      ev->status), ev->status);
}

static json_t *sim_state(const struct tv_sim_event *ev)
{
	if (ev->kind != TV_SIM_EV_QP_STATE)
		return json_null();
	if (ev->status > TV_QPS_ERR)
		return json_integer(ev->status);
	return json_string(tv_vf_qp_state_str((enum tv_vf_qp_state)ev->status));
}

void tb_rec_sim_event(struct tb_rec *t, const struct tv_sim_event *ev)
{
	/* A post names the target's memory, a delivery the responder's own. */
	uint32_t mem_node = ev->kind == TV_SIM_EV_POST_SEND ? ev->peer : ev->node;
	json_t *roff, *obj;
	int rc;

	if (t->err)
		return;
	rc = rec_addr(t, mem_node, ev->rkey, ev->remote_addr, &roff);
	if (rc) {
		t->err = rc;
		return;
	}
	obj = json_pack("{s:I, s:I, s:s, s:I, s:o, s:o, s:o, s:I, s:o, s:o,"
			" s:o, s:o, s:o, s:o, s:o, s:I}",
			"i", (json_int_t)t->count, "t", (json_int_t)ev->time_ns,
			"src", "sim", "seq", (json_int_t)ev->seq,
			"kind", j_name(name_of(sim_kind_names,
					       ARRAY_SIZE(sim_kind_names),
					       ev->kind), ev->kind),
			"node", tv_tb_json_node(ev->node), "peer", tv_tb_json_node(ev->peer),
			"qpn", (json_int_t)ev->qp_num, "op", sim_op(ev),
			"status", sim_status(ev), "state", sim_state(ev),
			"imm", ev->has_imm ? j_hex(ev->imm) : json_null(),
			"wr_id", j_hex(ev->wr_id),
			"rkey", ev->rkey ? j_hex(ev->rkey) : json_null(),
			"roff", roff, "len", (json_int_t)ev->length);
	tb_rec_emit(t, obj);
}

/*
 * The point's name stands where an engine event has its tensor name; the
 * node is the one whose code was running (null inside the simulator).
 */
void tb_rec_fault_event(struct tb_rec *t, const char *point,
			   uint64_t hit, uint32_t node)
{
	json_t *obj;

	if (t->err)
		return;
	obj = json_pack("{s:I, s:I, s:s, s:s, s:o, s:s, s:o}",
			"i", (json_int_t)t->count,
			"t", (json_int_t)(t->sim ? tv_sim_now_ns(t->sim) : 0),
			"src", "fault", "kind", "FIRE", "node", tv_tb_json_node(node),
			"point", point, "hit", tv_tb_json_u64(hit));
	tb_rec_emit(t, obj);
}

/* Every key always present: null where it does not apply. */
void tb_rec_node_event(struct tb_rec *t, const char *kind,
			  uint32_t node, const char *op, uint64_t step_id,
			  const char *name)
{
	json_t *obj;

	if (t->err)
		return;
	obj = json_pack("{s:I, s:I, s:s, s:s, s:o, s:o, s:o, s:o}",
			"i", (json_int_t)t->count,
			"t", (json_int_t)(t->sim ? tv_sim_now_ns(t->sim) : 0),
			"src", "node", "kind", kind, "node", tv_tb_json_node(node),
			"op", op ? json_string(op) : json_null(),
			"step", op ? tv_tb_json_u64(step_id) : json_null(),
			"name", tv_tb_json_str(name));
	tb_rec_emit(t, obj);
}

/* ---- header and summary ------------------------------------------------ */

int tb_trace_header_new(uint64_t seed, json_t *scenario,
		     const char *scenario_file, json_t *plan,
		     const char *breakage, json_t **hdr_p)
{
	json_t *hdr;

	assert(scenario);
	/* The plan the run had, as a JSON array: replay arms it again. */
	hdr = json_pack("{s:i, s:o, s:O, s:o, s:O, s:s}",
			"tensorverbs_trace", TB_TRACE_FORMAT, "seed", tv_tb_json_u64(seed),
			"scenario", scenario,
			"scenario_file", tv_tb_json_str(scenario_file),
			"plan", plan ? plan : json_null(),
			"build_id", tv_tb_build_id());
	if (hdr && breakage &&
	    json_object_set_new(hdr, "test_breakage", json_string(breakage))) {
		json_decref(hdr);
		hdr = NULL;
	}
	if (!hdr)
		return -ENOMEM;
	*hdr_p = hdr;
	return 0;
}

static json_t *failures_json(const struct tv_tb_failures *f)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < f->count && i < TV_TB_FAILURES_KEPT; i++) {
		if (json_array_append_new(arr, tv_tb_json_str(f->msgs[i] ?
							      f->msgs[i] : "?"))) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

int tb_trace_summary_new(const struct tb_rec *t, const struct tv_tb_run *run,
			 json_t **sum_p)
{
	const struct tv_tb_result *res = tv_tb_run_result(run);
	json_t *sum;

	/* wall_ns last: it is the one field replay never compares. */
	sum = json_pack("{s:b, s:I, s:o, s:I, s:I, s:s, s:I, s:o, s:I}",
			"summary", 1, "events", (json_int_t)t->count,
			"event_hash", json_sprintf("0x%016" PRIx64,
						   res->event_hash),
			"sim_events", (json_int_t)res->sim_events,
			"virtual_ns", (json_int_t)res->virtual_ns,
			"result", res->failures ? "FAIL" : "PASS",
			"failure_count", (json_int_t)res->failures,
			"failures", failures_json(tv_tb_run_failures(run)),
			"wall_ns", (json_int_t)res->wall_ns);
	if (!sum)
		return -ENOMEM;
	*sum_p = sum;
	return 0;
}

int tb_trace_write_line(FILE *f, json_t *obj)
{
	/* Compact and in insertion order, so equal runs give equal bytes. */
	errno = 0;
	if (json_dumpf(obj, f, JSON_COMPACT | JSON_PRESERVE_ORDER))
		return errno == ENOMEM ? -ENOMEM : -EIO;
	if (fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}

/* ---- reading ----------------------------------------------------------- */

static int header_seed(json_t *v, uint64_t *seed_p)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*seed_p = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_string(v))
		return tv_tb_parse_u64(json_string_value(v), seed_p);
	return -EINVAL;
}

/* A breakage some workload knows (tests of the tools only), or none. */
static int header_breakage(json_t *v, const char **name_p)
{
	*name_p = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v) || tv_tb_breakage_check(json_string_value(v)))
		return -EINVAL;
	*name_p = json_string_value(v);
	return 0;
}

int tb_trace_header_parse(json_t *hdr, struct tb_trace_header *h_p,
		       char err[TB_TRACE_ERR_MAX])
{
	json_t *fmt = json_object_get(hdr, "tensorverbs_trace");
	json_t *file = json_object_get(hdr, "scenario_file");
	json_t *bid = json_object_get(hdr, "build_id");
	struct tb_trace_header h = { 0 };
	const char *what;

	if (!json_is_integer(fmt)) {
		snprintf(err, TB_TRACE_ERR_MAX,
			 "line 1 is not a tensorverbs trace header (no \"tensorverbs_trace\")");
		return -EINVAL;
	}
	if (json_integer_value(fmt) != TB_TRACE_FORMAT) {
		snprintf(err, TB_TRACE_ERR_MAX,
			 "trace format %" JSON_INTEGER_FORMAT ", this build reads format %d",
			 json_integer_value(fmt), TB_TRACE_FORMAT);
		return -EINVAL;
	}
	h.scenario = json_object_get(hdr, "scenario");
	h.plan = json_object_get(hdr, "plan");
	/* The first field that is wrong is named, with what it must be. */
	what = header_seed(json_object_get(hdr, "seed"), &h.seed) ?
		       "\"seed\" (an integer >= 0)" :
	       !json_is_object(h.scenario) ? "\"scenario\" (an object)" :
	       !json_is_null(h.plan) && !json_is_array(h.plan) ?
		       "\"plan\" (an array or null)" :
	       file && !json_is_null(file) && !json_is_string(file) ?
		       "\"scenario_file\" (a string or null)" :
	       !json_is_string(bid) ? "\"build_id\" (a string)" : NULL;
	if (what) {
		snprintf(err, TB_TRACE_ERR_MAX, "header needs %s", what);
		return -EINVAL;
	}
	if (header_breakage(json_object_get(hdr, "test_breakage"),
			    &h.breakage)) {
		char known[128];

		tv_tb_breakage_names(known, sizeof(known));
		snprintf(err, TB_TRACE_ERR_MAX,
			 "header: unknown \"test_breakage\" (this build knows %s)",
			 known);
		return -EINVAL;
	}
	h.scenario_file = json_string_value(file);
	h.build_id = json_string_value(bid);
	*h_p = h;
	return 0;
}

int tb_trace_reader_open(const char *path, struct tb_trace_reader *r_p)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	memset(r_p, 0, sizeof(*r_p));
	r_p->f = f;
	r_p->path = path;
	return 0;
}

void tb_trace_reader_close(struct tb_trace_reader *r)
{
	if (r->f)
		fclose(r->f);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

int tb_trace_reader_next(struct tb_trace_reader *r, json_t **obj_p,
		      char err[TB_TRACE_ERR_MAX])
{
	json_error_t jerr;
	ssize_t n;
	json_t *obj;

	errno = 0;
	n = getline(&r->buf, &r->cap, r->f);
	if (n < 0) {
		int e = errno;

		if (!e)
			return -ENODATA;
		/*
		 * A read error (a directory given as the trace: EISDIR) must
		 * say so: callers report err, which was left empty, and
		 * replay called a directory "malformed" with no message.
		 */
		snprintf(err, TB_TRACE_ERR_MAX, "%s: %s", r->path, strerror(e));
		return -e;
	}
	r->line++;
	if (n > 0 && r->buf[n - 1] == '\n')
		r->buf[--n] = '\0';
	obj = json_loadb(r->buf, (size_t)n,
			 JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!obj || !json_is_object(obj)) {
		int rc = obj ? -EINVAL : tb_json_load_errno(&jerr);

		snprintf(err, TB_TRACE_ERR_MAX, "%s:%" PRIu64 ": %s", r->path,
			 r->line, obj ? "not a JSON object" :
			 rc == -ENOMEM ? strerror(ENOMEM) : jerr.text);
		json_decref(obj);
		return rc;
	}
	*obj_p = obj;
	return 0;
}

bool tb_trace_is_event(json_t *obj)
{
	return json_is_integer(json_object_get(obj, "i")) &&
	       json_is_string(json_object_get(obj, "src"));
}

bool tb_trace_is_summary(json_t *obj)
{
	return json_is_true(json_object_get(obj, "summary"));
}

int tb_trace_read_header(struct tb_trace_reader *rd, json_t **hdr_p,
			 struct tb_trace_header *h_p,
			 char err[TB_TRACE_ERR_MAX])
{
	json_t *hdr;
	int rc;

	rc = tb_trace_reader_next(rd, &hdr, err);
	if (rc == -ENODATA)
		snprintf(err, TB_TRACE_ERR_MAX, "%s: empty file", rd->path);
	if (rc)
		return rc;
	rc = tb_trace_header_parse(hdr, h_p, err);
	if (rc) {
		char why[TB_TRACE_ERR_MAX];

		/* The header's own message names no file: say which. */
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, TB_TRACE_ERR_MAX, "%.400s: %.600s", rd->path, why);
		json_decref(hdr);
		return rc;
	}
	*hdr_p = hdr;
	return 0;
}

/* ---- trace files ---------------------------------------------------------- */

struct tv_tb_trace {
	FILE *f;
	char *path;
	struct tb_rec rec;
};

static int emit_line(void *ctx, json_t *ev)
{
	return tb_trace_write_line(ctx, ev);
}

struct tb_rec *tb_trace_rec(struct tv_tb_trace *trace)
{
	return &trace->rec;
}

int tv_tb_trace_create(const char *path, const struct tv_tb_scenario *sc,
		       const char *scenario_file, uint64_t seed,
		       const char *breakage, struct tv_tb_trace **trace_p)
{
	struct tv_tb_trace *t = calloc(1, sizeof(*t));
	json_t *hdr;
	int rc = -ENOMEM;

	if (!t || !(t->path = strdup(path)))
		goto fail;
	t->f = fopen(path, "w");
	if (!t->f) {
		rc = -errno;
		goto fail;
	}
	/* The plan the run has, as a JSON array: replay arms it again. */
	rc = tb_trace_header_new(seed, sc->json, scenario_file,
				 tv_tb_scenario_has_faults(sc) ? sc->faults :
								 NULL,
				 breakage, &hdr);
	if (rc)
		goto fail;
	rc = tb_trace_write_line(t->f, hdr);
	json_decref(hdr);
	if (rc)
		goto fail;
	tb_rec_init(&t->rec, emit_line, t->f);
	*trace_p = t;
	return 0;
fail:
	if (t && t->f)
		fclose(t->f);
	if (t)
		free(t->path);
	free(t);
	return rc;
}

int tv_tb_trace_finish(struct tv_tb_trace *t, const struct tv_tb_run *run)
{
	json_t *sum;
	int rc = t->rec.err;

	if (!rc && run)
		rc = tb_trace_summary_new(&t->rec, run, &sum);
	if (!rc && run) {
		rc = tb_trace_write_line(t->f, sum);
		json_decref(sum);
	}
	if (fclose(t->f) && !rc)
		rc = -EIO;
	tb_rec_fini(&t->rec);
	free(t->path);
	free(t);
	return rc;
}
