/* The gather engine tests' world (gather_fix.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "gather_fix.h"

void gfix_config(struct tv_gather_config *cfg)
{
	tv_gather_config_default(cfg);
	cfg->rows = 1000;
	cfg->row_bytes = 64;
	cfg->replicated_rows = 10;
	cfg->qps_per_peer = 4;
	cfg->post_list = 16;
	cfg->window = 2;
	cfg->staging_bytes = 2 * 16 * 64;
	cfg->qp_timeout = 1; /* retries come quickly in the tests */
	cfg->qp_retry_cnt = 2;
}

void gfix_row(uint64_t id, uint8_t *buf, uint32_t row_bytes)
{
	uint64_t x = id * 0x9e3779b97f4a7c15ull + 1;

	for (uint32_t i = 0; i < row_bytes; i++) {
		x ^= x >> 29;
		x *= 0xbf58476d1ce4e5b9ull;
		buf[i] = (uint8_t)(x >> 56) | 1; /* never zero */
	}
}

long gfix_check(const uint64_t *ids, size_t n, const uint8_t *out,
		uint32_t row_bytes)
{
	uint8_t want[4096];

	for (size_t i = 0; i < n; i++) {
		gfix_row(ids[i], want, row_bytes);
		if (memcmp(out + i * row_bytes, want, row_bytes))
			return (long)i;
	}
	return -1;
}

static void fill_part(struct gworld *w, uint32_t n)
{
	const struct tv_gather_config *c = &w->cfg;
	uint64_t first, end, r = 0;

	tv_gather_range(c, n, &first, &end);
	for (uint64_t id = 0; id < c->replicated_rows; id++, r++)
		gfix_row(id, w->part[n] + r * c->row_bytes, c->row_bytes);
	for (uint64_t id = first; id < end; id++, r++)
		gfix_row(id, w->part[n] + r * c->row_bytes, c->row_bytes);
}

static int connect_pair(struct gworld *w, uint32_t c, uint32_t s, uint32_t k)
{
	struct tv_vf_qp_endpoint ec, es;
	int ret;

	ret = tv_gather_qp_endpoint(w->ctx[c], s, k, TV_GATHER_CLIENT, &ec);
	if (!ret)
		ret = tv_gather_qp_endpoint(w->ctx[s], c, k, TV_GATHER_SERVER,
					    &es);
	if (!ret)
		ret = tv_gather_qp_connect(w->ctx[s], c, k, TV_GATHER_SERVER,
					   &ec);
	if (!ret)
		ret = tv_gather_qp_connect(w->ctx[c], s, k, TV_GATHER_CLIENT,
					   &es);
	return ret;
}

int gfix_reconnect(struct gworld *w, uint32_t c, uint32_t s, uint32_t k)
{
	struct tv_gather_part_handle h;
	int ret;

	ret = tv_gather_qp_reset(w->ctx[c], s, k, TV_GATHER_CLIENT);
	if (!ret)
		ret = tv_gather_qp_reset(w->ctx[s], c, k, TV_GATHER_SERVER);
	if (ret)
		return ret;
	tv_gather_part_handle(w->ctx[s], &h); /* it may have re-registered */
	ret = tv_gather_set_peer(w->ctx[c], &h);
	return ret ? ret : connect_pair(w, c, s, k);
}

static int reconnect_cb(void *arg, struct tv_gather_ctx *g, uint32_t peer,
			uint32_t qp)
{
	struct gworld *w = arg;
	uint32_t c = tv_gather_ctx_config(g)->node_id;

	w->reconnects++;
	if (w->refuse_reconnect)
		return -ECONNREFUSED;
	if (w->not_yet) {
		w->not_yet--;
		return -EAGAIN; /* the peer is not back yet */
	}
	return gfix_reconnect(w, c, peer, qp);
}

void gfix_init(struct gworld *w, uint32_t nodes,
	       const struct tv_gather_config *cfg,
	       const struct tv_sim_config *sc)
{
	struct tv_sim_config def;
	char why[256];

	memset(w, 0, sizeof(*w));
	if (!sc) {
		tv_sim_config_default(&def);
		def.num_nodes = nodes;
		sc = &def;
	}
	ck_assert_int_eq(tv_sim_create(sc, &w->sim), 0);
	w->nodes = nodes;
	w->cfg = *cfg;
	w->cfg.nodes = nodes;
	w->cfg.reconnect = reconnect_cb;
	w->cfg.reconnect_ctx = w;
	for (uint32_t n = 0; n < nodes; n++) {
		struct tv_gather_config c = w->cfg;

		c.node_id = n;
		w->part[n] = calloc(1, tv_gather_part_bytes(&c, n));
		ck_assert_ptr_nonnull(w->part[n]);
		fill_part(w, n);
		ck_assert_msg(!tv_gather_ctx_create(tv_sim_device(w->sim, n),
						    &c, w->part[n], why,
						    sizeof(why), &w->ctx[n]),
			      "%s", why);
	}
	for (uint32_t c = 0; c < nodes; c++)
		for (uint32_t s = 0; s < nodes; s++) {
			struct tv_gather_part_handle h;

			if (c == s)
				continue;
			tv_gather_part_handle(w->ctx[s], &h);
			ck_assert_int_eq(tv_gather_set_peer(w->ctx[c], &h), 0);
			for (uint32_t k = 0; k < cfg->qps_per_peer; k++)
				ck_assert_int_eq(connect_pair(w, c, s, k), 0);
		}
}

void gfix_fini(struct gworld *w)
{
	for (uint32_t n = 0; n < w->nodes; n++) {
		ck_assert_int_eq(tv_gather_ctx_destroy(w->ctx[n]), 0); /* NULL ok */
		free(w->part[n]);
	}
	ck_assert_int_eq(tv_sim_destroy(w->sim), 0);
}
