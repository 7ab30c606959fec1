/*
 * Connection set-up over librdmacm for the engine's channels.
 *
 * rdma_cm does the rendezvous only (address -> device, REQ/REP/RTU with our
 * private data, DREQ); the channels' QPs are the engine's own, so the
 * active side gets CONNECT_RESPONSE and calls rdma_establish() once its QP
 * is in RTS.  Events are copied and acknowledged first, then handled: an id
 * can then be destroyed from inside its own handler (rdma_destroy_id waits
 * for the acknowledgement of every event it reported).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/rdma_cma.h>

#include <tensorverbs/cm.h>

#include "ibverbs_priv.h"

enum conn_state {
	CS_IDLE = 0,     /* no id: passive and never contacted, or closed */
	CS_ADDR,         /* active: rdma_resolve_addr posted */
	CS_ROUTE,        /* active: rdma_resolve_route posted */
	CS_CONNECTING,   /* active: REQ sent; passive: REP sent */
	CS_ESTABLISHED,
	CS_RETRY_WAIT,   /* active: next attempt at due_ns */
	CS_WAIT_PEER,    /* passive: the peer should connect again by due_ns */
	CS_FAILED,
};

struct cm_conn {
	struct tv_cm *cm;
	uint32_t peer;
	bool active;               /* we connect (our id is the lower one) */
	enum conn_state state;
	struct rdma_cm_id *id;     /* the current connection's id */
	struct tv_channel *ch;
	bool qp_fresh;             /* the channel's QP was never connected */
	bool ever_connected;
	struct sockaddr_storage addr; /* the peer's, when active */
	uint32_t attempts;
	uint64_t due_ns;
	char why[640];
};

struct tv_cm {
	struct tv_cm_config cfg;
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listen_id;
	struct tv_engine *engine;
	char dev_name[TV_IBV_DEVICE_NAME_MAX];
	uint8_t port;
	uint64_t guid;             /* as libibverbs gives it (network order) */
	bool listening;
	bool closing;
	tv_cm_note_fn note;
	void *note_ctx;
	struct cm_conn *conns;     /* [cfg.num_nodes] */
};

/* A copy of an event, taken before it is acknowledged. */
struct cm_ev {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	uint8_t pd[256];
	size_t pd_len;
};

static uint64_t cm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* rdma_cm returns -1 and sets errno. */
static int cm_err(void)
{
	return errno > 0 ? -errno : -EIO;
}

static void cm_note(struct tv_cm *cm, uint32_t peer, enum tv_cm_note n,
		    const char *text)
{
	if (cm->note)
		cm->note(cm->note_ctx, peer, n, text);
}

static void conn_addr_str(const struct cm_conn *c, char *buf, size_t cap)
{
	if (c->active)
		tv_cm_format_addr((const struct sockaddr *)&c->addr, buf, cap);
	else if (c->id)
		tv_cm_format_addr(rdma_get_peer_addr(c->id), buf, cap);
	else
		snprintf(buf, cap, "(peer address unknown)");
}

void tv_cm_config_default(struct tv_cm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->num_nodes = 2;
	cfg->connect_attempts = 20;
	cfg->retry_delay_ms = 500;
	cfg->resolve_timeout_ms = 2000;
	cfg->reaccept_timeout_ms = 30000;
}

const char *tv_cm_peer_state_str(enum tv_cm_peer_state s)
{
	switch (s) {
	case TV_CM_PEER_NONE: return "not connected";
	case TV_CM_PEER_CONNECTING: return "connecting";
	case TV_CM_PEER_CONNECTED: return "connected";
	case TV_CM_PEER_FAILED: return "failed";
	}
	return "?";
}

/* ---- the device behind an id ------------------------------------------- */

static int check_device(struct tv_cm *cm, struct rdma_cm_id *id, char *msg,
			size_t cap)
{
	const char *name;

	if (!id->verbs) {
		ibb_msg(msg, cap, "rdma_cm bound the id to no RDMA device");
		return -ENODEV;
	}
	name = ibv_get_device_name(id->verbs->device);
	if (strcmp(name, cm->dev_name) || id->port_num != cm->port ||
	    ibv_get_device_guid(id->verbs->device) != cm->guid) {
		ibb_msg(msg, cap, "rdma_cm resolved the connection to %s port %u, "
			"but this node's engine uses %s port %u (addresses of one "
			"node must be on one device)", name, id->port_num,
			cm->dev_name, cm->port);
		return -EXDEV;
	}
	return 0;
}

/* ---- create, configure, attach ------------------------------------------ */

static int cm_bind(struct tv_cm *cm, char *msg, size_t cap)
{
	char a[96];
	int ret;

	tv_cm_format_addr((const struct sockaddr *)&cm->cfg.addr, a, sizeof(a));
	if (rdma_create_id(cm->ec, &cm->listen_id, NULL, RDMA_PS_TCP)) {
		ret = cm_err();
		ibb_msg(msg, cap, "rdma_create_id: %s", strerror(-ret));
		return ret;
	}
	if (rdma_bind_addr(cm->listen_id, (struct sockaddr *)&cm->cfg.addr)) {
		ret = cm_err();
		ibb_msg(msg, cap, "cannot bind %s with rdma_cm: %s (is the address "
			"on an RDMA device? `tensorverbs devices` lists them)", a,
			strerror(-ret));
		return ret;
	}
	if (!cm->listen_id->verbs) {
		ibb_msg(msg, cap, "%s is not the address of an RDMA device "
			"(rdma_bind_addr found none)", a);
		return -ENODEV;
	}
	snprintf(cm->dev_name, sizeof(cm->dev_name), "%s",
		 ibv_get_device_name(cm->listen_id->verbs->device));
	cm->port = cm->listen_id->port_num;
	cm->guid = ibv_get_device_guid(cm->listen_id->verbs->device);
	return 0;
}

int tv_cm_create(const struct tv_cm_config *cfg, char *msg, size_t msg_cap,
		 struct tv_cm **cm_p)
{
	struct tv_cm *cm;
	int flags, ret;

	if (!cfg || !cm_p || cfg->num_nodes < 2 ||
	    cfg->node_id >= cfg->num_nodes || !cfg->connect_attempts)
		return -EINVAL;
	cm = calloc(1, sizeof(*cm));
	if (!cm)
		return -ENOMEM;
	cm->cfg = *cfg;
	cm->conns = calloc(cfg->num_nodes, sizeof(*cm->conns));
	if (!cm->conns) {
		ret = -ENOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < cfg->num_nodes; i++) {
		cm->conns[i].cm = cm;
		cm->conns[i].peer = i;
	}
	cm->ec = rdma_create_event_channel();
	if (!cm->ec) {
		ret = cm_err();
		ibb_msg(msg, msg_cap, "rdma_create_event_channel: %s (rdma_ucm "
			"module not loaded?)", strerror(-ret));
		goto fail;
	}
	/* Non-blocking: progress drains events without ever sleeping. */
	flags = fcntl(cm->ec->fd, F_GETFL);
	if (flags < 0 || fcntl(cm->ec->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		ret = cm_err();
		goto fail;
	}
	ret = cm_bind(cm, msg, msg_cap);
	if (ret)
		goto fail;
	*cm_p = cm;
	return 0;
fail:
	tv_cm_destroy(cm);
	return ret;
}

static void conn_drop_id(struct cm_conn *c)
{
	if (!c->id)
		return;
	/* Destroying a connected id sends the DREQ: the peer hears of it. */
	rdma_disconnect(c->id);
	rdma_destroy_id(c->id);
	c->id = NULL;
}

void tv_cm_destroy(struct tv_cm *cm)
{
	if (!cm)
		return;
	for (uint32_t i = 0; cm->conns && i < cm->cfg.num_nodes; i++)
		conn_drop_id(&cm->conns[i]);
	if (cm->listen_id)
		rdma_destroy_id(cm->listen_id);
	if (cm->ec)
		rdma_destroy_event_channel(cm->ec);
	free(cm->conns);
	free(cm);
}

/* The GID table index holding the bound IP address (RoCE), or -1. */
static int addr_gid_index(const struct tv_cm *cm,
			  const struct tv_ibv_port_info *p)
{
	const struct sockaddr *sa = (const void *)&cm->cfg.addr;
	uint8_t want[16] = { 0 };
	int best = -1;

	if (sa->sa_family == AF_INET) {
		want[10] = want[11] = 0xff;
		memcpy(want + 12, &((const struct sockaddr_in *)(const void *)sa)
			       ->sin_addr, 4);
	} else {
		memcpy(want, &((const struct sockaddr_in6 *)(const void *)sa)
			     ->sin6_addr, 16);
	}
	for (uint32_t i = 0; i < p->num_gids; i++) {
		if (memcmp(p->gids[i].raw, want, 16))
			continue;
		/* rdma_cm's default is RoCE v2: the same GID type for data. */
		if (p->gids[i].type == TV_IBV_GID_ROCE_V2)
			return (int)p->gids[i].index;
		if (best < 0)
			best = (int)p->gids[i].index;
	}
	return best;
}

static int pick_gid(struct tv_cm *cm, struct tv_ibv_config *cfg)
{
	struct tv_ibv_device_info *infos = NULL;
	size_t count = 0;
	int ret, idx = -1;

	ret = tv_ibv_query_all(&infos, &count);
	if (ret)
		return ret;
	for (size_t d = 0; d < count; d++) {
		if (strcmp(infos[d].attr.name, cm->dev_name))
			continue;
		for (uint32_t p = 0; p < infos[d].num_ports; p++)
			if (infos[d].ports[p].port_num == cm->port &&
			    infos[d].ports[p].attr.link_layer == 2)
				idx = addr_gid_index(cm, &infos[d].ports[p]);
	}
	tv_ibv_free_all(infos, count);
	/* InfiniBand, or no GID for the address: the usual default. */
	if (idx >= 0)
		cfg->gid_index = (int16_t)idx;
	return 0;
}

int tv_cm_ibv_config(struct tv_cm *cm, const struct tv_ibv_config *env,
		     char *msg, size_t msg_cap, struct tv_ibv_config *cfg_p)
{
	struct tv_ibv_config cfg;
	char a[96];
	int ret;

	if (!cm || !env || !cfg_p)
		return -EINVAL;
	cfg = *env;
	tv_cm_format_addr((const struct sockaddr *)&cm->cfg.addr, a, sizeof(a));
	if (cfg.device[0] && strcmp(cfg.device, cm->dev_name)) {
		ibb_msg(msg, msg_cap, "%s=%s, but %s is on device %s: one node, "
			"one device (unset it or name %s)",
			env->source[TV_IBV_VAR_DEVICE] ?
				env->source[TV_IBV_VAR_DEVICE] : "RDMA_DEVICE",
			cfg.device, a, cm->dev_name, cm->dev_name);
		return -EINVAL;
	}
	if (cfg.port && cfg.port != cm->port) {
		ibb_msg(msg, msg_cap, "RDMA_DEVICE_PORT=%u, but %s is on %s "
			"port %u", cfg.port, a, cm->dev_name, cm->port);
		return -EINVAL;
	}
	snprintf(cfg.device, sizeof(cfg.device), "%s", cm->dev_name);
	cfg.port = cm->port;
	if (cfg.gid_index < 0) {
		ret = pick_gid(cm, &cfg);
		if (ret)
			return ret;
	}
	*cfg_p = cfg;
	return 0;
}

int tv_cm_attach(struct tv_cm *cm, struct tv_engine *engine, char *msg,
		 size_t msg_cap)
{
	struct tv_vf_device *dev;
	struct tv_ibv_config cfg;
	struct ibv_backend_device *bd;
	int ret;

	if (!cm || !engine || cm->engine)
		return -EINVAL;
	/* Under the fault layer, if the engine's device is wrapped. */
	dev = tv_vf_base_device(tv_engine_device(engine));
	if (tv_ibv_device_config(dev, &cfg)) {
		ibb_msg(msg, msg_cap, "the engine's device is not an ibverbs one");
		return -EINVAL;
	}
	bd = to_ibv_backend_dev(dev);
	if (strcmp(cfg.device, cm->dev_name) || cfg.port != cm->port ||
	    ibv_get_device_guid(bd->ctx->device) != cm->guid) {
		ibb_msg(msg, msg_cap, "the engine uses %s port %u, rdma_cm found "
			"the address on %s port %u", cfg.device, cfg.port,
			cm->dev_name, cm->port);
		return -EXDEV;
	}
	if (rdma_listen(cm->listen_id, 64)) {
		ret = cm_err();
		ibb_msg(msg, msg_cap, "rdma_listen: %s", strerror(-ret));
		return ret;
	}
	cm->engine = engine;
	cm->listening = true;
	return 0;
}

void tv_cm_set_note(struct tv_cm *cm, tv_cm_note_fn fn, void *ctx)
{
	cm->note = fn;
	cm->note_ctx = ctx;
}

int tv_cm_fd(const struct tv_cm *cm)
{
	return cm->ec->fd;
}

enum tv_cm_peer_state tv_cm_peer_state(const struct tv_cm *cm, uint32_t peer,
				       const char **why_p)
{
	const struct cm_conn *c;

	if (!cm || peer >= cm->cfg.num_nodes)
		return TV_CM_PEER_NONE;
	c = &cm->conns[peer];
	if (why_p)
		*why_p = c->why;
	switch (c->state) {
	case CS_IDLE: return TV_CM_PEER_NONE;
	case CS_ESTABLISHED: return TV_CM_PEER_CONNECTED;
	case CS_FAILED: return TV_CM_PEER_FAILED;
	default: return TV_CM_PEER_CONNECTING;
	}
}

/* ---- the active side ------------------------------------------------------ */

#define CM_TEXT_MAX 400 /* an error text inside why[] */

static void conn_give_up(struct cm_conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void conn_give_up(struct cm_conn *c, const char *fmt, ...)
{
	char a[96];
	char text[CM_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	conn_addr_str(c, a, sizeof(a));
	conn_drop_id(c);
	c->state = CS_FAILED;
	if (c->active)
		snprintf(c->why, sizeof(c->why), "connecting to node %u at "
			 "%.64s failed after %u attempt(s): %.400s", c->peer,
			 a, c->attempts, text);
	else
		snprintf(c->why, sizeof(c->why), "node %u (%.64s): %.400s",
			 c->peer, a, text);
	cm_note(c->cm, c->peer, TV_CM_NOTE_FAILED, c->why);
	/*
	 * A channel that worked fails now, so what waits on it fails too (the
	 * reconnect callback refuses a FAILED peer).  Never "connected" on
	 * failure: the original's #18630.
	 */
	if (c->ch && !tv_channel_failed(c->ch))
		tv_channel_fail(c->ch, TV_UNAVAILABLE, c->why);
}

/*
 * Something is due in delay_ms: a retry, or giving up on a peer.  The
 * engine's device wakes for it, so a caller asleep in tv_vf_wait_fds() on
 * our fd does not have to poll us by the clock.
 */
static void conn_due_in(struct cm_conn *c, uint32_t delay_ms)
{
	c->due_ns = cm_now_ns() + (uint64_t)delay_ms * 1000000u;
	if (c->cm->engine)
		tv_vf_wake_at(tv_engine_device(c->cm->engine), c->due_ns);
}

/* One attempt failed: retry after the delay, or give up after the last. */
static void conn_attempt_failed(struct cm_conn *c, bool fatal,
				const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void conn_attempt_failed(struct cm_conn *c, bool fatal,
				const char *fmt, ...)
{
	const struct tv_cm_config *cfg = &c->cm->cfg;
	va_list ap;

	assert(c->active);
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	c->attempts++;
	if (fatal || c->attempts >= cfg->connect_attempts || c->cm->closing) {
		char why[CM_TEXT_MAX];

		snprintf(why, sizeof(why), "%.399s", c->why);
		conn_give_up(c, "%s", why);
		return;
	}
	conn_drop_id(c);
	c->state = CS_RETRY_WAIT;
	conn_due_in(c, cfg->retry_delay_ms);
}

static void conn_start_attempt(struct cm_conn *c)
{
	struct tv_cm *cm = c->cm;
	struct sockaddr_storage src = cm->cfg.addr;

	assert(c->active && !c->id);
	/* Our address, any port: the listening id owns the configured one. */
	if (src.ss_family == AF_INET)
		((struct sockaddr_in *)&src)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&src)->sin6_port = 0;
	if (rdma_create_id(cm->ec, &c->id, c, RDMA_PS_TCP)) {
		c->id = NULL;
		conn_attempt_failed(c, false, "rdma_create_id: %s",
				    strerror(errno));
		return;
	}
	c->state = CS_ADDR;
	if (rdma_resolve_addr(c->id, (struct sockaddr *)&src,
			      (struct sockaddr *)&c->addr,
			      (int)cm->cfg.resolve_timeout_ms))
		conn_attempt_failed(c, false, "rdma_resolve_addr: %s",
				    strerror(errno));
}

int tv_cm_connect(struct tv_cm *cm, uint32_t peer_id,
		  const struct sockaddr *addr)
{
	struct cm_conn *c;
	size_t len;
	int ret;

	if (!cm || !cm->engine || !addr || peer_id >= cm->cfg.num_nodes ||
	    peer_id <= cm->cfg.node_id)
		return -EINVAL;
	c = &cm->conns[peer_id];
	if (c->state != CS_IDLE || c->ch)
		return -EALREADY;
	len = addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
					   sizeof(struct sockaddr_in6);
	memcpy(&c->addr, addr, len);
	ret = tv_channel_create(cm->engine, peer_id, &c->ch);
	if (ret)
		return ret;
	c->active = true;
	c->qp_fresh = true;
	c->attempts = 0;
	conn_start_attempt(c);
	return 0;
}

static void on_addr_resolved(struct cm_conn *c)
{
	char msg[256];

	if (check_device(c->cm, c->id, msg, sizeof(msg))) {
		conn_attempt_failed(c, true, "%s", msg);
		return;
	}
	c->state = CS_ROUTE;
	if (rdma_resolve_route(c->id, (int)c->cm->cfg.resolve_timeout_ms))
		conn_attempt_failed(c, false, "rdma_resolve_route: %s",
				    strerror(errno));
}

static void fill_param(struct rdma_conn_param *p, const uint8_t *pd,
		       uint8_t len, uint32_t qpn)
{
	memset(p, 0, sizeof(*p));
	p->private_data = pd;
	p->private_data_len = len;
	/* Our QPs are the engine's: the CM only carries their number. */
	p->qp_num = qpn;
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

static void on_route_resolved(struct cm_conn *c)
{
	struct tv_cm_hello h = { .kind = TV_CM_KIND_CONNECT };
	uint8_t pd[TV_CM_PRIV_BYTES];
	struct rdma_conn_param param;
	int ret;

	h.from_node = c->cm->cfg.node_id;
	h.to_node = c->peer;
	assert(c->qp_fresh);
	ret = tv_channel_info(c->ch, &h.info);
	if (!ret)
		ret = tv_cm_encode_hello(&h, pd, sizeof(pd));
	if (ret) {
		conn_attempt_failed(c, true, "channel info: %s", strerror(-ret));
		return;
	}
	fill_param(&param, pd, sizeof(pd), h.info.ep.qp_num);
	c->state = CS_CONNECTING;
	if (rdma_connect(c->id, &param))
		conn_attempt_failed(c, false, "rdma_connect: %s",
				    strerror(errno));
}

static void conn_established(struct cm_conn *c)
{
	c->state = CS_ESTABLISHED;
	c->ever_connected = true;
	c->attempts = 0;
	/* why stays: the last trouble, for a later failure to name. */
	cm_note(c->cm, c->peer, TV_CM_NOTE_CONNECTED, NULL);
}

static void on_connect_response(struct cm_conn *c, const struct cm_ev *ev)
{
	struct tv_cm_hello h;
	uint8_t version = 0;
	int ret;

	ret = tv_cm_decode_hello(ev->pd, ev->pd_len, &version, &h);
	if (ret || h.kind != TV_CM_KIND_ACCEPT || h.from_node != c->peer ||
	    h.to_node != c->cm->cfg.node_id) {
		conn_attempt_failed(c, true, ret == -EPROTONOSUPPORT ?
				    "the peer speaks protocol version %u, we "
				    "speak %u" : "bad accept private data "
				    "(%u, or wrong node ids)", version,
				    TV_CM_VERSION);
		return;
	}
	ret = tv_channel_connect(c->ch, &h.info);
	if (ret) {
		conn_attempt_failed(c, true, "tv_channel_connect: %s",
				    strerror(-ret));
		return;
	}
	c->qp_fresh = false;
	/* Our QP is in RTS: the RTU may go, the peer moves to ESTABLISHED. */
	if (rdma_establish(c->id)) {
		conn_give_up(c, "rdma_establish: %s", strerror(errno));
		return;
	}
	conn_established(c);
}

static void on_rejected(struct cm_conn *c, const struct cm_ev *ev)
{
	char rmsg[TV_CM_REJECT_MSG_MAX + 1];
	int err;

	/* IB CM reject reasons: 8 invalid service ID, 28 consumer defined. */
	if (ev->status == 28 &&
	    tv_cm_decode_reject(ev->pd, ev->pd_len, &err, rmsg) == 0) {
		conn_attempt_failed(c, true, "RDMA_CM_EVENT_REJECTED by the "
				    "peer: %s (%s)", rmsg, strerror(err));
	} else if (ev->status == 8) {
		conn_attempt_failed(c, false, "RDMA_CM_EVENT_REJECTED, status "
				    "8 (invalid service ID: nothing listens on "
				    "that address and port)");
	} else {
		conn_attempt_failed(c, false, "RDMA_CM_EVENT_REJECTED, status "
				    "%d", ev->status);
	}
}

/* ---- the passive side ----------------------------------------------------- */

static void reject(struct rdma_cm_id *id, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reject(struct rdma_cm_id *id, int err, const char *fmt, ...)
{
	uint8_t pd[TV_CM_REJECT_BYTES];
	char text[TV_CM_REJECT_MSG_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (tv_cm_encode_reject(err, text, pd, sizeof(pd)) == 0)
		rdma_reject(id, pd, sizeof(pd));
	else
		rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
}

/* Validate a connect request; the peer's conn, or NULL (rejected). */
static struct cm_conn *request_conn(struct tv_cm *cm, const struct cm_ev *ev,
				    struct tv_cm_hello *h)
{
	uint8_t version = 0;
	char msg[256];
	int ret;

	ret = tv_cm_decode_hello(ev->pd, ev->pd_len, &version, h);
	if (ret == -EPROTONOSUPPORT) {
		reject(ev->id, EPROTONOSUPPORT, "node %u speaks tensorverbs "
		       "protocol version %u, not %u", cm->cfg.node_id,
		       TV_CM_VERSION, version);
		return NULL;
	}
	if (ret || h->kind != TV_CM_KIND_CONNECT) {
		reject(ev->id, EPROTO, "malformed connect private data");
		return NULL;
	}
	if (h->to_node != cm->cfg.node_id || h->from_node >= cm->cfg.num_nodes ||
	    h->from_node >= cm->cfg.node_id) {
		reject(ev->id, EINVAL, "this is node %u of %u, accepting from "
		       "lower ids only; node %u asked for node %u",
		       cm->cfg.node_id, cm->cfg.num_nodes, h->from_node,
		       h->to_node);
		return NULL;
	}
	if (check_device(cm, ev->id, msg, sizeof(msg))) {
		reject(ev->id, EXDEV, "%.100s", msg);
		return NULL;
	}
	if (cm->closing || !cm->engine) {
		reject(ev->id, ESHUTDOWN, "node %u is shutting down",
		       cm->cfg.node_id);
		return NULL;
	}
	return &cm->conns[h->from_node];
}

/* A channel with a fresh QP for c: created, or reset if it was used. */
static int conn_fresh_channel(struct cm_conn *c)
{
	int ret;

	if (!c->ch) {
		ret = tv_channel_create(c->cm->engine, c->peer, &c->ch);
		if (!ret)
			c->qp_fresh = true;
		return ret;
	}
	if (c->qp_fresh)
		return 0;
	/* The peer came back (or its DREQ is still on the way): start over. */
	ret = tv_channel_reset(c->ch);
	if (ret)
		return ret;
	c->qp_fresh = true;
	cm_note(c->cm, c->peer, TV_CM_NOTE_RESET, "peer reconnected");
	return 0;
}

static void on_connect_request(struct tv_cm *cm, const struct cm_ev *ev)
{
	struct tv_cm_hello h, rep = { .kind = TV_CM_KIND_ACCEPT };
	uint8_t pd[TV_CM_PRIV_BYTES];
	struct rdma_conn_param param;
	struct cm_conn *c;
	int ret;

	c = request_conn(cm, ev, &h);
	if (!c)
		return;
	conn_drop_id(c);
	ret = conn_fresh_channel(c);
	rep.from_node = cm->cfg.node_id;
	rep.to_node = c->peer;
	if (!ret)
		ret = tv_channel_info(c->ch, &rep.info);
	if (!ret)
		ret = tv_cm_encode_hello(&rep, pd, sizeof(pd));
	if (!ret)
		ret = tv_channel_connect(c->ch, &h.info);
	if (ret) {
		reject(ev->id, -ret, "node %u cannot set up its channel: %s",
		       cm->cfg.node_id, strerror(-ret));
		/*
		 * The peer gives up on that rejection (on_rejected: fatal), so
		 * no retry is coming: give up too, saying why, rather than
		 * wait for it.
		 */
		conn_give_up(c, "cannot set up our channel: %s", strerror(-ret));
		return;
	}
	/* Connected to the peer's QP: a retry needs a new one. */
	c->qp_fresh = false;
	c->active = false;
	c->id = ev->id;
	c->id->context = c;
	fill_param(&param, pd, sizeof(pd), rep.info.ep.qp_num);
	if (rdma_accept(c->id, &param)) {
		snprintf(c->why, sizeof(c->why), "rdma_accept: %s",
			 strerror(errno));
		conn_drop_id(c);
		c->state = CS_WAIT_PEER;
		conn_due_in(c, cm->cfg.reaccept_timeout_ms);
		return;
	}
	c->state = CS_CONNECTING;
}

/* ---- both sides ----------------------------------------------------------- */

static void on_disconnected(struct cm_conn *c, struct rdma_cm_id *id,
			    const char *event)
{
	char a[96];
	char text[256];

	if (id != c->id) {
		/* An older connection of this peer, already replaced. */
		rdma_destroy_id(id);
		return;
	}
	conn_addr_str(c, a, sizeof(a));
	conn_drop_id(c);
	if (c->cm->closing) {
		c->state = CS_IDLE;
		return;
	}
	snprintf(text, sizeof(text), "node %u (%s) went away: %s", c->peer, a,
		 event);
	cm_note(c->cm, c->peer, TV_CM_NOTE_DISCONNECTED, text);
	/* The engine calls tv_cm_reconnect() next if it may reconnect. */
	c->state = c->active ? CS_IDLE : CS_WAIT_PEER;
	conn_due_in(c, c->cm->cfg.reaccept_timeout_ms);
	snprintf(c->why, sizeof(c->why), "%s", text);
	if (c->ch && !tv_channel_failed(c->ch))
		tv_channel_fail(c->ch, TV_UNAVAILABLE, text);
}

static void on_device_removal(struct tv_cm *cm)
{
	for (uint32_t i = 0; i < cm->cfg.num_nodes; i++) {
		struct cm_conn *c = &cm->conns[i];

		if (c->state != CS_IDLE || c->ch)
			conn_give_up(c, "RDMA_CM_EVENT_DEVICE_REMOVAL: device "
				     "%s removed", cm->dev_name);
	}
	cm->closing = true;
}

/* Events on an id we initiated, in the order rdma_cm produces them. */
static void on_active_event(struct cm_conn *c, const struct cm_ev *ev)
{
	const char *name = rdma_event_str(ev->type);

	if (ev->id != c->id) {
		if (ev->type == RDMA_CM_EVENT_DISCONNECTED)
			rdma_destroy_id(ev->id);
		return; /* a late event of a dropped attempt */
	}
	switch (ev->type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED: on_addr_resolved(c); break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED: on_route_resolved(c); break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE: on_connect_response(c, ev); break;
	case RDMA_CM_EVENT_REJECTED: on_rejected(c, ev); break;
	case RDMA_CM_EVENT_ESTABLISHED: break; /* after rdma_establish */
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		conn_attempt_failed(c, false, "%s, status %d (%s)", name,
				    ev->status, strerror(abs(ev->status)));
		break;
	default:
		break;
	}
}

static void dispatch(struct tv_cm *cm, const struct cm_ev *ev)
{
	struct cm_conn *c = ev->id->context;
	const char *name = rdma_event_str(ev->type);

	if (ev->type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		on_connect_request(cm, ev);
	} else if (ev->type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		on_device_removal(cm);
	} else if (!c) {
		return; /* the listening id: nothing else for it */
	} else if (ev->type == RDMA_CM_EVENT_DISCONNECTED) {
		on_disconnected(c, ev->id, name);
	} else if (c->active) {
		on_active_event(c, ev);
	} else if (ev->id == c->id && ev->type == RDMA_CM_EVENT_ESTABLISHED) {
		conn_established(c);
	} else if (ev->id == c->id && (ev->type == RDMA_CM_EVENT_CONNECT_ERROR ||
				       ev->type == RDMA_CM_EVENT_UNREACHABLE)) {
		/* Our REP or the RTU got lost: wait for the peer's retry. */
		conn_drop_id(c);
		snprintf(c->why, sizeof(c->why), "%s after accepting", name);
		c->state = CS_WAIT_PEER;
		conn_due_in(c, cm->cfg.reaccept_timeout_ms);
	}
}

static int next_event(struct tv_cm *cm, struct cm_ev *ev)
{
	struct rdma_cm_event *e;

	if (rdma_get_cm_event(cm->ec, &e))
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN :
								  cm_err();
	ev->type = e->event;
	ev->status = e->status;
	ev->id = e->id;
	ev->pd_len = 0;
	if ((e->event == RDMA_CM_EVENT_CONNECT_REQUEST ||
	     e->event == RDMA_CM_EVENT_CONNECT_RESPONSE ||
	     e->event == RDMA_CM_EVENT_REJECTED) &&
	    e->param.conn.private_data && e->param.conn.private_data_len) {
		ev->pd_len = e->param.conn.private_data_len;
		if (ev->pd_len > sizeof(ev->pd))
			ev->pd_len = sizeof(ev->pd);
		memcpy(ev->pd, e->param.conn.private_data, ev->pd_len);
	}
	rdma_ack_cm_event(e);
	return 0;
}

static void run_timers(struct tv_cm *cm)
{
	uint64_t now = cm_now_ns();

	for (uint32_t i = 0; i < cm->cfg.num_nodes; i++) {
		struct cm_conn *c = &cm->conns[i];

		if (c->state == CS_RETRY_WAIT && now >= c->due_ns)
			conn_start_attempt(c);
		else if (c->state == CS_WAIT_PEER && now >= c->due_ns)
			conn_give_up(c, "it did not connect again within %u ms "
				     "(last: %s)", cm->cfg.reaccept_timeout_ms,
				     c->why[0] ? c->why : "-");
	}
}

int tv_cm_progress(struct tv_cm *cm)
{
	struct cm_ev ev;
	int n = 0, ret;

	if (!cm)
		return -EINVAL;
	while ((ret = next_event(cm, &ev)) == 0) {
		dispatch(cm, &ev);
		n++;
	}
	if (ret != -EAGAIN)
		return ret;
	run_timers(cm);
	return n;
}

/* ---- reconnection, tests, the end ------------------------------------------ */

int tv_cm_reconnect(void *ctx, struct tv_channel *ch)
{
	struct tv_cm *cm = ctx;
	struct cm_conn *c;
	uint32_t peer = tv_channel_peer(ch);
	int ret;

	if (!cm || peer >= cm->cfg.num_nodes || cm->conns[peer].ch != ch)
		return -EINVAL;
	c = &cm->conns[peer];
	if (cm->closing || c->state == CS_FAILED)
		return -ECONNABORTED; /* the engine gives up on the channel */
	/* Whoever noticed first: the DREQ tells the peer to start over. */
	conn_drop_id(c);
	ret = tv_channel_reset(ch);
	if (ret) {
		conn_give_up(c, "tv_channel_reset: %s", strerror(-ret));
		return ret;
	}
	c->qp_fresh = true;
	c->attempts = 0;
	cm_note(cm, peer, TV_CM_NOTE_RESET, "reconnecting");
	if (c->active) {
		conn_start_attempt(c);
	} else {
		c->state = CS_WAIT_PEER;
		conn_due_in(c, cm->cfg.reaccept_timeout_ms);
	}
	return 0;
}

int tv_cm_inject_disconnect(struct tv_cm *cm, uint32_t peer)
{
	struct cm_conn *c;

	if (!cm || peer >= cm->cfg.num_nodes)
		return -EINVAL;
	c = &cm->conns[peer];
	if (c->state != CS_ESTABLISHED || !c->id)
		return -ENOTCONN;
	/* Both ends get DISCONNECTED, as when the fabric drops the link. */
	if (rdma_disconnect(c->id))
		return cm_err();
	/*
	 * Ours now, not when rdma_cm says so: it says so when the peer's
	 * DREP arrives, and when that packet is lost (rxe under TCG drops
	 * some) only after the CM's DREQ retries run out, tens of seconds
	 * later, while the peer already waits for us to connect again.
	 * Destroying the id also drops its event still to come.
	 */
	on_disconnected(c, c->id, "RDMA_CM_EVENT_DISCONNECTED (injected)");
	return 0;
}

void tv_cm_close(struct tv_cm *cm)
{
	if (!cm)
		return;
	cm->closing = true;
	for (uint32_t i = 0; i < cm->cfg.num_nodes; i++) {
		conn_drop_id(&cm->conns[i]);
		if (cm->conns[i].state != CS_FAILED)
			cm->conns[i].state = CS_IDLE;
	}
}

void tv_cm_quiesce(struct tv_cm *cm)
{
	if (cm)
		cm->closing = true;
}
