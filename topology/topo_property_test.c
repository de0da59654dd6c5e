/*
 * The placement core against an exhaustive search on random small cases
 * (topology/topo_property.h): a fixed seed and a count that runs in a few
 * seconds; `make bench` runs many more (topo_property_bench).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "topo_property.h"

static void random_cases_against_an_exhaustive_search(void **state)
{
	struct topo_property_counts counts = { 0 };
	char *failure = NULL;

	(void)state;
	if (topo_property_run(1, 3000, &counts, &failure) != 0)
		fail_msg("%s", failure);
	/* The generator reaches every feature and both answers. */
	assert_int_equal(counts.cases, 3000);
	assert_true(counts.hypernode_cases > 1000);
	assert_true(counts.placed_full > 500 && counts.placed_partial > 10);
	assert_true(counts.refused > 100 && counts.refused_request > 0);
	assert_true(counts.with_slices > 500 && counts.with_layers > 50 && counts.with_minimum > 200);
	assert_true(counts.with_exclusive > 100 && counts.with_group > 100 && counts.with_whole > 500);
	assert_true(counts.mixed_shapes > 500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(random_cases_against_an_exhaustive_search),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
