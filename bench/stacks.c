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
