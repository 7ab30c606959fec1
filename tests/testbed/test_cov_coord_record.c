/*
 * The arms of serve's coordinator (testbed/coord.c) and of the recorder
 * (testbed/record.c) no other suite takes (issue 24).
 *
 * Coordinator, on loopback against raw peers and a fake node 0: IPv6,
 * a STATS line too long to queue (sticky), no file descriptors left, a
 * node that comes back after the run stopped, an all-gather blob at and
 * past its limit, a first hex digit that is not one, an empty blob of
 * node 0's own, a second start once done, a leaf whose node 0 went away
 * (no retry) or closed before its WELCOME (retry), a leaf with output
 * waiting, a node 0 address no TCP connection can reach, and a blob
 * that cannot be queued for memory.
 *
 * Recorder: a tap of no nodes, a buffer that lost a record with a file
 * that cannot be written either (the first error wins), threads'
 * buffers with no memory to merge them, and merges of odd recordings
 * (no summary fields, ties inside one file, a node that is not a
 * number, a line that is no event, no input at all).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include <tensorverbs/testbed.h>

#include "common/check_main.h"
#include "common/tb_files.h"
#include "coord.h"
#include "common/coord_peer.h"
#include "tb_int.h"

#define AG_CHUNK 192          /* coord.c's bytes per all-gather line */

/* Address-space limits break the sanitizers' shadow memory. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TV_NO_AS_LIMIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define TV_NO_AS_LIMIT 1
#endif
#endif


static bool slot1_taken(struct coord *c)
{
	return c->peers[1].fd >= 0;
}

static bool has_blob1(struct coord *c)
{
	return c->ag_have[1];
}

static bool leaf_closed(struct coord *c)
{
	return c->peers[0].fd < 0;
}

/* Node 0 of nodes, and a raw peer that joined as node 1 (WELCOME read). */
static void root_and_node1(struct coord *root, struct raw *r, uint32_t nodes)
{
	uint16_t port = free_port();
	struct coord *cs[] = { root };

	node_init(root, 0, nodes, port, 1);
	raw_connect(r, port);
	raw_send(r, "HELLO 1 000000000000002a\n");
	pump_until(cs, 1, has_hello1, root);
	if (nodes == 2)
		expect_line(r, cs, 1, "WELCOME");
}

/* ---- a fake node 0 for a leaf ------------------------------------------------ */


/* ---- node 0 and its nodes ------------------------------------------------------ */

/*
 * Over IPv6 loopback (the other address length): a node joins and both
 * pass a barrier.  Where the host has no IPv6, node 0 says it cannot
 * listen, naming why.
 */
START_TEST(test_coord_ipv6)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct coord root, leaf;
	struct coord *cs[] = { &root, &leaf };
	char msg[256] = "";
	int rc;

	a.sin6_port = htons(free_port());
	rc = coord_init(&root, 0, 2, (struct sockaddr *)&a, FP, 1, msg,
			sizeof(msg));
	if (rc) {
		ck_assert_msg(rc == -EAFNOSUPPORT || rc == -EADDRNOTAVAIL ||
			      rc == -EADDRINUSE, "rc %d", rc);
		ck_assert_msg(strncmp(msg, "coordinator: cannot listen (TCP): ",
				      34) == 0, "%s", msg);
		coord_fini(&root);
		return;
	}
	ck_assert_int_eq(coord_init(&leaf, 1, 2, (struct sockaddr *)&a, FP, 1,
				    msg, sizeof(msg)), 0);
	ck_assert_uint_eq(leaf.addr0.ss_family, AF_INET6);
	pump_until(cs, 2, is_joined, &leaf);
	ck_assert(root.joined);
	ck_assert_int_eq(coord_barrier_enter(&leaf, 1), 0);
	ck_assert_int_eq(coord_barrier_enter(&root, 1), 0);
	while (!coord_barrier_done(&leaf, 1))
		pump(cs, 2);
	ck_assert(coord_barrier_done(&root, 1));
	ck_assert(!root.aborted && !leaf.aborted);
	coord_fini(&leaf);
	coord_fini(&root);
}
END_TEST

/* nstats values whose STATS line is exactly len bytes with its newline. */
static uint64_t *stats_of_line(size_t nstats, size_t len)
{
	uint64_t *v = calloc(nstats, sizeof(*v));
	/* "STATS" + " 0" each + "\n", then widen values to reach len. */
	size_t have = 5 + 2 * nstats + 1;

	ck_assert_ptr_nonnull(v);
	ck_assert_uint_le(have, len);
	for (size_t i = 0; i < nstats && have < len; i++) {
		size_t more = len - have < 19 ? len - have : 19;
		uint64_t x = 1;

		for (size_t d = 0; d < more; d++)
			x *= 10;   /* 1 followed by more zeros: more + 1 digits */
		v[i] = x;
		have += more;
	}
	ck_assert_uint_eq(have, len);
	return v;
}

/*
 * A STATS line one byte past what a line may carry (coord_send_stats()
 * counts the values alone; with "STATS" and the newline the line does
 * not fit, so the queueing refuses it): -EMSGSIZE, and as the
 * line is lost for good every later call says so: polls, the barrier
 * (never done), the all-gather (never taken).  One byte shorter queues.
 */
START_TEST(test_coord_stats_line_too_long)
{
	const size_t cap = COORD_MSG_MAX * 8, nstats = 200;
	struct coord leaf;
	uint64_t *v;
	uint8_t **b = NULL;
	size_t *l = NULL;

	node_init(&leaf, 1, 2, free_port(), nstats);
	v = stats_of_line(nstats, cap - 1);
	ck_assert_int_eq(coord_send_stats(&leaf, v), 0);
	ck_assert_uint_eq(leaf.peers[0].out_len, cap - 1);
	ck_assert_int_eq(coord_error(&leaf), 0);
	free(v);
	coord_fini(&leaf);

	node_init(&leaf, 1, 2, free_port(), nstats);
	v = stats_of_line(nstats, cap);
	ck_assert_int_eq(coord_send_stats(&leaf, v), -EMSGSIZE);
	ck_assert_uint_eq(leaf.peers[0].out_len, 0);
	ck_assert_int_eq(coord_error(&leaf), -EMSGSIZE);
	ck_assert_int_eq(coord_poll(&leaf, mono_ns()), -EMSGSIZE);
	ck_assert_int_eq(leaf.peers[0].fd, -1);  /* not even connected */
	leaf.bar_done = 1;
	ck_assert(!coord_barrier_done(&leaf, 1));
	leaf.ag_done = true;
	ck_assert(!coord_ag_done(&leaf));
	ck_assert_int_eq(coord_ag_take(&leaf, &b, &l), -EMSGSIZE);
	ck_assert_ptr_null(b);
	ck_assert_ptr_null(l);
	free(v);
	coord_fini(&leaf);
}
END_TEST

/*
 * No file descriptor left: node 0 cannot listen (named), has nothing to
 * poll; a leaf cannot make its socket yet and simply tries again later.
 */
START_TEST(test_coord_no_fds)
{
	struct sockaddr_storage a = addr_of(free_port());
	struct rlimit old, low;
	struct coord root, leaf;
	struct pollfd pfd[4];
	char msg[256] = "";
	int dups[64], ndup = 0, rc_root, npfd, rc_poll;
	int src = open("/dev/null", O_RDONLY | O_CLOEXEC);
	uint64_t wake = 0, now = mono_ns();

	ck_assert_int_ge(src, 0);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 48;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (ndup < 64 && (dups[ndup] = dup(src)) >= 0)
		ndup++;
	rc_root = coord_init(&root, 0, 2, (struct sockaddr *)&a, FP, 1, msg,
			     sizeof(msg));
	npfd = coord_pollfds(&root, pfd, 4, &wake);
	node_init(&leaf, 1, 2, ntohs(((struct sockaddr_in *)&a)->sin_port),
		  1);
	rc_poll = coord_poll(&leaf, now);
	/* Check reports through descriptors of its own: give them back. */
	while (ndup)
		close(dups[--ndup]);
	close(src);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);

	ck_assert_int_eq(rc_root, -EMFILE);
	ck_assert_str_eq(msg, "coordinator: cannot listen (TCP): Too many "
			 "open files");
	ck_assert_int_eq(root.listen_fd, -1);
	ck_assert_int_eq(npfd, 0);
	ck_assert_uint_eq(wake, UINT64_MAX);
	ck_assert_int_eq(rc_poll, 0);
	ck_assert_int_eq(leaf.peers[0].fd, -1);
	ck_assert_uint_eq(leaf.next_connect_ns, now + RETRY_NS);
	ck_assert(!leaf.aborted);
	coord_fini(&leaf);
	coord_fini(&root);
}
END_TEST

/*
 * Node 1 dies after everyone joined and sent its statistics (the run
 * stops), then a process says HELLO as node 1 again: it gets the slot,
 * but no second WELCOME into a run that already stopped, nor the dead
 * one's statistics (or buffers: they are freed); the first reason stays.
 */
START_TEST(test_coord_hello_after_join)
{
	static const char want[] = "node 1's coordinator connection closed "
		"(the process died?)";
	struct coord root;
	struct coord *cs[] = { &root };
	struct raw r, again;

	root_and_node1(&root, &r, 2);
	ck_assert(root.joined);
	raw_send(&r, "STATS 7\n");
	pump_until(cs, 1, has_stats1, &root);
	ck_assert_uint_eq(coord_stats(&root, 1)[0], 7);
	close(r.fd);
	pump_until(cs, 1, is_aborted, &root);
	ck_assert_str_eq(root.abort_msg, want);
	ck_assert_int_eq(root.peers[1].fd, -1);
	raw_connect(&again, ntohs(((struct sockaddr_in *)&root.addr0)
					  ->sin_port));
	raw_send(&again, "HELLO 1 000000000000002a\n");
	pump_until(cs, 1, slot1_taken, &root);
	ck_assert(root.peers[1].hello);
	ck_assert_uint_eq(root.peers[1].out_len, 0);
	ck_assert_ptr_null(coord_stats(&root, 1));
	ck_assert(root.joined);
	ck_assert_str_eq(root.abort_msg, want);
	close(again.fd);
	coord_fini(&root);
}
END_TEST

/* "AG 1 " + len bytes of 0x5a in hex + "\n", appended at *pos. */
static void ag_line(char *buf, size_t *pos, size_t len)
{
	*pos += (size_t)sprintf(buf + *pos, "AG 1 ");
	for (size_t i = 0; i < len; i++) {
		buf[(*pos)++] = '5';
		buf[(*pos)++] = 'a';
	}
	buf[(*pos)++] = '\n';
}

static bool blob1_full(struct coord *c)
{
	return c->ag_len[1] == COORD_AG_MAX || c->aborted;
}

/*
 * A node's blob may be COORD_AG_MAX bytes and no more: node 0 keeps
 * exactly that many, and one byte past it is malformed (a bad digit in
 * a pair's first place: test_testbed_host_cov's refusals).
 */
START_TEST(test_coord_ag_blob_limit)
{
	const size_t full = COORD_AG_MAX / AG_CHUNK, rest = COORD_AG_MAX % AG_CHUNK;
	struct coord root;
	struct coord *cs[] = { &root };
	struct raw r;
	size_t pos = 0;
	char *buf = malloc((full + 1) * (2 * AG_CHUNK + 8));

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < full; i++)
		ag_line(buf, &pos, AG_CHUNK);
	ag_line(buf, &pos, rest);
	root_and_node1(&root, &r, 2);
	raw_send_n(&r, cs, 1, buf, pos);
	pump_until(cs, 1, blob1_full, &root);
	ck_assert(!root.aborted);
	ck_assert_uint_eq(root.ag_len[1], COORD_AG_MAX);
	ck_assert_uint_eq(root.ag_blob[1][COORD_AG_MAX - 1], 0x5a);
	raw_send(&r, "AG 1 00\n");
	pump_until(cs, 1, is_aborted, &root);
	ck_assert_str_eq(root.abort_msg, "node 0: a malformed all-gather "
			 "line from node 1");
	ck_assert_uint_eq(root.ag_len[1], COORD_AG_MAX);
	close(r.fd);
	coord_fini(&root);
	free(buf);
}
END_TEST

/*
 * Node 0 publishes an empty blob (node 1 did too): everyone gets two
 * empty blobs and the end.  Starting again before taking the result
 * sends nothing more: the round is done.
 */
START_TEST(test_coord_ag_empty_root)
{
	struct coord root;
	struct coord *cs[] = { &root };
	struct raw r;
	uint8_t **b;
	size_t *l;

	root_and_node1(&root, &r, 2);
	raw_send(&r, "AGEND 1\n");
	pump_until(cs, 1, has_blob1, &root);
	ck_assert(!coord_ag_done(&root));
	ck_assert_int_eq(coord_ag_start(&root, "", 0), 0);
	ck_assert_ptr_nonnull(root.ag_blob[0]);
	ck_assert_uint_eq(root.ag_len[0], 0);
	ck_assert(coord_ag_done(&root));
	expect_line(&r, cs, 1, "AGBEND 1 0");
	expect_line(&r, cs, 1, "AGBEND 1 1");
	expect_line(&r, cs, 1, "AGDONE 1");
	ck_assert_uint_eq(root.peers[1].out_len, 0);
	ck_assert_int_eq(coord_ag_start(&root, "", 0), 0);
	ck_assert_uint_eq(root.peers[1].out_len, 0);
	ck_assert(coord_ag_done(&root));
	ck_assert_int_eq(coord_ag_take(&root, &b, &l), 0);
	ck_assert_uint_eq(l[0], 0);
	ck_assert_uint_eq(l[1], 0);
	ck_assert_uint_eq(root.ag_seq, 2);
	for (int i = 0; i < 2; i++)
		free(b[i]);
	free(b);
	free(l);
	close(r.fd);
	coord_fini(&root);
}
END_TEST

/* ---- a leaf ---------------------------------------------------------------- */

/*
 * Node 0 goes away after the WELCOME: the leaf stops and, as it joined,
 * never connects again (nothing to wait for, no wake-up time).
 */
START_TEST(test_coord_leaf_no_retry_after_join)
{
	struct coord leaf;
	struct coord *cs[] = { &leaf };
	struct fake_root f;
	struct pollfd pfd[2];
	uint64_t wake = 0;

	leaf_joined(&leaf, &f, 2);
	close(f.conn.fd);
	f.conn.fd = -1;
	pump_until(cs, 1, is_aborted, &leaf);
	ck_assert_str_eq(leaf.abort_msg, "node 0's coordinator connection "
			 "closed (the process died?)");
	ck_assert_int_eq(coord_pollfds(&leaf, pfd, 2, &wake), 0);
	ck_assert_uint_eq(wake, UINT64_MAX);
	ck_assert_int_eq(coord_poll(&leaf, mono_ns() + 10 * RETRY_NS), 0);
	ck_assert_int_eq(leaf.peers[0].fd, -1);
	ck_assert_int_eq(accept4(f.lfd, NULL, NULL, SOCK_NONBLOCK), -1);
	ck_assert_int_eq(errno, EAGAIN);
	coord_fini(&leaf);
	fake_root_close(&f);
}
END_TEST

/*
 * Node 0 closes (an orderly end of file, not a reset) before its
 * WELCOME: the leaf is not stopped, it connects again, says HELLO again
 * and joins.
 */
START_TEST(test_coord_leaf_eof_before_join)
{
	struct coord leaf;
	struct coord *cs[] = { &leaf };
	struct fake_root f;

	fake_listen(&f);
	node_init(&leaf, 1, 2, f.port, 1);
	fake_accept(&f, &leaf);
	close(f.conn.fd);
	pump_until(cs, 1, leaf_closed, &leaf);
	ck_assert(!leaf.aborted);
	fake_accept(&f, &leaf);
	raw_send(&f.conn, "WELCOME\n");
	pump_until(cs, 1, is_joined, &leaf);
	ck_assert(!leaf.aborted);
	coord_fini(&leaf);
	fake_root_close(&f);
}
END_TEST

/* A BAR waiting to go out: the leaf's descriptor asks for POLLOUT too. */
START_TEST(test_coord_leaf_pollout)
{
	struct coord leaf;
	struct coord *cs[] = { &leaf };
	struct fake_root f;
	struct pollfd pfd[2];
	uint64_t wake = 0;

	leaf_joined(&leaf, &f, 2);
	ck_assert_int_eq(coord_pollfds(&leaf, pfd, 2, &wake), 1);
	ck_assert_int_eq(pfd[0].events, POLLIN);
	ck_assert_int_eq(coord_barrier_enter(&leaf, 1), 0);
	ck_assert_int_eq(coord_pollfds(&leaf, pfd, 2, &wake), 1);
	ck_assert_int_eq(pfd[0].fd, leaf.peers[0].fd);
	ck_assert_int_eq(pfd[0].events, POLLIN | POLLOUT);
	ck_assert_uint_eq(wake, UINT64_MAX);
	expect_line(&f.conn, cs, 1, "BAR 1");
	ck_assert_int_eq(coord_pollfds(&leaf, pfd, 2, &wake), 1);
	ck_assert_int_eq(pfd[0].events, POLLIN);
	coord_fini(&leaf);
	fake_root_close(&f);
}
END_TEST

/*
 * Node 0's address is one TCP refuses at once (the broadcast address:
 * connect fails before any packet): the leaf closes its socket, is not
 * stopped, and says when it tries again.
 */
START_TEST(test_coord_leaf_unreachable)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(9) };
	struct coord leaf;
	struct pollfd pfd[2];
	char msg[64];
	uint64_t wake = 0, now = mono_ns();

	a.sin_addr.s_addr = htonl(INADDR_BROADCAST);
	ck_assert_int_eq(coord_init(&leaf, 1, 2, (struct sockaddr *)&a, FP, 1,
				    msg, sizeof(msg)), 0);
	ck_assert_int_eq(coord_poll(&leaf, now), 0);
	ck_assert_int_eq(leaf.peers[0].fd, -1);
	ck_assert_uint_eq(leaf.peers[0].out_len, 0);
	ck_assert_uint_eq(leaf.next_connect_ns, now + RETRY_NS);
	ck_assert(!leaf.aborted);
	ck_assert_int_eq(coord_pollfds(&leaf, pfd, 2, &wake), 0);
	ck_assert_uint_eq(wake, now + RETRY_NS);
	/* Not before its time, then again (and refused again). */
	ck_assert_int_eq(coord_poll(&leaf, now + RETRY_NS - 1), 0);
	ck_assert_uint_eq(leaf.next_connect_ns, now + RETRY_NS);
	ck_assert_int_eq(coord_poll(&leaf, now + RETRY_NS), 0);
	ck_assert_uint_eq(leaf.next_connect_ns, now + 2 * RETRY_NS);
	ck_assert_int_eq(leaf.peers[0].fd, -1);
	coord_fini(&leaf);
}
END_TEST

#ifndef TV_NO_AS_LIMIT
/* Bytes of address space this process maps now. */
static rlim_t mapped_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long pages = 0;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%lu", &pages), 1);
	fclose(f);
	return (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
}

/* Address space from now on: what is mapped and extra bytes more. */
static void limit_as(struct rlimit *old, rlim_t extra)
{
	struct rlimit low;

	ck_assert_int_eq(getrlimit(RLIMIT_AS, old), 0);
	low = *old;
	low.rlim_cur = mapped_bytes() + extra;
	ck_assert(old->rlim_cur == RLIM_INFINITY ||
		  old->rlim_cur > low.rlim_cur);
	ck_assert_int_eq(setrlimit(RLIMIT_AS, &low), 0);
}

/*
 * A leaf's blob of COORD_AG_MAX bytes cannot be queued (memory runs out
 * half way): -ENOMEM, and since part of it is lost for good, every
 * later poll says so.
 */
START_TEST(test_coord_ag_queue_no_memory)
{
	struct rlimit old;
	struct coord leaf;
	uint8_t *blob = calloc(COORD_AG_MAX, 1);
	int rc;

	ck_assert_ptr_nonnull(blob);
	node_init(&leaf, 1, 2, free_port(), 1);
	limit_as(&old, 1u << 20);
	rc = coord_ag_start(&leaf, blob, COORD_AG_MAX);
	ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_uint_gt(leaf.peers[0].out_len, 0);
	ck_assert_uint_lt(leaf.peers[0].out_len, 2 * COORD_AG_MAX);
	ck_assert_int_eq(coord_error(&leaf), -ENOMEM);
	ck_assert_int_eq(coord_poll(&leaf, mono_ns()), -ENOMEM);
	coord_fini(&leaf);
	free(blob);
}
END_TEST
#endif /* !TV_NO_AS_LIMIT */

/* ---- the recorder ---------------------------------------------------------------- */

static const char basic[] =
	"{\"name\": \"b\", \"nodes\": 2, \"steps\": [{\"sends\": [{\"from\": 0,"
	" \"to\": 1, \"name\": \"t\", \"dtype\": \"float\", \"shape\": [8]}],"
	" \"recvs\": [{\"node\": 1, \"from\": 0, \"name\": \"t\"}]}]}";

/* A tap of no nodes: none to attach, and its file is the header alone. */
START_TEST(test_tap_no_nodes)
{
	struct tv_tb_tap *t;
	char path[128], *text;
	size_t events = 99;

	mk_tmpdir();
	ck_assert_int_eq(tv_tb_tap_create(0, &t), 0);
	ck_assert_uint_eq(t->nnodes, 0);
	ck_assert_ptr_nonnull(t->nodes);
	ck_assert_int_eq(tv_tb_tap_attach(t, 0, NULL), -EINVAL);
	tmp_path(path, sizeof(path), "none.jsonl");
	ck_assert_int_eq(tv_tb_tap_write(t, path, &events), 0);
	ck_assert_uint_eq(events, 0);
	text = read_all(path);
	ck_assert_str_eq(text, "{\"tensorverbs_bench_recording\":1}\n");
	free(text);
	tv_tb_tap_free(t);
	rm_tmpdir();
}
END_TEST

/* One step recorded into t's buffer, which then lost a record. */
static void lose_a_record(struct tv_tb_tap *t)
{
	tb_tap_step(t, 0, 1, t->t0_ns + 5);
	ck_assert_ptr_nonnull(t->bufs);
	ck_assert_uint_eq(t->bufs->n, 1);
	t->bufs->err = -ENOMEM;
}

/*
 * A thread's buffer lost a record and the file cannot be written either
 * (/dev/full): the lost record is what each write reports, not the
 * disk; nothing is handed out.
 */
START_TEST(test_record_lost_record_first)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_tap *t;
	char err[TV_TB_ERR_MAX], *buf = NULL;
	size_t events = 99, len = 77;

	ck_assert_int_eq(tv_tb_tap_create(1, &t), 0);
	lose_a_record(t);
	ck_assert_int_eq(tv_tb_tap_write(t, "/dev/full", &events), -ENOMEM);
	ck_assert_uint_eq(events, 99);
	ck_assert_int_eq(t->err, -ENOMEM);  /* sticky */
	tv_tb_tap_free(t);

	ck_assert_int_eq(tv_tb_scenario_load_string(basic, "b", &sc, err), 0);
	ck_assert_int_eq(tv_tb_record_create("/dev/full", sc, NULL, 1, "sim",
					     &t), 0);
	lose_a_record(t);
	ck_assert_int_eq(tv_tb_record_finish(t, &(struct tv_tb_result){ 0 },
					     &(struct tv_tb_failures){ 0 }),
			 -ENOMEM);
	ck_assert_int_eq(tv_tb_record_create("unused.jsonl", sc, NULL, 1,
					     "ibverbs", &t), 0);
	lose_a_record(t);
	ck_assert_int_eq(tb_record_finish_mem(t, &(struct tv_tb_result){ 0 },
					      &(struct tv_tb_failures){ 0 },
					      &buf, &len), -ENOMEM);
	ck_assert_ptr_null(buf);
	ck_assert_uint_eq(len, 77);
	ck_assert_int_eq(access("unused.jsonl", F_OK), -1);
	tv_tb_scenario_free(sc);
}
END_TEST

#ifndef TV_NO_AS_LIMIT
#define STEPS 8192

static void *steps_fn(void *arg)
{
	struct tv_tb_tap *t = arg;

	for (uint64_t i = 0; i < STEPS; i++)
		tb_tap_step(t, 0, i, t->t0_ns + 2 * i + 1);
	return NULL;
}

/*
 * Two threads' buffers, and no memory to merge them into one time
 * order: the write fails with -ENOMEM (sticky), counting no events,
 * rather than leaving one thread's records out.
 */
START_TEST(test_tap_collect_no_memory)
{
	struct tv_tb_tap *t;
	struct rlimit old;
	pthread_t th;
	char path[128], *text;
	size_t events = 99;
	int rc;

	/* One malloc arena: a thread's own would serve the merge instead. */
	ck_assert_int_eq(mallopt(M_ARENA_MAX, 1), 1);
	mk_tmpdir();
	tmp_path(path, sizeof(path), "tap.jsonl");
	ck_assert_int_eq(tv_tb_tap_create(1, &t), 0);
	for (uint64_t i = 0; i < STEPS; i++)
		tb_tap_step(t, 0, i, t->t0_ns + 2 * i);
	ck_assert_int_eq(pthread_create(&th, NULL, steps_fn, t), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_ptr_nonnull(t->bufs);
	ck_assert_ptr_nonnull(t->bufs->next);
	/* Room for the file, not for the 2 * STEPS records merged. */
	limit_as(&old, 256u << 10);
	rc = tv_tb_tap_write(t, path, &events);
	ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_uint_eq(events, 99);
	ck_assert_int_eq(t->err, -ENOMEM);
	text = read_all(path);  /* opened and begun: the merge failed */
	ck_assert_str_eq(text, "{\"tensorverbs_bench_recording\":1}\n");
	free(text);
	ck_assert_int_eq(tv_tb_tap_write(t, path, &events), -ENOMEM);
	tv_tb_tap_free(t);
	rm_tmpdir();
}
END_TEST
#endif /* !TV_NO_AS_LIMIT */

/* ---- merging ------------------------------------------------------------------ */

/* The recording at path as an array of its lines' objects. */
static json_t *rec_load(const char *path)
{
	char *text = read_all(path);
	int n = count_lines(text);
	json_t *a = json_array();

	for (int i = 0; i < n; i++) {
		char *l = line_of(text, i);
		json_t *j = json_loads(l, 0, NULL);

		ck_assert_ptr_nonnull(j);
		json_array_append_new(a, j);
		free(l);
	}
	free(text);
	return a;
}

static void rec_save(json_t *a, const char *path)
{
	FILE *f = fopen(path, "w");
	size_t i;
	json_t *j;

	ck_assert_ptr_nonnull(f);
	json_array_foreach(a, i, j) {
		ck_assert_int_eq(json_dumpf(j, f, JSON_COMPACT |
					    JSON_PRESERVE_ORDER), 0);
		fputc('\n', f);
	}
	ck_assert_int_eq(fclose(f), 0);
}

static json_t *rec_hdr(json_t *a)
{
	return json_object_get(json_array_get(a, 0), "recording");
}

static json_t *rec_sum(json_t *a)
{
	return json_array_get(a, json_array_size(a) - 1);
}

/* A sim recording of basic as one node's: node, host and start time. */
static json_t *node_rec(const char *src, int node, int64_t t0)
{
	json_t *a = rec_load(src), *rec = rec_hdr(a);

	ck_assert_ptr_nonnull(rec);
	json_object_set_new(rec, "node", json_integer(node));
	json_object_set_new(rec, "host", json_string("h"));
	json_object_set_new(rec, "t0_monotonic_ns", json_integer(t0));
	ck_assert(json_is_true(json_object_get(rec_sum(a), "summary")));
	return a;
}

/* The merged file's lines between header and summary, and its summary. */
static json_t *merged(const char *path, json_t **sum_p)
{
	json_t *a = rec_load(path);

	*sum_p = json_incref(rec_sum(a));
	json_array_remove(a, json_array_size(a) - 1);
	json_array_remove(a, 0);
	return a;
}

/*
 * Summaries without a result or failure lists, or with ones of the
 * wrong type, merge as a pass with no failures (nothing to add); events
 * of one file at the same time keep that file's order.
 */
START_TEST(test_merge_odd_summaries_and_ties)
{
	char src[128], pa[128], pb[128], out[128], err[1024];
	const char *paths[2] = { pa, pb };
	json_t *a, *b, *sa, *sb, *ev, *sum, *m;
	size_t na, i;
	int next_tag = 0;

	mk_tmpdir();
	record_text(basic, "src.jsonl", 1, "sim", src, sizeof(src));
	a = node_rec(src, 0, 0);
	b = node_rec(src, 1, 0);
	na = json_array_size(a) - 2;
	ck_assert_uint_ge(na, 2);
	/* Every event of a at t 7, tagged in file order; b's far later. */
	for (i = 1; i <= na; i++) {
		ev = json_array_get(a, i);
		json_object_set_new(ev, "t", json_integer(7));
		json_object_set_new(ev, "tag", json_integer((json_int_t)i));
	}
	for (i = 1; i + 1 < json_array_size(b); i++)
		json_object_set_new(json_array_get(b, i), "t",
				    json_integer(1000000 + (json_int_t)i));
	sa = rec_sum(a);
	json_object_del(sa, "result");
	json_object_del(sa, "failure_kinds");
	json_object_del(sa, "failures");
	json_object_set_new(sa, "failure_count", json_integer(2));
	sb = rec_sum(b);
	json_object_set_new(sb, "result", json_integer(1));
	json_object_set_new(sb, "failure_kinds", json_string("many"));
	json_object_set_new(sb, "failures", json_object());
	json_object_set_new(sb, "failure_count", json_integer(3));
	tmp_path(pa, sizeof(pa), "a.jsonl");
	tmp_path(pb, sizeof(pb), "b.jsonl");
	tmp_path(out, sizeof(out), "m.jsonl");
	rec_save(a, pa);
	rec_save(b, pb);
	ck_assert_int_eq(tv_tb_record_merge(out, paths, 2, err, sizeof(err)), 0);
	m = merged(out, &sum);
	ck_assert_uint_eq(json_array_size(m), na + json_array_size(b) - 2);
	json_array_foreach(m, i, ev) {
		ck_assert_int_eq(json_integer_value(json_object_get(ev, "i")),
				 (json_int_t)i);
		if (i < na) {
			ck_assert_int_eq(json_integer_value(json_object_get(ev,
								"t")), 7);
			ck_assert_int_eq(json_integer_value(json_object_get(ev,
								"tag")), ++next_tag);
		}
	}
	ck_assert_str_eq(json_string_value(json_object_get(sum, "result")),
			 "PASS");
	ck_assert_int_eq(json_integer_value(json_object_get(sum,
							    "failure_count")), 5);
	ck_assert_uint_eq(json_array_size(json_object_get(sum, "failure_kinds")),
			  0);
	ck_assert_uint_eq(json_array_size(json_object_get(sum, "failures")), 0);
	json_decref(sum);
	json_decref(m);
	json_decref(a);
	json_decref(b);
	rm_tmpdir();
}
END_TEST

/*
 * Refusals: a header whose node is no number counts as node 0 (so two
 * such are one node twice); a line that is not an event; no input at
 * all, from files or from memory.
 */
START_TEST(test_merge_refusals)
{
	char src[128], pa[128], pb[128], out[128], err[1024], want[512];
	const char *paths[2] = { pa, pb };
	json_t *a, *b;
	int n;

	mk_tmpdir();
	record_text(basic, "src.jsonl", 1, "sim", src, sizeof(src));
	tmp_path(pa, sizeof(pa), "a.jsonl");
	tmp_path(pb, sizeof(pb), "b.jsonl");
	tmp_path(out, sizeof(out), "m.jsonl");
	a = node_rec(src, 0, 0);
	b = node_rec(src, 1, 0);
	json_object_set_new(rec_hdr(b), "node", json_string("one"));
	rec_save(a, pa);
	rec_save(b, pb);
	snprintf(want, sizeof(want), "%s: node 0 again (%s has it): one "
		 "recording per node", pb, pa);
	ck_assert_int_eq(tv_tb_record_merge(out, paths, 2, err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, want);

	/* Line 3 (after the header and one event): an object, no event. */
	json_array_insert_new(b, 2, json_pack("{s:s}", "note", "hello"));
	json_object_set_new(rec_hdr(b), "node", json_integer(1));
	rec_save(b, pb);
	n = snprintf(want, sizeof(want), "%s:3: not an event of a recording", pb);
	ck_assert_int_eq(tv_tb_record_merge(out, paths, 2, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strncmp(err, want, (size_t)n) == 0, "%s", err);
	ck_assert_int_eq(access(out, F_OK), -1);

	ck_assert_int_eq(tv_tb_record_merge(out, paths, 0, err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "no recordings to merge");
	ck_assert_int_eq(tb_record_merge_mem(out, NULL, NULL, 0, err,
					     sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "no recordings to merge");
	ck_assert_int_eq(access(out, F_OK), -1);
	json_decref(a);
	json_decref(b);
	rm_tmpdir();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cov_coord_record");
	TCase *tc = tcase_create("coord");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_coord_ipv6);
	tcase_add_test(tc, test_coord_stats_line_too_long);
	tcase_add_test(tc, test_coord_no_fds);
	tcase_add_test(tc, test_coord_hello_after_join);
	tcase_add_test(tc, test_coord_ag_blob_limit);
	tcase_add_test(tc, test_coord_ag_empty_root);
	tcase_add_test(tc, test_coord_leaf_no_retry_after_join);
	tcase_add_test(tc, test_coord_leaf_eof_before_join);
	tcase_add_test(tc, test_coord_leaf_pollout);
	tcase_add_test(tc, test_coord_leaf_unreachable);
#ifndef TV_NO_AS_LIMIT
	/* Under a sanitizer an address-space limit kills the process. */
	tcase_add_test(tc, test_coord_ag_queue_no_memory);
#endif
	suite_add_tcase(s, tc);
	tc = tcase_create("record");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_tap_no_nodes);
	tcase_add_test(tc, test_record_lost_record_first);
#ifndef TV_NO_AS_LIMIT
	tcase_add_test(tc, test_tap_collect_no_memory);
#endif
	tcase_add_test(tc, test_merge_odd_summaries_and_ties);
	tcase_add_test(tc, test_merge_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(suite());
}
