/*
 * Internal test header (tests/ only, not part of the library's API): the
 * main() of a Check program, shared by the suites.
 *
 * Every suite ran the same five lines (runner, run, count, free, exit
 * status); tv_add_check_test links check_main.c into each executable so
 * that a suite's main() is one call, and a suite that needs more (a seed
 * first, a device to skip on) does it before that call.
 */
#ifndef TV_TESTS_CHECK_MAIN_H
#define TV_TESTS_CHECK_MAIN_H

#include <check.h>

/*
 * Run every test of s (CK_NORMAL: failures and the summary only) and free
 * s with its runner.  Returns EXIT_SUCCESS if none failed, else
 * EXIT_FAILURE: main()'s exit status, which is what ctest reads.
 */
int tv_check_main(Suite *s);

#endif
