/*
 * The TensorFlow verbs configuration: parse the environment variables
 * (README and code spelling) and resolve them against a device list.
 *
 * Nothing here calls libibverbs: the device list is data, so every
 * refusal can be tested on a machine without RDMA.
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/ibverbs.h>

#include "ibverbs_priv.h"

struct var_desc {
	const char *name;     /* the README spelling */
	const char *alt;      /* the code spelling, NULL when the same */
	unsigned long min;
	unsigned long max;
};

/* Indexed by enum tv_ibv_var.  The device name has no numeric range. */
static const struct var_desc vars[TV_IBV_VAR_COUNT] = {
	[TV_IBV_VAR_DEVICE] = { "RDMA_DEVICE", NULL, 0, 0 },
	[TV_IBV_VAR_PORT] = { "RDMA_DEVICE_PORT", NULL, 1, 255 },
	[TV_IBV_VAR_GID_INDEX] = { "RDMA_GID_INDEX", NULL, 0, 255 },
	[TV_IBV_VAR_PKEY_INDEX] = { "RDMA_QP_PKEY_INDEX", "RDMA_PKEY", 0,
				    65535 },
	[TV_IBV_VAR_QUEUE_DEPTH] = { "RDMA_QP_QUEUE_DEPTH", "RDMA_QUEUE_DEPTH",
				     1, 65536 },
	[TV_IBV_VAR_TIMEOUT] = { "RDMA_QP_TIMEOUT", "RDMA_TIMEOUT", 0, 31 },
	[TV_IBV_VAR_RETRY_COUNT] = { "RDMA_QP_RETRY_COUNT", "RDMA_RETRY_CNT",
				     0, 7 },
	[TV_IBV_VAR_SL] = { "RDMA_QP_SL", "RDMA_SL", 0, 7 },
	[TV_IBV_VAR_MTU] = { "RDMA_QP_MTU", "RDMA_MTU", 256, 4096 },
	[TV_IBV_VAR_TRAFFIC_CLASS] = { "RDMA_TRAFFIC_CLASS", NULL, 0, 255 },
};

void ibb_msg(char *msg, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (!msg || !cap)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, cap, fmt, ap);
	va_end(ap);
}

const char *tv_ibv_var_name(enum tv_ibv_var var)
{
	if ((unsigned)var >= TV_IBV_VAR_COUNT)
		return NULL;
	return vars[var].name;
}

const char *tv_ibv_var_alt_name(enum tv_ibv_var var)
{
	if ((unsigned)var >= TV_IBV_VAR_COUNT)
		return NULL;
	return vars[var].alt;
}

void tv_ibv_config_default(struct tv_ibv_config *cfg)
{
	assert(cfg);
	memset(cfg, 0, sizeof(*cfg));
	cfg->gid_index = -1;
	cfg->queue_depth = 1024;
	cfg->timeout = 14;
	cfg->retry_cnt = 7;
}

/*
 * Strict decimal: digits only, no sign, no blanks, no trailing junk.
 * -ERANGE for a well-formed number too large for an unsigned long.
 */
static int parse_decimal(const char *s, unsigned long *v_p)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno)
		return -ERANGE;
	*v_p = v;
	return 0;
}

static int mtu_from_bytes(unsigned long bytes, enum tv_vf_mtu *mtu_p)
{
	for (int m = TV_MTU_256; m <= TV_MTU_4096; m++) {
		if ((unsigned long)tv_vf_mtu_bytes((enum tv_vf_mtu)m) == bytes) {
			*mtu_p = (enum tv_vf_mtu)m;
			return 0;
		}
	}
	return -EINVAL;
}

/* One spelling's value, checked against the variable's range. */
static int parse_one(enum tv_ibv_var var, const char *name, const char *s,
		     char *msg, size_t cap, unsigned long *v_p)
{
	const struct var_desc *d = &vars[var];
	enum tv_vf_mtu mtu;
	unsigned long v = 0;
	int ret;

	if (var == TV_IBV_VAR_MTU) {
		if (parse_decimal(s, &v) || mtu_from_bytes(v, &mtu)) {
			ibb_msg(msg, cap,
				"%s=%s: invalid MTU, valid values are 256, "
				"512, 1024, 2048, 4096 (bytes, at most the "
				"port's active MTU)", name, s);
			return -EINVAL;
		}
		*v_p = v;
		return 0;
	}
	ret = parse_decimal(s, &v);
	if (ret == -EINVAL) {
		ibb_msg(msg, cap,
			"%s=%s: not a decimal number, valid values are %lu..%lu",
			name, s, d->min, d->max);
		return -EINVAL;
	}
	if (ret == -ERANGE || v < d->min || v > d->max) {
		ibb_msg(msg, cap, "%s=%s: out of range, valid values are %lu..%lu",
			name, s, d->min, d->max);
		return -EINVAL;
	}
	*v_p = v;
	return 0;
}

static const char *get_var(tv_ibv_getenv_fn fn, void *ctx, const char *name)
{
	const char *s;

	if (!name)
		return NULL;
	s = fn(ctx, name);
	/* An empty value counts as unset, as `RDMA_SL= prog` intends. */
	return s && *s ? s : NULL;
}

/*
 * Read a numeric variable in both spellings.  1: set (*v_p, *src_p),
 * 0: unset, -EINVAL: bad or the two spellings disagree.
 */
static int read_number(tv_ibv_getenv_fn fn, void *ctx, enum tv_ibv_var var,
		       char *msg, size_t cap, unsigned long *v_p,
		       const char **src_p)
{
	const struct var_desc *d = &vars[var];
	const char *s1 = get_var(fn, ctx, d->name);
	const char *s2 = get_var(fn, ctx, d->alt);
	unsigned long v1 = 0, v2 = 0;

	if (s1 && parse_one(var, d->name, s1, msg, cap, &v1))
		return -EINVAL;
	if (s2 && parse_one(var, d->alt, s2, msg, cap, &v2))
		return -EINVAL;
	if (s1 && s2 && v1 != v2) {
		ibb_msg(msg, cap,
			"%s=%s and %s=%s disagree: they name the same setting, "
			"set one of them", d->name, s1, d->alt, s2);
		return -EINVAL;
	}
	if (!s1 && !s2)
		return 0;
	*v_p = s1 ? v1 : v2;
	*src_p = s1 ? d->name : d->alt;
	return 1;
}

static int read_device(tv_ibv_getenv_fn fn, void *ctx, char *msg, size_t cap,
		       struct tv_ibv_config *cfg)
{
	const char *name = vars[TV_IBV_VAR_DEVICE].name;
	const char *s = get_var(fn, ctx, name);

	if (!s)
		return 0;
	if (strlen(s) >= sizeof(cfg->device)) {
		ibb_msg(msg, cap,
			"%s: device name too long, valid names have at most "
			"%zu characters", name, sizeof(cfg->device) - 1);
		return -EINVAL;
	}
	strcpy(cfg->device, s);
	cfg->source[TV_IBV_VAR_DEVICE] = name;
	return 0;
}

/* Store a parsed, range-checked value into its field. */
static void store(struct tv_ibv_config *cfg, enum tv_ibv_var var,
		  unsigned long v)
{
	switch (var) {
	case TV_IBV_VAR_PORT: cfg->port = (uint8_t)v; break;
	case TV_IBV_VAR_GID_INDEX: cfg->gid_index = (int16_t)v; break;
	case TV_IBV_VAR_PKEY_INDEX: cfg->pkey_index = (uint16_t)v; break;
	case TV_IBV_VAR_QUEUE_DEPTH: cfg->queue_depth = (uint32_t)v; break;
	case TV_IBV_VAR_TIMEOUT: cfg->timeout = (uint8_t)v; break;
	case TV_IBV_VAR_RETRY_COUNT: cfg->retry_cnt = (uint8_t)v; break;
	case TV_IBV_VAR_SL: cfg->sl = (uint8_t)v; break;
	case TV_IBV_VAR_TRAFFIC_CLASS: cfg->traffic_class = (uint8_t)v; break;
	case TV_IBV_VAR_MTU: {
		enum tv_vf_mtu mtu = 0;
		int ret = mtu_from_bytes(v, &mtu);

		assert(ret == 0);
		(void)ret;
		cfg->mtu = mtu;
		break;
	}
	case TV_IBV_VAR_DEVICE:
	case TV_IBV_VAR_COUNT:
		assert(0 && "not a numeric variable");
		break;
	}
}

int tv_ibv_config_parse(tv_ibv_getenv_fn getenv_fn, void *ctx, char *msg,
			size_t msg_cap, struct tv_ibv_config *cfg_p)
{
	struct tv_ibv_config cfg;
	int ret;

	if (!getenv_fn || !cfg_p)
		return -EINVAL;
	tv_ibv_config_default(&cfg);
	ret = read_device(getenv_fn, ctx, msg, msg_cap, &cfg);
	if (ret)
		return ret;
	for (int i = TV_IBV_VAR_DEVICE + 1; i < TV_IBV_VAR_COUNT; i++) {
		unsigned long v = 0;
		const char *src = NULL;

		ret = read_number(getenv_fn, ctx, (enum tv_ibv_var)i, msg,
				  msg_cap, &v, &src);
		if (ret < 0)
			return ret;
		if (ret == 0)
			continue;
		store(&cfg, (enum tv_ibv_var)i, v);
		cfg.source[i] = src;
	}
	*cfg_p = cfg;
	return 0;
}

static const char *env_getenv(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

int tv_ibv_config_from_env(char *msg, size_t msg_cap,
			   struct tv_ibv_config *cfg_p)
{
	return tv_ibv_config_parse(env_getenv, NULL, msg, msg_cap, cfg_p);
}

/* ---- resolution against a device list ---------------------------------- */

const char *tv_ibv_gid_type_str(enum tv_ibv_gid_type type)
{
	switch (type) {
	case TV_IBV_GID_IB: return "IB";
	case TV_IBV_GID_ROCE_V1: return "RoCE v1";
	case TV_IBV_GID_ROCE_V2: return "RoCE v2";
	case TV_IBV_GID_UNKNOWN: break;
	}
	return "unknown";
}

const char *tv_ibv_port_state_str(enum tv_vf_port_state state)
{
	switch (state) {
	case TV_PORT_DOWN: return "DOWN";
	case TV_PORT_INIT: return "INIT";
	case TV_PORT_ARMED: return "ARMED";
	case TV_PORT_ACTIVE: return "ACTIVE";
	}
	return "unknown";
}

int tv_ibv_gid_is_ipv4(const uint8_t gid[16])
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0,
					    0, 0, 0xff, 0xff };

	return memcmp(gid, prefix, sizeof(prefix)) == 0;
}

/* The name of the variable that set var, for messages. */
static const char *src_name(const struct tv_ibv_config *cfg,
			    enum tv_ibv_var var)
{
	return cfg->source[var] ? cfg->source[var] : vars[var].name;
}

static int find_device(const struct tv_ibv_config *cfg,
		       const struct tv_ibv_device_info *infos, size_t count,
		       char *msg, size_t cap, size_t *idx_p)
{
	size_t len = 0;
	char have[256] = "";

	for (size_t i = 0; i < count; i++) {
		if (!strcmp(infos[i].attr.name, cfg->device)) {
			*idx_p = i;
			return 0;
		}
		if (len < sizeof(have))
			len += (size_t)snprintf(have + len, sizeof(have) - len,
						"%s%s", i ? ", " : "",
						infos[i].attr.name);
	}
	ibb_msg(msg, cap, "%s=%s: no such device, valid names are: %s",
		src_name(cfg, TV_IBV_VAR_DEVICE), cfg->device,
		count ? have : "(no RDMA device on this machine)");
	return -EINVAL;
}

static const struct tv_ibv_port_info *
first_active_port(const struct tv_ibv_device_info *info)
{
	for (uint32_t p = 0; p < info->num_ports; p++)
		if (info->ports[p].attr.state == TV_PORT_ACTIVE)
			return &info->ports[p];
	return NULL;
}

/* The device (named or the first with an active port) and its port. */
static int pick_port(const struct tv_ibv_config *cfg,
		     const struct tv_ibv_device_info *infos, size_t count,
		     char *msg, size_t cap, size_t *idx_p,
		     const struct tv_ibv_port_info **port_p)
{
	const struct tv_ibv_device_info *info;
	size_t idx = 0;
	int ret;

	if (cfg->device[0]) {
		ret = find_device(cfg, infos, count, msg, cap, &idx);
		if (ret)
			return ret;
	} else {
		for (idx = 0; idx < count; idx++)
			if (first_active_port(&infos[idx]))
				break;
		if (idx == count) {
			ibb_msg(msg, cap, "no RDMA device with an active port "
				"(%zu device(s) found); set RDMA_DEVICE and "
				"RDMA_DEVICE_PORT or bring a port up", count);
			return -ENODEV;
		}
	}
	info = &infos[idx];
	if (!cfg->port) {
		*port_p = first_active_port(info);
		if (!*port_p) {
			ibb_msg(msg, cap, "%s=%s: no active port on the device",
				src_name(cfg, TV_IBV_VAR_DEVICE), info->attr.name);
			return -EINVAL;
		}
		*idx_p = idx;
		return 0;
	}
	if (cfg->port > info->num_ports) {
		ibb_msg(msg, cap, "%s=%u: out of range, valid values are 1..%u "
			"on %s", src_name(cfg, TV_IBV_VAR_PORT), cfg->port,
			info->num_ports, info->attr.name);
		return -EINVAL;
	}
	*port_p = &info->ports[cfg->port - 1];
	if ((*port_p)->attr.state != TV_PORT_ACTIVE) {
		ibb_msg(msg, cap, "%s=%u: port is %s on %s, valid values are "
			"its ACTIVE ports", src_name(cfg, TV_IBV_VAR_PORT),
			cfg->port, tv_ibv_port_state_str((*port_p)->attr.state),
			info->attr.name);
		return -EINVAL;
	}
	*idx_p = idx;
	return 0;
}

static const struct tv_ibv_gid *gid_at(const struct tv_ibv_port_info *port,
				       uint32_t index)
{
	for (uint32_t i = 0; i < port->num_gids; i++)
		if (port->gids[i].index == index)
			return &port->gids[i];
	return NULL;
}

/*
 * The default GID: RoCE v2 and IPv4-mapped (routable, what RoCE v2 fabrics
 * are set up for), then any RoCE v2, then index 0, then the first valid.
 */
static int default_gid(const struct tv_ibv_port_info *port)
{
	const struct tv_ibv_gid *v2 = NULL;

	for (uint32_t i = 0; i < port->num_gids; i++) {
		const struct tv_ibv_gid *g = &port->gids[i];

		if (g->type != TV_IBV_GID_ROCE_V2 || g->index > 255)
			continue;
		if (tv_ibv_gid_is_ipv4(g->raw))
			return (int)g->index;
		if (!v2)
			v2 = g;
	}
	if (v2)
		return (int)v2->index;
	if (gid_at(port, 0))
		return 0;
	if (port->num_gids && port->gids[0].index <= 255)
		return (int)port->gids[0].index;
	return -1;
}

static int resolve_gid(const struct tv_ibv_config *cfg,
		       const struct tv_ibv_device_info *info,
		       const struct tv_ibv_port_info *port, char *msg,
		       size_t cap, int16_t *gid_p)
{
	const char *var = src_name(cfg, TV_IBV_VAR_GID_INDEX);
	uint32_t len = port->attr.gid_tbl_len;
	int idx = cfg->gid_index;

	if (idx < 0) {
		idx = default_gid(port);
		if (idx < 0) {
			ibb_msg(msg, cap, "%s port %u has no valid GID; set %s",
				info->attr.name, port->port_num, var);
			return -EINVAL;
		}
	} else if ((uint32_t)idx >= len) {
		ibb_msg(msg, cap, "%s=%d: out of range, valid values are 0..%u "
			"on %s port %u", var, idx, len ? len - 1 : 0,
			info->attr.name, port->port_num);
		return -EINVAL;
	} else if (!gid_at(port, (uint32_t)idx)) {
		ibb_msg(msg, cap, "%s=%d: the GID table entry is empty on %s "
			"port %u; valid values are the indexes "
			"`tensorverbs devices` lists", var, idx,
			info->attr.name, port->port_num);
		return -EINVAL;
	}
	*gid_p = (int16_t)idx;
	return 0;
}

/* The port-dependent limits: pkey index, queue depth, MTU. */
static int resolve_limits(const struct tv_ibv_config *cfg,
			  const struct tv_ibv_device_info *info,
			  const struct tv_ibv_port_info *port, char *msg,
			  size_t cap, enum tv_vf_mtu *mtu_p)
{
	uint32_t pkeys = port->attr.pkey_tbl_len;
	enum tv_vf_mtu active = port->attr.active_mtu;

	if (pkeys && cfg->pkey_index >= pkeys) {
		ibb_msg(msg, cap, "%s=%u: out of range, valid values are 0..%u "
			"on %s port %u", src_name(cfg, TV_IBV_VAR_PKEY_INDEX),
			cfg->pkey_index, pkeys - 1, info->attr.name,
			port->port_num);
		return -EINVAL;
	}
	if (info->attr.max_qp_wr && cfg->queue_depth > info->attr.max_qp_wr) {
		ibb_msg(msg, cap, "%s=%u: out of range, valid values are 1..%u "
			"on %s", src_name(cfg, TV_IBV_VAR_QUEUE_DEPTH),
			cfg->queue_depth, info->attr.max_qp_wr, info->attr.name);
		return -EINVAL;
	}
	/* Equal to the active MTU is valid (the original refused it). */
	if (cfg->mtu && cfg->mtu > active) {
		ibb_msg(msg, cap, "%s=%d: above the active MTU of %s port %u, "
			"valid values are 256..%d", src_name(cfg, TV_IBV_VAR_MTU),
			tv_vf_mtu_bytes(cfg->mtu), info->attr.name,
			port->port_num, tv_vf_mtu_bytes(active));
		return -EINVAL;
	}
	*mtu_p = cfg->mtu ? cfg->mtu : active;
	return 0;
}

int tv_ibv_config_resolve(const struct tv_ibv_config *cfg,
			  const struct tv_ibv_device_info *infos, size_t count,
			  char *msg, size_t msg_cap,
			  struct tv_ibv_config *out_p, size_t *dev_index_p)
{
	const struct tv_ibv_port_info *port = NULL;
	struct tv_ibv_config out;
	size_t idx = 0;
	int ret;

	if (!cfg || (count && !infos) || !out_p || !dev_index_p)
		return -EINVAL;
	ret = pick_port(cfg, infos, count, msg, msg_cap, &idx, &port);
	if (ret)
		return ret;
	assert(idx < count && port);
	out = *cfg;
	ret = resolve_gid(cfg, &infos[idx], port, msg, msg_cap,
			  &out.gid_index);
	if (ret)
		return ret;
	ret = resolve_limits(cfg, &infos[idx], port, msg, msg_cap, &out.mtu);
	if (ret)
		return ret;
	snprintf(out.device, sizeof(out.device), "%s", infos[idx].attr.name);
	out.port = port->port_num;
	*out_p = out;
	*dev_index_p = idx;
	return 0;
}
