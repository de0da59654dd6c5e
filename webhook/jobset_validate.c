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

#include "jobset_shape.h"

/* "a, b, c" of the replicated jobs' names, cut to fit. */
static void list_names(const cJSON *jobs, char *out, size_t size)
{
	const cJSON *job;
	size_t used = 0;

	out[0] = '\0';
	cJSON_ArrayForEach(job, jobs)
	{
		const char *name = jobset_replicated_job_name(job);
		int n;

		if (!name)
			continue;
		n = snprintf(out + used, size - used, "%s%s", used ? ", " : "", name);
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

static int check_targets(const cJSON *jobs, const struct group_config *config, char **message)
{
	for (size_t t = 0; t < config->target_count; t++) {
		if (!jobset_find_named(jobs, config->targets[t], NULL)) {
			char names[512];

			list_names(jobs, names, sizeof(names));
			return cause_fail(
				message,
				"groupSchedulingConfig.targetReplicatedJobs[%zu] \"%s\" names no replicated job "
				"of this JobSet (its replicated jobs: %s)",
				t, config->targets[t], names);
		}
	}
	return 0;
}

int jobset_validate_create(const cJSON *jobset, const struct group_config *config, char **message)
{
	const cJSON *jobs = jobset_replicated_jobs(jobset), *job;
	const char *name = jobset_name(jobset), *token, *order;
	size_t index = 0, targeted = 0;
	char targeted_names[512] = "";

	*message = NULL;
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
		if (check_targets(jobs, config, message))
			return -1;
		{
			long long annotation, labels;

			/* Read the same way by the webhook, the controller and the barrier. */
			if (jobset_gang_generation(jobset, config, &annotation, &labels, message))
				return -1;
		}
	}
	token = jobset_annotation(jobset, MUSTER_ANNOTATION_BARRIER_TOKEN);
	if (token && !jobset_token_valid(token))
		return cause_fail(message,
				  "annotation " MUSTER_ANNOTATION_BARRIER_TOKEN
				  " must be %d to %d printable ASCII characters "
				  "without spaces; leave it out and muster makes one",
				  JOBSET_TOKEN_MIN, JOBSET_TOKEN_MAX);
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
		if (is_target) {
			size_t used = strlen(targeted_names);

			if (used < sizeof(targeted_names) - 1)
				snprintf(targeted_names + used, sizeof(targeted_names) - used, "%s%s",
					 used ? ", " : "", job_name);
			targeted++;
		}
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
			targeted, targeted_names);
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

int jobset_validate_update(const cJSON *old_jobset, const cJSON *jobset, char **message)
{
	struct group_config *configs = calloc(2, sizeof(*configs));
	const char *old_token = jobset_annotation(old_jobset, MUSTER_ANNOTATION_BARRIER_TOKEN);
	const char *token = jobset_annotation(jobset, MUSTER_ANNOTATION_BARRIER_TOKEN);
	char *cause = NULL;
	int err = -1;

	*message = NULL;
	if (!configs)
		return cause_fail(message, "out of memory");
	if (group_config_decode(jobset, &configs[1], &cause)) {
		cause_fail(message, "%s", cause ? cause : "groupSchedulingConfig does not decode");
		goto out;
	}
	/* A stored object that no longer decodes (written before muster was
	 * installed) is compared as having no settings. */
	free(cause);
	cause = NULL;
	if (group_config_decode(old_jobset, &configs[0], &cause))
		memset(&configs[0], 0, sizeof(configs[0]));
	if (!group_config_equal(&configs[0], &configs[1])) {
		char before[256], after[256];

		describe(&configs[0], before, sizeof(before));
		describe(&configs[1], after, sizeof(after));
		cause_fail(
			message,
			"groupSchedulingConfig cannot change after the JobSet is created (was: %s; now: %s): the "
			"barriers already injected were set up with it; delete and re-create the JobSet to change it",
			before, after);
		goto out;
	}
	if (old_token && (!token || strcmp(old_token, token) != 0)) {
		cause_fail(message, "annotation " MUSTER_ANNOTATION_BARRIER_TOKEN
				    " cannot change or be removed after the JobSet is "
				    "created: its pods' barriers accept releases only with it");
		goto out;
	}
	err = 0;
out:
	free(cause);
	free(configs);
	return err;
}
