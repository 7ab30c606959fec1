/*
 * This file is private to the tensorverbs CLI: failures and the invariant
 * checker fed by the engine and simulator observers.
 *
 * Invariants checked while the run goes (see docs/scenarios.md):
 *  - at most one control message in flight per channel direction
 *    (TV_EV_MSG_SEND minus TV_EV_ACK_RECV at the sender stays <= 1);
 *  - every tensor write lands inside the buffer the receiver advertised
 *    for that request index (TV_EV_REQ_ADVERTISE vs the simulator's
 *    DELIVER event), and only while the request is live;
 *  - control messages land inside the receiver's rx buffer; ACKs are empty;
 *  - no error completion and no channel error unless the scenario allows.
 */
#ifndef TV_CLI_CHECK_H
#define TV_CLI_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/sim.h>

#define FAILURES_KEPT 40

/*
 * What a failure is about.  Shrinking keeps a reduced run only while it
 * fails the same way, so every failure says which invariant (or which
 * kind of expectation) it broke.
 */
enum fail_kind {
	FK_RUNNER = 0,   /* the run could not be set up or driven */
	FK_EXPECT,       /* a scenario expectation: expect, expect_stats ... */
	FK_DATA,         /* data not intact: wrong bytes, dtype, shape ... */
	FK_CALLBACK,     /* a done callback ran twice, or broke its contract */
	FK_HANG,         /* never completed, not quiescent, ACK never came */
	FK_IN_FLIGHT,    /* two control messages in flight, or a stray ACK */
	FK_WRITE,        /* a write outside what the receiver advertised */
	FK_ERROR,        /* an error completion or channel error not allowed */
	FK_LEAK,         /* something left at quiescence or at teardown */
	FK_OUTCOME,      /* a recv failed without a cause that allows it */
	FK_CRASH,        /* the run died (swarm and shrink workers only) */
	FK_COUNT
};

const char *fail_kind_name(enum fail_kind kind);
/* -EINVAL for an unknown name. */
int fail_kind_from_name(const char *name, enum fail_kind *kind_p);

struct failures {
	char *msgs[FAILURES_KEPT];
	enum fail_kind msg_kinds[FAILURES_KEPT];
	size_t count;            /* all of them, kept or not */
	uint32_t kinds;          /* bit (1 << kind) for every kind seen */
	enum fail_kind first;    /* kind of the first failure */
};

void failures_add(struct failures *f, enum fail_kind kind,
		  const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void failures_print(const struct failures *f, FILE *out);
void failures_free(struct failures *f);

struct adv_entry {
	uint64_t key;            /* (node, peer, index); 0 = empty slot */
	uint64_t addr;
	uint64_t length;
	uint32_t rkey;
	uint64_t step_id;        /* of the request that advertised it */
	uint64_t name_hash;
	bool done;               /* completed (or its connection is gone) */
	uint64_t adv_seq;        /* engine event number of the advertisement */
	uint64_t done_seq;       /* ... and of its completion */
};

struct checker {
	struct tv_sim *sim;
	struct failures *fails;
	uint32_t nodes;
	bool trace;
	bool allow_errors;
	bool active;             /* false once teardown starts */
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
	uint64_t overflow_fires;   /* sim/cq/overflow: overflows expected */
	uint64_t dup_landed;
	uint64_t engine_events;  /* numbers advertisements and completions */
	/* advertised destinations, open addressing */
	struct adv_entry *adv;
	size_t adv_cap;
	size_t adv_used;
	/* counters for the summary */
	uint64_t checked_writes;
	uint64_t checked_msgs;
	uint64_t error_cqes;
	uint64_t channel_errors;
};

int checker_init(struct checker *c, struct tv_sim *sim, uint32_t nodes,
		 struct failures *fails);
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

#endif /* TV_CLI_CHECK_H */
