/*
 * Placement inside one RDMA write (enum tv_sim_placement).
 *
 * In IN_ORDER mode a write's bytes land when it is delivered (xfer.c).  In
 * the other modes its destination is cut into aligned units (8 or 128
 * bytes), the units are shared among G <= TV_SIM_PLACE_GROUPS groups, and
 * each group lands at its own seeded time between the first byte leaving
 * the requester and the delivery, which then places whatever is left (all
 * of it again: the bytes are the same).  A group is placed only while the
 * write could still succeed (responder there, rkey and bounds good), so a
 * write that ends in a NAK touches nothing, as on hardware.
 *
 * RC keeps write-after-write order to the same bytes: no group of a write
 * lands before the write ahead of it on the QP was delivered (the times
 * start after its arrival, and a group whose write is not the next one to
 * execute is not placed).
 */
#include <errno.h>
#include <string.h>

#include "sim_priv.h"

const char *tv_sim_placement_str(enum tv_sim_placement placement)
{
	switch (placement) {
	case TV_SIM_PLACE_IN_ORDER: return "in_order";
	case TV_SIM_PLACE_RANDOM8: return "random8";
	case TV_SIM_PLACE_BLOCK128: return "block128";
	}
	return NULL;
}

int tv_sim_placement_parse(const char *name,
			   enum tv_sim_placement *placement_p)
{
	static const enum tv_sim_placement all[] = {
		TV_SIM_PLACE_IN_ORDER, TV_SIM_PLACE_RANDOM8,
		TV_SIM_PLACE_BLOCK128,
	};

	for (size_t i = 0; name && i < sizeof(all) / sizeof(all[0]); i++) {
		if (!strcmp(name, tv_sim_placement_str(all[i]))) {
			*placement_p = all[i];
			return 0;
		}
	}
	return -EINVAL;
}

static uint32_t unit_bytes(enum tv_sim_placement placement)
{
	return placement == TV_SIM_PLACE_BLOCK128 ? 128 : 8;
}

/* Units of the destination range [addr, addr + len), len > 0. */
static uint64_t units_of(uint64_t addr, uint32_t len, uint32_t unit)
{
	return (addr + len - 1) / unit - addr / unit + 1;
}

static uint32_t groups_of(uint64_t units)
{
	return units < TV_SIM_PLACE_GROUPS ? (uint32_t)units :
					     TV_SIM_PLACE_GROUPS;
}

/* splitmix64's finaliser: a unit's group from the write's salt. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static bool placed_write(const struct sim_swr *swr)
{
	return (swr->opcode == TV_WR_RDMA_WRITE ||
		swr->opcode == TV_WR_RDMA_WRITE_WITH_IMM) && swr->length;
}

int sim_place_schedule(struct tv_sim *sim, struct sim_qp *qp, uint64_t idx,
		       uint64_t arrive_ns)
{
	struct sim_swr *swr = sim_sq_slot(qp, idx);
	struct sim_ev ev = {
		.kind = SIM_EV_PLACE, .node = qp->node->id,
		.qpn = qp->base.qp_num, .gen = qp->tx_gen, .idx = idx,
	};
	uint64_t lo = swr->depart_ns, span;
	uint32_t groups;
	int ret;

	if (sim->cfg.placement == TV_SIM_PLACE_IN_ORDER || !placed_write(swr))
		return 0;
	/* Strictly after the write ahead of it arrived (same-time events
	 * run in seeded order). */
	if (qp->last_arrival_ns >= lo)
		lo = qp->last_arrival_ns + 1;
	if (lo > arrive_ns)
		return 0; /* no room: it all lands on delivery */
	swr->place_salt = tv_prng_next(&sim->place_prng);
	swr->place_tok = ++qp->place_tok;
	ev.tok = swr->place_tok;
	groups = groups_of(units_of(swr->remote_addr, swr->length,
				    unit_bytes(sim->cfg.placement)));
	span = arrive_ns - lo + 1;
	for (uint32_t g = 0; g < groups; g++) {
		ev.part = g;
		ret = sim_schedule(sim, lo + tv_prng_below(&sim->place_prng,
							   span), &ev);
		if (ret)
			return ret;
	}
	return 0;
}

/* Copy message bytes [off, off + n) from the local segments to dst. */
static void copy_range(uint8_t *dst, const struct sim_seg *local, uint32_t ns,
		       uint64_t off, uint32_t n)
{
	for (uint32_t i = 0; i < ns && n; i++) {
		uint32_t take;

		if (off >= local[i].len) {
			off -= local[i].len;
			continue;
		}
		take = local[i].len - (uint32_t)off;
		if (take > n)
			take = n;
		memmove(dst, local[i].p + off, take);
		dst += take;
		n -= take;
		off = 0;
	}
}

/* Place the units of group g; dst is where the write's first byte goes. */
static void place_group(const struct sim_swr *swr, enum tv_sim_placement pl,
			uint8_t *dst, const struct sim_seg *local, uint32_t g)
{
	uint32_t unit = unit_bytes(pl);
	uint64_t first = swr->remote_addr / unit;
	uint64_t end = swr->remote_addr + swr->length;
	uint64_t units = units_of(swr->remote_addr, swr->length, unit);
	uint32_t groups = groups_of(units);
	bool drawn = units <= TV_SIM_PLACE_DRAWN;
	/* Dealt round-robin: the first unit of group g, in seeded order. */
	uint64_t u = drawn ? 0 : (g + groups - swr->place_salt % groups) %
					 groups;

	for (; u < units; u += drawn ? 1 : groups) {
		uint64_t lo = (first + u) * unit, hi = lo + unit;

		if (drawn && mix64(swr->place_salt + u) % groups != g)
			continue;
		if (lo < swr->remote_addr)
			lo = swr->remote_addr;
		if (hi > end)
			hi = end;
		copy_range(dst + (lo - swr->remote_addr), local, swr->num_sge,
			   lo - swr->remote_addr, (uint32_t)(hi - lo));
	}
}

bool sim_xfer_place(struct tv_sim *sim, const struct sim_ev *ev)
{
	struct sim_qp *req = sim_qp_lookup(sim, ev->node, ev->qpn);
	struct sim_seg local[SIM_MAX_SGE];
	struct sim_swr *swr;
	struct sim_qp *resp;
	uint8_t *dst;

	if (!req || ev->gen != req->tx_gen || ev->idx != req->sq_exec ||
	    req->sq_exec >= req->sq_tx)
		return false;
	swr = sim_sq_slot(req, ev->idx);
	if (swr->place_tok != ev->tok || !placed_write(swr))
		return false;
	resp = sim_find_responder(sim, req, sim_gid_node(sim, req->attr.dgid));
	if (!resp || sim_swr_local(req, swr, local))
		return true; /* delivery will fail it: nothing lands */
	dst = sim_remote_resolve(resp, swr->rkey, swr->remote_addr,
				 swr->length, TV_ACCESS_REMOTE_WRITE);
	if (!dst)
		return true;
	place_group(swr, sim->cfg.placement, dst, local, ev->part);
	return true;
}
