// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libbench-null-audit-libc.so: the null audit module plus one libc call
 * (getauxval(AT_SECURE), as libguard-audit.so's la_version() made before
 * it dropped libc). Needing libc, it costs what any audit module written
 * against libc costs: a second copy of libc, loaded and relocated in the
 * module's own link-map namespace.
 */
#include <link.h>
#include <sys/auxv.h>

__attribute__((visibility("default"))) unsigned int la_version(unsigned int version)
{
	if (getauxval(AT_SECURE))
		return 0;
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}
