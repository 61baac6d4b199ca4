// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guard installation and removal: raw madvise() over any range (holes and
 * VMA boundaries included), and libguard's guard_install()/guard_remove()
 * and batch calls with GUARD_NATIVE (so that a kernel which can't guard a
 * mapping gives an error, not a silent mprotect fallback). None of them
 * may change the number of VMAs.
 */
#include "seq.h"

#include "guard.h"
#include "kapi.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/uio.h>

static void apply(struct ctx *c, size_t lo, size_t hi, bool install)
{
	for (size_t i = lo; i < hi; i++) {
		struct mpage *p = &c->m.pg[i];

		if (p->type == BT_NONE)
			continue;
		if (install && !p->guard)
			model_zap(&c->m, i);	/* the install zaps the range */
		p->guard = install;
	}
}

static int vmas(struct ctx *c)
{
	int n = kapi_vma_count();

	if (n < 0)
		fail(c, -1, "reading /proc/self/maps: %s", kapi_errname(n));
	return n;
}

static void same_vmas(struct ctx *c, int before, const char *what)
{
	int after = vmas(c);

	if (after != before)
		fail(c, (long)c->lo, "%s changed the number of VMAs from %d to %d", what, before, after);
}

static const char *holes_note(struct ctx *c, size_t lo, size_t hi)
{
	return model_hole(&c->m, lo, hi) < hi ? " (with a hole)" : "";
}

void op_guard_raw(struct ctx *c)
{
	bool install = rng_pct(&c->rng, 55);
	size_t lo, hi, stop;
	int before, ret, want;

	pick_range(c, 512, &lo, &hi);
	log_op(c, lo, hi, "madvise(%s) [p%zu, p%zu)%s", install ? "GUARD_INSTALL" : "GUARD_REMOVE",
	       lo, hi, holes_note(c, lo, hi));
	before = vmas(c);
	ret = madvise(model_addr(&c->m, lo), (hi - lo) * kapi_page,
		      install ? MADV_GUARD_INSTALL : MADV_GUARD_REMOVE) ? -errno : 0;
	/*
	 * Over a hole madvise() does every mapped part, then says ENOMEM; at a
	 * locked VMA (installs only) it stops with EINVAL, holes before or not.
	 */
	want = model_hole(&c->m, lo, hi) < hi ? -ENOMEM : 0;
	stop = install ? model_first_locked(&c->m, lo, hi) : hi;
	if (stop < hi) {
		want = -EINVAL;
		c->lk.refused++;
		log_more(c, " (locked at p%zu)", stop);
	}
	apply(c, lo, stop, install);
	expect_ret(c, "madvise", ret, want);
	same_vmas(c, before, "madvise(MADV_GUARD_*)");
}

/*
 * A failed native install of [lo, hi) that stopped at the locked page
 * stop, as guard_install(3) documents it: nothing it did remains (the
 * guards there before stay, no others), the data it discarded (in the
 * VMAs before stop, which the kernel guarded) stays discarded.
 */
static void failed_install(struct ctx *c, size_t lo, size_t stop)
{
	for (size_t i = lo; i < stop; i++)
		if (c->m.pg[i].type != BT_NONE && !c->m.pg[i].guard)
			model_zap(&c->m, i);
}

void op_guard_lib(struct ctx *c)
{
	bool install = rng_pct(&c->rng, 55);
	size_t lo, hi, stop = 0;
	int before, ret, want;

	pick_range(c, 512, &lo, &hi);
	want = model_hole(&c->m, lo, hi) < hi ? -ENOMEM : 0;
	log_op(c, lo, hi, "%s [p%zu, p%zu) GUARD_NATIVE%s", install ? "guard_install" : "guard_remove",
	       lo, hi, holes_note(c, lo, hi));
	before = vmas(c);
	if (install)
		ret = guard_install(model_addr(&c->m, lo), (hi - lo) * kapi_page, GUARD_NATIVE);
	else
		ret = guard_remove(model_addr(&c->m, lo), (hi - lo) * kapi_page, GUARD_NATIVE);
	/* libguard checks for holes first and then does nothing. */
	if (install && !want)
		stop = model_first_locked(&c->m, lo, hi);
	if (install && !want && stop < hi) {
		/* No native guard on a locked VMA: GUARD_NATIVE says EOPNOTSUPP. */
		want = -EOPNOTSUPP;
		c->lk.refused++;
		log_more(c, " (locked at p%zu)", stop);
		failed_install(c, lo, stop);
	} else if (!want) {
		apply(c, lo, hi, install);
	}
	expect_ret(c, install ? "guard_install" : "guard_remove", ret, want);
	same_vmas(c, before, install ? "guard_install" : "guard_remove");
}

void op_guard_batch(struct ctx *c)
{
	bool install = rng_pct(&c->rng, 55);
	struct iovec iov[4];
	size_t lo[4], hi[4], n = 1 + rng_below(&c->rng, 4), done = 99, want_done;
	int before, ret, want = 0;

	for (size_t k = 0; k < n; k++) {
		pick_range(c, 16, &lo[k], &hi[k]);
		hi[k] = model_hole(&c->m, lo[k], hi[k]);	/* hole-free ranges only */
		if (hi[k] == lo[k])
			hi[k] = lo[k] + 1;
	}
	log_op(c, lo[0], hi[0], "%s of %zu:", install ? "guard_install_batch" : "guard_remove_batch", n);
	for (size_t k = 0; k < n; k++)
		log_more(c, " [p%zu, p%zu)", lo[k], hi[k]);
	if (n > 1)
		log_second_range(c, lo[n - 1], hi[n - 1]);
	for (size_t k = 0; k < n; k++) {
		iov[k].iov_base = model_addr(&c->m, lo[k]);
		iov[k].iov_len = (hi[k] - lo[k]) * kapi_page;
		if (c->m.pg[lo[k]].type == BT_NONE) {
			/* A single unmapped page: drop the range rather than predict ENOMEM. */
			iov[k].iov_base = NULL;
		}
	}
	/* Compact out the dropped ranges. */
	{
		size_t m = 0;

		for (size_t k = 0; k < n; k++)
			if (iov[k].iov_base) {
				iov[m] = iov[k];
				lo[m] = lo[k];
				hi[m] = hi[k];
				m++;
			}
		n = m;
	}
	if (!n) {
		log_more(c, " (nothing mapped: skipped)");
		return;
	}
	before = vmas(c);
	if (install)
		ret = guard_install_batch(iov, n, GUARD_NATIVE, &done);
	else
		ret = guard_remove_batch(iov, n, GUARD_NATIVE, &done);
	/*
	 * In order; an install stops at the first range with a locked page
	 * (EOPNOTSUPP, the index in done), which is left as a failed
	 * guard_install() leaves it, the ones after it untouched.
	 */
	want_done = n;
	for (size_t k = 0; k < n; k++) {
		size_t stop = install ? model_first_locked(&c->m, lo[k], hi[k]) : hi[k];

		if (stop < hi[k]) {
			want = -EOPNOTSUPP;
			want_done = k;
			c->lk.refused++;
			log_more(c, " (range %zu locked at p%zu)", k, stop);
			failed_install(c, lo[k], stop);
			break;
		}
		apply(c, lo[k], hi[k], install);
	}
	expect_ret(c, "guard batch", ret, want);
	if (done != want_done)
		fail(c, (long)lo[0], "guard batch set *done to %zu, the model expects %zu", done, want_done);
	same_vmas(c, before, "guard_*_batch");
}
