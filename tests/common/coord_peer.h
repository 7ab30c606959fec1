/*
 * Internal test header (tests/ only): serve's coordinator on loopback,
 * driven by a test (tests/common/coord_peer.c).
 */
#ifndef TV_TESTS_COORD_PEER_H
#define TV_TESTS_COORD_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "coord.h"

#define FP 0x2aull            /* every honest node's fingerprint */
#define WAIT_NS 5000000000ull /* a helper that waits fails after 5 s */

uint64_t mono_ns(void);
/* A loopback TCP port nobody listens on now. */
uint16_t free_port(void);
struct sockaddr_storage addr_of(uint16_t port); /* 127.0.0.1:port */
/* Coordinator node of nodes, node 0 at 127.0.0.1:port, fingerprint FP. */
void node_init(struct coord *c, uint32_t node, uint32_t nodes, uint16_t port,
	       size_t nstats);

/* A raw peer: lines by hand. */
struct raw {
	int fd;
	char buf[8192];
	size_t len;
};
void raw_connect(struct raw *r, uint16_t port);
/* s written at once (a short line). */
void raw_send(struct raw *r, const char *s);
/* All of s, polling the n coordinators cs while the socket is full. */
void raw_send_n(struct raw *r, struct coord **cs, size_t n, const char *s,
		size_t len);
/* One poll of each coordinator; 1 ms of sleep if none had work. */
void pump(struct coord **cs, size_t n);
/* The raw peer's next line into out (pumping); false at end of file.
 * Fails the test after WAIT_NS. */
bool raw_line(struct raw *r, struct coord **cs, size_t n, char *out,
	      size_t cap);
void expect_line(struct raw *r, struct coord **cs, size_t n,
		 const char *want);
void expect_eof(struct raw *r, struct coord **cs, size_t n);
/* Pump until cond(arg); fails the test after WAIT_NS. */
void pump_until(struct coord **cs, size_t n, bool (*cond)(struct coord *c),
		struct coord *arg);
bool is_aborted(struct coord *c);
bool is_joined(struct coord *c);
bool has_hello1(struct coord *c); /* node 0 took node 1's HELLO */
bool has_stats1(struct coord *c); /* node 0 has node 1's statistics */

/* A node 0 of the test's own, for a leaf (a coordinator node 1). */
#define RETRY_NS 200000000ull /* coord.c's COORD_RETRY_NS */
struct fake_root {
	int lfd;
	uint16_t port;
	struct raw conn;
};
/* Listening on a free loopback port (f->port). */
void fake_listen(struct fake_root *f);
/* The leaf's next connection, its HELLO checked; polls skip retry waits. */
void fake_accept(struct fake_root *f, struct coord *leaf);
void leaf_joined(struct coord *leaf, struct fake_root *f, uint32_t nodes);
void fake_root_close(struct fake_root *f);

#endif
