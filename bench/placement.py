#!/usr/bin/python3
"""Placement's cost end to end (`make bench-placement`, in `make bench`).

The issue's figure: a 5,000-pod JobSet (50 Jobs of 100 pods) on the
1,000-node scale shape (e2e/shapes/scale.yaml: 10 blocks of 10 racks of 10
nodes, 8 pods a node), time from the JobSet's create to all its pods bound
by the real kube-scheduler, with placement (every Job in one block, Kueue's
podset-slice-required-topology, and a Kueue Topology object) and without,
in the same run, alternating in pairs (with, without, without, with, ...)
after one warm-up round with placement that is not counted (--warmup). Goal:
with / without of the medians <= 1.05 (upstream
JobSet's exclusive placement measured 58 vs 266 pods/s, 4.6x slower).

With placement the path is the whole of muster's: the webhook suspends the
JobSet (and refuses its Jobs until it is placed), muster-controller places it
and writes the record, resumes it, the JobSet stand-in creates the Jobs and
pods, the webhook's /pin route pins each Job whose pods share one domain
whole, and each pod of the others, the scheduler binds. With --level block
(the default) a Job of 100 pods spans two racks of 80, so its pods are pinned
one by one (its pod template gets the rack of most of its pods, 60 or 80,
and the pod route answers those with no patch; the others get their rack
patched in); with
--level rack and Jobs of at most 80 pods, each Job is pinned
whole and its pods make no admission call (each round prints how many);
--exclusive asks with upstream JobSet's exclusive-topology annotation instead
(each Job alone in one domain of --level), the request of upstream JobSet's
own exclusive-placement figure. Without, the JobSet has no annotation
(nothing of muster's runs on its path; the webhook is registered all the same). Prints each
round (with when its first and its last pod were created), the medians
and their ratio, each pair's ratio, and the controller's placement decision
times from its log, and for each round what disturbed it (fake nodes not
Ready, skipped Lease renewals, pods stranded or moved) and etcd's slow
requests and compactions from its log.

The JobSet stand-in creates 64 pods at once (--pod-workers), where the
e2e suite's default is 16. kube-controller-manager's Job controller syncs 5
Jobs at once and creates each one's pods in batches of 1, 2, 4, ... 32, so
it may have well over 100 creates in flight. With 16, on this 2-core
machine, a create took about half a second under load, the create rate was
16 / latency, and the `/pin` call's extra latency became a lower create
rate (ratios 1.12-1.58 in the runs of 2026-11-26); with 64 the creates are limited by CPU, as with the
real controller.
"""

import argparse
import os
import pathlib
import statistics
import tempfile
import threading
import time
import uuid

import yaml

from benchlib import (JOBSETS, ROOT, Kube, Proc, clean_up_on_sigterm, cluster_kubeconfig, cpu_by_process, cpu_used,
                      create_namespace, delete_namespace, request_counts, requests_made, scheduler_counts,
                      scheduler_url, scheduling_done, SpeedGauge, terminating_namespaces, jobset_body, load_shape,
                      logfmt, processes, register_webhook, start_standin, stop_all, wait_namespaces_gone,
                      wait_nodes_ready, wait_pods_gone)
from kube import ApiError, start_watch
import muster_api as api  # noqa: E402 (benchlib puts e2e/standins on the path)

BLOCK, RACK = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"
TOPOLOGIES = "/apis/kueue.x-k8s.io/v1beta2/topologies"
TOPOLOGY_LABEL = "bench.muster.dev/topology"
EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
GOAL = 1.05  # issue 36: at most 5 % over the same JobSet without placement


def settle(limit, quiet=0.25, window=3.0):
    """Waits until the control plane (apiserver, etcd, kube-controller-manager)
    uses less than `quiet` of a core over `window` seconds, at most `limit`
    seconds: the previous round's deletions, events and garbage collection (or
    the nodes' creation, before the first round) finish before the next round
    is timed instead of slowing it. Says how it ended."""
    began = time.monotonic()
    names = ("apiserver", "etcd", "kcm")
    before = cpu_by_process()
    while True:
        time.sleep(window)
        after = cpu_by_process()
        used = sum(after[n] - before[n] for n in names) / window
        waited = time.monotonic() - began
        if used < quiet:
            return f"after {waited:.0f} s of settling, at {used:.2f} cores)"
        if waited >= limit:
            return f"unsettled after {waited:.0f} s: the control plane used {used:.2f} cores)"
        before = after


def disturbances(agent_log, controller_log, offsets, not_ready):
    """One line: what in the round came from outside the path measured, from
    the logs' lines written since `offsets` (the node agent's skipped Lease
    renewals, the controller's stranded and moved pods) and the fake nodes
    seen not Ready. A round with any of them is slower for reasons of the
    machine, not of placement."""
    counts = {"lease renewals skipped": 0, "placement-stranded": 0, "placement-moved": 0}
    for index, path in enumerate((agent_log, controller_log)):
        with open(path, errors="replace") as handle:
            handle.seek(offsets[index])
            for line in handle:
                if " event=lease-renewals-behind " in line:
                    counts["lease renewals skipped"] += int(logfmt(line).get("nodes", 0))
                for event in ("placement-stranded", "placement-moved"):
                    if f" event={event} " in line:
                        counts[event] += 1
    counts["nodes not Ready"] = len(not_ready)
    found = [f"{name} {count}" for name, count in counts.items() if count]
    return "disturbances: " + (", ".join(found) if found else "none")


def etcd_log():
    """The log etcd writes to (its stderr, as e2e/cluster/up.sh starts it), or
    None when no etcd runs on this machine or its stderr is not a file."""
    for entry, cmdline in processes():
        if os.path.basename(cmdline.split(b"\0", 1)[0]) != b"etcd":
            continue
        try:
            path = os.readlink(f"/proc/{entry}/fd/2")
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if os.path.isfile(path):
            return path
    return None


def etcd_slowness(path, offset):
    """One line: etcd's own account of the round, from its log's lines written
    since `offset`: requests it logged as taking too long (over 100 ms) and
    the scheduled compactions with the longest. A round in which etcd's disk
    or a compaction stalled is slower for reasons of the machine; the count
    is not zero under load, so it is a figure to compare, not a verdict.
    Reads etcd 3.4's default (capnslog) lines, as e2e/cluster/up.sh runs it."""
    if not path:
        return "etcd: log not found"
    slow, compactions = 0, []
    with open(path, "rb") as handle:
        handle.seek(offset)  # a byte offset: the log's size when the round began
        for raw in handle:
            line = raw.decode("utf-8", errors="replace")
            if "took too long" in line:
                slow += 1
            elif "finished scheduled compaction" in line and "(took " in line:
                took = line.rsplit("(took ", 1)[1].split(")", 1)[0]
                compactions.append(took)
    longest = f" (longest {max(compactions, key=go_seconds)})" if compactions else ""
    return f"etcd: {slow} requests took over 100 ms; {len(compactions)} compactions{longest}"


def go_seconds(text):
    """Seconds of a Go duration as etcd prints one: 1.9s, 850.1ms, 12µs."""
    for unit, scale in (("ms", 1e-3), ("µs", 1e-6), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0)):
        if text.endswith(unit):
            try:
                return float(text[:-len(unit)]) * scale
            except ValueError:
                return 0.0
    return 0.0


class Pods:
    """The benchmark namespace's pods, by name: bound or not, pinned with
    their Job or not (the label muster.dev/job-pinned), and, for a Job pinned
    pod by pod, in the domain its pod template was given or not (the
    annotation muster.dev/job-selector, all of whose key=value pairs the
    pod's nodeSelector holds: the pod route answered it with no patch), from
    a watch."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seen = {}
        self.wanted, self.first, self.all = 0, None, None

    def expect(self, wanted):
        """From now on, note when the first pod and the `wanted`-th pod are
        seen (created): where a round's time went before the scheduler."""
        with self.lock:
            self.wanted, self.first, self.all = wanted, None, None

    def created(self):
        """(first pod seen, all pods seen) as time.monotonic(), or None."""
        with self.lock:
            return self.first, self.all

    @staticmethod
    def _state(pod):
        labels = pod["metadata"].get("labels") or {}
        share = (pod["metadata"].get("annotations") or {}).get(api.ANNOTATION_JOB_SELECTOR)
        selector = pod["spec"].get("nodeSelector") or {}
        in_share = bool(share) and all(selector.get(key) == value for key, _, value in
                                       (pair.partition("=") for pair in share.split(",")))
        return bool(pod["spec"].get("nodeName")), labels.get(api.LABEL_JOB_PINNED) == "true", in_share

    def on_event(self, kind, pod):
        with self.lock:
            if kind == "DELETED":
                self.seen.pop(pod["metadata"]["name"], None)
            else:
                self.seen[pod["metadata"]["name"]] = self._state(pod)
                if self.wanted and self.first is None:
                    self.first = time.monotonic()
                if self.wanted and self.all is None and len(self.seen) >= self.wanted:
                    self.all = time.monotonic()

    def on_relist(self, items):
        """After a re-list (410 Gone while 5,000 pods are deleted), the list is
        the truth: a pod deleted in between sends no event, and left behind it
        would hold the wait for an empty namespace and count as bound in the
        next round."""
        with self.lock:
            self.seen = {pod["metadata"]["name"]: self._state(pod) for pod in items}

    def bound(self):
        with self.lock:
            return sum(state[0] for state in self.seen.values())

    def pinned(self):
        """Pods pinned with their Job: no LIST of 5,000 pods (one timed out
        after a full-size round and lost the run's summary)."""
        with self.lock:
            return sum(state[1] for state in self.seen.values())

    def in_share(self):
        """Pods of Jobs pinned pod by pod that the pod route let through
        with no patch (their pod template's domain is theirs)."""
        with self.lock:
            return sum(state[2] for state in self.seen.values())

    def empty(self):
        with self.lock:
            return not self.seen


def watch_pods(kube, namespace, stop):
    """A Pods kept up to date by a watch of the namespace until `stop` is set."""
    pods = Pods()
    start_watch(kube, f"/api/v1/namespaces/{namespace}/pods", pods.on_event, stop, on_relist=pods.on_relist)
    return pods


def leftovers(kube):
    """What else the cluster holds, which every round's apiserver and
    scheduler carry too: pods, and namespaces still Terminating (pods of
    nodes deleted with no pod garbage collector running made the
    benchmarks after the e2e suite 40 % slower)."""
    pods = kube.get("/api/v1/pods", limit=1)
    count = len(pods["items"]) + (pods["metadata"].get("remainingItemCount") or 0)
    terminating = terminating_namespaces(kube)
    return f"{count} pods; {len(terminating)} namespaces Terminating" + \
        (f" ({', '.join(terminating[:5])}{', ...' if len(terminating) > 5 else ''})" if terminating else "")


def ask_for_placement(body, level, parallelism, exclusive):
    """Makes the JobSet `body` of a round with placement ask for it: each Job
    in one domain of `level` (block or rack), by Kueue's slice annotations
    on the pod template (a slice of `parallelism` pods, one Job), or, with
    `exclusive`, by upstream JobSet's exclusive-topology annotation on the
    JobSet (each Job alone in its domain)."""
    label = BLOCK if level == "block" else RACK
    if exclusive:
        body["metadata"].setdefault("annotations", {})[EXCLUSIVE] = label
        return
    pod_template = body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod_template.setdefault("metadata", {}).setdefault("annotations", {}).update({
        "kueue.x-k8s.io/podset-slice-required-topology": label,
        "kueue.x-k8s.io/podset-slice-size": str(parallelism)})


def log_sizes(*paths):
    return [pathlib.Path(path).stat().st_size if pathlib.Path(path).exists() else 0 for path in paths]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig")
    parser.add_argument("--shape", default=str(ROOT / "e2e" / "shapes" / "scale.yaml"))
    parser.add_argument("--replicas", type=int, default=50, help="child Jobs")
    parser.add_argument("--parallelism", type=int, default=100, help="pods per child Job")
    parser.add_argument("--level", choices=("block", "rack"), default="block",
                        help="each Job in one of these (podset-slice-required-topology); a Job that fits "
                             "in one rack is pinned whole (no admission call per pod), one of 100 pods "
                             "spans two racks of 80 and its pods are pinned one by one")
    parser.add_argument("--exclusive", action="store_true",
                        help="ask with upstream JobSet's exclusive-topology annotation (each Job alone in one "
                             "domain of --level) instead of Kueue's slice annotations: the shape of upstream "
                             "JobSet's own exclusive-placement figure (58 against 266 pods/s); with --level rack "
                             "it needs --replicas 100 --parallelism 50 or fewer")
    parser.add_argument("--rounds", type=int, default=4,
                        help="rounds of each mode, alternating in pairs (with, without, without, with, ...)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="rounds with placement before the measured ones, not counted: the first round "
                             "after the benchmark's processes start pays for their first connections and "
                             "caches, and would always be a round with placement")
    parser.add_argument("--settle", type=float, default=120,
                        help="seconds at most to wait, before each round, for the control plane to be quiet")
    parser.add_argument("--pod-workers", type=int, default=64,
                        help="pods the JobSet stand-in creates at once (its --pod-workers; "
                             "kube-controller-manager's Job controller may have over 100 in flight)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for one round at most")
    args = parser.parse_args()
    clean_up_on_sigterm()
    kubeconfig = cluster_kubeconfig(args.kubeconfig)
    scheduler = scheduler_url(kubeconfig)
    kube = Kube(kubeconfig)
    pods_wanted = args.replicas * args.parallelism
    work = pathlib.Path(tempfile.mkdtemp(prefix="muster-bench-placement-"))
    run = uuid.uuid4().hex[:6]
    namespace, topology, label = f"bench-place-{run}", f"bench-{run}", "muster.dev/bench"
    agent = start_standin("node_agent.py", kubeconfig, "--shape", args.shape, "--work-dir", f"{work}/agent",
                          "--delete-nodes", "--lease-seconds", "20", log_path=f"{work}/agent.log")
    procs, registrations, stop = [], [], threading.Event()
    try:
        nodes, nodes_seconds = wait_nodes_ready(kube, len(load_shape(args.shape)), args.timeout)
        print(f"nodes: {len(nodes)} Ready in {nodes_seconds:.1f} s", flush=True)
        # An earlier benchmark's namespace still being deleted (its Events,
        # Jobs, pods) would load the first round: 1.767 where the run just
        # before, whose namespace it was, gave 1.023.
        waited, _ = wait_namespaces_gone(kube, args.settle)
        print(f"cluster before the rounds: {leftovers(kube)}" +
              (f" (after {waited:.0f} s waiting for namespaces being deleted)" if waited >= 1 else ""), flush=True)
        # A run killed before its clean-up leaves its Topology, and a second
        # Topology changes the default of every later placement on this
        # cluster (the controller takes the only one). One run at a time owns
        # the fake nodes, so any Topology this benchmark labelled is stale.
        for stale in kube.list(TOPOLOGIES, labelSelector=TOPOLOGY_LABEL)[0]:
            name = stale["metadata"]["name"]
            kube.delete(f"{TOPOLOGIES}/{name}")
            print(f"deleted Topology {name}, left by an earlier run of this benchmark", flush=True)
        kube.create(TOPOLOGIES, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
                                 "metadata": {"name": topology, "labels": {TOPOLOGY_LABEL: "placement"}},
                                 "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}]}})
        create_namespace(kube, namespace)
        kube.patch(f"/api/v1/namespaces/{namespace}", {"metadata": {"labels": {label: run}}})
        webhook, registrations = register_webhook(kube, kubeconfig, work, run, label)
        procs.append(webhook)
        procs.append(start_standin("jobset_controller.py", kubeconfig, "--namespace", namespace,
                                   "--pod-workers", str(args.pod_workers), log_path=f"{work}/jobset.log"))
        controller = Proc([ROOT / "bin" / "muster-controller", "--kubeconfig", kubeconfig, "--namespace", namespace,
                           "--leader-elect", "false", "--metrics-addr", "0", "--placement-topology", topology],
                          work / "controller.log", name="muster-controller")
        procs.append(controller)
        time.sleep(3)  # the registration reaches the apiserver's informer
        pods, lock = watch_pods(kube, namespace, stop), threading.Lock()
        not_ready = set()  # fake nodes seen not Ready since the round began

        def on_node(kind, node):
            conditions = (node.get("status") or {}).get("conditions") or []
            if kind != "DELETED" and any(c.get("type") == "Ready" and c.get("status") != "True" for c in conditions):
                with lock:
                    not_ready.add(node["metadata"]["name"])
        start_watch(kube, "/api/v1/nodes", on_node, stop)
        template = {"metadata": {"annotations": {"e2e.muster.dev/run-seconds": "3600"}},
                    "spec": {"restartPolicy": "Never", "containers": [
                        {"name": "worker", "image": "busybox", "command": ["sleep", "3600"]}]}}
        results, etcd_path = {"with": [], "without": []}, etcd_log()
        speeds = {"with": [], "without": []}
        gauge = SpeedGauge().start()
        modes = ["with"] * args.warmup + [("with", "without")[i % 2] if (i // 2) % 2 == 0 else
                                          ("without", "with")[i % 2] for i in range(2 * args.rounds)]
        for i, mode in enumerate(modes):
            warmup = i < args.warmup
            settled = settle(args.settle)
            body = jobset_body(f"js-{i}", args.replicas, args.parallelism, yaml.safe_load(yaml.safe_dump(template)))
            if mode == "with":
                ask_for_placement(body, args.level, args.parallelism, args.exclusive)
            cpu_before, requests_before = cpu_by_process(), request_counts(kube)
            scheduler_before = scheduler_counts(scheduler)
            offsets = log_sizes(work / "agent.log", work / "controller.log")
            etcd_offset = log_sizes(etcd_path)[0] if etcd_path else 0
            with lock:
                not_ready.clear()
            pods.expect(pods_wanted)
            began = time.monotonic()
            kube.create(JOBSETS.format(namespace), body)
            while True:
                bound = pods.bound()
                if bound >= pods_wanted:
                    break
                if time.monotonic() - began > args.timeout:
                    raise SystemExit(f"round {i} ({mode}): {bound} of {pods_wanted} pods bound after "
                                     f"{args.timeout:.0f} s")
                time.sleep(0.2)
            seconds = time.monotonic() - began
            speed, samples = gauge.between(began, began + seconds)
            if not warmup:
                results[mode].append(seconds)
                speeds[mode].append(speed)
            name = "warm-up" if warmup else f"round {i - args.warmup + 1}"
            print(f"  {name:>8} {mode:>7} placement: all {pods_wanted} pods bound {seconds:6.1f} s after the "
                  f"create ({pods_wanted / seconds:.0f} pods/s; began {settled}", flush=True)
            first, every = pods.created()
            print(f"    first pod created {first - began:.1f} s after the create, the last "
                  + (f"{every - began:.1f} s after it" if every else "not seen by the watch (re-listed)")
                  if first else "    pods created: not seen by the watch", flush=True)
            print(f"    {cpu_used(cpu_before, cpu_by_process())}", flush=True)
            print(f"    speed gauge: the fixed work took {speed:.1f} CPU ms (median of {samples}; more is a slower "
                  f"machine)", flush=True)
            print(f"    {requests_made(requests_before, request_counts(kube))}", flush=True)
            print(f"    {scheduling_done(scheduler_before, scheduler_counts(scheduler))}", flush=True)
            with lock:
                seen_not_ready = set(not_ready)
            print(f"    {disturbances(work / 'agent.log', work / 'controller.log', offsets, seen_not_ready)}",
                  flush=True)
            print(f"    {etcd_slowness(etcd_path, etcd_offset)}", flush=True)
            if mode == "with":
                print(f"    pods pinned with their Job (no admission call of their own): {pods.pinned()} of "
                      f"{pods_wanted}; in the domain their Job's template was given (admitted with no "
                      f"patch): {pods.in_share()}", flush=True)
            kube.delete(f"{JOBSETS.format(namespace)}/js-{i}", body={"propagationPolicy": "Background"})
            deadline = time.monotonic() + args.timeout
            while time.monotonic() < deadline:
                if pods.empty():
                    break
                time.sleep(1)
        decisions = [float(logfmt(line)["ms"]) for line in (work / "controller.log").read_text().splitlines()
                     if " event=placed " in line]
        with_s, without_s = statistics.median(results["with"]), statistics.median(results["without"])
        print(f"command: /usr/bin/python3 bench/placement.py --warmup {args.warmup} --rounds {args.rounds} "
              f"--replicas {args.replicas} --parallelism {args.parallelism} --level {args.level}"
              f"{' --exclusive' if args.exclusive else ''}")
        print(f"{pods_wanted}-pod JobSet ({args.replicas} Jobs x {args.parallelism}) on {len(nodes)} nodes, "
              f"create to all pods bound, median of {args.rounds} each:")
        print(f"  with placement (each Job {'alone ' if args.exclusive else ''}in one {args.level:5}): "
              f"{with_s:6.1f} s ({pods_wanted / with_s:.0f} pods/s)")
        print(f"  without:                                {without_s:6.1f} s ({pods_wanted / without_s:.0f} pods/s)")
        print(f"  ratio with / without: {with_s / without_s:.3f} (goal <= {GOAL:.2f}: "
              f"{'goal met' if with_s / without_s <= GOAL else 'goal missed'})")
        pairs = [w / wo for w, wo in zip(results["with"], results["without"])]
        print(f"  ratio of each pair of rounds (with / without, in the order run): "
              f"{', '.join(f'{r:.3f}' for r in pairs)}")
        print(f"  speed gauge, CPU ms of the fixed work in each pair (with / without): "
              f"{', '.join(f'{w:.1f}/{wo:.1f}' for w, wo in zip(speeds['with'], speeds['without']))}")
        if decisions:
            print(f"  controller, pass start to record written and JobSet resumed: "
                  f"{', '.join(f'{d:.0f}' for d in decisions)} ms")
        print(f"logs: {work}")
    finally:
        stop.set()
        for path in registrations:
            try:
                kube.delete(path)
            except ApiError:
                pass
        stop_all(procs, timeout=60)
        delete_namespace(kube, namespace)
        try:
            # First what would change later tests (a second Topology changes
            # the cluster's default), then the slow wait for the pods.
            kube.delete(f"{TOPOLOGIES}/{topology}")
        except (KeyboardInterrupt, Exception) as error:  # noqa: BLE001 - go on stopping the agent
            if not (isinstance(error, ApiError) and error.status == 404):  # none when stopped before it was made
                print(f"cleanup: {error!r}")
        try:
            if wait_pods_gone(kube, namespace, 300):
                # The rest of the namespace, so that the next benchmark does
                # not run on top of its deletion.
                waited, left = wait_namespaces_gone(kube, 300, [namespace])
                if left:
                    print(f"cleanup: namespace {namespace} still there after {waited:.0f} s", flush=True)
        except (KeyboardInterrupt, Exception) as error:  # noqa: BLE001 - go on stopping the agent
            print(f"cleanup: {error!r}")
        stop_all([agent], timeout=120)


if __name__ == "__main__":
    main()
