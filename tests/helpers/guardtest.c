// SPDX-License-Identifier: LGPL-2.1-or-later
#include "guardtest.h"
#include "expect.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <guard.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define TMPFS_MAGIC_ 0x01021994
#define RAMFS_MAGIC_ 0x858458f6

size_t pg, small_stack;

void guardtest_init(void)
{
	const char *scratch = getenv("LIBGUARD_SCRATCH");

	pg = (size_t)sysconf(_SC_PAGESIZE);
	small_stack = (size_t)PTHREAD_STACK_MIN > (64 << 10) ? (size_t)PTHREAD_STACK_MIN : 64 << 10;
	small_stack = (small_stack + pg - 1) & ~(pg - 1);
	if (scratch && *scratch)
		setenv("LIBGUARD_PROBE_DIR", scratch, 0);
	setvbuf(stdout, NULL, _IONBF, 0);
}

const char *kind_name(enum tkind kind)
{
	static const char *const names[] = { "anon", "shmem", "file", "readonly" };

	return names[kind];
}

static bool page_cache_dir(const char *dir)
{
	struct statfs s;

	return dir && *dir && !statfs(dir, &s) && s.f_type != TMPFS_MAGIC_ &&
	       s.f_type != RAMFS_MAGIC_;
}

const char *scratch_dir(const char **why)
{
	const char *dirs[] = { getenv("LIBGUARD_PROBE_DIR"), getenv("TMPDIR"), "/var/tmp", "/tmp" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (page_cache_dir(dirs[i]))
			return dirs[i];
	*why = "no page-cache filesystem for a scratch file (set LIBGUARD_SCRATCH)";
	return NULL;
}

static char lib64k_copy[PATH_MAX + 32], lib64k_copy_dir[PATH_MAX];

static void lib64k_cleanup(void)
{
	unlink(lib64k_copy);
	rmdir(lib64k_copy_dir);
}

/*
 * In the guest the checkout is shared over 9p, whose file mappings have a
 * ->close hook, and the kernel never merges away a VMA with one: the holes
 * of a library loaded from there could be guarded but never merged into
 * their neighbours. Load a copy from the guest's scratch ext4 disk
 * instead, which behaves as the host's disk does.
 */
const char *lib64k_path(void)
{
	const char *path = getenv("LIBGUARD_TEST_LIB64K"), *dir;
	char buf[65536];
	ssize_t n;
	int in, out;

	if (!path)
		abort();
	if (*lib64k_copy)
		return lib64k_copy;
	/* Only the guest sets it; 9p's statfs() reports the host's f_type. */
	dir = getenv("LIBGUARD_SCRATCH");
	if (!dir || !*dir)
		return path;
	snprintf(lib64k_copy_dir, sizeof(lib64k_copy_dir), "%s/lib64k-%d", dir, (int)getpid());
	snprintf(lib64k_copy, sizeof(lib64k_copy), "%s/libtest64k.so", lib64k_copy_dir);
	if (mkdir(lib64k_copy_dir, 0755) && errno != EEXIST)
		abort();
	in = open(path, O_RDONLY | O_CLOEXEC);
	out = open(lib64k_copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (in < 0 || out < 0)
		abort();
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			abort();
	if (n < 0 || close(out))
		abort();
	close(in);
	atexit(lib64k_cleanup);
	return lib64k_copy;
}

const char *tmap_new(enum tkind kind, size_t pages, struct tmap *m)
{
	size_t len = pages * pg;
	const char *why = NULL, *dir;
	char path[PATH_MAX];
	int prot = PROT_READ | PROT_WRITE;

	m->kind = kind;
	m->len = len;
	m->fd = -1;
	if (kind == T_ANON) {
		m->addr = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m->addr == MAP_FAILED)
			abort();
		memset(m->addr, 0x5a, len);
		return NULL;
	}
	if (kind == T_SHMEM) {
		m->fd = memfd_create("guardtest", MFD_CLOEXEC);
	} else {
		dir = scratch_dir(&why);
		if (!dir)
			return why;
		snprintf(path, sizeof(path), "%s/guardtest-XXXXXX", dir);
		m->fd = mkostemp(path, O_CLOEXEC);
		if (m->fd >= 0)
			unlink(path);
	}
	if (m->fd < 0 || ftruncate(m->fd, (off_t)len))
		abort();
	/* File data to tell apart from zeros after a guard comes and goes. */
	{
		char *buf = malloc(len);

		memset(buf, 0x5a, len);
		if (pwrite(m->fd, buf, len, 0) != (ssize_t)len)
			abort();
		free(buf);
	}
	if (kind == T_READONLY) {
		char fdpath[64];
		int ro;

		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", m->fd);
		ro = open(fdpath, O_RDONLY | O_CLOEXEC);
		if (ro < 0)
			abort();
		close(m->fd);
		m->fd = ro;
		prot = PROT_READ;
	}
	m->addr = mmap(NULL, len, prot, MAP_SHARED, m->fd, 0);
	if (m->addr == MAP_FAILED)
		abort();
	return NULL;
}

void tmap_free(struct tmap *m)
{
	munmap(m->addr, m->len);
	if (m->fd >= 0)
		close(m->fd);
}

unsigned int want_caps(const char **why)
{
	static const struct {
		unsigned int expect, cap;
	} map[] = {
		{ EXPECT_ANON, GUARD_CAP_ANON },
		{ EXPECT_SHMEM, GUARD_CAP_SHMEM },
		{ EXPECT_FILE, GUARD_CAP_FILE },
		{ EXPECT_READONLY, GUARD_CAP_READONLY },
		{ EXPECT_PAGEMAP, GUARD_CAP_PAGEMAP },
		{ EXPECT_PAGEMAP_SCAN, GUARD_CAP_PAGEMAP_SCAN },
		{ EXPECT_PROCESS_MADVISE, GUARD_CAP_PROCESS_MADVISE },
	};
	const char *dummy;
	unsigned int e = expect_caps(why ? why : &dummy), caps = 0;

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (e & map[i].expect)
			caps |= map[i].cap;
	return caps;
}

bool forced_fallback(void)
{
	const char *f = getenv("LIBGUARD_FORCE_FALLBACK");

	return f && *f && strcmp(f, "0");
}

static bool env_on(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0");
}

bool procmap_query_works(void)
{
	uint64_t q[13] = { sizeof(q), 0, (uintptr_t)&q };	/* size, flags, addr */
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), ret;

	assert_true(fd >= 0);
	ret = ioctl(fd, _IOWR('f', 17, char[104]), q) ? errno : 0;
	close(fd);
	return ret == 0 || ret == ENOENT;
}

bool records_weak(void)
{
	/* MADV_POPULATE_READ (Linux 5.14) on an unmapped page: ENOMEM where it works */
	bool populate = madvise(NULL, (size_t)sysconf(_SC_PAGESIZE), 22) && errno == ENOMEM;

	return !env_on("LIBGUARD_STRICT_RECORDS") && populate &&
	       (env_on("LIBGUARD_NO_PROCMAP_QUERY") || !procmap_query_works());
}

unsigned int kind_cap(enum tkind kind)
{
	static const unsigned int caps[] = { GUARD_CAP_ANON, GUARD_CAP_SHMEM, GUARD_CAP_FILE,
					     GUARD_CAP_READONLY };

	return caps[kind];
}

bool want_native(enum tkind kind)
{
	return !forced_fallback() && (want_caps(NULL) & kind_cap(kind));
}

static int sig_fd;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	void *addr = si->si_addr;

	(void)uc;
	if (write(sig_fd, &addr, sizeof(addr)) != sizeof(addr))
		_exit(99);
	_exit(100 + sig);
}

/*
 * A pipe and a child that catches SIGSEGV and SIGBUS with handler; in the
 * child fds[1] is the write end, in the parent fds[0] the read end.
 */
static pid_t fork_catching(int fds[2], void (*handler)(int, siginfo_t *, void *))
{
	pid_t pid;

	if (pipe(fds))
		abort();
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = handler;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER;
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		close(fds[0]);
	} else {
		close(fds[1]);
	}
	return pid;
}

/*
 * The helpers that touch pages to see whether they fault read any page of
 * the process on purpose (holes in libraries, guards, unmapped gaps):
 * ASan's shadow says nothing about those, so they are not instrumented.
 */
#define TOUCHES_ANY_PAGE __attribute__((no_sanitize_address))

TOUCHES_ANY_PAGE int access_in_child(volatile char *p, bool write_it, void **fault)
{
	int fds[2], status;
	pid_t pid;

	*fault = NULL;
	pid = fork_catching(fds, on_fault);
	if (pid == 0) {
		sig_fd = fds[1];
		if (write_it)
			*p = 1;
		else
			(void)*p;
		_exit(0);
	}
	if (read(fds[0], fault, sizeof(*fault)) != sizeof(*fault))
		*fault = NULL;
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	if (WEXITSTATUS(status) == 0)
		return 0;
	if (WEXITSTATUS(status) == 100 + SIGSEGV)
		return SIGSEGV;
	if (WEXITSTATUS(status) == 100 + SIGBUS)
		return SIGBUS;
	return -1;
}

bool query_reports(void)
{
	unsigned int caps = want_caps(NULL);

	return !(caps & GUARD_CAP_NATIVE_MASK) ||
	       (caps & (GUARD_CAP_PAGEMAP | GUARD_CAP_PAGEMAP_SCAN));
}

static sigjmp_buf probe_env;

static void probe_fault(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	siglongjmp(probe_env, sig);
}

TOUCHES_ANY_PAGE int probe_pages(const void *addr, size_t n, unsigned char *out)
{
	int fds[2], status;
	size_t got = 0;
	pid_t pid;

	pid = fork_catching(fds, probe_fault);
	if (pid == 0) {
		for (size_t i = 0; i < n; i++) {
			volatile const char *p = (const char *)addr + i * pg;
			int sig = sigsetjmp(probe_env, 1);
			unsigned char r = (unsigned char)sig;

			if (!sig)
				(void)*p;
			if (write(fds[1], &r, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	while (got < n) {
		ssize_t r = read(fds[0], out + got, n - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) ||
	    got != n)
		return -1;
	return 0;
}

int query_vec(const void *addr, size_t len, unsigned char *vec)
{
	int ret = guard_query(addr, len, vec);
	size_t n = (len + pg - 1) / pg;

	if (query_reports())
		return ret;
	/* Bad arguments and holes are found before the kernel is asked. */
	if (ret == -EINVAL || ret == -EFAULT || ret == -ENOMEM)
		return ret;
	if (ret != -EOPNOTSUPP)
		return -EPROTO;
	if (probe_pages(addr, n, vec))
		return -EIO;
	for (size_t i = 0; i < n; i++)
		if (vec[i] == SIGSEGV)
			vec[i] = page_prot((const char *)addr + i * pg) == PROT_NONE
					 ? GUARD_QUERY_FALLBACK : GUARD_QUERY_NATIVE;
		else
			vec[i] = 0;
	return 0;
}

const char *query_str(void *addr, size_t len)
{
	static char buf[4096];
	unsigned char vec[4096];
	size_t n = len / pg;
	int ret;

	if (n >= sizeof(buf))
		abort();
	ret = query_vec(addr, len, vec);
	if (ret) {
		snprintf(buf, sizeof(buf), "error %d", ret);
		return buf;
	}
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)('0' + vec[i]);
	buf[n] = '\0';
	return buf;
}

const char *query_method(void *addr, size_t len)
{
	const char *s = query_str(addr, len);
	bool nat = strchr(s, '1') || strchr(s, '3'), fb = strchr(s, '2') || strchr(s, '3');

	if (!strncmp(s, "error", 5))
		return s;
	return nat && fb ? "mixed" : nat ? "native" : fb ? "fallback" : "none";
}

int vmas_in(uintptr_t start, uintptr_t end)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int n = 0;

	if (!f)
		abort();
	while (fgets(line, sizeof(line), f)) {
		uintptr_t s, e;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &s, &e) == 2 && s < end && e > start)
			n++;
	}
	fclose(f);
	return n;
}

int page_prot(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512], perms[5];
	int prot = -1;

	if (!f)
		abort();
	while (fgets(line, sizeof(line), f)) {
		uintptr_t s, e;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &s, &e, perms) == 3 &&
		    (uintptr_t)addr >= s && (uintptr_t)addr < e) {
			prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
			       (perms[2] == 'x' ? PROT_EXEC : 0);
			break;
		}
	}
	fclose(f);
	return prot;
}

struct slot_job {
	char *slot;
	int rounds;
	unsigned int flags;
	unsigned char want;
};

static int stop_touching;
static char *arena;
static int nslots;

/*
 * Is the slot not as expected? Without guard reporting a fork per check
 * would be too slow under emulation: guard_query() must say -EOPNOTSUPP,
 * and the protection in /proc/self/maps tells the fallback apart (the
 * final check in guard_threads() faults every page).
 */
static long slot_wrong(char *slot, unsigned char *vec, unsigned char want)
{
	if (query_reports())
		return guard_query(slot, 3 * pg, vec) != 0 || vec[0] || vec[1] != want || vec[2];
	return guard_query(slot, 3 * pg, vec) != -EOPNOTSUPP ||
	       (page_prot(slot + pg) == PROT_NONE) != (want == GUARD_QUERY_FALLBACK);
}

static void *installer(void *arg)
{
	const struct slot_job *job = arg;
	char *slot = job->slot;
	long bad = 0;

	for (int i = 0; i < job->rounds; i++) {
		unsigned char vec[3];

		bad += guard_install(slot + pg, pg, job->flags) != 0;
		bad += slot_wrong(slot, vec, job->want);
		bad += guard_remove(slot + pg, pg, job->flags) != 0;
		bad += slot_wrong(slot, vec, 0);
	}
	return (void *)bad;
}

/* Both touchers write the same bytes: atomically, so that it is no data race. */
static void *toucher(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_touching, __ATOMIC_RELAXED))
		for (int s = 0; s < nslots; s++) {
			__atomic_fetch_xor(&arena[s * 3 * pg + pg - 1], 1, __ATOMIC_RELAXED);
			__atomic_fetch_xor(&arena[(s * 3 + 2) * pg], 1, __ATOMIC_RELAXED);
		}
	return NULL;
}

long guard_threads(int slots, int rounds, unsigned int flags, unsigned char want)
{
	pthread_t *ins = calloc(slots, sizeof(*ins)), touch[2];
	struct slot_job *jobs = calloc(slots, sizeof(*jobs));
	struct tmap m;
	long bad = 0;

	tmap_new(T_ANON, 3 * slots, &m);
	arena = m.addr;
	nslots = slots;
	__atomic_store_n(&stop_touching, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&touch[i], NULL, toucher, NULL))
			abort();
	for (int i = 0; i < slots; i++) {
		jobs[i] = (struct slot_job){ m.addr + 3 * i * pg, rounds, flags, want };
		if (pthread_create(&ins[i], NULL, installer, &jobs[i]))
			abort();
	}
	for (int i = 0; i < slots; i++) {
		void *ret;

		pthread_join(ins[i], &ret);
		bad += (long)ret;
	}
	__atomic_store_n(&stop_touching, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(touch[i], NULL);
	/* nothing left guarded, every page as it was */
	for (int i = 0; i < 3 * slots; i++)
		bad += page_prot(m.addr + i * pg) != (PROT_READ | PROT_WRITE);
	bad += strspn(query_str(m.addr, 3 * slots * pg), "0") != (size_t)(3 * slots);
	tmap_free(&m);
	free(ins);
	free(jobs);
	return bad;
}

const char *env_path(const char *name)
{
	const char *p = getenv(name);

	assert_non_null(p);
	return p;
}

void suid_dir(const char *tag, char *out, size_t cap)
{
	const char *dirs[] = { getenv("LIBGUARD_SCRATCH"), getenv("TMPDIR"), "/tmp", "/var/tmp" };

	if (geteuid() != 0) {
		printf("# not root: can't make a setuid-root program\n");
		skip();
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		struct statvfs sv;

		if (!dirs[i] || !*dirs[i] || statvfs(dirs[i], &sv) || (sv.f_flag & ST_NOSUID))
			continue;
		snprintf(out, cap, "%s/libguard-%s-XXXXXX", dirs[i], tag);
		if (mkdtemp(out) && !chmod(out, 0755))
			return;
	}
	printf("# every scratch directory is on a nosuid filesystem\n");
	skip();
}

void copy_to(const char *src, const char *dir, const char *name, mode_t mode, char *out,
	     size_t cap)
{
	char buf[1 << 16];
	int in = open(src, O_RDONLY | O_CLOEXEC), fd;
	ssize_t n;

	snprintf(out, cap, "%s/%s", dir, name);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	assert_true(in >= 0 && fd >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(fd, buf, (size_t)n), n);
	close(in);
	assert_int_equal(fchown(fd, 0, 0), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

int nobody_can_read(const char *path)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
			_exit(2);
		_exit(access(path, R_OK) == 0 ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) < 2);
	return WEXITSTATUS(status);
}

int run_captured(char *const argv[], char *const envp[], bool as_nobody, char *out, size_t cap)
{
	int fds[2], status;
	size_t n = 0;
	ssize_t got;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		if (as_nobody && (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)))
			_exit(120);
		execve(argv[0], argv, envp);
		_exit(121);
	}
	close(fds[1]);
	while (n < cap - 1 && (got = read(fds[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)got;
	out[n] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void show_lines(const char *out)
{
	for (const char *l = out; *l; l += strcspn(l, "\n") + !!l[strcspn(l, "\n")])
		printf("#   %.*s\n", (int)strcspn(l, "\n"), l);
}
