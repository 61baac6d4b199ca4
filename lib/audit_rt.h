/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * audit_rt.c: what libguard-audit.so has instead of libc (it needs none,
 * see there). Besides these, it implements the lg_hs_* interface of the
 * hole core, lg_vma_open()/lg_vma_find() and lg_page_size().
 */
#ifndef LIBGUARD_AUDIT_RT_H
#define LIBGUARD_AUDIT_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the process was started with, from its auxiliary vector. */
struct lg_rt_start {
	bool secure;		/* AT_SECURE */
	const void *phdr;	/* AT_PHDR, AT_PHNUM: the program's headers */
	size_t phnum;
};
/* Read it (once; later calls give the same): 0, or -errno (then don't run). */
int lg_rt_start(struct lg_rt_start *out);
/* LIBGUARD_AUDIT_VERBOSE set, not "0" (reads /proc: only on the way to a hole). */
bool lg_rt_verbose(void);
/* Copy up to len bytes at src: what could be read (0 if nothing), or -errno; never faults. */
long lg_rt_peek(void *dst, uintptr_t src, size_t len);
/* printf() to stderr for %s and %d only, in one write() unless longer than 1 KiB. */
void lg_rt_say(const char *fmt, ...);
/* strerror() for positive err. */
const char *lg_rt_strerror(int err);

#endif
