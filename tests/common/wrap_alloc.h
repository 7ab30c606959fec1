/*
 * Internal test header (tests/ only, not part of the library's API):
 * allocation failures injected through the linker's --wrap.
 *
 * A test executable that links wrap_alloc.c and wraps some of calloc,
 * malloc, realloc, aligned_alloc and posix_memalign (-Wl,--wrap=NAME in
 * its CMakeLists.txt, which says which) can make the Nth call of the
 * wrapped ones fail: NULL, or ENOMEM for posix_memalign.  The functions
 * it does not wrap are not counted.  The C library's own allocating
 * functions can be wrapped too (strdup, strndup, vasprintf with asprintf,
 * getline, open_memstream, fmemopen): each call is one allocation.
 */
#ifndef TV_TESTS_WRAP_ALLOC_H
#define TV_TESTS_WRAP_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* Let n allocations succeed, fail the next one (then off again). */
void oom_arm(long n);
/* Off again; did the armed failure happen? */
bool oom_disarm(void);
/* How many allocations failed since the last oom_arm(). */
unsigned oom_failures(void);
/* How many allocations were asked for since the last oom_arm(). */
unsigned long oom_calls(void);
/*
 * Neither count nor fail allocations until oom_resume(): for a test's
 * own checks between the calls it sweeps (Check allocates too).
 */
void oom_pause(void);
void oom_resume(void);
/*
 * One allocation of the countdown's, for what the linker cannot wrap
 * allocation by allocation: true, fail it.
 */
bool oom_take(void);
/*
 * The same for a call another wrapper stands in for (tests/rxe/
 * wrap_calls.c): site is the return address of its caller.
 */
bool oom_site_fails(const void *site);
/*
 * An allocator for a shared library's own allocations (jansson's:
 * json_set_alloc_funcs(oom_library_malloc, free)): in site mode its site
 * is the executable's call into the library, so that each json_pack,
 * json_object_set_new ... of the code under test is a site of its own;
 * otherwise it counts in the countdown like any allocation.
 * oom_library_init() first (it finds the executable's code).
 */
void *oom_library_malloc(size_t size);
void oom_library_init(void);

/*
 * Site mode (the stride of a long sweep passes over sites that allocate
 * only late in a run): a site is the return address of the wrapped call,
 * in the code under test.  oom_sites_start() records every distinct site
 * from then on, failing none; oom_sites_stop() ends it and gives them in
 * first-seen order (the module's array, valid until the next start; at
 * most 4096).  oom_arm_site(site) fails the first allocation made from
 * site, then off (oom_disarm() says whether it came).  oom_take()'s site
 * is its caller's.
 */
void oom_sites_start(void);
size_t oom_sites_stop(const void *const **sites_p);
void oom_arm_site(const void *site);

/*
 * Fail the Nth allocation of call for N = 0, 1, ... until it succeeds
 * (SQLite's do_faultsim_test): each failure is -ENOMEM, and what it left
 * behind the simulator counts as leaked at the end (ASan in CI: ours).
 * For the tests whose calls return 0 or -ENOMEM; needs <check.h>.
 */
#define OOM_LOOP(call)                                                       \
	do {                                                                 \
		long n_;                                                     \
		int ret_;                                                    \
		for (n_ = 0;; n_++) {                                        \
			oom_arm(n_);                                         \
			ret_ = (call);                                       \
			if (!oom_disarm()) {                                 \
				ck_assert_int_eq(ret_, 0);                   \
				break;                                       \
			}                                                    \
			ck_assert_msg(ret_ == -ENOMEM, "%s, allocation %ld: " \
				      "%d", #call, n_, ret_);               \
		}                                                            \
		ck_assert_msg(n_ > 0, "%s allocates nothing", #call);      \
	} while (0)

#endif
