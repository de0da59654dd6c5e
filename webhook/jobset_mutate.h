/*
 * jobset_mutate: the RFC 6902 JSON Patch that turns a group-scheduled
 * JobSet into one whose targeted pods wait at muster's barrier.
 *
 * For every targeted replicated job's pod template it adds, each only when
 * missing (so admitting an already-injected object yields an empty patch):
 *   - the label muster.dev/group-scheduling: "true" (the controller's pod
 *     watch selects on it);
 *   - the barrier init container group-scheduling-init, placed after the
 *     leading sidecar-style init containers (restartPolicy: Always) and
 *     before every other init container. Sidecars first, because a sidecar
 *     is meant to run beside the pod's containers from the start (a mesh
 *     proxy that intercepts inbound traffic would otherwise refuse the
 *     pushed release, a log shipper would miss the barrier's log) and does
 *     not block the init containers after it; the regular init containers
 *     after the barrier, because their work (downloads, rendezvous) belongs
 *     to the group's start. Its args come from the settings
 *     (--timeout), the attempt from the restart-attempt label through the
 *     downward API, the push listener on the pod IP and the per-JobSet token;
 *     small requests (it fits any node), non-root, read-only root file system;
 *   - the optional ConfigMap volume group-scheduling (ConfigMap
 *     `<jobset>-group-scheduling`), mounted read-only at /mnt/group-scheduling
 *     in the barrier only, without subPath (subPath mounts never update).
 * and on the JobSet the annotation muster.dev/barrier-token when absent.
 * The barrier also gets its generation (the pod label muster.dev/gang-
 * generation) and its JobSet's uid (the label jobset.sigs.k8s.io/jobset-uid)
 * through the downward API: a release names both (lib/muster/release_line.h).
 *
 * The JobSet must have passed jobset_validate_create() (the caller's job);
 * what it needs and does not find is still refused, never guessed.
 *
 * No I/O, no state, no randomness: the token is an argument.
 * Failure: returns 0 and *patch (a cJSON array, possibly empty, owned by
 * the caller), or -1 with *patch NULL and *cause a malloc'd sentence.
 */
#ifndef MUSTER_JOBSET_MUTATE_H
#define MUSTER_JOBSET_MUTATE_H

#include "group_config.h"

struct jobset_mutate_options {
	const char *barrier_image;
	const char *image_pull_policy; /* e.g. "IfNotPresent" */
	unsigned barrier_port; /* 0: no push listener, release by the volume only */
	const char *cpu_request; /* e.g. "10m" */
	const char *memory_request; /* e.g. "16Mi" */
	const char *memory_limit; /* e.g. "32Mi"; NULL or "": none */
};

struct cJSON;
struct jobset_admission;

/* `a` is the JobSet's admission model (jobset_admission.h); `tree` the
 * JobSet as the patch finds it (the placement gate's copy when the gate
 * changed it, else a->tree): the ops' paths address it. `token` (checked
 * with jobset_token_valid by the caller) is written only when the JobSet
 * has no token annotation; the existing one is used otherwise. */
int jobset_mutate(const struct jobset_admission *a, const struct cJSON *tree,
		  const struct jobset_mutate_options *options, const char *token, struct cJSON **patch,
		  char **cause);

/* The patch for an UPDATE of a group-scheduled JobSet (`old` is the stored
 * object's model, `a` the new one's and `tree` as for jobset_mutate(); the
 * stored generation is read under the new settings, and whether it is a
 * resume from `tree`: a resume the placement gate holds is none).
 *
 * A resume (spec.suspend true in the stored object, not in the new one)
 * starts a new gang: the label muster.dev/gang-generation of every targeted
 * pod template, and the JobSet's annotation of the same name, are set to
 * one more than the generation of record (the highest of the stored
 * annotation, the stored labels and the new annotation). JobSet copies the
 * labels into the child Jobs' pod templates when it resumes them, so the
 * new pods carry the new generation, and a release of the generation
 * before (the ConfigMap still says the group started) does not let them
 * through while their siblings are not scheduled yet. The annotation keeps
 * the count when the labels go back while suspended (Kueue restores the pod
 * templates it admitted with when it evicts a workload).
 *
 * Any other update only keeps the annotation of record (restored when the
 * update drops or lowers it). A generation muster cannot read is refused
 * (-1 with *cause), never guessed. Same ownership as jobset_mutate(). */
int jobset_mutate_update(const struct jobset_admission *old, const struct jobset_admission *a,
			 const struct cJSON *tree, struct cJSON **patch, char **cause);

#endif
