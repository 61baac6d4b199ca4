// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The process's own /proc/self/pagemap and /proc/self/maps, and a pidfd
 * of itself, each opened once and kept: pagemap for the PAGEMAP_SCAN
 * before a multi-page native install and for guard_query(), maps for the
 * PROCMAP_QUERY lookups of the fallback (every fallback call makes one),
 * the pidfd for the batches' process_madvise() where the kernel does not
 * take PIDFD_SELF (lg_self_target()).
 *
 * Why keep them: opening a /proc file costs more than the call it serves
 * (two system calls, a path walk and an mm lookup: 4 us or more against
 * 1.5 us for a 16-page install, 3 us for an mprotect() on the bench host).
 * Why it is safe: a descriptor names the mm it was opened in, so a fork()
 * child must not use its parent's; the atfork child handler (lock.c)
 * drops them there, and the child opens its own on first use. They are
 * O_CLOEXEC, so exec drops them too. A program that closes descriptors it
 * does not own (closefrom() in a daemon) can leave a number naming another
 * file: every error from one is checked against the inode it was opened
 * as, and a descriptor that is no longer ours is forgotten (not closed:
 * the number is someone else's now) and opened again, once. Under a
 * seccomp filter that refuses fstat() there is no inode to check: the
 * descriptor is kept unchecked rather than refused.
 */
#include "internal.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const paths[LG_PROC_N] = { "/proc/self/pagemap", "/proc/self/maps", NULL };
/* written under lg_lock(), read without */
static atomic_int cached[LG_PROC_N] LG_HOT_DATA = { -1, -1, -1 };
static dev_t cached_dev[LG_PROC_N];
static ino_t cached_ino[LG_PROC_N];
/* fstat() refused by a seccomp filter: no inode to check the descriptor against. */
static bool cached_unchecked[LG_PROC_N];

/* A filter's refusal, as opposed to a descriptor that is bad. */
static bool refused(int err)
{
	return err == EPERM || err == EACCES || err == ENOSYS;
}

int lg_proc_fd(enum lg_proc which)
{
	int fd = atomic_load_explicit(&cached[which], memory_order_acquire);

	if (fd >= 0)
		return fd;
	lg_lock();
	fd = lg_proc_fd_locked(which);
	lg_unlock();
	return fd;
}

/* Called with lg_lock() held: lg_proc_lost() without taking it. */
static bool lost_locked(enum lg_proc which, int fd)
{
	LG_KEEP_ERRNO;
	struct stat st;

	if (atomic_load_explicit(&cached[which], memory_order_relaxed) != fd)
		return true;	/* another thread found it so and opened anew */
	if (fstat(fd, &st) ? !(cached_unchecked[which] && refused(errno))
			   : st.st_dev != cached_dev[which] || st.st_ino != cached_ino[which]) {
		atomic_store_explicit(&cached[which], -1, memory_order_relaxed);
		return true;
	}
	/* Ours, or fstat() refused and no telling: the error is the call's own. */
	return false;
}

bool lg_proc_lost(enum lg_proc which, int fd)
{
	bool lost;

	lg_lock();
	lost = lost_locked(which, fd);
	lg_unlock();
	return lost;
}

/* Open (on first use) the descriptor of which, with lg_lock() held. */
static __attribute__((noinline)) int open_locked(enum lg_proc which)
{
	LG_KEEP_ERRNO;
	struct stat st;
	int fd = paths[which] ? open(paths[which], O_RDONLY | O_CLOEXEC) : lg_pidfd_self();

	if (fd < 0)
		return paths[which] ? -errno : fd;
	cached_unchecked[which] = false;
	if (fstat(fd, &st)) {
		int err = errno;

		/*
		 * The inode only guards against a number reused after
		 * closefrom(); the calls need just the descriptor, so a
		 * filter that refuses fstat() costs that check, not the call.
		 */
		if (!refused(err)) {
			close(fd);
			return -err;
		}
		cached_unchecked[which] = true;
		st.st_dev = 0;
		st.st_ino = 0;
	}
	cached_dev[which] = st.st_dev;
	cached_ino[which] = st.st_ino;
	atomic_store_explicit(&cached[which], fd, memory_order_release);
	return fd;
}

/*
 * The same for a caller that holds lg_lock() already (the fallback):
 * the descriptor, opened if need be, without taking the lock again.
 */
LG_HOT int lg_proc_fd_locked(enum lg_proc which)
{
	int fd = atomic_load_explicit(&cached[which], memory_order_relaxed);

	return fd >= 0 ? fd : open_locked(which);
}

bool lg_proc_lost_locked(enum lg_proc which, int fd)
{
	return lost_locked(which, fd);
}

/*
 * Called in the child of fork(), with lg_lock() held, one thread running.
 * The child's copies of the parent's descriptors name the parent's mm:
 * forgotten, and closed where the number is still ours. The program may
 * have put a file of its own there (dup2() over it): that one the child
 * keeps, and where fstat() can't tell, it keeps the number too (one
 * descriptor left open rather than one of the program's closed).
 */
void lg_proc_after_fork_child(void)
{
	LG_KEEP_ERRNO;

	for (int i = 0; i < LG_PROC_N; i++) {
		int fd = atomic_exchange_explicit(&cached[i], -1, memory_order_relaxed);
		struct stat st;

		if (fd >= 0 && !cached_unchecked[i] && !fstat(fd, &st) &&
		    st.st_dev == cached_dev[i] && st.st_ino == cached_ino[i])
			close(fd);
	}
}

/*
 * PIDFD_SELF_THREAD_GROUP (Linux 6.15, and our series): process_madvise()
 * on the caller's own process with no descriptor at all, so nothing to
 * keep, lose or drop after fork(). Asked once, with an empty vector: the
 * kernel resolves the pidfd, then has nothing to do.
 */
#define LG_PIDFD_SELF_THREAD_GROUP (-10001)

static atomic_int self_ok = -1;		/* -1 unknown, 0 no, 1 yes */

int lg_self_target(int *target)
{
	int ok = atomic_load_explicit(&self_ok, memory_order_relaxed);

	if (ok < 0) {
		struct iovec none = { NULL, 0 };
		const char *no = getenv("LIBGUARD_NO_PIDFD_SELF");	/* tests: the kept pidfd */

		ok = !(no && *no && strcmp(no, "0")) &&
		     lg_process_madvise(LG_PIDFD_SELF_THREAD_GROUP, &none, 1, MADV_GUARD_REMOVE) == 0;
		atomic_store_explicit(&self_ok, ok, memory_order_relaxed);
	}
	if (ok) {
		*target = LG_PIDFD_SELF_THREAD_GROUP;
		return 0;
	}
	*target = lg_proc_fd(LG_PROC_PIDFD);
	return *target < 0 ? *target : 0;
}
