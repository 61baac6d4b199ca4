/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The THP and khugepaged settings the race testers make as eager as they go
 * inside the QEMU guest (--setup-sysfs), each put back at exit.
 */
#ifndef STRESS_KNOBS_H
#define STRESS_KNOBS_H

#include <stdbool.h>
#include <stddef.h>

#define THP "/sys/kernel/mm/transparent_hugepage/"

struct knob {
	const char *path, *value;
	char old[64];
	bool set;
};

/* A one-line file's contents, without the newline: 0 or -errno. */
int knob_read(const char *path, char *buf, size_t len);
int knob_write(const char *path, const char *val);
/* The selected word of a sysfs choice ("always [madvise] never" -> "madvise"). */
void knob_selected(char *s);
/*
 * Sets each knob, saying so on stdout as PROG; a shmem_enabled one only
 * from "never" (deny stays: that is a decision, not a default). What was
 * set is put back at exit. Once per program.
 */
void knobs_setup(const char *prog, struct knob *knobs, size_t n);
/* A khugepaged counter (pages_collapsed, full_scans), 0 if unreadable. */
unsigned long khugepaged_stat(const char *name);

#endif
