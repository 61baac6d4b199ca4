/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the running kernel does with guard regions, found by trying it on
 * each backing type (never by the version number), and held against what
 * the environment says the kernel must do (tests/helpers/expect.c:
 * kernel/features in the VM, the upstream release on the host). A kernel
 * that lacks a feature makes the testers restrict themselves or skip; a
 * kernel that lacks a feature it is expected to have, or that accepts a
 * guard and does not fault on it, is a failure.
 */
#ifndef STRESS_CAPS_H
#define STRESS_CAPS_H

#include "backing.h"

#include <stdbool.h>

struct caps {
	bool type_ok[BT_COUNT];		/* MADV_GUARD_INSTALL works and faults */
	int type_err[BT_COUNT];		/* its errno where it does not */
	bool pagemap;			/* pagemap bit 58 reports guards (all types) */
	bool scan;			/* PAGEMAP_SCAN reports PAGE_IS_GUARD */
	bool mem_force;			/* /proc/self/mem reads PROT_NONE pages */
	bool mlock;			/* mlock2(MLOCK_ONFAULT) works (privilege, limit) */
	int mlock_err;
	bool uffd;			/* userfaultfd works on private anonymous memory */
	int uffd_err;
	bool uffd_shmem;		/* and on MAP_SHARED shmem (memfd) */
	int uffd_shmem_err;
	/*
	 * UFFDIO_COPY / UFFDIO_ZEROPAGE onto a guard: fill the page and drop
	 * the guard (upstream 6.18 does for COPY, and for both on shmem), or
	 * EEXIST with the guard kept (our kernel, for all four). Private
	 * mappings of shmem take the anonymous path.
	 */
	bool uffd_copy_fills_guard;
	bool uffd_zero_fills_guard;
	bool uffd_shmem_copy_fills_guard;
	bool uffd_shmem_zero_fills_guard;
	unsigned int expect;		/* expect_caps() */
	const char *expect_why;
};

#define CAPS_OK 0
#define CAPS_FAIL 1
#define CAPS_SKIP 77

/*
 * Probe into *c (the files of b are used at offset 0 and left empty).
 * Returns CAPS_OK, CAPS_SKIP (no guard regions at all, and none expected)
 * or CAPS_FAIL, having printed why on stderr for the last two. prog
 * prefixes the messages.
 */
int caps_probe(const char *prog, const struct backing *b, struct caps *c);

/* One line: "guards: private-anon memfd ...; pagemap yes; PAGEMAP_SCAN yes". */
void caps_print(const char *prog, const struct caps *c);

#endif
