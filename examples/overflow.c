// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guard the page after a buffer, overflow it in a child process, and show
 * that the overflow was caught at the first byte past the buffer, and by
 * which method (native guard region or the mprotect fallback).
 *
 * Exit status 0 when everything behaved as it should, 1 otherwise.
 * Try it with LIBGUARD_FORCE_FALLBACK=1 too.
 */
#include <guard.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int report_fd;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	/* async-signal-safe: write the faulting address, then leave */
	if (write(report_fd, &si->si_addr, sizeof(si->si_addr)) < 0)
		_exit(3);
	_exit(2);
}

int main(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), size = 2 * page;
	unsigned char state;
	unsigned int caps = guard_probe();
	char *buf, *fault = NULL;
	int fds[2], status, ret;
	pid_t pid;

	printf("kernel guard capabilities: %#x (%s)\n", caps,
	       caps & GUARD_CAP_ANON ? "native guard regions" : "none: mprotect fallback");

	/* A buffer of two pages, followed by one guard page. */
	buf = mmap(NULL, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	ret = guard_install(buf + size, page, 0);
	if (ret) {
		fprintf(stderr, "guard_install: %s\n", strerror(-ret));
		return 1;
	}
	ret = guard_query(buf + size, page, &state);
	if (ret == -EOPNOTSUPP) {
		/* A kernel with native guards it can't report (upstream 6.13
		 * and 6.14): the overflow below is the proof. */
		printf("guard page at %p, method: not reported by this kernel\n",
		       (void *)(buf + size));
		state = GUARD_QUERY_NATIVE | GUARD_QUERY_FALLBACK;
	} else if (ret) {
		fprintf(stderr, "guard_query: %s\n", strerror(-ret));
		return 1;
	} else {
		printf("guard page at %p, method: %s\n", (void *)(buf + size),
		       state & GUARD_QUERY_NATIVE ? "native (MADV_GUARD_INSTALL)"
		       : state & GUARD_QUERY_FALLBACK ? "fallback (mprotect PROT_NONE)" : "none?");
	}
	if (!state)
		return 1;

	if (pipe(fds))
		return 1;
	pid = fork();
	if (pid == 0) {
		struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };

		close(fds[0]);
		report_fd = fds[1];
		sigaction(SIGSEGV, &sa, NULL);
		/* The classic bug: one byte too many. */
		memset(buf, 'x', size + 1);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &fault, sizeof(fault)) != sizeof(fault))
		fault = NULL;
	waitpid(pid, &status, 0);

	if (!WIFEXITED(status) || WEXITSTATUS(status) != 2) {
		printf("FAIL: the overflowing child was not stopped by SIGSEGV\n");
		return 1;
	}
	printf("child overflowed the buffer: SIGSEGV at %p, %s\n", (void *)fault,
	       fault == buf + size ? "the first byte past the buffer" : "an unexpected address");
	if (fault != buf + size)
		return 1;
	/* The buffer itself stayed usable: the last byte before the guard. */
	buf[size - 1] = 'y';

	ret = guard_remove(buf + size, page, 0);
	if (ret) {
		fprintf(stderr, "guard_remove: %s\n", strerror(-ret));
		return 1;
	}
	buf[size] = 'z';
	printf("guard removed, the page is writable again\nPASS\n");
	munmap(buf, size + page);
	return 0;
}
