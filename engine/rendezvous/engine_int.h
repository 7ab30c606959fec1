/*
 * This file is private to tensorverbs' engine: the objects behind the
 * public API and the functions the engine's files share (tv__ prefix).
 */
#ifndef TV_ENGINE_INT_H
#define TV_ENGINE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/engine.h>

#include "alloc.h"
#include "hot.h"
#include "list.h"
#include "map.h"
#include "meta.h"
#include "pool.h"
#include "serialize.h"
#include "wire.h"

/* ---- tensors -------------------------------------------------------- */

/* A freed buffer a peer may still write into (quarantine.c). */
struct tv_qbuf {
	struct tv_list link;       /* on ch->quarantine */
	struct tv_pool_buf buf;
	uint64_t rx_seq;           /* the channel's receive count then */
	struct tv_tensor *owner;   /* the struct this node is inside, or NULL */
};

enum tv_mem_kind {
	TV_MEM_NONE,    /* dead, empty or string tensor: no flat data */
	TV_MEM_POOL,    /* registered pool memory */
	TV_MEM_DEVICE,  /* the device allocator's (never registered) */
	TV_MEM_WRAPPED, /* caller-owned, unregistered host memory */
};

struct tv_tensor {
	struct tv_engine *engine;
	uint32_t refs;
	enum tv_dtype dtype;
	struct tv_shape shape;
	bool is_dead;
	enum tv_placement place;
	uint64_t num_elements;
	/* Flat data (DMA-able dtypes). */
	enum tv_mem_kind mem;
	void *data;
	size_t size_bytes;
	struct tv_pool_buf buf;               /* when mem == TV_MEM_POOL */
	void (*free_fn)(void *arg, void *data); /* when TV_MEM_WRAPPED */
	void *free_arg;
	/* Strings (TV_DT_STRING): num_elements owned copies. */
	struct tv_str *strings;
	/* An RDMA destination: quarantined when freed (quarantine.c). */
	bool q_armed;
	uint32_t q_peer;
	uint32_t q_gen;
	uint64_t q_rx_seq;
	struct tv_qbuf qb;         /* the node, once freed into quarantine */
};

/*
 * A host tensor in two steps, for the fetch path: its struct taken now
 * (uninitialised; NULL without memory), set up later over a pool buffer
 * for metadata tv_meta_validate() accepted (a DMA-able dtype, not dead).
 */
struct tv_tensor *tv__tensor_reserve(struct tv_engine *e);
void tv__tensor_unreserve(struct tv_engine *e, struct tv_tensor *t);
void tv__tensor_init_pool(struct tv_tensor *t, struct tv_engine *e,
			  const struct tv_meta *m, const struct tv_pool_buf *buf);

/* A tensor for a received string payload: takes ownership of items. */
int tv__tensor_adopt_strings(struct tv_engine *e, const struct tv_shape *shape,
			     struct tv_str *items, uint64_t count,
			     struct tv_tensor **tensor_p);

/* ---- what is queued on a channel's tx message buffer ----------------- */

enum tv_txent_kind {
	TV_TX_REQUEST,  /* a struct tv_request: REQUEST or RE_REQUEST */
	TV_TX_RESPONSE, /* a struct tv_response: META_DATA_UPDATE or ERROR */
};

struct tv_txent {
	struct tv_list link;
	enum tv_txent_kind kind;
	enum tv_msg_type type;
};

/* ---- receiver side: one per receive --------------------------------- */

enum tv_req_state {
	TV_REQ_WAIT_CREDIT, /* not sent yet: too many requests in flight */
	TV_REQ_QUEUED,      /* REQUEST / RE_REQUEST waiting for the tx buffer */
	TV_REQ_SENT,        /* waiting for the write, an update or an error */
	TV_REQ_ABANDON,     /* a cancelling RE_REQUEST queued: free when sent */
};

struct tv_request {
	struct tv_channel *ch;
	struct tv_hnode hnode;     /* in ch->requests, by index */
	struct tv_txent tx;
	struct tv_list wait_link;  /* on ch->credit_wait */
	struct tv_list deadline_link; /* on e->deadlines, in start order */
	uint64_t deadline_ns;
	uint32_t retries;          /* times sent again after a reset */
	enum tv_req_state state;
	bool indexed;              /* holds a request index (and a credit) */
	uint32_t index;
	uint64_t step_id;
	char *name;
	uint16_t name_len;
	enum tv_placement place;
	tv_recv_done_fn done;
	void *arg;
	/* What we believe the tensor is (cache) and where it goes. */
	bool meta_valid;
	struct tv_tensor *result;  /* host result, or device result */
	/* A host result not set up yet: its struct, and its buffer. */
	struct tv_tensor *result_slot;
	struct tv_pool_buf result_buf;
	bool advertised;           /* a message offered dst to the peer */
	bool has_stage;            /* proxy (device) or proto (string) */
	struct tv_pool_buf stage;
	struct tv_qbuf *stage_q;   /* its quarantine node, allocated with it */
	uint64_t dst_addr;
	uint32_t dst_rkey;
	uint64_t dst_bytes;
	bool has_checksum;
	uint64_t checksum;
	/*
	 * Not zeroed on allocation (TV__FL_ALLOC_UPTO): tv__meta_clear(),
	 * tv__name_set().  Zeroing costs ~3 ns per 8 bytes under emulation.
	 */
	struct tv_meta meta;       /* valid when meta_valid */
	char name_buf[TV__NAME_INLINE]; /* name, when it fits */
	struct tv_status fail;     /* why, for TV_REQ_ABANDON; last (alloc.h) */
};

/* ---- sender side: one per request received --------------------------- */

enum tv_resp_state {
	TV_RESP_NEW,         /* being processed, in no queue */
	TV_RESP_WAIT_TENSOR, /* in the tag table, waiting for a send */
	TV_RESP_QUEUED_MSG,  /* META_DATA_UPDATE / ERROR waiting for tx */
	TV_RESP_WAIT_RE_REQ, /* update sent, waiting for RE_REQUEST */
	TV_RESP_ERROR_SENT,  /* ERROR_STATUS posted, waiting for its ACK */
	TV_RESP_WRITING,     /* tensor write posted */
};

struct tv_response {
	struct tv_channel *ch;
	struct tv_hnode hnode;     /* ch->responses, by index, while alive */
	struct tv_hnode tag_hnode; /* e->tag_waiters while WAIT_TENSOR */
	struct tv_txent tx;
	enum tv_resp_state state;
	uint32_t index;
	uint64_t step_id;
	char *name;
	uint16_t name_len;
	/* From the request (its metadata: req_meta, below). */
	bool req_meta_valid;
	uint64_t dst_addr;
	uint32_t dst_rkey;
	uint64_t dst_bytes;
	/* What we send (its metadata: meta, below). */
	struct tv_tensor *tensor;  /* zero-copy source (a reference) */
	/* What the tag held: given back to the tag table if we are dropped. */
	struct tv_tensor *source;
	bool from_error;
	bool has_clone;            /* staged copy / serialized proto */
	struct tv_pool_buf clone;
	uint64_t checksum;
	/*
	 * Not zeroed on allocation (TV__FL_ALLOC_UPTO): tv__meta_clear(),
	 * tv__name_set().
	 */
	struct tv_meta req_meta;   /* the request's, when req_meta_valid */
	struct tv_meta meta;
	char name_buf[TV__NAME_INLINE]; /* name, when it fits */
	struct tv_status status;   /* for ERROR_STATUS; last (alloc.h) */
};

/* ---- the tag table: (step_id, name) -> tensor or waiting response ----- */

struct tv_tag {
	struct tv_hnode hnode;
	uint64_t step_id;
	char *name;
	uint16_t name_len;
	struct tv_tensor *tensor;  /* NULL: an error was published */
	char name_buf[TV__NAME_INLINE]; /* name, when it fits */
	struct tv_status status;   /* last (alloc.h) */
};

/* ---- channels -------------------------------------------------------- */

struct tv_channel {
	struct tv_engine *engine;
	uint32_t peer_id;
	struct tv_vf_cq *cq;
	struct tv_vf_qp *qp;
	bool connected;
	bool failed;
	bool reconnect_pending;    /* failed; cfg.reconnect not called yet */
	bool give_up;              /* reconnecting failed: no more retries */
	bool fail_pending;         /* failed; requests not settled yet */
	uint64_t reconnect_at_ns;  /* -EAGAIN: not before this */
	uint32_t reconnect_backoff; /* in ACK timeouts, doubling */
	uint64_t msg_sent_ns;      /* when the message in flight went out */
	bool msg_stamp_pending;    /* ... stamped by the next timer pass */
	struct tv_response *await_ack; /* its ERROR_STATUS is in flight */
	/* Receive completions handled on this QP, and the QP's generation. */
	uint64_t rx_seq;
	uint32_t gen;
	struct tv_list quarantine; /* struct tv_qbuf: freed, maybe written */
	/* Message buffers: ours to write from, ours to be written into. */
	uint8_t *tx_mem;
	struct tv_vf_mr *tx_mr;
	uint8_t *rx_mem;
	struct tv_vf_mr *rx_mr;
	uint32_t buf_bytes;
	uint64_t remote_rx_addr;
	uint32_t remote_rx_rkey;
	uint32_t remote_rx_bytes;
	/* The tx buffer's two statuses (the original's RdmaMessageBuffer). */
	bool tx_local_busy;
	bool tx_remote_busy;
	struct tv_list tx_queue;   /* struct tv_txent */
	uint32_t acks_owed;        /* ACKs waiting for a send-queue slot */
	bool ack_rider;            /* the message in dispatch is not ACKed yet:
				      a tensor write it posts carries the ACK */
	uint32_t sq_outstanding;
	uint32_t sq_depth;
	uint32_t rq_posted;
	/* Receiver side. */
	struct tv_hmap requests;   /* by index: every indexed request */
	uint32_t next_index;
	uint32_t inflight;         /* requests holding a credit */
	uint32_t inflight_max;
	struct tv_list credit_wait;
	bool granting;             /* tv__request_grant_credits() running */
	struct tv_hmap meta_cache; /* struct tv_meta_entry by name */
	/* Sender side: responses waiting for RE_REQUEST or writing. */
	struct tv_hmap responses;
	/*
	 * A request answered before its decode (tv__response_early), for
	 * tv__response_on_request() to keep the books of: its tag (NULL: no
	 * such request), its response (NULL: allocating it failed) and its
	 * write's post.
	 */
	struct {
		struct tv_tag *tag;    /* still in the table */
		struct tv_response *resp;
		int ret;
		bool rode;
	} early;
	struct tv_status fail_status;
};

struct tv_meta_entry {
	struct tv_hnode hnode;
	char *name;
	uint16_t name_len;
	struct tv_meta meta;
};

/* quarantine.c */
void tv__quarantine_put(struct tv_channel *ch, struct tv_qbuf *q);
void tv__quarantine_release(struct tv_channel *ch, bool all);
void tv__quarantine_arm(struct tv_channel *ch, struct tv_tensor *t);
/* true: t's struct now holds its buffer in quarantine (do not free it). */
bool tv__quarantine_tensor(struct tv_engine *e, struct tv_tensor *t);

/* ---- the engine ------------------------------------------------------ */

#define TV_MAX_CHANNELS 4096

struct tv_engine {
	struct tv_engine_config cfg;
	struct tv_vf_device *dev;
	struct tv_vf_pd *pd;
	struct tv_pool *pool;
	struct tv_channel **channels; /* by peer id, grown on demand */
	uint32_t nchannels;
	struct tv_hmap tags;          /* struct tv_tag or struct tv_response */
	struct tv_hmap tag_waiters;   /* responses waiting for a tensor */
	struct tv_list deadlines;     /* requests with a deadline, FIFO */
	/* Recycled objects of the hot path (alloc.h). */
	struct tv__freelist free_requests;
	struct tv__freelist free_responses;
	struct tv__freelist free_tensors;  /* struct tv_tensor, data apart */
	struct tv__freelist free_tags;
	/* Scratch: a received message stays intact while callbacks send. */
	struct tv_msg rx_msg;         /* decode */
	struct tv_msg tx_msg;         /* encode */
	struct tv_engine_stats stats;
	bool destroying;
	/*
	 * Inside tv_engine_progress(): its timer pass follows.  Outside it
	 * (an application call) nothing promises a pass: a completion that
	 * would bring one may never come (a send in RNR retries for ever).
	 */
	bool in_progress;
};

/* wr_id tags: low bits of an aligned pointer, or a constant. */
#define TV_WRID_RECV 1u
#define TV_WRID_ACK 2u
#define TV_WRID_MSG 3u
#define TV_WRID_WRITE_TAG 4u /* | request index << 3 */

/* To the observer, if any: ev (the caller's) gets kind, node and peer. */
void tv__emit(struct tv_engine *e, enum tv_engine_event_kind kind,
	      uint32_t peer, struct tv_engine_event *ev);

/* channel.c */
void tv__channel_enqueue(struct tv_channel *ch, struct tv_txent *tx);
void tv__channel_unqueue(struct tv_channel *ch, struct tv_txent *tx);
void tv__channel_kick(struct tv_channel *ch);
/*
 * Nothing stands between a new message and the wire: the channel is up,
 * its tx buffer is free on both sides, no message or ACK waits, and the
 * send queue has room.  Then tv__channel_send_now() may send tx (in no
 * queue) at once, as tv__channel_kick() would have.
 */
static inline bool tv__channel_tx_idle(const struct tv_channel *ch)
{
	return ch->connected && !ch->failed && !ch->tx_local_busy &&
	       !ch->tx_remote_busy && !ch->acks_owed &&
	       ch->sq_outstanding < ch->sq_depth &&
	       tv_list_empty(&ch->tx_queue);
}
void tv__channel_send_now(struct tv_channel *ch, struct tv_txent *tx);
/*
 * A tensor write in two halves, so the fetch path can keep its books in
 * between: the post alone (what the peer waits for; *rode_p: an ACK we
 * owed rode on it), then its counters, event and ACK accounting.
 */
int tv__channel_post_write(struct tv_channel *ch, uint32_t index,
			   uint64_t dst_addr, uint32_t rkey, uint64_t addr,
			   uint32_t lkey, uint64_t len, bool *rode_p);
void tv__channel_write_posted(struct tv_channel *ch,
			      const struct tv_response *resp, uint64_t len,
			      bool rode);
void tv__channel_fail(struct tv_channel *ch, enum tv_code code,
		      const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int tv__channel_progress(struct tv_channel *ch);
/* ACK timeout and reconnection; returns the channel's next deadline. */
uint64_t tv__channel_timers(struct tv_channel *ch, uint64_t now_ns);
void tv__channel_destroy(struct tv_channel *ch);

/* request.c (receiver) */
int tv__request_start(struct tv_channel *ch, uint64_t step_id,
		      const char *name, size_t name_len,
		      enum tv_placement place, tv_recv_done_fn done, void *arg);
/* Its TENSOR_REQUEST / RE_REQUEST into buf; it has offered dst from then. */
int tv__request_wire_encode(struct tv_request *req, uint8_t *buf, size_t cap,
			    size_t *len_p);
void tv__request_advertised(struct tv_request *req);
void tv__request_msg_posted(struct tv_request *req);
void tv__request_on_meta(struct tv_channel *ch, const struct tv_msg *msg);
void tv__request_on_error(struct tv_channel *ch, const struct tv_msg *msg);
void tv__request_on_write(struct tv_channel *ch, uint32_t index,
			  uint32_t byte_len);
void tv__request_fail_all(struct tv_channel *ch, const struct tv_status *st);
/* Will requests caught by a failure of ch be sent again? */
bool tv__channel_retries(const struct tv_channel *ch);
/* Fail requests past their deadline; returns the earliest one left. */
uint64_t tv__request_expire(struct tv_engine *e, uint64_t now_ns);
void tv__request_grant_credits(struct tv_channel *ch);
struct tv_request *tv__request_find(struct tv_channel *ch, uint32_t index);

/* response.c (sender) */
bool tv__response_early(struct tv_channel *ch, const uint8_t *buf,
			size_t len, struct tv_msg *msg);
void tv__response_on_request(struct tv_channel *ch, const struct tv_msg *msg);
void tv__response_on_re_request(struct tv_channel *ch,
				const struct tv_msg *msg);
void tv__response_encode(struct tv_response *resp, struct tv_msg *msg);
void tv__response_msg_posted(struct tv_response *resp);
/* The peer ACKed our message in flight. */
void tv__response_acked(struct tv_channel *ch);
void tv__response_write_done(struct tv_response *resp,
			     enum tv_vf_wc_status status);
void tv__response_free(struct tv_response *resp);
struct tv_response *tv__response_find(struct tv_channel *ch, uint32_t index);
bool tv__response_match(struct tv_engine *e, struct tv_tag *tag);
void tv__response_drop_all(struct tv_channel *ch, bool writing_too);

/* engine.c */
struct tv_tag *tv__tag_find(struct tv_engine *e, uint64_t step_id,
			    const char *name, size_t name_len);
struct tv_tag *tv__tag_take(struct tv_engine *e, uint64_t step_id,
			    const char *name, size_t name_len);
void tv__tag_remove(struct tv_engine *e, struct tv_tag *tag);
/* Give a dropped response's tensor (or error) back to the tag table. */
void tv__tag_republish(struct tv_engine *e, uint64_t step_id,
		       const char *name, size_t name_len, struct tv_tensor *t,
		       const struct tv_status *st);
void tv__tag_free(struct tv_engine *e, struct tv_tag *tag);
uint64_t tv__checksum(const void *data, size_t len);

#endif /* TV_ENGINE_INT_H */
