/*
 * The sender side (the original's RdmaTensorResponse): one object per
 * TENSOR_REQUEST received, alive until its tensor write completed or its
 * ERROR_STATUS went out.
 *
 * Tag matching by (step_id, name): a request that comes before its tensor
 * waits in e->tag_waiters; a tensor that comes first waits in e->tags.
 * With the tensor in hand: metadata unchanged and fits -> write straight
 * from the tensor's registered buffer (0 copies); otherwise clone it,
 * send META_DATA_UPDATE, and write the clone when TENSOR_RE_REQUEST comes.
 * Never more bytes than the receiver advertised.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

struct tv_response *tv__response_find(struct tv_channel *ch, uint32_t index)
{
	struct tv_hnode *node =
		tv_hmap_first(&ch->responses, tv_hash_u64(index));

	for (; node; node = tv_hmap_next_same(node)) {
		struct tv_response *resp =
			TV_CONTAINER_OF(node, struct tv_response, hnode);

		if (resp->index == index)
			return resp;
	}
	return NULL;
}

void tv__response_free(struct tv_response *resp)
{
	struct tv_channel *ch = resp->ch;
	struct tv_engine *e = ch->engine;

	tv__channel_unqueue(ch, &resp->tx);
	if (resp->state == TV_RESP_WAIT_TENSOR) {
		tv_hmap_remove(&e->tag_waiters, &resp->tag_hnode);
		assert(e->stats.unmatched_requests > 0);
		e->stats.unmatched_requests--;
	}
	tv_hmap_remove(&ch->responses, &resp->hnode);
	if (ch->await_ack == resp)
		ch->await_ack = NULL;
	tv_tensor_unref(resp->tensor);
	tv_tensor_unref(resp->source);
	if (resp->has_clone)
		tv_pool_free(e->pool, &resp->clone);
	assert(e->stats.live_responses > 0);
	e->stats.live_responses--;
	tv__name_free(resp->name, resp->name_buf);
	tv__fl_free(&e->free_responses, resp);
}

static void response_send_error(struct tv_response *resp,
				const struct tv_status *st)
{
	resp->status = *st;
	tv_tensor_unref(resp->tensor);
	resp->tensor = NULL;
	resp->tx.type = TV_MSG_ERROR_STATUS;
	resp->state = TV_RESP_QUEUED_MSG;
	tv__channel_enqueue(resp->ch, &resp->tx);
}

static void response_fail(struct tv_response *resp, enum tv_code code,
			  const char *what, int err)
{
	struct tv_status st;

	tv_status_set(&st, code, "sender node %u: %s for tensor '%s': %s",
		      resp->ch->engine->cfg.node_id, what, resp->name,
		      strerror(-err));
	response_send_error(resp, &st);
}

/* Copy len bytes into a registered clone (the "copy to CPU" / clone). */
static int response_clone(struct tv_response *resp, const void *src,
			  size_t len)
{
	int ret = tv_pool_alloc(resp->ch->engine->pool, len, &resp->clone);

	if (ret)
		return ret;
	memcpy(resp->clone.addr, src, len);
	resp->has_clone = true;
	return 0;
}

static int response_serialize(struct tv_response *resp, struct tv_tensor *t)
{
	struct tv_engine *e = resp->ch->engine;
	size_t size, len;
	int ret;

	ret = tv_proto_packed_size(&t->shape, t->strings, t->num_elements,
				   &size);
	if (ret)
		return ret;
	ret = tv_pool_alloc(e->pool, size ? size : 1, &resp->clone);
	if (ret)
		return ret;
	resp->has_clone = true;
	ret = tv_proto_pack(&t->shape, t->strings, t->num_elements,
			    resp->clone.addr, resp->clone.size_bytes, &len);
	if (ret)
		return ret;
	assert(len == size);
	resp->meta.tensor_bytes = len;
	return 0;
}

/*
 * Work out what goes on the wire: the tensor's own buffer when it is in
 * registered memory (kept with a reference), else a registered copy.
 */
static int response_prepare(struct tv_response *resp, struct tv_tensor *t)
{
	struct tv_engine *e = resp->ch->engine;
	uint32_t lkey, rkey;

	resp->meta.dtype = t->dtype;
	tv__shape_copy(&resp->meta.shape, &t->shape);
	resp->meta.is_dead = t->is_dead;
	resp->meta.tensor_bytes = t->size_bytes;
	if (t->is_dead || (t->dtype != TV_DT_STRING && !t->size_bytes))
		return 0;
	if (t->dtype == TV_DT_STRING)
		return response_serialize(resp, t);
	if (t->mem == TV_MEM_POOL ||
	    (t->mem == TV_MEM_WRAPPED &&
	     !tv_pool_lookup(e->pool, t->data, t->size_bytes, &lkey, &rkey))) {
		tv_tensor_ref(t);
		resp->tensor = t;
		return 0;
	}
	/* Device memory, or host memory nobody registered (never lkey 0). */
	return response_clone(resp, t->data, t->size_bytes);
}

static void response_source(struct tv_response *resp, uint64_t *addr_p,
			    uint32_t *lkey_p)
{
	uint32_t rkey;

	if (resp->has_clone) {
		*addr_p = (uint64_t)(uintptr_t)resp->clone.addr;
		*lkey_p = resp->clone.lkey;
	} else if (resp->tensor) {
		*addr_p = (uint64_t)(uintptr_t)resp->tensor->data;
		*lkey_p = resp->tensor->buf.lkey;
		if (resp->tensor->mem == TV_MEM_WRAPPED)
			tv_pool_lookup(resp->ch->engine->pool,
				       resp->tensor->data,
				       resp->tensor->size_bytes, lkey_p, &rkey);
	} else {
		*addr_p = 0;
		*lkey_p = 0;
	}
}

/* resp's write was posted (ret 0, an ACK rode on it or not) or failed. */
static void response_write_posted(struct tv_response *resp, int ret,
				  bool rode)
{
	struct tv_engine *e = resp->ch->engine;

	if (ret) {
		tv__channel_fail(resp->ch, TV_UNAVAILABLE,
				 "posting the write of '%s' failed: %s",
				 resp->name, strerror(-ret));
		return;
	}
	tv__channel_write_posted(resp->ch, resp, resp->meta.tensor_bytes,
				 rode);
	if (resp->tensor)
		e->stats.zero_copy_writes++;
	else if (resp->has_clone)
		e->stats.staged_writes++;
}

static void response_write(struct tv_response *resp)
{
	uint64_t addr;
	uint32_t lkey;
	bool rode = false;
	int ret;

	assert(resp->meta.tensor_bytes <= resp->dst_bytes);
	response_source(resp, &addr, &lkey);
	resp->state = TV_RESP_WRITING;
	ret = tv__channel_post_write(resp->ch, resp->index, resp->dst_addr,
				     resp->dst_rkey, addr, lkey,
				     resp->meta.tensor_bytes, &rode);
	response_write_posted(resp, ret, rode);
}

static bool response_meta_current(const struct tv_response *resp)
{
	const struct tv_engine *e = resp->ch->engine;

	/* Validation needs the checksum, which only META_DATA_UPDATE carries. */
	return resp->req_meta_valid && !e->cfg.validate_checksum &&
	       tv_meta_equal(&resp->req_meta, &resp->meta) &&
	       resp->meta.tensor_bytes <= resp->dst_bytes;
}

/* The tensor (or a published error) is here: answer the request. */
static void response_process(struct tv_response *resp, struct tv_tag *tag)
{
	struct tv_engine *e = resp->ch->engine;
	uint64_t addr;
	uint32_t lkey;
	int ret;

	if (!tag->tensor) {
		resp->from_error = true;
		response_send_error(resp, &tag->status);
		return;
	}
	/* Kept until the write is done: a reset gives it back to the table. */
	tv_tensor_ref(tag->tensor);
	resp->source = tag->tensor;
	ret = response_prepare(resp, tag->tensor);
	if (ret) {
		response_fail(resp, ret == -ENOMEM ? TV_RESOURCE_EXHAUSTED :
						     TV_INTERNAL,
			      "preparing the send", ret);
		return;
	}
	if (response_meta_current(resp)) {
		response_write(resp);
		return;
	}
	/* First time or changed: keep a private copy until RE_REQUEST. */
	if (resp->tensor) {
		ret = response_clone(resp, resp->tensor->data,
				     resp->meta.tensor_bytes);
		if (ret) {
			response_fail(resp, TV_RESOURCE_EXHAUSTED,
				      "cloning the tensor", ret);
			return;
		}
		tv_tensor_unref(resp->tensor);
		resp->tensor = NULL;
	}
	/* Empty tensors too: the receiver checks every write it gets. */
	if (e->cfg.validate_checksum) {
		response_source(resp, &addr, &lkey);
		resp->checksum = tv__checksum((const void *)(uintptr_t)addr,
					      resp->meta.tensor_bytes);
	}
	resp->tx.type = TV_MSG_META_DATA_UPDATE;
	resp->state = TV_RESP_QUEUED_MSG;
	tv__channel_enqueue(resp->ch, &resp->tx);
}

static uint64_t tag_hash(uint64_t step_id, const char *name, size_t len)
{
	return tv_hash_key(step_id, name, len);
}

/* What the request brought, but its name (set before: it may allocate). */
static void response_fill(struct tv_response *resp, struct tv_channel *ch,
			  const struct tv_msg *msg)
{
	resp->ch = ch;
	resp->name_len = msg->name_len;
	resp->index = msg->request_index;
	resp->step_id = msg->step_id;
	resp->req_meta_valid = msg->meta_valid;
	tv__meta_copy(&resp->req_meta, &msg->meta);
	resp->dst_addr = msg->remote_addr;
	resp->dst_rkey = msg->rkey;
	resp->dst_bytes = msg->remote_bytes;
	resp->tx.kind = TV_TX_RESPONSE;
	tv_list_init(&resp->tx.link);
	tv_hmap_insert(&ch->responses, &resp->hnode, tv_hash_u64(resp->index));
	ch->engine->stats.live_responses++;
}

/*
 * The request's cached metadata is t's, and t sits in registered memory
 * that fits the destination: response_process() would write it straight
 * away.  Strings, dead and empty tensors, wrapped memory and validation
 * take the general path.  On a request's view: the bytes compared are
 * the decoder's fields (tv__wire_peek_request), so equal to t's valid
 * metadata means the decoder takes them as they are.
 */
static bool response_view_ok(const struct tv_channel *ch,
			     const struct tv__wire_req_view *v,
			     const struct tv_tensor *t)
{
	uint32_t i;

	if (!t || t->mem != TV_MEM_POOL || !t->size_bytes || t->is_dead ||
	    t->dtype == TV_DT_STRING || ch->engine->cfg.validate_checksum ||
	    v->dtype != (uint32_t)t->dtype || v->is_dead ||
	    v->tensor_bytes != t->size_bytes ||
	    t->size_bytes > v->remote_bytes || v->rank != t->shape.rank)
		return false;
	for (i = 0; i < v->rank; i++)
		if (tv__wire_view_dim(v, i) != (uint64_t)t->shape.dims[i])
			return false;
	return true;
}

/* A response object named name, or NULL (out of memory). */
static struct tv_response *response_new(struct tv_engine *e,
					 const char *name, size_t len)
{
	/* Its req_meta is copied from the request: only meta needs clearing. */
	struct tv_response *resp = TV__FL_ALLOC_UPTO(
		&e->free_responses, struct tv_response, req_meta, status);

	if (!resp)
		return NULL;
	tv__meta_clear(&resp->meta);
	if (tv__name_set(&resp->name, resp->name_buf, name, len)) {
		tv__fl_free(&e->free_responses, resp);
		return NULL;
	}
	return resp;
}

/*
 * The decoded form of the request behind v, whose name is tag's and whose
 * metadata is its tensor's (response_view_ok): what the decoder would give
 * (tests/wire/peek_oracle.h pins this), from our own copies of the name and
 * the dims, so nothing here reads the rx buffer again.
 */
static void response_early_msg(struct tv_msg *msg,
			       const struct tv__wire_req_view *v,
			       const struct tv_tag *tag)
{
	const struct tv_tensor *t = tag->tensor;

	tv__wire_msg_reset(msg);
	msg->type = TV_MSG_TENSOR_REQUEST;
	msg->step_id = v->step_id;
	msg->request_index = v->request_index;
	msg->remote_addr = v->remote_addr;
	msg->rkey = v->rkey;
	msg->remote_bytes = v->remote_bytes;
	msg->meta_valid = 1;
	msg->meta.dtype = t->dtype;
	tv__shape_copy(&msg->meta.shape, &t->shape);
	msg->meta.tensor_bytes = t->size_bytes;
	msg->name_len = tag->name_len;
	tv__name_copy(msg->name, tag->name, tag->name_len);
}

/*
 * The fetch path with cached metadata, before anything is decoded or
 * recorded: if buf holds a well-formed request whose index is free and
 * whose tensor response_process() would write straight away, allocate the
 * response and post the write.  The peer waits for the write, not for our
 * records.  Then msg is the request as the decoder would give it, and
 * tv__response_on_request() keeps the books.  The write carries the ACK,
 * after which the peer may write into buf: nothing reads buf after the
 * post.  What can fail (the allocation, the post) is drawn in the same
 * order as on the general path, so a fault plan decides the same.
 * false: not such a request, nothing done; decode it.
 */
bool tv__response_early(struct tv_channel *ch, const uint8_t *buf, size_t len,
			struct tv_msg *msg)
{
	struct tv_engine *e = ch->engine;
	struct tv__wire_req_view v;
	struct tv_tensor *t;
	struct tv_tag *tag;

	assert(!ch->early.tag);
	if (ch->failed || !tv__wire_peek_request(buf, len, &v))
		return false;
	tag = tv__tag_find(e, v.step_id, v.name, v.name_len);
	if (!tag || !response_view_ok(ch, &v, tag->tensor) ||
	    tv__response_find(ch, v.request_index))
		return false;
	ch->early.tag = tag;
	ch->early.resp = response_new(e, v.name, v.name_len);
	if (ch->early.resp) {
		t = tag->tensor;
		ch->early.rode = false;
		ch->early.ret = tv__channel_post_write(
			ch, v.request_index, v.remote_addr, v.rkey,
			(uint64_t)(uintptr_t)t->data, t->buf.lkey,
			t->size_bytes, &ch->early.rode);
	}
	response_early_msg(msg, &v, tag);
	return true;
}

static void response_no_memory(struct tv_channel *ch)
{
	/* Cannot even answer: the request would hang, so fail loudly. */
	tv__channel_fail(ch, TV_RESOURCE_EXHAUSTED,
			 "no memory for a response to node %u", ch->peer_id);
}

/* The books of an early answer: what response_process() would record. */
static void response_early_books(struct tv_channel *ch,
				 const struct tv_msg *msg)
{
	struct tv_engine *e = ch->engine;
	struct tv_response *resp = ch->early.resp;
	struct tv_tag *tag = ch->early.tag;
	int prep;

	ch->early.tag = NULL;
	ch->early.resp = NULL;
	if (!resp) {
		response_no_memory(ch);
		return;
	}
	/* The tag the peek found: nothing ran since that could take it. */
	assert(tag->step_id == msg->step_id && tag->name_len == msg->name_len);
	tv__tag_remove(e, tag);
	response_fill(resp, ch, msg);
	/* Kept until the write is done: a reset gives it back to the table. */
	tv_tensor_ref(tag->tensor);
	resp->source = tag->tensor;
	/* Registered memory: a reference to t, no copy, nothing to fail. */
	prep = response_prepare(resp, tag->tensor);
	assert(!prep && resp->tensor == tag->tensor);
	assert(response_meta_current(resp));
	(void)prep;
	resp->state = TV_RESP_WRITING;
	response_write_posted(resp, ch->early.ret, ch->early.rode);
	e->stats.fast_responses++;
	tv__tag_free(e, tag);
}

void tv__response_on_request(struct tv_channel *ch, const struct tv_msg *msg)
{
	struct tv_engine *e = ch->engine;
	struct tv_response *resp;
	struct tv_tag *tag;

	if (ch->early.tag) {
		response_early_books(ch, msg);
		return;
	}
	if (tv__response_find(ch, msg->request_index)) {
		tv__channel_fail(ch, TV_DATA_LOSS,
				 "node %u reused live request index %u",
				 ch->peer_id, msg->request_index);
		return;
	}
	resp = response_new(e, msg->name, msg->name_len);
	if (!resp) {
		response_no_memory(ch);
		return;
	}
	response_fill(resp, ch, msg);
	tag = tv__tag_take(e, msg->step_id, msg->name, msg->name_len);
	if (tag) {
		response_process(resp, tag);
		tv__tag_free(e, tag);
		return;
	}
	resp->state = TV_RESP_WAIT_TENSOR;
	tv_hmap_insert(&e->tag_waiters, &resp->tag_hnode,
		       tag_hash(resp->step_id, resp->name, resp->name_len));
	e->stats.unmatched_requests++;
}

bool tv__response_match(struct tv_engine *e, struct tv_tag *tag)
{
	struct tv_hnode *node = tv_hmap_first(
		&e->tag_waiters, tag_hash(tag->step_id, tag->name, tag->name_len));

	for (; node; node = tv_hmap_next_same(node)) {
		struct tv_response *resp =
			TV_CONTAINER_OF(node, struct tv_response, tag_hnode);

		if (resp->step_id != tag->step_id ||
		    resp->name_len != tag->name_len ||
		    !tv__bytes_equal(resp->name, tag->name, tag->name_len))
			continue;
		tv_hmap_remove(&e->tag_waiters, &resp->tag_hnode);
		assert(e->stats.unmatched_requests > 0);
		e->stats.unmatched_requests--;
		resp->state = TV_RESP_NEW;
		response_process(resp, tag);
		tv__channel_kick(resp->ch);
		return true;
	}
	return false;
}

void tv__response_on_re_request(struct tv_channel *ch,
				const struct tv_msg *msg)
{
	struct tv_response *resp = tv__response_find(ch, msg->request_index);
	struct tv_status st;

	if (!resp || resp->state != TV_RESP_WAIT_RE_REQ ||
	    resp->step_id != msg->step_id) {
		tv__channel_fail(ch, TV_DATA_LOSS,
				 "TENSOR_RE_REQUEST from node %u for index %u "
				 "that awaits none", ch->peer_id,
				 msg->request_index);
		return;
	}
	resp->dst_addr = msg->remote_addr;
	resp->dst_rkey = msg->rkey;
	resp->dst_bytes = msg->remote_bytes;
	if (resp->meta.tensor_bytes <= resp->dst_bytes) {
		response_write(resp);
		return;
	}
	if (!resp->dst_bytes) {
		/* The receiver could not allocate and let go. */
		tv__response_free(resp);
		return;
	}
	tv_status_set(&st, TV_INTERNAL,
		      "receiver advertised %llu bytes for the %llu-byte tensor "
		      "'%s'; refusing to write past its buffer",
		      (unsigned long long)resp->dst_bytes,
		      (unsigned long long)resp->meta.tensor_bytes, resp->name);
	response_send_error(resp, &st);
}

void tv__response_encode(struct tv_response *resp, struct tv_msg *msg)
{
	msg->type = resp->tx.type;
	memcpy(msg->name, resp->name, resp->name_len);
	msg->name[resp->name_len] = '\0';
	msg->name_len = resp->name_len;
	msg->step_id = resp->step_id;
	msg->request_index = resp->index;
	if (msg->type == TV_MSG_ERROR_STATUS) {
		msg->status = resp->status;
		return;
	}
	assert(msg->type == TV_MSG_META_DATA_UPDATE);
	msg->meta_valid = 1;
	tv__meta_copy(&msg->meta, &resp->meta);
	msg->has_checksum = resp->ch->engine->cfg.validate_checksum;
	msg->checksum = resp->checksum;
}

void tv__response_msg_posted(struct tv_response *resp)
{
	if (resp->tx.type == TV_MSG_ERROR_STATUS) {
		/* Done at the ACK: if it is lost, the error is published again. */
		assert(!resp->ch->await_ack);
		resp->state = TV_RESP_ERROR_SENT;
		resp->ch->await_ack = resp;
		return;
	}
	resp->state = TV_RESP_WAIT_RE_REQ;
}

void tv__response_acked(struct tv_channel *ch)
{
	struct tv_response *resp = ch->await_ack;

	if (!resp)
		return;
	assert(resp->state == TV_RESP_ERROR_SENT);
	tv__response_free(resp);
}

/*
 * A response that will not complete: what it took from the tag table goes
 * back, so the request, sent again after the reconnect, finds it.
 */
static void response_republish(struct tv_response *resp)
{
	struct tv_engine *e = resp->ch->engine;

	if (e->destroying || !tv__channel_retries(resp->ch))
		return;
	if (resp->source)
		tv__tag_republish(e, resp->step_id, resp->name, resp->name_len,
				  resp->source, NULL);
	else if (resp->from_error)
		tv__tag_republish(e, resp->step_id, resp->name, resp->name_len,
				  NULL, &resp->status);
}

void tv__response_write_done(struct tv_response *resp,
			     enum tv_vf_wc_status status)
{
	/* Success or flush: the HCA is done with the source buffer. */
	assert(resp->state == TV_RESP_WRITING);
	if (status != TV_WC_SUCCESS)
		response_republish(resp);
	tv__response_free(resp);
}

void tv__response_drop_all(struct tv_channel *ch, bool writing_too)
{
	struct tv_hnode *node;
	struct tv_response *keep = NULL;

	/*
	 * Writes still posted keep their source until their (flush)
	 * completion: park them aside, then put them back.
	 */
	while ((node = tv_hmap_any(&ch->responses))) {
		struct tv_response *resp =
			TV_CONTAINER_OF(node, struct tv_response, hnode);

		if (resp->state == TV_RESP_WRITING && !writing_too) {
			tv_hmap_remove(&ch->responses, node);
			node->next = keep ? &keep->hnode : NULL;
			keep = resp;
			continue;
		}
		response_republish(resp);
		tv__response_free(resp);
	}
	while (keep) {
		struct tv_hnode *next = keep->hnode.next;

		tv_hmap_insert(&ch->responses, &keep->hnode,
			       tv_hash_u64(keep->index));
		keep = next ? TV_CONTAINER_OF(next, struct tv_response, hnode)
			    : NULL;
	}
}
