/*
 * This file is private to tensorverbs' engine: tensor names on the fetch
 * path, measured, copied and compared with no library call.
 *
 * Why not memcpy/memcmp/memchr/strnlen: names are short (a few to a
 * hundred bytes), and on emulated CPUs (rxe under TCG, where CI runs the
 * real backend) every call into another code page and every return is a
 * translation-cache lookup.  A 64-byte fetch made seven such calls for
 * names alone.  Eight bytes a step, loads and stores through memcpy of a
 * constant size (one move each), bounded by the length: never a byte read
 * past what the caller owns, so sanitizers stay quiet.  Each loop can
 * leave early, which also keeps the compiler from turning it back into
 * the library call.
 */
#ifndef TV_ENGINE_TEXT_H
#define TV_ENGINE_TEXT_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t tv__load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Some byte of v is zero (the classic test: no false positives). */
static inline bool tv__has_zero_byte(uint64_t v)
{
	return ((v - 0x0101010101010101ull) & ~v & 0x8080808080808080ull) != 0;
}

/*
 * Copy n bytes of text (not terminated): false, with dst partly written,
 * if one of them is NUL (a name never holds one).
 */
static inline bool tv__text_copy(char *dst, const void *from, size_t n)
{
	const unsigned char *src = from;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t v = tv__load64(src + i);

		if (tv__has_zero_byte(v))
			return false;
		memcpy(dst + i, &v, sizeof(v));
	}
	for (; i < n; i++) {
		if (!src[i])
			return false;
		dst[i] = (char)src[i];
	}
	return true;
}

/* Copy n bytes of a name known to hold no NUL (not terminated). */
static inline void tv__name_put(char *dst, const char *src, size_t n)
{
	bool ok = tv__text_copy(dst, src, n);

	/* Names are checked where they enter the engine. */
	assert(ok);
	(void)ok;
}

/* tv__name_put(), and terminated. */
static inline void tv__name_copy(char *dst, const char *src, size_t n)
{
	tv__name_put(dst, src, n);
	dst[n] = '\0';
}

/* memcmp(a, b, n) == 0 */
static inline bool tv__bytes_equal(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		if (tv__load64(x + i) != tv__load64(y + i))
			return false;
	for (; i < n; i++)
		if (x[i] != y[i])
			return false;
	return true;
}

/* strnlen(s, max): bytes before the first NUL, at most max. */
static inline size_t tv__text_len(const char *s, size_t max)
{
	size_t i;

	/* Byte by byte: a word read could pass the end of s's allocation. */
	for (i = 0; i < max && i < 32; i++)
		if (!s[i])
			return i;
	return i < max ? i + strnlen(s + i, max - i) : max;
}

#endif /* TV_ENGINE_TEXT_H */
