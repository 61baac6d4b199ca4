// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * guard_version() and the GUARD_VERSION_* macros agree with each other
 * and with meson's project version (LIBGUARD_VERSION, from meson.build);
 * tests/version-coherence checks the .pc file, the map and the man pages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <guard.h>

static void agree(void **state)
{
	char numbers[64];

	(void)state;
	assert_string_equal(guard_version(), LIBGUARD_VERSION);
	assert_string_equal(GUARD_VERSION_STRING, LIBGUARD_VERSION);
	snprintf(numbers, sizeof(numbers), "%d.%d.%d", GUARD_VERSION_MAJOR, GUARD_VERSION_MINOR,
		 GUARD_VERSION_MICRO);
	assert_string_equal(numbers, LIBGUARD_VERSION);
	assert_ptr_equal(guard_version(), guard_version());	/* static */
}

static void at_least(void **state)
{
	(void)state;
	assert_true(GUARD_VERSION_AT_LEAST(0, 0));
	assert_true(GUARD_VERSION_AT_LEAST(GUARD_VERSION_MAJOR, GUARD_VERSION_MINOR));
	assert_false(GUARD_VERSION_AT_LEAST(GUARD_VERSION_MAJOR, GUARD_VERSION_MINOR + 1));
	assert_false(GUARD_VERSION_AT_LEAST(GUARD_VERSION_MAJOR + 1, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(agree),
		cmocka_unit_test(at_least),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
