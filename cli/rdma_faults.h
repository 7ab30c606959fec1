/*
 * This file is private to the tensorverbs CLI: fault injection in a node
 * process on real hardware (`tensorverbs serve`).
 *
 * The engine's device is wrapped with the fault layer (faults/wrap.c), so
 * the vf/ points act on real verbs: an ACK or a message posted as an empty
 * RDMA_WRITE, a registration refused, the QP moved to ERR with
 * ibv_modify_qp.  engine/alloc and tv_pool/ are in the engine itself.  The
 * simulator's points (sim/) and node/crash have no hardware equivalent: a
 * scenario that uses them is skipped, saying so.
 *
 * Each process arms the whole plan for its own hits (the simulator counts
 * a point's hits across the world); node 0 sums every process's firings
 * for expect_faults.  With --fiu-ctrl, libfiu's remote control listens on
 * $TMPDIR/fiu-ctrl-PID (fiu-ctrl(1)), so points can be enabled in the
 * running process.
 */
#ifndef TV_CLI_RDMA_FAULTS_H
#define TV_CLI_RDMA_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <tensorverbs/faults.h>

#define RR_FAULT_SLOTS 32 /* per point of tv_flt_points(), in its order */

struct rr_faults {
	struct tv_flt *flt;        /* NULL: no plan and no remote control */
	bool active;
};

/* Can this point act on real hardware? */
bool rr_fault_point_on_hw(const char *point);

/*
 * An injector for plan (NULL or empty: none) seeded with seed, and, with
 * fiu_ctrl, libfiu's remote control started.  -EINVAL: msg says why.
 */
int rr_faults_init(struct rr_faults *f, json_t *plan, uint64_t seed,
		   bool fiu_ctrl, char *msg, size_t cap);
/* Faults on (after set-up) and off (before the final statistics). */
int rr_faults_start(struct rr_faults *f, char *msg, size_t cap);
void rr_faults_stop(struct rr_faults *f);
/* Firings per point so far (zeros without an injector). */
void rr_faults_fires(const struct rr_faults *f,
		     uint64_t fires[RR_FAULT_SLOTS]);
void rr_faults_free(struct rr_faults *f);

#endif /* TV_CLI_RDMA_FAULTS_H */
