/*
 * This file is private to tensorverbs' fuzz targets: the libFuzzer entry
 * point, a cursor over the fuzz input, a message builder and the check
 * that aborts (so libFuzzer saves the input and ctest's replay fails).
 */
#ifndef TV_FUZZ_H
#define TV_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Abort with file:line and the condition: libFuzzer reports a crash. */
#define FZ_CHECK(cond)                                                   \
	do {                                                             \
		if (!(cond))                                             \
			fz_fail(__FILE__, __LINE__, #cond);              \
	} while (0)

void fz_fail(const char *file, int line, const char *what)
	__attribute__((noreturn));

/* Reads past the end yield zeros: every input is a valid program. */
struct fz_cur {
	const uint8_t *p;
	size_t left;
};

bool fz_more(const struct fz_cur *c);
uint8_t fz_u8(struct fz_cur *c);
uint16_t fz_u16(struct fz_cur *c);
uint32_t fz_u32(struct fz_cur *c);
uint64_t fz_u64(struct fz_cur *c);
/* Copies n bytes (zero-padded past the end). */
void fz_bytes(struct fz_cur *c, void *dst, size_t n);

/* What the builder may pick instead of a fuzzed value. */
#define FZ_KNOWN_MAX 16
struct fz_dest {
	uint64_t addr;
	uint32_t rkey;
	uint64_t bytes;
};

struct fz_known {
	uint32_t index[FZ_KNOWN_MAX];
	uint32_t nindex;
	uint64_t step[FZ_KNOWN_MAX];
	uint32_t nstep;
	const char *name[FZ_KNOWN_MAX];
	uint32_t nname;
	struct fz_dest dest[FZ_KNOWN_MAX];
	uint32_t ndest;
};

/*
 * A message from fuzz bytes, mostly valid: selectors pick known indexes,
 * steps, names and destinations (so the engine finds what it names), and
 * sizes are computed from dims unless the input asks for a raw value.
 * May still be invalid: tv_wire_encode() decides.
 */
void fz_build_msg(struct fz_cur *c, const struct fz_known *k,
		  struct tv_msg *msg_p);

#endif /* TV_FUZZ_H */
