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
 * guard_unmap() pay twice and every fallback call once (callgrind). The
 * acquire and release orders are what sanitizers see, as with any
 * atomics: TSan takes them as the lock's happens-before.
 */
static int word;

static void futex(int op, int val)
{
	syscall(SYS_futex, &word, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

void lg_lock(void)
{
	int c = 0;

	if (__atomic_compare_exchange_n(&word, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	if (c != 2)
		c = __atomic_exchange_n(&word, 2, __ATOMIC_ACQUIRE);
	while (c) {
		LG_KEEP_ERRNO;

		futex(FUTEX_WAIT, 2);
		c = __atomic_exchange_n(&word, 2, __ATOMIC_ACQUIRE);
	}
}

void lg_unlock(void)
{
	if (__atomic_exchange_n(&word, 0, __ATOMIC_RELEASE) == 2) {
		LG_KEEP_ERRNO;

		futex(FUTEX_WAKE, 1);
	}
}

static void unlock_parent(void)
{
	lg_unlock();
}

/*
 * The child: one thread, the mutex held (taken by the prepare handler in
 * the parent), the parent's fds. A waiter the parent had is not here: a
 * wake finds nobody, which is harmless.
 */
static void unlock_child(void)
{
	lg_proc_after_fork_child();
	lg_unlock();
}

__attribute__((constructor)) static void register_atfork(void)
{
	pthread_atfork(lg_lock, unlock_parent, unlock_child);
}
