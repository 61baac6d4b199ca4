// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The step log: a ring of the last operations, each with the page ranges
 * it touched, and the failure report, which prints the seed, the
 * operation count that replays the run to the failing step, the model's
 * view of the failing page and its neighbours, the kernel's
 * (/proc/self/maps around it), and the logged operations, those that
 * touched the failing page marked with '*'.
 */
#include "seq.h"

#include "kapi.h"
#include "probe.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RING 128

struct ring_ent {
	uint64_t op;
	size_t lo, hi, lo2, hi2;
	int obj;			/* a file operation: object and pages, or -1 */
	uint32_t off_lo, off_hi;
	char text[240];
};

static struct ring_ent ring[RING];
static uint64_t ring_n;

/* The last operations on each page, for failures older than the ring. */
#define HIST 6
static uint64_t (*hist)[HIST];
static size_t hist_n;

static struct ring_ent *cur(void)
{
	return &ring[(ring_n - 1) % RING];
}

void log_op(struct ctx *c, size_t lo, size_t hi, const char *fmt, ...)
{
	struct ring_ent *e = &ring[ring_n++ % RING];
	va_list ap;
	int n;

	e->op = c->op;
	e->lo = lo;
	e->hi = hi;
	e->lo2 = e->hi2 = 0;
	e->obj = -1;
	c->lo = lo;
	c->hi = hi;
	c->lo2 = c->hi2 = 0;
	n = snprintf(e->text, sizeof(e->text), "%s", c->in_child ? "[child] " : "");
	va_start(ap, fmt);
	vsnprintf(e->text + n, sizeof(e->text) - (size_t)n, fmt, ap);
	va_end(ap);
}

void log_more(struct ctx *c, const char *fmt, ...)
{
	struct ring_ent *e = cur();
	size_t n = strlen(e->text);
	va_list ap;

	(void)c;
	if (n >= sizeof(e->text) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(e->text + n, sizeof(e->text) - n, fmt, ap);
	va_end(ap);
}

void log_second_range(struct ctx *c, size_t lo, size_t hi)
{
	cur()->lo2 = c->lo2 = lo;
	cur()->hi2 = c->hi2 = hi;
}

void log_object(struct ctx *c, int obj, uint32_t off_lo, uint32_t off_hi)
{
	(void)c;
	cur()->obj = obj;
	cur()->off_lo = off_lo;
	cur()->off_hi = off_hi;
}

static bool touches(const struct ctx *c, const struct ring_ent *e, long page)
{
	size_t p = (size_t)page;
	const struct mpage *pg;

	if (page < 0 || p >= c->m.n)
		return false;
	if ((p >= e->lo && p < e->hi) || (p >= e->lo2 && p < e->hi2))
		return true;
	pg = &c->m.pg[p];
	return e->obj >= 0 && pg->type != BT_NONE && pg->obj == e->obj && pg->off >= e->off_lo &&
	       pg->off < e->off_hi;
}

static void remember(struct ctx *c, size_t lo, size_t hi, uint64_t op)
{
	if (hist_n != c->m.n) {
		free(hist);
		hist = calloc(c->m.n, sizeof(*hist));
		hist_n = hist ? c->m.n : 0;
	}
	if (hi > hist_n)
		hi = hist_n;
	for (size_t p = lo; p < hi; p++) {
		if (hist[p][HIST - 1] == op)
			continue;
		memmove(&hist[p][0], &hist[p][1], (HIST - 1) * sizeof(hist[p][0]));
		hist[p][HIST - 1] = op;
	}
}

void log_done(struct ctx *c)
{
	struct ring_ent *e = cur();

	remember(c, e->lo, e->hi, e->op);
	remember(c, e->lo2, e->hi2, e->op);
	if (e->obj >= 0)
		for (size_t p = 0; p < c->m.n; p++)
			if (touches(c, e, (long)p))
				remember(c, p, p + 1, e->op);
	if (c->trace || touches(c, e, c->watch))
		dprintf(1, "  op %llu: %s\n", (unsigned long long)e->op, e->text);
}

static void dump(struct ctx *c, long page)
{
	uint64_t first = ring_n > RING ? ring_n - RING : 0;
	char buf[256];

	if (page >= 0) {
		dprintf(2, "model around the page:\n");
		for (long i = page - 2; i <= page + 2; i++)
			if (i >= 0 && (size_t)i < c->m.n) {
				model_describe(&c->m, (size_t)i, buf, sizeof(buf));
				dprintf(2, "  %s%s (%p)\n", i == page ? "> " : "  ", buf,
					model_addr(&c->m, (size_t)i));
			}
		dprintf(2, "kernel's VMAs around it (/proc/self/maps):\n");
		kapi_dump_maps(2, (uintptr_t)model_addr(&c->m, page > 8 ? (size_t)page - 8 : 0),
			       (uintptr_t)model_addr(&c->m, (size_t)page + 9 < c->m.n ? (size_t)page + 9 : c->m.n));
		if (hist && (size_t)page < hist_n) {
			dprintf(2, "the last operations logged on p%ld (by page index and object offset):", page);
			for (int k = 0; k < HIST; k++)
				if (hist[page][k])
					dprintf(2, " %llu", (unsigned long long)hist[page][k]);
			dprintf(2, "\n");
		}
	}
	dprintf(2, "last %llu operations (* = touched p%ld):\n",
		(unsigned long long)(ring_n - first), page);
	for (uint64_t k = first; k < ring_n; k++) {
		struct ring_ent *e = &ring[k % RING];

		dprintf(2, " %c op %llu: %s\n", touches(c, e, page) ? '*' : ' ',
			(unsigned long long)e->op, e->text);
	}
}

void fail(struct ctx *c, long page, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dprintf(2, "\n%s: FAIL at op %llu%s, seed %llu: %s\n", c->prog, (unsigned long long)c->op,
		c->in_child ? " (in the child of that fork)" : "", (unsigned long long)c->seed, msg);
	dump(c, page);
	dprintf(2, "%s: replay: %s --seed %llu --ops %llu --arena-mb %zu --full-every %u --trace\n",
		c->prog, c->prog, (unsigned long long)c->seed, (unsigned long long)c->op, c->arena_mb,
		c->full_every);
	if (page >= 0)
		dprintf(2, "%s:   (or --watch %ld instead of --trace: only the operations on that page)\n",
			c->prog, page);
	_exit(1);
}

void report_unexpected_signal(struct ctx *c, int sig, uintptr_t addr, int code)
{
	long page = -1;

	if (addr >= c->m.base && addr < c->m.base + c->m.n * kapi_page)
		page = (long)((addr - c->m.base) / kapi_page);
	fail(c, page, "unexpected %s at %#lx outside any probe", probe_code_name(sig, code),
	     (unsigned long)addr);
}
