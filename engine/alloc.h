/*
 * This file is private to tensorverbs' engine: every allocation the engine
 * makes goes through these, so one fault point ("engine/alloc") can fail
 * any of them (the fail-the-Nth-allocation loop walks them all).
 */
#ifndef TV_ENGINE_ALLOC_H
#define TV_ENGINE_ALLOC_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <fiu-local.h>

static inline void *tv__calloc(size_t n, size_t size)
{
	fiu_return_on("engine/alloc", NULL);
	return calloc(n, size);
}

static inline void *tv__malloc(size_t size)
{
	fiu_return_on("engine/alloc", NULL);
	return malloc(size);
}

static inline void *tv__realloc(void *p, size_t size)
{
	fiu_return_on("engine/alloc", NULL);
	return realloc(p, size);
}

static inline char *tv__strndup(const char *s, size_t n)
{
	fiu_return_on("engine/alloc", NULL);
	return strndup(s, n);
}

/* 0 or an errno, like posix_memalign(). */
static inline int tv__memalign(void **p, size_t align, size_t size)
{
	fiu_return_on("engine/alloc", ENOMEM);
	return posix_memalign(p, align, size);
}

#endif /* TV_ENGINE_ALLOC_H */
