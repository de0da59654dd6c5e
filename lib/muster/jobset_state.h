/*
 * jobset_state: a JobSet's identity and state, the half of the JobSet model
 * that always decodes. Which JobSet this is (namespace, name, uid, creation
 * time) and where it stands (suspended, restart attempt, finished, muster's
 * placement annotations) are each read on their own, so that a JobSet whose
 * spec muster cannot count (lib/muster/jobset_model) or place
 * (lib/topo/topo_jobset) is still seen to be suspended, to restart and to
 * finish. Its counted spec is jobset_model's, which reads its identity
 * through this decoder too.
 *
 * Every string is bounded, every number range-checked; a field that is not
 * what the API says is taken as absent, never as a failure of the whole.
 * Pure; keeps nothing.
 */
#ifndef MUSTER_JOBSET_STATE_H
#define MUSTER_JOBSET_STATE_H

#include <stdint.h>

#include "model_fields.h"

/* The longest waiting reason kept: the longest muster writes. */
#define JOBSET_STATE_REASON_MAX 899
/* An RFC 3339 time as the apiserver writes it ("2026-11-28T15:21:47Z"). */
#define JOBSET_STATE_TIME_MAX 35

struct cJSON;

struct jobset_state {
	char namespace[MODEL_LABEL_MAX + 1];
	char name[MODEL_LABEL_MAX + 1];
	char uid[MODEL_UID_MAX + 1];
	char created[JOBSET_STATE_TIME_MAX + 1]; /* metadata.creationTimestamp, "" when absent */
	int suspended; /* spec.suspend is JSON true */
	int has_restarts; /* status.restarts is a count in 0..2^31-1 */
	uint32_t restarts; /* the current restart attempt; 0 unless has_restarts */
	int finished; /* a condition Completed or Failed with status "True" */
	/* The annotation MUSTER_ANNOTATION_PLACEMENT: "" when absent (or not a
	 * short string), else its value ("waiting", "placed", or another). */
	char placement[16];
	char placement_reason[JOBSET_STATE_REASON_MAX + 1]; /* MUSTER_ANNOTATION_PLACEMENT_REASON, "" */
	char placement_skipped[16]; /* MUSTER_ANNOTATION_PLACEMENT_SKIPPED (a short word), "" */
};

/* Decodes a stored JobSet (an informer's object, a GET). -1 and a cause
 * only when it has no valid identity: metadata.name, metadata.namespace
 * and metadata.uid, each a non-empty string within its bound. */
int jobset_state_decode(const struct cJSON *object, struct jobset_state *out, char **cause);

#endif
