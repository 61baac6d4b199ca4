// SPDX-License-Identifier: LGPL-2.1-or-later
#include "memstate.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PM_GUARD (1ull << 58)
#define PM_SWAP (1ull << 62)
#define PM_PRESENT (1ull << 63)

static char *slurp(const char *path)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (!buf || fd < 0)
		abort();
	while ((got = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)got;
		if (cap - len < 4096) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

/*
 * The heap grows with the test's own allocations and the stack with its
 * calls: their extents are masked, their lines kept. Everything else must
 * be exactly as it was.
 */
static void mask_growing(char *maps)
{
	for (char *l = maps; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n')) {
		size_t len = strcspn(l, "\n");
		char *dash = memchr(l, '-', len), *sp = memchr(l, ' ', len);
		const char *name = NULL;

		if (len >= 6 && !memcmp(l + len - 6, "[heap]", 6))
			name = "[heap]";
		else if (len >= 7 && !memcmp(l + len - 7, "[stack]", 7))
			name = "[stack]";
		if (!name || !dash || !sp || dash > sp)
			continue;
		/* the end of the heap, both ends of the stack */
		for (char *p = !strcmp(name, "[heap]") ? dash + 1 : l; p < sp; p++)
			if (*p != '-')
				*p = 'x';
	}
}

/*
 * Under AddressSanitizer malloc() is ASan's: its primary allocator maps
 * size classes on demand in a region of its own (0x600000000000 to
 * 0x640000000000 on x86_64), where [heap] would grow without it. Those
 * lines are dropped: nothing the library maps lands there.
 */
static void drop_sanitizer_heap(char *maps)
{
#if defined(__SANITIZE_ADDRESS__) && defined(__x86_64__)
	char *out = maps;

	for (char *l = maps; *l;) {
		size_t len = strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n');
		unsigned long long start = strtoull(l, NULL, 16);

		if (start < 0x600000000000ull || start >= 0x640000000000ull) {
			memmove(out, l, len);
			out += len;
		}
		l += len;
	}
	*out = '\0';
#else
	(void)maps;
#endif
}

static uint64_t fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

void memstate_take(struct memstate *s, ...)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	int mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	unsigned char *buf = malloc(pg);
	va_list ap;

	if (mem < 0 || pm < 0 || !buf)
		abort();
	memset(s, 0, sizeof(*s));
	va_start(ap, s);
	for (;;) {
		void *start = va_arg(ap, void *);
		size_t len;

		if (!start)
			break;
		len = va_arg(ap, size_t);
		if (s->nranges == MEMSTATE_RANGES)
			abort();
		s->r[s->nranges].start = (uintptr_t)start;
		s->r[s->nranges].pages = (len + pg - 1) / pg;
		s->nranges++;
	}
	va_end(ap);
	for (size_t i = 0; i < s->nranges; i++) {
		size_t n = s->r[i].pages;

		s->r[i].pm = calloc(n ? n : 1, sizeof(uint64_t));
		s->r[i].hash = calloc(n ? n : 1, sizeof(uint64_t));
		if (!s->r[i].pm || !s->r[i].hash)
			abort();
		for (size_t p = 0; p < n; p++) {
			off_t at = (off_t)(s->r[i].start + p * pg);

			s->r[i].hash[p] = pread(mem, buf, pg, at) == (ssize_t)pg ? fnv(buf, pg) : ~0ull;
		}
		for (size_t p = 0; p < n; p++) {
			uint64_t e = 0;
			off_t at = (off_t)((s->r[i].start / pg + p) * sizeof(e));

			if (pread(pm, &e, sizeof(e), at) != (ssize_t)sizeof(e))
				e = 0;
			s->r[i].pm[p] = e & (PM_GUARD | PM_SWAP | PM_PRESENT);
		}
	}
	free(buf);
	close(mem);
	close(pm);
	/* last, so that the buffers above are in the heap already */
	s->maps = slurp("/proc/self/maps");
	mask_growing(s->maps);
	drop_sanitizer_heap(s->maps);
}

const char *memstate_diff(const struct memstate *a, const struct memstate *b)
{
	static char why[1024];
	const char *x = a->maps, *y = b->maps;

	while (*x && *x == *y) {
		size_t lx = strcspn(x, "\n"), ly = strcspn(y, "\n");

		if (lx != ly || memcmp(x, y, lx))
			break;
		x += lx + (x[lx] == '\n');
		y += ly + (y[ly] == '\n');
	}
	if (*x || *y) {
		snprintf(why, sizeof(why), "maps: before \"%.*s\", after \"%.*s\"",
			 (int)strcspn(x, "\n"), x, (int)strcspn(y, "\n"), y);
		return why;
	}
	for (size_t i = 0; i < a->nranges && i < b->nranges; i++)
		for (size_t p = 0; p < a->r[i].pages; p++) {
			uintptr_t addr = a->r[i].start + p * (size_t)sysconf(_SC_PAGESIZE);

			if (a->r[i].pm[p] != b->r[i].pm[p]) {
				snprintf(why, sizeof(why),
					 "pagemap of %#lx: guard %d->%d present %d->%d swapped %d->%d",
					 (unsigned long)addr, !!(a->r[i].pm[p] & PM_GUARD),
					 !!(b->r[i].pm[p] & PM_GUARD), !!(a->r[i].pm[p] & PM_PRESENT),
					 !!(b->r[i].pm[p] & PM_PRESENT), !!(a->r[i].pm[p] & PM_SWAP),
					 !!(b->r[i].pm[p] & PM_SWAP));
				return why;
			}
			if (a->r[i].hash[p] != b->r[i].hash[p]) {
				snprintf(why, sizeof(why), "contents of %#lx: %s", (unsigned long)addr,
					 a->r[i].hash[p] == ~0ull   ? "became readable"
					 : b->r[i].hash[p] == ~0ull ? "became unreadable"
								    : "changed");
				return why;
			}
		}
	return NULL;
}

void memstate_free(struct memstate *s)
{
	free(s->maps);
	for (size_t i = 0; i < s->nranges; i++) {
		free(s->r[i].pm);
		free(s->r[i].hash);
	}
	memset(s, 0, sizeof(*s));
}
