// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fallback's record: disjoint intervals of the address space, each
 * with what the library knew of it when it protected it (struct lg_rec),
 * in a B+ tree of 4 KiB nodes: the records themselves sorted in the
 * leaves (84 a leaf on 64-bit), keys and children in the inner nodes
 * (255 children), so 30,000 records are three nodes deep. Why not a
 * binary tree (the treap this was): each fallback call costs system
 * calls, and on kernels with page-table isolation and no PCID every
 * kernel entry empties the TLB, so what a call pays beyond them is mostly
 * the pages it touches afterwards; a binary tree's walk visits some
 * log2(n) nodes spread over its slabs, this one a page per level
 * (bench/README, the fallback rows). O(log n) insertion, lookup and
 * removal, no per-call cost growing with the number of records.
 *
 * Called with lg_lock() held; nodes for splits are reserved first
 * (lg_rec_reserve()) so that no step after a system call can fail. A
 * record's pointer is valid until the next insertion or deletion (they
 * move records inside a leaf: the fewer of those before or after the
 * place, so that an arena's guards, added and freed in address order,
 * move none). Callers may move a record's end in place, and its start
 * through lg_rec_set_start() (the inner nodes' keys are the starts of
 * leaves' first records), both only into space no other record holds,
 * never to an empty record: that keeps the records sorted.
 *
 * Each call makes a few lookups near one address (find the record, check
 * its neighbours, delete it or insert beside it): the leaf the last
 * descent reached, and the range of keys it answers for, are kept (cache)
 * until the tree's shape or keys change, so that only the first lookup
 * descends, and the place of the last address looked up in it until a
 * record moves. Leaves are linked in address order: a record's neighbours are
 * O(1). A leaf is freed when it empties, not merged with a neighbour when
 * it runs low: memory follows the peak, as the treap's free nodes did, and
 * the depth stays that of the peak.
 */
#include "internal.h"

#include <stdlib.h>

#define NODE_BYTES 4096u	/* nodes are aligned to it: a record's leaf is its address rounded down */
#define SLAB_NODES 16u		/* a slab is mapped for at least these (64 KiB) */
#define FIRST_NODES 8u		/* in .bss: the first records need no mmap() */
#define TRIM_AT (4 * SLAB_NODES)	/* untouched nodes beyond a call's need that go back */
#define NODE_ROOM (NODE_BYTES - 2 * sizeof(uint32_t) - 2 * sizeof(void *))
#define LEAF_CAP ((NODE_ROOM - 2 * sizeof(void *)) / sizeof(struct lg_rec))
#define INNER_KEYS ((NODE_ROOM - sizeof(void *)) / (2 * sizeof(void *)))
#define MAX_DEPTH 16		/* inner levels: 255^16 records is more than an address space holds */

struct node {
	uint16_t n;		/* records (leaf) or children (inner) */
	uint16_t lo;		/* a leaf's records are rec[lo .. lo + n) */
	uint32_t leaf;
	union {
		struct {
			struct node *prev, *next;	/* leaves in address order; prev links free nodes */
			struct lg_rec rec[LEAF_CAP];
		};
		struct {
			uintptr_t key[INNER_KEYS];	/* key[i]: the first start under child[i + 1] */
			struct node *child[INNER_KEYS + 1];
		};
	};
} __attribute__((aligned(NODE_BYTES)));

_Static_assert(sizeof(struct node) == NODE_BYTES, "a node is NODE_BYTES");

/*
 * Where nodes come from: the static ones, then mapped slabs, each handed
 * out from the bottom up (used) and never touched above that, so that a
 * reservation for the worst case (every insertion splitting every level)
 * costs address space, not memory: an install over 2,000 VMAs reserves
 * some 8,000 nodes and uses a few. A mapped slab's header is on its first
 * page, its nodes on the pages after it.
 */
struct slab {
	struct slab *next;	/* mapped before it */
	struct node *node;
	size_t nodes, used;	/* node[used ..] never handed out */
	size_t len;		/* of the mapping, header included */
};

static struct node first[FIRST_NODES];
static struct slab first_slab = { .node = first, .nodes = FIRST_NODES };
/* The tree's state, which every call reads: with the other hot data. */
static struct {
	struct node *root;
	unsigned int height;	/* levels, leaves included; 0: no record */
	bool first_carved;	/* the counts below are set */
	struct node *spare;	/* freed nodes, linked through ->prev */
	size_t nspare;		/* those and the untouched ones */
	size_t untouched;	/* in the slabs, above their used */
	struct slab *bump;	/* has untouched nodes, if any slab has */
	struct slab *slabs;	/* mapped slabs, newest first */
	struct {
		struct node *leaf;	/* NULL: nothing cached */
		uintptr_t lo, hi;	/* the keys it answers for: lo <= key < hi */
		bool pos_ok;		/* and, until a record moves, where key went in it */
		unsigned int pos;
		uintptr_t key;
	} cache;
} t LG_HOT_DATA;
size_t lg_fallback_live LG_HOT_DATA;

static inline struct node *node_of(const struct lg_rec *rec)
{
	return (struct node *)((uintptr_t)rec & ~(uintptr_t)(NODE_BYTES - 1));
}

/* Record i of leaf x, and the place of a record in its leaf. */
static inline struct lg_rec *nth(struct node *x, unsigned int i)
{
	return &x->rec[x->lo + i];
}

static inline unsigned int index_of(const struct node *x, const struct lg_rec *rec)
{
	return (unsigned int)(rec - x->rec) - x->lo;
}

static void put_spare(struct node *x)
{
	x->prev = t.spare;
	t.spare = x;
	t.nspare++;
}

/* The slab to hand untouched nodes out from now: t.bump ran out. */
static __attribute__((cold, noinline)) void next_bump(void)
{
	struct slab *s = t.slabs;

	while (s && s->used == s->nodes)
		s = s->next;
	t.bump = s ? s : &first_slab;
}

static struct node *take_spare(void)
{
	struct node *x = t.spare;

	if (!t.nspare)
		abort();	/* a caller that did not reserve: a bug */
	t.nspare--;
	/* freed nodes first: they are resident already */
	if (x) {
		t.spare = x->prev;
		return x;
	}
	x = &t.bump->node[t.bump->used++];
	if (--t.untouched && t.bump->used == t.bump->nodes)
		next_bump();
	return x;
}

static void set_live(size_t n)
{
	__atomic_store_n(&lg_fallback_live, n, __ATOMIC_RELEASE);
}

static size_t round_page(size_t len)
{
	size_t pg = lg_page_size();

	return (len + pg - 1) & ~(pg - 1);
}

/*
 * Give back untouched nodes beyond keep, the newest slabs' first: the
 * pages above their used, a whole slab when it has none in use.
 */
static void trim_untouched(size_t keep)
{
	size_t pg = lg_page_size();

	for (struct slab **sp = &t.slabs, *s; (s = *sp) && t.untouched > keep;) {
		size_t drop = s->nodes - s->used, len;

		if (drop > t.untouched - keep)
			drop = t.untouched - keep;
		if (s->used + drop == s->nodes && !s->used) {
			/* near max_map_count an munmap() that splits a VMA fails: kept then */
			if (lg_munmap(s, s->len))
				break;
			*sp = s->next;
			t.untouched -= drop;
			t.nspare -= drop;
			continue;
		}
		len = round_page(pg + (s->nodes - drop) * NODE_BYTES);
		if (len < s->len) {
			if (lg_munmap((char *)s + len, s->len - len))
				break;
			drop = s->nodes - (len - pg) / NODE_BYTES;
			s->len = len;
			s->nodes -= drop;
			t.untouched -= drop;
			t.nspare -= drop;
		}
		sp = &s->next;
	}
	next_bump();
}

static __attribute__((cold, noinline)) int reserve_more(size_t need)
{
	/*
	 * No record left: every node is free, so the mapped slabs go back to
	 * the kernel and the nodes are counted anew from the static ones.
	 * Only here, at the start of a call, when no caller holds a node.
	 */
	if (!lg_fallback_live && t.slabs) {
		for (struct slab *s = t.slabs, *next; s; s = next) {
			next = s->next;
			lg_munmap(s, s->len);
		}
		t.slabs = NULL;
		t.first_carved = false;
	}
	if (!t.first_carved) {
		t.spare = NULL;
		first_slab.used = 0;
		t.nspare = t.untouched = FIRST_NODES;
		t.bump = &first_slab;
		t.first_carved = true;
	}
	if (t.nspare < need) {
		size_t pg = lg_page_size(), want = need - t.nspare, len;
		long p;
		struct slab *s;

		want = want < SLAB_NODES ? SLAB_NODES : want;
		len = round_page(pg + want * NODE_BYTES);
		p = lg_mmap_anon(len, PROT_READ | PROT_WRITE, MAP_PRIVATE);
		if (p < 0 && p > -4096)
			return (int)p;
		/*
		 * Most of a slab is a reservation never touched: with THP
		 * "always" the first node touched would fault in a whole huge
		 * page of them (+2 MiB resident for one install over 2,000
		 * VMAs). No huge pages here; a kernel without THP says EINVAL,
		 * which changes nothing.
		 */
		(void)lg_madvise((void *)p, len, MADV_NOHUGEPAGE);
		s = (struct slab *)p;
		s->next = t.slabs;
		s->node = (struct node *)(p + (long)pg);
		s->nodes = (len - pg) / NODE_BYTES;
		s->used = 0;
		s->len = len;
		t.slabs = s;
		t.nspare += s->nodes;
		if (!t.untouched)
			t.bump = s;
		t.untouched += s->nodes;
	} else if (t.untouched > need + TRIM_AT) {
		/* a large reservation's rest, never touched: keep what a call like this needs */
		trim_untouched(need + SLAB_NODES);
	}
	return 0;
}

LG_HOT int lg_rec_reserve(size_t n)
{
	/* each insertion may split a node at every level and add a root */
	size_t need = n * (t.height + 1) + 1;

	/* with no record left, reserve_more() gives the mapped slabs back */
	return t.nspare >= need && t.untouched <= need + TRIM_AT && t.first_carved &&
			       (lg_fallback_live || !t.slabs)
		       ? 0
		       : reserve_more(need);
}

void lg_rec_stats(struct lg_rec_stats *st)
{
	size_t mapped = t.first_carved ? FIRST_NODES : 0, touched = first_slab.used;

	st->slabs = 0;
	for (const struct slab *s = t.slabs; s; s = s->next) {
		st->slabs++;
		mapped += s->nodes;
		touched += s->used;
	}
	st->nodes = mapped - t.nspare;
	st->mapped = mapped;
	st->touched = touched;
}

/* The tree's shape or keys changed: the cached leaf may answer for other keys. */
static inline void forget_leaf(void)
{
	t.cache.leaf = NULL;
	t.cache.pos_ok = false;
}

/* Records of x starting below key: where key's record is or would go. */
static inline unsigned int leaf_pos(const struct node *x, uintptr_t key)
{
	unsigned int lo = 0, hi = x->n;

	/* the ends first: an arena's guards come and go in address order */
	if (!hi || x->rec[x->lo].start >= key)
		return 0;
	if (x->rec[x->lo + hi - 1].start < key)
		return hi;
	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (x->rec[x->lo + mid].start < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Keys of inner node x at or below key: the child key is under. */
static inline unsigned int inner_pos(const struct node *x, uintptr_t key)
{
	unsigned int lo = 0, hi = x->n - 1u;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (x->key[mid] <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The leaf answering for key (NULL: no record), from the cache or a descent. */
static inline struct node *leaf_for(uintptr_t key)
{
	struct node *x = t.root;
	uintptr_t lo = 0, hi = UINTPTR_MAX;

	if (t.cache.leaf && t.cache.lo <= key && key < t.cache.hi)
		return t.cache.leaf;
	if (!x)
		return NULL;
	while (!x->leaf) {
		unsigned int i = inner_pos(x, key);

		if (i > 0)
			lo = x->key[i - 1];
		if (i < x->n - 1u)
			hi = x->key[i];
		x = x->child[i];
	}
	t.cache.leaf = x;
	t.cache.lo = lo;
	t.cache.hi = hi;
	return x;
}

/* The descent to key's leaf with the inner nodes and children taken: the depth. */
static unsigned int path_to(uintptr_t key, struct node **node, unsigned int *at)
{
	struct node *x = t.root;
	unsigned int d = 0;

	while (!x->leaf) {
		node[d] = x;
		at[d] = inner_pos(x, key);
		x = x->child[at[d++]];
	}
	return d;
}

/*
 * The key old (the first start of a leaf that is not the leftmost) is now
 * new: it is a key in exactly one inner node, on the way to that leaf.
 */
static __attribute__((cold, noinline)) void rekey(uintptr_t old, uintptr_t new)
{
	for (struct node *x = t.root; x && !x->leaf;) {
		unsigned int i = inner_pos(x, old);

		if (i > 0 && x->key[i - 1] == old) {
			x->key[i - 1] = new;
			forget_leaf();
			return;
		}
		x = x->child[i];
	}
}

/* The leaf answering for key and, in *i, its records starting below key; NULL: none. */
static __attribute__((noinline)) LG_HOT struct node *find(uintptr_t key, unsigned int *i)
{
	struct node *x;

	/* a call's lookups are mostly of one address: the last answer, if nothing moved since */
	if (t.cache.pos_ok && t.cache.key == key) {
		*i = t.cache.pos;
		return t.cache.leaf;
	}
	x = leaf_for(key);
	if (!x) {
		*i = 0;
		return NULL;
	}
	*i = leaf_pos(x, key);
	t.cache.pos_ok = true;
	t.cache.pos = *i;
	t.cache.key = key;
	return x;
}

static inline struct lg_rec *last_of(struct node *x)
{
	return x ? nth(x, x->n - 1u) : NULL;
}

static inline struct lg_rec *first_of(struct node *x)
{
	return x ? nth(x, 0) : NULL;
}

LG_HOT struct lg_rec *lg_rec_first_above(uintptr_t addr)
{
	unsigned int i;
	struct node *x = find(addr, &i);

	if (!x)
		return NULL;
	if (i > 0 && nth(x, i - 1)->end > addr)
		return nth(x, i - 1);
	return i < x->n ? nth(x, i) : first_of(x->next);
}

LG_HOT struct lg_rec *lg_rec_before(uintptr_t addr)
{
	unsigned int i;
	struct node *x = find(addr, &i);

	if (!x)
		return NULL;
	return i > 0 ? nth(x, i - 1) : last_of(x->prev);
}

LG_HOT void lg_rec_around(uintptr_t addr, struct lg_rec **lo, struct lg_rec **hi)
{
	unsigned int i;
	struct node *x = find(addr, &i);

	*lo = *hi = NULL;
	if (!x)
		return;
	*lo = i > 0 ? nth(x, i - 1) : last_of(x->prev);
	*hi = i < x->n ? nth(x, i) : first_of(x->next);
}

LG_HOT struct lg_rec *lg_rec_next(const struct lg_rec *rec)
{
	struct node *x = node_of(rec);

	return index_of(x, rec) + 1u < x->n ? (struct lg_rec *)rec + 1 : first_of(x->next);
}

LG_HOT struct lg_rec *lg_rec_prev(const struct lg_rec *rec)
{
	struct node *x = node_of(rec);

	return index_of(x, rec) > 0 ? (struct lg_rec *)rec - 1 : last_of(x->prev);
}

LG_HOT void lg_rec_set_start(struct lg_rec *rec, uintptr_t start)
{
	struct node *x = node_of(rec);
	uintptr_t old = rec->start;

	rec->start = start;
	t.cache.pos_ok = false;
	if (rec == nth(x, 0) && x->prev)
		rekey(old, start);
}

/*
 * Element moves by loops the compiler must not turn into memmove(): that
 * would be a call into libc, whose pages (PLT, GOT, its text) a call then
 * touches after its system calls. An empty asm that may touch memory, in
 * the loop's body, keeps the loop a loop (gcc's optimize attribute would
 * do it too, but it keeps the function from being inlined and gcc says
 * it is not for production code).
 */
#define LG_NO_LIBCALL_STEP() __asm__ volatile("" ::: "memory")

static LG_HOT void rec_move(struct lg_rec *to, const struct lg_rec *from, size_t n)
{
	if (to < from)
		for (size_t i = 0; i < n; i++) {
			to[i] = from[i];
			LG_NO_LIBCALL_STEP();
		}
	else
		for (size_t i = n; i--;) {
			to[i] = from[i];
			LG_NO_LIBCALL_STEP();
		}
}

/* Put key and child c right after child ci of x, which has room. */
static void inner_put(struct node *x, unsigned int ci, uintptr_t key, struct node *c)
{
	for (unsigned int j = x->n - 1; j > ci; j--) {
		x->key[j] = x->key[j - 1];
		x->child[j + 1] = x->child[j];
		LG_NO_LIBCALL_STEP();
	}
	x->key[ci] = key;
	x->child[ci + 1] = c;
	x->n++;
}

/*
 * Put key and child c right after child at[d] of node[d], splitting the
 * nodes on the way up that are full, and the root. An insertion at the
 * end leaves the full node full and starts a new one: records protected
 * in address order (a growing arena) fill their nodes.
 */
static void inner_insert(struct node **node, unsigned int *at, unsigned int d, uintptr_t key,
			 struct node *c)
{
	while (d--) {
		struct node *x = node[d], *y;
		unsigned int ci = at[d], keep;
		uintptr_t up;

		if (x->n < INNER_KEYS + 1) {
			inner_put(x, ci, key, c);
			return;
		}
		y = take_spare();
		y->leaf = 0;
		if (ci + 1 == x->n) {
			/* at the end: y holds only c, key goes up */
			y->n = 1;
			y->child[0] = c;
			up = key;
		} else {
			keep = x->n / 2;
			up = x->key[keep - 1];
			y->n = x->n - keep;
			for (unsigned int j = 0; j < y->n; j++) {
				y->child[j] = x->child[keep + j];
				if (j + 1 < y->n)
					y->key[j] = x->key[keep + j];
				LG_NO_LIBCALL_STEP();
			}
			x->n = keep;
			if (ci < keep)
				inner_put(x, ci, key, c);
			else
				inner_put(y, ci - keep, key, c);
		}
		key = up;
		c = y;
	}
	/* the root split: a new one above it */
	node[0] = take_spare();
	node[0]->leaf = 0;
	node[0]->n = 2;
	node[0]->key[0] = key;
	node[0]->child[0] = t.root;
	node[0]->child[1] = c;
	t.root = node[0];
	t.height++;
}

/*
 * Split full leaf x for a record starting at start going to position *i:
 * the leaf it goes to, and its place there.
 */
static __attribute__((cold, noinline)) struct node *split_leaf(struct node *x, unsigned int *i,
						   uintptr_t start)
{
	struct node *path[MAX_DEPTH], *y;
	unsigned int at[MAX_DEPTH], d;
	unsigned int keep = *i == LEAF_CAP ? LEAF_CAP : *i == 0 ? 0 : LEAF_CAP / 2;
	struct node *to;

	/*
	 * After every record of x, and the next leaf has room: the record
	 * goes first there. Otherwise records added top-down above a full
	 * leaf (mmap()'s order) would each split x anew at its end, one
	 * 4 KiB leaf a record.
	 */
	if (*i == LEAF_CAP && x->next && x->next->n < LEAF_CAP) {
		rekey(nth(x->next, 0)->start, start);
		*i = 0;
		return x->next;
	}
	y = take_spare();
	d = path_to(nth(x, 0)->start, path, at);

	/* full, so x->lo is 0; an empty x fills from the top (a leftmost leaf growing down) */
	y->leaf = 1;
	y->lo = 0;
	y->n = (uint16_t)(LEAF_CAP - keep);
	rec_move(y->rec, &x->rec[keep], y->n);
	x->n = (uint16_t)keep;
	x->lo = keep ? 0 : LEAF_CAP;
	y->prev = x;
	y->next = x->next;
	if (x->next)
		x->next->prev = y;
	x->next = y;
	to = *i > keep || keep == LEAF_CAP ? y : x;
	if (to == y)
		*i -= keep;
	/*
	 * The new leaf's key: its first start, the inserted record's if it
	 * goes first there (keep LEAF_CAP). keep 0 leaves x empty until the
	 * record goes in: x is then the leftmost leaf, which has no key.
	 */
	inner_insert(path, at, d, to == y && !*i ? start : y->rec[0].start, y);
	forget_leaf();
	return to;
}

/*
 * Make room at position i of leaf x, which is not full, moving the fewer
 * records that can move: the ones after i up, or the ones before i down.
 */
static LG_HOT struct lg_rec *open_at(struct node *x, unsigned int i)
{
	bool up = x->lo + x->n < LEAF_CAP && (2 * i >= x->n || !x->lo);

	if (up) {
		rec_move(nth(x, i + 1), nth(x, i), x->n - i);
	} else {
		rec_move(nth(x, 0) - 1, nth(x, 0), i);
		x->lo--;
	}
	x->n++;
	return nth(x, i);
}

LG_HOT struct lg_rec *lg_rec_insert(const struct lg_rec *rec)
{
	unsigned int i;
	struct node *x = find(rec->start, &i);
	struct lg_rec *r;

	if (!x) {
		x = take_spare();
		x->leaf = 1;
		x->n = 0;
		x->lo = 0;
		x->prev = x->next = NULL;
		t.root = x;
		t.height = 1;
	}
	if (__builtin_expect(x->n == LEAF_CAP, 0))
		x = split_leaf(x, &i, rec->start);
	r = open_at(x, i);
	*r = *rec;
	t.cache.pos_ok = false;
	set_live(lg_fallback_live + 1);
	return r;
}

/*
 * Take emptied leaf x (whose first start was key) out of the tree, and
 * inner nodes that empty with it; a root left with one child gives way to it.
 */
static __attribute__((cold, noinline)) void drop_leaf(struct node *x, uintptr_t key)
{
	struct node *path[MAX_DEPTH], *next = x->next;
	unsigned int at[MAX_DEPTH], d;

	if (x->prev)
		x->prev->next = x->next;
	if (x->next)
		x->next->prev = x->prev;
	forget_leaf();
	if (x == t.root) {
		t.root = NULL;
		t.height = 0;
		put_spare(x);
		return;
	}
	d = path_to(key, path, at);
	put_spare(x);
	while (d--) {
		struct node *p = path[d];
		unsigned int ci = at[d];

		if (p->n > 1) {
			/* child ci goes, with the key before it (after it, for the first) */
			unsigned int k = ci ? ci - 1 : 0;

			for (unsigned int j = k; j + 1 < p->n - 1u; j++) {
				p->key[j] = p->key[j + 1];
				LG_NO_LIBCALL_STEP();
			}
			for (unsigned int j = ci; j + 1 < p->n; j++) {
				p->child[j] = p->child[j + 1];
				LG_NO_LIBCALL_STEP();
			}
			p->n--;
			break;
		}
		put_spare(p);	/* its only child went */
	}
	while (!t.root->leaf && t.root->n == 1) {
		struct node *old = t.root;

		t.root = old->child[0];
		t.height--;
		put_spare(old);
	}
	/* If x began a subtree, the key that was x's now names the next leaf. */
	if (next)
		rekey(key, nth(next, 0)->start);
}

LG_HOT void lg_rec_delete(struct lg_rec *rec)
{
	struct node *x = node_of(rec);
	unsigned int i = index_of(x, rec);
	uintptr_t key = nth(x, 0)->start;

	/* the fewer records move: those before it up, or those after it down */
	if (2 * i < x->n) {
		rec_move(nth(x, 1), nth(x, 0), i);
		x->lo++;
	} else {
		rec_move(rec, rec + 1, x->n - i - 1u);
	}
	x->n--;
	t.cache.pos_ok = false;
	set_live(lg_fallback_live - 1);
	if (!x->n)
		drop_leaf(x, key);
	else if (i == 0 && x->prev)
		rekey(key, nth(x, 0)->start);
}

/* The tree's invariants for one subtree: its record count, or -1. */
static long check_node(const struct node *x, unsigned int depth, uintptr_t lo, uintptr_t hi,
		       bool leftmost, const struct node **leaf)
{
	long count = 0;

	if (x->leaf) {
		const struct lg_rec *r = &x->rec[x->lo];

		if (depth != 1 || !x->n || x->lo + x->n > LEAF_CAP || x->prev != *leaf ||
		    (*leaf && (*leaf)->next != x))
			return -1;
		if (!leftmost && r[0].start != lo)
			return -1;	/* a leaf's key is its first start */
		for (unsigned int i = 0; i < x->n; i++)
			if (r[i].start < lo || r[i].start >= hi || r[i].end <= r[i].start ||
			    (i && r[i].start < r[i - 1].end))
				return -1;
		if (*leaf && (*leaf)->rec[(*leaf)->lo + (*leaf)->n - 1].end > r[0].start)
			return -1;
		*leaf = x;
		return x->n;
	}
	if (depth < 2 || x->n < 1 || x->n > INNER_KEYS + 1)
		return -1;
	for (unsigned int i = 0; i < x->n; i++) {
		uintptr_t l = i ? x->key[i - 1] : lo, h = i + 1 < x->n ? x->key[i] : hi;
		long c;

		if (l >= h)
			return -1;
		c = check_node(x->child[i], depth - 1, l, h, leftmost && !i, leaf);
		if (c < 0)
			return -1;
		count += c;
	}
	return count;
}

int lg_rec_check(void)
{
	const struct node *leaf = NULL;
	long n = 0;

	if (t.root)
		n = check_node(t.root, t.height, 0, UINTPTR_MAX, true, &leaf);
	if (n < 0 || (size_t)n != lg_fallback_live || (leaf && leaf->next) || (!t.root && t.height))
		return -1;
	return 0;
}
