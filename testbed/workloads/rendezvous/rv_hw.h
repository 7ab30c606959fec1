/*
 * This file is private to the rendezvous workload: a rendezvous engine on
 * a real RDMA device, connected with rdma_cm (serve: hw.c; bench rxe).
 *
 * Opening goes env -> address -> device: the RDMA_* variables are parsed
 * and checked against the machine's devices, rdma_cm finds the device that
 * holds the node's address, and the two must agree (RDMA_DEVICE may be
 * left unset).
 */
#ifndef TV_RV_HW_H
#define TV_RV_HW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/workload.h>

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
	uint64_t max_recv_bytes;
	bool validate_checksum;
	uint64_t ack_timeout_ns;   /* 0: the engine's default */
	uint64_t recv_timeout_ns;  /* 0: none */
	uint32_t max_retries;      /* 0: the engine's default */
	uint32_t max_inline_bytes; /* if max_inline_set (0 is "never") */
	bool max_inline_set;
	tv_engine_observe_fn observe;
	void *observe_ctx;
	struct tv_flt *flt;        /* wrap the device with it (faults.h) */
	struct tv_tb_hw *hw;       /* serve: its tap goes on the wrapper */
	struct tv_tb_tap *tap;     /* bench --record: this tap instead */
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

/* The workload's hw ops (workload.h) and its benchmark (bench_rxe.c). */
extern const struct tv_tb_hw_ops rv_hw_ops;
int rv_bench_rxe_main(int argc, char **argv, const char *argv0);

#endif /* TV_RV_HW_H */
