/*
 * A program that tests with the testbed (docs/testbed.md): it loads a
 * scenario, runs it on the simulator with a seed, adds an invariant of its
 * own, and looks at the result and the failures.
 *
 *   testbed_example SCENARIO.json [MAX_WRITE_BYTES] [SEED]
 *
 * The invariant: no RDMA write delivered carries more than MAX_WRITE_BYTES
 * (default: 1 GiB, i.e. never violated by the example scenarios).  Exit 0
 * when every invariant held, 1 when one failed, 2 for bad input.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <tensorverbs/testbed.h>

struct max_write {
	uint64_t limit_bytes;
	uint64_t largest_bytes;
	uint64_t writes;
};

/* Every simulator event of the run, after the testbed's own checks. */
static void check_write(void *ctx, struct tv_tb_run *run,
			const struct tv_sim_event *ev)
{
	struct max_write *m = ctx;

	if (ev->kind != TV_SIM_EV_DELIVER || ev->status != TV_WC_SUCCESS)
		return;
	m->writes++;
	if (ev->length > m->largest_bytes)
		m->largest_bytes = ev->length;
	if (ev->length > m->limit_bytes)
		tv_tb_fail(run, TV_TB_FK_WRITE,
			   "max-write: node %u got a %u-byte write from node %u at %" PRIu64 " ns, above the limit of %" PRIu64 " bytes",
			   ev->node, ev->length, ev->peer, ev->time_ns,
			   m->limit_bytes);
}

/* Once the world went quiet: something to say about the whole run. */
static void at_end(void *ctx, struct tv_tb_run *run)
{
	struct max_write *m = ctx;

	if (m->writes == 0)
		tv_tb_fail(run, TV_TB_FK_EXPECT,
			   "max-write: the run delivered no write at all");
}

int main(int argc, char **argv)
{
	struct max_write m = { .limit_bytes = 1ull << 30 };
	const struct tv_tb_invariant inv = {
		.name = "max-write", .ctx = &m,
		.sim_event = check_write, .at_end = at_end,
	};
	struct tv_tb_scenario *sc;
	struct tv_tb_run_opts opts;
	struct tv_tb_run *run;
	const struct tv_tb_result *res;
	char err[TV_TB_ERR_MAX];
	int rc;

	if (argc < 2 || argc > 4 ||
	    (argc > 2 && tv_tb_parse_u64(argv[2], &m.limit_bytes))) {
		fprintf(stderr, "usage: %s SCENARIO.json [MAX_WRITE_BYTES] [SEED]\n",
			argv[0]);
		return 2;
	}
	if (tv_tb_scenario_load_file(argv[1], &sc, err)) {
		fprintf(stderr, "invalid scenario %s: %s\n", argv[1], err);
		return 2;
	}
	tv_tb_run_opts_init(&opts, sc);
	if (argc > 3 && tv_tb_parse_u64(argv[3], &opts.seed)) {
		fprintf(stderr, "bad seed '%s'\n", argv[3]);
		tv_tb_scenario_free(sc);
		return 2;
	}
	opts.invariants = &inv;
	opts.ninvariants = 1;
	rc = tv_tb_run(sc, &opts, &run);
	if (rc) {
		fprintf(stderr, "the run could not be made: %d\n", rc);
		tv_tb_scenario_free(sc);
		return 2;
	}
	res = tv_tb_run_result(run);
	printf("%s (workload %s), seed %" PRIu64 ": %" PRIu64 " of %" PRIu64
	       " operations ok, %" PRIu64 " writes, the largest %" PRIu64
	       " bytes, event hash 0x%016" PRIx64 "\n",
	       tv_tb_scenario_name(sc),
	       tv_tb_workload_name(tv_tb_scenario_workload(sc)),
	       res->seed, res->ops_ok, res->ops, m.writes, m.largest_bytes,
	       res->event_hash);
	tv_tb_failures_print(tv_tb_run_failures(run), stdout);
	printf("result: %s\n", res->failures ? "FAIL" : "PASS");
	rc = res->failures ? 1 : 0;
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
	return rc;
}
