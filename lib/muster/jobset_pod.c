/*
 * jobset_pod: a pod's place in its JobSet (jobset_pod.h).
 */
#include "jobset_pod.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cause.h"
#include "kjson.h"
#include "kube_path.h"
#include "muster_api.h"

#define NUMBER_DIGITS 10

static int take(const cJSON *labels, const char *kind, const char *key, char *dst, size_t max, char **cause)
{
	const cJSON *item = kjson_member(labels, key);
	char what[128];

	/* The sentence is made only for a failure: the gang loop decodes every
	 * pod event through here. */
	if (kjson_take_string(item, dst, max, 0, "", NULL) == 0)
		return 0;
	snprintf(what, sizeof(what), "the %s's label %s", kind, key);
	return kjson_take_string(item, dst, max, 0, what, cause);
}

/* A number as labels and annotations hold it: a decimal string (a JSON
 * number is taken too, as YAML-made objects may carry one). */
static void number(const cJSON *item, enum jobset_pod_number *state, uint32_t *value)
{
	uint64_t v;

	*value = 0;
	/* An empty value says no more than an absent one. */
	if (!item || cJSON_IsNull(item) || (cJSON_IsString(item) && !item->valuestring[0])) {
		*state = JOBSET_POD_ABSENT;
		return;
	}
	*state = JOBSET_POD_BAD;
	if (cJSON_IsString(item)) {
		if (model_parse_decimal(item->valuestring, NUMBER_DIGITS, KJSON_INT32_MAX, &v) != 0)
			return;
	} else {
		long long n;

		if (kjson_count(item, -1, KJSON_INT32_MAX, &n) != KJSON_OK || n < 0)
			return;
		v = (uint64_t)n;
	}
	*value = (uint32_t)v;
	*state = JOBSET_POD_SET;
}

int jobset_pod_decode(const cJSON *metadata, const char *kind, struct jobset_pod *out, char **cause)
{
	const cJSON *labels = kjson_member(metadata, "labels");
	const cJSON *annotations = kjson_member(metadata, "annotations");
	const cJSON *completion = kjson_member(annotations, JOB_ANNOTATION_COMPLETION_INDEX);

	memset(out, 0, sizeof(*out));
	if (labels && !cJSON_IsNull(labels) && !cJSON_IsObject(labels))
		return cause_fail(cause, "the %s's metadata.labels is not an object", kind);
	if (take(labels, kind, JOBSET_LABEL_NAME, out->jobset, MODEL_LABEL_MAX, cause) ||
	    take(labels, kind, JOBSET_LABEL_UID, out->uid, MODEL_UID_MAX, cause) ||
	    take(labels, kind, JOBSET_LABEL_REPLICATED_JOB, out->replicated_job, MODEL_LABEL_MAX, cause))
		return -1;
	if (!completion)
		completion = kjson_member(labels, JOB_ANNOTATION_COMPLETION_INDEX);
	number(kjson_member(labels, JOBSET_LABEL_JOB_INDEX), &out->job_index_state, &out->job_index);
	number(completion, &out->completion_state, &out->completion);
	number(kjson_member(labels, JOBSET_LABEL_RESTART_ATTEMPT), &out->attempt_state, &out->attempt);
	number(kjson_member(labels, MUSTER_LABEL_GANG_GENERATION), &out->generation_state, &out->generation);
	return 0;
}

static int need_number(enum jobset_pod_number state, const char *kind, const char *what, char **cause)
{
	if (state == JOBSET_POD_ABSENT)
		return cause_fail(cause, "the %s has no %s: is it a %s made by JobSet?", kind, what,
				  strcmp(kind, "pod") == 0 ? "pod of an Indexed Job" : "Job");
	if (state == JOBSET_POD_BAD)
		return cause_fail(cause, "the %s's %s is not an integer from 0", kind, what);
	return 0;
}

int jobset_pod_require(const struct jobset_pod *pod, const char *kind, int need_completion, char **cause)
{
	if (!pod->jobset[0])
		return cause_fail(cause, "the %s's label " JOBSET_LABEL_NAME " is missing", kind);
	if (!pod->uid[0])
		return cause_fail(cause, "the %s's label " JOBSET_LABEL_UID " is missing", kind);
	if (!pod->replicated_job[0])
		return cause_fail(cause, "the %s's label " JOBSET_LABEL_REPLICATED_JOB " is missing", kind);
	if (need_number(pod->job_index_state, kind, "label " JOBSET_LABEL_JOB_INDEX, cause))
		return -1;
	/* Mutating admission comes before the apiserver validates the object:
	 * these are whatever its author wrote, and the JobSet's name goes into
	 * the path of its record. Each must be what JobSet writes. */
	if (!kube_dns_subdomain(pod->jobset, MODEL_LABEL_MAX))
		return cause_fail(cause,
				  "the %s's label " JOBSET_LABEL_NAME
				  " is not a JobSet's name (a DNS-1123 subdomain of at most %d characters)",
				  kind, MODEL_LABEL_MAX);
	if (!kube_label_value(pod->uid))
		return cause_fail(cause, "the %s's label " JOBSET_LABEL_UID " is not a uid", kind);
	if (!kube_label_value(pod->replicated_job))
		return cause_fail(cause,
				  "the %s's label " JOBSET_LABEL_REPLICATED_JOB
				  " is not a replicated job's name",
				  kind);
	/* Absent: attempt 0 (a JobSet that does not label it never restarts
	 * under another number). */
	if (pod->attempt_state == JOBSET_POD_BAD)
		return need_number(JOBSET_POD_BAD, kind, "label " JOBSET_LABEL_RESTART_ATTEMPT, cause);
	if (need_completion &&
	    need_number(pod->completion_state, kind, "annotation " JOB_ANNOTATION_COMPLETION_INDEX, cause))
		return -1;
	return 0;
}

int jobset_pod_key(const char *uid, uint32_t attempt, const char *replicated_job, uint32_t job_index,
		   uint32_t completion, char *key, size_t size)
{
	int n = snprintf(key, size, "%s/%u/%s/%u/%u", uid, attempt, replicated_job, job_index, completion);

	return n >= 0 && (size_t)n < size ? 0 : -1;
}
