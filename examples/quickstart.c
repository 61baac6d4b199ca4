// SPDX-License-Identifier: LGPL-2.1-or-later
/* The README's quick start, shown there from its first include on (tests/doc-examples checks). */
#include <guard.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static void *work(void *buf)
{
	((char *)buf)[0] = 'x';		/* buf[-1] or buf[len] would be SIGSEGV */
	return NULL;
}

int main(void)
{
	size_t page = sysconf(_SC_PAGESIZE), len = 4 * page;
	unsigned int how;
	pthread_attr_t attr;	/* a 256 KiB thread stack with a 64 KiB guard below */
	pthread_t t;
	char *buf = guard_map_anon(len, PROT_READ | PROT_WRITE, MAP_PRIVATE, page, page, 0, &how);

	if (buf == MAP_FAILED || guard_pthread_attr_init(&attr, 256 << 10, 64 << 10) ||
	    pthread_create(&t, &attr, work, buf) || pthread_join(t, NULL))
		return 1;
	printf("buf[0] = %c, %s guards\n", buf[0], how == GUARD_METHOD_NATIVE ? "native" : "fallback");
	return guard_pthread_attr_destroy(&attr) || guard_unmap(buf, len);
}
