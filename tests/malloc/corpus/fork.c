// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * After fork(), the child allocates, frees and then overflows an object
 * its parent allocated before the fork. The parent dies of the signal
 * its child died of.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	char *volatile p = malloc(32);
	int status;
	pid_t pid;

	if (!p)
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		char *volatile q = malloc(100);

		if (!q)
			_exit(2);
		free(q);
#ifdef FIXED
		memset(p, 0, 32);
#else
		memset(p, 0, 33 + 15);
#endif
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 2;
	free(p);
	if (WIFSIGNALED(status)) {
		signal(WTERMSIG(status), SIG_DFL);
		raise(WTERMSIG(status));
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}
