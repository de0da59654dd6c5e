/*
 * json_patch_test: the one JSON Patch builder (lib/base/json_patch.h): each
 * op as RFC 6902 writes it, a missing value refused, ops moved in order, and
 * JSON Pointer tokens escaped (RFC 6901) or refused when they do not fit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "json_patch.h"

static void ops_are_written_as_rfc_6902_says(void **state)
{
	cJSON *patch = cJSON_CreateArray(), *more = cJSON_CreateArray();
	char *text;

	(void)state;
	assert_int_equal(json_patch_add(patch, "/a", cJSON_CreateString("x")), 0);
	assert_int_equal(json_patch_replace(patch, "/b", cJSON_CreateNumber(2)), 0);
	assert_int_equal(json_patch_remove(patch, "/c"), 0);
	assert_int_equal(json_patch_op(more, "add", "/d/0", cJSON_CreateObject()), 0);
	assert_int_equal(json_patch_add(patch, "/e", NULL), -1); /* no value: no op */
	assert_int_equal(json_patch_op(patch, "replace", "/e", NULL), -1);
	json_patch_append(patch, more);
	json_patch_append(patch, NULL);
	text = cJSON_PrintUnformatted(patch);
	assert_string_equal(text, "[{\"op\":\"add\",\"path\":\"/a\",\"value\":\"x\"},"
				  "{\"op\":\"replace\",\"path\":\"/b\",\"value\":2},"
				  "{\"op\":\"remove\",\"path\":\"/c\"},"
				  "{\"op\":\"add\",\"path\":\"/d/0\",\"value\":{}}]");
	free(text);
	cJSON_Delete(patch);
}

static void pointer_tokens_are_escaped_or_refused(void **state)
{
	char out[16], wide[32];
	const char *key = "muster.dev/a~b";

	(void)state;
	assert_int_equal(json_pointer_token(wide, sizeof(wide), key, strlen(key)), 0);
	assert_string_equal(wide, "muster.dev~1a~0b");
	assert_int_equal(json_pointer_token(out, sizeof(out), key, strlen(key)), -1); /* 16 + NUL */
	assert_int_equal(json_pointer_token(out, sizeof(out), key, 3), 0);
	assert_string_equal(out, "mus");
	/* 16 bytes hold 15 characters: one escape more does not fit. */
	assert_int_equal(json_pointer_token(out, sizeof(out), "aaaaaaaaaaaaaa/", 15), -1);
	assert_string_equal(out, "");
	assert_int_equal(json_pointer_token(out, 0, "a", 1), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ops_are_written_as_rfc_6902_says),
		cmocka_unit_test(pointer_tokens_are_escaped_or_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
