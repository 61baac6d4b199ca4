// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Files: map 1000 windows of 16 pages of one file (on a real file
 * system: $LIBGUARD_SCRATCH, /var/tmp or /tmp), each with a one-page
 * guard on either side, then unmap them: guard_map_file() + guard_unmap()
 * (libguard-native where the kernel guards file mappings natively, else
 * libguard-fallback) against a PROT_NONE reservation with the file mapped
 * over its middle (mprotect: two PROT_NONE neighbours). ns_per_map covers
 * map and unmap; vmas counts the VMAs the 1000 live windows add.
 */
#include "bench.h"

#include <errno.h>
#include <guard.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define WINDOWS 1000
#define PAGES 16

enum { LIBGUARD, MPROTECT, NMODES };

static char *map_one(int mode, int fd)
{
	size_t page = bench_page(), len = PAGES * page;
	char *base;

	if (mode == LIBGUARD)
		return guard_map_file(fd, (off_t)page, len, PROT_READ | PROT_WRITE, MAP_SHARED, page,
				      page);
	base = mmap(NULL, len + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		    -1, 0);
	if (base == MAP_FAILED)
		return MAP_FAILED;
	if (mmap(base + page, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		 (off_t)page) == MAP_FAILED) {
		munmap(base, len + 2 * page);
		return MAP_FAILED;
	}
	return base + page;
}

static void unmap_one(int mode, char *p)
{
	size_t page = bench_page();

	if (mode == LIBGUARD)
		guard_unmap(p, PAGES * page);
	else
		munmap(p - page, (PAGES + 2) * page);
}

int main(int argc, char **argv)
{
	static char *win[WINDOWS];
	const char *names[NMODES] = { "libguard-native", "mprotect" };
	struct bench_opts o;
	int fd = bench_tmpfile();

	bench_parse(argc, argv, &o);
	if (fd < 0 || ftruncate(fd, (off_t)((PAGES + 2) * bench_page()))) {
		fprintf(stderr, "files: no file on a real file system: %s\n", strerror(errno));
		return 1;
	}
	if (!(guard_probe() & GUARD_CAP_FILE) || getenv("LIBGUARD_FORCE_FALLBACK"))
		names[LIBGUARD] = "libguard-fallback";
	for (int rep = 0; rep <= o.reps; rep++) {	/* rep 0: warm-up, not reported */
		for (int s = 0; s < NMODES; s++) {
			int m = bench_order(rep, s, NMODES), made = 0;
			long before = bench_vmas(0, 0), vmas;
			uint64_t t0 = bench_now_ns(), t1, t2, ns;

			for (; made < WINDOWS; made++) {
				win[made] = map_one(m, fd);
				if (win[made] == MAP_FAILED)
					break;
			}
			t1 = bench_now_ns();
			vmas = bench_vmas(0, 0) - before;
			t2 = bench_now_ns();
			for (int i = 0; i < made; i++)
				unmap_one(m, win[i]);
			ns = (t1 - t0) + (bench_now_ns() - t2);
			if (made < WINDOWS) {
				bench_emit("files", names[m], WINDOWS, "failed_at_n", 0, made, "maps");
				continue;
			}
			if (!rep)
				continue;
			bench_emit("files", names[m], WINDOWS, "ns_per_map", rep,
				   (double)ns / WINDOWS, "ns");
			if (rep == 1)
				bench_emit("files", names[m], WINDOWS, "vmas", 0, vmas, "vmas");
		}
	}
	close(fd);
	return 0;
}
