/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libguard-malloc.so: the guarded heap's numbers, for programs that link
 * it or find the call with dlsym(). libguard-malloc(7) is the reference.
 */
#ifndef GUARD_MALLOC_H
#define GUARD_MALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct guard_malloc_stats {
	unsigned int method;		/* GUARD_METHOD_NATIVE or _FALLBACK (guard.h); 0: no pool */
	unsigned int page_size;		/* a slot's usable pages are this size */
	size_t slots;			/* slots in the pool */
	size_t slot_pages;		/* usable pages per slot */
	size_t cap;			/* most live guarded allocations at once (fallback: from vm.max_map_count) */
	size_t slots_used;		/* distinct slots used so far */
	size_t guarded;			/* guarded allocations made */
	size_t live;			/* guarded allocations not yet freed */
	size_t quarantined;		/* freed slots guarded now, waiting for reuse */
	size_t unguarded_cap;		/* sampled, but served unguarded: the pool was full or at its cap */
	size_t unguarded_large;		/* sampled, but larger than 512 slots or aligned beyond a page */
	size_t reports;			/* reports printed (a report ends the process) */
};

/*
 * Fill *stats (size: sizeof(*stats), for growth). 0, or -EINVAL for a
 * NULL stats or a size smaller than the first version of the structure.
 */
int guard_malloc_stats(struct guard_malloc_stats *stats, size_t size);

#ifdef __cplusplus
}
#endif

#endif
