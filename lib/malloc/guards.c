// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pool's system calls, and nothing else. Native: the pool is one
 * read-write mapping with a guard on every page (one VMA however many
 * slots); a slot opens with MADV_GUARD_REMOVE and closes with
 * MADV_GUARD_INSTALL, which also frees its memory. Fallback: the pool is
 * PROT_NONE; a slot opens with mprotect(PROT_READ|PROT_WRITE) (two VMAs
 * while it is live) and closes with mprotect(PROT_NONE) and MADV_DONTNEED
 * (the VMAs merge back). The pool is ours alone, so it needs none of
 * libguard's records; and the first allocation of a process is too early
 * for guard_probe(), which opens files and calls into ld.so: the probe
 * here is the one call that matters, tried on the pool itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gm.h"
#include "guard.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

unsigned int gm_method;

/*
 * Reserve len bytes for the pool, and set gm_method. Native: read-write,
 * its first page (the guard before slot 0) guarded; gm_guards_extend()
 * guards the rest as slots come into use, so that a pool of a million
 * slots costs no page tables until it is used. Native guards are
 * trusted only once one is seen to stop an access: MADV_POPULATE_READ
 * of a guard gives EFAULT (an emulator that acknowledges the advice
 * without acting would let the read through). Fallback: every page
 * PROT_NONE from the start.
 */
void *gm_guards_reserve(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	if (!gm_opt.force_fallback) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		madvise(p, len, MADV_NOHUGEPAGE);	/* a slot's page must not come as 2 MiB */
		if (!madvise(p, page, MADV_GUARD_INSTALL) &&
		    madvise(p, page, MADV_POPULATE_READ) && errno == EFAULT) {
			gm_method = GUARD_METHOD_NATIVE;
			return p;
		}
		munmap(p, len);
	}
	/*
	 * One write before the pool becomes PROT_NONE gives the whole VMA its
	 * anon_vma: the pieces a live slot splits off then share it, and a
	 * freed slot's VMAs merge back. (A slot first written after a split
	 * gets an anon_vma of its own and stays a VMA apart for good.)
	 */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_NOHUGEPAGE);
	*(volatile char *)p = 0;
	madvise(p, (size_t)sysconf(_SC_PAGESIZE), MADV_DONTNEED);
	if (mprotect(p, len, PROT_NONE)) {
		munmap(p, len);
		return NULL;
	}
	gm_method = GUARD_METHOD_FALLBACK;
	return p;
}

/* Guard a part of the pool not used yet (native); the fallback's is PROT_NONE already. */
int gm_guards_extend(void *addr, size_t len)
{
	if (gm_method != GUARD_METHOD_NATIVE)
		return 0;
	return gm_guards_close(addr, len);
}

int gm_guards_open(void *addr, size_t len)
{
	if (gm_method == GUARD_METHOD_NATIVE)
		return madvise(addr, len, MADV_GUARD_REMOVE) ? -errno : 0;
	return mprotect(addr, len, PROT_READ | PROT_WRITE) ? -errno : 0;
}

int gm_guards_close(void *addr, size_t len)
{
	if (gm_method == GUARD_METHOD_NATIVE) {
		int tries = 0, ret;

		/* The kernel may give up on a racing fault (EAGAIN) or a signal (EINTR). */
		while ((ret = madvise(addr, len, MADV_GUARD_INSTALL) ? -errno : 0) &&
		       (ret == -EAGAIN || ret == -EINTR) && ++tries < 100)
			;
		return ret;
	}
	if (mprotect(addr, len, PROT_NONE))
		return -errno;
	madvise(addr, len, MADV_DONTNEED);
	return 0;
}

/*
 * The fallback's most live slots: each live slot splits the pool twice
 * (two VMAs more), so a quarter of vm.max_map_count leaves the program
 * half of it. Native: no limit but the pool's size.
 */
size_t gm_guards_cap(void)
{
	char buf[32];
	unsigned long v = 0;
	ssize_t n = -1;
	int fd;

	if (gm_method == GUARD_METHOD_NATIVE)
		return SIZE_MAX;
	fd = open("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (unsigned long)(buf[i] - '0');
	if (!v)
		v = 65530;	/* the kernel's default */
	return v / 4 > 16 ? v / 4 : 16;
}
