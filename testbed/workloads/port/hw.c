/*
 * The port workload on real verbs (`tensorverbs serve`, workload.h "real
 * verbs"): this process is one node.  Its proxy runs in the testbed's
 * loop (this thread), each of its programs' tasks in a producer thread of
 * its own, so the FIFO, the semaphores and the flush positions are shared
 * between real threads as in MSCCL++.  Queue pair endpoints and memory
 * handles go to the peers over the coordinator (tv_tb_hw_allgather, as
 * MSCCL++'s bootstrap), decoded as the hostile bytes they are; the
 * queue pairs are then connected directly (RTR/RTS with the peer's GID).
 *
 * Each time point starts the tasks of the programs that start then and
 * waits for them; at the end every node checks its own regions against
 * the programs' reference and its packets as they come.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fiu-local.h>

#include <tensorverbs/cm.h>
#include <tensorverbs/faults.h>
#include <tensorverbs/ibverbs.h>

#include "le.h"   /* engine/: little-endian bytes */
#include "pt.h"
#include "pt_hw.h"

#define PH_MSG_MAX 256

/* ---- the set-up blob: little-endian (le.h) ------------------------------- */

/*
 * magic, version, node, link count; the data and token handles; per link
 * of ours: pair index, QP number, PSN, LID, GID, our token's offset.
 */
static int blob_make(struct ph *h, uint8_t **blob_p, size_t *len_p)
{
	size_t len = PH_HEAD_BYTES + (size_t)h->nlinks * PH_LINK_BYTES;
	struct tv_port_mem_handle mh;
	uint8_t *b = calloc(1, len), *p;

	if (!b)
		return -ENOMEM;
	tv_le_put(b, PH_MAGIC, 4);
	tv_le_put(b + 4, PH_VERSION, 4);
	tv_le_put(b + 8, h->me, 4);
	tv_le_put(b + 12, h->nlinks, 4);
	tv_port_mem_handle(h->mdata, &mh);
	tv_port_mem_handle_encode(&mh, b + 16, TV_PORT_HANDLE_BYTES);
	tv_port_mem_handle(h->mtok, &mh);
	tv_port_mem_handle_encode(&mh, b + 16 + TV_PORT_HANDLE_BYTES,
				  TV_PORT_HANDLE_BYTES);
	for (uint32_t i = 0; i < h->nlinks; i++) {
		struct ph_link *l = &h->links[i];

		p = b + PH_HEAD_BYTES + (size_t)i * PH_LINK_BYTES;
		tv_le_put(p, l->pair, 4);
		tv_le_put(p + 4, l->ep.qp_num, 4);
		tv_le_put(p + 8, l->ep.psn, 4);
		tv_le_put(p + 12, l->ep.lid, 2);
		memcpy(p + 16, l->ep.gid, 16);
		tv_le_put(p + 32, l->token_off, 8);
	}
	*blob_p = b;
	*len_p = len;
	return 0;
}

int ph_blob_read(const uint8_t *b, size_t len, uint32_t n, uint32_t nodes,
		 struct ph_peer_info *pi, char *msg, size_t cap)
{
	uint32_t nl;

	if (len < PH_HEAD_BYTES || tv_le_get(b, 4) != PH_MAGIC ||
	    tv_le_get(b + 4, 4) != PH_VERSION || tv_le_get(b + 8, 4) != n) {
		snprintf(msg, cap, "node %u's set-up data is not ours (%zu "
			 "bytes, wrong magic, version or node)", n, len);
		return -EPROTO;
	}
	nl = (uint32_t)tv_le_get(b + 12, 4);
	if (nl > (len - PH_HEAD_BYTES) / PH_LINK_BYTES ||
	    len != PH_HEAD_BYTES + (size_t)nl * PH_LINK_BYTES ||
	    tv_port_mem_handle_decode(b + 16, TV_PORT_HANDLE_BYTES,
				      &pi->data) ||
	    tv_port_mem_handle_decode(b + 16 + TV_PORT_HANDLE_BYTES,
				      TV_PORT_HANDLE_BYTES, &pi->tok) ||
	    pi->data.node != n || pi->tok.node != n || n >= nodes) {
		snprintf(msg, cap, "node %u's set-up data is malformed (%u "
			 "links in %zu bytes, or bad memory handles)", n, nl,
			 len);
		return -EPROTO;
	}
	pi->links = b + PH_HEAD_BYTES;
	pi->nlinks = nl;
	return 0;
}

int ph_peer_link(const struct ph_peer_info *pi, uint32_t pair,
		 struct tv_vf_qp_endpoint *ep_p, uint64_t *tok_off_p)
{
	for (uint32_t i = 0; i < pi->nlinks; i++) {
		const uint8_t *p = pi->links + (size_t)i * PH_LINK_BYTES;

		if (tv_le_get(p, 4) != pair)
			continue;
		ep_p->qp_num = (uint32_t)tv_le_get(p + 4, 4);
		ep_p->psn = (uint32_t)tv_le_get(p + 8, 4);
		ep_p->lid = (uint16_t)tv_le_get(p + 12, 2);
		memcpy(ep_p->gid, p + 16, 16);
		*tok_off_p = tv_le_get(p + 32, 8);
		/*
		 * 24-bit QPN and PSN; a token word inside the token memory
		 * (a window under 8 bytes holds none: size - 8 would wrap).
		 */
		if (ep_p->qp_num > 0xffffff || ep_p->psn > 0xffffff ||
		    pi->tok.size_bytes < 8 ||
		    *tok_off_p > pi->tok.size_bytes - 8 || (*tok_off_p & 7))
			return -EPROTO;
		return 0;
	}
	return -ENOENT;
}

/* ---- opening ------------------------------------------------------------------ */

static int open_device(struct ph *h, char *msg, size_t cap)
{
	struct tv_tb_hw_device d;
	int ret = tv_tb_hw_open_device(h->hw, &d, msg, cap);

	if (ret)
		return ret;
	h->cm = d.cm;
	h->base = d.base;
	h->dev = d.dev;
	return 0;
}

static int open_engine(struct ph *h, char *msg, size_t cap)
{
	const struct pt_scenario *sc = h->sc;
	struct tv_port_config cfg;
	size_t dbytes = (sc->node_bytes[h->me] + 4095) & ~(size_t)4095;
	size_t tbytes = ((size_t)sc->node_sems[h->me] * 64 + 4095) &
			~(size_t)4095;
	int ret;

	pt_engine_config(sc, h->me, &cfg);
	tv_ibv_connect_cfg(h->base, &h->connect);
	cfg.connect = &h->connect;
	cfg.observe = ph_observe;
	cfg.observe_ctx = h;
	h->data_bytes = dbytes ? dbytes : 4096;
	h->token_bytes = tbytes ? tbytes : 4096;
	h->data = aligned_alloc(4096, h->data_bytes);
	h->tokens = aligned_alloc(4096, h->token_bytes);
	if (!h->data || !h->tokens)
		return -ENOMEM;
	memset(h->data, 0, h->data_bytes);
	memset(h->tokens, 0, h->token_bytes);
	ret = tv_port_ctx_create(h->dev, &cfg, &h->ctx);
	if (!ret)
		h->imm_mode = tv_port_ctx_signal_mode(h->ctx) ==
			      TV_PORT_SIGNAL_WRITE_IMM;
	if (!ret)
		ret = tv_port_mem_register(h->ctx, h->data, h->data_bytes,
					   &h->mdata);
	if (!ret)
		ret = tv_port_mem_register(h->ctx, h->tokens, h->token_bytes,
					   &h->mtok);
	if (!ret)
		ret = tv_port_proxy_create(h->ctx, NULL, NULL, &h->proxy);
	if (!ret)
		ret = tv_port_proxy_add_local(h->proxy, h->mdata, &h->local_id);
	if (ret)
		snprintf(msg, cap, "the port engine: %s", strerror(-ret));
	return ret;
}

/* Our end of every pair we are in: a QP and a semaphore, not connected. */
static int open_links(struct ph *h, char *msg, size_t cap)
{
	const struct pt_scenario *sc = h->sc;
	uint32_t tok = 0;
	int ret = 0;

	h->links = calloc(sc->npairs + 1, sizeof(*h->links));
	if (!h->links)
		return -ENOMEM;
	for (size_t i = 0; !ret && i < sc->npairs; i++) {
		const struct pt_pair *p = &sc->pairs[i];
		struct ph_link *l = &h->links[h->nlinks];

		if (p->a != h->me && p->b != h->me)
			continue;
		h->nlinks++;
		l->pair = (uint32_t)i;
		l->peer = p->a == h->me ? p->b : p->a;
		l->token_off = (uint64_t)tok++ * 64;
		ret = tv_port_conn_create(h->ctx, l->peer, &l->conn);
		if (!ret)
			ret = tv_port_conn_endpoint(l->conn, &l->ep);
		if (!ret)
			ret = tv_port_sem_create(l->conn, h->mtok, l->token_off,
						 &l->sem);
	}
	if (ret)
		snprintf(msg, cap, "a connection: %s", strerror(-ret));
	return ret;
}

static int ph_open(struct tv_tb_hw *hw, void **st_p, char *msg, size_t cap)
{
	struct ph *h = calloc(1, sizeof(*h));
	int ret;

	if (!h)
		return -ENOMEM;
	*st_p = h;
	h->hw = hw;
	h->sc = tv_tb_scenario_wl(tv_tb_hw_scenario(hw));
	h->me = tv_tb_hw_node(hw);
	h->seed = tv_tb_hw_seed(hw);
	pthread_mutex_init(&h->lock, NULL);
	ret = open_device(h, msg, cap);
	if (!ret)
		ret = open_engine(h, msg, cap);
	if (!ret)
		ret = open_links(h, msg, cap);
	if (!ret)
		ret = ph_tasks_init(h);
	return ret;
}

/* ---- connecting --------------------------------------------------------------- */

static int link_connect(struct ph *h, struct ph_link *l,
			const struct ph_peer_info *pi, char *msg, size_t cap)
{
	struct tv_vf_qp_endpoint ep;
	uint64_t tok_off;
	uint32_t dst;
	int ret = ph_peer_link(pi, l->pair, &ep, &tok_off);

	if (ret) {
		snprintf(msg, cap, "node %u's set-up data %s pair %u",
			 l->peer, ret == -ENOENT ? "lacks" : "is bad for",
			 l->pair);
		return -EPROTO;
	}
	ret = tv_port_conn_connect(l->conn, &ep);
	if (!ret)
		ret = tv_port_sem_set_remote(l->sem, &pi->tok, tok_off);
	if (!ret)
		ret = tv_port_proxy_add_sem(h->proxy, l->sem, &l->sem_id);
	if (!ret && !h->has_remote[l->peer]) {
		ret = tv_port_proxy_add_remote(h->proxy, &pi->data,
					       &h->remote_id[l->peer]);
		h->has_remote[l->peer] = !ret;
	}
	dst = h->remote_id[l->peer];
	if (!ret)
		ret = tv_port_chan_create(h->proxy, l->sem_id, dst, h->local_id,
					  &l->chan);
	if (ret && !msg[0])
		snprintf(msg, cap, "connecting to node %u: %s", l->peer,
			 strerror(-ret));
	return ret;
}

static int ph_connect(struct tv_tb_hw *hw, void *st)
{
	struct ph *h = st;
	uint8_t *mine = NULL, **all = NULL;
	size_t len = 0, *lens = NULL;
	char msg[PH_MSG_MAX] = "";
	int ret = blob_make(h, &mine, &len);

	if (!ret)
		ret = tv_tb_hw_allgather(hw, mine, len, &all, &lens);
	for (uint32_t i = 0; !ret && i < h->nlinks; i++) {
		struct ph_link *l = &h->links[i];
		struct ph_peer_info pi;

		ret = ph_blob_read(all[l->peer], lens[l->peer], l->peer,
				h->sc->nodes, &pi, msg, sizeof(msg));
		if (!ret)
			ret = link_connect(h, l, &pi, msg, sizeof(msg));
	}
	if (ret)
		tv_tb_hw_fail(hw, TV_TB_FK_RUNNER, "set-up: %s",
			      msg[0] ? msg : strerror(-ret));
	for (uint32_t n = 0; all && n < h->sc->nodes; n++)
		free(all[n]);
	free(all);
	free(lens);
	free(mine);
	return ret;
}

/* ---- the loop ----------------------------------------------------------------- */

static int ph_progress(struct tv_tb_hw *hw, void *st)
{
	struct ph *h = st;

	return h->proxy ? tv_port_proxy_progress(h->proxy, 64) : 0;
}

/*
 * The proxy polls its FIFO (producers write memory, nothing wakes it):
 * while tasks run it only yields; with none, it sleeps on the device
 * until a completion or the coordinator's sockets.
 */
static void ph_sleep(struct tv_tb_hw *hw, void *st, uint64_t until_ns,
		     struct pollfd *extra, unsigned nextra)
{
	struct ph *h = st;

	if (ph_tasks_running(h) || !tv_port_proxy_idle(h->proxy)) {
		sched_yield();
		return;
	}
	tv_tb_hw_sleep_device(h->dev, until_ns, extra, nextra);
}

static int ph_times(struct tv_tb_hw *hw, void *st, uint64_t **times_p,
		    size_t *n_p)
{
	struct ph *h = st;
	uint64_t *t = calloc(h->sc->nprogs + 1, sizeof(*t));
	size_t n = 0;

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < h->sc->nprogs; i++)
		n = tv_tb_times_add(t, n, h->sc->progs[i].start_ns);
	*times_p = t;
	*n_p = n;
	return 0;
}

static bool cond_idle(void *ctx, uint64_t arg)
{
	struct ph *h = ctx;

	(void)arg;
	return tv_port_proxy_idle(h->proxy);
}

/* Our work done, then everyone's: only then are our regions final. */
static int ph_finish(struct tv_tb_hw *hw, void *st)
{
	struct ph *h = st;
	int ret = tv_tb_hw_wait(hw, cond_idle, h, 0,
				"this node's posts to complete");

	if (!ret)
		ret = tv_tb_hw_barrier(hw, "every node's posts to complete");
	if (!ret)
		ph_check_final(h);
	return ret;
}

static void ph_quiesce(struct tv_tb_hw *hw, void *st)
{
	(void)hw;
	(void)st;
}

static int ph_close(struct tv_tb_hw *hw, void *st)
{
	struct ph *h = st;
	struct tv_tb_hw_device d;
	int ret = 0, r;

	ph_tasks_join(h);
	for (uint32_t i = 0; h->links && i < h->nlinks; i++) {
		tv_port_chan_destroy(h->links[i].chan);
		h->links[i].chan = NULL;
		if (h->links[i].sem)
			tv_port_sem_destroy(h->links[i].sem);
		h->links[i].sem = NULL;
	}
	r = tv_port_proxy_destroy(h->proxy);
	ret = ret ? ret : r;
	h->proxy = NULL;
	for (uint32_t i = 0; h->links && i < h->nlinks; i++) {
		r = tv_port_conn_destroy(h->links[i].conn);
		ret = ret ? ret : r;
		h->links[i].conn = r ? h->links[i].conn : NULL;
	}
	r = tv_port_mem_deregister(h->mdata);
	ret = ret ? ret : r;
	r = tv_port_mem_deregister(h->mtok);
	ret = ret ? ret : r;
	h->mdata = h->mtok = NULL;
	r = tv_port_ctx_destroy(h->ctx);
	ret = ret ? ret : r;
	h->ctx = NULL;
	d = (struct tv_tb_hw_device){ .cm = h->cm, .base = h->base,
				      .dev = h->dev };
	tv_tb_hw_close_device(&d, !ret);
	h->dev = h->base = NULL;
	h->cm = NULL;
	return ret;
}

static void ph_state_free(void *st)
{
	struct ph *h = st;

	ph_tasks_free(h);
	pthread_mutex_destroy(&h->lock);
	free(h->links);
	free(h->data);
	free(h->tokens);
	free(h);
}

/* ---- what is reported ---------------------------------------------------------- */

enum { S_OPS_OK, S_OPS, S_FAILED, S_BYTES, S_TRIGGERS, S_DATA_BAD,
       S_FINAL_BAD, S_N };

static void ph_stats(struct tv_tb_hw *hw, void *st, uint64_t *v)
{
	struct ph *h = st;
	struct tv_port_proxy_stats ps = { 0 };

	if (h->proxy)
		tv_port_proxy_stats(h->proxy, &ps);
	memset(v, 0, S_N * sizeof(*v));
	ph_tasks_stats(h, &v[S_OPS_OK], &v[S_OPS], &v[S_FAILED], &v[S_BYTES]);
	v[S_TRIGGERS] = ps.triggers;
	v[S_DATA_BAD] = h->data_bad;
	v[S_FINAL_BAD] = h->final_bad;
}

static void ph_check_end(struct tv_tb_hw *hw, void *st,
			 const uint64_t *const *all)
{
	struct ph *h = st;
	uint64_t sum[S_N];

	if (!all)
		return;
	tv_tb_hw_stats_sum(all, h->sc->nodes, S_N, sum);
	h->all_ops_ok = sum[S_OPS_OK];
	h->all_ops = sum[S_OPS];
	h->all_failed = sum[S_FAILED];
	h->have_all = true;
	/*
	 * Regions that differ though no task of any node failed: bytes
	 * changed in flight (a corruption point) and nothing caught them,
	 * since port channels carry no checksum (docs/faults.md).
	 */
	if (sum[S_FINAL_BAD] && !sum[S_FAILED])
		tv_tb_hw_fail(hw, TV_TB_FK_DATA, "%" PRIu64 " program "
			      "region(s) ended other than the reference says, "
			      "though every task of every node succeeded: data "
			      "changed in flight, undetected (port channels "
			      "carry no checksum; each node's log names its "
			      "first byte)", sum[S_FINAL_BAD]);
}

static void ph_summary(struct tv_tb_hw *hw, void *st, FILE *out)
{
	struct ph *h = st;
	uint64_t ok = 0, ops = 0, failed = 0, bytes = 0;

	ph_tasks_stats(h, &ok, &ops, &failed, &bytes);
	fprintf(out, "%" PRIu64 "/%" PRIu64 " operations done here, %" PRIu64
		" tasks failed, %" PRIu64 " bytes put, signals by %s", ok, ops,
		failed, bytes, h->imm_mode ? "write-with-immediate" :
		"fetch-and-add");
	if (h->have_all)
		fprintf(out, "; all nodes: %" PRIu64 "/%" PRIu64 " operations, "
			"%" PRIu64 " tasks failed", h->all_ops_ok, h->all_ops,
			h->all_failed);
}

/*
 * recycle: the two ends meet out of band in the simulator's runner; on
 * hardware that meeting would be a protocol of its own, so such a
 * scenario stays on the simulator.
 */
static bool ph_applicable(const struct tv_tb_scenario *core, char *why,
			  size_t cap)
{
	const struct pt_scenario *sc = tv_tb_scenario_wl(core);

	for (size_t t = 0; t < sc->ntasks; t++)
		for (size_t i = 0; i < sc->tasks[t].nops; i++)
			if (sc->tasks[t].ops[i].kind == PT_OP_RECYCLE) {
				snprintf(why, cap, "program %u recycles "
					 "semaphores (a meeting of the "
					 "simulator's runner)",
					 sc->tasks[t].prog);
				return false;
			}
	return true;
}

static void ph_time_fail(struct ph *h, const char *what, int rc)
{
	tv_tb_hw_fail(h->hw, TV_TB_FK_RUNNER, "%s: %s", what, strerror(-rc));
}

static int ph_time_point(struct tv_tb_hw *hw, void *st, uint64_t t)
{
	struct ph *h = st;
	int rc = ph_tasks_start(h, t);

	if (rc) {
		ph_time_fail(h, "starting producer threads", rc);
		return rc;
	}
	return ph_tasks_wait(h);
}

const struct tv_tb_hw_ops pt_hw_ops = {
	.applicable = ph_applicable,
	.open = ph_open,
	.close = ph_close,
	.state_free = ph_state_free,
	.connect = ph_connect,
	.progress = ph_progress,
	.sleep = ph_sleep,
	.times = ph_times,
	.time_point = ph_time_point,
	.finish = ph_finish,
	.quiesce = ph_quiesce,
	.nstats = S_N,
	.stats = ph_stats,
	.check_end = ph_check_end,
	.summary = ph_summary,
};
