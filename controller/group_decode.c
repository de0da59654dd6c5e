/*
 * group_decode: JSON to group structs. See group_decode.h for the contract.
 *
 * Each decoder walks only the fields it needs and checks each one as it goes;
 * a field of the wrong type is an error rather than "absent", because a JobSet
 * whose replicas cannot be read must not be counted as if it had the default.
 * Causes are built by cause_fail(), which is the only allocation besides cJSON's.
 */
#define _POSIX_C_SOURCE 200809L
#include "group_decode.h"
#include "cause.h"

#include "jobset_pod.h"
#include "kjson.h"
#include "model_fields.h"
#include "muster_api.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Initial and largest containers scanned for the barrier's status; a pod with
 * more init containers than this is not a pod JobSet made. */
#define INIT_STATUSES_MAX 64

/* Finds the barrier's entry in status.initContainerStatuses. */
static int decode_barrier(const cJSON *statuses, enum group_barrier_state *barrier, int *timed_out_before,
			  char **cause)
{
	const cJSON *item, *state, *last_code;
	size_t seen = 0;

	*barrier = GROUP_BARRIER_ABSENT;
	*timed_out_before = 0;
	if (!statuses || cJSON_IsNull(statuses))
		return 0;
	if (!cJSON_IsArray(statuses))
		return cause_fail(cause, "status.initContainerStatuses is not a list");
	cJSON_ArrayForEach(item, statuses)
	{
		const cJSON *name = kjson_member(item, "name");

		if (++seen > INIT_STATUSES_MAX)
			return cause_fail(cause, "more than %d initContainerStatuses", INIT_STATUSES_MAX);
		if (cJSON_IsString(name) && strcmp(name->valuestring, MUSTER_BARRIER_CONTAINER) == 0)
			break;
	}
	if (!item)
		return 0;
	last_code = kjson_member(kjson_member(kjson_member(item, "lastState"), "terminated"), "exitCode");
	*timed_out_before =
		cJSON_IsNumber(last_code) && last_code->valuedouble == MUSTER_BARRIER_EXIT_TIMEOUT;
	state = kjson_member(item, "state");
	if (!state || cJSON_IsNull(state))
		return 0;
	if (!cJSON_IsObject(state))
		return cause_fail(cause, "barrier container state is not an object");
	/* Exactly one of the three is set by kubelet; the most advanced wins if a
	 * broken status holds several, so a pod is never judged younger than it is. */
	if (cJSON_IsObject(kjson_member(state, "terminated"))) {
		const cJSON *code = kjson_member(kjson_member(state, "terminated"), "exitCode");

		if (!cJSON_IsNumber(code))
			return cause_fail(cause, "barrier container terminated without an exitCode");
		*barrier = code->valuedouble == 0			      ? GROUP_BARRIER_PASSED
			   : code->valuedouble == MUSTER_BARRIER_EXIT_TIMEOUT ? GROUP_BARRIER_TIMED_OUT
									      : GROUP_BARRIER_FAILED;
	} else if (cJSON_IsObject(kjson_member(state, "running"))) {
		*barrier = GROUP_BARRIER_RUNNING;
	} else if (cJSON_IsObject(kjson_member(state, "waiting"))) {
		*barrier = GROUP_BARRIER_WAITING;
	}
	return 0;
}

static const struct {
	const char *name;
	enum group_pod_phase phase;
} phase_table[] = {
	{ "Pending", GROUP_PHASE_PENDING },
	{ "Running", GROUP_PHASE_RUNNING },
	{ "Succeeded", GROUP_PHASE_SUCCEEDED },
	{ "Failed", GROUP_PHASE_FAILED },
};

static int decode_pod_status(const cJSON *status, struct group_pod *out, char **cause)
{
	char text[64];
	const cJSON *phase;

	if (!status || cJSON_IsNull(status))
		return 0;
	if (!cJSON_IsObject(status))
		return cause_fail(cause, "pod status is not an object");
	phase = kjson_member(status, "phase");
	if (cJSON_IsString(phase))
		for (size_t i = 0; i < sizeof(phase_table) / sizeof(phase_table[0]); i++)
			if (strcmp(phase->valuestring, phase_table[i].name) == 0)
				out->phase = phase_table[i].phase;
	if (kjson_take_string(kjson_member(status, "podIP"), text, sizeof(text) - 1, 0, "status.podIP",
			      cause))
		return -1;
	if (text[0]) {
		if (inet_pton(AF_INET, text, out->ip) == 1)
			out->ip_family = 4;
		else if (inet_pton(AF_INET6, text, out->ip) == 1)
			out->ip_family = 6;
		else
			return cause_fail(cause, "status.podIP is not an IP address");
	}
	return decode_barrier(kjson_member(status, "initContainerStatuses"), &out->barrier,
			      &out->barrier_timed_out_before, cause);
}

int group_pod_from_json(const struct cJSON *object, struct group_pod *out, char **cause)
{
	const cJSON *metadata = kjson_member(object, "metadata");
	const cJSON *deletion = kjson_member(metadata, "deletionTimestamp");
	struct jobset_pod place;
	char text[MODEL_LABEL_MAX + 1];
	uint64_t value;

	if (cause)
		*cause = NULL;
	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(object))
		return cause_fail(cause, "pod is not an object");
	if (!cJSON_IsObject(metadata))
		return cause_fail(cause, "pod metadata is missing");
	if (kjson_take_string(kjson_member(metadata, "uid"), out->uid, MODEL_UID_MAX, 1, "pod metadata.uid",
			      cause) ||
	    kjson_take_string(kjson_member(metadata, "name"), out->name, MODEL_OBJECT_NAME_MAX, 1,
			      "pod metadata.name", cause) ||
	    kjson_take_string(kjson_member(metadata, "namespace"), out->namespace, MODEL_LABEL_MAX, 1,
			      "pod metadata.namespace", cause))
		return -1;
	if (jobset_pod_decode(metadata, "pod", &place, cause))
		return -1;
	memcpy(out->jobset_name, place.jobset, sizeof(out->jobset_name));
	memcpy(out->jobset_uid, place.uid, sizeof(out->jobset_uid));
	memcpy(out->replicated_job, place.replicated_job, sizeof(out->replicated_job));
	/* A pod counts in an attempt only when it says which, and the gang
	 * generation it carries (0 when absent) is a number too. */
	out->has_attempt = place.attempt_state == JOBSET_POD_SET && place.generation_state != JOBSET_POD_BAD;
	out->attempt = place.attempt;
	out->generation = place.generation;
	out->deleting = deletion && !cJSON_IsNull(deletion);
	if (kjson_take_string(kjson_member(metadata, "resourceVersion"), text, 20, 0,
			      "pod metadata.resourceVersion", cause))
		return -1;
	/* resourceVersion is opaque by contract; it is used only when it is a plain
	 * decimal (etcd's revision, as every apiserver today sends). */
	if (text[0] && model_parse_decimal(text, 20, UINT64_MAX, &value) == 0) {
		out->has_resource_version = 1;
		out->resource_version = value;
	}
	{
		const cJSON *node = kjson_member(kjson_member(object, "spec"), "nodeName");

		out->bound = cJSON_IsString(node) && node->valuestring[0] != '\0';
	}
	return decode_pod_status(kjson_member(object, "status"), out, cause);
}

int group_pod_decode(const char *json, size_t len, struct group_pod *out, char **cause)
{
	cJSON *root;
	int rc;

	if (cause)
		*cause = NULL;
	memset(out, 0, sizeof(*out));
	root = kjson_parse_object(json, len, "pod", cause);
	if (!root)
		return -1;
	rc = group_pod_from_json(root, out, cause);
	cJSON_Delete(root);
	return rc;
}

static const char *const event_names[] = {
	[GROUP_EVENT_ADDED] = "ADDED",
	[GROUP_EVENT_MODIFIED] = "MODIFIED",
	[GROUP_EVENT_DELETED] = "DELETED",
};

const char *group_event_name(enum group_event event)
{
	if ((unsigned)event >= sizeof(event_names) / sizeof(event_names[0]))
		return "unknown";
	return event_names[event];
}

int group_watch_pod_decode(const char *json, size_t len, enum group_event *event, struct group_pod *out,
			   char **cause)
{
	const cJSON *type;
	cJSON *root;
	int rc = -1;

	if (cause)
		*cause = NULL;
	memset(out, 0, sizeof(*out));
	root = kjson_parse_object(json, len, "watch event", cause);
	if (!root)
		return -1;
	type = kjson_member(root, "type");
	if (!cJSON_IsString(type)) {
		cause_fail(cause, "watch event has no type");
		goto out;
	}
	for (size_t i = 0; i < sizeof(event_names) / sizeof(event_names[0]); i++) {
		if (strcmp(type->valuestring, event_names[i]) == 0) {
			*event = (enum group_event)i;
			rc = group_pod_from_json(kjson_member(root, "object"), out, cause);
			goto out;
		}
	}
	cause_fail(cause, "watch event type is not ADDED, MODIFIED or DELETED");
out:
	cJSON_Delete(root);
	return rc;
}

int group_jobset_decode(const cJSON *object, struct jobset_model *jobset, char *token, size_t token_size,
			char **cause)
{
	const cJSON *value = kjson_member(kjson_member(kjson_member(object, "metadata"), "annotations"),
					  MUSTER_ANNOTATION_BARRIER_TOKEN);

	if (jobset_model_decode(object, jobset, cause))
		return -1;
	token[0] = '\0';
	if (cJSON_IsString(value) && strlen(value->valuestring) < token_size)
		memcpy(token, value->valuestring, strlen(value->valuestring) + 1);
	return 0;
}
