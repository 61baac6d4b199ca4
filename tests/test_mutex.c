// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The library's mutex itself (lib/lock.c, a futex word): threads that
 * increment a plain counter under it, contended enough that they sleep
 * in the kernel and wake each other, lose no increment; and a fork()
 * while other threads take it leaves the child a mutex it can take.
 * tests/test_lock.c checks the fork-safety contract through the API.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

#define THREADS 4
#define ROUNDS 200000

static long counter;	/* plain: only the mutex orders its updates */
static int stop;

static void *increment(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		long v;

		lg_lock();
		/* a read and a write apart: without the mutex, increments get lost */
		v = *(volatile long *)&counter;
		for (int k = 0; k < 20; k++)
			__asm__ volatile("" ::: "memory");
		*(volatile long *)&counter = v + 1;
		/* hold it a little now and then, so that others must wait */
		if (!(i & 1023))
			sched_yield();
		lg_unlock();
	}
	return NULL;
}

static void no_lost_increments(void **state)
{
	pthread_t t[THREADS];

	(void)state;
	counter = 0;
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, increment, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(counter, (long)THREADS * ROUNDS);
}

static void *churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		lg_lock();
		counter++;
		lg_unlock();
	}
	return NULL;
}

/* fork() in a loop beside threads that take the mutex: each child takes it. */
static void fork_while_contended(void **state)
{
	pthread_t t[2];

	(void)state;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churn, NULL), 0);
	for (int i = 0; i < 200; i++) {
		int status;
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (!pid) {
			lg_lock();
			lg_unlock();
			lg_lock();
			lg_unlock();
			_exit(0);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_lost_increments),
		cmocka_unit_test(fork_while_contended),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
