/*
 * This file is private to the port-channel engine (engine/port/): the
 * objects behind include/tensorverbs/port.h and what its files share.
 */
#ifndef TV_PORT_INT_H
#define TV_PORT_INT_H

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/port.h>

#define PORT_ERR_MAX 192
#define PORT_MAX_MSG_BYTES (1ull << 31) /* the IB message size limit */
#define PORT_SCRATCH_BYTES 64           /* the atomics' fetched values */
#define PORT_HANDLE_MAGIC 0x4d505654u   /* "TVPM" little-endian */
#define PORT_HANDLE_VERSION 1u
#define PORT_STAGE_MAX 64u               /* MSCCL++'s maxWrPerSend */
#define PORT_SIGNAL_EVERY 16u            /* a completion at least this often */
#define PORT_INLINE_BYTES 64u            /* asked of the QP; it may grant less */

struct tv_port_ctx {
	struct tv_vf_device *dev;
	struct tv_vf_pd *pd;
	struct tv_port_config cfg;
	struct tv_vf_connect_cfg connect; /* cfg.connect's, or the default */
	enum tv_port_signal_mode mode;  /* AUTO resolved */
	uint32_t max_qp_wr;
	uint32_t nr_mems;
	uint32_t nr_conns;
	uint32_t nr_proxies;
};

struct tv_port_mem {
	struct tv_port_ctx *ctx;
	struct tv_vf_mr *mr;
	uint8_t *addr;
	size_t size;
};

/* A post waiting for room on its connection. */
struct port_post {
	enum tv_port_post_op op;
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t local_addr;
	uint32_t lkey;
	uint32_t length;
	uint64_t add;                   /* ATOMIC_ADD */
	uint32_t imm;                   /* WRITE_IMM */
};

/* A flush the proxy asked for: done once completed >= want. */
struct port_flush {
	uint64_t pos;
	uint64_t want;
};

struct tv_port_conn {
	struct tv_port_ctx *ctx;
	uint32_t peer;
	struct tv_vf_cq *send_cq;
	struct tv_vf_cq *recv_cq;       /* write-imm mode only */
	struct tv_vf_qp *qp;
	bool connected;
	/* Fetched values of atomics land here (never read: MSCCL++ too). */
	uint64_t *scratch;
	struct tv_vf_mr *scratch_mr;

	uint64_t posted;                /* staged or posted: the WRs' count */
	uint64_t completed;             /* the last WR known complete */
	/*
	 * Staged work requests, posted as one chain (one doorbell) by
	 * port_conn_post_staged(): the proxy stages a turn's triggers.
	 */
	struct port_post *stage;        /* [PORT_STAGE_MAX] */
	uint32_t staged;
	bool batching;
	struct port_post *defer;        /* ring, defer_cap entries */
	uint32_t defer_cap;
	uint32_t defer_head;
	uint32_t defer_len;
	uint64_t hold_until_ns;         /* port/sem/delay: posts wait */

	/* Flushes the proxy asked for, in FIFO order (proxy thread). */
	struct port_flush *flushes;
	uint32_t flush_cap;
	uint32_t flush_head;
	uint32_t flush_len;
	/*
	 * The FIFO position after the last flush done: producers poll it.
	 * Release by the proxy thread after the completions it counted;
	 * acquire by producers, so a producer that sees its flush done sees
	 * everything the proxy did before (the sources may be reused).
	 */
	_Atomic uint64_t flush_done_pos;
	/* 0, or -EIO once failed: stored (release) after err is written. */
	_Atomic int failed;
	char err[PORT_ERR_MAX];

	/* write-imm mode: the one inbound semaphore and its value. */
	struct tv_port_sem *imm_sem;
	uint64_t imm_value;
	uint32_t recvs_posted;

	uint32_t nr_sems;
	bool in_proxy;
	struct tv_port_conn_stats st;
};

struct tv_port_sem {
	struct tv_port_conn *conn;
	struct tv_port_mem *token;
	uint64_t token_off;
	/* Written by the NIC (atomic mode) or the proxy thread (write-imm). */
	_Atomic uint64_t *inbound;
	/*
	 * Bumped by the waiter only; atomic because a proxy-thread reset and
	 * checkers may read it, relaxed: no data hangs on it.
	 */
	_Atomic uint64_t expected;
	uint64_t outbound;              /* the signalling thread's */
	struct tv_port_mem_handle remote;
	uint64_t remote_off;
	bool has_remote;
};

/* One ring slot: written by one producer per lap, read by the proxy. */
struct port_slot {
	_Atomic uint64_t fst;
	_Atomic uint64_t snd;
};

struct tv_port_fifo {
	uint32_t size;
	uint32_t shift;                 /* log2(size) */
	uint32_t breakage;
	const struct tv_port_fifo_vis *vis;
	void *vis_ctx;
	tv_port_observe_fn observe;
	void *observe_ctx;
	uint32_t node;
	struct port_slot *ring;
	/* Producers: the next position to take (compare-and-swap). */
	_Alignas(64) _Atomic uint64_t head;
	/* What producers see of the tail (the consumer's release store). */
	_Alignas(64) _Atomic uint64_t prod_tail;
	/* The consumer's own tail (proxy thread only). */
	_Alignas(64) uint64_t tail;
};

/* A trigger's memory id: a local source or a peer's destination. */
struct port_memref {
	bool local;
	struct tv_port_mem *mem;
	struct tv_port_mem_handle h;
};

struct tv_port_proxy {
	struct tv_port_ctx *ctx;
	struct tv_port_fifo *fifo;
	struct port_memref *mems;       /* TV_PORT_MAX_MEMORIES */
	uint32_t nr_mems;
	struct tv_port_sem **sems;      /* TV_PORT_MAX_SEMAPHORES */
	uint32_t nr_sems;
	struct tv_port_conn **conns;    /* distinct connections of sems */
	uint32_t nr_conns;
	uint32_t nr_chans;
	/* TV_PORT_BREAK_BLOCKING_FLUSH: the connection everything waits on. */
	struct tv_port_conn *blocked_on;
	uint64_t stall_until_ns;        /* port/proxy/stall */
	/* A trigger it could not use: set (release) after err is written. */
	_Atomic bool bad;
	char err[PORT_ERR_MAX];
	struct tv_port_proxy_stats st;
};

struct tv_port_chan {
	struct tv_port_proxy *proxy;
	struct tv_port_sem *sem;
	uint32_t sem_id;
	uint32_t dst_id;
	uint32_t src_id;
};

/* ctx.c */
void port_emit(const struct tv_port_ctx *ctx, struct tv_port_event *ev);
void port_event_init(struct tv_port_event *ev, enum tv_port_event_kind kind,
		     uint32_t node);
uint64_t port_now_ns(const struct tv_port_ctx *ctx);

/* conn.c, for the proxy and semaphores */
int port_conn_post_room(const struct tv_port_conn *conn, uint32_t n);
int port_conn_request_flush(struct tv_port_conn *conn, uint64_t pos);
void port_conn_fail(struct tv_port_conn *conn, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Hold the connection's next posts until not_before_ns. */
void port_conn_delay_next(struct tv_port_conn *conn, uint64_t not_before_ns);
/* The proxy's turn: stage posts (batching), then one chain per conn. */
void port_conn_batch(struct tv_port_conn *conn, bool on);
int port_conn_post_staged(struct tv_port_conn *conn);

/* sem.c, for write-imm receives; a put and its signal (the proxy) */
void port_sem_store_inbound(struct tv_port_sem *sem, uint64_t value);
int port_sem_put_signal(struct tv_port_sem *sem,
			const struct tv_port_mem_handle *dst, uint64_t dst_off,
			const struct tv_port_mem *src, uint64_t src_off,
			uint64_t size_bytes);

#endif /* TV_PORT_INT_H */
