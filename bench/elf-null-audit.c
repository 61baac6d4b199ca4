// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libbench-elf-null-audit.so: an rtld-audit(7) module that does nothing,
 * the middle mode of bench-elf-holes. Any LD_AUDIT module costs ld.so a
 * second link-map namespace with its own libc; this one costs that and no
 * more, so that what libguard-audit.so adds on top is seen apart.
 */
#include <link.h>

__attribute__((visibility("default"))) unsigned int la_version(unsigned int version)
{
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}
