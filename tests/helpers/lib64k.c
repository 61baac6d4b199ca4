// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A small shared library linked for 64 KiB pages (meson: -z
 * max-page-size=0x10000 -z separate-code): on a 4 KiB-page kernel ld.so
 * leaves three PROT_NONE holes between its four segments, 8 VMAs in all.
 */
int lib64k_data = 42;
const char lib64k_ro[] = "read-only";

int lib64k_fn(int x)
{
	return x * lib64k_data + lib64k_ro[0];
}
