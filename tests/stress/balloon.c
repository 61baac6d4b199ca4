// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * stress-balloon MIB: lock MIB MiB of memory and hold it until killed.
 *
 * tests/stress/run-vm uses it to leave the testers little memory where
 * the guest kernel has no memory cgroup (CONFIG_MEMCG) to limit them:
 * mlocked pages can be neither reclaimed nor swapped, so everything else
 * (the testers, the page cache, the guest's tmpfs root) competes for what
 * is left, and reclaim and swap run while the testers work.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long mib = argc == 2 ? strtoul(argv[1], NULL, 0) : 0;
	size_t len = (size_t)mib << 20;
	void *p;

	if (argc != 2 || !mib) {
		fprintf(stderr, "usage: %s MIB\n", argv[0]);
		return 2;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED || mlock(p, len)) {
		fprintf(stderr, "stress-balloon: locking %lu MiB: %s\n", mib, strerror(errno));
		return 1;
	}
	printf("stress-balloon: %lu MiB locked\n", mib);
	fflush(stdout);
	for (;;)
		pause();
}
