// SPDX-License-Identifier: LGPL-2.1-or-later
/* Someone else's mapping in place of a wrapper's (replace.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "guardtest.h"
#include "replace.h"

#define FILL 0xa5

const char *replace_name(enum replace_how how)
{
	static const char *const names[] = { "anon", "memfd", "file", "mremap" };

	return names[how];
}

/* A descriptor of len bytes for how (-1 for anonymous memory), or NULL with why. */
static int backing(enum replace_how how, size_t len, const char **why)
{
	char path[PATH_MAX];
	const char *dir;
	int fd;

	if (how == R_ANON || how == R_MREMAP)
		return -1;
	if (how == R_MEMFD) {
		fd = memfd_create("replace", MFD_CLOEXEC);
	} else {
		dir = scratch_dir(why);
		if (!dir)
			return -2;
		snprintf(path, sizeof(path), "%s/replace-XXXXXX", dir);
		fd = mkostemp(path, O_CLOEXEC);
		if (fd >= 0)
			unlink(path);
	}
	if (fd < 0 || ftruncate(fd, (off_t)len))
		abort();
	return fd;
}

const char *replace_mapping(char *addr, size_t len, enum replace_how how, struct replaced *r)
{
	const char *why = NULL;
	int fd = backing(how, len, &why);
	char *n;

	if (fd == -2)
		return why;
	r->addr = addr;
	r->len = len;
	r->moved = NULL;
	r->fd = fd;
	if (how == R_MREMAP) {
		/* somewhere free to move to: reserve, then move over it */
		char *to = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (to == MAP_FAILED)
			abort();
		/*
		 * Fallback guards make the range several VMAs, which one
		 * mremap() moves only since Linux 6.17 (EFAULT before, and
		 * under valgrind): then page by page, each within one VMA.
		 */
		if (mremap(addr, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to) != to) {
			size_t pg = (size_t)sysconf(_SC_PAGESIZE);

			for (size_t off = 0; off < len; off += pg)
				if (mremap(addr + off, pg, pg, MREMAP_MAYMOVE | MREMAP_FIXED,
					   to + off) != to + off)
					abort();
		}
		r->moved = to;
	} else if (munmap(addr, len)) {
		abort();
	}
	n = mmap(addr, len, PROT_READ | PROT_WRITE,
		 (fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED) | MAP_FIXED_NOREPLACE, fd, 0);
	if (n != addr)
		abort();
	memset(n, FILL, len);
	return NULL;
}

/* Is the newcomer still mapped, readable and as it was filled? */
static bool replaced_intact(const struct replaced *r)
{
	/* look before reading: a test on broken code should fail, not crash */
	for (size_t off = 0; off < r->len; off += pg)
		if (page_prot(r->addr + off) != (PROT_READ | PROT_WRITE))
			return false;
	for (size_t off = 0; off < r->len; off++)
		if ((unsigned char)r->addr[off] != FILL)
			return false;
	return true;
}

/* Unmap the newcomer (and what R_MREMAP moved away). */
static void replaced_free(struct replaced *r, size_t moved_len)
{
	munmap(r->addr, r->len);
	if (r->moved)
		munmap(r->moved, moved_len);
	if (r->fd >= 0)
		close(r->fd);
}

void replaced_check(const char *why, struct replaced *r, int (*release)(void *, size_t), char *p,
		    size_t len, size_t moved_len)
{
	if (why) {
		printf("# skipped: %s\n", why);
		release(p, len);
		skip();
	}
	assert_int_equal(release(p, len), -EINVAL);
	assert_true(replaced_intact(r));
	assert_int_equal(release(p, len), -EINVAL);	/* forgotten */
	assert_true(replaced_intact(r));
	replaced_free(r, moved_len);
}
