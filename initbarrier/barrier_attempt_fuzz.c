/*
 * libFuzzer target for the `started` key parser (the ConfigMap content that
 * the volume release carries): any content must parse to an attempt within
 * range or be refused, and the verdict must agree with the parse.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "barrier_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1);
	uint32_t attempt = 0, released = 0;
	int parsed;
	enum barrier_volume_verdict verdict;

	if (!text)
		return 0;
	if (size)
		memcpy(text, data, size);
	parsed = barrier_parse_attempt(text, size, &attempt);
	verdict = barrier_judge_volume(1, text, size, 7, &released);
	if (parsed == 0 && (attempt > BARRIER_ATTEMPT_MAX ||
			    verdict != (attempt >= 7 ? BARRIER_VOLUME_RELEASED : BARRIER_VOLUME_STALE)))
		abort();
	if (parsed != 0 && verdict != BARRIER_VOLUME_INVALID)
		abort();
	free(text);
	return 0;
}
