// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The report, and the SIGSEGV handler that decides whether a fault is
 * ours. Installed when the pool is made (the first allocation), with
 * SA_SIGINFO | SA_ONSTACK. A handler installed before ours is kept and
 * called for faults outside the pool. A program that installs its own
 * later through sigaction() or signal() (this module interposes both,
 * for SIGSEGV only) gets the same: its handler is recorded and called for
 * faults that are not ours, sigaction() gives it back as the old action,
 * and ours stays in the kernel. A pool fault prints one report with
 * write(2) alone, then restores SIG_DFL and returns: the access faults
 * again and the process dies of its SIGSEGV, core dump and all.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "gm.h"
#include "guard.h"

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static struct sigaction prog_act;	/* the handler the program has, as it believes */
static bool installed;

/* The output buffer: one report at a time (report_lock), flushed in big writes. */
static char out[8192];
static size_t outlen;
static int outfd = STDERR_FILENO;
static int report_lock;

static void flush(void)
{
	size_t done = 0;

	while (done < outlen) {
		ssize_t n = write(outfd, out + done, outlen - done);

		if (n <= 0 && errno != EINTR)
			break;
		if (n > 0)
			done += (size_t)n;
	}
	outlen = 0;
}

void gm_write(int fd, const char *s)
{
	size_t n = strlen(s);

	if (fd != outfd) {
		flush();
		outfd = fd;
	}
	while (n) {
		size_t k = n < sizeof(out) - outlen ? n : sizeof(out) - outlen;

		memcpy(out + outlen, s, k);
		outlen += k;
		s += k;
		n -= k;
		if (outlen == sizeof(out))
			flush();
	}
}

void gm_write_num(int fd, uintptr_t v, int base)
{
	char buf[24], *p = buf + sizeof(buf);

	*--p = '\0';
	do {
		*--p = "0123456789abcdef"[v % (unsigned int)base];
		v /= (unsigned int)base;
	} while (v);
	gm_write(fd, p);
}

void gm_flush(void)
{
	flush();
}

static void lock_report(void)
{
	while (__atomic_exchange_n(&report_lock, 1, __ATOMIC_ACQUIRE))
		pause();	/* another thread reports: the process ends with it */
}

static const char *const kind_name[] = {
	[GM_OVERFLOW] = "heap-buffer-overflow",
	[GM_UNDERFLOW] = "heap-buffer-underflow",
	[GM_UAF] = "heap-use-after-free",
	[GM_DOUBLE_FREE] = "double-free",
	[GM_INVALID_FREE] = "invalid-free",
	[GM_WILD] = "wild-access",
};

static void hex(uintptr_t v)
{
	gm_write(2, "0x");
	gm_write_num(2, v, 16);
}

static void header(enum gm_kind kind, uintptr_t addr, const char *access)
{
	gm_write(2, "==");
	gm_write_num(2, (uintptr_t)getpid(), 10);
	gm_write(2, "==ERROR: libguard-malloc: ");
	gm_write(2, kind_name[kind]);
	gm_write(2, " on address ");
	hex(addr);
	gm_write(2, " (");
	gm_write(2, access);
	gm_write(2, ") in thread T");
	gm_write_num(2, (uintptr_t)gm_gettid(), 10);
	gm_write(2, "\n");
}

/* "0xA is located N bytes to the right of the 13-byte region [0xP,0xE)" */
static void where(uintptr_t a, const struct gm_slot *s, const char *state)
{
	uintptr_t end = s->ptr + s->size;

	hex(a);
	gm_write(2, " is located ");
	if (a < s->ptr) {
		gm_write_num(2, s->ptr - a, 10);
		gm_write(2, " bytes to the left of");
	} else if (a >= end && !(a == s->ptr && !s->size)) {
		gm_write_num(2, a - end, 10);
		gm_write(2, " bytes to the right of");
	} else {
		gm_write_num(2, a - s->ptr, 10);
		gm_write(2, " bytes inside of");
	}
	gm_write(2, " the ");
	gm_write(2, state);
	gm_write_num(2, s->size, 10);
	gm_write(2, "-byte region [");
	hex(s->ptr);
	gm_write(2, ",");
	hex(end);
	gm_write(2, ")\n");
}

static void traces(const struct gm_slot *s, bool freed)
{
	gm_write(2, "allocated by thread T");
	gm_write_num(2, (uintptr_t)s->alloc.tid, 10);
	gm_write(2, " here:\n");
	gm_trace_print(2, &s->alloc);
	if (freed) {
		gm_write(2, "freed by thread T");
		gm_write_num(2, (uintptr_t)s->free.tid, 10);
		gm_write(2, " here:\n");
		gm_trace_print(2, &s->free);
	}
}

static void footer(enum gm_kind kind)
{
	static const char *const place_name[] = { "right", "left", "random", "exact" };

	gm_write(2, "guards: ");
	gm_write(2, gm_method == GUARD_METHOD_NATIVE ? "native" : "fallback (mprotect)");
	gm_write(2, ", placement ");
	gm_write(2, place_name[gm_opt.place]);
	gm_write(2, "\nSUMMARY: libguard-malloc: ");
	gm_write(2, kind_name[kind]);
	gm_write(2, "\n");
	flush();
	__atomic_fetch_add(&gm_pool.st.reports, 1, __ATOMIC_RELAXED);
}

/* The kernel's default for SIGSEGV again, past any interposition. */
static void default_segv(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	if (real_sigaction)
		real_sigaction(SIGSEGV, &sa, NULL);
	else
		signal(SIGSEGV, SIG_DFL);
}

/* The module's own frames on top of a stack, all but the last: the entry point the program called. */
static unsigned int own_frames(void *const *pc, unsigned int n)
{
	Dl_info self, f;
	unsigned int i = 0;

	if (!dladdr((void *)gm_report_bad_free, &self))
		return 0;
	while (i + 1 < n && dladdr(pc[i + 1], &f) && f.dli_fbase == self.dli_fbase)
		i++;
	return i;
}

void gm_report_bad_free(enum gm_kind kind, uintptr_t addr, size_t i, const char *what)
{
	void *pc[GM_TRACE_DEPTH];
	struct gm_trace here;
	sigset_t set;

	lock_report();
	header(kind, addr, what);
	gm_trace_capture(&here, 0);
	memcpy(pc, here.pc, sizeof(pc));
	gm_trace_print_pcs(2, pc + own_frames(pc, here.depth), here.depth - own_frames(pc, here.depth));
	if (i != SIZE_MAX && gm_pool.meta[i].state != GM_NEVER) {
		const struct gm_slot *s = &gm_pool.meta[i];
		bool freed = s->state != GM_LIVE;

		where(addr, s, freed ? "freed " : "");
		traces(s, freed);
	} else {
		hex(addr);
		gm_write(2, " is in the guarded pool but no allocation starts there\n");
	}
	footer(kind);
	default_segv();
	sigemptyset(&set);
	sigaddset(&set, SIGSEGV);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	for (;;) {
		raise(SIGSEGV);
		_exit(128 + SIGSEGV);
	}
}

/* The slot a guard-page fault belongs to: the live neighbour, else the nearer one used. */
static size_t owner(uintptr_t a, enum gm_kind *kind)
{
	struct gm_pool *p = &gm_pool;
	size_t in = gm_slot_of(a), left = SIZE_MAX, right = SIZE_MAX, i;
	uintptr_t rel;

	if (in != SIZE_MAX) {
		in = gm_slot_head(in);	/* a run's record is in its first slot */
		*kind = p->meta[in].state == GM_FREED ? GM_UAF : GM_WILD;
		return p->meta[in].state == GM_NEVER ? SIZE_MAX : in;
	}
	if (a >= p->base + p->page) {
		rel = a - p->base - p->page;
		left = gm_slot_head(rel / p->stride);
		if (rel / p->stride + 1 < p->nslots)
			right = gm_slot_head(rel / p->stride + 1);
	} else {
		right = 0;
	}
	for (int pass = 0; pass < 2; pass++) {
		uint32_t want = pass ? GM_FREED : GM_LIVE;
		bool l = left != SIZE_MAX && p->meta[left].state == want;
		bool r = right != SIZE_MAX && p->meta[right].state == want;

		if (l && r)	/* both: the nearer object */
			i = a - (p->meta[left].ptr + p->meta[left].size) <= p->meta[right].ptr - a ? left : right;
		else
			i = l ? left : r ? right : SIZE_MAX;
		if (i != SIZE_MAX) {
			*kind = pass ? GM_UAF : i == left ? GM_OVERFLOW : GM_UNDERFLOW;
			return i;
		}
	}
	*kind = GM_WILD;
	return SIZE_MAX;
}

static const char *access_of(void *ucv)
{
#if defined(__x86_64__)
	const ucontext_t *uc = ucv;

	return uc->uc_mcontext.gregs[REG_ERR] & 2 ? "WRITE" : "READ";
#else
	(void)ucv;
	return "access";
#endif
}

static void report_fault(uintptr_t a, void *uc)
{
	enum gm_kind kind;
	size_t i = owner(a, &kind);
	struct gm_trace here;

	unsigned int from = 0;

	lock_report();
	header(kind, a, access_of(uc));
	/* The access's stack: the unwinder crosses the signal frame; start at the faulting pc. */
	gm_trace_capture(&here, 0);
#if defined(__x86_64__)
	{
		void *pc = (void *)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];

		while (from < here.depth && here.pc[from] != pc)
			from++;
		if (from == here.depth) {
			gm_trace_print_pcs(2, &pc, 1);
			from = here.depth;
		}
	}
#endif
	gm_trace_print_pcs(2, here.pc + from, here.depth - from);
	if (i != SIZE_MAX) {
		const struct gm_slot *s = &gm_pool.meta[i];
		bool freed = s->state == GM_FREED;

		where(a, s, freed ? "freed " : "");
		traces(s, freed);
	} else {
		hex(a);
		gm_write(2, " is a guard of the pool next to no allocation\n");
	}
	footer(kind);
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction act = prog_act;
	sigset_t old;

	if (act.sa_flags & SA_RESETHAND) {
		prog_act.sa_handler = SIG_DFL;
		prog_act.sa_flags &= ~SA_SIGINFO;
	}
	if (!(act.sa_flags & SA_SIGINFO) && (act.sa_handler == SIG_DFL || act.sa_handler == SIG_IGN)) {
		/* The kernel's own action: a fault recurs on return, a sent signal is sent again. */
		default_segv();
		if (si->si_code <= 0)
			raise(sig);
		return;
	}
	pthread_sigmask(SIG_BLOCK, &act.sa_mask, &old);
	if (act.sa_flags & SA_SIGINFO)
		act.sa_sigaction(sig, si, uc);
	else
		act.sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void handler(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	if (si->si_code > 0 && gm_in_pool(si->si_addr)) {
		report_fault((uintptr_t)si->si_addr, uc);
		default_segv();
	} else {
		chain(sig, si, uc);
	}
	errno = saved;
}

void gm_report_install(void)
{
	struct sigaction sa;
	void *f = dlsym(RTLD_NEXT, "sigaction");

	memcpy(&real_sigaction, &f, sizeof(f));
	if (!real_sigaction)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (!real_sigaction(SIGSEGV, &sa, &prog_act))
		__atomic_store_n(&installed, true, __ATOMIC_RELEASE);
}

GM_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
	if (sig == SIGSEGV && __atomic_load_n(&installed, __ATOMIC_ACQUIRE)) {
		struct sigaction prev = prog_act;

		if (act)
			prog_act = *act;
		if (oldact)
			*oldact = prev;
		return 0;
	}
	if (!real_sigaction) {
		void *f = dlsym(RTLD_NEXT, "sigaction");

		memcpy(&real_sigaction, &f, sizeof(f));
	}
	return real_sigaction(sig, act, oldact);
}

GM_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART;	/* glibc's signal(): BSD semantics */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, sig);
	if (sig == SIGSEGV && __atomic_load_n(&installed, __ATOMIC_ACQUIRE)) {
		if (sigaction(sig, &sa, &old))
			return SIG_ERR;
		return old.sa_handler;
	}
	{
		static sighandler_t (*real_signal)(int, sighandler_t);

		if (!real_signal) {
			void *f = dlsym(RTLD_NEXT, "signal");

			memcpy(&real_signal, &f, sizeof(f));
		}
		return real_signal ? real_signal(sig, h) : SIG_ERR;
	}
}
