/*
 * This file is private to tensorverbs' tests: a world of engines on the
 * simulator, connected all-to-all, and an observer that checks the
 * protocol's invariants on every event.
 */
#ifndef TV_TEST_HARNESS_H
#define TV_TEST_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/faults.h>
#include <tensorverbs/sim.h>

#define H_MAX_NODES 8
#define H_MAX_ADV 4096

struct h_world;

struct h_recv {
	int calls;              /* the done callback ran this many times */
	struct tv_status status;
	struct tv_tensor *tensor;
};

struct h_adv {
	uint32_t node, peer, index;
	uint64_t addr, length;
	bool live;
};

struct h_world {
	struct tv_sim *sim;
	uint32_t nodes;
	struct tv_engine *eng[H_MAX_NODES];
	struct tv_vf_device *dev[H_MAX_NODES]; /* wrapped when faults are on */
	struct tv_flt *flt;
	uint32_t reconnects;
	struct tv_channel *ch[H_MAX_NODES][H_MAX_NODES];
	/* Invariant tracking. */
	int msgs_in_flight[H_MAX_NODES][H_MAX_NODES];
	int max_in_flight;
	struct h_adv adv[H_MAX_ADV];
	uint32_t nadv;
	uint64_t writes_checked;
	int violations;
	uint32_t channel_errors;
	uint32_t last_index[H_MAX_NODES];
	/* Called for every sim event, after the harness's own checks. */
	void (*sim_hook)(struct h_world *w, const struct tv_sim_event *ev);
	void *hook_arg;
};

struct h_opts {
	uint64_t seed;
	uint32_t nodes;
	uint32_t queue_depth;
	bool validate;
	size_t pool_block_bytes;
	uint64_t latency_ns;
	uint64_t bytes_per_sec;
	struct tv_flt *flt;        /* wrap every device (the world owns it) */
	bool reconnect;            /* reset and reconnect failed channels */
	uint64_t ack_timeout_ns;   /* 0: the engine's default */
	uint64_t recv_timeout_ns;
	int64_t max_inline_bytes;  /* -1: the engine's default */
	uint64_t max_recv_bytes;   /* 0: the engine's default */
};

void h_opts_default(struct h_opts *o);
struct h_world *h_world_new(const struct h_opts *o);
/* Two nodes with h_opts_default(). */
struct h_world *h_world_default(void);
struct tv_engine_stats h_stats(struct h_world *w, uint32_t node);
/* Destroys engines and the sim; asserts nothing leaked. */
void h_world_free(struct h_world *w);
/* Run the world until nothing is left to do. */
void h_run(struct h_world *w);

struct tv_tensor *h_tensor(struct h_world *w, uint32_t node,
			   enum tv_dtype dt, uint32_t rank,
			   const int64_t *dims, enum tv_placement place,
			   uint8_t fill);
void h_recv(struct h_world *w, uint32_t node, uint32_t from, uint64_t step,
	    const char *name, enum tv_placement place, struct h_recv *r);
/* Every byte of a received DMA-able tensor equals fill + i (mod 256). */
bool h_check_fill(struct tv_tensor *t, uint8_t fill);
void h_recv_release(struct h_recv *r);
/* h_recv(), run the world, expect TV_OK and fill (h_check_fill), release. */
void h_recv_expect(struct h_world *w, uint32_t node, uint32_t from,
		   uint64_t step, const char *name, uint8_t fill);
/* The done callback h_recv() uses: records into a struct h_recv. */
void h_recv_done(void *arg, const struct tv_status *st, struct tv_tensor *t);

#endif
