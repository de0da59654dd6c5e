"""The gang start in flows users run every day, end to end on the real
control plane: a JobSet deleted and applied again while the old pods are
still there, a ConfigMap of the group's name that is not the JobSet's, and a
released JobSet suspended and resumed (what Kueue does on preemption).

Each test runs the real webhook (registered by URL, as test_webhook.py
does), the real controller, the real barrier (run by the node agent, with
its ConfigMap volume synced every SYNC_PERIOD seconds so that the volume path
is in play, not only the push) and the JobSet stand-in. JobSets are created
as users write them. A replicated job `late` can only be scheduled on a node
that carries the label GATE, which the test adds when it wants those pods to
start: until then the group is incomplete, and no main container may start.

What is asserted comes from the node agent's container start times (its
--events file), never from muster's own logs: every main container of an
incarnation starts after the last barrier of that incarnation started.
"""

import json
import time
import urllib.request

import pytest

from conftest import Controller, wait_for
from kube import ApiError
from test_webhook import JOBSETS, hooked, webhook  # noqa: F401 - fixtures used by name
import muster_api as api  # noqa: E402

BARRIER = api.BARRIER_CONTAINER
GATE = "e2e.muster.dev/gate"
POOL = "gang-flows"
SYNC_PERIOD = 2  # the node agent's volume sync: a ConfigMap reaches a barrier within 2-3 s
# Long enough that a release by a wrong ConfigMap would have reached every
# waiting barrier several times over (volume syncs every SYNC_PERIOD s, plus
# jitter), and the controller's once-a-second decision has run many times.
HOLD_SECONDS = 5 * SYNC_PERIOD + 4


def run_gang(run_standin, kubeconfig, kube, namespace, tmp_path, sync_period):
    """Two nodes of POOL, neither gated; node agent (volume sync every
    `sync_period` s), JobSet stand-in and controller for the namespace."""
    events = tmp_path / "events.jsonl"
    shape = tmp_path / "shape.yaml"
    shape.write_text(f"groups:\n  - name: {POOL}\n    count: 2\n"
                     f"    allocatable: {{cpu: \"16\", memory: 64Gi, pods: \"110\"}}\n"
                     f"    labels: {{pool: {POOL}}}\n")
    # Crash-loop back-off at a tenth of kubelet's (1 s doubling): a barrier
    # restarted in place after its timeout comes back in seconds.
    run_standin("node_agent.py", "--shape", shape, "--work-dir", tmp_path / "agent", "--sync-period",
                sync_period, "--events", events, "--delete-nodes", "--max-run-seconds", 600, "--backoff-scale", 0.1)
    run_standin("jobset_controller.py", "--namespace", namespace)
    wait_for(lambda: len(nodes(kube)) == 2, timeout=60, what="the two nodes")
    return events, Controller(kubeconfig, namespace, tmp_path / "controller.log")


@pytest.fixture
def gang(run_standin, kubeconfig, kube, hooked, tmp_path):  # noqa: F811 - the imported fixture
    """The volume synced every SYNC_PERIOD s: both release paths in play."""
    events, controller = run_gang(run_standin, kubeconfig, kube, hooked, tmp_path, SYNC_PERIOD)
    yield hooked, events, controller
    controller.stop()
    print(controller.output()[-6000:])


@pytest.fixture
def gang_push_only(run_standin, kubeconfig, kube, hooked, tmp_path):  # noqa: F811 - the imported fixture
    """The volume synced hourly: a release within the test is the push's."""
    events, controller = run_gang(run_standin, kubeconfig, kube, hooked, tmp_path, 3600)
    yield hooked, events, controller
    controller.stop()
    print(controller.output()[-6000:])


def nodes(kube):
    items, _ = kube.list("/api/v1/nodes", labelSelector=f"pool={POOL}")
    return sorted(n["metadata"]["name"] for n in items
                  if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", [])))


def gate(kube, open_):
    """Opens (labels) or closes the gate on every node of the pool."""
    for name in nodes(kube):
        kube.patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": {GATE: "open" if open_ else None}}})


def jobset_body(name, restart_policy="Never", timeout=600, backoff_limit=0, jobs=None, host_network=False):
    """By default `first`: 1 pod anywhere in the pool; `late`: 3 pods that
    need the gate. 4 pods in the group, every main container runs 10
    minutes. `jobs`: other (name, replicas, node selector, gated) tuples."""
    def replicated_job(job, replicas, selector, gated):
        selector = {"pool": POOL, **selector, **({GATE: "open"} if gated else {})}
        spec = {"restartPolicy": restart_policy, "nodeSelector": selector,
                "containers": [{"name": "main", "image": "busybox"}]}
        if host_network:
            spec["hostNetwork"] = True
        return {"name": job, "replicas": replicas, "template": {"spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": backoff_limit,
            "template": {"metadata": {"annotations": {"e2e.muster.dev/run-seconds": "600"}}, "spec": spec}}}}

    jobs = jobs or [("first", 1, {}, False), ("late", 3, {}, True)]
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
            "spec": {"groupSchedulingConfig": {"timeoutAfterSeconds": timeout}, "failurePolicy": {"maxRestarts": 0},
                     "replicatedJobs": [replicated_job(*job) for job in jobs]}}


def gone(kube, path):
    try:
        kube.get(path)
    except ApiError as error:
        if error.status == 404:
            return True
        raise
    return False


def read_events(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def starts(events_path, container, pods):
    """pod key -> first start time of `container`, for the given pod keys."""
    out = {}
    for e in read_events(events_path):
        if e["container"] == container and e["event"] == "started" and e["pod"] in pods:
            out.setdefault(e["pod"], e["t"])
    return out


def pods_of(kube, namespace, **labels):
    """namespace/name of the live pods whose labels include `labels`."""
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    items, _ = kube.list(f"/api/v1/namespaces/{namespace}/pods", labelSelector=selector)
    return {f"{namespace}/{p['metadata']['name']}" for p in items if not p["metadata"].get("deletionTimestamp")}


def wait_pods(kube, namespace, count, what, **labels):
    """The `count` live pods whose labels include `labels`, once there are that many."""
    return wait_for(lambda: (lambda p: p if len(p) == count else None)(pods_of(kube, namespace, **labels)),
                    timeout=60, what=what)


def create_and_run(kube, namespace, events_path, name):
    """Creates the JobSet `name` with the gate open and waits until its four
    main containers run (released). Returns (uid, pod keys)."""
    path = JOBSETS.format(namespace)
    gate(kube, True)
    kube.create(path, jobset_body(name))
    uid = kube.get(f"{path}/{name}")["metadata"]["uid"]
    pods = wait_pods(kube, namespace, 4, f"the pods of {name}", **{api.JOBSET_LABEL_UID: uid})
    wait_for(lambda: len(starts(events_path, "main", pods)) == 4, timeout=90, interval=0.2,
             what=f"the main containers of {name}")
    return uid, pods


def assert_held_then_released_together(kube, events_path, namespace, pods):
    """The group's barriers are all running or the pods are held; open the
    gate, then every main container starts after the last barrier did."""
    gate(kube, True)
    main = wait_for(lambda: (lambda m: m if len(m) == len(pods) else None)(starts(events_path, "main", pods)),
                    timeout=120, interval=0.2, what=f"the {len(pods)} main containers")
    barrier = starts(events_path, BARRIER, pods)
    assert set(barrier) == set(pods), barrier
    assert min(main.values()) >= max(barrier.values()), (main, barrier)
    return main, barrier


def hold_first_only(kube, events_path, namespace, uid, what):
    """`first` of the JobSet `uid` reaches its barrier while `late` cannot be
    scheduled; for HOLD_SECONDS no main container of that JobSet may start."""
    first = wait_for(lambda: pods_of(kube, namespace, **{api.JOBSET_LABEL_UID: uid,
                                                          api.JOBSET_LABEL_REPLICATED_JOB: "first"}),
                     timeout=60, what=f"{what}: the pod of `first`")
    wait_for(lambda: starts(events_path, BARRIER, first), timeout=60, interval=0.2,
             what=f"{what}: the barrier of `first` running")
    time.sleep(HOLD_SECONDS)
    mine = pods_of(kube, namespace, **{api.JOBSET_LABEL_UID: uid})
    early = starts(events_path, "main", mine)
    assert not early, f"{what}: main containers started with the group incomplete: {early}"
    return first


def test_same_name_new_jobset_does_not_count_the_old_pods(kube, gang):
    """`kubectl delete -f js.yaml && kubectl apply -f js.yaml` while the old
    pods are still there (orphaned here, so that they stay as long as the
    test needs; the garbage collector leaves the same window open for
    seconds to minutes). Three old pods run their main container with the
    same JobSet name and restart attempt: with the first new pod they make
    the four the group expects, yet the new group must wait for its own."""
    namespace, events_path, controller = gang
    path = JOBSETS.format(namespace)
    old_uid, old = create_and_run(kube, namespace, events_path, "gang")

    # Delete, leaving the pods; the old Jobs go too, their pods stay.
    orphan = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"}
    kube.delete(f"{path}/gang", body=orphan)
    wait_for(lambda: gone(kube, f"{path}/gang"), timeout=60, what="the old JobSet gone (as kubectl delete waits)")
    jobs, _ = kube.list(f"/apis/batch/v1/namespaces/{namespace}/jobs")
    for job in jobs:
        kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/{job['metadata']['name']}", body=orphan)
    wait_for(lambda: not kube.list(f"/apis/batch/v1/namespaces/{namespace}/jobs")[0], timeout=30,
             what="the old Jobs gone")
    # The orphaned release of the old JobSet goes as the garbage collector
    # would take it (a leftover still there is the next test's case).
    kube.delete(f"/api/v1/namespaces/{namespace}/configmaps/gang{api.CONFIGMAP_SUFFIX}")
    # One old pod finishes going, three stay: 3 + the first new pod = 4.
    leaving = sorted(old)[0]
    kube.delete(f"/api/v1/namespaces/{namespace}/pods/{leaving.split('/')[1]}")
    wait_for(lambda: len(pods_of(kube, namespace, **{api.JOBSET_LABEL_UID: old_uid})) == 3,
             timeout=60, what="three old pods left")

    gate(kube, False)
    released_before = len(controller.releases())
    kube.create(path, jobset_body("gang"))
    new_uid = kube.get(f"{path}/gang")["metadata"]["uid"]
    assert new_uid != old_uid
    hold_first_only(kube, events_path, namespace, new_uid, "the new JobSet")
    assert len(controller.releases()) == released_before, controller.releases()

    new = wait_pods(kube, namespace, 4, "the new pods", **{api.JOBSET_LABEL_UID: new_uid})
    assert_held_then_released_together(kube, events_path, namespace, new)
    configmap = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/gang{api.CONFIGMAP_SUFFIX}")
    assert configmap["data"]["jobset-uid"] == new_uid, configmap
    assert [o["uid"] for o in configmap["metadata"]["ownerReferences"]] == [new_uid]
    releases = controller.releases()
    assert len(releases) == 2 and "started=4" in releases[-1], releases


@pytest.mark.parametrize("whose", ["user", "leftover"])
def test_a_configmap_that_is_not_the_jobsets_never_releases_it(kube, gang, whose):
    """A ConfigMap `<jobset>-group-scheduling` that says "started: 0" but is
    not this JobSet's: a user's, or the leftover of an earlier JobSet of the
    same name that the garbage collector has not removed yet. kubelet
    projects it into every barrier's volume; the barriers must not pass."""
    namespace, events_path, controller = gang
    path = JOBSETS.format(namespace)
    metadata = {"name": api.configmap_name("gang")}
    data = {api.CONFIGMAP_KEY_STARTED: "0"}
    if whose == "leftover":
        # The garbage collector deletes it (its owner is gone); the test's
        # finalizer holds it there, Terminating, as long as the collector
        # would take on a busy cluster.
        earlier = "00000000-0000-4000-8000-00000000dead"
        metadata["ownerReferences"] = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "gang",
                                        "uid": earlier, "controller": True}]
        metadata["finalizers"] = ["e2e.muster.dev/hold"]
        data.update({"jobset-uid": earlier, "generation": "0"})
    kube.create(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": metadata, "data": data})

    gate(kube, False)
    kube.create(path, jobset_body("gang"))
    uid = kube.get(f"{path}/gang")["metadata"]["uid"]
    hold_first_only(kube, events_path, namespace, uid, f"the {whose}'s ConfigMap")

    cm_path = f"/api/v1/namespaces/{namespace}/configmaps/gang{api.CONFIGMAP_SUFFIX}"
    if whose == "user":
        # Left alone and reported; the group waits until it is deleted.
        def conflict_event():
            items, _ = kube.list(f"/api/v1/namespaces/{namespace}/events")
            return [e for e in items if e.get("reason") == "ConfigMapConflict"]
        wait_for(conflict_event, timeout=30, what="the ConfigMapConflict Event")
        kube.delete(cm_path)
    else:
        # The collector finishes; the controller would otherwise replace it.
        kube.delete(cm_path)
        kube.patch(cm_path, {"metadata": {"finalizers": None}})
    pods = wait_pods(kube, namespace, 4, "the pods", **{api.JOBSET_LABEL_UID: uid})
    assert_held_then_released_together(kube, events_path, namespace, pods)
    configmap = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/gang{api.CONFIGMAP_SUFFIX}")
    assert configmap["data"] == {api.CONFIGMAP_KEY_STARTED: "0", api.CONFIGMAP_KEY_JOBSET_UID: uid, api.CONFIGMAP_KEY_GENERATION: "0"}, configmap


def test_suspend_and_resume_starts_a_new_gang(kube, gang):
    """A released JobSet suspended and resumed (Kueue's preemption): JobSet
    deletes the pods and makes new ones with the same restart attempt. The
    webhook raises the gang generation on the resume; the release of the
    generation before (still in the ConfigMap) must not let the new pods
    through while their siblings cannot be scheduled."""
    namespace, events_path, controller = gang
    path = JOBSETS.format(namespace)
    uid, before = create_and_run(kube, namespace, events_path, "gang")
    configmap = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/gang{api.CONFIGMAP_SUFFIX}")
    assert configmap["data"][api.CONFIGMAP_KEY_STARTED] == "0", configmap

    kube.patch(f"{path}/gang", {"spec": {"suspend": True}})
    wait_for(lambda: not pods_of(kube, namespace, **{api.JOBSET_LABEL_UID: uid}), timeout=60,
             what="the suspended JobSet's pods gone")
    gate(kube, False)
    resumed = kube.patch(f"{path}/gang", {"spec": {"suspend": False}})

    first = hold_first_only(kube, events_path, namespace, uid, "the resumed JobSet")
    templates = [rj["template"]["spec"]["template"] for rj in resumed["spec"]["replicatedJobs"]]
    assert [t["metadata"]["labels"].get(api.LABEL_GANG_GENERATION) for t in templates] == ["1", "1"], templates
    (pod,) = [kube.get(f"/api/v1/namespaces/{namespace}/pods/{p.split('/')[1]}") for p in first]
    assert pod["metadata"]["labels"][api.LABEL_GANG_GENERATION] == "1"
    assert pod["metadata"]["labels"][api.JOBSET_LABEL_RESTART_ATTEMPT] == "0"

    after = wait_pods(kube, namespace, 4, "generation 1's pods", **{api.JOBSET_LABEL_UID: uid, api.LABEL_GANG_GENERATION: "1"})
    assert not after & before
    assert_held_then_released_together(kube, events_path, namespace, after)
    configmap = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/gang{api.CONFIGMAP_SUFFIX}")
    assert configmap["data"] == {api.CONFIGMAP_KEY_STARTED: "0", api.CONFIGMAP_KEY_JOBSET_UID: uid, api.CONFIGMAP_KEY_GENERATION: "1"}, configmap
    releases = controller.releases()
    assert [("generation=0" in r, "generation=1" in r) for r in releases] == [(True, False), (False, True)], releases

    # Evicted as Kueue does it: suspended, and the pod templates restored to
    # what it admitted (without muster's label). The next resume must still
    # start generation 2: a second generation 1 would pass on the release above.
    kube.patch(f"{path}/gang", {"spec": {"suspend": True}})
    wait_for(lambda: not pods_of(kube, namespace, **{api.JOBSET_LABEL_UID: uid}), timeout=60,
             what="the evicted JobSet's pods gone")
    gate(kube, False)
    kube.patch(f"{path}/gang", [{"op": "remove", "path": f"/spec/replicatedJobs/{i}/template/spec/template/metadata/"
                                 "labels/muster.dev~1gang-generation"} for i in range(2)], kind="json")
    readmitted = kube.patch(f"{path}/gang", {"spec": {"suspend": False}})
    hold_first_only(kube, events_path, namespace, uid, "the re-admitted JobSet")
    templates = [rj["template"]["spec"]["template"] for rj in readmitted["spec"]["replicatedJobs"]]
    assert [t["metadata"]["labels"].get(api.LABEL_GANG_GENERATION) for t in templates] == ["2", "2"], templates
    third = wait_pods(kube, namespace, 4, "generation 2's pods", **{api.JOBSET_LABEL_UID: uid, api.LABEL_GANG_GENERATION: "2"})
    assert_held_then_released_together(kube, events_path, namespace, third)
    configmap = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/gang{api.CONFIGMAP_SUFFIX}")
    assert configmap["data"]["generation"] == "2", configmap


def barrier_status(kube, namespace, pod_key):
    pod = kube.get(f"/api/v1/namespaces/{namespace}/pods/{pod_key.split('/')[1]}")
    for status in pod["status"].get("initContainerStatuses") or []:
        if status["name"] == BARRIER:
            return status
    return None


def test_a_timeout_restarted_in_place_is_reported_once(kube, gang):
    """restartPolicy OnFailure, JobSet's default: a barrier that times out
    (exit code 3) is restarted in place by kubelet, so the pod shows it
    waiting or running again, with the timeout in lastState only. The
    controller reports it once per pod and attempt (Event, metric, log),
    however often it times out again."""
    namespace, events_path, controller = gang
    path = JOBSETS.format(namespace)
    gate(kube, False)
    kube.create(path, jobset_body("gang", restart_policy="OnFailure", timeout=2, backoff_limit=6))
    uid = kube.get(f"{path}/gang")["metadata"]["uid"]
    (first,) = wait_for(lambda: pods_of(kube, namespace, **{api.JOBSET_LABEL_UID: uid,
                                                             api.JOBSET_LABEL_REPLICATED_JOB: "first"}),
                        timeout=60, what="the pod of `first`")

    def timed_out_twice():
        status = barrier_status(kube, namespace, first)
        last = ((status or {}).get("lastState") or {}).get("terminated") or {}
        return status if status and status["restartCount"] >= 2 and last.get("exitCode") == 3 else None

    status = wait_for(timed_out_twice, timeout=90, interval=0.5, what="the barrier timed out twice")
    assert "timed out after 2 s" in status["lastState"]["terminated"].get("message", ""), status

    def timed_out_events():
        items, _ = kube.list(f"/api/v1/namespaces/{namespace}/events")
        return [e for e in items if e.get("reason") == "GroupTimedOut" and e["involvedObject"].get("uid") == uid]

    (event,) = wait_for(timed_out_events, timeout=30, what="the GroupTimedOut Event")
    assert event["type"] == "Warning" and "Restart attempt 0 did not start as a group" in event["message"], event
    port = controller.metrics_port()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        metrics = response.read().decode()
    assert "muster_barrier_timeouts_total 1\n" in metrics, [m for m in metrics.splitlines() if "timeout" in m]
    lines = [line for line in controller.output().splitlines() if " event=barrier-timeout " in line]
    assert len(lines) == 1, lines
    # A third timeout changes nothing either.
    wait_for(lambda: (barrier_status(kube, namespace, first) or {}).get("restartCount", 0) >= 3, timeout=60,
             interval=0.5,
             what="a third timeout")
    time.sleep(2)
    assert len(timed_out_events()) == 1
    assert not starts(events_path, "main", {first}), "the main container started with the group incomplete"


def test_host_network_pods_sharing_a_node_are_all_released_by_the_push(kube, gang_push_only):
    """hostNetwork: true (the TPU multislice shape): the pods of a node share
    its address, so every barrier there listens on the same port. The push
    must reach all of them, not only the one that got the port: three pods
    per node on two nodes, the volume synced hourly, and every main
    container starts together after the last barrier."""
    namespace, events_path, controller = gang_push_only
    path = JOBSETS.format(namespace)
    first_node, second_node = nodes(kube)
    host = "kubernetes.io/hostname"
    gate(kube, False)
    kube.create(path, jobset_body("gang", host_network=True, jobs=[
        ("left", 3, {host: first_node}, False), ("right", 3, {host: second_node}, True)]))
    uid = kube.get(f"{path}/gang")["metadata"]["uid"]
    left = wait_pods(kube, namespace, 3, "the pods of the first node", **{api.JOBSET_LABEL_UID: uid, api.JOBSET_LABEL_REPLICATED_JOB: "left"})
    wait_for(lambda: len(starts(events_path, BARRIER, left)) == 3, timeout=60, interval=0.2,
             what="three barriers on the first node")
    pods = wait_pods(kube, namespace, 6, "the six pods", **{api.JOBSET_LABEL_UID: uid})

    def addresses():
        """The first node's pods' addresses, once each has reported one: a
        barrier's start comes from the container, the pod's status (with
        its podIP) from the node's later status write."""
        found = {kube.get(f"/api/v1/namespaces/{namespace}/pods/{p.split('/')[1]}")["status"].get("podIP")
                 for p in left}
        return found if None not in found else None
    ips = wait_for(addresses, timeout=30, interval=0.2, what="the first node's pods' addresses in their status")
    assert len(ips) == 1, f"the first node's pods do not share one address: {ips}"
    main, barrier = assert_held_then_released_together(kube, events_path, namespace, pods)
    # Released by the push (the volume syncs hourly): all six well within seconds.
    assert max(main.values()) - max(barrier.values()) < 5.0, (main, barrier)
    pushed = [line for line in controller.output().splitlines() if " event=pushed " in line]
    assert len(pushed) == 1 and " ok=6 " in pushed[0], pushed
