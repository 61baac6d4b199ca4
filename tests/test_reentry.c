// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * An allocator whose hooks call libguard (jemalloc's extent hooks): every
 * malloc() the library makes may come back into the library. This program
 * is such an allocator: its malloc() calls guard_query() on a fallback
 * guard, which takes the library's mutex. A malloc() made with the mutex
 * held (a record's node, a plan, the registry's table) deadlocks: the work
 * runs in a child with an alarm, and the parent fails on its SIGALRM.
 * Enough guards that every structure outgrows its first, static storage;
 * then a fork() child acts on the records it inherited (new slabs there).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"

#define N 600		/* one-page guards, one page apart: past the static slab */
#define MAPS 40		/* guard_map_anon() mappings: past the registry's first table */

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);

static char *sentinel;	/* a fallback guard: guard_query() of it takes the mutex */
static bool armed, inside;
static unsigned long reentered;

/* What an allocator's hook does: call libguard from inside malloc(). */
static void hook(void)
{
	unsigned char v;

	if (!armed || inside)
		return;
	inside = true;
	if (guard_query(sentinel, pg, &v) == 0 && v == GUARD_QUERY_FALLBACK)
		reentered++;
	inside = false;
}

void *malloc(size_t size)
{
	hook();
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	hook();
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	hook();
	return __libc_realloc(p, size);
}

void free(void *p)
{
	hook();
	__libc_free(p);
}

/* Guards on every other page of base, each call its own; then all of it in one. */
static int guard_many(char *base, size_t n)
{
	unsigned char *vec = __libc_malloc(2 * n);
	int bad = 0;

	if (!vec)
		return 1;
	for (size_t i = 0; i < n && !bad; i++)
		bad = guard_install(base + (2 * i + 1) * pg, pg, GUARD_FALLBACK) != 0;
	bad = bad || guard_query(base, 2 * n * pg, vec) != 0;
	for (size_t i = 0; i < 2 * n && !bad; i++)
		bad = vec[i] != (i % 2 ? GUARD_QUERY_FALLBACK : 0);
	/* one call over N records: a plan of 2N pieces */
	bad = bad || guard_install(base, 2 * n * pg, GUARD_FALLBACK) != 0;
	bad = bad || guard_query(base, 2 * n * pg, vec) != 0;
	for (size_t i = 0; i < 2 * n && !bad; i++)
		bad = vec[i] != GUARD_QUERY_FALLBACK;
	bad = bad || guard_remove(base, 2 * n * pg, 0) != 0;
	bad = bad || guard_query(base, 2 * n * pg, vec) != 0;
	for (size_t i = 0; i < 2 * n && !bad; i++)
		bad = vec[i] != 0;
	__libc_free(vec);
	return bad;
}

/* The child's work: 0, or which step failed. */
static int work(void)
{
	size_t len = 2 * N * pg;
	char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *maps[MAPS];
	pid_t pid;
	int st;

	if (base == MAP_FAILED)
		return 2;
	armed = true;
	free(malloc(1));	/* the hook works: it found the sentinel guarded */
	if (!reentered)
		return 9;
	if (guard_many(base, N))
		return 3;
	for (int i = 0; i < MAPS; i++) {
		maps[i] = guard_map_anon(pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, pg, pg,
					 GUARD_FALLBACK, NULL);
		if (maps[i] == MAP_FAILED)
			return 4;
	}
	/* a fork() with N records held: the child keeps and changes them */
	for (size_t i = 0; i < N; i++)
		if (guard_install(base + (2 * i + 1) * pg, pg, GUARD_FALLBACK))
			return 5;
	pid = fork();
	if (pid == 0)
		_exit(guard_remove(base, len, 0) || guard_many(base, N) ? 1 : 0);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 6;
	if (guard_remove(base, len, 0))
		return 7;
	for (int i = 0; i < MAPS; i++)
		if (guard_unmap(maps[i], pg))
			return 8;
	armed = false;
	return 0;
}

static void malloc_reenters_the_library(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	sentinel = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(sentinel != MAP_FAILED);
	assert_int_equal(guard_install(sentinel, pg, GUARD_FALLBACK), 0);
	pid = fork();
	if (pid == 0) {
		/*
		 * A deadlock ends here, as SIGALRM: a watchdog, not a timing.
		 * Generous: the work took 25 s on Debian 12's 6.1 under TCG on a
		 * loaded host (no PROCMAP_QUERY: each lookup reads the maps text).
		 */
		alarm(300);
		_exit(work());
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		fail_msg("child killed by signal %d (SIGALRM: malloc() under the library's mutex)",
			 WTERMSIG(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(guard_remove(sentinel, pg, 0), 0);
	munmap(sentinel, pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(malloc_reenters_the_library),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
