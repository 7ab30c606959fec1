/*
 * bench port's floors: the same ping-pongs with bare verbs (the facade on
 * the same devices, a QP per node, no engine, no FIFO, no proxy), so the
 * engine's share of its latency shows.
 *   write:  an 8-byte RDMA write, inline, polled in the peer's memory (what
 *           ib_write_lat does);
 *   signal: the 8-byte write and a fetch-and-add chained in one post, the
 *           peer polling the fetch-and-add's word (what put_with_signal
 *           puts on the wire, and what wait polls);
 *   faa:    the fetch-and-add alone, polled the same way (one request and
 *           its answer: ib_atomic_lat's traffic, timed one way).
 * Every WR is signaled only every 16th, completions polled as they come.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pt_bench.h"

#define PF_BUF 4096u
/* The polled words: the write's at 0, the counters at 64 (signal) and
 * 128 (faa), each kind its own so that one phase's count is not the
 * next one's start. */
#define PF_WORD 64u

static uint64_t pf_word(enum pf_kind kind)
{
	return kind == PF_WRITE ? 0 : kind == PF_SIGNAL ? PF_WORD : 2 * PF_WORD;
}

int pf_open(struct pf *f, struct tv_vf_device *dev,
	    const struct tv_vf_connect_cfg *cc)
{
	struct tv_vf_qp_init_attr init = {
		.max_send_wr = 256, .max_recv_wr = 1, .max_send_sge = 1,
		.max_recv_sge = 1, .max_inline_data = 64,
	};
	int ret;

	memset(f, 0, sizeof(*f));
	f->dev = dev;
	f->cc = *cc;
	f->cc.access = TV_ACCESS_LOCAL_WRITE | TV_ACCESS_REMOTE_WRITE |
		       TV_ACCESS_REMOTE_READ | TV_ACCESS_REMOTE_ATOMIC;
	f->buf = aligned_alloc(4096, PF_BUF);
	if (!f->buf)
		return -ENOMEM;
	memset(f->buf, 0, PF_BUF);
	ret = tv_vf_alloc_pd(dev, &f->pd);
	if (!ret)
		ret = tv_vf_reg_mr(f->pd, f->buf, PF_BUF, f->cc.access, &f->mr);
	if (!ret)
		ret = tv_vf_create_cq(dev, 512, &f->cq);
	init.send_cq = init.recv_cq = f->cq;
	if (!ret)
		ret = tv_vf_create_qp(f->pd, &init, &f->qp);
	return ret;
}

int pf_connect(struct pf *a, struct pf *b)
{
	struct tv_vf_qp_endpoint ea, eb;
	int ret = tv_vf_qp_endpoint(a->qp, &ea);

	if (!ret)
		ret = tv_vf_qp_endpoint(b->qp, &eb);
	if (!ret)
		ret = tv_vf_connect_qp(a->qp, &a->cc, &ea, &eb);
	if (!ret)
		ret = tv_vf_connect_qp(b->qp, &b->cc, &eb, &ea);
	a->peer_addr = (uintptr_t)b->buf;
	a->peer_rkey = b->mr->rkey;
	b->peer_addr = (uintptr_t)a->buf;
	b->peer_rkey = a->mr->rkey;
	return ret;
}

int pf_connect_remote(struct pf *f, const struct tv_vf_qp_endpoint *peer,
		      uint64_t peer_addr, uint32_t peer_rkey)
{
	struct tv_vf_qp_endpoint mine;
	int ret = tv_vf_qp_endpoint(f->qp, &mine);

	if (!ret)
		ret = tv_vf_connect_qp(f->qp, &f->cc, &mine, peer);
	f->peer_addr = peer_addr;
	f->peer_rkey = peer_rkey;
	return ret;
}

void pf_close(struct pf *f)
{
	if (f->qp)
		tv_vf_destroy_qp(f->qp);
	if (f->cq)
		tv_vf_destroy_cq(f->cq);
	if (f->mr)
		tv_vf_dereg_mr(f->mr);
	if (f->pd)
		tv_vf_dealloc_pd(f->pd);
	free(f->buf);
	memset(f, 0, sizeof(*f));
}

/* Completions as they come; one in sixteen WRs is signaled. */
static int pf_poll(struct pf *f)
{
	struct tv_vf_wc wc[16];
	int n = tv_vf_poll_cq(f->cq, 16, wc);

	for (int i = 0; i < n; i++) {
		if (wc[i].status != TV_WC_SUCCESS)
			return -EIO;
		f->done = wc[i].wr_id;
	}
	return n < 0 ? n : 0;
}

static int pf_post(struct pf *f, uint64_t round, enum pf_kind kind)
{
	struct tv_vf_sge data = { (uintptr_t)f->buf + 512, 8, f->mr->lkey };
	struct tv_vf_sge old = { (uintptr_t)f->buf + 1024, 8, f->mr->lkey };
	struct tv_vf_send_wr wr[2], *bad = NULL;
	bool with_signal = kind == PF_SIGNAL;
	uint64_t id = f->posted + (kind == PF_FAA ? 0 : 1);

	/* Room: at most 128 WRs not known complete. */
	while (f->posted - f->done > 128)
		if (pf_poll(f))
			return -EIO;
	memcpy(f->buf + 512, &round, 8);
	wr[0] = (struct tv_vf_send_wr){
		.wr_id = id, .sg_list = &data, .num_sge = 1,
		.opcode = TV_WR_RDMA_WRITE,
		.send_flags = TV_SEND_INLINE |
			      (!with_signal && id % 16 == 0 ? TV_SEND_SIGNALED : 0),
		.remote_addr = f->peer_addr, .rkey = f->peer_rkey,
		.next = with_signal ? &wr[1] : NULL,
	};
	wr[1] = (struct tv_vf_send_wr){
		.wr_id = id + 1, .sg_list = &old, .num_sge = 1,
		.opcode = TV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = (id + 1) % 16 < 2 ? TV_SEND_SIGNALED : 0,
		.remote_addr = f->peer_addr + pf_word(kind), .rkey = f->peer_rkey,
		.compare_add = 1,
	};
	f->posted += with_signal ? 2 : 1;
	return tv_vf_post_send(f->qp, kind == PF_FAA ? &wr[1] : wr, &bad);
}

/* The word the peer's post changes, read whole. */
static uint64_t pf_seen(struct pf *f, enum pf_kind kind)
{
	return __atomic_load_n((uint64_t *)(void *)(f->buf + pf_word(kind)),
			       __ATOMIC_ACQUIRE);
}

static int pf_wait(struct pf *f, uint64_t want, enum pf_kind kind,
		   uint64_t deadline_ns)
{
	for (unsigned k = 0; pf_seen(f, kind) < want; k++) {
		if (pf_poll(f))
			return -EIO;
		if ((k & 1023) == 0 && pt_bench_now_ns() > deadline_ns)
			return -ETIMEDOUT;
	}
	return 0;
}

int pf_pingpong(struct pf *f, bool first, uint32_t rounds, enum pf_kind kind,
		uint64_t deadline_ns, uint64_t *rtt_ns)
{
	int ret = 0;

	for (uint64_t r = 1; !ret && r <= rounds; r++) {
		uint64_t t0 = pt_bench_now_ns();

		if (!first)
			ret = pf_wait(f, r, kind, deadline_ns);
		if (!ret)
			ret = pf_post(f, r, kind);
		if (!ret && first)
			ret = pf_wait(f, r, kind, deadline_ns);
		if (first && rtt_ns)
			rtt_ns[r - 1] = pt_bench_now_ns() - t0;
	}
	/* Whatever is still in flight completes before the QP goes. */
	while (!ret && f->done < f->posted && pt_bench_now_ns() < deadline_ns) {
		struct tv_vf_send_wr nop = {
			.wr_id = f->posted + 1, .opcode = TV_WR_RDMA_WRITE,
			.send_flags = TV_SEND_SIGNALED,
			.remote_addr = f->peer_addr, .rkey = f->peer_rkey,
		}, *bad = NULL;

		f->posted++;
		ret = tv_vf_post_send(f->qp, &nop, &bad);
		while (!ret && f->done < f->posted &&
		       pt_bench_now_ns() < deadline_ns)
			ret = pf_poll(f);
	}
	return ret;
}
