// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fork(): the child must see every guard (they are copied, also in file
 * VMAs whose page tables fork would otherwise skip) and every content the
 * model says; it checks the whole arena, writes to private pages (which
 * the parent must not see), checks again, and exits with the verdict.
 */
#include "seq.h"

#include "kapi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void reopen(struct ctx *c)
{
	/* Both files pin the mm that opened them: the parent's. */
	close(c->pmfd);
	close(c->memfd);
	c->pmfd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	c->memfd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	if (c->pmfd < 0 || c->memfd < 0)
		fail(c, -1, "reopening /proc/self/pagemap and mem: %s", strerror(errno));
}

void op_fork(struct ctx *c)
{
	size_t lo, hi;
	pid_t pid;
	int status;

	pick_range(c, 256, &lo, &hi);
	log_op(c, 0, c->m.n, "fork; the child checks everything, writes private [p%zu, p%zu)", lo,
	       hi);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		fail(c, -1, "fork: %s", strerror(errno));
	if (pid == 0) {
		c->in_child = true;
		reopen(c);
		/* A fork child inherits no VM_LOCKED. */
		for (size_t i = 0; i < c->m.n; i++)
			c->m.pg[i].locked = LK_NONE;
		check_all(c);
		op_write_range(c, lo, hi, true);
		check_guards(c);
		for (size_t i = lo; i < hi; i++)
			check_page(c, i, true);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		fail(c, -1, "waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail(c, -1, "the child %s %d", WIFEXITED(status) ? "exited with status" : "was killed by signal",
		     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	log_more(c, " -> child ok");
	/* The child's private writes must not show here. */
	c->lo = lo;
	c->hi = hi;
	for (size_t i = lo; i < hi; i++)
		check_page(c, i, true);
}
