// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * mimalloc-arena: mimalloc heaps in a file-backed arena with guards, for
 * allocator authors (mimalloc 2.0.9, Debian's libmimalloc2.0).
 *
 * mimalloc 2.0.x cuts an arena into 32 MiB blocks and finds an object's
 * segment by masking its address, so each block must be 32 MiB aligned and
 * a guard can't sit inside one. So: one guard_map_file() of the file, and
 * in it one arena (mi_manage_os_memory_ex, exclusive) per thread, each one
 * aligned block, with a whole block of guard between two arenas and at the
 * ends. The gaps are never written, so the file stays sparse there.
 *
 * Each thread allocates in its own heap (mi_heap_new_in_arena) and frees
 * what the next thread allocated. Then the data is checked in the file
 * after munmap, each guard is touched in a child, and the arena's
 * mappings are checked to be the file still. The arenas are given as
 * committed: mimalloc 2.0.9 then never purges them (strace: no madvise in
 * them); given as not committed, it purges a free segment with
 * madvise(MADV_DONTNEED) over its 32 MiB block, which on a shared file
 * mapping drops the page-table entries and keeps the data in the file
 * (docs/allocators.md). Decommit is turned off as well, in case.
 *
 * Usage: mimalloc-arena [--allow-decommit] [DIR]  (DIR: a directory on a
 * page-cache filesystem; default $LIBGUARD_SCRATCH, else /tmp).
 * --allow-decommit leaves mimalloc's decommit on, to see what it does.
 * Exit 0 when everything held.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <guard.h>
#include <mimalloc.h>

#define BLOCK ((size_t)32 << 20) /* mimalloc 2.0.x's MI_SEGMENT_SIZE */
#define THREADS 4
#define OBJS 5000

struct worker {
	mi_arena_id_t arena;
	mi_heap_t *heap;
	char *objs[OBJS];
	size_t sizes[OBJS];
	pthread_barrier_t *bar;
	struct worker *next; /* whose objects this thread frees */
	int id;
	int bad;
};

static char *lo, *hi; /* the arenas' span, for checking pointers */

static void *work(void *arg)
{
	struct worker *w = arg;

	/* A heap belongs to the thread that made it. */
	w->heap = mi_heap_new_in_arena(w->arena);
	if (!w->heap) {
		w->bad = 1;
		return NULL;
	}
	for (int i = 0; i < OBJS; i++) {
		size_t n = 16 + (size_t)(i * 7919 % 4000);

		if (i % 1000 == 0)
			n = 256 << 10; /* a large object now and then */
		w->objs[i] = mi_heap_malloc(w->heap, n);
		w->sizes[i] = n;
		if (!w->objs[i] || w->objs[i] < lo || w->objs[i] + n > hi) {
			w->bad = 1;
			return NULL;
		}
		memset(w->objs[i], 'a' + w->id, n);
	}
	pthread_barrier_wait(w->bar);
	/* Free half of the next thread's objects: frees across threads. */
	for (int i = 0; i < OBJS; i += 2) {
		mi_free(w->next->objs[i]);
		w->next->objs[i] = NULL;
	}
	pthread_barrier_wait(w->bar);
	/* And allocate again in our arena, where those frees made room. */
	for (int i = 0; i < OBJS; i += 2) {
		char *p = mi_heap_malloc(w->heap, 64);

		if (!p || p < lo || p + 64 > hi) {
			w->bad = 1;
			break;
		}
		memset(p, 'A' + w->id, 64);
	}
	mi_collect(true);
	return NULL;
}

/* Does touching p kill a child with SIGSEGV? */
static int faults(volatile char *p)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		(void)*p;
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 0;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

/* Is every VMA of [a, b) in /proc/self/maps a mapping of the file (inode)? */
static int still_file(const char *a, const char *b, unsigned long inode)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int ok = 1;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t s, e;
		unsigned long ino;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %*s %*s %lu", &s, &e, &ino) != 3)
			continue;
		if (e <= (uintptr_t)a || s >= (uintptr_t)b)
			continue;
		if (ino != inode) {
			printf("  not the file any more: %s", line);
			ok = 0;
		}
	}
	fclose(f);
	return ok;
}

int main(int argc, char **argv)
{
	int decommit = argc > 1 && !strcmp(argv[1], "--allow-decommit");
	const char *dir = argc > 1 + decommit ? argv[1 + decommit] : getenv("LIBGUARD_SCRATCH");
	/* gap, arena, gap, arena, ..., gap; plus one block to align in */
	size_t span = (2 * THREADS + 1) * BLOCK, len = span + BLOCK;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	pthread_barrier_t bar;
	char path[PATH_MAX], *map, *base;
	unsigned int method = 0;
	struct stat st;
	int fd, bad = 0;

	if (!dir || !*dir)
		dir = "/tmp";
	snprintf(path, sizeof(path), "%s/mimalloc-arena.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, (off_t)len) || fstat(fd, &st)) {
		fprintf(stderr, "mimalloc-arena: %s: %s\n", path, strerror(errno));
		return 1;
	}
	unlink(path);
	/* Committed arenas are not purged anyway; this keeps it so. */
	if (!decommit)
		mi_option_disable(mi_option_allow_decommit);

	map = guard_map_file(fd, 0, len, PROT_READ | PROT_WRITE, MAP_SHARED, BLOCK, BLOCK);
	if (map == MAP_FAILED) {
		fprintf(stderr, "mimalloc-arena: guard_map_file: %s\n", strerror(errno));
		return 1;
	}
	base = (char *)(((uintptr_t)map + BLOCK - 1) & ~(uintptr_t)(BLOCK - 1));
	lo = base + BLOCK;
	hi = base + span - BLOCK;
	/* The gaps: before the first arena, between two, after the last. */
	for (int i = 0; i <= THREADS; i++) {
		int r = guard_install2(base + 2 * i * BLOCK, BLOCK, 0, &method);

		if (r) {
			fprintf(stderr, "mimalloc-arena: guard_install: %s\n", strerror(-r));
			return 1;
		}
	}
	printf("file %s: %zu MiB mapped, %d arenas of 32 MiB with guards between (%s)\n", path,
	       len >> 20, THREADS, method == GUARD_METHOD_NATIVE ? "native" : "fallback");

	pthread_barrier_init(&bar, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		char *a = base + (2 * i + 1) * BLOCK;

		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		w[i].bar = &bar;
		w[i].next = &w[(i + 1) % THREADS];
		/* committed, not large pages, zeroed (a new sparse file), exclusive */
		if (!mi_manage_os_memory_ex(a, BLOCK, true, false, true, -1, true, &w[i].arena)) {
			fprintf(stderr, "mimalloc-arena: mi_manage_os_memory_ex failed\n");
			return 1;
		}
	}
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, work, &w[i]);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		bad |= w[i].bad;
	}
	printf("%d threads: %d objects each, half freed by another thread, %s\n", THREADS, OBJS,
	       bad ? "FAILED (allocation outside its arena or NULL)" : "all in their arenas");

	/* Every surviving object still holds its bytes. */
	for (int i = 0; i < THREADS && !bad; i++)
		for (int j = 1; j < OBJS; j += 2)
			if (w[i].objs[j][0] != 'a' + i || w[i].objs[j][w[i].sizes[j] - 1] != 'a' + i)
				bad = 1;
	if (!still_file(lo, hi, (unsigned long)st.st_ino))
		bad = 1;
	for (int i = 0, ok = 1; i <= THREADS; i++) {
		char *g = base + 2 * i * BLOCK;

		if (!faults(g) || !faults(g + BLOCK - 1)) {
			printf("guard block %d does not fault\n", i);
			bad = 1;
			ok = 0;
		}
		if (i == THREADS && ok)
			printf("guards: %d blocks, each faults at both ends\n", THREADS + 1);
	}

	/* The data is in the file: unmap and read it back with pread(). */
	{
		size_t off = (size_t)(w[0].objs[1] - map);
		char c = 0;

		if (guard_unmap(map, len)) {
			fprintf(stderr, "mimalloc-arena: guard_unmap failed\n");
			return 1;
		}
		if (pread(fd, &c, 1, (off_t)off) != 1 || c != 'a') {
			printf("the file does not hold thread 0's object after munmap\n");
			bad = 1;
		} else {
			printf("after munmap: thread 0's object is in the file at offset %zu\n", off);
		}
	}
	close(fd);
	return bad;
}
