"""The gang start on real pods: kubelet v1.20.2 and containerd run the
containers (e2e/cluster/node.sh), the barrier is muster's own image
(images/images.sh) injected by the webhook, and the controller releases it.

Every time asserted here is kubelet's own, from the pod status (container
startedAt / finishedAt, second precision), not muster's logs. The webhook and
the controller run on this machine in the first test, and in the cluster,
installed from deploy/ with kubectl apply -k, in the second.
"""

import datetime
import json
import os
import pathlib
import subprocess
import time

import pytest
import yaml

from conftest import ROOT, Controller, wait_for
from kube import ApiError
from test_webhook import DEPLOY, JOBSETS, admitted, serving_webhook
from local_images import REAL_NODE_LABEL, image_refs
import muster_api as api  # noqa: E402

LATE_LABEL = "e2e.muster.dev/late"
SELECTOR = "e2e.muster.dev/real-webhook"
VOLUME_SELECTOR = "e2e.muster.dev/volume-webhook"
GANG_LABEL = "muster.dev/gang-start"  # the label deploy/README.md suggests


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


@pytest.fixture(scope="module")
def volume_only_webhook(kube, kubeconfig, tmp_path_factory):
    """The barrier injected with --barrier-port 0: it listens on no port, so
    the release reaches it only through the ConfigMap volume."""
    with serving_webhook(kube, kubeconfig, tmp_path_factory.mktemp("volume-webhook"), VOLUME_SELECTOR,
                         barrier_image=image_refs()["muster-barrier"], extra=("--barrier-port", "0")) as server:
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


def barrier_logs(kubeconfig, namespace, pods):
    return {pod: subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "logs", pod, "-c",
                                 api.BARRIER_CONTAINER], capture_output=True, text=True).stdout[-1500:]
            for pod in pods}


def gang_on_real_node(kube, kubeconfig, namespace, real_node, controller_log):
    """Creates a JobSet whose two early pods wait at the barrier on the real
    node while a third cannot be scheduled until the node is labelled 20 s
    later; asserts from kubelet's times that no main container started before
    the last barrier and that the release came within 30 s (the push), and
    that controller_log() shows the push reaching all three. Returns the
    (barrier start, barrier end, main start) of each pod."""
    late_value = namespace
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
        items, _ = kube.list(f"/api/v1/namespaces/{namespace}/pods", labelSelector=f"{api.JOBSET_LABEL_NAME}=real")
        return items

    def early_barriers_running():
        running = [p for p in pods() if p["metadata"]["name"].startswith("real-early-")
                   and any(s["name"] == api.BARRIER_CONTAINER and "running" in s["state"]
                           for s in p["status"].get("initContainerStatuses", []))]
        return len(running) == 2

    try:
        # Real pods: a sandbox, the barrier's image, the volume; seconds each.
        wait_for(early_barriers_running, timeout=120, interval=1, what="both early barriers running on the node")
        held_since = time.monotonic()
        # The late pod is still unschedulable; hold the group 20 s more.
        wait_for(lambda: time.monotonic() - held_since >= 20, timeout=30, interval=1, what="20 s of holding")
        assert all(container_times(p) is None for p in pods()), "a main container started before the group"
        kube.patch(f"/api/v1/nodes/{real_node}", {"metadata": {"labels": {LATE_LABEL: late_value}}})

        def all_started():
            got = {p["metadata"]["name"]: container_times(p) for p in pods()}
            return got if len(got) == 3 and all(got.values()) else None

        # The late pod's start (seconds) and the push (well under a minute);
        # the deadline is a volume sync's worst case, so a missed push fails
        # on the latency assertion below with its figure, not on a timeout.
        times = wait_for(all_started, timeout=180, interval=1, what="every main container started")
    finally:
        kube.patch(f"/api/v1/nodes/{real_node}", {"metadata": {"labels": {LATE_LABEL: None}}})
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
    # would take 60-90 s through the volume. The barriers' own logs say why
    # a push was not taken.
    assert last_main - last_barrier <= 30, (times, barrier_logs(kubeconfig, namespace, times))

    def pushed_to_all():
        pushed = [line for line in controller_log().splitlines() if " event=pushed " in line]
        return pushed and " ok=3 " in pushed[-1]

    wait_for(pushed_to_all, timeout=30, interval=1, what="the controller's pushed line with ok=3")
    return times


def absent(kube, path):
    """True once GET path answers 404."""
    try:
        kube.get(path)
        return False
    except ApiError as e:
        return e.status == 404


def delete_now(kubeconfig, namespace):
    """Real pods take a while to go: delete them at once, without grace."""
    subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "delete", "pods", "--all",
                    "--grace-period=0", "--force", "--wait=false"], capture_output=True)


def test_gang_start_on_real_pods_released_by_push(kube, kubeconfig, namespace, real_node, real_webhook,
                                                    run_standin, tmp_path):
    """The webhook and the controller on this machine, the pods real."""
    admitted(kube, namespace, SELECTOR)
    run_standin("jobset_controller.py", "--namespace", namespace)
    controller = Controller(kubeconfig, namespace, tmp_path / "controller.log")
    try:
        gang_on_real_node(kube, kubeconfig, namespace, real_node, controller.output)
    finally:
        controller.stop()
        print(controller.output()[-3000:])
        delete_now(kubeconfig, namespace)


def test_volume_alone_releases_real_pods_on_kubelets_sync(kube, kubeconfig, namespace, real_node,
                                                          volume_only_webhook, run_standin, tmp_path):
    """No push port: kubelet's default sync (1 minute plus jitter) brings the
    release through the ConfigMap volume, later but still together."""
    admitted(kube, namespace, VOLUME_SELECTOR)
    run_standin("jobset_controller.py", "--namespace", namespace)
    controller = Controller(kubeconfig, namespace, tmp_path / "controller.log")
    try:
        kube.create(JOBSETS.format(namespace), {
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "volume"},
            "spec": {"groupSchedulingConfig": {"timeoutAfterSeconds": 300}, "replicatedJobs": [
                {"name": "w", "replicas": 1, "template": {"spec": {
                    "completions": 2, "parallelism": 2, "backoffLimit": 0,
                    "template": real_pod_template(real_node)}}}]}})

        def all_started():
            items, _ = kube.list(f"/api/v1/namespaces/{namespace}/pods",
                                 labelSelector=f"{api.JOBSET_LABEL_NAME}=volume")
            got = {p["metadata"]["name"]: container_times(p) for p in items}
            return got if len(got) == 2 and all(got.values()) else None

        # Pod start (seconds) + kubelet's sync: up to 90 s with jitter; the
        # deadline allows two syncs on a busy machine.
        times = wait_for(all_started, timeout=240, interval=2, what="both main containers started")
        last_barrier = max(t[0] for t in times.values())
        first_main = min(t[2] for t in times.values())
        print(f"volume release: mains {first_main - last_barrier:.0f}..{max(t[2] for t in times.values()) - last_barrier:.0f}"
              " s after the last barrier start")
        assert first_main >= last_barrier, times
        assert " event=release " in controller.output()
        # No push was possible: the barriers listen on no port.
        pushed = [line for line in controller.output().splitlines() if " event=pushed " in line]
        assert not pushed or " ok=0 " in pushed[-1], pushed
    finally:
        controller.stop()
        delete_now(kubeconfig, namespace)


def test_restart_attempt_on_real_pods_is_held_for_its_own_group(kube, kubeconfig, namespace, real_node,
                                                                 real_webhook, run_standin, tmp_path):
    """Attempt 0 runs and one of its pods fails; the JobSet restarts
    (maxRestarts 1). Attempt 1's pods wait at the barrier while its late pod
    cannot be scheduled: attempt 0's release does not let them through, and
    none of attempt 1's main containers starts before its last barrier."""
    admitted(kube, namespace, SELECTOR)
    run_standin("jobset_controller.py", "--namespace", namespace)
    controller = Controller(kubeconfig, namespace, tmp_path / "controller.log")
    late_value = namespace
    attempt_label = api.JOBSET_LABEL_RESTART_ATTEMPT
    # The first pod of attempt 0 fails 8 s after its release; the rest succeed.
    script = ('if [ "$ATTEMPT" = 0 ] && [ "$INDEX" = 0 ] && [ "$JOB" = early ]; then sleep 8; exit 1; fi; sleep 2')

    def template(late):
        t = real_pod_template(real_node, late=late_value if late else None)
        t["spec"]["containers"][0]["command"] = ["sh", "-c", script]
        t["spec"]["containers"][0]["env"] = [
            {"name": "ATTEMPT", "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{attempt_label}']"}}},
            {"name": "INDEX", "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.annotations['{api.JOB_ANNOTATION_COMPLETION_INDEX}']"}}},
            {"name": "JOB", "value": "late" if late else "early"}]
        return t

    def pods(attempt):
        items, _ = kube.list(f"/api/v1/namespaces/{namespace}/pods",
                             labelSelector=f"{api.JOBSET_LABEL_NAME}=restarts,{attempt_label}={attempt}")
        return items

    def all_started(attempt):
        got = {p["metadata"]["name"]: container_times(p) for p in pods(attempt)}
        return got if len(got) == 3 and all(got.values()) else None

    try:
        kube.patch(f"/api/v1/nodes/{real_node}", {"metadata": {"labels": {LATE_LABEL: late_value}}})
        kube.create(JOBSETS.format(namespace), {
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "restarts"},
            "spec": {"groupSchedulingConfig": {"timeoutAfterSeconds": 300}, "failurePolicy": {"maxRestarts": 1},
                     "replicatedJobs": [
                         {"name": "early", "replicas": 1, "template": {"spec": {
                             "completions": 2, "parallelism": 2, "backoffLimit": 0, "template": template(False)}}},
                         {"name": "late", "replicas": 1, "template": {"spec": {
                             "completions": 1, "parallelism": 1, "backoffLimit": 0, "template": template(True)}}}]}})
        first = wait_for(lambda: all_started(0), timeout=120, interval=1, what="attempt 0's main containers")
        # Attempt 1's late pod will have nowhere to go until the label is back.
        kube.patch(f"/api/v1/nodes/{real_node}", {"metadata": {"labels": {LATE_LABEL: None}}})

        def early_held(attempt):
            held = [p for p in pods(attempt) if any(s["name"] == api.BARRIER_CONTAINER and "running" in s["state"]
                                                    for s in p["status"].get("initContainerStatuses", []))]
            return len(held) == 2

        # The failure (8 s), the stand-in's restart, two new real pods.
        wait_for(lambda: early_held(1), timeout=150, interval=1, what="attempt 1's early pods at the barrier")
        held_since = time.monotonic()
        wait_for(lambda: time.monotonic() - held_since >= 15, timeout=30, interval=1, what="15 s of holding")
        assert all(container_times(p) is None for p in pods(1)), "attempt 1 released by attempt 0's release"
        kube.patch(f"/api/v1/nodes/{real_node}", {"metadata": {"labels": {LATE_LABEL: late_value}}})
        second = wait_for(lambda: all_started(1), timeout=180, interval=1, what="attempt 1's main containers")
        last_barrier = max(t[0] for t in second.values())
        print(f"attempt 0 released {max(t[2] for t in first.values()) - max(t[0] for t in first.values()):.0f} s "
              f"after its last barrier; attempt 1 {min(t[2] for t in second.values()) - last_barrier:.0f} s")
        assert min(t[2] for t in second.values()) >= last_barrier, second
        assert max(t[2] for t in second.values()) - last_barrier <= 30, (second, barrier_logs(
            kubeconfig, namespace, second))
        releases = controller.releases()
        assert any(" attempt=1 " in line for line in releases), releases
    finally:
        controller.stop()
        print(controller.output()[-3000:])
        kube.patch(f"/api/v1/nodes/{real_node}", {"metadata": {"labels": {LATE_LABEL: None}}})
        delete_now(kubeconfig, namespace)


def kubectl(kubeconfig, *args, stdin=None, check=True, timeout=240):
    done = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True,
                          text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


def muster_processes():
    """pid -> (RSS KiB, argv) of every process of muster's images on this
    machine (their binary is /usr/local/bin/muster in the image)."""
    found = {}
    for proc in pathlib.Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if argv[0] != b"/usr/local/bin/muster":
                continue
            rss = next(int(line.split()[1]) for line in (proc / "status").read_text().splitlines()
                       if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            continue
        found[int(proc.name)] = (rss, [a.decode() for a in argv if a])
    return found


def write_user_layer(layer, refs):
    """The user's own kustomize layer over e2e/deploy-local: their release's
    image references (refs: name -> "repo:tag"), nothing else. Written as
    JSON, which kustomize reads as YAML: every string stays quoted. PyYAML
    left a tag such as 66269e9 (a commit) bare, which it reads as a string
    and kustomize's YAML 1.2 as the number 6.6269e13 ("cannot unmarshal
    number into ... newTag of type string": a CI run failed so)."""
    def name_and_tag(ref):
        name, tag = ref.rsplit(":", 1)
        return {"name": name.replace(name.rsplit("/", 1)[0], "ghcr.io/muster-dev"), "newName": name, "newTag": tag}

    layer.mkdir(parents=True, exist_ok=True)
    (layer / "kustomization.yaml").write_text(json.dumps({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": ["../../e2e/deploy-local"],
        "images": [name_and_tag(refs["muster-webhook"]), name_and_tag(refs["muster-controller"])],
        "patches": [{"target": {"kind": "Deployment", "name": "muster-webhook"}, "patch": json.dumps([
            {"op": "test", "path": "/spec/template/spec/containers/0/args/6", "value": "--barrier-image"},
            {"op": "replace", "path": "/spec/template/spec/containers/0/args/7",
             "value": refs["muster-barrier"]}])}]}, indent=2) + "\n")


def test_the_users_layer_keeps_a_tag_that_reads_as_a_number_a_string(tmp_path):
    """A commit such as 66269e9 is the image tag of make images; the user's
    layer must give it to kustomize as a string (kubectl kustomize, as
    kubectl apply -k reads it), or the install fails before it starts."""
    refs = {name: f"muster.local/{name}:66269e9" for name in ("muster-webhook", "muster-controller",
                                                              "muster-barrier")}
    layer = tmp_path / "build" / "deploy-local"
    (tmp_path / "e2e").mkdir()
    (tmp_path / "e2e" / "deploy-local").symlink_to(ROOT / "e2e" / "deploy-local")
    write_user_layer(layer, refs)
    out = subprocess.run(["kubectl", "kustomize", str(layer)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    images = {c["image"] for doc in yaml.safe_load_all(out.stdout) if doc and doc["kind"] == "Deployment"
              for c in doc["spec"]["template"]["spec"]["containers"]}
    assert images == {"muster.local/muster-webhook:66269e9", "muster.local/muster-controller:66269e9"}
    assert "muster.local/muster-barrier:66269e9" in out.stdout


def test_installed_with_kubectl_apply_k_gang_starts_real_pods(kube, kubeconfig, namespace, real_node, run_standin,
                                                              tmp_path):
    """deploy/ as a user installs it (kubectl apply -k, gen-certs.sh, a TLS
    Secret, render-webhooks.sh by Service), run from muster's own images on
    the real node with the RBAC as shipped: the in-cluster webhook injects
    the barrier and the in-cluster controller releases it by push."""
    refs = image_refs()
    layer = ROOT / "build" / "deploy-local"
    write_user_layer(layer, refs)
    certs = tmp_path / "certs"
    subprocess.run(["bash", str(DEPLOY / "gen-certs.sh"), "--out", str(certs)], check=True, capture_output=True)
    subprocess.run(["bash", str(DEPLOY / "crd" / "patch-crd.sh"), "--kubeconfig", kubeconfig], check=True,
                   capture_output=True)
    # On 1.20 kubectl's validation knows no matchConditions: render without them.
    rendered = subprocess.run(["bash", str(DEPLOY / "render-webhooks.sh"), "--ca-file", str(certs / "ca.crt"),
                               "--namespace-label", f"{GANG_LABEL}=enabled", "--no-match-conditions"],
                              check=True, capture_output=True, text=True).stdout
    # The endpoint controller, which make cluster does not run (up.sh says
    # why), for the webhook Service the apiserver dials: the real one, alone.
    cache = pathlib.Path(os.environ.get("MUSTER_CACHE", pathlib.Path.home() / ".cache" / "muster"))
    endpoints_log = open(tmp_path / "endpoint-controller.log", "w")
    endpoints = subprocess.Popen([str(cache / "k8s-1.20.2" / "bin" / "kube-controller-manager"), "--kubeconfig",
                                  kubeconfig, "--leader-elect=false", "--port=0", "--secure-port=0",
                                  "--controllers=endpoint"], stdout=endpoints_log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    try:
        kubectl(kubeconfig, "apply", "-k", str(layer))
        kubectl(kubeconfig, "-n", "muster-system", "create", "secret", "tls", "muster-webhook-tls",
                f"--cert={certs / 'tls.crt'}", f"--key={certs / 'tls.key'}")
        for deployment in ("muster-webhook", "muster-controller"):
            # Image import is done; a pod starts in seconds, two per Deployment.
            kubectl(kubeconfig, "-n", "muster-system", "rollout", "status", f"deployment/{deployment}",
                    "--timeout=180s", timeout=200)
        kubectl(kubeconfig, "apply", "-f", "-", stdin=rendered)
        admitted(kube, namespace, GANG_LABEL, "enabled")
        run_standin("jobset_controller.py", "--namespace", namespace)

        def controller_logs():
            return kubectl(kubeconfig, "-n", "muster-system", "logs", "-l",
                           "app.kubernetes.io/name=muster-controller", "--tail=-1", "--prefix", check=False)

        gang_on_real_node(kube, kubeconfig, namespace, real_node, controller_logs)
        processes = muster_processes()
        for rss, argv in processes.values():
            kind = "webhook" if "--tls-cert-file" in argv else "controller"
            print(f"figure: {kind} pod RSS {rss / 1024:.1f} MiB")
        assert len(processes) == 4, processes  # two replicas each, as shipped
    finally:
        print(controller_logs()[-4000:] if "controller_logs" in locals() else "")
        kubectl(kubeconfig, "delete", "-f", "-", "--ignore-not-found", stdin=rendered, check=False)
        kubectl(kubeconfig, "delete", "-k", str(layer), "--ignore-not-found", "--wait=false", check=False)
        delete_now(kubeconfig, "muster-system")
        delete_now(kubeconfig, namespace)

        try:
            # The next run creates it again: wait until the real pods are gone.
            wait_for(lambda: absent(kube, "/api/v1/namespaces/muster-system"), timeout=180, interval=2,
                     what="namespace muster-system deleted")
        finally:
            endpoints.terminate()
            endpoints.wait(30)
            endpoints_log.close()


def test_a_second_real_node_comes_and_goes_leaving_nothing(kube, kubeconfig, namespace, real_node):
    """node.sh up 2 adds 127.0.0.3 beside the first node; a real container
    runs there; node.sh down 2, with the container still running (its pod
    only force-deleted), then leaves no process, mount, bridge, pod network
    namespace or veth, cgroup, state or Node object of it, the host's
    sysctls as they were, and the first node untouched."""
    node_sh = ROOT / "e2e" / "cluster" / "node.sh"
    state = pathlib.Path(kubeconfig).parent / "nodes" / "127.0.0.3"
    sysctls = ["vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops", "net/ipv4/ip_forward"]

    def read_sysctls():
        return {k: (pathlib.Path("/proc/sys") / k).read_text().strip() for k in sysctls}

    def pod_networks():
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n")
        veths = subprocess.run(["ip", "-o", "link", "show", "type", "veth"], capture_output=True,
                               text=True).stdout.split("\n")
        return ({n.split()[0] for n in names if n.strip()},
                {v.split(":")[1].strip().split("@")[0] for v in veths if v.strip()})

    before = read_sysctls()
    networks_before = pod_networks()
    env = dict(os.environ, MUSTER_CLUSTER_DIR=str(pathlib.Path(kubeconfig).parent))
    subprocess.run(["bash", str(node_sh), "up", "2"], check=True, timeout=300, env=env, capture_output=True)
    try:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-second"},
               "spec": real_pod_template("127.0.0.3", seconds=3600)["spec"]}
        kube.create(f"/api/v1/namespaces/{namespace}/pods", pod)
        wait_for(lambda: kube.get(f"/api/v1/namespaces/{namespace}/pods/on-second")["status"].get("phase")
                 == "Running", timeout=120, interval=1, what="a real container running on 127.0.0.3")
        assert (state / "kubelet.pid").exists()
    finally:
        # Down first, the container running: nothing tears its network down but node.sh.
        done = subprocess.run(["bash", str(node_sh), "down", "2"], timeout=180, env=env, capture_output=True,
                              text=True)
        delete_now(kubeconfig, namespace)
    assert done.returncode == 0, done.stderr
    assert not state.exists()
    leftovers = []
    for proc in pathlib.Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(state).encode() in (proc / "cmdline").read_bytes():
                leftovers.append(proc.name)
        except OSError:
            continue
    assert not leftovers, f"processes of the removed node: {leftovers}"
    assert str(state) not in pathlib.Path("/proc/self/mounts").read_text()
    assert subprocess.run(["ip", "link", "show", "mstr2"], capture_output=True).returncode != 0
    assert not list(pathlib.Path("/sys/fs/cgroup").glob("*/muster-node-2")), "cgroups of the removed node"
    namespaces, veths = pod_networks()
    assert namespaces <= networks_before[0], f"pod network namespaces left: {namespaces - networks_before[0]}"
    assert veths <= networks_before[1], f"veths left: {veths - networks_before[1]}"
    assert read_sysctls() == before

    wait_for(lambda: absent(kube, "/api/v1/nodes/127.0.0.3"), timeout=30, interval=1,
             what="Node 127.0.0.3 deleted")
    first = kube.get(f"/api/v1/nodes/{real_node}")
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in first["status"]["conditions"])


def descendants(pids):
    """pids and every process below them."""
    children = {}
    for proc in pathlib.Path("/proc").iterdir():
        try:
            if proc.name.isdigit():
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(proc.name))
        except (OSError, IndexError, ValueError):
            continue
    found, todo = [], list(pids)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def alive(pid):
    """pid runs (a zombie left unreaped by the sandbox's init does not)."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_a_real_node_killed_with_its_pod_comes_back_ready_only_when_its_kubelet_is(
        kube, kubeconfig, namespace, real_node):
    """A session's end kills a node's kubelet, containerd, shims and
    containers with SIGKILL; make cluster then starts the node again on its
    kept state. node.sh up must say Ready only once the new kubelet has
    posted it: the killed one's Ready stays True for the node controller's
    40 s grace, and node.sh used to return on it within a second, before the
    new kubelet ran. The pod network the killed pod left is removed, a new
    pod runs, and node.sh down leaves no network behind."""
    node_sh = ROOT / "e2e" / "cluster" / "node.sh"
    state = pathlib.Path(kubeconfig).parent / "nodes" / "127.0.0.3"
    env = dict(os.environ, MUSTER_CLUSTER_DIR=str(pathlib.Path(kubeconfig).parent))

    def pod_networks():
        out = subprocess.run(["ip", "-o", "link", "show", "master", "mstr2"], capture_output=True, text=True)
        return [line.split(":")[1].strip().split("@")[0] for line in out.stdout.splitlines() if line.strip()]

    def run_pod(name):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": real_pod_template("127.0.0.3", seconds=3600)["spec"]}
        kube.create(f"/api/v1/namespaces/{namespace}/pods", pod)
        wait_for(lambda: kube.get(f"/api/v1/namespaces/{namespace}/pods/{name}")["status"].get("phase")
                 == "Running", timeout=120, interval=1, what=f"pod {name} running on 127.0.0.3")
        return kube.get(f"/api/v1/namespaces/{namespace}/pods/{name}")["status"]["podIP"]

    subprocess.run(["bash", str(node_sh), "up", "2"], check=True, timeout=300, env=env, capture_output=True)
    try:
        run_pod("before")
        assert len(pod_networks()) == 1

        sock = str(state / "containerd.sock")
        shims = subprocess.run(["pgrep", "-f", f"containerd-shim-runc-v2 .*-address {sock}"],
                               capture_output=True, text=True).stdout.split()
        daemons = [int((state / f"{name}.pid").read_text()) for name in ("kubelet", "containerd")]
        victims = descendants([int(p) for p in shims]) + daemons
        assert len(victims) >= 5, victims  # kubelet, containerd, a shim, pause, sleep
        for pid in victims:
            os.kill(pid, 9)
        wait_for(lambda: not any(alive(pid) for pid in victims), timeout=30,
                 interval=0.2, what="the killed node's processes gone")

        up = subprocess.run(["bash", str(node_sh), "up", "2"], timeout=300, env=env, capture_output=True,
                            text=True)
        assert up.returncode == 0, up.stderr
        started = (state / "kubelet.pid").stat().st_mtime
        ready = [c for c in kube.get("/api/v1/nodes/127.0.0.3")["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True"
        assert when(ready[0]["lastHeartbeatTime"]) >= int(started), (ready, started, up.stderr)

        # The new kubelet ends the killed pod's sandbox, and CNI DEL its network.
        wait_for(lambda: len(pod_networks()) == 0, timeout=120, interval=1,
                 what="the killed pod's network removed")
        assert run_pod("after")
        assert len(pod_networks()) == 1
    finally:
        done = subprocess.run(["bash", str(node_sh), "down", "2"], timeout=180, env=env, capture_output=True,
                              text=True)
        delete_now(kubeconfig, namespace)
    assert done.returncode == 0, done.stderr
    assert subprocess.run(["ip", "link", "show", "mstr2"], capture_output=True).returncode != 0
    wait_for(lambda: absent(kube, "/api/v1/nodes/127.0.0.3"), timeout=30, interval=1,
             what="Node 127.0.0.3 deleted")
    first = kube.get(f"/api/v1/nodes/{real_node}")
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in first["status"]["conditions"])
