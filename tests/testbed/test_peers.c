/*
 * A benchmark's processes across hosts (tv_tb_peers, testbed/peers.c) on
 * loopback: node 1 in a forked child, node 0 here.  Barriers and an
 * all-gather; a node running other options (fingerprint) stops both; an
 * abort and a peer that dies end the other's wait with -ECANCELED and
 * why; a peer that never comes ends it with -ETIMEDOUT; the idle hook
 * turns while a wait waits.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include <tensorverbs/workload.h>

#include "common/check_main.h"

#define SEC 1000000000ull

static struct sockaddr_storage addr0(void)
{
	static uint16_t next;
	struct sockaddr_storage ss;
	struct sockaddr_in *a = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	/* Another port each time (and per process: ctest runs in parallel). */
	if (!next)
		next = (uint16_t)(31000 + (getpid() % 2000) * 8);
	a->sin_family = AF_INET;
	a->sin_port = htons(next++);
	inet_pton(AF_INET, "127.0.0.1", &a->sin_addr);
	return ss;
}

static struct tv_tb_peers *open_node(uint32_t node,
				     const struct sockaddr_storage *a,
				     uint64_t fp, uint64_t timeout_ns)
{
	struct tv_tb_peers *p = NULL;
	char msg[256] = "";

	ck_assert_msg(!tv_tb_peers_open(node, 2, a, fp, timeout_ns, &p, msg,
					sizeof(msg)), "%s", msg);
	return p;
}

/* The child's node 1: its body's result as exit status (0 ok). */
static pid_t child(const struct sockaddr_storage *a, uint64_t fp,
		   int (*body)(struct tv_tb_peers *p))
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct tv_tb_peers *p = NULL;
		char msg[256];
		int rc = tv_tb_peers_open(1, 2, a, fp, 10 * SEC, &p, msg,
					  sizeof(msg));

		if (!rc)
			rc = body(p);
		tv_tb_peers_close(p);
		_exit(rc < 0 ? -rc : rc);
	}
	return pid;
}

static int exit_of(pid_t pid)
{
	int st = 0;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* Node n's blob: 300 bytes (more than a coordinator line carries). */
static void blob_of(uint32_t n, uint8_t *b)
{
	for (size_t i = 0; i < 300; i++)
		b[i] = (uint8_t)(n * 101 + i * 7);
}

static int check_all(uint8_t **all, size_t *lens)
{
	uint8_t want[300];
	int bad = 0;

	for (uint32_t n = 0; n < 2; n++) {
		blob_of(n, want);
		bad |= lens[n] != 300 || memcmp(all[n], want, 300);
		free(all[n]);
	}
	free(all);
	free(lens);
	return bad;
}

/*
 * The idle hook's first turn tells node 1 to go on (a pipe made before the
 * fork): node 1 holds back its repeated barriers until node 0 has idled,
 * so node 0 must wait with nothing to read at least once whatever the
 * scheduler does (a loaded machine once ran node 1 ahead at every step).
 */
static int go_pipe[2] = {-1, -1};

static int wait_go(void)
{
	struct pollfd pfd = {.fd = go_pipe[0], .events = POLLIN};
	char c;

	if (poll(&pfd, 1, 10000) != 1 || read(go_pipe[0], &c, 1) != 1)
		return 98;
	return 0;
}

static int body_exchange(struct tv_tb_peers *p)
{
	uint8_t mine[300], **all = NULL;
	size_t *lens = NULL;
	int rc = tv_tb_peers_barrier(p, "start");

	blob_of(1, mine);
	if (!rc)
		rc = tv_tb_peers_allgather(p, mine, sizeof(mine), &all, &lens);
	if (!rc)
		rc = check_all(all, lens) ? 99 : 0;
	if (!rc)
		rc = wait_go();
	for (int i = 0; !rc && i < 5; i++)
		rc = tv_tb_peers_barrier(p, "again");
	return rc;
}

static void idle_count(void *arg)
{
	if (!(*(unsigned *)arg)++)
		ck_assert_int_eq(write(go_pipe[1], "g", 1), 1);
	usleep(100);
}

START_TEST(barriers_and_allgather)
{
	struct sockaddr_storage a = addr0();
	struct tv_tb_peers *p = open_node(0, &a, 7, 10 * SEC);
	pid_t pid;
	uint8_t mine[300], **all = NULL;
	size_t *lens = NULL;
	unsigned idles = 0;

	ck_assert_int_eq(pipe(go_pipe), 0);
	pid = child(&a, 7, body_exchange);
	tv_tb_peers_set_idle(p, idle_count, &idles);
	ck_assert_int_eq(tv_tb_peers_barrier(p, "start"), 0);
	blob_of(0, mine);
	ck_assert_int_eq(tv_tb_peers_allgather(p, mine, sizeof(mine), &all,
					       &lens), 0);
	ck_assert_int_eq(check_all(all, lens), 0);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(tv_tb_peers_barrier(p, "again"), 0);
	ck_assert_int_eq(exit_of(pid), 0);
	ck_assert_uint_gt(idles, 0);
	ck_assert_int_eq(tv_tb_peers_poll(p), -ECANCELED); /* it went */
	tv_tb_peers_close(p);
	close(go_pipe[0]);
	close(go_pipe[1]);
}
END_TEST

static int body_barrier(struct tv_tb_peers *p)
{
	int rc = tv_tb_peers_barrier(p, "start");

	return rc == -ECANCELED &&
	       strstr(tv_tb_peers_error(p), "fingerprint") ? 0 : 1;
}

START_TEST(other_options_stop_both)
{
	struct sockaddr_storage a = addr0();
	struct tv_tb_peers *p = open_node(0, &a, 7, 10 * SEC);
	pid_t pid = child(&a, 8, body_barrier);

	ck_assert_int_eq(tv_tb_peers_barrier(p, "start"), -ECANCELED);
	ck_assert_ptr_nonnull(strstr(tv_tb_peers_error(p), "fingerprint"));
	ck_assert_int_eq(exit_of(pid), 0);
	tv_tb_peers_close(p);
}
END_TEST

static int body_abort(struct tv_tb_peers *p)
{
	int rc = tv_tb_peers_barrier(p, "start");

	if (!rc)
		tv_tb_peers_abort(p, "boom: its device failed");
	return rc;
}

static int body_die(struct tv_tb_peers *p)
{
	int rc = tv_tb_peers_barrier(p, "start");

	if (!rc)
		_exit(0); /* gone without a word */
	return rc;
}

START_TEST(abort_and_death_end_the_wait)
{
	for (int k = 0; k < 2; k++) {
		struct sockaddr_storage a = addr0();
		struct tv_tb_peers *p = open_node(0, &a, 7, 10 * SEC);
		pid_t pid = child(&a, 7, k ? body_die : body_abort);

		ck_assert_int_eq(tv_tb_peers_barrier(p, "start"), 0);
		ck_assert_int_eq(tv_tb_peers_barrier(p, "the end"),
				 -ECANCELED);
		if (!k)
			ck_assert_ptr_nonnull(strstr(tv_tb_peers_error(p),
						     "node 1: boom"));
		else
			ck_assert_ptr_nonnull(strstr(tv_tb_peers_error(p),
						     "closed"));
		ck_assert_int_eq(exit_of(pid), 0);
		tv_tb_peers_close(p);
	}
}
END_TEST

START_TEST(nobody_comes)
{
	struct sockaddr_storage a = addr0();
	struct tv_tb_peers *p = open_node(0, &a, 7, SEC / 5);
	struct tv_tb_peers *q = NULL;
	char msg[128] = "";

	ck_assert_int_eq(tv_tb_peers_barrier(p, "start"), -ETIMEDOUT);
	ck_assert_ptr_nonnull(strstr(tv_tb_peers_error(p), "join"));
	tv_tb_peers_close(p);
	ck_assert_int_eq(tv_tb_peers_open(2, 2, &a, 7, SEC, &q, msg,
					  sizeof(msg)), -EINVAL);
	ck_assert_ptr_null(q);
	ck_assert_ptr_nonnull(strstr(msg, "node 2 of 2"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("peers");
	TCase *tc = tcase_create("loopback");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, barriers_and_allgather);
	tcase_add_test(tc, other_options_stop_both);
	tcase_add_test(tc, abort_and_death_end_the_wait);
	tcase_add_test(tc, nobody_comes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tv_check_main(suite());
}
