// SPDX-License-Identifier: GPL-2.0
/*
 * repro-uffd-wp-livelock: MADV_GUARD_INSTALL over a shmem page that
 * userfaultfd write-protects never returns.
 *
 * The install walk treats any PTE that is neither none nor a guard marker as
 * "populated": it stops, zaps the range and walks again. On a shmem (or any
 * file) VMA registered for uffd-wp, zapping a write-protected page leaves a
 * uffd-wp PTE marker in its place (zap_install_uffd_wp_if_needed()), and
 * zapping that marker keeps it (only ZAP_FLAG_DROP_MARKER zaps drop it). So
 * every walk finds the marker, every zap keeps it; after
 * MAX_MADVISE_GUARD_RETRIES rounds madvise() returns -ERESTARTNOINTR through
 * restart_syscall(), and the task enters the same loop again, forever, at
 * 100% CPU. Only SIGKILL ends it.
 *
 * A child process maps a memfd page, registers it with userfaultfd in
 * write-protect mode (synchronous by default, --async for
 * UFFD_FEATURE_WP_ASYNC), write-protects it and calls MADV_GUARD_INSTALL on
 * it. The parent waits --seconds for the call to return, then kills the
 * child and reports the CPU time it burnt. --anon does the same on private
 * anonymous memory, for contrast: there the zap drops the protection with
 * the page and the install returns 0 at once.
 *
 *   cc -O2 -pthread repro-uffd-wp-livelock.c -o repro-uffd-wp-livelock
 *   ./repro-uffd-wp-livelock [--seconds N] [--async] [--anon]	(default 10)
 *
 * Needs userfaultfd for the caller: root, CAP_SYS_PTRACE, or
 * vm.unprivileged_userfaultfd=1 (read here, never written); it asks for
 * UFFD_USER_MODE_ONLY. Exit: 0 not reproduced (the call returned), 1
 * reproduced (it did not return in time), 77 the kernel lacks something
 * needed (printed), 2 usage or setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif

/* What the child tells the parent. */
struct msg {
	int stage;	/* 0 setup failed (77), 1 about to call madvise, 2 it returned */
	int err;	/* errno of the failing step, or of madvise (0: success) */
	char what[96];
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void send_msg(int wfd, int stage, int err, const char *what)
{
	struct msg m = { .stage = stage, .err = err };

	snprintf(m.what, sizeof(m.what), "%s", what);
	if (write(wfd, &m, sizeof(m)) != sizeof(m))
		_exit(2);
}

static void child(int wfd, bool async, bool anon)
{
	long psz = sysconf(_SC_PAGESIZE);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	struct uffdio_writeprotect wp = { 0 };
	int fd = anon ? -1 : memfd_create("repro-uffd-wp", 0), uffd, r;
	char *p;

	if (!anon && (fd < 0 || ftruncate(fd, 4 * psz))) {
		send_msg(wfd, 0, errno, "memfd");
		_exit(2);
	}
	if (anon)
		p = mmap(NULL, 4 * psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	else
		p = mmap(NULL, 4 * psz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		send_msg(wfd, 0, errno, "mmap");
		_exit(2);
	}
	memset(p, 1, 4 * psz);

	/* Guards in this kind of memory at all? */
	if (madvise(p + 3 * psz, psz, MADV_GUARD_INSTALL)) {
		send_msg(wfd, 0, errno, anon ? "MADV_GUARD_INSTALL (6.13 or later)" :
			 "MADV_GUARD_INSTALL on shmem (6.15 or later)");
		_exit(77);
	}
	madvise(p + 3 * psz, psz, MADV_GUARD_REMOVE);

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (uffd < 0) {
		send_msg(wfd, 0, errno, "userfaultfd (root, CAP_SYS_PTRACE or "
			 "vm.unprivileged_userfaultfd=1)");
		_exit(77);
	}
	api.features = (anon ? 0 : UFFD_FEATURE_WP_HUGETLBFS_SHMEM) |
		       (async ? UFFD_FEATURE_WP_ASYNC : 0);
	if (ioctl(uffd, UFFDIO_API, &api)) {
		send_msg(wfd, 0, errno, async ? "UFFDIO_API with WP_HUGETLBFS_SHMEM|WP_ASYNC" :
			 "UFFDIO_API with UFFD_FEATURE_WP_HUGETLBFS_SHMEM");
		_exit(77);
	}
	reg.range.start = (uintptr_t)p;
	reg.range.len = 4 * psz;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		send_msg(wfd, 0, errno, "UFFDIO_REGISTER_MODE_WP");
		_exit(77);
	}
	wp.range.start = (uintptr_t)p;
	wp.range.len = 4 * psz;
	wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
	if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp)) {
		send_msg(wfd, 0, errno, "UFFDIO_WRITEPROTECT");
		_exit(77);
	}

	send_msg(wfd, 1, 0, "");
	r = madvise(p + psz, psz, MADV_GUARD_INSTALL);
	send_msg(wfd, 2, r ? errno : 0, "");
	_exit(0);
}

int main(int argc, char **argv)
{
	double secs = 10, t0;
	bool async = false, anon = false;
	struct rusage ru;
	struct utsname u;
	struct msg m;
	int pfd[2], status;
	pid_t pid;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			secs = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--async")) {
			async = true;
		} else if (!strcmp(argv[i], "--anon")) {
			anon = true;
		} else {
			fprintf(stderr, "usage: %s [--seconds N] [--async] [--anon]\n", argv[0]);
			return 2;
		}
	}
	if (secs <= 0)
		secs = 1;
	uname(&u);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("repro-uffd-wp-livelock: kernel %s, %s page, uffd-wp %s mode, waiting up to "
	       "%.0f s\n", u.release, anon ? "anonymous" : "shmem",
	       async ? "asynchronous" : "synchronous", secs);
	if (pipe(pfd))
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	if (!pid) {
		close(pfd[0]);
		child(pfd[1], async, anon);
	}
	close(pfd[1]);

	if (read(pfd[0], &m, sizeof(m)) != sizeof(m)) {
		printf("child died during setup\n");
		return 2;
	}
	if (m.stage == 0) {
		waitpid(pid, &status, 0);
		printf("%s: %s: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 77 ? "SKIP" :
		       "setup failed", m.what, strerror(m.err));
		return WIFEXITED(status) && WEXITSTATUS(status) == 77 ? 77 : 2;
	}

	t0 = now();
	{
		struct pollfd pf = { .fd = pfd[0], .events = POLLIN };
		int r = poll(&pf, 1, (int)(secs * 1000));

		if (r > 0 && read(pfd[0], &m, sizeof(m)) == sizeof(m)) {
			waitpid(pid, &status, 0);
			if (m.err == 0)
				printf("not reproduced: MADV_GUARD_INSTALL returned 0 after %.3f s "
				       "(a guard replaced the write-protected page)\n", now() - t0);
			else
				printf("not reproduced: MADV_GUARD_INSTALL failed with %s after "
				       "%.3f s (%s)\n", strerror(m.err), now() - t0,
				       m.err == EBUSY ? "refused, the protection kept" :
				       "an error, not a hang");
			return 0;
		}
	}
	t0 = now() - t0;
	kill(pid, SIGKILL);
	if (wait4(pid, &status, 0, &ru) < 0)
		return 2;
	printf("REPRODUCED: MADV_GUARD_INSTALL on a write-protected %s page had not "
	       "returned after %.1f s; the child used %.1f s of CPU (%.1f user, %.1f system) "
	       "until SIGKILL\n", anon ? "anonymous" : "shmem", t0,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	return 1;
}
