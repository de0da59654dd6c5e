/*
 * kjson_test: the bounded cJSON readers (lib/base/kjson.h) that every
 * decoder of a Kubernetes object uses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "kjson.h"

static cJSON *parse(const char *text)
{
	cJSON *root = cJSON_Parse(text);

	assert_non_null(root);
	return root;
}

static void members_and_paths(void **state)
{
	cJSON *root = parse("{\"a\": {\"b\": {\"c\": 1}}, \"n\": null, \"l\": [1]}");

	(void)state;
	assert_non_null(kjson_member(root, "n")); /* null kept as it is */
	assert_null(kjson_value(root, "n")); /* ... or read as absent */
	assert_null(kjson_member(root, "missing"));
	assert_null(kjson_member(kjson_member(root, "l"), "x")); /* not an object */
	assert_null(kjson_member(NULL, "a"));
	assert_int_equal(kjson_path(root, "a", "b", "c")->valueint, 1);
	assert_non_null(kjson_path(root, "a", NULL, NULL));
	assert_null(kjson_path(root, "a", "x", "c"));
	cJSON_Delete(root);
}

static void strings_are_bounded(void **state)
{
	cJSON *root = parse("{\"s\": \"abcd\", \"n\": 3, \"e\": \"\"}");
	const char *out = "x";
	char dst[5], words[64], *cause = NULL;

	(void)state;
	assert_int_equal(kjson_string(kjson_member(root, "s"), 4, &out), KJSON_OK);
	assert_string_equal(out, "abcd");
	assert_int_equal(kjson_string(kjson_member(root, "s"), 3, &out), KJSON_TOO_LONG);
	assert_null(out);
	assert_string_equal(kjson_status_text(KJSON_TOO_LONG, 3, words, sizeof(words)),
			    "longer than 3 bytes");
	assert_int_equal(kjson_string(kjson_member(root, "n"), 4, &out), KJSON_NOT_STRING);
	assert_int_equal(kjson_string(kjson_member(root, "absent"), 4, &out), KJSON_OK);
	assert_null(out);

	assert_int_equal(kjson_take_string(kjson_member(root, "s"), dst, 4, 1, "x.s", &cause), 0);
	assert_string_equal(dst, "abcd");
	assert_int_equal(kjson_take_string(kjson_member(root, "s"), dst, 3, 1, "x.s", &cause), -1);
	assert_string_equal(cause, "x.s is longer than 3 bytes");
	free(cause);
	cause = NULL;
	assert_int_equal(kjson_take_string(kjson_member(root, "e"), dst, 4, 1, "x.e", &cause), -1);
	assert_string_equal(cause, "x.e is empty");
	free(cause);
	cause = NULL;
	assert_int_equal(kjson_take_string(kjson_member(root, "e"), dst, 4, 0, "x.e", &cause), 0);
	assert_int_equal(kjson_take_string(NULL, dst, 4, 1, "x.m", &cause), -1);
	assert_string_equal(cause, "x.m is missing");
	free(cause);
	cause = NULL;
	assert_int_equal(kjson_take_string(kjson_member(root, "n"), dst, 4, 0, "x.n", &cause), -1);
	assert_string_equal(cause, "x.n is not a string");
	free(cause);
	cJSON_Delete(root);
}

static void counts_are_range_checked(void **state)
{
	cJSON *root = parse("{\"n\": 7, \"s\": \"12\", \"neg\": -1, \"f\": 1.5, \"big\": 3e9, \"t\": \"x\"}");
	long long v;
	uint32_t u;
	int present;
	char *cause = NULL;

	(void)state;
	assert_int_equal(kjson_count(kjson_member(root, "n"), 0, 10, &v), KJSON_OK);
	assert_int_equal(v, 7);
	assert_int_equal(kjson_count(kjson_member(root, "s"), 0, 10, &v), KJSON_NOT_COUNT);
	assert_int_equal(kjson_count(kjson_member(root, "s"), 0, 100, &v), KJSON_OK);
	assert_int_equal(v, 12);
	assert_int_equal(kjson_count(kjson_member(root, "absent"), 5, 10, &v), KJSON_OK);
	assert_int_equal(v, 5);
	assert_int_equal(kjson_count(kjson_member(root, "neg"), 0, 10, &v), KJSON_NOT_COUNT);
	assert_int_equal(kjson_count(kjson_member(root, "f"), 0, 10, &v), KJSON_NOT_COUNT);
	assert_int_equal(kjson_count(kjson_member(root, "t"), 0, 10, &v), KJSON_NOT_COUNT);

	assert_int_equal(kjson_take_count(kjson_member(root, "n"), &u, &present, "n", &cause), 0);
	assert_true(present);
	assert_int_equal(u, 7);
	assert_int_equal(kjson_take_count(kjson_member(root, "absent"), &u, &present, "a", &cause), 0);
	assert_false(present);
	assert_int_equal(kjson_take_count(kjson_member(root, "big"), &u, &present, "big", &cause), -1);
	assert_string_equal(cause, "big is not an integer in 0..2147483647");
	free(cause);
	cause = NULL;
	assert_int_equal(kjson_take_count(kjson_member(root, "s"), &u, &present, "s", &cause), -1);
	assert_string_equal(cause, "s is not a number");
	free(cause);
	cJSON_Delete(root);
}

static void truth_and_objects(void **state)
{
	cJSON *root = parse("{\"a\": true, \"b\": \"True\", \"c\": \"yes\", \"d\": false}");
	char *cause = NULL;
	cJSON *o;

	(void)state;
	assert_true(kjson_is_true(kjson_member(root, "a")));
	assert_true(kjson_is_true(kjson_member(root, "b")));
	assert_false(kjson_is_true(kjson_member(root, "c")));
	assert_false(kjson_is_true(kjson_member(root, "d")));
	cJSON_Delete(root);

	o = kjson_parse_object("{\"x\":1}", 7, "thing", &cause);
	assert_non_null(o);
	cJSON_Delete(o);
	assert_null(kjson_parse_object("[1]", 3, "thing", &cause));
	assert_string_equal(cause, "thing JSON is not an object");
	free(cause);
	cause = NULL;
	assert_null(kjson_parse_object("{", 1, "thing", &cause));
	assert_string_equal(cause, "thing is not valid JSON");
	free(cause);
	cause = NULL;
	assert_null(kjson_parse_object("{}", KJSON_OBJECT_MAX + 1u, "thing", &cause));
	assert_non_null(strstr(cause, "more than"));
	free(cause);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(members_and_paths),
		cmocka_unit_test(strings_are_bounded),
		cmocka_unit_test(counts_are_range_checked),
		cmocka_unit_test(truth_and_objects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
