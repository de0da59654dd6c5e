#!/usr/bin/python3
"""Release latency on real pods: push versus volume only, kubelet's default sync.

On the local cluster's real node (e2e/cluster/node.sh: kubelet v1.20.2,
containerd, muster's barrier image from `make images`), each round creates
JOBSETS JobSets whose barriers take the push (webhook --barrier-port 9443) and
as many whose barriers listen on no port (--barrier-port 0: the release
reaches them only through the ConfigMap volume, which kubelet refreshes on its
default 1-minute sync plus jitter), side by side. Each JobSet has two pods that
start at once and a third that can only be scheduled once the node is
labelled HOLD seconds later. The figure per JobSet is kubelet's own: the last
main container's start minus the last barrier's start, from the pod status
(whole seconds). Also printed: the images' sizes, and the memory and CPU of
the real node's kubelet and containerd.

Usage: /usr/bin/python3 bench/real_release.py [--kubeconfig KC] [--rounds 2]
       [--jobsets 3] [--hold 10]
"""

import argparse
import pathlib
import tempfile
import time
import uuid

from benchlib import (JOBSETS, ROOT, Kube, Proc, clean_up_on_sigterm, cluster_kubeconfig, create_namespace,
                      delete_namespace, percentile, proc_figures, register_webhook, start_standin, stop_all)
from local_images import REAL_NODE_LABEL, images  # noqa: E402 - benchlib puts e2e/standins on the path
import muster_api as api  # noqa: E402

BARRIER = api.BARRIER_CONTAINER


def stamp(value):
    return time.mktime(time.strptime(value, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


def pod_template(node, image, late_label, late_value):
    selector = {REAL_NODE_LABEL: "true", "kubernetes.io/hostname": node}
    if late_label:
        selector[late_label] = late_value
    return {"spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0, "nodeSelector": selector,
                     "tolerations": [{"key": REAL_NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}],
                     "containers": [{"name": "main", "image": image, "imagePullPolicy": "Never",
                                     "command": ["sh", "-c", "sleep 2"]}]}}


def jobset(name, node, image, late_label, late_value):
    def job(job_name, pods, late):
        return {"name": job_name, "replicas": 1, "template": {"spec": {
            "completions": pods, "parallelism": pods, "backoffLimit": 0,
            "template": pod_template(node, image, late_label if late else None, late_value)}}}
    # The annotation form: it needs no CRD patch (spec.groupSchedulingConfig
    # is pruned by an unpatched JobSet CRD).
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "annotations": {api.ANNOTATION_GROUP_TIMEOUT: "600"}},
            "spec": {"replicatedJobs": [job("early", 2, False), job("late", 1, True)]}}


def release_seconds(kube, namespace, name):
    """Last main start minus last barrier start (kubelet's), or None."""
    pods, _ = kube.list(f"/api/v1/namespaces/{namespace}/pods",
                        labelSelector=f"jobset.sigs.k8s.io/jobset-name={name}")
    barriers, mains = [], []
    for pod in pods:
        status = pod.get("status", {})
        done = [s["state"].get("terminated") for s in status.get("initContainerStatuses") or []
                if s["name"] == BARRIER]
        main = (status.get("containerStatuses") or [{}])[0].get("state", {})
        main = main.get("running") or main.get("terminated")
        if main and not done:
            raise SystemExit(f"{namespace}/{pod['metadata']['name']}: a main container started without muster's "
                             "barrier: the webhook did not inject it")
        if not done or not done[0] or not main or not main.get("startedAt"):
            return None
        barriers.append(stamp(done[0]["startedAt"]))
        mains.append(stamp(main["startedAt"]))
    return max(mains) - max(barriers) if len(pods) == 3 else None


def node_processes(node):
    """(kubelet, containerd) pids of the real node, from node.sh's pid files."""
    state = pathlib.Path.home() / ".cache" / "muster" / "cluster" / "nodes" / node
    return [int((state / f"{name}.pid").read_text()) for name in ("kubelet", "containerd")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--jobsets", type=int, default=3, help="JobSets per mode per round")
    parser.add_argument("--hold", type=float, default=10, help="seconds the late pods are held unschedulable")
    parser.add_argument("--timeout", type=float, default=300, help="seconds for one round at most")
    args = parser.parse_args()
    clean_up_on_sigterm()
    kubeconfig = cluster_kubeconfig(args.kubeconfig)
    kube = Kube(kubeconfig)
    built = images()
    for name in ("muster-barrier", "muster-webhook", "muster-controller"):
        image = built[name]
        print(f"image {image.ref}: archive {image.archive.stat().st_size / 1024:.0f} KiB, digest {image.digest}",
              flush=True)
    nodes, _ = kube.list("/api/v1/nodes", labelSelector=f"{REAL_NODE_LABEL}=true")
    if not nodes:
        raise SystemExit("no real node: e2e/cluster/up.sh starts one (MUSTER_REAL_NODES)")
    node = sorted(n["metadata"]["name"] for n in nodes)[0]
    run = uuid.uuid4().hex[:6]
    work = pathlib.Path(tempfile.mkdtemp(prefix="muster-bench-real-"))
    label, late_label = "muster.dev/bench-real", f"bench.muster.dev/late-{run}"
    procs, registrations, namespaces = [], [], {}
    results = {"push": [], "volume": []}
    try:
        for mode, port in (("push", 9443), ("volume", 0)):
            namespace = f"bench-real-{mode}-{run}"
            namespaces[mode] = namespace
            create_namespace(kube, namespace)
            kube.patch(f"/api/v1/namespaces/{namespace}", {"metadata": {"labels": {label: f"{run}-{mode}"}}})
            (work / mode).mkdir()
            webhook, paths = register_webhook(kube, kubeconfig, work / mode, f"{run}-{mode}", label,
                                              barrier_image=built["muster-barrier"].ref, barrier_port=port)
            procs.append(webhook)
            registrations += paths
            procs.append(start_standin("jobset_controller.py", kubeconfig, "--namespace", namespace,
                                       log_path=f"{work}/jobset-{mode}.log"))
            procs.append(Proc([ROOT / "bin" / "muster-controller", "--kubeconfig", kubeconfig, "--namespace",
                               namespace, "--leader-elect", "false", "--metrics-addr", "0"],
                              work / f"controller-{mode}.log", name=f"controller-{mode}"))
        time.sleep(3)  # the registrations reach the apiserver's informer
        for rnd in range(args.rounds):
            late_value = f"r{rnd}"
            names = {mode: [f"r{rnd}-{i}" for i in range(args.jobsets)] for mode in results}
            for mode, namespace in namespaces.items():
                for name in names[mode]:
                    kube.create(JOBSETS.format(namespace), jobset(name, node, built["busybox"].ref, late_label,
                                                                  late_value))
            began = time.monotonic()
            time.sleep(args.hold)
            kube.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {late_label: late_value}}})
            pending = {(mode, name) for mode in results for name in names[mode]}
            while pending and time.monotonic() - began < args.timeout:
                for mode, name in sorted(pending):
                    seconds = release_seconds(kube, namespaces[mode], name)
                    if seconds is not None:
                        results[mode].append(seconds)
                        pending.discard((mode, name))
                time.sleep(2)
            kube.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {late_label: None}}})
            if pending:
                raise SystemExit(f"round {rnd}: not released within {args.timeout:.0f} s: {sorted(pending)}")
            print(f"round {rnd}: push {sorted(results['push'][-args.jobsets:])} s, volume "
                  f"{sorted(results['volume'][-args.jobsets:])} s after the last barrier start", flush=True)
            for mode, namespace in namespaces.items():
                for name in names[mode]:
                    kube.delete(f"{JOBSETS.format(namespace)}/{name}")
        for mode, values in results.items():
            print(f"release after the last pod started, {mode}: p50 {percentile(values, 50):.0f} s, "
                  f"p99 {percentile(values, 99):.0f} s, max {max(values):.0f} s over {len(values)} JobSets "
                  "(kubelet's whole seconds)", flush=True)
        for name, pid in zip(("kubelet", "containerd"), node_processes(node)):
            hwm, cpu = proc_figures(pid)
            print(f"real node {node}: {name} peak RSS {hwm:.0f} MB, CPU {cpu:.1f} s since it started", flush=True)
    finally:
        stop_all(procs)
        for path in registrations:
            kube.delete(path)
        for namespace in namespaces.values():
            delete_namespace(kube, namespace)
        kube.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {late_label: None}}})  # also when stopped


if __name__ == "__main__":
    main()
