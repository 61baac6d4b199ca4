// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bench-audit-exec: what LD_AUDIT=libguard-audit.so adds to starting a
 * program. Runs ls, bash -c true, perl -e 1 and python3 -c pass (from
 * /usr/bin, in /, output to /dev/null) 200 times each (--quick: 40) in four
 * modes, interleaved run by run in an order rotated by the run number:
 * no-audit; null-audit (bench/null-audit.c: la_version() only, needing
 * nothing: the floor of any audit module, its namespace); null-audit-libc
 * (the same needing libc: the floor of any module that uses libc, which
 * then has a copy of its own); libguard-audit. Each
 * sample is spawn to exit, in microseconds of wall time (us_per_exec) and
 * of the child's CPU time, user + system (cpu_us_per_exec: less disturbed
 * by other load on the machine). Then the VMAs of cat
 * /proc/self/maps in each mode: what the audit namespace costs in VMAs.
 *
 * LIBGUARD_BENCH_AUDIT=PATH measures another build of the module (for a
 * before/after); the default is the one built beside this program.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { NO_AUDIT, NULL_AUDIT, NULL_AUDIT_LIBC, GUARD_AUDIT, NMODES };
static const char *const mode_name[NMODES] = { "no-audit", "null-audit", "null-audit-libc",
					       "libguard-audit" };

struct prog {
	const char *bench;
	char *const argv[4];
	bool missing;
};

static struct prog progs[] = {
	{ .bench = "audit-exec-ls", .argv = { "/usr/bin/ls", NULL } },
	{ .bench = "audit-exec-bash", .argv = { "/usr/bin/bash", "-c", "true", NULL } },
	{ .bench = "audit-exec-perl", .argv = { "/usr/bin/perl", "-e", "1", NULL } },
	{ .bench = "audit-exec-python3", .argv = { "/usr/bin/python3", "-c", "pass", NULL } },
};
#define NPROGS (sizeof(progs) / sizeof(progs[0]))

/* The environment of each mode: ours without LD_AUDIT, plus the module's. */
static char **envs[NMODES];

static char **make_env(const char *audit)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		exit(1);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_AUDIT=", 9) &&
		    strncmp(environ[i], "LIBGUARD_AUDIT_VERBOSE=", 23))
			env[k++] = environ[i];
	if (audit) {
		size_t len = strlen(audit) + 10;

		env[k] = malloc(len);
		if (!env[k])
			exit(1);
		snprintf(env[k++], len, "LD_AUDIT=%s", audit);
	}
	return env;
}

/*
 * Start argv in mode m with stdout to out_fd (-1: /dev/null) and wait: 0 or
 * errno; the wall time from spawn to exit in *ns, the child's CPU time
 * (user + system) in *cpu_ns.
 */
static int run(char *const argv[], int m, int out_fd, uint64_t *ns, uint64_t *cpu_ns)
{
	struct rusage ru;
	posix_spawn_file_actions_t fa;
	uint64_t t0;
	int status, ret;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	else
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	t0 = bench_now_ns();
	ret = posix_spawn(&pid, argv[0], &fa, NULL, argv, envs[m]);
	posix_spawn_file_actions_destroy(&fa);
	if (ret)
		return ret;
	if (wait4(pid, &status, 0, &ru) != pid)
		return errno;
	if (ns)
		*ns = bench_now_ns() - t0;
	if (cpu_ns)
		*cpu_ns = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
			  (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? ENOENT : ECHILD;
	return 0;
}

/* Lines of /proc/self/maps as cat sees it in mode m, or -1. */
static long vmas_of_cat(int m)
{
	char *const argv[] = { "/usr/bin/cat", "/proc/self/maps", NULL };
	FILE *f = tmpfile();
	long n = 0;
	int c;

	if (!f || run(argv, m, fileno(f), NULL, NULL)) {
		if (f)
			fclose(f);
		return -1;
	}
	rewind(f);
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	const char *guard = getenv("LIBGUARD_BENCH_AUDIT");
	struct bench_opts o;
	int runs;

	bench_parse(argc, argv, &o);
	runs = o.quick ? 40 : 200;
	if (!guard || !*guard)
		guard = BENCH_GUARD_AUDIT;
	/* Absolute: ld.so ignores a module it can't find, and we run in /. */
	guard = realpath(guard, NULL);
	if (!guard || access(BENCH_NULL_AUDIT, R_OK) || access(BENCH_NULL_AUDIT_LIBC, R_OK)) {
		fprintf(stderr, "bench-audit-exec: %s or %s: %s\n",
			getenv("LIBGUARD_BENCH_AUDIT") ?: BENCH_GUARD_AUDIT, BENCH_NULL_AUDIT,
			strerror(errno));
		return 1;
	}
	envs[NO_AUDIT] = make_env(NULL);
	envs[NULL_AUDIT] = make_env(BENCH_NULL_AUDIT);
	envs[NULL_AUDIT_LIBC] = make_env(BENCH_NULL_AUDIT_LIBC);
	envs[GUARD_AUDIT] = make_env(guard);
	if (chdir("/"))
		return 1;
	/* Warm up (page cache, ld.so.cache); a program that can't run is reported. */
	for (size_t p = 0; p < NPROGS; p++)
		for (int m = 0; m < NMODES; m++)
			for (int w = 0; w < 3 && !progs[p].missing; w++) {
				int err = run(progs[p].argv, m, -1, NULL, NULL);

				if (err) {
					progs[p].missing = true;
					for (int k = 0; k < NMODES; k++)
						bench_unsupported(progs[p].bench, mode_name[k], 0, err);
				}
			}
	for (int r = 1; r <= runs; r++)
		for (size_t p = 0; p < NPROGS; p++)
			for (int k = 0; k < NMODES && !progs[p].missing; k++) {
				int m = bench_order(r, k, NMODES), err;
				uint64_t ns, cpu;

				err = run(progs[p].argv, m, -1, &ns, &cpu);
				if (err) {
					fprintf(stderr, "bench-audit-exec: %s in mode %s: %s\n",
						progs[p].argv[0], mode_name[m], strerror(err));
					return 1;
				}
				bench_emit(progs[p].bench, mode_name[m], 0, "us_per_exec", r, ns / 1e3,
					   "us");
				bench_emit(progs[p].bench, mode_name[m], 0, "cpu_us_per_exec", r,
					   cpu / 1e3, "us");
			}
	for (int m = 0; m < NMODES; m++) {
		long v = vmas_of_cat(m);

		if (v >= 0)
			bench_emit("audit-vmas", mode_name[m], 0, "vmas_process", 0, v, "count");
	}
	return 0;
}
