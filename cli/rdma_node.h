/*
 * This file is private to the tensorverbs CLI: one scenario node on a real
 * RDMA device, connected with rdma_cm (serve, bench rxe).
 *
 * Opening goes env -> address -> device: the RDMA_* variables are parsed
 * and checked against the machine's devices, rdma_cm finds the device that
 * holds --addr, and the two must agree (RDMA_DEVICE may be left unset).
 */
#ifndef TV_CLI_RDMA_NODE_H
#define TV_CLI_RDMA_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <tensorverbs/engine.h>

struct tv_cm;
struct tv_flt;

struct rnode_opts {
	uint32_t id;
	uint32_t nodes;
	struct sockaddr_storage addr;
	uint32_t connect_attempts;
	uint32_t retry_delay_ms;
	bool reconnect;            /* the engine reconnects failed channels */
	/* engine options, 0 = the RDMA_* / engine default */
	uint32_t queue_depth;
	uint64_t pool_block_bytes;
	bool validate_checksum;
	uint64_t ack_timeout_ns;   /* 0: the engine's default */
	uint64_t recv_timeout_ns;  /* 0: none */
	uint32_t max_retries;      /* 0: the engine's default */
	uint32_t max_inline_bytes; /* if max_inline_set (0 is "never") */
	bool max_inline_set;
	tv_engine_observe_fn observe;
	void *observe_ctx;
	struct tv_flt *flt;        /* wrap the device with it (faults.h) */
};

struct rnode {
	uint32_t id;
	struct tv_cm *cm;
	struct tv_vf_device *dev;   /* the engine's: the fault layer's if any */
	struct tv_vf_device *base;  /* the ibverbs device under it */
	struct tv_engine *engine;
	char dev_name[64];
};

/*
 * -EINVAL / -ENODEV: the configuration is refused (msg names the variable
 * or the address); other errors: the device or rdma_cm failed.
 */
int rnode_open(struct rnode *n, const struct rnode_opts *o, char *msg,
	       size_t cap);
/* Close the CM, destroy the engine, close the device; 0 or the engine's. */
int rnode_close(struct rnode *n);

/* Parse "J=ADDR:PORT"; -EINVAL if malformed. */
int rnode_parse_peer(const char *text, uint32_t *node_p,
		     struct sockaddr_storage *addr_p);

#endif /* TV_CLI_RDMA_NODE_H */
