// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_maps_open/next/close and tools/guard-maps: a native guard shows as
 * a region (a "[guard]" line) of its own, splitting its VMA; on a kernel
 * that can't report guards both refuse rather than list a wrong map; on
 * one without native guards the fallback guard is the PROT_NONE VMA;
 * another user's process is a clear permission error.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <guard.h>

#include "helpers/guardtest.h"

/* The regions meeting [s, e), flattened into a string like "n:3 g:1 n:1". */
static const char *regions_of(char *s, size_t pages)
{
	static char out[256];
	struct guard_maps *m;
	struct guard_region r;
	uintptr_t e = (uintptr_t)s + pages * pg;
	size_t len = 0;
	int ret;

	out[0] = '\0';
	ret = guard_maps_open(0, 0, &m);
	if (ret) {
		snprintf(out, sizeof(out), "error %d", ret);
		return out;
	}
	while ((ret = guard_maps_next(m, &r)) > 0) {
		uintptr_t a = r.start > (uintptr_t)s ? r.start : (uintptr_t)s;
		uintptr_t b = r.end < e ? r.end : e;

		if (a >= b)
			continue;
		len += snprintf(out + len, sizeof(out) - len, "%s%c:%zu", len ? " " : "",
				r.flags & GUARD_REGION_GUARD ? 'g' : r.prot ? 'n' : '-',
				(b - a) / pg);
	}
	guard_maps_close(m);
	if (ret < 0)
		snprintf(out, sizeof(out), "error %d", ret);
	return out;
}

static void splits_vmas(void **state)
{
	bool native = want_native(T_ANON);
	struct tmap m;

	(void)state;
	tmap_new(T_ANON, 5, &m);
	assert_int_equal(guard_install(m.addr + 2 * pg, pg, 0), 0);
	if (!query_reports()) {
		assert_string_equal(regions_of(m.addr, 5), "error -95");
		printf("# guard_maps_open: -EOPNOTSUPP on a kernel that can't report guards\n");
	} else {
		printf("# regions: %s\n", regions_of(m.addr, 5));
		assert_string_equal(regions_of(m.addr, 5), native ? "n:2 g:1 n:2" : "n:2 -:1 n:2");
	}
	tmap_free(&m);
}

/* Every VMA of /proc/self/maps appears, in order, with its fields. */
static void matches_proc_maps(void **state)
{
	struct guard_maps *m;
	struct guard_region r;
	int regions = 0, starts = 0, ret;

	(void)state;
	ret = guard_maps_open(0, 0, &m);
	if (!query_reports()) {
		assert_int_equal(ret, -EOPNOTSUPP);
		skip();
	}
	assert_int_equal(ret, 0);
	while ((ret = guard_maps_next(m, &r)) > 0) {
		regions++;
		starts += r.start == r.vma_start;
		assert_true(r.start < r.end && r.vma_start <= r.start && r.end <= r.vma_end);
		assert_non_null(r.name);
		if (strstr(r.name, "test_maps"))
			assert_true(r.inode != 0);
	}
	assert_int_equal(ret, 0);
	assert_int_equal(guard_maps_next(m, &r), 0);
	guard_maps_close(m);
	assert_true(starts > 5 && regions >= starts);
}

static void errors(void **state)
{
	struct guard_maps *m = NULL;
	struct guard_region r;
	int status;
	pid_t gone = fork();

	(void)state;
	if (gone == 0)
		_exit(0);
	assert_int_equal(waitpid(gone, &status, 0), gone);
	errno = 8;
	assert_int_equal(guard_maps_open(0, 1, &m), -EINVAL);
	assert_int_equal(guard_maps_open(0, 0, NULL), -EINVAL);
	assert_int_equal(guard_maps_open(-2, 0, &m), -EINVAL);
	assert_int_equal(guard_maps_next(NULL, &r), -EINVAL);
	guard_maps_close(NULL);
	if (query_reports())
		assert_int_equal(guard_maps_open(gone, 0, &m), -ESRCH);
	assert_int_equal(errno, 8);
}

/* As nobody, the maps of a root process: -EACCES (or -EPERM). */
static void permission_denied(void **state)
{
	int status;
	pid_t parent = getpid(), pid;

	(void)state;
	if (geteuid() != 0 || !query_reports()) {
		printf("# needs root (to become nobody) and a kernel that reports guards\n");
		skip();
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct guard_maps *m;
		int ret;

		if (setgid(65534) || setuid(65534))
			_exit(90);
		ret = guard_maps_open(parent, 0, &m);
		_exit(ret == -EACCES || ret == -EPERM ? 0 : 91);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Run guard-maps with args; its stdout (and stderr) in a static buffer. */
static const char *run_tool(const char *args, int *status)
{
	static char out[1 << 16];
	const char *tool = getenv("LIBGUARD_GUARD_MAPS");
	char cmd[512];
	size_t len = 0, n;
	FILE *p;

	assert_non_null(tool);
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", tool, args);
	p = popen(cmd, "r");
	assert_non_null(p);
	while ((n = fread(out + len, 1, sizeof(out) - 1 - len, p)) > 0)
		len += n;
	out[len] = '\0';
	*status = pclose(p);
	return out;
}

/* A process with a guard in its own mapping, and guard-maps run on it. */
static void tool_on_process(void **state)
{
	bool native = want_native(T_ANON);
	int up[2], down[2], status;
	char line[128], args[64];
	const char *out;
	void *guard;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *p = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		void *g = p + pg;
		char c;

		if (p == MAP_FAILED || guard_install(g, 2 * pg, 0) ||
		    write(up[1], &g, sizeof(g)) != sizeof(g))
			_exit(1);
		_exit(read(down[0], &c, 1) < 0);
	}
	assert_int_equal(read(up[0], &guard, sizeof(guard)), sizeof(guard));
	snprintf(args, sizeof(args), "%d", (int)pid);
	out = run_tool(args, &status);
	snprintf(line, sizeof(line), "%08" PRIxPTR "-%08" PRIxPTR " ---p", (uintptr_t)guard,
		 (uintptr_t)guard + 2 * pg);
	if (!query_reports()) {
		printf("# guard-maps: %s", out);
		assert_int_not_equal(status, 0);
		assert_non_null(strstr(out, "cannot report"));
	} else {
		const char *at = strstr(out, line);

		assert_int_equal(status, 0);
		assert_non_null(at);
		printf("# guard-maps %d: %.*s\n", (int)pid, (int)strcspn(at, "\n"), at);
		/* native: a [guard] line; fallback: the PROT_NONE VMA itself */
		assert_true((strstr(at, "[guard]") && strstr(at, "[guard]") < strchr(at, '\n')) ==
			    native);
		snprintf(args, sizeof(args), "--summary %d", (int)pid);
		out = run_tool(args, &status);
		assert_int_equal(status, 0);
		assert_non_null(strstr(out, native ? "guard ranges: 1\nguard pages: 2\n"
						   : "guard ranges: 0\n"));
		snprintf(args, sizeof(args), "--json %d", (int)pid);
		out = run_tool(args, &status);
		assert_int_equal(status, 0);
		assert_true(!!strstr(out, "\"guard\": true") == native);
		assert_non_null(strstr(out, "\"summary\": {\"vmas\": "));
		snprintf(args, sizeof(args), "--json --summary %d", (int)pid);
		out = run_tool(args, &status);
		assert_int_equal(status, 0);
		assert_int_equal(strncmp(out, "{\"vmas\": ", 9), 0);
	}
	assert_int_equal(write(down[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	out = run_tool("--bogus", &status);
	assert_int_not_equal(status, 0);
	assert_non_null(strstr(out, "usage"));
	out = run_tool(args, &status);	/* the process is gone */
	assert_int_not_equal(status, 0);
}

/* The tool, as nobody, on a root process: a clear message. */
/*
 * Copy the tool and the library it loads to a directory nobody can read:
 * the build directory may sit below one that nobody cannot enter (a
 * mktemp -d clone is mode 0700), and then the loader, not guard-maps,
 * would refuse.
 */
static void copy_file(const char *from, const char *dir, const char *name)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s/%s'", from, dir, name);
	assert_int_equal(system(cmd), 0);
}

static void tool_permission(void **state)
{
	const char *tool = getenv("LIBGUARD_GUARD_MAPS");
	static char cmd[1200], buf[4096], lib[1024];
	char dir[] = "/tmp/libguard-perm-XXXXXX";
	const char *slash;
	int status;
	size_t n;
	FILE *p;

	(void)state;
	if (geteuid() != 0 || !query_reports()) {
		printf("# needs root (to become nobody) and a kernel that reports guards\n");
		skip();
	}
	assert_non_null(tool);
	slash = strrchr(tool, '/');
	assert_non_null(slash);
	/* build/tools/guard-maps loads build/lib/libguard.so.0 */
	snprintf(lib, sizeof(lib), "%.*s/../lib/libguard.so.0", (int)(slash - tool), tool);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	copy_file(tool, dir, "guard-maps");
	copy_file(lib, dir, "libguard.so.0");

	/* setpriv drops to nobody for the tool alone */
	snprintf(cmd, sizeof(cmd),
		 "setpriv --reuid=65534 --regid=65534 --clear-groups env LD_LIBRARY_PATH=%s "
		 "%s/guard-maps %d 2>&1", dir, dir, (int)getpid());
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(buf, 1, sizeof(buf) - 1, p);
	buf[n] = '\0';
	status = pclose(p);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	printf("# as nobody: %s", buf);
	assert_int_not_equal(status, 0);
	assert_non_null(strstr(buf, "permission denied"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(splits_vmas),
		cmocka_unit_test(matches_proc_maps),
		cmocka_unit_test(errors),
		cmocka_unit_test(permission_denied),
		cmocka_unit_test(tool_on_process),
		cmocka_unit_test(tool_permission),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
