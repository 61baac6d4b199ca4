/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Page contents the testers write: pattern id p fills word k of a page with
 * pattern_word(p, k). Id 0 is the zero page; every other id gives only
 * non-zero words, so a word reads back as exactly one of "zero" or "this
 * pattern", and a page that was discarded half-way is still recognised.
 * The page index is mixed in by the callers that need to catch a page
 * showing up at the wrong address (ids are unique per write anyway).
 */
#ifndef STRESS_PATTERN_H
#define STRESS_PATTERN_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t pattern_word(uint32_t p, size_t k)
{
	uint64_t z;

	if (!p)
		return 0;
	z = ((uint64_t)p << 32 | (uint32_t)k) * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ull;
	return (z ^ (z >> 32)) | 1;
}

static inline void pattern_fill(void *page, size_t page_size, uint32_t p)
{
	uint64_t *w = page;

	for (size_t k = 0; k < page_size / 8; k++)
		w[k] = pattern_word(p, k);
}

#endif
