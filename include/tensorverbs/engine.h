/*
 * tensorverbs — the tensor-rendezvous protocol engine.
 *
 * One engine per node, over one verbs facade device.  Sends are passive
 * (they place a tensor in the local table); receives start the transfer:
 * TENSOR_REQUEST -> (META_DATA_UPDATE -> TENSOR_RE_REQUEST) -> RDMA write of
 * the tensor with the request index as immediate, or ERROR_STATUS.
 *
 * The engine is single-threaded and driven by tv_engine_progress(); every
 * callback runs from inside progress (or from a blocking receive).
 */
#ifndef TENSORVERBS_ENGINE_H
#define TENSORVERBS_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/tensor.h>
#include <tensorverbs/vf.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Things the engine reports to an observer (checkers, tracing). */
enum tv_engine_event_kind {
	TV_EV_MSG_SEND = 1,   /* control message posted: msg_type, index */
	TV_EV_MSG_RECV,       /* control message parsed */
	TV_EV_ACK_SEND,
	TV_EV_ACK_RECV,
	TV_EV_REQ_ADVERTISE,  /* receiver offers addr/rkey/length for index */
	TV_EV_TENSOR_WRITE,   /* sender posts the tensor write to addr/length */
	TV_EV_RECV_DONE,      /* a receive completed: code */
	TV_EV_CHANNEL_ERROR,  /* the channel failed: code */
};

struct tv_engine_event {
	enum tv_engine_event_kind kind;
	uint32_t node;
	uint32_t peer;
	uint32_t msg_type;
	uint32_t request_index;
	uint64_t step_id;
	const char *name; /* valid during the call only; may be NULL */
	uint64_t addr;
	uint32_t rkey;
	uint64_t length;
	int code;
};

/*
 * Called in the middle of the engine's work (a message's event comes
 * between its tensor write and the books of it): it must not call the
 * engine back.
 */
typedef void (*tv_engine_observe_fn)(void *ctx,
				     const struct tv_engine_event *ev);

struct tv_channel;

struct tv_engine_config {
	uint32_t node_id;
	/* Receives posted per channel; bounds requests in flight. */
	uint32_t queue_depth;
	uint32_t cq_depth;
	/* Registered pool: blocks registered once, tensors carved from them. */
	size_t pool_block_bytes;
	/* Run-time data validation: checksum every tensor, mismatch = error. */
	bool validate_checksum;
	/*
	 * The largest tensor a peer may make us allocate (and register, i.e.
	 * pin) for one receive: its META_DATA_UPDATE says how big, and every
	 * byte from the wire is hostile.  A larger one is refused before
	 * anything is allocated: the receive fails with RESOURCE_EXHAUSTED
	 * (naming the tensor, the size asked and this limit), the sender is
	 * let go by a cancelling TENSOR_RE_REQUEST, the metadata is not
	 * cached, and the channel stays up.  0: the default, 4 GiB.
	 */
	uint64_t max_recv_bytes;
	/*
	 * Payloads up to this many bytes (control messages, small tensors)
	 * are posted inline (IBV_SEND_INLINE): the work request carries them,
	 * so the device does not read them from registered memory and the
	 * post has no DMA to wait for.  The backend may grant less (0 on
	 * devices without inline sends): the QP says what it took; a device
	 * that refuses the size gets QPs without inline.  0: never.
	 */
	uint32_t max_inline_bytes;
	struct tv_vf_connect_cfg connect;
	/* "Device" memory that cannot be registered (default: malloc). */
	void *(*device_alloc)(void *ctx, size_t size_bytes);
	void (*device_free)(void *ctx, void *ptr);
	void *device_ctx;
	tv_engine_observe_fn observe;
	void *observe_ctx;
	/*
	 * Fault tolerance.  A control message not ACKed within
	 * ack_timeout_ns fails its channel (a lost message or a lost ACK:
	 * TensorFlow #11416).  A receive not completed within
	 * recv_timeout_ns of its start fails with DEADLINE_EXCEEDED (0: no
	 * deadline: a tensor may take long to be produced).  After a channel
	 * fails, reconnect(ctx, ch) is called from progress to re-establish
	 * it (tv_channel_reset() on both ends, exchange, connect); requests
	 * caught by the failure are sent again, up to max_retries times.
	 * reconnect returns -EAGAIN when the peer is not there yet (it
	 * crashed and restarts): the engine asks again after a back-off.
	 * Without reconnect they fail with the channel's status.
	 */
	uint64_t ack_timeout_ns;
	uint64_t recv_timeout_ns;
	uint32_t max_retries;
	int (*reconnect)(void *ctx, struct tv_channel *ch);
	void *reconnect_ctx;
	/*
	 * For tests of the test tools only (swarm, shrink): deliberately
	 * broken behaviour, TV_BREAK_* bits.  0 in every real use.
	 */
	uint32_t test_breakage;
};

/* Ignore the ACK timeout: a lost ACK or message hangs the channel. */
#define TV_BREAK_NO_ACK_TIMEOUT 0x1u

void tv_engine_config_default(struct tv_engine_config *cfg);

int tv_engine_create(struct tv_vf_device *dev,
		     const struct tv_engine_config *cfg,
		     struct tv_engine **engine_p);
/*
 * Fails every live request with CANCELLED (their callbacks run) and
 * releases every resource.  Returns 0, or -EBUSY while tensors created on
 * this engine are still referenced by the caller: then only the tensors'
 * memory is left; unref them and call tv_engine_destroy() again.
 */
int tv_engine_destroy(struct tv_engine *engine);

/*
 * The engine's own libfiu points (engine/alloc) are asked only once
 * something may have enabled them, so that an ordinary run does not pay
 * libfiu's lookup on every allocation.  Call this before enabling them with
 * libfiu directly.  tv_flt_activate() calls it; so does tv_engine_create()
 * when the process runs under fiu-run (FIU_ENABLE or FIU_CTRL_FIFO in the
 * environment).  It cannot be undone: the points stay live.
 */
void tv_engine_fault_points_live(void);

/* ---- channels -------------------------------------------------------- */

/* What one side sends the other out of band to connect. */
struct tv_channel_info {
	struct tv_vf_qp_endpoint ep;
	uint64_t rx_addr; /* our rx message buffer, for the peer's writes */
	uint32_t rx_rkey;
	uint32_t rx_bytes;
};

int tv_channel_create(struct tv_engine *engine, uint32_t peer_id,
		      struct tv_channel **channel_p);
int tv_channel_info(struct tv_channel *ch, struct tv_channel_info *info_p);
int tv_channel_connect(struct tv_channel *ch,
		       const struct tv_channel_info *remote);
/*
 * Start the channel afresh: a failed (or, failing it first, a working)
 * channel gets a new QP with its receives posted; requests waiting on it
 * stay queued.  Connect it again with tv_channel_info/tv_channel_connect.
 */
int tv_channel_reset(struct tv_channel *ch);
/*
 * Fail the channel from outside: its connection manager saw the peer go
 * (RDMA_CM_EVENT_DISCONNECTED, device removal).  Exactly what an error
 * completion does: QP to ERR, requests fail with code and message (or,
 * with a reconnect callback, wait for it).  No-op on a failed channel.
 */
int tv_channel_fail(struct tv_channel *ch, enum tv_code code,
		    const char *message);
bool tv_channel_failed(const struct tv_channel *ch);
uint32_t tv_channel_peer(const struct tv_channel *ch);

/* The channel to peer_id, or NULL. */
struct tv_channel *tv_engine_channel(struct tv_engine *engine,
				     uint32_t peer_id);

/* ---- send and receive ------------------------------------------------ */

/* Publish tensor t as (step_id, name); the engine takes a reference. */
int tv_engine_send(struct tv_engine *engine, uint64_t step_id,
		   const char *name, struct tv_tensor *t);
/* Publish a failure for (step_id, name): the receiver gets this status. */
int tv_engine_send_error(struct tv_engine *engine, uint64_t step_id,
			 const char *name, enum tv_code code,
			 const char *message);

/*
 * Called once per receive.  On success t is a new reference the callee
 * owns; on failure t is NULL and status says why (the sender's code and
 * message for errors raised on the sender).
 */
typedef void (*tv_recv_done_fn)(void *arg, const struct tv_status *status,
				struct tv_tensor *t);

int tv_engine_recv_async(struct tv_engine *engine, struct tv_channel *ch,
			 uint64_t step_id, const char *name,
			 enum tv_placement place, tv_recv_done_fn done,
			 void *arg);
/*
 * Blocking convenience: progresses the engine (and, on the simulator, the
 * world) until the receive completes or timeout_ns passes (-ETIMEDOUT).
 * Returns 0 when the receive completed; *status_p tells how.
 */
int tv_engine_recv(struct tv_engine *engine, struct tv_channel *ch,
		   uint64_t step_id, const char *name, enum tv_placement place,
		   uint64_t timeout_ns, struct tv_status *status_p,
		   struct tv_tensor **tensor_p);

/* Poll completions and run due work; returns items handled or -errno. */
int tv_engine_progress(struct tv_engine *engine);

struct tv_engine_stats {
	uint64_t recvs_started;
	uint64_t recvs_ok;
	uint64_t recvs_failed;
	uint64_t msgs_sent[4];    /* by wire message type */
	uint64_t msgs_recv[4];
	uint64_t acks_sent;       /* all ACKs, riding on writes or not */
	uint64_t acks_recv;
	uint64_t acks_ridden;     /* of acks_sent: carried by a tensor write */
	uint64_t tensor_writes;
	uint64_t tensor_bytes_written;
	uint64_t zero_copy_writes; /* straight from the sender's buffer */
	uint64_t staged_writes;    /* from a clone / serialized / host copy */
	/*
	 * The fetch path with cached metadata, posted ahead of the books:
	 * requests sent from the receive call itself (idle channel), and
	 * tensor writes sent from the request's completion.
	 */
	uint64_t fast_requests;
	uint64_t fast_responses;
	/* Posts whose payload went inline (cfg.max_inline_bytes). */
	uint64_t inline_posts;
	uint64_t proxy_copies;     /* receiver-side proxy -> device copies */
	uint64_t checksum_failures;
	uint64_t malformed_msgs;   /* control messages the decoder refused */
	uint64_t ack_timeouts;
	uint64_t recv_timeouts;
	uint64_t channel_failures;
	uint64_t reconnects;
	uint64_t retries;          /* requests sent again after a reset */
	uint64_t quarantined_buffers; /* freed RDMA targets held back */
	uint64_t pool_blocks;
	uint64_t pool_bytes_registered;
	uint64_t mr_registrations; /* every reg_mr the engine made */
	/* Things alive now (all zero at a clean teardown). */
	uint64_t live_requests;    /* receiver side */
	uint64_t live_responses;   /* sender side */
	uint64_t queued_msgs;      /* waiting for a busy message buffer */
	uint64_t unmatched_sends;  /* published, never requested */
	uint64_t unmatched_requests; /* requested, never published */
	uint64_t live_tensors;
	uint64_t pool_live_bytes;
};

void tv_engine_stats(const struct tv_engine *engine,
		     struct tv_engine_stats *stats_p);
uint32_t tv_engine_node_id(const struct tv_engine *engine);
struct tv_vf_device *tv_engine_device(struct tv_engine *engine);

#ifdef __cplusplus
}
#endif
#endif /* TENSORVERBS_ENGINE_H */
