// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libguard-audit.so on real programs: a program that dlopen()s the 64 KiB
 * layout library has 8 VMAs for it without the module and 5 with it where
 * the kernel has native file guards (8 elsewhere), with every hole page
 * faulting either way; /bin/true and ls run unharmed; the verbose summary
 * (silent where no system library has holes, as on amd64); no /proc
 * access for objects without holes (but /proc/self/auxv once per exec on
 * kernels before 6.4, which have no PR_GET_AUXV).
 */
#include <errno.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"

/* Run a shell command line, collect stdout+stderr, return its exit status. */
static int run(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0, got;
	int status;

	assert_non_null(p);
	while ((got = fread(out + n, 1, cap - 1 - n, p)) > 0)
		n += got;
	out[n] = '\0';
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool want_elf_native(void)
{
	return !forced_fallback() && (want_caps(NULL) & GUARD_CAP_FILE);
}

/* Print a program's output as TAP comments. */
static void show(const char *what, const char *out)
{
	printf("# %s:\n", what);
	for (const char *l = out; *l; l += strcspn(l, "\n") + !!l[strcspn(l, "\n")])
		printf("#   %.*s\n", (int)strcspn(l, "\n"), l);
}

static void dlopen_program(void **state)
{
	char cmd[1024], plain[4096], audited[4096];
	const char *preload = getenv("LD_PRELOAD");
	int v0, f0, p0, v1, f1, p1;
	bool native = want_elf_native(), guarded;

	(void)state;
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", env_path("LIBGUARD_AUDIT_PROBE"),
		 lib64k_path());
	assert_int_equal(run(cmd, plain, sizeof(plain)), 0);
	snprintf(cmd, sizeof(cmd), "LIBGUARD_AUDIT_VERBOSE=1 LD_AUDIT=%s %s %s 2>&1",
		 env_path("LIBGUARD_AUDIT"), env_path("LIBGUARD_AUDIT_PROBE"),
		 lib64k_path());
	assert_int_equal(run(cmd, audited, sizeof(audited)), 0);
	show("without LD_AUDIT", plain);
	show("with LD_AUDIT", audited);
	assert_int_equal(sscanf(plain, "vmas %d faulting %d pages %d", &v0, &f0, &p0), 3);
	assert_non_null(strstr(audited, "vmas "));
	assert_int_equal(sscanf(strstr(audited, "vmas "), "vmas %d faulting %d pages %d", &v1, &f1,
				&p1), 3);
	if (pg != 4096) {
		printf("# page size %zu: not the layout this test expects\n", pg);
		skip();
	}
	assert_int_equal(v0, 8);
	/* the same pages fault: the holes, nothing more, nothing less */
	assert_int_equal(p1, p0);
	assert_int_equal(f1, f0);
	assert_true(f0 > 0);
	guarded = strstr(audited, "3 hole(s), 3 guarded; VMAs") != NULL;
	assert_true(guarded || strstr(audited, "3 hole(s), 0 guarded: "));
	assert_int_equal(v1, guarded ? 5 : 8);
	/*
	 * LD_PRELOAD (the test suite's simulation of other kernels) does not
	 * reach the audit module's own link-map namespace: it sees the real
	 * kernel, so only its consistency is checked then.
	 */
	if (preload && *preload && !forced_fallback()) {
		printf("# LD_PRELOAD set: the module sees the real kernel (%s)\n",
		       guarded ? "guarded" : "not guarded");
		return;
	}
	assert_int_equal(guarded, native);
	printf("# libtest64k.so VMAs: %d without the audit module, %d with it\n", v0, v1);
}

/*
 * System programs run as before. Debian's amd64 objects have no holes and
 * the module says nothing; its arm64 ones (laid out for 64 KiB pages) have
 * holes on a 4 KiB-page kernel, and it says one line for each, libc's
 * among them. Which case this is: the holes of our own libc, the one
 * /bin/true loads too.
 */
static void plain_programs(void **state)
{
	char cmd[1024], out[1 << 16];
	int libc_holes = guard_elf_segments((const void *)fopen, GUARD_ELF_COUNT);

	(void)state;
	printf("# holes in this libc: %d\n", libc_holes);
	assert_true(libc_holes >= 0);
	snprintf(cmd, sizeof(cmd), "LIBGUARD_AUDIT_VERBOSE=1 LD_AUDIT=%s /bin/true 2>&1",
		 env_path("LIBGUARD_AUDIT"));
	assert_int_equal(run(cmd, out, sizeof(out)), 0);
	show("/bin/true, verbose", out);
	if (!libc_holes) {
		assert_string_equal(out, "");
	} else {
		assert_non_null(strstr(out, "libc.so.6: "));
		for (const char *l = out; *l; l += strcspn(l, "\n") + !!l[strcspn(l, "\n")]) {
			assert_int_equal(strncmp(l, "libguard-audit: ", 16), 0);
			assert_true(memmem(l, strcspn(l, "\n"), " hole(s), ", 10) != NULL);
		}
	}
	snprintf(cmd, sizeof(cmd), "LD_AUDIT=%s ls / 2>&1", env_path("LIBGUARD_AUDIT"));
	assert_int_equal(run(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "proc"));
}

/*
 * proc-opens' count of a command's opens under /proc, or skip (ptrace not
 * available here: its reason is printed); with auxv, how many of those
 * opened /proc/self/auxv.
 */
static int proc_opens_auxv(const char *audit, const char *command, int *auxv)
{
	const char *asan = getenv("ASAN_OPTIONS");
	char cmd[4096], out[8192];
	int status, n;

	/*
	 * Under ASan the probe is an ASan program, traced: LeakSanitizer
	 * cannot run under ptrace, so it is turned off there (ASan itself
	 * still checks the run, and its own /proc opens count alike with and
	 * without the module).
	 */
	snprintf(cmd, sizeof(cmd), "%s env ASAN_OPTIONS='%s%sdetect_leaks=0' %s%s %s 2>&1",
		 env_path("LIBGUARD_PROC_OPENS"), asan ? asan : "", asan ? ":" : "",
		 audit ? "LD_AUDIT=" : "", audit ? audit : "", command);
	status = run(cmd, out, sizeof(out));
	show(cmd, out);
	if (status == 77)
		skip();
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "proc-opens "));
	assert_int_equal(sscanf(strstr(out, "proc-opens "), "proc-opens %d", &n), 1);
	if (auxv) {
		*auxv = 0;
		for (const char *l = strstr(out, "proc-opens "); (l = strstr(l, "\n# /proc/self/auxv\n")); l++)
			++*auxv;
	}
	return n;
}

static int proc_opens(const char *audit, const char *command)
{
	return proc_opens_auxv(audit, command, NULL);
}

/*
 * Does this kernel have prctl(PR_GET_AUXV) (Linux 6.4)? The module reads
 * its auxiliary vector so, once per exec (lib/audit_rt.c read_start());
 * without it, from /proc/self/auxv: one /proc open per exec, whatever the
 * objects.
 */
static bool have_pr_get_auxv(void)
{
	unsigned long av[256];

	return prctl(0x41555856 /* PR_GET_AUXV */, av, sizeof(av), 0, 0) > 0;
}

/*
 * The /proc opens of command under the module, against those without it:
 * the same, but for the one read of /proc/self/auxv per exec where the
 * kernel has no PR_GET_AUXV (6.1, Debian 12's default kernel).
 */
static void assert_module_opens_nothing(const char *command, bool auxv_in_proc)
{
	int plain_auxv, audit_auxv;
	int plain = proc_opens_auxv(NULL, command, &plain_auxv);
	int audited = proc_opens_auxv(env_path("LIBGUARD_AUDIT"), command, &audit_auxv);

	printf("# %s: %d /proc opens without the module, %d with it (/proc/self/auxv: %d, %d)\n",
	       command, plain, audited, plain_auxv, audit_auxv);
	assert_int_equal(audited - plain, auxv_in_proc);
	assert_int_equal(audit_auxv - plain_auxv, auxv_in_proc);
}

/*
 * An object whose program headers show no hole costs the module no /proc
 * access: the programs open exactly what they open without it (here
 * every object is hole-free on 4 KiB pages: Debian amd64's are), but for
 * the module's one read of its auxiliary vector per exec, from
 * /proc/self/auxv on a kernel without prctl(PR_GET_AUXV). The
 * counter is shown to see the module's own opens on the 64 KiB layout
 * library, which has holes.
 */
/* One of this process's objects with a page-aligned gap between PT_LOADs. */
static int find_hole(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t prev_end = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = ph->p_vaddr & ~(pg - 1);

		if (ph->p_type != PT_LOAD)
			continue;
		if (prev_end && start > prev_end) {
			*(const char **)data = info->dlpi_name;
			return 1;
		}
		prev_end = (ph->p_vaddr + ph->p_memsz + pg - 1) & ~(pg - 1);
	}
	return 0;
}

static void no_proc_without_holes(void **state)
{
	const char *audit = env_path("LIBGUARD_AUDIT"), *holed = NULL;
	char probe[1024];
	bool pr_get_auxv = have_pr_get_auxv();

	(void)state;
	/*
	 * /bin/true and ls load the same system objects as this program (libc,
	 * ld.so): where those have holes (arm64's 64 KiB layout), the module
	 * rightly goes to /proc for them and there is no hole-free program here.
	 */
	if (pg != 4096 || dl_iterate_phdr(find_hole, &holed)) {
		printf("# %s has holes between its segments here: no hole-free system program\n",
		       holed && *holed ? holed : "this program");
		skip();
	}
	snprintf(probe, sizeof(probe), "%s %s", env_path("LIBGUARD_AUDIT_PROBE"), lib64k_path());
	assert_true(proc_opens(audit, probe) > proc_opens(NULL, probe));
	if (!pr_get_auxv)
		printf("# no prctl(PR_GET_AUXV) (Linux before 6.4): the module reads "
		       "/proc/self/auxv once per exec, the one /proc open it makes without holes\n");
	assert_module_opens_nothing("/bin/true", !pr_get_auxv);
	assert_module_opens_nothing("ls /", !pr_get_auxv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dlopen_program),
		cmocka_unit_test(plain_programs),
		cmocka_unit_test(no_proc_without_holes),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
