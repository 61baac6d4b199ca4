// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * userfaultfd on a run of private anonymous pages, or (where the kernel
 * registers shmem) of shmem pages: shared anonymous, memfd and tmpfs
 * mappings, and private mappings of the memfd. Register the run in
 * MISSING mode, resolve it with UFFDIO_COPY of fresh patterns (or
 * UFFDIO_ZEROPAGE), unregister. Each call stops at the first page it
 * refuses (EEXIST); the next starts after it.
 *
 * Private pages (anonymous, and private shmem, which takes the anonymous
 * path) are refused when their page table entry holds something (present,
 * swapped) and filled when it is empty. Shared shmem pages are refused
 * when mapped or when their object holds data at that offset; one whose
 * object shows zero there may be a hole (filled) or an allocated zero
 * page (refused), which the model does not track, so either answer is
 * right and the model takes the kernel's. A guard is what caps.c found at
 * start: filled (the guard gone: upstream) or EEXIST (the guard kept).
 * ZEROPAGE is not used on private shmem: the zero page it maps there
 * is dropped by a hole punch, which the model does not follow.
 *
 * Presence is the kernel's, not the model's: it is read from pagemap
 * after registering (khugepaged leaves a registered range alone), and the
 * MADV_FREE'd pages, which reclaim may drop at any moment, are left out,
 * as are shmem pages past their object's end (SIGBUS, EFAULT here). One
 * call works within one VMA, so the run is cut where the kernel's VMAs
 * end. Registering splits VMAs; unregistering must merge them back.
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

static bool is_shared_shmem(const struct mpage *p)
{
	return p->type == BT_SANON || p->type == BT_MEMFD || p->type == BT_TMPFS;
}

static bool takes_zeropage(const struct mpage *p)
{
	return is_panon(p) || is_shared_shmem(p);
}

static bool takes_copy(const struct mpage *p)
{
	return takes_zeropage(p) || p->type == BT_PRIV_SHM;
}

enum fate { FILLED, REFUSED, EITHER };

static const char *const fate_name[] = { "filled", "refused", "filled or refused" };

/* What the kernel must do with page i (pagemap entry e). */
static enum fate fate_of(const struct ctx *c, size_t i, uint64_t e, bool zero)
{
	const struct mpage *p = &c->m.pg[i];
	bool fills_guard;

	if (!is_shared_shmem(p)) {
		fills_guard = zero ? c->caps.uffd_zero_fills_guard : c->caps.uffd_copy_fills_guard;
		if (p->guard)
			return fills_guard ? FILLED : REFUSED;
		return (e >> PM_PRESENT_BIT & 1) || (e >> PM_SWAP_BIT & 1) ? REFUSED : FILLED;
	}
	fills_guard = zero ? c->caps.uffd_shmem_zero_fills_guard
			   : c->caps.uffd_shmem_copy_fills_guard;
	if (p->guard && !fills_guard)
		return REFUSED;
	if (!p->guard && (e >> PM_PRESENT_BIT & 1))
		return REFUSED;
	return c->m.obj[p->obj].content[p->off] ? REFUSED : EITHER;
}

/* Left out of the calls: MADV_FREE'd, or a shmem page past its object's end. */
static bool left_out(const struct model *m, size_t i)
{
	const struct mpage *p = &m->pg[i];

	if (p->type == BT_PANON)
		return p->cs == CS_EITHER;
	return p->off >= m->obj[p->obj].size;
}

/* Where a call on [at, end) stopped: end, or the page it refused; SIZE_MAX: neither. */
static size_t stop_page(size_t at, size_t end, int r, int64_t done)
{
	int64_t len = (int64_t)((end - at) * kapi_page);

	if (r == 0 && done == len)
		return end;
	if (r == -EEXIST && done == -EEXIST)
		return at;
	if (r == -EAGAIN && done > 0 && done < len && done % (int64_t)kapi_page == 0)
		return at + (size_t)done / kapi_page;
	return SIZE_MAX;
}

/* Does a VMA start at @p (and another end there)? */
static bool vma_edge(const char *p)
{
	uintptr_t s, e;

	return kapi_vma_of((uintptr_t)p, &s, &e) == 0 && s == (uintptr_t)p &&
	       kapi_vma_of((uintptr_t)p - 1, &s, &e) == 0;
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
	bool (*ok)(const struct mpage *p) = !c->caps.uffd_shmem ? is_panon
					    : zero ? takes_zeropage : takes_copy;
	uint32_t pat0 = 0;
	char bad[512] = "";
	long bad_page = -1;
	int fd, before, after, r;
	bool edge_lo, edge_hi;
	int64_t done;

	if (!pick_mapped(c, ok, &i)) {
		log_op(c, 0, 0, "uffd: no page userfaultfd can register");
		return;
	}
	grow_run(c, i, ok, UFFD_MAX, &lo, &hi);
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
	edge_lo = vma_edge(model_addr(m, lo));
	edge_hi = vma_edge(model_addr(m, hi));
	fd = kapi_uffd_open();
	if (fd < 0)
		fail(c, -1, "userfaultfd worked at start, now: %s", kapi_errname(fd));
	r = kapi_uffd_register(fd, (uintptr_t)model_addr(m, lo), (hi - lo) * kapi_page);
	if (r)
		fail(c, (long)lo, "UFFDIO_REGISTER [p%zu, p%zu): %s", lo, hi, kapi_errname(r));
	/*
	 * Nothing may touch the range now: a missing page would wait for a
	 * handler that is not there. Failures are reported after unregistering.
	 */
	r = kapi_pagemap(c->pmfd, (uintptr_t)model_addr(m, lo), hi - lo, pm);
	if (r)
		snprintf(bad, sizeof(bad), "reading pagemap: %s", kapi_errname(r));
	for (at = lo; at < hi && !*bad;) {
		size_t end = at, k, first_refused, stop;

		if (left_out(m, at)) {
			at++;
			continue;
		}
		while (end < hi && !left_out(m, end))
			end++;
		/* One call works within one VMA (ENOENT otherwise): the kernel's, as in mremap. */
		r = kapi_vma_of((uintptr_t)model_addr(m, at), &vs, &ve);
		if (r) {
			snprintf(bad, sizeof(bad), "p%zu is %s in the model but in no VMA", at,
				 btype_name[m->pg[at].type]);
			bad_page = (long)at;
			break;
		}
		if (ve < (uintptr_t)model_addr(m, end))
			end = (ve - m->base) / kapi_page;
		for (first_refused = at; first_refused < end; first_refused++)
			if (fate_of(c, first_refused, pm[first_refused - lo], zero) == REFUSED)
				break;
		if (zero)
			r = kapi_uffd_zeropage(fd, (uintptr_t)model_addr(m, at), (end - at) * kapi_page,
					       &done);
		else
			r = kapi_uffd_copy(fd, (uintptr_t)model_addr(m, at),
					   (char *)src + (at - lo) * kapi_page, (end - at) * kapi_page,
					   &done);
		log_more(c, " [p%zu, p%zu) -> %s %lld", at, end, kapi_errname(r), (long long)done);
		/*
		 * Every page before the stop filled, the stop refused: the stop
		 * no later than the first page that must be refused, and not a
		 * page that must be filled.
		 */
		stop = stop_page(at, end, r, done);
		if (stop == SIZE_MAX || stop > first_refused ||
		    (stop < end && fate_of(c, stop, pm[stop - lo], zero) == FILLED)) {
			/* The page it got wrong: the one it went past, or the one it stopped at. */
			k = stop == SIZE_MAX ? at : stop > first_refused ? first_refused : stop;
			snprintf(bad, sizeof(bad), "%s [p%zu, p%zu) returned %s with %lld bytes done; "
				 "the model wants it to stop by p%zu (p%zu: %s in the model, %s%s in "
				 "pagemap, to be %s)", what, at, end, kapi_errname(r), (long long)done,
				 first_refused, k, btype_name[m->pg[k].type],
				 m->pg[k].guard ? "guarded, " : "",
				 pm[k - lo] >> PM_PRESENT_BIT & 1 ? "present" :
				 pm[k - lo] >> PM_SWAP_BIT & 1 ? "swapped" : "none",
				 fate_name[fate_of(c, k, pm[k - lo], zero)]);
			bad_page = (long)k;
			break;
		}
		for (size_t j = at; j < stop; j++) {
			struct mpage *p = &m->pg[j];
			uint32_t pat = zero ? 0 : pat0 + (uint32_t)(j - lo);

			c->uf.filled++;
			c->uf.guard_filled += p->guard;
			c->uf.shmem_filled += p->type != BT_PANON;
			p->guard = 0;
			if (is_shared_shmem(p)) {
				m->obj[p->obj].content[p->off] = pat;
			} else {
				p->cs = zero ? CS_ZERO : CS_PRIV;
				p->pat = pat;
			}
		}
		if (stop < end) {
			c->uf.eexist++;
			c->uf.guard_eexist += m->pg[stop].guard;
			c->uf.shmem_eexist += m->pg[stop].type != BT_PANON;
		}
		at = stop + 1;	/* a fault handler would go on after the page it can't fill */
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
	if (after != before) {
		/*
		 * Registering split the VMA at lo and hi, and filling a page
		 * gave the middle an anon_vma (mfill_atomic() prepares one even
		 * where it then refuses every page). A private VMA with an
		 * anon_vma never merges back into neighbours without one in
		 * 6.12 (is_mergeable_anon_vma() checks the chain of the VMA
		 * that has none; upstream lifted that in 6.16): accept exactly
		 * the new edges whose two sides are otherwise twins.
		 */
		bool new_lo = !edge_lo && vma_edge(model_addr(m, lo));
		bool new_hi = !edge_hi && vma_edge(model_addr(m, hi));
		int twin_lo = new_lo ? kapi_vma_twins_at((uintptr_t)model_addr(m, lo)) : 0;
		int twin_hi = new_hi ? kapi_vma_twins_at((uintptr_t)model_addr(m, hi)) : 0;
		int apart = (twin_lo == 1) + (twin_hi == 1);

		if (after - before != apart || twin_lo != new_lo || twin_hi != new_hi)
			fail(c, (long)lo, "userfaultfd register and unregister changed the number of "
			     "VMAs from %d to %d (new edge at p%zu: %d, twins %d; at p%zu: %d, twins "
			     "%d)", before, after, lo, new_lo, twin_lo, hi, new_hi, twin_hi);
		c->uf.anon_vma_apart += (unsigned long)apart;
		log_more(c, " (%d VMA edge(s) left by 6.12's anon_vma merge rule)", apart);
	}
}
