// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Threads (issue 37, item 7): T = 1, 2 and 8 threads (whatever the number
 * of CPUs: the bench host has 2) each installing and removing a guard on
 * one page of its own memory, over and over for a fixed time; the total
 * number of calls per second (an install and a removal are two calls), and
 * in the CSV its ratio to one thread (report.py: vs_1_thread), and the
 * CPUs the process got meanwhile (its CPU time over the wall time: on a
 * shared 2-CPU machine, what T threads could have) and the calls per
 * second of CPU time (what a call costs, waits aside). Modes:
 *   native:             madvise(MADV_GUARD_INSTALL) + madvise(MADV_GUARD_REMOVE),
 *                       the floor of the native method;
 *   mprotect:           mprotect(PROT_NONE) + mprotect(PROT_READ|PROT_WRITE),
 *                       the floor of the fallback (the kernel's own
 *                       mmap_lock, taken for writing);
 *   libguard-native:    guard_install2(0) + guard_remove(0), every install
 *                       checked to be native (never the fallback measured
 *                       under this name: "unsupported" where the kernel has
 *                       no native guards);
 *   libguard-fallback:  guard_install(GUARD_FALLBACK) + guard_remove(GUARD_FALLBACK),
 *                       which run under the library's one mutex (lock.c).
 * Each thread has a mapping of its own, four pages between PROT_NONE
 * pages, so that no two threads' memory shares a VMA, and guards its
 * second page: a fallback install splits the VMA in three, as a guard
 * inside a mapping does in real use, and the removal joins it again.
 *
 * In every repetition each (mode, T) runs once, in an order rotated by the
 * repetition number; the ratios are taken within a repetition. At least
 * 21 repetitions on the host (--quick: --reps, 5 by default): the machine
 * is shared, and a ratio between two 200 ms windows moves with it.
 */
#include "bench.h"

#include <errno.h>
#include <guard.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

enum { NATIVE, MPROTECT, LG_NATIVE, LG_FALLBACK, NMODES };
static const char *const names[NMODES] = { "native", "mprotect", "libguard-native",
					   "libguard-fallback" };
static const int counts[] = { 1, 2, 8 };
#define NCOUNTS (int)(sizeof(counts) / sizeof(counts[0]))
#define MAX_THREADS 8
#define MAP_PAGES 4	/* each thread's mapping */

struct worker {
	pthread_t t;
	int mode;
	char *guard;		/* the page it guards, inside its mapping */
	uint64_t pairs;		/* install + removal pairs done */
	uint64_t end_ns;	/* when it saw the stop */
	int err;
};

static pthread_barrier_t start;
static int stop;

/* One install and one removal: 0 or errno. */
static int pair(int mode, char *g)
{
	size_t pg = bench_page();
	unsigned int how = 0;
	int ret;

	switch (mode) {
	case NATIVE:
		if (madvise(g, pg, MADV_GUARD_INSTALL) || madvise(g, pg, MADV_GUARD_REMOVE))
			return errno;
		return 0;
	case MPROTECT:
		if (mprotect(g, pg, PROT_NONE) || mprotect(g, pg, PROT_READ | PROT_WRITE))
			return errno;
		return 0;
	case LG_NATIVE:
		ret = -guard_install2(g, pg, 0, &how);
		if (!ret && how != GUARD_METHOD_NATIVE) {
			guard_remove(g, pg, 0);
			return EOPNOTSUPP;	/* the fallback: not what this mode measures */
		}
		return ret ? ret : -guard_remove(g, pg, 0);
	default:
		ret = -guard_install(g, pg, GUARD_FALLBACK);
		return ret ? ret : -guard_remove(g, pg, GUARD_FALLBACK);
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(&start);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		w->err = pair(w->mode, w->guard);
		if (w->err)
			break;
		w->pairs++;
	}
	w->end_ns = bench_now_ns();
	return NULL;
}

/* CPU time of the process (all its threads), user + system, in ns. */
static uint64_t cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

/*
 * T threads of mode for ms milliseconds: total calls per second, or
 * -errno; *cpus: the CPUs the process had meanwhile (its CPU time over
 * the wall time), which on a shared machine says what T could get.
 */
static double run(int mode, int nthreads, char *const *guards, long ms, double *cpus)
{
	struct worker w[MAX_THREADS];
	struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
	uint64_t t0, t1 = 0, c0, pairs = 0;
	int err = 0;

	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .mode = mode, .guard = guards[i] };
		if (pthread_create(&w[i].t, NULL, work, &w[i])) {
			fprintf(stderr, "bench-threads: pthread_create failed\n");
			exit(1);
		}
	}
	pthread_barrier_wait(&start);
	t0 = bench_now_ns();
	c0 = cpu_ns();
	while (nanosleep(&d, &d) && errno == EINTR)
		;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].t, NULL);
		pairs += w[i].pairs;
		if (w[i].end_ns > t1)
			t1 = w[i].end_ns;
		if (w[i].err && !err)
			err = w[i].err;
	}
	*cpus = (double)(cpu_ns() - c0) / (double)(t1 - t0);
	pthread_barrier_destroy(&start);
	if (err)
		return -err;
	return 2.0 * (double)pairs * 1e9 / (double)(t1 - t0);
}

/* Why mode can't run here: 0 if it can, else errno. */
static int support(int mode, char *g)
{
	switch (mode) {
	case NATIVE:
		return bench_native_anon();
	case LG_NATIVE:
		if (!(guard_probe() & GUARD_CAP_ANON))
			return EOPNOTSUPP;
		return pair(mode, g);
	default:
		return pair(mode, g);	/* and the first call's setup done before timing */
	}
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	size_t pg = bench_page(), slot = (MAP_PAGES + 1) * pg;
	char *guards[MAX_THREADS], *res;
	int unsupported[NMODES];
	long ms;

	bench_parse(argc, argv, &o);
	if (o.only && strcmp(o.only, "threads"))
		return 0;
	ms = o.quick ? 100 : 200;
	int reps = o.quick || o.reps >= 21 ? o.reps : 21;

	/*
	 * A PROT_NONE reservation, each thread's mapping in it with a
	 * PROT_NONE page below and above: a mapping (and a VMA) of its own.
	 */
	res = mmap(NULL, MAX_THREADS * slot + pg, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED) {
		perror("bench-threads: mmap");
		return 1;
	}
	for (int i = 0; i < MAX_THREADS; i++) {
		char *m = mmap(res + pg + (size_t)i * slot, MAP_PAGES * pg, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

		if (m == MAP_FAILED) {
			perror("bench-threads: mmap");
			return 1;
		}
		memset(m, 1, MAP_PAGES * pg);
		guards[i] = m + pg;
	}
	for (int m = 0; m < NMODES; m++) {
		unsupported[m] = support(m, guards[0]);
		for (int k = 0; k < NCOUNTS && unsupported[m]; k++)
			bench_unsupported("threads", names[m], counts[k], unsupported[m]);
	}

	for (int rep = 1; rep <= reps; rep++) {
		for (int s = 0; s < NMODES * NCOUNTS; s++) {
			int c = bench_order(rep, s, NMODES * NCOUNTS);
			int m = c / NCOUNTS, n = counts[c % NCOUNTS];
			double v, cpus;

			if (unsupported[m])
				continue;
			v = run(m, n, guards, ms, &cpus);
			if (v < 0) {
				/* e.g. native guards that stopped being native: said, not measured */
				unsupported[m] = (int)-v;
				for (int k = 0; k < NCOUNTS; k++)
					bench_emit("threads", names[m], counts[k], "failed_errno", 0, -v,
						   "errno");
				continue;
			}
			bench_emit("threads", names[m], n, "calls_per_s", rep, v, "calls/s");
			bench_emit("threads", names[m], n, "cpus", rep, cpus, "CPUs");
			if (cpus > 0)
				bench_emit("threads", names[m], n, "calls_per_cpu_s", rep, v / cpus,
					   "calls/s");
		}
	}
	return 0;
}
