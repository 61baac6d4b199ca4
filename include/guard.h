/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libguard: guard regions on any mapping, on any kernel.
 *
 * A guard region is a range of pages that faults (SIGSEGV) on any access.
 * Where the kernel supports it (MADV_GUARD_INSTALL, upstream 6.13 for
 * anonymous memory, 6.15 for shmem, file-backed and read-only mappings)
 * libguard uses the native guard markers, which cost no VMA; elsewhere it
 * falls back to mprotect(PROT_NONE) and remembers the protection it
 * replaced, so that guard_remove() can restore it.
 *
 * Conventions: every function returns 0 (or a non-negative value where
 * documented) on success and a negative errno value on failure; no
 * function changes errno, on success or on failure. Every function is
 * thread-safe. See libguard(7) for the two methods and where they differ.
 */
#ifndef LIBGUARD_GUARD_H
#define LIBGUARD_GUARD_H

#include <stddef.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Capabilities of the running kernel, as found by guard_probe(). */
#define GUARD_CAP_ANON		(1u << 0) /* native guards in private anonymous memory */
#define GUARD_CAP_SHMEM		(1u << 1) /* ... in shmem (memfd, tmpfs, shared anonymous) */
#define GUARD_CAP_FILE		(1u << 2) /* ... in page-cache file mappings */
#define GUARD_CAP_READONLY	(1u << 3) /* ... in PROT_READ mappings of O_RDONLY files */
#define GUARD_CAP_PAGEMAP	(1u << 4) /* /proc/PID/pagemap bit 58 reports guards */
#define GUARD_CAP_PAGEMAP_SCAN	(1u << 5) /* PAGEMAP_SCAN reports PAGE_IS_GUARD */
#define GUARD_CAP_PROCESS_MADVISE (1u << 6) /* guard advice through process_madvise() */

/* Any native install capability. */
#define GUARD_CAP_NATIVE_MASK \
	(GUARD_CAP_ANON | GUARD_CAP_SHMEM | GUARD_CAP_FILE | GUARD_CAP_READONLY)

/* Flags for guard_install(), guard_remove() and the batch calls. */
#define GUARD_NATIVE	(1u << 0) /* native guards only: -EOPNOTSUPP rather than fall back */
#define GUARD_FALLBACK	(1u << 1) /* the mprotect(PROT_NONE) method only */

/* Values OR-ed into guard_query()'s vector: which method guards a page. */
#define GUARD_QUERY_NATIVE	0x01
#define GUARD_QUERY_FALLBACK	0x02

/*
 * guard_probe - the guard capabilities of the running kernel
 *
 * Returns a mask of GUARD_CAP_* bits, found once per process (the first
 * call does the work, later and concurrent calls wait for it and return the
 * same answer) by really installing guards in small scratch mappings:
 * private anonymous, a memfd, a temporary file and a read-only descriptor
 * of it, then reading them back through pagemap and PAGEMAP_SCAN, and
 * installing one through process_madvise(). It never parses the kernel
 * version. GUARD_CAP_FILE and GUARD_CAP_READONLY are probed on a file in
 * $LIBGUARD_PROBE_DIR, else $TMPDIR, /var/tmp or /tmp: the first of these
 * that is not tmpfs or ramfs (a file there would test shmem, not the page
 * cache); if none is, the two bits stay clear. LIBGUARD_FORCE_FALLBACK does
 * not change the answer: it is about the kernel, not the policy.
 */
unsigned int guard_probe(void);

/*
 * guard_install - make [addr, addr + len) fault on any access
 *
 * addr must be page-aligned and non-NULL; len is rounded up to a page
 * multiple and must be non-zero. Native guards are used where the kernel
 * can place them on every page of the range; otherwise (an old kernel,
 * mlocked or hugetlb memory) the whole range gets the mprotect fallback,
 * unless flags has GUARD_NATIVE. GUARD_FALLBACK, or the environment
 * variable LIBGUARD_FORCE_FALLBACK=1, forces the fallback.
 *
 * Contents: private anonymous data (and private copies of file pages) in
 * the range are discarded, file and shmem data are kept, by both methods.
 *
 * Returns 0, or: -EINVAL (bad address, length or flags, or a VM_PFNMAP,
 * VM_IO, VM_MIXEDMAP or VM_DONTEXPAND mapping), -ENOMEM (part of the range
 * is not mapped, or the kernel ran out of memory or VMAs), -EOPNOTSUPP
 * (GUARD_NATIVE, and the kernel or mapping can't do it natively), or
 * another error from the kernel. On failure nothing the call did remains:
 * no page of the range is left guarded by this call.
 */
int guard_install(void *addr, size_t len, unsigned int flags);

/*
 * guard_remove - remove guards from [addr, addr + len)
 *
 * Removes native guards and restores the original protection of every
 * page the fallback protected (each subrange gets back its own). Pages
 * that were not guarded are left alone: removing a guard that was never
 * installed is a no-op, as with the kernel. GUARD_NATIVE or GUARD_FALLBACK
 * restrict the call to one method. Arguments as for guard_install().
 *
 * Returns 0, or -EINVAL, -ENOMEM (part of the range is not mapped;
 * nothing was done), -EOPNOTSUPP (GUARD_NATIVE on a kernel without native
 * guards) or another error from the kernel.
 */
int guard_remove(void *addr, size_t len, unsigned int flags);

/*
 * guard_query - which pages of [addr, addr + len) are guarded
 *
 * Like mincore(2): vec must have room for one byte per page of the range;
 * vec[i] is set to a non-zero mask of GUARD_QUERY_NATIVE (read from
 * PAGEMAP_SCAN or pagemap bit 58) and GUARD_QUERY_FALLBACK (a page the
 * fallback protected and that is still PROT_NONE), or 0.
 *
 * Returns 0, or -EINVAL (bad arguments), -ENOMEM (part of the range is not
 * mapped), or -EOPNOTSUPP (the kernel can install native guards but can't
 * report them, as upstream 6.13 and 6.14).
 */
int guard_query(const void *addr, size_t len, unsigned char *vec);

/*
 * guard_install_batch, guard_remove_batch - many ranges in one call
 *
 * Apply guard_install() or guard_remove() to each of the count ranges in
 * order. Single-page installs and all removals go to the kernel together
 * through process_madvise() (in chunks of IOV_MAX ranges) where
 * GUARD_CAP_PROCESS_MADVISE is present; the other ranges one by one.
 *
 * Returns 0 when every range is done. On failure returns the negative
 * errno for the first range that failed and, if done is not NULL, stores
 * its index in *done: ranges before it are done, ranges after it are
 * untouched, and the failed range itself is not left guarded by the call
 * (for removal it may be partly unguarded). Invalid arguments in any
 * range give -EINVAL before anything is done, with *done = 0.
 */
int guard_install_batch(const struct iovec *ranges, size_t count, unsigned int flags,
			size_t *done);
int guard_remove_batch(const struct iovec *ranges, size_t count, unsigned int flags,
		       size_t *done);

#ifdef __cplusplus
}
#endif

#endif /* LIBGUARD_GUARD_H */
