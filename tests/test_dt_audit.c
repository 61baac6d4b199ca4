// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The packager's switch: a program linked with -Wl,--audit= naming
 * libguard-audit.so (a DT_AUDIT entry, what `pkg-config --libs
 * libguard-audit` gives) loads the module with an empty environment, and
 * the 64 KiB-layout library it dlopen()s gets its holes guarded (5 VMAs
 * instead of 8, no PROT_NONE mapping left in the process) where the
 * kernel has native file guards, and keeps its holes elsewhere; the same
 * pages fault either way. A program it execs is not audited (DT_AUDIT is
 * the file's, not the process's), and set-user-ID it does nothing.
 *
 * The programs: audit-probe (no audit module) and dt-audit-probe (the
 * same source linked with --audit=), both run under `env -i`, so no
 * LD_AUDIT, LD_PRELOAD or LIBGUARD_* variable reaches them: they see the
 * real kernel, whatever this suite simulates.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"

struct probe {
	int vmas, faulting, pages, audit, holes, self;
};

/*
 * Run argv with an empty environment (as nobody if asked), stdout and
 * stderr into out, and parse the probe's line. Exit status.
 */
static int run_probe(char *const argv[], bool as_nobody, struct probe *r, char *out, size_t cap)
{
	char *const envp[] = { NULL };
	int rc = run_captured(argv, envp, as_nobody, out, cap);
	const char *line;

	printf("# env -i%s", as_nobody ? " (as nobody)" : "");
	for (char *const *a = argv; *a; a++)
		printf(" %s", *a);
	printf(":\n");
	show_lines(out);
	memset(r, 0, sizeof(*r));
	line = strstr(out, "vmas ");
	if (line)
		assert_int_equal(sscanf(line, "vmas %d faulting %d pages %d audit %d holes %d self %d",
					&r->vmas, &r->faulting, &r->pages, &r->audit, &r->holes,
					&r->self), 6);
	return rc;
}

/* Does the module guard file holes on this kernel (not simulated)? */
static bool want_guarded(void)
{
	const char *why;

	return want_caps(&why) & GUARD_CAP_FILE;
}

static void linked_program(void **state)
{
	char out[8192];
	struct probe plain, linked;
	char *argv_plain[] = { (char *)env_path("LIBGUARD_AUDIT_PROBE"), (char *)lib64k_path(), NULL };
	char *argv_dt[] = { (char *)env_path("LIBGUARD_DT_AUDIT_PROBE"), (char *)lib64k_path(), NULL };
	bool guarded = want_guarded();

	(void)state;
	assert_int_equal(run_probe(argv_plain, false, &plain, out, sizeof(out)), 0);
	assert_int_equal(run_probe(argv_dt, false, &linked, out, sizeof(out)), 0);
	assert_int_equal(plain.audit, 0);
	/* loaded with no LD_AUDIT: the DT_AUDIT entry did it */
	assert_int_equal(linked.audit, 1);
	/* the same pages fault: the holes, nothing more, nothing less */
	assert_int_equal(linked.pages, plain.pages);
	assert_int_equal(linked.faulting, plain.faulting);
	assert_true(plain.faulting > 0);
	if (pg != 4096) {
		printf("# page size %zu: not the layout this test expects\n", pg);
		skip();
	}
	assert_int_equal(plain.vmas, 8);
	assert_true(plain.holes >= 3);
	printf("# libtest64k.so VMAs %d -> %d, PROT_NONE file mappings in the process %d -> %d, "
	       "%d of them the module's own (kernel file guards expected: %s)\n",
	       plain.vmas, linked.vmas, plain.holes, linked.holes, linked.self, guarded ? "yes" : "no");
	if (guarded) {
		assert_int_equal(linked.vmas, 5);
		/*
		 * every object's holes, the libraries' too (arm64 has them),
		 * and the module's own (an arm64 build's 64 KiB layout)
		 */
		assert_int_equal(linked.holes, 0);
	} else {
		assert_int_equal(linked.vmas, 8);
		/* the module's own hole, if it has one, is one more */
		assert_int_equal(linked.holes - linked.self, plain.holes);
	}
}

/* A program the linked one execs runs unaudited: nothing is inherited. */
static void exec_child(void **state)
{
	char out[8192];
	struct probe child;
	char *argv[] = { (char *)env_path("LIBGUARD_DT_AUDIT_PROBE"), "--exec",
			 (char *)env_path("LIBGUARD_AUDIT_PROBE"), (char *)lib64k_path(), NULL };

	(void)state;
	assert_int_equal(run_probe(argv, false, &child, out, sizeof(out)), 0);
	assert_int_equal(child.audit, 0);
	if (pg == 4096)
		assert_int_equal(child.vmas, 8);
}

/*
 * Set-user-ID root, run by nobody (secure execution): ld.so ignores a
 * DT_AUDIT entry naming a path, as it does LD_AUDIT's (and the module
 * would decline, la_version 0): no module, the library keeps its holes. The same copy without the bit, run by
 * nobody, is the control: the module loads.
 */
static void setuid_program(void **state)
{
	char dir[4096], prog[4096], lib[4096], out[8192];
	char *argv[] = { prog, lib, NULL };
	struct probe r;
	int readable;

	(void)state;
	suid_dir("dt", dir, sizeof(dir));
	copy_to(env_path("LIBGUARD_DT_AUDIT_PROBE"), dir, "dt-audit-probe", 0755, prog, sizeof(prog));
	copy_to(lib64k_path(), dir, "libtest64k.so", 0755, lib, sizeof(lib));

	/* control: loaded, unless nobody can't read the module in the build tree */
	readable = nobody_can_read(env_path("LIBGUARD_AUDIT"));
	assert_int_equal(run_probe(argv, true, &r, out, sizeof(out)), 0);
	if (!readable)
		printf("# control: nobody cannot read %s, so it does not load\n",
		       env_path("LIBGUARD_AUDIT"));
	assert_int_equal(r.audit, readable);
	if (r.audit && pg == 4096 && want_guarded())
		assert_int_equal(r.vmas, 5);

	assert_int_equal(chmod(prog, 04755), 0);
	assert_int_equal(run_probe(argv, true, &r, out, sizeof(out)), 0);
	assert_int_equal(r.audit, 0);
	if (pg == 4096)
		assert_int_equal(r.vmas, 8);

	unlink(prog);
	unlink(lib);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(linked_program),
		cmocka_unit_test(exec_child),
		cmocka_unit_test(setuid_program),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
