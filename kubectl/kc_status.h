/*
 * kc_status: `kubectl muster status`, its pure core: the JobSet, its pods,
 * its two ConfigMaps of record and its Events, as the API returned them,
 * made into one summary (struct kc_status), then shown as text or JSON.
 *
 *   gang start   expected pods (the controller's rule: the sum over the
 *                targeted replicated jobs of replicas x min(parallelism,
 *                completions), controller/group_expect.h), the pods of the
 *                current attempt and gang generation created, bound,
 *                started (the controller's STARTED predicate,
 *                controller/group_core.md), at the barrier, past it, timed
 *                out; the release of record (ConfigMap
 *                <jobset>-group-scheduling) and whether it releases the
 *                current attempt; a state and why not yet
 *   placement    the gate's annotation (waiting, user-held, placed), the
 *                waiting reason, the placement of record (ConfigMap
 *                <jobset>-placement, lib/topo/topo_record.h): each Job's
 *                domain (its nodeSelector) and pods
 *   events       the last KC_STATUS_EVENTS_MAX Events on the JobSet, oldest
 *                first
 *
 * The pods are read here for what this summary needs only (labels, node,
 * phase, the barrier container's state): the controller's own pod decoder
 * (controller/group_decode) is that program's. Every string copied is
 * bounded; numbers that are not numbers count as absent. Pure: 0, or -1
 * and a malloc'd cause (docs/errors.md) when the JobSet itself cannot be
 * decoded.
 */
#ifndef MUSTER_KC_STATUS_H
#define MUSTER_KC_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model_fields.h"

#define KC_STATUS_EVENTS_MAX 10
#define KC_STATUS_JOBS_MAX 256 /* Jobs listed from a placement of record */
#define KC_STATUS_TEXT_MAX 1024 /* a reason, a message, a selector */

enum kc_gang_state {
	KC_GANG_NONE, /* no gang start asked for (or no pod expected) */
	KC_GANG_SUSPENDED, /* the JobSet is suspended: no pod runs yet */
	KC_GANG_WAITING, /* fewer pods started than expected */
	KC_GANG_TIMED_OUT, /* a barrier timed out before the release */
	KC_GANG_ANOMALY, /* more started than expected: the controller holds */
	KC_GANG_RELEASING, /* every pod started, the release not yet recorded */
	KC_GANG_RELEASED, /* the release of record covers the current attempt */
};

struct kc_gang {
	enum kc_gang_state state;
	char why[KC_STATUS_TEXT_MAX]; /* "" when released */
	uint64_t expected, created, bound, started, at_barrier, passed, timed_out;
	int has_timeout;
	uint32_t timeout_seconds;
	/* The release of record. */
	int record_found, record_ours, record_has_release;
	uint32_t released_attempt, released_generation;
	char record_time[40]; /* its last write (managedFields), "" when unknown */
};

struct kc_job_domain {
	char replicated_job[MODEL_LABEL_MAX + 1];
	uint32_t job_index, pods, domains; /* domains: distinct selectors of its runs */
	char selector[KC_STATUS_TEXT_MAX]; /* of its first run; "" anywhere */
};

struct kc_placement {
	char state[MODEL_LABEL_MAX + 1]; /* the annotation, "" when not gated */
	char reason[KC_STATUS_TEXT_MAX];
	int record_found, record_ours, record_readable;
	uint32_t record_attempt;
	size_t job_count, jobs_left_out;
	struct kc_job_domain jobs[KC_STATUS_JOBS_MAX];
};

struct kc_event {
	char type[16], reason[128], message[KC_STATUS_TEXT_MAX], time[40];
	uint32_t count;
};

struct kc_status {
	char namespace[MODEL_LABEL_MAX + 1], name[MODEL_LABEL_MAX + 1], uid[MODEL_UID_MAX + 1];
	uint32_t attempt, generation;
	int suspended;
	struct kc_gang gang;
	struct kc_placement placement;
	size_t event_count;
	struct kc_event events[KC_STATUS_EVENTS_MAX];
};

struct cJSON;

/* The summary of `jobset` (a JobSet object), `pods` and `events` (LISTs:
 * {"items": [...]}, NULL for none), `release` and `placement_record` (the
 * ConfigMaps, NULL when absent). */
int kc_status_build(const struct cJSON *jobset, const struct cJSON *pods, const struct cJSON *release,
		    const struct cJSON *placement_record, const struct cJSON *events, struct kc_status *out,
		    char **cause);

/* The name of a gang state ("waiting", "timed-out", ...). */
const char *kc_gang_state_name(enum kc_gang_state state);

void kc_status_print(FILE *out, const struct kc_status *status);

/* The summary as one JSON object (the caller deletes it), NULL when memory
 * ran out. */
struct cJSON *kc_status_json(const struct kc_status *status);

#endif
