/*
 * Set-up data from a peer that lies, decoded without a device (issue 24).
 * On real verbs every node sends its peers a blob over serve's coordinator
 * (memory handles, QP endpoints, token offsets); those bytes are the
 * peer's and a node must refuse each lie with -EPROTO naming the node and
 * the field, before it touches a QP or memory.  The port workload's blob
 * (ph_blob_read, ph_peer_link), the gather workload's on two simulated
 * devices (gw_blob_make / gw_blob_apply), the shared endpoint codec, and
 * serve's own refusals that come before any device: a peer address that
 * is not one, a workload with no hardware runner.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include <tensorverbs/cm.h>
#include <tensorverbs/gather.h>
#include <tensorverbs/sim.h>
#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "common/tb_files.h"
#include "common/toy_wl.h"
#include "le.h"
#include "gw.h"
#include "pt_hw.h"

/* ---- the port workload's blob ------------------------------------------ */

#define TOK_BYTES 4096u

/* Node n's blob with one link (pair 3, QPN 0x1234, token offset 64). */
static size_t port_blob(uint32_t n, uint8_t *b)
{
	struct tv_port_mem_handle data = {
		.addr = 0x10000, .size_bytes = 8192, .rkey = 7, .node = n,
	};
	struct tv_port_mem_handle tok = {
		.addr = 0x40000, .size_bytes = TOK_BYTES, .rkey = 9, .node = n,
	};
	uint8_t *l = b + PH_HEAD_BYTES;

	memset(b, 0, PH_HEAD_BYTES + PH_LINK_BYTES);
	tv_le_put(b, PH_MAGIC, 4);
	tv_le_put(b + 4, PH_VERSION, 4);
	tv_le_put(b + 8, n, 4);
	tv_le_put(b + 12, 1, 4);
	ck_assert_int_eq(tv_port_mem_handle_encode(&data, b + 16,
						   TV_PORT_HANDLE_BYTES), 0);
	ck_assert_int_eq(tv_port_mem_handle_encode(&tok,
						   b + 16 + TV_PORT_HANDLE_BYTES,
						   TV_PORT_HANDLE_BYTES), 0);
	tv_le_put(l, 3, 4);
	tv_le_put(l + 4, 0x1234, 4);
	tv_le_put(l + 8, 0x55, 4);
	tv_le_put(l + 12, 1, 2);
	memset(l + 16, 0xfe, 16);
	tv_le_put(l + 32, 64, 8);
	return PH_HEAD_BYTES + PH_LINK_BYTES;
}

/* ph_blob_read must refuse b (len bytes, said to be node n's). */
static void port_refused(const uint8_t *b, size_t len, uint32_t n,
			 uint32_t nodes, const char *want)
{
	struct ph_peer_info pi;
	char msg[256] = "";

	ck_assert_int_eq(ph_blob_read(b, len, n, nodes, &pi, msg, sizeof(msg)),
			 -EPROTO);
	ck_assert_str_eq(msg, want);
}

START_TEST(test_port_blob_header_lies)
{
	uint8_t b[PH_HEAD_BYTES + 2 * PH_LINK_BYTES];
	size_t len = port_blob(1, b);
	struct ph_peer_info pi;
	char msg[256] = "", want[256];

	ck_assert_int_eq(ph_blob_read(b, len, 1, 2, &pi, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(pi.nlinks, 1);
	ck_assert_uint_eq(pi.data.size_bytes, 8192);
	ck_assert_uint_eq(pi.tok.rkey, 9);
	ck_assert_str_eq(msg, "");

	/* Too short, another magic, another version, another node's. */
	port_refused(b, PH_HEAD_BYTES - 1, 1, 2, "node 1's set-up data is not "
		     "ours (79 bytes, wrong magic, version or node)");
	snprintf(want, sizeof(want), "node 1's set-up data is not ours (%zu "
		 "bytes, wrong magic, version or node)", len);
	b[0] ^= 1;
	port_refused(b, len, 1, 2, want);
	b[0] ^= 1;
	tv_le_put(b + 4, PH_VERSION + 1, 4);
	port_refused(b, len, 1, 2, want);
	tv_le_put(b + 4, PH_VERSION, 4);
	port_refused(b, len, 0, 2, "node 0's set-up data is not ours (120 "
		     "bytes, wrong magic, version or node)");

	/* A link count the bytes do not hold, and one byte too many. */
	tv_le_put(b + 12, 1000, 4);
	port_refused(b, len, 1, 2, "node 1's set-up data is malformed (1000 "
		     "links in 120 bytes, or bad memory handles)");
	tv_le_put(b + 12, 1, 4);
	port_refused(b, len + 1, 1, 2, "node 1's set-up data is malformed (1 "
		     "links in 121 bytes, or bad memory handles)");
	/* A node the scenario does not have (it says it is node 1 of 1). */
	port_refused(b, len, 1, 1, "node 1's set-up data is malformed (1 links "
		     "in 120 bytes, or bad memory handles)");
}
END_TEST

START_TEST(test_port_blob_handle_lies)
{
	static const char want[] = "node 1's set-up data is malformed (1 links "
				   "in 120 bytes, or bad memory handles)";
	uint8_t b[PH_HEAD_BYTES + PH_LINK_BYTES];
	size_t len = port_blob(1, b);
	uint8_t *tok = b + 16 + TV_PORT_HANDLE_BYTES;

	/* The data handle: not a handle; another node's memory. */
	b[16] ^= 0x80;
	port_refused(b, len, 1, 2, want);
	b[16] ^= 0x80;
	tv_le_put(b + 16 + 8, 0, 4);
	port_refused(b, len, 1, 2, want);
	tv_le_put(b + 16 + 8, 1, 4);
	/* The token handle: zero bytes long; another node's. */
	tv_le_put(tok + 24, 0, 8);
	port_refused(b, len, 1, 2, want);
	tv_le_put(tok + 24, TOK_BYTES, 8);
	tv_le_put(tok + 8, 5, 4);
	port_refused(b, len, 1, 2, want);
}
END_TEST

/* ph_peer_link of a blob with its only link's field at off set to v. */
static int port_link_with(unsigned off, unsigned width, uint64_t v,
			  uint64_t tok_bytes)
{
	uint8_t b[PH_HEAD_BYTES + PH_LINK_BYTES];
	size_t len = port_blob(1, b);
	struct tv_port_mem_handle tok = {
		.addr = 0x40000, .size_bytes = tok_bytes, .rkey = 9, .node = 1,
	};
	struct tv_vf_qp_endpoint ep;
	struct ph_peer_info pi;
	uint64_t tok_off = 0;
	char msg[256];

	tv_le_put(b + PH_HEAD_BYTES + off, v, width);
	ck_assert_int_eq(tv_port_mem_handle_encode(&tok,
						   b + 16 + TV_PORT_HANDLE_BYTES,
						   TV_PORT_HANDLE_BYTES), 0);
	ck_assert_int_eq(ph_blob_read(b, len, 1, 2, &pi, msg, sizeof(msg)), 0);
	return ph_peer_link(&pi, 3, &ep, &tok_off);
}

START_TEST(test_port_blob_link_lies)
{
	uint8_t b[PH_HEAD_BYTES + PH_LINK_BYTES];
	size_t len = port_blob(1, b);
	struct tv_vf_qp_endpoint ep;
	struct ph_peer_info pi;
	uint64_t tok_off = 0;
	char msg[256];

	ck_assert_int_eq(ph_blob_read(b, len, 1, 2, &pi, msg, sizeof(msg)), 0);
	ck_assert_int_eq(ph_peer_link(&pi, 3, &ep, &tok_off), 0);
	ck_assert_uint_eq(ep.qp_num, 0x1234);
	ck_assert_uint_eq(ep.psn, 0x55);
	ck_assert_uint_eq(ep.lid, 1);
	ck_assert_uint_eq(ep.gid[15], 0xfe);
	ck_assert_uint_eq(tok_off, 64);
	/* A pair the peer has no link for. */
	ck_assert_int_eq(ph_peer_link(&pi, 4, &ep, &tok_off), -ENOENT);

	ck_assert_int_eq(port_link_with(4, 4, 0x1000000, TOK_BYTES), -EPROTO);
	ck_assert_int_eq(port_link_with(8, 4, 0x1000000, TOK_BYTES), -EPROTO);
	/* Token offsets: past the window, the last word, not a word's. */
	ck_assert_int_eq(port_link_with(32, 8, TOK_BYTES, TOK_BYTES), -EPROTO);
	ck_assert_int_eq(port_link_with(32, 8, TOK_BYTES - 8, TOK_BYTES), 0);
	ck_assert_int_eq(port_link_with(32, 8, 12, TOK_BYTES), -EPROTO);
	/*
	 * A token window of 4 bytes holds no 8-byte word: offset 0 must be
	 * refused (size - 8 wrapped to 2^64 - 4 and let any offset through).
	 */
	ck_assert_int_eq(port_link_with(32, 8, 0, 4), -EPROTO);
	ck_assert_int_eq(port_link_with(32, 8, 0, 8), 0);
}
END_TEST

/* ---- the endpoint codec all workloads share --------------------------- */

START_TEST(test_ep_codec_lies)
{
	struct tv_vf_qp_endpoint ep = {.qp_num = 0xabcdef, .psn = 0x123456,
				       .lid = 9}, got;
	uint8_t b[TV_TB_EP_BYTES];

	ep.gid[0] = 0xfe;
	tv_tb_ep_put(b, &ep);
	ck_assert_int_eq(tv_tb_ep_get(b, &got), 0);
	ck_assert_uint_eq(got.qp_num, 0xabcdef);
	ck_assert_uint_eq(got.psn, 0x123456);
	ck_assert_uint_eq(got.lid, 9);
	ck_assert_uint_eq(got.gid[0], 0xfe);
	memset(&got, 0x5a, sizeof(got));
	b[10] = 1; /* the padding */
	ck_assert_int_eq(tv_tb_ep_get(b, &got), -EPROTO);
	ck_assert_uint_eq(got.qp_num, 0x5a5a5a5a); /* untouched on failure */
	b[10] = 0;
	b[3] = 1; /* a 25-bit QPN */
	ck_assert_int_eq(tv_tb_ep_get(b, &got), -EPROTO);
	b[3] = 0;
	b[7] = 1; /* a 25-bit PSN */
	ck_assert_int_eq(tv_tb_ep_get(b, &got), -EPROTO);
}
END_TEST

/* ---- the gather workload's blob, on two simulated devices ------------- */

#define G_QPS 2u

struct gpair {
	struct tv_sim *sim;
	struct tv_gather_ctx *ctx[2];
	void *part[2];
};

static void gpair_open(struct gpair *g)
{
	struct tv_sim_config sc;
	struct tv_gather_config cfg;
	char why[200] = "";

	memset(g, 0, sizeof(*g));
	tv_sim_config_default(&sc);
	sc.num_nodes = 2;
	ck_assert_int_eq(tv_sim_create(&sc, &g->sim), 0);
	tv_gather_config_default(&cfg);
	cfg.nodes = 2;
	cfg.rows = 64;
	cfg.row_bytes = 16;
	cfg.qps_per_peer = G_QPS;
	cfg.post_list = 4;
	for (uint32_t i = 0; i < 2; i++) {
		cfg.node_id = i;
		g->part[i] = calloc(1, tv_gather_part_bytes(&cfg, i));
		ck_assert_ptr_nonnull(g->part[i]);
		ck_assert_msg(!tv_gather_ctx_create(tv_sim_device(g->sim, i),
						    &cfg, g->part[i], why,
						    sizeof(why), &g->ctx[i]),
			      "%s", why);
	}
}

static void gpair_close(struct gpair *g)
{
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(tv_gather_ctx_destroy(g->ctx[i]), 0);
		free(g->part[i]);
	}
	tv_sim_destroy(g->sim);
}

/* Node 0 applies node 1's blob b: its return, its message in msg. */
static int g_apply(struct gpair *g, const uint8_t *b, size_t len, char *msg)
{
	msg[0] = '\0';
	return gw_blob_apply(g->ctx[0], 0, 2, G_QPS, 1, b, len, msg, 256);
}

START_TEST(test_gather_blob_lies)
{
	size_t len = 0, ep0 = 16 + TV_GATHER_HANDLE_BYTES;
	struct gpair g;
	uint8_t *b = NULL;
	char msg[256], want[256];

	gpair_open(&g);
	ck_assert_int_eq(gw_blob_make(g.ctx[1], 1, 2, G_QPS, &b, &len), 0);
	ck_assert_uint_eq(len, ep0 + 2 * G_QPS * 2 * TV_TB_EP_BYTES);
	snprintf(want, sizeof(want), "node 1's set-up data is not ours (%zu "
		 "bytes, wrong magic, version, node or QP count)", len);

	/* The header: its length, magic, version, node, QP count. */
	ck_assert_int_eq(g_apply(&g, b, len - 1, msg), -EPROTO);
	ck_assert_str_eq(msg, "node 1's set-up data is not ours (295 bytes, "
			 "wrong magic, version, node or QP count)");
	for (unsigned off = 0; off < 16; off += 4) {
		b[off] ^= 2;
		ck_assert_int_eq(g_apply(&g, b, len, msg), -EPROTO);
		ck_assert_str_eq(msg, want);
		b[off] ^= 2;
	}
	/* The partition handle: not one; a range that is not node 1's. */
	b[16] ^= 0x40;
	ck_assert_int_eq(g_apply(&g, b, len, msg), -EPROTO);
	ck_assert_str_eq(msg, "node 1's partition handle: malformed");
	b[16] ^= 0x40;
	tv_le_put(b + 16 + 8, 0, 4);
	ck_assert_int_eq(g_apply(&g, b, len, msg), -EPROTO);
	ck_assert_msg(!strncmp(msg, "node 1's partition handle: ", 27) &&
		      strlen(msg) > 27 && strcmp(msg + 27, "malformed"),
		      "%s", msg);
	tv_le_put(b + 16 + 8, 1, 4);
	/* Our client QP 1's peer endpoint: padding that is not zero. */
	b[ep0 + (0 * G_QPS + 1) * 2 * TV_TB_EP_BYTES + TV_GATHER_SERVER *
	  TV_TB_EP_BYTES + 10] = 1;
	ck_assert_int_eq(g_apply(&g, b, len, msg), -EPROTO);
	ck_assert_str_eq(msg, "node 1's endpoint 1 is malformed");
	free(b);
	gpair_close(&g);
}
END_TEST

START_TEST(test_gather_blob_applied)
{
	struct gpair g;
	uint8_t *b = NULL;
	size_t len = 0;
	char msg[256];

	gpair_open(&g);
	ck_assert_int_eq(gw_blob_make(g.ctx[1], 1, 2, G_QPS, &b, &len), 0);
	ck_assert_int_eq(g_apply(&g, b, len, msg), 0);
	ck_assert_str_eq(msg, "");
	for (uint32_t k = 0; k < G_QPS; k++)
		ck_assert_uint_gt(tv_gather_qp_rd_atomic(g.ctx[0], 1, k), 0);
	/*
	 * The same blob again: node 0's QPs are connected already, so the
	 * engine refuses and the message is the engine's own.
	 */
	ck_assert_int_lt(g_apply(&g, b, len, msg), 0);
	ck_assert_str_ne(msg, "");
	free(b);
	gpair_close(&g);
}
END_TEST

/* ---- serve's refusals before any device ------------------------------- */

START_TEST(test_parse_peer_refusals)
{
	struct sockaddr_storage a;
	uint32_t n = 99;

	ck_assert_int_eq(tv_tb_parse_peer(NULL, &n, &a), -EINVAL);
	ck_assert_int_eq(tv_tb_parse_peer("x=1.2.3.4:5", &n, &a), -EINVAL);
	ck_assert_int_eq(tv_tb_parse_peer("1:1.2.3.4:5", &n, &a), -EINVAL);
	ck_assert_int_eq(tv_tb_parse_peer("4096=1.2.3.4:5", &n, &a), -EINVAL);
	ck_assert_int_eq(tv_tb_parse_peer("1=no address", &n, &a), -EINVAL);
	ck_assert_uint_eq(n, 99); /* untouched on failure */
	ck_assert_int_eq(tv_tb_parse_peer("1=10.0.0.2:7000", &n, &a), 0);
	ck_assert_uint_eq(n, 1);
}
END_TEST

static const struct tv_tb_workload_ops toy = {
	.name = "toy-hw", .about = "ticks", .unit = "ticks",
	.last_op = "tick", .keys = toy_keys, .parse = toy_parse,
	.scenario_free = free, .setup = toy_setup, .progress = toy_progress,
	.state_free = toy_free, .event_src = "toy",
};

/* A workload without a hardware runner: serve skips it, saying so. */
START_TEST(test_serve_skips_sim_only_workload)
{
	char path[128], out[128];
	struct tv_tb_serve_opts o;
	char *text;
	int saved;

	mk_tmpdir();
	if (!tv_tb_workload_find("toy-hw"))
		ck_assert_int_eq(tv_tb_workload_register(&toy), 0);
	tmp_path(path, sizeof(path), "toy.json");
	tmp_path(out, sizeof(out), "out.txt");
	write_file(path, "{\"workload\": \"toy-hw\", \"name\": \"t\", "
		   "\"nodes\": 2, \"ticks\": 1}");
	memset(&o, 0, sizeof(o));
	o.scenario_path = path;
	o.faults_node = -1;
	saved = stdout_to(out);
	ck_assert_int_eq(tv_tb_serve(&o), TV_TB_SERVE_SKIP);
	stdout_back(saved);
	text = read_all(out);
	ck_assert_str_eq(text, "SKIP: t: workload toy-hw runs on the "
			 "simulator only\n");
	free(text);
	rm_tmpdir();
}
END_TEST


/*
 * serve's refusals before a device, from the scenario and the options: a
 * skip (exit 77) says what only the simulator models, a usage error
 * (exit 2) names the option, and with every address known the device
 * opening fails naming the device (the host CI has none).
 */
static const char serve_base[] =
	"{\"name\": \"t\", \"seed\": 1, \"nodes\": 2, \"steps\": "
	"[{\"step_id\": 1, \"sends\": [{\"from\": 0, \"to\": 1, "
	"\"name\": \"w\", \"dtype\": \"float\", \"shape\": [4]}], "
	"\"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"w\", "
	"\"expect\": \"ok\"}]}]%s}";

struct serve_case {
	const char *extra;   /* members added to serve_base, or a whole file */
	const char *faults;  /* --faults */
	uint32_t node;
	int addrs;           /* nodes 0..addrs-1 have an address */
	int rc;
	const char *out;     /* in standard output, or NULL */
	const char *err;     /* in standard error, or NULL */
};

static const struct serve_case serve_cases[] = {
	{ ", \"link\": {\"bandwidth_bytes_per_sec\": 1e9}", NULL, 0, 2,
	  TV_TB_SERVE_SKIP, "SKIP: t: it models link latency/bandwidth", NULL },
	{ ", \"link\": {\"latency_ns\": 5000}", NULL, 0, 2,
	  TV_TB_SERVE_SKIP, "SKIP: t: it models link latency/bandwidth", NULL },
	{ ", \"faults\": [{\"point\": \"sim/cq/overflow\", \"nth\": 1}]",
	  NULL, 0, 2, TV_TB_SERVE_SKIP,
	  "SKIP: t: fault point 'sim/cq/overflow' exists only in the simulator",
	  NULL },
	{ "", "sim/deliver/delay:nth=2", 0, 2, TV_TB_SERVE_SKIP,
	  "SKIP: t: fault point 'sim/deliver/delay' exists only in the "
	  "simulator", NULL },
	{ "", "no/such/point", 0, 2, TV_TB_SERVE_USAGE, NULL,
	  "tensorverbs serve: bad --faults: " },
	{ "", NULL, 2, 2, TV_TB_SERVE_USAGE, NULL,
	  "--node 2, but the scenario has 2 nodes" },
	{ "", NULL, 0, 0, TV_TB_SERVE_USAGE, NULL,
	  "no address for node 0 (--addr ADDR:PORT)" },
	{ "", NULL, 0, 1, TV_TB_SERVE_USAGE, NULL,
	  "no address for node 1 (--peer J=ADDR:PORT or --cluster)" },
	{ "!{\"nodes\": 2}", NULL, 0, 2, TV_TB_SERVE_USAGE, NULL,
	  "tensorverbs serve: invalid scenario " },
	{ "", NULL, 1, 2, TV_TB_SERVE_USAGE, NULL,
	  "tensorverbs serve: node 1: no RDMA device" },
};

START_TEST(test_serve_refusals)
{
	const struct serve_case *c = &serve_cases[_i];
	char path[128], out[128], err[128], text[1024];
	struct tv_tb_serve_opts o;
	char *got_out, *got_err;
	int so, se, rc;

	if (c->rc == TV_TB_SERVE_USAGE && strstr(c->err, "no RDMA device") &&
	    have_rdma_device()) {
		fprintf(stderr, "case %d skipped: this machine has an RDMA "
			"device\n", _i);
		return;
	}
	mk_tmpdir();
	tmp_path(path, sizeof(path), "t.json");
	tmp_path(out, sizeof(out), "out.txt");
	tmp_path(err, sizeof(err), "err.txt");
	if (c->extra[0] == '!')
		snprintf(text, sizeof(text), "%s", c->extra + 1);
	else
		snprintf(text, sizeof(text), serve_base, c->extra);
	write_file(path, text);
	memset(&o, 0, sizeof(o));
	o.scenario_path = path;
	o.node = c->node;
	o.faults = c->faults;
	o.faults_node = -1;
	o.timeout_s = 2;
	for (int j = 0; j < c->addrs; j++) {
		char a[32];

		snprintf(a, sizeof(a), "127.0.0.1:%d", 7790 + j);
		ck_assert_int_eq(tv_cm_parse_addr(a, &o.addrs[j]), 0);
		o.have_addr[j] = true;
	}
	so = stdout_to(out);
	se = stderr_to(err);
	rc = tv_tb_serve(&o);
	stderr_back(se);
	stdout_back(so);
	got_out = read_all(out);
	got_err = read_all(err);
	ck_assert_msg(rc == c->rc && (!c->out || strstr(got_out, c->out)) &&
		      (!c->err || strstr(got_err, c->err)),
		      "case %d: exit %d (expected %d)\nstdout: %s\nstderr: %s",
		      _i, rc, c->rc, got_out, got_err);
	free(got_out);
	free(got_err);
	rm_tmpdir();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("wl_hw_setup");
	TCase *tc = tcase_create("lies");

	tcase_add_test(tc, test_port_blob_header_lies);
	tcase_add_test(tc, test_port_blob_handle_lies);
	tcase_add_test(tc, test_port_blob_link_lies);
	tcase_add_test(tc, test_ep_codec_lies);
	tcase_add_test(tc, test_gather_blob_lies);
	tcase_add_test(tc, test_gather_blob_applied);
	tcase_add_test(tc, test_parse_peer_refusals);
	tcase_add_test(tc, test_serve_skips_sim_only_workload);
	tcase_add_loop_test(tc, test_serve_refusals, 0,
			    (int)(sizeof(serve_cases) / sizeof(serve_cases[0])));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(suite());
}
