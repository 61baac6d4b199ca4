// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Security properties, each a test, on every kernel (what each kernel
 * must do comes from helpers/expect.h, never from the library's probe):
 *
 *  - a native guard can't be lifted by mprotect() with any protection, by
 *    mremap() (move, grow, shrink: it travels with its page or goes with
 *    the unmapped part, and is never accessible) or by MADV_DONTNEED,
 *    MADV_FREE, MADV_COLD, MADV_PAGEOUT, MADV_REMOVE or MADV_POPULATE_*;
 *    a fallback guard survives all but mprotect(), which opens it, as
 *    libguard(7) says, and which guard_query() then reports truthfully;
 *  - a read-only file mapping, a PROT_READ anonymous mapping and a memfd
 *    sealed with F_SEAL_WRITE never become writable through any guard
 *    operation, native or fallback: never PROT_WRITE in /proc/self/maps,
 *    no write succeeds before, while (from a thread writing all along) or
 *    after, removal restores the original protection, the sealed content
 *    is unchanged and the seal holds;
 *  - process_madvise() guard advice on another process is refused: with
 *    EINVAL for root (our series' rule, upstream's too; Debian's stock
 *    kernel takes no guard advice in process_madvise() at all), and as
 *    nobody against a root process and against its own child with the
 *    error of the check that stops it; the target's memory is untouched;
 *  - the LD_AUDIT module does nothing in a setuid program (glibc ignores
 *    LD_AUDIT there, and the module declines anyway) and never makes a
 *    page of any loaded object more accessible than it was.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise 440
#endif

/* The guard at p holds: reads and writes fault there, at p. */
static void assert_guarded(char *p)
{
	void *fault;

	assert_int_equal(access_in_child(p, false, &fault), SIGSEGV);
	assert_ptr_equal(fault, p);
	assert_int_equal(access_in_child(p, true, &fault), SIGSEGV);
	assert_ptr_equal(fault, p);
}

static void assert_readable(char *p)
{
	void *fault;

	assert_int_equal(access_in_child(p, false, &fault), 0);
}

/* guard_install(flags 0) on this kind: native guards here, or the fallback. */
static bool native(enum tkind kind)
{
	return want_native(kind);
}

static const char *new_map(enum tkind kind, size_t pages, struct tmap *m)
{
	const char *why = tmap_new(kind, pages, m);

	if (why)
		printf("# %s: %s\n", kind_name(kind), why);
	return why;
}

/*
 * mprotect() over a guarded page with every protection the mapping
 * allows: a native guard stays (reads and writes fault), a fallback guard
 * opens (libguard(7)) and guard_query() says so, and a later
 * guard_remove() leaves the protection the caller set.
 */
static void mprotect_kind(enum tkind kind)
{
	static const int prots[] = { PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE,
				     PROT_READ | PROT_EXEC, PROT_READ | PROT_WRITE | PROT_EXEC,
				     PROT_WRITE };
	int orig = kind == T_READONLY ? PROT_READ : PROT_READ | PROT_WRITE;
	struct tmap m;

	if (new_map(kind, 3, &m))
		skip();
	for (size_t i = 0; i < sizeof(prots) / sizeof(prots[0]); i++) {
		int prot = prots[i];

		assert_int_equal(guard_install(m.addr + pg, pg, 0), 0);
		/* read-only files refuse PROT_WRITE: the guard must hold either way */
		if (mprotect(m.addr, 3 * pg, prot)) {
			assert_int_equal(kind, T_READONLY);
			assert_true(prot & PROT_WRITE);
			prot = -1;
		}
		if (native(kind) || prot == PROT_NONE || prot == -1) {
			assert_guarded(m.addr + pg);
		} else {
			/* the fallback's documented limit: the page is the caller's again */
			assert_int_equal(page_prot(m.addr + pg), prot);
			assert_string_equal(query_str(m.addr, 3 * pg), "000");
		}
		if (native(kind) && prot != -1 && (prot != PROT_NONE || query_reports()))
			assert_string_equal(query_str(m.addr, 3 * pg), "010");
		assert_int_equal(guard_remove(m.addr + pg, pg, 0), 0);
		/*
		 * Removal leaves the caller's protection, native or fallback:
		 * the fallback forgets a guard the caller opened, and one the
		 * caller made PROT_NONE with its neighbours (the VMA is then
		 * wider than the one it protected: no longer its own).
		 */
		if (prot == -1)
			assert_int_equal(page_prot(m.addr + pg), orig);
		else
			assert_int_equal(page_prot(m.addr + pg), prot);
		assert_int_equal(mprotect(m.addr, 3 * pg, orig), 0);
	}
	tmap_free(&m);
}

static void mprotect_anon(void **s) { (void)s; mprotect_kind(T_ANON); }
static void mprotect_shmem(void **s) { (void)s; mprotect_kind(T_SHMEM); }
static void mprotect_file(void **s) { (void)s; mprotect_kind(T_FILE); }
static void mprotect_readonly(void **s) { (void)s; mprotect_kind(T_READONLY); }

/* A free range of pages: reserved, then released for MAP_FIXED use. */
static char *free_range(size_t pages)
{
	char *p = mmap(NULL, pages * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	assert_int_equal(munmap(p, pages * pg), 0);
	return p;
}

/*
 * mremap(): the guard travels with its page (move, grow) or goes with the
 * part that is unmapped (shrink); a mapping later placed where it was is
 * not guarded. The fallback's guard is a VMA of its own, so a remap of
 * the whole mapping fails (EFAULT: more than one VMA) and the guard stays
 * where it was, or, where the kernel moves several VMAs at once (recent
 * upstream, 6.18 on the host), travels as a PROT_NONE VMA; moving the guarded page alone takes
 * its guard along with either method.
 */
static void mremap_kind(enum tkind kind)
{
	struct tmap m;
	char *to, *p, *fresh;

	if (new_map(kind, 3, &m))
		skip();
	assert_int_equal(guard_install(m.addr + pg, pg, 0), 0);
	/* move the whole mapping */
	to = free_range(3);
	p = mremap(m.addr, 3 * pg, 3 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (p == to) {
		/* native, or a kernel that moves several VMAs at once (recent upstream) */
		assert_guarded(to + pg);
		assert_readable(to);
		assert_int_equal(to[2 * pg], 0x5a);
		assert_guarded(m.addr + pg);	/* unmapped now: faults as well */
		assert_int_equal(page_prot(m.addr + pg), -1);
		m.addr = to;
	} else {
		assert_false(native(kind));
		assert_ptr_equal(p, MAP_FAILED);
		assert_int_equal(errno, EFAULT);
		assert_guarded(m.addr + pg);
	}
	/* grow, in place or moved */
	p = mremap(m.addr, 3 * pg, 6 * pg, MREMAP_MAYMOVE);
	if (native(kind)) {
		assert_ptr_not_equal(p, MAP_FAILED);
		m.addr = p;
		m.len = 6 * pg;
		assert_guarded(p + pg);
		assert_readable(p + 2 * pg);
		if (kind == T_ANON)
			assert_readable(p + 5 * pg);
		/* shrink, keeping the guard */
		assert_ptr_equal(mremap(m.addr, m.len, 2 * pg, 0), m.addr);
		m.len = 2 * pg;
		assert_guarded(m.addr + pg);
		assert_readable(m.addr);
		/* shrink past it: it goes with the unmapped page */
		assert_ptr_equal(mremap(m.addr, 2 * pg, pg, 0), m.addr);
	} else {
		assert_ptr_equal(p, MAP_FAILED);
		assert_guarded(m.addr + pg);
		/* a shrink unmaps the tail whatever its VMAs: the same by hand */
		assert_int_equal(munmap(m.addr + pg, 2 * pg), 0);
	}
	m.len = pg;
	assert_readable(m.addr);
	assert_int_equal(page_prot(m.addr + pg), -1);
	/* a fresh mapping where the guard was: no ghost of it */
	fresh = mmap(m.addr + pg, pg, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (fresh == m.addr + pg) {
		void *fault;

		assert_int_equal(access_in_child(fresh, true, &fault), 0);
		assert_string_equal(query_str(fresh, pg), "0");
		munmap(fresh, pg);
	}
	tmap_free(&m);

	/* move the guarded page alone: its guard goes with it */
	if (new_map(kind, 3, &m))
		skip();
	assert_int_equal(guard_install(m.addr + pg, pg, 0), 0);
	to = free_range(1);
	p = mremap(m.addr + pg, pg, pg, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	assert_ptr_equal(p, to);
	assert_guarded(to);
	assert_int_equal(page_prot(m.addr + pg), -1);
	assert_readable(m.addr);
	assert_readable(m.addr + 2 * pg);
	/* and back */
	assert_ptr_equal(mremap(to, pg, pg, MREMAP_MAYMOVE | MREMAP_FIXED, m.addr + pg), m.addr + pg);
	assert_guarded(m.addr + pg);
	assert_int_equal(guard_remove(m.addr, 3 * pg, 0), 0);
	assert_readable(m.addr + pg);
	tmap_free(&m);
}

static void mremap_anon(void **s) { (void)s; mremap_kind(T_ANON); }
static void mremap_shmem(void **s) { (void)s; mremap_kind(T_SHMEM); }
static void mremap_file(void **s) { (void)s; mremap_kind(T_FILE); }
static void mremap_readonly(void **s) { (void)s; mremap_kind(T_READONLY); }

/*
 * Advice that drops, reclaims or populates pages, over a range with a
 * guard in the middle: whatever the kernel does with the rest (some
 * advice does not apply to some backings and fails), the guard holds.
 */
static void madvise_kind(enum tkind kind)
{
	static const struct {
		int advice;
		const char *name;
	} advice[] = {
		{ MADV_DONTNEED, "MADV_DONTNEED" },
		{ MADV_FREE, "MADV_FREE" },
		{ MADV_COLD, "MADV_COLD" },
		{ MADV_PAGEOUT, "MADV_PAGEOUT" },
		{ MADV_REMOVE, "MADV_REMOVE" },
		{ MADV_WILLNEED, "MADV_WILLNEED" },
		{ MADV_POPULATE_READ, "MADV_POPULATE_READ" },
		{ MADV_POPULATE_WRITE, "MADV_POPULATE_WRITE" },
	};
	struct tmap m;

	if (new_map(kind, 3, &m))
		skip();
	assert_int_equal(guard_install(m.addr + pg, pg, 0), 0);
	for (size_t i = 0; i < sizeof(advice) / sizeof(advice[0]); i++) {
		int ret = madvise(m.addr, 3 * pg, advice[i].advice);

		printf("# %s %s: %s\n", kind_name(kind), advice[i].name, ret ? strerror(errno) : "ok");
		assert_guarded(m.addr + pg);
		assert_string_equal(query_method(m.addr + pg, pg), native(kind) ? "native" : "fallback");
	}
	assert_int_equal(guard_remove(m.addr + pg, pg, 0), 0);
	assert_readable(m.addr + pg);
	tmap_free(&m);
}

static void madvise_anon(void **s) { (void)s; madvise_kind(T_ANON); }
static void madvise_shmem(void **s) { (void)s; madvise_kind(T_SHMEM); }
static void madvise_file(void **s) { (void)s; madvise_kind(T_FILE); }
static void madvise_readonly(void **s) { (void)s; madvise_kind(T_READONLY); }

/* A thread that keeps trying to write every page of a range. */
struct writer {
	char *addr;
	size_t pages;
	int stop;
	long wrote, tries;
};

static __thread sigjmp_buf writer_env;
static __thread volatile int in_writer;

static void writer_fault(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (!in_writer)
		abort();
	siglongjmp(writer_env, sig);
}

/* One write: 1 if it went through. */
static int try_write(volatile char *p)
{
	if (sigsetjmp(writer_env, 1))
		return 0;
	*p = 0x33;
	return 1;
}

static void *writer_run(void *arg)
{
	struct writer *w = arg;

	in_writer = 1;
	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED))
		for (size_t i = 0; i < w->pages; i++) {
			__atomic_fetch_add(&w->tries, 1, __ATOMIC_RELAXED);
			w->wrote += try_write(w->addr + i * pg + 7);
		}
	return NULL;
}

static bool writable_anywhere(const char *addr, size_t pages)
{
	for (size_t i = 0; i < pages; i++)
		if (page_prot(addr + i * pg) & PROT_WRITE)
			return true;
	return false;
}

/* The read-only mappings, and how to tell their content did not change. */
enum ro_kind { RO_FILE, RO_ANON, RO_SEALED_SHARED, RO_SEALED_PRIVATE, RO_NKINDS };
static const char *const ro_names[] = { "read-only file", "PROT_READ anonymous",
					"sealed memfd, shared", "sealed memfd, private" };

static const char *ro_map(enum ro_kind kind, size_t pages, struct tmap *m, bool *shared)
{
	const char *why = NULL;

	*shared = kind == RO_FILE || kind == RO_SEALED_SHARED;
	if (kind == RO_FILE)
		return tmap_new(T_READONLY, pages, m);
	if (kind == RO_ANON) {
		tmap_new(T_ANON, pages, m);
		assert_int_equal(mprotect(m->addr, pages * pg, PROT_READ), 0);
		return NULL;
	}
	m->kind = T_SHMEM;
	m->len = pages * pg;
	m->fd = memfd_create("sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(m->fd >= 0);
	{
		char *buf = malloc(m->len);

		memset(buf, 0x5a, m->len);
		assert_int_equal(write(m->fd, buf, m->len), (ssize_t)m->len);
		free(buf);
	}
	assert_int_equal(fcntl(m->fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW |
							    F_SEAL_SEAL), 0);
	m->addr = mmap(NULL, m->len, PROT_READ, *shared ? MAP_SHARED : MAP_PRIVATE, m->fd, 0);
	assert_true(m->addr != MAP_FAILED);
	return why;
}

/* The bytes behind the mapping (the file or memfd; the pages for anon). */
static void assert_content_intact(enum ro_kind kind, struct tmap *m)
{
	char *buf = malloc(m->len);

	/* anonymous data under a guard is discarded, as documented: nothing to compare */
	if (kind == RO_ANON) {
		free(buf);
		return;
	}
	assert_int_equal(pread(m->fd, buf, m->len, 0), (ssize_t)m->len);
	for (size_t i = 0; i < m->len; i++)
		if (buf[i] != 0x5a) {
			print_error("%s: byte %zu is %#x\n", ro_names[kind], i, buf[i] & 0xff);
			fail();
		}
	free(buf);
}

/*
 * Guard operations of every method on a read-only mapping, with a thread
 * trying to write it the whole time: no write ever succeeds, no page is
 * ever PROT_WRITE, removal gives back PROT_READ, the content and the seal
 * hold, and the kernel still refuses PROT_WRITE on shared mappings.
 */
static void read_only_case(enum ro_kind kind)
{
	unsigned int methods[] = { 0, GUARD_NATIVE, GUARD_FALLBACK };
	struct sigaction sa = { .sa_sigaction = writer_fault, .sa_flags = SA_SIGINFO | SA_NODEFER };
	struct sigaction old_segv, old_bus;
	struct writer w = { 0 };
	pthread_t thread;
	struct tmap m;
	bool shared;
	const char *why = ro_map(kind, 4, &m, &shared);
	int rounds = 0;

	if (why) {
		printf("# %s: %s\n", ro_names[kind], why);
		skip();
	}
	if (kind != RO_ANON && kind != RO_FILE) {
		/* the seal before: write(2) refused */
		assert_int_equal(pwrite(m.fd, "x", 1, 0), -1);
		assert_int_equal(errno, EPERM);
	}
	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);
	w.addr = m.addr;
	w.pages = 4;
	assert_int_equal(pthread_create(&thread, NULL, writer_run, &w), 0);
	/* The rounds race a writer that runs: on a busy machine it may start late. */
	while (!__atomic_load_n(&w.tries, __ATOMIC_RELAXED))
		sched_yield();
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		unsigned int flags = methods[i];

		for (int r = 0; r < 20; r++, rounds++) {
			int ret = guard_install(m.addr + pg, 2 * pg, flags);

			if (flags == GUARD_NATIVE && ret == -EOPNOTSUPP)
				break;	/* this kernel or method can't: nothing to check */
			assert_int_equal(ret, 0);
			assert_false(writable_anywhere(m.addr, 4));
			assert_int_equal(guard_install(m.addr, pg, flags), 0);
			assert_false(writable_anywhere(m.addr, 4));
			assert_int_equal(guard_remove(m.addr, 2 * pg, flags), 0);
			assert_false(writable_anywhere(m.addr, 4));
			assert_int_equal(guard_remove(m.addr + 2 * pg, pg, 0), 0);
			for (int p = 0; p < 4; p++)
				assert_int_equal(page_prot(m.addr + p * pg), PROT_READ);
		}
	}
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
	pthread_join(thread, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
	printf("# %s: %d rounds, %ld write attempts, %ld succeeded\n", ro_names[kind], rounds,
	       w.tries, w.wrote);
	assert_true(w.tries > 0);
	assert_int_equal(w.wrote, 0);
	/* after: nothing writable, the content as it was */
	for (int p = 0; p < 4; p++) {
		void *fault;

		assert_int_equal(page_prot(m.addr + p * pg), PROT_READ);
		assert_int_equal(access_in_child(m.addr + p * pg, true, &fault), SIGSEGV);
	}
	assert_content_intact(kind, &m);
	if (shared) {
		/* the kernel still refuses to make it writable: VM_MAYWRITE was never set */
		assert_int_equal(mprotect(m.addr, 4 * pg, PROT_READ | PROT_WRITE), -1);
		assert_true(errno == EACCES || errno == EPERM);
	}
	if (kind != RO_ANON && kind != RO_FILE) {
		assert_int_equal(pwrite(m.fd, "x", 1, 0), -1);
		assert_int_equal(errno, EPERM);
		assert_int_equal(fcntl(m.fd, F_GET_SEALS) & F_SEAL_WRITE, F_SEAL_WRITE);
	}
	tmap_free(&m);
}

static void read_only_file(void **s) { (void)s; read_only_case(RO_FILE); }
static void read_only_anon(void **s) { (void)s; read_only_case(RO_ANON); }
static void sealed_shared(void **s) { (void)s; read_only_case(RO_SEALED_SHARED); }
static void sealed_private(void **s) { (void)s; read_only_case(RO_SEALED_PRIVATE); }

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(__NR_pidfd_open, pid, 0);
}

/* process_madvise() on one range: 0 if it went through, else the errno. */
static int remote_advise(int pidfd, void *addr, size_t len, int advice)
{
	struct iovec iov = { addr, len };
	long ret = syscall(__NR_process_madvise, pidfd, &iov, 1, advice, 0);

	if (ret >= 0)
		return 0;
	return errno;
}

/*
 * A target process: two pages of 0x5a at *addr, waiting on a pipe; when
 * released it checks its own pages are readable, unchanged and not
 * guarded in pagemap, and exits 0 if so.
 */
struct target {
	pid_t pid;
	char *addr;
	int release;
};

static void target_start(struct target *t, uid_t uid)
{
	int up[2], down[2];

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	t->pid = fork();
	assert_true(t->pid >= 0);
	if (t->pid == 0) {
		char *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		uint64_t e[2] = { 0, 0 };
		char c;
		int fd;

		if (uid && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
			_exit(10);
		memset(p, 0x5a, 2 * pg);
		if (write(up[1], &p, sizeof(p)) != sizeof(p) || read(down[0], &c, 1) != 1)
			_exit(11);
		for (size_t i = 0; i < 2 * pg; i++)
			if (((volatile char *)p)[i] != 0x5a)
				_exit(12);
		fd = open("/proc/self/pagemap", O_RDONLY);
		if (fd < 0 || pread(fd, e, sizeof(e), (off_t)((uintptr_t)p / pg * 8)) != sizeof(e))
			_exit(13);
		_exit((e[0] | e[1]) >> 58 & 1 ? 14 : 0);
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], &t->addr, sizeof(t->addr)), sizeof(t->addr));
	close(up[0]);
	t->release = down[1];
}

/* Release the target; its own verdict on its memory. */
static int target_finish(struct target *t)
{
	int status;

	assert_int_equal(write(t->release, "x", 1), 1);
	close(t->release);
	assert_int_equal(waitpid(t->pid, &status, 0), t->pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * What the kernel must answer to guard advice for another process, from
 * what it is expected to support: with guard advice in process_madvise()
 * (our series 0005, upstream 6.13+) the target's mm is looked up first,
 * with PTRACE_MODE_READ (EACCES without it), then remote guard advice is
 * refused (EINVAL); a kernel without it (Debian's 6.12) refuses the
 * advice before anything else (EINVAL).
 */
static int want_remote_guard(bool may_read_target)
{
	if (!(want_caps(NULL) & GUARD_CAP_PROCESS_MADVISE))
		return EINVAL;
	return may_read_target ? EINVAL : EACCES;
}

/* Remote non-guard advice, the control: MADV_COLD needs CAP_SYS_NICE. */
static int want_remote_cold(bool may_read_target, bool privileged)
{
	if (!may_read_target)
		return EACCES;
	return privileged ? 0 : EPERM;
}

static void remote_as_root(void **state)
{
	struct target t;
	int pidfd, err;

	(void)state;
	if (geteuid() != 0) {
		printf("# not root: the privileged caller is what this checks\n");
		skip();
	}
	target_start(&t, 0);
	pidfd = pidfd_open_(t.pid);
	assert_true(pidfd >= 0);
	err = remote_advise(pidfd, t.addr, pg, MADV_GUARD_INSTALL);
	printf("# root -> child: MADV_GUARD_INSTALL %s, want %s\n", strerrorname_np(err),
	       strerrorname_np(want_remote_guard(true)));
	assert_int_equal(err, want_remote_guard(true));
	err = remote_advise(pidfd, t.addr, 2 * pg, MADV_GUARD_REMOVE);
	assert_int_equal(err, want_remote_guard(true));
	/* the path itself works: non-destructive advice goes through */
	err = remote_advise(pidfd, t.addr, 2 * pg, MADV_COLD);
	assert_int_equal(err, want_remote_cold(true, true));
	close(pidfd);
	assert_int_equal(target_finish(&t), 0);
}

/*
 * As nobody: against a root process (its pidfd is easy to get, its mm is
 * not), and against nobody's own child (the mm is, guard advice is not).
 * Each result goes back to the parent through the exit status.
 */
static void remote_as_nobody(void **state)
{
	struct target root_t, own_t;
	int pidfd_root, status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0) {
		printf("# not root: can't become nobody to test it\n");
		skip();
	}
	target_start(&root_t, 0);
	pidfd_root = pidfd_open_(root_t.pid);
	assert_true(pidfd_root >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int bad = 0, pidfd_own, pidfd_mine, got[6];

		/* dumpable again after the change of user, as any nobody process */
		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY) ||
		    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
			_exit(100);
		/* a pidfd of its own for the root process: allowed */
		pidfd_mine = pidfd_open_(root_t.pid);
		bad |= (pidfd_mine < 0) << 0;
		got[0] = remote_advise(pidfd_root, root_t.addr, pg, MADV_GUARD_INSTALL);
		got[1] = remote_advise(pidfd_mine, root_t.addr, pg, MADV_GUARD_INSTALL);
		got[2] = remote_advise(pidfd_root, root_t.addr, 2 * pg, MADV_GUARD_REMOVE);
		got[3] = remote_advise(pidfd_root, root_t.addr, pg, MADV_COLD);
		bad |= (got[0] != want_remote_guard(false)) << 1;
		bad |= (got[1] != want_remote_guard(false)) << 2;
		bad |= (got[2] != want_remote_guard(false)) << 3;
		bad |= (got[3] != want_remote_cold(false, false)) << 4;
		target_start(&own_t, 0);	/* already nobody */
		pidfd_own = pidfd_open_(own_t.pid);
		got[4] = remote_advise(pidfd_own, own_t.addr, pg, MADV_GUARD_INSTALL);
		got[5] = remote_advise(pidfd_own, own_t.addr, pg, MADV_COLD);
		bad |= (got[4] != want_remote_guard(true)) << 5;
		bad |= (got[5] != want_remote_cold(true, false)) << 6;
		bad |= (target_finish(&own_t) != 0) << 7;
		printf("# nobody -> root's process: guard install %s, remove %s, MADV_COLD %s; "
		       "-> its own child: guard install %s, MADV_COLD %s\n",
		       strerrorname_np(got[0]), strerrorname_np(got[2]), strerrorname_np(got[3]),
		       strerrorname_np(got[4]), strerrorname_np(got[5]));
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		print_error("as nobody: checks failed, mask %#x (bit 0: pidfd_open, 1-3: guard advice "
			    "on root's process, 4: MADV_COLD on it, 5-6: on its own child, 7: the "
			    "child's memory)\n", WEXITSTATUS(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(pidfd_root);
	assert_int_equal(target_finish(&root_t), 0);
}

/* A program's output as TAP comments. */
static void show(const char *what, const char *out)
{
	printf("# %s:\n", what);
	show_lines(out);
}

/*
 * A setuid-root program run by nobody (secure execution, AT_SECURE = 1)
 * with LD_AUDIT naming a marker module and libguard-audit.so: neither is
 * loaded (no marker, no report of the library's holes), and the module,
 * asked directly, declines (la_version 0). The same copy without the
 * setuid bit is the control: both modules load and speak.
 */
/* Why the LD_AUDIT checks skip in a sanitizer build. */
#define LD_AUDIT_SANITIZED                                                                    \
	"ld.so loads the LD_AUDIT module, built with the sanitizer, into programs without its " \
	"runtime, which it refuses"

static void audit_setuid(void **state)
{
	char dir[4096], prog[4096], marker[4096], module[4096], lib[4096], out[1 << 14];
	char env_audit[2 * 4096 + 16], want[64];
	char *envp[] = { env_audit, "LIBGUARD_AUDIT_VERBOSE=1", "PATH=/usr/bin:/bin", NULL };
	char *argv[] = { prog, module, lib, NULL };
	int rc;

	(void)state;
	skip_under_sanitizer(LD_AUDIT_SANITIZED);
	suid_dir("suid", dir, sizeof(dir));
	copy_to(env_path("LIBGUARD_SECURE_PROBE"), dir, "secure-probe", 0755, prog, sizeof(prog));
	copy_to(env_path("LIBGUARD_AUDIT_MARKER"), dir, "libaudit-marker.so", 0644, marker,
		sizeof(marker));
	copy_to(env_path("LIBGUARD_AUDIT"), dir, "libguard-audit.so", 0644, module, sizeof(module));
	copy_to(env_path("LIBGUARD_TEST_LIB64K"), dir, "libtest64k.so", 0644, lib, sizeof(lib));
	snprintf(env_audit, sizeof(env_audit), "LD_AUDIT=%s:%s", marker, module);

	/* control: plain program, both modules load */
	rc = run_captured(argv, envp, true, out, sizeof(out));
	show("plain, as nobody", out);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "audit-marker: loaded"));
	assert_non_null(strstr(out, "libguard-audit: "));
	snprintf(want, sizeof(want), "secure 0 la_version %u", (unsigned int)LAV_CURRENT);
	assert_non_null(strstr(out, want));

	/* secure execution */
	assert_int_equal(chmod(prog, 04755), 0);
	rc = run_captured(argv, envp, true, out, sizeof(out));
	show("setuid root, as nobody", out);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "secure 1 la_version 0"));
	assert_null(strstr(out, "audit-marker"));
	assert_null(strstr(out, "libguard-audit"));

	unlink(prog);
	unlink(marker);
	unlink(module);
	unlink(lib);
	rmdir(dir);
}

/* elf-pages output: "PATH INDEX rwx F" lines, effective access per page. */
struct page_access {
	char key[300];
	char eff[4];	/* the protection, or "---" where a read faults */
};

static size_t parse_pages(char *out, struct page_access *v, size_t cap)
{
	size_t n = 0;

	for (char *l = strtok(out, "\n"); l && n < cap; l = strtok(NULL, "\n")) {
		char path[256], perms[4];
		size_t index;
		int fault;

		if (sscanf(l, "%255s %zu %3s %d", path, &index, perms, &fault) != 4)
			continue;
		snprintf(v[n].key, sizeof(v[n].key), "%s#%zu", path, index);
		memcpy(v[n].eff, fault ? "---" : perms, 4);
		n++;
	}
	return n;
}

static int run_pages(bool audited, char *out, size_t cap)
{
	char cmd[8192];
	FILE *p;
	size_t n = 0, got;
	int status;

	snprintf(cmd, sizeof(cmd), "%s%s %s", audited ? "LD_AUDIT=" : "",
		 audited ? env_path("LIBGUARD_AUDIT") : "", env_path("LIBGUARD_ELF_PAGES"));
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " %s",
		 env_path("LIBGUARD_TEST_LIB64K"));
	p = popen(cmd, "r");
	assert_non_null(p);
	while ((got = fread(out + n, 1, cap - 1 - n, p)) > 0)
		n += got;
	out[n] = '\0';
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Every page of every object loaded by a program that dlopen()s a library
 * with holes, with and without the audit module: no page allows anything
 * with the module that it did not without (its holes may become guard
 * regions inside the neighbouring mapping: a protection that faults).
 */
static void audit_never_more_accessible(void **state)
{
	static char plain_out[1 << 20], audit_out[1 << 20];
	static struct page_access plain[1 << 14], audited[1 << 14];
	size_t np, na, compared = 0, guarded = 0;

	(void)state;
	skip_under_sanitizer(LD_AUDIT_SANITIZED);
	assert_int_equal(run_pages(false, plain_out, sizeof(plain_out)), 0);
	assert_int_equal(run_pages(true, audit_out, sizeof(audit_out)), 0);
	np = parse_pages(plain_out, plain, sizeof(plain) / sizeof(plain[0]));
	na = parse_pages(audit_out, audited, sizeof(audited) / sizeof(audited[0]));
	assert_true(np > 100);
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < np; j++) {
			if (strcmp(audited[i].key, plain[j].key))
				continue;
			for (int b = 0; b < 3; b++)
				if (audited[i].eff[b] != '-' && plain[j].eff[b] == '-') {
					print_error("%s: %s with LD_AUDIT, %s without\n", plain[j].key,
						    audited[i].eff, plain[j].eff);
					fail();
				}
			compared++;
			guarded += strcmp(audited[i].eff, plain[j].eff) != 0;
			break;
		}
	printf("# %zu pages compared, %zu less accessible with the module\n", compared, guarded);
	/* the program's own objects are all there in both runs */
	assert_true(compared + 64 >= np);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mprotect_anon),
		cmocka_unit_test(mprotect_shmem),
		cmocka_unit_test(mprotect_file),
		cmocka_unit_test(mprotect_readonly),
		cmocka_unit_test(mremap_anon),
		cmocka_unit_test(mremap_shmem),
		cmocka_unit_test(mremap_file),
		cmocka_unit_test(mremap_readonly),
		cmocka_unit_test(madvise_anon),
		cmocka_unit_test(madvise_shmem),
		cmocka_unit_test(madvise_file),
		cmocka_unit_test(madvise_readonly),
		cmocka_unit_test(read_only_file),
		cmocka_unit_test(read_only_anon),
		cmocka_unit_test(sealed_shared),
		cmocka_unit_test(sealed_private),
		cmocka_unit_test(remote_as_root),
		cmocka_unit_test(remote_as_nobody),
		cmocka_unit_test(audit_setuid),
		cmocka_unit_test(audit_never_more_accessible),
	};

	guardtest_init();
	guard_probe();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
