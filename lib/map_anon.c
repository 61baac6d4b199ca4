// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_map_anon(): anonymous memory with guard regions directly before
 * and after it, for allocators. One mmap() of the whole span and one
 * install per guard, exactly what a careful caller writes by hand, in one
 * VMA with native guards; guard_unmap() (map_file.c) undoes it whole.
 *
 * The guards go on memory mapped a moment ago, so they are installed
 * with GUARD_FRESH: no look at the range first (native.c says what that
 * spares). MAP_POPULATE populates the guard pages too, which the guards
 * then take away again: a page or two of waste, against a second system
 * call to populate the usable part alone.
 */
#include "internal.h"

#include <stdint.h>
#include <sys/mman.h>

#define MAP_ANON_FLAGS (MAP_TYPE | MAP_NORESERVE | MAP_POPULATE | MAP_STACK)

static int check_args(size_t len, int prot, int flags, size_t before, size_t after,
		      unsigned int gflags, size_t *total)
{
	size_t page = lg_page_size(), rlen = (len + page - 1) & ~(page - 1);
	int type = flags & MAP_TYPE;

	if ((type != MAP_SHARED && type != MAP_PRIVATE) || (flags & ~MAP_ANON_FLAGS) ||
	    (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)))
		return -EINVAL;
	if ((gflags & ~LG_FLAGS_ALL) || (gflags & LG_FLAGS_ALL) == LG_FLAGS_ALL)
		return -EINVAL;
	if (!len || rlen < len || (before & (page - 1)) || (after & (page - 1)))
		return -EINVAL;
	if (rlen + after < rlen || rlen + after + before < rlen + after ||
	    rlen + after + before > (size_t)PTRDIFF_MAX)
		return -EINVAL;
	*total = before + rlen + after;
	return 0;
}

LG_EXPORT void *guard_map_anon(size_t len, int prot, int flags, size_t guard_before,
			       size_t guard_after, unsigned int gflags, unsigned int *method)
{
	int saved = errno;
	size_t page = lg_page_size(), rlen = (len + page - 1) & ~(page - 1), total = 0;
	unsigned int how = 0, m = 0;
	struct lg_reg reg;
	struct lg_vma fresh;
	char *base, *data;
	long addr;
	bool native;
	int ret = check_args(len, prot, flags, guard_before, guard_after, gflags, &total);

	if (method)
		*method = 0;
	/* GUARD_NATIVE where native guards can't be had: refused before mapping. */
	if (!ret && (guard_before || guard_after))
		ret = lg_native_policy(gflags, LG_FLAGS_ALL, &native);
	if (ret) {
		errno = -ret;
		return MAP_FAILED;
	}
	addr = lg_mmap_anon(total, prot, flags);
	if (addr < 0 && addr >= -4095) {
		errno = (int)-addr;
		return MAP_FAILED;
	}
	base = (char *)addr;
	data = base + guard_before;
	reg = (struct lg_reg){ .user = (uintptr_t)data, .user_end = (uintptr_t)data + rlen,
			       .start = (uintptr_t)base, .end = (uintptr_t)base + total,
			       .kind = LG_REG_MAP };
	lg_fallback_fresh(reg.start, reg.end);
	/* private: the fallback needs no lookup (shared memory is shmem, whose inode the kernel names) */
	fresh = (struct lg_vma){ .start = reg.start, .end = reg.end, .prot = prot };
	if ((flags & MAP_TYPE) == MAP_PRIVATE)
		lg_fresh_vma = &fresh;
	if (guard_after)
		ret = lg_install_one(reg.user_end, reg.end, gflags | GUARD_FRESH, &how);
	if (!ret && guard_before)
		ret = lg_install_one(reg.start, reg.user, gflags | GUARD_FRESH, &m);
	lg_fresh_vma = NULL;
	ret = lg_reg_finish(&reg, (flags & MAP_TYPE) == MAP_PRIVATE, ret);
	if (ret) {
		errno = -ret;
		return MAP_FAILED;
	}
	if (method)
		*method = how | m;
	errno = saved;
	return data;
}
