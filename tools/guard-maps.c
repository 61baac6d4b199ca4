// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard-maps [--summary] [--json] [PID]: /proc/PID/maps with native guard
 * regions shown as lines of their own ("---p ... [guard]"), through
 * guard_maps_open(3).
 */
#include <errno.h>
#include <guard.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: guard-maps [--summary] [--json] [PID]\n"
		   "  /proc/PID/maps (default: guard-maps itself) with guard regions as\n"
		   "  lines of their own, marked [guard]\n");
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void perms(const struct guard_region *r, char out[5])
{
	bool guard = r->flags & GUARD_REGION_GUARD;

	out[0] = !guard && (r->prot & PROT_READ) ? 'r' : '-';
	out[1] = !guard && (r->prot & PROT_WRITE) ? 'w' : '-';
	out[2] = !guard && (r->prot & PROT_EXEC) ? 'x' : '-';
	out[3] = r->flags & GUARD_REGION_SHARED ? 's' : 'p';
	out[4] = '\0';
}

static int fail(long pid, int err)
{
	const char *who = pid ? "process" : "guard-maps";

	switch (err) {
	case EACCES:
	case EPERM:
		fprintf(stderr, "guard-maps: permission denied reading the maps of %s %ld: it "
				"belongs to another user or is not dumpable (run as its user or "
				"as root)\n", who, pid);
		break;
	case ESRCH:
		fprintf(stderr, "guard-maps: no process %ld\n", pid);
		break;
	case EOPNOTSUPP:
		fprintf(stderr, "guard-maps: this kernel can install guard regions but cannot "
				"report them (no pagemap bit 58, no PAGEMAP_SCAN PAGE_IS_GUARD): "
				"not printing a map that would hide them\n");
		break;
	default:
		fprintf(stderr, "guard-maps: reading the maps of %s %ld: %s\n", who, pid,
			strerror(err));
	}
	return 1;
}

int main(int argc, char **argv)
{
	bool summary = false, json = false, first = true;
	unsigned long vmas = 0, ranges = 0, pages = 0;
	long page = sysconf(_SC_PAGESIZE), pid = 0;
	struct guard_region r;
	struct guard_maps *m;
	int ret;

	for (int i = 1; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--summary")) {
			summary = true;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!pid && argv[i][0] != '-' &&
			   (pid = strtol(argv[i], &end, 10)) > 0 && !*end) {
			continue;
		} else {
			usage(stderr);
			return 2;
		}
	}
	ret = guard_maps_open((pid_t)pid, 0, &m);
	if (ret)
		return fail(pid, -ret);
	if (json && !summary)
		printf("{\"pid\": %ld, \"regions\": [", pid ? pid : (long)getpid());
	while ((ret = guard_maps_next(m, &r)) > 0) {
		bool guard = r.flags & GUARD_REGION_GUARD;
		char p[5];

		vmas += r.start == r.vma_start;
		ranges += guard;
		pages += guard ? (r.end - r.start) / (unsigned long)page : 0;
		if (summary)
			continue;
		perms(&r, p);
		if (json) {
			printf("%s\n  {\"start\": \"%#" PRIxPTR "\", \"end\": \"%#" PRIxPTR "\", "
			       "\"perms\": \"%s\", \"offset\": %llu, \"dev\": \"%02x:%02x\", "
			       "\"inode\": %llu, \"guard\": %s, \"name\": ",
			       first ? "" : ",", r.start, r.end, p, r.offset, r.dev_major,
			       r.dev_minor, r.inode, guard ? "true" : "false");
			json_str(guard ? "[guard]" : r.name);
			putchar('}');
			first = false;
			continue;
		}
		{
			int n = printf("%08" PRIxPTR "-%08" PRIxPTR " %s %08llx %02x:%02x %llu ",
				       r.start, r.end, p, r.offset, r.dev_major, r.dev_minor,
				       r.inode);
			const char *name = guard ? "[guard]" : r.name;

			if (*name)
				printf("%*s%s", n < 73 ? 73 - n : 0, "", name);
			putchar('\n');
		}
	}
	guard_maps_close(m);
	if (ret < 0)
		return fail(pid, -ret);
	if (json && !summary)
		printf("\n], \"summary\": ");
	if (json)
		printf("{\"vmas\": %lu, \"guard_ranges\": %lu, \"guard_pages\": %lu}%s\n", vmas,
		       ranges, pages, summary ? "" : "}");
	else if (summary)
		printf("VMAs: %lu\nguard ranges: %lu\nguard pages: %lu\n", vmas, ranges, pages);
	return 0;
}
