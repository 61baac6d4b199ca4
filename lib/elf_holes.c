// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The core of guard_elf_segments(), shared by libguard (elf.c) and by
 * libguard-audit.so, which has no libc: the holes ld.so leaves between an
 * object's PT_LOAD segments (one PROT_NONE VMA each, glibc BZ 31076)
 * become guard regions inside the neighbouring file mapping, so that they
 * merge with it. Every system call goes through the lg_hs_* interface
 * (internal.h), which each of the two implements its own way; nothing
 * here may call libc beyond memcpy/memset/memcmp/strlen.
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
#include <string.h>

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

void lg_elf_name(struct lg_elf_object *o, const char *name)
{
	size_t len = name ? strlen(name) : 0;

	if (len >= sizeof(o->name))
		len = sizeof(o->name) - 1;
	memcpy(o->name, name ? name : "", len);
	o->name[len] = '\0';
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
	int fd = lg_hs_open(*name ? name : "/proc/self/exe"), ret;
	unsigned int maj, min;
	uint64_t ino;

	if (fd < 0)
		return fd;
	ret = lg_hs_file_id(fd, &ino, &maj, &min);
	if (!ret && (ino != v->inode || maj != v->dev_major || min != v->dev_minor))
		ret = -ESTALE;
	if (ret) {
		lg_hs_close(fd);
		return ret;
	}
	return fd;
}

static int guard_hole(const struct lg_elf_object *o, uintptr_t hs, uintptr_t he,
		      const struct neighbour *nb, bool remap)
{
	size_t len = he - hs;
	int ret;

	if (remap) {
		int fd = open_object(o->name, &nb->vma);

		if (fd < 0)
			return fd;
		/* PROT_NONE over PROT_NONE: never accessible. */
		ret = lg_hs_map_none(hs, len, fd, nb->pgoff);
		lg_hs_close(fd);
		if (ret)
			return ret;
	}
	/* EINVAL: no native guards in file mappings (the module does not probe first) */
	ret = lg_hs_madvise(hs, len, MADV_GUARD_INSTALL);
	if (ret)
		return ret == -EINVAL ? -EOPNOTSUPP : ret;
	ret = lg_hs_mprotect(hs, len, nb->vma.prot);
	if (ret)
		lg_hs_madvise(hs, len, MADV_GUARD_REMOVE);
	return ret;
}

/* Why native file-backed guards can't be used: 0 if they can. */
static int native_blocked(unsigned int flags)
{
	if ((flags & GUARD_FALLBACK) || !lg_hs_file_guards())
		return -EOPNOTSUPP;
	return 0;
}

/*
 * *mfd is the VMA lookup descriptor, opened here on the first hole: an
 * object whose program headers show none (every object on Debian amd64)
 * costs no system call at all.
 */
static int do_object(int *mfd, const struct lg_elf_object *o, unsigned int flags,
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

int lg_elf_guard_object(int *mfd, const struct lg_elf_object *o, unsigned int flags,
			struct lg_elf_report *rep)
{
	if ((flags & ~ELF_FLAGS) || (flags & (GUARD_NATIVE | GUARD_FALLBACK)) ==
					    (GUARD_NATIVE | GUARD_FALLBACK))
		return -EINVAL;
	if (o->err)
		return o->err;
	if (!o->loads.n)
		return -EINVAL;
	if (rep)
		memset(rep, 0, sizeof(*rep));
	return do_object(mfd, o, flags, rep);
}

int lg_vma_count(uintptr_t start, uintptr_t end)
{
	int fd = lg_vma_open(), n = 0, ret = 0;
	struct lg_vma vma;

	if (fd < 0)
		return fd;
	for (uintptr_t at = start; at < end; at = vma.end) {
		ret = lg_vma_find(fd, at, &vma);
		if (ret <= 0 || vma.start >= end)
			break;
		n++;
	}
	lg_hs_close(fd);
	return ret < 0 ? ret : n;
}
