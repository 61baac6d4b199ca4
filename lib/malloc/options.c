// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * LIBGUARD_MALLOC: a comma-separated list of key=value (libguard-malloc(7)
 * has the grammar). Read at the first allocation, which can come before
 * libc has run a constructor: so no getenv() (whose result is fine, but
 * libc's environ may not be set yet), no stdio, no malloc. A bad list is
 * one line on stderr and the defaults, never a stop.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "gm.h"

struct gm_options gm_opt;

void gm_options_defaults(struct gm_options *o)
{
	*o = (struct gm_options){
		.sample = 20000,	/* <= 2% time on a malloc-heavy workload (bench/README: the guarded heap) */
		.all = false,
		.slots = 65536,
		.slot_pages = 1,
		.quarantine = SIZE_MAX,	/* every freed slot, until the pool needs it */
		.place = GM_RIGHT,
		.summary = false,
		.force_fallback = o->force_fallback,
	};
}

/* A decimal number in [lo, hi] from s[0..n); false if it is not one. */
static bool number(const char *s, size_t n, unsigned long lo, unsigned long hi, unsigned long *out)
{
	unsigned long v = 0;

	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' ||
		    __builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[i] - '0', &v))
			return false;
	}
	if (v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static bool word(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && !memcmp(s, w, n);
}

static void complain(int fd, const char *key, size_t keylen, const char *val, size_t vallen,
		     const char *want)
{
	char line[512];
	size_t len = 0;

#define PUT(p, n)                                                   \
	do {                                                        \
		size_t k_ = (n) < sizeof(line) - 1 - len ? (n) : sizeof(line) - 1 - len; \
		memcpy(line + len, (p), k_);                        \
		len += k_;                                          \
	} while (0)
	PUT("libguard-malloc: LIBGUARD_MALLOC: ", 34);
	if (val) {
		PUT("bad value '", 11);
		PUT(val, vallen > 64 ? 64 : vallen);
		PUT("' for ", 6);
		PUT(key, keylen > 32 ? 32 : keylen);
		PUT(" (", 2);
	} else {
		PUT("unknown setting '", 17);
		PUT(key, keylen > 64 ? 64 : keylen);
		PUT("' (", 3);
	}
	PUT(want, strlen(want));
	PUT("): using the defaults\n", 22);
#undef PUT
	if (fd >= 0 && write(fd, line, len) < 0)
		return;
}

#define KEYS "mode, sample, slots, pages, quarantine, align, summary"

/*
 * Parse spec into *o, which holds the defaults. 0, or -EINVAL after one
 * line on errfd: then *o is the defaults again.
 */
int gm_options_parse(struct gm_options *o, const char *spec, int errfd)
{
	struct gm_options v = *o;
	const char *s = spec;

	while (s && *s) {
		const char *end = strchr(s, ','), *eq;
		size_t n = end ? (size_t)(end - s) : strlen(s), kn, vn;
		const char *val;
		unsigned long num;
		const char *want = NULL;

		if (!n) {	/* empty item: "a,,b" or a trailing comma */
			s += 1;
			continue;
		}
		eq = memchr(s, '=', n);
		kn = eq ? (size_t)(eq - s) : n;
		val = eq ? eq + 1 : NULL;
		vn = eq ? n - kn - 1 : 0;
		if (!eq) {
			complain(errfd, s, kn, NULL, 0, "each setting is key=value; keys: " KEYS);
			goto bad;
		}
		if (word(s, kn, "mode")) {
			if (word(val, vn, "sample"))
				v.all = false;
			else if (word(val, vn, "all"))
				v.all = true;
			else
				want = "sample or all";
		} else if (word(s, kn, "sample")) {
			if (number(val, vn, 0, ULONG_MAX / 2, &num))
				v.sample = num;
			else
				want = "1 in N allocations: a number, 0 for none";
		} else if (word(s, kn, "slots")) {
			if (number(val, vn, 1, 1ul << 24, &num))
				v.slots = num;
			else
				want = "a number from 1 to 16777216";
		} else if (word(s, kn, "pages")) {
			if (number(val, vn, 1, 1024, &num))
				v.slot_pages = num;
			else
				want = "usable pages per slot, 1 to 1024";
		} else if (word(s, kn, "quarantine")) {
			if (number(val, vn, 0, ULONG_MAX, &num))
				v.quarantine = num;
			else
				want = "a number of freed slots";
		} else if (word(s, kn, "align")) {
			if (word(val, vn, "right"))
				v.place = GM_RIGHT;
			else if (word(val, vn, "left"))
				v.place = GM_LEFT;
			else if (word(val, vn, "random"))
				v.place = GM_RANDOM;
			else if (word(val, vn, "exact"))
				v.place = GM_EXACT;
			else
				want = "right, left, random or exact";
		} else if (word(s, kn, "summary")) {
			if (word(val, vn, "0") || word(val, vn, "1"))
				v.summary = val[0] == '1';
			else
				want = "0 or 1";
		} else {
			complain(errfd, s, kn, NULL, 0, "keys: " KEYS);
			goto bad;
		}
		if (want) {
			complain(errfd, s, kn, val, vn, want);
			goto bad;
		}
		s += n + (end ? 1 : 0);
	}
	*o = v;
	return 0;
bad:
	gm_options_defaults(o);
	return -EINVAL;
}

extern char **__environ;

/*
 * NAME's value, from libc's environ; before libc has set it, from
 * /proc/self/environ read once into a static buffer.
 */
char *gm_env(const char *name)
{
	static char buf[32768];
	static ssize_t buflen = -1;
	size_t n = strlen(name);

	if (__environ) {
		for (char **e = __environ; *e; e++)
			if (!strncmp(*e, name, n) && (*e)[n] == '=')
				return *e + n + 1;
		return NULL;
	}
	if (buflen < 0) {
		int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);

		buflen = 0;
		if (fd >= 0) {
			ssize_t r;

			while (buflen < (ssize_t)sizeof(buf) - 1 &&
			       (r = read(fd, buf + buflen, sizeof(buf) - 1 - buflen)) > 0)
				buflen += r;
			close(fd);
		}
		buf[buflen] = '\0';
	}
	for (char *e = buf; e < buf + buflen; e += strlen(e) + 1)
		if (!strncmp(e, name, n) && e[n] == '=')
			return e + n + 1;
	return NULL;
}

void gm_options_load(void)
{
	const char *force = gm_env("LIBGUARD_FORCE_FALLBACK");

	gm_opt.force_fallback = force && *force && strcmp(force, "0") != 0;
	gm_options_defaults(&gm_opt);
	gm_options_parse(&gm_opt, gm_env("LIBGUARD_MALLOC"), STDERR_FILENO);
}
