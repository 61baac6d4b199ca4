// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libguard's overhead: each library call against the raw system call it
 * wraps, on the same ranges of the same mapping, one after the other in
 * every repetition (order rotating), after an untimed warm-up pass that
 * leaves the page tables in place. ns_per_guard is per range (per mapping
 * for overhead-map).
 *   overhead-install-Pp   guard_install() of P-page ranges (GUARD_FRESH
 *                         beyond one page) vs madvise(MADV_GUARD_INSTALL);
 *                         mode libguard-look: guard_install(0), which
 *                         looks at the range first (PAGEMAP_SCAN)
 *   overhead-remove-Pp    guard_remove() vs madvise(MADV_GUARD_REMOVE)
 *   overhead-batch-BxPp   guard_install_batch() of B ranges of P pages per
 *                         call (GUARD_FRESH beyond one page) vs
 *                         process_madvise() of the same iovec; mode
 *                         libguard-look: flags 0, which looks at the
 *                         ranges first (64x4p only: issue 28, item 6)
 *   overhead-map          guard_map_anon() + guard_unmap() of 16 pages with
 *                         a page of guard either side vs mmap() + two
 *                         madvise() + munmap() by hand
 * The raw mode is "native" ("native-batched" for the batches), the
 * library's "libguard-native".
 *
 * Floors, measured side by side once per range, of what a check before the
 * madvise() costs: a system call that does nothing (getppid, metric
 * ns_null_syscall); for installs the PAGEMAP_SCAN of the range that
 * guard_install(0) does (ns_pagemap_scan); for removals of more than one
 * page the hole check guard_remove() makes so that a range with a hole is
 * refused before any guard is gone (msync(MS_ASYNC), ns_hole_check); for
 * guard_map_anon(), the lock its registry takes twice (ns_registry_lock).
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

enum kind { INSTALL, REMOVE, BATCH, MAP };

struct ocase {
	enum kind kind;
	size_t pages;	/* per range */
	size_t per_call;	/* ranges per batch call */
	size_t n, quick_n;	/* ranges (mappings) per pass */
};

static const struct ocase cases[] = {
	{ INSTALL, 1, 1, 10000, 2000 },	 { INSTALL, 4, 1, 4000, 1000 },
	{ INSTALL, 16, 1, 1250, 400 },	 { INSTALL, 512, 1, 64, 16 },
	{ REMOVE, 1, 1, 10000, 2000 },	 { REMOVE, 4, 1, 4000, 1000 },
	{ REMOVE, 16, 1, 1250, 400 },	 { REMOVE, 512, 1, 64, 16 },
	{ BATCH, 1, 1, 2048, 512 },	 { BATCH, 1, 16, 2048, 512 },
	{ BATCH, 1, 1024, 4096, 2048 },	 { BATCH, 4, 1, 2048, 512 },
	{ BATCH, 4, 16, 2048, 512 },	 { BATCH, 4, 1024, 4096, 2048 },
	{ BATCH, 4, 64, 2048, 512 },
	/*
	 * Full size under --quick too: at 300 mappings a pass, TCG's scatter
	 * between repetitions (±3-5 pp) was as large as the 5% it measures.
	 */
	{ MAP, 16, 1, 2000, 2000 },
};

enum slot { SLOT_RAW, SLOT_LIB, SLOT_LOOK, SLOT_NULL, SLOT_SCAN, SLOT_HOLE, SLOT_LOCK, NSLOTS };
static const char *const slot_mode[NSLOTS] = { "native", "libguard-native", "libguard-look",
					       "native", "native", "native", "native" };
static const char *const floor_metric[NSLOTS] = { [SLOT_NULL] = "ns_null_syscall",
						  [SLOT_SCAN] = "ns_pagemap_scan",
						  [SLOT_HOLE] = "ns_hole_check",
						  [SLOT_LOCK] = "ns_registry_lock" };

static int pidfd = -1, pagemap_fd = -1;
static size_t page;

static void case_name(const struct ocase *c, char *buf, size_t len)
{
	switch (c->kind) {
	case INSTALL:
	case REMOVE:
		snprintf(buf, len, "overhead-%s-%zup", c->kind == INSTALL ? "install" : "remove",
			 c->pages);
		break;
	case BATCH:
		snprintf(buf, len, "overhead-batch-%zux%zup", c->per_call, c->pages);
		break;
	case MAP:
		snprintf(buf, len, "overhead-map");
		break;
	}
}

/* The floor slots: n null system calls, or n scans of the ranges. */
static int floor_pass(enum slot slot, const struct iovec *iov, size_t n)
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
		else if (slot == SLOT_HOLE)
			msync(iov[i].iov_base, iov[i].iov_len, MS_ASYNC);
		else if (ioctl(pagemap_fd, SCAN_IOCTL, &a) < 0)
			return errno;
	}
	return 0;
}

/*
 * The floor of guard_map_anon()'s registry, which lets guard_unmap() undo
 * a mapping from (addr, len): the library's mutex (lib/lock.c, a futex
 * word: one atomic to take, one to give back) taken and released once to
 * add the entry and once to take it back, per mapping.
 */
static int lock_pass(size_t n)
{
	static int word;

	for (size_t i = 0; i < 2 * n; i++) {
		int c = 0;

		__atomic_compare_exchange_n(&word, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
		__atomic_exchange_n(&word, 0, __ATOMIC_RELEASE);
	}
	return 0;
}

/* n mappings of 16 pages and a guard page either side, made and unmade. */
static int map_pass(bool lib, size_t n)
{
	size_t len = 16 * page;

	for (size_t i = 0; i < n; i++) {
		char *p;

		if (lib) {
			p = guard_map_anon(len, PROT_READ | PROT_WRITE, MAP_PRIVATE, page, page, 0,
					   NULL);
			if (p == MAP_FAILED || guard_unmap(p, len))
				return errno ? errno : EIO;
			continue;
		}
		p = mmap(NULL, len + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		if (p == MAP_FAILED || madvise(p + page + len, page, MADV_GUARD_INSTALL) ||
		    madvise(p, page, MADV_GUARD_INSTALL) || munmap(p, len + 2 * page))
			return errno;
	}
	return 0;
}

/* One pass of a slot over the ranges: 0 or errno. */
static int pass(const struct ocase *c, enum slot slot, const struct iovec *iov, size_t n)
{
	int advice = c->kind == REMOVE ? MADV_GUARD_REMOVE : MADV_GUARD_INSTALL;
	unsigned int fresh = c->pages > 1 ? GUARD_FRESH : 0;

	if (slot == SLOT_LOCK)
		return lock_pass(n);
	if (slot >= SLOT_NULL)
		return floor_pass(slot, iov, n);
	if (c->kind == MAP)
		return map_pass(slot == SLOT_LIB, n);
	for (size_t i = 0; i < n; i += c->per_call) {
		size_t k = n - i < c->per_call ? n - i : c->per_call;
		int ret;

		if (c->kind == BATCH)
			ret = slot == SLOT_RAW ? bench_pmadvise(pidfd, iov + i, k, advice)
					       : -guard_install_batch(iov + i, k,
								      slot == SLOT_LOOK ? 0 : fresh, NULL);
		else if (slot == SLOT_RAW)
			ret = madvise(iov[i].iov_base, iov[i].iov_len, advice) ? errno : 0;
		else if (c->kind == REMOVE)
			ret = -guard_remove(iov[i].iov_base, iov[i].iov_len, 0);
		else
			ret = -guard_install(iov[i].iov_base, iov[i].iov_len,
					     slot == SLOT_LOOK ? 0 : fresh);
		if (ret)
			return ret;
	}
	return 0;
}

/* The slots a case measures, in *slots; their number. */
static int case_slots(const struct ocase *c, enum slot *slots)
{
	int k = 0;

	slots[k++] = SLOT_RAW;
	slots[k++] = SLOT_LIB;
	if ((c->kind == INSTALL && c->pages > 1) ||
	    (c->kind == BATCH && c->pages > 1 && c->per_call == 64))
		slots[k++] = SLOT_LOOK;
	/* Without pagemap (no /proc), no scan floor. */
	if ((c->kind == INSTALL || c->kind == REMOVE) && c->pages > 1) {
		slots[k++] = SLOT_NULL;
		if (c->kind == INSTALL && pagemap_fd >= 0)
			slots[k++] = SLOT_SCAN;
		if (c->kind == REMOVE)
			slots[k++] = SLOT_HOLE;
	}
	if (c->kind == MAP)
		slots[k++] = SLOT_LOCK;
	return k;
}

static int run_case(const struct ocase *c, const struct bench_opts *o, int err, int berr)
{
	size_t n = o->quick ? c->quick_n : c->n, len = n * (c->pages + 1) * page;
	const char *raw = c->kind == BATCH ? "native-batched" : "native";
	enum slot slots[NSLOTS];
	int nslots = case_slots(c, slots), e = c->kind == BATCH ? berr : err;
	struct iovec *iov;
	char name[64];
	char *base = NULL;

	case_name(c, name, sizeof(name));
	if (o->only && strcmp(o->only, name))
		return 0;
	if (e || !(guard_probe() & GUARD_CAP_ANON)) {
		bench_unsupported(name, raw, (long)n, e ? e : EOPNOTSUPP);
		bench_unsupported(name, "libguard-native", (long)n, e ? e : EOPNOTSUPP);
		return 0;
	}
	iov = calloc(n, sizeof(*iov));
	if (!iov)
		return ENOMEM;
	if (c->kind != MAP) {
		base = bench_map(len);
		for (size_t i = 0; i < n; i++)
			iov[i] = (struct iovec){ base + (i * (c->pages + 1) + 1) * page,
						 c->pages * page };
	}
	/* warm-up: page tables allocated, library initialized */
	for (int s = 0; s < nslots; s++) {
		int ret = pass(c, slots[s], iov, n);

		if (ret) {
			fprintf(stderr, "overhead: %s warm-up: %s\n", name, strerror(ret));
			return ret;
		}
		if (base && c->kind != REMOVE)
			madvise(base, len, MADV_GUARD_REMOVE);
	}
	/* three times the repetitions: the 5% target needs a tight median */
	for (int rep = 1; rep <= 3 * o->reps; rep++) {
		for (int s = 0; s < nslots; s++) {
			enum slot slot = slots[bench_order(rep, s, nslots)];
			uint64_t t0;
			int ret;

			if (c->kind == REMOVE)
				madvise(base, len, MADV_GUARD_INSTALL);
			t0 = bench_now_ns();
			ret = pass(c, slot, iov, n);
			t0 = bench_now_ns() - t0;
			if (ret) {
				fprintf(stderr, "overhead: %s: %s\n", name, strerror(ret));
				return ret;
			}
			if (base && c->kind != REMOVE)
				madvise(base, len, MADV_GUARD_REMOVE);
			bench_emit(name, slot == SLOT_RAW ? raw : slot_mode[slot], (long)n,
				   floor_metric[slot] ? floor_metric[slot] : "ns_per_guard", rep,
				   (double)t0 / n, "ns");
		}
	}
	if (base)
		munmap(base, len);
	free(iov);
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	int err = bench_native_anon(), berr;

	bench_parse(argc, argv, &o);
	page = bench_page();
	berr = err ? err : bench_native_batch();
	pidfd = bench_pidfd_self();
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (run_case(&cases[i], &o, err, berr))
			return 1;
	return 0;
}
