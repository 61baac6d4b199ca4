// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libguard's overhead: the library call against the raw system call on
 * the same ranges of the same mapping, one after the other in every
 * repetition (order alternating), after an untimed warm-up pass that
 * leaves the page tables in place.
 *   overhead-install-1p   guard_install(p, 1 page, 0) vs madvise(MADV_GUARD_INSTALL)
 *   overhead-install-16p  the same on 16-page ranges, one page apart
 *   overhead-batch        guard_install_batch(0) vs process_madvise() in chunks of 1024
 *   overhead-remove       guard_remove(p, 1 page, 0) vs madvise(MADV_GUARD_REMOVE)
 * The raw column is "native" ("native-batched" for the batch), the
 * library's "libguard-native". ns_per_guard, per range.
 *
 * For the 16-page case two more things run side by side, as the floor of
 * what any check before the madvise() can cost: a system call that does
 * nothing (getppid, metric ns_null_syscall) and the PAGEMAP_SCAN of the
 * range that guard_install() does (ns_pagemap_scan), each once per range.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <guard.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The uapi of PAGEMAP_SCAN (Linux 6.7), which Debian 12's headers lack. */
struct scan_region {
	uint64_t start, end, categories;
};

struct scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define SCAN_IOCTL _IOWR('f', 16, struct scan_arg)
#define SCAN_IS_GUARD (1ull << 8)

enum { INSTALL_1P, INSTALL_16P, BATCH, REMOVE, NCASES };
static const char *const cases[NCASES] = { "overhead-install-1p", "overhead-install-16p",
					   "overhead-batch", "overhead-remove" };

static int pidfd = -1, pagemap_fd = -1;

enum { SLOT_RAW, SLOT_LIB, SLOT_NULL, SLOT_SCAN, NSLOTS };

/* The floor slots: n null system calls, or n scans of the ranges. */
static int floor_pass(int slot, const struct iovec *iov, size_t n)
{
	struct scan_region r[16];

	for (size_t i = 0; i < n; i++) {
		struct scan_arg a = {
			.size = sizeof(a),
			.start = (uintptr_t)iov[i].iov_base,
			.end = (uintptr_t)iov[i].iov_base + iov[i].iov_len,
			.vec = (uintptr_t)r,
			.vec_len = sizeof(r) / sizeof(r[0]),
			.return_mask = SCAN_IS_GUARD,
		};

		if (slot == SLOT_NULL)
			syscall(SYS_getppid);
		else if (ioctl(pagemap_fd, SCAN_IOCTL, &a) < 0)
			return errno;
	}
	return 0;
}

/* Guard (or unguard) the n ranges, raw or through libguard: errno or 0. */
static int pass(int c, int lib, const struct iovec *iov, size_t n)
{
	int advice = c == REMOVE ? MADV_GUARD_REMOVE : MADV_GUARD_INSTALL;

	if (c == BATCH)
		return lib ? -guard_install_batch(iov, n, 0, NULL)
			   : bench_pmadvise(pidfd, iov, n, advice);
	for (size_t i = 0; i < n; i++) {
		int ret;

		if (!lib)
			ret = madvise(iov[i].iov_base, iov[i].iov_len, advice) ? errno : 0;
		else if (c == REMOVE)
			ret = -guard_remove(iov[i].iov_base, iov[i].iov_len, 0);
		else
			ret = -guard_install(iov[i].iov_base, iov[i].iov_len, 0);
		if (ret)
			return ret;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	size_t page = bench_page(), n = 10000;
	int err = bench_native_anon(), berr;

	bench_parse(argc, argv, &o);
	if (o.quick)
		n = 2000;
	berr = err ? err : bench_native_batch();
	pidfd = bench_pidfd_self();
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	for (int c = 0; c < NCASES; c++) {
		size_t pages = c == INSTALL_16P ? 16 : 1, cn = c == INSTALL_16P ? n / 8 : n;
		size_t len = cn * (pages + 1) * page;
		const char *raw = c == BATCH ? "native-batched" : "native";
		int e = c == BATCH ? berr : err;
		struct iovec *iov;
		char *base;

		if (o.only && strcmp(o.only, cases[c]))
			continue;
		if (e || !(guard_probe() & GUARD_CAP_ANON)) {
			bench_unsupported(cases[c], raw, (long)cn, e ? e : EOPNOTSUPP);
			bench_unsupported(cases[c], "libguard-native", (long)cn, e ? e : EOPNOTSUPP);
			continue;
		}
		iov = calloc(cn, sizeof(*iov));
		if (!iov)
			return 1;
		base = bench_map(len);
		for (size_t i = 0; i < cn; i++)
			iov[i] = (struct iovec){ base + (i * (pages + 1) + 1) * page, pages * page };
		/* warm-up: page tables allocated, library initialized */
		pass(c, 0, iov, cn);
		pass(c, 1, iov, cn);
		madvise(base, len, MADV_GUARD_REMOVE);
		/* three times the repetitions: the 5% target needs a tight median */
		for (int rep = 1; rep <= 3 * o.reps; rep++) {
			/* Without pagemap (no /proc), no floor: the two main slots only. */
			int nslots = c == INSTALL_16P && pagemap_fd >= 0 ? NSLOTS : 2;

			for (int s = 0; s < nslots; s++) {
				int slot = bench_order(rep, s, nslots), ret;
				bool lib = slot == SLOT_LIB;
				uint64_t t0;

				if (c == REMOVE)
					pass(INSTALL_1P, 0, iov, cn);
				t0 = bench_now_ns();
				ret = slot >= SLOT_NULL ? floor_pass(slot, iov, cn) : pass(c, lib, iov, cn);
				t0 = bench_now_ns() - t0;
				if (ret) {
					fprintf(stderr, "overhead: %s: %s\n", cases[c], strerror(ret));
					return 1;
				}
				if (slot >= SLOT_NULL) {
					bench_emit(cases[c], raw, (long)cn,
						   slot == SLOT_NULL ? "ns_null_syscall" : "ns_pagemap_scan",
						   rep, (double)t0 / cn, "ns");
					continue;
				}
				bench_emit(cases[c], lib ? "libguard-native" : raw, (long)cn,
					   "ns_per_guard", rep, (double)t0 / cn, "ns");
				if (c != REMOVE)
					madvise(base, len, MADV_GUARD_REMOVE);
			}
		}
		munmap(base, len);
		free(iov);
	}
	return 0;
}
