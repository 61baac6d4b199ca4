// SPDX-License-Identifier: LGPL-2.1-or-later
/* realloc() shrinks an object; the old size is still used. */
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *volatile p = malloc(64), *volatile q;

	if (!p)
		return 2;
	memset(p, 'x', 64);
	q = realloc(p, 16);
	if (!q)
		return 2;
#ifdef FIXED
	memset(q, 'y', 16);
#else
	memset(q, 'y', 64);
#endif
	free(q);
	return 0;
}
