// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lg_scan_layout(), the one PAGEMAP_SCAN a multi-page native install makes
 * before the madvise(), fed scripted kernel answers: regions that tile the
 * range give its guards and 0; a gap anywhere (a hole, a VM_PFNMAP VMA)
 * gives 1, so the caller asks msync(); a full vector continues at
 * walk_end; and an answer that is out of order, unaligned, outside the
 * part walked, over-long or that does not advance is -EIO, never a run.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

#define P 4096ul
#define B 0x10000000ul	/* the range starts here */
#define G LG_PAGE_IS_GUARD
/* An answer: n regions (or a -errno), walk_end (0: the end asked for). */
#define ANS(n_, walk_, ...) { .n = (n_), .walk_end = (walk_), .r = { __VA_ARGS__ } }

struct answer {
	long n;				/* regions, or a -errno */
	struct lg_page_region r[4];
	uint64_t walk_end;
};

struct script {
	const struct answer *a;
	size_t n, next;
};

static long scripted(void *ctx, struct lg_pm_scan_arg *arg)
{
	struct script *s = ctx;
	const struct answer *a;

	if (s->next == s->n)
		return -EPROTO;	/* asked once more than the script says */
	a = &s->a[s->next++];
	assert_true(arg->vec_len >= 4);
	assert_int_equal(arg->category_mask, 0);
	assert_int_equal(arg->return_mask, G);
	/* a count above what the vector holds is a lie: copy no more than is here */
	if (a->n > 0)
		memcpy((void *)(uintptr_t)arg->vec, a->r,
		       (size_t)(a->n < 4 ? a->n : 4) * sizeof(a->r[0]));
	arg->walk_end = a->walk_end ? a->walk_end : arg->end;
	return a->n;
}

/* lg_scan_layout() over [B, B + pages * P) answered by the script. */
static int run(const struct answer *a, size_t n, size_t pages, struct lg_runs *runs)
{
	struct script s = { a, n, 0 };
	int ret;

	lg_runs_init(runs);
	ret = lg_scan_layout(scripted, &s, B, B + pages * P, runs);
	if (ret >= 0)
		assert_int_equal(s.next, s.n);
	return ret;
}

static void tiles(void **state)
{
	static const struct answer a[] = {
		ANS(3, 0, { B, B + P, 0 }, { B + P, B + 3 * P, G }, { B + 3 * P, B + 4 * P, 0 }),
	};
	struct lg_runs runs;

	(void)state;
	assert_int_equal(run(a, 1, 4, &runs), 0);
	assert_int_equal(runs.n, 1);
	assert_int_equal(runs.v[0].start, B + P);
	assert_int_equal(runs.v[0].end, B + 3 * P);
	lg_runs_free(&runs);
}

static void gaps(void **state)
{
	static const struct answer inside[] = {
		ANS(2, 0, { B, B + P, G }, { B + 2 * P, B + 4 * P, 0 }),
	};
	static const struct answer first[] = { ANS(1, 0, { B + P, B + 4 * P, 0 }) };
	static const struct answer last[] = { ANS(1, 0, { B, B + 3 * P, 0 }) };
	static const struct answer none[] = { ANS(0, 0, { 0 }) };
	struct lg_runs runs;

	(void)state;
	assert_int_equal(run(inside, 1, 4, &runs), 1);
	assert_int_equal(runs.n, 1);	/* the guard before the gap is still noted */
	lg_runs_free(&runs);
	assert_int_equal(run(first, 1, 4, &runs), 1);
	lg_runs_free(&runs);
	assert_int_equal(run(last, 1, 4, &runs), 1);
	lg_runs_free(&runs);
	assert_int_equal(run(none, 1, 4, &runs), 1);
	lg_runs_free(&runs);
}

/* A full vector: the kernel stops at walk_end, the next call goes on. */
static void continues(void **state)
{
	static const struct answer a[] = {
		ANS(2, B + 2 * P, { B, B + P, G }, { B + P, B + 2 * P, 0 }),
		ANS(2, 0, { B + 2 * P, B + 3 * P, G }, { B + 3 * P, B + 4 * P, G }),
	};
	struct lg_runs runs;

	(void)state;
	assert_int_equal(run(a, 2, 4, &runs), 0);
	assert_int_equal(runs.n, 2);
	assert_int_equal(runs.v[1].start, B + 2 * P);
	assert_int_equal(runs.v[1].end, B + 4 * P);
	lg_runs_free(&runs);
}

static void bad_answers(void **state)
{
	static const struct answer bad[][1] = {
		{ ANS(2, 0, { B, B + 2 * P, 0 }, { B + P, B + 4 * P, G }) },	/* overlap */
		{ ANS(1, 0, { B + 1, B + 4 * P, 0 }) },				/* unaligned */
		{ ANS(1, 0, { B, B + 5 * P, 0 }) },				/* past the end */
		{ ANS(1, 0, { B - P, B + 4 * P, 0 }) },				/* before the start */
		{ ANS(1, 0, { B + P, B + P, 0 }) },				/* empty */
		{ ANS(1, B + P, { B, B + 2 * P, 0 }) },			/* past walk_end */
		{ ANS(0, B, { 0 }) },					/* no progress */
		{ ANS(65, 0, { 0 }) },						/* more than asked */
		{ ANS(-ENOTTY, 0, { 0 }) },					/* an error */
	};
	static const int want[] = { -EIO, -EIO, -EIO, -EIO, -EIO, -EIO, -EIO, -EIO, -ENOTTY };
	struct lg_runs runs;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(run(bad[i], 1, 4, &runs), want[i]);
		lg_runs_free(&runs);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tiles),
		cmocka_unit_test(gaps),
		cmocka_unit_test(continues),
		cmocka_unit_test(bad_answers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
