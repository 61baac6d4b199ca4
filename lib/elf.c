// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_elf_segments(): the objects of this link-map namespace, from
 * dl_iterate_phdr(), each handed to the hole core (elf_holes.c); and
 * libguard's side of the core's system interface (lg_hs_*), with libc.
 */
#include "internal.h"

#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int lg_hs_open(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

void lg_hs_close(int fd)
{
	close(fd);
}

int lg_hs_file_id(int fd, uint64_t *inode, unsigned int *dev_major, unsigned int *dev_minor)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	*inode = st.st_ino;
	*dev_major = major(st.st_dev);
	*dev_minor = minor(st.st_dev);
	return 0;
}

int lg_hs_map_none(uintptr_t addr, size_t len, int fd, uint64_t off)
{
	return mmap((void *)addr, len, PROT_NONE, MAP_PRIVATE | MAP_FIXED, fd, (off_t)off) ==
		       MAP_FAILED ? -errno : 0;
}

int lg_hs_madvise(uintptr_t addr, size_t len, int advice)
{
	return lg_madvise((void *)addr, len, advice);
}

int lg_hs_mprotect(uintptr_t addr, size_t len, int prot)
{
	return lg_mprotect((void *)addr, len, prot);
}

bool lg_hs_file_guards(void)
{
	return !lg_forced_fallback() && (lg_caps() & GUARD_CAP_FILE);
}

struct find {
	uintptr_t addr;		/* 0: every object */
	struct lg_elf_object *v;
	size_t n, cap;
	int err;
};

static bool contains(const struct lg_elf_object *o, uintptr_t addr)
{
	for (size_t i = 0; i < o->loads.n; i++)
		if (addr - o->bias >= o->loads.v[i].vaddr &&
		    addr - o->bias < o->loads.v[i].vaddr + o->loads.v[i].memsz)
			return true;
	return false;
}

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	struct lg_elf_object o;

	(void)size;
	memset(&o, 0, sizeof(o));
	o.bias = info->dlpi_addr;
	o.err = lg_elf_loads(info->dlpi_phdr, info->dlpi_phnum, lg_page_size(), &o.loads);
	lg_elf_name(&o, info->dlpi_name);
	if (f->addr && (o.err || !contains(&o, f->addr)))
		return 0;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct lg_elf_object *v = realloc(f->v, cap * sizeof(*v));

		if (!v) {
			f->err = -ENOMEM;
			return 1;
		}
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n++] = o;
	return f->addr ? 1 : 0;
}

static int guard_objects(uintptr_t addr, unsigned int flags)
{
	struct find f = { .addr = addr };
	int mfd = -1, total = 0, ret = 0;

	if ((flags & ~(GUARD_NATIVE | GUARD_FALLBACK | GUARD_ELF_COUNT)) ||
	    (flags & (GUARD_NATIVE | GUARD_FALLBACK)) == (GUARD_NATIVE | GUARD_FALLBACK))
		return -EINVAL;
	dl_iterate_phdr(collect, &f);
	if (f.err) {
		free(f.v);
		return f.err;
	}
	if (addr && !f.n)
		return -ENOENT;
	for (size_t i = 0; i < f.n; i++) {
		ret = lg_elf_guard_object(&mfd, &f.v[i], flags, NULL);
		if (ret < 0)
			break;
		total += ret;
		ret = 0;
	}
	if (mfd >= 0)
		close(mfd);
	free(f.v);
	return ret < 0 ? ret : total;
}

LG_EXPORT int guard_elf_segments(const void *addr, unsigned int flags)
{
	LG_KEEP_ERRNO;

	return guard_objects((uintptr_t)addr, flags);
}
