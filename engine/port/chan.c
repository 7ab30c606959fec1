/*
 * Port channels: what producers call.  Each call packs one trigger and
 * pushes it; the proxy does the verbs work.  A flush is a SYNC trigger
 * whose completion the producer polls (its connection's flush_done_pos);
 * a wait polls the channel's semaphore.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "port_int.h"

#define SPINS_BEFORE_YIELD 1024

int tv_port_chan_create(struct tv_port_proxy *proxy, uint32_t sem_id,
			uint32_t dst_id, uint32_t src_id,
			struct tv_port_chan **chan_p)
{
	struct tv_port_chan *ch;

	if (!proxy || !chan_p || sem_id >= proxy->nr_sems ||
	    dst_id >= proxy->nr_mems || src_id >= proxy->nr_mems ||
	    proxy->mems[dst_id].local || !proxy->mems[src_id].local)
		return -EINVAL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->proxy = proxy;
	ch->sem = proxy->sems[sem_id];
	ch->sem_id = sem_id;
	ch->dst_id = dst_id;
	ch->src_id = src_id;
	proxy->nr_chans++;
	*chan_p = ch;
	return 0;
}

void tv_port_chan_destroy(struct tv_port_chan *chan)
{
	if (!chan)
		return;
	chan->proxy->nr_chans--;
	free(chan);
}

struct tv_port_sem *tv_port_chan_sem(const struct tv_port_chan *chan)
{
	return chan->sem;
}

static int push(struct tv_port_chan *ch, uint32_t type, uint64_t dst_off,
		uint64_t src_off, uint64_t size_bytes, uint64_t *pos_p)
{
	struct tv_port_trigger t;
	int ret;

	ret = tv_port_trigger_pack(type, ch->dst_id, dst_off, ch->src_id,
				   src_off, size_bytes, ch->sem_id, &t);
	if (ret)
		return ret;
	return tv_port_fifo_try_push(ch->proxy->fifo, &t, pos_p);
}

int tv_port_chan_put(struct tv_port_chan *chan, uint64_t dst_off,
		     uint64_t src_off, uint64_t size_bytes, uint64_t *pos_p)
{
	return push(chan, TV_PORT_TRIGGER_DATA, dst_off, src_off, size_bytes,
		    pos_p);
}

int tv_port_chan_signal(struct tv_port_chan *chan, uint64_t *pos_p)
{
	/* Era C pushes no dummy byte: an all-zero fst is legal (#864). */
	return push(chan, TV_PORT_TRIGGER_FLAG, 0, 0, 0, pos_p);
}

int tv_port_chan_put_with_signal(struct tv_port_chan *chan, uint64_t dst_off,
				 uint64_t src_off, uint64_t size_bytes,
				 uint64_t *pos_p)
{
	return push(chan, TV_PORT_TRIGGER_DATA | TV_PORT_TRIGGER_FLAG, dst_off,
		    src_off, size_bytes, pos_p);
}

int tv_port_chan_put_with_signal_and_flush(struct tv_port_chan *chan,
					   uint64_t dst_off, uint64_t src_off,
					   uint64_t size_bytes,
					   uint64_t *pos_p)
{
	return push(chan, TV_PORT_TRIGGER_DATA | TV_PORT_TRIGGER_FLAG |
				  TV_PORT_TRIGGER_SYNC,
		    dst_off, src_off, size_bytes, pos_p);
}

int tv_port_chan_flush(struct tv_port_chan *chan, uint64_t *pos_p)
{
	return push(chan, TV_PORT_TRIGGER_SYNC, 0, 0, 0, pos_p);
}

int tv_port_chan_flush_done(struct tv_port_chan *chan, uint64_t pos)
{
	struct tv_port_conn *conn = chan->sem->conn;

	/* Acquire: pairs with the proxy's release in complete_flushes. */
	if (atomic_load_explicit(&conn->flush_done_pos,
				 memory_order_acquire) > pos)
		return 0;
	if (tv_port_conn_failed(conn))
		return -EIO;
	/* A trigger the proxy could not use never completes: say so. */
	if (atomic_load_explicit(&chan->proxy->bad, memory_order_acquire))
		return -EPROTO;
	return -EAGAIN;
}

bool tv_port_chan_poll(struct tv_port_chan *chan)
{
	return tv_port_sem_poll(chan->sem);
}

int tv_port_chan_wait(struct tv_port_chan *chan, uint64_t deadline_ns)
{
	return tv_port_sem_wait(chan->sem, deadline_ns, false);
}

int tv_port_chan_flush_wait(struct tv_port_chan *chan, uint64_t pos,
			    uint64_t deadline_ns)
{
	struct tv_port_ctx *ctx = chan->proxy->ctx;
	unsigned spins = 0;
	int ret;

	while ((ret = tv_port_chan_flush_done(chan, pos)) == -EAGAIN) {
		if (deadline_ns != UINT64_MAX &&
		    port_now_ns(ctx) >= deadline_ns)
			return -ETIMEDOUT;
		if (++spins % SPINS_BEFORE_YIELD == 0)
			sched_yield();
	}
	return ret;
}
