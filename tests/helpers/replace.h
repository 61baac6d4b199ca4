/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * For the tests that guard_unmap() and guard_stack_free() never unmap
 * what the library did not map: take a wrapper's mapping away behind the
 * library's back and put someone else's mapping at its address.
 */
#ifndef LIBGUARD_TESTS_REPLACE_H
#define LIBGUARD_TESTS_REPLACE_H

#include <stdbool.h>
#include <stddef.h>

enum replace_how {
	R_ANON,		/* munmap, then a private anonymous mapping of the same shape */
	R_MEMFD,	/* munmap, then a shared mapping of a new memfd */
	R_FILE,		/* munmap, then a shared mapping of a new file on disk */
	R_MREMAP,	/* mremap the whole mapping away, then R_ANON at its address */
	R_NHOW
};

struct replaced {
	char *addr;		/* the newcomer, at the old address */
	size_t len;
	char *moved;		/* R_MREMAP: where the old mapping went */
	int fd;
};

const char *replace_name(enum replace_how how);
/*
 * Replace [addr, addr + len) (a whole mapping of a wrapper, guards
 * included) as how says; the newcomer is filled with 0xa5. NULL, or why
 * it can't be done here (the test then skips).
 */
const char *replace_mapping(char *addr, size_t len, enum replace_how how, struct replaced *r);
/* Is the newcomer still mapped, readable and as it was filled? */
bool replaced_intact(const struct replaced *r);
/* Unmap the newcomer (and what R_MREMAP moved away). */
void replaced_free(struct replaced *r, size_t moved_len);

#endif
