"""The gang start on real pods: kubelet v1.20.2 and containerd run the
containers (e2e/cluster/node.sh), the barrier is muster's own image
(images/images.sh) injected by the webhook, and the controller releases it.

Every time asserted here is kubelet's own, from the pod status (container
startedAt / finishedAt, second precision), not muster's logs. The webhook and
the controller run on this machine, as in the rest of the suite; their
in-cluster install is not tested here yet.
"""

import datetime
import pathlib
import subprocess

import pytest

from conftest import ROOT, Controller, wait_for
from test_webhook import JOBSETS, admitted, serving_webhook
import muster_api as api  # noqa: E402

REAL_NODE_LABEL = "muster.dev/real-node"
LATE_LABEL = "e2e.muster.dev/late"
SELECTOR = "e2e.muster.dev/real-webhook"
IMAGES = ROOT / "build" / "images" / "images.txt"


def image_refs():
    """Archive name -> image reference, as images.sh wrote them."""
    refs = {}
    for line in IMAGES.read_text().splitlines():
        archive, ref, _digest = line.split()
        refs[pathlib.Path(archive).stem] = ref
    return refs


@pytest.fixture(scope="module")
def real_node(kube):
    """The first Ready real node (make cluster starts one): never skipped,
    since the suite's point here is that real nodes exist."""
    nodes, _ = kube.list("/api/v1/nodes", labelSelector=f"{REAL_NODE_LABEL}=true")
    ready = [n["metadata"]["name"] for n in nodes
             if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))]
    assert ready, "no Ready real node: e2e/cluster/up.sh starts MUSTER_REAL_NODES (default 1) with node.sh"
    return sorted(ready)[0]


@pytest.fixture(scope="module")
def real_webhook(kube, kubeconfig, tmp_path_factory):
    with serving_webhook(kube, kubeconfig, tmp_path_factory.mktemp("real-webhook"), SELECTOR,
                         barrier_image=image_refs()["muster-barrier"]) as server:
        yield server


def when(stamp):
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def real_pod_template(node, late=None, seconds=2):
    selector = {REAL_NODE_LABEL: "true", "kubernetes.io/hostname": node}
    if late:
        selector[LATE_LABEL] = late
    return {"spec": {
        "restartPolicy": "Never",
        "nodeSelector": selector,
        "tolerations": [{"key": REAL_NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}],
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "main", "image": image_refs()["busybox"], "imagePullPolicy": "Never",
                        "command": ["sh", "-c", f"sleep {seconds}"]}]}}


def container_times(pod):
    """(barrier started, barrier finished, main started) of a pod, from kubelet."""
    barrier = [s for s in pod["status"].get("initContainerStatuses", []) if s["name"] == api.BARRIER_CONTAINER]
    main = pod["status"].get("containerStatuses", [])
    if not barrier or not main:
        return None
    done = barrier[0]["state"].get("terminated")
    state = main[0]["state"].get("running") or main[0]["state"].get("terminated")
    if not done or not state or not state.get("startedAt"):
        return None
    assert done["exitCode"] == 0, (pod["metadata"]["name"], done)
    return when(done["startedAt"]), when(done["finishedAt"]), when(state["startedAt"])


def test_gang_start_on_real_pods_released_by_push(kube, kubeconfig, namespace, real_node, real_webhook,
                                                    run_standin, tmp_path):
    """Two pods start at once and wait in muster's barrier; a third can only
    be scheduled once the test labels the node 20 s later. No main container
    starts before the last barrier has started, and the release comes by the
    push, well before kubelet's default 1-minute volume sync could bring it."""
    admitted(kube, namespace, SELECTOR)
    run_standin("jobset_controller.py", "--namespace", namespace)
    controller = Controller(kubeconfig, namespace, tmp_path / "controller.log")
    late_value = namespace
    try:
        kube.create(JOBSETS.format(namespace), {
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "real"},
            "spec": {"groupSchedulingConfig": {"timeoutAfterSeconds": 300}, "replicatedJobs": [
                {"name": "early", "replicas": 1, "template": {"spec": {
                    "completions": 2, "parallelism": 2, "backoffLimit": 0,
                    "template": real_pod_template(real_node)}}},
                {"name": "late", "replicas": 1, "template": {"spec": {
                    "completions": 1, "parallelism": 1, "backoffLimit": 0,
                    "template": real_pod_template(real_node, late=late_value)}}}]}})

        def pods():
            items, _ = kube.list(f"/api/v1/namespaces/{namespace}/pods",
                                 labelSelector=f"{api.JOBSET_LABEL_NAME}=real")
            return items

        def early_barriers_running():
            running = [p for p in pods() if p["metadata"]["name"].startswith("real-early-")
                       and any(s["name"] == api.BARRIER_CONTAINER and "running" in s["state"]
                               for s in p["status"].get("initContainerStatuses", []))]
            return len(running) == 2

        # Real pods: a sandbox, the barrier's image, the volume; seconds each.
        wait_for(early_barriers_running, timeout=120, interval=1, what="both early barriers running on the node")
        held_since = datetime.datetime.now().timestamp()
        # The late pod is still unschedulable; hold the group 20 s more.
        wait_for(lambda: datetime.datetime.now().timestamp() - held_since >= 20, timeout=30, interval=1,
                 what="20 s of holding")
        assert all(container_times(p) is None for p in pods()), "a main container started before the group"
        kube.patch(f"/api/v1/nodes/{real_node}", {"metadata": {"labels": {LATE_LABEL: late_value}}})

        def all_started():
            got = {p["metadata"]["name"]: container_times(p) for p in pods()}
            return got if len(got) == 3 and all(got.values()) else None

        # The late pod's start (seconds) and the push (well under a minute);
        # the deadline is a volume sync's worst case, so a missed push fails
        # on the latency assertion below with its figure, not on a timeout.
        times = wait_for(all_started, timeout=180, interval=1, what="every main container started")
        last_barrier = max(t[0] for t in times.values())
        first_main = min(t[2] for t in times.values())
        last_main = max(t[2] for t in times.values())
        early = [t for name, t in times.items() if name.startswith("real-early-")]
        print(f"barriers started {[t[0] - last_barrier for t in times.values()]} s before the last; mains "
              f"{first_main - last_barrier:.0f}..{last_main - last_barrier:.0f} s after it")
        # Held: the early barriers started 20 s or more before the last one.
        assert all(last_barrier - t[0] >= 15 for t in early), times
        # No main container before the last pod started (kubelet's seconds).
        assert first_main >= last_barrier, times
        # Released by the push: kubelet's default sync (1 minute plus jitter)
        # would take 60-90 s through the volume.
        assert last_main - last_barrier <= 30, times
        pushed = [line for line in controller.output().splitlines() if " event=pushed " in line]
        assert pushed and " ok=3 " in pushed[-1], controller.output()[-3000:]
    finally:
        controller.stop()
        print(controller.output()[-3000:])
        kube.patch(f"/api/v1/nodes/{real_node}", {"metadata": {"labels": {LATE_LABEL: None}}})
        # Real pods take a while to go: delete them now, without grace.
        subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "delete", "pods", "--all",
                        "--grace-period=0", "--force", "--wait=false"], capture_output=True)
