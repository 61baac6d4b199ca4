/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The backing types the testers map, and the files behind them: one
 * page-cache file (ext4 in $LIBGUARD_SCRATCH, or the current directory's
 * file system), one tmpfs file (/dev/shm) and one memfd. Each file is
 * unlinked as soon as it is open, so a crashed run leaves nothing behind.
 */
#ifndef STRESS_BACKING_H
#define STRESS_BACKING_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum btype {
	BT_PANON,	/* MAP_PRIVATE | MAP_ANONYMOUS */
	BT_SANON,	/* MAP_SHARED | MAP_ANONYMOUS: a new shmem object per mmap */
	BT_MEMFD,	/* MAP_SHARED of the memfd */
	BT_TMPFS,	/* MAP_SHARED of the tmpfs file */
	BT_EXT4,	/* MAP_SHARED of the page-cache file */
	BT_RO,		/* MAP_SHARED, PROT_READ, of an O_RDONLY descriptor of it */
	BT_PRIV,	/* MAP_PRIVATE of the page-cache file: copy on write */
	BT_PRIV_SHM,	/* MAP_PRIVATE of the memfd */
	BT_COUNT,
	BT_NONE = 0xff,	/* not mapped */
};

/* The three files; BT_EXT4, BT_RO and BT_PRIV share F_PAGECACHE. */
enum bfile { F_PAGECACHE, F_TMPFS, F_MEMFD, F_COUNT };

struct backing {
	int fd[F_COUNT];
	int rofd;			/* O_RDONLY descriptor of F_PAGECACHE */
	char dir[256];			/* where F_PAGECACHE lives */
	char dir_fs[32];		/* its file system type, "ext4", ... */
	bool pagecache_is_shmem;	/* the directory was tmpfs: no page cache file */
	char note[512];			/* what fell back to what, for the banner */
};

extern const char *const btype_name[BT_COUNT];

/* The file behind a type (F_COUNT for the anonymous types). */
enum bfile btype_file(enum btype t);
bool btype_shared(enum btype t);	/* writes reach the object, not a private copy */
bool btype_readonly(enum btype t);	/* can never be PROT_WRITE */

/*
 * Create the files. dir: where the page-cache file goes (NULL: the
 * environment's $LIBGUARD_SCRATCH, else the current directory). Returns 0
 * or -errno with a message on stderr.
 */
int backing_open(struct backing *b, const char *dir);

/*
 * mmap() len bytes of type t at addr (with MAP_FIXED if addr is not
 * NULL) and file offset off (ignored for anonymous types). MAP_FAILED and
 * errno on failure.
 */
void *backing_map(const struct backing *b, enum btype t, void *addr, size_t len, int prot,
		  off_t off);

#endif
