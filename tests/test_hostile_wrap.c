// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Hostile arguments to the wrappers (guard_map_file, guard_map_anon, guard_unmap,
 * guard_stack, guard_stack_free, the pthread attribute helpers,
 * guard_elf_segments, guard_maps_open/next/close): every class of invalid
 * argument (bad descriptors of every sort, offsets past the end or
 * negative, bad flag bits, zero and absurd sizes, addresses that are not
 * what the call made) gives the documented error, with errno set as
 * documented for the pointer-returning calls and left alone by the
 * others, and changes nothing in /proc/self/maps or the pages involved.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"
#include "helpers/memstate.h"

#define ERRNO_MARK 4242
#define OFF_MAX_ INT64_MAX

/* An int-returning call: want, errno untouched, nothing changed. */
#define expect_err(want, expr, ...) \
	do { \
		int got_, errno_; \
		assert_unchanged((errno = ERRNO_MARK, got_ = (expr), errno_ = errno), __VA_ARGS__); \
		if (got_ != (want)) \
			print_error("%s: %d, want %d\n", #expr, got_, (want)); \
		assert_int_equal(got_, (want)); \
		assert_int_equal(errno_, ERRNO_MARK); \
	} while (0)

/* A pointer-returning call: the failure value, errno = want, nothing changed. */
#define expect_fail(fail, want, expr, ...) \
	do { \
		void *got_; \
		int errno_; \
		assert_unchanged((errno = ERRNO_MARK, got_ = (expr), errno_ = errno), __VA_ARGS__); \
		if (got_ != (fail) || errno_ != (want)) \
			print_error("%s: %p errno %d, want errno %d\n", #expr, got_, errno_, (want)); \
		assert_ptr_equal(got_, (fail)); \
		assert_int_equal(errno_, (want)); \
	} while (0)

#define map_fails(want, ...) expect_fail(MAP_FAILED, want, guard_map_file(__VA_ARGS__), NULL)

/* A four-page file on a page-cache filesystem, or on tmpfs if none. */
static int data_file(int flags, char *path, size_t cap)
{
	const char *why, *dir = scratch_dir(&why);
	char buf[4096];
	int fd;

	snprintf(path, cap, "%s/hostile-XXXXXX", dir ? dir : "/tmp");
	fd = mkostemp(path, O_CLOEXEC);
	assert_true(fd >= 0);
	memset(buf, 0x5a, sizeof(buf));
	for (int i = 0; i < 4; i++)
		assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	if (flags != O_RDWR) {
		int again = open(path, flags | O_CLOEXEC);

		assert_true(again >= 0);
		close(fd);
		fd = again;
	}
	return fd;
}

static void map_file_descriptors(void **state)
{
	char path[4096];
	int fd = data_file(O_RDWR, path, sizeof(path)), closed, opath, dir, pipes[2], sock[2],
	    wronly, null, zero;

	(void)state;
	closed = dup(fd);
	close(closed);
	opath = open(path, O_PATH | O_CLOEXEC);
	dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	zero = open("/dev/zero", O_RDWR | O_CLOEXEC);
	wronly = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(opath >= 0 && dir >= 0 && null >= 0 && zero >= 0 && wronly >= 0);
	assert_int_equal(pipe2(pipes, O_CLOEXEC), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock), 0);

	map_fails(EBADF, -1, 0, pg, PROT_READ, MAP_SHARED, pg, pg);
	map_fails(EBADF, INT_MIN, 0, pg, PROT_READ, MAP_SHARED, pg, pg);
	map_fails(EBADF, closed, 0, pg, PROT_READ, MAP_SHARED, pg, pg);
	/* O_PATH: fstat() works, mmap() refuses */
	map_fails(EBADF, opath, 0, pg, PROT_READ, MAP_SHARED, pg, pg);
	map_fails(ENODEV, dir, 0, pg, PROT_READ, MAP_SHARED, pg, pg);
	map_fails(ENODEV, pipes[0], 0, pg, PROT_READ, MAP_SHARED, pg, pg);
	map_fails(ENODEV, sock[0], 0, pg, PROT_READ, MAP_SHARED, pg, pg);
	map_fails(ENODEV, null, 0, pg, PROT_READ, MAP_SHARED, pg, pg);
	/* mmap(2) takes /dev/zero (anonymous memory); a file mapping it is not */
	map_fails(ENODEV, zero, 0, pg, PROT_READ, MAP_SHARED, pg, pg);
	map_fails(ENODEV, zero, 0, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, pg, pg);
	/* access the descriptor does not give: mmap(2)'s EACCES */
	map_fails(EACCES, wronly, 0, pg, PROT_READ, MAP_SHARED, pg, pg);
	close(opath);
	close(dir);
	close(null);
	close(zero);
	close(wronly);
	close(pipes[0]);
	close(pipes[1]);
	close(sock[0]);
	close(sock[1]);
	close(fd);
	unlink(path);
}

static void map_file_arguments(void **state)
{
	char path[4096];
	int fd = data_file(O_RDWR, path, sizeof(path));
	static const int bad_flags[] = { 0, MAP_SHARED | MAP_PRIVATE, MAP_SHARED | MAP_FIXED,
					 MAP_PRIVATE | MAP_ANONYMOUS, MAP_SHARED | MAP_GROWSDOWN,
					 MAP_PRIVATE | MAP_FIXED_NOREPLACE, MAP_SHARED | MAP_HUGETLB,
					 -1 };

	(void)state;
	/* offsets: negative, unaligned, at and past the end, past off_t */
	map_fails(EINVAL, fd, -(off_t)pg, pg, PROT_READ, MAP_SHARED, 0, 0);
	map_fails(EINVAL, fd, INT64_MIN, pg, PROT_READ, MAP_SHARED, 0, 0);
	map_fails(EINVAL, fd, 1, pg, PROT_READ, MAP_SHARED, 0, 0);
	map_fails(ENXIO, fd, 4 * (off_t)pg, pg, PROT_READ, MAP_SHARED, 0, 0);
	map_fails(ENXIO, fd, 1 << 30, pg, PROT_READ, MAP_SHARED, pg, pg);
	map_fails(EOVERFLOW, fd, OFF_MAX_ & ~(off_t)(pg - 1), pg, PROT_READ, MAP_SHARED, 0, 0);
	/* sizes: zero, wrapping, unaligned guards, sums that overflow */
	map_fails(EINVAL, fd, 0, 0, PROT_READ, MAP_SHARED, pg, pg);
	map_fails(EINVAL, fd, 0, SIZE_MAX, PROT_READ, MAP_SHARED, 0, 0);
	map_fails(EINVAL, fd, 0, SIZE_MAX - pg + 2, PROT_READ, MAP_SHARED, 0, 0);
	map_fails(EINVAL, fd, 0, pg, PROT_READ, MAP_SHARED, 1, 0);
	map_fails(EINVAL, fd, 0, pg, PROT_READ, MAP_SHARED, 0, pg + 1);
	map_fails(EINVAL, fd, 0, pg, PROT_READ, MAP_SHARED, SIZE_MAX & ~(pg - 1), pg);
	map_fails(EINVAL, fd, 0, pg, PROT_READ, MAP_SHARED, pg, SIZE_MAX & ~(pg - 1));
	map_fails(EINVAL, fd, 0, pg, PROT_READ, MAP_SHARED, (size_t)PTRDIFF_MAX & ~(pg - 1), pg);
	/*
	 * absurd but representable: more than the address space. Not 1 << 47:
	 * that is all of x86-64's user half, but half of arm64's (48-bit VA),
	 * where a reservation that size succeeds. 1 << 57 is more than any
	 * (x86-64 with 5-level paging: 1 << 56; arm64 at most 1 << 52).
	 */
	map_fails(ENOMEM, fd, 0, (size_t)1 << 57, PROT_READ, MAP_SHARED, pg, pg);
	/* flags and prot */
	for (size_t i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++)
		map_fails(EINVAL, fd, 0, pg, PROT_READ, bad_flags[i], pg, pg);
	map_fails(EINVAL, fd, 0, pg, PROT_READ, 0x03 /* MAP_SHARED_VALIDATE */, pg, pg);
	map_fails(EINVAL, fd, 0, pg, PROT_READ | PROT_GROWSDOWN, MAP_PRIVATE, pg, pg);
	map_fails(EINVAL, fd, 0, pg, 0x10, MAP_PRIVATE, pg, pg);
	map_fails(EINVAL, fd, 0, pg, -1, MAP_PRIVATE, pg, pg);
	close(fd);
	unlink(path);
}

/* Writable mappings a descriptor or a seal forbids: mmap(2)'s error, nothing mapped. */
static void map_file_no_write(void **state)
{
	char path[4096];
	int ro = data_file(O_RDONLY, path, sizeof(path));
	int memfd = memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	(void)state;
	map_fails(EACCES, ro, 0, pg, PROT_READ | PROT_WRITE, MAP_SHARED, pg, pg);
	assert_true(memfd >= 0);
	assert_int_equal(ftruncate(memfd, 4 * (off_t)pg), 0);
	assert_int_equal(fcntl(memfd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW), 0);
	map_fails(EPERM, memfd, 0, pg, PROT_READ | PROT_WRITE, MAP_SHARED, pg, pg);
	close(memfd);
	close(ro);
	unlink(path);
}

static void unmap_arguments(void **state)
{
	char path[4096];
	int fd = data_file(O_RDWR, path, sizeof(path));
	char *p = guard_map_file(fd, (off_t)pg, 2 * pg, PROT_READ, MAP_SHARED, pg, pg);
	char *stack = guard_stack(4 * pg, pg, 0);
	struct tmap m;

	(void)state;
	assert_ptr_not_equal(p, MAP_FAILED);
	assert_non_null(stack);
	tmap_new(T_ANON, 2, &m);
	expect_err(-EINVAL, guard_unmap(NULL, pg), p - pg, 4 * pg, NULL);
	expect_err(-EINVAL, guard_unmap(p + 1, 2 * pg), p - pg, 4 * pg, NULL);
	expect_err(-EINVAL, guard_unmap(p, 0), p - pg, 4 * pg, NULL);
	expect_err(-EINVAL, guard_unmap(p, SIZE_MAX), p - pg, 4 * pg, NULL);
	/* not what guard_map_file() returned, or not its length */
	expect_err(-EINVAL, guard_unmap(p - pg, 4 * pg), p - pg, 4 * pg, NULL);
	expect_err(-EINVAL, guard_unmap(p + pg, pg), p - pg, 4 * pg, NULL);
	expect_err(-EINVAL, guard_unmap(p, pg), p - pg, 4 * pg, NULL);
	expect_err(-EINVAL, guard_unmap(p, 3 * pg), p - pg, 4 * pg, NULL);
	expect_err(-EINVAL, guard_unmap(m.addr, 2 * pg), m.addr, 2 * pg, p - pg, 4 * pg, NULL);
	expect_err(-EINVAL, guard_unmap(stack, 4 * pg), stack, 4 * pg, NULL);
	/* the real thing, then once more */
	assert_int_equal(guard_unmap(p, 2 * pg - 1), 0);
	expect_err(-EINVAL, guard_unmap(p, 2 * pg), NULL);
	expect_err(-EINVAL, guard_stack_free(stack, 4 * pg + 1), stack, 4 * pg, NULL);
	assert_int_equal(guard_stack_free(stack, 4 * pg), 0);
	tmap_free(&m);
	close(fd);
	unlink(path);
}

static void map_anon_arguments(void **state)
{
	static const int bad_map_flags[] = { 0, MAP_SHARED | MAP_PRIVATE, MAP_SHARED_VALIDATE,
					     MAP_PRIVATE | MAP_FIXED, MAP_PRIVATE | MAP_ANONYMOUS,
					     MAP_PRIVATE | MAP_HUGETLB, MAP_PRIVATE | MAP_GROWSDOWN,
					     MAP_PRIVATE | MAP_FIXED_NOREPLACE, MAP_PRIVATE | MAP_LOCKED,
#ifdef MAP_32BIT
					     MAP_PRIVATE | MAP_32BIT,
#endif
					     MAP_PRIVATE | (1 << 30) };
	static const unsigned int bad_gflags[] = { GUARD_FRESH, 1u << 3, GUARD_STACK_ABOVE,
						   GUARD_ELF_COUNT, 1u << 31,
						   GUARD_NATIVE | GUARD_FALLBACK, ~0u };
	size_t huge = SIZE_MAX & ~(pg - 1);
	int rw = PROT_READ | PROT_WRITE;
	unsigned int method = 77;

	(void)state;
	expect_fail(MAP_FAILED, EINVAL, guard_map_anon(0, rw, MAP_PRIVATE, pg, pg, 0, &method), NULL);
	assert_int_equal(method, 0);
	expect_fail(MAP_FAILED, EINVAL, guard_map_anon(huge, rw, MAP_PRIVATE, pg, pg, 0, NULL), NULL);
	expect_fail(MAP_FAILED, EINVAL, guard_map_anon(SIZE_MAX, rw, MAP_PRIVATE, 0, 0, 0, NULL), NULL);
	expect_fail(MAP_FAILED, EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE, pg - 1, pg, 0, NULL), NULL);
	expect_fail(MAP_FAILED, EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE, pg, pg + 1, 0, NULL), NULL);
	expect_fail(MAP_FAILED, EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE, huge, pg, 0, NULL), NULL);
	expect_fail(MAP_FAILED, EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE, pg, huge, 0, NULL), NULL);
	expect_fail(MAP_FAILED, EINVAL,
		    guard_map_anon(huge / 2 & ~(pg - 1), rw, MAP_PRIVATE, huge / 2 & ~(pg - 1), pg, 0,
				   NULL), NULL);
	expect_fail(MAP_FAILED, EINVAL,
		    guard_map_anon((size_t)PTRDIFF_MAX & ~(pg - 1), rw, MAP_PRIVATE, pg, 0, 0, NULL),
		    NULL);
	expect_fail(MAP_FAILED, EINVAL, guard_map_anon(pg, 0x10, MAP_PRIVATE, pg, pg, 0, NULL), NULL);
	expect_fail(MAP_FAILED, EINVAL, guard_map_anon(pg, -1, MAP_PRIVATE, pg, pg, 0, NULL), NULL);
	for (size_t i = 0; i < sizeof(bad_map_flags) / sizeof(bad_map_flags[0]); i++)
		expect_fail(MAP_FAILED, EINVAL,
			    guard_map_anon(pg, rw, bad_map_flags[i], pg, pg, 0, NULL), NULL);
	for (size_t i = 0; i < sizeof(bad_gflags) / sizeof(bad_gflags[0]); i++)
		expect_fail(MAP_FAILED, EINVAL,
			    guard_map_anon(pg, rw, MAP_PRIVATE, pg, pg, bad_gflags[i], NULL), NULL);
	/* absurd but representable: more memory than there is */
	expect_fail(MAP_FAILED, ENOMEM, guard_map_anon((size_t)1 << 47, rw, MAP_PRIVATE, pg, pg, 0, NULL),
		    NULL);
	expect_fail(MAP_FAILED, ENOMEM, guard_map_anon((size_t)1 << 62, rw, MAP_PRIVATE, 0, pg, 0, NULL),
		    NULL);
	if (!want_native(T_ANON))
		expect_fail(MAP_FAILED, EOPNOTSUPP,
			    guard_map_anon(pg, rw, MAP_PRIVATE, pg, pg, GUARD_NATIVE, NULL), NULL);
}

static void stack_arguments(void **state)
{
	static const unsigned int bad_flags[] = { 1u << 2, 1u << 3, 1u << 6, 1u << 31,
						  GUARD_NATIVE | GUARD_FALLBACK, ~0u };
	size_t huge = SIZE_MAX & ~(pg - 1);

	(void)state;
	expect_fail(NULL, EINVAL, guard_stack(0, pg, 0), NULL);
	expect_fail(NULL, EINVAL, guard_stack(pg, 0, 0), NULL);
	expect_fail(NULL, EINVAL, guard_stack(pg + 1, pg, 0), NULL);
	expect_fail(NULL, EINVAL, guard_stack(pg, pg - 1, 0), NULL);
	expect_fail(NULL, EINVAL, guard_stack(huge, pg, 0), NULL);
	expect_fail(NULL, EINVAL, guard_stack(pg, huge, 0), NULL);
	expect_fail(NULL, EINVAL, guard_stack(pg, (huge / 2) & ~(pg - 1), GUARD_STACK_ABOVE), NULL);
	expect_fail(NULL, EINVAL,
		    guard_stack(huge / 2 & ~(pg - 1), huge / 4 & ~(pg - 1), GUARD_STACK_ABOVE), NULL);
	expect_fail(NULL, EINVAL, guard_stack((size_t)PTRDIFF_MAX & ~(pg - 1), pg, 0), NULL);
	for (size_t i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++)
		expect_fail(NULL, EINVAL, guard_stack(4 * pg, pg, bad_flags[i]), NULL);
	/* absurd but representable: more memory than there is */
	expect_fail(NULL, ENOMEM, guard_stack((size_t)1 << 47, pg, 0), NULL);
	expect_fail(NULL, ENOMEM, guard_stack((size_t)1 << 62, pg, 0), NULL);
	if (!want_native(T_ANON))
		expect_fail(NULL, EOPNOTSUPP, guard_stack(4 * pg, pg, GUARD_NATIVE), NULL);
}

static void stack_free_arguments(void **state)
{
	char *stack = guard_stack(4 * pg, pg, 0);
	struct tmap m;

	(void)state;
	assert_non_null(stack);
	tmap_new(T_ANON, 4, &m);
	expect_err(-EINVAL, guard_stack_free(NULL, 4 * pg), stack - pg, 5 * pg, NULL);
	expect_err(-EINVAL, guard_stack_free(stack + 1, 4 * pg), stack - pg, 5 * pg, NULL);
	expect_err(-EINVAL, guard_stack_free(stack, 0), stack - pg, 5 * pg, NULL);
	expect_err(-EINVAL, guard_stack_free(stack, SIZE_MAX), stack - pg, 5 * pg, NULL);
	expect_err(-EINVAL, guard_stack_free(stack, 3 * pg), stack - pg, 5 * pg, NULL);
	expect_err(-EINVAL, guard_stack_free(stack - pg, 5 * pg), stack - pg, 5 * pg, NULL);
	expect_err(-EINVAL, guard_stack_free(m.addr, 4 * pg), m.addr, 4 * pg, NULL);
	assert_int_equal(guard_stack_free(stack, 4 * pg), 0);
	expect_err(-EINVAL, guard_stack_free(stack, 4 * pg), NULL);
	tmap_free(&m);
}

static void attr_arguments(void **state)
{
	pthread_attr_t attr;
	void *mine = malloc(small_stack), *stack;
	size_t size;

	(void)state;
	expect_err(-EINVAL, guard_pthread_attr_init(NULL, small_stack, pg), NULL);
	expect_err(-EINVAL, guard_pthread_attr_init(&attr, 0, pg), NULL);
	expect_err(-EINVAL, guard_pthread_attr_init(&attr, PTHREAD_STACK_MIN - 1, pg), NULL);
	expect_err(-EINVAL, guard_pthread_attr_init(&attr, small_stack, 0), NULL);
	expect_err(-EINVAL, guard_pthread_attr_init(&attr, SIZE_MAX, pg), NULL);
	expect_err(-EINVAL, guard_pthread_attr_init(&attr, small_stack, SIZE_MAX), NULL);
	expect_err(-EINVAL, guard_pthread_attr_init(&attr, small_stack, SIZE_MAX / 2 + 1), NULL);
	expect_err(-ENOMEM, guard_pthread_attr_init(&attr, (size_t)1 << 62, pg), NULL);
	expect_err(-EINVAL, guard_pthread_attr_destroy(NULL), NULL);
	/* an attribute with no stack, and one with the caller's own */
	assert_int_equal(pthread_attr_init(&attr), 0);
	expect_err(-EINVAL, guard_pthread_attr_destroy(&attr), NULL);
	assert_int_equal(pthread_attr_setstack(&attr, mine, small_stack), 0);
	expect_err(-EINVAL, guard_pthread_attr_destroy(&attr), NULL);
	/* left as it was */
	assert_int_equal(pthread_attr_getstack(&attr, &stack, &size), 0);
	assert_ptr_equal(stack, mine);
	assert_int_equal(size, small_stack);
	pthread_attr_destroy(&attr);
	free(mine);
}

static void elf_arguments(void **state)
{
	static const unsigned int bad_flags[] = { 1u << 2, 1u << 4, 1u << 6, 1u << 31,
						  GUARD_NATIVE | GUARD_FALLBACK, ~0u };
	char *heap = malloc(64);
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 2, &m);
	for (size_t i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++) {
		expect_err(-EINVAL, guard_elf_segments(NULL, bad_flags[i]), NULL);
		expect_err(-EINVAL, guard_elf_segments((void *)guard_probe, bad_flags[i]), NULL);
	}
	/* addresses in no loaded object */
	expect_err(-ENOENT, guard_elf_segments(heap, 0), NULL);
	expect_err(-ENOENT, guard_elf_segments(m.addr, GUARD_ELF_COUNT), m.addr, 2 * pg, NULL);
	expect_err(-ENOENT, guard_elf_segments(&m, 0), NULL);
	expect_err(-ENOENT, guard_elf_segments((void *)1, 0), NULL);
	expect_err(-ENOENT, guard_elf_segments((void *)(uintptr_t)0xffff800000000000ull, 0), NULL);
	expect_err(-ENOENT, guard_elf_segments((void *)UINTPTR_MAX, GUARD_NATIVE), NULL);
	tmap_free(&m);
	free(heap);
}

static void maps_arguments(void **state)
{
	struct guard_maps *maps = (void *)&maps;
	struct guard_region r;
	pid_t gone;
	int status;

	(void)state;
	expect_err(-EINVAL, guard_maps_open(0, 0, NULL), NULL);
	expect_err(-EINVAL, guard_maps_open(0, 1, &maps), NULL);
	expect_err(-EINVAL, guard_maps_open(0, ~0u, &maps), NULL);
	expect_err(-EINVAL, guard_maps_open(-1, 0, &maps), NULL);
	expect_err(-EINVAL, guard_maps_open(INT_MIN, 0, &maps), NULL);
	/* a process that was: reaped, its pid free (pid reuse aside) */
	gone = fork();
	if (gone == 0)
		_exit(0);
	assert_int_equal(waitpid(gone, &status, 0), gone);
	expect_err(-ESRCH, guard_maps_open(gone, 0, &maps), NULL);
	expect_err(-ESRCH, guard_maps_open(INT_MAX, 0, &maps), NULL);
	/* *maps untouched by a failure */
	assert_ptr_equal(maps, (void *)&maps);
	expect_err(-EINVAL, guard_maps_next(NULL, &r), NULL);
	assert_int_equal(guard_maps_open(0, 0, &maps), 0);
	expect_err(-EINVAL, guard_maps_next(maps, NULL), NULL);
	while (guard_maps_next(maps, &r) > 0)
		;
	/* past the end: 0, again and again */
	expect_err(0, guard_maps_next(maps, &r), NULL);
	expect_err(0, guard_maps_next(maps, &r), NULL);
	guard_maps_close(maps);
	errno = ERRNO_MARK;
	guard_maps_close(NULL);
	assert_int_equal(errno, ERRNO_MARK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(map_file_descriptors),
		cmocka_unit_test(map_file_arguments),
		cmocka_unit_test(map_file_no_write),
		cmocka_unit_test(unmap_arguments),
		cmocka_unit_test(map_anon_arguments),
		cmocka_unit_test(stack_arguments),
		cmocka_unit_test(stack_free_arguments),
		cmocka_unit_test(attr_arguments),
		cmocka_unit_test(elf_arguments),
		cmocka_unit_test(maps_arguments),
	};

	guardtest_init();
	guard_probe();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
