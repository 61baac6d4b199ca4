// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_probe(): its answer is what this environment says the kernel can
 * do (helpers/expect.c), it is the same from every thread, it ignores
 * LIBGUARD_FORCE_FALLBACK, and it leaves errno alone.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"

#define NTHREADS 8
static pthread_barrier_t start_line;

static void *probe_thread(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start_line);
	return (void *)(uintptr_t)guard_probe();
}

/* Runs first: the threads race for the one real probe. */
static void concurrent_first_call(void **state)
{
	pthread_t t[NTHREADS];
	uintptr_t first = UINTPTR_MAX;

	(void)state;
	pthread_barrier_init(&start_line, NULL, NTHREADS);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, probe_thread, NULL), 0);
	for (int i = 0; i < NTHREADS; i++) {
		void *ret;

		pthread_join(t[i], &ret);
		if (first == UINTPTR_MAX)
			first = (uintptr_t)ret;
		assert_int_equal((uintptr_t)ret, first);
	}
	assert_int_equal(guard_probe(), first);
	pthread_barrier_destroy(&start_line);
}

static void matches_environment(void **state)
{
	const char *why, *dir_why = NULL;
	unsigned int want = want_caps(&why), got = guard_probe(), mask = ~0u;

	(void)state;
	/* FILE and READONLY need a page-cache directory to be probed on. */
	if (!scratch_dir(&dir_why)) {
		printf("# %s: not checking file and readonly\n", dir_why);
		mask &= ~(GUARD_CAP_FILE | GUARD_CAP_READONLY);
		assert_int_equal(got & (GUARD_CAP_FILE | GUARD_CAP_READONLY), 0);
	}
	printf("# guard_probe() = %#x, expected %#x (%s)%s\n", got, want, why,
	       forced_fallback() ? "; LIBGUARD_FORCE_FALLBACK does not change it" : "");
	printf("# method for new guards: %s\n",
	       forced_fallback() || !(got & GUARD_CAP_NATIVE_MASK) ? "fallback (mprotect)"
								  : "native where the mapping allows");
	assert_int_equal(got & mask, want & mask);
}

/* The probe is real: each claimed capability works when used directly. */
static void claims_hold(void **state)
{
	unsigned int caps = guard_probe();

	(void)state;
	if (!(caps & GUARD_CAP_NATIVE_MASK)) {
		printf("# no native capability claimed: nothing to check\n");
		skip();
	}
	for (enum tkind k = T_ANON; k < T_NKINDS; k++) {
		struct tmap m;
		int ret;

		if (!(caps & kind_cap(k)) || tmap_new(k, 2, &m))
			continue;
		ret = guard_install(m.addr, pg, GUARD_NATIVE);
		printf("# %s: native install %d\n", kind_name(k), ret);
		assert_int_equal(ret, forced_fallback() ? -EOPNOTSUPP : 0);
		tmap_free(&m);
	}
}

static void errno_untouched(void **state)
{
	(void)state;
	errno = 777;
	guard_probe();
	assert_int_equal(errno, 777);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(concurrent_first_call),
		cmocka_unit_test(matches_environment),
		cmocka_unit_test(claims_hold),
		cmocka_unit_test(errno_untouched),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
