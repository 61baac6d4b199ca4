/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libguard-malloc internals, shared by the files of lib/malloc/ only.
 * Nothing here may call malloc(): every file runs inside it.
 */
#ifndef GM_H
#define GM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "guard-malloc.h"

#define GM_EXPORT __attribute__((visibility("default")))
#define GM_TLS __attribute__((tls_model("initial-exec"))) __thread
#define GM_LIKELY(x) __builtin_expect(!!(x), 1)
#define GM_UNLIKELY(x) __builtin_expect(!!(x), 0)

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

/* malloc()'s alignment guarantee, which every placement but exact keeps. */
#define GM_ALIGN 16

/* options.c: LIBGUARD_MALLOC, parsed once from the environment. */
enum gm_place { GM_RIGHT, GM_LEFT, GM_RANDOM, GM_EXACT };
struct gm_options {
	unsigned long sample;	/* 1 in sample allocations; 0: none */
	bool all;		/* mode=all: every allocation */
	size_t slots;
	size_t slot_pages;
	size_t quarantine;	/* freed slots kept guarded before any is reused */
	enum gm_place place;
	bool summary;
	bool force_fallback;	/* LIBGUARD_FORCE_FALLBACK, as libguard reads it */
};
extern struct gm_options gm_opt;
/* Parse a NUL-separated or environ-style list; bad values: one line on fd 2. */
void gm_options_defaults(struct gm_options *o);
int gm_options_parse(struct gm_options *o, const char *spec, int errfd);
void gm_options_load(void);
char *gm_env(const char *name);

/* guards.c: the system calls on the pool, native or mprotect. */
unsigned int gm_guards_probe(bool force_fallback);	/* GUARD_METHOD_* or 0 */
size_t gm_guards_cap(void);			/* fallback's live-slot cap */
int gm_guards_open(void *addr, size_t len);		/* make a slot accessible */
int gm_guards_close(void *addr, size_t len);		/* guard it again, drop its memory */
void *gm_guards_reserve(size_t len);			/* the pool */
int gm_guards_extend(void *addr, size_t len);		/* guard slots about to be used */
extern unsigned int gm_method;

/* trace.c: stack traces, no malloc. */
#define GM_TRACE_DEPTH 16
struct gm_trace {
	pid_t tid;
	unsigned int depth;
	void *pc[GM_TRACE_DEPTH];
};
void gm_trace_init(void);
void gm_trace_capture(struct gm_trace *t, unsigned int skip);
void gm_trace_print(int fd, const struct gm_trace *t);
void gm_trace_print_pcs(int fd, void *const *pc, unsigned int n);
pid_t gm_gettid(void);

/* pool.c: slots, metadata, quarantine. */
enum gm_state { GM_NEVER = 0, GM_LIVE, GM_FREED, GM_BUSY };
struct gm_slot {
	uintptr_t ptr;		/* the allocation in the slot */
	size_t size;		/* as asked */
	uint32_t state;
	uint32_t reuse;		/* times the slot was handed out */
	uint32_t head;		/* the first slot of the run this one is part of (itself alone) */
	uint32_t run;		/* in a run's first slot: its slots (1: a slot alone) */
	struct gm_trace alloc, free;
};
/* Most slots one allocation may span (a run opens their guards between). */
#define GM_MAX_RUN 512
struct gm_pool {
	uintptr_t base, end;	/* the whole reservation, guards included */
	size_t page, slot_len;	/* usable bytes of a slot */
	size_t stride;		/* slot_len + one guard page */
	size_t nslots, cap;
	struct gm_slot *meta;
	uint32_t *ring;		/* freed slots, oldest first */
	size_t ring_head, ring_count;
	size_t bump;		/* slots never used start here */
	size_t guarded_to;	/* slots below are guarded (native: extended in chunks) */
	struct guard_malloc_stats st;
};
extern struct gm_pool gm_pool;
bool gm_pool_init(void);
/* base is published last (gm_pool_init): 0 until the pool is whole. */
static inline bool gm_in_pool(const void *p)
{
	uintptr_t b = __atomic_load_n(&gm_pool.base, __ATOMIC_ACQUIRE);

	return b && (uintptr_t)p - b < gm_pool.end - b;
}
uintptr_t gm_slot_start(size_t i);
/* The slot whose usable pages hold p, or SIZE_MAX (a guard between slots). */
size_t gm_slot_of(uintptr_t p);
/* The first slot of the run slot x is part of, if x's record says so and agrees; else x. */
size_t gm_slot_head(size_t x);
void *gm_pool_alloc(size_t size, size_t align);
/* 0: freed; otherwise the report kind it was (a report was printed). */
void gm_pool_free(void *p, const char *what);
size_t gm_pool_size(const void *p, const char *what);
void gm_pool_lock(void);
void gm_pool_unlock(void);
void gm_pool_child(void);

/* sampler.c */
bool gm_sample_slow(void);
extern GM_TLS unsigned long gm_countdown;
extern GM_TLS int gm_busy;	/* this thread is inside the pool: no sampling */
static inline bool gm_sample(void)
{
	if (GM_LIKELY(gm_countdown > 1)) {
		gm_countdown--;
		return false;
	}
	return gm_sample_slow();
}
uint64_t gm_random(void);

/* report.c */
enum gm_kind { GM_OVERFLOW, GM_UNDERFLOW, GM_UAF, GM_DOUBLE_FREE, GM_INVALID_FREE, GM_WILD };
void gm_report_install(void);
/* A bad free or realloc of a pool pointer: report and die (SIGSEGV). */
__attribute__((noreturn)) void gm_report_bad_free(enum gm_kind kind, uintptr_t addr, size_t slot,
						   const char *what);
void gm_write(int fd, const char *s);
void gm_write_num(int fd, uintptr_t v, int base);
void gm_flush(void);

/* stats.c */
void gm_stats_summary(int fd);

/* entry.c: the allocator underneath. */
struct gm_next {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*memalign)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*usable)(void *);
};
extern struct gm_next gm_next;
void gm_init(void);

#endif
