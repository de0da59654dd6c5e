/*
 * group_tracker: the started-pod accounting of one group-scheduled JobSet and
 * the decision to release its barrier, with no I/O.
 *
 * The caller (the controller's watch loop) feeds it the JobSet, the pods of
 * the JobSet as decoded watch events or LIST items, and the released attempt
 * read back from the ConfigMap `<jobset>-group-scheduling` (key `started`).
 * group_tracker_decide() then says whether to write a release now. Time is
 * whatever integer the caller passes as `seq`; the tracker reads no clock.
 *
 * EPOCH. The JobSet's current generation G (the label muster.dev/gang-
 * generation of its targeted pod templates, raised by the webhook on every
 * resume) and attempt A (status.restarts) make its epoch, group_epoch(G, A).
 * Both only grow, so epochs are ordered as they happened; a barrier passes
 * for a release of its JobSet at or above its own epoch.
 *
 * STARTED. A pod counts as started for epoch (G, A) when all of these hold:
 *   - its labels jobset.sigs.k8s.io/jobset-name and jobset-uid name this
 *     JobSet (a JobSet deleted and made again under the same name has a new
 *     uid, and the old one's pods, still being removed, do not count);
 *   - its labels jobset.sigs.k8s.io/restart-attempt and muster.dev/gang-
 *     generation are A and G: pods of an older attempt are being deleted,
 *     pods of an older generation were deleted by a suspend, and a release
 *     of (G, A) must not be earned by them;
 *   - its replicated job is targeted (the others have no barrier and are not
 *     part of the expected count);
 *   - it is bound to a node (spec.nodeName): before that it holds no node and
 *     proves nothing about capacity;
 *   - the barrier init container is running, or has passed (terminated with
 *     exit code 0), or the pod phase is Running or Succeeded (the barrier is
 *     behind it). Running is the point of the whole feature: the node exists,
 *     images are pulled, the pod has its IP and waits only for the release. A
 *     waiting barrier (image pull, ContainerCreating) is not there yet. A pod
 *     past its barrier must count too, or a group whose release was written
 *     but not recorded (crash in between) could never be complete again;
 *   - the barrier did not fail (terminated with a non-zero code: timed out or
 *     broke), its phase is not Failed, it is not being deleted
 *     (deletionTimestamp) and no DELETED event was seen for it: such a pod
 *     will not run the workload, and the Job controller makes a replacement
 *     which must be waited for.
 *
 * RELEASE. decide() answers RELEASE(E) exactly when the tracker has a full
 * picture (one LIST applied since creation, none in progress, the released
 * epoch read back), the JobSet has a group config, the expected count is
 * above zero, started == expected for the current epoch E, E is not
 * released (released epoch < E, or none) and no release of E is pending.
 * It then marks E pending, so a second decide() does not answer RELEASE
 * again; the caller reports the write with release_done() or
 * release_failed(). More started than expected is an ANOMALY (a bug or a
 * changed spec), never a release.
 *
 * IDEMPOTENCE. The record of a pod is a function of the events for its uid:
 * the one with the highest resourceVersion wins, and a DELETED is final (uids
 * are never reused) and kept as a tombstone. Applying an event twice, or
 * events of a uid in any order, ends in the same record whenever
 * resourceVersions are numeric, which they are from every apiserver today.
 * A re-list (relist_begin, the LIST items as ADDED, relist_end) forgets every
 * pod, tombstones included, that the LIST did not contain.
 *
 * Ownership: the tracker copies what it needs from every argument and keeps
 * no pointer to them. It is not thread-safe: one thread per tracker.
 */
#ifndef MUSTER_GROUP_TRACKER_H
#define MUSTER_GROUP_TRACKER_H

#include <stddef.h>
#include <stdint.h>

#include "group_decode.h"

struct group_tracker;

/* The epoch of a generation and an attempt: ordered as the pair (generation
 * first), which is the order they happen in since both only grow. */
static inline uint64_t group_epoch(uint32_t generation, uint32_t attempt)
{
	return (uint64_t)generation << 32 | attempt;
}

static inline uint32_t group_epoch_attempt(uint64_t epoch)
{
	return (uint32_t)epoch;
}

static inline uint32_t group_epoch_generation(uint64_t epoch)
{
	return (uint32_t)(epoch >> 32);
}

/* Largest expected count and pod capacity a tracker accepts. */
#define GROUP_TRACKER_PODS_MAX 1000000u

/* Builds a tracker for `jobset` holding at most `max_pods` pod records
 * (tombstones included; 0 means twice the expected count plus 64, at least
 * 1024). Returns NULL and sets *cause (malloc'ed, the caller frees; NULL if
 * memory ran out) when the JobSet cannot be tracked: expected count above
 * GROUP_TRACKER_PODS_MAX or above max_pods, or no memory. cause must not be
 * NULL. On failure nothing is left allocated. */
struct group_tracker *group_tracker_new(const struct jobset_model *jobset, size_t max_pods, char **cause);

/* Frees the tracker and all its records. NULL is accepted. */
void group_tracker_free(struct group_tracker *tracker);

/* Applies a newer version of the JobSet. The uid, the replicated job names
 * and the targeted set must be those given to group_tracker_new (the spec is
 * immutable there; a JobSet deleted and made again has a new uid and needs a
 * new tracker): else -1 with *cause set (cause must not be NULL). An epoch
 * (generation, restarts) above the current one makes it current: records of
 * older epochs are dropped and the first/last start marks start over, at
 * `seq` for pods of the new epoch already started. A lower one is a stale
 * JobSet event and leaves the epoch alone. The expected count is
 * recomputed (replicas may change); a count the tracker cannot hold is an
 * error. Returns 0. */
int group_tracker_set_jobset(struct group_tracker *tracker, const struct jobset_model *jobset, uint64_t seq,
			     char **cause);

/* Records that epochs up to `epoch` are released, as read back from the
 * ConfigMap at start or after a write. Released only grows: a lower value
 * is ignored, as a barrier passes for any release >= its own epoch. */
void group_tracker_set_released(struct group_tracker *tracker, uint64_t epoch);

/* Records that the ConfigMap (or its key) does not exist: nothing released
 * yet. Until this or set_released() is called, decide() never releases. */
void group_tracker_set_none_released(struct group_tracker *tracker);

/* What apply_pod() did. */
enum group_apply_result {
	GROUP_APPLY_CHANGED, /* the pod's record was created, updated or tombstoned */
	GROUP_APPLY_UNCHANGED, /* duplicate, stale (older resourceVersion) or after DELETED */
	GROUP_APPLY_IGNORED, /* not a pod of this JobSet (name or uid), older epoch, untargeted job */
	GROUP_APPLY_FULL, /* a new record would exceed max_pods, or no memory: dropped
			   * (a dropped pod can only hold the count lower, never release early) */
};

/* Applies one pod event. `seq` is the caller's notion of now (e.g. ms since
 * start); it is recorded when the pod becomes started. ADDED and MODIFIED
 * are treated alike (an ADDED for a known uid is an update, a MODIFIED for an
 * unknown one creates it). A DELETED of an unknown uid leaves a tombstone so
 * that an older event arriving after it cannot bring the pod back. */
enum group_apply_result group_tracker_apply_pod(struct group_tracker *tracker, const struct group_pod *pod,
						enum group_event event, uint64_t seq);

/* Starts a re-list: every record becomes unconfirmed until the LIST's items
 * (applied as GROUP_EVENT_ADDED) confirm it. decide() does not release
 * while a re-list is in progress, since unconfirmed records may be pods
 * deleted during the gap. */
void group_tracker_relist_begin(struct group_tracker *tracker);

/* Ends a re-list: forgets every record the LIST did not confirm. The watch
 * that follows must resume from the LIST's resourceVersion (as every
 * informer does): an event older than the LIST for a uid it forgot would
 * bring that pod back. */
void group_tracker_relist_end(struct group_tracker *tracker);

enum group_action {
	GROUP_ACTION_IDLE, /* no group config, or nothing to wait for */
	GROUP_ACTION_UNKNOWN, /* no LIST yet, a re-list in progress, or released epoch not read back */
	GROUP_ACTION_WAIT, /* fewer started than expected */
	GROUP_ACTION_RELEASE, /* write the release of `epoch` now */
	GROUP_ACTION_PENDING, /* the release of `epoch` was handed out and not yet reported */
	GROUP_ACTION_RELEASED, /* `epoch` is released: nothing to do */
	GROUP_ACTION_ANOMALY, /* more started than expected: hold and report */
};

struct group_decision {
	enum group_action action;
	uint32_t attempt; /* the current attempt */
	uint32_t generation; /* the current generation */
	uint64_t epoch; /* group_epoch(generation, attempt) */
	uint64_t expected;
	uint64_t started; /* started pods of the current attempt */
	uint64_t tracked; /* live records (not tombstones) of the current attempt */
	int has_starts; /* first_start/last_start are set */
	uint64_t first_start; /* seq of the first pod of this attempt to become started */
	uint64_t last_start; /* seq of the latest one */
	uint64_t timeouts; /* pods of the current attempt whose barrier timed out (exit code 3) */
};

/* Fills *decision from the current state; on RELEASE marks the attempt
 * pending as described at the top. */
void group_tracker_decide(struct group_tracker *tracker, struct group_decision *decision);

/* The same answer as decide() would give, without marking anything: for
 * reports (metrics) that must not change what the controller does. */
void group_tracker_peek(const struct group_tracker *tracker, struct group_decision *decision);

/* The write of the release of `epoch` succeeded: same as set_released(). */
void group_tracker_release_done(struct group_tracker *tracker, uint64_t epoch);

/* The write of the release of `epoch` failed: the next decide() may answer
 * RELEASE again (the write never happened, so this is not a second release). */
void group_tracker_release_failed(struct group_tracker *tracker, uint64_t epoch);

/* A started pod of the current attempt, for pushing the release to it. */
struct group_started_pod {
	const char *name; /* valid until the next call that changes the tracker */
	int ip_family; /* 0, 4 or 6 */
	const uint8_t *ip;
	int at_barrier; /* its barrier is running: it still waits for a release */
};

/* Calls `fn` once for every started pod of the current attempt, in no
 * particular order, until fn returns non-zero (which is then returned). */
int group_tracker_foreach_started(const struct group_tracker *tracker,
				  int (*fn)(const struct group_started_pod *pod, void *context),
				  void *context);

/* Pods whose barrier was first seen timed out (GROUP_BARRIER_TIMED_OUT)
 * since the previous call, of any attempt; each pod is counted once in the
 * tracker's life. Lets the caller report timeouts exactly once. A new
 * tracker (after a controller restart) counts the pods it finds again. */
uint64_t group_tracker_take_timeouts(struct group_tracker *tracker);

/* Bytes the tracker has allocated now (records, table, itself), as requested
 * from malloc; allocator overhead comes on top (see group_core.md). */
size_t group_tracker_memory(const struct group_tracker *tracker);

/* Records held now, tombstones included. */
size_t group_tracker_records(const struct group_tracker *tracker);

/* Name of an action for logs and tests ("release", ...). */
const char *group_action_name(enum group_action action);

#endif
