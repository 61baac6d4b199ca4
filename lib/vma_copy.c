// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Kernels without PROCMAP_QUERY (before 6.11): the fallback's installs
 * learn the VMA of the memory they protect from a copy of
 * /proc/self/maps, read again only where the kernel shows it wrong. The
 * file can only be read from its start, at a cost of O(VMAs), and every
 * fallback guard is a VMA or two: read at every call, it made the
 * fallback quadratic in the number of guards (issue 37).
 *
 * The copy shows memory as the program set it: where a record lies in a
 * PROT_NONE VMA, the protection the record restores, not the guard's, so
 * the library's own installs and removals never make it wrong. The
 * program's changes can: before an entry is used, the pages it will be
 * used for (those no record holds) are asked, in O(1) system calls per
 * range: mapped and writable where it says so (MADV_POPULATE_WRITE
 * over them all, each page written to by nobody and then discarded by
 * the install anyway), not writable and readable or not, a page at a
 * time, where it says not. So the protection recorded is the one the
 * kernel holds, read, write, or none, whatever the program did. What no
 * probe shows: PROT_EXEC, and which object is mapped (libguard(7) says
 * so). That is why an entry for a shared mapping is taken only from a
 * copy read during the same call (one read for a whole
 * guard_install_batch()): populating shared memory would write to a
 * file, or allocate in a memfd, which the install does not discard.
 * All under lg_lock().
 */
#include "internal.h"

#include <stdatomic.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/*
 * Sorted and disjoint, and static: a mapping for it would take a VMA,
 * which shows in the process's maps beside its own memory and can be
 * the one vm.max_map_count lets an install have. Pieces of one mapping
 * split only by guards are one entry (push()), so the guards cost no
 * entries; a process with more than COPY_VMAS mappings of its own gets no
 * copy, and each install there reads the file as far as its address.
 * 2048 entries: 96 KiB of zeroes, untouched where the copy is not used.
 */
#define COPY_VMAS 2048
static struct {
	struct lg_vma v[COPY_VMAS];
	size_t n;
	bool valid;
	unsigned long read_in;	/* the call it was read in */
} copy;

/* The call being served (a batch: one for all its ranges), and the next number. */
static unsigned long this_call;
static atomic_ulong calls = 1;
__thread unsigned long lg_copy_batch __attribute__((tls_model("initial-exec")));

unsigned long lg_vma_copy_batch_id(void)
{
	return atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
}

void lg_vma_copy_call(void)
{
	this_call = lg_copy_batch ? lg_copy_batch : lg_vma_copy_batch_id();
}

/* Does b continue a, as one mapping of the program's would? */
static bool continues(const struct lg_vma *a, const struct lg_vma *b)
{
	return a->end == b->start && a->prot == b->prot && a->shared == b->shared &&
	       a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor &&
	       (!a->inode || a->pgoff + (a->end - a->start) == b->pgoff);
}

static int push(const struct lg_vma *vma)
{
	if (copy.n && continues(&copy.v[copy.n - 1], vma)) {
		copy.v[copy.n - 1].end = vma->end;
		return 0;
	}
	if (copy.n == COPY_VMAS)
		return -ENOSPC;
	copy.v[copy.n++] = *vma;
	return 0;
}

/* [start, end) of l, protection prot. */
static int push_part(const struct lg_vma *l, uintptr_t start, uintptr_t end, int prot)
{
	struct lg_vma part = *l;

	part.start = start;
	part.end = end;
	part.prot = prot;
	if (part.inode)
		part.pgoff += start - l->start;
	return push(&part);
}

/* One line of the file, the records in it subtracted where it is PROT_NONE. */
static int push_line(const struct lg_vma *l)
{
	const struct lg_rec *r;
	uintptr_t at = l->start;
	int ret = 0;

	if (l->prot != PROT_NONE)
		return push(l);	/* a record here is stale: the line is the truth */
	for (r = lg_rec_first_above(at); !ret && r && r->start < l->end; r = lg_rec_next(r)) {
		uintptr_t from = r->start > at ? r->start : at;
		uintptr_t to = r->end < l->end ? r->end : l->end;

		if (from > at)
			ret = push_part(l, at, from, PROT_NONE);
		if (!ret)
			ret = push_part(l, from, to, r->prot);
		at = to;
	}
	if (!ret && at < l->end)
		ret = push_part(l, at, l->end, PROT_NONE);
	return ret;
}

static int reread(void)
{
	LG_KEEP_ERRNO;
	struct lg_lines f;
	char *line;
	int ret = lg_lines_open(&f, "/proc/self/maps");

	copy.n = 0;
	copy.valid = false;
	while (!ret && (ret = lg_lines_next(&f, &line)) > 0) {
		struct lg_maps_line l;
		struct lg_vma v;

		ret = lg_maps_parse(line, &l);
		if (!ret) {
			lg_maps_line_vma(&l, &v);
			ret = push_line(&v);
		}
	}
	lg_lines_close(&f);
	copy.valid = ret == 0;
	copy.read_in = this_call;
	return ret;
}

/* The entry covering at, or NULL. */
static const struct lg_vma *find(uintptr_t at)
{
	size_t lo = 0, hi = copy.n;

	while (lo < hi) {	/* the first entry ending above at */
		size_t mid = lo + (hi - lo) / 2;

		if (copy.v[mid].end > at)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < copy.n && copy.v[lo].start <= at ? &copy.v[lo] : NULL;
}

/* Are the pages of [a, b) (no record there) mapped, with v's read and write permissions? */
static bool pages_agree(const struct lg_vma *v, uintptr_t a, uintptr_t b)
{
	size_t page = lg_page_size();

	/* each fails on a hole (ENOMEM): the mapping is checked with them */
	if (v->prot & PROT_WRITE)
		return lg_madvise((void *)a, b - a, MADV_POPULATE_WRITE) == 0;
	for (uintptr_t p = a; p < b; p += page)
		if (!lg_madvise((void *)p, page, MADV_POPULATE_WRITE) ||
		    lg_page_readable(p) != !!(v->prot & PROT_READ))
			return false;
	return true;
}

/* Does v hold for [from, to) where no record is? */
static bool agrees(const struct lg_vma *v, uintptr_t from, uintptr_t to)
{
	const struct lg_rec *r = lg_rec_first_above(from);
	uintptr_t at = from;

	if (v->shared)
		return copy.read_in == this_call;
	while (at < to) {
		uintptr_t gap = r && r->start < to ? (r->start > at ? r->start : at) : to;

		if (gap > at && !pages_agree(v, at, gap))
			return false;
		if (gap >= to)
			break;
		at = r->end;
		r = lg_rec_next(r);
	}
	return true;
}

int lg_vma_copy_at(uintptr_t at, uintptr_t end, struct lg_vma *vma)
{
	for (;;) {
		bool fresh = !copy.valid;
		const struct lg_vma *v;

		if (fresh && reread())
			return -ENOSPC;	/* no copy to be had: the caller looks the VMA up */
		v = find(at);
		/* read during this call: the kernel's word, whatever the pages say meanwhile */
		if (fresh || (v && agrees(v, at, v->end < end ? v->end : end))) {
			if (!v)
				return -ENOMEM;
			*vma = *v;
			/* read in this call: as exact as a lookup (its ends included) */
			vma->copied = copy.read_in != this_call;
			return 0;
		}
		copy.valid = false;
	}
}
