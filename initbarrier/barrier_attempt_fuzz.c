/*
 * libFuzzer target for the release keys' judge (the ConfigMap content that
 * the volume release carries). The input is split at its first two NUL
 * bytes into `started`, `jobset-uid` and `generation`: any content must parse
 * to numbers within range or be refused, and the verdict must agree with the
 * parse and the uid comparison.
 */
#define _GNU_SOURCE /* memmem */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "barrier_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char own_uid[] = "5f0c1e7a-1111-4c2b-9d3e-000000000001";
	const struct barrier_identity own = { .attempt = 7, .generation = 2, .jobset_uid = own_uid };
	char *text = malloc(size ? size : 1);
	const char *part[3] = { NULL, NULL, NULL };
	size_t part_len[3] = { 0, 0, 0 }, parts = 0, start = 0;
	uint32_t attempt = 0, generation = 0;
	struct barrier_release seen = { 0, 0 };
	struct barrier_volume_keys keys;
	int parsed, parsed_generation, uid_ok;
	enum barrier_volume_verdict verdict, expected;

	if (!text)
		return 0;
	if (size)
		memcpy(text, data, size);
	for (size_t i = 0; i <= size && parts < 3; i++) {
		if (i == size || (text[i] == '\0' && parts < 2)) {
			part[parts] = text + start;
			part_len[parts++] = i - start;
			start = i + 1;
		}
	}
	keys = (struct barrier_volume_keys){
		.started_present = 1,
		.started = part[0],
		.started_len = part_len[0],
		.uid_present = parts > 1,
		.uid = part[1],
		.uid_len = part_len[1],
		.generation_present = parts > 2,
		.generation = part[2],
		.generation_len = part_len[2],
	};
	parsed = barrier_parse_attempt(part[0], part_len[0], &attempt);
	parsed_generation = parts > 2 ? barrier_parse_attempt(part[2], part_len[2], &generation) : 0;
	uid_ok = parts > 1 && part_len[1] >= sizeof(own_uid) - 1 &&
		 memmem(part[1], part_len[1], own_uid, sizeof(own_uid) - 1) != NULL;
	verdict = barrier_judge_volume(&keys, &own, &seen);
	if (parsed != 0 || parsed_generation != 0)
		expected = BARRIER_VOLUME_INVALID;
	else if (!uid_ok)
		expected = BARRIER_VOLUME_FOREIGN;
	else
		expected = generation >= 2 && attempt >= 7 ? BARRIER_VOLUME_RELEASED : BARRIER_VOLUME_STALE;
	/* uid_ok is a superset of a match (white space around it is allowed):
	 * a FOREIGN verdict where it holds is fine, the reverse is not. */
	if (verdict != expected &&
	    !(expected != BARRIER_VOLUME_INVALID && uid_ok && verdict == BARRIER_VOLUME_FOREIGN))
		abort();
	if (parsed == 0 && attempt > BARRIER_ATTEMPT_MAX)
		abort();
	free(text);
	return 0;
}
