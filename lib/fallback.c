// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The mprotect(PROT_NONE) method, for kernels or mappings without native
 * guards, and the record that makes it reversible (records.c): for each
 * protected piece, the protection it had and what the kernel said of its
 * VMA then (file or anonymous, shared or private, device, inode, offset,
 * whether the piece began or ended its VMA).
 *
 * A record is acted on only while the VMA at its place still matches
 * (same_vma()): PROT_NONE, the same file at the same offset (or anonymous
 * again), and no wider than the kernel could have made it by merging
 * PROT_NONE neighbours at the piece's ends. One that doesn't match is
 * stale (the caller unmapped, moved or re-protected the memory) and is
 * forgotten, never restored: guard_remove() must not make accessible
 * memory the library did not protect. What the kernel does not report
 * can't be checked: an anonymous PROT_NONE mapping put exactly in the
 * place of a guard that was a whole VMA (or merging with PROT_NONE memory
 * only where the guard could) looks like the guard; see libguard(7).
 *
 * Cost per call: one PROCMAP_QUERY per VMA of the range on the kept
 * /proc/self/maps (proc.c), O(log n) in the records, the mprotect() (and
 * for install the MADV_DONTNEED). All under lg_lock() (lock.c). Kernels
 * without PROCMAP_QUERY: a system call per recorded page in place of the
 * query (weak_vma()), and the installs' VMAs from a copy of the maps file
 * (vma_copy.c), checked on the pages they guard.
 */
#include "internal.h"

#include <string.h>
#include <sys/mman.h>

/*
 * The hot text (LG_HOT: this path, install.c's, records.c's...) starts at a
 * page: this file's is the first of it the linker places, and 6.5 KiB of
 * it then takes two pages, not three (each one a TLB miss after every
 * system call of a call).
 */
__asm__(".pushsection .text.hot,\"ax\",%progbits\n.p2align 12\n.popsection");

static inline uintptr_t min_u(uintptr_t a, uintptr_t b)
{
	return a < b ? a : b;
}

static inline uintptr_t max_u(uintptr_t a, uintptr_t b)
{
	return a > b ? a : b;
}

/*
 * The file, kind and offset of r and v agree (v's protection not looked
 * at). Without PROCMAP_QUERY (lg_vma_weak()) objects are not checked: a
 * record made from the copy of maps (vma_copy.c) may name an object that
 * was out of date, and weak_vma() sees none.
 */
static LG_HOT bool same_object(const struct lg_rec *r, const struct lg_vma *v)
{
	if (lg_vma_weak())
		return true;
	return v->shared == r->shared && v->inode == r->inode && v->dev_major == r->dev_major &&
	       v->dev_minor == r->dev_minor &&
	       (!r->inode || v->pgoff - v->start == r->off - r->start);
}

/*
 * Is v (meeting r) still the VMA the library protected r in? PROT_NONE,
 * the same object, and where v reaches past r, that is through records
 * adjacent to r of the same object, or at an end where r (or the last of
 * them) ended its VMA when it was protected, so that the kernel may have
 * merged it with a PROT_NONE neighbour there. Below and above r apart:
 * lo_holds() and hi_holds().
 */
static LG_HOT bool lo_holds(const struct lg_rec *p, const struct lg_vma *v)
{
	const struct lg_rec *q;

	/*
	 * A record that began its VMA may have merged with any PROT_NONE
	 * memory below: what lies there, a record too or not (a stale one,
	 * of memory unmapped without us), does not change its answer.
	 */
	for (; v->start < p->start && !p->edge_lo; p = q) {
		q = lg_rec_prev(p);
		if (!q || q->end != p->start || !same_object(q, v))
			return false;
	}
	return true;
}

/*
 * The last record of r's run up v's end (adjacent, the same object, up to
 * one that ended its VMA, past which anything may have merged): where
 * hi_holds() stops.
 */
static LG_HOT const struct lg_rec *hi_run_end(const struct lg_rec *p, const struct lg_vma *v)
{
	const struct lg_rec *q;

	for (; v->end > p->end && !p->edge_hi; p = q) {
		q = lg_rec_next(p);
		if (!q || q->start != p->end || !same_object(q, v))
			break;
	}
	return p;
}

static LG_HOT bool hi_holds(const struct lg_rec *run_end, const struct lg_vma *v)
{
	return v->end <= run_end->end || run_end->edge_hi;
}

static LG_HOT bool same_vma(const struct lg_rec *r, const struct lg_vma *v)
{
	return v->prot == PROT_NONE && same_object(r, v) && lo_holds(r, v) &&
	       hi_holds(hi_run_end(r, v), v);
}

/*
 * same_vma() for the records meeting one VMA, in address order, in O(1)
 * each: what the walks of one record find is its neighbour's answer (a
 * run of adjacent records of the same object shares its ends), so a VMA
 * holding k records costs O(k), not O(k^2).
 */
struct vma_check {
	const struct lg_vma *v;
	const struct lg_rec *prev;	/* the record asked before, and its lo_holds() */
	bool prev_lo;
	const struct lg_rec *run_end;	/* the run being asked about, and its hi_holds() */
	bool run_hi;
};

static bool vma_holds(struct vma_check *c, const struct lg_rec *r)
{
	const struct lg_vma *v = c->v;
	const struct lg_rec *q = lg_rec_prev(r);
	bool lo;

	if (c->prev && c->prev == q)
		lo = v->start >= r->start || r->edge_lo ||
		     (q->end == r->start && same_object(q, v) && c->prev_lo);
	else
		lo = lo_holds(r, v);
	c->prev = r;
	c->prev_lo = lo;
	if (v->prot != PROT_NONE || !same_object(r, v) || !lo)
		return false;
	if (!c->run_end || r->start >= c->run_end->end) {
		c->run_end = hi_run_end(r, v);
		c->run_hi = hi_holds(c->run_end, v);
	}
	return c->run_hi;
}

/*
 * Is the page at page_at, beyond a record's strict end, memory that may
 * have merged with it (mapped, not readable, not a record of ours)?
 */
static bool beyond_suspect(uintptr_t page_at)
{
	const struct lg_rec *q = lg_rec_first_above(page_at);

	if (q && q->start <= page_at)
		return false;	/* a record of ours: the run goes on */
	return lg_page_readable(page_at) == 0;	/* a hole: -ENOMEM */
}

/*
 * Kernels without PROCMAP_QUERY (lg_vma_weak()): what the VMA at at, in
 * r, looks like to the checks above, from what the kernel answers a page
 * at a time in O(1): whether it is mapped and can be read
 * (lg_page_readable(): MADV_POPULATE_READ, ENOMEM on a hole). A first
 * part of [at, min(r->end, end)) that is not readable becomes a PROT_NONE
 * VMA of r's object exactly that wide (r holds there); a readable one, a
 * readable VMA (r is stale there); a hole is answered as lg_vma_at()
 * answers one. Where r ended its piece strictly inside its VMA and the
 * page beyond is mapped, not readable and not ours, the VMA may have
 * grown past r (the caller made the memory around a guard PROT_NONE: the
 * guard is the caller's now): the maps file says, at O(VMAs). Which
 * mapping is there is not seen: an inaccessible mapping put in the place
 * of a guard and no wider is taken for the guard, as libguard(7) says.
 */
static int weak_vma(const struct lg_rec *r, uintptr_t at, uintptr_t end, struct lg_vma *v)
{
	size_t page = lg_page_size();
	uintptr_t lim = min_u(r->end, end), x = at + page;
	int readable;

	readable = lg_page_readable(at);
	if (readable == -ENOMEM) {
		while (x < lim && lg_page_readable(x) == -ENOMEM)
			x += page;
		if (x >= lim)
			return 0;
		*v = (struct lg_vma){ .start = x, .end = x + page, .prot = PROT_READ };
		return 1;	/* mapped again at x: the caller asks there next */
	}
	if (readable < 0)
		return lg_vma_at(at, v);	/* the maps file says, at O(VMAs) */
	while (x < lim && lg_page_readable(x) == readable)
		x += page;
	if (readable) {
		*v = (struct lg_vma){ .start = at, .end = x, .prot = PROT_READ };
		return 1;
	}
	if ((at == r->start && !r->edge_lo && beyond_suspect(at - page)) ||
	    (x == r->end && !r->edge_hi && beyond_suspect(x)))
		return lg_vma_at(at, v);	/* the maps file says, at O(VMAs) */
	*v = (struct lg_vma){
		.start = at,
		.end = x,
		.prot = PROT_NONE,
		.shared = r->shared,
		.pgoff = r->inode ? r->off + (at - r->start) : 0,
		.inode = r->inode,
		.dev_major = r->dev_major,
		.dev_minor = r->dev_minor,
	};
	return 1;
}

/* The VMA at at, in r, for the record checks: 1, 0 (none at or above), or -errno. */
static LG_HOT int rec_vma_at(const struct lg_rec *r, uintptr_t at, uintptr_t end, struct lg_vma *v)
{
	return lg_vma_weak() ? weak_vma(r, at, end, v) : lg_vma_at(at, v);
}

/* A piece of a call's plan: an interval with what to do to it. */
struct piece {
	struct lg_rec rec;	/* the record it makes, or the protection it restores */
};

/*
 * Built with lg_lock() held: beyond its first pieces it grows in memory
 * mapped for it, never malloc()'s (records.c says why); a fixed plan
 * (guard_query()'s, in steps) does not grow: -ENOSPC when full.
 */
struct plan {
	size_t n, cap;
	struct piece *v;
	bool fixed;
	bool merge;		/* a piece that continues the last one extends it */
	struct piece inline_v[4];
};

static void plan_init(struct plan *p)
{
	p->n = 0;
	p->cap = sizeof(p->inline_v) / sizeof(p->inline_v[0]);
	p->v = p->inline_v;
	p->fixed = p->merge = false;
}

static void plan_init_fixed(struct plan *p, struct piece *v, size_t cap, bool merge)
{
	p->n = 0;
	p->cap = cap;
	p->v = v;
	p->fixed = true;
	p->merge = merge;
}

static void plan_free(struct plan *p)
{
	if (p->v != p->inline_v && !p->fixed)
		lg_munmap(p->v, p->cap * sizeof(*p->v));
}

static int plan_add(struct plan *p, const struct lg_rec *rec)
{
	if (p->merge && p->n && p->v[p->n - 1].rec.end == rec->start) {
		p->v[p->n - 1].rec.end = rec->end;
		return 0;
	}
	if (p->n == p->cap && p->fixed)
		return -ENOSPC;
	if (p->n == p->cap) {
		size_t page = lg_page_size();
		size_t bytes = (2 * p->cap * sizeof(*p->v) + page - 1) & ~(page - 1);
		long v = lg_mmap_anon(bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE);

		if (v < 0 && v > -4096)
			return (int)v;
		memcpy((void *)v, p->v, p->n * sizeof(*p->v));
		plan_free(p);
		p->v = (struct piece *)v;
		p->cap = bytes / sizeof(*p->v);
	}
	p->v[p->n++].rec = *rec;
	return 0;
}

/*
 * Forget the records in [start, end): trimmed at the ends, deleted inside.
 * Needs at most one reserved node (a record reaching past both ends). A
 * record cut here gets an end that was not one of its VMA: strict, so a
 * PROT_NONE VMA reaching past it later makes it stale.
 */
static LG_HOT void carve(uintptr_t start, uintptr_t end)
{
	struct lg_rec *r;

	while ((r = lg_rec_first_above(start)) && r->start < end) {
		if (r->start < start && r->end > end) {
			struct lg_rec hi = *r;

			hi.off += end - r->start;
			hi.start = end;
			hi.edge_lo = false;
			r->end = start;
			r->edge_hi = false;
			lg_rec_insert(&hi);
			return;
		}
		if (r->start < start) {
			r->end = start;
			r->edge_hi = false;
		} else if (r->end > end) {
			r->off += end - r->start;
			r->edge_lo = false;
			lg_rec_set_start(r, end);
			return;
		} else {
			bool last = r->end == end;

			lg_rec_delete(r);
			if (last)
				return;	/* nothing else can start below end */
		}
	}
}

/*
 * A new record is never joined with the records beside it: a neighbour
 * may be stale (its memory unmapped without us, its addresses handed to
 * someone else), and a joined record is judged whole, so the stale part
 * would make the new guard's record stale too, and lose it (stress-threads
 * found this). Adjacent records of one object are read as one run where
 * it matters (lo_holds(), hi_run_end()), so nothing needs them joined.
 */

/* initial-exec: one load on the fallback's hot path, no __tls_get_addr() call */
__thread const struct lg_vma *lg_fresh_vma __attribute__((tls_model("initial-exec")));

/*
 * The VMA covering at: 0, -ENOMEM if at is in a hole, or another -errno;
 * [at, end) is what the caller will act on (vma_copy.c checks that much).
 * In a mapping a wrapper has just made (lg_fresh_vma), the mapping as
 * made: its ends are where the library's mapping ends, which is what a
 * record's edges say, whatever the kernel merged it with.
 */
static LG_HOT int vma_covering(uintptr_t at, uintptr_t end, struct lg_vma *v)
{
	const struct lg_vma *fresh = lg_fresh_vma;
	int ret;

	if (fresh && at >= fresh->start && at < fresh->end) {
		*v = *fresh;
		return 0;
	}
	if (lg_vma_weak()) {
		ret = lg_vma_copy_at(at, end, v);
		if (ret != -ENOSPC)
			return ret;
	}
	ret = lg_vma_at(at, v);	/* no copy: the maps file read to at, this once */

	if (ret < 0)
		return ret;
	return ret == 0 || v->start > at ? -ENOMEM : 0;
}

/*
 * Did the piece [start, end) in v, taken from a copy read before this
 * call (vma_copy.c), end its VMA at beyond (end, or start - 1 page)? Where
 * the copy says it went on and the page beyond agrees (mapped, and
 * readable as v is), no: a strict end, which weak_vma() looks past. Else
 * yes. The copy can be out of date about where a mapping of the same
 * protection ends; then a guard is forgotten where the memory beyond it
 * becomes inaccessible, never kept where it is the caller's. (Read, not
 * written: faulting a page of the caller's in for reading maps the zero
 * page, where a write would allocate one.)
 */
static bool copied_edge(const struct lg_vma *v, uintptr_t beyond)
{
	int readable;

	if (beyond < v->start || beyond >= v->end)
		return true;
	readable = lg_page_readable(beyond);	/* a hole: -ENOMEM */
	return readable < 0 || readable != !!(v->prot & PROT_READ);
}

/* A record of [start, end) in v as it is now, protection prot. */
static LG_HOT struct lg_rec rec_of(const struct lg_vma *v, uintptr_t start, uintptr_t end, int prot)
{
	/*
	 * Memory that was PROT_NONE already is the caller's: its VMA may
	 * reach past the piece on either side.
	 */
	bool none = prot == PROT_NONE;
	bool copied = v->copied;

	return (struct lg_rec){
		.start = start,
		.end = end,
		.prot = prot,
		.shared = v->shared,
		.edge_lo = none || (copied ? copied_edge(v, start - lg_page_size()) : start == v->start),
		.edge_hi = none || (copied ? copied_edge(v, end) : end == v->end),
		.inode = v->inode,
		.off = v->inode ? v->pgoff + (start - v->start) : 0,
		.dev_major = v->dev_major,
		.dev_minor = v->dev_minor,
	};
}

/*
 * Discard private data, as native installation does. The kernel refuses
 * on VM_PFNMAP (native refuses every VM_SPECIAL mapping: so do we),
 * mlocked and, unaligned, hugetlb memory: those two keep their data,
 * because the kernel will not drop it. Which it is costs nothing for
 * anonymous memory (its name, lg_vma_kind_at()); smaps is read only for
 * a refused file mapping.
 */
static __attribute__((noinline)) int discard_each(const struct piece *todo, size_t n)
{
	int ret;

	for (size_t i = 0; i < n; i++) {
		const struct lg_rec *r = &todo[i].rec;
		struct lg_vma v;
		int kind;

		if (lg_madvise((void *)r->start, r->end - r->start, MADV_DONTNEED) != -EINVAL)
			continue;
		ret = vma_covering(r->start, r->end, &v);
		kind = ret ? ret : lg_vma_kind_at(r->start, &v);
		if (kind < 0)
			return kind;
		if (kind & LG_VM_SPECIAL)
			return -EINVAL;
	}
	return 0;
}

static LG_HOT int discard(const struct piece *todo, size_t n, uintptr_t start, uintptr_t end)
{
	int ret = lg_madvise((void *)start, end - start, MADV_DONTNEED);

	/* A seccomp filter refused madvise(): the guard keeps the data (libguard(7)). */
	if (lg_refused(ret))
		return 0;
	return ret != -EINVAL ? ret : discard_each(todo, n);
}

/*
 * The plan of an install: every VMA of [start, end) (a hole: -ENOMEM),
 * the records there that are stale into *stale, the pieces to protect
 * (or, PROT_NONE already, only to record) into *todo. Parts under a
 * record that still holds keep it: their first, original protection.
 */
static int plan_install(uintptr_t start, uintptr_t end, struct plan *todo, struct plan *stale,
			size_t *splits)
{
	uintptr_t at = start;

	while (at < end) {
		struct lg_vma v;
		uintptr_t stop;
		int ret = vma_covering(at, end, &v);

		if (ret)
			return ret;
		stop = min_u(v.end, end);
		while (at < stop) {
			struct lg_rec *r = lg_rec_first_above(at);
			uintptr_t to = r && r->start < stop ? max_u(r->start, at) : stop;
			struct lg_rec piece;
			bool holds;

			if (to > at) {
				piece = rec_of(&v, at, to, v.prot);
				ret = plan_add(todo, &piece);
				at = to;
				if (ret)
					return ret;
				continue;
			}
			/* at is inside r */
			to = min_u(r->end, stop);
			if (lg_vma_weak()) {
				struct lg_vma w;

				ret = weak_vma(r, at, to, &w);
				if (ret < 0)
					return ret;
				if (ret == 0 || w.start > at)
					return -ENOMEM;	/* unmapped since the check above */
				to = min_u(w.end, to);
				holds = same_vma(r, &w);
			} else {
				holds = same_vma(r, &v);
			}
			if (!holds) {
				piece = (struct lg_rec){ .start = at, .end = to };
				ret = plan_add(stale, &piece);
				if (ret)
					return ret;
				/* the stale part is guarded anew */
				piece = rec_of(&v, at, to, v.prot);
				ret = plan_add(todo, &piece);
				if (ret)
					return ret;
				*splits += 1;
			}
			at = to;
		}
	}
	return 0;
}

static __attribute__((noinline)) int install_planned(uintptr_t start, uintptr_t end)
{
	struct plan todo, stale;
	size_t done = 0, splits = 1;
	int ret;

	plan_init(&todo);
	plan_init(&stale);
	lg_lock();
	if (lg_vma_weak())
		lg_vma_copy_call();	/* the lock was let go since install_simple() */
	ret = plan_install(start, end, &todo, &stale, &splits);
	if (!ret)
		ret = lg_rec_reserve(todo.n + splits);
	if (!ret)
		ret = discard(todo.v, todo.n, start, end);
	/*
	 * mprotect() of one piece changes one VMA, or none: on failure the
	 * pieces done are undone, which restores the layout from before the
	 * call, never taking more VMAs than it had.
	 */
	for (; !ret && done < todo.n; done++) {
		const struct lg_rec *r = &todo.v[done].rec;

		if (r->prot != PROT_NONE)
			ret = lg_mprotect((void *)r->start, r->end - r->start, PROT_NONE);
	}
	if (ret) {
		while (done--) {
			const struct lg_rec *r = &todo.v[done].rec;

			lg_mprotect((void *)r->start, r->end - r->start, r->prot);
		}
	} else {
		for (size_t i = 0; i < stale.n; i++)
			carve(stale.v[i].rec.start, stale.v[i].rec.end);
		for (size_t i = 0; i < todo.n; i++)
			lg_rec_insert(&todo.v[i].rec);
	}
	lg_unlock();
	plan_free(&todo);
	plan_free(&stale);
	return ret;
}

/*
 * The recorded parts of [start, end) that still hold, with their recorded
 * protection, into *keep; the stale ones into *stale. With check_holes,
 * -ENOMEM for a hole anywhere in the range (msync() where there are no
 * records, one PROCMAP_QUERY per VMA where there are). One PROCMAP_QUERY
 * answers for every record in its VMA, and the records are walked in
 * address order from one lookup: O(log n + k) in the records. A fixed
 * plan that fills up ends the walk early: *done is where it stopped (end
 * when it did not).
 */
static int plan_recorded(uintptr_t start, uintptr_t end, bool check_holes, struct plan *keep,
			 struct plan *stale, uintptr_t *done)
{
	struct lg_rec *r = lg_rec_first_above(start);
	uintptr_t at = start;
	int ret = 0;

	while (!ret && at < end) {
		struct vma_check c = { 0 };
		struct lg_rec piece;
		struct lg_vma v;
		uintptr_t to, stop;

		if (!r || r->start >= end) {
			if (check_holes)
				ret = lg_range_mapped((void *)at, end - at);
			break;
		}
		if (r->start > at) {
			if (check_holes)
				ret = lg_range_mapped((void *)at, r->start - at);
			at = r->start;
			continue;
		}
		ret = rec_vma_at(r, at, end, &v);
		if (ret < 0)
			break;
		if (ret == 0 || v.start > at) {
			/* unmapped: the record is stale */
			to = ret == 0 ? r->end : min_u(v.start, r->end);
			to = min_u(to, end);
			piece = (struct lg_rec){ .start = at, .end = to };
			ret = check_holes ? -ENOMEM : plan_add(stale, &piece);
			if (ret == -ENOSPC)
				break;
			at = to;
			if (at == r->end)
				r = lg_rec_next(r);
			continue;
		}
		/* the VMA answers for every record meeting it; no hole inside it */
		c.v = &v;
		stop = min_u(v.end, end);
		ret = 0;
		while (!ret && r && r->start < stop) {
			to = min_u(r->end, stop);
			piece = *r;
			piece.start = max_u(at, r->start);
			piece.end = to;
			ret = plan_add(vma_holds(&c, r) ? keep : stale, &piece);
			if (ret == -ENOSPC)
				at = piece.start;
			if (ret)
				break;
			if (to < r->end)
				break;	/* r goes on past this VMA */
			r = lg_rec_next(r);
		}
		if (!ret)
			at = stop;
	}
	*done = ret == -ENOSPC ? at : end;
	return ret == -ENOSPC ? 0 : ret;
}

/*
 * Restore what install recorded in [start, end), where it still holds; a
 * hole in the range: -ENOMEM, nothing done. The stale parts are forgotten.
 */
static __attribute__((noinline)) int remove_planned(uintptr_t start, uintptr_t end)
{
	struct plan keep, stale;
	size_t done = 0;
	uintptr_t done_to;
	int ret;

	plan_init(&keep);
	plan_init(&stale);
	lg_lock();
	ret = plan_recorded(start, end, true, &keep, &stale, &done_to);
	if (!ret)
		ret = lg_rec_reserve(1);
	/* As in lg_fallback_install(): the failed piece is undone too. */
	for (; !ret && done < keep.n; done++) {
		const struct lg_rec *r = &keep.v[done].rec;

		if (r->prot != PROT_NONE)
			ret = lg_mprotect((void *)r->start, r->end - r->start, r->prot);
	}
	if (ret) {
		while (done--) {
			const struct lg_rec *r = &keep.v[done].rec;

			lg_mprotect((void *)r->start, r->end - r->start, PROT_NONE);
		}
	} else {
		carve(start, end);
	}
	lg_unlock();
	plan_free(&keep);
	plan_free(&stale);
	return ret;
}

/*
 * The common calls, in fewer steps: an install in one VMA with no record
 * there yet, a removal inside one record and one VMA. Each does what the
 * planned path does with the one piece its plan would hold, so the two
 * agree; anything else is NOT_SIMPLE, found before any change, and the
 * planned path starts over (with one PROCMAP_QUERY more if this one made
 * it). Why: the plans' arrays, loops and copies are instructions and
 * pages touched after the system calls (bench/README, the fallback rows).
 */
#define NOT_SIMPLE 1

static LG_HOT int install_simple(uintptr_t start, uintptr_t end)
{
	struct lg_rec *r = lg_rec_first_above(start);
	struct piece p;
	struct lg_vma v;
	int ret;

	if (r && r->start < end)
		return NOT_SIMPLE;
	ret = vma_covering(start, end, &v);
	if (ret)
		return ret;
	if (v.end < end)
		return NOT_SIMPLE;
	p.rec = rec_of(&v, start, end, v.prot);
	/* the piece and a split, as install_planned() reserves */
	ret = lg_rec_reserve(2);
	if (!ret)
		ret = discard(&p, 1, start, end);
	if (!ret && p.rec.prot != PROT_NONE) {
		ret = lg_mprotect((void *)start, end - start, PROT_NONE);
		if (ret)
			lg_mprotect((void *)start, end - start, p.rec.prot);
	}
	if (!ret)
		lg_rec_insert(&p.rec);
	return ret;
}

static LG_HOT int remove_simple(uintptr_t start, uintptr_t end)
{
	struct lg_rec *r = lg_rec_first_above(start);
	struct lg_vma v;
	bool holds;
	int prot, ret;

	if (!r || r->start > start || r->end < end)
		return NOT_SIMPLE;
	ret = rec_vma_at(r, start, end, &v);
	if (ret < 0)
		return ret;
	if (ret == 0 || v.start > start)
		return -ENOMEM;	/* a hole: nothing done */
	if (v.end < end)
		return NOT_SIMPLE;
	holds = same_vma(r, &v);
	prot = r->prot;
	ret = lg_rec_reserve(1);
	if (!ret && holds && prot != PROT_NONE) {
		ret = lg_mprotect((void *)start, end - start, prot);
		if (ret)
			lg_mprotect((void *)start, end - start, PROT_NONE);
	}
	if (!ret)
		carve(start, end);
	return ret;
}

LG_HOT int lg_fallback_install(uintptr_t start, uintptr_t end)
{
	int ret;

	lg_lock();
	if (lg_vma_weak())
		lg_vma_copy_call();
	ret = install_simple(start, end);
	lg_unlock();
	return ret == NOT_SIMPLE ? install_planned(start, end) : ret;
}

LG_HOT int lg_fallback_remove(uintptr_t start, uintptr_t end)
{
	int ret;

	lg_lock();
	ret = remove_simple(start, end);
	lg_unlock();
	return ret == NOT_SIMPLE ? remove_planned(start, end) : ret;
}

/*
 * Unmapping and forgetting are one step as other threads see them: once
 * the kernel has freed the range it may hand the addresses to another
 * thread, whose records there (made under the lock) a forget after an
 * unlocked munmap() would delete. With a record in the range both happen
 * under the lock; with none, no record can appear in it before the
 * munmap() (only its owner, who is freeing it, could install there), so
 * the munmap() runs unlocked and others' calls do not wait for it.
 */
int lg_fallback_unmap(uintptr_t start, uintptr_t end)
{
	struct lg_rec *r;
	int ret;

	if (lg_fallback_any()) {
		lg_lock();
		r = lg_rec_first_above(start);
		if (r && r->start < end) {
			ret = lg_munmap((void *)start, end - start);
			/* no node for a split: the record stays, and is stale (same_vma()) */
			if (!ret && !lg_rec_reserve(1))
				carve(start, end);
			lg_unlock();
			return ret;
		}
		lg_unlock();
	}
	return lg_munmap((void *)start, end - start);
}

/*
 * The library has just mapped [start, end): no guard of its own can be
 * there, and a record there is of memory the program unmapped without
 * us, whose addresses the kernel gave out again. Forgotten before the
 * wrapper guards the new mapping: kept, it could be taken for the new
 * guard (a PROT_NONE reservation looks like an old anonymous guard) and
 * its protection and ends restored for it (stress-threads --stale found
 * a guard_map_file() guard lost so). No node for it: the record stays
 * stale, as before.
 */
void lg_fallback_fresh(uintptr_t start, uintptr_t end)
{
	struct lg_rec *r;

	if (!lg_fallback_any())
		return;
	lg_lock();
	r = lg_rec_first_above(start);
	if (r && r->start < end && !lg_rec_reserve(1))
		carve(start, end);
	lg_unlock();
}

/*
 * In steps of a plan on the stack: no memory to map and give back (whose
 * TLB shootdown cost more than the walk), and vec written without the lock.
 */
int lg_fallback_query(uintptr_t start, uintptr_t end, unsigned char *vec)
{
	struct piece keep_v[64], stale_v[16];
	size_t page = lg_page_size();
	uintptr_t at = start;
	int ret = 0;

	while (!ret && at < end) {
		struct plan keep, stale;
		uintptr_t from = at;

		plan_init_fixed(&keep, keep_v, sizeof(keep_v) / sizeof(keep_v[0]), true);
		plan_init_fixed(&stale, stale_v, sizeof(stale_v) / sizeof(stale_v[0]), false);
		lg_lock();
		ret = plan_recorded(from, end, false, &keep, &stale, &at);
		/* Stale records are forgotten here too, where a node is to be had. */
		for (size_t i = 0; !ret && i < stale.n && !lg_rec_reserve(1); i++)
			carve(stale.v[i].rec.start, stale.v[i].rec.end);
		lg_unlock();
		for (size_t i = 0; !ret && i < keep.n; i++)
			for (uintptr_t p = keep.v[i].rec.start; p < keep.v[i].rec.end; p += page)
				vec[(p - start) / page] |= GUARD_QUERY_FALLBACK;
	}
	return ret;
}
