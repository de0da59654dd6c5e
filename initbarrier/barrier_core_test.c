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

/* The old single-key form: `started` alone, judged by a barrier that knows
 * only its attempt. */
static enum barrier_volume_verdict judge_started(int present, const char *content, size_t len,
						 uint32_t own_attempt, uint32_t *released)
{
	struct barrier_volume_keys keys = { .started_present = present,
					    .started = content,
					    .started_len = len };
	struct barrier_identity own = { .attempt = own_attempt };
	struct barrier_release seen = { 0, 0 };
	enum barrier_volume_verdict verdict = barrier_judge_volume(&keys, &own, &seen);

	*released = seen.attempt;
	return verdict;
}

static void volume_verdicts(void **state)
{
	uint32_t released = 0;

	(void)state;
	assert_int_equal(judge_started(0, "5", 1, 3, &released), BARRIER_VOLUME_EMPTY);
	assert_int_equal(judge_started(1, "", 0, 3, &released), BARRIER_VOLUME_INVALID);
	assert_int_equal(judge_started(1, "yes", 3, 3, &released), BARRIER_VOLUME_INVALID);
	assert_int_equal(judge_started(1, "2", 1, 3, &released), BARRIER_VOLUME_STALE);
	assert_int_equal(released, 2);
	assert_int_equal(judge_started(1, "3", 1, 3, &released), BARRIER_VOLUME_RELEASED);
	assert_int_equal(released, 3);
	/* A later attempt's release also lets an earlier attempt's pod pass. */
	assert_int_equal(judge_started(1, "4\n", 2, 3, &released), BARRIER_VOLUME_RELEASED);
	assert_int_equal(released, 4);
	assert_int_equal(judge_started(1, "0", 1, 0, &released), BARRIER_VOLUME_RELEASED);
	assert_string_equal(barrier_volume_verdict_name(BARRIER_VOLUME_STALE), "stale");
}

#define UID_A "5f0c1e7a-1111-4c2b-9d3e-000000000001"
#define UID_B "5f0c1e7a-2222-4c2b-9d3e-000000000002"

static enum barrier_volume_verdict judge(const char *started, const char *uid, const char *generation,
					 const struct barrier_identity *own, struct barrier_release *seen)
{
	struct barrier_volume_keys keys = {
		.started_present = started != NULL,
		.started = started,
		.started_len = started ? strlen(started) : 0,
		.uid_present = uid != NULL,
		.uid = uid,
		.uid_len = uid ? strlen(uid) : 0,
		.generation_present = generation != NULL,
		.generation = generation,
		.generation_len = generation ? strlen(generation) : 0,
	};

	return barrier_judge_volume(&keys, own, seen);
}

/* A release counts only when it names the barrier's own JobSet: a ConfigMap
 * of the same name left by an earlier JobSet, or written by somebody else,
 * never lets the pod through. */
static void volume_release_must_name_the_jobset(void **state)
{
	struct barrier_identity own = { .attempt = 0, .generation = 0, .jobset_uid = UID_A };
	struct barrier_release seen = { 0, 0 };

	(void)state;
	assert_int_equal(judge("0", UID_A, "0", &own, &seen), BARRIER_VOLUME_RELEASED);
	assert_int_equal(judge("0", UID_A "\n", NULL, &own, &seen), BARRIER_VOLUME_RELEASED);
	assert_int_equal(judge("0", UID_B, "0", &own, &seen), BARRIER_VOLUME_FOREIGN);
	assert_int_equal(judge("7", NULL, NULL, &own, &seen), BARRIER_VOLUME_FOREIGN);
	assert_int_equal(judge("0", "", NULL, &own, &seen), BARRIER_VOLUME_FOREIGN);
	assert_int_equal(judge("0", UID_A "x", NULL, &own, &seen), BARRIER_VOLUME_FOREIGN);
	/* No key yet stays empty; a broken attempt stays invalid before any uid check. */
	assert_int_equal(judge(NULL, UID_B, NULL, &own, &seen), BARRIER_VOLUME_EMPTY);
	assert_int_equal(judge("x", UID_A, NULL, &own, &seen), BARRIER_VOLUME_INVALID);
	assert_string_equal(barrier_volume_verdict_name(BARRIER_VOLUME_FOREIGN), "foreign");
	/* A barrier that does not know its JobSet (no uid label) judges the attempt only. */
	own.jobset_uid = "";
	assert_int_equal(judge("0", UID_B, NULL, &own, &seen), BARRIER_VOLUME_RELEASED);
}

/* A resumed JobSet's pods carry a higher generation with the same attempt:
 * the release of the generation before does not let them through. */
static void volume_release_of_an_earlier_generation_is_stale(void **state)
{
	struct barrier_identity own = { .attempt = 2, .generation = 1, .jobset_uid = UID_A };
	struct barrier_release seen = { 0, 0 };

	(void)state;
	assert_int_equal(judge("2", UID_A, NULL, &own, &seen), BARRIER_VOLUME_STALE);
	assert_int_equal(judge("2", UID_A, "0", &own, &seen), BARRIER_VOLUME_STALE);
	assert_int_equal(seen.generation, 0);
	assert_int_equal(seen.attempt, 2);
	assert_int_equal(judge("2", UID_A, "1", &own, &seen), BARRIER_VOLUME_RELEASED);
	assert_int_equal(seen.generation, 1);
	assert_int_equal(judge("3", UID_A, "2", &own, &seen), BARRIER_VOLUME_RELEASED);
	assert_int_equal(judge("1", UID_A, "5", &own, &seen), BARRIER_VOLUME_STALE);
	assert_int_equal(judge("2", UID_A, "one", &own, &seen), BARRIER_VOLUME_INVALID);
	assert_int_equal(judge("2", UID_A, "-1", &own, &seen), BARRIER_VOLUME_INVALID);
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
		"MUSTER1 RELEASE 3 " TOKEN " 1 ",
		"MUSTER1 RELEASE 3 " TOKEN " 1 2",
		"MUSTER1 RELEASE 3 " TOKEN " -1",
		"MUSTER1 RELEASE 3 " TOKEN " 2147483648",
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

static enum barrier_push_verdict judge_push(const struct barrier_push_msg *msg, const char *token, size_t len,
					    uint32_t own_attempt)
{
	struct barrier_identity own = { .attempt = own_attempt };

	return barrier_judge_push(msg, token, len, &own);
}

/* The generation field: absent is 0, and a push for an earlier generation
 * is stale for a barrier of a resumed JobSet. */
static void push_generation(void **state)
{
	struct barrier_identity own = { .attempt = 1, .generation = 2 };
	struct barrier_push_msg msg;
	const char *cause = NULL;

	(void)state;
	assert_int_equal(push_parse("MUSTER1 RELEASE 1 " TOKEN " 2", &msg, &cause), 0);
	assert_int_equal(msg.generation, 2);
	assert_int_equal(msg.token_len, strlen(TOKEN));
	assert_int_equal(barrier_judge_push(&msg, TOKEN, strlen(TOKEN), &own), BARRIER_PUSH_RELEASE);
	assert_int_equal(push_parse("MUSTER1 RELEASE 1 " TOKEN " 1", &msg, &cause), 0);
	assert_int_equal(barrier_judge_push(&msg, TOKEN, strlen(TOKEN), &own), BARRIER_PUSH_STALE);
	assert_int_equal(push_parse("MUSTER1 RELEASE 5 " TOKEN, &msg, &cause), 0);
	assert_int_equal(msg.generation, 0);
	assert_int_equal(barrier_judge_push(&msg, TOKEN, strlen(TOKEN), &own), BARRIER_PUSH_STALE);
	assert_int_equal(push_parse("MUSTER1 RELEASE 0 " TOKEN " 3", &msg, &cause), 0);
	assert_int_equal(barrier_judge_push(&msg, TOKEN, strlen(TOKEN), &own), BARRIER_PUSH_STALE);
}

static void push_verdicts(void **state)
{
	struct barrier_push_msg msg;
	const char *cause = NULL;

	(void)state;
	assert_int_equal(push_parse("MUSTER1 RELEASE 3 " TOKEN, &msg, &cause), 0);
	assert_int_equal(judge_push(&msg, TOKEN, strlen(TOKEN), 3), BARRIER_PUSH_RELEASE);
	assert_int_equal(judge_push(&msg, TOKEN, strlen(TOKEN), 2), BARRIER_PUSH_RELEASE);
	assert_int_equal(judge_push(&msg, TOKEN, strlen(TOKEN), 4), BARRIER_PUSH_STALE);
	assert_int_equal(judge_push(&msg, TOKEN "x", strlen(TOKEN) + 1, 3), BARRIER_PUSH_BAD_TOKEN);
	assert_int_equal(judge_push(&msg, "1123456789abcdef-token", strlen(TOKEN), 3),
			 BARRIER_PUSH_BAD_TOKEN);
	/* A bad token is reported as such even for a stale attempt: nothing is
	 * revealed to a client without the token. */
	assert_int_equal(judge_push(&msg, "zzzzzzzzzzzzzzzzzzzzzz", strlen(TOKEN), 9),
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
		MUSTER_BARRIER_EXIT_RELEASED, MUSTER_BARRIER_EXIT_USAGE,  MUSTER_BARRIER_EXIT_TIMEOUT,
		MUSTER_BARRIER_EXIT_FAILURE,  MUSTER_BARRIER_EXIT_SIGINT, MUSTER_BARRIER_EXIT_SIGTERM,
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
		cmocka_unit_test(volume_release_must_name_the_jobset),
		cmocka_unit_test(volume_release_of_an_earlier_generation_is_stale),
		cmocka_unit_test(push_generation),
		cmocka_unit_test(push_parses_a_release),
		cmocka_unit_test(push_rejects_malformed_lines),
		cmocka_unit_test(push_rejects_binary_and_long_tokens),
		cmocka_unit_test(push_verdicts),
		cmocka_unit_test(token_rules),
		cmocka_unit_test(exit_table_is_complete_and_unique),
	};

	return cmocka_run_group_tests_name("barrier_core", tests, NULL, NULL);
}
