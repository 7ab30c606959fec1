/*
 * bench rxe --floor: the protocol's floor on these devices.  A fetch with
 * cached metadata is two RDMA writes with immediate, one each way, each
 * consumed by a receive and seen on a polled CQ.  This does exactly that
 * with bare verbs (librdmacm to connect, one CQ for sends and receives,
 * every send signaled, a receive re-posted per completion, as the engine
 * does) and no engine at all: what is left between it and the engine's
 * fetch is the engine's own work.  Reported next to ib_write_lat, whose
 * writes are polled in memory and raise no completion at the target.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_floor.h"
#include "le.h"   /* engine/: little-endian bytes */

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define FL_DEPTH 16      /* receives posted; sends in flight stay below */
#define FL_WARMUP 100
#define FL_BUF_BYTES 4096

/* What each side tells the other in the CM private data (le.h): its
 * buffer's address (8 bytes) and rkey (4). */
#define FL_PEER_BYTES 12u
struct fl_peer {
	uint64_t addr;
	uint32_t rkey;
};

struct fl {
	struct rdma_cm_id *listen_id, *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf;
	struct fl_peer peer;
	uint32_t sends;    /* signaled sends not yet completed */
	uint32_t arrived;  /* the peer's writes not yet waited for */
	uint32_t max_inline; /* asked for, then what the QP took */
	bool connected;    /* rdma_connect/rdma_accept completed */
};

static uint64_t fl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int fl_post_recv(struct fl *f)
{
	struct ibv_recv_wr wr = { .wr_id = 1 }, *bad;

	return -ibv_post_recv(f->id->qp, &wr, &bad);
}

/* PD, one CQ, the QP on it, the buffer, FL_DEPTH receives. */
static int fl_resources(struct fl *f)
{
	struct ibv_qp_init_attr attr = { 0 };
	int ret;

	f->pd = ibv_alloc_pd(f->id->verbs);
	f->cq = f->pd ? ibv_create_cq(f->id->verbs, 4 * FL_DEPTH, NULL, NULL, 0) :
			NULL;
	if (!f->cq)
		return -ENOMEM;
	attr.send_cq = attr.recv_cq = f->cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = attr.cap.max_recv_wr = FL_DEPTH;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = f->max_inline;
	if (rdma_create_qp(f->id, f->pd, &attr)) {
		/* As the engine's backend does: no inline rather than no QP. */
		if (errno != EINVAL || !f->max_inline)
			return -errno;
		attr.cap.max_inline_data = 0;
		if (rdma_create_qp(f->id, f->pd, &attr))
			return -errno;
	}
	f->max_inline = attr.cap.max_inline_data;
	f->buf = aligned_alloc(FL_BUF_BYTES, FL_BUF_BYTES);
	if (!f->buf)
		return -ENOMEM;
	memset(f->buf, 0x5a, FL_BUF_BYTES);
	f->mr = ibv_reg_mr(f->pd, f->buf, FL_BUF_BYTES,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!f->mr)
		return -errno;
	for (int i = 0; i < FL_DEPTH; i++) {
		ret = fl_post_recv(f);
		if (ret)
			return ret;
	}
	return 0;
}

/* The peer's buffer and rkey from the CM event's private data: as many
 * bytes as we need, or it is not our floor at the other end. */
static int fl_peer_of(struct fl *f)
{
	const struct rdma_conn_param *c = &f->id->event->param.conn;

	if (!c->private_data || c->private_data_len < FL_PEER_BYTES)
		return -EPROTO;
	f->peer.addr = tv_le_get(c->private_data, 8);
	f->peer.rkey = (uint32_t)tv_le_get((const uint8_t *)c->private_data +
					   8, 4);
	return 0;
}

static socklen_t fl_addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

static int fl_connect(struct fl *f, const struct sockaddr *srv,
		      const struct sockaddr *src, bool server)
{
	struct rdma_addrinfo hints = { 0 }, *res;
	uint8_t mine[FL_PEER_BYTES];
	struct rdma_conn_param cp = { 0 };
	int ret;

	hints.ai_port_space = RDMA_PS_TCP;
	hints.ai_flags = server ? RAI_PASSIVE : 0;
	hints.ai_family = srv->sa_family;
	if (!server) {
		hints.ai_dst_addr = (struct sockaddr *)srv;
		hints.ai_dst_len = fl_addr_len(srv);
	}
	if (server || src) {
		hints.ai_src_addr = (struct sockaddr *)(server ? srv : src);
		hints.ai_src_len = fl_addr_len(hints.ai_src_addr);
	}
	if (rdma_getaddrinfo(NULL, NULL, &hints, &res))
		return -errno;
	ret = rdma_create_ep(server ? &f->listen_id : &f->id, res, NULL, NULL);
	rdma_freeaddrinfo(res);
	if (ret)
		return -errno;
	if (server && (rdma_listen(f->listen_id, 1) ||
		       rdma_get_request(f->listen_id, &f->id)))
		return -errno;
	ret = fl_resources(f);
	if (ret)
		return ret;
	if (server && (ret = fl_peer_of(f)))
		return ret;
	tv_le_put(mine, (uintptr_t)f->buf, 8);
	tv_le_put(mine + 8, f->mr->rkey, 4);
	cp.private_data = mine;
	cp.private_data_len = sizeof(mine);
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	if (server ? rdma_accept(f->id, &cp) : rdma_connect(f->id, &cp))
		return -errno;
	f->connected = true;
	return server ? 0 : fl_peer_of(f);
}

/* Take what the CQ has: receives are counted (and re-posted), sends freed. */
static int fl_poll(struct fl *f)
{
	struct ibv_wc wc[8];
	int n = ibv_poll_cq(f->cq, 8, wc);

	if (n < 0)
		return -EIO;
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "bench rxe --floor: %s\n",
				ibv_wc_status_str(wc[i].status));
			return -EIO;
		}
		if (wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
			f->sends--;
			continue;
		}
		f->arrived++;
		if (fl_post_recv(f))
			return -EIO;
	}
	return 0;
}

static int fl_send(struct fl *f, uint32_t bytes, uint32_t imm)
{
	struct ibv_sge sge = {
		.addr = (uint64_t)(uintptr_t)f->buf, .length = bytes,
		.lkey = f->mr->lkey,
	};
	struct ibv_send_wr wr = { 0 }, *bad;
	int ret = 0;

	/* The send queue never overflows: wait for a slot. */
	while (!ret && f->sends >= FL_DEPTH)
		ret = fl_poll(f);
	if (ret)
		return ret;
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED |
			(bytes <= f->max_inline ? IBV_SEND_INLINE : 0);
	wr.imm_data = htonl(imm);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = f->peer.addr;
	wr.wr.rdma.rkey = f->peer.rkey;
	f->sends++;
	return -ibv_post_send(f->id->qp, &wr, &bad);
}

/* Spin until the peer's write with immediate has arrived. */
static int fl_wait(struct fl *f)
{
	int ret = 0;

	while (!ret && !f->arrived)
		ret = fl_poll(f);
	if (!ret)
		f->arrived--;
	return ret;
}

/*
 * Only a connection that was made is taken down: on a synchronous id
 * rdma_disconnect() waits for the DISCONNECTED event, and an id whose
 * connect failed (the server was not listening yet) never gets one; the
 * retry then hung here for good.
 */
static void fl_close(struct fl *f)
{
	if (f->connected)
		rdma_disconnect(f->id);
	if (f->id && f->id->qp)
		rdma_destroy_qp(f->id);
	if (f->mr)
		ibv_dereg_mr(f->mr);
	free(f->buf);
	if (f->cq)
		ibv_destroy_cq(f->cq);
	if (f->pd)
		ibv_dealloc_pd(f->pd);
	if (f->id)
		rdma_destroy_ep(f->id);
	if (f->listen_id)
		rdma_destroy_ep(f->listen_id);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Round trips: the client writes, the server writes back when it sees it. */
static int fl_loop(struct fl *f, bool server, uint32_t iters, uint32_t bytes,
		   uint64_t *rtt)
{
	int ret = 0;

	for (uint32_t i = 0; !ret && i < iters + FL_WARMUP; i++) {
		uint64_t t0 = fl_now_ns();

		if (server)
			ret = fl_wait(f);
		if (!ret)
			ret = fl_send(f, bytes, i);
		if (!ret && !server)
			ret = fl_wait(f);
		if (!server && i >= FL_WARMUP)
			rtt[i - FL_WARMUP] = fl_now_ns() - t0;
	}
	return ret;
}

int bench_floor(const struct sockaddr *srv, const struct sockaddr *src,
		bool server, uint32_t iters, uint32_t bytes,
		uint32_t max_inline_bytes)
{
	struct fl f = { .max_inline = max_inline_bytes };
	uint64_t *rtt = NULL;
	int ret;

	if (!iters || !bytes || bytes > FL_BUF_BYTES)
		return -EINVAL;
	if (!server && !(rtt = calloc(iters, sizeof(*rtt)))) {
		fprintf(stderr, "bench rxe --floor (client): the round trips' "
			"table: %s\n", strerror(ENOMEM));
		return -ENOMEM;
	}
	ret = fl_connect(&f, srv, src, server);
	/* The server process may not listen yet: try for 20 s. */
	for (int i = 0; ret && !server && i < 200; i++) {
		const struct timespec pause = { .tv_nsec = 100000000 };

		fl_close(&f);
		memset(&f, 0, sizeof(f));
		f.max_inline = max_inline_bytes;
		nanosleep(&pause, NULL);
		ret = fl_connect(&f, srv, src, server);
	}
	if (!ret)
		ret = fl_loop(&f, server, iters, bytes, rtt);
	if (!ret && !server) {
		qsort(rtt, iters, sizeof(*rtt), cmp_u64);
		printf("bench-rxe floor %" PRIu32 " %.2f %.2f (%" PRIu32 " round "
		       "trips of bare writes with immediate; median, p99 in us)\n",
		       bytes, (double)rtt[iters / 2] / 1e3,
		       (double)rtt[(size_t)iters * 99 / 100] / 1e3, iters);
		fflush(stdout);
	}
	if (ret)
		fprintf(stderr, "bench rxe --floor (%s): %s\n",
			server ? "server" : "client", strerror(-ret));
	fl_close(&f);
	free(rtt);
	return ret;
}
