/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * JSON strings for guard-maps --json, from names that are any bytes (a
 * file name is not necessarily UTF-8). Separate from the tool so that the
 * fuzz target (tests/fuzz/fuzz_json_str.c) checks exactly what it prints.
 */
#ifndef GUARD_MAPS_JSON_H
#define GUARD_MAPS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Length of the well-formed UTF-8 sequence at s (1 to 4), 0 if none. */
size_t json_utf8_len(const unsigned char *s, size_t len);
/* Are the len bytes at s all well-formed UTF-8? */
bool json_utf8_valid(const char *s, size_t len);
/*
 * s[0, len) as a quoted JSON string of valid UTF-8: '"' and '\\' and every
 * control character (U+0000-U+001F, U+007F) escaped, every byte that is
 * not part of a well-formed UTF-8 sequence written as \ufffd (U+FFFD, one
 * per byte), everything else as it is.
 */
void json_write_str(FILE *f, const char *s, size_t len);
/* s[0, len) as a quoted string of lowercase hex digits, two per byte. */
void json_write_hex(FILE *f, const char *s, size_t len);

#endif
