// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_probe(): its answer is what this environment says the kernel can
 * do (helpers/expect.c), it is the same from every thread, it ignores
 * LIBGUARD_FORCE_FALLBACK, and it leaves errno alone.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
	const char *why;
	unsigned int want = want_caps(&why), got = guard_probe(), mask = ~0u;

	(void)state;
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

static const char *self_path;

/*
 * In a child: a mount namespace of its own with every temp dir a
 * read-only tmpfs and no LIBGUARD_PROBE_DIR or TMPDIR, then this program
 * again (a process that has not probed yet), printing guard_probe().
 */
/*
 * Mount a read-only tmpfs on @dir. If @keep (the build directory) is under
 * it, bind it back to the same path first, so that this program still finds
 * itself and libguard.so.0 (a CI clone under /tmp); @keep_fd is the original.
 */
static int hide_dir(const char *dir, const char *keep, int keep_fd)
{
	size_t n = strlen(dir);
	char path[PATH_MAX], src[64];

	if (mount("tmpfs", dir, "tmpfs", 0, "mode=0755"))
		return -1;
	if (!strncmp(keep, dir, n) && keep[n] == '/') {
		snprintf(path, sizeof(path), "%s", keep);
		for (char *slash = path + n + 1; (slash = strchr(slash, '/')); slash++) {
			*slash = '\0';
			if (mkdir(path, 0755) && errno != EEXIST)
				return -1;
			*slash = '/';
		}
		snprintf(src, sizeof(src), "/proc/self/fd/%d", keep_fd);
		if ((mkdir(path, 0755) && errno != EEXIST) ||
		    mount(src, path, NULL, MS_BIND, NULL))
			return -1;
	}
	return mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL);
}

static void probe_without_tmp(int out)
{
	static const char *const dirs[] = { "/tmp", "/var/tmp" };
	char libdir[PATH_MAX], exe[PATH_MAX];
	Dl_info lib;
	int keep;

	unsetenv("LIBGUARD_PROBE_DIR");
	unsetenv("TMPDIR");
	/*
	 * This program and libguard, as they are now: the build directory
	 * (the parent of libguard's, which holds the tests too) stays where it
	 * is, so that the program and its $ORIGIN run path still work.
	 */
	if (!realpath("/proc/self/exe", exe) || !dladdr((void *)guard_probe, &lib) ||
	    !lib.dli_fname || !realpath(lib.dli_fname, libdir)) {
		dprintf(out, "skip: cannot find this program or libguard: %s\n", strerror(errno));
		_exit(0);
	}
	*strrchr(libdir, '/') = '\0';
	if (strrchr(libdir, '/') != libdir)
		*strrchr(libdir, '/') = '\0';
	/* Opened in the new namespace: a bind mount's source must be in it. */
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    (keep = open(libdir, O_PATH | O_DIRECTORY)) < 0) {
		dprintf(out, "skip: no mount namespace: %s\n", strerror(errno));
		_exit(0);
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!access(dirs[i], F_OK) && hide_dir(dirs[i], libdir, keep)) {
			dprintf(out, "skip: mount tmpfs on %s: %s\n", dirs[i], strerror(errno));
			_exit(0);
		}
	dup2(out, 1);
	execl(exe, self_path, "--probe-child", (char *)NULL);
	dprintf(out, "skip: exec %s: %s\n", exe, strerror(errno));
	_exit(0);
}

/*
 * GUARD_CAP_FILE and GUARD_CAP_READONLY are the kernel's, not the temp
 * dirs': the same answer with every temp dir a read-only tmpfs (as in the
 * guest, Debian 13's /tmp, a container), where no file can be created.
 */
static void file_caps_without_tmp(void **state)
{
	const unsigned int bits = GUARD_CAP_FILE | GUARD_CAP_READONLY;
	const char *why;
	unsigned int want = want_caps(&why) & bits, got = guard_probe() & bits, child;
	char buf[256] = "";
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		probe_without_tmp(fds[1]);
	}
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(n > 0);
	buf[n] = 0;
	if (!strncmp(buf, "skip: ", 6)) {
		printf("# %s", buf + 6);
		skip();
	}
	assert_int_equal(sscanf(buf, "%u", &child), 1);
	child &= bits;
	printf("# file/readonly caps: %#x with no writable temp dir, %#x here, expected %#x (%s)\n",
	       child, got, want, why);
	assert_int_equal(child, want);
	assert_int_equal(child, got);
}

static void errno_untouched(void **state)
{
	(void)state;
	errno = 777;
	guard_probe();
	assert_int_equal(errno, 777);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(concurrent_first_call),
		cmocka_unit_test(matches_environment),
		cmocka_unit_test(claims_hold),
		cmocka_unit_test(errno_untouched),
		cmocka_unit_test(file_caps_without_tmp),
	};

	if (argc > 1 && !strcmp(argv[1], "--probe-child")) {
		printf("%u\n", guard_probe());
		return 0;
	}
	self_path = argv[0];

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
