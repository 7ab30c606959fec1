/*
 * fuzz_dispatch's arena (fz_heap.h): a bump allocator over one mapping at a
 * fixed address.  A freed block is poisoned and never handed out again
 * until the arena is reset or put back, so addresses, and therefore every
 * pointer the world holds, are the same after fz_heap_snap_restore().
 *
 * Each block: [header 16][user bytes, 16-aligned][redzone >= 16].  Under
 * ASan the header, the redzone, freed blocks and the space between the top
 * and the highest top so far are poisoned; reading a header is done with
 * instrumentation off.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>

#include "fz_heap.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(FZ_ASAN)
#define FZ_ASAN 1
#endif

/* clang: the arena and its shadow are copied with inline moves (fz_copy). */
#if defined(FZ_ASAN) && defined(__clang__)
#define FZ_COPY_RAW 1
#endif

#ifdef FZ_ASAN
#include <sanitizer/asan_interface.h>
#define FZ_NO_ASAN __attribute__((no_sanitize("address")))
#else
#define FZ_NO_ASAN
#define ASAN_POISON_MEMORY_REGION(a, s) ((void)(a), (void)(s))
#define ASAN_UNPOISON_MEMORY_REGION(a, s) ((void)(a), (void)(s))
#endif

/* Room for any input: tensors are bounded by the engines' max_recv_bytes. */
#define FZ_HEAP_BYTES (1ull << 30)
#define FZ_HDR 16u
#define FZ_REDZONE 16u
/* As ASan (max_malloc_fill_size): the first 4 KiB of a malloc are filled. */
#define FZ_FILL_MAX 4096u
#define FZ_LIVE 0x4c49564546554e4bull /* "KNUFEVIL" */
#define FZ_FREED 0x4445455246554e4bull

struct fz_hdr {
	uint64_t size;
	uint64_t state;
};

static struct {
	uint8_t *base;
	size_t top;    /* next free byte */
	size_t hwm;    /* highest top since the mapping: poisoned above top */
	uint64_t live;
} fz_heap;

static void fz_heap_die(const char *what, const void *p)
{
	fprintf(stderr, "fz_heap: %s %p\n", what, p);
	abort();
}

static void fz_heap_init(void)
{
	void *m;

	if (fz_heap.base)
		return;
	m = mmap(NULL, FZ_HEAP_BYTES, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		fz_heap_die("cannot map the arena", NULL);
	fz_heap.base = m;
}

static size_t fz_round(size_t n, size_t a)
{
	return (n + a - 1) & ~(a - 1);
}

/* align: a power of two >= 16. */
static void *fz_heap_alloc(size_t size, size_t align, bool zero)
{
	struct fz_hdr *h;
	size_t user, end;
	uint8_t *p;

	fz_heap_init();
	if (size > FZ_HEAP_BYTES)
		return NULL;
	user = fz_round(fz_heap.top + FZ_HDR, align);
	end = user + fz_round(size ? size : 1, 16) + FZ_REDZONE;
	if (end > FZ_HEAP_BYTES) {
		errno = ENOMEM;
		return NULL;
	}
	p = fz_heap.base + user;
	h = (struct fz_hdr *)(void *)(p - FZ_HDR);
	/*
	 * Poisoned as the arena grows into it (poisoning the whole mapping
	 * up front costs ASan 128 MiB of shadow): below hwm, everything but
	 * live blocks is poisoned already.
	 */
	if (end > fz_heap.hwm) {
		ASAN_POISON_MEMORY_REGION(fz_heap.base + fz_heap.hwm,
					  end - fz_heap.hwm);
		fz_heap.hwm = end;
	}
	ASAN_UNPOISON_MEMORY_REGION(h, FZ_HDR);
	h->size = size;
	h->state = FZ_LIVE;
	ASAN_POISON_MEMORY_REGION(h, FZ_HDR);
	ASAN_UNPOISON_MEMORY_REGION(p, size);
	if (zero)
		memset(p, 0, size);
	else
		memset(p, 0xbe, size < FZ_FILL_MAX ? size : FZ_FILL_MAX);
	fz_heap.top = end;
	fz_heap.live++;
	return p;
}

void *fz_heap_malloc(size_t size)
{
	return fz_heap_alloc(size, 16, false);
}

void *fz_heap_calloc(size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return fz_heap_alloc(bytes, 16, true);
}

static bool fz_heap_owns(const void *p)
{
	const uint8_t *b = p;

	return fz_heap.base && b >= fz_heap.base + FZ_HDR &&
	       b < fz_heap.base + fz_heap.top;
}

/* The header of a block handed out, read with ASan looking away. */
FZ_NO_ASAN static struct fz_hdr *fz_heap_hdr(void *p)
{
	struct fz_hdr *h = (struct fz_hdr *)(void *)((uint8_t *)p - FZ_HDR);

	if (!fz_heap_owns(p) || ((uintptr_t)p & 15))
		fz_heap_die("free of a pointer the arena never gave", p);
	if (h->state == FZ_FREED)
		fz_heap_die("double free of", p);
	if (h->state != FZ_LIVE)
		fz_heap_die("free of a pointer the arena never gave", p);
	return h;
}

FZ_NO_ASAN void fz_heap_free(void *p)
{
	struct fz_hdr *h;

	if (!p)
		return;
	h = fz_heap_hdr(p);
	h->state = FZ_FREED;
	ASAN_POISON_MEMORY_REGION(p, fz_round(h->size ? h->size : 1, 16));
	fz_heap.live--;
}

FZ_NO_ASAN static size_t fz_heap_size(void *p)
{
	return fz_heap_hdr(p)->size;
}

void *fz_heap_realloc(void *p, size_t size)
{
	size_t old;
	void *q;

	if (!p)
		return fz_heap_malloc(size);
	old = fz_heap_size(p);
	q = fz_heap_malloc(size);
	if (!q)
		return NULL;
	memcpy(q, p, old < size ? old : size);
	fz_heap_free(p);
	return q;
}

int fz_heap_posix_memalign(void **ptr_p, size_t align, size_t size)
{
	void *p;

	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	p = fz_heap_alloc(size, align < 16 ? 16 : align, false);
	if (!p)
		return ENOMEM;
	*ptr_p = p;
	return 0;
}

void *fz_heap_aligned_alloc(size_t align, size_t size)
{
	void *p = NULL;
	int ret = fz_heap_posix_memalign(&p, align < sizeof(void *) ?
					 sizeof(void *) : align, size);

	if (ret)
		errno = ret;
	return p;
}

char *fz_heap_strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d = fz_heap_malloc(len + 1);

	if (!d)
		return NULL;
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

/* ---- saving and putting back ------------------------------------------- */

uint64_t fz_heap_live(void)
{
	return fz_heap.live;
}

size_t fz_heap_top(void)
{
	return fz_heap.top;
}

void fz_heap_reset(void)
{
	fz_heap_init();
	if (fz_heap.live)
		fz_heap_die("reset with live blocks", NULL);
	ASAN_POISON_MEMORY_REGION(fz_heap.base, fz_heap.hwm);
	fz_heap.top = 0;
}

#ifdef FZ_ASAN
/*
 * ASan's shadow of the arena's first bytes, copied with instrumentation
 * off and word by word (volatile: not turned into a memcpy call, which
 * ASan would check against the shadow of the shadow).
 */
FZ_NO_ASAN static volatile uint64_t *fz_shadow_of(const uint8_t *addr)
{
	size_t scale, offset;

	__asan_get_shadow_mapping(&scale, &offset);
	return (volatile uint64_t *)(((uintptr_t)addr >> scale) + offset);
}

#ifndef FZ_COPY_RAW
FZ_NO_ASAN static void fz_shadow_copy(volatile uint64_t *to,
				      volatile const uint64_t *from,
				      size_t words)
{
	for (size_t i = 0; i < words; i++)
		to[i] = from[i];
}
#endif
#endif

#ifdef FZ_COPY_RAW
/*
 * The arena's bytes, poisoned ones included, and their shadow, copied
 * without ASan's memcpy (whose range checks cost as much as the copy, and
 * which would need the range unpoisoned first): inline 64-byte moves.
 * n: a multiple of 64.
 */
FZ_NO_ASAN static void fz_copy(void *to, const void *from, size_t n)
{
	for (size_t i = 0; i < n; i += 64)
		__builtin_memcpy_inline((uint8_t *)to + i,
					(const uint8_t *)from + i, 64);
}
#endif

#ifdef FZ_ASAN
/* The shadow of the arena's first bytes (n: a multiple of 512) to buf. */
static void fz_shadow_get(uint8_t *buf, size_t n)
{
#ifdef FZ_COPY_RAW
	fz_copy(buf, (const void *)fz_shadow_of(fz_heap.base), n / 8);
#else
	fz_shadow_copy((volatile uint64_t *)buf, fz_shadow_of(fz_heap.base),
		       n / 64);
#endif
}

static void fz_shadow_put(const uint8_t *buf, size_t n)
{
#ifdef FZ_COPY_RAW
	fz_copy((void *)fz_shadow_of(fz_heap.base), buf, n / 8);
#else
	fz_shadow_copy(fz_shadow_of(fz_heap.base),
		       (volatile const uint64_t *)buf, n / 64);
#endif
}
#endif

int fz_heap_snap_take(struct fz_heap_snap *snap)
{
	/* A multiple of 512 bytes: the shadow is whole 64-byte moves. */
	size_t top = fz_round(fz_heap.top, 512);

	fz_heap_init();
	memset(snap, 0, sizeof(*snap));
	snap->top = top;
	snap->live = fz_heap.live;
	snap->bytes = malloc(top ? top : 1);
	if (!snap->bytes)
		return -ENOMEM;
#ifdef FZ_ASAN
	snap->shadow = malloc(top / 8 ? top / 8 : 1);
	if (!snap->shadow) {
		fz_heap_snap_free(snap);
		return -ENOMEM;
	}
	fz_shadow_get(snap->shadow, top);
#endif
#ifdef FZ_COPY_RAW
	fz_copy(snap->bytes, fz_heap.base, top);
#else
	ASAN_UNPOISON_MEMORY_REGION(fz_heap.base, top);
	memcpy(snap->bytes, fz_heap.base, top);
#ifdef FZ_ASAN
	fz_shadow_put(snap->shadow, top);
#endif
#endif
	return 0;
}

void fz_heap_snap_restore(const struct fz_heap_snap *snap)
{
	size_t hwm = fz_heap.hwm > snap->top ? fz_heap.hwm : snap->top;

#ifdef FZ_COPY_RAW
	fz_copy(fz_heap.base, snap->bytes, snap->top);
#else
	ASAN_UNPOISON_MEMORY_REGION(fz_heap.base, snap->top);
	memcpy(fz_heap.base, snap->bytes, snap->top);
#endif
#ifdef FZ_ASAN
	fz_shadow_put(snap->shadow, snap->top);
#endif
	ASAN_POISON_MEMORY_REGION(fz_heap.base + snap->top, hwm - snap->top);
	fz_heap.top = snap->top;
	fz_heap.hwm = hwm;
	fz_heap.live = snap->live;
}

void fz_heap_snap_free(struct fz_heap_snap *snap)
{
	free(snap->bytes);
	free(snap->shadow);
	memset(snap, 0, sizeof(*snap));
}
