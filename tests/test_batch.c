// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_install_batch() / guard_remove_batch(): many ranges, more than
 * IOV_MAX of them, mixed sizes, and the partial-result contract: ranges
 * before the failed one done, the failed one and those after untouched.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"


/* 1500 single-page guards, every other page: crosses IOV_MAX (1024). */
static void many_single_pages(void **state)
{
	enum { N = 1500 };
	struct iovec *iov = calloc(N, sizeof(*iov));
	unsigned char *vec = malloc(2 * N);
	char want = want_native(T_ANON) ? 1 : 2;
	struct tmap m;
	size_t done = 99;
	void *fault;

	(void)state;
	tmap_new(T_ANON, 2 * N, &m);
	for (int i = 0; i < N; i++)
		iov[i] = (struct iovec){ m.addr + 2 * i * pg, pg };
	assert_int_equal(guard_install_batch(iov, N, 0, &done), 0);
	assert_int_equal(done, N);
	assert_int_equal(query_vec(m.addr, 2 * N * pg, vec), 0);
	for (int i = 0; i < 2 * N; i++)
		assert_int_equal(vec[i], i % 2 ? 0 : want);
	printf("# %d guards by batch, method %s\n", N, want == 1 ? "native" : "fallback");
	assert_int_equal(access_in_child(m.addr + 2 * (N - 1) * pg, true, &fault), SIGSEGV);
	assert_ptr_equal(fault, m.addr + 2 * (N - 1) * pg);
	assert_int_equal(access_in_child(m.addr + (2 * N - 1) * pg, true, &fault), 0);
	assert_int_equal(guard_remove_batch(iov, N, 0, &done), 0);
	assert_int_equal(done, N);
	assert_int_equal(query_vec(m.addr, 2 * N * pg, vec), 0);
	for (int i = 0; i < 2 * N; i++)
		assert_int_equal(vec[i], 0);
	tmap_free(&m);
	free(iov);
	free(vec);
}

/* Ranges of several pages next to single pages; unaligned lengths. */
static void mixed_sizes(void **state)
{
	struct tmap m;
	struct iovec iov[4];
	size_t done;
	bool nat = want_native(T_ANON);

	(void)state;
	tmap_new(T_ANON, 12, &m);
	iov[0] = (struct iovec){ m.addr, pg };
	iov[1] = (struct iovec){ m.addr + 2 * pg, 3 * pg };
	iov[2] = (struct iovec){ m.addr + 6 * pg, 10 };
	iov[3] = (struct iovec){ m.addr + 8 * pg, 2 * pg + 1 };
	assert_int_equal(guard_install_batch(iov, 4, 0, &done), 0);
	assert_string_equal(query_str(m.addr, 12 * pg),
			    nat ? "101110101110" : "202220202220");
	assert_int_equal(guard_remove_batch(iov + 1, 2, 0, &done), 0);
	assert_int_equal(done, 2);
	assert_string_equal(query_str(m.addr, 12 * pg),
			    nat ? "100000001110" : "200000002220");
	assert_int_equal(guard_remove_batch(iov, 4, GUARD_FALLBACK, NULL), 0);
	if (!nat)
		assert_string_equal(query_str(m.addr, 12 * pg), "000000000000");
	assert_int_equal(guard_remove_batch(iov, 4, 0, NULL), 0);
	assert_string_equal(query_str(m.addr, 12 * pg), "000000000000");
	tmap_free(&m);
}

/* An invalid range anywhere: -EINVAL before anything is done. */
static void invalid_ranges(void **state)
{
	struct tmap m;
	struct iovec iov[3];
	size_t done = 99;

	(void)state;
	tmap_new(T_ANON, 4, &m);
	iov[0] = (struct iovec){ m.addr, pg };
	iov[1] = (struct iovec){ m.addr + pg, pg };
	iov[2] = (struct iovec){ m.addr + 2 * pg + 1, pg };
	errno = 55;
	assert_int_equal(guard_install_batch(iov, 3, 0, &done), -EINVAL);
	assert_int_equal(done, 0);
	assert_int_equal(errno, 55);
	assert_string_equal(query_str(m.addr, 4 * pg), "0000");
	iov[2] = (struct iovec){ m.addr + 2 * pg, 0 };
	assert_int_equal(guard_install_batch(iov, 3, 0, &done), -EINVAL);
	iov[2] = (struct iovec){ NULL, pg };
	assert_int_equal(guard_remove_batch(iov, 3, 0, &done), -EINVAL);
	assert_int_equal(guard_install_batch(NULL, 1, 0, &done), -EINVAL);
	assert_int_equal(guard_install_batch(iov, 2, 0x40, &done), -EINVAL);
	assert_int_equal(guard_install_batch(iov, 2, GUARD_NATIVE | GUARD_FALLBACK, &done),
			 -EINVAL);
	assert_string_equal(query_str(m.addr, 4 * pg), "0000");
	/* nothing to do is not an error */
	assert_int_equal(guard_install_batch(NULL, 0, 0, &done), 0);
	assert_int_equal(done, 0);
	assert_int_equal(guard_remove_batch(iov, 0, 0, NULL), 0);
	assert_int_equal(errno, 55);
	tmap_free(&m);
}

/* Range 3 of 6 is unmapped: -ENOMEM, *done = 3, 0-2 guarded, 3-5 not. */
static void stops_at_failure(void **state)
{
	unsigned int modes[] = { 0, GUARD_FALLBACK };

	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		struct iovec iov[6];
		struct tmap m;
		size_t done = 99;
		char g = modes[mode] || !want_native(T_ANON) ? '2' : '1';
		char want[13];

		tmap_new(T_ANON, 12, &m);
		for (int i = 0; i < 6; i++)
			iov[i] = (struct iovec){ m.addr + 2 * i * pg, i == 4 ? 2 * pg : pg };
		/* a multi-page range that is partly unmapped */
		iov[3] = (struct iovec){ m.addr + 6 * pg, 2 * pg };
		assert_int_equal(munmap(m.addr + 7 * pg, pg), 0);
		assert_int_equal(guard_install_batch(iov, 6, modes[mode], &done), -ENOMEM);
		assert_int_equal(done, 3);
		snprintf(want, sizeof(want), "%c0%c0%c0", g, g, g);
		assert_string_equal(query_str(m.addr, 6 * pg), want);
		assert_string_equal(query_str(m.addr + 6 * pg, pg), "0");
		assert_string_equal(query_str(m.addr + 8 * pg, 4 * pg), "0000");
		/* removal stops at the same range */
		assert_int_equal(guard_remove_batch(iov, 6, modes[mode], &done), -ENOMEM);
		assert_int_equal(done, 3);
		assert_string_equal(query_str(m.addr, 6 * pg), "000000");
		munmap(m.addr, 7 * pg);
		munmap(m.addr + 8 * pg, 4 * pg);
	}
}

/* GUARD_NATIVE where native is not possible: nothing is done. */
static void native_flag(void **state)
{
	struct tmap m;
	struct iovec iov[2];
	size_t done = 99;
	int ret;

	(void)state;
	tmap_new(T_ANON, 4, &m);
	iov[0] = (struct iovec){ m.addr, pg };
	iov[1] = (struct iovec){ m.addr + 2 * pg, pg };
	ret = guard_install_batch(iov, 2, GUARD_NATIVE, &done);
	if (want_native(T_ANON)) {
		assert_int_equal(ret, 0);
		assert_string_equal(query_str(m.addr, 4 * pg), "1010");
		/* a page the kernel refuses (mlocked) ends the batch there */
		if (mlock(m.addr + 3 * pg, pg) == 0) {
			iov[0] = (struct iovec){ m.addr + pg, pg };
			iov[1] = (struct iovec){ m.addr + 3 * pg, pg };
			assert_int_equal(guard_install_batch(iov, 2, GUARD_NATIVE, &done),
					 -EOPNOTSUPP);
			assert_int_equal(done, 1);
			assert_string_equal(query_str(m.addr, 4 * pg), "1110");
			munlock(m.addr + 3 * pg, pg);
		}
		assert_int_equal(guard_remove(m.addr, 4 * pg, 0), 0);
	} else {
		assert_int_equal(ret, -EOPNOTSUPP);
		assert_int_equal(done, 0);
		assert_string_equal(query_str(m.addr, 4 * pg), "0000");
	}
	tmap_free(&m);
}

/*
 * GUARD_FRESH: multi-page ranges go to the kernel together. A stop inside
 * one (an mlocked VMA the kernel refuses, after the range's plain part
 * was guarded) leaves that range with nothing from the batch; with
 * GUARD_NATIVE the batch ends there, without it the fallback takes it.
 */
static void fresh_multi_page(void **state)
{
	struct iovec iov[4];
	struct tmap m;
	size_t done = 99;
	char g = want_native(T_ANON) ? '1' : '2';
	char want[17];

	(void)state;
	tmap_new(T_ANON, 16, &m);
	for (int i = 0; i < 4; i++)
		iov[i] = (struct iovec){ m.addr + 4 * i * pg, 3 * pg - 1 };
	assert_int_equal(guard_install_batch(iov, 4, GUARD_FRESH, &done), 0);
	assert_int_equal(done, 4);
	snprintf(want, sizeof(want), "%c%c%c0%c%c%c0%c%c%c0%c%c%c0", g, g, g, g, g, g, g, g, g, g, g, g);
	assert_string_equal(query_str(m.addr, 16 * pg), want);
	assert_int_equal(guard_remove_batch(iov, 4, 0, &done), 0);
	assert_string_equal(query_str(m.addr, 16 * pg), "0000000000000000");
	/* GUARD_FRESH is for installs */
	assert_int_equal(guard_remove_batch(iov, 4, GUARD_FRESH, &done), -EINVAL);
	if (!want_native(T_ANON) || mlock(m.addr + 6 * pg, pg)) {
		printf("# no native guards or no mlock here: no stop inside a range\n");
		tmap_free(&m);
		return;
	}
	/* range 1 is pages 4-6, and page 6 is mlocked */
	assert_int_equal(guard_install_batch(iov, 4, GUARD_FRESH | GUARD_NATIVE, &done), -EOPNOTSUPP);
	assert_int_equal(done, 1);
	assert_string_equal(query_str(m.addr, 16 * pg), "1110000000000000");
	assert_int_equal(guard_remove(m.addr, 16 * pg, 0), 0);
	assert_int_equal(guard_install_batch(iov, 4, GUARD_FRESH, &done), 0);
	assert_string_equal(query_str(m.addr, 16 * pg), "1110222011101110");
	assert_int_equal(guard_remove_batch(iov, 4, 0, &done), 0);
	assert_string_equal(query_str(m.addr, 16 * pg), "0000000000000000");
	assert_int_equal(page_prot(m.addr + 5 * pg), PROT_READ | PROT_WRITE);
	munlock(m.addr + 6 * pg, pg);
	tmap_free(&m);
}

/*
 * Without GUARD_FRESH, ascending multi-page ranges go to the kernel together
 * after one look over their span: a stop inside one takes away only what the
 * batch added there, never a guard that was in place before (page 4 here).
 * Ranges out of order go alone, with the same result.
 */
static void looked_multi_page(void **state)
{
	struct iovec iov[4], rev[4];
	struct tmap m;
	size_t done = 99;

	(void)state;
	if (!want_native(T_ANON)) {
		printf("# no native guards here: nothing to look at\n");
		return;
	}
	tmap_new(T_ANON, 16, &m);
	for (int i = 0; i < 4; i++) {
		iov[i] = (struct iovec){ m.addr + 4 * i * pg, 3 * pg };
		rev[3 - i] = iov[i];
	}
	assert_int_equal(guard_install(m.addr + 4 * pg, pg, 0), 0);
	assert_int_equal(guard_install_batch(iov, 4, 0, &done), 0);
	assert_int_equal(done, 4);
	assert_string_equal(query_str(m.addr, 16 * pg), "1110111011101110");
	assert_int_equal(guard_remove_batch(iov, 4, 0, &done), 0);
	assert_int_equal(guard_install(m.addr + 4 * pg, pg, 0), 0);
	assert_int_equal(guard_install_batch(rev, 4, 0, &done), 0);
	assert_string_equal(query_str(m.addr, 16 * pg), "1110111011101110");
	assert_int_equal(guard_remove_batch(iov, 4, 0, &done), 0);
	if (mlock(m.addr + 6 * pg, pg)) {
		printf("# no mlock here: no stop inside a range\n");
		tmap_free(&m);
		return;
	}
	/* range 1 is pages 4-6: page 4 guarded before, page 6 mlocked */
	assert_int_equal(guard_install(m.addr + 4 * pg, pg, 0), 0);
	assert_int_equal(guard_install_batch(iov, 4, GUARD_NATIVE, &done), -EOPNOTSUPP);
	assert_int_equal(done, 1);
	assert_string_equal(query_str(m.addr, 16 * pg), "1110100000000000");
	munlock(m.addr + 6 * pg, pg);
	assert_int_equal(guard_remove(m.addr, 16 * pg, 0), 0);
	tmap_free(&m);
}

/*
 * A fork() child's batches act on the child: the pidfd the parent kept
 * (where the kernel has no PIDFD_SELF, or LIBGUARD_NO_PIDFD_SELF is set)
 * names the parent, and must not be used there.
 */
static void child_batches_itself(void **state)
{
	struct iovec iov[4];
	struct tmap m;
	size_t done;
	int status;
	pid_t pid;

	(void)state;
	tmap_new(T_ANON, 8, &m);
	for (int i = 0; i < 4; i++)
		iov[i] = (struct iovec){ m.addr + 2 * i * pg, pg };
	/* the parent batches first, so that whatever it keeps is open */
	assert_int_equal(guard_install_batch(iov, 4, 0, &done), 0);
	assert_int_equal(guard_remove_batch(iov, 4, 0, &done), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		unsigned char vec[8];

		if (guard_install_batch(iov, 4, 0, &done) || query_vec(m.addr, 8 * pg, vec))
			_exit(1);
		for (int i = 0; i < 8; i++)
			if ((vec[i] == 0) != (i % 2 == 1))
				_exit(2);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* nothing in the parent */
	assert_string_equal(query_str(m.addr, 8 * pg), "00000000");
	assert_int_equal(guard_install_batch(iov, 4, 0, &done), 0);
	assert_int_equal(guard_remove_batch(iov, 4, 0, &done), 0);
	tmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(many_single_pages),
		cmocka_unit_test(mixed_sizes),
		cmocka_unit_test(invalid_ranges),
		cmocka_unit_test(stops_at_failure),
		cmocka_unit_test(native_flag),
		cmocka_unit_test(fresh_multi_page),
		cmocka_unit_test(looked_multi_page),
		cmocka_unit_test(child_batches_itself),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
