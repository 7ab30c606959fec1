/* The engine/alloc point's countdown (alloc_point.h). */
#include <check.h>
#include <fiu.h>
#include <fiu-control.h>

#include <tensorverbs/engine.h>

#include "alloc_point.h"

/* -1: off; else allocations that still succeed (volatile: LTO) */
static volatile long alloc_left = -1;
static volatile unsigned alloc_fired;

static int alloc_cb(const char *name, int *failnum, void **failinfo,
		    unsigned int *flags)
{
	(void)name;
	(void)failnum;
	(void)failinfo;
	(void)flags;
	if (alloc_left < 0 || alloc_left-- > 0)
		return 0;
	alloc_fired++;
	return 1; /* once: alloc_left is -1 now */
}

void alloc_point_on(void)
{
	tv_engine_fault_points_live();
	ck_assert_int_eq(fiu_init(0), 0);
	ck_assert_int_eq(fiu_enable_external("engine/alloc", 1, NULL, 0,
					     alloc_cb), 0);
}

void alloc_arm(long n)
{
	alloc_fired = 0;
	alloc_left = n;
}

bool alloc_disarm(void)
{
	alloc_left = -1;
	return alloc_fired != 0;
}
