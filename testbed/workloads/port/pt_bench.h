/*
 * This file is private to the port workload's benchmark (bench.c) and its
 * bare-verbs floors (bench_floor.c).
 */
#ifndef TV_PT_BENCH_H
#define TV_PT_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/vf.h>

/* A bare QP of the floors. */
struct pf {
	struct tv_vf_device *dev;
	struct tv_vf_connect_cfg cc;
	struct tv_vf_pd *pd;
	struct tv_vf_cq *cq;
	struct tv_vf_qp *qp;
	struct tv_vf_mr *mr;
	uint8_t *buf;
	uint64_t peer_addr;
	uint32_t peer_rkey;
	uint64_t posted;
	uint64_t done;            /* the last wr_id completed */
};

uint64_t pt_bench_now_ns(void);
int pf_open(struct pf *f, struct tv_vf_device *dev,
	    const struct tv_vf_connect_cfg *cc);
int pf_connect(struct pf *a, struct pf *b);
/* Split across hosts: our QP to the peer's, its buffer and rkey. */
int pf_connect_remote(struct pf *f, const struct tv_vf_qp_endpoint *peer,
		      uint64_t peer_addr, uint32_t peer_rkey);
void pf_close(struct pf *f);
/* What a floor's round puts on the wire, and where the peer polls. */
enum pf_kind {
	PF_WRITE = 0,   /* an inline 8-byte write, polled at its word */
	PF_SIGNAL,      /* that write and a fetch-and-add, polled at the counter */
	PF_FAA,         /* the fetch-and-add alone, polled at the counter */
};

/*
 * rounds of the ping-pong (first: node 0, which times each round trip
 * into rtt_ns).
 */
int pf_pingpong(struct pf *f, bool first, uint32_t rounds, enum pf_kind kind,
		uint64_t deadline_ns, uint64_t *rtt_ns);

#endif /* TV_PT_BENCH_H */
