// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_stack(), guard_stack_free() and the pthread attribute helpers: a
 * thread stack in one anonymous mapping whose lowest pages (and, on
 * request, highest) are a guard region: one VMA per stack with native
 * guards, two or three with the fallback.
 */
#include "internal.h"

#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>

#define STACK_FLAGS (GUARD_NATIVE | GUARD_FALLBACK | GUARD_STACK_ABOVE)

LG_EXPORT void *guard_stack(size_t size, size_t guard_size, unsigned int flags)
{
	int saved = errno;
	size_t page = lg_page_size(), above = flags & GUARD_STACK_ABOVE ? guard_size : 0, total;
	unsigned int gflags = flags & (GUARD_NATIVE | GUARD_FALLBACK);
	struct lg_reg reg;
	struct lg_vma fresh;
	char *base;
	int ret;

	total = guard_size + size + above;
	if ((flags & ~STACK_FLAGS) || gflags == (GUARD_NATIVE | GUARD_FALLBACK) || !size ||
	    !guard_size || (size & (page - 1)) || (guard_size & (page - 1)) ||
	    total < size || total - size < guard_size || total > (size_t)PTRDIFF_MAX) {
		errno = EINVAL;
		return NULL;
	}
	base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
		    -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	reg = (struct lg_reg){ .user = (uintptr_t)base + guard_size,
			       .user_end = (uintptr_t)base + guard_size + size, .start = (uintptr_t)base,
			       .end = (uintptr_t)base + total, .kind = LG_REG_STACK };
	lg_fallback_fresh(reg.start, reg.end);
	fresh = (struct lg_vma){ .start = reg.start, .end = reg.end, .prot = PROT_READ | PROT_WRITE };
	lg_fresh_vma = &fresh;
	ret = guard_install(base, guard_size, gflags | GUARD_FRESH);
	if (!ret && above)
		ret = guard_install(base + guard_size + size, above, gflags | GUARD_FRESH);
	lg_fresh_vma = NULL;
	ret = lg_reg_finish(&reg, true, ret);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	errno = saved;
	return base + guard_size;
}

LG_EXPORT int guard_stack_free(void *base, size_t size)
{
	LG_KEEP_ERRNO;
	uintptr_t end;
	int ret = lg_check_range(base, size, &end);

	if (!ret && (size & (lg_page_size() - 1)))
		ret = -EINVAL;
	if (!ret)
		ret = lg_reg_release((uintptr_t)base, end, LG_REG_STACK);
	return ret;
}

LG_EXPORT int guard_pthread_attr_init(pthread_attr_t *attr, size_t size, size_t guard_size)
{
	LG_KEEP_ERRNO;
	size_t page = lg_page_size();
	size_t rsize = (size + page - 1) & ~(page - 1);
	size_t rguard = (guard_size + page - 1) & ~(page - 1);
	void *stack;
	int ret;

	if (!attr || size < (size_t)PTHREAD_STACK_MIN || !guard_size || rsize < size || rguard < guard_size)
		return -EINVAL;
	stack = guard_stack(rsize, rguard, 0);
	if (!stack)
		return -errno;
	ret = pthread_attr_init(attr);
	if (!ret) {
		ret = pthread_attr_setstack(attr, stack, rsize);
		if (ret)
			pthread_attr_destroy(attr);
	}
	if (ret) {
		guard_stack_free(stack, rsize);
		return -ret;
	}
	return 0;
}

LG_EXPORT int guard_pthread_attr_destroy(pthread_attr_t *attr)
{
	LG_KEEP_ERRNO;
	void *stack;
	size_t size;
	int ret;

	if (!attr || pthread_attr_getstack(attr, &stack, &size) || !stack)
		return -EINVAL;
	ret = guard_stack_free(stack, size);
	if (!ret)
		pthread_attr_destroy(attr);
	return ret;
}
