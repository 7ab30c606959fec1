/*
 * The scenario runner: one simulated world, one engine per node, channels
 * between the pairs that talk, every send and recv scheduled at its
 * virtual time, then run to quiescence and check everything.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fill.h"
#include "runner.h"
#include "trace.h"

struct runner;

struct node_slot {
	struct runner *r;
	uint32_t id;
	struct tv_engine *engine;
};

/* What a send actually published, recorded when it ran. */
struct pub {
	bool done;
	bool is_error;
	enum tv_dtype dtype;
	struct tv_shape shape;
	bool dead;
	uint64_t digest;
};

struct send_slot {
	struct runner *r;
	size_t idx;
	struct pub pub;
};

struct recv_slot {
	struct runner *r;
	size_t idx;
	unsigned calls;            /* done callback invocations */
};

struct runner {
	const struct scenario *sc;
	const struct run_opts *opts;
	struct failures *fails;
	struct tv_sim *sim;
	struct node_slot *nodes;
	struct send_slot *sends;
	struct recv_slot *recvs;
	bool *pairs;               /* [a * nodes + b]: a channel a <-> b */
	struct checker chk;
	bool chk_ready;
	bool tearing_down;         /* engine destroy cancels what is left */
	struct run_result res;
};

uint64_t runner_wall_ns(void)
{
	struct timespec ts;

	/* The CLI alone reads clocks; the engine only knows virtual time. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void progress_cb(void *arg, uint32_t node)
{
	struct node_slot *ns = arg;
	int rc;

	assert(ns->id == node);
	rc = tv_engine_progress(ns->engine);
	if (rc < 0)
		failures_add(ns->r->fails,
			     "tv_engine_progress on node %u failed: %s at %" PRIu64 " ns",
			     node, strerror(-rc), tv_sim_now_ns(ns->r->sim));
}

/*
 * Both observers feed the checker first, then the recorder: one stream in
 * execution order, engine events interleaved where they happen.
 */
static void sim_observe(void *arg, const struct tv_sim_event *ev)
{
	struct runner *r = arg;

	checker_sim_event(&r->chk, ev);
	if (r->opts->rec)
		trace_rec_sim_event(r->opts->rec, ev);
}

static void engine_observe(void *ctx, const struct tv_engine_event *ev)
{
	struct runner *r = ctx;

	checker_engine_event(&r->chk, ev);
	if (r->opts->rec)
		trace_rec_engine_event(r->opts->rec, ev);
}

static int create_sim(struct runner *r)
{
	const struct scenario *sc = r->sc;
	struct tv_sim_config cfg;
	int rc;

	tv_sim_config_default(&cfg);
	cfg.seed = r->opts->seed;
	cfg.num_nodes = sc->nodes;
	cfg.link = sc->link;
	cfg.jitter_ns_max = sc->jitter_ns_max;
	rc = tv_sim_create(&cfg, &r->sim);
	if (rc) {
		failures_add(r->fails, "tv_sim_create: %s", strerror(-rc));
		return rc;
	}
	for (size_t i = 0; i < sc->nlinks; i++) {
		rc = tv_sim_set_link(r->sim, sc->links[i].from,
				     sc->links[i].to, &sc->links[i].link);
		if (rc) {
			failures_add(r->fails, "tv_sim_set_link %u->%u: %s",
				     sc->links[i].from, sc->links[i].to,
				     strerror(-rc));
			return rc;
		}
	}
	return 0;
}

static int create_engines(struct runner *r)
{
	const struct scenario *sc = r->sc;

	for (uint32_t n = 0; n < sc->nodes; n++) {
		struct tv_engine_config cfg;
		struct node_slot *ns = &r->nodes[n];
		int rc;

		tv_engine_config_default(&cfg);
		cfg.node_id = n;
		if (sc->queue_depth)
			cfg.queue_depth = sc->queue_depth;
		if (sc->pool_block_bytes)
			cfg.pool_block_bytes = (size_t)sc->pool_block_bytes;
		cfg.validate_checksum = sc->validate_checksum;
		cfg.observe = engine_observe;
		cfg.observe_ctx = r;
		ns->r = r;
		ns->id = n;
		rc = tv_engine_create(tv_sim_device(r->sim, n), &cfg,
				      &ns->engine);
		if (rc) {
			failures_add(r->fails, "tv_engine_create(node %u): %s",
				     n, strerror(-rc));
			return rc;
		}
		tv_sim_set_progress(r->sim, n, progress_cb, ns);
	}
	return 0;
}

static int connect_pair(struct runner *r, uint32_t a, uint32_t b)
{
	struct tv_channel *ca, *cb;
	struct tv_channel_info ia, ib;
	int rc;

	rc = tv_channel_create(r->nodes[a].engine, b, &ca);
	if (!rc)
		rc = tv_channel_create(r->nodes[b].engine, a, &cb);
	if (!rc)
		rc = tv_channel_info(ca, &ia);
	if (!rc)
		rc = tv_channel_info(cb, &ib);
	if (rc) {
		failures_add(r->fails, "channel %u<->%u setup: %s", a, b,
			     strerror(-rc));
		return rc;
	}
	/* Each side's rx buffer is where the other side's messages land. */
	checker_set_rx(&r->chk, a, b, &ia);
	checker_set_rx(&r->chk, b, a, &ib);
	rc = tv_channel_connect(ca, &ib);
	if (!rc)
		rc = tv_channel_connect(cb, &ia);
	if (rc)
		failures_add(r->fails, "channel %u<->%u connect: %s", a, b,
			     strerror(-rc));
	return rc;
}

static int connect_all(struct runner *r)
{
	const struct scenario *sc = r->sc;
	uint32_t n = sc->nodes;

	for (size_t i = 0; i < sc->nsends; i++) {
		r->pairs[sc->sends[i].from * n + sc->sends[i].to] = true;
		r->pairs[sc->sends[i].to * n + sc->sends[i].from] = true;
	}
	for (uint32_t a = 0; a < n; a++) {
		for (uint32_t b = a + 1; b < n; b++) {
			int rc;

			if (!r->pairs[a * n + b])
				continue;
			rc = connect_pair(r, a, b);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* ---- sends ----------------------------------------------------------- */

static int fill_strings(const struct sc_send *s, uint64_t seed,
			struct tv_tensor *t)
{
	uint64_t n = tv_tensor_num_elements(t);
	char buf[FILL_STRING_MAX];

	for (uint64_t i = 0; i < n; i++) {
		const void *bytes = buf;
		size_t len;
		int rc;

		if (s->strings) {
			bytes = s->strings[i].data;
			len = s->strings[i].len;
		} else {
			len = fill_string(seed, i, buf);
		}
		rc = tv_tensor_set_string(t, i, bytes, len);
		if (rc)
			return rc;
	}
	return 0;
}

static int make_tensor(struct runner *r, const struct sc_send *s,
		       struct tv_tensor **t_p)
{
	struct tv_engine *engine = r->nodes[s->from].engine;
	uint64_t seed = fill_seed(r->opts->seed, &s->fill, s->step_id, s->name);
	struct tv_tensor *t;
	int rc;

	if (s->dead)
		return tv_tensor_create_dead(engine, s->dtype, t_p);
	rc = tv_tensor_create(engine, s->dtype, &s->shape, s->place, &t);
	if (rc)
		return rc;
	if (s->dtype == TV_DT_STRING) {
		rc = fill_strings(s, seed, t);
	} else if (tv_tensor_size_bytes(t) > 0) {
		void *data = tv_tensor_data(t);

		if (!data)
			rc = -EFAULT;
		else
			fill_bytes(data, tv_tensor_size_bytes(t), s->dtype,
				   s->fill.pattern, seed);
	}
	if (rc) {
		tv_tensor_unref(t);
		return rc;
	}
	*t_p = t;
	return 0;
}

static void send_error_cb(struct send_slot *ss, const struct sc_send *s)
{
	struct runner *r = ss->r;
	int rc;

	rc = tv_engine_send_error(r->nodes[s->from].engine, s->step_id,
				  s->name, s->err_code,
				  s->err_msg ? s->err_msg : "");
	if (rc) {
		failures_add(r->fails,
			     "step %" PRIu64 ": node %u send_error '%s': %s",
			     s->step_id, s->from, s->name, strerror(-rc));
		return;
	}
	ss->pub.done = true;
	ss->pub.is_error = true;
}

static void send_cb(void *arg)
{
	struct send_slot *ss = arg;
	struct runner *r = ss->r;
	const struct sc_send *s = &r->sc->sends[ss->idx];
	struct tv_tensor *t;
	int rc;

	if (s->is_error) {
		send_error_cb(ss, s);
		return;
	}
	rc = make_tensor(r, s, &t);
	if (rc) {
		failures_add(r->fails,
			     "step %" PRIu64 ": node %u cannot create tensor '%s': %s",
			     s->step_id, s->from, s->name, strerror(-rc));
		return;
	}
	/* Record what was published, read back from the tensor itself. */
	ss->pub.dtype = tv_tensor_dtype(t);
	ss->pub.shape = *tv_tensor_shape(t);
	ss->pub.dead = tv_tensor_is_dead(t);
	rc = fill_digest_tensor(t, &ss->pub.digest);
	if (!rc)
		rc = tv_engine_send(r->nodes[s->from].engine, s->step_id,
				    s->name, t);
	tv_tensor_unref(t);
	if (rc) {
		failures_add(r->fails,
			     "step %" PRIu64 ": node %u send '%s': %s",
			     s->step_id, s->from, s->name, strerror(-rc));
		return;
	}
	ss->pub.done = true;
}

/* ---- receives -------------------------------------------------------- */

#define RECV_FMT "step %" PRIu64 ": node %u recv '%s' from node %u"
#define RECV_ARGS(rv) (rv)->step_id, (rv)->node, (rv)->name, (rv)->from

static void shape_str(const struct tv_shape *s, char *buf, size_t cap)
{
	size_t used = 0;

	used += (size_t)snprintf(buf, cap, "[");
	for (uint32_t i = 0; i < s->rank && used < cap; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s%" PRId64,
					 i ? "," : "", s->dims[i]);
	if (used < cap)
		snprintf(buf + used, cap - used, "]");
}

static bool check_meta(struct runner *r, const struct sc_recv *rv,
		       enum tv_dtype dtype, const struct tv_shape *shape,
		       bool dead, struct tv_tensor *t, const char *what)
{
	char a[128], b[128];

	if (tv_tensor_dtype(t) != dtype) {
		failures_add(r->fails, RECV_FMT ": dtype %s, %s %s",
			     RECV_ARGS(rv), tv_dtype_name(tv_tensor_dtype(t)),
			     what, tv_dtype_name(dtype));
		return false;
	}
	if (tv_tensor_is_dead(t) != dead) {
		failures_add(r->fails, RECV_FMT ": is_dead %d, %s %d",
			     RECV_ARGS(rv), tv_tensor_is_dead(t), what, dead);
		return false;
	}
	if (shape && !dead && !tv_shape_equal(tv_tensor_shape(t), shape)) {
		shape_str(tv_tensor_shape(t), a, sizeof(a));
		shape_str(shape, b, sizeof(b));
		failures_add(r->fails, RECV_FMT ": shape %s, %s %s",
			     RECV_ARGS(rv), a, what, b);
		return false;
	}
	return true;
}

static void check_expect_strings(struct runner *r, const struct sc_recv *rv,
				 struct tv_tensor *t)
{
	const struct sc_expect *ex = &rv->expect;

	if (tv_tensor_num_elements(t) != ex->nstrings) {
		failures_add(r->fails, RECV_FMT ": %" PRIu64 " strings, expected %zu",
			     RECV_ARGS(rv), tv_tensor_num_elements(t),
			     ex->nstrings);
		return;
	}
	for (size_t i = 0; i < ex->nstrings; i++) {
		const void *bytes;
		size_t len;

		if (tv_tensor_get_string(t, i, &bytes, &len) ||
		    len != ex->strings[i].len ||
		    memcmp(bytes, ex->strings[i].data, len) != 0) {
			failures_add(r->fails,
				     RECV_FMT ": string element %zu differs from the expected \"%s\"",
				     RECV_ARGS(rv), i, ex->strings[i].data);
			return;
		}
	}
}

/* The scenario's own checks, on top of "equal to what was published". */
static void check_expect_extra(struct runner *r, const struct sc_recv *rv,
			       struct tv_tensor *t, uint64_t digest)
{
	const struct sc_expect *ex = &rv->expect;
	uint64_t want;

	if ((ex->has_dtype || ex->has_dead || ex->has_shape) &&
	    !check_meta(r, rv, ex->has_dtype ? ex->dtype : tv_tensor_dtype(t),
			ex->has_shape ? &ex->shape : NULL,
			ex->has_dead ? ex->dead : tv_tensor_is_dead(t), t,
			"expected"))
		return;
	if (ex->strings)
		check_expect_strings(r, rv, t);
	if (!ex->has_fill)
		return;
	if (fill_expected_digest(tv_tensor_dtype(t), tv_tensor_num_elements(t),
				 ex->fill.pattern,
				 fill_seed(r->opts->seed, &ex->fill,
					   rv->step_id, rv->name),
				 &want) == 0 && want != digest)
		failures_add(r->fails,
			     RECV_FMT ": data differs from the expected fill (digest 0x%016" PRIx64 ", expected 0x%016" PRIx64 ")",
			     RECV_ARGS(rv), digest, want);
}

static void verify_tensor(struct runner *r, const struct sc_recv *rv,
			  struct tv_tensor *t)
{
	const struct pub *pub = &r->sends[rv->send_index].pub;
	uint64_t digest;

	if (!pub->done || pub->is_error) {
		failures_add(r->fails, RECV_FMT ": got a tensor, but the sender %s",
			     RECV_ARGS(rv), pub->done ?
			     "published an error" : "has not published yet");
		return;
	}
	if (!check_meta(r, rv, pub->dtype, &pub->shape, pub->dead, t,
			"the sender published"))
		return;
	if (!pub->dead && tv_tensor_placement(t) != rv->place) {
		failures_add(r->fails, RECV_FMT ": placement %s, asked for %s",
			     RECV_ARGS(rv),
			     tv_tensor_placement(t) ? "device" : "host",
			     rv->place ? "device" : "host");
		return;
	}
	if (fill_digest_tensor(t, &digest)) {
		failures_add(r->fails, RECV_FMT ": cannot read the data",
			     RECV_ARGS(rv));
		return;
	}
	if (digest != pub->digest) {
		failures_add(r->fails,
			     RECV_FMT ": data corrupted (digest 0x%016" PRIx64 ", published 0x%016" PRIx64 ")",
			     RECV_ARGS(rv), digest, pub->digest);
		return;
	}
	r->res.bytes_received += fill_payload_bytes(t);
	check_expect_extra(r, rv, t, digest);
}

static void check_error(struct runner *r, const struct sc_recv *rv,
			const struct tv_status *st)
{
	const struct sc_expect *ex = &rv->expect;

	if (ex->kind != SC_EXPECT_ERROR) {
		failures_add(r->fails, RECV_FMT ": expected ok, got %s: %s",
			     RECV_ARGS(rv), tv_code_name(st->code),
			     st->message);
		return;
	}
	if (st->code != ex->code)
		failures_add(r->fails, RECV_FMT ": expected %s, got %s: %s",
			     RECV_ARGS(rv), tv_code_name(ex->code),
			     tv_code_name(st->code), st->message);
	else if (ex->message && !strstr(st->message, ex->message))
		failures_add(r->fails,
			     RECV_FMT ": message \"%s\" does not contain \"%s\"",
			     RECV_ARGS(rv), st->message, ex->message);
}

static void recv_done(void *arg, const struct tv_status *st,
		      struct tv_tensor *t)
{
	struct recv_slot *rs = arg;
	struct runner *r = rs->r;
	const struct sc_recv *rv = &r->sc->recvs[rs->idx];

	if (++rs->calls == 1 && r->tearing_down) {
		/* Reported as "never completed" already; this is the cancel. */
	} else if (rs->calls > 1) {
		failures_add(r->fails,
			     "invariant: " RECV_FMT ": done callback ran %u times (status %s)",
			     RECV_ARGS(rv), rs->calls, tv_code_name(st->code));
	} else if (st->code != TV_OK) {
		r->res.recvs_error++;
		if (t)
			failures_add(r->fails, RECV_FMT ": error status with a tensor",
				     RECV_ARGS(rv));
		check_error(r, rv, st);
	} else if (!t) {
		failures_add(r->fails, RECV_FMT ": OK status without a tensor",
			     RECV_ARGS(rv));
	} else if (rv->expect.kind == SC_EXPECT_ERROR) {
		failures_add(r->fails, RECV_FMT ": expected %s, got a tensor",
			     RECV_ARGS(rv), tv_code_name(rv->expect.code));
	} else {
		r->res.recvs_ok++;
		verify_tensor(r, rv, t);
	}
	if (t)
		tv_tensor_unref(t);
}

static void recv_cb(void *arg)
{
	struct recv_slot *rs = arg;
	struct runner *r = rs->r;
	const struct sc_recv *rv = &r->sc->recvs[rs->idx];
	struct tv_engine *engine = r->nodes[rv->node].engine;
	struct tv_channel *ch = tv_engine_channel(engine, rv->from);
	int rc;

	if (!ch) {
		failures_add(r->fails, RECV_FMT ": no channel", RECV_ARGS(rv));
		return;
	}
	rc = tv_engine_recv_async(engine, ch, rv->step_id, rv->name,
				  rv->place, recv_done, rs);
	if (rc)
		failures_add(r->fails, RECV_FMT ": tv_engine_recv_async: %s",
			     RECV_ARGS(rv), strerror(-rc));
}

static int schedule_all(struct runner *r)
{
	const struct scenario *sc = r->sc;
	int rc;

	for (size_t i = 0; i < sc->nsends; i++) {
		r->sends[i].r = r;
		r->sends[i].idx = i;
		rc = tv_sim_schedule(r->sim, sc->sends[i].at_ns,
				     sc->sends[i].from, send_cb, &r->sends[i]);
		if (rc)
			goto fail;
	}
	for (size_t i = 0; i < sc->nrecvs; i++) {
		r->recvs[i].r = r;
		r->recvs[i].idx = i;
		rc = tv_sim_schedule(r->sim, sc->recvs[i].at_ns,
				     sc->recvs[i].node, recv_cb, &r->recvs[i]);
		if (rc)
			goto fail;
	}
	return 0;
fail:
	failures_add(r->fails, "tv_sim_schedule: %s", strerror(-rc));
	return rc;
}

/* ---- after the run --------------------------------------------------- */

static void check_recvs(struct runner *r)
{
	size_t missing = 0;

	for (size_t i = 0; i < r->sc->nrecvs; i++) {
		const struct sc_recv *rv = &r->sc->recvs[i];

		if (r->recvs[i].calls != 0)
			continue;
		if (missing++ < 10)
			failures_add(r->fails,
				     "invariant: " RECV_FMT ": never completed (done callback not run at quiescence)",
				     RECV_ARGS(rv));
	}
	if (missing > 10)
		failures_add(r->fails, "invariant: %zu recvs never completed",
			     missing);
}

static void check_live(struct runner *r, uint32_t n,
		       const struct tv_engine_stats *st)
{
	uint64_t unrequested = 0;

	for (size_t i = 0; i < r->sc->nsends; i++)
		if (r->sc->sends[i].from == n && !r->sc->sends[i].requested)
			unrequested++;
#define LIVE(field, want)                                                    \
	do {                                                                 \
		if (st->field != (want))                                     \
			failures_add(r->fails,                               \
				     "invariant: node %u has " #field " = %" PRIu64 " at quiescence, expected %" PRIu64, \
				     n, st->field, (uint64_t)(want));        \
	} while (0)
	LIVE(live_requests, 0);
	LIVE(live_responses, 0);
	LIVE(queued_msgs, 0);
	LIVE(unmatched_requests, 0);
	LIVE(unmatched_sends, unrequested);
#undef LIVE
}

static void add_stats(struct tv_engine_stats *sum,
		      const struct tv_engine_stats *st)
{
	uint64_t *d = (uint64_t *)(void *)sum;
	const uint64_t *s = (const uint64_t *)(const void *)st;

	/* Every field is a uint64_t counter (msgs arrays included). */
	for (size_t i = 0; i < sizeof(*sum) / sizeof(uint64_t); i++)
		d[i] += s[i];
}

static void check_expect_stats(struct runner *r,
			       const struct tv_engine_stats *per_node)
{
	for (size_t i = 0; i < r->sc->nstats; i++) {
		const struct sc_stat_expect *e = &r->sc->stats[i];
		const struct tv_engine_stats *st =
			e->node < 0 ? &r->res.total : &per_node[e->node];
		uint64_t v = 0;

		scenario_stat_value(st, e->stat, e->msg_type, &v);
		if (v < e->min || v > e->max)
			failures_add(r->fails,
				     "expect_stats %s: %" PRIu64 ", expected %s%" PRIu64 "..%" PRIu64,
				     e->path, v, e->node < 0 ? "(all nodes) " : "",
				     e->min, e->max);
	}
}

static int check_engines(struct runner *r)
{
	uint32_t nodes = r->sc->nodes;
	struct tv_engine_stats *per = calloc(nodes, sizeof(*per));

	if (!per)
		return -ENOMEM;
	memset(&r->res.total, 0, sizeof(r->res.total));
	for (uint32_t n = 0; n < nodes; n++) {
		tv_engine_stats(r->nodes[n].engine, &per[n]);
		check_live(r, n, &per[n]);
		add_stats(&r->res.total, &per[n]);
	}
	check_expect_stats(r, per);
	free(per);
	return 0;
}

static void run_world(struct runner *r)
{
	uint64_t t0 = runner_wall_ns();
	int rc = tv_sim_run(r->sim, r->sc->deadline_ns, r->sc->max_events);
	struct tv_sim_stats st;

	r->res.wall_ns = runner_wall_ns() - t0;
	tv_sim_stats(r->sim, &st);
	r->res.sim_events = st.events;
	r->res.virtual_ns = tv_sim_now_ns(r->sim);
	r->res.event_hash = tv_sim_event_hash(r->sim);
	if (rc == -ETIMEDOUT)
		failures_add(r->fails,
			     "not quiescent at the virtual deadline of %" PRIu64 " ns (events still queued)",
			     r->sc->deadline_ns);
	else if (rc == -EAGAIN)
		failures_add(r->fails,
			     "not quiescent after max_events = %" PRIu64 " events",
			     r->sc->max_events);
	else if (rc)
		failures_add(r->fails, "tv_sim_run: %s", strerror(-rc));
}

static void teardown(struct runner *r)
{
	int rc;

	r->tearing_down = true;
	if (r->chk_ready)
		r->chk.active = false;
	for (uint32_t n = 0; r->nodes && n < r->sc->nodes; n++) {
		if (!r->nodes[n].engine)
			continue;
		rc = tv_engine_destroy(r->nodes[n].engine);
		if (rc)
			failures_add(r->fails,
				     "tv_engine_destroy(node %u): %s (tensors still referenced)",
				     n, strerror(-rc));
	}
	if (r->sim) {
		/* Teardown events are recorded too; then the clock goes away. */
		rc = tv_sim_destroy(r->sim);
		if (r->opts->rec)
			r->opts->rec->sim = NULL;
		if (rc > 0)
			failures_add(r->fails,
				     "tv_sim_destroy: %d verbs objects leaked", rc);
		else if (rc < 0)
			failures_add(r->fails, "tv_sim_destroy: %s",
				     strerror(-rc));
	}
	if (r->chk_ready) {
		r->res.checked_writes = r->chk.checked_writes;
		r->res.checked_msgs = r->chk.checked_msgs;
		checker_fini(&r->chk);
	}
	free(r->nodes);
	free(r->sends);
	free(r->recvs);
	free(r->pairs);
}

static int setup(struct runner *r)
{
	const struct scenario *sc = r->sc;
	int rc;

	r->nodes = calloc(sc->nodes, sizeof(*r->nodes));
	r->sends = calloc(sc->nsends + 1, sizeof(*r->sends));
	r->recvs = calloc(sc->nrecvs + 1, sizeof(*r->recvs));
	r->pairs = calloc((size_t)sc->nodes * sc->nodes, sizeof(*r->pairs));
	if (!r->nodes || !r->sends || !r->recvs || !r->pairs)
		return -ENOMEM;
	rc = create_sim(r);
	if (rc)
		return rc;
	rc = checker_init(&r->chk, r->sim, sc->nodes, r->fails);
	if (rc)
		return rc;
	r->chk_ready = true;
	r->chk.trace = r->opts->verbose;
	r->chk.allow_errors = sc->allow_error_completions;
	if (r->opts->rec)
		r->opts->rec->sim = r->sim;
	tv_sim_set_observer(r->sim, sim_observe, r);
	rc = create_engines(r);
	if (!rc)
		rc = connect_all(r);
	if (!rc)
		rc = schedule_all(r);
	return rc;
}

int runner_run(const struct scenario *sc, const struct run_opts *opts,
	       struct failures *fails, struct run_result *res_p)
{
	struct runner r = { .sc = sc, .opts = opts, .fails = fails };
	int rc;

	_Static_assert(sizeof(struct tv_engine_stats) % sizeof(uint64_t) == 0,
		       "tv_engine_stats must hold only uint64_t counters");
	r.res.seed = opts->seed;
	rc = setup(&r);
	if (rc == -ENOMEM) {
		teardown(&r);
		return rc;
	}
	if (!rc) {
		run_world(&r);
		checker_quiescent(&r.chk);
		check_recvs(&r);
		rc = check_engines(&r);
	}
	teardown(&r);
	if (rc == -ENOMEM)
		return rc;
	r.res.failures = fails->count;
	*res_p = r.res;
	return 0;
}
