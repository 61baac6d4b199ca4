// SPDX-License-Identifier: LGPL-2.1-or-later
/* An array from calloc() indexed one element past its end. */
#include <stdlib.h>

int main(void)
{
	long *volatile a = calloc(4, sizeof(long));
	int n = 4;

	if (!a || a[3])
		return 2;
#ifndef FIXED
	n = 5;
#endif
	for (int i = 0; i < n; i++)
		a[i] = i;
	free(a);
	return 0;
}
