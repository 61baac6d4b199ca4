// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pool: one reservation of slots, each slot's usable pages followed by
 * a guard page (and the pool starting with one), every page a guard until
 * a slot is handed out. A freed slot is guarded again at once and queued:
 * the queue is the quarantine, oldest first; a slot is reused only when
 * more than `quarantine` wait, or when no slot was ever used is left.
 * Slot metadata (size, state, the allocating and freeing thread and
 * stack) lives in a mapping of its own, so that an overflow can't reach it.
 *
 * One mutex covers the choice of a slot and the queue; the system calls
 * that open and close a slot run outside it, the slot marked busy. The
 * mutex is held across fork() (pthread_atfork, registered at load).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gm.h"


struct gm_pool gm_pool;
static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;

void gm_pool_lock(void)
{
	pthread_mutex_lock(&pool_mutex);
}

void gm_pool_unlock(void)
{
	pthread_mutex_unlock(&pool_mutex);
}

void gm_pool_child(void)
{
	pthread_mutex_init(&pool_mutex, NULL);
}

#define STAT_ADD(field, n) __atomic_fetch_add(&gm_pool.st.field, (n), __ATOMIC_RELAXED)

bool gm_pool_init(void)
{
	struct gm_pool *p = &gm_pool;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len, mlen;
	void *base, *meta;

	p->page = page;
	p->slot_len = gm_opt.slot_pages * page;
	p->stride = p->slot_len + page;
	p->nslots = gm_opt.slots;
	if (__builtin_mul_overflow(p->nslots, p->stride, &len) || __builtin_add_overflow(len, page, &len))
		return false;
	mlen = p->nslots * (sizeof(struct gm_slot) + sizeof(uint32_t));
	meta = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		    -1, 0);
	if (meta == MAP_FAILED)
		return false;
	base = gm_guards_reserve(len);
	if (!base) {
		munmap(meta, mlen);
		return false;
	}
	p->meta = meta;
	p->ring = (uint32_t *)(p->meta + p->nslots);
	p->cap = gm_guards_cap();
	if (p->cap > p->nslots)
		p->cap = p->nslots;
	p->st.method = gm_method;
	p->st.page_size = (unsigned int)page;
	p->st.slots = p->nslots;
	p->st.slot_pages = gm_opt.slot_pages;
	p->st.cap = p->cap;
	/* Published last: gm_in_pool() is true only for a pool that is ready. */
	p->end = (uintptr_t)base + len;
	__atomic_store_n(&p->base, (uintptr_t)base, __ATOMIC_RELEASE);
	return true;
}

uintptr_t gm_slot_start(size_t i)
{
	return gm_pool.base + gm_pool.page + i * gm_pool.stride;
}

size_t gm_slot_of(uintptr_t a)
{
	uintptr_t rel;

	if (a < gm_pool.base + gm_pool.page || a >= gm_pool.end)
		return SIZE_MAX;
	rel = a - gm_pool.base - gm_pool.page;
	if (rel % gm_pool.stride >= gm_pool.slot_len)
		return SIZE_MAX;
	return rel / gm_pool.stride;
}

/*
 * With the mutex: guard the next GM_CHUNK slots and their guard pages
 * before the first of them is handed out. Guard markers cost page
 * tables (a page of them per 512 pages guarded): a pool guarded whole
 * at once would cost them for every slot, used or not, and the time to
 * write them at startup.
 */
#define GM_CHUNK 1024
static bool extend(void)
{
	struct gm_pool *p = &gm_pool;
	size_t n = p->nslots - p->guarded_to < GM_CHUNK ? p->nslots - p->guarded_to : GM_CHUNK;

	if (gm_guards_extend((void *)gm_slot_start(p->guarded_to), n * p->stride))
		return false;
	p->guarded_to += n;
	return true;
}

/*
 * With the mutex: k slots to open, marked busy, or SIZE_MAX. One slot
 * comes from the quarantine queue when it holds more than `quarantine`,
 * or when no slot never used is left; a run of k > 1 (an allocation
 * larger than a slot: its slots and the guards between them opened
 * together) only from slots never used.
 */
static size_t take_slots(size_t k)
{
	struct gm_pool *p = &gm_pool;
	size_t i;

	if (p->st.live >= p->cap)
		return SIZE_MAX;
	if (k == 1 && p->ring_count &&
	    (p->ring_count > gm_opt.quarantine || p->bump == p->nslots)) {
		i = p->ring[p->ring_head];
		p->ring_head = (p->ring_head + 1) % p->nslots;
		p->ring_count--;
	} else if (p->nslots - p->bump >= k) {
		while (p->guarded_to < p->bump + k)
			if (!extend())
				return SIZE_MAX;
		i = p->bump;
		p->bump += k;
		p->st.slots_used = p->bump;
	} else {
		return SIZE_MAX;
	}
	for (size_t j = i; j < i + k; j++) {
		p->meta[j].state = GM_BUSY;
		p->meta[j].head = (uint32_t)i;
	}
	p->meta[i].run = (uint32_t)k;
	p->st.live++;
	p->st.quarantined = p->ring_count;
	return i;
}

/* With the mutex: the k slots from i back in the queue, one by one. */
static void queue_slots(size_t i, size_t k)
{
	struct gm_pool *p = &gm_pool;

	for (size_t j = i; j < i + k; j++) {
		p->ring[(p->ring_head + p->ring_count) % p->nslots] = (uint32_t)j;
		p->ring_count++;
		__atomic_store_n(&p->meta[j].state, GM_FREED, __ATOMIC_RELEASE);
	}
	p->st.quarantined = p->ring_count;
	p->st.live--;
}

size_t gm_slot_head(size_t x)
{
	const struct gm_slot *m = gm_pool.meta;
	size_t h = m[x].head;

	if (h < x && h + m[h].run > x && m[h].state == m[x].state)
		return h;
	return x;
}

/* The usable bytes of a run of k slots: the guards between them are opened too. */
static size_t run_len(size_t k)
{
	return k * gm_pool.stride - gm_pool.page;
}

/*
 * Where in a slot [start, end) an object of size bytes aligned to align
 * goes, by the placement asked; 0 if it does not fit.
 */
static uintptr_t place(uintptr_t start, uintptr_t end, size_t size, size_t align)
{
	enum gm_place how = gm_opt.place;
	uintptr_t ptr;

	if (how == GM_RANDOM)
		how = gm_random() & 1 ? GM_RIGHT : GM_LEFT;
	if (how == GM_LEFT) {
		ptr = (start + align - 1) & ~(uintptr_t)(align - 1);
		return ptr + size <= end ? ptr : 0;
	}
	ptr = (end - size) & ~(uintptr_t)(align - 1);
	return ptr >= start ? ptr : 0;
}

/*
 * A guarded allocation, or NULL: then the caller serves it unguarded
 * (counted). align is a power of two; 0 means malloc()'s own.
 */
void *gm_pool_alloc(size_t size, size_t align)
{
	struct gm_pool *p = &gm_pool;
	size_t want = size ? size : 1, i, k;
	uintptr_t start, ptr;
	struct gm_slot *s;
	int saved = errno;

	/*
	 * exact: the largest alignment that still ends the object on the
	 * guard, the lowest set bit of its size (capped at malloc's). It
	 * suits every object or array the size holds exactly: a T[n] has
	 * size n * sizeof(T), a multiple of T's alignment.
	 */
	if (!align)
		align = gm_opt.place == GM_EXACT ? (want & -want) < GM_ALIGN ? want & -want : GM_ALIGN
						 : GM_ALIGN;
	else if (align < GM_ALIGN && gm_opt.place != GM_EXACT)
		align = GM_ALIGN;
	/*
	 * Slots enough for the object: one, or a run. Slots start on a page,
	 * so any alignment up to a page fits wherever the object does.
	 */
	if (!p->base || align > p->page || want > run_len(GM_MAX_RUN) ||
	    (k = (want + p->page + p->stride - 1) / p->stride) > p->nslots) {
		STAT_ADD(unguarded_large, 1);
		return NULL;
	}
	gm_busy++;
	gm_pool_lock();
	i = take_slots(k);
	if (i == SIZE_MAX)
		p->st.unguarded_cap++;
	gm_pool_unlock();
	if (i == SIZE_MAX)
		goto out;
	start = gm_slot_start(i);
	ptr = place(start, start + run_len(k), want, align);
	if (!ptr || gm_guards_open((void *)start, run_len(k))) {
		/* ENOMEM from mprotect: a VMA limit lower than we were told */
		errno = saved;	/* the caller's allocation is still to succeed */
		gm_pool_lock();
		queue_slots(i, k);
		p->st.unguarded_cap++;
		gm_pool_unlock();
		i = SIZE_MAX;
		goto out;
	}
	s = &p->meta[i];
	s->ptr = ptr;
	s->size = size;
	s->reuse++;
	gm_trace_capture(&s->alloc, 1);
	s->free.depth = 0;
	s->free.tid = 0;
	STAT_ADD(guarded, 1);
	for (size_t j = i + k; j-- > i;)	/* the first slot last: it holds the record */
		__atomic_store_n(&p->meta[j].state, GM_LIVE, __ATOMIC_RELEASE);
out:
	gm_busy--;
	return i == SIZE_MAX ? NULL : (void *)ptr;
}

/* A pool pointer given to free() or realloc(): a live slot's, or a report. */
static size_t check(const void *ptr, const char *what, bool take)
{
	uintptr_t a = (uintptr_t)ptr;
	size_t i, rel;
	uint32_t st;

	/* The slot at or before a: a run's object may start in any of its slots, or guards. */
	if (a < gm_pool.base + gm_pool.page)
		gm_report_bad_free(GM_INVALID_FREE, a, SIZE_MAX, what);
	rel = a - gm_pool.base - gm_pool.page;
	i = rel / gm_pool.stride;
	gm_pool_lock();
	i = gm_slot_head(i);
	st = gm_pool.meta[i].state;
	if (st == GM_LIVE && gm_pool.meta[i].ptr == a) {
		if (take)
			for (size_t j = i; j < i + gm_pool.meta[i].run; j++)
				gm_pool.meta[j].state = GM_BUSY;
		gm_pool_unlock();
		return i;
	}
	gm_pool_unlock();
	if ((st == GM_FREED || st == GM_BUSY) && gm_pool.meta[i].ptr == a)
		gm_report_bad_free(!strcmp(what, "free") ? GM_DOUBLE_FREE : GM_UAF, a, i, what);
	gm_report_bad_free(GM_INVALID_FREE, a, i, what);
}

void gm_pool_free(void *ptr, const char *what)
{
	size_t i, k;

	gm_busy++;
	i = check(ptr, what, true);
	k = gm_pool.meta[i].run;
	gm_trace_capture(&gm_pool.meta[i].free, 1);
	if (gm_guards_close((void *)gm_slot_start(i), run_len(k))) {
		/*
		 * Not guarded (maybe in part): open it whole and zero it, as
		 * calloc() wants a slot; if even that fails, never reuse it.
		 * (A run's slots are reused one by one: with a guard
		 * between them again, or never.)
		 */
		if (k > 1 || gm_guards_open((void *)gm_slot_start(i), run_len(k))) {
			gm_pool_lock();
			gm_pool.st.live--;
			for (size_t j = i; j < i + k; j++)
				__atomic_store_n(&gm_pool.meta[j].state, GM_FREED, __ATOMIC_RELEASE);
			gm_pool_unlock();
			gm_busy--;
			return;
		}
		memset((void *)gm_slot_start(i), 0, gm_pool.slot_len);
	}
	gm_pool_lock();
	queue_slots(i, k);
	gm_pool_unlock();
	gm_busy--;
}

size_t gm_pool_size(const void *ptr, const char *what)
{
	size_t i;

	if (GM_UNLIKELY(gm_busy)) {	/* a signal handler inside the pool: no lock, no report */
		i = ((uintptr_t)ptr - gm_pool.base - gm_pool.page) / gm_pool.stride;
		return i < gm_pool.nslots ? gm_pool.meta[gm_slot_head(i)].size : 0;
	}
	return gm_pool.meta[check(ptr, what, false)].size;
}

GM_EXPORT int guard_malloc_stats(struct guard_malloc_stats *stats, size_t size)
{
	if (!stats || size < sizeof(struct guard_malloc_stats))
		return -EINVAL;
	gm_init();
	gm_pool_lock();
	*stats = gm_pool.st;
	gm_pool_unlock();
	stats->guarded = __atomic_load_n(&gm_pool.st.guarded, __ATOMIC_RELAXED);
	return 0;
}
