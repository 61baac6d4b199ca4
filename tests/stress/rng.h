/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * xoshiro256** seeded through splitmix64: a fixed, documented generator,
 * so that a seed printed on one machine replays the same operations on
 * another (rand(3) promises no such thing across libcs).
 */
#ifndef STRESS_RNG_H
#define STRESS_RNG_H

#include <stdint.h>

struct rng {
	uint64_t s[4];
};

static inline uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t x = s[1] * 5, t = s[1] << 17;
	uint64_t res = ((x << 7) | (x >> 57)) * 9;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = (s[3] << 45) | (s[3] >> 19);
	return res;
}

/* Uniform in [0, n); n > 0. The modulo bias is irrelevant at these sizes. */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return rng_next(r) % n;
}

/* True with probability pct/100. */
static inline int rng_pct(struct rng *r, unsigned int pct)
{
	return rng_below(r, 100) < pct;
}

#endif
