/*
 * The invariants every workload gets from the simulator's events
 * (docs/testbed.md): no error completion unless the scenario allows them
 * (or injects faults), no CQ overflow unless one was injected.  Workloads
 * add their own from the same events (their sim_event op) and from their
 * engines' observers.  With --verbose every event is printed here.
 */
#include <inttypes.h>
#include <stdio.h>

#include "run_int.h"

static void print_sim(const struct tv_sim_event *ev)
{
	static const char *const names[] = {
		[TV_SIM_EV_POST_SEND] = "POST_SEND",
		[TV_SIM_EV_POST_RECV] = "POST_RECV",
		[TV_SIM_EV_DELIVER] = "DELIVER", [TV_SIM_EV_RNR] = "RNR",
		[TV_SIM_EV_CQE] = "CQE", [TV_SIM_EV_QP_STATE] = "QP_STATE",
		[TV_SIM_EV_CQ_OVERFLOW] = "CQ_OVERFLOW",
		[TV_SIM_EV_TIMER] = "TIMER", [TV_SIM_EV_USER] = "USER",
	};
	const char *name = (unsigned)ev->kind < TB_ARRAY_SIZE(names) &&
			   names[ev->kind] ? names[ev->kind] : "?";

	printf("[%12" PRIu64 " ns] sim    node %u peer %d %-9s op=%u st=%u",
	       ev->time_ns, ev->node,
	       ev->peer == UINT32_MAX ? -1 : (int)ev->peer, name, ev->opcode,
	       ev->status);
	if (ev->has_imm)
		printf(" imm=0x%x", ev->imm);
	printf(" addr=0x%" PRIx64 " len=%u wr_id=0x%" PRIx64 " qpn=%u rkey=0x%x\n",
	       ev->remote_addr, ev->length, ev->wr_id, ev->qp_num, ev->rkey);
}

void tb_check_sim_event(struct tv_tb_run *r, const struct tv_sim_event *ev)
{
	struct tb_check *c = &r->chk;

	if (r->opts.verbose)
		print_sim(ev);
	if (r->tearing_down)
		return;
	if (ev->kind == TV_SIM_EV_CQE && ev->status != TV_WC_SUCCESS) {
		c->error_cqes++;
		if (!c->allow_errors)
			tv_tb_fail(r, TV_TB_FK_ERROR,
				   "error completion on node %u: %s (opcode %u) at %" PRIu64 " ns",
				   ev->node,
				   tv_vf_wc_status_str((enum tv_vf_wc_status)ev->status),
				   ev->opcode, ev->time_ns);
	} else if (ev->kind == TV_SIM_EV_CQ_OVERFLOW && !c->overflow_fires) {
		/* Engines size their CQs so that they never overflow. */
		tv_tb_fail(r, TV_TB_FK_ERROR,
			   "CQ overflow on node %u at %" PRIu64 " ns", ev->node,
			   ev->time_ns);
	}
}
