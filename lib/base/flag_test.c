/*
 * Unit tests of lib/base/flag: both value forms, a missing value, number ranges.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "flag.h"

static void takes_both_forms(void **state)
{
	char *argv[] = { (char *)"prog", (char *)"--port=9443", (char *)"--name", (char *)"x",
			 (char *)"--last" };
	char name[FLAG_NAME_MAX];
	const char *flag, *value;
	int i = 1;

	(void)state;
	assert_int_equal(flag_take(5, argv, &i, name, &flag, &value), 0);
	assert_string_equal(flag, "--port");
	assert_string_equal(value, "9443");
	assert_int_equal(i, 1);
	i = 2;
	assert_int_equal(flag_take(5, argv, &i, name, &flag, &value), 0);
	assert_string_equal(flag, "--name");
	assert_string_equal(value, "x");
	assert_int_equal(i, 3);
	i = 4;
	assert_int_equal(flag_take(5, argv, &i, name, &flag, &value), -1);
	assert_string_equal(flag, "--last");
}

static void numbers_in_range(void **state)
{
	unsigned long n = 0;

	(void)state;
	assert_int_equal(flag_number("42", 1, 64, &n), 0);
	assert_int_equal(n, 42);
	assert_int_equal(flag_number("0", 1, 64, &n), -1);
	assert_int_equal(flag_number("65", 1, 64, &n), -1);
	assert_int_equal(flag_number("-1", 0, 64, &n), -1);
	assert_int_equal(flag_number("4x", 0, 64, &n), -1);
	assert_int_equal(flag_number("", 0, 64, &n), -1);
	assert_int_equal(flag_number("99999999999999999999999", 0, 64, &n), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(takes_both_forms),
		cmocka_unit_test(numbers_in_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
