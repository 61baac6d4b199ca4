// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The arena of examples/arena.c: a memfd slab, slot i = one page of
 * object and one page of guard, mapped with guard_map_file() and guarded
 * with guard_install_batch(GUARD_NATIVE) (libguard-native) or
 * (GUARD_FALLBACK) (libguard-fallback, one mprotect per guard).
 * arena-setup: ns_per_guard to map and guard N objects; arena-ops:
 * ns_per_op of alloc + write 256 bytes + free, twice over every object
 * in a shuffled order (the first pass takes the first-touch faults);
 * vmas of the arena; failed_at_n where the fallback runs out of VMAs.
 */
#include "bench.h"

#include <errno.h>
#include <guard.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { LG_NATIVE, LG_FALLBACK, NMODES };
static const char *const names[NMODES] = { "libguard-native", "libguard-fallback" };
static const unsigned int method[NMODES] = { GUARD_NATIVE, GUARD_FALLBACK };

struct arena {
	char *base;
	size_t n, size, top;
	size_t *free;	/* stack of free slot numbers */
};

static void *arena_alloc(struct arena *a)
{
	return a->top ? a->base + 2 * a->free[--a->top] * bench_page() : NULL;
}

static void arena_free(struct arena *a, void *p)
{
	a->free[a->top++] = (size_t)((char *)p - a->base) / (2 * bench_page());
}

static int run_once(int mode, int fd, size_t n, const size_t *order, struct iovec *iov,
		    double *setup_ns, double *ops_ns, long *vmas, size_t *done)
{
	size_t page = bench_page();
	struct arena a = { .n = n, .size = 2 * n * page };
	void **held = calloc(n, sizeof(*held));
	uint64_t t0, t1;
	int ret;

	a.free = calloc(n, sizeof(*a.free));
	if (!held || !a.free || ftruncate(fd, 0) || ftruncate(fd, (off_t)a.size))
		return ENOMEM;
	t0 = bench_now_ns();
	a.base = guard_map_file(fd, 0, a.size, PROT_READ | PROT_WRITE, MAP_SHARED, 0, 0);
	if (a.base == MAP_FAILED)
		return errno;
	for (size_t i = 0; i < n; i++)
		iov[i] = (struct iovec){ a.base + (2 * i + 1) * page, page };
	ret = -guard_install_batch(iov, n, method[mode], done);
	t1 = bench_now_ns();
	*setup_ns = (double)(t1 - t0) / n;
	*vmas = bench_vmas((uintptr_t)a.base, (uintptr_t)a.base + a.size);
	if (!ret) {
		for (size_t i = 0; i < n; i++)
			a.free[a.top++] = order[i];
		t0 = bench_now_ns();
		for (int pass = 0; pass < 2; pass++) {
			for (size_t i = 0; i < n; i++) {
				held[i] = arena_alloc(&a);
				memset(held[i], 'o', 256);
			}
			for (size_t i = 0; i < n; i++)
				arena_free(&a, held[i]);
		}
		*ops_ns = (double)(bench_now_ns() - t0) / (2.0 * n);
	}
	guard_unmap(a.base, a.size);
	free(a.free);
	free(held);
	return ret;
}

int main(int argc, char **argv)
{
	static const long full[] = { 1000, 10000, 30000, 100000 };
	static const long quick[] = { 1000, 10000 };
	struct bench_opts o;
	const long *ns_set;
	size_t count, max;
	int failed[NMODES][4] = { { 0 } }, unsupported[NMODES] = { 0 };
	int fd = memfd_create("arena", MFD_CLOEXEC);
	size_t *order;
	struct iovec *iov;

	bench_parse(argc, argv, &o);
	ns_set = o.quick ? quick : full;
	count = o.quick ? 2 : 4;
	max = (size_t)ns_set[count - 1];
	order = calloc(max, sizeof(*order));
	iov = calloc(max, sizeof(*iov));
	if (fd < 0 || !order || !iov)
		return 1;
	if (!(guard_probe() & GUARD_CAP_SHMEM))
		unsupported[LG_NATIVE] = EOPNOTSUPP;
	for (size_t k = 0; k < count; k++)
		if (unsupported[LG_NATIVE])
			bench_unsupported("arena-setup", names[LG_NATIVE], ns_set[k], EOPNOTSUPP);
	for (int rep = 1; rep <= o.reps; rep++) {
		for (size_t k = 0; k < count; k++) {
			size_t n = (size_t)ns_set[k];

			/* the same shuffled order for both modes of a repetition */
			srand((unsigned int)(rep * 7919 + k));
			for (size_t i = 0; i < n; i++)
				order[i] = i;
			for (size_t i = n - 1; i > 0; i--) {
				size_t j = (size_t)rand() % (i + 1), t = order[i];

				order[i] = order[j];
				order[j] = t;
			}
			for (int s = 0; s < NMODES; s++) {
				int m = bench_order(rep, s, NMODES), ret;
				double setup = 0, ops = 0;
				size_t done = 0;
				long vmas = 0;

				if (unsupported[m] || failed[m][k])
					continue;
				ret = run_once(m, fd, n, order, iov, &setup, &ops, &vmas, &done);
				if (ret) {
					failed[m][k] = ret;
					bench_emit("arena-setup", names[m], (long)n, "failed_at_n", 0,
						   (double)done, "guards");
					bench_emit("arena-setup", names[m], (long)n, "failed_errno", 0, ret,
						   "errno");
					continue;
				}
				bench_emit("arena-setup", names[m], (long)n, "ns_per_guard", rep, setup,
					   "ns");
				bench_emit("arena-ops", names[m], (long)n, "ns_per_op", rep, ops, "ns");
				if (rep == 1)
					bench_emit("arena-setup", names[m], (long)n, "vmas", 0, vmas,
						   "vmas");
			}
		}
	}
	close(fd);
	return 0;
}
