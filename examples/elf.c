// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * elf [LIBRARY [AUDIT_MODULE]]: guard the holes of this program's own ELF
 * objects, and of LIBRARY (a library linked for 64 KiB pages) once
 * dlopen()ed, printing VMA counts before and after; then run /bin/true
 * under LD_AUDIT=AUDIT_MODULE with LIBGUARD_AUDIT_VERBOSE=1.
 */
#include <dlfcn.h>
#include <errno.h>
#include <guard.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count_vmas(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0, c;

	while (f && (c = getc(f)) != EOF)
		n += c == '\n';
	if (f)
		fclose(f);
	return n;
}

static void report(const char *what, int ret, int before)
{
	printf("elf: %s: ", what);
	if (ret >= 0)
		printf("%d hole(s) guarded; VMAs %d -> %d\n", ret, before, count_vmas());
	else
		printf("%s%s\n", strerror(-ret), ret == -EOPNOTSUPP ?
		       " (no native guards in file mappings: the PROT_NONE holes stay)" : "");
}

int main(int argc, char **argv)
{
	int before = count_vmas(), ret;

	setvbuf(stdout, NULL, _IONBF, 0);
	printf("elf: holes in this program's objects: %d\n", guard_elf_segments(NULL, GUARD_ELF_COUNT));
	report("this program", guard_elf_segments(NULL, GUARD_NATIVE), before);
	if (argc > 1) {
		void *h = dlopen(argv[1], RTLD_NOW);
		void *sym = h ? dlsym(h, "lib64k_fn") : NULL;

		if (!sym)
			return 1;
		printf("elf: %s: %d hole(s)\n", argv[1], guard_elf_segments(sym, GUARD_ELF_COUNT));
		before = count_vmas();
		ret = guard_elf_segments(sym, GUARD_NATIVE);
		report(argv[1], ret, before);
		if (ret < 0 && ret != -EOPNOTSUPP)
			return 1;
	}
	if (argc > 2) {
		char cmd[PATH_MAX + 256];

		snprintf(cmd, sizeof(cmd), "LIBGUARD_AUDIT_VERBOSE=1 LD_AUDIT=%s /bin/true", argv[2]);
		printf("elf: %s\n", cmd);
		if (system(cmd))
			return 1;
	}
	return 0;
}
