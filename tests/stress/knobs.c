// SPDX-License-Identifier: LGPL-2.1-or-later
#include "knobs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *owner;
static struct knob *set_knobs;
static size_t nset_knobs;

int knob_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = read(fd, buf, len - 1);
	close(fd);
	if (r < 0)
		return -errno;
	buf[r] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int knob_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = write(fd, val, strlen(val));
	close(fd);
	return r < 0 ? -errno : 0;
}

void knob_selected(char *s)
{
	char *a = strchr(s, '['), *b = a ? strchr(a, ']') : NULL;

	if (a && b) {
		memmove(s, a + 1, (size_t)(b - a - 1));
		s[b - a - 1] = 0;
	}
}

static void knobs_restore(void)
{
	for (size_t i = 0; i < nset_knobs; i++) {
		struct knob *k = &set_knobs[i];

		if (k->set && knob_write(k->path, k->old))
			fprintf(stderr, "%s: could not restore %s to %s\n", owner, k->path, k->old);
	}
}

void knobs_setup(const char *prog, struct knob *knobs, size_t n)
{
	size_t plen = strlen("shmem_enabled");

	owner = prog;
	set_knobs = knobs;
	nset_knobs = n;
	for (size_t i = 0; i < n; i++) {
		struct knob *k = &knobs[i];
		size_t len = strlen(k->path);
		bool shmem = len >= plen && !strcmp(k->path + len - plen, "shmem_enabled");
		int r = knob_read(k->path, k->old, sizeof(k->old));

		if (r) {
			printf("%s: sysfs: %s: %s, left alone\n", prog, k->path, strerror(-r));
			continue;
		}
		knob_selected(k->old);
		if ((shmem && strcmp(k->old, "never")) || !strcmp(k->old, k->value))
			continue;
		r = knob_write(k->path, k->value);
		if (r) {
			printf("%s: sysfs: cannot set %s to %s: %s\n", prog, k->path, k->value,
			       strerror(-r));
			continue;
		}
		k->set = true;
		printf("%s: sysfs: %s %s -> %s\n", prog, k->path, k->old, k->value);
	}
	atexit(knobs_restore);
}

unsigned long khugepaged_stat(const char *name)
{
	char path[128], buf[64];

	snprintf(path, sizeof(path), THP "khugepaged/%s", name);
	return knob_read(path, buf, sizeof(buf)) ? 0 : strtoul(buf, NULL, 10);
}
