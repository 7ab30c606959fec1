/*
 * The processes of a benchmark split across hosts (`bench NAME --node N`,
 * or one rank each under mpirun): barriers and an all-gather of set-up
 * bytes over the step coordinator's TCP star (coord.h), node 0 in the
 * middle on its own address and port.  Benchmarks are not scenarios:
 * no statistics, no faults, no time points; a wait turns the caller's
 * idle hook (a proxy that must keep going) or sleeps on the sockets.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "tb_int.h"

struct tv_tb_peers {
	struct coord co;
	uint64_t timeout_ns;     /* of each wait */
	uint64_t bar_seq;
	void (*idle)(void *arg);
	void *idle_arg;
	char err[COORD_MSG_MAX + 64];
};

int tv_tb_peers_open(uint32_t node, uint32_t nodes,
		     const struct sockaddr_storage *addr0, uint64_t fingerprint,
		     uint64_t timeout_ns, struct tv_tb_peers **peers_p,
		     char *msg, size_t cap)
{
	struct tv_tb_peers *p;
	int ret;

	if (node >= nodes || nodes < 2 || nodes > TV_TB_MAX_NODES) {
		snprintf(msg, cap, "node %u of %u: no such node", node, nodes);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->timeout_ns = timeout_ns;
	ret = coord_init(&p->co, node, nodes, (const struct sockaddr *)addr0,
			 fingerprint, 1, msg, cap);
	if (ret) {
		coord_fini(&p->co);
		free(p);
		return ret;
	}
	*peers_p = p;
	return 0;
}

void tv_tb_peers_close(struct tv_tb_peers *p)
{
	if (!p)
		return;
	coord_fini(&p->co);
	free(p);
}

void tv_tb_peers_set_idle(struct tv_tb_peers *p, void (*idle)(void *arg),
			  void *arg)
{
	p->idle = idle;
	p->idle_arg = arg;
}

/* What we queued (node 0's GO after the last BAR came in) goes now:
 * the caller may spin on RDMA next, without a turn of the star. */
static bool flushed(const struct coord *c)
{
	for (size_t i = 0; i < c->npeers; i++)
		if (c->peers[i].fd >= 0 && c->peers[i].out_len)
			return false;
	return true;
}

/* An ABORT (ours, or node 0 passing one on) reaches the others now,
 * not when this process closes: up to a second. */
static void flush_out(struct tv_tb_peers *p)
{
	uint64_t until = tb_wall_ns() + 1000000000ull;

	while (!flushed(&p->co) && tb_wall_ns() < until) {
		if (coord_poll(&p->co, tb_wall_ns()) < 0)
			break;
		poll(NULL, 0, 1);
	}
}

void tv_tb_peers_abort(struct tv_tb_peers *p, const char *why)
{
	coord_abort(&p->co, "node %u: %s", p->co.node, why);
	flush_out(p);
}

const char *tv_tb_peers_error(const struct tv_tb_peers *p)
{
	return p->err;
}

/* Nothing came: the caller's hook, or a sleep on the sockets (10 ms). */
static void peers_idle(struct tv_tb_peers *p)
{
	struct pollfd pfd[2 * TV_TB_MAX_NODES + 1];
	uint64_t wake = UINT64_MAX, now = tb_wall_ns();
	int n, ms = 10;

	if (p->idle) {
		p->idle(p->idle_arg);
		return;
	}
	n = coord_pollfds(&p->co, pfd, TB_ARRAY_SIZE(pfd), &wake);
	if (wake != UINT64_MAX && wake > now && (wake - now) / 1000000 < 10)
		ms = (int)((wake - now) / 1000000);
	poll(pfd, n > 0 ? (nfds_t)n : 0, ms);
}

static int peers_wait(struct tv_tb_peers *p, bool (*cond)(struct coord *c,
							   uint64_t arg),
		      uint64_t arg, const char *what)
{
	uint64_t deadline = tb_wall_ns() + p->timeout_ns;

	for (;;) {
		int got;

		if (cond(&p->co, arg) && flushed(&p->co))
			return 0;
		if (p->co.aborted) {
			flush_out(p);
			snprintf(p->err, sizeof(p->err), "waiting for %s: %s",
				 what, p->co.abort_msg);
			return -ECANCELED;
		}
		if (tb_wall_ns() > deadline) {
			snprintf(p->err, sizeof(p->err), "timed out waiting "
				 "for %s", what);
			return -ETIMEDOUT;
		}
		got = coord_poll(&p->co, tb_wall_ns());
		if (got < 0) {
			snprintf(p->err, sizeof(p->err), "coordinator: %s",
				 strerror(-got));
			return got;
		}
		if (!got)
			peers_idle(p);
	}
}

static bool cond_barrier(struct coord *c, uint64_t seq)
{
	return coord_barrier_done(c, seq);
}

static bool cond_joined(struct coord *c, uint64_t arg)
{
	(void)arg;
	return c->joined;
}

static bool cond_ag(struct coord *c, uint64_t arg)
{
	(void)arg;
	return coord_ag_done(c);
}

int tv_tb_peers_barrier(struct tv_tb_peers *p, const char *what)
{
	uint64_t seq = ++p->bar_seq;
	int ret = peers_wait(p, cond_joined, 0, "every node to join");

	if (!ret)
		ret = coord_barrier_enter(&p->co, seq);
	return ret ? ret : peers_wait(p, cond_barrier, seq, what);
}

int tv_tb_peers_allgather(struct tv_tb_peers *p, const void *mine, size_t len,
			  uint8_t ***blobs_p, size_t **lens_p)
{
	int ret = peers_wait(p, cond_joined, 0, "every node to join");

	if (!ret)
		ret = coord_ag_start(&p->co, mine, len);
	if (!ret)
		ret = peers_wait(p, cond_ag, 0, "every node's set-up data");
	if (!ret)
		ret = coord_ag_take(&p->co, blobs_p, lens_p);
	return ret;
}

int tv_tb_peers_poll(struct tv_tb_peers *p)
{
	int got = coord_poll(&p->co, tb_wall_ns());

	if (p->co.aborted) {
		snprintf(p->err, sizeof(p->err), "%s", p->co.abort_msg);
		return -ECANCELED;
	}
	return got < 0 ? got : 0;
}
