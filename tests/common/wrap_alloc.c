/*
 * Allocation failure injection (wrap_alloc.h): the __wrap_ allocators.
 *
 * The __real_ functions are weak: the linker resolves only those of the
 * functions the executable wraps, and a wrapper of one it does not wrap
 * is never called.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/wrap_alloc.h"

/*
 * The wrapped call's site: where the code under test called it (the
 * wrappers are never inlined, so that it is).
 */
#define SITE __builtin_return_address(0)
#define NOINLINE __attribute__((noinline))

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
NOINLINE void *__wrap_calloc(size_t n, size_t size);
NOINLINE void *__wrap_malloc(size_t size);
NOINLINE void *__wrap_realloc(void *ptr, size_t size);
NOINLINE void *__wrap_aligned_alloc(size_t align, size_t size);
NOINLINE int __wrap_posix_memalign(void **p, size_t align, size_t size);
NOINLINE char *__wrap_strdup(const char *s);
NOINLINE char *__wrap_strndup(const char *s, size_t n);
NOINLINE int __wrap_vasprintf(char **p, const char *fmt, va_list ap);
NOINLINE int __wrap_asprintf(char **p, const char *fmt, ...);
NOINLINE ssize_t __wrap_getline(char **line, size_t *cap, FILE *f);
NOINLINE FILE *__wrap_open_memstream(char **buf, size_t *len);
NOINLINE FILE *__wrap_fmemopen(void *buf, size_t len, const char *mode);

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
static volatile bool oom_paused;

/*
 * Site mode: an allocation's site is its caller's return address.  While
 * recording, every distinct site is kept (first-seen order, a hash set
 * for the lookup), none failed; once armed, the first allocation from
 * oom_site fails, then off.
 */
#define OOM_MAX_SITES 4096
#define OOM_SITE_SLOTS 16384 /* a power of two, 4x the sites */
static volatile bool oom_recording;
static const void *volatile oom_site;
static const void *oom_sites[OOM_MAX_SITES];
static size_t oom_nsites;
static const void *oom_slots[OOM_SITE_SLOTS];

static void site_record(const void *site)
{
	size_t h = ((uintptr_t)site >> 2) * 0x9e3779b97f4a7c15ull;

	for (h &= OOM_SITE_SLOTS - 1; oom_slots[h];
	     h = (h + 1) & (OOM_SITE_SLOTS - 1))
		if (oom_slots[h] == site)
			return;
	if (oom_nsites == OOM_MAX_SITES)
		return; /* more sites than a test sweeps: the rest unrecorded */
	oom_slots[h] = site;
	oom_sites[oom_nsites++] = site;
}

/*
 * One thread at a time (the port runner's tasks and proxies allocate
 * from their own threads under the rxe suite's sweep): the site set is
 * not thread-safe and an armed site must fail once.  Acquire on taking,
 * release on leaving: what one holder wrote the next one sees.
 */
static atomic_flag oom_lock = ATOMIC_FLAG_INIT;

static bool oom_now_locked(const void *site);

static bool oom_now(const void *site)
{
	bool fail;

	while (atomic_flag_test_and_set_explicit(&oom_lock,
						 memory_order_acquire))
		;
	fail = oom_now_locked(site);
	atomic_flag_clear_explicit(&oom_lock, memory_order_release);
	return fail;
}

static bool oom_now_locked(const void *site)
{
	if (oom_paused)
		return false;
	if (oom_recording) {
		site_record(site);
		return false;
	}
	if (oom_site) {
		if (site != oom_site)
			return false;
		oom_seen++;
		oom_fired++;
		oom_site = NULL;
		return true;
	}
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
	if (oom_now(SITE)) {
		errno = ENOMEM; /* as the C library's */
		return NULL;
	}
	return __real_calloc(n, size);
}

void *__wrap_malloc(size_t size)
{
	if (oom_now(SITE)) {
		errno = ENOMEM; /* as the C library's */
		return NULL;
	}
	return __real_malloc(size);
}

void *__wrap_realloc(void *ptr, size_t size)
{
	if (oom_now(SITE)) {
		errno = ENOMEM; /* as the C library's */
		return NULL;
	}
	return __real_realloc(ptr, size);
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
	if (oom_now(SITE)) {
		errno = ENOMEM; /* as the C library's */
		return NULL;
	}
	return __real_aligned_alloc(align, size);
}

int __wrap_posix_memalign(void **p, size_t align, size_t size)
{
	return oom_now(SITE) ? ENOMEM : __real_posix_memalign(p, align, size);
}

/*
 * The C library's functions that allocate inside it, where --wrap=malloc
 * does not reach: each counts as one allocation.  They fail as the C
 * library says they do (NULL or -1, errno ENOMEM).
 */
char *__wrap_strdup(const char *s)
{
	if (oom_now(SITE)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	if (oom_now(SITE)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_strndup(s, n);
}

static int vasprintf_at(const void *site, char **p, const char *fmt,
			va_list ap)
{
	if (oom_now(site)) {
		errno = ENOMEM;
		return -1;
	}
	return __real_vasprintf(p, fmt, ap);
}

int __wrap_vasprintf(char **p, const char *fmt, va_list ap)
{
	return vasprintf_at(SITE, p, fmt, ap);
}

/* Needs --wrap=vasprintf too (its real one does the work). */
int __wrap_asprintf(char **p, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf_at(SITE, p, fmt, ap);
	va_end(ap);
	return rc;
}

ssize_t __wrap_getline(char **line, size_t *cap, FILE *f)
{
	if (oom_now(SITE)) {
		errno = ENOMEM;
		return -1;
	}
	return __real_getline(line, cap, f);
}

FILE *__wrap_open_memstream(char **buf, size_t *len)
{
	if (oom_now(SITE)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_open_memstream(buf, len);
}

FILE *__wrap_fmemopen(void *buf, size_t len, const char *mode)
{
	if (oom_now(SITE)) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_fmemopen(buf, len, mode);
}

void oom_arm(long n)
{
	oom_paused = false;
	oom_fired = 0;
	oom_seen = 0;
	oom_saved = -1;
	oom_countdown = n;
}

bool oom_disarm(void)
{
	oom_countdown = -1;
	oom_site = NULL;
	return oom_fired != 0;
}

void oom_sites_start(void)
{
	memset(oom_slots, 0, sizeof(oom_slots));
	oom_nsites = 0;
	oom_countdown = -1;
	oom_site = NULL;
	oom_paused = false;
	oom_recording = true;
}

size_t oom_sites_stop(const void *const **sites_p)
{
	oom_recording = false;
	*sites_p = oom_sites;
	return oom_nsites;
}

void oom_arm_site(const void *site)
{
	oom_paused = false;
	oom_fired = 0;
	oom_seen = 0;
	oom_saved = -1;
	oom_countdown = -1;
	oom_site = site;
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
	oom_paused = true;
}

void oom_resume(void)
{
	oom_countdown = oom_saved;
	oom_saved = -1;
	oom_paused = false;
}

NOINLINE bool oom_take(void)
{
	return oom_now(SITE);
}

bool oom_site_fails(const void *site)
{
	return oom_now(site);
}

/* ---- jansson's allocations, by the call into jansson that made them ------- */

static uintptr_t exe_lo, exe_hi;

static int exe_range(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	/* The first object is the executable itself. */
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		exe_lo = info->dlpi_addr + ph->p_vaddr;
		exe_hi = exe_lo + ph->p_memsz;
		break;
	}
	return 1;
}

static bool in_exe(const void *p)
{
	return (uintptr_t)p >= exe_lo && (uintptr_t)p < exe_hi;
}

/*
 * The return address of the executable's call into the shared library
 * that allocates: the frames up from here are this file's (in the
 * executable), then the library's (jansson), then the caller's.
 */
static NOINLINE const void *library_caller(void)
{
	void *f[48];
	int n = backtrace(f, 48), i = 0;

	while (i < n && in_exe(f[i]))
		i++;
	while (i < n && !in_exe(f[i]))
		i++;
	return i < n ? f[i] : NULL;
}

void *oom_library_malloc(size_t size)
{
	/* Site mode only: the countdown counts every allocation alike. */
	if ((oom_recording || oom_site) && !oom_paused) {
		const void *site = library_caller();

		if (site && oom_now(site)) {
			errno = ENOMEM;
			return NULL;
		}
		return __real_malloc(size);
	}
	return __wrap_malloc(size);
}

void oom_library_init(void)
{
	void *f[2];

	dl_iterate_phdr(exe_range, NULL);
	/* backtrace() loads libgcc's unwinder on its first call: now. */
	backtrace(f, 2);
}
