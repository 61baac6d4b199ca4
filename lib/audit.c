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
 * Cost: an object is looked at in la_objopen() through the program
 * headers ld.so keeps for it (dlinfo(RTLD_DI_PHDR), no system call); one
 * whose PT_LOAD segments leave no page-aligned hole between them (every
 * object of Debian's amd64 programs) is never noted, and the module makes
 * no system call for it. Only objects with a hole open /proc/self/maps,
 * once per la_preinit() or dlopen(), and query it with PROCMAP_QUERY where
 * the kernel has it. The module's own descriptors are all closed again
 * (not kept, as the library keeps them): it must leave the program's
 * descriptor table as it found it.
 *
 * LIBGUARD_AUDIT_VERBOSE=1 prints one line per object with holes to
 * stderr: its name, holes found and guarded, and its VMA count before and
 * after (or why nothing was done).
 */
#include "internal.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUDIT_EXPORT __attribute__((visibility("default")))

/* An object with a hole, to guard at the next consistent point. */
struct pending {
	struct link_map *map;
	bool program;		/* the first object ld.so reported */
};

static struct pending *pending;
static bool seen_program;	/* la_objopen() has seen the program */
static bool started;		/* la_preinit() has run */
static size_t npending, cappending;

/* dlinfo() request for the program headers: glibc 2.36; older ones refuse it. */
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 36)
#define AUDIT_DI_PHDR RTLD_DI_PHDR
#else
#define AUDIT_DI_PHDR 11
#endif

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

/*
 * The object's segments. First from the program headers ld.so keeps for
 * it (the link_map is a dlopen() handle): no system call. Where glibc is
 * older than 2.36, from its ELF header: mapped at the load bias for every
 * shared object (first segment at vaddr 0, file offset 0), once its VMA
 * is seen to start there and be readable; for a program that is not PIE,
 * from the auxiliary vector.
 */
static int object_loads(struct link_map *map, bool program, struct lg_loads *loads)
{
	size_t page = lg_page_size();
	const ElfW(Phdr) *phdr = NULL;
	struct lg_vma vma;
	int fd, ret;

	ret = dlinfo(map, AUDIT_DI_PHDR, &phdr);
	if (ret > 0 && phdr)
		return lg_elf_loads(phdr, (size_t)ret, page, loads);
	fd = lg_vma_open();
	if (fd < 0)
		return fd;
	ret = lg_vma_find(fd, map->l_addr, &vma);
	close(fd);
	if (ret == 1 && vma.start == map->l_addr && (vma.prot & PROT_READ))
		return lg_elf_parse((const void *)map->l_addr, vma.end - vma.start, page, loads);
	if (program && !*map->l_name)
		return lg_elf_loads((const void *)getauxval(AT_PHDR), getauxval(AT_PHNUM), page,
				    loads);
	return ret < 0 ? ret : -ENOEXEC;
}

/*
 * Note an object to guard once it is relocated: only one whose program
 * headers show a hole (or can't be read: guard_one() says why).
 */
AUDIT_EXPORT unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	struct lg_run holes[LG_ELF_MAX_LOADS];
	bool program = !seen_program;
	struct lg_loads loads;

	(void)lmid;
	*cookie = (uintptr_t)map;
	seen_program = true;
	if (!object_loads(map, program, &loads) &&
	    !lg_elf_holes(&loads, lg_page_size(), holes, LG_ELF_MAX_LOADS))
		return 0;	/* nothing to guard: no cost */
	if (npending == cappending) {
		size_t cap = cappending ? 2 * cappending : 32;
		struct pending *v = realloc(pending, cap * sizeof(*v));

		if (!v)
			return 0;	/* this object stays as the loader left it */
		pending = v;
		cappending = cap;
	}
	pending[npending++] = (struct pending){ map, program };
	return 0;			/* no symbol binding audit: no cost */
}

AUDIT_EXPORT unsigned int la_objclose(uintptr_t *cookie)
{
	/* An object unloaded before the next consistent point: forget it. */
	for (size_t i = 0; i < npending; i++)
		if ((uintptr_t)pending[i].map == *cookie)
			pending[i--] = pending[--npending];
	return 0;
}

static bool verbose(void)
{
	const char *v = getenv("LIBGUARD_AUDIT_VERBOSE");

	return v && *v && strcmp(v, "0");
}

/* Guard one noted object; *mfd is the VMA lookup descriptor of this pass. */
static void guard_one(const struct pending *p, bool talk, int *mfd)
{
	struct link_map *map = p->map;
	const char *name = *map->l_name ? map->l_name : "(program)";
	struct lg_elf_report rep;
	struct lg_loads loads;
	int before = 0, ret;

	ret = object_loads(map, p->program, &loads);
	if (!ret && !talk) {
		/* Nothing to say: errors leave the object as the loader left it. */
		lg_elf_guard_loads(mfd, map->l_addr, &loads, map->l_name, GUARD_NATIVE, NULL);
		return;
	}
	if (!ret)
		ret = lg_elf_guard_loads(mfd, map->l_addr, &loads, map->l_name, GUARD_ELF_COUNT,
					 &rep);
	if (ret <= 0) {
		if (ret < 0 && talk)
			fprintf(stderr, "libguard-audit: %s: %s\n", name, strerror(-ret));
		return;
	}
	before = lg_vma_count(rep.lo, rep.hi);
	ret = lg_elf_guard_loads(mfd, map->l_addr, &loads, map->l_name, GUARD_NATIVE, &rep);
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
	int mfd = -1;

	for (size_t i = 0; i < npending; i++)
		guard_one(&pending[i], talk, &mfd);
	if (mfd >= 0)
		close(mfd);
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
