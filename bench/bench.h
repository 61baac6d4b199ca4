/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared helpers of the benchmark programs: a clock, raw system calls,
 * VMA counting, option parsing and the raw-sample output that bench/run
 * summarizes (bench/summarize.py) into the results CSV.
 *
 * Every program writes lines "benchmark,mode,n,metric,rep,value,unit" to
 * stdout: one per repetition of a timed measurement (rep >= 1), or one
 * with rep 0 for a count or a failure (vmas, failed_at_n, unsupported).
 * Modes are measured side by side: in each repetition every mode runs
 * once, in an order rotated by the repetition number.
 */
#ifndef LIBGUARD_BENCH_H
#define LIBGUARD_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

#define BENCH_IOV_MAX 1024

struct bench_opts {
	int reps;	/* repetitions of every measurement (>= 5) */
	int quick;	/* reduced sizes for TCG */
	const char *only;	/* run this benchmark only (bench-overhead: to profile one) */
};

/* --reps N, --quick, --only BENCHMARK; exits 2 on bad usage. */
void bench_parse(int argc, char **argv, struct bench_opts *o);

uint64_t bench_now_ns(void);
size_t bench_page(void);

/* Anonymous private read-write mapping, MAP_NORESERVE; exits on failure. */
void *bench_map(size_t len);

void bench_emit(const char *bench, const char *mode, long n, const char *metric, int rep,
		double value, const char *unit);
/* A row saying mode can't run here: metric "unsupported", value errno. */
void bench_unsupported(const char *bench, const char *mode, long n, int err);

/* VMAs meeting [start, end) (end 0: the whole process), from /proc/self/maps. */
long bench_vmas(uintptr_t start, uintptr_t end);

/* 0 if the kernel takes MADV_GUARD_INSTALL on private anonymous memory, else errno. */
int bench_native_anon(void);
/* The same for memfd (shmem) and for a MAP_SHARED file in dir. */
int bench_native_fd(int fd);
/* 0 if process_madvise(pidfd of self, MADV_GUARD_INSTALL) works, else errno. */
int bench_native_batch(void);

int bench_pidfd_self(void);
/* process_madvise over n ranges in chunks of BENCH_IOV_MAX: 0 or errno. */
int bench_pmadvise(int pidfd, const struct iovec *iov, size_t n, int advice);

/* A file on a real file system ($LIBGUARD_SCRATCH, /var/tmp, /tmp), unlinked. */
int bench_tmpfile(void);

/* Rotate the order of nmodes modes by repetition: the index of slot k. */
/*
 * Repetitions of an N-guard measurement in one sample: at least ~20000
 * guards per sample, so small N repeat; at most 20 with --quick.
 */
static inline int bench_inner(size_t n, bool quick)
{
	int inner = n >= 20000 ? 1 : (int)(20000 / n);

	return quick && inner > 20 ? 20 : inner;
}

static inline int bench_order(int rep, int k, int nmodes)
{
	return (k + rep) % nmodes;
}

#endif
