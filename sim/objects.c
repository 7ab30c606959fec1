/*
 * Devices, PDs, MRs and CQs of the simulated nodes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fiu-local.h>

#include "sim_priv.h"

/* ---- device ------------------------------------------------------------ */

int sim_op_query_device(struct tv_vf_device *dev,
			struct tv_vf_device_attr *attr_p)
{
	struct sim_node *node = to_sim_node(dev);
	const struct tv_sim_config *cfg = &node->sim->cfg;
	struct tv_vf_device_attr attr;

	memset(&attr, 0, sizeof(attr));
	snprintf(attr.name, sizeof(attr.name), "tvsim%u", node->id);
	attr.max_mr_size = SIM_MAX_MR_SIZE;
	attr.max_qp = SIM_MAX_QP;
	attr.max_qp_wr = cfg->max_qp_wr;
	attr.max_sge = SIM_MAX_SGE;
	attr.max_cq = SIM_MAX_CQ;
	attr.max_cqe = cfg->max_cqe;
	attr.max_mr = cfg->max_mr;
	attr.max_qp_rd_atom = cfg->max_qp_rd_atom;
	attr.max_qp_init_rd_atom = cfg->max_qp_init_rd_atom;
	attr.phys_port_cnt = 1;
	attr.atomic_cap = cfg->no_atomics ? TV_ATOMIC_NONE : TV_ATOMIC_HCA;
	*attr_p = attr;
	return 0;
}

int sim_op_query_port(struct tv_vf_device *dev, uint8_t port_num,
		      struct tv_vf_port_attr *attr_p)
{
	struct sim_node *node = to_sim_node(dev);
	struct tv_vf_port_attr attr;

	if (port_num != SIM_PORT)
		return -EINVAL;
	memset(&attr, 0, sizeof(attr));
	attr.state = TV_PORT_ACTIVE;
	attr.max_mtu = TV_MTU_4096;
	attr.active_mtu = node->sim->cfg.active_mtu;
	attr.gid_tbl_len = 1;
	attr.lid = (uint16_t)(node->id + 1);
	attr.pkey_tbl_len = 1;
	attr.link_layer = 2; /* Ethernet: RoCE */
	*attr_p = attr;
	return 0;
}

/* GID of node n: fe80::7476:0:<n as 32-bit big endian> ("tv"). */
void sim_gid_of(uint32_t node, uint8_t gid_p[16])
{
	memset(gid_p, 0, 16);
	gid_p[0] = 0xfe;
	gid_p[1] = 0x80;
	gid_p[8] = 't';
	gid_p[9] = 'v';
	gid_p[12] = (uint8_t)(node >> 24);
	gid_p[13] = (uint8_t)(node >> 16);
	gid_p[14] = (uint8_t)(node >> 8);
	gid_p[15] = (uint8_t)node;
}

uint32_t sim_gid_node(const struct tv_sim *sim, const uint8_t gid[16])
{
	uint8_t expect[16];
	uint32_t node;

	node = (uint32_t)gid[12] << 24 | (uint32_t)gid[13] << 16 |
	       (uint32_t)gid[14] << 8 | gid[15];
	sim_gid_of(node, expect);
	if (memcmp(gid, expect, 16) || node >= sim->cfg.num_nodes)
		return UINT32_MAX;
	return node;
}

int sim_op_query_gid(struct tv_vf_device *dev, uint8_t port_num, int index,
		     uint8_t gid_p[16])
{
	if (port_num != SIM_PORT || index != 0)
		return -EINVAL;
	sim_gid_of(to_sim_node(dev)->id, gid_p);
	return 0;
}

/* ---- PD ---------------------------------------------------------------- */

int sim_op_alloc_pd(struct tv_vf_device *dev, struct tv_vf_pd **pd_p)
{
	struct sim_node *node = to_sim_node(dev);
	struct sim_pd *pd;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->base.dev = dev;
	sim_list_add_tail(&node->pds, &pd->link);
	node->nr_pds++;
	*pd_p = &pd->base;
	return 0;
}

void sim_free_pd(struct sim_pd *pd)
{
	struct sim_node *node = to_sim_node(pd->base.dev);

	assert(!pd->nr_mrs && !pd->nr_qps);
	assert(node->nr_pds > 0);
	sim_list_del(&pd->link);
	node->nr_pds--;
	free(pd);
}

int sim_op_dealloc_pd(struct tv_vf_pd *pd)
{
	struct sim_pd *spd = to_sim_pd(pd);

	if (spd->nr_mrs || spd->nr_qps)
		return -EBUSY;
	sim_free_pd(spd);
	return 0;
}

/* ---- MR ---------------------------------------------------------------- */

static int mr_slots_grow(struct sim_node *node)
{
	uint32_t ncap = node->mr_slots_cap ? node->mr_slots_cap * 2 : 64;
	struct sim_mr **slots;
	uint8_t *gen;
	uint32_t *fr;

	slots = realloc(node->mr_slots, ncap * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	node->mr_slots = slots;
	gen = realloc(node->mr_slot_gen, ncap * sizeof(*gen));
	if (!gen)
		return -ENOMEM;
	node->mr_slot_gen = gen;
	fr = realloc(node->mr_free, ncap * sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	node->mr_free = fr;
	node->mr_slots_cap = ncap;
	return 0;
}

/*
 * A free slot.  A reused slot gets the next generation, so a stale key
 * (kept by a buggy peer after dereg) misses for 127 reuses.
 */
static int mr_slot_alloc(struct sim_node *node, uint32_t *slot_p)
{
	uint32_t slot;
	int ret;

	if (node->mr_nr_free) {
		slot = node->mr_free[--node->mr_nr_free];
		node->mr_slot_gen[slot]++;
	} else {
		if (node->mr_slots_used == node->mr_slots_cap) {
			ret = mr_slots_grow(node);
			if (ret)
				return ret;
		}
		slot = node->mr_slots_used++;
		/* The first generation comes from the seed. */
		node->mr_slot_gen[slot] = (uint8_t)tv_prng_next(&node->prng);
	}
	*slot_p = slot;
	return 0;
}

static int mr_check(struct sim_node *node, struct tv_vf_pd *pd, void *addr,
		    size_t length, uint32_t access)
{
	if (!addr || !length || length > SIM_MAX_MR_SIZE)
		return -EINVAL;
	if ((uintptr_t)addr + length < (uintptr_t)addr)
		return -EINVAL;
	if (access & ~SIM_ACCESS_ALL)
		return -EINVAL;
	/* As ibverbs: remote write and remote atomic need local write. */
	if ((access & (TV_ACCESS_REMOTE_WRITE | TV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & TV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if ((access & TV_ACCESS_REMOTE_ATOMIC) && node->sim->cfg.no_atomics)
		return -EOPNOTSUPP;
	if (node->nr_mrs >= node->sim->cfg.max_mr)
		return -ENOMEM;
	return 0;
}

int sim_op_reg_mr(struct tv_vf_pd *pd, void *addr, size_t length,
		  uint32_t access, struct tv_vf_mr **mr_p)
{
	struct sim_node *node = to_sim_node(pd->dev);
	struct sim_mr *mr;
	uint32_t slot, key;
	int ret;

	if (node->fail_reg_mr_n) {
		node->fail_reg_mr_n--;
		return node->fail_reg_mr_err;
	}
	ret = mr_check(node, pd, addr, length, access);
	if (ret)
		return ret;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	ret = mr_slot_alloc(node, &slot);
	if (ret)
		goto err_slot;
	assert(slot + 1 < (1u << 24));
	/* lkey even, rkey odd: using one for the other is caught. */
	key = (slot + 1) << 8 | (uint32_t)(node->mr_slot_gen[slot] & 0x7f) << 1;
	mr->base = (struct tv_vf_mr){
		.pd = pd, .addr = addr, .length = length,
		.lkey = key, .rkey = key | 1, .access = access,
	};
	mr->slot = slot;
	node->mr_slots[slot] = mr;
	sim_list_add_tail(&node->mrs, &mr->link);
	node->nr_mrs++;
	to_sim_pd(pd)->nr_mrs++;
	*mr_p = &mr->base;
	return 0;

err_slot:
	free(mr);
	return ret;
}

struct sim_mr *sim_mr_lookup(struct sim_node *node, uint32_t key, bool rkey)
{
	uint32_t slot = (key >> 8) - 1; /* key 0 wraps: never a slot */
	struct sim_mr *mr;

	if (slot >= node->mr_slots_used)
		return NULL;
	mr = node->mr_slots[slot];
	if (!mr || (rkey ? mr->base.rkey : mr->base.lkey) != key)
		return NULL;
	return mr;
}

void sim_free_mr(struct sim_mr *mr)
{
	struct sim_node *node = to_sim_node(mr->base.pd->dev);
	struct sim_pd *pd = to_sim_pd(mr->base.pd);

	assert(node->mr_slots[mr->slot] == mr);
	assert(pd->nr_mrs > 0 && node->nr_mrs > 0);
	node->mr_slots[mr->slot] = NULL;
	node->mr_free[node->mr_nr_free++] = mr->slot;
	sim_list_del(&mr->link);
	node->nr_mrs--;
	pd->nr_mrs--;
	free(mr);
}

int sim_op_dereg_mr(struct tv_vf_mr *mr)
{
	sim_free_mr(to_sim_mr(mr));
	return 0;
}

uint64_t sim_canon_addr(struct tv_sim *sim, uint32_t node, uint32_t rkey,
			uint64_t addr)
{
	struct sim_mr *mr;

	if (node >= sim->cfg.num_nodes)
		return UINT64_MAX;
	mr = sim_mr_lookup(&sim->nodes[node], rkey, true);
	if (!mr || addr < (uintptr_t)mr->base.addr)
		return UINT64_MAX;
	return addr - (uintptr_t)mr->base.addr;
}

/* ---- CQ ---------------------------------------------------------------- */

int sim_op_create_cq(struct tv_vf_device *dev, uint32_t cqe,
		     struct tv_vf_cq **cq_p)
{
	struct sim_node *node = to_sim_node(dev);
	struct sim_cq *cq;

	if (!cqe || cqe > node->sim->cfg.max_cqe)
		return -EINVAL;
	if (node->nr_cqs >= SIM_MAX_CQ)
		return -ENOMEM;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cq->ring = calloc(cqe, sizeof(*cq->ring));
	cq->sq_idx = calloc(cqe, sizeof(*cq->sq_idx));
	if (!cq->ring || !cq->sq_idx) {
		free(cq->sq_idx);
		free(cq->ring);
		free(cq);
		return -ENOMEM;
	}
	cq->base.dev = dev;
	cq->base.cqe = cqe;
	cq->node = node;
	sim_list_add_tail(&node->cqs, &cq->link);
	node->nr_cqs++;
	*cq_p = &cq->base;
	return 0;
}

void sim_free_cq(struct sim_cq *cq)
{
	assert(!cq->nr_qps);
	assert(cq->node->nr_cqs > 0);
	sim_list_del(&cq->link);
	cq->node->nr_cqs--;
	free(cq->sq_idx);
	free(cq->ring);
	free(cq);
}

int sim_op_destroy_cq(struct tv_vf_cq *cq)
{
	struct sim_cq *scq = to_sim_cq(cq);

	if (scq->nr_qps)
		return -EBUSY;
	sim_free_cq(scq);
	return 0;
}

/*
 * mlx5 profile: polling a send CQE gives back the slots of its WR and of
 * every WR before it on that QP (rdma-core mlx5 cq.c, wq->tail =
 * wqe_head[idx] + 1).  A QP destroyed since has no number any more; one
 * reset since has moved sq_free past the index already.
 */
static void cq_release_slots(struct sim_cq *cq, const struct tv_vf_wc *wc,
			     uint64_t sq_idx)
{
	struct tv_sim *sim = cq->node->sim;
	struct sim_qp *qp;

	if (sq_idx == SIM_NO_SLOT || sim_is_rxe(sim))
		return;
	qp = sim_qp_lookup(sim, cq->node->id, wc->qp_num);
	if (!qp || sq_idx < qp->sq_free)
		return;
	assert(sq_idx < qp->sq_head);
	qp->sq_free = sq_idx + 1;
}

int sim_op_poll_cq(struct tv_vf_cq *cq, int num_entries, struct tv_vf_wc *wc)
{
	struct sim_cq *scq = to_sim_cq(cq);
	int n = 0;

	if (num_entries < 0 || (num_entries && !wc))
		return -EINVAL;
	if (scq->overflow)
		return -EOVERFLOW;
	while (n < num_entries && scq->count) {
		wc[n] = scq->ring[scq->head];
		cq_release_slots(scq, &wc[n], scq->sq_idx[scq->head]);
		n++;
		scq->head = (scq->head + 1) % scq->base.cqe;
		scq->count--;
	}
	return n;
}

/* Overflow is an error, never a silent loss: every attached QP fails. */
static void sim_cq_overflow(struct tv_sim *sim, struct sim_cq *cq)
{
	struct tv_sim_event ev;
	struct sim_list *it;

	assert(!cq->overflow);
	cq->overflow = true;
	sim_event_init(&ev, TV_SIM_EV_CQ_OVERFLOW, cq->node->id);
	ev.length = cq->base.cqe;
	sim_emit(sim, &ev, 0);
	sim_mark_runnable(sim, cq->node);
	for (it = cq->node->qps.next; it != &cq->node->qps; it = it->next) {
		struct sim_qp *qp = TV_CONTAINER_OF(it, struct sim_qp, link);

		if (qp->base.state == TV_QPS_ERR)
			continue;
		if (qp->base.send_cq == &cq->base ||
		    qp->base.recv_cq == &cq->base)
			sim_qp_to_err(sim, qp, TV_WC_WR_FLUSH_ERR);
	}
}

void sim_cq_push(struct tv_sim *sim, struct sim_cq *cq,
		 const struct tv_vf_wc *wc, uint64_t sq_idx)
{
	struct tv_sim_event ev;
	uint32_t at;

	if (cq->overflow)
		return; /* already reported; the CQ is unusable */
	fiu_do_on("sim/cq/overflow", cq->count = cq->base.cqe);
	if (cq->count == cq->base.cqe) {
		sim_cq_overflow(sim, cq);
		return;
	}
	at = (cq->head + cq->count) % cq->base.cqe;
	cq->ring[at] = *wc;
	cq->sq_idx[at] = sq_idx;
	cq->count++;
	sim->stats.cqes++;
	if (wc->status != TV_WC_SUCCESS)
		sim->stats.error_cqes++;
	sim_event_init(&ev, TV_SIM_EV_CQE, cq->node->id);
	ev.qp_num = wc->qp_num;
	ev.opcode = wc->opcode;
	ev.status = wc->status;
	ev.has_imm = !!(wc->wc_flags & TV_WC_WITH_IMM);
	ev.imm = ev.has_imm ? wc->imm_data : 0;
	ev.wr_id = wc->wr_id;
	ev.length = wc->byte_len;
	sim_emit(sim, &ev, 0);
	sim_mark_runnable(sim, cq->node);
}
