// SPDX-License-Identifier: LGPL-2.1-or-later
/* Sixteen bytes written past the end of a 32-byte object. */
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *volatile p = malloc(32);

	if (!p)
		return 2;
#ifdef FIXED
	memset(p, 'x', 32);
#else
	memset(p, 'x', 48);
#endif
	free(p);
	return 0;
}
