// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The entry points of libguard-malloc.so on bad input and at their limits,
 * run under LD_PRELOAD with LIBGUARD_MALLOC=mode=all,slots=256 (see
 * meson.build): every allocation it can take is guarded, and the pool is
 * small enough to run out. Bad input must give the answer of the allocator
 * underneath, found by calling its functions directly: glibc's, or the
 * one $LIBGUARD_TEST_NEXT names (jemalloc preloaded after the module).
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard-malloc.h>

#include "expect.h"

/* Sizes the compiler must not see (it rejects the calls at build time). */
static volatile size_t half = SIZE_MAX / 2 + 1, all_ones = SIZE_MAX, most = SIZE_MAX / 2;

static int (*stats_fn)(struct guard_malloc_stats *, size_t);
static void *libc;

/* GUARD_METHOD_NATIVE (1) or _FALLBACK (2): the kernel's, from tests/helpers/expect.c. */
static unsigned int expected_method(void)
{
	const char *why, *force = getenv("LIBGUARD_FORCE_FALLBACK");

	if (force && *force && strcmp(force, "0"))
		return 2;
	return expect_caps(&why) & EXPECT_ANON ? 1 : 2;
}

static struct guard_malloc_stats stats(void)
{
	struct guard_malloc_stats st;

	assert_int_equal(stats_fn(&st, sizeof(st)), 0);
	return st;
}

/*
 * A pool allocation says its size exactly; glibc's and jemalloc's round
 * up (13 -> 24 and 16): sizes here are never one of theirs (40 is glibc's).
 */
static bool guarded(void *p, size_t size)
{
	return malloc_usable_size(p) == size;
}

static int setup(void **state)
{
	const char *next = getenv("LIBGUARD_TEST_NEXT");

	(void)state;
	stats_fn = (int (*)(struct guard_malloc_stats *, size_t))dlsym(RTLD_DEFAULT, "guard_malloc_stats");
	libc = dlopen(next && *next ? next : "libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
	if (!stats_fn || !libc) {
		print_message("# not preloaded: run through meson (LD_PRELOAD=libguard-malloc.so)\n");
		return -1;
	}
	return 0;
}

static void stats_call(void **state)
{
	struct guard_malloc_stats st = stats();

	(void)state;
	assert_int_equal(stats_fn(NULL, sizeof(st)), -EINVAL);
	assert_int_equal(stats_fn(&st, sizeof(st) - 1), -EINVAL);
	assert_int_equal(st.slots, 256);
	assert_int_equal(st.method, expected_method());
	print_message("# method %s, cap %zu\n", st.method == 1 ? "native" : "fallback", st.cap);
}

static void guarded_malloc(void **state)
{
	struct guard_malloc_stats before = stats(), after;
	char *p = malloc(13);

	(void)state;
	assert_non_null(p);
	assert_true(guarded(p, 13));
	memset(p, 'x', 13);
	after = stats();
	assert_int_equal(after.guarded, before.guarded + 1);
	assert_int_equal(after.live, before.live + 1);
	assert_int_equal((uintptr_t)p % 16, 0);	/* align=right keeps malloc's alignment */
	free(p);
	assert_int_equal(stats().live, before.live);
	/* Larger than a slot: a run of slots, one allocation, guarded all the same. */
	before = stats();
	p = malloc(100000);
	assert_non_null(p);
	assert_true(guarded(p, 100000));
	memset(p, 'y', 100000);
	after = stats();
	assert_int_equal(after.live, before.live + 1);
	assert_true(after.slots_used >= before.slots_used + 100000 / (2 * 4096));
	free(p);
	assert_int_equal(stats().live, before.live);
	assert_int_equal(stats().quarantined, after.quarantined + (after.slots_used - before.slots_used));
	free(NULL);
	assert_int_equal(malloc_usable_size(NULL), 0);
}

static void calloc_checks(void **state)
{
	(void)state;
	errno = 0;
	assert_null(calloc(half, 2));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(calloc(2, half));
	assert_int_equal(errno, ENOMEM);
	/* Zero every time, also from a slot used before (the pool wraps at 256). */
	for (int i = 0; i < 600; i++) {
		volatile unsigned char *p = calloc(3, 100);	/* volatile: see close_fails_child() */

		assert_non_null(p);
		for (int j = 0; j < 300; j++)
			assert_int_equal(p[j], 0);
		for (int j = 0; j < 300; j++)
			p[j] = 0xa5;
		free((void *)p);
	}
	free(calloc(0, 5));
}

static void reallocarray_overflow(void **state)
{
	char *volatile p = malloc(10), *q;

	(void)state;
	errno = 0;
	assert_null(reallocarray(p, half, 2));
	assert_int_equal(errno, ENOMEM);
	assert_true(guarded(p, 10));	/* untouched */
	q = reallocarray(p, 5, 4);
	assert_non_null(q);
	assert_true(guarded(q, 20));
	free(q);
}

static void huge(void **state)
{
	struct guard_malloc_stats before = stats();
	void *p;

	(void)state;
	errno = 0;
	assert_null(malloc(all_ones));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(malloc(most));
	assert_int_equal(errno, ENOMEM);
	before = stats();
	p = malloc(8 << 20);	/* more than a run of 512 slots: the heap's, counted */
	assert_non_null(p);
	assert_int_equal(stats().unguarded_large, before.unguarded_large + 1);
	free(p);
	errno = 0;
	assert_null(pvalloc(all_ones));
	assert_int_equal(errno, ENOMEM);
	/*
	 * Too big for a slot: the allocator underneath serves them, and its
	 * free() must own them (jemalloc has no pvalloc(): glibc's is not it).
	 */
	p = pvalloc(3 * (size_t)sysconf(_SC_PAGESIZE) + 1);
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
	memset(p, 1, 4 * (size_t)sysconf(_SC_PAGESIZE));
	free(p);
	p = valloc(3 * (size_t)sysconf(_SC_PAGESIZE));
	assert_non_null(p);
	free(p);
}

/* Ours against glibc's, for alignments good and bad. */
static void alignments(void **state)
{
	static const size_t aligns[] = { 0, 1, 2, 3, 4, 8, 12, 16, 24, 32, 64, 100, 4096, 8192,
					 1 << 20, SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 2, SIZE_MAX };
	void *(*g_memalign)(size_t, size_t) = (void *(*)(size_t, size_t))dlsym(libc, "memalign");
	void *(*g_aligned_alloc)(size_t, size_t) =
		(void *(*)(size_t, size_t))dlsym(libc, "aligned_alloc");
	int (*g_posix_memalign)(void **, size_t, size_t) =
		(int (*)(void **, size_t, size_t))dlsym(libc, "posix_memalign");
	void (*g_free)(void *) = (void (*)(void *))dlsym(libc, "free");

	(void)state;
	assert_non_null(g_memalign);
	assert_non_null(g_aligned_alloc);
	assert_non_null(g_posix_memalign);
	for (size_t i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
		size_t a = aligns[i];
		void *ours, *theirs;
		int e1, e2, r1, r2;

		errno = 0;
		ours = memalign(a, 40);
		e1 = errno;
		errno = 0;
		theirs = g_memalign(a, 40);
		e2 = errno;
		assert_int_equal(!ours, !theirs);
		if (!ours)
			assert_int_equal(e1, e2);
		else if (a && !(a & (a - 1)))
			assert_int_equal((uintptr_t)ours % a, 0);
		free(ours);
		g_free(theirs);

		errno = 0;
		ours = aligned_alloc(a, 64);
		e1 = errno;
		errno = 0;
		theirs = g_aligned_alloc(a, 64);
		e2 = errno;
		assert_int_equal(!ours, !theirs);
		if (!ours)
			assert_int_equal(e1, e2);
		else if (a && !(a & (a - 1)))
			assert_int_equal((uintptr_t)ours % a, 0);
		free(ours);
		g_free(theirs);

		ours = theirs = NULL;
		r1 = posix_memalign(&ours, a, 44);
		r2 = g_posix_memalign(&theirs, a, 44);
		assert_int_equal(r1, r2);
		if (!r1) {
			assert_int_equal((uintptr_t)ours % a, 0);
			if (a <= 4096)
				assert_true(guarded(ours, 44));
		}
		free(ours);
		g_free(theirs);
	}
	{
		void *v = valloc(100);
		void *pv = pvalloc(100);

		assert_non_null(v);
		assert_non_null(pv);
		assert_int_equal((uintptr_t)v % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
		assert_int_equal((uintptr_t)pv % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
		assert_true(malloc_usable_size(pv) >= (size_t)sysconf(_SC_PAGESIZE));
		free(v);
		free(pv);
	}
}

static void realloc_moves(void **state)
{
	struct guard_malloc_stats before = stats();
	unsigned char *p = malloc(100), *q, *r;

	(void)state;
	assert_true(guarded(p, 100));
	for (int i = 0; i < 100; i++)
		p[i] = (unsigned char)i;
	q = realloc(p, 100000);	/* too big for a slot: to the heap */
	assert_non_null(q);
	assert_false(guarded(q, 100000) && stats().unguarded_large == before.unguarded_large);
	for (int i = 0; i < 100; i++)
		assert_int_equal(q[i], i);
	r = realloc(q, 50);	/* back into the pool */
	assert_non_null(r);
	assert_true(guarded(r, 50));
	for (int i = 0; i < 50; i++)
		assert_int_equal(r[i], i);
	assert_int_equal(stats().live, before.live + 1);
	assert_null(realloc(r, 0));	/* glibc: frees, NULL */
	assert_int_equal(stats().live, before.live);
	p = realloc(NULL, 7);
	assert_true(guarded(p, 7));
	free(p);
}

static void exhausted(void **state)
{
	struct guard_malloc_stats before = stats(), mid;
	void *p[600];

	(void)state;
	for (int i = 0; i < 600; i++) {
		p[i] = malloc(32);
		assert_non_null(p[i]);
		memset(p[i], 1, 32);
	}
	mid = stats();
	print_message("# 600 live: %zu guarded live, %zu past the cap\n", mid.live,
		      mid.unguarded_cap - before.unguarded_cap);
	assert_true(mid.live <= mid.cap && mid.live <= 256);
	assert_true(mid.unguarded_cap - before.unguarded_cap >= 600 - 256);
	for (int i = 0; i < 600; i++)
		free(p[i]);
	assert_int_equal(stats().live, before.live);
}

static sigjmp_buf jump;
static stack_t alt;
static volatile int on_alt;

static void program_handler(int sig, siginfo_t *si, void *uc)
{
	char here;

	(void)sig;
	(void)si;
	(void)uc;
	on_alt = (uintptr_t)&here - (uintptr_t)alt.ss_sp < alt.ss_size;
	siglongjmp(jump, 1);
}

static void plain_handler(int sig)
{
	(void)sig;
}

/* Run fn in a child with stderr on a pipe: its wait status, and what it wrote. */
static int child(void (*fn)(void), char *buf, size_t len)
{
	int fds[2], status;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		fn();
		_exit(0);
	}
	close(fds[1]);
	while (got < len - 1 && (n = read(fds[0], buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void overflow_in_child(void)
{
	volatile char *volatile p = malloc(32);

	p[32] = 1;
}

/* A program's SIGSEGV handler, on its alternate stack, installed after ours. */
static void own_handler_onstack(void **state)
{
	struct sigaction sa, old;
	char *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char err[8192];
	int status;

	(void)state;
	assert_true(none != MAP_FAILED);
	alt.ss_size = 64 << 10;
	alt.ss_sp = mmap(NULL, alt.ss_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(alt.ss_sp != MAP_FAILED);
	assert_int_equal(sigaltstack(&alt, NULL), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = program_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGSEGV, &sa, NULL), 0);
	assert_int_equal(sigaction(SIGSEGV, NULL, &old), 0);
	assert_ptr_equal(old.sa_sigaction, program_handler);	/* it sees its own */

	/* A fault that is not the pool's reaches the program's handler, on its stack. */
	on_alt = 0;
	if (!sigsetjmp(jump, 1))
		*(volatile char *)none = 1;
	assert_int_equal(on_alt, 1);

	/* A pool fault is still reported, and kills. */
	status = child(overflow_in_child, err, sizeof(err));
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
	assert_non_null(strstr(err, "ERROR: libguard-malloc: heap-buffer-overflow"));

	/* signal() is seen the same way; SIG_DFL back. */
	assert_true(signal(SIGSEGV, plain_handler) != SIG_ERR);
	assert_ptr_equal(signal(SIGSEGV, SIG_DFL), plain_handler);
	assert_int_equal(sigaction(SIGSEGV, NULL, &old), 0);
	assert_ptr_equal(old.sa_handler, SIG_DFL);
	alt.ss_flags = SS_DISABLE;
	sigaltstack(&alt, NULL);
	munmap(alt.ss_sp, alt.ss_size);
	munmap(none, 4096);
}

static volatile int stop;

static void *churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		void *p = malloc(64);

		free(realloc(p, 128));
	}
	return NULL;
}

/* Fork 15 times, each child allocating and exiting: NULL if all did. */
static void *forker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 15; i++) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			return (void *)"fork";
		if (pid == 0) {
			for (int j = 0; j < 50; j++)
				free(malloc(16));
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return (void *)"a child did not exit 0 (a hang is the test's timeout)";
	}
	return NULL;
}

/* fork() from three threads at once while three others allocate. */
static void fork_threads(void **state)
{
	pthread_t t[3], f[3];
	void *ret;

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churn, NULL), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&f[i], NULL, forker, NULL), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(f[i], &ret), 0);
		if (ret)
			fail_msg("%s", (const char *)ret);
	}
	stop = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}

/*
 * In a child, a seccomp filter makes re-guarding fail (EPERM for
 * madvise(MADV_GUARD_INSTALL) and mprotect(PROT_NONE)): freed slots then
 * stay open, and calloc() from them must still be zero.
 */
static void close_fails_child(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_madvise, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 102, 4, 0),	/* MADV_GUARD_INSTALL */
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_NONE, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		_exit(77);
	for (int i = 0; i < 600; i++) {	/* the pool of 256 wraps twice */
		/* volatile: gcc knows calloc()'s memory is zero, and would not look */
		volatile unsigned char *p = calloc(1, 200);

		if (!p)
			_exit(2);
		for (int j = 0; j < 200; j++)
			if (p[j])
				_exit(3);
		for (int j = 0; j < 200; j++)
			p[j] = 0xff;
		free((void *)p);
	}
	_exit(0);
}

static void close_fails(void **state)
{
	char err[4096];
	int status = child(close_fails_child, err, sizeof(err));

	(void)state;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		print_message("# skip: no seccomp filter could be installed here\n");
		skip();
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);	/* 3: calloc() gave a used slot unzeroed */
}

static void exec_bad_env(void)
{
	setenv("LIBGUARD_MALLOC", "mode=all,slots=x", 1);
	execl("/bin/true", "true", (char *)NULL);
	_exit(127);
}

/* A bad LIBGUARD_MALLOC in a new process: one line, and it runs. */
static void bad_env(void **state)
{
	char err[4096];
	int status = child(exec_bad_env, err, sizeof(err));

	(void)state;
	print_message("# %s", err);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_non_null(strstr(err, "bad value 'x' for slots"));
	assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stats_call),
		cmocka_unit_test(guarded_malloc),
		cmocka_unit_test(calloc_checks),
		cmocka_unit_test(reallocarray_overflow),
		cmocka_unit_test(huge),
		cmocka_unit_test(alignments),
		cmocka_unit_test(realloc_moves),
		cmocka_unit_test(exhausted),
		cmocka_unit_test(own_handler_onstack),
		cmocka_unit_test(fork_threads),
		cmocka_unit_test(bad_env),
		cmocka_unit_test(close_fails),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
