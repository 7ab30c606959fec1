/*
 * A port scenario on the simulator: per node a context, one data buffer
 * and one token page registered once, a proxy; per program and pair of
 * nodes a connection, a semaphore at each end and a channel at each end.
 * The proxy runs whenever its node may have work (a completion, a
 * trigger made visible, a timer), as a busy-polling proxy thread reacts
 * at once; producers' FIFO writes and the proxy's tail reach the other
 * side after a seeded lag ("port": {"lag_ns"}), as host-pinned memory
 * between a GPU and the proxy's CPU does.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pt.h"

#define PROXY_BUDGET 64
#define PROXY_TURNS 64
#define TOKEN_STRIDE 64 /* one semaphore word per cache line */

/* ---- the proxy, as a thread that reacts at once -------------------------- */

static void proxy_turn(struct pt_node *n)
{
	uint64_t now, wake;
	int did = 0;

	if (!n->up || !n->proxy)
		return;
	for (int i = 0; i < PROXY_TURNS; i++) {
		did = tv_port_proxy_progress(n->proxy, PROXY_BUDGET);
		if (did <= 0)
			break;
	}
	if (did > 0)
		pt_proxy_kick(n); /* more to do: after the others' turns */
	/*
	 * A stall or a held post ends at a time: be woken then.  Every turn
	 * asks again: a device keeps one deadline, the earliest, and wakes
	 * us there to ask for the later ones.
	 */
	wake = tv_port_proxy_wake_ns(n->proxy);
	now = tv_sim_now_ns(tv_tb_run_sim(n->r->run));
	if (wake > now)
		tv_vf_wake_at(n->dev, wake);
}

static void proxy_cb(void *arg)
{
	struct pt_node *n = arg;
	uint32_t prev = tv_tb_run_enter(n->r->run, n->id);

	n->proxy_due = false;
	proxy_turn(n);
	tv_tb_run_leave(n->r->run, prev);
}

void pt_proxy_kick(struct pt_node *n)
{
	struct tv_tb_run *run = n->r->run;
	int rc;

	if (n->proxy_due || !n->up)
		return;
	rc = tv_tb_run_schedule(run, tv_tb_run_now_ns(run), n->id, proxy_cb,
				n);
	if (rc)
		tv_tb_fail(run, TV_TB_FK_RUNNER, "scheduling node %u's proxy: %s",
			   n->id, strerror(-rc));
	else
		n->proxy_due = true;
}

void pt_progress(struct tv_tb_run *run, void *st, uint32_t node)
{
	struct pt_runner *r = st;

	proxy_turn(&r->nodes[node]);
}

/* ---- the FIFO's visibility lag ------------------------------------------------ */

static uint64_t lag(struct pt_runner *r)
{
	const struct pt_scenario *sc = r->sc;

	if (!sc->lag_max_ns)
		return 0;
	return sc->lag_min_ns + tv_prng_below(&r->lag_prng, sc->lag_max_ns -
						sc->lag_min_ns + 1);
}

static void slot_cb(void *arg)
{
	struct pt_pending_slot *ps = arg;
	struct pt_node *n = ps->n;
	uint32_t prev = tv_tb_run_enter(n->r->run, n->id);

	/* Not live: a crash took the FIFO, and the store with it (crash.c). */
	if (ps->live && n->proxy) {
		tv_port_fifo_apply_slot(tv_port_proxy_fifo(n->proxy), ps->pos,
					&ps->t);
		pt_proxy_kick(n);
	}
	ps->live = false;
	tv_tb_run_leave(n->r->run, prev);
}

static void vis_slot(void *ctx, struct tv_port_fifo *f, uint64_t pos,
		     const struct tv_port_trigger *t)
{
	struct pt_node *n = ctx;
	struct pt_runner *r = n->r;
	uint64_t d = lag(r);
	struct pt_pending_slot *ps;
	int rc;

	if (!d) {
		tv_port_fifo_apply_slot(f, pos, t);
		pt_proxy_kick(n);
		return;
	}
	/* At most fifo_size positions are out and not yet taken. */
	ps = &n->pending[pos % r->sc->fifo_size];
	assert(!ps->live);
	*ps = (struct pt_pending_slot){ n, pos, *t, true };
	r->deferred_stores++;
	rc = tv_tb_run_schedule(r->run, tv_tb_run_now_ns(r->run) + d, n->id,
				slot_cb, ps);
	if (rc) {
		ps->live = false;
		tv_port_fifo_apply_slot(f, pos, t);
		tv_tb_fail(r->run, TV_TB_FK_RUNNER, "scheduling a FIFO store: %s",
			   strerror(-rc));
	}
}

static void tail_cb(void *arg)
{
	struct pt_node *n = arg;

	n->tail_due = false;
	if (n->proxy && !n->crashed)
		tv_port_fifo_apply_tail(tv_port_proxy_fifo(n->proxy),
					n->tail_to_publish);
}

static void vis_tail(void *ctx, struct tv_port_fifo *f, uint64_t tail)
{
	struct pt_node *n = ctx;
	uint64_t d = lag(n->r);

	if (!d && !n->tail_due) {
		tv_port_fifo_apply_tail(f, tail);
		return;
	}
	/* One publication in flight carries the latest tail. */
	n->tail_to_publish = tail;
	if (n->tail_due)
		return;
	if (!tv_tb_run_schedule(n->r->run, tv_tb_run_now_ns(n->r->run) + d,
				n->id, tail_cb, n))
		n->tail_due = true;
	else
		tv_port_fifo_apply_tail(f, tail);
}

static const struct tv_port_fifo_vis lag_vis = { vis_slot, vis_tail };

/* ---- set-up ------------------------------------------------------------------- */

static void node_config(struct pt_runner *r, uint32_t id,
			struct tv_port_config *cfg)
{
	const struct pt_scenario *sc = r->sc;

	pt_engine_config(sc, id, cfg);
	cfg->test_breakage = r->breakage;
	cfg->observe = pt_observe;
	cfg->observe_ctx = r;
	/* 16.8 ms ACK timeout, 3 retries: a dead peer shows in ~70 ms,
	 * before the operations' 100 ms deadlines. */
	cfg->qp_timeout = 12;
	cfg->qp_retry_cnt = 3;
}

static int node_memory(struct pt_node *n, const struct pt_scenario *sc)
{
	int rc;

	n->data_bytes = (sc->node_bytes[n->id] + 4095) & ~4095ull;
	if (!n->data_bytes)
		n->data_bytes = 4096;
	n->token_bytes = ((uint64_t)sc->node_sems[n->id] * TOKEN_STRIDE + 4095) &
			 ~4095ull;
	if (!n->token_bytes)
		n->token_bytes = 4096;
	/* A restarted node (node/crash) gets its buffers back, zeroed, as a
	 * new process's memory would be. */
	if (!n->data)
		n->data = aligned_alloc(4096, n->data_bytes);
	if (!n->tokens)
		n->tokens = aligned_alloc(4096, n->token_bytes);
	if (!n->pending)
		n->pending = calloc(sc->fifo_size, sizeof(*n->pending));
	if (!n->data || !n->tokens || !n->pending)
		return -ENOMEM;
	memset(n->data, 0, n->data_bytes);
	memset(n->tokens, 0, n->token_bytes);
	rc = tv_port_mem_register(n->ctx, n->data, n->data_bytes, &n->mdata);
	if (!rc)
		rc = tv_port_mem_register(n->ctx, n->tokens, n->token_bytes,
					  &n->mtok);
	return rc;
}

int pt_node_setup(struct pt_runner *r, struct pt_node *n)
{
	struct tv_port_config cfg;
	int rc;

	node_config(r, n->id, &cfg);
	rc = tv_tb_run_device(r->run, n->id, &n->dev);
	if (!rc)
		rc = tv_port_ctx_create(n->dev, &cfg, &n->ctx);
	if (!rc)
		rc = node_memory(n, r->sc);
	if (!rc)
		rc = tv_port_proxy_create(n->ctx, r->sc->lag_max_ns ? &lag_vis :
						  NULL, n, &n->proxy);
	if (!rc)
		rc = tv_port_proxy_add_local(n->proxy, n->mdata, &n->local_id);
	if (!rc)
		n->up = true;
	return rc;
}

/* The proxy's id for the peer's data buffer (one per peer). */
static int remote_id(struct pt_runner *r, struct pt_node *n, uint32_t peer,
		     uint32_t *id_p)
{
	struct tv_port_mem_handle h;
	int rc;

	if (!n->has_remote[peer]) {
		tv_port_mem_handle(r->nodes[peer].mdata, &h);
		rc = tv_port_proxy_add_remote(n->proxy, &h,
					      &n->remote_id[peer]);
		if (rc)
			return rc;
		n->has_remote[peer] = true;
	}
	*id_p = n->remote_id[peer];
	return 0;
}

static int link_ends(struct pt_runner *r, struct pt_link *l,
		     uint32_t *tok_next)
{
	struct tv_vf_qp_endpoint ep[2];
	int rc = 0;

	for (int e = 0; !rc && e < 2; e++) {
		struct pt_node *n = &r->nodes[l->node[e]];

		rc = tv_port_conn_create(n->ctx, l->node[!e], &l->conn[e]);
		if (!rc)
			rc = tv_port_conn_endpoint(l->conn[e], &ep[e]);
		l->qpn[e] = ep[e].qp_num;
		l->token_off[e] = (uint64_t)tok_next[n->id]++ * TOKEN_STRIDE;
		if (!rc)
			rc = tv_port_sem_create(l->conn[e], n->mtok,
						l->token_off[e], &l->sem[e]);
	}
	for (int e = 0; !rc && e < 2; e++)
		rc = tv_port_conn_connect(l->conn[e], &ep[!e]);
	return rc;
}

static int link_setup(struct pt_runner *r, struct pt_link *l,
		      uint32_t *tok_next)
{
	struct tv_port_mem_handle h;
	uint32_t dst;
	int rc = link_ends(r, l, tok_next);

	for (int e = 0; !rc && e < 2; e++) {
		struct pt_node *n = &r->nodes[l->node[e]];
		struct pt_node *peer = &r->nodes[l->node[!e]];

		tv_port_mem_handle(peer->mtok, &h);
		rc = tv_port_sem_set_remote(l->sem[e], &h, l->token_off[!e]);
		if (!rc)
			rc = tv_port_proxy_add_sem(n->proxy, l->sem[e],
						   &l->sem_id[e]);
		if (!rc)
			rc = remote_id(r, n, peer->id, &dst);
		if (!rc)
			rc = tv_port_chan_create(n->proxy, l->sem_id[e], dst,
						 n->local_id, &l->chan[e]);
		l->dir[e].from = n->id;
		l->dir[e].to = peer->id;
	}
	return rc;
}

/* Writes may land only in what each node registered for its peers. */
static int open_windows(struct pt_runner *r)
{
	int rc = tv_tb_windows_create(r->sc->nodes, &r->win);

	if (rc)
		return rc;
	r->win_ready = true;
	for (size_t i = 0; i < r->sc->npairs; i++) {
		for (int e = 0; e < 2; e++) {
			struct pt_node *n = &r->nodes[r->links[i].node[e]];
			uint32_t peer = r->links[i].node[!e];
			struct tv_tb_window d = {
				.addr = (uintptr_t)n->data,
				.length = n->data_bytes,
				.rkey = n->mdata ? 0 : 0,
			};
			struct tv_port_mem_handle h;

			tv_port_mem_handle(n->mdata, &h);
			d.rkey = h.rkey;
			rc = tv_tb_windows_open(r->win, n->id, peer, 0, &d);
			tv_port_mem_handle(n->mtok, &h);
			d = (struct tv_tb_window){ .addr = h.addr,
						   .length = h.size_bytes,
						   .rkey = h.rkey, .id = 1 };
			if (!rc)
				rc = tv_tb_windows_open(r->win, n->id, peer, 1,
							&d);
			if (rc)
				return rc;
		}
	}
	return 0;
}

struct pt_link *pt_link_of(struct pt_runner *r, uint32_t prog, uint32_t a,
			   uint32_t b, int *end_p)
{
	for (size_t i = 0; i < r->sc->npairs; i++) {
		struct pt_link *l = &r->links[i];

		if (r->sc->pairs[i].prog != prog)
			continue;
		if (l->node[0] == a && l->node[1] == b) {
			*end_p = 0;
			return l;
		}
		if (l->node[1] == a && l->node[0] == b) {
			*end_p = 1;
			return l;
		}
	}
	return NULL;
}

static int runner_alloc(struct pt_runner *r)
{
	const struct pt_scenario *sc = r->sc;

	r->nodes = calloc(sc->nodes, sizeof(*r->nodes));
	r->links = calloc(sc->npairs + 1, sizeof(*r->links));
	r->tasks = calloc(sc->ntasks + 1, sizeof(*r->tasks));
	if (!r->nodes || !r->links || !r->tasks)
		return -ENOMEM;
	for (uint32_t i = 0; i < sc->nodes; i++) {
		r->nodes[i].r = r;
		r->nodes[i].id = i;
	}
	for (size_t i = 0; i < sc->npairs; i++) {
		r->links[i].r = r;
		r->links[i].pair = (uint32_t)i;
		r->links[i].node[0] = sc->pairs[i].a;
		r->links[i].node[1] = sc->pairs[i].b;
	}
	return 0;
}

static uint32_t breakage_bits(const char *name, bool *plain_p)
{
	static const struct {
		const char *name;
		uint32_t bits;
	} map[] = {
		{ "fifo-sentinel", TV_PORT_BREAK_SENTINEL },
		{ "no-sem-reset", TV_PORT_BREAK_NO_SEM_RESET },
		{ "no-flow-control", TV_PORT_BREAK_NO_FLOW_CONTROL },
		{ "blocking-flush", TV_PORT_BREAK_BLOCKING_FLUSH },
		{ "no-wait-timeout", TV_PORT_BREAK_NO_WAIT_TIMEOUT },
	};

	*plain_p = name && !strcmp(name, "ll-last-byte");
	for (size_t i = 0; name && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(name, map[i].name))
			return map[i].bits;
	return 0;
}

static int setup_all(struct pt_runner *r)
{
	uint32_t tok_next[PT_MAX_NODES] = { 0 };
	int rc = 0;

	for (uint32_t i = 0; !rc && i < r->sc->nodes; i++) {
		rc = pt_node_setup(r, &r->nodes[i]);
		if (rc)
			tv_tb_fail(r->run, TV_TB_FK_RUNNER,
				   "node %u's port engine: %s", i,
				   strerror(-rc));
	}
	for (size_t i = 0; !rc && i < r->sc->npairs; i++) {
		rc = link_setup(r, &r->links[i], tok_next);
		if (rc)
			tv_tb_fail(r->run, TV_TB_FK_RUNNER,
				   "program %u's connection %u <-> %u: %s",
				   r->sc->pairs[i].prog, r->sc->pairs[i].a,
				   r->sc->pairs[i].b, strerror(-rc));
	}
	if (!rc)
		rc = open_windows(r);
	return rc;
}

int pt_setup(struct tv_tb_run *run, void **state_p)
{
	const struct tv_tb_scenario *core = tv_tb_run_scenario(run);
	struct pt_runner *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	*state_p = r; /* freed by state_free whatever happens */
	r->run = run;
	r->sc = tv_tb_scenario_wl(core);
	r->seed = tv_tb_run_seed(run);
	r->breakage = breakage_bits(tv_tb_run_breakage(run),
				    &r->plain_packets);
	r->faulty = tv_tb_run_faulty(run);
	tv_prng_fork(tv_sim_prng(tv_tb_run_sim(run)), &r->lag_prng);
	rc = runner_alloc(r);
	if (!rc)
		rc = setup_all(r);
	if (!rc)
		rc = pt_tasks_schedule(r);
	return rc;
}

/* ---- teardown ----------------------------------------------------------------- */

static void fail_leak(struct pt_runner *r, const char *what, uint32_t node,
		      int rc)
{
	if (rc)
		tv_tb_fail(r->run, TV_TB_FK_LEAK, "teardown: %s on node %u: %s",
			   what, node, strerror(-rc));
}

/* An end's channel and semaphore (before its proxy and connection). */
void pt_link_end_teardown(struct pt_runner *r, struct pt_link *l, int e)
{
	tv_port_chan_destroy(l->chan[e]);
	l->chan[e] = NULL;
	/* The semaphore before the connection: it counts its users. */
	if (l->sem[e])
		fail_leak(r, "semaphore", l->node[e],
			  tv_port_sem_destroy(l->sem[e]));
	l->sem[e] = NULL;
}

static void conns_teardown(struct pt_runner *r)
{
	for (size_t i = 0; i < r->sc->npairs; i++) {
		struct pt_link *l = &r->links[i];

		for (int e = 0; e < 2; e++) {
			int rc = tv_port_conn_destroy(l->conn[e]);

			fail_leak(r, "a connection with work in flight",
				  l->node[e], rc);
			if (rc == -EBUSY) {
				/* Reported; now free it as a crash would, so
				 * that a failed run leaks no memory. */
				tv_port_conn_abort(l->conn[e],
						   "teardown with work in flight");
				rc = tv_port_conn_destroy(l->conn[e]);
			}
			if (!rc)
				l->conn[e] = NULL;
		}
	}
}

void pt_node_teardown(struct pt_runner *r, struct pt_node *n)
{
	fail_leak(r, "memory", n->id, tv_port_mem_deregister(n->mdata));
	fail_leak(r, "token memory", n->id, tv_port_mem_deregister(n->mtok));
	n->mdata = n->mtok = NULL;
	fail_leak(r, "the context", n->id, tv_port_ctx_destroy(n->ctx));
	n->ctx = NULL;
	n->up = false;
}

void pt_teardown(struct tv_tb_run *run, void *st)
{
	struct pt_runner *r = st;

	if (!r->nodes)
		return;
	for (size_t i = 0; r->links && i < r->sc->npairs; i++)
		for (int e = 0; e < 2; e++)
			pt_link_end_teardown(r, &r->links[i], e);
	for (uint32_t i = 0; i < r->sc->nodes; i++) {
		struct pt_node *n = &r->nodes[i];

		fail_leak(r, "the proxy", i, tv_port_proxy_destroy(n->proxy));
		n->proxy = NULL;
	}
	if (r->links)
		conns_teardown(r);
	for (uint32_t i = 0; i < r->sc->nodes; i++)
		if (r->nodes[i].ctx)
			pt_node_teardown(r, &r->nodes[i]);
}

void pt_state_free(void *st)
{
	struct pt_runner *r = st;

	for (uint32_t i = 0; r->nodes && i < r->sc->nodes; i++) {
		struct pt_node *n = &r->nodes[i];

		free(n->data);
		free(n->tokens);
		free(n->pending);
		free(n->pushed);
	}
	for (size_t i = 0; r->links && i < r->sc->npairs; i++)
		for (int e = 0; e < 2; e++) {
			free(r->links[i].dir[e].puts);
			free(r->links[i].dir[e].signals);
		}
	for (size_t i = 0; r->tasks && i < r->sc->ntasks; i++)
		free(r->tasks[i].msg);
	if (r->win_ready)
		tv_tb_windows_destroy(r->win);
	free(r->nodes);
	free(r->links);
	free(r->tasks);
	free(r);
}
