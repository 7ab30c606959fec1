/*
 * This file is private to the rendezvous workload: its part of a scenario.
 *
 * The workload's keys (engine, step_interval_ns, steps, expect_stats) are
 * parsed from JSON (docs/scenarios.md), validated strictly and flattened:
 * every `repeat` is expanded, every time is absolute virtual time, and
 * every recv points at the send it consumes.  The runner never looks at
 * JSON.  The core's part (nodes, links, faults, late nodes) is the
 * testbed's (testbed.h).
 */
#ifndef TV_RV_SCENARIO_H
#define TV_RV_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <tensorverbs/sim.h>
#include <tensorverbs/tensor.h>
#include <tensorverbs/workload.h>

#define SC_NO_SEND SIZE_MAX

enum sc_fill_pattern {
	SC_FILL_RANDOM = 0, /* seeded bytes (bool: 0/1) */
	SC_FILL_IOTA,       /* element i holds i, in the element's type */
	SC_FILL_ZEROS,
};

struct sc_fill {
	enum sc_fill_pattern pattern;
	bool has_seed;     /* else derived from run seed, step and name */
	uint64_t seed;
};

struct sc_bytes {
	char *data;
	size_t len;
};

struct sc_send {
	uint32_t from;
	uint32_t to;
	char *name;
	uint64_t step_id;
	uint64_t at_ns;            /* absolute virtual time */
	/* what is published */
	bool is_error;
	enum tv_code err_code;
	char *err_msg;
	enum tv_dtype dtype;
	struct tv_shape shape;
	bool dead;
	enum tv_placement place;
	bool unregistered;         /* caller-owned memory (tv_tensor_wrap_host) */
	struct sc_fill fill;
	struct sc_bytes *strings;  /* explicit string elements, or NULL */
	size_t nstrings;
	/* derived */
	bool requested;            /* some recv consumes it */
};

enum sc_expect_kind {
	SC_EXPECT_OK = 0,
	SC_EXPECT_ERROR,
	SC_EXPECT_ANY,             /* a tensor or an error: faults decide */
};

struct sc_expect {
	enum sc_expect_kind kind;
	/* error */
	enum tv_code code;
	char *message;             /* substring that must occur, or NULL */
	/* extra checks on an ok tensor, on top of "same as published" */
	bool has_dtype;
	enum tv_dtype dtype;
	bool has_shape;
	struct tv_shape shape;
	bool has_dead;
	bool dead;
	bool has_fill;
	struct sc_fill fill;
	struct sc_bytes *strings;
	size_t nstrings;
};

struct sc_recv {
	uint32_t node;
	uint32_t from;
	char *name;
	uint64_t step_id;
	uint64_t at_ns;            /* absolute virtual time */
	enum tv_placement place;
	struct sc_expect expect;
	size_t send_index;         /* the send it consumes */
};

/* One expected engine statistic: min <= value <= max. */
struct sc_stat_expect {
	int64_t node;              /* -1: summed over every node */
	const char *stat;          /* static name, see scenario_stat_value() */
	int msg_type;              /* for msgs_sent / msgs_recv, else -1 */
	uint64_t min;
	uint64_t max;
	char *path;                /* JSON path, for messages */
};

/* expect_faults: the point fired min..max times. */
struct sc_fault_expect {
	char *point;
	uint64_t min;
	uint64_t max;
};

struct scenario {
	uint32_t nodes;            /* the core's, copied */
	uint64_t *start_ns;        /* [nodes]: the core's late_nodes, copied */
	/* engine options (0: engine default) */
	bool validate_checksum;
	uint32_t queue_depth;
	uint64_t pool_block_bytes;
	uint64_t max_recv_bytes;   /* what a peer may make one receive allocate */
	/* fault tolerance; has_*: given in the file, else the runner decides */
	bool has_ack_timeout;
	uint64_t ack_timeout_ns;
	bool has_recv_timeout;
	uint64_t recv_timeout_ns;
	bool has_max_retries;
	uint32_t max_retries;
	bool has_reconnect;
	bool reconnect;
	size_t nsteps;
	struct sc_send *sends;
	size_t nsends;
	struct sc_recv *recvs;
	size_t nrecvs;
	struct sc_stat_expect *stats;
	size_t nstats;
	/* parser bookkeeping */
	size_t sends_cap;
	size_t recvs_cap;
	size_t stats_cap;
	struct tv_tb_scenario *core; /* while parsing only */
};

/* The workload's parse and free ops (workload.h). */
int rv_scenario_parse(struct tv_ju *jc, json_t *root,
		      struct tv_tb_scenario *core, void **wl_p);
void rv_scenario_free(void *wl);

/* Number of elements of a shape, or -EOVERFLOW. */
int scenario_num_elements(const struct tv_shape *shape, uint64_t *n_p);

struct tv_engine_stats;
/* Value of a named statistic; -ENOENT for an unknown name. */
int scenario_stat_value(const struct tv_engine_stats *st, const char *stat,
			int msg_type, uint64_t *value_p);
/* The canonical name for a stat name, or NULL if unknown. */
const char *scenario_stat_name(const char *name);
const char *scenario_msg_type_name(int msg_type);

#endif /* TV_RV_SCENARIO_H */
