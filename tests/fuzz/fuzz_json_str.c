// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target: the JSON strings of guard-maps --json (tools/json.c), for a
 * name of any bytes. The output is checked by a decoder of its own, not
 * by the encoder's tables: one JSON string (quotes at both ends, nothing
 * after), no raw control character, only JSON's escapes, valid UTF-8
 * (no overlong form, no surrogate, nothing above U+10FFFF, including what
 * \u escapes spell); and it decodes back to the input where the input is
 * UTF-8, with U+FFFD for each byte that is not. json_write_hex() must give
 * the bytes back too, and json_utf8_valid() agree with the decoder here.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "fuzz.h"

/*
 * One UTF-8 sequence at s: its code point and length, or length 0 if it
 * is not well-formed, by arithmetic on the code point (the encoder uses
 * the table of second-byte ranges instead).
 */
static size_t decode_utf8(const uint8_t *s, size_t len, uint32_t *cp)
{
	static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t n = s[0] < 0x80 ? 1 : s[0] >> 5 == 6 ? 2 : s[0] >> 4 == 14 ? 3 : s[0] >> 3 == 30 ? 4 : 0;
	uint32_t c;

	if (!n || n > len)
		return 0;
	c = n == 1 ? s[0] : s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

static size_t put_utf8(uint8_t *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (uint8_t)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (uint8_t)(0xc0 | c >> 6);
		out[1] = (uint8_t)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (uint8_t)(0xe0 | c >> 12);
		out[1] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
		out[2] = (uint8_t)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (uint8_t)(0xf0 | c >> 18);
	out[1] = (uint8_t)(0x80 | (c >> 12 & 0x3f));
	out[2] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
	out[3] = (uint8_t)(0x80 | (c & 0x3f));
	return 4;
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode the JSON string s[0, len) into out (UTF-8): its length, or abort. */
static size_t decode_json(const uint8_t *s, size_t len, uint8_t *out)
{
	size_t i = 1, o = 0;

	CHECK(len >= 2 && s[0] == '"' && s[len - 1] == '"');
	while (i < len - 1) {
		uint32_t c;
		size_t n;

		CHECK(s[i] >= 0x20 && s[i] != 0x7f);	/* escaped, every one */
		CHECK(s[i] != '"');			/* the string ends only at the end */
		if (s[i] != '\\') {
			n = decode_utf8(s + i, len - 1 - i, &c);
			CHECK(n);
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
			continue;
		}
		CHECK(i + 1 < len - 1);
		switch (s[i + 1]) {
		case '"': case '\\': case '/':
			out[o++] = s[i + 1];
			i += 2;
			continue;
		case 'b': out[o++] = '\b'; i += 2; continue;
		case 'f': out[o++] = '\f'; i += 2; continue;
		case 'n': out[o++] = '\n'; i += 2; continue;
		case 'r': out[o++] = '\r'; i += 2; continue;
		case 't': out[o++] = '\t'; i += 2; continue;
		case 'u':
			break;
		default:
			CHECK(0);
		}
		CHECK(i + 6 <= len - 1);
		c = 0;
		for (int k = 2; k < 6; k++) {
			int h = hexval(s[i + k]);

			CHECK(h >= 0);
			c = c << 4 | (uint32_t)h;
		}
		/* no surrogate: a \u escape is one whole character here */
		CHECK(c < 0xd800 || c > 0xdfff);
		o += put_utf8(out + o, c);
		i += 6;
	}
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *dec, *want;
	size_t len = 0, dlen, wlen = 0;
	bool valid = true;
	char *buf = NULL;
	FILE *f;

	/* what the output must decode to: the input, U+FFFD for each bad byte */
	want = malloc(3 * size + 1);
	CHECK(want);
	for (size_t i = 0, n; i < size; i += n) {
		uint32_t c;

		n = decode_utf8(data + i, size - i, &c);
		if (n) {
			memcpy(want + wlen, data + i, n);
			wlen += n;
		} else {
			wlen += put_utf8(want + wlen, 0xfffd);
			valid = false;
			n = 1;
		}
	}
	CHECK(json_utf8_valid((const char *)data, size) == valid);

	f = open_memstream(&buf, &len);
	CHECK(f);
	json_write_str(f, (const char *)data, size);
	CHECK(!fclose(f));
	dec = malloc(len + 1);
	CHECK(dec);
	dlen = decode_json((const uint8_t *)buf, len, dec);
	CHECK(dlen == wlen && !memcmp(dec, want, wlen));
	free(buf);
	free(dec);
	free(want);

	buf = NULL;
	f = open_memstream(&buf, &len);
	CHECK(f);
	json_write_hex(f, (const char *)data, size);
	CHECK(!fclose(f));
	CHECK(len == 2 * size + 2 && buf[0] == '"' && buf[len - 1] == '"');
	for (size_t i = 0; i < size; i++)
		CHECK(hexval((uint8_t)buf[1 + 2 * i]) * 16 + hexval((uint8_t)buf[2 + 2 * i]) ==
		      data[i]);
	free(buf);
	return 0;
}
