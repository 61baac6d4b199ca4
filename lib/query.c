// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_query(): the native guards the kernel reports (pagemap.c), OR-ed
 * with the fallback guards whose records still hold (fallback.c).
 */
#include "internal.h"

#include <string.h>

LG_EXPORT int guard_query(const void *addr, size_t len, unsigned char *vec)
{
	LG_KEEP_ERRNO;
	size_t page = lg_page_size();
	uintptr_t start = (uintptr_t)addr, end;
	int ret = lg_check_range(addr, len, &end);

	if (ret)
		return ret;
	if (!vec)
		return -EFAULT;
	ret = lg_range_mapped(addr, end - start);
	if (ret)
		return ret;
	memset(vec, 0, (end - start) / page);
	if (lg_caps() & GUARD_CAP_NATIVE_MASK) {
		struct lg_runs runs;

		lg_runs_init(&runs);
		ret = lg_native_guards(start, end, &runs);
		if (!ret)
			lg_runs_vec(&runs, start, end, vec);
		lg_runs_free(&runs);
		if (ret)
			return ret;
	}
	return lg_fallback_any() ? lg_fallback_query(start, end, vec) : 0;
}
