// SPDX-License-Identifier: LGPL-2.1-or-later
#include "probe.h"

#include "pattern.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/*
 * volatile, and fenced by compiler barriers: the handler reads it. The
 * words of the arena are read and written with relaxed atomics: threads
 * race on them on purpose (one 8-byte mov each on x86_64, as volatile
 * gave), and ThreadSanitizer then sees no data race in that.
 */
static __thread sigjmp_buf *volatile probe_jmp;
static __thread struct fault probe_last;
static void (*probe_unexpected)(int sig, const siginfo_t *si);

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *jb = probe_jmp;

	(void)uc;
	if (!jb) {
		if (probe_unexpected)
			probe_unexpected(sig, si);
		signal(sig, SIG_DFL);
		return;		/* the access repeats and kills us */
	}
	probe_jmp = NULL;
	probe_last.sig = sig;
	probe_last.code = si->si_code;
	probe_last.addr = (uintptr_t)si->si_addr;
	/* SA_NODEFER: the signal is not blocked here, so no mask to restore. */
	siglongjmp(*jb, 1);
}

void probe_init(void (*unexpected)(int sig, const siginfo_t *si))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	probe_unexpected = unexpected;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

/*
 * sigsetjmp without saving the mask (a syscall per probe otherwise); the
 * handler runs with SA_NODEFER, so jumping out of it leaves the mask as
 * it was.
 */
/*
 * Under ThreadSanitizer the runtime calls the handler itself, with the
 * signal blocked whatever SA_NODEFER says: the mask is saved and restored
 * there, or the next fault would kill the program.
 */
#if defined(__SANITIZE_THREAD__)
#define PROBE_SAVEMASK 1
#else
#define PROBE_SAVEMASK 0
#endif
#define PROBE_BEGIN(f)                          \
	sigjmp_buf jb;                          \
	if (sigsetjmp(jb, PROBE_SAVEMASK)) {    \
		*(f) = probe_last;              \
		return (f)->sig;                \
	}                                       \
	probe_jmp = &jb;                        \
	__asm__ __volatile__("" ::: "memory");
#define PROBE_END(f)                            \
	__asm__ __volatile__("" ::: "memory");  \
	probe_jmp = NULL;                       \
	(f)->sig = 0;                           \
	return 0;

int probe_read(const void *page, const size_t *idx, size_t n, uint64_t *out, struct fault *f)
{
	const volatile uint64_t *w = page;

	PROBE_BEGIN(f)
	for (size_t i = 0; i < n; i++)
		out[i] = __atomic_load_n(&w[idx[i]], __ATOMIC_RELAXED);
	PROBE_END(f)
}

int probe_fill(void *page, size_t page_size, uint32_t p, struct fault *f)
{
	volatile uint64_t *w = page;

	PROBE_BEGIN(f)
	for (size_t k = 0; k < page_size / 8; k++)
		__atomic_store_n(&w[k], pattern_word(p, k), __ATOMIC_RELAXED);
	PROBE_END(f)
}

int probe_store(volatile uint64_t *addr, uint64_t val, struct fault *f)
{
	PROBE_BEGIN(f)
	__atomic_store_n(addr, val, __ATOMIC_RELAXED);
	PROBE_END(f)
}

int probe_vm_readv(const void *addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };
	ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);

	if (r < 0)
		return -errno;
	return (size_t)r == len ? 0 : -EFAULT;
}

int probe_mem_read(int fd, const void *addr, void *buf, size_t len)
{
	ssize_t r = pread(fd, buf, len, (off_t)(uintptr_t)addr);

	if (r < 0)
		return -errno;
	return (size_t)r == len ? 0 : -EFAULT;
}

const char *probe_code_name(int sig, int code)
{
	static __thread char buf[32];

	if (sig == SIGSEGV && code == SEGV_MAPERR)
		return "SEGV_MAPERR";
	if (sig == SIGSEGV && code == SEGV_ACCERR)
		return "SEGV_ACCERR";
	if (sig == SIGBUS && code == BUS_ADRERR)
		return "BUS_ADRERR";
	if (!sig)
		return "no fault";
	snprintf(buf, sizeof(buf), "%s code %d", sig == SIGBUS ? "SIGBUS" : sig == SIGSEGV ? "SIGSEGV" : "signal", code);
	return buf;
}
