// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target: the /proc/PID/maps line parser (guard_maps_next(), and
 * guard-maps on other processes) and the smaps VmFlags parser. The input
 * is split at newlines like the file, and each line is given to both
 * parsers in a buffer of exactly its size, so that a read past its end is
 * an ASan report. What is accepted must be a well-formed VMA: end above
 * start, only PROT_READ/WRITE/EXEC, the name inside the line and without
 * the newline.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "fuzz.h"

static void one_line(const char *line, size_t len)
{
	struct lg_maps_line l;
	int kind;

	if (!lg_maps_parse(line, &l)) {
		CHECK(l.start < l.end);
		CHECK(!(l.prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)));
		CHECK(l.name >= line && l.name + l.name_len <= line + len);
		CHECK(!memchr(l.name, '\n', l.name_len));
		CHECK(l.name_len == 0 || l.name[0] != ' ');
	}
	kind = lg_vmflags_kind(line);
	CHECK(!(kind & ~(LG_VM_SPECIAL | LG_VM_LOCKED | LG_VM_HUGETLB)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;

	while (p < end) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		char *line = malloc(len + 1);

		if (!line)
			abort();
		memcpy(line, p, len);
		line[len] = '\0';
		/* An embedded NUL ends the line, as it would for getline() users. */
		one_line(line, strlen(line));
		free(line);
		p += len;
	}
	return 0;
}
