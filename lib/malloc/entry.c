// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The malloc family. Each entry point asks the sampler; a sample goes to
 * the pool, everything else (and a sample the pool cannot take) to the
 * allocator that comes next in the search order, found with
 * dlsym(RTLD_NEXT): glibc's, or jemalloc or mimalloc preloaded after us.
 *
 * Bootstrap: the first allocation of a process runs gm_init(), which
 * calls dlsym(), which may itself call malloc() or calloc(): those are
 * served from a small static arena (never freed, recognised by address),
 * as is anything asked while the next allocator is not known yet.
 *
 * Bad input gives the answer of the allocator underneath: an allocation
 * the pool would not serve (an invalid alignment, an overflowing pvalloc)
 * is passed on unchanged. Only calloc() and reallocarray() check their
 * product here, as they must before the sampler sees a size.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "gm.h"

struct gm_next gm_next;

static int init_state;		/* 0 not yet, 1 running, 2 done */
static GM_TLS int in_init;	/* this thread runs gm_init() */

/* The bootstrap arena: 16-byte header holding the size, 16-byte aligned. */
static char arena[1 << 18] __attribute__((aligned(4096)));
static size_t arena_used;

static bool in_arena(const void *p)
{
	return (uintptr_t)p - (uintptr_t)arena < sizeof(arena);
}

static void *arena_alloc(size_t size, size_t align)
{
	size_t at, old, next;

	if (align < 16)
		align = 16;
	if (size > sizeof(arena) || align > 4096)
		goto nomem;
	old = __atomic_load_n(&arena_used, __ATOMIC_RELAXED);
	do {
		at = (old + 16 + align - 1) & ~(align - 1);	/* room for the header */
		next = at + ((size + 15) & ~(size_t)15);
		if (next > sizeof(arena))
			goto nomem;
	} while (!__atomic_compare_exchange_n(&arena_used, &old, next, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	*(size_t *)(arena + at - 16) = size;
	return arena + at;	/* zero: the arena is .bss and never reused */
nomem:
	errno = ENOMEM;
	return NULL;
}

static size_t arena_size(const void *p)
{
	return *(const size_t *)((const char *)p - 16);
}

#define NEXT(name, field)                                                     \
	do {                                                                  \
		void *f_ = dlsym(RTLD_NEXT, name);                            \
		__builtin_memcpy(&gm_next.field, &f_, sizeof(f_));            \
	} while (0)

/*
 * Every function must be the next malloc's own: jemalloc has no pvalloc(),
 * and glibc's, found instead, would hand jemalloc's free() a pointer of
 * glibc's heap. A function the next allocator lacks is made here from
 * its memalign() or posix_memalign().
 */
static void same_object(void)
{
	void **fns[] = { (void **)&gm_next.calloc, (void **)&gm_next.realloc,
			 (void **)&gm_next.memalign, (void **)&gm_next.posix_memalign,
			 (void **)&gm_next.aligned_alloc, (void **)&gm_next.valloc,
			 (void **)&gm_next.pvalloc, (void **)&gm_next.usable };
	Dl_info m, f;

	if (!gm_next.malloc || !dladdr(*(void **)&gm_next.malloc, &m))
		return;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (*fns[i] && (!dladdr(*fns[i], &f) || f.dli_fbase != m.dli_fbase))
			*fns[i] = NULL;
}

/* memalign() of the next allocator, or made from its posix_memalign(). */
static void *next_memalign(size_t align, size_t size)
{
	void *p;
	int err;

	if (gm_next.memalign)
		return gm_next.memalign(align, size);
	if (!gm_next.posix_memalign) {
		errno = ENOMEM;
		return NULL;
	}
	if (align < sizeof(void *))
		align = sizeof(void *);
	if (align & (align - 1)) {	/* glibc rounds a bad alignment up */
		if (align > SIZE_MAX / 2) {
			errno = EINVAL;
			return NULL;
		}
		align = (size_t)1 << (64 - __builtin_clzl(align));
	}
	err = gm_next.posix_memalign(&p, align, size);
	if (err) {
		errno = err;
		return NULL;
	}
	return p;
}

static void fork_prepare(void)
{
	gm_pool_lock();
}

static void fork_parent(void)
{
	gm_pool_unlock();
}

static void fork_child(void)
{
	gm_pool_child();
}

/* An address-space limit (ulimit -v) below the pool: say so once, and run unguarded. */
static void pool_failed(void)
{
	gm_write(STDERR_FILENO, "libguard-malloc: no room for a pool of ");
	gm_write_num(STDERR_FILENO, gm_opt.slots, 10);
	gm_write(STDERR_FILENO, " slots (an address-space limit? try slots=N, fewer): "
				"no allocation is guarded\n");
	gm_flush();
}

void gm_init(void)
{
	int expect = 0, saved;

	if (GM_LIKELY(__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == 2) || in_init)
		return;
	if (!__atomic_compare_exchange_n(&init_state, &expect, 1, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
			sched_yield();
		return;
	}
	saved = errno;
	in_init = 1;
	gm_busy++;
	gm_options_load();
	NEXT("malloc", malloc);
	NEXT("free", free);
	NEXT("calloc", calloc);
	NEXT("realloc", realloc);
	NEXT("memalign", memalign);
	NEXT("posix_memalign", posix_memalign);
	NEXT("aligned_alloc", aligned_alloc);
	NEXT("valloc", valloc);
	NEXT("pvalloc", pvalloc);
	NEXT("malloc_usable_size", usable);
	same_object();
	gm_trace_init();
	if (gm_opt.sample || gm_opt.all) {
		if (gm_pool_init())
			gm_report_install();
		else
			pool_failed();
	}
	gm_busy--;
	in_init = 0;
	__atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
	errno = saved;
}

/* Registered here, not at the first malloc: pthread_atfork() may allocate. */
__attribute__((constructor)) static void gm_load(void)
{
	gm_init();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

__attribute__((destructor)) static void gm_unload(void)
{
	if (gm_opt.summary)
		gm_stats_summary(STDERR_FILENO);
}

/* A sampled allocation, or NULL to serve it unguarded. */
static inline void *sampled(size_t size, size_t align)
{
	if (GM_UNLIKELY(gm_sample()))
		return gm_pool_alloc(size, align);
	return NULL;
}

GM_EXPORT void *malloc(size_t size)
{
	void *p;

	gm_init();
	p = sampled(size, 0);
	if (p)
		return p;
	if (GM_UNLIKELY(!gm_next.malloc))
		return arena_alloc(size, 0);
	return gm_next.malloc(size);
}

GM_EXPORT void free(void *p)
{
	if (!p)
		return;
	if (gm_in_pool(p)) {
		if (GM_UNLIKELY(gm_busy))
			return;	/* a signal handler inside the pool: kept, not freed (see the page) */
		gm_pool_free(p, "free");
		__asm__ volatile("" ::: "memory");	/* no tail call: free() is #0 of the free stack */
		return;
	}
	if (in_arena(p))
		return;
	if (GM_UNLIKELY(!gm_next.free))
		gm_init();
	if (gm_next.free)
		gm_next.free(p);
}

GM_EXPORT void *calloc(size_t n, size_t size)
{
	size_t total;
	void *p;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	gm_init();
	p = sampled(total, 0);	/* a slot is zero: fresh after guard removal or MADV_DONTNEED */
	if (p)
		return p;
	if (GM_UNLIKELY(!gm_next.malloc))
		return arena_alloc(total, 0);
	if (GM_UNLIKELY(!gm_next.calloc)) {
		p = gm_next.malloc(total);
		return p ? memset(p, 0, total) : p;
	}
	return gm_next.calloc(n, size);
}

/* Bytes to copy out of p, which is not the pool's. */
static size_t heap_size(void *p)
{
	if (in_arena(p))
		return arena_size(p);
	return gm_next.usable ? gm_next.usable(p) : 0;
}

GM_EXPORT void *realloc(void *p, size_t size)
{
	size_t old;
	void *q;

	gm_init();
	if (!p)
		return malloc(size);
	if (gm_in_pool(p) || in_arena(p)) {
		if (GM_UNLIKELY(gm_busy && gm_in_pool(p))) {	/* see free() */
			errno = ENOMEM;
			return NULL;
		}
		old = gm_in_pool(p) ? gm_pool_size(p, "realloc") : arena_size(p);
		if (!size) {	/* glibc: realloc(p, 0) frees p and returns NULL */
			free(p);
			return NULL;
		}
		q = malloc(size);
		if (!q)
			return NULL;	/* p stays as it was */
		memcpy(q, p, old < size ? old : size);
		free(p);
		return q;
	}
	/* From the heap into the pool, when sampled and the heap says how much to copy. */
	if (gm_next.usable && size && (q = sampled(size, 0))) {
		old = heap_size(p);
		memcpy(q, p, old < size ? old : size);
		gm_next.free(p);
		return q;
	}
	return gm_next.realloc(p, size);
}

GM_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

static bool pow2(size_t a)
{
	return a && !(a & (a - 1));
}

/*
 * memalign() and aligned_alloc(): the pool where sampled, the bootstrap
 * arena before dlsym() has answered, else the next allocator's
 * aligned_alloc() (if asked and it has one) or its memalign().
 */
static void *aligned(size_t align, size_t size, bool c11)
{
	void *p;

	gm_init();
	if (pow2(align) && (p = sampled(size, align)))
		return p;
	if (GM_UNLIKELY(!gm_next.malloc))
		return pow2(align) ? arena_alloc(size, align) : NULL;
	if (c11 && gm_next.aligned_alloc)
		return gm_next.aligned_alloc(align, size);
	return next_memalign(align, size);
}

GM_EXPORT void *memalign(size_t align, size_t size)
{
	return aligned(align, size, false);
}

GM_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	gm_init();
	if (pow2(align) && !(align % sizeof(void *)) && (p = sampled(size, align))) {
		*out = p;
		return 0;
	}
	if (GM_UNLIKELY(!gm_next.malloc || !gm_next.posix_memalign)) {
		if (gm_next.malloc && pow2(align) && !(align % sizeof(void *)))
			return (*out = next_memalign(align, size)) ? 0 : ENOMEM;
		if (!pow2(align) || align % sizeof(void *))
			return EINVAL;
		p = arena_alloc(size, align);
		if (!p)
			return ENOMEM;
		*out = p;
		return 0;
	}
	return gm_next.posix_memalign(out, align, size);
}

GM_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	return aligned(align, size, true);
}

GM_EXPORT void *valloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	gm_init();
	p = sampled(size, page);
	if (p)
		return p;
	if (GM_UNLIKELY(!gm_next.malloc))
		return arena_alloc(size, page);
	if (!gm_next.valloc)
		return next_memalign(page, size);
	return gm_next.valloc(size);
}

GM_EXPORT void *pvalloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), rounded;
	void *p;

	gm_init();
	if (!__builtin_add_overflow(size, page - 1, &rounded) &&
	    (p = sampled((rounded & ~(page - 1)) ? rounded & ~(page - 1) : page, page)))
		return p;
	if (gm_next.pvalloc)
		return gm_next.pvalloc(size);
	if (__builtin_add_overflow(size, page - 1, &rounded)) {	/* glibc's answer */
		errno = ENOMEM;
		return NULL;
	}
	rounded &= ~(page - 1);
	return next_memalign(page, rounded ? rounded : page);
}

GM_EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (gm_in_pool(p))
		return gm_pool_size(p, "malloc_usable_size");
	if (in_arena(p))
		return arena_size(p);
	gm_init();
	return gm_next.usable ? gm_next.usable(p) : 0;
}
