/*
 * pod_pin: a pod's place in its JobSet, and its nodeSelector patch
 * (pod_pin.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "pod_pin.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cause.h"
#include "kjson.h"
#include "muster_api.h"

#define LABEL_VALUE_MAX 63

static int take(const cJSON *labels, const char *key, char *dst, size_t max, char **cause)
{
	char what[128];

	snprintf(what, sizeof(what), "the pod's label %s", key);
	return kjson_take_string(kjson_member(labels, key), dst, max, 1, what, cause);
}

static int number(const cJSON *item, const char *what, uint32_t *out, char **cause)
{
	long long value;

	if (!item)
		return cause_fail(cause, "the pod has no %s: is it a pod of an Indexed Job made by JobSet?",
				  what);
	if (kjson_count(item, -1, KJSON_INT32_MAX, &value) != KJSON_OK || value < 0)
		return cause_fail(cause, "the pod's %s is not an integer from 0", what);
	*out = (uint32_t)value;
	return 0;
}

int pod_pin_key(const cJSON *pod, struct pod_pin_key *key, char **cause)
{
	const cJSON *metadata = kjson_member(pod, "metadata");
	const cJSON *labels = kjson_member(metadata, "labels");
	const cJSON *completion =
		kjson_member(kjson_member(metadata, "annotations"), JOB_ANNOTATION_COMPLETION_INDEX);

	memset(key, 0, sizeof(*key));
	if (!completion)
		completion = kjson_member(labels, JOB_ANNOTATION_COMPLETION_INDEX);
	if (take(labels, JOBSET_LABEL_NAME, key->jobset, sizeof(key->jobset) - 1, cause) ||
	    take(labels, JOBSET_LABEL_UID, key->uid, sizeof(key->uid) - 1, cause) ||
	    take(labels, JOBSET_LABEL_REPLICATED_JOB, key->replicated_job, sizeof(key->replicated_job) - 1,
		 cause) ||
	    number(kjson_member(labels, JOBSET_LABEL_JOB_INDEX), "label " JOBSET_LABEL_JOB_INDEX,
		   &key->job_index, cause) ||
	    number(completion, "annotation " JOB_ANNOTATION_COMPLETION_INDEX, &key->completion, cause))
		return -1;
	/* Absent: attempt 0 (a JobSet that does not label it never restarts
	 * under another number). */
	if (kjson_member(labels, JOBSET_LABEL_RESTART_ATTEMPT) &&
	    number(kjson_member(labels, JOBSET_LABEL_RESTART_ATTEMPT), "label " JOBSET_LABEL_RESTART_ATTEMPT,
		   &key->attempt, cause))
		return -1;
	return 0;
}

static int add(cJSON *patch, const char *path, cJSON *value)
{
	cJSON *op = cJSON_CreateObject();

	if (!op || !value || !cJSON_AddStringToObject(op, "op", "add") ||
	    !cJSON_AddStringToObject(op, "path", path) || !cJSON_AddItemToArray(patch, op)) {
		cJSON_Delete(op);
		cJSON_Delete(value);
		return -1;
	}
	cJSON_AddItemToObject(op, "value", value);
	return 0;
}

/* A JSON Pointer token: '~' as "~0", '/' as "~1". */
static void pointer_token(char *out, size_t size, const char *text, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 3 < size; i++) {
		if (text[i] == '~' || text[i] == '/') {
			out[o++] = '~';
			out[o++] = text[i] == '~' ? '0' : '1';
		} else {
			out[o++] = text[i];
		}
	}
	out[o] = '\0';
}

int pod_pin_patch(const cJSON *pod, const char *selector, cJSON *patch, char **cause)
{
	const cJSON *spec = kjson_member(pod, "spec");
	const cJSON *existing = kjson_member(spec, "nodeSelector");
	int made = cJSON_IsObject(existing);

	if (!cJSON_IsObject(spec))
		return cause_fail(cause, "the pod has no spec");
	while (*selector) {
		const char *eq = strchr(selector, '='), *comma;
		char key[320], value[LABEL_VALUE_MAX + 1],
			path[sizeof("/spec/nodeSelector/") + 3 * sizeof(key)];
		size_t key_len, value_len;
		const cJSON *have;

		if (!eq)
			return cause_fail(cause, "the placement record's selector is not key=value");
		comma = strchr(eq + 1, ',');
		key_len = (size_t)(eq - selector);
		value_len = comma ? (size_t)(comma - eq - 1) : strlen(eq + 1);
		if (key_len >= sizeof(key) || value_len >= sizeof(value))
			return cause_fail(cause,
					  "the placement record's selector has a key or value too long");
		memcpy(key, selector, key_len);
		key[key_len] = '\0';
		memcpy(value, eq + 1, value_len);
		value[value_len] = '\0';
		selector = comma ? comma + 1 : eq + 1 + value_len;
		have = kjson_member(existing, key);
		if (cJSON_IsString(have)) {
			if (strcmp(have->valuestring, value) == 0)
				continue;
			return cause_fail(
				cause,
				"the pod selects %s=%s but its placement of record is %s=%s: remove the "
				"nodeSelector from the pod template or the topology request",
				key, have->valuestring, key, value);
		}
		if (!made) {
			if (add(patch, "/spec/nodeSelector", cJSON_CreateObject()))
				return cause_fail(cause, "out of memory");
			made = 1;
		}
		memcpy(path, "/spec/nodeSelector/", sizeof("/spec/nodeSelector/"));
		pointer_token(path + strlen(path), sizeof(path) - strlen(path), key, key_len);
		if (add(patch, path, cJSON_CreateString(value)))
			return cause_fail(cause, "out of memory");
	}
	return 0;
}
