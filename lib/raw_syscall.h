/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * System calls without libc: the kernel's -errno comes back as the result
 * and errno is never touched. Two users: libguard-audit.so, which has no
 * libc at all (audit_rt.c), and libguard's hot path, where saving and
 * restoring errno around a libc wrapper (no function may change it) costs
 * a call to __errno_location() on top of the wrapper's own call: a few
 * percent of a one-page madvise(), the whole 5% budget under TCG.
 *
 * LG_HAVE_RAW_SYSCALL is 1 on the architectures with a shim here; the
 * library falls back to libc's wrappers elsewhere.
 */
#ifndef LIBGUARD_RAW_SYSCALL_H
#define LIBGUARD_RAW_SYSCALL_H

#if defined(__x86_64__)
#define LG_HAVE_RAW_SYSCALL 1
static inline long lg_raw_syscall(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
#define LG_HAVE_RAW_SYSCALL 1
static inline long lg_raw_syscall(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c, x3 __asm__("x3") = d, x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
#else
#define LG_HAVE_RAW_SYSCALL 0
#endif

#endif
