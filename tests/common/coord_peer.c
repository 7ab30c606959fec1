/*
 * Internal test helpers (tests/ only): serve's coordinator (testbed/coord.c)
 * on loopback, driven by the test: coordinators polled in turn, raw peers
 * that write and read its lines by hand.  Used by test_testbed_host_cov and
 * test_cov_coord_record.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "common/coord_peer.h"

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A loopback TCP port nobody listens on now. */
uint16_t free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

struct sockaddr_storage addr_of(uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *a = (struct sockaddr_in *)&ss;

	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return ss;
}

void node_init(struct coord *c, uint32_t node, uint32_t nodes,
	       uint16_t port, size_t nstats)
{
	struct sockaddr_storage a = addr_of(port);
	char msg[256] = "";

	ck_assert_int_eq(coord_init(c, node, nodes, (struct sockaddr *)&a, FP,
				    nstats, msg, sizeof(msg)), 0);
}

void raw_connect(struct raw *r, uint16_t port)
{
	struct sockaddr_storage a = addr_of(port);

	r->len = 0;
	r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(r->fd, 0);
	ck_assert_int_eq(connect(r->fd, (struct sockaddr *)&a,
				 sizeof(struct sockaddr_in)), 0);
}

void pump(struct coord **cs, size_t n)
{
	int got = 0;

	for (size_t i = 0; i < n; i++)
		got += coord_poll(cs[i], mono_ns());
	if (!got)
		poll(NULL, 0, 1);
}

/*
 * The raw peer's next line (without its newline) into out, pumping the
 * coordinators meanwhile; false at end of file.  Fails after 5 s.
 */
bool raw_line(struct raw *r, struct coord **cs, size_t n, char *out,
	      size_t cap)
{
	uint64_t t0 = mono_ns();

	for (;;) {
		char *nl = memchr(r->buf, '\n', r->len);
		ssize_t got;

		if (nl) {
			size_t k = (size_t)(nl - r->buf);

			ck_assert_uint_lt(k, cap);
			memcpy(out, r->buf, k);
			out[k] = 0;
			memmove(r->buf, nl + 1, r->len - k - 1);
			r->len -= k + 1;
			return true;
		}
		ck_assert_uint_lt(r->len, sizeof(r->buf));
		got = recv(r->fd, r->buf + r->len, sizeof(r->buf) - r->len,
			   MSG_DONTWAIT);
		if (got == 0 || (got < 0 && errno == ECONNRESET))
			return false;  /* closed, maybe with our bytes unread */
		if (got > 0) {
			r->len += (size_t)got;
			continue;
		}
		ck_assert_int_eq(errno, EAGAIN);
		ck_assert_msg(mono_ns() - t0 < WAIT_NS, "no line came");
		pump(cs, n);
	}
}

void expect_line(struct raw *r, struct coord **cs, size_t n,
		 const char *want)
{
	char line[4096];

	ck_assert_msg(raw_line(r, cs, n, line, sizeof(line)),
		      "end of file instead of '%s'", want);
	ck_assert_str_eq(line, want);
}

void expect_eof(struct raw *r, struct coord **cs, size_t n)
{
	char line[4096];

	ck_assert_msg(!raw_line(r, cs, n, line, sizeof(line)),
		      "'%s' instead of end of file", line);
}

void pump_until(struct coord **cs, size_t n,
		bool (*cond)(struct coord *c), struct coord *arg)
{
	uint64_t t0 = mono_ns();

	while (!cond(arg)) {
		ck_assert_msg(mono_ns() - t0 < WAIT_NS, "stuck");
		pump(cs, n);
	}
}

bool is_aborted(struct coord *c)
{
	return c->aborted;
}

bool is_joined(struct coord *c)
{
	return c->joined;
}

bool has_hello1(struct coord *c)
{
	return c->peers[1].hello;
}

bool has_stats1(struct coord *c)
{
	return coord_stats(c, 1) != NULL;
}

/* All of s, pumping the coordinators while the socket is full. */
void raw_send_n(struct raw *r, struct coord **cs, size_t n,
		const char *s, size_t len)
{
	uint64_t t0 = mono_ns();

	while (len) {
		ssize_t w = send(r->fd, s, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w > 0) {
			s += w;
			len -= (size_t)w;
			continue;
		}
		ck_assert_int_eq(errno, EAGAIN);
		ck_assert_msg(mono_ns() - t0 < WAIT_NS, "nobody reads");
		pump(cs, n);
	}
}

void raw_send(struct raw *r, const char *s)
{
	ck_assert_int_eq(write(r->fd, s, strlen(s)), (ssize_t)strlen(s));
}

void fake_listen(struct fake_root *f)
{
	struct sockaddr_storage a;
	int one = 1;

	f->port = free_port();
	a = addr_of(f->port);
	f->conn.fd = -1;
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			0);
	ck_assert_int_ge(f->lfd, 0);
	setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&a,
			      sizeof(struct sockaddr_in)), 0);
	ck_assert_int_eq(listen(f->lfd, 4), 0);
}

/* The leaf's next connection, its HELLO checked; now_ns skips retry waits. */
void fake_accept(struct fake_root *f, struct coord *leaf)
{
	struct coord *cs[] = { leaf };
	uint64_t t0 = mono_ns();

	f->conn.len = 0;
	while ((f->conn.fd = accept4(f->lfd, NULL, NULL,
				     SOCK_NONBLOCK | SOCK_CLOEXEC)) < 0) {
		ck_assert_msg(mono_ns() - t0 < WAIT_NS, "no connection");
		coord_poll(leaf, mono_ns() + RETRY_NS);
		poll(NULL, 0, 1);
	}
	expect_line(&f->conn, cs, 1, "HELLO 1 000000000000002a");
}

/* Leaf node 1 of nodes, joined to a fake node 0 that checked its HELLO. */
void leaf_joined(struct coord *leaf, struct fake_root *f, uint32_t nodes)
{
	struct coord *cs[] = { leaf };

	fake_listen(f);
	node_init(leaf, 1, nodes, f->port, 1);
	fake_accept(f, leaf);
	raw_send(&f->conn, "WELCOME\n");
	pump_until(cs, 1, is_joined, leaf);
}

void fake_root_close(struct fake_root *f)
{
	if (f->conn.fd >= 0)
		close(f->conn.fd);
	close(f->lfd);
}
