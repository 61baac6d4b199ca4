// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The mprotect(PROT_NONE) method, for kernels or mappings without native
 * guards, and the record that makes it reversible: a sorted array of
 * disjoint intervals, each with the protection it had before the library
 * protected it, under the library's one mutex (held across fork() so a
 * child never inherits it locked; registry.c shares it).
 */
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct rec {
	uintptr_t start, end;
	int prot;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static struct rec *recs;
static size_t nrecs, caprecs;
size_t lg_fallback_live;	/* nrecs, for lg_fallback_any() */

static void lock_for_fork(void)
{
	pthread_mutex_lock(&lock);
}

static void unlock_after_fork(void)
{
	pthread_mutex_unlock(&lock);
}

/* The child also drops what names its parent's mm: the kept pagemap. */
static void child_after_fork(void)
{
	lg_pagemap_after_fork_child();
	pthread_mutex_unlock(&lock);
}

static void register_atfork(void)
{
	pthread_atfork(lock_for_fork, unlock_after_fork, child_after_fork);
}

void lg_lock(void)
{
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&lock);
}

void lg_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

static int reserve(size_t more)
{
	size_t cap = caprecs ? caprecs : 16;
	struct rec *v;

	if (nrecs + more <= caprecs)
		return 0;
	while (cap < nrecs + more)
		cap *= 2;
	v = realloc(recs, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	recs = v;
	caprecs = cap;
	return 0;
}

/* Index of the first record ending above addr. */
static size_t first_above(uintptr_t addr)
{
	size_t lo = 0, hi = nrecs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (recs[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Insert a piece known not to overlap any record; space is reserved. */
static void rec_insert(uintptr_t start, uintptr_t end, int prot)
{
	size_t i = first_above(start);

	memmove(&recs[i + 1], &recs[i], (nrecs - i) * sizeof(*recs));
	recs[i] = (struct rec){ start, end, prot };
	nrecs++;
}

/* Forget [start, end); needs one reserved slot for a split. */
static void rec_carve(uintptr_t start, uintptr_t end)
{
	size_t i = first_above(start);

	while (i < nrecs && recs[i].start < end) {
		struct rec r = recs[i];

		if (r.start < start && r.end > end) {
			memmove(&recs[i + 1], &recs[i], (nrecs - i) * sizeof(*recs));
			nrecs++;
			recs[i].end = start;
			recs[i + 1].start = end;
			return;
		}
		if (r.start < start) {
			recs[i++].end = start;
		} else if (r.end > end) {
			recs[i].start = end;
			return;
		} else {
			memmove(&recs[i], &recs[i + 1], (nrecs - i - 1) * sizeof(*recs));
			nrecs--;
		}
	}
}

static void publish(void)
{
	__atomic_store_n(&lg_fallback_live, nrecs, __ATOMIC_RELEASE);
}

struct piece {
	uintptr_t start, end;
	int prot;
};

struct pieces {
	size_t n, cap;
	struct piece *v;
};

static int pieces_add(struct pieces *p, uintptr_t start, uintptr_t end, int prot)
{
	if (p->n && p->v[p->n - 1].end == start && p->v[p->n - 1].prot == prot) {
		p->v[p->n - 1].end = end;
		return 0;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 8;
		struct piece *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n++] = (struct piece){ start, end, prot };
	return 0;
}

/*
 * The VMAs covering [start, end), clipped to it, as pieces with their
 * current protection. With holes_ok a hole is skipped, else -ENOMEM.
 */
static int vma_pieces(int fd, uintptr_t start, uintptr_t end, bool holes_ok, struct pieces *out)
{
	uintptr_t at = start;

	while (at < end) {
		struct lg_vma vma;
		int ret = lg_vma_find(fd, at, &vma);

		if (ret < 0)
			return ret;
		if (ret == 0 || vma.start >= end) {
			if (!holes_ok)
				return -ENOMEM;
			break;
		}
		if (vma.start > at && !holes_ok)
			return -ENOMEM;
		if (vma.start > at)
			at = vma.start;
		ret = pieces_add(out, at, vma.end < end ? vma.end : end, vma.prot);
		if (ret)
			return ret;
		at = vma.end;
	}
	return 0;
}

/* Undo mprotect(PROT_NONE) of the first n pieces. */
static void unprotect(const struct pieces *p, size_t n)
{
	while (n--)
		mprotect((void *)p->v[n].start, p->v[n].end - p->v[n].start, p->v[n].prot);
}

/*
 * Discard private anonymous data, as native installation does. The
 * kernel refuses on VM_PFNMAP (native refuses every VM_SPECIAL mapping:
 * so do we), mlocked and, unaligned, hugetlb memory: those two keep their
 * data, because the kernel will not drop it.
 */
static int discard(const struct pieces *all, uintptr_t start, uintptr_t end)
{
	int ret = lg_madvise((void *)start, end - start, MADV_DONTNEED);

	if (ret != -EINVAL)
		return ret;
	ret = lg_vma_kind(start, end);
	if (ret < 0)
		return ret;
	if (ret & LG_VM_SPECIAL)
		return -EINVAL;
	for (size_t i = 0; i < all->n; i++)
		lg_madvise((void *)all->v[i].start, all->v[i].end - all->v[i].start, MADV_DONTNEED);
	return 0;
}

int lg_fallback_install(uintptr_t start, uintptr_t end)
{
	struct pieces all = { 0 }, todo = { 0 };
	size_t done = 0;
	int fd, ret;

	lg_lock();
	fd = lg_vma_open();
	ret = fd < 0 ? fd : vma_pieces(fd, start, end, false, &all);
	if (fd >= 0)
		close(fd);
	/*
	 * A record over a page that is no longer PROT_NONE is stale (the
	 * caller re-protected or re-mapped it): forget it. Pages still
	 * recorded keep their first, original protection.
	 */
	for (size_t i = 0; !ret && i < all.n; i++) {
		if (all.v[i].prot == PROT_NONE)
			continue;
		ret = reserve(1);
		if (!ret)
			rec_carve(all.v[i].start, all.v[i].end);
	}
	publish();
	for (size_t i = 0; !ret && i < all.n; i++) {
		uintptr_t at = all.v[i].start;

		for (size_t r = first_above(at); !ret && at < all.v[i].end; r++) {
			uintptr_t stop = r < nrecs && recs[r].start < all.v[i].end ? recs[r].start
										  : all.v[i].end;

			if (stop > at)
				ret = pieces_add(&todo, at, stop, all.v[i].prot);
			at = r < nrecs ? recs[r].end : all.v[i].end;
		}
	}
	if (!ret)
		ret = reserve(todo.n);
	if (!ret)
		ret = discard(&all, start, end);
	/*
	 * A piece can span VMAs (pieces_add() joins neighbours of one
	 * protection), and mprotect() changes them in order: one that fails
	 * with ENOMEM at a split may have protected the VMAs before it, so the
	 * failed piece is undone with the others. Undoing restores the layout
	 * from before the call, which never takes more VMAs than it had.
	 */
	while (!ret && done < todo.n) {
		ret = lg_mprotect((void *)todo.v[done].start, todo.v[done].end - todo.v[done].start,
				  PROT_NONE);
		done++;
	}
	if (ret) {
		unprotect(&todo, done);
	} else {
		for (size_t i = 0; i < todo.n; i++)
			rec_insert(todo.v[i].start, todo.v[i].end, todo.v[i].prot);
		publish();
	}
	pthread_mutex_unlock(&lock);
	free(all.v);
	free(todo.v);
	return ret;
}

/*
 * The parts of records first..last-1 inside [start, end) that are still
 * PROT_NONE, each with its recorded protection. Called with the lock held.
 */
static int recorded_pieces(size_t first, size_t last, uintptr_t start, uintptr_t end,
			   struct pieces *out)
{
	int fd = lg_vma_open(), ret = 0;

	if (fd < 0)
		return fd;
	for (size_t r = first; !ret && r < last && recs[r].start < end; r++) {
		struct pieces now = { 0 };
		uintptr_t s = recs[r].start > start ? recs[r].start : start;
		uintptr_t e = recs[r].end < end ? recs[r].end : end;

		ret = vma_pieces(fd, s, e, true, &now);
		for (size_t i = 0; !ret && i < now.n; i++)
			if (now.v[i].prot == PROT_NONE)
				ret = pieces_add(out, now.v[i].start, now.v[i].end, recs[r].prot);
		free(now.v);
	}
	close(fd);
	return ret;
}

/*
 * Restore what install recorded in [start, end), where it is still a
 * PROT_NONE mapping: a page that was unmapped or re-protected since is not
 * guarded any more and must not get the old protection back.
 */
int lg_fallback_remove(uintptr_t start, uintptr_t end)
{
	struct pieces todo = { 0 };
	size_t done = 0, first, last;
	int ret = 0;

	lg_lock();
	first = first_above(start);
	for (last = first; last < nrecs && recs[last].start < end; last++)
		;
	if (first == last)
		goto out;
	ret = recorded_pieces(first, last, start, end, &todo);
	if (!ret)
		ret = reserve(1);
	/* As in lg_fallback_install(): the failed piece is undone too. */
	while (!ret && done < todo.n) {
		ret = lg_mprotect((void *)todo.v[done].start, todo.v[done].end - todo.v[done].start,
				  todo.v[done].prot);
		done++;
	}
	if (ret) {
		while (done--)
			mprotect((void *)todo.v[done].start, todo.v[done].end - todo.v[done].start,
				 PROT_NONE);
	} else {
		rec_carve(start, end);
		publish();
	}
out:
	pthread_mutex_unlock(&lock);
	free(todo.v);
	return ret;
}

void lg_fallback_forget(uintptr_t start, uintptr_t end)
{
	if (!lg_fallback_any())
		return;
	lg_lock();
	/* No slot for a split: the record then stays, stale and harmless. */
	if (!reserve(1)) {
		rec_carve(start, end);
		publish();
	}
	pthread_mutex_unlock(&lock);
}

int lg_fallback_query(uintptr_t start, uintptr_t end, unsigned char *vec)
{
	struct pieces now = { 0 };
	size_t page = lg_page_size(), first;
	int ret;

	lg_lock();
	first = first_above(start);
	ret = recorded_pieces(first, nrecs, start, end, &now);
	pthread_mutex_unlock(&lock);
	for (size_t i = 0; !ret && i < now.n; i++)
		for (uintptr_t p = now.v[i].start; p < now.v[i].end; p += page)
			vec[(p - start) / page] |= GUARD_QUERY_FALLBACK;
	free(now.v);
	return ret;
}
