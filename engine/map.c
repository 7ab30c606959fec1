/*
 * Intrusive chained hash table (see map.h).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

/* Inlined: names are hashed on every request and response. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "alloc.h"
#include "map.h"

static size_t bucket_of(const struct tv_hmap *map, uint64_t hash)
{
	return (size_t)(hash & (map->nbuckets - 1));
}

int tv_hmap_init(struct tv_hmap *map, size_t nbuckets_hint)
{
	size_t n = 16;

	while (n < nbuckets_hint && n < ((size_t)1 << 30))
		n <<= 1;
	map->buckets = tv__calloc(n, sizeof(*map->buckets));
	if (!map->buckets)
		return -ENOMEM;
	map->nbuckets = n;
	map->count = 0;
	return 0;
}

void tv_hmap_fini(struct tv_hmap *map)
{
	assert(map->count == 0);
	free(map->buckets);
	map->buckets = NULL;
	map->nbuckets = 0;
}

/* Double the table; on allocation failure keep the old one. */
static void hmap_grow(struct tv_hmap *map)
{
	size_t n = map->nbuckets * 2;
	struct tv_hnode **b = tv__calloc(n, sizeof(*b));
	size_t i;

	if (!b)
		return;
	for (i = 0; i < map->nbuckets; i++) {
		struct tv_hnode *node = map->buckets[i];

		/* Reverse-then-append keeps each chain's relative order. */
		while (node) {
			struct tv_hnode *next = node->next;
			struct tv_hnode **tail = &b[node->hash & (n - 1)];

			while (*tail)
				tail = &(*tail)->next;
			node->next = NULL;
			*tail = node;
			node = next;
		}
	}
	free(map->buckets);
	map->buckets = b;
	map->nbuckets = n;
}

void tv_hmap_insert(struct tv_hmap *map, struct tv_hnode *node, uint64_t hash)
{
	struct tv_hnode **tail;

	if (map->count >= map->nbuckets)
		hmap_grow(map);
	node->hash = hash;
	node->next = NULL;
	tail = &map->buckets[bucket_of(map, hash)];
	while (*tail)
		tail = &(*tail)->next;
	*tail = node;
	map->count++;
}

void tv_hmap_remove(struct tv_hmap *map, struct tv_hnode *node)
{
	struct tv_hnode **pp = &map->buckets[bucket_of(map, node->hash)];

	while (*pp && *pp != node)
		pp = &(*pp)->next;
	assert(*pp == node);
	if (!*pp)
		return;
	*pp = node->next;
	node->next = NULL;
	assert(map->count > 0);
	map->count--;
}

struct tv_hnode *tv_hmap_first(const struct tv_hmap *map, uint64_t hash)
{
	struct tv_hnode *node = map->buckets[bucket_of(map, hash)];

	while (node && node->hash != hash)
		node = node->next;
	return node;
}

struct tv_hnode *tv_hmap_next_same(const struct tv_hnode *node)
{
	struct tv_hnode *n = node->next;

	while (n && n->hash != node->hash)
		n = n->next;
	return n;
}

struct tv_hnode *tv_hmap_iter(const struct tv_hmap *map,
			      const struct tv_hnode *prev)
{
	size_t b = 0;

	if (prev) {
		if (prev->next)
			return prev->next;
		b = bucket_of(map, prev->hash) + 1;
	}
	for (; b < map->nbuckets; b++)
		if (map->buckets[b])
			return map->buckets[b];
	return NULL;
}

struct tv_hnode *tv_hmap_any(const struct tv_hmap *map)
{
	size_t i;

	if (!map->count)
		return NULL;
	for (i = 0; i < map->nbuckets; i++)
		if (map->buckets[i])
			return map->buckets[i];
	return NULL;
}

uint64_t tv_hash_u64(uint64_t x)
{
	/* splitmix64 finalizer: cheap and well mixed. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

uint64_t tv_hash_key(uint64_t step_id, const char *name, size_t name_len)
{
	return XXH3_64bits_withSeed(name, name_len, tv_hash_u64(step_id));
}
