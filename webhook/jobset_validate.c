/*
 * jobset_validate: admission rules for group-scheduled JobSets
 * (jobset_validate.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "jobset_validate.h"
#include "cause.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobset_admission.h"
#include "jobset_model.h"
#include "jobset_shape.h"

/* "a, b, c" of the replicated jobs' names, cut to fit. */
static void list_names(const struct jobset_model *model, char *out, size_t size)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < model->replicated_job_count; i++) {
		int n = snprintf(out + used, size - used, "%s%s", used ? ", " : "",
				 model->replicated_jobs[i].name);

		if (n < 0 || (size_t)n >= size - used) {
			if (size > 4)
				memcpy(out + size - 4, "...", 4);
			return;
		}
		used += (size_t)n;
	}
}

/* Reserved names in one replicated job's pod template. */
static int check_reserved(const char *jobset, const char *job_name, size_t index, const cJSON *pod_spec,
			  int targeted, char **message)
{
	const cJSON *volume;

	if (jobset_find_named(kjson_member(pod_spec, "containers"), MUSTER_BARRIER_CONTAINER, NULL))
		return cause_fail(
			message,
			"spec.replicatedJobs[%zu] (%s): the container name \"" MUSTER_BARRIER_CONTAINER
			"\" is "
			"reserved for muster's barrier init container; rename your container",
			index, job_name);
	if (!targeted &&
	    jobset_find_named(kjson_member(pod_spec, "initContainers"), MUSTER_BARRIER_CONTAINER, NULL))
		return cause_fail(
			message,
			"spec.replicatedJobs[%zu] (%s): the init container name \"" MUSTER_BARRIER_CONTAINER
			"\" is reserved for muster's barrier, which this replicated job is not subject to "
			"(it is not group-scheduled); rename your init container",
			index, job_name);
	volume = jobset_find_named(kjson_member(pod_spec, "volumes"), MUSTER_BARRIER_VOLUME, NULL);
	if (targeted && volume) {
		const cJSON *config_map = kjson_member(volume, "configMap");
		const cJSON *name = kjson_member(config_map, "name");
		char expected[JOBSET_OBJECT_NAME_MAX + 1];

		snprintf(expected, sizeof(expected), "%s" MUSTER_CONFIGMAP_SUFFIX, jobset);
		if (!cJSON_IsString(name) || strcmp(name->valuestring, expected) != 0)
			return cause_fail(
				message,
				"spec.replicatedJobs[%zu] (%s): the volume name \"" MUSTER_BARRIER_VOLUME
				"\" is "
				"reserved for the barrier's ConfigMap %s; rename your volume",
				index, job_name, expected);
	}
	return 0;
}

static int named(const struct jobset_model *model, const char *name)
{
	for (size_t i = 0; i < model->replicated_job_count; i++)
		if (strcmp(model->replicated_jobs[i].name, name) == 0)
			return 1;
	return 0;
}

static int check_targets(const struct jobset_model *model, char **message)
{
	for (size_t t = 0; t < model->target_count; t++) {
		if (!named(model, model->targets[t])) {
			char names[512];

			list_names(model, names, sizeof(names));
			return cause_fail(
				message,
				"groupSchedulingConfig.targetReplicatedJobs[%zu] \"%s\" names no replicated job "
				"of this JobSet (its replicated jobs: %s)",
				t, model->targets[t], names);
		}
	}
	return 0;
}

/* "a, b" of the targeted replicated jobs, cut to fit; returns their count. */
static size_t targeted_names(const struct jobset_model *model, char *out, size_t size)
{
	size_t count = 0, used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < model->replicated_job_count; i++) {
		if (!model->replicated_jobs[i].targeted)
			continue;
		count++;
		if (used < size - 1) {
			snprintf(out + used, size - used, "%s%s", used ? ", " : "",
				 model->replicated_jobs[i].name);
			used = strlen(out);
		}
	}
	return count;
}

int jobset_validate_create(const struct jobset_admission *a, char **message)
{
	const cJSON *jobset = a->tree, *jobs = jobset_replicated_jobs(jobset), *job;
	const struct group_config *config = &a->config;
	const char *name = a->name, *token = a->token, *order;
	size_t index = 0, targeted = 0;
	char names[512] = "";

	*message = NULL;
	if (!a->config_ok)
		return cause_fail(message, "%s", a->config_cause);
	if (!jobs)
		return cause_fail(message, "spec.replicatedJobs is missing or not a list");
	if (config->present) {
		if (!name)
			return cause_fail(
				message,
				"group scheduling needs metadata.name: with generateName the name is not "
				"known when muster adds the ConfigMap volume " MUSTER_BARRIER_VOLUME
				"; give the JobSet a name");
		if (strlen(name) + strlen(MUSTER_CONFIGMAP_SUFFIX) > JOBSET_OBJECT_NAME_MAX)
			return cause_fail(
				message,
				"metadata.name is %zu characters: the barrier's ConfigMap \"<name>" MUSTER_CONFIGMAP_SUFFIX
				"\" would be longer than %d; use a name of at most %zu characters",
				strlen(name), JOBSET_OBJECT_NAME_MAX,
				(size_t)JOBSET_OBJECT_NAME_MAX - strlen(MUSTER_CONFIGMAP_SUFFIX));
		if (config->has_timeout && (config->timeout_seconds < GROUP_CONFIG_TIMEOUT_MIN ||
					    config->timeout_seconds > GROUP_CONFIG_TIMEOUT_MAX))
			return cause_fail(
				message,
				"groupSchedulingConfig.timeoutAfterSeconds is %u: it must be between %u and %u "
				"seconds (a day)",
				config->timeout_seconds, GROUP_CONFIG_TIMEOUT_MIN, GROUP_CONFIG_TIMEOUT_MAX);
		/* The generation is read the same way by the webhook, the
		 * controller and the barrier; the counted spec as the controller
		 * will count it: what it could not count is refused now, not left
		 * to wait for a release that cannot come. */
		if (!a->generation_ok)
			return cause_fail(message, "%s", a->generation_cause);
		if (!a->counted)
			return cause_fail(message, "%s",
					  a->counted_cause ? a->counted_cause
							   : "the JobSet's spec was not counted");
		if (check_targets(a->counted, message))
			return -1;
		targeted = targeted_names(a->counted, names, sizeof(names));
	}
	if (token && !jobset_token_valid(token))
		return cause_fail(message,
				  "annotation " MUSTER_ANNOTATION_BARRIER_TOKEN
				  " must be %d to %d printable ASCII characters "
				  "without spaces; leave it out and muster makes one",
				  JOBSET_TOKEN_MIN, JOBSET_TOKEN_MAX);
	/* The reserved names are in the pod templates, which the model does not hold. */
	cJSON_ArrayForEach(job, jobs)
	{
		const char *job_name = jobset_replicated_job_name(job);
		int is_target = job_name && group_config_targets(config, job_name);
		const cJSON *template = jobset_pod_template(job);

		if (is_target && !cJSON_IsObject(kjson_member(template, "spec")))
			return cause_fail(
				message,
				"spec.replicatedJobs[%zu] (%s) has no pod template (template.spec.template.spec)",
				index, job_name);
		if (check_reserved(name ? name : "", job_name ? job_name : "(unnamed)", index,
				   kjson_member(template, "spec"), is_target, message))
			return -1;
		index++;
	}
	order = NULL;
	{
		const cJSON *item = kjson_member(kjson_member(kjson_member(jobset, "spec"), "startupPolicy"),
						 "startupPolicyOrder");

		if (cJSON_IsString(item))
			order = item->valuestring;
	}
	if (targeted > 1 && order && strcmp(order, "InOrder") == 0)
		return cause_fail(
			message,
			"startupPolicy InOrder cannot be combined with a group that spans %zu replicated jobs "
			"(%s): InOrder creates each replicated job only when the one before is ready, while the "
			"barrier holds every pod of the group until all have started, so they would wait for "
			"each other forever; set groupSchedulingConfig.targetReplicatedJobs to one replicated "
			"job, or use startupPolicyOrder AnyOrder",
			targeted, names);
	return 0;
}

static void describe(const struct group_config *config, char *out, size_t size)
{
	size_t used;

	if (!config->present) {
		snprintf(out, size, "no group scheduling");
		return;
	}
	if (config->has_timeout)
		snprintf(out, size, "timeout %u s, ", config->timeout_seconds);
	else
		snprintf(out, size, "default timeout, ");
	used = strlen(out);
	if (config->target_count == 0) {
		snprintf(out + used, size - used, "every replicated job");
		return;
	}
	for (size_t i = 0; i < config->target_count && used < size - 1; i++) {
		snprintf(out + used, size - used, "%s%s", i ? "," : "targets ", config->targets[i]);
		used = strlen(out);
	}
}

int jobset_validate_update(const struct jobset_admission *old, const struct jobset_admission *a,
			   char **message)
{
	static const struct group_config none;
	/* A stored object that no longer decodes (written before muster was
	 * installed) is compared as having no settings. */
	const struct group_config *was = old->config_ok ? &old->config : &none;

	*message = NULL;
	if (!a->config_ok)
		return cause_fail(message, "%s", a->config_cause);
	if (!group_config_equal(was, &a->config)) {
		char before[256], after[256];

		describe(was, before, sizeof(before));
		describe(&a->config, after, sizeof(after));
		return cause_fail(
			message,
			"groupSchedulingConfig cannot change after the JobSet is created (was: %s; now: %s): the "
			"barriers already injected were set up with it; delete and re-create the JobSet to change it",
			before, after);
	}
	if (old->token && (!a->token || strcmp(old->token, a->token) != 0))
		return cause_fail(message, "annotation " MUSTER_ANNOTATION_BARRIER_TOKEN
					   " cannot change or be removed after the JobSet is "
					   "created: its pods' barriers accept releases only with it");
	return 0;
}
