/*
 * The testbed's host-side code that needs no RDMA device (issue 24):
 * serve's coordinator (testbed/coord.c) against hostile peers on
 * loopback (malformed, short and oversized lines, a node that lies about
 * its id, its scenario or its sizes, one that dies mid-barrier, a
 * duplicate join; each names its culprit, none hangs), the peers of a
 * benchmark (peers.c), MPI's calls outside mpirun (mpi.c), and validate's
 * decisions fed without a device: its reports with odd texts and paths
 * that cannot be written, its child processes, its scenario runs through
 * a stand-in `tensorverbs` script, its benchmark refusals.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include <tensorverbs/ibverbs.h>
#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "common/check_main.h"
#include "coord.h"
#include "common/coord_peer.h"
#include "common/tb_files.h"
#include "tb_int.h"
#include "validate_int.h"



/* Node 0 of nodes, and a raw peer that joined as node 1. */
static void root_and_node1(struct coord *root, struct raw *r, uint32_t nodes,
			   size_t nstats)
{
	uint16_t port = free_port();
	struct coord *cs[] = { root };

	node_init(root, 0, nodes, port, nstats);
	raw_connect(r, port);
	raw_send(r, "HELLO 1 000000000000002a\n");
	pump_until(cs, 1, has_hello1, root);
}

/* ---- node 0 against its peers ---------------------------------------------- */

/* HELLOs that are not a node's, and lines before any HELLO: the stranger
 * is told why, the run goes on, and a right HELLO then joins. */
START_TEST(test_coord_bad_hello)
{
	struct coord root;
	struct coord *cs[] = { &root };
	struct raw r;
	uint16_t port = free_port();

	node_init(&root, 0, 2, port, 1);
	raw_connect(&r, port);
	raw_send(&r, "HELLO 5 2a\n");
	expect_line(&r, cs, 1, "ABORT node 0: bad or duplicate HELLO '5 2a'");
	raw_send(&r, "HELLO 0 2a\n");
	expect_line(&r, cs, 1, "ABORT node 0: bad or duplicate HELLO '0 2a'");
	raw_send(&r, "HELLO zz\n");
	expect_line(&r, cs, 1, "ABORT node 0: bad or duplicate HELLO 'zz'");
	raw_send(&r, "PING\nBAR 1\nSTATS 9\nAG 1 00\nABORT go away\n");
	expect_line(&r, cs, 1, "ABORT node 0: 'PING' before HELLO");
	expect_line(&r, cs, 1, "ABORT node 0: 'BAR 1' before HELLO");
	expect_line(&r, cs, 1, "ABORT node 0: 'STATS 9' before HELLO");
	expect_line(&r, cs, 1, "ABORT node 0: 'AG 1 00' before HELLO");
	expect_line(&r, cs, 1, "ABORT node 0: 'ABORT go away' before HELLO");
	ck_assert(!root.aborted);
	ck_assert(!root.joined);
	ck_assert_ptr_null(root.peers[1].stats);
	raw_send(&r, "HELLO 1 000000000000002a\nPING\nBAR 1\n");
	expect_line(&r, cs, 1, "WELCOME");
	ck_assert(root.joined);
	ck_assert_int_eq(coord_barrier_enter(&root, 1), 0);
	expect_line(&r, cs, 1, "GO 1");  /* the unknown line ignored */
	ck_assert(!root.aborted);
	close(r.fd);
	coord_fini(&root);
}
END_TEST

/* A second process claiming node 1's id is refused; the real node 1 and
 * the run are not disturbed. */
START_TEST(test_coord_duplicate_join)
{
	struct coord root, leaf;
	struct coord *cs[] = { &root, &leaf };
	struct raw dup, two;
	uint16_t port = free_port();

	node_init(&root, 0, 3, port, 1);
	node_init(&leaf, 1, 3, port, 1);
	pump_until(cs, 2, has_hello1, &root);
	raw_connect(&dup, port);
	raw_send(&dup, "HELLO 1 000000000000002a\n");
	expect_line(&dup, cs, 2, "ABORT node 0: bad or duplicate HELLO "
		    "'1 000000000000002a'");
	ck_assert(!root.aborted);
	raw_connect(&two, port);
	raw_send(&two, "HELLO 2 000000000000002a\n");
	expect_line(&two, cs, 2, "WELCOME");
	pump_until(cs, 2, is_joined, &leaf);
	ck_assert(!root.aborted && !leaf.aborted);
	close(dup.fd);
	close(two.fd);
	coord_fini(&leaf);
	coord_fini(&root);
}
END_TEST

/* A node of another scenario or seed: named, with both fingerprints. */
START_TEST(test_coord_fingerprint_lie)
{
	static const char want[] = "node 1 runs another scenario, seed or "
		"benchmark options (fingerprint 000000000000dead, node 0 has "
		"000000000000002a)";
	struct coord root;
	struct coord *cs[] = { &root };
	struct raw r;
	uint16_t port = free_port();
	char line[600];

	node_init(&root, 0, 2, port, 1);
	raw_connect(&r, port);
	raw_send(&r, "HELLO 1 dead\n");
	pump_until(cs, 1, is_aborted, &root);
	ck_assert_str_eq(root.abort_msg, want);
	snprintf(line, sizeof(line), "ABORT %s", want);
	expect_line(&r, cs, 1, line);
	close(r.fd);
	coord_fini(&root);
}
END_TEST

/* STATS: node 1's values kept; a short, a non-numeric and a too long
 * list (a node with other sizes) each abort the run naming node 1. */
START_TEST(test_coord_stats_lies)
{
	static const char *const bad[] = { "STATS 7\n", "STATS 7 x\n",
					   "STATS 7 8 9\n" };
	struct coord root;
	struct coord *cs[] = { &root };
	struct raw r;

	root_and_node1(&root, &r, 2, 2);
	expect_line(&r, cs, 1, "WELCOME");
	raw_send(&r, "STATS 7 8 \n");
	pump_until(cs, 1, has_stats1, &root);
	ck_assert_uint_eq(coord_stats(&root, 1)[0], 7);
	ck_assert_uint_eq(coord_stats(&root, 1)[1], 8);
	raw_send(&r, "STATS 9 10\nBAR 1\n");  /* the last ones count */
	ck_assert_int_eq(coord_barrier_enter(&root, 1), 0);
	expect_line(&r, cs, 1, "GO 1");
	ck_assert_uint_eq(coord_stats(&root, 1)[0], 9);
	ck_assert_uint_eq(coord_stats(&root, 1)[1], 10);
	ck_assert(!root.aborted);
	ck_assert_ptr_null(coord_stats(&root, 2));
	close(r.fd);
	coord_fini(&root);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		root_and_node1(&root, &r, 2, 2);
		raw_send(&r, bad[i]);
		pump_until(cs, 1, is_aborted, &root);
		ck_assert_str_eq(root.abort_msg, "node 0: malformed STATS "
				 "line from node 1");
		expect_line(&r, cs, 1, "WELCOME");
		expect_line(&r, cs, 1, "ABORT node 0: malformed STATS line "
			    "from node 1");
		close(r.fd);
		coord_fini(&root);
	}
}
END_TEST

/* All-gather lines node 0 must refuse: another round, bad hex, an odd
 * count of digits, more than a line's bytes, no space, a second end. */
START_TEST(test_coord_ag_root_refusals)
{
	char big[2 * 193 + 16];
	const char *bad[] = { "AG 2 00\n", "AG 1 0g\n", "AG 1 00g0\n",
			      "AG 1 abc\n",
			      "AG 1 0A\n", "AG 1x00\n",
			      "AGEND 1\nAGEND 1\n", big };
	struct coord root;
	struct coord *cs[] = { &root };
	struct raw r;

	memcpy(big, "AG 1 ", 5);
	memset(big + 5, 'a', 2 * 193);
	strcpy(big + 5 + 2 * 193, "\n");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		root_and_node1(&root, &r, 2, 1);
		raw_send(&r, bad[i]);
		pump_until(cs, 1, is_aborted, &root);
		ck_assert_str_eq(root.abort_msg, "node 0: a malformed "
				 "all-gather line from node 1");
		ck_assert(!coord_ag_done(&root));
		close(r.fd);
		coord_fini(&root);
	}
}
END_TEST

/* More than a line's worth without a newline: the sender is named (it
 * is not a dead process); a stranger's is simply dropped. */
START_TEST(test_coord_oversized_line)
{
	char big[1100];
	struct coord root;
	struct coord *cs[] = { &root };
	struct raw r, s;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	root_and_node1(&root, &r, 3, 1);
	raw_connect(&s, (uint16_t)ntohs(((struct sockaddr_in *)&root.addr0)
					      ->sin_port));
	raw_send(&s, big);
	expect_eof(&s, cs, 1);
	ck_assert(!root.aborted);
	raw_send(&r, big);
	pump_until(cs, 1, is_aborted, &root);
	ck_assert_str_eq(root.abort_msg, "node 1 sent a coordinator line "
			 "longer than 1024 bytes");
	expect_eof(&r, cs, 1);
	close(r.fd);
	close(s.fd);
	coord_fini(&root);
}
END_TEST

/* Node 2 dies while node 0 and node 1 wait in a barrier: both stop,
 * naming node 2; nobody passes the barrier. */
START_TEST(test_coord_death_mid_barrier)
{
	static const char want[] = "node 2's coordinator connection closed "
		"(the process died?)";
	struct coord root, leaf;
	struct coord *cs[] = { &root, &leaf };
	struct raw two;
	uint16_t port = free_port();

	node_init(&root, 0, 3, port, 1);
	node_init(&leaf, 1, 3, port, 1);
	raw_connect(&two, port);
	raw_send(&two, "HELLO 2 000000000000002a\n");
	expect_line(&two, cs, 2, "WELCOME");
	pump_until(cs, 2, is_joined, &leaf);
	ck_assert_int_eq(coord_barrier_enter(&root, 1), 0);
	ck_assert_int_eq(coord_barrier_enter(&leaf, 1), 0);
	for (int i = 0; i < 20; i++)
		pump(cs, 2);
	ck_assert(!coord_barrier_done(&root, 1));
	close(two.fd);
	pump_until(cs, 2, is_aborted, &leaf);
	ck_assert_str_eq(root.abort_msg, want);
	ck_assert_str_eq(leaf.abort_msg, want);
	ck_assert(!coord_barrier_done(&root, 1));
	ck_assert(!coord_barrier_done(&leaf, 1));
	coord_fini(&leaf);
	coord_fini(&root);
}
END_TEST

/* Node 1 resets its connection while node 0 has a GO for it: the failed
 * write names node 1 (and is no SIGPIPE). */
START_TEST(test_coord_reset_peer)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct coord root;
	struct coord *cs[] = { &root };
	struct raw r;

	root_and_node1(&root, &r, 2, 1);
	expect_line(&r, cs, 1, "WELCOME");
	raw_send(&r, "BAR 1\n");
	while (root.peers[1].bar_seq != 1)
		pump(cs, 1);
	ck_assert_int_eq(setsockopt(r.fd, SOL_SOCKET, SO_LINGER, &lg,
				    sizeof(lg)), 0);
	close(r.fd);
	ck_assert_int_eq(coord_barrier_enter(&root, 1), 0);
	ck_assert_uint_gt(root.peers[1].out_len, 0);
	pump_until(cs, 1, is_aborted, &root);
	ck_assert_str_eq(root.abort_msg, "node 1's coordinator connection "
			 "closed (the process died?)");
	ck_assert_int_eq(root.peers[1].fd, -1);
	coord_fini(&root);
}
END_TEST

/* Node 0 keeps as many not-yet-HELLO connections as nodes: one more is
 * closed at once; the first can still join. */
START_TEST(test_coord_too_many_connections)
{
	struct coord root;
	struct coord *cs[] = { &root };
	struct raw r[3];
	uint16_t port = free_port();

	node_init(&root, 0, 2, port, 1);
	for (int i = 0; i < 3; i++) {
		raw_connect(&r[i], port);
		pump(cs, 1);
	}
	expect_eof(&r[2], cs, 1);
	raw_send(&r[0], "HELLO 1 000000000000002a\n");
	expect_line(&r[0], cs, 1, "WELCOME");
	ck_assert(!root.aborted);
	for (int i = 0; i < 3; i++)
		close(r[i].fd);
	coord_fini(&root);
}
END_TEST

/* ---- a leaf against a node 0 of the test's own ------------------------------ */


/* What node 0 may not send a leaf: each stops it with a message. */
START_TEST(test_coord_leaf_refusals)
{
	static const struct {
		const char *line;
		const char *msg;
	} bad[] = {
		{ "AGB 1 5 00\n", "a malformed all-gather line from node 0" },
		{ "AGB 1 0 0g\n", "a malformed all-gather line from node 0" },
		{ "AGB 1 0x00\n", "a malformed all-gather line from node 0" },
		{ "AGB 2 0 00\n", "a malformed all-gather line from node 0" },
		{ "AGBEND 1 9\n", "a malformed all-gather line from node 0" },
		{ "AGDONE 7\n", "a malformed all-gather line from node 0" },
		{ "PING\nABORT node 0: no atomics\nABORT later\n",
		  "node 0: no atomics" },
	};
	struct coord leaf;
	struct coord *cs[] = { &leaf };
	struct fake_root f;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		leaf_joined(&leaf, &f, 3);
		raw_send(&f.conn, bad[i].line);
		pump_until(cs, 1, is_aborted, &leaf);
		ck_assert_str_eq(leaf.abort_msg, bad[i].msg);
		ck_assert(!coord_ag_done(&leaf));
		coord_fini(&leaf);
		fake_root_close(&f);
	}
}
END_TEST

/* Node 0 gone, or talking past a line: the leaf stops, naming node 0. */
START_TEST(test_coord_leaf_root_gone)
{
	char big[1100];
	struct coord leaf;
	struct coord *cs[] = { &leaf };
	struct fake_root f;

	leaf_joined(&leaf, &f, 2);
	close(f.conn.fd);
	f.conn.fd = -1;
	pump_until(cs, 1, is_aborted, &leaf);
	ck_assert_str_eq(leaf.abort_msg, "node 0's coordinator connection "
			 "closed (the process died?)");
	coord_fini(&leaf);
	fake_root_close(&f);

	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	leaf_joined(&leaf, &f, 2);
	raw_send(&f.conn, big);
	pump_until(cs, 1, is_aborted, &leaf);
	ck_assert_str_eq(leaf.abort_msg, "node 0 sent a coordinator line "
			 "longer than 1024 bytes");
	coord_fini(&leaf);
	fake_root_close(&f);
}
END_TEST

/* Node 0 resets the connection before its WELCOME (it restarted): the
 * leaf is not stopped, it connects again and says HELLO again. */
START_TEST(test_coord_leaf_reset_before_join)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct sockaddr_storage a;
	struct coord leaf;
	struct coord *cs[] = { &leaf };
	struct raw conn;
	uint16_t port = free_port();
	uint64_t t0;
	int lfd, one = 1;

	a = addr_of(port);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(lfd, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a,
			      sizeof(struct sockaddr_in)), 0);
	ck_assert_int_eq(listen(lfd, 4), 0);
	node_init(&leaf, 1, 2, port, 1);
	for (int round = 0; round < 2; round++) {
		t0 = mono_ns();
		conn.len = 0;
		while ((conn.fd = accept4(lfd, NULL, NULL,
					  SOCK_NONBLOCK | SOCK_CLOEXEC)) < 0) {
			ck_assert_msg(mono_ns() - t0 < WAIT_NS, "no connection");
			pump(cs, 1);
		}
		expect_line(&conn, cs, 1, "HELLO 1 000000000000002a");
		if (round == 0) {
			ck_assert_int_eq(setsockopt(conn.fd, SOL_SOCKET,
						    SO_LINGER, &lg,
						    sizeof(lg)), 0);
			close(conn.fd);
			while (leaf.peers[0].fd >= 0) {
				ck_assert_msg(mono_ns() - t0 < WAIT_NS,
					      "reset not seen");
				pump(cs, 1);
			}
			ck_assert(!leaf.aborted);
		}
	}
	raw_send(&conn, "WELCOME\n");
	pump_until(cs, 1, is_joined, &leaf);
	ck_assert(!leaf.aborted);
	close(conn.fd);
	close(lfd);
	coord_fini(&leaf);
}
END_TEST

/* A leaf started before node 0: refused, it says when it tries again,
 * and joins once node 0 listens. */
START_TEST(test_coord_leaf_before_root)
{
	struct coord root, leaf;
	struct coord *cs[] = { &root, &leaf };
	struct pollfd pfd[4];
	uint16_t port = free_port();
	uint64_t wake = 0, t0 = mono_ns();

	node_init(&leaf, 1, 2, port, 1);
	ck_assert_int_eq(coord_pollfds(&leaf, pfd, 4, &wake), 0);
	ck_assert_uint_eq(wake, 0);  /* nothing tried yet: now */
	while (leaf.peers[0].fd >= 0 || !leaf.next_connect_ns) {
		ck_assert_msg(mono_ns() - t0 < WAIT_NS, "never refused");
		coord_poll(&leaf, mono_ns());
		poll(NULL, 0, 1);
	}
	ck_assert_int_eq(coord_pollfds(&leaf, pfd, 4, &wake), 0);
	ck_assert_uint_eq(wake, leaf.next_connect_ns);
	ck_assert(!leaf.aborted);
	node_init(&root, 0, 2, port, 1);
	pump_until(cs, 2, is_joined, &leaf);
	ck_assert(root.joined && !root.aborted && !leaf.aborted);
	coord_fini(&leaf);
	coord_fini(&root);
}
END_TEST

/* The small things: an abort text's newlines, too few pollfds, STATS
 * that cannot fit a line, a one-node run, a port already taken. */
START_TEST(test_coord_edges)
{
	struct coord root, leaf, one, dup;
	struct coord *cs[] = { &root, &leaf };
	struct sockaddr_storage a;
	struct pollfd pfd[1];
	uint64_t wake, *many;
	uint16_t port = free_port();
	char msg[256] = "";

	node_init(&root, 0, 2, port, 1);
	ck_assert_int_eq(coord_pollfds(&root, pfd, 0, &wake), -ENOSPC);
	ck_assert_uint_eq(wake, UINT64_MAX);
	a = addr_of(port);
	ck_assert_int_eq(coord_init(&dup, 0, 2, (struct sockaddr *)&a, FP, 1,
				    msg, sizeof(msg)), -EADDRINUSE);
	ck_assert_str_eq(msg, "coordinator: cannot listen (TCP): Address "
			 "already in use");
	coord_fini(&dup);
	node_init(&leaf, 1, 2, port, 300);
	pump_until(cs, 2, is_joined, &leaf);
	ck_assert_int_eq(coord_pollfds(&leaf, pfd, 0, &wake), -ENOSPC);
	ck_assert_int_eq(coord_pollfds(&leaf, pfd, 1, &wake), 1);
	ck_assert_uint_eq(wake, UINT64_MAX);
	many = malloc(300 * sizeof(*many));
	for (int i = 0; i < 300; i++)
		many[i] = UINT64_MAX;
	ck_assert_int_eq(coord_send_stats(&leaf, many), -EMSGSIZE);
	free(many);
	ck_assert_ptr_null(coord_stats(&leaf, 0));
	coord_abort(&leaf, "line one\nline two\rend");
	ck_assert_str_eq(leaf.abort_msg, "line one line two end");
	pump_until(cs, 2, is_aborted, &root);
	ck_assert_str_eq(root.abort_msg, "line one line two end");
	coord_fini(&leaf);
	coord_fini(&root);

	node_init(&one, 0, 1, free_port(), 1);
	ck_assert(one.joined);
	ck_assert_int_eq(coord_barrier_enter(&one, 1), 0);
	ck_assert(coord_barrier_done(&one, 1));
	coord_fini(&one);
}
END_TEST

/* ---- peers.c ------------------------------------------------------------- */

static struct tv_tb_peers *idle_other;
static int idle_calls;

/* Node 0's idle hook: node 1 connects, then gives up. */
static void abort_other(void *arg)
{
	(void)arg;
	if (idle_calls++ == 0) {
		ck_assert_int_eq(tv_tb_peers_poll(idle_other), 0);
		tv_tb_peers_abort(idle_other, "lost a row");
	}
	poll(NULL, 0, 1);
}

START_TEST(test_peers_refusals)
{
	struct sockaddr_storage a = addr_of(free_port());
	struct tv_tb_peers *p0 = NULL, *p1 = NULL, *dup = NULL;
	char msg[256] = "";
	const char *err;

	ck_assert_int_eq(tv_tb_peers_open(2, 2, &a, FP, WAIT_NS, &p0, msg,
					  sizeof(msg)), -EINVAL);
	ck_assert_str_eq(msg, "node 2 of 2: no such node");
	ck_assert_int_eq(tv_tb_peers_open(0, 1, &a, FP, WAIT_NS, &p0, msg,
					  sizeof(msg)), -EINVAL);
	ck_assert_str_eq(msg, "node 0 of 1: no such node");
	ck_assert_int_eq(tv_tb_peers_open(0, TV_TB_MAX_NODES + 1, &a, FP,
					  WAIT_NS, &p0, msg, sizeof(msg)),
			 -EINVAL);
	ck_assert_ptr_null(p0);

	/* Nobody at node 0's address: a timeout that says what it waited for. */
	ck_assert_int_eq(tv_tb_peers_open(1, 2, &a, FP, 50000000ull, &p1, msg,
					  sizeof(msg)), 0);
	ck_assert_int_eq(tv_tb_peers_barrier(p1, "step 1"), -ETIMEDOUT);
	ck_assert_str_eq(tv_tb_peers_error(p1), "timed out waiting for every "
			 "node to join");
	tv_tb_peers_close(p1);
	tv_tb_peers_close(NULL);

	/* Node 1 gives up while node 0 waits: node 0 says who and why. */
	ck_assert_int_eq(tv_tb_peers_open(0, 2, &a, FP, WAIT_NS, &p0, msg,
					  sizeof(msg)), 0);
	ck_assert_int_eq(tv_tb_peers_open(0, 2, &a, FP, WAIT_NS, &dup, msg,
					  sizeof(msg)), -EADDRINUSE);
	ck_assert_str_eq(msg, "coordinator: cannot listen (TCP): Address "
			 "already in use");
	ck_assert_ptr_null(dup);
	ck_assert_int_eq(tv_tb_peers_open(1, 2, &a, FP, WAIT_NS, &p1, msg,
					  sizeof(msg)), 0);
	idle_other = p1;
	idle_calls = 0;
	tv_tb_peers_set_idle(p0, abort_other, NULL);
	ck_assert_int_eq(tv_tb_peers_barrier(p0, "step 1"), -ECANCELED);
	err = tv_tb_peers_error(p0);
	ck_assert_msg(!strcmp(err, "waiting for every node to join: node 1: "
			      "lost a row") ||
		      !strcmp(err, "waiting for step 1: node 1: lost a row"),
		      "%s", err);
	ck_assert_int_eq(tv_tb_peers_poll(p0), -ECANCELED);
	ck_assert_str_eq(tv_tb_peers_error(p0), "node 1: lost a row");
	tv_tb_peers_close(p1);
	tv_tb_peers_close(p0);
}
END_TEST

/* ---- MPI outside mpirun ------------------------------------------------------ */

START_TEST(test_mpi_outside_mpirun)
{
	struct sockaddr_storage mine = addr_of(1), all[2];
	uint32_t rank = 7, size = 7;
	char **bufs = NULL;
	uint64_t *lens = NULL;
	int argc = 1;
	char *args[] = { "t", NULL }, **argv = args;

	unsetenv("OMPI_COMM_WORLD_SIZE");
	unsetenv("PMI_SIZE");
	unsetenv("PMIX_RANK");
	ck_assert_int_eq(tv_tb_mpi_init(&argc, &argv), 0);
	ck_assert(!tv_tb_mpi_world(&rank, &size));
	ck_assert_int_eq(tv_tb_mpi_allgather_addr(&mine, all), -ENOTSUP);
	ck_assert_int_eq(tb_mpi_gather_bytes("abc", 3, &bufs, &lens),
			 -ENOTSUP);
	ck_assert_ptr_null(bufs);
	ck_assert_ptr_null(lens);
	ck_assert_int_eq(tv_tb_mpi_worst(5), 5);
	tv_tb_mpi_finalize();
}
END_TEST

/* ---- recordings: files that cannot be written --------------------------------- */

static const char basic[] =
	"{\"name\": \"b\", \"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0,"
	" \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}],"
	" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]}";

/* A tap of basic run with seed 1, finished into memory (a rank's bytes). */
static char *rank_bytes(struct tv_tb_scenario *sc, uint64_t *len_p)
{
	size_t len = 0;
	char *buf = record_mem(sc, 1, &len);

	*len_p = len;
	return buf;
}

struct tap_run {
	struct tv_tb_scenario *sc;
	struct tv_tb_tap *tap;
	struct tv_tb_run *run;
};

static void *run_on_tap(void *arg)
{
	struct tap_run *tr = arg;
	struct tv_tb_run_opts o;

	tv_tb_run_opts_init(&o, tr->sc);
	o.seed = 1;
	o.tap = tr->tap;
	ck_assert_int_eq(tv_tb_run(tr->sc, &o, &tr->run), 0);
	return NULL;
}

/*
 * Two threads record into one tap (one buffer each): the finished
 * recording has both threads' events, merged in time order; a tap freed
 * unfinished frees its buffers.
 */
START_TEST(test_record_two_threads)
{
	struct tap_run a = { 0 }, b = { 0 };
	char err[TV_TB_ERR_MAX], *one, *two;
	uint64_t len1;
	size_t len2 = 0;
	pthread_t th;
	json_t *prev = NULL;
	int n1, n2;

	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "b", &a.sc, err), 0);
	one = rank_bytes(a.sc, &len1);
	n1 = count_lines(one);
	ck_assert_int_ge(n1, 4);
	ck_assert_int_eq(tv_tb_record_create("unused.jsonl", a.sc, NULL, 1,
					     "ibverbs", &a.tap), 0);
	b = a;
	run_on_tap(&a);
	ck_assert_int_eq(pthread_create(&th, NULL, run_on_tap, &b), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(tb_record_finish_mem(a.tap, tv_tb_run_result(a.run),
					      tv_tb_run_failures(a.run), &two,
					      &len2), 0);
	n2 = count_lines(two);
	ck_assert_int_eq(n2 - 2, 2 * (n1 - 2));
	for (int i = 1; i < n2 - 1; i++) {
		char *l = line_of(two, i);
		json_t *j = json_loads(l, 0, NULL);

		ck_assert_ptr_nonnull(j);
		if (prev)
			ck_assert_int_le(json_integer_value(json_object_get(prev,
								"t")),
					 json_integer_value(json_object_get(j,
								"t")));
		json_decref(prev);
		prev = j;
		free(l);
	}
	json_decref(prev);
	free(one);
	free(two);
	tv_tb_run_free(a.run);
	tv_tb_run_free(b.run);

	ck_assert_int_eq(tv_tb_record_create("unused.jsonl", a.sc, NULL, 1,
					     "ibverbs", &a.tap), 0);
	run_on_tap(&a);
	tv_tb_tap_free(a.tap);
	tv_tb_run_free(a.run);
	tv_tb_scenario_free(a.sc);
}
END_TEST

/* A full disk or a missing folder: each write says so, nothing leaks. */
START_TEST(test_record_unwritable)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_tap *tap;
	char err[TV_TB_ERR_MAX], *bufs[2];
	uint64_t lens[2];
	size_t events = 99;

	mk_tmpdir();
	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "b", &sc, err), 0);
	ck_assert_int_eq(tv_tb_record_create(NULL, sc, NULL, 1, "sim", &tap),
			 -EINVAL);
	ck_assert_int_eq(tv_tb_record_create("x", sc, NULL, 1, NULL, &tap),
			 -EINVAL);

	ck_assert_int_eq(tv_tb_record_create("/dev/full", sc, NULL, 1, "sim",
					     &tap), 0);
	ck_assert_int_eq(tv_tb_tap_write(tap, "/nonexistent/dir/b.jsonl",
					 &events), -ENOENT);
	ck_assert_int_eq(tv_tb_tap_write(tap, "/dev/full", &events), -EIO);
	ck_assert_uint_eq(events, 99);
	tap->err = -ENOMEM;
	ck_assert_int_eq(tv_tb_tap_write(tap, "unused.jsonl", &events),
			 -ENOMEM);
	tap->err = 0;
	ck_assert_int_eq(tv_tb_record_finish(tap, &(struct tv_tb_result){ 0 },
					     &(struct tv_tb_failures){ 0 }), -EIO);
	ck_assert_int_eq(tv_tb_record_create("unused.jsonl", sc, NULL, 1, "sim",
					     &tap), 0);
	tap->err = -ENOMEM;  /* a record failed during the run */
	ck_assert_int_eq(tv_tb_record_finish(tap, &(struct tv_tb_result){ 0 },
					     &(struct tv_tb_failures){ 0 }),
			 -ENOMEM);
	ck_assert_int_eq(access("unused.jsonl", F_OK), -1);
	ck_assert_int_eq(tv_tb_record_create("/nonexistent/dir/r.jsonl", sc,
					     NULL, 1, "sim", &tap), 0);
	ck_assert_int_eq(tv_tb_record_finish(tap, &(struct tv_tb_result){ 0 },
					     &(struct tv_tb_failures){ 0 }), -ENOENT);

	/* Merging: a rank with no bytes; a merge onto a full disk. */
	bufs[0] = rank_bytes(sc, &lens[0]);
	bufs[1] = bufs[0];
	lens[1] = 0;
	ck_assert_int_eq(tb_record_merge_mem("unused.jsonl", bufs, lens, 2, err,
					     sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "rank 1's recording: empty");
	ck_assert_int_eq(tb_record_merge_mem("/dev/full", bufs, lens, 1, err,
					     sizeof(err)), -EIO);
	ck_assert_str_eq(err, "/dev/full: Input/output error");
	ck_assert_int_eq(tb_record_merge_mem("/nonexistent/dir/m.jsonl", bufs,
					     lens, 1, err, sizeof(err)),
			 -ENOENT);
	ck_assert_str_eq(err, "/nonexistent/dir/m.jsonl: No such file or "
			 "directory");
	free(bufs[0]);
	tv_tb_scenario_free(sc);
	rm_tmpdir();
}
END_TEST

/* ---- validate ------------------------------------------------------------------ */

static struct tv_tb_validate_opts vopts;
static const char *vdirs[3];  /* NULL-terminated */

/* A validation of the test's own in the temporary folder. */
static struct tv_tb_validation *val_new(void)
{
	struct tv_tb_validation *v = calloc(1, sizeof(*v));
	char path[500], sub[700];

	ck_assert_ptr_nonnull(v);
	memset(&vopts, 0, sizeof(vopts));
	tmp_path(path, sizeof(path), "out");
	vopts.out_dir = strdup(path);
	vopts.timeout_s = 5;
	vdirs[0] = vdirs[1] = vdirs[2] = NULL;
	vopts.scenario_dirs = vdirs;
	v->opts = &vopts;
	v->size = 1;
	v->next_port = 21000;
	v->t0 = val_now_ns();
	snprintf(v->dir, sizeof(v->dir), "%s", path);
	mkdir(path, 0755);
	snprintf(sub, sizeof(sub), "%s/logs", path);
	mkdir(sub, 0755);
	snprintf(sub, sizeof(sub), "%s/scenarios", path);
	mkdir(sub, 0755);
	return v;
}

static void val_del(struct tv_tb_validation *v)
{
	free((char *)vopts.out_dir);
	tv_tb_validation_free(v);
}

static const struct val_check *find_check(const struct tv_tb_validation *v,
					  const char *group, const char *name)
{
	for (size_t i = 0; i < v->nchecks; i++)
		if (!strcmp(v->checks[i].group, group) &&
		    !strcmp(v->checks[i].name, name))
			return &v->checks[i];
	ck_abort_msg("no check %s: %s", group, name);
	return NULL;
}

static void expect_check(const struct tv_tb_validation *v, const char *group,
			 const char *name, enum val_status st,
			 const char *detail)
{
	const struct val_check *c = find_check(v, group, name);

	ck_assert_str_eq(val_status_name(c->status), val_status_name(st));
	ck_assert_str_eq(c->detail, detail);
}

START_TEST(test_val_helpers)
{
	struct tv_tb_validation *v;
	char p[8], *text, path[600];
	FILE *f;
	int pc[2];

	mk_tmpdir();
	v = val_new();
	ck_assert_int_eq(val_path(p, sizeof(p), "%s", "1234567"), 0);
	ck_assert_int_eq(val_path(p, sizeof(p), "%s/%s", "1234", "567"),
			 -ENAMETOOLONG);
	ck_assert_str_eq(val_status_name(VAL_PASS), "PASS");
	ck_assert_str_eq(val_status_name(VAL_FAIL), "FAIL");
	ck_assert_str_eq(val_status_name(VAL_SKIP), "SKIP");

	/* Progress lines, none from a quiet rank; no more than the table. */
	tmp_path(path, sizeof(path), "progress.txt");
	f = fopen(path, "w");
	vopts.progress = f;
	val_add(v, "scenario", "a name", VAL_FAIL, val_now_ns(), "%s", "lost");
	v->quiet = true;
	val_add(v, "scenario", "quiet", VAL_PASS, 0, "%s", "");
	v->quiet = false;
	vopts.progress = NULL;
	fclose(f);
	text = read_all(path);
	ck_assert_ptr_nonnull(strstr(text, "scenario   a name"));
	ck_assert_ptr_nonnull(strstr(text, "FAIL: lost\n"));
	ck_assert_ptr_null(strstr(text, "quiet"));
	free(text);
	while (v->nchecks < VAL_MAX_CHECKS)
		val_add(v, "g", "n", VAL_PASS, 0, "x");
	val_add(v, "g", "one too many", VAL_FAIL, 0, "x");
	ck_assert_uint_eq(v->nchecks, VAL_MAX_CHECKS);
	ck_assert_uint_eq(tv_tb_validation_failed(v), 1);

	ck_assert(val_in_path("sh"));
	ck_assert(!val_in_path("tv-no-such-tool"));
	unsetenv("PATH");
	ck_assert(val_in_path("sh"));  /* /usr/bin:/bin then */
	setenv("PATH", "/usr/bin:/bin", 1);
	ck_assert(val_mpi_have(v, "sh"));
	ck_assert(!val_mpi_have(v, "tv-no-such-tool"));

	/* Children: their exit code, 127 when there is no such program, a
	 * timeout's kill, the environment given, a log nobody can write. */
	tmp_path(path, sizeof(path), "child.log");
	ck_assert_int_eq(val_run((char *[]){ "sh", "-c", "echo out; exit 3",
					     NULL }, NULL, path, 5000000000ull),
			 3);
	text = read_all(path);
	ck_assert_str_eq(text, "out\n");
	free(text);
	ck_assert_int_eq(val_run((char *[]){ "tv-no-such-tool", NULL }, NULL,
				 path, 5000000000ull), 127);
	setenv("TV_HOST_COV", "old", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
	ck_assert_int_eq(val_run((char *[]){ "sh", "-c",
		"test \"$TV_HOST_COV\" = new && test -z \"$OMPI_COMM_WORLD_SIZE\"",
		NULL }, "TV_HOST_COV=new", path, 5000000000ull), 0);
	unsetenv("OMPI_COMM_WORLD_SIZE");
	ck_assert_int_eq(val_run((char *[]){ "true", NULL }, NULL,
				 "/nonexistent/dir/log", 5000000000ull), 0);
	ck_assert_int_eq(val_run((char *[]){ "sleep", "10", NULL }, NULL, path,
				 100000000ull), 128 + 9);
	pc[0] = -ENOENT;
	pc[1] = val_spawn_node((char *[]){ "sh", "-c", "kill -TERM $$", NULL },
			       NULL, path);
	val_reap_nodes(pc, 2, val_now_ns() + 5000000000ull);
	ck_assert_int_eq(pc[0], 1);
	ck_assert_int_eq(pc[1], 128 + 15);
	ck_assert(!val_stopped());
	val_del(v);
	rm_tmpdir();
}
END_TEST

/*
 * Ctrl-C (SIGTERM, SIGHUP) during validate: the children it started are
 * killed with their groups, the run stops, and the signal is raised
 * again with its default action.  Here it stays blocked, so that the
 * test sees all of it: the handler is called as the kernel would.
 */

/*
 * One device's checks from what the device says of itself: a ConnectX-like
 * one passes everything and is kept for the runs; a device with its port
 * down, only an IB GID, no atomics, no READ depth and a short queue fails
 * each check naming the figure; devices past VAL_MAX_DEVS are checked but
 * not kept.
 */
START_TEST(test_val_device_checks)
{
	struct tv_ibv_gid gids[2] = {
		{ .raw = { [10] = 0xff, [11] = 0xff, [12] = 10, [13] = 0,
			   [14] = 0, [15] = 7 },
		  .index = 3, .type = TV_IBV_GID_ROCE_V2, .netdev = "eth1" },
		{ .raw = { 0xfe, 0x80, [15] = 1 }, .index = 0,
		  .type = TV_IBV_GID_IB },
	};
	struct tv_ibv_port_info up = { .port_num = 1, .num_gids = 1,
				       .gids = &gids[0] };
	struct tv_ibv_port_info down[2] = {
		{ .port_num = 1, .num_gids = 0 },
		{ .port_num = 2, .num_gids = 1, .gids = &gids[1] },
	};
	struct tv_ibv_device_info good = { .num_ports = 1, .ports = &up };
	struct tv_ibv_device_info bad = { .num_ports = 2, .ports = down };
	struct tv_tb_validation *v;

	mk_tmpdir();
	v = val_new();
	up.attr.state = TV_PORT_ACTIVE;
	up.attr.active_mtu = TV_MTU_4096;
	snprintf(good.attr.name, sizeof(good.attr.name), "mlx5_0");
	good.attr.atomic_cap = TV_ATOMIC_HCA;
	good.attr.max_qp_rd_atom = 16;
	good.attr.max_qp_init_rd_atom = 16;
	good.attr.max_qp_wr = 32768;
	good.attr.max_cqe = 4194303;
	down[0].attr.state = TV_PORT_DOWN;
	down[1].attr.state = TV_PORT_DOWN;
	snprintf(bad.attr.name, sizeof(bad.attr.name), "odd0");
	bad.attr.max_qp_wr = 128;
	bad.attr.max_cqe = 256;
	val_device_checks(v, &good);
	expect_check(v, "device", "mlx5_0: an active port", VAL_PASS,
		     "active MTU 4096");
	expect_check(v, "device", "mlx5_0: RoCE IPv4 GID (rdma_cm)", VAL_PASS,
		     "10.0.0.7 on eth1 (GID 3, RoCE v2)");
	expect_check(v, "device", "mlx5_0: atomics (port channels)", VAL_PASS,
		     "fetch-and-add signals");
	expect_check(v, "device", "mlx5_0: READ depth (gather)", VAL_PASS,
		     "max_qp_rd_atom 16, max_qp_init_rd_atom 16");
	expect_check(v, "device", "mlx5_0: queue depth (gather: 256)",
		     VAL_PASS, "max_qp_wr 32768, max_cqe 4194303");
	ck_assert_uint_eq(v->ndevs, 1);
	ck_assert_str_eq(v->devs[0].ip, "10.0.0.7");
	ck_assert_uint_eq(v->devs[0].gid_index, 3);
	ck_assert(v->devs[0].atomics);
	val_device_checks(v, &bad);
	expect_check(v, "device", "odd0: an active port", VAL_FAIL,
		     "active MTU 0");
	expect_check(v, "device", "odd0: RoCE IPv4 GID (rdma_cm)", VAL_FAIL,
		     "none (GID 0, -)");
	expect_check(v, "device", "odd0: atomics (port channels)", VAL_PASS,
		     "none: signals go as write-with-immediate");
	expect_check(v, "device", "odd0: READ depth (gather)", VAL_FAIL,
		     "max_qp_rd_atom 0, max_qp_init_rd_atom 0");
	expect_check(v, "device", "odd0: queue depth (gather: 256)", VAL_FAIL,
		     "max_qp_wr 128, max_cqe 256");
	ck_assert_uint_eq(v->ndevs, 1);
	/* A GID without its interface's name; the table of devices full. */
	gids[0].netdev[0] = '\0';
	for (int i = 0; i < VAL_MAX_DEVS + 1; i++)
		val_device_checks(v, &good);
	ck_assert_uint_eq(v->ndevs, VAL_MAX_DEVS);
	ck_assert_str_eq(v->checks[v->nchecks - 4].detail,
			 "10.0.0.7 (GID 3, RoCE v2)");
	val_del(v);
	rm_tmpdir();
}
END_TEST

START_TEST(test_val_signal)
{
	void (*handler)(int);
	sigset_t block, pending;
	char log[600];
	int pc[VAL_MAX_PROCS + 1];

	mk_tmpdir();
	tmp_path(log, sizeof(log), "child.log");
	/* More children than the table holds: the extra one is not tracked. */
	for (int i = 0; i < VAL_MAX_PROCS + 1; i++)
		pc[i] = val_spawn_node((char *[]){ "true", NULL }, NULL, log);
	val_reap_nodes(pc, VAL_MAX_PROCS, val_now_ns() + 5000000000ull);
	val_reap_nodes(pc + VAL_MAX_PROCS, 1, val_now_ns() + 5000000000ull);
	for (int i = 0; i < VAL_MAX_PROCS + 1; i++)
		ck_assert_int_eq(pc[i], 0);

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	ck_assert_int_eq(sigprocmask(SIG_BLOCK, &block, NULL), 0);
	val_signals();
	handler = signal(SIGTERM, SIG_IGN);
	ck_assert_ptr_ne((void *)handler, (void *)SIG_IGN);
	ck_assert_ptr_ne((void *)handler, (void *)SIG_DFL);
	pc[0] = val_spawn_node((char *[]){ "sleep", "10", NULL }, NULL, log);
	ck_assert_int_gt(pc[0], 0);
	ck_assert(!val_stopped());
	handler(SIGTERM);
	ck_assert(val_stopped());
	ck_assert_ptr_eq((void *)signal(SIGTERM, SIG_DFL), (void *)SIG_DFL);
	ck_assert_int_eq(sigpending(&pending), 0);
	ck_assert(sigismember(&pending, SIGTERM));
	/* Killed already; a stopped run does not wait for its deadline. */
	val_reap_nodes(pc, 1, val_now_ns() + 60000000000ull);
	ck_assert_int_eq(pc[0], 128 + SIGKILL);
	pc[0] = val_spawn_node((char *[]){ "sleep", "10", NULL }, NULL, log);
	val_reap_nodes(pc, 1, val_now_ns() + 60000000000ull);
	ck_assert_int_eq(pc[0], 128 + SIGKILL);
	rm_tmpdir();
}
END_TEST

/* report.json, report.html (escaped), JUnit; paths that cannot be written. */
START_TEST(test_val_report)
{
	struct tv_tb_validation *v;
	struct val_series *s;
	char path[700], *text;
	json_t *j;
	json_error_t jerr;
	int rc;

	mk_tmpdir();
	v = val_new();
	val_add(v, "device", "dev <0> & \"1\"", VAL_PASS, 0, "ok");
	val_add(v, "scenario", "port: x", VAL_FAIL, 0, "a<b");
	val_add(v, "benchmark", "bench", VAL_SKIP, 0, "no perftest");
	v->nseries = 2;
	s = &v->series[0];
	snprintf(s->what, sizeof(s->what), "put <bw>");
	snprintf(s->unit, sizeof(s->unit), "GB/s");
	s->n = 2;
	snprintf(s->label[0], sizeof(s->label[0]), "4 KiB");
	snprintf(s->label[1], sizeof(s->label[1]), "1 MiB");
	s->ours[0] = 1.5;
	s->perftest[0] = 2.0;
	s->ours[1] = 0;
	s->perftest[1] = 3.0;
	s = &v->series[1];
	snprintf(s->what, sizeof(s->what), "nothing measured");
	snprintf(s->unit, sizeof(s->unit), "us");
	v->hosts = calloc(2, sizeof(*v->hosts));
	v->size = 2;
	snprintf(v->hosts[0].name, sizeof(v->hosts[0].name), "h<0>");
	snprintf(v->hosts[1].name, sizeof(v->hosts[1].name), "h1");
	v->hosts[1].ndevs = 1;
	snprintf(v->hosts[1].devs[0].name, sizeof(v->hosts[1].devs[0].name),
		 "rxe0");

	tmp_path(path, sizeof(path), "copy.json");
	ck_assert_int_eq(tv_tb_validation_write(v, path), 0);
	j = json_load_file(path, 0, &jerr);
	ck_assert_ptr_nonnull(j);
	ck_assert(json_is_false(json_object_get(j, "passed")));
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_object_get(j, "counts"), "fail")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_object_get(j, "counts"), "skip")), 1);
	ck_assert_int_eq(json_array_size(json_object_get(j, "checks")), 3);
	json_decref(j);
	snprintf(path, sizeof(path), "%s/report.html", vopts.out_dir);
	text = read_all(path);
	ck_assert_ptr_nonnull(strstr(text, "dev &lt;0&gt; &amp; &quot;1&quot;"));
	ck_assert_ptr_nonnull(strstr(text, "a&lt;b"));
	ck_assert_ptr_nonnull(strstr(text, "put &lt;bw&gt;"));
	ck_assert_ptr_nonnull(strstr(text, "2 MPI ranks: rank 0 on h&lt;0&gt; "
				     "(0 device(s)); rank 1 on h1 (1 device(s))"));
	ck_assert_ptr_nonnull(strstr(text, "FAIL: 1 passed, 1 failed, 1 "
				     "skipped"));
	free(text);
	tmp_path(path, sizeof(path), "junit.xml");
	ck_assert_int_eq(tv_tb_validation_junit(v, path), 0);
	text = read_all(path);
	ck_assert_ptr_nonnull(strstr(text, "scenario: port: x"));
	ck_assert_ptr_nonnull(strstr(text, "<skipped"));
	free(text);
	ck_assert_int_eq(tv_tb_validation_junit(v, "/nonexistent/dir/j.xml"),
			 -ENOENT);

	/* The copy's folder is missing; then report.html is a folder. */
	/* (report.c's tv_tb_json_write: -EIO, or the errno, as it evolves.) */
	rc = tv_tb_validation_write(v, "/nonexistent/dir/c.json");
	ck_assert_msg(rc == -EIO || rc == -ENOENT, "%d", rc);
	snprintf(path, sizeof(path), "%s/report.html", vopts.out_dir);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	ck_assert_int_eq(tv_tb_validation_write(v, NULL), -EISDIR);
	/* No series, one host: the other branch of each. */
	free(v->hosts);
	v->hosts = NULL;
	v->size = 1;
	v->nseries = 0;
	ck_assert_int_eq(rmdir(path), 0);
	ck_assert_int_eq(tv_tb_validation_write(v, NULL), 0);
	text = read_all(path);
	ck_assert_ptr_nonnull(strstr(text, "None ran (see the benchmark "
				     "checks above)."));
	ck_assert_ptr_nonnull(strstr(text, ", 0 device(s), "));
	free(text);
	val_del(v);
	rm_tmpdir();
}
END_TEST

/*
 * A stand-in for `tensorverbs serve` decides by the scenario's file name:
 * every outcome validate tells apart, without a device.
 */
static const char fake_self[] =
	"#!/bin/sh\n"
	"test \"$1\" = serve || exit 9\n"
	"test -n \"$RDMA_DEVICE\" || exit 8\n"
	"case \"${2##*/}\" in\n"
	"*skip*) echo \"SKIP: needs atomics\"; exit 77;;\n"
	"*quiet77*) exit 77;;\n"
	"*fail*) echo \"node $4: FAIL: row 3 wrong\"; exit 3;;\n"
	"fault_read*) echo \"SKIP: no READ faults here\"; exit 77;;\n"
	"*killed*) kill -KILL $$;;\n"
	"*fault*) test \"${11}\" = --faults || exit 5\n"
	"  echo \"node $4: PASS: recovered\"; exit 0;;\n"
	"*) echo \"node $4: starting\"; echo \"node $4: PASS: 2 tensors\"\n"
	"  exit 0;;\n"
	"esac\n";

static void write_sc(const char *dir, const char *name, const char *text)
{
	char path[1400];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	write_file(path, text);
}

START_TEST(test_val_scenarios)
{
	struct tv_tb_validation *v;
	char self[700], sd[700], missing[700], path[800], want[1400], *text;
	json_t *j;
	json_error_t jerr;

	mk_tmpdir();
	v = val_new();
	tmp_path(self, sizeof(self), "tensorverbs");
	write_file(self, fake_self);
	ck_assert_int_eq(chmod(self, 0755), 0);
	tmp_path(sd, sizeof(sd), "sc");
	ck_assert_int_eq(mkdir(sd, 0755), 0);
	tmp_path(missing, sizeof(missing), "missing");
	vdirs[0] = sd;
	vdirs[1] = missing;
	vopts.self = self;

	/* No device: skipped as a whole, faults not tried. */
	val_scenarios(v);
	expect_check(v, "scenario", "every workload's scenarios", VAL_SKIP,
		     "no RDMA device with a RoCE IPv4 address");
	val_faults(v);
	ck_assert_uint_eq(v->nchecks, 1);
	v->nchecks = 0;

	v->ndevs = 1;
	snprintf(v->devs[0].name, sizeof(v->devs[0].name), "fake0");
	snprintf(v->devs[0].ip, sizeof(v->devs[0].ip), "127.0.0.1");
	write_sc(sd, "a_pass.json", "{\"nodes\": 2}");
	write_sc(sd, "b_skip.json", "{\"workload\": \"gather\", \"nodes\": 2}");
	write_sc(sd, "c_quiet77.json", "{\"workload\": \"port\", "
		 "\"nodes\": 1, \"port\": {\"timeout_ns\": 1}}");
	write_sc(sd, "d_fail.json", "{\"nodes\": 3}");
	write_sc(sd, "e_killed.json", "{\"nodes\": 1}");
	write_sc(sd, "f_zero.json", "{\"nodes\": 0}");
	write_sc(sd, "g_many.json", "{\"nodes\": 17}");
	write_sc(sd, "h_broken.json", "{\"nodes\": ");
	write_sc(sd, "basic_transfer.json", "{\"nodes\": 2}");
	write_sc(sd, "not_a_scenario.txt", "{}");
	val_scenarios(v);
	expect_check(v, "scenario", "rendezvous: sc_a_pass", VAL_PASS,
		     "2 processes; 2 tensors");
	expect_check(v, "scenario", "gather: sc_b_skip", VAL_SKIP,
		     "needs atomics");
	expect_check(v, "scenario", "port: sc_c_quiet77", VAL_SKIP,
		     "not for real verbs");
	expect_check(v, "scenario", "rendezvous: sc_d_fail", VAL_FAIL,
		     "3 processes; row 3 wrong (logs: logs/)");
	expect_check(v, "scenario", "rendezvous: sc_e_killed", VAL_FAIL,
		     "1 processes (logs: logs/)");
	expect_check(v, "scenario", "rendezvous: sc_f_zero", VAL_SKIP,
		     "0 nodes");
	expect_check(v, "scenario", "rendezvous: sc_g_many", VAL_SKIP,
		     "17 nodes");
	snprintf(path, sizeof(path), "%s/h_broken.json: not a scenario", sd);
	expect_check(v, "scenario", "sc_h_broken", VAL_FAIL, path);
	expect_check(v, "scenario", missing, VAL_SKIP, "no such folder");
	ck_assert_uint_eq(v->nchecks, 10);  /* and basic_transfer's */

	/* The saved copies: the port and gather timeouts raised for TCG. */
	snprintf(path, sizeof(path), "%s/scenarios/sc_c_quiet77.json", v->dir);
	j = json_load_file(path, 0, &jerr);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(
		j, "port"), "timeout_ns")), 20000000000ll);
	json_decref(j);
	snprintf(path, sizeof(path), "%s/scenarios/sc_b_skip.json", v->dir);
	j = json_load_file(path, 0, &jerr);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(
		j, "gather"), "timeout_ns")), 20000000000ll);
	json_decref(j);
	/* Each node's log, with its device in the environment. */
	snprintf(path, sizeof(path), "%s/logs/sc_d_fail.2.log", v->dir);
	text = read_all(path);
	ck_assert_str_eq(text, "node 2: FAIL: row 3 wrong\n");
	free(text);

	/* The fault scenarios: only those whose file is there. */
	v->nchecks = 0;
	val_faults(v);
	ck_assert_uint_eq(v->nchecks, 1);
	expect_check(v, "fault", "rendezvous: basic_transfer, a QP moved to "
		     "ERR mid-run", VAL_PASS, "2 processes; recovered");
	snprintf(path, sizeof(path), "%s/gather", sd);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	write_sc(path, "quiver_reddit.json", "{\"workload\": \"gather\", "
		 "\"nodes\": 2}");
	write_sc(sd, "basic_transfer.json", "{\"nodes\": 99}");
	v->nchecks = 0;
	val_faults(v);
	ck_assert_uint_eq(v->nchecks, 2);
	expect_check(v, "fault", "rendezvous: basic_transfer, a QP moved to "
		     "ERR mid-run", VAL_SKIP, "99 nodes");
	expect_check(v, "fault", "gather: quiver_reddit, a READ failing "
		     "mid-list", VAL_SKIP, "no READ faults here");

	/* No logs (their folder is gone): no reason quoted.  No folder for
	 * the copies: said so, not "not a scenario". */
	snprintf(path, sizeof(path), "%s/logs", v->dir);
	snprintf(want, sizeof(want), "%s/logs.gone", v->dir);
	ck_assert_int_eq(rename(path, want), 0);
	write_sc(sd, "basic_transfer.json", "{\"nodes\": 2}");
	v->nchecks = 0;
	{
		/* The children write where we do: not into the test's output. */
		int out = dup(1), nul = open("/dev/null", O_WRONLY);

		ck_assert_int_ge(nul, 0);
		dup2(nul, 1);
		val_faults(v);
		dup2(out, 1);
		close(out);
		close(nul);
	}
	expect_check(v, "fault", "rendezvous: basic_transfer, a QP moved to "
		     "ERR mid-run", VAL_PASS, "2 processes");
	snprintf(path, sizeof(path), "%s/scenarios", v->dir);
	snprintf(want, sizeof(want), "%s/scenarios.gone", v->dir);
	ck_assert_int_eq(rename(path, want), 0);
	write_file(path, "not a folder");  /* even root cannot write in it */
	v->nchecks = 0;
	val_faults(v);
	snprintf(want, sizeof(want), "%s/basic_transfer.json: cannot save it "
		 "as %s/scenarios/fault_qp_error.json", sd, v->dir);
	expect_check(v, "scenario", "fault_qp_error", VAL_FAIL, want);

	/* Under mpirun, no device on some rank. */
	v->ndevs = 0;
	v->nchecks = 0;
	v->hosts = calloc(2, sizeof(*v->hosts));
	val_scenarios(v);
	expect_check(v, "scenario", "every workload's scenarios", VAL_SKIP,
		     "no RDMA device with a RoCE IPv4 address on every rank");
	val_del(v);
	tv_tb_validation_free(NULL);
	rm_tmpdir();
}
END_TEST

START_TEST(test_val_run_nodes_refusals)
{
	struct tv_tb_validation *v;
	int worst = -1;

	mk_tmpdir();
	v = val_new();
	ck_assert_int_eq(val_run_nodes(v, "x.json", 2, "t", NULL, &worst),
			 -EINVAL);
	v->ndevs = 1;
	ck_assert_int_eq(val_run_nodes(v, "x.json", 0, "t", NULL, &worst),
			 -EINVAL);
	ck_assert_int_eq(val_run_nodes(v, "x.json", VAL_MAX_PROCS + 1, "t",
				       NULL, &worst), -EINVAL);
	ck_assert_int_eq(worst, -1);
	val_del(v);
	rm_tmpdir();
}
END_TEST

/* The benchmarks' reasons for not running, one host and several. */
START_TEST(test_val_bench_refusals)
{
	struct tv_tb_validation *v;
	char empty[700];

	mk_tmpdir();
	v = val_new();
	val_benchmarks(v);
	expect_check(v, "benchmark", "benchmarks beside perftest", VAL_SKIP,
		     "not asked for (--no-bench)");
	v->nchecks = 0;
	vopts.bench = true;
	val_benchmarks(v);
	expect_check(v, "benchmark", "benchmarks beside perftest", VAL_SKIP,
		     "needs two devices with RoCE IPv4 addresses");
	v->nchecks = 0;
	v->have_pair = true;
	tmp_path(empty, sizeof(empty), "bin");
	ck_assert_int_eq(mkdir(empty, 0755), 0);
	setenv("PATH", empty, 1);
	val_benchmarks(v);
	setenv("PATH", "/usr/bin:/bin", 1);
	expect_check(v, "benchmark", "benchmarks beside perftest", VAL_SKIP,
		     "perftest is not installed (ib_write_bw, ib_read_bw)");
	val_del(v);
	rm_tmpdir();
}
END_TEST

/* Stand-ins for perftest (server: no last address; client: one line of
 * figures) and for `tensorverbs bench`, as TV_FAKE_MODE says. */
static const char fake_perftest[] =
	"#!/bin/sh\n"
	"for a; do last=$a; done\n"
	"test \"$last\" = 127.0.0.1 || exit 0\n"
	"case \" $* \" in *\" -d fake0 -x 3 \"*) ;; *) exit 4;; esac\n"
	"test \"$TV_FAKE_MODE\" = fail && exit 1\n"
	"test \"$TV_FAKE_MODE\" = empty && exit 0\n"
	"prev=; for a; do test \"$prev\" = -s && s=$a; prev=$a; done\n"
	"echo \" #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] "
	"MsgRate[Mpps]\"\n"
	"echo \" $s 500 9.00 8.00 2.500000\"\n";

static const char fake_bench[] =
	"#!/bin/sh\n"
	"test \"$1\" = bench || exit 9\n"
	"test \"$TV_FAKE_MODE\" = fail && test \"$2\" = gather && exit 1\n"
	"test \"$TV_FAKE_MODE\" = empty && exit 0\n"
	"case \"$2\" in\n"
	"rxe) for s in 4096 65536 1048576; do\n"
	"  echo \"bench-rxe bw $s 3000000000\"; done;;\n"
	"port) echo \"bench-port bw 1048576 1500000000\";;\n"
	"gather) echo \"bench-gather 8qp-pl128 5000000\"\n"
	"  echo \"bench-gather 1qp-pl128 1000000\";;\n"
	"esac\n";

static void fake_tool(const char *dir, const char *name, const char *text)
{
	char path[1400];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	write_file(path, text);
	ck_assert_int_eq(chmod(path, 0755), 0);
}

static void run_benchmarks(struct tv_tb_validation *v, const char *mode)
{
	v->nchecks = 0;
	v->nseries = 0;
	setenv("TV_FAKE_MODE", mode, 1);
	val_benchmarks(v);
	unsetenv("TV_FAKE_MODE");
}

START_TEST(test_val_benchmarks)
{
	static const char tool_failed[] = "a tool failed or reported nothing "
		"(logs/bench_%s.log, logs/ib_write_bw_*)";
	struct tv_tb_validation *v;
	char bin[600], self[700], path[1400], want[128];

	mk_tmpdir();
	v = val_new();
	tmp_path(bin, sizeof(bin), "bin");
	ck_assert_int_eq(mkdir(bin, 0755), 0);
	fake_tool(bin, "ib_write_bw", fake_perftest);
	fake_tool(bin, "ib_read_bw", fake_perftest);
	fake_tool(bin, "tensorverbs", fake_bench);
	snprintf(self, sizeof(self), "%s/tensorverbs", bin);
	snprintf(path, sizeof(path), "%s:/usr/bin:/bin", bin);
	setenv("PATH", path, 1);
	vopts.self = self;
	vopts.bench = true;
	v->have_pair = true;
	for (int i = 0; i < 2; i++) {
		snprintf(v->pair[i].name, sizeof(v->pair[i].name), "fake%d", i);
		snprintf(v->pair[i].ip, sizeof(v->pair[i].ip), "127.0.0.1");
		v->pair[i].gid_index = 3;
	}

	run_benchmarks(v, "ok");
	ck_assert_uint_eq(v->nchecks, 3);
	expect_check(v, "benchmark", "bench rxe beside ib_write_bw", VAL_PASS,
		     "1 MiB at 3.00x ib_write_bw");
	expect_check(v, "benchmark", "bench port beside ib_write_bw", VAL_PASS,
		     "1 MiB at 1.50x ib_write_bw");
	expect_check(v, "benchmark", "bench gather beside ib_read_bw",
		     VAL_PASS, "8 QPs x 128: 2.00x ib_read_bw's message rate");
	ck_assert_uint_eq(v->nseries, 3);
	ck_assert_double_eq_tol(v->series[0].ours[0], 3000, 1e-6);
	ck_assert_double_eq_tol(v->series[0].perftest[2], 1000, 1e-6);
	ck_assert_double_eq_tol(v->series[1].ours[0], -1e-6, 1e-12);
	ck_assert_double_eq_tol(v->series[2].ours[1], 1e6, 1e-6);
	ck_assert_double_eq_tol(v->series[2].perftest[1], 2.5e6, 1e-6);

	/* Every tool prints nothing: no ratio, each named a failure. */
	run_benchmarks(v, "empty");
	snprintf(want, sizeof(want), tool_failed, "rxe");
	expect_check(v, "benchmark", "bench rxe beside ib_write_bw", VAL_FAIL,
		     want);
	expect_check(v, "benchmark", "bench gather beside ib_read_bw",
		     VAL_FAIL, "8 QPs x 128: 0.00x ib_read_bw's message rate");

	/* ib_write_bw's client fails every try, our gather fails. */
	run_benchmarks(v, "fail");
	ck_assert_uint_eq(v->nchecks, 3);
	snprintf(want, sizeof(want), tool_failed, "rxe");
	expect_check(v, "benchmark", "bench rxe beside ib_write_bw", VAL_FAIL,
		     want);
	snprintf(want, sizeof(want), tool_failed, "port");
	expect_check(v, "benchmark", "bench port beside ib_write_bw", VAL_FAIL,
		     want);
	expect_check(v, "benchmark", "bench gather beside ib_read_bw",
		     VAL_FAIL, "a tool failed (logs/bench_gather.log, "
		     "logs/ib_read_bw_*)");
	ck_assert_uint_eq(v->nseries, 0);
	setenv("PATH", "/usr/bin:/bin", 1);
	val_del(v);
	rm_tmpdir();
}
END_TEST

/* The whole of validate on a host without the asked-for device, with a
 * bad RDMA_* variable; and an output folder that cannot be made. */
START_TEST(test_val_no_device)
{
	struct tv_tb_validation *v = NULL;
	struct tv_tb_validate_opts o = { 0 };
	const char *dirs[] = { NULL, NULL };
	char out[700], file[600];
	bool listed_none = false;

	mk_tmpdir();
	tmp_path(out, sizeof(out), "val");
	tmp_path(file, sizeof(file), "sc");
	ck_assert_int_eq(mkdir(file, 0755), 0);
	dirs[0] = file;
	o.out_dir = out;
	o.scenario_dirs = dirs;
	o.self = "/bin/false";
	o.timeout_s = 5;
	setenv("RDMA_DEVICE", "tv-no-such-device", 1);
	setenv("RDMA_QP_SL", "9", 1);
	ck_assert_int_eq(tv_tb_validate(&o, &v), 0);
	ck_assert_ptr_nonnull(v);
	expect_check(v, "config", "RDMA_* variables", VAL_FAIL,
		     "RDMA_QP_SL=9: out of range, valid values are 0..7");
	expect_check(v, "scenario", "every workload's scenarios", VAL_SKIP,
		     "no RDMA device with a RoCE IPv4 address");
	expect_check(v, "benchmark", "benchmarks beside perftest", VAL_SKIP,
		     "not asked for (--no-bench)");
	for (size_t i = 0; i < v->nchecks; i++)
		if (!strcmp(v->checks[i].group, "device"))
			listed_none = v->checks[i].status == VAL_FAIL;
	ck_assert(listed_none);
	ck_assert_uint_eq(v->ndevs, 0);
	ck_assert_uint_ge(tv_tb_validation_failed(v), 2);
	tv_tb_validation_free(v);
	unsetenv("RDMA_QP_SL");

	v = NULL;
	tmp_path(file, sizeof(file), "a_file");
	write_file(file, "x");
	snprintf(out, sizeof(out), "%s/sub", file);
	ck_assert_int_eq(tv_tb_validate(&o, &v), -ENOTDIR);
	ck_assert_ptr_null(v);
	rm_tmpdir();
}
END_TEST

#define ADD(t) do { tc = tcase_create(#t); tcase_set_timeout(tc, 60); \
		    tcase_add_test(tc, t); suite_add_tcase(s, tc); } while (0)

static Suite *suite(void)
{
	Suite *s = suite_create("testbed_host_cov");
	TCase *tc;

	ADD(test_coord_bad_hello);
	ADD(test_coord_duplicate_join);
	ADD(test_coord_fingerprint_lie);
	ADD(test_coord_stats_lies);
	ADD(test_coord_ag_root_refusals);
	ADD(test_coord_oversized_line);
	ADD(test_coord_death_mid_barrier);
	ADD(test_coord_reset_peer);
	ADD(test_coord_too_many_connections);
	ADD(test_coord_leaf_refusals);
	ADD(test_coord_leaf_root_gone);
	ADD(test_coord_leaf_reset_before_join);
	ADD(test_coord_leaf_before_root);
	ADD(test_coord_edges);
	ADD(test_peers_refusals);
	ADD(test_mpi_outside_mpirun);
	ADD(test_record_unwritable);
	ADD(test_record_two_threads);
	ADD(test_val_helpers);
	ADD(test_val_signal);
	ADD(test_val_report);
	ADD(test_val_scenarios);
	ADD(test_val_run_nodes_refusals);
	ADD(test_val_bench_refusals);
	ADD(test_val_device_checks);
	ADD(test_val_benchmarks);
	ADD(test_val_no_device);
	return s;
}

int main(void)
{
	return tv_check_main(suite());
}
