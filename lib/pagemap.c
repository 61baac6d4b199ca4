// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one PAGEMAP_SCAN that a multi-page native install needs before it
 * calls the kernel, on the kept /proc/self/pagemap (proc.c).
 */
#include "internal.h"

#include <unistd.h>

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
