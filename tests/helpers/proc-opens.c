// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * proc-opens PROGRAM [ARG...]: run PROGRAM under ptrace(2) and count the
 * open(), openat() and openat2() calls under /proc made by the image of
 * its last execve() (so "proc-opens env LD_AUDIT=x prog" counts prog's),
 * whatever link-map namespace makes them: an LD_AUDIT module's calls
 * included, which LD_PRELOAD can't reach. PROGRAM's output goes to
 * /dev/null; prints "proc-opens N" and the paths, one "# path" line each.
 * Exits 0 if PROGRAM did, 1 if not, 77 (with the reason) where ptrace or
 * PTRACE_GET_SYSCALL_INFO (Linux 5.3) is not available. Used by test_audit.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_PATHS 64

/* The NUL-terminated string at addr in the tracee, cut at len - 1. */
static void peek_string(pid_t pid, unsigned long addr, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		long word;

		errno = 0;
		word = ptrace(PTRACE_PEEKDATA, pid, (void *)(addr + n), NULL);
		if (errno)
			break;
		for (size_t i = 0; i < sizeof(word) && n + 1 < len; i++) {
			buf[n] = ((const char *)&word)[i];
			if (!buf[n])
				return;
			n++;
		}
	}
	buf[n] = '\0';
}

/* The path argument of an open call, or NULL for any other call. */
static const uint64_t *path_arg(const struct __ptrace_syscall_info *si)
{
#ifdef SYS_open
	if (si->entry.nr == SYS_open)
		return &si->entry.args[0];
#endif
#ifdef SYS_openat2
	if (si->entry.nr == SYS_openat2)
		return &si->entry.args[1];
#endif
	if (si->entry.nr == SYS_openat)
		return &si->entry.args[1];
	return NULL;
}

static void child(char **argv)
{
	int null;

	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL)) {
		printf("# proc-opens: ptrace(PTRACE_TRACEME): %s\n", strerror(errno));
		fflush(stdout);
		_exit(77);
	}
	raise(SIGSTOP);
	null = open("/dev/null", O_WRONLY);
	if (null < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		_exit(126);
	execvp(argv[0], argv);
	_exit(127);
}

int main(int argc, char **argv)
{
	static char paths[MAX_PATHS][256];
	int count = 0, status, sig = 0;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: proc-opens PROGRAM [ARG...]\n");
		return 2;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return perror("fork"), 1;
	if (!pid)
		child(argv + 1);
	if (waitpid(pid, &status, 0) != pid)
		return perror("waitpid"), 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (ptrace(PTRACE_SETOPTIONS, pid, NULL,
		   PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)) {
		printf("# proc-opens: PTRACE_SETOPTIONS: %s\n", strerror(errno));
		kill(pid, SIGKILL);
		return 77;
	}
	for (;;) {
		struct __ptrace_syscall_info si;
		const uint64_t *arg;
		char path[256];

		if (ptrace(PTRACE_SYSCALL, pid, NULL, (void *)(long)sig))
			return perror("PTRACE_SYSCALL"), 1;
		sig = 0;
		if (waitpid(pid, &status, 0) != pid)
			return perror("waitpid"), 1;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
			count = 0;	/* a new image: count its opens only */
			continue;
		}
		if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			sig = WSTOPSIG(status);	/* a signal for the tracee: pass it on */
			continue;
		}
		if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof(si), &si) <= 0) {
			printf("# proc-opens: PTRACE_GET_SYSCALL_INFO: %s\n", strerror(errno));
			kill(pid, SIGKILL);
			return 77;
		}
		if (si.op != PTRACE_SYSCALL_INFO_ENTRY || !(arg = path_arg(&si)))
			continue;
		peek_string(pid, (unsigned long)*arg, path, sizeof(path));
		if (!strncmp(path, "/proc/", 6) || !strcmp(path, "/proc")) {
			if (count < MAX_PATHS)
				snprintf(paths[count], sizeof(paths[count]), "%s", path);
			count++;
		}
	}
	printf("proc-opens %d\n", count);
	for (int i = 0; i < count && i < MAX_PATHS; i++)
		printf("# %s\n", paths[i]);
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 1;
}
