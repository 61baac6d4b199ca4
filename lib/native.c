// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The native method beyond one page (install.c inlines the one-page
 * calls, nothing but the madvise()): the layout scan before a multi-page
 * install and the exact undo of a failed one, and removal around VMAs
 * that can't have guards.
 */
#include "internal.h"

#include <sys/mman.h>
#include <unistd.h>

static long scan_ioctl(void *ctx, struct lg_pm_scan_arg *arg)
{
	return lg_pagemap_scan(*(int *)ctx, arg);
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
		fd = lg_proc_fd(LG_PROC_PAGEMAP);
		if (fd < 0)
			return fd;
		before->n = 0;
		ret = lg_scan_layout(scan_ioctl, &fd, start, end, before);
		if (ret >= 0 || tries || !lg_proc_lost(LG_PROC_PAGEMAP, fd))
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

/*
 * Undo a failed install: remove guards between the runs that were guarded
 * before it, never on them. Removing everything and installing those runs
 * again would lose the ones the kernel refuses to install: a guard in an
 * mlocked VMA can be removed but not put back.
 */
void lg_undo_install(uintptr_t start, uintptr_t end, const struct lg_runs *before)
{
	uintptr_t at = start;

	for (size_t i = 0; i <= before->n && at < end; i++) {
		uintptr_t to = i < before->n && before->v[i].start < end ? before->v[i].start : end;

		if (to > at)
			lg_madvise((void *)at, to - at, MADV_GUARD_REMOVE);
		if (i < before->n && before->v[i].end > at)
			at = before->v[i].end;
	}
}

/*
 * madvise() walks the VMAs of the range in order and stops at the first it
 * can't guard, leaving the ones before it guarded; over a hole it guards
 * every mapped part and then fails with ENOMEM. What it did can't be
 * worked out afterwards: a page guarded before the call and one guarded
 * by it look the same, and discarded data is gone. So:
 *
 * One page lies in one VMA: it gets a guard or nothing happens, and the
 * kernel's answer is the whole check. This is the hot path: nothing but
 * the madvise().
 *
 * A longer range costs one PAGEMAP_SCAN first (pagemap.c), on a kept
 * descriptor: it finds holes (refused before anything is done) and notes
 * the guards already there, so that a failure removes exactly the guards
 * this call added. Without guard reporting (upstream 6.13, 6.14) the note
 * is empty and a failed call also removes guards that were there before
 * it, in the part it processed.
 *
 * GUARD_FRESH (fresh): the caller vouches that there are no guards yet,
 * so the note would be empty anyway: no scan, and the undo removes every
 * guard of the range. The scan is most of the cost of a short install
 * (80% of a 16-page madvise() on the bench host), and an allocator
 * guarding memory it has just mapped knows the answer; failures are rare
 * enough that their undo costs nothing that matters.
 */
int lg_native_install_range(uintptr_t start, uintptr_t end, bool fresh)
{
	struct lg_runs before;
	int ret;

	if (fresh) {
		ret = lg_madvise((void *)start, end - start, MADV_GUARD_INSTALL);
		if (ret)
			lg_madvise((void *)start, end - start, MADV_GUARD_REMOVE);
		return ret;
	}
	lg_runs_init(&before);
	ret = lg_install_snapshot(start, end, &before);
	if (ret && ret != -EOPNOTSUPP)
		goto out;
	ret = lg_madvise((void *)start, end - start, MADV_GUARD_INSTALL);
	if (ret)
		lg_undo_install(start, end, &before);
out:
	lg_runs_free(&before);
	return ret;
}

/*
 * A seccomp filter refused MADV_GUARD_REMOVE: nothing to do if the range
 * holds no native guard (installed before the filter, or by another
 * method), which the kernel's report says; otherwise the filter's error.
 * errno kept: the lookups may set it.
 */
int lg_native_remove_refused(uintptr_t start, uintptr_t end, int err)
{
	LG_KEEP_ERRNO;
	struct lg_runs runs;
	int ret;

	lg_runs_init(&runs);
	ret = lg_native_guards(start, end, &runs);
	if (!ret && runs.n)
		ret = err;
	lg_runs_free(&runs);
	return ret == -EOPNOTSUPP ? err : ret;
}

/*
 * Native removal stops at a VMA that can't have guards (EINVAL): go round
 * it, VMA by VMA.
 */
int lg_native_remove_around(uintptr_t start, uintptr_t end)
{
	uintptr_t at = start;
	int fd = lg_vma_open(), ret = 0;

	if (fd < 0)
		return fd;
	while (!ret && at < end) {
		struct lg_vma vma;

		ret = lg_vma_find(fd, at, &vma);
		if (ret <= 0 || vma.start >= end)
			break;
		if (vma.start > at)
			at = vma.start;
		vma.end = vma.end < end ? vma.end : end;
		ret = lg_madvise((void *)at, vma.end - at, MADV_GUARD_REMOVE);
		if (ret == -EINVAL)
			ret = 0;
		at = vma.end;
	}
	close(fd);
	return ret < 0 ? ret : 0;
}

