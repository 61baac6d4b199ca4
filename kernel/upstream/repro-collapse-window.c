// SPDX-License-Identifier: GPL-2.0
/*
 * repro-collapse-window: MADV_GUARD_INSTALL on a shmem range returns 0, yet
 * its guards are gone: collapse_pte_mapped_thp() freed the PTE table they
 * were written into.
 *
 * collapse_pte_mapped_thp() checks and clears the PTE table of a PMD whose
 * page cache already holds a PMD-sized folio (step 2), drops the PTE lock,
 * and retakes it with the PMD lock to free the table (step 4) without
 * looking at the table again. MADV_GUARD_INSTALL runs under the mmap read
 * lock, as MADV_COLLAPSE does: it can take the PTE lock in between, write
 * its markers into the empty slots and return 0. Step 4 then frees the
 * table, markers and all, and step 5 maps the huge page over the range.
 *
 * Threads: one installs guards on a few pages of a 2 MiB-aligned memfd
 * mapping, checks them through /proc/self/pagemap (bit 58), checks them
 * again a moment later, and removes them; two others MADV_COLLAPSE the
 * same PMD in a loop.
 *
 *   cc -O2 -pthread repro-collapse-window.c -o repro-collapse-window
 *   ./repro-collapse-window [--seconds N]	(default 30)
 *
 * Exit: 0 not reproduced, 1 reproduced, 77 the kernel lacks something
 * needed (printed), 2 usage or setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

#define PMD_SZ (2ul << 20)
#define PM_GUARD (1ull << 58)
#define PM_PRESENT (1ull << 63)
#define FIRST 100	/* first guarded page in the PMD */
#define NGUARD 16	/* guarded pages */

static long psz;
static char *region;
static int pagemap;
static atomic_int stop;
static atomic_ulong n_installs, n_collapsed, n_collapse_fail;
static double t0;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t pm_entry(char *addr)
{
	uint64_t e = 0;
	off_t off = (off_t)((uintptr_t)addr / psz * sizeof(e));

	if (pread(pagemap, &e, sizeof(e), off) != sizeof(e)) {
		perror("pagemap");
		exit(2);
	}
	return e;
}

/* Index of the first of the NGUARD pages that is not a guard, or -1. */
static int first_unguarded(void)
{
	for (int i = 0; i < NGUARD; i++)
		if (!(pm_entry(region + (FIRST + i) * psz) & PM_GUARD))
			return i;
	return -1;
}

static void report(int i, const char *when, unsigned long iter)
{
	char *pmd = region;
	unsigned int g = 0, p = 0;

	for (unsigned long k = 0; k < PMD_SZ / psz; k++) {
		uint64_t e = pm_entry(pmd + k * psz);

		g += !!(e & PM_GUARD);
		p += !!(e & PM_PRESENT);
	}
	printf("REPRODUCED after %.1f s: MADV_GUARD_INSTALL of pages %d-%d returned 0, but "
	       "page %d is not a guard %s (install %lu, %lu collapses); the PMD now: %u guard, "
	       "%u present of %lu\n", now() - t0, FIRST, FIRST + NGUARD - 1, FIRST + i, when,
	       iter, atomic_load(&n_collapsed), g, p, PMD_SZ / psz);
}

static void *installer(void *arg)
{
	unsigned long iter = 0;
	char *p = region + FIRST * psz;

	(void)arg;
	while (!atomic_load(&stop)) {
		int i;

		iter++;
		if (madvise(p, NGUARD * psz, MADV_GUARD_INSTALL)) {
			/* EAGAIN and the like: try again; leave nothing behind. */
			madvise(p, NGUARD * psz, MADV_GUARD_REMOVE);
			continue;
		}
		atomic_fetch_add(&n_installs, 1);
		i = first_unguarded();
		if (i < 0) {
			/* Give a collapse in its step 3 time to reach step 4. */
			for (volatile int k = 0; k < 20000; k++)
				;
			i = first_unguarded();
			if (i >= 0) {
				report(i, "a moment after it returned", iter);
				exit(1);
			}
		} else {
			report(i, "right after it returned", iter);
			exit(1);
		}
		if (madvise(p, NGUARD * psz, MADV_GUARD_REMOVE)) {
			perror("MADV_GUARD_REMOVE");
			exit(2);
		}
	}
	return NULL;
}

static void *collapser(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		if (madvise(region, PMD_SZ, MADV_COLLAPSE) == 0)
			atomic_fetch_add(&n_collapsed, 1);
		else
			atomic_fetch_add(&n_collapse_fail, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = 30;
	pthread_t th[3];
	struct utsname u;
	char *res;
	int fd;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			secs = atof(argv[++i]);
		} else {
			fprintf(stderr, "usage: %s [--seconds N]\n", argv[0]);
			return 2;
		}
	}
	if (secs <= 0)
		secs = 1;
	psz = sysconf(_SC_PAGESIZE);
	uname(&u);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("repro-collapse-window: kernel %s, %.0f s\n", u.release, secs);

	pagemap = open("/proc/self/pagemap", O_RDONLY);
	fd = memfd_create("repro-collapse", 0);
	if (pagemap < 0 || fd < 0 || ftruncate(fd, PMD_SZ)) {
		perror("setup");
		return 2;
	}
	res = mmap(NULL, 2 * PMD_SZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	region = (char *)(((uintptr_t)res + PMD_SZ - 1) & ~(PMD_SZ - 1));
	if (mmap(region, PMD_SZ, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
	    MAP_FAILED) {
		perror("mmap memfd");
		return 2;
	}
	madvise(region, PMD_SZ, MADV_HUGEPAGE);
	memset(region, 1, PMD_SZ);

	if (madvise(region + FIRST * psz, psz, MADV_GUARD_INSTALL)) {
		printf("SKIP: MADV_GUARD_INSTALL on shmem: %s (needs guard regions in shmem, "
		       "6.15 or later)\n", strerror(errno));
		return 77;
	}
	if (!(pm_entry(region + FIRST * psz) & PM_GUARD)) {
		printf("SKIP: /proc/self/pagemap does not report guards (bit 58, 6.15 or later)\n");
		return 77;
	}
	madvise(region + FIRST * psz, psz, MADV_GUARD_REMOVE);
	if (madvise(region, PMD_SZ, MADV_COLLAPSE)) {
		printf("SKIP: MADV_COLLAPSE on shmem: %s (THP off, or shmem_enabled=deny)\n",
		       strerror(errno));
		return 77;
	}

	t0 = now();
	pthread_create(&th[0], NULL, installer, NULL);
	pthread_create(&th[1], NULL, collapser, NULL);
	pthread_create(&th[2], NULL, collapser, NULL);
	while (now() - t0 < secs)
		usleep(100000);
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	printf("not reproduced: %lu installs checked in %.1f s; MADV_COLLAPSE %lu succeeded, "
	       "%lu failed\n", atomic_load(&n_installs), now() - t0, atomic_load(&n_collapsed),
	       atomic_load(&n_collapse_fail));
	return 0;
}
