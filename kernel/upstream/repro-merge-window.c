// SPDX-License-Identifier: GPL-2.0
/*
 * repro-merge-window: a VMA merge publishes the merged file VMA before it
 * gives it VM_MAYBE_GUARD, and retract_page_tables() frees the guard
 * markers of the part it absorbed in between.
 *
 * vma_merge_existing_range() and vma_expand() gather the sticky flags of the
 * VMAs they merge, call commit_merge(), and only then set the flags on the
 * target. commit_merge() ends in vma_complete(), which puts the target back
 * into the file's i_mmap tree under its new range and releases i_mmap_rwsem.
 * retract_page_tables() (the end of every file/shmem collapse, from
 * khugepaged or MADV_COLLAPSE in any process mapping the file) walks i_mmap
 * under that rwsem alone, without the merging process's mmap lock, and
 * frees the PTE table of every VMA that covers the whole PMD and is not
 * flagged, anon_vma-less and not uffd-wp. In the window the target covers
 * the PMD, holds the absorbed VMA's markers in its table, and is not
 * flagged yet: its table and the markers are freed.
 *
 * The parent maps a 2 MiB-aligned PMD of a memfd in two VMAs: U (first half,
 * read-write, never guarded) and F (second half, guarded, so flagged).
 * Each round it makes F read-only, maps U afresh, and mprotect()s F back to
 * read-write, which merges F into U; then it checks F's guards through
 * /proc/self/pagemap (bit 58). A child process maps the same memfd and, in
 * a loop, punches the whole PMD out of the page cache, refills it, and
 * MADV_COLLAPSEs it, so that retract_page_tables() walks the parent's VMAs
 * again and again. With --control, U is flagged (a guard installed and
 * removed) before each merge, which closes the window: guards lost then
 * would be lost to something else.
 *
 * The window is a few hundred instructions (the end of vma_complete() and
 * the return to the caller), so this is a matter of luck on a busy machine.
 *
 *   cc -O2 -pthread repro-merge-window.c -o repro-merge-window
 *   ./repro-merge-window [--seconds N] [--control]	(default 30)
 *
 * Exit: 0 not reproduced, 1 reproduced, 77 the kernel lacks something
 * needed (printed), 2 usage or setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

#define PMD_SZ (2ul << 20)
#define HALF (PMD_SZ / 2)
#define PM_GUARD (1ull << 58)
#define NGUARD 16

static long psz;
static int pagemap;

struct shared {
	atomic_ulong collapses, collapse_fail;
	atomic_int child_err;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *aligned_pmd(void)
{
	char *res = mmap(NULL, 3 * PMD_SZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (res == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return (char *)(((uintptr_t)res + PMD_SZ - 1) & ~(PMD_SZ - 1));
}

/* Number of guards among the NGUARD pages at p. */
static int guards_at(char *p)
{
	uint64_t e[NGUARD];
	int n = 0;

	if (pread(pagemap, e, sizeof(e), (off_t)((uintptr_t)p / psz * 8)) != sizeof(e)) {
		perror("pagemap");
		exit(2);
	}
	for (int i = 0; i < NGUARD; i++)
		n += !!(e[i] & PM_GUARD);
	return n;
}

/* Does the VMA at addr say "gu" (VM_MAYBE_GUARD) in smaps? -1: not found. */
static int vma_flagged(char *addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false;
	int r = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3)
			in = lo <= (uintptr_t)addr && (uintptr_t)addr < hi;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			r = strstr(line, " gu") != NULL;
			break;
		}
	}
	fclose(f);
	return r;
}

/* Collapse the memfd's PMD over and over from another mm. */
static void child(int fd, struct shared *sh)
{
	char *c = aligned_pmd();

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (mmap(c, PMD_SZ, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
		atomic_store(&sh->child_err, errno);
		_exit(2);
	}
	madvise(c, PMD_SZ, MADV_HUGEPAGE);
	for (;;) {
		/* Small folios again, so that the next collapse is a real one. */
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PMD_SZ);
		madvise(c, PMD_SZ, MADV_POPULATE_WRITE);
		if (madvise(c, PMD_SZ, MADV_COLLAPSE) == 0)
			atomic_fetch_add(&sh->collapses, 1);
		else
			atomic_fetch_add(&sh->collapse_fail, 1);
	}
}

int main(int argc, char **argv)
{
	double secs = 30, t0;
	bool control = false;
	unsigned long rounds = 0;
	struct shared *sh;
	struct utsname u;
	char *base, *gp;
	pid_t pid;
	int fd, status;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			secs = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--control")) {
			control = true;
		} else {
			fprintf(stderr, "usage: %s [--seconds N] [--control]\n", argv[0]);
			return 2;
		}
	}
	if (secs <= 0)
		secs = 1;
	psz = sysconf(_SC_PAGESIZE);
	uname(&u);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("repro-merge-window: kernel %s, %.0f s%s\n", u.release, secs,
	       control ? ", control (U flagged before each merge)" : "");

	pagemap = open("/proc/self/pagemap", O_RDONLY);
	fd = memfd_create("repro-merge", 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (pagemap < 0 || fd < 0 || sh == MAP_FAILED || ftruncate(fd, PMD_SZ)) {
		perror("setup");
		return 2;
	}
	base = aligned_pmd();
	gp = base + HALF + 64 * psz;	/* the guards, in F */
	if (mmap(base, PMD_SZ, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
	    MAP_FAILED) {
		perror("mmap memfd");
		return 2;
	}
	memset(base, 1, PMD_SZ);
	if (madvise(base, PMD_SZ, MADV_COLLAPSE)) {
		printf("SKIP: MADV_COLLAPSE on shmem: %s (THP off, or shmem_enabled=deny)\n",
		       strerror(errno));
		return 77;
	}
	if (madvise(gp, NGUARD * psz, MADV_GUARD_INSTALL)) {
		printf("SKIP: MADV_GUARD_INSTALL on shmem: %s (6.15 or later)\n", strerror(errno));
		return 77;
	}
	if (guards_at(gp) != NGUARD) {
		printf("SKIP: /proc/self/pagemap does not report guards (bit 58, 6.15 or later)\n");
		return 77;
	}
	if (vma_flagged(base) != 1) {
		printf("SKIP: no \"gu\" in smaps VmFlags: this kernel has no VM_MAYBE_GUARD "
		       "(6.19, or a stable backport); before it, a guard gave the VMA an anon_vma, "
		       "which retract_page_tables() skips\n");
		return 77;
	}

	pid = fork();
	if (pid < 0)
		return 2;
	if (!pid)
		child(fd, sh);

	t0 = now();
	while (now() - t0 < secs) {
		int n;

		rounds++;
		/* F: the guarded, flagged half, alone and read-only. */
		if (munmap(base, HALF) || mprotect(base + HALF, HALF, PROT_READ)) {
			perror("munmap/mprotect");
			break;
		}
		/* U: a fresh, unflagged VMA on the first half. */
		if (mmap(base, HALF, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
		    MAP_FAILED) {
			perror("mmap U");
			break;
		}
		if (control) {
			madvise(base, psz, MADV_GUARD_INSTALL);
			madvise(base, psz, MADV_GUARD_REMOVE);
		}
		/* F read-write again: it merges into U, which expands over the PMD. */
		if (mprotect(base + HALF, HALF, PROT_READ | PROT_WRITE)) {
			perror("mprotect");
			break;
		}
		if (rounds == 1 && vma_flagged(base + HALF) != 1)
			printf("warning: the merged VMA is not flagged after the merge\n");
		n = guards_at(gp);
		if (n != NGUARD) {
			printf("REPRODUCED after %.1f s: round %lu: %d of %d guards gone after F "
			       "merged into U; nothing removed them (%lu collapses in the other "
			       "process)\n", now() - t0, rounds, NGUARD - n, NGUARD,
			       atomic_load(&sh->collapses));
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return 1;
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (atomic_load(&sh->child_err)) {
		printf("the collapsing child failed: %s\n", strerror(atomic_load(&sh->child_err)));
		return 2;
	}
	printf("not reproduced: %lu merges in %.1f s against %lu collapses (%lu failed) in "
	       "another process, every guard kept\n", rounds, now() - t0,
	       atomic_load(&sh->collapses), atomic_load(&sh->collapse_fail));
	return 0;
}
