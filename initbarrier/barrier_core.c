/*
 * barrier_core: parsing and judging the two release paths. See barrier_core.h.
 *
 * Nothing here allocates, reads a clock or touches a descriptor.
 */
#include "barrier_core.h"

#include <string.h>

const struct barrier_exit_info barrier_exit_table[] = {
	{ MUSTER_BARRIER_EXIT_RELEASED, "released",
	  "the group was released for this attempt; the main containers may start" },
	{ MUSTER_BARRIER_EXIT_USAGE, "usage",
	  "bad flags or configuration (unknown flag, bad attempt, token or address, missing directory)" },
	{ MUSTER_BARRIER_EXIT_TIMEOUT, "timeout",
	  "no release arrived within --timeout seconds: not every pod of the group started in time" },
	{ MUSTER_BARRIER_EXIT_FAILURE, "failure",
	  "a system call the barrier depends on failed (inotify, poll, the watched directory vanished)" },
	{ MUSTER_BARRIER_EXIT_SIGINT, "sigint", "stopped by SIGINT" },
	{ MUSTER_BARRIER_EXIT_SIGTERM, "sigterm", "stopped by SIGTERM (e.g. the pod was deleted)" },
	{ 0, NULL, NULL },
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int barrier_parse_attempt(const char *text, size_t len, uint32_t *attempt)
{
	size_t start = 0, end = len;
	uint64_t value = 0;

	while (start < end && is_space(text[start]))
		start++;
	while (end > start && is_space(text[end - 1]))
		end--;
	if (start == end || end - start > 10)
		return -1;
	for (size_t i = start; i < end; i++) {
		if (text[i] < '0' || text[i] > '9')
			return -1;
		value = value * 10 + (uint64_t)(text[i] - '0');
	}
	if (value > BARRIER_ATTEMPT_MAX)
		return -1;
	*attempt = (uint32_t)value;
	return 0;
}

/* The uid key as kubelet projects it, or as written by hand: surrounding
 * white space is tolerated like the attempt's. */
static int uid_matches(const char *text, size_t len, const char *own)
{
	size_t start = 0, end = len, own_len = strlen(own);

	while (start < end && is_space(text[start]))
		start++;
	while (end > start && is_space(text[end - 1]))
		end--;
	return end - start == own_len && memcmp(text + start, own, own_len) == 0;
}

enum barrier_volume_verdict barrier_judge_volume(const struct barrier_volume_keys *keys,
						 const struct barrier_identity *own,
						 struct barrier_release *seen)
{
	struct barrier_release release = { 0, 0 };

	if (!keys->started_present)
		return BARRIER_VOLUME_EMPTY;
	if (barrier_parse_attempt(keys->started, keys->started_len, &release.attempt) != 0)
		return BARRIER_VOLUME_INVALID;
	if (keys->generation_present &&
	    barrier_parse_attempt(keys->generation, keys->generation_len, &release.generation) != 0)
		return BARRIER_VOLUME_INVALID;
	if (own->jobset_uid && own->jobset_uid[0] &&
	    (!keys->uid_present || !uid_matches(keys->uid, keys->uid_len, own->jobset_uid)))
		return BARRIER_VOLUME_FOREIGN;
	*seen = release;
	return release.generation >= own->generation && release.attempt >= own->attempt
		       ? BARRIER_VOLUME_RELEASED
		       : BARRIER_VOLUME_STALE;
}

const char *barrier_volume_verdict_name(enum barrier_volume_verdict verdict)
{
	static const char *const names[] = {
		[BARRIER_VOLUME_EMPTY] = "empty",	[BARRIER_VOLUME_INVALID] = "invalid",
		[BARRIER_VOLUME_FOREIGN] = "foreign",	[BARRIER_VOLUME_STALE] = "stale",
		[BARRIER_VOLUME_RELEASED] = "released",
	};
	return names[verdict];
}

static const struct {
	const char *name;
	const char *reply;
} push_verdicts[] = {
	[BARRIER_PUSH_RELEASE] = { "release", "OK\n" },
	[BARRIER_PUSH_MALFORMED] = { "malformed", "ERR malformed\n" },
	[BARRIER_PUSH_TOO_LONG] = { "too-long", "ERR too-long\n" },
	[BARRIER_PUSH_BAD_TOKEN] = { "bad-token", "ERR bad-token\n" },
	[BARRIER_PUSH_STALE] = { "stale-attempt", "ERR stale-attempt\n" },
	[BARRIER_PUSH_TIMEOUT] = { "timeout", "ERR timeout\n" },
};

const char *barrier_push_reply(enum barrier_push_verdict verdict)
{
	return push_verdicts[verdict].reply;
}

const char *barrier_push_verdict_name(enum barrier_push_verdict verdict)
{
	return push_verdicts[verdict].name;
}

static int is_token_byte(char c)
{
	return c > 0x20 && c < 0x7f;
}

/* The rules a token obeys on the wire and in the configuration, but its
 * minimum length: a short token on the wire is simply a wrong one. */
static int check_token_shape(const char *token, size_t len, const char **cause)
{
	if (len > BARRIER_TOKEN_MAX) {
		*cause = "token is longer than 256 bytes";
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		if (!is_token_byte(token[i])) {
			*cause = "token holds a byte that is not printable ASCII or is a space";
			return -1;
		}
	}
	return 0;
}

int barrier_token_check(const char *token, size_t len, const char **cause)
{
	return release_token_check(token, len, cause);
}

/* Splits the next space-separated field of line[*pos..len). Exactly one
 * space separates fields; anything else is malformed. */
static int next_field(const char *line, size_t len, size_t *pos, const char **field, size_t *field_len)
{
	size_t start = *pos, end = start;

	while (end < len && line[end] != ' ')
		end++;
	if (end == start)
		return -1;
	*field = line + start;
	*field_len = end - start;
	*pos = end < len ? end + 1 : end;
	/* A trailing space would leave an empty last field: refuse it. */
	if (end < len && end + 1 == len)
		return -1;
	return 0;
}

/* The attempt on the wire is bare digits: unlike the ConfigMap value, no
 * white space is tolerated inside a field. */
static int all_digits(const char *field, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (field[i] < '0' || field[i] > '9')
			return 0;
	}
	return 1;
}

static int field_is(const char *field, size_t len, const char *word)
{
	size_t n = strlen(word);

	return len == n && memcmp(field, word, n) == 0;
}

int barrier_push_parse(const char *line, size_t len, struct barrier_push_msg *msg, const char **cause)
{
	const char *field = NULL;
	size_t field_len = 0, pos = 0;
	uint32_t attempt;

	/* A CR before the newline is tolerated, as line protocols usually do. */
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len + 1 > BARRIER_PUSH_MAX) {
		*cause = "line longer than 512 bytes";
		return -1;
	}
	if (next_field(line, len, &pos, &field, &field_len) != 0 || !field_is(field, field_len, "MUSTER1")) {
		*cause = "line does not start with MUSTER1";
		return -1;
	}
	if (next_field(line, len, &pos, &field, &field_len) != 0 || !field_is(field, field_len, "RELEASE")) {
		*cause = "verb is not RELEASE";
		return -1;
	}
	if (next_field(line, len, &pos, &field, &field_len) != 0 || !all_digits(field, field_len) ||
	    barrier_parse_attempt(field, field_len, &attempt) != 0) {
		*cause = "attempt is not a decimal number up to 2147483647";
		return -1;
	}
	if (next_field(line, len, &pos, &field, &field_len) != 0) {
		*cause = "token is missing";
		return -1;
	}
	if (check_token_shape(field, field_len, cause) != 0)
		return -1;
	msg->attempt = attempt;
	msg->generation = 0;
	msg->token = field;
	msg->token_len = field_len;
	if (pos == len)
		return 0;
	if (next_field(line, len, &pos, &field, &field_len) != 0 || !all_digits(field, field_len) ||
	    barrier_parse_attempt(field, field_len, &msg->generation) != 0) {
		*cause = "generation is not a decimal number up to 2147483647";
		return -1;
	}
	if (pos != len) {
		*cause = "unexpected data after the generation";
		return -1;
	}
	return 0;
}

int barrier_token_equal(const char *a, size_t a_len, const char *b, size_t b_len)
{
	/* Walk the longer length, folding every difference into one accumulator
	 * so that timing reveals neither the position nor the prefix matched. */
	size_t n = a_len > b_len ? a_len : b_len;
	unsigned char diff = (unsigned char)(a_len != b_len);

	for (size_t i = 0; i < n; i++) {
		unsigned char x = i < a_len ? (unsigned char)a[i] : 0;
		unsigned char y = i < b_len ? (unsigned char)b[i] : 0;

		diff |= (unsigned char)(x ^ y);
	}
	return diff == 0;
}

enum barrier_push_verdict barrier_judge_push(const struct barrier_push_msg *msg, const char *token,
					     size_t token_len, const struct barrier_identity *own)
{
	if (!barrier_token_equal(msg->token, msg->token_len, token, token_len))
		return BARRIER_PUSH_BAD_TOKEN;
	if (msg->generation < own->generation || msg->attempt < own->attempt)
		return BARRIER_PUSH_STALE;
	return BARRIER_PUSH_RELEASE;
}
