// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Does the running kernel accept MADV_GUARD_INSTALL, and is that what this
 * environment says it should do? Talks to the kernel directly, without
 * libguard, so that it checks the kernel and the test environment, not the
 * library.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers/expect.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

/* Touch *p in a child; return the signal that killed it, or 0. */
static int touch_in_child(volatile char *p)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		/* cmocka catches SIGSEGV; the child must die of it. */
		signal(SIGSEGV, SIG_DFL);
		(void)*p;
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void anon_guard_matches_expectation(void **state)
{
	const char *why;
	unsigned int want = expect_caps(&why);
	long page = sysconf(_SC_PAGESIZE);
	struct utsname u;
	char *map;
	int ret, err;

	(void)state;
	assert_int_equal(uname(&u), 0);
	map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	memset(map, 0x5a, 3 * page);

	ret = madvise(map + page, page, MADV_GUARD_INSTALL);
	err = errno;
	printf("# kernel %s: MADV_GUARD_INSTALL on private anon %s (%s); expected %s (%s)\n",
	       u.release, ret == 0 ? "accepted" : "refused", ret == 0 ? "0" : strerror(err),
	       (want & EXPECT_ANON) ? "accepted" : "EINVAL", why);

	if (want & EXPECT_ANON) {
		assert_int_equal(ret, 0);
		/* Accepted is not enough: the page must fault, its neighbours not. */
		assert_int_equal(touch_in_child(map + page), SIGSEGV);
		assert_int_equal(touch_in_child(map + page - 1), 0);
		assert_int_equal(touch_in_child(map + 2 * page), 0);
		assert_int_equal(madvise(map + page, page, MADV_GUARD_REMOVE), 0);
		assert_int_equal(touch_in_child(map + page), 0);
		/* Installing discarded the anonymous data: zeros after removal. */
		assert_int_equal(map[page], 0);
		assert_int_equal(map[0], 0x5a);
	} else {
		assert_int_equal(ret, -1);
		assert_int_equal(err, EINVAL);
		assert_int_equal(map[page], 0x5a);
	}
	assert_int_equal(munmap(map, 3 * page), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(anon_guard_matches_expectation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
