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
/*
 * The end of every such test (cmocka asserts). why is replace_mapping()'s
 * answer: if set, release [p, p + len) and skip, saying why. Otherwise
 * release (guard_unmap() or guard_stack_free()) of [p, p + len) must fail
 * with -EINVAL and leave the newcomer mapped, readable and as it was
 * filled, twice (the second time the library has forgotten the entry);
 * then the newcomer is unmapped, with what R_MREMAP moved away (moved_len
 * bytes).
 */
void replaced_check(const char *why, struct replaced *r, int (*release)(void *, size_t), char *p,
		    size_t len, size_t moved_len);

#endif
