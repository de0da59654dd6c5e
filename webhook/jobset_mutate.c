/*
 * jobset_mutate: the barrier's injection as a JSON Patch (jobset_mutate.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "jobset_mutate.h"
#include "cause.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "jobset_admission.h"
#include "jobset_shape.h"
#include "json_patch.h"
#include "kjson.h"
#include "muster_api.h"

/* Longest JSON Pointer written: a replicated job index and fixed keys. */
#define POINTER_MAX 192

static cJSON *env_field(const char *name, const char *field_path)
{
	cJSON *env = cJSON_CreateObject(), *from, *ref;

	if (!env || !cJSON_AddStringToObject(env, "name", name) ||
	    !(from = cJSON_AddObjectToObject(env, "valueFrom")) ||
	    !(ref = cJSON_AddObjectToObject(from, "fieldRef")) ||
	    !cJSON_AddStringToObject(ref, "fieldPath", field_path)) {
		cJSON_Delete(env);
		return NULL;
	}
	return env;
}

static cJSON *env_value(const char *name, const char *value)
{
	cJSON *env = cJSON_CreateObject();

	if (!env || !cJSON_AddStringToObject(env, "name", name) ||
	    !cJSON_AddStringToObject(env, "value", value)) {
		cJSON_Delete(env);
		return NULL;
	}
	return env;
}

static int add_item(cJSON *array, cJSON *item)
{
	if (!item)
		return -1;
	cJSON_AddItemToArray(array, item);
	return 0;
}

static int add_string(cJSON *array, const char *text)
{
	return add_item(array, cJSON_CreateString(text));
}

/* The barrier init container (docs/barrier.md, "How a pod runs it"). */
static cJSON *barrier_container(const struct group_config *config,
				const struct jobset_mutate_options *options, const char *token)
{
	cJSON *c = cJSON_CreateObject(), *args, *env, *mounts, *mount, *resources, *requests, *security,
	      *caps;
	char timeout[16], listen[48];
	int ok;

	if (!c)
		return NULL;
	snprintf(timeout, sizeof(timeout), "%u",
		 config->has_timeout ? config->timeout_seconds : GROUP_CONFIG_TIMEOUT_DEFAULT);
	snprintf(listen, sizeof(listen), "$(MUSTER_POD_IP):%u", options->barrier_port);
	ok = cJSON_AddStringToObject(c, "name", MUSTER_BARRIER_CONTAINER) &&
	     cJSON_AddStringToObject(c, "image", options->barrier_image) &&
	     cJSON_AddStringToObject(c, "imagePullPolicy", options->image_pull_policy) &&
	     (args = cJSON_AddArrayToObject(c, "args")) && !add_string(args, "--dir") &&
	     !add_string(args, MUSTER_BARRIER_MOUNT) && !add_string(args, "--attempt") &&
	     !add_string(args, "$(MUSTER_RESTART_ATTEMPT)") && !add_string(args, "--timeout") &&
	     !add_string(args, timeout) && !add_string(args, "--generation") &&
	     !add_string(args, "$(MUSTER_GANG_GENERATION)") && !add_string(args, "--jobset-uid") &&
	     !add_string(args, "$(MUSTER_JOBSET_UID)") &&
	     (!options->barrier_port || (!add_string(args, "--listen") && !add_string(args, listen))) &&
	     (env = cJSON_AddArrayToObject(c, "env")) &&
	     !add_item(env, env_field("MUSTER_RESTART_ATTEMPT",
				      "metadata.labels['" JOBSET_LABEL_RESTART_ATTEMPT "']")) &&
	     !add_item(env, env_field("MUSTER_GANG_GENERATION",
				      "metadata.labels['" MUSTER_LABEL_GANG_GENERATION "']")) &&
	     !add_item(env, env_field("MUSTER_JOBSET_UID", "metadata.labels['" JOBSET_LABEL_UID "']")) &&
	     (!options->barrier_port || !add_item(env, env_field("MUSTER_POD_IP", "status.podIP"))) &&
	     !add_item(env, env_field("POD_NAME", "metadata.name")) &&
	     !add_item(env, env_field("POD_NAMESPACE", "metadata.namespace")) &&
	     (!options->barrier_port || !add_item(env, env_value(MUSTER_ENV_BARRIER_TOKEN, token))) &&
	     (mounts = cJSON_AddArrayToObject(c, "volumeMounts")) && (mount = cJSON_CreateObject()) &&
	     !add_item(mounts, mount) && cJSON_AddStringToObject(mount, "name", MUSTER_BARRIER_VOLUME) &&
	     cJSON_AddStringToObject(mount, "mountPath", MUSTER_BARRIER_MOUNT) &&
	     cJSON_AddTrueToObject(mount, "readOnly") &&
	     (resources = cJSON_AddObjectToObject(c, "resources")) &&
	     (requests = cJSON_AddObjectToObject(resources, "requests")) &&
	     cJSON_AddStringToObject(requests, "cpu", options->cpu_request) &&
	     cJSON_AddStringToObject(requests, "memory", options->memory_request) &&
	     (!options->memory_limit || !options->memory_limit[0] ||
	      ((requests = cJSON_AddObjectToObject(resources, "limits")) &&
	       cJSON_AddStringToObject(requests, "memory", options->memory_limit))) &&
	     cJSON_AddStringToObject(c, "terminationMessagePolicy", "File") &&
	     (security = cJSON_AddObjectToObject(c, "securityContext")) &&
	     cJSON_AddTrueToObject(security, "runAsNonRoot") &&
	     cJSON_AddNumberToObject(security, "runAsUser", 65532) &&
	     cJSON_AddFalseToObject(security, "allowPrivilegeEscalation") &&
	     cJSON_AddTrueToObject(security, "readOnlyRootFilesystem") &&
	     (caps = cJSON_AddObjectToObject(security, "capabilities")) &&
	     (args = cJSON_AddArrayToObject(caps, "drop")) && !add_string(args, "ALL");
	if (!ok) {
		cJSON_Delete(c);
		return NULL;
	}
	return c;
}

static cJSON *barrier_volume(const char *jobset)
{
	cJSON *v = cJSON_CreateObject(), *cm;
	char name[JOBSET_OBJECT_NAME_MAX + 1];

	snprintf(name, sizeof(name), "%s" MUSTER_CONFIGMAP_SUFFIX, jobset);
	if (!v || !cJSON_AddStringToObject(v, "name", MUSTER_BARRIER_VOLUME) ||
	    !(cm = cJSON_AddObjectToObject(v, "configMap")) || !cJSON_AddStringToObject(cm, "name", name) ||
	    !cJSON_AddTrueToObject(cm, "optional")) {
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

/* The index before which the barrier goes: after the leading sidecars,
 * counted without the item `skip` (an existing container of the barrier's
 * name, about to be removed; SIZE_MAX for none). */
static size_t barrier_position(const cJSON *init_containers, size_t skip)
{
	const cJSON *c;
	size_t i = 0, at = 0;

	cJSON_ArrayForEach(c, init_containers)
	{
		const cJSON *policy = kjson_member(c, "restartPolicy");

		if (at++ == skip)
			continue;
		if (!cJSON_IsString(policy) || strcmp(policy->valuestring, "Always") != 0)
			break;
		i++;
	}
	return i;
}

static cJSON *one_entry_object(const char *key, cJSON *value)
{
	cJSON *object = cJSON_CreateObject();

	if (!object || !value) {
		cJSON_Delete(object);
		cJSON_Delete(value);
		return NULL;
	}
	cJSON_AddItemToObject(object, key, value);
	return object;
}

/* Sets the label `key` (`key_pointer`: the same as a JSON Pointer token) of
 * the pod template at `base` to `value`, creating metadata and labels where
 * missing. With `only_missing`, a label already there is left alone. */
static int set_template_label(cJSON *patch, const char *base, const cJSON *template, const char *key,
			      const char *key_pointer, const char *value, int only_missing)
{
	const cJSON *metadata = kjson_member(template, "metadata");
	const cJSON *labels = kjson_member(metadata, "labels");
	char path[POINTER_MAX];

	if (!cJSON_IsObject(metadata)) {
		snprintf(path, sizeof(path), "%s/metadata", base);
		return json_patch_add(
			patch, path,
			one_entry_object("labels", one_entry_object(key, cJSON_CreateString(value))));
	}
	if (!cJSON_IsObject(labels)) {
		snprintf(path, sizeof(path), "%s/metadata/labels", base);
		return json_patch_add(patch, path, one_entry_object(key, cJSON_CreateString(value)));
	}
	if (only_missing && kjson_member(labels, key))
		return 0;
	snprintf(path, sizeof(path), "%s/metadata/labels/%s", base, key_pointer);
	return json_patch_op(patch, kjson_member(labels, key) ? "replace" : "add", path,
			     cJSON_CreateString(value));
}

/* The JSON Pointer of replicated job `index`'s pod template. */
static void template_base(char *base, size_t size, size_t index)
{
	snprintf(base, size, "/spec/replicatedJobs/%zu/template/spec/template", index);
}

static int patch_template(cJSON *patch, size_t index, const cJSON *template, const char *jobset,
			  const struct group_config *config, const struct jobset_mutate_options *options,
			  const char *token)
{
	const cJSON *spec = kjson_member(template, "spec");
	const cJSON *init = kjson_member(spec, "initContainers");
	const cJSON *volumes = kjson_member(spec, "volumes");
	const cJSON *found;
	size_t at = 0;
	char base[80], path[POINTER_MAX]; /* base: 47 bytes and an index */

	template_base(base, sizeof(base), index);
	if (set_template_label(patch, base, template, MUSTER_LABEL_GROUP_SCHEDULING,
			       MUSTER_LABEL_GROUP_SCHEDULING_POINTER, "true", 1))
		return -1;
	if (!cJSON_IsArray(init)) {
		cJSON *list = cJSON_CreateArray();

		snprintf(path, sizeof(path), "%s/spec/initContainers", base);
		if (!list || add_item(list, barrier_container(config, options, token)) ||
		    json_patch_add(patch, path, list)) {
			cJSON_Delete(list);
			return -1;
		}
	} else if (!(found = jobset_find_named(init, MUSTER_BARRIER_CONTAINER, &at))) {
		snprintf(path, sizeof(path), "%s/spec/initContainers/%zu", base,
			 barrier_position(init, SIZE_MAX));
		if (json_patch_add(patch, path, barrier_container(config, options, token)))
			return -1;
	} else {
		/* Already there: our own injection (a re-admission), left as it is,
		 * or a user's container of the reserved name, which would stand in
		 * for the barrier and let the pod run before its group: replaced by
		 * the real one, at the barrier's place. */
		cJSON *want = barrier_container(config, options, token);
		size_t position = barrier_position(init, at);

		if (!want)
			return -1;
		snprintf(path, sizeof(path), "%s/spec/initContainers/%zu", base, at);
		if (position != at) {
			if (json_patch_op(patch, "remove", path, NULL)) {
				cJSON_Delete(want);
				return -1;
			}
			snprintf(path, sizeof(path), "%s/spec/initContainers/%zu", base, position);
			if (json_patch_add(patch, path, want))
				return -1;
		} else if (cJSON_Compare(found, want, 1)) {
			cJSON_Delete(want);
		} else if (json_patch_op(patch, "replace", path, want)) {
			return -1;
		}
	}
	if (!cJSON_IsArray(volumes)) {
		cJSON *list = cJSON_CreateArray();

		snprintf(path, sizeof(path), "%s/spec/volumes", base);
		if (!list || add_item(list, barrier_volume(jobset)) || json_patch_add(patch, path, list)) {
			cJSON_Delete(list);
			return -1;
		}
	} else if (!jobset_find_named(volumes, MUSTER_BARRIER_VOLUME, NULL)) {
		snprintf(path, sizeof(path), "%s/spec/volumes/-", base);
		if (json_patch_add(patch, path, barrier_volume(jobset)))
			return -1;
	}
	return 0;
}

int jobset_mutate(const struct jobset_admission *a, const cJSON *tree,
		  const struct jobset_mutate_options *options, const char *token, cJSON **patch, char **cause)
{
	const struct group_config *config = &a->config;
	const cJSON *jobs = jobset_replicated_jobs(tree), *job;
	const cJSON *metadata = kjson_member(tree, "metadata");
	const char *name = a->name, *existing = a->token;
	size_t index = 0;
	cJSON *ops;

	if (cause)
		*cause = NULL;
	*patch = NULL;
	if (!a->config_ok)
		return cause_fail(cause, "%s", a->config_cause);
	if (!config->present)
		return (*patch = cJSON_CreateArray()) ? 0 : cause_fail(cause, "out of memory");
	if (!jobs || !name)
		return cause_fail(cause, "the JobSet has no metadata.name or no spec.replicatedJobs");
	ops = cJSON_CreateArray();
	if (!ops)
		return cause_fail(cause, "out of memory");
	if (existing)
		token = existing;
	else if (!cJSON_IsObject(kjson_member(metadata, "annotations"))) {
		if (json_patch_add(
			    ops, "/metadata/annotations",
			    one_entry_object(MUSTER_ANNOTATION_BARRIER_TOKEN, cJSON_CreateString(token))))
			goto no_memory;
	} else if (json_patch_add(ops, "/metadata/annotations/" MUSTER_ANNOTATION_BARRIER_TOKEN_POINTER,
				  cJSON_CreateString(token))) {
		goto no_memory;
	}
	cJSON_ArrayForEach(job, jobs)
	{
		const char *job_name = jobset_replicated_job_name(job);
		const cJSON *template = jobset_pod_template(job);

		if (job_name && group_config_targets(config, job_name)) {
			if (!cJSON_IsObject(kjson_member(template, "spec"))) {
				cJSON_Delete(ops);
				return cause_fail(cause, "spec.replicatedJobs[%zu] (%s) has no pod template",
						  index, job_name);
			}
			if (patch_template(ops, index, template, name, config, options, token))
				goto no_memory;
		}
		index++;
	}
	*patch = ops;
	return 0;
no_memory:
	cJSON_Delete(ops);
	return cause_fail(cause, "out of memory");
}

/* Sets the JobSet's annotation of record to `value`. */
static int set_generation_annotation(cJSON *patch, const cJSON *jobset, const char *value)
{
	const cJSON *annotations = kjson_member(kjson_member(jobset, "metadata"), "annotations");

	if (!cJSON_IsObject(annotations))
		return json_patch_add(
			patch, "/metadata/annotations",
			one_entry_object(MUSTER_LABEL_GANG_GENERATION, cJSON_CreateString(value)));
	return json_patch_op(
		patch, kjson_member(annotations, MUSTER_LABEL_GANG_GENERATION) ? "replace" : "add",
		"/metadata/annotations/" MUSTER_LABEL_GANG_GENERATION_POINTER, cJSON_CreateString(value));
}

static long long max3(long long a, long long b, long long c)
{
	long long m = a > b ? a : b;

	return m > c ? m : c;
}

int jobset_mutate_update(const struct jobset_admission *old, const struct jobset_admission *a,
			 const cJSON *tree, cJSON **patch, char **cause)
{
	const struct group_config *config = &a->config;
	const cJSON *job;
	long long old_annotation, old_labels, new_annotation = a->generation_annotation,
					      new_labels = a->generation_labels, of_record;
	char value[24], base[80];
	size_t index = 0;
	cJSON *ops;

	if (cause)
		*cause = NULL;
	*patch = NULL;
	if (!a->config_ok)
		return cause_fail(cause, "%s", a->config_cause);
	if (!config->present)
		return (*patch = cJSON_CreateArray()) ? 0 : cause_fail(cause, "out of memory");
	if (!old->generation_ok)
		return cause_fail(cause, "%s", old->generation_cause);
	old_annotation = old->generation_annotation;
	old_labels = old->generation_labels;
	if (!a->generation_ok)
		return cause_fail(cause, "%s", a->generation_cause);
	ops = cJSON_CreateArray();
	if (!ops)
		return cause_fail(cause, "out of memory");
	/* The generation of record: the highest ever seen. Template labels can go
	 * back while the JobSet is suspended (Kueue restores the pod templates it
	 * admitted with when it evicts); the annotation is muster's alone. */
	of_record = max3(old_annotation, old_labels, new_annotation);
	/* A resume as the gate leaves it: a resume the gate holds (suspend set
	 * back to true on `tree`) is no resume yet. */
	if (!old->suspended || cJSON_IsTrue(kjson_member(kjson_member(tree, "spec"), "suspend"))) {
		/* Not a resume: the annotation of record is kept as it was. */
		if (of_record > 0 && new_annotation != of_record) {
			snprintf(value, sizeof(value), "%lld", of_record);
			if (set_generation_annotation(ops, tree, value))
				goto no_memory;
		}
		*patch = ops;
		return 0;
	}
	if (new_labels > of_record)
		of_record = new_labels;
	if (of_record >= JOBSET_GENERATION_MAX) {
		cJSON_Delete(ops);
		return cause_fail(cause,
				  "the JobSet was resumed %lld times, the most muster counts; "
				  "create it anew",
				  of_record);
	}
	snprintf(value, sizeof(value), "%lld", of_record + 1);
	if (set_generation_annotation(ops, tree, value))
		goto no_memory;
	cJSON_ArrayForEach(job, jobset_replicated_jobs(tree))
	{
		const char *job_name = jobset_replicated_job_name(job);

		if (job_name && group_config_targets(config, job_name)) {
			template_base(base, sizeof(base), index);
			if (set_template_label(ops, base, jobset_pod_template(job),
					       MUSTER_LABEL_GANG_GENERATION,
					       MUSTER_LABEL_GANG_GENERATION_POINTER, value, 0))
				goto no_memory;
		}
		index++;
	}
	*patch = ops;
	return 0;
no_memory:
	cJSON_Delete(ops);
	return cause_fail(cause, "out of memory");
}
