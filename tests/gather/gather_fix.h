/*
 * The gather engine tests' world: N simulated nodes, each a context with
 * its partition filled with every row's known bytes (gfix_row), every
 * client QP connected to its server's.  Test code only.
 */
#ifndef TV_TESTS_GATHER_FIX_H
#define TV_TESTS_GATHER_FIX_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/gather.h>
#include <tensorverbs/sim.h>

#define GFIX_MAX_NODES 8

struct gworld {
	struct tv_sim *sim;
	uint32_t nodes;
	struct tv_gather_config cfg;
	struct tv_gather_ctx *ctx[GFIX_MAX_NODES];
	uint8_t *part[GFIX_MAX_NODES];
	uint32_t reconnects;      /* calls of the reconnect callback */
	bool refuse_reconnect;
	uint32_t not_yet;         /* answer -EAGAIN this many times first */
};

/* Small defaults: rows 1000 of 64 bytes, 10 replicated, 4 QPs, lists of 16. */
void gfix_config(struct tv_gather_config *cfg);
void gfix_init(struct gworld *w, uint32_t nodes,
	       const struct tv_gather_config *cfg,
	       const struct tv_sim_config *sc);
void gfix_fini(struct gworld *w);
/* Row id's bytes (never all zero). */
void gfix_row(uint64_t id, uint8_t *buf, uint32_t row_bytes);
/* Every row of out is its id's: the index of the first that is not, or -1. */
long gfix_check(const uint64_t *ids, size_t n, const uint8_t *out,
		uint32_t row_bytes);
/* Reset both ends of client node c's QP k to server s and connect them. */
int gfix_reconnect(struct gworld *w, uint32_t c, uint32_t s, uint32_t k);

#endif
