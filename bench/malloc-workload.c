// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The child program of bench-malloc (issue 38 item 6): plain malloc and
 * free, nothing of libguard's, so that the same binary runs under glibc,
 * libguard-malloc.so, Electric Fence, DUMA and scudo (GWP-ASan), whichever
 * LD_PRELOAD names. Its numbers go into a shared page (a memfd the parent
 * passes by number) as it goes, so that what a child reached before an
 * allocator killed it is still there to read.
 *
 *   mix SHM THREADS OPS LIVE     THREADS threads, each OPS random steps over
 *                                a live set of LIVE slots: an empty slot gets
 *                                malloc() of a mixed size (16 B .. 64 KiB),
 *                                a full one realloc() (1 in 8) or free();
 *                                every object is written; counts its calls
 *   fill SHM N SIZE              N live malloc(SIZE), each written, then all
 *                                freed; counts as it goes
 *   pairs SHM K SIZE LIVE        LIVE live objects, then K times: free the
 *                                oldest, malloc() a new one and write it
 *   quarantine SHM N BATCH       N mallocs in batches of BATCH, each batch
 *                                freed before the next: with libguard-malloc
 *                                in mode=all, N freed slots in quarantine
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <guard-malloc.h>

#include "malloc-workload.h"

static struct bench_malloc_shm *shm;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* 60% 16-128 B, 25% 128 B-1 KiB, 12% 1-8 KiB, 3% 8-64 KiB. */
static size_t mixed_size(uint64_t *s)
{
	uint64_t r = next(s), k = r % 100;

	r >>= 8;
	if (k < 60)
		return 16 + r % 113;
	if (k < 85)
		return 128 + r % 897;
	if (k < 97)
		return 1024 + r % 7169;
	return 8192 + r % 57345;
}

static void touch(char *p, size_t size)
{
	memset(p, (int)(size & 0xff), size < 64 ? size : 64);
	p[size - 1] = 1;
}

struct mix_arg {
	long ops, live;
	uint64_t seed;
	long calls;	/* malloc, realloc and free calls made */
};

static void *mix_thread(void *a)
{
	struct mix_arg *m = a;
	char **slot = calloc((size_t)m->live, sizeof(*slot));
	size_t *size = calloc((size_t)m->live, sizeof(*size));
	uint64_t s = m->seed;

	if (!slot || !size)
		abort();
	for (long i = 0; i < m->ops; i++) {
		uint64_t r = next(&s);
		long k = (long)(r % (uint64_t)m->live);

		if (!slot[k]) {
			size[k] = mixed_size(&s);
			slot[k] = malloc(size[k]);
			if (!slot[k])
				abort();
			touch(slot[k], size[k]);
			m->calls++;
		} else if ((r >> 40) % 8 == 0) {
			size_t n = mixed_size(&s);
			char *q = realloc(slot[k], n);

			if (!q)
				abort();
			slot[k] = q;
			size[k] = n;
			q[n - 1] = 2;
			m->calls++;
		} else {
			free(slot[k]);
			slot[k] = NULL;
			m->calls++;
		}
	}
	for (long k = 0; k < m->live; k++)
		m->calls += slot[k] != NULL;
	for (long k = 0; k < m->live; k++)
		free(slot[k]);
	free(slot);
	free(size);
	return NULL;
}

static void stats(void);

static int mix(long threads, long ops, long live)
{
	pthread_t t[64];
	struct mix_arg a[64];

	if (threads < 1 || threads > 64)
		return 2;
	for (long i = 0; i < threads; i++) {
		a[i] = (struct mix_arg){ ops, live, 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1), 0 };
		if (pthread_create(&t[i], NULL, mix_thread, &a[i]))
			return 1;
	}
	shm->reached = 0;
	for (long i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		shm->reached += a[i].calls;
	}
	stats();
	shm->done = 1;
	return 0;
}

/* VMAs of the process, and VmRSS and VmPTE in KiB, read without malloc (the allocator is measured). */
static void snapshot(long *vmas, long *rss_kb, long *pte_kb)
{
	static char buf[1 << 16];
	FILE *f;
	size_t n;

	*vmas = 0;
	f = fopen("/proc/self/maps", "re");
	if (f) {
		setvbuf(f, buf, _IOFBF, sizeof(buf));
		for (int c; (c = getc(f)) != EOF;)
			*vmas += c == '\n';
		fclose(f);
	}
	*rss_kb = *pte_kb = -1;
	f = fopen("/proc/self/status", "re");
	if (f) {
		setvbuf(f, buf, _IOFBF, sizeof(buf));
		n = fread(buf + 4096, 1, 8192, f);
		buf[4096 + n] = '\0';
		fclose(f);
		char *r = strstr(buf + 4096, "VmRSS:"), *p = strstr(buf + 4096, "VmPTE:");

		if (r)
			*rss_kb = strtol(r + 6, NULL, 10);
		if (p)
			*pte_kb = strtol(p + 6, NULL, 10);
	}
}

/* Rss of the mappings meeting [lo, hi], from /proc/self/smaps, in KiB; *vmas: how many. */
static long rss_between(uintptr_t lo, uintptr_t hi, long *vmas)
{
	static char line[4096];
	FILE *f = fopen("/proc/self/smaps", "re");
	bool in = false;
	long kb = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t s, e;

		if (sscanf(line, "%lx-%lx ", &s, &e) == 2) {
			in = s <= hi && e > lo;
			*vmas += in;
		}
		else if (in && !strncmp(line, "Rss:", 4))
			kb += strtol(line + 4, NULL, 10);
	}
	fclose(f);
	return kb;
}

/* libguard-malloc's numbers, when it is loaded. */
static void stats(void)
{
	struct guard_malloc_stats st;
	int (*fn)(struct guard_malloc_stats *, size_t);
	void *sym = dlsym(RTLD_DEFAULT, "guard_malloc_stats");

	memcpy(&fn, &sym, sizeof(fn));
	if (fn && !fn(&st, sizeof(st))) {
		shm->method = st.method;
		shm->guarded = (long)st.guarded;
		shm->slots_used = (long)st.slots_used;
		shm->quarantined = (long)st.quarantined;
		shm->unguarded = (long)(st.unguarded_cap + st.unguarded_large);
	}
}

static int fill(long n, size_t size)
{
	char **p = mmap(NULL, (size_t)n * sizeof(*p), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint64_t t0;
	long i;

	if (p == MAP_FAILED)
		return 1;
	snapshot(&shm->vmas_before, &shm->rss_before_kb, &shm->pte_before_kb);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		p[i] = malloc(size);
		if (!p[i])
			break;
		touch(p[i], size);
		__atomic_store_n(&shm->reached, i + 1, __ATOMIC_RELAXED);
	}
	shm->ns_alloc = (long)(now_ns() - t0);
	stats();
	snapshot(&shm->vmas, &shm->rss_kb, &shm->pte_kb);
	t0 = now_ns();
	for (long j = 0; j < i; j++)
		free(p[j]);
	shm->ns_free = (long)(now_ns() - t0);
	snapshot(&shm->vmas_after, &shm->rss_after_kb, &shm->pte_after_kb);
	shm->done = 1;
	return i == n ? 0 : 3;
}

static int pairs(long k, size_t size, long live)
{
	char **p = calloc((size_t)live, sizeof(*p));
	uint64_t t0;

	if (!p)
		return 1;
	for (long i = 0; i < live; i++) {
		p[i] = malloc(size);
		if (!p[i])
			return 3;
		touch(p[i], size);
	}
	t0 = now_ns();
	for (long i = 0; i < k; i++) {
		long j = i % live;

		free(p[j]);
		p[j] = malloc(size);
		if (!p[j])
			return 3;
		touch(p[j], size);
		__atomic_store_n(&shm->reached, i + 1, __ATOMIC_RELAXED);
	}
	shm->ns_alloc = (long)(now_ns() - t0);
	stats();
	snapshot(&shm->vmas, &shm->rss_kb, &shm->pte_kb);
	for (long i = 0; i < live; i++)
		free(p[i]);
	free(p);
	shm->done = 1;
	return 0;
}

static int quarantine(long n, long batch)
{
	char **p = calloc((size_t)batch, sizeof(*p));
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	uint64_t t0;

	if (!p)
		return 1;
	snapshot(&shm->vmas_before, &shm->rss_before_kb, &shm->pte_before_kb);
	t0 = now_ns();
	for (long done = 0; done < n;) {
		long b = n - done < batch ? n - done : batch;

		for (long i = 0; i < b; i++) {
			p[i] = malloc(16);
			if (!p[i])
				return 3;
			touch(p[i], 16);
			if ((uintptr_t)p[i] < lo)
				lo = (uintptr_t)p[i];
			if ((uintptr_t)p[i] > hi)
				hi = (uintptr_t)p[i];
		}
		for (long i = 0; i < b; i++)
			free(p[i]);
		done += b;
		__atomic_store_n(&shm->reached, done, __ATOMIC_RELAXED);
	}
	shm->ns_alloc = (long)(now_ns() - t0);
	stats();
	snapshot(&shm->vmas, &shm->rss_kb, &shm->pte_kb);
	/* the pool's own pages: the mappings the objects were in */
	shm->vmas_pool = 0;
	shm->rss_pool_kb = rss_between(lo, hi, &shm->vmas_pool);
	free(p);
	shm->done = 1;
	return 0;
}

int main(int argc, char **argv)
{
	int fd;

	if (argc < 3)
		goto usage;
	fd = atoi(argv[2]);
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (shm == MAP_FAILED) {
		perror("bench-malloc-workload: mmap of the shared page");
		return 1;
	}
	close(fd);
	if (!strcmp(argv[1], "mix") && argc == 6)
		return mix(atol(argv[3]), atol(argv[4]), atol(argv[5]));
	if (!strcmp(argv[1], "fill") && argc == 5)
		return fill(atol(argv[3]), (size_t)atol(argv[4]));
	if (!strcmp(argv[1], "pairs") && argc == 6)
		return pairs(atol(argv[3]), (size_t)atol(argv[4]), atol(argv[5]));
	if (!strcmp(argv[1], "quarantine") && argc == 5)
		return quarantine(atol(argv[3]), atol(argv[4]));
usage:
	fprintf(stderr, "usage: bench-malloc-workload mix|fill|pairs|quarantine SHM-FD ARGS...\n");
	return 2;
}
