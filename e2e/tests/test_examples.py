"""The upstream example JobSets run through both stand-ins (node agent and
JobSet controller) on the real control plane, scheduled by the real
kube-scheduler; and a failing pod restarts the whole JobSet with a new
restart attempt.
"""

import time

import pytest
import yaml

from conftest import ROOT, wait_for
import muster_api as api  # noqa: E402

EXAMPLES = ROOT.parent / "shared" / "jobset" / "examples"
SHAPE = ROOT / "e2e" / "shapes" / "examples.yaml"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{}/jobsets"

pytestmark = pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"{EXAMPLES} is absent (../shared not beside the repo)")


@pytest.fixture
def standins(run_standin, namespace, tmp_path):
    """Both stand-ins; simulated containers run at most 3 s."""
    agent = run_standin("node_agent.py", "--shape", SHAPE, "--work-dir", tmp_path / "agent", "--sync-period", 5,
                        "--max-run-seconds", 3, "--default-run-seconds", 2, "--backoff-scale", 0.05,
                        "--delete-nodes")
    controller = run_standin("jobset_controller.py", "--namespace", namespace)
    return agent, controller


def jobset_state(kube, namespace, name):
    jobset = kube.get(JOBSETS.format(namespace) + f"/{name}")
    return jobset.get("status", {}).get("terminalState")


def pods_of(kube, namespace, name):
    items, _ = kube.list(f"/api/v1/namespaces/{namespace}/pods",
                         labelSelector=f"{api.JOBSET_LABEL_NAME}={name}")
    return items


def test_every_upstream_example_runs_to_completion(kube, namespace, standins):
    names = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "JobSet":
                kube.create(JOBSETS.format(namespace), doc)
                names.append(doc["metadata"]["name"])
    assert len(names) >= 6

    def finished():
        states = {name: jobset_state(kube, namespace, name) for name in names}
        return states if all(states.values()) else None

    states = wait_for(finished, timeout=240, interval=1, what="every example JobSet to finish")
    assert states == {name: "Completed" for name in names}, states
    # They really ran: every pod of every JobSet went through a node.
    for name in names:
        pods = pods_of(kube, namespace, name)
        assert pods, name
        assert all(pod["spec"].get("nodeName") for pod in pods), name
    # The multislice example's pods ran on TPU nodes, one pod per node (4 chips each).
    tpu_nodes = [pod["spec"]["nodeName"] for pod in pods_of(kube, namespace, "v6e-multislice")]
    assert len(tpu_nodes) == 8 and len(set(tpu_nodes)) == 8 and all(n.startswith("tpu-") for n in tpu_nodes)


def test_failing_pod_restarts_the_jobset_with_a_new_attempt(kube, namespace, standins):
    doc = yaml.safe_load((EXAMPLES / "simple-failure-policy.yaml").read_text())
    # The example's index-0 leader exits 1 after 10 s (a bash script the agent
    # does not interpret); say the same through the agent's annotations.
    leader = doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    leader.setdefault("metadata", {})["annotations"] = {
        "e2e.muster.dev/exit-code": "1", "e2e.muster.dev/fail-completion-index": "0",
        "e2e.muster.dev/run-seconds": "1"}
    kube.create(JOBSETS.format(namespace), doc)
    name = doc["metadata"]["name"]

    def attempt_pods(attempt):
        pods = [p for p in pods_of(kube, namespace, name)
                if p["metadata"]["labels"].get(api.JOBSET_LABEL_RESTART_ATTEMPT) == str(attempt)
                and not p["metadata"].get("deletionTimestamp")]
        return pods if len(pods) == 4 else None

    first = wait_for(lambda: attempt_pods(0), timeout=60, what="attempt 0 pods")
    second = wait_for(lambda: attempt_pods(1), timeout=120, what="attempt 1 pods after the failure")
    assert not {p["metadata"]["uid"] for p in first} & {p["metadata"]["uid"] for p in second}
    for pod in second:
        assert pod["metadata"]["annotations"][api.JOBSET_LABEL_RESTART_ATTEMPT] == "1"
    # maxRestarts 3: the fourth failure ends it.
    wait_for(lambda: jobset_state(kube, namespace, name) == "Failed", timeout=240, interval=1,
             what="JobSet Failed after maxRestarts")
    status = kube.get(JOBSETS.format(namespace) + f"/{name}")["status"]
    assert status["restarts"] == 3


def test_deleted_jobset_pods_are_garbage_collected(kube, namespace, standins):
    doc = yaml.safe_load((EXAMPLES / "simple-paralleljobs.yaml").read_text())
    kube.create(JOBSETS.format(namespace), doc)
    name = doc["metadata"]["name"]
    wait_for(lambda: len([p for p in pods_of(kube, namespace, name)
                          if p["status"].get("phase") in ("Running", "Succeeded")]) == 5, timeout=60,
             what="5 pods started")
    kube.delete(JOBSETS.format(namespace) + f"/{name}", body={"propagationPolicy": "Background"})
    begun = time.monotonic()
    wait_for(lambda: not pods_of(kube, namespace, name), timeout=60, what="pods garbage-collected")
    jobs, _ = kube.list(f"/apis/batch/v1/namespaces/{namespace}/jobs")
    assert not jobs
    assert time.monotonic() - begun < 60
