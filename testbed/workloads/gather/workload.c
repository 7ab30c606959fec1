/*
 * The gather workload (quiver's RDMA READ feature gather, engine/gather/):
 * its ops table, its lines of a run's summary, its built-in scenario.
 */
#include <inttypes.h>
#include <stdio.h>

#include "gw.h"

#ifdef TV_GW_HW
static const struct tv_tb_bench benches[] = {
	{ "gather", "rows/s of RDMA READ gathers between two devices (or "
	  "the simulator's cost model: --sim)", gw_bench_main },
};
#endif

static const char *const keys[] = { "gather", "batches", NULL };
/* On real verbs too (the "sim" profile is the simulator's alone). */
static const char *const hw_keys[] = { "gather", "batches", NULL };

/*
 * TV_BREAK: quiver's hazards as designs (docs/gather.md): error
 * completions printed and ignored, signaled completions aliased onto one
 * QP (slots never reclaimed on mlx5), max_rd_atomic never negotiated
 * with the responder, and quiver's test check that accepts all-zero rows
 * (with errors ignored: what it would let through).
 */
static const char *const breakages[] = {
	"ignore-errors", "signal-aliasing", "rd-atomic", "accept-zero-rows",
	NULL
};

/* Retries are bounded: a storm of these may fail rows (named). */
static const char *const unrecoverable[] = {
	"vf/qp/error", NULL
};

static void gw_summary(const struct tv_tb_run *run, const void *st,
		       enum tv_tb_summary_part part, FILE *out)
{
	const struct gw_runner *r = st;
	const struct tv_gather_stats *t = &r->total;
	const struct tv_tb_result *res = tv_tb_run_result(run);
	char b[32];

	if (part != TV_TB_SUMMARY_MAIN) {
		fprintf(out, "recovery    %" PRIu64 " error completions, %" PRIu64
			" post lists read again, %" PRIu64 " QPs reconnected, %"
			PRIu64 " rows failed (named)\n", t->error_cqes,
			t->retries, t->reconnects, r->rows_failed);
		return;
	}
	tv_tb_fmt_bytes((double)t->bytes_read, b, sizeof(b));
	fprintf(out, "world       %u nodes, %" PRIu64 " rows of %u bytes (%"
		PRIu64 " replicated), %u QPs per peer, post lists of %u, "
		"window %u\n", r->sc->nodes, r->sc->cfg.rows,
		r->sc->cfg.row_bytes, r->sc->cfg.replicated_rows,
		r->sc->cfg.qps_per_peer, r->sc->cfg.post_list,
		r->sc->cfg.window);
	fprintf(out, "gathers     %" PRIu64 " of %" PRIu64 " ok, %" PRIu64
		" failed; rows %" PRIu64 " remote, %" PRIu64 " local, %"
		PRIu64 " replicated; %s read\n", res->ops_ok, res->ops,
		res->ops_failed, t->rows_remote, t->rows_local,
		t->rows_replicated, b);
	fprintf(out, "verbs       %" PRIu64 " READs in %" PRIu64 " post lists, "
		"send queue at most %" PRIu64 " of %" PRIu64 " slots, staging %"
		PRIu64 " bytes a node\n", t->reads_posted, t->post_lists,
		t->max_sq_used, t->sq_depth,
		r->sc->nodes ? t->staging_bytes / r->sc->nodes : 0);
	fprintf(out, "checked     %" PRIu64 " rows against their owners'",
		r->rows_checked);
	if (r->quiver_check)
		fprintf(out, " (quiver's check: all-zero rows accepted, %" PRIu64
			" of them)", r->zero_rows_seen);
	fputc('\n', out);
}

static const char gw_demo_scenario[] =
	"{\"name\": \"gather-demo\", \"workload\": \"gather\", \"nodes\": 3,"
	" \"gather\": {\"rows\": 6000, \"row_bytes\": 512,"
	"  \"replicated_rows\": 100, \"qps_per_peer\": 4, \"post_list\": 32},"
	" \"batches\": ["
	"  {\"node\": 0, \"dist\": \"uniform\", \"count\": 1024},"
	"  {\"node\": 1, \"dist\": \"zipf\", \"count\": 1024, \"at_ns\": 1000},"
	"  {\"node\": 0, \"dist\": \"sorted\", \"count\": 512, \"dups\": true,"
	"   \"at_ns\": 2000}]}";

const struct tv_tb_workload_ops tv_gather_workload = {
	.name = "gather",
	.about = "RDMA READ feature gather: quiver's many QPs, post lists and "
		 "selective signaling, every row right or named",
	.unit = "gathers",
	.last_op = "gather",
	.keys = keys,
	.hw_keys = hw_keys,
	.parse = gw_scenario_parse,
	.scenario_free = gw_scenario_free,
	.setup = gw_setup,
	.progress = gw_progress,
	.sim_event = gw_sim_event,
	.node_crash = gw_node_crash,
	.node_restart = gw_node_restart,
	.node_lost = gw_node_lost,
	.check = gw_check,
	.teardown = gw_teardown,
	.state_free = gw_state_free,
	.summary = gw_summary,
	.unrecoverable_points = unrecoverable,
	.breakages = breakages,
	.generate = gw_generate,
	.edits = gw_edits,
	.nedits = GW_NEDITS,
	.describe = gw_describe,
	.event_src = "gather",
	.demo = gw_demo_scenario,
#ifdef TV_GW_HW
	.benches = benches,
	.nbenches = sizeof(benches) / sizeof(benches[0]),
	.hw = &gw_hw_ops,
#endif
};
