/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The memory state of this process, to prove that a failed call changed
 * nothing: the text of /proc/self/maps and, over chosen ranges, each
 * page's pagemap bits (guard, present, swapped) and a hash of its bytes.
 */
#ifndef LIBGUARD_TESTS_MEMSTATE_H
#define LIBGUARD_TESTS_MEMSTATE_H

#include <stddef.h>
#include <stdint.h>

#define MEMSTATE_RANGES 4

struct memstate {
	char *maps;		/* /proc/self/maps, [heap] and [stack] extents masked */
	size_t nranges;
	struct {
		uintptr_t start;
		size_t pages;
		uint64_t *pm;	/* per page: pagemap bits 58, 62, 63 */
		uint64_t *hash;	/* per page: FNV-1a of its bytes, or ~0 if unreadable */
	} r[MEMSTATE_RANGES];
};

/*
 * Snapshot, with up to MEMSTATE_RANGES ranges (start, length pairs,
 * ending with a NULL start) looked at page by page. Bytes are read
 * through /proc/self/mem, which reads PROT_NONE pages too (so the
 * fallback's guards are covered) and fails on native guards and holes;
 * they are read before pagemap, so that a page the read faults in is
 * present in both snapshots.
 */
void memstate_take(struct memstate *s, ...);
/* NULL if equal, else a description of the first difference (static). */
const char *memstate_diff(const struct memstate *a, const struct memstate *b);
void memstate_free(struct memstate *s);

/*
 * assert that an expression changes nothing: snapshot the ranges, run
 * it, snapshot again, compare (a cmocka failure names the difference).
 */
#define assert_unchanged(expr, ...) \
	do { \
		struct memstate ms_before_, ms_after_; \
		const char *ms_diff_; \
		memstate_take(&ms_before_, __VA_ARGS__); \
		expr; \
		memstate_take(&ms_after_, __VA_ARGS__); \
		ms_diff_ = memstate_diff(&ms_before_, &ms_after_); \
		if (ms_diff_) \
			print_error("%s changed memory: %s\n", #expr, ms_diff_); \
		memstate_free(&ms_before_); \
		memstate_free(&ms_after_); \
		assert_null(ms_diff_); \
	} while (0)

#endif
