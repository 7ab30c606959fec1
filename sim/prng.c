/*
 * The simulator's PRNG: xoshiro256** (Blackman & Vigna), its state filled by
 * splitmix64 so that any 64-bit seed, 0 included, gives a good state.
 */
#include <assert.h>

#include <tensorverbs/sim.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void tv_prng_init(struct tv_prng *prng, uint64_t seed)
{
	uint64_t x = seed;

	for (int i = 0; i < 4; i++)
		prng->s[i] = splitmix64(&x);
	/* splitmix64 is a bijection of a counter: never four zeros. */
	assert(prng->s[0] | prng->s[1] | prng->s[2] | prng->s[3]);
}

uint64_t tv_prng_next(struct tv_prng *prng)
{
	uint64_t *s = prng->s;
	uint64_t result = rotl64(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl64(s[3], 45);
	return result;
}

uint64_t tv_prng_below(struct tv_prng *prng, uint64_t bound)
{
	/* Reject the low values that would make some residues likelier. */
	uint64_t threshold;
	uint64_t r;

	assert(bound > 0);
	threshold = (0 - bound) % bound;
	do {
		r = tv_prng_next(prng);
	} while (r < threshold);
	return r % bound;
}

void tv_prng_fork(struct tv_prng *parent, struct tv_prng *child_p)
{
	/* Re-seeding through splitmix64 decorrelates parent and child. */
	tv_prng_init(child_p, tv_prng_next(parent));
}
