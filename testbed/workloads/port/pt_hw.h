/*
 * This file is private to the port workload: a node on real verbs
 * (hw.c: the engine, set-up and the testbed's hw ops; hw_task.c: the
 * producer threads and this node's checks).
 */
#ifndef TV_PT_HW_H
#define TV_PT_HW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pt.h"

#define PH_BAD_MAX 256

struct tv_cm;

struct ph_link {
	uint32_t pair;             /* index in the scenario's pairs */
	uint32_t peer;
	uint64_t token_off;
	struct tv_vf_qp_endpoint ep;
	struct tv_port_conn *conn;
	struct tv_port_sem *sem;
	uint32_t sem_id;
	struct tv_port_chan *chan;
};

enum ph_task_state {
	PH_IDLE = 0,
	PH_RUNNING,
	PH_DONE,
	PH_FAILED,
};

struct ph;

struct ph_task {
	struct ph *h;
	const struct pt_task *t;
	pthread_t th;
	bool started;
	bool joined;
	_Atomic int state;         /* enum ph_task_state, set by its thread */
	uint64_t ops_ok;
	uint64_t bytes;
	uint64_t data_bad;
	int err;
	char msg[320];
};

struct ph {
	struct tv_tb_hw *hw;
	const struct pt_scenario *sc;
	uint32_t me;
	uint64_t seed;
	struct tv_cm *cm;
	struct tv_vf_device *base;
	struct tv_vf_device *dev;
	struct tv_vf_connect_cfg connect; /* the device's (RDMA_* env) */
	struct tv_port_ctx *ctx;
	bool imm_mode;             /* signals by write-with-immediate */
	struct tv_port_proxy *proxy;
	uint8_t *data;
	uint8_t *tokens;
	size_t data_bytes;
	size_t token_bytes;
	struct tv_port_mem *mdata;
	struct tv_port_mem *mtok;
	uint32_t local_id;
	uint32_t remote_id[PT_MAX_NODES];
	bool has_remote[PT_MAX_NODES];
	struct ph_link *links;
	uint32_t nlinks;
	struct ph_task *tasks;     /* this node's */
	size_t ntasks;
	pthread_mutex_t lock;      /* the observer's books from any thread */
	uint64_t handled;          /* FIFO positions taken (proxy thread) */
	_Atomic uint64_t pushed;
	uint64_t data_bad;
	/*
	 * Regions that ended other than the reference while faults were
	 * armed: node 0 judges them with every node's task failures (a
	 * peer's failed put explains them; nothing else does).
	 */
	uint64_t final_bad;
	char bad[PH_BAD_MAX];
	bool have_all;
	uint64_t all_ops_ok;
	uint64_t all_ops;
	uint64_t all_failed;
};

/*
 * hw.c: the set-up blob a node sends its peers over the coordinator,
 * little-endian: magic, version, node, link count; its data and token
 * handles; per link: pair index, QP number, PSN, LID, pad, GID, its token's
 * offset.  The bytes are the peer's: decoded as hostile.
 */
#define PH_MAGIC 0x50485654u     /* "TVHP" */
#define PH_VERSION 1u
#define PH_LINK_BYTES 40u
#define PH_HEAD_BYTES (16u + 2 * TV_PORT_HANDLE_BYTES)

struct ph_peer_info {
	struct tv_port_mem_handle data;
	struct tv_port_mem_handle tok;
	const uint8_t *links;     /* inside the blob */
	uint32_t nlinks;
};

/* Node n's blob, every field checked: -EPROTO and why in msg. */
int ph_blob_read(const uint8_t *b, size_t len, uint32_t n, uint32_t nodes,
		 struct ph_peer_info *pi, char *msg, size_t cap);
/*
 * The peer's entry for pair: its endpoint and token offset; -ENOENT when
 * it has none, -EPROTO when its fields cannot be right.
 */
int ph_peer_link(const struct ph_peer_info *pi, uint32_t pair,
		 struct tv_vf_qp_endpoint *ep_p, uint64_t *tok_off_p);

/* hw_task.c */
int ph_tasks_init(struct ph *h);
void ph_tasks_free(struct ph *h);
int ph_tasks_start(struct ph *h, uint64_t t);
int ph_tasks_wait(struct ph *h);
bool ph_tasks_running(struct ph *h);
void ph_tasks_join(struct ph *h);
void ph_tasks_stats(const struct ph *h, uint64_t *ok_p, uint64_t *ops_p,
		    uint64_t *failed_p, uint64_t *bytes_p);
void ph_check_final(struct ph *h);
void ph_observe(void *ctx, const struct tv_port_event *ev);

extern const struct tv_tb_hw_ops pt_hw_ops;
/* bench.c: tensorverbs bench port */
int pt_bench_port_main(int argc, char **argv, const char *argv0);

/*
 * Split across hosts, each node sends the other its set-up bytes (magic,
 * version, node, the connection's and the floor's QP endpoints, the
 * semaphore's token handle and offset, the data handle, the floor's
 * buffer and rkey).  pt_bench_blob_read decodes the peer's: -EPROTO, msg
 * naming the first wrong field, for a blob of another length, magic,
 * version or node, an endpoint or handle that does not decode, handles of
 * another node, a token offset outside its region, or a data region
 * smaller than data_bytes (other options).
 */
#define PT_BENCH_MAGIC 0x42505654u /* "TVPB", then version 1 */
#define PT_BENCH_EP 16u
#define PT_BENCH_TOK (PT_BENCH_EP + TV_TB_EP_BYTES)
#define PT_BENCH_TOK_OFF (PT_BENCH_TOK + TV_PORT_HANDLE_BYTES)
#define PT_BENCH_DATA (PT_BENCH_TOK_OFF + 8u)
#define PT_BENCH_FEP (PT_BENCH_DATA + TV_PORT_HANDLE_BYTES)
#define PT_BENCH_FADDR (PT_BENCH_FEP + TV_TB_EP_BYTES)
#define PT_BENCH_FRKEY (PT_BENCH_FADDR + 8u)
#define PT_BENCH_BLOB_BYTES (PT_BENCH_FRKEY + 4u)
struct pt_bench_peer {
	struct tv_vf_qp_endpoint ep, fep;  /* the connection's, the floor's */
	struct tv_port_mem_handle tok, data;
	uint64_t tok_off, floor_addr;
	uint32_t floor_rkey;
};
void pt_bench_blob_write(uint32_t node, const struct pt_bench_peer *p,
			 uint8_t *b);
int pt_bench_blob_read(const uint8_t *b, size_t len, uint32_t peer,
		       uint64_t data_bytes, char *msg, size_t cap,
		       struct pt_bench_peer *p_p);

#endif /* TV_PT_HW_H */
