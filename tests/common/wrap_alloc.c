/*
 * Allocation failure injection (wrap_alloc.h): the __wrap_ allocators.
 *
 * The __real_ functions are weak: the linker resolves only those of the
 * functions the executable wraps, and a wrapper of one it does not wrap
 * is never called.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/wrap_alloc.h"

void *__real_calloc(size_t n, size_t size) __attribute__((weak));
void *__real_malloc(size_t size) __attribute__((weak));
void *__real_realloc(void *ptr, size_t size) __attribute__((weak));
void *__real_aligned_alloc(size_t align, size_t size) __attribute__((weak));
int __real_posix_memalign(void **p, size_t align, size_t size)
	__attribute__((weak));
char *__real_strdup(const char *s) __attribute__((weak));
char *__real_strndup(const char *s, size_t n) __attribute__((weak));
int __real_vasprintf(char **p, const char *fmt, va_list ap)
	__attribute__((weak));
ssize_t __real_getline(char **line, size_t *cap, FILE *f)
	__attribute__((weak));
FILE *__real_open_memstream(char **buf, size_t *len) __attribute__((weak));
FILE *__real_fmemopen(void *buf, size_t len, const char *mode)
	__attribute__((weak));
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_realloc(void *ptr, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);
int __wrap_posix_memalign(void **p, size_t align, size_t size);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_vasprintf(char **p, const char *fmt, va_list ap);
int __wrap_asprintf(char **p, const char *fmt, ...);
ssize_t __wrap_getline(char **line, size_t *cap, FILE *f);
FILE *__wrap_open_memstream(char **buf, size_t *len);
FILE *__wrap_fmemopen(void *buf, size_t len, const char *mode);

/*
 * -1: off; else the number of allocations that still succeed.  Volatile:
 * the compiler knows calloc and friends as builtins that touch no user
 * variable, and with link-time optimisation it sees every call between
 * arming and looking: it would keep these in registers across them.
 */
static volatile long oom_countdown = -1;
static volatile unsigned oom_fired;
static volatile unsigned long oom_seen;
static volatile long oom_saved = -1;

static bool oom_now(void)
{
	if (oom_countdown < 0)
		return false;
	oom_seen++;
	if (oom_countdown-- > 0)
		return false;
	oom_fired++;
	return true; /* one failure, then off (oom_countdown is -1) */
}

void *__wrap_calloc(size_t n, size_t size)
{
	if (oom_now()) {
		errno = ENOMEM; /* as the C library's */
		return NULL;
	}
	return __real_calloc(n, size);
}

void *__wrap_malloc(size_t size)
{
	if (oom_now()) {
		errno = ENOMEM; /* as the C library's */
		return NULL;
	}
	return __real_malloc(size);
}

void *__wrap_realloc(void *ptr, size_t size)
{
	if (oom_now()) {
		errno = ENOMEM; /* as the C library's */
		return NULL;
	}
	return __real_realloc(ptr, size);
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
	if (oom_now()) {
		errno = ENOMEM; /* as the C library's */
		return NULL;
	}
	return __real_aligned_alloc(align, size);
}

int __wrap_posix_memalign(void **p, size_t align, size_t size)
{
	return oom_now() ? ENOMEM : __real_posix_memalign(p, align, size);
}

/*
 * The C library's functions that allocate inside it, where --wrap=malloc
 * does not reach: each counts as one allocation.  They fail as the C
 * library says they do (NULL or -1, errno ENOMEM).
 */
char *__wrap_strdup(const char *s)
{
	if (oom_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	if (oom_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_strndup(s, n);
}

int __wrap_vasprintf(char **p, const char *fmt, va_list ap)
{
	if (oom_now()) {
		errno = ENOMEM;
		return -1;
	}
	return __real_vasprintf(p, fmt, ap);
}

/* Needs --wrap=vasprintf too (its real one does the work). */
int __wrap_asprintf(char **p, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = __wrap_vasprintf(p, fmt, ap);
	va_end(ap);
	return rc;
}

ssize_t __wrap_getline(char **line, size_t *cap, FILE *f)
{
	if (oom_now()) {
		errno = ENOMEM;
		return -1;
	}
	return __real_getline(line, cap, f);
}

FILE *__wrap_open_memstream(char **buf, size_t *len)
{
	if (oom_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_open_memstream(buf, len);
}

FILE *__wrap_fmemopen(void *buf, size_t len, const char *mode)
{
	if (oom_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_fmemopen(buf, len, mode);
}

void oom_arm(long n)
{
	oom_fired = 0;
	oom_seen = 0;
	oom_saved = -1;
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

unsigned long oom_calls(void)
{
	return oom_seen;
}

void oom_pause(void)
{
	oom_saved = oom_countdown;
	oom_countdown = -1;
}

void oom_resume(void)
{
	oom_countdown = oom_saved;
	oom_saved = -1;
}

bool oom_take(void)
{
	return oom_now();
}
