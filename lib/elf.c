// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_elf_segments(): the holes ld.so leaves between an object's PT_LOAD
 * segments (one PROT_NONE VMA each, glibc BZ 31076) become guard regions
 * inside the neighbouring file mapping, so that they merge with it.
 *
 * Order, so that no byte of a hole is ever accessible: (1) if the hole's
 * file offset does not continue the neighbour's, replace it by a PROT_NONE
 * mapping of the same file that does (still inaccessible); (2) install the
 * native guard on the PROT_NONE hole; (3) only then mprotect() it to the
 * neighbour's protection, which merges the two VMAs. A failure at (3)
 * removes the guard again and leaves the PROT_NONE hole.
 */
#include "internal.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define ELF_FLAGS (GUARD_NATIVE | GUARD_FALLBACK | GUARD_ELF_COUNT)

static bool add_overflows(uint64_t a, uint64_t b)
{
	return a + b < a;
}

int lg_elf_loads(const void *phdrs, size_t phnum, size_t page, struct lg_loads *out)
{
	const Elf64_Phdr *ph = phdrs;

	out->n = 0;
	if (!ph || !phnum || phnum >= PN_XNUM)
		return -ENOEXEC;
	for (size_t i = 0; i < phnum; i++) {
		Elf64_Phdr p;
		struct lg_load *prev = out->n ? &out->v[out->n - 1] : NULL;

		memcpy(&p, &ph[i], sizeof(p));	/* the table need not be aligned */
		if (p.p_type != PT_LOAD)
			continue;
		/* The page-rounded end must not wrap: memsz + page first of all. */
		if (out->n == LG_ELF_MAX_LOADS || !p.p_memsz || p.p_filesz > p.p_memsz ||
		    p.p_memsz > UINT64_MAX - page || add_overflows(p.p_vaddr, p.p_memsz + page) ||
		    add_overflows(p.p_offset, p.p_filesz) ||
		    ((p.p_vaddr - p.p_offset) & (page - 1)) ||
		    (p.p_align > 1 && (p.p_align & (p.p_align - 1))))
			return -ENOEXEC;
		/* ld.so requires ascending, non-overlapping segments. */
		if (prev && p.p_vaddr < prev->vaddr + prev->memsz)
			return -ENOEXEC;
		out->v[out->n++] = (struct lg_load){ p.p_vaddr, p.p_memsz, p.p_offset, p.p_filesz,
						     p.p_flags };
	}
	return out->n ? 0 : -ENOEXEC;
}

int lg_elf_parse(const void *image, size_t len, size_t page, struct lg_loads *out)
{
	const unsigned char *b = image;
	Elf64_Ehdr eh;

	out->n = 0;
	if (!b || len < sizeof(eh))
		return -ENOEXEC;
	memcpy(&eh, b, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_ident[EI_VERSION] != EV_CURRENT ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    !eh.e_phnum || eh.e_phoff > len ||
	    (len - eh.e_phoff) / sizeof(Elf64_Phdr) < eh.e_phnum)
		return -ENOEXEC;
	return lg_elf_loads(b + eh.e_phoff, eh.e_phnum, page, out);
}

size_t lg_elf_holes(const struct lg_loads *l, size_t page, struct lg_run *holes, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i + 1 < l->n && n < max; i++) {
		uint64_t end = (l->v[i].vaddr + l->v[i].memsz + page - 1) & ~(uint64_t)(page - 1);
		uint64_t next = l->v[i + 1].vaddr & ~(uint64_t)(page - 1);

		if (next > end)
			holes[n++] = (struct lg_run){ end, next };
	}
	return n;
}

/* One loaded object, as dl_iterate_phdr() showed it. */
struct object {
	uintptr_t bias;
	struct lg_loads loads;
	char name[256];
	int err;
};

struct find {
	uintptr_t addr;		/* 0: every object */
	struct object *v;
	size_t n, cap;
	int err;
};

static bool contains(const struct object *o, uintptr_t addr)
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
	struct object o;

	(void)size;
	memset(&o, 0, sizeof(o));
	o.bias = info->dlpi_addr;
	o.err = lg_elf_loads(info->dlpi_phdr, info->dlpi_phnum, lg_page_size(), &o.loads);
	snprintf(o.name, sizeof(o.name), "%s", info->dlpi_name ? info->dlpi_name : "");
	if (f->addr && (o.err || !contains(&o, f->addr)))
		return 0;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct object *v = realloc(f->v, cap * sizeof(*v));

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

/* A file mapping next to a hole that the hole can become part of. */
struct neighbour {
	struct lg_vma vma;
	uint64_t pgoff;		/* file offset the hole must have */
};

static bool usable(const struct lg_vma *v)
{
	return v->inode && !v->shared && v->prot != PROT_NONE;
}

/*
 * Is [hs, he) one or more PROT_NONE VMAs, wholly mapped, with a file
 * mapping to merge with before (preferred) or after it? 1 and *nb set,
 * 0 if this is no hole to guard, or -errno.
 */
static int inspect(int fd, uintptr_t hs, uintptr_t he, struct neighbour *nb, bool *remap)
{
	struct lg_vma v, first = { 0 };
	int ret;

	for (uintptr_t at = hs; at < he; at = v.end) {
		ret = lg_vma_find(fd, at, &v);
		if (ret <= 0)
			return ret;
		if (v.start > at || v.prot != PROT_NONE)
			return 0;
		if (at == hs)
			first = v;
	}
	ret = lg_vma_find(fd, hs - 1, &nb->vma);
	if (ret < 0)
		return ret;
	if (ret && nb->vma.end == hs && usable(&nb->vma)) {
		nb->pgoff = nb->vma.pgoff + (hs - nb->vma.start);
	} else {
		ret = lg_vma_find(fd, he, &nb->vma);
		if (ret <= 0)
			return ret;
		if (nb->vma.start != he || !usable(&nb->vma) || nb->vma.pgoff < he - hs)
			return 0;
		nb->pgoff = nb->vma.pgoff - (he - hs);
	}
	*remap = !(first.start <= hs && first.end >= he && first.inode == nb->vma.inode &&
		   first.dev_major == nb->vma.dev_major && first.dev_minor == nb->vma.dev_minor &&
		   !first.shared && first.pgoff + (hs - first.start) == nb->pgoff);
	return 1;
}

/* The object's file, checked to be the one the neighbour maps. */
static int open_object(const char *name, const struct lg_vma *v)
{
	struct stat st;
	int fd = open(*name ? name : "/proc/self/exe", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_ino != v->inode || major(st.st_dev) != v->dev_major ||
	    minor(st.st_dev) != v->dev_minor) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static int guard_hole(const struct object *o, uintptr_t hs, uintptr_t he,
		      const struct neighbour *nb, bool remap)
{
	size_t len = he - hs;
	int ret;

	if (remap) {
		int fd = open_object(o->name, &nb->vma);

		if (fd < 0)
			return fd;
		/* PROT_NONE over PROT_NONE: never accessible. */
		ret = mmap((void *)hs, len, PROT_NONE, MAP_PRIVATE | MAP_FIXED, fd,
			   (off_t)nb->pgoff) == MAP_FAILED ? -errno : 0;
		close(fd);
		if (ret)
			return ret;
	}
	ret = lg_madvise((void *)hs, len, MADV_GUARD_INSTALL);
	if (ret)
		return ret == -EINVAL ? -EOPNOTSUPP : ret;
	ret = lg_mprotect((void *)hs, len, nb->vma.prot);
	if (ret)
		lg_madvise((void *)hs, len, MADV_GUARD_REMOVE);
	return ret;
}

/* Why native file-backed guards can't be used: 0 if they can. */
static int native_blocked(unsigned int flags)
{
	if ((flags & GUARD_FALLBACK) || lg_forced_fallback() || !(lg_caps() & GUARD_CAP_FILE))
		return -EOPNOTSUPP;
	return 0;
}

/*
 * *mfd is the VMA lookup descriptor, opened here on the first hole: an
 * object whose program headers show none (every object on Debian amd64)
 * costs no system call at all.
 */
static int do_object(int *mfd, const struct object *o, unsigned int flags,
		     struct lg_elf_report *rep)
{
	struct lg_run holes[LG_ELF_MAX_LOADS];
	size_t page = lg_page_size();
	size_t n = lg_elf_holes(&o->loads, page, holes, LG_ELF_MAX_LOADS);
	int guarded = 0, blocked = 0, ret = 0;

	if (rep) {
		const struct lg_load *last = &o->loads.v[o->loads.n - 1];

		rep->lo = o->bias + (o->loads.v[0].vaddr & ~(uint64_t)(page - 1));
		rep->hi = o->bias + ((last->vaddr + last->memsz + page - 1) & ~(uint64_t)(page - 1));
		snprintf(rep->name, sizeof(rep->name), "%s", o->name);
	}
	for (size_t i = 0; i < n; i++) {
		uintptr_t hs = o->bias + holes[i].start, he = o->bias + holes[i].end;
		struct neighbour nb;
		bool remap = false;

		if (*mfd < 0) {
			*mfd = lg_vma_open();
			if (*mfd < 0)
				return *mfd;
		}
		ret = inspect(*mfd, hs, he, &nb, &remap);
		if (ret < 0)
			return ret;
		if (!ret)
			continue;
		if (rep)
			rep->holes++;
		if (flags & GUARD_ELF_COUNT) {
			guarded++;
			continue;
		}
		/* Without native file guards: count the holes, touch none. */
		if (!blocked)
			blocked = native_blocked(flags);
		if (blocked)
			continue;
		ret = guard_hole(o, hs, he, &nb, remap);
		if (ret == -EOPNOTSUPP) {
			blocked = ret;
			continue;
		}
		if (ret)
			return ret;
		guarded++;
		if (rep)
			rep->guarded++;
	}
	return blocked && (flags & GUARD_NATIVE) ? blocked : guarded;
}

static int guard_objects(uintptr_t addr, unsigned int flags, struct lg_elf_report *rep)
{
	struct find f = { .addr = addr };
	int mfd = -1, total = 0, ret = 0;

	if ((flags & ~ELF_FLAGS) || (flags & (GUARD_NATIVE | GUARD_FALLBACK)) ==
					    (GUARD_NATIVE | GUARD_FALLBACK))
		return -EINVAL;
	if (rep)
		memset(rep, 0, sizeof(*rep));
	dl_iterate_phdr(collect, &f);
	if (f.err) {
		free(f.v);
		return f.err;
	}
	if (addr && !f.n)
		return -ENOENT;
	for (size_t i = 0; i < f.n; i++) {
		if (f.v[i].err) {
			ret = f.v[i].err;
			break;
		}
		ret = do_object(&mfd, &f.v[i], flags, rep);
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

int lg_elf_guard_loads(int *mfd, uintptr_t bias, const struct lg_loads *loads, const char *name,
		       unsigned int flags, struct lg_elf_report *rep)
{
	struct object o;

	if ((flags & ~ELF_FLAGS) || (flags & (GUARD_NATIVE | GUARD_FALLBACK)) ==
					    (GUARD_NATIVE | GUARD_FALLBACK) || !loads->n)
		return -EINVAL;
	if (rep)
		memset(rep, 0, sizeof(*rep));
	memset(&o, 0, sizeof(o));
	o.bias = bias;
	o.loads = *loads;
	snprintf(o.name, sizeof(o.name), "%s", name ? name : "");
	return do_object(mfd, &o, flags, rep);
}

LG_EXPORT int guard_elf_segments(const void *addr, unsigned int flags)
{
	LG_KEEP_ERRNO;

	return guard_objects((uintptr_t)addr, flags, NULL);
}
