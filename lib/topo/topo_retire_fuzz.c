/*
 * libFuzzer target for topo_retire_parse (the annotation
 * muster.dev/placement-retire on a placement record's ConfigMap, which the
 * controller reads back after a restart): any input parses or is skipped
 * entry by entry; what parses is printed again and reads back the same,
 * with no Job twice. Inputs of any size are tried (an annotation holds up
 * to 256 KiB).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo_retire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct topo_retire *list = NULL, *again = NULL;
	size_t count = 0, skipped = 0, count2 = 0, skipped2 = 0;
	char *text;

	if (topo_retire_parse((const char *)data, size, &list, &count, &skipped))
		return 0;
	if (count > TOPO_RETIRE_ENTRIES_MAX || (count && !list))
		abort();
	for (size_t i = 0; i < count; i++)
		for (size_t k = i + 1; k < count; k++)
			if (list[i].job == list[k].job &&
			    strcmp(list[i].replicated_job, list[k].replicated_job) == 0)
				abort(); /* a Job twice */
	text = topo_retire_format(list, count);
	if (text && topo_retire_parse(text, strlen(text), &again, &count2, &skipped2) == 0) {
		if (count2 != count || skipped2)
			abort();
		for (size_t i = 0; i < count; i++)
			if (again[i].job != list[i].job || strcmp(again[i].job_uid, list[i].job_uid) != 0 ||
			    strcmp(again[i].replicated_job, list[i].replicated_job) != 0)
				abort();
	}
	free(again);
	free(text);
	free(list);
	return 0;
}
