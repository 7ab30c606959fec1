/*
 * The port workload's scenario keys (docs/port.md): "port" (the engines'
 * configuration and the producers' timing) and "programs" (what the
 * nodes do).  Each program gets its own region of every node's buffer
 * and its own connection per pair of nodes; programs.c compiles it into
 * one task per node.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pt.h"

#define PT_DEFAULT_TIMEOUT_NS 100000000ull /* 100 ms per blocking op */

static const char *const port_keys[] = {
	"signal", "fifo_size", "cq_size", "max_write_queue", "lag_ns",
	"op_gap_ns", "poll_ns", "poll_max_ns", "timeout_ns", NULL
};

static const char *const kind_names[PT_NKINDS] = {
	[PT_PING_PONG] = "ping_pong",
	[PT_PACKET_PING_PONG] = "packet_ping_pong",
	[PT_ALLGATHER] = "allgather",
	[PT_ALLREDUCE] = "allreduce",
	[PT_ALL_TO_ALL] = "all_to_all",
	[PT_SEQUENCE] = "sequence",
};

/* The keys each kind takes, besides kind, start_ns and timeout_ns. */
static const char *const kind_keys[PT_NKINDS][8] = {
	[PT_PING_PONG] = { "nodes", "bytes", "iters", "flush_every" },
	[PT_PACKET_PING_PONG] = { "nodes", "bytes", "iters", "format",
				  "flush_every" },
	[PT_ALLGATHER] = { "nodes", "bytes" },
	[PT_ALLREDUCE] = { "nodes", "count" },
	[PT_ALL_TO_ALL] = { "nodes", "bytes" },
	[PT_SEQUENCE] = { "from", "to", "bytes", "ops" },
};

const char *pt_kind_name(enum pt_kind kind)
{
	return (unsigned)kind < PT_NKINDS ? kind_names[kind] : "?";
}

static int parse_signal(struct tv_ju *jc, json_t *port,
			enum tv_port_signal_mode *mode_p)
{
	static const char *const names[] = { "auto", "atomic", "write_imm" };
	char *s = NULL;
	int rc;

	rc = tv_ju_get_str(jc, "$.port", port, "signal", false, &s);
	if (rc)
		return rc;
	*mode_p = TV_PORT_SIGNAL_AUTO;
	for (size_t i = 0; s && i < 3; i++)
		if (!strcmp(s, names[i]))
			*mode_p = (enum tv_port_signal_mode)i;
	if (s && strcmp(s, names[*mode_p])) {
		free(s);
		return tv_ju_fail(jc, "$.port.signal", "must be \"auto\", "
				  "\"atomic\" or \"write_imm\"");
	}
	free(s);
	return 0;
}

static int parse_port_times(struct tv_ju *jc, json_t *port,
			    struct pt_scenario *sc)
{
	json_t *lag = json_object_get(port, "lag_ns");

	sc->lag_min_ns = sc->lag_max_ns = 0;
	if (lag && tv_ju_range(jc, "$.port.lag_ns", lag, &sc->lag_min_ns,
			       &sc->lag_max_ns))
		return -EINVAL;
	if (sc->lag_max_ns > 1000000000ull)
		return tv_ju_fail(jc, "$.port.lag_ns", "at most 1 s");
	if (tv_ju_get_uint(jc, "$.port", port, "op_gap_ns", 100, 1000000000ull,
			   &sc->op_gap_ns) ||
	    tv_ju_get_uint(jc, "$.port", port, "poll_ns", 200, 1000000000ull,
			   &sc->poll_ns) ||
	    tv_ju_get_uint(jc, "$.port", port, "poll_max_ns", 1000000,
			   1000000000ull, &sc->poll_max_ns) ||
	    tv_ju_get_uint(jc, "$.port", port, "timeout_ns",
			   PT_DEFAULT_TIMEOUT_NS, 3600000000000ull,
			   &sc->timeout_ns))
		return -EINVAL;
	if (!sc->poll_ns)
		return tv_ju_fail(jc, "$.port.poll_ns", "must be > 0");
	if (sc->poll_max_ns < sc->poll_ns)
		return tv_ju_fail(jc, "$.port.poll_max_ns", "is below poll_ns");
	return 0;
}

static int parse_port(struct tv_ju *jc, json_t *root, struct pt_scenario *sc)
{
	json_t *port = json_object_get(root, "port");
	json_t *empty = json_object();
	uint64_t fifo, cq, mwq;
	int rc = -EINVAL;

	if (!empty)
		return -ENOMEM;
	if (port && (tv_ju_need_object(jc, "$.port", port) ||
		     tv_ju_check_keys(jc, "$.port", port, port_keys)))
		goto out;
	port = port ? port : empty;
	rc = parse_signal(jc, port, &sc->mode);
	if (rc)
		goto out;
	rc = -EINVAL;
	if (tv_ju_get_uint(jc, "$.port", port, "fifo_size", 128, 1u << 16,
			   &fifo) ||
	    tv_ju_get_uint(jc, "$.port", port, "cq_size", 1024, 65536, &cq) ||
	    tv_ju_get_uint(jc, "$.port", port, "max_write_queue", 0, 65536,
			   &mwq) ||
	    parse_port_times(jc, port, sc))
		goto out;
	if (!fifo || (fifo & (fifo - 1))) {
		rc = tv_ju_fail(jc, "$.port.fifo_size",
				"must be a positive power of two");
		goto out;
	}
	if (cq < 8 || (mwq && mwq > cq - 4)) {
		rc = tv_ju_fail(jc, cq < 8 ? "$.port.cq_size" :
				"$.port.max_write_queue",
				"needs cq_size >= 8 and max_write_queue <= "
				"cq_size - 4");
		goto out;
	}
	sc->fifo_size = (uint32_t)fifo;
	sc->cq_size = (uint32_t)cq;
	sc->max_write_queue = (uint32_t)mwq;
	rc = 0;
out:
	json_decref(empty);
	return rc;
}

/* "nodes": distinct node ids, at least two; default: every node. */
static int parse_nodes(struct tv_ju *jc, const char *path, json_t *prog,
		       uint32_t nodes, struct pt_program *p)
{
	json_t *arr = json_object_get(prog, "nodes"), *v;
	char sub[TV_JU_PATH_MAX];
	size_t i;

	if (!arr) {
		p->nnodes = nodes < PT_MAX_NODES ? nodes : PT_MAX_NODES;
		for (uint32_t n = 0; n < p->nnodes; n++)
			p->nodes[n] = n;
		return 0;
	}
	tv_ju_path_key(sub, path, "nodes");
	if (tv_ju_need_array(jc, sub, arr))
		return -EINVAL;
	if (json_array_size(arr) < 2 || json_array_size(arr) > PT_MAX_NODES)
		return tv_ju_fail(jc, sub, "needs 2 to %u nodes", PT_MAX_NODES);
	json_array_foreach(arr, i, v) {
		char el[TV_JU_PATH_MAX];
		uint64_t id;

		tv_ju_path_idx(el, sub, i);
		if (tv_ju_uint(jc, el, v, nodes - 1, &id))
			return -EINVAL;
		for (size_t k = 0; k < i; k++)
			if (p->nodes[k] == id)
				return tv_ju_fail(jc, el, "node %u twice",
						  (unsigned)id);
		p->nodes[i] = (uint32_t)id;
	}
	p->nnodes = (uint32_t)json_array_size(arr);
	return 0;
}

static int parse_format(struct tv_ju *jc, const char *path, json_t *prog,
			struct pt_program *p)
{
	char *s = NULL;
	int rc = 0;

	rc = tv_ju_get_str(jc, path, prog, "format", false, &s);
	if (rc)
		return rc;
	p->format = PT_LL16;
	if (s && !strcmp(s, "ll8"))
		p->format = PT_LL8;
	else if (s && strcmp(s, "ll16"))
		rc = tv_ju_fail(jc, path, "format: must be \"ll16\" or \"ll8\"");
	free(s);
	return rc;
}

static int parse_kind(struct tv_ju *jc, const char *path, json_t *prog,
		      enum pt_kind *kind_p)
{
	char *s = NULL;
	char known[160] = "";
	size_t used = 0;
	int rc;

	rc = tv_ju_get_str(jc, path, prog, "kind", true, &s);
	if (rc)
		return rc;
	for (int k = 0; k < PT_NKINDS; k++) {
		if (!strcmp(s, kind_names[k])) {
			free(s);
			*kind_p = (enum pt_kind)k;
			return 0;
		}
		used += (size_t)snprintf(known + used, sizeof(known) - used,
					 "%s%s", k ? ", " : "", kind_names[k]);
	}
	tv_ju_fail(jc, path, "kind: unknown '%s' (known: %s)", s, known);
	free(s);
	return -EINVAL;
}

static int check_prog_keys(struct tv_ju *jc, const char *path, json_t *prog,
			   enum pt_kind kind)
{
	const char *keys[12] = { "kind", "start_ns", "timeout_ns" };
	size_t n = 3;

	for (size_t i = 0; i < 8 && kind_keys[kind][i]; i++)
		keys[n++] = kind_keys[kind][i];
	keys[n] = NULL;
	return tv_ju_check_keys(jc, path, prog, keys);
}

/* Sizes and counts, each kind's own rules. */
static int parse_sizes(struct tv_ju *jc, const char *path, json_t *prog,
		       struct pt_program *p)
{
	uint64_t iters, fe;

	if (tv_ju_get_uint(jc, path, prog, "bytes", 4096, 1ull << 24,
			   &p->bytes) ||
	    tv_ju_get_uint(jc, path, prog, "count", 1024, 1ull << 22,
			   &p->count) ||
	    tv_ju_get_uint(jc, path, prog, "iters", 10, PT_MAX_ITERS, &iters) ||
	    tv_ju_get_uint(jc, path, prog, "flush_every", 0, PT_MAX_ITERS,
			   &fe))
		return -EINVAL;
	p->iters = (uint32_t)iters;
	p->flush_every = (uint32_t)fe;
	if (p->kind == PT_PACKET_PING_PONG &&
	    p->bytes % (p->format == PT_LL16 ? 8 : 4))
		return tv_ju_fail(jc, path, "bytes: LL16 packets carry 8-byte "
				  "words, LL8 packets 4-byte ones");
	if (p->kind == PT_ALLREDUCE && (!p->count || p->count % p->nnodes))
		return tv_ju_fail(jc, path, "count: must be a positive "
				  "multiple of the %u nodes", p->nnodes);
	if ((p->kind == PT_PING_PONG || p->kind == PT_PACKET_PING_PONG) &&
	    p->nnodes != 2)
		return tv_ju_fail(jc, path, "nodes: a ping-pong has 2 nodes");
	return 0;
}

static int parse_program(struct tv_ju *jc, const char *path, json_t *prog,
			 struct pt_scenario *sc, struct pt_program *p)
{
	int rc;

	if (tv_ju_need_object(jc, path, prog))
		return -EINVAL;
	/* -ENOMEM or -EINVAL */
	rc = parse_kind(jc, path, prog, &p->kind);
	if (rc)
		return rc;
	if (check_prog_keys(jc, path, prog, p->kind) ||
	    tv_ju_get_uint(jc, path, prog, "start_ns", 0, 3600000000000ull,
			   &p->start_ns) ||
	    tv_ju_get_uint(jc, path, prog, "timeout_ns", sc->timeout_ns,
			   3600000000000ull, &p->timeout_ns))
		return -EINVAL;
	if (p->kind == PT_SEQUENCE) {
		uint64_t from, to;

		if (tv_ju_need_uint(jc, path, prog, "from", sc->nodes - 1,
				    &from) ||
		    tv_ju_need_uint(jc, path, prog, "to", sc->nodes - 1, &to) ||
		    tv_ju_get_uint(jc, path, prog, "bytes", 65536, 1ull << 24,
				   &p->bytes))
			return -EINVAL;
		if (from == to)
			return tv_ju_fail(jc, path, "'from' and 'to' are equal");
		p->from = (uint32_t)from;
		p->to = (uint32_t)to;
		p->nnodes = 2;
		p->nodes[0] = p->from;
		p->nodes[1] = p->to;
		return 0;
	}
	if (parse_nodes(jc, path, prog, sc->nodes, p))
		return -EINVAL;
	rc = parse_format(jc, path, prog, p);
	if (rc)
		return rc;
	return parse_sizes(jc, path, prog, p);
}

static int parse_programs(struct tv_ju *jc, json_t *root,
			  struct pt_scenario *sc)
{
	json_t *arr = json_object_get(root, "programs"), *v;
	char path[TV_JU_PATH_MAX];
	size_t i;

	if (!arr)
		return tv_ju_fail(jc, "$", "a port scenario needs \"programs\"");
	if (tv_ju_need_array(jc, "$.programs", arr))
		return -EINVAL;
	if (!json_array_size(arr) || json_array_size(arr) > PT_MAX_PROGRAMS)
		return tv_ju_fail(jc, "$.programs", "needs 1 to %u programs",
				  PT_MAX_PROGRAMS);
	sc->progs = calloc(json_array_size(arr), sizeof(*sc->progs));
	if (!sc->progs)
		return -ENOMEM;
	json_array_foreach(arr, i, v) {
		int rc;

		tv_ju_path_idx(path, "$.programs", i);
		rc = parse_program(jc, path, v, sc, &sc->progs[i]);
		sc->nprogs = i + 1;
		if (!rc)
			rc = pt_compile(jc, sc, i, path,
					json_object_get(v, "ops"));
		if (rc)
			return rc;
	}
	return 0;
}

void pt_scenario_free(void *wl)
{
	struct pt_scenario *sc = wl;

	if (!sc)
		return;
	for (size_t i = 0; i < sc->ntasks; i++)
		free(sc->tasks[i].ops);
	free(sc->tasks);
	free(sc->pairs);
	free(sc->progs);
	free(sc);
}

/* When the last program could start its last op: the default deadline. */
static void note_times(struct pt_scenario *sc, struct tv_tb_scenario *core)
{
	uint64_t last = 0;

	for (size_t i = 0; i < sc->nprogs; i++) {
		const struct pt_program *p = &sc->progs[i];
		uint64_t span = p->start_ns;

		for (size_t t = 0; t < sc->ntasks; t++)
			if (sc->tasks[t].prog == i)
				span = p->start_ns + sc->tasks[t].nops *
						     (sc->op_gap_ns + 1);
		if (span > last)
			last = span;
	}
	tv_tb_scenario_note_time(core, last);
	tv_tb_scenario_set_ops(core, sc->nops);
}

int pt_scenario_parse(struct tv_ju *jc, json_t *root,
		      struct tv_tb_scenario *core, void **wl_p)
{
	struct pt_scenario *sc = calloc(1, sizeof(*sc));
	int rc;

	if (!sc)
		return -ENOMEM;
	sc->nodes = tv_tb_scenario_nodes(core);
	if (sc->nodes > PT_MAX_NODES) {
		rc = tv_ju_fail(jc, "$.nodes", "the port workload takes at "
				"most %u nodes", PT_MAX_NODES);
		goto err;
	}
	rc = parse_port(jc, root, sc);
	if (!rc)
		rc = parse_programs(jc, root, sc);
	if (rc)
		goto err;
	note_times(sc, core);
	*wl_p = sc;
	return 0;
err:
	pt_scenario_free(sc);
	return rc;
}

void pt_engine_config(const struct pt_scenario *sc, uint32_t id,
		      struct tv_port_config *cfg)
{
	tv_port_config_default(cfg);
	cfg->node_id = id;
	cfg->signal_mode = sc->mode;
	cfg->cq_size = sc->cq_size;
	/* The engine's receives (write-imm signals) must fit the CQ: its
	 * default depth (16) is above the smallest CQ a scenario may ask. */
	if (cfg->recv_depth > sc->cq_size)
		cfg->recv_depth = sc->cq_size;
	cfg->max_write_queue = sc->max_write_queue;
	cfg->fifo_size = sc->fifo_size;
}
