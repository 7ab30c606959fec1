/*
 * This file is private to tensorverbs' engine: every allocation the engine
 * makes goes through these, so one fault point ("engine/alloc") can fail
 * any of them (the fail-the-Nth-allocation loop walks them all).
 */
#ifndef TV_ENGINE_ALLOC_H
#define TV_ENGINE_ALLOC_H

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <fiu-local.h>

#include <tensorverbs/tensor.h>

#include "text.h"

/*
 * libfiu's fiu_fail() looks its point up on every call (~140 instructions,
 * callgrind on a fetch), yet a point can only fire once something enabled
 * it.  tv__fiu_live says whether anything can have: see
 * tv_engine_fault_points_live().  Until then the engine's points cost one
 * load.
 */
extern bool tv__fiu_live;
#ifdef FIU_ENABLE
#define TV__FIU_FAIL(name) (tv__fiu_live && fiu_fail(name))
#else
#define TV__FIU_FAIL(name) 0
#endif

static inline void *tv__calloc(size_t n, size_t size)
{
	if (TV__FIU_FAIL("engine/alloc"))
		return NULL;
	return calloc(n, size);
}

static inline void *tv__malloc(size_t size)
{
	if (TV__FIU_FAIL("engine/alloc"))
		return NULL;
	return malloc(size);
}

static inline void *tv__realloc(void *p, size_t size)
{
	if (TV__FIU_FAIL("engine/alloc"))
		return NULL;
	return realloc(p, size);
}

static inline char *tv__strndup(const char *s, size_t n)
{
	if (TV__FIU_FAIL("engine/alloc"))
		return NULL;
	return strndup(s, n);
}

/*
 * For the structs that end in a struct tv_status (2 KiB of text): zero
 * the first clear_bytes (everything before the status, or less: see
 * TV__FL_ALLOC_UPTO) and make it an empty OK status, instead of zeroing
 * the lot.  calloc()ing requests and responses whole cost a third of a
 * 64-byte fetch under emulation (glibc zeroes 2 KiB and up with rep stosb,
 * which TCG runs a byte at a time), and the text is only read once set.
 */
static inline void *tv__clear_with_status(char *p, size_t clear_bytes,
					  size_t status_off)
{
	assert(clear_bytes <= status_off);
	memset(p, 0, clear_bytes);
	tv_status_ok((struct tv_status *)(void *)(p + status_off));
	return p;
}

static inline void *tv__alloc_with_status(size_t size, size_t clear_bytes,
					  size_t status_off)
{
	char *p;

	assert(status_off + sizeof(struct tv_status) <= size);
	p = tv__malloc(size);
	return p ? tv__clear_with_status(p, clear_bytes, status_off) : NULL;
}

/*
 * A stack of freed objects of one type, kept for the next one: a fetch
 * allocates a request on one side and a response on the other, and
 * malloc()/free() of 2-3 KiB blocks was a fifth of its CPU.  Bounded: a
 * burst's worth goes back to malloc.
 */
#if defined(__SANITIZE_ADDRESS__)
#define TV__FREELIST_MAX 0 /* every free a real one: ASan sees reuse */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TV__FREELIST_MAX 0
#endif
#endif
#ifndef TV__FREELIST_MAX
#define TV__FREELIST_MAX 256
#endif

struct tv__freelist {
	void *head;
	uint32_t n;
};

/*
 * The list's head, taken off it (its contents as they were), or NULL with
 * *empty_p set when the list has none.  Recycled or not, an allocation is
 * where engine/alloc fires.
 */
static inline void *tv__fl_pop(struct tv__freelist *fl, bool *empty_p)
{
	void *p = fl->head;

	*empty_p = !p;
	if (!p || TV__FIU_FAIL("engine/alloc"))
		return NULL;
	memcpy(&fl->head, p, sizeof(void *));
	fl->n--;
	return p;
}

/* As tv__alloc_with_status(), from the list when it has one. */
static inline void *tv__fl_alloc(struct tv__freelist *fl, size_t size,
				 size_t clear_bytes, size_t status_off)
{
	bool empty;
	char *p = tv__fl_pop(fl, &empty);

	if (empty)
		return tv__alloc_with_status(size, clear_bytes, status_off);
	return p ? tv__clear_with_status(p, clear_bytes, status_off) : NULL;
}

/* As tv__calloc(1, size), from the list when it has one. */
static inline void *tv__fl_calloc(struct tv__freelist *fl, size_t size)
{
	bool empty;
	void *p = tv__fl_pop(fl, &empty);

	if (empty)
		return tv__calloc(1, size);
	return p ? memset(p, 0, size) : NULL;
}

#define TV__FL_ALLOC(fl, type, member) TV__FL_ALLOC_UPTO(fl, type, member, member)

/*
 * As TV__FL_ALLOC(), zeroing only what comes before member clear_end: the
 * members from there up to the status (a struct tv_meta's 256 bytes of
 * dims, read only up to the rank) are the caller's to set.  Zeroing costs
 * about 3 ns per 8 bytes on emulated CPUs, whatever callgrind counts.
 */
#define TV__FL_ALLOC_UPTO(fl, type, clear_end, member) \
	((type *)tv__fl_alloc((fl), sizeof(type), offsetof(type, clear_end), \
			      offsetof(type, member)))

static inline void tv__fl_free(struct tv__freelist *fl, void *p)
{
	if (!p)
		return;
#if TV__FREELIST_MAX > 0
	if (fl->n < TV__FREELIST_MAX) {
		memcpy(p, &fl->head, sizeof(void *));
		fl->head = p;
		fl->n++;
		return;
	}
#else
	(void)fl;
#endif
	free(p);
}

static inline void tv__fl_fini(struct tv__freelist *fl)
{
	while (fl->head) {
		void *p = fl->head;

		memcpy(&fl->head, p, sizeof(void *));
		free(p);
	}
	fl->n = 0;
}

/*
 * Tensor names: in the object's own buffer when short (most are), else
 * on the heap.  0 or -ENOMEM; tv__name_free() undoes either.
 */
#define TV__NAME_INLINE 96

static inline int tv__name_set(char **name_p, char *buf, const char *name,
			       size_t len)
{
	char *p = buf;

	if (len >= TV__NAME_INLINE) {
		p = tv__strndup(name, len);
		if (!p)
			return -ENOMEM;
	} else {
		tv__name_copy(buf, name, len);
	}
	*name_p = p;
	return 0;
}

static inline void tv__name_free(char *name, const char *buf)
{
	if (name != buf)
		free(name);
}

/* 0 or an errno, like posix_memalign(). */
static inline int tv__memalign(void **p, size_t align, size_t size)
{
	if (TV__FIU_FAIL("engine/alloc"))
		return ENOMEM;
	return posix_memalign(p, align, size);
}

#endif /* TV_ENGINE_ALLOC_H */
