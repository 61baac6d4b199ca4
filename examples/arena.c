// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * arena: a file-backed slab (a memfd, then a regular file) with a guard
 * page after every object. 100000 guarded objects in a handful of VMAs
 * with native guards; the mprotect method needs one VMA per guard and
 * fails with ENOMEM near vm.max_map_count / 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <guard.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define OBJECTS 100000

static int count_vmas(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0, c;

	while (f && (c = getc(f)) != EOF)
		n += c == '\n';
	if (f)
		fclose(f);
	return n;
}

static long max_map_count(void)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	long n = 65530;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = 65530;
		fclose(f);
	}
	return n;
}

/* Slot i: one page of object, one page of guard. */
static int arena(const char *what, int fd, unsigned int method, size_t objects, size_t *done)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), size = 2 * objects * page;
	struct iovec *guards = calloc(objects, sizeof(*guards));
	int before = count_vmas(), ret;
	char *a;

	if (!guards || ftruncate(fd, (off_t)size))
		return -errno;
	a = guard_map_file(fd, 0, size, PROT_READ | PROT_WRITE, MAP_SHARED, 0, 0);
	if (a == MAP_FAILED)
		return -errno;
	for (size_t i = 0; i < objects; i++)
		guards[i] = (struct iovec){ a + (2 * i + 1) * page, page };
	ret = guard_install_batch(guards, objects, method, done);
	if (!ret) {
		/* use some objects: the bytes right before each guard */
		for (size_t i = 0; i < objects; i += 1000)
			memset(a + 2 * i * page, 'o', page);
		printf("arena: %s, %s: %zu guarded objects, VMAs %d -> %d\n", what,
		       method & GUARD_FALLBACK ? "mprotect" : "native", objects, before,
		       count_vmas());
	}
	guard_unmap(a, size);
	free(guards);
	return ret;
}

/*
 * Native guards for all objects; the mprotect method up to its limit
 * (to_limit), or for a thousand objects, which is enough to show the
 * VMA cost without spending half a minute hitting the limit again.
 */
static int run(const char *what, int fd, bool to_limit)
{
	size_t done = 0, objects = to_limit ? OBJECTS : 1000;
	long limit = max_map_count();
	int ret = arena(what, fd, GUARD_NATIVE, OBJECTS, &done), bad = 0;

	if (ret == -EOPNOTSUPP)
		printf("arena: %s: no native guards here (or LIBGUARD_FORCE_FALLBACK)\n", what);
	else if (ret)
		bad = fprintf(stderr, "arena: %s native: %s\n", what, strerror(-ret));
	ret = arena(what, fd, GUARD_FALLBACK, objects, &done);
	printf("arena: %s, mprotect: %s after %zu guards (vm.max_map_count %ld)\n", what,
	       ret ? strerror(-ret) : "all done", ret ? done : objects, limit);
	if (!to_limit)
		return bad | (ret != 0);
	/* each mprotect guard splits the mapping: two VMAs per object */
	if (ret != -ENOMEM || (long)done > limit / 2 + 16 || (long)done < limit / 2 - 1000)
		bad = 1;
	return bad;
}

int main(void)
{
	const char *dirs[] = { getenv("LIBGUARD_SCRATCH"), "/var/tmp", "/tmp" };
	int fd = memfd_create("arena", MFD_CLOEXEC), bad;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (fd < 0)
		return 1;
	bad = run("memfd", fd, true);
	close(fd);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[PATH_MAX];

		if (!dirs[i] || !*dirs[i])
			continue;
		snprintf(path, sizeof(path), "%s/arena-XXXXXX", dirs[i]);
		fd = mkstemp(path);
		if (fd < 0)
			continue;
		unlink(path);
		bad |= run(path, fd, false);
		close(fd);
		break;
	}
	return bad;
}
