// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * LIBGUARD_MALLOC's parser (lib/malloc/options.c, linked in alone): each
 * key and value, and every kind of bad list: one line on the descriptor,
 * the defaults kept, never a stop.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gm.h"

static struct gm_options parse_ok(const char *spec)
{
	struct gm_options o = { 0 };

	gm_options_defaults(&o);
	assert_int_equal(gm_options_parse(&o, spec, -1), 0);
	return o;
}

static void defaults(void **state)
{
	struct gm_options o = parse_ok(NULL), e = parse_ok("");

	(void)state;
	assert_int_equal(o.sample, 20000);
	assert_false(o.all);
	assert_true(o.slots >= 65536);	/* the floor: slots are cheap */
	assert_int_equal(o.slot_pages, 1);
	assert_int_equal(o.quarantine, SIZE_MAX);
	assert_int_equal(o.place, GM_RIGHT);
	assert_false(o.summary);
	assert_memory_equal(&o, &e, sizeof(o));
}

static void each_key(void **state)
{
	struct gm_options o = parse_ok("mode=all,sample=7,slots=100,pages=3,quarantine=0,align=left,summary=1");

	(void)state;
	assert_true(o.all);
	assert_int_equal(o.sample, 7);
	assert_int_equal(o.slots, 100);
	assert_int_equal(o.slot_pages, 3);
	assert_int_equal(o.quarantine, 0);
	assert_int_equal(o.place, GM_LEFT);
	assert_true(o.summary);
	assert_int_equal(parse_ok("align=right").place, GM_RIGHT);
	assert_int_equal(parse_ok("align=random").place, GM_RANDOM);
	assert_int_equal(parse_ok("align=exact").place, GM_EXACT);
	assert_false(parse_ok("mode=all,mode=sample").all);	/* the last one counts */
	assert_int_equal(parse_ok("sample=0").sample, 0);
	assert_int_equal(parse_ok(",sample=9,,").sample, 9);	/* empty items are nothing */
}

/* The bad list's line, read back from a pipe. */
static void bad(const char *spec, const char *needle)
{
	struct gm_options o = { 0 }, d = { 0 };
	char line[1024];
	int fds[2];
	ssize_t n;

	assert_int_equal(pipe(fds), 0);
	gm_options_defaults(&o);
	gm_options_defaults(&d);
	o.summary = true;	/* to see it reset */
	assert_int_equal(gm_options_parse(&o, spec, fds[1]), -EINVAL);
	close(fds[1]);
	n = read(fds[0], line, sizeof(line) - 1);
	close(fds[0]);
	assert_true(n > 0);
	line[n] = '\0';
	print_message("# %s -> %s", spec, line);
	assert_memory_equal(&o, &d, sizeof(o));
	assert_non_null(strstr(line, "libguard-malloc: LIBGUARD_MALLOC: "));
	assert_non_null(strstr(line, needle));
	assert_non_null(strstr(line, "using the defaults\n"));
	assert_ptr_equal(strchr(line, '\n'), line + n - 1);	/* one line */
}

static void bad_lists(void **state)
{
	(void)state;
	bad("sample=x", "bad value 'x' for sample");
	bad("sample=", "bad value '' for sample");
	bad("sample=-1", "bad value '-1' for sample");
	bad("sample=99999999999999999999999", "for sample");	/* overflows */
	bad("slots=0", "for slots");
	bad("slots=16777217", "for slots");
	bad("pages=1025", "for pages");
	bad("align=middle", "bad value 'middle' for align");
	bad("mode=some", "for mode");
	bad("summary=yes", "for summary");
	bad("colour=red", "unknown setting 'colour'");
	bad("sample", "unknown setting 'sample'");
	bad("mode=all,bogus=1", "unknown setting 'bogus'");
	/* A value longer than the line: cut, still one line. */
	bad("align=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    "for align");
}

static void environment(void **state)
{
	(void)state;
	setenv("LIBGUARD_MALLOC", "mode=all,align=exact", 1);
	setenv("LIBGUARD_FORCE_FALLBACK", "1", 1);
	gm_options_load();
	assert_true(gm_opt.all);
	assert_int_equal(gm_opt.place, GM_EXACT);
	assert_true(gm_opt.force_fallback);
	setenv("LIBGUARD_FORCE_FALLBACK", "0", 1);
	unsetenv("LIBGUARD_MALLOC");
	gm_options_load();
	assert_false(gm_opt.all);
	assert_false(gm_opt.force_fallback);
	assert_null(gm_env("LIBGUARD_MALLO"));	/* a prefix is not a name */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(each_key),
		cmocka_unit_test(bad_lists),
		cmocka_unit_test(environment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
