"""deploy/ against the real control plane (Kubernetes 1.20).

- deploy/crd: without the CRD patch spec.groupSchedulingConfig is pruned;
  patch-crd.sh adds its schema idempotently, the apiserver then keeps the
  field and enforces its bounds; --remove refuses while JobSets use it and
  restores the pruning. The CRD is left as the test found it (other modules
  share the cluster). The kustomize Component gives the same schema.
- deploy/base: every object passes `kubectl apply --dry-run=server` and comes
  back with every field we wrote (1.20 drops nothing); PodDisruptionBudgets
  are sent as policy/v1beta1 where the server has no policy/v1 (1.20), the
  same spec. cert-manager objects are checked as YAML (no CRDs here).
- render-webhooks.sh: both configurations apply (url and service modes). 1.20
  accepts matchConditions and drops them silently (kubectl's own validation
  refuses them unless --validate=false). Registered for real, by URL, with a
  fake webhook serving gen-certs.sh's certificate: the apiserver trusts the
  caBundle and calls /mutate on CREATE, /validate on CREATE and UPDATE, never
  for status writes, other resources or excluded namespaces; failurePolicy
  Fail refuses JobSets while the webhook is down, Ignore lets them through.
- gen-certs.sh: a chain `openssl verify` accepts, the SANs asked for, keys
  0600, no overwrite without --force, --renew keeps the CA.
- The controller's RBAC (deploy/base/rbac.yaml) is enough for the real
  bin/muster-controller, run with its service account's token: it takes the
  Lease in muster-system, releases a group, re-releases it after a restart,
  records the Event; and it is no more than that (SubjectAccessReviews).
"""

import base64
import copy
import datetime
import hashlib
import json
import os
import pathlib
import re
import ssl
import stat
import subprocess
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from conftest import CONTROLLER, ROOT, Controller, wait_for
from kube import ApiError
import muster_api as api  # noqa: E402

DEPLOY = ROOT / "deploy"
PATCH_CRD = DEPLOY / "crd" / "patch-crd.sh"
PATCH_FILE = DEPLOY / "crd" / "groupschedulingconfig.patch.json"
GEN_CERTS = DEPLOY / "gen-certs.sh"
RENDER = DEPLOY / "render-webhooks.sh"
PIN_IMAGES = DEPLOY / "pin-images.sh"
UPSTREAM_CRD = ROOT.parent / "shared" / "jobset" / "jobset.x-k8s.io_jobsets.yaml"

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/jobsets.jobset.x-k8s.io"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{}/jobsets"
MUSTER_NS = "muster-system"
CONTROLLER_SA = f"system:serviceaccount:{MUSTER_NS}:muster-controller"
WEBHOOK_SA = f"system:serviceaccount:{MUSTER_NS}:muster-webhook"


# ---------------------------------------------------------------- helpers

def run(args, kubeconfig=None, input=None, check=True):
    """Runs a command; returns the CompletedProcess (text). KUBECONFIG is set
    for kubectl and the scripts when given."""
    env = dict(os.environ)
    if kubeconfig:
        env["KUBECONFIG"] = kubeconfig
    done = subprocess.run([str(a) for a in args], input=input, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    if check and done.returncode != 0:
        raise AssertionError(f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def kubectl(kubeconfig, *args, input=None, check=True):
    return run(["kubectl", "--kubeconfig", kubeconfig, *args], input=input, check=check)


def dry_run(kubeconfig, docs, validate=True):
    """`kubectl apply --dry-run=server` of docs; the objects as the server
    would store them, in order."""
    args = ["apply", "--dry-run=server", "-o", "json", "-f", "-"]
    if not validate:
        args.insert(1, "--validate=false")
    out = kubectl(kubeconfig, *args, input=yaml.safe_dump_all(docs)).stdout
    answer = json.loads(out)
    return answer["items"] if answer.get("kind") == "List" else [answer]


def missing(wanted, got, path=""):
    """Paths of `wanted` (what we wrote) that are absent from or different in
    `got` (what the server returned). The server may add fields, not drop or
    change ours."""
    if isinstance(wanted, dict):
        if not isinstance(got, dict):
            return [path or "/"]
        out = []
        for key, value in wanted.items():
            if key not in got:
                out.append(f"{path}/{key}")
            else:
                out += missing(value, got[key], f"{path}/{key}")
        return out
    if isinstance(wanted, list):
        if not isinstance(got, list) or len(got) != len(wanted):
            return [path]
        return [p for i, (w, g) in enumerate(zip(wanted, got)) for p in missing(w, g, f"{path}/{i}")]
    return [] if wanted == got else [path]


def load_docs(path):
    return [d for d in yaml.safe_load_all(pathlib.Path(path).read_text()) if d]


def served(kube, group_version):
    group, version = group_version.split("/")
    try:
        return any(v["version"] == version for v in kube.get(f"/apis/{group}")["versions"])
    except ApiError:
        return False


def for_this_server(kube, doc):
    """doc as this server can take it: policy/v1 PodDisruptionBudgets (1.21+)
    as policy/v1beta1, whose spec is the same, where v1 is not served."""
    if doc["apiVersion"] == "policy/v1" and not served(kube, "policy/v1"):
        doc = dict(doc, apiVersion="policy/v1beta1")
    return doc


def render(*args, check=True):
    return run(["bash", RENDER, *args], check=check)


def crd_version_index(crd):
    return next(i for i, v in enumerate(crd["spec"]["versions"]) if v["name"] == "v1alpha2")


def crd_field_schema(kube):
    crd = kube.get(CRD_PATH)
    index = crd_version_index(crd)
    props = crd["spec"]["versions"][index]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    return props.get("groupSchedulingConfig")


def jobset(name, config=None, annotations=None):
    body = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "annotations": dict(annotations or {})},
        "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {
            "parallelism": 1, "completions": 1,
            "template": {"spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "main", "image": "busybox"}]}}}}}]},
    }
    if config is not None:
        body["spec"]["groupSchedulingConfig"] = config
    return body


# ------------------------------------------------------------- fixtures

@pytest.fixture
def crd_restored(kube):
    """Records spec.groupSchedulingConfig's schema in the JobSet CRD (or its
    absence) and puts it back as it was after the test."""
    before = crd_field_schema(kube)
    yield before
    crd = kube.get(CRD_PATH)
    index = crd_version_index(crd)
    path = f"/spec/versions/{index}/schema/openAPIV3Schema/properties/spec/properties/groupSchedulingConfig"
    now = crd_field_schema(kube)
    if before is None and now is not None:
        kube.patch(CRD_PATH, [{"op": "remove", "path": path}], kind="json")
    elif before is not None and now != before:
        kube.patch(CRD_PATH, [{"op": "add", "path": path, "value": before}], kind="json")
    assert crd_field_schema(kube) == before


@pytest.fixture(scope="module")
def muster_namespace(kube):
    """muster-system, created from deploy/base/namespace.yaml if missing and
    deleted afterwards only if this module created it."""
    def phase():
        try:
            return kube.get(f"/api/v1/namespaces/{MUSTER_NS}")["status"]["phase"]
        except ApiError as error:
            if error.status == 404:
                return None
            raise

    # A namespace still Terminating from an earlier run cannot be reused.
    wait_for(lambda: phase() != "Terminating", timeout=60, what=f"{MUSTER_NS} to finish terminating")
    created = phase() is None
    if created:
        kube.create("/api/v1/namespaces", load_docs(DEPLOY / "base" / "namespace.yaml")[0])
    yield MUSTER_NS
    if created:
        kube.delete(f"/api/v1/namespaces/{MUSTER_NS}")


@pytest.fixture
def certs(tmp_path):
    """gen-certs.sh output for a webhook on 127.0.0.1."""
    out = tmp_path / "certs"
    run(["bash", GEN_CERTS, "--out", out, "--ip", "127.0.0.1", "--dns", "localhost"])
    return out


# ---------------------------------------------------------------- (a) CRD

def test_crd_patch_keeps_the_field_and_enforces_its_bounds(kube, kubeconfig, namespace, crd_restored):
    path = JOBSETS.format(namespace)
    config = {"timeoutAfterSeconds": 300, "targetReplicatedJobs": ["workers"]}
    status = lambda: run(["bash", PATCH_CRD, "--status"], kubeconfig).stdout.strip()  # noqa: E731

    # Start from the stock CRD: the field is pruned silently. The removal is
    # served when the script returns (kubectl no longer knows the field), so
    # the schema from before it is never mistaken for the patch below.
    run(["bash", PATCH_CRD, "--remove", "--force"], kubeconfig)
    assert status() == "absent"
    unknown = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "explain", "jobsets.spec.groupSchedulingConfig",
                              "--api-version=jobset.x-k8s.io/v1alpha2"], capture_output=True, text=True)
    assert unknown.returncode != 0, unknown.stdout
    counter = iter(range(1000))

    def created(config_to_use):
        name = f"js-{next(counter)}"
        return kube.create(path, jobset(name, config_to_use)).get("spec", {}).get("groupSchedulingConfig")

    wait_for(lambda: created(config) is None, timeout=20, what="the field pruned by the stock CRD")

    # Patch: added once, then a no-op that writes nothing.
    first = run(["bash", PATCH_CRD, "--kubeconfig", kubeconfig])
    assert "adding" in first.stderr and first.stdout == ""
    # Served when the script returns, with no wait: kubectl's validation
    # knows the field ("unknown field" before) and the apiserver keeps it.
    made = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "create", "-f", "-", "-o", "json"],
                          input=json.dumps(jobset("validated", config)), capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["spec"].get("groupSchedulingConfig") == config
    assert created(config) == config
    assert status() == "present"
    version = kube.get(CRD_PATH)["metadata"]["resourceVersion"]
    again = run(["bash", PATCH_CRD, "--kubeconfig", kubeconfig])
    assert "nothing to do" in again.stderr
    assert kube.get(CRD_PATH)["metadata"]["resourceVersion"] == version

    assert created(config) == config
    name = "kept"
    kube.create(path, jobset(name, config))
    assert kube.get(f"{path}/{name}")["spec"]["groupSchedulingConfig"] == config

    # Bounds, enforced by the apiserver: 1..86400, names of 1..63, 128 names.
    accepted = [
        {"timeoutAfterSeconds": 1},
        {"timeoutAfterSeconds": 86400},
        {"timeoutAfterSeconds": 5, "targetReplicatedJobs": ["w" * 63]},
        {"timeoutAfterSeconds": 5, "targetReplicatedJobs": [f"j{i}" for i in range(128)]},
        {"timeoutAfterSeconds": 5, "targetReplicatedJobs": []},
    ]
    refused = [
        ({"timeoutAfterSeconds": 0}, "timeoutAfterSeconds"),
        ({"timeoutAfterSeconds": 86401}, "timeoutAfterSeconds"),
        ({"timeoutAfterSeconds": -1}, "timeoutAfterSeconds"),
        ({"timeoutAfterSeconds": "300"}, "timeoutAfterSeconds"),
        ({"targetReplicatedJobs": ["workers"]}, "timeoutAfterSeconds"),  # required
        ({"timeoutAfterSeconds": 5, "targetReplicatedJobs": ["w" * 64]}, "targetReplicatedJobs"),
        ({"timeoutAfterSeconds": 5, "targetReplicatedJobs": [""]}, "targetReplicatedJobs"),
        ({"timeoutAfterSeconds": 5, "targetReplicatedJobs": [f"j{i}" for i in range(129)]}, "targetReplicatedJobs"),
        ({"timeoutAfterSeconds": 5, "targetReplicatedJobs": "workers"}, "targetReplicatedJobs"),
    ]
    for good in accepted:
        assert created(good) == good
    for bad, field in refused:
        with pytest.raises(ApiError) as error:
            created(bad)
        assert error.value.status == 422 and field in str(error.value), (bad, error.value)

    # An older schema of ours is "outdated" and gets replaced.
    index = crd_version_index(kube.get(CRD_PATH))
    kube.patch(CRD_PATH, [{"op": "replace", "path": f"/spec/versions/{index}/schema/openAPIV3Schema/properties/spec/"
                           "properties/groupSchedulingConfig/properties/targetReplicatedJobs/maxItems",
                           "value": 5}], kind="json")
    assert status() == "outdated"
    assert "updating" in run(["bash", PATCH_CRD], kubeconfig).stderr
    assert status() == "present"

    # --remove refuses while JobSets use the field, and changes nothing; a
    # JobSet in a namespace being deleted does not count.
    going = f"{namespace}-going"
    kube.create("/api/v1/namespaces", {"metadata": {"name": going}})
    kube.create(JOBSETS.format(going), jobset("doomed", config))
    kube.delete(f"/api/v1/namespaces/{going}")
    version = kube.get(CRD_PATH)["metadata"]["resourceVersion"]
    # JobSets left by earlier runs (a killed suite) count too, and the tool
    # lists the first 10 in the API's order, so ours may be counted and not
    # listed: the count is checked against the cluster's own list.
    active = {n["metadata"]["name"] for n in kube.list("/api/v1/namespaces")[0]
              if n.get("status", {}).get("phase") == "Active"}
    users = sorted(f"{j['metadata']['namespace']}/{j['metadata']['name']}"
                   for j in kube.list("/apis/jobset.x-k8s.io/v1alpha2/jobsets")[0]
                   if j["spec"].get("groupSchedulingConfig") and not j["metadata"].get("deletionTimestamp")
                   and j["metadata"]["namespace"] in active)
    assert f"{namespace}/{name}" in users and not any(u.startswith(f"{going}/") for u in users), users
    refusal = run(["bash", PATCH_CRD, "--remove"], kubeconfig, check=False)
    assert refusal.returncode == 1, refusal.stderr
    counted = re.search(r"refusing: (\d+) JobSet", refusal.stderr)
    listed = [line.strip() for line in refusal.stderr.splitlines() if line.startswith("  ")]
    assert counted and int(counted.group(1)) == len(users), (users, refusal.stderr)
    assert listed == users[:10], (users, refusal.stderr)
    assert kube.get(CRD_PATH)["metadata"]["resourceVersion"] == version

    # --remove --force: the schema goes, stored JobSets read back pruned.
    run(["bash", PATCH_CRD, "--remove", "--force"], kubeconfig)
    assert status() == "absent"
    wait_for(lambda: "groupSchedulingConfig" not in kube.get(f"{path}/{name}")["spec"], timeout=20,
             what="the field pruned on read once the schema is gone")
    assert "nothing to do" in run(["bash", PATCH_CRD, "--remove"], kubeconfig).stderr


def test_crd_patch_file_is_the_documented_command_and_guards_the_version(kubeconfig, tmp_path):
    # As deploy/README.md says to run it (index 0 = v1alpha2 in JobSet v0.12.0).
    kubectl(kubeconfig, "patch", "crd", "jobsets.jobset.x-k8s.io", "--type", "json",
            "--patch-file", PATCH_FILE, "--dry-run=server")
    # The first op tests the version's name: a CRD laid out differently is refused.
    ops = json.loads(PATCH_FILE.read_text())
    assert ops[0] == {"op": "test", "path": "/spec/versions/0/name", "value": "v1alpha2"}
    ops[0]["value"] = "v1beta9"
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(ops))
    refused = kubectl(kubeconfig, "patch", "crd", "jobsets.jobset.x-k8s.io", "--type", "json",
                      "--patch-file", wrong, "--dry-run=server", check=False)
    assert refused.returncode != 0


@pytest.mark.skipif(not UPSTREAM_CRD.exists(), reason=f"{UPSTREAM_CRD} is missing")
def test_kustomize_component_patches_the_upstream_crd(tmp_path):
    (tmp_path / "crd.yaml").write_text(UPSTREAM_CRD.read_text())
    component = os.path.relpath(DEPLOY / "crd", tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [crd.yaml]\ncomponents: [{component}]\n")
    built = yaml.safe_load(run(["kubectl", "kustomize", tmp_path]).stdout)
    upstream = yaml.safe_load(UPSTREAM_CRD.read_text())
    versions = built["spec"]["versions"]
    props = versions[crd_version_index(built)]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert props.pop("groupSchedulingConfig") == json.loads(PATCH_FILE.read_text())[1]["value"]
    assert built == upstream  # nothing else touched

    schema = json.loads(PATCH_FILE.read_text())[1]["value"]
    timeout = schema["properties"]["timeoutAfterSeconds"]
    targets = schema["properties"]["targetReplicatedJobs"]
    assert (timeout["type"], timeout["format"], timeout["minimum"], timeout["maximum"]) == \
        ("integer", "int32", 1, 86400)
    assert targets["x-kubernetes-list-type"] == "atomic" and targets["items"]["maxLength"] == 63
    assert schema["required"] == ["timeoutAfterSeconds"]


# ------------------------------------------------------- (b) manifests

def base_docs():
    docs = []
    for path in sorted((DEPLOY / "base").glob("*.yaml")):
        if path.name != "kustomization.yaml":
            docs += load_docs(path)
    return docs


def test_base_manifests_pass_server_dry_run_and_keep_every_field(kube, kubeconfig, muster_namespace):
    sent = [for_this_server(kube, doc) for doc in base_docs()]
    stored = dry_run(kubeconfig, sent)
    assert [(d["kind"], d["metadata"]["name"]) for d in stored] == [(d["kind"], d["metadata"]["name"]) for d in sent]
    for wanted, got in zip(sent, stored):
        assert missing(wanted, got) == [], f"{wanted['kind']}/{wanted['metadata']['name']} lost fields"
    kinds = sorted({d["kind"] for d in sent})
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "Deployment", "Namespace", "NetworkPolicy",
                     "PodDisruptionBudget", "PriorityClass", "Role", "RoleBinding", "Service", "ServiceAccount"]


def by_kind_name(docs):
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def test_kubernetes_1_20_overlay_is_base_with_v1beta1_disruption_budgets(kubeconfig, muster_namespace):
    """deploy/kubernetes-1.20 changes nothing but the PodDisruptionBudgets'
    apiVersion (1.20 serves only policy/v1beta1), and this 1.20 server takes
    every object of it as it is."""
    base = by_kind_name(yaml.safe_load_all(run(["kubectl", "kustomize", DEPLOY / "base"]).stdout))
    old = by_kind_name(yaml.safe_load_all(run(["kubectl", "kustomize", DEPLOY / "kubernetes-1.20"]).stdout))
    assert old.keys() == base.keys()
    for key, doc in base.items():
        if key[0] == "PodDisruptionBudget":
            assert doc["apiVersion"] == "policy/v1" and old[key]["apiVersion"] == "policy/v1beta1"
            assert dict(old[key], apiVersion="policy/v1") == doc
        else:
            assert old[key] == doc, key
    sent = list(old.values())
    stored = dry_run(kubeconfig, sent)
    assert sorted((d["kind"], d["metadata"]["name"]) for d in stored) == sorted(old)


def test_base_manifests_say_what_the_design_needs():
    docs = by_kind_name(base_docs())
    for name in ("muster-webhook", "muster-controller"):
        deployment = docs[("Deployment", name)]
        pod = deployment["spec"]["template"]["spec"]
        assert deployment["spec"]["replicas"] == 2
        assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 65532
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod["priorityClassName"] == "muster-critical"
        terms = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        assert terms[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
        for container in pod["containers"]:
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
            assert security["capabilities"] == {"drop": ["ALL"]} and security["runAsUser"] == 65532
            assert set(container["resources"]) == {"requests", "limits"}
            assert container["image"] == f"ghcr.io/muster-dev/{name}:VERSION"
            assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
            assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        pdb = docs[("PodDisruptionBudget", name)]
        assert pdb["spec"]["minAvailable"] == 1
        assert pdb["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]

    webhook = docs[("Deployment", "muster-webhook")]["spec"]["template"]["spec"]
    container = webhook["containers"][0]
    assert webhook["automountServiceAccountToken"] is True  # the pod route reads placement records
    # kubelet's probes on --health-addr, a port whose threads admission work never holds up.
    args = container["args"]
    health_port = int(args[args.index("--health-addr") + 1].lstrip(":"))
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["scheme"] == "HTTP" and ports[container[probe]["httpGet"]["port"]] == health_port
    mount = container["volumeMounts"][0]
    assert mount["readOnly"] is True and "subPath" not in mount  # reloads need the whole directory
    assert webhook["volumes"][0]["secret"]["secretName"] == "muster-webhook-tls"
    args = container["args"]
    assert args[args.index("--tls-cert-file") + 1] == mount["mountPath"] + "/tls.crt"
    assert args[args.index("--tls-key-file") + 1] == mount["mountPath"] + "/tls.key"
    # kustomization.yaml's comment patches args/7 to change the barrier image.
    assert args[6] == "--barrier-image" and args[7] == "ghcr.io/muster-dev/muster-barrier:VERSION"
    service = docs[("Service", "muster-webhook")]["spec"]
    assert service["ports"] == [{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}]
    assert container["ports"][0]["containerPort"] == 8443
    controller = docs[("Deployment", "muster-controller")]["spec"]["template"]["spec"]["containers"][0]
    cargs = controller["args"]
    assert cargs[cargs.index("--push-port") + 1] == args[args.index("--barrier-port") + 1]
    assert {e["name"] for e in controller["env"]} == {"POD_NAME", "POD_NAMESPACE"}
    assert "automountServiceAccountToken" not in docs[("ServiceAccount", "muster-webhook")]

    # RBAC: exactly what controller/controller.md lists; the webhook reads
    # ConfigMaps (placement records) and nothing else.
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r.get("resourceNames", ()))): sorted(r["verbs"])
             for r in docs[("ClusterRole", "muster-controller")]["rules"]}
    assert rules == {
        (("jobset.x-k8s.io",), ("jobsets",), ()): ["list", "patch", "watch"],
        (("",), ("nodes",), ()): ["list", "watch"],
        (("kueue.x-k8s.io",), ("topologies",), ()): ["get", "list"],
        (("topology.volcano.sh",), ("hypernodes",), ()): ["list"],
        (("",), ("pods",), ()): ["list", "watch"],
        (("",), ("configmaps",), ()): ["create", "delete", "get", "patch"],
        (("batch",), ("jobs",), ()): ["delete", "get"],
        (("",), ("events",), ()): ["create"],
    }
    webhook_rules = [(r["apiGroups"], r["resources"], sorted(r["verbs"]))
                     for r in docs[("ClusterRole", "muster-webhook")]["rules"]]
    assert webhook_rules == [([""], ["configmaps"], ["get"])]
    bindings = {d["metadata"]["name"]: d for d in docs.values() if d["kind"].endswith("Binding")}
    assert [s["name"] for s in bindings["muster-webhook"]["subjects"]] == ["muster-webhook"]
    assert bindings["muster-webhook"]["roleRef"]["name"] == "muster-webhook"
    # ... and posts CertificateExpiring Events on its own Pod, in its own namespace only.
    assert docs[("Role", "muster-webhook-events")]["rules"] == [
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]
    assert docs[("Role", "muster-webhook-events")]["metadata"]["namespace"] == MUSTER_NS
    assert [s["name"] for s in bindings["muster-webhook-events"]["subjects"]] == ["muster-webhook"]


def test_network_policies_open_each_port_to_whom_it_serves_and_nothing_else():
    """Ingress to muster's pods: the webhook's HTTPS port and both probe
    ports from anywhere (the API server and the kubelet come from addresses
    no selector names); both plain-HTTP /metrics only from Prometheus in the
    monitoring namespace, selected by the namespace's own name (a pod's
    label alone, which any tenant can set, opens nothing); no other port.
    The ports the probes use and the one --metrics-addr serves are the ones
    the policies name."""
    docs = by_kind_name(base_docs())
    prometheus = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                   "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}]
    for name, wanted in (("muster-webhook", {"https": None, "health": None, "http-metrics": prometheus}),
                         ("muster-controller", {"health": None, "http-metrics": prometheus})):
        deployment = docs[("Deployment", name)]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        policies = [d for d in docs.values() if d["kind"] == "NetworkPolicy"
                    and all(labels.get(k) == v for k, v in d["spec"]["podSelector"]["matchLabels"].items())]
        assert [p["metadata"]["name"] for p in policies] == [name]
        spec = policies[0]["spec"]
        assert spec["policyTypes"] == ["Ingress"] and policies[0]["metadata"]["namespace"] == MUSTER_NS
        opened = {}
        for rule in spec["ingress"]:
            for port in rule["ports"]:
                assert port["protocol"] == "TCP"
                opened[port["port"]] = rule.get("from")
        assert opened == wanted, (name, opened)
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert set(ports) == set(wanted), (name, ports)  # every port the pod serves is named by its policy
        args = container["args"]
        assert int(args[args.index("--health-addr") + 1].lstrip(":")) == ports["health"]
        for probe in ("readinessProbe", "livenessProbe"):
            assert container[probe]["httpGet"]["port"] == "health"
        assert int(args[args.index("--metrics-addr") + 1].lstrip(":")) == ports["http-metrics"]


def test_kustomize_builds_base_and_cert_manager():
    base = yaml.safe_load_all(run(["kubectl", "kustomize", DEPLOY / "base"]).stdout)
    assert sorted(by_kind_name(base)) == sorted(by_kind_name(base_docs()))
    with_cm = by_kind_name(yaml.safe_load_all(run(["kubectl", "kustomize", DEPLOY / "cert-manager"]).stdout))
    assert set(by_kind_name(base_docs())) < set(with_cm)
    assert ("MutatingWebhookConfiguration", "muster-jobset-mutate") in with_cm


def test_cert_manager_manifests(kube, kubeconfig, certs):
    certificates = load_docs(DEPLOY / "cert-manager" / "certificates.yaml")
    assert {(d["apiVersion"], d["kind"]) for d in certificates} == {("cert-manager.io/v1", "Issuer"),
                                                                   ("cert-manager.io/v1", "Certificate")}
    assert all(d["metadata"]["namespace"] == MUSTER_NS for d in certificates)
    by_name = {d["metadata"]["name"]: d for d in certificates}
    serving = by_name["muster-webhook-tls"]["spec"]
    assert serving["secretName"] == "muster-webhook-tls"
    assert set(serving["dnsNames"]) == {"muster-webhook.muster-system.svc",
                                        "muster-webhook.muster-system.svc.cluster.local"}
    assert "server auth" in serving["usages"]
    assert by_name[serving["issuerRef"]["name"]]["spec"]["ca"]["secretName"] == \
        by_name["muster-webhook-ca"]["spec"]["secretName"]
    assert by_name["muster-webhook-ca"]["spec"]["isCA"] is True

    # webhooks.yaml is render-webhooks.sh's service mode, caBundle left to
    # cert-manager's CA injector.
    static = load_docs(DEPLOY / "cert-manager" / "webhooks.yaml")
    rendered = list(yaml.safe_load_all(render("--ca-file", certs / "ca.crt").stdout))
    for doc in rendered:
        doc["metadata"]["annotations"] = {"cert-manager.io/inject-ca-from": f"{MUSTER_NS}/muster-webhook-tls"}
        for hook in doc["webhooks"]:
            del hook["clientConfig"]["caBundle"]
    assert static == rendered
    stored = dry_run(kubeconfig, static, validate=False)
    assert [d["kind"] for d in stored] == ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                                          "MutatingWebhookConfiguration"]


# ------------------------------------------------ (c) render-webhooks.sh

@pytest.mark.parametrize("mode", ["url", "service"])
def test_rendered_webhooks_apply_and_1_20_drops_match_conditions(kubeconfig, certs, mode):
    where = ["--url", "https://127.0.0.1:8443/"] if mode == "url" else ["--service", "muster-webhook",
                                                                       "--namespace", MUSTER_NS]
    ca = certs / "ca.crt"
    out = render("--ca-file", ca, *where)
    assert out.stderr == ""
    docs = list(yaml.safe_load_all(out.stdout))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("MutatingWebhookConfiguration", "muster-jobset-mutate"),
        ("ValidatingWebhookConfiguration", "muster-jobset-validate"),
        ("MutatingWebhookConfiguration", "muster-pod-pin")]
    # The pin route: pods and Jobs CREATE carrying muster's placement label, always Fail.
    pods, jobs = docs[2]["webhooks"]
    assert (pods["name"], jobs["name"]) == ("pin.pods.muster.dev", "pin.jobs.muster.dev")
    assert pods["rules"] == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                              "resources": ["pods"], "scope": "Namespaced"}]
    assert jobs["rules"] == [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"],
                              "resources": ["jobs"], "scope": "Namespaced"}]
    assert jobs["objectSelector"] == {"matchLabels": {api.LABEL_PLACEMENT: "true"}}
    # A Job's pods pinned with it (its pod template's label) cost no call of their own.
    assert pods["objectSelector"] == {"matchLabels": {api.LABEL_PLACEMENT: "true"}, "matchExpressions": [
        {"key": api.LABEL_JOB_PINNED, "operator": "DoesNotExist"}]}
    for pin in (pods, jobs):
        assert (pin["failurePolicy"], pin["sideEffects"], "matchConditions" in pin) == ("Fail", "None", False)
        assert pin["clientConfig"].get("url", "https://127.0.0.1:8443/pin").endswith("/pin")
    # Both see UPDATE: the mutating webhook raises the gang generation on a resume.
    for doc, path, operations in zip(docs, ("/mutate", "/validate"), (["CREATE", "UPDATE"], ["CREATE", "UPDATE"])):
        (hook,) = doc["webhooks"]
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == ca.read_bytes()
        if mode == "url":
            assert hook["clientConfig"]["url"] == "https://127.0.0.1:8443" + path
        else:
            assert hook["clientConfig"]["service"] == {"name": "muster-webhook", "namespace": MUSTER_NS,
                                                       "path": path, "port": 443}
        assert hook["rules"] == [{"apiGroups": ["jobset.x-k8s.io"], "apiVersions": ["v1alpha2"],
                                  "operations": operations, "resources": ["jobsets"], "scope": "Namespaced"}]
        assert (hook["sideEffects"], hook["failurePolicy"], hook["timeoutSeconds"], hook["matchPolicy"]) == \
            ("None", "Fail", 5, "Equivalent")
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["namespaceSelector"]["matchExpressions"] == [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", MUSTER_NS]}]
        assert [c["name"] for c in hook["matchConditions"]] == ["asks-for-gang-start"]
        # Both also look at the stored object: an UPDATE that drops the request is seen.
        assert "oldObject" in hook["matchConditions"][0]["expression"]
        # The controller's requests are sent too (its resume raises the gang
        # generation); deploy/test/ evaluates the expressions themselves.
        assert "serviceaccount" not in hook["matchConditions"][0]["expression"]
    assert docs[0]["webhooks"][0]["reinvocationPolicy"] == "Never"

    # 1.20 does not know matchConditions: kubectl's schema validation refuses
    # them; sent anyway, the apiserver accepts the object and drops the field.
    refused = kubectl(kubeconfig, "apply", "--dry-run=server", "-f", "-", input=out.stdout, check=False)
    assert refused.returncode != 0 and "matchConditions" in refused.stderr
    stored = dry_run(kubeconfig, docs, validate=False)
    for wanted, got in zip(docs, stored):
        assert missing(wanted, got) == (["/webhooks/0/matchConditions"] if "matchConditions" in wanted["webhooks"][0]
                                        else [])

    # Rendered without them, the configurations pass kubectl's validation and
    # the server keeps every field.
    plain = list(yaml.safe_load_all(render("--ca-file", ca, *where, "--no-match-conditions").stdout))
    assert all("matchConditions" not in d["webhooks"][0] for d in plain)
    for wanted, got in zip(plain, dry_run(kubeconfig, plain)):
        assert missing(wanted, got) == []


def test_render_options_and_refusals(certs):
    ca = certs / "ca.crt"
    docs = list(yaml.safe_load_all(render("--ca-file", ca, "--failure-policy", "Ignore",
                                          "--timeout-seconds", "10", "--namespace", "other").stdout))
    for doc in docs[:2]:
        hook = doc["webhooks"][0]
        assert (hook["failurePolicy"], hook["timeoutSeconds"]) == ("Ignore", 10)
        assert hook["clientConfig"]["service"]["namespace"] == "other"
        assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system", "other"]
    # The pod route stays Fail: a pod of a placed JobSet is never created unpinned.
    pin = docs[2]["webhooks"][0]
    assert (pin["failurePolicy"], pin["timeoutSeconds"], pin["clientConfig"]["service"]["namespace"]) == \
        ("Fail", 10, "other")
    for args in (["--failure-policy", "Sometimes"], ["--timeout-seconds", "31"], ["--timeout-seconds", "0"],
                 ["--url", "http://127.0.0.1:8443"], ["--url", "https://h/x?q=1"],
                 ["--url", "https://h", "--service", "s"], ["--service", "Bad_Name"]):
        assert render("--ca-file", ca, *args, check=False).returncode == 1, args
    # Opt-in namespaces (for clusters before 1.28, which ignore matchConditions).
    for doc in yaml.safe_load_all(render("--ca-file", ca, "--namespace-label", "muster.dev/gang-start=on").stdout):
        assert doc["webhooks"][0]["namespaceSelector"] == {"matchLabels": {"muster.dev/gang-start": "on"}}
    for label in ("no-equals", "bad key=x", "k=bad value", "=v"):
        assert render("--ca-file", ca, "--namespace-label", label, check=False).returncode == 1, label
    assert render("--ca-file", certs / "ca.key", check=False).returncode == 1  # not a certificate
    assert render(check=False).returncode == 2
    assert render("--ca-file", ca, "--bogus", check=False).returncode == 2


class FakeWebhook:
    """An HTTPS AdmissionReview server on 127.0.0.1 that allows everything,
    records (path, operation, namespace, name, resource) and, on /mutate, adds
    the annotation muster.dev/barrier-token as the real webhook does."""

    def __init__(self, cert, key):
        self.calls = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", 0))
                review = json.loads(self.rfile.read(length))
                request = review["request"]
                recorder.calls.append((self.path.split("?")[0], request["operation"], request["namespace"],
                                       request["name"] or request["object"]["metadata"].get("name"),
                                       request["resource"]["resource"], request.get("subResource")))
                response = {"uid": request["uid"], "allowed": True}
                if self.path.startswith("/mutate"):
                    annotations = request["object"]["metadata"].get("annotations")
                    op = ({"op": "add", "path": "/metadata/annotations/muster.dev~1barrier-token",
                           "value": "fake-token-0123456789abcdef"} if annotations is not None else
                          {"op": "add", "path": "/metadata/annotations",
                           "value": {api.ANNOTATION_BARRIER_TOKEN: "fake-token-0123456789abcdef"}})
                    response["patchType"] = "JSONPatch"
                    response["patch"] = base64.b64encode(json.dumps([op]).encode()).decode()
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": response}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        if self.thread.is_alive():
            self.server.shutdown()
            self.server.server_close()


def test_registered_webhooks_are_called_as_rendered(kube, kubeconfig, namespace, certs):
    """The rendered configurations registered for real (by URL), with only
    what keeps them off other tests changed: their names, and the namespace
    selector narrowed to this test's namespaces by an extra label."""
    tag = "e2e.muster.dev/deploy-webhook"
    kube.patch(f"/api/v1/namespaces/{namespace}", {"metadata": {"labels": {tag: namespace}}})
    server = FakeWebhook(certs / "tls.crt", certs / "tls.key")
    names = [f"{namespace}-mutate", f"{namespace}-validate", f"{namespace}-pin"]
    excluded = f"{namespace}-excl"

    def register(*extra):
        docs = list(yaml.safe_load_all(render("--ca-file", certs / "ca.crt",
                                              "--url", f"https://127.0.0.1:{server.port}", *extra).stdout))
        assert len(docs) == len(names)  # each one renamed and narrowed: none left behind for other tests
        for doc, name in zip(docs, names):
            doc["metadata"]["name"] = name
            doc["webhooks"][0]["namespaceSelector"]["matchExpressions"].append(
                {"key": tag, "operator": "In", "values": [namespace]})
        # matchConditions kept in: this is how the rendered output goes onto
        # a 1.20 cluster (kubectl --validate=false), where they are ignored.
        kubectl(kubeconfig, "apply", "--validate=false", "-f", "-", input=yaml.safe_dump_all(docs))
        return docs

    def calls(path=None):
        return [c for c in server.calls if path is None or c[0] == path]

    path = JOBSETS.format(namespace)
    try:
        register()
        # Registration reaches the apiserver's admission chain within moments.
        probe = iter(range(100))
        wait_for(lambda: kube.create(path, jobset(f"probe-{next(probe)}")) and calls(), timeout=20,
                 what="the first webhook call")
        server.calls.clear()

        # CREATE: mutated (token annotation added), then validated.
        created = kube.create(path, jobset("gang", annotations={api.ANNOTATION_GROUP_TIMEOUT: "60"}))
        assert created["metadata"]["annotations"][api.ANNOTATION_BARRIER_TOKEN] == "fake-token-0123456789abcdef"
        assert calls() == [("/mutate", "CREATE", namespace, "gang", "jobsets", None),
                           ("/validate", "CREATE", namespace, "gang", "jobsets", None)]
        # matchConditions are ignored by 1.20: a JobSet that does not ask for a
        # gang start is sent as well (1.28+ would not send it).
        server.calls.clear()
        kube.create(path, jobset("plain", annotations={"other": "x"}))
        assert [c[:2] for c in calls()] == [("/mutate", "CREATE"), ("/validate", "CREATE")]

        # UPDATE: mutated (a resume raises the gang generation) and validated;
        # status writes (the JobSet controller's) never.
        server.calls.clear()
        kube.patch(f"{path}/gang", {"metadata": {"labels": {"x": "y"}}})
        assert calls() == [("/mutate", "UPDATE", namespace, "gang", "jobsets", None),
                           ("/validate", "UPDATE", namespace, "gang", "jobsets", None)]
        server.calls.clear()
        kube.patch(f"{path}/gang/status", {"status": {"restarts": 1}})
        kube.create(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "cm"}})
        assert calls() == []

        # A namespace named by the NotIn list is not sent (on 1.20 the label
        # kubernetes.io/metadata.name is ours to set; 1.21+ sets it itself).
        ns = kube.create("/api/v1/namespaces", {"metadata": {"name": excluded, "labels": {
            tag: namespace, "kubernetes.io/metadata.name": MUSTER_NS}}})
        if ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == MUSTER_NS:
            kube.create(JOBSETS.format(excluded), jobset("gang"))
            assert calls() == []

        # failurePolicy Fail: the webhook down, JobSets are refused ...
        server.stop()
        with pytest.raises(ApiError) as error:
            kube.create(path, jobset("while-down"))
        assert "failed calling webhook" in str(error.value) and "timeout=5s" in str(error.value)
        # ... and with Ignore they go through without it.
        register("--failure-policy", "Ignore")
        wait_for(lambda: _created_despite_webhook(kube, path), timeout=20, what="Ignore to take effect")
    finally:
        server.stop()
        kubectl(kubeconfig, "delete", "--ignore-not-found", "mutatingwebhookconfiguration", names[0])
        kubectl(kubeconfig, "delete", "--ignore-not-found", "validatingwebhookconfiguration", names[1])
        kubectl(kubeconfig, "delete", "--ignore-not-found", "mutatingwebhookconfiguration", names[2])
        kube.delete(f"/api/v1/namespaces/{excluded}")


def _created_despite_webhook(kube, path):
    try:
        kube.create(path, jobset(f"ignored-{uuid.uuid4().hex[:6]}"))
        return True
    except ApiError:
        return False


# ---------------------------------------------------- (d) gen-certs.sh

def openssl(*args):
    return run(["openssl", *args]).stdout


def test_gen_certs_makes_a_verified_chain_with_the_sans_asked_for(tmp_path):
    out = tmp_path / "certs"
    made = run(["bash", GEN_CERTS, "--out", out, "--service", "hook", "--namespace", "ns1",
                "--dns", "hook.example.com", "--dns", "localhost", "--ip", "127.0.0.1", "--ip", "::1",
                "--days", "30"])
    assert made.stdout == ""  # progress on stderr only
    assert "PRIVATE KEY" not in made.stderr
    assert sorted(p.name for p in out.iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()}
    assert modes == {"ca.crt": 0o644, "ca.key": 0o600, "tls.crt": 0o644, "tls.key": 0o600}
    assert stat.S_IMODE(out.stat().st_mode) == 0o700

    assert openssl("verify", "-CAfile", out / "ca.crt", "-purpose", "sslserver", out / "tls.crt").strip() == \
        f"{out / 'tls.crt'}: OK"
    text = openssl("x509", "-in", out / "tls.crt", "-noout", "-text")
    sans = re.search(r"Subject Alternative Name:.*\n\s*(.*)", text).group(1)
    assert sorted(s.strip() for s in sans.split(",")) == sorted([
        "DNS:hook.ns1.svc", "DNS:hook.ns1.svc.cluster.local", "DNS:hook.example.com", "DNS:localhost",
        "IP Address:127.0.0.1", "IP Address:0:0:0:0:0:0:0:1"])
    assert "CA:FALSE" in text and "TLS Web Server Authentication" in text
    assert "ecdsa-with-SHA256" in text and "prime256v1" in text
    days = (datetime.datetime.strptime(openssl("x509", "-in", out / "tls.crt", "-noout", "-enddate")
                                       .strip().split("=", 1)[1], "%b %d %H:%M:%S %Y %Z")
            - datetime.datetime.utcnow()).days
    assert 29 <= days <= 30
    ca_text = openssl("x509", "-in", out / "ca.crt", "-noout", "-text")
    assert "CA:TRUE" in ca_text and "Certificate Sign" in ca_text

    # No overwrite without --force or --renew; nothing changed by the refusal.
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    refused = run(["bash", GEN_CERTS, "--out", out], check=False)
    assert refused.returncode == 1 and "--renew" in refused.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before

    # --renew: same CA, a new serving key and certificate.
    run(["bash", GEN_CERTS, "--out", out, "--renew", "--ip", "127.0.0.1"])
    assert (out / "ca.crt").read_bytes() == before["ca.crt"] and (out / "ca.key").read_bytes() == before["ca.key"]
    assert (out / "tls.key").read_bytes() != before["tls.key"]
    assert (out / "tls.crt").read_bytes() != before["tls.crt"]
    openssl("verify", "-CAfile", out / "ca.crt", out / "tls.crt")
    assert stat.S_IMODE((out / "tls.key").stat().st_mode) == 0o600
    assert sorted(p.name for p in out.iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]  # no temp left

    # --force: a new CA; RSA on request.
    run(["bash", GEN_CERTS, "--out", out, "--force", "--key-type", "rsa"])
    assert (out / "ca.crt").read_bytes() != before["ca.crt"]
    openssl("verify", "-CAfile", out / "ca.crt", out / "tls.crt")
    text = openssl("x509", "-in", out / "tls.crt", "-noout", "-text")
    assert "Public-Key: (2048 bit)" in text and "sha256WithRSAEncryption" in text

    # Bad input is refused before anything is written.
    assert run(["bash", GEN_CERTS, "--out", tmp_path / "new", "--renew"], check=False).returncode == 1
    assert run(["bash", GEN_CERTS, "--out", tmp_path / "new", "--dns", "Bad_Name"], check=False).returncode == 1
    assert run(["bash", GEN_CERTS, "--out", tmp_path / "new", "--days", "0"], check=False).returncode == 1
    assert run(["bash", GEN_CERTS], check=False).returncode == 2
    assert not (tmp_path / "new").exists()


def test_pin_images_writes_an_overlay_of_muster_by_digest(tmp_path):
    """deploy/pin-images.sh: from an images.txt as `make images` writes it, an
    overlay whose Deployments run REGISTRY/muster-<name>@digest, the
    webhook's --barrier-image included, over base or the namespaced install;
    bad input is refused and writes nothing."""
    digests = {n: "sha256:" + hashlib.sha256(n.encode()).hexdigest() for n in ("barrier", "webhook", "controller")}
    images = tmp_path / "images.txt"
    images.write_text("".join(f"build/images/muster-{n}.tar ghcr.io/muster-dev/muster-{n}:abc123 {d}\n"
                              for n, d in digests.items()) +
                      "build/images/pause.tar muster.local/pause:1 sha256:" + "0" * 64 + "\n")
    registry = "registry.example.com/team/muster"
    for base in ("base", "namespaced"):
        out = tmp_path / f"release-{base}"
        run(["bash", PIN_IMAGES, "--registry", registry, "--out", out, "--images", images,
             "--base", DEPLOY / base])
        built = by_kind_name(yaml.safe_load_all(run(["kubectl", "kustomize", out]).stdout))
        for name in ("webhook", "controller"):
            container = built[("Deployment", f"muster-{name}")]["spec"]["template"]["spec"]["containers"][0]
            assert container["image"] == f"{registry}/muster-{name}@{digests[name]}"
        args = built[("Deployment", "muster-webhook")]["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--barrier-image") + 1] == f"{registry}/muster-barrier@{digests['barrier']}"
        # Nothing else changed.
        plain = by_kind_name(yaml.safe_load_all(run(["kubectl", "kustomize", DEPLOY / base]).stdout))
        assert built.keys() == plain.keys()
        for key in plain:
            if key[0] != "Deployment":
                assert built[key] == plain[key], key

    bad = tmp_path / "bad.txt"
    for content, words in (("build/images/muster-webhook.tar ghcr.io/muster-dev/muster-webhook:x sha256:abc\n",
                            "is not sha256"),
                           ("".join(f"a ghcr.io/muster-dev/muster-{n}:x {d}\n" for n, d in digests.items()
                                    if n != "barrier"), "no muster-barrier image")):
        bad.write_text(content)
        done = run(["bash", PIN_IMAGES, "--registry", registry, "--out", tmp_path / "never", "--images", bad],
                   check=False)
        assert done.returncode == 1 and words in done.stderr, done.stderr
    done = run(["bash", PIN_IMAGES, "--registry", "registry.example.com/", "--out", tmp_path / "never",
                "--images", images], check=False)
    assert done.returncode == 1 and "no trailing /" in done.stderr
    assert run(["bash", PIN_IMAGES, "--out", tmp_path / "never"], check=False).returncode == 2
    assert not (tmp_path / "never").exists()


def test_scripts_are_shellcheck_clean():
    scripts = [GEN_CERTS, RENDER, PATCH_CRD, PIN_IMAGES]
    try:
        done = subprocess.run(["shellcheck", *map(str, scripts)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    except FileNotFoundError:
        pytest.skip("shellcheck is not installed")
    assert done.returncode == 0, done.stdout


# --------------------------------------------- (e) the controller's RBAC

def can_i(kubeconfig, user, *args):
    return kubectl(kubeconfig, "auth", "can-i", "--as", user, *args, check=False).returncode == 0


def test_rbac_is_least_privilege(kubeconfig, muster_namespace, deploy_rbac):
    c = CONTROLLER_SA
    allowed = [
        ("list", "pods", "--all-namespaces"), ("watch", "pods", "--all-namespaces"),
        ("list", "jobsets.jobset.x-k8s.io", "--all-namespaces"), ("watch", "jobsets.jobset.x-k8s.io", "-A"),
        ("get", "configmaps", "-n", "default"), ("create", "configmaps", "-n", "default"),
        ("patch", "configmaps", "-n", "default"), ("delete", "configmaps", "-n", "default"),
        ("create", "events", "-n", "default"),
        ("get", "jobs.batch", "-n", "default"), ("delete", "jobs.batch", "-n", "default"),
        ("create", "leases.coordination.k8s.io", "-n", MUSTER_NS),
        ("get", "leases.coordination.k8s.io/muster-controller", "-n", MUSTER_NS),
        ("update", "leases.coordination.k8s.io/muster-controller", "-n", MUSTER_NS),
    ]
    denied = [
        ("get", "pods", "-n", "default"), ("update", "pods", "-n", "default"), ("delete", "pods", "-n", "default"),
        ("update", "configmaps", "-n", "default"), ("get", "secrets", "-n", MUSTER_NS),
        ("create", "jobs.batch", "-n", "default"), ("update", "jobs.batch", "-n", "default"),
        ("list", "jobs.batch", "-n", "default"), ("get", "jobsets.jobset.x-k8s.io", "-n", "default"),
        ("update", "jobsets.jobset.x-k8s.io", "-n", "default"), ("patch", "events", "-n", "default"),
        ("create", "leases.coordination.k8s.io", "-n", "default"),
        ("update", "leases.coordination.k8s.io/other", "-n", MUSTER_NS),
        ("delete", "leases.coordination.k8s.io/muster-controller", "-n", MUSTER_NS),
    ]
    assert [a for a in allowed if not can_i(kubeconfig, c, *a)] == []
    assert [d for d in denied if can_i(kubeconfig, c, *d)] == []
    webhook_denied = [("get", "pods", "-A"), ("list", "jobsets.jobset.x-k8s.io", "-A"),
                      ("create", "configmaps", "-n", "default"), ("get", "secrets", "-n", MUSTER_NS),
                      ("create", "events", "-n", "default")]
    assert [d for d in webhook_denied if can_i(kubeconfig, WEBHOOK_SA, *d)] == []
    assert can_i(kubeconfig, WEBHOOK_SA, "create", "events", "-n", MUSTER_NS)


@pytest.fixture(scope="module")
def deploy_rbac(kube, kubeconfig, muster_namespace):
    """deploy/base/rbac.yaml applied for real (server-side apply); what did not
    exist before is deleted afterwards."""
    docs = load_docs(DEPLOY / "base" / "rbac.yaml")

    def path_of(doc):
        group_version = doc["apiVersion"]
        plural = {"ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
                  "ClusterRoleBinding": "clusterrolebindings", "Role": "roles", "RoleBinding": "rolebindings"}
        prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        ns = doc["metadata"].get("namespace")
        return f"{prefix}{'/namespaces/' + ns if ns else ''}/{plural[doc['kind']]}/{doc['metadata']['name']}"

    def exists(doc):
        try:
            kube.get(path_of(doc))
            return True
        except ApiError as error:
            if error.status == 404:
                return False
            raise

    new = [doc for doc in docs if not exists(doc)]
    kubectl(kubeconfig, "apply", "--server-side", "--field-manager", "muster-e2e-deploy", "-f",
            DEPLOY / "base" / "rbac.yaml")
    yield docs
    for doc in reversed(new):
        kube.delete(path_of(doc))


@pytest.mark.skipif(not CONTROLLER.exists(), reason=f"{CONTROLLER} is not built (make)")
def test_controller_works_with_its_service_account(kube, kubeconfig, namespace, deploy_rbac, tmp_path):
    """bin/muster-controller with nothing but the deploy RBAC: the Lease in
    muster-system, the watches, the release ConfigMap (create, then patch on
    a restart), the Event. Pods are bound to a node that does not exist and
    their barrier's status is written by the test (no node agent needed)."""
    gang_start_as(kube, kubeconfig, namespace, "muster-controller", tmp_path)


def gang_start_as(kube, kubeconfig, namespace, service_account, tmp_path, extra=()):
    """A gang start (two pods, then a restart) in `namespace`, released by
    bin/muster-controller running as `service_account` of muster-system."""
    # 1.20's token controller makes the service account's token Secret.
    secret_name = wait_for(lambda: (kube.get(f"/api/v1/namespaces/{MUSTER_NS}/serviceaccounts/{service_account}")
                                    .get("secrets") or [{}])[0].get("name"), timeout=30,
                           what="the controller's service-account token")
    token = base64.b64decode(kube.get(f"/api/v1/namespaces/{MUSTER_NS}/secrets/{secret_name}")["data"]["token"])
    admin = yaml.safe_load(pathlib.Path(kubeconfig).read_text())
    context = next(c for c in admin["contexts"] if c["name"] == admin["current-context"])["context"]
    cluster = next(c for c in admin["clusters"] if c["name"] == context["cluster"])
    sa_kubeconfig = tmp_path / "controller.kubeconfig"
    sa_kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": [cluster],
        "users": [{"name": "muster-controller", "user": {"token": token.decode()}}],
        "contexts": [{"name": "sa", "context": {"cluster": cluster["name"], "user": "muster-controller"}}],
        "current-context": "sa"}))
    sa_kubeconfig.chmod(0o600)

    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{MUSTER_NS}/leases/muster-controller"
    try:
        kube.get(lease_path)
        lease_existed = True
    except ApiError:
        lease_existed = False

    name = "gang"
    token_value = "e2e-deploy-token-0123456789"
    created = kube.create(JOBSETS.format(namespace), jobset(name, annotations={
        api.ANNOTATION_GROUP_TIMEOUT: "60", api.ANNOTATION_BARRIER_TOKEN: token_value}))
    jobset_uid = created["metadata"]["uid"]

    pods = []

    def started_pod(index, attempt):
        pod_name = f"{name}-workers-{index}-0-a{attempt}"
        pods.append(pod_name)
        kube.create(f"/api/v1/namespaces/{namespace}/pods", {"metadata": {"name": pod_name, "labels": {
            api.LABEL_GROUP_SCHEDULING: "true",  # the webhook's label, which the controller watches
            api.JOBSET_LABEL_NAME: name, api.JOBSET_LABEL_UID: jobset_uid,
            api.JOBSET_LABEL_REPLICATED_JOB: "workers",
            api.JOBSET_LABEL_RESTART_ATTEMPT: str(attempt), "jobset.sigs.k8s.io/job-index": str(index)}},
            "spec": {"nodeName": "muster-deploy-test-node", "restartPolicy": "Never",
                     "initContainers": [{"name": api.BARRIER_CONTAINER, "image": "barrier"}],
                     "containers": [{"name": "main", "image": "busybox"}]}})
        now = datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
        kube.patch(f"/api/v1/namespaces/{namespace}/pods/{pod_name}/status", {"status": {
            "phase": "Pending", "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}], "startTime": now,
            "initContainerStatuses": [{"name": api.BARRIER_CONTAINER, "image": "barrier", "imageID": "",
                                       "ready": False, "restartCount": 0,
                                       "state": {"running": {"startedAt": now}}}]}})

    def started_value():
        try:
            return kube.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}{api.CONFIGMAP_SUFFIX}")["data"][api.CONFIGMAP_KEY_STARTED]
        except (ApiError, KeyError):
            return None

    # --push-port 1: nothing listens there, the push is refused at once (the
    # ConfigMap is the release of record).
    controller = Controller(str(sa_kubeconfig), namespace, tmp_path / "controller.log",
                            extra=["--lease-namespace", MUSTER_NS, "--push-port", "1", *extra])
    try:
        wait_for(controller.leading, timeout=20, what="the controller to take the Lease in muster-system")
        started_pod(0, 0)
        started_pod(1, 0)
        assert wait_for(lambda: started_value() == "0", timeout=20, what="the release of attempt 0")
        configmap = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}{api.CONFIGMAP_SUFFIX}")
        assert configmap["metadata"]["ownerReferences"][0]["name"] == name

        # A JobSet restart: the ConfigMap is patched for attempt 1.
        kube.patch(f"{JOBSETS.format(namespace)}/{name}/status", {"status": {"restarts": 1}})
        started_pod(0, 1)
        started_pod(1, 1)
        assert wait_for(lambda: started_value() == "1", timeout=20, what="the release of attempt 1")

        def released_events():
            items, _ = kube.list(f"/api/v1/namespaces/{namespace}/events")
            return [e for e in items if e.get("reason") == "GroupReleased"
                    and e["involvedObject"]["name"] == name]
        assert len(wait_for(lambda: len(released_events()) >= 2 and released_events(), timeout=20,
                            what="GroupReleased Events")) == 2
        assert kube.get(lease_path)["spec"]["holderIdentity"]
        log = controller.output()
        for word in ("forbidden", "KUBE_EFORBIDDEN", "MUSTER_EUNAUTHORIZED", "event-failed", "release-failed"):
            assert word not in log, log
        assert token_value not in log
    finally:
        controller.stop()
        if not lease_existed:
            kube.delete(lease_path)
        # No kubelet confirms these pods' deletion: without a grace period of
        # 0 they would hold the namespace in Terminating for ever.
        for pod_name in pods:
            kube.delete(f"/api/v1/namespaces/{namespace}/pods/{pod_name}", body={"gracePeriodSeconds": 0})


# --------------------------------------------- (f) the namespaced install

NAMESPACED_SAS = ("muster-controller-nsd", "muster-webhook-nsd")


def namespaced_rbac(tenant):
    """deploy/namespaced's own RBAC (its RoleBindings and the placement
    ClusterRole and binding), for namespace `tenant`, bound to service
    accounts of their own (NAMESPACED_SAS), so that the base install's
    cluster-wide bindings, which the other tests apply, grant these nothing."""
    docs = list(yaml.safe_load_all(run(["kubectl", "kustomize", DEPLOY / "namespaced"]).stdout))
    mine = []
    for doc in copy.deepcopy(docs):
        if doc["kind"] == "RoleBinding" and doc["metadata"].get("namespace") == "team-a":
            doc["metadata"]["namespace"] = tenant
        elif doc["kind"] not in ("ClusterRole", "ClusterRoleBinding") or "placement" not in doc["metadata"]["name"]:
            continue
        for subject in doc.get("subjects", []):
            subject["name"] += "-nsd"
        if doc["kind"] != "RoleBinding":
            doc["metadata"]["name"] += "-nsd"
            if doc["kind"] == "ClusterRoleBinding":
                doc["roleRef"]["name"] += "-nsd"
        mine.append(doc)
    return docs, mine


def test_namespaced_overlay_binds_muster_to_one_namespace():
    """deploy/namespaced is base with the cluster-wide bindings of the
    controller's and the webhook's ClusterRoles replaced by RoleBindings in
    the tenant namespace, the controller given --namespace, and placement's
    read-only cluster reads in a ClusterRole of their own."""
    docs, _ = namespaced_rbac("team-a")
    built = by_kind_name(docs)
    base = by_kind_name(yaml.safe_load_all(run(["kubectl", "kustomize", DEPLOY / "base"]).stdout))
    assert ("ClusterRoleBinding", "muster-controller") not in built
    assert ("ClusterRoleBinding", "muster-webhook") not in built
    for name in ("muster-controller", "muster-webhook"):
        binding = next(d for d in docs if d["kind"] == "RoleBinding" and d["metadata"]["name"] == name)
        assert binding["metadata"]["namespace"] == "team-a"
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": MUSTER_NS}]
    args = built[("Deployment", "muster-controller")]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--namespace") + 1] == "team-a"
    placement = built[("ClusterRole", "muster-controller-placement")]["rules"]
    assert all(set(r["verbs"]) <= {"get", "list", "watch"} for r in placement)  # read-only
    assert {res for r in placement for res in r["resources"]} == {"nodes", "pods", "topologies", "hypernodes"}
    # Everything else is base's, unchanged.
    for key, doc in built.items():
        if key in base and key != ("Deployment", "muster-controller"):
            assert doc == base[key], key


@pytest.fixture
def namespaced_install(kube, kubeconfig, namespace, deploy_rbac):
    """The namespaced RBAC for the test's namespace, applied for real; its
    service accounts and objects deleted afterwards."""
    _, mine = namespaced_rbac(namespace)
    accounts = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": n, "namespace": MUSTER_NS}}
                for n in NAMESPACED_SAS]
    objects = accounts + mine
    kubectl(kubeconfig, "apply", "-f", "-", input=yaml.safe_dump_all(objects))
    yield namespace
    kubectl(kubeconfig, "delete", "--ignore-not-found", "--wait=false", "-f", "-",
            input=yaml.safe_dump_all(objects), check=False)


def test_namespaced_rbac_reaches_one_namespace_and_placement_reads_only(kubeconfig, namespaced_install):
    tenant = namespaced_install
    controller, webhook = (f"system:serviceaccount:{MUSTER_NS}:{n}" for n in NAMESPACED_SAS)
    allowed = [("list", "jobsets.jobset.x-k8s.io", "-n", tenant), ("patch", "jobsets.jobset.x-k8s.io", "-n", tenant),
               ("create", "configmaps", "-n", tenant), ("delete", "configmaps", "-n", tenant),
               ("create", "events", "-n", tenant), ("delete", "jobs.batch", "-n", tenant),
               # placement: every Node and every bound pod, read-only
               ("list", "nodes"), ("watch", "pods", "--all-namespaces")]
    denied = [("list", "jobsets.jobset.x-k8s.io", "--all-namespaces"), ("list", "jobsets.jobset.x-k8s.io", "-n", "default"),
              ("patch", "jobsets.jobset.x-k8s.io", "-n", "default"),
              ("create", "configmaps", "-n", "default"), ("delete", "configmaps", "-n", "kube-system"),
              ("get", "configmaps", "-n", "kube-system"), ("create", "events", "-n", "default"),
              ("get", "pods", "-n", "default"), ("update", "nodes"), ("get", "secrets", "-n", tenant),
              ("delete", "jobs.batch", "-n", "default")]
    assert [a for a in allowed if not can_i(kubeconfig, controller, *a)] == []
    assert [d for d in denied if can_i(kubeconfig, controller, *d)] == []
    assert can_i(kubeconfig, webhook, "get", "configmaps", "-n", tenant)
    assert [d for d in [("get", "configmaps", "-n", "default"), ("get", "configmaps", "-n", "kube-system"),
                        ("list", "pods", "-A")] if can_i(kubeconfig, webhook, *d)] == []


@pytest.mark.skipif(not CONTROLLER.exists(), reason=f"{CONTROLLER} is not built (make)")
def test_controller_works_with_the_namespaced_rbac(kube, kubeconfig, namespaced_install, tmp_path):
    """The same gang start as test_controller_works_with_its_service_account,
    the controller watching one namespace (--namespace, as the overlay runs
    it) with nothing but the namespaced RBAC and the Lease's Role."""
    lease_binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                     "metadata": {"name": "muster-controller-nsd-lease", "namespace": MUSTER_NS},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                 "name": "muster-controller-leader-election"},
                     "subjects": [{"kind": "ServiceAccount", "name": NAMESPACED_SAS[0], "namespace": MUSTER_NS}]}
    kubectl(kubeconfig, "apply", "-f", "-", input=yaml.safe_dump(lease_binding))
    try:
        gang_start_as(kube, kubeconfig, namespaced_install, NAMESPACED_SAS[0], tmp_path)
    finally:
        kubectl(kubeconfig, "delete", "--ignore-not-found", "-f", "-", input=yaml.safe_dump(lease_binding),
                check=False)
