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
 * Cost: the module needs no library at all, not even libc (see
 * audit_rt.c), so that its namespace holds nothing but itself: what the
 * null module costs, plus one prctl() for the auxiliary vector (before
 * Linux 6.4, which has no PR_GET_AUXV, a read of /proc/self/auxv: the one
 * /proc access of a process whose objects have no hole). An object
 * is looked at in la_objopen() through the program headers ld.so keeps
 * for it (see object_loads()): no system call. One whose PT_LOAD segments
 * leave no page-aligned hole between them (every object of Debian's amd64
 * programs) is never noted. Only objects with a hole open
 * /proc/self/maps, once per la_preinit() or dlopen(), and query it with
 * PROCMAP_QUERY where the kernel has it. The module's own descriptors are
 * all closed again: it must leave the program's descriptor table as it
 * found it.
 *
 * LIBGUARD_AUDIT_VERBOSE=1 prints one line per object with holes to
 * stderr: its name, holes found and guarded, and its VMA count before and
 * after (or why nothing was done).
 */
#include "internal.h"

#include "audit_rt.h"

#include <elf.h>
#include <link.h>
#include <string.h>

#define AUDIT_EXPORT __attribute__((visibility("default")))

/*
 * Objects with a hole, to guard at the next consistent point: a fixed
 * table, as there is no malloc(). Past it (more objects with holes in one
 * dlopen() than any real program has), an object stays as the loader left
 * it, and verbose says so.
 */
#define AUDIT_MAX_PENDING 64
struct pending {
	struct link_map *map;
	bool program;		/* the first object ld.so reported */
};

static struct pending pending[AUDIT_MAX_PENDING];
static bool seen_program;	/* la_objopen() has seen the program */
static bool started;		/* la_preinit() has run */
static size_t npending;
static struct lg_rt_start rt;

/*
 * Never in a secure-execution (setuid, setgid, capabilities) program.
 * glibc already ignores LD_AUDIT paths there, but loads a module named
 * without a slash from the system directories if it has the set-user-ID
 * bit; 0 makes ld.so drop the module even then. 0 as well if the
 * auxiliary vector can't be read: then the module is not used at all.
 */
AUDIT_EXPORT unsigned int la_version(unsigned int version)
{
	if (lg_rt_start(&rt) || rt.secure)
		return 0;
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

/*
 * Where glibc's link_map keeps the object's program headers (l_phdr, and
 * l_phnum two words later): not public, so found at the first
 * la_objopen(), which is the program's (or at ld.so's, see
 * object_loads()), as the first field holding AT_PHDR with AT_PHNUM two
 * words on. glibc 2.36 has it at 704 bytes
 * (x86_64) and 752 (aarch64), after l_info[], and some 500 bytes of
 * fields after it, in every version since 2.17: the scan stays inside the
 * structure. 0: not found (an unknown glibc), and every object is read
 * from its ELF header instead.
 */
#define AUDIT_MAP_SCAN 1024
static size_t phdr_off;

static void find_phdr_field(const struct link_map *map)
{
	const unsigned char *m = (const unsigned char *)map;

	for (size_t off = sizeof(*map); off + 2 * sizeof(void *) + sizeof(ElfW(Half)) <=
					AUDIT_MAP_SCAN; off += sizeof(void *)) {
		const void *phdr;
		ElfW(Half) phnum;

		memcpy(&phdr, m + off, sizeof(phdr));
		memcpy(&phnum, m + off + 2 * sizeof(void *), sizeof(phnum));
		if (phdr == rt.phdr && phnum == rt.phnum) {
			phdr_off = off;
			return;
		}
	}
}

/*
 * Do these program headers describe this object: a PT_DYNAMIC where ld.so
 * found the object's dynamic section? (Not for an object without one.)
 */
static bool headers_match(const ElfW(Phdr) *ph, size_t phnum, const struct link_map *map)
{
	for (size_t i = 0; i < phnum; i++) {
		ElfW(Phdr) p;

		memcpy(&p, &ph[i], sizeof(p));
		if (p.p_type == PT_DYNAMIC)
			return map->l_addr + p.p_vaddr == (uintptr_t)map->l_ld;
	}
	return !map->l_ld;
}

/* The segments from this table, if it describes this object. */
static bool loads_from(const ElfW(Phdr) *ph, size_t phnum, const struct link_map *map,
		       struct lg_elf_object *o)
{
	if (!ph || !phnum || phnum >= PN_XNUM || ((uintptr_t)ph & (sizeof(void *) - 1)) ||
	    !headers_match(ph, phnum, map))
		return false;
	o->err = lg_elf_loads(ph, phnum, lg_page_size(), &o->loads);
	return true;
}

/*
 * The object's segments: from the program headers ld.so keeps for it (it
 * reads them itself, so they are mapped and readable), checked against
 * the object's dynamic section; the program's from the auxiliary vector.
 * Without them, from the object's ELF header, mapped at the load bias for
 * every shared object (first segment at vaddr 0, file offset 0), read
 * where it can't fault: two system calls. (A program started as "ld.so
 * PROGRAM" has ld.so's headers in its auxiliary vector: the field is then
 * found on ld.so's link_map, and the program read again at la_preinit().)
 */
static void object_loads(struct link_map *map, bool program, struct lg_elf_object *o)
{
	unsigned char image[2048];	/* the header and a table of up to 35 entries */
	ElfW(Ehdr) eh;
	long got;

	o->bias = map->l_addr;
	lg_elf_name(o, map->l_name);
	if (program && loads_from(rt.phdr, rt.phnum, map, o))
		return;
	if (phdr_off) {
		const ElfW(Phdr) *ph;
		ElfW(Half) n;

		memcpy(&ph, (const unsigned char *)map + phdr_off, sizeof(ph));
		memcpy(&n, (const unsigned char *)map + phdr_off + 2 * sizeof(void *), sizeof(n));
		if (loads_from(ph, n, map, o))
			return;
	}
	got = lg_rt_peek(image, map->l_addr, sizeof(image));
	o->err = got < 0 ? (int)got : lg_elf_parse(image, (size_t)got, lg_page_size(), &o->loads);
	if (o->err)
		return;
	memcpy(&eh, image, sizeof(eh));
	if (!headers_match((const ElfW(Phdr) *)(image + eh.e_phoff), eh.e_phnum, map))
		o->err = -ENOEXEC;
}

/*
 * Note an object to guard once it is relocated: only one whose program
 * headers show a hole (or can't be read: guard_one() says why).
 */
AUDIT_EXPORT unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	struct lg_run holes[LG_ELF_MAX_LOADS];
	bool program = !seen_program;
	struct lg_elf_object o;

	(void)lmid;
	*cookie = (uintptr_t)map;
	seen_program = true;
	if (!phdr_off)
		find_phdr_field(map);
	object_loads(map, program, &o);
	if (!o.err && !lg_elf_holes(&o.loads, lg_page_size(), holes, LG_ELF_MAX_LOADS))
		return 0;	/* nothing to guard: no cost */
	if (npending == AUDIT_MAX_PENDING) {
		if (lg_rt_verbose())
			lg_rt_say("libguard-audit: %s: more than %d objects with holes at once: "
				  "left as the loader left it\n",
				  *map->l_name ? map->l_name : "(program)", AUDIT_MAX_PENDING);
		return 0;
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

/* Guard one object's holes; *mfd is the VMA lookup descriptor of this pass. */
static void guard_object(const struct lg_elf_object *o, bool talk, int *mfd)
{
	const char *name = *o->name ? o->name : "(program)";
	struct lg_elf_report rep;
	int before = 0, ret;

	if (!talk) {
		/* Nothing to say: errors leave the object as the loader left it. */
		lg_elf_guard_object(mfd, o, GUARD_NATIVE, NULL);
		return;
	}
	ret = lg_elf_guard_object(mfd, o, GUARD_ELF_COUNT, &rep);
	if (ret <= 0) {
		if (ret < 0)
			lg_rt_say("libguard-audit: %s: %s\n", name, lg_rt_strerror(-ret));
		return;
	}
	before = lg_vma_count(rep.lo, rep.hi);
	ret = lg_elf_guard_object(mfd, o, GUARD_NATIVE, &rep);
	if (ret < 0)
		lg_rt_say("libguard-audit: %s: %d hole(s), %d guarded: %s%s; VMAs %d\n", name,
			  rep.holes, rep.guarded, lg_rt_strerror(-ret),
			  ret == -EOPNOTSUPP ? " (no native guards in file mappings: holes stay PROT_NONE)"
					     : "", before);
	else
		lg_rt_say("libguard-audit: %s: %d hole(s), %d guarded; VMAs %d -> %d\n", name,
			  rep.holes, rep.guarded, before, lg_vma_count(rep.lo, rep.hi));
}

static void guard_one(const struct pending *p, int *mfd)
{
	struct lg_elf_object o;

	object_loads(p->map, p->program, &o);
	guard_object(&o, lg_rt_verbose(), mfd);
}

/*
 * The module itself: ld.so loads an auditor into a namespace of its own
 * and reports it to no la_objopen(), so a hole of its own (an arm64
 * build's 64 KiB layout, one hole) would be the only one left in the
 * process. Its program headers are where the linker put them
 * (__ehdr_start, the first segment's start, so the load bias), checked
 * against its own dynamic section as any object's are.
 */
extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));
extern ElfW(Dyn) _DYNAMIC[] __attribute__((visibility("hidden")));

static void guard_self(int *mfd)
{
	struct lg_run holes[LG_ELF_MAX_LOADS];
	const ElfW(Ehdr) *eh = &__ehdr_start;
	struct link_map self;
	struct lg_elf_object o;

	memset(&self, 0, sizeof(self));
	self.l_addr = (ElfW(Addr))eh;
	self.l_ld = _DYNAMIC;
	o.bias = self.l_addr;
	lg_elf_name(&o, "libguard-audit.so");
	if (!loads_from((const ElfW(Phdr) *)((const unsigned char *)eh + eh->e_phoff), eh->e_phnum,
			&self, &o) || o.err || !lg_elf_holes(&o.loads, lg_page_size(), holes, LG_ELF_MAX_LOADS))
		return;		/* no hole (every amd64 build): no cost */
	guard_object(&o, lg_rt_verbose(), mfd);
}

/* The noted objects, and with the program's start the module itself. */
static void guard_pending(bool self)
{
	int mfd = -1;

	if (self)
		guard_self(&mfd);
	for (size_t i = 0; i < npending; i++)
		guard_one(&pending[i], &mfd);
	if (mfd >= 0)
		lg_hs_close(mfd);
	npending = 0;
}

/* The objects of the program's start, relocated: guard them. */
AUDIT_EXPORT void la_preinit(uintptr_t *cookie)
{
	(void)cookie;
	started = true;
	guard_pending(true);
}

/* After start, a dlopen() whose objects are all mapped. */
AUDIT_EXPORT void la_activity(uintptr_t *cookie, unsigned int flag)
{
	(void)cookie;
	if (flag == LA_ACT_CONSISTENT && started && npending)
		guard_pending(false);
}
