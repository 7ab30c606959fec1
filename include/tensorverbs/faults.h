/*
 * tensorverbs — fault injection.
 *
 * Named points (libfiu) sit in the fault-wrapping facade, in the engine and
 * in the simulator.  A plan says which points fire and when (probability,
 * from the Nth hit, how many times, a window of virtual time).  Decisions
 * come from the run's seeded PRNG through fiu_enable_external(), never
 * from libfiu's own generator, so the same seed and plan give the same run.
 *
 * libfiu is process-global: one injector is active per process at a time
 * (parallel runs use processes).  Points compile to nothing without
 * FIU_ENABLE (the TV_FAULTS build option).
 */
#ifndef TENSORVERBS_FAULTS_H
#define TENSORVERBS_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/vf.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tv_flt_point_info {
	const char *name;        /* e.g. "vf/ack/drop" */
	const char *description; /* one line */
	const char *arg;         /* what the rule's arg means, or NULL */
	/*
	 * Once it fired, a receive may fail (data or a resource is gone);
	 * otherwise every receive must complete as if nothing happened.
	 */
	bool may_fail;
	/*
	 * Only the simulator (or its scenario runner) hits it: no hardware
	 * equivalent, so a run on real verbs cannot inject it.
	 */
	bool sim_only;
	/*
	 * The workload whose engine the point is about (its messages, its
	 * allocations), or NULL: every workload's (verbs, the simulator,
	 * nodes).  A scenario arms only its own workload's and common ones.
	 */
	const char *workload;
};

/* Every point, in a stable order. */
const struct tv_flt_point_info *tv_flt_points(size_t *count_p);
const struct tv_flt_point_info *tv_flt_point_find(const char *name);

struct tv_flt_rule {
	double probability;  /* of firing on an eligible hit, 0..1 */
	uint64_t nth;        /* eligible from the Nth hit on (1-based); 0: 1 */
	uint64_t count;      /* fire at most this many times; 0: unlimited */
	uint64_t after_ns;   /* eligible at virtual time >= after_ns ... */
	uint64_t before_ns;  /* ... and < before_ns (0: no end) */
	int64_t arg;         /* point-specific (delay, errno ...); 0: default */
	/*
	 * A node rule (has_node): only the hits on node `node`'s wrapped
	 * device count, and nth is that device's own hit number of the point
	 * (tv_flt_wrap_set_node()).  Only the wrapper's vf/ points know their
	 * node.  A point may have several node rules (up to
	 * TV_FLT_NODE_RULES) beside its one rule for every node: a recording
	 * from real verbs fires each point where each process fired it.
	 */
	bool has_node;
	uint32_t node;
};

#define TV_FLT_NODE_RULES 16

void tv_flt_rule_default(struct tv_flt_rule *rule); /* always, unlimited */

struct tv_flt;

/* An injector whose decisions come from seed. */
int tv_flt_create(uint64_t seed, struct tv_flt **flt_p);
/* Disarms every point; the injector must not be active. */
void tv_flt_destroy(struct tv_flt *flt);

/* Arm a point (replacing an earlier rule for it). -ENOENT: unknown point. */
int tv_flt_arm(struct tv_flt *flt, const char *point,
	       const struct tv_flt_rule *rule);
/*
 * Parse a plan: a JSON array of {"point", "probability", "nth", "count",
 * "after_ns", "before_ns", "arg"} objects, or the command-line form
 * "point[:key=value,...][;point...]" (keys p, nth, count, after, before,
 * arg).  On error returns -EINVAL and a message naming the culprit, or
 * -ENOMEM when the JSON parser ran out of memory.
 */
int tv_flt_plan_parse(struct tv_flt *flt, const char *text, char *err,
		      size_t err_bytes);

/* Virtual (or real) time for windows: set by tv_flt_wrap(). */
void tv_flt_set_clock(struct tv_flt *flt,
		      uint64_t (*now_ns)(void *ctx), void *ctx);

/* Make this injector the process's active one (libfiu's points). */
int tv_flt_activate(struct tv_flt *flt);
void tv_flt_deactivate(struct tv_flt *flt);

/*
 * Observe every firing: the point and the hit number (the injector's
 * count over every node; 0 for a firing that libfiu decided alone, as
 * after fiu-ctrl(1) or fiu-run(1) enabled the point: the injector saw no
 * hit of it).  Those firings are observed by the injector the firing
 * device was wrapped with, active or not.
 */
typedef void (*tv_flt_fire_fn)(void *ctx, const char *point, uint64_t hit);
void tv_flt_set_observer(struct tv_flt *flt, tv_flt_fire_fn fn, void *ctx);
/*
 * Inside an observer, for the wrapper's vf/ points: the node of the
 * wrapped device that fired and that device's own hit number of the
 * point (counted from the device's creation, armed or not).  false for
 * other points, and outside an observer.
 */
bool tv_flt_firing_site(uint32_t *node_p, uint64_t *hit_p);

struct tv_flt_point_stats {
	uint64_t hits;
	uint64_t fires;
};
int tv_flt_stats(const struct tv_flt *flt, const char *point,
		 struct tv_flt_point_stats *stats_p);
uint64_t tv_flt_total_fires(const struct tv_flt *flt);

/*
 * Inside a firing point, the rule's arg (0 when unset) is libfiu's
 * fiu_failinfo(); this reads it with a default.
 */
#define TV_FLT_ARG(dflt)                                               \
	((intptr_t)fiu_failinfo() ? (int64_t)(intptr_t)fiu_failinfo() \
				  : (int64_t)(dflt))

/*
 * Wrap a device: every object made through the wrapper forwards to the
 * inner device's, with the vf/ points in between.  Works over any backend.
 */
int tv_flt_wrap(struct tv_flt *flt, struct tv_vf_device *inner,
		struct tv_vf_device **dev_p);
void tv_flt_unwrap(struct tv_vf_device *dev);
/* The node this wrapped device stands for (node rules, firing sites);
 * TV_FLT_TAP_NONE until set.  -EINVAL: dev is not a wrapped device. */
int tv_flt_wrap_set_node(struct tv_vf_device *dev, uint32_t node);

/*
 * Taps: what a wrapped device's caller did and saw, for the recorder of
 * runs on real verbs (testbed/record.c, docs/recording.md) and for the
 * simulator replaying one.  QPs and CQs are numbered per wrapped device
 * in creation order from 0 (QP numbers and pointers change from run to
 * run, creation order does not).  A device without a tap pays one NULL
 * test per call.
 */
enum tv_flt_tap_kind {
	TV_FLT_TAP_REG_MR,    /* len: the MR's length */
	TV_FLT_TAP_QP_STATE,  /* a modify_qp that changed the state */
	TV_FLT_TAP_POST_SEND, /* one WR as the caller posted it */
	TV_FLT_TAP_POST_RECV,
	TV_FLT_TAP_POLL,      /* one completion as the caller got it */
};

#define TV_FLT_TAP_NONE UINT32_MAX

struct tv_flt_tap_event {
	enum tv_flt_tap_kind kind;
	uint32_t qp;      /* index, or TV_FLT_TAP_NONE */
	uint32_t cq;      /* index (POLL), or TV_FLT_TAP_NONE */
	uint32_t opcode;  /* enum tv_vf_wr_opcode, or tv_vf_wc_opcode (POLL) */
	uint32_t status;  /* POLL: enum tv_vf_wc_status */
	uint32_t state;   /* QP_STATE: enum tv_vf_qp_state */
	uint32_t len;     /* WR: the SGEs' bytes; POLL: byte_len */
	uint32_t imm;     /* valid when has_imm */
	bool has_imm;
	uint32_t flags;   /* send_flags, or wc_flags */
	uint64_t wr_id;
};

struct tv_flt_tap {
	void (*event)(void *ctx, const struct tv_flt_tap_event *ev);
	/*
	 * Optional, before event() sees them: the got completions just polled
	 * from CQ cq, in wc (room for cap).  The tap may hold some back and
	 * put earlier held ones in; it returns how many wc holds now (at
	 * most cap).  The replay drives completion order with it.
	 */
	int (*poll)(void *ctx, uint32_t cq, struct tv_vf_wc *wc, int got,
		    int cap);
	void *ctx;
};

/* tap NULL: none.  -EINVAL: dev is not a wrapped device. */
int tv_flt_set_tap(struct tv_vf_device *dev, const struct tv_flt_tap *tap);
/* A completion's qp_num as the tap's QP index, or TV_FLT_TAP_NONE. */
uint32_t tv_flt_tap_qp_index(struct tv_vf_device *dev, uint32_t qp_num);

#ifdef __cplusplus
}
#endif
#endif /* TENSORVERBS_FAULTS_H */
