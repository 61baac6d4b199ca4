// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The library's one mutex, shared by the fallback's records (records.c,
 * fallback.c), the registry of guard_map_file()/guard_stack() mappings and
 * the kept /proc descriptors (proc.c), and what it takes to stay usable
 * across fork().
 *
 * fork() copies the memory of the forking thread only: a child of a fork
 * taken while another thread held the mutex would inherit it locked, and
 * the records half-changed. So the mutex is held across fork() by
 * pthread_atfork() handlers, and the child also drops what names its
 * parent's mm (the kept /proc descriptors).
 *
 * Why register the handlers at load time (a constructor) rather than not
 * hold a lock across fork(): prepare handlers run in the reverse order of
 * registration, so a program whose own prepare handler takes its lock L,
 * and which calls libguard while holding L, is safe exactly when
 * libguard's handler runs after the program's, i.e. was registered before
 * it: then the forking thread takes L, then our mutex, the order every
 * other thread uses. Registering lazily (on the first call, as before)
 * put ours after an allocator's that registered earlier, and a fork()
 * then deadlocked against a thread in guard_install() under the
 * allocator's lock. A constructor runs before any code that can call
 * libguard (an object that uses libguard depends on it and is initialized
 * after it; a program's main() runs after every constructor), so its
 * handlers are the first registered. Not holding the mutex across fork()
 * would instead leave the child with records another thread was in the
 * middle of changing, i.e. records that can't be trusted, and trusting a
 * record is what makes guard_remove() give memory its protection back.
 *
 * What remains: a program that registers handlers taking a lock L, then
 * dlopen()s libguard and calls it under L while another thread forks.
 * Documented in libguard(7).
 */
#include "internal.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * The mutex itself: a futex word, 0 free, 1 held, 2 held with waiters
 * (the three-state mutex of Drepper's "Futexes Are Tricky"). An
 * uncontended lock and unlock are one atomic each: a pthread mutex pair
 * costs some 50 instructions more, which guard_map_anon() and
 * guard_unmap() pay twice and every fallback call once (callgrind).
 * Under TSan it is annotated as a mutex, so that TSan orders the
 * accesses it guards. It is annotated as a try-lock: TSan's lock-order
 * check, which a plain lock gets, holds a runtime lock of TSan's own
 * while the thread goes on to wait for ours, and a fork() in between
 * leaves the child that runtime lock held by a thread it does not have
 * (tests/test_mutex.c hung so under TSan in 2 of 20 runs of the tsan
 * suite). The mutex is a leaf: nothing takes another lock under it, not
 * even malloc()'s (records.c says why).
 */
static int word LG_HOT_DATA;

#if LG_SANITIZE_THREAD
#include <sanitizer/tsan_interface.h>
#define TSAN_FLAGS (__tsan_mutex_linker_init | __tsan_mutex_try_lock)
#define TSAN_LOCKING() __tsan_mutex_pre_lock(&word, TSAN_FLAGS)
#define TSAN_LOCKED() __tsan_mutex_post_lock(&word, TSAN_FLAGS, 0)
#define TSAN_UNLOCKING() __tsan_mutex_pre_unlock(&word, 0)
#define TSAN_UNLOCKED() __tsan_mutex_post_unlock(&word, 0)
#else
#define TSAN_LOCKING() ((void)0)
#define TSAN_LOCKED() ((void)0)
#define TSAN_UNLOCKING() ((void)0)
#define TSAN_UNLOCKED() ((void)0)
#endif

/* FUTEX_WAIT or FUTEX_WAKE on the word; errno left as it was. */
static void futex(int op, int val)
{
#if LG_HAVE_RAW_SYSCALL
	lg_raw_syscall(__NR_futex, (long)&word, op | FUTEX_PRIVATE_FLAG, val, 0, 0, 0);
#else
	LG_KEEP_ERRNO;

	syscall(SYS_futex, &word, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
#endif
}

/* The mutex without a word to TSan: what the fork handlers use (below). */
static void lock_word(void)
{
	int c = 0;

	if (__atomic_compare_exchange_n(&word, &c, 1, false, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		return;
	if (c != 2)
		c = __atomic_exchange_n(&word, 2, __ATOMIC_ACQUIRE);
	while (c) {
		futex(FUTEX_WAIT, 2);
		c = __atomic_exchange_n(&word, 2, __ATOMIC_ACQUIRE);
	}
}

static void unlock_word(void)
{
	if (__atomic_exchange_n(&word, 0, __ATOMIC_RELEASE) == 2)
		futex(FUTEX_WAKE, 1);
}

LG_HOT void lg_lock(void)
{
	TSAN_LOCKING();
	lock_word();
	TSAN_LOCKED();
}

LG_HOT void lg_unlock(void)
{
	TSAN_UNLOCKING();
	unlock_word();
	TSAN_UNLOCKED();
}

/*
 * The handlers leave TSan out, as its fork() interceptor leaves out the
 * pthread calls and the memory accesses of every handler.
 *
 * The child: one thread, the mutex held (taken by the prepare handler in
 * the parent), the parent's fds. A waiter the parent had is not here: a
 * wake finds nobody, which is harmless.
 */
static void unlock_child(void)
{
	lg_proc_after_fork_child();
	unlock_word();
}

__attribute__((constructor)) static void register_atfork(void)
{
	pthread_atfork(lock_word, unlock_word, unlock_child);
}
