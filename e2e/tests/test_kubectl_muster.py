"""`kubectl muster` (bin/kubectl-muster, found by kubectl on PATH) on the real
control plane, run as a user runs it: `kubectl muster status / tree /
explain`, as text and with -o json, and its exit codes.

The JobSets are made by the same fixtures as the gang start's and the
placement's own tests (test_gang_flows.gang: webhook, controller, real
barrier, node agent, JobSet stand-in; test_placement_live.placing: the same
with 8 nodes in 2 blocks x 2 racks of 8 cpu and a Kueue Topology), so what
the plugin says is checked against what the cluster holds: the ConfigMaps of
record, the JobSet's annotations, its pods and its Events. Nothing here
writes what the plugin reads, except through muster itself.
"""

import json
import os
import subprocess

import pytest
import yaml

from conftest import ROOT, wait_for
from test_gang_flows import BARRIER, gang, gate, jobset_body, pods_of, starts, create_and_run  # noqa: F401
from test_placement_live import (BLOCK, RACK, TOPOLOGY, bound_pods, jobset, placing,  # noqa: F401
                                 placing_cluster, state, waiting_reason)
from test_webhook import JOBSETS, hooked, webhook  # noqa: F401 - fixtures used by name
import muster_api as api  # noqa: E402

PLUGIN = ROOT / "bin" / "kubectl-muster"

pytestmark = pytest.mark.skipif(not PLUGIN.exists(), reason=f"{PLUGIN} is not built (make)")

needs_kueue = pytest.mark.skipif(not (ROOT.parent / "shared" / "kueue").is_dir(),
                                 reason="../shared/kueue is absent (the Topology CRD)")


def muster(kubeconfig, *args, env=None):
    """`kubectl muster ARGS` (with --kubeconfig unless kubeconfig is None):
    kubectl runs bin/kubectl-muster from PATH with the arguments after
    `muster`."""
    environment = {**os.environ, "PATH": f"{ROOT / 'bin'}:{os.environ.get('PATH', '')}", **(env or {})}
    line = ["kubectl", "muster", *map(str, args), *(["--kubeconfig", kubeconfig] if kubeconfig else [])]
    result = subprocess.run(line, capture_output=True, text=True, timeout=60, env=environment)
    print(" ".join(line), f"-> exit {result.returncode}\n", result.stdout[-4000:], result.stderr[-2000:])
    return result


def muster_json(kubeconfig, *args):
    result = muster(kubeconfig, *args, "-o", "json")
    return result.returncode, json.loads(result.stdout) if result.stdout.strip() else None


def event_reasons(out):
    return [e["reason"] for e in out["events"]]


def test_status_of_a_released_gang_and_where_it_finds_the_cluster(kube, kubeconfig, gang, tmp_path):  # noqa: F811
    namespace, events_path, controller = gang
    uid, pods = create_and_run(kube, namespace, events_path, "gang")
    record = wait_for(lambda: kube.get(f"/api/v1/namespaces/{namespace}/configmaps/gang{api.CONFIGMAP_SUFFIX}"),
                      what="the release of record")

    result = muster(kubeconfig, "status", "gang", "-n", namespace)
    assert result.returncode == 0
    assert f"JobSet {namespace}/gang (uid {uid})" in result.stdout
    assert "gang start: released\n" in result.stdout
    assert "expected 4, created 4, bound 4, started 4" in result.stdout
    assert (f"release of record: ConfigMap {namespace}/gang{api.CONFIGMAP_SUFFIX}: released attempt "
            f"{record['data'][api.CONFIGMAP_KEY_STARTED]} of gang generation "
            f"{record['data'].get(api.CONFIGMAP_KEY_GENERATION, '0')}") in result.stdout
    assert "placement: none" in result.stdout  # no topology request: not gated

    code, out = muster_json(kubeconfig, "status", "gang", "-n", namespace)
    assert code == 0
    assert out["jobset"] == {"namespace": namespace, "name": "gang", "uid": uid, "attempt": 0,
                             "generation": out["jobset"]["generation"], "suspended": False}
    gang_out = out["gang"]
    assert gang_out["state"] == "released" and gang_out["released"] is True and gang_out["why"] is None
    assert (gang_out["expected"], gang_out["created"], gang_out["started"], gang_out["timedOut"]) == (4, 4, 4, 0)
    assert gang_out["record"]["found"] and gang_out["record"]["ours"]
    assert gang_out["record"]["releasedAttempt"] == int(record["data"][api.CONFIGMAP_KEY_STARTED])
    assert out["placement"]["state"] is None and out["placement"]["jobs"] == []
    assert "GroupReleased" in event_reasons(out)

    # Not found, bad usage.
    result = muster(kubeconfig, "status", "absent", "-n", namespace)
    assert result.returncode == 1 and f"JobSet {namespace}/absent not found" in result.stderr
    assert muster(kubeconfig, "status", "-n", namespace).returncode == 2
    assert muster(kubeconfig, "status", "gang", "-n", "Not_A_Namespace").returncode == 2
    assert muster(kubeconfig, "status", "gang", "-o", "yaml").returncode == 2

    # The kubeconfig as kubectl finds it: KUBECONFIG's first file that exists;
    # the context's namespace when -n is not given; --context.
    config = yaml.safe_load(open(kubeconfig))
    current = config["current-context"]
    for context in config["contexts"]:
        if context["name"] == current:
            context["context"]["namespace"] = namespace
    with_namespace = tmp_path / "with-namespace.yaml"
    with_namespace.write_text(yaml.safe_dump(config))
    result = muster(None, "status", "gang", env={"KUBECONFIG": f"{tmp_path / 'missing'}:{with_namespace}"})
    assert result.returncode == 0 and f"JobSet {namespace}/gang" in result.stdout
    result = muster(str(with_namespace), "status", "gang", "--context", "no-such-context")
    assert result.returncode == 1 and 'no context named "no-such-context"' in result.stderr
    # TLS is verified, always.
    for cluster in config["clusters"]:
        cluster["cluster"]["insecure-skip-tls-verify"] = True
    insecure = tmp_path / "insecure.yaml"
    insecure.write_text(yaml.safe_dump(config))
    result = muster(str(insecure), "status", "gang")
    assert result.returncode == 1 and "insecure-skip-tls-verify" in result.stderr


def test_status_of_a_gang_that_waits_then_times_out(kube, kubeconfig, gang):  # noqa: F811 - the imported fixture
    """`late` cannot be scheduled (the gate is closed): `first` waits at its
    barrier for `timeout` s, then the barrier times out and kubelet restarts it
    in place (OnFailure), the timeout in its lastState."""
    namespace, events_path, controller = gang
    timeout = 20  # long enough to see the wait; the status's exit code says when it ended
    gate(kube, False)
    kube.create(JOBSETS.format(namespace), jobset_body("gang", restart_policy="OnFailure", timeout=timeout,
                                                       backoff_limit=6))
    uid = kube.get(f"{JOBSETS.format(namespace)}/gang")["metadata"]["uid"]
    first = wait_for(lambda: pods_of(kube, namespace, **{api.JOBSET_LABEL_UID: uid,
                                                          api.JOBSET_LABEL_REPLICATED_JOB: "first"}),
                     timeout=60, what="the pod of `first`")
    wait_for(lambda: starts(events_path, BARRIER, first), timeout=60, interval=0.2, what="the barrier of `first`")

    def waiting():
        code, out = muster_json(kubeconfig, "status", "gang", "-n", namespace)
        return out if code == 0 and out["gang"]["started"] == 1 and out["gang"]["created"] == 4 else None

    out = wait_for(waiting, timeout=timeout / 2, interval=0.5, what="the gang waiting: 1 started, 4 created")
    assert out["gang"]["state"] == "waiting", out["gang"]
    assert out["gang"]["why"] == "1 of 4 pods started (4 created, 1 bound)"
    assert (out["gang"]["expected"], out["gang"]["bound"], out["gang"]["atBarrier"]) == (4, 1, 1)
    assert out["gang"]["released"] is False and out["gang"]["timeoutSeconds"] == timeout
    result = muster(kubeconfig, "status", "gang", "-n", namespace)
    assert result.returncode == 0
    assert "gang start: waiting: 1 of 4 pods started (4 created, 1 bound)" in result.stdout

    def timed_out():
        result = muster(kubeconfig, "status", "gang", "-n", namespace)
        return result if result.returncode == 3 else None

    result = wait_for(timed_out, timeout=timeout + 60, interval=1, what="status exit 3 (timed out)")
    assert f"gang start: timed-out: 1 pod(s) timed out at the barrier (after {timeout}s)" in result.stdout
    assert "release of record: ConfigMap" in result.stdout and "none yet" in result.stdout
    code, out = muster_json(kubeconfig, "status", "gang", "-n", namespace)
    assert code == 3
    assert out["gang"]["state"] == "timed-out" and out["gang"]["timedOut"] == 1
    assert out["gang"]["record"]["found"] is False
    assert not starts(events_path, "main", first), "the main container started with the group incomplete"
    wait_for(lambda: "GroupTimedOut" in event_reasons(muster_json(kubeconfig, "status", "gang", "-n", namespace)[1]),
             timeout=30, what="the GroupTimedOut Event in the status")


@needs_kueue
def test_status_tree_and_explain_of_a_placed_and_a_waiting_jobset(kube, kubeconfig, placing):  # noqa: F811
    """`train` (2 Jobs of 4 pods, in one rack) is placed and bound; `huge`
    (9 pods in one rack of 8 cpu) can never fit and waits with its reason."""
    namespace = placing
    created = kube.create(JOBSETS.format(namespace),
                          jobset("train", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, replicas=2, pods=4))
    wait_for(lambda: state(kube, namespace, "train") == api.PLACEMENT_PLACED, timeout=60, what="train placed")
    pods = bound_pods(kube, namespace, "train", 8)
    kube.create(JOBSETS.format(namespace), jobset("huge", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=9))
    reason = wait_for(lambda: waiting_reason(kube, namespace, "huge"), timeout=60, what="huge's waiting reason")

    # status: the waiting one.
    result = muster(kubeconfig, "status", "huge", "-n", namespace)
    assert result.returncode == 0
    assert f"placement: {api.PLACEMENT_WAITING}: {reason}\n" in result.stdout
    assert f"placement of record: ConfigMap {namespace}/huge{api.PLACEMENT_SUFFIX}: none" in result.stdout
    code, out = muster_json(kubeconfig, "status", "huge", "-n", namespace)
    assert code == 0 and out["jobset"]["suspended"] is True
    assert out["placement"]["state"] == api.PLACEMENT_WAITING and out["placement"]["reason"] == reason
    assert out["placement"]["record"]["found"] is False
    assert out["gang"]["state"] == "none"
    wait_for(lambda: "PlacementWaiting" in event_reasons(muster_json(kubeconfig, "status", "huge", "-n",
                                                                     namespace)[1]),
             timeout=30, what="the PlacementWaiting Event in the status")

    # status: the placed one, each Job's domain as the pods got it.
    code, out = muster_json(kubeconfig, "status", "train", "-n", namespace)
    assert code == 0 and out["placement"]["state"] == api.PLACEMENT_PLACED
    assert out["placement"]["record"]["found"] and out["placement"]["record"]["ours"]
    assert out["placement"]["record"]["attempt"] == 0
    jobs = out["placement"]["jobs"]
    assert sorted((j["replicatedJob"], j["jobIndex"], j["pods"], j["domains"]) for j in jobs) == [
        ("workers", 0, 4, 1), ("workers", 1, 4, 1)]
    racks = {(p["spec"]["nodeSelector"][BLOCK], p["spec"]["nodeSelector"][RACK]) for p in pods}
    assert len(racks) == 1, racks
    block, rack = next(iter(racks))
    for job in jobs:
        assert job["nodeSelector"] == f"{BLOCK}={block},{RACK}={rack}", job
    result = muster(kubeconfig, "status", "train", "-n", namespace)
    assert result.returncode == 0 and "placement: placed\n" in result.stdout
    assert "  workers-0: " in result.stdout and "(4 pods)" in result.stdout

    # tree: free resources, the rack of train full, train holding it.
    result = muster(kubeconfig, "tree", "--topology", TOPOLOGY, "-n", namespace)
    assert result.returncode == 0
    assert result.stdout.startswith("topology (free cpu(m) memory(Mi) pods")
    assert f"{namespace}/train, 8 pods" in result.stdout
    code, tree = muster_json(kubeconfig, "tree", "--topology", TOPOLOGY)
    assert code == 0 and tree["levels"] == [BLOCK, RACK]
    cpu = tree["columns"].index("cpu(m)")
    (full,) = [d for d in tree["domains"] if d["level"] == RACK and d["path"] == f"{block}/{rack}"]
    assert full["free"][cpu] == 0, full  # 8 pods of 1 cpu on 2 nodes of 4
    assert {"nodeSelector": f"{BLOCK}={block},{RACK}={rack}", "jobset": f"{namespace}/train", "pods": 8} in tree["heldBy"]
    # --levels names the same tree.
    code, by_levels = muster_json(kubeconfig, "tree", "--levels", f"{BLOCK},{RACK}")
    assert code == 0
    assert [(d["level"], d["path"]) for d in by_levels["domains"]] == [(d["level"], d["path"]) for d in tree["domains"]]
    # With a JobSet: free pods of its shape; no rack holds huge's 9.
    code, shaped = muster_json(kubeconfig, "tree", "huge", "--topology", TOPOLOGY, "-n", namespace)
    assert code == 0 and shaped["columns"] == ["workers"]
    assert all(d["free"][0] < 9 for d in shaped["domains"] if d["level"] == RACK)

    # explain: what muster-topology --explain says; refused now: exit 3.
    result = muster(kubeconfig, "explain", "huge", "--topology", TOPOLOGY, "-n", namespace)
    assert result.returncode == 3
    assert f"{api.ANNOTATION_PLACEMENT}=waiting; waiting because: {reason}" in result.stdout
    assert "placement of record: none" in result.stdout and "refused: " in result.stdout
    code, out = muster_json(kubeconfig, "explain", "huge", "--topology", TOPOLOGY, "-n", namespace)
    assert code == 3 and out["placed"] is False and out["refusal"]
    assert out["explain"]["placement"] == api.PLACEMENT_WAITING and out["explain"]["waitingReason"] == reason
    assert out["explain"]["recordState"] == "none"
    # train fits the 3 free racks: exit 0, its record shown.
    code, out = muster_json(kubeconfig, "explain", "train", "--topology", TOPOLOGY, "-n", namespace)
    assert code == 0 and out["placed"] is True
    assert out["explain"]["recordState"] == "found"
    assert out["explain"]["record"]["uid"] == created["metadata"]["uid"]
    assert len(out["explain"]["record"]["runs"]) == 2
    # Bad usage and a missing Topology.
    assert muster(kubeconfig, "tree", "--levels", RACK, "--hypernodes").returncode == 2
    result = muster(kubeconfig, "tree", "--topology", "absent")
    assert result.returncode == 1 and "topologies/absent" in result.stderr
