/*
 * jobset_model: a JobSet's JSON to struct jobset_model. See jobset_model.h.
 *
 * Each field is checked as it is read; a field of the wrong type is an error
 * rather than "absent", because a JobSet whose replicas cannot be read must
 * not be counted as if it had the default.
 */
#define _POSIX_C_SOURCE 200809L
#include "jobset_model.h"
#include "jobset_state.h"
#include "cause.h"
#include "group_config.h"
#include "kjson.h"
#include "model_fields.h"
#include "muster_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* A count: a JSON integer, or in a document (YAML gives strings) also a
 * decimal string. */
static int take_count(const cJSON *item, int document, uint32_t *value, int *present, const char *what,
		      char **cause)
{
	uint64_t v;

	if (!document || !cJSON_IsString(item))
		return kjson_take_count(item, value, present, what, cause);
	if (model_parse_decimal(item->valuestring, 10, KJSON_INT32_MAX, &v))
		return cause_fail(cause, "%s is not an integer in 0..%u", what, KJSON_INT32_MAX);
	*value = (uint32_t)v;
	*present = 1;
	return 0;
}

static int decode_replicated_job(const cJSON *item, size_t index, int document, struct jobset_rjob *rj,
				 char **cause)
{
	const cJSON *job_spec = kjson_member(kjson_member(item, "template"), "spec");
	const cJSON *labels =
		kjson_member(kjson_member(kjson_member(job_spec, "template"), "metadata"), "labels");
	char what[96], text[MODEL_LABEL_MAX + 1];
	uint64_t value;
	int present;

	if (!cJSON_IsObject(item))
		return cause_fail(cause, "spec.replicatedJobs[%zu] is not an object", index);
	snprintf(what, sizeof(what), "spec.replicatedJobs[%zu].name", index);
	if (kjson_take_string(kjson_member(item, "name"), rj->name, MODEL_LABEL_MAX, 1, what, cause))
		return -1;
	snprintf(what, sizeof(what), "spec.replicatedJobs[%zu].replicas", index);
	if (take_count(kjson_member(item, "replicas"), document, &rj->replicas, &present, what, cause))
		return -1;
	if (!present)
		rj->replicas = 1;
	snprintf(what, sizeof(what), "spec.replicatedJobs[%zu] parallelism", index);
	if (take_count(kjson_member(job_spec, "parallelism"), document, &rj->parallelism, &present, what,
		       cause))
		return -1;
	if (!present)
		rj->parallelism = 1;
	snprintf(what, sizeof(what), "spec.replicatedJobs[%zu] completions", index);
	if (take_count(kjson_member(job_spec, "completions"), document, &rj->completions, &present, what,
		       cause))
		return -1;
	/* A Job without completions runs `parallelism` pods until one succeeds. */
	if (!present)
		rj->completions = rj->parallelism;
	snprintf(what, sizeof(what),
		 "spec.replicatedJobs[%zu] pod template label " MUSTER_LABEL_GANG_GENERATION, index);
	if (kjson_take_string(kjson_member(labels, MUSTER_LABEL_GANG_GENERATION), text, MODEL_LABEL_MAX, 0,
			      what, cause))
		return -1;
	if (text[0] && model_parse_decimal(text, 10, KJSON_INT32_MAX, &value) != 0)
		return cause_fail(cause, "%s is not a number from 0 to %u", what, KJSON_INT32_MAX);
	rj->generation = text[0] ? (uint32_t)value : 0;
	return 0;
}

/* The settings, from the spec field or the annotations (lib/muster/group_config),
 * decoded here unless the caller has (`given`). */
static int decode_config(const cJSON *object, const struct group_config *given, struct jobset_model *out,
			 char **cause)
{
	struct group_config *config = given ? NULL : malloc(sizeof(*config));
	const struct group_config *use = given ? given : config;
	int err = 0;

	if (!use)
		return cause_fail(cause, "out of memory");
	if (!given)
		err = group_config_decode(object, config, cause);
	if (!err && use->present) {
		out->has_config = 1;
		out->has_timeout = use->has_timeout;
		out->timeout_seconds = use->timeout_seconds;
		out->target_count = use->target_count;
		for (size_t i = 0; i < use->target_count; i++)
			memcpy(out->targets[i], use->targets[i], sizeof(out->targets[i]));
	}
	free(config);
	return err;
}

static int decode(const struct cJSON *object, int document, const struct group_config *config,
		  struct jobset_model *out, char **cause)
{
	const cJSON *spec = kjson_member(object, "spec");
	const cJSON *jobs, *item;
	int present;

	if (cause)
		*cause = NULL;
	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(object))
		return cause_fail(cause, "JobSet is not an object");
	/* Before it is stored, a JobSet's identity is the caller's to check
	 * (a file needs none; admission has its own rules for the name). */
	if (!document) {
		struct jobset_state *state = malloc(sizeof(*state));

		if (!state)
			return cause_fail(cause, "out of memory");
		if (jobset_state_decode(object, state, cause)) {
			free(state);
			return -1;
		}
		memcpy(out->name, state->name, sizeof(out->name));
		memcpy(out->namespace, state->namespace, sizeof(out->namespace));
		memcpy(out->uid, state->uid, sizeof(out->uid));
		free(state);
	}
	if (!cJSON_IsObject(spec))
		return cause_fail(cause, "JobSet spec is missing");
	jobs = kjson_member(spec, "replicatedJobs");
	if (!cJSON_IsArray(jobs))
		return cause_fail(cause, "JobSet spec.replicatedJobs is missing or not a list");
	cJSON_ArrayForEach(item, jobs)
	{
		struct jobset_rjob *rj;

		if (out->replicated_job_count == JOBSET_MODEL_RJOBS_MAX)
			return cause_fail(cause, "more than %d replicatedJobs", JOBSET_MODEL_RJOBS_MAX);
		rj = &out->replicated_jobs[out->replicated_job_count];
		if (decode_replicated_job(item, out->replicated_job_count, document, rj, cause))
			return -1;
		for (size_t i = 0; i < out->replicated_job_count; i++)
			if (strcmp(out->replicated_jobs[i].name, rj->name) == 0)
				return cause_fail(cause, "replicated job name \"%s\" appears twice",
						  rj->name);
		out->replicated_job_count++;
	}
	if (decode_config(object, config, out, cause))
		return -1;
	for (size_t i = 0; i < out->replicated_job_count; i++) {
		struct jobset_rjob *rj = &out->replicated_jobs[i];

		rj->targeted = out->target_count == 0;
		for (size_t t = 0; t < out->target_count && !rj->targeted; t++)
			rj->targeted = strcmp(out->targets[t], rj->name) == 0;
		if (rj->targeted && rj->generation > out->generation)
			out->generation = rj->generation;
	}
	out->suspended = document ? kjson_is_true(kjson_member(spec, "suspend"))
				  : cJSON_IsTrue(kjson_member(spec, "suspend"));
	if (kjson_take_count(kjson_member(kjson_member(object, "status"), "restarts"), &out->restarts,
			     &present, "JobSet status.restarts", cause))
		return -1;
	return 0;
}

int jobset_model_decode(const struct cJSON *object, struct jobset_model *out, char **cause)
{
	return decode(object, 0, NULL, out, cause);
}

int jobset_model_decode_written(const struct cJSON *object, struct jobset_model *out, char **cause)
{
	return decode(object, 1, NULL, out, cause);
}

int jobset_model_decode_admitted(const struct cJSON *object, const struct group_config *config,
				 struct jobset_model *out, char **cause)
{
	return decode(object, 1, config, out, cause);
}

int jobset_model_parse(const char *json, size_t len, struct jobset_model *out, char **cause)
{
	cJSON *root;
	int rc;

	if (cause)
		*cause = NULL;
	memset(out, 0, sizeof(*out));
	root = kjson_parse_object(json, len, "JobSet", cause);
	if (!root)
		return -1;
	rc = jobset_model_decode(root, out, cause);
	cJSON_Delete(root);
	return rc;
}
