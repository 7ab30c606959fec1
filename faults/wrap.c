/*
 * The fault-wrapping facade (libfabric's hook provider, SQLite's test VFS):
 * every object forwards to the inner device's, with the vf/ points in
 * between, so the same plan runs on the simulator and on real verbs.
 *
 * A "lost" write is still posted, as a zero-length RDMA_WRITE without
 * immediate to the same remote buffer: it completes in order like the
 * original would have, and the peer sees nothing.  RC never loses a write
 * silently; these points stand for the bugs and races that did (TensorFlow
 * #11416: an ACK that never arrived).
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <fiu.h>
#include <fiu-local.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/faults.h>

#include "flt_priv.h"
#include "wire.h" /* the protocol's immediates: ACK, message, tensor write */

/* The wrapper's points: each device counts its own hits of each. */
enum flt_pt {
	PT_REG_MR_FAIL,
	PT_CQ_DELAY,
	PT_CQ_REORDER,
	PT_MSG_DROP_MDU,
	PT_MSG_DROP_RE_REQUEST,
	PT_MSG_DROP_REQUEST,
	PT_MSG_DROP_ERROR,
	PT_ACK_DROP,
	PT_WRITE_DROP,
	PT_WRITE_DUP,
	PT_MSG_CORRUPT,
	PT_WRITE_CORRUPT,
	PT_QP_ERROR,
	PT_RECV_DROP,
	PT_COUNT
};

static const char *const pt_names[PT_COUNT] = {
	[PT_REG_MR_FAIL] = "vf/reg_mr/fail",
	[PT_CQ_DELAY] = "vf/cq/delay",
	[PT_CQ_REORDER] = "vf/cq/reorder",
	/* In the order of the message types (byte 3 of the header). */
	[PT_MSG_DROP_MDU] = "vf/msg/drop/META_DATA_UPDATE",
	[PT_MSG_DROP_RE_REQUEST] = "vf/msg/drop/TENSOR_RE_REQUEST",
	[PT_MSG_DROP_REQUEST] = "vf/msg/drop/TENSOR_REQUEST",
	[PT_MSG_DROP_ERROR] = "vf/msg/drop/ERROR_STATUS",
	[PT_ACK_DROP] = "vf/ack/drop",
	[PT_WRITE_DROP] = "vf/write/drop",
	[PT_WRITE_DUP] = "vf/write/dup",
	[PT_MSG_CORRUPT] = "vf/msg/corrupt",
	[PT_WRITE_CORRUPT] = "vf/write/corrupt",
	[PT_QP_ERROR] = "vf/qp/error",
	[PT_RECV_DROP] = "vf/recv/drop",
};

struct flt_qpnum {
	uint32_t qp_num;
	uint32_t idx;
};

struct flt_dev {
	struct tv_vf_device base;
	struct tv_vf_device *inner;
	struct tv_flt *flt;
	struct tv_flt_tap tap;     /* tap.event NULL: untapped */
	uint32_t ncqs, nqps;       /* made so far: the next index */
	struct flt_qpnum *qpnums;  /* a completion's qp_num to its index */
	size_t nqpnums;
	uint32_t node;             /* tv_flt_wrap_set_node(), or NONE */
	/*
	 * Hits of each point on this device.  Relaxed: a counter, read by
	 * nobody else; the port workload's proxy thread posts and polls
	 * while the main thread may post on the same device.
	 */
	_Atomic uint64_t hits[PT_COUNT];
};

struct flt_pd {
	struct tv_vf_pd base;
	struct tv_vf_pd *inner;
};

struct flt_mr {
	struct tv_vf_mr base;
	struct tv_vf_mr *inner;
};

struct flt_cq {
	struct tv_vf_cq base;
	struct tv_vf_cq *inner;
	uint32_t idx;
};

/*
 * A corrupted write goes from a copy of its bytes with bits flipped (the
 * sender's buffer stays intact: the damage is in flight), registered on
 * the inner PD.  The copy must outlive the WR; it lives until the QP goes.
 */
struct flt_bounce {
	struct flt_bounce *next;
	uint8_t *buf;
	struct tv_vf_mr *mr;
};

struct flt_qp {
	struct tv_vf_qp base;
	struct tv_vf_qp *inner;
	struct flt_bounce *bounces;
	uint32_t idx;
};

static const struct tv_vf_ops flt_ops;

#define to_dev(d) TV_CONTAINER_OF(d, struct flt_dev, base)
#define to_pd(p) TV_CONTAINER_OF(p, struct flt_pd, base)
#define to_mr(m) TV_CONTAINER_OF(m, struct flt_mr, base)
#define to_cq(c) TV_CONTAINER_OF(c, struct flt_cq, base)
#define to_qp(q) TV_CONTAINER_OF(q, struct flt_qp, base)

static struct tv_vf_device *inner_dev(struct tv_vf_device *dev)
{
	return to_dev(dev)->inner;
}

/*
 * One hit of a point on dev: does it fire?  The injector's rules decide
 * through libfiu (fiu_external), or libfiu alone after fiu-ctrl enabled
 * the point; the site tells the injector this device's node and hit
 * number, and a firing it did not decide is reported all the same.
 */
static bool flt_point(struct tv_vf_device *dev, enum flt_pt pt)
{
	struct flt_dev *d = to_dev(dev);
	struct tv__flt_site site = {
		.node = d->node,
		.hit = atomic_fetch_add_explicit(&d->hits[pt], 1,
						 memory_order_relaxed) + 1,
	};
	bool fire;

	if (!tv__fiu_live)
		return false;
	tv__flt_site = &site;
	fire = fiu_fail(pt_names[pt]) != 0;
	if (fire && !site.decided)
		tv__flt_external(d->flt, pt_names[pt]);
	tv__flt_site = NULL;
	return fire;
}

/* fiu_do_on(), counted per device (TV_FLT_ARG reads the firing's arg). */
#define FLT_ON(dev, pt, action)            \
	do {                               \
		if (flt_point((dev), (pt))) { \
			action;            \
		}                          \
	} while (0)

/* ---- taps ----------------------------------------------------------------- */

static bool tapped(struct tv_vf_device *dev)
{
	return to_dev(dev)->tap.event != NULL;
}

static void tap_emit(struct tv_vf_device *dev, struct tv_flt_tap_event *ev)
{
	struct flt_dev *d = to_dev(dev);

	d->tap.event(d->tap.ctx, ev);
}

static void tap_init(struct tv_flt_tap_event *ev, enum tv_flt_tap_kind kind,
		     uint32_t qp)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->qp = qp;
	ev->cq = TV_FLT_TAP_NONE;
}

static uint32_t qp_index(const struct flt_dev *d, uint32_t qp_num)
{
	for (size_t i = d->nqpnums; i-- > 0;)
		if (d->qpnums[i].qp_num == qp_num)
			return d->qpnums[i].idx;
	return TV_FLT_TAP_NONE;
}

/* A new QP's number, newest first: a reused number maps to the new QP. */
static int qp_number_add(struct flt_dev *d, uint32_t qp_num, uint32_t idx)
{
	struct flt_qpnum *n = realloc(d->qpnums,
				      (d->nqpnums + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	n[d->nqpnums].qp_num = qp_num;
	n[d->nqpnums].idx = idx;
	d->qpnums = n;
	d->nqpnums++;
	return 0;
}

static void tap_polled(struct flt_cq *cq, const struct tv_vf_wc *wc, int n)
{
	struct flt_dev *d = to_dev(cq->base.dev);
	struct tv_flt_tap_event ev;

	for (int i = 0; i < n; i++) {
		tap_init(&ev, TV_FLT_TAP_POLL, qp_index(d, wc[i].qp_num));
		ev.cq = cq->idx;
		ev.opcode = wc[i].opcode;
		ev.status = wc[i].status;
		ev.len = wc[i].byte_len;
		ev.has_imm = (wc[i].wc_flags & TV_WC_WITH_IMM) != 0;
		ev.imm = ev.has_imm ? wc[i].imm_data : 0;
		ev.flags = wc[i].wc_flags;
		ev.wr_id = wc[i].wr_id;
		d->tap.event(d->tap.ctx, &ev);
	}
}

static void tap_posted(struct flt_qp *qp, const struct tv_vf_send_wr *wr)
{
	struct tv_flt_tap_event ev;

	tap_init(&ev, TV_FLT_TAP_POST_SEND, qp->idx);
	ev.opcode = wr->opcode;
	for (int i = 0; i < wr->num_sge; i++)
		ev.len += wr->sg_list[i].length;
	ev.has_imm = wr->opcode == TV_WR_RDMA_WRITE_WITH_IMM ||
		     wr->opcode == TV_WR_SEND_WITH_IMM;
	ev.imm = ev.has_imm ? wr->imm_data : 0;
	ev.flags = wr->send_flags;
	ev.wr_id = wr->wr_id;
	tap_emit(qp->base.dev, &ev);
}

uint32_t tv_flt_tap_qp_index(struct tv_vf_device *dev, uint32_t qp_num)
{
	if (!dev || dev->ops != &flt_ops)
		return TV_FLT_TAP_NONE;
	return qp_index(to_dev(dev), qp_num);
}

int tv_flt_set_tap(struct tv_vf_device *dev, const struct tv_flt_tap *tap)
{
	if (!dev || dev->ops != &flt_ops)
		return -EINVAL;
	if (tap && !tap->event)
		return -EINVAL;
	if (tap)
		to_dev(dev)->tap = *tap;
	else
		memset(&to_dev(dev)->tap, 0, sizeof(to_dev(dev)->tap));
	return 0;
}

static int w_query_device(struct tv_vf_device *dev,
			  struct tv_vf_device_attr *attr_p)
{
	return tv_vf_query_device(inner_dev(dev), attr_p);
}

static int w_query_port(struct tv_vf_device *dev, uint8_t port,
			struct tv_vf_port_attr *attr_p)
{
	return tv_vf_query_port(inner_dev(dev), port, attr_p);
}

static int w_query_gid(struct tv_vf_device *dev, uint8_t port, int index,
		       uint8_t gid_p[16])
{
	return tv_vf_query_gid(inner_dev(dev), port, index, gid_p);
}

static int w_alloc_pd(struct tv_vf_device *dev, struct tv_vf_pd **pd_p)
{
	struct flt_pd *pd = calloc(1, sizeof(*pd));
	int ret;

	if (!pd)
		return -ENOMEM;
	ret = tv_vf_alloc_pd(inner_dev(dev), &pd->inner);
	if (ret) {
		free(pd);
		return ret;
	}
	pd->base.dev = dev;
	*pd_p = &pd->base;
	return 0;
}

static int w_dealloc_pd(struct tv_vf_pd *pd)
{
	int ret = tv_vf_dealloc_pd(to_pd(pd)->inner);

	if (!ret)
		free(to_pd(pd));
	return ret;
}

static int w_reg_mr(struct tv_vf_pd *pd, void *addr, size_t length,
		    uint32_t access, struct tv_vf_mr **mr_p)
{
	struct flt_mr *mr;
	int fail = 0, ret;

	FLT_ON(pd->dev, PT_REG_MR_FAIL, fail = -(int)TV_FLT_ARG(ENOMEM));
	if (fail)
		return fail;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	ret = tv_vf_reg_mr(to_pd(pd)->inner, addr, length, access, &mr->inner);
	if (ret) {
		free(mr);
		return ret;
	}
	mr->base = *mr->inner;
	mr->base.pd = pd;
	if (tapped(pd->dev)) {
		struct tv_flt_tap_event ev;

		tap_init(&ev, TV_FLT_TAP_REG_MR, TV_FLT_TAP_NONE);
		ev.len = (uint32_t)(length > UINT32_MAX ? UINT32_MAX : length);
		ev.flags = access;
		tap_emit(pd->dev, &ev);
	}
	*mr_p = &mr->base;
	return 0;
}

static int w_dereg_mr(struct tv_vf_mr *mr)
{
	int ret = tv_vf_dereg_mr(to_mr(mr)->inner);

	if (!ret)
		free(to_mr(mr));
	return ret;
}

static int w_create_cq(struct tv_vf_device *dev, uint32_t cqe,
		       struct tv_vf_cq **cq_p)
{
	struct flt_cq *cq = calloc(1, sizeof(*cq));
	int ret;

	if (!cq)
		return -ENOMEM;
	ret = tv_vf_create_cq(inner_dev(dev), cqe, &cq->inner);
	if (ret) {
		free(cq);
		return ret;
	}
	cq->base = *cq->inner;
	cq->base.dev = dev;
	cq->idx = to_dev(dev)->ncqs++;
	*cq_p = &cq->base;
	return 0;
}

static int w_destroy_cq(struct tv_vf_cq *cq)
{
	int ret = tv_vf_destroy_cq(to_cq(cq)->inner);

	if (!ret)
		free(to_cq(cq));
	return ret;
}

/* wr_id of the wrapper's own extra WRs: their completions are ours. */
#define FLT_TWIN_WRID 0x7477696e2d777269ull

/*
 * RC orders a send queue's completions and a receive queue's, not the two
 * against each other: put the receives first (stable within each).
 */
static void recv_first(struct tv_vf_wc *wc, int n)
{
	struct tv_vf_wc tmp;
	int i, j;

	for (i = 1; i < n; i++) {
		if (!(wc[i].opcode & TV_WC_RECV))
			continue;
		tmp = wc[i];
		for (j = i; j > 0 && !(wc[j - 1].opcode & TV_WC_RECV); j--)
			wc[j] = wc[j - 1];
		wc[j] = tmp;
	}
}

static int w_poll_cq(struct tv_vf_cq *cq, int n, struct tv_vf_wc *wc)
{
	int got, i, kept;
	int64_t delay = 0;

	FLT_ON(cq->dev, PT_CQ_DELAY, delay = TV_FLT_ARG(100000));
	if (delay) {
		/* Nothing now; the caller is woken to poll again later. */
		struct tv_vf_device *dev = cq->dev;

		tv_vf_wake_at(dev, tv_vf_now_ns(dev) + (uint64_t)delay);
		return 0;
	}

	/* A twin may still complete (flushed): the caller never posted it. */
	do {
		got = tv_vf_poll_cq(to_cq(cq)->inner, n, wc);
		if (got < 0)
			return got;
		for (i = 0, kept = 0; i < got; i++)
			if (wc[i].wr_id != FLT_TWIN_WRID)
				wc[kept++] = wc[i];
	} while (!kept && got == n);
	if (got)
		FLT_ON(cq->dev, PT_CQ_REORDER, recv_first(wc, kept));
	if (tapped(cq->dev)) {
		struct flt_dev *d = to_dev(cq->dev);

		/*
		 * What the caller gets is what is recorded: after the hook,
		 * which sees empty polls too (it may hand out what it held).
		 */
		if (d->tap.poll)
			kept = d->tap.poll(d->tap.ctx, to_cq(cq)->idx, wc,
					   kept, n);
		if (kept)
			tap_polled(to_cq(cq), wc, kept);
	}
	return kept;
}

static int w_create_qp(struct tv_vf_pd *pd,
		       const struct tv_vf_qp_init_attr *init,
		       struct tv_vf_qp **qp_p)
{
	struct tv_vf_qp_init_attr in = *init;
	struct flt_qp *qp = calloc(1, sizeof(*qp));
	int ret;

	if (!qp)
		return -ENOMEM;
	in.send_cq = to_cq(init->send_cq)->inner;
	in.recv_cq = to_cq(init->recv_cq)->inner;
	ret = tv_vf_create_qp(to_pd(pd)->inner, &in, &qp->inner);
	if (ret) {
		free(qp);
		return ret;
	}
	qp->idx = to_dev(pd->dev)->nqps;
	ret = qp_number_add(to_dev(pd->dev), qp->inner->qp_num, qp->idx);
	if (ret) {
		tv_vf_destroy_qp(qp->inner);
		free(qp);
		return ret;
	}
	to_dev(pd->dev)->nqps++;
	qp->base = *qp->inner;
	qp->base.dev = pd->dev;
	qp->base.pd = pd;
	qp->base.send_cq = init->send_cq;
	qp->base.recv_cq = init->recv_cq;
	qp->base.user_ctx = NULL;
	*qp_p = &qp->base;
	return 0;
}

static int w_modify_qp(struct tv_vf_qp *qp, const struct tv_vf_qp_attr *attr,
		       uint32_t mask)
{
	enum tv_vf_qp_state was = qp->state;
	int ret = tv_vf_modify_qp(to_qp(qp)->inner, attr, mask);

	qp->state = to_qp(qp)->inner->state;
	if (qp->state != was && tapped(qp->dev)) {
		struct tv_flt_tap_event ev;

		tap_init(&ev, TV_FLT_TAP_QP_STATE, to_qp(qp)->idx);
		ev.state = qp->state;
		tap_emit(qp->dev, &ev);
	}
	return ret;
}

static int w_query_qp(struct tv_vf_qp *qp, struct tv_vf_qp_attr *attr_p)
{
	int ret = tv_vf_query_qp(to_qp(qp)->inner, attr_p);

	qp->state = to_qp(qp)->inner->state;
	return ret;
}

static int w_destroy_qp(struct tv_vf_qp *qp)
{
	struct flt_qp *q = to_qp(qp);
	int ret = tv_vf_destroy_qp(q->inner);

	if (ret)
		return ret;
	while (q->bounces) {
		struct flt_bounce *b = q->bounces;

		q->bounces = b->next;
		tv_vf_dereg_mr(b->mr);
		free(b->buf);
		free(b);
	}
	free(q);
	return 0;
}

static int w_qp_endpoint(struct tv_vf_qp *qp, struct tv_vf_qp_endpoint *ep_p)
{
	return tv_vf_qp_endpoint(to_qp(qp)->inner, ep_p);
}

/* The message type is byte 3 of the wire header in the source buffer. */
static bool msg_dropped(struct tv_vf_device *dev,
			const struct tv_vf_send_wr *wr)
{
	const uint8_t *hdr;
	bool fire = false;

	if (wr->num_sge < 1 || wr->sg_list[0].length < 4)
		return false;
	hdr = (const uint8_t *)(uintptr_t)wr->sg_list[0].addr;
	if (hdr[3] >= 4)
		return false;
	FLT_ON(dev, (enum flt_pt)(PT_MSG_DROP_MDU + hdr[3]), fire = true);
	return fire;
}

static bool wr_dropped(struct tv_vf_device *dev,
		       const struct tv_vf_send_wr *wr)
{
	bool fire = false;

	if (wr->opcode != TV_WR_RDMA_WRITE_WITH_IMM)
		return false;
	if (wr->imm_data == TV_IMM_ACK)
		FLT_ON(dev, PT_ACK_DROP, fire = true);
	else if (wr->imm_data == TV_IMM_MESSAGE)
		fire = msg_dropped(dev, wr);
	else
		FLT_ON(dev, PT_WRITE_DROP, fire = true);
	return fire;
}

/* An ACK riding on a tensor write is lost alone: the write still lands. */
static void ride_dropped(struct tv_vf_device *dev, struct tv_vf_send_wr *wr)
{
	if (wr->opcode == TV_WR_RDMA_WRITE_WITH_IMM &&
	    tv_imm_is_write(wr->imm_data) &&
	    (wr->imm_data & TV_IMM_ACK_FLAG))
		FLT_ON(dev, PT_ACK_DROP, wr->imm_data &= ~TV_IMM_ACK_FLAG);
}

/* Which corruption point a WR's bytes answer to, or PT_COUNT. */
static enum flt_pt corrupt_point(const struct tv_vf_send_wr *wr)
{
	if (wr->opcode == TV_WR_RDMA_WRITE_WITH_IMM &&
	    wr->imm_data == TV_IMM_MESSAGE)
		return PT_MSG_CORRUPT;
	if ((wr->opcode == TV_WR_RDMA_WRITE_WITH_IMM &&
	     tv_imm_is_write(wr->imm_data)) || wr->opcode == TV_WR_RDMA_WRITE)
		return PT_WRITE_CORRUPT;
	return PT_COUNT;
}

/* bits seeded bit flips (distinct draws may hit one bit twice: undone). */
static void flip_bits(uint8_t *buf, size_t len, int64_t bits)
{
	for (int64_t k = 0; k < bits; k++) {
		uint64_t bit = tv__flt_draw((uint64_t)len * 8);

		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
}

/*
 * The WR's bytes, gathered into a copy with bits flipped; wr is made to
 * send the copy (one SGE, *sge).  0, or an errno: the WR goes as it was.
 */
static int corrupt_wr(struct flt_qp *qp, struct tv_vf_send_wr *wr,
		      int64_t bits, struct tv_vf_sge *sge)
{
	struct flt_bounce *b;
	size_t len = 0, off = 0;
	int ret;

	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (!len || bits < 1)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (b)
		b->buf = malloc(len);
	if (!b || !b->buf) {
		free(b);
		return -ENOMEM;
	}
	for (int i = 0; i < wr->num_sge; i++) {
		memcpy(b->buf + off, (const void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}
	flip_bits(b->buf, len, bits > 64 ? 64 : bits);
	ret = tv_vf_reg_mr(to_pd(qp->base.pd)->inner, b->buf, len,
			   TV_ACCESS_LOCAL_WRITE, &b->mr);
	if (ret) {
		free(b->buf);
		free(b);
		return ret;
	}
	b->next = qp->bounces;
	qp->bounces = b;
	sge->addr = (uintptr_t)b->buf;
	sge->length = (uint32_t)len;
	sge->lkey = b->mr->lkey;
	wr->sg_list = sge;
	wr->num_sge = 1;
	return 0;
}

static void maybe_corrupt(struct flt_qp *qp, struct tv_vf_send_wr *wr,
			  struct tv_vf_sge *sge)
{
	enum flt_pt point = corrupt_point(wr);
	int64_t bits = 0;

	if (point == PT_COUNT || wr->num_sge < 1)
		return;
	FLT_ON(qp->base.dev, point, bits = TV_FLT_ARG(1));
	if (bits)
		corrupt_wr(qp, wr, bits, sge);
}

/* Post one WR of the caller's chain, as it is or as its fault says. */
static int post_one(struct flt_qp *qp, const struct tv_vf_send_wr *orig)
{
	struct tv_vf_send_wr wr = *orig, *bad;
	struct tv_vf_qp_attr err = { .qp_state = TV_QPS_ERR };
	struct tv_vf_sge sge;
	bool dup = false;
	int ret;

	wr.next = NULL;
	FLT_ON(qp->base.dev, PT_QP_ERROR,
	       tv_vf_modify_qp(qp->inner, &err, TV_QP_STATE));
	qp->base.state = qp->inner->state;
	if (wr_dropped(qp->base.dev, &wr)) {
		wr.opcode = TV_WR_RDMA_WRITE;
		wr.num_sge = 0;
		wr.sg_list = NULL;
		wr.imm_data = 0;
	} else if (wr.opcode == TV_WR_RDMA_WRITE_WITH_IMM &&
		   tv_imm_is_write(wr.imm_data)) {
		ride_dropped(qp->base.dev, &wr);
		FLT_ON(qp->base.dev, PT_WRITE_DUP, dup = true);
	}
	if (wr.num_sge)
		maybe_corrupt(qp, &wr, &sge);
	if (dup) {
		struct tv_vf_send_wr twin = wr;

		/*
		 * The extra copy is unsignaled and its completions are ours.
		 * It is the data landing twice, not a second ACK.
		 */
		twin.send_flags &= ~(uint32_t)TV_SEND_SIGNALED;
		twin.wr_id = FLT_TWIN_WRID;
		twin.imm_data = tv_imm_index(twin.imm_data);
		ret = tv_vf_post_send(qp->inner, &twin, &bad);
		if (ret)
			return ret;
	}
	return tv_vf_post_send(qp->inner, &wr, &bad);
}

static int w_post_send(struct tv_vf_qp *qp, struct tv_vf_send_wr *wr,
		       struct tv_vf_send_wr **bad_wr_p)
{
	int ret;

	for (; wr; wr = wr->next) {
		if (tapped(qp->dev))
			tap_posted(to_qp(qp), wr);
		ret = post_one(to_qp(qp), wr);
		if (ret) {
			*bad_wr_p = wr;
			return ret;
		}
	}
	return 0;
}

static int w_post_recv(struct tv_vf_qp *qp, struct tv_vf_recv_wr *wr,
		       struct tv_vf_recv_wr **bad_wr_p)
{
	struct tv_vf_recv_wr one, *bad;
	bool skip;
	int ret;

	for (; wr; wr = wr->next) {
		if (tapped(qp->dev)) {
			struct tv_flt_tap_event ev;

			tap_init(&ev, TV_FLT_TAP_POST_RECV, to_qp(qp)->idx);
			for (int i = 0; i < wr->num_sge; i++)
				ev.len += wr->sg_list[i].length;
			ev.wr_id = wr->wr_id;
			tap_emit(qp->dev, &ev);
		}
		skip = false;
		FLT_ON(qp->dev, PT_RECV_DROP, skip = true);
		if (skip)
			continue;
		one = *wr;
		one.next = NULL;
		ret = tv_vf_post_recv(to_qp(qp)->inner, &one, &bad);
		if (ret) {
			*bad_wr_p = wr;
			return ret;
		}
	}
	return 0;
}

static uint64_t w_now_ns(struct tv_vf_device *dev)
{
	return tv_vf_now_ns(inner_dev(dev));
}

static int w_wake_at(struct tv_vf_device *dev, uint64_t deadline_ns)
{
	return tv_vf_wake_at(inner_dev(dev), deadline_ns);
}

static int w_wait(struct tv_vf_device *dev, uint64_t deadline_ns)
{
	return tv_vf_wait(inner_dev(dev), deadline_ns);
}

static int w_wait_fds(struct tv_vf_device *dev, uint64_t deadline_ns,
		      struct pollfd *fds, unsigned int nfds)
{
	return tv_vf_wait_fds(inner_dev(dev), deadline_ns, fds, nfds);
}

static struct tv_vf_device *w_inner(struct tv_vf_device *dev)
{
	return inner_dev(dev);
}

static const struct tv_vf_ops flt_ops = {
	.name = "faults",
	.query_device = w_query_device,
	.query_port = w_query_port,
	.query_gid = w_query_gid,
	.alloc_pd = w_alloc_pd,
	.dealloc_pd = w_dealloc_pd,
	.reg_mr = w_reg_mr,
	.dereg_mr = w_dereg_mr,
	.create_cq = w_create_cq,
	.destroy_cq = w_destroy_cq,
	.poll_cq = w_poll_cq,
	.create_qp = w_create_qp,
	.modify_qp = w_modify_qp,
	.query_qp = w_query_qp,
	.destroy_qp = w_destroy_qp,
	.qp_endpoint = w_qp_endpoint,
	.post_send = w_post_send,
	.post_recv = w_post_recv,
	.now_ns = w_now_ns,
	.wake_at = w_wake_at,
	.wait = w_wait,
	.wait_fds = w_wait_fds,
	.inner = w_inner,
};

static uint64_t clock_of(void *ctx)
{
	return tv_vf_now_ns(ctx);
}

int tv_flt_wrap(struct tv_flt *flt, struct tv_vf_device *inner,
		struct tv_vf_device **dev_p)
{
	struct flt_dev *d;

	if (!flt || !inner || !dev_p)
		return -EINVAL;
	/* The wrapper's names are the catalogue's (flt.c): a typo never fires. */
	for (size_t i = 0; i < PT_COUNT; i++)
		assert(tv_flt_point_find(pt_names[i]));
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	/* fiu-run's preload library enables points from these. */
	if (getenv("FIU_ENABLE") || getenv("FIU_CTRL_FIFO"))
		tv_engine_fault_points_live();
	d->base.ops = &flt_ops;
	d->base.user_ctx = inner->user_ctx;
	d->inner = inner;
	d->flt = flt;
	d->node = TV_FLT_TAP_NONE;
	tv_flt_set_clock(flt, clock_of, inner);
	*dev_p = &d->base;
	return 0;
}

int tv_flt_wrap_set_node(struct tv_vf_device *dev, uint32_t node)
{
	if (!dev || dev->ops != &flt_ops)
		return -EINVAL;
	to_dev(dev)->node = node;
	return 0;
}

void tv_flt_unwrap(struct tv_vf_device *dev)
{
	if (dev) {
		free(to_dev(dev)->qpnums);
		free(to_dev(dev));
	}
}
