// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The text of /proc/PID/maps and the VmFlags lines of smaps, parsed in one
 * place for guard_maps_next(), the pre-6.11 VMA lookup and the error-path
 * VMA classification. Strict, because the same code reads another
 * process's maps for guard-maps: a field that is not what the kernel
 * prints (a sign, a 0x prefix, a number that overflows, perms that are not
 * four of [r-][w-][x-][sp]) makes the line invalid rather than a guess.
 * Reached by the fuzz target through the static library. Also the
 * PROCMAP_QUERY request and answer. Compiled into libguard-audit.so too,
 * which has no libc: nothing here may call more than strcspn/memset.
 */
#include "internal.h"

#include <string.h>
#include <sys/mman.h>

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Hex digits (the kernel prints lower case) up to max: 0, or -1. */
static int parse_hex(const char **p, unsigned long long max, unsigned long long *out)
{
	unsigned long long v = 0;
	const char *s = *p;
	int d;

	if (hexval(*s) < 0)
		return -1;
	for (; (d = hexval(*s)) >= 0; s++) {
		if (v > (max - (unsigned long long)d) / 16)
			return -1;
		v = v * 16 + (unsigned long long)d;
	}
	*p = s;
	*out = v;
	return 0;
}

static int parse_dec(const char **p, unsigned long long *out)
{
	unsigned long long v = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (v > (~0ull - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*p = s;
	*out = v;
	return 0;
}

static int expect(const char **p, char c)
{
	if (**p != c)
		return -1;
	(*p)++;
	return 0;
}

int lg_maps_parse(const char *line, struct lg_maps_line *out)
{
	unsigned long long start, end, maj, min;
	const char *p = line;

	if (parse_hex(&p, UINTPTR_MAX, &start) || expect(&p, '-') ||
	    parse_hex(&p, UINTPTR_MAX, &end) || expect(&p, ' ') || end <= start)
		return -EIO;
	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 's' && p[3] != 'p') || p[4] != ' ')
		return -EIO;
	out->prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) |
		    (p[2] == 'x' ? PROT_EXEC : 0);
	out->shared = p[3] == 's';
	p += 5;
	if (parse_hex(&p, ~0ull, &out->offset) || expect(&p, ' ') ||
	    parse_hex(&p, ~0u, &maj) || expect(&p, ':') || parse_hex(&p, ~0u, &min) ||
	    expect(&p, ' ') || parse_dec(&p, &out->inode))
		return -EIO;
	/* The name, after the padding: "" for none; the newline is not in it. */
	if (*p && *p != ' ' && *p != '\n')
		return -EIO;
	while (*p == ' ')
		p++;
	out->start = (uintptr_t)start;
	out->end = (uintptr_t)end;
	out->dev_major = (unsigned int)maj;
	out->dev_minor = (unsigned int)min;
	out->name = p;
	out->name_len = strcspn(p, "\n");
	return 0;
}

void lg_maps_line_vma(const struct lg_maps_line *l, struct lg_vma *vma)
{
	vma->start = l->start;
	vma->end = l->end;
	vma->prot = l->prot;
	vma->shared = l->shared;
	vma->copied = false;
	vma->pgoff = l->offset;
	vma->inode = l->inode;
	vma->dev_major = l->dev_major;
	vma->dev_minor = l->dev_minor;
}

/*
 * Copied, not built: built, the compiler loads its two constants from
 * .rodata, a page more touched on the way to every PROCMAP_QUERY.
 */
static struct lg_procmap_query request LG_HOT_DATA = {
	.size = sizeof(struct lg_procmap_query),
	.query_flags = LG_PROCMAP_COVERING_OR_NEXT,
};

LG_HOT void lg_procmap_request(struct lg_procmap_query *q, uintptr_t addr)
{
	*q = request;
	q->query_addr = addr;
}

LG_HOT void lg_procmap_vma(const struct lg_procmap_query *q, struct lg_vma *vma)
{
	vma->start = q->vma_start;
	vma->end = q->vma_end;
	vma->prot = (q->vma_flags & LG_PROCMAP_READABLE ? PROT_READ : 0) |
		    (q->vma_flags & LG_PROCMAP_WRITABLE ? PROT_WRITE : 0) |
		    (q->vma_flags & LG_PROCMAP_EXECUTABLE ? PROT_EXEC : 0);
	vma->shared = q->vma_flags & LG_PROCMAP_SHARED;
	vma->copied = false;
	vma->pgoff = q->vma_offset;
	vma->inode = q->inode;
	vma->dev_major = q->dev_major;
	vma->dev_minor = q->dev_minor;
}

int lg_vmflags_kind(const char *flags)
{
	static const struct {
		char name[3];
		int kind;
	} map[] = {
		{ "io", LG_VM_SPECIAL }, { "pf", LG_VM_SPECIAL }, { "mm", LG_VM_SPECIAL },
		{ "de", LG_VM_SPECIAL }, { "lo", LG_VM_LOCKED },  { "ht", LG_VM_HUGETLB },
	};
	int kind = 0;

	/* Two-letter words separated by spaces, up to the end of the line. */
	for (const char *p = flags; *p && *p != '\n'; p++) {
		size_t len = strcspn(p, " \n");

		if (len == 2)
			for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
				if (p[0] == map[i].name[0] && p[1] == map[i].name[1])
					kind |= map[i].kind;
		p += len;
		if (!*p || *p == '\n')
			break;
	}
	return kind;
}
