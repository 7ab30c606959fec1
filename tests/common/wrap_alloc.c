/*
 * Allocation failure injection (wrap_alloc.h): the __wrap_ allocators.
 *
 * The __real_ functions are weak: the linker resolves only those of the
 * functions the executable wraps, and a wrapper of one it does not wrap
 * is never called.
 */
#include <errno.h>
#include <stddef.h>

#include "common/wrap_alloc.h"

void *__real_calloc(size_t n, size_t size) __attribute__((weak));
void *__real_malloc(size_t size) __attribute__((weak));
void *__real_realloc(void *ptr, size_t size) __attribute__((weak));
void *__real_aligned_alloc(size_t align, size_t size) __attribute__((weak));
int __real_posix_memalign(void **p, size_t align, size_t size)
	__attribute__((weak));
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_realloc(void *ptr, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);
int __wrap_posix_memalign(void **p, size_t align, size_t size);

/*
 * -1: off; else the number of allocations that still succeed.  Volatile:
 * the compiler knows calloc and friends as builtins that touch no user
 * variable, and with link-time optimisation it sees every call between
 * arming and looking: it would keep these in registers across them.
 */
static volatile long oom_countdown = -1;
static volatile unsigned oom_fired;

static bool oom_now(void)
{
	if (oom_countdown < 0)
		return false;
	if (oom_countdown-- > 0)
		return false;
	oom_fired++;
	return true; /* one failure, then off (oom_countdown is -1) */
}

void *__wrap_calloc(size_t n, size_t size)
{
	return oom_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_malloc(size_t size)
{
	return oom_now() ? NULL : __real_malloc(size);
}

void *__wrap_realloc(void *ptr, size_t size)
{
	return oom_now() ? NULL : __real_realloc(ptr, size);
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
	return oom_now() ? NULL : __real_aligned_alloc(align, size);
}

int __wrap_posix_memalign(void **p, size_t align, size_t size)
{
	return oom_now() ? ENOMEM : __real_posix_memalign(p, align, size);
}

void oom_arm(long n)
{
	oom_fired = 0;
	oom_countdown = n;
}

bool oom_disarm(void)
{
	oom_countdown = -1;
	return oom_fired != 0;
}

unsigned oom_failures(void)
{
	return oom_fired;
}
