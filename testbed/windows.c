/*
 * Advertised windows (workload.h): the memory each node told a peer it may
 * write (or read) under an index, checked against the simulator's
 * deliveries.  Open addressing on (node, peer, index); iteration is in
 * slot order, which depends on keys alone, never on addresses.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/workload.h>

struct slot {
	uint64_t key;              /* (node * nodes + peer + 1) << 32 | index */
	struct tv_tb_window win;
};

struct tv_tb_windows {
	uint32_t nodes;
	struct slot *slots;
	size_t cap;                /* a power of two */
	size_t used;
};

static uint64_t win_key(const struct tv_tb_windows *w, uint32_t node,
			uint32_t peer, uint32_t index)
{
	/* +1 keeps every key non-zero: 0 marks an empty slot. */
	return ((uint64_t)(node * w->nodes + peer) + 1) << 32 | index;
}

static size_t win_slot(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xFF51AFD7ED558CCDull;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

/* The slot of key, or of where it would go (an empty one). */
static struct slot *find_slot(struct slot *s, size_t cap, uint64_t key)
{
	size_t i;

	for (i = win_slot(key, cap); s[i].key && s[i].key != key;
	     i = (i + 1) & (cap - 1))
		;
	return &s[i];
}

int tv_tb_windows_create(uint32_t nodes, struct tv_tb_windows **w_p)
{
	struct tv_tb_windows *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->nodes = nodes;
	w->cap = 1024;
	w->slots = calloc(w->cap, sizeof(*w->slots));
	if (!w->slots) {
		free(w);
		return -ENOMEM;
	}
	*w_p = w;
	return 0;
}

void tv_tb_windows_destroy(struct tv_tb_windows *w)
{
	if (!w)
		return;
	free(w->slots);
	free(w);
}

static int grow(struct tv_tb_windows *w)
{
	size_t ncap = w->cap * 2;
	struct slot *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < w->cap; i++)
		if (w->slots[i].key)
			*find_slot(ns, ncap, w->slots[i].key) = w->slots[i];
	free(w->slots);
	w->slots = ns;
	w->cap = ncap;
	return 0;
}

int tv_tb_windows_open(struct tv_tb_windows *w, uint32_t node, uint32_t peer,
		       uint32_t index, const struct tv_tb_window *win)
{
	uint64_t key = win_key(w, node, peer, index);
	struct slot *s = find_slot(w->slots, w->cap, key);

	assert(node < w->nodes && peer < w->nodes);
	if (!s->key) {
		if ((w->used + 1) * 2 > w->cap) {
			if (grow(w))
				return -ENOMEM;
			s = find_slot(w->slots, w->cap, key);
		}
		w->used++;
	}
	s->key = key;
	s->win = *win;
	return 0;
}

struct tv_tb_window *tv_tb_windows_find(struct tv_tb_windows *w,
					uint32_t node, uint32_t peer,
					uint32_t index)
{
	struct slot *s = find_slot(w->slots, w->cap,
				   win_key(w, node, peer, index));

	return s->key ? &s->win : NULL;
}

/* node * nodes + peer of a slot's key. */
static uint64_t dir_of(const struct slot *s)
{
	return (s->key >> 32) - 1;
}

static void close_slot(struct slot *s, uint64_t seq)
{
	s->win.done = true;
	s->win.done_seq = seq;
}

void tv_tb_windows_close_pair(struct tv_tb_windows *w, uint32_t a, uint32_t b,
			      uint64_t seq)
{
	assert(a < w->nodes && b < w->nodes && a != b);
	for (size_t i = 0; i < w->cap; i++) {
		struct slot *s = &w->slots[i];

		if (s->key && !s->win.done &&
		    (dir_of(s) == a * w->nodes + b ||
		     dir_of(s) == b * w->nodes + a))
			close_slot(s, seq);
	}
}

void tv_tb_windows_close_node(struct tv_tb_windows *w, uint32_t node,
			      uint64_t seq)
{
	assert(node < w->nodes);
	for (size_t i = 0; i < w->cap; i++) {
		struct slot *s = &w->slots[i];

		if (s->key && !s->win.done && dir_of(s) / w->nodes == node)
			close_slot(s, seq);
	}
}

const struct tv_tb_window *tv_tb_windows_reused(const struct tv_tb_windows *w,
						uint32_t node,
						const struct tv_tb_window *e,
						uint32_t *index_p)
{
	for (size_t i = 0; i < w->cap; i++) {
		const struct slot *s = &w->slots[i];
		const struct tv_tb_window *o = &s->win;

		if (!s->key || o == e || o->rkey != e->rkey ||
		    dir_of(s) / w->nodes != node || o->open_seq <= e->done_seq)
			continue;
		if (o->addr < e->addr + e->length &&
		    e->addr < o->addr + o->length) {
			*index_p = (uint32_t)s->key;
			return o;
		}
	}
	return NULL;
}

bool tv_tb_window_holds(const struct tv_tb_window *e, uint64_t addr,
			uint64_t length, uint32_t rkey)
{
	if (length == 0)
		return true;
	return rkey == e->rkey && addr >= e->addr && length <= e->length &&
	       addr - e->addr <= e->length - length;
}
