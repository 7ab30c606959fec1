/*
 * The port-channel workload (MSCCL++'s host-side data path,
 * engine/port/): its ops table, its lines of a run's summary, and its
 * built-in scenarios.
 */
#include <inttypes.h>
#include <stdio.h>

#include "pt.h"
#ifdef TV_PT_HW
#include "pt_hw.h"

static const struct tv_tb_bench benches[] = {
	{ "port", "put bandwidth, signal+wait latency and allreduce between "
	  "two RDMA devices", pt_bench_port_main },
};
#endif

static const char *const keys[] = { "port", "programs", NULL };
/* On real verbs too (lag_ns then is the hardware's own). */
static const char *const hw_keys[] = { "port", "programs", NULL };

/*
 * TV_BREAK: MSCCL++'s real bugs as designs (docs/port.md): the FIFO's
 * empty-slot sentinel (#864), semaphores reused without zeroing (#795),
 * no bound on in-flight work (#415/#808), a flush that blocks the proxy
 * (#802), waits without a deadline (#161/#377), LL flags read by polling
 * the last bytes of a plain write.
 */
static const char *const breakages[] = {
	"fifo-sentinel", "no-sem-reset", "no-flow-control", "blocking-flush",
	"no-wait-timeout", "ll-last-byte", NULL
};

/* Nothing of a port connection recovers (MSCCL++ has no reconnect): a
 * QP error, a lost completion or a crashed node ends its operations with
 * the cause; the catalogue's other may-fail points (node/crash among
 * them) already say so. */
static const char *const unrecoverable[] = {
	"vf/qp/error", NULL
};

static void summary_main(const struct pt_runner *r,
			 const struct tv_tb_run *run, FILE *out)
{
	const struct tv_tb_result *res = tv_tb_run_result(run);
	const struct pt_scenario *sc = r->sc;
	const struct tv_port_proxy_stats *p = &r->proxy_total;
	const struct tv_port_conn_stats *c = &r->conn_total;
	size_t done = 0, failed = 0;
	char b[32];

	for (size_t i = 0; i < sc->ntasks; i++) {
		done += r->tasks[i].state == PT_TASK_DONE;
		failed += r->tasks[i].state == PT_TASK_FAILED;
	}
	tv_tb_fmt_bytes((double)res->bytes, b, sizeof(b));
	fprintf(out, "world       %u nodes, %zu programs, %zu tasks, %zu "
		"connections, signals by %s\n", sc->nodes, sc->nprogs,
		sc->ntasks, sc->npairs,
		c->imm_signals ? "write-with-immediate" : "fetch-and-add");
	fprintf(out, "operations  %" PRIu64 " of %" PRIu64 " done, tasks %zu "
		"done, %zu failed; %s put\n", res->ops_ok, res->ops, done,
		failed, b);
	fprintf(out, "proxy       %" PRIu64 " triggers (%" PRIu64 " data, %"
		PRIu64 " flag, %" PRIu64 " sync), %" PRIu64 " posts, %" PRIu64
		" deferred, at most %" PRIu64 " in flight (CQ %u)\n",
		p->triggers, p->data, p->flags, p->syncs, c->posted,
		c->deferred, c->max_in_flight, sc->cq_size);
	fprintf(out, "checked     %" PRIu64 " waits, %" PRIu64 " puts against "
		"their sources (%" PRIu64 " overtaken), %" PRIu64 " packet "
		"polls, %" PRIu64 " FIFO stores delayed\n", r->waits,
		r->checked_puts, r->overtaken, r->polls, r->deferred_stores);
}

static void pt_summary(const struct tv_tb_run *run, const void *st,
		       enum tv_tb_summary_part part, FILE *out)
{
	const struct pt_runner *r = st;
	const struct tv_tb_result *res = tv_tb_run_result(run);
	size_t cancelled = 0;

	for (size_t i = 0; i < r->sc->ntasks; i++)
		cancelled += r->tasks[i].state == PT_TASK_CANCELLED;
	if (part == TV_TB_SUMMARY_MAIN) {
		summary_main(r, run, out);
		return;
	}
	fprintf(out, "recovery    %" PRIu64 " triggers of failed connections "
		"dropped; operations fail with their cause, nothing is "
		"retried (as MSCCL++)\n", r->proxy_total.dropped);
	if (res->crashes)
		fprintf(out, "crashes     %" PRIu64 " crashes, %" PRIu64
			" restarts (%" PRIu64 " failed), %zu tasks cancelled "
			"(their programs are not resumed)\n", res->crashes,
			res->restarts, res->restart_failures, cancelled);
}

static const char pt_demo_scenario[] =
	"{\"name\": \"port-demo\", \"workload\": \"port\", \"nodes\": 3,"
	" \"port\": {\"lag_ns\": {\"min\": 0, \"max\": 300}},"
	" \"programs\": ["
	"  {\"kind\": \"ping_pong\", \"nodes\": [0, 1], \"bytes\": 4096,"
	"   \"iters\": 8, \"flush_every\": 4},"
	"  {\"kind\": \"allreduce\", \"count\": 3072},"
	"  {\"kind\": \"packet_ping_pong\", \"nodes\": [2, 0], \"bytes\": 64,"
	"   \"iters\": 8}]}";

const struct tv_tb_workload_ops tv_port_workload = {
	.name = "port",
	.about = "one-sided port channels: MSCCL++'s proxy FIFO, semaphores "
		 "and puts",
	.unit = "operations",
	.last_op = "operation",
	.keys = keys,
	.hw_keys = hw_keys,
	.parse = pt_scenario_parse,
	.scenario_free = pt_scenario_free,
	.setup = pt_setup,
	.progress = pt_progress,
	.sim_event = pt_sim_event,
	.node_crash = pt_node_crash,
	.node_restart = pt_node_restart,
	.check = pt_check,
	.check_end = pt_check_end,
	.teardown = pt_teardown,
	.state_free = pt_state_free,
	.summary = pt_summary,
	.unrecoverable_points = unrecoverable,
	.breakages = breakages,
	.generate = pt_generate,
	.edits = pt_edits,
	.nedits = PT_NEDITS,
	.describe = pt_describe,
	.event_src = "port",
	.show_parse = pt_show_parse,
	.draw = &pt_draw,
	.demo = pt_demo_scenario,
#ifdef TV_PT_HW
	.benches = benches,
	.nbenches = sizeof(benches) / sizeof(benches[0]),
	.hw = &pt_hw_ops,
#endif
};
