/*
 * controller_group_reads: a new tracker's reads (the release of record and
 * the JobSet's pods), made by the reader thread with no lock held and
 * applied under the lock to the entry found again (controller_group.h).
 */
#define _POSIX_C_SOURCE 200809L
#define LIST_PAGE_SIZE 500u
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

/* ---- a new tracker's reads, by the reader thread, outside the lock ---- */

/* Which entry a read is for, copied under the lock: the entry is found
 * again by name and serial each time the lock is taken again (it may have
 * been forgotten, or made anew for a new uid, meanwhile). */
struct read_target {
	char namespace[MODEL_LABEL_MAX + 1];
	char name[MODEL_LABEL_MAX + 1];
	char uid[MODEL_UID_MAX + 1];
	uint64_t serial;
	uint64_t pod_relists; /* the pod watch's LISTs begun when this LIST began */
	uint64_t seq;
	int moot; /* the pod watch re-listed meanwhile, or the entry is gone */
	struct controller_group *group;
};

static struct entry *entry_again(struct controller_group *group, const struct read_target *t)
{
	struct entry *e = group_entry_find(group, t->namespace, t->name);

	return e && e->serial == t->serial ? e : NULL;
}

/* Queues e for the reader thread, to be read from `after` (now_ms) on.
 * Under the lock. */
void group_read_queue_put(struct controller_group *group, struct entry *e, uint64_t after)
{
	if (e->read_queued)
		return;
	e->read_queued = 1;
	e->read_after_ms = after;
	e->read_next = NULL;
	e->read_prev = group->reads_tail;
	if (group->reads_tail)
		group->reads_tail->read_next = e;
	else
		group->reads_head = e;
	group->reads_tail = e;
	pthread_cond_signal(&group->reads_cond);
}

void group_read_queue_remove(struct controller_group *group, struct entry *e)
{
	if (!e->read_queued)
		return;
	if (e->read_prev)
		e->read_prev->read_next = e->read_next;
	else
		group->reads_head = e->read_next;
	if (e->read_next)
		e->read_next->read_prev = e->read_prev;
	else
		group->reads_tail = e->read_prev;
	e->read_prev = e->read_next = NULL;
	e->read_queued = 0;
}

/* A pod from the API, or -1 with the reason logged (its name is not known
 * yet: the cause names the field). */
int group_pod_decoded(const cJSON *object, struct group_pod *pod)
{
	char *cause = NULL;

	if (group_pod_from_json(object, pod, &cause) == 0)
		return 0;
	mlog(MLOG_WARN, "pod-undecodable", "cause=\"%s\"", cause ? cause : "no memory");
	free(cause);
	return -1;
}

/* A LIST item: decoded outside the lock, applied under it as ADDED, unless
 * the pod watch began a LIST of its own meanwhile (that LIST covers this
 * JobSet: the entry was there when it began) or the entry is gone. */
static int list_pod_item(void *arg, const cJSON *item)
{
	struct read_target *t = arg;
	struct controller_group *group = t->group;
	struct group_pod pod;
	struct entry *e;

	if (group_pod_decoded(item, &pod))
		return 0;
	muster_lock(&group->lock);
	e = entry_again(group, t);
	if (!e || group->pod_relists != t->pod_relists) {
		t->moot = 1;
		muster_unlock(&group->lock);
		return 1; /* ends the LIST */
	}
	group_note_pod(e, &pod);
	group_tracker_apply_pod(e->tracker, &pod, GROUP_EVENT_ADDED, t->seq);
	muster_unlock(&group->lock);
	return 0;
}

/* A new tracker gets its own LIST of the JobSet's pods, so that it has a
 * full picture without waiting for the pod watch's next re-list. Its
 * re-list began when it was made (jobset_add): every pod event applied
 * since, before or during the LIST, marks what it touches as seen, so
 * relist_end forgets nothing a new tracker was told (it has nothing older).
 * Returns 0, a KUBE_E* code, or 1 when the LIST was moot (t->moot). */
static int list_pods(struct controller_group *group, struct read_target *t, char **cause)
{
	char path[KUBE_PATH_MAX], selector[sizeof(MUSTER_LABEL_GROUP_SCHEDULING) + sizeof(JOBSET_LABEL_NAME) +
					   MODEL_LABEL_MAX + 2];
	struct kube_selectors selectors = { .label = selector, .field = NULL };
	int err;

	if ((err = kube_path(path, sizeof(path), &KUBE_PODS, t->namespace, NULL, cause)) != 0)
		return err;
	snprintf(selector, sizeof(selector), "%s,%s=%s", MUSTER_LABEL_GROUP_SCHEDULING, JOBSET_LABEL_NAME,
		 t->name);
	err = kube_list(group->read_api.client, path, &selectors, LIST_PAGE_SIZE, list_pod_item, t, NULL,
			cause);
	return t->moot ? 1 : err;
}

/* Retried this long after a read failed, or was put off by a write of the
 * JobSet under way. */
#define READ_RETRY_MS 1000u

/* Reads the released epoch back and lists the pods of the entry of t, with
 * no lock held across either request; each result is applied under the
 * lock to the same entry only. Always list: a tracker made while the pod
 * watch's own LIST is under way (or before it began) would otherwise never
 * see a complete LIST. On failure the tracker stays UNKNOWN (it never
 * releases) and the read is queued again. */
static void entry_read(struct controller_group *group, struct read_target *t)
{
	struct release_jobset jobset = { t->namespace, t->name, t->uid };
	struct release_record_read read;
	struct entry *e;
	char *cause = NULL;
	int err = release_record_read(group->read_api.client, &jobset, &read, &cause);

	muster_lock(&group->lock);
	if (!(e = entry_again(group, t)))
		goto out; /* forgotten: a later entry of the JobSet reads for itself */
	if (err)
		goto failed;
	group_released_read(group, e, &read);
	if (group->pod_relists == t->pod_relists) {
		/* No LIST of the pod watch began since the entry was made: list
		 * its pods. */
		t->seq = now_ms(group);
		muster_unlock(&group->lock);
		err = list_pods(group, t, &cause);
		muster_lock(&group->lock);
		if (!(e = entry_again(group, t)))
			goto out;
		if (t->moot || group->pod_relists != t->pod_relists)
			err = 0; /* one began meanwhile: it ends the tracker's re-list */
		else if (!err)
			group_tracker_relist_end(e->tracker);
		/* A failed LIST leaves the re-list open: group_decide() stays UNKNOWN
		 * until a full one. */
	}
failed:
	if (err) {
		mlog(MLOG_ERROR, "jobset-read-failed", "jobset=%s/%s err=%s cause=\"%s\"", e->namespace,
		     e->name, muster_err_name(err), cause ? cause : "");
		group_read_queue_put(group, e, now_ms(group) + READ_RETRY_MS);
	}
	group_decide(group, e);
out:
	muster_unlock(&group->lock);
	free(cause);
}

/* The reader thread: reads the ConfigMap and lists the pods of each new
 * tracker, oldest first, outside the lock (a slow apiserver holds up
 * neither watch), and retries a failed read a second later. A JobSet whose
 * release write of an earlier entry is queued or under way is read once it
 * is recorded. */
void *group_reader_main(void *arg)
{
	struct controller_group *group = arg;

	muster_lock(&group->lock);
	while (!group->reads_stop) {
		struct entry *e = group->reads_head;
		struct read_target t = { .group = group };
		uint64_t now = now_ms(group), due = UINT64_MAX;

		/* The first entry due: a new one is not held behind a failed one
		 * waiting for its retry. */
		for (; e && e->read_after_ms > now; e = e->read_next)
			if (e->read_after_ms < due)
				due = e->read_after_ms;
		if (!e && due == UINT64_MAX) {
			pthread_cond_wait(&group->reads_cond, &group->lock);
			continue;
		}
		if (!e) {
			struct timespec until;
			uint64_t wait = due - now;

			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += (time_t)(wait / 1000u);
			until.tv_nsec += (long)(wait % 1000u) * 1000000L;
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&group->reads_cond, &group->lock, &until);
			continue;
		}
		group_read_queue_remove(group, e);
		if (group_write_in_flight(group, e)) {
			group_read_queue_put(group, e, now + READ_RETRY_MS);
			continue;
		}
		memcpy(t.namespace, e->namespace, sizeof(t.namespace));
		memcpy(t.name, e->name, sizeof(t.name));
		memcpy(t.uid, e->uid, sizeof(t.uid));
		t.serial = e->serial;
		t.pod_relists = e->pod_relists;
		muster_unlock(&group->lock);
		entry_read(group, &t);
		muster_lock(&group->lock);
	}
	muster_unlock(&group->lock);
	return NULL;
}
