// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * jemalloc extent hooks with a guard page either side of every mapping.
 *
 * A mapping is [guard][extent][guard]: the hook returns the extent, so the
 * guards are never memory jemalloc hands out, and since two mappings are
 * never adjacent (a guard is between them), jemalloc's splits and merges
 * stay inside one mapping and can be allowed as they are. The guards
 * leave with the mapping: a whole extent as allocated is unmapped with
 * both; a piece of one is refused (jemalloc then purges and retains it).
 *
 * Nothing here calls malloc: the hooks run inside jemalloc, and a malloc
 * from them may need the very arena being grown. The table of mappings
 * lives in mmap()ed memory. libguard's fallback does call malloc (for its
 * records, under its lock), so an extent asked for from inside
 * guard_install() gets no guards: guarding it would wait for that lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <guard.h>

#include "hooks.h"

/* Open addressing on the extent's start; end 0 marks an empty slot. */
struct slot {
	uintptr_t start, end;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *table;
static size_t cap, used, tombs;
static __thread int in_guard __attribute__((tls_model("initial-exec")));
static atomic_ulong n_reentrant, n_guarded, n_native, n_fallback, n_failed, n_unmapped, n_refused;
static const uintptr_t TOMB = 1;

/*
 * fork(): jemalloc's own handlers hold its arena locks across fork, but a
 * thread may be in take() or add() without one. The lock is not taken in
 * a prepare handler (a thread holding an arena lock may be waiting for
 * it, and jemalloc's handler, which runs after ours, would wait for that
 * thread); the child, alone, gets it back unlocked.
 */
static void child_unlock(void)
{
	pthread_mutex_init(&lock, NULL);
}

__attribute__((constructor)) static void hooks_init(void)
{
	pthread_atfork(NULL, NULL, child_unlock);
}

static size_t page(void)
{
	static size_t pg;

	if (!pg)
		pg = (size_t)sysconf(_SC_PAGESIZE);
	return pg;
}

static size_t hash(uintptr_t a)
{
	return (size_t)((a >> 12) * 0x9e3779b97f4a7c15ull);
}

static struct slot *find(uintptr_t start)
{
	if (!cap)
		return NULL;
	for (size_t i = hash(start) & (cap - 1);; i = (i + 1) & (cap - 1)) {
		if (table[i].end == 0)
			return NULL;
		if (table[i].start == start && table[i].end != TOMB)
			return &table[i];
	}
}

static void put(struct slot *t, size_t n, uintptr_t start, uintptr_t end)
{
	size_t i = hash(start) & (n - 1);

	while (t[i].end != 0 && t[i].end != TOMB)
		i = (i + 1) & (n - 1);
	t[i].start = start;
	t[i].end = end;
}

/* Called with lock held; 0 or -ENOMEM. */
static int add(uintptr_t start, uintptr_t end)
{
	if ((used + tombs + 1) * 4 > cap * 3) {
		size_t n = cap ? cap * 2 : 1024;
		struct slot *t;

		if (used * 2 < cap)
			n = cap; /* mostly tombstones: rebuild at the same size */
		t = mmap(NULL, n * sizeof(*t), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (t == MAP_FAILED)
			return -ENOMEM;
		for (size_t i = 0; i < cap; i++)
			if (table[i].end != 0 && table[i].end != TOMB)
				put(t, n, table[i].start, table[i].end);
		if (table)
			munmap(table, cap * sizeof(*table));
		table = t;
		cap = n;
		tombs = 0;
	}
	put(table, cap, start, end);
	used++;
	return 0;
}

/* Is [addr, addr + size) one of ours, whole? Then forget it (remove=1). */
static int take(const void *addr, size_t size, int remove)
{
	struct slot *s;
	int hit = 0;

	pthread_mutex_lock(&lock);
	s = find((uintptr_t)addr);
	if (s && s->end == (uintptr_t)addr + size) {
		hit = 1;
		if (remove) {
			s->end = TOMB;
			used--;
			tombs++;
		}
	}
	pthread_mutex_unlock(&lock);
	return hit;
}

int jg_is_mapping(const void *addr, size_t size)
{
	return take(addr, size, 0);
}

static void *jg_alloc(extent_hooks_t *h, void *new_addr, size_t size, size_t alignment,
		      bool *zero, bool *commit, unsigned arena_ind)
{
	size_t pg = page(), total;
	uintptr_t base, start;
	unsigned int m1, m2;
	bool ok;
	char *p;

	(void)h;
	(void)arena_ind;
	/* Growing in place would need the address our guard sits at. */
	if (new_addr || !size || size % pg)
		return NULL;
	if (alignment < pg)
		alignment = pg;
	total = size + alignment - pg + 2 * pg;
	if (in_guard) {
		/* For libguard itself (see the top): plain memory, kept forever. */
		if (alignment > pg)
			return NULL;
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		atomic_fetch_add(&n_reentrant, 1);
		*zero = true;
		*commit = true;
		return p;
	}
	p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	base = (uintptr_t)p;
	start = (base + pg + alignment - 1) & ~(uintptr_t)(alignment - 1);
	if (start - pg > base)
		munmap(p, start - pg - base);
	if (base + total > start + size + pg)
		munmap((void *)(start + size + pg), base + total - (start + size + pg));
	/* Just mapped: no guard there yet, so no look before installing. */
	in_guard = 1;
	ok = !guard_install2((void *)(start - pg), pg, GUARD_FRESH, &m1) &&
	     !guard_install2((void *)(start + size), pg, GUARD_FRESH, &m2);
	in_guard = 0;
	if (!ok)
		goto fail;
	pthread_mutex_lock(&lock);
	if (add(start, start + size)) {
		pthread_mutex_unlock(&lock);
		goto fail;
	}
	pthread_mutex_unlock(&lock);
	atomic_fetch_add(&n_guarded, 1);
	atomic_fetch_add(m1 == GUARD_METHOD_NATIVE ? &n_native : &n_fallback, 1);
	*zero = true;
	*commit = true;
	return (void *)start;
fail:
	/* The unmap takes any guard placed, by either method, with it. */
	munmap((void *)(start - pg), size + 2 * pg);
	atomic_fetch_add(&n_failed, 1);
	return NULL;
}

static bool jg_dalloc(extent_hooks_t *h, void *addr, size_t size, bool committed,
		      unsigned arena_ind)
{
	(void)h;
	(void)committed;
	(void)arena_ind;
	if (!take(addr, size, 1)) {
		/* A piece, or an extent from before the hooks: jemalloc keeps it. */
		atomic_fetch_add(&n_refused, 1);
		return true;
	}
	munmap((char *)addr - page(), size + 2 * page());
	atomic_fetch_add(&n_unmapped, 1);
	return false;
}

static void jg_destroy(extent_hooks_t *h, void *addr, size_t size, bool committed,
		       unsigned arena_ind)
{
	(void)h;
	(void)committed;
	(void)arena_ind;
	if (take(addr, size, 1)) {
		munmap((char *)addr - page(), size + 2 * page());
		atomic_fetch_add(&n_unmapped, 1);
	} else {
		/* A piece: its neighbours' guards stay (two pages at most). */
		munmap(addr, size);
	}
}

/* Always committed: decommit is refused, so jemalloc purges instead. */
static bool jg_commit(extent_hooks_t *h, void *addr, size_t size, size_t offset, size_t length,
		      unsigned arena_ind)
{
	(void)h, (void)addr, (void)size, (void)offset, (void)length, (void)arena_ind;
	return false;
}

static bool jg_decommit(extent_hooks_t *h, void *addr, size_t size, size_t offset,
			size_t length, unsigned arena_ind)
{
	(void)h, (void)addr, (void)size, (void)offset, (void)length, (void)arena_ind;
	return true;
}

/* Purges touch the extent only; the guards are outside it. */
static bool jg_purge_lazy(extent_hooks_t *h, void *addr, size_t size, size_t offset,
			  size_t length, unsigned arena_ind)
{
	(void)h, (void)size, (void)arena_ind;
	return madvise((char *)addr + offset, length, MADV_FREE) != 0;
}

static bool jg_purge_forced(extent_hooks_t *h, void *addr, size_t size, size_t offset,
			    size_t length, unsigned arena_ind)
{
	(void)h, (void)size, (void)arena_ind;
	return madvise((char *)addr + offset, length, MADV_DONTNEED) != 0;
}

/* Splits and merges stay inside one mapping (see the top): allowed. */
static bool jg_split(extent_hooks_t *h, void *addr, size_t size, size_t size_a, size_t size_b,
		     bool committed, unsigned arena_ind)
{
	(void)h, (void)addr, (void)size, (void)size_a, (void)size_b, (void)committed;
	(void)arena_ind;
	return false;
}

static bool jg_merge(extent_hooks_t *h, void *addr_a, size_t size_a, void *addr_b,
		     size_t size_b, bool committed, unsigned arena_ind)
{
	(void)h, (void)size_b, (void)committed, (void)arena_ind;
	/* Adjacent, so one mapping: a guard would be between two mappings. */
	return (char *)addr_a + size_a != (char *)addr_b;
}

extent_hooks_t jg_hooks = {
	.alloc = jg_alloc,
	.dalloc = jg_dalloc,
	.destroy = jg_destroy,
	.commit = jg_commit,
	.decommit = jg_decommit,
	.purge_lazy = jg_purge_lazy,
	.purge_forced = jg_purge_forced,
	.split = jg_split,
	.merge = jg_merge,
};

void jg_stats(struct jg_stats *s)
{
	s->guarded = atomic_load(&n_guarded);
	s->native = atomic_load(&n_native);
	s->fallback = atomic_load(&n_fallback);
	s->failed = atomic_load(&n_failed);
	s->unmapped = atomic_load(&n_unmapped);
	s->refused = atomic_load(&n_refused);
	s->reentrant = atomic_load(&n_reentrant);
	s->live = s->guarded - s->unmapped;
}

int jg_count_vmas(void)
{
	char buf[4096];
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), count = 0;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			count += buf[i] == '\n';
	close(fd);
	return n < 0 ? -1 : count;
}

void jg_for_each(void (*fn)(void *extent, size_t size, void *arg), void *arg)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < cap; i++)
		if (table[i].end != 0 && table[i].end != TOMB)
			fn((void *)table[i].start, table[i].end - table[i].start, arg);
	pthread_mutex_unlock(&lock);
}

int jg_hook_all(int (*mallctl)(const char *, void *, size_t *, void *, size_t),
		unsigned *narenas)
{
	unsigned n;
	size_t len = sizeof(n);
	int hooked = 0, r;
	char name[64];

	r = mallctl("arenas.narenas", &n, &len, NULL, 0);
	if (r)
		return -r;
	if (narenas)
		*narenas = n;
	for (unsigned i = 0; i < n; i++) {
		extent_hooks_t *hooks = &jg_hooks;

		snprintf(name, sizeof(name), "arena.%u.extent_hooks", i);
		r = mallctl(name, NULL, NULL, &hooks, sizeof(hooks));
		if (r)
			return hooked ? hooked : -r;
		hooked++;
	}
	return hooked;
}
