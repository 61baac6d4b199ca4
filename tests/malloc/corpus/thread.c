// SPDX-License-Identifier: LGPL-2.1-or-later
/* An overflow in a second thread, of an object that thread allocated. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void *work(void *arg)
{
	char *volatile p = malloc(48);

	(void)arg;
	if (!p)
		return p;
#ifdef FIXED
	memset(p, 0, 48);
#else
	memset(p, 0, 64);
#endif
	free(p);
	return p;
}

int main(void)
{
	pthread_t t;
	void *ret;

	if (pthread_create(&t, NULL, work, NULL) || pthread_join(t, &ret))
		return 2;
	return ret ? 0 : 2;
}
