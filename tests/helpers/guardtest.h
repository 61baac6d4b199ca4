/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the libguard test programs: mappings of each backing, access
 * from a forked child with the faulting address, and what this
 * environment expects of the library (from expect.h, not from the probe).
 */
#ifndef LIBGUARD_TESTS_GUARDTEST_H
#define LIBGUARD_TESTS_GUARDTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

enum tkind { T_ANON, T_SHMEM, T_FILE, T_READONLY, T_NKINDS };

struct tmap {
	char *addr;
	size_t len;
	enum tkind kind;
	int fd;
};

extern size_t pg;
/*
 * The small thread stack the tests use: 64 KiB, or PTHREAD_STACK_MIN
 * where glibc wants more (arm64: 128 KiB), in whole pages.
 */
extern size_t small_stack;

/* Call first in main(): page size, LIBGUARD_PROBE_DIR from LIBGUARD_SCRATCH. */
void guardtest_init(void);
const char *kind_name(enum tkind kind);
/* A scratch directory on a page-cache filesystem, or NULL (why in *why). */
const char *scratch_dir(const char **why);
/* LIBGUARD_TEST_LIB64K; in the guest, a copy on the scratch disk (not 9p). */
const char *lib64k_path(void);
/* Map pages of the kind, filled with 0x5a where writable; NULL = skip. */
const char *tmap_new(enum tkind kind, size_t pages, struct tmap *m);
void tmap_free(struct tmap *m);

/* GUARD_CAP_* bits the environment says the kernel has. */
unsigned int want_caps(const char **why);
bool forced_fallback(void);
/*
 * Does this kernel answer PROCMAP_QUERY (Linux 6.11) on a maps file? The
 * errors the library takes for "none" (ENOTTY before 6.11, EINVAL, ENOSYS,
 * a filter's EPERM/EACCES) are a no here too.
 */
bool procmap_query_works(void);
/*
 * Does the fallback check its records the weak way (libguard(7), "Kernels
 * before 6.11"): no PROCMAP_QUERY (or LIBGUARD_NO_PROCMAP_QUERY), no
 * LIBGUARD_STRICT_RECORDS, and MADV_POPULATE_READ there?
 */
bool records_weak(void);
/* Does guard_install(flags 0) on this kind use native guards here? */
bool want_native(enum tkind kind);
unsigned int kind_cap(enum tkind kind);

/*
 * Read (or write) *p in a forked child. Returns the signal the access
 * raised (SIGSEGV, SIGBUS) with its si_addr in *fault, or 0 if the access
 * succeeded.
 */
int access_in_child(volatile char *p, bool write, void **fault);

/*
 * Can guard_query() report native guards here? Not on a kernel that has
 * native guards but no pagemap reporting (upstream 6.13/6.14, our VM
 * kernel before the pagemap patch): there it returns -EOPNOTSUPP, as
 * documented, and the helpers below find the guards by faulting instead.
 */
bool query_reports(void);

/*
 * Read one byte of each of n pages from addr in one forked child; out[i]
 * is 0 when the read worked, else the signal it raised (SIGSEGV, SIGBUS).
 * Returns 0, or -1 if the child could not be run.
 */
int probe_pages(const void *addr, size_t n, unsigned char *out);

/*
 * guard_query(), or where it can't report (!query_reports()) the same
 * vector found by faulting: GUARD_QUERY_FALLBACK for a faulting PROT_NONE
 * page, GUARD_QUERY_NATIVE for a faulting accessible one. In that case
 * guard_query() itself must return -EOPNOTSUPP: anything else is returned
 * as -EPROTO, so the test fails. A page guarded both ways reads as
 * fallback only, and a PROT_NONE page the library never guarded reads as
 * fallback too.
 */
int query_vec(const void *addr, size_t len, unsigned char *vec);

/* "native", "fallback", "mixed", "none": what guard_query says of a range. */
const char *query_method(void *addr, size_t len);
/* query_vec() into a string of '0'..'3', one per page (static buffer). */
const char *query_str(void *addr, size_t len);
/* The number of VMAs meeting [start, end), from /proc/self/maps. */
int vmas_in(uintptr_t start, uintptr_t end);
/* The protection of the page at addr, from /proc/self/maps; -1 if unmapped. */
int page_prot(const void *addr);

/*
 * Threads on one anonymous mapping of slots of three pages: one installer
 * per slot guards and unguards the middle page rounds times with flags,
 * checking each time with guard_query() that exactly that page reads
 * want (a GUARD_QUERY_* mask), then nothing; two more threads write the
 * bytes just before and just after every guard all the while (a fault
 * there kills the test). Returns the number of wrong answers.
 */
long guard_threads(int slots, int rounds, unsigned int flags, unsigned char want);

/*
 * The sanitizer this program is built with (meson -Db_sanitize=...):
 * "AddressSanitizer" or "ThreadSanitizer", else undefined. A check that cannot work
 * under it calls skip_under_sanitizer(why) first: it prints the reason and
 * skips there, and runs everywhere else.
 */
#if defined(__SANITIZE_ADDRESS__)
#define GT_SANITIZER "AddressSanitizer"
#elif defined(__SANITIZE_THREAD__)
#define GT_SANITIZER "ThreadSanitizer"
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GT_SANITIZER "AddressSanitizer"
#elif __has_feature(thread_sanitizer)
#define GT_SANITIZER "ThreadSanitizer"
#endif
#endif
#ifdef GT_SANITIZER
/* The same for one sanitizer only (name as in GT_SANITIZER). */
#define skip_under(name, why)                                                           \
	do {                                                                            \
		if (!strcmp(GT_SANITIZER, name)) {                                      \
			printf("# skipped under %s: %s\n", GT_SANITIZER, why);        \
			skip();                                                         \
		}                                                                       \
	} while (0)
#define skip_under_sanitizer(why) skip_under(GT_SANITIZER, why)
#else
#define skip_under(name, why) ((void)(name), (void)(why))
#define skip_under_sanitizer(why) ((void)(why))
#endif

/*
 * Programs run as nobody, and set-user-ID copies of them (test_security,
 * test_dt_audit); these assert with cmocka.
 */
#define NOBODY 65534
/* getenv(name), which the test environment must set. */
const char *env_path(const char *name);
/*
 * A new directory named libguard-TAG-XXXXXX, in out, where a set-user-ID
 * bit takes effect and nobody can go; the test skips, saying why, if it
 * does not run as root or every scratch directory is on a nosuid
 * filesystem.
 */
void suid_dir(const char *tag, char *out, size_t cap);
/* Copy src to dir/name (its path in out), owned by root, with mode. */
void copy_to(const char *src, const char *dir, const char *name, mode_t mode, char *out,
	     size_t cap);
/* 1 if nobody can open path for reading (every directory on the way), else 0. */
int nobody_can_read(const char *path);
/*
 * Run argv with envp (as nobody if asked), stdout and stderr into out (cap
 * bytes, NUL-terminated). Its exit status, or -1 if a signal ended it.
 */
int run_captured(char *const argv[], char *const envp[], bool as_nobody, char *out, size_t cap);
/* Each line of out as a TAP comment, indented. */
void show_lines(const char *out);

/* A pointer-returning call fails with MAP_FAILED and errno err (cmocka asserts). */
#define FAILS(err, call)                                                                   \
	do {                                                                               \
		errno = 0;                                                                 \
		assert_ptr_equal((call), MAP_FAILED);                                      \
		assert_int_equal(errno, (err));                                            \
	} while (0)

#endif
