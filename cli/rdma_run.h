/*
 * This file is private to the tensorverbs CLI: one scenario node as its
 * own process on a real RDMA device (`tensorverbs serve`).
 *
 * The process publishes the scenario's sends from its node and issues its
 * node's recvs.  Virtual times do not exist on hardware; their order does:
 * every distinct time point of the scenario is a barrier across processes
 * (coord.h), a process settles (every control message it sent is ACKed,
 * nothing queued) before entering it, and a recv of step s starts only
 * after this node's recvs of earlier steps completed.  So a recv scheduled
 * before a send reaches the sender's table before the tensor is
 * published, as on the simulator, and cached metadata is cached.
 */
#ifndef TV_CLI_RDMA_RUN_H
#define TV_CLI_RDMA_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "scenario.h"

#define RR_MAX_NODES 256

struct rr_opts {
	uint32_t node;
	struct sockaddr_storage addrs[RR_MAX_NODES];
	bool have_addr[RR_MAX_NODES];
	uint64_t seed;
	uint64_t fingerprint;      /* of the scenario file and seed */
	uint32_t timeout_s;
	uint32_t connect_attempts;
	uint32_t retry_delay_ms;
	bool reconnect;
	uint64_t ack_timeout_ms;   /* 0: the scenario's, else the engine's */
	uint64_t inject_disconnect_step; /* 0: none */
	json_t *faults;            /* the fault plan (rdma_faults.h), or NULL */
	int64_t faults_node;       /* only that node arms it; < 0: every node */
	bool fiu_ctrl;             /* libfiu remote control (fiu-ctrl) */
	bool verbose;
};

/* Runs this process's part; returns the exit status (cli.h). */
int rr_run(const struct scenario *sc, const struct rr_opts *o);

#endif /* TV_CLI_RDMA_RUN_H */
