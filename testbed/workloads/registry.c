/*
 * The built-in workloads, in the order listings show them.  The first is
 * what a scenario without a "workload" key runs.  A new protocol adds its
 * ops table here (docs/testbed.md, "Adding a workload").
 */
#include <stddef.h>

#include <tensorverbs/workload.h>

extern const struct tv_tb_workload_ops tv_rendezvous_workload;
extern const struct tv_tb_workload_ops tv_port_workload;
extern const struct tv_tb_workload_ops tv_gather_workload;

const struct tv_tb_workload_ops *const tb_builtin_workloads[] = {
	&tv_rendezvous_workload,
	&tv_port_workload,
	&tv_gather_workload,
	NULL,
};
