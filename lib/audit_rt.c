// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libguard-audit.so's runtime, in place of libc. ld.so loads each audit
 * module into a link-map namespace of its own, where a DT_NEEDED libc.so.6
 * is a second copy of libc, mapped and relocated at every exec (~0.13 ms
 * and 4 VMAs on Debian amd64): the whole cost of the module for programs
 * with nothing to guard. Even a DT_NEEDED ld.so (for __libc_stack_end) is
 * a search and an open() per exec. So the module needs nothing, and has
 * here: raw system calls (x86_64, aarch64), the few string functions the
 * compiler and the hole core call, the auxiliary vector (one prctl()), the
 * environment (/proc/self/environ, only on the way to a hole), stderr
 * output, and the system side of the hole core (lg_hs_*, the VMA lookup).
 * Errors are returned as -errno: there is no errno. ld.so serializes the
 * audit callbacks (its load lock), so the static state needs no locking.
 */
#include "internal.h"
#include "audit_rt.h"
#include "raw_syscall.h"

#include <asm/unistd.h>
#include <elf.h>
#include <fcntl.h>
#include <linux/stat.h>
#include <stdarg.h>
#include <sys/uio.h>

#if !LG_HAVE_RAW_SYSCALL
#error "libguard-audit.so: no system call shim for this architecture (raw_syscall.h)"
#endif

#define SYS(n, a, b, c, d, e, f) \
	lg_raw_syscall(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

/* The kernel returns -4095..-1 for errors. */
static int rt_int(long ret)
{
	return (int)ret;
}

/* --- what the compiler and the hole core call --- */

void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (d <= s)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;

	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

size_t strcspn(const char *s, const char *reject)
{
	size_t n = 0;

	for (; s[n]; n++)
		for (const char *r = reject; *r; r++)
			if (s[n] == *r)
				return n;
	return n;
}

/* --- the auxiliary vector, and the environment --- */

#ifndef PR_GET_AUXV
#define PR_GET_AUXV 0x41555856	/* Linux 6.4 */
#endif
#define RT_AUXV_MAX 128		/* entries: Linux passes about 25 */

static struct lg_rt_start start;
/*
 * 1 + what read_start() returned; -1: not read yet. Not 0, so that it is
 * in .data: the page after the RELRO part is then one of the file, with
 * the (small) .bss at its end, where ld.so would otherwise map the .bss
 * as one more anonymous mapping, an mmap() per exec.
 */
static int start_ret = -1;
size_t lg_page_cache;

/* The whole of a small /proc file: its length, or -errno. */
static long read_proc(const char *path, void *buf, size_t cap)
{
	int fd = lg_hs_open(path);
	size_t n = 0;
	long got = 0;

	if (fd < 0)
		return fd;
	while (n < cap && (got = SYS(__NR_read, fd, (char *)buf + n, cap - n, 0, 0, 0)) > 0)
		n += (size_t)got;
	lg_hs_close(fd);
	return got < 0 ? got : (long)n;
}

/*
 * One prctl(PR_GET_AUXV) (no /proc access: objects without holes must
 * cost none); /proc/self/auxv on kernels before 6.4.
 */
static int read_start(void)
{
	uintptr_t av[2 * RT_AUXV_MAX];	/* on the stack: no .bss page to fault in */
	size_t page = 0;
	long len = SYS(__NR_prctl, PR_GET_AUXV, av, sizeof(av), 0, 0, 0);

	if (len < 0)
		len = read_proc("/proc/self/auxv", av, sizeof(av));
	if (len < 0)
		return (int)len;
	for (size_t i = 0; i + 1 < (size_t)len / sizeof(av[0]) && av[i] != AT_NULL; i += 2) {
		switch (av[i]) {
		case AT_SECURE:
			start.secure = av[i + 1] != 0;
			break;
		case AT_PAGESZ:
			page = av[i + 1];
			break;
		case AT_PHDR:
			start.phdr = (const void *)av[i + 1];
			break;
		case AT_PHNUM:
			start.phnum = av[i + 1];
			break;
		}
	}
	/* Every Linux exec has these: without them, this is not an auxiliary vector. */
	if (page < 4096 || (page & (page - 1)) || !start.phdr || !start.phnum)
		return -EINVAL;
	__atomic_store_n(&lg_page_cache, page, __ATOMIC_RELAXED);
	return 0;
}

int lg_rt_start(struct lg_rt_start *out)
{
	if (start_ret < 0)
		start_ret = 1 + read_start();
	*out = start;
	return start_ret - 1;
}

/* The switches from the environment, read once when first needed. */
static int env_state;		/* 0: not read, 1: read */
static bool env_verbose, env_forced;

/* NAME=value (in entry, cut to what was kept of it): -1 other name, else set and not "0". */
static int env_value(const char *entry, size_t len, const char *name)
{
	size_t n = strlen(name);

	if (len <= n || memcmp(entry, name, n) || entry[n] != '=')
		return -1;
	return len > n + 1 && !(len == n + 2 && entry[n + 1] == '0');
}

/*
 * /proc/self/environ, the environment the process started with (what
 * getenv() sees in a namespace of its own): read only on the way to a
 * hole, never for an object without one. The first of several wins, as
 * with getenv().
 */
static void read_env(void)
{
	char buf[4096], head[64];
	bool seen_v = false, seen_f = false;
	size_t kept = 0;
	int fd = lg_hs_open("/proc/self/environ");
	long got;

	env_state = 1;
	if (fd < 0)
		return;
	while ((got = SYS(__NR_read, fd, buf, sizeof(buf), 0, 0, 0)) > 0) {
		for (long i = 0; i < got; i++) {
			int v;

			if (buf[i]) {
				if (kept < sizeof(head))
					head[kept++] = buf[i];
				continue;
			}
			if (!seen_v && (v = env_value(head, kept, "LIBGUARD_AUDIT_VERBOSE")) >= 0) {
				seen_v = true;
				env_verbose = v;
			}
			if (!seen_f && (v = env_value(head, kept, "LIBGUARD_FORCE_FALLBACK")) >= 0) {
				seen_f = true;
				env_forced = v;
			}
			kept = 0;
		}
	}
	lg_hs_close(fd);
}

bool lg_rt_verbose(void)
{
	if (!env_state)
		read_env();
	return env_verbose;
}

static bool forced_fallback(void)
{
	if (!env_state)
		read_env();
	return env_forced;
}

/* --- the hole core's side: lg_page_size(), lg_hs_*, VMA lookup --- */

/* Only reached if la_version() did not read the start (then the module is unused). */
size_t lg_page_size_slow(void)
{
	return 4096;
}

long lg_rt_peek(void *dst, uintptr_t src, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)src, len };
	long pid = SYS(__NR_getpid, 0, 0, 0, 0, 0, 0);

	/* process_vm_readv() on ourselves: EFAULT for what is not readable */
	return SYS(__NR_process_vm_readv, pid, &local, 1, &remote, 1, 0);
}

int lg_hs_open(const char *path)
{
	return rt_int(SYS(__NR_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0, 0, 0));
}

void lg_hs_close(int fd)
{
	SYS(__NR_close, fd, 0, 0, 0, 0, 0);
}

int lg_hs_file_id(int fd, uint64_t *inode, unsigned int *dev_major, unsigned int *dev_minor)
{
	struct statx stx;
	int ret = rt_int(SYS(__NR_statx, fd, "", AT_EMPTY_PATH, STATX_INO, &stx, 0));

	if (ret)
		return ret;
	*inode = stx.stx_ino;
	*dev_major = stx.stx_dev_major;
	*dev_minor = stx.stx_dev_minor;
	return 0;
}

int lg_hs_map_none(uintptr_t addr, size_t len, int fd, uint64_t off)
{
	long ret = SYS(__NR_mmap, addr, len, PROT_NONE, MAP_PRIVATE | MAP_FIXED, fd, off);

	return ret < 0 && ret > -4096 ? (int)ret : 0;
}

int lg_hs_madvise(uintptr_t addr, size_t len, int advice)
{
	return rt_int(SYS(__NR_madvise, addr, len, advice, 0, 0, 0));
}

int lg_hs_mprotect(uintptr_t addr, size_t len, int prot)
{
	return rt_int(SYS(__NR_mprotect, addr, len, prot, 0, 0, 0));
}

/*
 * No probe: the install on the hole itself says EINVAL where the kernel
 * has no native guards in file mappings (the core reports that as
 * EOPNOTSUPP), after at most a PROT_NONE remap of a PROT_NONE hole.
 */
bool lg_hs_file_guards(void)
{
	return !forced_fallback();
}

int lg_vma_open(void)
{
	return lg_hs_open("/proc/self/maps");
}

static bool no_procmap_query;

/* The VMA of a maps line, if it is the one covering addr or the next above: 1, else 0. */
static int match_line(const char *line, uintptr_t addr, struct lg_vma *vma)
{
	struct lg_maps_line l;

	if (lg_maps_parse(line, &l) || l.end <= addr)
		return 0;
	lg_maps_line_vma(&l, vma);
	return 1;
}

/*
 * Kernels before 6.11: the text of the maps file, read in pieces. A line
 * longer than the buffer (a long file name) is parsed from its start, the
 * name cut, and the rest of it skipped.
 */
static int vma_find_text(uintptr_t addr, struct lg_vma *vma)
{
	char buf[4096];
	size_t have = 0;
	bool skip = false;
	int fd = lg_vma_open(), found = 0;

	if (fd < 0)
		return fd;
	for (;;) {
		long got = SYS(__NR_read, fd, buf + have, sizeof(buf) - 1 - have, 0, 0, 0);
		char *line = buf;

		if (got < 0) {
			found = (int)got;
			break;
		}
		have += (size_t)got;
		buf[have] = '\0';
		for (char *nl; (nl = line + strcspn(line, "\n")) < buf + have; line = nl + 1) {
			*nl = '\0';
			if (!skip && (found = match_line(line, addr, vma)))
				goto out;
			skip = false;
		}
		if (!got) {
			if (!skip && line < buf + have)
				found = match_line(line, addr, vma);
			break;
		}
		if (line == buf && have == sizeof(buf) - 1) {
			if (!skip && (found = match_line(line, addr, vma)))
				break;
			skip = true;
			line = buf + have;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
	}
out:
	lg_hs_close(fd);
	return found;
}

int lg_vma_find(int fd, uintptr_t addr, struct lg_vma *vma)
{
	struct lg_procmap_query q;
	int ret;

	if (!no_procmap_query) {
		lg_procmap_request(&q, addr);
		ret = rt_int(SYS(__NR_ioctl, fd, LG_PROCMAP_QUERY, &q, 0, 0, 0));
		if (!ret) {
			lg_procmap_vma(&q, vma);
			return 1;
		}
		if (ret == -ENOENT)
			return 0;
		if (!lg_procmap_absent(ret))
			return ret;
		no_procmap_query = true;
	}
	return vma_find_text(addr, vma);
}

/* --- stderr --- */

/* Add to the line, written out whenever the buffer is full (a long file name). */
static void put(char *buf, size_t cap, size_t *n, const char *s, size_t len)
{
	while (len--) {
		if (*n == cap) {
			SYS(__NR_write, 2, buf, *n, 0, 0, 0);
			*n = 0;
		}
		buf[(*n)++] = *s++;
	}
}

void lg_rt_say(const char *fmt, ...)
{
	char buf[1024], num[24];
	size_t n = 0;
	va_list ap;

	va_start(ap, fmt);
	for (const char *p = fmt; *p; p++) {
		if (*p != '%' || (p[1] != 's' && p[1] != 'd')) {
			put(buf, sizeof(buf), &n, p, 1);
			continue;
		}
		if (*++p == 's') {
			const char *s = va_arg(ap, const char *);

			put(buf, sizeof(buf), &n, s, strlen(s));
		} else {
			int v = va_arg(ap, int);
			unsigned int u = v < 0 ? 0u - (unsigned int)v : (unsigned int)v;
			size_t k = sizeof(num);

			do
				num[--k] = (char)('0' + u % 10);
			while (u /= 10);
			if (v < 0)
				num[--k] = '-';
			put(buf, sizeof(buf), &n, num + k, sizeof(num) - k);
		}
	}
	va_end(ap);
	SYS(__NR_write, 2, buf, n, 0, 0, 0);
}

/* A switch, not a table of pointers: the module has no relocations to apply. */
const char *lg_rt_strerror(int err)
{
	switch (err) {
	case EPERM:
		return "Operation not permitted";
	case ENOENT:
		return "No such file or directory";
	case EIO:
		return "Input/output error";
	case ENOEXEC:
		return "Exec format error";
	case EBADF:
		return "Bad file descriptor";
	case EAGAIN:
		return "Resource temporarily unavailable";
	case ENOMEM:
		return "Cannot allocate memory";
	case EACCES:
		return "Permission denied";
	case EFAULT:
		return "Bad address";
	case EINVAL:
		return "Invalid argument";
	case EMFILE:
		return "Too many open files";
	case ENOTTY:
		return "Inappropriate ioctl for device";
	case ENOSYS:
		return "Function not implemented";
	case ESTALE:
		return "Stale file handle";
	case EOPNOTSUPP:
		return "Operation not supported";
	default:
		return "Unknown error";
	}
}
