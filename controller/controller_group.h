/*
 * controller_group: the group-start loop of bin/muster-controller.
 *
 * It keeps one group_tracker per group-scheduled JobSet, fed by two watches
 * (JobSets, and pods carrying the label muster.dev/group-scheduling, which
 * the webhook puts on the pod template of every targeted replicated job), and
 * acts on the tracker's decision: on RELEASE(attempt) it writes the
 * ConfigMap `<jobset>-group-scheduling` (data.started = "<attempt>", owned
 * by the JobSet), pushes the release line to every started pod's barrier
 * (push_fanout), and records the release in the tracker.
 *
 * Threads: each watch runs in its own thread with its own API client; all
 * trackers live behind one mutex. The release of record (the ConfigMap
 * write) is decided under it and written outside it by a writer thread with
 * a third client; a new tracker's ConfigMap read and pod LIST are made
 * outside it too, by a reader thread with a fifth (no API request is ever
 * made under the mutex: lib/base/muster_lock.h checks it).
 * The push to the barriers and the Events are queued to a side thread with
 * a fourth client, so a 5,000-pod push never holds the watches up. A
 * once-a-second tick retries failed writes. JobSets are found by
 * namespace/name in a hash table. Leader election and the HTTP endpoints
 * are main.c's; this module offers what they read (ready, stats, foreach).
 *
 * The ConfigMap is written only when it is absent or owned by the JobSet
 * (its uid). One controlled by an earlier JobSet of the same name (not yet
 * garbage-collected) is replaced; any other is left alone, reported once
 * with a Warning Event `ConfigMapConflict`, and the group is not released
 * until it is gone. A barrier that timed out (exit code 3) is logged and
 * reported once per attempt with a Warning Event `GroupTimedOut`.
 *
 * A JobSet is group-scheduled when it has spec.groupSchedulingConfig or,
 * where the JobSet CRD is not patched and prunes that field, the annotation
 * `muster.dev/group-scheduling-timeout: "<seconds>"` (lib/muster/group_config). The
 * per-JobSet barrier token is the annotation `muster.dev/barrier-token`, which
 * the webhook writes at creation (webhook/webhook.md says why not a Secret).
 *
 * Lifecycle: controller_group_new() succeeds fully or leaves nothing;
 * controller_group_run() blocks until *stop is set (or a watch fails for
 * good); controller_group_free() accepts NULL.
 */
#ifndef MUSTER_CONTROLLER_GROUP_H
#define MUSTER_CONTROLLER_GROUP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "group_tracker.h"
#include "kube_client.h"
#include "kube_config.h"
#include "muster_api.h"

/* Most JobSets tracked at once; more are logged and ignored. */
#define CONTROLLER_JOBSETS_MAX 100000u

/* Optional callbacks for metrics, called from the controller's threads. */
struct controller_group_observer {
	/* The ConfigMap of a release was written, `seconds` after the group's
	 * last pod was seen starting. */
	void (*released)(void *arg, double seconds);
	/* The push of a release finished, `seconds` after the last start. */
	void (*pushed)(void *arg, double seconds);
	void *arg;
};

struct controller_group_options {
	const char *namespace; /* NULL or "": every namespace */
	uint16_t push_port; /* the barrier's port, MUSTER_BARRIER_PORT */
	size_t push_parallelism; /* connections in flight, 1..4096 */
	int push_target_timeout_ms;
	int push_total_timeout_ms;
	const struct controller_group_observer *observer; /* NULL: none; must outlive the group */
	/* NULL: libcurl to the configured server. Benchmarks and tests put a
	 * fake here; it is shared by the five clients, so it must be
	 * thread-safe. */
	const struct kube_transport *transport;
	void *transport_ctx;
};

struct controller_group;

/* Builds the loop and its API clients from cfg (which may be freed
 * afterwards). Returns 0, or a negative kube_err with *cause (malloc'ed, the
 * caller frees). */
int controller_group_new(const struct kube_config *cfg, const struct controller_group_options *options,
			 struct controller_group **out, char **cause);

/* Runs both watches until *stop becomes non-zero or one of them ends with an
 * error that retrying cannot fix (401/403, 404: e.g. the JobSet CRD is not
 * installed). Returns 0 when stopped, else the negative kube_err and *cause. */
int controller_group_run(struct controller_group *group, atomic_int *stop, char **cause);

struct watch_hub;

/* The loop's JobSet and pod watches (controller/watch_hub.h), for another
 * loop of the process to subscribe to before controller_group_run (one
 * watch per kind, not one per loop). They run and end with
 * controller_group_run; they are freed with the group. */
void controller_group_watches(struct controller_group *group, struct watch_hub **jobsets,
			      struct watch_hub **pods);

void controller_group_free(struct controller_group *group);

/* 1 when both watches have completed their first LIST (the controller knows
 * the cluster), else 0 with a sentence in reason. Any thread. */
int controller_group_ready(struct controller_group *group, char *reason, size_t size);

enum controller_api {
	CONTROLLER_API_JOBSETS,
	CONTROLLER_API_PODS,
	CONTROLLER_API_WRITES,
	CONTROLLER_API_EVENTS
};
#define CONTROLLER_API_COUNT 4

/* Counters since start. Any thread. */
struct controller_group_stats {
	uint64_t releases; /* ConfigMap writes of a release */
	uint64_t release_failures; /* release writes that failed (retried) */
	uint64_t configmap_conflicts; /* release blocked by a ConfigMap that is not ours */
	uint64_t barrier_timeouts; /* pods whose barrier timed out */
	uint64_t push_ok, push_refused, push_unreachable, push_timeout, push_pending;
	uint64_t push_passed; /* started pods already past their barrier at the release: not pushed */
	uint64_t push_skipped; /* releases with no usable token: no push */
	uint64_t jobs_dropped; /* pushes or Events not made (queue full, no memory) */
	struct kube_client_stats api[CONTROLLER_API_COUNT]; /* per API client */
};

void controller_group_stats(struct controller_group *group, struct controller_group_stats *out);

/* One tracked JobSet, as seen by controller_group_foreach. */
struct controller_jobset_view {
	const char *namespace, *name;
	struct group_decision decision; /* attempt, expected, started, timeouts... */
	size_t pod_records; /* pod records held (tombstones included) */
	size_t pod_bytes; /* bytes they and the tracker take */
	uint32_t timeout_s; /* the group's timeout, 0: not given (the webhook's default applies) */
	int64_t waiting_since; /* Unix seconds the current attempt began waiting, 0: not waiting */
};

/* Calls fn for every tracked JobSet, under the controller's lock: fn must be
 * quick and must not call back into the controller. */
void controller_group_foreach(struct controller_group *group,
			      void (*fn)(void *arg, const struct controller_jobset_view *view), void *arg);

#endif
