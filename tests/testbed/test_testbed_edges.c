/*
 * The testbed's error paths and edge cases, on the simulator: scenarios
 * refused with the JSON path of the culprit (the core and every
 * workload's keys), fault plans in both forms, failure lists, the small
 * helpers, traces that are not traces (replay and show refuse them with
 * the line), show's ranges, shrink's refusals, swarm's options and its
 * progress, results written where they cannot be.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tensorverbs/faults.h>
#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "common/tb_files.h"
#include "tb_int.h"

static const char basic[] =
	"{\"name\": \"b\", \"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0,"
	" \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}],"
	" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]}";

/* ---- scenarios refused, with the culprit's path ------------------------ */

#define RV_SENDS "\"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}], \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]"
#define RV_STEP(send, recv) "\"steps\": [{\"sends\": [" send "], \"recvs\": [" recv "]}]"
#define RV_SEND0 "{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]"
#define RV_RECV0 "{\"node\": 1, \"from\": 0, \"name\": \"t\"}"

static const struct bad_sc bad_core[] = {
	{ "[1]", "$: must be an object" },
	{ "{\"workload\": 3, \"nodes\": 2}", "$.workload: must be a workload name (known: rendezvous" },
	{ "{\"workload\": \"nope\", \"nodes\": 2}", "$.workload: unknown workload 'nope' (known: rendezvous" },
	{ "{\"nodes\": 2, \"bogus\": 1, " RV_SENDS "}", "bogus" },
	{ "{\"name\": 5, \"nodes\": 2, " RV_SENDS "}", "$.name" },
	{ "{\"description\": 5, \"nodes\": 2, " RV_SENDS "}", "$.description: must be a string" },
	{ "{\"nodes\": 1, " RV_SENDS "}", "$.nodes: needs at least 2 nodes" },
	{ "{\"nodes\": -2, " RV_SENDS "}", "$.nodes" },
	{ "{\"nodes\": 2.5, " RV_SENDS "}", "$.nodes: must be a whole number >= 0, got 2.5" },
	{ "{" RV_SENDS "}", "missing required key 'nodes'" },
	{ "{\"nodes\": 2, \"link\": 3, " RV_SENDS "}", "$.link: must be an object" },
	{ "{\"nodes\": 2, \"link\": {\"x\": 1}, " RV_SENDS "}", "$.link" },
	{ "{\"nodes\": 2, \"link\": {\"latency_ns\": 1000000000001}, " RV_SENDS "}", "$.link.latency_ns" },
	{ "{\"nodes\": 2, \"links\": {}, " RV_SENDS "}", "$.links: must be an array" },
	{ "{\"nodes\": 2, \"links\": [3], " RV_SENDS "}", "$.links[0]: must be an object" },
	{ "{\"nodes\": 2, \"links\": [{\"from\": 1, \"to\": 1}], " RV_SENDS "}", "$.links[0]: 'from' and 'to' are equal" },
	{ "{\"nodes\": 2, \"links\": [{\"from\": 0, \"to\": 2}], " RV_SENDS "}", "$.links[0].to" },
	{ "{\"nodes\": 2, \"links\": [{\"from\": 0, \"to\": 1, \"symmetric\": 1}], " RV_SENDS "}", "$.links[0].symmetric: must be true or false" },
	{ "{\"nodes\": 2, \"sim\": 1, " RV_SENDS "}", "$.sim: must be an object" },
	{ "{\"nodes\": 2, \"sim\": {\"zap\": 1}, " RV_SENDS "}", "$.sim" },
	{ "{\"nodes\": 2, \"sim\": {\"placement\": \"sideways\"}, " RV_SENDS "}", "$.sim.placement: must be \"in_order\", \"random8\" or \"block128\"" },
	{ "{\"nodes\": 2, \"sim\": {\"placement\": 7}, " RV_SENDS "}", "$.sim.placement" },
	{ "{\"nodes\": 2, \"sim\": {\"profile\": \"cx9\"}, " RV_SENDS "}", "$.sim.profile" },
	{ "{\"nodes\": 2, \"sim\": {\"atomics\": \"no\"}, " RV_SENDS "}", "$.sim.atomics" },
	{ "{\"nodes\": 2, \"faults\": {}, " RV_SENDS "}", "$.faults: fault plan: expected an array of rules" },
	{ "{\"nodes\": 2, \"faults\": [{\"count\": 1}], " RV_SENDS "}", "$.faults: fault plan: rule 0 needs a \"point\"" },
	{ "{\"nodes\": 2, \"faults\": [3], " RV_SENDS "}", "rule 0 needs a \"point\"" },
	{ "{\"nodes\": 2, \"faults\": [{\"point\": \"vf/ack/drop\"}, {\"point\": \"vf/ack/drop\"}], " RV_SENDS "}", "point 'vf/ack/drop' has two rules" },
	{ "{\"nodes\": 2, \"faults\": [{\"point\": \"port/fifo/full\"}], " RV_SENDS "}", "$.faults[0]: port/fifo/full belongs to the port workload, not to rendezvous" },
	{ "{\"nodes\": 2, \"late_nodes\": {}, " RV_SENDS "}", "$.late_nodes: must be an array" },
	{ "{\"nodes\": 2, \"late_nodes\": [1], " RV_SENDS "}", "$.late_nodes[0]: must be an object" },
	{ "{\"nodes\": 2, \"late_nodes\": [{\"node\": 1}], " RV_SENDS "}", "$.late_nodes[0]: missing required key 'start_ns'" },
	{ "{\"nodes\": 2, \"late_nodes\": [{\"node\": 1, \"start_ns\": 5}, {\"node\": 1, \"start_ns\": 6}], " RV_SENDS "}", "$.late_nodes[1]: node 1 is late twice" },
	{ "{\"nodes\": 2, \"expect_faults\": [], " RV_SENDS "}", "$.expect_faults: must be an object" },
	{ "{\"nodes\": 2, \"expect_faults\": {\"vf/nope\": 1}, " RV_SENDS "}", "$.expect_faults.vf/nope: unknown fault point" },
	{ "{\"nodes\": 2, \"expect_faults\": {\"vf/ack/drop\": {\"min\": 3, \"max\": 1}}, " RV_SENDS "}", "'min' is greater than 'max'" },
	{ "{\"nodes\": 2, \"expect_faults\": {\"vf/ack/drop\": \"x\"}, " RV_SENDS "}", "$.expect_faults.vf/ack/drop" },
	{ "{\"nodes\": 2, \"expect_faults\": {\"vf/ack/drop\": {\"min\": 1, \"bad\": 1}}, " RV_SENDS "}", "$.expect_faults.vf/ack/drop" },
	{ "{\"nodes\": 2, \"expect_corruption\": 1, " RV_SENDS "}", "$.expect_corruption: must be an object" },
	{ "{\"nodes\": 2, \"expect_corruption\": {\"maybe\": 1}, " RV_SENDS "}", "$.expect_corruption" },
	{ "{\"nodes\": 2, \"expect_corruption\": {\"detected\": -1}, " RV_SENDS "}", "$.expect_corruption.detected" },
	{ "{\"nodes\": 2, \"expect_corruption\": {\"undetected\": {\"min\": 2, \"max\": 1}}, " RV_SENDS "}", "$.expect_corruption.undetected: 'min' is greater than 'max'" },
	{ "{\"name\": \"a\\u0000b\", \"nodes\": 2, " RV_SENDS "}", "$.name: must not contain NUL characters" },
};

/* The rendezvous workload's own keys. */
static const struct bad_sc bad_rv[] = {
	{ "{\"nodes\": 2}", "$: missing required key 'steps'" },
	{ "{\"nodes\": 2, \"steps\": []}", "$.steps: no sends and no recvs" },
	{ "{\"nodes\": 2, \"steps\": {}}", "$.steps: must be an array" },
	{ "{\"nodes\": 2, \"steps\": [3]}", "$.steps[0]: must be an object" },
	{ "{\"nodes\": 2, \"steps\": [{\"what\": 1}]}", "$.steps[0]" },
	{ "{\"nodes\": 2, \"engine\": 1, " RV_SENDS "}", "$.engine: must be an object" },
	{ "{\"nodes\": 2, \"engine\": {\"turbo\": true}, " RV_SENDS "}", "$.engine" },
	{ "{\"nodes\": 2, \"engine\": {\"max_retries\": 1000001}, " RV_SENDS "}", "$.engine.max_retries" },
	{ "{\"nodes\": 2, \"engine\": {\"reconnect\": 1}, " RV_SENDS "}", "$.engine.reconnect: must be true or false" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}, " RV_SEND0 "}", RV_RECV0) "}", "$.steps[0]: two sends of 't' from node 0" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", RV_RECV0 ", " RV_RECV0) "}", "$.steps[0]: two recvs of 't' from node 0" },
	{ "{\"nodes\": 3, " RV_STEP(RV_SEND0 "}", "{\"node\": 2, \"from\": 0, \"name\": \"t\"}") "}", "recv of 't' by node 2: the send goes to node 1" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"u\"}") "}", "recv of 'u' by node 1: node 0 sends no such tensor in this step" },
	{ "{\"nodes\": 2, \"steps\": [{\"step_id\": 4, \"sends\": [" RV_SEND0 "}]}, {\"step_id\": 4, \"sends\": [" RV_SEND0 "}]}]}", "$.steps[1]: step_id 4 is used by an earlier step" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 ", \"error\": {\"code\": \"WHAT\"}}", RV_RECV0) "}", "$.steps[0].sends[0]" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"error\": {\"code\": \"WHAT\"}}", RV_RECV0) "}", "$.steps[0].sends[0].error.code: must be a status code name" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"error\": {\"code\": \"OK\"}}", RV_RECV0) "}", "$.steps[0].sends[0].error.code: an error cannot be OK" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"error\": 4}", RV_RECV0) "}", "$.steps[0].sends[0].error: must be an object" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"error\": {\"code\": \"NOT_FOUND\", \"hint\": 1}}", RV_RECV0) "}", "$.steps[0].sends[0].error" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 ", \"memory\": \"gpu\"}", RV_RECV0) "}", "$.steps[0].sends[0].memory: must be \"pool\" or \"unregistered\"" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 ", \"memory\": \"unregistered\", \"placement\": \"device\"}", RV_RECV0) "}", "$.steps[0].sends[0].memory: unregistered memory holds a live host tensor" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 ", \"placement\": \"moon\"}", RV_RECV0) "}", "$.steps[0].sends[0].placement: must be \"host\" or \"device\"" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"shape\": [8]}", RV_RECV0) "}", "$.steps[0].sends[0]: missing required key 'dtype'" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\"}", RV_RECV0) "}", "$.steps[0].sends[0]: missing required key 'shape'" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 ", \"dead\": true}", RV_RECV0) "}", "$.steps[0].sends[0].shape: a dead tensor has no shape" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": 5, \"shape\": [8]}", RV_RECV0) "}", "$.steps[0].sends[0].dtype: must be a dtype name string" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}", RV_RECV0) "}", "$.steps[0].sends[0].shape: rank 34 exceeds" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [4294967296, 4294967296, 4294967296]}", RV_RECV0) "}", "$.steps[0].sends[0].shape: element count overflows" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [1000000000]}", RV_RECV0) "}", "$.steps[0].sends[0]: tensor larger than" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"string\", \"shape\": [2000000]}", RV_RECV0) "}", "$.steps[0].sends[0]: more than 1000000 string elements" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 ", \"strings\": [\"a\"]}", RV_RECV0) "}", "$.steps[0].sends[0]" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 ", \"fill\": {\"pattern\": 1, \"x\": 2}}", RV_RECV0) "}", "$.steps[0].sends[0].fill" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 1, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}", RV_RECV0) "}", "$.steps[0].sends[0]: 'from' and 'to' are the same node" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 ", \"repeat\": 0}", RV_RECV0) "}", "$.steps[0].sends[0]: 'repeat' must be >= 1" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"\", \"dtype\": \"float\", \"shape\": [8]}", RV_RECV0) "}", "$.steps[0].sends[0]: 'name' must not be empty" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": 3}") "}", "$.steps[0].recvs[0].expect: must be \"ok\", \"any\"" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"message\": \"m\"}}") "}", "$.steps[0].recvs[0].expect: 'message' needs 'error'" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"error\": \"OK\"}}") "}", "$.steps[0].recvs[0].expect.error: must be an error code name" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"error\": \"NOT_FOUND\", \"why\": 1}}") "}", "$.steps[0].recvs[0].expect" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"colour\": 1}}") "}", "$.steps[0].recvs[0].expect" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"dtype\": \"quaternion\"}}") "}", "$.steps[0].recvs[0].expect.dtype" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"shape\": [-1]}}") "}", "$.steps[0].recvs[0].expect.shape" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"dead\": 1}}") "}", "$.steps[0].recvs[0].expect.dead" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"fill\": 1}}") "}", "$.steps[0].recvs[0].expect.fill" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"strings\": 1}}") "}", "$.steps[0].recvs[0].expect.strings" },
	{ "{\"nodes\": 2, \"late_nodes\": [{\"node\": 0, \"start_ns\": 1000000}], " RV_SENDS "}", "$.late_nodes: node 0 starts at 1000000 ns but publishes 't' of step 1 at 0 ns" },
	{ "{\"nodes\": 2, \"late_nodes\": [{\"node\": 1, \"start_ns\": 1000000}], " RV_SENDS "}", "$.late_nodes: node 1 starts at 1000000 ns but receives 't' of step 1 at 0 ns" },
	{ "{\"nodes\": 2, \"expect_stats\": 4, " RV_SENDS "}", "$.expect_stats" },
	{ "{\"nodes\": 2, \"expect_stats\": [3], " RV_SENDS "}", "$.expect_stats[0]: must be an object" },
	{ "{\"nodes\": 2, \"expect_stats\": [{\"node\": 5}], " RV_SENDS "}", "$.expect_stats[0].node" },
	{ "{\"nodes\": 2, \"expect_stats\": [{\"bogus\": 1}], " RV_SENDS "}", "$.expect_stats[0].bogus: unknown statistic (see docs/scenarios.md)" },
	{ "{\"nodes\": 2, \"expect_stats\": [{\"msgs_sent\": 1}], " RV_SENDS "}", "$.expect_stats[0].msgs_sent: must be an object" },
	{ "{\"nodes\": 2, \"expect_stats\": [{\"msgs_sent\": {\"HELLO\": 1}}], " RV_SENDS "}", "$.expect_stats[0].msgs_sent.HELLO: unknown message type (TENSOR_REQUEST, META_DATA_UPDATE, TENSOR_RE_REQUEST, ERROR_STATUS)" },
	{ "{\"nodes\": 2, \"expect_stats\": [{\"recvs_ok\": {\"min\": 2, \"max\": 1}}], " RV_SENDS "}", "$.expect_stats[0].recvs_ok: 'min' is greater than 'max'" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 ", \"fill\": {\"pattern\": \"stripes\"}}", RV_RECV0) "}", "$.steps[0].sends[0].fill.pattern: must be \"random\", \"iota\" or \"zeros\"" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"string\", \"shape\": [2], \"strings\": [\"a\", 5]}", RV_RECV0) "}", "$.steps[0].sends[0].strings[1]: must be a string" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"string\", \"shape\": [2], \"strings\": [\"a\"]}", RV_RECV0) "}", "$.steps[0].sends[0]: 'strings' has 1 elements, the shape 2" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 ", \"strings\": 3}", RV_RECV0) "}", "$.steps[0].sends[0].strings: must be an array" },
};

#define GW_BATCH "\"batches\": [{\"node\": 0, \"count\": 16}]"
static const struct bad_sc bad_gather[] = {
	{ "{\"workload\": \"gather\", \"nodes\": 2}", "$.batches: is required" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"batches\": {}}", "$.batches: must be an array" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"gather\": 1, " GW_BATCH "}", "$.gather: must be an object" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"gather\": {\"rowz\": 1}, " GW_BATCH "}", "$.gather" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"gather\": {\"rows\": 0}, " GW_BATCH "}", "$.gather.rows: must be > 0" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"gather\": {\"row_bytes\": 0}, " GW_BATCH "}", "$.gather.row_bytes: must be > 0" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"gather\": {\"rows\": 100, \"replicated_rows\": 100}, " GW_BATCH "}", "$.gather.replicated_rows: must be below rows (100)" },
	{ "{\"workload\": \"gather\", \"nodes\": 4, \"gather\": {\"rows\": 100, \"replicated_rows\": 98}, " GW_BATCH "}", "$.gather.rows: 2 rows outside the replicated ones leave a node of" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"gather\": {\"rows\": 4294967296, \"row_bytes\": 65536}, " GW_BATCH "}", "$.gather.rows: rows x row_bytes is above 4 GiB" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"gather\": {\"window\": 0}, " GW_BATCH "}", "$.gather: qps_per_peer, post_list and window must be > 0" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"gather\": {\"qp_timeout\": 32}, " GW_BATCH "}", "$.gather.qp_timeout" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"gather\": {\"sort\": 2}, " GW_BATCH "}", "$.gather.sort: must be true or false" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"batches\": [3]}", "$.batches[0]: must be an object" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"batches\": [{\"node\": 2}]}", "$.batches[0].node" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"batches\": [{\"node\": 0, \"ids\": [1], \"count\": 1}]}", "$.batches[0]: \"ids\" or \"dist\" and \"count\", not both" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"batches\": [{\"node\": 0, \"ids\": 1}]}", "$.batches[0].ids: must be an array" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"batches\": [{\"node\": 0, \"ids\": [1, -1]}]}", "$.batches[0].ids[1]" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"batches\": [{\"node\": 0, \"dist\": \"normal\"}]}", "$.batches[0]: dist: must be \"uniform\", \"zipf\", \"sorted\" or \"boundary\"" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"batches\": [{\"node\": 0, \"dist\": \"zipf\", \"zipf_s\": 5}]}", "$.batches[0]: zipf_s: must be a number in (0, 4]" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"batches\": [{\"node\": 0, \"dist\": \"zipf\", \"zipf_s\": \"x\"}]}", "$.batches[0]: zipf_s: must be a number in (0, 4]" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"batches\": [{\"node\": 0, \"at_ns\": 3600000000001}]}", "$.batches[0].at_ns" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"batches\": [{\"node\": 0, \"dups\": 0}]}", "$.batches[0].dups: must be true or false" },
	{ "{\"workload\": \"gather\", \"nodes\": 2, \"faults\": [{\"point\": \"vf/ack/drop\"}], " GW_BATCH "}", "$.faults[0]: vf/ack/drop belongs to the rendezvous workload, not to gather" },
};

#define PT_PROG "\"programs\": [{\"kind\": \"ping_pong\", \"nodes\": [0, 1]}]"
static const struct bad_sc bad_port[] = {
	{ "{\"workload\": \"port\", \"nodes\": 2}", "$: a port scenario needs \"programs\"" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": {}}", "$.programs: must be an array" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": []}", "$.programs: needs 1 to" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"port\": [], " PT_PROG "}", "$.port: must be an object" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"port\": {\"speed\": 1}, " PT_PROG "}", "$.port" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"port\": {\"signal\": \"smoke\"}, " PT_PROG "}", "$.port.signal: must be \"auto\", \"atomic\" or \"write_imm\"" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"port\": {\"fifo_size\": 100}, " PT_PROG "}", "$.port.fifo_size: must be a positive power of two" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"port\": {\"fifo_size\": 0}, " PT_PROG "}", "$.port.fifo_size: must be a positive power of two" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"port\": {\"cq_size\": 4}, " PT_PROG "}", "$.port.cq_size: needs cq_size >= 8" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"port\": {\"cq_size\": 16, \"max_write_queue\": 13}, " PT_PROG "}", "$.port.max_write_queue: needs cq_size >= 8 and max_write_queue <= cq_size - 4" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"port\": {\"lag_ns\": 1000000001}, " PT_PROG "}", "$.port.lag_ns: at most 1 s" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"port\": {\"lag_ns\": {\"min\": 5, \"max\": 1}}, " PT_PROG "}", "$.port.lag_ns: 'min' is greater than 'max'" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"port\": {\"poll_ns\": 0}, " PT_PROG "}", "$.port.poll_ns: must be > 0" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"port\": {\"poll_ns\": 5000, \"poll_max_ns\": 4000}, " PT_PROG "}", "$.port.poll_max_ns: is below poll_ns" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [4]}", "$.programs[0]: must be an object" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"nodes\": [0, 1]}]}", "$.programs[0]: missing required key 'kind'" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"bcast\"}]}", "$.programs[0]: kind: unknown 'bcast' (known: ping_pong, packet_ping_pong, allgather, allreduce, all_to_all, sequence)" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"allgather\", \"iters\": 3}]}", "$.programs[0]" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"allgather\", \"nodes\": 0}]}", "$.programs[0].nodes: must be an array" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"allgather\", \"nodes\": [0]}]}", "$.programs[0].nodes: needs 2 to" },
	{ "{\"workload\": \"port\", \"nodes\": 3, \"programs\": [{\"kind\": \"allgather\", \"nodes\": [0, 1, 1]}]}", "$.programs[0].nodes[2]: node 1 twice" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"allgather\", \"nodes\": [0, 2]}]}", "$.programs[0].nodes[1]" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"packet_ping_pong\", \"format\": \"ll32\"}]}", "$.programs[0]: format: must be \"ll16\" or \"ll8\"" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"packet_ping_pong\", \"bytes\": 12}]}", "$.programs[0]: bytes: LL16 packets carry 8-byte words, LL8 packets 4-byte ones" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"packet_ping_pong\", \"format\": \"ll8\", \"bytes\": 6}]}", "$.programs[0]: bytes: LL16 packets carry" },
	{ "{\"workload\": \"port\", \"nodes\": 3, \"programs\": [{\"kind\": \"allreduce\", \"count\": 10}]}", "$.programs[0]: count: must be a positive multiple of the 3 nodes" },
	{ "{\"workload\": \"port\", \"nodes\": 3, \"programs\": [{\"kind\": \"ping_pong\"}]}", "$.programs[0]: nodes: a ping-pong has 2 nodes" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"sequence\", \"from\": 1, \"to\": 1}]}", "$.programs[0]: 'from' and 'to' are equal" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"sequence\", \"to\": 1}]}", "$.programs[0]: missing required key 'from'" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"ping_pong\", \"start_ns\": 3600000000001}]}", "$.programs[0].start_ns" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1}]}", "$.programs[0]: a sequence needs \"ops\"" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"ops\": {}}]}", "$.programs[0].ops: must be an array" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"ops\": [{\"op\": \"get\"}]}]}", "$.programs[0].ops[0]: op: must be put, put_with_signal, put_with_signal_and_flush, signal, flush or recycle" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"ops\": [{\"op\": \"signal\", \"bytes\": 4}]}]}", "$.programs[0].ops[0]: a signal moves no data" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"ops\": [{\"op\": \"put\", \"dst_off\": 60000, \"bytes\": 10000}]}]}", "$.programs[0].ops[0]: [60000, +10000) or [0, +10000) is outside the program's 65536 bytes" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"ops\": [{\"op\": \"put\", \"colour\": 1}]}]}", "$.programs[0].ops[0]" },
	{ "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"ops\": [5]}]}", "$.programs[0].ops[0]: must be an object" },
	{ "{\"workload\": \"port\", \"nodes\": 8, \"programs\": [{\"kind\": \"allgather\", \"bytes\": 16777216}]}", "$.programs[0]: node 0 would need more than 64 MiB of buffers" },
	{ "{\"workload\": \"port\", \"nodes\": 300, \"programs\": [{\"kind\": \"ping_pong\"}]}", "$.nodes" },
};

START_TEST(test_scenario_core_refused)
{
	check_bad(bad_core, TB_ARRAY_SIZE(bad_core), "core");
}
END_TEST

START_TEST(test_scenario_rendezvous_refused)
{
	check_bad(bad_rv, TB_ARRAY_SIZE(bad_rv), "rendezvous");
}
END_TEST

START_TEST(test_scenario_gather_refused)
{
	check_bad(bad_gather, TB_ARRAY_SIZE(bad_gather), "gather");
}
END_TEST

START_TEST(test_scenario_port_refused)
{
	check_bad(bad_port, TB_ARRAY_SIZE(bad_port), "port");
}
END_TEST

START_TEST(test_scenario_load_errors)
{
	struct tv_tb_scenario *sc = NULL;
	char err[TV_TB_ERR_MAX], path[128];

	ck_assert_int_eq(tv_tb_scenario_load_string("{\"nodes\": 2,", "txt",
						    &sc, err), -EINVAL);
	ck_assert_ptr_null(sc);
	ck_assert_msg(strstr(err, "txt") != NULL, "err: %s", err);
	ck_assert_int_eq(tv_tb_scenario_load_file("/nonexistent/x.json", &sc,
						  err), -EINVAL);
	ck_assert_msg(strstr(err, "/nonexistent/x.json") != NULL, "err: %s",
		      err);
	mk_tmpdir();
	tmp_path(path, sizeof(path), "bad.json");
	write_file(path, "{\"nodes\": 2,\n \"steps\": [}\n");
	ck_assert_int_eq(tv_tb_scenario_load_file(path, &sc, err), -EINVAL);
	ck_assert_msg(strstr(err, path) != NULL && strstr(err, ":2") != NULL,
		      "err: %s", err);
	/* Duplicate keys are refused. */
	ck_assert_int_eq(tv_tb_scenario_load_string(
				 "{\"nodes\": 2, \"nodes\": 3}", "dup", &sc,
				 err), -EINVAL);
	ck_assert_msg(strstr(err, "nodes") != NULL, "err: %s", err);
	rm_tmpdir();
}
END_TEST

/* Accessors and the fault plan of a parsed scenario. */
START_TEST(test_scenario_accessors)
{
	struct tv_tb_scenario *sc = NULL;
	char err[TV_TB_ERR_MAX], perr[TV_TB_PLAN_ERR_MAX];
	json_t *plan, *plan2;

	ck_assert_int_eq(tv_tb_scenario_load_string(
				 "{\"seed\": 42, \"nodes\": 2, \"links\": [{\"from\": 0, \"to\": 1, \"symmetric\": false, \"latency_ns\": 5}], "
				 "\"sim\": {\"placement\": \"random8\", \"profile\": \"rxe\", \"atomics\": false}, "
				 "\"late_nodes\": [{\"node\": 1, \"start_ns\": 0}], "
				 "\"expect_corruption\": {\"detected\": 0}, " RV_SENDS "}",
				 "acc", &sc, err), 0);
	ck_assert_uint_eq(tv_tb_scenario_seed(sc), 42);
	ck_assert_str_eq(tv_tb_scenario_name(sc), "acc");
	ck_assert_str_eq(tv_tb_scenario_origin(sc), "acc");
	ck_assert_uint_eq(tv_tb_scenario_nodes(sc), 2);
	ck_assert_uint_eq(tv_tb_scenario_ops(sc), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 tv_tb_scenario_json(sc), "seed")), 42);
	ck_assert(!tv_tb_scenario_has_faults(sc));
	ck_assert_ptr_null(tv_tb_scenario_faults(sc));
	ck_assert_uint_eq(sc->nlinks, 1);

	ck_assert_int_eq(tv_tb_plan_from_text("vf/ack/drop:count=1", &plan,
					      perr, sizeof(perr)), 0);
	/* Extending a scenario without a plan gives it this one. */
	ck_assert_int_eq(tv_tb_scenario_set_faults(sc, plan, false), 0);
	ck_assert(tv_tb_scenario_has_faults(sc));
	ck_assert_uint_eq(json_array_size(tv_tb_scenario_faults(sc)), 1);
	ck_assert_int_eq(tv_tb_plan_from_text(
				 "vf/ack/drop:count=2;vf/write/dup:nth=3",
				 &plan2, perr, sizeof(perr)), 0);
	/* ... and extending it replaces the point's rule, appends others. */
	ck_assert_int_eq(tv_tb_scenario_set_faults(sc, plan2, false), 0);
	ck_assert_uint_eq(json_array_size(tv_tb_scenario_faults(sc)), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 tb_plan_rule(tv_tb_scenario_faults(sc),
					      "vf/ack/drop"), "count")), 2);
	ck_assert_int_eq(tv_tb_scenario_set_faults(sc, NULL, true), 0);
	ck_assert(!tv_tb_scenario_has_faults(sc));
	ck_assert_int_eq(tv_tb_scenario_set_faults(sc, plan, true), 0);
	ck_assert_uint_eq(json_array_size(tv_tb_scenario_faults(sc)), 1);
	json_decref(plan);
	json_decref(plan2);
	tv_tb_scenario_free(sc);
	tv_tb_scenario_free(NULL);
}
END_TEST

/* ---- fault plans --------------------------------------------------------- */

START_TEST(test_plan_text_forms)
{
	char err[TV_TB_PLAN_ERR_MAX];
	json_t *plan, *r;

	ck_assert_int_eq(tv_tb_plan_from_text(
				 "  vf/ack/drop:p=0.5,arg=0xffffffffffffffff,count=2,after=10,before=2000;"
				 "vf/write/dup:nth=4",
				 &plan, err, sizeof(err)), 0);
	ck_assert_uint_eq(json_array_size(plan), 2);
	r = tb_plan_rule(plan, "vf/ack/drop");
	ck_assert_ptr_nonnull(r);
	ck_assert(json_real_value(json_object_get(r, "probability")) == 0.5);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "arg")), -1);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "count")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "after_ns")), 10);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "before_ns")),
			 2000);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 tb_plan_rule(plan, "vf/write/dup"), "nth")), 4);
	ck_assert_ptr_null(tb_plan_rule(plan, "vf/qp/error"));
	ck_assert_uint_ne(tb_plan_mask(plan), 0);
	ck_assert_uint_eq(tb_plan_mask(NULL), 0);
	json_decref(plan);

	/* Nodes: two rules of one point for two nodes are two rules. */
	ck_assert_int_eq(tv_tb_plan_from_text(
				 "[{\"point\": \"vf/ack/drop\", \"node\": 0, \"nth\": 1},"
				 " {\"point\": \"vf/ack/drop\", \"node\": 1, \"nth\": 1},"
				 " {\"point\": \"vf/ack/drop\", \"node\": 1, \"nth\": 2}]",
				 &plan, err, sizeof(err)), 0);
	ck_assert_uint_eq(json_array_size(plan), 3);
	json_decref(plan);
	ck_assert_int_eq(tv_tb_plan_from_text(
				 "[{\"point\": \"vf/ack/drop\", \"node\": 1, \"nth\": 2},"
				 " {\"point\": \"vf/ack/drop\", \"node\": 1, \"nth\": 2}]",
				 &plan, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "point 'vf/ack/drop' has two rules") != NULL,
		      "err: %s", err);
	ck_assert_int_eq(tv_tb_plan_from_text(
				 "[{\"point\": \"vf/ack/drop\", \"node\": 1},"
				 " {\"point\": \"vf/ack/drop\"}]",
				 &plan, err, sizeof(err)), 0);
	json_decref(plan);
	ck_assert_int_eq(tv_tb_plan_from_text("[{\"point\": ", &plan, err,
					      sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "fault plan: invalid JSON") != NULL,
		      "err: %s", err);
	ck_assert_int_eq(tv_tb_plan_from_text("vf/no/such", &plan, err,
					      sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "vf/no/such") != NULL, "err: %s", err);
	ck_assert_int_eq(tv_tb_plan_from_text("vf/ack/drop:count=x", &plan,
					      err, sizeof(err)), -EINVAL);
	ck_assert_msg(err[0] != '\0', "no message");
	ck_assert_int_eq(tv_tb_plan_from_text("[{\"point\": \"vf/ack/drop\", \"colour\": 1}]",
					      &plan, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "colour") != NULL, "err: %s", err);

	/* The catalogue says; an unknown point may always fail. */
	ck_assert(tv_tb_point_may_fail("no/such/point"));
	{
		size_t np;
		const struct tv_flt_point_info *pts = tv_flt_points(&np);

		for (size_t i = 0; i < np; i++)
			ck_assert(tv_tb_point_may_fail(pts[i].name) ==
				  pts[i].may_fail);
	}
}
END_TEST

START_TEST(test_plan_merge)
{
	json_t *base = json_loads("[{\"point\": \"a\", \"count\": 1}, 5]", 0,
				  NULL);
	json_t *over = json_loads("[{\"point\": \"a\", \"count\": 7},"
				  " {\"point\": \"b\"}, {\"nopoint\": 1}]", 0,
				  NULL);

	ck_assert_int_eq(tb_plan_merge(base, over), 0);
	ck_assert_uint_eq(json_array_size(base), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_array_get(base, 0), "count")), 7);
	ck_assert_ptr_nonnull(tb_plan_rule(base, "b"));
	json_decref(base);
	json_decref(over);
}
END_TEST

START_TEST(test_plan_injector)
{
	struct tv_flt *flt = NULL;
	char err[TV_TB_PLAN_ERR_MAX] = "";
	json_t *plan = json_loads("[{\"point\": \"vf/zzz\"}]", 0, NULL);

	ck_assert_int_eq(tb_plan_injector(plan, 1, &flt, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_null(flt);
	ck_assert_msg(strstr(err, "vf/zzz") != NULL, "err: %s", err);
	json_decref(plan);
	plan = json_loads("[{\"point\": \"vf/ack/drop\", \"count\": 1}]", 0,
			  NULL);
	ck_assert_int_eq(tb_plan_injector(plan, 1, &flt, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(flt);
	tv_flt_destroy(flt);
	json_decref(plan);
}
END_TEST

/* ---- failures and helpers ------------------------------------------------ */

START_TEST(test_fail_kinds)
{
	enum tv_tb_fail_kind k;

	for (unsigned i = 0; i < TV_TB_FK_COUNT; i++) {
		const char *name = tv_tb_fail_kind_name((enum tv_tb_fail_kind)i);

		ck_assert_ptr_nonnull(name);
		ck_assert_int_eq(tv_tb_fail_kind_from_name(name, &k), 0);
		ck_assert_uint_eq(k, i);
	}
	k = TV_TB_FK_DATA;
	ck_assert_int_eq(tv_tb_fail_kind_from_name("nope", &k), -EINVAL);
	ck_assert_uint_eq(k, TV_TB_FK_DATA);
	ck_assert_str_eq(tv_tb_fail_kind_name(TV_TB_FK_HANG), "hang");
}
END_TEST

START_TEST(test_failures_print)
{
	struct tv_tb_failures f = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	for (int i = 0; i < TV_TB_FAILURES_KEPT + 3; i++)
		tb_failures_add(&f, i ? TV_TB_FK_DATA : TV_TB_FK_LEAK,
				"failure number %d", i);
	ck_assert_uint_eq(f.count, TV_TB_FAILURES_KEPT + 3);
	ck_assert_uint_eq(f.first, TV_TB_FK_LEAK);
	ck_assert_uint_eq(f.kinds, (1u << TV_TB_FK_DATA) | (1u << TV_TB_FK_LEAK));
	out = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(out);
	tv_tb_failures_print(&f, out);
	fclose(out);
	ck_assert_msg(strstr(buf, "FAIL: failure number 0\n") != NULL, "%s", buf);
	ck_assert_msg(strstr(buf, "failure number 39\n") != NULL, "%s", buf);
	ck_assert_msg(strstr(buf, "failure number 40") == NULL, "%s", buf);
	ck_assert_msg(strstr(buf, "... and 3 more") != NULL, "%s", buf);
	free(buf);
	tb_failures_free(&f);
}
END_TEST

START_TEST(test_util)
{
	char buf[64];
	uint64_t v = 7;
	struct tv_tb_serve_opts o;

	ck_assert_int_eq(tv_tb_parse_u64("0x10", &v), 0);
	ck_assert_uint_eq(v, 16);
	ck_assert_int_eq(tv_tb_parse_u64("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	v = 7;
	ck_assert_int_eq(tv_tb_parse_u64("", &v), -EINVAL);
	ck_assert_int_eq(tv_tb_parse_u64("12x", &v), -EINVAL);
	ck_assert_int_eq(tv_tb_parse_u64("-1", &v), -EINVAL);
	/* Regression: strtoull skipped blanks and negated " -1". */
	ck_assert_int_eq(tv_tb_parse_u64(" 1", &v), -EINVAL);
	ck_assert_int_eq(tv_tb_parse_u64(" -1", &v), -EINVAL);
	ck_assert_int_eq(tv_tb_parse_u64("\t5", &v), -EINVAL);
	ck_assert_int_eq(tv_tb_parse_u64("+5", &v), -EINVAL);
	ck_assert_int_eq(tv_tb_parse_u64("18446744073709551616", &v), -EINVAL);
	ck_assert_uint_eq(v, 7);
	tv_tb_fmt_rate(3.5, buf, sizeof(buf));
	ck_assert_str_eq(buf, "3.5 ");
	tv_tb_fmt_rate(2.5e6, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "M") != NULL, "%s", buf);
	tv_tb_fmt_bytes(4096, buf, sizeof(buf));
	ck_assert_str_eq(buf, "4.0 KiB");
	tv_tb_fmt_ns(12345, buf, sizeof(buf));
	ck_assert_str_eq(buf, "12.345 us");
	tv_tb_fmt_ns(2.5e9, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2.500 s");
	tv_tb_serve_opts_init(&o);
	ck_assert_uint_eq(o.timeout_s, 120);
	ck_assert(o.reconnect);
	ck_assert_int_eq(o.faults_node, -1);
	ck_assert_ptr_null(o.scenario_path);
}
END_TEST

/* ---- runs: summary, results -------------------------------------------- */

static struct tv_tb_run *run_text(const char *text, uint64_t seed,
				  struct tv_tb_scenario **sc_p)
{
	return run_scenario_text(text, seed, NULL, sc_p);
}

START_TEST(test_results_unwritable)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_text(basic, 1, &sc);
	struct tv_tb_junit_case c = { .classname = "tensorverbs.run",
				      .name = "x<&>\"'", .failure = "m<",
				      .type = "hang", .text = "t&" };
	char path[128];
	json_t *j = tv_tb_run_result_json(run, NULL);
	char *text;

	ck_assert_ptr_nonnull(j);
	ck_assert(json_is_null(json_object_get(j, "reproduce")));
	ck_assert(json_is_true(json_object_get(j, "passed")));
	ck_assert_int_eq(tv_tb_json_write("/nonexistent/dir/r.json", j),
			 -EIO);
	ck_assert_int_eq(tv_tb_json_write("/nonexistent/dir/r.json", NULL),
			 -ENOMEM);
	ck_assert_int_eq(tv_tb_junit_write("/nonexistent/dir/j.xml", "s", &c,
					   1), -ENOENT);
	mk_tmpdir();
	tmp_path(path, sizeof(path), "j.xml");
	ck_assert_int_eq(tv_tb_junit_write(path, "suite&", &c, 1), 0);
	text = read_all(path);
	ck_assert_msg(strstr(text, "x&lt;&amp;&gt;&quot;&apos;") != NULL, "%s",
		      text);
	ck_assert_msg(strstr(text, "type=\"hang\"") != NULL, "%s", text);
	free(text);
	c.failure = NULL;
	c.skipped = "no hardware";
	ck_assert_int_eq(tv_tb_junit_write(path, "suite", &c, 1), 0);
	text = read_all(path);
	ck_assert_msg(strstr(text, "<skipped message=\"no hardware\"") != NULL,
		      "%s", text);
	free(text);
	rm_tmpdir();
	json_decref(j);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- traces that are not traces ------------------------------------------ */

/* A trace of basic, its lines, the header first. */
static char *make_trace(const char *name, char *path, size_t cap)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_trace *t;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char err[TV_TB_ERR_MAX];

	tmp_path(path, cap, name);
	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "basic", &sc, err),
			 0);
	ck_assert_int_eq(tv_tb_trace_create(path, sc, NULL, 3, NULL, &t), 0);
	tv_tb_run_opts_init(&o, sc);
	o.seed = 3;
	o.trace = t;
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	ck_assert_int_eq(tv_tb_trace_finish(t, run), 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
	return read_all(path);
}

START_TEST(test_trace_malformed)
{
	char good[128], path[128], *text, *hdr, *edited;
	struct tv_tb_replay_report rep;
	json_t *h;
	int n;

	mk_tmpdir();
	text = make_trace("good.jsonl", good, sizeof(good));
	n = count_lines(text);
	ck_assert_int_ge(n, 3);
	replay_expect(good, TV_TB_REPLAY_SAME, NULL);

	/* The file is missing. */
	memset(&rep, 0, sizeof(rep));
	ck_assert_int_eq(tv_tb_replay("/nonexistent/t.jsonl", &rep), -ENOENT);
	ck_assert_msg(strstr(rep.err, "/nonexistent/t.jsonl") != NULL, "%s",
		      rep.err);

	tmp_path(path, sizeof(path), "empty.jsonl");
	write_file(path, "");
	replay_expect(path, TV_TB_REPLAY_MALFORMED, "empty file");

	tmp_path(path, sizeof(path), "notjson.jsonl");
	write_file(path, "not json\n");
	replay_expect(path, TV_TB_REPLAY_MALFORMED, "notjson.jsonl:1:");

	tmp_path(path, sizeof(path), "array.jsonl");
	write_file(path, "[1, 2]\n");
	replay_expect(path, TV_TB_REPLAY_MALFORMED, "array.jsonl:1: not a JSON object");

	tmp_path(path, sizeof(path), "nohdr.jsonl");
	write_file(path, "{\"a\": 1}\n");
	replay_expect(path, TV_TB_REPLAY_MALFORMED,
		      "nohdr.jsonl: line 1 is not a tensorverbs trace header");

	hdr = line_of(text, 0);
	h = json_loads(hdr, 0, NULL);
	ck_assert_ptr_nonnull(h);

	/* Another format. */
	json_object_set_new(h, "tensorverbs_trace", json_integer(99));
	edited = json_dumps(h, JSON_COMPACT);
	free(hdr);
	hdr = edit_lines(text, 0, edited, NULL);
	tmp_path(path, sizeof(path), "fmt.jsonl");
	write_file(path, hdr);
	replay_expect(path, TV_TB_REPLAY_MALFORMED,
		      "trace format 99, this build reads format 1");
	free(hdr);
	free(edited);
	json_object_set_new(h, "tensorverbs_trace", json_integer(1));

	/* A seed that is a string. */
	json_object_set_new(h, "seed", json_string("0x3"));
	edited = json_dumps(h, JSON_COMPACT);
	hdr = edit_lines(text, 0, edited, NULL);
	tmp_path(path, sizeof(path), "seedstr.jsonl");
	write_file(path, hdr);
	replay_expect(path, TV_TB_REPLAY_SAME, NULL);
	free(hdr);
	free(edited);

	/* A seed that is not one. */
	json_object_set_new(h, "seed", json_real(1.5));
	edited = json_dumps(h, JSON_COMPACT);
	hdr = edit_lines(text, 0, edited, NULL);
	tmp_path(path, sizeof(path), "seedbad.jsonl");
	write_file(path, hdr);
	replay_expect(path, TV_TB_REPLAY_MALFORMED,
		      "header needs \"seed\" (an integer >= 0)");
	free(hdr);
	free(edited);
	json_object_set_new(h, "seed", json_integer(3));

	/* A breakage no workload knows, and one of another workload. */
	json_object_set_new(h, "test_breakage", json_string("everything"));
	edited = json_dumps(h, JSON_COMPACT);
	hdr = edit_lines(text, 0, edited, NULL);
	tmp_path(path, sizeof(path), "brk.jsonl");
	write_file(path, hdr);
	replay_expect(path, TV_TB_REPLAY_MALFORMED,
		      "header: unknown \"test_breakage\" (this build knows ");
	free(hdr);
	free(edited);
	json_object_del(h, "test_breakage");

	/* A scenario that is not one. */
	json_object_set_new(h, "scenario", json_pack("{s:i}", "nodes", 1));
	edited = json_dumps(h, JSON_COMPACT);
	hdr = edit_lines(text, 0, edited, NULL);
	tmp_path(path, sizeof(path), "sc.jsonl");
	write_file(path, hdr);
	replay_expect(path, TV_TB_REPLAY_MALFORMED,
		      "the trace's scenario is invalid: $.nodes: needs at least 2 nodes");
	free(hdr);
	free(edited);
	json_decref(h);

	/* Truncated: no summary. */
	edited = edit_lines(text, n - 1, NULL, NULL);
	tmp_path(path, sizeof(path), "trunc.jsonl");
	write_file(path, edited);
	replay_expect(path, TV_TB_REPLAY_MALFORMED,
		      "the trace ends without a summary line (truncated?)");
	free(edited);

	/* Truncated after the header. */
	hdr = line_of(text, 0);
	edited = edit_lines(hdr, 99, NULL, NULL);
	free(edited);
	tmp_path(path, sizeof(path), "hdronly.jsonl");
	{
		char *t2 = malloc(strlen(hdr) + 2);

		sprintf(t2, "%s\n", hdr);
		write_file(path, t2);
		free(t2);
	}
	replay_expect(path, TV_TB_REPLAY_MALFORMED,
		      "the trace ends without a summary line (truncated?)");
	free(hdr);

	/* A line that is neither an event nor the summary. */
	edited = edit_lines(text, 1, "{\"x\": 1}", NULL);
	tmp_path(path, sizeof(path), "neither.jsonl");
	write_file(path, edited);
	replay_expect(path, TV_TB_REPLAY_MALFORMED,
		      "neither.jsonl:2: neither an event nor the summary");
	free(edited);

	/* A line that is not JSON, in the middle. */
	edited = edit_lines(text, 1, "{\"x\": ", NULL);
	tmp_path(path, sizeof(path), "midbad.jsonl");
	write_file(path, edited);
	replay_expect(path, TV_TB_REPLAY_MALFORMED, "midbad.jsonl:2:");
	free(edited);

	/* Something after the summary. */
	edited = edit_lines(text, -1, NULL, "{\"after\": 1}\n");
	tmp_path(path, sizeof(path), "extra.jsonl");
	write_file(path, edited);
	replay_expect(path, TV_TB_REPLAY_MALFORMED, NULL);
	free(edited);

	/* An event changed: diverged, at its line. */
	{
		char *ev = line_of(text, 1);
		json_t *e = json_loads(ev, 0, NULL);

		json_object_set_new(e, "kind", json_string("CHANGED"));
		free(ev);
		ev = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
		edited = edit_lines(text, 1, ev, NULL);
		tmp_path(path, sizeof(path), "div.jsonl");
		write_file(path, edited);
		memset(&rep, 0, sizeof(rep));
		ck_assert_int_eq(tv_tb_replay(path, &rep), 0);
		ck_assert_int_eq(rep.state, TV_TB_REPLAY_DIVERGED);
		ck_assert_uint_eq(rep.line, 2);
		ck_assert_uint_eq(rep.events, 0);
		ck_assert_msg(strstr(rep.diff, "kind") != NULL, "%s", rep.diff);
		ck_assert_ptr_nonnull(rep.expected);
		ck_assert_msg(strstr(rep.expected, "CHANGED") != NULL, "%s",
			      rep.expected);
		tv_tb_replay_report_free(&rep);
		free(edited);
		free(ev);
		json_decref(e);
	}

	/* The summary changed: diverged, summary only. */
	{
		char *sl = line_of(text, n - 1);
		json_t *s = json_loads(sl, 0, NULL);

		json_object_set_new(s, "sim_events", json_integer(1));
		free(sl);
		sl = json_dumps(s, JSON_COMPACT | JSON_PRESERVE_ORDER);
		edited = edit_lines(text, n - 1, sl, NULL);
		tmp_path(path, sizeof(path), "sum.jsonl");
		write_file(path, edited);
		memset(&rep, 0, sizeof(rep));
		ck_assert_int_eq(tv_tb_replay(path, &rep), 0);
		ck_assert_int_eq(rep.state, TV_TB_REPLAY_DIVERGED);
		ck_assert(rep.summary_only);
		ck_assert_msg(strstr(rep.diff, "sim_events") != NULL, "%s",
			      rep.diff);
		tv_tb_replay_report_free(&rep);
		free(edited);
		free(sl);
		json_decref(s);
	}

	/* An extra event before the summary: the run has no more. */
	{
		char *ev = line_of(text, 1);

		edited = edit_lines(text, n - 1, ev, NULL);
		{
			char *sl = line_of(text, n - 1);
			char *t2 = malloc(strlen(edited) + strlen(sl) + 2);

			sprintf(t2, "%s%s\n", edited, sl);
			free(edited);
			edited = t2;
			free(sl);
		}
		tmp_path(path, sizeof(path), "more.jsonl");
		write_file(path, edited);
		memset(&rep, 0, sizeof(rep));
		ck_assert_int_eq(tv_tb_replay(path, &rep), 0);
		ck_assert_int_eq(rep.state, TV_TB_REPLAY_DIVERGED);
		ck_assert_ptr_null(rep.actual);
		tv_tb_replay_report_free(&rep);
		free(edited);
		free(ev);
	}
	free(text);
	rm_tmpdir();
}
END_TEST

/* ---- show ------------------------------------------------------------------ */

START_TEST(test_show_errors_and_ranges)
{
	char good[128], path[128], svg[128], chrome[128], err[512];
	struct tv_tb_show_opts o = { 0 };
	char *text, *s;

	mk_tmpdir();
	text = make_trace("good.jsonl", good, sizeof(good));
	tmp_path(svg, sizeof(svg), "t.svg");
	tmp_path(chrome, sizeof(chrome), "t.json");

	o.svg_path = svg;
	o.last = UINT64_MAX;
	ck_assert_int_eq(tv_tb_show("/nonexistent/t.jsonl", &o, err,
				    sizeof(err)), -ENOENT);
	ck_assert_msg(strstr(err, "/nonexistent/t.jsonl") != NULL, "%s", err);

	tmp_path(path, sizeof(path), "empty.jsonl");
	write_file(path, "");
	ck_assert_int_eq(tv_tb_show(path, &o, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "empty") != NULL, "%s", err);

	tmp_path(path, sizeof(path), "bad.jsonl");
	write_file(path, "{\"a\": 1}\n");
	ck_assert_int_eq(tv_tb_show(path, &o, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "malformed trace") != NULL, "%s", err);

	tmp_path(path, sizeof(path), "badline.jsonl");
	{
		char *hdr = line_of(text, 0);
		char *t2 = malloc(strlen(hdr) + 32);

		sprintf(t2, "%s\nnot json\n", hdr);
		write_file(path, t2);
		free(t2);
		free(hdr);
	}
	ck_assert_int_eq(tv_tb_show(path, &o, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "badline.jsonl:2") != NULL, "%s", err);

	/*
	 * A node no scenario can have: refused with its line, not drawn as
	 * four billion lanes (the trace fuzzer's timeout).
	 */
	{
		static const char *const ev[] = {
			"{\"i\":1,\"src\":\"sim\",\"kind\":\"POST_SEND\",\"node\":4000000000}",
			"{\"i\":1,\"src\":\"sim\",\"kind\":\"POST_SEND\",\"node\":0,\"peer\":\"0x100\"}",
		};
		static const char *const want[] = {
			"badnode.jsonl:2: node 4000000000 out of range",
			"badnode.jsonl:2: peer 256 out of range",
		};
		char *hdr = line_of(text, 0);

		tmp_path(path, sizeof(path), "badnode.jsonl");
		for (size_t k = 0; k < 2; k++) {
			char *t2 = malloc(strlen(hdr) + strlen(ev[k]) + 4);

			sprintf(t2, "%s\n%s\n", hdr, ev[k]);
			write_file(path, t2);
			free(t2);
			ck_assert_int_eq(tv_tb_show(path, &o, err, sizeof(err)),
					 -EINVAL);
			ck_assert_msg(strstr(err, want[k]) != NULL, "%s", err);
		}
		free(hdr);
	}

	/* Unwritable outputs name themselves. */
	o.svg_path = "/nonexistent/dir/t.svg";
	ck_assert_int_lt(tv_tb_show(good, &o, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "cannot write /nonexistent/dir/t.svg") != NULL,
		      "%s", err);
	o.svg_path = NULL;
	o.chrome_path = "/nonexistent/dir/t.json";
	ck_assert_int_lt(tv_tb_show(good, &o, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "cannot write /nonexistent/dir/t.json") != NULL,
		      "%s", err);

	/* A range of events, and a row limit. */
	o.svg_path = svg;
	o.chrome_path = chrome;
	o.first = 2;
	o.last = 4;
	o.max_rows = 2;
	ck_assert_int_eq(tv_tb_show(good, &o, err, sizeof(err)), 0);
	s = read_all(svg);
	ck_assert_msg(strstr(s, "<svg") != NULL, "%.200s", s);
	ck_assert_msg(strstr(s, "</svg>") != NULL, "%.200s", s);
	free(s);
	s = read_all(chrome);
	ck_assert_msg(strstr(s, "traceEvents") != NULL, "%.200s", s);
	free(s);
	/* A range that holds nothing. */
	o.first = 1000000;
	o.last = 2000000;
	o.max_rows = 0;
	ck_assert_int_eq(tv_tb_show(good, &o, err, sizeof(err)), 0);
	s = read_all(svg);
	ck_assert_msg(strstr(s, "</svg>") != NULL, "%.200s", s);
	free(s);
	free(text);
	rm_tmpdir();
}
END_TEST

/* ---- shrink's refusals ----------------------------------------------------- */

START_TEST(test_shrink_refusals)
{
	struct tv_tb_shrink_opts o = { .max_runs = 5 };
	struct tv_tb_shrink_report rep;
	char in[128], out[128], err[1024];

	mk_tmpdir();
	tmp_path(out, sizeof(out), "min.json");
	memset(&rep, 0, sizeof(rep));
	ck_assert_int_lt(tv_tb_shrink("/nonexistent/s.json", out, &o, &rep,
				      err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "/nonexistent/s.json") != NULL, "%s", err);

	tmp_path(in, sizeof(in), "bad.json");
	write_file(in, "{\"nodes\": \n");
	ck_assert_int_eq(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, in) != NULL, "%s", err);

	tmp_path(in, sizeof(in), "unknown.json");
	write_file(in, "{\"workload\": \"nope\", \"nodes\": 2}\n");
	ck_assert_int_eq(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "unknown workload") != NULL, "%s", err);

	tmp_path(in, sizeof(in), "invalid.json");
	write_file(in, "{\"nodes\": 1, \"steps\": []}\n");
	ck_assert_int_eq(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "invalid scenario") != NULL, "%s", err);

	tmp_path(in, sizeof(in), "passes.json");
	write_file(in, basic);
	ck_assert_int_eq(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "does not fail") != NULL, "%s", err);
	ck_assert_int_ne(access(out, F_OK), 0);
	rm_tmpdir();
}
END_TEST

/* ---- swarm ------------------------------------------------------------------ */

START_TEST(test_swarm_points)
{
	uint32_t bits = 0;
	char err[256];

	ck_assert_int_eq(tv_tb_swarm_points("vf/ack/drop,vf/write/dup", &bits,
					    err, sizeof(err)), 0);
	ck_assert_int_eq(__builtin_popcount(bits), 2);
	ck_assert_int_eq(tv_tb_swarm_points("vf/ack/drop,vf/bogus", &bits,
					    err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "unknown fault point 'vf/bogus' (see: tensorverbs faults)");
	ck_assert_int_eq(__builtin_popcount(bits), 2);
}
END_TEST

START_TEST(test_swarm_refused)
{
	struct tv_tb_swarm_opts o = { .seeds = 1, .jobs = 1 };
	struct tv_tb_swarm_report rep;
	json_t *sc;

	o.seeds = 0;
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), -EINVAL);
	o.seeds = 1;
	o.jobs = 0;
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), -EINVAL);
	o.jobs = 100000;
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), -EINVAL);
	o.jobs = 1;
	o.first = INT64_MAX;
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), -EINVAL);
	o.first = 0;
	o.workload = "nope";
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), -ENOENT);
	ck_assert_int_eq(tv_tb_swarm_generate(1, 0, "nope", &sc), -ENOENT);
}
END_TEST

/*
 * Progress lines (on a terminal only: a pseudo-terminal here), and the
 * failures kept, sorted, written with their traces (a deliberate
 * breakage), more of them than a report keeps.
 */
START_TEST(test_swarm_progress_and_failures)
{
	struct tv_tb_swarm_opts o = { .seeds = 40, .first = 1, .jobs = 2 };
	struct tv_tb_swarm_report rep;
	char dir[128], out[4096];
	int master, slave;
	ssize_t n;

	master = posix_openpt(O_RDWR | O_NOCTTY);
	ck_assert_int_ge(master, 0);
	ck_assert_int_eq(grantpt(master), 0);
	ck_assert_int_eq(unlockpt(master), 0);
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	ck_assert_int_ge(slave, 0);
	mk_tmpdir();
	tmp_path(dir, sizeof(dir), "out");
	o.progress = fdopen(slave, "w");
	ck_assert_ptr_nonnull(o.progress);
	o.out_dir = dir;
	o.workload = "rendezvous";
	o.keep_going = true;
	o.breakage = "no-ack-timeout";
	ck_assert_int_eq(tv_tb_swarm(&o, &rep), 0);
	fflush(o.progress);
	n = read(master, out, sizeof(out) - 1);
	ck_assert_int_gt(n, 0);
	out[n] = '\0';
	ck_assert_msg(strstr(out, "swarm: 40/40 seeds") != NULL, "%s", out);
	ck_assert_msg(strstr(out, " violations, 0 s left") != NULL, "%s", out);
	fclose(o.progress);
	close(master);
	ck_assert_uint_eq(rep.done, 40);
	ck_assert_msg(rep.violations > 0, "no violations");
	ck_assert_uint_eq(rep.nfail, rep.violations < TV_TB_SWARM_KEEP ?
				     rep.violations : TV_TB_SWARM_KEEP);
	for (size_t i = 0; i < rep.nfail; i++) {
		ck_assert(rep.fail[i].written);
		ck_assert_int_eq(rep.fail[i].rerun_status, 1);
		ck_assert_int_eq(access(rep.fail[i].file, R_OK), 0);
		ck_assert_int_eq(access(rep.fail[i].trace, R_OK), 0);
		if (i)
			ck_assert_uint_lt(rep.fail[i - 1].seed,
					  rep.fail[i].seed);
	}
	rm_tmpdir();
}
END_TEST

/* ---- runs: the swarm's and shrink's entry, gates, limits ----------------- */

START_TEST(test_run_json)
{
	struct tb_outcome out;
	json_t *root;

	/* Not a scenario: invalid, with the parser's message. */
	root = json_loads("{\"nodes\": 1}", 0, NULL);
	ck_assert_int_eq(tb_run_json(root, 1, NULL, false, &out), 0);
	ck_assert(out.invalid);
	ck_assert_msg(strstr(out.first_msg, "$.nodes: needs at least 2 nodes") != NULL,
		      "%s", out.first_msg);
	json_decref(root);

	/* A breakage of another workload: invalid too, saying whose. */
	root = json_loads(basic, 0, NULL);
	ck_assert_int_eq(tb_run_json(root, 1, "fifo-sentinel", false, &out), 0);
	ck_assert(out.invalid);
	ck_assert_msg(strstr(out.first_msg, "fifo-sentinel") != NULL &&
		      strstr(out.first_msg, "rendezvous") != NULL,
		      "%s", out.first_msg);

	/* A passing run, its trace lines counted. */
	ck_assert_int_eq(tb_run_json(root, 1, NULL, true, &out), 0);
	ck_assert(!out.invalid);
	ck_assert_uint_eq(out.failures, 0);
	ck_assert_uint_eq(out.ops, 1);
	ck_assert_uint_gt(out.trace_events, 10);
	ck_assert_uint_gt(out.res.sim_events, 0);
	json_decref(root);

	/* A failing one: its first failure and kind. */
	root = json_loads("{\"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [4, 4]}],"
			  " \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"shape\": [4, 5]}}]}]}",
			  0, NULL);
	ck_assert_int_eq(tb_run_json(root, 5, NULL, false, &out), 0);
	ck_assert(!out.invalid);
	ck_assert_uint_ge(out.failures, 1);
	ck_assert_uint_eq(out.trace_events, 0);
	ck_assert(out.kinds & (1u << out.first));
	ck_assert_msg(out.first_msg[0] != '\0', "no message");
	json_decref(root);
}
END_TEST

struct gate {
	unsigned calls;
	unsigned refusals;
	uint64_t max_waited;
};

static bool gate_fn(void *ctx, uint32_t node, uint64_t at_ns,
		    uint64_t waited_ns)
{
	struct gate *g = ctx;

	(void)at_ns;
	ck_assert_uint_lt(node, 2);
	g->calls++;
	if (waited_ns > g->max_waited)
		g->max_waited = waited_ns;
	/* Each operation is held back three times, then let go. */
	if (waited_ns < 3000) {
		g->refusals++;
		return false;
	}
	return true;
}

START_TEST(test_run_op_gate)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	struct gate g = { 0 };
	char err[TV_TB_ERR_MAX];

	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "gate", &sc, err), 0);
	tv_tb_run_opts_init(&o, sc);
	o.op_gate = gate_fn;
	o.op_gate_ctx = &g;
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->failures, 0);
	ck_assert_uint_eq(tv_tb_run_result(run)->ops_ok, 1);
	ck_assert_uint_ge(g.calls, 8);
	ck_assert_uint_ge(g.refusals, 6);
	ck_assert_uint_ge(g.max_waited, 3000);
	ck_assert_ptr_nonnull(tv_tb_run_wl(run));
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* A world that runs past its event budget is a hang, saying so. */
START_TEST(test_run_max_events)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_text(
		"{\"nodes\": 2, \"sim\": {\"max_events\": 5}, " RV_SENDS "}", 1,
		&sc);
	const struct tv_tb_failures *f = tv_tb_run_failures(run);
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	ck_assert_uint_ge(f->count, 1);
	ck_assert(f->kinds & (1u << TV_TB_FK_HANG));
	ck_assert_msg(strstr(f->msgs[0], "5") != NULL, "%s", f->msgs[0]);
	ck_assert_str_eq(tv_tb_run_outcome(run), "FAIL");
	out = open_memstream(&buf, &len);
	tv_tb_run_print_summary(run, out);
	fclose(out);
	ck_assert_msg(strstr(buf, "cov") != NULL, "%s", buf);
	free(buf);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* A node that crashes and restarts: the summary counts it. */
START_TEST(test_run_crash_summary)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_text(
		"{\"nodes\": 2, \"faults\": [{\"point\": \"node/crash\", \"nth\": 3, \"count\": 1}], "
		"\"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8], \"repeat\": 8, \"stagger_ns\": 100000}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\", \"repeat\": 8, \"stagger_ns\": 100000, \"expect\": \"any\"}]}]}",
		1, &sc);
	const struct tv_tb_result *res = tv_tb_run_result(run);
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	ck_assert_uint_eq(res->crashes, 1);
	out = open_memstream(&buf, &len);
	tv_tb_run_print_summary(run, out);
	fclose(out);
	ck_assert_msg(strstr(buf, "crashes     1 crashes") != NULL, "%s", buf);
	free(buf);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* A sequence of more operations than a program takes. */
START_TEST(test_port_too_many_ops)
{
	size_t cap = 10002 * 20 + 256;
	char *text = malloc(cap), *p = text, err[TV_TB_ERR_MAX];
	struct tv_tb_scenario *sc = NULL;

	p += sprintf(p, "{\"workload\": \"port\", \"nodes\": 2, \"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"ops\": [");
	for (int i = 0; i < 10001; i++)
		p += sprintf(p, "%s{\"op\": \"flush\"}", i ? "," : "");
	strcpy(p, "]}]}");
	ck_assert_int_eq(tv_tb_scenario_load_string(text, "many", &sc, err),
			 -EINVAL);
	ck_assert_str_eq(err, "$.programs[0].ops: at most 10000 operations");
	free(text);
}
END_TEST

/* A gather node crashes and restarts: its batches are cancelled. */
START_TEST(test_gather_crash)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_text(
		"{\"workload\": \"gather\", \"nodes\": 2, \"gather\": {\"rows\": 512, \"row_bytes\": 64},"
		" \"faults\": [{\"point\": \"node/crash\", \"nth\": 2, \"count\": 1, \"arg\": 10000}],"
		" \"batches\": [{\"node\": 0, \"count\": 64}, {\"node\": 0, \"count\": 64, \"at_ns\": 1000},"
		" {\"node\": 1, \"count\": 64, \"at_ns\": 2000}, {\"node\": 0, \"count\": 64, \"at_ns\": 200000}]}",
		1, &sc);
	const struct tv_tb_result *res = tv_tb_run_result(run);

	ck_assert_uint_eq(res->crashes, 1);
	ck_assert_uint_eq(res->restarts + res->restart_failures, 1);
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		tv_tb_run_print_summary(run, f);
		fclose(f);
		ck_assert_msg(strstr(buf, "faults      1 fired: node/crash x1\n") != NULL,
			      "%s", buf);
		ck_assert_msg(strstr(buf, "1 QPs reconnected") != NULL, "%s",
			      buf);
		free(buf);
	}
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* Names and messages past their limits. */
START_TEST(test_rendezvous_long_texts)
{
	char *text = malloc(8192), *longs = malloc(2048), err[TV_TB_ERR_MAX];
	struct tv_tb_scenario *sc = NULL;

	memset(longs, 'x', 1100);
	longs[1100] = '\0';
	snprintf(text, 8192, "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"error\": {\"code\": \"NOT_FOUND\", \"message\": \"%s\"}}", RV_RECV0) "}", longs);
	ck_assert_int_eq(tv_tb_scenario_load_string(text, "long", &sc, err),
			 -EINVAL);
	ck_assert_str_eq(err, "$.steps[0].sends[0].error: message longer than 1024 bytes");
	longs[600] = '\0';
	snprintf(text, 8192, "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"%s\", \"dtype\": \"float\", \"shape\": [1]}", RV_RECV0) "}", longs);
	ck_assert_int_eq(tv_tb_scenario_load_string(text, "long", &sc, err),
			 -EINVAL);
	ck_assert_str_eq(err, "$.steps[0].sends[0]: 'name' longer than 504 bytes");
	ck_assert_ptr_null(sc);
	free(text);
	free(longs);
}
END_TEST

/* Runs that break a scenario expectation, each saying which. */
static const struct {
	const char *text;
	enum tv_tb_fail_kind kind;
	const char *msg;
} bad_runs[] = {
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"dtype\": \"int32\"}}") "}",
	  TV_TB_FK_EXPECT, "dtype float, expected int32" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"dead\": true}}") "}",
	  TV_TB_FK_EXPECT, "is_dead 0, expected 1" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"string\", \"shape\": [2], \"strings\": [\"a\", \"b\"]}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"strings\": [\"a\"]}}") "}",
	  TV_TB_FK_EXPECT, "2 strings, expected 1" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"string\", \"shape\": [2], \"strings\": [\"a\", \"b\"]}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"strings\": [\"a\", \"c\"]}}") "}",
	  TV_TB_FK_EXPECT, "string element 1 differs from the expected \"c\"" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 ", \"fill\": {\"pattern\": \"iota\"}}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"fill\": {\"pattern\": \"zeros\"}}}") "}",
	  TV_TB_FK_EXPECT, "data differs from the expected fill" },
	{ "{\"nodes\": 2, \"expect_faults\": {\"vf/ack/drop\": 2}, " RV_SENDS "}",
	  TV_TB_FK_EXPECT, "expect_faults vf/ack/drop: fired 0 times, expected 2..2" },
	{ "{\"nodes\": 2, \"expect_corruption\": {\"detected\": 3}, " RV_SENDS "}",
	  TV_TB_FK_EXPECT, "expect_corruption detected: 0" },
	{ "{\"nodes\": 2, \"expect_corruption\": {\"undetected\": {\"min\": 1, \"max\": 2}}, " RV_SENDS "}",
	  TV_TB_FK_EXPECT, "expect_corruption undetected: 0" },
	{ "{\"nodes\": 2, " RV_STEP("{\"from\": 0, \"to\": 1, \"name\": \"t\", \"error\": {\"code\": \"NOT_FOUND\", \"message\": \"gone\"}}", "{\"node\": 1, \"from\": 0, \"name\": \"t\"}") "}",
	  TV_TB_FK_EXPECT, "expected ok, got NOT_FOUND: gone" },
	{ "{\"nodes\": 2, " RV_STEP(RV_SEND0 "}", "{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"error\": \"NOT_FOUND\", \"message\": \"x\"}}") "}",
	  TV_TB_FK_EXPECT, "expected NOT_FOUND, got a tensor" },
};

START_TEST(test_run_expectations_broken)
{
	for (size_t i = 0; i < TB_ARRAY_SIZE(bad_runs); i++) {
		struct tv_tb_scenario *sc;
		struct tv_tb_run *run = run_text(bad_runs[i].text, 1, &sc);
		const struct tv_tb_failures *f = tv_tb_run_failures(run);

		ck_assert_msg(f->count >= 1, "bad_runs[%zu] passed", i);
		ck_assert_msg(f->first == bad_runs[i].kind,
			      "bad_runs[%zu]: kind %s: %s", i,
			      tv_tb_fail_kind_name(f->first), f->msgs[0]);
		ck_assert_msg(strstr(f->msgs[0], bad_runs[i].msg) != NULL,
			      "bad_runs[%zu]: '%s' lacks '%s'", i, f->msgs[0],
			      bad_runs[i].msg);
		tv_tb_run_free(run);
		tv_tb_scenario_free(sc);
	}
}
END_TEST

/* --verbose prints events and firings as they happen. */
START_TEST(test_run_verbose)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char err[TV_TB_ERR_MAX], path[128], *text;
	int saved;

	mk_tmpdir();
	ck_assert_int_eq(tv_tb_scenario_load_string(
				 "{\"nodes\": 2, \"faults\": [{\"point\": \"vf/ack/drop\", \"count\": 1}], " RV_SENDS "}",
				 "verbose", &sc, err), 0);
	tv_tb_run_opts_init(&o, sc);
	o.verbose = true;
	tmp_path(path, sizeof(path), "out.txt");
	saved = stdout_to(path);
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	stdout_back(saved);
	text = read_all(path);
	ck_assert_msg(strstr(text, "fault  vf/ack/drop hit 1 (node") != NULL,
		      "%.400s", text);
	free(text);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
	rm_tmpdir();
}
END_TEST

/* ---- drawings of every workload's traces ---------------------------------- */

/* Draws path; the SVG and the Chrome JSON hold each of want (NULL-ended). */
static void show_has(const char *path, const char *const *svg_want,
		     const char *const *chrome_want)
{
	struct tv_tb_show_opts o = { .last = UINT64_MAX };
	char svg[128], chrome[128], err[512], *s;
	json_t *j;

	tmp_path(svg, sizeof(svg), "d.svg");
	tmp_path(chrome, sizeof(chrome), "d.json");
	o.svg_path = svg;
	o.chrome_path = chrome;
	ck_assert_msg(tv_tb_show(path, &o, err, sizeof(err)) == 0, "%s", err);
	s = read_all(svg);
	ck_assert_msg(strstr(s, "</svg>") != NULL, "%.200s", s);
	for (const char *const *w = svg_want; w && *w; w++)
		ck_assert_msg(strstr(s, *w) != NULL, "%s: SVG lacks '%s'", path,
			      *w);
	free(s);
	j = json_load_file(chrome, 0, NULL);
	ck_assert_msg(j != NULL, "%s: Chrome JSON does not parse", path);
	json_decref(j);
	s = read_all(chrome);
	for (const char *const *w = chrome_want; w && *w; w++)
		ck_assert_msg(strstr(s, *w) != NULL, "%s: Chrome lacks '%s'",
			      path, *w);
	free(s);
}

START_TEST(test_show_port)
{
	char path[128];
	static const char *const svg_want[] = { "port-edges", "write", NULL };
	static const char *const chrome_want[] = { "push @", "proxy", NULL };

	mk_tmpdir();
	trace_text("{\"name\": \"port-edges\", \"workload\": \"port\", \"nodes\": 2, \"port\": {\"signal\": \"atomic\"},"
		   " \"programs\": [{\"kind\": \"sequence\", \"from\": 0, \"to\": 1, \"bytes\": 4096, \"ops\": ["
		   " {\"op\": \"put\", \"dst_off\": 0, \"src_off\": 0, \"bytes\": 1024},"
		   " {\"op\": \"put_with_signal\", \"dst_off\": 0, \"src_off\": 0, \"bytes\": 64},"
		   " {\"op\": \"signal\"}, {\"op\": \"flush\"}]},"
		   " {\"kind\": \"ping_pong\", \"nodes\": [1, 0], \"bytes\": 256, \"iters\": 2, \"flush_every\": 1, \"start_ns\": 100000}]}",
		   "port.jsonl", 1, NULL, path, sizeof(path));
	show_has(path, svg_want, chrome_want);
	replay_expect(path, TV_TB_REPLAY_SAME, NULL);
	trace_text("{\"name\": \"port-imm\", \"workload\": \"port\", \"nodes\": 3, \"port\": {\"signal\": \"write_imm\"},"
		   " \"faults\": [{\"point\": \"port/proxy/stall\", \"count\": 2}, {\"point\": \"port/sem/delay\", \"count\": 2}],"
		   " \"programs\": [{\"kind\": \"allreduce\", \"count\": 12}, {\"kind\": \"packet_ping_pong\", \"nodes\": [0, 2], \"format\": \"ll8\", \"bytes\": 64, \"iters\": 2}]}",
		   "port2.jsonl", 2, NULL, path, sizeof(path));
	show_has(path, NULL, NULL);
	rm_tmpdir();
}
END_TEST

START_TEST(test_show_gather)
{
	char path[128];
	static const char *const svg_want[] = { "gather-edges", NULL };

	mk_tmpdir();
	trace_text("{\"name\": \"gather-edges\", \"workload\": \"gather\", \"nodes\": 2, \"gather\": {\"rows\": 512, \"row_bytes\": 64, \"qps_per_peer\": 2, \"post_list\": 8},"
		   " \"faults\": [{\"point\": \"gather/read/error\", \"count\": 1}],"
		   " \"batches\": [{\"node\": 0, \"count\": 32}, {\"node\": 1, \"ids\": [0, 1, 511], \"at_ns\": 1000}]}",
		   "gather.jsonl", 1, NULL, path, sizeof(path));
	show_has(path, svg_want, NULL);
	replay_expect(path, TV_TB_REPLAY_SAME, NULL);
	rm_tmpdir();
}
END_TEST

/* Rendezvous with faults that show as notes: firings, QP errors, RNR. */
START_TEST(test_show_rendezvous_faults)
{
	char path[128];
	static const char *const svg_want[] = { "fault", NULL };

	mk_tmpdir();
	trace_text("{\"name\": \"rv-\\u00e9faults\", \"nodes\": 2,"
		   " \"faults\": [{\"point\": \"vf/qp/error\", \"nth\": 4, \"count\": 1}, {\"point\": \"vf/recv/drop\", \"nth\": 2, \"count\": 1},"
		   " {\"point\": \"vf/ack/drop\", \"count\": 1}],"
		   " \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [64], \"repeat\": 4}],"
		   " \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\", \"repeat\": 4, \"expect\": \"any\"}]}]}",
		   "rvf.jsonl", 1, NULL, path, sizeof(path));
	show_has(path, svg_want, NULL);
	replay_expect(path, TV_TB_REPLAY_SAME, NULL);
	/* With a breakage in the header, replayed with it. */
	trace_text(basic, "brk.jsonl", 1, "no-ack-timeout", path, sizeof(path));
	replay_expect(path, TV_TB_REPLAY_SAME, NULL);
	rm_tmpdir();
}
END_TEST

/* ---- shrink, further ------------------------------------------------------- */

static const char wrong_shape[] =
	"{\"name\": \"neg-wrong-shape\", \"seed\": 5, \"nodes\": 2,"
	" \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [4, 4]}],"
	" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\", \"expect\": {\"shape\": [4, 5]}}]}]}";

START_TEST(test_shrink_kinds_and_outputs)
{
	struct tv_tb_shrink_opts o = { .max_runs = 3 };
	struct tv_tb_shrink_report rep;
	char in[128], out[128], tr[128], err[1024];

	mk_tmpdir();
	tmp_path(in, sizeof(in), "ws.json");
	write_file(in, wrong_shape);
	tmp_path(out, sizeof(out), "min.json");
	/* It fails, but not with the kind asked for. */
	o.has_kind = true;
	o.kind = TV_TB_FK_LEAK;
	memset(&rep, 0, sizeof(rep));
	ck_assert_int_eq(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "it does not fail with [leak]");
	/* It fails, the output cannot be written. */
	o.has_kind = false;
	ck_assert_int_eq(tv_tb_shrink(in, "/nonexistent/dir/min.json", &o,
				      &rep, err, sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "cannot write /nonexistent/dir/min.json: "
			      "No such file or directory");
	/* A trace as the input: its scenario, seed and plan. */
	trace_text(wrong_shape, "ws.jsonl", 5, NULL, tr, sizeof(tr));
	memset(&rep, 0, sizeof(rep));
	ck_assert_int_eq(tv_tb_shrink(tr, out, &o, &rep, err, sizeof(err)), 0);
	ck_assert_uint_eq(rep.seed, 5);
	ck_assert_uint_eq(rep.kind, TV_TB_FK_EXPECT);
	ck_assert_uint_le(rep.runs, 3);
	ck_assert_int_eq(access(out, R_OK), 0);
	/* A trace whose header is not one. */
	tmp_path(tr, sizeof(tr), "bad.jsonl");
	write_file(tr, "{\"tensorverbs_trace\": 1}\n");
	ck_assert_int_eq(tv_tb_shrink(tr, out, &o, &rep, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "bad.jsonl: header needs \"seed\"") != NULL,
		      "%s", err);
	rm_tmpdir();
}
END_TEST

/* A scenario with a bit of everything, one recv of which fails: shrunk. */
static const char busy_fail[] =
	"{\"name\": \"busy\", \"seed\": 3, \"nodes\": 4, \"links\": [{\"from\": 0, \"to\": 3, \"latency_ns\": 3000}],"
	" \"late_nodes\": [{\"node\": 3, \"start_ns\": 1000}],"
	" \"faults\": [{\"point\": \"sim/deliver/delay\", \"probability\": 0.2, \"arg\": 1000}],"
	" \"expect_stats\": [{\"node\": 1, \"msgs_recv\": {\"META_DATA_UPDATE\": {\"min\": 0, \"max\": 100}}}],"
	" \"steps\": ["
	"  {\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"a\", \"dtype\": \"double\", \"shape\": [16, 4], \"placement\": \"device\", \"fill\": {\"pattern\": \"iota\"}},"
	"             {\"from\": 0, \"to\": 2, \"name\": \"e\", \"error\": {\"code\": \"NOT_FOUND\"}},"
	"             {\"from\": 2, \"to\": 1, \"name\": \"d\", \"dtype\": \"float\", \"dead\": true},"
	"             {\"from\": 1, \"to\": 0, \"name\": \"s\", \"dtype\": \"string\", \"shape\": [2], \"strings\": [\"x\", \"y\"]}],"
	"   \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"a\", \"placement\": \"device\"},"
	"             {\"node\": 2, \"from\": 0, \"name\": \"e\", \"expect\": {\"error\": \"NOT_FOUND\"}},"
	"             {\"node\": 1, \"from\": 2, \"name\": \"d\", \"expect\": {\"dead\": true}},"
	"             {\"node\": 0, \"from\": 1, \"name\": \"s\"}]},"
	"  {\"at_ns\": 5000, \"sends\": [{\"from\": 3, \"to\": 2, \"name\": \"w\", \"dtype\": \"int32\", \"shape\": [4, 4], \"at_ns\": 6000, \"repeat\": 3},"
	"             {\"from\": 2, \"to\": 3, \"name\": \"bad\", \"dtype\": \"float\", \"shape\": [4, 4]}],"
	"   \"recvs\": [{\"node\": 2, \"from\": 3, \"name\": \"w\", \"repeat\": 3, \"stagger_ns\": 10},"
	"             {\"node\": 3, \"from\": 2, \"name\": \"bad\", \"expect\": {\"shape\": [4, 5]}}]}]}";

START_TEST(test_shrink_busy)
{
	struct tv_tb_shrink_opts o = { .max_runs = 120 };
	struct tv_tb_shrink_report rep;
	char in[128], out[128], err[1024];
	json_t *min;

	mk_tmpdir();
	tmp_path(in, sizeof(in), "busy.json");
	write_file(in, busy_fail);
	tmp_path(out, sizeof(out), "min.json");
	memset(&rep, 0, sizeof(rep));
	ck_assert_msg(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(rep.kind, TV_TB_FK_EXPECT);
	ck_assert_uint_eq(rep.seed, 3);
	ck_assert_uint_gt(rep.runs, 10);
	ck_assert_msg(strstr(rep.msg, "shape") != NULL, "%s", rep.msg);
	ck_assert_uint_eq(rep.ops, 1);
	min = json_load_file(out, 0, NULL);
	ck_assert_ptr_nonnull(min);
	ck_assert_int_eq(json_integer_value(json_object_get(min, "seed")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(min, "nodes")), 2);
	json_decref(min);
	rm_tmpdir();
}
END_TEST

/* SVG text escaped; CQ overflows and RNRs drawn as notes. */
START_TEST(test_show_escapes_and_notes)
{
	char path[128];
	static const char *const svg_want[] = { "a&lt;b&amp;c&quot;d", NULL };

	mk_tmpdir();
	trace_text("{\"name\": \"a<b&c\\\"d\", \"nodes\": 2,"
		   " \"faults\": [{\"point\": \"sim/cq/overflow\", \"nth\": 3, \"count\": 1}, {\"point\": \"vf/recv/drop\", \"count\": 3}],"
		   " \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [64], \"repeat\": 4}],"
		   " \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\", \"repeat\": 4, \"expect\": \"any\"}]}]}",
		   "esc.jsonl", 1, NULL, path, sizeof(path));
	show_has(path, svg_want, NULL);
	rm_tmpdir();
}
END_TEST

/*
 * The swarm's scenarios, drawn and run in this process (a swarm runs them
 * in workers): each is valid, the healthy engines pass, and a second run
 * in this process gives the same events, whatever ran before it (a swarm
 * worker runs many seeds, and its failures must reproduce in a fresh
 * process).  Rendezvous seed 17 restarts a node after a crash: while the
 * pool deregistered its blocks in address order, its second run gave the
 * receiver's buffer another rkey (tests/pool: test_destroy_oldest_first).
 */
static void swarm_in_process(const char *workload, uint64_t seeds)
{
	for (uint64_t seed = 1; seed <= seeds; seed++) {
		struct tb_outcome out, again;
		json_t *root, *copy;

		ck_assert_int_eq(tv_tb_swarm_generate(seed, 0, workload, &root), 0);
		ck_assert_str_eq(json_string_value(json_object_get(root, "workload")) ?
				 json_string_value(json_object_get(root, "workload")) :
				 "rendezvous", workload);
		ck_assert_int_eq(json_integer_value(json_object_get(root, "seed")),
				 (json_int_t)seed);
		copy = json_deep_copy(root);
		ck_assert_int_eq(tb_run_json(root, seed, NULL, false, &out), 0);
		ck_assert_msg(!out.invalid, "%s seed %" PRIu64 ": %s", workload,
			      seed, out.first_msg);
		ck_assert_msg(out.failures == 0, "%s seed %" PRIu64 ": %s",
			      workload, seed, out.first_msg);
		/* The same seed draws the same scenario and run. */
		json_decref(root);
		ck_assert_int_eq(tv_tb_swarm_generate(seed, 0, workload, &root), 0);
		ck_assert(json_equal(root, copy));
		ck_assert_int_eq(tb_run_json(root, seed, NULL, false, &again), 0);
		ck_assert_uint_eq(again.failures, 0);
		ck_assert_uint_eq(again.res.sim_events, out.res.sim_events);
		ck_assert_msg(again.res.event_hash == out.res.event_hash,
			      "%s seed %" PRIu64 ": event hash 0x%" PRIx64 ", then 0x%" PRIx64,
			      workload, seed, out.res.event_hash,
			      again.res.event_hash);
		json_decref(root);
		json_decref(copy);
	}
}

START_TEST(test_swarm_rendezvous_in_process)
{
	swarm_in_process("rendezvous", 20);
}
END_TEST

START_TEST(test_swarm_port_in_process)
{
	swarm_in_process("port", 16);
}
END_TEST

START_TEST(test_swarm_gather_in_process)
{
	swarm_in_process("gather", 16);
}
END_TEST

/*
 * Each deliberately broken engine (TV_BREAK) fails some of the first
 * seeds of its workload's swarm, in this process (a swarm runs them in
 * workers, whose coverage is never written: they end with _exit); the
 * run is not refused as invalid, and says what failed.
 */
static const struct {
	const char *workload;
	const char *breakage;
	uint64_t seeds;
} breakages[] = {
	{ "port", "fifo-sentinel", 200 }, { "port", "no-sem-reset", 200 },
	{ "port", "no-flow-control", 200 }, { "port", "blocking-flush", 200 },
	{ "port", "no-wait-timeout", 200 }, { "port", "ll-last-byte", 200 },
	{ "gather", "ignore-errors", 200 }, { "gather", "signal-aliasing", 200 },
	{ "gather", "rd-atomic", 200 }, { "rendezvous", "no-ack-timeout", 200 },
};

START_TEST(test_breakages_found_in_process)
{
	size_t i = (size_t)_i;
	uint64_t found = 0, seed;

	/* 8 seeds at least (more failures, more invariants), then to one. */
	for (seed = 1; seed <= breakages[i].seeds && (!found || seed <= 8);
	     seed++) {
		struct tb_outcome out;
		json_t *root;

		ck_assert_int_eq(tv_tb_swarm_generate(seed, 0, breakages[i].workload,
						      &root), 0);
		ck_assert_int_eq(tb_run_json(root, seed, breakages[i].breakage,
					     false, &out), 0);
		json_decref(root);
		ck_assert_msg(!out.invalid, "%s: %s", breakages[i].breakage,
			      out.first_msg);
		if (out.failures) {
			found = found ? found : seed;
			ck_assert(out.kinds & (1u << out.first));
			ck_assert(out.first_msg[0]);
		}
	}
	ck_assert_msg(found, "%s: no failure in %" PRIu64 " seeds",
		      breakages[i].breakage, breakages[i].seeds);
}
END_TEST

/* Trace headers and lines show and replay take as they come. */
START_TEST(test_trace_odd_headers)
{
	char good[128], path[128], svg[128], err[512], *text, *hdr, *edited, *sv;
	struct tv_tb_show_opts o = { .last = UINT64_MAX };
	json_t *h, *sc;
	int n;

	mk_tmpdir();
	text = make_trace("good.jsonl", good, sizeof(good));
	n = count_lines(text);
	hdr = line_of(text, 0);
	h = json_loads(hdr, 0, NULL);
	free(hdr);
	tmp_path(svg, sizeof(svg), "o.svg");
	o.svg_path = svg;

	/* A breakage of another workload: replay names both. */
	json_object_set_new(h, "test_breakage", json_string("fifo-sentinel"));
	hdr = json_dumps(h, JSON_COMPACT);
	edited = edit_lines(text, 0, hdr, NULL);
	tmp_path(path, sizeof(path), "brk.jsonl");
	write_file(path, edited);
	replay_expect(path, TV_TB_REPLAY_MALFORMED,
		      "header: \"test_breakage\" 'fifo-sentinel' is not workload rendezvous's");
	free(edited);
	free(hdr);
	json_object_del(h, "test_breakage");

	/*
	 * show: a scenario of an unknown workload (drawn as rendezvous'),
	 * a name too long for the drawing, no "nodes" (the events say),
	 * a summary whose result is neither PASS nor FAIL.
	 */
	sc = json_object_get(h, "scenario");
	json_object_set_new(sc, "workload", json_string("nope"));
	json_object_set_new(sc, "name", json_string(
		"a-very-long-scenario-name-a-very-long-scenario-name-a-very-long-scenario-name-a-very-long-scenario-name-a-very-long-scenario-name-a-very-long-scenario-name-a-very-long-scenario-name-a-very-long-scenario-name-the-end"));
	json_object_del(sc, "nodes");
	hdr = json_dumps(h, JSON_COMPACT);
	edited = edit_lines(text, 0, hdr, NULL);
	free(hdr);
	hdr = edited;
	edited = edit_lines(hdr, n - 1, "{\"summary\": true, \"result\": \"<b>\"}", NULL);
	free(hdr);
	tmp_path(path, sizeof(path), "odd.jsonl");
	write_file(path, edited);
	free(edited);
	ck_assert_msg(tv_tb_show(path, &o, err, sizeof(err)) == 0, "%s", err);
	sv = read_all(svg);
	ck_assert_msg(strstr(sv, "the-end") == NULL, "name not cut");
	ck_assert_msg(strstr(sv, "a-very-long-scenario-name") != NULL, "no name");
	ck_assert_msg(strstr(sv, "<b>") == NULL, "result printed as is");
	free(sv);

	/* A workload that is not a string: rendezvous' drawing too. */
	json_object_set_new(sc, "workload", json_integer(5));
	hdr = json_dumps(h, JSON_COMPACT);
	edited = edit_lines(text, 0, hdr, NULL);
	tmp_path(path, sizeof(path), "wl5.jsonl");
	write_file(path, edited);
	ck_assert_msg(tv_tb_show(path, &o, err, sizeof(err)) == 0, "%s", err);
	free(edited);
	free(hdr);

	/* A line that is neither an event nor the summary. */
	edited = edit_lines(text, 2, "{\"x\": 1}", NULL);
	tmp_path(path, sizeof(path), "neither.jsonl");
	write_file(path, edited);
	ck_assert_int_eq(tv_tb_show(path, &o, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "neither.jsonl:3: neither an event nor the summary") != NULL,
		      "%s", err);
	free(edited);
	json_decref(h);
	free(text);
	rm_tmpdir();
}
END_TEST

/* Fault plans whose text the fault layer takes and JSON cannot hold. */
START_TEST(test_plan_text_values)
{
	char err[TV_TB_PLAN_ERR_MAX];
	json_t *plan = NULL;
	int rc;

	rc = tv_tb_plan_from_text("vf/ack/drop:count=0xffffffffffffffff",
				  &plan, err, sizeof(err));
	/* The fault layer takes it; a JSON rule cannot hold it. */
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_ptr_null(plan);
	ck_assert_str_eq(err, "fault plan: bad value in 'vf/ack/drop:count=0xffffffffffffffff'");
	rc = tv_tb_plan_from_text("vf/ack/drop:nth", &plan, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_msg(strstr(err, "nth") != NULL, "%s", err);
	rc = tv_tb_plan_from_text("vf/ack/drop:speed=3", &plan, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_msg(strstr(err, "speed") != NULL, "%s", err);
}
END_TEST

/* Crashes printed as they happen; a restart too far away. */
START_TEST(test_run_crash_verbose)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char err[TV_TB_ERR_MAX], path[128], *text;
	int saved;

	mk_tmpdir();
	ck_assert_int_eq(tv_tb_scenario_load_string(
		"{\"nodes\": 2, \"faults\": [{\"point\": \"node/crash\", \"nth\": 2, \"count\": 1, \"arg\": 9223372036854775807}], "
		"\"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8], \"repeat\": 6, \"stagger_ns\": 100000}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\", \"repeat\": 6, \"stagger_ns\": 100000, \"expect\": \"any\"}]}]}",
		"crashv", &sc, err), 0);
	tv_tb_run_opts_init(&o, sc);
	o.verbose = true;
	tmp_path(path, sizeof(path), "out.txt");
	saved = stdout_to(path);
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	stdout_back(saved);
	text = read_all(path);
	ck_assert_msg(strstr(text, " CRASH") != NULL, "%.600s", text);
	ck_assert_msg(strstr(text, "(node down)") != NULL, "%.600s", text);
	free(text);
	ck_assert_uint_eq(tv_tb_run_result(run)->crashes, 1);
	ck_assert_uint_eq(tv_tb_run_result(run)->restarts, 0);
	ck_assert_uint_gt(tv_tb_run_result(run)->skipped_ops, 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
	rm_tmpdir();
}
END_TEST

/* Shrinking lowers a plan's rules: counts, windows, arguments. */
START_TEST(test_shrink_plan_rules)
{
	struct tv_tb_shrink_opts o = { .max_runs = 80 };
	struct tv_tb_shrink_report rep;
	char in[128], out[128], err[1024];
	json_t *min, *r;
	char *text = malloc(8192);
	size_t k;

	mk_tmpdir();
	snprintf(text, 8192, "{\"name\": \"planned\", \"seed\": 4, \"nodes\": 3,"
		 " \"faults\": [{\"point\": \"sim/deliver/delay\", \"count\": 8, \"after_ns\": 1, \"before_ns\": 100000000, \"arg\": 2000},"
		 " {\"point\": \"vf/write/dup\", \"nth\": 6, \"count\": 3}],"
		 " \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 1, \"name\": \"a\", \"dtype\": \"float\", \"shape\": [8], \"repeat\": 3},"
		 " {\"from\": 2, \"to\": 1, \"name\": \"b\", \"dtype\": \"float\", \"shape\": [4, 4]}],"
		 " \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"a\", \"repeat\": 3},"
		 " {\"node\": 1, \"from\": 2, \"name\": \"b\", \"expect\": {\"shape\": [4, 5]}}]}]}");
	tmp_path(in, sizeof(in), "planned.json");
	write_file(in, text);
	free(text);
	tmp_path(out, sizeof(out), "min.json");
	memset(&rep, 0, sizeof(rep));
	ck_assert_msg(tv_tb_shrink(in, out, &o, &rep, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(rep.kind, TV_TB_FK_EXPECT);
	min = json_load_file(out, 0, NULL);
	ck_assert_ptr_nonnull(min);
	/* The failure needs no fault: the rules went, or were lowered. */
	json_array_foreach(json_object_get(min, "faults"), k, r) {
		ck_assert_ptr_null(json_object_get(r, "after_ns"));
		ck_assert_int_le(json_integer_value(json_object_get(r, "count")), 1);
	}
	json_decref(min);
	rm_tmpdir();
}
END_TEST

/*
 * Receives that may fail: past the receiver's max_recv_bytes (fixed-size
 * and string tensors), or given too little time (a late receiver).  None
 * is a failure of the run; each receive still ends.
 */
START_TEST(test_rendezvous_allowed_failures)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run *run = run_text(
		"{\"nodes\": 2, \"engine\": {\"max_recv_bytes\": 16}, \"steps\": [{\"sends\": ["
		" {\"from\": 0, \"to\": 1, \"name\": \"big\", \"dtype\": \"float\", \"shape\": [64]},"
		" {\"from\": 0, \"to\": 1, \"name\": \"str\", \"dtype\": \"string\", \"shape\": [4], \"strings\": [\"aaaaaaaaaaaaaaaaaaaa\", \"b\", \"c\", \"d\"]},"
		" {\"from\": 0, \"to\": 1, \"name\": \"small\", \"dtype\": \"uint8\", \"shape\": [4]}],"
		" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"big\", \"expect\": \"any\"},"
		" {\"node\": 1, \"from\": 0, \"name\": \"str\", \"expect\": \"any\"},"
		" {\"node\": 1, \"from\": 0, \"name\": \"small\"}]}]}",
		1, &sc);
	const struct tv_tb_result *res = tv_tb_run_result(run);

	ck_assert_msg(res->failures == 0, "%s", tv_tb_run_failures(run)->msgs[0]);
	ck_assert_uint_eq(res->ops, 3);
	ck_assert_uint_ge(res->ops_failed, 1);
	ck_assert_uint_ge(res->ops_ok, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);

	run = run_text(
		"{\"nodes\": 3, \"allow_error_completions\": true, \"engine\": {\"recv_timeout_ns\": 1000},"
		" \"late_nodes\": [{\"node\": 2, \"start_ns\": 5000000}],"
		" \"steps\": [{\"sends\": [{\"from\": 0, \"to\": 2, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}],"
		" \"recvs\": [{\"node\": 2, \"from\": 0, \"name\": \"t\", \"at_ns\": 5000000, \"expect\": \"any\"}]}]}",
		1, &sc);
	res = tv_tb_run_result(run);
	ck_assert_msg(res->failures == 0, "%s", tv_tb_run_failures(run)->msgs[0]);
	ck_assert_uint_eq(res->ops, 1);
	ck_assert_uint_eq(res->ops_ok + res->ops_failed, 1);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}
END_TEST

/* ---- recordings: made, merged, replayed, refused ------------------------- */

static void merge_refused(const char *out, const char *const *paths, size_t n,
			  int want_rc, const char *msg)
{
	char err[1024];

	ck_assert_int_eq(tv_tb_record_merge(out, paths, n, err, sizeof(err)),
			 want_rc);
	ck_assert_msg(strstr(err, msg) != NULL, "err '%s' lacks '%s'", err, msg);
}

static void replay_sim_refused(const char *path, int want_rc, const char *msg)
{
	struct tv_tb_replay_sim_report rep;

	ck_assert_int_eq(tv_tb_replay_sim(path, &rep), want_rc);
	ck_assert_msg(strstr(rep.err, msg) != NULL, "err '%s' lacks '%s'",
		      rep.err, msg);
	tv_tb_replay_sim_report_free(&rep);
}

START_TEST(test_record_merge_refused)
{
	char a[128], b[128], c[128], d[128], tr[128], out[128], msg[512];
	const char *paths[2];
	struct tv_tb_scenario *sc;
	struct tv_tb_tap *tap = NULL;
	char err[TV_TB_ERR_MAX];

	mk_tmpdir();
	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "b", &sc, err), 0);
	ck_assert_int_eq(tv_tb_record_create(NULL, sc, NULL, 1, "sim", &tap),
			 -EINVAL);
	ck_assert_int_eq(tv_tb_record_create("x", sc, NULL, 1, NULL, &tap),
			 -EINVAL);
	ck_assert_int_eq(tv_tb_record_create("x", NULL, NULL, 1, "sim", &tap),
			 -EINVAL);
	ck_assert_ptr_null(tap);
	/* A recording that cannot be written. */
	ck_assert_int_eq(tv_tb_record_create("/nonexistent/dir/r.jsonl", sc,
					     NULL, 1, "sim", &tap), 0);
	ck_assert_int_eq(tv_tb_record_finish(tap, &(struct tv_tb_result){ 0 },
					     &(struct tv_tb_failures){ 0 }),
			 -ENOENT);
	tv_tb_scenario_free(sc);

	record_text(basic, "a.jsonl", 1, "sim", a, sizeof(a));
	record_text(basic, "b.jsonl", 2, "sim", b, sizeof(b));
	record_text(basic, "c.jsonl", 1, "ibverbs", c, sizeof(c));
	record_text(wrong_shape, "d.jsonl", 1, "sim", d, sizeof(d));
	trace_text(basic, "t.jsonl", 1, NULL, tr, sizeof(tr));
	tmp_path(out, sizeof(out), "merged.jsonl");

	paths[0] = a;
	paths[1] = b;
	snprintf(msg, sizeof(msg), "%.100s: another seed than %.100s: not the same run",
		 b, a);
	merge_refused(out, paths, 2, -EINVAL, msg);
	paths[1] = c;
	snprintf(msg, sizeof(msg), "%.100s: another backend than", c);
	merge_refused(out, paths, 2, -EINVAL, msg);
	paths[1] = d;
	snprintf(msg, sizeof(msg), "%.100s: another scenario than", d);
	merge_refused(out, paths, 2, -EINVAL, msg);
	paths[1] = tr;
	snprintf(msg, sizeof(msg),
		 "%.100s: not a recording (no \"recording\" in its header)", tr);
	merge_refused(out, paths, 2, -EINVAL, msg);
	paths[1] = "/nonexistent/r.jsonl";
	merge_refused(out, paths, 2, -ENOENT,
		      "/nonexistent/r.jsonl: No such file or directory");
	merge_refused("/nonexistent/dir/m.jsonl", paths, 1, -ENOENT,
		      "/nonexistent/dir/m.jsonl: No such file or directory");
	/* One recording merges into itself, and that replays. */
	ck_assert_int_eq(tv_tb_record_merge(out, paths, 1, err, sizeof(err)), 0);
	ck_assert_int_eq(access(out, R_OK), 0);
	rm_tmpdir();
}
END_TEST

START_TEST(test_replay_sim_refused)
{
	char a[128], path[128], *text, *hdr, *edited;
	struct tv_tb_replay_sim_report rep;
	json_t *h;
	int n;

	mk_tmpdir();
	record_text(basic, "a.jsonl", 1, "sim", a, sizeof(a));
	ck_assert_int_eq(tv_tb_replay_sim(a, &rep), 0);
	ck_assert_msg(!rep.diverged, "diverged at %" PRIu64 ": %s / %s",
		      rep.div_index, rep.expected ? rep.expected : "-",
		      rep.actual ? rep.actual : "-");
	ck_assert(rep.same_outcome);
	ck_assert_str_eq(rep.backend, "sim");
	ck_assert_uint_gt(rep.events, 0);
	tv_tb_replay_sim_report_free(&rep);

	replay_sim_refused("/nonexistent/r.jsonl", -ENOENT,
			   "/nonexistent/r.jsonl: No such file or directory");
	trace_text(basic, "t.jsonl", 1, NULL, path, sizeof(path));
	replay_sim_refused(path, -EINVAL, "not a recording (its header has no \"recording\" with a \"backend\")");
	tmp_path(path, sizeof(path), "empty.jsonl");
	write_file(path, "");
	replay_sim_refused(path, -ENODATA, "empty.jsonl: empty file");

	text = read_all(a);
	n = count_lines(text);
	/* Truncated: no summary. */
	edited = edit_lines(text, n - 1, NULL, NULL);
	tmp_path(path, sizeof(path), "trunc.jsonl");
	write_file(path, edited);
	replay_sim_refused(path, -EINVAL, "no summary line (a truncated recording?)");
	free(edited);
	/* A line that is not JSON. */
	edited = edit_lines(text, 2, "{oops", NULL);
	tmp_path(path, sizeof(path), "notjson.jsonl");
	write_file(path, edited);
	replay_sim_refused(path, -EINVAL, "notjson.jsonl:3:");
	free(edited);
	/* A POLL without its CQ. */
	{
		char *p = strstr(text, "\"kind\":\"POLL\"");
		json_t *l;
		int k = 0;

		ck_assert_ptr_nonnull(p);
		for (const char *q = text; q < p; q++)
			k += *q == '\n';
		hdr = line_of(text, k);
		l = json_loads(hdr, 0, NULL);
		ck_assert_ptr_nonnull(l);
		json_object_del(l, "cq");
		free(hdr);
		hdr = json_dumps(l, JSON_COMPACT | JSON_PRESERVE_ORDER);
		edited = edit_lines(text, k, hdr, NULL);
		tmp_path(path, sizeof(path), "nocq.jsonl");
		write_file(path, edited);
		replay_sim_refused(path, -EINVAL, "a POLL without a \"cq\" number");
		free(edited);
		free(hdr);
		json_decref(l);
	}
	/* The header's scenario, then its plan, invalid. */
	hdr = line_of(text, 0);
	h = json_loads(hdr, 0, NULL);
	free(hdr);
	json_object_set_new(json_object_get(h, "scenario"), "nodes",
			    json_integer(1));
	hdr = json_dumps(h, JSON_COMPACT);
	edited = edit_lines(text, 0, hdr, NULL);
	tmp_path(path, sizeof(path), "sc.jsonl");
	write_file(path, edited);
	replay_sim_refused(path, -EINVAL, "sc.jsonl: its scenario is invalid: $.nodes: needs at least 2 nodes");
	free(edited);
	free(hdr);
	json_object_set_new(json_object_get(h, "scenario"), "nodes",
			    json_integer(2));
	json_object_set_new(h, "plan", json_pack("[{s:s}]", "point", "vf/zz"));
	hdr = json_dumps(h, JSON_COMPACT);
	edited = edit_lines(text, 0, hdr, NULL);
	tmp_path(path, sizeof(path), "plan.jsonl");
	write_file(path, edited);
	replay_sim_refused(path, -EINVAL, "plan.jsonl: its fault plan is invalid:");
	free(edited);
	free(hdr);
	json_decref(h);
	free(text);
	rm_tmpdir();
}
END_TEST

/* replay --sim further: a failing run, a hardware backend, STEP lines. */
START_TEST(test_replay_sim_more)
{
	char a[128], path[128], *text, *edited;
	struct tv_tb_replay_sim_report rep;
	int n;

	mk_tmpdir();
	/* A failing run replays failing the same way. */
	record_text(wrong_shape, "ws.jsonl", 5, "sim", a, sizeof(a));
	ck_assert_int_eq(tv_tb_replay_sim(a, &rep), 0);
	ck_assert(!rep.diverged);
	ck_assert(rep.same_outcome);
	ck_assert(rep.same_failure_kind);
	ck_assert_str_eq(rep.rec_result, "FAIL");
	ck_assert_str_eq(rep.sim_result, "FAIL");
	ck_assert_msg(strstr(rep.sim_failures[0], "shape") != NULL, "%s",
		      rep.sim_failures[0]);
	tv_tb_replay_sim_report_free(&rep);

	/* Recorded "on hardware": the plan is rebuilt from the firings. */
	record_text("{\"nodes\": 2, \"faults\": [{\"point\": \"vf/ack/drop\", \"count\": 1}], " RV_SENDS "}",
		    "hw.jsonl", 1, "ibverbs", a, sizeof(a));
	ck_assert_int_eq(tv_tb_replay_sim(a, &rep), 0);
	ck_assert_str_eq(rep.backend, "ibverbs");
	ck_assert_uint_eq(rep.fires, 1);
	ck_assert_uint_le(rep.fires_same, rep.fires);
	tv_tb_replay_sim_report_free(&rep);

	/* Where each node started its operations (serve --record's STEP). */
	record_text(basic, "a.jsonl", 1, "sim", a, sizeof(a));
	text = read_all(a);
	{
		char *l4 = line_of(text, 4);
		char *ins = malloc(strlen(l4) + 256);

		sprintf(ins, "{\"i\":0,\"t\":0,\"src\":\"workload\",\"kind\":\"STEP\",\"node\":0,\"at_ns\":0}\n"
			"{\"i\":0,\"t\":0,\"src\":\"workload\",\"kind\":\"STEP\",\"node\":1,\"at_ns\":0}\n%s",
			l4);
		edited = edit_lines(text, 4, ins, NULL);
		free(ins);
		free(l4);
	}
	tmp_path(path, sizeof(path), "steps.jsonl");
	write_file(path, edited);
	free(edited);
	ck_assert_int_eq(tv_tb_replay_sim(path, &rep), 0);
	ck_assert_uint_eq(rep.ops_places, 2);
	ck_assert_uint_ge(rep.events, 3);
	tv_tb_replay_sim_report_free(&rep);

	/* Lines a recording cannot hold. */
	n = count_lines(text);
	edited = edit_lines(text, 2, "{\"i\": 1, \"src\": \"sim\"}", NULL);
	tmp_path(path, sizeof(path), "noev.jsonl");
	write_file(path, edited);
	replay_sim_refused(path, -EINVAL, "noev.jsonl:3: not an event of a recording");
	free(edited);
	edited = edit_lines(text, -1, NULL, "{\"i\":0,\"t\":0,\"src\":\"sim\",\"kind\":\"POLL\",\"node\":0}\n");
	tmp_path(path, sizeof(path), "after.jsonl");
	write_file(path, edited);
	{
		char want[64];

		snprintf(want, sizeof(want), "after.jsonl:%d: a line after the summary",
			 n + 1);
		replay_sim_refused(path, -EINVAL, want);
	}
	free(edited);
	free(text);
	rm_tmpdir();
}
END_TEST

/* Strings that are not UTF-8 become \xNN text; NULL is null. */
START_TEST(test_json_helpers)
{
	json_t *v = tv_tb_json_str("ok\xff\xfe!");

	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(json_string_value(v), "ok\\xff\\xfe!");
	json_decref(v);
	v = tv_tb_json_str("pl\xc3\xa9in");
	ck_assert_str_eq(json_string_value(v), "pl\xc3\xa9in");
	json_decref(v);
	ck_assert(json_is_null(tv_tb_json_str(NULL)));
	v = tv_tb_json_u64(UINT64_MAX);
	ck_assert_str_eq(json_string_value(v), "0xffffffffffffffff");
	json_decref(v);
	v = tv_tb_json_u64(7);
	ck_assert_int_eq(json_integer_value(v), 7);
	json_decref(v);
	ck_assert(json_is_null(tv_tb_json_node(UINT32_MAX)));
	v = tv_tb_json_node(3);
	ck_assert_int_eq(json_integer_value(v), 3);
	json_decref(v);
}
END_TEST

/*
 * A sim recording's text as node's recording on its own (what each rank
 * of serve --record makes under mpirun), in a malloc'd buffer.
 */
static char *as_node_recording(const char *path, int node, uint64_t *len_p)
{
	char *text = read_all(path), *nl = strchr(text, '\n'), *hdr_text, *out;
	json_t *hdr;
	size_t len;

	ck_assert_ptr_nonnull(nl);
	*nl = 0;
	hdr = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(hdr);
	json_object_set_new(json_object_get(hdr, "recording"), "node",
			    json_integer(node));
	json_object_set_new(json_object_get(hdr, "recording"),
			    "t0_monotonic_ns", json_integer(1000 * node));
	hdr_text = json_dumps(hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
	len = strlen(hdr_text) + 1 + strlen(nl + 1);
	out = malloc(len + 1);
	snprintf(out, len + 1, "%s\n%s", hdr_text, nl + 1);
	free(hdr_text);
	json_decref(hdr);
	free(text);
	*len_p = len;
	return out;
}

/* Rank 0's merge of the ranks' recordings, from memory (serve --record). */
START_TEST(test_record_merge_mem)
{
	char a[128], out[128], err[1024], *bufs[2], *text, *junk;
	uint64_t lens[2], junk_len;

	mk_tmpdir();
	record_text(basic, "a.jsonl", 1, "ibverbs", a, sizeof(a));
	bufs[0] = as_node_recording(a, 0, &lens[0]);
	bufs[1] = as_node_recording(a, 1, &lens[1]);
	tmp_path(out, sizeof(out), "merged.jsonl");
	ck_assert_int_eq(tb_record_merge_mem(out, bufs, lens, 2, err,
					     sizeof(err)), 0);
	text = read_all(out);
	ck_assert_msg(strstr(text, "\"merged\":2") != NULL, "%.400s", text);
	ck_assert_msg(strstr(text, "\"nodes\":[0,1]") != NULL, "%.400s", text);
	free(text);
	/* Each refusal names the rank whose bytes are wrong. */
	ck_assert_int_eq(tb_record_merge_mem(out, bufs, (uint64_t[]){ lens[0], 0 },
					     2, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "rank 1's recording: empty");
	junk = strdup("{\"not\": \"a header\"}\n");
	junk_len = strlen(junk);
	ck_assert_int_eq(tb_record_merge_mem(out, (char *[]){ bufs[0], junk },
					     (uint64_t[]){ lens[0], junk_len }, 2,
					     err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "rank 1's recording") != NULL, "%s", err);
	/* Cut inside the events: no summary. */
	ck_assert_int_eq(tb_record_merge_mem(out, bufs,
					     (uint64_t[]){ lens[0], lens[1] / 2 },
					     2, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "rank 1's recording") != NULL, "%s", err);
	/* The same node twice. */
	ck_assert_int_eq(tb_record_merge_mem(out, (char *[]){ bufs[0], bufs[0] },
					     (uint64_t[]){ lens[0], lens[0] }, 2,
					     err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "rank 1's recording: node 0 again") != NULL,
		      "%s", err);
	free(junk);
	free(bufs[0]);
	free(bufs[1]);
	rm_tmpdir();
}
END_TEST

/* A tap outside a run (the benchmarks'): attach, steps, write. */
START_TEST(test_tap_outside_run)
{
	struct tv_tb_tap *t;
	char path[128], *text;
	size_t events = 99;
	uint32_t kind = 77;

	mk_tmpdir();
	ck_assert_int_eq(tv_tb_tap_create(2, &t), 0);
	ck_assert_int_eq(tv_tb_tap_attach(t, 2, NULL), -EINVAL);
	ck_assert_int_eq(tv_tb_tap_write(t, "/nonexistent/dir/x", &events),
			 -ENOENT);
	ck_assert_uint_eq(events, 99);
	tb_tap_step(t, 1, 5000, t->t0_ns + 10);
	tb_tap_fire(t, 0, "no/such/point", 1, t->t0_ns + 20);
	tb_tap_fire(t, 0, "vf/ack/drop", 3, t->t0_ns + 30);
	tmp_path(path, sizeof(path), "tap.jsonl");
	ck_assert_int_eq(tv_tb_tap_write(t, path, &events), 0);
	ck_assert_uint_eq(events, 2);
	text = read_all(path);
	ck_assert_msg(strncmp(text, "{\"tensorverbs_bench_recording\":1}\n",
			      34) == 0, "%s", text);
	ck_assert_msg(strstr(text, "\"STEP\"") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "\"at_ns\":5000") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "vf/ack/drop") != NULL, "%s", text);
	free(text);
	tv_tb_tap_free(t);

	ck_assert_int_eq(tb_tap_kind_parse("POLL", &kind), 0);
	ck_assert_str_eq(tb_tap_kind_name(kind), "POLL");
	ck_assert_int_eq(tb_tap_kind_parse("REG_MR", &kind), 0);
	ck_assert_str_eq(tb_tap_kind_name(kind), "REG_MR");
	ck_assert_int_eq(tb_tap_kind_parse("POKE", &kind), -EINVAL);
	ck_assert_ptr_null(tb_tap_kind_name(1000));
	rm_tmpdir();
}
END_TEST

/* One case a test: CK_RUN_CASE=test_... runs one. */
#define ADD(t) do { tc = tcase_create(#t); tcase_set_timeout(tc, 60); \
		    tcase_add_test(tc, t); suite_add_tcase(s, tc); } while (0)

static Suite *suite(void)
{
	Suite *s = suite_create("testbed_edges");

	TCase *tc;

	ADD(test_scenario_core_refused);
	ADD(test_scenario_rendezvous_refused);
	ADD(test_scenario_gather_refused);
	ADD(test_scenario_port_refused);
	ADD(test_scenario_load_errors);
	ADD(test_scenario_accessors);
	ADD(test_plan_text_forms);
	ADD(test_plan_merge);
	ADD(test_plan_injector);
	ADD(test_fail_kinds);
	ADD(test_failures_print);
	ADD(test_util);
	ADD(test_results_unwritable);
	ADD(test_trace_malformed);
	ADD(test_show_errors_and_ranges);
	ADD(test_shrink_refusals);
	ADD(test_run_json);
	ADD(test_run_op_gate);
	ADD(test_run_max_events);
	ADD(test_run_crash_summary);
	ADD(test_port_too_many_ops);
	ADD(test_gather_crash);
	ADD(test_rendezvous_long_texts);
	ADD(test_run_expectations_broken);
	ADD(test_run_verbose);
	ADD(test_show_port);
	ADD(test_show_gather);
	ADD(test_show_rendezvous_faults);
	ADD(test_shrink_kinds_and_outputs);
	ADD(test_shrink_busy);
	ADD(test_show_escapes_and_notes);
	ADD(test_swarm_rendezvous_in_process);
	ADD(test_swarm_port_in_process);
	ADD(test_swarm_gather_in_process);
	tc = tcase_create("test_breakages_found_in_process");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_breakages_found_in_process, 0,
			    (int)TB_ARRAY_SIZE(breakages));
	suite_add_tcase(s, tc);
	ADD(test_trace_odd_headers);
	ADD(test_plan_text_values);
	ADD(test_run_crash_verbose);
	ADD(test_shrink_plan_rules);
	ADD(test_rendezvous_allowed_failures);
	ADD(test_record_merge_refused);
	ADD(test_record_merge_mem);
	ADD(test_replay_sim_refused);
	ADD(test_replay_sim_more);
	ADD(test_json_helpers);
	ADD(test_tap_outside_run);
	ADD(test_swarm_points);
	ADD(test_swarm_refused);
	ADD(test_swarm_progress_and_failures);
	return s;
}

int main(void)
{
	return tv_check_main(suite());
}
