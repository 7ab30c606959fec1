/*
 * tensorverbs bench rxe: the engine's tensor-fetch bandwidth and latency
 * between two RDMA devices, one process each (forked), connected with
 * rdma_cm.  Node 1 publishes one tensor per size under many step ids (one
 * buffer, referenced by every step); node 0 fetches them.  After a warm-up
 * fetch the receiver's metadata cache is right, so every timed fetch is the
 * steady state: TENSOR_REQUEST (+ its ACK), one RDMA write with immediate
 * straight from the sender's registered buffer.  Busy polling by default,
 * like perftest; ci/rxe/bench.sh puts the figures next to ib_write_bw and
 * ib_write_lat on the same devices.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tensorverbs/testbed.h>

#include "bench_floor.h"
#include "rv_hw.h"
#include "wire.h" /* TV_MSG_*: the index of msgs_recv[] */

#include <tensorverbs/cm.h>
#include <tensorverbs/faults.h>
#include <tensorverbs/workload.h>

#define BR_MAX_SIZES 16
#define BR_STEP_STRIDE 1000000ull  /* step ids: size index * stride + i */
#define BR_DONE_STEP 999999999ull

static const char bench_usage[] =
	"usage: tensorverbs bench rxe [--addr0 ADDR:PORT] [--addr1 ADDR:PORT]\n"
	"           [--sizes 4096,65536,...] [--bytes N] [--lat-iters N]\n"
	"           [--record FILE]  (FILE.node0/1: every verb, docs/recording.md)\n"
	"           [--wrap-only]  (the fault wrapper alone: --record's other cost)\n"
	"           [--window N] [--fetcher-poll busy|event]\n"
	"           [--publisher-poll busy|event] [--breakdown] [--floor]\n"
	"           [--max-inline BYTES] [--timeout S] [--node 0|1]\n"
	"       mpirun -np 2 tensorverbs bench rxe [options]\n"
	"  Fetch bandwidth for each size (N bytes per size, default 256 MiB,\n"
	"  at least 4 fetches, up to --window in flight, default 16) and the\n"
	"  latency of a 64-byte fetch (--lat-iters, default 2000), cached\n"
	"  metadata.  Node 0 (the fetcher, busy-polling by default) on addr0,\n"
	"  node 1 (the publisher, a forked child; by default it sleeps on\n"
	"  completion events for the bandwidth runs, as ib_write_bw's passive\n"
	"  side idles, and spins for the latency run, as ib_write_lat does) on\n"
	"  addr1; defaults: $RXE_IP0:7600, $RXE_IP1:7601.\n"
	"  Output lines: 'bench-rxe bw SIZE BYTES_PER_S' and\n"
	"  'bench-rxe lat 64 AVG_US MEDIAN_US P99_US'.  --breakdown times the\n"
	"  latency fetch's phases in both processes (median per phase).\n"
	"  --floor then times the same exchange with bare verbs, no engine\n"
	"  (64-byte writes with immediate both ways, polled CQ, re-posted\n"
	"  receives): 'bench-rxe floor 64 MEDIAN_US P99_US'.  Payloads up to\n"
	"  --max-inline bytes are posted inline, by the engine and the floor\n"
	"  (default: the engine's, 128; 0: never).  Each of the two runs\n"
	"  fails after --timeout seconds (default 600) without a result.\n"
	"  --node N: this process runs node N only (the other one runs on\n"
	"  another host with --node of the other node and the same options;\n"
	"  node 0 prints).  Under mpirun (2 ranks, a host each): node = rank,\n"
	"  each at its device's RoCE address ($RDMA_DEVICE per rank) and\n"
	"  port 7600 + rank, exchanged with MPI.  --breakdown needs both\n"
	"  nodes in one host.\n";

/* --breakdown: where a latency fetch's time goes, both processes' clocks. */
enum { BD_CALL, BD_REQ_POSTED, BD_REQ_SEEN, BD_WRITE_POSTED, BD_DONE, BD_N };

struct br_breakdown {
	uint64_t first_step;       /* of the timed latency fetches */
	uint64_t t[][BD_N];        /* by fetch: when each phase ended */
};

struct br_opts {
	struct sockaddr_storage addr[2];
	uint64_t sizes[BR_MAX_SIZES];
	size_t nsizes;
	uint64_t bytes;
	uint32_t lat_iters;
	uint32_t window;
	bool busy[2];              /* per node: busy-poll, else sleep on events */
	bool auto_poll;            /* publisher: events for bandwidth, then busy */
	bool want_breakdown;
	bool want_floor;
	int only;                  /* --node / the MPI rank: that node, or -1 */
	uint32_t timeout_s;        /* per run (the engine's, the floor's) */
	uint32_t max_inline;       /* the engine's and the floor's */
	const char *record;        /* --record FILE: FILE.node<K>, or NULL */
	bool wrap_only;            /* --wrap-only: the wrapper, no tap */
	struct br_breakdown *bd;   /* shared with the forked publisher, or NULL */
};

struct br {
	const struct br_opts *o;
	struct tv_flt *flt;        /* --record: the wrapper's, no rule */
	struct tv_tb_tap *tap;
	bool busy;
	struct rnode n;
	struct tv_channel *ch;
	uint64_t done;             /* completed fetches */
	uint64_t failed;
	uint64_t t_done_ns;        /* when the last one completed */
	char err[512];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t iters_for(const struct br_opts *o, uint64_t size)
{
	uint64_t n = o->bytes / size;

	return n < 4 ? 4 : n > 20000 ? 20000 : n;
}

/* The latency fetch of step_id, if it is one: its phase ends now. */
static void bd_mark(struct br *b, uint64_t step_id, int what)
{
	struct br_breakdown *bd = b->o->bd;

	if (bd && step_id >= bd->first_step &&
	    step_id - bd->first_step < b->o->lat_iters)
		bd->t[step_id - bd->first_step][what] = now_ns();
}

/*
 * The engine's observer, for --breakdown only (an event call would sit on
 * the path being timed).  Events come after the work: a post's event once
 * post_send returned.
 */
static void bd_observe(void *ctx, const struct tv_engine_event *ev)
{
	struct br *b = ctx;

	if (ev->kind == TV_EV_MSG_SEND)
		bd_mark(b, ev->step_id, BD_REQ_POSTED);
	else if (ev->kind == TV_EV_MSG_RECV)
		bd_mark(b, ev->step_id, BD_REQ_SEEN);
	else if (ev->kind == TV_EV_TENSOR_WRITE)
		bd_mark(b, ev->step_id, BD_WRITE_POSTED);
	else if (ev->kind == TV_EV_RECV_DONE)
		bd_mark(b, ev->step_id, BD_DONE);
}

/* One pass of the loop: busy, or sleep on the CQ and rdma_cm when idle. */
static void br_poll(struct br *b, uint64_t *spins)
{
	int n = tv_engine_progress(b->n.engine);

	/* rdma_cm events are rare: a syscall every 1024 spins is plenty. */
	if ((++*spins & 1023) == 0 || !b->busy)
		n += tv_cm_progress(b->n.cm);
	if (!b->busy && n <= 0) {
		struct pollfd cm = { .fd = tv_cm_fd(b->n.cm), .events = POLLIN };

		tv_vf_wait_fds(b->n.dev, tv_vf_now_ns(b->n.dev) + 100000000ull,
			       &cm, 1);
	}
}

static int br_open(struct br *b, uint32_t id)
{
	struct rnode_opts no = { .flt = b->flt, .tap = b->tap };
	uint64_t max = 4u << 20;
	char msg[512] = "";
	int ret;

	for (size_t i = 0; i < b->o->nsizes; i++)
		max = b->o->sizes[i] > max ? b->o->sizes[i] : max;
	no.id = id;
	no.nodes = 2;
	no.addr = b->o->addr[id];
	no.pool_block_bytes = max;
	no.max_inline_bytes = b->o->max_inline;
	no.max_inline_set = true;
	/* Emulated devices stall now and then: no spurious "ACK lost". */
	no.ack_timeout_ns = 10000000000ull;
	/*
	 * Only --breakdown observes: an event call sits on the path being
	 * timed (the publisher's MSG_RECV comes before its dispatch, the
	 * fetcher's RECV_DONE before the callback).  The publisher follows
	 * the run in its statistics instead, and a failed channel fails the
	 * fetcher's fetches, which report it.
	 */
	if (b->o->bd) {
		no.observe = bd_observe;
		no.observe_ctx = b;
	}
	ret = rnode_open(&b->n, &no, msg, sizeof(msg));
	if (ret)
		fprintf(stderr, "bench rxe: node %u: %s\n", id, msg);
	return ret;
}

static int br_connect(struct br *b, uint32_t id)
{
	uint64_t spins = 0, deadline = now_ns() + 60000000000ull;
	const char *why = "";
	int ret;

	if (id == 0) {
		ret = tv_cm_connect(b->n.cm, 1,
				    (const struct sockaddr *)&b->o->addr[1]);
		if (ret) {
			fprintf(stderr, "bench rxe: node 0: connecting: %s\n",
				strerror(-ret));
			return ret;
		}
	}
	while (tv_cm_peer_state(b->n.cm, !id, &why) != TV_CM_PEER_CONNECTED) {
		if (tv_cm_peer_state(b->n.cm, !id, &why) == TV_CM_PEER_FAILED ||
		    now_ns() > deadline) {
			fprintf(stderr, "bench rxe: node %u: not connected: %s\n",
				id, why[0] ? why : "timed out");
			return -ECONNREFUSED;
		}
		br_poll(b, &spins);
	}
	b->ch = tv_engine_channel(b->n.engine, !id);
	return 0;
}

/* ---- node 1: publish everything, serve until the final request ---------- */

/* Index nsizes is the latency test: 64 bytes, lat_iters + warm-up. */
static uint64_t size_of(const struct br_opts *o, size_t si)
{
	return si < o->nsizes ? o->sizes[si] : 64;
}

static void tensor_name(size_t si, char name[32])
{
	snprintf(name, 32, "bw_%zu", si);
}

static uint64_t count_of(const struct br_opts *o, size_t si)
{
	return si < o->nsizes ? iters_for(o, o->sizes[si]) + 2 :
				 (uint64_t)o->lat_iters + 10;
}

static int publish_size(struct br *b, size_t si)
{
	uint64_t size = size_of(b->o, si), n = count_of(b->o, si);
	struct tv_shape shape = { .rank = 1, .dims = { (int64_t)size } };
	struct tv_tensor *t;
	char name[32];
	int ret;

	ret = tv_tensor_create(b->n.engine, TV_DT_UINT8, &shape, TV_PLACE_HOST, &t);
	if (ret)
		return ret;
	memset(tv_tensor_data(t), (int)(0x5a + si), size);
	tensor_name(si, name);
	/* One buffer under every step id: the engine references it. */
	for (uint64_t i = 0; i < n && !ret; i++)
		ret = tv_engine_send(b->n.engine, si * BR_STEP_STRIDE + i, name,
				     t);
	tv_tensor_unref(t);
	return ret;
}

/* Before connecting: filling 64 MiB takes a while under TCG. */
static int publish_all(struct br *b)
{
	int ret = 0;

	for (size_t si = 0; si <= b->o->nsizes && !ret; si++)
		ret = publish_size(b, si); /* the last one: latency, 64 B */
	if (!ret) {
		struct tv_tensor *t;

		/* Fetched last: tells us the fetcher is through. */
		ret = tv_tensor_create_dead(b->n.engine, TV_DT_UINT8, &t);
		if (!ret) {
			ret = tv_engine_send(b->n.engine, BR_DONE_STEP, "done",
					     t);
			tv_tensor_unref(t);
		}
	}
	return ret;
}

/* Requests of the bandwidth runs: the next one starts the latency run. */
static uint64_t bw_requests(const struct br_opts *o)
{
	uint64_t n = 0;

	for (size_t si = 0; si < o->nsizes; si++)
		n += count_of(o, si);
	return n;
}

/*
 * Serve until every published tensor was asked for and answered (the
 * fetcher asks for each, "done" last).  "auto": sleep on events for the
 * bandwidth runs, spin from the latency run's first request on.
 */
static int serve(struct br *b)
{
	struct tv_engine_stats st;
	uint64_t spins = 0, bw = bw_requests(b->o);

	for (;;) {
		br_poll(b, &spins);
		/* Not every spin: a copy of the stats is a tenth of one. */
		if (b->busy && (spins & 1023))
			continue;
		tv_engine_stats(b->n.engine, &st);
		/*
		 * Done first: the fetcher disconnects as soon as it has "done",
		 * and in busy mode the disconnect can be seen in the same 1024
		 * spins as the last answer (a clean end is no channel error).
		 * The fetcher checks what it got; this side only serves.
		 */
		if (!st.unmatched_sends && !st.live_responses)
			break;
		if (st.channel_failures) {
			const char *why = NULL;

			/* The connection's last trouble, if it had some. */
			tv_cm_peer_state(b->n.cm, 0, &why);
			snprintf(b->err, sizeof(b->err), "channel error "
				 "(%llu tensors never asked for or answered)%s%.300s",
				 (unsigned long long)(st.unmatched_sends +
						      st.live_responses),
				 why && why[0] ? "; the connection's last trouble: " : "",
				 why ? why : "");
			break;
		}
		if (b->o->auto_poll && st.msgs_recv[TV_MSG_TENSOR_REQUEST] > bw)
			b->busy = true;
	}
	if (b->err[0])
		fprintf(stderr, "bench rxe: node 1: %s\n", b->err);
	return b->err[0] ? -EIO : 0;
}

/* ---- node 0: fetch ------------------------------------------------------- */

static void fetch_done(void *arg, const struct tv_status *st,
		       struct tv_tensor *t)
{
	struct br *b = arg;

	b->done++;
	b->t_done_ns = now_ns();
	if (st->code != TV_OK) {
		b->failed++;
		if (!b->err[0])
			snprintf(b->err, sizeof(b->err), "fetch failed: %s: %.200s",
				 tv_code_name(st->code), st->message);
	}
	if (t)
		tv_tensor_unref(t);
}

static int fetch(struct br *b, uint64_t step, const char *name)
{
	int ret = tv_engine_recv_async(b->n.engine, b->ch, step, name,
				       TV_PLACE_HOST, fetch_done, b);

	if (ret)
		snprintf(b->err, sizeof(b->err), "tv_engine_recv_async: %s",
			 strerror(-ret));
	return ret;
}

/*
 * Fetch steps [first, first + n) of name (size index si) with up to window
 * in flight.  The name comes formatted: the latency loop times one fetch
 * per call, and a snprintf() would be part of what it measures.
 */
static int fetch_run(struct br *b, size_t si, const char *name,
		     uint64_t first, uint64_t n, uint32_t window)
{
	uint64_t issued = 0, base = b->done, spins = 0;

	while (b->done - base < n) {
		while (issued < n && issued - (b->done - base) < window)
			if (fetch(b, si * BR_STEP_STRIDE + first + issued++,
				  name))
				return -EIO;
		br_poll(b, &spins);
		if (b->err[0])
			return -EIO;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int bench_bw(struct br *b, size_t si)
{
	uint64_t size = size_of(b->o, si), n = iters_for(b->o, size), t0;
	uint32_t window = b->o->window;
	char name[32];
	int ret;

	/* Bounded memory: every fetch in flight holds a destination. */
	if (window > (128ull << 20) / size)
		window = (uint32_t)((128ull << 20) / size);
	if (window < 1)
		window = 1;
	tensor_name(si, name);
	ret = fetch_run(b, si, name, 0, 2, 1); /* first request, then cached */
	if (ret)
		return ret;
	t0 = now_ns();
	ret = fetch_run(b, si, name, 2, n, window);
	if (ret)
		return ret;
	printf("bench-rxe bw %" PRIu64 " %.0f (%" PRIu64 " fetches, window "
	       "%u, %.3f s)\n", size,
	       (double)(n * size) / ((double)(b->t_done_ns - t0) / 1e9), n,
	       window, (double)(b->t_done_ns - t0) / 1e9);
	fflush(stdout);
	return 0;
}

static double bd_median(struct br_breakdown *bd, uint32_t n, int from,
			int to, uint64_t *tmp)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++)
		if (bd->t[i][from] && bd->t[i][to] >= bd->t[i][from])
			tmp[k++] = bd->t[i][to] - bd->t[i][from];
	if (!k)
		return -1;
	qsort(tmp, k, sizeof(*tmp), cmp_u64);
	return (double)tmp[k / 2] / 1e3;
}

/* Medians per phase; tmp has room for n. */
static void bd_print(struct br_breakdown *bd, uint32_t n, uint64_t *tmp)
{
	static const struct { int from, to; const char *what; } ph[] = {
		{ BD_CALL, BD_REQ_SEEN, "fetch call -> publisher parsed the request" },
		{ BD_REQ_SEEN, BD_DONE, "publisher parsed it -> fetcher's done callback" },
		{ BD_CALL, BD_DONE, "whole fetch" },
		/* rxe runs the transport in the posting syscall: these are long. */
		{ BD_CALL, BD_REQ_POSTED, "fetch call -> request's post_send returned" },
		{ BD_REQ_SEEN, BD_WRITE_POSTED, "publisher parsed it -> write's post_send returned" },
	};

	for (size_t i = 0; i < sizeof(ph) / sizeof(ph[0]); i++)
		printf("bench-rxe breakdown %8.2f us median  %s\n",
		       bd_median(bd, n, ph[i].from, ph[i].to, tmp), ph[i].what);
}

static int bench_lat(struct br *b)
{
	size_t si = b->o->nsizes;
	uint32_t n = b->o->lat_iters;
	uint64_t *lat = calloc(n, sizeof(*lat)), sum = 0;
	char name[32];
	int ret;

	tensor_name(si, name);
	if (!lat) {
		fprintf(stderr, "bench rxe: the latency table: %s\n",
			strerror(ENOMEM));
		return -ENOMEM;
	}
	ret = fetch_run(b, si, name, 0, 10, 1);

	for (uint32_t i = 0; !ret && i < n; i++) {
		uint64_t t0 = now_ns();

		if (b->o->bd)
			b->o->bd->t[i][BD_CALL] = t0;
		ret = fetch_run(b, si, name, 10 + i, 1, 1);
		lat[i] = b->t_done_ns - t0;
		sum += lat[i];
	}
	if (!ret) {
		qsort(lat, n, sizeof(*lat), cmp_u64);
		printf("bench-rxe lat 64 %.2f %.2f %.2f (%u fetches; avg, "
		       "median, p99 in us)\n", (double)sum / n / 1e3,
		       (double)lat[n / 2] / 1e3,
		       (double)lat[(size_t)n * 99 / 100] / 1e3, n);
	}
	if (!ret && b->o->bd)
		bd_print(b->o->bd, n, lat);
	free(lat);
	return ret;
}

static int client(struct br *b)
{
	int ret = 0;

	for (size_t si = 0; si < b->o->nsizes && !ret; si++)
		ret = bench_bw(b, si);
	if (!ret)
		ret = bench_lat(b);
	if (!ret) {
		uint64_t spins = 0, want = b->done + 1;

		ret = fetch(b, BR_DONE_STEP, "done");
		while (!ret && b->done < want && !b->err[0])
			br_poll(b, &spins);
	}
	if (b->err[0])
		fprintf(stderr, "bench rxe: %s\n", b->err);
	else if (ret) /* a fetch the engine refused (its memory, its QP) */
		fprintf(stderr, "bench rxe: node 0: fetching: %s\n",
			strerror(-ret));
	return b->err[0] ? -EIO : ret;
}

/* ---- the command ---------------------------------------------------------- */

/*
 * --record (docs/recording.md): the fault wrapper without a rule and its
 * tap on the device, to measure what recording costs; the records go to
 * FILE.node<K> after the run, one verbs line each.
 */
static int record_start(struct br *b, uint32_t id)
{
	int ret;

	if (!b->o->record && !b->o->wrap_only)
		return 0;
	ret = tv_flt_create(id, &b->flt);
	if (!ret && b->o->record)
		ret = tv_tb_tap_create(2, &b->tap);
	return ret;
}

static void record_stop(struct br *b, uint32_t id, int *ret_p)
{
	char path[4096];
	size_t n = 0;
	int ret = -ENAMETOOLONG;

	if (b->tap && snprintf(path, sizeof(path), "%s.node%u", b->o->record,
			       id) < (int)sizeof(path))
		ret = tv_tb_tap_write(b->tap, path, &n);
	if (b->tap && !ret)
		printf("bench rxe: node %u recorded %zu verbs events to %s\n",
		       id, n, path);
	if (b->tap && ret && !*ret_p) {
		fprintf(stderr, "bench rxe: node %u: --record: %s\n", id,
			strerror(-ret));
		*ret_p = ret;
	}
	tv_tb_tap_free(b->tap);
	tv_flt_destroy(b->flt);
	b->tap = NULL;
	b->flt = NULL;
}

static int run_node(const struct br_opts *o, uint32_t id)
{
	struct br b = { .o = o, .busy = o->busy[id] };
	int ret;

	ret = record_start(&b, id);
	if (!ret)
		ret = br_open(&b, id);
	if (ret) {
		record_stop(&b, id, &ret);
		return ret;
	}
	ret = id ? publish_all(&b) : 0;
	if (ret) /* a tensor the engine could not make or register */
		fprintf(stderr, "bench rxe: node 1: publishing: %s\n",
			strerror(-ret));
	if (!ret)
		ret = br_connect(&b, id);
	if (!ret)
		ret = id ? serve(&b) : client(&b);
	tv_cm_quiesce(b.n.cm);
	rnode_close(&b.n);
	record_stop(&b, id, &ret);
	return ret;
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

static int parse_sizes(struct br_opts *o, const char *list)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int ret = 0;

	/* strtok_r(NULL, ...) would read the NULL save pointer. */
	if (!copy)
		return -ENOMEM;
	o->nsizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (o->nsizes == BR_MAX_SIZES || tv_tb_parse_u64(tok, &v) ||
		    v < 1 || v > (1ull << 30))
			ret = -EINVAL;
		else
			o->sizes[o->nsizes++] = v;
	}
	free(copy);
	return ret;
}

static int parse_opts(struct br_opts *o, int argc, char **argv)
{
	static const uint64_t sizes[] = { 4096, 65536, 1u << 20, 4u << 20,
					  16u << 20, 64u << 20 };
	struct tv_engine_config ec;
	uint64_t v;

	memset(o, 0, sizeof(*o));
	memcpy(o->sizes, sizes, sizeof(sizes));
	o->nsizes = sizeof(sizes) / sizeof(sizes[0]);
	o->bytes = 256u << 20;
	o->lat_iters = 2000;
	o->window = 16;
	o->timeout_s = 600;
	o->only = -1;
	tv_engine_config_default(&ec);
	o->max_inline = ec.max_inline_bytes;
	/*
	 * Like ib_write_bw, whose passive side does nothing while the active
	 * one spins: a spinning publisher takes a CPU from the kernel's rxe
	 * work (2 vCPUs in the VM).
	 */
	o->busy[0] = true;
	o->busy[1] = false;
	o->auto_poll = true;
	default_addr("RXE_IP0", 7600, &o->addr[0]);
	default_addr("RXE_IP1", 7601, &o->addr[1]);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : "";

		if (!strcmp(a, "--breakdown")) {
			o->want_breakdown = true;
			continue;
		}
		if (!strcmp(a, "--floor")) {
			o->want_floor = true;
			continue;
		}
		if (!strcmp(a, "--wrap-only")) {
			o->wrap_only = true;
			continue;
		}
		i++;
		if ((!strcmp(a, "--fetcher-poll") ||
		     !strcmp(a, "--publisher-poll")) &&
		    (!strcmp(val, "busy") || !strcmp(val, "event"))) {
			o->busy[a[2] == 'p'] = !strcmp(val, "busy");
			o->auto_poll &= a[2] != 'p';
			continue;
		}
		if ((!strcmp(a, "--addr0") || !strcmp(a, "--addr1")) &&
		    !tv_cm_parse_addr(val, &o->addr[a[6] - '0']))
			continue;
		if (!strcmp(a, "--sizes")) {
			int r = parse_sizes(o, val);

			if (!r)
				continue;
			if (r == -ENOMEM) {
				fprintf(stderr, "bench rxe: --sizes: %s\n",
					strerror(ENOMEM));
				return r;
			}
		}
		if (!strcmp(a, "--record") && val[0]) {
			o->record = val;
			continue;
		}
		if (!strcmp(a, "--node") && (!strcmp(val, "0") ||
					     !strcmp(val, "1"))) {
			o->only = val[0] - '0';
			continue;
		}
		if (!tv_tb_parse_u64(val, &v) && v > 0 && v <= (1ull << 40)) {
			if (!strcmp(a, "--bytes")) {
				o->bytes = v;
				continue;
			}
			if (!strcmp(a, "--lat-iters") && v <= 1000000) {
				o->lat_iters = (uint32_t)v;
				continue;
			}
			if (!strcmp(a, "--window") && v <= 1000) {
				o->window = (uint32_t)v;
				continue;
			}
			if (!strcmp(a, "--timeout") && v <= 86400) {
				o->timeout_s = (uint32_t)v;
				continue;
			}
		}
		if (!strcmp(a, "--max-inline") && !tv_tb_parse_u64(val, &v) &&
		    v <= 4096) {
			o->max_inline = (uint32_t)v;
			continue;
		}
		fprintf(stderr, "bench rxe: bad option %s%s%s\n", a,
			val[0] ? " " : "", val);
		return -EINVAL;
	}
	return 0;
}

/*
 * A benchmark has no deadline of its own (a fetch waits as long as it
 * takes): a node that is still at it after --timeout says so and goes,
 * and takes the other one with it (die_with, waitpid).
 */
static volatile sig_atomic_t br_node; /* which node this process runs */

static void br_timed_out(int sig)
{
	static const char msg[2][80] = {
		"bench rxe: node 0: no result within --timeout: stopped\n",
		"bench rxe: node 1: no result within --timeout: stopped\n",
	};
	const char *m = msg[br_node ? 1 : 0];
	ssize_t n = write(STDERR_FILENO, m, strlen(m));

	(void)sig;
	(void)n;
	/* _exit(1); in a coverage build, after writing the counters. */
	tv_tb_child_exit(1);
}

/* A forked node goes when the process that forked it does. */
static void die_with(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent) /* it went before prctl() */
		_exit(1);
}

static uint16_t *addr_port(struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ?
		       &((struct sockaddr_in6 *)ss)->sin6_port :
		       &((struct sockaddr_in *)ss)->sin_port;
}

/* --floor: node 1's address on the next port answers, node 0 asks. */
static int floor_node(const struct br_opts *o, uint32_t id)
{
	struct sockaddr_storage srv = o->addr[1], src = o->addr[0];

	*addr_port(&srv) = htons((uint16_t)(ntohs(*addr_port(&srv)) + 1));
	*addr_port(&src) = 0;
	return bench_floor((struct sockaddr *)&srv,
			   id ? NULL : (struct sockaddr *)&src, id == 1,
			   o->lat_iters, 64, o->max_inline);
}

/* Node 1 in a forked child, node 0 here; 0 when both succeeded. */
static int run_pair(int (*node)(const struct br_opts *o, uint32_t id),
		    const struct br_opts *o, const char *what)
{
	int status = 0, ret;
	pid_t pid, parent = getpid();

	fflush(stdout);
	signal(SIGALRM, br_timed_out);
	alarm(o->timeout_s); /* the parent's; the child arms its own */
	pid = fork();
	if (pid < 0) {
		perror("bench rxe: fork");
		return -errno;
	}
	if (pid == 0) {
		br_node = 1;
		alarm(o->timeout_s);
		die_with(parent);
		ret = node(o, 1) ? 1 : 0;
		/* _exit() drops stdio's buffer: its lines (--record's) too. */
		fflush(stdout);
		tv_tb_child_exit(ret);
	}
	ret = node(o, 0);
	if (ret)
		kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	alarm(0);
	if (ret || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench rxe: %s failed (node 0 %d, node 1 exit "
			"%d)\n", what, ret,
			WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return ret ? ret : -EIO;
	}
	return 0;
}

/*
 * One node here, the other elsewhere (--node, or a rank each): no fork,
 * the same runs in the same order on both sides, which meet over rdma_cm.
 */
static int run_alone(const struct br_opts *o)
{
	uint32_t id = (uint32_t)o->only;

	br_node = id;
	signal(SIGALRM, br_timed_out);
	alarm(o->timeout_s);
	if (run_node(o, id))
		return 1;
	alarm(o->timeout_s);
	if (o->want_floor && floor_node(o, id))
		return 1;
	alarm(0);
	return 0;
}

/* Under mpirun: node = rank, the addresses from the ranks' devices. */
static int mpi_pair(struct br_opts *o)
{
	uint32_t node;
	int ret = tv_tb_mpi_bench_pair("bench rxe", 7600, o->addr, &node);

	if (ret == 1)
		return 0;
	if (ret)
		return ret;
	o->only = (int)node;
	return 0;
}

int rv_bench_rxe_main(int argc, char **argv, const char *argv0)
{
	struct br_opts o;

	(void)argv0;
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(bench_usage, stdout);
		return 0;
	}
	if (parse_opts(&o, argc, argv) || mpi_pair(&o) ||
	    !o.addr[0].ss_family || !o.addr[1].ss_family) {
		fputs(bench_usage, stderr);
		return 2;
	}
	if (o.want_breakdown && o.only >= 0) {
		fprintf(stderr, "bench rxe: --breakdown needs both nodes in "
			"one host (not with --node or mpirun)\n");
		return 2;
	}
	if (o.want_breakdown) {
		size_t len = sizeof(*o.bd) + (size_t)o.lat_iters * sizeof(o.bd->t[0]);

		o.bd = mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (o.bd == MAP_FAILED) {
			perror("bench rxe: mmap");
			return 1;
		}
		/* bench_lat(): steps 10.. of the latency index are timed. */
		o.bd->first_step = o.nsizes * BR_STEP_STRIDE + 10;
	}
	/* Node 0 fetches, node 1 publishes; then the floor, if asked. */
	if (o.only >= 0)
		return run_alone(&o);
	if (run_pair(run_node, &o, "the engine's run") ||
	    (o.want_floor && run_pair(floor_node, &o, "--floor")))
		return 1;
	return 0;
}
