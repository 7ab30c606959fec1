/*
 * A run on the simulator: one simulated world of the scenario's nodes and
 * links, the workload set up on it (its nodes, connections, operations
 * scheduled in virtual time), run to quiescence, then every check: the
 * generic ones here and the workload's own.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run_int.h"

uint64_t tb_wall_ns(void)
{
	struct timespec ts;

	/* The testbed alone reads clocks; engines only know virtual time. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void tv_tb_run_opts_init(struct tv_tb_run_opts *opts,
			 const struct tv_tb_scenario *sc)
{
	memset(opts, 0, sizeof(*opts));
	opts->seed = sc->seed;
}

void tv_tb_fail(struct tv_tb_run *run, enum tv_tb_fail_kind kind,
		const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tb_failures_vadd(&run->fails, kind, fmt, ap);
	va_end(ap);
}

void tv_tb_run_refused(struct tv_tb_run *run, const char *what, int err)
{
	if (run->unrecoverable_fires) {
		run->res.refused++;
		return;
	}
	tv_tb_fail(run, TV_TB_FK_RUNNER, "%s: %s", what, strerror(-err));
}

/* ---- what workloads see ----------------------------------------------- */

const struct tv_tb_scenario *tv_tb_run_scenario(const struct tv_tb_run *run)
{
	return run->sc;
}

uint64_t tv_tb_run_now_ns(const struct tv_tb_run *run)
{
	return run->sim ? tv_sim_now_ns(run->sim) : 0;
}

uint64_t tv_tb_run_seed(const struct tv_tb_run *run)
{
	return run->opts.seed;
}

struct tv_sim *tv_tb_run_sim(const struct tv_tb_run *run)
{
	return run->sim;
}

void *tv_tb_run_wl(const struct tv_tb_run *run)
{
	return run->wl;
}

bool tv_tb_run_verbose(const struct tv_tb_run *run)
{
	return run->opts.verbose;
}

const char *tv_tb_run_breakage(const struct tv_tb_run *run)
{
	return run->opts.breakage;
}

bool tv_tb_run_tearing_down(const struct tv_tb_run *run)
{
	return run->tearing_down;
}

struct tv_tb_result *tv_tb_run_result_mut(struct tv_tb_run *run)
{
	return &run->res;
}

bool tv_tb_run_faulty(const struct tv_tb_run *run)
{
	return run->faulty;
}

uint64_t tv_tb_run_fires(const struct tv_tb_run *run)
{
	return run->fires;
}

uint64_t tv_tb_run_unrecoverable_fires(const struct tv_tb_run *run)
{
	return run->unrecoverable_fires;
}

uint32_t tv_tb_run_actor(const struct tv_tb_run *run)
{
	return run->actor;
}

uint32_t tv_tb_run_enter(struct tv_tb_run *run, uint32_t node)
{
	uint32_t prev = run->actor;

	run->actor = node;
	return prev;
}

void tv_tb_run_leave(struct tv_tb_run *run, uint32_t prev)
{
	run->actor = prev;
}

enum tv_tb_node_state tv_tb_run_node_state(const struct tv_tb_run *run,
					   uint32_t node)
{
	assert(node < run->sc->nodes);
	return run->nodes[node].state;
}

bool tv_tb_run_pair_due(const struct tv_tb_run *run, uint32_t a, uint32_t b)
{
	uint64_t now = tv_sim_now_ns(run->sim);

	/* A late node's connections come up at its start. */
	return run->sc->start_ns[a] <= now && run->sc->start_ns[b] <= now;
}

const struct tv_tb_result *tv_tb_run_result(const struct tv_tb_run *run)
{
	return &run->res;
}

const struct tv_tb_failures *tv_tb_run_failures(const struct tv_tb_run *run)
{
	return &run->fails;
}

/* ---- scheduling ----------------------------------------------------------- */

int tv_tb_run_device(struct tv_tb_run *run, uint32_t node,
		     struct tv_vf_device **dev_p)
{
	struct tb_node *ns = &run->nodes[node];
	struct tv_vf_device *inner;
	int rc;

	assert(node < run->sc->nodes);
	if (ns->has_dev) {
		*dev_p = ns->dev;
		return 0;
	}
	inner = tv_sim_device(run->sim, node);
	/* Wrapped before any engine exists: it sees only the wrapper. */
	if (run->flt) {
		rc = tv_flt_wrap(run->flt, inner, &ns->dev);
		if (rc)
			return rc;
		tv_flt_wrap_set_node(ns->dev, node);
		rc = run->opts.tap ? tb_tap_attach(run->opts.tap, node,
						   ns->dev) : 0;
		if (rc) {
			tv_flt_unwrap(ns->dev);
			return rc;
		}
	} else {
		ns->dev = inner;
	}
	ns->has_dev = true;
	*dev_p = ns->dev;
	return 0;
}

int tv_tb_run_schedule(struct tv_tb_run *run, uint64_t at_ns, uint32_t node,
		       void (*fn)(void *arg), void *arg)
{
	assert(node < run->sc->nodes);
	return tv_sim_schedule(run->sim, at_ns, node, fn, arg);
}

/* Asked again this often (virtual ns) while the gate holds it back. */
#define TB_GATE_RETRY_NS 1000

static void gated_cb(void *arg)
{
	struct tb_gated_op *g = arg;
	struct tv_tb_run *r = g->run;
	uint64_t now = tv_sim_now_ns(r->sim);

	if (!r->opts.op_gate(r->opts.op_gate_ctx, g->node, g->at_ns,
			     now - g->at_ns) &&
	    !tv_sim_schedule(r->sim, now + TB_GATE_RETRY_NS, g->node,
			     gated_cb, g))
		return;
	g->fn(g->arg);
}

int tv_tb_run_schedule_op(struct tv_tb_run *run, uint64_t at_ns,
			  uint32_t node, void (*fn)(void *arg), void *arg)
{
	struct tb_gated_op *g;

	if (!run->opts.op_gate)
		return tv_tb_run_schedule(run, at_ns, node, fn, arg);
	assert(node < run->sc->nodes);
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	*g = (struct tb_gated_op){ .next = run->gated, .run = run,
		.node = node, .at_ns = at_ns, .fn = fn, .arg = arg };
	run->gated = g;
	return tv_sim_schedule(run->sim, at_ns, node, gated_cb, g);
}

static void progress_cb(void *arg, uint32_t node)
{
	struct tb_node *ns = arg;
	struct tv_tb_run *r = ns->run;
	uint32_t prev = r->actor;

	assert(ns->id == node);
	r->actor = node;
	r->ops->progress(r, r->wl, node);
	r->actor = prev;
}

/*
 * One stream in execution order: the generic checks, the workload's, the
 * caller's invariants, then the recorder.
 */
static void sim_observe(void *arg, const struct tv_sim_event *ev)
{
	struct tv_tb_run *r = arg;

	tb_check_sim_event(r, ev);
	if (r->ops->sim_event)
		r->ops->sim_event(r, r->wl, ev);
	for (size_t i = 0; i < r->opts.ninvariants; i++)
		if (r->opts.invariants[i].sim_event)
			r->opts.invariants[i].sim_event(
				r->opts.invariants[i].ctx, r, ev);
	if (r->rec)
		tb_rec_sim_event(r->rec, ev);
}

static int create_sim(struct tv_tb_run *r)
{
	const struct tv_tb_scenario *sc = r->sc;
	struct tv_sim_config cfg;
	int rc;

	tv_sim_config_default(&cfg);
	cfg.seed = r->opts.seed;
	cfg.num_nodes = sc->nodes;
	cfg.link = sc->link;
	cfg.jitter_ns_max = sc->jitter_ns_max;
	cfg.placement = sc->placement;
	cfg.profile = sc->profile;
	cfg.qp_op_ns = sc->qp_op_ns;
	cfg.post_ns = sc->post_ns;
	cfg.max_qp_rd_atom = (uint32_t)sc->max_qp_rd_atom;
	cfg.max_qp_init_rd_atom = (uint32_t)sc->max_qp_rd_atom;
	cfg.no_atomics = sc->no_atomics;
	rc = tv_sim_create(&cfg, &r->sim);
	if (rc) {
		tv_tb_fail(r, TV_TB_FK_RUNNER, "tv_sim_create: %s",
			   strerror(-rc));
		return rc;
	}
	for (size_t i = 0; i < sc->nlinks; i++) {
		rc = tv_sim_set_link(r->sim, sc->links[i].from,
				     sc->links[i].to, &sc->links[i].link);
		if (rc) {
			tv_tb_fail(r, TV_TB_FK_RUNNER,
				   "tv_sim_set_link %u->%u: %s",
				   sc->links[i].from, sc->links[i].to,
				   strerror(-rc));
			return rc;
		}
	}
	return 0;
}

static int setup(struct tv_tb_run *r)
{
	const struct tv_tb_scenario *sc = r->sc;
	int rc;

	r->nodes = calloc(sc->nodes, sizeof(*r->nodes));
	if (!r->nodes)
		return -ENOMEM;
	for (uint32_t n = 0; n < sc->nodes; n++) {
		r->nodes[n].run = r;
		r->nodes[n].id = n;
	}
	rc = create_sim(r);
	if (rc)
		return rc;
	/* Under faults, error completions and channel errors are the point. */
	r->chk.allow_errors = sc->allow_error_completions || r->faulty;
	if (r->rec)
		r->rec->sim = r->sim;
	tv_sim_set_observer(r->sim, sim_observe, r);
	rc = tb_faults_setup(r);
	if (!rc)
		rc = r->ops->setup(r, &r->wl);
	for (uint32_t n = 0; !rc && n < sc->nodes; n++)
		tv_sim_set_progress(r->sim, n, progress_cb, &r->nodes[n]);
	return rc;
}

/* ---- the run ---------------------------------------------------------------- */

static void run_world(struct tv_tb_run *r)
{
	uint64_t t0 = tb_wall_ns();
	int rc = tv_sim_run(r->sim, r->sc->deadline_ns, r->sc->max_events);
	struct tv_sim_stats st;

	r->res.wall_ns = tb_wall_ns() - t0;
	tv_sim_stats(r->sim, &st);
	r->res.sim_events = st.events;
	r->res.virtual_ns = tv_sim_now_ns(r->sim);
	r->res.event_hash = tv_sim_event_hash(r->sim);
	if (rc == -ETIMEDOUT)
		tv_tb_fail(r, TV_TB_FK_HANG,
			   "not quiescent at the virtual deadline of %" PRIu64 " ns (events still queued)",
			   r->sc->deadline_ns);
	else if (rc == -EAGAIN)
		tv_tb_fail(r, TV_TB_FK_HANG,
			   "not quiescent after max_events = %" PRIu64 " events",
			   r->sc->max_events);
	else if (rc)
		tv_tb_fail(r, TV_TB_FK_RUNNER, "tv_sim_run: %s", strerror(-rc));
}

static void check_all(struct tv_tb_run *r)
{
	if (r->ops->check)
		r->ops->check(r, r->wl);
	tb_check_faults(r);
	if (r->ops->check_end)
		r->ops->check_end(r, r->wl);
	/* After the workload counted what it caught (check_end). */
	tb_check_corruption(r);
	for (size_t i = 0; i < r->opts.ninvariants; i++)
		if (r->opts.invariants[i].at_end)
			r->opts.invariants[i].at_end(r->opts.invariants[i].ctx,
						     r);
}

static void destroy_world(struct tv_tb_run *r)
{
	int rc;

	if (r->wl && r->ops->teardown)
		r->ops->teardown(r, r->wl);
	/* The wrappers go after the engines that used them. */
	tb_faults_free(r);
	if (!r->sim)
		return;
	/* Teardown events are recorded too; then the clock goes away. */
	rc = tv_sim_destroy(r->sim);
	r->sim = NULL;
	if (r->rec)
		r->rec->sim = NULL;
	if (rc > 0)
		tv_tb_fail(r, TV_TB_FK_LEAK,
			   "tv_sim_destroy: %d verbs objects leaked", rc);
	else if (rc < 0)
		tv_tb_fail(r, TV_TB_FK_RUNNER, "tv_sim_destroy: %s",
			   strerror(-rc));
}

static void teardown(struct tv_tb_run *r)
{
	r->tearing_down = true;
	/* Faults belong to the run; teardown must be clean. */
	tb_faults_stop(r);
	destroy_world(r);
	free(r->nodes);
	r->nodes = NULL;
}

void tv_tb_run_free(struct tv_tb_run *run)
{
	if (!run)
		return;
	if (run->wl && run->ops->state_free)
		run->ops->state_free(run->wl);
	while (run->gated) {
		struct tb_gated_op *g = run->gated;

		run->gated = g->next;
		free(g);
	}
	tb_failures_free(&run->fails);
	free(run);
}

static int check_breakage(const struct tv_tb_run_opts *opts,
			  const struct tv_tb_workload_ops *ops)
{
	if (!opts->breakage)
		return 0;
	for (const char *const *b = ops->breakages; b && *b; b++)
		if (!strcmp(*b, opts->breakage))
			return 0;
	return -EINVAL;
}

int tb_run(const struct tv_tb_scenario *sc, const struct tv_tb_run_opts *opts,
	   struct tb_rec *rec, struct tv_tb_run **run_p)
{
	struct tv_tb_run *r;
	int rc = check_breakage(opts, sc->ops);

	if (rc)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->sc = sc;
	r->ops = sc->ops;
	r->opts = *opts;
	r->rec = rec;
	r->faulty = tv_tb_scenario_has_faults(sc);
	r->actor = TV_TB_NO_NODE;
	r->res.seed = opts->seed;
	r->res.ops = sc->nops;
	if (rec)
		rec->wl_src = sc->ops->event_src;
	rc = setup(r);
	if (rc == -ENOMEM)
		goto nomem;
	if (!rc)
		rc = tb_faults_start(r);
	if (!rc) {
		run_world(r);
		check_all(r);
	} else if (!r->fails.count) {
		/* A run that never ran must not pass: say which part refused. */
		tv_tb_fail(r, TV_TB_FK_RUNNER, "%s: the run's set-up failed: %s",
			   sc->ops->name, strerror(-rc));
	}
	teardown(r);
	r->res.failures = r->fails.count;
	*run_p = r;
	return 0;
nomem:
	teardown(r);
	tv_tb_run_free(r);
	return rc;
}

int tv_tb_run(const struct tv_tb_scenario *sc,
	      const struct tv_tb_run_opts *opts, struct tv_tb_run **run_p)
{
	return tb_run(sc, opts, opts->trace ? tb_trace_rec(opts->trace) : NULL,
		      run_p);
}

/* ---- swarm and shrink: a run from JSON, its outcome kept --------------------- */

static int count_line(void *ctx, json_t *ev)
{
	(void)ctx;
	(void)ev;
	return 0;
}

int tb_run_json(json_t *root, uint64_t seed, const char *breakage,
		bool count_events, struct tb_outcome *out_p)
{
	struct tv_tb_run_opts opts = { .seed = seed, .breakage = breakage };
	const struct tv_tb_failures *f;
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run;
	char err[TV_TB_ERR_MAX];
	struct tb_rec rec;
	int rc;

	memset(out_p, 0, sizeof(*out_p));
	rc = tv_tb_scenario_from_json(root, "swarm", &sc, err);
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		out_p->invalid = true;
		snprintf(out_p->first_msg, sizeof(out_p->first_msg),
			 "invalid scenario: %.480s", err);
		return 0;
	}
	/* The very encoder traces use: the count is a trace's. */
	tb_rec_init(&rec, count_line, NULL);
	rc = tb_run(sc, &opts, count_events ? &rec : NULL, &run);
	out_p->trace_events = rec.count;
	tb_rec_fini(&rec);
	if (!rc) {
		f = tv_tb_run_failures(run);
		out_p->res = run->res;
		out_p->failures = f->count;
		out_p->kinds = f->kinds;
		out_p->first = f->first;
		out_p->ops = sc->nops;
		if (f->count)
			snprintf(out_p->first_msg, sizeof(out_p->first_msg),
				 "%s", f->msgs[0] ? f->msgs[0] : "?");
		tv_tb_run_free(run);
	} else if (rc == -EINVAL) {
		out_p->invalid = true;
		snprintf(out_p->first_msg, sizeof(out_p->first_msg),
			 "breakage '%s' unknown to workload %s",
			 breakage ? breakage : "", sc->ops->name);
		rc = 0;
	}
	tv_tb_scenario_free(sc);
	return rc;
}
