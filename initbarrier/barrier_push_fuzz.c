/*
 * libFuzzer target for the push line parser and its verdict: any bytes a
 * client can send must parse or fail cleanly, and a parsed token must point
 * inside the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "barrier_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A private copy, so that an over-read is caught by ASan at the end. */
	char *line = malloc(size ? size : 1);
	struct barrier_push_msg msg;
	const char *cause = NULL;

	if (!line)
		return 0;
	if (size)
		memcpy(line, data, size);
	if (barrier_push_parse(line, size, &msg, &cause) == 0) {
		if (msg.token < line || msg.token + msg.token_len > line + size ||
		    msg.attempt > BARRIER_ATTEMPT_MAX)
			abort();
		const struct barrier_identity own = { .attempt = 1, .generation = 1 };

		if (msg.generation > BARRIER_ATTEMPT_MAX)
			abort();
		(void)barrier_judge_push(&msg, "0123456789abcdef", 16, &own);
	} else if (!cause) {
		abort();
	}
	free(line);
	return 0;
}
