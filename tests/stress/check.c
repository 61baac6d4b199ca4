// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Held against the model: what the CPU does on an access (no fault,
 * SEGV_MAPERR, SEGV_ACCERR, SIGBUS, at the address touched), what the
 * page contains, what get_user_pages does (process_vm_readv honours the
 * protection, /proc/self/mem forces it, neither may read through a
 * guard), and what pagemap bit 58 and PAGEMAP_SCAN report.
 */
#include "seq.h"

#include "kapi.h"
#include "pattern.h"
#include "probe.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

static bool fault_matches(enum acc want, const struct fault *f)
{
	switch (want) {
	case A_OK:
		return f->sig == 0;
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

static void check_words(struct ctx *c, size_t i, const size_t *idx, const uint64_t *got, size_t n,
			const char *how)
{
	uint32_t pat;
	bool either;

	model_content(&c->m, i, &pat, &either);
	for (size_t k = 0; k < n; k++) {
		uint64_t want = pattern_word(pat, idx[k]);

		if (got[k] != want && !(either && got[k] == 0))
			fail(c, (long)i, "p%zu word %zu read by %s is %#llx, expected %#llx (pattern %u%s)",
			     i, idx[k], how, (unsigned long long)got[k], (unsigned long long)want, pat,
			     either ? " or zero" : "");
	}
}

static size_t all_idx[4096 / 8];

void check_page(struct ctx *c, size_t i, bool full)
{
	size_t words = kapi_page / 8;
	size_t sample[5] = { 0, words - 1, rng_below(&c->crng, words), rng_below(&c->crng, words),
			     rng_below(&c->crng, words) };
	const size_t *idx = full ? all_idx : sample;
	size_t n = full ? words : 5;
	uint64_t got[4096 / 8];
	enum acc want = model_access(&c->m, i, false, false);
	void *addr = model_addr(&c->m, i);
	struct fault f;

	if (want == A_UNMAPPED) {
		unsigned char v;

		if (mincore(addr, kapi_page, &v) == 0 || errno != ENOMEM)
			fail(c, (long)i, "p%zu should not be mapped, but mincore() says it is", i);
		return;
	}
	if (!all_idx[1])
		for (size_t k = 0; k < words; k++)
			all_idx[k] = k;
	probe_read(addr, idx, n, got, &f);
	if (!fault_matches(want, &f))
		fail(c, (long)i, "reading p%zu: %s, expected %s", i, probe_code_name(f.sig, f.code),
		     acc_name[want]);
	if (f.sig) {
		c->faults_seen++;
		if (f.addr != (uintptr_t)addr)
			fail(c, (long)i, "reading p%zu (%p) faulted at %#lx", i, addr,
			     (unsigned long)f.addr);
	} else {
		check_words(c, i, idx, got, n, "the CPU");
	}

	/* get_user_pages, one page in eight of a sample and all of a full check. */
	if (full || rng_below(&c->crng, 8) == 0) {
		enum acc forced = model_access(&c->m, i, false, true);
		uint64_t w[2];
		size_t widx[2] = { 0, 1 };
		int r = probe_vm_readv(addr, w, sizeof(w));

		if ((r == 0) != (want == A_OK) || (r && r != -EFAULT))
			fail(c, (long)i, "process_vm_readv of p%zu: %s, expected %s", i,
			     kapi_errname(r), want == A_OK ? "success" : "EFAULT");
		if (!r)
			check_words(c, i, widx, w, 2, "process_vm_readv");
		r = probe_mem_read(c->memfd, addr, w, sizeof(w));
		if (forced == A_OK && want == A_ACCERR && !c->caps.mem_force)
			forced = A_ACCERR;
		if ((r == 0) != (forced == A_OK) || (r && r != -EIO && r != -EFAULT))
			fail(c, (long)i, "reading p%zu through /proc/self/mem: %s, expected %s", i,
			     kapi_errname(r), forced == A_OK ? "success" : "EIO");
		if (!r)
			check_words(c, i, widx, w, 2, "/proc/self/mem");
	}
}

void check_guards(struct ctx *c)
{
	struct model *m = &c->m;
	uintptr_t end = m->base + m->n * kapi_page;
	int r;

	if (c->caps.pagemap) {
		r = kapi_pagemap(c->pmfd, m->base, m->n, c->pm_buf);
		if (r)
			fail(c, -1, "reading /proc/self/pagemap: %s", kapi_errname(r));
		for (size_t i = 0; i < m->n; i++) {
			bool want = m->pg[i].type != BT_NONE && m->pg[i].guard;
			bool got = c->pm_buf[i] >> PM_GUARD_BIT & 1;

			if (want != got)
				fail(c, (long)i, "pagemap bit 58 of p%zu is %d, the model says %sguarded",
				     i, got, want ? "" : "not ");
		}
	}
	if (c->caps.scan) {
		memset(c->scan_buf, 0, m->n);
		r = kapi_scan_guards(c->pmfd, m->base, end, c->scan_buf);
		if (r)
			fail(c, -1, "PAGEMAP_SCAN: %s", kapi_errname(r));
		for (size_t i = 0; i < m->n; i++) {
			bool want = m->pg[i].type != BT_NONE && m->pg[i].guard;

			if (want != (bool)c->scan_buf[i])
				fail(c, (long)i, "PAGEMAP_SCAN %s p%zu as a guard, the model says it is %s",
				     c->scan_buf[i] ? "reports" : "does not report", i,
				     want ? "one" : "not");
		}
	}
}

static void sample_range(struct ctx *c, size_t lo, size_t hi)
{
	if (hi > c->m.n)
		hi = c->m.n;	/* a failed mremap grow logs the pages it wanted */
	if (lo >= hi)
		return;
	check_page(c, lo, false);
	if (hi - 1 > lo)
		check_page(c, hi - 1, false);
	for (int k = 0; k < 3 && hi - lo > 2; k++)
		check_page(c, lo + 1 + rng_below(&c->crng, hi - lo - 2), false);
}

void check_sample(struct ctx *c)
{
	check_guards(c);
	sample_range(c, c->lo, c->hi);
	sample_range(c, c->lo2, c->hi2);
	for (int k = 0; k < 6; k++)
		check_page(c, rng_below(&c->crng, c->m.n), false);
}

void check_all(struct ctx *c)
{
	check_guards(c);
	for (size_t i = 0; i < c->m.n; i++)
		check_page(c, i, true);
	c->full_checks++;
}

void expect_ret(struct ctx *c, const char *what, int got, int want)
{
	log_more(c, " -> %s", kapi_errname(got));
	if (got != want)
		fail(c, c->lo < c->hi ? (long)c->lo : -1, "%s returned %s, the model expects %s", what,
		     kapi_errname(got), kapi_errname(want));
}
