// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Not a bug: a program that runs out of memory (corpus-run gives it an
 * address-space limit). It allocates until malloc() says ENOMEM, frees
 * everything and allocates again: exit 0, or the step that went wrong.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX 100000

static void *held[MAX];

int main(void)
{
	size_t n = 0;

	for (;;) {
		size_t size = n % 2 ? 16 : 64 << 10;	/* the pool's, then the heap's */
		char *p;

		if (n == MAX)
			return 2;	/* the limit never came */
		errno = 0;
		p = malloc(size);
		if (!p)
			break;
		memset(p, 1, 16);
		held[n++] = p;
	}
	if (errno != ENOMEM)
		return 3;
	fprintf(stderr, "exhaust: %zu allocations before ENOMEM\n", n);
	while (n)
		free(held[--n]);
	return malloc(64 << 10) && calloc(4, 4) ? 0 : 4;
}
