// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_install() and guard_remove(): a real overflow into a guard faults
 * at the guard, by either method, on every backing; the error contract;
 * rollback of a call that fails midway; errno; threads.
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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"

/*
 * Guard page 2 of 5, overflow into it from a child: SIGSEGV with si_addr
 * at the guard's first byte; the byte before it and the page after it stay
 * usable; the method is the one this environment should use; after
 * removal the page works again and its data is what native guards leave
 * (private anonymous: zeros, shared: kept).
 */
static void overflow_case(enum tkind kind, unsigned int flags)
{
	bool native = !(flags & GUARD_FALLBACK) && want_native(kind);
	bool wr = kind != T_READONLY;
	struct tmap m;
	const char *skip_why = tmap_new(kind, 5, &m);
	char *guard;
	void *fault;

	if (skip_why) {
		printf("# %s: %s\n", kind_name(kind), skip_why);
		skip();
	}
	guard = m.addr + 2 * pg;
	assert_int_equal(guard_install(guard, pg, flags), 0);
	printf("# %s, flags %#x: method %s (expected %s)\n", kind_name(kind), flags,
	       query_method(guard, pg), native ? "native" : "fallback");
	assert_string_equal(query_method(guard, pg), native ? "native" : "fallback");
	assert_string_equal(query_str(m.addr, 5 * pg), native ? "00100" : "00200");

	assert_int_equal(access_in_child(guard, wr, &fault), SIGSEGV);
	assert_ptr_equal(fault, guard);
	assert_int_equal(access_in_child(guard + pg - 1, wr, &fault), SIGSEGV);
	assert_ptr_equal(fault, guard + pg - 1);
	assert_int_equal(access_in_child(guard - 1, wr, &fault), 0);
	assert_int_equal(access_in_child(guard + pg, wr, &fault), 0);

	assert_int_equal(guard_remove(guard, pg, flags), 0);
	assert_string_equal(query_str(m.addr, 5 * pg), "00000");
	assert_int_equal(guard[0], kind == T_ANON ? 0 : 0x5a);
	/* the child's write before the guard shows only in shared memory */
	assert_int_equal(guard[-1], kind == T_SHMEM || kind == T_FILE ? 1 : 0x5a);
	assert_int_equal(access_in_child(guard, wr, &fault), 0);
	assert_int_equal(page_prot(guard), wr ? PROT_READ | PROT_WRITE : PROT_READ);
	tmap_free(&m);
}

static void overflow_anon(void **s) { (void)s; overflow_case(T_ANON, 0); }
static void overflow_shmem(void **s) { (void)s; overflow_case(T_SHMEM, 0); }
static void overflow_file(void **s) { (void)s; overflow_case(T_FILE, 0); }
static void overflow_readonly(void **s) { (void)s; overflow_case(T_READONLY, 0); }
static void overflow_anon_fb(void **s) { (void)s; overflow_case(T_ANON, GUARD_FALLBACK); }
static void overflow_shmem_fb(void **s) { (void)s; overflow_case(T_SHMEM, GUARD_FALLBACK); }
static void overflow_file_fb(void **s) { (void)s; overflow_case(T_FILE, GUARD_FALLBACK); }
static void overflow_readonly_fb(void **s) { (void)s; overflow_case(T_READONLY, GUARD_FALLBACK); }

/* GUARD_NATIVE: native or -EOPNOTSUPP, never the fallback. */
static void native_flag(void **state)
{
	(void)state;
	for (enum tkind k = T_ANON; k < T_NKINDS; k++) {
		struct tmap m;
		int ret;

		if (tmap_new(k, 3, &m))
			continue;
		ret = guard_install(m.addr + pg, pg, GUARD_NATIVE);
		printf("# GUARD_NATIVE on %s: %d (expected %s)\n", kind_name(k), ret,
		       want_native(k) ? "0" : "-EOPNOTSUPP");
		if (want_native(k)) {
			assert_int_equal(ret, 0);
			assert_string_equal(query_str(m.addr, 3 * pg), "010");
			assert_int_equal(guard_remove(m.addr + pg, pg, GUARD_NATIVE), 0);
		} else {
			assert_int_equal(ret, -EOPNOTSUPP);
			assert_string_equal(query_str(m.addr, 3 * pg), "000");
			assert_int_equal(guard_remove(m.addr + pg, pg, GUARD_NATIVE),
					 (want_caps(NULL) & GUARD_CAP_NATIVE_MASK) && !forced_fallback()
						 ? 0 : -EOPNOTSUPP);
		}
		assert_string_equal(query_str(m.addr, 3 * pg), "000");
		tmap_free(&m);
	}
}

static void bad_arguments(void **state)
{
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 2, &m);
	assert_int_equal(guard_install(NULL, pg, 0), -EINVAL);
	assert_int_equal(guard_install(m.addr + 1, pg, 0), -EINVAL);
	assert_int_equal(guard_install(m.addr, 0, 0), -EINVAL);
	assert_int_equal(guard_install(m.addr, SIZE_MAX, 0), -EINVAL);
	assert_int_equal(guard_install(m.addr, SIZE_MAX - pg + 2, 0), -EINVAL);
	assert_int_equal(guard_install((void *)(UINTPTR_MAX & ~(pg - 1)), 2 * pg, 0), -EINVAL);
	assert_int_equal(guard_install(m.addr, pg, 0x80), -EINVAL);
	assert_int_equal(guard_install(m.addr, pg, GUARD_NATIVE | GUARD_FALLBACK), -EINVAL);
	assert_int_equal(guard_remove(NULL, pg, 0), -EINVAL);
	assert_int_equal(guard_remove(m.addr + 1, pg, 0), -EINVAL);
	assert_int_equal(guard_remove(m.addr, 0, 0), -EINVAL);
	assert_int_equal(guard_remove(m.addr, SIZE_MAX, 0), -EINVAL);
	assert_int_equal(guard_remove(m.addr, pg, 0x80), -EINVAL);
	assert_int_equal(guard_remove(m.addr, pg, GUARD_NATIVE | GUARD_FALLBACK), -EINVAL);
	/* nothing happened */
	assert_string_equal(query_str(m.addr, 2 * pg), "00");
	tmap_free(&m);
}

/* A length that is not a page multiple is rounded up, as by madvise(2). */
static void length_rounded_up(void **state)
{
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 4, &m);
	assert_int_equal(guard_install(m.addr + pg, pg + 1, 0), 0);
	assert_string_equal(query_str(m.addr, 4 * pg), want_native(T_ANON) ? "0110" : "0220");
	assert_int_equal(guard_remove(m.addr + pg, 1, 0), 0);
	assert_string_equal(query_str(m.addr, 4 * pg), want_native(T_ANON) ? "0010" : "0020");
	assert_int_equal(guard_remove(m.addr, 4 * pg, 0), 0);
	tmap_free(&m);
}

/* A hole in the range: -ENOMEM, and no page of it is left guarded. */
static void partly_unmapped(void **state)
{
	unsigned int modes[] = { 0, GUARD_FALLBACK };
	struct tmap m;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		tmap_new(T_ANON, 6, &m);
		assert_int_equal(munmap(m.addr + 3 * pg, pg), 0);
		assert_int_equal(guard_install(m.addr, 6 * pg, modes[i]), -ENOMEM);
		assert_string_equal(query_str(m.addr, 3 * pg), "000");
		assert_string_equal(query_str(m.addr + 4 * pg, 2 * pg), "00");
		assert_int_equal(guard_query(m.addr, 6 * pg, (unsigned char[6]){ 0 }), -ENOMEM);
		/* single unmapped page */
		assert_int_equal(guard_install(m.addr + 3 * pg, pg, modes[i]), -ENOMEM);
		/* removal over the hole: -ENOMEM, and nothing removed */
		assert_int_equal(guard_install(m.addr + pg, pg, modes[i]), 0);
		assert_int_equal(guard_remove(m.addr, 6 * pg, modes[i]), -ENOMEM);
		assert_string_equal(query_str(m.addr, 3 * pg), modes[i] || !want_native(T_ANON)
								       ? "020" : "010");
		assert_int_equal(guard_remove(m.addr, 3 * pg, modes[i]), 0);
		munmap(m.addr, 6 * pg);
	}
}

/* Removing what was never guarded is a no-op, as with the kernel. */
static void remove_unguarded(void **state)
{
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 3, &m);
	assert_int_equal(guard_remove(m.addr, 3 * pg, 0), 0);
	assert_int_equal(guard_remove(m.addr, 3 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(m.addr[pg], 0x5a);
	assert_int_equal(page_prot(m.addr + pg), PROT_READ | PROT_WRITE);
	tmap_free(&m);
}

/* The address of the [vvar] mapping: VM_PFNMAP | VM_IO, in every process. */
static char *special_mapping(size_t *len)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uintptr_t s = 0, e = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vvar]") && sscanf(line, "%lx-%lx", &s, &e) == 2)
			break;
	fclose(f);
	*len = e - s;
	return (char *)s;
}

/* VM_PFNMAP/VM_IO: native and fallback both refuse, nothing changes. */
static void pfnmap_mapping(void **state)
{
	size_t len;
	char *vvar = special_mapping(&len);

	(void)state;
	if (!vvar) {
		printf("# no [vvar] mapping in this process\n");
		skip();
	}
	assert_int_equal(guard_install(vvar, pg, 0), -EINVAL);
	assert_int_equal(guard_install(vvar, pg, GUARD_FALLBACK), -EINVAL);
	assert_int_equal(guard_install(vvar, pg, GUARD_NATIVE), -EOPNOTSUPP);
	assert_int_equal(page_prot(vvar), PROT_READ);
	assert_int_equal(guard_remove(vvar, pg, 0), 0);
	assert_int_equal(page_prot(vvar), PROT_READ);
	/*
	 * The whole of it: PAGEMAP_SCAN skips VM_PFNMAP VMAs, so the
	 * multi-page path sees what looks like a hole; it must still say
	 * -EINVAL, not -ENOMEM.
	 */
	if (len > pg) {
		assert_int_equal(guard_install(vvar, len, 0), -EINVAL);
		assert_int_equal(guard_install(vvar, len, GUARD_FALLBACK), -EINVAL);
		assert_int_equal(guard_install(vvar, len, GUARD_NATIVE), -EOPNOTSUPP);
		assert_int_equal(page_prot(vvar + len - pg), PROT_READ);
	}
}

/* mlocked memory: the kernel refuses native guards, the fallback takes it. */
static void mlocked_falls_back(void **state)
{
	struct tmap m;
	void *fault;

	(void)state;
	tmap_new(T_ANON, 3, &m);
	if (mlock(m.addr, 3 * pg)) {
		printf("# mlock: %s\n", strerror(errno));
		tmap_free(&m);
		skip();
	}
	assert_int_equal(guard_install(m.addr + pg, pg, GUARD_NATIVE), -EOPNOTSUPP);
	assert_int_equal(guard_install(m.addr + pg, pg, 0), 0);
	printf("# mlocked: method %s\n", query_method(m.addr + pg, pg));
	assert_string_equal(query_str(m.addr, 3 * pg), "020");
	assert_int_equal(access_in_child(m.addr + pg, true, &fault), SIGSEGV);
	assert_ptr_equal(fault, m.addr + pg);
	assert_int_equal(guard_remove(m.addr + pg, pg, 0), 0);
	/* the kernel will not discard locked pages: the data is kept */
	assert_int_equal(m.addr[pg], 0x5a);
	assert_string_equal(query_str(m.addr, 3 * pg), "000");
	munlock(m.addr, 3 * pg);
	tmap_free(&m);
}

/*
 * A range over two VMAs, plain then mlocked: native guards the first and
 * stops at the second. With GUARD_NATIVE the call must fail and take the
 * first VMA's new guards away again, but keep a guard that was there
 * before the call; without it, the whole range ends up under the fallback.
 */
static void rollback_midway(void **state)
{
	struct tmap m;

	(void)state;
	if (!want_native(T_ANON)) {
		printf("# native anonymous guards not expected here: no native midway failure\n");
		skip();
	}
	tmap_new(T_ANON, 6, &m);
	if (mlock(m.addr + 3 * pg, 3 * pg)) {
		tmap_free(&m);
		skip();
	}
	assert_int_equal(guard_install(m.addr + pg, pg, GUARD_NATIVE), 0);
	assert_int_equal(guard_install(m.addr, 6 * pg, GUARD_NATIVE), -EOPNOTSUPP);
	if (want_caps(NULL) & (GUARD_CAP_PAGEMAP | GUARD_CAP_PAGEMAP_SCAN))
		assert_string_equal(query_str(m.addr, 6 * pg), "010000");
	assert_int_equal(guard_remove(m.addr, 6 * pg, 0), 0);
	assert_int_equal(guard_install(m.addr, 6 * pg, 0), 0);
	printf("# plain+mlocked range: %s\n", query_str(m.addr, 6 * pg));
	assert_string_equal(query_str(m.addr, 6 * pg), "222222");
	assert_int_equal(guard_remove(m.addr, 6 * pg, 0), 0);
	assert_string_equal(query_str(m.addr, 6 * pg), "000000");
	assert_int_equal(page_prot(m.addr), PROT_READ | PROT_WRITE);
	assert_int_equal(page_prot(m.addr + 4 * pg), PROT_READ | PROT_WRITE);
	munlock(m.addr + 3 * pg, 3 * pg);
	tmap_free(&m);
}

/*
 * A hole anywhere in a multi-page range (inside, at the start, past the
 * end) is refused before anything is done: not one page guarded, a guard
 * that was there stays, and the data of the mapped pages is still there,
 * which it would not be had the kernel guarded them and the library taken
 * the guards away again.
 */
static void hole_refused_first(void **state)
{
	static const struct {
		size_t off, len;	/* in pages, from the mapping's start */
	} ranges[] = { { 0, 6 }, { 4, 4 }, { 0, 8 } };
	unsigned int modes[] = { 0, GUARD_FALLBACK };
	struct tmap m;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++) {
			char *hole;

			/* pages 3, 6 and 7 unmapped: [1] and [2] also run past the end */
			tmap_new(T_ANON, 8, &m);
			hole = m.addr + 3 * pg;
			assert_int_equal(munmap(hole, pg), 0);
			assert_int_equal(munmap(m.addr + 6 * pg, 2 * pg), 0);
			assert_int_equal(guard_install(m.addr + pg, pg, modes[i]), 0);
			if (ranges[r].off == 4)
				assert_int_equal(guard_install(m.addr + 5 * pg, pg, modes[i]), 0);
			assert_int_equal(guard_install(m.addr + ranges[r].off * pg,
						       ranges[r].len * pg, modes[i]), -ENOMEM);
			printf("# hole in pages %zu..%zu, flags %#x: %s", ranges[r].off,
			       ranges[r].off + ranges[r].len, modes[i], query_str(m.addr, 3 * pg));
			printf(" %s\n", query_str(m.addr + 4 * pg, 2 * pg));
			assert_string_equal(query_str(m.addr, 3 * pg),
					    modes[i] || !want_native(T_ANON) ? "020" : "010");
			assert_string_equal(query_str(m.addr + 4 * pg, 2 * pg),
					    ranges[r].off != 4 ? "00"
					    : modes[i] || !want_native(T_ANON) ? "02" : "01");
			assert_int_equal(m.addr[0], 0x5a);
			assert_int_equal(m.addr[2 * pg], 0x5a);
			assert_int_equal(m.addr[3 * pg - 1], 0x5a);
			assert_int_equal(m.addr[4 * pg], 0x5a);
			/* one unmapped page: the kernel's answer, nothing done */
			assert_int_equal(guard_remove(hole, pg, modes[i]), -ENOMEM);
			assert_int_equal(guard_remove(hole, pg, 0), -ENOMEM);
			assert_int_equal(guard_remove(m.addr, 3 * pg, 0), 0);
			assert_int_equal(guard_remove(m.addr + 4 * pg, 2 * pg, 0), 0);
			munmap(m.addr, 6 * pg);
		}
	}
}

/*
 * plain (3 pages) then mlocked (3 pages), a guard on page `prior`, then an
 * install of all six with GUARD_NATIVE: the kernel guards the plain VMA,
 * refuses the mlocked one, and the library must take back exactly what it
 * added. 0 and the state in *out, or why not (a skip).
 */
static const char *midway_failure(char *addr, int prior, char *out)
{
	if (mlock(addr + 3 * pg, 3 * pg))
		return "mlock failed";
	if (prior >= 0 && guard_install(addr + prior * pg, pg, GUARD_NATIVE))
		return "no native guard";
	if (guard_install(addr, 6 * pg, GUARD_NATIVE) != -EOPNOTSUPP)
		return "the install did not fail with -EOPNOTSUPP";
	strcpy(out, query_str(addr, 6 * pg));
	munlock(addr + 3 * pg, 3 * pg);
	guard_remove(addr, 6 * pg, 0);
	return NULL;
}

static bool midway_testable(void)
{
	if (!want_native(T_ANON) || !query_reports()) {
		printf("# needs native anonymous guards the kernel reports\n");
		return false;
	}
	return true;
}

/*
 * Guards already inside an mlocked VMA when an install fails there: the
 * kernel removes a guard from an mlocked VMA but won't install one, so a
 * rollback that took all guards away and put the old ones back lost them.
 * Pages: plain 0-1, mlocked 2-3, plain 4-5; guards on 1, 3 and 4 (4 in the
 * same run of guards as 3, across the VMA boundary).
 */
static void rollback_keeps_locked_guards(void **state)
{
	static const int prior[] = { 1, 3, 4 };
	struct tmap m;

	(void)state;
	if (!midway_testable())
		skip();
	tmap_new(T_ANON, 6, &m);
	/*
	 * Guarded first: no guard goes into an mlocked VMA. On-fault: mlock()
	 * would populate, and fail (ENOMEM) at the guard.
	 */
	for (size_t i = 0; i < sizeof(prior) / sizeof(prior[0]); i++)
		assert_int_equal(guard_install(m.addr + prior[i] * pg, pg, GUARD_NATIVE), 0);
	if (mlock2(m.addr + 2 * pg, 2 * pg, MLOCK_ONFAULT)) {
		printf("# mlock: %s\n", strerror(errno));
		guard_remove(m.addr, 6 * pg, 0);
		tmap_free(&m);
		skip();
	}
	assert_string_equal(query_str(m.addr, 6 * pg), "010110");
	/* all six: the kernel guards page 0 and stops at the mlocked VMA */
	assert_int_equal(guard_install(m.addr, 6 * pg, GUARD_NATIVE), -EOPNOTSUPP);
	assert_string_equal(query_str(m.addr, 6 * pg), "010110");
	/* only the mlocked pages: the kernel does nothing */
	assert_int_equal(guard_install(m.addr + 2 * pg, 2 * pg, GUARD_NATIVE), -EOPNOTSUPP);
	assert_string_equal(query_str(m.addr, 6 * pg), "010110");
	assert_int_equal(m.addr[2 * pg], 0x5a);	/* the refused VMA's data stays */
	munlock(m.addr + 2 * pg, 2 * pg);
	assert_int_equal(guard_remove(m.addr, 6 * pg, 0), 0);
	tmap_free(&m);
}

/*
 * The kept /proc/self/pagemap names the mm it was opened in: a child of
 * fork() must use its own. The parent has a guard on page 1, the child
 * moves it to page 2 before its failing install: rolled back with the
 * child's own snapshot the child ends with "001000"; with the parent's it
 * would put the guard on page 1 back ("011000" or "010000").
 */
static void kept_pagemap_after_fork(void **state)
{
	struct tmap m;
	char out[8];
	int status;
	pid_t pid;

	(void)state;
	if (!midway_testable())
		skip();
	tmap_new(T_ANON, 6, &m);
	/* a multi-page install: the library opens and keeps its descriptor */
	assert_int_equal(guard_install(m.addr, 2 * pg, 0), 0);
	assert_int_equal(guard_remove(m.addr, 6 * pg, 0), 0);
	assert_int_equal(guard_install(m.addr + pg, pg, 0), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *why;

		if (guard_remove(m.addr + pg, pg, 0) || strcmp(query_str(m.addr, 6 * pg), "000000"))
			_exit(2);
		why = midway_failure(m.addr, 2, out);
		if (why) {
			printf("# child: %s\n", why);
			_exit(77);
		}
		printf("# child after its failed install: %s (want 001000)\n", out);
		_exit(strcmp(out, "001000") ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
	/* and the parent's descriptor still reads the parent */
	assert_string_equal(query_str(m.addr, 6 * pg), "010000");
	assert_null(midway_failure(m.addr, -1, out));
	assert_string_equal(out, "010000");
	tmap_free(&m);
}

/* The number of the library's kept pagemap descriptor, or -1. */
static int kept_proc_fd(const char *name)
{
	char want[64], link[64], path[64];

	snprintf(want, sizeof(want), "/proc/%d/%s", (int)getpid(), name);
	for (int fd = 0; fd < 1024; fd++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!strcmp(link, want))
			return fd;
	}
	return -1;
}

/*
 * A program that closes descriptors it does not own (closefrom() in a
 * daemon) can leave the library's number naming another file. Here a
 * memfd takes its place: the next snapshot must notice, open pagemap
 * again, and roll back exactly as before.
 */
static void kept_pagemap_replaced(void **state)
{
	struct tmap m;
	char out[8];
	int fd, other;

	(void)state;
	if (!midway_testable() || !(want_caps(NULL) & GUARD_CAP_PAGEMAP_SCAN))
		skip();
	tmap_new(T_ANON, 6, &m);
	assert_int_equal(guard_install(m.addr, 2 * pg, 0), 0);
	assert_int_equal(guard_remove(m.addr, 2 * pg, 0), 0);
	fd = kept_proc_fd("pagemap");
	printf("# the library's pagemap descriptor: %d\n", fd);
	assert_true(fd >= 0);
	other = memfd_create("not-pagemap", MFD_CLOEXEC);
	assert_true(other >= 0);
	assert_int_equal(dup2(other, fd), fd);
	assert_null(midway_failure(m.addr, 1, out));
	printf("# after the descriptor was replaced: %s (want 010000)\n", out);
	assert_string_equal(out, "010000");
	assert_true(kept_proc_fd("pagemap") >= 0);
	assert_string_equal(query_str(m.addr, 6 * pg), "000000");
	close(fd);
	close(other);
	tmap_free(&m);
}

/*
 * A fork() child drops the library's kept descriptors (they name the
 * parent's mm), but only those still the library's: a file the program
 * put on that number (dup2() over it) stays open in the child, and is
 * the program's file there.
 */
static void fork_child_keeps_programs_file(void **state)
{
	struct tmap m;
	int fd, other, status;
	struct stat want;
	pid_t pid;

	(void)state;
	tmap_new(T_ANON, 2, &m);
	/* a fallback call keeps /proc/self/maps (where PROCMAP_QUERY works) */
	assert_int_equal(guard_install(m.addr, pg, GUARD_FALLBACK), 0);
	fd = kept_proc_fd("maps");
	if (fd < 0)
		fd = kept_proc_fd("pagemap");
	if (fd < 0) {
		printf("# the library keeps no /proc descriptor on this kernel: nothing to replace\n");
		assert_int_equal(guard_remove(m.addr, pg, 0), 0);
		tmap_free(&m);
		skip();
	}
	other = memfd_create("the-programs", 0);
	assert_true(other >= 0);
	assert_int_equal(dup2(other, fd), fd);
	assert_int_equal(fstat(other, &want), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct stat st;

		/* the library is used in the child too, after its handler ran */
		if (guard_remove(m.addr, pg, 0))
			_exit(2);
		_exit(fstat(fd, &st) ? 1 : st.st_dev != want.st_dev || st.st_ino != want.st_ino ? 3 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	printf("# child: %s\n", WEXITSTATUS(status) == 1 ? "the program's descriptor was closed"
				  : WEXITSTATUS(status) == 3 ? "another file on the program's number"
				  : WEXITSTATUS(status) ? "guard_remove() failed" : "the program's file, open");
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(guard_remove(m.addr, pg, 0), 0);
	close(fd);
	close(other);
	tmap_free(&m);
}

/* errno is the caller's, after success and after failure. */
static void errno_preserved(void **state)
{
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 2, &m);
	errno = 4242;
	assert_int_equal(guard_install(m.addr, pg, 0), 0);
	assert_int_equal(errno, 4242);
	assert_int_equal(guard_remove(m.addr, pg, 0), 0);
	assert_int_equal(errno, 4242);
	assert_int_equal(guard_install(m.addr, pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_remove(m.addr, pg, GUARD_FALLBACK), 0);
	assert_int_equal(errno, 4242);
	assert_int_equal(guard_install(NULL, pg, 0), -EINVAL);
	assert_int_equal(errno, 4242);
	munmap(m.addr + pg, pg);
	assert_int_equal(guard_install(m.addr, 2 * pg, 0), -ENOMEM);
	assert_int_equal(errno, 4242);
	munmap(m.addr, pg);
}

/* The number of open descriptors of this process; errno as it was. */
static int open_fds(void)
{
	int n = 0, err = errno;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	errno = err;
	return n;
}

/* Is fd still the file other is (the same memfd), unread at offset 0? */
static void assert_same_file(int fd, int other)
{
	struct stat a, b;

	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstat(other, &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	assert_int_equal(lseek(other, 0, SEEK_CUR), 0);
}

/*
 * The fallback calls libc only where a system call failed or a descriptor
 * is to be opened, and keeps errno there itself: its kept maps descriptor
 * replaced by another file, then closed (its fstat() fails), makes the
 * next calls open maps again.
 *
 * That descriptor is the one every fallback call asks PROCMAP_QUERY on.
 * On a kernel without PROCMAP_QUERY (before 6.11: Debian 12's default
 * 6.1) the fallback reads the text of the maps file instead, where it
 * reads it at all, opened and closed each time: there the library keeps
 * no maps descriptor (LIBGUARD_NO_PROCMAP_QUERY makes any kernel one of
 * those for this check). What holds
 * on every kernel is checked on every kernel: errno kept through each
 * call and each open; a number the library once kept, now another file's,
 * is neither closed nor read, and misleads no call; no call leaks a
 * descriptor (twenty calls, at most one reopen).
 */
static void errno_preserved_fallback_reopen(void **state)
{
	static const char fake[] = "0-ffffffffffff000 rw-p 00000000 00:00 0\n";
	struct tmap m;
	int fd, other, fds, lib_fd;
	bool query = procmap_query_works() && !getenv("LIBGUARD_NO_PROCMAP_QUERY");

	(void)state;
	tmap_new(T_ANON, 2, &m);
	assert_int_equal(guard_install(m.addr, pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_remove(m.addr, pg, GUARD_FALLBACK), 0);
	fd = kept_proc_fd("maps");
	printf("# the library's maps descriptor: %d; %s\n", fd,
	       query ? "PROCMAP_QUERY works: every fallback call asks it on that descriptor"
		     : "no PROCMAP_QUERY (Linux before 6.11): the fallback reads the maps text, "
		       "opened per read, and keeps no descriptor");
	if (query)
		assert_true(fd >= 0);
	else
		assert_int_equal(fd, -1);
	other = memfd_create("not-maps", MFD_CLOEXEC);
	assert_true(other >= 0);
	/* text that would read as a VMA over everything, were it taken for maps */
	assert_int_equal(write(other, fake, strlen(fake)), (ssize_t)strlen(fake));
	assert_int_equal(lseek(other, 0, SEEK_SET), 0);
	if (fd >= 0)
		assert_int_equal(dup2(other, fd), fd);
	errno = 4242;
	assert_int_equal(guard_install(m.addr, pg, GUARD_FALLBACK), 0);
	assert_int_equal(errno, 4242);
	if (query)
		assert_true(kept_proc_fd("maps") >= 0);
	if (fd >= 0)
		assert_same_file(fd, other);
	assert_string_equal(query_str(m.addr, 2 * pg), "20");
	assert_int_equal(guard_remove(m.addr, pg, GUARD_FALLBACK), 0);
	assert_int_equal(errno, 4242);
	fds = open_fds();
	for (int i = 0; i < 10; i++) {
		assert_int_equal(guard_install(m.addr, pg, GUARD_FALLBACK), 0);
		assert_int_equal(guard_remove(m.addr, pg, GUARD_FALLBACK), 0);
	}
	assert_int_equal(errno, 4242);
	assert_true(open_fds() - fds <= 1);
	if (fd >= 0)
		assert_same_file(fd, other);
	/* the library's own descriptor closed under it: a reopened one, or (no
	 * PROCMAP_QUERY, not reopened) the replaced number it last kept */
	lib_fd = query ? kept_proc_fd("maps") : fd;
	if (lib_fd >= 0)
		close(lib_fd);
	fds = open_fds();
	assert_int_equal(guard_install(m.addr, pg, GUARD_FALLBACK), 0);
	assert_int_equal(errno, 4242);
	assert_int_equal(guard_remove(m.addr, pg, GUARD_FALLBACK), 0);
	assert_int_equal(errno, 4242);
	assert_true(open_fds() - fds <= 1);
	assert_string_equal(query_str(m.addr, 2 * pg), "00");
	munmap(m.addr + pg, pg);
	assert_int_equal(guard_install(m.addr, 2 * pg, GUARD_FALLBACK), -ENOMEM);
	assert_int_equal(errno, 4242);
	if (fd >= 0 && fd != lib_fd)
		close(fd);
	close(other);
	munmap(m.addr, pg);
}

/* Threads installing and removing while others use the neighbours. */
static void threads_disjoint(void **state)
{
	(void)state;
	assert_int_equal(guard_threads(4, 200, 0, want_native(T_ANON) ? GUARD_QUERY_NATIVE
								    : GUARD_QUERY_FALLBACK), 0);
}

/*
 * guard_install2(): the method it reports is the one guard_query() sees,
 * for each backing; 0 on failure.
 */
static void install2_method(void **state)
{
	(void)state;
	for (int k = 0; k < T_NKINDS; k++) {
		unsigned int method = 99, want;
		struct tmap m;

		if (tmap_new((enum tkind)k, 4, &m))
			continue;
		want = want_native((enum tkind)k) ? GUARD_METHOD_NATIVE : GUARD_METHOD_FALLBACK;
		assert_int_equal(guard_install2(m.addr + pg, 2 * pg, 0, &method), 0);
		assert_int_equal(method, want);
		assert_string_equal(query_str(m.addr, 4 * pg), want == GUARD_METHOD_NATIVE ? "0110" : "0220");
		method = 99;
		assert_int_equal(guard_install2(m.addr + 3 * pg, pg, GUARD_FALLBACK, &method), 0);
		assert_int_equal(method, GUARD_METHOD_FALLBACK);
		assert_int_equal(guard_install2(m.addr, pg, 0, NULL), 0);
		assert_int_equal(guard_remove(m.addr, 4 * pg, 0), 0);
		method = 99;
		assert_int_equal(guard_install2(m.addr + 1, pg, 0, &method), -EINVAL);
		assert_int_equal(method, 0);
		assert_string_equal(query_str(m.addr, 4 * pg), "0000");
		tmap_free(&m);
	}
}

/*
 * GUARD_FRESH: the same guards without the look first; on failure (a hole,
 * a VMA refused midway with GUARD_NATIVE) not one guard is left in the
 * range, and the call's error is the same as without the flag.
 */
static void fresh_install(void **state)
{
	unsigned int method = 99;
	struct tmap m;

	(void)state;
	for (int k = 0; k < T_NKINDS; k++) {
		if (tmap_new((enum tkind)k, 6, &m))
			continue;
		assert_int_equal(guard_install2(m.addr + pg, 4 * pg, GUARD_FRESH, &method), 0);
		assert_int_equal(method, want_native((enum tkind)k) ? GUARD_METHOD_NATIVE
								     : GUARD_METHOD_FALLBACK);
		assert_string_equal(query_str(m.addr, 6 * pg),
				    method == GUARD_METHOD_NATIVE ? "011110" : "022220");
		assert_int_equal(guard_remove(m.addr, 6 * pg, 0), 0);
		tmap_free(&m);
	}
	/* a hole: -ENOMEM, nothing guarded */
	tmap_new(T_ANON, 6, &m);
	assert_int_equal(munmap(m.addr + 3 * pg, pg), 0);
	assert_int_equal(guard_install(m.addr, 6 * pg, GUARD_FRESH), -ENOMEM);
	assert_string_equal(query_str(m.addr, 3 * pg), "000");
	assert_string_equal(query_str(m.addr + 4 * pg, 2 * pg), "00");
	assert_int_equal(guard_install(m.addr, 6 * pg, GUARD_FRESH | GUARD_FALLBACK), -ENOMEM);
	assert_string_equal(query_str(m.addr, 3 * pg), "000");
	assert_int_equal(page_prot(m.addr), PROT_READ | PROT_WRITE);
	munmap(m.addr, 3 * pg);
	munmap(m.addr + 4 * pg, 2 * pg);
	/* plain then mlocked: GUARD_NATIVE refuses, leaving nothing; else all fallback */
	if (!want_native(T_ANON)) {
		printf("# native anonymous guards not expected here: no native midway failure\n");
		return;
	}
	tmap_new(T_ANON, 6, &m);
	if (mlock(m.addr + 3 * pg, 3 * pg)) {
		printf("# mlock: %s\n", strerror(errno));
		tmap_free(&m);
		return;
	}
	assert_int_equal(guard_install2(m.addr, 6 * pg, GUARD_FRESH | GUARD_NATIVE, &method),
			 -EOPNOTSUPP);
	assert_int_equal(method, 0);
	assert_string_equal(query_str(m.addr, 6 * pg), "000000");
	assert_int_equal(guard_install2(m.addr, 6 * pg, GUARD_FRESH, &method), 0);
	assert_int_equal(method, GUARD_METHOD_FALLBACK);
	assert_string_equal(query_str(m.addr, 6 * pg), "222222");
	assert_int_equal(guard_remove(m.addr, 6 * pg, 0), 0);
	assert_int_equal(page_prot(m.addr + 4 * pg), PROT_READ | PROT_WRITE);
	munlock(m.addr + 3 * pg, 3 * pg);
	tmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(overflow_anon),
		cmocka_unit_test(overflow_shmem),
		cmocka_unit_test(overflow_file),
		cmocka_unit_test(overflow_readonly),
		cmocka_unit_test(overflow_anon_fb),
		cmocka_unit_test(overflow_shmem_fb),
		cmocka_unit_test(overflow_file_fb),
		cmocka_unit_test(overflow_readonly_fb),
		cmocka_unit_test(native_flag),
		cmocka_unit_test(bad_arguments),
		cmocka_unit_test(length_rounded_up),
		cmocka_unit_test(partly_unmapped),
		cmocka_unit_test(remove_unguarded),
		cmocka_unit_test(pfnmap_mapping),
		cmocka_unit_test(rollback_keeps_locked_guards),
		cmocka_unit_test(mlocked_falls_back),
		cmocka_unit_test(rollback_midway),
		cmocka_unit_test(hole_refused_first),
		cmocka_unit_test(kept_pagemap_after_fork),
		cmocka_unit_test(fork_child_keeps_programs_file),
		cmocka_unit_test(kept_pagemap_replaced),
		cmocka_unit_test(errno_preserved),
		cmocka_unit_test(errno_preserved_fallback_reopen),
		cmocka_unit_test(threads_disjoint),
		cmocka_unit_test(install2_method),
		cmocka_unit_test(fresh_install),
	};

	guardtest_init();
	printf("# guard_probe() = %#x, LIBGUARD_FORCE_FALLBACK %s\n", guard_probe(),
	       forced_fallback() ? "set: every guard must be the fallback" : "unset");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
