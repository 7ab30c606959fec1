/*
 * Quarantine: registered buffers a peer could still write into are not
 * reused at once.
 *
 * A buffer advertised for a request stays writable with its rkey after the
 * request is over.  A peer that writes an index twice (a sender bug: the
 * vf/write/dup fault) would land the second copy in whatever the pool had
 * put there by then: another tensor.  RC delivers in order, so a duplicate
 * can only come right after its original, before anything the peer posted
 * later: once the channel has handled one more receive completion, every
 * such copy has landed.  A freed buffer that was advertised therefore goes
 * back to the pool only after the channel's next receive completion, or
 * when its QP is gone (reset, teardown).  Zero copies are kept; no extra
 * work requests.  (Per-request memory windows would also stop arbitrarily
 * late writes; this stops the ones RC ordering allows.)
 *
 * Putting a buffer in quarantine never allocates, so it cannot fail: a
 * tensor's own struct is its node, and a staging buffer's node is
 * allocated together with the buffer.
 */
#include <assert.h>

#include "engine_int.h"

void tv__quarantine_put(struct tv_channel *ch, struct tv_qbuf *q)
{
	q->rx_seq = ch->rx_seq;
	tv_list_add_tail(&ch->quarantine, &q->link);
	ch->engine->stats.quarantined_buffers++;
}

void tv__quarantine_release(struct tv_channel *ch, bool all)
{
	struct tv_engine *e = ch->engine;
	struct tv_qbuf *q;

	while (!tv_list_empty(&ch->quarantine)) {
		q = TV_CONTAINER_OF(ch->quarantine.next, struct tv_qbuf, link);
		/* In freeing order, so in rx_seq order: stop at the first young one. */
		if (!all && q->rx_seq >= ch->rx_seq)
			break;
		tv_list_del(&q->link);
		tv_pool_free(e->pool, &q->buf);
		/* The node is the tensor's struct, or a node of its own. */
		if (q->owner)
			tv__fl_free(&e->free_tensors, q->owner);
		else
			free(q);
	}
}

void tv__quarantine_arm(struct tv_channel *ch, struct tv_tensor *t)
{
	assert(t->mem == TV_MEM_POOL);
	t->q_armed = true;
	t->q_peer = ch->peer_id;
	t->q_gen = ch->gen;
	t->q_rx_seq = ch->rx_seq;
}

bool tv__quarantine_tensor(struct tv_engine *e, struct tv_tensor *t)
{
	struct tv_channel *ch = t->q_peer < e->nchannels ?
					e->channels[t->q_peer] : NULL;

	/* Same connection and nothing received since: it may still come. */
	if (!ch || ch->gen != t->q_gen || ch->rx_seq != t->q_rx_seq) {
		tv_pool_free(e->pool, &t->buf);
		return false;
	}
	t->qb.buf = t->buf;
	t->qb.owner = t;
	tv__quarantine_put(ch, &t->qb);
	return true;
}
