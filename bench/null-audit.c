// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libbench-null-audit.so: an rtld-audit(7) module that does nothing, the
 * baseline of bench-audit-exec: la_version() only. It needs nothing, not
 * even libc (meson links with --as-needed), so it costs the least any
 * LD_AUDIT module can: a second link-map namespace holding itself.
 */
#include <link.h>

__attribute__((visibility("default"))) unsigned int la_version(unsigned int version)
{
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}
