/*
 * The tensor-rendezvous workload (TensorFlow's "verbs with 0 copies"
 * transport, engine/rendezvous/): its ops table, and its lines of a run's
 * summary.
 */
#include <inttypes.h>
#include <stdio.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/workload.h>

#include "rv_run.h"
#include "rv_workload.h"
#ifdef TV_RV_HW
#include "rv_hw.h"

static const struct tv_tb_bench benches[] = {
	{ "rxe", "the engine's fetch bandwidth and latency between two RDMA devices",
	  rv_bench_rxe_main },
};
#endif

static const char *const keys[] = {
	"engine", "step_interval_ns", "steps", "expect_stats", NULL
};
/* All of them mean something on real verbs (tensorverbs serve). */
static const char *const hw_keys[] = {
	"engine", "step_interval_ns", "steps", "expect_stats", NULL
};
/* TV_BREAK=no-ack-timeout: the engine ignores its ACK timeout (#11416). */
static const char *const breakages[] = { "no-ack-timeout", NULL };

static void summary_main(const struct runner *r, const struct tv_tb_run *run,
			 FILE *out)
{
	const struct tv_tb_result *res = tv_tb_run_result(run);
	const struct tv_engine_stats *t = &r->total;
	char b[32];

	tv_tb_fmt_bytes((double)res->bytes, b, sizeof(b));
	fprintf(out, "world       %u nodes, %zu steps, %zu sends, %zu recvs\n",
		r->sc->nodes, r->sc->nsteps, r->sc->nsends, r->sc->nrecvs);
	fprintf(out, "transfers   %" PRIu64 " ok, %" PRIu64 " error statuses, %s received\n",
		res->ops_ok, res->ops_failed, b);
	fprintf(out, "messages    TENSOR_REQUEST %" PRIu64 ", META_DATA_UPDATE %" PRIu64
		", TENSOR_RE_REQUEST %" PRIu64 ", ERROR_STATUS %" PRIu64
		", ACKs %" PRIu64 " (%" PRIu64 " on tensor writes)\n",
		t->msgs_sent[2], t->msgs_sent[0], t->msgs_sent[1],
		t->msgs_sent[3], t->acks_sent, t->acks_ridden);
	fprintf(out, "writes      %" PRIu64 " tensor writes (zero-copy %" PRIu64
		", staged %" PRIu64 "), %" PRIu64 " posts inline, proxy copies %"
		PRIu64 ", checksum failures %" PRIu64 "\n",
		t->tensor_writes, t->zero_copy_writes, t->staged_writes,
		t->inline_posts, t->proxy_copies, t->checksum_failures);
	fprintf(out, "checked     %" PRIu64 " tensor writes and %" PRIu64
		" control messages against advertised buffers\n",
		r->chk.checked_writes, r->chk.checked_msgs);
}

static void summary_faults(const struct runner *r, const struct tv_tb_run *run,
			   FILE *out)
{
	const struct tv_tb_result *res = tv_tb_run_result(run);
	const struct tv_engine_stats *t = &r->total;

	fprintf(out, "recovery    %" PRIu64 " ACK timeouts, %" PRIu64
		" recv timeouts, %" PRIu64 " channel failures, %" PRIu64
		" reconnects, %" PRIu64 " retries, %" PRIu64
		" duplicates landed, %" PRIu64 " refused\n",
		t->ack_timeouts, t->recv_timeouts, t->channel_failures,
		t->reconnects, t->retries, r->chk.dup_landed, res->refused);
	if (res->crashes)
		fprintf(out, "crashes     %" PRIu64 " crashes, %" PRIu64
			" restarts (%" PRIu64 " failed), %" PRIu64
			" operations skipped (node down), %" PRIu64
			" receives cancelled\n", res->crashes, res->restarts,
			res->restart_failures, res->skipped_ops,
			r->crash_cancelled);
}

static void rv_summary(const struct tv_tb_run *run, const void *st,
		       enum tv_tb_summary_part part, FILE *out)
{
	const struct runner *r = st;

	if (part == TV_TB_SUMMARY_MAIN)
		summary_main(r, run, out);
	else
		summary_faults(r, run, out);
}

const struct tv_tb_workload_ops tv_rendezvous_workload = {
	.name = "rendezvous",
	.about = "tensor rendezvous: TensorFlow's verbs transport with 0 copies",
	.unit = "transfers",
	.last_op = "recv",
	.keys = keys,
	.hw_keys = hw_keys,
	.parse = rv_scenario_parse,
	.scenario_free = rv_scenario_free,
	.setup = rv_setup,
	.progress = rv_progress,
	.sim_event = rv_sim_event,
	.fault_fired = rv_fault_fired,
	.node_crash = rv_node_crash,
	.node_restart = rv_node_restart,
	.node_lost = rv_node_lost,
	.check = rv_check,
	.check_end = rv_check_end,
	.teardown = rv_teardown,
	.state_free = rv_state_free,
	.summary = rv_summary,
	.breakages = breakages,
	.generate = rv_generate,
	.edits = rv_edits,
	.nedits = RV_NEDITS,
	.describe = rv_describe,
	.event_src = "engine",
	.show_parse = rv_show_parse,
	.draw = &rv_draw,
	.demo = rv_demo_scenario,
	.bench_scenario = rv_bench_scenario,
#ifdef TV_RV_HW
	.benches = benches,
	.nbenches = sizeof(benches) / sizeof(benches[0]),
	.hw = &rv_hw_ops,
#endif
};
