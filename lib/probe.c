// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_probe(): what the running kernel can do, found once per process by
 * installing guards in scratch mappings of each kind and reading them back.
 * File mappings are tried on a file the process maps already (see
 * existing_file()), so that the answer needs no writable, disk-backed
 * directory.
 *
 * Under a seccomp filter (Seccomp: 2 in /proc/self/status) the probe makes
 * only the system calls guard_install() and guard_remove() make anyway
 * (libguard(7) lists them), so that a filter which allows those and kills
 * on the rest never kills in the probe: no process_madvise() or
 * pidfd_open() (the batches then go range by range), no statfs(), no
 * scratch file. Under valgrind, which does not know pidfd_open() or
 * process_madvise(), those two are left out as well.
 */
#include "internal.h"
#include "valgrind.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
/* See lg_probe_word(): read inline by every call, hence no pthread_once(). */
unsigned int lg_probed_word LG_HOT_DATA;

/* Map two pages of fd (or anonymous memory for fd < 0), guard the first. */
static void *guarded_scratch(int fd, int prot, int flags)
{
	size_t page = lg_page_size();
	char *map = mmap(NULL, 2 * page, prot, flags, fd, 0);

	if (map == MAP_FAILED)
		return NULL;
	if (prot & PROT_WRITE)
		memset(map, 0x5a, 2 * page);
	if (lg_madvise(map, page, MADV_GUARD_INSTALL)) {
		munmap(map, 2 * page);
		return NULL;
	}
	return map;
}

static bool pagemap_bit58(const void *addr)
{
	uint64_t entry = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = pread(fd, &entry, sizeof(entry), (off_t)((uintptr_t)addr / lg_page_size() * 8)) ==
		     (ssize_t)sizeof(entry) &&
	     (entry >> LG_PM_GUARD_REGION_BIT & 1);
	close(fd);
	return ok;
}

static bool pagemap_scan_guard(const char *addr)
{
	size_t page = lg_page_size();
	struct lg_page_region r[2];
	struct lg_pm_scan_arg arg = {
		.size = sizeof(arg),
		.start = (uintptr_t)addr,
		.end = (uintptr_t)addr + 2 * page,
		.vec = (uintptr_t)r,
		.vec_len = 2,
		.category_mask = LG_PAGE_IS_GUARD,
		.return_mask = LG_PAGE_IS_GUARD,
	};
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	long n;

	if (fd < 0)
		return false;
	n = lg_pagemap_scan(fd, &arg);
	close(fd);
	/* Exactly the guarded first page, and not its neighbour. */
	return n == 1 && r[0].start == (uintptr_t)addr && r[0].end == (uintptr_t)addr + page &&
	       (r[0].categories & LG_PAGE_IS_GUARD);
}

static bool process_madvise_guard(void)
{
	size_t page = lg_page_size();
	char *map = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec iov = { map, page };
	bool ok = false;
	int pidfd;

	if (map == MAP_FAILED)
		return false;
	pidfd = lg_pidfd_self();
	if (pidfd >= 0) {
		ok = lg_process_madvise(pidfd, &iov, 1, MADV_GUARD_INSTALL) == (long)page;
		close(pidfd);
	}
	munmap(map, page);
	return ok;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

/*
 * Does the guard at page really stop access? Something may acknowledge
 * MADV_GUARD_INSTALL without placing anything: qemu-user (which answers
 * madvise() with 0 for advice it does not know), or a seccomp filter whose
 * answer for madvise() is 0. Two kernel accesses of the page, in order:
 * MADV_POPULATE_READ (madvise() again, which every such layer lets
 * through: a real guard gives EFAULT, an emulator or a filter 0), then,
 * if that is refused, pread(2) of /proc/self/maps into the page (calls
 * the fallback makes anyway; only into a writable page, where EFAULT can
 * mean nothing but the guard). 1: it faults; 0: it does not (no native
 * guards); -1: neither check could be made (say, a filter that also
 * refuses both), and the kernel's word is taken. Cost, once a process:
 * one madvise() where the guard is real; see libguard(7).
 */
static int guard_blocks(char *page, bool writable)
{
	int ret = lg_madvise(page, lg_page_size(), MADV_POPULATE_READ);
	ssize_t n;
	int fd;

	if (ret == -EFAULT)
		return 1;
	if (ret == 0)
		return 0;
	if (!writable)
		return -1;
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = pread(fd, page, 1, 0);
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (n == 1)
		return 0;
	return ret == -EFAULT ? 1 : -1;
}

/* Set by probe_caps(): make only the calls libguard(7) lists for filters. */
static bool sandboxed;

/*
 * Is a seccomp filter on? Read from /proc/self/status with the calls the
 * fallback makes anyway; if it can't be read, assume one is.
 */
static bool seccomp_filtered(void)
{
	char buf[4096];
	size_t have = 0;
	ssize_t got = 0;
	const char *at;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return true;
	while (have < sizeof(buf) - 1 &&
	       (got = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0)
		have += (size_t)got;
	close(fd);
	/* read() refused (a filter may refuse it with an errno): can't tell. */
	if (got < 0)
		return true;
	buf[have] = 0;
	at = strstr(buf, "\nSeccomp:");
	if (!at)
		return have == sizeof(buf) - 1;	/* cut short: can't tell */
	at += strlen("\nSeccomp:");
	while (*at == ' ' || *at == '\t')
		at++;
	return *at == '2';
}

/* Under a filter, the library's own object is taken without statfs() (see libguard(7)). */
static bool page_cache_fs(int fd)
{
	struct statfs sfs;

	if (sandboxed)
		return true;
	return !fstatfs(fd, &sfs) && sfs.f_type != TMPFS_MAGIC && sfs.f_type != RAMFS_MAGIC;
}

/* path, read-only, if it is a file of two pages or more on a page-cache filesystem. */
static int open_existing(const char *path)
{
	struct stat st;
	int fd;

	if (!path || !*path)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size >= 2 * (off_t)lg_page_size() &&
	    page_cache_fs(fd))
		return fd;
	close(fd);
	return -1;
}

static int phdr_candidate(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(int *)data = open_existing(info->dlpi_name);
	return *(int *)data >= 0;
}

/*
 * A file the process maps already, opened read-only: the kernel's answer
 * for file mappings does not depend on where the temp dirs are (tmpfs on
 * Debian 13, in containers, in our guest) or on write access to any
 * directory. This library's own object first, then the program, then
 * any loaded object: the first on a page-cache filesystem.
 */
static int existing_file(void)
{
	Dl_info info;
	int fd = -1;

	if (dladdr((void *)guard_probe, &info) && info.dli_fname)
		fd = open_existing(info.dli_fname);
	if (fd < 0)
		fd = open_existing("/proc/self/exe");
	if (fd < 0)
		dl_iterate_phdr(phdr_candidate, &fd);
	return fd;
}

/* Only if no such file: a temporary one in a directory on such a filesystem, unlinked. */
static int scratch_file(void)
{
	const char *dirs[] = { getenv("LIBGUARD_PROBE_DIR"), getenv("TMPDIR"), "/var/tmp", "/tmp" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[PATH_MAX];
		struct statfs sfs;
		int fd;

		if (!dirs[i] || !*dirs[i] || statfs(dirs[i], &sfs) ||
		    sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)
			continue;
		if (snprintf(path, sizeof(path), "%s/libguard-probe-XXXXXX", dirs[i]) >=
		    (int)sizeof(path))
			continue;
		fd = mkostemp(path, O_CLOEXEC);
		if (fd < 0)
			continue;
		unlink(path);
		if (ftruncate(fd, 2 * (off_t)lg_page_size())) {
			close(fd);
			continue;
		}
		return fd;
	}
	return -1;
}

/* A read-only descriptor for the same file. */
static int reopen_rdonly(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/*
 * GUARD_CAP_FILE and GUARD_CAP_READONLY. On an existing file: a private
 * mapping (a page-cache file VMA that may be written, VM_MAYWRITE, as a
 * MAP_SHARED read-write one) and a shared PROT_READ one of the O_RDONLY
 * descriptor (no VM_MAYWRITE: the read-only case). On a created file,
 * as before: shared read-write, and shared read-only through a second,
 * read-only descriptor.
 */
static unsigned int probe_file(char **file, char **ro)
{
	unsigned int caps = 0;
	int fd = existing_file(), rofd;
	bool existing = fd >= 0;

	if (!existing && !sandboxed)
		fd = scratch_file();
	if (fd < 0)
		return 0;
	*file = guarded_scratch(fd, existing ? PROT_READ : PROT_READ | PROT_WRITE,
				existing ? MAP_PRIVATE : MAP_SHARED);
	if (*file)
		caps |= GUARD_CAP_FILE;
	rofd = existing ? fd : reopen_rdonly(fd);
	if (rofd >= 0) {
		*ro = guarded_scratch(rofd, PROT_READ, MAP_SHARED);
		if (*ro)
			caps |= GUARD_CAP_READONLY;
		if (rofd != fd)
			close(rofd);
	}
	close(fd);
	return caps;
}

static unsigned int probe_caps(void)
{
	size_t page = lg_page_size();
	unsigned int caps = 0;
	char *seen = NULL;	/* some guarded page, to read back */
	char *anon, *shm, *file = NULL, *ro = NULL;

	sandboxed = seccomp_filtered();
	anon = guarded_scratch(-1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	if (anon) {
		caps |= GUARD_CAP_ANON;
		seen = anon;
	}
	/* Shared anonymous memory is shmem, as a memfd is: no memfd_create() needed. */
	shm = guarded_scratch(-1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
	if (shm) {
		caps |= GUARD_CAP_SHMEM;
		seen = seen ? seen : shm;
	}
	caps |= probe_file(&file, &ro);
	if (file)
		seen = seen ? seen : file;
	if (ro)
		seen = seen ? seen : ro;

	/* One layer acknowledges guard advice for every kind of memory alike. */
	if (seen && !guard_blocks(seen, seen == anon || seen == shm)) {
		caps = 0;
		seen = NULL;
	}
	/* Reporting can only be tested on a guard that exists. */
	if (seen && pagemap_bit58(seen) && !pagemap_bit58(seen + page))
		caps |= GUARD_CAP_PAGEMAP;
	if (seen && pagemap_scan_guard(seen))
		caps |= GUARD_CAP_PAGEMAP_SCAN;
	if ((caps & GUARD_CAP_NATIVE_MASK) && !sandboxed && !lg_vg_running() &&
	    process_madvise_guard())
		caps |= GUARD_CAP_PROCESS_MADVISE;

	for (char **m = (char *[]){ anon, shm, file, ro }, **e = m + 4; m < e; m++)
		if (*m)
			munmap(*m, 2 * page);
	return caps;
}

static void probe_once_fn(void)
{
	const char *force = getenv("LIBGUARD_FORCE_FALLBACK");
	bool forced = force && *force && strcmp(force, "0") != 0;
	int saved = errno;

	__atomic_store_n(&lg_probed_word,
			 probe_caps() | LG_PROBED | (forced ? LG_FORCED : 0) |
				 (lg_vg_running() ? LG_VALGRIND : 0),
			 __ATOMIC_RELEASE);
	errno = saved;
}

unsigned int lg_probe_slow(void)
{
	pthread_once(&probe_once, probe_once_fn);
	return __atomic_load_n(&lg_probed_word, __ATOMIC_ACQUIRE);
}

LG_EXPORT unsigned int guard_probe(void)
{
	LG_KEEP_ERRNO;

	return lg_caps();
}
