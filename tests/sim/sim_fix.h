/*
 * The simulator tests' fixture: two nodes, a QP each, one 4 KiB MR each,
 * joined by 1000 ns links at 1e9 bytes/s (see test_sim.c for the timing
 * arithmetic).  Test code only.
 */
#ifndef TV_TESTS_SIM_FIX_H
#define TV_TESTS_SIM_FIX_H

#include <stdint.h>

#include <tensorverbs/sim.h>

#define LAT 1000u
#define BUF 4096u
#define CQ_DEPTH 64u

struct side {
	struct tv_vf_device *dev;
	struct tv_vf_pd *pd;
	struct tv_vf_cq *scq;
	struct tv_vf_cq *rcq;
	struct tv_vf_qp *qp;
	struct tv_vf_mr *mr;
	uint8_t *buf;
};

struct fix {
	struct tv_sim *sim;
	struct side s[2];
};

void cfg_test(struct tv_sim_config *cfg);
void side_init(struct fix *f, uint32_t node, uint32_t depth);
void fix_init_cfg(struct fix *f, const struct tv_sim_config *cfg);
void fix_init(struct fix *f);
void conn_cfg(struct tv_vf_connect_cfg *cc);
void connect_pair_cfg(struct fix *f, const struct tv_vf_connect_cfg *cc);
void connect_pair(struct fix *f);
void side_fini(struct side *s);
void fix_fini(struct fix *f);
uint64_t raddr(const struct side *s, uint32_t off);
/* One send WR from side `from`, local bytes [loff, loff+len) of its MR. */
int post_op(struct fix *f, int from, enum tv_vf_wr_opcode op, uint32_t loff,
	    uint32_t len, uint32_t roff, uint32_t flags, uint64_t wr_id);
int post_rx(struct fix *f, int side, uint32_t off, uint32_t len,
	    uint64_t wr_id);
/* Exactly one completion must be waiting on cq; return it. */
struct tv_vf_wc poll1(struct tv_vf_cq *cq);
struct tv_vf_wc poll_next(struct tv_vf_cq *cq);
void run_all(struct fix *f);
/* Run until cq has a completion; return the virtual time it appeared. */
uint64_t run_until_cqe(struct fix *f, int side);
void fill(uint8_t *p, uint32_t len, uint8_t seed);

#endif
