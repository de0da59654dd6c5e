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
import tempfile
import threading
import time
import uuid

from benchlib import (JOBSETS, ROOT, Kube, cluster_kubeconfig, create_namespace, delete_namespace, jobset_body,
                      load_shape, proc_figures, start_standin, stop_all, wait_nodes_ready, wait_pods_gone)
from kube import start_watch


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig")
    parser.add_argument("--shape", default=str(ROOT / "e2e" / "shapes" / "scale.yaml"))
    parser.add_argument("--replicas", type=int, default=50, help="child Jobs")
    parser.add_argument("--parallelism", type=int, default=100, help="pods per child Job")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    kubeconfig = cluster_kubeconfig(args.kubeconfig)
    kube = Kube(kubeconfig)
    pods_wanted = args.replicas * args.parallelism
    work = tempfile.mkdtemp(prefix="muster-bench-e2e-")
    namespace = "bench-" + uuid.uuid4().hex[:6]
    agent = start_standin("node_agent.py", kubeconfig, "--shape", args.shape, "--work-dir", f"{work}/agent",
                          "--delete-nodes", "--lease-seconds", "20", log_path=f"{work}/agent.log")
    controller = start_standin("jobset_controller.py", kubeconfig, "--namespace", namespace,
                               log_path=f"{work}/controller.log")
    stop = threading.Event()
    namespace_created = False
    try:
        nodes, nodes_seconds = wait_nodes_ready(kube, len(load_shape(args.shape)), args.timeout)
        print(f"nodes: {len(nodes)} Ready in {nodes_seconds:.1f} s", flush=True)

        namespace_created = True
        create_namespace(kube, namespace)
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

        start_watch(kube, f"/api/v1/namespaces/{namespace}/pods", on_pod, stop)
        jobset = jobset_body("scale", args.replicas, args.parallelism, {
            "metadata": {"annotations": {"e2e.muster.dev/run-seconds": "3600"}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "worker", "image": "busybox", "command": ["sleep", "3600"]}]}})
        started = time.monotonic()
        kube.create(JOBSETS.format(namespace), jobset)
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
        stop_all([controller], timeout=120)
        if namespace_created:
            delete_namespace(kube, namespace)
            try:
                wait_pods_gone(kube, namespace, 300)  # the agent confirms the deletions
            except (KeyboardInterrupt, Exception) as error:  # noqa: BLE001 - go on stopping the agent
                print(f"cleanup: {error!r}")
        stop_all([agent], timeout=120)


if __name__ == "__main__":
    main()
