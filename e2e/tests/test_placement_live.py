"""Placement in the cluster, end to end on the real control plane: the
webhook gates a JobSet that asks for a topology (suspend), the controller
places it on the nodes the node agent made (labelled by blocks and racks, a
real Kueue Topology object names the levels), writes the placement of record
and resumes it, the JobSet stand-in makes the pods, the webhook's pod route
pins each to its domain, and the real kube-scheduler binds them. Nothing in
the test places or binds a pod.

Cluster: 8 nodes of 4 cpu, 2 blocks x 2 racks x 2 nodes (a rack holds 8
pods of 1 cpu, a block 16)."""

import json
import random
import subprocess
import threading
import time

import pytest

from conftest import ROOT, Controller, wait_for
from kube import ApiError, start_watch
from test_topology_live import _absent
from test_webhook import JOBSETS, hooked, webhook  # noqa: F401 - fixtures used by name
import muster_api as api  # noqa: E402

BLOCK, RACK = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"
TOPOLOGIES = "/apis/kueue.x-k8s.io/v1beta2/topologies"
TOPOLOGY = "e2e-placement"
REPLACE_AFTER_S = 5  # --placement-replace-after: how long pinned pods may have no room

CONTROLLERS = {}  # namespace: the placing fixture's controller (its log, for a failure's message)

pytestmark = pytest.mark.skipif(not (ROOT.parent / "shared" / "kueue").is_dir(),
                                reason="../shared/kueue is absent (the Topology CRD)")


@pytest.fixture
def placing(placing_cluster, kube, kubeconfig, tmp_path):
    """placing_cluster and the controller."""
    namespace = placing_cluster
    controller = Controller(kubeconfig, namespace, tmp_path / "controller.log",
                            extra=["--placement-topology", TOPOLOGY,
                                   "--placement-replace-after", str(REPLACE_AFTER_S)])
    CONTROLLERS[namespace] = controller
    yield namespace
    CONTROLLERS.pop(namespace, None)
    alive = controller.alive()
    controller.stop()
    print(controller.output()[-8000:])
    assert alive, f"the controller ended before the test did (exit {controller.process.returncode})"


@pytest.fixture
def placing_cluster(run_standin, kube, kubeconfig, hooked, tmp_path):  # noqa: F811 - the imported fixture
    """Nodes, the Topology and the JobSet stand-in (no controller)."""
    namespace = hooked
    shape = tmp_path / "shape.yaml"
    shape.write_text("groups:\n  - name: pl\n    count: 8\n"
                     "    allocatable: {cpu: \"4\", memory: 16Gi, pods: \"110\"}\n"
                     "    labels: {pool: placement}\n"
                     f"    topology: {{blockLabel: {BLOCK}, rackLabel: {RACK}, blocks: 2, racksPerBlock: 2}}\n")
    run_standin("node_agent.py", "--shape", shape, "--work-dir", tmp_path / "agent", "--sync-period", 5,
                "--delete-nodes", "--default-run-seconds", 600)
    run_standin("jobset_controller.py", "--namespace", namespace)
    try:
        kube.delete(f"{TOPOLOGIES}/{TOPOLOGY}")
    except ApiError:
        pass
    wait_for(lambda: _absent(kube, f"{TOPOLOGIES}/{TOPOLOGY}"), what="a leftover Topology gone")
    kube.create(TOPOLOGIES, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
                             "metadata": {"name": TOPOLOGY},
                             "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}]}})

    def ready():
        items = kube.get("/api/v1/nodes", labelSelector="pool=placement")["items"]
        return len(items) == 8 and all(c["status"] == "True" for n in items for c in n["status"]["conditions"]
                                       if c["type"] == "Ready")
    wait_for(ready, timeout=60, what="8 nodes Ready")

    def leftovers():
        """Pods of an earlier test's namespace, still being deleted, bound to
        nodes of the names this test's nodes have (the agent ends them):
        until they are gone the blocks are not as the tests lay them out."""
        names = {n["metadata"]["name"] for n in kube.get("/api/v1/nodes", labelSelector="pool=placement")["items"]}
        return [f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                for p in kube.get("/api/v1/pods", fieldSelector="spec.nodeName!=")["items"]
                if p["spec"]["nodeName"] in names and p["metadata"]["namespace"] != namespace]
    # The namespace controller's deletion of the last test's pods and the agent's sync.
    wait_for(lambda: not leftovers(), timeout=120, interval=0.5, what="no pod of an earlier test on the nodes")
    yield namespace
    kube.delete(f"{TOPOLOGIES}/{TOPOLOGY}")


def jobset(name, pod_annotations=None, replicas=1, pods=8, cpu="1", annotations=None, suspend=None, labels=None):
    pod = {"metadata": {"annotations": dict(pod_annotations or {})},
           "spec": {"restartPolicy": "Never", "nodeSelector": {"pool": "placement"},
                    "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "600"],
                                    "resources": {"requests": {"cpu": cpu}}}]}}
    body = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "annotations": dict(annotations or {}), "labels": dict(labels or {})},
            "spec": {"replicatedJobs": [{"name": "workers", "replicas": replicas, "template": {
                "spec": {"parallelism": pods, "completions": pods, "backoffLimit": 0, "template": pod}}}]}}
    if suspend is not None:
        body["spec"]["suspend"] = suspend
    return body


def get_jobset(kube, namespace, name):
    return kube.get(f"{JOBSETS.format(namespace)}/{name}")


def waiting_reason(kube, namespace, name):
    """The controller's sentence of why the JobSet waits, or None."""
    return (get_jobset(kube, namespace, name)["metadata"].get("annotations") or {}).get(
        api.ANNOTATION_PLACEMENT_REASON)


def state(kube, namespace, name):
    return (get_jobset(kube, namespace, name)["metadata"].get("annotations") or {}).get(api.ANNOTATION_PLACEMENT)


def bound_pods(kube, namespace, name, count):
    """The JobSet's `count` pods, once all are bound by the scheduler."""
    def all_bound():
        items = kube.get(f"/api/v1/namespaces/{namespace}/pods",
                         labelSelector=f"{api.JOBSET_LABEL_NAME}={name}")["items"]
        return items if len(items) == count and all(p["spec"].get("nodeName") for p in items) else None
    return wait_for(all_bound, timeout=90, interval=0.5, what=f"the {count} pods of {name} bound")


def node_labels(kube):
    return {n["metadata"]["name"]: n["metadata"]["labels"]
            for n in kube.get("/api/v1/nodes", labelSelector="pool=placement")["items"]}


def rack_of(labels, node):
    return labels[node][BLOCK], labels[node][RACK]


def story(kube, namespace, last=25):
    """What a failure's message says of the namespace: its pods (node,
    phase, deleting) and the controller's lines of note (not its passes)."""
    pods = [f"{p['metadata']['name']} node={p['spec'].get('nodeName')} phase={p['status'].get('phase')}"
            f"{' deleting' if p['metadata'].get('deletionTimestamp') else ''}"
            for p in kube.get(f"/api/v1/namespaces/{namespace}/pods")["items"]]
    controller = CONTROLLERS.get(namespace)
    lines = [line for line in (controller.output() if controller else "").splitlines()
             if "event=placement-pass " not in line]
    ended = "" if not controller or controller.alive() else f" (ended: exit {controller.process.returncode})"
    return "\npods:\n  " + "\n  ".join(pods) + f"\ncontroller{ended}:\n  " + "\n  ".join(lines[-last:])


def events_of(kube, namespace, name, reason):
    items = kube.get(f"/api/v1/namespaces/{namespace}/events")["items"]
    return [e for e in items if e["involvedObject"]["name"] == name and e["reason"] == reason]


def test_kueue_required_rack_gated_placed_pinned_and_bound_by_the_scheduler(kube, placing):
    namespace = placing
    # Kueue's meaning: all pods of all replicas of the replicated job in one rack.
    created = kube.create(JOBSETS.format(namespace),
                          jobset("train", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, replicas=2, pods=4))
    # Gated at creation: suspended by muster, the pod templates labelled.
    assert created["spec"]["suspend"] is True
    assert created["metadata"]["annotations"][api.ANNOTATION_PLACEMENT] == api.PLACEMENT_WAITING
    template = created["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert template["metadata"]["labels"][api.LABEL_PLACEMENT] == "true"
    assert created["spec"]["replicatedJobs"][0]["template"]["metadata"]["labels"][api.LABEL_PLACEMENT] == "true"
    wait_for(lambda: state(kube, namespace, "train") == api.PLACEMENT_PLACED, timeout=60, what="train placed")
    assert get_jobset(kube, namespace, "train")["spec"].get("suspend") in (False, None)
    record = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/train{api.PLACEMENT_SUFFIX}")
    assert record["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    assert json.loads(record["data"][api.PLACEMENT_KEY])["uid"] == created["metadata"]["uid"]
    pods = bound_pods(kube, namespace, "train", 8)
    labels = node_labels(kube)
    racks = {rack_of(labels, p["spec"]["nodeName"]) for p in pods}
    assert len(racks) == 1, racks  # every pod, bound by kube-scheduler, inside one rack
    for pod in pods:
        selector = pod["spec"]["nodeSelector"]
        assert (selector[BLOCK], selector[RACK]) == next(iter(racks))
        assert selector["pool"] == "placement"  # the template's own selector kept
        # Pinned with its Job: the pod route never saw it.
        assert pod["metadata"]["labels"][api.LABEL_JOB_PINNED] == "true"
    # Each Job's pods all go to that rack: the Job was pinned whole when JobSet made it.
    jobs = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs",
                    labelSelector=f"{api.JOBSET_LABEL_NAME}=train")["items"]
    assert len(jobs) == 2
    for job in jobs:
        template = job["spec"]["template"]
        assert template["metadata"]["labels"][api.LABEL_JOB_PINNED] == "true"
        assert (template["spec"]["nodeSelector"][BLOCK], template["spec"]["nodeSelector"][RACK]) == next(iter(racks))
    assert events_of(kube, namespace, "train", "Placed")


def test_a_job_split_over_two_racks_carries_the_rack_of_most_of_its_pods_and_those_need_no_patch(
        kube, placing, webhook):  # noqa: F811 - the imported fixture
    """A Job of 12 pods required in one block spans two racks of 8: its pod
    template gets the rack of its 8 pods (and says so in an annotation), so
    the pod route answers those 8 with no patch, which costs the apiserver
    neither a patch nor its admission chain run again; the other 4 get that
    rack replaced by their own. Before, all 12 were patched one by one."""
    namespace = placing
    kube.create(JOBSETS.format(namespace), jobset("split", {api.KUEUE_ANNOTATION_REQUIRED: BLOCK}, pods=12))
    wait_for(lambda: state(kube, namespace, "split") == api.PLACEMENT_PLACED, timeout=60, what="split placed")
    pods = bound_pods(kube, namespace, "split", 12)
    labels = node_labels(kube)
    runs = json.loads(kube.get(f"/api/v1/namespaces/{namespace}/configmaps/split{api.PLACEMENT_SUFFIX}")
                      ["data"][api.PLACEMENT_KEY])["replicatedJobs"]["workers"][0]
    assert len(runs) == 2 and sorted(to - start + 1 for start, to, _ in runs) == [4, 8], runs
    wide = next(selector for start, to, selector in runs if to - start + 1 == 8)
    by_rack = {}
    for pod in pods:
        index = int(pod["metadata"]["annotations"][api.JOB_ANNOTATION_COMPLETION_INDEX])
        want = next(selector for start, to, selector in runs if start <= index <= to)
        block, rack = rack_of(labels, pod["spec"]["nodeName"])
        # Bound by kube-scheduler in its own rack of record, its selector that rack.
        assert want == f"{BLOCK}={block},{RACK}={rack}", (pod["metadata"]["name"], want, block, rack)
        assert (pod["spec"]["nodeSelector"][BLOCK], pod["spec"]["nodeSelector"][RACK]) == (block, rack)
        assert pod["spec"]["nodeSelector"]["pool"] == "placement"  # the template's own selector kept
        assert api.LABEL_JOB_PINNED not in pod["metadata"]["labels"]
        by_rack.setdefault(want, []).append(pod["metadata"]["name"])
    assert sorted(len(names) for names in by_rack.values()) == [4, 8], by_rack
    jobs = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs",
                    labelSelector=f"{api.JOBSET_LABEL_NAME}=split")["items"]
    assert len(jobs) == 1
    template = jobs[0]["spec"]["template"]
    assert template["metadata"]["annotations"][api.ANNOTATION_JOB_SELECTOR] == wide
    assert f"{BLOCK}={template['spec']['nodeSelector'][BLOCK]},{RACK}={template['spec']['nodeSelector'][RACK]}" \
        == wide
    assert api.LABEL_JOB_PINNED not in template["metadata"].get("labels", {})
    # The pod route's answers for these pods: 8 with no patch, 4 patched.
    answers = [line for line in webhook.output().splitlines()
               if "route=pin pod=" + namespace + "/" in line and "result=" in line]
    allowed = [line for line in answers if "result=allowed" in line]
    patched = [line for line in answers if "result=patched" in line]
    assert (len(allowed), len(patched)) == (8, 4), "\n".join(answers[-20:])


def test_no_room_waits_with_its_reason_and_two_at_once_never_share_the_last_rack(kube, kubeconfig, placing):
    namespace = placing
    # Fill a whole block and one rack of the other: one rack (8 cpu) is left.
    kube.create(JOBSETS.format(namespace), jobset("fill-block", {api.KUEUE_ANNOTATION_REQUIRED: BLOCK}, pods=16))
    bound_pods(kube, namespace, "fill-block", 16)
    kube.create(JOBSETS.format(namespace), jobset("fill-rack", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=8))
    bound_pods(kube, namespace, "fill-rack", 8)
    # Two JobSets created at once, each needing that last rack.
    for name in ("first", "second"):
        kube.create(JOBSETS.format(namespace), jobset(name, {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=8))
    wait_for(lambda: {state(kube, namespace, n) for n in ("first", "second")} ==
             {api.PLACEMENT_PLACED, api.PLACEMENT_WAITING}, timeout=60, what="one placed, one waiting")
    placed = next(n for n in ("first", "second") if state(kube, namespace, n) == api.PLACEMENT_PLACED)
    waiting = "second" if placed == "first" else "first"
    bound_pods(kube, namespace, placed, 8)

    text = wait_for(lambda: waiting_reason(kube, namespace, waiting), timeout=30, what="the waiting reason")
    assert "rack" in text and "8 pods" in text, text
    assert get_jobset(kube, namespace, waiting)["spec"]["suspend"] is True
    assert events_of(kube, namespace, waiting, "PlacementWaiting")
    assert not kube.get(f"/api/v1/namespaces/{namespace}/pods",
                        labelSelector=f"{api.JOBSET_LABEL_NAME}={waiting}")["items"]  # no pod before placement
    # Nor any Job: the pin route refuses them until the JobSet is placed.
    assert not kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs",
                        labelSelector=f"{api.JOBSET_LABEL_NAME}={waiting}")["items"]
    # muster-topology --explain says the same, and which JobSets hold which racks.
    cli = subprocess.run([str(ROOT / "bin" / "muster-topology"), "--kubeconfig", kubeconfig, "--topology", TOPOLOGY,
                          "--explain", f"{namespace}/{waiting}"], capture_output=True, text=True, timeout=60)
    print(cli.stdout[-3000:], cli.stderr[-1000:])
    assert f"{api.ANNOTATION_PLACEMENT}=waiting; waiting because: {text}" in cli.stdout
    assert "placement of record: none" in cli.stdout
    assert f"{namespace}/{placed}, 8 pods" in cli.stdout and f"{namespace}/fill-block, 8 pods" in cli.stdout
    # The placed one goes away: the waiting one starts by itself, in that rack.
    rack = {rack_of(node_labels(kube), p["spec"]["nodeName"])
            for p in bound_pods(kube, namespace, placed, 8)}
    kube.delete(f"{JOBSETS.format(namespace)}/{placed}", body={"propagationPolicy": "Foreground"})
    wait_for(lambda: state(kube, namespace, waiting) == api.PLACEMENT_PLACED, timeout=120,
             what=f"{waiting} placed once the room is free")
    pods = bound_pods(kube, namespace, waiting, 8)
    assert {rack_of(node_labels(kube), p["spec"]["nodeName"]) for p in pods} == rack


def test_bad_requests_are_refused_at_admission_and_what_only_the_cluster_knows_waits(kube, placing):
    namespace = placing
    with pytest.raises(ApiError) as refused:
        kube.create(JOBSETS.format(namespace), jobset("both", {api.KUEUE_ANNOTATION_REQUIRED: RACK,
                                                               api.KUEUE_ANNOTATION_PREFERRED: RACK}))
    assert refused.value.status in (400, 422) and "placement request" in str(refused.value)
    with pytest.raises(ApiError) as refused:
        kube.create(JOBSETS.format(namespace), jobset("typo", {"kueue.x-k8s.io/podset-requried-topology": RACK}))
    assert "podset-requried-topology" in str(refused.value)
    # Two Jobs each alone in a rack, and the whole JobSet in one rack: no
    # cluster holds both, which the names alone tell; refused at once, not
    # left waiting.
    with pytest.raises(ApiError) as refused:
        kube.create(JOBSETS.format(namespace), jobset("twoalone", replicas=2, pods=2, annotations={
            api.ANNOTATION_TOPOLOGY_REQUIRED: RACK, api.JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY: RACK}))
    assert "puts all 2 of its Jobs in one" in str(refused.value) and "no placement holds both" in str(refused.value)
    assert _absent(kube, f"{JOBSETS.format(namespace)}/twoalone")
    # A level the Topology does not have: only the cluster can tell; it waits, saying so.
    kube.create(JOBSETS.format(namespace), jobset("nolevel", {api.KUEUE_ANNOTATION_REQUIRED: "zone"}))

    assert "zone" in wait_for(lambda: waiting_reason(kube, namespace, "nolevel"), timeout=30,
                              what="the waiting reason")
    assert state(kube, namespace, "nolevel") == api.PLACEMENT_WAITING


def test_kueue_managed_jobsets_are_left_to_kueue_and_a_users_suspend_is_kept(kube, placing):
    namespace = placing
    kueue = kube.create(JOBSETS.format(namespace), jobset("kq", {api.KUEUE_ANNOTATION_REQUIRED: RACK},
                                                          labels={api.KUEUE_LABEL_QUEUE_NAME: "lq"}))
    assert api.ANNOTATION_PLACEMENT not in kueue["metadata"].get("annotations", {})
    assert not kueue["spec"].get("suspend")
    # The user's own suspend: not placed until the user resumes; the resume is
    # held until the placement is written.
    held = kube.create(JOBSETS.format(namespace), jobset("held", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=4,
                                                         suspend=True))
    assert held["metadata"]["annotations"][api.ANNOTATION_PLACEMENT] == api.PLACEMENT_USER_HELD
    # The pin route's mark of a Job pinned whole is never the user's to give,
    # at an update as at creation: JobSet would copy it onto the pods, which
    # the pod route would then never see.
    # Its share of a Job split over domains neither: the pod route would
    # change values of the user's it names.
    held["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"].setdefault(
        "labels", {})[api.LABEL_JOB_PINNED] = "true"
    held["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"].setdefault(
        "annotations", {})[api.ANNOTATION_JOB_SELECTOR] = f"{RACK}=r9"
    updated = kube.put(f"{JOBSETS.format(namespace)}/held", held)
    assert api.LABEL_JOB_PINNED not in \
        updated["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"]
    assert api.ANNOTATION_JOB_SELECTOR not in \
        updated["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"]
    resumed = kube.patch(f"{JOBSETS.format(namespace)}/held", {"spec": {"suspend": False}})
    assert resumed["spec"]["suspend"] is True  # held by the webhook until placed
    assert resumed["metadata"]["annotations"][api.ANNOTATION_PLACEMENT] == api.PLACEMENT_WAITING
    wait_for(lambda: state(kube, namespace, "held") == api.PLACEMENT_PLACED, timeout=60, what="held placed")
    pods = bound_pods(kube, namespace, "held", 4)
    assert len({rack_of(node_labels(kube), p["spec"]["nodeName"]) for p in pods}) == 1


def test_a_jobset_volcano_schedules_is_left_to_volcano_and_its_author_is_told(kube, kubeconfig, placing):
    """L6: one replicated job asks for a rack, another is Volcano's (schedulerName volcano). The whole
    JobSet is Volcano's to place: muster gates nothing, and kubectl shows the author that the rack
    request is not applied (an admission warning), instead of dropping it in silence."""
    namespace = placing
    body = jobset("mixed", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=2)
    other = json.loads(json.dumps(body["spec"]["replicatedJobs"][0]))
    other["name"] = "ps"
    other["template"]["spec"]["template"]["metadata"]["annotations"] = {}
    other["template"]["spec"]["template"]["spec"]["schedulerName"] = "volcano"
    body["spec"]["replicatedJobs"].append(other)
    made = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "create", "-f", "-", "-o", "json"],
                          input=json.dumps(body), capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert "Warning: muster.dev: a replicated job of this JobSet has schedulerName volcano" in made.stderr, \
        made.stderr
    assert "does not apply its topology request" in made.stderr
    created = json.loads(made.stdout)
    assert api.ANNOTATION_PLACEMENT not in created["metadata"].get("annotations", {})
    assert created["metadata"]["annotations"][api.ANNOTATION_PLACEMENT_SKIPPED] == api.PLACEMENT_SKIPPED_VOLCANO
    assert not created["spec"].get("suspend")
    # ...and `kubectl describe` says so too: one Warning Event PlacementSkipped.
    said = wait_for(lambda: events_of(kube, namespace, "mixed", "PlacementSkipped"), timeout=30,
                    what="the PlacementSkipped Event")
    assert len(said) == 1 and "does not apply its topology request" in said[0]["message"], said
    # A JobSet that is Volcano's alone, asking muster nothing: no warning.
    alone = jobset("volcano-only", pods=2)
    alone["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["schedulerName"] = "volcano"
    made = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "create", "-f", "-"],
                          input=json.dumps(alone), capture_output=True, text=True)
    assert made.returncode == 0 and "Warning" not in made.stderr, made.stderr
    time.sleep(2)
    assert not events_of(kube, namespace, "volcano-only", "PlacementSkipped")


def test_completions_above_parallelism_run_in_the_slots_of_their_domain(kube, placing):
    """L4: a Job of 8 completions and parallelism 4 asks a rack for its 4 pods at once (Kueue's count,
    min(parallelism, completions)); it is admitted, placed, and each later pod (index 4..7) is pinned
    into the same rack as it starts, so all 8 complete there."""
    namespace = placing
    body = jobset("waves", {api.KUEUE_ANNOTATION_REQUIRED: RACK, "e2e.muster.dev/run-seconds": "2"}, pods=4)
    body["spec"]["replicatedJobs"][0]["template"]["spec"]["completions"] = 8
    kube.create(JOBSETS.format(namespace), body)
    wait_for(lambda: state(kube, namespace, "waves") == api.PLACEMENT_PLACED, timeout=60, what="waves placed")

    def succeeded():
        pods = kube.get(f"/api/v1/namespaces/{namespace}/pods",
                        labelSelector=f"{api.JOBSET_LABEL_NAME}=waves")["items"]
        done = [p for p in pods if p.get("status", {}).get("phase") == "Succeeded"]
        return done if len({p["metadata"]["annotations"][api.JOB_ANNOTATION_COMPLETION_INDEX]
                            for p in done}) == 8 else None
    done = wait_for(succeeded, timeout=120, interval=1, what="8 completions of waves")
    labels = node_labels(kube)
    assert len({rack_of(labels, p["spec"]["nodeName"]) for p in done}) == 1


def test_room_promised_to_pods_not_bound_yet_is_not_given_away(kube, placing):
    """A placed JobSet whose pods are not bound keeps its room: here its pods
    ask for one host port each, which placement does not count, so the
    scheduler binds only one per node and the rest stay pending for good."""
    namespace = placing
    kube.create(JOBSETS.format(namespace), jobset("fill-block", {api.KUEUE_ANNOTATION_REQUIRED: BLOCK}, pods=16))
    bound_pods(kube, namespace, "fill-block", 16)
    kube.create(JOBSETS.format(namespace), jobset("fill-rack", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=8))
    bound_pods(kube, namespace, "fill-rack", 8)
    body = jobset("ports", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=8)
    body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 7000, "hostPort": 7000}]
    kube.create(JOBSETS.format(namespace), body)
    wait_for(lambda: state(kube, namespace, "ports") == api.PLACEMENT_PLACED, timeout=60, what="ports placed")

    def two_bound_six_pending():
        items = kube.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=f"{api.JOBSET_LABEL_NAME}=ports")["items"]
        bound = [p for p in items if p["spec"].get("nodeName")]
        return len(items) == 8 and len(bound) == 2
    wait_for(two_bound_six_pending, timeout=60, what="2 of the 8 pods bound (one host port per node)")
    kube.create(JOBSETS.format(namespace), jobset("later", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=4))

    assert "rack" in wait_for(lambda: waiting_reason(kube, namespace, "later"), timeout=30,
                              what="later waiting, its reason written")
    assert state(kube, namespace, "later") == api.PLACEMENT_WAITING


def victim_pending_in_the_last_rack(kube, namespace, cpu):
    """Fills one block and one rack of the other, makes the last rack's two
    nodes unable to bind the "victim" JobSet's pods (pods outside muster hold
    host port 7000 there; placement does not count ports), and creates
    "victim" (2 pods of `cpu`, required rack, host port 7000): it is placed
    in that rack and its pods stay pending there. Returns the rack (block,
    rack) and its nodes."""
    kube.create(JOBSETS.format(namespace), jobset("fill-block", {api.KUEUE_ANNOTATION_REQUIRED: BLOCK}, pods=16))
    bound_pods(kube, namespace, "fill-block", 16)
    kube.create(JOBSETS.format(namespace), jobset("fill-rack", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=8))
    used = {rack_of(node_labels(kube), p["spec"]["nodeName"])
            for name, count in (("fill-block", 16), ("fill-rack", 8))
            for p in bound_pods(kube, namespace, name, count)}
    labels = node_labels(kube)
    free_rack = {rack_of(labels, n) for n in labels} - used
    assert len(free_rack) == 1
    free_rack = free_rack.pop()
    rack_nodes = sorted(n for n in labels if rack_of(labels, n) == free_rack)
    for node in rack_nodes:
        kube.create(f"/api/v1/namespaces/{namespace}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"port-{node}"},
            "spec": {"nodeName": node, "restartPolicy": "Never", "containers": [{
                "name": "c", "image": "busybox", "command": ["sleep", "600"],
                "ports": [{"containerPort": 7000, "hostPort": 7000}]}]}})
    body = jobset("victim", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=2, cpu=cpu)
    body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 7000, "hostPort": 7000}]
    kube.create(JOBSETS.format(namespace), body)
    wait_for(lambda: state(kube, namespace, "victim") == api.PLACEMENT_PLACED, timeout=60, what="victim placed")

    def pending_in_free_rack():
        items = kube.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=f"{api.JOBSET_LABEL_NAME}=victim")["items"]
        return len(items) == 2 and not any(p["spec"].get("nodeName") for p in items) and all(
            (p["spec"]["nodeSelector"][BLOCK], p["spec"]["nodeSelector"][RACK]) == free_rack for p in items)
    wait_for(pending_in_free_rack, timeout=60, what="victim's 2 pods pinned to the last rack, pending")
    return free_rack, rack_nodes


def free_the_other_rack(kube, namespace):
    """Deletes "fill-rack" and waits for its pods to go: room in another rack."""
    kube.delete(f"{JOBSETS.format(namespace)}/fill-rack", body={"propagationPolicy": "Foreground"})
    wait_for(lambda: not kube.get(f"/api/v1/namespaces/{namespace}/pods",
                                  labelSelector=f"{api.JOBSET_LABEL_NAME}=fill-rack")["items"],
             timeout=90, what="fill-rack's pods gone")


def victim_bound_elsewhere(kube, namespace, free_rack):
    pods = bound_pods(kube, namespace, "victim", 2)
    racks = {rack_of(node_labels(kube), p["spec"]["nodeName"]) for p in pods}
    assert len(racks) == 1 and free_rack not in racks, racks
    assert state(kube, namespace, "victim") == api.PLACEMENT_PLACED


def test_a_domain_lost_before_its_pods_run_is_placed_again(kube, placing):
    """Every node of the rack a JobSet's pending pods are pinned to is
    deleted: the controller suspends it at once, drops its record and
    places it again in a rack that has room; its pods then run there."""
    namespace = placing
    free_rack, doomed = victim_pending_in_the_last_rack(kube, namespace, cpu="1")
    free_the_other_rack(kube, namespace)
    for node in doomed:
        kube.delete(f"/api/v1/nodes/{node}")
    events = wait_for(lambda: events_of(kube, namespace, "victim", "PlacementLost"), timeout=60,
                      what="the PlacementLost Event")
    assert "lost every node of their domain" in events[0]["message"], events[0]["message"]
    victim_bound_elsewhere(kube, namespace, free_rack)


def test_a_node_tainted_under_pending_pods_is_placed_again_when_room_is_elsewhere(kube, placing):
    """One node of the rack a JobSet's pending pods are pinned to gets a
    NoSchedule taint the pods do not tolerate, so the rack keeps a node but
    no longer has room for both pods (3 cpu each, nodes of 4). While no
    other rack has room the JobSet stays placed (suspending it would gain
    nothing); once one has, and the pods have had no room for
    --placement-replace-after seconds, the controller places it again
    there, saying which domain lost room and why, and its pods run there."""
    namespace = placing
    free_rack, rack_nodes = victim_pending_in_the_last_rack(kube, namespace, cpu="3")
    tainted_at = time.time()
    kube.patch(f"/api/v1/nodes/{rack_nodes[0]}",
               {"spec": {"taints": [{"key": "e2e.muster.dev/maintenance", "effect": "NoSchedule"}]}})
    time.sleep(REPLACE_AFTER_S + 4)  # the grace and a few one-second checks
    assert not events_of(kube, namespace, "victim", "PlacementLost")
    assert state(kube, namespace, "victim") == api.PLACEMENT_PLACED
    free_the_other_rack(kube, namespace)
    # At most a few passes and the writes.
    events = wait_for(lambda: events_of(kube, namespace, "victim", "PlacementLost"),
                      timeout=REPLACE_AFTER_S + 30, what="the PlacementLost Event")
    message = events[0]["message"]
    assert "had no room in their domain" in message and "has a taint the pods do not tolerate" in message, message
    assert f"{RACK}={free_rack[1]}" in message, message
    # Not before the grace: the Event says how long the pods had no room.
    assert float(message.split(" for ")[1].split(" s")[0]) >= REPLACE_AFTER_S, message
    assert time.time() - tainted_at >= REPLACE_AFTER_S
    victim_bound_elsewhere(kube, namespace, free_rack)


def test_a_node_lost_under_one_pending_job_moves_that_job_alone_and_the_jobset_completes(kube, placing):
    """A JobSet of two Jobs, each alone in a rack (upstream JobSet's
    exclusive-topology): "steady" runs, "ported" is pinned to the other
    rack of the block and pending there (its pods need host port 7000,
    which pods outside muster hold on those nodes; placement does not count
    ports). A node of ported's rack is deleted. While no rack has room it
    stays where it is; once one has, the controller moves that one Job
    alone: the record's runs of ported point to the free rack, the Job is
    deleted and JobSet makes it again, and its new pods run there. The
    JobSet is never suspended, steady's Job and pods are never made again,
    and the JobSet completes."""
    namespace = placing
    job_uids, pods_made, jobset_states, stop = {}, {}, [], threading.Event()

    def on_jobset(event_type, obj):
        if obj["metadata"]["name"] == "pair":
            jobset_states.append(((obj["metadata"].get("annotations") or {}).get(api.ANNOTATION_PLACEMENT),
                                  bool(obj["spec"].get("suspend"))))

    def on_job(event_type, obj):
        if (obj["metadata"].get("labels") or {}).get(api.JOBSET_LABEL_NAME) == "pair":
            job_uids.setdefault(obj["metadata"]["name"], set()).add(obj["metadata"]["uid"])

    def on_pod(event_type, obj):
        labels = obj["metadata"].get("labels") or {}
        if labels.get(api.JOBSET_LABEL_NAME) == "pair":
            pods_made.setdefault(obj["metadata"]["uid"], (labels.get(api.JOBSET_LABEL_REPLICATED_JOB),
                                                          dict(obj["spec"].get("nodeSelector") or {})))
    start_watch(kube, f"/apis/batch/v1/namespaces/{namespace}/jobs", on_job, stop)
    start_watch(kube, f"/api/v1/namespaces/{namespace}/pods", on_pod, stop)
    start_watch(kube, JOBSETS.format(namespace), on_jobset, stop)
    try:
        kube.create(JOBSETS.format(namespace), jobset("fill-block", {api.KUEUE_ANNOTATION_REQUIRED: BLOCK},
                                                      pods=16))
        labels = node_labels(kube)
        full = {labels[p["spec"]["nodeName"]][BLOCK] for p in bound_pods(kube, namespace, "fill-block", 16)}
        assert len(full) == 1
        full = full.pop()
        for node in (n for n in labels if labels[n][BLOCK] != full):
            kube.create(f"/api/v1/namespaces/{namespace}/pods", {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"port-{node}"},
                "spec": {"nodeName": node, "restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "busybox", "command": ["sleep", "600"],
                    "ports": [{"containerPort": 7000, "hostPort": 7000}]}]}})
        # 3 cpu a pod, one per node: with steady where it is, no two nodes of
        # the block have room for ported, so placing the whole JobSet again
        # would not fit either; only the freed block can take it.
        body = jobset("pair", {"e2e.muster.dev/run-seconds": "60"}, pods=2, cpu="3",
                      annotations={api.JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY: RACK})
        steady = body["spec"]["replicatedJobs"][0]
        steady["name"] = "steady"
        ported = json.loads(json.dumps(steady))
        ported["name"] = "ported"
        pod_spec = ported["template"]["spec"]["template"]
        pod_spec["metadata"]["annotations"]["e2e.muster.dev/run-seconds"] = "5"
        pod_spec["spec"]["containers"][0]["ports"] = [{"containerPort": 7000, "hostPort": 7000}]
        body["spec"]["replicatedJobs"].append(ported)
        kube.create(JOBSETS.format(namespace), body)

        def pods_of(rjob):
            return [p for p in kube.get(f"/api/v1/namespaces/{namespace}/pods",
                                        labelSelector=f"{api.JOBSET_LABEL_NAME}=pair")["items"]
                    if p["metadata"]["labels"].get(api.JOBSET_LABEL_REPLICATED_JOB) == rjob]

        def steady_bound_ported_pending():
            s, p = pods_of("steady"), pods_of("ported")
            if len(s) == 2 and all(x["spec"].get("nodeName") for x in s) and len(p) == 2 and \
                    not any(x["spec"].get("nodeName") for x in p):
                return p
            return None
        pending = wait_for(steady_bound_ported_pending, timeout=90, interval=0.5,
                           what="steady's 2 pods bound, ported's 2 pinned and pending")
        lost = (pending[0]["spec"]["nodeSelector"][BLOCK], pending[0]["spec"]["nodeSelector"][RACK])
        assert lost[0] != full
        kube.delete(f"/api/v1/nodes/{sorted(n for n in labels if rack_of(labels, n) == lost)[0]}")
        # No rack has room for ported: it stays placed where it is.
        time.sleep(REPLACE_AFTER_S + 3)
        assert state(kube, namespace, "pair") == api.PLACEMENT_PLACED
        assert not events_of(kube, namespace, "pair", "PlacementMoved")
        kube.delete(f"{JOBSETS.format(namespace)}/fill-block", body={"propagationPolicy": "Foreground"})
        # The pods of fill-block go (the node agent's sync), then a pass, the write.
        try:
            events = wait_for(lambda: events_of(kube, namespace, "pair", "PlacementMoved"), timeout=90,
                              what="the PlacementMoved Event")
        except AssertionError as error:
            raise AssertionError(f"{error}{story(kube, namespace)}") from None
        message = events[0]["message"]
        assert "moved alone" in message and "ported/0" in message, message

        def ported_bound_in_the_freed_block():
            p = [x for x in pods_of("ported") if not x["metadata"].get("deletionTimestamp")]
            return p if len(p) == 2 and all(x["spec"].get("nodeName") and
                                            labels[x["spec"]["nodeName"]][BLOCK] == full for x in p) else None
        # The pod route's cache (11 s), the Job's foreground deletion, JobSet's new Job and the scheduler.
        wait_for(ported_bound_in_the_freed_block, timeout=120, interval=0.5,
                 what="ported made again and bound in the freed block")

        def completed():
            conditions = get_jobset(kube, namespace, "pair").get("status", {}).get("conditions") or []
            return any(c["type"] == "Completed" and c["status"] == "True" for c in conditions)
        wait_for(completed, timeout=180, interval=1, what="the JobSet Completed")
    finally:
        stop.set()
    assert len(job_uids.get("pair-steady-0", ())) == 1, job_uids  # never made again
    assert len(job_uids.get("pair-ported-0", ())) == 2, job_uids  # deleted once, made again once
    assert len([r for r, _ in pods_made.values() if r == "steady"]) == 2, pods_made
    moved = [sel for r, sel in pods_made.values() if r == "ported" and sel.get(BLOCK) == full]
    assert len(moved) == 2, pods_made
    assert not events_of(kube, namespace, "pair", "PlacementLost")
    placed = [suspend for placement, suspend in jobset_states if placement == api.PLACEMENT_PLACED]
    assert placed and not any(placed), jobset_states  # once placed, never suspended again


def test_a_restart_attempt_is_placed_afresh_and_never_pinned_by_the_last_ones_record(kube, placing):
    """A placed JobSet restarts (its failure policy: pod 0 of attempt 0
    fails) after the rack it ran in was cordoned. The new attempt is placed
    afresh: the record is rewritten for attempt 1 in another rack, no pod
    of attempt 1 is ever created pinned to the old rack (the pod route
    pins a pod only by its own attempt's record), nothing waited for the
    lost-room timer (no PlacementLost), and the JobSet completes."""
    namespace = placing
    seen, stop = {}, threading.Event()

    def on_pod(event_type, obj):
        labels = obj["metadata"].get("labels") or {}
        if labels.get(api.JOBSET_LABEL_NAME) == "train" and event_type in ("ADDED", "MODIFIED"):
            seen.setdefault(obj["metadata"]["name"], (labels.get(api.JOBSET_LABEL_RESTART_ATTEMPT),
                                                      dict(obj["spec"].get("nodeSelector") or {})))
    start_watch(kube, f"/api/v1/namespaces/{namespace}/pods", on_pod, stop)
    body = jobset("train", {api.KUEUE_ANNOTATION_REQUIRED: RACK, "e2e.muster.dev/run-seconds": "30",
                            "e2e.muster.dev/exit-code": "1", "e2e.muster.dev/fail-completion-index": "0",
                            "e2e.muster.dev/fail-restart-attempt": "0"}, pods=8)
    body["spec"]["failurePolicy"] = {"maxRestarts": 1}
    try:
        kube.create(JOBSETS.format(namespace), body)
        labels = node_labels(kube)
        racks = {rack_of(labels, p["spec"]["nodeName"]) for p in bound_pods(kube, namespace, "train", 8)}
        assert len(racks) == 1, racks
        old_rack = next(iter(racks))
        for node in labels:  # attempt 0 keeps running there; nothing new fits
            if rack_of(labels, node) == old_rack:
                kube.patch(f"/api/v1/nodes/{node}", {"spec": {"unschedulable": True}})
        # The premise: cordoned before attempt 0 fails (its pods run 30 s).
        assert not get_jobset(kube, namespace, "train").get("status", {}).get("restarts"), \
            "attempt 0 failed before its rack was cordoned: the test ran too late to prove anything"

        def record_of_attempt_1():
            cm = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/train{api.PLACEMENT_SUFFIX}")
            record = json.loads(cm["data"][api.PLACEMENT_KEY])
            return record if record.get("attempt") == 1 else None
        record = wait_for(lambda: _ignoring_absent(record_of_attempt_1), timeout=90, interval=0.5,
                          what="the record of restart attempt 1")
        for run in (run for job in record["replicatedJobs"]["workers"] for run in job):
            want = dict(kv.split("=", 1) for kv in run[2].split(","))
            assert (want[BLOCK], want[RACK]) != old_rack, (run, old_rack)

        def completed():
            conditions = get_jobset(kube, namespace, "train").get("status", {}).get("conditions") or []
            return any(c["type"] == "Completed" and c["status"] == "True" for c in conditions)
        wait_for(completed, timeout=180, interval=1, what="the JobSet Completed in attempt 1")
    finally:
        stop.set()
    attempt_1 = [sel for attempt, sel in seen.values() if attempt == "1"]
    assert len(attempt_1) >= 8, seen
    for sel in attempt_1:  # pinned at creation, and never to the old rack
        assert (sel[BLOCK], sel[RACK]) != old_rack, sel
    assert events_of(kube, namespace, "train", "PlacementRenewed")
    assert not events_of(kube, namespace, "train", "PlacementLost")


def _ignoring_absent(fn):
    try:
        return fn()
    except ApiError as e:
        if e.status == 404:
            return None
        raise


def test_a_users_configmap_of_the_records_name_is_never_touched(kube, placing):
    """A ConfigMap `<jobset>-placement` that no JobSet owns is somebody
    else's: the controller neither deletes nor rewrites it, and the JobSet
    waits saying why; once its owner removes it, the JobSet is placed."""
    namespace = placing
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    mine = kube.create(path, {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": f"users{api.PLACEMENT_SUFFIX}"},
                              "data": {api.PLACEMENT_KEY: "the user's own notes"}})
    kube.create(JOBSETS.format(namespace), jobset("users", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=4))
    reason = wait_for(lambda: waiting_reason(kube, namespace, "users"), timeout=60, what="users waiting, its reason")
    assert "is not a placement record" in reason and "muster never touches it" in reason, reason
    kept = kube.get(f"{path}/users{api.PLACEMENT_SUFFIX}")
    assert kept["metadata"]["uid"] == mine["metadata"]["uid"], kept
    assert kept["data"] == {api.PLACEMENT_KEY: "the user's own notes"}, kept
    assert state(kube, namespace, "users") == api.PLACEMENT_WAITING
    kube.delete(f"{path}/users{api.PLACEMENT_SUFFIX}")
    wait_for(lambda: state(kube, namespace, "users") == api.PLACEMENT_PLACED, timeout=60, what="users placed")
    bound_pods(kube, namespace, "users", 4)


def test_controller_killed_while_placing_pins_every_pod_and_books_no_rack_twice(kube, kubeconfig, placing_cluster,
                                                                               tmp_path):
    """Eight JobSets of 4 pods that each need one rack fill the 4 racks
    exactly. One is created per round; the controller is SIGKILLed the
    moment that JobSet's record appears (before its resume, when the race
    is won) or at a random moment, and started again. At the end every
    JobSet runs, every pod is bound where its record says, and no rack holds
    more than it can (a double booking would leave pods pending for good)."""
    namespace = placing_cluster
    names = [f"js-{i}" for i in range(8)]
    rng = random.Random(1405)
    flags = ["--placement-topology", TOPOLOGY, "--leader-elect", "false"]
    current = {}
    stop = threading.Event()

    def on_configmap(event_type, obj):
        controller = current.get("controller")
        if event_type == "ADDED" and obj["metadata"]["name"].endswith(api.PLACEMENT_SUFFIX) and controller:
            controller.kill()  # at once: its resume may not have been sent yet
    start_watch(kube, f"/api/v1/namespaces/{namespace}/configmaps", on_configmap, stop)
    logs = []
    try:
        for round_, name in enumerate(names):
            kube.create(JOBSETS.format(namespace), jobset(name, {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=4))
            controller = Controller(kubeconfig, namespace, tmp_path / f"controller-{round_}.log", extra=flags)
            current["controller"] = controller
            deadline = time.time() + rng.uniform(0.2, 2.0)
            while controller.alive() and time.time() < deadline:
                time.sleep(0.01)
            current["controller"] = None
            controller.kill()
            logs.append(controller.output())
    finally:
        stop.set()
    controller = Controller(kubeconfig, namespace, tmp_path / "controller-last.log", extra=flags)
    try:
        wait_for(lambda: all(state(kube, namespace, n) == api.PLACEMENT_PLACED for n in names), timeout=90,
                 what="all 8 JobSets placed")
        labels = node_labels(kube)
        per_rack = {}
        for name in names:
            record = json.loads(kube.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}{api.PLACEMENT_SUFFIX}")
                                ["data"][api.PLACEMENT_KEY])
            for pod in bound_pods(kube, namespace, name, 4):
                rack = rack_of(labels, pod["spec"]["nodeName"])
                per_rack[rack] = per_rack.get(rack, 0) + 1
                job = int(pod["metadata"]["labels"][api.JOBSET_LABEL_JOB_INDEX])
                index = int(pod["metadata"]["annotations"][api.JOB_ANNOTATION_COMPLETION_INDEX])
                run = next(r for r in record["replicatedJobs"]["workers"][job] if r[0] <= index <= r[1])
                want = dict(kv.split("=", 1) for kv in run[2].split(","))
                assert {k: pod["spec"]["nodeSelector"][k] for k in want} == want  # pinned by its record
        assert sorted(per_rack.values()) == [8, 8, 8, 8], per_rack
        # The race was won at least once: a record written, the resume not sent,
        # and a later controller resumed from the record instead of placing again.
        resumed = sum(log.count("event=placement-resumed") for log in logs) + \
            controller.output().count("event=placement-resumed")
        print(f"kills: {len(logs)}, resumed from a record written before the kill: {resumed}")
    finally:
        controller.stop()
        print("\n".join(log[-1500:] for log in logs), controller.output()[-6000:])


def test_requests_given_or_broken_by_an_update_and_empty_levels(kube, placing):
    """Issue 36 L2, L3 and L5, as a user edits a JobSet by hand: a request
    given to a suspended JobSet that had none is gated as at creation and
    placed once resumed (before, its pods ran anywhere: no Event, no
    annotation); an update that makes a request malformed is refused at
    once (before, accepted and only shown at the resume); an empty level is
    refused at creation (before, admitted and left waiting forever)."""
    namespace = placing
    path = JOBSETS.format(namespace)
    rack_key = api.KUEUE_ANNOTATION_REQUIRED.replace("/", "~1")
    # L2: suspended, no request; the request comes by an update, then the resume.
    kube.create(path, jobset("late", pods=4, suspend=True))
    kube.patch(f"{path}/late", [{"op": "add", "path": "/spec/replicatedJobs/0/template/spec/template/metadata/"
                                 f"annotations/{rack_key}", "value": RACK}], kind="json")
    assert state(kube, namespace, "late") == api.PLACEMENT_USER_HELD
    kube.patch(f"{path}/late", {"spec": {"suspend": False}})
    wait_for(lambda: state(kube, namespace, "late") == api.PLACEMENT_PLACED, timeout=60,
             what=f"late placed{story(kube, namespace)}")
    labels = node_labels(kube)
    pods = bound_pods(kube, namespace, "late", 4)
    assert len({rack_of(labels, p["spec"]["nodeName"]) for p in pods}) == 1, [p["spec"]["nodeName"] for p in pods]
    assert events_of(kube, namespace, "late", "Placed")
    # L3: a held JobSet's request made malformed by an update: refused, saying why.
    kube.create(path, jobset("held", {api.KUEUE_ANNOTATION_SLICE: RACK, api.KUEUE_ANNOTATION_SLICE_SIZE: "4"},
                             pods=4, suspend=True))
    size_key = api.KUEUE_ANNOTATION_SLICE_SIZE.replace("/", "~1")
    with pytest.raises(ApiError) as refused:
        kube.patch(f"{path}/held", [{"op": "replace", "path": "/spec/replicatedJobs/0/template/spec/template/"
                                     f"metadata/annotations/{size_key}", "value": "3"}], kind="json")
    assert "placement request" in str(refused.value) and "3 does not divide" in str(refused.value)
    # L5: an empty level.
    with pytest.raises(ApiError) as refused:
        kube.create(path, jobset("empty", annotations={"alpha.jobset.sigs.k8s.io/exclusive-topology": ""}))
    assert "exclusive-topology: empty" in str(refused.value)
