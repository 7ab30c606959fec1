/*
 * The RDMA_* configuration: parsing every variable in both spellings, the
 * defaults, every refusal with its exact message, and the resolution
 * against a device list made up here (no RDMA device needed).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/ibverbs.h>

#include "common/check_main.h"

/* ---- a table instead of the environment ------------------------------- */

#define ENV_MAX 16

struct env {
	const char *kv[ENV_MAX][2];
};

static const char *env_get(void *ctx, const char *name)
{
	const struct env *e = ctx;

	for (int i = 0; i < ENV_MAX && e->kv[i][0]; i++)
		if (!strcmp(e->kv[i][0], name))
			return e->kv[i][1];
	return NULL;
}

static int parse(const struct env *e, char *msg, struct tv_ibv_config *cfg)
{
	memset(msg, 0, 256);
	return tv_ibv_config_parse(env_get, (void *)e, msg, 256, cfg);
}

/* Parse a one-variable environment that must be refused with msg. */
static void expect_refused(const char *name, const char *value,
			   const char *want)
{
	struct env e = { .kv = { { name, value } } };
	struct tv_ibv_config cfg;
	char msg[256];

	memset(&cfg, 0xa5, sizeof(cfg));
	ck_assert_int_eq(parse(&e, msg, &cfg), -EINVAL);
	ck_assert_str_eq(msg, want);
	/* Output written only on success. */
	ck_assert_uint_eq(cfg.queue_depth, 0xa5a5a5a5u);
}

START_TEST(defaults)
{
	struct env e = { 0 };
	struct tv_ibv_config cfg;
	char msg[256];

	ck_assert_int_eq(parse(&e, msg, &cfg), 0);
	ck_assert_str_eq(cfg.device, "");
	ck_assert_uint_eq(cfg.port, 0);
	ck_assert_int_eq(cfg.gid_index, -1);
	ck_assert_uint_eq(cfg.pkey_index, 0);
	ck_assert_uint_eq(cfg.queue_depth, 1024);
	ck_assert_uint_eq(cfg.timeout, 14);
	ck_assert_uint_eq(cfg.retry_cnt, 7);
	ck_assert_uint_eq(cfg.sl, 0);
	ck_assert_int_eq(cfg.mtu, 0);
	ck_assert_uint_eq(cfg.traffic_class, 0);
	for (int i = 0; i < TV_IBV_VAR_COUNT; i++)
		ck_assert_ptr_null(cfg.source[i]);
}
END_TEST

/* One variable, one value, where it lands. */
struct one_case {
	enum tv_ibv_var var;
	const char *value;
	long want;
};

static const struct one_case one_cases[] = {
	{ TV_IBV_VAR_PORT, "2", 2 },
	{ TV_IBV_VAR_GID_INDEX, "3", 3 },
	{ TV_IBV_VAR_PKEY_INDEX, "1", 1 },
	{ TV_IBV_VAR_QUEUE_DEPTH, "256", 256 },
	{ TV_IBV_VAR_TIMEOUT, "20", 20 },
	{ TV_IBV_VAR_RETRY_COUNT, "3", 3 },
	{ TV_IBV_VAR_SL, "5", 5 },
	{ TV_IBV_VAR_MTU, "2048", TV_MTU_2048 },
	{ TV_IBV_VAR_TRAFFIC_CLASS, "106", 106 },
};

static long field_of(const struct tv_ibv_config *c, enum tv_ibv_var var)
{
	switch (var) {
	case TV_IBV_VAR_PORT: return c->port;
	case TV_IBV_VAR_GID_INDEX: return c->gid_index;
	case TV_IBV_VAR_PKEY_INDEX: return c->pkey_index;
	case TV_IBV_VAR_QUEUE_DEPTH: return c->queue_depth;
	case TV_IBV_VAR_TIMEOUT: return c->timeout;
	case TV_IBV_VAR_RETRY_COUNT: return c->retry_cnt;
	case TV_IBV_VAR_SL: return c->sl;
	case TV_IBV_VAR_MTU: return c->mtu;
	case TV_IBV_VAR_TRAFFIC_CLASS: return c->traffic_class;
	default: break;
	}
	ck_abort_msg("no such numeric variable");
	return -1;
}

static void check_one(const struct one_case *oc, const char *name)
{
	struct env e = { .kv = { { name, oc->value } } };
	struct tv_ibv_config cfg;
	char msg[256];

	ck_assert_int_eq(parse(&e, msg, &cfg), 0);
	ck_assert_int_eq(field_of(&cfg, oc->var), oc->want);
	ck_assert_str_eq(cfg.source[oc->var], name);
}

START_TEST(every_variable_readme_spelling)
{
	const struct one_case *oc = &one_cases[_i];

	check_one(oc, tv_ibv_var_name(oc->var));
}
END_TEST

START_TEST(every_variable_code_spelling)
{
	const struct one_case *oc = &one_cases[_i];
	const char *alt = tv_ibv_var_alt_name(oc->var);

	if (alt)
		check_one(oc, alt);
}
END_TEST

START_TEST(spellings_table)
{
	static const char *const want[TV_IBV_VAR_COUNT][2] = {
		{ "RDMA_DEVICE", NULL },
		{ "RDMA_DEVICE_PORT", NULL },
		{ "RDMA_GID_INDEX", NULL },
		{ "RDMA_QP_PKEY_INDEX", "RDMA_PKEY" },
		{ "RDMA_QP_QUEUE_DEPTH", "RDMA_QUEUE_DEPTH" },
		{ "RDMA_QP_TIMEOUT", "RDMA_TIMEOUT" },
		{ "RDMA_QP_RETRY_COUNT", "RDMA_RETRY_CNT" },
		{ "RDMA_QP_SL", "RDMA_SL" },
		{ "RDMA_QP_MTU", "RDMA_MTU" },
		{ "RDMA_TRAFFIC_CLASS", NULL },
	};

	for (int i = 0; i < TV_IBV_VAR_COUNT; i++) {
		ck_assert_str_eq(tv_ibv_var_name(i), want[i][0]);
		if (want[i][1])
			ck_assert_str_eq(tv_ibv_var_alt_name(i), want[i][1]);
		else
			ck_assert_ptr_null(tv_ibv_var_alt_name(i));
	}
	ck_assert_ptr_null(tv_ibv_var_name(TV_IBV_VAR_COUNT));
}
END_TEST

START_TEST(device_name)
{
	struct env e = { .kv = { { "RDMA_DEVICE", "mlx5_1" } } };
	struct tv_ibv_config cfg;
	char msg[256], longname[80];

	ck_assert_int_eq(parse(&e, msg, &cfg), 0);
	ck_assert_str_eq(cfg.device, "mlx5_1");
	ck_assert_str_eq(cfg.source[TV_IBV_VAR_DEVICE], "RDMA_DEVICE");
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	expect_refused("RDMA_DEVICE", longname,
		       "RDMA_DEVICE: device name too long, valid names have at "
		       "most 63 characters");
}
END_TEST

START_TEST(mtu_every_valid_value)
{
	static const char *const v[] = { "256", "512", "1024", "2048", "4096" };

	for (int i = 0; i < 5; i++) {
		struct env e = { .kv = { { "RDMA_MTU", v[i] } } };
		struct tv_ibv_config cfg;
		char msg[256];

		ck_assert_int_eq(parse(&e, msg, &cfg), 0);
		ck_assert_int_eq(cfg.mtu, TV_MTU_256 + i);
	}
}
END_TEST

START_TEST(range_edges_accepted)
{
	static const char *const kv[][2] = {
		{ "RDMA_QP_SL", "7" },		{ "RDMA_SL", "0" },
		{ "RDMA_QP_TIMEOUT", "31" },	{ "RDMA_TIMEOUT", "0" },
		{ "RDMA_QP_RETRY_COUNT", "0" }, { "RDMA_RETRY_CNT", "7" },
		{ "RDMA_TRAFFIC_CLASS", "255" }, { "RDMA_GID_INDEX", "255" },
		{ "RDMA_DEVICE_PORT", "1" },	{ "RDMA_QP_QUEUE_DEPTH", "1" },
		{ "RDMA_QUEUE_DEPTH", "65536" }, { "RDMA_PKEY", "65535" },
	};

	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
		struct env e = { .kv = { { kv[i][0], kv[i][1] } } };
		struct tv_ibv_config cfg;
		char msg[256];

		ck_assert_msg(parse(&e, msg, &cfg) == 0, "%s=%s: %s", kv[i][0],
			      kv[i][1], msg);
	}
}
END_TEST

START_TEST(both_spellings_agree)
{
	struct env e = { .kv = { { "RDMA_QP_SL", "3" }, { "RDMA_SL", "03" },
				 { "RDMA_QP_MTU", "1024" },
				 { "RDMA_MTU", "1024" } } };
	struct tv_ibv_config cfg;
	char msg[256];

	ck_assert_int_eq(parse(&e, msg, &cfg), 0);
	ck_assert_uint_eq(cfg.sl, 3);
	ck_assert_int_eq(cfg.mtu, TV_MTU_1024);
	/* The README spelling is the one named. */
	ck_assert_str_eq(cfg.source[TV_IBV_VAR_SL], "RDMA_QP_SL");
}
END_TEST

START_TEST(both_spellings_disagree)
{
	static const char *const c[][5] = {
		{ "RDMA_QP_PKEY_INDEX", "0", "RDMA_PKEY", "1" },
		{ "RDMA_QP_QUEUE_DEPTH", "1024", "RDMA_QUEUE_DEPTH", "512" },
		{ "RDMA_QP_TIMEOUT", "14", "RDMA_TIMEOUT", "18" },
		{ "RDMA_QP_RETRY_COUNT", "7", "RDMA_RETRY_CNT", "6" },
		{ "RDMA_QP_SL", "3", "RDMA_SL", "4" },
		{ "RDMA_QP_MTU", "1024", "RDMA_MTU", "4096" },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct env e = { .kv = { { c[i][0], c[i][1] },
					 { c[i][2], c[i][3] } } };
		struct tv_ibv_config cfg;
		char msg[256], want[256];

		snprintf(want, sizeof(want),
			 "%s=%s and %s=%s disagree: they name the same "
			 "setting, set one of them",
			 c[i][0], c[i][1], c[i][2], c[i][3]);
		ck_assert_int_eq(parse(&e, msg, &cfg), -EINVAL);
		ck_assert_str_eq(msg, want);
	}
}
END_TEST

START_TEST(empty_is_unset)
{
	struct env e = { .kv = { { "RDMA_QP_SL", "" }, { "RDMA_DEVICE", "" },
				 { "RDMA_SL", "2" } } };
	struct tv_ibv_config cfg;
	char msg[256];

	ck_assert_int_eq(parse(&e, msg, &cfg), 0);
	ck_assert_uint_eq(cfg.sl, 2);
	ck_assert_str_eq(cfg.source[TV_IBV_VAR_SL], "RDMA_SL");
	ck_assert_str_eq(cfg.device, "");
}
END_TEST

START_TEST(bad_numbers_every_variable)
{
	/* name, range text */
	static const char *const v[][2] = {
		{ "RDMA_DEVICE_PORT", "1..255" },
		{ "RDMA_GID_INDEX", "0..255" },
		{ "RDMA_QP_PKEY_INDEX", "0..65535" },
		{ "RDMA_PKEY", "0..65535" },
		{ "RDMA_QP_QUEUE_DEPTH", "1..65536" },
		{ "RDMA_QUEUE_DEPTH", "1..65536" },
		{ "RDMA_QP_TIMEOUT", "0..31" },
		{ "RDMA_TIMEOUT", "0..31" },
		{ "RDMA_QP_RETRY_COUNT", "0..7" },
		{ "RDMA_RETRY_CNT", "0..7" },
		{ "RDMA_QP_SL", "0..7" },
		{ "RDMA_SL", "0..7" },
		{ "RDMA_TRAFFIC_CLASS", "0..255" },
	};
	static const char *const junk[] = { "abc", "12x", "-1", "+1", " 1",
					    "1 ", "0x10", "1.5" };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		for (size_t j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
			char want[256];

			snprintf(want, sizeof(want),
				 "%s=%s: not a decimal number, valid values "
				 "are %s", v[i][0], junk[j], v[i][1]);
			expect_refused(v[i][0], junk[j], want);
		}
	}
}
END_TEST

START_TEST(out_of_range_every_variable)
{
	static const char *const v[][3] = {
		{ "RDMA_DEVICE_PORT", "0", "1..255" },
		{ "RDMA_DEVICE_PORT", "256", "1..255" },
		{ "RDMA_GID_INDEX", "256", "0..255" },
		{ "RDMA_QP_PKEY_INDEX", "65536", "0..65535" },
		{ "RDMA_PKEY", "70000", "0..65535" },
		{ "RDMA_QP_QUEUE_DEPTH", "0", "1..65536" },
		{ "RDMA_QUEUE_DEPTH", "65537", "1..65536" },
		{ "RDMA_QP_TIMEOUT", "32", "0..31" },
		{ "RDMA_TIMEOUT", "99", "0..31" },
		{ "RDMA_QP_RETRY_COUNT", "8", "0..7" },
		{ "RDMA_RETRY_CNT", "8", "0..7" },
		{ "RDMA_QP_SL", "9", "0..7" },
		{ "RDMA_SL", "8", "0..7" },
		{ "RDMA_TRAFFIC_CLASS", "256", "0..255" },
		{ "RDMA_QP_SL", "99999999999999999999999", "0..7" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char want[256];

		snprintf(want, sizeof(want),
			 "%s=%s: out of range, valid values are %s", v[i][0],
			 v[i][1], v[i][2]);
		expect_refused(v[i][0], v[i][1], want);
	}
}
END_TEST

START_TEST(bad_mtu)
{
	static const char *const bad[] = { "3000", "128", "8192", "0", "1",
					   "5", "1024k", "mtu" };
	static const char *const names[] = { "RDMA_QP_MTU", "RDMA_MTU" };

	for (size_t n = 0; n < 2; n++)
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			char want[256];

			snprintf(want, sizeof(want),
				 "%s=%s: invalid MTU, valid values are 256, "
				 "512, 1024, 2048, 4096 (bytes, at most the "
				 "port's active MTU)", names[n], bad[i]);
			expect_refused(names[n], bad[i], want);
		}
}
END_TEST

START_TEST(null_arguments)
{
	struct tv_ibv_config cfg;
	char msg[64];

	ck_assert_int_eq(tv_ibv_config_parse(NULL, NULL, msg, sizeof(msg), &cfg),
			 -EINVAL);
	ck_assert_int_eq(tv_ibv_config_parse(env_get, NULL, msg, sizeof(msg),
					     NULL), -EINVAL);
}
END_TEST

START_TEST(from_process_environment)
{
	struct tv_ibv_config cfg;
	char msg[256] = "";

	setenv("RDMA_SL", "6", 1);
	setenv("RDMA_QP_QUEUE_DEPTH", "128", 1);
	ck_assert_int_eq(tv_ibv_config_from_env(msg, sizeof(msg), &cfg), 0);
	ck_assert_uint_eq(cfg.sl, 6);
	ck_assert_uint_eq(cfg.queue_depth, 128);
	setenv("RDMA_QP_SL", "9", 1);
	ck_assert_int_eq(tv_ibv_config_from_env(msg, sizeof(msg), &cfg),
			 -EINVAL);
	ck_assert_str_eq(msg, "RDMA_QP_SL=9: out of range, valid values are "
			      "0..7");
}
END_TEST

/* ---- resolution against a made-up machine ----------------------------- */

/*
 * mlx5_0: port 1 DOWN, port 2 ACTIVE InfiniBand (one IB GID at 0).
 * rxe0: port 1 ACTIVE Ethernet, active MTU 1024, 16 GID slots: fe80 v1/v2
 * at 0/1, IPv4-mapped v1/v2 at 2/3, the rest empty.
 */
static struct tv_ibv_gid rxe_gids[4];
static struct tv_ibv_gid mlx_gids[1];
static struct tv_ibv_port_info mlx_ports[2];
static struct tv_ibv_port_info rxe_ports[1];
static struct tv_ibv_device_info machine[2];

static void set_gid(struct tv_ibv_gid *g, uint32_t index,
		    enum tv_ibv_gid_type type, int ipv4)
{
	memset(g, 0, sizeof(*g));
	g->index = index;
	g->type = type;
	if (ipv4) {
		g->raw[10] = g->raw[11] = 0xff;
		g->raw[12] = 10, g->raw[13] = 77, g->raw[15] = 1;
	} else {
		g->raw[0] = 0xfe, g->raw[1] = 0x80, g->raw[15] = 7;
	}
}

static void build_machine(void)
{
	set_gid(&rxe_gids[0], 0, TV_IBV_GID_ROCE_V1, 0);
	set_gid(&rxe_gids[1], 1, TV_IBV_GID_ROCE_V2, 0);
	set_gid(&rxe_gids[2], 2, TV_IBV_GID_ROCE_V1, 1);
	set_gid(&rxe_gids[3], 3, TV_IBV_GID_ROCE_V2, 1);
	set_gid(&mlx_gids[0], 0, TV_IBV_GID_IB, 0);

	memset(machine, 0, sizeof(machine));
	strcpy(machine[0].attr.name, "mlx5_0");
	machine[0].attr.max_qp_wr = 32768;
	machine[0].num_ports = 2;
	machine[0].ports = mlx_ports;
	mlx_ports[0] = (struct tv_ibv_port_info){
		.port_num = 1,
		.attr = { .state = TV_PORT_DOWN, .active_mtu = TV_MTU_4096,
			  .max_mtu = TV_MTU_4096, .gid_tbl_len = 128,
			  .pkey_tbl_len = 128, .link_layer = 1 },
	};
	mlx_ports[1] = mlx_ports[0];
	mlx_ports[1].port_num = 2;
	mlx_ports[1].attr.state = TV_PORT_ACTIVE;
	mlx_ports[1].num_gids = 1;
	mlx_ports[1].gids = mlx_gids;

	strcpy(machine[1].attr.name, "rxe0");
	machine[1].attr.max_qp_wr = 16384;
	machine[1].num_ports = 1;
	machine[1].ports = rxe_ports;
	rxe_ports[0] = (struct tv_ibv_port_info){
		.port_num = 1,
		.attr = { .state = TV_PORT_ACTIVE, .active_mtu = TV_MTU_1024,
			  .max_mtu = TV_MTU_4096, .gid_tbl_len = 16,
			  .pkey_tbl_len = 1, .link_layer = 2 },
		.num_gids = 4,
		.gids = rxe_gids,
	};
}

/* Parse env, then resolve on the first count devices of machine. */
static int resolve(const struct env *e, size_t count, char *msg,
		   struct tv_ibv_config *out, size_t *idx)
{
	struct tv_ibv_config cfg;
	int ret;

	build_machine();
	ret = parse(e, msg, &cfg);
	ck_assert_msg(ret == 0, "parse: %s", msg);
	return tv_ibv_config_resolve(&cfg, machine, count, msg, 256, out, idx);
}

static void expect_unresolved(const struct env *e, int err, const char *want)
{
	struct tv_ibv_config out;
	size_t idx = 99;
	char msg[256];

	ck_assert_int_eq(resolve(e, 2, msg, &out, &idx), err);
	ck_assert_str_eq(msg, want);
	ck_assert_uint_eq(idx, 99);
}

START_TEST(resolve_default_device)
{
	struct env e = { 0 };
	struct tv_ibv_config out;
	size_t idx = 99;
	char msg[256];

	/* The first device with an active port, its first active port. */
	ck_assert_int_eq(resolve(&e, 2, msg, &out, &idx), 0);
	ck_assert_uint_eq(idx, 0);
	ck_assert_str_eq(out.device, "mlx5_0");
	ck_assert_uint_eq(out.port, 2);
	ck_assert_int_eq(out.gid_index, 0); /* IB: index 0 */
	ck_assert_int_eq(out.mtu, TV_MTU_4096);
	ck_assert_uint_eq(out.queue_depth, 1024);
}
END_TEST

START_TEST(resolve_prefers_roce_v2_ipv4)
{
	struct env e = { .kv = { { "RDMA_DEVICE", "rxe0" } } };
	struct tv_ibv_config out;
	size_t idx = 99;
	char msg[256];

	ck_assert_int_eq(resolve(&e, 2, msg, &out, &idx), 0);
	ck_assert_uint_eq(idx, 1);
	ck_assert_uint_eq(out.port, 1);
	ck_assert_int_eq(out.gid_index, 3);
	ck_assert_int_eq(out.mtu, TV_MTU_1024);
	/* Without an IPv4-mapped v2 GID: the other v2 one. */
	build_machine();
	rxe_ports[0].num_gids = 2;
	ck_assert_int_eq(tv_ibv_config_resolve(&(struct tv_ibv_config){
		.device = "rxe0", .gid_index = -1, .queue_depth = 1 },
		machine, 2, msg, sizeof(msg), &out, &idx), 0);
	ck_assert_int_eq(out.gid_index, 1);
}
END_TEST

START_TEST(resolve_explicit_values)
{
	struct env e = { .kv = { { "RDMA_DEVICE", "rxe0" },
				 { "RDMA_DEVICE_PORT", "1" },
				 { "RDMA_GID_INDEX", "0" },
				 { "RDMA_MTU", "1024" },
				 { "RDMA_SL", "4" } } };
	struct tv_ibv_config out;
	size_t idx = 99;
	char msg[256];

	/* MTU equal to the active MTU is valid (the original refused it). */
	ck_assert_int_eq(resolve(&e, 2, msg, &out, &idx), 0);
	ck_assert_int_eq(out.gid_index, 0);
	ck_assert_int_eq(out.mtu, TV_MTU_1024);
	ck_assert_uint_eq(out.sl, 4);
}
END_TEST

START_TEST(resolve_refusals)
{
	struct env unknown = { .kv = { { "RDMA_DEVICE", "mlx9" } } };
	struct env down = { .kv = { { "RDMA_DEVICE", "mlx5_0" },
				    { "RDMA_DEVICE_PORT", "1" } } };
	struct env noport = { .kv = { { "RDMA_DEVICE", "mlx5_0" },
				      { "RDMA_DEVICE_PORT", "3" } } };
	struct env gid_oor = { .kv = { { "RDMA_DEVICE", "rxe0" },
				       { "RDMA_GID_INDEX", "16" } } };
	struct env gid_empty = { .kv = { { "RDMA_DEVICE", "rxe0" },
					 { "RDMA_GID_INDEX", "5" } } };
	struct env mtu = { .kv = { { "RDMA_DEVICE", "rxe0" },
				   { "RDMA_MTU", "2048" } } };
	struct env pkey = { .kv = { { "RDMA_DEVICE", "rxe0" },
				    { "RDMA_PKEY", "1" } } };
	struct env depth = { .kv = { { "RDMA_DEVICE", "rxe0" },
				     { "RDMA_QP_QUEUE_DEPTH", "20000" } } };

	expect_unresolved(&unknown, -EINVAL, "RDMA_DEVICE=mlx9: no such "
			  "device, valid names are: mlx5_0, rxe0");
	expect_unresolved(&down, -EINVAL, "RDMA_DEVICE_PORT=1: port is DOWN "
			  "on mlx5_0, valid values are its ACTIVE ports");
	expect_unresolved(&noport, -EINVAL, "RDMA_DEVICE_PORT=3: out of "
			  "range, valid values are 1..2 on mlx5_0");
	expect_unresolved(&gid_oor, -EINVAL, "RDMA_GID_INDEX=16: out of "
			  "range, valid values are 0..15 on rxe0 port 1");
	expect_unresolved(&gid_empty, -EINVAL, "RDMA_GID_INDEX=5: the GID "
			  "table entry is empty on rxe0 port 1; valid values "
			  "are the indexes `tensorverbs devices` lists");
	expect_unresolved(&mtu, -EINVAL, "RDMA_MTU=2048: above the active "
			  "MTU of rxe0 port 1, valid values are 256..1024");
	expect_unresolved(&pkey, -EINVAL, "RDMA_PKEY=1: out of range, valid "
			  "values are 0..0 on rxe0 port 1");
	expect_unresolved(&depth, -EINVAL, "RDMA_QP_QUEUE_DEPTH=20000: out of "
			  "range, valid values are 1..16384 on rxe0");
}
END_TEST

START_TEST(resolve_no_device)
{
	struct env none = { 0 };
	struct env named = { .kv = { { "RDMA_DEVICE", "rxe0" } } };
	struct tv_ibv_config out;
	size_t idx;
	char msg[256];

	ck_assert_int_eq(resolve(&none, 0, msg, &out, &idx), -ENODEV);
	ck_assert_str_eq(msg, "no RDMA device with an active port (0 "
			      "device(s) found); set RDMA_DEVICE and "
			      "RDMA_DEVICE_PORT or bring a port up");
	ck_assert_int_eq(resolve(&named, 0, msg, &out, &idx), -EINVAL);
	ck_assert_str_eq(msg, "RDMA_DEVICE=rxe0: no such device, valid names "
			      "are: (no RDMA device on this machine)");
	/* Devices, but every port down. */
	build_machine();
	mlx_ports[1].attr.state = TV_PORT_INIT;
	rxe_ports[0].attr.state = TV_PORT_DOWN;
	ck_assert_int_eq(tv_ibv_config_resolve(&(struct tv_ibv_config){
		.gid_index = -1, .queue_depth = 1 }, machine, 2, msg,
		sizeof(msg), &out, &idx), -ENODEV);
	ck_assert_int_eq(tv_ibv_config_resolve(&(struct tv_ibv_config){
		.device = "rxe0", .gid_index = -1, .queue_depth = 1 }, machine,
		2, msg, sizeof(msg), &out, &idx), -EINVAL);
	ck_assert_str_eq(msg, "RDMA_DEVICE=rxe0: no active port on the device");
}
END_TEST

START_TEST(gid_helpers)
{
	uint8_t v4[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 1 };
	uint8_t ll[16] = { 0xfe, 0x80, [15] = 1 };

	ck_assert_int_eq(tv_ibv_gid_is_ipv4(v4), 1);
	ck_assert_int_eq(tv_ibv_gid_is_ipv4(ll), 0);
	ck_assert_str_eq(tv_ibv_gid_type_str(TV_IBV_GID_ROCE_V2), "RoCE v2");
	ck_assert_str_eq(tv_ibv_gid_type_str(TV_IBV_GID_ROCE_V1), "RoCE v1");
	ck_assert_str_eq(tv_ibv_gid_type_str(TV_IBV_GID_IB), "IB");
	ck_assert_str_eq(tv_ibv_port_state_str(TV_PORT_ACTIVE), "ACTIVE");
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("ibverbs_config");
	TCase *p = tcase_create("parse");
	TCase *r = tcase_create("resolve");
	int n = (int)(sizeof(one_cases) / sizeof(one_cases[0]));

	tcase_add_test(p, defaults);
	tcase_add_loop_test(p, every_variable_readme_spelling, 0, n);
	tcase_add_loop_test(p, every_variable_code_spelling, 0, n);
	tcase_add_test(p, spellings_table);
	tcase_add_test(p, device_name);
	tcase_add_test(p, mtu_every_valid_value);
	tcase_add_test(p, range_edges_accepted);
	tcase_add_test(p, both_spellings_agree);
	tcase_add_test(p, both_spellings_disagree);
	tcase_add_test(p, empty_is_unset);
	tcase_add_test(p, bad_numbers_every_variable);
	tcase_add_test(p, out_of_range_every_variable);
	tcase_add_test(p, bad_mtu);
	tcase_add_test(p, null_arguments);
	tcase_add_test(p, from_process_environment);
	suite_add_tcase(s, p);
	tcase_add_test(r, resolve_default_device);
	tcase_add_test(r, resolve_prefers_roce_v2_ipv4);
	tcase_add_test(r, resolve_explicit_values);
	tcase_add_test(r, resolve_refusals);
	tcase_add_test(r, resolve_no_device);
	tcase_add_test(r, gid_helpers);
	suite_add_tcase(s, r);
	return s;
}

int main(void)
{
	return tv_check_main(config_suite());
}
