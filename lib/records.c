// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fallback's record: disjoint intervals of the address space, each
 * with what the library knew of it when it protected it (struct lg_rec),
 * in a treap (a binary search tree kept balanced by random priorities):
 * O(log n) expected insertion, lookup and removal, with no per-call cost
 * growing with the number of records. Nodes never move, so a pointer to a
 * record stays valid until that record is deleted. Called with lg_lock()
 * held; nodes for splits are reserved first (lg_rec_reserve()) so that
 * no step after a system call can fail.
 *
 * Each call makes a few lookups near one address (find the record, check
 * its neighbours, delete it or insert beside it) with no change to the
 * tree in between: the last lookup's answer is kept (struct near), so
 * that only the first of them walks the tree.
 */
#include "internal.h"

#include <stdlib.h>

#define SLAB_BYTES (64u << 10)
#define FIRST_BYTES (16u << 10)

struct node {
	struct lg_rec rec;	/* first: a record is its node */
	struct node *left, *right;
	struct node *prev, *next;	/* address order: a record's neighbours in O(1) */
	uint32_t prio;
};

static struct node *root, *head;

/*
 * Two records next to each other in address order, and where the tree
 * points at the second, from the last walk: valid until a node is
 * inserted or deleted. Callers may move a record's bounds in place, but
 * only into space no other record holds and never to an empty record
 * (fallback.c's carve() and insert_joined()): that keeps the records
 * sorted and disjoint, and so the two adjacent.
 */
static struct {
	bool valid;
	struct node *below, *above;	/* NULL: none there */
	struct node **above_at;
} near;
static struct node *spare;	/* free nodes, linked through ->right */
static size_t nspare;
/* The mapped slabs, each a struct slab then nodes. */
struct slab {
	struct slab *next;
};
static struct slab *slabs;
static struct node first[FIRST_BYTES / sizeof(struct node)];
static bool first_carved;
static uint32_t seed = 2463534242u;
size_t lg_fallback_live;

static uint32_t next_prio(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 17;
	seed ^= seed << 5;
	return seed;
}

/* Put n nodes from v on the free list. */
static void carve(struct node *v, size_t n)
{
	for (size_t i = n; i--;) {
		v[i].right = spare;
		spare = &v[i];
	}
	nspare += n;
}

int lg_rec_reserve(size_t n)
{
	/* past the header, at a node's alignment */
	size_t skip = (sizeof(struct slab) + _Alignof(struct node) - 1) & ~(_Alignof(struct node) - 1);

	/*
	 * No record left: every node is free, so the mapped slabs go back to
	 * the kernel and the list is made anew from the static one. Only
	 * here, at the start of a call, when no caller holds a node.
	 */
	if (!lg_fallback_live && slabs) {
		for (struct slab *s = slabs, *next; s; s = next) {
			next = s->next;
			lg_munmap(s, SLAB_BYTES);
		}
		slabs = NULL;
		first_carved = false;
	}
	if (!first_carved) {
		spare = NULL;
		nspare = 0;
		carve(first, sizeof(first) / sizeof(first[0]));
		first_carved = true;
	}
	while (nspare < n) {
		long p = lg_mmap_anon(SLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE);
		struct slab *s = (struct slab *)p;

		if (p < 0 && p > -4096)
			return (int)p;
		s->next = slabs;
		slabs = s;
		carve((struct node *)((char *)s + skip), (SLAB_BYTES - skip) / sizeof(struct node));
	}
	return 0;
}

/* Split t into the nodes starting below key (*l) and the rest (*r). */
static void split(struct node *t, uintptr_t key, struct node **l, struct node **r)
{
	while (t) {
		if (t->rec.start < key) {
			*l = t;
			l = &t->right;
			t = t->right;
		} else {
			*r = t;
			r = &t->left;
			t = t->left;
		}
	}
	*l = *r = NULL;
}

/* Join a and b, every node of a below every node of b. */
static struct node *join(struct node *a, struct node *b)
{
	struct node *out, **at = &out;

	while (a && b) {
		if (a->prio > b->prio) {
			*at = a;
			at = &a->right;
			a = a->right;
		} else {
			*at = b;
			at = &b->left;
			b = b->left;
		}
	}
	*at = a ? a : b;
	return out;
}

struct lg_rec *lg_rec_insert(const struct lg_rec *rec)
{
	struct node *x = spare, **at = &root;

	if (!x)
		abort();	/* a caller that did not reserve: a bug */
	spare = x->right;
	nspare--;
	x->rec = *rec;
	x->left = x->right = NULL;
	x->prio = next_prio();
	near.valid = false;
	/* its neighbours in address order: the last record starting below it */
	x->prev = NULL;
	for (struct node *t = root; t;)
		if (t->rec.start < rec->start) {
			x->prev = t;
			t = t->right;
		} else {
			t = t->left;
		}
	x->next = x->prev ? x->prev->next : head;
	*(x->prev ? &x->prev->next : &head) = x;
	if (x->next)
		x->next->prev = x;
	while (*at && (*at)->prio >= x->prio)
		at = rec->start < (*at)->rec.start ? &(*at)->left : &(*at)->right;
	split(*at, rec->start, &x->left, &x->right);
	*at = x;
	__atomic_store_n(&lg_fallback_live, lg_fallback_live + 1, __ATOMIC_RELEASE);
	return &x->rec;
}

void lg_rec_delete(struct lg_rec *rec)
{
	struct node **at = &root, *x = (struct node *)rec;

	if (near.valid && near.above == x)
		at = near.above_at;
	near.valid = false;
	while (*at != x)
		at = rec->start < (*at)->rec.start ? &(*at)->left : &(*at)->right;
	*at = join(x->left, x->right);
	*(x->prev ? &x->prev->next : &head) = x->next;
	if (x->next)
		x->next->prev = x->prev;
	x->right = spare;
	spare = x;
	nspare++;
	__atomic_store_n(&lg_fallback_live, lg_fallback_live - 1, __ATOMIC_RELEASE);
}

/*
 * Walk to the first record ending above addr, keeping it and the one
 * before it in address order (the last node the walk went right of) in
 * near. Records are disjoint and sorted, so the end and the start order
 * them alike.
 */
static void walk(uintptr_t addr)
{
	struct node **at = &root;

	near.below = near.above = NULL;
	near.above_at = NULL;
	while (*at) {
		if ((*at)->rec.end > addr) {
			near.above = *at;
			near.above_at = at;
			at = &(*at)->left;
		} else {
			near.below = *at;
			at = &(*at)->right;
		}
	}
	near.valid = true;
}

/* Does near answer for addr: is addr past below's start and before above's end? */
static bool near_has(uintptr_t addr)
{
	return near.valid && (!near.below || near.below->rec.start < addr) &&
	       (!near.above || near.above->rec.end > addr);
}

struct lg_rec *lg_rec_first_above(uintptr_t addr)
{
	if (!near_has(addr))
		walk(addr);
	if (near.below && near.below->rec.end > addr)
		return &near.below->rec;	/* below holds addr (its bounds moved) */
	return near.above ? &near.above->rec : NULL;
}

struct lg_rec *lg_rec_before(uintptr_t addr)
{
	if (!near_has(addr))
		walk(addr);
	if (near.above && near.above->rec.start < addr)
		return &near.above->rec;	/* above holds addr */
	return near.below ? &near.below->rec : NULL;
}

void lg_rec_around(uintptr_t addr, struct lg_rec **lo, struct lg_rec **hi)
{
	*lo = lg_rec_before(addr);
	/* near answers for addr now: above, or the record after it if it holds addr */
	if (near.above && near.above->rec.start < addr)
		*hi = lg_rec_first_above(near.above->rec.end);
	else
		*hi = near.above ? &near.above->rec : NULL;
}

struct lg_rec *lg_rec_next(const struct lg_rec *rec)
{
	struct node *x = ((const struct node *)rec)->next;

	return x ? &x->rec : NULL;
}

struct lg_rec *lg_rec_prev(const struct lg_rec *rec)
{
	struct node *x = ((const struct node *)rec)->prev;

	return x ? &x->rec : NULL;
}
