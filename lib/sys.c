// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * System call wrappers returning -errno, argument checks, and what the
 * library reads about VMAs: PROCMAP_QUERY where the kernel has it (6.11+),
 * /proc/self/maps otherwise, /proc/self/smaps only on error paths.
 */
#include "internal.h"
#include "valgrind.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

/*
 * For headers older than these calls. System calls from 424 on have one
 * number on every architecture (x86-64 and arm64 alike), but for the
 * ones that offset their whole table: refuse those rather than guess.
 */
#if !defined(__NR_pidfd_open) || !defined(__NR_process_madvise)
#if defined(__alpha__) || defined(__ia64__) || defined(__mips__)
#error "headers without pidfd_open or process_madvise, on an architecture that numbers them apart"
#endif
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise 440
#endif

size_t lg_page_cache LG_HOT_DATA;

size_t lg_page_size_slow(void)
{
	size_t p = (size_t)sysconf(_SC_PAGESIZE);

	__atomic_store_n(&lg_page_cache, p, __ATOMIC_RELAXED);
	return p;
}

int lg_pidfd_self(void)
{
	long fd = syscall(__NR_pidfd_open, getpid(), 0);

	return fd < 0 ? -errno : (int)fd;
}

long lg_process_madvise(int pidfd, const struct iovec *iov, size_t n, int advice)
{
	long ret = syscall(__NR_process_madvise, pidfd, iov, n, advice, 0);

	return ret < 0 ? -errno : ret;
}



int lg_range_mapped_mincore(const void *addr, size_t len)
{
	LG_KEEP_ERRNO;
	size_t page = lg_page_size();
	unsigned char vec[256];

	for (uintptr_t at = (uintptr_t)addr, end = at + len; at < end;) {
		size_t n = (end - at) / page < sizeof(vec) ? end - at : sizeof(vec) * page;

		if (mincore((void *)at, n, vec))
			return -errno;
		at += n;
	}
	return 0;
}

int lg_vma_open(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static atomic_bool no_procmap_query LG_HOT_DATA;
static atomic_bool procmap_env_read;

/*
 * Is PROCMAP_QUERY known to be missing? LIBGUARD_NO_PROCMAP_QUERY (tests,
 * benchmarks) makes a kernel that has it look like one before 6.11; it
 * weakens the record check, so a set-user-ID program does not take it.
 */
static LG_HOT bool procmap_off(void)
{
	if (__builtin_expect(!atomic_load_explicit(&procmap_env_read, memory_order_acquire), 0)) {
		const char *no = secure_getenv("LIBGUARD_NO_PROCMAP_QUERY");

		if (no && *no && strcmp(no, "0"))
			atomic_store_explicit(&no_procmap_query, true, memory_order_relaxed);
		atomic_store_explicit(&procmap_env_read, true, memory_order_release);
	}
	return atomic_load_explicit(&no_procmap_query, memory_order_relaxed);
}

/* Kernels before 6.11: the same answer from the text of the maps file. */
static int vma_find_text(uintptr_t addr, struct lg_vma *vma)
{
	LG_KEEP_ERRNO;
	struct lg_lines f;
	char *line;
	int ret = lg_lines_open(&f, "/proc/self/maps");

	while (!ret && (ret = lg_lines_next(&f, &line)) > 0) {
		struct lg_maps_line l;

		if (!lg_maps_parse(line, &l) && l.end > addr) {
			lg_maps_line_vma(&l, vma);
			break;
		}
		ret = 0;
	}
	lg_lines_close(&f);
	return ret;
}

/* The PROCMAP_QUERY q: 1 and *vma, 0 (nothing at or above), or -errno (ENOTTY: none). */
static LG_HOT int procmap_ask(int fd, struct lg_procmap_query *q, struct lg_vma *vma)
{
	int ret = lg_ioctl(fd, LG_PROCMAP_QUERY, q);

	if (ret)
		return ret == -ENOENT ? 0 : ret;
	lg_vg_defined(q, sizeof(*q));	/* the kernel wrote it */
	lg_procmap_vma(q, vma);
	return 1;
}

static LG_HOT int procmap_query(int fd, uintptr_t addr, struct lg_vma *vma)
{
	struct lg_procmap_query q;

	lg_procmap_request(&q, addr);
	return procmap_ask(fd, &q, vma);
}

/* The same, and the VMA's name into name. */
static int procmap_query_named(int fd, uintptr_t addr, struct lg_vma *vma, char *name,
			       size_t name_size)
{
	struct lg_procmap_query q;
	int ret;

	lg_procmap_request(&q, addr);
	q.vma_name_addr = (uintptr_t)name;
	q.vma_name_size = (__u32)name_size;
	name[0] = 0;
	ret = procmap_ask(fd, &q, vma);
	/* valgrind does not know the ioctl's name buffer */
	if (ret > 0 && q.vma_name_size <= name_size)
		lg_vg_defined(name, q.vma_name_size);
	return ret;
}

int lg_vma_find(int fd, uintptr_t addr, struct lg_vma *vma)
{
	int ret;

	if (procmap_off())
		return vma_find_text(addr, vma);
	ret = procmap_query(fd, addr, vma);
	if (!lg_procmap_absent(ret))
		return ret;
	atomic_store_explicit(&no_procmap_query, true, memory_order_relaxed);
	return vma_find_text(addr, vma);
}

/*
 * lg_vma_find() on the kept /proc/self/maps (proc.c), for callers holding
 * lg_lock(): one ioctl. An error from a descriptor that is no longer ours
 * (ENOTTY on another file) is not taken as the kernel's answer: the
 * descriptor is opened again, once.
 */
LG_HOT int lg_vma_at(uintptr_t addr, struct lg_vma *vma)
{
	for (int tries = 0;; tries++) {
		int fd, ret;

		/* before the kept descriptor: the text is read from a file of its own */
		if (procmap_off())
			return vma_find_text(addr, vma);
		fd = lg_proc_fd_locked(LG_PROC_MAPS);
		if (fd < 0)
			return fd;
		ret = procmap_query(fd, addr, vma);
		if (ret >= 0)
			return ret;
		if (!tries && lg_proc_lost_locked(LG_PROC_MAPS, fd))
			continue;
		if (lg_procmap_absent(ret)) {
			atomic_store_explicit(&no_procmap_query, true, memory_order_relaxed);
			return vma_find_text(addr, vma);
		}
		return ret;
	}
}

int lg_page_readable(uintptr_t addr)
{
	size_t page = lg_page_size();
	int ret = lg_madvise((void *)(addr & ~(page - 1)), page, MADV_POPULATE_READ);

	/*
	 * Faulting it in for reading: EINVAL where the VMA forbids it
	 * (PROT_NONE), EFAULT where a fault would (a native guard). A page
	 * that is readable is populated, as a read would.
	 */
	if (!ret)
		return 1;
	return ret == -EINVAL || ret == -EFAULT ? 0 : ret;
}

/* 0: not decided yet; 1: the weak check; 2: the exact one */
static atomic_int record_check LG_HOT_DATA;

static bool decide_record_check(void)
{
	const char *strict = getenv("LIBGUARD_STRICT_RECORDS");
	struct lg_vma v;
	bool weak;

	/* a first lookup finds out whether the kernel has PROCMAP_QUERY */
	if (!procmap_off())
		(void)lg_vma_at((uintptr_t)&record_check, &v);
	/*
	 * The weak check faults pages in (MADV_POPULATE_READ and _WRITE,
	 * Linux 5.14): only where that works, as on this stack's page.
	 */
	weak = procmap_off() && !(strict && *strict && strcmp(strict, "0")) &&
	       lg_page_readable((uintptr_t)&v) == 1 &&
	       /* a layer that answers madvise() without acting (libguard(7)) fails here */
	       lg_madvise(NULL, lg_page_size(), MADV_POPULATE_READ) == -ENOMEM &&
	       lg_madvise((void *)((uintptr_t)&v & ~(lg_page_size() - 1)), lg_page_size(),
			  MADV_POPULATE_WRITE) == 0;
	atomic_store_explicit(&record_check, weak ? 1 : 2, memory_order_relaxed);
	return weak;
}

LG_HOT bool lg_vma_weak(void)
{
	int c = atomic_load_explicit(&record_check, memory_order_relaxed);

	return __builtin_expect(c != 0, 1) ? c == 1 : decide_record_check();
}

/*
 * Of a private anonymous VMA whose memory the kernel will not discard
 * (MADV_DONTNEED: EINVAL), is it a special mapping ([vvar], [vdso]...:
 * VM_PFNMAP, VM_DONTEXPAND), as opposed to mlocked? Its name says so
 * without reading smaps: the kernel names special mappings "[...]", and
 * an ordinary anonymous VMA has no name, "[heap]", "[stack]" or
 * "[anon:...]". Anything else (a file, no PROCMAP_QUERY) asks smaps.
 */
int lg_vma_kind_at(uintptr_t addr, const struct lg_vma *vma)
{
	char name[64];
	struct lg_vma v;
	int fd, ret;

	if (vma->inode || vma->shared || procmap_off())
		return lg_vma_kind(vma->start, vma->end);
	fd = lg_proc_fd_locked(LG_PROC_MAPS);
	if (fd < 0)
		return lg_vma_kind(vma->start, vma->end);
	ret = procmap_query_named(fd, addr, &v, name, sizeof(name));
	if (ret <= 0 || v.start != vma->start || v.end != vma->end)
		return lg_vma_kind(vma->start, vma->end);
	if (!name[0] || !strcmp(name, "[heap]") || !strcmp(name, "[stack]") ||
	    !strncmp(name, "[anon:", 6))
		return LG_VM_LOCKED;
	return lg_vma_kind(vma->start, vma->end);
}

int lg_vma_kind(uintptr_t start, uintptr_t end)
{
	LG_KEEP_ERRNO;
	struct lg_lines f;
	char *line;
	bool inside = false;
	int kind = 0, ret = lg_lines_open(&f, "/proc/self/smaps");

	while (!ret && (ret = lg_lines_next(&f, &line)) > 0) {
		struct lg_maps_line l;

		if (!lg_maps_parse(line, &l))
			inside = l.start < end && l.end > start;
		else if (inside && !strncmp(line, "VmFlags:", 8))
			kind |= lg_vmflags_kind(line + 8);
		ret = 0;
	}
	lg_lines_close(&f);
	return ret < 0 ? ret : kind;
}
