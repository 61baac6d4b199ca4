// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The library's lock across fork() (lib/lock.c): no deadlock with a
 * program whose own atfork handlers take a lock it holds around libguard
 * calls, and a child that can use every function right after fork(),
 * even when another thread was inside the library at the fork.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"

/* The count; LIBGUARD_TEST_FORKS may change it (a slow debug kernel). */
static int forks(void)
{
	const char *e = getenv("LIBGUARD_TEST_FORKS");

	return e && atoi(e) > 0 ? atoi(e) : 2000;
}

/* The program's own lock, taken by its own atfork handlers (an allocator's). */
static pthread_mutex_t caller_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool stop;

static void caller_prepare(void)
{
	pthread_mutex_lock(&caller_lock);
}

static void caller_release(void)
{
	pthread_mutex_unlock(&caller_lock);
}

/*
 * Registered before this program makes any libguard call, as an allocator
 * initialized early would: the order in which the old lazy registration
 * put libguard's prepare handler first, taking its lock before ours.
 */
__attribute__((constructor)) static void register_caller_atfork(void)
{
	pthread_atfork(caller_prepare, caller_release, caller_release);
}

static void on_alarm(int sig)
{
	static const char msg[] = "# deadlock: the fork loop did not finish (watchdog)\n";

	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

/* What the worker does under the caller's lock, over and over. */
enum work { WORK_FALLBACK, WORK_STACK };

static void *worker(void *arg)
{
	enum work w = (enum work)(intptr_t)arg;
	char *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long bad = 0;

	if (p == MAP_FAILED)
		return (void *)1;
	while (!atomic_load(&stop)) {
		pthread_mutex_lock(&caller_lock);
		if (w == WORK_FALLBACK) {
			bad += guard_install(p, pg, GUARD_FALLBACK) != 0;
			bad += guard_remove(p, pg, 0) != 0;
		} else {
			void *s = guard_stack(16 * pg, pg, 0);

			bad += !s || guard_stack_free(s, 16 * pg) != 0;
		}
		pthread_mutex_unlock(&caller_lock);
	}
	munmap(p, 2 * pg);
	return (void *)bad;
}

static void fork_loop(enum work w)
{
	pthread_t t;
	void *bad;

	atomic_store(&stop, false);
	signal(SIGALRM, on_alarm);
	/* a watchdog for a hang, not a timing: generous even under TCG */
	alarm(600);
	assert_int_equal(pthread_create(&t, NULL, worker, (void *)(intptr_t)w), 0);
	for (int i = 0, n = forks(); i < n; i++) {
		int status;
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		assert_true(pid > 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	atomic_store(&stop, true);
	assert_int_equal(pthread_join(t, &bad), 0);
	alarm(0);
	assert_ptr_equal(bad, NULL);
}

/* The scenario with the fallback, and with guard_stack()'s registry. */
static void fork_under_caller_lock_fallback(void **state)
{
	(void)state;
	fork_loop(WORK_FALLBACK);
}

static void fork_under_caller_lock_stack(void **state)
{
	(void)state;
	fork_loop(WORK_STACK);
}

/* Every public function, in a child: the number of the first that failed, or 0. */
static int child_calls_everything(void)
{
	char *p = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec iov[2] = { { NULL, 0 }, { NULL, 0 } };
	unsigned char vec[4];
	struct guard_maps *maps;
	struct guard_region reg;
	pthread_attr_t attr;
	size_t done;
	int memfd, n;
	char *f;
	void *s;

	/* a mapping the parent does not have: the child's lookups must be its own */
	if (p == MAP_FAILED)
		return 1;
	iov[0] = (struct iovec){ p, pg };
	iov[1] = (struct iovec){ p + 2 * pg, pg };
	guard_probe();
	if (guard_install(p + pg, pg, GUARD_FALLBACK))
		return 2;
	if (guard_query(p, 4 * pg, vec) || !(vec[1] & GUARD_QUERY_FALLBACK))
		return 3;
	if (guard_remove(p + pg, pg, 0) || page_prot(p + pg) != (PROT_READ | PROT_WRITE))
		return 4;
	if (guard_install(p + pg, pg, 0) || guard_remove(p + pg, pg, 0))
		return 5;
	if (guard_install_batch(iov, 2, 0, &done) || done != 2)
		return 6;
	if (guard_remove_batch(iov, 2, 0, &done) || done != 2)
		return 7;
	memfd = memfd_create("child", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, (off_t)pg))
		return 8;
	f = guard_map_file(memfd, 0, pg, PROT_READ, MAP_SHARED, pg, pg);
	if (f == MAP_FAILED || guard_unmap(f, pg))
		return 9;
	close(memfd);
	s = guard_stack(16 * pg, pg, 0);
	if (!s || guard_stack_free(s, 16 * pg))
		return 10;
	if (guard_pthread_attr_init(&attr, small_stack, pg) || guard_pthread_attr_destroy(&attr))
		return 11;
	n = guard_elf_segments(NULL, GUARD_ELF_COUNT);
	if (n < 0 && n != -EOPNOTSUPP && n != -ENOENT)
		return 12;
	n = guard_maps_open(0, 0, &maps);
	if (n == 0) {
		while ((n = guard_maps_next(maps, &reg)) > 0)
			;
		guard_maps_close(maps);
	}
	if (n < 0 && n != -EOPNOTSUPP && n != -EACCES && n != -EPERM)
		return 13;
	munmap(p, 4 * pg);
	return 0;
}

/*
 * A child forked while another thread works in the library (so its lock,
 * records and kept descriptors may be in use at the fork) calls every
 * function at once. The parent made a fallback guard first, so that the
 * child inherits kept /proc descriptors, which name the parent's mm.
 */
static void child_after_fork_uses_everything(void **state)
{
	char *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_t t;
	void *bad;

	(void)state;
	assert_true(p != MAP_FAILED);
	assert_int_equal(guard_install(p, pg, GUARD_FALLBACK), 0);
	atomic_store(&stop, false);
	assert_int_equal(pthread_create(&t, NULL, worker, (void *)(intptr_t)WORK_FALLBACK), 0);
	for (int i = 0; i < 50; i++) {
		int status;
		pid_t pid = fork();

		if (pid == 0)
			_exit(child_calls_everything());
		assert_true(pid > 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			printf("# child %d: status %#x (exit: the call that failed)\n", i, status);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	atomic_store(&stop, true);
	assert_int_equal(pthread_join(t, &bad), 0);
	assert_ptr_equal(bad, NULL);
	assert_int_equal(guard_remove(p, pg, 0), 0);
	munmap(p, 2 * pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fork_under_caller_lock_fallback),
		cmocka_unit_test(fork_under_caller_lock_stack),
		cmocka_unit_test(child_after_fork_uses_everything),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
