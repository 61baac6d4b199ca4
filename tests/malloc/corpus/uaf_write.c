// SPDX-License-Identifier: LGPL-2.1-or-later
/* A write to an object after it was freed, from a pointer kept elsewhere. */
#include <stdlib.h>

struct node {
	struct node *next;
	int value;
};

int main(void)
{
	struct node *volatile a = malloc(sizeof(*a)), *volatile alias = a;

	if (!a)
		return 2;
	a->value = 1;
#ifdef FIXED
	alias->value = 2;
	free(a);
#else
	free(a);
	alias->value = 2;
#endif
	return 0;
}
