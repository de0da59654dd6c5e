#!/usr/bin/python3
"""muster's demo on the local control plane (`make demo`, the README's first command).

It starts (or reuses) the local control plane (e2e/cluster/up.sh: real etcd,
kube-apiserver, kube-scheduler, kube-controller-manager), the two stand-ins
(node agent, JobSet controller), bin/muster-webhook (HTTPS, certificate from
deploy/gen-certs.sh, registered by URL with deploy/render-webhooks.sh, the
JobSet CRD patched by deploy/crd/patch-crd.sh) and bin/muster-controller.
Then it submits a JobSet as a user writes it (spec.groupSchedulingConfig and
nothing else muster-specific) whose nodes come up at staggered times: two
nodes at once, two after STAGGER seconds, two after twice that. Pods on the
early nodes wait at the barrier; progress is printed every second (counts and
one letter per pod); when the last pod starts, the group is released and a
summary says when each pod reached the barrier, when the group was released
and how long the barrier held each pod. When the local cluster has a real
node (e2e/cluster/node.sh, one by default), two more pods run there as real
containers (muster's own barrier image and a busybox main container): they
are held by the same barrier until the last fake-node pod has started.

Exit 0 when every pod's main container started after the last pod reached
the barrier; otherwise non-zero with the reason. Everything it started is
stopped and its namespace, webhook registrations and (if it added it) the
CRD patch are removed; the control plane stays up for the next run
(`make cluster-down` stops it).
"""

import argparse
import collections
import json
import pathlib
import re
import signal
import socket
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "e2e" / "standins"))

from kube import ApiError, Kube  # noqa: E402
from local_images import REAL_NODE_LABEL, image_refs  # noqa: E402
import muster_api as api  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import demo_placement  # noqa: E402

BARRIER = api.BARRIER_CONTAINER
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{}/jobsets"


class DemoError(Exception):
    pass


class Demo:
    """What the placement half (scripts/demo_placement.py) uses of the demo's run."""

    def __init__(self, start, kube, kubeconfig, namespace, processes, work):
        self.start, self.kube, self.kubeconfig = start, kube, kubeconfig
        self.namespace, self.processes, self.work = namespace, processes, work
        self.root = ROOT
        self.jobsets_path = JOBSETS.format(namespace)
        self.error = DemoError
        self.pod_letter = pod_letter

    def say(self, text):
        say(self.start, text)


def say(start, text):
    print(f"[{time.monotonic() - start:6.1f} s] {text}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    """The demo's child processes, each with its log file; all stopped at the end."""

    def __init__(self, work):
        self.work = work
        self.children = []

    def start(self, name, args):
        log = open(self.work / f"{name}.log", "w")
        process = subprocess.Popen([str(a) for a in args], stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.children.append((name, process, log))
        return process

    def check(self):
        for name, process, _ in self.children:
            if process.poll() is not None:
                tail = (self.work / f"{name}.log").read_text().splitlines()[-15:]
                raise DemoError(f"{name} exited with code {process.returncode}:\n    " + "\n    ".join(tail))

    def stop_one(self, name):
        """Stops child `name`; check() no longer asks after it."""
        for child in [c for c in self.children if c[0] == name]:
            _, process, log = child
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            log.close()
            self.children.remove(child)

    def stop(self):
        for _, process, _ in reversed(self.children):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for _, process, log in reversed(self.children):
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()


def run(args, **kwargs):
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise DemoError(f"{' '.join(map(str, args[:2]))} failed: {result.stderr.strip()[-800:]}")
    return result.stdout


# The step lines of the cluster scripts (e2e/cluster/common.sh's log()):
# "HH:MM:SS up.sh: [12 s] ...". The first start builds the control plane
# for minutes; these lines say which step runs, for how long, and where the
# build log is, while the rest of the scripts' output stays out of the way.
STEP_LINE = re.compile(r"^\d\d:\d\d:\d\d (?:up|build|deps)\.sh: (.*)$")


def run_showing_steps(start, args):
    """run(), printing the step lines of the scripts' stderr as they come."""
    process = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    tail = collections.deque(maxlen=40)
    for line in process.stderr:
        tail.append(line)
        step = STEP_LINE.match(line.rstrip("\n"))
        if step:
            say(start, f"  {step.group(1)}")
    stdout = process.stdout.read()
    if process.wait() != 0:
        raise DemoError(f"{' '.join(map(str, args[:2]))} failed: {''.join(tail).strip()[-800:]}")
    return stdout


REAL_PODS = 2


def real_job(image):
    """REAL_PODS pods on the real node: real containers, held by the same barrier."""
    return {"name": "real", "replicas": 1, "template": {"spec": {
        "parallelism": REAL_PODS, "completions": REAL_PODS, "backoffLimit": 0,
        "template": {"spec": {
            "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
            "nodeSelector": {REAL_NODE_LABEL: "true"},
            "tolerations": [{"key": REAL_NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "trainer", "image": image, "imagePullPolicy": "Never",
                            "command": ["sh", "-c", "echo training; sleep 4"]}]}}}}}


def kubelet_times(pod):
    """(barrier start, main start) of a real pod from kubelet's status, in
    whole seconds, or None while either has not started."""
    def seconds(stamp):
        return time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone

    status = pod.get("status", {})
    barrier = [c for c in status.get("initContainerStatuses", []) if c["name"] == BARRIER]
    main = status.get("containerStatuses") or [{}]
    b = barrier[0]["state"].get("terminated") if barrier else None
    m = main[0].get("state", {})
    m = m.get("running") or m.get("terminated")
    if not b or not m or not m.get("startedAt"):
        return None
    return seconds(b["startedAt"]), seconds(m["startedAt"])


def demo_jobset(name, pods_per_job, timeout, real_image=None):
    """Two replicated jobs of two Indexed Jobs each; every pod asks for one CPU,
    so the scheduler fills the nodes that exist and the rest of the pods wait
    (Pending) for the nodes still to come. With real_image, a third replicated
    job of REAL_PODS pods on the real node."""
    def replicated_job(job):
        return {"name": job, "replicas": 2, "template": {"spec": {
            "parallelism": pods_per_job, "completions": pods_per_job, "backoffLimit": 0,
            "template": {"metadata": {"annotations": {"e2e.muster.dev/run-seconds": "4"}}, "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "trainer", "image": "pytorch/pytorch:latest",
                                "command": ["bash", "-c", "train.py"],
                                "resources": {"requests": {"cpu": "1"}}}]}}}}}

    jobs = [replicated_job("workers"), replicated_job("evaluators")] + ([real_job(real_image)] if real_image else [])
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
            "spec": {"groupSchedulingConfig": {"timeoutAfterSeconds": timeout}, "replicatedJobs": jobs}}


def pod_letter(pod):
    """One letter per pod: . no node yet, w waiting to start, B at the barrier,
    R main running, D done, F failed."""
    status = pod.get("status", {})
    if not pod["spec"].get("nodeName"):
        return "."
    if status.get("phase") == "Succeeded":
        return "D"
    if status.get("phase") == "Failed":
        return "F"
    main = (status.get("containerStatuses") or [{}])[0].get("state", {})
    if "running" in main or "terminated" in main:
        return "R"
    init = (status.get("initContainerStatuses") or [{}])[0].get("state", {})
    if "running" in init:
        return "B"
    return "w"


def read_events(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods-per-job", type=int, default=4, help="pods per Indexed Job (4 Jobs; default 4)")
    parser.add_argument("--stagger", type=float, default=12, help="seconds between node pools (default 12)")
    parser.add_argument("--timeout", type=int, default=120, help="groupSchedulingConfig.timeoutAfterSeconds")
    parser.add_argument("--keep", action="store_true", help="keep the namespace, the logs and the certificates")
    halves = parser.add_mutually_exclusive_group()
    halves.add_argument("--gang-only", action="store_true", help="show the gang start alone")
    halves.add_argument("--placement-only", action="store_true", help="show topology placement alone")
    options = parser.parse_args()
    start = time.monotonic()
    work = pathlib.Path(tempfile.mkdtemp(prefix="muster-demo-"))
    processes = Processes(work)
    kube = None
    namespace = f"muster-demo-{uuid.uuid4().hex[:6]}"
    registrations = []
    crd_was = None
    topology_made = False
    kubeconfig = None
    code = 1
    try:
        say(start, "starting the local control plane (etcd, kube-apiserver, kube-scheduler, "
                   "kube-controller-manager) ...")
        kubeconfig = run_showing_steps(start, ["bash", ROOT / "e2e" / "cluster" / "up.sh"]).strip().splitlines()[-1]
        kube = Kube(kubeconfig)
        real_nodes, _ = kube.list("/api/v1/nodes", labelSelector=f"{REAL_NODE_LABEL}=true")
        refs = image_refs() if real_nodes else {}
        say(start, f"control plane ready; kubeconfig {kubeconfig}; real nodes: "
                   f"{', '.join(n['metadata']['name'] for n in real_nodes) or 'none (MUSTER_REAL_NODES=0)'}")

        crd_was = run(["bash", ROOT / "deploy" / "crd" / "patch-crd.sh", "--kubeconfig", kubeconfig,
                       "--status"]).strip()
        run(["bash", ROOT / "deploy" / "crd" / "patch-crd.sh", "--kubeconfig", kubeconfig])
        say(start, f"JobSet CRD: groupSchedulingConfig schema {'added' if crd_was != 'present' else 'present'}")

        certs = work / "certs"
        run(["bash", ROOT / "deploy" / "gen-certs.sh", "--out", certs, "--ip", "127.0.0.1"])
        port = free_port()
        processes.start("webhook", [ROOT / "bin" / "muster-webhook", "--tls-cert-file", certs / "tls.crt",
                                    "--tls-key-file", certs / "tls.key", "--listen", f"127.0.0.1:{port}",
                                    "--barrier-image", refs.get("muster-barrier", "muster-barrier:dev"),
                                    "--shutdown-delay", "0",
                                    # The pin route reads placements of record; the controller
                                    # (the local cluster's admin) alone may say "placed".
                                    "--kubeconfig", kubeconfig, "--controller-user", "admin"])
        context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        deadline = time.monotonic() + 10
        while True:
            processes.check()
            try:
                urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=context, timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise DemoError("the webhook did not become ready in 10 s (see webhook.log)")
                time.sleep(0.1)
        rendered = run(["bash", ROOT / "deploy" / "render-webhooks.sh", "--ca-file", certs / "ca.crt", "--url",
                        f"https://127.0.0.1:{port}"])
        kube.create("/api/v1/namespaces", {"metadata": {"name": namespace, "labels": {"muster.dev/demo": namespace}}})
        for config in (d for d in yaml.safe_load_all(rendered) if d):
            config["metadata"]["name"] += f"-{namespace}"
            for hook in config["webhooks"]:
                hook["namespaceSelector"] = {"matchLabels": {"muster.dev/demo": namespace}}
            plural = "mutatingwebhookconfigurations" if config["kind"].startswith("Mutating") \
                else "validatingwebhookconfigurations"
            path = f"/apis/admissionregistration.k8s.io/v1/{plural}"
            kube.create(path, config)
            registrations.append(f"{path}/{config['metadata']['name']}")
        say(start, f"muster-webhook serving https://127.0.0.1:{port} (TLS verified by the apiserver against "
                   "the demo CA), registered for JobSets")

        events = work / "events.jsonl"
        per_pool = None
        if not options.placement_only:
            shape = work / "shape.yaml"
            # One CPU per pod, six nodes: each pool of two holds a third of the pods.
            per_pool = {"cpu": str(-(-4 * options.pods_per_job // 6)), "memory": "64Gi", "pods": "110"}
            shape.write_text(yaml.safe_dump({"groups": [
                {"name": "pool-a", "count": 2, "allocatable": per_pool},
                {"name": "pool-b", "count": 2, "allocatable": per_pool, "appearAfterSeconds": options.stagger,
                 "readyAfterSeconds": options.stagger},
                {"name": "pool-c", "count": 2, "allocatable": per_pool, "appearAfterSeconds": 2 * options.stagger,
                 "readyAfterSeconds": 2 * options.stagger}]}))
            processes.start("node-agent", ["/usr/bin/python3", ROOT / "e2e" / "standins" / "node_agent.py",
                                           "--kubeconfig", kubeconfig, "--shape", shape, "--work-dir", work / "agent",
                                           "--sync-period", 60, "--events", events, "--delete-nodes"])
        processes.start("jobset-controller", ["/usr/bin/python3", ROOT / "e2e" / "standins" / "jobset_controller.py",
                                              "--kubeconfig", kubeconfig, "--namespace", namespace])
        placement_flags = []
        if not options.gang_only:
            try:
                kube.create(demo_placement.TOPOLOGIES, demo_placement.topology())
                topology_made = True
            except ApiError as error:
                if error.status != 409:
                    raise
            placement_flags = ["--placement-topology", demo_placement.TOPOLOGY]
        processes.start("muster-controller", [ROOT / "bin" / "muster-controller", "--kubeconfig", kubeconfig,
                                              "--namespace", namespace, "--leader-elect", "false",
                                              "--metrics-addr", "127.0.0.1:0"] + placement_flags)
        if per_pool:
            say(start, f"node agent: 2 nodes now, 2 more in {options.stagger:.0f} s, 2 more in "
                       f"{2 * options.stagger:.0f} s (each fits {per_pool['cpu']} pods); JobSet stand-in and "
                       "muster-controller running")

        # The apiserver's webhook configuration cache takes a moment.
        probe = demo_jobset("probe", 1, options.timeout)
        deadline = time.monotonic() + 30
        while True:
            created = kube.request("POST", JOBSETS.format(namespace), probe, query={"dryRun": "All"})
            init = created["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"].get("initContainers")
            if init:
                break
            if time.monotonic() > deadline:
                raise DemoError("the apiserver did not call the webhook within 30 s")
            time.sleep(0.5)

        if not options.placement_only:
            name = "train"
            body = demo_jobset(name, options.pods_per_job, options.timeout, refs.get("busybox"))
            total = 4 * options.pods_per_job + (REAL_PODS if refs else 0)
            print()
            print(yaml.safe_dump({"spec": {"groupSchedulingConfig": body["spec"]["groupSchedulingConfig"]}}).strip())
            kube.create(JOBSETS.format(namespace), body)
            stored = kube.get(JOBSETS.format(namespace) + f"/{name}")
            injected = [j["name"] for j in stored["spec"]["replicatedJobs"]
                        if (j["template"]["spec"]["template"]["spec"].get("initContainers") or [{}])[0].get("name") == BARRIER]
            say(start, f"submitted JobSet {namespace}/{name}: {total} pods; the webhook injected the barrier into "
                       f"{', '.join(injected)}" + (f"; the {REAL_PODS} pods of 'real' run as real containers on "
                                                    f"{real_nodes[0]['metadata']['name']}" if refs else ""))
            print("  legend: . no node yet   w starting   B held at the barrier   R main container running   D done")

            deadline = time.monotonic() + 3 * options.stagger + options.timeout + 60
            last_line = None
            while True:
                processes.check()
                pods, _ = kube.list(f"/api/v1/namespaces/{namespace}/pods",
                                    labelSelector=f"{api.JOBSET_LABEL_NAME}={name}")
                pods.sort(key=lambda p: p["metadata"]["name"])
                letters = "".join(pod_letter(p) for p in pods)
                nodes, _ = kube.list("/api/v1/nodes")
                line = (f"pods {len(pods):2}/{total}  on a node {sum(c != '.' for c in letters):2}  "
                        f"at barrier {letters.count('B'):2}  released {letters.count('R') + letters.count('D'):2}  "
                        f"nodes {len(nodes)}  [{letters}]")
                if line != last_line:
                    say(start, line)
                    last_line = line
                if len(pods) == total and all(c in "RD" for c in letters) and \
                        all(kubelet_times(p) for p in pods if p["metadata"]["name"].startswith(f"{name}-real-")):
                    break
                if "F" in letters:
                    failed = [p for p in pods if pod_letter(p) == "F"]
                    reason = (failed[0]["status"].get("initContainerStatuses") or [{}])[0] \
                        .get("state", {}).get("terminated", {}).get("message", "")
                    raise DemoError(f"pod {failed[0]['metadata']['name']} failed: {reason}")
                if time.monotonic() > deadline:
                    raise DemoError(f"not every pod started in time: [{letters}]")
                time.sleep(1)

            time.sleep(0.5)
            evs = read_events(events)
            mine = [e for e in evs if e["pod"].startswith(namespace + "/") and e["event"] == "started"]
            barrier = {e["pod"]: e["t"] for e in mine if e["container"] == BARRIER}
            trainer = {e["pod"]: e["t"] for e in mine if e["container"] == "trainer"}
            # Real pods: kubelet's own times, whole seconds; a main container's
            # start counts as the end of its second, so a real pod can only look
            # later than it was, never earlier, against the fake ones.
            for pod in pods:
                if pod["metadata"]["name"].startswith(f"{name}-real-"):
                    times = kubelet_times(pod)
                    key = f"{namespace}/{pod['metadata']['name']}"
                    barrier[key], trainer[key] = times[0], times[1] + 0.999
            if len(barrier) != total or len(trainer) != total:
                raise DemoError(f"the nodes saw {len(barrier)} barriers and {len(trainer)} main containers "
                                f"start, not {total}")
            first, last = min(barrier.values()), max(barrier.values())
            released = min(trainer.values())
            print()
            print(f"Summary of {namespace}/{name} (times from the first pod reaching the barrier):")
            print(f"  {'pod':<34} {'at barrier':>10} {'main start':>10} {'held':>7}")
            for pod in sorted(barrier, key=barrier.get):
                print(f"  {pod.split('/', 1)[1]:<34} {barrier[pod] - first:9.2f}s {trainer[pod] - first:9.2f}s "
                      f"{trainer[pod] - barrier[pod]:6.2f}s")
            release_line = next((line for line in (work / "muster-controller.log").read_text().splitlines()
                                 if " event=release " in line), "")
            print(f"  last pod reached the barrier at {last - first:.2f} s; group released (first main container) at "
                  f"{released - first:.2f} s, {released - last:.2f} s after the last start")
            print(f"  the barrier held the earliest pod {trainer[min(barrier, key=barrier.get)] - first:.2f} s; "
                  f"main containers started within {max(trainer.values()) - released:.2f} s of each other")
            if release_line:
                print(f"  controller: {release_line.split('event=', 1)[1]}")
            if min(trainer.values()) < last:
                raise DemoError("a main container started before the last pod reached the barrier")
            print(f"\nOK: no main container started before the last of the {total} pods"
                  + (f"; logs in {work}" if options.keep else ""))
        if not options.gang_only:
            if not options.placement_only:
                processes.stop_one("node-agent")  # its nodes go; the rack nodes come
            demo_placement.Placement(Demo(start, kube, kubeconfig, namespace, processes, work)).run(options.timeout)
        code = 0
    except DemoError as error:
        print(f"\nFAILED: {error}\n(logs in {work})", file=sys.stderr)
    except (ApiError, OSError) as error:
        print(f"\nFAILED: {error}\n(logs in {work})", file=sys.stderr)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        code = 130
    finally:
        processes.stop()
        if kube is not None:
            for path in registrations:
                kube.delete(path)
            if not options.keep:
                kube.delete(f"/api/v1/namespaces/{namespace}")
            if topology_made:
                kube.delete(f"{demo_placement.TOPOLOGIES}/{demo_placement.TOPOLOGY}")
            if crd_was == "absent":
                subprocess.run(["bash", str(ROOT / "deploy" / "crd" / "patch-crd.sh"), "--kubeconfig", kubeconfig,
                                "--remove", "--force"], capture_output=True)
        # The demo's CA and serving keys are of no use once the webhook is gone
        # and its registrations deleted; the logs stay only to explain a
        # failure, or with --keep.
        if not options.keep:
            shutil.rmtree(work if code == 0 else work / "certs", ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
