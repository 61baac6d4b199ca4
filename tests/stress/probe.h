/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Touching memory that may fault: SIGSEGV and SIGBUS are caught and turned
 * into a return value with the signal, its si_code and the faulting
 * address, so that a tester can say "this page faulted with SEGV_MAPERR"
 * (a guard marker, or no VMA) rather than "SEGV_ACCERR" (the VMA's
 * protection forbids the access: PROT_NONE, or a write to PROT_READ).
 * Thread-safe: each thread has its own jump buffer.
 *
 * Plus the two ways of reading memory that do not fault at all, through
 * the kernel's get_user_pages: process_vm_readv() (honours the VMA's
 * protection) and /proc/self/mem (FOLL_FORCE: reads PROT_NONE pages, but
 * must never read through a guard).
 */
#ifndef STRESS_PROBE_H
#define STRESS_PROBE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct fault {
	int sig;		/* 0, SIGSEGV or SIGBUS */
	int code;		/* si_code */
	uintptr_t addr;		/* si_addr */
};

/*
 * Install the SIGSEGV and SIGBUS handlers. A signal outside a probe calls
 * unexpected(sig, si) (which should report and _exit) or, if NULL, kills
 * the process with the signal.
 */
void probe_init(void (*unexpected)(int sig, const siginfo_t *si));

/* Read n words at idx[] of page into out[]; 0, or the signal (f filled). */
int probe_read(const void *page, const size_t *idx, size_t n, uint64_t *out, struct fault *f);

/* Fill page (page_size bytes) with pattern p; 0, or the signal. */
int probe_fill(void *page, size_t page_size, uint32_t p, struct fault *f);

/* Write one word; 0, or the signal. */
int probe_store(volatile uint64_t *addr, uint64_t val, struct fault *f);

/* process_vm_readv() of len bytes at addr from ourselves: 0 or -errno. */
int probe_vm_readv(const void *addr, void *buf, size_t len);

/* pread() of /proc/self/mem (fd opened by this process): 0 or -errno. */
int probe_mem_read(int fd, const void *addr, void *buf, size_t len);

const char *probe_code_name(int sig, int code);	/* "SEGV_MAPERR", ... */

#endif
