#!/usr/bin/python3
"""Admission overhead of muster-webhook on the real kube-apiserver.

Creates a 5,000-pod JobSet (16 replicated-job instances of 312-313 pods,
spec.groupSchedulingConfig set, the CRD patched) ROUNDS times in a namespace
the webhook is registered for and ROUNDS times in one it is not, alternating
so that both see the same machine, and reports the create call's latency
(client-measured, the whole POST) for each, and the difference.

The webhook sees the JobSet's CREATE only (mutating, then validating); it
does not intercept pods, so the 5,000 pod creates that follow cost nothing
extra, and this call is the whole overhead. No JobSet controller runs: the
objects are created and deleted, no pods are made.

Usage: admission_overhead.py [--kubeconfig F] [--rounds N]
"""

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "e2e" / "standins"))
sys.path.insert(0, str(ROOT / "bench"))

from benchlib import clean_up_on_sigterm, free_port  # noqa: E402
from kube import Kube  # noqa: E402

JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{}/jobsets"


def jobset(name):
    """5,000 pods: 16 instances (2 replicated jobs × 8 replicas) of 312 or 313 pods."""
    def replicated_job(job, parallelism):
        return {"name": job, "replicas": 8, "template": {"spec": {
            "parallelism": parallelism, "completions": parallelism, "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "trainer", "image": "pytorch/pytorch:latest", "command": ["bash", "-c", "train.py"],
                 "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}]}}}}}

    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
            "spec": {"groupSchedulingConfig": {"timeoutAfterSeconds": 600},
                     "replicatedJobs": [replicated_job("workers", 312), replicated_job("trainers", 313)]}}


def machine():
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                 "unknown CPU")
    return f"{os.cpu_count()} CPUs, {model}"


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig")
    parser.add_argument("--rounds", type=int, default=60)
    options = parser.parse_args()
    clean_up_on_sigterm()
    kubeconfig = options.kubeconfig or subprocess.run(["bash", str(ROOT / "e2e" / "cluster" / "up.sh")],
                                                      check=True, capture_output=True,
                                                      text=True).stdout.strip().splitlines()[-1]
    kube = Kube(kubeconfig)
    work = pathlib.Path(tempfile.mkdtemp(prefix="muster-admission-bench-"))
    run = uuid.uuid4().hex[:6]
    with_ns, without_ns = f"bench-hooked-{run}", f"bench-plain-{run}"
    crd_was = subprocess.run(["bash", str(ROOT / "deploy" / "crd" / "patch-crd.sh"), "--kubeconfig", kubeconfig,
                              "--status"], check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["bash", str(ROOT / "deploy" / "crd" / "patch-crd.sh"), "--kubeconfig", kubeconfig], check=True,
                   capture_output=True)
    subprocess.run(["bash", str(ROOT / "deploy" / "gen-certs.sh"), "--out", str(work / "certs"), "--ip",
                    "127.0.0.1"], check=True, capture_output=True)
    port = free_port()
    log = open(work / "webhook.log", "w")
    webhook = subprocess.Popen([str(ROOT / "bin" / "muster-webhook"), "--tls-cert-file", str(work / "certs/tls.crt"),
                                "--tls-key-file", str(work / "certs/tls.key"), "--listen", f"127.0.0.1:{port}",
                                "--shutdown-delay", "0", "--quiet"], stdout=log, stderr=subprocess.STDOUT)
    registrations = []
    try:
        for ns, labels in ((with_ns, {"muster.dev/bench": run}), (without_ns, {})):
            kube.create("/api/v1/namespaces", {"metadata": {"name": ns, "labels": labels}})
        rendered = subprocess.run(["bash", str(ROOT / "deploy" / "render-webhooks.sh"), "--ca-file",
                                   str(work / "certs/ca.crt"), "--url", f"https://127.0.0.1:{port}"],
                                  check=True, capture_output=True, text=True).stdout
        for config in (d for d in yaml.safe_load_all(rendered) if d):
            config["metadata"]["name"] += f"-bench-{run}"
            for hook in config["webhooks"]:
                hook["namespaceSelector"] = {"matchLabels": {"muster.dev/bench": run}}
            plural = "mutatingwebhookconfigurations" if config["kind"].startswith("Mutating") \
                else "validatingwebhookconfigurations"
            path = f"/apis/admissionregistration.k8s.io/v1/{plural}"
            kube.create(path, config)
            registrations.append(f"{path}/{config['metadata']['name']}")
        # Wait until the apiserver calls the webhook.
        deadline = time.monotonic() + 30
        while True:
            created = kube.request("POST", JOBSETS.format(with_ns), jobset("probe"), query={"dryRun": "All"})
            if created["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"].get("initContainers"):
                break
            if time.monotonic() > deadline:
                raise SystemExit("the apiserver did not call the webhook within 30 s")
            time.sleep(0.5)
        times = {with_ns: [], without_ns: []}
        for i in range(options.rounds + 5):
            for ns in (with_ns, without_ns) if i % 2 == 0 else (without_ns, with_ns):
                name = f"big-{i}"
                began = time.perf_counter()
                kube.create(JOBSETS.format(ns), jobset(name))
                elapsed = time.perf_counter() - began
                if i >= 5:  # warm-up rounds are not counted
                    times[ns].append(elapsed * 1000)
                kube.delete(JOBSETS.format(ns) + f"/{name}")
        print(f"machine: {machine()}")
        print(f"command: /usr/bin/python3 bench/admission_overhead.py --rounds {options.rounds}")
        print(f"JobSet create (5,000-pod spec, {options.rounds} creates each, alternating), client-side latency:")
        for label, ns in (("with webhook   ", with_ns), ("without webhook", without_ns)):
            values = times[ns]
            print(f"  {label}: p50 {statistics.median(values):6.2f} ms  p90 {percentile(values, 0.9):6.2f} ms  "
                  f"p99 {percentile(values, 0.99):6.2f} ms  mean {statistics.mean(values):6.2f} ms")
        print(f"  overhead p50: {statistics.median(times[with_ns]) - statistics.median(times[without_ns]):+.2f} ms "
              "(mutating + validating call, TLS keep-alive); pods are not intercepted")
        webhook_lines = [line for line in (work / "webhook.log").read_text().splitlines() if "event=admission" in line]
        print(f"  webhook log lines for denials/errors: {len(webhook_lines)} (expected 0)")
    finally:
        for path in registrations:
            kube.delete(path)
        for ns in (with_ns, without_ns):
            kube.delete(f"/api/v1/namespaces/{ns}")
        if crd_was == "absent":
            subprocess.run(["bash", str(ROOT / "deploy" / "crd" / "patch-crd.sh"), "--kubeconfig", kubeconfig,
                            "--remove", "--force"], capture_output=True)
        webhook.terminate()
        webhook.wait(10)
        log.close()


if __name__ == "__main__":
    main()
