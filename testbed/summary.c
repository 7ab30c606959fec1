/*
 * The summary of a run (`tensorverbs run` prints it): the scenario and its
 * seed, the workload's own lines, the faults that fired, the virtual time
 * and the simulator's speed.
 */
#include <inttypes.h>
#include <stdio.h>

#include "run_int.h"

static void print_faults(const struct tv_tb_run *run, FILE *out)
{
	const struct tv_tb_result *res = &run->res;
	const struct tv_flt_point_info *pts;
	size_t n, shown = 0;

	pts = tv_flt_points(&n);
	fprintf(out, "faults      %" PRIu64 " fired", res->fault_fires);
	for (size_t i = 0; i < n && i < TV_TB_MAX_POINTS; i++)
		if (res->point_fires[i])
			fprintf(out, "%s %s x%" PRIu64, shown++ ? "," : ":",
				pts[i].name, res->point_fires[i]);
	fprintf(out, "\n");
	if (res->corrupt_fires || res->corrupt_undetected)
		fprintf(out, "corruption  %" PRIu64 " injected, %" PRIu64
			" detected (checksum or decoder), %" PRIu64
			" undetected: delivered as ok with flipped bytes "
			"(validation %s)\n", res->corrupt_fires,
			res->corrupt_detected, res->corrupt_undetected,
			res->validated ? "on" : "off");
	/* A set-up that failed before making its state has nothing to add. */
	if (run->ops->summary) {
		if (run->wl)
			run->ops->summary(run, run->wl, TV_TB_SUMMARY_FAULTS,
					  out);
		return;
	}
	if (res->crashes)
		fprintf(out, "crashes     %" PRIu64 " crashes, %" PRIu64
			" restarts (%" PRIu64 " failed), %" PRIu64
			" operations skipped (node down)\n", res->crashes,
			res->restarts, res->restart_failures, res->skipped_ops);
}

/*
 * Two times: when the workload's last operation ended, and when the world
 * went quiet.  The clock runs on to the last event queued, often a timer
 * armed long before (an ACK timeout its ACK made moot still fires, into an
 * idle engine), so the second alone said "1.000 s" of the 2 ms demo.
 */
static void print_time(const struct tv_tb_run *run, FILE *out)
{
	const struct tv_tb_result *res = &run->res;
	char v[32], end[32];

	tv_tb_fmt_ns((double)res->last_op_ns, v, sizeof(v));
	tv_tb_fmt_ns((double)res->virtual_ns, end, sizeof(end));
	if (res->last_op_ns && res->last_op_ns < res->virtual_ns)
		fprintf(out, "time        %s virtual to the last %s; quiet at %s\n",
			v, run->ops->last_op ? run->ops->last_op : "operation",
			end);
	else
		fprintf(out, "time        %s virtual\n", end);
}

void tv_tb_run_print_summary(const struct tv_tb_run *run, FILE *out)
{
	const struct tv_tb_result *res = &run->res;
	char w[32], rate[32];

	tv_tb_fmt_ns((double)res->wall_ns, w, sizeof(w));
	tv_tb_fmt_rate(res->wall_ns ? (double)res->sim_events * 1e9 /
		       (double)res->wall_ns : 0, rate, sizeof(rate));
	fprintf(out, "scenario    %s (%s)\n", run->sc->name, run->sc->origin);
	fprintf(out, "seed        %" PRIu64 "\n", res->seed);
	if (run->ops->summary && run->wl)
		run->ops->summary(run, run->wl, TV_TB_SUMMARY_MAIN, out);
	if (tv_tb_scenario_has_faults(run->sc))
		print_faults(run, out);
	print_time(run, out);
	fprintf(out, "events      %" PRIu64 " sim events in %s wall (%sevents/s)\n",
		res->sim_events, w, rate);
}
