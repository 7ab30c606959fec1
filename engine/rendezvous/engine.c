/*
 * The engine: configuration, lifetime, the tag table, the public send and
 * receive calls, and progress.  It reads time and touches hardware only
 * through the verbs facade.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

static void *default_device_alloc(void *ctx, size_t size_bytes)
{
	void *p = NULL;

	/* "Device" memory the engine never registers: it needs a proxy. */
	if (tv__memalign(&p, 64, size_bytes))
		return NULL;
	return p;
}

static void default_device_free(void *ctx, void *ptr)
{
	free(ptr);
}

/* What one receive may make us allocate and pin (engine.h). */
#define TV__MAX_RECV_BYTES_DEFAULT (4ull << 30)

void tv_engine_config_default(struct tv_engine_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->queue_depth = 1024; /* RDMA_QP_QUEUE_DEPTH's default */
	cfg->pool_block_bytes = 4u << 20;
	tv_vf_connect_cfg_default(&cfg->connect);
	cfg->device_alloc = default_device_alloc;
	cfg->device_free = default_device_free;
	cfg->max_recv_bytes = TV__MAX_RECV_BYTES_DEFAULT;
	/* A request message and a 64-byte tensor fit. */
	cfg->max_inline_bytes = 128;
	cfg->ack_timeout_ns = 1000ull * 1000 * 1000;
	cfg->max_retries = 3;
}

static int engine_check_config(const struct tv_engine_config *cfg)
{
	if (cfg->queue_depth < 4 || cfg->queue_depth > 65536)
		return -EINVAL;
	if (!cfg->pool_block_bytes)
		return -EINVAL;
	if (!cfg->device_alloc != !cfg->device_free)
		return -EINVAL;
	return 0;
}

void tv_engine_fault_points_live(void)
{
	tv__fiu_live = true;
}

int tv_engine_create(struct tv_vf_device *dev,
		     const struct tv_engine_config *cfg,
		     struct tv_engine **engine_p)
{
	struct tv_engine *e;
	int ret;

	if (!dev || !cfg || !engine_p)
		return -EINVAL;
	/* fiu-run's preload library enables points from these. */
	if (getenv("FIU_ENABLE") || getenv("FIU_CTRL_FIFO"))
		tv_engine_fault_points_live();
	ret = engine_check_config(cfg);
	if (ret)
		return ret;
	e = tv__calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cfg = *cfg;
	if (!e->cfg.max_recv_bytes)
		e->cfg.max_recv_bytes = TV__MAX_RECV_BYTES_DEFAULT;
	if (!e->cfg.device_alloc) {
		e->cfg.device_alloc = default_device_alloc;
		e->cfg.device_free = default_device_free;
	}
	e->dev = dev;
	tv_list_init(&e->deadlines);
	ret = tv_hmap_init(&e->tags, 256);
	if (ret)
		goto err_free;
	ret = tv_hmap_init(&e->tag_waiters, 256);
	if (ret)
		goto err_tags;
	ret = tv_vf_alloc_pd(dev, &e->pd);
	if (ret)
		goto err_waiters;
	ret = tv_pool_create(e->pd, cfg->pool_block_bytes,
			     TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE,
			     &e->pool);
	if (ret)
		goto err_pd;
	*engine_p = e;
	return 0;

err_pd:
	tv_vf_dealloc_pd(e->pd);
err_waiters:
	tv_hmap_fini(&e->tag_waiters);
err_tags:
	tv_hmap_fini(&e->tags);
err_free:
	free(e);
	return ret;
}

int tv_engine_destroy(struct tv_engine *e)
{
	struct tv_hnode *node;
	uint32_t i;

	if (!e)
		return -EINVAL;
	if (!e->destroying) {
		e->destroying = true;
		for (i = 0; i < e->nchannels; i++)
			if (e->channels[i])
				tv__channel_destroy(e->channels[i]);
		assert(!e->tag_waiters.count);
		while ((node = tv_hmap_any(&e->tags))) {
			tv_hmap_remove(&e->tags, node);
			tv__tag_free(e, TV_CONTAINER_OF(node, struct tv_tag,
						     hnode));
			e->stats.unmatched_sends--;
		}
	}
	/* The caller still holds tensors: they need the pool, so wait. */
	if (e->stats.live_tensors)
		return -EBUSY;
	tv_pool_destroy(e->pool);
	tv_vf_dealloc_pd(e->pd);
	tv_hmap_fini(&e->tag_waiters);
	tv_hmap_fini(&e->tags);
	tv__fl_fini(&e->free_requests);
	tv__fl_fini(&e->free_responses);
	tv__fl_fini(&e->free_tensors);
	tv__fl_fini(&e->free_tags);
	free(e->channels);
	free(e);
	return 0;
}

void tv__emit(struct tv_engine *e, enum tv_engine_event_kind kind,
	      uint32_t peer, struct tv_engine_event *ev)
{
	if (!e->cfg.observe)
		return;
	/* Filled in where it is: a copy is 72 bytes on the fetch path. */
	ev->kind = kind;
	ev->node = e->cfg.node_id;
	ev->peer = peer;
	e->cfg.observe(e->cfg.observe_ctx, ev);
}

/* ---- the tag table ---------------------------------------------------- */

static bool tag_is(const struct tv_tag *tag, uint64_t step_id,
		   const char *name, size_t len)
{
	return tag->step_id == step_id && tag->name_len == len &&
	       tv__bytes_equal(tag->name, name, len);
}

static TV__INLINE_HOT struct tv_tag *
tag_find(struct tv_engine *e, uint64_t step_id, const char *name, size_t len)
{
	struct tv_hnode *node =
		tv_hmap_first(&e->tags, tv_hash_key(step_id, name, len));

	for (; node; node = tv_hmap_next_same(node)) {
		struct tv_tag *tag = TV_CONTAINER_OF(node, struct tv_tag, hnode);

		if (tag_is(tag, step_id, name, len))
			return tag;
	}
	return NULL;
}

/* The tag, left in the table. */
struct tv_tag *tv__tag_find(struct tv_engine *e, uint64_t step_id,
			    const char *name, size_t name_len)
{
	return tag_find(e, step_id, name, name_len);
}

struct tv_tag *tv__tag_take(struct tv_engine *e, uint64_t step_id,
			    const char *name, size_t name_len)
{
	struct tv_tag *tag = tag_find(e, step_id, name, name_len);

	if (tag)
		tv__tag_remove(e, tag);
	return tag;
}

/* Out of the table (tv__tag_find's): the caller's to free. */
void tv__tag_remove(struct tv_engine *e, struct tv_tag *tag)
{
	tv_hmap_remove(&e->tags, &tag->hnode);
	assert(e->stats.unmatched_sends > 0);
	e->stats.unmatched_sends--;
}

void tv__tag_free(struct tv_engine *e, struct tv_tag *tag)
{
	tv_tensor_unref(tag->tensor);
	tv__name_free(tag->name, tag->name_buf);
	tv__fl_free(&e->free_tags, tag);
}

static int check_name(const char *name, size_t *len_p)
{
	size_t len;

	if (!name)
		return -EINVAL;
	len = tv__text_len(name, TV_NAME_MAX + 1);
	if (!len)
		return -EINVAL;
	if (len > TV_NAME_MAX)
		return -ENAMETOOLONG;
	*len_p = len;
	return 0;
}

/* Publish a tensor or an error; a waiting request takes it at once. */
static int engine_put(struct tv_engine *e, uint64_t step_id, const char *name,
		      size_t len, struct tv_tensor *t,
		      const struct tv_status *st)
{
	struct tv_tag *tag;

	if (tag_find(e, step_id, name, len))
		return -EEXIST;
	tag = TV__FL_ALLOC(&e->free_tags, struct tv_tag, status);
	if (!tag)
		return -ENOMEM;
	if (tv__name_set(&tag->name, tag->name_buf, name, len)) {
		tv__fl_free(&e->free_tags, tag);
		return -ENOMEM;
	}
	tag->name_len = (uint16_t)len;
	tag->step_id = step_id;
	if (t)
		tv_tensor_ref(t);
	tag->tensor = t;
	if (st)
		tag->status = *st;
	if (tv__response_match(e, tag)) {
		tv__tag_free(e, tag);
		return 0;
	}
	tv_hmap_insert(&e->tags, &tag->hnode, tv_hash_key(step_id, name, len));
	e->stats.unmatched_sends++;
	return 0;
}

static int engine_publish(struct tv_engine *e, uint64_t step_id,
			  const char *name, struct tv_tensor *t,
			  const struct tv_status *st)
{
	size_t len;
	int ret;

	ret = check_name(name, &len);
	if (ret)
		return ret;
	return engine_put(e, step_id, name, len, t, st);
}

void tv__tag_republish(struct tv_engine *e, uint64_t step_id,
		       const char *name, size_t name_len, struct tv_tensor *t,
		       const struct tv_status *st)
{
	/* Best effort: without memory the retried request times out. */
	(void)engine_put(e, step_id, name, name_len, t, st);
}

int tv_engine_send(struct tv_engine *e, uint64_t step_id, const char *name,
		   struct tv_tensor *t)
{
	if (!e || !t || t->engine != e)
		return -EINVAL;
	return engine_publish(e, step_id, name, t, NULL);
}

int tv_engine_send_error(struct tv_engine *e, uint64_t step_id,
			 const char *name, enum tv_code code,
			 const char *message)
{
	struct tv_status st;

	if (!e || code == TV_OK || code > TV_CODE_MAX || !message)
		return -EINVAL;
	tv_status_set(&st, code, "%s", message);
	return engine_publish(e, step_id, name, NULL, &st);
}

/* ---- receiving -------------------------------------------------------- */

int tv_engine_recv_async(struct tv_engine *e, struct tv_channel *ch,
			 uint64_t step_id, const char *name,
			 enum tv_placement place, tv_recv_done_fn done,
			 void *arg)
{
	size_t len;
	int ret;

	if (!e || !ch || ch->engine != e || !done ||
	    (place != TV_PLACE_HOST && place != TV_PLACE_DEVICE))
		return -EINVAL;
	ret = check_name(name, &len);
	if (ret)
		return ret;
	return tv__request_start(ch, step_id, name, len, place, done, arg);
}

struct recv_wait {
	bool done;
	struct tv_status status;
	struct tv_tensor *tensor;
};

static void recv_wait_done(void *arg, const struct tv_status *st,
			   struct tv_tensor *t)
{
	struct recv_wait *w = arg;

	w->done = true;
	w->status = *st;
	w->tensor = t;
}

static void recv_orphan_done(void *arg, const struct tv_status *st,
			     struct tv_tensor *t)
{
	tv_tensor_unref(t);
}

/* A timed-out blocking receive lives on; its result is dropped. */
static void recv_orphan(struct tv_channel *ch, struct recv_wait *w)
{
	struct tv_hnode *node = NULL;
	struct tv_list *l;

	for (l = ch->credit_wait.next; l != &ch->credit_wait; l = l->next) {
		struct tv_request *req =
			TV_CONTAINER_OF(l, struct tv_request, wait_link);

		if (req->arg == w)
			req->done = recv_orphan_done;
	}
	while ((node = tv_hmap_iter(&ch->requests, node))) {
		struct tv_request *req =
			TV_CONTAINER_OF(node, struct tv_request, hnode);

		if (req->arg == w)
			req->done = recv_orphan_done;
	}
}

int tv_engine_recv(struct tv_engine *e, struct tv_channel *ch,
		   uint64_t step_id, const char *name, enum tv_placement place,
		   uint64_t timeout_ns, struct tv_status *status_p,
		   struct tv_tensor **tensor_p)
{
	struct recv_wait w = { 0 };
	uint64_t deadline;
	int ret;

	if (!status_p || !tensor_p)
		return -EINVAL;
	ret = tv_engine_recv_async(e, ch, step_id, name, place,
				   recv_wait_done, &w);
	if (ret)
		return ret;
	deadline = tv_vf_now_ns(e->dev) + timeout_ns;
	while (!w.done) {
		ret = tv_engine_progress(e);
		if (ret < 0 || w.done)
			break;
		ret = tv_vf_wait(e->dev, deadline);
		if (ret && !w.done)
			break;
	}
	if (!w.done) {
		recv_orphan(ch, &w);
		return ret ? ret : -ETIMEDOUT;
	}
	*status_p = w.status;
	*tensor_p = w.tensor;
	return 0;
}

static uint64_t earliest(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/*
 * Whether a timer pass has anything to look at: what tv__request_expire()
 * and tv__channel_timers() act on.  Without it the pass reads the clock
 * for nothing, on every spin of an idle busy-polling loop (0.1 us under
 * emulation, a tenth of such a spin).
 */
static bool engine_timers_armed(const struct tv_engine *e)
{
	uint32_t i;

	if (!tv_list_empty(&e->deadlines))
		return true;
	for (i = 0; i < e->nchannels; i++) {
		const struct tv_channel *ch = e->channels[i];

		if (ch && (ch->tx_remote_busy || ch->msg_stamp_pending ||
			   ch->reconnect_pending || ch->fail_pending))
			return true;
	}
	return false;
}

/* Deadlines: ACK timeouts, receive timeouts, reconnections; re-arm. */
static void engine_timers(struct tv_engine *e)
{
	uint64_t now, next;
	uint32_t i;

	if ((!e->cfg.ack_timeout_ns && !e->cfg.recv_timeout_ns &&
	     !e->cfg.reconnect) || !engine_timers_armed(e))
		return;
	now = tv_vf_now_ns(e->dev);
	next = tv__request_expire(e, now);
	for (i = 0; i < e->nchannels; i++)
		if (e->channels[i])
			next = earliest(next,
					tv__channel_timers(e->channels[i], now));
	if (next)
		tv_vf_wake_at(e->dev, next);
}

int tv_engine_progress(struct tv_engine *e)
{
	uint32_t i;
	int n, total = 0;

	e->in_progress = true;
	for (i = 0; i < e->nchannels; i++) {
		struct tv_channel *ch = e->channels[i];

		if (!ch)
			continue;
		n = tv__channel_progress(ch);
		if (n > 0)
			total += n;
	}
	engine_timers(e);
	e->in_progress = false;
	return total;
}

void tv_engine_stats(const struct tv_engine *e,
		     struct tv_engine_stats *stats_p)
{
	struct tv_pool_stats ps;

	*stats_p = e->stats;
	tv_pool_stats(e->pool, &ps);
	stats_p->pool_blocks = ps.blocks;
	stats_p->pool_bytes_registered = ps.bytes_registered;
	stats_p->pool_live_bytes = ps.live_bytes;
	stats_p->mr_registrations = e->stats.mr_registrations + ps.reg_calls;
}

uint32_t tv_engine_node_id(const struct tv_engine *e)
{
	return e->cfg.node_id;
}

struct tv_vf_device *tv_engine_device(struct tv_engine *e)
{
	return e->dev;
}
