/*
 * `tensorverbs bench sim`: a benchmark, not a test.  Runs a workload's
 * steady benchmark scenario (rendezvous: 4 nodes all to all) on the
 * simulator, single-threaded, round after round until the wall-clock
 * budget is spent, and reports simulator events and the workload's
 * operations per wall-clock second.  Every round still goes through the
 * full runner, invariants included, so a fast wrong engine does not
 * produce a figure.  `bench NAME` runs a workload's own benchmark (bench
 * rxe: the rendezvous engine on real verbs).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tensorverbs/workload.h>

#include "cli.h"

static const char bench_usage[] =
	"usage: tensorverbs bench sim [--seconds S] [--seed N] [--workload W]\n"
	"       tensorverbs bench NAME ...   (a workload's benchmark: rxe)\n"
	"\n"
	"Simulator throughput: a workload's benchmark scenario (rendezvous: a\n"
	"4-node all-to-all workload, per step and ordered pair 8 x 1 KiB and\n"
	"1 x 64 KiB float tensors, 20 steps per round), rounds repeated until\n"
	"S wall-clock seconds (default 3) have passed.  Reports sim events/s,\n"
	"operations/s and bytes/s (wall).\n";

struct bench_totals {
	uint64_t rounds;
	uint64_t events;
	uint64_t ops;
	uint64_t bytes;
	uint64_t sim_wall_ns;
	uint64_t virtual_ns;    /* to each round's last operation */
};

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void bench_report(const struct tv_tb_scenario *sc,
			 const struct bench_totals *t, uint64_t wall)
{
	const char *unit = tv_tb_scenario_workload(sc)->unit;
	double secs = (double)wall / 1e9;
	double sim_secs = (double)t->sim_wall_ns / 1e9;
	char a[32], b[32], c[32], d[32];

	printf("bench sim: %s, %u nodes, %" PRIu64 " %s per round\n",
	       tv_tb_scenario_workload(sc)->name, tv_tb_scenario_nodes(sc),
	       tv_tb_scenario_ops(sc), unit);
	printf("rounds           %" PRIu64 " in %.2f s wall (%.2f s inside tv_sim_run)\n",
	       t->rounds, secs, sim_secs);
	tv_tb_fmt_rate((double)t->events / secs, a, sizeof(a));
	tv_tb_fmt_rate((double)t->events / sim_secs, b, sizeof(b));
	printf("sim events       %" PRIu64 "  -> %sevents/s (%sevents/s inside the run loop)\n",
	       t->events, a, b);
	tv_tb_fmt_rate((double)t->ops / secs, a, sizeof(a));
	printf("%-16s %" PRIu64 "  -> %s%s/s\n", unit, t->ops, a, unit);
	tv_tb_fmt_bytes((double)t->bytes, c, sizeof(c));
	tv_tb_fmt_bytes((double)t->bytes / secs, d, sizeof(d));
	printf("bytes            %s  -> %s/s\n", c, d);
	tv_tb_fmt_ns((double)t->virtual_ns / (double)t->rounds, a, sizeof(a));
	printf("virtual time     %s per round (to its last %s)\n", a,
	       tv_tb_scenario_workload(sc)->last_op);
}

static int bench_parse(int argc, char **argv, double *secs_p, uint64_t *seed_p,
		       const char **workload_p)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 's' },
		{ "workload", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	optind = 2;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'S') {
			*secs_p = strtod(optarg, &end);
			if (*end || *secs_p <= 0 || *secs_p > 3600)
				goto bad;
		} else if (c == 's') {
			if (cli_parse_u64(optarg, seed_p))
				goto bad;
		} else if (c == 'W') {
			*workload_p = optarg;
		} else if (c == 'h') {
			fputs(bench_usage, stdout);
			return 1;
		} else {
			goto bad;
		}
	}
	if (optind == argc)
		return 0;
bad:
	fputs(bench_usage, stderr);
	return -EINVAL;
}

static int bench_scenario(const char *workload, struct tv_tb_scenario **sc_p)
{
	const struct tv_tb_workload_ops *w = workload ?
		tv_tb_workload_find(workload) : tv_tb_workload_default();
	char err[TV_TB_ERR_MAX];
	json_t *root;
	int rc;

	if (!w || !w->bench_scenario) {
		fprintf(stderr, "tensorverbs bench: no simulator benchmark for workload '%s'\n",
			workload);
		return -EINVAL;
	}
	rc = w->bench_scenario(&root);
	if (rc)
		return rc;
	if (!json_object_get(root, "workload"))
		json_object_set_new(root, "workload", json_string(w->name));
	rc = tv_tb_scenario_from_json(root, "bench sim", sc_p, err);
	if (rc)
		fprintf(stderr, "tensorverbs bench: %s\n", err);
	json_decref(root);
	return rc;
}

static int bench_round(const struct tv_tb_scenario *sc, uint64_t seed,
		       struct bench_totals *t, const char *argv0)
{
	struct tv_tb_run_opts opts = { .seed = seed };
	const struct tv_tb_result *res;
	struct tv_tb_run *run;
	int rc = tv_tb_run(sc, &opts, &run);

	if (!rc && tv_tb_run_result(run)->failures)
		tv_tb_failures_print(tv_tb_run_failures(run), stderr);
	if (rc || tv_tb_run_result(run)->failures) {
		fprintf(stderr, "bench round failed; reproduce with: %s bench sim --seed %" PRIu64 "\n",
			argv0, seed);
		tv_tb_run_free(run);
		return -EIO;
	}
	res = tv_tb_run_result(run);
	t->rounds++;
	t->events += res->sim_events;
	t->ops += res->ops_ok;
	t->bytes += res->bytes;
	t->sim_wall_ns += res->wall_ns;
	t->virtual_ns += res->last_op_ns;
	tv_tb_run_free(run);
	return 0;
}

/* `bench NAME` for a workload's own benchmark: NULL if none has it. */
static const struct tv_tb_bench *find_bench(const char *name)
{
	const struct tv_tb_workload_ops *const *w;
	size_t n;

	w = tv_tb_workloads(&n);
	for (size_t i = 0; i < n; i++)
		for (size_t b = 0; b < w[i]->nbenches; b++)
			if (!strcmp(w[i]->benches[b].name, name))
				return &w[i]->benches[b];
	return NULL;
}

/*
 * Under mpirun a workload's benchmark runs a node per rank (it asks
 * tv_tb_mpi_bench_pair()); the ranks agree on the worst exit status.
 */
static int workload_bench(const struct tv_tb_bench *wb, int argc,
			  char **argv, const char *argv0)
{
	uint32_t rank, size;
	int rc;

	if (tv_tb_mpi_init(&argc, &argv))
		return CLI_EXIT_USAGE;
	rc = wb->main(argc - 1, argv + 1, argv0);
	if (tv_tb_mpi_world(&rank, &size))
		rc = tv_tb_mpi_worst(rc);
	tv_tb_mpi_finalize();
	return rc;
}

int cli_bench(int argc, char **argv, const char *argv0)
{
	struct bench_totals t = { 0 };
	struct tv_tb_scenario *sc;
	const struct tv_tb_bench *wb;
	const char *workload = NULL;
	double secs = 3;
	uint64_t seed = 1, start;
	int rc;

	if (argc >= 2 && strcmp(argv[1], "sim") && (wb = find_bench(argv[1])))
		return workload_bench(wb, argc, argv, argv0);
	if (argc < 2 || strcmp(argv[1], "sim")) {
		bool help = argc >= 2 && (!strcmp(argv[1], "--help") ||
					  !strcmp(argv[1], "-h"));

		fputs(bench_usage, help ? stdout : stderr);
		return help ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	rc = bench_parse(argc, argv, &secs, &seed, &workload);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (bench_scenario(workload, &sc))
		return CLI_EXIT_USAGE;
	start = wall_ns();
	do {
		if (bench_round(sc, seed + t.rounds, &t, argv0)) {
			tv_tb_scenario_free(sc);
			return CLI_EXIT_FAIL;
		}
	} while ((double)(wall_ns() - start) < secs * 1e9);
	bench_report(sc, &t, wall_ns() - start);
	tv_tb_scenario_free(sc);
	return CLI_EXIT_OK;
}
