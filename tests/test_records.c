// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fallback's record (lib/records.c) on made-up intervals: random
 * inserts, deletes of a record just looked up (the path that reuses the
 * lookup's place in the tree), bounds moved in place as fallback.c moves
 * them, and runs of lookups with no change in between (the ones answered
 * from the last walk), each answer checked against a sorted-array model,
 * as are a record's neighbours through lg_rec_next() and lg_rec_prev().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"
#include "stress/rng.h"

#define SPACE 4000	/* addresses 0 .. SPACE-1, in units of one */
#define STEPS 200000

static struct rng rng;

static unsigned int below(unsigned int n)
{
	return (unsigned int)(rng_next(&rng) % n);
}

/* The model: owner[a] is the record holding address a, or NULL. */
static struct lg_rec *owner[SPACE];

static struct lg_rec *model_first_above(uintptr_t addr)
{
	for (uintptr_t a = addr; a < SPACE; a++)
		if (owner[a] && owner[a]->end > addr)
			return owner[a];
	return NULL;
}

static struct lg_rec *model_before(uintptr_t addr)
{
	for (uintptr_t a = addr < SPACE ? addr : SPACE; a-- > 0;)
		if (owner[a] && owner[a]->start < addr)
			return owner[a];
	return NULL;
}

static struct lg_rec *model_at_or_above(uintptr_t addr)
{
	for (uintptr_t a = addr; a < SPACE; a++)
		if (owner[a] && owner[a]->start >= addr)
			return owner[a];
	return NULL;
}

static void set_owner(uintptr_t start, uintptr_t end, struct lg_rec *r)
{
	for (uintptr_t a = start; a < end; a++)
		owner[a] = r;
}

/* A few lookups of each kind near addr, one after another, all checked. */
static void check_lookups(uintptr_t addr)
{
	for (int k = 0; k < 4; k++) {
		uintptr_t a = addr + below(9) - 4;
		struct lg_rec *lo, *hi;

		if (a >= SPACE)
			continue;
		switch (below(3)) {
		case 0:
			lo = lg_rec_first_above(a);
			assert_ptr_equal(lo, model_first_above(a));
			/* the address-order links beside the tree */
			if (lo) {
				assert_ptr_equal(lg_rec_next(lo), model_first_above(lo->end));
				assert_ptr_equal(lg_rec_prev(lo), model_before(lo->start));
			}
			break;
		case 1:
			assert_ptr_equal(lg_rec_before(a), model_before(a));
			break;
		default:
			if (owner[a])
				break;	/* around() is asked only of free addresses */
			lg_rec_around(a, &lo, &hi);
			assert_ptr_equal(lo, model_before(a));
			assert_ptr_equal(hi, model_at_or_above(a));
		}
	}
}

static void insert_free(void)
{
	uintptr_t start = 1 + below(SPACE - 40), end = start + 1 + below(30);
	struct lg_rec rec = { 0 }, *r;

	for (uintptr_t a = start; a < end; a++)
		if (owner[a])
			return;
	rec.start = start;
	rec.end = end;
	assert_int_equal(lg_rec_reserve(1), 0);
	r = lg_rec_insert(&rec);
	assert_non_null(r);
	set_owner(start, end, r);
}

/* Look a record up, then delete what the lookup returned. */
static void delete_looked_up(uintptr_t addr)
{
	struct lg_rec *r = lg_rec_first_above(addr);

	assert_ptr_equal(r, model_first_above(addr));
	if (!r)
		return;
	set_owner(r->start, r->end, NULL);
	lg_rec_delete(r);
}

/* Move one bound of the record at or after addr, keeping records disjoint. */
static void move_bounds(uintptr_t addr)
{
	struct lg_rec *r = lg_rec_first_above(addr);

	if (!r || r->end - r->start < 2)
		return;
	set_owner(r->start, r->end, NULL);
	switch (below(4)) {
	case 0:
		r->start++;
		break;
	case 1:
		r->end--;
		break;
	case 2:
		if (r->start > 1 && !owner[r->start - 1])
			r->start--;
		break;
	default:
		if (r->end < SPACE - 1 && !owner[r->end])
			r->end++;
	}
	set_owner(r->start, r->end, r);
}

static void records_match_a_model(void **state)
{
	(void)state;
	rng_seed(&rng, 18);
	for (int step = 0; step < STEPS; step++) {
		uintptr_t addr = below(SPACE);

		switch (below(10)) {
		case 0:
		case 1:
		case 2:
			insert_free();
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
	}
	/* Empty it through lookups and deletes, checking as it goes. */
	while (model_first_above(0)) {
		delete_looked_up(below(SPACE));
		check_lookups(below(SPACE));
	}
	assert_null(lg_rec_first_above(0));
	assert_null(lg_rec_before(SPACE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(records_match_a_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
