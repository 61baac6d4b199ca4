/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libguard internals: shared by the files in lib/, never installed.
 */
#ifndef LIBGUARD_INTERNAL_H
#define LIBGUARD_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include <sys/ioctl.h>

#include "guard.h"

/* Public entry points: everything else is hidden, see libguard.map. */
#define LG_EXPORT __attribute__((visibility("default")))

/* uapi bits newer than Debian 12's linux-libc-dev (6.1). */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

#define LG_PM_GUARD_REGION_BIT 58	/* /proc/PID/pagemap */
#define LG_PAGE_IS_GUARD (1ull << 8)	/* PAGEMAP_SCAN category */

struct lg_page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};

struct lg_pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};
#define LG_PAGEMAP_SCAN _IOWR('f', 16, struct lg_pm_scan_arg)

struct lg_procmap_query {
	__u64 size;
	__u64 query_flags;
	__u64 query_addr;
	__u64 vma_start;
	__u64 vma_end;
	__u64 vma_flags;
	__u64 vma_page_size;
	__u64 vma_offset;
	__u64 inode;
	__u32 dev_major;
	__u32 dev_minor;
	__u32 vma_name_size;
	__u32 build_id_size;
	__u64 vma_name_addr;
	__u64 build_id_addr;
};
#define LG_PROCMAP_QUERY _IOWR('f', 17, struct lg_procmap_query)
#define LG_PROCMAP_READABLE 0x01
#define LG_PROCMAP_WRITABLE 0x02
#define LG_PROCMAP_EXECUTABLE 0x04
#define LG_PROCMAP_SHARED 0x08
#define LG_PROCMAP_COVERING_OR_NEXT 0x10

#define LG_FLAGS_ALL (GUARD_NATIVE | GUARD_FALLBACK)

/* Keep errno as the caller had it, whatever the function does. */
#define LG_KEEP_ERRNO int lg_saved_errno_ __attribute__((cleanup(lg_restore_errno))) = errno
static inline void lg_restore_errno(int *saved)
{
	errno = *saved;
}

/* sys.c: thin wrappers, each returning 0 / a count or -errno. */
size_t lg_page_size(void);
int lg_madvise(void *addr, size_t len, int advice);
int lg_mprotect(void *addr, size_t len, int prot);
int lg_pidfd_self(void);
long lg_process_madvise(int pidfd, const struct iovec *iov, size_t n, int advice);
int lg_range_mapped(const void *addr, size_t len);
/* Page-align the arguments of a public call: -EINVAL, or 0 and *end set. */
int lg_check_range(const void *addr, size_t len, uintptr_t *end);

/* One VMA, as far as the library needs to know it. */
struct lg_vma {
	uintptr_t start, end;
	int prot;
	bool shared;
	uint64_t pgoff;		/* file offset of start, in bytes */
	uint64_t inode;		/* 0: not a file mapping */
	unsigned int dev_major, dev_minor;
};
#define LG_VM_SPECIAL 0x1	/* VM_IO, VM_PFNMAP, VM_MIXEDMAP, VM_DONTEXPAND */
#define LG_VM_LOCKED 0x2
#define LG_VM_HUGETLB 0x4
/* Open the source of lg_vma_find() for this process (-errno on failure). */
int lg_vma_open(void);
/* The VMA covering addr or the next one above it: 1, 0 if none, -errno. */
int lg_vma_find(int fd, uintptr_t addr, struct lg_vma *vma);
/* Union of LG_VM_* over the VMAs meeting [start, end): slow, error paths. */
int lg_vma_kind(uintptr_t start, uintptr_t end);

/* probe.c */
unsigned int lg_caps(void);
bool lg_forced_fallback(void);

/* query.c: guarded runs of a range, from PAGEMAP_SCAN or pagemap. */
struct lg_run {
	uintptr_t start, end;
};
struct lg_runs {
	size_t n, cap;
	struct lg_run *v;
	struct lg_run inline_v[8];
};
void lg_runs_init(struct lg_runs *runs);
void lg_runs_free(struct lg_runs *runs);
int lg_runs_add(struct lg_runs *runs, uintptr_t start, uintptr_t end);
/* Native guards in [start, end); -EOPNOTSUPP if the kernel can't say. */
int lg_native_guards(uintptr_t start, uintptr_t end, struct lg_runs *runs);
/* The same from an open /proc/PID/pagemap, for any process. */
int lg_pagemap_guards(int fd, uintptr_t start, uintptr_t end, struct lg_runs *runs);
/* Can the kernel report native guards (or are there none to report)? */
bool lg_guards_reportable(void);

/* fallback.c: the library's one mutex, safe across fork(). */
void lg_lock(void);
void lg_unlock(void);

/* fallback.c: the mprotect method and its record. */
int lg_fallback_install(uintptr_t start, uintptr_t end);
int lg_fallback_remove(uintptr_t start, uintptr_t end);
/* OR GUARD_QUERY_FALLBACK into vec for recorded pages still PROT_NONE. */
int lg_fallback_query(uintptr_t start, uintptr_t end, unsigned char *vec);
bool lg_fallback_any(void);
/* Drop the record of [start, end) after the caller unmapped it. */
void lg_fallback_forget(uintptr_t start, uintptr_t end);

/* registry.c: what guard_map_file() and guard_stack() mapped. */
enum lg_reg_kind { LG_REG_FILE, LG_REG_STACK };
struct lg_reg {
	uintptr_t user, user_end;	/* what the caller got */
	uintptr_t start, end;		/* the whole mapping, guards included */
	enum lg_reg_kind kind;
};
int lg_reg_add(const struct lg_reg *r);
/* Remove and return the entry for exactly [user, user_end): -EINVAL if none. */
int lg_reg_take(uintptr_t user, uintptr_t user_end, enum lg_reg_kind kind, struct lg_reg *out);
/* Unmap a registered mapping and forget everything about it. */
void lg_reg_unmap(const struct lg_reg *r);

/* elf.c: program headers, checked. */
#define LG_ELF_MAX_LOADS 32
struct lg_load {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags;
};
struct lg_loads {
	size_t n;
	struct lg_load v[LG_ELF_MAX_LOADS];
};
/* The PT_LOAD segments of a program header table: -ENOEXEC if corrupt. */
int lg_elf_loads(const void *phdrs, size_t phnum, size_t page, struct lg_loads *out);
/* The same from the first len bytes of an ELF file (header and table). */
int lg_elf_parse(const void *image, size_t len, size_t page, struct lg_loads *out);
/* The page-aligned holes between segments (relative to the load bias). */
size_t lg_elf_holes(const struct lg_loads *loads, size_t page, struct lg_run *holes,
		    size_t max);

struct lg_elf_report {
	uintptr_t lo, hi;	/* the object's extent in memory */
	int holes;		/* loader holes found */
	int guarded;		/* of which now guard regions */
	char name[256];
};
/*
 * guard_elf_segments() for one object given by its load bias, segments
 * and file name ("" for the program), with what it found in *rep (may be
 * NULL). For the audit module, which can't use dl_iterate_phdr(): that
 * only shows the caller's own link-map namespace.
 */
int lg_elf_guard_loads(uintptr_t bias, const struct lg_loads *loads, const char *name,
		       unsigned int flags, struct lg_elf_report *rep);
/* Number of VMAs meeting [start, end), or -errno. */
int lg_vma_count(uintptr_t start, uintptr_t end);

/* install.c: one range, native first, fallback by policy. */
int lg_install_one(uintptr_t start, uintptr_t end, unsigned int flags);
int lg_remove_one(uintptr_t start, uintptr_t end, unsigned int flags);
/* Does this call, with these flags, use native guards at all? */
int lg_native_policy(unsigned int flags, bool *native);

#endif
