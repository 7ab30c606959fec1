/*
 * The benchmarks' command lines (issue 24): `tensorverbs bench rxe`,
 * `bench port` and `bench gather` refuse every bad option naming it (exit
 * 2), accept every good one, and on a machine without an RDMA device (the
 * host CI runs on) fail the device opening with exit 1 and a reason
 * instead of crashing or hanging.  Each row runs in a forked child (Check's
 * loop tests), its standard error in a file the row's text is looked for
 * in.  And bench port's set-up bytes across hosts, every lie of a peer
 * refused naming the field.  The benchmarks themselves run on rxe
 * (tests/rxe/run.sh).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include <tensorverbs/port.h>

#include "common/check_main.h"
#include "common/tb_files.h"
#include "gw.h"
#include "le.h"
#include "pt_hw.h"
#include "rv_hw.h"

typedef int (*bench_main_fn)(int argc, char **argv, const char *argv0);

enum env { NO_ADDR, ADDR }; /* RXE_IP0 and RXE_IP1 unset, or loopback */

struct row {
	bench_main_fn fn;
	const char *args;  /* split on '|' ("" is an empty argument) */
	enum env env;
	int rc;
	const char *err;   /* looked for in standard error */
};

#define RXE rv_bench_rxe_main
#define PORT pt_bench_port_main
#define GATHER gw_bench_main
#define A "--addr0|127.0.0.1:7700|--addr1|127.0.0.1:7701|"
#define NODEV "no device" /* marker: exit 1 with the device's reason */

static const struct row rows[] = {
	/* bench port */
	{ PORT, "--sizes|0", ADDR, 2, "bad option --sizes 0" },
	{ PORT, "--sizes|x", ADDR, 2, "bad option --sizes x" },
	{ PORT, "--sizes|4096x", ADDR, 2, "bad option --sizes 4096x" },
	{ PORT, "--sizes|2147483648", ADDR, 2, "bad option --sizes 2147" },
	{ PORT, "--sizes|1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", ADDR, 2,
	  "bad option --sizes 1,2" },
	{ PORT, "--allreduce|4096,,8192", ADDR, 2,
	  "bad option --allreduce 4096,,8192" },
	{ PORT, "--bytes|0", ADDR, 2, "bad option --bytes 0" },
	{ PORT, "--lat-iters|0", ADDR, 2, "bad option --lat-iters 0" },
	{ PORT, "--lat-iters|20000000", ADDR, 2, "bad option --lat-iters" },
	{ PORT, "--signal|write", ADDR, 2, "bad option --signal write" },
	{ PORT, "--timeout|0", ADDR, 2, "bad option --timeout 0" },
	{ PORT, "--node|2", ADDR, 2, "bad option --node 2" },
	{ PORT, "--addr0|nowhere", ADDR, 2, "bad option --addr0 nowhere" },
	{ PORT, "--colour|red", ADDR, 2, "bad option --colour red" },
	{ PORT, "--sizes", ADDR, 2, "bad option --sizes\nusage:" },
	{ PORT, "-h", NO_ADDR, 0, "" },
	{ PORT, "--addr0|127.0.0.1:7700", NO_ADDR, 2, "no addresses" },
	{ PORT, "--addr1|127.0.0.1:7701", NO_ADDR, 2, "no addresses" },
	{ PORT, A "--sizes|4096,65536|--allreduce|8192|--bytes|65536|"
		"--lat-iters|10|--signal|write_imm|--timeout|5|--floor",
	  NO_ADDR, 1, NODEV },
	{ PORT, "--signal|atomic|--node|1", ADDR, 1, NODEV },
	/* bench gather */
	{ GATHER, "--rows", ADDR, 2, "usage:" },
	{ GATHER, "--addr0|nowhere", ADDR, 2, "usage:" },
	{ GATHER, "--rows|0", ADDR, 2, "bad option --rows 0" },
	{ GATHER, "--rows|", ADDR, 2, "bad option --rows \n" },
	{ GATHER, "--rows|12x", ADDR, 2, "bad option --rows 12x" },
	{ GATHER, "--rows|1", ADDR, 2, "usage:" },
	{ GATHER, "--rows|1000000000|--row-bytes|65536", ADDR, 2, "usage:" },
	{ GATHER, "--row-bytes|0", ADDR, 2, "bad option --row-bytes 0" },
	{ GATHER, "--row-bytes|65537", ADDR, 2, "bad option --row-bytes" },
	{ GATHER, "--batch|0", ADDR, 2, "bad option --batch 0" },
	{ GATHER, "--batch|1048577", ADDR, 2, "bad option --batch" },
	{ GATHER, "--total|0", ADDR, 2, "bad option --total 0" },
	{ GATHER, "--qp-op-ns|x", ADDR, 2, "bad option --qp-op-ns x" },
	{ GATHER, "--post-ns|x", ADDR, 2, "bad option --post-ns x" },
	{ GATHER, "--link-bps|x", ADDR, 2, "bad option --link-bps x" },
	{ GATHER, "--latency-ns|x", ADDR, 2, "bad option --latency-ns x" },
	{ GATHER, "--node|2", ADDR, 2, "bad option --node 2" },
	{ GATHER, "--timeout|0", ADDR, 2, "bad option --timeout 0" },
	{ GATHER, "--timeout|x", ADDR, 2, "bad option --timeout x" },
	{ GATHER, "--colour|red", ADDR, 2, "bad option --colour red" },
	{ GATHER, "", NO_ADDR, 2, "no addresses" },
	{ GATHER, "--sim|--node|1", NO_ADDR, 2, "--sim runs both nodes" },
	{ GATHER, A "--rows|64|--row-bytes|64|--batch|8|--total|16|"
		  "--qp-op-ns|1|--post-ns|1|--link-bps|1000|--latency-ns|1|"
		  "--timeout|5", NO_ADDR, 1, NODEV },
	{ GATHER, "--rows|64|--row-bytes|64|--batch|8|--node|0", ADDR, 1,
	  NODEV },
	/* bench rxe */
	{ RXE, "--help", NO_ADDR, 0, "" },
	{ RXE, "", NO_ADDR, 2, "usage:" },
	{ RXE, "--addr0|127.0.0.1:7600", NO_ADDR, 2, "usage:" },
	{ RXE, "--fetcher-poll|spin", ADDR, 2, "bad option --fetcher-poll spin" },
	{ RXE, "--addr1|nowhere", ADDR, 2, "bad option --addr1 nowhere" },
	{ RXE, "--sizes|0", ADDR, 2, "bad option --sizes 0" },
	{ RXE, "--sizes|4096,x", ADDR, 2, "bad option --sizes 4096,x" },
	{ RXE, "--sizes|2147483648", ADDR, 2, "bad option --sizes" },
	{ RXE, "--sizes|1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,"
		"21,22,23,24,25,26,27,28,29,30,31,32,33", ADDR, 2,
	  "bad option --sizes 1,2" },
	{ RXE, "--record|", ADDR, 2, "bad option --record\n" },
	{ RXE, "--node|2", ADDR, 2, "bad option --node 2" },
	{ RXE, "--bytes|0", ADDR, 2, "bad option --bytes 0" },
	{ RXE, "--bytes|2000000000000", ADDR, 2, "bad option --bytes" },
	{ RXE, "--lat-iters|1000001", ADDR, 2, "bad option --lat-iters" },
	{ RXE, "--window|1001", ADDR, 2, "bad option --window 1001" },
	{ RXE, "--timeout|86401", ADDR, 2, "bad option --timeout 86401" },
	{ RXE, "--max-inline|4097", ADDR, 2, "bad option --max-inline 4097" },
	{ RXE, "--max-inline|x", ADDR, 2, "bad option --max-inline x" },
	{ RXE, "--colour|red", ADDR, 2, "bad option --colour red" },
	{ RXE, "--bytes", ADDR, 2, "bad option --bytes\n" },
	{ RXE, "--breakdown|--node|0", ADDR, 2, "--breakdown needs both" },
	{ RXE, A "--fetcher-poll|event|--publisher-poll|busy|--sizes|4096|"
	       "--bytes|65536|--lat-iters|10|--window|4|--timeout|20|"
	       "--max-inline|0|--wrap-only|--breakdown", NO_ADDR, 1, NODEV },
	{ RXE, "--floor|--record|rec.jsonl|--sizes|4096", ADDR, 1, NODEV },
	{ RXE, "--node|1|--floor|--timeout|20", ADDR, 1, NODEV },
};

/* argv from "a|b|c": the pointers into a copy of the row's text. */
static int split_args(const char *args, char *copy, size_t cap, char **argv,
		      int max)
{
	int argc = 0;
	char *p = copy;

	ck_assert_uint_lt(strlen(args), cap);
	strcpy(copy, args);
	argv[argc++] = "bench";
	if (!*args)
		return argc;
	for (;;) {
		char *bar = strchr(p, '|');

		ck_assert_int_lt(argc, max - 1);
		argv[argc++] = p;
		if (!bar)
			break;
		*bar = '\0';
		p = bar + 1;
	}
	argv[argc] = NULL;
	return argc;
}

static void set_env(enum env e)
{
	/* Not under mpirun, whatever ran the tests. */
	unsetenv("OMPI_COMM_WORLD_SIZE");
	unsetenv("PMI_SIZE");
	unsetenv("PMIX_RANK");
	if (e == ADDR) {
		setenv("RXE_IP0", "127.0.0.1", 1);
		setenv("RXE_IP1", "127.0.0.1", 1);
	} else {
		unsetenv("RXE_IP0");
		unsetenv("RXE_IP1");
	}
}

START_TEST(test_bench_row)
{
	const struct row *r = &rows[_i];
	char copy[512], *argv[64], err[256], *text;
	int argc, saved, rc;

	if (!strcmp(r->err, NODEV) && have_rdma_device()) {
		fprintf(stderr, "row %d skipped: this machine has an RDMA "
			"device, the row needs none\n", _i);
		return;
	}
	mk_tmpdir();
	ck_assert_int_eq(chdir(tmpdir_path()), 0);
	argc = split_args(r->args, copy, sizeof(copy), argv, 64);
	set_env(r->env);
	/*
	 * Check's runner forwards SIGTERM to its process group and the test
	 * inherits that handler: bench rxe's SIGTERM to its forked node would
	 * end the whole run.  The CLI starts with the default.
	 */
	signal(SIGTERM, SIG_DFL);
	tmp_path(err, sizeof(err), "stderr");
	saved = stderr_to(err);
	rc = r->fn(argc, argv, "tensorverbs");
	stderr_back(saved);
	text = read_all(err);
	if (rc != r->rc || (!strcmp(r->err, NODEV) ? !*text :
			    !strstr(text, r->err)))
		ck_abort_msg("row %d (%s): exit %d, expected %d with \"%s\"; "
			     "stderr:\n%s", _i, r->args, rc, r->rc, r->err,
			     text);
	free(text);
	rm_tmpdir();
}
END_TEST


/* ---- bench port's set-up bytes, split across hosts ---------------------- */

/* Node 1's blob as node 0 would read it: region 64 KiB, token at 8. */
static void good_peer(struct pt_bench_peer *p)
{
	memset(p, 0, sizeof(*p));
	p->ep.qp_num = 0x123;
	p->ep.psn = 0x456;
	p->fep.qp_num = 0x124;
	p->tok = (struct tv_port_mem_handle){ .addr = 0x10000, .rkey = 5,
					       .size_bytes = 4096, .node = 1 };
	p->data = (struct tv_port_mem_handle){ .addr = 0x20000, .rkey = 6,
						.size_bytes = 65536, .node = 1 };
	p->tok_off = 8;
	p->floor_addr = 0x30000;
	p->floor_rkey = 7;
}

struct blob_lie {
	const char *why;   /* the message's end */
	uint32_t off, bytes;
	uint64_t value;    /* written at off, little-endian */
	size_t len;        /* the blob's length as received */
	uint64_t ours;     /* our data region's size */
};

static const struct blob_lie blob_lies[] = {
	{ "wrong length", 0, 0, 0, PT_BENCH_BLOB_BYTES - 1, 65536 },
	{ "wrong magic or version", 0, 4, 0x42505655, 0, 65536 },
	{ "wrong magic or version", 4, 4, 2, 0, 65536 },
	{ "wrong node", 8, 4, 0, 0, 65536 },
	{ "wrong a QP endpoint", PT_BENCH_EP, 4, 1u << 24, 0, 65536 },
	{ "wrong a QP endpoint", PT_BENCH_FEP + 4, 4, 1u << 24, 0, 65536 },
	{ "wrong the token handle", PT_BENCH_TOK, 4, 0, 0, 65536 },
	{ "wrong the token handle", PT_BENCH_TOK + 8, 4, 0, 0, 65536 },
	{ "wrong the data handle", PT_BENCH_DATA + 24, 8, 0, 0, 65536 },
	{ "wrong the data handle", PT_BENCH_DATA + 8, 4, 2, 0, 65536 },
	{ "wrong the token offset", PT_BENCH_TOK_OFF, 8, 4089, 0, 65536 },
	{ "wrong the token offset", PT_BENCH_TOK + 24, 8, 4, 0, 65536 },
	{ "wrong the data region's size", 0, 0, 0, 0, 65537 },
};

/* Every lie refused naming its field; the true blob read back whole. */
START_TEST(test_port_blob_lies)
{
	struct pt_bench_peer p, got;
	uint8_t b[PT_BENCH_BLOB_BYTES];
	char msg[200];

	good_peer(&p);
	pt_bench_blob_write(1, &p, b);
	ck_assert_int_eq(pt_bench_blob_read(b, sizeof(b), 1, 65536, msg,
					    sizeof(msg), &got), 0);
	ck_assert_uint_eq(got.ep.qp_num, 0x123);
	ck_assert_uint_eq(got.ep.psn, 0x456);
	ck_assert_uint_eq(got.fep.qp_num, 0x124);
	ck_assert_uint_eq(got.tok.rkey, 5);
	ck_assert_uint_eq(got.data.addr, 0x20000);
	ck_assert_uint_eq(got.tok_off, 8);
	ck_assert_uint_eq(got.floor_addr, 0x30000);
	ck_assert_uint_eq(got.floor_rkey, 7);
	for (size_t i = 0; i < sizeof(blob_lies) / sizeof(blob_lies[0]); i++) {
		const struct blob_lie *l = &blob_lies[i];
		uint8_t lie[PT_BENCH_BLOB_BYTES];

		memcpy(lie, b, sizeof(lie));
		if (l->bytes)
			tv_le_put(lie + l->off, l->value, l->bytes);
		memset(&got, 0xee, sizeof(got));
		msg[0] = '\0';
		ck_assert_int_eq(pt_bench_blob_read(lie, l->len ? l->len :
						    sizeof(lie), 1, l->ours,
						    msg, sizeof(msg), &got),
				 -EPROTO);
		ck_assert_msg(strstr(msg, "node 1's set-up data") &&
			      strstr(msg, l->why), "lie %zu: %s", i, msg);
		ck_assert_uint_eq(got.floor_rkey, 0xeeeeeeee); /* untouched */
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("bench_opts");
	TCase *tc = tcase_create("rows");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_bench_row, 0,
			    (int)(sizeof(rows) / sizeof(rows[0])));
	suite_add_tcase(s, tc);
	tc = tcase_create("port_blob");
	tcase_add_test(tc, test_port_blob_lies);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(suite());
}
