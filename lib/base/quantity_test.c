/*
 * quantity_test: the one quantity parser (lib/base/quantity.h), as the
 * placement input and the webhook's flags read quantities.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "quantity.h"

static void quantities(void **state)
{
	static const struct {
		const char *text;
		long long want;
	} cases[] = {
		{ "500m", 500 },
		{ "2", 2000 },
		{ "0.5", 500 },
		{ ".5", 500 },
		{ "1.5", 1500 },
		{ "0.05", 50 },
		{ "64Gi", 64LL * 1073741824 * 1000 },
		{ "1Ki", 1024000 },
		{ "100M", 100000000000LL },
		{ "1k", 1000000 },
		{ "1e3", 1000000 },
		{ "1E3", 1000000 },
		{ "2.5e-3", 3 }, /* 2.5 thousandths, rounded up */
		{ "1e-3", 1 },
		{ "1n", 1 }, /* rounded up, as MilliValue() */
		{ "250u", 1 },
		{ "1500u", 2 },
		{ "+3", 3000 },
		{ "-0", 0 },
		{ "0", 0 },
		{ "7910m", 7910 },
		{ "1Ti", 1099511627776000LL },
		{ "3Pi", 3377699720527872000LL },
		{ "4Pi", -1 }, /* out of range in thousandths */
		{ "1E", -1 }, /* 10^18 units */
		{ "1Ei", -1 },
		{ "-1", -1 },
		{ "", -1 },
		{ "m", -1 },
		{ "1K", -1 },
		{ "1.2.3", -1 },
		{ "1e", -1 },
		{ "1e3m", -1 },
		{ "12 ", -1 },
		{ "abc", -1 },
		{ "99999999999999999999999", -1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (quantity_parse(cases[i].text) != cases[i].want)
			fail_msg("quantity \"%s\": %lld, want %lld", cases[i].text,
				 quantity_parse(cases[i].text), cases[i].want);
	assert_int_equal(quantity_parse(NULL), -1);
}

/* What the webhook's --barrier-cpu / --barrier-memory flags take: every
 * quantity the apiserver takes, not only the suffixes once listed by hand. */
static void flag_values(void **state)
{
	static const char *const ok[] = { "10m", "16Mi", "0.5", "1Ti", "1e3", ".5", "32M", "0" };
	static const char *const bad[] = { "ten", "16 Mi", "-1", "1x", "Mi", "" };

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (quantity_parse(ok[i]) < 0)
			fail_msg("\"%s\" refused", ok[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (quantity_parse(bad[i]) >= 0)
			fail_msg("\"%s\" taken", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(quantities),
		cmocka_unit_test(flag_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
