/*
 * record_cache: placement records read from the API (record_cache.h).
 */
#define _GNU_SOURCE /* malloc_trim */
#include "record_cache.h"

#include <cjson/cJSON.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cause.h"
#include "kjson.h"
#include "kube_error.h"
#include "kube_path.h"
#include "muster_api.h"
#include "topo_record.h"
#include "topo_record_map.h"

struct entry {
	char namespace[KUBE_NAMESPACE_MAX + 1];
	char jobset[KUBE_NAME_MAX + 1];
	struct topo_record *record; /* NULL: empty, or loading */
	size_t bytes; /* topo_record_bytes of record */
	time_t read_at; /* when the GET that read it was sent */
	int refreshing; /* a lookup is reading it again ahead of its expiry */
	int loading; /* a lookup is reading it, none is kept yet: the others wait */
};

struct record_cache {
	pthread_mutex_t lock; /* everything below but `large` */
	pthread_cond_t changed; /* a read ended or a reader came back (monotonic clock) */
	pthread_mutex_t large; /* held while a large record is parsed */
	struct kube_client *readers[RECORD_CACHE_READERS_MAX];
	int busy[RECORD_CACHE_READERS_MAX];
	size_t reader_count;
	unsigned request_timeout_ms, deadline_ms;
	size_t bytes, bytes_max;
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

static uint64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
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

int record_cache_new(const struct record_cache_options *options, struct record_cache **out, char **cause)
{
	struct record_cache *c;
	pthread_condattr_t attr;

	*out = NULL;
	if (options->reader_count > RECORD_CACHE_READERS_MAX)
		return cause_fail(cause, "at most %d readers of placement records", RECORD_CACHE_READERS_MAX);
	if (!(c = calloc(1, sizeof(*c))))
		return cause_fail(cause, "out of memory");
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->large, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&c->changed, &attr);
	pthread_condattr_destroy(&attr);
	for (size_t i = 0; i < options->reader_count; i++)
		c->readers[i] = options->readers[i];
	c->reader_count = options->reader_count;
	c->deadline_ms = options->deadline_ms ? options->deadline_ms : RECORD_CACHE_DEADLINE_MS;
	c->request_timeout_ms = options->request_timeout_ms;
	c->bytes_max = options->bytes_max ? options->bytes_max : RECORD_CACHE_BYTES_MAX;
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
	pthread_mutex_destroy(&cache->large);
	pthread_cond_destroy(&cache->changed);
	free(cache);
}

void record_cache_usage(struct record_cache *cache, size_t *entries, size_t *bytes)
{
	size_t n = 0;

	pthread_mutex_lock(&cache->lock);
	for (size_t i = 0; i < RECORD_CACHE_ENTRIES; i++)
		n += cache->entries[i].record != NULL;
	*entries = n;
	*bytes = cache->bytes;
	pthread_mutex_unlock(&cache->lock);
}

/* ---- entries (all under c->lock) ---- */

static int same_key(const struct entry *e, const char *namespace, const char *jobset)
{
	return strcmp(e->namespace, namespace) == 0 && strcmp(e->jobset, jobset) == 0;
}

static void drop(struct record_cache *c, struct entry *e)
{
	c->bytes -= e->bytes;
	topo_record_free(e->record);
	e->record = NULL;
	e->bytes = 0;
	e->refreshing = 0;
}

/* Frees every entry past its age: an expired record is never used again,
 * so it holds no memory either. */
static void sweep(struct record_cache *c)
{
	time_t now = now_s(c);

	for (size_t i = 0; i < RECORD_CACHE_ENTRIES; i++)
		if (c->entries[i].record && now - c->entries[i].read_at >= RECORD_CACHE_TTL_S)
			drop(c, &c->entries[i]);
}

/* The fresh entry for namespace/jobset of this uid and restart attempt, or
 * NULL. */
static struct entry *find(struct record_cache *c, const char *namespace, const char *jobset, const char *uid,
			  uint32_t attempt)
{
	time_t now = now_s(c);

	for (size_t i = 0; i < RECORD_CACHE_ENTRIES; i++) {
		struct entry *e = &c->entries[i];

		if (e->record && same_key(e, namespace, jobset) &&
		    strcmp(topo_record_uid(e->record), uid) == 0 &&
		    (!topo_record_has_attempt(e->record) || topo_record_attempt(e->record) == attempt) &&
		    now - e->read_at < RECORD_CACHE_TTL_S)
			return e;
	}
	return NULL;
}

static int loading(const struct record_cache *c, const char *namespace, const char *jobset)
{
	for (size_t i = 0; i < RECORD_CACHE_ENTRIES; i++)
		if (c->entries[i].loading && same_key(&c->entries[i], namespace, jobset))
			return 1;
	return 0;
}

/* The slot namespace/jobset is read into, marked loading: its own entry
 * (its record dropped: it did not serve), else an empty one, else the
 * oldest that is not loading. */
static struct entry *claim(struct record_cache *c, const char *namespace, const char *jobset)
{
	struct entry *slot = NULL;

	for (size_t i = 0; i < RECORD_CACHE_ENTRIES && !slot; i++)
		if (c->entries[i].record && same_key(&c->entries[i], namespace, jobset))
			slot = &c->entries[i];
	for (size_t i = 0; i < RECORD_CACHE_ENTRIES && !slot; i++)
		if (!c->entries[i].record && !c->entries[i].loading)
			slot = &c->entries[i];
	if (!slot) { /* full: the oldest goes (fewer are loading than there are entries) */
		for (size_t i = 0; i < RECORD_CACHE_ENTRIES; i++)
			if (!c->entries[i].loading && (!slot || c->entries[i].read_at < slot->read_at))
				slot = &c->entries[i];
	}
	drop(c, slot);
	snprintf(slot->namespace, sizeof(slot->namespace), "%s", namespace);
	snprintf(slot->jobset, sizeof(slot->jobset), "%s", jobset);
	slot->loading = 1;
	return slot;
}

/* Puts a record read just now into slot e; the oldest others go until all
 * fit in bytes_max. A record larger than bytes_max alone stays only until
 * the caller has used it (evict_alone). */
static void keep(struct record_cache *c, struct entry *e, struct topo_record *record, time_t read_at)
{
	drop(c, e);
	e->record = record;
	e->bytes = topo_record_bytes(record);
	e->read_at = read_at;
	e->loading = 0;
	c->bytes += e->bytes;
	while (c->bytes > c->bytes_max) {
		struct entry *oldest = NULL;

		for (size_t i = 0; i < RECORD_CACHE_ENTRIES; i++) {
			struct entry *o = &c->entries[i];

			if (o != e && o->record && (!oldest || o->read_at < oldest->read_at))
				oldest = o;
		}
		if (!oldest)
			break;
		drop(c, oldest);
	}
}

/* ---- readers ---- */

/* A free reader's index, waiting for one until `until_ms` (monotonic);
 * -1 when none came back in time. */
static int take_reader(struct record_cache *c, uint64_t until_ms)
{
	for (;;) {
		struct timespec ts;

		for (size_t i = 0; i < c->reader_count; i++)
			if (!c->busy[i]) {
				c->busy[i] = 1;
				return (int)i;
			}
		if (monotonic_ms() >= until_ms)
			return -1;
		ts.tv_sec = (time_t)(until_ms / 1000u);
		ts.tv_nsec = (long)(until_ms % 1000u) * 1000000L;
		pthread_cond_timedwait(&c->changed, &c->lock, &ts);
	}
}

static void put_reader(struct record_cache *c, int reader)
{
	c->busy[reader] = 0;
	pthread_cond_broadcast(&c->changed);
}

/* Waits for a change until `until_ms`; 0, or -1 once it has passed. */
static int wait_change(struct record_cache *c, uint64_t until_ms)
{
	struct timespec ts;

	if (monotonic_ms() >= until_ms)
		return -1;
	ts.tv_sec = (time_t)(until_ms / 1000u);
	ts.tv_nsec = (long)(until_ms % 1000u) * 1000000L;
	pthread_cond_timedwait(&c->changed, &c->lock, &ts);
	return 0;
}

/* ---- reading (no lock held) ---- */

/* Parses the record's text; a large one waits for the other large ones
 * and gives its parse memory back. */
static int parse(struct record_cache *c, const char *text, const char *uid, struct topo_record **out,
		 int *earlier, char **cause)
{
	size_t len = strlen(text);
	int large = len > RECORD_CACHE_LARGE, rc;

	if (large)
		pthread_mutex_lock(&c->large);
	rc = topo_record_map_parse(text, len, uid, out, earlier, cause);
	if (large) {
		malloc_trim(0);
		pthread_mutex_unlock(&c->large);
	}
	return rc;
}

static void earlier_jobsets(const char *namespace, const char *name, const char *uid, char **cause)
{
	cause_fail(cause,
		   "ConfigMap %s/%s is the placement of an earlier JobSet of this name, not of uid %s "
		   "(muster-controller replaces it)",
		   namespace, name, uid);
}

/* GETs, checks and parses the record of namespace/jobset with one reader;
 * -1 with the cause naming the ConfigMap. */
static int read_record(struct record_cache *c, struct kube_client *reader, const char *namespace,
		       const char *jobset, const char *uid, int job, struct topo_record **out, char **cause)
{
	char name[KUBE_NAME_MAX + sizeof(MUSTER_PLACEMENT_SUFFIX)], path[KUBE_PATH_MAX], *inner = NULL;
	cJSON *configmap = NULL;
	const char *text = NULL;
	int err, rc = -1, earlier = 0;

	*out = NULL;
	snprintf(name, sizeof(name), "%s" MUSTER_PLACEMENT_SUFFIX, jobset);
	if (kube_path(path, sizeof(path), &KUBE_CONFIGMAPS, namespace, name, &inner)) {
		cause_fail(cause, "cannot read the placement of record of JobSet %s: %s", jobset, inner);
		goto out;
	}
	err = kube_get(reader, path, &configmap, &inner);
	if (err == MUSTER_ENOTFOUND) {
		cause_fail(
			cause,
			"no placement of record yet: ConfigMap %s/%s is missing (muster-controller writes it "
			"when JobSet %s is placed; %s)",
			namespace, name, jobset,
			job ? "JobSet makes this Job once it is placed: until then the JobSet waits "
			      "suspended, and kubectl describe jobset says why"
			    : "the Job controller retries this pod");
		goto out;
	}
	if (err) {
		cause_fail(cause, "cannot read ConfigMap %s/%s: %s", namespace, name,
			   err == MUSTER_ETOOBIG ? "larger than any placement of record"
			   : inner		 ? inner
						 : muster_err_message(err));
		goto out;
	}
	/* A ConfigMap of the name that JobSet does not control is not muster's
	 * record, whatever it holds: refused unread, and not said what it holds. */
	switch (topo_record_map_whose(configmap, jobset, uid, 1, &text)) {
	case TOPO_RECORD_OURS:
		break;
	case TOPO_RECORD_EARLIER:
		earlier_jobsets(namespace, name, uid, cause);
		goto out;
	default:
		cause_fail(
			cause,
			"ConfigMap %s/%s is not the placement of record of JobSet %s of uid %s (that JobSet "
			"does not control it; muster-controller writes the record when the JobSet is "
			"placed, the Job controller retries this %s)",
			namespace, name, jobset, uid, job ? "Job" : "pod");
		goto out;
	}
	if (!text) {
		cause_fail(cause, "ConfigMap %s/%s has no data." MUSTER_PLACEMENT_KEY, namespace, name);
		goto out;
	}
	free(inner);
	inner = NULL;
	if (parse(c, text, uid, out, &earlier, &inner)) {
		if (earlier)
			earlier_jobsets(namespace, name, uid, cause);
		else
			cause_fail(cause, "ConfigMap %s/%s: %s", namespace, name,
				   inner ? inner : "out of memory");
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(configmap);
	free(inner);
	return rc;
}

/* ---- lookups ---- */

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

/* Reads the record of e's JobSet again while e is still fresh, with
 * `reader` (taken; given back here). On success e is replaced (which clears
 * the mark); on failure it stays marked, so the lookups of its last seconds
 * do not each try again: it is used until it expires, and the first lookup
 * after that reads the API and says why. Called and returns under lock. */
static void refresh(struct record_cache *c, struct entry *e, const char *uid, int reader)
{
	struct topo_record *record = NULL;
	char namespace[sizeof(e->namespace)], jobset[sizeof(e->jobset)], *cause = NULL;
	time_t sent = now_s(c);
	int rc;

	memcpy(namespace, e->namespace, sizeof(namespace));
	memcpy(jobset, e->jobset, sizeof(jobset));
	pthread_mutex_unlock(&c->lock);
	rc = read_record(c, c->readers[reader], namespace, jobset, uid, 0, &record, &cause);
	pthread_mutex_lock(&c->lock);
	put_reader(c, reader);
	/* The entry is still this JobSet's unless it expired and was reused. */
	if (!rc && e->record && same_key(e, namespace, jobset))
		keep(c, e, record, sent);
	else
		topo_record_free(record);
	free(cause);
}

static int refused_in_time(struct record_cache *c, const char *namespace, const char *jobset, int job,
			   const char *what, char **cause)
{
	return cause_fail(
		cause,
		"muster-webhook could not read the placement of record of JobSet %s/%s within %u ms "
		"(%s; the apiserver is slow or many JobSets' records are being read): %s",
		namespace, jobset, c->deadline_ms, what,
		job ? "JobSet makes this Job again" : "the Job controller retries this pod");
}

static int resolve(struct record_cache *c, const char *namespace, const char *jobset, const char *uid,
		   uint32_t attempt, const char *replicated_job, uint32_t job_index, uint32_t from,
		   uint32_t to, int job, char *selector, size_t size, char **cause)
{
	uint64_t start = monotonic_ms(), deadline = start + c->deadline_ms;
	uint64_t reader_until = deadline > c->request_timeout_ms ? deadline - c->request_timeout_ms : 0;
	/* A lookup waits for others' reads this long at most: it holds one of
	 * the webhook's few threads meanwhile, which other JobSets' pods need. */
	uint64_t wait_until =
		start + RECORD_CACHE_WAIT_MS < deadline ? start + RECORD_CACHE_WAIT_MS : deadline;
	struct topo_record *record = NULL;
	struct entry *e, *slot;
	uint32_t placed;
	time_t sent;
	int reader, rc;

	if (!c->reader_count)
		return cause_fail(cause,
				  "muster-webhook has no API access (--kubeconfig or in-cluster) to read "
				  "the placement of record");
	pthread_mutex_lock(&c->lock);
	sweep(c);
	for (;;) {
		if ((e = find(c, namespace, jobset, uid, attempt))) {
			/* Near its expiry one lookup reads the record again, first,
			 * when a reader is free, and is answered from what it read;
			 * the others go on with the fresh entry meanwhile. */
			if (!e->refreshing &&
			    now_s(c) - e->read_at >= RECORD_CACHE_TTL_S - RECORD_CACHE_AHEAD_S &&
			    (reader = take_reader(c, 0)) >= 0) {
				e->refreshing = 1;
				refresh(c, e, uid, reader);
				continue;
			}
			rc = lookup(e, namespace, jobset, replicated_job, job_index, from, to, job, selector,
				    size, cause);
			pthread_mutex_unlock(&c->lock);
			return rc;
		}
		/* Another lookup is reading it: wait for what it reads. */
		if (loading(c, namespace, jobset)) {
			if (wait_change(c, wait_until)) {
				pthread_mutex_unlock(&c->lock);
				return refused_in_time(c, namespace, jobset, job,
						       "its read did not end in time", cause);
			}
			continue;
		}
		/* A GET begun later could end past the deadline. */
		if (monotonic_ms() > reader_until ||
		    (reader = take_reader(c, reader_until < wait_until ? reader_until : wait_until)) < 0) {
			pthread_mutex_unlock(&c->lock);
			return refused_in_time(c, namespace, jobset, job, "every reader was busy", cause);
		}
		/* While it waited for a reader, another may have read it. */
		if (find(c, namespace, jobset, uid, attempt) || loading(c, namespace, jobset)) {
			put_reader(c, reader);
			continue;
		}
		break;
	}
	slot = claim(c, namespace, jobset);
	pthread_mutex_unlock(&c->lock);
	sent = now_s(c);
	rc = read_record(c, c->readers[reader], namespace, jobset, uid, job, &record, cause);
	pthread_mutex_lock(&c->lock);
	put_reader(c, reader);
	slot->loading = 0;
	if (rc)
		goto out;
	/* Another attempt's placement never pins this pod: a restart is
	 * placed afresh (the record of attempt N+1 replaces that of N). */
	if (topo_record_has_attempt(record) && (placed = topo_record_attempt(record)) != attempt) {
		topo_record_free(record);
		rc = cause_fail(cause,
				"the placement of record of JobSet %s/%s is for restart attempt %u, this %s "
				"is of attempt %u (%s): %s",
				namespace, jobset, placed, job ? "Job" : "pod", attempt,
				JOBSET_LABEL_RESTART_ATTEMPT,
				placed > attempt ? (job ? "a Job of an earlier attempt is not made again"
							: "a pod of an earlier attempt is not made again")
				: job ? "muster-controller places the new attempt afresh; JobSet makes this "
					"Job again"
				      : "muster-controller places the new attempt afresh; the Job "
					"controller retries this pod");
		goto out;
	}
	keep(c, slot, record, sent);
	rc = lookup(slot, namespace, jobset, replicated_job, job_index, from, to, job, selector, size, cause);
	if (slot->bytes > c->bytes_max) /* used once, never kept */
		drop(c, slot);
out:
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->lock);
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
