/*
 * The simulated world: nodes, links, virtual time, the event loop, progress
 * callbacks and the observable event stream with its hash.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>


#include "sim_priv.h"

/*
 * Small at first (it doubles as needed, handing out slots in the same
 * order whatever the start): a world is cheap to make, which the dispatch
 * fuzzer does for every input.
 */
#define SIM_EVQ_INITIAL 64u

void tv_sim_config_default(struct tv_sim_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = 1;
	cfg->num_nodes = 2;
	cfg->link.latency_ns = 1000;
	cfg->link.bytes_per_sec = 12500000000ull; /* 100 Gb/s */
	cfg->max_qp_wr = 4096;
	cfg->max_cqe = 65536;
	cfg->max_mr = 65536;
	/* max_qp_rd_atom, max_qp_init_rd_atom: 0, the profile's. */
	cfg->active_mtu = TV_MTU_4096;
	cfg->jitter_ns_max = 0;
}

/* Zero limits mean "the default"; impossible values are refused. */
static int sim_config_check(const struct tv_sim_config *in,
			    struct tv_sim_config *out_p)
{
	struct tv_sim_config def;
	struct tv_sim_config cfg = *in;

	tv_sim_config_default(&def);
	if (!cfg.num_nodes || cfg.num_nodes > SIM_MAX_NODES)
		return -EINVAL;
	if (!cfg.max_qp_wr)
		cfg.max_qp_wr = def.max_qp_wr;
	if (!cfg.max_cqe)
		cfg.max_cqe = def.max_cqe;
	if (!cfg.max_mr)
		cfg.max_mr = def.max_mr;
	if (!tv_sim_profile_str(cfg.profile))
		return -EINVAL;
	if (!cfg.max_qp_rd_atom)
		cfg.max_qp_rd_atom = sim_profile_rd_atom(cfg.profile);
	if (!cfg.max_qp_init_rd_atom)
		cfg.max_qp_init_rd_atom = sim_profile_rd_atom(cfg.profile);
	if (!cfg.active_mtu)
		cfg.active_mtu = def.active_mtu;
	if (cfg.active_mtu < TV_MTU_256 || cfg.active_mtu > TV_MTU_4096)
		return -EINVAL;
	/* MR keys hold the slot in 24 bits. */
	if (cfg.max_mr >= (1u << 24))
		return -EINVAL;
	/* The QP attributes are 8 bits and round up to a power of two. */
	if (cfg.max_qp_rd_atom > SIM_MAX_RD_ATOM ||
	    cfg.max_qp_init_rd_atom > SIM_MAX_RD_ATOM)
		return -EINVAL;
	if (!tv_sim_placement_str(cfg.placement))
		return -EINVAL;
	*out_p = cfg;
	return 0;
}

static void sim_node_init(struct tv_sim *sim, uint32_t id)
{
	struct sim_node *node = &sim->nodes[id];

	node->base.ops = sim_ops_table();
	node->sim = sim;
	node->id = id;
	tv_prng_fork(&sim->root, &node->prng);
	sim_list_init(&node->pds);
	sim_list_init(&node->mrs);
	sim_list_init(&node->cqs);
	sim_list_init(&node->qps);
	node->timer_at_ns = UINT64_MAX;
}

int tv_sim_create(const struct tv_sim_config *cfg, struct tv_sim **sim_p)
{
	struct tv_sim *sim;
	uint32_t n;
	int ret;

	if (!cfg || !sim_p)
		return -EINVAL;
	sim = calloc(1, sizeof(*sim));
	if (!sim)
		return -ENOMEM;
	ret = sim_config_check(cfg, &sim->cfg);
	if (ret)
		goto err_cfg;
	n = sim->cfg.num_nodes;
	ret = -ENOMEM;
	sim->nodes = calloc(n, sizeof(*sim->nodes));
	if (!sim->nodes)
		goto err_cfg;
	sim->links = calloc((size_t)n * n, sizeof(*sim->links));
	if (!sim->links)
		goto err_links;
	sim->runq = calloc(2 * (size_t)n, sizeof(*sim->runq));
	if (!sim->runq)
		goto err_runq;
	sim->runq_snap = sim->runq + n;
	ret = sim_evq_init(&sim->evq, SIM_EVQ_INITIAL);
	if (ret)
		goto err_evq;

	/* Fork order is part of the seed's meaning: keep it fixed. */
	tv_prng_init(&sim->root, sim->cfg.seed);
	tv_prng_fork(&sim->root, &sim->tie_prng);
	tv_prng_fork(&sim->root, &sim->net_prng);
	/* Not forked: a run in order draws nothing from it, and the root's
	 * streams (workloads fork theirs) stay what they were. */
	tv_prng_init(&sim->place_prng, sim->cfg.seed ^ 0x706c616365ull);
	for (uint32_t i = 0; i < n; i++)
		sim_node_init(sim, i);
	for (size_t i = 0; i < (size_t)n * n; i++)
		sim->links[i].cfg = sim->cfg.link;
	sim->hash = 0; /* content only: the seed shows through the events */
	*sim_p = sim;
	return 0;

err_evq:
	free(sim->runq);
err_runq:
	free(sim->links);
err_links:
	free(sim->nodes);
err_cfg:
	free(sim);
	return ret;
}

/* Frees every object of a node; returns how many there were. */
static int sim_node_teardown(struct sim_node *node)
{
	int leaked = 0;

	/* Dependents first: QPs hold CQs and PDs, MRs hold PDs. */
	while (node->qps.next != &node->qps) {
		sim_qp_free(TV_CONTAINER_OF(node->qps.next, struct sim_qp,
					    link));
		leaked++;
	}
	while (node->mrs.next != &node->mrs) {
		sim_free_mr(TV_CONTAINER_OF(node->mrs.next, struct sim_mr,
					    link));
		leaked++;
	}
	while (node->cqs.next != &node->cqs) {
		sim_free_cq(TV_CONTAINER_OF(node->cqs.next, struct sim_cq,
					    link));
		leaked++;
	}
	while (node->pds.next != &node->pds) {
		sim_free_pd(TV_CONTAINER_OF(node->pds.next, struct sim_pd,
					    link));
		leaked++;
	}
	assert(!node->nr_qps && !node->nr_mrs && !node->nr_cqs &&
	       !node->nr_pds);
	free(node->qp_tab);
	free(node->mr_slots);
	free(node->mr_slot_gen);
	free(node->mr_free);
	return leaked;
}

int tv_sim_destroy(struct tv_sim *sim)
{
	int leaked = 0;

	if (!sim)
		return 0;
	assert(!sim->in_callback);
	for (uint32_t i = 0; i < sim->cfg.num_nodes; i++)
		leaked += sim_node_teardown(&sim->nodes[i]);
	sim_evq_fini(&sim->evq);
	free(sim->runq);
	free(sim->links);
	free(sim->nodes);
	free(sim);
	return leaked;
}

int tv_sim_set_link(struct tv_sim *sim, uint32_t from, uint32_t to,
		    const struct tv_sim_link *link)
{
	uint32_t n = sim->cfg.num_nodes;

	if (from >= n || to >= n || !link)
		return -EINVAL;
	sim->links[(size_t)from * n + to].cfg = *link;
	return 0;
}

struct tv_vf_device *tv_sim_device(struct tv_sim *sim, uint32_t node)
{
	if (node >= sim->cfg.num_nodes)
		return NULL;
	return &sim->nodes[node].base;
}

uint32_t tv_sim_num_nodes(const struct tv_sim *sim)
{
	return sim->cfg.num_nodes;
}

void tv_sim_set_progress(struct tv_sim *sim, uint32_t node,
			 tv_sim_progress_fn fn, void *arg)
{
	assert(node < sim->cfg.num_nodes);
	if (node >= sim->cfg.num_nodes)
		return;
	sim->nodes[node].progress = fn;
	sim->nodes[node].progress_arg = arg;
}

void tv_sim_set_observer(struct tv_sim *sim, tv_sim_observer_fn fn, void *arg)
{
	sim->observer = fn;
	sim->observer_arg = arg;
}

uint64_t tv_sim_now_ns(const struct tv_sim *sim)
{
	return sim->now_ns;
}

void tv_sim_stats(const struct tv_sim *sim, struct tv_sim_stats *stats_p)
{
	*stats_p = sim->stats;
	stats_p->now_ns = sim->now_ns;
}

uint64_t tv_sim_event_hash(const struct tv_sim *sim)
{
	return sim->hash;
}

struct tv_prng *tv_sim_prng(struct tv_sim *sim)
{
	return &sim->root;
}

void tv_sim_fail_reg_mr(struct tv_sim *sim, uint32_t node, uint32_t n,
			int err)
{
	assert(node < sim->cfg.num_nodes);
	if (node >= sim->cfg.num_nodes)
		return;
	sim->nodes[node].fail_reg_mr_n = n;
	sim->nodes[node].fail_reg_mr_err = err < 0 ? err : -EIO;
}

/* ---- the event stream ---------------------------------------------------- */

void sim_event_init(struct tv_sim_event *ev, enum tv_sim_event_kind kind,
		    uint32_t node)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->node = node;
	ev->peer = UINT32_MAX;
}

/* One 64-bit word into the running hash (multiply-xorshift). */
static inline uint64_t hash_word(uint64_t h, uint64_t w)
{
	h ^= w;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

/*
 * Fold one event into the hash field by field, on values (not bytes, so
 * no padding and no host order): the same on any host, and cheap, since
 * it runs for every event.  remote_addr is folded as canon_addr, its
 * offset inside the MR its rkey names: a raw address is a pointer and
 * would differ from one process to the next.
 */
static uint64_t sim_hash_event(uint64_t h, const struct tv_sim_event *ev,
			       uint64_t canon_addr)
{
	h = hash_word(h, ev->seq);
	h = hash_word(h, ev->time_ns);
	h = hash_word(h, (uint64_t)ev->kind << 32 | ev->node);
	h = hash_word(h, (uint64_t)ev->peer << 32 | ev->qp_num);
	h = hash_word(h, (uint64_t)ev->opcode << 32 | ev->status);
	h = hash_word(h, (uint64_t)ev->imm << 32 | ev->has_imm);
	h = hash_word(h, ev->wr_id);
	h = hash_word(h, canon_addr);
	h = hash_word(h, (uint64_t)ev->rkey << 32 | ev->length);
	/* splitmix64's finaliser: every input bit reaches every output bit. */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

void sim_emit(struct tv_sim *sim, struct tv_sim_event *ev, uint64_t canon_addr)
{
	ev->seq = sim->ev_seq++;
	ev->time_ns = sim->now_ns;
	sim->hash = sim_hash_event(sim->hash, ev, canon_addr);
	if (sim->observer)
		sim->observer(sim->observer_arg, ev);
}

int sim_schedule(struct tv_sim *sim, uint64_t at_ns, const struct sim_ev *ev)
{
	/* The tie-break is drawn now, so it depends only on the seed and the
	 * order in which the run scheduled things. */
	assert(at_ns >= sim->now_ns);
	return sim_evq_push(&sim->evq, at_ns, tv_prng_next(&sim->tie_prng), ev);
}

int tv_sim_schedule(struct tv_sim *sim, uint64_t at_ns, uint32_t node,
		    tv_sim_user_fn fn, void *arg)
{
	struct sim_ev ev = {
		.kind = SIM_EV_USER, .node = node, .fn = fn, .arg = arg,
	};

	if (!fn || node >= sim->cfg.num_nodes || at_ns < sim->now_ns)
		return -EINVAL;
	return sim_schedule(sim, at_ns, &ev);
}

void sim_mark_runnable(struct tv_sim *sim, struct sim_node *node)
{
	node->runnable_wait = true;
	if (node->runnable_cb)
		return;
	node->runnable_cb = true;
	assert(sim->runq_len < sim->cfg.num_nodes);
	sim->runq[sim->runq_len++] = node->id;
}
