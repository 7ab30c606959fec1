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
#include "runner_int.h"
#include "trace.h"

uint64_t runner_wall_ns(void)
{
	struct timespec ts;

	/* The CLI alone reads clocks; the engine only knows virtual time. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int runner_breakage_from_env(uint32_t *bits_p)
{
	const char *v = getenv("TV_BREAK");

	if (!v || !*v) {
		*bits_p = 0;
		return 0;
	}
	if (strcmp(v, "no-ack-timeout"))
		return -EINVAL;
	*bits_p = TV_BREAK_NO_ACK_TIMEOUT;
	return 0;
}

const char *runner_breakage_name(uint32_t bits)
{
	return bits & TV_BREAK_NO_ACK_TIMEOUT ? "no-ack-timeout" : NULL;
}

/*
 * The engine refused an operation (send, recv).  Under an injected
 * allocation or registration failure that is the engine doing its job;
 * otherwise it is a failure of the run.
 */
void runner_fail_or_tolerate(struct runner *r, const char *what, int err)
{
	if (r->unrecoverable_fires) {
		r->res.refused++;
		return;
	}
	failures_add(r->fails, FK_RUNNER, "%s: %s", what, strerror(-err));
}

static void progress_cb(void *arg, uint32_t node)
{
	struct node_slot *ns = arg;
	uint32_t prev = ns->r->actor;
	int rc;

	assert(ns->id == node);
	/* Down (node/crash): its old engine's timers still fire. */
	if (!ns->engine)
		return;
	ns->r->actor = node;
	rc = tv_engine_progress(ns->engine);
	ns->r->actor = prev;
	if (rc < 0)
		failures_add(ns->r->fails, FK_RUNNER,
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
		failures_add(r->fails, FK_RUNNER, "tv_sim_create: %s",
			     strerror(-rc));
		return rc;
	}
	for (size_t i = 0; i < sc->nlinks; i++) {
		rc = tv_sim_set_link(r->sim, sc->links[i].from,
				     sc->links[i].to, &sc->links[i].link);
		if (rc) {
			failures_add(r->fails, FK_RUNNER,
				     "tv_sim_set_link %u->%u: %s",
				     sc->links[i].from, sc->links[i].to,
				     strerror(-rc));
			return rc;
		}
	}
	return 0;
}

int runner_node_engine(struct runner *r, struct node_slot *ns)
{
	const struct scenario *sc = r->sc;
	struct tv_vf_device *dev = ns->dev;
	struct tv_engine_config cfg;
	int rc = 0;

	assert(!ns->engine);
	tv_engine_config_default(&cfg);
	cfg.node_id = ns->id;
	if (sc->queue_depth)
		cfg.queue_depth = sc->queue_depth;
	if (sc->pool_block_bytes)
		cfg.pool_block_bytes = (size_t)sc->pool_block_bytes;
	cfg.validate_checksum = sc->validate_checksum;
	cfg.observe = engine_observe;
	cfg.observe_ctx = r;
	cfg.test_breakage = r->opts->test_breakage;
	runner_engine_faults(r, ns, &cfg);
	/* Wrapped once: a restarted node's engine gets the same wrapper. */
	if (!dev)
		rc = runner_wrap_device(r, ns->id, &dev);
	if (!rc)
		rc = tv_engine_create(dev, &cfg, &ns->engine);
	return rc;
}

static int create_engines(struct runner *r)
{
	for (uint32_t n = 0; n < r->sc->nodes; n++) {
		struct node_slot *ns = &r->nodes[n];
		int rc;

		ns->r = r;
		ns->id = n;
		rc = runner_node_engine(r, ns);
		if (rc) {
			failures_add(r->fails, FK_RUNNER,
				     "tv_engine_create(node %u): %s", n,
				     strerror(-rc));
			return rc;
		}
		tv_sim_set_progress(r->sim, n, progress_cb, ns);
	}
	return 0;
}

/* The out-of-band exchange: each side learns the other's QP and buffer. */
int runner_connect_pair(struct runner *r, uint32_t a, uint32_t b)
{
	struct tv_channel *ca = tv_engine_channel(r->nodes[a].engine, b);
	struct tv_channel *cb = tv_engine_channel(r->nodes[b].engine, a);
	struct tv_channel_info ia, ib;
	int rc;

	assert(ca && cb);
	rc = tv_channel_info(ca, &ia);
	if (!rc)
		rc = tv_channel_info(cb, &ib);
	if (rc)
		return rc;
	/* Each side's rx buffer is where the other side's messages land. */
	checker_set_rx(&r->chk, a, b, &ia);
	checker_set_rx(&r->chk, b, a, &ib);
	rc = tv_channel_connect(ca, &ib);
	if (!rc)
		rc = tv_channel_connect(cb, &ia);
	if (!rc) {
		r->connected[a * r->sc->nodes + b] = true;
		r->connected[b * r->sc->nodes + a] = true;
		r->joined[a * r->sc->nodes + b] = true;
		r->joined[b * r->sc->nodes + a] = true;
	}
	return rc;
}

static int create_pair(struct runner *r, uint32_t a, uint32_t b)
{
	const struct scenario *sc = r->sc;
	struct tv_channel *ca, *cb;
	int rc;

	rc = tv_channel_create(r->nodes[a].engine, b, &ca);
	if (!rc)
		rc = tv_channel_create(r->nodes[b].engine, a, &cb);
	if (rc) {
		failures_add(r->fails, FK_RUNNER, "channel %u<->%u setup: %s",
			     a, b, strerror(-rc));
		return rc;
	}
	/* A late node's channels connect when it starts (#18630). */
	if (sc->start_ns[a] || sc->start_ns[b]) {
		r->late[r->nlate++] = (struct late_pair){ r, a, b };
		return 0;
	}
	rc = runner_connect_pair(r, a, b);
	if (rc)
		failures_add(r->fails, FK_RUNNER, "channel %u<->%u connect: %s",
			     a, b, strerror(-rc));
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
			rc = create_pair(r, a, b);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* ---- sends ----------------------------------------------------------- */

static void free_host(void *arg, void *data)
{
	free(data);
}

/* Caller-owned memory the engine never registered (TensorFlow #23220). */
static int make_unregistered(struct runner *r, const struct sc_send *s,
			     uint64_t seed, struct tv_tensor **t_p)
{
	size_t esize = tv_dtype_size(s->dtype);
	uint64_t n = 0;
	void *data;
	int rc;

	rc = scenario_num_elements(&s->shape, &n);
	if (rc)
		return rc;
	/* Never NULL, even for an empty tensor: it is a real buffer. */
	data = malloc(n * esize > 0 ? n * esize : 1);
	if (!data)
		return -ENOMEM;
	fill_bytes(data, n * esize, s->dtype, s->fill.pattern, seed);
	rc = tv_tensor_wrap_host(r->nodes[s->from].engine, s->dtype, &s->shape,
				 data, free_host, NULL, t_p);
	if (rc)
		free(data);
	return rc;
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
	if (s->unregistered)
		return make_unregistered(r, s, seed, t_p);
	rc = tv_tensor_create(engine, s->dtype, &s->shape, s->place, &t);
	if (rc)
		return rc;
	if (s->dtype == TV_DT_STRING) {
		rc = fill_tensor_strings(s, seed, t);
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

#define SEND_FMT "step %" PRIu64 ": node %u %s '%s'"

static void send_refused(struct send_slot *ss, const struct sc_send *s,
			 const char *op, int rc)
{
	char what[TV_NAME_MAX + 96];

	snprintf(what, sizeof(what), SEND_FMT, s->step_id, s->from, op,
		 s->name);
	ss->pub.refused = true;
	runner_fail_or_tolerate(ss->r, what, rc);
}

static void send_error_cb(struct send_slot *ss, const struct sc_send *s)
{
	struct runner *r = ss->r;
	int rc;

	rc = tv_engine_send_error(r->nodes[s->from].engine, s->step_id,
				  s->name, s->err_code,
				  s->err_msg ? s->err_msg : "");
	if (rc) {
		send_refused(ss, s, "send_error", rc);
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
	uint32_t prev = r->actor;
	struct tv_tensor *t;
	int rc;

	r->actor = s->from;
	if (runner_node_gate(r, s->from, "send", s->step_id, s->name)) {
		ss->pub.skipped = true;
		goto out;
	}
	ss->pub.epoch = r->nodes[s->from].epoch;
	if (s->is_error) {
		send_error_cb(ss, s);
		goto out;
	}
	rc = make_tensor(r, s, &t);
	if (rc) {
		send_refused(ss, s, "cannot create tensor", rc);
		goto out;
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
	if (rc)
		send_refused(ss, s, "send", rc);
	else
		ss->pub.done = true;
out:
	r->actor = prev;
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
				     sc->recvs[i].node, runner_recv_cb,
				     &r->recvs[i]);
		if (rc)
			goto fail;
	}
	rc = runner_schedule_late(r);
	if (rc)
		goto fail;
	return 0;
fail:
	failures_add(r->fails, FK_RUNNER, "tv_sim_schedule: %s", strerror(-rc));
	return rc;
}

/* ---- after the run --------------------------------------------------- */

#define LIVE(field, want)                                                    \
	do {                                                                 \
		if (st->field != (want))                                     \
			failures_add(r->fails, FK_LEAK,                      \
				     "invariant: node %u has " #field " = %" PRIu64 " at quiescence, expected %" PRIu64, \
				     n, st->field, (uint64_t)(want));        \
	} while (0)

static void check_live(struct runner *r, uint32_t n,
		       const struct tv_engine_stats *st)
{
	uint64_t unrequested = 0, gave_up = 0;

	/*
	 * Published and never asked for (the engine may refuse under faults),
	 * by this engine: a crash took the earlier engines' tensors along.
	 */
	for (size_t i = 0; i < r->sc->nsends; i++)
		if (r->sc->sends[i].from == n && !r->sc->sends[i].requested &&
		    !r->sends[i].pub.refused && !r->sends[i].pub.skipped &&
		    r->sends[i].pub.epoch == r->nodes[n].epoch)
			unrequested++;
	/* A receive that gave up leaves its tensor published. */
	for (size_t i = 0; i < r->sc->nrecvs; i++)
		if (r->sc->recvs[i].from == n && r->recvs[i].calls &&
		    r->recvs[i].code != TV_OK)
			gave_up++;
	LIVE(live_requests, 0);
	LIVE(live_responses, 0);
	LIVE(queued_msgs, 0);
	LIVE(unmatched_requests, 0);
	/*
	 * Under faults a reset gives a dropped response's tensor back to the
	 * tag table for the retry; if the receive failed for good instead,
	 * the tensor stays published, as any unrequested send does.
	 */
	if (st->unmatched_sends < unrequested ||
	    (!r->faulty && st->unmatched_sends > unrequested + gave_up))
		LIVE(unmatched_sends, unrequested);
}

#undef LIVE

void runner_add_stats(struct tv_engine_stats *sum,
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
			failures_add(r->fails, FK_EXPECT,
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
		/* A node that crashed: its engines' counters, summed. */
		if (r->nodes[n].engine) {
			tv_engine_stats(r->nodes[n].engine, &per[n]);
			check_live(r, n, &per[n]);
		}
		runner_add_stats(&per[n], &r->nodes[n].past);
		runner_add_stats(&r->res.total, &per[n]);
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
		failures_add(r->fails, FK_HANG,
			     "not quiescent at the virtual deadline of %" PRIu64 " ns (events still queued)",
			     r->sc->deadline_ns);
	else if (rc == -EAGAIN)
		failures_add(r->fails, FK_HANG,
			     "not quiescent after max_events = %" PRIu64 " events",
			     r->sc->max_events);
	else if (rc)
		failures_add(r->fails, FK_RUNNER, "tv_sim_run: %s",
			     strerror(-rc));
}

static void destroy_world(struct runner *r)
{
	int rc;

	for (uint32_t n = 0; r->nodes && n < r->sc->nodes; n++) {
		if (!r->nodes[n].engine)
			continue;
		rc = tv_engine_destroy(r->nodes[n].engine);
		if (rc)
			failures_add(r->fails, FK_LEAK,
				     "tv_engine_destroy(node %u): %s (tensors still referenced)",
				     n, strerror(-rc));
	}
	runner_crash_teardown(r);
	/* The wrappers go after the engines that used them. */
	runner_faults_free(r);
	if (!r->sim)
		return;
	/* Teardown events are recorded too; then the clock goes away. */
	rc = tv_sim_destroy(r->sim);
	if (r->opts->rec)
		r->opts->rec->sim = NULL;
	if (rc > 0)
		failures_add(r->fails, FK_LEAK,
			     "tv_sim_destroy: %d verbs objects leaked", rc);
	else if (rc < 0)
		failures_add(r->fails, FK_RUNNER, "tv_sim_destroy: %s",
			     strerror(-rc));
}

static void teardown(struct runner *r)
{
	r->tearing_down = true;
	/* Faults belong to the run; teardown must be clean. */
	runner_faults_stop(r);
	if (r->chk_ready)
		r->chk.active = false;
	destroy_world(r);
	if (r->chk_ready) {
		r->res.checked_writes = r->chk.checked_writes;
		r->res.checked_msgs = r->chk.checked_msgs;
		r->res.dup_landed = r->chk.dup_landed;
		checker_fini(&r->chk);
	}
	for (size_t i = 0; r->recvs && i < r->sc->nrecvs; i++)
		free(r->recvs[i].message);
	free(r->nodes);
	free(r->sends);
	free(r->recvs);
	free(r->pairs);
	free(r->connected);
	free(r->joined);
	free(r->late);
}

static int setup(struct runner *r)
{
	const struct scenario *sc = r->sc;
	size_t npairs = (size_t)sc->nodes * sc->nodes;
	int rc;

	r->nodes = calloc(sc->nodes, sizeof(*r->nodes));
	r->sends = calloc(sc->nsends + 1, sizeof(*r->sends));
	r->recvs = calloc(sc->nrecvs + 1, sizeof(*r->recvs));
	r->pairs = calloc(npairs, sizeof(*r->pairs));
	r->connected = calloc(npairs, sizeof(*r->connected));
	r->joined = calloc(npairs, sizeof(*r->joined));
	r->late = calloc(npairs / 2 + 1, sizeof(*r->late));
	if (!r->nodes || !r->sends || !r->recvs || !r->pairs ||
	    !r->connected || !r->joined || !r->late)
		return -ENOMEM;
	rc = create_sim(r);
	if (rc)
		return rc;
	rc = checker_init(&r->chk, r->sim, sc->nodes, r->fails);
	if (rc)
		return rc;
	r->chk_ready = true;
	r->chk.trace = r->opts->verbose;
	/* Under faults, error completions and channel errors are the point. */
	r->chk.allow_errors = sc->allow_error_completions || r->faulty;
	if (r->opts->rec)
		r->opts->rec->sim = r->sim;
	tv_sim_set_observer(r->sim, sim_observe, r);
	rc = runner_faults_setup(r);
	if (!rc)
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
	struct runner r = {
		.sc = sc, .opts = opts, .fails = fails,
		.faulty = scenario_has_faults(sc), .actor = RUN_NO_NODE,
	};
	int rc;

	_Static_assert(sizeof(struct tv_engine_stats) % sizeof(uint64_t) == 0,
		       "tv_engine_stats must hold only uint64_t counters");
	r.res.seed = opts->seed;
	rc = setup(&r);
	if (rc == -ENOMEM) {
		teardown(&r);
		return rc;
	}
	if (!rc)
		rc = runner_faults_start(&r);
	if (!rc) {
		run_world(&r);
		checker_quiescent(&r.chk);
		runner_check_recvs(&r);
		runner_check_crashes(&r);
		runner_check_faults(&r);
		rc = check_engines(&r);
	}
	teardown(&r);
	if (rc == -ENOMEM)
		return rc;
	r.res.failures = fails->count;
	*res_p = r.res;
	return 0;
}
