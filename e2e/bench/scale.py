#!/usr/bin/python3
"""Scale check of the stand-ins on the real control plane (`make bench-e2e`).

1,000 fake nodes (e2e/shapes/scale.yaml) played by one node agent, and a
5,000-pod JobSet played by the JobSet controller stand-in, scheduled by the
real kube-scheduler. Prints the time from JobSet creation to all pods
created, bound and Running, and the peak memory (VmHWM) and CPU time of the
two stand-ins, so later issues can check that the stand-ins are not what
limits a 5,000-pod gang start. Cleans up after itself.
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "e2e" / "standins"))

from kube import ApiError, Kube, start_watch  # noqa: E402
from node_agent import load_shape  # noqa: E402


def proc_figures(pid):
    """(VmHWM in MB, CPU seconds) of a running process."""
    hwm = 0
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return hwm, ticks / os.sysconf("SC_CLK_TCK")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig")
    parser.add_argument("--shape", default=str(ROOT / "e2e" / "shapes" / "scale.yaml"))
    parser.add_argument("--replicas", type=int, default=50, help="child Jobs")
    parser.add_argument("--parallelism", type=int, default=100, help="pods per child Job")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    kubeconfig = args.kubeconfig or subprocess.run(
        ["bash", str(ROOT / "e2e" / "cluster" / "up.sh")], check=True, stdout=subprocess.PIPE,
        text=True).stdout.strip().splitlines()[-1]
    kube = Kube(kubeconfig)
    pods_wanted = args.replicas * args.parallelism
    work = tempfile.mkdtemp(prefix="muster-bench-e2e-")
    namespace = "bench-" + uuid.uuid4().hex[:6]
    python = "/usr/bin/python3"
    standins = ROOT / "e2e" / "standins"
    agent = subprocess.Popen([python, str(standins / "node_agent.py"), "--kubeconfig", kubeconfig,
                              "--shape", args.shape, "--work-dir", f"{work}/agent", "--delete-nodes",
                              "--lease-seconds", "20"],
                             stdout=open(f"{work}/agent.log", "w"), stderr=subprocess.STDOUT)
    controller = subprocess.Popen([python, str(standins / "jobset_controller.py"), "--kubeconfig", kubeconfig,
                                   "--namespace", namespace],
                                  stdout=open(f"{work}/controller.log", "w"), stderr=subprocess.STDOUT)
    stop = threading.Event()
    try:
        nodes_expected = len(load_shape(args.shape))
        begun = time.monotonic()
        while True:
            nodes, _ = kube.list("/api/v1/nodes", labelSelector="type=muster-fake-node")
            ready = sum(1 for n in nodes if any(c["type"] == "Ready" and c["status"] == "True"
                                                for c in n["status"].get("conditions", []))
                        and not any(t["key"] == "node.kubernetes.io/not-ready"
                                    for t in n["spec"].get("taints") or []))
            if ready == nodes_expected:
                break
            if time.monotonic() - begun > args.timeout:
                raise SystemExit(f"nodes not Ready in time: {ready}/{len(nodes)}")
            time.sleep(1)
        nodes_seconds = time.monotonic() - begun
        print(f"nodes: {len(nodes)} Ready in {nodes_seconds:.1f} s", flush=True)

        kube.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
        seen = {}  # pod name -> (bound, running)
        lock = threading.Lock()
        marks = {}

        def on_pod(kind, pod):
            name = pod["metadata"]["name"]
            with lock:
                if kind == "DELETED":
                    seen.pop(name, None)
                    return
                seen[name] = (bool(pod["spec"].get("nodeName")), pod["status"].get("phase") == "Running")
                now = time.monotonic()
                if "created" not in marks and len(seen) >= pods_wanted:
                    marks["created"] = now
                if "bound" not in marks and sum(b for b, _ in seen.values()) >= pods_wanted:
                    marks["bound"] = now
                if "running" not in marks and sum(r for _, r in seen.values()) >= pods_wanted:
                    marks["running"] = now

        def wait_service_account():
            while True:
                try:
                    if kube.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default").get("secrets"):
                        return
                except ApiError:
                    pass
                time.sleep(0.2)

        wait_service_account()
        start_watch(kube, f"/api/v1/namespaces/{namespace}/pods", on_pod, stop)
        jobset = {
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "scale", "namespace": namespace},
            "spec": {"replicatedJobs": [{"name": "workers", "replicas": args.replicas, "template": {"spec": {
                "parallelism": args.parallelism, "completions": args.parallelism, "backoffLimit": 0,
                "template": {"metadata": {"annotations": {"e2e.muster.dev/run-seconds": "3600"}},
                             "spec": {"restartPolicy": "Never", "containers": [
                                 {"name": "worker", "image": "busybox", "command": ["sleep", "3600"]}]}}}}}]},
        }
        started = time.monotonic()
        kube.create(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets", jobset)
        last_report = started
        while "running" not in marks:
            with lock:
                counts = (len(seen), sum(b for b, _ in seen.values()), sum(r for _, r in seen.values()))
            if time.monotonic() - started > args.timeout:
                raise SystemExit(f"not all pods Running in time: created/bound/running = {counts}")
            if time.monotonic() - last_report >= 10:
                last_report = time.monotonic()
                print(f"  t={last_report - started:5.0f} s  created {counts[0]}  bound {counts[1]}  "
                      f"running {counts[2]}", flush=True)
            time.sleep(0.5)
        agent_mb, agent_cpu = proc_figures(agent.pid)
        controller_mb, controller_cpu = proc_figures(controller.pid)
        print(f"pods: {pods_wanted} in {args.replicas} Jobs on {len(nodes)} nodes")
        for what in ("created", "bound", "running"):
            print(f"  all {what:<8} {marks[what] - started:7.1f} s after the JobSet was created")
        print(f"  throughput: {pods_wanted / (marks['running'] - started):.0f} pods/s to Running")
        print(f"node agent:       peak RSS {agent_mb:6.0f} MB, CPU {agent_cpu:6.1f} s "
              f"({agent_mb * 1024 / pods_wanted:.1f} KB per pod)")
        print(f"JobSet stand-in:  peak RSS {controller_mb:6.0f} MB, CPU {controller_cpu:6.1f} s")
        print(f"logs: {work}")
    finally:
        stop.set()
        try:
            kube.delete(f"/api/v1/namespaces/{namespace}")
        except Exception as error:  # noqa: BLE001
            print(f"cleanup: {error}")
        for proc in (controller, agent):
            proc.terminate()
        for proc in (controller, agent):
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
