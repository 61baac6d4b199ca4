// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The library under seccomp filters (libseccomp), each installed in a
 * forked child so that this process stays unfiltered; the child probes,
 * installs, queries, removes and batches, and reports each answer and
 * whether a guard really was there (a touch from a grandchild).
 *
 * Filters: one per system call and ioctl the library makes, refusing it
 * with EPERM, with ENOSYS, or killing with SIGSYS; all of them refused at
 * once; every call libguard(7) does not list killed, alone and with each
 * listed call refused in turn; systemd's
 * @system-service set (systemd-analyze, at test time) killing on the rest
 * or refusing with EPERM; podman's default profile (containers-common's
 * seccomp.json, at test time). tests/helpers/seccomp-profile reads both.
 *
 * What must hold (libguard(7)): an install returns 0 with the guard
 * there, or the filter's error with nothing guarded; where mprotect()
 * and the maps file are allowed, or native guard advice is, it succeeds;
 * a kill filter on a call outside the ones libguard(7) lists never kills.
 * Run natively and, as test seccomp_fallback, with LIBGUARD_FORCE_FALLBACK.
 */
#include <guard.h>

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers/expect.h"
#include "helpers/guardtest.h"

#define PROCMAP_QUERY_NR _IOWR('f', 17, char[104])
#define PAGEMAP_SCAN_NR _IOWR('f', 16, char[96])

/* What the child saw. */
struct outcome {
	unsigned int caps;
	int one, one_touch;		/* guard_install() of one page, then a touch */
	int range, range_touch;		/* four pages */
	int query, query_vec;		/* guard_query() of the page, its byte */
	int rm_one, rm_one_touch;	/* guard_remove() of both, a touch after */
	int rm_range, rm_range_touch;
	int batch, batch_touch, rm_batch, rm_batch_touch;
};

/* One rule: a call, an optional argument to match, in a filter of one. */
struct call {
	const char *name;	/* for the matrix */
	const char *sys;
	int arg;		/* -1: any; else the argument index matched */
	unsigned long long v1, v2;	/* values (a second rule if v2) */
	bool basic;		/* libguard(7) lists it: a kill there may kill */
	const char *no_errno;	/* why it is not refused with an errno (NULL: it is) */
};

static const struct call calls[] = {
	{ "madvise(GUARD)", "madvise", 2, 102, 103, true, NULL },
	{ "madvise", "madvise", -1, 0, 0, true, NULL },
	{ "mprotect", "mprotect", -1, 0, 0, true, NULL },
	{ "msync", "msync", -1, 0, 0, true, NULL },
	{ "mincore", "mincore", -1, 0, 0, false, NULL },
	{ "openat", "openat", -1, 0, 0, true, NULL },
	{ "read", "read", -1, 0, 0, true, NULL },
	{ "pread64", "pread64", -1, 0, 0, true, NULL },
	{ "ioctl(PROCMAP_QUERY)", "ioctl", 1, PROCMAP_QUERY_NR, 0, true, NULL },
	{ "ioctl(PAGEMAP_SCAN)", "ioctl", 1, PAGEMAP_SCAN_NR, 0, true, NULL },
	{ "ioctl", "ioctl", -1, 0, 0, true, NULL },
	{ "mmap", "mmap", -1, 0, 0, true, NULL },
	{ "munmap", "munmap", -1, 0, 0, true, NULL },
	{ "close", "close", -1, 0, 0, true, NULL },
	{ "newfstatat", "newfstatat", -1, 0, 0, true, NULL },
	{ "futex", "futex", -1, 0, 0, true,
	  "glibc aborts when futex() fails so (pthread_once(), in the probe), before libguard sees it" },
	{ "process_madvise", "process_madvise", -1, 0, 0, false, NULL },
	{ "pidfd_open", "pidfd_open", -1, 0, 0, false, NULL },
	{ "memfd_create", "memfd_create", -1, 0, 0, false, NULL },
	{ "fstatfs", "fstatfs", -1, 0, 0, false, NULL },
	{ "statfs", "statfs", -1, 0, 0, false, NULL },
	{ "ftruncate", "ftruncate", -1, 0, 0, false, NULL },
	{ "getpid", "getpid", -1, 0, 0, false, NULL },
};

/* Touch p from a grandchild: the signal it got (SIGSEGV), or 0. */
static int touch(volatile char *p)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		(void)*p;
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status) ? -2 : 0;
}

/* The calls, in the child under its filter, on memory mapped before it. */
static void scenario(char *m, struct outcome *o)
{
	struct iovec b[3] = { { m + 6 * pg, pg }, { m + 8 * pg, pg }, { m + 10 * pg, pg } };
	unsigned char vec[1] = { 0 };

	o->caps = guard_probe();
	o->one = guard_install(m, pg, 0);
	o->one_touch = touch(m);
	o->range = guard_install(m + 2 * pg, 4 * pg, 0);
	o->range_touch = touch(m + 5 * pg);
	o->query = guard_query(m, pg, vec);
	o->query_vec = vec[0];
	o->rm_one = guard_remove(m, pg, 0);
	o->rm_one_touch = touch(m);
	o->rm_range = guard_remove(m + 2 * pg, 4 * pg, 0);
	o->rm_range_touch = touch(m + 2 * pg);
	o->batch = guard_install_batch(b, 3, 0, NULL);
	o->batch_touch = touch(m + 10 * pg);
	o->rm_batch = guard_remove_batch(b, 3, 0, NULL);
	o->rm_batch_touch = touch(m + 10 * pg);
}

typedef int build_fn(scmp_filter_ctx *ctx, const void *arg, uint32_t action);

/*
 * Run the scenario under the filter build() makes: 0 and *o, or the
 * signal that killed the child (SIGSYS), or -1 if the filter could not
 * be made (the reason printed).
 */
static int run(build_fn *build, const void *arg, uint32_t action, struct outcome *o)
{
	size_t len = 12 * pg;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fds[2], status;
	pid_t pid;

	assert_ptr_not_equal(m, MAP_FAILED);
	memset(m, 0x5a, len);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		scmp_filter_ctx ctx = NULL;
		struct outcome r;

		/* A crash here is this child's, not cmocka's to catch and run on from. */
		for (int s = 1; s < NSIG; s++)
			if (s != SIGKILL && s != SIGSTOP)
				signal(s, SIG_DFL);
		close(fds[0]);
		if (build(&ctx, arg, action) || seccomp_load(ctx))
			_exit(3);
		memset(&r, 0, sizeof(r));
		scenario(m, &r);
		_exit(write(fds[1], &r, sizeof(r)) == sizeof(r) ? 0 : 4);
	}
	close(fds[1]);
	memset(o, 0, sizeof(*o));
	if (read(fds[0], o, sizeof(*o)) != sizeof(*o))
		memset(o, 0, sizeof(*o));
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	munmap(m, len);
	if (WIFSIGNALED(status))
		return WTERMSIG(status);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 3)
		return -1;
	assert_int_equal(WEXITSTATUS(status), 0);
	return 0;
}

/* Add c's rule(s) with action to ctx: 0, or -1 where the call is unknown here. */
static int add_call(scmp_filter_ctx ctx, const struct call *c, uint32_t action)
{
	int nr = seccomp_syscall_resolve_name(c->sys);

	if (nr == __NR_SCMP_ERROR)
		return -1;
	if (c->arg < 0)
		return seccomp_rule_add(ctx, action, nr, 0);
	if (seccomp_rule_add(ctx, action, nr, 1,
			     SCMP_CMP64(c->arg, SCMP_CMP_MASKED_EQ, 0xffffffffull, c->v1)))
		return -1;
	return c->v2 ? seccomp_rule_add(ctx, action, nr, 1,
					SCMP_CMP64(c->arg, SCMP_CMP_MASKED_EQ, 0xffffffffull, c->v2))
		     : 0;
}

static int build_call(scmp_filter_ctx *ctx, const void *arg, uint32_t action)
{
	*ctx = seccomp_init(SCMP_ACT_ALLOW);
	return *ctx ? add_call(*ctx, arg, action) : -1;
}

static const char *result(int r)
{
	static char buf[8][16];
	static int i;

	if (!r)
		return "0";
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "-%s", r == -EPERM ? "EPERM" : r == -ENOSYS ? "ENOSYS" :
				       r == -EOPNOTSUPP ? "EOPNOTSUPP" : r == -ENOMEM ? "ENOMEM" : "?");
	if (buf[i][1] == '?')
		snprintf(buf[i], sizeof(buf[i]), "%d", r);
	return buf[i];
}

/*
 * The rules for a call that returned ret, with a touch after it that got
 * sig, where err is the filter's error (0 for a kill filter that did not
 * kill): 0 with a guard, or err with none.
 */
/* Broken rules, each printed: a filter's whole row is seen before the test fails. */
static int broken;

static void check(bool ok, const char *filter, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return;
	broken++;
	printf("# FAIL %s: ", filter);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void check_install(const char *filter, const char *what, int ret, int sig, int err,
			  bool must)
{
	check((ret == 0 && sig == SIGSEGV) || (!must && ret == err && err && sig == 0), filter,
	      "%s: %s, touch %d (filter error %s, must succeed: %d)", what, result(ret), sig,
	      result(err), must);
}

static void check_outcome(const char *filter, const struct outcome *o, int err, bool must)
{
	check_install(filter, "install", o->one, o->one_touch, err, must);
	check_install(filter, "install 4 pages", o->range, o->range_touch, err, must);
	check_install(filter, "batch", o->batch, o->batch_touch, err, must);
	/* What was made is removed, and the memory is back. */
	check(o->one || (o->rm_one == 0 && o->rm_one_touch == 0), filter, "remove: %s, touch %d",
	      result(o->rm_one), o->rm_one_touch);
	check(o->range || (o->rm_range == 0 && o->rm_range_touch == 0), filter,
	      "remove 4 pages: %s, touch %d", result(o->rm_range), o->rm_range_touch);
	check(o->batch || (o->rm_batch == 0 && o->rm_batch_touch == 0), filter,
	      "remove batch: %s, touch %d", result(o->rm_batch), o->rm_batch_touch);
	/* guard_query() sees the guard, or says it can't. */
	check(o->one || (o->query ? o->query == -EOPNOTSUPP || o->query == err : o->query_vec != 0),
	      filter, "query: %s, byte %#x", result(o->query), o->query_vec);
}

static void print_row(const char *filter, const char *action, int killed, const struct outcome *o)
{
	if (killed > 0) {
		printf("# matrix %-22s %-6s %-8s killed by signal %d\n", filter, action,
		       forced_fallback() ? "fallback" : "native", killed);
		return;
	}
	printf("# matrix %-22s %-6s %-8s caps %#04x install %s(%s) range %s batch %s query %s "
	       "remove %s/%s/%s\n",
	       filter, action, forced_fallback() ? "fallback" : "native", o->caps, result(o->one),
	       o->one_touch == SIGSEGV ? "guard" : "none", result(o->range), result(o->batch),
	       result(o->query), result(o->rm_one), result(o->rm_range), result(o->rm_batch));
}

/*
 * Must an install succeed under a filter on c? Yes where the kernel has
 * native guards (expect.h, not the probe) and the advice is allowed (and
 * not forced off), or where the fallback's mprotect() and its reading of
 * /proc/self/maps are.
 */
static bool must_succeed(const struct call *c)
{
	const char *why;
	bool native = !forced_fallback() && (expect_caps(&why) & EXPECT_ANON) &&
		      strcmp(c->sys, "madvise");
	bool fallback = strcmp(c->sys, "mprotect") && strcmp(c->sys, "openat") &&
			strcmp(c->sys, "read");

	return native || fallback;
}

static void test_per_call(void **state)
{
	static const struct {
		const char *name;
		uint32_t action;
		int err;
	} actions[] = {
		{ "EPERM", SCMP_ACT_ERRNO(EPERM), EPERM },
		{ "ENOSYS", SCMP_ACT_ERRNO(ENOSYS), ENOSYS },
		{ "KILL", SCMP_ACT_KILL_PROCESS, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		for (size_t a = 0; a < sizeof(actions) / sizeof(actions[0]); a++) {
			const struct call *c = &calls[i];
			struct outcome o;
			int killed;

			if (c->no_errno && actions[a].action != SCMP_ACT_KILL_PROCESS) {
				printf("# %s %s: not tested: %s\n", c->name, actions[a].name, c->no_errno);
				continue;
			}
			killed = run(build_call, c, actions[a].action, &o);
			if (killed < 0) {
				printf("# %s: no such system call here, not tested\n", c->name);
				break;
			}
			print_row(c->name, actions[a].name, killed, &o);
			if (killed) {
				/* Only a call libguard(7) lists may kill, and only with SIGSYS. */
				check(c->basic && killed == SIGSYS, c->name,
				      "a kill filter killed (signal %d)", killed);
				continue;
			}
			check_outcome(c->name, &o, actions[a].action == SCMP_ACT_KILL_PROCESS ? 0 :
						   -actions[a].err, must_succeed(c) ||
						   actions[a].action == SCMP_ACT_KILL_PROCESS);
		}
	}
	assert_int_equal(broken, 0);
}

#define NCALLS (sizeof(calls) / sizeof(calls[0]))

/*
 * Every call in calls[] refused with action (the argument-matched rules
 * are within their call's), but those glibc cannot take refused.
 */
static int build_all(scmp_filter_ctx *ctx, const void *arg, uint32_t action)
{
	(void)arg;
	*ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!*ctx)
		return -1;
	for (size_t i = 0; i < NCALLS; i++)
		if (calls[i].arg < 0 && !calls[i].no_errno &&
		    seccomp_syscall_resolve_name(calls[i].sys) != __NR_SCMP_ERROR &&
		    add_call(*ctx, &calls[i], action))
			return -1;
	return 0;
}

/*
 * The bad input of libguard(7): a filter refusing everything the library
 * tries leaves no method that can work, so every install returns the
 * filter's error, exactly, with nothing guarded (never 0 without a guard),
 * and the probe reports no native guards.
 */
static void test_refuse_all(void **state)
{
	static const struct {
		const char *name;
		int err;
	} errs[] = { { "EPERM", EPERM }, { "ENOSYS", ENOSYS } };

	(void)state;
	broken = 0;
	for (size_t a = 0; a < sizeof(errs) / sizeof(errs[0]); a++) {
		struct outcome o;
		int killed = run(build_all, NULL, SCMP_ACT_ERRNO(errs[a].err), &o), e = -errs[a].err;

		assert_true(killed >= 0);
		print_row("everything", errs[a].name, killed, &o);
		check(!killed, "everything", "killed by signal %d", killed);
		if (killed)
			continue;
		check(!(o.caps & GUARD_CAP_NATIVE_MASK), "everything", "probe: caps %#x", o.caps);
		check(o.one == e && !o.one_touch, "everything", "install: %s, touch %d",
		      result(o.one), o.one_touch);
		check(o.range == e && !o.range_touch, "everything", "install 4 pages: %s, touch %d",
		      result(o.range), o.range_touch);
		check(o.batch == e && !o.batch_touch, "everything", "batch: %s, touch %d",
		      result(o.batch), o.batch_touch);
	}
	assert_int_equal(broken, 0);
}

/*
 * A filter that answers guard advice with 0 ("it is only a hint") and
 * places nothing, as qemu-user does: the probe's touch test sees that no
 * guard stops access, so it reports no native guards, and every install
 * takes the fallback, whose guard faults. Never 0 without a guard.
 */
static int build_zero(scmp_filter_ctx *ctx, const void *arg, uint32_t action)
{
	const struct call *which = arg;

	*ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!*ctx || add_call(*ctx, which, action))
		return -1;
	/* process_madvise too, where the kernel has it */
	return seccomp_syscall_resolve_name("process_madvise") == __NR_SCMP_ERROR ||
			       !add_call(*ctx, &calls[16], action)
		       ? 0
		       : -1;
}

static void test_answer_zero(void **state)
{
	(void)state;
	broken = 0;
	assert_string_equal(calls[16].sys, "process_madvise");
	for (size_t i = 0; i < 2; i++) {
		const struct call *c = &calls[i];	/* madvise(GUARD), then every madvise */
		struct outcome o;
		int killed = run(build_zero, c, SCMP_ACT_ERRNO(0), &o);

		assert_true(killed >= 0);
		print_row(c->name, "0", killed, &o);
		check(!killed, c->name, "killed by signal %d", killed);
		if (killed)
			continue;
		check(!(o.caps & GUARD_CAP_NATIVE_MASK), c->name, "probe: caps %#x", o.caps);
		check(!o.one && o.one_touch == SIGSEGV, c->name, "install: %s, touch %d",
		      result(o.one), o.one_touch);
		check(!o.range && o.range_touch == SIGSEGV, c->name, "install 4 pages: %s, touch %d",
		      result(o.range), o.range_touch);
		check(o.query_vec == GUARD_QUERY_FALLBACK, c->name, "query: %#x", o.query_vec);
		check(!o.rm_one && !o.rm_one_touch, c->name, "remove: %s, touch %d",
		      result(o.rm_one), o.rm_one_touch);
		check(!o.batch && o.batch_touch == SIGSEGV, c->name, "batch: %s, touch %d",
		      result(o.batch), o.batch_touch);
		check(!o.rm_batch && !o.rm_batch_touch, c->name, "remove batch: %s, touch %d",
		      result(o.rm_batch), o.rm_batch_touch);
	}
	assert_int_equal(broken, 0);
}

/* Kill every call libguard(7) does not list, and refuse arg (a listed call, or none) with action. */
static int build_basic(scmp_filter_ctx *ctx, const void *arg, uint32_t action)
{
	const struct call *refused = arg;

	*ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!*ctx || (refused && add_call(*ctx, refused, action)))
		return -1;
	for (size_t i = 0; i < NCALLS; i++) {
		const struct call *c = &calls[i];

		/* libguard(7): mincore() where msync() is refused. */
		if (c->basic || (refused && !strcmp(refused->sys, "msync") && !strcmp(c->sys, "mincore")))
			continue;
		if (seccomp_syscall_resolve_name(c->sys) != __NR_SCMP_ERROR &&
		    add_call(*ctx, c, SCMP_ACT_KILL_PROCESS))
			return -1;
	}
	return 0;
}

/*
 * guard_probe() and the calls are never killed where the calls libguard(7)
 * lists are allowed: every other call the library can make is killed, all
 * at once, with nothing refused and then with each listed call refused
 * in turn (EPERM), which the library must meet by the other method or
 * the filter's error, never by a call outside the list.
 */
static void test_basic_allowed(void **state)
{
	(void)state;
	broken = 0;
	for (size_t i = 0; i <= NCALLS; i++) {
		const struct call *c = i < NCALLS ? &calls[i] : NULL;
		char label[64];
		struct outcome o;
		int killed;

		if (c && (!c->basic || c->no_errno))
			continue;
		snprintf(label, sizeof(label), "%s, rest killed", c ? c->name : "none");
		killed = run(build_basic, c, SCMP_ACT_ERRNO(EPERM), &o);
		if (killed < 0) {
			printf("# %s: no such system call here, not tested\n", label);
			continue;
		}
		print_row(label, c ? "EPERM" : "-", killed, &o);
		check(!killed, label, "killed by signal %d", killed);
		if (!killed)
			check_outcome(label, &o, c ? -EPERM : 0, !c || must_succeed(c));
	}
	assert_int_equal(broken, 0);
}

/* A profile from tests/helpers/seccomp-profile: its lines, the default action overridden if asked. */
struct profile {
	char **line;
	size_t n;
	const char *dflt;	/* NULL: the profile's own */
};

static const char *profile_read(struct profile *p, const char *cmd)
{
	static char why[256];
	char buf[512];
	FILE *f = popen(cmd, "r");
	int status;

	memset(p, 0, sizeof(*p));
	if (!f)
		return "popen failed";
	while (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = 0;
		p->line = realloc(p->line, (p->n + 1) * sizeof(*p->line));
		assert_non_null(p->line);
		p->line[p->n++] = strdup(buf);
	}
	status = pclose(f);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		snprintf(why, sizeof(why), "%s", p->n ? p->line[0] : cmd);
		return why;
	}
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return NULL;
}

static uint32_t parse_action(const char *s, const char **rest)
{
	int n = 0, e;

	if (!strncmp(s, "allow ", 6)) {
		*rest = s + 6;
		return SCMP_ACT_ALLOW;
	}
	if (!strncmp(s, "kill", 4)) {
		*rest = s + 4;
		return SCMP_ACT_KILL_PROCESS;
	}
	if (sscanf(s, "errno %d %n", &e, &n) == 1 && n) {
		*rest = s + n;
		return SCMP_ACT_ERRNO(e);
	}
	fail_msg("bad profile line: %s", s);
	return 0;
}

static enum scmp_compare parse_op(const char *op)
{
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = { { "NE", SCMP_CMP_NE }, { "LT", SCMP_CMP_LT }, { "LE", SCMP_CMP_LE },
		    { "EQ", SCMP_CMP_EQ }, { "GE", SCMP_CMP_GE }, { "GT", SCMP_CMP_GT },
		    { "MASKED_EQ", SCMP_CMP_MASKED_EQ } };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(op, ops[i].name))
			return ops[i].op;
	fail_msg("unknown comparison %s", op);
	return SCMP_CMP_EQ;
}

/* Rules libseccomp refuses (a name unknown on x86_64, a duplicate) are left out. */
static int build_profile(scmp_filter_ctx *ctx, const void *arg, uint32_t action)
{
	const struct profile *p = arg;
	const char *rest;
	uint32_t dflt;

	(void)action;
	assert_true(p->n > 0 && !strncmp(p->line[0], "default ", 8));
	dflt = parse_action(p->dflt ? p->dflt : p->line[0] + 8, &rest);
	*ctx = seccomp_init(dflt);
	if (!*ctx)
		return -1;
	for (size_t i = 1; i < p->n; i++) {
		struct scmp_arg_cmp cmp[6];
		char name[64], op[16];
		unsigned int n = 0;
		uint32_t act = parse_action(p->line[i], &rest);
		int used = 0, nr;

		if (act == dflt || sscanf(rest, "%63s%n", name, &used) != 1)
			continue;
		rest += used;
		while (n < 6) {
			unsigned long long v1, v2;
			unsigned int idx;

			if (sscanf(rest, " %u:%15[A-Z_]:%llu:%llu%n", &idx, op, &v1, &v2, &used) != 4)
				break;
			rest += used;
			/* seccomp.json's MASKED_EQ is value & mask == valueTwo: mask first. */
			cmp[n++] = parse_op(op) == SCMP_CMP_MASKED_EQ
					   ? (struct scmp_arg_cmp){ idx, SCMP_CMP_MASKED_EQ, v1, v2 }
					   : (struct scmp_arg_cmp){ idx, parse_op(op), v1, v2 };
		}
		nr = seccomp_syscall_resolve_name(name);
		if (nr != __NR_SCMP_ERROR)
			seccomp_rule_add_array(*ctx, act, nr, n, cmp);
	}
	return 0;
}

static void test_profile(const char *label, const char *cmd, const char *dflt)
{
	struct profile p;
	struct outcome o;
	const char *why = profile_read(&p, cmd);
	int killed;

	if (why) {
		printf("# skip %s: %s\n", label, why);
		skip();
	}
	p.dflt = dflt;
	killed = run(build_profile, &p, 0, &o);
	assert_true(killed >= 0);
	print_row(label, dflt ? dflt : "own", killed, &o);
	broken = 0;
	check(!killed, label, "killed by signal %d", killed);
	/* Everything the library needs is in these profiles: every call succeeds. */
	if (!killed)
		check_outcome(label, &o, 0, true);
	assert_int_equal(broken, 0);
	for (size_t i = 0; i < p.n; i++)
		free(p.line[i]);
	free(p.line);
}

static char profile_tool[4096];

static void test_systemd_kill(void **state)
{
	char cmd[4200];

	(void)state;
	snprintf(cmd, sizeof(cmd), "%s systemd @system-service", profile_tool);
	test_profile("systemd @system-service", cmd, NULL);
}

static void test_systemd_eperm(void **state)
{
	char cmd[4200];

	(void)state;
	snprintf(cmd, sizeof(cmd), "%s systemd @system-service", profile_tool);
	test_profile("systemd @system-service", cmd, "errno 1");
}

static void test_podman(void **state)
{
	char cmd[4200];

	(void)state;
	snprintf(cmd, sizeof(cmd), "%s oci /usr/share/containers/seccomp.json", profile_tool);
	test_profile("podman default", cmd, NULL);
}

int main(void)
{
	const char *tool = getenv("LIBGUARD_SECCOMP_PROFILE");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_call),
		cmocka_unit_test(test_refuse_all),
		cmocka_unit_test(test_answer_zero),
		cmocka_unit_test(test_basic_allowed),
		cmocka_unit_test(test_systemd_kill),
		cmocka_unit_test(test_systemd_eperm),
		cmocka_unit_test(test_podman),
	};

	guardtest_init();
	snprintf(profile_tool, sizeof(profile_tool), "%s",
		 tool ? tool : "tests/helpers/seccomp-profile");
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
