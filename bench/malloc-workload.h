/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The page bench-malloc shares with its child, bench-malloc-workload: the
 * child writes as it goes, the parent reads it after the child is gone
 * (dead of its allocator or not). -1: not measured.
 */
#ifndef LIBGUARD_BENCH_MALLOC_WORKLOAD_H
#define LIBGUARD_BENCH_MALLOC_WORKLOAD_H

#include <stdbool.h>

struct bench_malloc_shm {
	long reached;		/* allocations (fill), pairs, or mallocs (quarantine) done */
	long done;		/* 1: the child reached its end */
	long ns_alloc;		/* fill: the mallocs; pairs: the pairs; quarantine: all of it */
	long ns_free;		/* fill: the frees */
	long vmas_before, rss_before_kb, pte_before_kb;
	long vmas, rss_kb, pte_kb;	/* at the end of the allocations (fill), or of the run */
	long vmas_after, rss_after_kb, pte_after_kb;	/* fill: after freeing everything */
	long rss_pool_kb;	/* quarantine: Rss of the mappings the objects were in */
	long vmas_pool;		/* quarantine: those mappings */
	/* libguard-malloc's guard_malloc_stats(), when it is loaded */
	long method, guarded, slots_used, quarantined, unguarded;
};

#endif
