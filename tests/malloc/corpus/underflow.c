// SPDX-License-Identifier: LGPL-2.1-or-later
/* A write one byte before the start of an object: found with align=left. */
#include <stdlib.h>

int main(void)
{
	char *volatile p = malloc(32);

	if (!p)
		return 2;
#ifdef FIXED
	p[0] = 'x';
#else
	p[-1] = 'x';
#endif
	free(p);
	return 0;
}
