// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Operations on the objects behind the mappings: write(2) into a file,
 * truncation (past EOF an unguarded page raises SIGBUS, a guarded one
 * still SIGSEGV), hole punching and MADV_REMOVE (shared pages read zero,
 * private copies stay, guards stay; a locked VMA refuses MADV_REMOVE).
 */
#include "seq.h"

#include "kapi.h"
#include "pattern.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif

static const char *const file_name[F_COUNT] = { "file", "tmpfs", "memfd" };

static enum bfile pick_file(struct ctx *c)
{
	return (enum bfile)rng_below(&c->rng, F_COUNT);
}

/*
 * A page offset of file f: half of the time one that some page of the
 * arena maps, a private copy if one is found (so the operation meets
 * mappings, private copies and guards), else uniform in [0, limit).
 */
static uint32_t pick_file_off(struct ctx *c, enum bfile f, uint32_t limit)
{
	int o = file_obj_of_fd(f);

	if (rng_pct(&c->rng, 50))
		for (int tries = 0; tries < 64; tries++) {
			const struct mpage *p = &c->m.pg[rng_below(&c->rng, c->m.n)];

			/* Private copies first: what a zap must not drop, or must. */
			if (p->type != BT_NONE && p->obj == o && p->off < limit &&
			    (tries >= 32 || (!btype_shared((enum btype)p->type) && p->cs == CS_PRIV)))
				return p->off;
		}
	return limit ? (uint32_t)rng_below(&c->rng, limit) : 0;
}

void op_pwrite(struct ctx *c)
{
	struct model *m = &c->m;
	enum bfile f = pick_file(c);
	struct mobj *ob = &m->obj[file_obj_of_fd(f)];
	uint32_t first = pick_file_off(c, f, ob->size + 8 < m->cap ? ob->size + 8 : m->cap);
	uint32_t n = 1 + (uint32_t)rng_below(&c->rng, 8);
	static uint64_t buf[8 * 4096 / 8];

	if (first + n > m->cap)
		n = m->cap - first;
	log_op(c, 0, 0, "pwrite %s pages [%u, %u) patterns %u..", file_name[f], first, first + n,
	       m->next_pat);
	log_object(c, file_obj_of_fd(f), first, first + n);
	for (uint32_t k = 0; k < n; k++)
		pattern_fill((char *)buf + k * kapi_page, kapi_page, m->next_pat + k);
	if (pwrite(c->b.fd[f], buf, n * kapi_page, (off_t)first * (off_t)kapi_page) !=
	    (ssize_t)(n * kapi_page))
		fail(c, -1, "pwrite %s: %s", file_name[f], strerror(errno));
	for (uint32_t k = 0; k < n; k++)
		ob->content[first + k] = m->next_pat++;
	if (first + n > ob->size)
		ob->size = first + n;	/* the gap before first reads zero */
}

void op_truncate(struct ctx *c)
{
	struct model *m = &c->m;
	enum bfile f = pick_file(c);
	struct mobj *ob = &m->obj[file_obj_of_fd(f)];
	uint32_t size;

	if (rng_pct(&c->rng, 35)) {
		size = (uint32_t)rng_below(&c->rng, m->cap + 1);
	} else if (rng_pct(&c->rng, 50)) {
		size = pick_file_off(c, f, m->cap);
	} else {
		int64_t s = (int64_t)ob->size + (int64_t)rng_below(&c->rng, 33) - 16;

		size = s < 0 ? 0 : s > m->cap ? m->cap : (uint32_t)s;
	}
	log_op(c, 0, 0, "ftruncate %s from %u to %u pages", file_name[f], ob->size, size);
	log_object(c, file_obj_of_fd(f), size < ob->size ? size : ob->size,
		   size < ob->size ? ob->size : size);
	if (ftruncate(c->b.fd[f], (off_t)size * (off_t)kapi_page))
		fail(c, -1, "ftruncate %s: %s", file_name[f], strerror(errno));
	model_truncate(m, file_obj_of_fd(f), size);
	/* Sample the pages that map the truncated part. */
	for (size_t i = 0; i < m->n; i++)
		if (m->pg[i].obj == file_obj_of_fd(f) && m->pg[i].off >= size) {
			c->lo = i;
			c->hi = i + 1;
			while (c->hi < m->n && m->pg[c->hi].obj == m->pg[i].obj && c->hi - i < 64)
				c->hi++;
			break;
		}
}

void op_punch(struct ctx *c)
{
	struct model *m = &c->m;
	enum bfile f = pick_file(c);
	int o = file_obj_of_fd(f);
	struct mobj *ob = &m->obj[o];
	uint32_t first = pick_file_off(c, f, ob->size + 1);
	uint32_t n = 1 + (uint32_t)rng_below(&c->rng, 16);

	log_op(c, 0, 0, "fallocate(PUNCH_HOLE) %s pages [%u, %u)", file_name[f], first, first + n);
	log_object(c, o, first, first + n);
	if (!ob->punch) {
		log_more(c, ": not supported here, skipped");
		return;
	}
	if (fallocate(c->b.fd[f], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)first * (off_t)kapi_page, (off_t)n * (off_t)kapi_page))
		fail(c, -1, "fallocate(PUNCH_HOLE) %s: %s", file_name[f], strerror(errno));
	model_punch(m, o, first, n);
}

static bool removable(const struct mpage *p)
{
	return (p->type == BT_SANON || p->type == BT_MEMFD || p->type == BT_TMPFS ||
		p->type == BT_EXT4) && (p->prot & PROT_WRITE);
}

static bool is_ro(const struct mpage *p)
{
	return p->type == BT_RO;
}

void op_madv_remove(struct ctx *c)
{
	struct model *m = &c->m;
	bool refused = rng_pct(&c->rng, 15);
	size_t i, lo, hi, stop;
	int ret;

	if (!pick_mapped(c, refused ? is_ro : removable, &i)) {
		log_op(c, 0, 0, "madvise(REMOVE): no %s mapping", refused ? "read-only" : "shared writable");
		return;
	}
	grow_run(c, i, refused ? is_ro : removable, 64, &lo, &hi);
	/* One object only: the run may span two mappings of different files. */
	for (size_t k = lo + 1; k < hi; k++)
		if (m->pg[k].obj != m->pg[lo].obj) {
			hi = k;
			break;
		}
	if (!m->obj[m->pg[lo].obj].punch && !refused) {
		log_op(c, lo, hi, "madvise(REMOVE) [p%zu, p%zu): no hole punch here, skipped", lo, hi);
		return;
	}
	log_op(c, lo, hi, "madvise(REMOVE) [p%zu, p%zu) of %s", lo, hi, btype_name[m->pg[lo].type]);
	ret = madvise(model_addr(m, lo), (hi - lo) * kapi_page, MADV_REMOVE) ? -errno : 0;
	/* A locked VMA refuses it (EINVAL) before anything else is looked at. */
	stop = model_first_locked(m, lo, hi);
	if (stop < hi) {
		c->lk.refused += !refused || stop == lo;	/* the lock decided the answer */
		log_more(c, " (locked at p%zu)", stop);
	}
	if (refused) {
		/* It needs a shared, writable mapping: EACCES at the first VMA. */
		expect_ret(c, "MADV_REMOVE", ret, stop == lo ? -EINVAL : -EACCES);
		return;
	}
	for (size_t k = lo; k < stop; k++)
		model_punch(m, m->pg[k].obj, m->pg[k].off, 1);
	expect_ret(c, "MADV_REMOVE", ret, stop < hi ? -EINVAL : 0);
}
