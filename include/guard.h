/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libguard: guard regions on any mapping, on any kernel.
 *
 * A guard region is a range of pages that faults (SIGSEGV) on any access.
 * Where the kernel supports it (MADV_GUARD_INSTALL, upstream 6.13 for
 * anonymous memory, 6.15 for shmem, file-backed and read-only mappings)
 * libguard uses the native guard markers, which cost no VMA; elsewhere it
 * falls back to mprotect(PROT_NONE) and remembers the protection it
 * replaced, so that guard_remove() can restore it.
 *
 * Conventions (libguard(7) states them in full): functions returning int
 * give 0 (or a non-negative value where documented) or a negative errno
 * value, and leave errno alone; functions returning a pointer give
 * MAP_FAILED or NULL with errno set on failure, and leave errno alone on
 * success. Every function is thread-safe. The man pages are the reference.
 */
#ifndef LIBGUARD_GUARD_H
#define LIBGUARD_GUARD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The version of this header; guard_version() gives the library's. Each
 * function is in the library from the minor version its page's VERSIONS
 * names (pkg-config --atleast-version=0.3 libguard, or the macro below).
 */
#define GUARD_VERSION_MAJOR	0
#define GUARD_VERSION_MINOR	3
#define GUARD_VERSION_MICRO	0
#define GUARD_VERSION_STRING	"0.3.0"
/* Is this header at least version major.minor? */
#define GUARD_VERSION_AT_LEAST(major, minor)                                      \
	(GUARD_VERSION_MAJOR > (major) ||                                         \
	 (GUARD_VERSION_MAJOR == (major) && GUARD_VERSION_MINOR >= (minor)))

/* guard_version - the running library's version, "major.minor.micro" (static). */
const char *guard_version(void);

/* Capabilities of the running kernel, as found by guard_probe(). */
#define GUARD_CAP_ANON		(1u << 0) /* native guards in private anonymous memory */
#define GUARD_CAP_SHMEM		(1u << 1) /* ... in shmem (memfd, tmpfs, shared anonymous) */
#define GUARD_CAP_FILE		(1u << 2) /* ... in page-cache file mappings */
#define GUARD_CAP_READONLY	(1u << 3) /* ... in PROT_READ mappings of O_RDONLY files */
#define GUARD_CAP_PAGEMAP	(1u << 4) /* /proc/PID/pagemap bit 58 reports guards */
#define GUARD_CAP_PAGEMAP_SCAN	(1u << 5) /* PAGEMAP_SCAN reports PAGE_IS_GUARD */
#define GUARD_CAP_PROCESS_MADVISE (1u << 6) /* guard advice through process_madvise() */

/* Any native install capability. */
#define GUARD_CAP_NATIVE_MASK \
	(GUARD_CAP_ANON | GUARD_CAP_SHMEM | GUARD_CAP_FILE | GUARD_CAP_READONLY)

/* Flags for guard_install(), guard_remove() and the batch calls. */
#define GUARD_NATIVE	(1u << 0) /* native guards only: -EOPNOTSUPP rather than fall back */
#define GUARD_FALLBACK	(1u << 1) /* the mprotect(PROT_NONE) method only */
/*
 * Installs only: the caller vouches that the range holds no guard yet
 * (memory it has just mapped, or whose guards it removed), so the library
 * need not look before installing. See guard_install().
 */
#define GUARD_FRESH	(1u << 2)

/* Values OR-ed into guard_query()'s vector: which method guards a page. */
#define GUARD_QUERY_NATIVE	0x01
#define GUARD_QUERY_FALLBACK	0x02

/* The method a call used, from guard_install2() and guard_map_anon(). */
#define GUARD_METHOD_NATIVE	GUARD_QUERY_NATIVE
#define GUARD_METHOD_FALLBACK	GUARD_QUERY_FALLBACK

/*
 * guard_probe - the guard capabilities of the running kernel
 *
 * Returns a mask of GUARD_CAP_* bits, found once per process (the first
 * call does the work, 0.5-0.8 ms; later and concurrent calls wait for it
 * and return the same answer) by installing guards in scratch mappings of
 * each kind and reading them back; file mappings on a file the process
 * maps already. Never parses the kernel version. See guard_probe(3).
 */
unsigned int guard_probe(void);

/*
 * guard_install - make [addr, addr + len) fault on any access
 *
 * addr must be page-aligned and non-NULL; len is rounded up to a page
 * multiple and must be non-zero. Native guards are used where the kernel
 * can place them on every page of the range; otherwise (an old kernel,
 * mlocked or hugetlb memory) the whole range gets the mprotect fallback,
 * unless flags has GUARD_NATIVE. GUARD_FALLBACK, or the environment
 * variable LIBGUARD_FORCE_FALLBACK=1, forces the fallback.
 *
 * Contents: private anonymous data (and private copies of file pages) in
 * the range are discarded, file and shmem data are kept, by both methods.
 *
 * Cost: a one-page range costs one madvise(). A longer one also costs a
 * look at the range first (one PAGEMAP_SCAN), so that a failure can remove
 * exactly the guards this call added and keep those that were there.
 * GUARD_FRESH skips the look: the caller vouches that the range holds no
 * guard yet, and a failed call then removes every guard it finds in the
 * range. With GUARD_FRESH an unmapped hole in the range is found by the
 * kernel, after it has guarded the mapped parts (discarding their private
 * anonymous data, as a guard does): they are unguarded again and the call
 * fails with -ENOMEM.
 *
 * Returns 0, or: -EINVAL (bad address, length or flags, or a VM_PFNMAP,
 * VM_IO, VM_MIXEDMAP or VM_DONTEXPAND mapping), -ENOMEM (part of the range
 * is not mapped, or the kernel ran out of memory or VMAs), -EOPNOTSUPP
 * (GUARD_NATIVE, and the kernel or mapping can't do it natively), or
 * another error from the kernel. On failure nothing the call did remains:
 * no page of the range is left guarded by this call.
 */
int guard_install(void *addr, size_t len, unsigned int flags);

/*
 * guard_install2 - guard_install(), telling which method it used
 *
 * As guard_install(addr, len, flags); on success *method (if not NULL) is
 * GUARD_METHOD_NATIVE or GUARD_METHOD_FALLBACK, found without a further
 * system call. On failure *method is 0.
 */
int guard_install2(void *addr, size_t len, unsigned int flags, unsigned int *method);

/*
 * guard_remove - remove guards from [addr, addr + len)
 *
 * Removes native guards and restores the original protection of every
 * page the fallback protected (each subrange gets back its own). Pages
 * that were not guarded are left alone: removing a guard that was never
 * installed is a no-op, as with the kernel. GUARD_NATIVE or GUARD_FALLBACK
 * restrict the call to one method. Arguments as for guard_install().
 *
 * Returns 0, or -EINVAL, -ENOMEM (part of the range is not mapped;
 * nothing was done), -EOPNOTSUPP (GUARD_NATIVE on a kernel without native
 * guards) or another error from the kernel.
 */
int guard_remove(void *addr, size_t len, unsigned int flags);

/*
 * guard_query - which pages of [addr, addr + len) are guarded
 *
 * Like mincore(2): vec must have room for one byte per page of the range;
 * vec[i] is set to a non-zero mask of GUARD_QUERY_NATIVE (read from
 * PAGEMAP_SCAN or pagemap bit 58) and GUARD_QUERY_FALLBACK (a page the
 * fallback protected and that is still PROT_NONE), or 0.
 *
 * Returns 0, or -EINVAL (bad arguments), -ENOMEM (part of the range is not
 * mapped), or -EOPNOTSUPP (the kernel can install native guards but can't
 * report them, as upstream 6.13 and 6.14).
 */
int guard_query(const void *addr, size_t len, unsigned char *vec);

/*
 * guard_install_batch, guard_remove_batch - many ranges in one call
 *
 * Apply guard_install() or guard_remove() to each of the count ranges in
 * order, many ranges per process_madvise() (IOV_MAX at a time) where
 * GUARD_CAP_PROCESS_MADVISE is present; one range costs one madvise().
 * Removals go together unless the fallback has guards about.
 *
 * Ranges of one page, and with GUARD_FRESH ranges of any length, go to
 * the kernel together; without GUARD_FRESH a longer range is looked at
 * first, as by guard_install(), and goes on its own.
 *
 * Returns 0 when every range is done. On failure returns the negative
 * errno for the first range that failed and, if done is not NULL, stores
 * its index in *done: ranges before it are done, ranges after it are
 * untouched, and the failed range itself is not left guarded by the call
 * (for removal it may be partly unguarded). Invalid arguments in any
 * range give -EINVAL before anything is done, with *done = 0.
 */
int guard_install_batch(const struct iovec *ranges, size_t count, unsigned int flags,
			size_t *done);
int guard_remove_batch(const struct iovec *ranges, size_t count, unsigned int flags,
		       size_t *done);

/*
 * Wrappers. Functions returning a pointer give NULL (guard_stack) or
 * MAP_FAILED (guard_map_file) with errno set on failure and leave errno
 * alone on success; the others follow the conventions above.
 */

/*
 * guard_map_file - map a file with guard regions around it
 *
 * Maps len bytes (rounded up to a page multiple) of fd from offset, like
 * mmap(NULL, len, prot, flags, fd, offset), with guard_before bytes of
 * guard directly below the mapping and guard_after bytes directly above
 * it (page multiples, either may be 0). flags is MAP_SHARED or MAP_PRIVATE,
 * optionally with MAP_POPULATE or MAP_NORESERVE. offset must be
 * page-aligned and inside the file; the mapping may extend past the end of
 * the file (an access there raises SIGBUS, a guard raises SIGSEGV).
 *
 * VMAs: with native guards the trailing guard is part of the file mapping
 * and so is the leading one when offset >= guard_before: one VMA; else the
 * leading guard is an anonymous reservation: two. With the fallback each
 * guard is a PROT_NONE VMA of its own.
 *
 * Returns the address of the first file byte, or MAP_FAILED with errno:
 * EBADF (fd), EINVAL (flags, prot, alignment, zero or overflowing
 * sizes), EOVERFLOW (offset + len + guard_after beyond off_t), ENODEV (not
 * a regular file or memfd), ENXIO (offset at or past the end of the file),
 * or an error of mmap(2) or guard_install(). Nothing is left mapped on
 * failure. Undo with guard_unmap().
 */
void *guard_map_file(int fd, off_t offset, size_t len, int prot, int flags, size_t guard_before,
		     size_t guard_after);

/*
 * guard_map_anon - anonymous memory with guard regions around it
 *
 * For allocators: maps len bytes (rounded up to a page multiple) like
 * mmap(NULL, len, prot, flags | MAP_ANONYMOUS, -1, 0), with guard_before
 * bytes of guard directly below and guard_after bytes directly above
 * (page multiples, either may be 0). flags is MAP_PRIVATE or MAP_SHARED,
 * optionally with MAP_NORESERVE, MAP_POPULATE or MAP_STACK; prot any of
 * PROT_READ, PROT_WRITE, PROT_EXEC or PROT_NONE. gflags may hold
 * GUARD_NATIVE or GUARD_FALLBACK, as for guard_install(); the range is
 * fresh memory, so no look is taken first (GUARD_FRESH is implied).
 *
 * VMAs: one with native guards; with the fallback each guard is a
 * PROT_NONE VMA of its own. If method is not NULL it receives
 * GUARD_METHOD_NATIVE or GUARD_METHOD_FALLBACK (0 when there are no
 * guards). Cost: one mmap() plus one madvise() per guard, as by hand.
 *
 * Returns the address of the first usable byte, or MAP_FAILED with errno:
 * EINVAL (flags, gflags, prot, alignment, zero or overflowing sizes),
 * EOPNOTSUPP (GUARD_NATIVE, and the guards would need the fallback), or an
 * error of mmap(2) or guard_install(). Nothing is left mapped on failure.
 * Undo with guard_unmap(addr, len).
 */
void *guard_map_anon(size_t len, int prot, int flags, size_t guard_before, size_t guard_after,
		     unsigned int gflags, unsigned int *method);

/*
 * guard_unmap - unmap what guard_map_file() or guard_map_anon() mapped,
 * guards included
 *
 * addr and len are the address the call returned and the len given to it.
 * Returns 0, or -EINVAL (not such a mapping, a different length, or the
 * kernel no longer shows the mapping the library made there: nothing is
 * unmapped; see "Only what the library mapped" in guard_map_file(3)).
 */
int guard_unmap(void *addr, size_t len);

/* guard_stack(): also put a guard region of guard_size above the stack. */
#define GUARD_STACK_ABOVE	(1u << 4)

/*
 * guard_stack - a thread stack with a guard region below it
 *
 * Allocates size bytes of stack (a non-zero page multiple) with a guard
 * region of guard_size bytes (a non-zero page multiple) directly below,
 * and with GUARD_STACK_ABOVE also directly above. Returns the lowest
 * usable address, ready for pthread_attr_setstack(attr, stack, size), or
 * NULL with errno set (EINVAL, ENOMEM, or an error of guard_install()).
 * flags may also hold GUARD_NATIVE or GUARD_FALLBACK, as for
 * guard_install(). One VMA with native guards, two (three) otherwise.
 * Free with guard_stack_free(stack, size) once no thread runs on it.
 */
void *guard_stack(size_t size, size_t guard_size, unsigned int flags);

/*
 * guard_stack_free - free a stack of guard_stack(): 0, or -EINVAL (not
 * such a stack, or no longer the mapping the library made: nothing is
 * freed; see guard_stack(3)).
 */
int guard_stack_free(void *stack, size_t size);

/*
 * guard_pthread_attr_init - pthread_attr_init() with a guarded stack
 *
 * Initializes *attr and gives it a stack of guard_stack(size, guard_size,
 * 0), both rounded up to page multiples; size must be at least
 * PTHREAD_STACK_MIN and guard_size non-zero. The stack belongs to the
 * caller: a thread created with attr runs on it, so it can serve one
 * thread at a time, and guard_pthread_attr_destroy() frees it together
 * with attr after that thread has been joined. Returns 0 or a negative
 * errno (-EINVAL, -ENOMEM); on failure nothing is allocated.
 */
int guard_pthread_attr_init(pthread_attr_t *attr, size_t size, size_t guard_size);

/*
 * guard_pthread_attr_destroy - free the stack of guard_pthread_attr_init()
 * and destroy attr. Returns 0, or -EINVAL (attr has no stack of
 * guard_stack(): it is left as it was).
 */
int guard_pthread_attr_destroy(pthread_attr_t *attr);

/* guard_elf_segments(): count the holes that could be guarded, change nothing. */
#define GUARD_ELF_COUNT		(1u << 5)

/*
 * guard_elf_segments - turn the holes between an ELF object's segments
 * into guard regions
 *
 * For the loaded object containing addr (NULL: every loaded object), each
 * page-aligned hole between two PT_LOAD segments that the dynamic loader
 * left as a PROT_NONE mapping becomes a native guard region inside the
 * neighbouring segment's file mapping, which then covers it: the object
 * loses one VMA per hole, and every address in the hole still faults. No
 * byte is accessible at any instant that was not before. Needs native
 * guards in file mappings (GUARD_CAP_FILE): elsewhere, or with
 * GUARD_FALLBACK or LIBGUARD_FORCE_FALLBACK, the PROT_NONE holes (already
 * inaccessible) stay as they are and the call returns 0, or -EOPNOTSUPP
 * with GUARD_NATIVE, so that a caller can tell why nothing happened.
 * GUARD_ELF_COUNT counts the holes that qualify and changes nothing.
 *
 * Returns the number of holes guarded (counted), or -EINVAL (flags),
 * -ENOENT (addr is in no loaded object), -ENOEXEC (a corrupt program
 * header), -EOPNOTSUPP, or another error from the kernel; holes guarded
 * before an error stay guarded, the hole at hand is left PROT_NONE.
 * Do not dlclose() an object while this call runs on it.
 */
int guard_elf_segments(const void *addr, unsigned int flags);

/* One region of a process's address space, from guard_maps_next(). */
struct guard_region {
	uintptr_t start, end;		/* [start, end) */
	uintptr_t vma_start, vma_end;	/* the VMA the region is part of */
	unsigned long long offset;	/* file offset of start */
	unsigned long long inode;	/* 0: no file */
	unsigned int dev_major, dev_minor;
	int prot;			/* PROT_* of the VMA */
	unsigned int flags;		/* GUARD_REGION_* */
	const char *name;		/* path, [heap], ...: "" if none; valid until the next call */
};
#define GUARD_REGION_GUARD	(1u << 0) /* native guard pages: any access faults */
#define GUARD_REGION_SHARED	(1u << 1) /* a MAP_SHARED mapping */

struct guard_maps;

/*
 * guard_maps_open, guard_maps_next, guard_maps_close - iterate over the
 * address space of process pid (0: the caller) as /proc/PID/maps shows it,
 * with each run of native guard pages split out as a region of its own
 * (GUARD_REGION_GUARD). flags must be 0.
 *
 * guard_maps_open() returns 0 and *maps, or -EINVAL, -ESRCH (no such
 * process), -EACCES or -EPERM (not allowed to read its maps or pagemap),
 * -ENOMEM, or -EOPNOTSUPP: the kernel has native guards but can't report
 * them (upstream 6.13 and 6.14), so the listing would be wrong.
 * guard_maps_next() returns 1 and *region, 0 at the end, or a negative
 * errno. guard_maps_close() accepts NULL. Fallback guards are ordinary
 * PROT_NONE VMAs, as in /proc/PID/maps.
 */
int guard_maps_open(pid_t pid, unsigned int flags, struct guard_maps **maps);
int guard_maps_next(struct guard_maps *maps, struct guard_region *region);
void guard_maps_close(struct guard_maps *maps);

#ifdef __cplusplus
}
#endif

#endif /* LIBGUARD_GUARD_H */
