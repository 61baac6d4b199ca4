// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libguard-audit.so, an rtld-audit(7) module: LD_AUDIT=libguard-audit.so
 * program applies guard_elf_segments() to every object the program loads,
 * at start and on every later dlopen(), with no rebuild. Objects are
 * noted in la_objopen(); those of the program's start are guarded in
 * la_preinit(), once all are relocated and RELRO is applied, later ones at
 * the LA_ACT_CONSISTENT that ends their dlopen(): all mapped, though ld.so
 * relocates them after that. Relocation changes protections only inside
 * segments (RELRO, text relocations), never in the holes, and guard
 * markers survive mprotect(), so this is safe; a dlopen()ed object's
 * VMA count is then one lower than it will be once RELRO splits its data
 * segment.
 *
 * LIBGUARD_AUDIT_VERBOSE=1 prints one line per object with holes to
 * stderr: its name, holes found and guarded, and its VMA count before and
 * after (or why nothing was done).
 */
#include "internal.h"

#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUDIT_EXPORT __attribute__((visibility("default")))

static struct link_map **pending;
static bool seen_program;	/* the first object noted is the program */
static bool started;		/* la_preinit() has run */
static size_t npending, cappending;

/*
 * Never in a secure-execution (setuid, setgid, capabilities) program.
 * glibc already ignores LD_AUDIT paths there, but loads a module named
 * without a slash from the system directories if it has the set-user-ID
 * bit; 0 makes ld.so drop the module even then, before it reads any of
 * the environment.
 */
AUDIT_EXPORT unsigned int la_version(unsigned int version)
{
	if (getauxval(AT_SECURE))
		return 0;
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

AUDIT_EXPORT unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	(void)lmid;
	*cookie = (uintptr_t)map;
	if (npending == cappending) {
		size_t cap = cappending ? 2 * cappending : 32;
		struct link_map **v = realloc(pending, cap * sizeof(*v));

		if (!v)
			return 0;	/* this object stays as the loader left it */
		pending = v;
		cappending = cap;
	}
	pending[npending++] = map;
	return 0;			/* no symbol binding audit: no cost */
}

AUDIT_EXPORT unsigned int la_objclose(uintptr_t *cookie)
{
	/* An object unloaded before the next consistent point: forget it. */
	for (size_t i = 0; i < npending; i++)
		if ((uintptr_t)pending[i] == *cookie)
			pending[i--] = pending[--npending];
	return 0;
}

static bool verbose(void)
{
	const char *v = getenv("LIBGUARD_AUDIT_VERBOSE");

	return v && *v && strcmp(v, "0");
}

/*
 * The object's segments, from its ELF header: mapped at the load bias for
 * every shared object (first segment at vaddr 0, file offset 0); for a
 * program that is not PIE, from the auxiliary vector.
 */
static int object_loads(const struct link_map *map, bool first, struct lg_loads *loads)
{
	size_t page = lg_page_size();
	struct lg_vma vma;
	int fd, ret;

	fd = lg_vma_open();
	if (fd < 0)
		return fd;
	ret = lg_vma_find(fd, map->l_addr, &vma);
	close(fd);
	if (ret == 1 && vma.start == map->l_addr && (vma.prot & PROT_READ))
		return lg_elf_parse((const void *)map->l_addr, vma.end - vma.start, page, loads);
	if (first && !*map->l_name)
		return lg_elf_loads((const void *)getauxval(AT_PHDR), getauxval(AT_PHNUM), page,
				    loads);
	return ret < 0 ? ret : -ENOEXEC;
}

static void guard_one(const struct link_map *map, bool first, bool talk)
{
	const char *name = *map->l_name ? map->l_name : "(program)";
	struct lg_elf_report rep;
	struct lg_loads loads;
	int before = 0, ret;

	ret = object_loads(map, first, &loads);
	if (!ret)
		ret = lg_elf_guard_loads(map->l_addr, &loads, map->l_name, GUARD_ELF_COUNT, &rep);
	if (ret <= 0) {
		if (ret < 0 && talk)
			fprintf(stderr, "libguard-audit: %s: %s\n", name, strerror(-ret));
		return;
	}
	if (talk)
		before = lg_vma_count(rep.lo, rep.hi);
	ret = lg_elf_guard_loads(map->l_addr, &loads, map->l_name, GUARD_NATIVE, &rep);
	if (!talk)
		return;
	if (ret < 0)
		fprintf(stderr, "libguard-audit: %s: %d hole(s), %d guarded: %s%s; VMAs %d\n", name,
			rep.holes, rep.guarded, strerror(-ret),
			ret == -EOPNOTSUPP ? " (no native guards in file mappings: holes stay PROT_NONE)"
					   : "", before);
	else
		fprintf(stderr, "libguard-audit: %s: %d hole(s), %d guarded; VMAs %d -> %d\n", name,
			rep.holes, rep.guarded, before, lg_vma_count(rep.lo, rep.hi));
}

static void guard_pending(void)
{
	bool talk = verbose();

	for (size_t i = 0; i < npending; i++)
		guard_one(pending[i], !seen_program && i == 0, talk);
	seen_program = true;
	npending = 0;
}

/* The objects of the program's start, relocated: guard them. */
AUDIT_EXPORT void la_preinit(uintptr_t *cookie)
{
	(void)cookie;
	started = true;
	guard_pending();
}

/* After start, a dlopen() whose objects are all mapped. */
AUDIT_EXPORT void la_activity(uintptr_t *cookie, unsigned int flag)
{
	(void)cookie;
	if (flag == LA_ACT_CONSISTENT && started && npending)
		guard_pending();
}
