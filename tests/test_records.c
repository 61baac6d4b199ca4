// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fallback's record (lib/records.c) on made-up intervals: random
 * inserts, deletes of a record just looked up, bounds moved in place as
 * fallback.c moves them (starts through lg_rec_set_start()), and runs of
 * lookups with no change in between (the ones answered from the cached
 * leaf), each answer checked against a model, as are a record's
 * neighbours through lg_rec_next() and lg_rec_prev(), and the tree's own
 * invariants (lg_rec_check()). Small: a few leaves, every kind of change
 * often. Large: 60,000 records, three levels, inner nodes split and
 * emptied. In order: records added and removed in address order and in
 * reverse, the patterns of an arena.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"
#include "stress/rng.h"

#define SPACE_MAX (1u << 17)	/* addresses 1 .. space-1, in units of one */

static struct rng rng;
static uintptr_t space;

static unsigned int below(unsigned int n)
{
	return (unsigned int)(rng_next(&rng) % n);
}

/*
 * The model: owner[a] is the start of the record holding address a, plus
 * one (0: none), ends[start] that record's end, and a bit in starts[] for
 * each start, scanned a word at a time.
 */
static uintptr_t owner[SPACE_MAX], ends[SPACE_MAX];
static uint64_t starts[SPACE_MAX / 64];

struct iv {
	uintptr_t start, end;	/* end 0: none */
};

static struct iv model_rec(uintptr_t start)
{
	return (struct iv){ start, ends[start] };
}

/* The first start at or above a, or 0. */
static uintptr_t start_from(uintptr_t a)
{
	for (uintptr_t w = a / 64; a < space && w < SPACE_MAX / 64; w++, a = w * 64) {
		uint64_t bits = starts[w] & (~0ull << (a % 64));

		if (bits)
			return w * 64 + (uintptr_t)__builtin_ctzll(bits);
	}
	return 0;
}

/* The last start below a, or 0. */
static uintptr_t start_below(uintptr_t a)
{
	a = a < space ? a : space;
	for (uintptr_t w = a / 64 + 1; w-- > 0;) {
		uint64_t bits = w < a / 64 ? starts[w]
					   : a % 64 ? starts[w] & (~0ull >> (64 - a % 64)) : 0;

		if (bits)
			return w * 64 + 63 - (uintptr_t)__builtin_clzll(bits);
	}
	return 0;
}

static struct iv model_first_above(uintptr_t addr)
{
	uintptr_t s = addr < space && owner[addr] ? owner[addr] - 1 : start_from(addr);

	return s ? model_rec(s) : (struct iv){ 0, 0 };
}

static struct iv model_before(uintptr_t addr)
{
	uintptr_t s = start_below(addr);

	return s ? model_rec(s) : (struct iv){ 0, 0 };
}

static struct iv model_at_or_above(uintptr_t addr)
{
	uintptr_t s = start_from(addr);

	return s ? model_rec(s) : (struct iv){ 0, 0 };
}

static void set_owner(uintptr_t start, uintptr_t end, bool on)
{
	for (uintptr_t a = start; a < end; a++)
		owner[a] = on ? start + 1 : 0;
	ends[start] = on ? end : 0;
	if (on)
		starts[start / 64] |= 1ull << (start % 64);
	else
		starts[start / 64] &= ~(1ull << (start % 64));
}

/* The record r is the model's m (both none, or the same bounds). */
#define assert_rec(r, m)                                                   \
	do {                                                               \
		const struct lg_rec *r_ = (r);                             \
		struct iv m_ = (m);                                        \
		if (!m_.end) {                                             \
			assert_null(r_);                                   \
		} else {                                                   \
			assert_non_null(r_);                               \
			assert_int_equal(r_->start, m_.start);             \
			assert_int_equal(r_->end, m_.end);                 \
		}                                                          \
	} while (0)

/* A few lookups of each kind near addr, one after another, all checked. */
static void check_lookups(uintptr_t addr)
{
	for (int k = 0; k < 4; k++) {
		uintptr_t a = addr + below(9) - 4;
		struct lg_rec *lo, *hi;

		if (a >= space)
			continue;
		switch (below(3)) {
		case 0:
			lo = lg_rec_first_above(a);
			assert_rec(lo, model_first_above(a));
			/* the neighbours in address order */
			if (lo) {
				assert_rec(lg_rec_next(lo), model_first_above(lo->end));
				assert_rec(lg_rec_prev(lo), model_before(lo->start));
			}
			break;
		case 1:
			assert_rec(lg_rec_before(a), model_before(a));
			break;
		default:
			if (owner[a])
				break;	/* around() is asked only of free addresses */
			lg_rec_around(a, &lo, &hi);
			assert_rec(lo, model_before(a));
			assert_rec(hi, model_at_or_above(a));
		}
	}
}

static void insert_at(uintptr_t start, uintptr_t end)
{
	struct lg_rec rec = { .start = start, .end = end, .off = start * 3 }, *r;

	assert_int_equal(lg_rec_reserve(1), 0);
	r = lg_rec_insert(&rec);
	assert_non_null(r);
	assert_int_equal(r->start, start);
	assert_int_equal(r->end, end);
	assert_int_equal(r->off, start * 3);
	set_owner(start, end, true);
}

static void insert_free(unsigned int maxlen)
{
	uintptr_t start = 1 + below((unsigned int)space - maxlen - 2);
	uintptr_t end = start + 1 + below(maxlen);

	for (uintptr_t a = start; a < end; a++)
		if (owner[a])
			return;
	insert_at(start, end);
}

/* Look a record up, then delete what the lookup returned. */
static void delete_looked_up(uintptr_t addr)
{
	struct lg_rec *r = lg_rec_first_above(addr);

	assert_rec(r, model_first_above(addr));
	if (!r)
		return;
	set_owner(r->start, r->end, false);
	lg_rec_delete(r);
}

/* Move one bound of the record at or after addr, keeping records disjoint. */
static void move_bounds(uintptr_t addr)
{
	struct lg_rec *r = lg_rec_first_above(addr);
	uintptr_t start, end;

	if (!r || r->end - r->start < 2)
		return;
	start = r->start;
	end = r->end;
	set_owner(start, end, false);
	switch (below(4)) {
	case 0:
		start++;
		break;
	case 1:
		end--;
		break;
	case 2:
		if (start > 1 && !owner[start - 1])
			start--;
		break;
	default:
		if (end < space - 1 && !owner[end])
			end++;
	}
	if (start != r->start)
		lg_rec_set_start(r, start);
	r->end = end;
	set_owner(start, end, true);
}

static void random_steps(unsigned int steps, unsigned int maxlen, unsigned int check_every)
{
	for (unsigned int step = 0; step < steps; step++) {
		uintptr_t addr = below((unsigned int)space);

		switch (below(10)) {
		case 0:
		case 1:
		case 2:
			insert_free(maxlen);
			break;
		case 3:
		case 4:
			delete_looked_up(addr);
			break;
		case 5:
			move_bounds(addr);
			break;
		default:
			break;
		}
		check_lookups(addr);
		if (step % check_every == 0)
			assert_int_equal(lg_rec_check(), 0);
	}
}

/* Empty it through lookups and deletes, checking as it goes. */
static void empty_randomly(unsigned int check_every)
{
	for (unsigned int step = 0; model_first_above(0).end; step++) {
		delete_looked_up(below((unsigned int)space));
		check_lookups(below((unsigned int)space));
		if (step % check_every == 0)
			assert_int_equal(lg_rec_check(), 0);
	}
	assert_int_equal(lg_rec_check(), 0);
	assert_null(lg_rec_first_above(0));
	assert_null(lg_rec_before(space));
	assert_false(lg_fallback_any());
}

static void records_match_a_model(void **state)
{
	(void)state;
	space = 4000;
	rng_seed(&rng, 18);
	random_steps(200000, 30, 16);
	empty_randomly(16);
}

/* Enough records for inner nodes to split, and to empty again. */
static void records_three_levels(void **state)
{
	(void)state;
	space = SPACE_MAX;
	rng_seed(&rng, 28);
	while (lg_fallback_live < 60000)
		insert_free(2);
	assert_int_equal(lg_rec_check(), 0);
	random_steps(100000, 3, 997);
	empty_randomly(997);
}

/* An arena's order: up the address space, then freed up or down. */
static void records_in_order(void **state)
{
	(void)state;
	space = SPACE_MAX;
	uintptr_t top = (space - 3) | 1;	/* the last record's start */

	rng_seed(&rng, 5);
	for (int down = 0; down < 2; down++) {
		for (uintptr_t a = 1; a <= top; a += 2) {
			insert_at(a, a + 1);
			if (a % 4099 == 1)
				check_lookups(a);
		}
		assert_int_equal(lg_rec_check(), 0);
		for (uintptr_t i = 1; i <= top; i += 2) {
			uintptr_t a = down ? top + 1 - i : i;

			delete_looked_up(a);
			if (i % 4099 == 1) {
				check_lookups(a);
				assert_int_equal(lg_rec_check(), 0);
			}
		}
		assert_int_equal(lg_rec_check(), 0);
		assert_false(lg_fallback_any());
	}
	/* ... and installed downwards */
	for (uintptr_t a = top; a <= top; a -= 2)
		insert_at(a, a + 1);
	assert_int_equal(lg_rec_check(), 0);
	check_lookups(space / 2);
	empty_randomly(997);
}

/*
 * Bounds on the nodes: a leaf holds NODE (4096) bytes of records, and
 * none but the last of a run filled in order is under half full.
 */
#define NODE 4096u
static size_t nodes_for(size_t records)
{
	return 2 * records * sizeof(struct lg_rec) / NODE + 8;
}

/*
 * An arena guarded upwards, then one above it guarded downwards (mmap()'s
 * order): each record of the second goes after every record of a full
 * leaf. A leaf a record would be 5,000 nodes here.
 */
static void records_down_after_up(void **state)
{
	struct lg_rec_stats st;

	(void)state;
	space = SPACE_MAX;
	rng_seed(&rng, 7);
	/* upwards until a leaf is full: the record that starts the next goes again */
	for (uintptr_t a = 1;; a += 2) {
		insert_at(a, a + 1);
		lg_rec_stats(&st);
		if (st.nodes > 1) {
			delete_looked_up(a);
			break;
		}
	}
	for (uintptr_t a = 12001; a > 2001; a -= 2)
		insert_at(a, a + 1);
	assert_int_equal(lg_rec_check(), 0);
	lg_rec_stats(&st);
	printf("# %zu records in %zu nodes\n", lg_fallback_live, st.nodes);
	assert_true(st.nodes <= nodes_for(lg_fallback_live));
	check_lookups(2001);
	empty_randomly(997);
}

/* With the last record gone, the next reservation unmaps every slab. */
static void records_slabs_given_back(void **state)
{
	struct lg_rec_stats st;

	(void)state;
	space = SPACE_MAX;
	rng_seed(&rng, 11);
	while (lg_fallback_live < 3000)
		insert_free(2);
	lg_rec_stats(&st);
	assert_true(st.slabs > 0);
	empty_randomly(997);
	assert_int_equal(lg_rec_reserve(2), 0);
	lg_rec_stats(&st);
	assert_int_equal(st.slabs, 0);
	assert_int_equal(st.nodes, 0);
}

/*
 * A reservation for the worst case (every piece splitting every level)
 * touches no node: only those used become resident, and what it mapped
 * beyond a call's need goes back at the next reservation.
 */
static void records_reservation_untouched(void **state)
{
	struct lg_rec_stats st0, st;

	(void)state;
	space = 80000;
	rng_seed(&rng, 13);
	while (lg_fallback_live < 20000)
		insert_free(2);
	space = SPACE_MAX;
	lg_rec_stats(&st0);
	/* one install over 2,000 VMAs: 2,000 pieces, inserted in address order */
	assert_int_equal(lg_rec_reserve(2000), 0);
	lg_rec_stats(&st);
	printf("# reserved: %zu nodes mapped, %zu touched (%zu, %zu before)\n", st.mapped,
	       st.touched, st0.mapped, st0.touched);
	assert_true(st.mapped >= st0.mapped + 2000);
	assert_int_equal(st.touched, st0.touched);
	for (uintptr_t a = 90001; a < 94000; a += 2) {
		struct lg_rec rec = { .start = a, .end = a + 1 };

		assert_non_null(lg_rec_insert(&rec));
		set_owner(a, a + 1, true);
	}
	assert_int_equal(lg_rec_check(), 0);
	lg_rec_stats(&st);
	assert_true(st.touched - st0.touched <= nodes_for(2000));
	/* the next call's reservation gives the rest back */
	assert_int_equal(lg_rec_reserve(1), 0);
	lg_rec_stats(&st);
	printf("# then: %zu nodes mapped, %zu in the tree\n", st.mapped, st.nodes);
	assert_true(st.mapped - st.nodes <= 256);
	empty_randomly(997);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(records_match_a_model),
		cmocka_unit_test(records_three_levels),
		cmocka_unit_test(records_in_order),
		cmocka_unit_test(records_down_after_up),
		cmocka_unit_test(records_slabs_given_back),
		cmocka_unit_test(records_reservation_untouched),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
