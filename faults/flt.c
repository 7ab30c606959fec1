/*
 * The fault injector: the catalogue of points, rules, and the seeded
 * decision behind every libfiu point.
 */
#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fiu.h>
#include <fiu-control.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/faults.h>
#include <tensorverbs/sim.h>

#include "flt_priv.h"

static const struct tv_flt_point_info points[] = {
	{ "vf/ack/drop", "an ACK is lost: an ACK write is posted as a "
	  "zero-length write without immediate; an ACK riding on a tensor "
	  "write loses its flag, the data still lands", NULL, false, false,
	  "rendezvous" },
	{ "vf/msg/drop/TENSOR_REQUEST", "a TENSOR_REQUEST message is lost",
	  NULL, false, false, "rendezvous" },
	{ "vf/msg/drop/META_DATA_UPDATE", "a META_DATA_UPDATE message is "
	  "lost", NULL, false, false, "rendezvous" },
	{ "vf/msg/drop/TENSOR_RE_REQUEST", "a TENSOR_RE_REQUEST message is "
	  "lost", NULL, false, false, "rendezvous" },
	{ "vf/msg/drop/ERROR_STATUS", "an ERROR_STATUS message is lost",
	  NULL, false, false, "rendezvous" },
	{ "vf/write/drop", "a tensor write (imm = request index) is lost, "
	  "with any ACK riding on it", NULL, true, false, "rendezvous" },
	{ "vf/write/dup", "a tensor write is delivered twice (the extra copy "
	  "carries no ACK)", NULL, false, false, "rendezvous" },
	{ "vf/qp/error", "the QP moves to ERR just before a post (as after "
	  "retry exceeded): outstanding work flushes", NULL, false, false, NULL },
	{ "vf/reg_mr/fail", "memory registration fails", "errno (default "
	  "ENOMEM)", true, false, NULL },
	{ "vf/recv/drop", "a receive is not posted (RNR at the sender)",
	  NULL, true, false, "rendezvous" },
	{ "vf/cq/reorder", "a poll returns receive completions ahead of send "
	  "completions (RC orders each queue, not the two)", NULL, false, false, NULL },
	{ "vf/cq/delay", "a poll returns nothing although completions wait: "
	  "they come at a later poll", "ns until the caller is woken "
	  "(default 100 us)", false, false, NULL },
	{ "engine/alloc", "an engine allocation (request, response, tag, "
	  "tensor, channel, cache entry) fails", NULL, true, false,
	  "rendezvous" },
	{ "tv_pool/calloc", "the registered pool's bookkeeping allocation "
	  "fails", NULL, true, false, "rendezvous" },
	{ "tv_pool/malloc", "the registered pool's block descriptor "
	  "allocation fails", NULL, true, false, "rendezvous" },
	{ "tv_pool/realloc", "growing the pool's block or free-range table "
	  "fails", NULL, true, false, "rendezvous" },
	{ "tv_pool/memalign", "allocating a pool block's memory fails", NULL,
	  true, false, "rendezvous" },
	{ "sim/deliver/delay", "a delivery in the simulator is delayed",
	  "extra ns (default 1 ms)", false, true, NULL },
	{ "sim/cq/overflow", "a completion queue overflows: the completion is "
	  "lost, the CQ is unusable, its QPs go to ERR", NULL, true, true, NULL },
	/*
	 * Hit by the scenario runner (cli/runner_crash.c), not by a library:
	 * last in the list, so that the swarm's draws for the points above
	 * stay what they were for every seed.
	 */
	{ "node/crash", "a node crashes (its engine is destroyed) and "
	  "restarts after arg ns with a fresh engine", "ns until the restart "
	  "(default 2 ms)", true, true, NULL },
	/* The port-channel engine's (engine/port/ and its workload). */
	{ "port/fifo/full", "a producer finds the proxy FIFO full: its push "
	  "waits and tries again", NULL, false, false, "port" },
	{ "port/proxy/stall", "the proxy thread stalls: no trigger taken, no "
	  "completion polled for a while", "ns (default 100 us)", false,
	  false, "port" },
	{ "port/producer/stall", "a producer stalls before its next "
	  "operation", "ns (default 100 us)", false, false, "port" },
	{ "port/sem/delay", "a semaphore signal is posted late, and the posts "
	  "behind it on its connection", "ns (default 50 us)", false, false,
	  "port" },
	/* The gather engine's (engine/gather/ and its workload). */
	{ "gather/read/error", "one READ in the middle of a post list fails "
	  "(REM_ACCESS_ERR: its rkey is damaged on the way); the rest of the "
	  "list flushes and is read again, up to max_retries", NULL, true,
	  false, "gather" },
	{ "gather/server/rereg", "a server registers its partition again (a "
	  "restart of its registration): READs with the old rkey fail until "
	  "the client's QP is reset and given the new handle", NULL, true,
	  true, "gather" },
	/*
	 * Silent data corruption (docs/faults.md, "Corruption"): seeded bit
	 * flips in a data write as it lands, in a control message as it
	 * lands, in a received buffer before the receiver reads it.
	 */
	{ "vf/write/corrupt", "a data write lands with flipped bits (a tensor "
	  "write, a put): the sender's buffer is intact, the receiver's bytes "
	  "are not", "bits flipped (default 1)", true, false, NULL },
	{ "vf/msg/corrupt", "a control message lands with flipped bits: its "
	  "checksum fails, the decoder rejects it, the channel is reset",
	  "bits flipped (default 1)", true, false, "rendezvous" },
	{ "engine/recv/corrupt", "a received tensor's bytes are flipped in "
	  "memory after its write completed, before the receiver reads them",
	  "bits flipped (default 1)", true, false, "rendezvous" },
};

#define NPOINTS (sizeof(points) / sizeof(points[0]))

/* A node rule and its own count of firings (rule.count bounds it). */
struct flt_node_rule {
	struct tv_flt_rule rule;
	uint64_t fires;
};

struct flt_slot {
	bool armed;                       /* the rule for every node */
	struct tv_flt_rule rule;
	uint64_t rule_fires;              /* the firings of that rule */
	struct tv_flt_point_stats stats;  /* every hit, every firing */
	uint32_t nnode;
	struct flt_node_rule node_rules[TV_FLT_NODE_RULES];
};

struct tv_flt {
	struct tv_prng prng;
	struct flt_slot slots[NPOINTS];
	uint64_t (*now_ns)(void *ctx);
	void *clock_ctx;
	tv_flt_fire_fn observe;
	void *observe_ctx;
	bool active;
};

/* libfiu is process-global: so is the injector its callback consults. */
static struct tv_flt *active_flt;

/*
 * Points fire from any thread on real verbs (the port workload's
 * producers push into the FIFO): one decision at a time, so the seeded
 * stream and the counters stay whole.
 */
static pthread_mutex_t decide_lock = PTHREAD_MUTEX_INITIALIZER;

/* Set by the wrapper around each of its points' checks (flt_priv.h). */
_Thread_local struct tv__flt_site *tv__flt_site;

const struct tv_flt_point_info *tv_flt_points(size_t *count_p)
{
	*count_p = NPOINTS;
	return points;
}

static int point_index(const char *name)
{
	size_t i;

	for (i = 0; i < NPOINTS; i++)
		if (!strcmp(points[i].name, name))
			return (int)i;
	return -ENOENT;
}

const struct tv_flt_point_info *tv_flt_point_find(const char *name)
{
	int i = point_index(name);

	return i < 0 ? NULL : &points[i];
}

void tv_flt_rule_default(struct tv_flt_rule *rule)
{
	memset(rule, 0, sizeof(*rule));
	rule->probability = 1.0;
}

int tv_flt_create(uint64_t seed, struct tv_flt **flt_p)
{
	struct tv_flt *flt = calloc(1, sizeof(*flt));

	if (!flt)
		return -ENOMEM;
	/* A stream of its own: faults never perturb the world's draws. */
	tv_prng_init(&flt->prng, seed ^ 0x6661756c74730001ull);
	*flt_p = flt;
	return 0;
}

void tv_flt_destroy(struct tv_flt *flt)
{
	if (!flt)
		return;
	if (flt->active)
		tv_flt_deactivate(flt);
	free(flt);
}

/*
 * Only the wrapper's points are hit on a device that knows its node:
 * -EINVAL for the others, -ENOSPC past TV_FLT_NODE_RULES.
 */
static int arm_node_rule(struct flt_slot *slot, const char *point,
			 const struct tv_flt_rule *rule)
{
	if (strncmp(point, "vf/", 3))
		return -EINVAL;
	if (slot->nnode == TV_FLT_NODE_RULES)
		return -ENOSPC;
	slot->node_rules[slot->nnode].rule = *rule;
	slot->node_rules[slot->nnode].fires = 0;
	slot->nnode++;
	return 0;
}

int tv_flt_arm(struct tv_flt *flt, const char *point,
	       const struct tv_flt_rule *rule)
{
	int i = point_index(point);

	if (i < 0)
		return -ENOENT;
	if (!(rule->probability >= 0.0 && rule->probability <= 1.0) ||
	    (rule->before_ns && rule->before_ns <= rule->after_ns))
		return -EINVAL;
	if (rule->has_node)
		return arm_node_rule(&flt->slots[i], point, rule);
	flt->slots[i].armed = true;
	flt->slots[i].rule = *rule;
	return 0;
}

void tv_flt_set_clock(struct tv_flt *flt, uint64_t (*now_ns)(void *ctx),
		      void *ctx)
{
	flt->now_ns = now_ns;
	flt->clock_ctx = ctx;
}

void tv_flt_set_observer(struct tv_flt *flt, tv_flt_fire_fn fn, void *ctx)
{
	flt->observe = fn;
	flt->observe_ctx = ctx;
}

/* Is this hit of an armed point one that fires?  Draws only when needed. */
static bool rule_fires(struct tv_flt *flt, const struct tv_flt_rule *r,
		       uint64_t hit, uint64_t fires)
{
	uint64_t now = flt->now_ns ? flt->now_ns(flt->clock_ctx) : 0;

	if (r->nth && hit < r->nth)
		return false;
	if (r->count && fires >= r->count)
		return false;
	if (now < r->after_ns || (r->before_ns && now >= r->before_ns))
		return false;
	if (r->probability >= 1.0)
		return true;
	/* 53 random bits: an exact double in [0, 1). */
	return (double)(tv_prng_next(&flt->prng) >> 11) * 0x1p-53 <
	       r->probability;
}

static bool node_rule_fires(struct tv_flt *flt, struct flt_slot *slot,
			    int64_t *arg_p);

bool tv__flt_decide(const char *point, int64_t *arg_p)
{
	struct tv_flt *flt = active_flt;
	struct flt_slot *slot;
	int i;

	if (!flt)
		return false;
	i = point_index(point);
	if (i < 0)
		return false;
	slot = &flt->slots[i];
	if (!slot->armed && !slot->nnode)
		return false;
	if (tv__flt_site)
		tv__flt_site->decided = true;
	slot->stats.hits++;
	if (!node_rule_fires(flt, slot, arg_p)) {
		if (!slot->armed || !rule_fires(flt, &slot->rule,
						slot->stats.hits,
						slot->rule_fires))
			return false;
		slot->rule_fires++;
		*arg_p = slot->rule.arg;
	}
	slot->stats.fires++;
	if (flt->observe)
		flt->observe(flt->observe_ctx, point, slot->stats.hits);
	return true;
}

/* The first of the point's node rules for this site's node that fires. */
static bool node_rule_fires(struct tv_flt *flt, struct flt_slot *slot,
			    int64_t *arg_p)
{
	const struct tv__flt_site *site = tv__flt_site;

	if (!site)
		return false;
	for (uint32_t k = 0; k < slot->nnode; k++) {
		struct flt_node_rule *nr = &slot->node_rules[k];

		if (nr->rule.node != site->node ||
		    !rule_fires(flt, &nr->rule, site->hit, nr->fires))
			continue;
		nr->fires++;
		*arg_p = nr->rule.arg;
		return true;
	}
	return false;
}

/*
 * libfiu fired a point the injector was not asked about (fiu-ctrl,
 * fiu-run): counted and observed like the injector's own firings, by the
 * injector the firing device was wrapped with, active or not yet (a
 * fiu-ctrl firing may come while a node still connects).
 */
void tv__flt_external(struct tv_flt *flt, const char *point)
{
	int i = point_index(point);

	if (i < 0)
		return;
	pthread_mutex_lock(&decide_lock);
	flt->slots[i].stats.fires++;
	if (flt->observe)
		flt->observe(flt->observe_ctx, point, 0);
	pthread_mutex_unlock(&decide_lock);
}

bool tv_flt_firing_site(uint32_t *node_p, uint64_t *hit_p)
{
	const struct tv__flt_site *site = tv__flt_site;

	if (!site || site->node == UINT32_MAX)
		return false;
	*node_p = site->node;
	*hit_p = site->hit;
	return true;
}


/* The rule's arg reaches the point as fiu_failinfo(): libfiu's own path. */

static int fiu_external(const char *name, int *failnum, void **failinfo,
			unsigned int *flags)
{
	int64_t arg = 0;
	bool fire;

	pthread_mutex_lock(&decide_lock);
	fire = tv__flt_decide(name, &arg);
	pthread_mutex_unlock(&decide_lock);
	if (!fire)
		return 0;
	*failinfo = (void *)(intptr_t)arg;
	return 1;
}

uint64_t tv__flt_draw(uint64_t below)
{
	uint64_t v = 0;

	pthread_mutex_lock(&decide_lock);
	if (active_flt && below)
		v = tv_prng_below(&active_flt->prng, below);
	pthread_mutex_unlock(&decide_lock);
	return v;
}

static bool slot_armed(const struct flt_slot *slot)
{
	return slot->armed || slot->nnode;
}

int tv_flt_activate(struct tv_flt *flt)
{
	size_t i;
	int ret;

	if (active_flt && active_flt != flt)
		return -EBUSY;
	ret = fiu_init(0);
	if (ret)
		return -EIO;
	for (i = 0; i < NPOINTS; i++) {
		if (!slot_armed(&flt->slots[i]))
			continue;
		/* A rule can fire: every point asks libfiu from now on. */
		tv_engine_fault_points_live();
		ret = fiu_enable_external(points[i].name, 1, NULL, 0,
					  fiu_external);
		if (ret)
			goto err;
	}
	active_flt = flt;
	flt->active = true;
	return 0;

err:
	while (i-- > 0)
		if (slot_armed(&flt->slots[i]))
			fiu_disable(points[i].name);
	return -EIO;
}

void tv_flt_deactivate(struct tv_flt *flt)
{
	size_t i;

	if (!flt->active)
		return;
	for (i = 0; i < NPOINTS; i++)
		if (slot_armed(&flt->slots[i]))
			fiu_disable(points[i].name);
	active_flt = NULL;
	flt->active = false;
}

int tv_flt_stats(const struct tv_flt *flt, const char *point,
		 struct tv_flt_point_stats *stats_p)
{
	int i = point_index(point);

	if (i < 0)
		return -ENOENT;
	*stats_p = flt->slots[i].stats;
	return 0;
}

uint64_t tv_flt_total_fires(const struct tv_flt *flt)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < NPOINTS; i++)
		n += flt->slots[i].stats.fires;
	return n;
}
