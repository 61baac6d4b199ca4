// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * JSON strings from arbitrary bytes (see json.h). An invalid byte becomes
 * U+FFFD rather than \u00XX of its value: \u00XX is a valid but different
 * character (0xff would read as "ÿ", the same as a real "ÿ" in the name),
 * so it would silently name another file; U+FFFD says "not text here",
 * and guard-maps gives the exact bytes beside it (name_hex).
 */
#include "json.h"

size_t json_utf8_len(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf;	/* the range of the second byte */

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;	/* a continuation byte, an overlong lead or beyond U+10FFFF */
	/* overlongs, surrogates (U+D800-DFFF) and above U+10FFFF: RFC 3629 */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (len < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

bool json_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0, n; i < len; i += n) {
		n = json_utf8_len(p + i, len - i);
		if (!n)
			return false;
	}
	return true;
}

void json_write_str(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	putc('"', f);
	for (size_t i = 0; i < len;) {
		size_t n = json_utf8_len(p + i, len - i);
		unsigned char c = p[i];

		if (!n) {
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		if (n > 1)
			fwrite(p + i, 1, n, f);
		else if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			putc(c, f);
		i += n;
	}
	putc('"', f);
}

void json_write_hex(FILE *f, const char *s, size_t len)
{
	putc('"', f);
	for (size_t i = 0; i < len; i++)
		fprintf(f, "%02x", (unsigned char)s[i]);
	putc('"', f);
}
