/*
 * controller_group_int: the gang loop's state, shared by its files and no
 * one else: controller_group.c (the loop: watches, decisions, the writer
 * thread) and controller_group_views.c (what /metrics and /readyz read).
 * Everything here is under the group's lock unless it says otherwise.
 */
#ifndef MUSTER_CONTROLLER_GROUP_INT_H
#define MUSTER_CONTROLLER_GROUP_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "controller_group.h"
#include "group_decode.h"
#include "group_tracker.h"
#include "kube_client.h"
#include "kube_informer.h"
#include "model_fields.h"
#include "name_table.h"
#include "release_line.h"
#include "side_queue.h"
#include "watch_hub.h"

/* One group-scheduled JobSet. */
struct entry {
	struct name_node node; /* first: an entry is its node; namespace and name point below */
	char namespace[MODEL_LABEL_MAX + 1];
	char name[MODEL_LABEL_MAX + 1];
	char uid[MODEL_UID_MAX + 1];
	char token[RELEASE_TOKEN_MAX + 1]; /* "" when the annotation is absent */
	struct group_tracker *tracker;
	int in_pod_relist; /* relist_begin was called for the pod LIST in progress */
	/* In the reader thread's queue (its ConfigMap read and pod LIST are due,
	 * or failed and are retried), not before read_after_ms. */
	int read_queued;
	uint64_t read_after_ms;
	struct entry *read_prev, *read_next;
	uint64_t pod_relists; /* the group's pod_relists when it was made */
	enum group_action last_action;
	int has_last_action;
	uint64_t retry_at_ms; /* no release write before this (a foreign ConfigMap is in the way) */
	int conflict_reported; /* the ConfigMapConflict Event was sent */
	uint32_t timeout_reported; /* attempt + 1 whose GroupTimedOut Event was sent, 0: none */
	int repush; /* released before this tracker was made: push again to the pods still waiting */
	int uid_missing_reported; /* a pod without the jobset-uid label was logged */
	uint64_t serial; /* tells this entry from a later one of the same JobSet */
	uint32_t timeout_s; /* groupSchedulingConfig.timeoutAfterSeconds, 0: not given */
	int64_t waiting_since; /* Unix seconds the current epoch began waiting, 0: not waiting */
	uint64_t waiting_epoch; /* that epoch */
};

/* A release write handed to the writer thread: decided under the lock,
 * written outside it, its result recorded under the lock again. While it is
 * queued or under way the tracker says PENDING (no second release of the
 * epoch is decided) and no ConfigMap read of that JobSet is made. */
struct write_req {
	struct write_req *next;
	struct entry snap; /* identity of the JobSet (namespace, name, uid, serial); no tracker */
	struct group_decision decision;
	uint64_t begun, written; /* the write's start and end, now_ms */
	int err, foreign;
	const char *how;
	char *cause;
};

/* An API client (owning its transport, or on the tests' own); one per
 * thread. */
struct api {
	struct kube_client *client;
};

struct controller_group {
	pthread_mutex_t lock; /* the registry and every tracker */
	struct name_table registry; /* the entries */
	char namespace[MODEL_LABEL_MAX + 1];
	struct controller_group_options options;
	struct api jobset_api, pod_api, write_api, side_api;
	struct side_queue side; /* pushes and Events, with side_api's client */
	struct api read_api; /* ConfigMap GET and pod LIST of a new tracker, by the reader thread */
	struct kube_informer *jobset_informer, *pod_informer; /* each fed by its watch's thread */
	struct watch_hub *jobset_hub,
		*pod_hub; /* the process's JobSet and pod watches, shared with placement */
	uint64_t serials; /* entries made */

	/* Release writes decided and not yet recorded, oldest first; under lock. */
	pthread_cond_t writes_cond;
	struct write_req *writes_head, *writes_tail;
	int writes_stop;
	/* Entries whose reads are due, oldest first (the reader thread's); under lock. */
	pthread_cond_t reads_cond;
	struct entry *reads_head, *reads_tail;
	int reads_stop;
	uint64_t pod_relists; /* LISTs the pod watch began: a new tracker's LIST begun before one is moot */
	struct timespec start;
	atomic_int jobsets_listed, pods_listed; /* each watch completed a LIST once */
	unsigned jobset_lists, pod_lists; /* LISTs begun, for the re-list log line */
	/* Why each watch's LIST under way or last begun happened, for /readyz. */
	pthread_mutex_t reason_lock;
	char jobset_reason[KUBE_RELIST_REASON_MAX], pod_reason[KUBE_RELIST_REASON_MAX];

	struct {
		_Atomic uint64_t releases, release_failures, configmap_conflicts, barrier_timeouts;
		_Atomic uint64_t push_skipped;
	} stats;
};

static inline void stat_add(_Atomic uint64_t *counter, uint64_t n)
{
	atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

static inline uint64_t stat_get(const _Atomic uint64_t *counter)
{
	return atomic_load_explicit((_Atomic uint64_t *)counter, memory_order_relaxed);
}

static inline uint64_t now_ms(const struct controller_group *group)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)(now.tv_sec - group->start.tv_sec) * 1000u +
	       (uint64_t)((now.tv_nsec - group->start.tv_nsec) / 1000000);
}

/* ---- shared by controller_group.c and controller_group_reads.c ---- */

struct group_pod;

/* The entry of namespace/name in the registry, or NULL. Under the lock. */
struct entry *group_entry_find(struct controller_group *group, const char *namespace, const char *name);
/* Decides what the entry's group needs now and acts on it (release, repush,
 * Events). Under the lock. */
void group_decide(struct controller_group *group, struct entry *e);
/* Counts a decoded pod in the entry's tracker. Under the lock. */
void group_note_pod(struct entry *e, const struct group_pod *pod);
/* 1 when a release write of the entry is queued or under way. */
int group_write_in_flight(const struct controller_group *group, const struct entry *e);

/* The released epoch read back from the ConfigMap, into the tracker. Under
 * the lock. */
struct release_record_read;
void group_released_read(struct controller_group *group, struct entry *e,
			 const struct release_record_read *read);

/* controller_group_reads.c: a new tracker's reads. */
/* Queues the entry's reads for the reader thread, `after` ms from now. */
void group_read_queue_put(struct controller_group *group, struct entry *e, uint64_t after);
void group_read_queue_remove(struct controller_group *group, struct entry *e);
/* A pod from the API, or -1 with the reason logged. */
int group_pod_decoded(const struct cJSON *object, struct group_pod *pod);
/* The reader thread (pthread_create's start routine; arg: the group). */
void *group_reader_main(void *arg);

#endif
