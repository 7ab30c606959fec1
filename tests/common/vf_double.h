/*
 * Internal test header (tests/ only, not part of the library's API): a
 * failing device double.
 *
 * vfd_hook() swaps a device's ops table for a copy whose ops pass through
 * to the real ones, unless the test asked one of them to fail or to lie:
 * the Nth call of an op fails, post_send refuses at a given WR or a WR
 * with a given wr_id, poll_cq fails, finds nothing, gives a completion
 * twice or shows its completions to the test, query_device reports other
 * READ depths, now_ns runs on a clock the test moves.  Every object keeps a
 * pointer to its device, whose ops pointer is swapped: every call of every
 * object of a hooked device goes through here.  One double per process
 * (Check runs each test in a process of its own).
 */
#ifndef TV_TESTS_VF_DOUBLE_H
#define TV_TESTS_VF_DOUBLE_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/vf.h>

/* vfd.bad_at: post_send fails saying nothing of where (*bad_p = NULL) */
#define VFD_BAD_NONE (-1)

struct vf_double {
	/* Each: 0 = pass; n = the nth call from now fails with fail_err
	 * (wait: with -EINTR), then 0 again. */
	struct {
		int query_device, alloc_pd, dealloc_pd, reg_mr, dereg_mr;
		int create_cq, create_qp, modify_qp, qp_endpoint;
		int post_send, post_recv, wait;
	} fail_nth;
	int fail_err; /* -ENOMEM unless the test says otherwise */

	/* post_send, when it fails: 0 = *bad_p is the first WR; n > 0 =
	 * the WRs before WR n are posted for real, *bad_p is WR n;
	 * VFD_BAD_NONE = *bad_p is NULL */
	int bad_at;
	/* post_send: the next list whose first wr_id & fail_wr_mask is
	 * fail_wr_tag fails (*bad_p = it); fail_wr_armed false then */
	bool fail_wr_armed;
	uint64_t fail_wr_mask, fail_wr_tag;

	/* poll_cq, checked in this order */
	int poll_err;                /* != 0: poll_cq fails with this ... */
	struct tv_vf_cq *poll_err_cq; /* ... only on this CQ, if not NULL */
	bool swallow;                /* poll_cq finds nothing */
	/* a completion with this wr_id is given twice (the second time on a
	 * later poll); dup_armed and dup_held false once it was */
	bool dup_armed, dup_held;
	uint64_t dup_wr_id;
	struct tv_vf_wc dup;
	/* if set, sees (and may change) what each real poll_cq returned */
	void (*on_poll)(struct tv_vf_wc *wc, int n);

	/* query_device: what the device says of its READ depths */
	bool tweak_rd;
	uint32_t rd_atom, init_rd_atom;

	bool fake_clock; /* now_ns: ++now instead of the device's clock */
	uint64_t now;

	const struct tv_vf_ops *real; /* the device's own ops */
	struct tv_vf_ops ops;         /* the double's */
};

extern struct vf_double vfd;

/* The device's calls go through the double (the device must not be
 * hooked already). */
void vfd_hook(struct tv_vf_device *dev);
/* ... and straight to the device again. */
void vfd_unhook(struct tv_vf_device *dev);

#endif
