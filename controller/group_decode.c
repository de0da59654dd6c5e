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

#include "group_config.h"
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

static const cJSON *member(const cJSON *object, const char *key)
{
	return cJSON_IsObject(object) ? cJSON_GetObjectItemCaseSensitive(object, key) : NULL;
}

/* Copies the string `item` into `dst` (max bytes + NUL). Absent or JSON null
 * gives "" and 0 when optional; -1 for a wrong type, an empty required string,
 * a string longer than max or one holding a NUL. */
static int take_string(const cJSON *item, char *dst, size_t max, int required, const char *what, char **cause)
{
	size_t n;

	dst[0] = '\0';
	if (!item || cJSON_IsNull(item)) {
		if (required)
			return cause_fail(cause, "%s is missing", what);
		return 0;
	}
	if (!cJSON_IsString(item) || !item->valuestring)
		return cause_fail(cause, "%s is not a string", what);
	n = strnlen(item->valuestring, max + 1);
	if (n > max)
		return cause_fail(cause, "%s is longer than %zu bytes", what, max);
	if (n == 0 && required)
		return cause_fail(cause, "%s is empty", what);
	memcpy(dst, item->valuestring, n);
	dst[n] = '\0';
	return 0;
}

/* Reads an optional integer in 0..GROUP_ATTEMPT_MAX. Absent or null leaves
 * *present 0. */
static int take_count(const cJSON *item, uint32_t *value, int *present, const char *what, char **cause)
{
	double d;

	*present = 0;
	if (!item || cJSON_IsNull(item))
		return 0;
	if (!cJSON_IsNumber(item))
		return cause_fail(cause, "%s is not a number", what);
	d = item->valuedouble;
	if (!isfinite(d) || d < 0 || d > (double)GROUP_ATTEMPT_MAX || floor(d) != d)
		return cause_fail(cause, "%s is not an integer in 0..%u", what, GROUP_ATTEMPT_MAX);
	*value = (uint32_t)d;
	*present = 1;
	return 0;
}

/* Parses a decimal number of at most `max_digits` digits into *value, no sign
 * and no spaces. Returns 0 or -1. */
static int parse_decimal(const char *text, unsigned max_digits, uint64_t limit, uint64_t *value)
{
	uint64_t v = 0;
	size_t n = strlen(text);

	if (n == 0 || n > max_digits)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned d;

		if (text[i] < '0' || text[i] > '9')
			return -1;
		d = (unsigned)(text[i] - '0');
		if (v > (limit - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*value = v;
	return 0;
}

static cJSON *parse_bounded(const char *json, size_t len, const char *what, char **cause)
{
	cJSON *root;

	if (!json)
		return cause_fail(cause, "no %s JSON", what), NULL;
	if (len > GROUP_JSON_MAX)
		return cause_fail(cause, "%s JSON is %zu bytes, more than %u", what, len, GROUP_JSON_MAX),
		       NULL;
	root = cJSON_ParseWithLength(json, len);
	if (!root)
		return cause_fail(cause, "%s is not valid JSON", what), NULL;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return cause_fail(cause, "%s JSON is not an object", what), NULL;
	}
	return root;
}

static int decode_replicated_job(const cJSON *item, size_t index, struct group_replicated_job *rj,
				 char **cause)
{
	const cJSON *job_spec = member(member(item, "template"), "spec");
	const cJSON *labels = member(member(member(job_spec, "template"), "metadata"), "labels");
	char what[96], text[GROUP_LABEL_MAX + 1];
	uint64_t value;
	int present;

	if (!cJSON_IsObject(item))
		return cause_fail(cause, "spec.replicatedJobs[%zu] is not an object", index);
	snprintf(what, sizeof(what), "spec.replicatedJobs[%zu].name", index);
	if (take_string(member(item, "name"), rj->name, GROUP_LABEL_MAX, 1, what, cause))
		return -1;
	snprintf(what, sizeof(what), "spec.replicatedJobs[%zu].replicas", index);
	if (take_count(member(item, "replicas"), &rj->replicas, &present, what, cause))
		return -1;
	if (!present)
		rj->replicas = 1;
	snprintf(what, sizeof(what), "spec.replicatedJobs[%zu] parallelism", index);
	if (take_count(member(job_spec, "parallelism"), &rj->parallelism, &present, what, cause))
		return -1;
	if (!present)
		rj->parallelism = 1;
	snprintf(what, sizeof(what), "spec.replicatedJobs[%zu] completions", index);
	if (take_count(member(job_spec, "completions"), &rj->completions, &present, what, cause))
		return -1;
	/* A Job without completions runs `parallelism` pods until one succeeds. */
	if (!present)
		rj->completions = rj->parallelism;
	snprintf(what, sizeof(what),
		 "spec.replicatedJobs[%zu] pod template label " MUSTER_LABEL_GANG_GENERATION, index);
	if (take_string(member(labels, MUSTER_LABEL_GANG_GENERATION), text, GROUP_LABEL_MAX, 0, what, cause))
		return -1;
	if (text[0] && parse_decimal(text, 10, GROUP_ATTEMPT_MAX, &value) != 0)
		return cause_fail(cause, "%s is not a number from 0 to %u", what, GROUP_ATTEMPT_MAX);
	rj->generation = text[0] ? (uint32_t)value : 0;
	return 0;
}

/* The settings, from the spec field or the annotations (lib/muster/group_config). */
static int decode_config(const cJSON *object, struct group_jobset *out, char **cause)
{
	struct group_config *config = malloc(sizeof(*config));
	int err;

	if (!config)
		return cause_fail(cause, "out of memory");
	err = group_config_decode(object, config, cause);
	if (!err && config->present) {
		out->has_config = 1;
		out->has_timeout = config->has_timeout;
		out->timeout_seconds = config->timeout_seconds;
		out->target_count = config->target_count;
		for (size_t i = 0; i < config->target_count; i++)
			memcpy(out->targets[i], config->targets[i], sizeof(out->targets[i]));
	}
	free(config);
	return err;
}

int group_jobset_from_json(const struct cJSON *object, struct group_jobset *out, char **cause)
{
	const cJSON *metadata = member(object, "metadata");
	const cJSON *spec = member(object, "spec");
	const cJSON *jobs, *item;
	int present;

	if (cause)
		*cause = NULL;
	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(object))
		return cause_fail(cause, "JobSet is not an object");
	if (!cJSON_IsObject(metadata))
		return cause_fail(cause, "JobSet metadata is missing");
	if (take_string(member(metadata, "name"), out->name, GROUP_LABEL_MAX, 1, "JobSet metadata.name",
			cause) ||
	    take_string(member(metadata, "namespace"), out->namespace, GROUP_LABEL_MAX, 1,
			"JobSet metadata.namespace", cause) ||
	    take_string(member(metadata, "uid"), out->uid, GROUP_UID_MAX, 1, "JobSet metadata.uid", cause))
		return -1;
	if (!cJSON_IsObject(spec))
		return cause_fail(cause, "JobSet spec is missing");
	jobs = member(spec, "replicatedJobs");
	if (!cJSON_IsArray(jobs))
		return cause_fail(cause, "JobSet spec.replicatedJobs is missing or not a list");
	cJSON_ArrayForEach(item, jobs)
	{
		struct group_replicated_job *rj;

		if (out->replicated_job_count == GROUP_REPLICATED_JOBS_MAX)
			return cause_fail(cause, "more than %d replicatedJobs", GROUP_REPLICATED_JOBS_MAX);
		rj = &out->replicated_jobs[out->replicated_job_count];
		if (decode_replicated_job(item, out->replicated_job_count, rj, cause))
			return -1;
		for (size_t i = 0; i < out->replicated_job_count; i++)
			if (strcmp(out->replicated_jobs[i].name, rj->name) == 0)
				return cause_fail(cause, "replicated job name \"%s\" appears twice",
						  rj->name);
		out->replicated_job_count++;
	}
	if (decode_config(object, out, cause))
		return -1;
	for (size_t i = 0; i < out->replicated_job_count; i++) {
		struct group_replicated_job *rj = &out->replicated_jobs[i];

		rj->targeted = out->target_count == 0;
		for (size_t t = 0; t < out->target_count && !rj->targeted; t++)
			rj->targeted = strcmp(out->targets[t], rj->name) == 0;
		if (rj->targeted && rj->generation > out->generation)
			out->generation = rj->generation;
	}
	if (take_count(member(member(object, "status"), "restarts"), &out->restarts, &present,
		       "JobSet status.restarts", cause))
		return -1;
	return 0;
}

int group_jobset_decode(const char *json, size_t len, struct group_jobset *out, char **cause)
{
	cJSON *root;
	int rc;

	if (cause)
		*cause = NULL;
	memset(out, 0, sizeof(*out));
	root = parse_bounded(json, len, "JobSet", cause);
	if (!root)
		return -1;
	rc = group_jobset_from_json(root, out, cause);
	cJSON_Delete(root);
	return rc;
}

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
		const cJSON *name = member(item, "name");

		if (++seen > INIT_STATUSES_MAX)
			return cause_fail(cause, "more than %d initContainerStatuses", INIT_STATUSES_MAX);
		if (cJSON_IsString(name) && strcmp(name->valuestring, MUSTER_BARRIER_CONTAINER) == 0)
			break;
	}
	if (!item)
		return 0;
	last_code = member(member(member(item, "lastState"), "terminated"), "exitCode");
	*timed_out_before =
		cJSON_IsNumber(last_code) && last_code->valuedouble == MUSTER_BARRIER_EXIT_TIMEOUT;
	state = member(item, "state");
	if (!state || cJSON_IsNull(state))
		return 0;
	if (!cJSON_IsObject(state))
		return cause_fail(cause, "barrier container state is not an object");
	/* Exactly one of the three is set by kubelet; the most advanced wins if a
	 * broken status holds several, so a pod is never judged younger than it is. */
	if (cJSON_IsObject(member(state, "terminated"))) {
		const cJSON *code = member(member(state, "terminated"), "exitCode");

		if (!cJSON_IsNumber(code))
			return cause_fail(cause, "barrier container terminated without an exitCode");
		*barrier = code->valuedouble == 0			      ? GROUP_BARRIER_PASSED
			   : code->valuedouble == MUSTER_BARRIER_EXIT_TIMEOUT ? GROUP_BARRIER_TIMED_OUT
									      : GROUP_BARRIER_FAILED;
	} else if (cJSON_IsObject(member(state, "running"))) {
		*barrier = GROUP_BARRIER_RUNNING;
	} else if (cJSON_IsObject(member(state, "waiting"))) {
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
	phase = member(status, "phase");
	if (cJSON_IsString(phase))
		for (size_t i = 0; i < sizeof(phase_table) / sizeof(phase_table[0]); i++)
			if (strcmp(phase->valuestring, phase_table[i].name) == 0)
				out->phase = phase_table[i].phase;
	if (take_string(member(status, "podIP"), text, sizeof(text) - 1, 0, "status.podIP", cause))
		return -1;
	if (text[0]) {
		if (inet_pton(AF_INET, text, out->ip) == 1)
			out->ip_family = 4;
		else if (inet_pton(AF_INET6, text, out->ip) == 1)
			out->ip_family = 6;
		else
			return cause_fail(cause, "status.podIP is not an IP address");
	}
	return decode_barrier(member(status, "initContainerStatuses"), &out->barrier,
			      &out->barrier_timed_out_before, cause);
}

int group_pod_from_json(const struct cJSON *object, struct group_pod *out, char **cause)
{
	const cJSON *metadata = member(object, "metadata");
	const cJSON *labels = member(metadata, "labels");
	const cJSON *deletion = member(metadata, "deletionTimestamp");
	char text[GROUP_LABEL_MAX + 1];
	uint64_t value;

	if (cause)
		*cause = NULL;
	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(object))
		return cause_fail(cause, "pod is not an object");
	if (!cJSON_IsObject(metadata))
		return cause_fail(cause, "pod metadata is missing");
	if (take_string(member(metadata, "uid"), out->uid, GROUP_UID_MAX, 1, "pod metadata.uid", cause) ||
	    take_string(member(metadata, "name"), out->name, GROUP_OBJECT_NAME_MAX, 1, "pod metadata.name",
			cause) ||
	    take_string(member(metadata, "namespace"), out->namespace, GROUP_LABEL_MAX, 1,
			"pod metadata.namespace", cause))
		return -1;
	if (labels && !cJSON_IsNull(labels) && !cJSON_IsObject(labels))
		return cause_fail(cause, "pod metadata.labels is not an object");
	if (take_string(member(labels, JOBSET_LABEL_NAME), out->jobset_name, GROUP_LABEL_MAX, 0,
			"label " JOBSET_LABEL_NAME, cause) ||
	    take_string(member(labels, JOBSET_LABEL_UID), out->jobset_uid, GROUP_UID_MAX, 0,
			"label " JOBSET_LABEL_UID, cause) ||
	    take_string(member(labels, JOBSET_LABEL_REPLICATED_JOB), out->replicated_job, GROUP_LABEL_MAX, 0,
			"label " JOBSET_LABEL_REPLICATED_JOB, cause) ||
	    take_string(member(labels, JOBSET_LABEL_RESTART_ATTEMPT), text, GROUP_LABEL_MAX, 0,
			"label " JOBSET_LABEL_RESTART_ATTEMPT, cause))
		return -1;
	if (text[0] && parse_decimal(text, 10, GROUP_ATTEMPT_MAX, &value) == 0) {
		out->has_attempt = 1;
		out->attempt = (uint32_t)value;
	}
	if (take_string(member(labels, MUSTER_LABEL_GANG_GENERATION), text, GROUP_LABEL_MAX, 0,
			"label " MUSTER_LABEL_GANG_GENERATION, cause))
		return -1;
	if (text[0]) {
		if (parse_decimal(text, 10, GROUP_ATTEMPT_MAX, &value) == 0)
			out->generation = (uint32_t)value;
		else
			out->has_attempt = 0;
	}
	out->deleting = deletion && !cJSON_IsNull(deletion);
	if (take_string(member(metadata, "resourceVersion"), text, 20, 0, "pod metadata.resourceVersion",
			cause))
		return -1;
	/* resourceVersion is opaque by contract; it is used only when it is a plain
	 * decimal (etcd's revision, as every apiserver today sends). */
	if (text[0] && parse_decimal(text, 20, UINT64_MAX, &value) == 0) {
		out->has_resource_version = 1;
		out->resource_version = value;
	}
	{
		const cJSON *node = member(member(object, "spec"), "nodeName");

		out->bound = cJSON_IsString(node) && node->valuestring[0] != '\0';
	}
	return decode_pod_status(member(object, "status"), out, cause);
}

int group_pod_decode(const char *json, size_t len, struct group_pod *out, char **cause)
{
	cJSON *root;
	int rc;

	if (cause)
		*cause = NULL;
	memset(out, 0, sizeof(*out));
	root = parse_bounded(json, len, "pod", cause);
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
	root = parse_bounded(json, len, "watch event", cause);
	if (!root)
		return -1;
	type = member(root, "type");
	if (!cJSON_IsString(type)) {
		cause_fail(cause, "watch event has no type");
		goto out;
	}
	for (size_t i = 0; i < sizeof(event_names) / sizeof(event_names[0]); i++) {
		if (strcmp(type->valuestring, event_names[i]) == 0) {
			*event = (enum group_event)i;
			rc = group_pod_from_json(member(root, "object"), out, cause);
			goto out;
		}
	}
	cause_fail(cause, "watch event type is not ADDED, MODIFIED or DELETED");
out:
	cJSON_Delete(root);
	return rc;
}
