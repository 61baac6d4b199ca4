// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * stress-threads: every public call that makes, changes or drops guards,
 * from several threads at once, each thread checking its own memory
 * against its own model after every step. Nothing keeps the threads
 * apart: they map and unmap with plain mmap()/munmap() and the library's
 * wrappers, so the kernel hands each one the addresses another just
 * freed. That is what finds a window in which one thread's bookkeeping
 * (unmap, then forget the records of that range) deletes or hides what
 * another thread recorded meanwhile at the same addresses.
 *
 * Each step is followed by the checks its result implies:
 *  - a guard faults (a write(2) from it fails with EFAULT; now and then a
 *    real touch, which must raise SIGSEGV);
 *  - guard_query() says which pages are guards, and by which method;
 *  - a removal gives back the caller's protection (readable; writable iff
 *    the mapping was) and the data of every page that was not a guard
 *    (a guard's own page reads zero: installing discards it);
 *  - guard_unmap() and guard_stack_free() return 0 on an intact mapping;
 *  - a plain munmap() of memory that still has guards leaves records
 *    behind that must never act on whatever is mapped there next.
 * Now and then a thread forks; the child checks that thread's objects,
 * makes and drops a guarded mapping with each method, and exits with its
 * verdict.
 *
 * Both methods in one run: each call picks GUARD_FALLBACK, GUARD_NATIVE
 * (where the kernel has native guards in anonymous memory) or neither.
 *
 * Exit status: 0 pass, 1 failure (each one reported with the seed, the
 * thread and the step).
 */
#include "guard.h"
#include "fail.h"
#include "rng.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXOBJ 12	/* live objects per thread */
#define MAXPG 6		/* usable pages per object */
#define MAXFAIL 20	/* reports printed per thread */

enum kind { K_NONE, K_PLAIN, K_ANON, K_FILE, K_STACK };
static const char *const kind_name[] = { "none", "plain", "guard_map_anon", "guard_map_file",
					 "guard_stack" };

struct obj {
	enum kind kind;
	char *p;		/* first usable page */
	size_t n;		/* usable pages */
	size_t before, after;	/* guard pages around them (not K_PLAIN) */
	int prot;		/* K_PLAIN: PROT_READ or PROT_READ | PROT_WRITE */
	unsigned char guard[MAXPG];	/* K_PLAIN: the GUARD_QUERY_* bits expected */
	uint64_t tag[MAXPG];	/* the first word of each accessible page */
};

struct thread {
	int id;
	pthread_t t;
	struct rng rng;
	struct obj obj[MAXOBJ];
	int pipe[2];		/* write(2) from a page: does the kernel fault on it? */
	int memfd;		/* backing for guard_map_file() */
	uint64_t step, serial;
	unsigned long fails, ops[16];
};

static const char *prog = "stress-threads";
static uint64_t seed;
static size_t page;
static bool native_anon;	/* the kernel has native guards in anonymous memory */
static unsigned long nsteps = 20000;
static bool stale;		/* --stale: plain mappings unmapped with their guards on */
static double deadline;
static atomic_ulong total_fails;
static atomic_int stop;

static __thread sigjmp_buf *volatile touch_jmp;	/* volatile: set before the load, by the compiler too */

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (touch_jmp)
		siglongjmp(*touch_jmp, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void failf(struct thread *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(struct thread *t, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	t->fails++;
	atomic_fetch_add(&total_fails, 1);
	if (t->fails > MAXFAIL)
		return;
	n = snprintf(buf, sizeof(buf), "%s: FAIL (seed %llu, thread %d, step %llu): ", prog,
		     (unsigned long long)seed, t->id, (unsigned long long)t->step);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0)
		_exit(1);
}

/* Does the kernel read p? write(2) from it: 1 byte, or EFAULT. */
static int readable(struct thread *t, const void *p)
{
	char c;

	if (write(t->pipe[1], p, 1) == 1) {
		if (read(t->pipe[0], &c, 1) != 1)
			abort();
		return 1;
	}
	if (errno != EFAULT)
		failf(t, "write(2) from %p: %s", p, strerror(errno));
	return 0;
}

/* Does the kernel write p (which must be readable)? read(2) into it, its own byte. */
static int writable(struct thread *t, char *p)
{
	char c = *(volatile char *)p;

	if (write(t->pipe[1], &c, 1) != 1)
		abort();
	if (read(t->pipe[0], p, 1) == 1)
		return 1;
	if (errno != EFAULT)
		failf(t, "read(2) into %p: %s", p, strerror(errno));
	if (read(t->pipe[0], &c, 1) != 1)
		abort();
	return 0;
}

/* A real load from p: does it raise SIGSEGV? */
static bool touch_faults(const char *p)
{
	sigjmp_buf jb;
	bool faulted = false;

	if (sigsetjmp(jb, 1))
		faulted = true;
	else {
		touch_jmp = &jb;
		(void)*(volatile const char *)p;
	}
	touch_jmp = NULL;
	return faulted;
}

static void check_guard_page(struct thread *t, const char *what, const char *p)
{
	if (readable(t, p))
		failf(t, "%s: guard page %p is readable", what, (const void *)p);
	else if (rng_pct(&t->rng, 5) && !touch_faults(p))
		failf(t, "%s: a load from guard page %p did not fault", what, (const void *)p);
}

static void check_open_page(struct thread *t, const char *what, char *p, uint64_t tag, bool rw)
{
	if (!readable(t, p)) {
		failf(t, "%s: page %p faults, expected accessible", what, (void *)p);
		return;
	}
	if (*(volatile uint64_t *)p != tag)
		failf(t, "%s: page %p holds %#llx, expected %#llx", what, (void *)p,
		      (unsigned long long)*(volatile uint64_t *)p, (unsigned long long)tag);
	if (writable(t, p) != rw)
		failf(t, "%s: page %p is %swritable, expected %s", what, (void *)p, rw ? "not " : "",
		      rw ? "writable" : "read-only");
}

/* Every page of o, and what guard_query() says of its guards, against the model. */
static void verify(struct thread *t, const struct obj *o, const char *what)
{
	unsigned char vec[MAXPG + 8];
	char *lo = o->p - o->before * page;
	size_t all = o->before + o->n + o->after;
	int ret;

	if (o->kind == K_NONE)
		return;
	for (size_t i = 0; i < o->before; i++)
		check_guard_page(t, what, lo + i * page);
	for (size_t i = 0; i < o->after; i++)
		check_guard_page(t, what, o->p + (o->n + i) * page);
	for (size_t i = 0; i < o->n; i++) {
		if (o->kind == K_PLAIN && o->guard[i])
			check_guard_page(t, what, o->p + i * page);
		else
			check_open_page(t, what, o->p + i * page, o->tag[i],
					o->kind != K_PLAIN || (o->prot & PROT_WRITE));
	}
	ret = guard_query(lo, all * page, vec);
	if (ret) {
		failf(t, "%s: guard_query(%p, %zu pages) = %d", what, (void *)lo, all, ret);
		return;
	}
	for (size_t i = 0; i < all; i++) {
		bool edge = i < o->before || i >= o->before + o->n;
		unsigned char want = edge ? 0 : o->kind == K_PLAIN ? o->guard[i - o->before] : 0;

		/* the wrappers' guards: either method, as the library chose */
		if (edge ? !(vec[i] & (GUARD_QUERY_NATIVE | GUARD_QUERY_FALLBACK)) : vec[i] != want)
			failf(t, "%s: guard_query() says %#x of page %p (%s, page %zu of %zu), expected %s%#x",
			      what, vec[i], (void *)(lo + i * page), kind_name[o->kind], i, all,
			      edge ? "a guard, not " : "", want);
	}
}

/* Fresh tags in the writable pages of o. */
static void write_tags(struct thread *t, struct obj *o)
{
	for (size_t i = 0; i < o->n; i++) {
		char *p = o->p + i * page;

		if (o->kind == K_PLAIN && (o->guard[i] || !(o->prot & PROT_WRITE)))
			continue;
		/* a page left inaccessible is reported, not crashed on */
		if (!readable(t, p) || !writable(t, p)) {
			failf(t, "writing: page %p is not writable, expected writable", (void *)p);
			continue;
		}
		o->tag[i] = ((uint64_t)t->id << 56) | (++t->serial << 8) | i;
		*(volatile uint64_t *)p = o->tag[i];
	}
}

static unsigned int pick_method(struct thread *t)
{
	switch (rng_below(&t->rng, native_anon ? 3 : 2)) {
	case 0:
		return GUARD_FALLBACK;
	case 1:
		return 0;
	default:
		return GUARD_NATIVE;
	}
}

/* The GUARD_QUERY_* bit an install with flags gives, on anonymous memory. */
static unsigned char method_bit(unsigned int flags)
{
	return (flags & GUARD_FALLBACK) || !native_anon ? GUARD_QUERY_FALLBACK : GUARD_QUERY_NATIVE;
}

static bool any_guard(const struct obj *o)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->guard[i])
			return true;
	return false;
}

static void op_new(struct thread *t, struct obj *o)
{
	unsigned int flags = pick_method(t), how = 0;
	size_t n = 1 + rng_below(&t->rng, 3);
	void *p = NULL;

	memset(o, 0, sizeof(*o));
	o->n = n;
	switch (rng_below(&t->rng, 8)) {
	case 0: case 1: case 2: case 3:
		o->kind = K_PLAIN;
		o->n = 1 + rng_below(&t->rng, MAXPG);
		o->prot = rng_pct(&t->rng, 20) ? PROT_READ : PROT_READ | PROT_WRITE;
		p = mmap(NULL, o->n * page, o->prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		break;
	case 4: case 5:
		o->kind = K_ANON;
		o->before = rng_below(&t->rng, 2);
		o->after = 1;
		p = guard_map_anon(n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE, o->before * page,
				   o->after * page, flags, &how);
		if (p != MAP_FAILED && how != method_bit(flags))
			failf(t, "guard_map_anon(flags %#x): method %#x", flags, how);
		break;
	case 6:
		o->kind = K_FILE;
		o->before = 1;
		o->after = 1;
		p = guard_map_file(t->memfd, 0, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE, page,
				   page);
		break;
	default:
		o->kind = K_STACK;
		o->before = 1;
		p = guard_stack(n * page, page, flags);
		if (!p)
			p = MAP_FAILED;
		break;
	}
	if (p == MAP_FAILED) {
		failf(t, "mapping kind %d, %zu pages: %s", o->kind, o->n, strerror(errno));
		o->kind = K_NONE;
		return;
	}
	o->p = p;
	write_tags(t, o);
	verify(t, o, "new mapping");
}

static void op_free(struct thread *t, struct obj *o)
{
	int ret = 0;

	switch (o->kind) {
	case K_PLAIN:
		/*
		 * With --stale, sometimes with its guards still on: the records
		 * left behind must stay harmless to what is mapped there next
		 * (tests/stress/README.md: what it found).
		 */
		if (!stale || rng_pct(&t->rng, 50))
			guard_remove(o->p, o->n * page, 0);
		if (munmap(o->p, o->n * page))
			failf(t, "munmap: %s", strerror(errno));
		break;
	case K_ANON:
	case K_FILE:
		ret = guard_unmap(o->p, o->n * page);
		if (ret)
			failf(t, "guard_unmap(%p, %zu pages) of an intact %s = %d", (void *)o->p,
			      o->n, kind_name[o->kind], ret);
		break;
	case K_STACK:
		ret = guard_stack_free(o->p, o->n * page);
		if (ret)
			failf(t, "guard_stack_free(%p, %zu pages) of an intact stack = %d",
			      (void *)o->p, o->n, ret);
		break;
	default:
		return;
	}
	/* a failed unmap leaves the mapping: leak it rather than reuse it */
	o->kind = K_NONE;
}

/* A run of pages of a plain mapping: [*first, *first + *len). */
static void pick_run(struct thread *t, const struct obj *o, size_t *first, size_t *len)
{
	*first = rng_below(&t->rng, o->n);
	*len = 1 + rng_below(&t->rng, o->n - *first < 3 ? o->n - *first : 3);
}

static void op_install(struct thread *t, struct obj *o, bool batch)
{
	unsigned int flags = pick_method(t), how = method_bit(flags);
	size_t first, len, first2 = 0, len2 = 0, done = 0;
	int ret;

	pick_run(t, o, &first, &len);
	if (!any_guard(o) && rng_pct(&t->rng, 30))
		flags |= GUARD_FRESH;
	if (batch) {
		struct iovec iov[2] = { { o->p + first * page, len * page } };

		pick_run(t, o, &first2, &len2);
		if (first2 < first + len && first < first2 + len2)
			len2 = 0;	/* ranges of a batch may not overlap */
		iov[1] = (struct iovec){ o->p + first2 * page, len2 * page };
		ret = guard_install_batch(iov, len2 ? 2 : 1, flags, &done);
	} else {
		unsigned int m = 0;

		ret = guard_install2(o->p + first * page, len * page, flags, &m);
		if (!ret && m != how)
			failf(t, "guard_install2(flags %#x): method %#x", flags, m);
	}
	if (ret) {
		failf(t, "guard_install%s(%p, %zu pages, flags %#x) = %d (done %zu)",
		      batch ? "_batch" : "", (void *)(o->p + first * page), len, flags, ret, done);
		return;
	}
	/* a page guarded by the other method already keeps that guard too */
	for (size_t i = first; i < first + len; i++)
		o->guard[i] |= how;
	for (size_t i = first2; i < first2 + len2; i++)
		o->guard[i] |= how;
	verify(t, o, batch ? "after guard_install_batch" : "after guard_install");
}

static void op_remove(struct thread *t, struct obj *o, bool batch)
{
	unsigned int flags = 0;
	size_t first, len, done = 0;
	int ret;

	pick_run(t, o, &first, &len);
	/* GUARD_FALLBACK removes only fallback guards: ask so only where there are no others */
	if (rng_pct(&t->rng, 30)) {
		bool native_there = false;

		for (size_t i = first; i < first + len; i++)
			native_there |= o->guard[i] & GUARD_QUERY_NATIVE;
		if (!native_there)
			flags = GUARD_FALLBACK;
	}
	if (batch) {
		struct iovec iov = { o->p + first * page, len * page };

		ret = guard_remove_batch(&iov, 1, flags, &done);
	} else {
		ret = guard_remove(o->p + first * page, len * page, flags);
	}
	if (ret) {
		failf(t, "guard_remove%s(%p, %zu pages, flags %#x) = %d", batch ? "_batch" : "",
		      (void *)(o->p + first * page), len, flags, ret);
		return;
	}
	for (size_t i = first; i < first + len; i++)
		if (o->guard[i]) {
			o->guard[i] = 0;
			o->tag[i] = 0;	/* installing discarded the page */
		}
	verify(t, o, "after guard_remove");
}

/*
 * Churn: guard_map_anon() and guard_unmap() in a tight loop, as an
 * allocator's slab cache does, so that the addresses one thread frees are
 * the next another maps (the window of an unmap that forgets its records
 * only after the kernel has handed the range on). Each mapping's guards
 * must be reported right after mapping, and its unmap must succeed.
 */
static void op_churn(struct thread *t)
{
	for (int i = 0; i < 16; i++) {
		unsigned int flags = pick_method(t);
		unsigned char vec[3];
		char *p = guard_map_anon(page, PROT_READ | PROT_WRITE, MAP_PRIVATE, page, page, flags,
					 NULL);
		int ret;

		if (p == MAP_FAILED) {
			failf(t, "churn: guard_map_anon(flags %#x): %s", flags, strerror(errno));
			return;
		}
		ret = guard_query(p - page, 3 * page, vec);
		if (ret || !vec[0] || vec[1] || !vec[2])
			failf(t, "churn: guard_query() = %d, %#x %#x %#x, expected guard, none, guard",
			      ret, vec[0], vec[1], vec[2]);
		ret = guard_unmap(p, page);
		if (ret)
			failf(t, "churn: guard_unmap(%p) of an intact mapping = %d", (void *)p, ret);
	}
}

/* The child of a fork() from this thread: its objects as they were, and a working library. */
static void child(struct thread *t)
{
	t->fails = 0;
	for (int i = 0; i < MAXOBJ; i++)
		verify(t, &t->obj[i], "in a fork child");
	for (unsigned int f = 0; f < 2; f++) {
		unsigned int flags = f ? GUARD_FALLBACK : 0;
		char *p = guard_map_anon(page, PROT_READ | PROT_WRITE, MAP_PRIVATE, page, page,
					 flags, NULL);

		if (p == MAP_FAILED) {
			failf(t, "in a fork child: guard_map_anon(flags %#x): %s", flags,
			      strerror(errno));
			continue;
		}
		check_guard_page(t, "in a fork child", p - page);
		check_guard_page(t, "in a fork child", p + page);
		if (guard_unmap(p, page))
			failf(t, "in a fork child: guard_unmap() of an intact mapping failed");
	}
	_exit(t->fails ? 1 : 0);
}

static void op_fork(struct thread *t)
{
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		failf(t, "fork: %s", strerror(errno));
		return;
	}
	if (!pid)
		child(t);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		failf(t, "fork child: status %#x", status);
}

/*
 * Does an install without flags place native guards in anonymous memory?
 * Asked of the library as the threads will ask it (LIBGUARD_FORCE_FALLBACK
 * says no), not of the capability bits.
 */
static bool native_by_default(void)
{
	unsigned int m = 0;
	char *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || guard_install2(p, page, 0, &m)) {
		perror(prog);
		exit(1);
	}
	guard_remove(p, page, 0);
	munmap(p, page);
	return m == GUARD_METHOD_NATIVE;
}

static void *run(void *arg)
{
	struct thread *t = arg;

	for (t->step = 0; t->step < nsteps && !atomic_load(&stop); t->step++) {
		struct obj *o = &t->obj[rng_below(&t->rng, MAXOBJ)];
		unsigned int op = (unsigned int)rng_below(&t->rng, 100);

		if (stress_now() > deadline)
			break;
		if (o->kind == K_NONE) {
			op_new(t, o);
			t->ops[0]++;
		} else if (op < 25) {
			op_free(t, o);
			t->ops[1]++;
		} else if (o->kind != K_PLAIN || op < 35) {
			verify(t, o, "check");
			if (o->kind != K_PLAIN)
				write_tags(t, o);
			t->ops[2]++;
		} else if (op < 65) {
			op_install(t, o, op < 40);
			t->ops[3]++;
		} else if (op < 95) {
			op_remove(t, o, op < 70);
			t->ops[4]++;
		} else if (op < 99) {
			write_tags(t, o);
			verify(t, o, "after writing");
			t->ops[2]++;
		} else if (rng_pct(&t->rng, 20)) {
			op_fork(t);
			t->ops[5]++;
		}
		if (rng_pct(&t->rng, 5)) {
			op_churn(t);
			t->ops[6]++;
		}
	}
	/* the end: every object checked and dropped as its owner would */
	for (int i = 0; i < MAXOBJ; i++) {
		verify(t, &t->obj[i], "final check");
		if (t->obj[i].kind == K_PLAIN)
			guard_remove(t->obj[i].p, t->obj[i].n * page, 0);
		op_free(t, &t->obj[i]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "steps", required_argument, NULL, 'n' },
		{ "time", required_argument, NULL, 'T' },
		{ "stale", no_argument, NULL, 'S' },
		{ 0 },
	};
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER };
	unsigned long nthreads = 4, fails;
	double secs = 10, t0;
	struct thread *th;
	int opt;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 't': nthreads = strtoul(optarg, NULL, 0); break;
		case 'n': nsteps = strtoul(optarg, NULL, 0); break;
		case 'T': secs = strtod(optarg, NULL); break;
		case 'S': stale = true; break;
		default:
			fprintf(stderr, "usage: %s [--seed N] [--threads N] [--steps N] [--time SEC] [--stale]\n",
				prog);
			return 2;
		}
	}
	if (!nthreads || nthreads > 64 || !(secs > 0)) {
		fprintf(stderr, "%s: --threads 1..64, --time > 0\n", prog);
		return 2;
	}
	page = (size_t)sysconf(_SC_PAGESIZE);
	native_anon = native_by_default();
	sigaction(SIGSEGV, &sa, NULL);
	th = calloc(nthreads, sizeof(*th));
	if (!th)
		return 1;
	t0 = stress_now();
	deadline = t0 + secs;
	printf("%s: seed %llu, %lu threads, up to %lu steps each or %.0f s; methods: fallback%s\n",
	       prog, (unsigned long long)seed, nthreads, nsteps, secs,
	       native_anon ? ", native" : " only (no native guards in anonymous memory)");
	printf("%s: plain mappings unmapped with guards on (stale records): %s\n", prog,
	       stale ? "yes (--stale)"
		     : "no; --stale adds them");
	fflush(stdout);
	for (unsigned long i = 0; i < nthreads; i++) {
		struct thread *t = &th[i];

		t->id = (int)i;
		rng_seed(&t->rng, seed * 1000003 + i);
		t->memfd = memfd_create("stress-threads", MFD_CLOEXEC);
		if (pipe2(t->pipe, O_CLOEXEC) || t->memfd < 0 ||
		    ftruncate(t->memfd, 4 * (off_t)page) || pthread_create(&t->t, NULL, run, t)) {
			perror(prog);
			return 1;
		}
	}
	for (unsigned long i = 0; i < nthreads; i++)
		pthread_join(th[i].t, NULL);
	fails = atomic_load(&total_fails);
	for (unsigned long i = 0; i < nthreads; i++)
		printf("%s: thread %lu: %llu steps, %lu new, %lu freed, %lu checks, %lu installs, "
		       "%lu removals, %lu forks, %lu churns, %lu failures\n",
		       prog, i, (unsigned long long)th[i].step, th[i].ops[0], th[i].ops[1],
		       th[i].ops[2], th[i].ops[3], th[i].ops[4], th[i].ops[5], th[i].ops[6],
		       th[i].fails);
	printf("%s: %s in %.1f s (seed %llu): %lu failure(s)\n", prog, fails ? "FAIL" : "pass",
	       stress_now() - t0, (unsigned long long)seed, fails);
	for (unsigned long i = 0; i < nthreads; i++) {
		close(th[i].pipe[0]);
		close(th[i].pipe[1]);
		close(th[i].memfd);
	}
	free(th);
	return fails ? 1 : 0;
}
