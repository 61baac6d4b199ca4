// SPDX-License-Identifier: LGPL-2.1-or-later
#include "backing.h"

#include "kapi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

const char *const btype_name[BT_COUNT] = {
	[BT_PANON] = "private-anon", [BT_SANON] = "shared-anon", [BT_MEMFD] = "memfd",
	[BT_TMPFS] = "tmpfs",	     [BT_EXT4] = "file",	[BT_RO] = "readonly-file",
	[BT_PRIV] = "private-file",  [BT_PRIV_SHM] = "private-memfd",
};

enum bfile btype_file(enum btype t)
{
	switch (t) {
	case BT_MEMFD:
	case BT_PRIV_SHM:
		return F_MEMFD;
	case BT_TMPFS:
		return F_TMPFS;
	case BT_EXT4:
	case BT_RO:
	case BT_PRIV:
		return F_PAGECACHE;
	default:
		return F_COUNT;
	}
}

bool btype_shared(enum btype t)
{
	return t != BT_PANON && t != BT_PRIV && t != BT_PRIV_SHM;
}

bool btype_readonly(enum btype t)
{
	return t == BT_RO;
}

static const char *fs_name(long type)
{
	switch ((unsigned long)type) {
	case 0xef53: return "ext4";
	case TMPFS_MAGIC: return "tmpfs";
	case 0x58465342: return "xfs";
	case 0x9123683e: return "btrfs";
	case 0x01021997: return "9p";
	case 0x794c7630: return "overlayfs";
	case 0x6969: return "nfs";
	default: return "unknown";
	}
}

static int open_unlinked(const char *dir, const char *what, int *fd, int *rofd)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/libguard-stress-%s-%d", dir, what, (int)getpid());
	*fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (*fd < 0) {
		int err = errno;

		fprintf(stderr, "stress: cannot create %s: %s\n", path, strerror(err));
		return -err;
	}
	if (rofd) {
		*rofd = open(path, O_RDONLY | O_CLOEXEC);
		if (*rofd < 0) {
			int err = errno;

			fprintf(stderr, "stress: cannot reopen %s read-only: %s\n", path, strerror(err));
			unlink(path);
			return -err;
		}
	}
	unlink(path);
	return 0;
}

int backing_open(struct backing *b, const char *dir)
{
	struct statfs sf;
	const char *env = getenv("LIBGUARD_SCRATCH");
	int ret;

	memset(b, 0, sizeof(*b));
	if (dir) {
		snprintf(b->dir, sizeof(b->dir), "%s", dir);
	} else if (env && *env) {
		snprintf(b->dir, sizeof(b->dir), "%s", env);
	} else {
		if (!getcwd(b->dir, sizeof(b->dir)))
			return -errno;
		snprintf(b->note + strlen(b->note), sizeof(b->note) - strlen(b->note),
			 "LIBGUARD_SCRATCH is not set: the page-cache file is in the current directory. ");
	}
	if (statfs(b->dir, &sf)) {
		ret = -errno;
		fprintf(stderr, "stress: statfs %s: %s\n", b->dir, strerror(-ret));
		return ret;
	}
	snprintf(b->dir_fs, sizeof(b->dir_fs), "%s", fs_name(sf.f_type));
	if ((unsigned long)sf.f_type == TMPFS_MAGIC) {
		b->pagecache_is_shmem = true;
		snprintf(b->note + strlen(b->note), sizeof(b->note) - strlen(b->note),
			 "%s is tmpfs: the 'file' types test shmem, not the page cache. ", b->dir);
	}
	ret = open_unlinked(b->dir, "file", &b->fd[F_PAGECACHE], &b->rofd);
	if (ret)
		return ret;

	if (statfs("/dev/shm", &sf) == 0 && (unsigned long)sf.f_type == TMPFS_MAGIC) {
		ret = open_unlinked("/dev/shm", "tmpfs", &b->fd[F_TMPFS], NULL);
		if (ret)
			return ret;
	} else {
		/* A memfd is a tmpfs file too; only the path lookup differs. */
		b->fd[F_TMPFS] = memfd_create("libguard-stress-tmpfs", MFD_CLOEXEC);
		if (b->fd[F_TMPFS] < 0)
			return -errno;
		snprintf(b->note + strlen(b->note), sizeof(b->note) - strlen(b->note),
			 "/dev/shm is not tmpfs: the tmpfs type uses a second memfd. ");
	}
	b->fd[F_MEMFD] = memfd_create("libguard-stress", MFD_CLOEXEC);
	if (b->fd[F_MEMFD] < 0) {
		ret = -errno;
		fprintf(stderr, "stress: memfd_create: %s\n", strerror(-ret));
		return ret;
	}
	return 0;
}

void *backing_map(const struct backing *b, enum btype t, void *addr, size_t len, int prot,
		  off_t off)
{
	int fixed = addr ? MAP_FIXED : 0;

	switch (t) {
	case BT_PANON:
		return mmap(addr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | fixed, -1, 0);
	case BT_SANON:
		return mmap(addr, len, prot, MAP_SHARED | MAP_ANONYMOUS | fixed, -1, 0);
	case BT_RO:
		return mmap(addr, len, prot, MAP_SHARED | fixed, b->rofd, off);
	case BT_PRIV:
	case BT_PRIV_SHM:
		return mmap(addr, len, prot, MAP_PRIVATE | fixed, b->fd[btype_file(t)], off);
	default:
		return mmap(addr, len, prot, MAP_SHARED | fixed, b->fd[btype_file(t)], off);
	}
}
