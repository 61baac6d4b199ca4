// SPDX-License-Identifier: LGPL-2.1-or-later
/* The same object freed twice. */
#include <stdlib.h>

int main(void)
{
	void *volatile p = malloc(24);

	if (!p)
		return 2;
	free(p);
#ifndef FIXED
	free(p);
#endif
	return 0;
}
