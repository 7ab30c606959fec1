/*
 * `tensorverbs bench sim`: a benchmark, not a test.  Runs a steady
 * all-to-all workload on the simulator, single-threaded, round after round
 * until the wall-clock budget is spent, and reports simulator events and
 * simulated tensor transfers per wall-clock second.  Every round still goes
 * through the full runner, invariants included, so a fast wrong engine
 * does not produce a figure.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define BENCH_NODES 4
#define BENCH_STEPS 20
#define BENCH_SMALL_REPEAT 8
#define BENCH_SMALL_ELEMS 256     /* 1 KiB floats */
#define BENCH_LARGE_ELEMS 16384   /* 64 KiB floats */

static const char bench_usage[] =
	"usage: tensorverbs bench sim [--seconds S] [--seed N]\n"
	"\n"
	"Simulator throughput: a 4-node all-to-all workload (per step and\n"
	"ordered pair: 8 x 1 KiB and 1 x 64 KiB float tensors, 20 steps per\n"
	"round), rounds repeated until S wall-clock seconds (default 3) have\n"
	"passed.  Reports sim events/s, transfers/s and bytes/s (wall).\n";

static json_t *bench_pair(uint32_t a, uint32_t b, bool send, const char *name,
			  uint64_t elems, uint64_t repeat)
{
	json_t *o;

	if (send)
		o = json_pack("{s:i, s:i, s:s, s:s, s:[I]}", "from", a, "to", b,
			      "name", name, "dtype", "float", "shape",
			      (json_int_t)elems);
	else
		o = json_pack("{s:i, s:i, s:s}", "node", b, "from", a, "name",
			      name);
	if (o && repeat > 1)
		json_object_set_new(o, "repeat", json_integer((json_int_t)repeat));
	return o;
}

static json_t *bench_step(void)
{
	json_t *sends = json_array(), *recvs = json_array();

	for (uint32_t a = 0; a < BENCH_NODES; a++) {
		for (uint32_t b = 0; b < BENCH_NODES; b++) {
			if (a == b)
				continue;
			/* A sender's names are unique within a step. */
			char small[32], large[32];

			snprintf(small, sizeof(small), "small_to%u", b);
			snprintf(large, sizeof(large), "large_to%u", b);
			for (int s = 0; s < 2; s++) {
				json_t *arr = s ? sends : recvs;

				json_array_append_new(arr, bench_pair(a, b, s,
					small, BENCH_SMALL_ELEMS,
					BENCH_SMALL_REPEAT));
				json_array_append_new(arr, bench_pair(a, b, s,
					large, BENCH_LARGE_ELEMS, 1));
			}
		}
	}
	return json_pack("{s:o, s:o}", "sends", sends, "recvs", recvs);
}

static int bench_scenario(struct scenario **sc_p)
{
	json_t *steps = json_array(), *root;
	char err[SC_ERR_MAX];
	int rc;

	for (int i = 0; i < BENCH_STEPS; i++)
		json_array_append_new(steps, bench_step());
	root = json_pack("{s:s, s:i, s:o}", "name", "bench-sim", "nodes",
			 BENCH_NODES, "steps", steps);
	if (!root)
		return -ENOMEM;
	rc = scenario_from_json(root, "bench sim", sc_p, err);
	if (rc)
		fprintf(stderr, "tensorverbs bench: %s\n", err);
	json_decref(root);
	return rc;
}

struct bench_totals {
	uint64_t rounds;
	uint64_t events;
	uint64_t transfers;
	uint64_t bytes;
	uint64_t sim_wall_ns;
	uint64_t virtual_ns;    /* to each round's last recv */
};

static void bench_report(const struct scenario *sc,
			 const struct bench_totals *t, uint64_t wall_ns)
{
	double secs = (double)wall_ns / 1e9;
	double sim_secs = (double)t->sim_wall_ns / 1e9;
	char a[32], b[32], c[32], d[32];

	printf("bench sim: %u nodes, %zu steps, %zu transfers per round\n",
	       sc->nodes, sc->nsteps, sc->nrecvs);
	printf("rounds           %" PRIu64 " in %.2f s wall (%.2f s inside tv_sim_run)\n",
	       t->rounds, secs, sim_secs);
	cli_fmt_rate((double)t->events / secs, a, sizeof(a));
	cli_fmt_rate((double)t->events / sim_secs, b, sizeof(b));
	printf("sim events       %" PRIu64 "  -> %sevents/s (%sevents/s inside the run loop)\n",
	       t->events, a, b);
	cli_fmt_rate((double)t->transfers / secs, a, sizeof(a));
	printf("transfers        %" PRIu64 "  -> %stransfers/s\n", t->transfers, a);
	cli_fmt_bytes((double)t->bytes, c, sizeof(c));
	cli_fmt_bytes((double)t->bytes / secs, d, sizeof(d));
	printf("bytes            %s  -> %s/s\n", c, d);
	cli_fmt_ns((double)t->virtual_ns / (double)t->rounds, a, sizeof(a));
	printf("virtual time     %s per round (to its last recv)\n", a);
}

static int bench_parse(int argc, char **argv, double *secs_p, uint64_t *seed_p)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	if (argc < 2 || strcmp(argv[1], "sim") != 0) {
		if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
			fputs(bench_usage, stdout);
			return 1;
		}
		fputs(bench_usage, stderr);
		return -EINVAL;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'S') {
			*secs_p = strtod(optarg, &end);
			if (*end || *secs_p <= 0 || *secs_p > 3600)
				goto bad;
		} else if (c == 's') {
			if (cli_parse_u64(optarg, seed_p))
				goto bad;
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

int cli_bench(int argc, char **argv, const char *argv0)
{
	struct bench_totals t = { 0 };
	struct scenario *sc;
	double secs = 3;
	uint64_t seed = 1, start;
	int rc = bench_parse(argc, argv, &secs, &seed);

	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (bench_scenario(&sc))
		return CLI_EXIT_USAGE;
	start = runner_wall_ns();
	do {
		struct run_opts opts = { .seed = seed + t.rounds };
		struct failures fails = { 0 };
		struct run_result res = { 0 };

		rc = runner_run(sc, &opts, &fails, &res);
		if (rc || res.failures) {
			failures_print(&fails, stderr);
			fprintf(stderr, "bench round failed; reproduce with: %s bench sim --seed %" PRIu64 "\n",
				argv0, opts.seed);
			failures_free(&fails);
			scenario_free(sc);
			return CLI_EXIT_FAIL;
		}
		t.rounds++;
		t.events += res.sim_events;
		t.transfers += res.recvs_ok;
		t.bytes += res.bytes_received;
		t.sim_wall_ns += res.wall_ns;
		t.virtual_ns += res.last_recv_ns;
	} while ((double)(runner_wall_ns() - start) < secs * 1e9);
	bench_report(sc, &t, runner_wall_ns() - start);
	scenario_free(sc);
	return CLI_EXIT_OK;
}
