// jobset_reviews: the table of JobSet admission requests and whether the
// apiserver must call muster's JobSet webhooks for each (mutate and
// validate: the same conditions). "call": muster acts on it (injects,
// gates, refuses, strips a copied mark, raises the gang generation); "skip":
// muster would only allow it unchanged. A CEL error is never expected: with
// failurePolicy Fail it refuses the JobSet with a CEL message.
//
// What muster acts on is the webhook's (webhook/webhook.c): a gang start
// (lib/muster/group_config.h: spec.groupSchedulingConfig or the annotations
// muster.dev/group-scheduling-timeout and -targets), a placement request
// (webhook/placement_gate.h, lib/topo/topo_jobset.h: muster's, upstream
// JobSet's, Kueue's podset-* and the Volcano forms muster reads), and the
// placement gate's marks copied onto a JobSet it does not gate.

const USER = "jane@example.com";
const USER_GROUPS = ["system:authenticated"];
const CONTROLLER = "system:serviceaccount:muster-system:muster-controller";
const SERVICE_ACCOUNT_GROUPS = ["system:serviceaccounts", "system:serviceaccounts:muster-system", "system:authenticated"];

export const GVK = { group: "jobset.x-k8s.io", version: "v1alpha2", kind: "JobSet" };
export const GVR = { group: "jobset.x-k8s.io", version: "v1alpha2", resource: "jobsets" };

function metadataOf({ annotations, labels }) {
	const m = {};
	if (labels) m.labels = labels;
	if (annotations) m.annotations = annotations;
	return Object.keys(m).length ? m : undefined;
}

// A replicated job: Indexed, as placement wants. `job` and `pod` are the
// metadata ({ annotations, labels }) of its Job template and pod template.
function replicatedJob(name, { job, pod } = {}) {
	const template = {
		spec: {
			parallelism: 2, completions: 2, completionMode: "Indexed", backoffLimit: 0,
			template: { spec: { restartPolicy: "Never", containers: [{ name: "main", image: "busybox", command: ["true"] }] } },
		},
	};
	if (job) template.metadata = metadataOf(job);
	if (pod) template.spec.template.metadata = metadataOf(pod);
	return { name, replicas: 2, template };
}

// A JobSet as a user writes it.
function jobset({ annotations, labels, spec = {}, replicatedJobs } = {}) {
	const metadata = { name: "train", namespace: "team-a", ...metadataOf({ annotations, labels }) };
	return {
		apiVersion: "jobset.x-k8s.io/v1alpha2", kind: "JobSet", metadata,
		spec: { replicatedJobs: replicatedJobs ?? [replicatedJob("workers")], ...spec },
	};
}

// The same as stored (what an UPDATE carries): uid, resourceVersion,
// status.
function stored(object, { suspend } = {}) {
	const o = structuredClone(object);
	Object.assign(o.metadata, { uid: "5c8e3d2a-0b1f-4d7e-9a61-3f2b8c4d5e6f", resourceVersion: "4711", generation: 2,
		creationTimestamp: "2026-01-01T00:00:00Z" });
	if (suspend !== undefined) o.spec.suspend = suspend;
	o.status = { restarts: 0 };
	return o;
}

const gang = { "muster.dev/group-scheduling-timeout": "300" };
const onPod = (annotations) => jobset({ replicatedJobs: [replicatedJob("workers", { pod: { annotations } })] });

// A JobSet muster placed: a gang start, a topology, the gate's marks.
function placed(state, suspend) {
	const js = jobset({
		annotations: { ...gang, "muster.dev/topology-required": "cloud.provider.com/rack", "muster.dev/placement": state },
		replicatedJobs: [replicatedJob("workers", { pod: { labels: { "muster.dev/placement": "true" } } })],
	});
	return stored(js, { suspend });
}

const create = (name, object, expect, why) => ({ name, operation: "CREATE", object, expect, why });
const update = (name, oldObject, object, expect, why, user) => ({ name, operation: "UPDATE", oldObject, object, expect, why, user });

const ROWS = [
	// A gang start, in each form muster reads.
	create("spec.groupSchedulingConfig", jobset({ spec: { groupSchedulingConfig: { timeoutAfterSeconds: 300 } } }),
		"call", "the KEP-498 field"),
	create("spec.groupSchedulingConfig empty", jobset({ spec: { groupSchedulingConfig: {} } }),
		"call", "the field alone opts in (default timeout)"),
	create("timeout annotation", jobset({ annotations: gang }), "call", "the annotation form"),
	create("timeout and targets annotations",
		jobset({ annotations: { ...gang, "muster.dev/group-scheduling-targets": "workers" } }), "call", "the annotation form"),
	create("targets annotation alone", jobset({ annotations: { "muster.dev/group-scheduling-targets": "workers" } }),
		"call", "refused by the webhook: targets without a timeout"),
	create("field and annotations both", jobset({ annotations: gang, spec: { groupSchedulingConfig: { timeoutAfterSeconds: 300 } } }),
		"call", "checked to agree"),
	create("gang annotation beside unrelated ones",
		jobset({ annotations: { "example.com/team": "a", ...gang, "kubectl.kubernetes.io/last-applied-configuration": "{}" } }),
		"call", "the annotation form"),

	// A placement request on the JobSet.
	create("muster.dev/topology-required", jobset({ annotations: { "muster.dev/topology-required": "rack" } }), "call", "JobSet-wide level"),
	create("muster.dev/topology-preferred", jobset({ annotations: { "muster.dev/topology-preferred": "rack" } }), "call", "JobSet-wide level"),
	create("muster.dev/topology-replicated-jobs alone", jobset({ annotations: { "muster.dev/topology-replicated-jobs": "workers" } }),
		"call", "placement_gate_mentions: decoded, refused without a level"),
	create("muster.dev/network-topology on the JobSet", jobset({ annotations: { "muster.dev/network-topology": "{mode: hard, highestTierAllowed: 1}" } }),
		"call", "Volcano's job-level networkTopology"),
	create("exclusive-topology on the JobSet", jobset({ annotations: { "alpha.jobset.sigs.k8s.io/exclusive-topology": "rack" } }),
		"call", "upstream JobSet's form"),
	create("exclusive-topology on the second Job template", jobset({ replicatedJobs: [replicatedJob("driver"),
		replicatedJob("workers", { job: { annotations: { "alpha.jobset.sigs.k8s.io/exclusive-topology": "rack" } } })] }),
	"call", "upstream JobSet's form, per replicated job"),

	// A placement request on a pod template: Kueue's and the Volcano forms.
	create("kueue podset-required-topology", onPod({ "kueue.x-k8s.io/podset-required-topology": "rack" }), "call", "Kueue's form"),
	create("kueue podset-preferred-topology", onPod({ "kueue.x-k8s.io/podset-preferred-topology": "rack" }), "call", "Kueue's form"),
	create("kueue podset-unconstrained-topology", onPod({ "kueue.x-k8s.io/podset-unconstrained-topology": "true" }), "call", "Kueue's form"),
	create("kueue podset-slice-required-topology and size",
		onPod({ "kueue.x-k8s.io/podset-slice-required-topology": "rack", "kueue.x-k8s.io/podset-slice-size": "2" }), "call", "Kueue's form"),
	create("kueue podset-slice-required-topology-constraints",
		onPod({ "kueue.x-k8s.io/podset-slice-required-topology-constraints": "[{topology: rack, size: 2}]" }), "call", "Kueue's form"),
	create("kueue podset-group-name", onPod({ "kueue.x-k8s.io/podset-group-name": "g" }), "call", "Kueue's form"),
	create("kueue podset-* muster does not know", onPod({ "kueue.x-k8s.io/podset-something-new": "x" }),
		"call", "refused by the webhook rather than ignored"),
	create("muster.dev/network-topology on a pod template", onPod({ "muster.dev/network-topology": "{mode: soft}" }),
		"call", "Volcano's networkTopology"),
	create("muster.dev/partition-policy on a pod template", onPod({ "muster.dev/partition-policy": "{totalPartitions: 2, partitionSize: 1}" }),
		"call", "Volcano's partitionPolicy"),
	create("Kueue-managed JobSet with a podset topology", jobset({ labels: { "kueue.x-k8s.io/queue-name": "q" },
		replicatedJobs: [replicatedJob("workers", { pod: { annotations: { "kueue.x-k8s.io/podset-required-topology": "rack" } } })] }),
	"call", "the webhook leaves it to Kueue and strips muster's marks"),

	// The gate's marks copied onto a JobSet muster does not gate (from a
	// placed JobSet's YAML): stripped, else its resumes would be held or
	// its pods and Jobs sent to /pin, which refuses them (no record). And
	// muster.dev/placement-skipped copied from a JobSet left to Volcano:
	// removed at CREATE (webhook/placement_gate.c), else the controller
	// warns PlacementSkipped about a JobSet nobody left to Volcano.
	create("copied annotation muster.dev/placement", jobset({ annotations: { "muster.dev/placement": "placed" } }),
		"call", "stripped"),
	create("copied label muster.dev/placement on a pod template",
		jobset({ replicatedJobs: [replicatedJob("workers", { pod: { labels: { "muster.dev/placement": "true" } } })] }),
		"call", "stripped; its pods would be refused by /pin"),
	create("copied label muster.dev/placement on a Job template",
		jobset({ replicatedJobs: [replicatedJob("workers", { job: { labels: { "muster.dev/placement": "true" } } })] }),
		"call", "stripped; its Jobs would be refused by /pin"),
	create("copied annotation muster.dev/placement-skipped alone",
		jobset({ annotations: { "muster.dev/placement-skipped": "volcano" } }),
		"call", "removed; else a PlacementSkipped Event says it was left to Volcano"),
	create("copied annotation muster.dev/placement-reason alone",
		jobset({ annotations: { "muster.dev/placement-reason": "rack: no one domain holds the JobSet" } }),
		"call", "removed; else kubectl shows a waiting reason for a JobSet nobody gates"),
	create("copied label muster.dev/job-pinned alone on a pod template",
		jobset({ replicatedJobs: [replicatedJob("workers", { pod: { labels: { "muster.dev/job-pinned": "true" } } })] }),
		"call", "stripped; else the pods of a later gated Job pinned one by one skip /pin"),
	create("copied annotation muster.dev/job-selector alone on a pod template",
		jobset({ replicatedJobs: [replicatedJob("workers", { pod: { annotations: { "muster.dev/job-selector": "{}" } } })] }),
		"call", "stripped; else /pin would take it for the pin route's own"),

	// Nothing muster acts on.
	create("plain JobSet", jobset(), "skip", "no request"),
	create("unrelated annotations and labels", jobset({ annotations: { "example.com/team": "a" }, labels: { app: "train" },
		replicatedJobs: [replicatedJob("workers", { job: { annotations: { "example.com/x": "1" } }, pod: { annotations: { "example.com/y": "2" } } })] }),
	"skip", "no request"),
	create("empty annotations", jobset({ annotations: {} }), "skip", "no request"),
	create("annotation muster.dev/group-scheduling", jobset({ annotations: { "muster.dev/group-scheduling": "true" } }),
		"skip", "the barrier's pod label, not a setting"),
	create("gang settings as labels", jobset({ labels: { "muster.dev/group-scheduling-timeout": "300" } }),
		"skip", "muster reads annotations only"),
	create("muster.dev/partition-policy on the JobSet", jobset({ annotations: { "muster.dev/partition-policy": "{totalPartitions: 2}" } }),
		"skip", "read on pod templates only"),
	create("kueue podset-* on the JobSet", jobset({ annotations: { "kueue.x-k8s.io/podset-required-topology": "rack" } }),
		"skip", "Kueue's are read on pod templates only"),
	create("kueue podset-* on a Job template",
		jobset({ replicatedJobs: [replicatedJob("workers", { job: { annotations: { "kueue.x-k8s.io/podset-required-topology": "rack" } } })] }),
		"skip", "Kueue's are read on pod templates only"),
	create("exclusive-topology on a pod template",
		onPod({ "alpha.jobset.sigs.k8s.io/exclusive-topology": "rack" }), "skip", "read on the JobSet and Job templates only"),
	create("Kueue queue-name alone", jobset({ labels: { "kueue.x-k8s.io/queue-name": "q" } }), "skip", "no topology"),
	create("a key that only contains muster's prefix",
		jobset({ annotations: { "example.com/muster.dev/topology-required": "rack" } }), "skip", "not muster's key"),
	create("a key that only contains Kueue's prefix",
		onPod({ "example.com/kueue.x-k8s.io/podset-required-topology": "rack" }), "skip", "not Kueue's key"),
	create("Job template with labels only", jobset({ replicatedJobs: [replicatedJob("workers", { job: { labels: { app: "w" } } })] }),
		"skip", "no request"),
	create("Job template with annotations only",
		jobset({ replicatedJobs: [replicatedJob("workers", { job: { annotations: { "example.com/x": "1" } } })] }), "skip", "no request"),
	create("pod template with labels only", jobset({ replicatedJobs: [replicatedJob("workers", { pod: { labels: { app: "w" } } })] }),
		"skip", "no request"),
	create("pod template with annotations only", onPod({ "example.com/y": "2" }), "skip", "no request"),

	// Objects the mutating webhook's conditions see before the apiserver
	// validates them (mutating admission runs first): a missing field must
	// give false, not a CEL error, so that the apiserver's own message says
	// what is wrong.
	create("no spec", (() => { const j = jobset(); delete j.spec; return j; })(), "skip", "refused by validation afterwards"),
	create("no replicated jobs", jobset({ replicatedJobs: [] }), "skip", "no request"),
	create("spec without replicatedJobs", (() => { const j = jobset(); delete j.spec.replicatedJobs; return j; })(),
		"skip", "refused by validation afterwards"),
	create("replicated job without template", jobset({ replicatedJobs: [{ name: "workers", replicas: 1 }] }),
		"skip", "refused by validation afterwards"),
	create("Job template without spec", jobset({ replicatedJobs: [{ name: "workers", replicas: 1, template: {} }] }),
		"skip", "refused by validation afterwards"),
	create("Job spec without pod template",
		jobset({ replicatedJobs: [{ name: "workers", replicas: 1, template: { spec: { parallelism: 1 } } }] }),
		"skip", "refused by validation afterwards"),
	create("no spec but a gang annotation", (() => { const j = jobset({ annotations: gang }); delete j.spec; return j; })(),
		"call", "the webhook sees it (and refuses it)"),

	// UPDATE: the stored object counts too, so removing a request is seen.
	update("both ask", stored(jobset({ annotations: gang })), stored(jobset({ annotations: { ...gang, "example.com/x": "1" } })),
		"call", "the settings are checked not to change"),
	update("the gang annotation removed", stored(jobset({ annotations: gang })), stored(jobset()),
		"call", "refused: the running barriers were made with it"),
	update("the spec field removed", stored(jobset({ spec: { groupSchedulingConfig: { timeoutAfterSeconds: 300 } } })), stored(jobset()),
		"call", "refused: the running barriers were made with it"),
	update("a topology removed", stored(jobset({ annotations: { "muster.dev/topology-required": "rack", "muster.dev/placement": "waiting" } }, { suspend: true })),
		stored(jobset(), { suspend: true }), "call", "the gate keeps its state"),
	update("a gang start added", stored(jobset()), stored(jobset({ annotations: gang })), "call", "refused: settings changed"),
	update("a topology added to a suspended JobSet", stored(jobset(), { suspend: true }),
		stored(onPod({ "kueue.x-k8s.io/podset-required-topology": "rack" }), { suspend: true }), "call", "gated as at creation"),
	update("neither asks", stored(jobset({ annotations: { "example.com/team": "a" } })), stored(jobset({ annotations: { "example.com/team": "b" } })),
		"skip", "no request"),
	update("neither asks, no annotations", stored(jobset()), stored(jobset(), { suspend: true }), "skip", "no request"),
	update("a user resumes a gang-started JobSet", stored(jobset({ annotations: gang }), { suspend: true }),
		stored(jobset({ annotations: gang }), { suspend: false }), "call", "a resume raises the gang generation"),
	update("the controller resumes a JobSet it placed", placed("waiting", true), placed("placed", false),
		"call", "the mutating webhook raises the gang generation (else the new pods pass the last release early) and believes placed from the controller only", CONTROLLER),
	update("the controller suspends a placed JobSet to place it again", placed("placed", false), placed("waiting", true),
		"call", "a placed JobSet goes back to waiting", CONTROLLER),
	update("the controller writes a waiting reason", placed("waiting", true),
		(() => { const j = placed("waiting", true); j.metadata.annotations["muster.dev/placement-reason"] = "no room"; return j; })(),
		"call", "the gate keeps its state", CONTROLLER),
	update("another namespace's service account named muster-controller", stored(jobset({ annotations: gang }), { suspend: true }),
		stored(jobset({ annotations: gang }), { suspend: false }), "call", "a user like any other",
		"system:serviceaccount:team-a:muster-controller"),
	update("JobSet's controller changes a gang-started JobSet", stored(jobset({ annotations: gang })),
		(() => { const j = stored(jobset({ annotations: gang })); j.metadata.labels = { "jobset.sigs.k8s.io/x": "1" }; return j; })(),
		"call", "checked like any update", "system:serviceaccount:jobset-system:jobset-controller-manager"),
];

// Every CREATE row again as the stored object of an UPDATE to a plain
// JobSet: the conditions read oldObject as they read object, so that an
// update that removes a request is seen (and a stored object missing a
// field gives no error either).
export const REVIEWS = [
	...ROWS,
	...ROWS.filter((row) => row.operation === "CREATE").map((row) => update(`${row.name}, removed`,
		stored(row.object), stored(jobset()), row.expect, `the stored object: ${row.why}`)),
];

// The review for a row: { operation, object, oldObject, user, groups, gvk, gvr }.
export function review(row) {
	const user = row.user ?? USER;
	return {
		operation: row.operation, object: row.object, oldObject: row.oldObject ?? null, user,
		groups: user.startsWith("system:serviceaccount:") ? SERVICE_ACCOUNT_GROUPS : USER_GROUPS, gvk: GVK, gvr: GVR,
	};
}
