// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Choosing the next operation and what it works on. Every choice comes
 * from the seeded generator and from the model, never from what the
 * kernel answered, so that a seed and an operation count replay a run
 * exactly (the one exception, mremap's VMA, is itself a deterministic
 * consequence of the operations before it).
 */
#include "seq.h"

#include "kapi.h"

#include <sys/mman.h>

static bool have_mlock(const struct ctx *c)
{
	return c->caps.mlock;
}

static bool have_uffd(const struct ctx *c)
{
	return c->caps.uffd;
}

static const struct {
	const char *name;
	unsigned int weight;
	void (*fn)(struct ctx *c);
	bool (*avail)(const struct ctx *c);	/* NULL: always */
} ops[] = {
	{ "guard-raw", 200, op_guard_raw, NULL },
	{ "guard-lib", 70, op_guard_lib, NULL },
	{ "guard-batch", 25, op_guard_batch, NULL },
	{ "write", 130, op_write, NULL },
	{ "pwrite", 30, op_pwrite, NULL },
	{ "mmap", 45, op_mmap, NULL },
	{ "munmap", 20, op_munmap, NULL },
	{ "mremap", 50, op_mremap, NULL },
	{ "mprotect", 60, op_mprotect, NULL },
	{ "dontneed", 50, op_dontneed, NULL },
	{ "cold", 12, op_cold, NULL },
	{ "pageout", 25, op_pageout, NULL },
	{ "free", 30, op_free, NULL },
	{ "populate", 40, op_populate, NULL },
	{ "thp", 10, op_thp, NULL },
	{ "collapse", 12, op_collapse, NULL },
	{ "truncate", 25, op_truncate, NULL },
	{ "punch", 25, op_punch, NULL },
	{ "madv-remove", 20, op_madv_remove, NULL },
	{ "fork", 6, op_fork, NULL },
	{ "mlock", 20, op_mlock, have_mlock },
	{ "munlock", 18, op_munlock, have_mlock },
	{ "uffd", 25, op_uffd, have_uffd },
};

int ops_count(void)
{
	return (int)(sizeof(ops) / sizeof(ops[0]));
}

const char *ops_name(int i)
{
	return ops[i].name;
}

void ops_run_one(struct ctx *c)
{
	unsigned int total = 0, r;
	unsigned long refused;
	int i;

	/* What the kernel can't do is never chosen (caps, fixed for the run). */
	for (i = 0; i < ops_count(); i++)
		if (!ops[i].avail || ops[i].avail(c))
			total += ops[i].weight;
	r = (unsigned int)rng_below(&c->rng, total);
	for (i = 0;; i++) {
		if (ops[i].avail && !ops[i].avail(c))
			continue;
		if (r < ops[i].weight)
			break;
		r -= ops[i].weight;
	}
	c->stat_ops[i]++;
	refused = c->lk.refused;
	ops[i].fn(c);
	c->lk.refused_by[i] += c->lk.refused - refused;
	log_done(c);
}

/* The first page after p where a VMA may end, or p if none. */
static size_t next_boundary(const struct model *m, size_t p)
{
	for (size_t i = p + 1; i < m->n; i++)
		if (model_boundary(m, i))
			return i;
	return p;
}

void pick_range(struct ctx *c, size_t maxlen, size_t *lo, size_t *hi)
{
	struct model *m = &c->m;
	unsigned int r = (unsigned int)rng_below(&c->rng, 100);
	size_t len, start;

	if (maxlen > m->n)
		maxlen = m->n;
	if (c->focus_left > 0 && r < 50) {
		size_t w = c->focus_hi - c->focus_lo;

		c->focus_left--;
		start = c->focus_lo + rng_below(&c->rng, w);
		len = 1 + rng_below(&c->rng, c->focus_hi - start);
		*lo = start;
		*hi = start + (len < maxlen ? len : maxlen);
		return;
	}
	if (r >= 92 && maxlen >= 512 && m->n >= 512) {
		/* THP-sized and aligned: the arena is 2 MiB aligned. */
		*lo = rng_below(&c->rng, m->n / 512) * 512;
		*hi = *lo + 512;
		return;
	}
	if (r < 30)
		len = 1;
	else if (r < 70)
		len = 2 + rng_below(&c->rng, 15);
	else
		len = 17 + rng_below(&c->rng, 112);
	if (len > maxlen)
		len = maxlen;
	if (rng_pct(&c->rng, 35)) {
		/* Across a place where one VMA may end and the next begin. */
		size_t b = next_boundary(m, rng_below(&c->rng, m->n));

		start = b >= len ? b - rng_below(&c->rng, len) : 0;
		if (len > 1 && start == b)
			start--;
	} else {
		start = rng_below(&c->rng, m->n - len + 1);
	}
	if (start + len > m->n)
		start = m->n - len;
	*lo = start;
	*hi = start + len;
}

bool pick_mapped(struct ctx *c, bool (*ok)(const struct mpage *p), size_t *i)
{
	for (int tries = 0; tries < 16; tries++) {
		size_t p = rng_below(&c->rng, c->m.n);

		if (c->m.pg[p].type != BT_NONE && (!ok || ok(&c->m.pg[p]))) {
			*i = p;
			return true;
		}
	}
	return false;
}

void grow_run(struct ctx *c, size_t i, bool (*ok)(const struct mpage *p), size_t maxlen,
	      size_t *lo, size_t *hi)
{
	size_t a = i, b = i + 1, len;

	while (a > 0 && c->m.pg[a - 1].type != BT_NONE && ok(&c->m.pg[a - 1]) && i - a < maxlen)
		a--;
	while (b < c->m.n && c->m.pg[b].type != BT_NONE && ok(&c->m.pg[b]) && b - i < maxlen)
		b++;
	/* A random sub-run containing i. */
	*lo = a + rng_below(&c->rng, i - a + 1);
	len = 1 + rng_below(&c->rng, b - *lo);
	if (len > maxlen)
		len = maxlen;
	if (*lo + len <= i)
		len = i - *lo + 1;
	*hi = *lo + len;
}

int pick_type(struct ctx *c)
{
	return c->types[rng_below(&c->rng, (uint64_t)c->ntypes)];
}

int pick_prot(struct ctx *c, enum btype t)
{
	unsigned int r = (unsigned int)rng_below(&c->rng, 100);

	if (r < 15)
		return PROT_NONE;
	if (r < 30 || btype_readonly(t))
		return PROT_READ;
	return PROT_READ | PROT_WRITE;
}

int file_obj_of_fd(enum bfile f)
{
	return (int)f;		/* objects 0 .. F_COUNT - 1 are the files, in order */
}
