/*
 * The rendezvous scenario's `expect_stats`: expectations on the engine's
 * statistics (how a scenario asserts "no META_DATA_UPDATE on the second
 * step"), and the names of those statistics.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/engine.h>

#include "rv_scenario_int.h"
#include "wire.h"

struct stat_field {
	const char *name;
	size_t offset;
};

#define STAT(f) { #f, offsetof(struct tv_engine_stats, f) }
static const struct stat_field stat_fields[] = {
	STAT(recvs_started), STAT(recvs_ok), STAT(recvs_failed),
	STAT(acks_sent), STAT(acks_recv), STAT(acks_ridden), STAT(tensor_writes),
	STAT(tensor_bytes_written), STAT(zero_copy_writes),
	STAT(staged_writes), STAT(fast_requests), STAT(fast_responses),
	STAT(inline_posts), STAT(proxy_copies), STAT(checksum_failures),
	STAT(malformed_msgs),
	STAT(pool_blocks), STAT(pool_bytes_registered),
	STAT(mr_registrations), STAT(ack_timeouts), STAT(recv_timeouts),
	STAT(channel_failures), STAT(reconnects), STAT(retries),
};
#undef STAT

static const char *const msg_names[TV_MSG_TYPE_COUNT] = {
	[TV_MSG_META_DATA_UPDATE] = "META_DATA_UPDATE",
	[TV_MSG_TENSOR_RE_REQUEST] = "TENSOR_RE_REQUEST",
	[TV_MSG_TENSOR_REQUEST] = "TENSOR_REQUEST",
	[TV_MSG_ERROR_STATUS] = "ERROR_STATUS",
};

const char *scenario_msg_type_name(int msg_type)
{
	if (msg_type < 0 || msg_type >= TV_MSG_TYPE_COUNT)
		return "?";
	return msg_names[msg_type];
}

const char *scenario_stat_name(const char *name)
{
	for (size_t i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++)
		if (strcmp(name, stat_fields[i].name) == 0)
			return stat_fields[i].name;
	if (strcmp(name, "msgs_sent") == 0)
		return "msgs_sent";
	if (strcmp(name, "msgs_recv") == 0)
		return "msgs_recv";
	return NULL;
}

int scenario_stat_value(const struct tv_engine_stats *st, const char *stat,
			int msg_type, uint64_t *value_p)
{
	if (msg_type >= 0) {
		assert(msg_type < TV_MSG_TYPE_COUNT);
		if (strcmp(stat, "msgs_sent") == 0)
			*value_p = st->msgs_sent[msg_type];
		else if (strcmp(stat, "msgs_recv") == 0)
			*value_p = st->msgs_recv[msg_type];
		else
			return -ENOENT;
		return 0;
	}
	for (size_t i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++) {
		if (strcmp(stat, stat_fields[i].name) == 0) {
			*value_p = *(const uint64_t *)(const void *)
				((const char *)st + stat_fields[i].offset);
			return 0;
		}
	}
	return -ENOENT;
}

static int add_stat(struct tv_ju *jc, const char *path, json_t *v,
		    struct scenario *sc, int64_t node, const char *stat,
		    int msg_type)
{
	struct sc_stat_expect *e;
	int rc = tv_ju_grow((void **)&sc->stats, sc->nstats, &sc->stats_cap,
			 sizeof(*e));

	if (rc)
		return rc;
	e = &sc->stats[sc->nstats];
	memset(e, 0, sizeof(*e));
	e->node = node;
	e->stat = stat;
	e->msg_type = msg_type;
	if (tv_ju_range(jc, path, v, &e->min, &e->max))
		return -EINVAL;
	e->path = strdup(path);
	if (!e->path)
		return -ENOMEM;
	sc->nstats++;
	return 0;
}

static int parse_msgs(struct tv_ju *jc, const char *path, json_t *obj,
		      struct scenario *sc, int64_t node, const char *stat)
{
	char sub[TV_JU_PATH_MAX];
	const char *key;
	json_t *v;
	int rc;

	if (tv_ju_need_object(jc, path, obj))
		return -EINVAL;
	json_object_foreach(obj, key, v) {
		int t;

		for (t = 0; t < TV_MSG_TYPE_COUNT; t++)
			if (strcmp(key, msg_names[t]) == 0)
				break;
		tv_ju_path_key(sub, path, key);
		if (t == TV_MSG_TYPE_COUNT)
			return tv_ju_fail(jc, sub,
				       "unknown message type (TENSOR_REQUEST, META_DATA_UPDATE, TENSOR_RE_REQUEST, ERROR_STATUS)");
		rc = add_stat(jc, sub, v, sc, node, stat, t);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_stat_entry(struct tv_ju *jc, const char *path, json_t *obj,
			    struct scenario *sc)
{
	char sub[TV_JU_PATH_MAX];
	int64_t node = -1;
	const char *key;
	json_t *v;
	int rc;

	if (tv_ju_need_object(jc, path, obj))
		return -EINVAL;
	if (json_object_get(obj, "node")) {
		uint64_t n;

		if (tv_ju_need_uint(jc, path, obj, "node", sc->nodes - 1, &n))
			return -EINVAL;
		node = (int64_t)n;
	}
	json_object_foreach(obj, key, v) {
		const char *stat = scenario_stat_name(key);

		if (strcmp(key, "node") == 0)
			continue;
		tv_ju_path_key(sub, path, key);
		if (!stat)
			return tv_ju_fail(jc, sub,
				       "unknown statistic (see docs/scenarios.md)");
		if (!strcmp(stat, "msgs_sent") || !strcmp(stat, "msgs_recv"))
			rc = parse_msgs(jc, sub, v, sc, node, stat);
		else
			rc = add_stat(jc, sub, v, sc, node, stat, -1);
		if (rc)
			return rc;
	}
	return 0;
}

int sc_parse_stats(struct tv_ju *jc, const char *path, json_t *arr,
		   struct scenario *sc)
{
	char sub[TV_JU_PATH_MAX];
	json_t *v;
	size_t i;
	int rc;

	if (tv_ju_need_array(jc, path, arr))
		return -EINVAL;
	json_array_foreach(arr, i, v) {
		tv_ju_path_idx(sub, path, i);
		rc = parse_stat_entry(jc, sub, v, sc);
		if (rc)
			return rc;
	}
	return 0;
}
