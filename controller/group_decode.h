/*
 * group_decode: JobSets and pods from the API, as JSON, turned into the plain
 * structs the group-start accounting works on.
 *
 * This is the only module of the group-start core that sees JSON. cJSON trees
 * are built and freed here and never handed out: callers get fixed-size
 * structs with every string bounded and every number range-checked, so the
 * accounting (group_expect, group_tracker) cannot be fed a tree it has to
 * defend against. The module does no I/O and keeps no state.
 *
 * Failure: every decoder returns 0, or -1 and sets *cause to a malloc'ed
 * sentence naming the field that is wrong, which the caller frees with free().
 * *cause is NULL only when memory for the sentence itself ran out. On failure
 * the output struct holds no meaning (it owns nothing, so nothing leaks).
 */
#ifndef MUSTER_GROUP_DECODE_H
#define MUSTER_GROUP_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "jobset_model.h"
#include "kjson.h"
#include "model_fields.h"
#include "muster_api.h"

/* State of the barrier init container, from status.initContainerStatuses. */
enum group_barrier_state {
	GROUP_BARRIER_ABSENT, /* no status for it (yet), or no state in it */
	GROUP_BARRIER_WAITING, /* created, not started: image pull, ContainerCreating */
	GROUP_BARRIER_RUNNING, /* the barrier process is up and holding */
	GROUP_BARRIER_PASSED, /* terminated with exit code 0: released */
	GROUP_BARRIER_FAILED, /* terminated with another code: an error */
	GROUP_BARRIER_TIMED_OUT, /* terminated with MUSTER_BARRIER_EXIT_TIMEOUT: its own timeout */
};

enum group_pod_phase {
	GROUP_PHASE_UNKNOWN, /* absent, "Unknown", or a value this code does not know */
	GROUP_PHASE_PENDING,
	GROUP_PHASE_RUNNING,
	GROUP_PHASE_SUCCEEDED,
	GROUP_PHASE_FAILED,
};

/* A pod, reduced to what the group-start accounting needs. It is a transient
 * value (about 500 bytes); the tracker keeps a far smaller record per pod. */
struct group_pod {
	char uid[MODEL_UID_MAX + 1];
	char namespace[MODEL_LABEL_MAX + 1];
	char name[MODEL_OBJECT_NAME_MAX + 1];
	char jobset_name[MODEL_LABEL_MAX + 1]; /* label jobset.sigs.k8s.io/jobset-name, "" if absent */
	char jobset_uid[MODEL_UID_MAX + 1]; /* label jobset.sigs.k8s.io/jobset-uid, "" if absent */
	char replicated_job[MODEL_LABEL_MAX + 1]; /* label jobset.sigs.k8s.io/replicatedjob-name */
	/* label jobset.sigs.k8s.io/restart-attempt holds a valid number, and
	 * muster.dev/gang-generation is absent or one too */
	int has_attempt;
	uint32_t attempt;
	uint32_t generation; /* label muster.dev/gang-generation, 0 when absent */
	int bound; /* spec.nodeName is set */
	int deleting; /* metadata.deletionTimestamp is set */
	enum group_barrier_state barrier;
	/* The barrier's lastState terminated with MUSTER_BARRIER_EXIT_TIMEOUT: it
	 * timed out and kubelet restarted it in place (restartPolicy OnFailure,
	 * JobSet's default), so `barrier` no longer says so. */
	int barrier_timed_out_before;
	enum group_pod_phase phase;
	int ip_family; /* 0 (no status.podIP), 4 or 6 */
	uint8_t ip[16]; /* network byte order; the first 4 bytes for IPv4 */
	int has_resource_version; /* metadata.resourceVersion is a decimal integer */
	uint64_t resource_version;
};

/* What a watch event says happened to its object. */
enum group_event {
	GROUP_EVENT_ADDED,
	GROUP_EVENT_MODIFIED,
	GROUP_EVENT_DELETED,
};

struct cJSON;

/* A JobSet as the gang loop reads it: jobset_model_decode (which reads the
 * settings from the spec field or the annotations), plus the barrier token
 * annotation (copied into token, "" when absent or too long). 0, or -1
 * with the cause. */
int group_jobset_decode(const struct cJSON *object, struct jobset_model *jobset, char *token,
			size_t token_size, char **cause);

/* Decodes a pod from `len` bytes of JSON. Requires metadata.uid,
 * metadata.name and metadata.namespace; everything else is optional and read
 * as described at struct group_pod. A restart-attempt label that is not a
 * decimal number in 0..KJSON_INT32_MAX, or a gang-generation label that
 * is present and not one, leaves has_attempt 0 (such a pod never counts)
 * rather than failing, since the pod still exists. */
int group_pod_decode(const char *json, size_t len, struct group_pod *out, char **cause);

/* The same, from an object the caller already parsed. */
int group_pod_from_json(const struct cJSON *object, struct group_pod *out, char **cause);

/* Decodes one line of a pod watch stream, {"type": ..., "object": {...}}.
 * type ADDED, MODIFIED or DELETED sets *event and decodes the pod; BOOKMARK
 * and ERROR are refused with a cause (the caller's stream code handles them
 * before this point). */
int group_watch_pod_decode(const char *json, size_t len, enum group_event *event, struct group_pod *out,
			   char **cause);

/* Name of an event, "ADDED"... for logs and tests. */
const char *group_event_name(enum group_event event);

#endif
