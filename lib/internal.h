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
#include <sys/mman.h>
#include <sys/types.h>

#include "guard.h"
#include "raw_syscall.h"
#include "valgrind.h"

#include <asm/unistd.h>

/* Public entry points: everything else is hidden, see libguard.map. */
#define LG_EXPORT __attribute__((visibility("default")))
/*
 * The hot paths, the one-page native guard_install()/guard_remove() and
 * the fallback's: grouped by the linker into .text.hot (from a page
 * boundary: fallback.c), so that the calls touch few pages after each
 * system call (with PTI, the kernel entry flushes the TLB).
 */
#define LG_HOT __attribute__((hot))
/*
 * The variables every call reads: in .data, which holds little else, so
 * that they share a page instead of lying across .bss, between the
 * record's static slab and the registry's table (a page each touched
 * after the system calls).
 */
#define LG_HOT_DATA __attribute__((section(".data.lg_hot")))

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

/*
 * A region a PAGEMAP_SCAN answer may hold: page-aligned, not empty, at or
 * after @from and inside the part the kernel says it walked. Anything else
 * is a broken answer (-EIO), never something to act on.
 */
static inline bool lg_region_ok(const struct lg_page_region *r, uint64_t from, uint64_t walked,
				uintptr_t page_mask)
{
	return r->start >= from && r->end > r->start && r->end <= walked &&
	       !((r->start | r->end) & page_mask);
}

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
/* What an install accepts on top: removals refuse GUARD_FRESH. */
#define LG_INSTALL_FLAGS (LG_FLAGS_ALL | GUARD_FRESH)

/* Keep errno as the caller had it, whatever the function does (unused:
 * clang does not count the cleanup as a use). */
#define LG_KEEP_ERRNO \
	int lg_saved_errno_ __attribute__((cleanup(lg_restore_errno), unused)) = errno
static inline void lg_restore_errno(int *saved)
{
	errno = *saved;
}

/* Which sanitizer this object is built with (gcc and clang spell it apart). */
#if defined(__SANITIZE_ADDRESS__)
#define LG_SANITIZE_ADDRESS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LG_SANITIZE_ADDRESS 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define LG_SANITIZE_THREAD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LG_SANITIZE_THREAD 1
#endif
#endif
#ifndef LG_SANITIZE_ADDRESS
#define LG_SANITIZE_ADDRESS 0
#endif
#ifndef LG_SANITIZE_THREAD
#define LG_SANITIZE_THREAD 0
#endif

/*
 * Variables the inline functions below read: hidden, so that they are
 * reached PC-relative, not through the GOT.
 */
#define LG_INTERNAL __attribute__((visibility("hidden")))

/* sys.c: thin wrappers, each returning 0 / a count or -errno. */
extern size_t lg_page_cache LG_INTERNAL;	/* 0 until the first lg_page_size() */
size_t lg_page_size_slow(void);
static inline size_t lg_page_size(void)
{
	size_t p = __atomic_load_n(&lg_page_cache, __ATOMIC_RELAXED);

	return __builtin_expect(p != 0, 1) ? p : lg_page_size_slow();
}
#if LG_HAVE_RAW_SYSCALL
/* A raw system call of up to three arguments that returns 0 or -errno. */
static inline int lg_sys3(long nr, long a, long b, long c)
{
	long ret = lg_raw_syscall(nr, a, b, c, 0, 0, 0);

	return ret < 0 ? (int)ret : 0;
}
#endif
static inline int lg_madvise(void *addr, size_t len, int advice)
{
#if LG_HAVE_RAW_SYSCALL
	return lg_sys3(__NR_madvise, (long)addr, (long)len, advice);
#else
	return madvise(addr, len, advice) ? -errno : 0;
#endif
}
/*
 * Sanitizer runtimes keep shadow state per mapping, set by their mmap()
 * and munmap() interceptors: under them those two go through libc.
 */
#if LG_SANITIZE_ADDRESS || LG_SANITIZE_THREAD
#define LG_RAW_MAPPING 0
#else
#define LG_RAW_MAPPING LG_HAVE_RAW_SYSCALL
#endif
/*
 * A path whose system calls are all raw (and whose rare libc calls, on
 * error paths, keep errno themselves) has no errno to save: saving it
 * costs libc's __errno_location(), its text, GOT and TLS pages touched
 * after the system calls. Elsewhere LG_KEEP_ERRNO.
 */
#if LG_HAVE_RAW_SYSCALL && LG_RAW_MAPPING
#define LG_KEEP_ERRNO_UNLESS_RAW ((void)0)
#else
#define LG_KEEP_ERRNO_UNLESS_RAW LG_KEEP_ERRNO
#endif
/* mmap() of anonymous memory: the address, or -errno (-4095..-1). */
static inline long lg_mmap_anon(size_t len, int prot, int flags)
{
#if LG_RAW_MAPPING
	return lg_raw_syscall(__NR_mmap, 0, (long)len, prot, flags | MAP_ANONYMOUS, -1, 0);
#else
	void *p = mmap(NULL, len, prot, flags | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? -errno : (long)p;
#endif
}
static inline int lg_munmap(void *addr, size_t len)
{
#if LG_RAW_MAPPING
	return lg_sys3(__NR_munmap, (long)addr, (long)len, 0);
#else
	return munmap(addr, len) ? -errno : 0;
#endif
}
/* An ioctl that returns 0 on success (PROCMAP_QUERY; not PAGEMAP_SCAN, which counts). */
static inline int lg_ioctl(int fd, unsigned long request, void *arg)
{
#if LG_HAVE_RAW_SYSCALL
	return lg_sys3(__NR_ioctl, fd, (long)request, (long)arg);
#else
	return ioctl(fd, request, arg) < 0 ? -errno : 0;
#endif
}
static inline int lg_mprotect(void *addr, size_t len, int prot)
{
#if LG_HAVE_RAW_SYSCALL
	return lg_sys3(__NR_mprotect, (long)addr, (long)len, prot);
#else
	return mprotect(addr, len, prot) ? -errno : 0;
#endif
}
int lg_pidfd_self(void);
long lg_process_madvise(int pidfd, const struct iovec *iov, size_t n, int advice);
/*
 * msync(MS_ASYNC) does nothing but walk the VMAs: -ENOMEM on a hole.
 * mincore() gives the same answer, for two cases: memcheck wants
 * msync()'s range addressable, and guards are not (valgrind.h); a
 * seccomp filter may refuse msync().
 */
int lg_range_mapped_mincore(const void *addr, size_t len);
static inline int lg_range_mapped(const void *addr, size_t len)
{
	int ret;

	if (__builtin_expect(lg_vg_running(), 0))
		return lg_range_mapped_mincore(addr, len);
#if LG_HAVE_RAW_SYSCALL
	ret = lg_sys3(__NR_msync, (long)addr, (long)len, MS_ASYNC);
#else
	ret = msync((void *)addr, len, MS_ASYNC) ? -errno : 0;
#endif
	return __builtin_expect(ret == -EPERM || ret == -ENOSYS, 0)
		       ? lg_range_mapped_mincore(addr, len)
		       : ret;
}
/* Page-align the arguments of a public call: -EINVAL, or 0 and *end set. */
static inline int lg_check_range(const void *addr, size_t len, uintptr_t *end)
{
	size_t page = lg_page_size();
	uintptr_t start = (uintptr_t)addr;
	size_t rounded;

	if (!addr || (start & (page - 1)) || !len)
		return -EINVAL;
	rounded = (len + page - 1) & ~(page - 1);
	if (rounded < len || start + rounded < start)
		return -EINVAL;
	*end = start + rounded;
	return 0;
}

/* One VMA, as far as the library needs to know it. */
struct lg_vma {
	uintptr_t start, end;
	int prot;
	bool shared;
	bool copied;		/* from vma_copy.c: protection checked, ends and object maybe not */
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
/* The same on the kept /proc/self/maps, one ioctl; with lg_lock() held. */
int lg_vma_at(uintptr_t addr, struct lg_vma *vma);
/*
 * Kernels without PROCMAP_QUERY (before 6.11), unless LIBGUARD_STRICT_RECORDS
 * asks otherwise: the fallback checks its records with what the kernel
 * answers in O(1) (mapped, and readable: lg_page_readable()), and learns the
 * VMAs of the memory it protects from a copy of /proc/self/maps
 * (vma_copy.c), as libguard(7) says; reading the file at every call would
 * cost O(VMAs) a call, and each fallback guard is a VMA or two. With
 * lg_lock() held.
 */
bool lg_vma_weak(void);
/* Can the page at addr be read (MADV_POPULATE_READ)? 1, 0, or -errno (no telling). */
int lg_page_readable(uintptr_t addr);
/*
 * vma_copy.c: the VMA covering at from the copy, its protection checked
 * against the pages of [at, min(its end, end)) that no record holds, and
 * the copy read anew where they differ: 0, -ENOMEM for a hole, -ENOSPC
 * where the process has more mappings than the copy holds (or it could
 * not be read), or -errno. With lg_lock() held.
 */
int lg_vma_copy_at(uintptr_t at, uintptr_t end, struct lg_vma *vma);
/*
 * A fallback install starts (with lg_lock() held): entries for shared
 * mappings are taken only from a copy read since, or since the batch
 * this thread is in began (lg_copy_batch, a lg_vma_copy_batch_id()).
 */
void lg_vma_copy_call(void);
unsigned long lg_vma_copy_batch_id(void);
extern __thread unsigned long lg_copy_batch LG_INTERNAL __attribute__((tls_model("initial-exec")));
/* Union of LG_VM_* over the VMAs meeting [start, end): reads smaps, slow. */
int lg_vma_kind(uintptr_t start, uintptr_t end);
/*
 * The private anonymous mapping a wrapper has just made on this thread,
 * as it made it, or NULL: the fallback's installs in it take their VMA
 * from here instead of a lookup.
 */
extern __thread const struct lg_vma *lg_fresh_vma LG_INTERNAL
	__attribute__((tls_model("initial-exec")));
/* LG_VM_* of vma (found at addr) after MADV_DONTNEED refused it: cheap for anonymous memory. */
int lg_vma_kind_at(uintptr_t addr, const struct lg_vma *vma);

/*
 * lines.c: a /proc text file line by line with no malloc() (for callers
 * holding lg_lock()). lg_lines_next(): 1 and *line (NUL-terminated, no
 * newline; one longer than the buffer is cut to it), 0 at the end, -errno.
 */
struct lg_lines {
	int fd;
	size_t len, pos;
	bool skip;		/* dropping the rest of a line that was cut */
	char buf[4096];
};
int lg_lines_open(struct lg_lines *l, const char *path);
int lg_lines_next(struct lg_lines *l, char **line);
void lg_lines_close(struct lg_lines *l);

/* procmaps.c: one line of /proc/PID/maps, as the kernel prints it. */
struct lg_maps_line {
	uintptr_t start, end;
	unsigned long long offset, inode;
	unsigned int dev_major, dev_minor;
	int prot;
	bool shared;
	const char *name;	/* inside the line: name_len bytes, "" if none */
	size_t name_len;
};
/* Parse one line (a trailing newline is allowed): 0, or -EIO. */
int lg_maps_parse(const char *line, struct lg_maps_line *out);
/* The VMA a maps line describes. */
void lg_maps_line_vma(const struct lg_maps_line *l, struct lg_vma *vma);
/* A PROCMAP_QUERY for the VMA covering addr or the next one; its answer. */
void lg_procmap_request(struct lg_procmap_query *q, uintptr_t addr);
void lg_procmap_vma(const struct lg_procmap_query *q, struct lg_vma *vma);
/*
 * An error of PROCMAP_QUERY that means the kernel has none (before 6.11:
 * ENOTTY; EINVAL for a size it does not know; ENOSYS from an emulator
 * such as qemu-user), or that a seccomp filter refused the ioctl (EPERM,
 * EACCES, ENOSYS: the kernel's own PROCMAP_QUERY never gives the first
 * two on a maps file we opened): use the text of the maps file.
 */
static inline bool lg_procmap_absent(int err)
{
	return err == -ENOTTY || err == -EINVAL || err == -ENOSYS || err == -EPERM ||
	       err == -EACCES;
}
/*
 * A system call's error that only a seccomp filter gives here (EPERM or
 * ENOSYS for guard advice the kernel knows; ENOSYS for a call it lacks):
 * the other method may still work.
 */
static inline bool lg_refused(int err)
{
	return err == -EPERM || err == -ENOSYS;
}
/* LG_VM_* for the value of an smaps "VmFlags:" line. */
int lg_vmflags_kind(const char *flags);

/*
 * probe.c: the answer of guard_probe(), published once with LG_PROBED,
 * LG_FORCED (LIBGUARD_FORCE_FALLBACK) and LG_VALGRIND (running under
 * valgrind: the hot path steps aside for the slow one, which tells
 * memcheck about guards): every call asks, so a load and a test;
 * lg_probe_slow() probes (once) if nothing is published yet.
 */
#define LG_PROBED (1u << 31)
#define LG_FORCED (1u << 30)
#define LG_VALGRIND (1u << 29)
#define LG_WORD_FLAGS (LG_PROBED | LG_FORCED | LG_VALGRIND)
extern unsigned int lg_probed_word LG_INTERNAL;
unsigned int lg_probe_slow(void);
static inline unsigned int lg_probe_word(void)
{
	unsigned int w = __atomic_load_n(&lg_probed_word, __ATOMIC_ACQUIRE);

	return __builtin_expect(w & LG_PROBED, LG_PROBED) ? w : lg_probe_slow();
}
static inline unsigned int lg_caps(void)
{
	return lg_probe_word() & ~LG_WORD_FLAGS;
}
static inline bool lg_forced_fallback(void)
{
	return lg_probe_word() & LG_FORCED;
}
static inline bool lg_on_valgrind(void)
{
	return lg_probe_word() & LG_VALGRIND;
}

/* pagemap.c: guarded runs of a range, from PAGEMAP_SCAN or pagemap. */
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
/* One PAGEMAP_SCAN ioctl on fd: the count of regions, or -errno. */
long lg_pagemap_scan(int fd, struct lg_pm_scan_arg *arg);
/* Native guards in [start, end); -EOPNOTSUPP if the kernel can't say. */
int lg_native_guards(uintptr_t start, uintptr_t end, struct lg_runs *runs);
/* The same from an open /proc/PID/pagemap, for any process. */
int lg_pagemap_guards(int fd, uintptr_t start, uintptr_t end, struct lg_runs *runs);
/*
 * The same from a source of PAGEMAP_SCAN answers or of pagemap entries:
 * the ioctl or pread() on a pagemap file, or the fuzz target's stand-in.
 * Each returns what the system call would, or -errno. Runs come out
 * ascending, disjoint, page-aligned and inside [start, end), or -EIO.
 */
typedef long lg_scan_fn(void *ctx, struct lg_pm_scan_arg *arg);
typedef ssize_t lg_read_fn(void *ctx, void *buf, size_t len, off_t off);
int lg_scan_runs(lg_scan_fn *scan, void *ctx, uintptr_t start, uintptr_t end,
		 struct lg_runs *runs);
int lg_pagemap_runs(lg_read_fn *read_fn, void *ctx, uintptr_t start, uintptr_t end,
		    struct lg_runs *runs);
/* OR GUARD_QUERY_NATIVE into vec[] for the pages of runs in [start, end). */
void lg_runs_vec(const struct lg_runs *runs, uintptr_t start, uintptr_t end, unsigned char *vec);
/* Can the kernel report native guards (or are there none to report)? */
bool lg_guards_reportable(void);

/*
 * proc.c: /proc/self/pagemap and /proc/self/maps (and a pidfd of the
 * process), opened on first use and kept (a fork() child opens its own): the descriptor, or -errno. After an
 * error from it, lg_proc_lost() tells whether the number still names our
 * file; if not, it is forgotten and the caller may try once more. The
 * _locked forms are for callers holding lg_lock().
 */
enum lg_proc { LG_PROC_PAGEMAP, LG_PROC_MAPS, LG_PROC_PIDFD, LG_PROC_N };
int lg_proc_fd(enum lg_proc which);
bool lg_proc_lost(enum lg_proc which, int fd);
int lg_proc_fd_locked(enum lg_proc which);
bool lg_proc_lost_locked(enum lg_proc which, int fd);
void lg_proc_after_fork_child(void);
/*
 * The pidfd process_madvise() should name for this process: PIDFD_SELF
 * where the kernel takes it, else the kept LG_PROC_PIDFD. 0 or -errno.
 */
int lg_self_target(int *target);

/*
 * The scan behind it, from any source of PAGEMAP_SCAN answers (the fuzz
 * targets' too): every page of interest, only the guard bit returned, so
 * the regions tile the mapped part of the range, guarded or not, and one
 * call shows both the holes and the guards (into *guards). Checked like
 * lg_scan_runs(): ascending, page-aligned, inside the part walked, or
 * -EIO. 1 if some part was not reported (a hole, or a VM_PFNMAP VMA,
 * which the scan skips), else 0.
 */
int lg_scan_layout(lg_scan_fn *scan, void *ctx, uintptr_t start, uintptr_t end,
		   struct lg_runs *guards);

/* lock.c: the library's one mutex, held across fork() (see there). */
void lg_lock(void);
void lg_unlock(void);

/*
 * records.c: the fallback's record, a B+ tree of disjoint intervals
 * (O(log n) each), under lg_lock(). A record is its piece of memory as it
 * was when the library protected it. A pointer to one holds until the
 * next insertion or deletion; a start moves only through
 * lg_rec_set_start().
 */
struct lg_rec {
	uintptr_t start, end;
	int prot;		/* the protection to restore */
	bool shared;
	bool edge_lo, edge_hi;	/* start / end was an end of its VMA (or PROT_NONE then) */
	uint64_t inode;		/* 0: anonymous */
	uint64_t off;		/* file offset of start (0 for anonymous memory) */
	unsigned int dev_major, dev_minor;
};
/* Have nodes ready, so that the next n inserts (or splits) can't fail. */
int lg_rec_reserve(size_t n);
/* Insert a record overlapping none (a reserved node): it, as stored. */
struct lg_rec *lg_rec_insert(const struct lg_rec *rec);
void lg_rec_delete(struct lg_rec *rec);
/* The first record ending above addr / the last starting below it, or NULL. */
struct lg_rec *lg_rec_first_above(uintptr_t addr);
struct lg_rec *lg_rec_before(uintptr_t addr);
/* The record after / before rec in address order, or NULL: O(1). */
struct lg_rec *lg_rec_next(const struct lg_rec *rec);
struct lg_rec *lg_rec_prev(const struct lg_rec *rec);
/* Both neighbours of addr in one descent: the last record starting below it, the first at or above. */
void lg_rec_around(uintptr_t addr, struct lg_rec **lo, struct lg_rec **hi);
/* Move rec's start, into space no other record holds. */
void lg_rec_set_start(struct lg_rec *rec, uintptr_t start);
/* The tree's invariants (tests): 0, or -1 if broken. */
int lg_rec_check(void);
/* What the record holds of memory (tests): nodes of 4 KiB. */
struct lg_rec_stats {
	size_t nodes;		/* in the tree */
	size_t mapped;		/* static and in mapped slabs, in the tree or not */
	size_t touched;		/* ever handed out: at most these are resident */
	size_t slabs;		/* mappings */
};
void lg_rec_stats(struct lg_rec_stats *st);
extern size_t lg_fallback_live LG_INTERNAL;	/* records held, readable without the lock */
static inline bool lg_fallback_any(void)
{
	return __atomic_load_n(&lg_fallback_live, __ATOMIC_ACQUIRE) != 0;
}

/* fallback.c: the mprotect method, acting on records that still hold. */
int lg_fallback_install(uintptr_t start, uintptr_t end);
/* Checks the whole range for holes (-ENOMEM) before it changes anything. */
int lg_fallback_remove(uintptr_t start, uintptr_t end);
/* OR GUARD_QUERY_FALLBACK into vec for recorded pages whose record holds. */
int lg_fallback_query(uintptr_t start, uintptr_t end, unsigned char *vec);
/*
 * munmap() [start, end) and drop its records, as one step under the lock
 * where there are any (another thread may be given the addresses at once).
 */
int lg_fallback_unmap(uintptr_t start, uintptr_t end);

/* The library has just mapped [start, end): records there are stale, forgotten. */
void lg_fallback_fresh(uintptr_t start, uintptr_t end);

/* query.c: is every page of [start, end) (mapped) a guard that holds? 1, 0, or -errno. */
int lg_all_guarded(uintptr_t start, uintptr_t end);

/* registry.c: what guard_map_file() and guard_stack() mapped. */
/* LG_REG_MAP: guard_map_file() and guard_map_anon(), undone by guard_unmap(). */
enum lg_reg_kind { LG_REG_MAP, LG_REG_STACK };
struct lg_reg {
	uintptr_t user, user_end;	/* what the caller got */
	uintptr_t start, end;		/* the whole mapping, guards included */
	enum lg_reg_kind kind;
	/* What the kernel showed of [user, user_end) when it was mapped. */
	bool shared;
	uint64_t inode;			/* 0: anonymous */
	uint64_t off;			/* file offset of user */
	unsigned int dev_major, dev_minor;
};
int lg_reg_add(const struct lg_reg *r);
/* Remove and return the entry for exactly [user, user_end): -EINVAL if none. */
int lg_reg_take(uintptr_t user, uintptr_t user_end, enum lg_reg_kind kind, struct lg_reg *out);
/* Unmap a registered mapping and forget everything about it. */
void lg_reg_unmap(const struct lg_reg *r);
/*
 * ret == 0: register r (which can still fail); else, or then, unmap it:
 * ret. private_anon: r is private anonymous memory (no need to ask the
 * kernel what backs it).
 */
int lg_reg_finish(struct lg_reg *r, bool private_anon, int ret);
/*
 * guard_unmap() and guard_stack_free(): unmap the entry for exactly
 * [user, user_end) if the kernel still shows the mapping the library
 * made there; if not, forget it and unmap nothing. 0, or -EINVAL.
 */
int lg_reg_release(uintptr_t user, uintptr_t user_end, enum lg_reg_kind kind);
/* Slots the registry holds now (0 before its first entry): for tests of its memory. */
size_t lg_reg_capacity(void);

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
};
/* One loaded object: load bias, segments, file name ("" for the program). */
struct lg_elf_object {
	uintptr_t bias;
	struct lg_loads loads;
	char name[256];
	int err;		/* the segments could not be read */
};
/* Copy a file name into an lg_elf_object (cut to fit). */
void lg_elf_name(struct lg_elf_object *o, const char *name);
/*
 * elf_holes.c: guard_elf_segments() for one object, with what it found in
 * *rep (may be NULL). Also for the audit module, which can't use
 * dl_iterate_phdr(): that only shows the caller's own link-map namespace.
 * *mfd is the VMA lookup descriptor: -1 opens one at the first hole, for
 * the caller to close (lg_hs_close()) and to pass on to the next object.
 */
int lg_elf_guard_object(int *mfd, const struct lg_elf_object *o, unsigned int flags,
			struct lg_elf_report *rep);
/* Number of VMAs meeting [start, end), or -errno. */
int lg_vma_count(uintptr_t start, uintptr_t end);
/*
 * What elf_holes.c asks of the system, each 0 (or a descriptor) or
 * -errno. Two implementations, chosen at link time: libguard's with libc
 * (elf.c, sys.c), and libguard-audit.so's with raw system calls
 * (audit_rt.c), which has no libc. Besides these: lg_vma_open(),
 * lg_vma_find(), lg_page_size() and memcpy/memset/memcmp/strlen.
 */
int lg_hs_open(const char *path);	/* O_RDONLY | O_CLOEXEC */
void lg_hs_close(int fd);
int lg_hs_file_id(int fd, uint64_t *inode, unsigned int *dev_major, unsigned int *dev_minor);
/* A PROT_NONE, MAP_PRIVATE | MAP_FIXED mapping of fd at off over [addr, addr + len). */
int lg_hs_map_none(uintptr_t addr, size_t len, int fd, uint64_t off);
int lg_hs_madvise(uintptr_t addr, size_t len, int advice);
int lg_hs_mprotect(uintptr_t addr, size_t len, int prot);
/* May native guards be tried in file mappings (not forced off, not known absent)? */
bool lg_hs_file_guards(void);

/* native.c: the native method beyond one page. */
/*
 * Before a multi-page native install: 0 when [start, end) is wholly
 * mapped, with its native guards in *before; -ENOMEM for a hole;
 * -EOPNOTSUPP when the range is mapped but the kernel can't report
 * guards; or another -errno. One PAGEMAP_SCAN where the kernel has it.
 */
int lg_install_snapshot(uintptr_t start, uintptr_t end, struct lg_runs *before);
/*
 * Takes away the guards of [start, end) that @before (a snapshot, which may
 * reach beyond the range either side) did not have: an install's undo.
 */
void lg_undo_install(uintptr_t start, uintptr_t end, const struct lg_runs *before);
/* A multi-page install: refused over a hole, undone exactly on failure. */
int lg_native_install_range(uintptr_t start, uintptr_t end, bool fresh);
/* Removal VMA by VMA, after the kernel stopped at one that can't have guards. */
int lg_native_remove_around(uintptr_t start, uintptr_t end);
/* Native removal refused by a filter (err): 0 if no native guard is there, else err. */
int lg_native_remove_refused(uintptr_t start, uintptr_t end, int err);

/* install.c: one range, native first, fallback by policy. */
int lg_install_one(uintptr_t start, uintptr_t end, unsigned int flags, unsigned int *method);
int lg_remove_one(uintptr_t start, uintptr_t end, unsigned int flags);
/* Does this call, with these flags, use native guards at all? */
int lg_native_policy(unsigned int flags, unsigned int allowed, bool *native);

#endif
