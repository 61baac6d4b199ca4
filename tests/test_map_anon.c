// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_map_anon() / guard_unmap(): the guards right before and after the
 * memory fault at the guard, by either method, private and shared; the
 * method reported is the one guard_query() sees; one VMA with native
 * guards, PROT_NONE VMAs with the fallback; every invalid argument leaves
 * nothing mapped and errno set; under mlockall(MCL_FUTURE) the guards
 * take the fallback, and GUARD_NATIVE refuses before mapping anything.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"
#include "helpers/replace.h"

static int all_vmas(void)
{
	return vmas_in(0, UINTPTR_MAX);
}

static void guarded_case(int prot, int flags, size_t before, size_t after, unsigned int gflags)
{
	bool native = !(gflags & GUARD_FALLBACK) && want_native(flags & MAP_SHARED ? T_SHMEM : T_ANON);
	unsigned int method = 99;
	char want[8] = "";
	void *fault;
	char *p;

	errno = 1234;
	p = guard_map_anon(3 * pg - 10, prot, flags, before, after, gflags, &method);
	assert_ptr_not_equal(p, MAP_FAILED);
	assert_int_equal(errno, 1234);
	assert_int_equal(method, before || after ? (native ? GUARD_METHOD_NATIVE
							   : GUARD_METHOD_FALLBACK) : 0);
	if (prot & PROT_WRITE) {
		memset(p, 0x33, 3 * pg);
		assert_int_equal(access_in_child(p, true, &fault), 0);
		assert_int_equal(access_in_child(p + 3 * pg - 1, true, &fault), 0);
	} else if (prot == PROT_NONE) {
		assert_int_equal(access_in_child(p, false, &fault), SIGSEGV);
	}
	if (before) {
		assert_int_equal(access_in_child(p - 1, false, &fault), SIGSEGV);
		assert_ptr_equal(fault, p - 1);
		assert_int_equal(access_in_child(p - before, true, &fault), SIGSEGV);
	}
	if (after) {
		assert_int_equal(access_in_child(p + 3 * pg, true, &fault), SIGSEGV);
		assert_ptr_equal(fault, p + 3 * pg);
		assert_int_equal(access_in_child(p + 3 * pg + after - 1, false, &fault), SIGSEGV);
	}
	/* guard_query() agrees with the method reported (PROT_NONE memory reads as fallback) */
	if (before && prot != PROT_NONE) {
		strcpy(want, native ? "10" : "20");
		assert_string_equal(query_str(p - pg, 2 * pg), want);
	}
	if (after && prot != PROT_NONE) {
		strcpy(want, native ? "01" : "02");
		assert_string_equal(query_str(p + 2 * pg, 2 * pg), want);
	}
	/* one VMA with native guards; each guard is a VMA of its own otherwise */
	assert_int_equal(vmas_in((uintptr_t)(p - before), (uintptr_t)(p + 3 * pg + after)),
			 native || prot == PROT_NONE ? 1 : 1 + !!before + !!after);
	assert_int_equal(guard_unmap(p, 3 * pg - 10), 0);
	assert_int_equal(page_prot(p - before), -1);
	assert_int_equal(page_prot(p), -1);
	assert_int_equal(page_prot(p + 3 * pg + after - 1), -1);
	assert_int_equal(guard_unmap(p, 3 * pg - 10), -EINVAL);	/* gone */
}

static void private_both(void **s) { (void)s; guarded_case(PROT_READ | PROT_WRITE, MAP_PRIVATE, pg, 2 * pg, 0); }
static void private_before(void **s) { (void)s; guarded_case(PROT_READ | PROT_WRITE, MAP_PRIVATE, 4 * pg, 0, 0); }
static void private_after(void **s) { (void)s; guarded_case(PROT_READ, MAP_PRIVATE, 0, pg, 0); }
static void private_none(void **s) { (void)s; guarded_case(PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE, 0, 0, 0); }
static void private_populate(void **s) { (void)s; guarded_case(PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE | MAP_NORESERVE, pg, pg, 0); }
static void private_reserve(void **s) { (void)s; guarded_case(PROT_NONE, MAP_PRIVATE | MAP_NORESERVE, pg, pg, 0); }
static void shared_both(void **s) { (void)s; guarded_case(PROT_READ | PROT_WRITE, MAP_SHARED, pg, pg, 0); }
static void private_fallback(void **s) { (void)s; guarded_case(PROT_READ | PROT_WRITE, MAP_PRIVATE, pg, pg, GUARD_FALLBACK); }
static void shared_fallback(void **s) { (void)s; guarded_case(PROT_READ | PROT_WRITE, MAP_SHARED, 2 * pg, pg, GUARD_FALLBACK); }

/* GUARD_NATIVE: native guards, or -EOPNOTSUPP with nothing mapped. */
static void native_only(void **state)
{
	int before = all_vmas();
	unsigned int method = 99;
	char *p;

	(void)state;
	errno = 0;
	p = guard_map_anon(pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, pg, pg, GUARD_NATIVE, &method);
	if (!want_native(T_ANON)) {
		assert_ptr_equal(p, MAP_FAILED);
		assert_int_equal(errno, EOPNOTSUPP);
		assert_int_equal(method, 0);
		assert_int_equal(all_vmas(), before);
		return;
	}
	assert_ptr_not_equal(p, MAP_FAILED);
	assert_int_equal(method, GUARD_METHOD_NATIVE);
	assert_int_equal(guard_unmap(p, pg), 0);
}

static void errors(void **state)
{
	int rw = PROT_READ | PROT_WRITE, before = all_vmas();
	size_t huge = SIZE_MAX & ~(pg - 1);
	unsigned int method = 99;

	(void)state;
	FAILS(EINVAL, guard_map_anon(0, rw, MAP_PRIVATE, pg, pg, 0, &method));
	assert_int_equal(method, 0);
	FAILS(EINVAL, guard_map_anon(SIZE_MAX, rw, MAP_PRIVATE, pg, pg, 0, NULL));
	FAILS(EINVAL, guard_map_anon(huge, rw, MAP_PRIVATE, pg, 0, 0, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE, pg + 1, pg, 0, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE, pg, 1, 0, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE, huge, pg, 0, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE, pg, huge, 0, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE | MAP_FIXED, pg, pg, 0, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE | MAP_ANONYMOUS, pg, pg, 0, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE | MAP_GROWSDOWN, pg, pg, 0, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE | MAP_HUGETLB, pg, pg, 0, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, MAP_SHARED_VALIDATE, pg, pg, 0, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, 0, pg, pg, 0, NULL));
	FAILS(EINVAL, guard_map_anon(pg, 0x100, MAP_PRIVATE, pg, pg, 0, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE, pg, pg, GUARD_NATIVE | GUARD_FALLBACK, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE, pg, pg, GUARD_FRESH, NULL));
	FAILS(EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE, pg, pg, GUARD_STACK_ABOVE, NULL));
	for (unsigned int bit = 2; bit < 32; bit++)
		FAILS(EINVAL, guard_map_anon(pg, rw, MAP_PRIVATE, pg, pg, 1u << bit, NULL));
	/* mmap's own refusal: more than the address space */
	FAILS(ENOMEM, guard_map_anon((size_t)1 << 48, rw,
				     MAP_PRIVATE | MAP_NORESERVE, 0, pg, 0, NULL));
	assert_int_equal(all_vmas(), before);
}

/* guard_unmap() knows which mappings are whose, and what length they had. */
static void unmap_errors(void **state)
{
	char *p = guard_map_anon(2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, pg, pg, 0, NULL), *stack;

	(void)state;
	assert_ptr_not_equal(p, MAP_FAILED);
	errno = 9;
	assert_int_equal(guard_unmap(p, pg), -EINVAL);
	assert_int_equal(guard_unmap(p, 3 * pg), -EINVAL);
	assert_int_equal(guard_unmap(p - pg, 4 * pg), -EINVAL);
	assert_int_equal(guard_stack_free(p, 2 * pg), -EINVAL);	/* not a stack */
	stack = guard_stack(4 * pg, pg, 0);
	assert_non_null(stack);
	assert_int_equal(guard_unmap(stack, 4 * pg), -EINVAL);
	assert_int_equal(guard_stack_free(stack, 4 * pg), 0);
	assert_int_equal(errno, 9);
	p[0] = 1;
	assert_int_equal(guard_unmap(p, 2 * pg), 0);
}

/* No mapping at addr's page: mincore() says ENOMEM. */
static bool page_unmapped(const void *addr)
{
	unsigned char v;

	return mincore((void *)addr, pg, &v) == -1 && errno == ENOMEM;
}

/* Many mappings freed in an order unrelated to their creation. */
static void many_any_order(void **state)
{
	enum { N = 2000 };
	char **v = calloc(N, sizeof(*v));

	(void)state;
	assert_non_null(v);
	for (size_t i = 0; i < N; i++) {
		v[i] = guard_map_anon(pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, pg, pg, 0, NULL);
		assert_ptr_not_equal(v[i], MAP_FAILED);
	}
	for (size_t k = 0; k < N; k++) {
		size_t i = (k * 7919) % N;	/* 7919 is prime: every index once */

		assert_int_equal(guard_unmap(v[i], pg), 0);
		/*
		 * Each gone whole, looked at at once: a count of all VMAs would
		 * see the allocator's, and under ASan a later look may find its
		 * mmap() in the hole (guard_unmap()'s check allocates). mincore()
		 * and not /proc/self/maps: 2000 reads of a 2000-line file are
		 * minutes under emulation.
		 */
		assert_true(page_unmapped(v[i] - pg));
		assert_true(page_unmapped(v[i]));
		assert_true(page_unmapped(v[i] + pg));
		assert_int_equal(guard_unmap(v[i], pg), -EINVAL);
	}
	free(v);
}

/*
 * mlockall(MCL_FUTURE): every new mapping is VM_LOCKED, where the kernel
 * refuses native guards. The guards then take the fallback (a VMA each,
 * reported as such), and GUARD_NATIVE fails with nothing mapped. In a
 * child: the test process stays unlocked. The system call directly: the
 * sanitizer runtimes make mlockall() a no-op.
 */
static int mlockall_child(void)
{
	unsigned int method = 99;
	void *fault;
	char *p;

	if (syscall(SYS_mlockall, MCL_FUTURE))
		return 10;
	p = guard_map_anon(pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, pg, pg, GUARD_NATIVE, &method);
	if (p != MAP_FAILED || errno != EOPNOTSUPP || method)
		return 11;
	p = guard_map_anon(pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, pg, pg, 0, &method);
	if (p == MAP_FAILED || method != GUARD_METHOD_FALLBACK)
		return 12;
	if (vmas_in((uintptr_t)(p - pg), (uintptr_t)(p + 2 * pg)) != 3)
		return 13;
	if (access_in_child(p - 1, false, &fault) != SIGSEGV ||
	    access_in_child(p + pg, false, &fault) != SIGSEGV)
		return 14;
	p[0] = 1;
	if (guard_unmap(p, pg))
		return 15;
	return 0;
}

static void mlockall_future(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	if (forced_fallback() || !want_native(T_ANON)) {
		printf("# native anonymous guards not expected here: nothing for mlockall to refuse\n");
		skip();
	}
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(mlockall_child());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 10) {
		printf("# mlockall(MCL_FUTURE) refused here (RLIMIT_MEMLOCK?)\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * guard_unmap() after the caller took the mapping away (munmap, or mremap
 * elsewhere) and another mapping took its address: it must not unmap the
 * newcomer. -EINVAL, the newcomer untouched, the entry gone.
 */
static void anon_replaced(enum replace_how how, int flags)
{
	char *p = guard_map_anon(4 * pg, PROT_READ | PROT_WRITE, flags, pg, 2 * pg, 0, NULL);
	struct replaced r;
	const char *why;

	assert_ptr_not_equal(p, MAP_FAILED);
	why = replace_mapping(p - pg, 7 * pg, how, &r);
	replaced_check(why, &r, guard_unmap, p, 4 * pg, 7 * pg);
}

static void replaced_anon(void **s) { (void)s; anon_replaced(R_ANON, MAP_PRIVATE); }
static void replaced_memfd(void **s) { (void)s; anon_replaced(R_MEMFD, MAP_PRIVATE); }
static void replaced_file(void **s) { (void)s; anon_replaced(R_FILE, MAP_PRIVATE); }
static void replaced_mremap(void **s) { (void)s; anon_replaced(R_MREMAP, MAP_PRIVATE); }
static void shared_replaced_anon(void **s) { (void)s; anon_replaced(R_ANON, MAP_SHARED); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(private_both),
		cmocka_unit_test(private_before),
		cmocka_unit_test(private_after),
		cmocka_unit_test(private_none),
		cmocka_unit_test(private_populate),
		cmocka_unit_test(private_reserve),
		cmocka_unit_test(shared_both),
		cmocka_unit_test(private_fallback),
		cmocka_unit_test(shared_fallback),
		cmocka_unit_test(native_only),
		cmocka_unit_test(errors),
		cmocka_unit_test(unmap_errors),
		cmocka_unit_test(many_any_order),
		cmocka_unit_test(mlockall_future),
		cmocka_unit_test(replaced_anon),
		cmocka_unit_test(replaced_memfd),
		cmocka_unit_test(replaced_file),
		cmocka_unit_test(replaced_mremap),
		cmocka_unit_test(shared_replaced_anon),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
