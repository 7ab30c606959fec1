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

struct failures {
	char *msgs[FAILURES_KEPT];
	size_t count;            /* all of them, kept or not */
};

void failures_add(struct failures *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void failures_print(const struct failures *f, FILE *out);
void failures_free(struct failures *f);

struct adv_entry {
	uint64_t key;            /* (node, peer, index); 0 = empty slot */
	uint64_t addr;
	uint64_t length;
	uint32_t rkey;
	uint64_t step_id;        /* of the request that advertised it */
	uint64_t name_hash;
};

struct checker {
	struct tv_sim *sim;
	struct failures *fails;
	uint32_t nodes;
	bool trace;
	bool allow_errors;
	bool active;             /* false once teardown starts */
	int64_t *in_flight;      /* [node * nodes + peer] */
	struct tv_channel_info *rx; /* node's rx buffer for peer */
	bool *rx_known;
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

void checker_engine_event(void *ctx, const struct tv_engine_event *ev);
void checker_sim_event(void *ctx, const struct tv_sim_event *ev);

#endif /* TV_CLI_CHECK_H */
