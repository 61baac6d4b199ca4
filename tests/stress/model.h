/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reference model of the sequence tester: for every page of the
 * arena, what is mapped there, with which protection, whether it is
 * guarded, and what it must contain; for every object behind a shared
 * mapping (the three files, each shared anonymous mapping's shmem
 * object), its size and the content of each page.
 *
 * The rules, which the operations in ops_*.c apply:
 * - a private page is ZERO (anon, never written or discarded), PRIV (its
 *   own copy with a pattern), EITHER (MADV_FREE'd: the pattern or zero,
 *   word by word, until rewritten), or FOLLOW (a private file page not yet
 *   copied: shows the file as it is now, changes included);
 * - a shared page always shows its object at its offset; past the
 *   object's size an access raises SIGBUS;
 * - a guarded page faults with SEGV_MAPERR, a page whose protection
 *   forbids the access with SEGV_ACCERR (checked first by the CPU's fault
 *   path), whatever it contains;
 * - a locked page (VM_LOCKED) takes no guard, no DONTNEED, FREE, COLD,
 *   PAGEOUT or REMOVE (EINVAL at its VMA, the VMAs before it done); only
 *   mmap over it, munmap and munlock unlock it, and a fork child has no
 *   locked pages.
 */
#ifndef STRESS_MODEL_H
#define STRESS_MODEL_H

#include "backing.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cstate { CS_FOLLOW, CS_ZERO, CS_PRIV, CS_EITHER };

/* VM_LOCKED, and VM_LOCKONFAULT with it: two kinds of VMA. */
enum lstate { LK_NONE, LK_ONFAULT, LK_PLAIN };

struct mpage {
	uint8_t type;		/* enum btype, BT_NONE: not mapped */
	uint8_t prot;
	uint8_t guard;
	uint8_t cs;		/* enum cstate, private pages only */
	uint8_t locked;		/* enum lstate */
	int16_t obj;		/* object index, -1 for private anon */
	uint32_t off;		/* page offset in the object */
	uint32_t pat;		/* PRIV, EITHER: the page's own pattern */
};

#define MAX_OBJ 64		/* F_COUNT files, then shared anonymous objects */

struct mobj {
	bool live;
	bool punch;		/* FALLOC_FL_PUNCH_HOLE works on it */
	uint32_t size;		/* pages */
	uint32_t *content;	/* cap pattern ids; 0 = zero; 0 past size */
};

struct model {
	uintptr_t base;
	size_t n;		/* pages in the arena */
	uint32_t cap;		/* pages an object may have */
	struct mpage *pg;
	struct mobj obj[MAX_OBJ];
	uint32_t next_pat;
};

enum acc { A_OK, A_UNMAPPED, A_ACCERR, A_MAPERR, A_BUS };

extern const char *const acc_name[];

int model_init(struct model *m, uintptr_t base, size_t n);

static inline void *model_addr(const struct model *m, size_t i)
{
	extern size_t kapi_page;

	return (void *)(m->base + i * kapi_page);
}

/* What a read or a write of page i must do. force: as FOLL_FORCE does
 * (/proc/self/mem): protection ignored. */
enum acc model_access(const struct model *m, size_t i, bool write, bool force);

/* The content page i must show when readable: pattern *pat (0: zero);
 * *either: each word may also be zero. */
void model_content(const struct model *m, size_t i, uint32_t *pat, bool *either);

void model_map(struct model *m, size_t lo, size_t hi, enum btype t, int prot, int obj,
	       uint32_t off);
void model_unmap(struct model *m, size_t lo, size_t hi);

/* Contents of page i dropped from the page tables (DONTNEED, guard install). */
void model_zap(struct model *m, size_t i);

/* First unmapped page in [lo, hi), or hi. */
size_t model_hole(const struct model *m, size_t lo, size_t hi);

/* First mapped, locked page in [lo, hi), or hi. */
size_t model_first_locked(const struct model *m, size_t lo, size_t hi);

/* Locked pages in the arena. */
size_t model_locked_pages(const struct model *m);

/* A page where a VMA may end: type, object, offset, protection or lock change. */
bool model_boundary(const struct model *m, size_t i);

/* Object o shrinks or grows to size pages (ftruncate). */
void model_truncate(struct model *m, int o, uint32_t size);

/* Pages [first, first + n) of object o become holes (punch, MADV_REMOVE). */
void model_punch(struct model *m, int o, uint32_t first, uint32_t n);

/* A new shared anonymous object of size pages: its index, or -1. */
int model_new_sanon(struct model *m, uint32_t size);

/* "p12 memfd rw guarded obj 2 off 40 = pat 77" for reports. */
void model_describe(const struct model *m, size_t i, char *buf, size_t len);

#endif
