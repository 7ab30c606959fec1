/*
 * The rdma_cm private data of tensorverbs, and address parsing.
 *
 * Field by field, little-endian, every read bounds-checked: never a struct
 * copied onto the wire (the original leaked uninitialised bytes that way).
 * No RDMA needed here, so it is testable anywhere.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/cm.h>

#include "wire.h"

struct cursor {
	uint8_t *p;
	size_t len;
	size_t pos;
};

static void put_bytes(struct cursor *c, const void *src, size_t n)
{
	/* Callers check the total size first: overrun is a bug here. */
	assert(c->pos + n <= c->len);
	memcpy(c->p + c->pos, src, n);
	c->pos += n;
}

static void put_le(struct cursor *c, uint64_t v, size_t n)
{
	assert(n <= 8 && c->pos + n <= c->len);
	for (size_t i = 0; i < n; i++)
		c->p[c->pos++] = (uint8_t)(v >> (8 * i));
}

struct rcursor {
	const uint8_t *p;
	size_t len;
	size_t pos;
};

static uint64_t get_le(struct rcursor *c, size_t n)
{
	uint64_t v = 0;

	assert(n <= 8 && c->pos + n <= c->len);
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)c->p[c->pos++] << (8 * i);
	return v;
}

/* magic (2), version (1), kind (1) */
static void put_header(struct cursor *c, enum tv_cm_kind kind)
{
	put_le(c, TV_CM_MAGIC, 2);
	put_le(c, TV_CM_VERSION, 1);
	put_le(c, (uint64_t)kind, 1);
}

int tv_cm_encode_hello(const struct tv_cm_hello *h, uint8_t *buf, size_t cap)
{
	struct cursor c = { .p = buf, .len = TV_CM_PRIV_BYTES };

	if (!h || !buf || cap < TV_CM_PRIV_BYTES)
		return -ENOSPC;
	if (h->kind != TV_CM_KIND_CONNECT && h->kind != TV_CM_KIND_ACCEPT)
		return -EINVAL;
	put_header(&c, h->kind);
	put_le(&c, h->from_node, 4);             /*  4 */
	put_le(&c, h->to_node, 4);               /*  8 */
	put_le(&c, h->info.ep.qp_num, 4);        /* 12 */
	put_le(&c, h->info.ep.psn, 4);           /* 16 */
	put_le(&c, h->info.ep.lid, 2);           /* 20 */
	put_le(&c, 0, 2);                        /* 22: reserved, zero */
	put_bytes(&c, h->info.ep.gid, 16);       /* 24: network order as is */
	put_le(&c, h->info.rx_addr, 8);          /* 40 */
	put_le(&c, h->info.rx_rkey, 4);          /* 48 */
	put_le(&c, h->info.rx_bytes, 4);         /* 52 */
	assert(c.pos == TV_CM_PRIV_BYTES);
	return 0;
}

static int check_header(struct rcursor *c, uint8_t *version_p,
			enum tv_cm_kind *kind_p)
{
	uint8_t version;

	if (c->len < 4 || get_le(c, 2) != TV_CM_MAGIC)
		return -EPROTO;
	version = (uint8_t)get_le(c, 1);
	if (version_p)
		*version_p = version;
	if (version != TV_CM_VERSION)
		return -EPROTONOSUPPORT;
	*kind_p = (enum tv_cm_kind)get_le(c, 1);
	return 0;
}

int tv_cm_decode_hello(const uint8_t *buf, size_t len, uint8_t *version_p,
		       struct tv_cm_hello *h_p)
{
	struct rcursor c = { .p = buf, .len = len };
	struct tv_cm_hello h;
	int ret;

	if (!buf || !h_p)
		return -EINVAL;
	ret = check_header(&c, version_p, &h.kind);
	if (ret)
		return ret;
	if (len < TV_CM_PRIV_BYTES ||
	    (h.kind != TV_CM_KIND_CONNECT && h.kind != TV_CM_KIND_ACCEPT))
		return -EPROTO;
	memset(&h.info, 0, sizeof(h.info));
	h.from_node = (uint32_t)get_le(&c, 4);
	h.to_node = (uint32_t)get_le(&c, 4);
	h.info.ep.qp_num = (uint32_t)get_le(&c, 4);
	h.info.ep.psn = (uint32_t)get_le(&c, 4);
	h.info.ep.lid = (uint16_t)get_le(&c, 2);
	if (get_le(&c, 2) != 0)
		return -EPROTO;
	memcpy(h.info.ep.gid, c.p + c.pos, 16);
	c.pos += 16;
	h.info.rx_addr = get_le(&c, 8);
	h.info.rx_rkey = (uint32_t)get_le(&c, 4);
	h.info.rx_bytes = (uint32_t)get_le(&c, 4);
	/* QPN and PSN are 24-bit; a message buffer must exist and fit one. */
	if (h.info.ep.qp_num > 0xffffff || h.info.ep.psn > 0xffffff ||
	    !h.info.ep.qp_num || !h.info.rx_addr ||
	    h.info.rx_bytes < tv_wire_max_bytes())
		return -EPROTO;
	*h_p = h;
	return 0;
}

int tv_cm_encode_reject(int err, const char *msg, uint8_t *buf, size_t cap)
{
	struct cursor c = { .p = buf, .len = TV_CM_REJECT_BYTES };
	size_t n = msg ? strnlen(msg, TV_CM_REJECT_MSG_MAX) : 0;

	if (!buf || cap < TV_CM_REJECT_BYTES || err < 0)
		return -ENOSPC;
	memset(buf, 0, TV_CM_REJECT_BYTES);
	put_header(&c, TV_CM_KIND_REJECT);
	put_le(&c, (uint32_t)err, 4);
	if (n)
		put_bytes(&c, msg, n);
	return 0;
}

int tv_cm_decode_reject(const uint8_t *buf, size_t len, int *err_p,
			char msg_p[TV_CM_REJECT_MSG_MAX + 1])
{
	struct rcursor c = { .p = buf, .len = len };
	enum tv_cm_kind kind;
	size_t n;
	int ret;

	if (!buf || !err_p || !msg_p)
		return -EINVAL;
	ret = check_header(&c, NULL, &kind);
	if (ret)
		return ret;
	if (kind != TV_CM_KIND_REJECT || len < 8)
		return -EPROTO;
	*err_p = (int)(get_le(&c, 4) & 0x7fffffff);
	n = len - c.pos < TV_CM_REJECT_MSG_MAX ? len - c.pos :
						  TV_CM_REJECT_MSG_MAX;
	n = strnlen((const char *)c.p + c.pos, n);
	memcpy(msg_p, c.p + c.pos, n);
	msg_p[n] = '\0';
	return 0;
}

/* ---- addresses ---------------------------------------------------------- */

int tv_cm_parse_addr(const char *text, struct sockaddr_storage *addr_p)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char host[256];
	const char *colon, *port;
	size_t hlen;
	char *end;
	long p;

	if (!text || !addr_p)
		return -EINVAL;
	if (text[0] == '[') { /* [v6]:port */
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		hlen = (size_t)(close - text - 1);
		memcpy(host, text + 1, hlen < sizeof(host) ? hlen : 0);
		port = close + 2;
	} else {
		colon = strrchr(text, ':');
		if (!colon)
			return -EINVAL;
		hlen = (size_t)(colon - text);
		memcpy(host, text, hlen < sizeof(host) ? hlen : 0);
		port = colon + 1;
	}
	if (!hlen || hlen >= sizeof(host))
		return -EINVAL;
	host[hlen] = '\0';
	p = strtol(port, &end, 10);
	if (!*port || *end || p <= 0 || p > 65535)
		return -EINVAL;
	if (getaddrinfo(host, port, &hints, &res) || !res)
		return -EHOSTUNREACH;
	memset(addr_p, 0, sizeof(*addr_p));
	memcpy(addr_p, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

void tv_cm_format_addr(const struct sockaddr *sa, char *buf, size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, cap, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(buf, cap, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, cap, "?");
	}
}
