// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_map_file() / guard_unmap(): guards right before and after the
 * file bytes fault with SIGSEGV at the guard, by either method, for a
 * page-cache file (shared, private, read-only) and a memfd; the VMA count
 * is the documented one; past EOF is SIGBUS, not SIGSEGV; the error
 * contract leaves nothing mapped.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"
#include "helpers/replace.h"

static int all_vmas(void)
{
	return vmas_in(0, UINTPTR_MAX);
}

/* A file of pages pages (page i filled with 'A' + i) of the kind; -1 = skip. */
static int file_of(enum tkind kind, size_t pages, const char **why)
{
	char path[PATH_MAX], *buf = malloc(pages * pg);
	const char *dir;
	int fd;

	for (size_t i = 0; i < pages; i++)
		memset(buf + i * pg, 'A' + (int)i, pg);
	if (kind == T_SHMEM) {
		fd = memfd_create("map-file", MFD_CLOEXEC);
	} else {
		dir = scratch_dir(why);
		if (!dir) {
			free(buf);
			return -1;
		}
		snprintf(path, sizeof(path), "%s/map-file-XXXXXX", dir);
		fd = mkostemp(path, O_CLOEXEC);
		if (fd >= 0 && kind == T_READONLY) {
			int ro;

			assert_int_equal(pwrite(fd, buf, pages * pg, 0), (ssize_t)(pages * pg));
			ro = open(path, O_RDONLY | O_CLOEXEC);
			close(fd);
			fd = ro;
		}
		unlink(path);
	}
	assert_true(fd >= 0);
	if (kind != T_READONLY)
		assert_int_equal(pwrite(fd, buf, pages * pg, 0), (ssize_t)(pages * pg));
	free(buf);
	return fd;
}

/* Do native guards take this kind of file mapping here? */
static bool native_for(enum tkind kind)
{
	return want_native(kind);
}

static void guarded_case(enum tkind kind, int flags, off_t offset)
{
	int prot = kind == T_READONLY ? PROT_READ : PROT_READ | PROT_WRITE;
	bool native = native_for(kind), lead_anon = offset < (off_t)pg;
	const char *why = NULL;
	int fd = file_of(kind, 6, &why), want_vmas;
	char want[] = "x00xx";
	char *p;
	void *fault;

	if (fd < 0) {
		printf("# %s\n", why);
		skip();
	}
	errno = 1234;
	p = guard_map_file(fd, offset, 2 * pg, prot, flags, pg, 2 * pg);
	assert_ptr_not_equal(p, MAP_FAILED);
	assert_int_equal(errno, 1234);
	/* the file's bytes, from offset */
	assert_int_equal(p[0], 'A' + (int)(offset / pg));
	assert_int_equal(p[2 * pg - 1], 'A' + (int)(offset / pg) + 1);
	/* one byte either side of the data is a guard */
	assert_int_equal(access_in_child(p - 1, false, &fault), SIGSEGV);
	assert_ptr_equal(fault, p - 1);
	assert_int_equal(access_in_child(p + 2 * pg, false, &fault), SIGSEGV);
	assert_ptr_equal(fault, p + 2 * pg);
	assert_int_equal(access_in_child(p + 4 * pg - 1, false, &fault), SIGSEGV);
	assert_int_equal(access_in_child(p, prot & PROT_WRITE, &fault), 0);
	assert_int_equal(access_in_child(p + 2 * pg - 1, prot & PROT_WRITE, &fault), 0);
	/* an anonymous lead is PROT_NONE: found by faulting it reads as fallback */
	want[0] = lead_anon ? (want_native(T_ANON) && query_reports() ? '1' : '2') : native ? '1' : '2';
	want[3] = want[4] = native ? '1' : '2';
	assert_string_equal(query_str(p - pg, 5 * pg), want);
	/* documented VMA count: one, plus an anonymous lead, or PROT_NONE VMAs */
	want_vmas = native ? 1 + lead_anon : 3;
	printf("# %s %s offset %lld: %d VMA(s) for data and guards (%s)\n", kind_name(kind),
	       flags & MAP_SHARED ? "shared" : "private", (long long)offset, vmas_in((uintptr_t)(p - pg), (uintptr_t)(p + 4 * pg)),
	       native ? "native" : "fallback");
	assert_int_equal(vmas_in((uintptr_t)(p - pg), (uintptr_t)(p + 4 * pg)), want_vmas);
	if (prot & PROT_WRITE) {
		char c;

		p[5] = 'z';
		assert_int_equal(pread(fd, &c, 1, offset + 5), 1);
		assert_int_equal(c, flags & MAP_SHARED ? 'z' : 'A' + (int)(offset / pg));
	}
	assert_int_equal(guard_unmap(p, 2 * pg), 0);
	assert_int_equal(page_prot(p - pg), -1);
	assert_int_equal(page_prot(p), -1);
	assert_int_equal(page_prot(p + 3 * pg), -1);
	close(fd);
}

static void file_shared(void **s) { (void)s; guarded_case(T_FILE, MAP_SHARED, 2 * (off_t)pg); }
static void file_shared_at0(void **s) { (void)s; guarded_case(T_FILE, MAP_SHARED, 0); }
static void file_private(void **s) { (void)s; guarded_case(T_FILE, MAP_PRIVATE, (off_t)pg); }
static void file_readonly(void **s) { (void)s; guarded_case(T_READONLY, MAP_SHARED, 2 * (off_t)pg); }
static void memfd_shared(void **s) { (void)s; guarded_case(T_SHMEM, MAP_SHARED, (off_t)pg); }
static void memfd_at0(void **s) { (void)s; guarded_case(T_SHMEM, MAP_SHARED, 0); }

/* A file shorter than the mapping: SIGBUS past EOF, SIGSEGV in the guard. */
static void short_file(void **state)
{
	int fd = file_of(T_SHMEM, 1, NULL);
	char *p;
	void *fault;

	(void)state;
	p = guard_map_file(fd, 0, 3 * pg, PROT_READ, MAP_SHARED, 0, pg);
	assert_ptr_not_equal(p, MAP_FAILED);
	assert_int_equal(access_in_child(p, false, &fault), 0);
	assert_int_equal(access_in_child(p + pg, false, &fault), SIGBUS);
	assert_int_equal(access_in_child(p + 3 * pg - 1, false, &fault), SIGBUS);
	assert_int_equal(access_in_child(p + 3 * pg, false, &fault), SIGSEGV);
	assert_ptr_equal(fault, p + 3 * pg);
	assert_int_equal(guard_unmap(p, 3 * pg), 0);
	close(fd);
}

static void errors(void **state)
{
	int fd = file_of(T_SHMEM, 4, NULL), rw = PROT_READ | PROT_WRITE, fds[2], ro;
	int before = all_vmas();
	size_t huge = SIZE_MAX & ~(pg - 1);
	char fdpath[64];

	(void)state;
	FAILS(EBADF, guard_map_file(-1, 0, pg, rw, MAP_SHARED, pg, pg));
	FAILS(EBADF, guard_map_file(999, 0, pg, rw, MAP_SHARED, pg, pg));
	FAILS(EINVAL, guard_map_file(fd, 1, pg, rw, MAP_SHARED, pg, pg));
	FAILS(EINVAL, guard_map_file(fd, -(off_t)pg, pg, rw, MAP_SHARED, pg, pg));
	FAILS(EINVAL, guard_map_file(fd, 0, 0, rw, MAP_SHARED, pg, pg));
	FAILS(EINVAL, guard_map_file(fd, 0, SIZE_MAX, rw, MAP_SHARED, pg, pg));
	FAILS(EINVAL, guard_map_file(fd, 0, pg, rw, MAP_SHARED, pg + 1, pg));
	FAILS(EINVAL, guard_map_file(fd, 0, pg, rw, MAP_SHARED, pg, 1));
	FAILS(EINVAL, guard_map_file(fd, 0, pg, rw, MAP_SHARED, huge, pg));
	FAILS(EINVAL, guard_map_file(fd, 0, pg, rw, MAP_SHARED, pg, huge));
	FAILS(EINVAL, guard_map_file(fd, 0, huge, rw, MAP_SHARED, 0, pg));
	FAILS(EINVAL, guard_map_file(fd, 0, pg, rw, MAP_SHARED | MAP_FIXED, pg, pg));
	FAILS(EINVAL, guard_map_file(fd, 0, pg, rw, MAP_SHARED | MAP_ANONYMOUS, pg, pg));
	FAILS(EINVAL, guard_map_file(fd, 0, pg, rw, MAP_SHARED_VALIDATE, pg, pg));
	FAILS(EINVAL, guard_map_file(fd, 0, pg, rw, 0, pg, pg));
	FAILS(EINVAL, guard_map_file(fd, 0, pg, 0x100, MAP_SHARED, pg, pg));
	/* offsets at and past the end of the file; beyond off_t */
	FAILS(ENXIO, guard_map_file(fd, 4 * (off_t)pg, pg, rw, MAP_SHARED, pg, pg));
	FAILS(ENXIO, guard_map_file(fd, 100 * (off_t)pg, pg, rw, MAP_SHARED, 0, 0));
	FAILS(EOVERFLOW, guard_map_file(fd, INT64_MAX & ~(off_t)(pg - 1), 2 * pg, rw, MAP_SHARED, 0, 0));
	/* not a regular file */
	assert_int_equal(pipe(fds), 0);
	FAILS(ENODEV, guard_map_file(fds[0], 0, pg, PROT_READ, MAP_SHARED, pg, pg));
	close(fds[0]);
	close(fds[1]);
	/* mmap's own refusal: a writable shared mapping of a read-only fd */
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	ro = open(fdpath, O_RDONLY);
	FAILS(EACCES, guard_map_file(ro, 0, pg, rw, MAP_SHARED, pg, pg));
	close(ro);
	/* nothing was left mapped */
	assert_int_equal(all_vmas(), before);
	close(fd);
}

static void unmap_errors(void **state)
{
	int fd = file_of(T_SHMEM, 2, NULL);
	char *p = guard_map_file(fd, 0, 2 * pg, PROT_READ, MAP_SHARED, pg, pg), *stack;

	(void)state;
	assert_ptr_not_equal(p, MAP_FAILED);
	errno = 9;
	assert_int_equal(guard_unmap(NULL, pg), -EINVAL);
	assert_int_equal(guard_unmap(p + 1, 2 * pg), -EINVAL);
	assert_int_equal(guard_unmap(p, 0), -EINVAL);
	assert_int_equal(guard_unmap(p, pg), -EINVAL);		/* not the length mapped */
	assert_int_equal(guard_unmap(p, 3 * pg), -EINVAL);
	assert_int_equal(guard_unmap(p + pg, pg), -EINVAL);
	stack = guard_stack(4 * pg, pg, 0);
	assert_non_null(stack);
	assert_int_equal(guard_unmap(stack, 4 * pg), -EINVAL);	/* a stack, not a file */
	assert_int_equal(guard_stack_free(stack, 4 * pg), 0);
	assert_int_equal(errno, 9);
	/* still whole */
	assert_int_equal(p[0], 'A');
	assert_int_equal(guard_unmap(p, 2 * pg - 100), 0);	/* rounded up, as given */
	assert_int_equal(guard_unmap(p, 2 * pg), -EINVAL);	/* already gone */
	close(fd);
}

/* A fork()ed child inherits the guards and can undo the mapping itself. */
static void survives_fork(void **state)
{
	int fd = file_of(T_SHMEM, 2, NULL);
	char *p = guard_map_file(fd, 0, pg, PROT_READ, MAP_SHARED, pg, pg);
	void *fault;

	(void)state;
	assert_ptr_not_equal(p, MAP_FAILED);
	assert_int_equal(access_in_child(p + pg, false, &fault), SIGSEGV);
	assert_int_equal(access_in_child(p - pg, false, &fault), SIGSEGV);
	assert_int_equal(guard_unmap(p, pg), 0);
	close(fd);
}

/*
 * guard_unmap() after the caller took the mapping away (munmap, or mremap
 * elsewhere) and another mapping took its address: it must not unmap the
 * newcomer. -EINVAL, the newcomer untouched, the entry gone. R_NHOW: the
 * same file at the same offset again, without the guards.
 */
static void file_replaced(enum replace_how how)
{
	int fd = file_of(T_SHMEM, 8, NULL);
	char *p = guard_map_file(fd, 2 * (off_t)pg, 4 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, pg,
				 pg);
	struct replaced r;
	const char *why = NULL;

	assert_ptr_not_equal(p, MAP_FAILED);
	if (how == R_NHOW) {
		assert_int_equal(munmap(p - pg, 6 * pg), 0);
		r = (struct replaced){ .addr = p - pg, .len = 6 * pg, .fd = -1 };
		assert_ptr_equal(mmap(p - pg, 6 * pg, PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_FIXED_NOREPLACE, fd, (off_t)pg),
				 p - pg);
		memset(p - pg, 0xa5, 6 * pg);
	} else {
		why = replace_mapping(p - pg, 6 * pg, how, &r);
	}
	close(fd);	/* the mappings keep the file */
	replaced_check(why, &r, guard_unmap, p, 4 * pg, 6 * pg);
}

static void replaced_anon(void **s) { (void)s; file_replaced(R_ANON); }
static void replaced_memfd(void **s) { (void)s; file_replaced(R_MEMFD); }
static void replaced_file(void **s) { (void)s; file_replaced(R_FILE); }
static void replaced_mremap(void **s) { (void)s; file_replaced(R_MREMAP); }
static void replaced_same_file(void **s) { (void)s; file_replaced(R_NHOW); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(file_shared),
		cmocka_unit_test(file_shared_at0),
		cmocka_unit_test(file_private),
		cmocka_unit_test(file_readonly),
		cmocka_unit_test(memfd_shared),
		cmocka_unit_test(memfd_at0),
		cmocka_unit_test(short_file),
		cmocka_unit_test(errors),
		cmocka_unit_test(unmap_errors),
		cmocka_unit_test(survives_fork),
		cmocka_unit_test(replaced_anon),
		cmocka_unit_test(replaced_memfd),
		cmocka_unit_test(replaced_file),
		cmocka_unit_test(replaced_mremap),
		cmocka_unit_test(replaced_same_file),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
