/*
 * The rendezvous workload's run (docs/scenarios.md): one engine per node
 * over the node's device, channels between the pairs that talk, every
 * send and recv scheduled at its virtual time; after the run, every
 * engine's books.  The testbed drives the world and its generic checks.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"
#include "rv_run.h"

static void engine_observe(void *ctx, const struct tv_engine_event *ev)
{
	struct runner *r = ctx;

	checker_engine_event(&r->chk, ev);
	rv_trace_engine_event(r->run, ev);
}

int runner_node_engine(struct runner *r, struct node_slot *ns)
{
	const struct scenario *sc = r->sc;
	struct tv_engine_config cfg;
	struct tv_vf_device *dev;
	int rc;

	assert(!ns->engine);
	tv_engine_config_default(&cfg);
	cfg.node_id = ns->id;
	if (sc->queue_depth)
		cfg.queue_depth = sc->queue_depth;
	if (sc->pool_block_bytes)
		cfg.pool_block_bytes = (size_t)sc->pool_block_bytes;
	cfg.max_recv_bytes = sc->max_recv_bytes;
	cfg.validate_checksum = sc->validate_checksum;
	cfg.observe = engine_observe;
	cfg.observe_ctx = r;
	cfg.test_breakage = r->test_breakage;
	runner_engine_faults(r, ns, &cfg);
	/* Wrapped once: a restarted node's engine gets the same wrapper. */
	rc = tv_tb_run_device(r->run, ns->id, &dev);
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
			tv_tb_fail(r->run, TV_TB_FK_RUNNER,
				   "tv_engine_create(node %u): %s", n,
				   strerror(-rc));
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
	uint64_t seed = fill_seed(r->seed, &s->fill, s->step_id, s->name);
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
	tv_tb_run_refused(ss->r->run, what, rc);
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
	uint32_t prev = tv_tb_run_enter(r->run, s->from);
	struct tv_tensor *t;
	int rc;

	if (tv_tb_run_gate(r->run, s->from, "send", s->step_id, s->name)) {
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
	tv_tb_run_leave(r->run, prev);
}

static int schedule_all(struct runner *r)
{
	const struct scenario *sc = r->sc;
	int rc;

	for (size_t i = 0; i < sc->nsends; i++) {
		r->sends[i].r = r;
		r->sends[i].idx = i;
		rc = tv_tb_run_schedule_op(r->run, sc->sends[i].at_ns,
					   sc->sends[i].from, send_cb,
					   &r->sends[i]);
		if (rc)
			goto fail;
	}
	for (size_t i = 0; i < sc->nrecvs; i++) {
		r->recvs[i].r = r;
		r->recvs[i].idx = i;
		rc = tv_tb_run_schedule_op(r->run, sc->recvs[i].at_ns,
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
	tv_tb_fail(r->run, TV_TB_FK_RUNNER, "tv_sim_schedule: %s", strerror(-rc));
	return rc;
}

/* ---- after the run --------------------------------------------------- */

#define LIVE(field, want)                                                    \
	do {                                                                 \
		if (st->field != (want))                                     \
			tv_tb_fail(r->run, TV_TB_FK_LEAK,                      \
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
			e->node < 0 ? &r->total : &per_node[e->node];
		uint64_t v = 0;

		scenario_stat_value(st, e->stat, e->msg_type, &v);
		if (v < e->min || v > e->max)
			tv_tb_fail(r->run, TV_TB_FK_EXPECT,
				     "expect_stats %s: %" PRIu64 ", expected %s%" PRIu64 "..%" PRIu64,
				     e->path, v, e->node < 0 ? "(all nodes) " : "",
				     e->min, e->max);
	}
}

static int check_engines(struct runner *r)
{
	struct tv_tb_result *res;
	uint32_t nodes = r->sc->nodes;
	struct tv_engine_stats *per = calloc(nodes, sizeof(*per));

	if (!per)
		return -ENOMEM;
	memset(&r->total, 0, sizeof(r->total));
	for (uint32_t n = 0; n < nodes; n++) {
		/* A node that crashed: its engines' counters, summed. */
		if (r->nodes[n].engine) {
			tv_engine_stats(r->nodes[n].engine, &per[n]);
			check_live(r, n, &per[n]);
		}
		runner_add_stats(&per[n], &r->nodes[n].past);
		runner_add_stats(&r->total, &per[n]);
	}
	check_expect_stats(r, per);
	free(per);
	/* What a checksum or the decoder caught (docs/faults.md). */
	res = tv_tb_run_result_mut(r->run);
	res->validated = r->sc->validate_checksum;
	res->corrupt_detected = r->total.checksum_failures +
				r->total.malformed_msgs;
	return 0;
}

/* ---- the workload's ops ----------------------------------------------- */

void rv_progress(struct tv_tb_run *run, void *st, uint32_t node)
{
	struct runner *r = st;
	struct node_slot *ns = &r->nodes[node];
	int rc;

	/* Down (node/crash): its old engine's timers still fire. */
	if (!ns->engine)
		return;
	rc = tv_engine_progress(ns->engine);
	if (rc < 0)
		tv_tb_fail(run, TV_TB_FK_RUNNER,
			   "tv_engine_progress on node %u failed: %s at %" PRIu64 " ns",
			   node, strerror(-rc), tv_tb_run_now_ns(run));
}

static int rv_alloc(struct runner *r)
{
	const struct scenario *sc = r->sc;
	size_t npairs = (size_t)sc->nodes * sc->nodes;

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
	return 0;
}

static uint32_t breakage_bits(const char *name)
{
	return name && !strcmp(name, "no-ack-timeout") ?
	       TV_BREAK_NO_ACK_TIMEOUT : 0;
}

int rv_setup(struct tv_tb_run *run, void **state_p)
{
	const struct tv_tb_scenario *core = tv_tb_run_scenario(run);
	struct runner *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	/* The testbed frees it (state_free) whatever happens next. */
	*state_p = r;
	r->run = run;
	r->sc = tv_tb_scenario_wl(core);
	r->seed = tv_tb_run_seed(run);
	r->test_breakage = breakage_bits(tv_tb_run_breakage(run));
	r->faulty = tv_tb_run_faulty(run);
	rc = rv_alloc(r);
	if (!rc)
		rc = checker_init(&r->chk, run, r->sc->nodes);
	if (rc)
		return rc;
	r->chk_ready = true;
	r->chk.trace = tv_tb_run_verbose(run);
	/* Under faults, error completions and channel errors are the point. */
	r->chk.allow_errors = tv_tb_scenario_allow_errors(core) || r->faulty;
	rc = create_engines(r);
	if (!rc)
		rc = connect_all(r);
	if (!rc)
		rc = schedule_all(r);
	return rc;
}

void rv_sim_event(struct tv_tb_run *run, void *st,
		  const struct tv_sim_event *ev)
{
	struct runner *r = st;

	checker_sim_event(&r->chk, ev);
}

void rv_check(struct tv_tb_run *run, void *st)
{
	struct runner *r = st;

	checker_quiescent(&r->chk);
	runner_check_recvs(r);
	runner_check_crashes(r);
}

void rv_check_end(struct tv_tb_run *run, void *st)
{
	struct runner *r = st;

	if (check_engines(r) == -ENOMEM)
		tv_tb_fail(run, TV_TB_FK_RUNNER, "check_engines: %s",
			   strerror(ENOMEM));
}

void rv_teardown(struct tv_tb_run *run, void *st)
{
	struct runner *r = st;
	int rc;

	for (uint32_t n = 0; r->nodes && n < r->sc->nodes; n++) {
		if (!r->nodes[n].engine)
			continue;
		rc = tv_engine_destroy(r->nodes[n].engine);
		r->nodes[n].engine = NULL;
		if (rc)
			tv_tb_fail(run, TV_TB_FK_LEAK,
				   "tv_engine_destroy(node %u): %s (tensors still referenced)",
				   n, strerror(-rc));
	}
	runner_crash_teardown(r);
}

void rv_state_free(void *st)
{
	struct runner *r = st;

	/* The checker saw the world's last events: it goes last. */
	if (r->chk_ready)
		checker_fini(&r->chk);
	for (size_t i = 0; r->recvs && i < r->sc->nrecvs; i++)
		free(r->recvs[i].message);
	free(r->nodes);
	free(r->sends);
	free(r->recvs);
	free(r->pairs);
	free(r->connected);
	free(r->joined);
	free(r->late);
	free(r);
}
