// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Run by test_audit under LD_AUDIT and without: dlopen()s the library in
 * argv[1], calls into it, and prints its VMA count and, page by page over
 * its extent, how many pages fault on a read (from a forked child), then
 * whether libguard-audit.so is mapped in this process and how many
 * PROT_NONE file mappings (the holes of every object) it has, and how
 * many of those are the module's own:
 * "vmas N faulting F pages P audit 0|1 holes H self S".
 * Built twice: as audit-probe, and as dt-audit-probe, linked with
 * -Wl,--audit= naming the module (test_dt_audit). "--exec PROG ARG..."
 * only execs PROG: a child of a DT_AUDIT program.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static sigjmp_buf env;

static void on_fault(int sig)
{
	siglongjmp(env, sig);
}

/* In the child: how many pages of [lo, hi) fault on a read. */
static int count_faulting(uintptr_t lo, uintptr_t hi, long pg)
{
	volatile int faulting = 0;
	volatile uintptr_t p;

	signal(SIGSEGV, on_fault);
	signal(SIGBUS, on_fault);
	for (p = lo; p < hi; p += pg) {
		if (sigsetjmp(env, 1))
			faulting++;
		else
			(void)*(volatile char *)p;
	}
	return faulting;
}

int main(int argc, char **argv)
{
	uintptr_t lo = 0, hi = 0;
	long pg = sysconf(_SC_PAGESIZE);
	int vmas = 0, audit = 0, holes = 0, self = 0, status;
	int (*fn)(int);
	char line[4096];
	void *h;
	FILE *f;
	pid_t pid;

	if (argc >= 3 && !strcmp(argv[1], "--exec")) {
		execv(argv[2], argv + 2);
		return 4;
	}
	if (argc != 2 || !(h = dlopen(argv[1], RTLD_NOW)) || !(fn = (int (*)(int))dlsym(h, "lib64k_fn")) ||
	    fn(1) != 42 + 'r')
		return 2;
	f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof(line), f)) {
		uintptr_t s, e;
		char *path = strchr(line, '/'), *end = path ? path + strcspn(path, "\n") : NULL;

		bool module = path && end - path >= 18 && !memcmp(end - 18, "/libguard-audit.so", 18);

		audit |= module;
		if (path && strstr(line, " ---p ")) {
			holes++;
			self += module;
		}
		if (!path || strncmp(path, argv[1], strlen(argv[1])) || path[strlen(argv[1])] != '\n' ||
		    sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &s, &e) != 2)
			continue;
		lo = lo ? lo : s;
		hi = e;
		vmas++;
	}
	if (f)
		fclose(f);
	pid = fork();
	if (pid == 0) {
		int n = count_faulting(lo, hi, pg);

		_exit(n > 250 ? 250 : n);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 3;
	printf("vmas %d faulting %d pages %lu audit %d holes %d self %d\n", vmas, WEXITSTATUS(status),
	       (unsigned long)((hi - lo) / pg), audit, holes, self);
	return 0;
}
