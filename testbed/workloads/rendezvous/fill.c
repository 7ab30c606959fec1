/* Deterministic tensor contents and independent content digests. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "fill.h"

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint64_t fill_seed(uint64_t run_seed, const struct sc_fill *fill,
		   uint64_t step_id, const char *name)
{
	uint64_t base = fill->has_seed ? fill->seed : run_seed;

	/* Name and step decorrelate tensors of one run. */
	return XXH64(name, strlen(name), base ^ (step_id * 0x9E3779B97F4A7C15ull));
}

static void put_iota(unsigned char *p, size_t esize, enum tv_dtype dtype,
		     uint64_t i)
{
	float f = (float)i;
	double d = (double)i;
	uint64_t v = i;

	if (dtype == TV_DT_FLOAT)
		memcpy(p, &f, sizeof(f));
	else if (dtype == TV_DT_DOUBLE)
		memcpy(p, &d, sizeof(d));
	else if (dtype == TV_DT_BOOL)
		p[0] = (unsigned char)(i & 1);
	else /* integers; 16-bit floats get the bit pattern of i */
		for (size_t b = 0; b < esize; b++)
			p[b] = (unsigned char)(v >> (8 * b));
}

void fill_bytes(void *buf, size_t len, enum tv_dtype dtype,
		enum sc_fill_pattern pattern, uint64_t seed)
{
	size_t esize = tv_dtype_size(dtype);
	unsigned char *p = buf;
	uint64_t st = seed;

	assert(esize > 0 && len % esize == 0);
	if (pattern == SC_FILL_ZEROS) {
		memset(buf, 0, len);
	} else if (pattern == SC_FILL_IOTA) {
		for (size_t i = 0; i < len / esize; i++)
			put_iota(p + i * esize, esize, dtype, i);
	} else {
		size_t i = 0;

		for (; i + 8 <= len; i += 8) {
			uint64_t r = splitmix64(&st);

			memcpy(p + i, &r, 8);
		}
		if (i < len) {
			uint64_t r = splitmix64(&st);

			memcpy(p + i, &r, len - i);
		}
		/* A bool holds 0 or 1; other bytes are a different tensor. */
		if (dtype == TV_DT_BOOL)
			for (i = 0; i < len; i++)
				p[i] &= 1;
	}
}

size_t fill_string(uint64_t seed, uint64_t index, char *buf)
{
	uint64_t st = seed ^ (index * 0xD1B54A32D192ED03ull);
	size_t len = splitmix64(&st) % (FILL_STRING_MAX + 1);

	/* Arbitrary bytes, NUL included: strings are binary in TensorFlow. */
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(splitmix64(&st) & 0xFF);
	return len;
}

static int digest_strings(const struct tv_tensor *t, uint64_t *digest_p)
{
	uint64_t n = tv_tensor_num_elements(t);
	XXH3_state_t state;
	int rc = 0;

	/* On the stack, as the engine's: nothing to allocate, or to fail. */
	XXH3_INITSTATE(&state);
	XXH3_64bits_reset(&state);
	for (uint64_t i = 0; i < n && !rc; i++) {
		const void *bytes;
		size_t len;
		uint64_t len64;

		rc = tv_tensor_get_string(t, i, &bytes, &len);
		if (rc)
			break;
		len64 = len;
		XXH3_64bits_update(&state, &len64, sizeof(len64));
		XXH3_64bits_update(&state, bytes, len);
	}
	if (!rc)
		*digest_p = XXH3_64bits_digest(&state);
	return rc;
}

int fill_digest_tensor(const struct tv_tensor *t, uint64_t *digest_p)
{
	size_t len;
	void *data;

	if (tv_tensor_is_dead(t)) {
		*digest_p = 0;
		return 0;
	}
	if (tv_tensor_dtype(t) == TV_DT_STRING)
		return digest_strings(t, digest_p);
	len = tv_tensor_size_bytes(t);
	/* tv_tensor_data() is not const: it hands out writable memory. */
	data = tv_tensor_data((struct tv_tensor *)(uintptr_t)t);
	if (len > 0 && !data)
		return -EFAULT;
	*digest_p = XXH3_64bits(data, len);
	return 0;
}

static int expected_strings(uint64_t elements, uint64_t seed,
			    uint64_t *digest_p)
{
	char buf[FILL_STRING_MAX];
	XXH3_state_t state;

	XXH3_INITSTATE(&state);
	XXH3_64bits_reset(&state);
	for (uint64_t i = 0; i < elements; i++) {
		uint64_t len = fill_string(seed, i, buf);

		XXH3_64bits_update(&state, &len, sizeof(len));
		XXH3_64bits_update(&state, buf, len);
	}
	*digest_p = XXH3_64bits_digest(&state);
	return 0;
}

int fill_expected_digest(enum tv_dtype dtype, uint64_t elements,
			 enum sc_fill_pattern pattern, uint64_t seed,
			 uint64_t *digest_p)
{
	size_t len;
	void *buf;

	if (dtype == TV_DT_STRING)
		return expected_strings(elements, seed, digest_p);
	len = elements * tv_dtype_size(dtype);
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	fill_bytes(buf, len, dtype, pattern, seed);
	*digest_p = XXH3_64bits(buf, len);
	free(buf);
	return 0;
}

uint64_t fill_payload_bytes(const struct tv_tensor *t)
{
	uint64_t n, sum = 0;

	if (tv_tensor_is_dead(t))
		return 0;
	if (tv_tensor_dtype(t) != TV_DT_STRING)
		return tv_tensor_size_bytes(t);
	n = tv_tensor_num_elements(t);
	for (uint64_t i = 0; i < n; i++) {
		const void *bytes;
		size_t len;

		if (tv_tensor_get_string(t, i, &bytes, &len) == 0)
			sum += len;
	}
	return sum;
}

int fill_tensor_strings(const struct sc_send *s, uint64_t seed,
			       struct tv_tensor *t)
{
	uint64_t n = tv_tensor_num_elements(t);
	char buf[FILL_STRING_MAX];

	for (uint64_t i = 0; i < n; i++) {
		const void *bytes = buf;
		size_t len;
		int ret;

		if (s->strings) {
			bytes = s->strings[i].data;
			len = s->strings[i].len;
		} else {
			len = fill_string(seed, i, buf);
		}
		ret = tv_tensor_set_string(t, i, bytes, len);
		if (ret)
			return ret;
	}
	return 0;
}
