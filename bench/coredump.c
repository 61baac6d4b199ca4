// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bench-coredump: what a guard costs in a core dump.
 *
 * A process maps a 2 MiB file privately and read-only, as ld.so maps a
 * library's text, touches it, and dumps core (abort()) with the default
 * filter (0x33: anonymous memory, ELF headers, private hugetlb). Three runs:
 *
 *   plain      no guard;
 *   guard      one page guarded (MADV_GUARD_INSTALL);
 *   anon_vma   one page guarded, and the VMA given an anon_vma by a
 *              copy-on-write of another page: what the seed's series did
 *              on every install, since the filter dumps whole any private
 *              mapping with an anon_vma.
 *
 * Prints one line per run: "coredump RUN BYTES" (the core file's size on
 * disk, st_blocks * 512, since a core is sparse). Needs root to point
 * core_pattern at a directory of ours, so it runs in the guest (tests/vm/run)
 * and refuses to touch the host's core_pattern.
 *
 * Usage: bench-coredump DIR   (DIR: a page-cache filesystem, for the file
 *                              and the cores; the guest's $LIBGUARD_SCRATCH)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define MAP_LEN (2UL << 20)

static void die(const char *what)
{
	fprintf(stderr, "bench-coredump: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path);
	close(fd);
}

/* The child: map, touch, guard as @run says, dump core. */
static void child(const char *file, const char *run)
{
	long page = sysconf(_SC_PAGESIZE);
	struct rlimit unlimited = { RLIM_INFINITY, RLIM_INFINITY };
	volatile char sum = 0;
	char *p;
	int fd;

	fd = open(file, O_RDONLY);
	if (fd < 0)
		die(file);
	/* Writable only where a copy-on-write must give it an anon_vma. */
	p = mmap(NULL, MAP_LEN, PROT_READ | (strcmp(run, "anon_vma") ? 0 : PROT_WRITE),
		 MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	for (size_t i = 0; i < MAP_LEN; i += page)
		sum += p[i];
	if (strcmp(run, "plain") && madvise(p + 7 * page, page, MADV_GUARD_INSTALL))
		die("MADV_GUARD_INSTALL");
	if (!strcmp(run, "anon_vma"))
		p[3 * page] = 1;
	if (setrlimit(RLIMIT_CORE, &unlimited))
		die("setrlimit");
	signal(SIGABRT, SIG_DFL);
	abort();
}

int main(int argc, char **argv)
{
	static const char *const runs[] = { "plain", "guard", "anon_vma" };
	char file[PATH_MAX], pattern[PATH_MAX + 32], core[PATH_MAX];
	char old_pattern[PATH_MAX] = "";
	FILE *f;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: bench-coredump DIR\n");
		return 2;
	}
	if (!getenv("LIBGUARD_KERNEL")) {
		fprintf(stderr, "bench-coredump: sets the system's core_pattern: run it in the guest (tests/vm/run)\n");
		return 2;
	}

	snprintf(file, sizeof(file), "%s/coredump-text", argv[1]);
	fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(file);
	for (size_t i = 0; i < MAP_LEN; i += 4096) {
		char block[4096];

		memset(block, 'x', sizeof(block));
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
			die("write");
	}
	close(fd);

	f = fopen("/proc/sys/kernel/core_pattern", "r");
	if (f) {
		if (!fgets(old_pattern, sizeof(old_pattern), f))
			old_pattern[0] = '\0';
		fclose(f);
	}
	snprintf(pattern, sizeof(pattern), "%s/core.%%p", argv[1]);
	write_file("/proc/sys/kernel/core_pattern", pattern);
	write_file("/proc/self/coredump_filter", "0x33");

	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		struct stat st;
		int status;
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0)
			child(file, runs[r]);
		if (waitpid(pid, &status, 0) != pid)
			die("waitpid");
		if (!WIFSIGNALED(status) || !WCOREDUMP(status)) {
			fprintf(stderr, "bench-coredump: %s: the child did not dump core (status %#x)\n",
				runs[r], status);
			return 1;
		}
		snprintf(core, sizeof(core), "%s/core.%d", argv[1], (int)pid);
		if (stat(core, &st))
			die(core);
		printf("coredump %s %lld\n", runs[r], (long long)st.st_blocks * 512);
		unlink(core);
	}
	if (old_pattern[0])
		write_file("/proc/sys/kernel/core_pattern", old_pattern);
	unlink(file);
	return 0;
}
