// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bench-elf-holes: what LD_AUDIT=libguard-audit.so does to one real
 * program (issue 20, the packagers' measurement; bench/elf-holes runs it
 * for each program, bench/elf-report.py makes the table).
 *
 *   bench-elf-holes --name NAME --probe PROBE.so --null NULL.so --audit AUDIT.so
 *                   [--reps N] [--preload LIB.so] -- PROGRAM [ARG...]
 *
 * Three modes: no-audit, null-audit (an audit module that does nothing:
 * the cost of any LD_AUDIT) and libguard-audit.
 *
 * Counts: PROGRAM runs once per mode with PROBE.so preloaded, which
 * reports at its end the process's VMAs, its `---p` file holes and, page
 * by page, whether each page between the segments of its objects still
 * faults (bench/elf-probe.c). libguard-audit runs with
 * LIBGUARD_AUDIT_VERBOSE=1; its lines are passed on as comments.
 *
 * Time: N repetitions (default 11); in each, every mode runs once, in an
 * order rotated by the repetition number, from posix_spawn() to the end
 * of waitpid(), without the probe, output to /dev/null.
 *
 * --preload LIB.so is preloaded in every mode: on the host, where no
 * Debian library has holes, tests/libtest64k.so gives the probe some.
 *
 * Output, one line per value: NAME,MODE,METRIC,REP,VALUE,UNIT (REP 0 for
 * the counts, 1..N for exec_us); comments start with '#'. Exits non-zero
 * if a run fails or the probe reports nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { NO_AUDIT, NULL_AUDIT, GUARD_AUDIT, NMODES };
static const char *const mode_name[NMODES] = { "no-audit", "null-audit", "libguard-audit" };

static const char *name, *probe, *preload, *audit_path[NMODES];
static char **prog;

static void usage(void)
{
	fprintf(stderr, "usage: bench-elf-holes --name NAME --probe PROBE.so --null NULL.so "
			"--audit AUDIT.so [--reps N] [--preload LIB.so] -- PROGRAM [ARG...]\n");
	exit(2);
}

/* The inherited environment less what the modes set, plus extra (NULL-ended). */
static char **make_env(const char *const *extra)
{
	static const char *const drop[] = { "LD_PRELOAD=", "LD_AUDIT=", "LIBGUARD_AUDIT_VERBOSE=",
					    "LIBGUARD_ELF_PROBE_OUT=" };
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	for (size_t i = 0; extra[i]; i++)
		n++;
	env = calloc(n + 1, sizeof(*env));
	if (!env)
		exit(1);
	for (size_t i = 0; environ[i]; i++) {
		bool keep = true;

		for (size_t d = 0; d < sizeof(drop) / sizeof(drop[0]); d++)
			keep &= strncmp(environ[i], drop[d], strlen(drop[d])) != 0;
		if (keep)
			env[k++] = environ[i];
	}
	for (size_t i = 0; extra[i]; i++)
		env[k++] = (char *)extra[i];
	return env;
}

static char *strf(const char *fmt, const char *arg)
{
	char *s;

	if (asprintf(&s, fmt, arg) < 0)
		exit(1);
	return s;
}

/* LD_PRELOAD=: --preload's library, then also (if not NULL) the probe. */
static const char *preload_env(const char *also)
{
	char *s;

	if (asprintf(&s, "LD_PRELOAD=%s%s%s", preload ? preload : "", preload && also ? ":" : "",
		     also ? also : "") < 0)
		exit(1);
	return s;
}

/* Run PROGRAM with env, stdout to /dev/null, stderr to err_path (or /dev/null): its pid, waited for. */
static pid_t run(char **env, const char *err_path, int *status)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int ret;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, err_path ? err_path : "/dev/null",
					 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ret = posix_spawnp(&pid, prog[0], &fa, NULL, prog, env);
	posix_spawn_file_actions_destroy(&fa);
	if (ret) {
		fprintf(stderr, "bench-elf-holes: %s: %s\n", prog[0], strerror(ret));
		exit(1);
	}
	if (waitpid(pid, status, 0) != pid) {
		perror("bench-elf-holes: waitpid");
		exit(1);
	}
	return pid;
}

static void check_status(int status, const char *mode)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	fprintf(stderr, "bench-elf-holes: %s (%s) failed: %s %d\n", name, mode,
		WIFEXITED(status) ? "exit status" : "signal",
		WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	exit(1);
}

/* One run with the probe; its line for that pid, as metrics. */
static void count(int mode, const char *dir)
{
	char *out = strf("%s/probe.out", dir), *err = strf("%s/stderr", dir), line[1024];
	const char *extra[5] = { preload_env(probe), strf("LIBGUARD_ELF_PROBE_OUT=%s", out) };
	bool found = false;
	int status, i = 2;
	FILE *f;
	pid_t pid;

	if (audit_path[mode])
		extra[i++] = strf("LD_AUDIT=%s", audit_path[mode]);
	if (mode == GUARD_AUDIT)
		extra[i++] = "LIBGUARD_AUDIT_VERBOSE=1";
	unlink(out);
	pid = run(make_env(extra), err, &status);
	check_status(status, mode_name[mode]);
	f = fopen(out, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *tok, *save = NULL;

		if (strncmp(line, "pid=", 4) || strtol(line + 4, NULL, 10) != pid)
			continue;	/* a child the program started */
		found = true;
		for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
			char *eq = strchr(tok, '=');

			if (!eq || !strncmp(tok, "pid=", 4))
				continue;
			*eq = '\0';
			printf("%s,%s,%s,0,%s,count\n", name, mode_name[mode], tok, eq + 1);
		}
	}
	if (f)
		fclose(f);
	if (!found) {
		fprintf(stderr, "bench-elf-holes: %s (%s): the probe reported nothing (%s)\n", name,
			mode_name[mode], out);
		exit(1);
	}
	/* the module's verbose lines, and anything else the program said */
	f = fopen(err, "re");
	while (f && fgets(line, sizeof(line), f))
		printf("# %s %s stderr: %s", name, mode_name[mode], line);
	if (f)
		fclose(f);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/bench-elf-holes-XXXXXX";
	char **env[NMODES];
	int reps = 11, i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--") && i + 1 < argc) {
			prog = argv + i + 1;
			break;
		}
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--name"))
			name = argv[++i];
		else if (!strcmp(argv[i], "--probe"))
			probe = argv[++i];
		else if (!strcmp(argv[i], "--null"))
			audit_path[NULL_AUDIT] = argv[++i];
		else if (!strcmp(argv[i], "--audit"))
			audit_path[GUARD_AUDIT] = argv[++i];
		else if (!strcmp(argv[i], "--preload"))
			preload = argv[++i];
		else if (!strcmp(argv[i], "--reps"))
			reps = atoi(argv[++i]);
		else
			usage();
	}
	if (!prog || !name || !probe || !audit_path[NULL_AUDIT] || !audit_path[GUARD_AUDIT] || reps < 1)
		usage();
	for (int m = 0; m < NMODES; m++)
		if (audit_path[m] && access(audit_path[m], R_OK)) {
			fprintf(stderr, "bench-elf-holes: %s: %s\n", audit_path[m], strerror(errno));
			return 1;
		}
	if (!mkdtemp(dir)) {
		perror("bench-elf-holes: mkdtemp");
		return 1;
	}
	printf("# %s:", name);
	for (i = 0; prog[i]; i++)
		printf(" %s", prog[i]);
	printf("\n");
	for (int m = 0; m < NMODES; m++)
		count(m, dir);

	for (int m = 0; m < NMODES; m++) {
		const char *extra[3] = { preload ? preload_env(NULL) : NULL };

		if (audit_path[m])
			extra[preload ? 1 : 0] = strf("LD_AUDIT=%s", audit_path[m]);
		int status;

		env[m] = make_env(extra);
		run(env[m], NULL, &status);	/* warm the page cache */
		check_status(status, mode_name[m]);
	}
	for (int r = 1; r <= reps; r++)
		for (int k = 0; k < NMODES; k++) {
			int m = (k + r) % NMODES, status;
			double t0 = now_us();

			run(env[m], NULL, &status);
			double t = now_us() - t0;

			check_status(status, mode_name[m]);
			printf("%s,%s,exec_us,%d,%.1f,us\n", name, mode_name[m], r, t);
		}
	fflush(stdout);
	{
		char p[sizeof(dir) + 16];

		snprintf(p, sizeof(p), "%s/probe.out", dir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/stderr", dir);
		unlink(p);
		rmdir(dir);
	}
	return 0;
}
