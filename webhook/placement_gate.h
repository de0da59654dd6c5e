/*
 * placement_gate: the webhook's half of placement in the cluster
 * (docs/placement-live.md): no Job and no pod of a JobSet that asks for a
 * placement exists before the controller has placed it.
 *
 * A JobSet asks for a placement when it carries any topology annotation of
 * lib/topo/topo_jobset.h (Kueue's podset-*, Volcano's network topology or
 * partitions in muster's annotations, muster's JobSet-wide level, upstream
 * JobSet's exclusive-topology) that constrains where pods go. It is left to
 * others when Kueue manages it (the label kueue.x-k8s.io/queue-name) or a
 * pod template names Volcano's scheduler: the model's owner says which
 * (jobset_admission.h, which decodes the request once per review).
 *
 * CREATE: a malformed request is refused with the decoder's sentence, as
 * muster-topology would say it; else
 *   - spec.suspend: true, and the annotation muster.dev/placement: waiting;
 *     a JobSet created suspended keeps its suspend and gets user-held (placed
 *     only once the user resumes it);
 *   - the label muster.dev/placement: "true" on every replicated job's pod
 *     template (the pod route pins the pods carrying it).
 * A placement annotation the user wrote is overwritten: only muster says
 * "placed".
 * UPDATE: a resume (suspend false) of a JobSet not placed yet is held
 * (suspend set back to true, the annotation waiting); an update that drops
 * the annotation gets the stored one back. The controller's own resume
 * writes "placed" and suspend false in one patch, which passes when
 * `from_controller` (the request's user is the controller's); from anyone
 * else "placed" is not believed: the stored state is kept and a resume held.
 * A placed JobSet may go back to waiting while suspended (the controller
 * places it again after a node is lost). The pin route's mark of a Job
 * pinned whole (muster.dev/job-pinned) is removed from a pod template at
 * CREATE, and at UPDATE when the update adds it.
 *
 * Both return 0 and, when something changes, *modified: a copy of the
 * JobSet with the changes made (so that the barrier's patch is computed on
 * top of it) and the ops appended to `patch`; else *modified NULL. -1 with
 * *cause (malloc'd) refuses the JobSet. No I/O, no state.
 */
#ifndef MUSTER_PLACEMENT_GATE_H
#define MUSTER_PLACEMENT_GATE_H

struct cJSON;
struct jobset_admission;

/* `a` is the JobSet's admission model (jobset_admission.h). */
int placement_gate_create(const struct jobset_admission *a, struct cJSON *patch, struct cJSON **modified,
			  char **warning, char **cause);

/* `old` is the stored object's model, `a` the new one's. */
int placement_gate_update(const struct jobset_admission *old, const struct jobset_admission *a,
			  int from_controller, struct cJSON *patch, struct cJSON **modified, char **cause);

#endif
