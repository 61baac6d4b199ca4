// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * slab: what an allocator does with libguard.
 *
 * 1. Large allocations, Electric-Fence style: each one its own mapping
 *    with a guard page either side, from guard_map_anon(), freed with
 *    guard_unmap(). The method each got is counted: a fallback guard
 *    costs a VMA, and an allocator near vm.max_map_count wants to know.
 * 2. A slab of small objects in one mapping: one guard_map_anon() for the
 *    slab, then a guard after every object with GUARD_FRESH (the memory is
 *    new: no look first): the first by guard_install2(), which says which
 *    method it used, the rest in one guard_install_batch().
 * 3. An overflow off the end of an object faults at the guard (checked in
 *    a child, so that the example can say so and exit 0).
 *
 * Exits 0 when libguard behaved as documented, 1 otherwise.
 */
#include <errno.h>
#include <guard.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define LARGE 64
#define OBJECTS 256
#define OBJ_PAGES 3

static size_t page;
static unsigned int fallback_guards;

/* A large allocation: its own mapping, a guard page either side. */
static void *big_alloc(size_t size)
{
	unsigned int method;
	void *p = guard_map_anon(size, PROT_READ | PROT_WRITE, MAP_PRIVATE, page, page, 0, &method);

	if (p != MAP_FAILED && method == GUARD_METHOD_FALLBACK)
		fallback_guards += 2;
	return p == MAP_FAILED ? NULL : p;
}

/* Does writing one byte at p fault with SIGSEGV? In a child. */
static int faults(volatile char *p)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		*p = 1;
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
	       WTERMSIG(status) == SIGSEGV;
}

int main(void)
{
	size_t stride = (OBJ_PAGES + 1), slab_len, done = 0;
	struct iovec guards[OBJECTS];
	char *big[LARGE], *slab;
	unsigned int method = 0;
	int ret, ok = 1;

	page = (size_t)sysconf(_SC_PAGESIZE);
	/* 1 */
	for (int i = 0; i < LARGE; i++) {
		big[i] = big_alloc((size_t)(i + 1) * 1000);
		if (!big[i]) {
			perror("guard_map_anon");
			return 1;
		}
		memset(big[i], 0x5a, (size_t)(i + 1) * 1000);
	}
	printf("%d large allocations, %u of their guards by the fallback (a VMA each)\n", LARGE,
	       fallback_guards);
	ok &= faults(big[7] - 1) && faults(big[7] + ((8000 + page - 1) & ~(page - 1)));
	/* free in an order of our choosing: the registry does not care */
	for (int i = 0; i < LARGE; i++)
		ok &= guard_unmap(big[(i * 37) % LARGE], (size_t)((i * 37) % LARGE + 1) * 1000) == 0;

	/* 2 */
	slab_len = OBJECTS * stride * page;
	slab = guard_map_anon(slab_len, PROT_READ | PROT_WRITE, MAP_PRIVATE, 0, 0, 0, NULL);
	if (slab == MAP_FAILED) {
		perror("guard_map_anon");
		return 1;
	}
	for (size_t i = 0; i < OBJECTS; i++)
		guards[i] = (struct iovec){ slab + (i * stride + OBJ_PAGES) * page, page };
	/* the first guard tells the method; the others go in one batch */
	ret = guard_install2(guards[0].iov_base, page, GUARD_FRESH, &method);
	if (!ret)
		ret = guard_install_batch(guards + 1, OBJECTS - 1, GUARD_FRESH, &done);
	if (ret) {
		fprintf(stderr, "guard_install: %s after %zu guards\n", strerror(-ret), done);
		return 1;
	}
	printf("slab: %d objects of %d pages, a guard after each, method %s\n", OBJECTS,
	       OBJ_PAGES, method == GUARD_METHOD_NATIVE ? "native" : "fallback");

	/* 3 */
	ok &= faults(slab + OBJ_PAGES * page);			/* one past object 0 */
	ok &= faults(slab + (5 * stride + OBJ_PAGES) * page + 17);	/* inside object 5's guard */
	slab[0] = 1;
	slab[(OBJECTS - 1) * stride * page + OBJ_PAGES * page - 1] = 1;	/* last byte of the last */
	ok &= guard_unmap(slab, slab_len) == 0;
	printf("%s\n", ok ? "every overflow faulted at its guard" : "FAILED: an overflow went unnoticed");
	return ok ? 0 : 1;
}
