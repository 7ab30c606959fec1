/*
 * This file is private to tensorverbs' fault layer.
 */
#ifndef TV_FAULTS_PRIV_H
#define TV_FAULTS_PRIV_H

#include <stdbool.h>
#include <stdint.h>

/* The seeded decision for one hit of an armed point (fiu's callback). */
bool tv__flt_decide(const char *point, int64_t *arg_p);

#endif
