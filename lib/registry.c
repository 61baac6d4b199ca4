// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What guard_map_file() and guard_stack() mapped, so that guard_unmap()
 * and guard_stack_free() can undo it whole from the address and length
 * the caller knows: a small array under the library's mutex (lock.c).
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static struct lg_reg *regs;
static size_t nregs, capregs;

int lg_reg_add(const struct lg_reg *r)
{
	int ret = 0;

	lg_lock();
	if (nregs == capregs) {
		size_t cap = capregs ? 2 * capregs : 16;
		struct lg_reg *v = realloc(regs, cap * sizeof(*v));

		if (!v)
			ret = -ENOMEM;
		else {
			regs = v;
			capregs = cap;
		}
	}
	if (!ret)
		regs[nregs++] = *r;
	lg_unlock();
	return ret;
}

int lg_reg_take(uintptr_t user, uintptr_t user_end, enum lg_reg_kind kind, struct lg_reg *out)
{
	int ret = -EINVAL;

	lg_lock();
	/* Newest first: the most likely to be freed next. */
	for (size_t i = nregs; i-- > 0;) {
		if (regs[i].user != user || regs[i].kind != kind)
			continue;
		if (regs[i].user_end == user_end) {
			*out = regs[i];
			regs[i] = regs[--nregs];
			ret = 0;
		}
		break;
	}
	lg_unlock();
	return ret;
}

void lg_reg_unmap(const struct lg_reg *r)
{
	munmap((void *)r->start, r->end - r->start);
	lg_fallback_forget(r->start, r->end);
}
