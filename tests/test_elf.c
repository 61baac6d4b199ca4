// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_elf_segments() on a library laid out for 64 KiB pages: its three
 * PROT_NONE holes become guard regions in the neighbouring segments (8
 * VMAs -> 5) where the kernel has native guards in file mappings, else
 * nothing changes and the call says so; no page is ever more accessible
 * than before, not after and not during the call; the error contract.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"

struct layout {
	uintptr_t lo, hi;
	int vmas, holes;
	uintptr_t hole[8][2];
};

static const char *lib_path(void)
{
	assert_non_null(getenv("LIBGUARD_TEST_LIB64K"));
	return lib64k_path();
}

/* The library's VMAs in /proc/self/maps. */
static void layout_of(const char *path, struct layout *l)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];

	memset(l, 0, sizeof(*l));
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *name = strchr(line, '/'), perms[5];
		uintptr_t s, e;

		if (!name || strncmp(name, path, strlen(path)) || name[strlen(path)] != '\n' ||
		    sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &s, &e, perms) != 3)
			continue;
		l->lo = l->lo ? l->lo : s;
		l->hi = e;
		l->vmas++;
		if (!strcmp(perms, "---p") && l->holes < 8) {
			l->hole[l->holes][0] = s;
			l->hole[l->holes++][1] = e;
		}
	}
	fclose(f);
}

/* Per page: the signal a read raises (from a child), and the protection. */
struct access {
	size_t n;
	unsigned char sig[512];
	int prot[512];
};

static void access_of(const struct layout *l, struct access *a)
{
	a->n = (l->hi - l->lo) / pg;
	assert_true(a->n <= 512);
	assert_int_equal(probe_pages((void *)l->lo, a->n, a->sig), 0);
	for (size_t i = 0; i < a->n; i++)
		a->prot[i] = page_prot((char *)l->lo + i * pg);
}

/* Nothing that faulted may work now; nothing may gain a permission. */
static void never_more_accessible(const struct access *before, const struct access *after)
{
	assert_int_equal(before->n, after->n);
	for (size_t i = 0; i < before->n; i++) {
		if (before->sig[i]) {
			assert_int_equal(after->sig[i], before->sig[i]);
			continue;
		}
		assert_int_equal(after->sig[i], 0);
		assert_int_equal(after->prot[i] & ~before->prot[i], 0);
	}
}

/* Native guards in file mappings, and the policy lets us use them. */
static bool want_elf_native(void)
{
	return !forced_fallback() && (want_caps(NULL) & GUARD_CAP_FILE);
}

/* Shared with the reader thread: atomics, so that TSan sees no race. */
static int racing;
static long raced_reads, raced_faults;
static __thread sigjmp_buf race_env;

static void race_fault(int sig)
{
	siglongjmp(race_env, sig);
}

/* One read of p: 1 if it worked, 0 if it faulted. */
static int try_read(uintptr_t p)
{
	if (sigsetjmp(race_env, 1))
		return 0;
	(void)*(volatile char *)p;
	return 1;
}

static void *race_reader(void *arg)
{
	const struct layout *l = arg;

	while (__atomic_load_n(&racing, __ATOMIC_RELAXED))
		for (int h = 0; h < l->holes; h++)
			for (uintptr_t p = l->hole[h][0]; p < l->hole[h][1]; p += pg) {
				if (try_read(p))
					__atomic_fetch_add(&raced_reads, 1, __ATOMIC_RELAXED);
				else
					__atomic_fetch_add(&raced_faults, 1, __ATOMIC_RELAXED);
			}
	return NULL;
}

/*
 * In a child, so that the library stays unguarded for the next test: a
 * thread reads every hole page over and over while guard_elf_segments()
 * works; not one read may succeed.
 */
static void no_accessible_instant(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = race_fault, .sa_flags = SA_NODEFER };
		void *h = dlopen(lib_path(), RTLD_NOW);
		struct layout l;
		pthread_t t;
		int ret;

		if (!h)
			_exit(10);
		layout_of(lib_path(), &l);
		sigaction(SIGSEGV, &sa, NULL);
		__atomic_store_n(&racing, 1, __ATOMIC_RELAXED);
		pthread_create(&t, NULL, race_reader, &l);
		while (__atomic_load_n(&raced_faults, __ATOMIC_RELAXED) < 100)
			usleep(100);
		ret = guard_elf_segments(dlsym(h, "lib64k_fn"), 0);
		usleep(2000);
		__atomic_store_n(&racing, 0, __ATOMIC_RELAXED);
		pthread_join(t, NULL);
		printf("# racing reader: %ld faults, %ld successful reads; guarded %d\n",
		       raced_faults, raced_reads, ret);
		_exit(raced_reads ? 11 : ret != (want_elf_native() ? 3 : 0) ? 12 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void holes_become_guards(void **state)
{
	void *h = dlopen(lib_path(), RTLD_NOW);
	int (*fn)(int) = h ? (int (*)(int))dlsym(h, "lib64k_fn") : NULL;
	bool native = want_elf_native();
	struct access *before = calloc(1, sizeof(*before)), *after = calloc(1, sizeof(*after));
	struct layout l0, l1;
	int ret, others;

	(void)state;
	assert_non_null(fn);
	layout_of(lib_path(), &l0);
	printf("# %s: %d VMAs, %d PROT_NONE holes (page size %zu)\n", lib_path(), l0.vmas, l0.holes,
	       pg);
	if (pg != 4096 || l0.holes != 3) {
		printf("# not the 4 KiB-page layout with three holes this test expects\n");
		dlclose(h);
		skip();
	}
	assert_int_equal(l0.vmas, 8);
	access_of(&l0, before);
	errno = 616;
	assert_int_equal(guard_elf_segments((void *)fn, GUARD_ELF_COUNT), 3);
	layout_of(lib_path(), &l1);
	assert_int_equal(l1.vmas, 8);
	ret = guard_elf_segments((void *)fn, native ? 0 : GUARD_NATIVE);
	assert_int_equal(errno, 616);
	assert_int_equal(ret, native ? 3 : -EOPNOTSUPP);
	if (!native)
		assert_int_equal(guard_elf_segments((void *)fn, 0), 0);
	layout_of(lib_path(), &l1);
	printf("# guard_elf_segments: %d; VMAs %d -> %d (%s)\n", ret, l0.vmas, l1.vmas,
	       native ? "native guards in the file mappings" : "no native file guards: unchanged");
	assert_int_equal(l1.vmas, native ? 5 : 8);
	assert_int_equal(l1.holes, native ? 0 : 3);
	access_of(&l1, after);
	never_more_accessible(before, after);
	/* every hole page still faults, with SIGSEGV */
	for (int i = 0; i < l0.holes; i++)
		for (uintptr_t p = l0.hole[i][0]; p < l0.hole[i][1]; p += pg)
			assert_int_equal(after->sig[(p - l0.lo) / pg], SIGSEGV);
	if (native && query_reports())
		assert_string_equal(query_method((void *)l0.hole[0][0], l0.hole[0][1] - l0.hole[0][0]),
				    "native");
	/* the library works, and a second pass finds nothing left to do */
	assert_int_equal(fn(2), 2 * 42 + 'r');
	assert_int_equal(guard_elf_segments((void *)fn, 0), 0);
	/*
	 * The other objects: none has holes on amd64; on arm64 (libc and the
	 * rest laid out for 64 KiB pages) theirs are guarded now, and only once.
	 */
	others = guard_elf_segments(NULL, GUARD_ELF_COUNT);
	printf("# holes in the other objects: %d\n", others);
	assert_true(others >= 0);
	assert_int_equal(guard_elf_segments(NULL, 0), native ? others : 0);
	assert_int_equal(guard_elf_segments(NULL, 0), 0);
	dlclose(h);
	free(before);
	free(after);
}

struct last_load {
	const char *path;
	uintptr_t end;		/* bias + p_vaddr + p_memsz of the last PT_LOAD */
	uintptr_t align;	/* its p_align */
};

static int find_last_load(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct last_load *ll = arg;

	(void)size;
	if (!info->dlpi_name || strcmp(info->dlpi_name, ll->path))
		return 0;
	for (size_t i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD) {
			ll->end = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr +
				  info->dlpi_phdr[i].p_memsz;
			ll->align = info->dlpi_phdr[i].p_align;
		}
	return 1;
}

/* What the VMA at addr is, for the log: "unmapped" or its maps line. */
static const char *vma_at(uintptr_t addr, char *buf, size_t size)
{
	FILE *f = fopen("/proc/self/maps", "re");

	snprintf(buf, size, "unmapped");
	assert_non_null(f);
	while (fgets(buf, (int)size, f)) {
		uintptr_t s, e;

		if (sscanf(buf, "%" SCNxPTR "-%" SCNxPTR, &s, &e) == 2 && addr >= s && addr < e) {
			buf[strcspn(buf, "\n")] = '\0';
			fclose(f);
			return buf;
		}
	}
	fclose(f);
	snprintf(buf, size, "unmapped");
	return buf;
}

/*
 * After the last segment: is there slack to guard? ld.so maps the object
 * up to the page holding its last byte (the bytes after p_memsz in that
 * page are part of it, accessible on any layout, and no guard can be
 * smaller than a page), and when it aligned the load address to p_align
 * it unmapped the rest of what it reserved: no PROT_NONE tail, nothing to
 * guard. This asserts that layout, and that guard_elf_segments() leaves
 * it so: the object's mapping ends where the last segment's page ends, no
 * page up to the p_align boundary is the object's, and every one of them
 * is exactly as accessible after the call as before.
 */
static void no_reserved_tail(void **state)
{
	void *h = dlopen(lib_path(), RTLD_NOW);
	struct last_load ll = { .path = lib_path() };
	unsigned char before[16], after[16];
	uintptr_t page_end, align_end;
	struct layout l0, l1;
	char line[512];
	size_t n;

	(void)state;
	assert_non_null(h);
	dl_iterate_phdr(find_last_load, &ll);
	assert_true(ll.end != 0);
	layout_of(lib_path(), &l0);
	page_end = (ll.end + pg - 1) & ~(uintptr_t)(pg - 1);
	align_end = ll.align > pg ? (ll.end + ll.align - 1) & ~(uintptr_t)(ll.align - 1) : page_end;
	printf("# last segment ends at +%#" PRIxPTR ", its page at +%#" PRIxPTR
	       ", p_align boundary +%#" PRIxPTR "; the object's last VMA ends at +%#" PRIxPTR "\n",
	       ll.end - l0.lo, page_end - l0.lo, align_end - l0.lo, l0.hi - l0.lo);
	printf("# after it: %s\n", vma_at(page_end, line, sizeof(line)));
	assert_true(page_end == l0.hi);
	n = (align_end - page_end) / pg;
	if (n > sizeof(before))
		n = sizeof(before);
	/* not the loader's: unmapped, or someone else's mapping */
	for (size_t i = 0; i < n; i++)
		assert_null(strstr(vma_at(page_end + i * pg, line, sizeof(line)), lib_path()));
	if (n)
		assert_int_equal(probe_pages((void *)page_end, n, before), 0);
	guard_elf_segments(dlsym(h, "lib64k_fn"), 0);
	layout_of(lib_path(), &l1);
	assert_true(l1.hi == l0.hi);
	if (n) {
		assert_int_equal(probe_pages((void *)page_end, n, after), 0);
		assert_memory_equal(before, after, n);
	}
	dlclose(h);
}

/*
 * Every loaded object: none with holes on Debian amd64 (linked for 4 KiB
 * pages), most of them on arm64 (64 KiB).
 */
static void all_objects(void **state)
{
	int ret;

	(void)state;
	ret = guard_elf_segments(NULL, GUARD_ELF_COUNT);
	printf("# holes in this program's objects: %d\n", ret);
	assert_true(ret >= 0);
	assert_int_equal(guard_elf_segments(NULL, 0), want_elf_native() ? ret : 0);
}

static void errors(void **state)
{
	char *anon = mmap(NULL, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)state;
	errno = 77;
	assert_int_equal(guard_elf_segments(NULL, 0x8000), -EINVAL);
	assert_int_equal(guard_elf_segments(NULL, GUARD_NATIVE | GUARD_FALLBACK), -EINVAL);
	assert_int_equal(guard_elf_segments(anon, 0), -ENOENT);
	assert_int_equal(guard_elf_segments((void *)1, 0), -ENOENT);
	assert_int_equal(guard_elf_segments((void *)errors, GUARD_FALLBACK), 0);
	assert_int_equal(errno, 77);
	munmap(anon, pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_accessible_instant),
		cmocka_unit_test(holes_become_guards),
		cmocka_unit_test(no_reserved_tail),
		cmocka_unit_test(all_objects),
		cmocka_unit_test(errors),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
