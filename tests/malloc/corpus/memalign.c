// SPDX-License-Identifier: LGPL-2.1-or-later
/* memalign(32, 96) and posix_memalign(), the first overflowed by one byte. */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

int main(void)
{
	char *volatile p = memalign(32, 96);
	void *q;

	if (!p || (uintptr_t)p % 32 || posix_memalign(&q, 64, 100) || (uintptr_t)q % 64)
		return 2;
#ifdef FIXED
	p[95] = 1;
#else
	p[96] = 1;
#endif
	free(q);
	free(p);
	return 0;
}
