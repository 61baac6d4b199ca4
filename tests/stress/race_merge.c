// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * stress-race-merge: VMA merges that carry VM_MAYBE_GUARD against
 * khugepaged's retract_page_tables() (issue 26).
 *
 * A merge that grows an unflagged file VMA over part of a flagged one (or
 * over all of it, or over the gap to it) must give the grown VMA the flag
 * before the new range is published: retract_page_tables() walks the file's
 * i_mmap under i_mmap_rwsem alone, not under the mmap lock the merge holds,
 * and frees the PTE table of any unflagged VMA that covers a whole PMD,
 * guard markers and all. A guard freed that way is silently gone: the next
 * access maps the file page.
 *
 * So, per backing (a memfd, or a read-only file on $LIBGUARD_SCRATCH, which
 * file THP needs), a victim thread builds, in a 2 MiB-aligned unit, an
 * unflagged VMA and a flagged neighbour at contiguous file offsets, the
 * neighbour holding guards in the PMD the merge will complete, and merges
 * them in one of three ways:
 *
 *  left    P = [A, A+1M) and V = [A+1M, A+1M+len) differing in protection
 *          (memfd) or MADV_RANDOM: mprotect()/madvise() of V's first MiB
 *          merges it into P (vma_merge_existing_range(), V shrunk or gone);
 *  right   V = [A, A+1M) flagged and N = [A+1M, A+2M): changing all of V
 *          merges it into N, which grows down over the PMD;
 *  expand  P = [A, A+1M) and a flagged N = [A+1M+h, A+2M) with the same
 *          attributes: an mmap() of the gap merges all three (vma_expand()).
 *
 * After each merge every guard is checked through pagemap bit 58 and a read
 * that must fault with SEGV_MAPERR; then the merged VMA is split again and
 * checked once more, and the unit is unmapped. Meanwhile a collapser process
 * maps the same file and, PMD after PMD of the units, makes its page cache
 * small again (hole punch and a write for the memfd, eviction for the file)
 * and MADV_COLLAPSEs it: each success ends in retract_page_tables() over
 * every mapping of that PMD, the victim's included. khugepaged does the same
 * when --setup-sysfs lets it scan without sleeping.
 *
 * The window is a few instructions long on a kernel that sets the flag late.
 * A debug kernel built with CONFIG_DEBUG_VM_STICKY_MERGE_DELAY widens it: a
 * merge whose VMA gains sticky flags sleeps for
 * /sys/kernel/debug/mm/sticky_merge_delay_us right after publishing the range,
 * which --setup-sysfs sets to --delay-us. A kernel that sets the flag first
 * loses nothing, delay or not.
 *
 * Exit status: 0 pass, 1 guards were lost (or another failure), 77 nothing
 * could be raced (no guard regions, no file backing, or no collapse), 2 usage.
 */
#include "caps.h"
#include "fail.h"
#include "kapi.h"
#include "knobs.h"
#include "probe.h"
#include "rng.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (1ul << 20)
#define PMD_SIZE (2 * MIB)
#define UNIT (2 * PMD_SIZE)	/* per unit: the PMD raced, and room for V's tail */
#define MAX_UNITS 16
#define MAX_GUARDS 8		/* guard pages per cycle */
#define MAX_REPORTS 5		/* lost guards described in full */
#define DELAY_KNOB "/sys/kernel/debug/mm/sticky_merge_delay_us"

enum rtype { R_SHMEM, R_FILE, R_COUNT };
static const char *const rtype_name[R_COUNT] = { "shmem", "file" };
/* The guard capability that covers each backing (caps_probe's types). */
static const enum btype rtype_bt[R_COUNT] = { BT_MEMFD, BT_RO };

enum how { H_LEFT, H_RIGHT, H_EXPAND, H_COUNT };
static const char *const how_name[H_COUNT] = { "left", "right", "expand" };

static const char *prog = "stress-race-merge";
static uint64_t seed;
static struct caps caps;
static struct backing bk;
static int pmfd;
static size_t nunits = 2;
static unsigned long delay_us = 20000;

/* The backing being raced. */
static enum rtype cur;
static int fd = -1;		/* memfd, or the O_RDONLY file */
static char *region;		/* nunits units, fenced by PROT_NONE */

/* Shared with the collapser process. */
struct shared {
	atomic_int stop;
	atomic_ulong collapse_ok, collapse_err[4], resets;
};
static struct shared *sh;
static const int collapse_errs[4] = { 0, EAGAIN, EINVAL, ENOMEM };	/* 0: other */

/* Counts of the current backing. */
static unsigned long n_cycles[H_COUNT], n_merged[H_COUNT], n_checked, n_lost, n_split_lost,
	n_reported;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	stress_vfail(prog, seed, fmt, ap);
}

static void on_unexpected(int sig, const siginfo_t *si)
{
	die("%s at %p outside any probe (region %p, backing %s)", probe_code_name(sig, si->si_code),
	    si->si_addr, (void *)region, rtype_name[cur]);
}

/* ------------------------------------------------------------ sysfs (guest) */

static char delay_str[32];
static struct knob knobs[] = {
	{ THP "shmem_enabled", "advise", "", false },
	{ THP "khugepaged/scan_sleep_millisecs", "0", "", false },
	{ THP "khugepaged/alloc_sleep_millisecs", "0", "", false },
	{ THP "khugepaged/pages_to_scan", "4096", "", false },
	{ DELAY_KNOB, delay_str, "", false },
};

static void setup_sysfs(void)
{
	snprintf(delay_str, sizeof(delay_str), "%lu", delay_us);
	knobs_setup(prog, knobs, sizeof(knobs) / sizeof(knobs[0]));
}

/* ------------------------------------------------------------ the backing */

/* The file: written, synced (collapse refuses dirty pages), reopened read-only, unlinked. */
static int make_file(const char *dir, size_t len, char *why, size_t whylen)
{
	char path[300];
	char *buf = malloc(MIB);
	int w;

	if (!buf)
		die("out of memory");
	snprintf(path, sizeof(path), "%s/libguard-race-merge-%d", dir, (int)getpid());
	w = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w < 0) {
		snprintf(why, whylen, "cannot create %s: %s", path, strerror(errno));
		free(buf);
		return -1;
	}
	for (size_t off = 0; off < len; off += MIB) {
		memset(buf, (int)(1 + off / MIB % 251), MIB);
		if (pwrite(w, buf, MIB, (off_t)off) != (ssize_t)MIB) {
			snprintf(why, whylen, "writing %s: %s", path, strerror(errno));
			goto fail;
		}
	}
	if (fsync(w)) {
		snprintf(why, whylen, "fsync %s: %s", path, strerror(errno));
		goto fail;
	}
	free(buf);
	close(w);
	/* File THP is only made for files nobody has open for writing. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	unlink(path);
	if (fd < 0) {
		snprintf(why, whylen, "reopening %s read-only: %s", path, strerror(errno));
		return -1;
	}
	return 0;
fail:
	free(buf);
	close(w);
	unlink(path);
	return -1;
}

static int open_backing(enum rtype t, const char *dir, char *why, size_t whylen)
{
	size_t len = nunits * UNIT;

	cur = t;
	if (t == R_FILE)
		return make_file(dir, len, why, whylen);
	fd = memfd_create("libguard-race-merge", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)len)) {
		snprintf(why, whylen, "memfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static char *unit_addr(size_t u)
{
	return region + u * UNIT;
}

static void placeholder(char *a, size_t len)
{
	if (mmap(a, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) ==
	    MAP_FAILED)
		die("placeholder mmap at %p: %s", (void *)a, strerror(errno));
}

/* The units, fenced by a PMD of PROT_NONE on each side: they merge with nothing. */
static void map_region(void)
{
	size_t len = nunits * UNIT;
	char *res = mmap(NULL, len + 3 * PMD_SIZE, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (res == MAP_FAILED)
		die("reserving %zu MiB: %s", (len + 3 * PMD_SIZE) / MIB, strerror(errno));
	region = (char *)(((uintptr_t)res + 2 * PMD_SIZE - 1) & ~(PMD_SIZE - 1));
}

static void unmap_region(void)
{
	munmap(region - PMD_SIZE, nunits * UNIT + 2 * PMD_SIZE);
	region = NULL;
}

/* ------------------------------------------------------------ the collapser */

static void count_collapse(int err)
{
	int slot = 0;

	for (int i = 1; i < 4; i++)
		if (collapse_errs[i] == err)
			slot = i;
	if (err)
		atomic_fetch_add(&sh->collapse_err[slot], 1);
	else
		atomic_fetch_add(&sh->collapse_ok, 1);
}

/*
 * Its own mapping of the file; PMD after PMD of the units: small pages in
 * the page cache again, then MADV_COLLAPSE, which ends in
 * retract_page_tables() over every mapping of that PMD when it succeeds.
 */
static void collapser(void)
{
	size_t len = nunits * UNIT;
	char *res = mmap(NULL, len + PMD_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			 -1, 0);
	char *map, *buf = calloc(1, 64 << 10);
	struct rng r;

	if (res == MAP_FAILED || !buf)
		die("collapser: out of memory");
	map = (char *)(((uintptr_t)res + PMD_SIZE - 1) & ~(PMD_SIZE - 1));
	if (mmap(map, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
		die("collapser: mmap of the %s: %s", rtype_name[cur], strerror(errno));
	if (madvise(map, len, MADV_HUGEPAGE))
		die("collapser: MADV_HUGEPAGE: %s", strerror(errno));
	/*
	 * A read in each PMD builds the upper page tables. Without them
	 * 6.12's MADV_COLLAPSE collapses the page cache and then fails
	 * with EINVAL (SCAN_PMD_NULL: no PMD table to install into), and
	 * whether this fresh child has them depends on where ASLR put map.
	 */
	for (size_t off = 0; off < len; off += PMD_SIZE)
		(void)*(volatile char *)(map + off);
	rng_seed(&r, seed ^ 0xc011a95e ^ (uint64_t)cur);
	memset(buf, 0x5a, 64 << 10);
	while (!atomic_load(&sh->stop)) {
		size_t u = rng_below(&r, nunits);
		off_t off = (off_t)(u * UNIT);

		if (cur == R_SHMEM) {
			/* A THP there is freed; a write brings small pages. */
			if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, PMD_SIZE) ||
			    pwrite(fd, buf, 64 << 10, off) != 64 << 10)
				die("collapser: punching and writing the memfd: %s", strerror(errno));
		} else {
			/* Evicted while nobody maps it: read back in small pages. */
			madvise(map + off, PMD_SIZE, MADV_DONTNEED);
			posix_fadvise(fd, off, PMD_SIZE, POSIX_FADV_DONTNEED);
		}
		atomic_fetch_add(&sh->resets, 1);
		count_collapse(madvise(map + off, PMD_SIZE, MADV_COLLAPSE) ? errno : 0);
	}
	_exit(0);
}

/* ------------------------------------------------------------ the victim */

struct cycle {
	enum how how;
	bool by_prot;		/* the attribute that differs: protection, else MADV_RANDOM */
	size_t vlen;		/* left: V's length; expand: the gap */
	char *guards[MAX_GUARDS];
	size_t nguards;
};

static int base_prot(void)
{
	return PROT_READ;
}

static int other_prot(const struct cycle *c)
{
	return c->by_prot ? PROT_READ | PROT_WRITE : PROT_READ;
}

static void map_file(char *a, size_t len, off_t off, int prot)
{
	if (mmap(a, len, prot, MAP_SHARED | MAP_FIXED, fd, off) == MAP_FAILED)
		die("%s: mmap of [%p, +%zu KiB) at offset %lld: %s", rtype_name[cur], (void *)a,
		    len >> 10, (long long)off, strerror(errno));
}

/* Give [a, a + len) the other attributes (other), or the base ones. */
static void set_attrs(const struct cycle *c, char *a, size_t len, bool other)
{
	int r;

	if (c->by_prot)
		r = mprotect(a, len, other ? other_prot(c) : base_prot());
	else
		r = madvise(a, len, other ? MADV_RANDOM : MADV_NORMAL);
	if (r)
		die("%s: %s of [%p, +%zu KiB): %s", rtype_name[cur], c->by_prot ? "mprotect" : "madvise",
		    (void *)a, len >> 10, strerror(errno));
}

/* n distinct random guard pages in [a, a + len). */
static void pick_guards(struct cycle *c, struct rng *r, char *a, size_t len, size_t n)
{
	size_t pages = len / kapi_page;

	for (size_t i = 0; i < n && c->nguards < MAX_GUARDS; i++) {
		char *p = a + rng_below(r, pages) * kapi_page;
		bool dup = false;

		for (size_t j = 0; j < c->nguards; j++)
			dup |= c->guards[j] == p;
		if (!dup)
			c->guards[c->nguards++] = p;
	}
}

static void install_guards(const struct cycle *c)
{
	for (size_t i = 0; i < c->nguards; i++)
		if (madvise(c->guards[i], kapi_page, MADV_GUARD_INSTALL))
			die("%s: MADV_GUARD_INSTALL at %p: %s", rtype_name[cur], (void *)c->guards[i],
			    strerror(errno));
}

/*
 * Is every guard of the cycle still one? Each is read through pagemap
 * bit 58 (where the kernel reports it) and touched: the read must fault
 * with SEGV_MAPERR. Returns the number lost, and describes the first few.
 */
static size_t check_guards(const struct cycle *c, size_t u, const char *when)
{
	size_t lost = 0;

	for (size_t i = 0; i < c->nguards; i++) {
		char *p = c->guards[i];
		uint64_t pm = 0, v;
		struct fault f;
		size_t idx = 0;
		bool bit = true, faulted;

		if (caps.pagemap) {
			int r = kapi_pagemap(pmfd, (uintptr_t)p, 1, &pm);

			if (r)
				die("reading pagemap: %s", strerror(-r));
			bit = (pm >> PM_GUARD_BIT) & 1;
		}
		faulted = probe_read(p, &idx, 1, &v, &f) && f.sig == SIGSEGV && f.code == SEGV_MAPERR;
		n_checked++;
		if (bit && faulted)
			continue;
		lost++;
		if (n_reported++ < MAX_REPORTS) {
			fprintf(stderr,
				"%s: LOST GUARD: %s, %s merge (%s), unit %zu: page %p (PMD offset %zu KiB) "
				"pagemap %#llx (bit 58 %s), a read %s\n",
				prog, rtype_name[cur], how_name[c->how], when, u, (void *)p,
				(size_t)(p - unit_addr(u)) >> 10, (unsigned long long)pm,
				caps.pagemap ? (bit ? "set" : "CLEAR") : "not reported",
				faulted ? "faulted" : f.sig ? probe_code_name(f.sig, f.code) :
				"SUCCEEDED (the page is accessible)");
			kapi_dump_maps(2, (uintptr_t)unit_addr(u), (uintptr_t)unit_addr(u) + UNIT);
		}
	}
	return lost;
}

/* Did the merge leave one VMA over the unit's first PMD? */
static bool merged(size_t u)
{
	uintptr_t s, e;

	return kapi_vma_of((uintptr_t)unit_addr(u), &s, &e) == 0 &&
	       s == (uintptr_t)unit_addr(u) && e >= (uintptr_t)unit_addr(u) + PMD_SIZE;
}

/* One build, merge, check, split, check, teardown of unit u. */
static void cycle(struct rng *r, size_t u)
{
	char *a = unit_addr(u);
	off_t x = (off_t)(u * UNIT);
	struct cycle c = { .how = (enum how)rng_below(r, H_COUNT) };
	size_t lost;

	/* A read-only file cannot be made writable: it differs by MADV_RANDOM. */
	c.by_prot = cur == R_SHMEM && rng_below(r, 2);
	n_cycles[c.how]++;
	switch (c.how) {
	case H_LEFT:
		/* V: 1 MiB, or up to 1 MiB more reaching into the next PMD. */
		c.vlen = MIB + (rng_below(r, 2) ? rng_below(r, 17) * (64 << 10) : 0);
		map_file(a, MIB, x, base_prot());
		map_file(a + MIB, c.vlen, x + (off_t)MIB, other_prot(&c));
		if (!c.by_prot)
			set_attrs(&c, a + MIB, c.vlen, true);
		pick_guards(&c, r, a + MIB, MIB, 1 + rng_below(r, 3));
		if (c.vlen > MIB)
			pick_guards(&c, r, a + PMD_SIZE, c.vlen - MIB, 1);
		install_guards(&c);
		set_attrs(&c, a + MIB, MIB, false);
		break;
	case H_RIGHT:
		map_file(a, MIB, x, other_prot(&c));
		if (!c.by_prot)
			set_attrs(&c, a, MIB, true);
		map_file(a + MIB, MIB, x + (off_t)MIB, base_prot());
		pick_guards(&c, r, a, MIB, 1 + rng_below(r, 3));
		install_guards(&c);
		set_attrs(&c, a, MIB, false);
		break;
	default:
		/* The gap stays a placeholder until the mmap that fills it. */
		c.by_prot = false;
		c.vlen = (1 + rng_below(r, 8)) * (64 << 10);
		map_file(a, MIB, x, base_prot());
		map_file(a + MIB + c.vlen, MIB - c.vlen, x + (off_t)(MIB + c.vlen), base_prot());
		pick_guards(&c, r, a + MIB + c.vlen, MIB - c.vlen, 1 + rng_below(r, 3));
		install_guards(&c);
		map_file(a + MIB, c.vlen, x + (off_t)MIB, base_prot());
		break;
	}
	if (merged(u))
		n_merged[c.how]++;
	lost = check_guards(&c, u, "after the merge");
	n_lost += lost;

	/* Split the merged VMA again; both parts are flagged now. */
	if (!lost) {
		if (c.how == H_EXPAND)
			set_attrs(&c, a + MIB, c.vlen, true);
		else
			set_attrs(&c, c.how == H_LEFT ? a + MIB : a, MIB, true);
		lost = check_guards(&c, u, "after the split");
		n_split_lost += lost;
		n_lost += lost;
	}
	placeholder(a, UNIT);
}

/* Race backing t for secs; 1 raced, 0 skipped (why says why). */
static int race(enum rtype t, double secs, const char *dir, char *why, size_t whylen)
{
	unsigned long kc0 = khugepaged_stat("pages_collapsed"), ks0 = khugepaged_stat("full_scans");
	unsigned long merges = 0, cycles = 0, lost0 = n_lost;
	struct rng r;
	double t0;
	pid_t pid;
	int st;

	memset(n_cycles, 0, sizeof(n_cycles));
	memset(n_merged, 0, sizeof(n_merged));
	n_checked = n_split_lost = 0;
	memset(sh, 0, sizeof(*sh));
	if (open_backing(t, dir, why, whylen))
		return 0;
	map_region();
	for (size_t u = 0; u < nunits; u++)
		placeholder(unit_addr(u), UNIT);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0)
		collapser();
	rng_seed(&r, seed ^ ((uint64_t)t << 56));
	t0 = stress_now();
	while (stress_now() - t0 < secs)
		cycle(&r, rng_below(&r, nunits));
	atomic_store(&sh->stop, 1);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("%s: the collapser process failed (status %#x)", rtype_name[t], st);
	unmap_region();
	close(fd);
	fd = -1;
	for (int h = 0; h < H_COUNT; h++) {
		merges += n_merged[h];
		cycles += n_cycles[h];
	}
	printf("%s: %s: %.1f s, %lu cycles (left %lu/%lu, right %lu/%lu, expand %lu/%lu merged), "
	       "%lu guard checks, %lu lost (%lu of them after the split); collapser: %lu page cache "
	       "resets, MADV_COLLAPSE %lu succeeded, failed: EAGAIN %lu, EINVAL %lu, ENOMEM %lu, "
	       "other %lu; khugepaged: +%lu pages collapsed, +%lu full scans\n",
	       prog, rtype_name[t], stress_now() - t0, cycles, n_merged[H_LEFT], n_cycles[H_LEFT],
	       n_merged[H_RIGHT], n_cycles[H_RIGHT], n_merged[H_EXPAND], n_cycles[H_EXPAND], n_checked,
	       n_lost - lost0, n_split_lost, atomic_load(&sh->resets), atomic_load(&sh->collapse_ok),
	       atomic_load(&sh->collapse_err[1]), atomic_load(&sh->collapse_err[2]),
	       atomic_load(&sh->collapse_err[3]), atomic_load(&sh->collapse_err[0]),
	       khugepaged_stat("pages_collapsed") - kc0, khugepaged_stat("full_scans") - ks0);
	if (n_lost > lost0)
		return 1;
	if (!atomic_load(&sh->collapse_ok)) {
		snprintf(why, whylen, "no MADV_COLLAPSE succeeded during the run%s",
			 atomic_load(&sh->collapse_err[2]) && t == R_FILE ?
			 " (EINVAL: file THP needs CONFIG_READ_ONLY_THP_FOR_FS, which this kernel may lack)" :
			 "");
		return 0;
	}
	if (!merges) {
		snprintf(why, whylen, "no merge left one VMA over the PMD: nothing raced");
		return 0;
	}
	return 1;
}

static int parse_backings(const char *s, bool *want)
{
	char buf[256], *tok, *save;

	snprintf(buf, sizeof(buf), "%s", s);
	for (int t = 0; t < R_COUNT; t++)
		want[t] = false;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int t;

		for (t = 0; t < R_COUNT && strcmp(tok, rtype_name[t]); t++)
			;
		if (t == R_COUNT) {
			fprintf(stderr, "%s: unknown backing '%s' (shmem, file)\n", prog, tok);
			return -1;
		}
		want[t] = true;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s [--time SEC] [--seed N] [--backings LIST] [--require LIST] [--units N]\n"
		"          [--delay-us N] [--dir DIR] [--setup-sysfs]\n"
		"  --time SEC        total time, shared by the backings that run (default 20)\n"
		"  --backings LIST   of shmem, file (default both)\n"
		"  --require LIST    backings that must be raced: a skip of one fails the run\n"
		"  --units N         4 MiB units raced in turn (default 2, 1..%d)\n"
		"  --delay-us N      with --setup-sysfs: the merge window on debug kernels that\n"
		"                    have %s (default 20000; 0: not widened)\n"
		"  --dir DIR         where the file goes (default $LIBGUARD_SCRATCH, else .)\n"
		"  --setup-sysfs     guest only: shmem THP on, khugepaged without sleeps, the delay\n",
		prog, MAX_UNITS, DELAY_KNOB);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "time", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 's' },
		{ "backings", required_argument, NULL, 'b' },
		{ "require", required_argument, NULL, 'r' },
		{ "units", required_argument, NULL, 'u' },
		{ "delay-us", required_argument, NULL, 'D' },
		{ "dir", required_argument, NULL, 'd' },
		{ "setup-sysfs", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool want[R_COUNT] = { true, true }, require[R_COUNT] = { 0 }, ran[R_COUNT] = { 0 };
	bool sysfs = false;
	char why[R_COUNT][512], knob[64] = "";
	double secs = 20, t0;
	const char *dir = NULL, *env;
	struct utsname u;
	int opt, r, nwant = 0, nran = 0, fail = 0;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		char *end = NULL;

		switch (opt) {
		case 't': secs = strtod(optarg, &end); break;
		case 's': seed = strtoull(optarg, &end, 0); break;
		case 'b': if (parse_backings(optarg, want)) usage(); break;
		case 'r': if (parse_backings(optarg, require)) usage(); break;
		case 'u': nunits = strtoul(optarg, &end, 0); break;
		case 'D': delay_us = strtoul(optarg, &end, 0); break;
		case 'd': dir = optarg; break;
		case 'S': sysfs = true; break;
		default: usage();
		}
		if (end && *end) {
			fprintf(stderr, "%s: not a number: %s\n", prog, optarg);
			usage();
		}
	}
	if (optind < argc || secs <= 0 || nunits < 1 || nunits > MAX_UNITS)
		usage();
	for (int t = 0; t < R_COUNT; t++) {
		if (require[t] && !want[t]) {
			fprintf(stderr, "%s: --require %s, but --backings leaves it out\n", prog,
				rtype_name[t]);
			return 2;
		}
		nwant += want[t];
	}
	if (!seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)time(NULL);
	env = getenv("LIBGUARD_KERNEL");
	if (sysfs && !(env && *env)) {
		fprintf(stderr, "%s: --setup-sysfs changes system-wide THP settings and is for the QEMU "
			"guest only (tests/vm/run sets LIBGUARD_KERNEL); refusing on this machine\n", prog);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	kapi_init();
	uname(&u);
	printf("%s: seed %llu, kernel %s, %zu unit(s), %.0f s over %d backing(s)\n", prog,
	       (unsigned long long)seed, u.release, nunits, secs, nwant);
	if (backing_open(&bk, dir))
		return 1;
	if (!dir)
		dir = bk.dir;
	probe_init(on_unexpected);
	r = caps_probe(prog, &bk, &caps);
	if (r != CAPS_OK)
		return r;
	caps_print(prog, &caps);
	if (sysfs)
		setup_sysfs();
	if (knob_read(DELAY_KNOB, knob, sizeof(knob)))
		printf("%s: merge window: as the kernel has it (no %s: not a debug kernel with "
		       "CONFIG_DEBUG_VM_STICKY_MERGE_DELAY, or debugfs not mounted)\n", prog, DELAY_KNOB);
	else
		printf("%s: merge window: %s us of sleep after a merge publishes a VMA that gains "
		       "VM_MAYBE_GUARD (%s)\n", prog, knob, DELAY_KNOB);
	printf("%s: file on %s (%s)%s%s\n", prog, dir, bk.dir_fs, *bk.note ? "; " : "", bk.note);
	pmfd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pmfd < 0)
		die("/proc/self/pagemap: %s", strerror(errno));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap: %s", strerror(errno));

	for (int t = 0; t < R_COUNT; t++) {
		why[t][0] = 0;
		if (want[t] && !caps.type_ok[rtype_bt[t]]) {
			snprintf(why[t], sizeof(why[t]), "no guard regions in %s mappings (%s)",
				 btype_name[rtype_bt[t]], kapi_errname(caps.type_err[rtype_bt[t]]));
			want[t] = false;
			nwant--;
		}
	}
	t0 = stress_now();
	for (int t = 0, left = nwant; t < R_COUNT; t++) {
		double slice;

		if (!want[t])
			continue;
		/* What is left, shared by the backings still to run. */
		slice = (secs - (stress_now() - t0)) / left--;
		if (slice < 1)
			slice = 1;
		ran[t] = race((enum rtype)t, slice, dir, why[t], sizeof(why[t]));
		nran += ran[t];
	}
	for (int t = 0; t < R_COUNT; t++) {
		if (ran[t] || !*why[t])
			continue;
		if (require[t]) {
			printf("%s: FAIL: %s is required but was not raced: %s\n", prog, rtype_name[t], why[t]);
			fail = 1;
		} else {
			printf("%s: SKIP %s: %s\n", prog, rtype_name[t], why[t]);
		}
	}
	if (n_lost) {
		printf("%s: FAIL seed %llu: %lu guard(s) lost to retract_page_tables() after merges that "
		       "returned 0\n", prog, (unsigned long long)seed, n_lost);
		return 1;
	}
	if (fail)
		return 1;
	if (!nran) {
		printf("%s: SKIP: no backing could be raced\n", prog);
		return 77;
	}
	printf("%s: PASS seed %llu: %d backing(s) raced, no guard lost\n", prog,
	       (unsigned long long)seed, nran);
	return 0;
}
