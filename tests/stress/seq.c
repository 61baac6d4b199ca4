// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * stress-seq: a randomised, model-checked sequence of guard-region and
 * memory operations over mappings of every backing type. See README.md.
 *
 * Exit status: 0 every check agreed with the model, 1 a disagreement (the
 * report names the seed and how to replay it), 77 the kernel has no guard
 * regions and none are expected of it.
 */
#include "seq.h"

#include "guard.h"
#include "kapi.h"
#include "pattern.h"
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif

static struct ctx the_ctx;

static void on_unexpected(int sig, const siginfo_t *si)
{
	report_unexpected_signal(&the_ctx, sig, (uintptr_t)si->si_addr, si->si_code);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Is name one of the comma-separated names in list (NULL: everything)? */
static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	if (!list)
		return true;
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--seed N] [--ops N] [--time SEC] [--arena-mb MB] [--full-every N]\n"
		"          [--dir DIR] [--trace] [--watch PAGE] [--types LIST] [--no-pagemap]\n"
		"  --seed N        the run's seed (default: random; always printed)\n"
		"  --ops N         operations to run (default 2000, or unbounded with --time)\n"
		"  --time SEC      stop after SEC seconds (the count printed replays it)\n"
		"  --arena-mb MB   size of the address range operated on, a multiple of 2 (default 16)\n"
		"  --full-every N  check every page and word after every N operations (default 200)\n"
		"  --dir DIR       where the page-cache file goes (default $LIBGUARD_SCRATCH, else .)\n"
		"  --trace         print every operation\n"
		"  --watch PAGE    print the operations that touch arena page PAGE\n"
		"  --types LIST    use only these backing types (comma-separated names as printed)\n"
		"  --no-pagemap    do not read guards from pagemap: as on a kernel that can't report them\n",
		prog);
	exit(2);
}

/* Give the files their first contents: page-aligned, patterned. */
static void fill_files(struct ctx *c)
{
	static const uint32_t share[F_COUNT] = { 2, 4, 4 };	/* of the arena size */
	static uint64_t buf[4096 / 8];

	for (int f = 0; f < F_COUNT; f++) {
		struct mobj *ob = &c->m.obj[file_obj_of_fd((enum bfile)f)];
		uint32_t size = c->m.cap / share[f];

		for (uint32_t k = 0; k < size; k++) {
			uint32_t pat = c->m.next_pat++;

			pattern_fill(buf, kapi_page, pat);
			if (pwrite(c->b.fd[f], buf, kapi_page, (off_t)k * (off_t)kapi_page) !=
			    (ssize_t)kapi_page) {
				fprintf(stderr, "%s: writing the test files: %s\n", c->prog, strerror(errno));
				exit(1);
			}
			ob->content[k] = pat;
		}
		ob->size = size;
		/* Past EOF, so harmless: does this file system punch holes? */
		ob->punch = fallocate(c->b.fd[f], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      (off_t)size * (off_t)kapi_page, (off_t)kapi_page) == 0;
		if (!ob->punch)
			printf("%s: note: no hole punching in the %s file (%s); those operations are skipped\n",
			       c->prog, f == F_PAGECACHE ? c->b.dir_fs : "shmem", strerror(errno));
	}
}

/*
 * The arena: 2 MiB aligned (THP-sized ranges are real huge pages), with a
 * one-page fence on each side from a memfd of its own, which no mapping of
 * ours can merge with, so every VMA in the arena is ours alone.
 */
static void make_arena(struct ctx *c, size_t n)
{
	size_t huge = 2u << 20, len = n * kapi_page;
	char *r = mmap(NULL, len + 2 * huge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t base;
	int fence = memfd_create("libguard-stress-fence", MFD_CLOEXEC);

	if (r == MAP_FAILED || fence < 0 || ftruncate(fence, (off_t)kapi_page)) {
		fprintf(stderr, "%s: reserving the arena: %s\n", c->prog, strerror(errno));
		exit(1);
	}
	base = ((uintptr_t)r + huge) & ~(uintptr_t)(huge - 1);
	munmap(r, len + 2 * huge);
	if (mmap((void *)(base - kapi_page), kapi_page, PROT_NONE, MAP_SHARED | MAP_FIXED_NOREPLACE,
		 fence, 0) == MAP_FAILED ||
	    mmap((void *)(base + len), kapi_page, PROT_NONE, MAP_SHARED | MAP_FIXED_NOREPLACE, fence,
		 0) == MAP_FAILED) {
		fprintf(stderr, "%s: mapping the arena's fences: %s\n", c->prog, strerror(errno));
		exit(1);
	}
	close(fence);
	if (model_init(&c->m, base, n)) {
		fprintf(stderr, "%s: out of memory for the model\n", c->prog);
		exit(1);
	}
}

/* The first layout: each type in use once, then random ones, with holes. */
static void first_layout(struct ctx *c)
{
	size_t i = 0;
	int k = 0;

	while (i < c->m.n) {
		size_t len = 32 + rng_below(&c->rng, 480);
		enum btype t;

		if (rng_pct(&c->rng, 40))
			i += rng_below(&c->rng, 32);
		if (i >= c->m.n)
			break;
		if (len > c->m.n - i)
			len = c->m.n - i;
		t = k < c->ntypes ? c->types[k] : (enum btype)pick_type(c);
		k++;
		log_op(c, i, i + len, "layout: mmap [p%zu, p%zu)", i, i + len);
		map_at(c, i, i + len, t, btype_readonly(t) ? PROT_READ : PROT_READ | PROT_WRITE);
		log_done(c);
		i += len;
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "ops", required_argument, NULL, 'n' },
		{ "time", required_argument, NULL, 't' },
		{ "arena-mb", required_argument, NULL, 'a' },
		{ "full-every", required_argument, NULL, 'f' },
		{ "dir", required_argument, NULL, 'd' },
		{ "trace", no_argument, NULL, 'T' },
		{ "watch", required_argument, NULL, 'w' },
		{ "types", required_argument, NULL, 'y' },
		{ "no-pagemap", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ctx *c = &the_ctx;
	uint64_t nops = 0;
	double limit = 0, t0, last_progress;
	const char *dir = NULL, *only = NULL;
	bool have_seed = false, no_pagemap = false;
	struct utsname u;
	int opt, r;

	c->prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	c->arena_mb = 16;
	c->full_every = 200;
	c->watch = -1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': c->seed = strtoull(optarg, NULL, 0); have_seed = true; break;
		case 'n': nops = strtoull(optarg, NULL, 0); break;
		case 't': limit = strtod(optarg, NULL); break;
		case 'a': c->arena_mb = strtoul(optarg, NULL, 0); break;
		case 'f': c->full_every = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'd': dir = optarg; break;
		case 'T': c->trace = true; break;
		case 'w': c->watch = strtol(optarg, NULL, 0); break;
		case 'y': only = optarg; break;
		case 'P': no_pagemap = true; break;
		default: usage(c->prog);
		}
	}
	if (optind != argc || c->arena_mb < 2 || c->arena_mb % 2 || c->arena_mb > 256 ||
	    !c->full_every)
		usage(c->prog);
	if (!nops)
		nops = limit > 0 ? UINT64_MAX : 2000;
	if (!have_seed && getrandom(&c->seed, sizeof(c->seed), 0) != sizeof(c->seed))
		c->seed = (uint64_t)time(NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	kapi_init();
	uname(&u);
	printf("%s: seed %llu, kernel %s, arena %zu MiB, %s%llu ops%s\n", c->prog,
	       (unsigned long long)c->seed, u.release, c->arena_mb,
	       nops == UINT64_MAX ? "" : "at most ", nops == UINT64_MAX ? 0ull : (unsigned long long)nops,
	       limit > 0 ? " (time-bounded)" : "");
	if (kapi_page != 4096) {
		printf("%s: SKIP: written for 4 KiB pages, this system has %zu\n", c->prog, kapi_page);
		return 77;
	}
	if (backing_open(&c->b, dir))
		return 1;
	printf("%s: page-cache file in %s (%s). %s\n", c->prog, c->b.dir, c->b.dir_fs, c->b.note);
	probe_init(on_unexpected);
	r = caps_probe(c->prog, &c->b, &c->caps);
	if (r != CAPS_OK)
		return r;
	caps_print(c->prog, &c->caps);
	/* libguard probes file guards on a non-tmpfs directory: give it ours. */
	if (!c->b.pagecache_is_shmem)
		setenv("LIBGUARD_PROBE_DIR", c->b.dir, 0);
	printf("%s: libguard's guard_probe(): %#x\n", c->prog, guard_probe());
	/* --types and --no-pagemap restrict a run as a kernel without them would. */
	for (int t = 0; t < BT_COUNT; t++)
		if (c->caps.type_ok[t] && in_list(only, btype_name[t]))
			c->types[c->ntypes++] = (enum btype)t;
	if (!c->ntypes) {
		fprintf(stderr, "%s: --types %s: no such type with guard support here\n", c->prog, only);
		return 2;
	}
	if (no_pagemap)
		c->caps.pagemap = c->caps.scan = false;
	if (only || no_pagemap)
		printf("%s: restricted by the command line:%s%s%s\n", c->prog, only ? " types " : "",
		       only ? only : "", no_pagemap ? ", no pagemap checks" : "");

	rng_seed(&c->rng, c->seed);
	rng_seed(&c->crng, c->seed ^ 0x636865636b73ull);
	c->pmfd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	c->memfd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	if (c->pmfd < 0 || c->memfd < 0) {
		fprintf(stderr, "%s: opening /proc/self/pagemap and mem: %s\n", c->prog, strerror(errno));
		return 1;
	}
	make_arena(c, c->arena_mb * (1u << 20) / kapi_page);
	c->pm_buf = calloc(c->m.n, sizeof(*c->pm_buf));
	c->scan_buf = calloc(c->m.n, 1);
	if (!c->pm_buf || !c->scan_buf)
		return 1;
	fill_files(c);
	first_layout(c);
	/* Warm the heap: later mallocs must not add a VMA mid-check. */
	free(malloc(1 << 16));
	check_all(c);

	t0 = last_progress = now();
	for (c->op = 1; c->op <= nops; c->op++) {
		double t;

		ops_run_one(c);
		check_sample(c);
		if (c->op % c->full_every == 0)
			check_all(c);
		t = now();
		if (limit > 0 && t - t0 >= limit)
			break;
		if (t - last_progress >= 30) {
			printf("%s: %llu ops, %.0f s, %lu faults checked, %lu full checks\n", c->prog,
			       (unsigned long long)c->op, t - t0, c->faults_seen, c->full_checks);
			last_progress = t;
		}
	}
	if (c->op > nops)
		c->op = nops;
	check_all(c);
	printf("%s: PASS seed %llu: %llu ops in %.1f s, %lu faults checked, %lu full checks\n",
	       c->prog, (unsigned long long)c->seed, (unsigned long long)c->op, now() - t0,
	       c->faults_seen, c->full_checks);
	printf("%s: ops:", c->prog);
	for (int i = 0; i < ops_count(); i++)
		printf(" %s %lu", ops_name(i), c->stat_ops[i]);
	printf("\n%s: locked: %lu refusals predicted, %lu plain mlock (%lu ENOMEM)\n", c->prog,
	       c->lk.refused, c->lk.mlock_plain, c->lk.mlock_enomem);
	printf("%s: locked refusals by op:", c->prog);
	for (int i = 0; i < ops_count(); i++)
		if (c->lk.refused_by[i])
			printf(" %s %lu", ops_name(i), c->lk.refused_by[i]);
	printf("\n%s: uffd: %lu pages filled (%lu of them guarded, %lu shmem), %lu EEXIST "
	       "(%lu guarded, %lu shmem), %lu ZEROPAGE ops; %lu VMA edges left by the anon_vma "
	       "merge rule\n", c->prog, c->uf.filled,
	       c->uf.guard_filled, c->uf.shmem_filled, c->uf.eexist, c->uf.guard_eexist,
	       c->uf.shmem_eexist, c->uf.zeropage, c->uf.anon_vma_apart);
	printf("%s: replay: %s --seed %llu --ops %llu --arena-mb %zu --full-every %u\n", c->prog,
	       c->prog, (unsigned long long)c->seed, (unsigned long long)c->op, c->arena_mb,
	       c->full_every);
	return 0;
}
