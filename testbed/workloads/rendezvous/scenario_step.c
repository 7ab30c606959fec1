/*
 * The rendezvous scenario's steps: their sends and recvs, and what a recv
 * expects.  `repeat` is expanded here, so the runner only ever sees
 * flat lists.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rv_scenario_int.h"

static const char *const step_keys[] = {
	"step_id", "at_ns", "sends", "recvs", NULL
};
static const char *const send_keys[] = {
	"from", "to", "name", "dtype", "shape", "dead", "placement", "memory",
	"at_ns", "error", "fill", "strings", "repeat", "stagger_ns", NULL
};
static const char *const error_send_keys[] = {
	"from", "to", "name", "at_ns", "error", "repeat", "stagger_ns", NULL
};
static const char *const recv_keys[] = {
	"node", "from", "name", "placement", "at_ns", "expect", "repeat",
	"stagger_ns", NULL
};
static const char *const expect_ok_keys[] = {
	"dtype", "shape", "dead", "fill", "strings", NULL
};
static const char *const expect_err_keys[] = { "error", "message", NULL };
static const char *const fill_keys[] = { "pattern", "seed", NULL };
static const char *const error_keys[] = { "code", "message", NULL };

/*
 * b may be NULL with n set: a repeat's copy whose strings could not be
 * duplicated (expand_send, expand_recv) keeps its template's count.
 */
static void free_bytes(struct sc_bytes *b, size_t n)
{
	for (size_t i = 0; b && i < n; i++)
		free(b[i].data);
	free(b);
}

void sc_send_release(struct sc_send *s)
{
	free(s->name);
	free(s->err_msg);
	free_bytes(s->strings, s->nstrings);
	memset(s, 0, sizeof(*s));
}

void sc_recv_release(struct sc_recv *r)
{
	free(r->name);
	free(r->expect.message);
	free_bytes(r->expect.strings, r->expect.nstrings);
	memset(r, 0, sizeof(*r));
}

static int dup_bytes(const struct sc_bytes *src, size_t n,
		     struct sc_bytes **dst_p)
{
	struct sc_bytes *dst;

	if (!src) {
		*dst_p = NULL;
		return 0;
	}
	dst = calloc(n ? n : 1, sizeof(*dst));
	if (!dst)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		dst[i].data = malloc(src[i].len + 1);
		if (!dst[i].data) {
			free_bytes(dst, i);
			return -ENOMEM;
		}
		memcpy(dst[i].data, src[i].data, src[i].len + 1);
		dst[i].len = src[i].len;
	}
	*dst_p = dst;
	return 0;
}

static int parse_shape(struct tv_ju *jc, const char *path, json_t *v,
		       struct tv_shape *shape_p)
{
	struct tv_shape shape = { 0 };
	char sub[TV_JU_PATH_MAX];
	uint64_t n;
	json_t *d;
	size_t i;
	int rc;

	if (tv_ju_need_array(jc, path, v))
		return -EINVAL;
	if (json_array_size(v) > TV_MAX_RANK)
		return tv_ju_fail(jc, path, "rank %zu exceeds %d",
			       json_array_size(v), TV_MAX_RANK);
	json_array_foreach(v, i, d) {
		uint64_t dim;

		tv_ju_path_idx(sub, path, i);
		rc = tv_ju_uint(jc, sub, d, INT64_MAX, &dim);
		if (rc)
			return rc;
		shape.dims[i] = (int64_t)dim;
	}
	shape.rank = (uint32_t)json_array_size(v);
	if (scenario_num_elements(&shape, &n))
		return tv_ju_fail(jc, path, "element count overflows");
	*shape_p = shape;
	return 0;
}

static int parse_dtype(struct tv_ju *jc, const char *path, json_t *v,
		       enum tv_dtype *dtype_p)
{
	if (!json_is_string(v))
		return tv_ju_fail(jc, path, "must be a dtype name string");
	if (tv_dtype_from_name(json_string_value(v), dtype_p))
		return tv_ju_fail(jc, path,
			       "unknown dtype '%s' (e.g. float, double, int32, int64, uint8, bool, half, bfloat16, string)",
			       json_string_value(v));
	return 0;
}

static int parse_placement(struct tv_ju *jc, const char *path, json_t *obj,
			   enum tv_placement *place_p)
{
	char sub[TV_JU_PATH_MAX];
	json_t *v = json_object_get(obj, "placement");
	const char *s;

	tv_ju_path_key(sub, path, "placement");
	if (!v) {
		*place_p = TV_PLACE_HOST;
		return 0;
	}
	s = json_is_string(v) ? json_string_value(v) : "";
	if (strcmp(s, "host") == 0)
		*place_p = TV_PLACE_HOST;
	else if (strcmp(s, "device") == 0)
		*place_p = TV_PLACE_DEVICE;
	else
		return tv_ju_fail(jc, sub, "must be \"host\" or \"device\"");
	return 0;
}

static int parse_fill(struct tv_ju *jc, const char *path, json_t *v,
		      struct sc_fill *fill_p)
{
	struct sc_fill fill = { .pattern = SC_FILL_RANDOM };
	char sub[TV_JU_PATH_MAX];
	json_t *p;

	if (tv_ju_need_object(jc, path, v) || tv_ju_check_keys(jc, path, v, fill_keys))
		return -EINVAL;
	p = json_object_get(v, "pattern");
	if (p) {
		const char *s = json_is_string(p) ? json_string_value(p) : "";

		tv_ju_path_key(sub, path, "pattern");
		if (strcmp(s, "random") == 0)
			fill.pattern = SC_FILL_RANDOM;
		else if (strcmp(s, "iota") == 0)
			fill.pattern = SC_FILL_IOTA;
		else if (strcmp(s, "zeros") == 0)
			fill.pattern = SC_FILL_ZEROS;
		else
			return tv_ju_fail(jc, sub,
				       "must be \"random\", \"iota\" or \"zeros\"");
	}
	fill.has_seed = json_object_get(v, "seed") != NULL;
	if (tv_ju_get_uint(jc, path, v, "seed", 0, UINT64_MAX, &fill.seed))
		return -EINVAL;
	*fill_p = fill;
	return 0;
}

static int parse_strings(struct tv_ju *jc, const char *path, json_t *v,
			 struct sc_bytes **strings_p, size_t *n_p)
{
	struct sc_bytes *out;
	char sub[TV_JU_PATH_MAX];
	json_t *e;
	size_t i, n;

	if (tv_ju_need_array(jc, path, v))
		return -EINVAL;
	n = json_array_size(v);
	out = calloc(n ? n : 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	json_array_foreach(v, i, e) {
		tv_ju_path_idx(sub, path, i);
		if (!json_is_string(e)) {
			free_bytes(out, i);
			return tv_ju_fail(jc, sub, "must be a string");
		}
		/* Strings may hold NUL bytes: keep the length. */
		out[i].len = json_string_length(e);
		out[i].data = malloc(out[i].len + 1);
		if (!out[i].data) {
			free_bytes(out, i);
			return -ENOMEM;
		}
		memcpy(out[i].data, json_string_value(e), out[i].len + 1);
	}
	*strings_p = out;
	*n_p = n;
	return 0;
}

/* Shape, dtype, size limits and strings of a tensor-publishing send. */
static int check_tensor_size(struct tv_ju *jc, const char *path,
			     const struct sc_send *s)
{
	uint64_t n = 0;

	if (s->dead)
		return 0;
	scenario_num_elements(&s->shape, &n);
	if (s->dtype != TV_DT_STRING) {
		if (n > SC_MAX_TENSOR_BYTES / tv_dtype_size(s->dtype))
			return tv_ju_fail(jc, path, "tensor larger than %llu bytes",
				       SC_MAX_TENSOR_BYTES);
		if (s->strings)
			return tv_ju_fail(jc, path,
				       "'strings' only goes with dtype string");
		return 0;
	}
	if (n > 1000000)
		return tv_ju_fail(jc, path, "more than 1000000 string elements");
	if (s->strings && s->nstrings != n)
		return tv_ju_fail(jc, path,
			       "'strings' has %zu elements, the shape %llu",
			       s->nstrings, (unsigned long long)n);
	return 0;
}

static int parse_send_error(struct tv_ju *jc, const char *path, json_t *v,
			    struct sc_send *s)
{
	char sub[TV_JU_PATH_MAX];
	json_t *c;
	int rc;

	if (tv_ju_need_object(jc, path, v) ||
	    tv_ju_check_keys(jc, path, v, error_keys))
		return -EINVAL;
	c = json_object_get(v, "code");
	tv_ju_path_key(sub, path, "code");
	if (!json_is_string(c) ||
	    tv_code_from_name(json_string_value(c), &s->err_code))
		return tv_ju_fail(jc, sub,
			       "must be a status code name such as \"NOT_FOUND\"");
	if (s->err_code == TV_OK)
		return tv_ju_fail(jc, sub, "an error cannot be OK");
	s->is_error = true;
	rc = tv_ju_get_str(jc, path, v, "message", false, &s->err_msg);
	if (rc)
		return rc;
	if (s->err_msg && strlen(s->err_msg) > TV_STATUS_MSG_MAX)
		return tv_ju_fail(jc, path, "message longer than %d bytes",
			       TV_STATUS_MSG_MAX);
	return 0;
}

/*
 * "memory": "pool" (registered, zero-copy) or "unregistered": caller-owned
 * host memory the engine must stage (TensorFlow #23220 sent such a buffer
 * with lkey 0).
 */
static int parse_memory(struct tv_ju *jc, const char *path, json_t *obj,
			struct sc_send *s)
{
	json_t *v = json_object_get(obj, "memory");
	char sub[TV_JU_PATH_MAX];
	const char *m;

	if (!v)
		return 0;
	tv_ju_path_key(sub, path, "memory");
	m = json_is_string(v) ? json_string_value(v) : "";
	if (!strcmp(m, "pool"))
		return 0;
	if (strcmp(m, "unregistered"))
		return tv_ju_fail(jc, sub, "must be \"pool\" or \"unregistered\"");
	if (s->dead || s->dtype == TV_DT_STRING || s->place != TV_PLACE_HOST)
		return tv_ju_fail(jc, sub,
			       "unregistered memory holds a live host tensor of a fixed-size dtype");
	s->unregistered = true;
	return 0;
}

/* The tensor half of a send: dtype, shape, dead, placement, fill, strings. */
static int parse_send_tensor(struct tv_ju *jc, const char *path, json_t *obj,
			     struct sc_send *s)
{
	char sub[TV_JU_PATH_MAX];
	json_t *v;
	int rc;

	if (tv_ju_get_bool(jc, path, obj, "dead", false, &s->dead))
		return -EINVAL;
	v = json_object_get(obj, "dtype");
	tv_ju_path_key(sub, path, "dtype");
	if (!v)
		return tv_ju_fail(jc, path, "missing required key 'dtype'");
	if (parse_dtype(jc, sub, v, &s->dtype))
		return -EINVAL;
	v = json_object_get(obj, "shape");
	tv_ju_path_key(sub, path, "shape");
	if (s->dead && v)
		return tv_ju_fail(jc, sub, "a dead tensor has no shape");
	if (!s->dead && !v)
		return tv_ju_fail(jc, path, "missing required key 'shape'");
	if (v && parse_shape(jc, sub, v, &s->shape))
		return -EINVAL;
	if (parse_placement(jc, path, obj, &s->place) ||
	    parse_memory(jc, path, obj, s))
		return -EINVAL;
	v = json_object_get(obj, "fill");
	tv_ju_path_key(sub, path, "fill");
	if (v && parse_fill(jc, sub, v, &s->fill))
		return -EINVAL;
	v = json_object_get(obj, "strings");
	tv_ju_path_key(sub, path, "strings");
	/* -EINVAL (named) or -ENOMEM: the loader tells the two apart. */
	rc = v ? parse_strings(jc, sub, v, &s->strings, &s->nstrings) : 0;
	if (rc)
		return rc;
	return check_tensor_size(jc, path, s);
}

static int parse_endpoints(struct tv_ju *jc, const char *path, json_t *obj,
			   const char *a_key, const char *b_key,
			   const struct scenario *sc, uint32_t *a_p,
			   uint32_t *b_p)
{
	uint64_t a, b;

	if (tv_ju_need_uint(jc, path, obj, a_key, sc->nodes - 1, &a) ||
	    tv_ju_need_uint(jc, path, obj, b_key, sc->nodes - 1, &b))
		return -EINVAL;
	if (a == b)
		return tv_ju_fail(jc, path, "'%s' and '%s' are the same node",
			       a_key, b_key);
	*a_p = (uint32_t)a;
	*b_p = (uint32_t)b;
	return 0;
}

static int parse_repeat(struct tv_ju *jc, const char *path, json_t *obj,
			uint64_t *count_p, uint64_t *stagger_p, bool *rep_p)
{
	*rep_p = json_object_get(obj, "repeat") != NULL;
	if (tv_ju_get_uint(jc, path, obj, "repeat", 1, SC_MAX_REPEAT, count_p) ||
	    tv_ju_get_uint(jc, path, obj, "stagger_ns", 0, UINT32_MAX, stagger_p))
		return -EINVAL;
	if (*count_p == 0)
		return tv_ju_fail(jc, path, "'repeat' must be >= 1");
	return 0;
}

static int repeat_name(const char *base, bool rep, uint64_t i, char **name_p)
{
	char *name;

	if (!rep)
		name = strdup(base);
	else if (asprintf(&name, "%s_%llu", base, (unsigned long long)i) < 0)
		name = NULL;
	if (!name)
		return -ENOMEM;
	*name_p = name;
	return 0;
}

static int check_name(struct tv_ju *jc, const char *path, const char *name)
{
	if (name[0] == '\0')
		return tv_ju_fail(jc, path, "'name' must not be empty");
	if (strlen(name) + 8 > TV_NAME_MAX)
		return tv_ju_fail(jc, path, "'name' longer than %d bytes",
			       TV_NAME_MAX - 8);
	return 0;
}

/* Append count copies of tmpl, named name_i when repeated. */
static int expand_send(struct scenario *sc, const struct sc_send *tmpl,
		       uint64_t count, uint64_t stagger, bool rep)
{
	for (uint64_t i = 0; i < count; i++) {
		struct sc_send *s;
		int rc = tv_ju_grow((void **)&sc->sends, sc->nsends,
				 &sc->sends_cap, sizeof(*s));

		if (rc)
			return rc;
		s = &sc->sends[sc->nsends];
		*s = *tmpl;
		s->name = NULL;
		s->err_msg = NULL;
		s->strings = NULL;
		s->at_ns = tmpl->at_ns + i * stagger;
		if (repeat_name(tmpl->name, rep, i, &s->name) ||
		    (tmpl->err_msg && !(s->err_msg = strdup(tmpl->err_msg))) ||
		    dup_bytes(tmpl->strings, tmpl->nstrings, &s->strings)) {
			sc_send_release(s);
			return -ENOMEM;
		}
		sc->nsends++;
		tv_tb_scenario_note_time(sc->core, s->at_ns);
	}
	return 0;
}

static int parse_send(struct tv_ju *jc, const char *path, json_t *obj,
		      struct scenario *sc, uint64_t step_id, uint64_t start_ns)
{
	struct sc_send tmpl = { .step_id = step_id };
	uint64_t count, stagger, at;
	json_t *err = json_object_get(obj, "error");
	char sub[TV_JU_PATH_MAX];
	bool rep;
	int rc = -EINVAL;

	if (tv_ju_need_object(jc, path, obj) ||
	    tv_ju_check_keys(jc, path, obj, err ? error_send_keys : send_keys))
		return -EINVAL;
	if (parse_endpoints(jc, path, obj, "from", "to", sc, &tmpl.from,
			    &tmpl.to))
		goto out;
	rc = tv_ju_get_str(jc, path, obj, "name", true, &tmpl.name);
	if (rc)
		goto out;
	rc = -EINVAL;
	if (check_name(jc, path, tmpl.name) ||
	    tv_ju_get_uint(jc, path, obj, "at_ns", 0, UINT64_MAX / 4, &at) ||
	    parse_repeat(jc, path, obj, &count, &stagger, &rep))
		goto out;
	tmpl.at_ns = start_ns + at;
	tv_ju_path_key(sub, path, "error");
	rc = err ? parse_send_error(jc, sub, err, &tmpl) :
		   parse_send_tensor(jc, path, obj, &tmpl);
	if (rc)
		goto out;
	rc = expand_send(sc, &tmpl, count, stagger, rep);
out:
	sc_send_release(&tmpl);
	return rc;
}

static int parse_expect_error(struct tv_ju *jc, const char *path, json_t *v,
			      struct sc_expect *ex)
{
	char sub[TV_JU_PATH_MAX];
	json_t *c = json_object_get(v, "error");

	if (tv_ju_check_keys(jc, path, v, expect_err_keys))
		return -EINVAL;
	tv_ju_path_key(sub, path, "error");
	if (!json_is_string(c) ||
	    tv_code_from_name(json_string_value(c), &ex->code) ||
	    ex->code == TV_OK)
		return tv_ju_fail(jc, sub,
			       "must be an error code name such as \"NOT_FOUND\"");
	ex->kind = SC_EXPECT_ERROR;
	return tv_ju_get_str(jc, path, v, "message", false, &ex->message);
}

static int parse_expect_ok(struct tv_ju *jc, const char *path, json_t *v,
			   struct sc_expect *ex)
{
	char sub[TV_JU_PATH_MAX];
	json_t *f;

	if (tv_ju_check_keys(jc, path, v, expect_ok_keys))
		return -EINVAL;
	ex->kind = SC_EXPECT_OK;
	if ((f = json_object_get(v, "dtype"))) {
		tv_ju_path_key(sub, path, "dtype");
		ex->has_dtype = true;
		if (parse_dtype(jc, sub, f, &ex->dtype))
			return -EINVAL;
	}
	if ((f = json_object_get(v, "shape"))) {
		tv_ju_path_key(sub, path, "shape");
		ex->has_shape = true;
		if (parse_shape(jc, sub, f, &ex->shape))
			return -EINVAL;
	}
	ex->has_dead = json_object_get(v, "dead") != NULL;
	if (tv_ju_get_bool(jc, path, v, "dead", false, &ex->dead))
		return -EINVAL;
	if ((f = json_object_get(v, "fill"))) {
		tv_ju_path_key(sub, path, "fill");
		ex->has_fill = true;
		if (parse_fill(jc, sub, f, &ex->fill))
			return -EINVAL;
	}
	if ((f = json_object_get(v, "strings"))) {
		tv_ju_path_key(sub, path, "strings");
		return parse_strings(jc, sub, f, &ex->strings, &ex->nstrings);
	}
	return 0;
}

static int parse_expect(struct tv_ju *jc, const char *path, json_t *v,
			struct sc_expect *ex)
{
	if (!v || (json_is_string(v) && !strcmp(json_string_value(v), "ok"))) {
		ex->kind = SC_EXPECT_OK;
		return 0;
	}
	if (json_is_string(v) && !strcmp(json_string_value(v), "any")) {
		ex->kind = SC_EXPECT_ANY;
		return 0;
	}
	if (!json_is_object(v))
		return tv_ju_fail(jc, path,
			       "must be \"ok\", \"any\", {\"error\": CODE, \"message\": TEXT} or an object of checks");
	if (json_object_get(v, "error"))
		return parse_expect_error(jc, path, v, ex);
	if (json_object_get(v, "message"))
		return tv_ju_fail(jc, path, "'message' needs 'error'");
	return parse_expect_ok(jc, path, v, ex);
}

static int expand_recv(struct scenario *sc, const struct sc_recv *tmpl,
		       uint64_t count, uint64_t stagger, bool rep)
{
	for (uint64_t i = 0; i < count; i++) {
		struct sc_recv *r;
		int rc = tv_ju_grow((void **)&sc->recvs, sc->nrecvs,
				 &sc->recvs_cap, sizeof(*r));

		if (rc)
			return rc;
		r = &sc->recvs[sc->nrecvs];
		*r = *tmpl;
		r->name = NULL;
		r->expect.message = NULL;
		r->expect.strings = NULL;
		r->at_ns = tmpl->at_ns + i * stagger;
		if (repeat_name(tmpl->name, rep, i, &r->name) ||
		    (tmpl->expect.message &&
		     !(r->expect.message = strdup(tmpl->expect.message))) ||
		    dup_bytes(tmpl->expect.strings, tmpl->expect.nstrings,
			      &r->expect.strings)) {
			sc_recv_release(r);
			return -ENOMEM;
		}
		sc->nrecvs++;
		tv_tb_scenario_note_time(sc->core, r->at_ns);
	}
	return 0;
}

static int parse_recv(struct tv_ju *jc, const char *path, json_t *obj,
		      struct scenario *sc, uint64_t step_id, uint64_t start_ns)
{
	struct sc_recv tmpl = { .step_id = step_id, .send_index = SC_NO_SEND };
	uint64_t count, stagger, at;
	char sub[TV_JU_PATH_MAX];
	bool rep;
	int rc = -EINVAL;

	if (tv_ju_need_object(jc, path, obj) ||
	    tv_ju_check_keys(jc, path, obj, recv_keys))
		return -EINVAL;
	if (parse_endpoints(jc, path, obj, "node", "from", sc, &tmpl.node,
			    &tmpl.from))
		goto out;
	rc = tv_ju_get_str(jc, path, obj, "name", true, &tmpl.name);
	if (rc)
		goto out;
	rc = -EINVAL;
	if (check_name(jc, path, tmpl.name) ||
	    tv_ju_get_uint(jc, path, obj, "at_ns", 0, UINT64_MAX / 4, &at) ||
	    parse_repeat(jc, path, obj, &count, &stagger, &rep) ||
	    parse_placement(jc, path, obj, &tmpl.place))
		goto out;
	tmpl.at_ns = start_ns + at;
	tv_ju_path_key(sub, path, "expect");
	rc = parse_expect(jc, sub, json_object_get(obj, "expect"),
			  &tmpl.expect);
	if (rc)
		goto out;
	rc = expand_recv(sc, &tmpl, count, stagger, rep);
out:
	sc_recv_release(&tmpl);
	return rc;
}

static int send_cmp_key(const struct sc_send *s, uint32_t from,
			const char *name)
{
	if (s->from != from)
		return s->from < from ? -1 : 1;
	return strcmp(s->name, name);
}

static int send_idx_cmp(const void *a, const void *b, void *arg)
{
	const struct sc_send *sends = arg;
	const struct sc_send *sb = &sends[*(const size_t *)b];

	return send_cmp_key(&sends[*(const size_t *)a], sb->from, sb->name);
}

/* Binary search of the sorted index for (from, name). */
static size_t find_send(const struct scenario *sc, const size_t *idx,
			size_t n, uint32_t from, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = send_cmp_key(&sc->sends[idx[mid]], from, name);

		if (c == 0)
			return idx[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SC_NO_SEND;
}

/*
 * Pair every recv of a step with the one send it consumes: a recv without
 * a send would hang forever, two sends of one key or two recvs of one
 * send are ambiguous.  Sends nobody receives are allowed (they stay in the
 * sender's table and the runner expects them there at teardown).
 */
static int match_step(struct tv_ju *jc, const char *path,
		      struct scenario *sc, size_t s0, size_t r0)
{
	size_t n = sc->nsends - s0, *idx = malloc((n ? n : 1) * sizeof(*idx));
	int rc = 0;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		idx[i] = s0 + i;
	qsort_r(idx, n, sizeof(*idx), send_idx_cmp, sc->sends);
	for (size_t i = 1; i < n && !rc; i++)
		if (!send_idx_cmp(&idx[i - 1], &idx[i], sc->sends))
			rc = tv_ju_fail(jc, path, "two sends of '%s' from node %u",
				     sc->sends[idx[i]].name,
				     sc->sends[idx[i]].from);
	for (size_t j = r0; j < sc->nrecvs && !rc; j++) {
		struct sc_recv *r = &sc->recvs[j];
		size_t k = find_send(sc, idx, n, r->from, r->name);

		if (k == SC_NO_SEND)
			rc = tv_ju_fail(jc, path,
				     "recv of '%s' by node %u: node %u sends no such tensor in this step",
				     r->name, r->node, r->from);
		else if (sc->sends[k].to != r->node)
			rc = tv_ju_fail(jc, path,
				     "recv of '%s' by node %u: the send goes to node %u",
				     r->name, r->node, sc->sends[k].to);
		else if (sc->sends[k].requested)
			rc = tv_ju_fail(jc, path, "two recvs of '%s' from node %u",
				     r->name, r->from);
		else {
			sc->sends[k].requested = true;
			r->send_index = k;
		}
	}
	free(idx);
	return rc;
}

static int parse_list(struct tv_ju *jc, const char *path, json_t *obj,
		      const char *key, struct scenario *sc, uint64_t step_id,
		      uint64_t start_ns, bool sends)
{
	char sub[TV_JU_PATH_MAX], elem[TV_JU_PATH_MAX];
	json_t *arr = json_object_get(obj, key), *v;
	size_t i;
	int rc;

	if (!arr)
		return 0;
	tv_ju_path_key(sub, path, key);
	if (tv_ju_need_array(jc, sub, arr))
		return -EINVAL;
	json_array_foreach(arr, i, v) {
		tv_ju_path_idx(elem, sub, i);
		rc = sends ? parse_send(jc, elem, v, sc, step_id, start_ns) :
			     parse_recv(jc, elem, v, sc, step_id, start_ns);
		if (rc)
			return rc;
	}
	return 0;
}

int sc_parse_step(struct tv_ju *jc, const char *path, json_t *obj,
		  struct scenario *sc, uint64_t default_step_id,
		  uint64_t start_ns)
{
	size_t s0 = sc->nsends, r0 = sc->nrecvs;
	uint64_t step_id;
	int rc;

	if (tv_ju_need_object(jc, path, obj) ||
	    tv_ju_check_keys(jc, path, obj, step_keys))
		return -EINVAL;
	rc = tv_ju_get_uint(jc, path, obj, "step_id", default_step_id,
			 UINT64_MAX, &step_id);
	if (rc)
		return rc;
	for (size_t i = 0; i < s0; i++)
		if (sc->sends[i].step_id == step_id)
			return tv_ju_fail(jc, path,
				       "step_id %llu is used by an earlier step",
				       (unsigned long long)step_id);
	rc = parse_list(jc, path, obj, "sends", sc, step_id, start_ns, true);
	if (!rc)
		rc = parse_list(jc, path, obj, "recvs", sc, step_id, start_ns,
				false);
	if (!rc)
		rc = match_step(jc, path, sc, s0, r0);
	return rc;
}
