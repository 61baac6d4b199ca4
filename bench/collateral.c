// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Collateral cost: what N held guards (one page apart in one anonymous
 * mapping, installed natively or with mprotect) cost every later
 * operation of the process: mmap+munmap of a fresh 16-page region
 * (collateral-mmap), fork()+_exit()+waitpid() (collateral-fork), the
 * first-touch fault of an ordinary page (collateral-fault) and reading
 * /proc/self/maps whole (collateral-maps). ns_per_op, plus the VMAs of
 * the process while the guards are held.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NATIVE, MPROTECT, NMODES };
static const char *const names[NMODES] = { "native", "mprotect" };
static char maps_buf[1 << 16];

static int hold(int mode, char *base, size_t n)
{
	size_t page = bench_page();

	for (size_t i = 0; i < n; i++) {
		char *p = base + (2 * i + 1) * page;

		if (mode == NATIVE ? madvise(p, page, MADV_GUARD_INSTALL)
				   : mprotect(p, page, PROT_NONE))
			return errno;
	}
	return 0;
}

static double op_mmap(int iters)
{
	size_t len = 16 * bench_page();
	uint64_t t0 = bench_now_ns();

	for (int i = 0; i < iters; i++) {
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			exit(1);
		munmap(p, len);
	}
	return (double)(bench_now_ns() - t0) / iters;
}

static double op_fork(int iters)
{
	uint64_t t0 = bench_now_ns();

	for (int i = 0; i < iters; i++) {
		pid_t pid = fork();
		int status;

		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			exit(1);
	}
	return (double)(bench_now_ns() - t0) / iters;
}

static double op_fault(int iters)
{
	size_t page = bench_page(), pages = 1024, len = pages * page;
	uint64_t total = 0;

	for (int i = 0; i < iters; i++) {
		char *p = bench_map(len);
		uint64_t t0 = bench_now_ns();

		for (size_t k = 0; k < pages; k++)
			p[k * page] = 1;
		total += bench_now_ns() - t0;
		munmap(p, len);
	}
	return (double)total / ((double)iters * pages);
}

static double op_maps(int iters)
{
	uint64_t t0 = bench_now_ns();

	for (int i = 0; i < iters; i++) {
		int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			exit(1);
		while (read(fd, maps_buf, sizeof(maps_buf)) > 0)
			;
		close(fd);
	}
	return (double)(bench_now_ns() - t0) / iters;
}

int main(int argc, char **argv)
{
	static const long ns_set[] = { 0, 1000, 10000, 30000 };
	const size_t count = sizeof(ns_set) / sizeof(ns_set[0]);
	int unsupported[NMODES] = { bench_native_anon(), 0 };
	int i_mmap, i_fork, i_fault, i_maps;
	struct bench_opts o;

	bench_parse(argc, argv, &o);
	i_mmap = o.quick ? 200 : 2000;
	i_fork = o.quick ? 3 : 20;
	i_fault = o.quick ? 1 : 4;
	i_maps = o.quick ? 3 : 10;
	for (size_t k = 0; k < count; k++)
		if (unsupported[NATIVE] && ns_set[k])
			for (int b = 0; b < 4; b++) {
				static const char *const bn[] = { "collateral-mmap", "collateral-fork",
								  "collateral-fault", "collateral-maps" };

				bench_unsupported(bn[b], names[NATIVE], ns_set[k], unsupported[NATIVE]);
			}

	for (int rep = 1; rep <= o.reps; rep++) {
		for (size_t k = 0; k < count; k++) {
			size_t n = (size_t)ns_set[k], len = (2 * n + 2) * bench_page();

			for (int s = 0; s < NMODES; s++) {
				int m = bench_order(rep, s, NMODES), ret;
				char *base;

				/* N = 0 holds nothing: the same for both, still measured */
				if (unsupported[m] && n)
					continue;
				base = bench_map(len);
				ret = hold(m, base, n);
				if (ret) {
					if (rep == 1)
						bench_emit("collateral-fork", names[m], (long)n,
							   "failed_errno", 0, ret, "errno");
					munmap(base, len);
					continue;
				}
				if (rep == 1)
					bench_emit("collateral-fork", names[m], (long)n, "vmas_process", 0,
						   bench_vmas(0, 0), "vmas");
				bench_emit("collateral-mmap", names[m], (long)n, "ns_per_op", rep,
					   op_mmap(i_mmap), "ns");
				bench_emit("collateral-fork", names[m], (long)n, "ns_per_op", rep,
					   op_fork(i_fork), "ns");
				bench_emit("collateral-fault", names[m], (long)n, "ns_per_op", rep,
					   op_fault(i_fault), "ns");
				bench_emit("collateral-maps", names[m], (long)n, "ns_per_op", rep,
					   op_maps(i_maps), "ns");
				munmap(base, len);
			}
		}
	}
	return 0;
}
