/*
 * Writes the seed corpora: fuzz_gen_corpus DIR writes DIR/wire/gen-* (valid
 * messages of every type and edge cases) and DIR/dispatch/gen-* (programs
 * for fuzz_dispatch, see the top of fuzz_dispatch.c).  The output is
 * committed under tests/fuzz/corpus/; rerun after a wire format change:
 *   build/tests/fuzz/fuzz_gen_corpus tests/fuzz/corpus
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "wire.h"

#define CAP 4096

static const char *g_root;

static void put_file(const char *target, const char *name, const void *buf,
		     size_t len)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/gen-%s", g_root, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		exit(1);
	}
}

static void msg_init(struct tv_msg *m, enum tv_msg_type type, uint32_t index,
		     uint64_t step, const char *name)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->request_index = index;
	m->step_id = step;
	m->name_len = (uint16_t)strlen(name);
	memcpy(m->name, name, m->name_len);
}

static void meta_set(struct tv_meta *meta, enum tv_dtype dt, uint32_t rank,
		     const int64_t *dims, uint64_t bytes)
{
	memset(meta, 0, sizeof(*meta));
	meta->dtype = dt;
	meta->shape.rank = rank;
	if (rank)
		memcpy(meta->shape.dims, dims, rank * sizeof(*dims));
	meta->tensor_bytes = bytes;
}

static size_t encode(const struct tv_msg *m, uint8_t *buf)
{
	size_t len;

	if (tv_wire_encode(m, buf, CAP, &len)) {
		fprintf(stderr, "seed message '%s' does not encode\n", m->name);
		exit(1);
	}
	return len;
}

/* body_len and the checksum for the bytes as they are now. */
static void fix_header(uint8_t *buf, size_t len, uint32_t body_len)
{
	uint64_t h;
	uint32_t sum;
	int i;

	for (i = 0; i < 4; i++)
		buf[8 + i] = (uint8_t)(body_len >> (8 * i));
	h = XXH3_64bits_withSeed(buf + 16, len - 16, XXH3_64bits(buf, 12));
	sum = (uint32_t)(h ^ (h >> 32));
	for (i = 0; i < 4; i++)
		buf[12 + i] = (uint8_t)(sum >> (8 * i));
}

static void wire_valid(void)
{
	static const int64_t d48[] = { 4, 8 }, d2[] = { 2 }, d05[] = { 0, 5 };
	static const int64_t dmax[] = { INT64_MAX };
	static int64_t ones[TV_MAX_RANK];
	static struct tv_msg m;
	static uint8_t buf[CAP];
	int i;

	msg_init(&m, TV_MSG_TENSOR_REQUEST, 0, 1, "t");
	put_file("wire", "request-first", buf, encode(&m, buf));
	m.remote_addr = 0x10000;
	m.remote_bytes = 128;
	m.rkey = 7;
	m.meta_valid = 1;
	meta_set(&m.meta, TV_DT_FLOAT, 2, d48, 128);
	put_file("wire", "request-meta", buf, encode(&m, buf));
	m.type = TV_MSG_TENSOR_RE_REQUEST;
	put_file("wire", "re-request", buf, encode(&m, buf));
	m.remote_addr = m.remote_bytes = m.rkey = 0;
	put_file("wire", "re-request-cancel", buf, encode(&m, buf));

	msg_init(&m, TV_MSG_TENSOR_REQUEST, TV_IMM_MAX_REQUEST, UINT64_MAX,
		 "edge/max_index");
	m.remote_addr = UINT64_MAX - 16;
	m.remote_bytes = 16; /* ends exactly at 2^64-1: allowed */
	put_file("wire", "request-edges", buf, encode(&m, buf));

	msg_init(&m, TV_MSG_META_DATA_UPDATE, 3, 2, "update");
	m.meta_valid = 1;
	meta_set(&m.meta, TV_DT_FLOAT, 2, d48, 128);
	put_file("wire", "update", buf, encode(&m, buf));
	m.has_checksum = 1;
	m.checksum = 0x0123456789abcdefull;
	put_file("wire", "update-checksum", buf, encode(&m, buf));
	m.has_checksum = 0;
	m.checksum = 0;
	meta_set(&m.meta, TV_DT_INT32, 0, NULL, 0);
	m.meta.is_dead = 1;
	put_file("wire", "update-dead", buf, encode(&m, buf));
	meta_set(&m.meta, TV_DT_STRING, 1, d2, 20);
	put_file("wire", "update-string", buf, encode(&m, buf));
	meta_set(&m.meta, TV_DT_DOUBLE, 2, d05, 0);
	put_file("wire", "update-empty", buf, encode(&m, buf));
	meta_set(&m.meta, TV_DT_INT8, 1, dmax, INT64_MAX);
	put_file("wire", "update-huge", buf, encode(&m, buf));
	for (i = 0; i < TV_MAX_RANK; i++)
		ones[i] = 1;
	meta_set(&m.meta, TV_DT_UINT16, TV_MAX_RANK, ones, 2);
	put_file("wire", "update-rank32", buf, encode(&m, buf));

	msg_init(&m, TV_MSG_ERROR_STATUS, 5, 1, "err");
	tv_status_set(&m.status, TV_NOT_FOUND, "no such tensor");
	strcpy(m.status.details, "details");
	put_file("wire", "error", buf, encode(&m, buf));
	tv_status_set(&m.status, TV_UNAUTHENTICATED, "%s", "");
	put_file("wire", "error-empty", buf, encode(&m, buf));

	/* The largest message: the size of a message buffer. */
	msg_init(&m, TV_MSG_ERROR_STATUS, 0, 0, "n");
	memset(m.name, 'n', TV_NAME_MAX);
	m.name_len = TV_NAME_MAX;
	m.status.code = TV_INTERNAL;
	memset(m.status.message, 'm', TV_STATUS_MSG_MAX);
	memset(m.status.details, 'd', TV_STATUS_DETAILS_MAX);
	put_file("wire", "error-largest", buf, encode(&m, buf));
}

static void wire_invalid(void)
{
	static const int64_t d22[] = { 2, 2 }, d0[] = { 0 };
	static const int64_t dbad[] = { 0, 1ll << 62, 8 };
	static struct tv_msg m;
	static uint8_t buf[CAP];
	size_t len, meta_off;
	uint8_t *meta;
	int i, d;

	msg_init(&m, TV_MSG_META_DATA_UPDATE, 1, 1, "bad");
	m.meta_valid = 1;
	meta_set(&m.meta, TV_DT_FLOAT, 2, d22, 16);
	len = encode(&m, buf);
	put_file("wire", "bad-short-header", buf, 15);
	put_file("wire", "bad-truncated", buf, len - 1);
	buf[len] = 0;
	put_file("wire", "bad-trailing", buf, len + 1);
	buf[len - 1] ^= 1;
	put_file("wire", "bad-checksum", buf, len);
	buf[len - 1] ^= 1;
	buf[0] = 'X';
	put_file("wire", "bad-magic", buf, len);
	buf[0] = 'T';
	buf[2] = 2;
	put_file("wire", "bad-version", buf, len);
	buf[2] = 1;
	buf[6] = 1; /* reserved */
	fix_header(buf, len, (uint32_t)(len - 16));
	put_file("wire", "bad-reserved", buf, len);
	buf[6] = 0;
	buf[4] = 0x01; /* META: not allowed on an update */
	fix_header(buf, len, (uint32_t)(len - 16));
	put_file("wire", "bad-flag", buf, len);
	buf[4] = 0;
	buf[16 + 14] = 0; /* a NUL in the name */
	fix_header(buf, len, (uint32_t)(len - 16));
	put_file("wire", "bad-name-nul", buf, len);
	fix_header(buf, len, 2583);
	put_file("wire", "bad-body-len", buf, len);

	/* Metadata rewritten by hand: [0, 2^62, 8] overflows int64. */
	meta_set(&m.meta, TV_DT_FLOAT, 1, d0, 0);
	encode(&m, buf);
	meta_off = 16 + 14 + 3;
	meta = buf + meta_off;
	meta[5] = 3;
	for (d = 0; d < 3; d++)
		for (i = 0; i < 8; i++)
			meta[14 + 8 * d + i] =
				(uint8_t)((uint64_t)dbad[d] >> (8 * i));
	len = meta_off + 14 + 24;
	fix_header(buf, len, (uint32_t)(len - 16));
	put_file("wire", "bad-dims-overflow", buf, len);
}

/* ---- fuzz_dispatch programs -------------------------------------------- */

struct prog {
	uint8_t b[CAP];
	size_t n;
};

static void p_u8(struct prog *p, uint8_t v)
{
	p->b[p->n++] = v;
}

static void p_le(struct prog *p, uint64_t v, int n)
{
	while (n--) {
		p_u8(p, (uint8_t)v);
		v >>= 8;
	}
}

static void p_bytes(struct prog *p, const void *src, size_t n)
{
	memcpy(p->b + p->n, src, n);
	p->n += n;
}

/* Op 0/1: raw write, any immediate, from node `from`. */
static void p_raw(struct prog *p, int from, uint32_t imm, const void *bytes,
		  size_t len)
{
	p_u8(p, (uint8_t)(0x00 | from));
	p_le(p, imm, 4);
	p_le(p, len, 2);
	p_bytes(p, bytes, len);
}

static void p_msg(struct prog *p, int from, const struct tv_msg *m)
{
	static uint8_t buf[CAP];

	p_raw(p, from, TV_IMM_MESSAGE, buf, encode(m, buf));
}

/* Run k simulator events (0: until quiescent). */
static void p_run(struct prog *p, uint8_t k)
{
	p_u8(p, 6 << 1);
	p_u8(p, k);
}

static void p_save(struct prog *p, const char *name)
{
	put_file("dispatch", name, p->b, p->n);
	p->n = 0;
}

/*
 * Indexes in the start state (fuzz_dispatch.c): node 1's requests are
 * "c" step 1 -> 0 (done), "a" step 1 -> 1, "c" step 2 -> 2, "r" -> 3;
 * node 0's request for "b" is 0.  Known index selectors: 0..3 = 0..3.
 */
static void dispatch_programs(void)
{
	static const int64_t d22[] = { 2, 2 }, d2[] = { 2 };
	static const uint8_t junk[40] = { 0xde, 0xad, 0xbe, 0xef };
	static struct prog p;
	static struct tv_msg m;
	int i;

	p_u8(&p, 0);
	p_save(&p, "idle");
	p_u8(&p, 1);
	p_save(&p, "idle-validate");

	p_u8(&p, 0);
	p_raw(&p, 0, TV_IMM_MESSAGE, junk, sizeof(junk));
	p_save(&p, "junk-message");

	/* A valid update for "a", then its tensor into the advertised place. */
	for (i = 0; i < 2; i++) {
		p_u8(&p, (uint8_t)i);
		msg_init(&m, TV_MSG_META_DATA_UPDATE, 1, 1, "a");
		m.meta_valid = 1;
		meta_set(&m.meta, TV_DT_FLOAT, 2, d22, 16);
		p_msg(&p, 0, &m);
		/* Node 1 advertised, node 0 has not seen its RE_REQUEST yet. */
		p_run(&p, 14);
		p_u8(&p, 5 << 1); /* tensor bytes, the newest destination */
		p_u8(&p, 0);
		p_u8(&p, 1);
		p_le(&p, 16, 2);
		p_bytes(&p, "0123456789abcdef", 16);
		p_save(&p, i ? "update-then-write-validate" :
			       "update-then-write");
	}

	/* A string tensor for "a": the receiver parses the written proto. */
	p_u8(&p, 0);
	msg_init(&m, TV_MSG_META_DATA_UPDATE, 1, 1, "a");
	m.meta_valid = 1;
	meta_set(&m.meta, TV_DT_STRING, 1, d2, 12);
	p_msg(&p, 0, &m);
	p_run(&p, 14);
	p_u8(&p, 5 << 1);
	p_u8(&p, 0);
	p_u8(&p, 1);
	p_le(&p, 12, 2);
	p_bytes(&p, "\x08\x07\x12\x04\x12\x02\x08\x02\x42\x00\x42\x00", 12);
	p_save(&p, "update-string-then-proto");

	p_u8(&p, 0);
	msg_init(&m, TV_MSG_ERROR_STATUS, 2, 2, "c");
	tv_status_set(&m.status, TV_ABORTED, "hostile error");
	p_msg(&p, 0, &m);
	p_save(&p, "error-for-pending");

	/* Node 1 cancels "r" (0-byte RE_REQUEST) before its real one lands. */
	p_u8(&p, 0);
	msg_init(&m, TV_MSG_TENSOR_RE_REQUEST, 3, 1, "r");
	p_msg(&p, 1, &m);
	p_save(&p, "re-request-cancel");

	/* Node 1 asks for the published "p" with an index it never used. */
	p_u8(&p, 0);
	msg_init(&m, TV_MSG_TENSOR_REQUEST, 100, 1, "p");
	p_msg(&p, 1, &m);
	p_save(&p, "request-unknown-index");

	/* Reuses index 1 (node 0 has a live response for "a"). */
	p_u8(&p, 0);
	msg_init(&m, TV_MSG_TENSOR_REQUEST, 1, 1, "s");
	p_msg(&p, 1, &m);
	p_save(&p, "request-reused-index");

	/* Built messages: an update for "a" and node 1's RE_REQUEST for "r". */
	p_u8(&p, 0);
	p_u8(&p, 3 << 1);
	p_bytes(&p, "\x00\x01\x00\x00\x04\x00\x02\x02", 8);
	p_u8(&p, (3 << 1) | 1);
	p_bytes(&p, "\x01\x03\x00\x04\x00\x00", 6);
	p_save(&p, "built-messages");

	/* ACKs nobody asked for, and a tensor write nobody awaits. */
	p_u8(&p, 0);
	for (i = 0; i < 10; i++) {
		p_u8(&p, 2 << 1);
		p_u8(&p, 1);
		p_le(&p, 0, 2);
	}
	p_u8(&p, (2 << 1) | 1);
	p_u8(&p, 2);
	p_u8(&p, 0);
	p_le(&p, 0, 2);
	p_save(&p, "acks-and-stray-write");

	/* API traffic: node 1 receives "p"; node 0 sends "a" step 1. */
	p_u8(&p, 0);
	p_u8(&p, (7 << 1) | 1);
	p_bytes(&p, "\x00\x00\x03\x00", 4);
	p_run(&p, 0);
	p_u8(&p, 7 << 1);
	p_bytes(&p, "\x01\x00\x00\x04", 4);
	p_run(&p, 0);
	p_save(&p, "api-traffic");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	g_root = argv[1];
	wire_valid();
	wire_invalid();
	dispatch_programs();
	return 0;
}
