/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Extent hooks that guard every mapping jemalloc asks for (hooks.c). */
#ifndef LIBGUARD_JEMALLOC_HOOKS_H
#define LIBGUARD_JEMALLOC_HOOKS_H

#include <jemalloc/jemalloc.h>

struct jg_stats {
	unsigned long guarded;	/* mappings made with both guards */
	unsigned long native, fallback; /* by the method of their first guard */
	unsigned long live;	/* guarded and not yet unmapped */
	unsigned long failed;	/* allocations refused: a guard could not be placed */
	unsigned long unmapped;	/* unmapped whole, guards included */
	unsigned long refused;	/* deallocations of a piece, left to jemalloc */
	unsigned long reentrant; /* unguarded: asked for by libguard's fallback */
};

extern extent_hooks_t jg_hooks;
void jg_stats(struct jg_stats *s);
/* Is [addr, addr + size) a whole mapping of ours, as allocated? */
int jg_is_mapping(const void *addr, size_t size);
/*
 * Put jg_hooks on every automatic arena through mallctl (creating those
 * not yet in use). Returns how many were hooked, or a negative errno when
 * jemalloc lacks the interface; *narenas (if not NULL) gets the total.
 */
int jg_hook_all(int (*mallctl)(const char *, void *, size_t *, void *, size_t),
		unsigned *narenas);
/* Call fn for every live mapping's extent (under the table's lock: fn
 * must not allocate or call the hooks). */
void jg_for_each(void (*fn)(void *extent, size_t size, void *arg), void *arg);
/* The process's VMAs, from /proc/self/maps, without malloc; -1 on error. */
int jg_count_vmas(void);

#endif
