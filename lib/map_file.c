// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_map_file() and guard_unmap(): a file mapping with guard regions
 * directly before and after it, in as few VMAs as the kernel allows.
 *
 * Layout: with native guards the trailing guard is more pages of the file
 * mapping itself, and so is the leading one when the file has room for it
 * before offset: one VMA. Otherwise the leading guard is an anonymous
 * PROT_NONE reservation (also guarded, so that guard_query() reports it)
 * and the mapping takes two VMAs. With the mprotect fallback each guard is
 * a PROT_NONE VMA of its own.
 */
#include "internal.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define MAP_FILE_FLAGS (MAP_TYPE | MAP_POPULATE | MAP_NORESERVE)
_Static_assert(sizeof(off_t) == 8, "64-bit file offsets");
#define OFF_T_MAX INT64_MAX

static void *fail(int err)
{
	errno = err;
	return MAP_FAILED;
}

static int check_args(int fd, off_t offset, size_t len, int prot, int flags, size_t before,
		      size_t after, size_t *total)
{
	size_t page = lg_page_size(), rlen = (len + page - 1) & ~(page - 1);
	int type = flags & MAP_TYPE;
	struct stat st;

	if (fd < 0 || fstat(fd, &st))
		return -EBADF;
	if ((type != MAP_SHARED && type != MAP_PRIVATE) || (flags & ~MAP_FILE_FLAGS) ||
	    (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)))
		return -EINVAL;
	if (!len || rlen < len || offset < 0 || (offset & (page - 1)) || (before & (page - 1)) ||
	    (after & (page - 1)))
		return -EINVAL;
	if (rlen + after < rlen || rlen + after + before < rlen + after ||
	    rlen + after + before > (size_t)PTRDIFF_MAX)
		return -EINVAL;
	if ((uintmax_t)(rlen + after) > (uintmax_t)(OFF_T_MAX - offset))
		return -EOVERFLOW;
	if (!S_ISREG(st.st_mode))
		return -ENODEV;
	/* Past EOF a mapping raises SIGBUS: its first byte at least must exist. */
	if (offset >= st.st_size)
		return -ENXIO;
	*total = before + rlen + after;
	return 0;
}

LG_EXPORT void *guard_map_file(int fd, off_t offset, size_t len, int prot, int flags,
			       size_t guard_before, size_t guard_after)
{
	int saved = errno;
	size_t page = lg_page_size(), rlen = (len + page - 1) & ~(page - 1), total = 0;
	struct lg_reg reg;
	char *base, *data;
	int ret = check_args(fd, offset, len, prot, flags, guard_before, guard_after, &total);

	if (ret)
		return fail(-ret);
	if (offset >= (off_t)guard_before) {
		base = mmap(NULL, total, prot, flags, fd, offset - (off_t)guard_before);
		if (base == MAP_FAILED)
			return MAP_FAILED;
	} else {
		/* No file before offset to hold the guard: reserve, then map over. */
		base = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			    -1, 0);
		if (base == MAP_FAILED)
			return MAP_FAILED;
		if (mmap(base + guard_before, rlen + guard_after, prot, flags | MAP_FIXED, fd,
			 offset) == MAP_FAILED) {
			ret = -errno;
			munmap(base, total);
			return fail(-ret);
		}
	}
	data = base + guard_before;
	reg = (struct lg_reg){ .user = (uintptr_t)data, .user_end = (uintptr_t)data + rlen,
			       .start = (uintptr_t)base, .end = (uintptr_t)base + total,
			       .kind = LG_REG_MAP };
	lg_fallback_fresh(reg.start, reg.end);
	if (guard_after)
		ret = guard_install(data + rlen, guard_after, GUARD_FRESH);
	if (!ret && guard_before)
		ret = guard_install(base, guard_before, GUARD_FRESH);
	ret = lg_reg_finish(&reg, false, ret);
	if (ret)
		return fail(-ret);
	errno = saved;
	return data;
}

LG_EXPORT int guard_unmap(void *addr, size_t len)
{
	LG_KEEP_ERRNO;
	uintptr_t end;
	int ret = lg_check_range(addr, len, &end);

	if (!ret)
		ret = lg_reg_release((uintptr_t)addr, end, LG_REG_MAP);
	return ret;
}
