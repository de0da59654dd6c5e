/*
 * jobset_pod: a pod's place in its JobSet (or a Job's), from the labels
 * JobSet and the Job controller put on it. The one decoder of that place:
 * the gang loop counts pods by it (controller/group_decode), placement keys
 * the pods it has pinned by it (controller/placement/mirror), and the pin
 * route finds a pod's record by it (webhook/pod_pin).
 *
 * The labels: jobset.sigs.k8s.io/jobset-name, jobset-uid,
 * replicatedjob-name, job-index and restart-attempt; muster's
 * muster.dev/gang-generation; the completion index from the annotation
 * batch.kubernetes.io/job-completion-index (or the label of that name,
 * which newer Job controllers also write). Every string is bounded and
 * every number a decimal in 0..2^31-1; a number that is present but not
 * one is kept as JOBSET_POD_BAD, so that each reader applies its own rule
 * (the gang loop ignores a bad attempt, the pin route refuses it). Pure;
 * errors are -1 and a malloc'd cause (docs/errors.md).
 */
#ifndef MUSTER_JOBSET_POD_H
#define MUSTER_JOBSET_POD_H

#include <stddef.h>
#include <stdint.h>

#include "model_fields.h"

struct cJSON;

enum jobset_pod_number {
	JOBSET_POD_ABSENT, /* no such label (or annotation), or "" */
	JOBSET_POD_BAD, /* present, not a decimal in 0..2^31-1 */
	JOBSET_POD_SET, /* present and valid: the value is meaningful */
};

struct jobset_pod {
	char jobset[MODEL_LABEL_MAX + 1]; /* "" when absent */
	char uid[MODEL_UID_MAX + 1];
	char replicated_job[MODEL_LABEL_MAX + 1];
	enum jobset_pod_number job_index_state, completion_state, attempt_state, generation_state;
	uint32_t job_index, completion, attempt, generation; /* 0 unless _SET */
};

/* Decodes from `metadata` (the object's metadata; NULL reads as empty).
 * -1 only when the labels are not an object, or one of the
 * strings above is not a string or is too long; `kind` ("pod", "Job") names
 * the object in the cause. */
int jobset_pod_decode(const struct cJSON *metadata, const char *kind, struct jobset_pod *out, char **cause);

/* What the pin route needs before it reads a record: a JobSet's name (a
 * DNS-1123 subdomain), a uid, a replicated job's name, a job index, with
 * need_completion a completion index, and an attempt that is valid when
 * present. -1 and a cause naming the first label that fails. */
int jobset_pod_require(const struct jobset_pod *pod, const char *kind, int need_completion, char **cause);

/* A pod's key among the pods of its JobSet's attempt:
 * "uid/attempt/replicated-job/job-index/completion-index". Returns 0, or -1
 * when it does not fit in `size` (JOBSET_POD_KEY_MAX is always enough). */
#define JOBSET_POD_KEY_MAX (MODEL_UID_MAX + MODEL_LABEL_MAX + 3 * 10 + 5)
int jobset_pod_key(const char *uid, uint32_t attempt, const char *replicated_job, uint32_t job_index,
		   uint32_t completion, char *key, size_t size);

#endif
