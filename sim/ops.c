/*
 * The simulator's ops table: every op of the facade is implemented but
 * wait_fds: real fds have no place in virtual time.
 */
#include "sim_priv.h"

static uint64_t sim_op_now_ns(struct tv_vf_device *dev)
{
	return to_sim_node(dev)->sim->now_ns;
}

static int sim_op_wake_at(struct tv_vf_device *dev, uint64_t deadline_ns)
{
	return sim_wake_at(to_sim_node(dev), deadline_ns);
}

static int sim_op_wait(struct tv_vf_device *dev, uint64_t deadline_ns)
{
	return sim_wait(to_sim_node(dev), deadline_ns);
}

/* A deterministic run cannot sleep on real fds: its loops use wait. */
static int sim_op_wait_fds(struct tv_vf_device *dev, uint64_t deadline_ns,
			   struct pollfd *fds, unsigned int nfds)
{
	return -EOPNOTSUPP;
}

static const struct tv_vf_ops sim_ops = {
	.name = "sim",
	.query_device = sim_op_query_device,
	.query_port = sim_op_query_port,
	.query_gid = sim_op_query_gid,
	.alloc_pd = sim_op_alloc_pd,
	.dealloc_pd = sim_op_dealloc_pd,
	.reg_mr = sim_op_reg_mr,
	.dereg_mr = sim_op_dereg_mr,
	.create_cq = sim_op_create_cq,
	.destroy_cq = sim_op_destroy_cq,
	.poll_cq = sim_op_poll_cq,
	.create_qp = sim_op_create_qp,
	.modify_qp = sim_op_modify_qp,
	.query_qp = sim_op_query_qp,
	.destroy_qp = sim_op_destroy_qp,
	.qp_endpoint = sim_op_qp_endpoint,
	.post_send = sim_op_post_send,
	.post_recv = sim_op_post_recv,
	.now_ns = sim_op_now_ns,
	.wake_at = sim_op_wake_at,
	.wait = sim_op_wait,
	.wait_fds = sim_op_wait_fds,
};

const struct tv_vf_ops *sim_ops_table(void)
{
	return &sim_ops;
}
