/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by the fuzz targets: libFuzzer's entry point and a check that aborts. */
#ifndef LIBGUARD_TESTS_FUZZ_H
#define LIBGUARD_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failed check is a crash, which is what libFuzzer and the replay catch. */
#define CHECK(cond) \
	do { \
		if (!(cond)) \
			abort(); \
	} while (0)

#endif
