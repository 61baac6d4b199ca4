// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Hostile arguments to the range calls (guard_install, guard_remove,
 * guard_query and the batch calls): every class of invalid argument gives
 * the error guard.h and the manual pages document, leaves errno alone, and
 * changes nothing: /proc/self/maps, the guard, present and swap bits of
 * pagemap and the bytes of every page of the ranges involved are the same
 * before and after (helpers/memstate). Also the mappings guards can't go
 * on natively (mlocked, hugetlb): GUARD_NATIVE is refused without a trace,
 * and where the fallback is taken, removal brings back exactly the state
 * before.
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
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"
#include "helpers/memstate.h"

#define ERRNO_MARK 4242

/* expr returns want, keeps errno and changes nothing in the ranges given. */
#define expect_err(want, expr, ...) \
	do { \
		int got_, errno_; \
		assert_unchanged((errno = ERRNO_MARK, got_ = (expr), errno_ = errno), __VA_ARGS__); \
		if (got_ != (want)) \
			print_error("%s: %d, want %d\n", #expr, got_, (want)); \
		assert_int_equal(got_, (want)); \
		assert_int_equal(errno_, ERRNO_MARK); \
	} while (0)

/* Above the user address space on x86-64 and arm64, page-aligned. */
#define KERNEL_ADDR ((void *)(uintptr_t)0xffff800000000000ull)

/* Native guards of some kind here, and the policy lets the library use them. */
static bool native_at_all(void)
{
	return !forced_fallback() && (want_caps(NULL) & GUARD_CAP_NATIVE_MASK);
}

/* One mapping of each kind, three pages, the middle one already guarded. */
static void bad_arguments_kind(enum tkind kind)
{
	struct tmap m;
	const char *why = tmap_new(kind, 3, &m);
	unsigned char vec[3];
	char *a;

	if (why) {
		printf("# %s: %s\n", kind_name(kind), why);
		skip();
	}
	a = m.addr;
	assert_int_equal(guard_install(a + pg, pg, 0), 0);
	for (unsigned int f = 0; f < 3; f++) {
		unsigned int flags = f == 2 ? GUARD_FALLBACK : f;
		/* GUARD_NATIVE with no native guards at all fails before the range is looked at */
		int unmapped = f == 1 && !native_at_all() ? -EOPNOTSUPP : -ENOMEM;

		/* NULL, unaligned, zero, wrapping and overflowing ranges */
		expect_err(-EINVAL, guard_install(NULL, pg, flags), a, 3 * pg, NULL);
		expect_err(-EINVAL, guard_install(a + 1, pg, flags), a, 3 * pg, NULL);
		expect_err(-EINVAL, guard_install(a + pg - 1, 2, flags), a, 3 * pg, NULL);
		expect_err(-EINVAL, guard_install(a, 0, flags), a, 3 * pg, NULL);
		expect_err(-EINVAL, guard_install(a, SIZE_MAX, flags), a, 3 * pg, NULL);
		expect_err(-EINVAL, guard_install(a, SIZE_MAX - pg + 2, flags), a, 3 * pg, NULL);
		expect_err(-EINVAL, guard_install(a, UINTPTR_MAX - (uintptr_t)a + 1, flags), a,
			   3 * pg, NULL);
		expect_err(-EINVAL,
			   guard_install((void *)(UINTPTR_MAX & ~(pg - 1)), 2 * pg, flags), a,
			   3 * pg, NULL);
		expect_err(-EINVAL, guard_remove(NULL, pg, flags), a, 3 * pg, NULL);
		expect_err(-EINVAL, guard_remove(a + 1, pg, flags), a, 3 * pg, NULL);
		expect_err(-EINVAL, guard_remove(a, 0, flags), a, 3 * pg, NULL);
		expect_err(-EINVAL, guard_remove(a, SIZE_MAX, flags), a, 3 * pg, NULL);
		expect_err(-EINVAL, guard_remove(a, UINTPTR_MAX - (uintptr_t)a + 1, flags), a,
			   3 * pg, NULL);
		/* beyond the user address space: not mapped */
		expect_err(unmapped, guard_install(KERNEL_ADDR, pg, flags), a, 3 * pg, NULL);
		expect_err(unmapped, guard_install(KERNEL_ADDR, 4 * pg, flags), a, 3 * pg, NULL);
		expect_err(unmapped, guard_remove(KERNEL_ADDR, pg, flags), a, 3 * pg, NULL);
	}
	/* unknown flag bits, both methods at once; GUARD_FRESH is for installs only */
	for (unsigned int bit = 2; bit < 32; bit++) {
		if (1u << bit != GUARD_FRESH) {
			expect_err(-EINVAL, guard_install(a, pg, 1u << bit), a, 3 * pg, NULL);
			expect_err(-EINVAL, guard_install2(a, pg, 1u << bit, NULL), a, 3 * pg,
				   NULL);
		}
		expect_err(-EINVAL, guard_remove(a + pg, pg, 1u << bit), a, 3 * pg, NULL);
	}
	expect_err(-EINVAL, guard_install(a, pg, GUARD_NATIVE | GUARD_FALLBACK), a, 3 * pg, NULL);
	expect_err(-EINVAL, guard_install(a, pg, GUARD_NATIVE | GUARD_FALLBACK | GUARD_FRESH), a,
		   3 * pg, NULL);
	expect_err(-EINVAL, guard_remove(a + pg, pg, ~0u), a, 3 * pg, NULL);
	/* guard_query: the same ranges, and no vector */
	expect_err(-EINVAL, guard_query(NULL, pg, vec), a, 3 * pg, NULL);
	expect_err(-EINVAL, guard_query(a + 1, pg, vec), a, 3 * pg, NULL);
	expect_err(-EINVAL, guard_query(a, 0, vec), a, 3 * pg, NULL);
	expect_err(-EINVAL, guard_query(a, SIZE_MAX, vec), a, 3 * pg, NULL);
	expect_err(-EFAULT, guard_query(a, 3 * pg, NULL), a, 3 * pg, NULL);
	expect_err(-ENOMEM, guard_query(KERNEL_ADDR, pg, vec), a, 3 * pg, NULL);
	assert_string_equal(query_str(a, 3 * pg), want_native(kind) ? "010" : "020");
	assert_int_equal(guard_remove(a, 3 * pg, 0), 0);
	tmap_free(&m);
}

static void bad_arguments_anon(void **s) { (void)s; bad_arguments_kind(T_ANON); }
static void bad_arguments_shmem(void **s) { (void)s; bad_arguments_kind(T_SHMEM); }
static void bad_arguments_file(void **s) { (void)s; bad_arguments_kind(T_FILE); }
static void bad_arguments_readonly(void **s) { (void)s; bad_arguments_kind(T_READONLY); }

/*
 * A hole in the range: -ENOMEM and nothing done, by any call, whatever
 * the method, with guards on both sides of the hole left in place.
 */
static void hole_kind(enum tkind kind)
{
	struct tmap m;
	const char *why = tmap_new(kind, 5, &m);
	unsigned char vec[5];
	char *a;

	if (why) {
		printf("# %s: %s\n", kind_name(kind), why);
		skip();
	}
	a = m.addr;
	assert_int_equal(guard_install(a, pg, 0), 0);
	assert_int_equal(guard_install(a + 4 * pg, pg, 0), 0);
	assert_int_equal(munmap(a + 2 * pg, pg), 0);
	for (unsigned int f = 0; f < 3; f++) {
		unsigned int flags = f == 2 ? GUARD_FALLBACK : f;

		if ((flags & GUARD_NATIVE) && !want_native(kind))
			continue;	/* -EOPNOTSUPP comes first: see native_refused */
		expect_err(-ENOMEM, guard_install(a, 5 * pg, flags), a, 2 * pg, a + 3 * pg, 2 * pg,
			   NULL);
		expect_err(-ENOMEM, guard_install(a + pg, 2 * pg, flags), a, 2 * pg, a + 3 * pg,
			   2 * pg, NULL);
		expect_err(-ENOMEM, guard_install(a + 2 * pg, pg, flags), a, 2 * pg, a + 3 * pg,
			   2 * pg, NULL);
		expect_err(-ENOMEM, guard_remove(a, 5 * pg, flags), a, 2 * pg, a + 3 * pg, 2 * pg,
			   NULL);
		expect_err(-ENOMEM, guard_remove(a + 2 * pg, 2 * pg, flags), a, 2 * pg, a + 3 * pg,
			   2 * pg, NULL);
	}
	expect_err(-ENOMEM, guard_query(a, 5 * pg, vec), a, 2 * pg, a + 3 * pg, 2 * pg, NULL);
	expect_err(-ENOMEM, guard_query(a + 2 * pg, pg, vec), a, 2 * pg, a + 3 * pg, 2 * pg, NULL);
	assert_int_equal(guard_remove(a, 2 * pg, 0), 0);
	assert_int_equal(guard_remove(a + 3 * pg, 2 * pg, 0), 0);
	munmap(a, 2 * pg);
	munmap(a + 3 * pg, 2 * pg);
	if (m.fd >= 0)
		close(m.fd);
}

static void hole_anon(void **s) { (void)s; hole_kind(T_ANON); }
static void hole_shmem(void **s) { (void)s; hole_kind(T_SHMEM); }
static void hole_file(void **s) { (void)s; hole_kind(T_FILE); }
static void hole_readonly(void **s) { (void)s; hole_kind(T_READONLY); }

/* GUARD_NATIVE where native guards can't be had: refused, no trace. */
static void native_refused(void **state)
{
	for (enum tkind k = T_ANON; k < T_NKINDS; k++) {
		struct tmap m;
		const char *why = tmap_new(k, 3, &m);

		(void)state;
		if (why) {
			printf("# %s: %s\n", kind_name(k), why);
			continue;
		}
		if (!want_native(k))
			expect_err(-EOPNOTSUPP, guard_install(m.addr, 3 * pg, GUARD_NATIVE), m.addr,
				   3 * pg, NULL);
		if (!native_at_all())
			expect_err(-EOPNOTSUPP, guard_remove(m.addr, 3 * pg, GUARD_NATIVE), m.addr,
				   3 * pg, NULL);
		tmap_free(&m);
	}
}

/*
 * mlocked memory: the kernel refuses native guards (GUARD_NATIVE:
 * -EOPNOTSUPP, nothing changed); without the flag the fallback guards it,
 * keeps the data (the kernel won't discard locked pages) and removal
 * gives back exactly the state before, protections and bytes.
 */
static void mlocked(void **state)
{
	struct tmap m;
	struct memstate before, after;
	const char *diff;

	(void)state;
	tmap_new(T_ANON, 4, &m);
	if (mlock(m.addr, 4 * pg)) {
		printf("# mlock: %s\n", strerror(errno));
		tmap_free(&m);
		skip();
	}
	expect_err(-EOPNOTSUPP, guard_install(m.addr + pg, pg, GUARD_NATIVE), m.addr, 4 * pg, NULL);
	expect_err(-EOPNOTSUPP, guard_install(m.addr, 4 * pg, GUARD_NATIVE), m.addr, 4 * pg, NULL);
	memstate_take(&before, m.addr, 4 * pg, NULL);
	assert_int_equal(guard_install(m.addr + pg, 2 * pg, 0), 0);
	assert_string_equal(query_str(m.addr, 4 * pg), "0220");
	assert_int_equal(guard_remove(m.addr + pg, 2 * pg, 0), 0);
	memstate_take(&after, m.addr, 4 * pg, NULL);
	diff = memstate_diff(&before, &after);
	if (diff)
		print_error("install + remove on mlocked memory: %s\n", diff);
	assert_null(diff);
	memstate_free(&before);
	memstate_free(&after);
	munlock(m.addr, 4 * pg);
	tmap_free(&m);
}

/*
 * hugetlb: reserved pages are needed. In the throwaway guest
 * (LIBGUARD_KERNEL is set by tests/vm/run) the test reserves two; on the
 * host it only uses what the administrator reserved, else skips.
 */
static char *map_hugetlb(size_t *huge, const char **why)
{
	char *p;
	FILE *f;
	long n = 0;

	*huge = 2u << 20;
	f = fopen("/proc/sys/vm/nr_hugepages", "r+");
	if (f && fscanf(f, "%ld", &n) == 1 && n < 2 && getenv("LIBGUARD_KERNEL")) {
		rewind(f);
		fprintf(f, "2\n");
	}
	if (f)
		fclose(f);
	p = mmap(NULL, *huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1,
		 0);
	if (p == MAP_FAILED) {
		*why = "no 2 MiB hugetlb page to map (vm.nr_hugepages is 0 on this host)";
		return NULL;
	}
	memset(p, 0x5a, *huge);
	return p;
}

static void hugetlb(void **state)
{
	const char *why = NULL;
	size_t huge;
	char *h = map_hugetlb(&huge, &why);

	(void)state;
	if (!h) {
		printf("# %s\n", why);
		skip();
	}
	expect_err(-EOPNOTSUPP, guard_install(h, huge, GUARD_NATIVE), h, huge, NULL);
	/* one small page of a huge page: neither method can, nothing changes */
	expect_err(-EINVAL, guard_install(h + pg, pg, 0), h, huge, NULL);
	expect_err(-EINVAL, guard_install(h, pg, GUARD_FALLBACK), h, huge, NULL);
	/* the whole huge page: the fallback */
	assert_int_equal(guard_install(h, huge, 0), 0);
	assert_int_equal(page_prot(h), PROT_NONE);
	assert_int_equal(guard_remove(h, huge, 0), 0);
	assert_int_equal(page_prot(h), PROT_READ | PROT_WRITE);
	munmap(h, huge);
}

static void batch_errors(void **state)
{
	struct tmap m;
	struct iovec ok[3], bad[3], hole[2];
	size_t done;
	char *a;

	(void)state;
	tmap_new(T_ANON, 6, &m);
	a = m.addr;
	assert_int_equal(munmap(a + 5 * pg, pg), 0);
	for (int i = 0; i < 3; i++)
		ok[i] = bad[i] = (struct iovec){ a + 2 * i * pg, pg };
	for (unsigned int f = 0; f < 3; f++) {
		unsigned int flags = f == 2 ? GUARD_FALLBACK : f;
		static const size_t bad_len[] = { 0, SIZE_MAX, SIZE_MAX - 4096 + 2 };

		if ((flags & GUARD_NATIVE) && !want_native(T_ANON))
			continue;
		/* NULL vector with ranges to do; none at all is fine */
		done = 7;
		expect_err(-EINVAL, guard_install_batch(NULL, 1, flags, &done), a, 5 * pg, NULL);
		assert_int_equal(done, 0);
		done = 7;
		expect_err(-EINVAL, guard_remove_batch(NULL, 2, flags, &done), a, 5 * pg, NULL);
		assert_int_equal(done, 0);
		expect_err(0, guard_install_batch(NULL, 0, flags, &done), a, 5 * pg, NULL);
		assert_int_equal(done, 0);
		/* one bad range, last: nothing done, not even the good ones before it */
		for (size_t b = 0; b < 5; b++) {
			memcpy(bad, ok, sizeof(ok));
			if (b < 3)
				bad[2].iov_len = bad_len[b];
			else
				bad[2].iov_base = b == 3 ? NULL : a + 1;
			done = 7;
			expect_err(-EINVAL, guard_install_batch(bad, 3, flags, &done), a, 5 * pg, NULL);
			assert_int_equal(done, 0);
			done = 7;
			expect_err(-EINVAL, guard_remove_batch(bad, 3, flags, &done), a, 5 * pg, NULL);
			assert_int_equal(done, 0);
		}
		expect_err(-EINVAL, guard_install_batch(ok, 3, 0x100, &done), a, 5 * pg, NULL);
		expect_err(-EINVAL, guard_remove_batch(ok, 3, GUARD_NATIVE | GUARD_FALLBACK, &done),
			   a, 5 * pg, NULL);
		/* a first range with a hole: -ENOMEM at index 0, nothing done */
		hole[0] = (struct iovec){ a + 4 * pg, 2 * pg };
		hole[1] = ok[0];
		done = 7;
		expect_err(-ENOMEM, guard_install_batch(hole, 2, flags, &done), a, 5 * pg, NULL);
		assert_int_equal(done, 0);
		hole[0] = (struct iovec){ a + 5 * pg, pg };
		done = 7;
		expect_err(-ENOMEM, guard_install_batch(hole, 2, flags, NULL), a, 5 * pg, NULL);
		expect_err(-ENOMEM, guard_remove_batch(hole, 2, flags, &done), a, 5 * pg, NULL);
		assert_int_equal(done, 0);
	}
	assert_string_equal(query_str(a, 5 * pg), "00000");
	munmap(a, 5 * pg);
}

/* guard_probe(): no arguments to get wrong, but errno and the bits. */
static void probe(void **state)
{
	unsigned int caps;

	(void)state;
	errno = ERRNO_MARK;
	caps = guard_probe();
	assert_int_equal(errno, ERRNO_MARK);
	assert_int_equal(caps & ~((GUARD_CAP_PROCESS_MADVISE << 1) - 1), 0);
}

/* The snapshot itself: each kind of change is seen, or the tests prove nothing. */
static void memstate_sees_changes(void **state)
{
	struct memstate a, b;
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 2, &m);
	memstate_take(&a, m.addr, 2 * pg, NULL);
	memstate_take(&b, m.addr, 2 * pg, NULL);
	assert_null(memstate_diff(&a, &b));
	memstate_free(&b);
	m.addr[pg] ^= 1;	/* a byte */
	memstate_take(&b, m.addr, 2 * pg, NULL);
	assert_non_null(strstr(memstate_diff(&a, &b), "contents"));
	memstate_free(&b);
	m.addr[pg] ^= 1;
	assert_int_equal(guard_install(m.addr, pg, 0), 0);	/* a guard, either kind */
	memstate_take(&b, m.addr, 2 * pg, NULL);
	assert_non_null(memstate_diff(&a, &b));
	memstate_free(&b);
	assert_int_equal(guard_remove(m.addr, pg, 0), 0);
	assert_int_equal(madvise(m.addr + pg, pg, MADV_DONTNEED), 0);	/* a page dropped */
	memstate_take(&b, m.addr, 2 * pg, NULL);
	assert_non_null(memstate_diff(&a, &b));
	memstate_free(&b);
	memstate_free(&a);
	tmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(memstate_sees_changes),
		cmocka_unit_test(probe),
		cmocka_unit_test(bad_arguments_anon),
		cmocka_unit_test(bad_arguments_shmem),
		cmocka_unit_test(bad_arguments_file),
		cmocka_unit_test(bad_arguments_readonly),
		cmocka_unit_test(hole_anon),
		cmocka_unit_test(hole_shmem),
		cmocka_unit_test(hole_file),
		cmocka_unit_test(hole_readonly),
		cmocka_unit_test(native_refused),
		cmocka_unit_test(mlocked),
		cmocka_unit_test(hugetlb),
		cmocka_unit_test(batch_errors),
	};

	guardtest_init();
	/* the probe's scratch mappings come and go before any snapshot */
	guard_probe();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
