/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sequence tester's state, shared by its operations (ops_*.c), its
 * checks (check.c) and its step log (report.c).
 */
#ifndef STRESS_SEQ_H
#define STRESS_SEQ_H

#include "backing.h"
#include "caps.h"
#include "model.h"
#include "rng.h"

#include <stdbool.h>
#include <stdint.h>

struct ctx {
	const char *prog;
	uint64_t seed;
	uint64_t op;			/* number of the operation running, from 1 */
	size_t arena_mb;
	unsigned int full_every;
	struct rng rng;			/* draws of the operations */
	struct rng crng;		/* draws of the checks, so they never shift the ops */
	struct model m;
	struct backing b;
	struct caps caps;
	enum btype types[BT_COUNT];	/* the backing types in use */
	int ntypes;
	int pmfd;			/* /proc/self/pagemap, reopened after fork */
	int memfd;			/* /proc/self/mem, likewise */
	bool in_child;
	bool trace;
	long watch;			/* page whose operations are printed, or -1 */
	uint64_t *pm_buf;		/* n pagemap entries */
	unsigned char *scan_buf;	/* n guard flags from PAGEMAP_SCAN */
	/* What the running operation touched: the pages sample checks visit. */
	size_t lo, hi, lo2, hi2;
	/* A 2 MiB window the next few operations prefer (after a THP op). */
	size_t focus_lo, focus_hi;
	int focus_left;
	unsigned long stat_ops[32];
	unsigned long faults_seen, full_checks;
	/* How often the paths of interest were taken, printed at the end. */
	struct {
		unsigned long refused;		/* an op met a locked VMA: EINVAL / EOPNOTSUPP */
		unsigned long mlock_plain, mlock_enomem;	/* plain mlock, and its ENOMEM at a fault */
		unsigned long refused_by[32];	/* refused, per operation */
	} lk;
	struct {
		unsigned long filled, eexist;		/* pages */
		unsigned long guard_filled, guard_eexist;	/* of them guarded */
		unsigned long zeropage;			/* UFFDIO_ZEROPAGE ops */
		unsigned long shmem_filled, shmem_eexist;	/* of them shmem */
		unsigned long anon_vma_apart;	/* VMA edges left by the anon_vma rule */
	} uf;
};

/* At most this many locked pages: the VM runs the tester in 48 MiB. */
#define MAX_LOCKED 1024

/* ops.c: run one random operation. */
void ops_run_one(struct ctx *c);
const char *ops_name(int i);
int ops_count(void);

/* Range pickers shared by the operations (ops.c). */
void pick_range(struct ctx *c, size_t maxlen, size_t *lo, size_t *hi);
bool pick_mapped(struct ctx *c, bool (*ok)(const struct mpage *p), size_t *i);
/* The run of pages around i that ok() accepts, cut to maxlen around i. */
void grow_run(struct ctx *c, size_t i, bool (*ok)(const struct mpage *p), size_t maxlen,
	      size_t *lo, size_t *hi);
int pick_type(struct ctx *c);
int pick_prot(struct ctx *c, enum btype t);
int file_obj_of_fd(enum bfile f);
/* mmap type t over [lo, hi) with MAP_FIXED; fails the run if the kernel refuses. */
void map_at(struct ctx *c, size_t lo, size_t hi, enum btype t, int prot);

/* The operations, one file per family. */
void op_guard_raw(struct ctx *c);
void op_guard_lib(struct ctx *c);
void op_guard_batch(struct ctx *c);
void op_write(struct ctx *c);
void op_write_range(struct ctx *c, size_t lo, size_t hi, bool private_only);
void op_mmap(struct ctx *c);
void op_munmap(struct ctx *c);
void op_mremap(struct ctx *c);
void op_mprotect(struct ctx *c);
void op_dontneed(struct ctx *c);
void op_cold(struct ctx *c);
void op_pageout(struct ctx *c);
void op_free(struct ctx *c);
void op_populate(struct ctx *c);
void op_thp(struct ctx *c);
void op_collapse(struct ctx *c);
void op_pwrite(struct ctx *c);
void op_truncate(struct ctx *c);
void op_punch(struct ctx *c);
void op_madv_remove(struct ctx *c);
void op_fork(struct ctx *c);
void op_mlock(struct ctx *c);
void op_munlock(struct ctx *c);
void op_uffd(struct ctx *c);

/* check.c */
void check_guards(struct ctx *c);		/* pagemap bit 58 and PAGEMAP_SCAN, whole arena */
void check_page(struct ctx *c, size_t i, bool full);
void check_sample(struct ctx *c);		/* after every operation */
void check_all(struct ctx *c);			/* every page, every word */
/* madvise-style call: compare the result and the VMA count around it. */
void expect_ret(struct ctx *c, const char *what, int got, int want);

/* report.c: the step log and failure reports. */
void log_op(struct ctx *c, size_t lo, size_t hi, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void log_more(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_second_range(struct ctx *c, size_t lo, size_t hi);
/* The operation worked on pages [off_lo, off_hi) of object obj. */
void log_object(struct ctx *c, int obj, uint32_t off_lo, uint32_t off_hi);
void log_done(struct ctx *c);			/* the operation finished: trace it */
void fail(struct ctx *c, long page, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
void report_unexpected_signal(struct ctx *c, int sig, uintptr_t addr, int code);

#endif
