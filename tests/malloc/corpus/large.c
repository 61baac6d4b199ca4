// SPDX-License-Identifier: LGPL-2.1-or-later
/* One byte past the end of a 100,000-byte object: larger than a slot, so a run of them. */
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *volatile p = malloc(100000);

	if (!p)
		return 2;
#ifdef FIXED
	memset(p, 'x', 100000);
#else
	memset(p, 'x', 100001);
#endif
	free(p);
	return 0;
}
