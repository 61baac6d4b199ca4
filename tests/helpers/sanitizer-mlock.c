/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Linked into the test programs of a sanitizer build only (meson
 * -Db_sanitize=...). The sanitizer runtimes intercept mlock(), munlock(),
 * mlockall() and munlockall() and make them do nothing but return 0
 * (sanitizer_common: locking the shadow memory would pin terabytes). The
 * tests need mlocked memory for what it changes in the kernel (native
 * guards refused, the library's fallback taken) and would otherwise test
 * an unlocked mapping while believing it locked. A program's own
 * definition comes before the runtime's interceptor, for the program and
 * for libguard.so alike, so these go straight to the kernel. The tests
 * lock only their own small mappings; mlockall() is left to the
 * runtime's no-op, so that no test ever pins the shadow.
 */
#include <sys/syscall.h>
#include <unistd.h>

int mlock(const void *addr, size_t len)
{
	return (int)syscall(SYS_mlock, addr, len);
}

int munlock(const void *addr, size_t len)
{
	return (int)syscall(SYS_munlock, addr, len);
}
