/*
 * Internal test header (tests/ only, not part of the library's API): the
 * engine's allocations made to fail through its libfiu point engine/alloc.
 */
#ifndef TV_TESTS_ALLOC_POINT_H
#define TV_TESTS_ALLOC_POINT_H

#include <stdbool.h>

/* The engine's points live, engine/alloc on (fiu_disable() turns it off);
 * nothing fails until alloc_arm(). */
void alloc_point_on(void);
/* Let n engine allocations succeed, fail the next one (then off again). */
void alloc_arm(long n);
/* Off again; did the armed failure happen? */
bool alloc_disarm(void);

#endif
