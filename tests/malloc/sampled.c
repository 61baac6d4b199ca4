// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Not a bug: 2 threads x 50,000 malloc/free pairs of varied sizes, for
 * corpus-run's check of sampled mode (sample=100: about 1,000 guarded,
 * said by the summary at exit).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *work(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	for (int i = 0; i < 50000; i++) {
		size_t n = 1 + rand_r(&seed) % 2000;
		char *p = malloc(n);

		if (!p)
			return p;
		memset(p, 0, n);
		free(p);
	}
	return arg;
}

int main(void)
{
	pthread_t t[2];
	void *ret[2];

	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, work, (void *)(uintptr_t)(i + 1)))
			return 2;
	for (int i = 0; i < 2; i++)
		if (pthread_join(t[i], &ret[i]) || !ret[i])
			return 2;
	return 0;
}
