// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Which allocations go to the pool. Each thread counts down from a
 * random number around `sample` (uniform in [1, 2 * sample], so the mean
 * is the rate asked and no allocation pattern can dodge it); the common
 * path is one thread-local decrement, no lock, no atomic. mode=all makes
 * every allocation a sample. A thread already inside the pool (the
 * unwinder or dladdr() allocating, a signal handler that interrupted us)
 * takes nothing from it: its allocations go to the allocator underneath.
 */
#include <time.h>

#include "gm.h"

GM_TLS unsigned long gm_countdown;
GM_TLS int gm_busy;
static GM_TLS uint64_t rng;

/* xorshift64*, seeded per thread from its stack address and the clock. */
uint64_t gm_random(void)
{
	if (GM_UNLIKELY(!rng)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		rng = ((uint64_t)(uintptr_t)&ts * 0x9e3779b97f4a7c15ull) ^ (uint64_t)ts.tv_nsec ^
		      ((uint64_t)gm_gettid() << 32) ^ 1;
	}
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

bool gm_sample_slow(void)
{
	bool first = gm_countdown == 0;

	if (gm_busy) {
		gm_countdown = 1;	/* decide again next time */
		return false;
	}
	if (gm_opt.all) {
		gm_countdown = 1;	/* back here every time */
		return true;
	}
	if (!gm_opt.sample) {
		gm_countdown = (unsigned long)-1;
		return false;
	}
	/* the next sample after 1 to 2 * sample - 1 more: sample on average */
	gm_countdown = 1 + gm_random() % (2 * gm_opt.sample - 1);
	return !first;
}
