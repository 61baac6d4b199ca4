// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_install_batch() and guard_remove_batch(): many ranges per system
 * call through process_madvise(), in chunks of IOV_MAX, with the one-range
 * path for whatever the kernel's batch can't do safely.
 *
 * process_madvise() reports progress in bytes and loses the error of the
 * range it stopped at, so that range goes through the one-range path,
 * which gives the real error (or falls back), and the batch resumes after
 * it. Installs are batched only for single-page ranges: those either get a
 * guard or nothing, so a stop never leaves one half done; longer ranges
 * need the rollback of guard_install().
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

typedef int one_fn(uintptr_t start, uintptr_t end, unsigned int flags);

static int batch(const struct iovec *ranges, size_t count, unsigned int flags, size_t *done,
		 int advice, bool use_kernel)
{
	size_t page = lg_page_size(), i = 0;
	one_fn *one = advice == MADV_GUARD_INSTALL ? lg_install_one : lg_remove_one;
	int pidfd = -1, ret = 0;

	if (use_kernel && (lg_caps() & GUARD_CAP_PROCESS_MADVISE))
		pidfd = lg_pidfd_self();
	while (i < count) {
		size_t j = i, bytes = 0;

		/* install: only single pages; remove: any range */
		while (pidfd >= 0 && j < count && j - i < IOV_MAX &&
		       (advice == MADV_GUARD_REMOVE || ranges[j].iov_len <= page))
			bytes += ranges[j++].iov_len;
		if (j > i) {
			long got = lg_process_madvise(pidfd, ranges + i, j - i, advice);

			if (got == (long)bytes) {
				i = j;
				continue;
			}
			i += ranges_done(ranges + i, j - i, got > 0 ? got : 0);
		}
		ret = one((uintptr_t)ranges[i].iov_base,
			  (uintptr_t)ranges[i].iov_base +
				  ((ranges[i].iov_len + page - 1) & ~(page - 1)),
			  flags);
		if (ret)
			break;
		i++;
	}
	if (pidfd >= 0)
		close(pidfd);
	if (done)
		*done = ret ? i : count;
	return ret;
}

/* Checks shared by both entry points: nothing is done on -EINVAL. */
static int batch_entry(const struct iovec *ranges, size_t count, unsigned int flags,
		       size_t *done, bool *native)
{
	int ret = lg_native_policy(flags, native);

	if (done)
		*done = 0;
	return ret ? ret : check_all(ranges, count);
}

LG_EXPORT int guard_install_batch(const struct iovec *ranges, size_t count, unsigned int flags,
				  size_t *done)
{
	LG_KEEP_ERRNO;
	bool native;
	int ret = batch_entry(ranges, count, flags, done, &native);

	return ret ? ret : batch(ranges, count, flags, done, MADV_GUARD_INSTALL, native);
}

LG_EXPORT int guard_remove_batch(const struct iovec *ranges, size_t count, unsigned int flags,
				 size_t *done)
{
	LG_KEEP_ERRNO;
	bool native;
	int ret = batch_entry(ranges, count, flags, done, &native);

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
