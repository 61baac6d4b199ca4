// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Scaling: N guards one page apart (pages 1, 3, 5, ... of a 2N-page
 * anonymous mapping), installed by one madvise() per guard (native), by
 * process_madvise() in chunks of 1024 (native-batched), by one
 * mprotect(PROT_NONE) per guard (mprotect), and through libguard's
 * guard_install_batch() with GUARD_NATIVE and with GUARD_FALLBACK.
 * Reports ns_per_guard, the VMAs of the mapping afterwards (vmas) and of
 * the process (vmas_process), and failed_at_n where a method ran out of
 * VMAs (ENOMEM at vm.max_map_count).
 */
#include "bench.h"

#include <errno.h>
#include <guard.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { NATIVE, BATCHED, MPROTECT, LG_NATIVE, LG_FALLBACK, NMODES };
static const char *const names[NMODES] = { "native", "native-batched", "mprotect",
					   "libguard-native", "libguard-fallback" };

static int pidfd = -1;
static int unsupported[NMODES];	/* errno: the mode can't run here */

/* Install n guards by mode into a fresh mapping; time in *ns, guards done in *done. */
static int run_once(int mode, size_t n, struct iovec *iov, uint64_t *ns, size_t *done,
		    long *vmas, long *vmas_process)
{
	size_t page = bench_page(), len = 2 * n * page;
	char *base = bench_map(len);
	uint64_t t0;
	int ret = 0;

	for (size_t i = 0; i < n; i++)
		iov[i] = (struct iovec){ base + (2 * i + 1) * page, page };
	*done = n;
	t0 = bench_now_ns();
	switch (mode) {
	case NATIVE:
		for (size_t i = 0; i < n && !ret; i++)
			if (madvise(iov[i].iov_base, page, MADV_GUARD_INSTALL))
				ret = errno, *done = i;
		break;
	case BATCHED:
		ret = bench_pmadvise(pidfd, iov, n, MADV_GUARD_INSTALL);
		break;
	case MPROTECT:
		for (size_t i = 0; i < n && !ret; i++)
			if (mprotect(iov[i].iov_base, page, PROT_NONE))
				ret = errno, *done = i;
		break;
	case LG_NATIVE:
	case LG_FALLBACK:
		ret = -guard_install_batch(iov, n, mode == LG_NATIVE ? GUARD_NATIVE : GUARD_FALLBACK,
					   done);
		break;
	}
	*ns = bench_now_ns() - t0;
	if (vmas) {
		*vmas = bench_vmas((uintptr_t)base, (uintptr_t)base + len);
		*vmas_process = bench_vmas(0, 0);
	}
	/* libguard's record of fallback guards must go before the unmap */
	if (mode == LG_FALLBACK)
		guard_remove(base, len, GUARD_FALLBACK);
	munmap(base, len);
	return ret;
}

int main(int argc, char **argv)
{
	static const long full[] = { 10, 100, 1000, 10000, 30000, 100000, 1000000 };
	static const long quick[] = { 10, 100, 1000, 10000, 30000, 100000 };
	struct bench_opts o;
	const long *ns_set;
	size_t count;
	struct iovec *iov;
	int failed[NMODES][8] = { { 0 } };

	bench_parse(argc, argv, &o);
	ns_set = o.quick ? quick : full;
	count = o.quick ? sizeof(quick) / sizeof(quick[0]) : sizeof(full) / sizeof(full[0]);
	iov = calloc((size_t)ns_set[count - 1], sizeof(*iov));
	if (!iov)
		return 1;
	unsupported[NATIVE] = bench_native_anon();
	unsupported[BATCHED] = unsupported[NATIVE] ? unsupported[NATIVE] : bench_native_batch();
	unsupported[LG_NATIVE] = (guard_probe() & GUARD_CAP_ANON) ? 0 : EOPNOTSUPP;
	pidfd = bench_pidfd_self();
	for (int m = 0; m < NMODES; m++)
		if (unsupported[m])
			for (size_t k = 0; k < count; k++)
				bench_unsupported("scaling", names[m], ns_set[k], unsupported[m]);

	for (int rep = 1; rep <= o.reps; rep++) {
		for (size_t k = 0; k < count; k++) {
			size_t n = (size_t)ns_set[k];
			int inner = bench_inner(n, o.quick);

			for (int s = 0; s < NMODES; s++) {
				int m = bench_order(rep, s, NMODES);
				uint64_t total = 0;
				long vmas = 0, vmas_process = 0;
				size_t done = 0;
				int ret = 0;

				if (unsupported[m] || failed[m][k])
					continue;
				for (int i = 0; i < inner && !ret; i++) {
					uint64_t ns;

					ret = run_once(m, n, iov, &ns, &done,
						       rep == 1 && i == 0 ? &vmas : NULL, &vmas_process);
					total += ns;
				}
				if (ret) {
					failed[m][k] = ret;
					bench_emit("scaling", names[m], (long)n, "failed_at_n", 0,
						   (double)done, "guards");
					bench_emit("scaling", names[m], (long)n, "failed_errno", 0, ret,
						   "errno");
					bench_emit("scaling", names[m], (long)n, "vmas_process", 0,
						   vmas_process, "vmas");
					continue;
				}
				bench_emit("scaling", names[m], (long)n, "ns_per_guard", rep,
					   (double)total / ((double)n * inner), "ns");
				if (rep == 1) {
					bench_emit("scaling", names[m], (long)n, "vmas", 0, vmas, "vmas");
					bench_emit("scaling", names[m], (long)n, "vmas_process", 0,
						   vmas_process, "vmas");
				}
			}
		}
	}
	free(iov);
	return 0;
}
