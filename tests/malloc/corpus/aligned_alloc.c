// SPDX-License-Identifier: LGPL-2.1-or-later
/* aligned_alloc(64, 128), written one cache line too far. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *volatile p = aligned_alloc(64, 128);

	if (!p || (uintptr_t)p % 64)
		return 2;
#ifdef FIXED
	memset(p, 0, 128);
#else
	memset(p, 0, 192);
#endif
	free(p);
	return 0;
}
