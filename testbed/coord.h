/*
 * This file is private to tensorverbs' testbed: the step coordinator of
 * `tensorverbs serve`.
 *
 * The processes of one scenario run on different hosts and clocks, so the
 * scenario's virtual times cannot order their sends and receives.  A small
 * TCP star (node 0 in the middle, on node 0's address and port number: TCP
 * and rdma_cm's RoCE/IB port spaces are separate) orders them instead:
 * barriers between time points, an abort any node can raise so nobody
 * waits forever for a dead peer, and every node's statistics gathered on
 * node 0 for the scenario's all-node expectations.  Nothing of the tensor
 * traffic goes over it.
 *
 * Non-blocking: coord_poll() from the run's loop does all the I/O.
 */
#ifndef TV_TESTBED_COORD_H
#define TV_TESTBED_COORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <sys/socket.h>

#define COORD_MSG_MAX 512
#define COORD_AG_MAX (1u << 20) /* bytes a node publishes in an all-gather */

struct coord_peer {
	int fd;                 /* -1: not connected */
	bool hello;             /* node 0: its HELLO arrived */
	char in[COORD_MSG_MAX * 2];
	size_t in_len;
	char *out;              /* pending output */
	size_t out_len;
	size_t out_cap;
	uint64_t bar_seq;       /* node 0: the last barrier it entered */
	uint64_t *stats;        /* node 0: its STATS, or NULL */
	int err;                /* a line lost here (-ENOMEM): sticky */
};

struct coord {
	uint32_t node;
	uint32_t nodes;
	uint64_t fingerprint;   /* same scenario and seed everywhere */
	struct sockaddr_storage addr0; /* node 0's */
	int listen_fd;          /* node 0 */
	struct coord_peer *peers; /* node 0: [nodes]; others: [1] = node 0 */
	size_t npeers;
	bool joined;            /* everyone said HELLO (node 0: WELCOMEs sent) */
	uint64_t next_connect_ns;
	uint64_t bar_entered;   /* our last BAR */
	uint64_t bar_done;      /* the last GO */
	size_t nstats;          /* uint64s per STATS line */
	uint64_t *my_stats;     /* node 0's own */
	bool stats_all;         /* node 0: every node's STATS are in */
	bool aborted;
	char abort_msg[COORD_MSG_MAX];
	/* An all-gather (coord_ag_*): one at a time, the same on every node. */
	uint64_t ag_seq;        /* node 0: the one being collected */
	bool ag_mine;           /* node 0: its own blob is in */
	bool *ag_have;          /* node 0: [nodes] blob complete */
	uint8_t **ag_blob;      /* [nodes] */
	size_t *ag_len;
	bool ag_done;           /* every blob is here */
};

int coord_init(struct coord *c, uint32_t node, uint32_t nodes,
	       const struct sockaddr *addr0, uint64_t fingerprint,
	       size_t nstats, char *msg, size_t cap);
void coord_fini(struct coord *c);
/*
 * Accept, connect, read, write: non-blocking.  Events handled, or < 0:
 * coord_error()'s, from the poll that lost a line on.
 */
int coord_poll(struct coord *c, uint64_t now_ns);
/* A line this node could not queue or keep (-ENOMEM, -EMSGSIZE), or 0. */
int coord_error(const struct coord *c);
/*
 * What coord_poll() would act on, for a caller to sleep on: the listening
 * socket, every peer's (POLLOUT while output waits), and in *wake_ns_p when
 * a leaf tries to connect again (UINT64_MAX: no time of its own).  The
 * count of pfd filled, or -ENOSPC when more than cap are needed.
 */
int coord_pollfds(const struct coord *c, struct pollfd *pfd, size_t cap,
		  uint64_t *wake_ns_p);
int coord_barrier_enter(struct coord *c, uint64_t seq);
bool coord_barrier_done(const struct coord *c, uint64_t seq);
/* Tell everyone to stop: this node failed (msg says why). */
void coord_abort(struct coord *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Send this node's statistics (node 0 keeps its own). */
int coord_send_stats(struct coord *c, const uint64_t *v);
/* Node 0, after the final barrier: node n's statistics or NULL. */
const uint64_t *coord_stats(const struct coord *c, uint32_t n);
/*
 * All-gather: publish len bytes (<= COORD_AG_MAX); once every node did,
 * coord_ag_done() and coord_ag_take() gives every node's blob (the
 * caller frees them).  Lines AG/AGEND to node 0, AGB/AGBEND/AGDONE back,
 * the bytes in hex.
 */
int coord_ag_start(struct coord *c, const void *mine, size_t len);
bool coord_ag_done(const struct coord *c);
int coord_ag_take(struct coord *c, uint8_t ***blobs_p, size_t **lens_p);

#endif /* TV_TESTBED_COORD_H */
