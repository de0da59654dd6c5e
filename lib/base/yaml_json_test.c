/*
 * Unit tests of yaml_json: JSON and YAML give the same tree, several YAML
 * documents become a list, nothing after a JSON document is dropped, and
 * deep nesting is refused before any parser sees it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "yaml_json.h"

static cJSON *parse(const char *text)
{
	char *cause = NULL;
	cJSON *t = yaml_json_parse(text, strlen(text), "input", &cause);

	if (!t)
		fail_msg("\"%s\": %s", text, cause);
	return t;
}

static void refused(const char *text, size_t size, const char *want)
{
	char *cause = NULL;

	assert_null(yaml_json_parse(text, size, "input", &cause));
	assert_non_null(cause);
	if (!strstr(cause, want))
		fail_msg("cause \"%s\" lacks \"%s\"", cause, want);
	free(cause);
}

static void json_and_yaml_alike(void **state)
{
	cJSON *a = parse("{\"a\": [\"x\", null], \"b\": {\"c\": \"1\"}}");
	cJSON *b = parse("a: [x, null]\nb:\n  c: '1'\n");

	(void)state;
	assert_true(cJSON_Compare(a, b, 1));
	cJSON_Delete(a);
	cJSON_Delete(b);
	/* Several YAML documents: a list, empty ones skipped. */
	a = parse("a: 1\n---\nb: 2\n---\n");
	assert_true(cJSON_IsArray(a));
	assert_int_equal(cJSON_GetArraySize(a), 2);
	cJSON_Delete(a);
}

static void nothing_after_json_is_dropped(void **state)
{
	cJSON *t;

	(void)state;
	/* JSON documents separated by --- are a YAML stream: both are read. */
	t = parse("{\"a\": 1}\n---\n{\"b\": 2}\n");
	assert_true(cJSON_IsArray(t));
	assert_int_equal(cJSON_GetArraySize(t), 2);
	cJSON_Delete(t);
	/* Trailing white space is nothing. */
	t = parse("{\"a\": 1}\n\n  \n");
	assert_true(cJSON_IsObject(t));
	cJSON_Delete(t);
	refused("{\"a\": 1}{\"b\": 2}", 16, "input: more content after the JSON document, at byte 8");
	refused("{\"a\": 1}\n{\"b\": 2}\n", 18, "more content after the JSON document, at byte 9");
	refused("[1, 2] trailing", 15, "more content after the JSON document, at byte 7");
}

static void deep_nesting_is_refused_first(void **state)
{
	size_t n = 100000;
	char *deep = malloc(2 * n + 1);

	(void)state;
	assert_non_null(deep);
	memset(deep, '[', n);
	memset(deep + n, ']', n);
	deep[2 * n] = '\0';
	refused(deep, 2 * n, "input: nested deeper than 64 levels (at byte 64)");
	memset(deep, '{', n);
	refused(deep, 2 * n, "nested deeper than 64 levels");
	free(deep);
	/* 64 levels are fine. */
	{
		char ok[200];
		cJSON *t;

		memset(ok, '[', 64);
		memset(ok + 64, ']', 64);
		ok[128] = '\0';
		t = parse(ok);
		cJSON_Delete(t);
	}
}

/* Issue 34: text that is not UTF-8, or holds a NUL byte, reaches neither
 * reader, JSON or YAML; the cause says where, not what. */
static void text_that_is_not_utf8_is_refused(void **state)
{
	(void)state;
	refused("{\"a\": \"\xff\xfe\xc0\x80\"}", 13, "input is not valid UTF-8 (byte 0xFF at offset 7)");
	refused("a: \xc0\x80\n", 6, "input is not valid UTF-8 (byte 0xC0 at offset 3)");
	refused("a: \xed\xa0\x80\n", 7, "byte 0xED at offset 3"); /* a surrogate */
	refused("{\"a\": \"x\0y\"}", 12, "input holds a NUL byte (at offset 8)");
	refused("a: x\0y\n", 7, "NUL byte (at offset 4)");
	refused("{\"a\": 1}\0\0", 10, "NUL byte (at offset 8)"); /* after the document too */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(json_and_yaml_alike),
		cmocka_unit_test(nothing_after_json_is_dropped),
		cmocka_unit_test(deep_nesting_is_refused_first),
		cmocka_unit_test(text_that_is_not_utf8_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
