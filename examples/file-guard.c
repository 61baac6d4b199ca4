// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * file-guard: put a guard region on one page in the middle of a shared file
 * mapping, show that touching it faults while its neighbours and the file's
 * data are untouched, and remove it again.
 *
 * Usage: file-guard [DIR]
 *
 * The file is created in DIR, else $LIBGUARD_SCRATCH, $TMPDIR or /tmp.
 * Exits 0 when everything behaved as a guard region must.
 *
 * Build: cc file-guard.c $(pkg-config --cflags --libs libguard)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <guard.h>

#define PAGES 4

static long page;

/* Read and write back *p in a child: the signal that killed it, or 0. */
static int touch_in_child(char *p)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		volatile char *q = p;

		*q = *q;
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		return WTERMSIG(status);
	return WEXITSTATUS(status) == 0 ? 0 : -1;
}

static bool is_shmem(int fd)
{
	struct statfs st;

	return !fstatfs(fd, &st) && st.f_type == 0x01021994;
}

static const char *fs_name(int fd)
{
	struct statfs st;

	if (fstatfs(fd, &st))
		return "unknown";
	switch (st.f_type) {
	case 0xEF53: return "ext4";
	case 0x01021994: return "tmpfs (shmem)";
	case 0x58465342: return "xfs";
	case 0x9123683E: return "btrfs";
	case 0x01021997: return "9p";
	case 0x794c7630: return "overlayfs";
	default: return "another file system";
	}
}

static int count_vmas(const char *start, const char *end)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char line[512];
	int n = 0;

	if (!maps)
		return -1;
	while (fgets(line, sizeof(line), maps))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < (unsigned long)end &&
		    hi > (unsigned long)start)
			n++;
	fclose(maps);
	return n;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("LIBGUARD_SCRATCH");
	char path[PATH_MAX], buf[32];
	unsigned char vec[PAGES];
	unsigned int caps, cap;
	const char *force;
	bool forced;
	int fd, ret, failures = 0;
	char *map;

	page = sysconf(_SC_PAGESIZE);
	if (!dir)
		dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(path, sizeof(path), "%s/libguard-demo.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "file-guard: cannot create a file in %s: %s\n", dir, strerror(errno));
		return 1;
	}
	unlink(path);
	for (int i = 0; i < PAGES; i++) {
		char text[64];

		memset(text, 0, sizeof(text));
		snprintf(text, sizeof(text), "file page %d", i);
		if (pwrite(fd, text, sizeof(text), (off_t)i * page) != (ssize_t)sizeof(text) ||
		    ftruncate(fd, PAGES * page)) {
			perror("file-guard: writing the file");
			return 1;
		}
	}
	map = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("file-guard: mmap");
		return 1;
	}

	caps = guard_probe();
	force = getenv("LIBGUARD_FORCE_FALLBACK");
	forced = force && *force && strcmp(force, "0") != 0;
	/* a file on tmpfs is shmem to the kernel: that capability decides */
	cap = is_shmem(fd) ? GUARD_CAP_SHMEM : GUARD_CAP_FILE;
	printf("file-guard: a %d-page MAP_SHARED mapping of a file on %s\n", PAGES, fs_name(fd));
	printf("file-guard: kernel guard regions in %s mappings: %s%s\n",
	       cap == GUARD_CAP_SHMEM ? "shmem" : "file",
	       (caps & cap) ? "yes" : "no (libguard will use mprotect)",
	       forced ? "; LIBGUARD_FORCE_FALLBACK is set (libguard will use mprotect)" : "");

	ret = guard_install(map + page, page, 0);
	if (ret) {
		fprintf(stderr, "file-guard: guard_install: %s\n", strerror(-ret));
		return 1;
	}
	ret = guard_query(map, PAGES * page, vec);
	printf("file-guard: guard installed on page 1 by the %s method; the mapping now has %d VMA(s)\n",
	       ret ? "unknown" : (vec[1] & GUARD_QUERY_NATIVE) ? "native (PTE marker)" :
	       (vec[1] & GUARD_QUERY_FALLBACK) ? "fallback (mprotect PROT_NONE)" : "NO",
	       count_vmas(map, map + PAGES * page));
	if (ret == -EOPNOTSUPP) {
		/* documented: this kernel has native guards it can't report;
		 * the children below check the guard by touching it */
		printf("file-guard: guard_query: the kernel can't report native guards\n");
	} else if (ret || !vec[1] || vec[0] || vec[2]) {
		fprintf(stderr, "file-guard: guard_query disagrees (%d: %d %d %d)\n", ret, vec[0], vec[1], vec[2]);
		failures++;
	} else if (!!(vec[1] & GUARD_QUERY_NATIVE) != (!forced && (caps & cap))) {
		/* the two lines above must tell the same story */
		fprintf(stderr, "file-guard: the probe's answer and the method used disagree\n");
		failures++;
	}

	for (int i = 0; i < PAGES; i++) {
		int sig = touch_in_child(map + i * page);
		int want = i == 1 ? SIGSEGV : 0;

		printf("file-guard: touching page %d in a child: %s\n", i,
		       sig == SIGSEGV ? "SIGSEGV (guarded)" : sig == 0 ? "ok" : "unexpected result");
		if (sig != want)
			failures++;
	}

	/* The file's data under the guard is kept. */
	if (pread(fd, buf, sizeof(buf), page) != (ssize_t)sizeof(buf) || strcmp(buf, "file page 1")) {
		fprintf(stderr, "file-guard: the file's page 1 changed under the guard\n");
		failures++;
	}
	ret = guard_remove(map + page, page, 0);
	if (ret) {
		fprintf(stderr, "file-guard: guard_remove: %s\n", strerror(-ret));
		return 1;
	}
	printf("file-guard: guard removed; page 1 reads \"%s\"; %d VMA(s)\n", map + page,
	       count_vmas(map, map + PAGES * page));
	if (strcmp(map + page, "file page 1"))
		failures++;

	munmap(map, PAGES * page);
	close(fd);
	printf("file-guard: %s\n", failures ? "FAILED" : "all as expected");
	return failures ? 1 : 0;
}
