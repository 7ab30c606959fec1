/*
 * This file is private to the rendezvous workload: what the parts of its
 * scenario parser share (scenario.c, scenario_step.c, stats.c).
 */
#ifndef TV_RV_SCENARIO_INT_H
#define TV_RV_SCENARIO_INT_H

#include "rv_scenario.h"

/* Largest tensor a scenario may ask for: it all lives in one process. */
#define SC_MAX_TENSOR_BYTES (1ull << 30)
#define SC_MAX_REPEAT 100000u
#define SC_DEFAULT_STEP_INTERVAL_NS 1000000ull

int sc_parse_step(struct tv_ju *jc, const char *path, json_t *obj,
		  struct scenario *sc, uint64_t default_step_id,
		  uint64_t start_ns);
int sc_parse_stats(struct tv_ju *jc, const char *path, json_t *arr,
		   struct scenario *sc);
void sc_send_release(struct sc_send *s);
void sc_recv_release(struct sc_recv *r);

#endif /* TV_RV_SCENARIO_INT_H */
