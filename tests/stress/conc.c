// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * stress-conc: guard regions under concurrency. For a bounded time,
 * accessor threads (2 per CPU) read and write random pages of an arena of
 * every supported backing type while other threads install and remove
 * guards (raw madvise and libguard), mprotect ranges to PROT_NONE and
 * back, zap them (DONTNEED, FREE, COLD, PAGEOUT, POPULATE_READ), and fork
 * (the child checks what it inherited). See README.md.
 *
 * How an access is judged: every page has, in userspace, its guard and
 * PROT_NONE state and a sequence lock: a mutating thread raises `busy'
 * and bumps `gen' before its system call, and after it updates the state,
 * bumps `gen' again and drops `busy'. An accessor reads gen, busy and the
 * state, touches the page, and reads gen again: if nothing was in flight
 * and gen did not move, the state it read is what the kernel had during
 * the access, and the fault (or its absence) must match it exactly; a
 * success on a page that must be guarded or PROT_NONE is the worst
 * failure there is. Otherwise any of "no fault", SEGV_MAPERR or
 * SEGV_ACCERR is allowed; SIGBUS never is (the files cover the arena).
 * Contents: a word read is zero or a tag some thread wrote to this very
 * page (the tag carries the page number), so a page showing up at the
 * wrong address is caught.
 *
 * After the time is up everything is joined and the final state must be
 * exactly what the last operation on each page left (one thread owns each
 * page's guard state, one the protection), by fault probes, pagemap bit
 * 58 and PAGEMAP_SCAN; then a deterministic pass removes everything and
 * guards every other page across all the VMAs at once.
 *
 * Exit status: 0 pass, 1 failure, 77 no guard regions in this kernel.
 */
#include "backing.h"
#include "caps.h"
#include "guard.h"
#include "fail.h"
#include "kapi.h"
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 64		/* pages per mapping */

struct cpage {
	atomic_uint busy;	/* mutations in flight */
	atomic_uint gen;	/* bumped before and after each mutation */
	atomic_uchar guard;	/* guarded, as of the last completed install/remove */
	atomic_uchar pnone;	/* PROT_NONE, as of the last completed mprotect */
};

static const char *prog = "stress-conc";
static size_t npages, nchunks;
static char *arena;
static struct cpage *st;
static enum btype chunk_type[64];
static struct backing bk;
static struct caps caps;
static atomic_int stop;
static uint64_t seed;
static int guard_threads;

static atomic_ulong n_access, n_fault_mapper, n_fault_accerr, n_unstable, n_guard_ops,
	n_mprotects, n_zaps, n_forks;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* stress_vfail() writes with write(2): this runs in forked children and in any thread. */
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	stress_vfail(prog, seed, fmt, ap);
}

static void on_unexpected(int sig, const siginfo_t *si)
{
	uintptr_t a = (uintptr_t)si->si_addr;

	die("%s at %#lx (page %ld of the arena) outside any probe", probe_code_name(sig, si->si_code),
	    (unsigned long)a,
	    a >= (uintptr_t)arena && a < (uintptr_t)arena + npages * kapi_page
		    ? (long)((a - (uintptr_t)arena) / kapi_page) : -1L);
}

static char *page_addr(size_t p)
{
	return arena + p * kapi_page;
}

static int default_prot(size_t p)
{
	return btype_readonly(chunk_type[p / CHUNK]) ? PROT_READ : PROT_READ | PROT_WRITE;
}

static void begin(size_t lo, size_t hi)
{
	for (size_t p = lo; p < hi; p++) {
		atomic_fetch_add(&st[p].busy, 1);
		atomic_fetch_add(&st[p].gen, 1);
	}
}

static void end(size_t lo, size_t hi)
{
	for (size_t p = lo; p < hi; p++) {
		atomic_fetch_add(&st[p].gen, 1);
		atomic_fetch_sub(&st[p].busy, 1);
	}
}

static uint64_t tag(size_t p, unsigned int thread, uint32_t n)
{
	return (uint64_t)(p + 1) << 40 | (uint64_t)(thread & 0xff) << 32 | n;
}

static void check_word(size_t p, uint64_t v, const char *who)
{
	if (v && (v >> 40) != p + 1)
		die("%s: page %zu holds %#llx, a tag written to page %lld", who, p,
		    (unsigned long long)v, (long long)(v >> 40) - 1);
}

static const char *want_name(int guard, int pnone, int write, size_t p)
{
	if (pnone || (write && btype_readonly(chunk_type[p / CHUNK])))
		return "SEGV_ACCERR";
	return guard ? "SEGV_MAPERR" : "no fault";
}

static bool fault_ok(const struct fault *f, int guard, int pnone, int write, size_t p)
{
	if (pnone || (write && btype_readonly(chunk_type[p / CHUNK])))
		return f->sig == SIGSEGV && f->code == SEGV_ACCERR;
	if (guard)
		return f->sig == SIGSEGV && f->code == SEGV_MAPERR;
	return f->sig == 0;
}

struct thread {
	pthread_t tid;
	unsigned int id;
	struct rng rng;
};

static void *accessor(void *arg)
{
	struct thread *t = arg;
	uint32_t n = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		size_t p = rng_below(&t->rng, npages);
		int write = rng_pct(&t->rng, 40);
		size_t word = rng_pct(&t->rng, 50) ? 0 : kapi_page / 8 - 1;
		volatile uint64_t *w = (volatile uint64_t *)page_addr(p) + word;
		unsigned int g1 = atomic_load(&st[p].gen), b1 = atomic_load(&st[p].busy);
		int guard = atomic_load(&st[p].guard), pnone = atomic_load(&st[p].pnone);
		struct fault f;
		uint64_t v = 0;

		if (write)
			probe_store(w, tag(p, t->id, ++n), &f);
		else
			probe_read((const void *)(w - word), &word, 1, &v, &f);
		atomic_thread_fence(memory_order_seq_cst);
		atomic_fetch_add_explicit(&n_access, 1, memory_order_relaxed);
		if (f.sig == SIGSEGV && f.code == SEGV_MAPERR)
			atomic_fetch_add_explicit(&n_fault_mapper, 1, memory_order_relaxed);
		else if (f.sig == SIGSEGV)
			atomic_fetch_add_explicit(&n_fault_accerr, 1, memory_order_relaxed);
		if (f.sig == SIGBUS || (f.sig && f.addr != (uintptr_t)w))
			die("thread %u: %s page %zu: %s at %#lx", t->id, write ? "writing" : "reading",
			    p, probe_code_name(f.sig, f.code), (unsigned long)f.addr);
		if (b1 == 0 && atomic_load(&st[p].gen) == g1) {
			if (!fault_ok(&f, guard, pnone, write, p))
				die("thread %u: %s page %zu (%s, %sguarded%s, no operation in flight): %s, "
				    "expected %s", t->id, write ? "writing" : "reading", p,
				    btype_name[chunk_type[p / CHUNK]], guard ? "" : "not ",
				    pnone ? ", PROT_NONE" : "", probe_code_name(f.sig, f.code),
				    want_name(guard, pnone, write, p));
		} else {
			atomic_fetch_add_explicit(&n_unstable, 1, memory_order_relaxed);
			if (f.sig && f.code != SEGV_MAPERR && f.code != SEGV_ACCERR)
				die("thread %u: page %zu: %s", t->id, p, probe_code_name(f.sig, f.code));
		}
		if (!f.sig && !write)
			check_word(p, v, "reader");
	}
	return NULL;
}

/* A random range inside one chunk, [lo, hi). */
static void pick_in_chunk(struct rng *r, size_t chunk, size_t *lo, size_t *hi)
{
	size_t len = 1 + rng_below(r, rng_pct(r, 70) ? 4 : CHUNK);

	*lo = chunk * CHUNK + rng_below(r, CHUNK - len + 1);
	*hi = *lo + len;
}

static void *guarder(void *arg)
{
	struct thread *t = arg;
	unsigned int g = t->id;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		/* This thread alone owns the guard state of its chunks. */
		size_t chunk = g + (size_t)guard_threads * rng_below(&t->rng, (nchunks - g + guard_threads - 1) / guard_threads);
		size_t lo, hi, len;
		int install = rng_pct(&t->rng, 50), lib = rng_pct(&t->rng, 30), ret;

		if (chunk >= nchunks)
			continue;
		pick_in_chunk(&t->rng, chunk, &lo, &hi);
		len = (hi - lo) * kapi_page;
		begin(lo, hi);
		if (lib)
			ret = install ? guard_install(page_addr(lo), len, GUARD_NATIVE)
				      : guard_remove(page_addr(lo), len, GUARD_NATIVE);
		else
			ret = madvise(page_addr(lo), len, install ? MADV_GUARD_INSTALL : MADV_GUARD_REMOVE)
				      ? -errno : 0;
		if (ret)
			die("%s [%zu, %zu) of %s: %s", lib ? (install ? "guard_install" : "guard_remove")
				: (install ? "MADV_GUARD_INSTALL" : "MADV_GUARD_REMOVE"), lo, hi,
			    btype_name[chunk_type[chunk]], kapi_errname(ret));
		for (size_t p = lo; p < hi; p++)
			atomic_store(&st[p].guard, (unsigned char)install);
		end(lo, hi);
		atomic_fetch_add_explicit(&n_guard_ops, 1, memory_order_relaxed);
	}
	return NULL;
}

static void *protector(void *arg)
{
	struct thread *t = arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		size_t lo, hi;
		int none = rng_pct(&t->rng, 30);

		pick_in_chunk(&t->rng, rng_below(&t->rng, nchunks), &lo, &hi);
		begin(lo, hi);
		if (mprotect(page_addr(lo), (hi - lo) * kapi_page, none ? PROT_NONE : default_prot(lo)))
			die("mprotect [%zu, %zu): %s", lo, hi, strerror(errno));
		for (size_t p = lo; p < hi; p++)
			atomic_store(&st[p].pnone, (unsigned char)none);
		end(lo, hi);
		atomic_fetch_add_explicit(&n_mprotects, 1, memory_order_relaxed);
	}
	return NULL;
}

/* Zaps change contents, never whether a page faults: no sequence lock. */
static void *zapper(void *arg)
{
	static const struct {
		int advice;
		const char *name;
	} adv[] = {
		{ MADV_DONTNEED, "DONTNEED" }, { MADV_DONTNEED, "DONTNEED" }, { MADV_COLD, "COLD" },
		{ MADV_PAGEOUT, "PAGEOUT" }, { MADV_POPULATE_READ, "POPULATE_READ" },
		{ MADV_FREE, "FREE" },
	};
	struct thread *t = arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		size_t k = rng_below(&t->rng, sizeof(adv) / sizeof(adv[0]));
		size_t lo = rng_below(&t->rng, npages), len = 1 + rng_below(&t->rng, 2 * CHUNK), ret;

		if (lo + len > npages)
			len = npages - lo;
		if (adv[k].advice == MADV_FREE) {
			/* Private anonymous chunks only: elsewhere it is EINVAL. */
			if (chunk_type[lo / CHUNK] != BT_PANON)
				continue;
			if (lo / CHUNK != (lo + len - 1) / CHUNK)
				len = CHUNK - lo % CHUNK;
		}
		ret = madvise(page_addr(lo), len * kapi_page, adv[k].advice) ? (size_t)errno : 0;
		/* Populating stops, as it must, at a guard (EFAULT) or PROT_NONE (EINVAL). */
		if (ret && !(adv[k].advice == MADV_POPULATE_READ && (ret == EFAULT || ret == EINVAL)))
			die("madvise(%s) [%zu, %zu): %s", adv[k].name, lo, lo + len, strerror((int)ret));
		atomic_fetch_add_explicit(&n_zaps, 1, memory_order_relaxed);
	}
	return NULL;
}

/* In the child: every page no mutation was touching must be as its state says. */
static void child_check(void)
{
	int pm = caps.pagemap ? open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC) : -1;

	for (size_t p = 0; p < npages; p++) {
		int guard = atomic_load(&st[p].guard), pnone = atomic_load(&st[p].pnone);
		struct fault f;
		size_t idx = 0;
		uint64_t v, e;

		if (atomic_load(&st[p].busy))
			continue;	/* fork() came in the middle of its mutation */
		probe_read(page_addr(p), &idx, 1, &v, &f);
		if (!fault_ok(&f, guard, pnone, 0, p))
			die("child: page %zu (%s, %sguarded%s): %s, expected %s", p,
			    btype_name[chunk_type[p / CHUNK]], guard ? "" : "not ",
			    pnone ? ", PROT_NONE" : "", probe_code_name(f.sig, f.code),
			    want_name(guard, pnone, 0, p));
		if (!f.sig)
			check_word(p, v, "child");
		if (pm >= 0 && !kapi_pagemap(pm, (uintptr_t)page_addr(p), 1, &e) &&
		    (int)(e >> PM_GUARD_BIT & 1) != guard)
			die("child: pagemap bit 58 of page %zu is %d, its state says %sguarded", p,
			    (int)(e >> PM_GUARD_BIT & 1), guard ? "" : "not ");
	}
	_exit(0);
}

static void *forker(void *arg)
{
	struct thread *t = arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pid_t pid = fork();
		int status;

		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0)
			child_check();
		if (waitpid(pid, &status, 0) != pid)
			die("waitpid: %s", strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			die("a forked child %s %d", WIFEXITED(status) ? "exited with" : "was killed by signal",
			    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		atomic_fetch_add_explicit(&n_forks, 1, memory_order_relaxed);
		usleep(20000 + (useconds_t)rng_below(&t->rng, 30000));
	}
	return NULL;
}

/* Quiesced: every page exactly as the last operation on it left it. */
static void final_check(const char *when)
{
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	uint64_t *e = calloc(npages, sizeof(*e));
	unsigned char *g = calloc(npages, 1);

	if (pm < 0 || !e || !g)
		die("final check: %s", strerror(errno));
	if (caps.pagemap && kapi_pagemap(pm, (uintptr_t)arena, npages, e))
		die("final check: reading pagemap: %s", strerror(errno));
	if (caps.scan && kapi_scan_guards(pm, (uintptr_t)arena, (uintptr_t)arena + npages * kapi_page, g))
		die("final check: PAGEMAP_SCAN: %s", strerror(errno));
	for (size_t p = 0; p < npages; p++) {
		int guard = atomic_load(&st[p].guard), pnone = atomic_load(&st[p].pnone);
		struct fault f;
		size_t idx = 0;
		uint64_t v;

		if (atomic_load(&st[p].busy))
			die("%s: page %zu still busy", when, p);
		probe_read(page_addr(p), &idx, 1, &v, &f);
		if (!fault_ok(&f, guard, pnone, 0, p))
			die("%s: page %zu (%s, %sguarded%s): %s, expected %s", when, p,
			    btype_name[chunk_type[p / CHUNK]], guard ? "" : "not ", pnone ? ", PROT_NONE" : "",
			    probe_code_name(f.sig, f.code), want_name(guard, pnone, 0, p));
		if (!f.sig)
			check_word(p, v, when);
		if (caps.pagemap && (int)(e[p] >> PM_GUARD_BIT & 1) != guard)
			die("%s: pagemap bit 58 of page %zu is %d, expected %d", when, p,
			    (int)(e[p] >> PM_GUARD_BIT & 1), guard);
		if (caps.scan && g[p] != guard)
			die("%s: PAGEMAP_SCAN says page %zu is %sa guard, expected %sguarded", when, p,
			    g[p] ? "" : "not ", guard ? "" : "not ");
	}
	close(pm);
	free(e);
	free(g);
}

/* Remove everything, then guard every other page with one call across all VMAs. */
static void deterministic_pass(void)
{
	int before, after;

	for (size_t c = 0; c < nchunks; c++)
		if (mprotect(page_addr(c * CHUNK), CHUNK * kapi_page, default_prot(c * CHUNK)))
			die("final mprotect: %s", strerror(errno));
	if (madvise(arena, npages * kapi_page, MADV_GUARD_REMOVE))
		die("final MADV_GUARD_REMOVE over the arena: %s", strerror(errno));
	for (size_t p = 0; p < npages; p++) {
		atomic_store(&st[p].guard, 0);
		atomic_store(&st[p].pnone, 0);
	}
	final_check("after removing everything");
	before = kapi_vma_count();
	for (size_t p = 0; p < npages; p += 2) {
		if (madvise(page_addr(p), kapi_page, MADV_GUARD_INSTALL))
			die("final MADV_GUARD_INSTALL of page %zu: %s", p, strerror(errno));
		atomic_store(&st[p].guard, 1);
	}
	after = kapi_vma_count();
	if (before != after)
		die("guarding every other page changed the VMA count from %d to %d", before, after);
	final_check("after guarding every other page");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "time", required_argument, NULL, 't' },
		{ "threads", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "chunks", required_argument, NULL, 'c' },
		{ "dir", required_argument, NULL, 'd' },
		{ 0 },
	};
	double secs = 10, t0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int naccess = 0, opt, r, nthreads;
	const char *dir = NULL;
	struct thread *th;
	struct utsname u;
	size_t want_chunks = 16;
	enum btype usable[BT_COUNT];
	int nusable = 0;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 't': secs = strtod(optarg, NULL); break;
		case 'n': naccess = atoi(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'c': want_chunks = strtoul(optarg, NULL, 0); break;
		case 'd': dir = optarg; break;
		default:
			fprintf(stderr, "usage: %s [--time SEC] [--threads N] [--seed N] [--chunks N] [--dir DIR]\n"
				"  --threads N   accessor threads (default 2 per online CPU)\n"
				"  --chunks N    mappings of %d pages (default 16, at most 64)\n", prog, CHUNK);
			return 2;
		}
	}
	if (want_chunks < 1 || want_chunks > 64 || secs <= 0)
		return 2;
	if (!seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)time(NULL);
	if (naccess <= 0)
		naccess = (int)(cpus > 0 ? cpus : 1) * 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	kapi_init();
	uname(&u);
	guard_threads = naccess >= 4 ? 2 : 1;
	printf("%s: seed %llu, kernel %s, %d accessor threads (%ld CPUs), %d guard threads, "
	       "1 mprotect, 1 zap, 1 fork thread; %.0f s\n", prog, (unsigned long long)seed, u.release,
	       naccess, cpus, guard_threads, secs);
	if (backing_open(&bk, dir))
		return 1;
	probe_init(on_unexpected);
	r = caps_probe(prog, &bk, &caps);
	if (r != CAPS_OK)
		return r;
	caps_print(prog, &caps);
	for (int t = 0; t < BT_COUNT; t++)
		if (caps.type_ok[t])
			usable[nusable++] = (enum btype)t;

	/* One chunk per type in turn; each file offset is mapped by one chunk only. */
	nchunks = want_chunks;
	npages = nchunks * CHUNK;
	for (int f = 0; f < F_COUNT; f++)
		if (ftruncate(bk.fd[f], (off_t)(npages * kapi_page)))
			die("ftruncate: %s", strerror(errno));
	arena = mmap(NULL, npages * kapi_page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	st = calloc(npages, sizeof(*st));
	if (arena == MAP_FAILED || !st)
		die("allocating the arena: %s", strerror(errno));
	for (size_t c = 0; c < nchunks; c++) {
		enum btype t = usable[c % (size_t)nusable];

		chunk_type[c] = t;
		if (backing_map(&bk, t, page_addr(c * CHUNK), CHUNK * kapi_page, default_prot(c * CHUNK),
				(off_t)(c * CHUNK * kapi_page)) == MAP_FAILED)
			die("mapping chunk %zu (%s): %s", c, btype_name[t], strerror(errno));
	}
	(void)guard_probe();

	nthreads = naccess + guard_threads + 3;
	th = calloc((size_t)nthreads, sizeof(*th));
	if (!th)
		return 1;
	t0 = now();
	for (int i = 0; i < nthreads; i++) {
		void *(*fn)(void *) = i < naccess ? accessor
				      : i < naccess + guard_threads ? guarder
				      : i == naccess + guard_threads ? protector
				      : i == naccess + guard_threads + 1 ? zapper : forker;

		th[i].id = i < naccess ? (unsigned int)i
			   : i < naccess + guard_threads ? (unsigned int)(i - naccess) : (unsigned int)i;
		rng_seed(&th[i].rng, seed + (uint64_t)i * 0x9e3779b97f4a7c15ull);
		if (pthread_create(&th[i].tid, NULL, fn, &th[i]))
			die("pthread_create: %s", strerror(errno));
	}
	while (now() - t0 < secs)
		usleep(100000);
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i].tid, NULL);
	final_check("after the threads stopped");
	deterministic_pass();
	printf("%s: PASS seed %llu: %.1f s, %lu accesses (%lu SEGV_MAPERR, %lu SEGV_ACCERR, %lu during "
	       "a mutation), %lu guard ops, %lu mprotects, %lu zaps, %lu forks checked\n", prog,
	       (unsigned long long)seed, now() - t0, atomic_load(&n_access), atomic_load(&n_fault_mapper),
	       atomic_load(&n_fault_accerr), atomic_load(&n_unstable), atomic_load(&n_guard_ops),
	       atomic_load(&n_mprotects), atomic_load(&n_zaps), atomic_load(&n_forks));
	free(th);
	return 0;
}
