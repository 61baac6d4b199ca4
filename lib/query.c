// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_query(): the native guards the kernel reports (pagemap.c), OR-ed
 * with the fallback guards whose records still hold (fallback.c).
 */
#include "internal.h"

#include <string.h>

/* The body of guard_query() on a checked range with no hole. */
static int query(uintptr_t start, uintptr_t end, unsigned char *vec)
{
	int ret;

	memset(vec, 0, (end - start) / lg_page_size());
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

LG_EXPORT int guard_query(const void *addr, size_t len, unsigned char *vec)
{
	LG_KEEP_ERRNO;
	uintptr_t start = (uintptr_t)addr, end;
	int ret = lg_check_range(addr, len, &end);

	if (ret)
		return ret;
	if (!vec)
		return -EFAULT;
	ret = lg_range_mapped(addr, end - start);
	if (ret)
		return ret;
	return query(start, end, vec);
}

int lg_all_guarded(uintptr_t start, uintptr_t end)
{
	unsigned char vec[256];	/* a chunk at a time: guards may be large */
	size_t page = lg_page_size(), chunk = sizeof(vec) * page;

	while (start < end) {
		uintptr_t to = end - start > chunk ? start + chunk : end;
		int ret = query(start, to, vec);

		if (ret)
			return ret;
		for (size_t i = 0; i < (to - start) / page; i++)
			if (!vec[i])
				return 0;
		start = to;
	}
	return 1;
}
