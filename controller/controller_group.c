/*
 * controller_group: the group-start loop (see controller_group.h for what it
 * does and the annotations it reads). This file is the I/O edge around the
 * pure core: watches in, tracker decisions, ConfigMap write and push out.
 */
#define _POSIX_C_SOURCE 200809L

#include "controller_group.h"
#include "controller_group_int.h"
#include "cause.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "group_decode.h"
#include "group_tracker.h"
#include "kjson.h"
#include "kube_client.h"
#include "kube_curl.h"
#include "kube_informer.h"
#include "kube_path.h"
#include "name_table.h"
#include "mlog.h"
#include "muster_lock.h"
#include "push_fanout.h"
#include "release_record.h"
#include "side_queue.h"
#include "watch_hub.h"
#include "release_line.h"

#define LIST_PAGE_SIZE 500u

static void api_free(struct api *api)
{
	kube_client_free(api->client);
	api->client = NULL;
}

static int api_new(const struct kube_config *cfg, const struct controller_group_options *options,
		   struct api *api, char **cause)
{
	int err;

	if (options->transport)
		return kube_client_new(cfg, options->transport, options->transport_ctx, NULL, &api->client,
				       cause);
	err = kube_client_open(cfg, &api->client, cause);
	if (err)
		api_free(api);
	return err;
}

/* ---- the registry (a name_table, under the lock) ---- */

struct entry *group_entry_find(struct controller_group *group, const char *namespace, const char *name)
{
	return (struct entry *)name_table_find(&group->registry, namespace, name);
}

/* Adds e (its namespace and name set); 0, or -1 when there is no table. */
static int entry_insert(struct controller_group *group, struct entry *e)
{
	e->node.namespace = e->namespace;
	e->node.name = e->name;
	return name_table_insert(&group->registry, &e->node);
}

static void entry_remove(struct controller_group *group, struct entry *victim)
{
	group_read_queue_remove(group, victim);
	name_table_remove(&group->registry, &victim->node);
	group_tracker_free(victim->tracker);
	free(victim);
}

struct each_context {
	struct controller_group *group;
	void (*fn)(struct controller_group *, struct entry *);
};

static void each_entry(void *arg, struct name_node *node)
{
	struct each_context *context = arg;

	context->fn(context->group, (struct entry *)node);
}

/* Calls fn for every entry; fn may remove the entry it is given. */
static void registry_each(struct controller_group *group,
			  void (*fn)(struct controller_group *, struct entry *))
{
	struct each_context context = { group, fn };

	name_table_each(&group->registry, each_entry, &context);
}

/* A job for the JobSet of e (its identity copied), or NULL (counted as
 * dropped) when memory ran out. */
static struct side_job *job_new(struct controller_group *group, const struct entry *e,
				enum side_job_kind kind)
{
	return side_job_new(&group->side, e->namespace, e->name, e->uid, kind);
}

/* Queues an Event on the JobSet (sent by the side thread). */
static void event_later(struct controller_group *group, const struct entry *e, const char *reason,
			int warning, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void event_later(struct controller_group *group, const struct entry *e, const char *reason,
			int warning, const char *fmt, ...)
{
	struct side_job *job = job_new(group, e, SIDE_JOB_EVENT);
	va_list ap;

	if (!job)
		return;
	job->reason = reason;
	job->warning = warning;
	va_start(ap, fmt);
	vsnprintf(job->message, sizeof(job->message), fmt, ap);
	va_end(ap);
	side_queue_put(&group->side, job);
}

/* A ConfigMap of that name that is not ours: never written, reported once
 * with a Warning Event, and looked at again every CONFLICT_RETRY_MS (it may
 * be deleted by whoever made it). */
#define CONFLICT_RETRY_MS 30000u

static void report_conflict(struct controller_group *group, struct entry *e)
{
	stat_add(&group->stats.configmap_conflicts, 1);
	e->retry_at_ms = now_ms(group) + CONFLICT_RETRY_MS;
	if (e->conflict_reported)
		return;
	e->conflict_reported = 1;
	mlog(MLOG_WARN, "configmap-conflict",
	     "jobset=%s/%s configmap=%s" MUSTER_CONFIGMAP_SUFFIX
	     " reason=\"exists and is not owned by this JobSet; left alone\"",
	     e->namespace, e->name, e->name);
	event_later(group, e, "ConfigMapConflict", 1,
		    "ConfigMap %s" MUSTER_CONFIGMAP_SUFFIX
		    " exists and is not owned by this JobSet. muster does not overwrite it, so the group "
		    "cannot be released until that ConfigMap is deleted.",
		    e->name);
}

/* The released epoch read back from the ConfigMap, into the tracker. A
 * ConfigMap that is not this JobSet's releases nothing. Under the lock. */
void group_released_read(struct controller_group *group, struct entry *e,
			 const struct release_record_read *read)
{
	if (read->found && read->owner == RELEASE_OWNER_PREDECESSOR)
		mlog(MLOG_INFO, "configmap-stale",
		     "jobset=%s/%s reason=\"owned by an earlier JobSet of this name\"", e->namespace,
		     e->name);
	if (read->found && read->owner == RELEASE_OWNER_FOREIGN)
		report_conflict(group, e);
	if (!read->has_release) {
		group_tracker_set_none_released(e->tracker);
		return;
	}
	group_tracker_set_released(e->tracker, read->epoch);
	/* A controller that stopped between the write and the push left
	 * barriers to the volume sync (up to 90 s): push again to those still
	 * waiting, once the pods are listed. */
	e->repush = 1;
	mlog(MLOG_INFO, "released-read", "jobset=%s/%s attempt=%lu generation=%lu", e->namespace, e->name,
	     (unsigned long)group_epoch_attempt(read->epoch),
	     (unsigned long)group_epoch_generation(read->epoch));
}

/* A pod of the JobSet without the label jobset.sigs.k8s.io/jobset-uid
 * (JobSet before v0.10 does not set it): it is matched by the JobSet's name,
 * so the pods of a deleted JobSet of the same name could count too. Said
 * once per JobSet. */
void group_note_pod(struct entry *e, const struct group_pod *pod)
{
	if (pod->jobset_uid[0] || e->uid_missing_reported)
		return;
	e->uid_missing_reported = 1;
	mlog(MLOG_WARN, "pod-without-jobset-uid",
	     "jobset=%s/%s pod=%s reason=\"no label " JOBSET_LABEL_UID " (JobSet before v0.10?): pods are "
	     "matched by the JobSet's name, and those of a deleted JobSet of the same name can count\"",
	     e->namespace, e->name, pod->name);
}

/* ---- the release ---- */

struct collect {
	struct push_target *targets;
	size_t count, capacity;
	size_t passed; /* not at the barrier (any more): nothing to push */
	uint16_t port;
};

static int collect_started(const struct group_started_pod *pod, void *arg)
{
	struct collect *collect = arg;
	struct push_target *target;

	/* A pod past its barrier (released by the volume, or its main
	 * container already running) has no listener left: a push would only
	 * be refused. It is counted as what it is. */
	if (!pod->at_barrier) {
		collect->passed++;
		return 0;
	}
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

/* Gives a push job the token and the addresses of the started pods whose
 * barrier still waits (at most `started`), and counts the others. */
static void job_targets(struct controller_group *group, const struct entry *e, struct side_job *job,
			size_t started)
{
	struct collect collect = { .port = group->options.push_port };

	if (!started)
		return;
	memcpy(job->token, e->token, sizeof(job->token));
	collect.capacity = started;
	collect.targets = calloc(collect.capacity, sizeof(*collect.targets));
	if (collect.targets)
		group_tracker_foreach_started(e->tracker, collect_started, &collect);
	job->targets = collect.targets;
	job->count = collect.count;
	job->passed = collect.passed;
}

/* Hands the release of record (the ConfigMap write) to the writer thread.
 * Under the lock; the tracker says PENDING until release_recorded(). */
static void release(struct controller_group *group, struct entry *e, const struct group_decision *decision)
{
	struct write_req *req;

	if (now_ms(group) < e->retry_at_ms) {
		group_tracker_release_failed(e->tracker, decision->epoch);
		return;
	}
	req = calloc(1, sizeof(*req));
	if (!req) {
		group_tracker_release_failed(e->tracker, decision->epoch);
		stat_add(&group->stats.release_failures, 1);
		mlog(MLOG_ERROR, "release-failed", "jobset=%s/%s attempt=%u err=%s cause=\"%s\"",
		     e->namespace, e->name, decision->attempt, muster_err_name(MUSTER_ENOMEM),
		     "no memory for the write");
		return;
	}
	req->snap = *e;
	req->snap.node = (struct name_node){ 0 };
	req->snap.tracker = NULL;
	req->decision = *decision;
	if (group->writes_tail)
		group->writes_tail->next = req;
	else
		group->writes_head = req;
	group->writes_tail = req;
	pthread_cond_signal(&group->writes_cond);
}

/* A release write of this JobSet (namespace/name) is queued or under way.
 * Under the lock. */
int group_write_in_flight(const struct controller_group *group, const struct entry *e)
{
	for (const struct write_req *req = group->writes_head; req; req = req->next)
		if (strcmp(req->snap.namespace, e->namespace) == 0 && strcmp(req->snap.name, e->name) == 0)
			return 1;
	return 0;
}

/* Records the outcome of a write made outside the lock, under it: the
 * ConfigMap is the release of record, so once written the release happened,
 * whether or not the JobSet is still tracked; the push and the Event go to
 * the side thread. */
static void release_recorded(struct controller_group *group, struct write_req *req)
{
	const struct group_decision *decision = &req->decision;
	struct entry *e = group_entry_find(group, req->snap.namespace, req->snap.name);
	const char *token_cause = NULL;
	struct side_job *job;

	if (e && e->serial != req->snap.serial)
		e = NULL; /* forgotten meanwhile: a later entry reads the ConfigMap back */
	if (req->err) {
		int reported;

		if (e) {
			group_tracker_release_failed(e->tracker, decision->epoch);
			if (req->foreign)
				report_conflict(group, e);
		}
		reported = e ? e->conflict_reported : req->foreign;
		stat_add(&group->stats.release_failures, 1);
		if (req->err != MUSTER_ECONFLICT || !reported) /* a conflict is logged once */
			mlog(MLOG_ERROR, "release-failed", "jobset=%s/%s attempt=%u err=%s cause=\"%s\"",
			     req->snap.namespace, req->snap.name, decision->attempt,
			     muster_err_name(req->err), req->cause ? req->cause : "");
		return;
	}
	/* The ConfigMap is the release of record; from here on it happened. */
	if (e) {
		group_tracker_release_done(e->tracker, decision->epoch);
		e->repush = 0; /* this release is pushed below */
		e->retry_at_ms = 0;
	}
	stat_add(&group->stats.releases, 1);
	mlog(MLOG_INFO, "release",
	     "jobset=%s/%s attempt=%u generation=%u expected=%llu started=%llu configmap=%s spread_ms=%llu "
	     "write_ms=%llu since_last_start_ms=%llu",
	     req->snap.namespace, req->snap.name, decision->attempt, decision->generation,
	     (unsigned long long)decision->expected, (unsigned long long)decision->started, req->how,
	     (unsigned long long)(decision->has_starts ? decision->last_start - decision->first_start : 0),
	     (unsigned long long)(req->written - req->begun),
	     (unsigned long long)(decision->has_starts ? req->written - decision->last_start : 0));
	if (group->options.observer && group->options.observer->released && decision->has_starts)
		group->options.observer->released(group->options.observer->arg,
						  (double)(req->written - decision->last_start) / 1e3);
	if (!e)
		return;
	job = job_new(group, e, SIDE_JOB_PUSH);
	if (!job)
		return;
	job->attempt = decision->attempt;
	job->generation = decision->generation;
	job->expected = decision->expected;
	job->started = decision->started;
	job->spread_ms = decision->has_starts ? decision->last_start - decision->first_start : 0;
	job->last_start_ms = decision->has_starts ? decision->last_start : req->written;
	if (release_token_check(e->token, strlen(e->token), &token_cause)) {
		stat_add(&group->stats.push_skipped, 1);
		mlog(MLOG_WARN, "push-skipped", "jobset=%s/%s attempt=%u reason=\"no usable token: %s\"",
		     e->namespace, e->name, decision->attempt, token_cause);
	} else {
		struct group_decision now;

		/* The tracker may have moved to a later epoch during the write:
		 * its pods wait for that one, not for this. */
		group_tracker_peek(e->tracker, &now);
		if (now.epoch == decision->epoch)
			job_targets(group, e, job, (size_t)decision->started);
	}
	side_queue_put(&group->side, job);
}

/* The writer thread: takes the oldest decided release, writes it with the
 * lock released (so a slow apiserver holds up neither watch), and records the
 * result under the lock. One write at a time, so a JobSet's ConfigMap is
 * never written by two threads at once. On stop, the write under way is
 * finished and the queued ones are dropped (nothing was written for them; a
 * next controller reads the ConfigMap back and decides again). */
static void *writer_main(void *arg)
{
	struct controller_group *group = arg;

	muster_lock(&group->lock);
	for (;;) {
		struct release_jobset jobset;
		struct write_req *req;

		while (!group->writes_head && !group->writes_stop)
			pthread_cond_wait(&group->writes_cond, &group->lock);
		if (group->writes_stop)
			break;
		req = group->writes_head;
		jobset = (struct release_jobset){ req->snap.namespace, req->snap.name, req->snap.uid };
		muster_unlock(&group->lock);
		req->how = "";
		req->begun = now_ms(group);
		req->err = release_record_write(group->write_api.client, &jobset, req->decision.epoch,
						&req->how, &req->foreign, &req->cause);
		req->written = now_ms(group);
		muster_lock(&group->lock);
		group->writes_head = req->next;
		if (!group->writes_head)
			group->writes_tail = NULL;
		release_recorded(group, req);
		free(req->cause);
		free(req);
	}
	muster_unlock(&group->lock);
	return NULL;
}

/* The release was read back (a restart): push it again to the pods whose
 * barrier still waits, which a controller stopped between its write and its
 * push left to the volume sync. A barrier accepts any release at or above
 * its attempt, so this is never early and never harmful. */
static void repush(struct controller_group *group, struct entry *e, const struct group_decision *decision)
{
	const char *token_cause = NULL;
	struct side_job *job;

	if (decision->started < decision->expected)
		return; /* the pods are not all known (yet) */
	e->repush = 0;
	if (release_token_check(e->token, strlen(e->token), &token_cause) ||
	    !(job = job_new(group, e, SIDE_JOB_PUSH)))
		return;
	job->repush = 1;
	job->attempt = decision->attempt;
	job->generation = decision->generation;
	job->last_start_ms = now_ms(group);
	job_targets(group, e, job, (size_t)decision->started);
	if (!job->count) {
		side_job_free(job);
		return;
	}
	mlog(MLOG_INFO, "repush", "jobset=%s/%s attempt=%u waiting=%zu", e->namespace, e->name,
	     decision->attempt, job->count);
	side_queue_put(&group->side, job);
}

/* Asks the tracker and acts on the answer. Called under the lock after every
 * change to the entry. */
void group_decide(struct controller_group *group, struct entry *e)
{
	struct group_decision decision;
	uint64_t timeouts;

	group_tracker_decide(e->tracker, &decision);
	/* For /metrics (alerts on a group waiting too long): when this epoch
	 * began waiting; released or idle, it waits no more. */
	if (decision.action == GROUP_ACTION_RELEASED || decision.action == GROUP_ACTION_IDLE) {
		e->waiting_since = 0;
	} else if (decision.action != GROUP_ACTION_UNKNOWN &&
		   (!e->waiting_since || e->waiting_epoch != decision.epoch)) {
		e->waiting_since = (int64_t)time(NULL);
		e->waiting_epoch = decision.epoch;
	}
	/* PENDING: a release write is with the writer thread (not a state of
	 * the group, and not logged). */
	if (decision.action != GROUP_ACTION_PENDING &&
	    (!e->has_last_action || e->last_action != decision.action)) {
		mlog(decision.action == GROUP_ACTION_ANOMALY ? MLOG_WARN : MLOG_INFO, "group-state",
		     "jobset=%s/%s action=%s attempt=%u generation=%u expected=%llu started=%llu tracked=%llu",
		     e->namespace, e->name, group_action_name(decision.action), decision.attempt,
		     decision.generation, (unsigned long long)decision.expected,
		     (unsigned long long)decision.started, (unsigned long long)decision.tracked);
		e->last_action = decision.action;
		e->has_last_action = 1;
	}
	timeouts = group_tracker_take_timeouts(e->tracker);
	if (timeouts) {
		stat_add(&group->stats.barrier_timeouts, timeouts);
		mlog(MLOG_WARN, "barrier-timeout",
		     "jobset=%s/%s attempt=%u timed_out=%llu started=%llu expected=%llu", e->namespace,
		     e->name, decision.attempt, (unsigned long long)decision.timeouts,
		     (unsigned long long)decision.started, (unsigned long long)decision.expected);
		if (decision.timeouts && e->timeout_reported != decision.attempt + 1u) {
			e->timeout_reported = decision.attempt + 1u;
			event_later(
				group, e, "GroupTimedOut", 1,
				"Restart attempt %u did not start as a group: %llu of %llu pods reached the "
				"barrier and %llu never did, and the barriers of those that reached it are "
				"timing out (%llu so far). Check why the missing pods did not start, or raise "
				"the group scheduling timeout.",
				decision.attempt, (unsigned long long)(decision.started + decision.timeouts),
				(unsigned long long)decision.expected,
				(unsigned long long)(decision.expected > decision.started + decision.timeouts
							     ? decision.expected - decision.started -
								       decision.timeouts
							     : 0),
				(unsigned long long)decision.timeouts);
		}
	}
	if (decision.action == GROUP_ACTION_RELEASE)
		release(group, e, &decision);
	else if (decision.action == GROUP_ACTION_RELEASED && e->repush)
		repush(group, e, &decision);
}

/* ---- JobSet events ---- */

/* Makes the tracker of a new group-scheduled JobSet: reads the released
 * attempt back and, when the pod watch has listed already, lists its pods. */
static void jobset_add(struct controller_group *group, const struct jobset_model *jobset, const char *token)
{
	struct entry *e;
	char *cause = NULL;

	if (group->registry.count >= CONTROLLER_JOBSETS_MAX) {
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
	e->timeout_s = jobset->has_timeout ? jobset->timeout_seconds : 0;
	e->serial = ++group->serials;
	if (entry_insert(group, e)) {
		mlog(MLOG_WARN, "jobset-ignored", "jobset=%s/%s cause=\"no memory\"", e->namespace, e->name);
		group_tracker_free(e->tracker);
		free(e);
		return;
	}
	mlog(MLOG_INFO, "jobset-tracked", "jobset=%s/%s attempt=%u", e->namespace, e->name, jobset->restarts);
	/* Its own LIST (the reader's) or the pod watch's next one completes it;
	 * until then group_decide() says UNKNOWN. */
	group_tracker_relist_begin(e->tracker);
	e->pod_relists = group->pod_relists;
	group_read_queue_put(group, e, 0);
}

/* A JobSet over one of the model's bounds (or malformed) is skipped alone:
 * logged with its name, and when it asks for a gang start, a Warning Event
 * on it says why it is not managed. Its name and namespace are checked
 * before they reach a log line or a request. */
static void undecodable(struct controller_group *group, const cJSON *object, const char *cause)
{
	const cJSON *metadata = kjson_member(object, "metadata");
	const cJSON *namespace = kjson_member(metadata, "namespace"), *name = kjson_member(metadata, "name"),
		    *uid = kjson_member(metadata, "uid");
	int named = cJSON_IsString(namespace) && kube_dns_label(namespace->valuestring, KUBE_NAMESPACE_MAX) &&
		    cJSON_IsString(name) && kube_dns_subdomain(name->valuestring, MODEL_LABEL_MAX) &&
		    cJSON_IsString(uid) && kube_label_value(uid->valuestring);
	struct entry e = { 0 };
	struct side_job *job;
	char quoted[CAUSE_MAX + 64];

	/* The cause may quote the object's own values: one line, escaped. */
	mlog(MLOG_WARN, "jobset-undecodable", "jobset=%s/%s cause=%s action=skipped",
	     named ? namespace->valuestring : "?", named ? name->valuestring : "?",
	     mlog_quote(quoted, sizeof(quoted), cause ? cause : "no memory",
			strlen(cause ? cause : "no memory")));
	if (!named ||
	    (!kjson_member(kjson_member(metadata, "annotations"), MUSTER_ANNOTATION_GROUP_TIMEOUT) &&
	     !kjson_member(kjson_member(object, "spec"), "groupSchedulingConfig")))
		return;
	snprintf(e.namespace, sizeof(e.namespace), "%s", namespace->valuestring);
	snprintf(e.name, sizeof(e.name), "%s", name->valuestring);
	snprintf(e.uid, sizeof(e.uid), "%s", uid->valuestring);
	if (!(job = job_new(group, &e, SIDE_JOB_EVENT)))
		return;
	job->reason = "GroupSchedulingSkipped";
	job->warning = 1;
	snprintf(job->message, sizeof(job->message), "muster does not manage this JobSet: %s",
		 cause ? cause : "no memory");
	side_queue_put(&group->side, job);
}

static void jobset_changed(struct controller_group *group, const cJSON *object, int deleted)
{
	struct jobset_model *jobset = malloc(sizeof(*jobset));
	char token[RELEASE_TOKEN_MAX + 1];
	struct entry *e;
	char *cause = NULL;

	if (!jobset)
		return;
	if (group_jobset_decode(object, jobset, token, sizeof(token), &cause)) {
		undecodable(group, object, cause);
		goto out;
	}
	e = group_entry_find(group, jobset->namespace, jobset->name);
	if (e && (deleted || !jobset->has_config || strcmp(e->uid, jobset->uid) != 0)) {
		mlog(MLOG_INFO, "jobset-forgotten", "jobset=%s/%s", e->namespace, e->name);
		entry_remove(group, e);
		e = NULL;
	}
	if (deleted || !jobset->has_config)
		goto out;
	if (!e) {
		jobset_add(group, jobset, token);
		e = group_entry_find(group, jobset->namespace, jobset->name);
	} else {
		memcpy(e->token, token, sizeof(e->token));
		e->timeout_s = jobset->has_timeout ? jobset->timeout_seconds : 0;
		if (group_tracker_set_jobset(e->tracker, jobset, now_ms(group), &cause)) {
			mlog(MLOG_WARN, "jobset-rebuilt", "jobset=%s/%s cause=\"%s\"", e->namespace, e->name,
			     cause ? cause : "no memory");
			entry_remove(group, e);
			jobset_add(group, jobset, token);
			e = group_entry_find(group, jobset->namespace, jobset->name);
		}
	}
	if (e)
		group_decide(group, e);
out:
	free(cause);
	free(jobset);
}

/* The JobSet watch, through its informer (which keeps the key and the
 * resourceVersion of every JobSet, and says which ones a re-list no longer
 * has). */
static void note_relist(struct controller_group *group, const char *watch, unsigned *lists, char *kept,
			const char *reason)
{
	char quoted[KUBE_RELIST_REASON_MAX + 8];

	/* kept: the group's jobset_reason or pod_reason, KUBE_RELIST_REASON_MAX bytes. */
	muster_lock(&group->reason_lock);
	snprintf(kept, KUBE_RELIST_REASON_MAX, "%s", reason);
	muster_unlock(&group->reason_lock);
	if ((*lists)++) {
		mlog_quote(quoted, sizeof(quoted), reason, strlen(reason));
		mlog(MLOG_WARN, "watch-relisted", "watch=%s lists=%u reason=%s", watch, *lists, quoted);
	}
}

static int jobset_relist_begin(void *arg, const char *reason)
{
	struct controller_group *group = arg;

	note_relist(group, "jobsets", &group->jobset_lists, group->jobset_reason, reason);
	return 0;
}

static int jobset_change(void *arg, const struct kube_informer_event *event)
{
	struct controller_group *group = arg;
	struct entry *e;

	muster_lock(&group->lock);
	if (event->object) {
		jobset_changed(group, event->object, event->type == KUBE_WATCH_DELETED);
	} else if ((e = group_entry_find(group, event->namespace, event->name))) { /* not in the LIST */
		mlog(MLOG_INFO, "jobset-forgotten", "jobset=%s/%s reason=\"not in the LIST\"", e->namespace,
		     e->name);
		entry_remove(group, e);
	}
	muster_unlock(&group->lock);
	return 0;
}

static int jobset_relist_end(void *arg, const char *resource_version)
{
	struct controller_group *group = arg;

	(void)resource_version;
	atomic_store(&group->jobsets_listed, 1);
	return 0;
}

/* ---- pod events ---- */

static void pod_changed(struct controller_group *group, const cJSON *object, enum group_event event)
{
	struct group_pod pod;
	struct entry *e;

	if (group_pod_decoded(object, &pod))
		return;
	e = group_entry_find(group, pod.namespace, pod.jobset_name);
	if (!e)
		return;
	group_note_pod(e, &pod);
	if (group_tracker_apply_pod(e->tracker, &pod, event, now_ms(group)) == GROUP_APPLY_CHANGED)
		group_decide(group, e);
}

static void pod_relist_begin_one(struct controller_group *group, struct entry *e)
{
	(void)group;
	group_tracker_relist_begin(e->tracker);
	e->in_pod_relist = 1;
}

static int pod_relist_begin(void *arg, const char *reason)
{
	struct controller_group *group = arg;

	note_relist(group, "pods", &group->pod_lists, group->pod_reason, reason);
	muster_lock(&group->lock);
	group->pod_relists++;
	registry_each(group, pod_relist_begin_one);
	muster_unlock(&group->lock);
	return 0;
}

/* A pod from the watch or from its LIST (as ADDED). One that a re-list no
 * longer has is left to the trackers' own relist_end, which forgets it. */
static int pod_change(void *arg, const struct kube_informer_event *event)
{
	struct controller_group *group = arg;
	enum group_event type = event->relist			    ? GROUP_EVENT_ADDED
				: event->type == KUBE_WATCH_DELETED ? GROUP_EVENT_DELETED
				: event->type == KUBE_WATCH_ADDED   ? GROUP_EVENT_ADDED
								    : GROUP_EVENT_MODIFIED;

	if (!event->object)
		return 0;
	muster_lock(&group->lock);
	pod_changed(group, event->object, type);
	muster_unlock(&group->lock);
	return 0;
}

static void pod_relist_end_one(struct controller_group *group, struct entry *e)
{
	/* A tracker made during this LIST listed its own pods already. */
	if (!e->in_pod_relist)
		return;
	e->in_pod_relist = 0;
	group_tracker_relist_end(e->tracker);
	group_decide(group, e);
}

static int pod_relist_end(void *arg, const char *resource_version)
{
	struct controller_group *group = arg;

	(void)resource_version;
	muster_lock(&group->lock);
	registry_each(group, pod_relist_end_one);
	muster_unlock(&group->lock);
	atomic_store(&group->pods_listed, 1);
	return 0;
}

/* ---- the tick ---- */

/* Once a second: asks every tracker again, so that a release whose
 * ConfigMap write failed is retried without waiting for the next pod event
 * (failed reads are the reader thread's). */
static void tick_one(struct controller_group *group, struct entry *e)
{
	group_decide(group, e);
}

static void tick(struct controller_group *group)
{
	muster_lock(&group->lock);
	registry_each(group, tick_one);
	muster_unlock(&group->lock);
}

/* ---- threads ---- */

/* Stops the writer thread once the write under way is done, and joins it. */
static void writer_stop(struct controller_group *group, pthread_t writer)
{
	muster_lock(&group->lock);
	group->writes_stop = 1;
	pthread_cond_signal(&group->writes_cond);
	muster_unlock(&group->lock);
	pthread_join(writer, NULL);
}

int controller_group_run(struct controller_group *group, atomic_int *stop, char **cause)
{
	pthread_t writer, reader;
	int err, watch_err, pod_err;

	/* Every request of the loop ends at once on a stop, however much of a
	 * LIST or of a new JobSet's reads is left. */
	kube_client_set_stop(group->jobset_api.client, stop);
	kube_client_set_stop(group->pod_api.client, stop);
	kube_client_set_stop(group->read_api.client, stop);
	kube_client_set_stop(group->write_api.client, stop);
	kube_client_set_stop(group->side_api.client, stop);
	if ((err = side_queue_start(&group->side, cause)))
		return err;
	if (pthread_create(&writer, NULL, writer_main, group) != 0) {
		side_queue_finish(&group->side);
		return cause_err(cause, MUSTER_ENOMEM, "cannot start the writer thread");
	}
	if (pthread_create(&reader, NULL, group_reader_main, group) != 0) {
		writer_stop(group, writer);
		side_queue_finish(&group->side);
		return cause_err(cause, MUSTER_ENOMEM, "cannot start the reader thread");
	}
	err = watch_hub_start(group->jobset_hub, stop, cause);
	if (!err)
		err = watch_hub_start(group->pod_hub, stop, cause);
	while (!atomic_load(stop)) {
		struct timespec second = { .tv_sec = 1, .tv_nsec = 0 };

		nanosleep(&second, NULL);
		if (!atomic_load(stop))
			tick(group);
	}
	/* The watches are shared (placement subscribes to them): they end
	 * with this loop. */
	watch_hub_stop(group->jobset_hub);
	watch_hub_stop(group->pod_hub);
	watch_err = watch_hub_wait(group->jobset_hub, err ? NULL : cause);
	pod_err = watch_hub_wait(group->pod_hub, err || watch_err ? NULL : cause);
	if (!err)
		err = watch_err ? watch_err : pod_err;
	/* The watches and the tick are done: no tracker is made any more. The
	 * reader's request under way ends at once (its client is stopped); a
	 * read it applies may still group_decide a release. Then the writer finishes
	 * the write under way (it may queue a push). */
	muster_lock(&group->lock);
	group->reads_stop = 1;
	pthread_cond_signal(&group->reads_cond);
	muster_unlock(&group->lock);
	pthread_join(reader, NULL);
	writer_stop(group, writer);
	/* Nothing enqueues any more. The side thread finishes what is queued
	 * (pushes are bounded in time). */
	side_queue_finish(&group->side);
	return err;
}

/* The loop's JobSets: those of its namespace (all without one). */
static int wants_jobset(void *arg, const cJSON *object)
{
	const struct controller_group *group = arg;
	const cJSON *namespace = kjson_member(kjson_member(object, "metadata"), "namespace");

	return !group->namespace[0] ||
	       (cJSON_IsString(namespace) && strcmp(namespace->valuestring, group->namespace) == 0);
}

/* Its pods: of its namespace, carrying the group-scheduling label (what its
 * own watch's label selector asks). */
static int wants_pod(void *arg, const cJSON *object)
{
	const cJSON *labels = kjson_member(kjson_member(object, "metadata"), "labels");

	return wants_jobset(arg, object) && kjson_member(labels, MUSTER_LABEL_GROUP_SCHEDULING) != NULL;
}

/* The JobSet and pod watches, as shared watches (watch_hub) with this loop
 * their first consumer; placement may subscribe too. */
static int watches_new(struct controller_group *group, char **cause)
{
	const char *namespace = group->namespace[0] ? group->namespace : NULL;
	char jobsets[KUBE_PATH_MAX], pods[KUBE_PATH_MAX], all_jobsets[KUBE_PATH_MAX], all_pods[KUBE_PATH_MAX];
	struct watch_hub_consumer_spec jobset_spec = {
		.informer = group->jobset_informer, .path = jobsets, .wants = wants_jobset, .arg = group
	};
	struct watch_hub_consumer_spec pod_spec = { .informer = group->pod_informer,
						    .path = pods,
						    .selectors = { .label = MUSTER_LABEL_GROUP_SCHEDULING },
						    .wants = wants_pod,
						    .arg = group };
	int err;

	if ((err = kube_path(jobsets, sizeof(jobsets), &KUBE_JOBSETS, namespace, NULL, cause)) ||
	    (err = kube_path(pods, sizeof(pods), &KUBE_PODS, namespace, NULL, cause)) ||
	    (err = kube_path(all_jobsets, sizeof(all_jobsets), &KUBE_JOBSETS, NULL, NULL, cause)) ||
	    (err = kube_path(all_pods, sizeof(all_pods), &KUBE_PODS, NULL, NULL, cause)) ||
	    (err = watch_hub_new(group->jobset_api.client, all_jobsets, LIST_PAGE_SIZE, &group->jobset_hub,
				 cause)) ||
	    (err = watch_hub_new(group->pod_api.client, all_pods, LIST_PAGE_SIZE, &group->pod_hub, cause)))
		return err;
	if (watch_hub_add(group->jobset_hub, &jobset_spec, 1) < 0 ||
	    watch_hub_add(group->pod_hub, &pod_spec, 1) < 0)
		return cause_err(cause, MUSTER_EINVAL, "cannot subscribe to the watches");
	return 0;
}

void controller_group_watches(struct controller_group *group, struct watch_hub **jobsets,
			      struct watch_hub **pods)
{
	*jobsets = group->jobset_hub;
	*pods = group->pod_hub;
}

int controller_group_new(const struct kube_config *cfg, const struct controller_group_options *options,
			 struct controller_group **out, char **cause)
{
	struct controller_group *group = calloc(1, sizeof(*group));
	const struct kube_informer_handlers jobset_handlers = {
		.on_change = jobset_change,
		.on_relist_begin = jobset_relist_begin,
		.on_relist_end = jobset_relist_end,
		.arg = group,
	};
	const struct kube_informer_handlers pod_handlers = {
		.on_change = pod_change,
		.on_relist_begin = pod_relist_begin,
		.on_relist_end = pod_relist_end,
		.arg = group,
	};
	int err;

	*out = NULL;
	if (!group)
		return cause_err(cause, MUSTER_ENOMEM, "no memory for the controller");
	if (options->namespace && strlen(options->namespace) > MODEL_LABEL_MAX) {
		free(group);
		return cause_err(cause, MUSTER_EINVAL, "namespace longer than %d bytes", MODEL_LABEL_MAX);
	}
	if (options->namespace)
		memcpy(group->namespace, options->namespace, strlen(options->namespace) + 1);
	group->options = *options;
	group->options.namespace = NULL; /* the copy above is what is used */
	clock_gettime(CLOCK_MONOTONIC, &group->start);
	group->reason_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	if (pthread_mutex_init(&group->lock, NULL) != 0) {
		free(group);
		return cause_err(cause, MUSTER_ENOMEM, "cannot make a mutex");
	}
	if ((err = side_queue_init(&group->side, cause))) {
		pthread_mutex_destroy(&group->lock);
		free(group);
		return err;
	}
	if (pthread_cond_init(&group->writes_cond, NULL) != 0) {
		side_queue_destroy(&group->side);
		pthread_mutex_destroy(&group->lock);
		free(group);
		return cause_err(cause, MUSTER_ENOMEM, "cannot make a condition variable");
	}
	if (pthread_cond_init(&group->reads_cond, NULL) != 0) {
		pthread_cond_destroy(&group->writes_cond);
		side_queue_destroy(&group->side);
		pthread_mutex_destroy(&group->lock);
		free(group);
		return cause_err(cause, MUSTER_ENOMEM, "cannot make a condition variable");
	}
	if ((err = api_new(cfg, options, &group->jobset_api, cause)) ||
	    (err = api_new(cfg, options, &group->pod_api, cause)) ||
	    (err = api_new(cfg, options, &group->write_api, cause)) ||
	    (err = api_new(cfg, options, &group->side_api, cause)) ||
	    (err = api_new(cfg, options, &group->read_api, cause)) ||
	    (err = kube_informer_new(&jobset_handlers, &group->jobset_informer, cause)) ||
	    (err = kube_informer_new(&pod_handlers, &group->pod_informer, cause)) ||
	    (err = watches_new(group, cause))) {
		controller_group_free(group);
		return err;
	}
	group->side.client = group->side_api.client;
	group->side.push_parallelism = options->push_parallelism;
	group->side.push_target_timeout_ms = options->push_target_timeout_ms;
	group->side.push_total_timeout_ms = options->push_total_timeout_ms;
	group->side.observer = options->observer;
	group->side.start = group->start;
	*out = group;
	return 0;
}

void controller_group_free(struct controller_group *group)
{
	if (!group)
		return;
	registry_each(group, entry_remove);
	name_table_clear(&group->registry);
	while (group->writes_head) {
		struct write_req *next = group->writes_head->next;

		free(group->writes_head);
		group->writes_head = next;
	}
	api_free(&group->jobset_api);
	api_free(&group->pod_api);
	api_free(&group->write_api);
	api_free(&group->side_api);
	api_free(&group->read_api);
	watch_hub_free(group->jobset_hub);
	watch_hub_free(group->pod_hub);
	kube_informer_free(group->jobset_informer);
	kube_informer_free(group->pod_informer);
	pthread_cond_destroy(&group->writes_cond);
	pthread_cond_destroy(&group->reads_cond);
	side_queue_destroy(&group->side);
	pthread_mutex_destroy(&group->lock);
	pthread_mutex_destroy(&group->reason_lock);
	free(group);
}
