/*
 * tensorverbs bench gather: the gather engine between two RDMA devices in
 * one process (node 0 the client on $RXE_IP0's device, node 1 the server
 * on $RXE_IP1's: passive, nothing to run), or in the simulator with its
 * per-QP cost model (--sim).  Every gather reads `batch` rows drawn
 * uniformly from the server's range (all remote), busy-polling as
 * perftest does.  One line per configuration:
 *   bench-gather CONFIG ROWS_PER_S BYTES_PER_S
 * ci/rxe/bench-gather.sh puts them next to ib_read_bw's message rate on
 * the same devices in the same boot (docs/gather.md, "Benchmarks").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tensorverbs/cm.h>
#include <tensorverbs/ibverbs.h>
#include <tensorverbs/sim.h>

#include "gw.h"

static const char bench_usage[] =
	"usage: tensorverbs bench gather [--rows N] [--row-bytes B]\n"
	"           [--batch N] [--total N] [--sim] [--qp-op-ns N]\n"
	"           [--post-ns N] [--link-bps N] [--latency-ns N]\n"
	"           [--timeout S] [--node 0|1]\n"
	"       mpirun -np 2 tensorverbs bench gather [options]\n"
	"  Gathers of --batch rows (default 16384) of --row-bytes (2048) from\n"
	"  a server of --rows (131072) until --total rows (262144) were read,\n"
	"  per configuration: 8 QPs with post lists of 128 (quiver's), 1 QP,\n"
	"  post lists of 1, and sorted ids.  Real verbs: node 0 on $RXE_IP0's\n"
	"  device, node 1 on $RXE_IP1's (or --addr0/--addr1 ADDR:PORT).\n"
	"  --sim: the same in the simulator (mlx5 profile), with a per-QP\n"
	"  message cost of --qp-op-ns (default 250), a post_send cost of\n"
	"  --post-ns a node (default 500), a link of --link-bps bytes/s\n"
	"  (default 12.5e9) and --latency-ns (default 1000); rows/s in\n"
	"  virtual time.\n"
	"  --node N: this process runs node N only, the other node runs on\n"
	"  another host with the other --node and the same options; they\n"
	"  meet on node 0's address (TCP, the same port) to exchange handles\n"
	"  and endpoints; node 0 prints.  Under mpirun (2 ranks, a host\n"
	"  each): node = rank, at its device's RoCE address ($RDMA_DEVICE per\n"
	"  rank) and port 7710 + rank.\n";

struct gb_config {
	const char *name;
	uint32_t qps;
	uint32_t post_list;
	bool sort;
};

static const struct gb_config configs[] = {
	{ "8qp-pl128", 8, 128, false },
	{ "1qp-pl128", 1, 128, false },
	{ "8qp-pl1", 8, 1, false },
	{ "8qp-pl128-sorted", 8, 128, true },
};

#define GB_NCONFIGS (sizeof(configs) / sizeof(configs[0]))

struct gb_opts {
	struct sockaddr_storage addr[2];
	bool have_addr;
	uint64_t rows;
	uint32_t row_bytes;
	uint32_t batch;
	uint64_t total;
	bool sim;
	uint64_t qp_op_ns;
	uint64_t post_ns;
	uint64_t link_bps;
	uint64_t latency_ns;
	uint64_t timeout_ns;
	int only;                /* --node / the MPI rank: that node, or -1 */
};

struct gb {
	const struct gb_opts *o;
	struct tv_sim *sim;
	struct tv_tb_hw_device d[2];
	struct tv_vf_connect_cfg connect[2];
	struct tv_gather_ctx *ctx[2];
	uint8_t *part[2];
	uint8_t *out;
	uint64_t *ids;
	struct tv_tb_peers *peers; /* split across hosts: the other node */
};

/* Is node i in this process? */
static bool here(const struct gb *b, uint32_t i)
{
	return b->o->only < 0 || (uint32_t)b->o->only == i;
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t clock_ns(const struct gb *b)
{
	return b->sim ? tv_sim_now_ns(b->sim) : wall_ns();
}

/* ---- the two nodes -------------------------------------------------------- */

static int open_devices(struct gb *b)
{
	struct tv_sim_config sc;
	char msg[512] = "";
	int ret = 0;

	if (b->o->sim) {
		tv_sim_config_default(&sc);
		sc.num_nodes = 2;
		sc.link.bytes_per_sec = b->o->link_bps;
		sc.link.latency_ns = b->o->latency_ns;
		sc.qp_op_ns = b->o->qp_op_ns;
		sc.post_ns = b->o->post_ns;
		ret = tv_sim_create(&sc, &b->sim);
		for (int i = 0; !ret && i < 2; i++)
			b->d[i].dev = b->d[i].base = tv_sim_device(b->sim, i);
		return ret;
	}
	for (uint32_t i = 0; !ret && i < 2; i++) {
		if (!here(b, i))
			continue;
		ret = tv_tb_open_device_at(&b->o->addr[i], i, 2, &b->d[i], msg,
					   sizeof(msg));
		if (!ret)
			tv_ibv_connect_cfg(b->d[i].base, &b->connect[i]);
	}
	if (ret)
		fprintf(stderr, "bench gather: %s\n", msg[0] ? msg :
			strerror(-ret));
	return ret;
}

static void close_devices(struct gb *b)
{
	for (int i = 0; i < 2; i++)
		if (!b->sim && b->d[i].base)
			tv_tb_hw_close_device(&b->d[i], true);
	if (b->sim)
		tv_sim_destroy(b->sim);
	b->sim = NULL;
}

/*
 * Split across hosts: each node's handle and endpoints to the other over
 * the peers' TCP star, both ends connected before node 0 reads (a READ
 * at a QP not yet ready to receive would wait out a retry timeout).
 */
static int exchange(struct gb *b, const struct gb_config *c, char *why,
		    size_t cap)
{
	uint32_t me = (uint32_t)b->o->only;
	uint8_t *mine = NULL, **all = NULL;
	size_t len = 0, *lens = NULL;
	int ret = gw_blob_make(b->ctx[me], me, 2, c->qps, &mine, &len);

	if (!ret)
		ret = tv_tb_peers_allgather(b->peers, mine, len, &all, &lens);
	if (!ret)
		ret = gw_blob_apply(b->ctx[me], me, 2, c->qps, !me, all[!me],
				    lens[!me], why, cap);
	if (!ret)
		ret = tv_tb_peers_barrier(b->peers, "both ends connected");
	else if (ret != -ECANCELED && ret != -ETIMEDOUT)
		tv_tb_peers_abort(b->peers, why[0] ? why : strerror(-ret));
	if (ret && !why[0])
		snprintf(why, cap, "%s", tv_tb_peers_error(b->peers));
	for (int n = 0; all && n < 2; n++)
		free(all[n]);
	free(all);
	free(lens);
	free(mine);
	return ret;
}

static int engines_open(struct gb *b, const struct gb_config *c)
{
	struct tv_gather_config cfg;
	char why[200] = "";
	int ret = 0;

	tv_gather_config_default(&cfg);
	cfg.nodes = 2;
	cfg.rows = b->o->rows;
	cfg.row_bytes = b->o->row_bytes;
	cfg.qps_per_peer = c->qps;
	cfg.post_list = c->post_list;
	/* About as many READs in flight per QP whatever the list size. */
	cfg.window = c->post_list >= 128 ? 2 : 256 / c->post_list;
	cfg.sort_ids = c->sort;
	cfg.qp_timeout = 14;
	for (uint32_t i = 0; !ret && i < 2; i++) {
		cfg.node_id = i;
		cfg.connect = b->sim ? NULL : &b->connect[i];
		if (here(b, i))
			ret = tv_gather_ctx_create(b->d[i].dev, &cfg,
						   b->part[i], why, sizeof(why),
						   &b->ctx[i]);
	}
	/* Node 0 reads node 1: its QPs only. */
	for (uint32_t k = 0; !ret && !b->peers && k < c->qps; k++)
		ret = gw_connect_pair(b->ctx[0], b->ctx[1], 0, 1, k);
	if (!ret && b->peers)
		ret = exchange(b, c, why, sizeof(why));
	if (!ret && here(b, 0))
		ret = tv_gather_out_register(b->ctx[0], b->out,
					     (size_t)b->o->batch *
						     b->o->row_bytes);
	if (ret)
		fprintf(stderr, "bench gather: %s: %s%s%s\n", c->name,
			strerror(-ret), why[0] ? ": " : "", why);
	return ret;
}

static void engines_close(struct gb *b)
{
	for (int i = 0; i < 2; i++) {
		if (b->ctx[i] && tv_gather_ctx_destroy(b->ctx[i]))
			fprintf(stderr, "bench gather: node %d's engine still "
				"had work in flight\n", i);
		b->ctx[i] = NULL;
	}
}

/* ---- one configuration ------------------------------------------------------- */

/*
 * Between polls of a gather: the deadline, and in a split run the other
 * node, whose death the READs may never report (rxe retries forever at
 * retry_cnt 7, quiver's; docs/verbs-semantics.md) while its TCP
 * connection to us closes at once.
 */
static int still_on(struct gb *b, uint64_t deadline)
{
	if (wall_ns() > deadline)
		return -ETIMEDOUT;
	return b->peers ? tv_tb_peers_poll(b->peers) : 0;
}

static int one_gather(struct gb *b, uint64_t deadline)
{
	const struct tv_gather_result *res = NULL;
	int ret;

	if (b->sim)
		return tv_gather(b->ctx[0], b->ids, b->o->batch, b->out,
				 b->o->timeout_ns, &res);
	ret = tv_gather_start(b->ctx[0], b->ids, b->o->batch, b->out, 0, NULL);
	for (unsigned k = 0; !ret; k++) {
		ret = tv_gather_progress(b->ctx[0]);
		if (ret < 0)
			break;
		ret = tv_gather_test(b->ctx[0], &res);
		if (ret != -EAGAIN)
			break;
		ret = (k & 1023) == 0 ? still_on(b, deadline) : 0;
	}
	return ret;
}

static int run_config(struct gb *b, const struct gb_config *c)
{
	uint64_t first, end, rows = 0, t0, dt, deadline;
	struct tv_prng p;
	struct tv_gather_config cc;
	int ret = engines_open(b, c);

	tv_gather_config_default(&cc);
	cc.nodes = 2;
	cc.rows = b->o->rows;
	tv_gather_range(&cc, 1, &first, &end);
	tv_prng_init(&p, 42);
	if (ret) {
		/* Said by engines_open; the other node must stop waiting. */
		if (b->peers && ret != -ECANCELED)
			tv_tb_peers_abort(b->peers, "its engine failed to start");
		engines_close(b);
		return ret;
	}
	if (!here(b, 0)) {
		/* The server is passive: it waits for node 0's last gather. */
		ret = tv_tb_peers_barrier(b->peers, "node 0's gathers");
		if (ret)
			fprintf(stderr, "bench gather: %s: %s\n", c->name,
				tv_tb_peers_error(b->peers));
		engines_close(b);
		return ret;
	}
	t0 = clock_ns(b);
	deadline = wall_ns() + b->o->timeout_ns;
	while (!ret && rows < b->o->total) {
		for (uint32_t i = 0; i < b->o->batch; i++)
			b->ids[i] = first + tv_prng_below(&p, end - first);
		ret = one_gather(b, deadline);
		rows += b->o->batch;
	}
	dt = clock_ns(b) - t0;
	if (!ret && dt) {
		double rps = (double)rows * 1e9 / (double)dt;

		printf("bench-gather %s %.0f %.0f\n", c->name, rps,
		       rps * b->o->row_bytes);
		printf("  %-18s %10.0f rows/s %8.1f MB/s (%" PRIu64 " rows of "
		       "%u B, %s)\n", c->name, rps, rps * b->o->row_bytes / 1e6,
		       rows, b->o->row_bytes, b->sim ? "virtual time" :
		       "wall time");
	} else if (ret == -ECANCELED && b->peers) {
		fprintf(stderr, "bench gather: %s: stopped: %s\n", c->name,
			tv_tb_peers_error(b->peers));
		tv_gather_ctx_abort(b->ctx[0]); /* its READs land nowhere now */
	} else if (ret) {
		fprintf(stderr, "bench gather: %s: %s%s%s\n", c->name,
			strerror(-ret), tv_gather_error(b->ctx[0])[0] ?
			": " : "", tv_gather_error(b->ctx[0]));
	}
	if (b->peers && !ret)
		ret = tv_tb_peers_barrier(b->peers, "node 0's gathers");
	else if (b->peers)
		tv_tb_peers_abort(b->peers, "a gather failed");
	engines_close(b);
	return ret;
}

/* ---- options ------------------------------------------------------------------- */

static int parse_opts(struct gb_opts *o, int argc, char **argv)
{
	const char *ip0 = getenv("RXE_IP0"), *ip1 = getenv("RXE_IP1");
	char a[80];

	memset(o, 0, sizeof(*o));
	o->rows = 131072;
	o->row_bytes = 2048;
	o->batch = 16384;
	o->total = 262144;
	o->qp_op_ns = 250;
	o->post_ns = 500;
	o->link_bps = 12500000000ull;
	o->latency_ns = 1000;
	o->timeout_ns = 600ull * 1000000000ull;
	o->only = -1;
	if (ip0 && ip1) {
		snprintf(a, sizeof(a), "%s:7710", ip0);
		o->have_addr = !tv_cm_parse_addr(a, &o->addr[0]);
		snprintf(a, sizeof(a), "%s:7711", ip1);
		o->have_addr &= !tv_cm_parse_addr(a, &o->addr[1]);
	}
	for (int i = 1; i < argc; i++) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *e = NULL;
		uint64_t n = v ? strtoull(v, &e, 10) : 0;
		bool num = v && *v && e && !*e;

		if (!strcmp(k, "--sim")) {
			o->sim = true;
			continue;
		}
		if (!v)
			return -EINVAL;
		i++;
		if (!strcmp(k, "--addr0") || !strcmp(k, "--addr1")) {
			if (tv_cm_parse_addr(v, &o->addr[k[6] - '0']))
				return -EINVAL;
			o->have_addr = true;
		} else if (num && n && !strcmp(k, "--rows")) {
			o->rows = n;
		} else if (num && n && n <= 65536 && !strcmp(k, "--row-bytes")) {
			o->row_bytes = (uint32_t)n;
		} else if (num && n && n <= (1u << 20) && !strcmp(k, "--batch")) {
			o->batch = (uint32_t)n;
		} else if (num && n && !strcmp(k, "--total")) {
			o->total = n;
		} else if (num && !strcmp(k, "--qp-op-ns")) {
			o->qp_op_ns = n;
		} else if (num && !strcmp(k, "--post-ns")) {
			o->post_ns = n;
		} else if (num && !strcmp(k, "--link-bps")) {
			o->link_bps = n;
		} else if (num && !strcmp(k, "--latency-ns")) {
			o->latency_ns = n;
		} else if (num && n <= 1 && !strcmp(k, "--node")) {
			o->only = (int)n;
		} else if (num && n && !strcmp(k, "--timeout")) {
			o->timeout_ns = n * 1000000000ull;
		} else {
			fprintf(stderr, "bench gather: bad option %s %s\n", k, v);
			return -EINVAL;
		}
	}
	if (o->rows < 2 || o->rows * o->row_bytes > (8ull << 30))
		return -EINVAL;
	return 0;
}

static int bench_alloc(struct gb *b)
{
	const struct gb_opts *o = b->o;
	struct tv_gather_config cfg;

	tv_gather_config_default(&cfg);
	cfg.nodes = 2;
	cfg.rows = o->rows;
	cfg.row_bytes = o->row_bytes;
	for (uint32_t i = 0; i < 2; i++) {
		b->part[i] = calloc(1, tv_gather_part_bytes(&cfg, i));
		if (!b->part[i])
			return -ENOMEM;
		memset(b->part[i], 0x5a, tv_gather_part_bytes(&cfg, i));
	}
	b->out = aligned_alloc(4096, ((size_t)o->batch * o->row_bytes + 4095) &
					     ~(size_t)4095);
	b->ids = calloc(o->batch, sizeof(*b->ids));
	return b->out && b->ids ? 0 : -ENOMEM;
}

/* Under mpirun: node = rank, the addresses from the ranks' devices. */
static int mpi_pair(struct gb_opts *o)
{
	uint32_t node;
	int ret;

	if (o->sim)
		return 0;
	ret = tv_tb_mpi_bench_pair("bench gather", 7710, o->addr, &node);
	if (ret == 1)
		return 0;
	if (!ret) {
		o->only = (int)node;
		o->have_addr = true;
	}
	return ret;
}

/* Both sides must run the same benchmark: its shape is the fingerprint. */
static int open_peers(struct gb *b)
{
	const struct gb_opts *o = b->o;
	uint64_t fp = 0x6762656e6368ull; /* "gbench" */
	char msg[300] = "";
	int ret;

	fp = fp * 1000003 ^ o->rows;
	fp = fp * 1000003 ^ o->row_bytes;
	fp = fp * 1000003 ^ o->batch;
	fp = fp * 1000003 ^ o->total;
	ret = tv_tb_peers_open((uint32_t)o->only, 2, &o->addr[0], fp,
			       o->timeout_ns, &b->peers, msg, sizeof(msg));
	if (ret)
		fprintf(stderr, "bench gather: node %d: %s\n", o->only,
			msg[0] ? msg : strerror(-ret));
	return ret;
}

int gw_bench_main(int argc, char **argv, const char *argv0)
{
	struct gb_opts o;
	struct gb b = { .o = &o };
	int ret;

	(void)argv0;
	if (parse_opts(&o, argc, argv)) {
		fputs(bench_usage, stderr);
		return 2;
	}
	if (mpi_pair(&o))
		return 2;
	if (!o.sim && !o.have_addr) {
		fprintf(stderr, "bench gather: no addresses: set RXE_IP0 and "
			"RXE_IP1 (ci/rxe/vm.sh does), --addr0/--addr1, or "
			"--sim\n");
		return 2;
	}
	if (o.sim && o.only >= 0) {
		fprintf(stderr, "bench gather: --sim runs both nodes in one "
			"process (no --node, no mpirun)\n");
		return 2;
	}
	ret = bench_alloc(&b);
	if (ret)
		fprintf(stderr, "bench gather: the partitions and buffers: %s\n",
			strerror(-ret));
	if (!ret)
		ret = open_devices(&b);
	if (!ret && o.only >= 0)
		ret = open_peers(&b);
	if (o.only == 1)
		printf("bench gather: node 1 (the server) of a split run: "
		       "node 0 prints the figures\n");
	else
		printf("bench gather: %s, %" PRIu64 " rows of %u B on the server, "
	       "gathers of %u rows\n", o.sim ? "simulator" : "real verbs",
	       o.rows, o.row_bytes, o.batch);
	for (size_t i = 0; !ret && i < GB_NCONFIGS; i++)
		ret = run_config(&b, &configs[i]);
	tv_tb_peers_close(b.peers);
	close_devices(&b);
	for (int i = 0; i < 2; i++)
		free(b.part[i]);
	free(b.out);
	free(b.ids);
	return ret ? 1 : 0;
}
