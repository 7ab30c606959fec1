/*
 * This file is private to tensorverbs' fault layer.
 */
#ifndef TV_FAULTS_PRIV_H
#define TV_FAULTS_PRIV_H

#include <stdbool.h>
#include <stdint.h>

/* The seeded decision for one hit of an armed point (fiu's callback). */
bool tv__flt_decide(const char *point, int64_t *arg_p);
/* A draw below `below` from the active injector's seeded stream (0 when
 * none): where a corruption flips its bits.  Called where a point fired,
 * so the stream's other draws stay as they were in runs without it. */
uint64_t tv__flt_draw(uint64_t below);

#endif
