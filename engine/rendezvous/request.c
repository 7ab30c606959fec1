/*
 * The receiver side (the original's RdmaTensorRequest): one object per
 * receive, keyed by a request index that is also the immediate of the
 * tensor write that completes it.
 *
 *   start -> TENSOR_REQUEST (cached metadata + destination)
 *         -> [META_DATA_UPDATE -> reallocate -> TENSOR_RE_REQUEST]
 *         -> tensor write (imm = index) -> proxy copy / deserialize -> done
 *         or ERROR_STATUS -> done with the sender's status.
 *
 * Requests in flight are bounded by the receives posted on the channel
 * (credits), so a tensor write can never meet an empty receive queue.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/faults.h>

#include "alloc.h" /* TV__FIU_FAIL */
#include "engine_int.h"

struct tv_request *tv__request_find(struct tv_channel *ch, uint32_t index)
{
	struct tv_hnode *node = tv_hmap_first(&ch->requests, tv_hash_u64(index));

	for (; node; node = tv_hmap_next_same(node)) {
		struct tv_request *req =
			TV_CONTAINER_OF(node, struct tv_request, hnode);

		if (req->index == index)
			return req;
	}
	return NULL;
}

/* The next index not held by a live request, wrapping after the max. */
static TV__INLINE_HOT uint32_t request_alloc_index(struct tv_channel *ch)
{
	uint32_t idx;

	assert(ch->requests.count < TV_IMM_MAX_REQUEST);
	do {
		idx = ch->next_index;
		ch->next_index = idx >= TV_IMM_MAX_REQUEST ? 0 : idx + 1;
	} while (tv__request_find(ch, idx));
	return idx;
}

static TV__INLINE_HOT struct tv_meta_entry *
meta_find(struct tv_channel *ch, const char *name, size_t len)
{
	struct tv_hnode *node =
		tv_hmap_first(&ch->meta_cache, tv_hash_key(0, name, len));

	for (; node; node = tv_hmap_next_same(node)) {
		struct tv_meta_entry *me =
			TV_CONTAINER_OF(node, struct tv_meta_entry, hnode);

		if (me->name_len == len && tv__bytes_equal(me->name, name, len))
			return me;
	}
	return NULL;
}

/* Remember the sender's metadata; a failed insert only costs a round trip. */
static void meta_update(struct tv_channel *ch, const struct tv_request *req)
{
	struct tv_meta_entry *me = meta_find(ch, req->name, req->name_len);

	if (me) {
		tv__meta_copy(&me->meta, &req->meta);
		return;
	}
	me = tv__calloc(1, sizeof(*me));
	if (!me)
		return;
	me->name = tv__strndup(req->name, req->name_len);
	if (!me->name) {
		free(me);
		return;
	}
	me->name_len = req->name_len;
	tv__meta_copy(&me->meta, &req->meta);
	tv_hmap_insert(&ch->meta_cache, &me->hnode,
		       tv_hash_key(0, req->name, req->name_len));
}

/*
 * The host result reserved by request_alloc_host(), set up now: once the
 * request is posted, or before its destination is let go or read.
 */
static void request_result_ready(struct tv_request *req)
{
	if (!req->result_slot)
		return;
	assert(!req->result);
	tv__tensor_init_pool(req->result_slot, req->ch->engine, &req->meta,
			     &req->result_buf);
	req->result = req->result_slot;
	req->result_slot = NULL;
}

static void request_release_dest(struct tv_request *req)
{
	struct tv_engine *e = req->ch->engine;

	request_result_ready(req);

	/* What the peer was told it may write into waits in quarantine. */
	if (req->has_stage) {
		if (req->advertised) {
			req->stage_q->buf = req->stage;
			req->stage_q->owner = NULL;
			tv__quarantine_put(req->ch, req->stage_q);
		} else {
			tv_pool_free(e->pool, &req->stage);
			free(req->stage_q);
		}
		req->stage_q = NULL;
		req->has_stage = false;
	} else if (req->result && req->advertised &&
		   req->result->mem == TV_MEM_POOL) {
		tv__quarantine_arm(req->ch, req->result);
	}
	req->advertised = false;
	tv_tensor_unref(req->result);
	req->result = NULL;
	req->dst_addr = 0;
	req->dst_rkey = 0;
	req->dst_bytes = 0;
}

static int request_stage(struct tv_request *req, size_t bytes)
{
	int ret;

	/* Its quarantine node now, so that releasing it cannot fail. */
	req->stage_q = tv__malloc(sizeof(*req->stage_q));
	if (!req->stage_q)
		return -ENOMEM;
	ret = tv_pool_alloc(req->ch->engine->pool, bytes, &req->stage);
	if (ret) {
		free(req->stage_q);
		req->stage_q = NULL;
		return ret;
	}
	req->has_stage = true;
	req->dst_addr = (uint64_t)(uintptr_t)req->stage.addr;
	req->dst_rkey = req->stage.rkey;
	req->dst_bytes = bytes;
	return 0;
}

/*
 * A host result, the fetch path's: its buffer now (its address goes into
 * the request), its struct reserved now and set up once the request is
 * posted (tv__request_advertised), out of the way of the peer's answer.
 */
static TV__INLINE_HOT int request_alloc_host(struct tv_request *req)
{
	struct tv_engine *e = req->ch->engine;
	int ret;

	req->result_slot = tv__tensor_reserve(e);
	if (!req->result_slot)
		return -ENOMEM;
	ret = tv_pool_alloc(e->pool, req->meta.tensor_bytes, &req->result_buf);
	if (ret) {
		tv__tensor_unreserve(e, req->result_slot);
		req->result_slot = NULL;
		return ret;
	}
	req->dst_addr = (uint64_t)(uintptr_t)req->result_buf.addr;
	req->dst_rkey = req->result_buf.rkey;
	req->dst_bytes = req->meta.tensor_bytes;
	return 0;
}

/*
 * Allocate where the tensor will be written, from req->meta: the result
 * itself (host, registered pool), a proxy (device result), or a buffer
 * for the serialized proto (strings).  Dead and empty tensors need none.
 */
static int request_alloc_dest(struct tv_request *req)
{
	struct tv_engine *e = req->ch->engine;
	const struct tv_meta *m = &req->meta;
	int ret;

	request_release_dest(req);
	if (m->is_dead || !m->tensor_bytes)
		return 0;
	/* The peer says how much we allocate and pin (cached or not): bound it. */
	if (m->tensor_bytes > e->cfg.max_recv_bytes)
		return -EFBIG;
	if (m->dtype == TV_DT_STRING)
		return request_stage(req, m->tensor_bytes);
	if (req->place == TV_PLACE_HOST)
		return request_alloc_host(req);
	ret = tv_tensor_create(e, m->dtype, &m->shape, req->place,
			       &req->result);
	if (ret)
		return ret;
	assert(tv_tensor_size_bytes(req->result) == m->tensor_bytes);
	if (req->place == TV_PLACE_DEVICE)
		return request_stage(req, m->tensor_bytes);
	req->dst_addr = (uint64_t)(uintptr_t)req->result->data;
	req->dst_rkey = req->result->buf.rkey;
	req->dst_bytes = m->tensor_bytes;
	return 0;
}

static void request_finish(struct tv_request *req, const struct tv_status *st,
			   struct tv_tensor *result)
{
	struct tv_channel *ch = req->ch;
	struct tv_engine *e = ch->engine;
	struct tv_engine_event ev = { 0 };
	bool credit = req->indexed;

	assert(st->code == TV_OK || !result);
	if (req->indexed) {
		tv_hmap_remove(&ch->requests, &req->hnode);
		assert(ch->inflight > 0);
		ch->inflight--;
	}
	if (tv_list_linked(&req->wait_link))
		tv_list_del(&req->wait_link);
	if (tv_list_linked(&req->deadline_link))
		tv_list_del(&req->deadline_link);
	tv__channel_unqueue(ch, &req->tx);
	if (result && result == req->result) {
		/* Handed to the callback: quarantined when its owner frees it. */
		if (req->advertised && result->mem == TV_MEM_POOL)
			tv__quarantine_arm(ch, result);
		req->result = NULL;
	}
	request_release_dest(req);
	if (st->code == TV_OK)
		e->stats.recvs_ok++;
	else
		e->stats.recvs_failed++;
	assert(e->stats.live_requests > 0);
	e->stats.live_requests--;
	ev.request_index = req->index;
	ev.step_id = req->step_id;
	ev.name = req->name;
	ev.code = st->code;
	tv__emit(e, TV_EV_RECV_DONE, ch->peer_id, &ev);
	if (req->done)
		req->done(req->arg, st, result);
	tv__name_free(req->name, req->name_buf);
	tv__fl_free(&e->free_requests, req);
	/* The credit it held may let a waiting request go. */
	if (credit)
		tv__request_grant_credits(ch);
}

static void request_fail(struct tv_request *req, enum tv_code code,
			 const char *msg)
{
	struct tv_status st;

	tv_status_set(&st, code, "%s", msg);
	request_finish(req, &st, NULL);
}

/* req->index is its own now: findable by it, holding a credit. */
static void request_hold_index(struct tv_request *req)
{
	struct tv_channel *ch = req->ch;

	tv_hmap_insert(&ch->requests, &req->hnode, tv_hash_u64(req->index));
	req->indexed = true;
	ch->inflight++;
}

/* Take an index and a credit; send TENSOR_REQUEST with cached metadata. */
static void request_send_first(struct tv_request *req)
{
	struct tv_channel *ch = req->ch;
	struct tv_meta_entry *me;
	int ret;

	req->index = request_alloc_index(ch);
	request_hold_index(req);
	me = meta_find(ch, req->name, req->name_len);
	if (me) {
		tv__meta_copy(&req->meta, &me->meta);
		req->meta_valid = true;
		ret = request_alloc_dest(req);
		if (ret) {
			request_fail(req, TV_RESOURCE_EXHAUSTED,
				     "allocating the receive buffer failed");
			return;
		}
	}
	req->tx.type = TV_MSG_TENSOR_REQUEST;
	req->state = TV_REQ_QUEUED;
	tv__channel_enqueue(ch, &req->tx);
}

/*
 * The cached metadata of a request that may take the fast path: nothing
 * waits ahead of it (credits, the message queue, the tx buffer), and the
 * metadata asks for a plain host buffer.  NULL: the general path.
 */
static const struct tv_meta *request_fast_meta(const struct tv_request *req)
{
	struct tv_channel *ch = req->ch;
	const struct tv_meta_entry *me;

	if (req->place != TV_PLACE_HOST || ch->granting ||
	    ch->inflight >= ch->inflight_max ||
	    !tv_list_empty(&ch->credit_wait) || !tv__channel_tx_idle(ch))
		return NULL;
	me = meta_find(ch, req->name, req->name_len);
	if (!me || me->meta.is_dead || !me->meta.tensor_bytes ||
	    me->meta.dtype == TV_DT_STRING ||
	    me->meta.tensor_bytes > ch->engine->cfg.max_recv_bytes)
		return NULL;
	return &me->meta;
}

/*
 * The fetch path: what request_send_first() and tv__channel_kick() do,
 * with the post first and the index's books after it (the peer waits for
 * the request, not for our records; nothing reads them before the next
 * poll).  The allocations keep their order: the fault plan draws the same.
 * false: not this path, nothing done.
 */
static bool request_send_fast(struct tv_request *req)
{
	struct tv_channel *ch = req->ch;
	const struct tv_meta *meta = request_fast_meta(req);
	int ret;

	if (!meta)
		return false;
	req->index = request_alloc_index(ch);
	tv__meta_copy(&req->meta, meta);
	req->meta_valid = true;
	req->tx.type = TV_MSG_TENSOR_REQUEST;
	req->state = TV_REQ_QUEUED;
	ret = request_alloc_host(req);
	if (!ret) {
		tv__channel_send_now(ch, &req->tx);
		ch->engine->stats.fast_requests++;
	}
	request_hold_index(req);
	if (ret)
		request_fail(req, TV_RESOURCE_EXHAUSTED,
			     "allocating the receive buffer failed");
	return true;
}

void tv__request_grant_credits(struct tv_channel *ch)
{
	struct tv_list *node;

	/* Finishing a request re-enters here: let the outer loop do it. */
	if (ch->granting)
		return;
	ch->granting = true;
	while (ch->connected && !ch->failed &&
	       ch->inflight < ch->inflight_max) {
		node = tv_list_pop(&ch->credit_wait);
		if (!node)
			break;
		request_send_first(
			TV_CONTAINER_OF(node, struct tv_request, wait_link));
	}
	ch->granting = false;
}

int tv__request_start(struct tv_channel *ch, uint64_t step_id,
		      const char *name, size_t name_len,
		      enum tv_placement place, tv_recv_done_fn done, void *arg)
{
	struct tv_engine *e = ch->engine;
	struct tv_request *req;

	req = TV__FL_ALLOC_UPTO(&e->free_requests, struct tv_request, meta,
				fail);
	if (!req)
		return -ENOMEM;
	tv__meta_clear(&req->meta);
	if (tv__name_set(&req->name, req->name_buf, name, name_len)) {
		tv__fl_free(&e->free_requests, req);
		return -ENOMEM;
	}
	req->ch = ch;
	req->name_len = (uint16_t)name_len;
	req->step_id = step_id;
	req->place = place;
	req->done = done;
	req->arg = arg;
	req->tx.kind = TV_TX_REQUEST;
	tv_list_init(&req->tx.link);
	tv_list_init(&req->wait_link);
	tv_list_init(&req->deadline_link);
	req->state = TV_REQ_WAIT_CREDIT;
	e->stats.recvs_started++;
	e->stats.live_requests++;
	if (e->cfg.recv_timeout_ns) {
		/* Same timeout for all: start order is deadline order. */
		req->deadline_ns = tv_vf_now_ns(e->dev) + e->cfg.recv_timeout_ns;
		tv_list_add_tail(&e->deadlines, &req->deadline_link);
		/*
		 * Timers are armed by progress, and a channel that is not
		 * connected brings none (a late peer, or one that crashed
		 * and never came back): the deadline must wake us itself.
		 */
		if (!ch->connected)
			tv_vf_wake_at(e->dev, req->deadline_ns);
	}
	if (ch->failed && !tv__channel_retries(ch)) {
		request_finish(req, &ch->fail_status, NULL);
		return 0;
	}
	if (request_send_fast(req))
		return 0;
	tv_list_add_tail(&ch->credit_wait, &req->wait_link);
	tv__request_grant_credits(ch);
	tv__channel_kick(ch);
	return 0;
}

int tv__request_wire_encode(struct tv_request *req, uint8_t *buf, size_t cap,
			    size_t *len_p)
{
	const struct tv__wire_req r = {
		.type = req->tx.type,
		.request_index = req->index,
		.step_id = req->step_id,
		.name = req->name,
		.name_len = req->name_len,
		.remote_addr = req->dst_addr,
		.rkey = req->dst_rkey,
		.remote_bytes = req->dst_bytes,
		.meta = req->meta_valid ? &req->meta : NULL,
	};
	int ret = tv__wire_encode_req(&r, buf, cap, len_p);

	if (!ret)
		req->advertised = req->dst_bytes > 0;
	return ret;
}

/* After the post (observers are off the latency path): what it offered. */
void tv__request_advertised(struct tv_request *req)
{
	struct tv_engine_event ev = { 0 };

	request_result_ready(req);

	ev.msg_type = req->tx.type;
	ev.request_index = req->index;
	ev.step_id = req->step_id;
	ev.name = req->name;
	ev.addr = req->dst_addr;
	ev.rkey = req->dst_rkey;
	ev.length = req->dst_bytes;
	tv__emit(req->ch->engine, TV_EV_REQ_ADVERTISE, req->ch->peer_id, &ev);
}

void tv__request_msg_posted(struct tv_request *req)
{
	/* A cancelling RE_REQUEST for a non-empty tensor: nothing will come. */
	if (req->state == TV_REQ_ABANDON && req->meta.tensor_bytes) {
		request_finish(req, &req->fail, NULL);
		return;
	}
	if (req->state == TV_REQ_QUEUED)
		req->state = TV_REQ_SENT;
}

/* Find the request a message names; a mismatch is a protocol violation. */
static struct tv_request *request_for_msg(struct tv_channel *ch,
					  const struct tv_msg *msg)
{
	struct tv_request *req = tv__request_find(ch, msg->request_index);

	if (!req || req->state != TV_REQ_SENT || req->step_id != msg->step_id ||
	    req->name_len != msg->name_len ||
	    !tv__bytes_equal(req->name, msg->name, msg->name_len)) {
		tv__channel_fail(ch, TV_DATA_LOSS,
				 "%s from node %u names no pending request "
				 "(index %u, step %llu)",
				 tv_msg_type_name(msg->type), ch->peer_id,
				 msg->request_index,
				 (unsigned long long)msg->step_id);
		return NULL;
	}
	return req;
}

/*
 * Why the destination of req could not be had: over max_recv_bytes (the
 * peer asked too much, nothing was allocated) or an allocation failure.
 */
static void request_alloc_status(struct tv_request *req, int ret,
				 struct tv_status *st)
{
	unsigned long long bytes = req->meta.tensor_bytes;

	if (ret == -EFBIG)
		tv_status_set(st, TV_RESOURCE_EXHAUSTED,
			      "tensor '%s' step %llu from node %u asks %llu "
			      "bytes, above the engine's max_recv_bytes (%llu): "
			      "refused", req->name,
			      (unsigned long long)req->step_id,
			      req->ch->peer_id, bytes,
			      (unsigned long long)req->ch->engine->cfg.max_recv_bytes);
	else
		tv_status_set(st, TV_RESOURCE_EXHAUSTED,
			      "allocating %llu bytes for '%s' failed: %s",
			      bytes, req->name, strerror(-ret));
}

void tv__request_on_meta(struct tv_channel *ch, const struct tv_msg *msg)
{
	struct tv_request *req = request_for_msg(ch, msg);
	int ret;

	if (!req)
		return;
	tv__meta_copy(&req->meta, &msg->meta);
	req->meta_valid = true;
	req->has_checksum = msg->has_checksum;
	req->checksum = msg->checksum;
	/* Metadata we refuse is not cached: the next receive asks afresh. */
	if (req->meta.tensor_bytes <= ch->engine->cfg.max_recv_bytes)
		meta_update(ch, req);
	ret = request_alloc_dest(req);
	if (ret) {
		/* Tell the sender to let go: a RE_REQUEST advertising 0 bytes. */
		request_release_dest(req);
		request_alloc_status(req, ret, &req->fail);
		req->state = TV_REQ_ABANDON;
	} else {
		req->state = TV_REQ_QUEUED;
	}
	req->tx.type = TV_MSG_TENSOR_RE_REQUEST;
	tv__channel_enqueue(ch, &req->tx);
}

void tv__request_on_error(struct tv_channel *ch, const struct tv_msg *msg)
{
	struct tv_request *req = request_for_msg(ch, msg);

	if (req)
		request_finish(req, &msg->status, NULL);
}

/*
 * engine/recv/corrupt: memory corruption between the write's completion
 * and the receiver's read.  The flipped bits' places are a function of
 * the request (its step, index and size), so a seed replays them.
 */
static void request_corrupt(struct tv_request *req, uint8_t *data, size_t len)
{
	uint64_t x = req->step_id * 0x9e3779b97f4a7c15ull ^ req->index ^
		     (uint64_t)len << 32;
	int64_t bits = 0;

	if (TV__FIU_FAIL("engine/recv/corrupt")) /* one load until live */
		bits = TV_FLT_ARG(1);
	for (int64_t k = 0; data && len && k < bits && k < 64; k++) {
		/* splitmix64: a well-mixed bit position per flip */
		x += 0x9e3779b97f4a7c15ull;
		uint64_t z = x;

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		data[(z >> 3) % len] ^= (uint8_t)(1u << (z & 7));
	}
}

/* Verify the checksum the sender announced over the bytes written. */
static int request_verify(struct tv_request *req, const void *data,
			  size_t len)
{
	struct tv_engine *e = req->ch->engine;

	if (!e->cfg.validate_checksum || !req->has_checksum)
		return 0;
	if (tv__checksum(data, len) == req->checksum)
		return 0;
	e->stats.checksum_failures++;
	return -EILSEQ;
}

/* Turn what was written into the result tensor (RecvTensorContent). */
static int request_materialize(struct tv_request *req, struct tv_tensor **t_p)
{
	struct tv_engine *e = req->ch->engine;
	const struct tv_meta *m = &req->meta;
	struct tv_shape shape;
	struct tv_str *items;
	uint64_t count;
	int ret;

	if (m->is_dead)
		return tv_tensor_create_dead(e, m->dtype, t_p);
	if (m->dtype == TV_DT_STRING) {
		ret = tv_proto_unpack(req->stage.addr, m->tensor_bytes,
				      &m->shape, &shape, &items, &count);
		if (ret)
			return ret;
		ret = tv__tensor_adopt_strings(e, &shape, items, count, t_p);
		if (ret)
			tv_proto_free_items(items, count);
		return ret;
	}
	if (!req->result) /* zero elements */
		return tv_tensor_create(e, m->dtype, &m->shape, req->place,
					t_p);
	if (req->place == TV_PLACE_DEVICE) {
		memcpy(req->result->data, req->stage.addr, m->tensor_bytes);
		e->stats.proxy_copies++;
	}
	*t_p = req->result;
	return 0;
}

void tv__request_on_write(struct tv_channel *ch, uint32_t index,
			  uint32_t byte_len)
{
	struct tv_request *req = tv__request_find(ch, index);
	struct tv_tensor *t = NULL;
	struct tv_status st;
	const void *data;
	int ret;

	if (req && req->state == TV_REQ_ABANDON) {
		/* The zero-byte write a cancelling RE_REQUEST still gets. */
		request_finish(req, &req->fail, NULL);
		return;
	}
	if (!req || req->state != TV_REQ_SENT || !req->meta_valid) {
		tv__channel_fail(ch, TV_DATA_LOSS,
				 "tensor write from node %u for request index "
				 "%u that awaits none", ch->peer_id, index);
		return;
	}
	if (byte_len != req->meta.tensor_bytes) {
		tv_status_set(&st, TV_DATA_LOSS,
			      "tensor '%s' arrived with %u bytes, expected %llu",
			      req->name, byte_len,
			      (unsigned long long)req->meta.tensor_bytes);
		request_finish(req, &st, NULL);
		return;
	}
	data = req->has_stage ? req->stage.addr :
	       req->result    ? req->result->data : NULL;
	request_corrupt(req, (uint8_t *)(uintptr_t)data, byte_len);
	if (request_verify(req, data, byte_len)) {
		tv_status_set(&st, TV_DATA_LOSS,
			      "checksum mismatch for tensor '%s' step %llu",
			      req->name, (unsigned long long)req->step_id);
		request_finish(req, &st, NULL);
		return;
	}
	ret = request_materialize(req, &t);
	if (ret) {
		tv_status_set(&st, ret == -ENOMEM ? TV_RESOURCE_EXHAUSTED :
						    TV_DATA_LOSS,
			      "decoding tensor '%s' failed: %s", req->name,
			      strerror(-ret));
		request_finish(req, &st, NULL);
		return;
	}
	tv_status_ok(&st);
	request_finish(req, &st, t);
}

/* Back to the credit queue, holding nothing: to be sent again. */
static void request_requeue(struct tv_request *req, struct tv_list *to)
{
	struct tv_channel *ch = req->ch;

	if (req->indexed) {
		tv_hmap_remove(&ch->requests, &req->hnode);
		assert(ch->inflight > 0);
		ch->inflight--;
		req->indexed = false;
	}
	tv__channel_unqueue(ch, &req->tx);
	request_release_dest(req);
	req->meta_valid = false;
	req->has_checksum = false;
	req->state = TV_REQ_WAIT_CREDIT;
	req->retries++;
	ch->engine->stats.retries++;
	tv_list_add_tail(to, &req->wait_link);
}

bool tv__channel_retries(const struct tv_channel *ch)
{
	return ch->engine->cfg.reconnect && !ch->engine->destroying &&
	       !ch->give_up;
}

static bool request_retryable(const struct tv_request *req)
{
	return tv__channel_retries(req->ch) && req->state != TV_REQ_ABANDON &&
	       req->retries < req->ch->engine->cfg.max_retries;
}

/*
 * The channel failed (its QP is in ERR: nothing can land in our buffers
 * any more).  Requests it caught go again after the reconnect, in their
 * original order, while they have retries left; the rest fail with st.
 */
void tv__request_fail_all(struct tv_channel *ch, const struct tv_status *st)
{
	struct tv_list again, *l;
	struct tv_hnode *node;

	tv_list_init(&again);
	while ((node = tv_hmap_any(&ch->requests))) {
		struct tv_request *req =
			TV_CONTAINER_OF(node, struct tv_request, hnode);

		if (request_retryable(req))
			request_requeue(req, &again);
		else
			request_finish(req, st, NULL);
	}
	/* Indices were handed out in order: resend lowest first. */
	while ((l = tv_list_pop(&ch->credit_wait)))
		tv_list_add_tail(&again, l);
	while ((l = tv_list_pop(&again))) {
		struct tv_request *req =
			TV_CONTAINER_OF(l, struct tv_request, wait_link);

		if (tv__channel_retries(ch))
			tv_list_add_tail(&ch->credit_wait, l);
		else
			request_finish(req, st, NULL);
	}
}

/* A request past its deadline: why, in words a user can act on. */
static void request_expire_one(struct tv_request *req, uint64_t now_ns)
{
	static const char *const what[] = {
		[TV_REQ_WAIT_CREDIT] = "waiting to be sent",
		[TV_REQ_QUEUED] = "waiting for the message buffer",
		[TV_REQ_SENT] = "waiting for the sender",
		[TV_REQ_ABANDON] = "cancelling",
	};
	struct tv_channel *ch = req->ch;
	bool exposed = req->indexed && req->state != TV_REQ_WAIT_CREDIT;
	struct tv_status st;

	tv_status_set(&st, TV_DEADLINE_EXCEEDED,
		      "receive of '%s' step %llu from node %u timed out after "
		      "%llu ns (%s, index %u, %u retries)", req->name,
		      (unsigned long long)req->step_id, ch->peer_id,
		      (unsigned long long)ch->engine->cfg.recv_timeout_ns,
		      what[req->state], req->index, req->retries);
	ch->engine->stats.recv_timeouts++;
	request_finish(req, &st, NULL);
	/*
	 * The sender may still write into the buffer we just freed: only
	 * a reset of the channel makes sure nothing lands any more.
	 */
	if (exposed)
		tv__channel_fail(ch, TV_UNAVAILABLE,
				 "channel reset: a request to node %u timed "
				 "out with a buffer advertised", ch->peer_id);
}

uint64_t tv__request_expire(struct tv_engine *e, uint64_t now_ns)
{
	struct tv_request *req;

	while (!tv_list_empty(&e->deadlines)) {
		req = TV_CONTAINER_OF(e->deadlines.next, struct tv_request,
				      deadline_link);
		if (req->deadline_ns > now_ns)
			return req->deadline_ns;
		request_expire_one(req, now_ns);
	}
	return 0;
}
