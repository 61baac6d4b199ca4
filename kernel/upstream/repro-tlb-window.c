// SPDX-License-Identifier: GPL-2.0
/*
 * repro-tlb-window: MADV_GUARD_INSTALL can return while another CPU still
 * reaches the old page through a stale TLB entry, because a racing zap
 * (MADV_DONTNEED here) emptied the slot and has not flushed the TLB yet.
 *
 * The zap raises mm->tlb_flush_pending in tlb_gather_mmu(), clears the PTE
 * under the PTE lock, drops the lock and flushes only in tlb_finish_mmu().
 * The install takes the same PTE lock, finds the slot empty, writes its
 * marker and returns 0 without looking at tlb_flush_pending. A thread that
 * has the page in its TLB can then write to it after the install returned,
 * without a fault, until the zap's flush arrives.
 *
 * The window is widened without touching the kernel: thread Z (CPU 1) zaps
 * the guarded page together with the 2 MiB after it, which lie in the next
 * page table and are populated, so its flush comes only after it has
 * cleared 512 more PTEs. Thread G (CPU 0) writes the page (so CPU 0's TLB
 * holds it), lets Z start, waits a random few microseconds, installs a
 * guard on the page and, once that returned 0, writes the page again:
 * that write must fault. A write that does not fault went through a stale
 * TLB entry after the install returned: a reproduction. Then G waits for
 * Z's zap to end, removes the guard, and the next round starts.
 *
 *   cc -O2 -pthread repro-tlb-window.c -o repro-tlb-window
 *   ./repro-tlb-window [--seconds N] [--narrow]	(default 30 s)
 *
 * --narrow zaps the page alone, as a control: the window is then a few
 * instructions wide and a reproduction needs Z preempted inside it.
 *
 * Exit: 0 not reproduced, 1 reproduced (a write after the install returned
 * did not fault), 77 the kernel lacks guard regions or there is only one
 * CPU, 2 usage or setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

static volatile char *page;	/* the page guarded; the last of its table */
static char *bulk;		/* 2 MiB after it: the next page table */
static long psz;
static int narrow;	/* --narrow: zap the page alone (a control) */
static atomic_long go, started, done;
static atomic_long rounds, early, faulted, stale;

static __thread sigjmp_buf fault_jmp;
static __thread volatile int armed;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_segv(int sig)
{
	(void)sig;
	if (!armed)
		abort();
	siglongjmp(fault_jmp, 1);
}

/* Write to the page; 1 if the write faulted. */
static int write_page(char v)
{
	if (sigsetjmp(fault_jmp, 1)) {
		armed = 0;
		return 1;
	}
	armed = 1;
	*page = v;
	armed = 0;
	return 0;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Z: per round, populate the next table, wait for G, zap both. */
static void *zapper(void *arg)
{
	long r = 0;

	(void)arg;
	pin(1);
	for (;;) {
		memset(bulk, 1, 2 << 20);
		r++;
		while (atomic_load(&go) < r)
			if (atomic_load(&go) < 0)
				return NULL;
		atomic_store(&started, r);
		madvise((void *)page, narrow ? psz : psz + (2 << 20), MADV_DONTNEED);
		atomic_store(&done, r);
	}
}

static void spin(unsigned int n)
{
	while (n--)
		__asm__ __volatile__("" ::: "memory");
}

/* G: per round, warm the TLB, let Z go, install, write. */
static void guarder(double deadline)
{
	unsigned int seed = 1;
	long r;

	pin(0);
	for (r = 1; now() < deadline && !atomic_load(&stale); r++) {
		write_page(2);	/* populates the page, CPU 0's TLB holds it */
		atomic_store(&go, r);
		while (atomic_load(&started) < r)
			;
		spin(rand_r(&seed) % 20000);
		if (madvise((void *)page, psz, MADV_GUARD_INSTALL)) {
			perror("MADV_GUARD_INSTALL");
			exit(2);
		}
		if (atomic_load(&done) == r)
			atomic_fetch_add(&early, 1);	/* too late: Z had flushed */
		if (write_page(1))
			atomic_fetch_add(&faulted, 1);
		else
			atomic_fetch_add(&stale, 1);
		while (atomic_load(&done) < r)
			;
		madvise((void *)page, psz, MADV_GUARD_REMOVE);
		atomic_fetch_add(&rounds, 1);
	}
	atomic_store(&go, -1);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_segv, .sa_flags = SA_NODEFER };
	double seconds = 30, t0;
	pthread_t z;
	char *base;
	struct utsname u;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--narrow")) {
			narrow = 1;
		} else {
			fprintf(stderr, "usage: %s [--seconds N] [--narrow]\n", argv[0]);
			return 2;
		}
	}
	psz = sysconf(_SC_PAGESIZE);
	uname(&u);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("needs two CPUs\n");
		return 77;
	}
	/* Two page tables' worth, aligned: the page ends the first. */
	base = mmap(NULL, 6 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return perror("mmap"), 2;
	base = (char *)(((uintptr_t)base + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
	madvise(base, 4 << 20, MADV_NOHUGEPAGE);
	page = base + (2 << 20) - psz;
	bulk = base + (2 << 20);
	if (madvise((void *)page, psz, MADV_GUARD_INSTALL)) {
		printf("needs MADV_GUARD_INSTALL (6.13 or later): %s\n", strerror(errno));
		return 77;
	}
	madvise((void *)page, psz, MADV_GUARD_REMOVE);
	sigaction(SIGSEGV, &sa, NULL);

	printf("kernel %s %s, %ld CPUs, %.0f s, zap of %s\n", u.release, u.machine,
	       sysconf(_SC_NPROCESSORS_ONLN), seconds,
	       narrow ? "the page alone" : "the page and the 2 MiB after it");
	t0 = now();
	pthread_create(&z, NULL, zapper, NULL);
	guarder(t0 + seconds);
	pthread_join(z, NULL);

	printf("%ld rounds in %.1f s (%ld installs after the zap had ended): "
	       "%ld writes after the install faulted, %ld did not\n",
	       atomic_load(&rounds), now() - t0, atomic_load(&early),
	       atomic_load(&faulted), atomic_load(&stale));
	if (atomic_load(&stale)) {
		printf("reproduced: a write after MADV_GUARD_INSTALL returned did not fault\n");
		return 1;
	}
	printf("not reproduced\n");
	return 0;
}
