/*
 * This file is private to the gather workload (testbed/workloads/gather/):
 * quiver's RDMA READ gather (engine/gather/) as scenarios on the testbed.
 * docs/gather.md has the keys and the invariants.
 */
#ifndef TV_GW_H
#define TV_GW_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/gather.h>
#include <tensorverbs/workload.h>

#define GW_MAX_NODES 16
#define GW_MAX_BATCH (1u << 20)

enum gw_dist {
	GW_IDS = 0,          /* explicit "ids" */
	GW_UNIFORM,
	GW_ZIPF,
	GW_SORTED,           /* uniform, then sorted */
	GW_BOUNDARY,         /* the ranges' first and last rows, over again */
	GW_NDISTS,
};

struct gw_batch {
	uint32_t node;       /* the client */
	uint64_t at_ns;
	enum gw_dist dist;
	uint32_t count;
	double zipf_s;
	bool dups;           /* every other id repeats the one before */
	uint64_t *ids;       /* GW_IDS */
};

struct gw_scenario {
	uint32_t nodes;
	struct tv_gather_config cfg; /* node_id, observe, reconnect unset */
	bool direct;         /* READs straight into a registered output */
	uint32_t zero_every; /* every k-th row is all zero on its owner */
	uint64_t timeout_ns; /* each gather's deadline */
	struct gw_batch *batches;
	size_t nbatches;
	size_t max_count;
};

struct gw_runner;

struct gw_node {
	struct gw_runner *r;
	uint32_t id;
	struct tv_vf_device *dev;
	struct tv_gather_ctx *ctx;
	uint8_t *part;
	uint8_t *out;
	uint64_t *ids;       /* the running batch's */
	size_t running;      /* batch index + 1, 0: none */
	size_t *queue;       /* batches due, waiting for the one running */
	size_t qhead, qlen;
	bool down;
	bool lost;           /* its restart failed: gone for good */
	uint32_t gen;        /* restarts */
};

struct gw_batch_run {
	bool started, ended;
	uint32_t ends;       /* END events seen: exactly one */
	int result;
	size_t failed_rows;
	uint64_t start_ns, end_ns;
	bool cancelled;      /* its node crashed */
	bool refused;        /* tv_gather_start said no: it never ends */
};

struct gw_due {
	struct gw_runner *r;
	size_t b;
};

struct gw_runner {
	struct tv_tb_run *run;
	struct gw_due *dues;
	const struct gw_scenario *sc;
	uint64_t seed;
	uint32_t breakage;   /* engine bits */
	bool quiver_check;   /* accept-zero-rows: quiver's mem_check */
	struct gw_node *nodes;
	struct gw_batch_run *runs;
	uint64_t rows_checked;
	uint64_t rows_failed;
	uint64_t zero_rows_seen;  /* accepted by quiver's check */
	struct tv_gather_stats total;
	bool ready;
};

/* scenario.c */
extern const char *const gw_dist_names[GW_NDISTS];
int gw_scenario_parse(struct tv_ju *jc, json_t *root,
		      struct tv_tb_scenario *core, void **wl_p);
void gw_scenario_free(void *wl);

/* run.c */
void gw_row(uint64_t seed, const struct gw_scenario *sc, uint64_t id,
	    uint8_t *buf);
void gw_fill_part(const struct gw_scenario *sc, uint64_t seed, uint32_t node,
		  uint8_t *part);
void gw_batch_ids(const struct gw_scenario *sc, uint64_t seed, size_t b,
		  uint64_t *ids);
/*
 * hw.c: a node's set-up bytes for its peers (magic, version, node, QPs
 * per peer, its partition handle, its endpoints), and a peer p's applied:
 * its handle set, our QPs towards it connected.  The bytes are the
 * peer's: checked field by field, msg names what is wrong.
 */
int gw_blob_make(struct tv_gather_ctx *ctx, uint32_t me, uint32_t nodes,
		 uint32_t qps, uint8_t **blob_p, size_t *len_p);
int gw_blob_apply(struct tv_gather_ctx *ctx, uint32_t me, uint32_t nodes,
		  uint32_t qps, uint32_t p, const uint8_t *b, size_t len,
		  char *msg, size_t cap);
int gw_connect_pair(struct tv_gather_ctx *cc, struct tv_gather_ctx *sc,
		    uint32_t c, uint32_t s, uint32_t k);
int gw_setup(struct tv_tb_run *run, void **state_p);
void gw_progress(struct tv_tb_run *run, void *st, uint32_t node);
void gw_teardown(struct tv_tb_run *run, void *st);
void gw_state_free(void *st);
void gw_node_crash(struct tv_tb_run *run, void *st, uint32_t node);
void gw_collect_stats(struct gw_runner *r);
int gw_node_restart(struct tv_tb_run *run, void *st, uint32_t node);
void gw_node_lost(struct tv_tb_run *run, void *st, uint32_t node);

/* check.c */
long gw_first_bad_row(const struct gw_scenario *sc, uint64_t seed,
		      const uint64_t *ids, size_t n, const uint8_t *out,
		      const uint8_t *failed, bool quiver, uint64_t *zero_p);
void gw_check_batch(struct gw_runner *r, size_t b,
		    const struct tv_gather_result *res, int rc);
void gw_sim_event(struct tv_tb_run *run, void *st,
		  const struct tv_sim_event *ev);
void gw_check(struct tv_tb_run *run, void *st);
void gw_observe(void *ctx, const struct tv_gather_event *ev);

/* hw.c: one node per process on real verbs */
extern const struct tv_tb_hw_ops gw_hw_ops;
/* bench.c: tensorverbs bench gather */
int gw_bench_main(int argc, char **argv, const char *argv0);

/* swarm.c */
int gw_generate(uint64_t seed, uint32_t without, json_t **sc_p);
#define GW_NEDITS 6
extern const struct tv_tb_shrink_edit *const gw_edits[GW_NEDITS];
void gw_describe(json_t *sc, uint64_t ops, char *buf, size_t cap);

#endif /* TV_GW_H */
