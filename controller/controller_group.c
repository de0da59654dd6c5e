/*
 * controller_group: the group-start loop (see controller_group.h for what it
 * does and the annotations it reads). This file is the I/O edge around the
 * pure core: watches in, tracker decisions, ConfigMap write and push out.
 */
#define _POSIX_C_SOURCE 200809L

#include "controller_group.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "group_decode.h"
#include "group_tracker.h"
#include "kube_client.h"
#include "kube_curl.h"
#include "mlog.h"
#include "push_fanout.h"
#include "release_line.h"

#define JOBSETS_GROUP_PATH "/apis/jobset.x-k8s.io/v1alpha2"
#define POD_JOBSET_LABEL "jobset.sigs.k8s.io/jobset-name"
#define LIST_PAGE_SIZE 500u

/* One group-scheduled JobSet. */
struct entry {
	struct entry *next;
	char namespace[GROUP_LABEL_MAX + 1];
	char name[GROUP_LABEL_MAX + 1];
	char uid[GROUP_UID_MAX + 1];
	char token[RELEASE_TOKEN_MAX + 1]; /* "" when the annotation is absent */
	struct group_tracker *tracker;
	int seen; /* confirmed by the JobSet LIST in progress */
	int in_pod_relist; /* relist_begin was called for the pod LIST in progress */
	int needs_read; /* reading the ConfigMap or listing the pods failed: retried every tick */
	enum group_action last_action;
	int has_last_action;
};

/* An API client with its transport; one per thread. */
struct api {
	struct kube_curl *curl;
	struct kube_client *client;
};

struct controller_group {
	pthread_mutex_t lock;
	struct entry *entries;
	size_t entry_count;
	char namespace[GROUP_LABEL_MAX + 1];
	struct controller_group_options options;
	struct api jobset_api, pod_api, write_api;
	struct timespec start;
};

static uint64_t now_ms(const struct controller_group *group)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)(now.tv_sec - group->start.tv_sec) * 1000u +
	       (uint64_t)((now.tv_nsec - group->start.tv_nsec) / 1000000);
}

static void api_free(struct api *api)
{
	kube_client_free(api->client);
	kube_curl_free(api->curl);
	api->client = NULL;
	api->curl = NULL;
}

static int api_new(const struct kube_config *cfg, struct api *api, char **cause)
{
	int err = kube_curl_new(cfg, &api->curl, cause);

	if (!err)
		err = kube_client_new(cfg, &kube_curl_transport, api->curl, NULL, &api->client, cause);
	if (err)
		api_free(api);
	return err;
}

/* ---- decoding at the boundary ---- */

static const char *annotation(const cJSON *object, const char *key)
{
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(object, "metadata"),
						 "annotations"),
		key);

	return cJSON_IsString(value) ? value->valuestring : NULL;
}

/* group_jobset_from_json, plus the annotation that marks a JobSet
 * group-scheduled where the CRD pruned spec.groupSchedulingConfig, plus the
 * token annotation (copied into token, "" when absent or too long). */
static int jobset_decode(const cJSON *object, struct group_jobset *jobset, char *token, size_t token_size,
			 char **cause)
{
	const char *timeout, *value;

	if (group_jobset_from_json(object, jobset, cause))
		return -1;
	timeout = annotation(object, CONTROLLER_ANNOTATION_TIMEOUT);
	if (!jobset->has_config && timeout) {
		char *end = NULL;
		unsigned long seconds;

		errno = 0;
		seconds = strtoul(timeout, &end, 10);
		if (errno || end == timeout || *end || seconds > GROUP_ATTEMPT_MAX) {
			*cause = strdup("annotation " CONTROLLER_ANNOTATION_TIMEOUT
					" is not a number of seconds");
			return -1;
		}
		jobset->has_config = 1;
		jobset->has_timeout = 1;
		jobset->timeout_seconds = (uint32_t)seconds;
		/* No targets: group_decode already marked every job targeted. */
	}
	token[0] = '\0';
	value = annotation(object, CONTROLLER_ANNOTATION_TOKEN);
	if (value && strlen(value) < token_size)
		memcpy(token, value, strlen(value) + 1);
	return 0;
}

/* ---- the registry ---- */

static struct entry *entry_find(struct controller_group *group, const char *namespace, const char *name)
{
	for (struct entry *e = group->entries; e; e = e->next)
		if (strcmp(e->namespace, namespace) == 0 && strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

static void entry_remove(struct controller_group *group, struct entry *victim)
{
	for (struct entry **link = &group->entries; *link; link = &(*link)->next) {
		if (*link == victim) {
			*link = victim->next;
			group_tracker_free(victim->tracker);
			free(victim);
			group->entry_count--;
			return;
		}
	}
}

static void configmap_path(char *out, size_t size, const struct entry *e, int collection)
{
	if (collection)
		snprintf(out, size, "/api/v1/namespaces/%s/configmaps", e->namespace);
	else
		snprintf(out, size, "/api/v1/namespaces/%s/configmaps/%s" CONTROLLER_CONFIGMAP_SUFFIX,
			 e->namespace, e->name);
}

/* Reads the released attempt back from the ConfigMap into the tracker. */
static int read_released(struct controller_group *group, struct entry *e, char **cause)
{
	char path[KUBE_PATH_MAX];
	cJSON *configmap = NULL;
	const cJSON *started;
	int err;

	configmap_path(path, sizeof(path), e, 0);
	err = kube_get(group->write_api.client, path, &configmap, cause);
	if (err == KUBE_ENOTFOUND) {
		group_tracker_set_none_released(e->tracker);
		return 0;
	}
	if (err)
		return err;
	started = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(configmap, "data"),
						   "started");
	if (cJSON_IsString(started)) {
		char *end = NULL;
		unsigned long attempt;

		errno = 0;
		attempt = strtoul(started->valuestring, &end, 10);
		if (errno || end == started->valuestring || *end || attempt > GROUP_ATTEMPT_MAX) {
			err = kube_cause(cause, KUBE_EPARSE, "%s: data.started is not an attempt number",
					 path);
			goto out;
		}
		group_tracker_set_released(e->tracker, (uint32_t)attempt);
		mlog(MLOG_INFO, "released-read", "jobset=%s/%s attempt=%lu", e->namespace, e->name, attempt);
	} else {
		group_tracker_set_none_released(e->tracker);
	}
out:
	cJSON_Delete(configmap);
	return err;
}

struct list_context {
	struct entry *entry;
	uint64_t seq;
};

static int list_pod_item(void *arg, const cJSON *item)
{
	struct list_context *context = arg;
	struct group_pod pod;
	char *cause = NULL;

	if (group_pod_from_json(item, &pod, &cause)) {
		mlog(MLOG_WARN, "pod-undecodable", "cause=\"%s\"", cause ? cause : "no memory");
		free(cause);
		return 0;
	}
	group_tracker_apply_pod(context->entry->tracker, &pod, GROUP_EVENT_ADDED, context->seq);
	return 0;
}

/* A new tracker gets its own LIST of the JobSet's pods, so that it has a
 * full picture without waiting for the pod watch's next re-list. It runs
 * under the lock: no pod event is applied meanwhile. */
static int list_pods(struct controller_group *group, struct entry *e, char **cause)
{
	char path[KUBE_PATH_MAX], selector[sizeof(POD_JOBSET_LABEL) + GROUP_LABEL_MAX + 2];
	struct kube_selectors selectors = { .label = selector, .field = NULL };
	struct list_context context = { .entry = e, .seq = now_ms(group) };
	int err;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", e->namespace);
	snprintf(selector, sizeof(selector), "%s=%s", POD_JOBSET_LABEL, e->name);
	group_tracker_relist_begin(e->tracker);
	err = kube_list(group->write_api.client, path, &selectors, LIST_PAGE_SIZE, list_pod_item, &context,
			NULL, cause);
	group_tracker_relist_end(e->tracker);
	if (err)
		group_tracker_relist_begin(e->tracker); /* keep decide() at UNKNOWN until a full LIST */
	return err;
}

/* ---- the release ---- */

struct collect {
	struct push_target *targets;
	size_t count, capacity;
	uint16_t port;
};

static int collect_started(const struct group_started_pod *pod, void *arg)
{
	struct collect *collect = arg;
	struct push_target *target;

	if (pod->ip_family != 4 && pod->ip_family != 6)
		return 0;
	if (collect->count == collect->capacity)
		return 0;
	target = &collect->targets[collect->count];
	memset(target, 0, sizeof(*target));
	if (!inet_ntop(pod->ip_family == 4 ? AF_INET : AF_INET6, pod->ip, target->ip, sizeof(target->ip)))
		return 0;
	target->port = collect->port;
	collect->count++;
	return 0;
}

/* Creates the ConfigMap with data.started, or merge-patches an existing one.
 * *how says which. */
static int write_configmap(struct controller_group *group, const struct entry *e, uint32_t attempt,
			   const char **how, char **cause)
{
	char path[KUBE_PATH_MAX], name[GROUP_LABEL_MAX + sizeof(CONTROLLER_CONFIGMAP_SUFFIX)], value[16];
	char patch[64];
	cJSON *body = cJSON_CreateObject(), *metadata, *owners, *owner, *data;
	int err = KUBE_ENOMEM;

	snprintf(name, sizeof(name), "%s" CONTROLLER_CONFIGMAP_SUFFIX, e->name);
	snprintf(value, sizeof(value), "%u", attempt);
	if (!body || !(metadata = cJSON_AddObjectToObject(body, "metadata")) ||
	    !cJSON_AddStringToObject(body, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(body, "kind", "ConfigMap") ||
	    !cJSON_AddStringToObject(metadata, "name", name) ||
	    !cJSON_AddStringToObject(metadata, "namespace", e->namespace) ||
	    !(owners = cJSON_AddArrayToObject(metadata, "ownerReferences")) ||
	    !(owner = cJSON_CreateObject()) || !cJSON_AddItemToArray(owners, owner) ||
	    !cJSON_AddStringToObject(owner, "apiVersion", "jobset.x-k8s.io/v1alpha2") ||
	    !cJSON_AddStringToObject(owner, "kind", "JobSet") ||
	    !cJSON_AddStringToObject(owner, "name", e->name) ||
	    !cJSON_AddStringToObject(owner, "uid", e->uid) ||
	    !cJSON_AddBoolToObject(owner, "controller", 1) ||
	    !(data = cJSON_AddObjectToObject(body, "data")) ||
	    !cJSON_AddStringToObject(data, "started", value))
		goto out;
	configmap_path(path, sizeof(path), e, 1);
	*how = "created";
	err = kube_create(group->write_api.client, path, body, NULL, cause);
	if (err != KUBE_ECONFLICT)
		goto out;
	/* It exists (an earlier attempt's release, or our own retried POST). */
	free(*cause);
	*cause = NULL;
	*how = "patched";
	configmap_path(path, sizeof(path), e, 0);
	snprintf(patch, sizeof(patch), "{\"data\":{\"started\":\"%u\"}}", attempt);
	err = kube_patch(group->write_api.client, path, KUBE_PATCH_MERGE, patch, NULL, cause);
out:
	cJSON_Delete(body);
	return err;
}

/* Records the release as a Kubernetes Event on the JobSet, so `kubectl
 * describe jobset` shows when the group was released and how long its pods
 * took to start. Best effort: a failure is logged, the release stands. */
static void emit_event(struct controller_group *group, const struct entry *e, const char *message)
{
	char path[KUBE_PATH_MAX], stamp[32], prefix[GROUP_LABEL_MAX + 2];
	cJSON *body = cJSON_CreateObject(), *metadata, *object, *source;
	char *cause = NULL;
	time_t now = time(NULL);
	struct tm tm;
	int err;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(prefix, sizeof(prefix), "%s.", e->name);
	if (!body || !cJSON_AddStringToObject(body, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(body, "kind", "Event") ||
	    !(metadata = cJSON_AddObjectToObject(body, "metadata")) ||
	    !cJSON_AddStringToObject(metadata, "generateName", prefix) ||
	    !cJSON_AddStringToObject(metadata, "namespace", e->namespace) ||
	    !(object = cJSON_AddObjectToObject(body, "involvedObject")) ||
	    !cJSON_AddStringToObject(object, "apiVersion", "jobset.x-k8s.io/v1alpha2") ||
	    !cJSON_AddStringToObject(object, "kind", "JobSet") ||
	    !cJSON_AddStringToObject(object, "name", e->name) ||
	    !cJSON_AddStringToObject(object, "namespace", e->namespace) ||
	    !cJSON_AddStringToObject(object, "uid", e->uid) ||
	    !cJSON_AddStringToObject(body, "reason", "GroupReleased") ||
	    !cJSON_AddStringToObject(body, "message", message) ||
	    !cJSON_AddStringToObject(body, "type", "Normal") ||
	    !(source = cJSON_AddObjectToObject(body, "source")) ||
	    !cJSON_AddStringToObject(source, "component", "muster-controller") ||
	    !cJSON_AddStringToObject(body, "reportingComponent", "muster-controller") ||
	    !cJSON_AddStringToObject(body, "firstTimestamp", stamp) ||
	    !cJSON_AddStringToObject(body, "lastTimestamp", stamp) ||
	    !cJSON_AddNumberToObject(body, "count", 1)) {
		mlog(MLOG_WARN, "event-failed", "jobset=%s/%s cause=\"out of memory\"", e->namespace,
		     e->name);
		goto out;
	}
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", e->namespace);
	err = kube_create(group->write_api.client, path, body, NULL, &cause);
	if (err)
		mlog(MLOG_WARN, "event-failed", "jobset=%s/%s err=%s cause=\"%s\"", e->namespace, e->name,
		     kube_err_name(err), cause ? cause : "");
	free(cause);
out:
	cJSON_Delete(body);
}

static void release(struct controller_group *group, struct entry *e, const struct group_decision *decision)
{
	struct collect collect = { .port = group->options.push_port };
	struct push_fanout_options push = {
		.parallelism = group->options.push_parallelism,
		.target_timeout_ms = group->options.push_target_timeout_ms,
		.total_timeout_ms = group->options.push_total_timeout_ms,
	};
	const char *how = "", *push_cause = NULL, *token_cause = NULL;
	char *cause = NULL;
	uint64_t begun = now_ms(group), written;
	int err, ok = 0;
	size_t counts[PUSH_TIMEOUT + 1] = { 0 };

	err = write_configmap(group, e, decision->attempt, &how, &cause);
	if (err) {
		group_tracker_release_failed(e->tracker, decision->attempt);
		mlog(MLOG_ERROR, "release-failed", "jobset=%s/%s attempt=%u err=%s cause=\"%s\"",
		     e->namespace, e->name, decision->attempt, kube_err_name(err), cause ? cause : "");
		free(cause);
		return;
	}
	written = now_ms(group);
	/* The ConfigMap is the release of record; from here on it happened. */
	group_tracker_release_done(e->tracker, decision->attempt);

	if (release_token_check(e->token, strlen(e->token), &token_cause)) {
		mlog(MLOG_WARN, "push-skipped", "jobset=%s/%s attempt=%u reason=\"no usable token: %s\"",
		     e->namespace, e->name, decision->attempt, token_cause);
	} else if (decision->started > 0) {
		collect.capacity = (size_t)decision->started;
		collect.targets = calloc(collect.capacity, sizeof(*collect.targets));
		if (collect.targets)
			group_tracker_foreach_started(e->tracker, collect_started, &collect);
		if (collect.count) {
			ok = push_fanout(collect.targets, collect.count, decision->attempt, e->token, &push,
					 &push_cause);
			if (ok < 0)
				mlog(MLOG_WARN, "push-failed", "jobset=%s/%s attempt=%u cause=\"%s\"",
				     e->namespace, e->name, decision->attempt, push_cause);
			for (size_t i = 0; i < collect.count; i++)
				counts[collect.targets[i].result]++;
		}
	}
	mlog(MLOG_INFO, "release",
	     "jobset=%s/%s attempt=%u expected=%llu started=%llu configmap=%s spread_ms=%llu write_ms=%llu "
	     "push_ms=%llu pushed=%zu push_ok=%zu push_refused=%zu push_unreachable=%zu push_timeout=%zu "
	     "push_pending=%zu",
	     e->namespace, e->name, decision->attempt, (unsigned long long)decision->expected,
	     (unsigned long long)decision->started, how,
	     (unsigned long long)(decision->has_starts ? decision->last_start - decision->first_start : 0),
	     (unsigned long long)(written - begun), (unsigned long long)(now_ms(group) - written),
	     collect.count, counts[PUSH_OK], counts[PUSH_REFUSED], counts[PUSH_UNREACHABLE],
	     counts[PUSH_TIMEOUT], counts[PUSH_PENDING]);
	{
		char message[256];

		snprintf(
			message, sizeof(message),
			"Released restart attempt %u: %llu of %llu pods started, %llu ms from the first start "
			"to the last; pushed to %zu, %zu answered",
			decision->attempt, (unsigned long long)decision->started,
			(unsigned long long)decision->expected,
			(unsigned long long)(decision->has_starts
						     ? decision->last_start - decision->first_start
						     : 0),
			collect.count, counts[PUSH_OK]);
		emit_event(group, e, message);
	}
	free(collect.targets);
}

/* Asks the tracker and acts on the answer. Called under the lock after every
 * change to the entry. */
static void decide(struct controller_group *group, struct entry *e)
{
	struct group_decision decision;

	group_tracker_decide(e->tracker, &decision);
	if (!e->has_last_action || e->last_action != decision.action) {
		mlog(decision.action == GROUP_ACTION_ANOMALY ? MLOG_WARN : MLOG_INFO, "group-state",
		     "jobset=%s/%s action=%s attempt=%u expected=%llu started=%llu tracked=%llu",
		     e->namespace, e->name, group_action_name(decision.action), decision.attempt,
		     (unsigned long long)decision.expected, (unsigned long long)decision.started,
		     (unsigned long long)decision.tracked);
		e->last_action = decision.action;
		e->has_last_action = 1;
	}
	if (decision.action == GROUP_ACTION_RELEASE)
		release(group, e, &decision);
}

/* ---- JobSet events ---- */

/* Reads the released attempt back and lists the entry's pods. Always list:
 * a tracker made while the pod watch's own LIST is under way (or before it
 * began) would otherwise never see a complete LIST. On failure the tracker
 * stays UNKNOWN (it never releases) and the tick tries again. */
static void entry_read(struct controller_group *group, struct entry *e)
{
	char *cause = NULL;
	int err = read_released(group, e, &cause);

	if (!err)
		err = list_pods(group, e, &cause);
	e->needs_read = err != 0;
	if (err)
		mlog(MLOG_ERROR, "jobset-read-failed", "jobset=%s/%s err=%s cause=\"%s\"", e->namespace,
		     e->name, kube_err_name(err), cause ? cause : "");
	free(cause);
}

/* Makes the tracker of a new group-scheduled JobSet: reads the released
 * attempt back and, when the pod watch has listed already, lists its pods. */
static void jobset_add(struct controller_group *group, const struct group_jobset *jobset, const char *token)
{
	struct entry *e;
	char *cause = NULL;

	if (group->entry_count >= CONTROLLER_JOBSETS_MAX) {
		mlog(MLOG_WARN, "jobset-ignored", "jobset=%s/%s reason=\"more than %u JobSets\"",
		     jobset->namespace, jobset->name, CONTROLLER_JOBSETS_MAX);
		return;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->tracker = group_tracker_new(jobset, 0, &cause);
	if (!e->tracker) {
		mlog(MLOG_WARN, "jobset-ignored", "jobset=%s/%s cause=\"%s\"", jobset->namespace,
		     jobset->name, cause ? cause : "no memory");
		free(cause);
		free(e);
		return;
	}
	memcpy(e->namespace, jobset->namespace, sizeof(e->namespace));
	memcpy(e->name, jobset->name, sizeof(e->name));
	memcpy(e->uid, jobset->uid, sizeof(e->uid));
	memcpy(e->token, token, sizeof(e->token));
	e->seen = 1;
	e->next = group->entries;
	group->entries = e;
	group->entry_count++;
	mlog(MLOG_INFO, "jobset-tracked", "jobset=%s/%s attempt=%u", e->namespace, e->name, jobset->restarts);
	entry_read(group, e);
}

static void jobset_changed(struct controller_group *group, const cJSON *object, int deleted)
{
	struct group_jobset *jobset = malloc(sizeof(*jobset));
	char token[RELEASE_TOKEN_MAX + 1];
	struct entry *e;
	char *cause = NULL;

	if (!jobset)
		return;
	if (jobset_decode(object, jobset, token, sizeof(token), &cause)) {
		mlog(MLOG_WARN, "jobset-undecodable", "cause=\"%s\"", cause ? cause : "no memory");
		goto out;
	}
	e = entry_find(group, jobset->namespace, jobset->name);
	if (e && (deleted || !jobset->has_config || strcmp(e->uid, jobset->uid) != 0)) {
		mlog(MLOG_INFO, "jobset-forgotten", "jobset=%s/%s", e->namespace, e->name);
		entry_remove(group, e);
		e = NULL;
	}
	if (deleted || !jobset->has_config)
		goto out;
	if (!e) {
		jobset_add(group, jobset, token);
		e = entry_find(group, jobset->namespace, jobset->name);
	} else {
		e->seen = 1;
		memcpy(e->token, token, sizeof(e->token));
		if (group_tracker_set_jobset(e->tracker, jobset, now_ms(group), &cause)) {
			mlog(MLOG_WARN, "jobset-rebuilt", "jobset=%s/%s cause=\"%s\"", e->namespace, e->name,
			     cause ? cause : "no memory");
			entry_remove(group, e);
			jobset_add(group, jobset, token);
			e = entry_find(group, jobset->namespace, jobset->name);
		}
	}
	if (e)
		decide(group, e);
out:
	free(cause);
	free(jobset);
}

static int jobset_relist_begin(void *arg)
{
	struct controller_group *group = arg;

	pthread_mutex_lock(&group->lock);
	for (struct entry *e = group->entries; e; e = e->next)
		e->seen = 0;
	pthread_mutex_unlock(&group->lock);
	return 0;
}

static int jobset_item(void *arg, const cJSON *object)
{
	struct controller_group *group = arg;

	pthread_mutex_lock(&group->lock);
	jobset_changed(group, object, 0);
	pthread_mutex_unlock(&group->lock);
	return 0;
}

static int jobset_relist_end(void *arg, const char *resource_version)
{
	struct controller_group *group = arg;
	struct entry *e, *next;

	(void)resource_version;
	pthread_mutex_lock(&group->lock);
	for (e = group->entries; e; e = next) {
		next = e->next;
		if (!e->seen) {
			mlog(MLOG_INFO, "jobset-forgotten", "jobset=%s/%s reason=\"not in the LIST\"",
			     e->namespace, e->name);
			entry_remove(group, e);
		}
	}
	pthread_mutex_unlock(&group->lock);
	return 0;
}

static int jobset_event(void *arg, enum kube_watch_type type, const cJSON *object)
{
	struct controller_group *group = arg;

	pthread_mutex_lock(&group->lock);
	jobset_changed(group, object, type == KUBE_WATCH_DELETED);
	pthread_mutex_unlock(&group->lock);
	return 0;
}

/* ---- pod events ---- */

static void pod_changed(struct controller_group *group, const cJSON *object, enum group_event event)
{
	struct group_pod pod;
	struct entry *e;
	char *cause = NULL;

	if (group_pod_from_json(object, &pod, &cause)) {
		mlog(MLOG_WARN, "pod-undecodable", "cause=\"%s\"", cause ? cause : "no memory");
		free(cause);
		return;
	}
	e = entry_find(group, pod.namespace, pod.jobset_name);
	if (!e)
		return;
	if (group_tracker_apply_pod(e->tracker, &pod, event, now_ms(group)) == GROUP_APPLY_CHANGED)
		decide(group, e);
}

static int pod_relist_begin(void *arg)
{
	struct controller_group *group = arg;

	pthread_mutex_lock(&group->lock);
	for (struct entry *e = group->entries; e; e = e->next) {
		group_tracker_relist_begin(e->tracker);
		e->in_pod_relist = 1;
	}
	pthread_mutex_unlock(&group->lock);
	return 0;
}

static int pod_item(void *arg, const cJSON *object)
{
	struct controller_group *group = arg;

	pthread_mutex_lock(&group->lock);
	pod_changed(group, object, GROUP_EVENT_ADDED);
	pthread_mutex_unlock(&group->lock);
	return 0;
}

static int pod_relist_end(void *arg, const char *resource_version)
{
	struct controller_group *group = arg;

	(void)resource_version;
	pthread_mutex_lock(&group->lock);
	for (struct entry *e = group->entries; e; e = e->next) {
		/* A tracker made during this LIST listed its own pods already. */
		if (!e->in_pod_relist)
			continue;
		e->in_pod_relist = 0;
		group_tracker_relist_end(e->tracker);
		decide(group, e);
	}
	pthread_mutex_unlock(&group->lock);
	return 0;
}

static int pod_event(void *arg, enum kube_watch_type type, const cJSON *object)
{
	struct controller_group *group = arg;
	enum group_event event = type == KUBE_WATCH_DELETED ? GROUP_EVENT_DELETED
				 : type == KUBE_WATCH_ADDED ? GROUP_EVENT_ADDED
							    : GROUP_EVENT_MODIFIED;

	pthread_mutex_lock(&group->lock);
	pod_changed(group, object, event);
	pthread_mutex_unlock(&group->lock);
	return 0;
}

/* ---- the tick ---- */

/* Once a second: retries failed reads and asks every tracker again, so that
 * a release whose ConfigMap write failed is retried without waiting for the
 * next pod event. */
static void tick(struct controller_group *group)
{
	pthread_mutex_lock(&group->lock);
	for (struct entry *e = group->entries; e; e = e->next) {
		if (e->needs_read)
			entry_read(group, e);
		decide(group, e);
	}
	pthread_mutex_unlock(&group->lock);
}

/* ---- threads ---- */

struct watch_thread {
	pthread_t thread;
	struct controller_group *group;
	struct kube_client *client;
	char path[KUBE_PATH_MAX];
	struct kube_selectors selectors;
	struct kube_watch_callbacks callbacks;
	atomic_int *stop;
	int err;
	char *cause;
};

static void *watch_main(void *arg)
{
	struct watch_thread *w = arg;

	w->err = kube_watch_run(w->client, w->path, &w->selectors, LIST_PAGE_SIZE, &w->callbacks, w->stop,
				&w->cause);
	if (w->err)
		atomic_store(w->stop, 1); /* one watch gone for good: stop the other too */
	return NULL;
}

int controller_group_run(struct controller_group *group, atomic_int *stop, char **cause)
{
	struct watch_thread watches[2];
	int started = 0, err = 0;

	memset(watches, 0, sizeof(watches));
	for (int i = 0; i < 2; i++) {
		struct watch_thread *w = &watches[i];

		w->group = group;
		w->stop = stop;
		if (i == 0) {
			w->client = group->jobset_api.client;
			if (group->namespace[0])
				snprintf(w->path, sizeof(w->path),
					 JOBSETS_GROUP_PATH "/namespaces/%s/jobsets", group->namespace);
			else
				snprintf(w->path, sizeof(w->path), JOBSETS_GROUP_PATH "/jobsets");
			w->callbacks =
				(struct kube_watch_callbacks){ jobset_relist_begin, jobset_item,
							       jobset_relist_end, jobset_event, group };
		} else {
			w->client = group->pod_api.client;
			if (group->namespace[0])
				snprintf(w->path, sizeof(w->path), "/api/v1/namespaces/%s/pods",
					 group->namespace);
			else
				snprintf(w->path, sizeof(w->path), "/api/v1/pods");
			w->selectors.label = POD_JOBSET_LABEL;
			w->callbacks = (struct kube_watch_callbacks){ pod_relist_begin, pod_item,
								      pod_relist_end, pod_event, group };
		}
		if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
			atomic_store(stop, 1);
			err = kube_cause(cause, KUBE_ENOMEM, "cannot start a watch thread");
			break;
		}
		started++;
	}
	while (!atomic_load(stop)) {
		struct timespec second = { .tv_sec = 1, .tv_nsec = 0 };

		nanosleep(&second, NULL);
		if (!atomic_load(stop))
			tick(group);
	}
	for (int i = 0; i < started; i++) {
		pthread_join(watches[i].thread, NULL);
		if (watches[i].err && !err) {
			err = watches[i].err;
			kube_cause(cause, err, "watch %s: %s", watches[i].path,
				   watches[i].cause ? watches[i].cause : kube_err_message(err));
		}
		free(watches[i].cause);
	}
	return err;
}

int controller_group_new(const struct kube_config *cfg, const struct controller_group_options *options,
			 struct controller_group **out, char **cause)
{
	struct controller_group *group = calloc(1, sizeof(*group));
	int err;

	*out = NULL;
	if (!group)
		return kube_cause(cause, KUBE_ENOMEM, "no memory for the controller");
	if (options->namespace && strlen(options->namespace) > GROUP_LABEL_MAX) {
		free(group);
		return kube_cause(cause, KUBE_EINVAL, "namespace longer than %d bytes", GROUP_LABEL_MAX);
	}
	if (options->namespace)
		memcpy(group->namespace, options->namespace, strlen(options->namespace) + 1);
	group->options = *options;
	group->options.namespace = NULL; /* the copy above is what is used */
	clock_gettime(CLOCK_MONOTONIC, &group->start);
	if (pthread_mutex_init(&group->lock, NULL) != 0) {
		free(group);
		return kube_cause(cause, KUBE_ENOMEM, "cannot make a mutex");
	}
	if ((err = api_new(cfg, &group->jobset_api, cause)) || (err = api_new(cfg, &group->pod_api, cause)) ||
	    (err = api_new(cfg, &group->write_api, cause))) {
		controller_group_free(group);
		return err;
	}
	*out = group;
	return 0;
}

void controller_group_free(struct controller_group *group)
{
	if (!group)
		return;
	while (group->entries)
		entry_remove(group, group->entries);
	api_free(&group->jobset_api);
	api_free(&group->pod_api);
	api_free(&group->write_api);
	pthread_mutex_destroy(&group->lock);
	free(group);
}
