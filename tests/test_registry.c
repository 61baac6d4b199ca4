// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The registry behind guard_unmap() and guard_stack_free() (lib/registry.c),
 * on made-up entries (nothing is mapped: lg_reg_take() only looks up):
 * random adds and takes checked against a model, keys dense enough that
 * probe runs are long and removals have entries to shift back; an entry
 * comes out once, only for its exact end and kind; an address given again
 * replaces the stale entry; and the table's memory follows its use (back
 * to its minimum of 16 slots when empty, at most 8 slots per entry).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

#define NKEYS 20000
#define PAGE 4096ul

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Key k's entry: pages apart, as mappings are; the length varies with k. */
static struct lg_reg entry(size_t k, unsigned int gen)
{
	uintptr_t user = 0x7f0000000000ul + k * PAGE;

	return (struct lg_reg){ .user = user, .user_end = user + (1 + (k + gen) % 3) * PAGE,
				.start = user - PAGE, .end = user + 4 * PAGE,
				.kind = k % 2 ? LG_REG_STACK : LG_REG_MAP };
}

static void take_ok(size_t k, unsigned int gen)
{
	struct lg_reg want = entry(k, gen), got;

	memset(&got, 0, sizeof(got));
	assert_int_equal(lg_reg_take(want.user, want.user_end, want.kind, &got), 0);
	assert_true(got.user == want.user && got.user_end == want.user_end &&
		    got.start == want.start && got.end == want.end && got.kind == want.kind);
}

static void take_absent(uintptr_t user, uintptr_t end, enum lg_reg_kind kind)
{
	struct lg_reg got;

	assert_int_equal(lg_reg_take(user, end, kind, &got), -EINVAL);
}

static void model(void **state)
{
	static unsigned char live[NKEYS];
	static unsigned int gen[NKEYS];
	size_t n = 0, peak_cap = 0;

	(void)state;
	assert_int_equal(lg_reg_capacity(), 0);
	/* three rounds: fill to about 3/4 of the keys at random, then drain */
	for (int round = 0; round < 3; round++) {
		for (int phase = 0; phase < 2; phase++) {
			for (long op = 0; op < 4 * NKEYS || (phase && n); op++) {
				size_t k = next_rand() % NKEYS;
				struct lg_reg e = entry(k, gen[k]);
				/* filling: 3 adds to 1 take; draining: the reverse, then takes only */
				bool add = phase ? op < 4 * NKEYS && next_rand() % 4 == 0
						 : next_rand() % 4 != 0;

				if (!live[k] && add) {
					assert_int_equal(lg_reg_add(&e), 0);
					live[k] = 1;
					n++;
				} else if (live[k] && !add) {
					/* wrong end, wrong kind: refused, entry kept */
					take_absent(e.user, e.user_end + PAGE, e.kind);
					take_absent(e.user, e.user_end,
						    e.kind == LG_REG_MAP ? LG_REG_STACK : LG_REG_MAP);
					take_ok(k, gen[k]);
					take_absent(e.user, e.user_end, e.kind);
					live[k] = 0;
					gen[k]++;
					n--;
				} else if (!live[k]) {
					take_absent(e.user, e.user_end, e.kind);
				}
				if (lg_reg_capacity() > peak_cap)
					peak_cap = lg_reg_capacity();
				/* at most 3/4 full, at least 1/8 full (or the minimum) */
				assert_true(4 * n <= 3 * lg_reg_capacity());
				assert_true(8 * n >= lg_reg_capacity() || lg_reg_capacity() <= 16);
			}
		}
		/* drained: every entry came out once, and the memory went with them */
		assert_int_equal(n, 0);
		assert_int_equal(lg_reg_capacity(), 16);
		for (size_t k = 0; k < NKEYS; k++)
			assert_int_equal(live[k], 0);
	}
	printf("# largest table: %zu slots\n", peak_cap);
}

/* An address registered again (the caller munmap()ed the first mapping) replaces it. */
static void stale_replaced(void **state)
{
	struct lg_reg a = entry(7, 0), b = entry(7, 1);

	(void)state;
	assert_int_equal(lg_reg_add(&a), 0);
	assert_int_equal(lg_reg_add(&b), 0);
	take_absent(a.user, a.user_end, a.kind);
	take_ok(7, 1);
	take_absent(b.user, b.user_end, b.kind);
	assert_int_equal(lg_reg_capacity(), 16);
}

int main(void)
{
	const char *env = getenv("LIBGUARD_TEST_SEED");

	rng = env ? strtoull(env, NULL, 0) : ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
	rng |= 1;
	printf("# seed %" PRIu64 "\n", rng);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(model),
		cmocka_unit_test(stale_replaced),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
