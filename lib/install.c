// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_install() and guard_remove(): native guards first, the mprotect
 * fallback by policy, and rollback so that a failed call leaves nothing
 * guarded that it guarded.
 */
#include "internal.h"
#include "valgrind.h"

#include <sys/mman.h>
#include <unistd.h>

/*
 * The one-page calls are the hot path: policy, install_one and remove_one
 * are inlined into the entry points, so that a call costs little more than
 * its madvise(); batch.c and the wrappers get them through the lg_ names.
 */
static inline int policy(unsigned int flags, unsigned int allowed, bool *native)
{
	if (flags & ~allowed || (flags & LG_FLAGS_ALL) == LG_FLAGS_ALL)
		return -EINVAL;
	*native = false;
	if (flags & GUARD_FALLBACK)
		return 0;
	if (lg_forced_fallback() || !(lg_caps() & GUARD_CAP_NATIVE_MASK))
		return flags & GUARD_NATIVE ? -EOPNOTSUPP : 0;
	*native = true;
	return 0;
}

int lg_native_policy(unsigned int flags, unsigned int allowed, bool *native)
{
	return policy(flags, allowed, native);
}

/*
 * One page lies in one VMA: it gets a guard or nothing happens, and the
 * kernel's answer is the whole check (native.c says why longer ranges
 * need more, and what GUARD_FRESH spares them).
 */
static inline int native_install(uintptr_t start, uintptr_t end, unsigned int flags)
{
	if (end - start == lg_page_size())
		return lg_madvise((void *)start, end - start, MADV_GUARD_INSTALL);
	return lg_native_install_range(start, end, flags & GUARD_FRESH);
}

/*
 * The kernel refused the range natively (EINVAL), or a seccomp filter
 * refused the advice (err EPERM, ENOSYS): the fallback, unless
 * GUARD_NATIVE, which gets -EOPNOTSUPP or the filter's error.
 */
static __attribute__((noinline)) int install_refused(uintptr_t start, uintptr_t end,
						     unsigned int flags, unsigned int *method,
						     int err)
{
	LG_KEEP_ERRNO;
	int ret;

	*method = 0;
	if (flags & GUARD_NATIVE)
		return err == -EINVAL ? -EOPNOTSUPP : err;
	ret = lg_fallback_install(start, end);
	*method = ret ? 0 : GUARD_METHOD_FALLBACK;
	return ret;
}

/* *method: the method that placed the guards, 0 on failure. */
static inline LG_HOT int install_one(uintptr_t start, uintptr_t end, unsigned int flags,
				     unsigned int *method)
{
	bool native;
	int ret = policy(flags, LG_INSTALL_FLAGS, &native);

	*method = 0;
	if (ret)
		return ret;
	if (native) {
		ret = native_install(start, end, flags);
		/* EINVAL here: this mapping can't have native guards. */
		if (ret != -EINVAL && !lg_refused(ret)) {
			*method = ret ? 0 : GUARD_METHOD_NATIVE;
			return ret;
		}
		return install_refused(start, end, flags, method, ret);
	}
	ret = lg_fallback_install(start, end);
	*method = ret ? 0 : GUARD_METHOD_FALLBACK;
	return ret;
}

static inline LG_HOT int native_remove(uintptr_t start, uintptr_t end)
{
	int ret = lg_madvise((void *)start, end - start, MADV_GUARD_REMOVE);

	if (__builtin_expect(lg_refused(ret), 0))
		return lg_native_remove_refused(start, end, ret);
	return ret == -EINVAL ? lg_native_remove_around(start, end) : ret;
}

/* Everything but the one-page native removal: out of line, like the above. */
static __attribute__((noinline)) int remove_checked(uintptr_t start, uintptr_t end,
						    unsigned int flags, unsigned int caps)
{
	int ret;

	/*
	 * Holes are refused first: otherwise one would be found after some
	 * guards were gone. The fallback checks the range itself, with the
	 * lookups it makes anyway. Removal takes away guards of both kinds,
	 * whatever the policy.
	 */
	if (!(flags & GUARD_NATIVE) && lg_fallback_any())
		ret = lg_fallback_remove(start, end);
	else
		ret = lg_range_mapped((void *)start, end - start);
	if (ret)
		return ret;
	if (!(flags & GUARD_FALLBACK) && (caps & GUARD_CAP_NATIVE_MASK))
		ret = native_remove(start, end);
	return ret;
}

/* Inlined into guard_remove() by force: gcc keeps it out of line for its two callers. */
static inline __attribute__((always_inline)) LG_HOT int remove_one(uintptr_t start, uintptr_t end,
								    unsigned int flags)
{
	unsigned int caps = lg_caps();
	bool native;
	int ret = policy(flags, LG_FLAGS_ALL, &native);

	if (ret)
		return ret;
	/*
	 * One page, native guards only: the kernel removes it or, unmapped,
	 * fails with ENOMEM having done nothing; no check needed first.
	 */
	if (end - start == lg_page_size() && !(flags & GUARD_FALLBACK) &&
	    (caps & GUARD_CAP_NATIVE_MASK) && ((flags & GUARD_NATIVE) || !lg_fallback_any()))
		return native_remove(start, end);
	return remove_checked(start, end, flags, caps);
}

/* Removed guards are memory again, for memcheck too (valgrind.h). */
static inline int unguarded(uintptr_t start, uintptr_t end, int ret)
{
	if (!ret && lg_on_valgrind())
		lg_vg_unguarded(start, end);
	return ret;
}

int lg_remove_one(uintptr_t start, uintptr_t end, unsigned int flags)
{
	return unguarded(start, end, remove_one(start, end, flags));
}

/*
 * The hot path of the entry points: one page, or a GUARD_FRESH range,
 * native guards by policy. lg_madvise() is a raw system call there
 * (raw_syscall.h), so nothing touches errno and the call needs no saving
 * of it: the kernel's answer is the whole call. Anything else, or a first
 * call (the probe), or memory the kernel can't guard natively, goes out
 * of line under LG_KEEP_ERRNO.
 */
static inline bool native_ok(unsigned int flags, unsigned int allowed)
{
	unsigned int w = __atomic_load_n(&lg_probed_word, __ATOMIC_ACQUIRE);

	return LG_HAVE_RAW_SYSCALL && !(flags & ~allowed) && (w & LG_WORD_FLAGS) == LG_PROBED &&
	       (w & GUARD_CAP_NATIVE_MASK);
}

/*
 * The fallback by policy (GUARD_FALLBACK; forced, for an install; or no
 * native guards here): a call with nothing of the native method in it.
 * lg_fallback_install() and lg_fallback_remove() touch errno only where
 * they call libc, and keep it there, so with raw system calls this needs
 * no saving of it (LG_KEEP_ERRNO_UNLESS_RAW says why).
 */
static inline bool fallback_only(unsigned int flags, unsigned int allowed, bool install)
{
	unsigned int w = __atomic_load_n(&lg_probed_word, __ATOMIC_ACQUIRE);

	return !(flags & ~allowed) && !(flags & GUARD_NATIVE) && (w & LG_PROBED) &&
	       ((flags & GUARD_FALLBACK) || (install && (w & LG_FORCED)) ||
		!(w & GUARD_CAP_NATIVE_MASK));
}

static __attribute__((noinline)) LG_HOT int install_fallback(uintptr_t start, uintptr_t end,
							    unsigned int *how)
{
	LG_KEEP_ERRNO_UNLESS_RAW;
	int ret = lg_fallback_install(start, end);

	if (!ret && lg_on_valgrind())
		lg_vg_guarded(start, end);
	*how = ret ? 0 : GUARD_METHOD_FALLBACK;
	return ret;
}

/* No record at all: only the check for holes. */
static __attribute__((noinline)) int range_mapped(uintptr_t start, uintptr_t end)
{
	return lg_range_mapped((void *)start, end - start);
}

/* remove_checked() with no native removal to follow */
static __attribute__((noinline)) LG_HOT int remove_fallback(uintptr_t start, uintptr_t end)
{
	LG_KEEP_ERRNO_UNLESS_RAW;
	int ret = lg_fallback_any() ? lg_fallback_remove(start, end) : range_mapped(start, end);

	return unguarded(start, end, ret);
}

static __attribute__((noinline)) int install_slow(uintptr_t start, uintptr_t end,
						  unsigned int flags, unsigned int *method)
{
	LG_KEEP_ERRNO;
	int ret = install_one(start, end, flags, method);

	/* Under valgrind every install comes here (native_ok()): memcheck learns of the guard. */
	if (!ret && lg_on_valgrind())
		lg_vg_guarded(start, end);
	return ret;
}

static __attribute__((noinline)) int remove_slow(uintptr_t start, uintptr_t end,
						 unsigned int flags)
{
	LG_KEEP_ERRNO;

	return unguarded(start, end, remove_one(start, end, flags));
}

/* ... and for a removal, round the VMAs that can't have guards, as native_remove() would. */
static __attribute__((noinline)) int remove_refused(uintptr_t start, uintptr_t end)
{
	LG_KEEP_ERRNO;

	return lg_native_remove_around(start, end);
}

/*
 * An aligned range: *how is the method used, 0 on failure. Inline where
 * it is one page or a range the caller vouches has no guards yet
 * (GUARD_FRESH: lg_native_install_range() says why no look first).
 */
static inline __attribute__((always_inline)) int install_range(uintptr_t start, uintptr_t end,
								unsigned int flags,
								unsigned int *how)
{
	*how = 0;
	if (native_ok(flags, GUARD_NATIVE | GUARD_FRESH) &&
	    ((flags & GUARD_FRESH) || end - start == lg_page_size())) {
		int ret = lg_madvise((void *)start, end - start, MADV_GUARD_INSTALL);

		if (!ret) {
			*how = GUARD_METHOD_NATIVE;
			return 0;
		}
		/* A longer range may be guarded in part: undo it all. */
		if (end - start != lg_page_size())
			lg_madvise((void *)start, end - start, MADV_GUARD_REMOVE);
		/* EINVAL: this mapping can't have native guards; EPERM, ENOSYS: a filter. */
		return ret != -EINVAL && !lg_refused(ret) ? ret
							   : install_refused(start, end, flags, how, ret);
	}
	if (fallback_only(flags, LG_INSTALL_FLAGS, true))
		return install_fallback(start, end, how);
	return install_slow(start, end, flags, how);
}

/* Both install entry points. */
static inline __attribute__((always_inline)) int install_entry(void *addr, size_t len,
								unsigned int flags,
								unsigned int *how)
{
	uintptr_t end;
	int ret = lg_check_range(addr, len, &end);

	if (ret) {
		*how = 0;
		return ret;
	}
	return install_range((uintptr_t)addr, end, flags, how);
}

/* For the batches and the wrappers (map_anon.c, map_file.c, stack.c). */
int lg_install_one(uintptr_t start, uintptr_t end, unsigned int flags, unsigned int *method)
{
	unsigned int how;

	return install_range(start, end, flags, method ? method : &how);
}

LG_EXPORT LG_HOT int guard_install(void *addr, size_t len, unsigned int flags)
{
	unsigned int how;

	return install_entry(addr, len, flags, &how);
}

LG_EXPORT LG_HOT int guard_install2(void *addr, size_t len, unsigned int flags,
				    unsigned int *method)
{
	unsigned int how;
	int ret = install_entry(addr, len, flags, &how);

	if (method)
		*method = how;
	return ret;
}

LG_EXPORT LG_HOT int guard_remove(void *addr, size_t len, unsigned int flags)
{
	uintptr_t end;
	int ret = lg_check_range(addr, len, &end);

	if (ret)
		return ret;
	/*
	 * Native guards only, no fallback records: one page the kernel removes
	 * or fails on having done nothing; a longer range is checked for holes
	 * first (remove_checked() says why), all by raw system calls.
	 */
	if (native_ok(flags, GUARD_NATIVE) && ((flags & GUARD_NATIVE) || !lg_fallback_any())) {
		size_t len = end - (uintptr_t)addr;

		ret = len == lg_page_size() ? 0 : lg_range_mapped(addr, len);
		if (!ret)
			ret = lg_madvise(addr, len, MADV_GUARD_REMOVE);
		if (__builtin_expect(lg_refused(ret), 0))
			return lg_native_remove_refused((uintptr_t)addr, end, ret);
		return ret != -EINVAL ? ret : remove_refused((uintptr_t)addr, end);
	}
	if (fallback_only(flags, LG_FLAGS_ALL, false))
		return remove_fallback((uintptr_t)addr, end);
	return remove_slow((uintptr_t)addr, end, flags);
}
