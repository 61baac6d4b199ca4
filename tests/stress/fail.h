/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How the standalone testers (stress-conc, the race testers) end a run that
 * found a fault, and tell time.
 */
#ifndef STRESS_FAIL_H
#define STRESS_FAIL_H

#include <stdarg.h>
#include <stdint.h>

/*
 * "PROG: FAIL (seed N): MESSAGE" on stderr, with write(2) only (it is
 * called from signal handlers), then _exit(1).
 */
void stress_vfail(const char *prog, uint64_t seed, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0), noreturn));
/* Seconds on the monotonic clock. */
double stress_now(void);

#endif
