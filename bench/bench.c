// SPDX-License-Identifier: LGPL-2.1-or-later
/* Shared helpers of the benchmark programs: see bench.h. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise 440
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

void bench_parse(int argc, char **argv, struct bench_opts *o)
{
	o->reps = 0;
	o->quick = 0;
	o->only = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			o->quick = 1;
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			o->reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			o->only = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--quick] [--reps N] [--only BENCHMARK]\n", argv[0]);
			exit(2);
		}
	}
	if (!o->reps)
		o->reps = o->quick ? 5 : 7;
	if (o->reps < 5) {
		fprintf(stderr, "%s: --reps must be at least 5\n", argv[0]);
		exit(2);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

size_t bench_page(void)
{
	static size_t page;

	if (!page)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page;
}

void *bench_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "bench: mmap %zu bytes: %s\n", len, strerror(errno));
		exit(1);
	}
	return p;
}

void bench_emit(const char *bench, const char *mode, long n, const char *metric, int rep,
		double value, const char *unit)
{
	printf("%s,%s,%ld,%s,%d,%.6g,%s\n", bench, mode, n, metric, rep, value, unit);
}

void bench_unsupported(const char *bench, const char *mode, long n, int err)
{
	bench_emit(bench, mode, n, "unsupported", 0, err, "errno");
}

long bench_vmas(uintptr_t start, uintptr_t end)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	long n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t s, e;

		if (!strchr(line, '\n') && !feof(f)) {
			/* a long path: skip the rest of the line */
			int c;

			while ((c = getc(f)) != EOF && c != '\n')
				;
		}
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &s, &e) != 2)
			continue;
		if (!end || (s < end && e > start))
			n++;
	}
	fclose(f);
	return n;
}

static int try_guard(void *p)
{
	int ret = madvise(p, bench_page(), MADV_GUARD_INSTALL) ? errno : 0;

	return ret;
}

int bench_native_anon(void)
{
	void *p = bench_map(2 * bench_page());
	int ret = try_guard(p);

	munmap(p, 2 * bench_page());
	return ret;
}

int bench_native_fd(int fd)
{
	size_t page = bench_page();
	void *p;
	int ret;

	if (ftruncate(fd, (off_t)(2 * page)))
		return errno;
	p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return errno;
	ret = try_guard(p);
	munmap(p, 2 * page);
	return ret;
}

int bench_pidfd_self(void)
{
	return (int)syscall(__NR_pidfd_open, getpid(), 0);
}

int bench_pmadvise(int pidfd, const struct iovec *iov, size_t n, int advice)
{
	for (size_t i = 0; i < n; i += BENCH_IOV_MAX) {
		size_t k = n - i < BENCH_IOV_MAX ? n - i : BENCH_IOV_MAX;

		if (syscall(__NR_process_madvise, pidfd, iov + i, k, advice, 0) < 0)
			return errno;
	}
	return 0;
}

int bench_native_batch(void)
{
	void *p = bench_map(2 * bench_page());
	struct iovec iov = { p, bench_page() };
	int fd = bench_pidfd_self(), ret;

	if (fd < 0)
		ret = errno;
	else
		ret = bench_pmadvise(fd, &iov, 1, MADV_GUARD_INSTALL);
	if (fd >= 0)
		close(fd);
	munmap(p, 2 * bench_page());
	return ret;
}

int bench_tmpfile(void)
{
	const char *dirs[] = { getenv("LIBGUARD_SCRATCH"), "/var/tmp", "/tmp" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		struct statfs sf;
		char path[4096];
		int fd;

		if (!dirs[i] || !*dirs[i] || statfs(dirs[i], &sf) || sf.f_type == TMPFS_MAGIC)
			continue;
		snprintf(path, sizeof(path), "%s/guardbench-XXXXXX", dirs[i]);
		fd = mkstemp(path);
		if (fd < 0)
			continue;
		unlink(path);
		return fd;
	}
	return -1;
}
