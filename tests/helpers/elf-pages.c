// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * elf-pages LIB: dlopen()s LIB, then prints one line per page of every
 * file mapped in the process (every loaded ELF object): its path, the
 * page's index from the object's first mapping (stable across runs,
 * unlike addresses), its protection, and whether a read faults (found in
 * a forked child, so that native guards show): "PATH INDEX rwx F". Run
 * by test_security with and without LD_AUDIT to compare what each page
 * allows.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct page {
	uintptr_t addr;
	char perms[5];
	char path[256];
	size_t index;
};

static sigjmp_buf env;

static void on_fault(int sig)
{
	siglongjmp(env, sig);
}

/* Reads any page of any object, past the end of its globals: not ASan's business. */
__attribute__((no_sanitize_address)) static char read_faults(uintptr_t addr)
{
	if (sigsetjmp(env, 1))
		return 1;
	(void)*(volatile char *)addr;
	return 0;
}

/* In the child: one byte per page, 1 if a read of it faults. */
static __attribute__((noreturn)) void report_faults(const struct page *v, size_t n, int fd)
{
	signal(SIGSEGV, on_fault);
	signal(SIGBUS, on_fault);
	for (size_t i = 0; i < n; i++) {
		char fault = read_faults(v[i].addr);

		if (write(fd, &fault, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = 0, cap = 1 << 14;
	struct page *v = malloc(cap * sizeof(*v));
	char line[4096], last[256] = "";
	uintptr_t base = 0;
	int fds[2], status;
	FILE *f;
	pid_t pid;

	if (argc != 2 || !v || !dlopen(argv[1], RTLD_NOW))
		return 2;
	f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof(line), f)) {
		uintptr_t s, e;
		char perms[5], *path = strchr(line, '/');

		if (!path || sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &s, &e, perms) != 3)
			continue;
		path[strcspn(path, "\n")] = '\0';
		if (strcmp(path, last)) {
			snprintf(last, sizeof(last), "%s", path);
			base = s;
		}
		for (uintptr_t a = s; a < e && n < cap; a += pg, n++) {
			v[n] = (struct page){ .addr = a, .index = (a - base) / pg };
			memcpy(v[n].perms, perms, 5);
			snprintf(v[n].path, sizeof(v[n].path), "%s", path);
		}
	}
	if (f)
		fclose(f);
	if (pipe(fds))
		return 3;
	pid = fork();
	if (pid == 0)
		report_faults(v, n, fds[1]);
	close(fds[1]);
	for (size_t i = 0; i < n; i++) {
		char fault;

		if (read(fds[0], &fault, 1) != 1)
			return 4;
		printf("%s %zu %.3s %d\n", v[i].path, v[i].index, v[i].perms, fault);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 5;
	free(v);
	return 0;
}
