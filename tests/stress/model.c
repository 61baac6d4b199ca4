// SPDX-License-Identifier: LGPL-2.1-or-later
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

const char *const acc_name[] = {
	[A_OK] = "readable", [A_UNMAPPED] = "unmapped", [A_ACCERR] = "SEGV_ACCERR",
	[A_MAPERR] = "SEGV_MAPERR", [A_BUS] = "SIGBUS",
};

int model_init(struct model *m, uintptr_t base, size_t n)
{
	memset(m, 0, sizeof(*m));
	m->base = base;
	m->n = n;
	m->cap = (uint32_t)n;
	m->pg = calloc(n, sizeof(*m->pg));
	if (!m->pg)
		return -1;
	for (size_t i = 0; i < n; i++)
		m->pg[i].type = BT_NONE;
	for (int o = 0; o < MAX_OBJ; o++) {
		m->obj[o].content = calloc(m->cap, sizeof(uint32_t));
		if (!m->obj[o].content)
			return -1;
	}
	for (int o = 0; o < F_COUNT; o++)
		m->obj[o].live = true;
	m->next_pat = 1;
	return 0;
}

static bool page_private(const struct mpage *p)
{
	return !btype_shared((enum btype)p->type);
}

/* Does page p show its object (as opposed to a private copy or anon)? */
static bool page_follows(const struct mpage *p)
{
	return p->obj >= 0 && (!page_private(p) || p->cs == CS_FOLLOW);
}

enum acc model_access(const struct model *m, size_t i, bool write, bool force)
{
	const struct mpage *p = &m->pg[i];

	if (p->type == BT_NONE)
		return A_UNMAPPED;
	if (!force && !(p->prot & (write ? PROT_WRITE : PROT_READ)))
		return A_ACCERR;
	if (p->guard)
		return A_MAPERR;
	if (page_follows(p) && p->off >= m->obj[p->obj].size)
		return A_BUS;
	return A_OK;
}

void model_content(const struct model *m, size_t i, uint32_t *pat, bool *either)
{
	const struct mpage *p = &m->pg[i];

	*either = false;
	if (page_follows(p)) {
		*pat = m->obj[p->obj].content[p->off];
		return;
	}
	switch (p->cs) {
	case CS_PRIV:
		*pat = p->pat;
		break;
	case CS_EITHER:
		*pat = p->pat;
		*either = true;
		break;
	default:
		*pat = 0;
	}
}

void model_map(struct model *m, size_t lo, size_t hi, enum btype t, int prot, int obj,
	       uint32_t off)
{
	for (size_t i = lo; i < hi; i++) {
		struct mpage *p = &m->pg[i];

		p->type = (uint8_t)t;
		p->prot = (uint8_t)prot;
		p->guard = 0;
		p->locked = LK_NONE;	/* a new mapping is never locked: no MAP_LOCKED, no MCL_FUTURE */
		p->cs = t == BT_PANON ? CS_ZERO : CS_FOLLOW;
		p->obj = (int16_t)obj;
		p->off = off + (uint32_t)(i - lo);
		p->pat = 0;
	}
}

void model_unmap(struct model *m, size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++) {
		memset(&m->pg[i], 0, sizeof(m->pg[i]));
		m->pg[i].type = BT_NONE;
		m->pg[i].obj = -1;
	}
}

void model_zap(struct model *m, size_t i)
{
	struct mpage *p = &m->pg[i];

	if (p->type == BT_NONE || !page_private(p))
		return;
	p->cs = p->type == BT_PANON ? CS_ZERO : CS_FOLLOW;
	p->pat = 0;
}

size_t model_hole(const struct model *m, size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++)
		if (m->pg[i].type == BT_NONE)
			return i;
	return hi;
}

size_t model_first_locked(const struct model *m, size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++)
		if (m->pg[i].type != BT_NONE && m->pg[i].locked)
			return i;
	return hi;
}

size_t model_locked_pages(const struct model *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++)
		n += m->pg[i].type != BT_NONE && m->pg[i].locked;
	return n;
}

bool model_boundary(const struct model *m, size_t i)
{
	const struct mpage *a, *b;

	if (i == 0 || i >= m->n)
		return false;
	a = &m->pg[i - 1];
	b = &m->pg[i];
	return a->type != b->type || a->obj != b->obj || a->off + 1 != b->off || a->prot != b->prot ||
	       a->locked != b->locked;
}

void model_truncate(struct model *m, int o, uint32_t size)
{
	struct mobj *ob = &m->obj[o];

	for (uint32_t k = size; k < ob->size; k++)
		ob->content[k] = 0;
	/* Truncation unmaps private copies past the new end too (even_cows). */
	for (size_t i = 0; i < m->n; i++) {
		struct mpage *p = &m->pg[i];

		if (p->obj == o && page_private(p) && p->off >= size && p->cs == CS_PRIV) {
			p->cs = CS_FOLLOW;
			p->pat = 0;
		}
	}
	ob->size = size;
}

void model_punch(struct model *m, int o, uint32_t first, uint32_t n)
{
	struct mobj *ob = &m->obj[o];

	/* A hole punch keeps private copies (no even_cows). */
	for (uint32_t k = first; k < first + n && k < ob->size; k++)
		ob->content[k] = 0;
}

int model_new_sanon(struct model *m, uint32_t size)
{
	for (int pass = 0; pass < 2; pass++) {
		for (int o = F_COUNT; o < MAX_OBJ; o++) {
			if (m->obj[o].live)
				continue;
			m->obj[o].live = true;
			m->obj[o].punch = true;
			m->obj[o].size = size;
			memset(m->obj[o].content, 0, m->cap * sizeof(uint32_t));
			return o;
		}
		/* Free the objects no page maps any more, and look again. */
		for (int o = F_COUNT; o < MAX_OBJ; o++)
			m->obj[o].live = false;
		for (size_t i = 0; i < m->n; i++)
			if (m->pg[i].obj >= F_COUNT)
				m->obj[m->pg[i].obj].live = true;
	}
	return -1;
}

void model_describe(const struct model *m, size_t i, char *buf, size_t len)
{
	static const char *const cs_name[] = { "follows-object", "zero", "private-copy", "freed" };
	static const char *const lk_name[] = { "", " locked-onfault", " locked" };
	const struct mpage *p = &m->pg[i];
	uint32_t pat;
	bool either;
	int n;

	if (p->type == BT_NONE) {
		snprintf(buf, len, "p%zu: not mapped", i);
		return;
	}
	model_content(m, i, &pat, &either);
	n = snprintf(buf, len, "p%zu: %s %s%s%s%s%s", i, btype_name[p->type],
		     p->prot & PROT_WRITE ? "rw" : p->prot & PROT_READ ? "r" : "none",
		     p->guard ? " GUARDED" : "", lk_name[p->locked], page_private(p) ? " " : "",
		     page_private(p) ? cs_name[p->cs] : "");
	if (p->obj >= 0)
		n += snprintf(buf + n, len - (size_t)n, " obj %d off %u (size %u)", p->obj, p->off,
			      m->obj[p->obj].size);
	snprintf(buf + n, len - (size_t)n, ": expect %s, content pat %u%s", acc_name[model_access(m, i, false, false)],
		 pat, either ? " or zero" : "");
}
