// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libguard-malloc.so opened with dlopen() after glibc's malloc has served
 * the program: its free() of a pointer from before it was loaded gives
 * the pointer to glibc; its own malloc() guards (mode=all from meson.build);
 * a SIGSEGV handler the program installed before still gets its faults.
 * And 20,000 live guarded allocations: a handful of VMAs with native
 * guards; with the mprotect method, the cap from vm.max_map_count, and
 * every allocation past it served. $LIBGUARD_MALLOC_MODULE names the
 * module.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard-malloc.h>

#include "expect.h"

static sigjmp_buf jump;
static volatile int program_faults;

static void program_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	program_faults++;
	siglongjmp(jump, 1);
}

static void before_load(void **state)
{
	const char *path = getenv("LIBGUARD_MALLOC_MODULE");
	char *early[64];
	void *h, *p;
	void (*gfree)(void *);
	void *(*gmalloc)(size_t);
	size_t (*gusable)(void *);
	int (*gstats)(struct guard_malloc_stats *, size_t);
	struct guard_malloc_stats st;

	(void)state;
	assert_non_null(path);
	for (int i = 0; i < 64; i++) {
		early[i] = malloc(24 + i * 100);	/* glibc's */
		assert_non_null(early[i]);
		memset(early[i], 1, 24);
	}
	/* A SIGSEGV handler the program had before the module came. */
	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = program_handler;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		assert_int_equal(sigaction(SIGSEGV, &sa, NULL), 0);
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	gfree = (void (*)(void *))dlsym(h, "free");
	gmalloc = (void *(*)(size_t))dlsym(h, "malloc");
	gusable = (size_t (*)(void *))dlsym(h, "malloc_usable_size");
	gstats = (int (*)(struct guard_malloc_stats *, size_t))dlsym(h, "guard_malloc_stats");
	assert_non_null(gfree);
	assert_non_null(gmalloc);
	assert_non_null(gusable);
	assert_non_null(gstats);
	for (int i = 0; i < 64; i++) {
		assert_true(gusable(early[i]) >= 24u + i * 100u);	/* asked of glibc */
		gfree(early[i]);
	}
	p = gmalloc(13);
	assert_non_null(p);
	assert_int_equal(gusable(p), 13);
	assert_int_equal(gstats(&st, sizeof(st)), 0);
	assert_int_equal(st.live, 1);
	gfree(p);
	assert_int_equal(gstats(&st, sizeof(st)), 0);
	assert_int_equal(st.live, 0);
	/* The module's handler is in now (a pool exists): other faults reach the program's. */
	{
		struct sigaction now;
		char *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		assert_true(none != MAP_FAILED);
		assert_int_equal(sigaction(SIGSEGV, NULL, &now), 0);
		assert_ptr_not_equal(now.sa_sigaction, program_handler);
		if (!sigsetjmp(jump, 1))
			*(volatile char *)none = 1;
		assert_int_equal(program_faults, 1);
		munmap(none, 4096);
	}
	/* And glibc's malloc still works after all that. */
	p = malloc(100);
	assert_non_null(p);
	free(p);
}

static size_t vmas(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	size_t n = 0;
	int c;

	assert_non_null(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static size_t max_map_count(void)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	unsigned long v = 65530;

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 65530;
		fclose(f);
	}
	return v;
}

#define MANY 20000

static void many_live(void **state)
{
	void *h = dlopen(getenv("LIBGUARD_MALLOC_MODULE"), RTLD_NOW | RTLD_LOCAL);
	void (*gfree)(void *);
	void *(*gmalloc)(size_t);
	int (*gstats)(struct guard_malloc_stats *, size_t);
	struct guard_malloc_stats st, before;
	size_t v0, v1, want_cap;
	static char *p[MANY];

	(void)state;
	assert_non_null(h);
	gfree = (void (*)(void *))dlsym(h, "free");
	gmalloc = (void *(*)(size_t))dlsym(h, "malloc");
	gstats = (int (*)(struct guard_malloc_stats *, size_t))dlsym(h, "guard_malloc_stats");
	assert_int_equal(gstats(&before, sizeof(before)), 0);
	{
		const char *why, *force = getenv("LIBGUARD_FORCE_FALLBACK");
		int forced = force && *force && strcmp(force, "0");

		assert_int_equal(before.method, !forced && (expect_caps(&why) & EXPECT_ANON) ? 1 : 2);
	}
	want_cap = before.method == 1 ? before.slots : max_map_count() / 4;
	assert_int_equal(before.cap, want_cap < before.slots ? want_cap : before.slots);
	v0 = vmas();
	for (int i = 0; i < MANY; i++) {
		p[i] = gmalloc(16);
		assert_non_null(p[i]);
		if (i % 64 == 0)
			memset(p[i], 1, 16);
	}
	v1 = vmas();
	assert_int_equal(gstats(&st, sizeof(st)), 0);
	/*
	 * Every guarded object ends on a guard (the pool's chunk boundaries
	 * included): write(2) from its last byte works, from the next gives
	 * EFAULT, no signal.
	 */
	{
		int fds[2], guarded = 0;
		char sink[64];

		assert_int_equal(pipe(fds), 0);
		for (int i = 0; i < MANY; i++) {
			errno = 0;
			if (write(fds[1], p[i] + 16, 1) == -1 && errno == EFAULT) {
				assert_int_equal(write(fds[1], p[i] + 15, 1), 1);
				assert_int_equal(read(fds[0], sink, 1), 1);
				guarded++;
			} else {
				assert_int_equal(read(fds[0], sink, 1), 1);
			}
		}
		close(fds[0]);
		close(fds[1]);
		assert_int_equal(guarded, (int)st.live);
	}
	print_message("# %s: %zu live guarded of %d, cap %zu, %zu past it; VMAs %zu -> %zu\n",
		      st.method == 1 ? "native" : "fallback", st.live, MANY, st.cap,
		      st.unguarded_cap - before.unguarded_cap, v0, v1);
	if (st.method == 1) {	/* one VMA for the pool, however many live */
		assert_int_equal(st.live, MANY);
		assert_true(v1 <= v0 + 2);
	} else {
		assert_int_equal(st.live, st.cap < MANY ? st.cap : MANY);
		assert_int_equal(st.unguarded_cap - before.unguarded_cap, MANY - st.live);
		assert_true(v1 <= v0 + 2 * st.live + 2);
		assert_true(v1 < max_map_count() / 2 + v0);	/* half is left to the program */
	}
	for (int i = 0; i < MANY; i++)
		gfree(p[i]);
	assert_int_equal(gstats(&st, sizeof(st)), 0);
	assert_int_equal(st.live, 0);
	print_message("# after free: %zu VMAs\n", vmas());
	assert_true(vmas() <= v0 + 2);	/* the fallback's VMAs merge back */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(before_load),
		cmocka_unit_test(many_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
