/*
 * Unit tests of lib/base/flag: both value forms, a missing value, number ranges.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const char *even_problem(const char *value)
{
	return strlen(value) % 2 ? "not of even length" : NULL;
}

struct parsed {
	const char *text;
	unsigned long number;
	int on, quiet;
};

static int parse(struct parsed *p, int argc, const char **args)
{
	const struct flag_def table[] = {
		{ FLAG_SECTION, NULL, NULL, "Heading", 0, 0, NULL, NULL },
		{ FLAG_TEXT, "--text", "T", "a text\nsecond line", 0, 0, even_problem, &p->text },
		{ FLAG_NUMBER, "--number", "N", "a number", 2, 9, NULL, &p->number },
		{ FLAG_BOOL, "--on", "BOOL", "a bool", 0, 0, NULL, &p->on },
		{ FLAG_SWITCH, "--quiet", NULL, "a switch", 0, 0, NULL, &p->quiet },
	};
	char *argv[16];

	for (int i = 0; i < argc; i++)
		argv[i] = (char *)args[i];
	return flag_parse(argc, argv, "prog", "v1", "head\n", table, sizeof(table) / sizeof(table[0]),
			  "tail\n");
}

static void table_takes_every_type(void **state)
{
	struct parsed p = { NULL, 0, 0, 0 };
	const char *args[] = { "prog", "--text", "ab", "--number=7", "--on", "true", "--quiet" };

	(void)state;
	assert_int_equal(parse(&p, 7, args), 0);
	assert_string_equal(p.text, "ab");
	assert_int_equal(p.number, 7);
	assert_int_equal(p.on, 1);
	assert_int_equal(p.quiet, 1);
}

static void table_refuses_bad_values(void **state)
{
	struct parsed p = { NULL, 5, 1, 0 };
	const char *odd[] = { "prog", "--text", "abc" };
	const char *low[] = { "prog", "--number", "1" };
	const char *maybe[] = { "prog", "--on=maybe" };
	const char *unknown[] = { "prog", "--nope", "1" };
	const char *missing[] = { "prog", "--number" };
	const char *heading[] = { "prog", "Heading", "x" };

	(void)state;
	assert_int_equal(parse(&p, 3, odd), 2);
	assert_int_equal(parse(&p, 3, low), 2);
	assert_int_equal(parse(&p, 2, maybe), 2);
	assert_int_equal(parse(&p, 3, unknown), 2);
	assert_int_equal(parse(&p, 2, missing), 2);
	assert_int_equal(parse(&p, 3, heading), 2);
	/* Nothing refused was stored. */
	assert_null(p.text);
	assert_int_equal(p.number, 5);
	assert_int_equal(p.on, 1);
}

static void usage_aligns_and_continues(void **state)
{
	const struct flag_def table[] = {
		{ FLAG_SECTION, NULL, NULL, "Heading", 0, 0, NULL, NULL },
		{ FLAG_TEXT, "--text", "T", "a text\nsecond line", 0, 0, NULL, NULL },
		{ FLAG_SWITCH, "--a-very-long-switch-name", NULL, "long", 0, 0, NULL, NULL },
	};
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	(void)state;
	assert_non_null(out);
	flag_usage(out, "head\n", table, 3, "tail\n");
	fclose(out);
	assert_string_equal(text, "head\n"
				  "Heading\n"
				  "  --text T                 a text\n"
				  "                           second line\n"
				  "  --a-very-long-switch-name long\n"
				  "tail\n");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(takes_both_forms),	      cmocka_unit_test(numbers_in_range),
		cmocka_unit_test(table_takes_every_type),     cmocka_unit_test(table_refuses_bad_values),
		cmocka_unit_test(usage_aligns_and_continues),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
