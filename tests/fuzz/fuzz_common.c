/*
 * Shared by the fuzz targets: the input cursor and the message builder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

void fz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: invariant failed: %s\n", file, line, what);
	abort();
}

bool fz_more(const struct fz_cur *c)
{
	return c->left > 0;
}

void fz_bytes(struct fz_cur *c, void *dst, size_t n)
{
	size_t take = n < c->left ? n : c->left;

	memcpy(dst, c->p, take);
	memset((uint8_t *)dst + take, 0, n - take);
	c->p += take;
	c->left -= take;
}

static uint64_t fz_le(struct fz_cur *c, unsigned int n)
{
	uint8_t b[8];
	uint64_t v = 0;

	fz_bytes(c, b, n);
	while (n--)
		v = (v << 8) | b[n];
	return v;
}

uint8_t fz_u8(struct fz_cur *c)
{
	return (uint8_t)fz_le(c, 1);
}

uint16_t fz_u16(struct fz_cur *c)
{
	return (uint16_t)fz_le(c, 2);
}

uint32_t fz_u32(struct fz_cur *c)
{
	return (uint32_t)fz_le(c, 4);
}

uint64_t fz_u64(struct fz_cur *c)
{
	return fz_le(c, 8);
}

/* A selector below 0xE0 picks a known value when there is one. */
static bool fz_pick(struct fz_cur *c, uint32_t n, uint32_t *i_p)
{
	uint8_t sel = fz_u8(c);

	if (!n || sel >= 0xE0)
		return false;
	*i_p = sel % n;
	return true;
}

/* Text without NUL bytes (the wire forbids them). */
static void fz_text(struct fz_cur *c, char *dst, size_t len)
{
	size_t i;

	fz_bytes(c, dst, len);
	for (i = 0; i < len; i++)
		if (!dst[i])
			dst[i] = '_';
	dst[len] = '\0';
}

static void fz_name(struct fz_cur *c, const struct fz_known *k,
		    struct tv_msg *m)
{
	uint32_t i;
	size_t len;

	if (fz_pick(c, k->nname, &i)) {
		len = strlen(k->name[i]);
		memcpy(m->name, k->name[i], len + 1);
	} else {
		len = fz_u16(c) % (TV_NAME_MAX + 2); /* 0 and 513: invalid */
		fz_text(c, m->name, len > TV_NAME_MAX ? TV_NAME_MAX : len);
	}
	m->name_len = (uint16_t)len;
}

static const enum tv_dtype fz_dtypes[] = {
	TV_DT_FLOAT, TV_DT_DOUBLE, TV_DT_INT32,	 TV_DT_UINT8,
	TV_DT_INT16, TV_DT_INT8,   TV_DT_STRING, TV_DT_INT64,
	TV_DT_BOOL,  TV_DT_BFLOAT16, TV_DT_UINT16, TV_DT_HALF,
	TV_DT_UINT32, TV_DT_UINT64,
};

/* Elements x dtype size, or the fuzzed value when asked or it overflows. */
static uint64_t fz_tensor_bytes(struct fz_cur *c, const struct tv_meta *m,
				uint8_t flags)
{
	uint64_t n = 1, bytes;
	uint32_t i;

	if (flags & 0x10)
		return fz_u64(c);
	if (m->is_dead)
		return 0;
	if (m->dtype == TV_DT_STRING)
		return fz_u16(c);
	/* rank may be TV_MAX_RANK + 1 on purpose (invalid): stay inside. */
	for (i = 0; i < m->shape.rank && i < TV_MAX_RANK; i++) {
		if (!m->shape.dims[i])
			return 0;
		if (__builtin_mul_overflow(n, (uint64_t)m->shape.dims[i], &n))
			return fz_u64(c);
	}
	if (__builtin_mul_overflow(n, (uint64_t)tv_dtype_size(m->dtype),
				   &bytes))
		return fz_u64(c);
	return bytes;
}

static void fz_meta(struct fz_cur *c, struct tv_meta *m)
{
	uint8_t flags = fz_u8(c);
	uint32_t i;

	memset(m, 0, sizeof(*m));
	m->dtype = (flags & 0x80) ? (enum tv_dtype)fz_u32(c) :
		   fz_dtypes[fz_u8(c) % (sizeof(fz_dtypes) /
					 sizeof(fz_dtypes[0]))];
	m->is_dead = flags & 1;
	/* Small ranks mostly; 33 (invalid) now and then. */
	m->shape.rank = (flags & 0x40) ? fz_u8(c) % (TV_MAX_RANK + 2) :
					 (flags >> 1) & 3;
	for (i = 0; i < m->shape.rank && i < TV_MAX_RANK; i++)
		m->shape.dims[i] = (flags & 0x20) ? (int64_t)fz_u64(c) :
						    fz_u8(c) % 9;
	m->tensor_bytes = fz_tensor_bytes(c, m, flags);
}

static void fz_dest_fields(struct fz_cur *c, const struct fz_known *k,
			   struct tv_msg *m)
{
	uint32_t i;

	if (fz_pick(c, k->ndest, &i)) {
		m->remote_addr = k->dest[i].addr;
		m->rkey = k->dest[i].rkey;
		m->remote_bytes = k->dest[i].bytes;
		/* Shrink or grow the advertised size a little, sometimes. */
		m->remote_bytes += (int8_t)fz_u8(c);
		return;
	}
	m->remote_addr = fz_u64(c);
	m->remote_bytes = fz_u64(c);
	m->rkey = fz_u32(c);
}

static void fz_error_fields(struct fz_cur *c, struct tv_msg *m)
{
	uint8_t mlen, dlen;

	m->status.code = (enum tv_code)(fz_u8(c) % (TV_CODE_MAX + 2));
	mlen = fz_u8(c);
	fz_text(c, m->status.message, mlen);
	dlen = fz_u8(c) & 0x1f;
	fz_text(c, m->status.details, dlen);
}

void fz_build_msg(struct fz_cur *c, const struct fz_known *k,
		  struct tv_msg *msg_p)
{
	struct tv_msg *m = msg_p;
	uint8_t flags = fz_u8(c);
	uint32_t i;

	memset(m, 0, sizeof(*m));
	m->type = (enum tv_msg_type)(flags & 3);
	m->request_index = fz_pick(c, k->nindex, &i) ? k->index[i] : fz_u32(c);
	m->step_id = fz_pick(c, k->nstep, &i) ? k->step[i] : fz_u64(c);
	fz_name(c, k, m);
	switch (m->type) {
	case TV_MSG_TENSOR_REQUEST:
	case TV_MSG_TENSOR_RE_REQUEST:
		fz_dest_fields(c, k, m);
		m->meta_valid = (flags >> 2) & 1;
		if (m->meta_valid)
			fz_meta(c, &m->meta);
		break;
	case TV_MSG_META_DATA_UPDATE:
		m->meta_valid = 1;
		fz_meta(c, &m->meta);
		m->has_checksum = (flags >> 2) & 1;
		if (m->has_checksum)
			m->checksum = fz_u64(c);
		break;
	default:
		fz_error_fields(c, m);
		break;
	}
}
