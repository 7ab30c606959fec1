/*
 * tensorverbs devices: what `ibv_devinfo -v` says, compact, plus which
 * device, port and GID the RDMA_* configuration would pick.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "devices.h"

#ifdef TV_HAVE_IBVERBS
#include <tensorverbs/ibverbs.h>

static const char devices_usage[] =
	"usage: tensorverbs devices\n"
	"  list RDMA devices: ports, states, MTUs, link layer, GIDs with\n"
	"  their type, limits; and the device, port and GID the RDMA_*\n"
	"  environment variables select (see docs/ibverbs.md)\n"
	"exit status: 0 devices listed, 1 no RDMA device, 2 bad usage\n";

static void print_gid(const struct tv_ibv_gid *g)
{
	char text[INET6_ADDRSTRLEN] = "?";
	char v4[INET_ADDRSTRLEN] = "";

	inet_ntop(AF_INET6, g->raw, text, sizeof(text));
	if (tv_ibv_gid_is_ipv4(g->raw))
		inet_ntop(AF_INET, g->raw + 12, v4, sizeof(v4));
	printf("    gid %3u  %-39s  %-7s", g->index, text,
	       tv_ibv_gid_type_str(g->type));
	if (g->netdev[0])
		printf("  %s", g->netdev);
	if (v4[0])
		printf("  ipv4 %s", v4);
	printf("\n");
}

static void print_port(const struct tv_ibv_port_info *p)
{
	const struct tv_vf_port_attr *a = &p->attr;

	printf("  port %u: %s, %s, mtu %d (max %d), lid %u, "
	       "%u gid(s) of %u, %u pkey(s)\n",
	       p->port_num, tv_ibv_port_state_str(a->state),
	       a->link_layer == 2 ? "Ethernet" : "InfiniBand",
	       tv_vf_mtu_bytes(a->active_mtu), tv_vf_mtu_bytes(a->max_mtu),
	       a->lid, p->num_gids, a->gid_tbl_len, a->pkey_tbl_len);
	for (uint32_t i = 0; i < p->num_gids; i++)
		print_gid(&p->gids[i]);
}

static void print_device(const struct tv_ibv_device_info *d)
{
	const struct tv_vf_device_attr *a = &d->attr;

	printf("%s: fw %s, node guid %016llx, %u port(s)\n", a->name,
	       d->fw_ver[0] ? d->fw_ver : "-",
	       (unsigned long long)d->node_guid, d->num_ports);
	printf("  limits: max_qp %u, max_qp_wr %u, max_cqe %u, max_mr %u, "
	       "max_qp_rd_atom %u, max_sge %u, max_mr_size %llu\n",
	       a->max_qp, a->max_qp_wr, a->max_cqe, a->max_mr,
	       a->max_qp_rd_atom, a->max_sge,
	       (unsigned long long)a->max_mr_size);
	for (uint32_t p = 0; p < d->num_ports; p++)
		print_port(&d->ports[p]);
}

/* What tensorverbs would use with the current environment. */
static void print_selection(const struct tv_ibv_device_info *infos,
			    size_t count)
{
	struct tv_ibv_config cfg, res;
	char msg[512] = "";
	size_t idx;

	if (tv_ibv_config_from_env(msg, sizeof(msg), &cfg) ||
	    tv_ibv_config_resolve(&cfg, infos, count, msg, sizeof(msg), &res,
				  &idx)) {
		printf("selected: none: %s\n", msg);
		return;
	}
	printf("selected (RDMA_* environment): %s port %u gid %d mtu %d "
	       "sl %u tc %u queue depth %u\n", res.device, res.port,
	       res.gid_index, tv_vf_mtu_bytes(res.mtu), res.sl,
	       res.traffic_class, res.queue_depth);
}

int cli_devices(int argc, char **argv, const char *argv0)
{
	struct tv_ibv_device_info *infos = NULL;
	size_t count = 0;
	int ret;

	(void)argv0;
	if (argc > 1) {
		if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
			fputs(devices_usage, stdout);
			return CLI_EXIT_OK;
		}
		fputs(devices_usage, stderr);
		return CLI_EXIT_USAGE;
	}
	ret = tv_ibv_query_all(&infos, &count);
	if (ret) {
		fprintf(stderr, "tensorverbs devices: cannot list devices: %s\n",
			strerror(-ret));
		return CLI_EXIT_FAIL;
	}
	if (!count) {
		fprintf(stderr, "tensorverbs devices: no RDMA device found (no "
			"RDMA driver loaded? for Soft-RoCE: `rdma link add "
			"rxe0 type rxe netdev <if>`)\n");
		return CLI_EXIT_FAIL;
	}
	for (size_t i = 0; i < count; i++)
		print_device(&infos[i]);
	print_selection(infos, count);
	tv_ibv_free_all(infos, count);
	return CLI_EXIT_OK;
}

#else /* !TV_HAVE_IBVERBS */

int cli_devices(int argc, char **argv, const char *argv0)
{
	(void)argc;
	(void)argv;
	(void)argv0;
	fprintf(stderr, "tensorverbs devices: built without libibverbs "
		"(install libibverbs-dev and rebuild)\n");
	return CLI_EXIT_FAIL;
}

#endif
