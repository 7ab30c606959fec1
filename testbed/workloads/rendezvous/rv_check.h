/*
 * This file is private to the rendezvous workload: the protocol's
 * invariant checker, fed by the engines' observers and the simulator's
 * events (check.c says which invariants).
 */
#ifndef TV_RV_CHECK_H
#define TV_RV_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/sim.h>
#include <tensorverbs/workload.h>

struct checker {
	struct tv_tb_run *run;
	uint32_t nodes;
	bool trace;              /* print every engine event (--verbose) */
	bool allow_errors;
	int64_t *in_flight;      /* [node * nodes + peer] */
	/*
	 * The direction's connection failed: what was in flight is gone, and
	 * completions polled after the failure may still report ACKs.
	 */
	bool *dir_failed;
	uint64_t *chan_errors;   /* CHANNEL_ERROR events per direction */
	/*
	 * [node]: crashed and not back (node/crash).  It has no QP at all,
	 * so a request the simulator reports delivered there was lost.
	 */
	bool *down;
	struct tv_channel_info *rx; /* node's rx buffer for peer */
	bool *rx_known;
	/*
	 * vf/write/dup fired this many times so far (set by the runner): a
	 * duplicate may then land in the buffer just delivered.
	 */
	uint64_t dup_fires;
	uint64_t dup_landed;
	uint64_t engine_events;  /* numbers advertisements and completions */
	/* what every node advertised to every peer for tensor writes */
	struct tv_tb_windows *adv;
	/* counters for the summary */
	uint64_t checked_writes;
	uint64_t checked_msgs;
	uint64_t channel_errors;
};

int checker_init(struct checker *c, struct tv_tb_run *run, uint32_t nodes);
void checker_fini(struct checker *c);
void checker_set_rx(struct checker *c, uint32_t node, uint32_t peer,
		    const struct tv_channel_info *info);
/* At quiescence: every control message must have been acknowledged. */
void checker_quiescent(struct checker *c);
/*
 * A new connection between a and b (reconnect): nothing of the old one is
 * in flight any more, and no buffer advertised on it may be written.
 */
void checker_new_epoch(struct checker *c, uint32_t a, uint32_t b);
/*
 * Node n crashed: every connection it had is gone (nothing in flight on
 * them, none of its buffers a valid destination) until node_up and a new
 * epoch with each peer.
 */
void checker_node_down(struct checker *c, uint32_t n);
void checker_node_up(struct checker *c, uint32_t n);

void checker_engine_event(void *ctx, const struct tv_engine_event *ev);
void checker_sim_event(void *ctx, const struct tv_sim_event *ev);

#endif /* TV_RV_CHECK_H */
