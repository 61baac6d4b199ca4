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

#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void lg_lock(void)
{
	pthread_mutex_lock(&lock);
}

void lg_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

static void unlock_parent(void)
{
	pthread_mutex_unlock(&lock);
}

/* The child: one thread, the mutex held (by this thread), the parent's fds. */
static void unlock_child(void)
{
	lg_proc_after_fork_child();
	pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void register_atfork(void)
{
	pthread_atfork(lg_lock, unlock_parent, unlock_child);
}
