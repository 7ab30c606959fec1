/*
 * The wire codec: struct tv_msg <-> the bytes of docs/wire-format.md.
 *
 * Every field is written and read one at a time with an explicit width in
 * little-endian order; nothing is ever memcpy'd from or cast onto a struct,
 * so no padding, pointer or uninitialised byte can reach the wire (the
 * original TensorFlow code leaked all three).  The encoder computes the
 * exact length first, so it either writes a whole message within cap or
 * writes nothing.  The decoder treats every byte as hostile: each read is
 * bounds-checked, and every field is validated before it is stored.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <endian.h>
#include <string.h>

/* Inlined: two calls per message, a 12-byte one among them, on the fetch path. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "hot.h"
#include "meta.h"
#include "text.h"
#include "wire.h"

/* Header: magic(2) version(1) type(1) flags(2) reserved(2) body_len(4) sum(4) */
#define HDR_BYTES 16
#define HDR_SUMMED 12 /* header bytes covered by the checksum */
#define MAGIC0 'T'
#define MAGIC1 'V'

#define FLAG_META 0x0001u     /* REQUEST, RE_REQUEST: metadata follows */
#define FLAG_CHECKSUM 0x0002u /* META_DATA_UPDATE: checksum follows */

/* request_index(4) step_id(8) name_len(2) name */
#define COMMON_FIXED (4 + 8 + 2)
/* dtype(4) is_dead(1) rank(1) tensor_bytes(8) dims(8 each) */
#define META_FIXED (4 + 1 + 1 + 8)
/* remote_addr(8) remote_bytes(8) rkey(4) */
#define REQUEST_FIXED (8 + 8 + 4)
/* code(4) message_len(2) message details_len(2) details */
#define ERROR_FIXED (4 + 2 + 2)

/* ------------------------------------------------------------------ */
/* Sizes */

static size_t meta_len(uint32_t rank)
{
	assert(rank <= TV_MAX_RANK);
	return META_FIXED + 8 * (size_t)rank;
}

static size_t body_max(void)
{
	size_t common = COMMON_FIXED + TV_NAME_MAX;
	size_t req = common + REQUEST_FIXED + meta_len(TV_MAX_RANK);
	size_t upd = common + meta_len(TV_MAX_RANK) + 8;
	size_t err = common + ERROR_FIXED + TV_STATUS_MSG_MAX +
		     TV_STATUS_DETAILS_MAX;
	size_t max = req;

	if (upd > max)
		max = upd;
	if (err > max)
		max = err;
	return max;
}

size_t tv_wire_max_bytes(void)
{
	return HDR_BYTES + body_max();
}

/* Body bytes of a message that passed msg_check(). */
static size_t body_len(const struct tv_msg *m)
{
	size_t len = COMMON_FIXED + m->name_len;

	switch (m->type) {
	case TV_MSG_META_DATA_UPDATE:
		len += meta_len(m->meta.shape.rank);
		if (m->has_checksum)
			len += 8;
		break;
	case TV_MSG_ERROR_STATUS:
		len += ERROR_FIXED + strlen(m->status.message) +
		       strlen(m->status.details);
		break;
	default: /* requests: req_body_len() */
		assert(0 && "msg_check lets no unknown type through");
	}
	assert(len <= body_max());
	return len;
}

static size_t req_body_len(const struct tv__wire_req *r)
{
	size_t len = COMMON_FIXED + r->name_len + REQUEST_FIXED;

	if (r->meta)
		len += meta_len(r->meta->shape.rank);
	assert(len <= body_max());
	return len;
}

/* ------------------------------------------------------------------ */
/* Validation shared by both directions */

static bool text_ok(const char *s, size_t max)
{
	return strnlen(s, max + 1) <= max;
}

/* A destination must not wrap the address space. */
static inline bool range_ok(uint64_t addr, uint64_t bytes)
{
	uint64_t end;

	return !__builtin_add_overflow(addr, bytes, &end);
}

static bool remote_ok(const struct tv_msg *m)
{
	return range_ok(m->remote_addr, m->remote_bytes);
}

static int msg_check_type(const struct tv_msg *m)
{
	switch (m->type) {
	case TV_MSG_TENSOR_REQUEST:
	case TV_MSG_TENSOR_RE_REQUEST:
		if (m->meta_valid > 1 || m->has_checksum || !remote_ok(m))
			return -EINVAL;
		if (m->meta_valid && tv_meta_validate(&m->meta))
			return -EINVAL;
		return 0;
	case TV_MSG_META_DATA_UPDATE:
		if (m->meta_valid != 1 || m->has_checksum > 1)
			return -EINVAL;
		return tv_meta_validate(&m->meta) ? -EINVAL : 0;
	case TV_MSG_ERROR_STATUS:
		if (m->meta_valid || m->has_checksum)
			return -EINVAL;
		if (m->status.code == TV_OK ||
		    (unsigned int)m->status.code > TV_CODE_MAX)
			return -EINVAL;
		if (!text_ok(m->status.message, TV_STATUS_MSG_MAX) ||
		    !text_ok(m->status.details, TV_STATUS_DETAILS_MAX))
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

/* What tv_wire_encode() accepts; see docs/wire-format.md, "Encoding". */
static int msg_check(const struct tv_msg *m)
{
	if ((unsigned int)m->type >= TV_MSG_TYPE_COUNT)
		return -EINVAL;
	if (m->name_len == 0 || m->name_len > TV_NAME_MAX)
		return -EINVAL;
	/* name_len must be the length of a NUL-terminated name. */
	if (strnlen(m->name, TV_NAME_MAX + 1) != m->name_len)
		return -EINVAL;
	if (m->request_index > TV_IMM_MAX_REQUEST)
		return -EINVAL;
	return msg_check_type(m);
}

/* ------------------------------------------------------------------ */
/* Encoding */

struct wcur {
	uint8_t *p;
	size_t cap;
	size_t off;
};

static void put_bytes(struct wcur *w, const void *src, size_t n)
{
	assert(w->off + n <= w->cap);
	if (n)
		memcpy(w->p + w->off, src, n);
	w->off += n;
}

/* A name, unterminated on the wire, with no library call. */
static TV__INLINE_HOT void put_name(struct wcur *w, const char *name,
				     size_t n)
{
	assert(w->off + n <= w->cap);
	tv__name_put((char *)w->p + w->off, name, n);
	w->off += n;
}

/*
 * Fixed-width little-endian stores.  memcpy() of an htole value compiles to
 * one store on the usual hosts; the encoder ran a call per byte before and
 * was a tenth of a small fetch's CPU.
 */
static inline void put_u8(struct wcur *w, uint8_t v)
{
	assert(w->off + 1 <= w->cap);
	w->p[w->off++] = v;
}

static inline void put_u16(struct wcur *w, uint16_t v)
{
	uint16_t le = htole16(v);

	assert(w->off + 2 <= w->cap);
	memcpy(w->p + w->off, &le, 2);
	w->off += 2;
}

static inline void put_u32(struct wcur *w, uint32_t v)
{
	uint32_t le = htole32(v);

	assert(w->off + 4 <= w->cap);
	memcpy(w->p + w->off, &le, 4);
	w->off += 4;
}

static inline void put_u64(struct wcur *w, uint64_t v)
{
	uint64_t le = htole64(v);

	assert(w->off + 8 <= w->cap);
	memcpy(w->p + w->off, &le, 8);
	w->off += 8;
}

static TV__INLINE_HOT void put_meta(struct wcur *w, const struct tv_meta *meta)
{
	uint32_t i;

	put_u32(w, (uint32_t)meta->dtype);
	put_u8(w, meta->is_dead ? 1 : 0);
	put_u8(w, (uint8_t)meta->shape.rank);
	put_u64(w, meta->tensor_bytes);
	for (i = 0; i < meta->shape.rank; i++)
		put_u64(w, (uint64_t)meta->shape.dims[i]);
}

static void put_body(struct wcur *w, const struct tv_msg *m)
{
	size_t mlen, dlen;

	put_u32(w, m->request_index);
	put_u64(w, m->step_id);
	put_u16(w, m->name_len);
	put_name(w, m->name, m->name_len);
	switch (m->type) {
	case TV_MSG_META_DATA_UPDATE:
		put_meta(w, &m->meta);
		if (m->has_checksum)
			put_u64(w, m->checksum);
		break;
	case TV_MSG_ERROR_STATUS:
		mlen = strlen(m->status.message);
		dlen = strlen(m->status.details);
		put_u32(w, (uint32_t)m->status.code);
		put_u16(w, (uint16_t)mlen);
		put_bytes(w, m->status.message, mlen);
		put_u16(w, (uint16_t)dlen);
		put_bytes(w, m->status.details, dlen);
		break;
	default: /* requests: put_req_body() */
		assert(0 && "msg_check lets no unknown type through");
	}
}

static TV__INLINE_HOT void put_req_body(struct wcur *w,
					 const struct tv__wire_req *r)
{
	put_u32(w, r->request_index);
	put_u64(w, r->step_id);
	put_u16(w, r->name_len);
	put_name(w, r->name, r->name_len);
	put_u64(w, r->remote_addr);
	put_u64(w, r->remote_bytes);
	put_u32(w, r->rkey);
	if (r->meta)
		put_meta(w, r->meta);
}

/*
 * Header and body are hashed as one so a flipped header bit is caught: the
 * header's hash seeds the body's.  XXH3, folded to 32 bits: on messages
 * this small it takes half the instructions XXH32 did (wire version 1).
 */
static uint32_t wire_sum(const uint8_t *hdr, const uint8_t *body, size_t len)
{
	XXH64_hash_t h = XXH3_64bits_withSeed(body, len,
					      XXH3_64bits(hdr, HDR_SUMMED));

	return (uint32_t)(h ^ (h >> 32));
}

static TV__INLINE_HOT void put_header(struct wcur *w, enum tv_msg_type type,
				       uint16_t flags, size_t blen)
{
	put_u8(w, MAGIC0);
	put_u8(w, MAGIC1);
	put_u8(w, TV_WIRE_VERSION);
	put_u8(w, (uint8_t)type);
	put_u16(w, flags);
	put_u16(w, 0); /* reserved */
	put_u32(w, (uint32_t)blen);
	assert(w->off == HDR_SUMMED);
	w->off = HDR_BYTES; /* the checksum goes in once the body is there */
}

/* The body is in: the checksum over both, the length out. */
static TV__INLINE_HOT void seal(struct wcur *w, size_t blen, size_t *len_p)
{
	assert(w->off == HDR_BYTES + blen);
	w->off = HDR_SUMMED;
	put_u32(w, wire_sum(w->p, w->p + HDR_BYTES, blen));
	*len_p = HDR_BYTES + blen;
}

static TV__INLINE_HOT int wire_encode_req(const struct tv__wire_req *r,
					  uint8_t *buf, size_t cap,
					  size_t *len_p)
{
	struct wcur w = { .p = buf, .cap = cap, .off = 0 };
	size_t blen = req_body_len(r);

	if (!buf || cap < HDR_BYTES + blen)
		return -ENOBUFS;
	put_header(&w, r->type, r->meta ? FLAG_META : 0, blen);
	put_req_body(&w, r);
	seal(&w, blen, len_p);
	return 0;
}

/* A message msg_check() accepts (or one the engine built) into buf. */
static int wire_encode(const struct tv_msg *msg, uint8_t *buf, size_t cap,
		       size_t *len_p)
{
	struct wcur w = { .p = buf, .cap = cap, .off = 0 };
	size_t blen;

	if (msg->type == TV_MSG_TENSOR_REQUEST ||
	    msg->type == TV_MSG_TENSOR_RE_REQUEST) {
		/* One encoder for requests: the engine's goes straight there. */
		const struct tv__wire_req r = {
			.type = msg->type,
			.request_index = msg->request_index,
			.step_id = msg->step_id,
			.name = msg->name,
			.name_len = msg->name_len,
			.remote_addr = msg->remote_addr,
			.rkey = msg->rkey,
			.remote_bytes = msg->remote_bytes,
			.meta = msg->meta_valid ? &msg->meta : NULL,
		};

		return wire_encode_req(&r, buf, cap, len_p);
	}
	blen = body_len(msg);
	if (!buf || cap < HDR_BYTES + blen)
		return -ENOBUFS;
	put_header(&w, msg->type,
		   msg->type == TV_MSG_META_DATA_UPDATE && msg->has_checksum ?
			   FLAG_CHECKSUM : 0,
		   blen);
	put_body(&w, msg);
	seal(&w, blen, len_p);
	return 0;
}

int tv_wire_encode(const struct tv_msg *msg, uint8_t *buf, size_t cap,
		   size_t *len_p)
{
	int ret;

	if (!msg)
		return -EINVAL;
	ret = msg_check(msg);
	if (ret)
		return ret;
	return wire_encode(msg, buf, cap, len_p);
}

int tv__wire_encode_built(const struct tv_msg *msg, uint8_t *buf, size_t cap,
			  size_t *len_p)
{
	/* The cheap half of msg_check(): what body_len() relies on. */
	assert((unsigned int)msg->type < TV_MSG_TYPE_COUNT);
	assert(msg->name_len > 0 && msg->name_len <= TV_NAME_MAX);
	assert(!msg->meta_valid || msg->meta.shape.rank <= TV_MAX_RANK);
	return wire_encode(msg, buf, cap, len_p);
}

int tv__wire_encode_req(const struct tv__wire_req *r, uint8_t *buf,
			size_t cap, size_t *len_p)
{
	/* What msg_check() would hold the engine's own requests to. */
	assert(r->type == TV_MSG_TENSOR_REQUEST ||
	       r->type == TV_MSG_TENSOR_RE_REQUEST);
	assert(r->name_len > 0 && r->name_len <= TV_NAME_MAX);
	assert(r->request_index <= TV_IMM_MAX_REQUEST);
	assert(!r->meta || r->meta->shape.rank <= TV_MAX_RANK);
	return wire_encode_req(r, buf, cap, len_p);
}

/* ------------------------------------------------------------------ */
/* Decoding */

struct rcur {
	const uint8_t *p;
	size_t len;
	size_t off;
};

/* Bounds-checked little-endian loads: -EBADMSG past the end. */
static inline int get_u8(struct rcur *r, uint8_t *v_p)
{
	if (r->len - r->off < 1)
		return -EBADMSG;
	*v_p = r->p[r->off++];
	return 0;
}

static inline int get_u16(struct rcur *r, uint16_t *v_p)
{
	uint16_t le;

	if (r->len - r->off < 2)
		return -EBADMSG;
	memcpy(&le, r->p + r->off, 2);
	r->off += 2;
	*v_p = le16toh(le);
	return 0;
}

static inline int get_u32(struct rcur *r, uint32_t *v_p)
{
	uint32_t le;

	if (r->len - r->off < 4)
		return -EBADMSG;
	memcpy(&le, r->p + r->off, 4);
	r->off += 4;
	*v_p = le32toh(le);
	return 0;
}

static inline int get_u64(struct rcur *r, uint64_t *v_p)
{
	uint64_t le;

	if (r->len - r->off < 8)
		return -EBADMSG;
	memcpy(&le, r->p + r->off, 8);
	r->off += 8;
	*v_p = le64toh(le);
	return 0;
}

/* A text field's u16 length: min..max, and that many bytes left. */
static inline int get_text_len(struct rcur *r, size_t max, size_t min,
			       uint16_t *len_p)
{
	uint16_t len;

	if (get_u16(r, &len) || len > max || len < min ||
	    len > r->len - r->off)
		return -EBADMSG;
	*len_p = len;
	return 0;
}

/* A text field: u16 length, then that many bytes, none of them NUL. */
static TV__INLINE_HOT int get_text(struct rcur *r, char *dst, size_t max,
				     size_t min, uint16_t *len_p)
{
	uint16_t len;

	if (get_text_len(r, max, min, &len))
		return -EBADMSG;
	if (!tv__text_copy(dst, r->p + r->off, len))
		return -EBADMSG;
	r->off += len;
	dst[len] = '\0';
	if (len_p)
		*len_p = len;
	return 0;
}

/* The metadata's fixed fields, as integers; the rank within bounds. */
static inline int get_meta_head(struct rcur *r, uint32_t *dtype_p,
				uint8_t *dead_p, uint8_t *rank_p,
				uint64_t *bytes_p)
{
	if (get_u32(r, dtype_p) || get_u8(r, dead_p) || get_u8(r, rank_p) ||
	    get_u64(r, bytes_p) || *rank_p > TV_MAX_RANK)
		return -EBADMSG;
	return 0;
}

static TV__INLINE_HOT int get_meta(struct rcur *r, struct tv_meta *meta)
{
	uint32_t dtype, i;
	uint8_t dead, rank;
	uint64_t v;

	if (get_meta_head(r, &dtype, &dead, &rank, &meta->tensor_bytes))
		return -EBADMSG;
	/* Checked as integers before they become an enum or a bool. */
	if (!tv_dtype_valid((enum tv_dtype)dtype) || dead > 1)
		return -EBADMSG;
	meta->dtype = (enum tv_dtype)dtype;
	meta->is_dead = dead;
	meta->shape.rank = rank;
	for (i = 0; i < rank; i++) {
		if (get_u64(r, &v) || v > INT64_MAX)
			return -EBADMSG;
		meta->shape.dims[i] = (int64_t)v;
	}
	return tv_meta_validate(meta) ? -EBADMSG : 0;
}

static int get_request(struct rcur *r, uint16_t flags, struct tv_msg *m)
{
	if (get_u64(r, &m->remote_addr) || get_u64(r, &m->remote_bytes) ||
	    get_u32(r, &m->rkey))
		return -EBADMSG;
	if (!remote_ok(m))
		return -EBADMSG;
	if (flags & FLAG_META) {
		m->meta_valid = 1;
		return get_meta(r, &m->meta);
	}
	return 0;
}

static int get_update(struct rcur *r, uint16_t flags, struct tv_msg *m)
{
	m->meta_valid = 1;
	if (get_meta(r, &m->meta))
		return -EBADMSG;
	if (flags & FLAG_CHECKSUM) {
		m->has_checksum = 1;
		return get_u64(r, &m->checksum);
	}
	return 0;
}

static int get_error(struct rcur *r, struct tv_msg *m)
{
	uint32_t code;

	if (get_u32(r, &code) || code == TV_OK || code > TV_CODE_MAX)
		return -EBADMSG;
	m->status.code = (enum tv_code)code;
	if (get_text(r, m->status.message, TV_STATUS_MSG_MAX, 0, NULL) ||
	    get_text(r, m->status.details, TV_STATUS_DETAILS_MAX, 0, NULL))
		return -EBADMSG;
	return 0;
}

static int get_body(struct rcur *r, uint16_t flags, struct tv_msg *m)
{
	int ret;

	if (get_u32(r, &m->request_index) || get_u64(r, &m->step_id))
		return -EBADMSG;
	if (m->request_index > TV_IMM_MAX_REQUEST)
		return -EBADMSG;
	if (get_text(r, m->name, TV_NAME_MAX, 1, &m->name_len))
		return -EBADMSG;
	switch (m->type) {
	case TV_MSG_TENSOR_REQUEST:
	case TV_MSG_TENSOR_RE_REQUEST:
		ret = get_request(r, flags, m);
		break;
	case TV_MSG_META_DATA_UPDATE:
		ret = get_update(r, flags, m);
		break;
	case TV_MSG_ERROR_STATUS:
		ret = get_error(r, m);
		break;
	default:
		assert(0 && "the header check lets no unknown type through");
		ret = -EBADMSG;
	}
	if (ret)
		return ret;
	/* Every body byte must belong to a field: no trailing bytes. */
	return r->off == r->len ? 0 : -EBADMSG;
}

static uint16_t allowed_flags(uint8_t type)
{
	switch (type) {
	case TV_MSG_TENSOR_REQUEST:
	case TV_MSG_TENSOR_RE_REQUEST:
		return FLAG_META;
	case TV_MSG_META_DATA_UPDATE:
		return FLAG_CHECKSUM;
	default:
		return 0;
	}
}

/*
 * The header, checked in the order the documentation gives: identity
 * (-EPROTO), size (-EMSGSIZE, then -EBADMSG), integrity, then contents.
 */
static int check_header(struct rcur *r, uint8_t *type_p, uint16_t *flags_p)
{
	uint8_t m0, m1, version, type;
	uint16_t flags, reserved;
	uint32_t blen, sum;

	if (r->len < HDR_BYTES)
		return -EBADMSG;
	/* The whole header is there: these cannot fail. */
	(void)(get_u8(r, &m0) || get_u8(r, &m1) || get_u8(r, &version) ||
	       get_u8(r, &type) || get_u16(r, &flags) ||
	       get_u16(r, &reserved) || get_u32(r, &blen) ||
	       get_u32(r, &sum));
	assert(r->off == HDR_BYTES);
	if (m0 != MAGIC0 || m1 != MAGIC1 || version != TV_WIRE_VERSION)
		return -EPROTO;
	if (blen > body_max())
		return -EMSGSIZE;
	if (r->len - HDR_BYTES != blen)
		return -EBADMSG;
	if (sum != wire_sum(r->p, r->p + HDR_BYTES, blen))
		return -EBADMSG;
	if (reserved != 0 || type >= TV_MSG_TYPE_COUNT ||
	    (flags & ~allowed_flags(type)))
		return -EBADMSG;
	*type_p = type;
	*flags_p = flags;
	return 0;
}

void tv_wire_msg_clear(struct tv_msg *msg)
{
	tv__wire_msg_reset(msg);
	memset(msg->meta.shape.dims, 0, sizeof(msg->meta.shape.dims));
}

void tv__wire_msg_reset(struct tv_msg *msg)
{
	memset(msg, 0, offsetof(struct tv_msg, meta));
	tv__meta_clear(&msg->meta);
	memset(&msg->has_checksum, 0,
	       offsetof(struct tv_msg, name) -
	       offsetof(struct tv_msg, has_checksum));
	msg->name[0] = '\0';
	tv_status_ok(&msg->status);
}

/* *dst = *src, copying the texts only up to their NUL. */
static void msg_move(struct tv_msg *dst, const struct tv_msg *src)
{
	assert(src->name_len <= TV_NAME_MAX && !src->name[src->name_len]);
	memcpy(dst, src, offsetof(struct tv_msg, name) + src->name_len + 1);
	dst->status.code = src->status.code;
	memcpy(dst->status.message, src->status.message,
	       strlen(src->status.message) + 1);
	memcpy(dst->status.details, src->status.details,
	       strlen(src->status.details) + 1);
}

/* scratch: the engine's message; its dims past the rank may keep garbage. */
static int wire_decode(const uint8_t *buf, size_t len, struct tv_msg *m,
		       bool scratch)
{
	struct rcur r = { .p = buf, .len = len, .off = 0 };
	uint16_t flags;
	uint8_t type;
	int ret;

	ret = check_header(&r, &type, &flags);
	if (ret)
		return ret;
	/* Cleared first: fields the type does not carry read as zero. */
	if (scratch)
		tv__wire_msg_reset(m);
	else
		tv_wire_msg_clear(m);
	m->type = (enum tv_msg_type)type;
	return get_body(&r, flags, m);
}

int tv_wire_decode(const uint8_t *buf, size_t len, struct tv_msg *msg_p)
{
	struct tv_msg m;
	int ret;

	if (!buf || !msg_p)
		return -EINVAL;
	ret = wire_decode(buf, len, &m, false);
	if (ret)
		return ret;
	msg_move(msg_p, &m);
	return 0;
}

int tv__wire_decode_scratch(const uint8_t *buf, size_t len,
			    struct tv_msg *scratch)
{
	assert(buf && scratch);
	return wire_decode(buf, len, scratch, true);
}

/*
 * The peek reads what get_body() reads, in the same order and with the
 * same bounds, and leaves the checks that need the bytes themselves (name,
 * dtype, dead, dims, tv_meta_validate) to a caller comparing with its own.
 */
static TV__INLINE_HOT bool peek_fields(struct rcur *r,
					struct tv__wire_req_view *v)
{
	uint32_t idx;

	if (get_u32(r, &idx) || get_u64(r, &v->step_id) ||
	    idx > TV_IMM_MAX_REQUEST ||
	    get_text_len(r, TV_NAME_MAX, 1, &v->name_len))
		return false;
	v->request_index = idx;
	v->name = (const char *)r->p + r->off;
	r->off += v->name_len;
	if (get_u64(r, &v->remote_addr) || get_u64(r, &v->remote_bytes) ||
	    get_u32(r, &v->rkey) || !range_ok(v->remote_addr, v->remote_bytes))
		return false;
	if (get_meta_head(r, &v->dtype, &v->is_dead, &v->rank,
			  &v->tensor_bytes))
		return false;
	/* Every body byte belongs to a field: the dims end the message. */
	v->dims = r->p + r->off;
	return r->len - r->off == 8 * (size_t)v->rank;
}

bool tv__wire_peek_request(const uint8_t *buf, size_t len,
			   struct tv__wire_req_view *v_p)
{
	struct rcur r = { .p = buf, .len = len, .off = 0 };
	struct tv__wire_req_view v;
	uint16_t flags;
	uint8_t type;

	if (check_header(&r, &type, &flags) ||
	    type != TV_MSG_TENSOR_REQUEST || !(flags & FLAG_META) ||
	    !peek_fields(&r, &v))
		return false;
	*v_p = v;
	return true;
}

const char *tv_msg_type_name(enum tv_msg_type type)
{
	switch (type) {
	case TV_MSG_META_DATA_UPDATE:
		return "META_DATA_UPDATE";
	case TV_MSG_TENSOR_RE_REQUEST:
		return "TENSOR_RE_REQUEST";
	case TV_MSG_TENSOR_REQUEST:
		return "TENSOR_REQUEST";
	case TV_MSG_ERROR_STATUS:
		return "ERROR_STATUS";
	default:
		return "INVALID";
	}
}
