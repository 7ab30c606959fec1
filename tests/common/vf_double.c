/*
 * The failing device double (vf_double.h): the device's ops, some of them
 * made to fail or to lie.
 */
#include <errno.h>
#include <stddef.h>

#include <check.h>

#include "common/vf_double.h"

struct vf_double vfd = { .fail_err = -ENOMEM };

/* Counts a countdown down: true when this is the call that fails. */
static bool fire(int *n)
{
	return *n && --*n == 0;
}

static int d_query_device(struct tv_vf_device *d, struct tv_vf_device_attr *a)
{
	int ret;

	if (fire(&vfd.fail_nth.query_device))
		return vfd.fail_err;
	ret = vfd.real->query_device(d, a);
	if (!ret && vfd.tweak_rd) {
		a->max_qp_rd_atom = vfd.rd_atom;
		a->max_qp_init_rd_atom = vfd.init_rd_atom;
	}
	return ret;
}

static int d_alloc_pd(struct tv_vf_device *d, struct tv_vf_pd **pd_p)
{
	return fire(&vfd.fail_nth.alloc_pd) ? vfd.fail_err :
					      vfd.real->alloc_pd(d, pd_p);
}

static int d_dealloc_pd(struct tv_vf_pd *pd)
{
	return fire(&vfd.fail_nth.dealloc_pd) ? vfd.fail_err :
						vfd.real->dealloc_pd(pd);
}

static int d_reg_mr(struct tv_vf_pd *pd, void *addr, size_t len,
		    uint32_t access, struct tv_vf_mr **mr_p)
{
	return fire(&vfd.fail_nth.reg_mr) ?
		       vfd.fail_err :
		       vfd.real->reg_mr(pd, addr, len, access, mr_p);
}

static int d_dereg_mr(struct tv_vf_mr *mr)
{
	return fire(&vfd.fail_nth.dereg_mr) ? vfd.fail_err :
					      vfd.real->dereg_mr(mr);
}

static int d_create_cq(struct tv_vf_device *d, uint32_t cqe,
		       struct tv_vf_cq **cq_p)
{
	return fire(&vfd.fail_nth.create_cq) ?
		       vfd.fail_err :
		       vfd.real->create_cq(d, cqe, cq_p);
}

static int d_create_qp(struct tv_vf_pd *pd,
		       const struct tv_vf_qp_init_attr *init,
		       struct tv_vf_qp **qp_p)
{
	return fire(&vfd.fail_nth.create_qp) ?
		       vfd.fail_err :
		       vfd.real->create_qp(pd, init, qp_p);
}

static int d_modify_qp(struct tv_vf_qp *qp, const struct tv_vf_qp_attr *a,
		       uint32_t mask)
{
	return fire(&vfd.fail_nth.modify_qp) ?
		       vfd.fail_err :
		       vfd.real->modify_qp(qp, a, mask);
}

static int d_qp_endpoint(struct tv_vf_qp *qp, struct tv_vf_qp_endpoint *ep)
{
	return fire(&vfd.fail_nth.qp_endpoint) ?
		       vfd.fail_err :
		       vfd.real->qp_endpoint(qp, ep);
}

/* Refused at WR bad_at (> 0): the ones before it are posted for real. */
static int refuse_part(struct tv_vf_qp *qp, struct tv_vf_send_wr *wr,
		       struct tv_vf_send_wr **bad_p)
{
	struct tv_vf_send_wr *w = wr, *cut;
	int ret;

	for (int i = 1; i < vfd.bad_at && w->next; i++)
		w = w->next;
	cut = w->next;
	w->next = NULL;
	ret = vfd.real->post_send(qp, wr, bad_p);
	w->next = cut;
	ck_assert_int_eq(ret, 0);
	*bad_p = cut;
	return vfd.fail_err;
}

static bool tagged_wr(const struct tv_vf_send_wr *wr)
{
	return vfd.fail_wr_armed &&
	       (wr->wr_id & vfd.fail_wr_mask) == vfd.fail_wr_tag;
}

static int d_post_send(struct tv_vf_qp *qp, struct tv_vf_send_wr *wr,
		       struct tv_vf_send_wr **bad_p)
{
	if (!fire(&vfd.fail_nth.post_send) && !tagged_wr(wr))
		return vfd.real->post_send(qp, wr, bad_p);
	vfd.fail_wr_armed = false;
	if (vfd.bad_at > 0)
		return refuse_part(qp, wr, bad_p);
	*bad_p = vfd.bad_at == VFD_BAD_NONE ? NULL : wr;
	return vfd.fail_err;
}

static int d_post_recv(struct tv_vf_qp *qp, struct tv_vf_recv_wr *wr,
		       struct tv_vf_recv_wr **bad_p)
{
	if (fire(&vfd.fail_nth.post_recv)) {
		*bad_p = wr;
		return vfd.fail_err;
	}
	return vfd.real->post_recv(qp, wr, bad_p);
}

/* A completion with dup_wr_id is kept, to be given again later. */
static void keep_dup(const struct tv_vf_wc *wc, int n)
{
	for (int i = 0; vfd.dup_armed && i < n; i++)
		if (wc[i].wr_id == vfd.dup_wr_id) {
			vfd.dup = wc[i];
			vfd.dup_armed = false;
			vfd.dup_held = true;
		}
}

static int d_poll_cq(struct tv_vf_cq *cq, int n, struct tv_vf_wc *wc)
{
	int r;

	if (vfd.poll_err && (!vfd.poll_err_cq || cq == vfd.poll_err_cq))
		return vfd.poll_err;
	if (vfd.swallow)
		return 0;
	if (vfd.dup_held && n > 0) {
		wc[0] = vfd.dup;
		vfd.dup_held = false;
		return 1;
	}
	r = vfd.real->poll_cq(cq, n, wc);
	keep_dup(wc, r);
	if (vfd.on_poll)
		vfd.on_poll(wc, r);
	return r;
}

static uint64_t d_now_ns(struct tv_vf_device *d)
{
	return vfd.fake_clock ? ++vfd.now : vfd.real->now_ns(d);
}

static int d_wait(struct tv_vf_device *d, uint64_t deadline_ns)
{
	return fire(&vfd.fail_nth.wait) ? -EINTR :
					  vfd.real->wait(d, deadline_ns);
}

static void make_ops(const struct tv_vf_ops *real)
{
	vfd.real = real;
	vfd.ops = *real;
	vfd.ops.query_device = d_query_device;
	vfd.ops.alloc_pd = d_alloc_pd;
	vfd.ops.dealloc_pd = d_dealloc_pd;
	vfd.ops.reg_mr = d_reg_mr;
	vfd.ops.dereg_mr = d_dereg_mr;
	vfd.ops.create_cq = d_create_cq;
	vfd.ops.create_qp = d_create_qp;
	vfd.ops.modify_qp = d_modify_qp;
	vfd.ops.qp_endpoint = d_qp_endpoint;
	vfd.ops.post_send = d_post_send;
	vfd.ops.post_recv = d_post_recv;
	vfd.ops.poll_cq = d_poll_cq;
	vfd.ops.now_ns = d_now_ns;
	vfd.ops.wait = d_wait;
}

void vfd_hook(struct tv_vf_device *dev)
{
	if (!vfd.real)
		make_ops(dev->ops);
	ck_assert_ptr_eq(dev->ops, vfd.real);
	dev->ops = &vfd.ops;
}

void vfd_unhook(struct tv_vf_device *dev)
{
	dev->ops = vfd.real;
}
