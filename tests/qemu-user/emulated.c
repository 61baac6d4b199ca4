// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * emulated: what libguard reports, and what really happens, under a layer
 * that acknowledges MADV_GUARD_INSTALL without placing a guard (qemu-user;
 * tests/qemu-user/run). Built static, so that the emulator needs no
 * foreign root. Checks:
 *  - guard_probe() claims no native guards (the probe's own touch test);
 *  - guard_install2() with no flags uses the fallback;
 *  - GUARD_NATIVE is refused (-EOPNOTSUPP), not acknowledged;
 *  - a touch of the guarded page faults (in a child: SIGSEGV);
 *  - guard_remove() gives the page back.
 * With --real (the control, on a real kernel): whatever the method, the
 * touch faults and removal gives the page back.
 * Exit status: 0 pass, 1 failure.
 */
#include "guard.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int fails, checks;

static void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	fails += !ok;
	checks++;
}

/* Does a load from p kill a child with SIGSEGV? */
static int touch_faults(const volatile char *p)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		(void)*p;
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
	       WTERMSIG(status) == SIGSEGV;
}

int main(int argc, char **argv)
{
	int emulated = !(argc > 1 && !strcmp(argv[1], "--real"));
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned int caps = guard_probe(), method = 0;
	char *p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ret;

	if (p == MAP_FAILED)
		return 1;
	printf("guard_probe() = %#x\n", caps);
	if (emulated) {
		check(!(caps & GUARD_CAP_NATIVE_MASK), "the probe claims no native guards");
		ret = guard_install(p + page, page, GUARD_NATIVE);
		printf("guard_install(GUARD_NATIVE) = %d\n", ret);
		check(ret == -EOPNOTSUPP, "GUARD_NATIVE is refused with -EOPNOTSUPP");
	}
	ret = guard_install2(p + page, page, 0, &method);
	printf("guard_install2() = %d, method %s\n", ret,
	       method == GUARD_METHOD_NATIVE ? "native" : method == GUARD_METHOD_FALLBACK ? "fallback" : "none");
	check(ret == 0 && (method == GUARD_METHOD_FALLBACK || (!emulated && method == GUARD_METHOD_NATIVE)),
	      emulated ? "an install takes the fallback" : "an install succeeds");
	check(touch_faults(p + page), "a touch of the guarded page faults");
	check(!touch_faults(p) && !touch_faults(p + 2 * page), "its neighbours do not");
	ret = guard_remove(p + page, page, 0);
	check(ret == 0 && !touch_faults(p + page), "guard_remove() gives the page back");
	printf("%d passed, %d failed\n", checks - fails, fails);
	return fails ? 1 : 0;
}
