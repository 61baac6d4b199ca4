/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What memcheck is told, where the build found <valgrind/memcheck.h>
 * (meson defines LG_HAVE_VALGRIND): the client requests are a few no-op
 * instructions outside valgrind, so there is no run-time dependency.
 *
 * - Output the kernel writes through pointers valgrind does not know
 *   about (PAGEMAP_SCAN's vector, PROCMAP_QUERY's name buffer) is marked
 *   defined: memcheck would call it uninitialised.
 * - A guard is marked NOACCESS when installed, so that a touch is an
 *   "Invalid read/write" at its address, and DEFINED when removed: the
 *   kernel gives back zeroes (private anonymous memory) or the file's
 *   and shmem's contents, all of it initialised.
 */
#ifndef LIBGUARD_VALGRIND_H
#define LIBGUARD_VALGRIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if LG_HAVE_VALGRIND
#include <valgrind/memcheck.h>

static inline bool lg_vg_running(void)
{
	return RUNNING_ON_VALGRIND != 0;
}
static inline void lg_vg_defined(const void *p, size_t len)
{
	VALGRIND_MAKE_MEM_DEFINED(p, len);
}
static inline void lg_vg_guarded(uintptr_t start, uintptr_t end)
{
	VALGRIND_MAKE_MEM_NOACCESS(start, end - start);
}
#else
static inline bool lg_vg_running(void)
{
	return false;
}
static inline void lg_vg_defined(const void *p, size_t len)
{
	(void)p;
	(void)len;
}
static inline void lg_vg_guarded(uintptr_t start, uintptr_t end)
{
	(void)start;
	(void)end;
}
#endif

static inline void lg_vg_unguarded(uintptr_t start, uintptr_t end)
{
	lg_vg_defined((const void *)start, end - start);
}

#endif
