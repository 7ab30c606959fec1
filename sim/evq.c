/*
 * The event queue: a binary min-heap of (time, tiebreak, seq) keys pointing
 * into a pool of event records recycled through a free list, so that
 * scheduling an event allocates nothing once the pool is warm.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_priv.h"

#define SIM_NO_FREE UINT32_MAX

int sim_evq_init(struct sim_evq *q, uint32_t cap)
{
	assert(cap > 0);
	memset(q, 0, sizeof(*q));
	q->heap = calloc(cap, sizeof(*q->heap));
	if (!q->heap)
		goto err_heap;
	q->pool = calloc(cap, sizeof(*q->pool));
	if (!q->pool)
		goto err_pool;
	q->cap = cap;
	q->pool_cap = cap;
	for (uint32_t i = 0; i < cap; i++)
		q->pool[i].next_free = i + 1 < cap ? i + 1 : SIM_NO_FREE;
	q->free_head = 0;
	return 0;

err_pool:
	free(q->heap);
err_heap:
	return -ENOMEM;
}

void sim_evq_fini(struct sim_evq *q)
{
	free(q->pool);
	free(q->heap);
	memset(q, 0, sizeof(*q));
}

/* Double heap and pool together: every live event has one heap entry. */
static int evq_grow(struct sim_evq *q)
{
	uint32_t ncap = q->cap * 2;
	struct sim_heap_ent *heap;
	struct sim_ev *pool;

	if (ncap <= q->cap)
		return -ENOMEM;
	heap = realloc(q->heap, (size_t)ncap * sizeof(*heap));
	if (!heap)
		return -ENOMEM;
	q->heap = heap;
	pool = realloc(q->pool, (size_t)ncap * sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	q->pool = pool;
	for (uint32_t i = q->pool_cap; i < ncap; i++)
		pool[i].next_free = i + 1 < ncap ? i + 1 : q->free_head;
	q->free_head = q->pool_cap;
	q->pool_cap = ncap;
	q->cap = ncap;
	return 0;
}

static inline bool ent_less(const struct sim_heap_ent *a,
			    const struct sim_heap_ent *b)
{
	if (a->time_ns != b->time_ns)
		return a->time_ns < b->time_ns;
	if (a->tiebreak != b->tiebreak)
		return a->tiebreak < b->tiebreak;
	return a->seq < b->seq;
}

static void sift_up(struct sim_heap_ent *h, uint32_t i)
{
	struct sim_heap_ent e = h[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (!ent_less(&e, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = e;
}

static void sift_down(struct sim_heap_ent *h, uint32_t len, uint32_t i)
{
	struct sim_heap_ent e = h[i];

	for (;;) {
		uint32_t child = 2 * i + 1;

		if (child >= len)
			break;
		if (child + 1 < len && ent_less(&h[child + 1], &h[child]))
			child++;
		if (!ent_less(&h[child], &e))
			break;
		h[i] = h[child];
		i = child;
	}
	h[i] = e;
}

int sim_evq_push(struct sim_evq *q, uint64_t time_ns, uint64_t tiebreak,
		 const struct sim_ev *ev)
{
	uint32_t idx;
	int ret;

	if (q->free_head == SIM_NO_FREE) {
		assert(q->len == q->cap);
		ret = evq_grow(q);
		if (ret)
			return ret;
	}
	idx = q->free_head;
	assert(idx < q->pool_cap);
	q->free_head = q->pool[idx].next_free;
	q->pool[idx] = *ev;
	q->pool[idx].next_free = SIM_NO_FREE;
	q->heap[q->len] = (struct sim_heap_ent){
		.time_ns = time_ns, .tiebreak = tiebreak,
		.seq = q->seq++, .idx = idx,
	};
	sift_up(q->heap, q->len);
	q->len++;
	return 0;
}

bool sim_evq_peek(const struct sim_evq *q, uint64_t *time_ns_p)
{
	if (!q->len)
		return false;
	*time_ns_p = q->heap[0].time_ns;
	return true;
}

bool sim_evq_pop(struct sim_evq *q, uint64_t *time_ns_p, struct sim_ev *ev_p)
{
	struct sim_heap_ent top;

	if (!q->len)
		return false;
	top = q->heap[0];
	q->len--;
	if (q->len) {
		q->heap[0] = q->heap[q->len];
		sift_down(q->heap, q->len, 0);
	}
	assert(top.idx < q->pool_cap);
	*ev_p = q->pool[top.idx];
	q->pool[top.idx].next_free = q->free_head;
	q->free_head = top.idx;
	*time_ns_p = top.time_ns;
	return true;
}
