/*
 * Unit tests of barrier_core: attempt parsing, the volume and push verdicts,
 * the push line parser, the token checks and the exit-code table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "barrier_core.h"

#define TOKEN "0123456789abcdef-token"

static int parse(const char *text, uint32_t *out)
{
	return barrier_parse_attempt(text, strlen(text), out);
}

static void attempt_accepts_decimal_with_surrounding_space(void **state)
{
	uint32_t v = 99;

	(void)state;
	assert_int_equal(parse("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse("7\n", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(parse(" \t12 \r\n", &v), 0);
	assert_int_equal(v, 12);
	assert_int_equal(parse("0003", &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(parse("2147483647", &v), 0);
	assert_int_equal(v, 2147483647u);
}

static void attempt_rejects_everything_else(void **state)
{
	static const char *const bad[] = {
		"",	" ",	      "\n",	     "-1",	    "+1",  "1.0",  "1 2", "abc",
		"0x10", "2147483648", "99999999999", "00000000001", "1e3", "true", "１",
	};
	uint32_t v = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &v), -1);
		assert_int_equal(v, 42);
	}
	/* An embedded NUL is not a terminator. */
	assert_int_equal(barrier_parse_attempt("1\0"
					       "2",
					       3, &v),
			 -1);
}

static void volume_verdicts(void **state)
{
	uint32_t released = 0;

	(void)state;
	assert_int_equal(barrier_judge_volume(0, "5", 1, 3, &released), BARRIER_VOLUME_EMPTY);
	assert_int_equal(barrier_judge_volume(1, "", 0, 3, &released), BARRIER_VOLUME_INVALID);
	assert_int_equal(barrier_judge_volume(1, "yes", 3, 3, &released), BARRIER_VOLUME_INVALID);
	assert_int_equal(barrier_judge_volume(1, "2", 1, 3, &released), BARRIER_VOLUME_STALE);
	assert_int_equal(released, 2);
	assert_int_equal(barrier_judge_volume(1, "3", 1, 3, &released), BARRIER_VOLUME_RELEASED);
	assert_int_equal(released, 3);
	/* A later attempt's release also lets an earlier attempt's pod pass. */
	assert_int_equal(barrier_judge_volume(1, "4\n", 2, 3, &released), BARRIER_VOLUME_RELEASED);
	assert_int_equal(released, 4);
	assert_int_equal(barrier_judge_volume(1, "0", 1, 0, &released), BARRIER_VOLUME_RELEASED);
	assert_string_equal(barrier_volume_verdict_name(BARRIER_VOLUME_STALE), "stale");
}

static int push_parse(const char *line, struct barrier_push_msg *msg, const char **cause)
{
	return barrier_push_parse(line, strlen(line), msg, cause);
}

static void push_parses_a_release(void **state)
{
	struct barrier_push_msg msg;
	const char *cause = NULL;

	(void)state;
	assert_int_equal(push_parse("MUSTER1 RELEASE 3 " TOKEN, &msg, &cause), 0);
	assert_int_equal(msg.attempt, 3);
	assert_int_equal(msg.token_len, strlen(TOKEN));
	assert_memory_equal(msg.token, TOKEN, strlen(TOKEN));
	/* A CR before the newline is tolerated. */
	assert_int_equal(push_parse("MUSTER1 RELEASE 0 " TOKEN "\r", &msg, &cause), 0);
	assert_int_equal(msg.attempt, 0);
	assert_int_equal(msg.token_len, strlen(TOKEN));
}

static void push_rejects_malformed_lines(void **state)
{
	static const char *const bad[] = {
		"",
		"MUSTER1",
		"MUSTER1 RELEASE",
		"MUSTER1 RELEASE 3",
		"MUSTER1 RELEASE 3 ",
		"MUSTER2 RELEASE 3 " TOKEN,
		"muster1 RELEASE 3 " TOKEN,
		"MUSTER1 release 3 " TOKEN,
		"MUSTER1 HOLD 3 " TOKEN,
		"MUSTER1  RELEASE 3 " TOKEN,
		"MUSTER1 RELEASE  3 " TOKEN,
		"MUSTER1 RELEASE -3 " TOKEN,
		"MUSTER1 RELEASE 3\t " TOKEN,
		"MUSTER1 RELEASE 2147483648 " TOKEN,
		"MUSTER1 RELEASE x " TOKEN,
		"MUSTER1 RELEASE 3 " TOKEN " extra",
		"MUSTER1 RELEASE 3 " TOKEN " ",
		" MUSTER1 RELEASE 3 " TOKEN,
		"GET / HTTP/1.1",
	};
	struct barrier_push_msg msg;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *cause = NULL;

		assert_int_equal(push_parse(bad[i], &msg, &cause), -1);
		assert_non_null(cause);
	}
}

static void push_rejects_binary_and_long_tokens(void **state)
{
	char line[BARRIER_PUSH_MAX * 2];
	struct barrier_push_msg msg;
	const char *cause = NULL;
	size_t len;

	(void)state;
	/* A NUL inside the token. */
	len = (size_t)snprintf(line, sizeof(line), "MUSTER1 RELEASE 1 abc");
	line[len++] = '\0';
	memcpy(line + len, "defghijklmnop", 13);
	len += 13;
	assert_int_equal(barrier_push_parse(line, len, &msg, &cause), -1);
	/* A byte above 0x7e. */
	assert_int_equal(push_parse("MUSTER1 RELEASE 1 0123456789abcdef\xff", &msg, &cause), -1);
	/* A token of 257 bytes. */
	len = (size_t)snprintf(line, sizeof(line), "MUSTER1 RELEASE 1 ");
	memset(line + len, 'a', 257);
	line[len + 257] = '\0';
	assert_int_equal(push_parse(line, &msg, &cause), -1);
	/* Longer than the line limit. */
	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	assert_int_equal(push_parse(line, &msg, &cause), -1);
	assert_string_equal(cause, "line longer than 512 bytes");
}

static void push_verdicts(void **state)
{
	struct barrier_push_msg msg;
	const char *cause = NULL;

	(void)state;
	assert_int_equal(push_parse("MUSTER1 RELEASE 3 " TOKEN, &msg, &cause), 0);
	assert_int_equal(barrier_judge_push(&msg, TOKEN, strlen(TOKEN), 3), BARRIER_PUSH_RELEASE);
	assert_int_equal(barrier_judge_push(&msg, TOKEN, strlen(TOKEN), 2), BARRIER_PUSH_RELEASE);
	assert_int_equal(barrier_judge_push(&msg, TOKEN, strlen(TOKEN), 4), BARRIER_PUSH_STALE);
	assert_int_equal(barrier_judge_push(&msg, TOKEN "x", strlen(TOKEN) + 1, 3), BARRIER_PUSH_BAD_TOKEN);
	assert_int_equal(barrier_judge_push(&msg, "1123456789abcdef-token", strlen(TOKEN), 3),
			 BARRIER_PUSH_BAD_TOKEN);
	/* A bad token is reported as such even for a stale attempt: nothing is
	 * revealed to a client without the token. */
	assert_int_equal(barrier_judge_push(&msg, "zzzzzzzzzzzzzzzzzzzzzz", strlen(TOKEN), 9),
			 BARRIER_PUSH_BAD_TOKEN);
	assert_string_equal(barrier_push_reply(BARRIER_PUSH_RELEASE), "OK\n");
	assert_string_equal(barrier_push_reply(BARRIER_PUSH_BAD_TOKEN), "ERR bad-token\n");
	assert_string_equal(barrier_push_verdict_name(BARRIER_PUSH_STALE), "stale-attempt");
}

static void token_rules(void **state)
{
	const char *cause = NULL;
	char long_token[BARRIER_TOKEN_MAX + 2];

	(void)state;
	assert_int_equal(barrier_token_check(TOKEN, strlen(TOKEN), &cause), 0);
	assert_int_equal(barrier_token_check("short", 5, &cause), -1);
	assert_string_equal(cause, "token is shorter than 16 bytes");
	assert_int_equal(barrier_token_check("0123456789 abcdef", 17, &cause), -1);
	memset(long_token, 'k', sizeof(long_token));
	assert_int_equal(barrier_token_check(long_token, BARRIER_TOKEN_MAX, &cause), 0);
	assert_int_equal(barrier_token_check(long_token, BARRIER_TOKEN_MAX + 1, &cause), -1);

	assert_true(barrier_token_equal("abc", 3, "abc", 3));
	assert_false(barrier_token_equal("abc", 3, "abd", 3));
	assert_false(barrier_token_equal("abc", 3, "abcd", 4));
	assert_false(barrier_token_equal("", 0, "a", 1));
	assert_true(barrier_token_equal("", 0, "", 0));
	/* A shorter string padded with NULs must not equal the longer one. */
	assert_false(barrier_token_equal("ab\0", 3, "ab", 2));
}

static void exit_table_is_complete_and_unique(void **state)
{
	static const int expected[] = {
		BARRIER_EXIT_RELEASED, BARRIER_EXIT_USAGE,  BARRIER_EXIT_TIMEOUT,
		BARRIER_EXIT_FAILURE,  BARRIER_EXIT_SIGINT, BARRIER_EXIT_SIGTERM,
	};
	size_t count = 0;

	(void)state;
	for (const struct barrier_exit_info *e = barrier_exit_table; e->name; e++, count++) {
		assert_non_null(e->meaning);
		for (const struct barrier_exit_info *f = e + 1; f->name; f++)
			assert_int_not_equal(e->code, f->code);
	}
	assert_int_equal(count, sizeof(expected) / sizeof(expected[0]));
	for (size_t i = 0; i < count; i++)
		assert_int_equal(barrier_exit_table[i].code, expected[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(attempt_accepts_decimal_with_surrounding_space),
		cmocka_unit_test(attempt_rejects_everything_else),
		cmocka_unit_test(volume_verdicts),
		cmocka_unit_test(push_parses_a_release),
		cmocka_unit_test(push_rejects_malformed_lines),
		cmocka_unit_test(push_rejects_binary_and_long_tokens),
		cmocka_unit_test(push_verdicts),
		cmocka_unit_test(token_rules),
		cmocka_unit_test(exit_table_is_complete_and_unique),
	};

	return cmocka_run_group_tests_name("barrier_core", tests, NULL, NULL);
}
