/*
 * pod_pin: the pin route's pure half (POST /pin, pods and Jobs CREATE):
 * which pod or Job of which JobSet this is, and the JSON Patch that
 * confines it to the domain the placement of record gives it
 * (docs/placement-live.md, step 4).
 *
 * A pod is named by the labels JobSet and the Job controller put on it:
 * jobset.sigs.k8s.io/jobset-name, jobset-uid, replicatedjob-name, job-index,
 * and its completion index (the annotation, or the label of that name,
 * batch.kubernetes.io/job-completion-index). A pod lacking one is refused
 * with the name of what it lacks. Its restart attempt is the label
 * jobset.sigs.k8s.io/restart-attempt (0 when absent): only the record of
 * that attempt pins it.
 *
 * The patch adds each key=value of the selector to spec.nodeSelector (made
 * when absent); a pod that selects them all already gets no op. A key the
 * pod selects with another value is replaced when its annotation
 * MUSTER_ANNOTATION_JOB_SELECTOR holds that key=value (its Job's pod
 * template got it from the pin route: pod_pin_job_share_patch); otherwise it
 * is a contradiction muster does not resolve: refused, naming both values.
 * A pair of that annotation the selector does not name, still selected by
 * the pod, is removed (the share came from another record's domains). No
 * I/O, no state; errors are -1 and a malloc'd cause.
 */
#ifndef MUSTER_POD_PIN_H
#define MUSTER_POD_PIN_H

#include <stdint.h>

#include "jobset_pod.h"

struct cJSON;

/* The pod's place (lib/muster/jobset_pod.h), every label the record's
 * lookup needs present and valid. */
int pod_pin_key(const struct cJSON *pod, struct jobset_pod *key, char **cause);

/* The same for a Job JobSet made (its labels; completion left 0), and how
 * many pods it makes: spec.completions, 1 when neither completions nor
 * parallelism is set, 0 when only parallelism is (a work queue: its pods
 * are pinned one by one). */
int pod_pin_job_key(const struct cJSON *job, struct jobset_pod *key, uint32_t *pods, char **cause);

/* Ops appended to `patch` (a cJSON array) for `selector` ("k=v,k=v"; ""
 * adds nothing). */
int pod_pin_patch(const struct cJSON *pod, const char *selector, struct cJSON *patch, char **cause);

/* A Job all of whose pods the record sends to one domain is pinned as a
 * whole: the same ops on its pod template (spec.template.spec.nodeSelector),
 * and the label MUSTER_LABEL_JOB_PINNED on its pod template, so that the pod
 * route does not see its pods again (docs/placement-live.md, step 4). */
int pod_pin_job_patch(const struct cJSON *job, const char *selector, struct cJSON *patch, char **cause);

/* A Job whose pods go to several domains of one depth, pinned one by one:
 * `selector`, the domain of most of them (topo_record_job_template), merged
 * into its pod template's nodeSelector as for a Job pinned whole, and the
 * pairs that added recorded in its pod template's annotation
 * MUSTER_ANNOTATION_JOB_SELECTOR, so that the pod route answers the pods of
 * that domain with no patch and changes only those values for the others
 * (pod_pin_patch). A template whose own selector contradicts `selector`, or
 * holds it already, gets no share (pod_pin_job_unpinned's ops only). A
 * MUSTER_LABEL_JOB_PINNED it carries is removed. 0, or -1 out of memory. */
int pod_pin_job_share_patch(const struct cJSON *job, const char *selector, struct cJSON *patch);

/* A Job whose pods are pinned one by one with no share: the ops that remove
 * MUSTER_LABEL_JOB_PINNED (its pods would skip the pod route unpinned) and
 * MUSTER_ANNOTATION_JOB_SELECTOR (the pod route would change values of the
 * template's own) from its pod template when it carries them, muster having
 * not put them there; 0, or -1 out of memory. */
int pod_pin_job_unpinned(const struct cJSON *job, struct cJSON *patch);

#endif
