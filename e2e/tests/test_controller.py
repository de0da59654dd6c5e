"""End-to-end tests of bin/muster-controller on the real control plane: a
group-scheduled JobSet whose pods land on a fast pool and on a pool Ready 8 s
late is released at once when its last pod starts, by the push to every
barrier (the node agent syncs volumes only hourly here), and the release is
recorded in the ConfigMap <jobset>-group-scheduling owned by the JobSet.

The JobSet is created in its post-injection form (what the webhook will make
of it): the real barrier as init container, the ConfigMap volume, the token
in the pod env and in the JobSet annotation muster.dev/barrier-token. The
1.20 CRD prunes spec.groupSchedulingConfig, so the JobSet is marked
group-scheduled by the annotation muster.dev/group-scheduling-timeout too.
"""

import json
import re
import socket
import subprocess
import urllib.error
import urllib.request

import pytest

from conftest import CONTROLLER, ROOT, Controller, barrier_init_container, group_scheduling_volume, wait_for
from kube import ApiError
from test_webhook import free_port
import muster_api as api  # noqa: E402

SHAPES = ROOT / "e2e" / "shapes"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{}/jobsets"
TOKEN = "e2e-controller-token-0123456789"
BARRIER = api.BARRIER_CONTAINER

pytestmark = pytest.mark.skipif(not CONTROLLER.exists(), reason=f"{CONTROLLER} is not built (make)")


@pytest.fixture
def cluster(run_standin, kubeconfig, namespace, tmp_path):
    """Node agent (slow-pool shape, hourly volume sync), JobSet stand-in and
    the controller, all for this test's namespace."""
    events = tmp_path / "events.jsonl"
    # slow-pool.yaml's shape, but the slow pool *appears* (Ready) 8 s late
    # instead of existing not-Ready: with a node that exists but is not Ready
    # the scheduler can bind a pod to it before the not-ready taint lands, and
    # the agent then admits that pod only at its next sync, an hour away here.
    shape = tmp_path / "late-pool.yaml"
    shape.write_text((SHAPES / "slow-pool.yaml").read_text().replace(
        "readyAfterSeconds: 8", "appearAfterSeconds: 8\n    readyAfterSeconds: 8"))
    run_standin("node_agent.py", "--shape", shape, "--work-dir", tmp_path / "agent",
                "--sync-period", 3600, "--events", events, "--delete-nodes", "--max-run-seconds", 30)
    run_standin("jobset_controller.py", "--namespace", namespace)
    controller = Controller(kubeconfig, namespace, tmp_path / "controller.log")
    yield controller, events
    controller.stop()
    print(controller.output())


def pod_template(jobset, pool, annotations=None):
    return {
        "metadata": {"labels": {api.LABEL_GROUP_SCHEDULING: "true"}, "annotations": dict(annotations or {})},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"pool": pool},
            "initContainers": [barrier_init_container(TOKEN, "120")],
            "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3"]}],
            "volumes": [group_scheduling_volume(f"{jobset}{api.CONFIGMAP_SUFFIX}")],
        },
    }


def jobset_body(name, fast_annotations=None, max_restarts=0):
    """Two replicated jobs of 2 × 1 pod: one on the fast pool, one on the
    slow pool (Ready 8 s late). Expected count 4."""
    def replicated_job(job, pool, annotations=None):
        return {"name": job, "replicas": 2, "template": {"spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 0,
            "template": pod_template(name, pool, annotations)}}}

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "annotations": {
            api.ANNOTATION_BARRIER_TOKEN: TOKEN, api.ANNOTATION_GROUP_TIMEOUT: "120"}},
        "spec": {
            "groupSchedulingConfig": {"timeoutAfterSeconds": 120},
            "failurePolicy": {"maxRestarts": max_restarts},
            "replicatedJobs": [replicated_job("fast", "fast", fast_annotations), replicated_job("slow", "slow")],
        },
    }


def read_events(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def attempt_of(kube, namespace):
    """pod key -> restart attempt, for the pods still there."""
    items, _ = kube.list(f"/api/v1/namespaces/{namespace}/pods")
    return {f"{namespace}/{p['metadata']['name']}": p["metadata"]["labels"].get(api.JOBSET_LABEL_RESTART_ATTEMPT)
            for p in items}


def starts(events, container, namespace, pods=None):
    """pod key -> start time of `container`, for this test's namespace only
    (the agent also runs what earlier tests left behind on the same nodes)."""
    return {e["pod"]: e["t"] for e in events
            if e["container"] == container and e["event"] == "started" and e["pod"].startswith(namespace + "/")
            and (pods is None or e["pod"] in pods)}


def get_configmap(kube, namespace, name):
    try:
        return kube.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}{api.CONFIGMAP_SUFFIX}")
    except ApiError as error:
        if error.status == 404:
            return None
        raise


def test_group_released_at_once_when_the_last_pod_starts(kube, kubeconfig, namespace, cluster, tmp_path):
    controller, events_path = cluster
    name = "gang"
    kube.create(JOBSETS.format(namespace), jobset_body(name))
    jobset = kube.get(JOBSETS.format(namespace) + f"/{name}")

    def all_main_started():
        main = starts(read_events(events_path), "main", namespace)
        return main if len(main) == 4 else None

    main = wait_for(all_main_started, timeout=90, interval=0.2, what="all 4 main containers started")
    barrier = starts(read_events(events_path), BARRIER, namespace)
    assert len(barrier) == 4, barrier
    assert set(barrier) == set(main)
    last_barrier = max(barrier.values())
    # The slow pool is Ready 8 s late: the fast pods really waited.
    assert last_barrier - min(barrier.values()) > 4, barrier
    assert min(main.values()) >= last_barrier, (main, barrier)
    assert max(main.values()) - min(main.values()) < 1.0, main
    # Released by the push (volumes sync hourly here), well within a second or two.
    assert min(main.values()) - last_barrier < 3.0, (main, barrier)

    configmap = get_configmap(kube, namespace, name)
    assert configmap["data"][api.CONFIGMAP_KEY_STARTED] == "0"
    owners = configmap["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"], o["uid"], o.get("controller")) for o in owners] == \
        [("JobSet", name, jobset["metadata"]["uid"], True)]

    releases = wait_for(controller.releases, timeout=5, what="release line")
    assert len(releases) == 1, releases
    assert "attempt=0" in releases[0] and "started=4" in releases[0], releases[0]
    # The push runs after the write, off the controller's lock, and logs its own line.
    pushed = wait_for(lambda: [line for line in controller.output().splitlines() if " event=pushed " in line],
                      timeout=5, what="pushed line")
    assert len(pushed) == 1 and "attempt=0" in pushed[0] and " ok=4 " in pushed[0], pushed

    # The release is an Event on the JobSet, for `kubectl describe jobset`.
    def released_events():
        items, _ = kube.list(f"/api/v1/namespaces/{namespace}/events")
        return [e for e in items if e.get("reason") == "GroupReleased"
                and e["involvedObject"].get("uid") == jobset["metadata"]["uid"]]

    events = wait_for(released_events, timeout=10, what="GroupReleased event")
    assert len(events) == 1, events
    assert events[0]["message"].startswith("Released restart attempt 0: 4 of 4 pods started"), events[0]

    # A restarted controller reads the release back and does not release again.
    controller.stop()
    again = Controller(kubeconfig, namespace, tmp_path / "controller-again.log")
    try:
        wait_for(lambda: "action=released" in again.output(), timeout=15, what="restarted controller settled")
        assert "event=released-read" in again.output() and "attempt=0" in again.output()
        assert not again.releases(), again.output()
    finally:
        again.stop()


def test_restarted_jobset_is_held_until_its_new_pods_start_then_released_once(kube, namespace, cluster):
    controller, events_path = cluster
    name = "restarts"
    # Index 0 of each "fast" Job fails after release: the JobSet restarts once
    # (maxRestarts 1), then fails for good.
    failing = {"e2e.muster.dev/exit-code": "1", "e2e.muster.dev/fail-completion-index": "0",
               "e2e.muster.dev/run-seconds": "1"}
    kube.create(JOBSETS.format(namespace), jobset_body(name, failing, max_restarts=1))

    def released(attempt):
        configmap = get_configmap(kube, namespace, name)
        return configmap and configmap["data"].get(api.CONFIGMAP_KEY_STARTED) == str(attempt)

    wait_for(lambda: released(0), timeout=90, interval=0.5, what="attempt 0 released")
    wait_for(lambda: released(1), timeout=120, interval=0.5, what="attempt 1 released")
    lines = controller.releases()
    assert [re.search(r"attempt=(\d+)", line).group(1) for line in lines] == ["0", "1"], lines

    # Attempt 1's main containers started only after all its own barriers did.
    def attempt_one_main():
        events = read_events(events_path)
        attempts = attempt_of(kube, namespace)
        pods = {pod for pod, attempt in attempts.items() if attempt == "1"}
        main = starts(events, "main", namespace, pods)
        return (pods, main) if len(pods) == 4 and len(main) == 4 else None

    pods, main = wait_for(attempt_one_main, timeout=30, interval=0.5, what="attempt 1 main containers")
    barrier = starts(read_events(events_path), BARRIER, namespace, pods)
    assert len(barrier) == 4
    assert min(main.values()) >= max(barrier.values()), (main, barrier)
    assert max(main.values()) - min(main.values()) < 1.0, main


def test_metrics_are_loopback_only_by_default_and_probes_have_a_port_of_their_own(kubeconfig, namespace, tmp_path):
    """No --metrics-addr: the plain-HTTP /metrics listens on 127.0.0.1:8080,
    not every interface (deploy/ opens it to Prometheus alone, behind a
    NetworkPolicy). --health-addr serves /healthz and /readyz without
    /metrics, for the kubelet's probes."""
    with socket.socket() as s:  # is the default port free here? then the server must take it
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", 8080))
            default_free = True
        except OSError:
            default_free = False
    health = free_port()
    log_path = tmp_path / "controller.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen([str(CONTROLLER), "--kubeconfig", kubeconfig, "--namespace", namespace,
                                    "--leader-elect", "false", "--health-addr", f"127.0.0.1:{health}"],
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        if not default_free:  # it names the loopback default in its refusal
            wait_for(lambda: process.poll() is not None, timeout=30, what="the controller to exit")
            assert "127.0.0.1:8080" in log_path.read_text(), log_path.read_text()
            return
        started = wait_for(lambda: re.search(r"event=started .*", log_path.read_text()), timeout=30,
                           what="the controller's start line").group(0)
        assert "metrics=127.0.0.1:8080" in started and f"health=127.0.0.1:{health}" in started, started
        listening = re.findall(r"event=http-started listen=(\S+)", log_path.read_text())
        assert sorted(listening) == sorted(["127.0.0.1:8080", f"127.0.0.1:{health}"]), listening
        with urllib.request.urlopen("http://127.0.0.1:8080/metrics", timeout=10) as r:
            assert b"muster_" in r.read()
        with urllib.request.urlopen(f"http://127.0.0.1:{health}/healthz", timeout=10) as r:
            assert r.status == 200
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{health}/metrics", timeout=10)
        assert e.value.code == 404
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)
