/*
 * fuzz_dispatch's heap: the engines and the simulator it runs on allocate
 * from one arena at a fixed address, so that the world built once can be
 * saved after its setup and put back, byte for byte, before each input
 * (docs/fuzzing.md, "fuzz_dispatch and 10 000 execs/s").
 *
 * The engine and simulator sources are compiled a second time for that
 * target with this file forced in (-include) and FZ_HEAP_REDIRECT defined:
 * their malloc, calloc, realloc, free, posix_memalign, aligned_alloc and
 * strndup become the arena's.  Nothing else in the process uses it.
 *
 * Under ASan the arena keeps what ASan's allocator would give: redzones
 * after every block, freed blocks poisoned and never reused until the
 * world is put back (a use after free is always caught), unallocated
 * space poisoned.  fz_heap_live() counts blocks not freed: the harness
 * checks it is 0 after tearing the world down (a leak).
 */
#ifndef TV_FZ_HEAP_H
#define TV_FZ_HEAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *fz_heap_malloc(size_t size);
void *fz_heap_calloc(size_t n, size_t size);
void *fz_heap_realloc(void *ptr, size_t size);
void fz_heap_free(void *ptr);
int fz_heap_posix_memalign(void **ptr_p, size_t align, size_t size);
void *fz_heap_aligned_alloc(size_t align, size_t size);
char *fz_heap_strndup(const char *s, size_t n);

/* The arena's state at a point: its bytes (and ASan's view of them). */
struct fz_heap_snap {
	size_t top;
	uint64_t live;
	uint8_t *bytes;  /* [top] */
	uint8_t *shadow; /* [top / 8] under ASan, else NULL */
};

/* Empty the arena (no block may be live): a world is built from here. */
void fz_heap_reset(void);
/* Save the arena as it is now into snap (its buffers: fz_heap_snap_free). */
int fz_heap_snap_take(struct fz_heap_snap *snap);
/* Put the arena back exactly as snap saved it. */
void fz_heap_snap_restore(const struct fz_heap_snap *snap);
void fz_heap_snap_free(struct fz_heap_snap *snap);
/* Blocks allocated and not freed. */
uint64_t fz_heap_live(void);
/* Bytes of the arena in use (allocated or freed since the last reset). */
size_t fz_heap_top(void);

#ifdef FZ_HEAP_REDIRECT
#define malloc fz_heap_malloc
#define calloc fz_heap_calloc
#define realloc fz_heap_realloc
#define free fz_heap_free
#define posix_memalign fz_heap_posix_memalign
#define aligned_alloc fz_heap_aligned_alloc
#define strndup fz_heap_strndup
#endif

#endif
