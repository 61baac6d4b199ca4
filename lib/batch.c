// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_install_batch() and guard_remove_batch(): many ranges per system
 * call through process_madvise(), in chunks of IOV_MAX, with the one-range
 * path for whatever the kernel's batch can't do safely.
 *
 * process_madvise() reports progress in bytes and loses the error of the
 * range it stopped at, so that range goes through the one-range path,
 * which gives the real error (or falls back), and the batch resumes after
 * it. A multi-page install can stop inside a range (at a VMA that can't
 * have guards, or a hole), having guarded its first part; that part is
 * undone before the one-range path retries it, which needs to know what
 * was guarded before. With GUARD_FRESH nothing was. Without it, ranges in
 * ascending order that do not overlap go in the batch together after one
 * look over their whole span (one PAGEMAP_SCAN, as guard_install() makes
 * for one range), and the undo takes away only what the look did not
 * see; where the look can't be had (a hole in the span, a kernel that
 * can't report guards) or the ranges overlap, a range goes alone, with
 * guard_install()'s own look. One-page installs get a guard or nothing,
 * removals are what they are: both always go in the batch.
 *
 * No descriptor is opened per call: PIDFD_SELF, or a pidfd kept in
 * proc.c (a fork() child opens its own). A batch of one range is one
 * madvise(), cheaper than process_madvise().
 */
#include "internal.h"

#include <limits.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

/* How many of the n ranges a byte count returned by the kernel covers. */
static size_t ranges_done(const struct iovec *iov, size_t n, long bytes)
{
	size_t k = 0;

	for (size_t acc = 0; k < n && acc + iov[k].iov_len <= (size_t)bytes; k++)
		acc += iov[k].iov_len;
	return k;
}

static int check_all(const struct iovec *ranges, size_t count)
{
	if (count && !ranges)
		return -EINVAL;
	for (size_t i = 0; i < count; i++) {
		uintptr_t end;
		int ret = lg_check_range(ranges[i].iov_base, ranges[i].iov_len, &end);

		if (ret)
			return ret;
	}
	return 0;
}

static int one(int advice, const struct iovec *r, unsigned int flags)
{
	size_t page = lg_page_size();
	uintptr_t start = (uintptr_t)r->iov_base;
	uintptr_t end = start + ((r->iov_len + page - 1) & ~(page - 1));

	return advice == MADV_GUARD_INSTALL ? lg_install_one(start, end, flags, NULL)
					    : lg_remove_one(start, end, flags);
}

/* process_madvise() of n ranges: bytes done, or -errno; a lost pidfd is opened again once. */
static long kernel_batch(int *target, const struct iovec *v, size_t n, int advice)
{
	long got = lg_process_madvise(*target, v, n, advice);

	if (got == -EBADF && *target >= 0 && lg_proc_lost(LG_PROC_PIDFD, *target) &&
	    !lg_self_target(target))
		got = lg_process_madvise(*target, v, n, advice);
	return got;
}

static uintptr_t range_end(const struct iovec *r, size_t page)
{
	return (uintptr_t)r->iov_base + ((r->iov_len + page - 1) & ~(page - 1));
}

/*
 * How many of the n ranges, from the first, a looked-at batch takes:
 * ascending, none overlapping the one before (a later range's guards
 * must not be taken for an earlier one's to undo). Their span is looked at
 * once; 0 or 1 when that is not worth it or not possible.
 */
static size_t looked_group(const struct iovec *r, size_t n, size_t page, struct lg_runs *before)
{
	size_t k = 1;

	while (k < n && k < IOV_MAX && (uintptr_t)r[k].iov_base >= range_end(&r[k - 1], page))
		k++;
	if (k < 2)
		return k;
	before->n = 0;
	if (lg_install_snapshot((uintptr_t)r[0].iov_base, range_end(&r[k - 1], page), before))
		return 1;
	return k;
}

static int batch(const struct iovec *ranges, size_t count, unsigned int flags, size_t *done,
		 int advice, bool use_kernel)
{
	size_t page = lg_page_size(), i = 0;
	bool fresh = advice == MADV_GUARD_REMOVE || (flags & GUARD_FRESH);
	struct lg_runs before;
	int target = 0, ret = 0;

	lg_runs_init(&before);
	/* one copy of the maps file for the whole batch, where one is kept (vma_copy.c) */
	lg_copy_batch = lg_vma_copy_batch_id();
	use_kernel = use_kernel && count > 1 && (lg_caps() & GUARD_CAP_PROCESS_MADVISE) &&
		     !lg_self_target(&target);
	while (i < count) {
		size_t j = i, bytes = 0;
		bool looked = false;

		if (use_kernel && !fresh && ranges[i].iov_len > page) {
			/* Multi-page installs that may meet guards: look first. */
			j = i + looked_group(ranges + i, count - i, page, &before);
			looked = j - i > 1;
			for (size_t k = i; looked && k < j; k++)
				bytes += ranges[k].iov_len;
		} else {
			while (use_kernel && j < count && j - i < IOV_MAX &&
			       (fresh || ranges[j].iov_len <= page))
				bytes += ranges[j++].iov_len;
		}
		if (j - i > 1) {
			long got = kernel_batch(&target, ranges + i, j - i, advice);

			if (got == (long)bytes) {
				i = j;
				continue;
			}
			i += ranges_done(ranges + i, j - i, got > 0 ? got : 0);
			/* Stopped inside a range: what it guarded goes, and only that. */
			if (advice == MADV_GUARD_INSTALL && ranges[i].iov_len > page) {
				if (looked)
					lg_undo_install((uintptr_t)ranges[i].iov_base,
							range_end(&ranges[i], page), &before);
				else
					lg_madvise(ranges[i].iov_base, ranges[i].iov_len,
						   MADV_GUARD_REMOVE);
			}
		}
		ret = one(advice, &ranges[i], flags);
		if (ret)
			break;
		i++;
	}
	lg_runs_free(&before);
	lg_copy_batch = 0;
	if (done)
		*done = ret ? i : count;
	return ret;
}

/* Checks shared by both entry points: nothing is done on -EINVAL. */
static int batch_entry(const struct iovec *ranges, size_t count, unsigned int flags,
		       unsigned int allowed, size_t *done, bool *native)
{
	int ret = lg_native_policy(flags, allowed, native);

	if (done)
		*done = 0;
	return ret ? ret : check_all(ranges, count);
}

LG_EXPORT int guard_install_batch(const struct iovec *ranges, size_t count, unsigned int flags,
				  size_t *done)
{
	LG_KEEP_ERRNO;
	bool native;
	int ret = batch_entry(ranges, count, flags, LG_INSTALL_FLAGS, done, &native);

	return ret ? ret : batch(ranges, count, flags, done, MADV_GUARD_INSTALL, native);
}

LG_EXPORT int guard_remove_batch(const struct iovec *ranges, size_t count, unsigned int flags,
				 size_t *done)
{
	LG_KEEP_ERRNO;
	bool native;
	int ret = batch_entry(ranges, count, flags, LG_FLAGS_ALL, done, &native);

	/*
	 * The kernel's batch only knows native guards: with fallback records
	 * about, or native removal excluded, go range by range. The kernel
	 * batch does not check for holes first, the one-range path does.
	 */
	return ret ? ret
		   : batch(ranges, count, flags, done, MADV_GUARD_REMOVE,
			   !(flags & GUARD_FALLBACK) && !lg_fallback_any() &&
				   (lg_caps() & GUARD_CAP_NATIVE_MASK));
}
