/*
 * Unit tests of name_table: lookups by namespace/name across growth, a key
 * that differs only where namespace and name meet, removal during a walk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "name_table.h"

struct item {
	struct name_node node;
	char namespace[16], name[16];
	int index, seen;
};

#define ITEMS 1000

static void remove_odd(void *arg, struct name_node *node)
{
	struct item *it = (struct item *)node;

	it->seen++;
	if (it->index % 2)
		name_table_remove(arg, node);
}

static void finds_grows_and_removes(void **state)
{
	struct name_table table = { 0 };
	struct item *items = calloc(ITEMS, sizeof(*items));

	(void)state;
	assert_non_null(items);
	assert_null(name_table_find(&table, "a", "b"));
	for (int i = 0; i < ITEMS; i++) {
		snprintf(items[i].namespace, sizeof(items[i].namespace), "ns%d", i % 7);
		snprintf(items[i].name, sizeof(items[i].name), "j%d", i);
		items[i].index = i;
		items[i].node.namespace = items[i].namespace;
		items[i].node.name = items[i].name;
		assert_int_equal(name_table_insert(&table, &items[i].node), 0);
	}
	assert_int_equal(table.count, ITEMS);
	assert_true(table.bucket_count >= ITEMS);
	for (int i = 0; i < ITEMS; i++)
		assert_ptr_equal(name_table_find(&table, items[i].namespace, items[i].name), &items[i].node);
	assert_null(name_table_find(&table, "ns1", "j0")); /* j0 is in ns0 */
	/* "a/bc" and "ab/c" are different keys. */
	{
		struct item x = { .node = { .namespace = "a", .name = "bc" } },
			    y = { .node = { .namespace = "ab", .name = "c" } };

		assert_int_equal(name_table_insert(&table, &x.node), 0);
		assert_null(name_table_find(&table, "ab", "c"));
		assert_int_equal(name_table_insert(&table, &y.node), 0);
		assert_ptr_equal(name_table_find(&table, "ab", "c"), &y.node);
		name_table_remove(&table, &x.node);
		name_table_remove(&table, &y.node);
	}
	name_table_each(&table, remove_odd, &table);
	assert_int_equal(table.count, ITEMS / 2);
	for (int i = 0; i < ITEMS; i++) {
		assert_int_equal(items[i].seen, 1);
		if (i % 2)
			assert_null(name_table_find(&table, items[i].namespace, items[i].name));
		else
			assert_non_null(name_table_find(&table, items[i].namespace, items[i].name));
	}
	name_table_clear(&table);
	assert_null(table.buckets);
	assert_int_equal(table.count, 0);
	free(items);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(finds_grows_and_removes) };

	return cmocka_run_group_tests(tests, NULL, NULL);
}
