/*
 * `tensorverbs serve`: one scenario node as its own process on an RDMA
 * device, connected to the others with rdma_cm (testbed.h, tv_tb_serve;
 * docs/rxe-runs.md).  Here: the options.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "serve.h"

static const char serve_usage[] =
	"usage: tensorverbs serve SCENARIO.json --node K --addr ADDR:PORT\n"
	"                         [--peer J=ADDR:PORT]... [options]\n"
	"       tensorverbs serve SCENARIO.json --node K --cluster "
	"0=ADDR:PORT,1=ADDR:PORT,...\n"
	"  Run node K of the scenario on the RDMA device that holds ADDR\n"
	"  (rdma_cm finds it; RDMA_DEVICE may name it too, and the other\n"
	"  RDMA_* variables apply).  Every node of the scenario is one such\n"
	"  process; each needs every other node's address (--peer or\n"
	"  --cluster).  Lower ids connect to higher ones; node 0 also runs\n"
	"  the step coordinator (TCP on its address and port number).\n"
	"       mpirun -np N tensorverbs serve SCENARIO.json [options]\n"
	"  One node per rank: rank r is node r, its address the IPv4 of its\n"
	"  device's RoCE GID (RDMA_DEVICE per rank: mpirun -x) at port\n"
	"  --mpi-port + r (default 7950); the ranks gather their addresses\n"
	"  with MPI and rank 0 prints one verdict (docs/multihost.md).\n"
	"options:\n"
	"  --seed N               tensor contents seed (default: the scenario's)\n"
	"  --timeout S            give up after S seconds (default 120)\n"
	"  --connect-attempts N   rdma_cm connect attempts (default 20)\n"
	"  --retry-delay-ms MS    between attempts (default 500)\n"
	"  --no-reconnect         a failed channel stays failed\n"
	"  --ack-timeout-ms MS    engine ACK timeout (default: the scenario's,\n"
	"                         else 1000; emulated devices may need more)\n"
	"  --inject-disconnect STEP  (tests) node 0 drops its connections\n"
	"                         when step STEP starts; the run must recover\n"
	"  --faults PLAN          inject faults (docs/faults.md), added to the\n"
	"                         scenario's; vf/, engine/ and tv_pool/ points\n"
	"                         act on real verbs, each process on its own hits\n"
	"  --faults-node K        only node K arms the plan (every node still\n"
	"                         expects failures and recovers)\n"
	"  --record FILE          record this node's verbs, fault firings and\n"
	"                         verdict (docs/recording.md); `tensorverbs\n"
	"                         merge` joins the nodes' (under mpirun rank 0\n"
	"                         gathers them into FILE), `replay --sim` runs them\n"
	"  --fiu-ctrl             listen for fiu-ctrl(1) on $TMPDIR/fiu-ctrl-PID:\n"
	"                         enable points in the running process\n"
	"  --verbose              log every message, event and recv\n"
	"exit status: 0 this node's part passed, 1 it failed, 2 bad usage,\n"
	"scenario or RDMA_* configuration, 77 the scenario cannot run on\n"
	"hardware (the reason is printed)\n";

struct serve_args {
	struct tv_tb_serve_opts o;
	const char *addr_text;
	bool have_node;
	bool mpi;                  /* started by mpirun: node = rank */
	uint64_t mpi_port;         /* rank r listens on mpi_port + r */
};

static int parse_peer(struct serve_args *a, const char *text)
{
	struct sockaddr_storage ss;
	uint32_t j;

	if (tv_tb_parse_peer(text, &j, &ss))
		return -EINVAL;
	a->o.addrs[j] = ss;
	a->o.have_addr[j] = true;
	return 0;
}

static int parse_cluster(struct serve_args *a, const char *list)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !ret;
	     tok = strtok_r(NULL, ",", &save))
		ret = parse_peer(a, tok);
	free(copy);
	return ret;
}

static int parse_num(const char *opt, const char *v, uint64_t max,
		     uint64_t *out_p)
{
	uint64_t x;

	if (!v || cli_parse_u64(v, &x) || x > max) {
		fprintf(stderr, "tensorverbs serve: %s needs a number <= %llu\n",
			opt, (unsigned long long)max);
		return -EINVAL;
	}
	*out_p = x;
	return 0;
}

/* One option at argv[*i]; -EINVAL after printing why. */
static int parse_opt(struct serve_args *a, int argc, char **argv, int *i)
{
	const char *opt = argv[*i];
	const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	uint64_t x = 0;
	int ret = 0;

	if (!strcmp(opt, "--verbose")) {
		a->o.verbose = true;
		return 0;
	}
	if (!strcmp(opt, "--no-reconnect")) {
		a->o.reconnect = false;
		return 0;
	}
	if (!strcmp(opt, "--fiu-ctrl")) {
		a->o.fiu_ctrl = true;
		return 0;
	}
	(*i)++;
	if (!strcmp(opt, "--node")) {
		ret = parse_num(opt, v, TV_TB_MAX_NODES - 1, &x);
		a->o.node = (uint32_t)x;
		a->have_node = true;
	} else if (!strcmp(opt, "--addr") || !strcmp(opt, "--listen")) {
		/* Stored once --node is known: options come in any order. */
		a->addr_text = v;
		ret = v ? 0 : -EINVAL;
	} else if (!strcmp(opt, "--peer")) {
		ret = v ? parse_peer(a, v) : -EINVAL;
	} else if (!strcmp(opt, "--cluster")) {
		ret = v ? parse_cluster(a, v) : -EINVAL;
	} else if (!strcmp(opt, "--seed")) {
		ret = parse_num(opt, v, UINT64_MAX, &a->o.seed);
		a->o.has_seed = true;
	} else if (!strcmp(opt, "--timeout")) {
		ret = parse_num(opt, v, 86400, &x);
		a->o.timeout_s = (uint32_t)x;
	} else if (!strcmp(opt, "--connect-attempts")) {
		ret = parse_num(opt, v, 100000, &x);
		a->o.connect_attempts = (uint32_t)x;
	} else if (!strcmp(opt, "--retry-delay-ms")) {
		ret = parse_num(opt, v, 600000, &x);
		a->o.retry_delay_ms = (uint32_t)x;
	} else if (!strcmp(opt, "--ack-timeout-ms")) {
		ret = parse_num(opt, v, 3600000, &a->o.ack_timeout_ms);
	} else if (!strcmp(opt, "--faults-node")) {
		ret = parse_num(opt, v, TV_TB_MAX_NODES - 1, &x);
		a->o.faults_node = (int64_t)x;
	} else if (!strcmp(opt, "--faults")) {
		a->o.faults = v;
		ret = v ? 0 : -EINVAL;
	} else if (!strcmp(opt, "--record")) {
		a->o.record_path = v;
		ret = v ? 0 : -EINVAL;
	} else if (!strcmp(opt, "--mpi-port")) {
		ret = parse_num(opt, v, 65535 - TV_TB_MAX_NODES, &a->mpi_port);
	} else if (!strcmp(opt, "--inject-disconnect")) {
		ret = parse_num(opt, v, UINT64_MAX, &a->o.inject_disconnect_step);
	} else {
		fprintf(stderr, "tensorverbs serve: unknown option %s\n", opt);
		return -EINVAL;
	}
	if (ret)
		fprintf(stderr, "tensorverbs serve: bad value for %s: %s\n",
			opt, v ? v : "(missing)");
	return ret;
}

static int parse_args(struct serve_args *a, int argc, char **argv)
{
	char text[600];

	bool mpi = a->mpi;

	memset(a, 0, sizeof(*a));
	a->mpi = mpi;
	a->mpi_port = 7950;
	tv_tb_serve_opts_init(&a->o);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(serve_usage, stdout);
			return 1;
		}
		if (argv[i][0] != '-') {
			if (a->o.scenario_path)
				return -EINVAL;
			a->o.scenario_path = argv[i];
		} else if (parse_opt(a, argc, argv, &i)) {
			return -EINVAL;
		}
	}
	if (a->mpi && (a->have_node || a->addr_text)) {
		fprintf(stderr, "tensorverbs serve: under mpirun the node is "
			"the rank and the addresses come from MPI: no --node, "
			"--addr or --cluster\n");
		return -EINVAL;
	}
	if (a->mpi)
		return 0;
	if (!a->o.scenario_path || !a->have_node) {
		fprintf(stderr, "tensorverbs serve: need SCENARIO.json and "
			"--node K\n");
		return -EINVAL;
	}
	if (a->addr_text) {
		snprintf(text, sizeof(text), "%u=%s", a->o.node, a->addr_text);
		if (parse_peer(a, text)) {
			fprintf(stderr, "tensorverbs serve: --addr %s: not "
				"ADDR:PORT\n", a->addr_text);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * Under mpirun: node = rank, each rank's address the IPv4 of its RDMA
 * device's RoCE GID (RDMA_DEVICE per rank: mpirun -x) at mpi_port + rank,
 * gathered with MPI: no address lists written by hand.
 */
static int mpi_cluster(struct serve_args *a, uint32_t rank, uint32_t size)
{
	int ret;

	if (size > TV_TB_MAX_NODES)
		return -E2BIG;
	/* Straight into the options: no allocation, which could fail on one
	 * rank alone and leave the others in the exchange. */
	ret = tv_tb_mpi_addrs("tensorverbs serve", (uint16_t)a->mpi_port,
			      a->o.addrs);
	for (uint32_t r = 0; !ret && r < size; r++)
		a->o.have_addr[r] = true;
	a->o.node = rank;
	return ret;
}

static int serve_mpi(struct serve_args *a, uint32_t rank, uint32_t size)
{
	int ret = mpi_cluster(a, rank, size), worst;

	ret = ret ? CLI_EXIT_USAGE : tv_tb_serve(&a->o);
	worst = tv_tb_mpi_worst(ret);
	if (!rank)
		printf("serve: %s on %u MPI ranks: %s (worst exit %d)\n",
		       a->o.scenario_path, size, worst ? "FAIL" : "PASS",
		       worst);
	return worst;
}

int cli_serve(int argc, char **argv, const char *argv0)
{
	struct serve_args *a = calloc(1, sizeof(*a));
	uint32_t rank = 0, size = 1;
	int ret;

	(void)argv0;
	if (!a)
		return CLI_EXIT_FAIL;
	if (tv_tb_mpi_init(&argc, &argv)) {
		free(a);
		return CLI_EXIT_USAGE;
	}
	a->mpi = tv_tb_mpi_world(&rank, &size);
	ret = parse_args(a, argc, argv);
	if (!ret && a->mpi) {
		ret = serve_mpi(a, rank, size);
		free(a);
		tv_tb_mpi_finalize();
		return ret;
	}
	if (ret) {
		if (ret < 0)
			fputs(serve_usage, stderr);
		free(a);
		return ret > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	ret = tv_tb_serve(&a->o);
	free(a);
	return ret;
}
