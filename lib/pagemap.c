// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What the kernel says about native guards: PAGEMAP_SCAN with
 * PAGE_IS_GUARD where it has it, pagemap bit 58 otherwise, read on the
 * kept /proc/self/pagemap (proc.c) or any process's pagemap (maps.c),
 * checked before it is believed, as runs of guarded pages; and the
 * layout scan behind a multi-page native install (native.c).
 */
#include "internal.h"
#include "valgrind.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int lg_scan_layout(lg_scan_fn *scan, void *ctx, uintptr_t start, uintptr_t end,
		   struct lg_runs *guards)
{
	uintptr_t page_mask = lg_page_size() - 1, at = start, covered = start;
	struct lg_page_region r[64];
	int gap = 0;

	while (at < end) {
		struct lg_pm_scan_arg arg = {
			.size = sizeof(arg),
			.start = at,
			.end = end,
			.vec = (uintptr_t)r,
			.vec_len = sizeof(r) / sizeof(r[0]),
			.return_mask = LG_PAGE_IS_GUARD,
		};
		long n = scan(ctx, &arg);
		uintptr_t walked;

		if (n < 0)
			return (int)n;
		if ((unsigned long)n > sizeof(r) / sizeof(r[0]) || arg.walk_end <= at)
			return -EIO;
		walked = arg.walk_end < end ? (uintptr_t)arg.walk_end : end;
		for (long i = 0; i < n; i++) {
			int ret = 0;

			if (!lg_region_ok(&r[i], covered, walked, page_mask))
				return -EIO;
			gap |= r[i].start > covered;
			if (r[i].categories & LG_PAGE_IS_GUARD)
				ret = lg_runs_add(guards, r[i].start, r[i].end);
			if (ret)
				return ret;
			covered = r[i].end;
		}
		gap |= covered < walked;
		covered = at = walked;
	}
	return gap;
}

void lg_runs_init(struct lg_runs *runs)
{
	runs->n = 0;
	runs->cap = sizeof(runs->inline_v) / sizeof(runs->inline_v[0]);
	runs->v = runs->inline_v;
}

void lg_runs_free(struct lg_runs *runs)
{
	if (runs->v != runs->inline_v)
		free(runs->v);
	lg_runs_init(runs);
}

int lg_runs_add(struct lg_runs *runs, uintptr_t start, uintptr_t end)
{
	if (runs->n && runs->v[runs->n - 1].end == start) {
		runs->v[runs->n - 1].end = end;
		return 0;
	}
	if (runs->n == runs->cap) {
		size_t cap = runs->cap * 2;
		struct lg_run *v = malloc(cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memcpy(v, runs->v, runs->n * sizeof(*v));
		if (runs->v != runs->inline_v)
			free(runs->v);
		runs->v = v;
		runs->cap = cap;
	}
	runs->v[runs->n++] = (struct lg_run){ start, end };
	return 0;
}

/*
 * The kernel's answers are checked before they are believed: a region
 * outside the part just walked, out of order or unaligned, a count above
 * the vector, a read longer than asked or a walk that does not advance is
 * -EIO, never a run. Callers (guard_query()'s vector, guard_maps_next()'s
 * splitting) rely on the runs being ascending, disjoint, page-aligned and
 * inside [start, end).
 */
int lg_scan_runs(lg_scan_fn *scan, void *ctx, uintptr_t start, uintptr_t end,
		 struct lg_runs *runs)
{
	uintptr_t page_mask = lg_page_size() - 1;
	struct lg_page_region r[32];
	uintptr_t at = start;

	while (at < end) {
		struct lg_pm_scan_arg arg = {
			.size = sizeof(arg),
			.start = at,
			.end = end,
			.vec = (uintptr_t)r,
			.vec_len = sizeof(r) / sizeof(r[0]),
			.category_mask = LG_PAGE_IS_GUARD,
			.return_mask = LG_PAGE_IS_GUARD,
		};
		long n = scan(ctx, &arg);
		uintptr_t walked;

		if (n < 0)
			return (int)n;
		if ((unsigned long)n > sizeof(r) / sizeof(r[0]) || arg.walk_end <= at)
			return -EIO;
		walked = arg.walk_end < end ? (uintptr_t)arg.walk_end : end;
		for (long i = 0; i < n; i++) {
			int ret;

			if (!lg_region_ok(&r[i], at, walked, page_mask) ||
			    (runs->n && r[i].start < runs->v[runs->n - 1].end))
				return -EIO;
			ret = lg_runs_add(runs, r[i].start, r[i].end);
			if (ret)
				return ret;
		}
		at = walked;
	}
	return 0;
}

int lg_pagemap_runs(lg_read_fn *read_fn, void *ctx, uintptr_t start, uintptr_t end,
		    struct lg_runs *runs)
{
	size_t page = lg_page_size();
	uint64_t e[512];

	for (uintptr_t at = start; at < end;) {
		size_t want = (end - at) / page;
		ssize_t got;

		if (want > sizeof(e) / sizeof(e[0]))
			want = sizeof(e) / sizeof(e[0]);
		got = read_fn(ctx, e, want * sizeof(e[0]), (off_t)(at / page * sizeof(e[0])));
		if (got < 0)
			return (int)got;
		if (got < (ssize_t)sizeof(e[0]) || (size_t)got > want * sizeof(e[0]))
			return -EIO;
		for (ssize_t i = 0; i < got / (ssize_t)sizeof(e[0]); i++, at += page) {
			int ret = 0;

			if (e[i] >> LG_PM_GUARD_REGION_BIT & 1)
				ret = lg_runs_add(runs, at, at + page);
			if (ret)
				return ret;
		}
	}
	return 0;
}

void lg_runs_vec(const struct lg_runs *runs, uintptr_t start, uintptr_t end, unsigned char *vec)
{
	size_t page = lg_page_size();

	for (size_t i = 0; i < runs->n; i++) {
		uintptr_t s = runs->v[i].start > start ? runs->v[i].start : start;
		uintptr_t e = runs->v[i].end < end ? runs->v[i].end : end;

		for (uintptr_t p = s; p < e; p += page)
			vec[(p - start) / page] |= GUARD_QUERY_NATIVE;
	}
}

long lg_pagemap_scan(int fd, struct lg_pm_scan_arg *arg)
{
	long n = ioctl(fd, LG_PAGEMAP_SCAN, arg);

	if (n < 0)
		return -errno;
	/* The regions written, unknown to valgrind (a count above vec_len is checked by callers). */
	if ((unsigned long)n <= arg->vec_len)
		lg_vg_defined((void *)(uintptr_t)arg->vec, (size_t)n * sizeof(struct lg_page_region));
	return n;
}

static long scan_ioctl(void *ctx, struct lg_pm_scan_arg *arg)
{
	return lg_pagemap_scan(*(int *)ctx, arg);
}

static ssize_t pagemap_pread(void *ctx, void *buf, size_t len, off_t off)
{
	ssize_t got = pread(*(int *)ctx, buf, len, off);

	return got < 0 ? -errno : got;
}

bool lg_guards_reportable(void)
{
	unsigned int caps = lg_caps();

	return !(caps & GUARD_CAP_NATIVE_MASK) ||
	       (caps & (GUARD_CAP_PAGEMAP_SCAN | GUARD_CAP_PAGEMAP));
}

int lg_pagemap_guards(int fd, uintptr_t start, uintptr_t end, struct lg_runs *runs)
{
	unsigned int caps = lg_caps();

	if (caps & GUARD_CAP_PAGEMAP_SCAN)
		return lg_scan_runs(scan_ioctl, &fd, start, end, runs);
	if (caps & GUARD_CAP_PAGEMAP)
		return lg_pagemap_runs(pagemap_pread, &fd, start, end, runs);
	return -EOPNOTSUPP;
}

int lg_native_guards(uintptr_t start, uintptr_t end, struct lg_runs *runs)
{
	unsigned int caps = lg_caps();
	int fd, ret;

	if (!(caps & (GUARD_CAP_PAGEMAP_SCAN | GUARD_CAP_PAGEMAP)))
		return -EOPNOTSUPP;
	/*
	 * PAGEMAP_SCAN through the kept descriptor (proc.c): on a number
	 * that names another file now the ioctl fails, and is retried once on
	 * a fresh one. pread() would succeed on any file, with garbage: for
	 * bit 58 the file is opened per call.
	 */
	for (int tries = 0; caps & GUARD_CAP_PAGEMAP_SCAN; tries++) {
		fd = lg_proc_fd(LG_PROC_PAGEMAP);
		if (fd < 0)
			return fd;
		runs->n = 0;
		ret = lg_pagemap_guards(fd, start, end, runs);
		if (ret >= 0 || tries || !lg_proc_lost(LG_PROC_PAGEMAP, fd))
			return ret;
	}
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = lg_pagemap_guards(fd, start, end, runs);
	close(fd);
	return ret;
}

