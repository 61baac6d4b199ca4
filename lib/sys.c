// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * System call wrappers returning -errno, argument checks, and what the
 * library reads about VMAs: PROCMAP_QUERY where the kernel has it (6.11+),
 * /proc/self/maps otherwise, /proc/self/smaps only on error paths.
 */
#include "internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise 440
#endif

size_t lg_page_size(void)
{
	static atomic_size_t page;
	size_t p = atomic_load_explicit(&page, memory_order_relaxed);

	if (!p) {
		p = (size_t)sysconf(_SC_PAGESIZE);
		atomic_store_explicit(&page, p, memory_order_relaxed);
	}
	return p;
}

int lg_madvise(void *addr, size_t len, int advice)
{
	return madvise(addr, len, advice) ? -errno : 0;
}

int lg_mprotect(void *addr, size_t len, int prot)
{
	return mprotect(addr, len, prot) ? -errno : 0;
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

/* msync(MS_ASYNC) does nothing but walk the VMAs: ENOMEM on a hole. */
int lg_range_mapped(const void *addr, size_t len)
{
	return msync((void *)addr, len, MS_ASYNC) ? -errno : 0;
}

int lg_check_range(const void *addr, size_t len, uintptr_t *end)
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

int lg_vma_open(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static atomic_bool no_procmap_query;

static int prot_from_perms(const char *perms)
{
	return (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
	       (perms[2] == 'x' ? PROT_EXEC : 0);
}

/* Kernels before 6.11: the same answer from the text of the maps file. */
static int vma_find_text(uintptr_t addr, struct lg_vma *vma)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL, perms[5];
	size_t cap = 0;
	int found = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		uintptr_t s, e;

		unsigned long long off, ino;
		unsigned int maj, min;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %llx %x:%x %llu", &s, &e, perms, &off,
			   &maj, &min, &ino) != 7)
			continue;
		if (e > addr) {
			vma->start = s;
			vma->end = e;
			vma->prot = prot_from_perms(perms);
			vma->shared = perms[3] == 's';
			vma->pgoff = off;
			vma->inode = ino;
			vma->dev_major = maj;
			vma->dev_minor = min;
			found = 1;
			break;
		}
	}
	free(line);
	fclose(f);
	return found;
}

int lg_vma_find(int fd, uintptr_t addr, struct lg_vma *vma)
{
	struct lg_procmap_query q;

	if (atomic_load_explicit(&no_procmap_query, memory_order_relaxed))
		return vma_find_text(addr, vma);
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_flags = LG_PROCMAP_COVERING_OR_NEXT;
	q.query_addr = addr;
	if (ioctl(fd, LG_PROCMAP_QUERY, &q)) {
		if (errno == ENOENT)
			return 0;
		if (errno != ENOTTY && errno != EINVAL)
			return -errno;
		atomic_store_explicit(&no_procmap_query, true, memory_order_relaxed);
		return vma_find_text(addr, vma);
	}
	vma->start = q.vma_start;
	vma->end = q.vma_end;
	vma->prot = (q.vma_flags & LG_PROCMAP_READABLE ? PROT_READ : 0) |
		    (q.vma_flags & LG_PROCMAP_WRITABLE ? PROT_WRITE : 0) |
		    (q.vma_flags & LG_PROCMAP_EXECUTABLE ? PROT_EXEC : 0);
	vma->shared = q.vma_flags & LG_PROCMAP_SHARED;
	vma->pgoff = q.vma_offset;
	vma->inode = q.inode;
	vma->dev_major = q.dev_major;
	vma->dev_minor = q.dev_minor;
	return 1;
}

int lg_vma_count(uintptr_t start, uintptr_t end)
{
	int fd = lg_vma_open(), n = 0, ret = 0;
	struct lg_vma vma;

	if (fd < 0)
		return fd;
	for (uintptr_t at = start; at < end; at = vma.end) {
		ret = lg_vma_find(fd, at, &vma);
		if (ret <= 0 || vma.start >= end)
			break;
		n++;
	}
	close(fd);
	return ret < 0 ? ret : n;
}

static int vmflags_kind(const char *flags)
{
	static const struct {
		char name[3];
		int kind;
	} map[] = {
		{ "io", LG_VM_SPECIAL }, { "pf", LG_VM_SPECIAL }, { "mm", LG_VM_SPECIAL },
		{ "de", LG_VM_SPECIAL }, { "lo", LG_VM_LOCKED },  { "ht", LG_VM_HUGETLB },
	};
	int kind = 0;

	for (const char *p = flags; *p; p++) {
		if (p[0] == ' ' || p[0] == '\n' || !p[1])
			continue;
		for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
			if (p[0] == map[i].name[0] && p[1] == map[i].name[1] &&
			    (p[2] == ' ' || p[2] == '\n' || !p[2]))
				kind |= map[i].kind;
		p++;
	}
	return kind;
}

int lg_vma_kind(uintptr_t start, uintptr_t end)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char *line = NULL;
	size_t cap = 0;
	bool inside = false;
	int kind = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		uintptr_t s, e;
		char sp;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR "%c", &s, &e, &sp) == 3 && sp == ' ')
			inside = s < end && e > start;
		else if (inside && !strncmp(line, "VmFlags:", 8))
			kind |= vmflags_kind(line + 8);
	}
	free(line);
	fclose(f);
	return kind;
}
