// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The method the pool must use here, from what the kernel is expected to
 * support (tests/helpers/expect.c) and LIBGUARD_FORCE_FALLBACK, never from
 * the module's own probe: prints "native" or "fallback (mprotect)", as
 * the report says it, and why on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"

int main(void)
{
	const char *why, *force = getenv("LIBGUARD_FORCE_FALLBACK");
	unsigned int caps = expect_caps(&why);
	int forced = force && *force && strcmp(force, "0");

	fprintf(stderr, "expect-method: %s%s\n", why, forced ? "; LIBGUARD_FORCE_FALLBACK set" : "");
	puts(!forced && (caps & EXPECT_ANON) ? "native" : "fallback (mprotect)");
	return 0;
}
