// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_maps_open/next/close and tools/guard-maps: a native guard shows as
 * a region (a "[guard]" line) of its own, splitting its VMA; on a kernel
 * that can't report guards both refuse rather than list a wrong map; on
 * one without native guards the fallback guard is the PROT_NONE VMA;
 * another user's process is a clear permission error; a process without
 * an address space (a kernel thread, a zombie) is an empty listing, not
 * "no process"; and --json is valid JSON whatever bytes a name holds.
 */
#include <errno.h>
#include <fcntl.h>
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

/* Is pid a kernel thread (PF_KTHREAD in /proc/PID/stat)? */
static bool is_kthread(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long flags;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
	       (flags & 0x00200000);
}

/*
 * A kernel thread (pid 2, kthreadd) and a zombie have no mm: /proc/PID/maps
 * is empty and /proc/PID/pagemap gives ESRCH. Both list as no regions.
 */
static void no_address_space(void **state)
{
	struct guard_maps *m;
	struct guard_region r;
	siginfo_t si;
	pid_t zombie;

	(void)state;
	if (!query_reports()) {
		printf("# needs a kernel that reports guards (else guard_maps_open refuses all)\n");
		skip();
	}
	if (is_kthread(2)) {
		assert_int_equal(guard_maps_open(2, 0, &m), 0);
		assert_int_equal(guard_maps_next(m, &r), 0);
		guard_maps_close(m);
	} else {
		printf("# pid 2 is not a kernel thread here (a PID namespace?): zombie only\n");
	}
	zombie = fork();
	assert_true(zombie >= 0);
	if (zombie == 0)
		_exit(0);
	/* a zombie until reaped: wait without reaping */
	assert_int_equal(waitid(P_PID, (id_t)zombie, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(guard_maps_open(zombie, 0, &m), 0);
	assert_int_equal(guard_maps_next(m, &r), 0);
	guard_maps_close(m);
	assert_int_equal(waitpid(zombie, NULL, 0), zombie);
	assert_int_equal(guard_maps_open(zombie, 0, &m), -ESRCH);
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

/* Run guard-maps with args and a redirection of its stderr; its stdout in a static buffer. */
static const char *run_tool_redir(const char *args, const char *redir, int *status)
{
	static char out[1 << 16];
	const char *tool = getenv("LIBGUARD_GUARD_MAPS");
	char cmd[512];
	size_t len = 0, n;
	FILE *p;

	assert_non_null(tool);
	snprintf(cmd, sizeof(cmd), "%s %s %s", tool, args, redir);
	p = popen(cmd, "r");
	assert_non_null(p);
	while ((n = fread(out + len, 1, sizeof(out) - 1 - len, p)) > 0)
		len += n;
	out[len] = '\0';
	*status = pclose(p);
	return out;
}

/* Run guard-maps with args; its stdout and stderr in a static buffer. */
static const char *run_tool(const char *args, int *status)
{
	return run_tool_redir(args, "2>&1", status);
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

/* --version names the library it runs with; --help is the usage, on stdout. */
static void tool_options(void **state)
{
	char want[64];
	const char *out;
	int status;

	(void)state;
	snprintf(want, sizeof(want), "guard-maps %s\n", guard_version());
	out = run_tool("--version", &status);
	assert_int_equal(status, 0);
	assert_string_equal(out, want);
	out = run_tool_redir("--help", "2>/dev/null", &status);
	assert_int_equal(status, 0);
	assert_int_equal(strncmp(out, "usage: guard-maps ", 18), 0);
	assert_non_null(strstr(out, "--version"));
}

/*
 * Checks guard-maps --json output with Python's json module (strict UTF-8
 * first): prints "ok", then for the first region whose name holds argv[1]
 * its name_hex (or "-") and its name, UTF-8. What a JSON reader would do.
 */
static const char json_check_py[] =
	"import json, sys\n"
	"d = json.loads(open(sys.argv[1], 'rb').read().decode('utf-8'))\n"
	"print('ok', d['summary']['address_space'], d['summary'].get('no_address_space'))\n"
	"r = [x for x in d['regions'] if sys.argv[2] in x['name']]\n"
	"if r:\n"
	"    print(r[0].get('name_hex', '-'))\n"
	"    sys.stdout.flush()\n"
	"    sys.stdout.buffer.write(r[0]['name'].encode('utf-8'))\n";

/* python3 with its json module, or a reason to skip. */
static const char *no_python(void)
{
	if (system("python3 -c 'import json' >/dev/null 2>&1"))
		return "no python3 with its json module here";
	return NULL;
}

/* guard-maps ARGS > dir/out.json; then the checker on it: its output, or abort. */
static const char *json_of(const char *dir, const char *args, const char *needle)
{
	static char cmd[2048], out[8192];
	const char *tool = getenv("LIBGUARD_GUARD_MAPS");
	size_t n;
	FILE *f;

	assert_non_null(tool);
	snprintf(cmd, sizeof(cmd), "%s/check.py", dir);
	f = fopen(cmd, "we");
	assert_non_null(f);
	fputs(json_check_py, f);
	assert_int_equal(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "%s %s > %s/out.json", tool, args, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "python3 %s/check.py %s/out.json '%s' 2>&1", dir, dir, needle);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	if (pclose(f) != 0) {
		printf("# python3 refused the JSON: %s\n", out);
		fail();
	}
	return out;
}

static void rm_rf(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* guard-maps on kthreadd: no address space, said as such, exit 0. */
static void tool_kernel_thread(void **state)
{
	char dir[] = "/tmp/libguard-json-XXXXXX";
	const char *out, *why;
	int status;

	(void)state;
	if (!query_reports()) {
		printf("# needs a kernel that reports guards (else guard-maps refuses all)\n");
		skip();
	}
	if (!is_kthread(2)) {
		printf("# pid 2 is not a kernel thread here (a PID namespace?)\n");
		skip();
	}
	out = run_tool("2", &status);
	printf("# guard-maps 2: %s", out);
	assert_int_equal(status, 0);
	assert_string_equal(out, "process 2 has no address space (kernel thread)\n");
	out = run_tool("--summary 2", &status);
	assert_int_equal(status, 0);
	assert_string_equal(out, "VMAs: 0\nguard ranges: 0\nguard pages: 0\n"
				 "address space: none (kernel thread)\n");
	out = run_tool("--json --summary 2", &status);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "\"address_space\": false, \"no_address_space\": \"kernel thread\"}"));
	why = no_python();
	if (why) {
		printf("# %s: the JSON is not parsed\n", why);
		return;
	}
	assert_non_null(mkdtemp(dir));
	out = json_of(dir, "--json 2", "\x01never");
	rm_rf(dir);
	assert_string_equal(out, "ok False kernel thread\n");
}

/*
 * A file whose name is not valid UTF-8 and holds a newline, a quote, a
 * backslash and a control character, mapped here: guard-maps --json of
 * this process is JSON Python accepts (strict UTF-8), and the name comes
 * back as the kernel shows it (a newline as \012) with U+FFFD for each
 * invalid byte, and exactly as bytes in name_hex.
 */
static void tool_json_names(void **state)
{
	/* \xff and \xc3 (a lead byte before '(') are not UTF-8; \xc3\xa9 is */
	static const char base[] = "lgjson-\xff\xc3(-nl\n-q\"-bs\\-ctl\x01-\xc3\xa9";
	static const char shown[] = "lgjson-\xff\xc3(-nl\\012-q\"-bs\\-ctl\x01-\xc3\xa9";
	static const char decoded[] = "lgjson-\xef\xbf\xbd\xef\xbf\xbd(-nl\\012-q\"-bs\\-ctl\x01-\xc3\xa9";
	char dir[] = "/tmp/libguard-json-XXXXXX", path[256], want[1024], hex[2048], args[64];
	const char *out, *why = no_python(), *nl;
	size_t h = 0;
	char *map;
	int fd;

	(void)state;
	if (!query_reports()) {
		printf("# needs a kernel that reports guards (else guard-maps refuses all)\n");
		skip();
	}
	if (why) {
		printf("# %s\n", why);
		skip();
	}
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, base);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)pg), 0);
	map = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	close(fd);
	snprintf(args, sizeof(args), "--json %d", (int)getpid());
	out = json_of(dir, args, "lgjson-");
	printf("# %.*s\n", (int)strcspn(out, "\n"), out);
	assert_int_equal(strncmp(out, "ok True None\n", 13), 0);
	out += 13;
	/* name_hex: the bytes of the name as the kernel shows it */
	snprintf(want, sizeof(want), "%s/%s", dir, shown);
	for (size_t i = 0; want[i]; i++)
		h += (size_t)snprintf(hex + h, sizeof(hex) - h, "%02x", (unsigned char)want[i]);
	nl = strchr(out, '\n');
	assert_non_null(nl);
	assert_int_equal((size_t)(nl - out), h);
	assert_memory_equal(out, hex, h);
	/* name: the same, each invalid byte U+FFFD */
	snprintf(want, sizeof(want), "%s/%s", dir, decoded);
	assert_string_equal(nl + 1, want);
	munmap(map, pg);
	rm_rf(dir);
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
	/* build/tools/guard-maps loads build/lib/libguard.so.0; an installed
	 * one (autopkgtest: /usr/bin) the system's, which nobody can read. */
	snprintf(lib, sizeof(lib), "%.*s/../lib/libguard.so.0", (int)(slash - tool), tool);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	copy_file(tool, dir, "guard-maps");
	if (access(lib, R_OK) == 0)
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
		cmocka_unit_test(no_address_space),
		cmocka_unit_test(permission_denied),
		cmocka_unit_test(tool_on_process),
		cmocka_unit_test(tool_options),
		cmocka_unit_test(tool_permission),
		cmocka_unit_test(tool_kernel_thread),
		cmocka_unit_test(tool_json_names),
	};

	guardtest_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
