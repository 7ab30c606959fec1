/*
 * This file is private to tensorverbs' engine: the wire codec.
 *
 * Control messages are written into the peer's fixed rx message buffer with
 * RDMA_WRITE_WITH_IMM (imm TV_IMM_MESSAGE).  The layout is explicit,
 * versioned and little-endian, encoded field by field; docs/wire-format.md
 * is its specification.  Every decoded byte is hostile: tv_wire_decode()
 * rejects anything malformed with a negative errno and never reads past len.
 */
#ifndef TV_ENGINE_WIRE_H
#define TV_ENGINE_WIRE_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tensorverbs/tensor.h>

#define TV_WIRE_VERSION 2

/*
 * Immediate values (host order in the facade).  A tensor write's immediate
 * is the request index, with TV_IMM_ACK_FLAG set when the write also
 * acknowledges the last message its sender parsed (the ACK rides on the
 * write instead of being a write of its own: one packet fewer per fetch).
 * Indexes stop below 0x7FFFFFFE so that flag | index never reads as a
 * message or an ACK.
 */
#define TV_IMM_MESSAGE 0xFFFFFFFFu
#define TV_IMM_ACK 0xFFFFFFFEu
#define TV_IMM_ACK_FLAG 0x80000000u
#define TV_IMM_MAX_REQUEST 0x7FFFFFFDu /* tensor writes: 0..this */

/* A tensor write's immediate (either ACK flag); else a message or an ACK. */
static inline int tv_imm_is_write(uint32_t imm)
{
	return imm != TV_IMM_MESSAGE && imm != TV_IMM_ACK;
}

/* The request index of a tensor write's immediate. */
static inline uint32_t tv_imm_index(uint32_t imm)
{
	return imm & ~TV_IMM_ACK_FLAG;
}

/* Does this immediate acknowledge a message: an ACK, or a write with one? */
static inline int tv_imm_acks(uint32_t imm)
{
	return imm == TV_IMM_ACK ||
	       (tv_imm_is_write(imm) && (imm & TV_IMM_ACK_FLAG));
}

/* Message types: the values of the original code. */
enum tv_msg_type {
	TV_MSG_META_DATA_UPDATE = 0,
	TV_MSG_TENSOR_RE_REQUEST = 1,
	TV_MSG_TENSOR_REQUEST = 2,
	TV_MSG_ERROR_STATUS = 3,
	TV_MSG_TYPE_COUNT = 4
};

/*
 * The decoded form.  Which fields a type carries:
 *  TENSOR_REQUEST, TENSOR_RE_REQUEST: name, step_id, request_index,
 *      remote_addr, rkey, remote_bytes (advertised destination), meta (the
 *      receiver's cached metadata; meta_valid=0 when it has none).
 *  META_DATA_UPDATE: name, step_id, request_index, meta (meta_valid=1),
 *      checksum (has_checksum=1 in validation mode).
 *  ERROR_STATUS: name, step_id, request_index, status (code != TV_OK,
 *      message, details).
 * Fields a type does not carry are zero after decode.
 */
struct tv_msg {
	enum tv_msg_type type;
	uint64_t step_id;
	uint32_t request_index;     /* <= TV_IMM_MAX_REQUEST */
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t remote_bytes;
	uint8_t meta_valid;
	struct tv_meta meta;        /* tv_meta_validate() holds when valid */
	uint8_t has_checksum;
	uint64_t checksum;
	/* The texts last: see tv_wire_msg_clear(). */
	uint16_t name_len;
	char name[TV_NAME_MAX + 1]; /* NUL-terminated; no NUL inside */
	struct tv_status status;
};

/*
 * Every field zero, the name and the status empty (TV_OK): what memset()
 * would give to a reader, without writing the name's 513 bytes and the
 * status's 2 KiB of text (a message is cleared for every send and
 * receive; glibc zeroes 2 KiB and more with `rep stosb`, which emulated
 * CPUs run a byte at a time).
 */
void tv_wire_msg_clear(struct tv_msg *msg);
/*
 * The same but the metadata's 32 dims (internal): they stay as they were,
 * unread with a rank of 0.  For the engine's own messages, cleared on the
 * fetch path, where zeroing costs about 3 ns per 8 bytes under emulation.
 */
void tv__wire_msg_reset(struct tv_msg *msg);

/* Largest encoding of any message: the size of a message buffer. */
size_t tv_wire_max_bytes(void);

/* -EINVAL for an invalid message, -ENOBUFS if cap is too small. */
int tv_wire_encode(const struct tv_msg *msg, uint8_t *buf, size_t cap,
		   size_t *len_p);
/* -EBADMSG (malformed), -EPROTO (bad version/magic), -EMSGSIZE (too long). */
int tv_wire_decode(const uint8_t *buf, size_t len, struct tv_msg *msg_p);

/*
 * The engine's own fast paths (internal).  tv__wire_encode_built() skips
 * tv_wire_encode()'s validation (name scan, metadata rules): the engine
 * builds its messages from what it validated on the way in (a name at the
 * API, metadata at decode), and the peer's decoder checks every byte
 * anyway.  tv__wire_decode_scratch() decodes straight into a scratch
 * message, which holds garbage after a failure, instead of into a copy
 * moved out on success; dims past the metadata's rank are not cleared.
 */
int tv__wire_encode_built(const struct tv_msg *msg, uint8_t *buf, size_t cap,
			  size_t *len_p);
/*
 * A TENSOR_REQUEST or TENSOR_RE_REQUEST by reference: the engine encodes
 * its requests from this, without filling a struct tv_msg first (the
 * bytes are the same: tv_wire_encode() encodes requests through it too).
 */
struct tv__wire_req {
	enum tv_msg_type type;
	uint32_t request_index;
	uint64_t step_id;
	const char *name;           /* name_len bytes, no NUL needed */
	uint16_t name_len;
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t remote_bytes;
	const struct tv_meta *meta; /* the cached metadata, or NULL */
};
int tv__wire_encode_req(const struct tv__wire_req *r, uint8_t *buf,
			size_t cap, size_t *len_p);
int tv__wire_decode_scratch(const uint8_t *buf, size_t len,
			    struct tv_msg *scratch);

/*
 * A TENSOR_REQUEST with metadata, seen where it lies: the publisher's
 * early answer (engine/response.c) reads it before the decoder does.
 * tv__wire_peek_request() checks the header, the checksum, every length
 * and each integer field the decoder checks on its own (index, rank,
 * remote range), and points at the name and the dims in buf.  It does not
 * check the name's bytes, the dtype, is_dead, the dims or the metadata as
 * a whole: a caller uses a view only where the name equals a name it
 * checked and the metadata equals a tensor's valid metadata, and then the
 * decoder accepts the message with these very fields (tests/fuzz pins
 * this).  false: not such a request, or not well formed.
 */
struct tv__wire_req_view {
	uint32_t request_index;
	uint64_t step_id;
	const char *name;          /* name_len bytes in buf, unchecked */
	uint16_t name_len;         /* 1..TV_NAME_MAX */
	uint64_t remote_addr;
	uint64_t remote_bytes;     /* remote_addr + remote_bytes: no wrap */
	uint32_t rkey;
	uint32_t dtype;            /* unchecked */
	uint8_t is_dead;           /* unchecked */
	uint8_t rank;              /* <= TV_MAX_RANK */
	uint64_t tensor_bytes;
	const uint8_t *dims;       /* rank little-endian u64s in buf */
};
bool tv__wire_peek_request(const uint8_t *buf, size_t len,
			   struct tv__wire_req_view *v_p);
/* The view's dim i (< rank), as the decoder would read it. */
static inline uint64_t tv__wire_view_dim(const struct tv__wire_req_view *v,
					 uint32_t i)
{
	uint64_t le;

	memcpy(&le, v->dims + 8 * (size_t)i, 8);
	return le64toh(le);
}

const char *tv_msg_type_name(enum tv_msg_type type);

#endif /* TV_ENGINE_WIRE_H */
