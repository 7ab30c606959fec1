/*
 * This file is private to tensorverbs' engine: an intrusive chained hash
 * table.  Nodes are embedded in their owners (no allocation per insert);
 * the caller hashes keys and compares them while walking a hash's chain.
 * Iteration order never depends on addresses, only on insertion order
 * within a bucket and on hash values, so runs stay deterministic.
 */
#ifndef TV_ENGINE_MAP_H
#define TV_ENGINE_MAP_H

#include <stddef.h>
#include <stdint.h>

struct tv_hnode {
	struct tv_hnode *next;
	uint64_t hash;
};

struct tv_hmap {
	struct tv_hnode **buckets;
	size_t nbuckets; /* power of two */
	size_t count;
};

int tv_hmap_init(struct tv_hmap *map, size_t nbuckets_hint);
void tv_hmap_fini(struct tv_hmap *map);
/* Never fails: a failed grow only lengthens the chains. */
void tv_hmap_insert(struct tv_hmap *map, struct tv_hnode *node, uint64_t hash);
void tv_hmap_remove(struct tv_hmap *map, struct tv_hnode *node);
/* First node with this hash, then tv_hmap_next_same() for the others. */
struct tv_hnode *tv_hmap_first(const struct tv_hmap *map, uint64_t hash);
struct tv_hnode *tv_hmap_next_same(const struct tv_hnode *node);
/* Walk every node: start with prev NULL; do not modify while walking. */
struct tv_hnode *tv_hmap_iter(const struct tv_hmap *map,
			      const struct tv_hnode *prev);
/* Any node (for draining at teardown), or NULL when empty. */
struct tv_hnode *tv_hmap_any(const struct tv_hmap *map);

uint64_t tv_hash_u64(uint64_t x);
uint64_t tv_hash_key(uint64_t step_id, const char *name, size_t name_len);

#endif /* TV_ENGINE_MAP_H */
