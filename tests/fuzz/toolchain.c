// SPDX-License-Identifier: LGPL-2.1-or-later
/* Configure-time check: clang can build and link a libFuzzer target with ASan. */
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return size && data[0] == 0x5a;
}
