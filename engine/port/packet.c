/*
 * LL8 and LL16 packets (MSCCL++ packet_device.hpp): data and a flag in the
 * same naturally aligned 8-byte word, so a reader polling the flag never
 * takes data from a write that has not landed in that word yet.  RDMA
 * places a write in pieces no smaller than aligned 8-byte words (the
 * assumption MSCCL++ states), in any order: LL16 gives each 8-byte half
 * of its 16 bytes its own flag for that reason.
 *
 * 32-bit fields are little-endian in memory, written and read with
 * shifts; a word is read with one 8-byte atomic load.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "port_int.h"

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* One {data, flag} word at w (8-byte aligned). */
static void word_put(uint8_t *w, uint32_t data, uint32_t flag)
{
	uint8_t b[8];

	put32(b, data);
	put32(b + 4, flag);
	memcpy(w, b, sizeof(b));
}

/*
 * The word at w in one 8-byte load: false when its flag is not flag.
 * Relaxed: data and flag arrive in the same load, so nothing else needs
 * ordering (a poller that reads other memory after it fences itself).
 */
static bool word_get(const uint8_t *w, uint32_t flag, uint32_t *data_p)
{
	uint64_t v = atomic_load_explicit((const _Atomic uint64_t *)
					  (const void *)w,
					  memory_order_relaxed);
	uint8_t b[8];

	memcpy(b, &v, sizeof(b));
	if (get32(b + 4) != flag)
		return false;
	*data_p = get32(b);
	return true;
}

static bool args_ok(const void *pkt, const void *data, size_t len,
		    size_t unit, uint32_t flag)
{
	return pkt && (data || !len) && !(len % unit) && flag &&
	       !((uintptr_t)pkt & 7);
}

int tv_port_ll16_pack(void *pkt, const void *data, size_t len_bytes,
		      uint32_t flag)
{
	const uint8_t *d = data;
	uint8_t *p = pkt;

	if (!args_ok(pkt, data, len_bytes, 8, flag))
		return -EINVAL;
	for (size_t i = 0; i < len_bytes / 8; i++) {
		word_put(p + 16 * i, get32(d + 8 * i), flag);
		word_put(p + 16 * i + 8, get32(d + 8 * i + 4), flag);
	}
	return 0;
}

int tv_port_ll8_pack(void *pkt, const void *data, size_t len_bytes,
		     uint32_t flag)
{
	const uint8_t *d = data;
	uint8_t *p = pkt;

	if (!args_ok(pkt, data, len_bytes, 4, flag))
		return -EINVAL;
	for (size_t i = 0; i < len_bytes / 4; i++)
		word_put(p + 8 * i, get32(d + 4 * i), flag);
	return 0;
}

size_t tv_port_ll16_unpack(const void *pkt, void *data, size_t len_bytes,
			   uint32_t flag)
{
	const uint8_t *p = pkt;
	uint8_t *d = data;
	size_t i;

	if (!args_ok(pkt, data, len_bytes, 8, flag))
		return 0;
	for (i = 0; i < len_bytes / 8; i++) {
		uint32_t lo, hi;

		if (!word_get(p + 16 * i, flag, &lo) ||
		    !word_get(p + 16 * i + 8, flag, &hi))
			break;
		put32(d + 8 * i, lo);
		put32(d + 8 * i + 4, hi);
	}
	return i;
}

size_t tv_port_ll8_unpack(const void *pkt, void *data, size_t len_bytes,
			  uint32_t flag)
{
	const uint8_t *p = pkt;
	uint8_t *d = data;
	size_t i;

	if (!args_ok(pkt, data, len_bytes, 4, flag))
		return 0;
	for (i = 0; i < len_bytes / 4; i++) {
		uint32_t v;

		if (!word_get(p + 8 * i, flag, &v))
			break;
		put32(d + 4 * i, v);
	}
	return i;
}
