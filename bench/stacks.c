// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Stacks: create 1000 threads, all alive at once, then join them, on
 * 256 KiB stacks with a one-page guard below: guard_stack() with
 * GUARD_NATIVE (libguard-native) and GUARD_FALLBACK (libguard-fallback),
 * mmap + mprotect(PROT_NONE) of the lowest page (mprotect), and glibc's
 * own stacks (glibc-default: pthread_attr_setstacksize only; glibc adds
 * its guard page, and caches stacks between repetitions as it always
 * does). ns_per_thread covers allocating the stack, pthread_create,
 * pthread_join and freeing; vmas counts the VMAs the 1000 live threads
 * add to the process.
 *
 * stacks-free: the registry behind guard_stack_free() (and guard_unmap())
 * at 200,000 live stacks (20,000 with --quick), freed newest-first,
 * oldest-first and in a random order; ns_per_free is the free alone
 * (ns_per_alloc, in the CSV only, the guard_stack() calls before it).
 * The ratios between the orders show whether a free's cost depends on
 * where the stack is in the registry (issue 19); munmap-random is the
 * floor of the random order: the same stacks made by hand (mmap and
 * MADV_GUARD_INSTALL) and munmap()ed in the same order, no registry (a
 * random munmap splits the VMA the neighbours merged into).
 */
#include "bench.h"

#include <errno.h>
#include <guard.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define STACK (256 * 1024)

enum { LG_NATIVE, LG_FALLBACK, MPROTECT, GLIBC, NMODES };
static const char *const names[NMODES] = { "libguard-native", "libguard-fallback", "mprotect",
					   "glibc-default" };

static void *body(void *arg)
{
	return arg;
}

static void *alloc_stack(int mode)
{
	size_t page = bench_page();
	char *p;

	switch (mode) {
	case LG_NATIVE:
		return guard_stack(STACK, page, GUARD_NATIVE);
	case LG_FALLBACK:
		return guard_stack(STACK, page, GUARD_FALLBACK);
	case MPROTECT:
		p = mmap(NULL, STACK + page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		if (mprotect(p, page, PROT_NONE)) {
			munmap(p, STACK + page);
			return NULL;
		}
		return p + page;
	}
	return NULL;
}

static void free_stack(int mode, void *stack)
{
	if (mode == MPROTECT)
		munmap((char *)stack - bench_page(), STACK + bench_page());
	else if (mode != GLIBC)
		guard_stack_free(stack, STACK);
}

enum { FREE_NEWEST, FREE_OLDEST, FREE_RANDOM, MUNMAP_RANDOM, NORDERS };
static const char *const order_names[NORDERS] = { "newest-first", "oldest-first", "random",
						  "munmap-random" };

/* MUNMAP_RANDOM: the same stack by hand (mmap, MADV_GUARD_INSTALL), no registry. */
static void *raw_stack(size_t page)
{
	char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (madvise(p, page, MADV_GUARD_INSTALL)) {
		munmap(p, 2 * page);
		return NULL;
	}
	return p + page;
}

/* n one-page stacks, freed in the given order: 0 and the times, or errno. */
static int free_order_once(int order, void **stk, size_t n, uint64_t *ns_alloc,
			   uint64_t *ns_free)
{
	size_t page = bench_page(), made = 0;
	uint64_t t0 = bench_now_ns(), t1;
	uint64_t x = 0x2545f4914f6cdd1dull;	/* xorshift64, fixed: the same order every run */
	int ret = 0;

	for (; made < n; made++) {
		stk[made] = order == MUNMAP_RANDOM ? raw_stack(page)
						   : guard_stack(page, page, GUARD_NATIVE);
		if (!stk[made]) {
			ret = errno;
			break;
		}
	}
	t1 = bench_now_ns();
	*ns_alloc = t1 - t0;
	/* stk[] is oldest-first; shuffled (Fisher-Yates) for the random orders */
	for (size_t i = made; order >= FREE_RANDOM && i > 1; i--) {
		size_t j;
		void *t;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = x % i;
		t = stk[i - 1];
		stk[i - 1] = stk[j];
		stk[j] = t;
	}
	t0 = bench_now_ns();
	for (size_t i = 0; i < made; i++) {
		void *s = stk[order == FREE_NEWEST ? made - 1 - i : i];

		if (order == MUNMAP_RANDOM)
			munmap((char *)s - page, 2 * page);
		else if (guard_stack_free(s, page) && !ret)
			ret = EINVAL;
	}
	*ns_free = bench_now_ns() - t0;
	return ret;
}

static void free_orders(const struct bench_opts *o)
{
	size_t n = o->quick ? 20000 : 200000;
	void **stk = calloc(n, sizeof(*stk));

	if (o->only && strcmp(o->only, "stacks-free"))
		return;
	if (!stk)
		exit(1);
	if (!(guard_probe() & GUARD_CAP_ANON)) {
		/* the fallback takes two VMAs a stack: 400k is over vm.max_map_count */
		for (int m = 0; m < NORDERS; m++)
			bench_unsupported("stacks-free", order_names[m], (long)n, EOPNOTSUPP);
		free(stk);
		return;
	}
	for (int rep = 1; rep <= o->reps; rep++) {
		for (int s = 0; s < NORDERS; s++) {
			int m = bench_order(rep, s, NORDERS), ret;
			uint64_t ns_alloc, ns_free;

			ret = free_order_once(m, stk, n, &ns_alloc, &ns_free);
			if (ret) {
				bench_emit("stacks-free", order_names[m], (long)n, "failed_errno", 0, ret,
					   "errno");
				continue;
			}
			bench_emit("stacks-free", order_names[m], (long)n, "ns_per_free", rep,
				   (double)ns_free / n, "ns");
			bench_emit("stacks-free", order_names[m], (long)n, "ns_per_alloc", rep,
				   (double)ns_alloc / n, "ns");
		}
	}
	free(stk);
}

/* 0 and *ns, *vmas; or an error number. */
static int run_once(int mode, int threads, pthread_t *tid, void **stacks, uint64_t *ns,
		    long *vmas)
{
	long before = bench_vmas(0, 0);
	uint64_t t0 = bench_now_ns(), t1, t2;
	int ret = 0, made = 0;

	for (; made < threads; made++) {
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		if (mode == GLIBC) {
			pthread_attr_setstacksize(&attr, STACK);
		} else {
			stacks[made] = alloc_stack(mode);
			if (!stacks[made]) {
				ret = errno;
				pthread_attr_destroy(&attr);
				break;
			}
			pthread_attr_setstack(&attr, stacks[made], STACK);
		}
		ret = pthread_create(&tid[made], &attr, body, NULL);
		pthread_attr_destroy(&attr);
		if (ret) {
			free_stack(mode, stacks[made]);
			break;
		}
	}
	t1 = bench_now_ns();
	*vmas = bench_vmas(0, 0) - before;	/* not timed */
	t2 = bench_now_ns();
	for (int i = 0; i < made; i++) {
		pthread_join(tid[i], NULL);
		free_stack(mode, stacks[i]);
	}
	*ns = (t1 - t0) + (bench_now_ns() - t2);
	return ret;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	int threads = 1000, unsupported[NMODES] = { 0 };
	pthread_t *tid = calloc((size_t)threads, sizeof(*tid));
	void **stacks = calloc((size_t)threads, sizeof(*stacks));

	bench_parse(argc, argv, &o);
	if (!tid || !stacks)
		return 1;
	free_orders(&o);
	if (o.only && strcmp(o.only, "stacks"))
		return 0;
	if (!(guard_probe() & GUARD_CAP_ANON))
		unsupported[LG_NATIVE] = EOPNOTSUPP;
	for (int m = 0; m < NMODES; m++)
		if (unsupported[m])
			bench_unsupported("stacks", names[m], threads, unsupported[m]);
	/* one untimed round each: glibc's stack cache and the page tables warm */
	for (int m = 0; m < NMODES; m++) {
		uint64_t ns;
		long vmas;

		if (!unsupported[m])
			run_once(m, threads, tid, stacks, &ns, &vmas);
	}
	for (int rep = 1; rep <= o.reps; rep++) {
		for (int s = 0; s < NMODES; s++) {
			int m = bench_order(rep, s, NMODES), ret;
			uint64_t ns;
			long vmas;

			if (unsupported[m])
				continue;
			ret = run_once(m, threads, tid, stacks, &ns, &vmas);
			if (ret) {
				bench_emit("stacks", names[m], threads, "failed_errno", 0, ret, "errno");
				continue;
			}
			bench_emit("stacks", names[m], threads, "ns_per_thread", rep,
				   (double)ns / threads, "ns");
			if (rep == 1)
				bench_emit("stacks", names[m], threads, "vmas", 0, vmas, "vmas");
		}
	}
	return 0;
}
