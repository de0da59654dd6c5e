/*
 * utf8_test: the UTF-8 check made before any JSON from outside is parsed
 * (lib/base/utf8.h): overlongs, surrogates, sequences cut short, code points
 * above U+10FFFF and raw NUL bytes are refused, by offset and hex value;
 * every well-formed character is accepted, and a large body is checked in
 * linear time.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "cause.h"
#include "kjson.h"
#include "utf8.h"

/* `len` bytes of `text` are refused at `offset`, with `words` in the cause,
 * and the cause holds only printable ASCII (never the bytes themselves). */
static void refused(const char *text, size_t len, size_t offset, const char *words)
{
	char *cause = NULL;

	assert_int_equal(utf8_invalid_at(text, len), offset);
	assert_int_equal(utf8_check(text, len, "the body", &cause), -1);
	assert_non_null(cause);
	if (!strstr(cause, words))
		fail_msg("cause \"%s\" does not say \"%s\"", cause, words);
	for (const char *c = cause; *c; c++)
		assert_true(*c >= 0x20 && *c < 0x7f);
	free(cause);
}

static void accepted(const char *text, size_t len)
{
	char *cause = NULL;

	assert_int_equal(utf8_invalid_at(text, len), len);
	assert_int_equal(utf8_check(text, len, "the body", &cause), 0);
	assert_null(cause);
}

#define REFUSED(lit, offset, words) refused(lit, sizeof(lit) - 1, offset, words)
#define ACCEPTED(lit) accepted(lit, sizeof(lit) - 1)

static void well_formed_text_is_accepted(void **state)
{
	(void)state;
	ACCEPTED("");
	ACCEPTED("{\"a\":\"plain ASCII, longer than eight bytes\"}");
	ACCEPTED("\x7f\x01\t\n");
	ACCEPTED("caf\xc3\xa9 \xc2\x80 \xdf\xbf"); /* U+00E9, U+0080, U+07FF */
	ACCEPTED("\xe0\xa0\x80 \xe2\x82\xac \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbf"); /* U+0800 .. U+FFFF */
	ACCEPTED("\xf0\x90\x80\x80 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"); /* U+10000, U+1F600, U+10FFFF */
	ACCEPTED("0123456\xc3\xa9"
		 "0123456789abcdef\xe2\x82\xac"); /* across the 8-byte steps */
}

static void overlongs_are_refused(void **state)
{
	(void)state;
	REFUSED("ab\xc0\x80", 2, "byte 0xC0 at offset 2"); /* NUL, overlong */
	REFUSED("\xc1\xbf", 0, "byte 0xC1 at offset 0");
	REFUSED("xy\xe0\x80\x80", 2, "byte 0xE0 at offset 2");
	REFUSED("\xe0\x9f\xbf", 0, "byte 0xE0 at offset 0");
	REFUSED("\xf0\x80\x80\x80", 0, "byte 0xF0 at offset 0");
	REFUSED("\xf0\x8f\xbf\xbf", 0, "byte 0xF0 at offset 0");
}

static void surrogates_and_beyond_the_last_code_point_are_refused(void **state)
{
	(void)state;
	REFUSED("\xed\xa0\x80", 0, "byte 0xED at offset 0"); /* U+D800 */
	REFUSED("a\xed\xbf\xbf", 1, "byte 0xED at offset 1"); /* U+DFFF */
	REFUSED("\xf4\x90\x80\x80", 0, "byte 0xF4 at offset 0"); /* U+110000 */
	REFUSED("\xf5\x80\x80\x80", 0, "byte 0xF5 at offset 0");
	REFUSED("\xff", 0, "byte 0xFF at offset 0");
	REFUSED("\xfe", 0, "byte 0xFE at offset 0");
}

static void stray_and_cut_sequences_are_refused(void **state)
{
	(void)state;
	REFUSED("abc\x80", 3, "byte 0x80 at offset 3"); /* a continuation alone */
	REFUSED("\xc3\x28", 0, "byte 0xC3 at offset 0"); /* a lead without its continuation */
	REFUSED("\xe2\x82\x28", 0, "byte 0xE2 at offset 0");
	REFUSED("\xf0\x9f\x98", 0, "ends inside a character, at offset 0");
	REFUSED("abcdefghij\xe2\x82", 10, "ends inside a character, at offset 10");
	REFUSED("x\xc3", 1, "ends inside a character, at offset 1");
	/* FF FE C0 80, the name of issue 34: refused at its first byte. */
	REFUSED("{\"name\":\"\xff\xfe\xc0\x80\"}", 9, "byte 0xFF at offset 9");
}

static void raw_nul_is_refused(void **state)
{
	(void)state;
	REFUSED("{\"a\":\"x\0y\"}", 7, "NUL byte (at offset 7)");
	REFUSED("0123456789abcdef\0", 16, "NUL byte (at offset 16)");
	REFUSED("\0", 0, "NUL byte (at offset 0)");
}

/* Escapes are cJSON's: a lone surrogate escape is a syntax error there, so
 * no tree built after the check holds an ill-formed string. */
static void lone_surrogate_escapes_are_refused_by_the_parser(void **state)
{
	static const char *const lone[] = { "{\"a\":\"\\udcff\"}", "{\"a\":\"\\ud800\"}",
					    "{\"a\":\"\\ud800x\"}", "{\"a\":\"\\ud800\\u0041\"}" };
	const char *pair = "{\"a\":\"\\ud83d\\ude00\"}";
	cJSON *root;
	char *cause = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(lone) / sizeof(lone[0]); i++) {
		root = kjson_parse_object(lone[i], strlen(lone[i]), "test", &cause);
		assert_null(root);
		free(cause);
		cause = NULL;
	}
	root = kjson_parse_object(pair, strlen(pair), "test", &cause);
	assert_non_null(root);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(root, "a")->valuestring, "\xf0\x9f\x98\x80");
	cJSON_Delete(root);
	/* And kjson_parse_object checks the bytes first. */
	assert_null(kjson_parse_object("{\"a\":\"\xff\"}", 10, "test", &cause));
	assert_string_equal(cause, "test is not valid UTF-8 (byte 0xFF at offset 6)");
	free(cause);
	assert_null(kjson_parse_object("{\"a\":\"x\0y\"}", 11, "test", &cause));
	assert_non_null(strstr(cause, "NUL byte (at offset 7)"));
	free(cause);
}

/* 4 MiB of mostly ASCII with multibyte characters throughout, and a bad
 * byte at its very end: found, fast. */
static void a_large_body_is_checked_in_linear_time(void **state)
{
	size_t size = 4u << 20;
	char *big = malloc(size);
	struct timespec t0, t1;
	double ms;

	(void)state;
	assert_non_null(big);
	for (size_t i = 0; i < size; i += 64) {
		memset(big + i, 'a', 64);
		memcpy(big + i + 30, "\xe2\x82\xac", 3);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	accepted(big, size);
	big[size - 1] = '\xc0';
	refused(big, size, size - 1, "at offset 4194303");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	/* About 2 ms optimised; generous for the sanitizers and a busy machine. */
	if (ms > 2000)
		fail_msg("checking 4 MiB twice took %.0f ms", ms);
	free(big);
}

/* A sentence cut inside a character by a precision is still text. */
static void causes_cut_inside_a_character_are_repaired(void **state)
{
	char text[] = "x \xc3\xa9\xe2\x82 \xff\xc0\x80 ok", *cause = NULL;

	(void)state;
	utf8_repair(text, strlen(text));
	assert_string_equal(text, "x \xc3\xa9?? ??? ok");
	/* "é" cut after its first byte by %.2s. */
	cause_fail(&cause, "name \"%.2s\" is bad", "a\xc3\xa9");
	assert_string_equal(cause, "name \"a?\" is bad");
	free(cause);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(well_formed_text_is_accepted),
		cmocka_unit_test(overlongs_are_refused),
		cmocka_unit_test(surrogates_and_beyond_the_last_code_point_are_refused),
		cmocka_unit_test(stray_and_cut_sequences_are_refused),
		cmocka_unit_test(raw_nul_is_refused),
		cmocka_unit_test(lone_surrogate_escapes_are_refused_by_the_parser),
		cmocka_unit_test(a_large_body_is_checked_in_linear_time),
		cmocka_unit_test(causes_cut_inside_a_character_are_repaired),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
