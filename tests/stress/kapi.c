// SPDX-License-Identifier: LGPL-2.1-or-later
#include "kapi.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

size_t kapi_page;

void kapi_init(void)
{
	kapi_page = (size_t)sysconf(_SC_PAGESIZE);
}

int kapi_pagemap(int fd, uintptr_t addr, size_t n, uint64_t *e)
{
	size_t want = n * sizeof(*e), got = 0;

	while (got < want) {
		ssize_t r = pread(fd, (char *)e + got, want - got,
				  (off_t)(addr / kapi_page * sizeof(*e) + got));

		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		got += (size_t)r;
	}
	return 0;
}

int kapi_scan_guards(int fd, uintptr_t start, uintptr_t end, unsigned char *guard)
{
	struct kapi_page_region r[64];
	uintptr_t at = start;

	while (at < end) {
		struct kapi_pm_scan_arg arg = {
			.size = sizeof(arg),
			.start = at,
			.end = end,
			.vec = (uintptr_t)r,
			.vec_len = sizeof(r) / sizeof(r[0]),
			.category_mask = PAGE_IS_GUARD_CAT,
			.return_mask = PAGE_IS_GUARD_CAT,
		};
		long n = ioctl(fd, KAPI_PAGEMAP_SCAN, &arg);

		if (n < 0)
			return -errno;
		for (long i = 0; i < n; i++) {
			if (r[i].start < start || r[i].end > end || r[i].start >= r[i].end ||
			    !(r[i].categories & PAGE_IS_GUARD_CAT))
				return -EPROTO;
			for (uintptr_t a = r[i].start; a < r[i].end; a += kapi_page)
				guard[(a - start) / kapi_page] = 1;
		}
		/* A full vector stops the walk early; walk_end says where. */
		if (arg.walk_end <= at || arg.walk_end > end)
			return -EPROTO;
		at = arg.walk_end;
	}
	return 0;
}

static char maps_buf[1 << 20];

/* The whole of /proc/self/maps in maps_buf, NUL-terminated; length or -errno. */
static ssize_t read_maps(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t len = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r = read(fd, maps_buf + len, sizeof(maps_buf) - 1 - len);

		if (r < 0) {
			int err = errno;

			close(fd);
			return -err;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == sizeof(maps_buf) - 1) {
			close(fd);
			return -E2BIG;
		}
	}
	close(fd);
	maps_buf[len] = '\0';
	return (ssize_t)len;
}

int kapi_vma_count(void)
{
	ssize_t len = read_maps();
	int n = 0;

	if (len < 0)
		return (int)len;
	for (ssize_t i = 0; i < len; i++)
		n += maps_buf[i] == '\n';
#if defined(__SANITIZE_ADDRESS__) && defined(__x86_64__)
	/*
	 * Under AddressSanitizer malloc() maps its size classes on demand in a
	 * region of its own (0x600000000000 to 0x640000000000): not ours.
	 */
	for (char *l = maps_buf; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n')) {
		unsigned long long start = strtoull(l, NULL, 16);

		n -= start >= 0x600000000000ull && start < 0x640000000000ull;
	}
#endif
	return n;
}

/* One VMA of /proc/self/smaps: its maps line's fields and its VmFlags. */
struct smaps_vma {
	uintptr_t start, end;
	char perms[5];
	unsigned long long off, inode;
	char dev[16];
	char flags[160];	/* VmFlags without "gu" and "sd" */
};

/* VmFlags tokens in @line, less the ones that never keep VMAs apart. */
static void vmflags_kept(const char *line, char *out, size_t size)
{
	char copy[512], *save = NULL;
	size_t len = 0;

	snprintf(copy, sizeof(copy), "%.*s", (int)strcspn(line, "\n"), line);
	out[0] = '\0';
	for (char *t = strtok_r(copy, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
		if (strcmp(t, "gu") && strcmp(t, "sd") && len + strlen(t) + 2 < size)
			len += (size_t)snprintf(out + len, size - len, "%s ", t);
}

int kapi_vma_twins_at(uintptr_t addr)
{
	struct smaps_vma below = { 0 }, above = { 0 }, cur = { 0 };
	int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	char *line;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r = read(fd, maps_buf + len, sizeof(maps_buf) - 1 - len);

		if (r <= 0) {
			int err = r < 0 ? errno : 0;

			close(fd);
			if (err)
				return -err;
			break;
		}
		len += (size_t)r;
		if (len == sizeof(maps_buf) - 1) {
			close(fd);
			return -E2BIG;
		}
	}
	maps_buf[len] = '\0';
	for (line = maps_buf; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] == '\n')) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx %4s %llx %15s %llu", &s, &e, cur.perms, &cur.off, cur.dev,
			   &cur.inode) == 6) {
			cur.start = s;
			cur.end = e;
			cur.flags[0] = '\0';
		} else if (!strncmp(line, "VmFlags:", 8)) {
			vmflags_kept(line + 8, cur.flags, sizeof(cur.flags));
			if (cur.end == addr)
				below = cur;
			if (cur.start == addr)
				above = cur;
		}
	}
	if (!below.end || !above.end)
		return 0;
	return !strcmp(below.perms, above.perms) && below.perms[3] == 'p' &&
	       !strcmp(below.dev, above.dev) && below.inode == above.inode &&
	       (!below.inode || below.off + (below.end - below.start) == above.off) &&
	       !strcmp(below.flags, above.flags);
}

int kapi_vma_of(uintptr_t addr, uintptr_t *start, uintptr_t *end)
{
	ssize_t len = read_maps();
	char *line = maps_buf;

	if (len < 0)
		return (int)len;
	while (*line) {
		char *nl = strchr(line, '\n');
		uintptr_t s, e;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &s, &e) == 2 && s <= addr && addr < e) {
			*start = s;
			*end = e;
			return 0;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return -ENOENT;
}

void kapi_dump_maps(int fd, uintptr_t start, uintptr_t end)
{
	ssize_t len = read_maps();
	char *line = maps_buf;

	if (len < 0) {
		dprintf(fd, "  (cannot read /proc/self/maps: %s)\n", strerror((int)-len));
		return;
	}
	while (*line) {
		char *nl = strchr(line, '\n');
		uintptr_t s, e;

		if (nl)
			*nl = '\0';
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &s, &e) == 2 && s < end && e > start)
			dprintf(fd, "  %s\n", line);
		if (!nl)
			break;
		line = nl + 1;
	}
}

int kapi_uffd_open(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, UFFDIO_API, &api)) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

int kapi_uffd_register(int fd, uintptr_t start, size_t len)
{
	struct uffdio_register r = {
		.range = { .start = start, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	return ioctl(fd, UFFDIO_REGISTER, &r) ? -errno : 0;
}

int kapi_uffd_unregister(int fd, uintptr_t start, size_t len)
{
	struct uffdio_range r = { .start = start, .len = len };

	return ioctl(fd, UFFDIO_UNREGISTER, &r) ? -errno : 0;
}

int kapi_uffd_copy(int fd, uintptr_t dst, const void *src, size_t len, int64_t *done)
{
	struct uffdio_copy cp = { .dst = dst, .src = (uintptr_t)src, .len = len };
	int ret = ioctl(fd, UFFDIO_COPY, &cp) ? -errno : 0;

	*done = cp.copy;
	return ret;
}

int kapi_uffd_zeropage(int fd, uintptr_t dst, size_t len, int64_t *done)
{
	struct uffdio_zeropage z = { .range = { .start = dst, .len = len } };
	int ret = ioctl(fd, UFFDIO_ZEROPAGE, &z) ? -errno : 0;

	*done = z.zeropage;
	return ret;
}

const char *kapi_errname(int err)
{
	static const struct {
		int e;
		const char *n;
	} names[] = {
		{ 0, "0" }, { EINVAL, "EINVAL" }, { ENOMEM, "ENOMEM" }, { EFAULT, "EFAULT" },
		{ EACCES, "EACCES" }, { EPERM, "EPERM" }, { EAGAIN, "EAGAIN" },
		{ EOPNOTSUPP, "EOPNOTSUPP" }, { EBUSY, "EBUSY" }, { ENOTTY, "ENOTTY" },
		{ EIO, "EIO" }, { EBADF, "EBADF" }, { ENODEV, "ENODEV" }, { EHWPOISON, "EHWPOISON" },
		{ EINTR, "EINTR" }, { ENOSPC, "ENOSPC" }, { EPROTO, "EPROTO" }, { ENOENT, "ENOENT" },
		{ EEXIST, "EEXIST" }, { ENOSYS, "ENOSYS" },
	};
	static __thread char buf[24];

	if (err < 0)
		err = -err;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == err)
			return names[i].n;
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}
