// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The mprotect method and its record: every subrange gets back its own
 * protection, overlapping installs keep the first original, partial
 * removal splits the record, the record survives fork(), contents follow
 * the native semantics, and threads share the record safely.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"

/* Three VMAs with different protections under one guard, then back. */
static void restores_each_subrange(void **state)
{
	static const int prots[] = { PROT_READ | PROT_WRITE, PROT_READ, PROT_READ | PROT_EXEC,
				     PROT_NONE, PROT_READ | PROT_WRITE };
	struct tmap m;
	void *fault;

	(void)state;
	tmap_new(T_ANON, 5, &m);
	for (int i = 0; i < 5; i++)
		assert_int_equal(mprotect(m.addr + i * pg, pg, prots[i]), 0);
	assert_int_equal(guard_install(m.addr, 5 * pg, GUARD_FALLBACK), 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(page_prot(m.addr + i * pg), PROT_NONE);
		assert_int_equal(access_in_child(m.addr + i * pg, false, &fault), SIGSEGV);
		assert_ptr_equal(fault, m.addr + i * pg);
	}
	assert_string_equal(query_str(m.addr, 5 * pg), "22222");
	assert_int_equal(guard_remove(m.addr, 5 * pg, 0), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(page_prot(m.addr + i * pg), prots[i]);
	/* found by faulting, the caller's own PROT_NONE page looks guarded */
	assert_string_equal(query_str(m.addr, 5 * pg), query_reports() ? "00000" : "00020");
	tmap_free(&m);
}

/* A second install over a guarded part must not record PROT_NONE. */
static void overlapping_installs(void **state)
{
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 6, &m);
	assert_int_equal(mprotect(m.addr + 3 * pg, 3 * pg, PROT_READ), 0);
	assert_int_equal(guard_install(m.addr + 2 * pg, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_install(m.addr, 6 * pg, GUARD_FALLBACK), 0);
	assert_string_equal(query_str(m.addr, 6 * pg), "222222");
	/* remove the middle only: the rest stays guarded */
	assert_int_equal(guard_remove(m.addr + 2 * pg, 2 * pg, 0), 0);
	assert_string_equal(query_str(m.addr, 6 * pg), "220022");
	assert_int_equal(page_prot(m.addr + 2 * pg), PROT_READ | PROT_WRITE);
	assert_int_equal(page_prot(m.addr + 3 * pg), PROT_READ);
	assert_int_equal(page_prot(m.addr + pg), PROT_NONE);
	assert_int_equal(guard_remove(m.addr, 6 * pg, 0), 0);
	assert_int_equal(page_prot(m.addr), PROT_READ | PROT_WRITE);
	assert_int_equal(page_prot(m.addr + 5 * pg), PROT_READ);
	tmap_free(&m);
}

/* Install discards private anonymous data and keeps shared data. */
static void contents_like_native(void **state)
{
	struct tmap a, s;

	(void)state;
	tmap_new(T_ANON, 2, &a);
	tmap_new(T_SHMEM, 2, &s);
	assert_int_equal(guard_install(a.addr, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_install(s.addr, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_remove(a.addr, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_remove(s.addr, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(a.addr[0], 0);
	assert_int_equal(a.addr[2 * pg - 1], 0);
	assert_int_equal(s.addr[0], 0x5a);
	assert_int_equal(s.addr[2 * pg - 1], 0x5a);
	tmap_free(&a);
	tmap_free(&s);
}

/* The child of fork() inherits the guards and the record behind them. */
static void record_survives_fork(void **state)
{
	struct tmap m;
	int status;
	pid_t pid;

	(void)state;
	tmap_new(T_ANON, 3, &m);
	assert_int_equal(guard_install(m.addr + pg, pg, GUARD_FALLBACK), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		bool ok = !strcmp(query_str(m.addr, 3 * pg), "020") &&
			  guard_remove(m.addr + pg, pg, 0) == 0 &&
			  page_prot(m.addr + pg) == (PROT_READ | PROT_WRITE) &&
			  !strcmp(query_str(m.addr, 3 * pg), "000");

		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* the parent's guard is its own */
	assert_string_equal(query_str(m.addr, 3 * pg), "020");
	assert_int_equal(guard_remove(m.addr + pg, pg, 0), 0);
	tmap_free(&m);
}

/*
 * A record outlives an munmap() the caller forgot to pair with
 * guard_remove(); a new mapping at the address that is accessible is
 * neither reported nor changed.
 */
static void stale_record_harmless(void **state)
{
	struct tmap m;
	char *again;

	(void)state;
	tmap_new(T_ANON, 2, &m);
	assert_int_equal(guard_install(m.addr, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(munmap(m.addr, 2 * pg), 0);
	again = mmap(m.addr, 2 * pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		     -1, 0);
	if (again != m.addr) {
		if (again != MAP_FAILED)
			munmap(again, 2 * pg);
		skip();
	}
	assert_string_equal(query_str(again, 2 * pg), "00");
	assert_int_equal(guard_remove(again, 2 * pg, 0), 0);
	assert_int_equal(page_prot(again), PROT_READ);
	/* and a fresh guard there records the new protection */
	assert_int_equal(guard_install(again, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_remove(again, 2 * pg, 0), 0);
	assert_int_equal(page_prot(again), PROT_READ);
	munmap(again, 2 * pg);
}

/* Is any page of [addr, addr + n pages) reported as a fallback guard? */
static bool fallback_reported(void *addr, size_t n)
{
	unsigned char vec[8] = { 0 };

	assert_true(n <= sizeof(vec));
	assert_int_equal(guard_query(addr, n * pg, vec), 0);
	for (size_t i = 0; i < n; i++)
		if (vec[i] & GUARD_QUERY_FALLBACK)
			return true;
	return false;
}

/* A shared PROT_NONE page of a new memfd at addr (MAP_FIXED), offset off pages. */
static void *memfd_none_at(void *addr, size_t pages, size_t off)
{
	int fd = memfd_create("stale", MFD_CLOEXEC);
	void *p;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)((pages + off) * pg)), 0);
	p = mmap(addr, pages * pg, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, (off_t)(off * pg));
	close(fd);
	assert_ptr_equal(p, addr);
	return p;
}

/*
 * munmap() of a guarded mapping and a new PROT_NONE reservation in its
 * place (someone else's): the record no longer matches what the kernel
 * reports (the VMA is wider than the one the guard made), so it is
 * neither reported nor acted on: guard_remove() leaves it PROT_NONE.
 */
static void stale_anon_reservation(void **state)
{
	struct tmap m;
	char *again;

	(void)state;
	tmap_new(T_ANON, 3, &m);
	assert_int_equal(guard_install(m.addr + pg, pg, GUARD_FALLBACK), 0);
	assert_int_equal(munmap(m.addr, 3 * pg), 0);
	again = mmap(m.addr, 3 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		     -1, 0);
	if (again != m.addr) {
		if (again != MAP_FAILED)
			munmap(again, 3 * pg);
		skip();
	}
	assert_false(fallback_reported(again, 3));
	assert_int_equal(guard_remove(again, 3 * pg, 0), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(page_prot(again + i * pg), PROT_NONE);
	assert_int_equal(guard_remove(again + pg, pg, GUARD_FALLBACK), 0);
	assert_int_equal(page_prot(again + pg), PROT_NONE);
	munmap(again, 3 * pg);
}

/*
 * What the weak check (no PROCMAP_QUERY: libguard(7), "Kernels before
 * 6.11") documents for an inaccessible mapping put exactly in the place
 * of a guard: it is taken for the guard, reported, and given the guard's
 * recorded protection by guard_remove(). Checked as documented, so that
 * a change of it shows.
 */
static void weak_taken_for_guard(char *page_at, int prot)
{
	printf("# no PROCMAP_QUERY: the weak check takes the new mapping for the guard, "
	       "as libguard(7) says\n");
	assert_true(fallback_reported(page_at, 1));
	assert_int_equal(guard_remove(page_at, pg, 0), 0);
	assert_int_equal(page_prot(page_at), prot);
}

/*
 * The same with a file: the guarded page unmapped and a PROT_NONE page of
 * another file, then of the same file at another offset, mapped exactly
 * in its place. Same extent, other object: not the library's (where the
 * kernel shows objects: PROCMAP_QUERY, or LIBGUARD_STRICT_RECORDS).
 */
static void stale_file_replaced(void **state)
{
	struct tmap m;

	(void)state;
	for (int round = 0; round < 2; round++) {
		tmap_new(T_SHMEM, 3, &m);
		assert_int_equal(guard_install(m.addr + pg, pg, GUARD_FALLBACK), 0);
		assert_true(fallback_reported(m.addr, 3));
		if (round == 0) {
			memfd_none_at(m.addr + pg, 1, 0);
		} else {
			/* this memfd at page 2 instead of page 1 */
			assert_ptr_equal(mmap(m.addr + pg, pg, PROT_NONE, MAP_SHARED | MAP_FIXED,
					      m.fd, (off_t)(2 * pg)),
					 m.addr + pg);
		}
		if (records_weak()) {
			weak_taken_for_guard(m.addr + pg, PROT_READ | PROT_WRITE);
			tmap_free(&m);
			continue;
		}
		assert_false(fallback_reported(m.addr, 3));
		assert_int_equal(guard_remove(m.addr, 3 * pg, 0), 0);
		assert_int_equal(page_prot(m.addr + pg), PROT_NONE);
		assert_int_equal(page_prot(m.addr), PROT_READ | PROT_WRITE);
		tmap_free(&m);
	}
}

/*
 * mremap() of a guarded page away, and a file page mapped PROT_NONE in
 * its place: neither the page that moved (now the caller's, elsewhere) nor
 * the new one is the library's to restore (the weak check takes the new
 * one for the guard, as documented).
 */
static void stale_after_mremap(void **state)
{
	struct tmap m;
	char *away, *moved;

	(void)state;
	tmap_new(T_ANON, 3, &m);
	away = mmap(NULL, pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(away != MAP_FAILED);
	assert_int_equal(guard_install(m.addr + pg, pg, GUARD_FALLBACK), 0);
	moved = mremap(m.addr + pg, pg, pg, MREMAP_MAYMOVE | MREMAP_FIXED, away);
	assert_ptr_equal(moved, away);
	memfd_none_at(m.addr + pg, 1, 0);
	if (records_weak()) {
		weak_taken_for_guard(m.addr + pg, PROT_READ | PROT_WRITE);
	} else {
		assert_false(fallback_reported(m.addr, 3));
		assert_int_equal(guard_remove(m.addr, 3 * pg, 0), 0);
		assert_int_equal(page_prot(m.addr + pg), PROT_NONE);
	}
	assert_int_equal(guard_remove(moved, pg, 0), 0);
	assert_int_equal(page_prot(moved), PROT_NONE);
	munmap(moved, pg);
	tmap_free(&m);
}

/*
 * The caller's mprotect(PROT_READ) over a fallback guard: the guard is
 * gone, guard_remove() keeps PROT_READ, and the record is forgotten, so a
 * later PROT_NONE by the caller is the caller's too.
 */
static void stale_after_caller_mprotect(void **state)
{
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 3, &m);
	assert_int_equal(guard_install(m.addr + pg, pg, GUARD_FALLBACK), 0);
	assert_int_equal(mprotect(m.addr + pg, pg, PROT_READ), 0);
	assert_false(fallback_reported(m.addr, 3));
	assert_int_equal(guard_remove(m.addr + pg, pg, 0), 0);
	assert_int_equal(page_prot(m.addr + pg), PROT_READ);
	assert_int_equal(mprotect(m.addr + pg, pg, PROT_NONE), 0);
	assert_int_equal(guard_remove(m.addr + pg, pg, 0), 0);
	assert_int_equal(page_prot(m.addr + pg), PROT_NONE);
	tmap_free(&m);
}

struct unmapper {
	char *addr;
	size_t len;
};

static void *unmap_thread(void *arg)
{
	struct unmapper *u = arg;

	munmap(u->addr, u->len);
	return NULL;
}

/*
 * Bad input: another thread unmaps the range while the fallback installs
 * a guard in it. Whatever the interleaving, the call ends in an error or
 * a guard, and what is left recorded does not make a later PROT_NONE
 * reservation at the address (someone else's) accessible.
 */
static void unmapped_during_install(void **state)
{
	int raced = 0;

	(void)state;
	for (int round = 0; round < 200; round++) {
		struct unmapper u;
		pthread_t t;
		char *again;
		int ret;

		u.len = 3 * pg;
		u.addr = mmap(NULL, u.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(u.addr != MAP_FAILED);
		assert_int_equal(pthread_create(&t, NULL, unmap_thread, &u), 0);
		ret = guard_install(u.addr + pg, pg, GUARD_FALLBACK);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_true(ret == 0 || ret == -ENOMEM);
		raced += ret == -ENOMEM;
		again = mmap(u.addr, u.len, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (again != u.addr) {
			if (again != MAP_FAILED)
				munmap(again, u.len);
			continue;
		}
		assert_false(fallback_reported(again, 3));
		assert_int_equal(guard_remove(again, u.len, 0), 0);
		for (int i = 0; i < 3; i++)
			assert_int_equal(page_prot(again + i * pg), PROT_NONE);
		munmap(again, u.len);
	}
	printf("# %d of 200 installs found the range gone\n", raced);
}

/*
 * The process's VMA count as the kernel counts it against the limit
 * (mm->map_count): the lines of /proc/self/maps, without malloc(), less
 * [vsyscall], which is shown there but is no VMA of the process.
 */
static long vma_count(void)
{
	static char buf[1 << 16];
	static const char vsyscall[] = "[vsyscall]";
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t matched = 0;
	long n = 0;
	ssize_t got;

	if (fd < 0)
		return -1;
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < got; i++) {
			n += buf[i] == '\n';
			matched = buf[i] == vsyscall[matched] ? matched + 1 : buf[i] == '[';
			if (matched == sizeof(vsyscall) - 1) {
				n--;
				matched = 0;
			}
		}
	close(fd);
	return n;
}

/*
 * Spend VMAs until the process has target of them: every other page of a
 * big mapping read-only (two VMAs each), and a memfd page for an odd one.
 * 0 and the filler in *fill (unmap fill_pages of it), or -1.
 */
static int fill_to(long target, int memfd, char **fill, size_t *fill_pages)
{
	long now = vma_count();
	size_t k = 0;

	*fill_pages = 2 * (size_t)(target > now ? target - now : 0) + 4;
	*fill = mmap(NULL, *fill_pages * pg, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (*fill == MAP_FAILED)
		return -1;
	now++;
	if ((target - now) % 2) {
		/* one more VMA, of a file, to make the difference even */
		if (mmap(*fill + (*fill_pages - 1) * pg, pg, PROT_READ, MAP_SHARED | MAP_FIXED, memfd,
			 0) == MAP_FAILED)
			return -1;
		now++;
	}
	for (; now < target; now += 2, k++)
		if (mprotect(*fill + (2 * k + 1) * pg, pg, PROT_READ))
			return -1;
	now = vma_count();
	printf("# %ld VMAs (want %ld)\n", now, target);
	return now == target ? 0 : -1;
}

/*
 * In the child: A (anonymous, read-write, 4 pages), B (a memfd, read-only,
 * 1 page, which merges with nothing) and C (anonymous, read-only, 4
 * pages) side by side, and the process one VMA below vm.max_map_count.
 *
 * Install, by the fallback, over A's last two pages, B and C's first two:
 * protecting A's tail splits A and takes the last VMA the limit allows; B
 * and C's head are one piece (both read-only), and mprotect() over it
 * protects B, then fails with ENOMEM at the split of C. The call must say
 * -ENOMEM and give A's tail and B their protection back, and record
 * nothing, so that the same install works once VMAs are free again.
 *
 * Then removal, at the limit, of B and C's first page: again one piece,
 * B is restored, C's split fails. The call must say -ENOMEM with both
 * pages still guarded and recorded, and a later removal restore them.
 *
 * Exit status: 0, 77 (skip), or the number of the check that failed.
 */
static int enomem_midway_child(void)
{
	static const int want[5] = { PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE, PROT_READ,
				     PROT_READ, PROT_READ };
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	size_t fill_pages;
	char *base, *fill, *range;
	long limit = 0;
	int memfd, ret;

	if (!f || fscanf(f, "%ld", &limit) != 1 || limit < 1000 || limit > 262144) {
		printf("# vm.max_map_count %ld: not a limit this test can reach quickly\n", limit);
		return 77;
	}
	fclose(f);
	base = mmap(NULL, 9 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memfd = memfd_create("enomem-midway", MFD_CLOEXEC);
	if (base == MAP_FAILED || memfd < 0 || ftruncate(memfd, (off_t)pg) ||
	    mmap(base, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		 0) != base ||
	    mmap(base + 4 * pg, pg, PROT_READ, MAP_SHARED | MAP_FIXED, memfd, 0) != base + 4 * pg ||
	    mmap(base + 5 * pg, 4 * pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
		    base + 5 * pg)
		return 1;
	range = base + 2 * pg;

	if (fill_to(limit - 1, memfd, &fill, &fill_pages))
		return 2;
	ret = guard_install(range, 5 * pg, GUARD_FALLBACK);
	printf("# fallback install over A|B|C at the limit: %d (want %d)\n", ret, -ENOMEM);
	if (ret != -ENOMEM)
		return 3;
	for (int i = 0; i < 5; i++)
		if (page_prot(range + i * pg) != want[i]) {
			printf("# page %d: prot %d, want %d\n", i, page_prot(range + i * pg), want[i]);
			return 4;
		}
	if (vma_count() != limit - 1 || strcmp(query_str(range, 5 * pg), "00000"))
		return 5;
	munmap(fill, fill_pages * pg);
	if (guard_install(range, 5 * pg, GUARD_FALLBACK) ||
	    strcmp(query_str(range, 5 * pg), "22222"))
		return 6;

	if (fill_to(limit, memfd, &fill, &fill_pages))
		return 7;
	ret = guard_remove(range + 2 * pg, 2 * pg, 0);
	printf("# removal of B|C's head at the limit: %d (want %d)\n", ret, -ENOMEM);
	if (ret != -ENOMEM)
		return 8;
	if (page_prot(range + 2 * pg) != PROT_NONE || page_prot(range + 3 * pg) != PROT_NONE ||
	    strcmp(query_str(range, 5 * pg), "22222"))
		return 9;
	munmap(fill, fill_pages * pg);
	if (guard_remove(range, 5 * pg, 0))
		return 10;
	for (int i = 0; i < 5; i++)
		if (page_prot(range + i * pg) != want[i])
			return 11;
	return strcmp(query_str(range, 5 * pg), "00000") ? 12 : 0;
}

/*
 * mprotect() running out of VMAs midway through a fallback install, with
 * the system's own vm.max_map_count (the sysctl is global, so it is not
 * lowered): the VMAs are spent instead, in a child that then exits.
 */
static void enomem_midway(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	skip_under("ThreadSanitizer", "it fills the process with VMAs up to vm.max_map_count, "
				       "and TSan's runtime maps memory of its own meanwhile");
	fflush(stdout);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int ret = enomem_midway_child();

		fflush(stdout);
		_exit(ret);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

static long resident_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size, pages = -1;

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld %ld", &size, &pages), 2);
	fclose(f);
	return pages * (sysconf(_SC_PAGESIZE) / 1024);
}

/*
 * One install over 2,000 VMAs: the record reserves nodes for the worst
 * case, some 2,000 pages, and must not make them resident. The records
 * themselves take under 200 KiB.
 */
static void large_install_resident(void **state)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = 2000;
	char *m;
	long before, grew;

	(void)state;
	skip_under("ThreadSanitizer", "its runtime maps and touches shadow memory meanwhile");
	m = mmap(NULL, n * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	for (size_t i = 1; i < n; i += 2)
		assert_int_equal(mprotect(m + i * pg, pg, PROT_READ), 0);
	before = resident_kib();
	assert_int_equal(guard_install(m, n * pg, GUARD_FALLBACK), 0);
	grew = resident_kib() - before;
	printf("# install over %zu VMAs: resident +%ld KiB\n", n, grew);
	assert_true(grew <= 1024);
	assert_int_equal(guard_remove(m, n * pg, GUARD_FALLBACK), 0);
	assert_int_equal(munmap(m, n * pg), 0);
}

/* Many threads, one record: disjoint ranges, neighbours in use. */
static void threads_share_record(void **state)
{
	(void)state;
	assert_int_equal(guard_threads(6, 100, GUARD_FALLBACK, GUARD_QUERY_FALLBACK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(restores_each_subrange),
		cmocka_unit_test(overlapping_installs),
		cmocka_unit_test(contents_like_native),
		cmocka_unit_test(record_survives_fork),
		cmocka_unit_test(stale_record_harmless),
		cmocka_unit_test(stale_anon_reservation),
		cmocka_unit_test(stale_file_replaced),
		cmocka_unit_test(stale_after_mremap),
		cmocka_unit_test(stale_after_caller_mprotect),
		cmocka_unit_test(large_install_resident),
		cmocka_unit_test(unmapped_during_install),
		cmocka_unit_test(enomem_midway),
		cmocka_unit_test(threads_share_record),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
