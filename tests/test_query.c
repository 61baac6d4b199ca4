// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_query(): reports native guards as the kernel's own pagemap does,
 * fallback guards from the record, many runs, and its errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"

static void errors(void **state)
{
	unsigned char vec[4];
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 4, &m);
	assert_int_equal(guard_query(NULL, pg, vec), -EINVAL);
	assert_int_equal(guard_query(m.addr + 1, pg, vec), -EINVAL);
	assert_int_equal(guard_query(m.addr, 0, vec), -EINVAL);
	assert_int_equal(guard_query(m.addr, SIZE_MAX, vec), -EINVAL);
	assert_int_equal(guard_query(m.addr, pg, NULL), -EFAULT);
	munmap(m.addr + 3 * pg, pg);
	memset(vec, 9, sizeof(vec));
	errno = 31337;
	assert_int_equal(guard_query(m.addr, 4 * pg, vec), -ENOMEM);
	assert_int_equal(errno, 31337);
	assert_int_equal(query_vec(m.addr, 3 * pg, vec), 0);
	assert_int_equal(errno, 31337);
	assert_memory_equal(vec, "\0\0\0", 3);
	munmap(m.addr, 3 * pg);
}

/* Bit 58 of /proc/self/pagemap, read by the test itself. */
static int pagemap_guard(const void *p)
{
	uint64_t e;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &e, 8, (off_t)((uintptr_t)p / pg * 8)), 8);
	close(fd);
	return (int)(e >> 58 & 1);
}

/* 100 alternating guards: more runs than one PAGEMAP_SCAN call returns. */
static void many_runs(void **state)
{
	enum { N = 200 };
	unsigned char vec[N];
	bool native = want_native(T_ANON);
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, N, &m);
	for (int i = 0; i < N; i += 2)
		assert_int_equal(guard_install(m.addr + i * pg, pg, 0), 0);
	assert_int_equal(query_vec(m.addr, N * pg, vec), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(vec[i], i % 2 ? 0 : native ? GUARD_QUERY_NATIVE : GUARD_QUERY_FALLBACK);
		if (native && (want_caps(NULL) & GUARD_CAP_PAGEMAP))
			assert_int_equal(pagemap_guard(m.addr + i * pg), !(i % 2));
	}
	/* a window that starts and ends inside the pattern */
	assert_int_equal(query_vec(m.addr + 3 * pg, 5 * pg, vec), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(!!vec[i], i % 2 == 1);
	printf("# %d guards reported as %s\n", N / 2, native ? "native" : "fallback");
	tmap_free(&m);
}

/* Both methods in one range: each page says which. */
static void both_methods(void **state)
{
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 4, &m);
	assert_int_equal(guard_install(m.addr + pg, pg, GUARD_FALLBACK), 0);
	if (want_native(T_ANON)) {
		assert_int_equal(guard_install(m.addr + 2 * pg, pg, GUARD_NATIVE), 0);
		assert_string_equal(query_str(m.addr, 4 * pg), "0210");
		/* a page guarded both ways (found by faulting: just PROT_NONE) */
		assert_int_equal(guard_install(m.addr + pg, pg, GUARD_NATIVE), 0);
		assert_string_equal(query_str(m.addr, 4 * pg), query_reports() ? "0310" : "0210");
	} else {
		assert_string_equal(query_str(m.addr, 4 * pg), "0200");
	}
	assert_int_equal(guard_remove(m.addr, 4 * pg, 0), 0);
	assert_string_equal(query_str(m.addr, 4 * pg), "0000");
	tmap_free(&m);
}

/* A fallback guard the caller re-opened with mprotect is not a guard. */
static void reopened_fallback_not_reported(void **state)
{
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 3, &m);
	assert_int_equal(guard_install(m.addr, 3 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(mprotect(m.addr + pg, pg, PROT_READ), 0);
	assert_string_equal(query_str(m.addr, 3 * pg), "202");
	assert_int_equal(guard_remove(m.addr, 3 * pg, 0), 0);
	/* the re-opened page keeps what the caller gave it */
	assert_int_equal(page_prot(m.addr + pg), PROT_READ);
	assert_int_equal(page_prot(m.addr), PROT_READ | PROT_WRITE);
	tmap_free(&m);
}

/* Native guards set with raw madvise(), not by the library, are seen too. */
static void sees_foreign_native_guards(void **state)
{
	struct tmap m;

	(void)state;
	if (!(want_caps(NULL) & GUARD_CAP_ANON)) {
		printf("# no native guards expected on this kernel\n");
		skip();
	}
	tmap_new(T_ANON, 3, &m);
	assert_int_equal(madvise(m.addr + pg, pg, 102 /* MADV_GUARD_INSTALL */), 0);
	assert_string_equal(query_str(m.addr, 3 * pg), "010");
	assert_int_equal(guard_remove(m.addr, 3 * pg, 0), 0);
	assert_string_equal(query_str(m.addr, 3 * pg), "000");
	tmap_free(&m);
}

/*
 * A kernel with native guards but no way to report them (upstream 6.13
 * and 6.14): guard_query() says -EOPNOTSUPP, as documented, for any
 * mapped range, guarded or not, and leaves errno alone; argument errors
 * and holes are still found first.
 */
static void unreportable_kernel(void **state)
{
	unsigned char vec[3];
	struct tmap m;

	(void)state;
	if (query_reports()) {
		printf("# this kernel reports guards: nothing to check\n");
		skip();
	}
	tmap_new(T_ANON, 3, &m);
	errno = 4321;
	assert_int_equal(guard_query(m.addr, 3 * pg, vec), -EOPNOTSUPP);
	assert_int_equal(guard_install(m.addr + pg, pg, 0), 0);
	assert_int_equal(guard_query(m.addr, 3 * pg, vec), -EOPNOTSUPP);
	assert_int_equal(guard_query(m.addr + 1, pg, vec), -EINVAL);
	assert_int_equal(errno, 4321);
	/* the guard is there all the same */
	assert_string_equal(query_str(m.addr, 3 * pg), want_native(T_ANON) ? "010" : "020");
	printf("# guard_query: -EOPNOTSUPP; the guard found by faulting instead\n");
	tmap_free(&m);
}

/*
 * Many fallback records: one VMA each (more than the query's step of 64
 * pieces), then many in one PROT_NONE VMA (their protections differ, so
 * the records stay apart while the kernel merges the VMAs), which one
 * PROCMAP_QUERY answers for; a record the caller re-protected in the
 * middle of that VMA is not reported, its neighbours still are.
 */
static void many_fallback_records(void **state)
{
	enum { N = 300 };
	char *p = mmap(NULL, 2 * N * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *vec = malloc(2 * N);

	(void)state;
	assert_true(p != MAP_FAILED && vec);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(guard_install(p + (2 * i + 1) * pg, pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_query(p, 2 * N * pg, vec), 0);
	for (size_t i = 0; i < 2 * N; i++)
		assert_int_equal(vec[i] & GUARD_QUERY_FALLBACK, i % 2 ? GUARD_QUERY_FALLBACK : 0);
	/* from inside the range too: the step starts mid-way */
	assert_int_equal(guard_query(p + 3 * pg, (2 * N - 3) * pg, vec), 0);
	for (size_t i = 0; i < 2 * N - 3; i++)
		assert_int_equal(vec[i] & GUARD_QUERY_FALLBACK, i % 2 ? 0 : GUARD_QUERY_FALLBACK);
	assert_int_equal(guard_remove(p, 2 * N * pg, 0), 0);

	for (size_t i = 0; i < 2 * N; i += 2)
		assert_int_equal(mprotect(p + i * pg, pg, PROT_READ), 0);
	for (size_t i = 0; i < 2 * N; i++)
		assert_int_equal(guard_install(p + i * pg, pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_query(p, 2 * N * pg, vec), 0);
	for (size_t i = 0; i < 2 * N; i++)
		assert_int_equal(vec[i] & GUARD_QUERY_FALLBACK, GUARD_QUERY_FALLBACK);
	assert_int_equal(mprotect(p + N * pg, pg, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(guard_query(p, 2 * N * pg, vec), 0);
	for (size_t i = 0; i < 2 * N; i++)
		assert_int_equal(vec[i] & GUARD_QUERY_FALLBACK, i == N ? 0 : GUARD_QUERY_FALLBACK);
	/* the rest give back each its own protection */
	assert_int_equal(guard_remove(p, 2 * N * pg, 0), 0);
	for (size_t i = 0; i < 2 * N; i++)
		assert_int_equal(page_prot(p + i * pg),
				 i == N || i % 2 ? PROT_READ | PROT_WRITE : PROT_READ);
	free(vec);
	munmap(p, 2 * N * pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(errors),
		cmocka_unit_test(many_runs),
		cmocka_unit_test(both_methods),
		cmocka_unit_test(reopened_fallback_not_reported),
		cmocka_unit_test(sees_foreign_native_guards),
		cmocka_unit_test(unreportable_kernel),
		cmocka_unit_test(many_fallback_records),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
