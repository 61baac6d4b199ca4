// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_stack(), guard_stack_free() and the pthread helpers: a thread
 * that recurses past its stack dies of SIGSEGV inside the guard (seen from
 * a parent process), 1000 threads on guarded stacks cost about one VMA
 * each with native guards (two with the fallback), and the error contract.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"
#include "helpers/replace.h"

/* Why the checks that run threads on 64 KiB stacks skip under TSan. */
#define TSAN_SMALL_STACKS \
	"TSan refuses threads on stacks under 900 KiB (pthread_create fails with EINVAL)"

static void stack_layout(void **state)
{
	bool native = want_native(T_ANON);
	char *s = guard_stack(8 * pg, 2 * pg, 0), *a;
	void *fault;

	(void)state;
	assert_non_null(s);
	assert_int_equal(access_in_child(s - 1, true, &fault), SIGSEGV);
	assert_ptr_equal(fault, s - 1);
	assert_int_equal(access_in_child(s - 2 * pg, true, &fault), SIGSEGV);
	assert_int_equal(access_in_child(s, true, &fault), 0);
	assert_int_equal(access_in_child(s + 8 * pg - 1, true, &fault), 0);
	assert_string_equal(query_method(s - 2 * pg, 2 * pg), native ? "native" : "fallback");
	assert_int_equal(vmas_in((uintptr_t)s - 2 * pg, (uintptr_t)s + 8 * pg), native ? 1 : 2);
	a = guard_stack(4 * pg, pg, GUARD_STACK_ABOVE);
	assert_non_null(a);
	assert_int_equal(access_in_child(a + 4 * pg, true, &fault), SIGSEGV);
	assert_ptr_equal(fault, a + 4 * pg);
	assert_int_equal(access_in_child(a - 1, true, &fault), SIGSEGV);
	assert_int_equal(access_in_child(a + 4 * pg - 1, true, &fault), 0);
	assert_int_equal(vmas_in((uintptr_t)a - pg, (uintptr_t)a + 5 * pg), native ? 1 : 3);
	printf("# stack VMAs: %d (guard below), %d (below and above), %s\n",
	       vmas_in((uintptr_t)s - 2 * pg, (uintptr_t)s + 8 * pg),
	       vmas_in((uintptr_t)a - pg, (uintptr_t)a + 5 * pg), native ? "native" : "fallback");
	assert_int_equal(guard_stack_free(a, 4 * pg), 0);
	assert_int_equal(guard_stack_free(s, 8 * pg), 0);
	assert_int_equal(page_prot(s - pg), -1);
	assert_int_equal(page_prot(s), -1);
	/* GUARD_FALLBACK is passed on */
	s = guard_stack(4 * pg, pg, GUARD_FALLBACK);
	assert_non_null(s);
	assert_int_equal(page_prot(s - pg), PROT_NONE);
	assert_int_equal(guard_stack_free(s, 4 * pg), 0);
}

static void stack_errors(void **state)
{
	size_t huge = SIZE_MAX & ~(pg - 1);
	char *s;

	(void)state;
	errno = 0;
	assert_null(guard_stack(0, pg, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(guard_stack(4 * pg, 0, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(guard_stack(4 * pg + 1, pg, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(guard_stack(4 * pg, pg - 1, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(guard_stack(huge, pg, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(guard_stack(pg, huge, GUARD_STACK_ABOVE));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(guard_stack(4 * pg, pg, 0x4000));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(guard_stack(4 * pg, pg, GUARD_NATIVE | GUARD_FALLBACK));
	assert_int_equal(errno, EINVAL);
	/* GUARD_NATIVE where there are none: nothing allocated */
	if (!want_native(T_ANON)) {
		errno = 0;
		assert_null(guard_stack(4 * pg, pg, GUARD_NATIVE));
		assert_int_equal(errno, EOPNOTSUPP);
	}
	s = guard_stack(4 * pg, pg, 0);
	assert_non_null(s);
	errno = 5;
	assert_int_equal(guard_stack_free(NULL, 4 * pg), -EINVAL);
	assert_int_equal(guard_stack_free(s, 0), -EINVAL);
	assert_int_equal(guard_stack_free(s, 3 * pg), -EINVAL);
	assert_int_equal(guard_stack_free(s, 4 * pg + 1), -EINVAL);
	assert_int_equal(guard_stack_free(s - pg, 5 * pg), -EINVAL);
	assert_int_equal(errno, 5);
	s[0] = 1;
	assert_int_equal(guard_stack_free(s, 4 * pg), 0);
	assert_int_equal(guard_stack_free(s, 4 * pg), -EINVAL);
}

/*
 * 10,000 live stacks freed in a random order (the registry behind
 * guard_stack_free() is a hash table: no order may be special): every
 * free succeeds exactly once, a second free of the same stack and a
 * free with the wrong size give -EINVAL, and a stack's memory is gone
 * after its free. The seed is printed, for a rerun with LIBGUARD_TEST_SEED.
 */
#define NSTACKS 10000
static void free_any_order(void **state)
{
	char **s = calloc(NSTACKS, sizeof(*s));
	const char *env = getenv("LIBGUARD_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0)
			    : ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
	uint64_t x = seed | 1;

	(void)state;
	assert_non_null(s);
	printf("# seed %" PRIu64 "\n", seed);
	for (int i = 0; i < NSTACKS; i++) {
		s[i] = guard_stack(pg, pg, i % 3 ? 0 : GUARD_STACK_ABOVE);
		assert_non_null(s[i]);
	}
	for (int i = NSTACKS; i > 1; i--) {
		int j;
		char *t;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = (int)(x % (uint64_t)i);
		t = s[i - 1];
		s[i - 1] = s[j];
		s[j] = t;
	}
	for (int i = 0; i < NSTACKS; i++) {
		assert_int_equal(guard_stack_free(s[i], 2 * pg), -EINVAL);
		assert_int_equal(guard_unmap(s[i], pg), -EINVAL);	/* not a file mapping */
		assert_int_equal(guard_stack_free(s[i], pg), 0);
		assert_int_equal(guard_stack_free(s[i], pg), -EINVAL);
		if (i % 1000 == 0)
			assert_int_equal(page_prot(s[i]), -1);
	}
	/* and none came back while the others were freed */
	for (int i = 0; i < NSTACKS; i++)
		assert_int_equal(guard_stack_free(s[i], pg), -EINVAL);
	free(s);
}

static void *where_am_i(void *arg)
{
	volatile char here = 0;

	if (arg)
		*(volatile uintptr_t *)arg = (uintptr_t)&here;
	return NULL;
}

static void attr_helpers(void **state)
{
	pthread_attr_t attr;
	pthread_t t;
	uintptr_t ret = 0;
	void *stack;
	size_t size;

	(void)state;
	skip_under("ThreadSanitizer", TSAN_SMALL_STACKS);
	errno = 3;
	assert_int_equal(guard_pthread_attr_init(NULL, small_stack, pg), -EINVAL);
	assert_int_equal(guard_pthread_attr_init(&attr, PTHREAD_STACK_MIN - 1, pg), -EINVAL);
	assert_int_equal(guard_pthread_attr_init(&attr, small_stack, 0), -EINVAL);
	assert_int_equal(guard_pthread_attr_init(&attr, SIZE_MAX, pg), -EINVAL);
	assert_int_equal(guard_pthread_attr_init(&attr, small_stack, SIZE_MAX), -EINVAL);
	assert_int_equal(errno, 3);
	/* sizes are rounded up to pages */
	assert_int_equal(guard_pthread_attr_init(&attr, small_stack + 1, 1), 0);
	assert_int_equal(pthread_attr_getstack(&attr, &stack, &size), 0);
	assert_int_equal(size, small_stack + pg);
	assert_int_equal(page_prot((char *)stack - 1), want_native(T_ANON) ? PROT_READ | PROT_WRITE
									   : PROT_NONE);
	assert_int_equal(pthread_create(&t, NULL, where_am_i, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(pthread_create(&t, &attr, where_am_i, &ret), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(ret >= (uintptr_t)stack && ret < (uintptr_t)stack + size);
	assert_int_equal(guard_pthread_attr_destroy(&attr), 0);
	assert_int_equal(page_prot(stack), -1);
	/* an attribute with no stack of ours is left alone */
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(guard_pthread_attr_destroy(&attr), -EINVAL);
	assert_int_equal(guard_pthread_attr_destroy(NULL), -EINVAL);
	assert_int_equal(pthread_attr_destroy(&attr), 0);
	assert_int_equal(errno, 3);
}

static int report_fd;

static void on_overflow(int sig, siginfo_t *si, void *uc)
{
	void *addr = si->si_addr;

	(void)sig;
	(void)uc;
	if (write(report_fd, &addr, sizeof(addr)) != sizeof(addr))
		_exit(98);
	_exit(100 + SIGSEGV);
}

static volatile int forever = 1;

static int recurse(int depth)
{
	volatile char frame[512];

	frame[0] = (char)depth;
	return (forever ? recurse(depth + 1) : 0) + frame[0];
}

static void *overflower(void *arg)
{
	static char alt[64 << 10];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	struct sigaction sa;

	(void)arg;
	sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_overflow;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigaction(SIGSEGV, &sa, NULL);
	return (void *)(intptr_t)recurse(0);
}

/* A thread recursing without end, in a child: SIGSEGV inside the guard. */
static void overflow_hits_guard(void **state)
{
	size_t size = small_stack, guard = 16 * pg;
	void *info[2], *fault = NULL;
	int fds[2], status;
	pid_t pid;

	(void)state;
	skip_under("ThreadSanitizer", TSAN_SMALL_STACKS);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_attr_t attr;
		size_t sz;
		pthread_t t;

		close(fds[0]);
		report_fd = fds[1];
		if (guard_pthread_attr_init(&attr, size, guard) ||
		    pthread_attr_getstack(&attr, &info[0], &sz))
			_exit(97);
		info[1] = (void *)sz;
		if (write(fds[1], info, sizeof(info)) != sizeof(info))
			_exit(96);
		pthread_create(&t, &attr, overflower, NULL);
		pthread_join(t, NULL);
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], info, sizeof(info)), sizeof(info));
	assert_int_equal(read(fds[0], &fault, sizeof(fault)), sizeof(fault));
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 100 + SIGSEGV);
	printf("# stack [%p, +%#zx): SIGSEGV at %p, %td bytes below it\n", info[0], size, fault,
	       (char *)info[0] - (char *)fault);
	assert_true((char *)fault < (char *)info[0] && (char *)fault >= (char *)info[0] - guard);
}

enum { NTHREADS = 1000 };
static pthread_barrier_t all_up, let_go;

static void *waiter(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&all_up);
	pthread_barrier_wait(&let_go);
	return NULL;
}

/* 1000 live threads on guarded stacks: about 1000 VMAs, not 2000. */
static void thousand_threads(void **state)
{
	pthread_attr_t *attr;
	pthread_t *t;
	bool native = want_native(T_ANON);
	int before, during, after;

	(void)state;
	skip_under_sanitizer("it counts the process's VMAs, and the sanitizer maps memory of its own per thread");
	attr = calloc(NTHREADS, sizeof(*attr));
	t = calloc(NTHREADS, sizeof(*t));
	pthread_barrier_init(&all_up, NULL, NTHREADS + 1);
	pthread_barrier_init(&let_go, NULL, NTHREADS + 1);
	before = vmas_in(0, UINTPTR_MAX);
	for (int i = 0; i < NTHREADS; i++) {
		assert_int_equal(guard_pthread_attr_init(&attr[i], PTHREAD_STACK_MIN + pg, pg), 0);
		assert_int_equal(pthread_create(&t[i], &attr[i], waiter, NULL), 0);
	}
	pthread_barrier_wait(&all_up);
	during = vmas_in(0, UINTPTR_MAX);
	pthread_barrier_wait(&let_go);
	for (int i = 0; i < NTHREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(guard_pthread_attr_destroy(&attr[i]), 0);
	}
	after = vmas_in(0, UINTPTR_MAX);
	printf("# %d threads on guarded stacks: VMAs %d -> %d (+%d, %s), %d after\n", NTHREADS,
	       before, during, during - before, native ? "native" : "fallback", after);
	if (native)
		assert_true(during - before <= NTHREADS + 16);
	else
		assert_true(during - before >= 2 * NTHREADS - 16 &&
			    during - before <= 2 * NTHREADS + 16);
	assert_true(after <= before + 16);
	pthread_barrier_destroy(&all_up);
	pthread_barrier_destroy(&let_go);
	free(attr);
	free(t);
}

/*
 * guard_stack_free() after the caller took the stack away (munmap, or
 * mremap elsewhere) and another mapping took its address: it must not
 * unmap the newcomer. -EINVAL, the newcomer untouched, the entry gone.
 */
static void stack_replaced(enum replace_how how)
{
	char *s = guard_stack(16 * pg, pg, how == R_MREMAP ? GUARD_STACK_ABOVE : 0);
	size_t total = how == R_MREMAP ? 18 * pg : 17 * pg;
	struct replaced r;
	const char *why;

	assert_non_null(s);
	why = replace_mapping(s - pg, total, how, &r);
	replaced_check(why, &r, guard_stack_free, s, 16 * pg, total);
}

/* A stack whose guard the caller removed is no longer what the library made. */
static void guard_removed(void **state)
{
	char *s = guard_stack(4 * pg, pg, 0);

	(void)state;
	assert_non_null(s);
	assert_int_equal(guard_remove(s - pg, pg, 0), 0);
	assert_int_equal(guard_stack_free(s, 4 * pg), -EINVAL);
	assert_int_equal(page_prot(s), PROT_READ | PROT_WRITE);	/* left mapped */
	assert_int_equal(guard_stack_free(s, 4 * pg), -EINVAL);
	assert_int_equal(munmap(s - pg, 5 * pg), 0);
}

static void replaced_anon(void **s) { (void)s; stack_replaced(R_ANON); }
static void replaced_memfd(void **s) { (void)s; stack_replaced(R_MEMFD); }
static void replaced_file(void **s) { (void)s; stack_replaced(R_FILE); }
static void replaced_mremap(void **s) { (void)s; stack_replaced(R_MREMAP); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stack_layout),
		cmocka_unit_test(stack_errors),
		cmocka_unit_test(free_any_order),
		cmocka_unit_test(attr_helpers),
		cmocka_unit_test(overflow_hits_guard),
		cmocka_unit_test(thousand_threads),
		cmocka_unit_test(replaced_anon),
		cmocka_unit_test(replaced_memfd),
		cmocka_unit_test(replaced_file),
		cmocka_unit_test(replaced_mremap),
		cmocka_unit_test(guard_removed),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
