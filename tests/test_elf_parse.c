// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The program-header parser behind guard_elf_segments(), fed the header of
 * a real library, every truncation of it, and (from fixed seeds) random
 * and mutated headers and tables: a corrupt header gives -ENOEXEC, never a
 * crash or an out-of-bounds read (each input sits at the end of its own
 * mapping, right before an inaccessible page), and whatever it accepts is
 * sane.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

static size_t page;
static unsigned char *window;	/* 2 pages: data in the first, the second PROT_NONE */

/* Copy len bytes so that they end where the inaccessible page begins. */
static const unsigned char *at_edge(const void *buf, size_t len)
{
	unsigned char *p = window + page - len;

	assert_true(len <= page);
	memcpy(p, buf, len);
	return p;
}

static uint64_t rng;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned char image[4096];
static size_t image_len;

static int setup(void **state)
{
	const char *path = getenv("LIBGUARD_TEST_LIB64K");
	int fd = path ? open(path, O_RDONLY) : -1;

	(void)state;
	page = (size_t)sysconf(_SC_PAGESIZE);
	window = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || window == MAP_FAILED || mprotect(window + page, page, PROT_NONE))
		return -1;
	image_len = (size_t)read(fd, image, sizeof(image));
	close(fd);
	return image_len > sizeof(Elf64_Ehdr) ? 0 : -1;
}

/* Whatever is accepted: ascending loads, holes inside the extent. */
static void check_sane(const struct lg_loads *l)
{
	struct lg_run holes[LG_ELF_MAX_LOADS];
	size_t n;

	assert_true(l->n >= 1 && l->n <= LG_ELF_MAX_LOADS);
	for (size_t i = 0; i < l->n; i++) {
		assert_true(l->v[i].filesz <= l->v[i].memsz);
		/* the page-rounded end is representable */
		assert_true(l->v[i].vaddr + l->v[i].memsz + page - 1 > l->v[i].vaddr);
		if (i)
			assert_true(l->v[i].vaddr >= l->v[i - 1].vaddr + l->v[i - 1].memsz);
	}
	n = lg_elf_holes(l, page, holes, LG_ELF_MAX_LOADS);
	assert_true(n < l->n);
	for (size_t i = 0; i < n; i++) {
		assert_true(holes[i].start < holes[i].end);
		assert_true(holes[i].start % page == 0 && holes[i].end % page == 0);
		assert_true(holes[i].start >= l->v[0].vaddr);
		assert_true(holes[i].end <= l->v[l->n - 1].vaddr);
	}
}

static void real_header(void **state)
{
	struct lg_loads l;
	struct lg_run holes[LG_ELF_MAX_LOADS];
	const Elf64_Ehdr *eh = (const void *)image;
	size_t need = eh->e_phoff + eh->e_phnum * sizeof(Elf64_Phdr);

	(void)state;
	assert_true(need <= image_len);
	assert_int_equal(lg_elf_parse(at_edge(image, need), need, page, &l), 0);
	check_sane(&l);
	assert_int_equal(l.n, 4);
	if (page == 4096)
		assert_int_equal(lg_elf_holes(&l, page, holes, LG_ELF_MAX_LOADS), 3);
	/* every shorter prefix cuts the header or the table */
	for (size_t len = 0; len < need; len++)
		assert_int_equal(lg_elf_parse(at_edge(image, len), len, page, &l), -ENOEXEC);
	assert_int_equal(lg_elf_parse(NULL, need, page, &l), -ENOEXEC);
	assert_int_equal(lg_elf_loads(NULL, 3, page, &l), -ENOEXEC);
	assert_int_equal(lg_elf_loads(image + eh->e_phoff, 0, page, &l), -ENOEXEC);
}

/* The real header with bytes flipped at random. */
static void mutated_headers(void **state)
{
	const Elf64_Ehdr *eh = (const void *)image;
	size_t need = eh->e_phoff + eh->e_phnum * sizeof(Elf64_Phdr);
	unsigned char buf[4096];
	int ok = 0, bad = 0;

	(void)state;
	rng = 0x9e3779b97f4a7c15ull;
	for (int iter = 0; iter < 20000; iter++) {
		struct lg_loads l;
		size_t len = need - (next() % 4 == 0 ? next() % need : 0);
		int flips = 1 + (int)(next() % 8), ret;

		memcpy(buf, image, need);
		for (int f = 0; f < flips; f++)
			buf[next() % need] ^= (unsigned char)(1u << (next() % 8));
		if (next() % 8 == 0)	/* a field to an extreme */
			memset(buf + next() % (need - 8), next() % 2 ? 0xff : 0, 8);
		ret = lg_elf_parse(at_edge(buf, len), len, page, &l);
		assert_true(ret == 0 || ret == -ENOEXEC);
		if (!ret)
			check_sane(&l);
		ok += !ret;
		bad += !!ret;
	}
	printf("# 20000 mutated headers: %d accepted, %d rejected\n", ok, bad);
	assert_true(bad > 0);
}

/* Random bytes after a valid identification, and random tables. */
static void random_headers(void **state)
{
	uint64_t buf[512];
	int ok = 0;

	(void)state;
	rng = 0x2545f4914f6cdd1dull;
	for (int iter = 0; iter < 20000; iter++) {
		size_t len = next() % sizeof(buf);
		struct lg_loads l;
		Elf64_Ehdr eh;
		int ret;

		for (size_t i = 0; i < sizeof(buf) / 8; i++)
			buf[i] = next();
		if (iter % 2 && len >= sizeof(eh)) {
			memcpy(&eh, buf, sizeof(eh));
			memcpy(eh.e_ident, ELFMAG, SELFMAG);
			eh.e_ident[EI_CLASS] = ELFCLASS64;
			eh.e_ident[EI_DATA] = ELFDATA2LSB;
			eh.e_ident[EI_VERSION] = EV_CURRENT;
			eh.e_type = ET_DYN;
			eh.e_phentsize = sizeof(Elf64_Phdr);
			eh.e_phoff = sizeof(eh);
			eh.e_phnum = (Elf64_Half)(next() % 12);
			memcpy(buf, &eh, sizeof(eh));
		}
		ret = lg_elf_parse(at_edge(buf, len), len, page, &l);
		assert_true(ret == 0 || ret == -ENOEXEC);
		if (!ret)
			check_sane(&l);
		ok += !ret;
		/* a raw table: program headers of random type and fields */
		{
			Elf64_Phdr *ph = (Elf64_Phdr *)buf;
			size_t n = 1 + next() % 8;

			for (size_t i = 0; i < n; i++)
				ph[i].p_type = next() % 3 ? PT_LOAD : (uint32_t)next();
			ret = lg_elf_loads(at_edge(buf, n * sizeof(*ph)), n, page, &l);
			assert_true(ret == 0 || ret == -ENOEXEC);
			if (!ret)
				check_sane(&l);
		}
	}
	printf("# 20000 random headers: %d accepted\n", ok);
}

/* Plausible tables: ascending loads with random gaps and sizes. */
static void plausible_tables(void **state)
{
	Elf64_Phdr ph[LG_ELF_MAX_LOADS + 2];
	int accepted = 0;

	(void)state;
	rng = 0xdeadbeefcafef00dull;
	for (int iter = 0; iter < 20000; iter++) {
		size_t n = 1 + next() % (LG_ELF_MAX_LOADS + 1);
		uint64_t at = (next() % 16) * page;
		struct lg_loads l;
		int ret;

		memset(ph, 0, sizeof(ph));
		for (size_t i = 0; i < n; i++) {
			uint64_t gap = next() % 4 ? (next() % 20) * page : next() % 5000;

			ph[i].p_type = PT_LOAD;
			ph[i].p_vaddr = at + gap;
			ph[i].p_offset = ph[i].p_vaddr - (next() % 8 ? 0 : next() % 3 * page);
			ph[i].p_memsz = 1 + next() % (3 * page);
			ph[i].p_filesz = next() % 8 ? ph[i].p_memsz : next() % (4 * page);
			ph[i].p_align = next() % 8 ? 0x10000 : next();
			at = ph[i].p_vaddr + ph[i].p_memsz - (next() % 16 ? 0 : 100);
		}
		ret = lg_elf_loads(at_edge(ph, n * sizeof(ph[0])), n, page, &l);
		assert_true(ret == 0 || ret == -ENOEXEC);
		if (!ret)
			check_sane(&l);
		accepted += !ret;
	}
	printf("# 20000 plausible tables: %d accepted\n", accepted);
	assert_true(accepted > 0);
}

/*
 * Found by tests/fuzz/fuzz_elf_phdr (corpus: crash-memsz-wraps-rounding):
 * p_memsz near 2^64 made p_memsz + page wrap before the overflow check, so
 * the segment was accepted and its page-rounded end, and the holes after
 * it, wrapped around the address space.
 */
static void wrapping_segment_end(void **state)
{
	static const uint64_t memsz[] = { UINT64_MAX, UINT64_MAX - 4095, UINT64_MAX - 65535 };
	Elf64_Phdr ph[2];
	struct lg_loads l;

	(void)state;
	for (size_t i = 0; i < sizeof(memsz) / sizeof(memsz[0]); i++) {
		memset(ph, 0, sizeof(ph));
		ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_vaddr = 0xa0000000, .p_memsz = memsz[i],
				      .p_filesz = 0x1000, .p_align = 0x1000 };
		ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD };
		assert_int_equal(lg_elf_loads(at_edge(ph, sizeof(ph[0])), 1, page, &l), -ENOEXEC);
		/* from the start of the address space too, where memsz + page wraps */
		ph[0].p_vaddr = 0;
		if (memsz[i] > UINT64_MAX - page)
			assert_int_equal(lg_elf_loads(at_edge(ph, sizeof(ph[0])), 1, page, &l),
					 -ENOEXEC);
	}
	/* the largest segment whose rounded end still fits is accepted */
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_vaddr = 0, .p_memsz = UINT64_MAX - page,
			      .p_align = 0x1000 };
	assert_int_equal(lg_elf_loads(at_edge(ph, sizeof(ph[0])), 1, page, &l), 0);
	check_sane(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(real_header),
		cmocka_unit_test(mutated_headers),
		cmocka_unit_test(random_headers),
		cmocka_unit_test(plausible_tables),
		cmocka_unit_test(wrapping_segment_end),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
