/*
 * What the node/crash fault (docs/faults.md) does to the port workload.
 * The testbed decides when a node crashes and when it comes back; here a
 * crash ends the node's producers (their tasks are cancelled), and its
 * engine dies with everything in it: channels, semaphores, the proxy and
 * its FIFO with the triggers not yet taken, the connections with their
 * work in flight, the registrations.  Its peers find out as real ones
 * do: their writes and signals towards QPs that are gone exhaust the
 * transport retries (RETRY_EXC, the flush names it), their waits for its
 * signals reach their deadline.  MSCCL++ has no re-join, so a restart
 * brings back a node with a fresh context, memory and proxy and no
 * connection: the programs it was part of are over, never resumed.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "pt.h"

static void cancel_tasks(struct pt_runner *r, uint32_t node)
{
	char why[64];

	snprintf(why, sizeof(why), "node %u crashed", node);
	for (size_t i = 0; i < r->sc->ntasks; i++)
		if (r->tasks[i].t && r->tasks[i].t->node == node)
			pt_task_cancel(&r->tasks[i], why);
}

/* Every link end on the node: channel, semaphore, then (after the proxy
 * that names them is gone) the connection, aborted with what it holds. */
static void destroy_links(struct pt_runner *r, struct pt_node *n)
{
	for (size_t i = 0; i < r->sc->npairs; i++)
		for (int e = 0; e < 2; e++)
			if (r->links[i].node[e] == n->id)
				pt_link_end_teardown(r, &r->links[i], e);
	if (tv_port_proxy_destroy(n->proxy))
		tv_tb_fail(r->run, TV_TB_FK_RUNNER,
			   "node %u crash: its proxy still has channels", n->id);
	n->proxy = NULL;
	for (size_t i = 0; i < r->sc->npairs; i++)
		for (int e = 0; e < 2; e++) {
			struct pt_link *l = &r->links[i];

			if (l->node[e] != n->id || !l->conn[e])
				continue;
			tv_port_conn_abort(l->conn[e], "its node crashed");
			if (tv_port_conn_destroy(l->conn[e]))
				tv_tb_fail(r->run, TV_TB_FK_RUNNER,
					   "node %u crash: an aborted connection "
					   "to node %u stays", n->id, l->node[!e]);
			else
				l->conn[e] = NULL;
		}
}

/* The checker's books of the FIFO that died: the new one starts at 0. */
static void forget_fifo(struct pt_runner *r, struct pt_node *n)
{
	for (uint32_t i = 0; n->pending && i < r->sc->fifo_size; i++)
		n->pending[i].live = false;
	n->npushed = n->handled = n->stored = 0;
	n->tail_to_publish = 0;
	memset(n->has_remote, 0, sizeof(n->has_remote));
}

void pt_node_crash(struct tv_tb_run *run, void *st, uint32_t node)
{
	struct pt_runner *r = st;
	struct pt_node *n = &r->nodes[node];

	assert(node < r->sc->nodes);
	cancel_tasks(r, node);
	n->crashed = true;
	if (!n->ctx)
		return; /* it never came up (or came back) */
	destroy_links(r, n);
	pt_node_teardown(r, n);
	forget_fifo(r, n);
}

int pt_node_restart(struct tv_tb_run *run, void *st, uint32_t node)
{
	struct pt_runner *r = st;
	struct pt_node *n = &r->nodes[node];
	int rc;

	(void)run;
	assert(!n->ctx && !n->proxy);
	rc = pt_node_setup(r, n);
	if (rc) {
		/* What it made before the failure goes now (nothing leaks). */
		tv_port_proxy_destroy(n->proxy);
		n->proxy = NULL;
		pt_node_teardown(r, n);
	}
	return rc;
}
