/* The port engine tests' world (port_fix.h). */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "port_fix.h"

void pfix_config(struct tv_port_config *cfg, enum tv_port_signal_mode mode)
{
	tv_port_config_default(cfg);
	cfg->signal_mode = mode;
	cfg->qp_timeout = 1; /* 8 us: retries come quickly in the tests */
	cfg->qp_retry_cnt = 2;
}

static void node_init(struct pworld *w, uint32_t id,
		      const struct tv_port_config *pc)
{
	struct pnode *n = &w->n[id];
	struct tv_port_config cfg = *pc;

	cfg.node_id = id;
	n->dev = tv_sim_device(w->sim, id);
	ck_assert_int_eq(tv_port_ctx_create(n->dev, &cfg, &n->ctx), 0);
	n->data = aligned_alloc(4096, FIX_DATA);
	n->token = aligned_alloc(4096, FIX_TOKEN);
	ck_assert(n->data && n->token);
	memset(n->data, 0, FIX_DATA);
	memset(n->token, 0xee, FIX_TOKEN); /* creation zeroes the word */
	ck_assert_int_eq(tv_port_mem_register(n->ctx, n->data, FIX_DATA,
					      &n->mdata), 0);
	ck_assert_int_eq(tv_port_mem_register(n->ctx, n->token, FIX_TOKEN,
					      &n->mtoken), 0);
	ck_assert_int_eq(tv_port_conn_create(n->ctx, !id, &n->conn), 0);
	ck_assert_int_eq(tv_port_sem_create(n->conn, n->mtoken, 0, &n->sem),
			 0);
	ck_assert_uint_eq(tv_port_sem_inbound(n->sem), 0);
}

static void connect_both(struct pworld *w)
{
	struct tv_vf_qp_endpoint ep[2];
	struct tv_port_mem_handle h;
	uint64_t off;

	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(tv_port_conn_endpoint(w->n[i].conn, &ep[i]),
				 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(tv_port_conn_connect(w->n[i].conn,
						      &ep[!i]), 0);
		tv_port_sem_handle(w->n[!i].sem, &h, &off);
		ck_assert_int_eq(tv_port_sem_set_remote(w->n[i].sem, &h, off),
				 0);
	}
}

static void proxy_init(struct pworld *w, int i)
{
	struct pnode *n = &w->n[i];
	struct tv_port_mem_handle peer_data;
	uint32_t src, dst, sem;

	ck_assert_int_eq(tv_port_proxy_create(n->ctx, NULL, NULL, &n->proxy),
			 0);
	tv_port_mem_handle(w->n[!i].mdata, &peer_data);
	ck_assert_int_eq(tv_port_proxy_add_local(n->proxy, n->mdata, &src), 0);
	ck_assert_int_eq(tv_port_proxy_add_remote(n->proxy, &peer_data, &dst),
			 0);
	ck_assert_int_eq(tv_port_proxy_add_sem(n->proxy, n->sem, &sem), 0);
	ck_assert_int_eq(tv_port_chan_create(n->proxy, sem, dst, src,
					     &n->chan), 0);
}

void pfix_init_cfg(struct pworld *w, const struct tv_sim_config *sc,
		   const struct tv_port_config *pc, bool proxies)
{
	memset(w, 0, sizeof(*w));
	ck_assert_int_eq(tv_sim_create(sc, &w->sim), 0);
	for (uint32_t i = 0; i < 2; i++)
		node_init(w, i, pc);
	connect_both(w);
	for (int i = 0; proxies && i < 2; i++)
		proxy_init(w, i);
}

void pfix_init(struct pworld *w, enum tv_port_signal_mode mode, bool proxies)
{
	struct tv_sim_config sc;
	struct tv_port_config pc;

	tv_sim_config_default(&sc);
	sc.seed = 7;
	pfix_config(&pc, mode);
	pfix_init_cfg(w, &sc, &pc, proxies);
}

void pfix_fini(struct pworld *w)
{
	for (int i = 0; i < 2; i++) {
		struct pnode *n = &w->n[i];

		tv_port_chan_destroy(n->chan);
		ck_assert_int_eq(tv_port_proxy_destroy(n->proxy), 0);
		ck_assert_int_eq(tv_port_sem_destroy(n->sem), 0);
	}
	for (int i = 0; i < 2; i++) {
		struct pnode *n = &w->n[i];

		ck_assert_int_eq(tv_port_conn_destroy(n->conn), 0);
		ck_assert_int_eq(tv_port_mem_deregister(n->mdata), 0);
		ck_assert_int_eq(tv_port_mem_deregister(n->mtoken), 0);
		ck_assert_int_eq(tv_port_ctx_destroy(n->ctx), 0);
		free(n->data);
		free(n->token);
	}
	ck_assert_int_eq(tv_sim_destroy(w->sim), 0);
}

bool pfix_step(struct pworld *w)
{
	int ran = tv_sim_step(w->sim);

	ck_assert_int_ge(ran, 0);
	for (int i = 0; i < 2; i++) {
		int r = w->n[i].proxy ?
				tv_port_proxy_progress(w->n[i].proxy, 64) :
			w->n[i].conn ? tv_port_conn_progress(w->n[i].conn) :
				       0; /* destroyed by the test */

		ran |= r > 0;
	}
	return ran > 0;
}

bool pfix_run_until(struct pworld *w, bool (*cond)(void *arg), void *arg)
{
	for (;;) {
		if (cond && cond(arg))
			return true;
		if (!pfix_step(w))
			return cond ? cond(arg) : true;
	}
}

void pfix_run_all(struct pworld *w)
{
	pfix_run_until(w, NULL, NULL);
}
