// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The memory operations guards must survive (or, for munmap and mmap
 * over them, must not): writes, mmap/munmap/mremap, mprotect, madvise
 * DONTNEED/FREE/COLD/PAGEOUT/POPULATE_*, THP-sized mappings and
 * MADV_COLLAPSE. Locked VMAs keep their lock through mremap (grown pages
 * inherit it) and lose it to mmap over them.
 */
#include "seq.h"

#include "kapi.h"
#include "probe.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

static bool acc_is(enum acc want, const struct fault *f)
{
	switch (want) {
	case A_OK:
		return !f->sig;
	case A_ACCERR:
		return f->sig == SIGSEGV && f->code == SEGV_ACCERR;
	case A_MAPERR:
		return f->sig == SIGSEGV && f->code == SEGV_MAPERR;
	case A_BUS:
		return f->sig == SIGBUS;
	default:
		return false;
	}
}

/* Write a fresh pattern to each page of [lo, hi) and check how each write fared. */
void op_write_range(struct ctx *c, size_t lo, size_t hi, bool private_only)
{
	struct model *m = &c->m;

	for (size_t i = lo; i < hi; i++) {
		struct mpage *p = &m->pg[i];
		enum acc want = model_access(m, i, true, false);
		uint32_t pat;
		struct fault f;

		if (p->type == BT_NONE || (private_only && btype_shared((enum btype)p->type)))
			continue;
		pat = m->next_pat++;
		probe_fill(model_addr(m, i), kapi_page, pat, &f);
		if (!acc_is(want, &f) || (f.sig && f.addr != (uintptr_t)model_addr(m, i)))
			fail(c, (long)i, "writing p%zu: %s at %#lx, expected %s", i,
			     probe_code_name(f.sig, f.code), (unsigned long)f.addr, acc_name[want]);
		if (f.sig) {
			c->faults_seen++;
			continue;
		}
		if (btype_shared((enum btype)p->type)) {
			m->obj[p->obj].content[p->off] = pat;
		} else {
			p->cs = CS_PRIV;
			p->pat = pat;
		}
	}
}

void op_write(struct ctx *c)
{
	size_t lo, hi;

	pick_range(c, 64, &lo, &hi);
	log_op(c, lo, hi, "write patterns %u.. to [p%zu, p%zu)", c->m.next_pat, lo, hi);
	op_write_range(c, lo, hi, false);
}

/* A file offset for a mapping of len pages of type t: near the file's end often. */
static uint32_t pick_off(struct ctx *c, enum btype t, size_t len)
{
	struct model *m = &c->m;
	enum bfile f = btype_file(t);
	uint32_t size, max = m->cap - (uint32_t)len;

	if (f == F_COUNT)
		return 0;
	size = m->obj[file_obj_of_fd(f)].size;
	if (rng_pct(&c->rng, 40) && size > len / 2) {
		uint32_t o = size - (uint32_t)(len / 2) + (uint32_t)rng_below(&c->rng, len + 1);

		o = o > (uint32_t)len ? o - (uint32_t)len : 0;
		return o > max ? max : o;
	}
	return (uint32_t)rng_below(&c->rng, max + 1);
}

void map_at(struct ctx *c, size_t lo, size_t hi, enum btype t, int prot)
{
	struct model *m = &c->m;
	uint32_t off = pick_off(c, t, hi - lo);
	int obj = -1;
	void *p;

	if (t == BT_SANON) {
		obj = model_new_sanon(m, (uint32_t)(hi - lo));
		off = 0;
		if (obj < 0)
			fail(c, -1, "model: out of shared anonymous objects");
	} else if (btype_file(t) != F_COUNT) {
		obj = file_obj_of_fd(btype_file(t));
	}
	log_more(c, " %s %s off %u", btype_name[t],
		 prot & PROT_WRITE ? "rw" : prot ? "r" : "none", off);
	p = backing_map(&c->b, t, model_addr(m, lo), (hi - lo) * kapi_page, prot,
			(off_t)off * (off_t)kapi_page);
	if (p != model_addr(m, lo))
		fail(c, (long)lo, "mmap %s at p%zu: %s", btype_name[t], lo,
		     p == MAP_FAILED ? strerror(errno) : "mapped elsewhere");
	model_map(m, lo, hi, t, prot, obj, off);
}

void op_mmap(struct ctx *c)
{
	enum btype t = (enum btype)pick_type(c);
	size_t lo, hi;

	pick_range(c, 256, &lo, &hi);
	log_op(c, lo, hi, "mmap MAP_FIXED [p%zu, p%zu)", lo, hi);
	map_at(c, lo, hi, t, pick_prot(c, t));
}

void op_munmap(struct ctx *c)
{
	size_t lo, hi;
	int ret;

	pick_range(c, 128, &lo, &hi);
	log_op(c, lo, hi, "munmap [p%zu, p%zu)", lo, hi);
	ret = munmap(model_addr(&c->m, lo), (hi - lo) * kapi_page) ? -errno : 0;
	model_unmap(&c->m, lo, hi);
	expect_ret(c, "munmap", ret, 0);
}

/* Pages grown onto a mapping by mremap: what the VMA has past its old end. */
static void grown_pages(struct ctx *c, size_t at, const struct mpage *last, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		struct mpage *p = &c->m.pg[at + k];

		*p = *last;
		p->off = last->off + 1 + (uint32_t)k;
		p->guard = 0;
		p->cs = last->type == BT_PANON ? CS_ZERO : CS_FOLLOW;
		p->pat = 0;
	}
}

void op_mremap(struct ctx *c)
{
	struct model *m = &c->m;
	static struct mpage tmp[1 << 16];
	unsigned int mode = (unsigned int)rng_below(&c->rng, 3);
	size_t p, a, b, va, vb, old_len, new_len;
	uintptr_t vs, ve;
	void *r;
	int ret;

	if (!pick_mapped(c, NULL, &p)) {
		log_op(c, 0, 0, "mremap: nothing mapped");
		return;
	}
	/* The kernel's VMA around p: mremap works within one. */
	if (kapi_vma_of((uintptr_t)model_addr(m, p), &vs, &ve))
		fail(c, (long)p, "p%zu is mapped in the model but in no VMA", p);
	va = vs < m->base ? 0 : (vs - m->base) / kapi_page;
	vb = (ve - m->base) / kapi_page;
	if (vb > m->n)
		vb = m->n;
	a = va + rng_below(&c->rng, vb - va);
	b = a + 1 + rng_below(&c->rng, (vb - a) < 64 ? vb - a : 64);
	if (mode == 2 && rng_pct(&c->rng, 70))
		b = vb;		/* grow in place needs the range to end the VMA */
	old_len = b - a;

	if (mode == 0) {
		size_t t;
		int tries;

		new_len = old_len;
		if (rng_pct(&c->rng, 25))
			new_len = old_len + 1 + rng_below(&c->rng, 16);
		else if (rng_pct(&c->rng, 25) && old_len > 1)
			new_len = 1 + rng_below(&c->rng, old_len - 1);
		if (m->pg[a].obj >= 0 && m->pg[a].off + new_len > m->cap)
			new_len = old_len;
		for (tries = 0; tries < 16; tries++) {
			t = rng_below(&c->rng, m->n - new_len + 1);
			if (t + new_len <= a || t >= b)
				break;
		}
		if (tries == 16) {
			log_op(c, a, b, "mremap [p%zu, p%zu): no room to move", a, b);
			return;
		}
		log_op(c, a, b, "mremap [p%zu, p%zu) -> [p%zu, p%zu) MAYMOVE|FIXED", a, b, t,
		       t + new_len);
		log_second_range(c, t, t + new_len);
		r = mremap(model_addr(m, a), old_len * kapi_page, new_len * kapi_page,
			   MREMAP_MAYMOVE | MREMAP_FIXED, model_addr(m, t));
		if (r != model_addr(m, t))
			fail(c, (long)a, "mremap move: %s", r == MAP_FAILED ? strerror(errno) : "moved elsewhere");
		/* The pages go with their guards, contents and protection. */
		memcpy(tmp, &m->pg[a], (old_len < new_len ? old_len : new_len) * sizeof(*tmp));
		model_unmap(m, a, b);
		memcpy(&m->pg[t], tmp, (old_len < new_len ? old_len : new_len) * sizeof(*tmp));
		if (new_len > old_len)
			grown_pages(c, t + old_len, &tmp[old_len - 1], new_len - old_len);
		return;
	}
	if (mode == 1) {
		if (old_len < 2) {
			log_op(c, a, b, "mremap shrink [p%zu, p%zu): too small", a, b);
			return;
		}
		new_len = 1 + rng_below(&c->rng, old_len - 1);
		log_op(c, a, b, "mremap shrink [p%zu, p%zu) to %zu pages", a, b, new_len);
		r = mremap(model_addr(m, a), old_len * kapi_page, new_len * kapi_page, 0);
		if (r != model_addr(m, a))
			fail(c, (long)a, "mremap shrink: %s", r == MAP_FAILED ? strerror(errno) : "moved");
		model_unmap(m, a + new_len, b);
		log_more(c, " -> 0");
		return;
	}
	/* Grow in place, without MAYMOVE: only into free pages after the VMA's end. */
	new_len = old_len + 1 + rng_below(&c->rng, 16);
	if (m->pg[a].obj >= 0 && m->pg[a].off + new_len > m->cap)
		new_len = m->cap - m->pg[a].off;
	if (new_len <= old_len) {
		log_op(c, a, b, "mremap grow [p%zu, p%zu): object full", a, b);
		return;
	}
	log_op(c, a, a + new_len, "mremap grow [p%zu, p%zu) to %zu pages in place", a, b, new_len);
	r = mremap(model_addr(m, a), old_len * kapi_page, new_len * kapi_page, 0);
	ret = r == MAP_FAILED ? -errno : 0;
	if (!ret && r != model_addr(m, a))
		fail(c, (long)a, "mremap without MAYMOVE moved the mapping");
	{
		bool fits = b == vb && a + new_len <= m->n;

		for (size_t k = b; fits && k < a + new_len; k++)
			fits = m->pg[k].type == BT_NONE;

		if (fits)
			grown_pages(c, b, &m->pg[b - 1], new_len - old_len);
		expect_ret(c, "mremap grow", ret, fits ? 0 : -ENOMEM);
	}
}

void op_mprotect(struct ctx *c)
{
	struct model *m = &c->m;
	size_t lo, hi, stop;
	int prot = (int)rng_below(&c->rng, 3), want = 0, ret;

	prot = prot == 0 ? PROT_NONE : prot == 1 ? PROT_READ : PROT_READ | PROT_WRITE;
	pick_range(c, 256, &lo, &hi);
	hi = model_hole(m, lo, hi);	/* mprotect() stops at a hole with ENOMEM */
	if (hi == lo) {
		log_op(c, lo, lo, "mprotect: p%zu not mapped", lo);
		return;
	}
	log_op(c, lo, hi, "mprotect [p%zu, p%zu) %s", lo, hi,
	       prot & PROT_WRITE ? "rw" : prot ? "r" : "none");
	/* A read-only file can't be made writable: EACCES at its first VMA. */
	stop = hi;
	if (prot & PROT_WRITE)
		for (size_t i = lo; i < hi; i++)
			if (btype_readonly((enum btype)m->pg[i].type)) {
				stop = i;
				want = -EACCES;
				break;
			}
	ret = mprotect(model_addr(m, lo), (hi - lo) * kapi_page, prot) ? -errno : 0;
	for (size_t i = lo; i < stop; i++)
		m->pg[i].prot = (uint8_t)prot;
	expect_ret(c, "mprotect", ret, want);
}

static void op_madvise_plain(struct ctx *c, int advice, const char *name, bool zap)
{
	size_t lo, hi, stop;
	int ret, want;

	pick_range(c, 512, &lo, &hi);
	log_op(c, lo, hi, "madvise(%s) [p%zu, p%zu)", name, lo, hi);
	ret = madvise(model_addr(&c->m, lo), (hi - lo) * kapi_page, advice) ? -errno : 0;
	want = model_hole(&c->m, lo, hi) < hi ? -ENOMEM : 0;
	/* None of them on a locked VMA: EINVAL there, the VMAs before it done. */
	stop = model_first_locked(&c->m, lo, hi);
	if (stop < hi) {
		want = -EINVAL;
		c->lk.refused++;
		log_more(c, " (locked at p%zu)", stop);
	}
	if (zap)
		for (size_t i = lo; i < stop; i++)
			model_zap(&c->m, i);	/* guards stay */
	expect_ret(c, name, ret, want);
}

void op_dontneed(struct ctx *c)
{
	op_madvise_plain(c, MADV_DONTNEED, "DONTNEED", true);
}

void op_cold(struct ctx *c)
{
	op_madvise_plain(c, MADV_COLD, "COLD", false);
}

void op_pageout(struct ctx *c)
{
	op_madvise_plain(c, MADV_PAGEOUT, "PAGEOUT", false);
}

static bool is_panon(const struct mpage *p)
{
	return p->type == BT_PANON;
}

void op_free(struct ctx *c)
{
	size_t i, lo, hi, stop;
	int ret;

	if (!pick_mapped(c, is_panon, &i)) {
		log_op(c, 0, 0, "madvise(FREE): no private anon page");
		return;
	}
	grow_run(c, i, is_panon, 512, &lo, &hi);
	log_op(c, lo, hi, "madvise(FREE) [p%zu, p%zu)", lo, hi);
	ret = madvise(model_addr(&c->m, lo), (hi - lo) * kapi_page, MADV_FREE) ? -errno : 0;
	stop = model_first_locked(&c->m, lo, hi);	/* EINVAL there */
	if (stop < hi) {
		c->lk.refused++;
		log_more(c, " (locked at p%zu)", stop);
	}
	/* Reclaim may drop a freed page until it is written again. */
	for (size_t k = lo; k < stop; k++)
		if (c->m.pg[k].cs == CS_PRIV)
			c->m.pg[k].cs = CS_EITHER;
	expect_ret(c, "MADV_FREE", ret, stop < hi ? -EINVAL : 0);
}

void op_populate(struct ctx *c)
{
	struct model *m = &c->m;
	bool write = rng_pct(&c->rng, 50);
	size_t lo, hi, i;
	int ret, want = 0;

	pick_range(c, 256, &lo, &hi);
	hi = model_hole(m, lo, hi);
	if (hi == lo) {
		log_op(c, lo, lo, "populate: p%zu not mapped", lo);
		return;
	}
	log_op(c, lo, hi, "madvise(POPULATE_%s) [p%zu, p%zu)", write ? "WRITE" : "READ", lo, hi);
	ret = madvise(model_addr(m, lo), (hi - lo) * kapi_page,
		      write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) ? -errno : 0;
	/*
	 * Page by page: a VMA without the permission gives EINVAL, a fault
	 * that would raise SIGSEGV (a guard) or SIGBUS (past EOF) EFAULT;
	 * the pages before it are populated, which for a write breaks the
	 * copy-on-write of private file pages.
	 */
	for (i = lo; i < hi; i++) {
		enum acc a = model_access(m, i, write, false);

		if (a == A_ACCERR) {
			want = -EINVAL;
			break;
		}
		if (a != A_OK) {
			want = -EFAULT;
			break;
		}
		if (write && !btype_shared((enum btype)m->pg[i].type) &&
		    m->pg[i].cs == CS_FOLLOW) {
			m->pg[i].cs = CS_PRIV;
			m->pg[i].pat = m->obj[m->pg[i].obj].content[m->pg[i].off];
		}
	}
	if (i < hi)
		log_more(c, " (stops at p%zu)", i);
	expect_ret(c, "MADV_POPULATE", ret, want);
}

void op_thp(struct ctx *c)
{
	struct model *m = &c->m;
	size_t lo, hi;
	enum btype t = rng_pct(&c->rng, 75) || !c->caps.type_ok[BT_SANON] ? BT_PANON : BT_SANON;
	int ret;

	if (m->n < 512) {
		log_op(c, 0, 0, "thp: arena too small");
		return;
	}
	lo = rng_below(&c->rng, m->n / 512) * 512;
	hi = lo + 512;
	log_op(c, lo, hi, "THP: mmap [p%zu, p%zu)", lo, hi);
	map_at(c, lo, hi, t, PROT_READ | PROT_WRITE);
	ret = madvise(model_addr(m, lo), 512 * kapi_page, MADV_HUGEPAGE) ? -errno : 0;
	log_more(c, ", MADV_HUGEPAGE -> %s, fill", kapi_errname(ret));
	op_write_range(c, lo, hi, false);
	if (rng_pct(&c->rng, 50)) {
		ret = madvise(model_addr(m, lo), 512 * kapi_page, MADV_COLLAPSE) ? -errno : 0;
		log_more(c, ", MADV_COLLAPSE -> %s", kapi_errname(ret));
	}
	/* The next operations prefer this window: guards into a huge page. */
	c->focus_lo = lo;
	c->focus_hi = hi;
	c->focus_left = 8;
}

void op_collapse(struct ctx *c)
{
	size_t lo, hi;
	int ret;

	if (c->m.n < 512) {
		log_op(c, 0, 0, "collapse: arena too small");
		return;
	}
	lo = rng_below(&c->rng, c->m.n / 512) * 512;
	hi = lo + 512;
	log_op(c, lo, hi, "madvise(COLLAPSE) [p%zu, p%zu)", lo, hi);
	/* Whether it collapses depends on the pages; it must change nothing visible. */
	ret = madvise(model_addr(&c->m, lo), 512 * kapi_page, MADV_COLLAPSE) ? -errno : 0;
	log_more(c, " -> %s", kapi_errname(ret));
}
