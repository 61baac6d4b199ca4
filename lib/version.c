// SPDX-License-Identifier: LGPL-2.1-or-later
/* guard_version(): the version this library was built as (meson.build's). */
#include "internal.h"

LG_EXPORT const char *guard_version(void)
{
	return LIBGUARD_VERSION;
}
