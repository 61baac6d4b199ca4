// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target: the program-header parser behind guard_elf_segments() and
 * the audit module. The input is taken both as an ELF file's first bytes
 * (lg_elf_parse(), as the audit module reads a mapped header) and as a
 * bare program-header table (lg_elf_loads(), as dl_iterate_phdr() gives
 * it), for 4 KiB and 64 KiB pages. Whatever is accepted must describe
 * segments that guard_elf_segments() can act on without arithmetic
 * wrapping: ascending, non-overlapping, every end representable, and every
 * hole inside the object's extent. A violation aborts, so libFuzzer (or
 * the corpus replay) reports it.
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "fuzz.h"

static void check_loads(const struct lg_loads *l, size_t page)
{
	struct lg_run holes[LG_ELF_MAX_LOADS];
	uint64_t lo, hi;
	size_t n;

	CHECK(l->n >= 1 && l->n <= LG_ELF_MAX_LOADS);
	for (size_t i = 0; i < l->n; i++) {
		const struct lg_load *s = &l->v[i];

		CHECK(s->memsz && s->filesz <= s->memsz);
		/* the page-rounded end, as lg_elf_holes() computes it, must not wrap */
		CHECK(s->vaddr + s->memsz > s->vaddr);
		CHECK(s->vaddr + s->memsz + page - 1 > s->vaddr + s->memsz);
		CHECK(s->offset + s->filesz >= s->offset);
		CHECK(((s->vaddr - s->offset) & (page - 1)) == 0);
		if (i)
			CHECK(s->vaddr >= l->v[i - 1].vaddr + l->v[i - 1].memsz);
	}
	lo = l->v[0].vaddr & ~(uint64_t)(page - 1);
	hi = (l->v[l->n - 1].vaddr + l->v[l->n - 1].memsz + page - 1) & ~(uint64_t)(page - 1);
	n = lg_elf_holes(l, page, holes, LG_ELF_MAX_LOADS);
	CHECK(n < l->n);
	for (size_t i = 0; i < n; i++) {
		CHECK(holes[i].start < holes[i].end);
		CHECK(!(holes[i].start & (page - 1)) && !(holes[i].end & (page - 1)));
		CHECK(holes[i].start >= lo && holes[i].end <= hi);
		if (i)
			CHECK(holes[i].start >= holes[i - 1].end);
	}
}

static void one(const uint8_t *data, size_t size, size_t page)
{
	struct lg_loads loads;
	int ret;

	ret = lg_elf_parse(data, size, page, &loads);
	CHECK(ret == 0 || ret == -ENOEXEC);
	if (!ret)
		check_loads(&loads, page);
	ret = lg_elf_loads(size >= sizeof(Elf64_Phdr) ? data : NULL, size / sizeof(Elf64_Phdr),
			   page, &loads);
	CHECK(ret == 0 || ret == -ENOEXEC);
	if (!ret)
		check_loads(&loads, page);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(data, size, 4096);
	one(data, size, 65536);
	return 0;
}
