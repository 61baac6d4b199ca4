// SPDX-License-Identifier: GPL-2.0
/*
 * repro-truncate-refault: guards in a file or shmem mapping disappear when a
 * hole punch (or a truncation) of the file races a refault of the same
 * pages through another mapping.
 *
 * Truncating a range first zaps it in every mapping with
 * unmap_mapping_range()/unmap_mapping_pages(), which keeps guard markers,
 * and then removes the folios from the page cache. A folio that was faulted
 * in again in between is still mapped when truncate_inode_folio() gets to
 * it, and truncate_cleanup_folio() calls unmap_mapping_folio(), which zaps
 * the folio's index range in every VMA of the file with
 * ZAP_FLAG_DROP_MARKER. zap_nonpresent_ptes() drops guard markers on such
 * zaps: the guards a process installed at those offsets are gone, although
 * only someone else's mapping of the page was in the way.
 *
 * Mapping G has a guard on each of NPAGES pages of the file; mapping M maps
 * the same pages. One thread refaults M (MADV_POPULATE_READ) in a loop; the
 * main thread punches the range (fallocate(PUNCH_HOLE), default) or
 * truncates and extends the file (--op truncate), then checks through
 * /proc/self/pagemap (bit 58) that every page of G is still a guard.
 * --no-refault runs the same loop without the refaulting thread (control).
 *
 *   cc -O2 -pthread repro-truncate-refault.c -o repro-truncate-refault
 *   ./repro-truncate-refault [--seconds N] [--backing file|shmem]
 *                            [--op punch|truncate] [--dir DIR] [--no-refault]
 *
 * Defaults: 30 s, a file in /tmp (ext4 here), hole punching. With
 * --backing shmem, shmem_fallocate() makes new faults into the hole being
 * punched wait, which narrows the window without closing it (a fault
 * already past that check still maps its page). --op truncate shrinks
 * i_size before anything is unmapped, so only faults already past their
 * i_size check can race: a far narrower window. Exit: 0 not reproduced,
 * 1 reproduced, 77 the kernel lacks something needed (printed), 2 usage
 * or setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

#define NPAGES 256
#define PM_GUARD (1ull << 58)

static long psz;
static int fd, pagemap;
static char *g, *m;
static atomic_int stop;
static atomic_ulong n_populate;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* How many of G's pages are guards; *first: the first that is not. */
static int guards(int *first)
{
	static uint64_t e[NPAGES];
	int n = 0;

	if (pread(pagemap, e, sizeof(e), (off_t)((uintptr_t)g / psz * 8)) != sizeof(e)) {
		perror("pagemap");
		exit(2);
	}
	*first = -1;
	for (int i = 0; i < NPAGES; i++) {
		if (e[i] & PM_GUARD)
			n++;
		else if (*first < 0)
			*first = i;
	}
	return n;
}

static void *refaulter(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		/* EFAULT past EOF while truncated: fine. */
		madvise(m, NPAGES * psz, MADV_POPULATE_READ);
		atomic_fetch_add(&n_populate, 1);
	}
	return NULL;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--seconds N] [--backing file|shmem] [--op punch|truncate] "
		"[--dir DIR] [--no-refault]\n", prog);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dir = "/tmp", *backing = "file", *op = "punch";
	bool refault = true, truncate_op;
	double secs = 30, t0;
	unsigned long cycles = 0;
	size_t len;
	struct utsname u;
	pthread_t th;
	int first, n;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			secs = atof(argv[++i]);
		else if (!strcmp(argv[i], "--backing") && i + 1 < argc)
			backing = argv[++i];
		else if (!strcmp(argv[i], "--op") && i + 1 < argc)
			op = argv[++i];
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--no-refault"))
			refault = false;
		else
			usage(argv[0]);
	}
	if ((strcmp(backing, "file") && strcmp(backing, "shmem")) ||
	    (strcmp(op, "punch") && strcmp(op, "truncate")))
		usage(argv[0]);
	truncate_op = !strcmp(op, "truncate");
	if (secs <= 0)
		secs = 1;
	psz = sysconf(_SC_PAGESIZE);
	len = NPAGES * (size_t)psz;
	uname(&u);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strcmp(backing, "shmem")) {
		fd = memfd_create("repro-truncate", 0);
	} else {
		char path[4096];
		struct statfs sf;

		snprintf(path, sizeof(path), "%s/repro-truncate-%d", dir, (int)getpid());
		fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd >= 0)
			unlink(path);
		if (fd >= 0 && !fstatfs(fd, &sf) && sf.f_type == 0x01021994)
			printf("note: %s is tmpfs: this is the shmem case\n", dir);
	}
	pagemap = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0 || pagemap < 0 || ftruncate(fd, (off_t)len)) {
		perror("setup");
		return 2;
	}
	printf("repro-truncate-refault: kernel %s, %s backing, %s, %d pages, %s, %.0f s\n",
	       u.release, backing, truncate_op ? "truncate and extend" : "punch hole", NPAGES,
	       refault ? "refaulting through a second mapping" : "no refaults (control)", secs);

	g = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (g == MAP_FAILED || m == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	if (madvise(g, len, MADV_GUARD_INSTALL)) {
		printf("SKIP: MADV_GUARD_INSTALL on a %s mapping: %s (needs 6.15 or later)\n",
		       backing, strerror(errno));
		return 77;
	}
	if (guards(&first) != NPAGES) {
		printf("SKIP: /proc/self/pagemap does not report guards (bit 58, 6.15 or later)\n");
		return 77;
	}
	if (!truncate_op && fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
				      (off_t)len)) {
		printf("SKIP: fallocate(PUNCH_HOLE): %s\n", strerror(errno));
		return 77;
	}
	if (guards(&first) != NPAGES) {
		printf("guards lost to a hole punch with nobody faulting: not this bug\n");
		return 2;
	}

	if (refault)
		pthread_create(&th, NULL, refaulter, NULL);
	t0 = now();
	while (now() - t0 < secs) {
		int err;

		if (truncate_op)
			err = ftruncate(fd, 0) || ftruncate(fd, (off_t)len);
		else
			err = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
					(off_t)len);
		if (err) {
			perror(truncate_op ? "ftruncate" : "fallocate");
			return 2;
		}
		cycles++;
		n = guards(&first);
		if (n != NPAGES) {
			printf("REPRODUCED after %.1f s: %s %lu: %d of %d guards in G are gone "
			       "(first: page %d), no MADV_GUARD_REMOVE or munmap of G was made; "
			       "%lu refault passes over M\n", now() - t0,
			       truncate_op ? "truncation" : "hole punch", cycles, NPAGES - n,
			       NPAGES, first, atomic_load(&n_populate));
			return 1;
		}
	}
	atomic_store(&stop, 1);
	if (refault)
		pthread_join(th, NULL);
	printf("not reproduced: %lu %s in %.1f s, %lu refault passes, every guard kept\n",
	       cycles, truncate_op ? "truncations" : "hole punches", now() - t0,
	       atomic_load(&n_populate));
	return 0;
}
