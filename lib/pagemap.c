// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The process's own /proc/self/pagemap, opened once and kept, and the one
 * PAGEMAP_SCAN that a multi-page native install needs before it calls the
 * kernel.
 *
 * Why keep it: opening a /proc file costs more than the madvise() it
 * serves (two system calls, a path walk and an mm lookup: 4 us or more
 * against 1.5 us for a 16-page install on the bench host). Why it is safe to
 * keep: the descriptor names the mm it was opened in, so a fork() child
 * must not use its parent's; the atfork child handler (fallback.c) drops
 * it there, and the child opens its own on first use. It is O_CLOEXEC,
 * so exec drops it too. A program that closes descriptors it does not own
 * (closefrom() in a daemon) can leave the number naming another file:
 * every error from it is checked against the inode it was opened as, and
 * a descriptor that is no longer ours is forgotten (not closed: the number
 * is someone else's now) and opened again, once.
 */
#include "internal.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_int cached = -1;	/* written under lg_lock(), read without */
static dev_t cached_dev;
static ino_t cached_ino;

int lg_pagemap_fd(void)
{
	int fd = atomic_load_explicit(&cached, memory_order_acquire);
	struct stat st;

	if (fd >= 0)
		return fd;
	/* lg_lock() also registers the handler that drops it after fork(). */
	lg_lock();
	fd = atomic_load_explicit(&cached, memory_order_relaxed);
	if (fd < 0) {
		fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fd = -errno;
		} else if (fstat(fd, &st)) {
			int err = errno;

			close(fd);
			fd = -err;
		} else {
			cached_dev = st.st_dev;
			cached_ino = st.st_ino;
			atomic_store_explicit(&cached, fd, memory_order_release);
		}
	}
	lg_unlock();
	return fd;
}

bool lg_pagemap_lost(int fd)
{
	struct stat st;
	bool lost = false;

	lg_lock();
	if (atomic_load_explicit(&cached, memory_order_relaxed) != fd) {
		lost = true;	/* another thread found it so and opened anew */
	} else if (fstat(fd, &st) || st.st_dev != cached_dev || st.st_ino != cached_ino) {
		atomic_store_explicit(&cached, -1, memory_order_relaxed);
		lost = true;
	}
	lg_unlock();
	return lost;
}

/* Called in the child of fork(), with lg_lock() held, one thread running. */
void lg_pagemap_after_fork_child(void)
{
	int fd = atomic_exchange_explicit(&cached, -1, memory_order_relaxed);

	if (fd >= 0)
		close(fd);	/* the child's copy of the parent's */
}

int lg_scan_layout(lg_scan_fn *scan, void *ctx, uintptr_t start, uintptr_t end,
		   struct lg_runs *guards)
{
	uintptr_t page_mask = lg_page_size() - 1, at = start, covered = start;
	struct lg_page_region r[64];
	int gap = 0;

	while (at < end) {
		struct lg_pm_scan_arg arg = {
			.size = sizeof(arg),
			.start = at,
			.end = end,
			.vec = (uintptr_t)r,
			.vec_len = sizeof(r) / sizeof(r[0]),
			.return_mask = LG_PAGE_IS_GUARD,
		};
		long n = scan(ctx, &arg);
		uintptr_t walked;

		if (n < 0)
			return (int)n;
		if ((unsigned long)n > sizeof(r) / sizeof(r[0]) || arg.walk_end <= at)
			return -EIO;
		walked = arg.walk_end < end ? (uintptr_t)arg.walk_end : end;
		for (long i = 0; i < n; i++) {
			int ret = 0;

			if (!lg_region_ok(&r[i], covered, walked, page_mask))
				return -EIO;
			gap |= r[i].start > covered;
			if (r[i].categories & LG_PAGE_IS_GUARD)
				ret = lg_runs_add(guards, r[i].start, r[i].end);
			if (ret)
				return ret;
			covered = r[i].end;
		}
		gap |= covered < walked;
		covered = at = walked;
	}
	return gap;
}

static long scan_ioctl(void *ctx, struct lg_pm_scan_arg *arg)
{
	long n = ioctl(*(int *)ctx, LG_PAGEMAP_SCAN, arg);

	return n < 0 ? -errno : n;
}

int lg_install_snapshot(uintptr_t start, uintptr_t end, struct lg_runs *before)
{
	unsigned int caps = lg_caps();
	int fd, ret, mapped;

	if (!(caps & GUARD_CAP_PAGEMAP_SCAN)) {
		/* Older reporting (pagemap bit 58), or none: check, then read. */
		ret = lg_range_mapped((void *)start, end - start);
		return ret ? ret : lg_native_guards(start, end, before);
	}
	for (int tries = 0;; tries++) {
		fd = lg_pagemap_fd();
		if (fd < 0)
			return fd;
		before->n = 0;
		ret = lg_scan_layout(scan_ioctl, &fd, start, end, before);
		if (ret >= 0 || tries || !lg_pagemap_lost(fd))
			break;
	}
	if (!ret)
		return 0;
	/*
	 * Something was not reported: a hole (-ENOMEM), or a VMA the scan
	 * skips. Or the scan refused the range (-EFAULT above the user address
	 * space): msync() gives the answer guard_install() documents.
	 */
	mapped = lg_range_mapped((void *)start, end - start);
	return ret == 1 || mapped ? mapped : ret;
}
