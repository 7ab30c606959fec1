/*
 * This file is private to tensorverbs: little-endian integers in byte
 * buffers, written and read with shifts, so that no struct is ever laid
 * over bytes that came from a peer and the host's byte order never leaks
 * into a blob.  Callers check the buffer's bounds before calling.
 */
#ifndef TV_ENGINE_LE_H
#define TV_ENGINE_LE_H

#include <stdint.h>

/* Writes the low `bytes` bytes of v at p, least significant first. */
static inline void tv_le_put(uint8_t *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Reads `bytes` bytes at p, least significant first. */
static inline uint64_t tv_le_get(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

#endif /* TV_ENGINE_LE_H */
