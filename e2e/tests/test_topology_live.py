"""bin/muster-topology --kubeconfig on the real control plane: the nodes of
the node agent (labelled by blocks and racks), the pods bound to them as
usage, real Kueue Topology and Volcano HyperNode objects (the upstream CRDs
in ../shared, loaded by e2e/cluster/up.sh), and a JobSet read from the
cluster. Nothing here places pods: the placement is the CLI's answer."""

import json
import subprocess

import pytest

from conftest import ROOT, wait_for
from kube import ApiError
import muster_api as api  # noqa: E402

CLI = ROOT / "bin" / "muster-topology"
SHAPE = ROOT / "e2e" / "shapes" / "small.yaml"  # 4 nodes of 16 cpu: block-1/2 x rack-1/2, one node each
BLOCK, RACK = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"
TOPOLOGIES = "/apis/kueue.x-k8s.io/v1beta2/topologies"
HYPERNODES = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{}/jobsets"

pytestmark = pytest.mark.skipif(not (ROOT.parent / "shared" / "kueue").is_dir(),
                                reason="../shared/kueue is absent (the Topology CRD)")


def run(kubeconfig, *args):
    result = subprocess.run([str(CLI), "--kubeconfig", kubeconfig, "--output", "json", *map(str, args)],
                            capture_output=True, text=True, timeout=60)
    print(result.stdout[-3000:], result.stderr[-2000:])
    return result


@pytest.fixture
def nodes(run_standin, kube, tmp_path):
    agent = run_standin("node_agent.py", "--shape", SHAPE, "--work-dir", tmp_path / "agent", "--sync-period", 5,
                        "--delete-nodes")

    def ready():
        items = kube.get("/api/v1/nodes", labelSelector=RACK)["items"]
        return len(items) == 4 and all(c["status"] == "True" for n in items for c in n["status"]["conditions"]
                                       if c["type"] == "Ready")
    wait_for(ready, timeout=60, what="4 nodes Ready")
    return agent


@pytest.fixture
def cluster_objects(kube):
    made = []

    def create(path, body):
        try:
            kube.delete(f"{path}/{body['metadata']['name']}")  # one of the same name left over
        except ApiError:
            pass
        wait_for(lambda: _absent(kube, f"{path}/{body['metadata']['name']}"), what="leftover gone")
        made.append(f"{path}/{body['metadata']['name']}")
        return kube.create(path, body)

    yield create
    for path in made:
        kube.delete(path)


def _absent(kube, path):
    try:
        kube.get(path)
    except ApiError as error:
        return error.status == 404
    return False


def jobset(name, annotations, replicas=2, pods=8, cpu="1"):
    pod = {"metadata": {"annotations": annotations},
           "spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "annotations": {}},
            "spec": {"suspend": True, "replicatedJobs": [{"name": "workers", "replicas": replicas, "template": {
                "spec": {"parallelism": pods, "completions": pods, "template": pod}}}]}}


def test_live_cluster_kueue_topology_and_usage(kube, kubeconfig, namespace, nodes, cluster_objects):
    cluster_objects(TOPOLOGIES, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
                                 "metadata": {"name": "e2e-blocks"},
                                 "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}]}})
    kube.create(JOBSETS.format(namespace), jobset("train", {api.KUEUE_ANNOTATION_REQUIRED: RACK}))
    # A pod of 15 cpu bound to node-0 by the real scheduler: rack block-1/rack-1 keeps 1 cpu.
    kube.create(f"/api/v1/namespaces/{namespace}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": "node-0"}, "restartPolicy": "Never",
                 "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "600"],
                                 "resources": {"requests": {"cpu": "15"}}}]}})
    wait_for(lambda: kube.get(f"/api/v1/namespaces/{namespace}/pods/big")["spec"].get("nodeName"),
             what="the big pod bound")
    result = run(kubeconfig, "--topology", "e2e-blocks", "--jobset-ref", f"{namespace}/train")
    assert result.returncode == 0
    out = json.loads(result.stdout)
    assert out["placed"] and out["jobset"] == "train" and len(out["pods"]) == 16
    racks = {pod["domain"].rsplit("/", 1)[0] for pod in out["pods"]}
    assert len(racks) == 1  # Kueue's meaning: both Jobs in one rack
    assert racks != {"block-1/rack-1"}  # the rack of node-0, whose 15 cpu are taken
    for pod in out["pods"]:
        assert f"{RACK}=" in pod["nodeSelector"] and pod["node"] != "node-0"
    # 2 x 9 pods fit no rack of 16 cpu: refused, exit 1, with the reason.
    kube.create(JOBSETS.format(namespace), jobset("big", {api.KUEUE_ANNOTATION_REQUIRED: RACK}, pods=9))
    result = run(kubeconfig, "--topology", "e2e-blocks", "--jobset-ref", f"{namespace}/big")
    assert result.returncode == 1
    assert "at most 16 of 18 pods fit in any one domain" in json.loads(result.stdout)["refusal"]
    # A Topology or a JobSet that does not exist: bad input, exit 2, naming it.
    result = run(kubeconfig, "--topology", "absent", "--jobset-ref", f"{namespace}/train")
    assert result.returncode == 2 and "topologies/absent" in result.stderr
    result = run(kubeconfig, "--topology", "e2e-blocks", "--jobset-ref", f"{namespace}/absent")
    assert result.returncode == 2 and "jobsets/absent" in result.stderr


def test_live_cluster_hypernodes(kube, kubeconfig, namespace, nodes, cluster_objects):
    for name, tier, members in (
            ("e2e-leaf-a", 1, [{"type": "Node", "selector": {"regexMatch": {"pattern": "^node-[01]$"}}}]),
            ("e2e-leaf-b", 1, [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {BLOCK: "block-2"}}}}]),
            ("e2e-spine", 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": "e2e-leaf-a"}}},
                              {"type": "HyperNode", "selector": {"exactMatch": {"name": "e2e-leaf-b"}}}])):
        cluster_objects(HYPERNODES, {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                                     "metadata": {"name": name}, "spec": {"tier": tier, "members": members}})
    # Volcano's hard limit of tier 1 for each Job: 16 pods of a Job in one leaf (2 nodes of 16 cpu).
    kube.create(JOBSETS.format(namespace), jobset("hn", {
        api.ANNOTATION_NETWORK_TOPOLOGY: '{"mode": "hard", "highestTierAllowed": 1}'}, pods=16))
    result = run(kubeconfig, "--cluster-hypernodes", "--jobset-ref", f"{namespace}/hn")
    assert result.returncode == 0
    out = json.loads(result.stdout)
    leaves = {}
    for pod in out["pods"]:
        leaves.setdefault(pod["jobIndex"], set()).add(pod["domain"].split("/")[1])
        assert pod["nodeSelector"] == f"kubernetes.io/hostname={pod['node']}"
    assert set(leaves) == {0, 1}
    for job, names in leaves.items():
        assert len(names) == 1 and names <= {"e2e-leaf-a", "e2e-leaf-b"}, (job, names)  # one tier-1 HyperNode
    # 33 pods fit no tier-1 HyperNode (2 nodes of 16 cpu): refused, though the spine holds them.
    kube.create(JOBSETS.format(namespace), jobset("wide", {
        api.ANNOTATION_NETWORK_TOPOLOGY: '{"mode": "hard", "highestTierAllowed": 1}'}, replicas=1, pods=33))
    result = run(kubeconfig, "--cluster-hypernodes", "--jobset-ref", f"{namespace}/wide")
    assert result.returncode == 1 and "tier 1: at most" in json.loads(result.stdout)["refusal"]
