// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libguard-jemalloc.so: guard regions around jemalloc's extents, with no
 * jemalloc rebuild. Preloaded with jemalloc:
 *
 *   LD_PRELOAD=libguard-jemalloc.so:libjemalloc.so.2 program
 *
 * it installs extent hooks on every arena (arena.<i>.extent_hooks, which
 * also creates each automatic arena not yet in use), so that every mapping
 * jemalloc asks for gets a guard page either side through guard_install():
 * a native guard (no VMA) where the kernel has them, the mprotect fallback
 * (two more VMAs) where it does not. The guards are outside what the hook
 * returns, so jemalloc never hands them out, and splits and merges inside
 * a mapping never touch them. A mapping is unmapped, guards and all, only
 * when jemalloc deallocates it whole; a piece is refused (jemalloc keeps it
 * retained, as it does on Linux by default).
 *
 * Extents jemalloc made before the hooks were installed (arena 0's first
 * chunk) keep no guards; the hooks treat them as jemalloc's own hooks
 * would. In set-user-ID, set-group-ID or file-capability programs
 * (AT_SECURE) the module does nothing. LIBGUARD_JEMALLOC_STATS=1 prints
 * what it did at exit on stderr; =PATH appends it to the file PATH (for
 * programs that close stderr at exit, as coreutils do).
 * LIBGUARD_JEMALLOC_HOOKS=0 installs no hooks (a baseline for the
 * statistics; jemalloc's malloc_conf above still applies).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <guard.h>

#include "hooks.h"

/*
 * retain:false: each extent jemalloc needs is a mapping of its own, with
 * its guards (retain:true grows few large mappings and splits them, so
 * guards are only at their ends). oversize_threshold:0: no separate arena
 * for huge allocations, which jemalloc creates on first use with its own
 * hooks, where mallctl cannot reach it first.
 * jemalloc reads this only when the module comes before it in
 * LD_PRELOAD, and the program's own malloc_conf or MALLOC_CONF win over it.
 */
__attribute__((visibility("default"))) const char *malloc_conf = "retain:false,oversize_threshold:0";

static int (*je_mallctl)(const char *, void *, size_t *, void *, size_t);

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("libguard-jemalloc: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static const char *stats_to; /* "1": stderr; else a file to append to */

/* Where the statistics go: stderr, or appended to the file. */
static FILE *stats_open(void)
{
	return strcmp(stats_to, "1") == 0 ? stderr : fopen(stats_to, "ae");
}

static void stats_close(FILE *f)
{
	if (f && f != stderr)
		fclose(f);
}

static void report(void)
{
	struct jg_stats s;
	FILE *f = stats_open();

	if (!f)
		return;
	jg_stats(&s);
	fprintf(f,
		"libguard-jemalloc: %lu mappings guarded (%lu native, %lu fallback), %lu live, "
		"%lu refused (no guard), %lu unmapped, %lu unguarded for libguard itself; "
		"VMAs at exit %d\n",
		s.guarded, s.native, s.fallback, s.live, s.failed, s.unmapped, s.reentrant,
		jg_count_vmas());
	stats_close(f);
}

__attribute__((constructor)) static void guard_jemalloc_init(void)
{
	const char *e;
	const char *version;
	size_t len = sizeof(version);
	unsigned narenas;
	unsigned hooked = 0;
	int r;

	if (getauxval(AT_SECURE))
		return;
	je_mallctl = (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT,
										     "mallctl");
	if (!je_mallctl) {
		say("jemalloc is not loaded (no mallctl): nothing guarded; "
		    "preload libjemalloc.so.2 with this module");
		return;
	}
	r = je_mallctl("version", &version, &len, NULL, 0);
	if (r || strncmp(version, "5.", 2) != 0) {
		say("jemalloc %s has no extent hooks this module knows (5.x wanted): nothing "
		    "guarded", r ? "of unknown version" : version);
		return;
	}
	e = getenv("LIBGUARD_JEMALLOC_STATS");
	if (e && *e)
		stats_to = e;
	/* The baseline of bench/jemalloc-guard: the statistics, no hooks. */
	e = getenv("LIBGUARD_JEMALLOC_HOOKS");
	if (e && *e == '0') {
		if (stats_to)
			atexit(report);
		return;
	}
	/*
	 * Every automatic arena, in use or not: writing its hooks creates it
	 * with them, so threads that start later use hooked ones too.
	 */
	r = jg_hook_all(je_mallctl, &narenas);
	if (r < 0) {
		say("mallctl(\"arena.<i>.extent_hooks\"): %s: nothing guarded", strerror(-r));
		return;
	}
	hooked = (unsigned)r;
	if (hooked < narenas)
		say("only %u of %u arenas hooked: the others keep jemalloc's hooks", hooked,
		    narenas);
	if (stats_to) {
		FILE *f = stats_open();

		if (f)
			fprintf(f, "libguard-jemalloc: hooks on %u of %u arenas\n", hooked, narenas);
		stats_close(f);
		atexit(report);
	}
}
