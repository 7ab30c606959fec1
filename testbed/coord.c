/*
 * The step coordinator of `tensorverbs serve` (coord.h): a TCP star around
 * node 0 with a line protocol
 *
 *   HELLO <node> <fingerprint>   node -> 0, once connected
 *   WELCOME                      0 -> all, once every node said HELLO
 *   BAR <seq>                    node -> 0: entered barrier seq
 *   GO <seq>                     0 -> all: everyone entered it
 *   STATS <v0> <v1> ...          node -> 0, before the final BAR
 *   ABORT <text>                 any direction: stop, this run failed
 *   AG <seq> <hex>, AGEND <seq>  node -> 0: its all-gather blob, in pieces
 *   AGB <seq> <n> <hex>, AGBEND <seq> <n>, AGDONE <seq>
 *                                0 -> all: every node's blob, then done
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coord.h"
#include "tb_int.h"

#define COORD_RETRY_NS 200000000ull /* node 0 may start later than us */
#define AG_CHUNK 192 /* bytes a line carries (384 hex digits) */

static int set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
					  sizeof(struct sockaddr_in6);
}

static int peer_send(struct coord_peer *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int peer_send(struct coord_peer *p, const char *fmt, ...)
{
	char line[COORD_MSG_MAX * 8];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/*
	 * A line not queued is lost for good (the protocol has no retry):
	 * the run cannot go on, and coord_poll() says so from now on.
	 */
	if (n < 0 || (size_t)n >= sizeof(line))
		return p->err = -EMSGSIZE;
	if (p->out_len + (size_t)n > p->out_cap) {
		size_t cap = (p->out_len + (size_t)n) * 2;
		char *o = realloc(p->out, cap);

		if (!o)
			return p->err = -ENOMEM;
		p->out = o;
		p->out_cap = cap;
	}
	memcpy(p->out + p->out_len, line, (size_t)n);
	p->out_len += (size_t)n;
	return 0;
}

static void peer_close(struct coord_peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->in_len = 0;
	p->out_len = 0;
}

static void broadcast_abort(struct coord *c)
{
	for (size_t i = 0; i < c->npeers; i++)
		if (c->peers[i].fd >= 0)
			peer_send(&c->peers[i], "ABORT %s\n", c->abort_msg);
}

void coord_abort(struct coord *c, const char *fmt, ...)
{
	va_list ap;

	if (c->aborted)
		return;
	c->aborted = true;
	va_start(ap, fmt);
	vsnprintf(c->abort_msg, sizeof(c->abort_msg), fmt, ap);
	va_end(ap);
	/* Newlines would split the line protocol. */
	for (char *s = c->abort_msg; *s; s++)
		if (*s == '\n' || *s == '\r')
			*s = ' ';
	broadcast_abort(c);
}

int coord_init(struct coord *c, uint32_t node, uint32_t nodes,
	       const struct sockaddr *addr0, uint64_t fingerprint,
	       size_t nstats, char *msg, size_t cap)
{
	int one = 1;

	memset(c, 0, sizeof(*c));
	c->node = node;
	c->nodes = nodes;
	c->fingerprint = fingerprint;
	c->nstats = nstats;
	c->listen_fd = -1;
	memcpy(&c->addr0, addr0, sa_len(addr0));
	/* Node 0: one slot per node plus as many for not-yet-HELLO ones. */
	c->npeers = node == 0 ? (size_t)nodes * 2 : 1;
	c->peers = calloc(c->npeers, sizeof(*c->peers));
	c->my_stats = calloc(nstats, sizeof(uint64_t));
	c->ag_have = calloc(nodes, sizeof(*c->ag_have));
	c->ag_blob = calloc(nodes, sizeof(*c->ag_blob));
	c->ag_len = calloc(nodes, sizeof(*c->ag_len));
	if (!c->peers || !c->my_stats || !c->ag_have || !c->ag_blob ||
	    !c->ag_len)
		return -ENOMEM;
	c->ag_seq = 1;
	for (size_t i = 0; i < c->npeers; i++)
		c->peers[i].fd = -1;
	if (node != 0)
		return 0;
	c->listen_fd = socket(addr0->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->listen_fd < 0 ||
	    setsockopt(c->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one,
		       sizeof(one)) ||
	    bind(c->listen_fd, addr0, sa_len(addr0)) ||
	    listen(c->listen_fd, (int)nodes) || set_nonblock(c->listen_fd)) {
		snprintf(msg, cap, "coordinator: cannot listen (TCP): %s",
			 strerror(errno));
		return -errno;
	}
	if (nodes == 1)
		c->joined = true;
	return 0;
}

/*
 * Whatever is queued (the last GO, an ABORT) still goes out, until
 * until_ns (tb_wall_ns): a peer that never finished the handshake or stopped reading
 * must not hold the process (a blocking write waited for TCP to give up:
 * two minutes for a handshake, forever for a peer that never reads).
 */
static void fini_flush(struct coord_peer *p, uint64_t until_ns)
{
	size_t off = 0;

	while (off < p->out_len) {
		ssize_t n = write(p->fd, p->out + off, p->out_len - off);
		struct pollfd pfd = { .fd = p->fd, .events = POLLOUT };
		uint64_t now = tb_wall_ns();

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR)
			return;
		if (now >= until_ns ||
		    (poll(&pfd, 1, (int)((until_ns - now) / 1000000u + 1)) < 0 &&
		     errno != EINTR))
			return;
	}
}

void coord_fini(struct coord *c)
{
	/* A second for every peer's last words together. */
	uint64_t until_ns = tb_wall_ns() + 1000000000ull;

	for (size_t i = 0; c->peers && i < c->npeers; i++) {
		struct coord_peer *p = &c->peers[i];

		if (p->fd >= 0 && p->out_len)
			fini_flush(p, until_ns);
		peer_close(p);
		free(p->out);
		free(p->stats);
	}
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	free(c->peers);
	free(c->my_stats);
	for (uint32_t n = 0; c->ag_blob && n < c->nodes; n++)
		free(c->ag_blob[n]);
	free(c->ag_blob);
	free(c->ag_len);
	free(c->ag_have);
	memset(c, 0, sizeof(*c));
}

/* ---- node 0 -------------------------------------------------------------- */

static void check_joined(struct coord *c)
{
	uint32_t n = 0;

	for (uint32_t i = 1; i < c->nodes; i++)
		n += c->peers[i].hello;
	if (c->joined || n + 1 < c->nodes)
		return;
	c->joined = true;
	for (uint32_t i = 1; i < c->nodes; i++)
		peer_send(&c->peers[i], "WELCOME\n");
}

static void check_barrier(struct coord *c)
{
	uint64_t seq = c->bar_entered;

	if (seq <= c->bar_done)
		return;
	for (uint32_t i = 1; i < c->nodes; i++)
		if (c->peers[i].bar_seq < seq)
			return;
	c->bar_done = seq;
	for (uint32_t i = 1; i < c->nodes; i++)
		peer_send(&c->peers[i], "GO %" PRIu64 "\n", seq);
}

static int on_stats(struct coord *c, struct coord_peer *p, const char *args)
{
	char *end;

	if (!p->stats)
		p->stats = calloc(c->nstats, sizeof(uint64_t));
	if (!p->stats)
		return -ENOMEM;
	for (size_t i = 0; i < c->nstats; i++) {
		p->stats[i] = strtoull(args, &end, 10);
		if (end == args)
			return -EPROTO;
		args = end;
	}
	/* More values than ours: another build or a liar, not ours. */
	return args[strspn(args, " ")] ? -EPROTO : 0;
}

/* A HELLO on pending slot p: move it to the node's own slot. */
static void on_hello(struct coord *c, struct coord_peer *p, const char *args)
{
	unsigned int n = 0;
	uint64_t fp = 0;
	struct coord_peer *slot;

	if (sscanf(args, "%u %" SCNx64, &n, &fp) != 2 || n == 0 ||
	    n >= c->nodes || c->peers[n].fd >= 0) {
		peer_send(p, "ABORT node 0: bad or duplicate HELLO '%s'\n",
			  args);
		return;
	}
	slot = &c->peers[n];
	/* A node back after its connection closed: what it left goes. */
	free(slot->out);
	free(slot->stats);
	*slot = *p;
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	slot->hello = true;
	if (fp != c->fingerprint)
		coord_abort(c, "node %u runs another scenario, seed or "
			    "benchmark options (fingerprint %016" PRIx64 ", node 0 has %016"
			    PRIx64 ")", n, fp, c->fingerprint);
	check_joined(c);
}

/* ---- all-gather ------------------------------------------------------------ */

/* Strict hex of one line's piece, appended to blob n; -EPROTO if bad. */
static int ag_append(struct coord *c, uint32_t n, const char *hex)
{
	size_t len = strlen(hex), have = c->ag_len[n];
	uint8_t *b;

	if (len % 2 || len / 2 > AG_CHUNK || have + len / 2 > COORD_AG_MAX)
		return -EPROTO;
	b = realloc(c->ag_blob[n], have + len / 2 + 1);
	if (!b)
		return -ENOMEM;
	c->ag_blob[n] = b;
	for (size_t i = 0; i < len; i += 2) {
		unsigned int v;

		if (!strchr("0123456789abcdef", hex[i]) || !hex[i] ||
		    !strchr("0123456789abcdef", hex[i + 1]) || !hex[i + 1] ||
		    sscanf(hex + i, "%2x", &v) != 1)
			return -EPROTO;
		b[have + i / 2] = (uint8_t)v;
	}
	c->ag_len[n] = have + len / 2;
	return 0;
}

/* Blob as lines "<prefix><hex>\n" of AG_CHUNK bytes each. */
static int ag_send_blob(struct coord_peer *p, const char *prefix,
			const uint8_t *b, size_t len)
{
	char hex[2 * AG_CHUNK + 1];
	int ret = 0;

	for (size_t off = 0; !ret && off < len; off += AG_CHUNK) {
		size_t n = len - off < AG_CHUNK ? len - off : AG_CHUNK;

		for (size_t i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", b[off + i]);
		ret = peer_send(p, "%s%s\n", prefix, hex);
	}
	return ret;
}

/* Node 0: every blob is in: send them all to everyone. */
static void ag_check(struct coord *c)
{
	char prefix[64];

	if (!c->ag_mine || c->ag_done)
		return;
	for (uint32_t n = 1; n < c->nodes; n++)
		if (!c->ag_have[n])
			return;
	for (uint32_t i = 1; i < c->nodes; i++) {
		for (uint32_t n = 0; n < c->nodes; n++) {
			snprintf(prefix, sizeof(prefix), "AGB %" PRIu64 " %u ",
				 c->ag_seq, n);
			ag_send_blob(&c->peers[i], prefix, c->ag_blob[n],
				     c->ag_len[n]);
			peer_send(&c->peers[i], "AGBEND %" PRIu64 " %u\n",
				  c->ag_seq, n);
		}
		peer_send(&c->peers[i], "AGDONE %" PRIu64 "\n", c->ag_seq);
	}
	c->ag_done = true;
}

static void ag_root_line(struct coord *c, struct coord_peer *p, char *args,
			 bool end)
{
	uint32_t n = (uint32_t)(p - c->peers);
	char *hex;
	uint64_t seq = strtoull(args, &hex, 10);
	int rc = 0;

	if (n == 0 || n >= c->nodes || seq != c->ag_seq || c->ag_have[n] ||
	    (!end && (*hex != ' ' || (rc = ag_append(c, n, hex + 1))))) {
		if (rc == -ENOMEM)
			p->err = rc; /* ours, not the sender's */
		else
			coord_abort(c, "node 0: a malformed all-gather line "
				    "from node %u", n);
		return;
	}
	if (end) {
		c->ag_have[n] = true;
		ag_check(c);
	}
}

static void ag_leaf_line(struct coord *c, char *args, int kind)
{
	char *rest;
	uint64_t seq = strtoull(args, &rest, 10);
	unsigned long n = kind == 2 ? 0 : strtoul(rest, &rest, 10);
	int rc = 0;

	if (seq != c->ag_seq || n >= c->nodes ||
	    (kind == 0 && (*rest != ' ' ||
			   (rc = ag_append(c, (uint32_t)n, rest + 1))))) {
		if (rc == -ENOMEM) {
			c->peers[0].err = rc; /* ours, not node 0's */
			return;
		}
		c->aborted = true;
		snprintf(c->abort_msg, sizeof(c->abort_msg), "a malformed "
			 "all-gather line from node 0");
		return;
	}
	if (kind == 2)
		c->ag_done = true;
}

int coord_ag_start(struct coord *c, const void *mine, size_t len)
{
	char prefix[40];
	int ret;

	if (len > COORD_AG_MAX)
		return -EMSGSIZE;
	if (c->node == 0) {
		free(c->ag_blob[0]);
		c->ag_blob[0] = malloc(len ? len : 1);
		if (!c->ag_blob[0])
			return -ENOMEM;
		memcpy(c->ag_blob[0], mine, len);
		c->ag_len[0] = len;
		c->ag_mine = true;
		ag_check(c);
		return 0;
	}
	snprintf(prefix, sizeof(prefix), "AG %" PRIu64 " ", c->ag_seq);
	ret = ag_send_blob(&c->peers[0], prefix, mine, len);
	return ret ? ret : peer_send(&c->peers[0], "AGEND %" PRIu64 "\n",
				     c->ag_seq);
}

/*
 * Not done while a line is lost (coord_error()): the caller's next poll
 * says why, where a blob short of a piece or statistics never kept would
 * otherwise pass for the peer's.
 */
bool coord_ag_done(const struct coord *c)
{
	return c->ag_done && !coord_error(c);
}

int coord_ag_take(struct coord *c, uint8_t ***blobs_p, size_t **lens_p)
{
	int err = coord_error(c);
	uint8_t **b;
	size_t *l;

	if (err)
		return err; /* a blob may be short of a piece */
	b = calloc(c->nodes, sizeof(*b));
	l = calloc(c->nodes, sizeof(*l));
	if (!b || !l || !c->ag_done) {
		free(b);
		free(l);
		return c->ag_done ? -ENOMEM : -EAGAIN;
	}
	/*
	 * The caller takes the arrays as they are; the next all-gather gets
	 * the fresh (zeroed) ones.  (An element-wise move loop here was
	 * miscompiled by GCC 12's loop distribution at -O2 with LTO: the
	 * lengths were cleared before they were copied.)
	 */
	*blobs_p = c->ag_blob;
	*lens_p = c->ag_len;
	c->ag_blob = b;
	c->ag_len = l;
	memset(c->ag_have, 0, c->nodes * sizeof(*c->ag_have));
	c->ag_done = false;
	c->ag_mine = false;
	c->ag_seq++;
	return 0;
}

static void root_line(struct coord *c, struct coord_peer *p, char *line)
{
	char *args = strchr(line, ' ');

	args = args ? args + 1 : line + strlen(line);
	if (!strncmp(line, "HELLO ", 6)) {
		on_hello(c, p, args);
	} else if ((size_t)(p - c->peers) >= c->nodes) {
		/* Not a node yet: it may not touch the run's state. */
		peer_send(p, "ABORT node 0: '%.64s' before HELLO\n", line);
	} else if (!strncmp(line, "BAR ", 4)) {
		p->bar_seq = strtoull(args, NULL, 10);
		check_barrier(c);
	} else if (!strncmp(line, "STATS ", 6)) {
		int rc = on_stats(c, p, args);

		if (rc == -ENOMEM)
			p->err = rc; /* ours, not the sender's */
		else if (rc)
			coord_abort(c, "node 0: malformed STATS line from "
				    "node %zu", (size_t)(p - c->peers));
	} else if (!strncmp(line, "ABORT ", 6)) {
		coord_abort(c, "%s", args);
	} else if (!strncmp(line, "AG ", 3) || !strncmp(line, "AGEND ", 6)) {
		ag_root_line(c, p, args, line[2] == 'E');
	}
}

static void leaf_line(struct coord *c, char *line)
{
	char *args = strchr(line, ' ');

	args = args ? args + 1 : line + strlen(line);
	if (!strcmp(line, "WELCOME"))
		c->joined = true;
	else if (!strncmp(line, "GO ", 3))
		c->bar_done = strtoull(args, NULL, 10);
	else if (!strncmp(line, "AGB ", 4))
		ag_leaf_line(c, args, 0);
	else if (!strncmp(line, "AGBEND ", 7))
		ag_leaf_line(c, args, 1);
	else if (!strncmp(line, "AGDONE ", 7))
		ag_leaf_line(c, args, 2);
	else if (!strncmp(line, "ABORT ", 6) && !c->aborted) {
		c->aborted = true;
		snprintf(c->abort_msg, sizeof(c->abort_msg), "%s", args);
	}
}

static void accept_all(struct coord *c)
{
	for (;;) {
		int fd = accept4(c->listen_fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		size_t i;

		if (fd < 0)
			return;
		for (i = c->nodes; i < c->npeers && c->peers[i].fd >= 0; i++)
			;
		if (i == c->npeers) {
			close(fd); /* more connections than nodes */
			continue;
		}
		c->peers[i].fd = fd;
		c->peers[i].in_len = 0;
	}
}

/* ---- every node ---------------------------------------------------------- */

/* Node 1..n-1: (re)try connecting to node 0 until it answers. */
static void leaf_connect(struct coord *c, uint64_t now_ns)
{
	struct coord_peer *p = &c->peers[0];
	const struct sockaddr *sa = (const void *)&c->addr0;
	int one = 1;

	if (p->fd >= 0 || c->joined || now_ns < c->next_connect_ns)
		return;
	c->next_connect_ns = now_ns + COORD_RETRY_NS;
	p->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK |
					      SOCK_CLOEXEC, 0);
	if (p->fd < 0)
		return;
	setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(p->fd, sa, sa_len(sa)) && errno != EINPROGRESS) {
		peer_close(p);
		return;
	}
	peer_send(p, "HELLO %u %016" PRIx64 "\n", c->node, c->fingerprint);
}

/* Split complete lines off p->in; the peer may move (HELLO). */
static void peer_lines(struct coord *c, size_t idx)
{
	struct coord_peer *p = &c->peers[idx];
	char line[sizeof(p->in) + 1];
	char *nl;

	while (p->fd >= 0 && (nl = memchr(p->in, '\n', p->in_len))) {
		size_t n = (size_t)(nl - p->in);
		unsigned int node = 0;

		memcpy(line, p->in, n);
		line[n] = '\0';
		memmove(p->in, nl + 1, p->in_len - n - 1);
		p->in_len -= n + 1;
		if (c->node != 0) {
			leaf_line(c, line);
			continue;
		}
		root_line(c, p, line);
		/* A HELLO moved this connection to its node's slot. */
		if (p->fd < 0 && sscanf(line, "HELLO %u", &node) == 1 &&
		    node < c->nodes && c->peers[node].fd >= 0)
			p = &c->peers[node];
	}
}

static void peer_gone(struct coord *c, size_t idx)
{
	bool known = c->node != 0 ? c->joined : idx < c->nodes;

	peer_close(&c->peers[idx]);
	/* A node that said HELLO never leaves before the end: it died. */
	if (known && !c->aborted)
		coord_abort(c, "node %zu's coordinator connection closed "
			    "(the process died?)", c->node ? 0 : idx);
}

static int peer_io(struct coord *c, size_t idx, short revents)
{
	struct coord_peer *p = &c->peers[idx];
	int got = 0;

	if (revents & POLLOUT && p->out_len) {
		ssize_t w = write(p->fd, p->out, p->out_len);

		if (w > 0) {
			memmove(p->out, p->out + w, p->out_len - (size_t)w);
			p->out_len -= (size_t)w;
			got = 1;
		} else if (w < 0 && errno != EAGAIN) {
			peer_gone(c, idx);
			return 1;
		}
	}
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		ssize_t r = read(p->fd, p->in + p->in_len,
				 sizeof(p->in) - p->in_len);

		if (r <= 0 && !(r < 0 && errno == EAGAIN)) {
			/* A leaf whose connect was refused simply retries. */
			if (c->node != 0 && !c->joined && r < 0)
				peer_close(p);
			else
				peer_gone(c, idx);
			return 1;
		}
		if (r > 0) {
			p->in_len += (size_t)r;
			peer_lines(c, idx);
			got = 1;
		}
		if (p->fd >= 0 && p->in_len == sizeof(p->in)) {
			/* A line too long: not ours. */
			if (c->node != 0 ? c->joined : idx < c->nodes)
				coord_abort(c, "node %zu sent a coordinator "
					    "line longer than %zu bytes",
					    c->node ? 0 : idx, sizeof(p->in));
			peer_gone(c, idx);
		}
	}
	return got;
}

int coord_error(const struct coord *c)
{
	for (size_t i = 0; i < c->npeers; i++)
		if (c->peers[i].err)
			return c->peers[i].err;
	return 0;
}

int coord_poll(struct coord *c, uint64_t now_ns)
{
	struct pollfd pfd[c->npeers + 1];
	size_t map[c->npeers + 1];
	size_t n = 0;
	int got = coord_error(c);

	if (got)
		return got;
	if (c->node == 0)
		accept_all(c);
	else
		leaf_connect(c, now_ns);
	for (size_t i = 0; i < c->npeers; i++) {
		if (c->peers[i].fd < 0)
			continue;
		pfd[n].fd = c->peers[i].fd;
		pfd[n].events = POLLIN | (c->peers[i].out_len ? POLLOUT : 0);
		pfd[n].revents = 0;
		map[n++] = i;
	}
	if (!n || poll(pfd, n, 0) <= 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (pfd[i].revents && c->peers[map[i]].fd == pfd[i].fd)
			got += peer_io(c, map[i], pfd[i].revents);
	return got;
}

int coord_pollfds(const struct coord *c, struct pollfd *pfd, size_t cap,
		  uint64_t *wake_ns_p)
{
	size_t n = 0;

	*wake_ns_p = UINT64_MAX;
	if (c->node == 0 && c->listen_fd >= 0) {
		if (n == cap)
			return -ENOSPC;
		pfd[n].fd = c->listen_fd;
		pfd[n++].events = POLLIN;
	}
	if (c->node != 0 && c->peers[0].fd < 0 && !c->joined)
		*wake_ns_p = c->next_connect_ns; /* leaf_connect() tries again */
	for (size_t i = 0; i < c->npeers; i++) {
		if (c->peers[i].fd < 0)
			continue;
		if (n == cap)
			return -ENOSPC;
		pfd[n].fd = c->peers[i].fd;
		/* POLLOUT too while output waits (a connect in progress). */
		pfd[n++].events = POLLIN | (c->peers[i].out_len ? POLLOUT : 0);
	}
	return (int)n;
}

int coord_barrier_enter(struct coord *c, uint64_t seq)
{
	assert(seq > c->bar_entered);
	c->bar_entered = seq;
	if (c->node == 0) {
		check_barrier(c);
		return 0;
	}
	return peer_send(&c->peers[0], "BAR %" PRIu64 "\n", seq);
}

bool coord_barrier_done(const struct coord *c, uint64_t seq)
{
	return c->bar_done >= seq && !coord_error(c); /* as coord_ag_done() */
}

int coord_send_stats(struct coord *c, const uint64_t *v)
{
	char line[COORD_MSG_MAX * 8];
	size_t used = 0;

	if (c->node == 0) {
		memcpy(c->my_stats, v, c->nstats * sizeof(uint64_t));
		return 0;
	}
	for (size_t i = 0; i < c->nstats && used < sizeof(line); i++)
		used += (size_t)snprintf(line + used, sizeof(line) - used,
					 " %" PRIu64, v[i]);
	if (used >= sizeof(line))
		return -EMSGSIZE;
	return peer_send(&c->peers[0], "STATS%s\n", line);
}

const uint64_t *coord_stats(const struct coord *c, uint32_t n)
{
	if (c->node != 0 || n >= c->nodes)
		return NULL;
	return n == 0 ? c->my_stats : c->peers[n].stats;
}
