/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel interfaces the stress testers read and drive, talked to
 * directly (not through libguard) so that they check the kernel: madvise
 * values and PAGEMAP_SCAN newer than Debian 12's linux-libc-dev (6.1),
 * pagemap bit 58, and /proc/self/maps.
 */
#ifndef STRESS_KAPI_H
#define STRESS_KAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif
#ifndef MADV_COLD
#define MADV_COLD 20
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MREMAP_FIXED
#define MREMAP_FIXED 2
#endif

#define PM_GUARD_BIT 58			/* /proc/PID/pagemap: a guard marker */
#define PM_PRESENT_BIT 63
#define PM_SWAP_BIT 62
#define PAGE_IS_GUARD_CAT (1ull << 8)	/* PAGEMAP_SCAN category */

struct kapi_page_region {
	uint64_t start, end, categories;
};

struct kapi_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define KAPI_PAGEMAP_SCAN _IOWR('f', 16, struct kapi_pm_scan_arg)

extern size_t kapi_page;		/* sysconf(_SC_PAGESIZE), set by kapi_init() */

void kapi_init(void);

/* /proc/self/pagemap entries of n pages from addr into e; 0 or -errno. */
int kapi_pagemap(int fd, uintptr_t addr, size_t n, uint64_t *e);

/*
 * Guard runs of [start, end) from PAGEMAP_SCAN: marks guard[i] = 1 for
 * every guarded page i of the range (guard[] has (end - start) / page
 * bytes, zeroed by the caller). Returns 0 or -errno (-EINVAL or -ENOTTY:
 * no PAGEMAP_SCAN, or no PAGE_IS_GUARD category).
 */
int kapi_scan_guards(int fd, uintptr_t start, uintptr_t end, unsigned char *guard);

/*
 * Number of VMAs in /proc/self/maps, read into a static buffer (no malloc,
 * no mmap: the count must not be disturbed by the act of counting).
 * -errno on failure. Not thread-safe.
 */
int kapi_vma_count(void);

/* The VMA containing addr, from /proc/self/maps: 0, or -ENOENT. Not thread-safe. */
int kapi_vma_of(uintptr_t addr, uintptr_t *start, uintptr_t *end);

/*
 * Is addr the start of a VMA whose neighbour below ends there and is its
 * twin: the same permissions, private, the same device, inode and a
 * contiguous offset, and the same VmFlags in /proc/self/smaps but for the
 * ones that never keep VMAs apart ("gu", "sd")? 1 if so, 0 if not (or if
 * addr is no such boundary), -errno on failure. Two twins can only have
 * been kept apart by what smaps does not show: 6.12's anon_vma merge rule.
 * Not thread-safe.
 */
int kapi_vma_twins_at(uintptr_t addr);

/* Print the /proc/self/maps lines that overlap [start, end) to fd. */
void kapi_dump_maps(int fd, uintptr_t start, uintptr_t end);

/*
 * userfaultfd, for private anonymous memory: a descriptor opened with
 * UFFD_USER_MODE_ONLY (so no privilege is needed), API handshake done,
 * or -errno (-EPERM, -ENOSYS, -EINVAL: not available).
 */
int kapi_uffd_open(void);
/* UFFDIO_REGISTER in MISSING mode, UFFDIO_UNREGISTER: 0 or -errno. */
int kapi_uffd_register(int fd, uintptr_t start, size_t len);
int kapi_uffd_unregister(int fd, uintptr_t start, size_t len);
/*
 * UFFDIO_COPY from src, UFFDIO_ZEROPAGE: 0 or -errno; *done is what the
 * kernel wrote back (bytes done, or the -errno of the first page).
 */
int kapi_uffd_copy(int fd, uintptr_t dst, const void *src, size_t len, int64_t *done);
int kapi_uffd_zeropage(int fd, uintptr_t dst, size_t len, int64_t *done);

const char *kapi_errname(int err);	/* "ENOMEM" for ENOMEM, "0" for 0 */

#endif
