// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * mlock and munlock: VM_LOCKED VMAs refuse guards (and DONTNEED, FREE,
 * COLD, PAGEOUT, REMOVE), which every other operation must predict. Mostly
 * mlock2(MLOCK_ONFAULT), which populates nothing (the VM runs us in
 * 48 MiB); sometimes plain mlock(), which populates and says ENOMEM where
 * that faults (a guard, PROT_NONE, past EOF), the range locked all the
 * same. At most MAX_LOCKED pages are locked at any time.
 */
#include "seq.h"

#include "kapi.h"

#include <errno.h>
#include <sys/mman.h>

static bool is_locked(const struct mpage *p)
{
	return p->locked != LK_NONE;
}

/*
 * Plain mlock() populates with FOLL_WRITE in a writable private mapping,
 * which copies private file pages: not for those (the copy would depend
 * on where populating stops, VMA by VMA, and so would mprotect's and
 * mremap's populating of a locked VMA later).
 */
static bool plain_ok(const struct model *m, size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++)
		if (m->pg[i].type == BT_PRIV || m->pg[i].type == BT_PRIV_SHM)
			return false;
	return true;
}

void op_mlock(struct ctx *c)
{
	struct model *m = &c->m;
	bool plain = rng_pct(&c->rng, 30);
	size_t lo, hi, h, nlocked = model_locked_pages(m);
	int ret, want = 0;

	pick_range(c, plain ? 64 : 256, &lo, &hi);
	if (nlocked + (hi - lo) > MAX_LOCKED) {
		log_op(c, lo, lo, "mlock [p%zu, p%zu): %zu pages locked already, skipped", lo, hi,
		       nlocked);
		return;
	}
	if (plain && !plain_ok(m, lo, hi))
		plain = false;
	log_op(c, lo, hi, "%s [p%zu, p%zu)", plain ? "mlock" : "mlock2(MLOCK_ONFAULT)", lo, hi);
	ret = (plain ? mlock(model_addr(m, lo), (hi - lo) * kapi_page)
		     : mlock2(model_addr(m, lo), (hi - lo) * kapi_page, MLOCK_ONFAULT)) ? -errno : 0;
	/* The VMAs up to a hole are locked, then ENOMEM, nothing populated. */
	h = model_hole(m, lo, hi);
	for (size_t i = lo; i < h; i++)
		m->pg[i].locked = plain ? LK_PLAIN : LK_ONFAULT;
	if (h < hi) {
		want = -ENOMEM;
		log_more(c, " (hole at p%zu)", h);
	} else if (plain) {
		/* Populating stops at a fault, which __mlock_posix_error_return() makes ENOMEM. */
		for (size_t i = lo; i < hi; i++)
			if (model_access(m, i, false, false) != A_OK) {
				want = -ENOMEM;
				log_more(c, " (p%zu faults)", i);
				break;
			}
		c->lk.mlock_plain++;
		c->lk.mlock_enomem += want != 0;
	}
	expect_ret(c, plain ? "mlock" : "mlock2", ret, want);
}

void op_munlock(struct ctx *c)
{
	struct model *m = &c->m;
	size_t i, lo, hi, h;
	int ret;

	/* Half of the time a locked run, or there would be little to undo. */
	if (rng_pct(&c->rng, 50) && pick_mapped(c, is_locked, &i))
		grow_run(c, i, is_locked, 256, &lo, &hi);
	else
		pick_range(c, 256, &lo, &hi);
	log_op(c, lo, hi, "munlock [p%zu, p%zu)", lo, hi);
	ret = munlock(model_addr(m, lo), (hi - lo) * kapi_page) ? -errno : 0;
	h = model_hole(m, lo, hi);
	for (size_t k = lo; k < h; k++)
		m->pg[k].locked = LK_NONE;
	expect_ret(c, "munlock", ret, h < hi ? -ENOMEM : 0);
}
