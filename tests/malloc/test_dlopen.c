// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libguard-malloc.so opened with dlopen() after glibc's malloc has served
 * the program: its free() of a pointer from before it was loaded gives
 * the pointer to glibc; its own malloc() guards (mode=all from meson.build).
 * $LIBGUARD_MALLOC_MODULE names the module.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <guard-malloc.h>

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
	/* And glibc's malloc still works after all that. */
	p = malloc(100);
	assert_non_null(p);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(before_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
