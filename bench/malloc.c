// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The guarded heap side by side (issue 38 item 6): libguard-malloc.so
 * against plain glibc, Electric Fence, DUMA and GWP-ASan (in Debian's
 * scudo_standalone), each run as a child with its LD_PRELOAD, on the same
 * programs (bench-malloc-workload, bench/malloc-python.py). Wall and CPU
 * time and max RSS come from wait4(); what the child reached, its VMAs
 * and VmRSS from a page it shares with us (bench/malloc-workload.h), so
 * that a child killed by its allocator still says how far it got.
 *
 *   malloc-mix          4 threads, mixed sizes, malloc/free/realloc over a
 *                       live set: glibc, libguard (default options:
 *                       sampled), libguard-fallback (the same, mprotect),
 *                       libguard-sample0 (sample=0: nothing guarded, the
 *                       cost of being in the path alone: the floor), and
 *                       libguard-alt, a candidate rate: sample=20000, or
 *                       LIBGUARD_BENCH_SAMPLE_ALT; ms per run, CPU ms, max
 *                       RSS; and for malloc-mix libguard-sample200, for
 *                       the cost of one sample (us_per_sample)
 *   malloc-python       /usr/bin/python3 bench/malloc-python.py, same modes
 *                       (not with --quick, unless asked with --only)
 *   malloc-live         mode=all: N live 16-byte objects (n = the N asked):
 *                       libguard, libguard-fallback, efence, duma, gwp-asan
 *                       (sample rate 1); live_reached, failed_at_n,
 *                       failed_signal, vmas, rss_kb, ns_per_malloc, guarded
 *   malloc-pairs        mode=all: 1000 live objects, then malloc/free pairs:
 *                       glibc, libguard, libguard-fallback, efence, duma,
 *                       gwp-asan, scudo (GWP-ASan off: gwp-asan's floor),
 *                       and libguard-sample0 (nothing guarded: what the
 *                       module adds to a pair it passes on); ns_per_pair,
 *                       vmas, rss_kb
 *   malloc-quarantine   mode=all: N mallocs in batches of 1000, each batch
 *                       freed: N freed slots in quarantine; VMAs, the RSS
 *                       growth, the pool's own RSS, the rest (metadata),
 *                       page tables (VmPTE: native guard markers live there)
 *   malloc-corpus       tests/malloc/corpus under gwp-asan (each bug program
 *                       10 times: GWP-ASan places at random) and under
 *                       libguard in corpus-run's modes: found (of runs)
 *
 * The sampled benchmarks run at least 15 repetitions on the host (a 2%
 * target on a shared 2-CPU machine). The other allocators come from Debian's packages, unpacked by bench/run
 * (never installed): LIBGUARD_BENCH_EFENCE, LIBGUARD_BENCH_DUMA,
 * LIBGUARD_BENCH_SCUDO name their shared objects; one missing gives an
 * "unsupported" row (ENOENT). In every repetition each mode runs once, in
 * an order rotated by the repetition number.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "malloc-workload.h"

extern char **environ;

enum alloc { GLIBC, LG, LG_FB, LG_OFF, LG_ALT, LG_DENSE, EFENCE, DUMA, GWP, SCUDO, NALLOC };
static const char *const names[] = { "glibc", "libguard", "libguard-fallback", "libguard-sample0",
				     "libguard-alt", "libguard-sample200", "efence", "duma", "gwp-asan",
				     "scudo" };

struct result {
	int status;		/* from wait4() */
	double wall_ms, cpu_ms;
	long maxrss_kb;
	struct bench_malloc_shm shm;
};

static const char *lib_of(enum alloc a)
{
	switch (a) {
	case LG: case LG_FB: case LG_OFF: case LG_ALT: case LG_DENSE: return BENCH_GUARD_MALLOC;
	case EFENCE: return getenv("LIBGUARD_BENCH_EFENCE");
	case DUMA: return getenv("LIBGUARD_BENCH_DUMA");
	case GWP: case SCUDO: return getenv("LIBGUARD_BENCH_SCUDO");
	default: return "";
	}
}

static bool available(enum alloc a)
{
	const char *l = lib_of(a);

	return l && (!*l || access(l, R_OK) == 0);
}

/*
 * Run argv under allocator a, with LIBGUARD_MALLOC=lgopt for ours (NULL:
 * unset) and SCUDO_OPTIONS=scudo for scudo's; stderr to errpath (NULL:
 * /dev/null). The child's own environment minus every variable that
 * would choose an allocator.
 */
static void run(enum alloc a, const char *lgopt, const char *scudo, char *const argv[],
		const char *errpath, struct result *r)
{
	static char buf[64][512];
	char *env[512];
	int n = 0, fd = memfd_create("bench-malloc", 0);
	struct bench_malloc_shm *shm;
	struct rusage ru;
	uint64_t t0;
	pid_t pid;
	char fdarg[16];

	if (fd < 0 || ftruncate(fd, sizeof(*shm))) {
		perror("bench-malloc: memfd");
		exit(1);
	}
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (shm == MAP_FAILED)
		exit(1);
	memset(shm, 0xff, sizeof(*shm));	/* -1: not measured */
	shm->reached = shm->done = 0;
	for (char **e = environ; *e && n < 480; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "LIBGUARD_MALLOC=", 16) &&
		    strncmp(*e, "LIBGUARD_FORCE_FALLBACK=", 24) && strncmp(*e, "SCUDO_OPTIONS=", 14) &&
		    strncmp(*e, "EF_", 3) && strncmp(*e, "DUMA_", 5))
			env[n++] = *e;
	if (a != GLIBC) {
		snprintf(buf[0], sizeof(buf[0]), "LD_PRELOAD=%s", lib_of(a));
		env[n++] = buf[0];
	}
	if (a == LG_FB)
		env[n++] = "LIBGUARD_FORCE_FALLBACK=1";
	if (lgopt && (a == LG || a == LG_FB || a == LG_OFF || a == LG_ALT || a == LG_DENSE)) {
		snprintf(buf[1], sizeof(buf[1]), "LIBGUARD_MALLOC=%s", lgopt);
		env[n++] = buf[1];
	}
	if (scudo && (a == GWP || a == SCUDO)) {
		snprintf(buf[2], sizeof(buf[2]), "SCUDO_OPTIONS=%s", scudo);
		env[n++] = buf[2];
	}
	env[n] = NULL;
	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	t0 = bench_now_ns();
	pid = fork();
	if (pid < 0) {
		perror("bench-malloc: fork");
		exit(1);
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		int err = errpath ? open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : null;
		char *args[16];
		int k = 0;

		dup2(null, 0);
		dup2(null, 1);
		dup2(err, 2);
		for (; argv[k] && k < 14; k++)
			args[k] = strcmp(argv[k], "SHM") ? argv[k] : fdarg;
		args[k] = NULL;
		execve(args[0], args, env);
		_exit(127);
	}
	if (wait4(pid, &r->status, 0, &ru) != pid) {
		perror("bench-malloc: wait4");
		exit(1);
	}
	r->wall_ms = (double)(bench_now_ns() - t0) / 1e6;
	r->cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
		    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	r->maxrss_kb = ru.ru_maxrss;
	r->shm = *shm;
	munmap(shm, sizeof(*shm));
	close(fd);
}

static bool ok(const struct result *r)
{
	return WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
}

static int sig_or_status(const struct result *r)
{
	return WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 256 + WEXITSTATUS(r->status);
}

/*
 * The time benchmarks on sampled mode: every mode once per repetition.
 * With dense (malloc-mix, whose child counts its calls and reads the
 * module's numbers), also sample=200: its CPU time over sample=0's, per
 * guarded allocation, is what one sample costs (us_per_sample), measured
 * where it is most of the run rather than 0.02% of it; and the calls of a
 * run (calls_per_run) turn it into the cost of any rate.
 */
static void sampled(const char *bench, char *const argv[], const struct bench_opts *o, bool dense)
{
	enum alloc modes[] = { GLIBC, LG, LG_FB, LG_OFF, LG_ALT, LG_DENSE };
	int nm = dense ? 6 : 5, reps = o->quick || o->reps >= 15 ? o->reps : 15;
	char alt[64];

	snprintf(alt, sizeof(alt), "sample=%s", getenv("LIBGUARD_BENCH_SAMPLE_ALT") ?: "20000");
	bench_emit(bench, names[LG_ALT], 0, "sample_rate", 0, atof(alt + 7), "1-in");
	for (int rep = 1; rep <= reps; rep++) {
		struct result r[NALLOC];

		for (int k = 0; k < nm; k++) {
			enum alloc a = modes[bench_order(rep, k, nm)];

			if (!available(a))
				continue;
			run(a, a == LG_ALT ? alt : a == LG_OFF ? "sample=0" : a == LG_DENSE ? "sample=200" : NULL,
			    NULL, argv, NULL, &r[a]);
			if (!ok(&r[a])) {
				fprintf(stderr, "bench-malloc: %s under %s: status %d\n", bench, names[a],
					sig_or_status(&r[a]));
				exit(1);
			}
			bench_emit(bench, names[a], 0, "ms_per_run", rep, r[a].wall_ms, "ms");
			bench_emit(bench, names[a], 0, "cpu_ms_per_run", rep, r[a].cpu_ms, "ms");
			bench_emit(bench, names[a], 0, "maxrss_kb", rep, (double)r[a].maxrss_kb, "KiB");
			if (dense && a != GLIBC && r[a].shm.guarded >= 0)
				bench_emit(bench, names[a], 0, "guarded_per_run", rep, (double)r[a].shm.guarded,
					   "count");
		}
		if (dense && rep == 1)
			bench_emit(bench, names[GLIBC], 0, "calls_per_run", 0, (double)r[GLIBC].shm.reached,
				   "count");
		if (dense && r[LG_DENSE].shm.guarded > 0)
			bench_emit(bench, names[LG_DENSE], 0, "us_per_sample", rep,
				   (r[LG_DENSE].cpu_ms - r[LG_OFF].cpu_ms) * 1e3 / (double)r[LG_DENSE].shm.guarded,
				   "us");
	}
}

static void unsupported_missing(const char *bench, const enum alloc *modes, int nm, long n)
{
	for (int k = 0; k < nm; k++)
		if (!available(modes[k]))
			bench_unsupported(bench, names[modes[k]], n, ENOENT);
}

/* mode=all with room for n live slots (and a margin). */
static const char *all_opts(long n)
{
	static char s[96];

	snprintf(s, sizeof(s), "mode=all,slots=%ld", n + n / 16 + 4096);
	return s;
}

/* GWP-ASan: every allocation sampled, as many slots as asked. */
static const char *gwp_opts(long n)
{
	static char s[160];

	snprintf(s, sizeof(s), "GWP_ASAN_SampleRate=1:GWP_ASAN_MaxSimultaneousAllocations=%ld", n);
	return s;
}

static void live(long n, int reps)
{
	enum alloc modes[] = { LG, LG_FB, EFENCE, DUMA, GWP };
	int nm = 5;
	char sn[24], *argv[] = { BENCH_MALLOC_WORKLOAD, "fill", "SHM", sn, "16", NULL };

	snprintf(sn, sizeof(sn), "%ld", n);
	unsupported_missing("malloc-live", modes, nm, n);
	for (int rep = 1; rep <= reps; rep++)
		for (int k = 0; k < nm; k++) {
			enum alloc a = modes[bench_order(rep, k, nm)];
			struct bench_malloc_shm *s;
			struct result r;

			if (!available(a))
				continue;
			/* GWP-ASan's pool: a slot per allocation asked for, as ours */
			run(a, all_opts(n), gwp_opts(n), argv, NULL, &r);
			s = &r.shm;
			if (s->done && s->reached > 0)
				bench_emit("malloc-live", names[a], n, "ns_per_malloc", rep,
					   (double)s->ns_alloc / (double)s->reached, "ns");
			if (rep > 1)
				continue;
			bench_emit("malloc-live", names[a], n, "live_reached", 0, (double)s->reached, "count");
			if (!ok(&r)) {
				bench_emit("malloc-live", names[a], n, "failed_at_n", 0, (double)s->reached + 1,
					   "count");
				bench_emit("malloc-live", names[a], n, "failed_signal", 0, sig_or_status(&r),
					   "signal");
			}
			if (s->done) {
				bench_emit("malloc-live", names[a], n, "vmas_process", 0, (double)s->vmas, "count");
				bench_emit("malloc-live", names[a], n, "rss_kb", 0, (double)s->rss_kb, "KiB");
				bench_emit("malloc-live", names[a], n, "pte_kb", 0, (double)s->pte_kb, "KiB");
				bench_emit("malloc-live", names[a], n, "vmas_after_free", 0,
					   (double)s->vmas_after, "count");
				bench_emit("malloc-live", names[a], n, "rss_after_free_kb", 0,
					   (double)s->rss_after_kb, "KiB");
			}
			bench_emit("malloc-live", names[a], n, "maxrss_kb", 0, (double)r.maxrss_kb, "KiB");
			if (s->guarded >= 0) {
				bench_emit("malloc-live", names[a], n, "guarded", 0, (double)s->guarded, "count");
				bench_emit("malloc-live", names[a], n, "unguarded", 0, (double)s->unguarded,
					   "count");
			}
		}
}

static void pairs(long k, const struct bench_opts *o)
{
	enum alloc modes[] = { GLIBC, LG_OFF, LG, LG_FB, EFENCE, DUMA, GWP, SCUDO };
	int nm = 8;
	const long live_n = 1000;
	char sk[24], sl[24], *argv[] = { BENCH_MALLOC_WORKLOAD, "pairs", "SHM", sk, "16", sl, NULL };

	snprintf(sk, sizeof(sk), "%ld", k);
	snprintf(sl, sizeof(sl), "%ld", live_n);
	unsupported_missing("malloc-pairs", modes, nm, live_n);
	for (int rep = 1; rep <= o->reps; rep++)
		for (int j = 0; j < nm; j++) {
			enum alloc a = modes[bench_order(rep, j, nm)];
			struct result r;

			if (!available(a))
				continue;
			run(a, a == LG_OFF ? "sample=0" : all_opts(live_n),
			    a == SCUDO ? "GWP_ASAN_Enabled=false" : gwp_opts(2 * live_n),
			    argv, NULL, &r);
			if (!ok(&r) || !r.shm.done) {
				if (rep == 1) {
					bench_emit("malloc-pairs", names[a], live_n, "failed_at_n", 0,
						   (double)r.shm.reached + 1, "count");
					bench_emit("malloc-pairs", names[a], live_n, "failed_signal", 0,
						   sig_or_status(&r), "signal");
				}
				continue;
			}
			bench_emit("malloc-pairs", names[a], live_n, "ns_per_pair", rep,
				   (double)r.shm.ns_alloc / (double)k, "ns");
			if (rep == 1) {
				bench_emit("malloc-pairs", names[a], live_n, "vmas_process", 0,
					   (double)r.shm.vmas, "count");
				bench_emit("malloc-pairs", names[a], live_n, "rss_kb", 0, (double)r.shm.rss_kb,
					   "KiB");
			}
		}
}

static void quarantine(long n)
{
	enum alloc modes[] = { LG, LG_FB };
	char sn[24], *argv[] = { BENCH_MALLOC_WORKLOAD, "quarantine", "SHM", sn, "1000", NULL };

	snprintf(sn, sizeof(sn), "%ld", n);
	for (int k = 0; k < 2; k++) {
		struct bench_malloc_shm *s;
		struct result r;

		run(modes[k], all_opts(n), NULL, argv, NULL, &r);
		s = &r.shm;
		if (!ok(&r) || !s->done) {
			bench_emit("malloc-quarantine", names[modes[k]], n, "failed_at_n", 0,
				   (double)s->reached + 1, "count");
			continue;
		}
#define Q(metric, v, unit) bench_emit("malloc-quarantine", names[modes[k]], n, metric, 0, (double)(v), unit)
		Q("quarantined", s->quarantined, "count");
		Q("slots_used", s->slots_used, "count");
		Q("guarded", s->guarded, "count");
		Q("vmas_process", s->vmas, "count");
		Q("vmas_before", s->vmas_before, "count");
		Q("vmas", s->vmas_pool, "count");	/* the pool's: the mappings the objects were in */
		Q("rss_growth_kb", s->rss_kb - s->rss_before_kb, "KiB");
		Q("rss_pool_kb", s->rss_pool_kb, "KiB");
		Q("rss_metadata_kb", s->rss_kb - s->rss_before_kb - s->rss_pool_kb, "KiB");
		Q("pte_growth_kb", s->pte_kb - s->pte_before_kb, "KiB");
		Q("ns_per_pair", (double)s->ns_alloc / (double)n, "ns");
#undef Q
	}
}

/* corpus-run's cases: the program and the mode that finds its bug. */
static const char *const corpus[][2] = {
	{ "overflow1", "mode=all,align=exact" }, { "overflow16", "mode=all" },
	{ "underflow", "mode=all,align=left" }, { "uaf_read", "mode=all" },
	{ "uaf_write", "mode=all" }, { "double_free", "mode=all" },
	{ "invalid_free", "mode=all" }, { "realloc_shrink", "mode=all" },
	{ "calloc", "mode=all" }, { "aligned_alloc", "mode=all" }, { "memalign", "mode=all" },
	{ "thread", "mode=all" }, { "fork", "mode=all" }, { "large", "mode=all" },
	{ "uaf_large", "mode=all" },
};
#define NCORPUS (int)(sizeof(corpus) / sizeof(corpus[0]))

static bool grep(const char *path, const char *needle)
{
	static char buf[1 << 16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

/*
 * Each bug program: found when it dies of a signal with the tool's report;
 * the fixed twin must run clean. GWP-ASan's kind of report: its first
 * line after the banner, to stderr (bench/run keeps it in the raw file's
 * comments).
 */
static void corpus_run(int tries)
{
	char path[4096], fixed[4096], err[] = "/tmp/bench-malloc-XXXXXX";
	int efd = mkstemp(err), found[2] = { 0, 0 }, clean[2] = { 0, 0 };

	if (efd < 0)
		return;
	close(efd);
	snprintf(path, sizeof(path), "%s/overflow1", BENCH_CORPUS_DIR);
	if (access(path, X_OK) || !available(GWP)) {
		bench_unsupported("malloc-corpus", "gwp-asan", NCORPUS, ENOENT);
		if (access(path, X_OK))
			bench_unsupported("malloc-corpus", "libguard", NCORPUS, ENOENT);
		if (access(path, X_OK))
			return;
	}
	for (int i = 0; i < NCORPUS; i++) {
		for (int t = 0; t < 2; t++) {
			enum alloc a = t ? GWP : LG;
			const char *needle = t ? "*** GWP-ASan detected a memory error ***"
					       : "==ERROR: libguard-malloc: ";
			int got = 0, runs = t ? tries : 1;
			char *argv[] = { path, NULL }, *fargv[] = { fixed, NULL };
			struct result r;

			if (!available(a))
				continue;
			snprintf(path, sizeof(path), "%s/%s", BENCH_CORPUS_DIR, corpus[i][0]);
			snprintf(fixed, sizeof(fixed), "%s/%s-fixed", BENCH_CORPUS_DIR, corpus[i][0]);
			for (int k = 0; k < runs; k++) {
				run(a, corpus[i][1], gwp_opts(64), argv, err, &r);
				got += WIFSIGNALED(r.status) && grep(err, needle);
			}
			bench_emit("malloc-corpus", names[a], i + 1, "found", 0, (double)got / runs, "share");
			found[t] += got == runs ? 1 : 0;
			run(a, corpus[i][1], gwp_opts(64), fargv, err, &r);
			clean[t] += ok(&r) && !grep(err, needle);
			fprintf(stderr, "bench-malloc: corpus %s under %s: found %d of %d, fixed twin %s\n",
				corpus[i][0], names[a], got, runs, ok(&r) ? "clean" : "NOT clean");
		}
	}
	for (int t = 0; t < 2; t++) {
		if (!available(t ? GWP : LG))
			continue;
		bench_emit("malloc-corpus", names[t ? GWP : LG], 0, "found_always", 0, found[t], "programs");
		bench_emit("malloc-corpus", names[t ? GWP : LG], 0, "fixed_clean", 0, clean[t], "programs");
		bench_emit("malloc-corpus", names[t ? GWP : LG], 0, "programs", 0, NCORPUS, "programs");
	}
	unlink(err);
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	char ops[24], *mix[] = { BENCH_MALLOC_WORKLOAD, "mix", "SHM", "4", ops, "8192", NULL };
	char scale[] = "1", *py[] = { "/usr/bin/python3", BENCH_MALLOC_PYTHON, scale, NULL };
	long live_n = 0;

	bench_parse(argc, argv, &o);
	signal(SIGPIPE, SIG_IGN);
	snprintf(ops, sizeof(ops), "%ld", o.quick ? 500000L : 4000000L);
	if (!o.only || !strcmp(o.only, "malloc-mix"))
		sampled("malloc-mix", mix, &o, true);
	/* --quick (the TCG guests): no Python, whose run takes a minute there */
	if ((o.only ? !strcmp(o.only, "malloc-python") : !o.quick) && !access(py[0], X_OK))
		sampled("malloc-python", py, &o, false);
	if (!o.only || !strcmp(o.only, "malloc-pairs"))
		pairs(o.quick ? 10000 : 50000, &o);
	if (!o.only || !strcmp(o.only, "malloc-live")) {
		live(30000, o.reps);
		live_n = o.quick ? 100000 : 1000000;
		live(live_n, 3);
	}
	if (!o.only || !strcmp(o.only, "malloc-quarantine"))
		quarantine(o.quick ? 100000 : 1000000);
	if (!o.only || !strcmp(o.only, "malloc-corpus"))
		corpus_run(o.quick ? 3 : 10);
	return 0;
}
