// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * An rtld-audit(7) module that only says it was loaded, on stderr, from
 * la_version(): test_security runs a setuid program with it in LD_AUDIT to
 * show that glibc does not load audit modules named by path there, and
 * the same program without the setuid bit to show that the marker works.
 */
#include <link.h>
#include <unistd.h>

__attribute__((visibility("default"))) unsigned int la_version(unsigned int version);

unsigned int la_version(unsigned int version)
{
	static const char msg[] = "audit-marker: loaded\n";

	if (write(2, msg, sizeof(msg) - 1) < 0)
		return 0;
	return version;
}
