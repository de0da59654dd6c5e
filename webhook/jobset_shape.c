/*
 * jobset_shape: reserved names and shared lookups (jobset_shape.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "jobset_shape.h"

#include "cause.h"
#include "group_config.h"
#include "muster_api.h"

#include <cjson/cJSON.h>
#include <string.h>

static const char *string_member(const cJSON *object, const char *key)
{
	const cJSON *item = kjson_member(object, key);

	return cJSON_IsString(item) && item->valuestring && item->valuestring[0] ? item->valuestring : NULL;
}

const char *jobset_name(const cJSON *jobset)
{
	return string_member(kjson_member(jobset, "metadata"), "name");
}

const char *jobset_annotation(const cJSON *jobset, const char *key)
{
	const cJSON *item = kjson_member(kjson_member(kjson_member(jobset, "metadata"), "annotations"), key);

	return cJSON_IsString(item) ? item->valuestring : NULL;
}

const cJSON *jobset_replicated_jobs(const cJSON *jobset)
{
	const cJSON *jobs = kjson_member(kjson_member(jobset, "spec"), "replicatedJobs");

	return cJSON_IsArray(jobs) ? jobs : NULL;
}

const char *jobset_replicated_job_name(const cJSON *replicated_job)
{
	return string_member(replicated_job, "name");
}

const cJSON *jobset_pod_template(const cJSON *replicated_job)
{
	const cJSON *template =
		kjson_member(kjson_member(kjson_member(replicated_job, "template"), "spec"), "template");

	return cJSON_IsObject(template) ? template : NULL;
}

const cJSON *jobset_find_named(const cJSON *array, const char *name, size_t *index)
{
	const cJSON *item;
	size_t i = 0;

	if (!cJSON_IsArray(array))
		return NULL;
	cJSON_ArrayForEach(item, array)
	{
		const char *item_name = string_member(item, "name");

		if (item_name && strcmp(item_name, name) == 0) {
			if (index)
				*index = i;
			return item;
		}
		i++;
	}
	return NULL;
}

int jobset_token_valid(const char *token)
{
	size_t n = strnlen(token, JOBSET_TOKEN_MAX + 1);

	if (n < JOBSET_TOKEN_MIN || n > JOBSET_TOKEN_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (token[i] < 0x21 || token[i] > 0x7e)
			return 0;
	return 1;
}

/* A generation as muster writes it: decimal digits, 0..JOBSET_GENERATION_MAX;
 * absent or "" is 0 (the downward API gives "" for an absent label, and the
 * barrier and the controller read it so). Returns it, or -1 when it is not
 * such a number. */
static long long generation_value(const cJSON *value)
{
	long long n = 0;

	if (!value || (cJSON_IsString(value) && !value->valuestring[0]))
		return 0;
	if (!cJSON_IsString(value) || strlen(value->valuestring) > 10)
		return -1;
	for (const char *p = value->valuestring; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		n = n * 10 + (*p - '0');
	}
	return n > JOBSET_GENERATION_MAX ? -1 : n;
}

int jobset_gang_generation(const cJSON *jobset, const struct group_config *config, long long *annotation,
			   long long *labels, char **cause)
{
	const cJSON *job;
	size_t index = 0;

	*labels = 0;
	*annotation = generation_value(kjson_member(
		kjson_member(kjson_member(jobset, "metadata"), "annotations"), MUSTER_LABEL_GANG_GENERATION));
	if (*annotation < 0)
		return cause_fail(cause,
				  "the annotation " MUSTER_LABEL_GANG_GENERATION
				  " is muster's and must be a number from 0 to 2147483647; remove it or "
				  "restore its value");
	cJSON_ArrayForEach(job, jobset_replicated_jobs(jobset))
	{
		const char *job_name = jobset_replicated_job_name(job);

		if (job_name && group_config_targets(config, job_name)) {
			long long generation = generation_value(kjson_member(
				kjson_member(kjson_member(jobset_pod_template(job), "metadata"), "labels"),
				MUSTER_LABEL_GANG_GENERATION));

			if (generation < 0)
				return cause_fail(
					cause,
					"spec.replicatedJobs[%zu] (%s): the pod template label " MUSTER_LABEL_GANG_GENERATION
					" is muster's and must be a number from 0 to 2147483647; "
					"remove it or restore its value",
					index, job_name);
			if (generation > *labels)
				*labels = generation;
		}
		index++;
	}
	return 0;
}
