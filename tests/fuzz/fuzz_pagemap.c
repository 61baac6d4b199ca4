// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target: what the library makes of the kernel's guard reports, the
 * PAGEMAP_SCAN regions and the /proc/PID/pagemap entries behind
 * guard_query() and guard_maps_next(), with the kernel replaced by the
 * input. Input: a mode byte, the range (pages, first page), then:
 *
 *   honest modes: a bitmap of guarded pages, then a schedule of short
 *     reads and early stops; the stand-in answers as the kernel does, and
 *     the runs must be exactly the bitmap;
 *   hostile modes: the answers themselves (counts, walk ends, regions,
 *     read lengths and entries), so that out-of-order, overlapping,
 *     unaligned, out-of-range and oversized answers are tried: the result
 *     must be an error or runs that keep the documented promise
 *     (ascending, disjoint, page-aligned, inside the range).
 *
 * Either way lg_runs_vec() then fills a vector of exactly one byte per
 * page, so that an index outside it is an ASan report.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "fuzz.h"

struct stream {
	const uint8_t *p, *end;
};

static int take(struct stream *s, void *out, size_t n)
{
	if ((size_t)(s->end - s->p) < n)
		return -1;
	memcpy(out, s->p, n);
	s->p += n;
	return 0;
}

static uint8_t take8(struct stream *s)
{
	uint8_t v = 0;

	take(s, &v, 1);
	return v;
}

struct world {
	size_t page;
	uintptr_t start, end;
	const uint8_t *bitmap;	/* honest modes: bit i = page i guarded */
	size_t bitmap_len;
	struct stream s;	/* honest: the schedule; hostile: the answers */
	int calls;
};

static bool guarded(const struct world *w, uintptr_t addr)
{
	size_t i = (addr - w->start) / w->page;

	return i / 8 < w->bitmap_len && (w->bitmap[i / 8] >> (i % 8) & 1);
}

/* A value near base: small page steps mostly, any 64-bit value sometimes. */
static uint64_t take_addr(struct world *w, uint64_t base)
{
	uint8_t tag = take8(&w->s);
	uint64_t raw = 0;

	if (tag & 0x80) {
		take(&w->s, &raw, sizeof(raw));
		return raw;
	}
	return base + (uint64_t)(tag & 0x3f) * w->page - (tag & 0x40 ? w->page : 0);
}

static long honest_scan(void *ctx, struct lg_pm_scan_arg *arg)
{
	struct world *w = ctx;
	struct lg_page_region *vec = (struct lg_page_region *)(uintptr_t)arg->vec;
	uint64_t budget = take8(&w->s) % 16 + 1;	/* pages this call walks */
	uintptr_t at = arg->start;
	long n = 0;

	for (; at < arg->end && budget; at += w->page, budget--) {
		if (!guarded(w, at))
			continue;
		if (n && vec[n - 1].end == at) {
			vec[n - 1].end += w->page;
			continue;
		}
		if ((uint64_t)n == arg->vec_len)
			break;	/* full: the walk ends where the next region would start */
		vec[n++] = (struct lg_page_region){ at, at + w->page, LG_PAGE_IS_GUARD };
	}
	arg->walk_end = at;
	w->calls++;
	return n;
}

static long hostile_scan(void *ctx, struct lg_pm_scan_arg *arg)
{
	struct world *w = ctx;
	struct lg_page_region *vec = (struct lg_page_region *)(uintptr_t)arg->vec;
	uint8_t count = take8(&w->s);
	uint64_t prev;
	long n;

	if (w->s.p == w->s.end || ++w->calls > 64)
		return -EIO;	/* out of answers: an error ends the walk */
	if (count & 0x80)
		return -(long)(count & 0x3f) - 1;
	/* Up to 40, more than the 32 the library asks for. */
	n = count % 41;
	arg->walk_end = take_addr(w, arg->start);
	prev = arg->start;
	/* Never past the caller's vector: that would be this harness's bug. */
	for (long i = 0; i < n && (uint64_t)i < arg->vec_len; i++) {
		vec[i].start = take_addr(w, prev);
		vec[i].end = take_addr(w, vec[i].start);
		vec[i].categories = LG_PAGE_IS_GUARD;
		prev = vec[i].end;
	}
	return n;
}

static ssize_t honest_read(void *ctx, void *buf, size_t len, off_t off)
{
	struct world *w = ctx;
	uint8_t sched = take8(&w->s);
	size_t entries = len / 8, give = (size_t)(sched % 64) + 1;
	uint64_t *e = buf;

	if (give < entries)
		entries = give;
	for (size_t i = 0; i < entries; i++) {
		uintptr_t addr = ((uintptr_t)off / 8 + i) * w->page;

		/* other bits as a real entry may have them: present, soft-dirty */
		e[i] = (sched & 1 ? 1ull << 63 : 0) | (sched & 2 ? 1ull << 55 : 0) |
		       (guarded(w, addr) ? 1ull << LG_PM_GUARD_REGION_BIT : 0);
	}
	w->calls++;
	/* now and then a read that ends inside an entry */
	return (ssize_t)(entries * 8 + (sched & 0x80 && entries * 8 + 3 <= len ? 3 : 0));
}

static ssize_t hostile_read(void *ctx, void *buf, size_t len, off_t off)
{
	struct world *w = ctx;
	uint16_t got = 0;

	(void)off;
	if (take(&w->s, &got, sizeof(got)) || ++w->calls > 64)
		return -EIO;
	if (got & 0x8000)
		return -(ssize_t)(got & 0x7f) - 1;
	/* The bytes it claims, as far as the buffer goes: a longer claim is a lie. */
	for (size_t i = 0; i < got && i < len; i++)
		((uint8_t *)buf)[i] = take8(&w->s);
	return got;
}

static void check_runs(const struct world *w, const struct lg_runs *runs, bool honest)
{
	size_t npages = (w->end - w->start) / w->page;
	unsigned char *vec = malloc(npages);
	size_t in_runs = 0;

	CHECK(vec);
	for (size_t i = 0; i < runs->n; i++) {
		const struct lg_run *r = &runs->v[i];

		CHECK(r->start < r->end);
		CHECK(r->start >= w->start && r->end <= w->end);
		CHECK(!(r->start % w->page) && !(r->end % w->page));
		if (i)
			CHECK(r->start > runs->v[i - 1].end);	/* disjoint and merged */
		in_runs += (r->end - r->start) / w->page;
	}
	memset(vec, 0, npages);
	lg_runs_vec(runs, w->start, w->end, vec);
	for (size_t i = 0, j = 0; i < npages; i++) {
		uintptr_t addr = w->start + i * w->page;
		bool in;

		while (j < runs->n && runs->v[j].end <= addr)
			j++;
		in = j < runs->n && runs->v[j].start <= addr;
		CHECK(!!vec[i] == in);
		if (honest)
			CHECK(in == guarded(w, addr));
		in_runs -= in;
	}
	CHECK(in_runs == 0);
	/* a window inside the range: clipped, and nothing outside it touched */
	if (npages > 2) {
		memset(vec, 0, npages - 2);
		lg_runs_vec(runs, w->start + w->page, w->end - w->page, vec);
	}
	free(vec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stream in = { data, data + size };
	struct world w = { .page = 4096 };
	uint8_t mode = take8(&in);
	uint16_t npages = 0, first = 0;
	bool scan = mode & 1, honest = !(mode & 2);
	struct lg_runs runs;
	int ret;

	take(&in, &npages, sizeof(npages));
	take(&in, &first, sizeof(first));
	npages = npages % 1024 + 1;
	w.start = ((uintptr_t)first + 16) * w.page;
	w.end = w.start + (uintptr_t)npages * w.page;
	if (honest) {
		w.bitmap = in.p;
		w.bitmap_len = (size_t)(in.end - in.p) < (size_t)(npages + 7) / 8
				       ? (size_t)(in.end - in.p)
				       : (size_t)(npages + 7) / 8;
		in.p += w.bitmap_len;
	}
	w.s = in;
	lg_runs_init(&runs);
	if (scan)
		ret = lg_scan_runs(honest ? honest_scan : hostile_scan, &w, w.start, w.end, &runs);
	else
		ret = lg_pagemap_runs(honest ? honest_read : hostile_read, &w, w.start, w.end,
				      &runs);
	if (honest)
		CHECK(ret == 0);
	if (!ret)
		check_runs(&w, &runs, honest);
	lg_runs_free(&runs);
	return 0;
}
