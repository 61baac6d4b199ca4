// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * threads: worker threads on guarded stacks, one call each; prints the
 * VMA count before and while they run (one VMA per stack at most with
 * native guards, two with the mprotect fallback).
 */
#include <guard.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define THREADS 16

static pthread_barrier_t up, go;

static int count_vmas(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0, c;

	while (f && (c = getc(f)) != EOF)
		n += c == '\n';
	if (f)
		fclose(f);
	return n;
}

static void *worker(void *arg)
{
	char buf[8 << 10];	/* two pages on most kernels: some stack really used */

	memset(buf, (int)(long)arg, sizeof(buf));	/* use the stack */
	pthread_barrier_wait(&up);
	pthread_barrier_wait(&go);
	return NULL;
}

int main(void)
{
	pthread_attr_t attr[THREADS];
	pthread_t t[THREADS];
	int before = count_vmas(), during;

	pthread_barrier_init(&up, NULL, THREADS + 1);
	pthread_barrier_init(&go, NULL, THREADS + 1);
	for (long i = 0; i < THREADS; i++) {
		int ret = guard_pthread_attr_init(&attr[i], 128 << 10, 64 << 10);

		if (ret || pthread_create(&t[i], &attr[i], worker, (void *)i)) {
			fprintf(stderr, "threads: %s\n", strerror(-ret));
			return 1;
		}
	}
	pthread_barrier_wait(&up);
	during = count_vmas();
	pthread_barrier_wait(&go);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		guard_pthread_attr_destroy(&attr[i]);
	}
	printf("threads: %d threads on guarded stacks (128 KiB + 64 KiB guard): VMAs %d -> %d "
	       "(+%d), %d after\n", THREADS, before, during, during - before, count_vmas());
	return during - before > 2 * THREADS + 2;
}
