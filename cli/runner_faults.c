/*
 * The runner under faults (docs/faults.md): every node's device wrapped
 * by the injector, the plan armed after set-up, each firing recorded, and
 * failed channels re-established out of band the way a real deployment
 * would: both ends reset, endpoints exchanged again, both connected.
 * Also the late start of nodes (TensorFlow #18630), which is the same
 * out-of-band connect, only later.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "runner_int.h"
#include "trace.h"

static void fault_fired(void *ctx, const char *point, uint64_t hit)
{
	struct runner *r = ctx;
	const struct tv_flt_point_info *pts, *pt = tv_flt_point_find(point);
	size_t n;

	pts = tv_flt_points(&n);
	/* Which hits fired: shrinking pins a rule to exactly those. */
	if (pt && pt - pts < RUN_MAX_POINTS) {
		if (!r->res.point_first_hit[pt - pts])
			r->res.point_first_hit[pt - pts] = hit;
		r->res.point_last_hit[pt - pts] = hit;
	}
	r->fires++;
	if (plan_point_unrecoverable(point))
		r->unrecoverable_fires++;
	if (!strcmp(point, "vf/write/dup"))
		r->chk.dup_fires++;
	if (!strcmp(point, "sim/cq/overflow"))
		r->chk.overflow_fires++;
	if (r->opts->verbose)
		printf("[%12" PRIu64 " ns] fault  %s hit %" PRIu64 " (node %d)\n",
		       tv_sim_now_ns(r->sim), point, hit,
		       r->actor == RUN_NO_NODE ? -1 : (int)r->actor);
	if (r->opts->rec)
		trace_rec_fault_event(r->opts->rec, point, hit, r->actor);
}

/* Called by the engine of node ns->id for its failed channel ch. */
static int reconnect_cb(void *ctx, struct tv_channel *ch)
{
	struct node_slot *ns = ctx;
	struct runner *r = ns->r;
	uint32_t a = ns->id, b = tv_channel_peer(ch);
	struct tv_channel *other;
	int rc;

	assert(b < r->sc->nodes && tv_engine_channel(ns->engine, b) == ch);
	/*
	 * The peer crashed (node/crash): not there yet, ask again later (the
	 * engine backs off; its restart connects us anyway); or its restart
	 * failed: it is gone for good, what waits fails.
	 */
	if (r->nodes[b].state == NODE_DOWN)
		return -EAGAIN;
	if (r->nodes[b].state == NODE_DEAD)
		return -EHOSTDOWN;
	/* Never connected (a late node): there is nothing to re-establish. */
	if (!r->connected[a * r->sc->nodes + b])
		return -ENOTCONN;
	other = tv_engine_channel(r->nodes[b].engine, a);
	rc = tv_channel_reset(ch);
	if (!rc)
		rc = tv_channel_reset(other);
	if (!rc) {
		/* A new connection: what was in flight on the old one is gone. */
		checker_new_epoch(&r->chk, a, b);
		rc = runner_connect_pair(r, a, b);
	}
	if (rc)
		r->reconnect_failures++;
	return rc;
}

void runner_engine_faults(struct runner *r, struct node_slot *ns,
			  struct tv_engine_config *cfg)
{
	const struct scenario *sc = r->sc;
	bool reconnect = sc->has_reconnect ? sc->reconnect : r->faulty;

	/*
	 * Under faults a receive gets a deadline, so "never completed" is a
	 * hang and not a slow peer, and the ACK timeout is far below it, so
	 * a lost message is found and retried long before that deadline.
	 */
	if (sc->has_ack_timeout)
		cfg->ack_timeout_ns = sc->ack_timeout_ns;
	else if (r->faulty)
		cfg->ack_timeout_ns = RUN_FAULT_ACK_TIMEOUT_NS;
	if (sc->has_recv_timeout)
		cfg->recv_timeout_ns = sc->recv_timeout_ns;
	else if (r->faulty)
		cfg->recv_timeout_ns = RUN_FAULT_RECV_TIMEOUT_NS;
	if (sc->has_max_retries)
		cfg->max_retries = sc->max_retries;
	r->max_retries = cfg->max_retries;
	r->ack_timeout_ns = cfg->ack_timeout_ns;
	r->recv_timeout_ns = cfg->recv_timeout_ns;
	if (reconnect) {
		cfg->reconnect = reconnect_cb;
		cfg->reconnect_ctx = ns;
	}
}

int runner_faults_setup(struct runner *r)
{
	char err[PLAN_ERR_MAX];
	int rc;

	if (!r->faulty)
		return 0;
	rc = plan_injector(r->sc->faults, r->opts->seed, &r->flt, err,
			   sizeof(err));
	if (rc) {
		failures_add(r->fails, FK_RUNNER, "fault plan: %s",
			     rc == -EINVAL ? err : strerror(-rc));
		return rc;
	}
	tv_flt_set_observer(r->flt, fault_fired, r);
	return 0;
}

int runner_wrap_device(struct runner *r, uint32_t node,
		       struct tv_vf_device **dev_p)
{
	struct tv_vf_device *inner = tv_sim_device(r->sim, node);
	int rc;

	if (!r->flt) {
		*dev_p = inner;
		return 0;
	}
	/* Wrapped before the engine exists: it sees only the wrapper. */
	rc = tv_flt_wrap(r->flt, inner, &r->nodes[node].dev);
	if (rc)
		return rc;
	*dev_p = r->nodes[node].dev;
	return 0;
}

int runner_faults_start(struct runner *r)
{
	int rc;

	if (!r->flt)
		return 0;
	/* After set-up: faults hit the workload, not the world's making. */
	rc = tv_flt_activate(r->flt);
	if (rc)
		failures_add(r->fails, FK_RUNNER, "tv_flt_activate: %s",
			     strerror(-rc));
	return rc;
}

void runner_faults_stop(struct runner *r)
{
	if (r->flt)
		tv_flt_deactivate(r->flt);
}

void runner_faults_free(struct runner *r)
{
	for (uint32_t n = 0; r->nodes && n < r->sc->nodes; n++) {
		tv_flt_unwrap(r->nodes[n].dev);
		r->nodes[n].dev = NULL;
	}
	tv_flt_destroy(r->flt);
	r->flt = NULL;
}

static uint64_t point_fires(struct runner *r, const char *point)
{
	struct tv_flt_point_stats st = { 0 };

	if (r->flt)
		tv_flt_stats(r->flt, point, &st);
	return st.fires;
}

void runner_check_faults(struct runner *r)
{
	const struct tv_flt_point_info *pts;
	size_t npts;

	pts = tv_flt_points(&npts);
	assert(npts <= RUN_MAX_POINTS);
	for (size_t i = 0; i < npts && i < RUN_MAX_POINTS; i++) {
		r->res.point_fires[i] = point_fires(r, pts[i].name);
		r->res.fault_fires += r->res.point_fires[i];
	}
	for (size_t i = 0; i < r->sc->nfault_expects; i++) {
		const struct sc_fault_expect *fe = &r->sc->fault_expects[i];
		uint64_t n = point_fires(r, fe->point);

		if (n < fe->min || n > fe->max)
			failures_add(r->fails, FK_EXPECT,
				     "expect_faults %s: fired %" PRIu64 " times, expected %" PRIu64 "..%" PRIu64,
				     fe->point, n, fe->min, fe->max);
	}
}

static void late_connect_cb(void *arg)
{
	struct late_pair *lp = arg;
	struct runner *r = lp->r;
	uint32_t prev = r->actor, n = r->sc->nodes;
	int rc;

	/*
	 * A node that is down connects when it restarts; one that restarted
	 * just now, at this very time, did already.
	 */
	if (r->nodes[lp->a].state != NODE_UP ||
	    r->nodes[lp->b].state != NODE_UP ||
	    (r->joined[lp->a * n + lp->b] && r->joined[lp->b * n + lp->a]))
		return;
	r->actor = r->sc->start_ns[lp->a] > r->sc->start_ns[lp->b] ? lp->a :
								      lp->b;
	rc = runner_connect_pair(r, lp->a, lp->b);
	r->actor = prev;
	if (rc)
		failures_add(r->fails, FK_RUNNER,
			     "late channel %u<->%u connect: %s", lp->a, lp->b,
			     strerror(-rc));
}

int runner_schedule_late(struct runner *r)
{
	const uint64_t *start = r->sc->start_ns;

	for (size_t i = 0; i < r->nlate; i++) {
		struct late_pair *lp = &r->late[i];
		uint32_t late = start[lp->a] > start[lp->b] ? lp->a : lp->b;
		int rc;

		rc = tv_sim_schedule(r->sim, start[late], late,
				     late_connect_cb, lp);
		if (rc)
			return rc;
	}
	return 0;
}
