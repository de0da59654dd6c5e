/*
 * libFuzzer target for kube_watch_parse_event: any line a (hostile or broken)
 * API server streams must parse or fail cleanly with a cause, and a parsed
 * event must be well-formed (known type, bounded resourceVersion, an object).
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A private copy without a terminator, so an over-read is caught. */
	char *line = malloc(size ? size : 1);
	struct kube_watch_event ev;
	char *cause = NULL;

	if (!line)
		return 0;
	if (size)
		memcpy(line, data, size);
	if (kube_watch_parse_event(line, size, &ev, &cause) == MUSTER_OK) {
		if (!ev.object || (unsigned)ev.type > KUBE_WATCH_ERROR || cause ||
		    strnlen(ev.resource_version, sizeof(ev.resource_version)) >=
			    sizeof(ev.resource_version) ||
		    (ev.type != KUBE_WATCH_ERROR && !ev.resource_version[0]))
			abort();
		kube_watch_event_clear(&ev);
	} else if (!cause || ev.object) {
		abort();
	}
	free(cause);
	free(line);
	return 0;
}
