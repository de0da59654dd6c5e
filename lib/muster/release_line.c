/*
 * release_line: building the pushed release line. See release_line.h.
 */
#include "release_line.h"

#include <stdio.h>
#include <string.h>

int release_token_check(const char *token, size_t len, const char **cause)
{
	if (len < RELEASE_TOKEN_MIN) {
		*cause = "token is shorter than 16 bytes";
		return -1;
	}
	if (len > RELEASE_TOKEN_MAX) {
		*cause = "token is longer than 256 bytes";
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		if (token[i] <= 0x20 || token[i] >= 0x7f) {
			*cause = "token holds a byte that is not printable ASCII or is a space";
			return -1;
		}
	}
	return 0;
}

int release_line_format(char *buf, size_t size, uint32_t attempt, uint32_t generation, const char *token,
			const char **cause)
{
	int n;

	if (attempt > RELEASE_ATTEMPT_MAX) {
		*cause = "attempt is above 2147483647";
		return -1;
	}
	if (generation > RELEASE_GENERATION_MAX) {
		*cause = "generation is above 2147483647";
		return -1;
	}
	if (release_token_check(token, strlen(token), cause) != 0)
		return -1;
	if (generation)
		n = snprintf(buf, size, RELEASE_LINE_MAGIC " " RELEASE_LINE_VERB " %u %s %u\n", attempt,
			     token, generation);
	else
		n = snprintf(buf, size, RELEASE_LINE_MAGIC " " RELEASE_LINE_VERB " %u %s\n", attempt, token);
	if (n < 0 || (size_t)n >= size) {
		*cause = "release line does not fit the buffer";
		return -1;
	}
	return n;
}
