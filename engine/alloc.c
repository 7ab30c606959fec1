/*
 * The one definition behind alloc.h's TV__FIU_FAIL: whether anything can
 * have enabled the engines' own fault points yet (set by
 * tv_engine_fault_points_live(), read by every engine allocation).
 */
#include "alloc.h"

bool tv__fiu_live;
