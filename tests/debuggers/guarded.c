// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guarded: a process holding guards for a debugger or CRIU to look at
 * (tests/debuggers/gdb-test, core-test, criu-test).
 *
 * Usage: guarded DIR [wait|abort|hold]
 *
 * Maps three regions of three pages, private anonymous, shmem (a memfd,
 * MAP_SHARED) and a file in DIR (MAP_SHARED), fills page i of region r
 * with the byte 'A' + 3r + i, and guards the middle page of each with
 * guard_install2(). Prints one line per region,
 *     region NAME START GUARD METHOD
 * (hex addresses; METHOD native or fallback), then "ready", then:
 *   wait   reads lines from stdin up to one that is not a "poke" (a
 *          debugger attaches meanwhile); then checks the regions (see
 *          check_region() and check_data()): prints "check ..." lines, a
 *          "FAIL ..." line for each check that fails, and exits 0 only if
 *          none did
 *   abort  sets coredump_filter to dump every mapping, changes to DIR (for
 *          a core_pattern of "core") and aborts
 *   hold   waits for signals (CRIU checkpoints and restores it meanwhile,
 *          so it keeps no pipe to anyone and writes nothing to stdout
 *          after "ready"): on SIGUSR1 it writes each guard page's state
 *          (what a touch does, bit 58 of its pagemap entry, guard_query(),
 *          whether the pages beside it kept their data) to DIR/state,
 *          through a rename, so a reader sees all or none; SIGTERM ends it
 * A line "poke NAME PAGE BYTE" on stdin, before the checks, says that the
 * debugger wrote BYTE at the first byte of page PAGE of region NAME: page
 * 0, the control that writes through the debugger work at all; page 1, a
 * write to the guard that the debugger saw succeed (ptrace's forced write
 * into a private fallback guard), expected to show once it is removed.
 */
#include <guard.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { NREG = 3, PAGES = 3 };

struct region {
	const char *name;
	unsigned char *p;
	bool shared;		/* data under a guard is kept */
	unsigned int method;
	int poke[PAGES];	/* the debugger's write to a page's first byte, or -1 */
};

static size_t pg;
static sigjmp_buf jb;
static volatile sig_atomic_t fault_code;
static void *volatile fault_addr;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	fault_code = si->si_code;
	fault_addr = si->si_addr;
	siglongjmp(jb, 1);
}

static unsigned char fill(int r, int i)
{
	return (unsigned char)('A' + 3 * r + i);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "guarded: %s: %s\n", what, strerror(err));
	exit(2);
}

static void map_regions(struct region *reg, const char *dir, bool keep_file)
{
	char path[4096];
	int fd;

	reg[0] = (struct region){ "anon", NULL, false, 0, { -1, -1, -1 } };
	reg[0].p = mmap(NULL, PAGES * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (reg[0].p == MAP_FAILED)
		die("mmap anon", errno);

	reg[1] = (struct region){ "shmem", NULL, true, 0, { -1, -1, -1 } };
	fd = memfd_create("guarded", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, PAGES * pg) < 0)
		die("memfd", errno);
	reg[1].p = mmap(NULL, PAGES * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (reg[1].p == MAP_FAILED)
		die("mmap shmem", errno);
	close(fd);

	reg[2] = (struct region){ "file", NULL, true, 0, { -1, -1, -1 } };
	snprintf(path, sizeof(path), "%s/guarded.%d", dir, (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, PAGES * pg) < 0)
		die(path, errno);
	reg[2].p = mmap(NULL, PAGES * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (reg[2].p == MAP_FAILED)
		die("mmap file", errno);
	close(fd);
	/* The mapping keeps the file; the name is only in the way (but a
	 * checkpoint would carry the file itself as a "ghost"). */
	if (!keep_file)
		unlink(path);

	for (int r = 0; r < NREG; r++) {
		for (int i = 0; i < PAGES; i++)
			memset(reg[r].p + i * pg, fill(r, i), pg);
		int ret = guard_install2(reg[r].p + pg, pg, 0, &reg[r].method);
		if (ret)
			die("guard_install2", -ret);
	}
}

/* Touch p: 0 if it did not fault, else the si_code (si_addr must be p). */
static int touch(unsigned char *p, bool write)
{
	fault_code = 0;
	fault_addr = NULL;
	if (sigsetjmp(jb, 1) == 0) {
		if (write)
			*(volatile unsigned char *)p = 0x5a;
		else
			(void)*(volatile unsigned char *)p;
		return 0;
	}
	return fault_addr == p ? fault_code : -1;
}

static const char *code_name(int code)
{
	switch (code) {
	case 0: return "none";
	case SEGV_MAPERR: return "SEGV_MAPERR";
	case SEGV_ACCERR: return "SEGV_ACCERR";
	case -1: return "wrong-si_addr";
	default: return "other";
	}
}

/* Bit 58 of the guard page's pagemap entry, or -errno. */
static int pagemap_guard(const void *p)
{
	uint64_t e;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : pread(fd, &e, sizeof(e), (uintptr_t)p / pg * sizeof(e));
	int err = errno;

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)sizeof(e) ? (int)(e >> 58 & 1) : -err;
}

/*
 * After the debugger: the guard still faults, read and write, with the
 * si_code libguard(7) documents for its method.
 */
static bool check_region(struct region *g)
{
	int want = g->method == GUARD_METHOD_NATIVE ? SEGV_MAPERR : SEGV_ACCERR;
	int rd = touch(g->p + pg, false), wr = touch(g->p + pg + 100, true);
	bool ok = true;

	printf("check %s %s fault read %s write %s\n", g->name,
	       g->method == GUARD_METHOD_NATIVE ? "native" : "fallback", code_name(rd),
	       code_name(wr));
	if (rd != want || wr != want) {
		printf("FAIL %s: a touch of the guard gave %s/%s, libguard(7) says %s\n", g->name,
		       code_name(rd), code_name(wr), code_name(want));
		ok = false;
	}
	return ok;
}

/* What page i of region r holds, byte b, after the checks removed the guard. */
static unsigned char expected(const struct region *g, int r, int i, size_t b)
{
	if (b == 0 && g->poke[i] >= 0)
		return (unsigned char)g->poke[i];
	/* Both methods discard private memory under a guard; shared is kept. */
	return i == 1 && !g->shared ? 0 : fill(r, i);
}

/*
 * After the debugger: the other pages hold their data (plus the control
 * write); with the guard removed, the page holds what it held before the
 * debugger came (zero for private memory, which both methods discard; the
 * data for shared memory) plus only the writes the debugger reported as
 * done.
 */
static bool check_data(struct region *g, int r)
{
	size_t bad[PAGES] = { 0 };
	int ret;

	for (int i = 0; i < PAGES; i += 2)
		for (size_t b = 0; b < pg; b++)
			bad[i] += g->p[i * pg + b] != expected(g, r, i, b);
	ret = guard_remove(g->p + pg, pg, 0);
	if (ret) {
		printf("FAIL %s: guard_remove: %s\n", g->name, strerror(-ret));
		return false;
	}
	for (size_t b = 0; b < pg; b++)
		bad[1] += g->p[pg + b] != expected(g, r, 1, b);
	printf("check %s after-remove %s%s %s\n", g->name, g->shared ? "data" : "zero",
	       g->poke[1] >= 0 ? "+debugger's-write" : "", bad[1] ? "differs" : "as-expected");
	for (int i = 0; i < PAGES; i++)
		if (bad[i])
			printf("FAIL %s: %zu bytes of page %d differ from what they should hold\n",
			       g->name, bad[i], i);
	return !bad[0] && !bad[1] && !bad[2];
}

static volatile sig_atomic_t asked;

static void on_usr1(int sig)
{
	(void)sig;
	asked = 1;
}

static void state(struct region *reg, const char *dir)
{
	char tmp[4096], path[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/state.tmp", dir);
	snprintf(path, sizeof(path), "%s/state", dir);
	f = fopen(tmp, "we");
	if (!f)
		die(tmp, errno);
	for (int r = 0; r < NREG; r++) {
		int rd = touch(reg[r].p + pg, false);
		int bit = pagemap_guard(reg[r].p + pg);
		unsigned char q = 0;
		int qr = guard_query(reg[r].p + pg, pg, &q);

		size_t bad = 0;

		for (int i = 0; i < PAGES; i += 2)
			for (size_t b = 0; b < pg; b++)
				bad += reg[r].p[i * pg + b] != fill(r, i);
		fprintf(f, "state %s touch %s pagemap58 %d query %s data %s\n", reg[r].name,
			code_name(rd), bit, qr < 0 ? "error" : q & GUARD_QUERY_NATIVE ? "native" :
			q & GUARD_QUERY_FALLBACK ? "fallback" : "none", bad ? "changed" : "kept");
	}
	if (fclose(f) || rename(tmp, path))
		die(path, errno);
}

/* Answer SIGUSR1 with state() until SIGTERM. */
static void hold(struct region *reg, const char *dir)
{
	sigset_t usr1, old;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	signal(SIGUSR1, on_usr1);
	for (;;) {
		while (!asked)
			sigsuspend(&old);
		asked = 0;
		state(reg, dir);
	}
}

int main(int argc, char **argv)
{
	struct region reg[NREG];
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER };
	const char *mode = argc > 2 ? argv[2] : "wait";
	char line[256];

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: guarded DIR [wait|abort|hold]\n");
		return 2;
	}
	pg = (size_t)sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	map_regions(reg, argv[1], strcmp(mode, "hold") == 0);
	for (int r = 0; r < NREG; r++)
		printf("region %s %p %p %s\n", reg[r].name, (void *)reg[r].p, (void *)(reg[r].p + pg),
		       reg[r].method == GUARD_METHOD_NATIVE ? "native" : "fallback");
	if (strcmp(mode, "abort") == 0) {
		/* Anonymous and file, private and shared, ELF headers, huge pages. */
		FILE *f = fopen("/proc/self/coredump_filter", "w");

		if (!f || fprintf(f, "0x7f\n") < 0 || fclose(f))
			die("coredump_filter", errno);
		if (chdir(argv[1]))
			die(argv[1], errno);
		printf("ready\n");
		abort();
	}
	printf("ready\n");
	if (sigaction(SIGSEGV, &sa, NULL))
		die("sigaction", errno);
	if (strcmp(mode, "hold") == 0)
		hold(reg, argv[1]);
	if (strcmp(mode, "wait") != 0) {
		fprintf(stderr, "guarded: unknown mode %s\n", mode);
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		char name[16];
		int page;
		unsigned int byte;

		if (sscanf(line, "poke %15s %d %x", name, &page, &byte) == 3 && page >= 0 && page < PAGES) {
			for (int r = 0; r < NREG; r++)
				if (strcmp(reg[r].name, name) == 0)
					reg[r].poke[page] = (int)(byte & 0xff);
			continue;
		}
		break;
	}
	bool ok = true;
	for (int r = 0; r < NREG; r++)
		ok &= check_region(&reg[r]);
	for (int r = 0; r < NREG; r++)
		ok &= check_data(&reg[r], r);
	printf("%s\n", ok ? "checks passed" : "checks FAILED");
	return ok ? 0 : 1;
}
