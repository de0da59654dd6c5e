/*
 * record_cache: placement records read from the API (record_cache.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "record_cache.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cause.h"
#include "kjson.h"
#include "kube_error.h"
#include "muster_api.h"
#include "topo_record.h"

struct entry {
	char namespace[64];
	char jobset[254];
	struct topo_record *record;
	time_t read_at; /* when the GET that read it was sent */
	int refreshing; /* a lookup is reading it again ahead of its expiry */
};

struct record_cache {
	pthread_mutex_t lock; /* the entries */
	pthread_mutex_t api; /* the client; held from a GET to the keep() of its answer */
	struct kube_client *client;
	time_t (*clock)(void *arg);
	void *clock_arg;
	struct entry entries[RECORD_CACHE_ENTRIES];
};

static time_t monotonic_s(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

void record_cache_set_clock(struct record_cache *cache, time_t (*clock)(void *arg), void *arg)
{
	cache->clock = clock ? clock : monotonic_s;
	cache->clock_arg = arg;
}

static time_t now_s(const struct record_cache *c)
{
	return c->clock(c->clock_arg);
}

int record_cache_new(struct kube_client *client, struct record_cache **out, char **cause)
{
	struct record_cache *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return cause_fail(cause, "out of memory");
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->api, NULL);
	c->client = client;
	c->clock = monotonic_s;
	*out = c;
	return 0;
}

void record_cache_free(struct record_cache *cache)
{
	if (!cache)
		return;
	for (size_t i = 0; i < RECORD_CACHE_ENTRIES; i++)
		topo_record_free(cache->entries[i].record);
	pthread_mutex_destroy(&cache->lock);
	pthread_mutex_destroy(&cache->api);
	free(cache);
}

/* The fresh entry for namespace/jobset of this uid and restart attempt, or
 * NULL. Under lock. */
static struct entry *find(struct record_cache *c, const char *namespace, const char *jobset, const char *uid,
			  uint32_t attempt)
{
	time_t now = now_s(c);

	for (size_t i = 0; i < RECORD_CACHE_ENTRIES; i++) {
		struct entry *e = &c->entries[i];

		if (e->record && strcmp(e->namespace, namespace) == 0 && strcmp(e->jobset, jobset) == 0 &&
		    strcmp(topo_record_uid(e->record), uid) == 0 &&
		    (!topo_record_has_attempt(e->record) || topo_record_attempt(e->record) == attempt) &&
		    now - e->read_at < RECORD_CACHE_TTL_S)
			return e;
	}
	return NULL;
}

/* Keeps a record read just now: replaces the entry of that JobSet, else an
 * empty one, else the oldest. Under lock; takes the record. */
static struct entry *keep(struct record_cache *c, const char *namespace, const char *jobset,
			  struct topo_record *record, time_t read_at)
{
	struct entry *slot = NULL;

	for (size_t i = 0; i < RECORD_CACHE_ENTRIES && !slot; i++)
		if (c->entries[i].record && strcmp(c->entries[i].namespace, namespace) == 0 &&
		    strcmp(c->entries[i].jobset, jobset) == 0)
			slot = &c->entries[i];
	for (size_t i = 0; i < RECORD_CACHE_ENTRIES && !slot; i++)
		if (!c->entries[i].record)
			slot = &c->entries[i];
	if (!slot) { /* full: the oldest goes */
		slot = &c->entries[0];
		for (size_t i = 1; i < RECORD_CACHE_ENTRIES; i++)
			if (c->entries[i].read_at < slot->read_at)
				slot = &c->entries[i];
	}
	topo_record_free(slot->record);
	snprintf(slot->namespace, sizeof(slot->namespace), "%s", namespace);
	snprintf(slot->jobset, sizeof(slot->jobset), "%s", jobset);
	slot->record = record;
	slot->read_at = read_at;
	slot->refreshing = 0;
	return slot;
}

/* GETs and parses the record; -1 with the cause naming the ConfigMap. The
 * caller holds c->api. */
static int read_record(struct record_cache *c, const char *namespace, const char *jobset, const char *uid,
		       int job, struct topo_record **out, char **cause)
{
	char path[KUBE_PATH_MAX], *inner = NULL;
	cJSON *configmap = NULL;
	const cJSON *text;
	int err;

	*out = NULL;
	if (!c->client)
		return cause_fail(cause,
				  "muster-webhook has no API access (--kubeconfig or in-cluster) to read "
				  "the placement of record");
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s" MUSTER_PLACEMENT_SUFFIX, namespace,
		 jobset);
	err = kube_get(c->client, path, &configmap, &inner);
	if (err == KUBE_ENOTFOUND) {
		free(inner);
		return cause_fail(
			cause,
			"no placement of record yet: ConfigMap %s/%s" MUSTER_PLACEMENT_SUFFIX
			" is missing (muster-controller writes it when JobSet %s is placed; %s)",
			namespace, jobset, jobset,
			job ? "JobSet makes this Job once it is placed: until then the JobSet waits "
			      "suspended, and kubectl describe jobset says why"
			    : "the Job controller retries this pod");
	}
	if (err) {
		cause_fail(cause, "cannot read ConfigMap %s/%s" MUSTER_PLACEMENT_SUFFIX ": %s", namespace,
			   jobset, inner ? inner : kube_err_message(err));
		free(inner);
		return -1;
	}
	text = kjson_member(kjson_member(configmap, "data"), MUSTER_PLACEMENT_KEY);
	if (!cJSON_IsString(text)) {
		cJSON_Delete(configmap);
		return cause_fail(
			cause, "ConfigMap %s/%s" MUSTER_PLACEMENT_SUFFIX " has no data." MUSTER_PLACEMENT_KEY,
			namespace, jobset);
	}
	if (topo_record_parse(text->valuestring, strlen(text->valuestring), out, &inner)) {
		cJSON_Delete(configmap);
		cause_fail(cause, "ConfigMap %s/%s" MUSTER_PLACEMENT_SUFFIX ": %s", namespace, jobset,
			   inner ? inner : "out of memory");
		free(inner);
		return -1;
	}
	cJSON_Delete(configmap);
	if (strcmp(topo_record_uid(*out), uid) != 0) {
		topo_record_free(*out);
		*out = NULL;
		return cause_fail(
			cause,
			"ConfigMap %s/%s" MUSTER_PLACEMENT_SUFFIX
			" is the placement of an earlier JobSet of this name, not of uid %s (muster-controller "
			"replaces it)",
			namespace, jobset, uid);
	}
	return 0;
}

/* The selector of completion indexes from..to of one Job from entry e
 * into `selector`: topo_record_find_range's 1 or 2, or 0 with the cause.
 * Under lock. */
static int lookup(const struct entry *e, const char *namespace, const char *jobset,
		  const char *replicated_job, uint32_t job_index, uint32_t from, uint32_t to, int job,
		  char *selector, size_t size, char **cause)
{
	const char *found = NULL;
	int rc = topo_record_find_range(e->record, replicated_job, job_index, from, to, &found);

	/* A Job pinned pod by pod: its pod template's share, or none. */
	if (job && rc == 2 &&
	    !topo_record_job_template(e->record, replicated_job, job_index, from, to, &found))
		found = "";
	if (rc)
		snprintf(selector, size, "%s", found);
	else if (job)
		cause_fail(cause,
			   "the placement of record of JobSet %s/%s has no Job %s job %u (the JobSet "
			   "changed after it was placed?)",
			   namespace, jobset, replicated_job, job_index);
	else
		cause_fail(
			cause,
			"the placement of record of JobSet %s/%s has no pod %s job %u index %u (the JobSet "
			"changed after it was placed?)",
			namespace, jobset, replicated_job, job_index, from);
	return rc;
}

/* Reads the record of namespace/jobset again while its entry is still fresh
 * (the entry is marked refreshing): on success the entry is replaced (which
 * clears the mark). On failure the entry stays marked, so the lookups of its
 * last seconds do not each try again: it is used until it expires, and the
 * first lookup after that reads the API and says why. */
static void refresh(struct record_cache *c, const char *namespace, const char *jobset, const char *uid)
{
	struct topo_record *record = NULL;
	char *cause = NULL;
	time_t sent;

	pthread_mutex_lock(&c->api);
	sent = now_s(c);
	if (!read_record(c, namespace, jobset, uid, 0, &record, &cause)) {
		pthread_mutex_lock(&c->lock);
		keep(c, namespace, jobset, record, sent);
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&c->api);
	free(cause);
}

static int resolve(struct record_cache *cache, const char *namespace, const char *jobset, const char *uid,
		   uint32_t attempt, const char *replicated_job, uint32_t job_index, uint32_t from,
		   uint32_t to, int job, char *selector, size_t size, char **cause)
{
	struct entry *e;
	struct topo_record *record = NULL;
	uint32_t placed;
	time_t sent;
	int rc;

	pthread_mutex_lock(&cache->lock);
	e = find(cache, namespace, jobset, uid, attempt);
	/* Near its expiry one lookup reads the record again, first, and is
	 * answered from what it read; the others go on with the fresh entry
	 * meanwhile and never wait for the API. */
	if (e && !e->refreshing && now_s(cache) - e->read_at >= RECORD_CACHE_TTL_S - RECORD_CACHE_AHEAD_S) {
		e->refreshing = 1;
		pthread_mutex_unlock(&cache->lock);
		refresh(cache, namespace, jobset, uid);
		pthread_mutex_lock(&cache->lock);
		e = find(cache, namespace, jobset, uid, attempt);
	}
	if (e) {
		rc = lookup(e, namespace, jobset, replicated_job, job_index, from, to, job, selector, size,
			    cause);
		pthread_mutex_unlock(&cache->lock);
		return rc;
	}
	pthread_mutex_unlock(&cache->lock);

	/* Missing or expired: one GET at a time, and a lookup that waited for
	 * another's uses what that one read. */
	pthread_mutex_lock(&cache->api);
	pthread_mutex_lock(&cache->lock);
	if ((e = find(cache, namespace, jobset, uid, attempt))) {
		rc = lookup(e, namespace, jobset, replicated_job, job_index, from, to, job, selector, size,
			    cause);
		pthread_mutex_unlock(&cache->lock);
		pthread_mutex_unlock(&cache->api);
		return rc;
	}
	pthread_mutex_unlock(&cache->lock);
	sent = now_s(cache);
	if (read_record(cache, namespace, jobset, uid, job, &record, cause)) {
		pthread_mutex_unlock(&cache->api);
		return -1;
	}
	/* Another attempt's placement never pins this pod: a restart is
	 * placed afresh (the record of attempt N+1 replaces that of N). */
	if (topo_record_has_attempt(record) && (placed = topo_record_attempt(record)) != attempt) {
		pthread_mutex_unlock(&cache->api);
		topo_record_free(record);
		return cause_fail(
			cause,
			"the placement of record of JobSet %s/%s is for restart attempt %u, this %s "
			"is of attempt %u (%s): %s",
			namespace, jobset, placed, job ? "Job" : "pod", attempt, JOBSET_LABEL_RESTART_ATTEMPT,
			placed > attempt ? (job ? "a Job of an earlier attempt is not made again"
						: "a pod of an earlier attempt is not made again")
			: job ? "muster-controller places the new attempt afresh; JobSet makes this "
				"Job again"
			      : "muster-controller places the new attempt afresh; the Job "
				"controller retries this pod");
	}
	pthread_mutex_lock(&cache->lock);
	e = keep(cache, namespace, jobset, record, sent);
	rc = lookup(e, namespace, jobset, replicated_job, job_index, from, to, job, selector, size, cause);
	pthread_mutex_unlock(&cache->lock);
	pthread_mutex_unlock(&cache->api);
	return rc;
}

int record_cache_selector(struct record_cache *cache, const char *namespace, const char *jobset,
			  const char *uid, uint32_t attempt, const char *replicated_job, uint32_t job_index,
			  uint32_t completion, char *selector, size_t size, char **cause)
{
	return resolve(cache, namespace, jobset, uid, attempt, replicated_job, job_index, completion,
		       completion, 0, selector, size, cause);
}

int record_cache_job_selector(struct record_cache *cache, const char *namespace, const char *jobset,
			      const char *uid, uint32_t attempt, const char *replicated_job,
			      uint32_t job_index, uint32_t completions, char *selector, size_t size,
			      char **cause)
{
	if (!completions)
		return cause_fail(cause, "the Job has no pods to place (completions 0)");
	return resolve(cache, namespace, jobset, uid, attempt, replicated_job, job_index, 0, completions - 1,
		       1, selector, size, cause);
}
