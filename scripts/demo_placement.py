"""The demo's placement half (scripts/demo.py runs it after the gang start).

On fake nodes laid out as in KEP-2724 (two blocks of two racks, rack names
repeated under each block, two nodes of four CPUs a rack) and a Kueue
Topology naming the levels, it shows:

1. the tree with its free room (`kubectl muster tree`);
2. a JobSet with a gang start whose replicated jobs each ask for one rack
   (Kueue's podset-required-topology), a progress line per replicated job
   with the rack its pods landed in;
3. a second JobSet that does not fit while the first runs: its waiting
   reason as the user sees it (the Event, and `kubectl muster status`),
   then placed once the first finishes;
4. the tree after, and a check that every replicated job's pods share one
   rack and no main container started before the last pod of its JobSet
   reached the barrier.

It raises DemoError (scripts/demo.py) when any of that does not hold.
"""

import json
import subprocess
import time

import yaml

import muster_api as api

BLOCK, RACK = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"
TOPOLOGY = "muster-demo"
TOPOLOGIES = "/apis/kueue.x-k8s.io/v1beta2/topologies"
POOL = "muster-demo-racks"
NODES, CPUS, PODS = 8, 4, 8  # 4 racks of 2 nodes of 4 CPUs; 8 one-CPU pods fill a rack
RUN_SECONDS = 8


def shape():
    return {"groups": [{"name": "rack-node", "count": NODES,
                        "allocatable": {"cpu": str(CPUS), "memory": "64Gi", "pods": "110"},
                        "labels": {"pool": POOL},
                        "topology": {"blockLabel": BLOCK, "rackLabel": RACK, "blocks": 2, "racksPerBlock": 2}}]}


def topology():
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": TOPOLOGY},
            "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}]}}


def placed_jobset(name, jobs, timeout):
    """One Indexed Job of PODS pods per replicated job, each asking for one rack."""
    def replicated_job(job):
        return {"name": job, "replicas": 1, "template": {"spec": {
            "parallelism": PODS, "completions": PODS, "backoffLimit": 0,
            "template": {"metadata": {"annotations": {api.KUEUE_ANNOTATION_REQUIRED: RACK,
                                                      "e2e.muster.dev/run-seconds": str(RUN_SECONDS)}},
                         "spec": {"restartPolicy": "Never", "nodeSelector": {"pool": POOL},
                                  "containers": [{"name": "trainer", "image": "pytorch/pytorch:latest",
                                                  "command": ["bash", "-c", "train.py"],
                                                  "resources": {"requests": {"cpu": "1"}}}]}}}}}

    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
            "spec": {"groupSchedulingConfig": {"timeoutAfterSeconds": timeout},
                     "replicatedJobs": [replicated_job(j) for j in jobs]}}


class Placement:
    """The placement half, on the demo's cluster, namespace and processes."""

    def __init__(self, demo):
        self.demo = demo  # scripts/demo.py's Demo: say, kube, kubeconfig, namespace, processes, work, root
        self.kube = demo.kube
        self.jobsets = demo.jobsets_path

    def say(self, text):
        self.demo.say(text)

    def plugin(self, *args):
        """`kubectl muster ARGS` as a user runs it (bin/kubectl-muster), its output."""
        result = subprocess.run([str(self.demo.root / "bin" / "kubectl-muster"), *args, "--kubeconfig",
                                 self.demo.kubeconfig], capture_output=True, text=True)
        if result.returncode not in (0, 3):
            raise self.demo.error(f"kubectl muster {' '.join(args)} failed: {result.stderr.strip()[-600:]}")
        return result.stdout

    def show(self, title, text):
        self.say(title)
        for line in text.rstrip().splitlines():
            print(f"    {line}")

    def racks(self):
        """node name: "block/rack" of the demo's rack nodes."""
        nodes, _ = self.kube.list("/api/v1/nodes", labelSelector=f"pool={POOL}")
        return {n["metadata"]["name"]: f"{n['metadata']['labels'][BLOCK]}/{n['metadata']['labels'][RACK]}"
                for n in nodes}

    def pods(self, name):
        pods, _ = self.kube.list(f"/api/v1/namespaces/{self.demo.namespace}/pods",
                                 labelSelector=f"{api.JOBSET_LABEL_NAME}={name}")
        return sorted(pods, key=lambda p: p["metadata"]["name"])

    def state(self, name):
        stored = self.kube.get(f"{self.jobsets}/{name}")
        return stored["metadata"].get("annotations", {}).get(api.ANNOTATION_PLACEMENT)

    def events(self, name, reason):
        events, _ = self.kube.list(f"/api/v1/namespaces/{self.demo.namespace}/events",
                                   fieldSelector=f"involvedObject.name={name},reason={reason}")
        return [e["message"] for e in events]

    def progress(self, name, jobs, racks):
        """One line: per replicated job, the rack(s) of its pods and a letter per pod."""
        by_job = {job: [] for job in jobs}
        for pod in self.pods(name):
            by_job.setdefault(pod["metadata"]["labels"].get(api.JOBSET_LABEL_REPLICATED_JOB, "?"), []).append(pod)
        parts = []
        for job, pods in by_job.items():
            where = sorted({racks.get(p["spec"].get("nodeName"), "?") for p in pods if p["spec"].get("nodeName")})
            letters = "".join(self.demo.pod_letter(p) for p in pods)
            parts.append(f"{job} {','.join(where) or '-':<15} [{letters:<{PODS}}]")
        return f"{name}: " + "  ".join(parts)

    def until(self, what, done, deadline_s, lines):
        """Prints the progress lines (each when it changes) until done()."""
        deadline = time.monotonic() + deadline_s
        last = None
        while True:
            self.demo.processes.check()
            text = "   ".join(line() for line in lines)
            if text != last:
                self.say(text)
                last = text
            if done():
                # done() looked again: show the state it saw, not the one a moment before.
                text = "   ".join(line() for line in lines)
                if text != last:
                    self.say(text)
                return
            if time.monotonic() > deadline:
                raise self.demo.error(f"{what}: not within {deadline_s:.0f} s")
            time.sleep(1)

    def all_started(self, name, count):
        pods = self.pods(name)
        return len(pods) == count and all(self.demo.pod_letter(p) in "RD" for p in pods)

    def check(self, name, jobs, events):
        """Every replicated job in one rack; no main container before the last barrier."""
        racks = self.racks()
        pods = self.pods(name)
        for job in jobs:
            mine = [p for p in pods if p["metadata"]["labels"].get(api.JOBSET_LABEL_REPLICATED_JOB) == job]
            where = {racks.get(p["spec"].get("nodeName")) for p in mine}
            if len(mine) != PODS or len(where) != 1 or None in where:
                raise self.demo.error(f"{name}/{job}: {len(mine)} pods in {sorted(map(str, where))}, "
                                      f"not {PODS} pods in one rack")
        keys = {f"{self.demo.namespace}/{p['metadata']['name']}" for p in pods}
        started = [e for e in events if e["event"] == "started" and e["pod"] in keys]
        barrier = [e["t"] for e in started if e["container"] == api.BARRIER_CONTAINER]
        trainer = [e["t"] for e in started if e["container"] == "trainer"]
        if len(barrier) != len(pods) or len(trainer) != len(pods):
            raise self.demo.error(f"{name}: the nodes saw {len(barrier)} barriers and {len(trainer)} main "
                                  f"containers start, not {len(pods)}")
        if min(trainer) < max(barrier):
            raise self.demo.error(f"{name}: a main container started before its last pod reached the barrier")
        return {job: next(iter({racks[p["spec"]["nodeName"]] for p in pods
                                if p["metadata"]["labels"].get(api.JOBSET_LABEL_REPLICATED_JOB) == job}))
                for job in jobs}, max(barrier), min(trainer)

    def run(self, timeout):
        demo = self.demo
        print()
        demo.say("placement: fake nodes in 2 blocks of 2 racks (KEP-2724's layout, rack names repeated "
                 "under each block), 2 nodes of 4 CPUs a rack, and a Kueue Topology naming the levels")
        events = demo.work / "placement-events.jsonl"
        shape_file = demo.work / "placement-shape.yaml"
        shape_file.write_text(yaml.safe_dump(shape()))
        demo.processes.start("placement-node-agent", [
            "/usr/bin/python3", demo.root / "e2e" / "standins" / "node_agent.py", "--kubeconfig",
            demo.kubeconfig, "--shape", shape_file, "--work-dir", demo.work / "placement-agent",
            "--sync-period", 5, "--events", events, "--delete-nodes"])
        deadline = time.monotonic() + 60
        while len(self.racks()) < NODES or not all(
                c["status"] == "True" for n in self.kube.list("/api/v1/nodes", labelSelector=f"pool={POOL}")[0]
                for c in n["status"]["conditions"] if c["type"] == "Ready"):
            demo.processes.check()
            if time.monotonic() > deadline:
                raise demo.error("the rack nodes were not Ready within 60 s")
            time.sleep(0.5)
        self.show(f"the tree, free room first (kubectl muster tree --topology {TOPOLOGY}):",
                  self.plugin("tree", "--topology", TOPOLOGY))

        first_jobs, second_jobs = ("workers", "ps"), ("workers", "ps", "eval")
        first = placed_jobset("first", first_jobs, timeout)
        print()
        print("  what the user writes on each pod template (Kueue's words), beside the gang start:")
        print("    " + yaml.safe_dump({"metadata": {"annotations": {api.KUEUE_ANNOTATION_REQUIRED: RACK}}})
              .strip().replace("\n", "\n    "))
        self.kube.create(self.jobsets, first)
        demo.say(f"submitted JobSet first: {len(first_jobs)} replicated jobs of {PODS} pods, each in one rack")
        self.until("first placed and started", lambda: self.all_started("first", PODS * len(first_jobs)), 90,
                   [lambda: self.progress("first", first_jobs, self.racks())])
        placed = self.events("first", "Placed")
        if placed:
            demo.say(f"Event Placed on first: {placed[-1]}")

        second = placed_jobset("second", second_jobs, timeout)
        self.kube.create(self.jobsets, second)
        demo.say(f"submitted JobSet second: {len(second_jobs)} racks of {PODS} pods; 2 racks are free while "
                 "first runs")
        deadline = time.monotonic() + 30
        while not self.events("second", "PlacementWaiting"):
            demo.processes.check()
            if time.monotonic() > deadline:
                raise demo.error("second: no PlacementWaiting Event within 30 s")
            time.sleep(0.5)
        demo.say(f"Event PlacementWaiting on second (kubectl describe jobset second): "
                 f"{self.events('second', 'PlacementWaiting')[-1]}")
        status = json.loads(self.plugin("status", "-n", demo.namespace, "second", "-o", "json"))
        waiting = status.get("placement", {})
        demo.say(f"kubectl muster status second: placement {waiting.get('state')}: "
                 f"{waiting.get('reason') or waiting.get('waiting_reason') or '-'}")
        if self.state("second") != api.PLACEMENT_WAITING:
            raise demo.error(f"second is {self.state('second')}, not waiting, while first holds its racks")
        self.until("second placed once first finished and started",
                   lambda: self.all_started("second", PODS * len(second_jobs)), 120,
                   [lambda: self.progress("first", first_jobs, self.racks()),
                    lambda: self.progress("second", second_jobs, self.racks())])
        placed = self.events("second", "Placed")
        if placed:
            demo.say(f"Event Placed on second: {placed[-1]}")
        self.show("the tree after (second holds its racks):", self.plugin("tree", "--topology", TOPOLOGY))

        time.sleep(0.5)
        seen = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
        print()
        print("Summary of placement (rack of each replicated job; times from the JobSet's last barrier start):")
        for name, jobs in (("first", first_jobs), ("second", second_jobs)):
            domains, last, released = self.check(name, jobs, seen)
            where = ", ".join(f"{job} in {rack}" for job, rack in domains.items())
            print(f"  {name}: {where}; released {released - last:.2f} s after its last pod reached the barrier")
        print("OK: every replicated job's pods share one rack, second waited for room and was placed when "
              "first finished, and no main container started before the last pod of its JobSet")
