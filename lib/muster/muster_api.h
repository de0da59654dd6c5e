/*
 * muster_api: muster's contract with the cluster, each name once.
 *
 * Every label, annotation, container, volume, mount path, ConfigMap name rule
 * and key, environment variable and exit code that more than one party reads
 * (the webhook writes them, the controller and the barrier read them, users
 * write some of them) is defined here and nowhere else; so are the upstream
 * names (JobSet's labels, Kueue's annotations) muster reads. The e2e suite
 * reads this file too (e2e/muster_api.py parses its #define lines), so a
 * name changed here changes for the tests as well.
 *
 * A name that appears in a JSON Pointer (a JSON Patch path) has a _POINTER
 * twin, built from the same words, with '/' escaped as "~1" (RFC 6901).
 *
 * The wire format of the pushed release line is release_line.h's.
 */
#ifndef MUSTER_API_H
#define MUSTER_API_H

/* --- Group scheduling (gang start) ------------------------------------- */

/* The JobSet annotations of the group-scheduling settings, for clusters where
 * the JobSet CRD prunes spec.groupSchedulingConfig (lib/muster/group_config.h):
 * "<seconds>" and "<name>,<name>". */
#define MUSTER_ANNOTATION_GROUP_TIMEOUT "muster.dev/group-scheduling-timeout"
#define MUSTER_ANNOTATION_GROUP_TARGETS "muster.dev/group-scheduling-targets"

/* Label (value "true") on the pod template of every targeted replicated job;
 * the controller's pod watch selects on it. */
#define MUSTER_LABEL_GROUP_SCHEDULING "muster.dev/group-scheduling"
#define MUSTER_LABEL_GROUP_SCHEDULING_POINTER "muster.dev~1group-scheduling"

/* The per-JobSet push token, written by the webhook at creation
 * (webhook/webhook.md says why not a Secret), and the barrier's environment
 * variable that carries it. */
#define MUSTER_ANNOTATION_BARRIER_TOKEN "muster.dev/barrier-token"
#define MUSTER_ANNOTATION_BARRIER_TOKEN_POINTER "muster.dev~1barrier-token"
#define MUSTER_ENV_BARRIER_TOKEN "MUSTER_BARRIER_TOKEN"

/* muster's count of a JobSet's resumes (suspend true -> false). The webhook
 * raises it on every resume: as a label on the targeted pod templates (JobSet
 * copies it to the child Jobs' pods when it resumes them; the barrier reads it
 * through the downward API and the controller compares it: a release of an
 * earlier generation never lets a pod of a later one through) and as the
 * JobSet annotation of record of the same name. Absent means 0. */
#define MUSTER_LABEL_GANG_GENERATION "muster.dev/gang-generation"
#define MUSTER_LABEL_GANG_GENERATION_POINTER "muster.dev~1gang-generation"

/* The barrier init container (KEP-498's reserved name), its ConfigMap volume
 * and the volume's mount path (the barrier's default --dir). */
#define MUSTER_BARRIER_CONTAINER "group-scheduling-init"
#define MUSTER_BARRIER_VOLUME "group-scheduling"
#define MUSTER_BARRIER_MOUNT "/mnt/group-scheduling"
/* The barrier's push port (webhook --barrier-port, controller --push-port). */
#define MUSTER_BARRIER_PORT 9443
/* A number of this header as a string literal, for usage texts. */
#define MUSTER_API_TEXT(n) MUSTER_API_TEXT_(n)
#define MUSTER_API_TEXT_(n) #n

/* The release of record: the ConfigMap `<jobset>` MUSTER_CONFIGMAP_SUFFIX,
 * owned by the JobSet, with these keys: the restart attempt released, the
 * JobSet's uid, and the gang generation released. */
#define MUSTER_CONFIGMAP_SUFFIX "-group-scheduling"
#define MUSTER_CONFIGMAP_KEY_STARTED "started"
#define MUSTER_CONFIGMAP_KEY_JOBSET_UID "jobset-uid"
#define MUSTER_CONFIGMAP_KEY_GENERATION "generation"

/* Exit codes of muster-barrier. Signals follow the shell's 128+signal rule so
 * that kubelet and `kubectl describe` read them the usual way; the controller
 * reads MUSTER_BARRIER_EXIT_TIMEOUT from the container's status. */
enum muster_barrier_exit {
	MUSTER_BARRIER_EXIT_RELEASED = 0,
	MUSTER_BARRIER_EXIT_USAGE = 2,
	MUSTER_BARRIER_EXIT_TIMEOUT = 3,
	MUSTER_BARRIER_EXIT_FAILURE = 4,
	MUSTER_BARRIER_EXIT_SIGINT = 130,
	MUSTER_BARRIER_EXIT_SIGTERM = 143,
};

/* --- Topology placement (docs/topology.md) ------------------------------ */

/* muster's own JobSet/replicated-job annotations: Volcano's networkTopology
 * and partitionPolicy as JSON, and a whole-JobSet level. */
#define MUSTER_ANNOTATION_NETWORK_TOPOLOGY "muster.dev/network-topology"
#define MUSTER_ANNOTATION_PARTITION_POLICY "muster.dev/partition-policy"
#define MUSTER_ANNOTATION_TOPOLOGY_REQUIRED "muster.dev/topology-required"
#define MUSTER_ANNOTATION_TOPOLOGY_PREFERRED "muster.dev/topology-preferred"
/* The replicated jobs the JobSet-wide constraint holds (names, comma
 * separated); absent: all of them. */
#define MUSTER_ANNOTATION_TOPOLOGY_REPLICATED_JOBS "muster.dev/topology-replicated-jobs"
/* "true": Kueue's balanced placement (TASBalancedPlacement) for every
 * preferred level of the JobSet; "false" or absent: not. */
#define MUSTER_ANNOTATION_TOPOLOGY_BALANCED "muster.dev/topology-balanced"

/* Placement in the cluster (docs/placement-live.md). The JobSet annotation
 * of the gate, written by the webhook and the controller only:
 *   waiting    muster suspended the JobSet until it is placed
 *   user-held  the user created it suspended: placed once the user resumes
 *              (the resume is then held, as waiting, until it is placed)
 *   placed     the record is written and the JobSet resumed by muster */
#define MUSTER_ANNOTATION_PLACEMENT "muster.dev/placement"
#define MUSTER_ANNOTATION_PLACEMENT_POINTER "muster.dev~1placement"
#define MUSTER_PLACEMENT_WAITING "waiting"
#define MUSTER_PLACEMENT_USER_HELD "user-held"
#define MUSTER_PLACEMENT_PLACED "placed"
/* Why a JobSet waits: the placement core's sentence, written by the
 * controller while it waits (also an Event PlacementWaiting). */
#define MUSTER_ANNOTATION_PLACEMENT_REASON "muster.dev/placement-reason"
#define MUSTER_ANNOTATION_PLACEMENT_REASON_POINTER "muster.dev~1placement-reason"
/* A JobSet that asks muster for a domain but is another scheduler's to
 * place (value MUSTER_PLACEMENT_SKIPPED_VOLCANO: one replicated job has
 * schedulerName volcano): written by the webhook at admission, which warns
 * the user then; the controller says it once as a Warning Event
 * PlacementSkipped. */
#define MUSTER_ANNOTATION_PLACEMENT_SKIPPED "muster.dev/placement-skipped"
#define MUSTER_ANNOTATION_PLACEMENT_SKIPPED_POINTER "muster.dev~1placement-skipped"
#define MUSTER_PLACEMENT_SKIPPED_VOLCANO "volcano"
/* Label (value "true") on every replicated job's Job template and pod
 * template of a gated JobSet: the pin webhook (/pin) selects its Jobs and
 * pods by it. */
#define MUSTER_LABEL_PLACEMENT "muster.dev/placement"
#define MUSTER_LABEL_PLACEMENT_POINTER "muster.dev~1placement"
/* Label (value "true") the pin route puts on the pod template of a Job whose
 * pods all go to one domain, pinned whole (the template got the
 * nodeSelector): the pod webhook's objectSelector leaves out pods that carry
 * it, so they cost no admission call of their own. A label of its own, not
 * another value of MUSTER_LABEL_PLACEMENT: JobSet's resume merges the
 * JobSet's pod template labels over the Job's, which would set that one
 * back to "true", while keys the JobSet lacks stay. The gate and the Job
 * route remove it wherever muster did not put it. */
#define MUSTER_LABEL_JOB_PINNED "muster.dev/job-pinned"
#define MUSTER_LABEL_JOB_PINNED_POINTER "muster.dev~1job-pinned"
/* Annotation the pin route puts on the pod template of a Job whose pods go
 * to several domains of one depth (pinned one by one): the selector
 * ("k=v,k=v") it merged into that template's nodeSelector, the domain of
 * most of its pods (lib/topo/topo_record.h, topo_record_job_template). The
 * pod route answers a pod already in its domain with no patch (the apiserver
 * then neither applies a patch nor runs its admission chain again) and, for
 * the others, changes only values its pod template got this way. Only the
 * pairs muster added are listed; the gate and the Job route remove it
 * wherever muster did not put it. */
#define MUSTER_ANNOTATION_JOB_SELECTOR "muster.dev/job-selector"
#define MUSTER_ANNOTATION_JOB_SELECTOR_POINTER "muster.dev~1job-selector"
/* The placement of record: ConfigMap `<jobset>` MUSTER_PLACEMENT_SUFFIX,
 * owned by the JobSet, data[MUSTER_PLACEMENT_KEY] (lib/topo/topo_record.h). */
#define MUSTER_PLACEMENT_SUFFIX "-placement"
#define MUSTER_PLACEMENT_KEY "placement"
/* On the record's ConfigMap: the Jobs whose runs the controller rewrote
 * when it moved them alone (lib/topo/topo_move.h), to delete once the pod
 * route's cached copies of the old record have expired, so that JobSet
 * makes them again and their new pods are pinned by the new runs:
 * "<replicated job>/<job index>=<Job uid>@<unix seconds>" joined by ";". */
#define MUSTER_ANNOTATION_PLACEMENT_RETIRE "muster.dev/placement-retire"

/* --- Upstream names muster reads ---------------------------------------- */

/* JobSet's labels on every child Job and pod. */
#define JOBSET_LABEL_NAME "jobset.sigs.k8s.io/jobset-name"
#define JOBSET_LABEL_UID "jobset.sigs.k8s.io/jobset-uid"
#define JOBSET_LABEL_REPLICATED_JOB "jobset.sigs.k8s.io/replicatedjob-name"
#define JOBSET_LABEL_RESTART_ATTEMPT "jobset.sigs.k8s.io/restart-attempt"
#define JOBSET_LABEL_JOB_INDEX "jobset.sigs.k8s.io/job-index"
/* The Job controller's completion index of an Indexed Job's pod. */
#define JOB_ANNOTATION_COMPLETION_INDEX "batch.kubernetes.io/job-completion-index"
/* Kueue manages a JobSet carrying this label (its LocalQueue). */
#define KUEUE_LABEL_QUEUE_NAME "kueue.x-k8s.io/queue-name"
/* The scheduler name that hands a pod to Volcano. */
#define VOLCANO_SCHEDULER_NAME "volcano"

/* Upstream JobSet's exclusive placement: a node label key, on the JobSet or
 * on a replicated job's Job template (which wins): each child Job alone in
 * a domain of that label. */
#define JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY "alpha.jobset.sigs.k8s.io/exclusive-topology"

/* Kueue TAS's pod-set annotations on a replicated job's pod template, and
 * the prefix they share (any other annotation with it is refused). */
#define KUEUE_ANNOTATION_PREFIX "kueue.x-k8s.io/podset-"
#define KUEUE_ANNOTATION_REQUIRED "kueue.x-k8s.io/podset-required-topology"
#define KUEUE_ANNOTATION_PREFERRED "kueue.x-k8s.io/podset-preferred-topology"
#define KUEUE_ANNOTATION_UNCONSTRAINED "kueue.x-k8s.io/podset-unconstrained-topology"
#define KUEUE_ANNOTATION_SLICE "kueue.x-k8s.io/podset-slice-required-topology"
#define KUEUE_ANNOTATION_SLICE_SIZE "kueue.x-k8s.io/podset-slice-size"
#define KUEUE_ANNOTATION_GROUP "kueue.x-k8s.io/podset-group-name"
#define KUEUE_ANNOTATION_SLICE_CONSTRAINTS "kueue.x-k8s.io/podset-slice-required-topology-constraints"

#endif
