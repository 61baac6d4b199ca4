/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * guard-advice.so: makes Debian's trinity (1.9+git20230109.87f1530-1)
 * fuzz guard regions. Loaded with LD_PRELOAD by tests/trinity/run-vm.
 *
 * Why: that trinity predates guard regions (Linux 6.13). Its madvise()
 * advice list stops at MADV_PAGEOUT (21) and its process_madvise() list
 * holds MADV_COLD and MADV_PAGEOUT, and trinity only ever picks an advice
 * from those lists, so it would never call MADV_GUARD_INSTALL (102) or
 * MADV_GUARD_REMOVE (103): the code this project adds to the kernel would
 * go unfuzzed. Upstream trinity's fix would be two lines in
 * syscalls/madvise.c and syscalls/process_madvise.c, but Debian's mirror
 * serves this project the binary package only, not the source, so the
 * same change is made here, at run time, to trinity's own tables.
 *
 * How: trinity exports each syscall's table entry (struct syscallentry,
 * e.g. syscall_madvise) as a dynamic symbol. An entry's arglists are
 * { unsigned int num; unsigned long *values; } at a fixed offset; this
 * constructor, which runs before trinity's main(), checks that the entry
 * is the one expected (its name, its argument count, the exact advice
 * list of this build) and points the advice arglist at a copy with 102
 * and 103 appended. Anything unexpected (another trinity build) ends the
 * program with a message instead of fuzzing something else.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103

struct arglist {
	unsigned int num;
	unsigned long *values;
};

/* Offsets in this build's struct syscallentry (25472 bytes). */
enum {
	ENTRY_NAME = 40,	/* const char name[] */
	ENTRY_NUM_ARGS = 120,	/* unsigned int num_args */
	ENTRY_ARGLISTS = 25368, /* struct arglist arg1list..arg6list */
};

static unsigned long madvise_advice[] = {
	0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
	MADV_GUARD_INSTALL, MADV_GUARD_REMOVE,
};
static unsigned long process_madvise_advice[] = {
	20, 21, MADV_GUARD_INSTALL, MADV_GUARD_REMOVE,
};

static void add_guard_advice(const char *sym, const char *name, unsigned int nargs,
			     unsigned int arg, unsigned long *values, unsigned int num)
{
	char *entry = dlsym(RTLD_DEFAULT, sym);
	struct arglist *list;

	if (!entry) {
		fprintf(stderr, "guard-advice: no symbol %s in this program\n", sym);
		exit(1);
	}
	list = (struct arglist *)(entry + ENTRY_ARGLISTS) + (arg - 1);
	/* the list as this trinity build has it: the same values minus ours */
	if (strcmp(entry + ENTRY_NAME, name) ||
	    *(unsigned int *)(entry + ENTRY_NUM_ARGS) != nargs || list->num != num - 2 ||
	    memcmp(list->values, values, (num - 2) * sizeof(*values))) {
		fprintf(stderr, "guard-advice: %s is not the table of Debian's trinity "
				"1.9+git20230109.87f1530-1; not changing it\n", sym);
		exit(1);
	}
	list->values = values;
	list->num = num;
}

__attribute__((constructor)) static void guard_advice_init(void)
{
	add_guard_advice("syscall_madvise", "madvise", 3, 3, madvise_advice,
			 sizeof(madvise_advice) / sizeof(madvise_advice[0]));
	add_guard_advice("syscall_process_madvise", "process_madvise", 5, 4,
			 process_madvise_advice,
			 sizeof(process_madvise_advice) / sizeof(process_madvise_advice[0]));
	if (getenv("GUARD_ADVICE_VERBOSE"))
		fprintf(stderr, "guard-advice: madvise and process_madvise may now pick "
				"MADV_GUARD_INSTALL and MADV_GUARD_REMOVE\n");
}
