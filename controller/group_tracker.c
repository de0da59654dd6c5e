/*
 * group_tracker: started-pod accounting and the release decision. See
 * group_tracker.h for the contract and the STARTED definition.
 *
 * Records live in a chained hash table keyed by pod uid. A record is one
 * allocation: a 56-byte header followed by the uid and the pod name (the name
 * is for the push log), so a typical pod costs about 130 requested bytes plus
 * its bucket pointer. The counters (started, tracked) are kept up to date on
 * every change by comparing a record's contribution before and after, so an
 * event costs one hash lookup; only an attempt change or the end of a re-list
 * walks every record.
 */
#define _POSIX_C_SOURCE 200809L
#include "group_tracker.h"
#include "cause.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group_expect.h"

enum record_flag {
	REC_HAS_RV = 1u << 0,
	REC_BOUND = 1u << 1,
	REC_DELETING = 1u << 2,
	REC_GONE = 1u << 3, /* a DELETED was seen: tombstone */
	REC_SEEN = 1u << 4, /* confirmed by the re-list in progress */
	REC_STARTED = 1u << 5, /* counted in tracker->started */
	REC_TRACKED = 1u << 6, /* counted in tracker->tracked */
	REC_TIMED_OUT = 1u << 7, /* its barrier's timeout was counted */
	REC_TIMED_OUT_BEFORE = 1u << 8, /* the barrier timed out and was restarted in place */
};

struct record {
	struct record *next;
	uint64_t resource_version;
	uint64_t epoch; /* group_epoch(generation, attempt) of the pod */
	uint32_t hash;
	uint16_t flags;
	uint8_t barrier; /* enum group_barrier_state */
	uint8_t phase; /* enum group_pod_phase */
	uint8_t ip_family;
	uint8_t uid_len;
	uint8_t name_len;
	uint8_t ip[16];
	char text[]; /* uid, NUL, name, NUL */
};

struct group_tracker {
	char namespace[MODEL_LABEL_MAX + 1];
	char name[MODEL_LABEL_MAX + 1];
	char uid[MODEL_UID_MAX + 1];
	size_t job_count;
	char job_names[JOBSET_MODEL_RJOBS_MAX][MODEL_LABEL_MAX + 1];
	uint8_t job_targeted[JOBSET_MODEL_RJOBS_MAX];
	int has_config;
	uint64_t expected;
	uint64_t epoch; /* the current generation and attempt, group_epoch() */

	int listed; /* one re-list completed */
	int relisting;
	int release_known; /* set_released or set_none_released called */
	int has_released;
	uint64_t released;
	int pending;
	uint64_t pending_epoch;

	uint64_t started;
	uint64_t tracked;
	uint64_t timeouts; /* pods of the current attempt whose barrier timed out */
	uint64_t timeouts_untaken; /* every attempt's, since the last take_timeouts() */
	int has_starts;
	uint64_t first_start;
	uint64_t last_start;

	struct record **buckets;
	size_t bucket_count; /* a power of two */
	size_t records;
	size_t max_records;
	size_t bytes;
};

#define BUCKETS_MIN 64

/* FNV-1a: uids are random UUIDs, so a simple hash spreads them well. */
static uint32_t hash_uid(const char *uid, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)uid[i];
		h *= 16777619u;
	}
	return h;
}

static size_t record_size(size_t uid_len, size_t name_len)
{
	return sizeof(struct record) + uid_len + 1 + name_len + 1;
}

static const char *record_name(const struct record *r)
{
	return r->text + r->uid_len + 1;
}

static int record_counts_started(const struct group_tracker *t, const struct record *r)
{
	unsigned f = r->flags;

	if (f & (REC_GONE | REC_DELETING) || !(f & REC_BOUND) || r->epoch != t->epoch)
		return 0;
	if (r->phase == GROUP_PHASE_FAILED || r->barrier == GROUP_BARRIER_FAILED ||
	    r->barrier == GROUP_BARRIER_TIMED_OUT)
		return 0;
	return r->barrier == GROUP_BARRIER_RUNNING || r->barrier == GROUP_BARRIER_PASSED ||
	       r->phase == GROUP_PHASE_RUNNING || r->phase == GROUP_PHASE_SUCCEEDED;
}

static void uncount(struct group_tracker *t, struct record *r)
{
	if (r->flags & REC_STARTED)
		t->started--;
	if (r->flags & REC_TRACKED)
		t->tracked--;
	r->flags &= (uint16_t) ~(REC_STARTED | REC_TRACKED);
}

static void count(struct group_tracker *t, struct record *r, uint64_t seq, int stamp)
{
	/* A timeout is counted once per pod, whatever happens to it after:
	 * seen as the barrier's state, or, when kubelet restarted it in place
	 * (restartPolicy OnFailure), as its last state. */
	if ((r->barrier == GROUP_BARRIER_TIMED_OUT || (r->flags & REC_TIMED_OUT_BEFORE)) &&
	    !(r->flags & REC_TIMED_OUT) && r->epoch == t->epoch) {
		r->flags |= REC_TIMED_OUT;
		t->timeouts++;
		t->timeouts_untaken++;
	}
	if (!(r->flags & REC_GONE) && r->epoch == t->epoch) {
		r->flags |= REC_TRACKED;
		t->tracked++;
	}
	if (record_counts_started(t, r)) {
		r->flags |= REC_STARTED;
		t->started++;
		if (!stamp)
			return;
		if (!t->has_starts) {
			t->has_starts = 1;
			t->first_start = t->last_start = seq;
		} else {
			if (seq < t->first_start)
				t->first_start = seq;
			if (seq > t->last_start)
				t->last_start = seq;
		}
	}
}

static void free_record(struct group_tracker *t, struct record *r)
{
	uncount(t, r);
	t->bytes -= record_size(r->uid_len, r->name_len);
	t->records--;
	free(r);
}

/* Removes every record for which `drop` says so. */
static void sweep(struct group_tracker *t, int (*drop)(const struct group_tracker *, const struct record *))
{
	for (size_t b = 0; b < t->bucket_count; b++) {
		struct record **slot = &t->buckets[b];

		while (*slot) {
			struct record *r = *slot;

			if (drop(t, r)) {
				*slot = r->next;
				free_record(t, r);
			} else {
				slot = &r->next;
			}
		}
	}
}

/* Recomputes both counters from the records; with `stamp`, a started pod
 * moves the start marks to `seq`. */
static void recount(struct group_tracker *t, uint64_t seq, int stamp)
{
	for (size_t b = 0; b < t->bucket_count; b++)
		for (struct record *r = t->buckets[b]; r; r = r->next) {
			uncount(t, r);
			count(t, r, seq, stamp);
		}
}

static struct record **find(struct group_tracker *t, const char *uid, size_t uid_len, uint32_t hash)
{
	struct record **slot = &t->buckets[hash & (t->bucket_count - 1)];

	for (; *slot; slot = &(*slot)->next) {
		struct record *r = *slot;

		if (r->hash == hash && r->uid_len == uid_len && memcmp(r->text, uid, uid_len) == 0)
			break;
	}
	return slot;
}

/* Doubles the table when it holds more records than buckets. A failed
 * allocation keeps the old table: lookups stay correct, only longer. */
static void maybe_grow(struct group_tracker *t)
{
	size_t count_new = t->bucket_count * 2;
	struct record **buckets;

	if (t->records <= t->bucket_count || count_new > SIZE_MAX / sizeof(*buckets))
		return;
	buckets = calloc(count_new, sizeof(*buckets));
	if (!buckets)
		return;
	for (size_t b = 0; b < t->bucket_count; b++) {
		struct record *r = t->buckets[b];

		while (r) {
			struct record *next = r->next;
			struct record **head = &buckets[r->hash & (count_new - 1)];

			r->next = *head;
			*head = r;
			r = next;
		}
	}
	free(t->buckets);
	t->bytes += (count_new - t->bucket_count) * sizeof(*buckets);
	t->buckets = buckets;
	t->bucket_count = count_new;
}

static int copy_jobset(struct group_tracker *t, const struct jobset_model *jobset, char **cause)
{
	uint64_t expected = group_expected_pods(jobset);

	if (expected > GROUP_TRACKER_PODS_MAX || expected > t->max_records) {
		cause_err(cause, 0, "JobSet %s/%s expects %llu pods, more than the %zu this tracker holds",
			  jobset->namespace, jobset->name, (unsigned long long)expected,
			  t->max_records < GROUP_TRACKER_PODS_MAX ? t->max_records
								  : (size_t)GROUP_TRACKER_PODS_MAX);
		return -1;
	}
	t->expected = expected;
	t->has_config = jobset->has_config;
	return 0;
}

struct group_tracker *group_tracker_new(const struct jobset_model *jobset, size_t max_pods, char **cause)
{
	struct group_tracker *t;
	uint64_t expected = group_expected_pods(jobset);

	*cause = NULL;
	if (expected > GROUP_TRACKER_PODS_MAX) {
		cause_err(cause, 0, "JobSet %s/%s expects %llu pods, more than %u", jobset->namespace,
			  jobset->name, (unsigned long long)expected, GROUP_TRACKER_PODS_MAX);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto fail_memory;
	t->buckets = calloc(BUCKETS_MIN, sizeof(*t->buckets));
	if (!t->buckets)
		goto fail_memory;
	t->bucket_count = BUCKETS_MIN;
	t->bytes = sizeof(*t) + BUCKETS_MIN * sizeof(*t->buckets);
	if (max_pods == 0) {
		max_pods = (size_t)expected * 2 + 64;
		if (max_pods < 1024)
			max_pods = 1024;
	}
	t->max_records = max_pods;
	if (copy_jobset(t, jobset, cause))
		goto fail;
	memcpy(t->namespace, jobset->namespace, sizeof(t->namespace));
	memcpy(t->name, jobset->name, sizeof(t->name));
	memcpy(t->uid, jobset->uid, sizeof(t->uid));
	t->job_count = jobset->replicated_job_count;
	for (size_t i = 0; i < t->job_count && i < JOBSET_MODEL_RJOBS_MAX; i++) {
		memcpy(t->job_names[i], jobset->replicated_jobs[i].name, sizeof(t->job_names[i]));
		t->job_targeted[i] = jobset->replicated_jobs[i].targeted != 0;
	}
	t->epoch = group_epoch(jobset->generation, jobset->restarts);
	return t;
fail_memory:
	cause_err(cause, 0, "out of memory for the tracker of JobSet %s/%s", jobset->namespace, jobset->name);
fail:
	group_tracker_free(t);
	return NULL;
}

void group_tracker_free(struct group_tracker *tracker)
{
	if (!tracker)
		return;
	for (size_t b = 0; tracker->buckets && b < tracker->bucket_count; b++) {
		struct record *r = tracker->buckets[b];

		while (r) {
			struct record *next = r->next;

			free(r);
			r = next;
		}
	}
	free(tracker->buckets);
	free(tracker);
}

static int older_epoch(const struct group_tracker *t, const struct record *r)
{
	return r->epoch < t->epoch;
}

int group_tracker_set_jobset(struct group_tracker *tracker, const struct jobset_model *jobset, uint64_t seq,
			     char **cause)
{
	*cause = NULL;
	if (strcmp(tracker->uid, jobset->uid) != 0) {
		cause_err(cause, 0, "JobSet %s/%s has a new uid: it needs a new tracker", jobset->namespace,
			  jobset->name);
		return -1;
	}
	if (jobset->replicated_job_count != tracker->job_count)
		goto changed;
	for (size_t i = 0; i < tracker->job_count; i++)
		if (strcmp(tracker->job_names[i], jobset->replicated_jobs[i].name) != 0 ||
		    tracker->job_targeted[i] != (jobset->replicated_jobs[i].targeted != 0))
			goto changed;
	if (copy_jobset(tracker, jobset, cause))
		return -1;
	if (group_epoch(jobset->generation, jobset->restarts) > tracker->epoch) {
		tracker->epoch = group_epoch(jobset->generation, jobset->restarts);
		tracker->has_starts = 0;
		tracker->first_start = tracker->last_start = 0;
		tracker->timeouts = 0;
		/* A release in flight for an older attempt is harmless once written
		 * (a barrier ignores a release below its own attempt), and it must
		 * not hold back the new attempt's decision. */
		tracker->pending = 0;
		sweep(tracker, older_epoch);
		/* Pods of the new attempt seen before this call started no later
		 * than now: stamping them at `seq` keeps the marks a bound. */
		recount(tracker, seq, 1);
	}
	return 0;
changed:
	cause_err(cause, 0, "replicated jobs or targets of JobSet %s/%s changed: it needs a new tracker",
		  jobset->namespace, jobset->name);
	return -1;
}

void group_tracker_set_released(struct group_tracker *tracker, uint64_t epoch)
{
	tracker->release_known = 1;
	if (!tracker->has_released || epoch > tracker->released) {
		tracker->has_released = 1;
		tracker->released = epoch;
	}
	if (tracker->pending && tracker->pending_epoch <= tracker->released)
		tracker->pending = 0;
}

void group_tracker_set_none_released(struct group_tracker *tracker)
{
	tracker->release_known = 1;
}

void group_tracker_release_done(struct group_tracker *tracker, uint64_t epoch)
{
	group_tracker_set_released(tracker, epoch);
}

void group_tracker_release_failed(struct group_tracker *tracker, uint64_t epoch)
{
	if (tracker->pending && tracker->pending_epoch == epoch)
		tracker->pending = 0;
}

/* Index of the pod's replicated job if it belongs to this JobSet (its
 * namespace, name and uid: a JobSet deleted and made again under the same
 * name has a new uid, and the old one's pods, still being removed, must not
 * count) and its job is targeted, else -1. A pod without the uid label
 * (JobSet before v0.10 does not set it) is matched by name alone, as it
 * cannot be told apart: refusing it would make its group never release. */
static int targeted_job(const struct group_tracker *t, const struct group_pod *pod)
{
	if (strcmp(pod->namespace, t->namespace) != 0 || strcmp(pod->jobset_name, t->name) != 0 ||
	    (pod->jobset_uid[0] && strcmp(pod->jobset_uid, t->uid) != 0))
		return -1;
	for (size_t i = 0; i < t->job_count; i++)
		if (strcmp(pod->replicated_job, t->job_names[i]) == 0)
			return t->job_targeted[i] ? (int)i : -1;
	return -1;
}

static void fill_record(struct record *r, const struct group_pod *pod)
{
	uint16_t keep = r->flags & (REC_SEEN | REC_STARTED | REC_TRACKED | REC_TIMED_OUT);

	r->flags = keep;
	if (pod->has_resource_version)
		r->flags |= REC_HAS_RV;
	if (pod->bound)
		r->flags |= REC_BOUND;
	if (pod->deleting)
		r->flags |= REC_DELETING;
	if (pod->barrier_timed_out_before)
		r->flags |= REC_TIMED_OUT_BEFORE;
	r->resource_version = pod->resource_version;
	r->epoch = group_epoch(pod->generation, pod->attempt);
	r->barrier = (uint8_t)pod->barrier;
	r->phase = (uint8_t)pod->phase;
	r->ip_family = (uint8_t)pod->ip_family;
	memcpy(r->ip, pod->ip, sizeof(r->ip));
}

/* An event is stale when both it and the record carry a numeric
 * resourceVersion and the event's is not newer. Without both, the event
 * wins: the latest event received is the best knowledge there is. */
static int is_stale(const struct record *r, const struct group_pod *pod)
{
	return (r->flags & REC_HAS_RV) && pod->has_resource_version &&
	       pod->resource_version <= r->resource_version;
}

enum group_apply_result group_tracker_apply_pod(struct group_tracker *tracker, const struct group_pod *pod,
						enum group_event event, uint64_t seq)
{
	size_t uid_len = strnlen(pod->uid, MODEL_UID_MAX + 1);
	size_t name_len = strnlen(pod->name, MODEL_OBJECT_NAME_MAX + 1);
	int eligible = targeted_job(tracker, pod) >= 0 && pod->has_attempt &&
		       group_epoch(pod->generation, pod->attempt) >= tracker->epoch;
	uint32_t hash;
	struct record **slot, *r;

	if (uid_len == 0 || uid_len > MODEL_UID_MAX || name_len > MODEL_OBJECT_NAME_MAX)
		return GROUP_APPLY_IGNORED;
	hash = hash_uid(pod->uid, uid_len);
	slot = find(tracker, pod->uid, uid_len, hash);
	r = *slot;
	if (r) {
		if (tracker->relisting)
			r->flags |= REC_SEEN;
		if (r->flags & REC_GONE)
			return GROUP_APPLY_UNCHANGED;
		if (event == GROUP_EVENT_DELETED) {
			/* Final whatever its resourceVersion or labels: the uid is gone
			 * for good, and the tombstone keeps older events out. */
			uncount(tracker, r);
			r->flags |= REC_GONE;
			count(tracker, r, seq, 1);
			return GROUP_APPLY_CHANGED;
		}
		if (is_stale(r, pod))
			return GROUP_APPLY_UNCHANGED;
		if (!eligible) {
			/* The labels changed under it (a hand edit): it no longer
			 * belongs to the group. */
			*slot = r->next;
			free_record(tracker, r);
			return GROUP_APPLY_IGNORED;
		}
		uncount(tracker, r);
		fill_record(r, pod);
		count(tracker, r, seq, 1);
		return GROUP_APPLY_CHANGED;
	}
	if (!eligible)
		return GROUP_APPLY_IGNORED;
	if (tracker->records >= tracker->max_records)
		return GROUP_APPLY_FULL;
	r = calloc(1, record_size(uid_len, name_len));
	if (!r)
		return GROUP_APPLY_FULL;
	r->hash = hash;
	r->uid_len = (uint8_t)uid_len;
	r->name_len = (uint8_t)name_len;
	memcpy(r->text, pod->uid, uid_len);
	memcpy(r->text + uid_len + 1, pod->name, name_len);
	fill_record(r, pod);
	if (tracker->relisting)
		r->flags |= REC_SEEN;
	if (event == GROUP_EVENT_DELETED)
		r->flags |= REC_GONE;
	r->next = NULL;
	*slot = r;
	tracker->records++;
	tracker->bytes += record_size(uid_len, name_len);
	count(tracker, r, seq, 1);
	maybe_grow(tracker);
	return GROUP_APPLY_CHANGED;
}

void group_tracker_relist_begin(struct group_tracker *tracker)
{
	for (size_t b = 0; b < tracker->bucket_count; b++)
		for (struct record *r = tracker->buckets[b]; r; r = r->next)
			r->flags &= (uint16_t)~REC_SEEN;
	tracker->relisting = 1;
}

static int not_seen(const struct group_tracker *t, const struct record *r)
{
	(void)t;
	return !(r->flags & REC_SEEN);
}

void group_tracker_relist_end(struct group_tracker *tracker)
{
	if (!tracker->relisting)
		return;
	sweep(tracker, not_seen);
	tracker->relisting = 0;
	tracker->listed = 1;
	recount(tracker, 0, 0);
}

void group_tracker_peek(const struct group_tracker *tracker, struct group_decision *decision)
{
	const struct group_tracker *t = tracker;

	memset(decision, 0, sizeof(*decision));
	decision->attempt = group_epoch_attempt(t->epoch);
	decision->generation = group_epoch_generation(t->epoch);
	decision->epoch = t->epoch;
	decision->expected = t->expected;
	decision->started = t->started;
	decision->tracked = t->tracked;
	decision->has_starts = t->has_starts;
	decision->first_start = t->first_start;
	decision->last_start = t->last_start;
	decision->timeouts = t->timeouts;
	if (!t->has_config || t->expected == 0)
		decision->action = GROUP_ACTION_IDLE;
	else if (!t->listed || t->relisting || !t->release_known)
		decision->action = GROUP_ACTION_UNKNOWN;
	else if (t->has_released && t->released >= t->epoch)
		decision->action = GROUP_ACTION_RELEASED;
	else if (t->pending && t->pending_epoch == t->epoch)
		decision->action = GROUP_ACTION_PENDING;
	else if (t->started > t->expected)
		decision->action = GROUP_ACTION_ANOMALY;
	else if (t->started < t->expected)
		decision->action = GROUP_ACTION_WAIT;
	else
		decision->action = GROUP_ACTION_RELEASE;
}

void group_tracker_decide(struct group_tracker *tracker, struct group_decision *decision)
{
	group_tracker_peek(tracker, decision);
	if (decision->action == GROUP_ACTION_RELEASE) {
		tracker->pending = 1;
		tracker->pending_epoch = tracker->epoch;
	}
}

int group_tracker_foreach_started(const struct group_tracker *tracker,
				  int (*fn)(const struct group_started_pod *pod, void *context),
				  void *context)
{
	for (size_t b = 0; b < tracker->bucket_count; b++)
		for (const struct record *r = tracker->buckets[b]; r; r = r->next) {
			struct group_started_pod pod;
			int rc;

			if (!(r->flags & REC_STARTED))
				continue;
			pod.name = record_name(r);
			pod.ip_family = r->ip_family;
			pod.ip = r->ip;
			pod.at_barrier = r->barrier == GROUP_BARRIER_RUNNING &&
					 r->phase != GROUP_PHASE_RUNNING && r->phase != GROUP_PHASE_SUCCEEDED;
			rc = fn(&pod, context);
			if (rc)
				return rc;
		}
	return 0;
}

uint64_t group_tracker_take_timeouts(struct group_tracker *tracker)
{
	uint64_t taken = tracker->timeouts_untaken;

	tracker->timeouts_untaken = 0;
	return taken;
}

size_t group_tracker_memory(const struct group_tracker *tracker)
{
	return tracker->bytes;
}

size_t group_tracker_records(const struct group_tracker *tracker)
{
	return tracker->records;
}

static const char *const action_names[] = {
	[GROUP_ACTION_IDLE] = "idle",	    [GROUP_ACTION_UNKNOWN] = "unknown",
	[GROUP_ACTION_WAIT] = "wait",	    [GROUP_ACTION_RELEASE] = "release",
	[GROUP_ACTION_PENDING] = "pending", [GROUP_ACTION_RELEASED] = "released",
	[GROUP_ACTION_ANOMALY] = "anomaly",
};

const char *group_action_name(enum group_action action)
{
	if ((unsigned)action >= sizeof(action_names) / sizeof(action_names[0]))
		return "unknown-action";
	return action_names[action];
}
