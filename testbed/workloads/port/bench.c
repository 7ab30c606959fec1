/*
 * tensorverbs bench port: the port engine between two RDMA devices in one
 * process, a thread per node running its proxy and its producer
 * (busy-polling, as perftest does), the two connected directly.
 * ci/rxe/bench-port.sh puts the figures next to perftest's on the same
 * devices in the same boot:
 *   bench-port bw SIZE BYTES_PER_S        puts of SIZE (no signal), then
 *                                         one put_with_signal_and_flush
 *   bench-port lat 8 AVG_US MED_US P99_US put_with_signal + wait ping-pong,
 *                                         half the round trip (as
 *                                         ib_write_lat reports)
 *   bench-port allreduce SIZE ALG_B/S BUS_B/S  ring allreduce of SIZE bytes
 *                                         of floats on 2 ranks
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tensorverbs/cm.h>
#include <tensorverbs/ibverbs.h>
#include <tensorverbs/workload.h>

#include "le.h"   /* engine/: little-endian bytes */

#include "pt_bench.h"
#include "pt_hw.h"

#define BP_MAX_SIZES 16

static const char bench_usage[] =
	"usage: tensorverbs bench port [--sizes 4096,...] [--bytes N]\n"
	"           [--lat-iters N] [--allreduce 1048576,...] [--signal MODE]\n"
	"           [--floor] [--timeout S] [--node 0|1]\n"
	"       mpirun -np 2 tensorverbs bench port [options]\n"
	"  Node 0 on $RXE_IP0's device, node 1 on $RXE_IP1's (the rxe VM's\n"
	"  two; or --addr0/--addr1 ADDR:PORT), one process, a busy-polling\n"
	"  thread each (proxy and producer).  Put bandwidth per size (N bytes\n"
	"  per size, default 256 MiB); the latency of an 8-byte\n"
	"  put_with_signal + wait ping-pong (--lat-iters, default 2000; half\n"
	"  the round trip); a 2-rank ring allreduce of floats per size.\n"
	"  --floor: the same ping-pongs with bare verbs, no engine ('floor-\n"
	"  write': an inline 8-byte write polled in memory, as ib_write_lat;\n"
	"  'floor-signal': the write and a fetch-and-add in one post, the\n"
	"  counter polled; 'floor-faa': the fetch-and-add alone, polled).\n"
	"  MODE: atomic (default) or write_imm.  Fails after --timeout\n"
	"  seconds (default 600).\n"
	"  --node N: this process runs node N only (a thread), the other\n"
	"  node runs on another host with the other --node and the same\n"
	"  options; they meet on node 0's address (TCP, the same port) for\n"
	"  the handles and between phases; node 0 prints.  Under mpirun (2\n"
	"  ranks, a host each): node = rank, at its device's RoCE address\n"
	"  ($RDMA_DEVICE per rank) and port 7700 + rank.\n";

struct bp_opts {
	struct sockaddr_storage addr[2];
	uint64_t sizes[BP_MAX_SIZES];
	size_t nsizes;
	uint64_t ar_sizes[BP_MAX_SIZES];
	size_t nar;
	uint64_t bytes;
	uint32_t lat_iters;
	bool floors;             /* --floor: the bare-verbs ping-pongs too */
	enum tv_port_signal_mode mode;
	uint64_t timeout_ns;
	int only;                /* --node / the MPI rank: that node, or -1 */
};

struct bp;

struct bp_node {
	struct bp *b;
	uint32_t id;
	struct tv_cm *cm;
	struct tv_vf_device *dev;
	struct tv_vf_connect_cfg connect;
	struct tv_port_ctx *ctx;
	uint8_t *data;
	uint64_t data_bytes;
	uint64_t *token;
	struct tv_port_mem *mdata;
	struct tv_port_mem *mtok;
	struct tv_port_conn *conn;
	struct tv_port_sem *sem;
	struct tv_port_proxy *proxy;
	struct tv_port_chan *chan;
	struct pf floor;          /* bare verbs beside the engine */
};

enum bp_phase {
	BP_BW = 1, BP_LAT, BP_AR, BP_FLOOR_W, BP_FLOOR_S, BP_FLOOR_F, BP_QUIT
};

/*
 * The driver sets phase, then bumps go (release: the phase and its
 * argument are visible with it); each thread runs generation go once,
 * then counts itself into done.
 */
struct bp {
	const struct bp_opts *o;
	struct bp_node n[2];
	int phase;               /* what generation go is */
	_Atomic int go;
	_Atomic int ready;       /* threads at the start line of a phase */
	_Atomic int done;        /* threads past its end */
	uint64_t arg;            /* the phase's size */
	uint64_t *lat;           /* round trips, ns */
	uint64_t *floor_rtt;     /* the floors' round trips (warm-up too) */
	uint64_t t_ns;           /* node 0's measure of the phase */
	int err;
	struct tv_tb_peers *peers; /* split across hosts: the other node */
};

/* Is node i in this process? */
static bool here(const struct bp *b, uint32_t i)
{
	return b->o->only < 0 || (uint32_t)b->o->only == i;
}

uint64_t pt_bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return pt_bench_now_ns();
}

/* ---- one node: device, engine, memory ------------------------------------ */

static int bp_open(struct bp *b, uint32_t id, uint64_t bytes)
{
	struct bp_node *n = &b->n[id];
	struct tv_tb_hw_device d;
	struct tv_port_config pc;
	char msg[512] = "";
	int ret;

	n->id = id;
	ret = tv_tb_open_device_at(&b->o->addr[id], id, 2, &d, msg, sizeof(msg));
	n->cm = d.cm;
	n->dev = d.base;
	if (ret) {
		fprintf(stderr, "bench port: node %u: %s\n", id,
			msg[0] ? msg : strerror(-ret));
		return ret;
	}
	tv_ibv_connect_cfg(n->dev, &n->connect);
	tv_port_config_default(&pc);
	pc.node_id = id;
	pc.signal_mode = b->o->mode;
	pc.connect = &n->connect;
	n->data_bytes = (bytes + 4095) & ~4095ull;
	n->data = aligned_alloc(4096, n->data_bytes);
	n->token = aligned_alloc(4096, 4096);
	if (!n->data || !n->token)
		return -ENOMEM;
	memset(n->data, 0, n->data_bytes);
	memset(n->token, 0, 4096);
	ret = tv_port_ctx_create(n->dev, &pc, &n->ctx);
	if (!ret)
		ret = tv_port_mem_register(n->ctx, n->data, n->data_bytes,
					   &n->mdata);
	if (!ret)
		ret = tv_port_mem_register(n->ctx, n->token, 4096, &n->mtok);
	if (!ret)
		ret = tv_port_conn_create(n->ctx, !id, &n->conn);
	if (!ret)
		ret = tv_port_sem_create(n->conn, n->mtok, 0, &n->sem);
	if (!ret)
		ret = tv_port_proxy_create(n->ctx, NULL, NULL, &n->proxy);
	if (!ret)
		ret = pf_open(&n->floor, n->dev, &n->connect);
	if (ret)
		fprintf(stderr, "bench port: node %u's engine: %s\n", id,
			strerror(-ret));
	return ret;
}

/* Our end towards the peer's QP, semaphore and data region. */
static int bp_link(struct bp_node *n, const struct tv_vf_qp_endpoint *ep,
		   const struct tv_port_mem_handle *tok, uint64_t tok_off,
		   const struct tv_port_mem_handle *data)
{
	uint32_t src, dst, sem;
	int ret = tv_port_conn_connect(n->conn, ep);

	if (!ret)
		ret = tv_port_sem_set_remote(n->sem, tok, tok_off);
	if (!ret)
		ret = tv_port_proxy_add_local(n->proxy, n->mdata, &src);
	if (!ret)
		ret = tv_port_proxy_add_remote(n->proxy, data, &dst);
	if (!ret)
		ret = tv_port_proxy_add_sem(n->proxy, n->sem, &sem);
	if (!ret)
		ret = tv_port_chan_create(n->proxy, sem, dst, src, &n->chan);
	return ret;
}

/* The two ends in one process: endpoints and handles handed over. */
static int bp_connect(struct bp *b)
{
	struct tv_vf_qp_endpoint ep[2];
	struct tv_port_mem_handle tok, data;
	uint64_t off;
	int ret = 0;

	for (int i = 0; !ret && i < 2; i++)
		ret = tv_port_conn_endpoint(b->n[i].conn, &ep[i]);
	for (int i = 0; !ret && i < 2; i++) {
		tv_port_sem_handle(b->n[!i].sem, &tok, &off);
		tv_port_mem_handle(b->n[!i].mdata, &data);
		ret = bp_link(&b->n[i], &ep[!i], &tok, off, &data);
	}
	if (!ret)
		ret = pf_connect(&b->n[0].floor, &b->n[1].floor);
	if (ret)
		fprintf(stderr, "bench port: connecting: %s\n", strerror(-ret));
	return ret;
}

/* Split across hosts, the set-up bytes (pt_hw.h). */
void pt_bench_blob_write(uint32_t node, const struct pt_bench_peer *p,
			 uint8_t *b)
{
	memset(b, 0, PT_BENCH_BLOB_BYTES);
	tv_le_put(b, PT_BENCH_MAGIC, 4);
	tv_le_put(b + 4, 1, 4);
	tv_le_put(b + 8, node, 4);
	tv_tb_ep_put(b + PT_BENCH_EP, &p->ep);
	tv_port_mem_handle_encode(&p->tok, b + PT_BENCH_TOK,
				  TV_PORT_HANDLE_BYTES);
	tv_le_put(b + PT_BENCH_TOK_OFF, p->tok_off, 8);
	tv_port_mem_handle_encode(&p->data, b + PT_BENCH_DATA,
				  TV_PORT_HANDLE_BYTES);
	tv_tb_ep_put(b + PT_BENCH_FEP, &p->fep);
	tv_le_put(b + PT_BENCH_FADDR, p->floor_addr, 8);
	tv_le_put(b + PT_BENCH_FRKEY, p->floor_rkey, 4);
}

static int blob_make(struct bp_node *n, uint8_t *b)
{
	struct pt_bench_peer p;
	int ret = tv_port_conn_endpoint(n->conn, &p.ep);

	if (!ret)
		ret = tv_vf_qp_endpoint(n->floor.qp, &p.fep);
	if (ret)
		return ret;
	tv_port_sem_handle(n->sem, &p.tok, &p.tok_off);
	tv_port_mem_handle(n->mdata, &p.data);
	p.floor_addr = (uintptr_t)n->floor.buf;
	p.floor_rkey = n->floor.mr->rkey;
	pt_bench_blob_write(n->id, &p, b);
	return 0;
}

/* The first field of a peer's blob that is wrong, or NULL. */
static const char *blob_wrong(const uint8_t *b, size_t len, uint32_t peer,
			      uint64_t data_bytes, struct pt_bench_peer *p)
{
	if (len != PT_BENCH_BLOB_BYTES)
		return "length";
	if (tv_le_get(b, 4) != PT_BENCH_MAGIC || tv_le_get(b + 4, 4) != 1)
		return "magic or version (not a bench port peer's)";
	if (tv_le_get(b + 8, 4) != peer)
		return "node";
	if (tv_tb_ep_get(b + PT_BENCH_EP, &p->ep) ||
	    tv_tb_ep_get(b + PT_BENCH_FEP, &p->fep))
		return "a QP endpoint";
	if (tv_port_mem_handle_decode(b + PT_BENCH_TOK, TV_PORT_HANDLE_BYTES,
				      &p->tok) || p->tok.node != peer)
		return "the token handle";
	if (tv_port_mem_handle_decode(b + PT_BENCH_DATA, TV_PORT_HANDLE_BYTES,
				      &p->data) || p->data.node != peer)
		return "the data handle";
	p->tok_off = tv_le_get(b + PT_BENCH_TOK_OFF, 8);
	if (p->tok.size_bytes < 8 || p->tok_off > p->tok.size_bytes - 8)
		return "the token offset (outside its region)";
	/* Our puts land in the peer's region: as big as ours, or the options
	 * differ. */
	if (p->data.size_bytes < data_bytes)
		return "the data region's size (smaller than ours: were the "
		       "options the same?)";
	p->floor_addr = tv_le_get(b + PT_BENCH_FADDR, 8);
	p->floor_rkey = (uint32_t)tv_le_get(b + PT_BENCH_FRKEY, 4);
	return NULL;
}

int pt_bench_blob_read(const uint8_t *b, size_t len, uint32_t peer,
		       uint64_t data_bytes, char *msg, size_t cap,
		       struct pt_bench_peer *p_p)
{
	struct pt_bench_peer p;
	const char *wrong = blob_wrong(b, len, peer, data_bytes, &p);

	if (wrong) {
		snprintf(msg, cap, "node %u's set-up data (%zu bytes): wrong "
			 "%s", peer, len, wrong);
		return -EPROTO;
	}
	*p_p = p;
	return 0;
}

/* The peer's bytes, every field checked before use. */
static int blob_apply(struct bp_node *n, const uint8_t *b, size_t len)
{
	struct pt_bench_peer p;
	char msg[200];
	int ret = pt_bench_blob_read(b, len, !n->id, n->data_bytes, msg,
				     sizeof(msg), &p);

	if (ret) {
		fprintf(stderr, "bench port: %s\n", msg);
		return ret;
	}
	ret = bp_link(n, &p.ep, &p.tok, p.tok_off, &p.data);
	if (ret)
		return ret;
	return pf_connect_remote(&n->floor, &p.fep, p.floor_addr, p.floor_rkey);
}

static int bp_connect_split(struct bp *b)
{
	struct bp_node *n = &b->n[b->o->only];
	uint8_t mine[PT_BENCH_BLOB_BYTES], **all = NULL;
	size_t *lens = NULL;
	int ret = blob_make(n, mine);

	if (!ret)
		ret = tv_tb_peers_allgather(b->peers, mine, sizeof(mine), &all,
					    &lens);
	if (!ret)
		ret = blob_apply(n, all[!n->id], lens[!n->id]);
	if (!ret)
		ret = tv_tb_peers_barrier(b->peers, "both ends connected");
	else if (ret != -ECANCELED && ret != -ETIMEDOUT)
		tv_tb_peers_abort(b->peers, "its set-up failed");
	if (ret)
		fprintf(stderr, "bench port: connecting: %s%s%s\n",
			strerror(-ret), tv_tb_peers_error(b->peers)[0] ? ": " :
			"", tv_tb_peers_error(b->peers));
	for (int i = 0; all && i < 2; i++)
		free(all[i]);
	free(all);
	free(lens);
	return ret;
}

static void bp_close(struct bp *b)
{
	for (int i = 0; i < 2; i++) {
		struct bp_node *n = &b->n[i];

		tv_port_chan_destroy(n->chan);
		tv_port_proxy_destroy(n->proxy);
		tv_port_sem_destroy(n->sem);
	}
	for (int i = 0; i < 2; i++) {
		struct bp_node *n = &b->n[i];

		if (n->conn && tv_port_conn_destroy(n->conn))
			fprintf(stderr, "bench port: node %d's connection "
				"still had work in flight\n", i);
		tv_port_mem_deregister(n->mdata);
		tv_port_mem_deregister(n->mtok);
		tv_port_ctx_destroy(n->ctx);
		pf_close(&n->floor);
		if (n->dev)
			tv_ibv_close(n->dev);
		tv_cm_destroy(n->cm);
		free(n->data);
		free(n->token);
	}
}

/* ---- what each thread does ------------------------------------------------------- */

/* Progress the proxy until done(): 0, or -ETIMEDOUT / the error. */
static int spin_until(struct bp *b, struct bp_node *n,
		      int (*step)(struct bp_node *n, void *arg), void *arg)
{
	uint64_t deadline = now_ns() + b->o->timeout_ns;
	int ret;

	for (unsigned k = 0;; k++) {
		tv_port_proxy_progress(n->proxy, 64);
		ret = step(n, arg);
		if (ret != -EAGAIN)
			return ret;
		if ((k & 1023) == 0 && now_ns() > deadline)
			return -ETIMEDOUT;
		/* Split: the other host gave up, or went. */
		if ((k & 1023) == 0 && b->peers && tv_tb_peers_poll(b->peers))
			return -ECANCELED;
	}
}

static int step_wait(struct bp_node *n, void *arg)
{
	(void)arg;
	if (tv_port_chan_poll(n->chan))
		return 0;
	return tv_port_conn_failed(n->conn) ? -EIO : -EAGAIN;
}

/*
 * A passive side (node 1 while node 0 puts) looks every 2 ms, as
 * ib_write_bw's server idles: a spinning thread would take the vCPU
 * the device's kernel work needs.
 */
static int step_wait_idle(struct bp_node *n, void *arg)
{
	struct timespec ts = { 0, 2000000 };
	int ret = step_wait(n, arg);

	if (ret == -EAGAIN)
		nanosleep(&ts, NULL);
	return ret;
}

static int step_flushed(struct bp_node *n, void *arg)
{
	return tv_port_chan_flush_done(n->chan, *(uint64_t *)arg);
}

struct push_arg {
	uint64_t dst;
	uint64_t src;
	uint64_t len;
	int kind;                /* 0 put, 1 put_with_signal, 2 ... and flush */
	uint64_t pos;
};

static int step_push(struct bp_node *n, void *arg)
{
	struct push_arg *a = arg;

	if (a->kind == 0)
		return tv_port_chan_put(n->chan, a->dst, a->src, a->len,
					&a->pos);
	if (a->kind == 1)
		return tv_port_chan_put_with_signal(n->chan, a->dst, a->src,
						    a->len, &a->pos);
	return tv_port_chan_put_with_signal_and_flush(n->chan, a->dst, a->src,
						      a->len, &a->pos);
}

static int push(struct bp *b, struct bp_node *n, int kind, uint64_t dst,
		uint64_t src, uint64_t len, uint64_t *pos_p)
{
	struct push_arg a = { dst, src, len, kind, 0 };
	int ret = spin_until(b, n, step_push, &a);

	if (pos_p)
		*pos_p = a.pos;
	return ret;
}

/* Node 0 puts the bytes, one flush at the end; node 1 progresses. */
static int phase_bw(struct bp *b, struct bp_node *n)
{
	uint64_t s = b->arg, iters = b->o->bytes / s, pos, t0;
	int ret = 0;

	if (iters < 4)
		iters = 4;
	if (n->id == 1)
		return spin_until(b, n, step_wait_idle, NULL);
	t0 = now_ns();
	for (uint64_t i = 0; !ret && i + 1 < iters; i++)
		ret = push(b, n, 0, 0, 0, s, NULL);
	if (!ret)
		ret = push(b, n, 2, 0, 0, s, &pos);
	if (!ret)
		ret = spin_until(b, n, step_flushed, &pos);
	b->t_ns = now_ns() - t0;
	b->t_ns = b->t_ns ? b->t_ns : 1;
	b->arg = iters * s;
	return ret;
}

/* Node 0: signal, wait for the answer, per round; node 1 answers. */
static int phase_lat(struct bp *b, struct bp_node *n)
{
	uint32_t total = b->o->lat_iters + 100; /* 100 warm-up rounds */
	int ret = 0;

	for (uint32_t i = 0; !ret && i < total; i++) {
		uint64_t t0 = now_ns();

		if (n->id == 1)
			ret = spin_until(b, n, step_wait, NULL);
		if (!ret)
			ret = push(b, n, 1, 64, 0, 8, NULL);
		if (!ret && n->id == 0)
			ret = spin_until(b, n, step_wait, NULL);
		if (n->id == 0 && i >= 100)
			b->lat[i - 100] = now_ns() - t0;
	}
	return ret;
}

/*
 * 2-rank ring allreduce of s bytes of floats, halves h: rank r sends its
 * half r to the peer's scratch, adds the peer's half (1 - r) from its own
 * scratch, then sends the reduced half (1 - r) back.
 */
static int phase_ar(struct bp *b, struct bp_node *n)
{
	uint64_t s = b->arg, h = s / 2, r = n->id, t0;
	float *a = (float *)(void *)n->data, *t = (float *)(void *)(n->data + s);
	int ret;

	for (uint64_t i = 0; i < s / 4; i++)
		a[i] = (float)((i * 7 + r * 3) % 64) / 8.0f;
	t0 = now_ns();
	ret = push(b, n, 1, s, r * h, h, NULL);
	if (!ret)
		ret = spin_until(b, n, step_wait, NULL);
	for (uint64_t i = 0; !ret && i < h / 4; i++)
		a[(1 - r) * h / 4 + i] += t[i];
	if (!ret)
		ret = push(b, n, 1, (1 - r) * h, (1 - r) * h, h, NULL);
	if (!ret)
		ret = spin_until(b, n, step_wait, NULL);
	if (n->id == 0)
		b->t_ns = now_ns() - t0;
	/* Every element is the sum of both ranks' (exact in float). */
	for (uint64_t i = 0; !ret && i < s / 4; i += 4099)
		if (a[i] != (float)((i * 7) % 64) / 8.0f +
			    (float)((i * 7 + 3) % 64) / 8.0f)
			ret = -EBADMSG;
	return ret;
}

/*
 * Each thread is its node's proxy too: while it waits for the other
 * thread (or the next phase) its proxy keeps going, or a last push would
 * never be handled.
 */
static void barrier(struct bp_node *n, _Atomic int *count, int target)
{
	atomic_fetch_add(count, 1);
	while (atomic_load(count) < target) {
		tv_port_proxy_progress(n->proxy, 64);
		sched_yield();
	}
}

/* This node's part of b->phase. */
static int phase_run(struct bp *b, struct bp_node *n)
{
	if (b->phase == BP_BW)
		return phase_bw(b, n);
	if (b->phase == BP_LAT)
		return phase_lat(b, n);
	if (b->phase == BP_AR)
		return phase_ar(b, n);
	return pf_pingpong(&n->floor, n->id == 0, b->o->lat_iters + 100,
			   b->phase == BP_FLOOR_W ? PF_WRITE :
			   b->phase == BP_FLOOR_S ? PF_SIGNAL : PF_FAA,
			   now_ns() + b->o->timeout_ns,
			   n->id == 0 ? b->floor_rtt : NULL);
}

static void *node_main(void *arg)
{
	struct bp_node *n = arg;
	struct bp *b = n->b;

	for (int gen = 1;; gen++) {
		int ret;

		while (atomic_load_explicit(&b->go, memory_order_acquire) < gen) {
			tv_port_proxy_progress(n->proxy, 64);
			sched_yield();
		}
		if (b->phase == BP_QUIT)
			return NULL;
		barrier(n, &b->ready, 2 * gen);
		ret = phase_run(b, n);
		if (ret)
			b->err = ret;
		barrier(n, &b->done, 2 * gen);
	}
}

/*
 * Split across hosts: this node's part of each phase here, the two sides
 * meeting before and after it over the peers' star (the proxy turning
 * while it waits); a failed side aborts so that the other stops too.
 */
static int run_split(struct bp *b)
{
	struct bp_node *n = &b->n[b->o->only];
	int ret = tv_tb_peers_barrier(b->peers, "the other node's start");

	if (!ret) {
		ret = phase_run(b, n);
		if (ret)
			tv_tb_peers_abort(b->peers, strerror(-ret));
	}
	if (!ret)
		ret = tv_tb_peers_barrier(b->peers, "the other node's end");
	if (ret && tv_tb_peers_error(b->peers)[0])
		fprintf(stderr, "bench port: node %u: %s\n", n->id,
			tv_tb_peers_error(b->peers));
	return ret;
}

/* ---- the driver ------------------------------------------------------------------ */

static int run_phase(struct bp *b, int phase, uint64_t arg, int *gen)
{
	b->arg = arg;
	b->err = 0;
	b->phase = phase;
	if (b->peers)
		return run_split(b);
	atomic_store_explicit(&b->go, ++*gen, memory_order_release);
	while (atomic_load(&b->done) < 2 * *gen)
		sched_yield();
	return b->err;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;

	return a < c ? -1 : a > c;
}

/* "AVG MED P99" of n round trips, each halved: one way, in us. */
static void print_half(const char *what, uint64_t *rtt, uint64_t n)
{
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++)
		sum += rtt[i];
	qsort(rtt, n, sizeof(*rtt), cmp_u64);
	printf("bench-port %s 8 %.2f %.2f %.2f\n", what,
	       (double)sum / (double)n / 2000.0, (double)rtt[n / 2] / 2000.0,
	       (double)rtt[n * 99 / 100] / 2000.0);
}

static int bench_floors(struct bp *b, int *gen)
{
	static const struct {
		int phase;
		const char *what;
	} floors[] = { { BP_FLOOR_W, "floor-write" },
		       { BP_FLOOR_S, "floor-signal" },
		       { BP_FLOOR_F, "floor-faa" } };
	int ret = 0;

	for (size_t i = 0; !ret && i < 3; i++) {
		ret = run_phase(b, floors[i].phase, 8, gen);
		if (!ret && here(b, 0))
			print_half(floors[i].what, b->floor_rtt + 100,
				   b->o->lat_iters);
	}
	return ret;
}

static int bench_all(struct bp *b)
{
	const struct bp_opts *o = b->o;
	int gen = 0, ret = 0;

	for (size_t i = 0; !ret && i < o->nsizes; i++) {
		ret = run_phase(b, BP_BW, o->sizes[i], &gen);
		if (!ret && here(b, 0))
			printf("bench-port bw %" PRIu64 " %.0f\n", o->sizes[i],
			       (double)b->arg * 1e9 / (double)b->t_ns);
		/* The final put's signal is node 1's to take. */
	}
	if (!ret)
		ret = run_phase(b, BP_LAT, 8, &gen);
	if (!ret && here(b, 0))
		print_half("lat", b->lat, o->lat_iters);
	if (!ret && o->floors)
		ret = bench_floors(b, &gen);
	for (size_t i = 0; !ret && i < o->nar; i++) {
		ret = run_phase(b, BP_AR, o->ar_sizes[i], &gen);
		if (!ret && here(b, 0))
			printf("bench-port allreduce %" PRIu64 " %.0f %.0f\n",
			       o->ar_sizes[i],
			       (double)o->ar_sizes[i] * 1e9 / (double)b->t_ns,
			       (double)o->ar_sizes[i] * 1e9 / (double)b->t_ns);
	}
	fflush(stdout);
	return ret;
}

static int parse_list(const char *list, uint64_t *v, size_t *n_p)
{
	char *end;
	size_t n = 0;

	while (*list && n < BP_MAX_SIZES) {
		uint64_t x = strtoull(list, &end, 10);

		if (end == list || !x || x > (1ull << 30) || (*end && *end != ','))
			return -EINVAL;
		v[n++] = x;
		list = *end ? end + 1 : end;
	}
	*n_p = n;
	return *list ? -EINVAL : 0;
}

static int default_addr(const char *env_ip, unsigned int port,
			struct sockaddr_storage *ss)
{
	const char *ip = getenv(env_ip);
	char text[128];

	if (!ip)
		return -ENOENT;
	snprintf(text, sizeof(text), "%s:%u", ip, port);
	return tv_cm_parse_addr(text, ss);
}

/* Under mpirun: node = rank, the addresses from the ranks' devices. */
static int mpi_pair(struct bp_opts *o, bool *a0, bool *a1)
{
	uint32_t node;
	int ret = tv_tb_mpi_bench_pair("bench port", 7700, o->addr, &node);

	if (ret == 1)
		return 0;
	if (!ret) {
		o->only = (int)node;
		*a0 = *a1 = true;
	}
	return ret;
}

static int parse_opts(struct bp_opts *o, int argc, char **argv)
{
	static const uint64_t sizes[] = { 4096, 65536, 1048576, 4194304,
					   16777216, 67108864 };
	bool a0 = !default_addr("RXE_IP0", 7700, &o->addr[0]);
	bool a1 = !default_addr("RXE_IP1", 7701, &o->addr[1]);

	memcpy(o->sizes, sizes, sizeof(sizes));
	o->nsizes = 6;
	o->ar_sizes[0] = 1048576;
	o->ar_sizes[1] = 67108864;
	o->nar = 2;
	o->bytes = 256ull << 20;
	o->lat_iters = 2000;
	o->mode = TV_PORT_SIGNAL_ATOMIC;
	o->timeout_ns = 600ull * 1000000000ull;
	o->only = -1;
	for (int i = 1; i < argc; i++) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int bad = !v;

		if (!strcmp(k, "--floor")) {
			o->floors = true;
			continue;
		}
		if (!v) {
		} else if (!strcmp(k, "--sizes")) {
			bad = parse_list(v, o->sizes, &o->nsizes);
		} else if (!strcmp(k, "--allreduce")) {
			bad = parse_list(v, o->ar_sizes, &o->nar);
		} else if (!strcmp(k, "--bytes")) {
			o->bytes = strtoull(v, NULL, 10);
			bad = !o->bytes;
		} else if (!strcmp(k, "--lat-iters")) {
			o->lat_iters = (uint32_t)strtoul(v, NULL, 10);
			bad = !o->lat_iters || o->lat_iters > 10000000;
		} else if (!strcmp(k, "--signal")) {
			bad = strcmp(v, "atomic") && strcmp(v, "write_imm");
			o->mode = !strcmp(v, "write_imm") ?
					  TV_PORT_SIGNAL_WRITE_IMM :
					  TV_PORT_SIGNAL_ATOMIC;
		} else if (!strcmp(k, "--timeout")) {
			o->timeout_ns = strtoull(v, NULL, 10) * 1000000000ull;
			bad = !o->timeout_ns;
		} else if (!strcmp(k, "--node")) {
			bad = strcmp(v, "0") && strcmp(v, "1");
			o->only = v[0] - '0';
		} else if (!strcmp(k, "--addr0") || !strcmp(k, "--addr1")) {
			bad = tv_cm_parse_addr(v, &o->addr[k[6] - '0']) != 0;
			a0 |= k[6] == '0' && !bad;
			a1 |= k[6] == '1' && !bad;
		} else {
			bad = 1;
		}
		if (bad) {
			fprintf(stderr, "bench port: bad option %s%s%s\n%s", k,
				v ? " " : "", v ? v : "", bench_usage);
			return -EINVAL;
		}
		i++;
	}
	if (mpi_pair(o, &a0, &a1))
		return -EINVAL;
	if (!a0 || !a1) {
		fprintf(stderr, "bench port: no addresses: set RXE_IP0 and "
			"RXE_IP1 (ci/rxe/vm.sh does) or --addr0/--addr1\n");
		return -EINVAL;
	}
	return 0;
}

static uint64_t biggest(const struct bp_opts *o)
{
	uint64_t m = 4096;

	for (size_t i = 0; i < o->nsizes; i++)
		m = o->sizes[i] > m ? o->sizes[i] : m;
	/* An allreduce needs its size and half of it (the scratch). */
	for (size_t i = 0; i < o->nar; i++)
		m = o->ar_sizes[i] * 3 / 2 > m ? o->ar_sizes[i] * 3 / 2 : m;
	return m;
}

static void split_idle(void *arg)
{
	struct bp_node *n = arg;

	tv_port_proxy_progress(n->proxy, 64);
	sched_yield();
}

/* Both sides must run the same benchmark: its shape is the fingerprint. */
static int split_open(struct bp *b)
{
	const struct bp_opts *o = b->o;
	uint64_t fp = 0x7062656e6368ull; /* "pbench" */
	char msg[300] = "";
	int ret;

	for (size_t i = 0; i < o->nsizes; i++)
		fp = fp * 1000003 ^ o->sizes[i];
	for (size_t i = 0; i < o->nar; i++)
		fp = fp * 1000003 ^ o->ar_sizes[i];
	fp = fp * 1000003 ^ o->bytes;
	fp = fp * 1000003 ^ o->lat_iters;
	fp = fp * 1000003 ^ (uint64_t)o->floors << 8 ^ (uint64_t)o->mode;
	ret = tv_tb_peers_open((uint32_t)o->only, 2, &o->addr[0], fp,
			       o->timeout_ns, &b->peers, msg, sizeof(msg));
	if (ret) {
		fprintf(stderr, "bench port: node %d: %s\n", o->only,
			msg[0] ? msg : strerror(-ret));
		return ret;
	}
	b->n[o->only].b = b;
	tv_tb_peers_set_idle(b->peers, split_idle, &b->n[o->only]);
	if (o->only == 1)
		printf("bench port: node 1 of a split run: node 0 prints the "
		       "figures\n");
	return bp_connect_split(b);
}

/*
 * Split: the last completions (a signal's ACK may still be on its way)
 * are taken before either side destroys its QP, then both go.
 */
static int split_drain(struct bp *b)
{
	struct bp_node *n = &b->n[b->o->only];
	uint64_t deadline = now_ns() + 10ull * 1000000000ull;
	int ret = 0;

	while (!tv_port_proxy_idle(n->proxy) && now_ns() < deadline)
		tv_port_proxy_progress(n->proxy, 64);
	if (!tv_port_proxy_idle(n->proxy))
		ret = -ETIMEDOUT;
	if (!ret)
		ret = tv_port_conn_flush(n->conn, deadline);
	if (!ret)
		ret = tv_tb_peers_barrier(b->peers, "the other node's last "
					  "completions");
	return ret;
}

int pt_bench_port_main(int argc, char **argv, const char *argv0)
{
	struct bp_opts o;
	struct bp *b;
	pthread_t th[2];
	int ret, started = 0;

	(void)argv0;
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(bench_usage, stdout);
		return 0;
	}
	memset(&o, 0, sizeof(o));
	if (parse_opts(&o, argc, argv))
		return 2;
	b = calloc(1, sizeof(*b));
	if (!b) {
		fprintf(stderr, "bench port: %s\n", strerror(ENOMEM));
		return 1;
	}
	b->o = &o;
	b->lat = calloc(o.lat_iters, sizeof(*b->lat));
	b->floor_rtt = calloc(o.lat_iters + 100, sizeof(*b->floor_rtt));
	ret = b->lat && b->floor_rtt ? 0 : -ENOMEM;
	for (uint32_t i = 0; !ret && i < 2; i++)
		if (here(b, i))
			ret = bp_open(b, i, biggest(&o));
	if (!ret && o.only >= 0)
		ret = split_open(b);
	else if (!ret)
		ret = bp_connect(b);
	for (int i = 0; !ret && !b->peers && i < 2; i++) {
		b->n[i].b = b;
		ret = -pthread_create(&th[i], NULL, node_main, &b->n[i]);
		started += !ret;
	}
	if (!ret)
		ret = bench_all(b);
	if (!ret && b->peers)
		ret = split_drain(b);
	b->phase = BP_QUIT;
	atomic_store_explicit(&b->go, INT32_MAX, memory_order_release);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (ret)
		fprintf(stderr, "bench port: %s\n", strerror(-ret));
	tv_tb_peers_close(b->peers);
	bp_close(b);
	free(b->lat);
	free(b->floor_rtt);
	free(b);
	return ret ? 1 : 0;
}
