// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * secure-probe MODULE LIB: run by test_security, setuid root and run by
 * nobody, or plain. dlopen()s LIB (a library with holes, so that an
 * active libguard-audit.so has something to report), then dlopen()s
 * MODULE (libguard-audit.so) as a plain library and calls its
 * la_version() the way ld.so would. Prints "secure S la_version V": S is
 * AT_SECURE (1 in a setuid program run by another user), V what the
 * module answered (0: it declines to be an audit module).
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <sys/auxv.h>

int main(int argc, char **argv)
{
	unsigned int (*version)(unsigned int);
	void *lib, *mod;

	if (argc != 3 || !(lib = dlopen(argv[2], RTLD_NOW)) || !(mod = dlopen(argv[1], RTLD_NOW)) ||
	    !(version = (unsigned int (*)(unsigned int))dlsym(mod, "la_version"))) {
		fprintf(stderr, "secure-probe: %s\n", dlerror());
		return 2;
	}
	printf("secure %lu la_version %u\n", getauxval(AT_SECURE), version(LAV_CURRENT));
	return 0;
}
