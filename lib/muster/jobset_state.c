/*
 * jobset_state: a JobSet's identity and state (jobset_state.h).
 */
#include "jobset_state.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "cause.h"
#include "kjson.h"
#include "muster_api.h"

/* Copies an optional string that fits; anything else reads as "". */
static void optional(const cJSON *item, char *dst, size_t max)
{
	const char *text = NULL;

	dst[0] = '\0';
	if (kjson_string(item, max, &text) == KJSON_OK && text)
		memcpy(dst, text, strlen(text) + 1);
}

static int finished(const cJSON *status)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, kjson_member(status, "conditions"))
	{
		const cJSON *type = kjson_member(c, "type"), *state = kjson_member(c, "status");

		if (cJSON_IsString(type) && cJSON_IsString(state) &&
		    strcmp(state->valuestring, "True") == 0 &&
		    (strcmp(type->valuestring, "Completed") == 0 || strcmp(type->valuestring, "Failed") == 0))
			return 1;
	}
	return 0;
}

int jobset_state_decode(const cJSON *object, struct jobset_state *out, char **cause)
{
	const cJSON *metadata = kjson_member(object, "metadata");
	const cJSON *annotations = kjson_member(metadata, "annotations");
	const cJSON *status = kjson_member(object, "status");
	long long restarts;

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(object))
		return cause_fail(cause, "JobSet is not an object");
	if (!cJSON_IsObject(metadata))
		return cause_fail(cause, "JobSet metadata is missing");
	if (kjson_take_string(kjson_member(metadata, "name"), out->name, MODEL_LABEL_MAX, 1,
			      "JobSet metadata.name", cause) ||
	    kjson_take_string(kjson_member(metadata, "namespace"), out->namespace, MODEL_LABEL_MAX, 1,
			      "JobSet metadata.namespace", cause) ||
	    kjson_take_string(kjson_member(metadata, "uid"), out->uid, MODEL_UID_MAX, 1,
			      "JobSet metadata.uid", cause))
		return -1;
	optional(kjson_member(metadata, "creationTimestamp"), out->created, JOBSET_STATE_TIME_MAX);
	out->suspended = cJSON_IsTrue(kjson_member(kjson_member(object, "spec"), "suspend"));
	if (kjson_count(kjson_member(status, "restarts"), -1, KJSON_INT32_MAX, &restarts) == KJSON_OK &&
	    restarts >= 0) {
		out->has_restarts = 1;
		out->restarts = (uint32_t)restarts;
	}
	out->finished = finished(status);
	optional(kjson_member(annotations, MUSTER_ANNOTATION_PLACEMENT), out->placement,
		 sizeof(out->placement) - 1);
	optional(kjson_member(annotations, MUSTER_ANNOTATION_PLACEMENT_REASON), out->placement_reason,
		 JOBSET_STATE_REASON_MAX);
	optional(kjson_member(annotations, MUSTER_ANNOTATION_PLACEMENT_SKIPPED), out->placement_skipped,
		 sizeof(out->placement_skipped) - 1);
	return 0;
}
