// SPDX-License-Identifier: LGPL-2.1-or-later
#include "caps.h"

#include "helpers/expect.h"
#include "kapi.h"
#include "pattern.h"
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

static bool probe_mlock(int *err)
{
	size_t pg = kapi_page;
	char *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok;

	if (p == MAP_FAILED) {
		*err = errno;
		return false;
	}
	ok = mlock2(p, pg, MLOCK_ONFAULT) == 0;
	*err = ok ? 0 : errno;
	munmap(p, pg);
	return ok;
}

/*
 * What UFFDIO_COPY (zero: UFFDIO_ZEROPAGE) does to a guarded page of
 * private anonymous memory, or (shm >= 0) of a MAP_SHARED mapping of the
 * empty memfd shm: 1 it fills it (the guard is gone), 0 EEXIST (the guard
 * stays), -1 neither (the message says what happened instead), -2 the
 * mapping cannot be registered (r_reg: why).
 */
static int probe_uffd_guard(const char *prog, int fd, bool zero, int shm, int *r_reg)
{
	static uint64_t src[4096 / 8];
	const char *what = zero ? "UFFDIO_ZEROPAGE" : "UFFDIO_COPY";
	const char *where = shm < 0 ? "private anon" : "shmem";
	size_t pg = kapi_page, idx = 0;
	char *p = shm < 0 ? mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				 -1, 0)
			  : mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, shm, 0);
	int ret, r, fault = -1;
	int64_t done = 0;
	uint64_t v = 0;
	struct fault f;

	if (p == MAP_FAILED || madvise(p + pg, pg, MADV_GUARD_INSTALL)) {
		fprintf(stderr, "%s: probe: %s onto a %s guard: setting up: %s\n", prog, what, where,
			strerror(errno));
		if (p != MAP_FAILED)
			munmap(p, 3 * pg);
		return -1;
	}
	pattern_fill(src, pg, 7);
	r = kapi_uffd_register(fd, (uintptr_t)p, 3 * pg);
	*r_reg = r;
	if (r) {
		munmap(p, 3 * pg);
		return -2;
	}
	r = zero ? kapi_uffd_zeropage(fd, (uintptr_t)p + pg, pg, &done)
		 : kapi_uffd_copy(fd, (uintptr_t)p + pg, src, pg, &done);
	/* Unregister before touching: a missing page would wait for a handler. */
	if (kapi_uffd_unregister(fd, (uintptr_t)p, 3 * pg))
		r = -EPROTO;
	fault = read_fault(p + pg);
	if (!fault)
		probe_read(p + pg, &idx, 1, &v, &f);
	if (!r && done == (int64_t)pg && fault == 0 && v == (zero ? 0 : pattern_word(7, 0)))
		ret = 1;
	else if (r == -EEXIST && done == -EEXIST && fault == 1)
		ret = 0;
	else {
		fprintf(stderr, "%s: probe: %s onto a %s guard: %s (done %lld), the page then %s\n",
			prog, what, where, kapi_errname(r), (long long)done,
			fault == 1 ? "still faults" : fault == 0 ? "reads wrong data" : "faults oddly");
		ret = -1;
	}
	munmap(p, 3 * pg);
	return ret;
}

/*
 * shmem: a memfd of its own, so that the backing files stay as the
 * testers expect them. Registering it needs only what anonymous memory
 * does (UFFD_USER_MODE_ONLY, MISSING); a kernel that refuses it leaves the
 * testers to anonymous memory.
 */
static int probe_uffd_shmem(const char *prog, int fd, struct caps *c)
{
	int shm = memfd_create("libguard-stress-uffd-probe", MFD_CLOEXEC);
	int copy = -1, zero = -1, r = 0;

	if (shm < 0 || ftruncate(shm, (off_t)(3 * kapi_page))) {
		fprintf(stderr, "%s: probe: userfaultfd on shmem: memfd: %s\n", prog, strerror(errno));
		if (shm >= 0)
			close(shm);
		return -1;
	}
	copy = probe_uffd_guard(prog, fd, false, shm, &r);
	if (copy == -2) {
		c->uffd_shmem_err = -r;
		close(shm);
		return 0;
	}
	/* The probe's copy may have left a page: make it missing again. */
	if (ftruncate(shm, 0) || ftruncate(shm, (off_t)(3 * kapi_page)))
		copy = -1;
	else
		zero = probe_uffd_guard(prog, fd, true, shm, &r);
	close(shm);
	if (copy < 0 || zero < 0)
		return -1;
	c->uffd_shmem = true;
	c->uffd_shmem_copy_fills_guard = copy;
	c->uffd_shmem_zero_fills_guard = zero;
	return 0;
}

static int probe_uffd(const char *prog, struct caps *c)
{
	int fd = kapi_uffd_open(), copy, zero, r = 0, ret = 0;

	if (fd < 0) {
		c->uffd_err = -fd;
		return 0;
	}
	copy = probe_uffd_guard(prog, fd, false, -1, &r);
	zero = copy < 0 ? copy : probe_uffd_guard(prog, fd, true, -1, &r);
	if (copy == -2 || zero == -2) {
		/* It opens, so MISSING mode on anonymous memory must register. */
		fprintf(stderr, "%s: probe: UFFDIO_REGISTER of private anon memory: %s\n", prog,
			kapi_errname(r));
		ret = -1;
	} else if (copy < 0 || zero < 0) {
		ret = -1;
	} else {
		c->uffd = true;
		c->uffd_copy_fills_guard = copy;
		c->uffd_zero_fills_guard = zero;
		if (c->type_ok[BT_MEMFD])
			ret = probe_uffd_shmem(prog, fd, c);
	}
	close(fd);
	return ret;
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
	c->mlock = probe_mlock(&c->mlock_err);
	if (c->type_ok[BT_PANON] && probe_uffd(prog, c))
		bad = true;
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

static const char *fills_str(bool fills)
{
	return fills ? "FILLS the page and REMOVES the guard (upstream behaviour: a guard does "
		       "not stop it)"
		     : "fails with EEXIST, the guard stays";
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
	printf("%s: mlock2(MLOCK_ONFAULT): %s\n", prog, c->mlock ? "yes" : strerror(c->mlock_err));
	if (!c->uffd) {
		printf("%s: userfaultfd: not available (%s)\n", prog,
		       c->uffd_err ? kapi_errname(c->uffd_err) : "no guards to probe it with");
	} else {
		printf("%s: userfaultfd onto a guard: UFFDIO_COPY %s; UFFDIO_ZEROPAGE %s\n", prog,
		       fills_str(c->uffd_copy_fills_guard), fills_str(c->uffd_zero_fills_guard));
		if (!c->uffd_shmem)
			printf("%s: userfaultfd on shmem: not available (%s)\n", prog,
			       c->uffd_shmem_err ? kapi_errname(c->uffd_shmem_err)
						 : "no shmem guards to probe it with");
		else
			printf("%s: userfaultfd onto a shmem guard: UFFDIO_COPY %s; UFFDIO_ZEROPAGE "
			       "%s\n", prog, fills_str(c->uffd_shmem_copy_fills_guard),
			       fills_str(c->uffd_shmem_zero_fills_guard));
	}
	printf("%s: expected by %s: %s\n", prog, c->expect_why, expect_caps_str(c->expect));
}
