/*
 * The built-in demo of `tensorverbs run` (the rendezvous workload's): three nodes, three steps, mixed
 * dtypes, a size change, a string tensor, device tensors on either side,
 * a burst of concurrent requests, a dead tensor and a sender-side error.
 * Kept as JSON so it goes through the very parser scenario files do.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "rv_workload.h"

const char rv_demo_scenario[] =
"{\n"
"  \"name\": \"demo\",\n"
"  \"description\": \"built-in demo: a little of everything\",\n"
"  \"seed\": 7,\n"
"  \"nodes\": 3,\n"
"  \"link\": {\"latency_ns\": 2000, \"bandwidth_bytes_per_sec\": 12.5e9},\n"
"  \"steps\": [\n"
"    {\"step_id\": 1,\n"
"     \"sends\": [\n"
"       {\"from\": 0, \"to\": 1, \"name\": \"weights\", \"dtype\": \"float\", \"shape\": [64, 64]},\n"
"       {\"from\": 1, \"to\": 2, \"name\": \"grads\", \"dtype\": \"double\", \"shape\": [128]},\n"
"       {\"from\": 0, \"to\": 2, \"name\": \"tokens\", \"dtype\": \"string\", \"shape\": [3],\n"
"        \"strings\": [\"hello\", \"\", \"tensor\\u0000verbs\"]},\n"
"       {\"from\": 1, \"to\": 0, \"name\": \"embedding\", \"dtype\": \"float\", \"shape\": [10, 16],\n"
"        \"placement\": \"device\"},\n"
"       {\"from\": 2, \"to\": 0, \"name\": \"mask\", \"dtype\": \"bool\", \"shape\": [32]},\n"
"       {\"from\": 0, \"to\": 1, \"name\": \"shard\", \"dtype\": \"int32\", \"shape\": [256],\n"
"        \"repeat\": 8, \"at_ns\": 1000}\n"
"     ],\n"
"     \"recvs\": [\n"
"       {\"node\": 1, \"from\": 0, \"name\": \"weights\"},\n"
"       {\"node\": 2, \"from\": 1, \"name\": \"grads\", \"at_ns\": 5000},\n"
"       {\"node\": 2, \"from\": 0, \"name\": \"tokens\"},\n"
"       {\"node\": 0, \"from\": 1, \"name\": \"embedding\", \"placement\": \"device\"},\n"
"       {\"node\": 0, \"from\": 2, \"name\": \"mask\"},\n"
"       {\"node\": 1, \"from\": 0, \"name\": \"shard\", \"repeat\": 8}\n"
"     ]},\n"
"    {\"step_id\": 2,\n"
"     \"sends\": [\n"
"       {\"from\": 0, \"to\": 1, \"name\": \"weights\", \"dtype\": \"float\", \"shape\": [64, 64]},\n"
"       {\"from\": 1, \"to\": 0, \"name\": \"embedding\", \"dtype\": \"float\", \"shape\": [13, 16],\n"
"        \"placement\": \"device\", \"at_ns\": 20000},\n"
"       {\"from\": 2, \"to\": 1, \"name\": \"logits\", \"dtype\": \"half\", \"shape\": [4, 8]}\n"
"     ],\n"
"     \"recvs\": [\n"
"       {\"node\": 1, \"from\": 0, \"name\": \"weights\"},\n"
"       {\"node\": 0, \"from\": 1, \"name\": \"embedding\", \"placement\": \"device\"},\n"
"       {\"node\": 1, \"from\": 2, \"name\": \"logits\", \"placement\": \"device\"}\n"
"     ]},\n"
"    {\"step_id\": 3,\n"
"     \"sends\": [\n"
"       {\"from\": 0, \"to\": 1, \"name\": \"weights\", \"dtype\": \"int64\", \"shape\": [32]},\n"
"       {\"from\": 1, \"to\": 2, \"name\": \"maybe\", \"dtype\": \"int32\", \"dead\": true},\n"
"       {\"from\": 2, \"to\": 0, \"name\": \"lookup\",\n"
"        \"error\": {\"code\": \"NOT_FOUND\", \"message\": \"no such embedding row\"}}\n"
"     ],\n"
"     \"recvs\": [\n"
"       {\"node\": 1, \"from\": 0, \"name\": \"weights\"},\n"
"       {\"node\": 2, \"from\": 1, \"name\": \"maybe\", \"expect\": {\"dead\": true}},\n"
"       {\"node\": 0, \"from\": 2, \"name\": \"lookup\",\n"
"        \"expect\": {\"error\": \"NOT_FOUND\", \"message\": \"embedding row\"}}\n"
"     ]}\n"
"  ]\n"
"}\n";

/*
 * `tensorverbs bench sim`'s workload: 4 nodes all to all, per step and
 * ordered pair 8 x 1 KiB and 1 x 64 KiB float tensors, 20 steps a round.
 */
#define BENCH_NODES 4
#define BENCH_STEPS 20
#define BENCH_SMALL_REPEAT 8
#define BENCH_SMALL_ELEMS 256     /* 1 KiB floats */
#define BENCH_LARGE_ELEMS 16384   /* 64 KiB floats */

static json_t *bench_pair(uint32_t a, uint32_t b, bool send, const char *name,
			  uint64_t elems, uint64_t repeat)
{
	json_t *o;

	if (send)
		o = json_pack("{s:i, s:i, s:s, s:s, s:[I]}", "from", a, "to", b,
			      "name", name, "dtype", "float", "shape",
			      (json_int_t)elems);
	else
		o = json_pack("{s:i, s:i, s:s}", "node", b, "from", a, "name",
			      name);
	if (o && repeat > 1)
		json_object_set_new(o, "repeat", json_integer((json_int_t)repeat));
	return o;
}

static json_t *bench_step(void)
{
	json_t *sends = json_array(), *recvs = json_array();

	for (uint32_t a = 0; a < BENCH_NODES; a++) {
		for (uint32_t b = 0; b < BENCH_NODES; b++) {
			if (a == b)
				continue;
			/* A sender's names are unique within a step. */
			char small[32], large[32];

			snprintf(small, sizeof(small), "small_to%u", b);
			snprintf(large, sizeof(large), "large_to%u", b);
			for (int s = 0; s < 2; s++) {
				json_t *arr = s ? sends : recvs;

				json_array_append_new(arr, bench_pair(a, b, s,
					small, BENCH_SMALL_ELEMS,
					BENCH_SMALL_REPEAT));
				json_array_append_new(arr, bench_pair(a, b, s,
					large, BENCH_LARGE_ELEMS, 1));
			}
		}
	}
	return json_pack("{s:o, s:o}", "sends", sends, "recvs", recvs);
}

int rv_bench_scenario(json_t **sc_p)
{
	json_t *steps = json_array(), *root;

	for (int i = 0; steps && i < BENCH_STEPS; i++)
		json_array_append_new(steps, bench_step());
	root = json_pack("{s:s, s:i, s:o}", "name", "bench-sim", "nodes",
			 BENCH_NODES, "steps", steps);
	if (!root)
		return -ENOMEM;
	*sc_p = root;
	return 0;
}
