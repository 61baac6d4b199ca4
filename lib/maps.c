// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_maps_open/next/close: the regions of a process as /proc/PID/maps
 * lists them, with native guard regions split out as regions of their
 * own (from PAGEMAP_SCAN or pagemap bit 58), for tools/guard-maps and for
 * programs that read their maps to learn what they may touch.
 *
 * A process without an address space (a kernel thread, a zombie) has an
 * empty maps file and a pagemap the kernel refuses to open (ESRCH): it is
 * listed, with no regions, not reported as a process that does not exist.
 */
#include "internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct guard_maps {
	FILE *maps;
	int pagemap;		/* -1: no guards can exist, none are looked for */
	bool no_mm;		/* pagemap said ESRCH though maps opened: no address space */
	char *line;
	size_t cap;
	struct guard_region vma;	/* the current VMA, whole */
	struct lg_runs runs;	/* its guards */
	size_t next_run;
	uintptr_t at;		/* where the next region starts; vma.end: read a line */
};

static int open_err(int err)
{
	/* /proc says ENOENT for a process that is gone or never was. */
	return err == ENOENT ? -ESRCH : -err;
}

LG_EXPORT int guard_maps_open(pid_t pid, unsigned int flags, struct guard_maps **out)
{
	LG_KEEP_ERRNO;
	struct guard_maps *m;
	char path[64];
	int ret;

	if (!out || flags || pid < 0)
		return -EINVAL;
	/* Guards the kernel can't report would silently be missing. */
	if (!lg_guards_reportable())
		return -EOPNOTSUPP;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	lg_runs_init(&m->runs);
	m->pagemap = -1;
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	m->maps = fopen(path, "re");
	if (!m->maps) {
		ret = open_err(errno);
		free(m);
		return ret;
	}
	if (lg_caps() & GUARD_CAP_NATIVE_MASK) {
		memcpy(path + strlen(path) - 4, "pagemap", 8);
		m->pagemap = open(path, O_RDONLY | O_CLOEXEC);
		/*
		 * maps opened, so the process was there: ESRCH now means it
		 * has no mm (or just lost it, exiting), and its maps are empty.
		 */
		if (m->pagemap < 0 && errno == ESRCH) {
			m->no_mm = true;
		} else if (m->pagemap < 0) {
			ret = open_err(errno);
			fclose(m->maps);
			free(m);
			return ret;
		}
	}
	*out = m;
	return 0;
}

static int read_vma(struct guard_maps *m)
{
	struct guard_region *r = &m->vma;
	struct lg_maps_line l;
	ssize_t len;

	len = getline(&m->line, &m->cap, m->maps);
	if (len < 0)
		return ferror(m->maps) ? -EIO : 0;
	if (lg_maps_parse(m->line, &l))
		return -EIO;
	/* A VMA after all, whose guards we can't see: the process is exiting. */
	if (m->no_mm)
		return -ESRCH;
	m->line[l.name - m->line + l.name_len] = '\0';
	r->start = r->vma_start = l.start;
	r->end = r->vma_end = l.end;
	r->offset = l.offset;
	r->inode = l.inode;
	r->dev_major = l.dev_major;
	r->dev_minor = l.dev_minor;
	r->prot = l.prot;
	r->flags = l.shared ? GUARD_REGION_SHARED : 0;
	r->name = l.name;
	m->runs.n = 0;
	m->next_run = 0;
	m->at = r->start;
	/* [vsyscall] lies beyond what pagemap can walk: no guards there. */
	if (m->pagemap >= 0 && strcmp(r->name, "[vsyscall]")) {
		int ret = lg_pagemap_guards(m->pagemap, r->start, r->end, &m->runs);

		if (ret)
			return ret;
	}
	return 1;
}

LG_EXPORT int guard_maps_next(struct guard_maps *m, struct guard_region *r)
{
	LG_KEEP_ERRNO;
	const struct lg_run *run;

	if (!m || !r)
		return -EINVAL;
	if (!m->line || m->at >= m->vma.vma_end) {
		int ret = read_vma(m);

		if (ret <= 0)
			return ret;
	}
	*r = m->vma;
	run = m->next_run < m->runs.n ? &m->runs.v[m->next_run] : NULL;
	r->start = m->at;
	if (run && run->start <= m->at) {
		r->end = run->end < m->vma.vma_end ? run->end : m->vma.vma_end;
		r->flags |= GUARD_REGION_GUARD;
		m->next_run++;
	} else {
		r->end = run ? run->start : m->vma.vma_end;
	}
	/* /proc shows no offset for anonymous memory: keep it 0 */
	r->offset = m->vma.inode ? m->vma.offset + (r->start - m->vma.vma_start) : m->vma.offset;
	m->at = r->end;
	return 1;
}

LG_EXPORT void guard_maps_close(struct guard_maps *m)
{
	if (!m)
		return;
	LG_KEEP_ERRNO;
	fclose(m->maps);
	if (m->pagemap >= 0)
		close(m->pagemap);
	lg_runs_free(&m->runs);
	free(m->line);
	free(m);
}
