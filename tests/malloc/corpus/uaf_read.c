// SPDX-License-Identifier: LGPL-2.1-or-later
/* A read of an object after it was freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *volatile p = malloc(40);
	int v;

	if (!p)
		return 2;
	strcpy(p, "hello");
#ifdef FIXED
	v = p[1];
	free(p);
#else
	free(p);
	v = p[1];
#endif
	return v == 'e' ? 0 : 3;
}
