// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What guard_map_file() and guard_stack() mapped, so that guard_unmap()
 * and guard_stack_free() can undo it whole from the address and length
 * the caller knows, under the library's mutex (lock.c).
 *
 * A hash table keyed by the user address, open addressing with linear
 * probing: O(1) expected for add, take and lookup whatever order the
 * caller frees in (the linear array it replaces cost 10-15x more per free
 * oldest-first than newest-first at 200k stacks). A hash table rather than
 * a balanced tree like records.c's: the only question ever asked is "the
 * entry for exactly this address", never an ordered one, and one flat
 * array needs one allocation per resize instead of one per entry (no node
 * reserve to keep an insert from failing half-way). Removal shifts later
 * entries of the probe run back (no tombstones), so the table holds only
 * live entries; it halves when at most 1/8 full and drops to its 16 slots
 * (640 bytes) when empty. Those are kept: a program that makes and frees
 * one stack at a time would otherwise allocate and free a table each time
 * (and under ASan, whose quarantine keeps freed memory, every fork() after
 * that copies more: test_lock went from 9 s to 66 s). Tables are mapped,
 * not malloc()'d: they are resized with the lock held, and an allocator
 * whose hooks call libguard must not be entered then (records.c).
 *
 * fork(): the mutex is held across it (lock.c), so a child sees the table
 * as it was between two calls, never half-rehashed.
 *
 * An entry is acted on only while the kernel still shows the mapping it
 * names (still_ours()): no hole in its extent, the usable part backed by
 * the same object (anonymous or the same file at the same offset, shared
 * or private as made), and every guard page still a guard. A caller who
 * unmapped or moved the memory without us, and whose address went to
 * another mapping, gets -EINVAL and the newcomer is left alone; the entry
 * is forgotten. Undetectable, as for the fallback's records: a new
 * mapping of the same backing in place of the usable part only, the
 * guards left standing (or, where the kernel reports no native guards, in
 * place of the whole); and the caller's own race of an munmap() in
 * another thread against the free.
 */
#include "internal.h"

#include <sys/mman.h>

#define MIN_CAP 16	/* a power of two, as every capacity */

/* A slot is empty when user == 0: no mapping the library makes starts at 0. */
static struct lg_reg *slots;
static size_t nslots, nused;
static struct lg_reg first_tab[MIN_CAP];	/* the smallest table: no mapping of ours */

/* Fibonacci hashing: the top bits of the product depend on every bit of
 * the address, so page-aligned addresses spread as well as any. */
static size_t home(uintptr_t user, size_t cap)
{
	return (size_t)(((uint64_t)user * 0x9e3779b97f4a7c15ull) >> (64 - __builtin_ctzll(cap)));
}

/* The slot holding user, or the empty slot where it would go. */
static size_t find(const struct lg_reg *tab, size_t cap, uintptr_t user)
{
	size_t i = home(user, cap);

	while (tab[i].user && tab[i].user != user)
		i = (i + 1) & (cap - 1);
	return i;
}

/* Move every entry into a table of cap slots: 0, or -errno (unchanged). */
static int resize(size_t cap)
{
	long p = cap == MIN_CAP ? (long)first_tab
				: lg_mmap_anon(cap * sizeof(*slots), PROT_READ | PROT_WRITE, MAP_PRIVATE);
	struct lg_reg *tab = (struct lg_reg *)p;

	if (p < 0 && p > -4096)
		return (int)p;
	if (tab == first_tab)
		for (size_t i = 0; i < MIN_CAP; i++)
			first_tab[i].user = 0;
	for (size_t i = 0; i < nslots; i++)
		if (slots[i].user)
			tab[find(tab, cap, slots[i].user)] = slots[i];
	if (slots && slots != first_tab)
		lg_munmap(slots, nslots * sizeof(*slots));
	slots = tab;
	nslots = cap;
	return 0;
}

int lg_reg_add(const struct lg_reg *r)
{
	int ret = 0;

	lg_lock();
	/* at most 3/4 full, so probe runs stay short and one slot stays empty */
	if (4 * (nused + 1) > 3 * nslots)
		ret = resize(nslots ? 2 * nslots : MIN_CAP);
	if (!ret) {
		size_t i = find(slots, nslots, r->user);

		/*
		 * An entry already there names a mapping the caller unmapped
		 * without us (munmap()): the kernel just gave its address to
		 * this one. Its entry is stale; replace it.
		 */
		if (!slots[i].user)
			nused++;
		slots[i] = *r;
	}
	lg_unlock();
	return ret;
}

/* Empty slot i, moving back the entries after it that probed past it. */
static void remove_at(size_t i)
{
	size_t mask = nslots - 1, j = i;

	for (;;) {
		j = (j + 1) & mask;
		if (!slots[j].user)
			break;
		/* slots[j] may move to i if its home is not in (i, j], cyclically */
		if (((j - home(slots[j].user, nslots)) & mask) >= ((j - i) & mask)) {
			slots[i] = slots[j];
			i = j;
		}
	}
	slots[i].user = 0;
	nused--;
}

/* The slot of the entry for exactly [user, user_end), or nslots if none; with lg_lock() held. */
static size_t slot_of(uintptr_t user, uintptr_t user_end, enum lg_reg_kind kind)
{
	size_t i;

	if (!nslots || !user)
		return nslots;
	i = find(slots, nslots, user);
	return slots[i].user && slots[i].kind == kind && slots[i].user_end == user_end ? i
										     : nslots;
}

/* A copy of the entry for exactly [user, user_end): 0, or -EINVAL if none. */
static int lookup(uintptr_t user, uintptr_t user_end, enum lg_reg_kind kind, struct lg_reg *out)
{
	int ret = -EINVAL;
	size_t i;

	lg_lock();
	i = slot_of(user, user_end, kind);
	if (i < nslots) {
		*out = slots[i];
		ret = 0;
	}
	lg_unlock();
	return ret;
}

/* Remove the entry for exactly [user, user_end); with out, copy it first. */
static int take(uintptr_t user, uintptr_t user_end, enum lg_reg_kind kind, struct lg_reg *out)
{
	size_t i;
	bool found;

	lg_lock();
	i = slot_of(user, user_end, kind);
	found = i < nslots;
	if (found) {
		if (out)
			*out = slots[i];
		remove_at(i);
		/* memory follows use: a failed shrink keeps the larger table */
		if (nslots > MIN_CAP && 8 * nused <= nslots)
			resize(nused ? nslots / 2 : MIN_CAP);
	}
	lg_unlock();
	return found ? 0 : -EINVAL;	/* after a shrink, i says nothing */
}

/* Does v hold the object r's usable part was mapped from (protection aside)? */
static bool same_backing(const struct lg_reg *r, const struct lg_vma *v)
{
	return v->shared == r->shared && v->inode == r->inode && v->dev_major == r->dev_major &&
	       v->dev_minor == r->dev_minor &&
	       (!r->inode || v->pgoff - v->start == r->off - r->user);
}

/* Fill in what the kernel shows of r's usable part now: 0 or -errno. */
static int identify(struct lg_reg *r)
{
	struct lg_vma v;
	int ret;

	lg_lock();
	/* no backing to check without PROCMAP_QUERY (lg_vma_weak()): nothing to learn */
	if (lg_vma_weak()) {
		lg_unlock();
		return 0;
	}
	ret = lg_vma_at(r->user, &v);
	lg_unlock();
	if (ret < 0)
		return ret;
	if (ret == 0 || v.start > r->user)
		return -EFAULT;	/* unmapped at once by another thread */
	r->shared = v.shared;
	r->inode = v.inode;
	r->off = v.inode ? v.pgoff + (r->user - v.start) : 0;
	r->dev_major = v.dev_major;
	r->dev_minor = v.dev_minor;
	return 0;
}

/* Is r still the mapping the library made? 1, 0, or -errno (see the top). */
static int still_ours(const struct lg_reg *r)
{
	uintptr_t at = r->start;
	int ret = 1;

	lg_lock();
	/*
	 * Without PROCMAP_QUERY (lg_vma_weak()): mapped throughout, whatever
	 * is mapped there (libguard(7)); the guards are checked below.
	 */
	if (lg_vma_weak()) {
		ret = lg_range_mapped((void *)r->start, r->end - r->start);
		ret = ret == -ENOMEM ? 0 : ret ? ret : 1;
		at = r->end;
	}
	while (ret == 1 && at < r->end) {
		struct lg_vma v;

		ret = lg_vma_at(at, &v);
		if (ret == 0 || (ret > 0 && v.start > at))
			ret = 0;	/* a hole */
		else if (ret > 0 && v.start < r->user_end && v.end > r->user && !same_backing(r, &v))
			ret = 0;
		else if (ret > 0)
			at = v.end;
	}
	lg_unlock();
	/* the guards: the kernel's word for native ones, the records' for the rest */
	if (ret == 1 && r->start < r->user)
		ret = lg_all_guarded(r->start, r->user);
	if (ret == 1 && r->user_end < r->end)
		ret = lg_all_guarded(r->user_end, r->end);
	/* native guards this kernel can't report: the backing has to do */
	return ret == -EOPNOTSUPP ? 1 : ret;
}

int lg_reg_release(uintptr_t user, uintptr_t user_end, enum lg_reg_kind kind)
{
	struct lg_reg r;
	int ret = lookup(user, user_end, kind, &r);

	if (ret)
		return ret;	/* none such */
	ret = still_ours(&r);
	if (ret < 0)
		return ret;	/* could not look: the entry stays, nothing unmapped */
	/* forgotten either way; already gone: another thread freed it meanwhile */
	if (take(user, user_end, kind, NULL) || !ret)
		return -EINVAL;
	lg_reg_unmap(&r);
	return 0;
}

int lg_reg_take(uintptr_t user, uintptr_t user_end, enum lg_reg_kind kind, struct lg_reg *out)
{
	return take(user, user_end, kind, out);
}

void lg_reg_unmap(const struct lg_reg *r)
{
	lg_fallback_unmap(r->start, r->end);
}

/* The end of every mapping call: register what ret says worked, or undo it all. */
int lg_reg_finish(struct lg_reg *r, bool private_anon, int ret)
{
	if (!ret && !private_anon)
		ret = identify(r);
	if (!ret)
		ret = lg_reg_add(r);
	if (ret)
		lg_reg_unmap(r);
	return ret;
}

size_t lg_reg_capacity(void)
{
	size_t n;

	lg_lock();
	n = nslots;
	lg_unlock();
	return n;
}
