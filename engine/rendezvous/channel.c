/*
 * Channels: one RC queue pair to one peer, with a tx and an rx message
 * buffer (the original's RdmaMessageBuffer pair).
 *
 * A control message is written from our tx buffer into the peer's rx buffer
 * with RDMA_WRITE_WITH_IMM (imm TV_IMM_MESSAGE).  Only when the tx buffer is
 * idle locally (our write completed) and remotely (the peer ACKed, i.e. it
 * parsed the message out of its rx buffer) may the next one go.  An ACK is
 * a zero-length write-with-imm TV_IMM_ACK with no SGE.  Every receive a
 * write-with-imm consumes is re-posted one for one.
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

static int channel_post_recvs(struct tv_channel *ch, uint32_t n)
{
	struct tv_vf_recv_wr wr = { .wr_id = TV_WRID_RECV, .num_sge = 0 };
	struct tv_vf_recv_wr *bad;
	uint32_t i;
	int ret;

	/* Write-with-imm needs no receive buffer: zero SGEs. */
	for (i = 0; i < n; i++) {
		ret = tv_vf_post_recv(ch->qp, &wr, &bad);
		if (ret)
			return ret;
		ch->rq_posted++;
	}
	return 0;
}

static int channel_alloc_buffers(struct tv_channel *ch)
{
	struct tv_engine *e = ch->engine;
	int ret;

	ch->buf_bytes = (uint32_t)tv_wire_max_bytes();
	if (tv__memalign((void **)&ch->tx_mem, 64, ch->buf_bytes))
		return -ENOMEM;
	if (tv__memalign((void **)&ch->rx_mem, 64, ch->buf_bytes)) {
		ret = -ENOMEM;
		goto err_tx;
	}
	memset(ch->tx_mem, 0, ch->buf_bytes);
	memset(ch->rx_mem, 0, ch->buf_bytes);
	ret = tv_vf_reg_mr(e->pd, ch->tx_mem, ch->buf_bytes,
			   TV_ACCESS_LOCAL_WRITE, &ch->tx_mr);
	if (ret)
		goto err_rx;
	e->stats.mr_registrations++;
	ret = tv_vf_reg_mr(e->pd, ch->rx_mem, ch->buf_bytes,
			   TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE,
			   &ch->rx_mr);
	if (ret)
		goto err_tx_mr;
	e->stats.mr_registrations++;
	return 0;

err_tx_mr:
	tv_vf_dereg_mr(ch->tx_mr);
	ch->tx_mr = NULL;
err_rx:
	free(ch->rx_mem);
	ch->rx_mem = NULL;
err_tx:
	free(ch->tx_mem);
	ch->tx_mem = NULL;
	return ret;
}

static void channel_free_buffers(struct tv_channel *ch)
{
	if (ch->rx_mr)
		tv_vf_dereg_mr(ch->rx_mr);
	if (ch->tx_mr)
		tv_vf_dereg_mr(ch->tx_mr);
	free(ch->rx_mem);
	free(ch->tx_mem);
	ch->rx_mr = ch->tx_mr = NULL;
	ch->rx_mem = ch->tx_mem = NULL;
}

static int channel_create_qp(struct tv_channel *ch)
{
	struct tv_engine *e = ch->engine;
	uint32_t qd = e->cfg.queue_depth;
	struct tv_vf_qp_init_attr init;
	struct tv_vf_qp_attr attr;
	int ret;

	/*
	 * Send queue: at most inflight_max tensor writes, one message and a
	 * few ACKs are outstanding; every WR is signaled so the count is
	 * exact.  One CQ per channel, sized so it can never overflow.
	 */
	ch->sq_depth = qd + 8;
	ret = tv_vf_create_cq(e->dev, ch->sq_depth + qd + 8, &ch->cq);
	if (ret)
		return ret;
	memset(&init, 0, sizeof(init));
	init.send_cq = ch->cq;
	init.recv_cq = ch->cq;
	init.max_send_wr = ch->sq_depth;
	init.max_recv_wr = qd;
	init.max_send_sge = 1;
	init.max_recv_sge = 1;
	init.max_inline_data = e->cfg.max_inline_bytes;
	ret = tv_vf_create_qp(e->pd, &init, &ch->qp);
	if (ret == -EINVAL && init.max_inline_data) {
		/* More inline data than the device has: none, not no QP. */
		init.max_inline_data = 0;
		ret = tv_vf_create_qp(e->pd, &init, &ch->qp);
	}
	if (ret)
		goto err_cq;
	ch->qp->user_ctx = ch;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = TV_QPS_INIT;
	attr.port_num = e->cfg.connect.port_num;
	attr.pkey_index = e->cfg.connect.pkey_index;
	attr.qp_access_flags = TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE |
			       TV_ACCESS_REMOTE_READ;
	ret = tv_vf_modify_qp(ch->qp, &attr,
			      TV_QP_STATE | TV_QP_PORT | TV_QP_PKEY_INDEX |
				      TV_QP_ACCESS_FLAGS);
	if (ret)
		goto err_qp;
	return 0;

err_qp:
	tv_vf_destroy_qp(ch->qp);
	ch->qp = NULL;
err_cq:
	tv_vf_destroy_cq(ch->cq);
	ch->cq = NULL;
	return ret;
}

static int channel_maps_init(struct tv_channel *ch)
{
	int ret;

	ret = tv_hmap_init(&ch->requests, 64);
	if (ret)
		return ret;
	ret = tv_hmap_init(&ch->responses, 64);
	if (ret)
		goto err_requests;
	ret = tv_hmap_init(&ch->meta_cache, 64);
	if (ret)
		goto err_responses;
	return 0;

err_responses:
	tv_hmap_fini(&ch->responses);
err_requests:
	tv_hmap_fini(&ch->requests);
	return ret;
}

static void channel_maps_fini(struct tv_channel *ch)
{
	struct tv_hnode *node;

	while ((node = tv_hmap_any(&ch->meta_cache))) {
		struct tv_meta_entry *me =
			TV_CONTAINER_OF(node, struct tv_meta_entry, hnode);

		tv_hmap_remove(&ch->meta_cache, node);
		free(me->name);
		free(me);
	}
	tv_hmap_fini(&ch->meta_cache);
	tv_hmap_fini(&ch->responses);
	tv_hmap_fini(&ch->requests);
}

static int engine_slot(struct tv_engine *e, uint32_t peer_id)
{
	struct tv_channel **grown;
	uint32_t n;

	if (peer_id >= TV_MAX_CHANNELS)
		return -EINVAL;
	if (peer_id < e->nchannels)
		return e->channels[peer_id] ? -EEXIST : 0;
	n = peer_id + 1;
	grown = tv__realloc(e->channels, n * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	memset(grown + e->nchannels, 0, (n - e->nchannels) * sizeof(*grown));
	e->channels = grown;
	e->nchannels = n;
	return 0;
}

int tv_channel_create(struct tv_engine *e, uint32_t peer_id,
		      struct tv_channel **channel_p)
{
	struct tv_channel *ch;
	int ret;

	if (!e || !channel_p)
		return -EINVAL;
	ret = engine_slot(e, peer_id);
	if (ret)
		return ret;
	ch = tv__calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->engine = e;
	ch->peer_id = peer_id;
	/*
	 * Receives: one per request in flight (its tensor write), one for the
	 * peer's message, one for its ACK, and one in reserve while a
	 * completion is handled before its receive is re-posted.
	 */
	ch->inflight_max = e->cfg.queue_depth - 3;
	tv_list_init(&ch->tx_queue);
	tv_list_init(&ch->credit_wait);
	tv_list_init(&ch->quarantine);
	ret = channel_maps_init(ch);
	if (ret)
		goto err_free;
	ret = channel_alloc_buffers(ch);
	if (ret)
		goto err_maps;
	ret = channel_create_qp(ch);
	if (ret)
		goto err_buffers;
	/* Receives go up before anyone can write to us. */
	ret = channel_post_recvs(ch, e->cfg.queue_depth);
	if (ret)
		goto err_qp;
	e->channels[peer_id] = ch;
	*channel_p = ch;
	return 0;

err_qp:
	tv_vf_destroy_qp(ch->qp);
	tv_vf_destroy_cq(ch->cq);
err_buffers:
	channel_free_buffers(ch);
err_maps:
	channel_maps_fini(ch);
err_free:
	free(ch);
	return ret;
}

int tv_channel_info(struct tv_channel *ch, struct tv_channel_info *info_p)
{
	struct tv_channel_info info;
	int ret;

	if (!ch || !info_p)
		return -EINVAL;
	if (!ch->qp)
		return -ENOTCONN;
	memset(&info, 0, sizeof(info));
	ret = tv_vf_qp_endpoint(ch->qp, &info.ep);
	if (ret)
		return ret;
	info.rx_addr = (uint64_t)(uintptr_t)ch->rx_mem;
	info.rx_rkey = ch->rx_mr->rkey;
	info.rx_bytes = ch->buf_bytes;
	*info_p = info;
	return 0;
}

int tv_channel_connect(struct tv_channel *ch,
		       const struct tv_channel_info *remote)
{
	struct tv_channel_info local;
	int ret;

	if (!ch || !remote || ch->connected)
		return -EINVAL;
	/* The peer's buffer must hold any message we may send. */
	if (remote->rx_bytes < tv_wire_max_bytes() || !remote->rx_addr)
		return -EINVAL;
	ret = tv_channel_info(ch, &local);
	if (ret)
		return ret;
	ret = tv_vf_connect_qp(ch->qp, &ch->engine->cfg.connect, &local.ep,
			       &remote->ep);
	if (ret)
		return ret;
	ch->remote_rx_addr = remote->rx_addr;
	ch->remote_rx_rkey = remote->rx_rkey;
	ch->remote_rx_bytes = remote->rx_bytes;
	ch->connected = true;
	tv__request_grant_credits(ch);
	tv__channel_kick(ch);
	return 0;
}

struct tv_channel *tv_engine_channel(struct tv_engine *e, uint32_t peer_id)
{
	if (!e || peer_id >= e->nchannels)
		return NULL;
	return e->channels[peer_id];
}

/* ---- sending ---------------------------------------------------------- */

static int channel_post(struct tv_channel *ch, struct tv_vf_send_wr *wr)
{
	struct tv_vf_send_wr *bad;
	int ret;

	assert(ch->sq_outstanding < ch->sq_depth);
	assert(wr->num_sge <= 1);
	wr->send_flags |= TV_SEND_SIGNALED;
	/*
	 * Small payloads go inline, as far as the QP took: copied into the
	 * WQE at post time, no DMA read behind it.  The completion stays
	 * signaled and still frees the tx buffer: one rule for every post.
	 */
	if (wr->num_sge && wr->sg_list[0].length <= ch->qp->max_inline_data)
		wr->send_flags |= TV_SEND_INLINE;
	ret = tv_vf_post_send(ch->qp, wr, &bad);
	if (ret)
		return ret;
	ch->sq_outstanding++;
	ch->engine->stats.inline_posts += !!(wr->send_flags & TV_SEND_INLINE);
	return 0;
}

static void channel_ack_sent(struct tv_channel *ch, bool ridden)
{
	struct tv_engine_event ev = { 0 };

	ch->engine->stats.acks_sent++;
	ch->engine->stats.acks_ridden += ridden;
	tv__emit(ch->engine, TV_EV_ACK_SEND, ch->peer_id, &ev);
}

static void channel_send_acks(struct tv_channel *ch)
{
	struct tv_vf_send_wr wr;
	int ret;

	while (ch->acks_owed && ch->sq_outstanding < ch->sq_depth &&
	       !ch->failed) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = TV_WRID_ACK;
		wr.opcode = TV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = TV_IMM_ACK;
		wr.num_sge = 0;
		/* Zero-length: no SGE, but a valid rkey keeps HCAs happy. */
		wr.remote_addr = ch->remote_rx_addr;
		wr.rkey = ch->remote_rx_rkey;
		ret = channel_post(ch, &wr);
		if (ret) {
			tv__channel_fail(ch, TV_UNAVAILABLE,
					 "posting an ACK failed: %s",
					 strerror(-ret));
			return;
		}
		ch->acks_owed--;
		channel_ack_sent(ch, false);
	}
}

void tv__channel_enqueue(struct tv_channel *ch, struct tv_txent *tx)
{
	assert(!tv_list_linked(&tx->link));
	tv_list_add_tail(&ch->tx_queue, &tx->link);
	ch->engine->stats.queued_msgs++;
}

void tv__channel_unqueue(struct tv_channel *ch, struct tv_txent *tx)
{
	if (!tv_list_linked(&tx->link))
		return;
	tv_list_del(&tx->link);
	assert(ch->engine->stats.queued_msgs > 0);
	ch->engine->stats.queued_msgs--;
}

/*
 * Encode tx's message into the tx buffer, and say which it is in ev.  A
 * request encodes straight from itself (the fetch path); a response
 * through the engine's scratch message.
 */
static int txent_encode(struct tv_channel *ch, struct tv_txent *tx,
			size_t *len_p, struct tv_engine_event *ev)
{
	struct tv_msg *msg = &ch->engine->tx_msg;
	struct tv_request *req;

	ev->msg_type = tx->type;
	if (tx->kind == TV_TX_REQUEST) {
		req = TV_CONTAINER_OF(tx, struct tv_request, tx);
		ev->request_index = req->index;
		ev->step_id = req->step_id;
		ev->name = req->name;
		return tv__request_wire_encode(req, ch->tx_mem, ch->buf_bytes,
					       len_p);
	}
	tv__wire_msg_reset(msg);
	tv__response_encode(TV_CONTAINER_OF(tx, struct tv_response, tx), msg);
	ev->request_index = msg->request_index;
	ev->step_id = msg->step_id;
	ev->name = msg->name;
	return tv__wire_encode_built(msg, ch->tx_mem, ch->buf_bytes, len_p);
}

static void txent_posted(struct tv_txent *tx)
{
	if (tx->kind == TV_TX_REQUEST)
		tv__request_msg_posted(
			TV_CONTAINER_OF(tx, struct tv_request, tx));
	else
		tv__response_msg_posted(
			TV_CONTAINER_OF(tx, struct tv_response, tx));
}

/* Encode the head of the queue into the tx buffer and write it. */
static int channel_send_one(struct tv_channel *ch, struct tv_txent *tx)
{
	struct tv_engine *e = ch->engine;
	struct tv_engine_event ev = { 0 };
	struct tv_vf_sge sge;
	struct tv_vf_send_wr wr;
	size_t len;
	int ret;

	ret = txent_encode(ch, tx, &len, &ev);
	assert(ret == 0); /* we only build valid messages */
	if (ret)
		return ret;
	assert(len <= ch->remote_rx_bytes);
	sge.addr = (uint64_t)(uintptr_t)ch->tx_mem;
	sge.length = (uint32_t)len;
	sge.lkey = ch->tx_mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = TV_WRID_MSG;
	wr.opcode = TV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = TV_IMM_MESSAGE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.remote_addr = ch->remote_rx_addr;
	wr.rkey = ch->remote_rx_rkey;
	ret = channel_post(ch, &wr);
	if (ret)
		return ret;
	if (tx->kind == TV_TX_REQUEST)
		tv__request_advertised(
			TV_CONTAINER_OF(tx, struct tv_request, tx));
	ch->tx_local_busy = true;
	ch->tx_remote_busy = true;
	/*
	 * Inside progress, its ACK timeout starts at the timer pass that
	 * ends the call, not with a clock read here: on the fetch path a
	 * clock read is 0.1 us on emulated CPUs, and a timeout can only fire
	 * in a timer pass anyway.  Outside progress (tv_engine_recv and the
	 * like) no pass may ever come: a message that RNR-retries for ever
	 * brings no completion, and nothing would wake the caller (swarm
	 * seed 2180, regressions/ack_timer_outside_progress).  Arm it here.
	 */
	if (e->in_progress) {
		ch->msg_stamp_pending = true;
	} else {
		ch->msg_sent_ns = tv_vf_now_ns(e->dev);
		if (e->cfg.ack_timeout_ns)
			tv_vf_wake_at(e->dev,
				      ch->msg_sent_ns + e->cfg.ack_timeout_ns);
	}
	e->stats.msgs_sent[tx->type]++;
	ev.length = len;
	tv__emit(e, TV_EV_MSG_SEND, ch->peer_id, &ev);
	return 0;
}

/* tx, in no queue, to the wire; false: the channel failed. */
static bool channel_send(struct tv_channel *ch, struct tv_txent *tx)
{
	int ret = channel_send_one(ch, tx);

	if (ret) {
		tv__channel_fail(ch, TV_UNAVAILABLE, "posting a %s failed: %s",
				 tv_msg_type_name(tx->type), strerror(-ret));
		return false;
	}
	/* May free the owner: nothing of tx is used after this. */
	txent_posted(tx);
	return true;
}

void tv__channel_kick(struct tv_channel *ch)
{
	struct tv_list *node;
	struct tv_txent *tx;

	channel_send_acks(ch);
	while (ch->connected && !ch->failed && !ch->tx_local_busy &&
	       !ch->tx_remote_busy && ch->sq_outstanding < ch->sq_depth) {
		node = ch->tx_queue.next;
		if (node == &ch->tx_queue)
			return;
		tx = TV_CONTAINER_OF(node, struct tv_txent, link);
		tv__channel_unqueue(ch, tx);
		if (!channel_send(ch, tx))
			return;
	}
}

void tv__channel_send_now(struct tv_channel *ch, struct tv_txent *tx)
{
	/* The queue is empty: tx is what kick() would have sent next. */
	assert(tv__channel_tx_idle(ch) && !tv_list_linked(&tx->link));
	channel_send(ch, tx);
}

int tv__channel_post_write(struct tv_channel *ch, uint32_t index,
			   uint64_t dst_addr, uint32_t rkey, uint64_t addr,
			   uint32_t lkey, uint64_t len, bool *rode_p)
{
	struct tv_vf_send_wr wr;
	struct tv_vf_sge sge;
	bool ride;
	int ret;

	assert(len <= UINT32_MAX);
	assert(index <= TV_IMM_MAX_REQUEST);
	if (ch->sq_outstanding >= ch->sq_depth)
		return -EAGAIN;
	memset(&wr, 0, sizeof(wr));
	/* Index, not pointer: wr_ids show in traces and the event hash. */
	wr.wr_id = ((uint64_t)index << 3) | TV_WRID_WRITE_TAG;
	wr.opcode = TV_WR_RDMA_WRITE_WITH_IMM;
	/*
	 * An ACK we owe rides on the write: same order on the wire as a
	 * separate ACK posted right after it, one packet fewer.
	 */
	ride = ch->ack_rider || ch->acks_owed;
	wr.imm_data = index | (ride ? TV_IMM_ACK_FLAG : 0);
	wr.remote_addr = dst_addr;
	wr.rkey = rkey;
	if (len) {
		sge.addr = addr;
		sge.length = (uint32_t)len;
		sge.lkey = lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	ret = channel_post(ch, &wr);
	if (ret)
		return ret;
	*rode_p = ride;
	return 0;
}

void tv__channel_write_posted(struct tv_channel *ch,
			      const struct tv_response *resp, uint64_t len,
			      bool rode)
{
	struct tv_engine_event ev = { 0 };

	ev.request_index = resp->index;
	ev.step_id = resp->step_id;
	ev.name = resp->name;
	ev.addr = resp->dst_addr;
	ev.rkey = resp->dst_rkey;
	ev.length = len;
	tv__emit(ch->engine, TV_EV_TENSOR_WRITE, ch->peer_id, &ev);
	ch->engine->stats.tensor_writes++;
	ch->engine->stats.tensor_bytes_written += len;
	if (rode) {
		if (ch->ack_rider)
			ch->ack_rider = false;
		else
			ch->acks_owed--;
		channel_ack_sent(ch, true);
	}
}

/* ---- failure ---------------------------------------------------------- */

void tv__channel_fail(struct tv_channel *ch, enum tv_code code,
		      const char *fmt, ...)
{
	struct tv_engine_event ev = { 0 };
	struct tv_vf_qp_attr attr = { .qp_state = TV_QPS_ERR };
	va_list ap;

	if (ch->failed)
		return;
	ch->failed = true;
	ch->engine->stats.channel_failures++;
	ch->reconnect_pending = ch->engine->cfg.reconnect &&
				!ch->engine->destroying;
	ch->fail_status.code = code;
	va_start(ap, fmt);
	vsnprintf(ch->fail_status.message, sizeof(ch->fail_status.message),
		  fmt, ap);
	va_end(ap);
	ch->fail_status.details[0] = '\0';
	ev.code = code;
	ev.name = ch->fail_status.message;
	tv__emit(ch->engine, TV_EV_CHANNEL_ERROR, ch->peer_id, &ev);
	/*
	 * Flush everything: outstanding writes complete (flushed) before
	 * their source buffers are released, so nothing is freed under DMA.
	 */
	/* Any state may go to ERR; a QP already there stays (no error). */
	tv_vf_modify_qp(ch->qp, &attr, TV_QP_STATE);
	/*
	 * Requests are settled once the CQ is drained: a tensor write that
	 * landed before the QP went to ERR still completes its request (its
	 * sender saw success and let the tensor go: a retry would not find
	 * it).
	 */
	ch->fail_pending = true;
	tv__response_drop_all(ch, false);
}

/* Requests caught by the failure, after every completion that made it. */
static void channel_settle(struct tv_channel *ch)
{
	if (!ch->fail_pending)
		return;
	ch->fail_pending = false;
	tv__request_fail_all(ch, &ch->fail_status);
}

/* ---- completions ------------------------------------------------------ */

static void channel_dispatch(struct tv_channel *ch, const struct tv_msg *msg);

static void channel_on_message(struct tv_channel *ch, uint32_t byte_len)
{
	struct tv_engine *e = ch->engine;
	struct tv_msg *msg = &e->rx_msg;
	struct tv_engine_event ev = { 0 };
	int ret;

	/*
	 * Not ACKed yet: a tensor write posted for it carries the ACK.  The
	 * fetch path's write goes first of all, and reads the request in
	 * place (tv__response_early).  Otherwise parse first: the ACK lets
	 * the peer overwrite the buffer.
	 */
	ch->ack_rider = true;
	ret = tv__response_early(ch, ch->rx_mem, byte_len, msg) ? 0 :
	      tv__wire_decode_scratch(ch->rx_mem, byte_len, msg);
	if (ret) {
		ch->ack_rider = false;
		e->stats.malformed_msgs++;
		tv__channel_fail(ch, TV_DATA_LOSS,
				 "malformed message from node %u (%u bytes): %s",
				 ch->peer_id, byte_len, strerror(-ret));
		return;
	}
	e->stats.msgs_recv[msg->type]++;
	ev.msg_type = msg->type;
	ev.request_index = msg->request_index;
	ev.step_id = msg->step_id;
	ev.name = msg->name;
	ev.length = byte_len;
	tv__emit(e, TV_EV_MSG_RECV, ch->peer_id, &ev);
	/*
	 * Dispatch, then ACK: the message is already copied out of the rx
	 * buffer (parse-before-ACK is what matters), and a tensor write the
	 * dispatch posts goes on the wire ahead of the ACK.
	 */
	channel_dispatch(ch, msg);
	assert(!ch->early.tag); /* its books are kept */
	if (ch->ack_rider) { /* no write took it: an ACK of its own */
		ch->ack_rider = false;
		ch->acks_owed++;
	}
	channel_send_acks(ch);
}

static void channel_dispatch(struct tv_channel *ch, const struct tv_msg *msg)
{
	/*
	 * A dying channel does no new sender work: the peer will retry.  A
	 * write posted early is work done: its books are kept.
	 */
	if (ch->failed && !ch->early.tag &&
	    (msg->type == TV_MSG_TENSOR_REQUEST ||
	     msg->type == TV_MSG_TENSOR_RE_REQUEST))
		return;
	switch (msg->type) {
	case TV_MSG_TENSOR_REQUEST:
		tv__response_on_request(ch, msg);
		break;
	case TV_MSG_TENSOR_RE_REQUEST:
		tv__response_on_re_request(ch, msg);
		break;
	case TV_MSG_META_DATA_UPDATE:
		tv__request_on_meta(ch, msg);
		break;
	case TV_MSG_ERROR_STATUS:
		tv__request_on_error(ch, msg);
		break;
	default:
		assert(0); /* the decoder rejects unknown types */
	}
}

static void channel_on_ack(struct tv_channel *ch)
{
	struct tv_engine_event ev = { 0 };

	ch->engine->stats.acks_recv++;
	tv__emit(ch->engine, TV_EV_ACK_RECV, ch->peer_id, &ev);
	ch->tx_remote_busy = false;
	tv__response_acked(ch);
}

static void channel_on_recv(struct tv_channel *ch, const struct tv_vf_wc *wc)
{
	int ret;

	assert(ch->rq_posted > 0);
	ch->rq_posted--;
	if (wc->status != TV_WC_SUCCESS)
		return; /* flushed: the channel has failed already */
	ch->rx_seq++;
	if (wc->opcode != TV_WC_RECV_RDMA_WITH_IMM ||
	    !(wc->wc_flags & TV_WC_WITH_IMM)) {
		tv__channel_fail(ch, TV_DATA_LOSS,
				 "unexpected receive opcode %d from node %u",
				 wc->opcode, ch->peer_id);
		return;
	}
	if (wc->imm_data == TV_IMM_MESSAGE) {
		channel_on_message(ch, wc->byte_len);
	} else if (wc->imm_data == TV_IMM_ACK) {
		channel_on_ack(ch);
	} else {
		/* The write first, then the ACK it carries: wire order. */
		tv__request_on_write(ch, tv_imm_index(wc->imm_data),
				     wc->byte_len);
		if (wc->imm_data & TV_IMM_ACK_FLAG)
			channel_on_ack(ch);
	}
	/*
	 * One for one: a write-with-imm consumed one receive.  Re-posted after
	 * the work it brought, which is what someone waits for: the receive
	 * held back in reserve (inflight_max) covers anything the peer can
	 * send meanwhile.
	 */
	ret = ch->failed ? 0 : channel_post_recvs(ch, 1);
	if (ret)
		tv__channel_fail(ch, TV_UNAVAILABLE,
				 "re-posting a receive failed: %s",
				 strerror(-ret));
	/*
	 * Whatever the peer posted before this has landed: release those.
	 * After the completion's own work, which is what someone waits for;
	 * what this work quarantined is younger and stays.
	 */
	tv__quarantine_release(ch, false);
}

static void channel_on_send(struct tv_channel *ch, const struct tv_vf_wc *wc)
{
	uint64_t tag = wc->wr_id & 7u;

	/* A completion for nothing we posted: the backend misbehaves. */
	if (!ch->sq_outstanding) {
		tv__channel_fail(ch, TV_INTERNAL,
				 "completion (wr_id %#llx) for no posted work "
				 "on the channel to node %u",
				 (unsigned long long)wc->wr_id, ch->peer_id);
		return;
	}
	ch->sq_outstanding--;
	if (tag == TV_WRID_WRITE_TAG) {
		struct tv_response *resp =
			tv__response_find(ch, (uint32_t)(wc->wr_id >> 3));

		/* Responses live until their write completes. */
		if (resp && resp->state == TV_RESP_WRITING)
			tv__response_write_done(resp, wc->status);
		else
			tv__channel_fail(ch, TV_INTERNAL,
					 "completion of a write for index %u "
					 "that has none in flight",
					 (uint32_t)(wc->wr_id >> 3));
	} else if (tag == TV_WRID_MSG && wc->status == TV_WC_SUCCESS) {
		ch->tx_local_busy = false;
	}
	if (wc->status != TV_WC_SUCCESS)
		tv__channel_fail(ch, TV_UNAVAILABLE,
				 "RDMA to node %u failed: %s (status %d)",
				 ch->peer_id, tv_vf_wc_status_str(wc->status),
				 wc->status);
}

int tv__channel_progress(struct tv_channel *ch)
{
	struct tv_vf_wc wc[32];
	int n, i, total = 0;

	if (!ch->cq)
		return 0; /* a reset that could not make a new QP */
	for (;;) {
		n = tv_vf_poll_cq(ch->cq, 32, wc);
		if (n < 0) {
			/* An overflowed CQ: completions are lost for good. */
			tv__channel_fail(ch, TV_INTERNAL,
					 "polling the CQ failed: %s",
					 strerror(-n));
			channel_settle(ch);
			return n;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id == TV_WRID_RECV)
				channel_on_recv(ch, &wc[i]);
			else
				channel_on_send(ch, &wc[i]);
		}
		total += n;
		if (n < 32)
			break;
	}
	/*
	 * Without retries, what waits fails now.  With them, the reset's
	 * drain settles it: a poll may come back short while completions
	 * of writes that landed are still on their way (vf/cq/delay).
	 */
	if (ch->failed && !tv__channel_retries(ch))
		channel_settle(ch);
	tv__channel_kick(ch);
	return total;
}

static void channel_teardown_qp(struct tv_channel *ch);

void tv__channel_destroy(struct tv_channel *ch)
{
	struct tv_engine *e = ch->engine;

	/* Flush, and consume the flushes so every source buffer is released. */
	tv__channel_fail(ch, TV_CANCELLED, "engine shutting down");
	if (ch->qp)
		channel_teardown_qp(ch);
	/* Whatever still waits (even for a reconnect) ends now. */
	tv_status_set(&ch->fail_status, TV_CANCELLED, "engine shutting down");
	ch->fail_pending = true;
	channel_settle(ch);
	tv__quarantine_release(ch, true);
	channel_free_buffers(ch);
	channel_maps_fini(ch);
	e->channels[ch->peer_id] = NULL;
	free(ch);
}

/* ---- timers, reset, reconnection ---------------------------------------- */

/*
 * Ask the application to connect the channel again.  -EAGAIN: the peer
 * is not there yet (restarting): try again after a back-off that doubles
 * up to 64 ACK timeouts; receives keep waiting (their deadlines bound
 * them).  Any other error: no way back, what waits fails.
 */
static uint64_t channel_reconnect(struct tv_channel *ch, uint64_t now_ns)
{
	struct tv_engine *e = ch->engine;
	uint64_t base = e->cfg.ack_timeout_ns ? e->cfg.ack_timeout_ns : 1000000;
	int ret;

	ch->reconnect_pending = false;
	e->stats.reconnects++;
	ret = e->cfg.reconnect(e->cfg.reconnect_ctx, ch);
	if (!ret) {
		ch->reconnect_backoff = 0;
		return 0;
	}
	if (ret == -EAGAIN && ch->failed) {
		ch->reconnect_backoff = ch->reconnect_backoff ?
			ch->reconnect_backoff * 2 : 1;
		if (ch->reconnect_backoff > 64)
			ch->reconnect_backoff = 64;
		ch->reconnect_pending = true;
		ch->reconnect_at_ns = now_ns + base * ch->reconnect_backoff;
		return ch->reconnect_at_ns;
	}
	ch->give_up = true;
	tv__request_fail_all(ch, &ch->fail_status);
	return 0;
}

uint64_t tv__channel_timers(struct tv_channel *ch, uint64_t now_ns)
{
	struct tv_engine *e = ch->engine;
	uint64_t due;

	/*
	 * A failure raised by a timer (a receive's deadline): no completion
	 * may ever come to progress it (a QP with nothing posted flushes
	 * nothing), so poll now.
	 */
	if (ch->fail_pending)
		tv__channel_progress(ch);

	if (ch->msg_stamp_pending) {
		ch->msg_sent_ns = now_ns;
		ch->msg_stamp_pending = false;
	}
	if (ch->connected && !ch->failed && ch->tx_remote_busy &&
	    e->cfg.ack_timeout_ns &&
	    !(e->cfg.test_breakage & TV_BREAK_NO_ACK_TIMEOUT)) {
		due = ch->msg_sent_ns + e->cfg.ack_timeout_ns;
		if (now_ns < due)
			return due;
		e->stats.ack_timeouts++;
		tv__channel_fail(ch, TV_UNAVAILABLE,
				 "no ACK from node %u within %llu ns: a control "
				 "message or its ACK was lost", ch->peer_id,
				 (unsigned long long)e->cfg.ack_timeout_ns);
		tv__channel_progress(ch);
	}
	if (ch->reconnect_pending) {
		if (now_ns < ch->reconnect_at_ns)
			return ch->reconnect_at_ns;
		return channel_reconnect(ch, now_ns);
	}
	return 0;
}

/* Drop what the old QP held; completions still queued are consumed. */
/* Empty polls in a row before a drain gives up on what never comes. */
#define TV_DRAIN_EMPTY_POLLS 1000

static void channel_teardown_qp(struct tv_channel *ch)
{
	struct tv_vf_wc wc[32];
	int n, i, empty;

	assert(ch->failed);
	/*
	 * The QP is in ERR: every posted work request completes once, with
	 * success or a flush.  Drain by count, not by the first empty poll
	 * (a completion may be late); a bound on empty polls covers work a
	 * fault said was posted but was not (vf/recv/drop).
	 */
	for (empty = 0; (ch->rq_posted || ch->sq_outstanding) &&
			empty < TV_DRAIN_EMPTY_POLLS;) {
		n = tv_vf_poll_cq(ch->cq, 32, wc);
		if (n <= 0) {
			empty++;
			if (n < 0)
				break; /* an overflowed CQ: what is lost is lost */
			continue;
		}
		empty = 0;
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id == TV_WRID_RECV)
				channel_on_recv(ch, &wc[i]);
			else
				channel_on_send(ch, &wc[i]);
		}
	}
	channel_settle(ch);
	tv_vf_destroy_qp(ch->qp);
	ch->qp = NULL;
	/* Writes whose flushes never came (a backend without flush). */
	tv__response_drop_all(ch, true);
	tv_vf_destroy_cq(ch->cq);
	ch->cq = NULL;
}

int tv_channel_reset(struct tv_channel *ch)
{
	int ret;

	if (!ch)
		return -EINVAL;
	if (!ch->failed)
		tv__channel_fail(ch, TV_UNAVAILABLE,
				 "channel to node %u reset", ch->peer_id);
	/* None after a reset that could not make one: nothing to drop. */
	if (ch->qp)
		channel_teardown_qp(ch);
	/* The old QP is gone: nothing can land in quarantined buffers. */
	ch->gen++;
	tv__quarantine_release(ch, true);
	ch->tx_local_busy = false;
	ch->tx_remote_busy = false;
	ch->acks_owed = 0;
	ch->ack_rider = false;
	ch->sq_outstanding = 0;
	ch->rq_posted = 0;
	ch->connected = false;
	ret = channel_create_qp(ch);
	if (ret)
		return ret;
	ret = channel_post_recvs(ch, ch->engine->cfg.queue_depth);
	if (ret)
		return ret;
	/* Requests caught by the failure wait for the new connection. */
	ch->failed = false;
	ch->reconnect_pending = false;
	ch->reconnect_backoff = 0;
	ch->reconnect_at_ns = 0;
	return 0;
}

int tv_channel_fail(struct tv_channel *ch, enum tv_code code,
		    const char *message)
{
	if (!ch || !message || code == TV_OK)
		return -EINVAL;
	tv__channel_fail(ch, code, "%s", message);
	return 0;
}

bool tv_channel_failed(const struct tv_channel *ch)
{
	return ch->failed;
}

uint32_t tv_channel_peer(const struct tv_channel *ch)
{
	return ch->peer_id;
}
