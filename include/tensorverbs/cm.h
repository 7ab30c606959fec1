/*
 * tensorverbs — connection set-up over librdmacm (rdma_cm).
 *
 * rdma_cm is only the rendezvous: it finds the RDMA device behind an IP
 * address, and carries each side's struct tv_channel_info (QP number, PSN,
 * LID, GID, rx message buffer) plus node ids and a protocol version in the
 * CM private data.  The engine's channels keep their own QPs, created
 * through the verbs facade on the device tv_ibv_open() opened; tv_cm checks
 * it is the very device and port rdma_cm resolved the address to.
 *
 * Roles: the node with the lower id connects, the higher one accepts.
 * Connects are retried (a peer started late, TensorFlow #18630) and fail
 * clearly after the last attempt, naming the address, port, rdma_cm event
 * and status.  A DISCONNECTED or DEVICE_REMOVAL event fails the channel
 * (tv_channel_fail).  tv_cm_reconnect() is the engine's reconnect callback:
 * both ends reset the channel (a new QP), the lower id connects again, the
 * higher one accepts again.
 *
 * Single-threaded, like the engine: call tv_cm_progress() from the same
 * loop as tv_engine_progress().  Every function returns 0 or a negative
 * errno; where a message buffer is taken, a failure leaves one line there.
 */
#ifndef TENSORVERBS_CM_H
#define TENSORVERBS_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/ibverbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the private data (docs/rxe-runs.md has the byte layout) ----------- */

#define TV_CM_MAGIC 0x7476u       /* "tv", little-endian on the wire */
#define TV_CM_VERSION 1u
/* RC connect private data on IB/RoCE is 56 bytes (92 less rdma_cm's). */
#define TV_CM_PRIV_BYTES 56u
/* A reject carries a reason: header, errno, a short message. */
#define TV_CM_REJECT_BYTES 120u
#define TV_CM_REJECT_MSG_MAX (TV_CM_REJECT_BYTES - 8u)

enum tv_cm_kind {
	TV_CM_KIND_CONNECT = 1,   /* active side, in the REQ */
	TV_CM_KIND_ACCEPT = 2,    /* passive side, in the REP */
	TV_CM_KIND_REJECT = 3,    /* passive side, in the REJ */
};

struct tv_cm_hello {
	enum tv_cm_kind kind;
	uint32_t from_node;
	uint32_t to_node;
	struct tv_channel_info info;
};

/* Exactly TV_CM_PRIV_BYTES into buf (cap >= that); -ENOSPC otherwise. */
int tv_cm_encode_hello(const struct tv_cm_hello *h, uint8_t *buf, size_t cap);
/*
 * Decode and validate (magic, version, kind, 24-bit QPN and PSN, non-zero
 * rx buffer).  len may exceed TV_CM_PRIV_BYTES: CM pads private data.
 * -EPROTO for a foreign or malformed blob, -EPROTONOSUPPORT for another
 * version (*version_p says which when not NULL).
 */
int tv_cm_decode_hello(const uint8_t *buf, size_t len, uint8_t *version_p,
		       struct tv_cm_hello *h_p);
int tv_cm_encode_reject(int err, const char *msg, uint8_t *buf, size_t cap);
/* -EPROTO when buf is not one of ours; msg_p gets a NUL-terminated copy. */
int tv_cm_decode_reject(const uint8_t *buf, size_t len, int *err_p,
			char msg_p[TV_CM_REJECT_MSG_MAX + 1]);

/* "10.0.0.1:7470", "[fe80::1%eth0]:7470", "host:7470" (port required). */
int tv_cm_parse_addr(const char *text, struct sockaddr_storage *addr_p);
/* "10.0.0.1:7470" back; never fails (buf gets "?" on an odd family). */
void tv_cm_format_addr(const struct sockaddr *sa, char *buf, size_t cap);

/* ---- the connection manager ------------------------------------------- */

struct tv_cm;

struct tv_cm_config {
	uint32_t node_id;
	uint32_t num_nodes;           /* node ids in private data are < this */
	struct sockaddr_storage addr; /* ours: bound, listened on, source */
	uint32_t connect_attempts;    /* >= 1 */
	uint32_t retry_delay_ms;      /* between attempts */
	uint32_t resolve_timeout_ms;  /* rdma_resolve_addr / _route */
	/* How long an accepting side waits for the peer to come back. */
	uint32_t reaccept_timeout_ms;
};

void tv_cm_config_default(struct tv_cm_config *cfg);

enum tv_cm_peer_state {
	TV_CM_PEER_NONE = 0,     /* nothing known yet (waiting for a connect) */
	TV_CM_PEER_CONNECTING,
	TV_CM_PEER_CONNECTED,
	TV_CM_PEER_FAILED,       /* attempts exhausted, rejected, removed */
};

/* What the owner hears about (logging, invariant checkers). */
enum tv_cm_note {
	TV_CM_NOTE_CONNECTED = 1,   /* channel connected (again) */
	TV_CM_NOTE_RESET,           /* channel reset: in-flight state is gone */
	TV_CM_NOTE_DISCONNECTED,    /* the peer went (channel failed) */
	TV_CM_NOTE_FAILED,          /* gave up on this peer */
};
typedef void (*tv_cm_note_fn)(void *ctx, uint32_t peer, enum tv_cm_note note,
			      const char *text);

/*
 * Event channel, and an id bound to cfg->addr: that tells which RDMA device
 * and port hold the address.  Nothing listens yet.
 */
int tv_cm_create(const struct tv_cm_config *cfg, char *msg, size_t msg_cap,
		 struct tv_cm **cm_p);
void tv_cm_destroy(struct tv_cm *cm);

/*
 * The ibverbs configuration for the bound address: env (RDMA_* as parsed)
 * with the device and port rdma_cm found and, on RoCE, the RoCE v2 GID of
 * the address unless RDMA_GID_INDEX is set.  -EINVAL and a message when
 * RDMA_DEVICE / RDMA_DEVICE_PORT name another device or port.
 */
int tv_cm_ibv_config(struct tv_cm *cm, const struct tv_ibv_config *env,
		     char *msg, size_t msg_cap, struct tv_ibv_config *cfg_p);

/*
 * Use engine (created on a tv_ibv_open() device) for channels; checks it is
 * the bound device and port (name, node GUID, port).  Then listen.
 */
int tv_cm_attach(struct tv_cm *cm, struct tv_engine *engine, char *msg,
		 size_t msg_cap);
void tv_cm_set_note(struct tv_cm *cm, tv_cm_note_fn fn, void *ctx);

/* Start connecting to peer_id (> our id) at addr; see tv_cm_peer_state. */
int tv_cm_connect(struct tv_cm *cm, uint32_t peer_id,
		  const struct sockaddr *addr);
/* Handle queued rdma_cm events and due retries; never blocks. */
int tv_cm_progress(struct tv_cm *cm);
/* The event channel's fd (non-blocking), to sleep on. */
int tv_cm_fd(const struct tv_cm *cm);

/*
 * *why_p: the last trouble with that peer (why it failed, or what went
 * wrong on the way to a connection that came up after all), "" if none.
 */
enum tv_cm_peer_state tv_cm_peer_state(const struct tv_cm *cm, uint32_t peer,
				       const char **why_p);

/* The engine's reconnect callback (tv_engine_config.reconnect, ctx = cm). */
int tv_cm_reconnect(void *ctx, struct tv_channel *ch);

/* Tests: drop the live connection to peer as a network failure would. */
int tv_cm_inject_disconnect(struct tv_cm *cm, uint32_t peer);

/*
 * This node is done: a peer's disconnect from now on is its orderly end
 * too, so it neither fails a channel nor starts a reconnection.
 */
void tv_cm_quiesce(struct tv_cm *cm);

/*
 * Orderly end: from now on disconnects are expected, not failures; every
 * connection is disconnected.  Call before tv_engine_destroy().
 */
void tv_cm_close(struct tv_cm *cm);

const char *tv_cm_peer_state_str(enum tv_cm_peer_state s);

#ifdef __cplusplus
}
#endif
#endif /* TENSORVERBS_CM_H */
