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
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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

/* Does the VmFlags line of @addr's VMA in /proc/self/smaps list @flag? */
static bool smaps_vmflag(const void *addr, const char *flag)
{
	unsigned long a = (unsigned long)addr, s, e;
	char line[1024], perms[5];
	bool in = false, has = false;
	FILE *f = fopen("/proc/self/smaps", "re");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %4s ", &s, &e, perms) == 3) {
			in = a >= s && a < e;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			line[strcspn(line, "\n")] = '\0';
			for (char *save, *t = strtok_r(line + 8, " ", &save); t;
			     t = strtok_r(NULL, " ", &save))
				has |= !strcmp(t, flag);
			break;
		}
	}
	fclose(f);
	return has;
}

/*
 * VM_MAYBE_GUARD: a kernel that has it shows "gu" in the VMA's VmFlags once
 * a guard was installed there, and keeps it after the guard is removed.
 * Where it is not expected, only report what the kernel does.
 */
static void maybe_guard_flag_matches_expectation(void **state)
{
	const char *why;
	unsigned int want = expect_caps(&why);
	long page = sysconf(_SC_PAGESIZE);
	bool before, installed, removed;
	char *map;

	(void)state;
	if (!(want & EXPECT_ANON))
		skip();
	/*
	 * PROT_NONE pages around it so that it merges with no neighbour:
	 * the flag never keeps VMAs apart, so a new mapping next to a
	 * guarded one would start with it.
	 */
	map = mmap(NULL, 4 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + page, 2 * page, PROT_READ | PROT_WRITE), 0);
	map += page;
	before = smaps_vmflag(map, "gu");
	assert_int_equal(madvise(map, page, MADV_GUARD_INSTALL), 0);
	installed = smaps_vmflag(map + page, "gu");
	assert_int_equal(madvise(map, page, MADV_GUARD_REMOVE), 0);
	removed = smaps_vmflag(map, "gu");
	printf("# smaps \"gu\": before %d, after install %d, after remove %d; expected %s (%s)\n",
	       before, installed, removed, (want & EXPECT_MAYBE_GUARD) ? "0 1 1" : "any", why);
	assert_false(before);
	if (want & EXPECT_MAYBE_GUARD) {
		assert_true(installed);
		assert_true(removed);
	}
	assert_int_equal(munmap(map - page, 4 * page), 0);
}

/*
 * pidfd_send_signal() with PIDFD_SELF_THREAD_GROUP (-10001) and signal 0
 * checks that the caller exists, without a pidfd; EBADF where the kernel
 * does not know the sentinel.
 */
static void pidfd_self_signal_matches_expectation(void **state)
{
	const char *why;
	unsigned int want = expect_caps(&why);
	long ret;
	int err;

	(void)state;
	ret = syscall(SYS_pidfd_send_signal, -10001, 0, NULL, 0);
	err = errno;
	printf("# pidfd_send_signal(PIDFD_SELF_THREAD_GROUP, 0): %s; expected %s (%s)\n",
	       ret == 0 ? "0" : strerror(err), (want & EXPECT_PIDFD_SELF) ? "0" : "EBADF", why);
	if (want & EXPECT_PIDFD_SELF) {
		assert_int_equal(ret, 0);
		/* A real signal reaches the caller too. */
		signal(SIGUSR1, SIG_IGN);
		assert_int_equal(syscall(SYS_pidfd_send_signal, -10000, SIGUSR1, NULL, 0), 0);
		signal(SIGUSR1, SIG_DFL);
	} else {
		assert_int_equal(ret, -1);
		assert_int_equal(err, EBADF);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(anon_guard_matches_expectation),
		cmocka_unit_test(maybe_guard_flag_matches_expectation),
		cmocka_unit_test(pidfd_self_signal_matches_expectation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
