// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard-maps [--summary] [--json] [PID]: /proc/PID/maps with native guard
 * regions shown as lines of their own ("---p ... [guard]"), through
 * guard_maps_open(3). A process without an address space (a kernel
 * thread, a zombie) lists nothing and says why.
 */
#include <errno.h>
#include <fcntl.h>
#include <guard.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json.h"

#define PF_KTHREAD 0x00200000	/* linux/sched.h: the task is a kernel thread */

static void usage(FILE *f)
{
	fprintf(f, "usage: guard-maps [--summary] [--json] [PID]\n"
		   "       guard-maps --help | --version\n"
		   "  /proc/PID/maps (default: guard-maps itself) with guard regions as\n"
		   "  lines of their own, marked [guard]\n");
}

/*
 * Why a process whose listing is empty has no address space, from the
 * state and flags of /proc/PID/stat; NULL if the process is gone.
 */
static const char *why_no_mm(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long flags;
	char state;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	/* "pid (comm) state ppid pgrp session tty_nr tpgid flags": comm may hold ") " */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return "unknown";
	if (flags & PF_KTHREAD)
		return "kernel thread";
	if (state == 'Z' || state == 'X')
		return "zombie";
	return "unknown";
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
	const char *why = NULL;	/* why the process has no address space */
	struct guard_region r;
	struct guard_maps *m;
	char *buf = NULL;
	size_t buflen = 0;
	FILE *out = stdout;
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
		} else if (!strcmp(argv[i], "--version")) {
			printf("guard-maps %s\n", guard_version());
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
	/* JSON is written whole or not at all: no half object before an error */
	if (json) {
		out = open_memstream(&buf, &buflen);
		if (!out) {
			guard_maps_close(m);
			return fail(pid, errno);
		}
	}
	if (json && !summary)
		fprintf(out, "{\"pid\": %ld, \"regions\": [", pid ? pid : (long)getpid());
	while ((ret = guard_maps_next(m, &r)) > 0) {
		bool guard = r.flags & GUARD_REGION_GUARD;
		const char *name = guard ? "[guard]" : r.name;
		size_t name_len = strlen(name);
		char p[5];

		vmas += r.start == r.vma_start;
		ranges += guard;
		pages += guard ? (r.end - r.start) / (unsigned long)page : 0;
		if (summary)
			continue;
		perms(&r, p);
		if (json) {
			fprintf(out, "%s\n  {\"start\": \"%#" PRIxPTR "\", \"end\": \"%#" PRIxPTR "\", "
				"\"perms\": \"%s\", \"offset\": %llu, \"dev\": \"%02x:%02x\", "
				"\"inode\": %llu, \"guard\": %s, \"name\": ",
				first ? "" : ",", r.start, r.end, p, r.offset, r.dev_major,
				r.dev_minor, r.inode, guard ? "true" : "false");
			json_write_str(out, name, name_len);
			/* the exact bytes of a name that is not text (U+FFFD above) */
			if (!json_utf8_valid(name, name_len)) {
				fputs(", \"name_hex\": ", out);
				json_write_hex(out, name, name_len);
			}
			putc('}', out);
			first = false;
		} else {
			int n = fprintf(out, "%08" PRIxPTR "-%08" PRIxPTR " %s %08llx %02x:%02x %llu ",
					r.start, r.end, p, r.offset, r.dev_major, r.dev_minor,
					r.inode);

			if (*name)
				fprintf(out, "%*s%s", n < 73 ? 73 - n : 0, "", name);
			putc('\n', out);
		}
	}
	guard_maps_close(m);
	/* Every process with an mm has a VMA (its stack, at least). */
	if (ret >= 0 && !vmas) {
		why = why_no_mm(pid ? pid : (long)getpid());
		if (!why)
			ret = -ESRCH;	/* gone since guard_maps_open() */
	}
	if (ret < 0) {
		if (json)
			fclose(out);
		free(buf);
		return fail(pid, -ret);
	}
	if (json && !summary)
		fputs("\n], \"summary\": ", out);
	if (json) {
		fprintf(out, "{\"vmas\": %lu, \"guard_ranges\": %lu, \"guard_pages\": %lu, "
			"\"address_space\": %s", vmas, ranges, pages, why ? "false" : "true");
		if (why)
			fprintf(out, ", \"no_address_space\": \"%s\"", why);
		fprintf(out, "}%s\n", summary ? "" : "}");
		if (fclose(out))
			return fail(pid, errno);
		fwrite(buf, 1, buflen, stdout);
		free(buf);
	} else if (summary) {
		printf("VMAs: %lu\nguard ranges: %lu\nguard pages: %lu\n", vmas, ranges, pages);
		if (why)
			printf("address space: none (%s)\n", why);
	} else if (why) {
		printf("process %ld has no address space (%s)\n", pid, why);
	}
	return 0;
}
