// SPDX-License-Identifier: LGPL-2.1-or-later
/* free() of a pointer into the middle of an object. */
#include <stdlib.h>

int main(void)
{
	char *volatile p = malloc(64);

	if (!p)
		return 2;
#ifdef FIXED
	free(p);
#else
	char *volatile inner = p + 8;

	free(inner);
#endif
	return 0;
}
