/*
 * Semaphores (MSCCL++'s Host2Host and Host2Device semaphores): an inbound
 * token the peer's signals update (the NIC's fetch-and-add, or the proxy
 * thread applying a write-with-immediate), an expected counter each wait
 * consumes, an outbound counter each signal sends.
 *
 * A signal after writes on the same connection is a fence: RC executes
 * requests in order and a write's data is placed before a later request
 * on the QP executes, so when the token moves the data is there.  The
 * waiter reads the token with acquire: what it then reads of the data is
 * no older than the token.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "port_int.h"

#define SPINS_BEFORE_YIELD 1024

/* Zeroed at creation and at reset (MSCCL++ #795: a recycled token kept
 * its count, and the first wait on it returned before its data). */
static void zero_token(struct tv_port_sem *sem)
{
	if (sem->conn->ctx->cfg.test_breakage & TV_PORT_BREAK_NO_SEM_RESET)
		return;
	atomic_store_explicit(sem->inbound, 0, memory_order_relaxed);
}

int tv_port_sem_create(struct tv_port_conn *conn, struct tv_port_mem *token,
		       uint64_t token_off, struct tv_port_sem **sem_p)
{
	struct tv_port_sem *sem;
	uint8_t *word;

	if (!conn || !token || !sem_p || token->ctx != conn->ctx ||
	    token_off > token->size || token->size - token_off < 8)
		return -EINVAL;
	word = token->addr + token_off;
	if ((uintptr_t)word & 7)
		return -EINVAL; /* the NIC's atomics need 8-byte alignment */
	if (conn->ctx->mode == TV_PORT_SIGNAL_WRITE_IMM && conn->imm_sem)
		return -EBUSY; /* an immediate carries a value, not a name */
	sem = calloc(1, sizeof(*sem));
	if (!sem)
		return -ENOMEM;
	sem->conn = conn;
	sem->token = token;
	sem->token_off = token_off;
	sem->inbound = (_Atomic uint64_t *)(void *)word;
	zero_token(sem);
	if (conn->ctx->mode == TV_PORT_SIGNAL_WRITE_IMM) {
		conn->imm_sem = sem;
		conn->imm_value = 0;
	}
	conn->nr_sems++;
	*sem_p = sem;
	return 0;
}

int tv_port_sem_destroy(struct tv_port_sem *sem)
{
	if (!sem)
		return 0;
	if (sem->conn->imm_sem == sem)
		sem->conn->imm_sem = NULL;
	sem->conn->nr_sems--;
	free(sem);
	return 0;
}

void tv_port_sem_handle(const struct tv_port_sem *sem,
			struct tv_port_mem_handle *h_p, uint64_t *off_p)
{
	tv_port_mem_handle(sem->token, h_p);
	*off_p = sem->token_off;
}

int tv_port_sem_set_remote(struct tv_port_sem *sem,
			   const struct tv_port_mem_handle *h, uint64_t off)
{
	if (!sem || !h || off > h->size_bytes || h->size_bytes - off < 8 ||
	    ((h->addr + off) & 7))
		return -EINVAL;
	sem->remote = *h;
	sem->remote_off = off;
	sem->has_remote = true;
	return 0;
}

void tv_port_sem_reset(struct tv_port_sem *sem)
{
	zero_token(sem);
	atomic_store_explicit(&sem->expected, 0, memory_order_relaxed);
	sem->outbound = 0;
	if (sem->conn->imm_sem == sem)
		sem->conn->imm_value = 0;
}

void port_sem_store_inbound(struct tv_port_sem *sem, uint64_t value)
{
	/* Release: pairs with the waiter's acquire (write-imm mode's token
	 * comes from this thread, after the receive completion that says
	 * the peer's earlier writes are placed). */
	atomic_store_explicit(sem->inbound, value, memory_order_release);
}

static void emit_signal(struct tv_port_sem *sem)
{
	struct tv_port_event ev;

	port_event_init(&ev, TV_PORT_EV_SIGNAL, sem->conn->ctx->cfg.node_id);
	ev.peer = sem->conn->peer;
	ev.qp_num = sem->conn->qp->qp_num;
	ev.addr = sem->remote.addr + sem->remote_off;
	ev.rkey = sem->remote.rkey;
	ev.value = sem->outbound;
	port_emit(sem->conn->ctx, &ev);
}

int tv_port_sem_signal(struct tv_port_sem *sem)
{
	int ret;

	if (!sem->has_remote)
		return -ENOTCONN;
	ret = tv_port_conn_update_and_sync(sem->conn, &sem->remote,
					   sem->remote_off, &sem->outbound,
					   sem->outbound + 1);
	if (!ret)
		emit_signal(sem);
	return ret;
}

int port_sem_put_signal(struct tv_port_sem *sem,
			const struct tv_port_mem_handle *dst, uint64_t dst_off,
			const struct tv_port_mem *src, uint64_t src_off,
			uint64_t size_bytes)
{
	int ret;

	if (!sem->has_remote)
		return -ENOTCONN;
	ret = tv_port_conn_write_and_sync(sem->conn, dst, dst_off, src,
					  src_off, size_bytes, &sem->remote,
					  sem->remote_off, &sem->outbound,
					  sem->outbound + 1);
	if (!ret)
		emit_signal(sem);
	return ret;
}

bool tv_port_sem_poll(struct tv_port_sem *sem)
{
	/* Acquire: the data the signal fenced is visible once this is. */
	uint64_t in = atomic_load_explicit(sem->inbound, memory_order_acquire);
	uint64_t exp = atomic_load_explicit(&sem->expected,
					    memory_order_relaxed);

	if (in <= exp)
		return false;
	atomic_store_explicit(&sem->expected, exp + 1, memory_order_relaxed);
	return true;
}

int tv_port_sem_wait_poll(struct tv_port_sem *sem, uint64_t deadline_ns)
{
	struct tv_port_ctx *ctx = sem->conn->ctx;

	if (tv_port_sem_poll(sem))
		return 0;
	if (tv_port_conn_failed(sem->conn))
		return -EIO;
	/* MSCCL++ #161/#377: a wait with no end hangs on a dead peer. */
	if (ctx->cfg.test_breakage & TV_PORT_BREAK_NO_WAIT_TIMEOUT)
		return -EAGAIN;
	/* No deadline: no clock either (a thread must not read the
	 * simulator's, which another thread drives). */
	if (deadline_ns == UINT64_MAX)
		return -EAGAIN;
	return port_now_ns(ctx) >= deadline_ns ? -ETIMEDOUT : -EAGAIN;
}

int tv_port_sem_wait(struct tv_port_sem *sem, uint64_t deadline_ns,
		     bool progress)
{
	unsigned spins = 0;
	int ret;

	while ((ret = tv_port_sem_wait_poll(sem, deadline_ns)) == -EAGAIN) {
		if (progress)
			tv_port_conn_progress(sem->conn);
		else if (++spins % SPINS_BEFORE_YIELD == 0)
			sched_yield();
	}
	return ret;
}

uint64_t tv_port_sem_inbound(const struct tv_port_sem *sem)
{
	return atomic_load_explicit(sem->inbound, memory_order_acquire);
}

uint64_t tv_port_sem_expected(const struct tv_port_sem *sem)
{
	return atomic_load_explicit(&sem->expected, memory_order_relaxed);
}

uint64_t tv_port_sem_outbound(const struct tv_port_sem *sem)
{
	return sem->outbound;
}

struct tv_port_conn *tv_port_sem_conn(const struct tv_port_sem *sem)
{
	return sem->conn;
}
