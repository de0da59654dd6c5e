/*
 * record_owner: whose a ConfigMap of record is (record_owner.h).
 */
#include "record_owner.h"

#include <cjson/cJSON.h>
#include <string.h>

#define JOBSET_API_GROUP "jobset.x-k8s.io/"

enum record_owner record_owner_of(const cJSON *object, const char *jobset, const char *uid,
				  int need_controller)
{
	const cJSON *refs = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(object, "metadata"), "ownerReferences");
	const cJSON *ref;
	enum record_owner owner = RECORD_OWNER_FOREIGN;

	if (!cJSON_IsArray(refs))
		return owner;
	cJSON_ArrayForEach(ref, refs)
	{
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(ref, "kind");
		const cJSON *api = cJSON_GetObjectItemCaseSensitive(ref, "apiVersion");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(ref, "name");
		const cJSON *ref_uid = cJSON_GetObjectItemCaseSensitive(ref, "uid");
		int controls = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ref, "controller"));

		if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "JobSet") != 0 ||
		    !cJSON_IsString(api) ||
		    strncmp(api->valuestring, JOBSET_API_GROUP, strlen(JOBSET_API_GROUP)) != 0 ||
		    !cJSON_IsString(name) || strcmp(name->valuestring, jobset) != 0 ||
		    !cJSON_IsString(ref_uid))
			continue;
		if (strcmp(ref_uid->valuestring, uid) == 0 && (controls || !need_controller))
			return RECORD_OWNER_OURS;
		if (strcmp(ref_uid->valuestring, uid) != 0 && controls)
			owner = RECORD_OWNER_PREDECESSOR;
	}
	return owner;
}
