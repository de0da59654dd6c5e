/*
 * libFuzzer target for the controller's reading of the ConfigMap of record
 * (release_record.h): whose it is, from any ownerReferences, and what a GET
 * and a write make of any answers an API server sends (a scripted transport,
 * testing/script_transport.h). The first byte picks the path: the owner of
 * the rest taken as a ConfigMap; a read; a write. A ConfigMap is never taken
 * for ours unless a controller reference names our uid; a read's release
 * only comes from ours; a write refused as someone else's says so with
 * MUSTER_ECONFLICT; errors come with a cause.
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_error.h"
#include "release_record.h"
#include "script_transport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct release_jobset JOBSET = { "ns", "train", "uid-1" };

/* Whether a controller reference of kind JobSet names uid-1. */
static int names_us(const cJSON *configmap)
{
	const cJSON *refs = cJSON_GetObjectItemCaseSensitive(
			    cJSON_GetObjectItemCaseSensitive(configmap, "metadata"), "ownerReferences"),
		    *ref;

	cJSON_ArrayForEach(ref, refs)
	{
		const cJSON *uid = cJSON_GetObjectItemCaseSensitive(ref, "uid");

		if (cJSON_IsString(uid) && strcmp(uid->valuestring, "uid-1") == 0)
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct script_transport s;
	struct kube_clock clock;
	struct kube_client *client;
	char *cause = NULL;
	int err;

	if (!size)
		return 0;
	if (data[0] % 3 == 0) {
		cJSON *cm = cJSON_ParseWithLength((const char *)data + 1, size - 1);
		enum release_owner owner = release_record_owner(cm, &JOBSET);

		if ((unsigned)owner > RELEASE_OWNER_FOREIGN || (owner == RELEASE_OWNER_OURS && !names_us(cm)))
			abort();
		cJSON_Delete(cm);
		return 0;
	}
	if (!(client = script_transport_client(&s, data + 1, size - 1, &clock)))
		return 0;
	if (data[0] % 3 == 1) {
		struct release_record_read out;

		memset(&out, 0xa5, sizeof(out));
		err = release_record_read(client, &JOBSET, &out, &cause);
		if (err > 0 || !err != !cause)
			abort();
		if (!err && out.found &&
		    ((unsigned)out.owner > RELEASE_OWNER_FOREIGN ||
		     (out.has_release && out.owner != RELEASE_OWNER_OURS)))
			abort();
		if (!err && !out.found && out.has_release)
			abort();
	} else {
		const char *how = NULL;
		int foreign = 0;

		err = release_record_write(client, &JOBSET, 7, &how, &foreign, &cause);
		if (err > 0 || !err != !cause || (foreign && err != MUSTER_ECONFLICT) || (!err && !how))
			abort();
	}
	free(cause);
	kube_client_free(client);
	return 0;
}
