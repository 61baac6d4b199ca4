// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The mprotect method and its record: every subrange gets back its own
 * protection, overlapping installs keep the first original, partial
 * removal splits the record, the record survives fork(), contents follow
 * the native semantics, and threads share the record safely.
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"

/* Three VMAs with different protections under one guard, then back. */
static void restores_each_subrange(void **state)
{
	static const int prots[] = { PROT_READ | PROT_WRITE, PROT_READ, PROT_READ | PROT_EXEC,
				     PROT_NONE, PROT_READ | PROT_WRITE };
	struct tmap m;
	void *fault;

	(void)state;
	tmap_new(T_ANON, 5, &m);
	for (int i = 0; i < 5; i++)
		assert_int_equal(mprotect(m.addr + i * pg, pg, prots[i]), 0);
	assert_int_equal(guard_install(m.addr, 5 * pg, GUARD_FALLBACK), 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(page_prot(m.addr + i * pg), PROT_NONE);
		assert_int_equal(access_in_child(m.addr + i * pg, false, &fault), SIGSEGV);
		assert_ptr_equal(fault, m.addr + i * pg);
	}
	assert_string_equal(query_str(m.addr, 5 * pg), "22222");
	assert_int_equal(guard_remove(m.addr, 5 * pg, 0), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(page_prot(m.addr + i * pg), prots[i]);
	/* found by faulting, the caller's own PROT_NONE page looks guarded */
	assert_string_equal(query_str(m.addr, 5 * pg), query_reports() ? "00000" : "00020");
	tmap_free(&m);
}

/* A second install over a guarded part must not record PROT_NONE. */
static void overlapping_installs(void **state)
{
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 6, &m);
	assert_int_equal(mprotect(m.addr + 3 * pg, 3 * pg, PROT_READ), 0);
	assert_int_equal(guard_install(m.addr + 2 * pg, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_install(m.addr, 6 * pg, GUARD_FALLBACK), 0);
	assert_string_equal(query_str(m.addr, 6 * pg), "222222");
	/* remove the middle only: the rest stays guarded */
	assert_int_equal(guard_remove(m.addr + 2 * pg, 2 * pg, 0), 0);
	assert_string_equal(query_str(m.addr, 6 * pg), "220022");
	assert_int_equal(page_prot(m.addr + 2 * pg), PROT_READ | PROT_WRITE);
	assert_int_equal(page_prot(m.addr + 3 * pg), PROT_READ);
	assert_int_equal(page_prot(m.addr + pg), PROT_NONE);
	assert_int_equal(guard_remove(m.addr, 6 * pg, 0), 0);
	assert_int_equal(page_prot(m.addr), PROT_READ | PROT_WRITE);
	assert_int_equal(page_prot(m.addr + 5 * pg), PROT_READ);
	tmap_free(&m);
}

/* Install discards private anonymous data and keeps shared data. */
static void contents_like_native(void **state)
{
	struct tmap a, s;

	(void)state;
	tmap_new(T_ANON, 2, &a);
	tmap_new(T_SHMEM, 2, &s);
	assert_int_equal(guard_install(a.addr, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_install(s.addr, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_remove(a.addr, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_remove(s.addr, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(a.addr[0], 0);
	assert_int_equal(a.addr[2 * pg - 1], 0);
	assert_int_equal(s.addr[0], 0x5a);
	assert_int_equal(s.addr[2 * pg - 1], 0x5a);
	tmap_free(&a);
	tmap_free(&s);
}

/* The child of fork() inherits the guards and the record behind them. */
static void record_survives_fork(void **state)
{
	struct tmap m;
	int status;
	pid_t pid;

	(void)state;
	tmap_new(T_ANON, 3, &m);
	assert_int_equal(guard_install(m.addr + pg, pg, GUARD_FALLBACK), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		bool ok = !strcmp(query_str(m.addr, 3 * pg), "020") &&
			  guard_remove(m.addr + pg, pg, 0) == 0 &&
			  page_prot(m.addr + pg) == (PROT_READ | PROT_WRITE) &&
			  !strcmp(query_str(m.addr, 3 * pg), "000");

		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* the parent's guard is its own */
	assert_string_equal(query_str(m.addr, 3 * pg), "020");
	assert_int_equal(guard_remove(m.addr + pg, pg, 0), 0);
	tmap_free(&m);
}

/*
 * A record outlives an munmap() the caller forgot to pair with
 * guard_remove(); a new mapping at the address that is accessible is
 * neither reported nor changed.
 */
static void stale_record_harmless(void **state)
{
	struct tmap m;
	char *again;

	(void)state;
	tmap_new(T_ANON, 2, &m);
	assert_int_equal(guard_install(m.addr, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(munmap(m.addr, 2 * pg), 0);
	again = mmap(m.addr, 2 * pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		     -1, 0);
	if (again != m.addr) {
		if (again != MAP_FAILED)
			munmap(again, 2 * pg);
		skip();
	}
	assert_string_equal(query_str(again, 2 * pg), "00");
	assert_int_equal(guard_remove(again, 2 * pg, 0), 0);
	assert_int_equal(page_prot(again), PROT_READ);
	/* and a fresh guard there records the new protection */
	assert_int_equal(guard_install(again, 2 * pg, GUARD_FALLBACK), 0);
	assert_int_equal(guard_remove(again, 2 * pg, 0), 0);
	assert_int_equal(page_prot(again), PROT_READ);
	munmap(again, 2 * pg);
}

/* Many threads, one record: disjoint ranges, neighbours in use. */
static void threads_share_record(void **state)
{
	(void)state;
	assert_int_equal(guard_threads(6, 100, GUARD_FALLBACK, GUARD_QUERY_FALLBACK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(restores_each_subrange),
		cmocka_unit_test(overlapping_installs),
		cmocka_unit_test(contents_like_native),
		cmocka_unit_test(record_survives_fork),
		cmocka_unit_test(stale_record_harmless),
		cmocka_unit_test(threads_share_record),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
