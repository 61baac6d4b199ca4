// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * userfaultfd on private anonymous memory: register a run of pages in
 * MISSING mode, resolve it with UFFDIO_COPY of fresh patterns (or
 * UFFDIO_ZEROPAGE), unregister. A page with something in its page table
 * entry (present, swapped) gives EEXIST, where the call stops; a missing
 * one is filled. A guard is what caps.c found at start: filled (the guard
 * gone: upstream's UFFDIO_COPY) or EEXIST (the guard kept).
 *
 * Presence is the kernel's, not the model's: it is read from pagemap
 * after registering (khugepaged leaves a registered range alone), and the
 * MADV_FREE'd pages, which reclaim may drop at any moment, are left out.
 * One call works within one VMA, so the run is cut where the kernel's
 * VMAs end. Registering splits VMAs; unregistering must merge them back.
 */
#include "seq.h"

#include "kapi.h"
#include "pattern.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#define UFFD_MAX 64		/* pages per operation */

static bool is_panon(const struct mpage *p)
{
	return p->type == BT_PANON;
}

/* Does the kernel refuse page i (pagemap entry e) with EEXIST? */
static bool refuses(const struct ctx *c, size_t i, uint64_t e, bool zero)
{
	if (c->m.pg[i].guard)
		return zero ? !c->caps.uffd_zero_fills_guard : !c->caps.uffd_copy_fills_guard;
	return (e >> PM_PRESENT_BIT & 1) || (e >> PM_SWAP_BIT & 1);
}

void op_uffd(struct ctx *c)
{
	static uint64_t src[UFFD_MAX * 4096 / 8];
	static uint64_t pm[UFFD_MAX];
	struct model *m = &c->m;
	bool zero = rng_pct(&c->rng, 25);
	const char *what = zero ? "UFFDIO_ZEROPAGE" : "UFFDIO_COPY";
	size_t i, lo, hi, at;
	uintptr_t vs, ve;
	uint32_t pat0 = 0;
	char bad[256] = "";
	long bad_page = -1;
	int fd, before, after, r;

	if (!pick_mapped(c, is_panon, &i)) {
		log_op(c, 0, 0, "uffd: no private anon page");
		return;
	}
	grow_run(c, i, is_panon, UFFD_MAX, &lo, &hi);
	if (hi - lo > UFFD_MAX)
		hi = lo + UFFD_MAX;	/* grow_run() may give one more, to reach i */
	if (!zero) {
		pat0 = m->next_pat;
		m->next_pat += (uint32_t)(hi - lo);
		for (size_t k = lo; k < hi; k++)
			pattern_fill((char *)src + (k - lo) * kapi_page, kapi_page, pat0 + (uint32_t)(k - lo));
	}
	if (zero)
		log_op(c, lo, hi, "uffd %s [p%zu, p%zu):", what, lo, hi);
	else
		log_op(c, lo, hi, "uffd %s [p%zu, p%zu) patterns %u..:", what, lo, hi, pat0);
	c->uf.zeropage += zero;

	before = kapi_vma_count();
	fd = kapi_uffd_open();
	if (fd < 0)
		fail(c, -1, "userfaultfd worked at start, now: %s", kapi_errname(fd));
	r = kapi_uffd_register(fd, (uintptr_t)model_addr(m, lo), (hi - lo) * kapi_page);
	if (r)
		fail(c, (long)lo, "UFFDIO_REGISTER [p%zu, p%zu) of private anon: %s", lo, hi,
		     kapi_errname(r));
	/*
	 * Nothing may touch the range now: a missing page would wait for a
	 * handler that is not there. Failures are reported after unregistering.
	 */
	r = kapi_pagemap(c->pmfd, (uintptr_t)model_addr(m, lo), hi - lo, pm);
	if (r)
		snprintf(bad, sizeof(bad), "reading pagemap: %s", kapi_errname(r));
	for (at = lo; at < hi && !*bad;) {
		size_t end = at, k;
		int64_t done, want_done;
		int want;

		if (m->pg[at].cs == CS_EITHER) {
			at++;
			continue;
		}
		while (end < hi && m->pg[end].cs != CS_EITHER)
			end++;
		/* One call works within one VMA (ENOENT otherwise): the kernel's, as in mremap. */
		r = kapi_vma_of((uintptr_t)model_addr(m, at), &vs, &ve);
		if (r) {
			snprintf(bad, sizeof(bad), "p%zu is private anon in the model but in no VMA", at);
			bad_page = (long)at;
			break;
		}
		if (ve < (uintptr_t)model_addr(m, end))
			end = (ve - m->base) / kapi_page;
		for (k = at; k < end; k++)
			if (refuses(c, k, pm[k - lo], zero))
				break;
		if (zero)
			r = kapi_uffd_zeropage(fd, (uintptr_t)model_addr(m, at), (end - at) * kapi_page,
					       &done);
		else
			r = kapi_uffd_copy(fd, (uintptr_t)model_addr(m, at),
					   (char *)src + (at - lo) * kapi_page, (end - at) * kapi_page,
					   &done);
		/* The whole range; or it stopped at k: EEXIST, or EAGAIN with the bytes before k. */
		want = k == end ? 0 : k == at ? -EEXIST : -EAGAIN;
		want_done = k == at && k < end ? -EEXIST : (int64_t)((k - at) * kapi_page);
		log_more(c, " [p%zu, p%zu) -> %s %lld", at, end, kapi_errname(r), (long long)done);
		if (r != want || done != want_done) {
			snprintf(bad, sizeof(bad), "%s [p%zu, p%zu) returned %s with %lld bytes done, "
				 "the model expects %s with %lld (p%zu is %s%s in pagemap)", what, at,
				 end, kapi_errname(r), (long long)done, kapi_errname(want),
				 (long long)want_done, k < end ? k : end - 1,
				 m->pg[k < end ? k : end - 1].guard ? "guarded, " : "",
				 pm[(k < end ? k : end - 1) - lo] >> PM_PRESENT_BIT & 1 ? "present" :
				 pm[(k < end ? k : end - 1) - lo] >> PM_SWAP_BIT & 1 ? "swapped" : "none");
			bad_page = (long)(k < end ? k : at);
			break;
		}
		for (size_t j = at; j < k; j++) {
			struct mpage *p = &m->pg[j];

			c->uf.filled++;
			c->uf.guard_filled += p->guard;
			p->guard = 0;
			p->cs = zero ? CS_ZERO : CS_PRIV;
			p->pat = zero ? 0 : pat0 + (uint32_t)(j - lo);
		}
		if (k < end) {
			c->uf.eexist++;
			c->uf.guard_eexist += m->pg[k].guard;
		}
		at = k + 1;	/* a fault handler would go on after the page it can't fill */
	}
	r = kapi_uffd_unregister(fd, (uintptr_t)model_addr(m, lo), (hi - lo) * kapi_page);
	close(fd);
	if (r)
		fail(c, (long)lo, "UFFDIO_UNREGISTER [p%zu, p%zu): %s", lo, hi, kapi_errname(r));
	if (*bad)
		fail(c, bad_page, "%s", bad);
	after = kapi_vma_count();
	if (before < 0 || after < 0)
		fail(c, -1, "reading /proc/self/maps: %s", kapi_errname(before < 0 ? before : after));
	if (after != before)
		fail(c, (long)lo, "userfaultfd register and unregister changed the number of VMAs "
		     "from %d to %d", before, after);
}
