/*
 * tensorverbs — one-sided port channels (MSCCL++'s host-side data path).
 *
 * The pieces, bottom up (docs/port.md has the whole picture):
 *
 *  - a context (struct tv_port_ctx) per process or simulated node: the
 *    device, a protection domain, the configuration, registered memory;
 *  - memory (struct tv_port_mem): a buffer registered once, and the
 *    handle a peer needs to write into it (struct tv_port_mem_handle,
 *    sent as TV_PORT_HANDLE_BYTES bytes: decoding checks every field);
 *  - a connection (struct tv_port_conn): one RC QP to one peer.  write()
 *    is one RDMA write (the target posts nothing); update_and_sync() is a
 *    fetch-and-add of the delta or, without atomics, a zero-length write
 *    with immediate carrying the low 32 bits, which the target's progress
 *    turns back into a 64-bit value; flush waits for every completion and
 *    names the first failed one by its verbs status.  In-flight work is
 *    bounded below the CQ size (max_write_queue): past it the connection
 *    defers posts until completions come back, it never overruns the CQ;
 *  - a semaphore (struct tv_port_sem): an inbound token in registered
 *    memory that the peer's signals update, an expected counter that waits
 *    consume, an outbound counter that signals send;
 *  - a FIFO (struct tv_port_fifo): many producers, one consumer, 16-byte
 *    triggers committed with a lap-parity bit (an all-zero trigger is
 *    legal);
 *  - a proxy (struct tv_port_proxy): drains the FIFO, turns each trigger
 *    into writes, signals and flushes on the channel's connection, and
 *    completes flushes asynchronously per connection (no flush stalls
 *    another channel);
 *  - port channels (struct tv_port_chan): what producers call: put,
 *    signal, flush, their combinations, and wait;
 *  - LL8 / LL16 packets: data and flag in one 8-byte word, read by polling.
 *
 * Threads.  The proxy's progress (and every connection and semaphore
 * signal it drives) belongs to one thread, the proxy thread.  Producers
 * are any number of other threads: they push triggers, wait for flushes
 * and wait on semaphores, touching only C11 atomics shared with the proxy
 * (each with its memory order and the reason in fifo.c, proxy.c, sem.c).
 * On the simulator everything runs in one thread, and a visibility layer
 * (struct tv_port_fifo_vis) delays what producers and the proxy see of
 * each other's writes by seeded amounts.
 *
 * Every function returns 0 or a negative errno; output parameters come
 * last and are written only on success.  Non-blocking calls return
 * -EAGAIN when they would have to wait; the blocking ones take a deadline
 * (the device's clock, tv_vf_now_ns) and return -ETIMEDOUT when it
 * passes.  -EIO: a work request failed; tv_port_conn_error() says which
 * and why ("an IB work item failed: RETRY_EXC_ERR ...").
 */
#ifndef TENSORVERBS_PORT_H
#define TENSORVERBS_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/vf.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration ------------------------------------------------------ */

enum tv_port_signal_mode {
	TV_PORT_SIGNAL_AUTO = 0,   /* atomics if the device has them */
	TV_PORT_SIGNAL_ATOMIC,     /* fetch-and-add of the delta */
	TV_PORT_SIGNAL_WRITE_IMM,  /* zero-length write with immediate */
};

/*
 * Deliberately broken designs, for regressions and the swarm only (each
 * a real bug of MSCCL++, docs/port.md).  Never set outside tests.
 */
enum tv_port_breakage {
	/* The FIFO's "empty" test is fst == 0 (eras A/B): a zero-byte put at
	 * offset 0 is never seen (#864). */
	TV_PORT_BREAK_SENTINEL = 1u << 0,
	/* A semaphore reused without zeroing its counters (#795). */
	TV_PORT_BREAK_NO_SEM_RESET = 1u << 1,
	/* No bound on in-flight work, completions polled only by flushes:
	 * the CQ overflows (#415/#808). */
	TV_PORT_BREAK_NO_FLOW_CONTROL = 1u << 2,
	/* A flush blocks the proxy until its connection drains (#802). */
	TV_PORT_BREAK_BLOCKING_FLUSH = 1u << 3,
	/* A wait without a deadline (#161/#377). */
	TV_PORT_BREAK_NO_WAIT_TIMEOUT = 1u << 4,
};

struct tv_port_event;
typedef void (*tv_port_observe_fn)(void *ctx, const struct tv_port_event *ev);

struct tv_port_config {
	uint32_t node_id;             /* for messages and events */
	enum tv_port_signal_mode signal_mode;
	uint32_t cq_size;             /* per connection; default 1024 */
	/*
	 * Work requests in flight on a connection before it defers posts
	 * (MSCCL++'s maxWriteQueueSize); default cq_size - 4, at most that.
	 */
	uint32_t max_write_queue;
	uint32_t recv_depth;          /* write-imm mode: receives; default 16 */
	uint32_t fifo_size;           /* power of two; default 128 */
	uint32_t poll_batch;          /* CQEs per poll; default 64 */
	uint32_t test_breakage;       /* enum tv_port_breakage bits */
	tv_port_observe_fn observe;   /* may be NULL */
	void *observe_ctx;
	/*
	 * The QPs' transport: ACK timeout (IB encoding: 4.096 us * 2^n) and
	 * retries.  Defaults 18 and 7, as MSCCL++.
	 */
	uint8_t qp_timeout;
	uint8_t qp_retry_cnt;
	/*
	 * The device's way to connect (port, GID index, MTU: what
	 * tv_ibv_connect_cfg() says for an ibverbs device), or NULL for
	 * tv_vf_connect_cfg_default().  Copied at creation.
	 */
	const struct tv_vf_connect_cfg *connect;
};

void tv_port_config_default(struct tv_port_config *cfg);

/* ---- context and memory -------------------------------------------------- */

struct tv_port_ctx;
struct tv_port_mem;

/* Where a peer may write: what it needs, and nothing more. */
struct tv_port_mem_handle {
	uint64_t addr;
	uint64_t size_bytes;
	uint32_t rkey;
	uint32_t node;            /* whose memory it is */
};

#define TV_PORT_HANDLE_BYTES 32

/* Wire format (docs/port.md): magic, version, node, rkey, addr, size. */
int tv_port_mem_handle_encode(const struct tv_port_mem_handle *h,
			      uint8_t *buf, size_t cap);
/* -EPROTO: not a handle (magic, version, zero size, addr + size wraps). */
int tv_port_mem_handle_decode(const uint8_t *buf, size_t len,
			      struct tv_port_mem_handle *h_p);

int tv_port_ctx_create(struct tv_vf_device *dev,
		       const struct tv_port_config *cfg,
		       struct tv_port_ctx **ctx_p);
/* -EBUSY while connections, memory or proxies are left. */
int tv_port_ctx_destroy(struct tv_port_ctx *ctx);
const struct tv_port_config *tv_port_ctx_config(const struct tv_port_ctx *ctx);
/* The signal mode AUTO resolved to on this device. */
enum tv_port_signal_mode tv_port_ctx_signal_mode(const struct tv_port_ctx *ctx);

/* Register [addr, addr + size) for local use and remote writes/atomics. */
int tv_port_mem_register(struct tv_port_ctx *ctx, void *addr,
			 size_t size_bytes, struct tv_port_mem **mem_p);
int tv_port_mem_deregister(struct tv_port_mem *mem);
void *tv_port_mem_addr(const struct tv_port_mem *mem);
size_t tv_port_mem_size(const struct tv_port_mem *mem);
void tv_port_mem_handle(const struct tv_port_mem *mem,
			struct tv_port_mem_handle *h_p);

/* ---- connections --------------------------------------------------------- */

struct tv_port_conn;

/* A QP towards peer; connect it with the peer's endpoint. */
int tv_port_conn_create(struct tv_port_ctx *ctx, uint32_t peer,
			struct tv_port_conn **conn_p);
int tv_port_conn_endpoint(struct tv_port_conn *conn,
			  struct tv_vf_qp_endpoint *ep_p);
int tv_port_conn_connect(struct tv_port_conn *conn,
			 const struct tv_vf_qp_endpoint *remote);
/* -EBUSY while work is in flight or semaphores use it. */
int tv_port_conn_destroy(struct tv_port_conn *conn);
/*
 * The process that owns it is going away (a crash in the testbed): the
 * connection fails with why as its cause, and tv_port_conn_destroy then
 * proceeds with work in flight, as the kernel destroys a dead process's
 * QPs whatever they hold.  Its peer finds out the way a real one does
 * (transport retries exhausted, waits timing out).
 */
void tv_port_conn_abort(struct tv_port_conn *conn, const char *why);
uint32_t tv_port_conn_peer(const struct tv_port_conn *conn);

/*
 * One RDMA write of size bytes from src (local) at src_off to dst (the
 * peer's) at dst_off.  Both ranges are checked against the memory they
 * name: -EINVAL, nothing posted.  Deferred (not refused) past
 * max_write_queue.  -EIO once the connection failed.
 */
int tv_port_conn_write(struct tv_port_conn *conn,
		       const struct tv_port_mem_handle *dst, uint64_t dst_off,
		       const struct tv_port_mem *src, uint64_t src_off,
		       uint64_t size_bytes);
/*
 * The peer's 64-bit word at dst + dst_off becomes new_value, which it
 * was *src before (only this side writes it): a fetch-and-add of
 * new_value - *src, or a zero-length write with immediate (the low 32
 * bits).  *src = new_value.  -ERANGE in write-imm mode when the step
 * does not fit 32 bits or goes backwards; -EINVAL when the word is not
 * 8-byte aligned or not inside dst.
 */
int tv_port_conn_update_and_sync(struct tv_port_conn *conn,
				 const struct tv_port_mem_handle *dst,
				 uint64_t dst_off, uint64_t *src,
				 uint64_t new_value);
/*
 * A write and then update_and_sync, as one work request where the mode
 * allows: in write-imm mode the data goes with the token's low 32 bits as
 * its immediate (the receive completion comes after the data is placed),
 * in atomic mode it is the write and the fetch-and-add.  As the two calls
 * otherwise; -EAGAIN when there is room for neither.
 */
int tv_port_conn_write_and_sync(struct tv_port_conn *conn,
				const struct tv_port_mem_handle *dst,
				uint64_t dst_off,
				const struct tv_port_mem *src, uint64_t src_off,
				uint64_t size_bytes,
				const struct tv_port_mem_handle *sync,
				uint64_t sync_off, uint64_t *value,
				uint64_t new_value);
/*
 * Poll completions, post what was deferred, apply received immediates.
 * Returns the work done (>= 0) or -EIO when the connection failed now.
 */
int tv_port_conn_progress(struct tv_port_conn *conn);
/* Everything posted so far has completed: 0, -EAGAIN, or -EIO. */
int tv_port_conn_flush_poll(struct tv_port_conn *conn);
/* flush_poll and progress until deadline_ns: 0, -ETIMEDOUT, -EIO. */
int tv_port_conn_flush(struct tv_port_conn *conn, uint64_t deadline_ns);
/* Why it failed ("" while it has not). */
const char *tv_port_conn_error(const struct tv_port_conn *conn);
bool tv_port_conn_failed(const struct tv_port_conn *conn);

struct tv_port_conn_stats {
	uint64_t posted;          /* work requests posted (all signaled) */
	uint64_t completed;       /* their completions, errors included */
	uint64_t deferred;        /* posts that waited for room */
	uint64_t writes;
	uint64_t write_bytes;
	uint64_t atomics;
	uint64_t imm_signals;     /* write-imm mode: signals sent */
	uint64_t imm_received;    /* ... and applied here */
	uint64_t max_in_flight;
};

void tv_port_conn_stats(const struct tv_port_conn *conn,
			struct tv_port_conn_stats *st_p);

/* ---- semaphores ---------------------------------------------------------- */

struct tv_port_sem;

/*
 * A semaphore on conn: its inbound token is 8 bytes of token memory
 * (registered by the caller, at token_off, 8-byte aligned).  The peer's
 * signals target the peer's own semaphore's handle: exchange them with
 * tv_port_sem_handle() / tv_port_sem_set_remote().  In write-imm mode a
 * connection carries one inbound semaphore (-EBUSY for a second).
 */
int tv_port_sem_create(struct tv_port_conn *conn, struct tv_port_mem *token,
		       uint64_t token_off, struct tv_port_sem **sem_p);
int tv_port_sem_destroy(struct tv_port_sem *sem);
void tv_port_sem_handle(const struct tv_port_sem *sem,
			struct tv_port_mem_handle *h_p, uint64_t *off_p);
int tv_port_sem_set_remote(struct tv_port_sem *sem,
			   const struct tv_port_mem_handle *h, uint64_t off);
/* Zero every counter (reuse; MSCCL++ #795): nothing may be in flight. */
void tv_port_sem_reset(struct tv_port_sem *sem);
/* outbound + 1 to the peer's token (the connection's thread). */
int tv_port_sem_signal(struct tv_port_sem *sem);
/* A signal arrived that no wait took yet: take it (true), else false. */
bool tv_port_sem_poll(struct tv_port_sem *sem);
/*
 * One look for a waiter that cannot block (a task on the simulator): 0
 * (taken), -EAGAIN (not yet), -EIO (the connection failed; its error
 * says why), -ETIMEDOUT (deadline_ns passed; nothing was taken).
 */
int tv_port_sem_wait_poll(struct tv_port_sem *sem, uint64_t deadline_ns);
/*
 * poll until deadline_ns, progressing conn (when progress is set: a
 * single-threaded caller) in between: 0, -ETIMEDOUT (a distinct error,
 * never a hang) or -EIO (the connection failed).
 */
int tv_port_sem_wait(struct tv_port_sem *sem, uint64_t deadline_ns,
		     bool progress);
uint64_t tv_port_sem_inbound(const struct tv_port_sem *sem);
uint64_t tv_port_sem_expected(const struct tv_port_sem *sem);
uint64_t tv_port_sem_outbound(const struct tv_port_sem *sem);
struct tv_port_conn *tv_port_sem_conn(const struct tv_port_sem *sem);

/* ---- the FIFO ------------------------------------------------------------ */

/*
 * A trigger: two 64-bit words, laid out as MSCCL++'s ProxyTrigger
 * (written with shifts and masks, never bit-fields):
 *   fst: size (bits 0-31), srcOffset (32-63)
 *   snd: dstOffset (0-31), srcMemoryId (32-40), dstMemoryId (41-49),
 *        type (50-52), semaphoreId (53-62), bit 63: the FIFO's.
 */
struct tv_port_trigger {
	uint64_t fst;
	uint64_t snd;
};

enum tv_port_trigger_type {
	TV_PORT_TRIGGER_DATA = 1,
	TV_PORT_TRIGGER_FLAG = 2,
	TV_PORT_TRIGGER_SYNC = 4,
};

#define TV_PORT_MAX_MEMORIES 512u
#define TV_PORT_MAX_SEMAPHORES 1024u
#define TV_PORT_TRIGGER_MAX_VALUE 0xffffffffull /* size and offsets */

/* -EINVAL for a field out of its width. */
int tv_port_trigger_pack(uint32_t type, uint32_t dst_id, uint64_t dst_off,
			 uint32_t src_id, uint64_t src_off, uint64_t size_bytes,
			 uint32_t sem_id, struct tv_port_trigger *t_p);

struct tv_port_trigger_fields {
	uint32_t type;
	uint32_t dst_id;
	uint32_t src_id;
	uint32_t sem_id;
	uint64_t dst_off;
	uint64_t src_off;
	uint64_t size_bytes;
};

void tv_port_trigger_unpack(const struct tv_port_trigger *t,
			    struct tv_port_trigger_fields *f_p);

struct tv_port_fifo;

/*
 * Visibility: how the producers' slot writes reach the consumer and the
 * consumer's tail reaches the producers.  NULL: at once (C11 atomics
 * between threads).  The simulator's runs delay each by a seeded amount
 * and apply it later with tv_port_fifo_apply_slot/_tail.
 */
struct tv_port_fifo_vis {
	void (*slot_store)(void *ctx, struct tv_port_fifo *f, uint64_t pos,
			   const struct tv_port_trigger *t);
	void (*tail_store)(void *ctx, struct tv_port_fifo *f, uint64_t tail);
};

int tv_port_fifo_create(uint32_t size, uint32_t test_breakage,
			const struct tv_port_fifo_vis *vis, void *vis_ctx,
			struct tv_port_fifo **fifo_p);
void tv_port_fifo_destroy(struct tv_port_fifo *fifo);
uint32_t tv_port_fifo_size(const struct tv_port_fifo *fifo);
/* Producers: one trigger; -EAGAIN when full (as far as they can see). */
int tv_port_fifo_try_push(struct tv_port_fifo *fifo,
			  const struct tv_port_trigger *t, uint64_t *pos_p);
/* The consumer has taken pos (as far as producers can see). */
bool tv_port_fifo_popped(const struct tv_port_fifo *fifo, uint64_t pos);
/* Consumer: the trigger at the tail, if committed; then pop it. */
bool tv_port_fifo_poll(struct tv_port_fifo *fifo, struct tv_port_trigger *t_p,
		       uint64_t *pos_p);
void tv_port_fifo_pop(struct tv_port_fifo *fifo);
/* For visibility layers: make a delayed store happen now. */
void tv_port_fifo_apply_slot(struct tv_port_fifo *fifo, uint64_t pos,
			     const struct tv_port_trigger *t);
void tv_port_fifo_apply_tail(struct tv_port_fifo *fifo, uint64_t tail);
uint64_t tv_port_fifo_head(const struct tv_port_fifo *fifo);
uint64_t tv_port_fifo_tail(const struct tv_port_fifo *fifo);

/* ---- the proxy and port channels ----------------------------------------- */

struct tv_port_proxy;
struct tv_port_chan;

int tv_port_proxy_create(struct tv_port_ctx *ctx,
			 const struct tv_port_fifo_vis *vis, void *vis_ctx,
			 struct tv_port_proxy **proxy_p);
/* -EBUSY while channels are left or flushes are pending. */
int tv_port_proxy_destroy(struct tv_port_proxy *proxy);
/* Memory ids for triggers: local sources and remote destinations. */
int tv_port_proxy_add_local(struct tv_port_proxy *proxy,
			    struct tv_port_mem *mem, uint32_t *id_p);
int tv_port_proxy_add_remote(struct tv_port_proxy *proxy,
			     const struct tv_port_mem_handle *h,
			     uint32_t *id_p);
int tv_port_proxy_add_sem(struct tv_port_proxy *proxy,
			  struct tv_port_sem *sem, uint32_t *id_p);
/*
 * One turn of the proxy loop: connections' completions, then up to
 * budget triggers.  Work done (>= 0); errors are the connections' and
 * surface at flush and wait.
 */
int tv_port_proxy_progress(struct tv_port_proxy *proxy, uint32_t budget);
struct tv_port_fifo *tv_port_proxy_fifo(struct tv_port_proxy *proxy);
/* Nothing queued, in flight, deferred or waiting to be flushed. */
bool tv_port_proxy_idle(const struct tv_port_proxy *proxy);
/* When an injected stall or hold ends (progress then), or 0: none. */
uint64_t tv_port_proxy_wake_ns(const struct tv_port_proxy *proxy);
/* A trigger the proxy could not use (bad id, range, a semaphore with no
 * peer): why, or "". */
const char *tv_port_proxy_error(const struct tv_port_proxy *proxy);

struct tv_port_proxy_stats {
	uint64_t triggers;
	uint64_t data;
	uint64_t flags;
	uint64_t syncs;
	uint64_t flushes_done;
	uint64_t bad_triggers;
	uint64_t dropped;         /* triggers of a failed connection */
};

void tv_port_proxy_stats(const struct tv_port_proxy *proxy,
			 struct tv_port_proxy_stats *st_p);

/* A channel: a semaphore (and its connection), a destination, a source. */
int tv_port_chan_create(struct tv_port_proxy *proxy, uint32_t sem_id,
			uint32_t dst_id, uint32_t src_id,
			struct tv_port_chan **chan_p);
void tv_port_chan_destroy(struct tv_port_chan *chan);

/*
 * Producers (any thread).  Each pushes one trigger: -EAGAIN when the FIFO
 * is full (try again), -EINVAL for a size or offset out of range.
 * *pos_p (may be NULL): its FIFO position, for tv_port_chan_flush_done.
 */
int tv_port_chan_put(struct tv_port_chan *chan, uint64_t dst_off,
		     uint64_t src_off, uint64_t size_bytes, uint64_t *pos_p);
int tv_port_chan_signal(struct tv_port_chan *chan, uint64_t *pos_p);
int tv_port_chan_put_with_signal(struct tv_port_chan *chan, uint64_t dst_off,
				 uint64_t src_off, uint64_t size_bytes,
				 uint64_t *pos_p);
int tv_port_chan_put_with_signal_and_flush(struct tv_port_chan *chan,
					   uint64_t dst_off, uint64_t src_off,
					   uint64_t size_bytes,
					   uint64_t *pos_p);
int tv_port_chan_flush(struct tv_port_chan *chan, uint64_t *pos_p);
/*
 * The flush pushed at pos is done: 0 (everything the channel's
 * connection posted before it completed), -EAGAIN, or -EIO.
 */
int tv_port_chan_flush_done(struct tv_port_chan *chan, uint64_t pos);
/* A signal came in for this channel: take it (as tv_port_sem_poll). */
bool tv_port_chan_poll(struct tv_port_chan *chan);
/* Blocking forms for threads: spin, then yield, until deadline_ns. */
int tv_port_chan_wait(struct tv_port_chan *chan, uint64_t deadline_ns);
int tv_port_chan_flush_wait(struct tv_port_chan *chan, uint64_t pos,
			    uint64_t deadline_ns);
struct tv_port_sem *tv_port_chan_sem(const struct tv_port_chan *chan);

/* ---- LL8 / LL16 packets -------------------------------------------------- */

/*
 * LL16: 16 bytes {data1, flag1, data2, flag2} (32-bit little-endian
 * words) carry 8 bytes; each 8-byte half holds its own flag, so a write
 * landing in 8-byte pieces is never read as valid before it is.  LL8: 8
 * bytes {data, flag} carry 4.  A flag is never 0 (a cleared buffer reads
 * as not ready).
 */
#define TV_PORT_LL16_BYTES 16u
#define TV_PORT_LL8_BYTES 8u

/* Packets for data (len a multiple of 8 / 4) into pkt; -EINVAL. */
int tv_port_ll16_pack(void *pkt, const void *data, size_t len_bytes,
		      uint32_t flag);
int tv_port_ll8_pack(void *pkt, const void *data, size_t len_bytes,
		     uint32_t flag);
/*
 * Read packets from pkt while their flags say flag, into data: the
 * number of whole packets ready from the start (so the caller polls
 * again for the rest), each read with 8-byte atomic loads.
 */
size_t tv_port_ll16_unpack(const void *pkt, void *data, size_t len_bytes,
			   uint32_t flag);
size_t tv_port_ll8_unpack(const void *pkt, void *data, size_t len_bytes,
			  uint32_t flag);

/* ---- events, for checkers and traces ------------------------------------- */

enum tv_port_event_kind {
	TV_PORT_EV_PUSH = 1,      /* a producer committed a trigger: pos */
	TV_PORT_EV_SLOT_STORE,    /* the trigger reached the ring: pos */
	TV_PORT_EV_HANDLE,        /* the proxy took the trigger at pos */
	TV_PORT_EV_POST,          /* a work request posted: op, conn seq */
	TV_PORT_EV_DEFER,         /* a post waits for room on its connection */
	TV_PORT_EV_FLUSH_REQ,     /* a sync asks for everything posted: want */
	TV_PORT_EV_FLUSH_DONE,    /* ... and got it (or an error: code) */
	TV_PORT_EV_SIGNAL,        /* a semaphore's outbound went to value */
	TV_PORT_EV_IMM_APPLIED,   /* write-imm mode: inbound became value */
	TV_PORT_EV_CONN_ERROR,    /* the connection failed: code, message */
	TV_PORT_EV_BAD_TRIGGER,   /* a trigger the proxy could not use */
};

enum tv_port_post_op {
	TV_PORT_OP_WRITE = 1,
	TV_PORT_OP_ATOMIC_ADD,
	TV_PORT_OP_WRITE_IMM,
};

struct tv_port_event {
	enum tv_port_event_kind kind;
	uint32_t node;
	uint32_t peer;            /* of the connection, or UINT32_MAX */
	uint32_t qp_num;
	uint64_t pos;             /* FIFO position */
	struct tv_port_trigger trig;
	uint32_t op;              /* enum tv_port_post_op */
	uint64_t seq;             /* the connection's post count after it */
	uint64_t addr;            /* remote address of a post */
	uint32_t rkey;
	uint64_t length;
	uint64_t value;           /* SIGNAL / IMM_APPLIED / FLUSH_REQ want */
	int code;                 /* 0 or a negative errno */
	const char *msg;          /* CONN_ERROR, BAD_TRIGGER: valid in call */
};

#ifdef __cplusplus
}
#endif
#endif /* TENSORVERBS_PORT_H */
