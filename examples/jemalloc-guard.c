// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * jemalloc-guard: guard pages around every mapping jemalloc 5.x makes, with
 * extent hooks (tools/jemalloc/hooks.c: copy it) installed on every arena
 * through mallctl, for allocator authors and jemalloc users. The same
 * hooks, preloaded, are tools/jemalloc/libguard-jemalloc.so.
 *
 * Threads allocate and free objects of small, large and huge sizes, the
 * arenas are purged and decayed, and then each guard of each live mapping
 * is touched in a child (it must fault), guard_query() must report it, and
 * no live object may meet a guard. Link with -ljemalloc; run with
 * MALLOC_CONF=retain:false for a mapping per extent (as here by default).
 * Exit 0 when everything held.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <guard.h>

#include "../tools/jemalloc/hooks.h"

/* Before jemalloc starts: a mapping per extent, no separate huge arena. */
const char *malloc_conf = "retain:false,oversize_threshold:0";

#define THREADS 4
#define OBJS 3000

struct obj {
	char *p;
	size_t n;
};

static struct obj objs[THREADS][OBJS];
static long pg;

static void *work(void *arg)
{
	struct obj *o = arg;

	for (int i = 0; i < OBJS; i++) {
		/* Mostly small, a large one (jemalloc: >= 16 KiB) every 10th,
		 * a huge one (>= 4 MiB) every 500th. */
		size_t n = i % 500 == 0 ? (size_t)(5 << 20) : i % 10 == 0 ? 20000 + (size_t)i * 64
										 : 8 + (size_t)(i % 300);

		o[i].p = malloc(n);
		o[i].n = n;
		if (!o[i].p)
			return (void *)1;
		memset(o[i].p, 0x5a, n);
	}
	/* Free two in three: jemalloc splits, merges, purges, deallocates. */
	for (int i = 0; i < OBJS; i++)
		if (i % 3) {
			free(o[i].p);
			o[i].p = NULL;
		}
	return NULL;
}

static sigjmp_buf jump;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(jump, 1);
}

/*
 * Touch each of n pages in one forked child, which catches its own
 * SIGSEGV: out[i] is 1 where the touch faulted. Returns 0, or -1.
 */
static int touch_all(char *const *pages, int n, unsigned char *out)
{
	int fds[2], status;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		signal(SIGSEGV, on_segv);
		for (int i = 0; i < n; i++) {
			volatile unsigned char hit = 1;

			if (!sigsetjmp(jump, 1)) {
				(void)*(volatile char *)pages[i];
				hit = 0;
			}
			if (write(fds[1], (const void *)&hit, 1) != 1)
				_exit(2);
		}
		_exit(0);
	}
	close(fds[1]);
	for (int got = 0; pid > 0 && got < n;) {
		ssize_t r = read(fds[0], out + got, (size_t)(n - got));

		if (r <= 0)
			break;
		got += (int)r;
	}
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -1;
	return 0;
}

struct check {
	int mappings, bad;
};

/* The live mappings, copied out: jg_for_each() holds the hooks' lock. */
#define MAX_MAPPINGS 65536
static struct {
	void *extent;
	size_t size;
} maps[MAX_MAPPINGS];
static int nmaps;

static void copy_mapping(void *extent, size_t size, void *arg)
{
	(void)arg;
	if (nmaps < MAX_MAPPINGS) {
		maps[nmaps].extent = extent;
		maps[nmaps].size = size;
	}
	nmaps++;
}

static void check_mapping(void *extent, size_t size, struct check *c)
{
	char *before = (char *)extent - pg, *after = (char *)extent + size;
	unsigned char v1 = 0, v2 = 0;

	c->mappings++;
	if (guard_query(before, (size_t)pg, &v1) || guard_query(after, (size_t)pg, &v2) || !v1 ||
	    !v2) {
		fprintf(stderr, "mapping %p+%zu: guard_query says %d/%d\n", extent, size, v1, v2);
		c->bad++;
	}
}

static char *guards[2 * MAX_MAPPINGS];
static unsigned char hits[2 * MAX_MAPPINGS];

/* Does [p, p + n) meet the guard of any live mapping? */
static struct obj *probe;
static int overlaps;

static void check_overlap(void *extent, size_t size, void *arg)
{
	uintptr_t a = (uintptr_t)probe->p, b = a + probe->n;
	uintptr_t g1 = (uintptr_t)extent - (uintptr_t)pg, g2 = (uintptr_t)extent + size;

	(void)arg;
	if ((a < g1 + (uintptr_t)pg && b > g1) || (a < g2 + (uintptr_t)pg && b > g2))
		overlaps++;
}

int main(void)
{
	pthread_t t[THREADS];
	struct check c = {0, 0};
	struct jg_stats s;
	unsigned narenas = 0;
	int r, failed = 0, live = 0;

	pg = sysconf(_SC_PAGESIZE);
	r = jg_hook_all(mallctl, &narenas);
	if (r < 0) {
		fprintf(stderr, "jemalloc-guard: this jemalloc has no arena.<i>.extent_hooks: %s\n",
			strerror(-r));
		return 1;
	}
	printf("hooks on %d of %u arenas\n", r, narenas);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, work, objs[i]);
	for (int i = 0; i < THREADS; i++) {
		void *ret;

		pthread_join(t[i], &ret);
		failed |= ret != NULL;
	}
	/* Give memory back now, through the purge and dalloc hooks. */
	for (unsigned i = 0; i < narenas; i++) {
		char name[64];

		snprintf(name, sizeof(name), "arena.%u.purge", i);
		mallctl(name, NULL, NULL, NULL, 0);
	}
	/* Live objects: still all theirs, and no byte of a guard. */
	for (int i = 0; i < THREADS; i++)
		for (int j = 0; j < OBJS; j++) {
			if (!objs[i][j].p)
				continue;
			live++;
			if (objs[i][j].p[0] != 0x5a || objs[i][j].p[objs[i][j].n - 1] != 0x5a)
				failed = 1;
			probe = &objs[i][j];
			jg_for_each(check_overlap, NULL);
		}
	jg_for_each(copy_mapping, NULL);
	if (nmaps > MAX_MAPPINGS) {
		printf("more than %d mappings: checking the first ones\n", MAX_MAPPINGS);
		nmaps = MAX_MAPPINGS;
	}
	for (int i = 0; i < nmaps; i++) {
		check_mapping(maps[i].extent, maps[i].size, &c);
		guards[2 * i] = (char *)maps[i].extent - pg;
		guards[2 * i + 1] = (char *)maps[i].extent + maps[i].size;
	}
	/* Every guard must fault on a touch. */
	if (touch_all(guards, 2 * nmaps, hits)) {
		printf("the child touching the guards did not report\n");
		c.bad++;
	}
	for (int i = 0; i < 2 * nmaps; i++)
		if (!hits[i]) {
			fprintf(stderr, "guard %p does not fault\n", (void *)guards[i]);
			c.bad++;
		}
	jg_stats(&s);
	printf("%d live objects; %lu mappings guarded (%lu native, %lu fallback), %lu unmapped "
	       "with their guards, %lu refused; %d live mappings checked: %d bad guards, "
	       "%d objects meeting a guard\n",
	       live, s.guarded, s.native, s.fallback, s.unmapped, s.failed, c.mappings, c.bad,
	       overlaps);
	if (failed)
		printf("an allocation failed or lost its bytes\n");
	return failed || c.bad || overlaps || s.failed || !c.mappings;
}
