/*
 * tensorverbs — the rdma-core (libibverbs) backend of the verbs facade.
 *
 * Three parts:
 *  - configuration: the TensorFlow verbs environment variables, both the
 *    README and the code spelling, parsed from a getenv-like callback
 *    (tv_ibv_config_parse) and then resolved against the devices that
 *    exist (tv_ibv_config_resolve).  Neither touches a device itself, so
 *    both are testable on a machine without RDMA;
 *  - device listing (tv_ibv_query_all), used by `tensorverbs devices` and
 *    by the resolution step;
 *  - the backend itself: tv_ibv_open() returns a struct tv_vf_device whose
 *    ops table is libibverbs.
 *
 * Every function returns 0 or a negative errno.  Where a message buffer is
 * taken, a refused configuration (-EINVAL, -ENODEV) leaves a one-line
 * explanation there that names the variable and its valid range.
 */
#ifndef TENSORVERBS_IBVERBS_H
#define TENSORVERBS_IBVERBS_H

#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/vf.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration ---------------------------------------------------- */

/* One per configuration variable; the index into tv_ibv_config.source. */
enum tv_ibv_var {
	TV_IBV_VAR_DEVICE,
	TV_IBV_VAR_PORT,
	TV_IBV_VAR_GID_INDEX,
	TV_IBV_VAR_PKEY_INDEX,
	TV_IBV_VAR_QUEUE_DEPTH,
	TV_IBV_VAR_TIMEOUT,
	TV_IBV_VAR_RETRY_COUNT,
	TV_IBV_VAR_SL,
	TV_IBV_VAR_MTU,
	TV_IBV_VAR_TRAFFIC_CLASS,
	TV_IBV_VAR_COUNT
};

#define TV_IBV_DEVICE_NAME_MAX 64

struct tv_ibv_config {
	char device[TV_IBV_DEVICE_NAME_MAX]; /* "": first with an active port */
	uint8_t port;           /* 0: the device's first active port */
	int16_t gid_index;      /* -1: a RoCE v2 GID, IPv4-mapped first */
	uint16_t pkey_index;
	uint32_t queue_depth;   /* send and receive WRs per QP */
	uint8_t timeout;        /* IB encoding: 4.096 us * 2^timeout */
	uint8_t retry_cnt;
	uint8_t sl;
	uint8_t traffic_class;
	enum tv_vf_mtu mtu;     /* 0: the port's active MTU */

	/* read-only: which variable set each value (NULL: the default) */
	const char *source[TV_IBV_VAR_COUNT];
};

/* Returns the value of a variable or NULL when it is not set. */
typedef const char *(*tv_ibv_getenv_fn)(void *ctx, const char *name);

/* The defaults of the TensorFlow verbs transport (see docs/ibverbs.md). */
void tv_ibv_config_default(struct tv_ibv_config *cfg);

/*
 * Read every variable through getenv_fn (both spellings).  An empty value
 * counts as unset.  -EINVAL and a message in msg for a bad value.
 */
int tv_ibv_config_parse(tv_ibv_getenv_fn getenv_fn, void *ctx, char *msg,
			size_t msg_cap, struct tv_ibv_config *cfg_p);

/* tv_ibv_config_parse() on the process environment. */
int tv_ibv_config_from_env(char *msg, size_t msg_cap,
			   struct tv_ibv_config *cfg_p);

/* The README name and the code name of a variable (code may be NULL). */
const char *tv_ibv_var_name(enum tv_ibv_var var);
const char *tv_ibv_var_alt_name(enum tv_ibv_var var);

/* ---- devices ---------------------------------------------------------- */

enum tv_ibv_gid_type {
	TV_IBV_GID_IB = 0,
	TV_IBV_GID_ROCE_V1,
	TV_IBV_GID_ROCE_V2,
	TV_IBV_GID_UNKNOWN,
};

struct tv_ibv_gid {
	uint8_t raw[16];
	uint32_t index;
	enum tv_ibv_gid_type type;
	char netdev[16];        /* "" when unknown */
};

struct tv_ibv_port_info {
	uint8_t port_num;
	struct tv_vf_port_attr attr;
	uint32_t num_gids;      /* the valid (non-zero) entries only */
	struct tv_ibv_gid *gids;
};

struct tv_ibv_device_info {
	struct tv_vf_device_attr attr; /* attr.name is the device name */
	char fw_ver[64];
	uint64_t node_guid;     /* host order */
	uint32_t num_ports;
	struct tv_ibv_port_info *ports;
};

/*
 * Every device with its ports and valid GIDs.  No device (or no RDMA in
 * the kernel) is a success with *count_p == 0.  Free with
 * tv_ibv_free_all().
 */
int tv_ibv_query_all(struct tv_ibv_device_info **infos_p, size_t *count_p);
void tv_ibv_free_all(struct tv_ibv_device_info *infos, size_t count);

const char *tv_ibv_gid_type_str(enum tv_ibv_gid_type type);
const char *tv_ibv_port_state_str(enum tv_vf_port_state state);
/* 1 when the GID is an IPv4-mapped IPv6 address (::ffff:a.b.c.d). */
int tv_ibv_gid_is_ipv4(const uint8_t gid[16]);

/*
 * Check cfg against the devices: the device exists, the port is active,
 * the GID index holds a valid GID, the pkey index, queue depth and MTU fit
 * the port and device.  Fills every default.  *out_p is the resolved
 * configuration, *dev_index_p the chosen device's index in infos.
 * -ENODEV when there is no usable device, -EINVAL for a bad value.
 */
int tv_ibv_config_resolve(const struct tv_ibv_config *cfg,
			  const struct tv_ibv_device_info *infos, size_t count,
			  char *msg, size_t msg_cap,
			  struct tv_ibv_config *out_p, size_t *dev_index_p);

/*
 * The RDMA_* variables of this process, parsed and checked against the
 * machine's devices (tv_ibv_config_from_env, then tv_ibv_config_resolve):
 * a bad value or a device that is not there is refused with msg naming
 * the variable.  *env_p is the configuration as the environment gave it.
 */
int tv_ibv_config_check_env(char *msg, size_t msg_cap,
			    struct tv_ibv_config *env_p);

/* ---- the backend ------------------------------------------------------ */

/*
 * Resolve cfg against the machine's devices and open the chosen one.
 * cfg NULL: the defaults.  Close with tv_ibv_close() once every PD, MR,
 * CQ and QP was destroyed (-EBUSY otherwise, nothing is closed).
 */
int tv_ibv_open(const struct tv_ibv_config *cfg, char *msg, size_t msg_cap,
		struct tv_vf_device **dev_p);
int tv_ibv_close(struct tv_vf_device *dev);

/* The resolved configuration of an open device. */
int tv_ibv_device_config(struct tv_vf_device *dev,
			 struct tv_ibv_config *cfg_p);

/* The connect step's parameters from the resolved configuration. */
int tv_ibv_connect_cfg(struct tv_vf_device *dev,
		       struct tv_vf_connect_cfg *cfg_p);

/*
 * The 1:1 mappings of libibverbs' completion enums onto the facade's,
 * exposed so that tests can check them for every value.  The arguments
 * are enum ibv_wc_status / enum ibv_wc_opcode values.  -EPROTO for a value
 * the facade does not have.
 */
int tv_ibv_map_wc_status(int ibv_status, enum tv_vf_wc_status *status_p);
int tv_ibv_map_wc_opcode(int ibv_opcode, enum tv_vf_wc_opcode *opcode_p);

#ifdef __cplusplus
}
#endif
#endif /* TENSORVERBS_IBVERBS_H */
