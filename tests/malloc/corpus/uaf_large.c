// SPDX-License-Identifier: LGPL-2.1-or-later
/* A read from the middle of a freed 50,000-byte object (a run of slots). */
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *volatile p = malloc(50000);
	int v;

	if (!p)
		return 2;
	memset(p, 'x', 50000);
#ifdef FIXED
	v = p[30000];
	free(p);
#else
	free(p);
	v = p[30000];
#endif
	return v == 'x' ? 0 : 3;
}
