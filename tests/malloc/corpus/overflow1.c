// SPDX-License-Identifier: LGPL-2.1-or-later
/* A write one byte past a 13-byte object: found with align=exact only. */
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *volatile p = malloc(13);

	if (!p)
		return 2;
#ifdef FIXED
	memset(p, 'x', 13);
#else
	memset(p, 'x', 14);
#endif
	free(p);
	return 0;
}
