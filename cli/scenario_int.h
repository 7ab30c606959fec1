/*
 * This file is private to the tensorverbs CLI: what the two halves of the
 * scenario parser share.
 */
#ifndef TV_CLI_SCENARIO_INT_H
#define TV_CLI_SCENARIO_INT_H

#include "json_util.h"
#include "scenario.h"

/* Largest tensor a scenario may ask for: it all lives in one process. */
#define SC_MAX_TENSOR_BYTES (1ull << 30)
#define SC_MAX_REPEAT 100000u
#define SC_DEFAULT_STEP_INTERVAL_NS 1000000ull

int sc_parse_step(struct ju_ctx *jc, const char *path, json_t *obj,
		  struct scenario *sc, uint64_t default_step_id,
		  uint64_t start_ns);
int sc_parse_stats(struct ju_ctx *jc, const char *path, json_t *arr,
		   struct scenario *sc);
/* A value N (exactly) or {"min": A, "max": B}, either optional. */
int sc_parse_range(struct ju_ctx *jc, const char *path, json_t *v,
		   uint64_t *min_p, uint64_t *max_p);
void sc_send_release(struct sc_send *s);
void sc_recv_release(struct sc_recv *r);
/* Grow *arr (of elem-sized items) so that one more fits. */
int sc_grow(void **arr, size_t n, size_t *cap, size_t elem);

#endif /* TV_CLI_SCENARIO_INT_H */
