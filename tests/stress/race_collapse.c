// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * stress-race-collapse: a targeted race between MADV_GUARD_INSTALL and THP
 * collapse (issue 17, defect 1).
 *
 * The install walk allocates a PTE table for a PMD that has none
 * (__pte_alloc()) and tests pmd_none() again. collapse_pte_mapped_thp()
 * (MADV_COLLAPSE on a file or shmem range whose page cache already holds a
 * PMD-sized folio, or khugepaged) runs under the mmap READ lock and frees
 * an empty PTE table: if it does so in that window, a walk that skips a
 * PMD it finds empty makes MADV_GUARD_INSTALL return 0 with that part of
 * the range unguarded.
 *
 * So, per backing (private anonymous THP, memfd shmem, MAP_SHARED and
 * MAP_PRIVATE read-only mappings of an O_RDONLY file on
 * $LIBGUARD_SCRATCH), a region of --pmds 2 MiB-aligned PMDs is collapsed
 * once, then for a bounded time:
 *
 *  - installer threads install guards over ranges that cross a PMD
 *    boundary (each owns its boundaries), check that EVERY page of each
 *    range that the kernel said it guarded is a guard (pagemap bit 58,
 *    else PAGEMAP_SCAN, else a read that must fault with SEGV_MAPERR),
 *    then remove the guards and check that they are gone;
 *  - collapser threads hammer MADV_COLLAPSE on the PMDs the installers
 *    are working on (anonymous memory is populated first: anonymous
 *    collapse needs pages), and now and then MADV_DONTNEED a PMD, or
 *    munmap and map it again, so that page tables are emptied and freed.
 *
 * Every guard install over a PMD-mapped THP zaps it and walks an empty
 * PMD, which is the window. Anonymous collapse takes the mmap write lock
 * and cannot race an install: that backing is the control.
 *
 * With --setup-sysfs (only inside the guest: refused unless tests/vm/run
 * set $LIBGUARD_KERNEL), shmem THP is allowed (shmem_enabled=advise when
 * it says never) and khugepaged scans without sleeping, so that it races
 * too; the old values are put back at exit.
 *
 * A backing on which guards or MADV_COLLAPSE do not work is skipped with
 * the reason (a backing named in --require fails instead), and so is one
 * on which no collapse succeeded during the run: a race that never
 * happened proves nothing.
 *
 * Exit status: 0 pass, 1 failure, 77 no backing could be raced (no guard
 * regions, or no THP collapse), 2 usage.
 */
#include "backing.h"
#include "caps.h"
#include "fail.h"
#include "kapi.h"
#include "knobs.h"
#include "probe.h"
#include "rng.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define PMD_SIZE (2ul << 20)
#define MAX_PMDS 64
#define MAX_THREADS 16
#define NERR 134	/* errno values counted one by one (EHWPOISON is 133) */

enum rtype { R_ANON, R_SHMEM, R_FILE_SHARED, R_FILE_PRIVATE, R_COUNT };

static const char *const rtype_name[R_COUNT] = {
	"anon", "shmem", "file-shared", "file-private",
};

/* The guard capability that covers each backing (caps_probe's types). */
static const enum btype rtype_bt[R_COUNT] = { BT_PANON, BT_MEMFD, BT_RO, BT_PRIV };

static const char *prog = "stress-race-collapse";
static uint64_t seed;
static struct caps caps;
static struct backing bk;
static int pmfd;

/* The region being raced. */
static enum rtype cur;
static char *region;
static size_t npmds = 4, pages_per_pmd;
static int shm_fd = -1, file_fd = -1;	/* memfd; O_RDONLY file */
static pthread_rwlock_t pmd_lock[MAX_PMDS];	/* read: installing; write: remapping */
static atomic_int stop;
static atomic_ulong target[MAX_THREADS];	/* the boundary each installer works on */
static int ninstallers = 1, ncollapsers = 2;
static unsigned long max_installs;
static bool no_dontneed, no_remap;	/* --ops collapse: MADV_COLLAPSE only */
static bool collapse_only;		/* --probe-collapse: no guards needed */

/* Counts for the current backing. */
static atomic_ulong n_installs, n_pages, n_install_err[NERR], n_collapse_ok, n_collapse_err[NERR],
	n_dontneed, n_remaps;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	stress_vfail(prog, seed, fmt, ap);
}

static void on_unexpected(int sig, const siginfo_t *si)
{
	die("%s at %p outside any probe (region %p, backing %s)", probe_code_name(sig, si->si_code),
	    si->si_addr, (void *)region, rtype_name[cur]);
}

static void count_err(atomic_ulong *tab, int err)
{
	atomic_fetch_add(&tab[err > 0 && err < NERR ? err : 0], 1);
}

/* "EINVAL 12, EAGAIN 3" or "none". */
static const char *err_str(atomic_ulong *tab, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int e = 0; e < NERR; e++) {
		unsigned long c = atomic_load(&tab[e]);

		if (c && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s %lu", n ? ", " : "",
					      e ? kapi_errname(e) : "other", c);
	}
	return n ? buf : "none";
}

/* ------------------------------------------------------------ sysfs (guest) */


static struct knob knobs[] = {
	{ THP "shmem_enabled", "advise", "", false },
	{ THP "khugepaged/scan_sleep_millisecs", "0", "", false },
	{ THP "khugepaged/alloc_sleep_millisecs", "0", "", false },
	{ THP "khugepaged/pages_to_scan", "4096", "", false },
};

static void setup_sysfs(void)
{
	knobs_setup(prog, knobs, sizeof(knobs) / sizeof(knobs[0]));
}

/* ------------------------------------------------------------ the region */

static char *pmd_addr(size_t i)
{
	return region + i * PMD_SIZE;
}

static void *map_pmds(size_t first, size_t n, bool fixed)
{
	void *addr = fixed ? pmd_addr(first) : NULL;
	int fl = fixed ? MAP_FIXED : 0;
	off_t off = (off_t)(first * PMD_SIZE);
	size_t len = n * PMD_SIZE;

	switch (cur) {
	case R_ANON:
		return mmap(addr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | fl, -1, 0);
	case R_SHMEM:
		return mmap(addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | fl, shm_fd, off);
	case R_FILE_SHARED:
		return mmap(addr, len, PROT_READ, MAP_SHARED | fl, file_fd, off);
	default:
		return mmap(addr, len, PROT_READ, MAP_PRIVATE | fl, file_fd, off);
	}
}

/* The file: written, synced (collapse refuses dirty pages), reopened read-only, unlinked. */
static int make_file(const char *dir, size_t len, char *why, size_t whylen)
{
	char path[300];
	int fd;
	char *buf = malloc(PMD_SIZE);

	if (!buf)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/libguard-race-%d", dir, (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(why, whylen, "cannot create %s: %s", path, strerror(errno));
		free(buf);
		return -1;
	}
	for (size_t off = 0; off < len; off += PMD_SIZE) {
		for (size_t i = 0; i < PMD_SIZE; i += kapi_page)
			memset(buf + i, (int)(1 + (off + i) / kapi_page % 251), kapi_page);
		if (pwrite(fd, buf, PMD_SIZE, (off_t)off) != (ssize_t)PMD_SIZE) {
			snprintf(why, whylen, "writing %s: %s", path, strerror(errno));
			close(fd);
			unlink(path);
			free(buf);
			return -1;
		}
	}
	free(buf);
	if (fsync(fd)) {
		snprintf(why, whylen, "fsync %s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	/* File THP is only made for files nobody has open for writing. */
	file_fd = open(path, O_RDONLY | O_CLOEXEC);
	unlink(path);
	if (file_fd < 0) {
		snprintf(why, whylen, "reopening %s read-only: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static void populate(size_t first, size_t n)
{
	if (cur == R_ANON || cur == R_SHMEM) {
		/* EFAULT at a guard is fine: the pages before it are done. */
		(void)madvise(pmd_addr(first), n * PMD_SIZE, MADV_POPULATE_WRITE);
	} else {
		(void)madvise(pmd_addr(first), n * PMD_SIZE, MADV_POPULATE_READ);
	}
}

static int collapse(size_t first, size_t n)
{
	if (cur == R_ANON)
		populate(first, n);
	if (madvise(pmd_addr(first), n * PMD_SIZE, MADV_COLLAPSE) == 0) {
		atomic_fetch_add(&n_collapse_ok, 1);
		return 0;
	}
	count_err(n_collapse_err, errno);
	return -errno;
}

static const char *collapse_hint(enum rtype t, int err)
{
	if (err == EINVAL && (t == R_FILE_SHARED || t == R_FILE_PRIVATE))
		return " (file THP needs CONFIG_READ_ONLY_THP_FOR_FS, which this kernel may lack)";
	if (err == EINVAL && t == R_SHMEM)
		return " (shmem THP denied: /sys/kernel/mm/transparent_hugepage/shmem_enabled)";
	if (err == EINVAL)
		return " (THP disabled: /sys/kernel/mm/transparent_hugepage/enabled)";
	return "";
}

/*
 * Map the region for t (fenced by a PMD of PROT_NONE on each side, so it
 * merges with nothing), check that guards work on it and that a collapse
 * succeeds. 0, or -1 with the reason in why.
 */
static int setup_region(enum rtype t, const char *dir, char *why, size_t whylen)
{
	size_t len = npmds * PMD_SIZE;
	char *res = mmap(NULL, len + 3 * PMD_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			 -1, 0);
	int err = 0;

	cur = t;
	if (res == MAP_FAILED) {
		snprintf(why, whylen, "reserving %zu MiB: %s", (len + 3 * PMD_SIZE) >> 20, strerror(errno));
		return -1;
	}
	region = (char *)(((uintptr_t)res + 2 * PMD_SIZE - 1) & ~(PMD_SIZE - 1));
	if (t == R_SHMEM) {
		shm_fd = memfd_create("libguard-race", MFD_CLOEXEC);
		if (shm_fd < 0 || ftruncate(shm_fd, (off_t)len)) {
			snprintf(why, whylen, "memfd: %s", strerror(errno));
			return -1;
		}
	} else if ((t == R_FILE_SHARED || t == R_FILE_PRIVATE) && file_fd < 0) {
		if (make_file(dir, len, why, whylen))
			return -1;
	}
	if (map_pmds(0, npmds, true) == MAP_FAILED) {
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		return -1;
	}
	if (madvise(region, len, MADV_HUGEPAGE)) {
		snprintf(why, whylen, "MADV_HUGEPAGE: %s", strerror(errno));
		return -1;
	}
	populate(0, npmds);

	/* Guards on this very mapping. */
	if (collapse_only) {
		/* nothing to guard with */
	} else if (madvise(region + kapi_page, kapi_page, MADV_GUARD_INSTALL)) {
		err = errno;
		snprintf(why, whylen, "no guard regions in %s mappings here (MADV_GUARD_INSTALL: %s)",
			 rtype_name[t], kapi_errname(err));
		return -1;
	}
	if (!collapse_only && madvise(region + kapi_page, kapi_page, MADV_GUARD_REMOVE))
		die("MADV_GUARD_REMOVE on %s: %s", rtype_name[t], strerror(errno));

	/* A first collapse of every PMD; a busy page (EAGAIN) gets a few more tries. */
	for (int tries = 0; tries < 5; tries++) {
		err = 0;
		for (size_t i = 0; i < npmds; i++) {
			int r = collapse(i, 1);

			if (r)
				err = -r;
		}
		if (err != EAGAIN)
			break;
		usleep(10000);
	}
	if (err) {
		snprintf(why, whylen, "MADV_COLLAPSE on %s fails with %s%s", rtype_name[t], kapi_errname(err),
			 collapse_hint(t, err));
		return -1;
	}
	return 0;
}

static void teardown_region(void)
{
	if (region)
		munmap(region - PMD_SIZE, (npmds + 2) * PMD_SIZE);
	region = NULL;
	if (shm_fd >= 0)
		close(shm_fd);
	shm_fd = -1;
}

/* ------------------------------------------------------------ threads */

struct thread {
	pthread_t tid;
	unsigned int id;
	struct rng rng;
};

static void lock_pmds(size_t lo, size_t hi)
{
	for (size_t i = lo; i <= hi; i++)
		pthread_rwlock_rdlock(&pmd_lock[i]);
}

static void unlock_pmds(size_t lo, size_t hi)
{
	for (size_t i = lo; i <= hi; i++)
		pthread_rwlock_unlock(&pmd_lock[i]);
}

/*
 * Which pages of [p, p + n) are guards: 1 in g[i]. From pagemap bit 58,
 * else PAGEMAP_SCAN, else a read that must fault with SEGV_MAPERR.
 */
static const char *read_guards(char *p, size_t n, unsigned char *g, uint64_t *pm)
{
	memset(g, 0, n);
	memset(pm, 0, n * sizeof(*pm));
	if (caps.pagemap) {
		int r = kapi_pagemap(pmfd, (uintptr_t)p, n, pm);

		if (r)
			die("reading pagemap: %s", strerror(-r));
		for (size_t i = 0; i < n; i++)
			g[i] = (pm[i] >> PM_GUARD_BIT) & 1;
		return "pagemap bit 58";
	}
	if (caps.scan) {
		int r = kapi_scan_guards(pmfd, (uintptr_t)p, (uintptr_t)(p + n * kapi_page), g);

		if (r)
			die("PAGEMAP_SCAN: %s", strerror(-r));
		return "PAGEMAP_SCAN";
	}
	for (size_t i = 0; i < n; i++) {
		struct fault f;
		size_t idx = 0;
		uint64_t v;

		g[i] = probe_read(p + i * kapi_page, &idx, 1, &v, &f) && f.sig == SIGSEGV &&
		       f.code == SEGV_MAPERR;
	}
	return "a read faulting with SEGV_MAPERR";
}

static void report_unguarded(char *p, size_t n, const unsigned char *g, const uint64_t *pm,
			     const char *how, unsigned long iter, int id)
{
	size_t first = n, last = 0, bad = 0;
	char *a;
	struct fault f;
	size_t idx = 0;
	uint64_t v;
	int faulted;

	for (size_t i = 0; i < n; i++)
		if (!g[i]) {
			bad++;
			if (first == n)
				first = i;
			last = i;
		}
	a = p + first * kapi_page;
	atomic_store(&stop, 1);	/* the collapsers' next step would blur the picture */
	if (caps.pagemap) {
		/* The whole PMD around it: all none is a skipped (or freed) PTE table. */
		char *pmd = (char *)((uintptr_t)a & ~(PMD_SIZE - 1));
		uint64_t *e = malloc(pages_per_pmd * sizeof(*e));
		size_t ng = 0, np = 0, nn = 0;

		if (e && !kapi_pagemap(pmfd, (uintptr_t)pmd, pages_per_pmd, e)) {
			for (size_t i = 0; i < pages_per_pmd; i++) {
				ng += (e[i] >> PM_GUARD_BIT) & 1;
				np += (e[i] >> PM_PRESENT_BIT) & 1;
				nn += !(e[i] >> PM_GUARD_BIT & 1) && !(e[i] >> PM_PRESENT_BIT & 1);
			}
			fprintf(stderr, "%s: that PMD [%p, +2 MiB) right after: %zu guard, %zu "
				"present, %zu neither\n", prog, (void *)pmd, ng, np, nn);
		}
		free(e);
	}
	faulted = probe_read(a, &idx, 1, &v, &f);
	fprintf(stderr, "%s: FAIL: %s: MADV_GUARD_INSTALL of [%p, %p) (%zu pages, crossing PMD "
		"boundary %p) returned 0, but %zu of its pages are not guards by %s: first %p "
		"(PMD %zu of the region, page %zu in it), last %p; installer %d, iteration %lu\n",
		prog, rtype_name[cur], (void *)p, (void *)(p + n * kapi_page), n,
		(void *)(((uintptr_t)p + PMD_SIZE) & ~(PMD_SIZE - 1)), bad, how, (void *)a,
		(size_t)(a - region) / PMD_SIZE, (size_t)(a - region) % PMD_SIZE / kapi_page,
		(void *)(p + last * kapi_page), id, iter);
	fprintf(stderr, "%s: pagemap entry of %p: %#llx; a read of it %s\n", prog, (void *)a,
		(unsigned long long)pm[first],
		faulted ? probe_code_name(f.sig, f.code) : "SUCCEEDED (the page is accessible)");
	kapi_dump_maps(2, (uintptr_t)region, (uintptr_t)region + npmds * PMD_SIZE);
	die("%s: unguarded page %p after a successful MADV_GUARD_INSTALL (iteration %lu)",
	    rtype_name[cur], (void *)a, iter);
}

static void *installer(void *arg)
{
	struct thread *t = arg;
	size_t maxn = pages_per_pmd * npmds;
	unsigned char *g = malloc(maxn);
	uint64_t *pm = malloc(maxn * sizeof(*pm));
	size_t nb = 0, bounds[MAX_PMDS];
	unsigned long iter = 0;

	if (!g || !pm)
		die("out of memory");
	/* Boundary b (between PMD b-1 and b) belongs to installer (b-1) % ninstallers. */
	for (size_t b = 1; b < npmds; b++)
		if ((b - 1) % (size_t)ninstallers == t->id)
			bounds[nb++] = b;
	while (!atomic_load(&stop) && nb) {
		size_t b = bounds[rng_below(&t->rng, nb)], lo, hi, before, after, n;
		char *p;
		const char *how;
		int r;

		if (max_installs && atomic_fetch_add(&n_installs, 0) >= max_installs)
			break;
		if (ninstallers == 1 && npmds > 2 && rng_below(&t->rng, 8) == 0) {
			/* Wide: from inside one PMD to inside another, whole PMDs between. */
			lo = rng_below(&t->rng, npmds - 2);
			hi = lo + 2 + rng_below(&t->rng, npmds - lo - 2);
			before = 1 + rng_below(&t->rng, pages_per_pmd - 1);
			after = 1 + rng_below(&t->rng, pages_per_pmd - 1);
			b = lo + 1;
			p = pmd_addr(lo) + (pages_per_pmd - before) * kapi_page;
			n = before + (hi - lo - 1) * pages_per_pmd + after;
		} else {
			/* Narrow: a few pages on each side of boundary b, never reaching another. */
			size_t side = pages_per_pmd / 2 - 1;

			before = 1 + (rng_below(&t->rng, 4) ? rng_below(&t->rng, 8) : rng_below(&t->rng, side));
			after = 1 + (rng_below(&t->rng, 4) ? rng_below(&t->rng, 8) : rng_below(&t->rng, side));
			lo = b - 1;
			hi = b;
			p = pmd_addr(b) - before * kapi_page;
			n = before + after;
		}
		atomic_store(&target[t->id], b);
		lock_pmds(lo, hi);
		iter++;
		r = madvise(p, n * kapi_page, MADV_GUARD_INSTALL);
		if (r) {
			count_err(n_install_err, errno);
			/* Whatever it did, leave the range clean. */
			if (madvise(p, n * kapi_page, MADV_GUARD_REMOVE))
				die("%s: MADV_GUARD_REMOVE after a failed install (%s): %s", rtype_name[cur],
				    kapi_errname(errno), strerror(errno));
			unlock_pmds(lo, hi);
			continue;
		}
		how = read_guards(p, n, g, pm);
		for (size_t i = 0; i < n; i++)
			if (!g[i])
				report_unguarded(p, n, g, pm, how, iter, (int)t->id);
		atomic_fetch_add(&n_installs, 1);
		atomic_fetch_add(&n_pages, n);
		if (madvise(p, n * kapi_page, MADV_GUARD_REMOVE))
			die("%s: MADV_GUARD_REMOVE of [%p, +%zu pages): %s (iteration %lu)", rtype_name[cur],
			    (void *)p, n, strerror(errno), iter);
		read_guards(p, n, g, pm);
		for (size_t i = 0; i < n; i++)
			if (g[i])
				die("%s: page %p is still a guard after MADV_GUARD_REMOVE of [%p, +%zu pages) "
				    "returned 0 (iteration %lu)", rtype_name[cur], (void *)(p + i * kapi_page),
				    (void *)p, n, iter);
		unlock_pmds(lo, hi);
	}
	free(g);
	free(pm);
	return NULL;
}

static void *collapser(void *arg)
{
	struct thread *t = arg;

	while (!atomic_load(&stop)) {
		size_t i;
		uint64_t op = rng_below(&t->rng, 64);

		if (max_installs && atomic_load(&n_installs) >= max_installs)
			break;
		if (rng_below(&t->rng, 4)) {
			/* One of the two PMDs around an installer's boundary. */
			size_t b = atomic_load(&target[rng_below(&t->rng, (uint64_t)ninstallers)]);

			i = b - rng_below(&t->rng, 2);
		} else {
			i = rng_below(&t->rng, npmds);
		}
		if (op < 56 || (op < 62 && no_dontneed) || (op >= 62 && no_remap)) {
			/* The read lock only keeps another collapser from remapping it meanwhile. */
			pthread_rwlock_rdlock(&pmd_lock[i]);
			collapse(i, 1);
			pthread_rwlock_unlock(&pmd_lock[i]);
		} else if (op < 62) {
			/* Empties the PTE table (the guards stay). */
			pthread_rwlock_rdlock(&pmd_lock[i]);
			if (madvise(pmd_addr(i), PMD_SIZE, MADV_DONTNEED))
				die("%s: MADV_DONTNEED: %s", rtype_name[cur], strerror(errno));
			pthread_rwlock_unlock(&pmd_lock[i]);
			atomic_fetch_add(&n_dontneed, 1);
		} else {
			/* Frees the PTE table: no installer is in this PMD. */
			pthread_rwlock_wrlock(&pmd_lock[i]);
			if (munmap(pmd_addr(i), PMD_SIZE) || map_pmds(i, 1, true) == MAP_FAILED ||
			    madvise(pmd_addr(i), PMD_SIZE, MADV_HUGEPAGE))
				die("%s: munmap and mmap of PMD %zu: %s", rtype_name[cur], i, strerror(errno));
			populate(i, 1);
			pthread_rwlock_unlock(&pmd_lock[i]);
			atomic_fetch_add(&n_remaps, 1);
		}
	}
	return NULL;
}

/* Race on backing t for secs; 1 raced, 0 skipped (why says why). */
static int race(enum rtype t, double secs, const char *dir, char *why, size_t whylen)
{
	struct thread th[2 * MAX_THREADS];
	int nth = ninstallers + ncollapsers;
	unsigned long kc0 = khugepaged_stat("pages_collapsed"), ks0 = khugepaged_stat("full_scans");
	char e1[256], e2[256];
	double t0;

	memset((void *)n_install_err, 0, sizeof(n_install_err));
	memset((void *)n_collapse_err, 0, sizeof(n_collapse_err));
	atomic_store(&n_installs, 0);
	atomic_store(&n_pages, 0);
	atomic_store(&n_collapse_ok, 0);
	atomic_store(&n_dontneed, 0);
	atomic_store(&n_remaps, 0);
	atomic_store(&stop, 0);
	if (setup_region(t, dir, why, whylen)) {
		teardown_region();
		return 0;
	}
	/* The run's counts start after the first collapse. */
	atomic_store(&n_collapse_ok, 0);
	memset((void *)n_collapse_err, 0, sizeof(n_collapse_err));
	for (int i = 0; i < ninstallers; i++)
		atomic_store(&target[i], (size_t)i + 1 < npmds ? (size_t)i + 1 : 1);
	t0 = stress_now();
	for (int i = 0; i < nth; i++) {
		th[i].id = i < ninstallers ? (unsigned int)i : (unsigned int)(i - ninstallers);
		rng_seed(&th[i].rng, seed ^ ((uint64_t)t << 56) ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull));
		if (pthread_create(&th[i].tid, NULL, i < ninstallers ? installer : collapser, &th[i]))
			die("pthread_create: %s", strerror(errno));
	}
	while (stress_now() - t0 < secs && !(max_installs && atomic_load(&n_installs) >= max_installs))
		usleep(50000);
	atomic_store(&stop, 1);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i].tid, NULL);
	printf("%s: %s: %.1f s, %lu installs checked (%lu pages), all guarded; install errors: %s; "
	       "MADV_COLLAPSE %lu succeeded, failed: %s; %lu DONTNEED, %lu remaps; khugepaged: "
	       "+%lu pages collapsed, +%lu full scans\n", prog, rtype_name[t], stress_now() - t0,
	       atomic_load(&n_installs), atomic_load(&n_pages), err_str(n_install_err, e1, sizeof(e1)),
	       atomic_load(&n_collapse_ok), err_str(n_collapse_err, e2, sizeof(e2)),
	       atomic_load(&n_dontneed), atomic_load(&n_remaps),
	       khugepaged_stat("pages_collapsed") - kc0, khugepaged_stat("full_scans") - ks0);
	teardown_region();
	if (!atomic_load(&n_collapse_ok)) {
		snprintf(why, whylen, "no MADV_COLLAPSE succeeded during the run (failures: %s)", e2);
		return 0;
	}
	if (!atomic_load(&n_installs)) {
		snprintf(why, whylen, "no install succeeded during the run (errors: %s)", e1);
		return 0;
	}
	return 1;
}

static int parse_backings(const char *s, bool *want)
{
	char buf[256], *tok, *save;

	snprintf(buf, sizeof(buf), "%s", s);
	for (int t = 0; t < R_COUNT; t++)
		want[t] = false;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int t;

		for (t = 0; t < R_COUNT && strcmp(tok, rtype_name[t]); t++)
			;
		if (t == R_COUNT) {
			fprintf(stderr, "%s: unknown backing '%s' (anon, shmem, file-shared, file-private)\n",
				prog, tok);
			return -1;
		}
		want[t] = true;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s [--time SEC] [--iterations N] [--seed N] [--backings LIST] [--require LIST]\n"
		"          [--pmds N] [--installers N] [--collapsers N] [--dir DIR] [--setup-sysfs]\n"
		"  --time SEC        total time, shared by the backings that run (default 20)\n"
		"  --iterations N    stop a backing after N checked installs (default: time only)\n"
		"  --backings LIST   of anon, shmem, file-shared, file-private (default all)\n"
		"  --require LIST    backings that must be raced: a skip of one fails the run\n"
		"  --pmds N          2 MiB PMDs per region (default 4, 2..%d)\n"
		"  --installers N    installer threads (default 1), --collapsers N (default 2)\n"
		"  --dir DIR         where the file goes (default $LIBGUARD_SCRATCH, else .)\n"
		"  --ops LIST        what collapsers do besides MADV_COLLAPSE: dontneed, remap\n"
		"                    (default dontneed,remap; 'none' for collapses only)\n"
		"  --setup-sysfs     guest only: shmem THP on, khugepaged without sleeps\n"
		"  --probe-collapse  only say on which backings MADV_COLLAPSE works (any kernel)\n",
		prog, MAX_PMDS);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "time", required_argument, NULL, 't' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 's' },
		{ "backings", required_argument, NULL, 'b' },
		{ "require", required_argument, NULL, 'r' },
		{ "pmds", required_argument, NULL, 'p' },
		{ "installers", required_argument, NULL, 'I' },
		{ "collapsers", required_argument, NULL, 'C' },
		{ "dir", required_argument, NULL, 'd' },
		{ "ops", required_argument, NULL, 'o' },
		{ "probe-collapse", no_argument, NULL, 'P' },
		{ "setup-sysfs", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool want[R_COUNT] = { true, true, true, true }, require[R_COUNT] = { 0 }, sysfs = false;
	bool ran[R_COUNT] = { 0 };
	char why[R_COUNT][512];
	double secs = 20, t0;
	const char *dir = NULL, *env;
	struct utsname u;
	int opt, r, nwant = 0, nran = 0, fail = 0;
	char thp[64] = "?", shm[64] = "?";

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		char *end = NULL;

		switch (opt) {
		case 't': secs = strtod(optarg, &end); break;
		case 'i': max_installs = strtoul(optarg, &end, 0); break;
		case 's': seed = strtoull(optarg, &end, 0); break;
		case 'b': if (parse_backings(optarg, want)) usage(); break;
		case 'r': if (parse_backings(optarg, require)) usage(); break;
		case 'p': npmds = strtoul(optarg, &end, 0); break;
		case 'I': ninstallers = atoi(optarg); break;
		case 'C': ncollapsers = atoi(optarg); break;
		case 'd': dir = optarg; break;
		case 'o':
			no_dontneed = !strstr(optarg, "dontneed");
			no_remap = !strstr(optarg, "remap");
			break;
		case 'S': sysfs = true; break;
		case 'P': collapse_only = true; break;
		default: usage();
		}
		if (end && *end) {
			fprintf(stderr, "%s: not a number: %s\n", prog, optarg);
			usage();
		}
	}
	if (optind < argc || secs <= 0 || npmds < 2 || npmds > MAX_PMDS || ninstallers < 1 ||
	    ninstallers > MAX_THREADS || (size_t)ninstallers > npmds - 1 || ncollapsers < 1 ||
	    ncollapsers > MAX_THREADS)
		usage();
	for (int t = 0; t < R_COUNT; t++) {
		if (require[t] && !want[t]) {
			fprintf(stderr, "%s: --require %s, but --backings leaves it out\n", prog, rtype_name[t]);
			return 2;
		}
		nwant += want[t];
	}
	if (!seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)time(NULL);
	env = getenv("LIBGUARD_KERNEL");
	if (sysfs && !(env && *env)) {
		fprintf(stderr, "%s: --setup-sysfs changes system-wide THP settings and is for the QEMU "
			"guest only (tests/vm/run sets LIBGUARD_KERNEL); refusing on this machine\n", prog);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	kapi_init();
	pages_per_pmd = PMD_SIZE / kapi_page;
	for (size_t i = 0; i < MAX_PMDS; i++)
		pthread_rwlock_init(&pmd_lock[i], NULL);
	uname(&u);
	printf("%s: seed %llu, kernel %s, %zu PMDs a region, %d installer(s), %d collapser(s), %.0f s "
	       "over %d backing(s)%s\n", prog, (unsigned long long)seed, u.release, npmds, ninstallers,
	       ncollapsers, secs, nwant, max_installs ? " (or the iteration bound)" : "");
	if (backing_open(&bk, dir))
		return 1;
	if (!dir)
		dir = bk.dir;
	probe_init(on_unexpected);
	if (collapse_only) {
		/* Is THP collapse there to race with, guards or not? */
		if (sysfs)
			setup_sysfs();
		for (int t = 0; t < R_COUNT; t++) {
			char w[512];

			if (!want[t])
				continue;
			if (setup_region((enum rtype)t, dir, w, sizeof(w)))
				printf("%s: %s: %s\n", prog, rtype_name[t], w);
			else
				printf("%s: %s: MADV_COLLAPSE works\n", prog, rtype_name[t]);
			teardown_region();
		}
		return 0;
	}
	r = caps_probe(prog, &bk, &caps);
	if (r != CAPS_OK)
		return r;
	caps_print(prog, &caps);
	if (sysfs)
		setup_sysfs();
	if (!knob_read(THP "enabled", thp, sizeof(thp)))
		knob_selected(thp);
	if (!knob_read(THP "shmem_enabled", shm, sizeof(shm)))
		knob_selected(shm);
	printf("%s: THP enabled=%s, shmem_enabled=%s, khugepaged scan_sleep_millisecs=%lu\n", prog, thp,
	       shm, khugepaged_stat("scan_sleep_millisecs"));

	printf("%s: file on %s (%s)%s%s\n", prog, dir, bk.dir_fs, *bk.note ? "; " : "", bk.note);
	pmfd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pmfd < 0)
		die("/proc/self/pagemap: %s", strerror(errno));

	for (int t = 0; t < R_COUNT; t++) {
		why[t][0] = 0;
		if (!want[t])
			continue;
		if (!caps.type_ok[rtype_bt[t]]) {
			snprintf(why[t], sizeof(why[t]), "no guard regions in %s mappings (%s)",
				 btype_name[rtype_bt[t]], kapi_errname(caps.type_err[rtype_bt[t]]));
			nwant--;
			want[t] = false;
		}
	}
	/* Which backings can be raced at all, so that the time goes to those. */
	for (int t = 0; t < R_COUNT; t++) {
		if (!want[t])
			continue;
		if (setup_region((enum rtype)t, dir, why[t], sizeof(why[t]))) {
			want[t] = false;
			nwant--;
		}
		teardown_region();
	}
	t0 = stress_now();
	for (int t = 0, left = nwant; t < R_COUNT; t++) {
		double slice;

		if (!want[t])
			continue;
		/* What is left, shared by the backings still to run (a skip takes none). */
		slice = (secs - (stress_now() - t0)) / left--;
		if (slice < 1)
			slice = 1;
		ran[t] = race((enum rtype)t, slice, dir, why[t], sizeof(why[t]));
		nran += ran[t];
	}
	for (int t = 0; t < R_COUNT; t++) {
		if (ran[t] || !*why[t])
			continue;
		if (require[t]) {
			printf("%s: FAIL: %s is required but was not raced: %s\n", prog, rtype_name[t], why[t]);
			fail = 1;
		} else {
			printf("%s: SKIP %s: %s\n", prog, rtype_name[t], why[t]);
		}
	}
	if (fail)
		return 1;
	if (!nran) {
		printf("%s: SKIP: no backing could be raced\n", prog);
		return 77;
	}
	printf("%s: PASS seed %llu: %d backing(s) raced, every successful install fully guarded\n", prog,
	       (unsigned long long)seed, nran);
	return 0;
}
