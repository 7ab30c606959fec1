/*
 * The node/crash fault (docs/faults.md): a node dies as a process does and
 * comes back after the rule's arg.  The testbed owns the node's life (the
 * point, before each of its operations; the restart in virtual time; the
 * states UP, DOWN and DEAD); the workload owns what dies and what comes
 * back: node_crash destroys the node's state, node_restart makes it anew
 * and connects it to its peers again, node_lost tells the peers of a node
 * whose restart failed that it is gone for good.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <fiu-local.h>

#include "run_int.h"

void tb_node_note(struct tv_tb_run *r, const char *kind, uint32_t node,
		  const char *op, uint64_t step_id, const char *name)
{
	if (r->opts.verbose) {
		printf("[%12" PRIu64 " ns] node   %u %s", tv_sim_now_ns(r->sim),
		       node, kind);
		if (op)
			printf(" %s '%s' step %" PRIu64 " (node down)", op,
			       name, step_id);
		printf("\n");
	}
	if (r->rec)
		tb_rec_node_event(r->rec, kind, node, op, step_id, name);
}

static void restart_cb(void *arg);

static void node_crash(struct tv_tb_run *r, struct tb_node *ns,
		       uint64_t after_ns)
{
	uint64_t now = tv_sim_now_ns(r->sim);
	int rc;

	assert(ns->state == TV_TB_NODE_UP);
	/* An arg past the end of time: the node never comes back. */
	if (after_ns > UINT64_MAX / 2 - now)
		after_ns = UINT64_MAX / 2 - now;
	tb_node_note(r, "CRASH", ns->id, NULL, 0, NULL);
	r->res.crashes++;
	ns->state = TV_TB_NODE_DOWN;
	/* Its operations in progress complete now (cancelled). */
	r->ops->node_crash(r, r->wl, ns->id);
	rc = tv_sim_schedule(r->sim, now + after_ns, ns->id, restart_cb, ns);
	if (rc)
		tv_tb_fail(r, TV_TB_FK_RUNNER,
			   "node %u crash: scheduling its restart: %s", ns->id,
			   strerror(-rc));
}

bool tv_tb_run_gate(struct tv_tb_run *r, uint32_t node, const char *op,
		    uint64_t step_id, const char *name)
{
	struct tb_node *ns = &r->nodes[node];
	int64_t after = 0;
	bool fire = false;

	assert(r->actor == node);
	/*
	 * A node that is down cannot crash: no hit.  Nor can the nodes of a
	 * workload that has no crash and restart.
	 */
	if (ns->state == TV_TB_NODE_UP && r->ops->node_crash &&
	    r->ops->node_restart) {
		fiu_do_on("node/crash", {
			after = TV_FLT_ARG(RUN_CRASH_RESTART_NS);
			fire = true;
		});
		if (fire)
			node_crash(r, ns, after > 0 ? (uint64_t)after :
						      RUN_CRASH_RESTART_NS);
	}
	if (ns->state == TV_TB_NODE_UP)
		return false;
	r->res.skipped_ops++;
	tb_node_note(r, "SKIP", node, op, step_id, name);
	return true;
}

/*
 * Faults stay armed through a restart (a restarting process can fail to
 * allocate too): a restart that fails leaves the node down for good, and
 * is a failure of the run only if no fault fired while it was tried.
 */
static void restart_failed(struct tv_tb_run *r, struct tb_node *ns, int err,
			   uint64_t fires_before)
{
	tb_node_note(r, "RESTART_FAILED", ns->id, NULL, 0, NULL);
	r->res.restart_failures++;
	ns->state = TV_TB_NODE_DEAD;
	if (r->ops->node_lost)
		r->ops->node_lost(r, r->wl, ns->id);
	if (r->fires == fires_before)
		tv_tb_fail(r, TV_TB_FK_RUNNER,
			   "node %u restart at %" PRIu64 " ns: %s (no fault fired)",
			   ns->id, tv_sim_now_ns(r->sim), strerror(-err));
}

static void restart_cb(void *arg)
{
	struct tb_node *ns = arg;
	struct tv_tb_run *r = ns->run;
	uint64_t fires = r->fires;
	uint32_t prev = r->actor;
	int rc;

	assert(ns->state == TV_TB_NODE_DOWN);
	r->actor = ns->id;
	tb_node_note(r, "RESTART", ns->id, NULL, 0, NULL);
	ns->state = TV_TB_NODE_UP;
	rc = r->ops->node_restart(r, r->wl, ns->id);
	if (rc)
		restart_failed(r, ns, rc, fires);
	else
		r->res.restarts++;
	r->actor = prev;
}
