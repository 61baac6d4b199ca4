// SPDX-License-Identifier: LGPL-2.1-or-later
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

static const struct {
	const char *name;
	unsigned int bit;
} cap_names[] = {
	{ "anon", EXPECT_ANON },
	{ "shmem", EXPECT_SHMEM },
	{ "file", EXPECT_FILE },
	{ "readonly", EXPECT_READONLY },
	{ "pagemap", EXPECT_PAGEMAP },
	{ "pagemap_scan", EXPECT_PAGEMAP_SCAN },
	{ "process_madvise", EXPECT_PROCESS_MADVISE },
	{ "maybe_guard", EXPECT_MAYBE_GUARD },
	{ "pidfd_self", EXPECT_PIDFD_SELF },
};

static unsigned int parse_caps(const char *list)
{
	unsigned int caps = 0;
	char *copy = strdup(list), *save = NULL;

	if (!copy)
		abort();
	for (char *tok = strtok_r(copy, ", \n", &save); tok; tok = strtok_r(NULL, ", \n", &save)) {
		size_t i;

		if (!strcmp(tok, "none"))
			continue;
		for (i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++)
			if (!strcmp(tok, cap_names[i].name))
				break;
		if (i == sizeof(cap_names) / sizeof(cap_names[0])) {
			fprintf(stderr, "LIBGUARD_EXPECT_CAPS: unknown capability '%s'\n", tok);
			abort();
		}
		caps |= cap_names[i].bit;
	}
	free(copy);
	return caps;
}

unsigned int expect_caps(const char **why)
{
	static __thread char reason[160];
	const char *env = getenv("LIBGUARD_EXPECT_CAPS");
	struct utsname u;
	unsigned int major = 0, minor = 0, caps = 0;

	if (env) {
		snprintf(reason, sizeof(reason), "LIBGUARD_EXPECT_CAPS=%s", env);
		*why = reason;
		return parse_caps(env);
	}
	if (uname(&u) == 0)
		sscanf(u.release, "%u.%u", &major, &minor);
	/* Upstream: anonymous guards and process_madvise() on self in 6.13;
	 * file-backed, shmem, read-only and pagemap reporting in 6.15. */
	if (major > 6 || (major == 6 && minor >= 13))
		caps |= EXPECT_ANON | EXPECT_PROCESS_MADVISE;
	if (major > 6 || (major == 6 && minor >= 15))
		caps |= EXPECT_PIDFD_SELF;
	if (major > 6 || (major == 6 && minor >= 15))
		caps |= EXPECT_SHMEM | EXPECT_FILE | EXPECT_READONLY | EXPECT_PAGEMAP |
			EXPECT_PAGEMAP_SCAN;
	/* VM_MAYBE_GUARD, smaps "gu": 6.19 (some vendor 6.18s have it too). */
	if (major > 6 || (major == 6 && minor >= 19))
		caps |= EXPECT_MAYBE_GUARD;
	snprintf(reason, sizeof(reason), "upstream kernel %u.%u on the host", major, minor);
	*why = reason;
	return caps;
}

const char *expect_caps_str(unsigned int caps)
{
	static char buf[128];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++)
		if (caps & cap_names[i].bit)
			len += snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? "," : "",
					cap_names[i].name);
	return len ? buf : "none";
}
