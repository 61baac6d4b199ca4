// SPDX-License-Identifier: LGPL-2.1-or-later
#include "caps.h"

#include "helpers/expect.h"
#include "kapi.h"
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The expectation bit that covers guards in type t, given where the file is. */
static unsigned int type_expect_bit(const struct backing *b, enum btype t)
{
	switch (t) {
	case BT_PANON:
		return EXPECT_ANON;
	case BT_SANON:
	case BT_MEMFD:
	case BT_TMPFS:
	case BT_PRIV_SHM:
		return EXPECT_SHMEM;
	case BT_EXT4:
	case BT_PRIV:
		if (b->pagecache_is_shmem)
			return EXPECT_SHMEM;
		return EXPECT_FILE;
	case BT_RO:
		return EXPECT_READONLY;
	default:
		return 0;
	}
}

/* A file system whose page-cache behaviour the expectation speaks for. */
static bool fs_is_known(const struct backing *b)
{
	return b->pagecache_is_shmem || !strcmp(b->dir_fs, "ext4") || !strcmp(b->dir_fs, "xfs") ||
	       !strcmp(b->dir_fs, "btrfs");
}

static int read_fault(const char *p)
{
	struct fault f;
	size_t idx = 0;
	uint64_t v;

	return probe_read(p, &idx, 1, &v, &f) ? (f.sig == SIGSEGV && f.code == SEGV_MAPERR ? 1 : -1) : 0;
}

/*
 * Guard page 1 of a 3-page mapping of type t: 0 (works), -errno (the
 * kernel refuses), or 1 (the kernel accepted it and got it wrong: the
 * message says how).
 */
static int probe_type(const char *prog, const struct backing *b, enum btype t, struct caps *c,
		      int pmfd)
{
	size_t pg = kapi_page;
	int prot = btype_readonly(t) ? PROT_READ : PROT_READ | PROT_WRITE;
	char *p = backing_map(b, t, NULL, 3 * pg, prot, 0);
	uint64_t e[3];
	unsigned char g[3] = { 0 };
	int ret = 0;

	if (p == MAP_FAILED) {
		fprintf(stderr, "%s: probe: mmap %s: %s\n", prog, btype_name[t], strerror(errno));
		return 1;
	}
	if (madvise(p + pg, pg, MADV_GUARD_INSTALL)) {
		ret = -errno;
		goto out;
	}
	if (read_fault(p) != 0 || read_fault(p + pg) != 1 || read_fault(p + 2 * pg) != 0) {
		fprintf(stderr, "%s: probe: %s: MADV_GUARD_INSTALL succeeded but page 1 of 3 "
			"does not fault with SEGV_MAPERR alone\n", prog, btype_name[t]);
		ret = 1;
		goto out;
	}
	if (kapi_pagemap(pmfd, (uintptr_t)p, 3, e) ||
	    ((e[0] | e[2]) >> PM_GUARD_BIT & 1) || !(e[1] >> PM_GUARD_BIT & 1))
		c->pagemap = false;
	if (kapi_scan_guards(pmfd, (uintptr_t)p, (uintptr_t)p + 3 * pg, g) || g[0] || !g[1] || g[2])
		c->scan = false;
	if (madvise(p + pg, pg, MADV_GUARD_REMOVE) || read_fault(p + pg) != 0) {
		fprintf(stderr, "%s: probe: %s: MADV_GUARD_REMOVE did not make page 1 accessible\n",
			prog, btype_name[t]);
		ret = 1;
	}
out:
	munmap(p, 3 * pg);
	return ret;
}

/* Whether /proc/self/mem (FOLL_FORCE) reads a PROT_NONE page. */
static bool probe_mem_force(void)
{
	size_t pg = kapi_page;
	char *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	uint64_t v = 0;
	bool ok = false;

	if (p != MAP_FAILED && fd >= 0) {
		*(volatile uint64_t *)p = 0x5a5a;
		mprotect(p, pg, PROT_NONE);
		ok = probe_mem_read(fd, p, &v, sizeof(v)) == 0 && v == 0x5a5a;
	}
	if (fd >= 0)
		close(fd);
	if (p != MAP_FAILED)
		munmap(p, pg);
	return ok;
}

int caps_probe(const char *prog, const struct backing *b, struct caps *c)
{
	int pmfd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	bool any = false, bad = false;

	memset(c, 0, sizeof(*c));
	c->expect = expect_caps(&c->expect_why);
	if (pmfd < 0) {
		fprintf(stderr, "%s: cannot open /proc/self/pagemap: %s\n", prog, strerror(errno));
		return CAPS_FAIL;
	}
	for (int f = 0; f < F_COUNT; f++)
		if (ftruncate(b->fd[f], (off_t)(3 * kapi_page))) {
			fprintf(stderr, "%s: probe: ftruncate: %s\n", prog, strerror(errno));
			close(pmfd);
			return CAPS_FAIL;
		}
	c->pagemap = c->scan = true;
	for (int t = 0; t < BT_COUNT; t++) {
		int r = probe_type(prog, b, (enum btype)t, c, pmfd);

		if (r == 1)
			bad = true;
		c->type_ok[t] = r == 0;
		c->type_err[t] = r < 0 ? -r : 0;
		any |= r == 0;
	}
	for (int f = 0; f < F_COUNT; f++)
		if (ftruncate(b->fd[f], 0))
			bad = true;
	close(pmfd);
	if (!any)
		c->pagemap = c->scan = false;
	c->mem_force = probe_mem_force();
	if (bad)
		return CAPS_FAIL;

	/* Held against the expectation: a missing expected feature fails. */
	for (int t = 0; t < BT_COUNT; t++) {
		unsigned int bit = type_expect_bit(b, (enum btype)t);

		if (c->type_ok[t] || !(c->expect & bit))
			continue;
		if ((bit == EXPECT_FILE || bit == EXPECT_READONLY) && !fs_is_known(b)) {
			fprintf(stderr, "%s: note: no guards in %s mappings of a file on %s (%s); "
				"not held against %s\n", prog, btype_name[t], b->dir_fs,
				kapi_errname(c->type_err[t]), c->expect_why);
			continue;
		}
		fprintf(stderr, "%s: FAIL: MADV_GUARD_INSTALL on a %s mapping: %s, but %s says "
			"the kernel supports %s\n", prog, btype_name[t], kapi_errname(c->type_err[t]),
			c->expect_why, expect_caps_str(bit));
		bad = true;
	}
	if (any && !c->pagemap && (c->expect & EXPECT_PAGEMAP)) {
		fprintf(stderr, "%s: FAIL: pagemap bit 58 does not report guards, but %s says it does\n",
			prog, c->expect_why);
		bad = true;
	}
	if (any && !c->scan && (c->expect & EXPECT_PAGEMAP_SCAN)) {
		fprintf(stderr, "%s: FAIL: PAGEMAP_SCAN does not report PAGE_IS_GUARD, but %s says "
			"it does\n", prog, c->expect_why);
		bad = true;
	}
	if (bad)
		return CAPS_FAIL;
	if (!c->type_ok[BT_PANON]) {
		fprintf(stderr, "%s: SKIP: this kernel has no guard regions (MADV_GUARD_INSTALL on "
			"private anonymous memory: %s), as %s expects\n", prog,
			kapi_errname(c->type_err[BT_PANON]), c->expect_why);
		return CAPS_SKIP;
	}
	return CAPS_OK;
}

void caps_print(const char *prog, const struct caps *c)
{
	char yes[256] = "", no[256] = "";

	for (int t = 0; t < BT_COUNT; t++) {
		char *dst = c->type_ok[t] ? yes : no;

		snprintf(dst + strlen(dst), 256 - strlen(dst), " %s", btype_name[t]);
	}
	printf("%s: guards in:%s%s%s; pagemap bit 58: %s; PAGEMAP_SCAN: %s; /proc/self/mem reads "
	       "PROT_NONE: %s\n", prog, yes, *no ? "; not in:" : "", no, c->pagemap ? "yes" : "no",
	       c->scan ? "yes" : "no", c->mem_force ? "yes" : "no");
	if (*no || !c->pagemap || !c->scan)
		printf("%s: RESTRICTED to what this kernel supports: the types above only%s%s\n", prog,
		       c->pagemap ? "" : "; guard state checked by fault probes, not pagemap",
		       c->scan ? "" : "; no PAGEMAP_SCAN checks");
	printf("%s: expected by %s: %s\n", prog, c->expect_why, expect_caps_str(c->expect));
}
