/*
 * This file is private to tensorverbs' fault layer.
 */
#ifndef TV_FAULTS_PRIV_H
#define TV_FAULTS_PRIV_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Where a wrapper point is being hit: the wrapped device's node and its
 * own hit number of the point.  The wrapper points tv__flt_site at one
 * around its libfiu check; decided says the injector's callback was
 * consulted (a firing without it is libfiu's alone: fiu-ctrl, fiu-run).
 */
struct tv__flt_site {
	uint32_t node;
	uint64_t hit;
	bool decided;
};
extern _Thread_local struct tv__flt_site *tv__flt_site;

struct tv_flt;
/* A firing libfiu decided without the injector: flt (the device's) counts
 * it and observes it. */
void tv__flt_external(struct tv_flt *flt, const char *point);

/*
 * Whether anything can have enabled a point yet (engine/alloc.h: an
 * armed rule, fiu-ctrl's remote control, fiu-run): until then the
 * wrapper's points count their hits and do not ask libfiu, whose lookup
 * costs a lock and a hash per point per verb.
 */
extern bool tv__fiu_live;

/* The seeded decision for one hit of an armed point (fiu's callback). */
bool tv__flt_decide(const char *point, int64_t *arg_p);
/* A draw below `below` from the active injector's seeded stream (0 when
 * none): where a corruption flips its bits.  Called where a point fired,
 * so the stream's other draws stay as they were in runs without it. */
uint64_t tv__flt_draw(uint64_t below);

#endif
