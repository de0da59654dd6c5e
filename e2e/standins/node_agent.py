#!/usr/bin/python3
"""Node agent: plays kubelet for many fake nodes, like KWOK, for the e2e suite.

It talks to the apiserver only through its API. What it does, as kubelet does:
- creates the Nodes of a cluster-shape file (count, allocatable, labels,
  block/rack topology with rack names repeated across blocks), optionally late
  (appearAfterSeconds) or Ready late (readyAfterSeconds): a slow node pool;
- keeps them Ready, clears the `node.kubernetes.io/not-ready` taint, renews
  their Leases in kube-node-lease;
- for every pod bound to one of its nodes: gives it an IP (a distinct loopback
  address 127.x.y.z, so a barrier can listen on it; hostNetwork pods get their
  node's address), projects its ConfigMap volumes into a directory exactly as
  kubelet's AtomicWriter does, refreshing them only when it syncs the pod (on a
  change of the pod's spec or metadata, and otherwise every sync period with
  jitter: default 60 s + up to 50%), runs its init containers in order, then
  its main containers, and reports initContainerStatuses, containerStatuses,
  phase, conditions, podIP, startTime and exit codes through the status
  subresource;
- muster's barrier init container (named group-scheduling-init, or an image
  naming muster-barrier) really runs: bin/muster-barrier as a child process,
  with the container's command/args, its env (downward API, Secret and
  ConfigMap references resolved, $(VAR) expanded), and container paths of its
  volume mounts and termination log mapped to the agent's directories;
- other containers are simulated: they "run" for a duration taken from the pod
  (annotation e2e.muster.dev/run-seconds, else a `sleep N` in the command,
  else --default-run-seconds) and exit 0, or with the code in annotation
  e2e.muster.dev/exit-code (only for the completion index in
  e2e.muster.dev/fail-completion-index when that is set, and only in the
  JobSet restart attempt in e2e.muster.dev/fail-restart-attempt when that
  is set);
- on pod deletion it stops the containers and deletes the pod with grace 0.

Every container start and exit is also appended as one JSON line to --events
(wall-clock seconds with microseconds), because pod status times have only
second precision and the tests compare starts to within a second. A barrier's
exit also carries `exit_t`, the moment its process ended (seen on a pidfd by a
thread of its own), which can precede `t` (when the agent's loop reaped it) by
a lot when thousands of barriers exit at once.
"""

import argparse
import concurrent.futures
import datetime
import fcntl
import hashlib
import heapq
import json
import math
import os
import queue
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atomic_writer  # noqa: E402
from kube import ApiError, Kube, now_rfc3339, start_watch  # noqa: E402

import yaml  # noqa: E402
import muster_api as api  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BARRIER_NAME = api.BARRIER_CONTAINER
ANNOTATION_RUN = "e2e.muster.dev/run-seconds"
ANNOTATION_EXIT = "e2e.muster.dev/exit-code"
ANNOTATION_FAIL_INDEX = "e2e.muster.dev/fail-completion-index"
ANNOTATION_FAIL_ATTEMPT = "e2e.muster.dev/fail-restart-attempt"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
DEFAULT_TERMINATION_PATH = "/dev/termination-log"
# Lease renewals are spread over --lease-seconds in this many slices: node i
# renews in slice i % LEASE_SLICES, at its own phase of the period.
LEASE_SLICES = 20
# Every Node an agent makes carries this label; with a Lease not renewed for
# --leftover-seconds, one not in the running agent's shape is a leftover.
FAKE_NODE_LABEL = ("type", "muster-fake-node")
NODE_LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


def log(event, **fields):
    parts = [f"ts={time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime())}", "component=node-agent",
             f"event={event}"]
    for key, value in fields.items():
        text = str(value)
        parts.append(f"{key}={json.dumps(text) if (' ' in text or not text) else text}")
    print(" ".join(parts), flush=True)


# ---------------------------------------------------------------- shape file

def load_shape(path):
    """Returns a list of node descriptions from a cluster-shape file."""
    with open(path) as handle:
        shape = yaml.safe_load(handle)
    nodes = []
    for group in shape.get("groups", []):
        count = int(group["count"])
        prefix = group.get("name", "node")
        topology = group.get("topology") or {}
        blocks = int(topology.get("blocks", 0))
        racks_per_block = int(topology.get("racksPerBlock", 1))
        per_rack = math.ceil(count / (blocks * racks_per_block)) if blocks else 0
        for i in range(count):
            name = f"{prefix}-{i}"
            labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                      "kubernetes.io/arch": "amd64", FAKE_NODE_LABEL[0]: FAKE_NODE_LABEL[1]}
            labels.update({k: str(v) for k, v in (group.get("labels") or {}).items()})
            if blocks:
                rack_global = i // per_rack
                labels[topology.get("blockLabel", "cloud.provider.com/topology-block")] = \
                    f"block-{rack_global // racks_per_block + 1}"
                # Rack names repeat across blocks, as in the KEP's table.
                labels[topology.get("rackLabel", "cloud.provider.com/topology-rack")] = \
                    f"rack-{rack_global % racks_per_block + 1}"
            nodes.append({
                "name": name,
                "labels": labels,
                "allocatable": {k: str(v) for k, v in (group.get("allocatable") or
                                                       {"cpu": "32", "memory": "128Gi", "pods": "110"}).items()},
                "taints": group.get("taints") or [],
                "appear_after": float(group.get("appearAfterSeconds", 0)),
                "ready_after": float(group.get("readyAfterSeconds", 0)),
            })
    names = [node["name"] for node in nodes]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: node names repeat; give each group its own name")
    return nodes


# ---------------------------------------------------------- container model

def parse_duration(text):
    """'100s', '2m', '1000', '1.5' -> seconds, or None."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd]?)", text.strip())
    if not match:
        return None
    unit = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    return float(match.group(1)) * unit


def simulated_run_seconds(pod, container, default):
    annotations = pod["metadata"].get("annotations") or {}
    if ANNOTATION_RUN in annotations:
        return float(annotations[ANNOTATION_RUN])
    words = " ".join((container.get("command") or []) + (container.get("args") or []))
    match = re.search(r"\bsleep\s+(\S+)", words)
    if match:
        seconds = parse_duration(match.group(1))
        if seconds is not None:
            return seconds
    return default


def simulated_exit_code(pod):
    annotations = pod["metadata"].get("annotations") or {}
    code = int(annotations.get(ANNOTATION_EXIT, "0"))
    labels = pod["metadata"].get("labels") or {}
    fail_attempt = annotations.get(ANNOTATION_FAIL_ATTEMPT)
    if fail_attempt is not None and labels.get(api.JOBSET_LABEL_RESTART_ATTEMPT, "0") != fail_attempt:
        return 0
    fail_index = annotations.get(ANNOTATION_FAIL_INDEX)
    if fail_index is not None:
        index = labels.get(COMPLETION_INDEX, annotations.get(COMPLETION_INDEX))
        return code if index == fail_index else 0
    return code


def is_barrier(container):
    return container.get("name") == BARRIER_NAME or "muster-barrier" in container.get("image", "")


# Loopback addresses per agent: block b gives pods 127.(16+2b).x.y and nodes
# 127.(17+2b).x.y. Each agent holds its block (an flock on a file of
# <tmp>/muster-node-agent-blocks) while it runs, starting from one derived
# from its cluster's state dir and taking the next free one: agents side by
# side, of one cluster or of several, never hand out the same addresses, so
# their barriers never collide on IP:port (a hash alone collided once in 120
# pairs of state dirs). 127.0-15.x.y stay free for other tests
# (push_fanout_test: 127.3).
ADDRESS_BLOCKS = 120
BLOCK_LOCKS = os.path.join(tempfile.gettempdir(), "muster-node-agent-blocks")


def address_octets(args):
    """(pod octet, node octet) of the agent's address block, and the open
    lock file that holds it for the agent's life (None for --address-block)."""
    if args.address_block is not None:
        return 16 + 2 * args.address_block, 17 + 2 * args.address_block, None
    state_dir = os.path.dirname(os.path.realpath(args.kubeconfig))
    preferred = int(hashlib.sha256(state_dir.encode()).hexdigest(), 16) % ADDRESS_BLOCKS
    os.makedirs(BLOCK_LOCKS, exist_ok=True)
    for step in range(ADDRESS_BLOCKS):
        block = (preferred + step) % ADDRESS_BLOCKS
        held = open(os.path.join(BLOCK_LOCKS, f"{block}.lock"), "a")
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            held.close()
            continue
        return 16 + 2 * block, 17 + 2 * block, held
    raise SystemExit(f"node_agent: all {ADDRESS_BLOCKS} address blocks are held by other agents ({BLOCK_LOCKS})")


def expand(text, env):
    """Kubernetes $(VAR) expansion: $$ escapes, unknown references stay."""
    def replace(match):
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)", replace, text)


class ExitClock:
    """Notes when each watched child process exits, to the microsecond.

    The agent's main loop reaps barriers between other work, so with thousands
    exiting at once its reap time lags their real exit by up to seconds. This
    thread waits on a pidfd per process (readable once it has exited, before
    and after reaping) and stamps the time; it never reaps. Without pidfds
    (old kernel, no fd left) a process is simply not stamped."""

    def __init__(self):
        self.lock = threading.Lock()
        self.fds = {}    # pidfd -> pid, while waiting
        self.pids = {}   # pid -> pidfd, while waiting
        self.times = {}  # pid -> exit time, until taken
        try:
            self.epoll = select.epoll()
        except (AttributeError, OSError):
            self.epoll = None
            return
        threading.Thread(target=self.run, name="exit-clock", daemon=True).start()

    def watch(self, pid):
        """Call before the child can be reaped (a zombie is fine)."""
        if self.epoll is None or not hasattr(os, "pidfd_open"):
            return
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            return
        with self.lock:
            self.fds[fd] = pid
            self.pids[pid] = fd
            self.epoll.register(fd, select.EPOLLIN)

    def _drop(self, fd):
        """Under the lock: stop waiting on fd."""
        pid = self.fds.pop(fd)
        self.pids.pop(pid, None)
        self.epoll.unregister(fd)
        os.close(fd)
        return pid

    def run(self):
        while True:
            try:
                ready = self.epoll.poll(1.0)
            except InterruptedError:
                continue
            with self.lock:
                # Stamped under the lock, so never earlier than a process whose
                # pidfd took a closed number meanwhile (checked below).
                now = time.time()
                for fd, _ in ready:
                    if fd not in self.fds:
                        continue  # taken meanwhile
                    # The number may have been closed and reused for a newer
                    # child since poll() returned: only a readable pidfd counts.
                    probe = select.poll()
                    probe.register(fd, select.POLLIN)
                    if not probe.poll(0):
                        continue
                    self.times[self._drop(fd)] = now

    def take(self, pid):
        """Right after reaping pid: its exit time; the current time if this
        thread has not stamped it yet (it exited no later than its reaping);
        None if it was never watched."""
        with self.lock:
            fd = self.pids.get(pid)
            if fd is not None:
                self._drop(fd)
                return time.time()
            return self.times.pop(pid, None)


class ContainerState:
    """What kubelet reports for one container."""

    def __init__(self, name):
        self.name = name
        self.state = {"waiting": {"reason": "PodInitializing"}}
        self.restarts = 0
        self.ready = False
        self.last = None

    def status(self, image):
        status = {"name": self.name, "image": image, "imageID": "", "ready": self.ready,
                  "restartCount": self.restarts, "state": self.state, "started": "running" in self.state}
        if self.last:
            status["lastState"] = self.last
        if "running" in self.state or "terminated" in self.state:
            status["containerID"] = f"fake://{self.name}"
        return status


class PodRun:
    """One pod bound to one of our nodes, as kubelet's pod worker sees it."""

    def __init__(self, pod, node, ip, work_dir):
        meta = pod["metadata"]
        self.key = f"{meta['namespace']}/{meta['name']}"
        self.uid = meta["uid"]
        self.pod = pod
        self.node = node
        self.ip = ip
        self.dir = os.path.join(work_dir, "pods", self.uid)
        spec = pod["spec"]
        self.init_specs = spec.get("initContainers") or []
        self.main_specs = spec.get("containers") or []
        self.init = [ContainerState(c["name"]) for c in self.init_specs]
        self.main = [ContainerState(c["name"]) for c in self.main_specs]
        self.init_index = 0
        self.phase = "Pending"
        self.start_time = now_rfc3339()
        self.process = None  # (Popen, container index) of a running barrier
        self.main_left = 0
        self.volumes_ready = False
        self.stopping = False
        self.sync_due = 0.0
        self.reason = None
        self.message = None
        self.ready_at = None

    def restart_policy(self):
        return self.pod["spec"].get("restartPolicy", "Always")

    def status(self):
        initialized = self.init_index >= len(self.init)
        running = self.phase == "Running" and all("running" in c.state for c in self.main)
        ready = running and all(c.ready for c in self.main)
        now = now_rfc3339()
        conditions = [
            {"type": "Initialized", "status": "True" if initialized else "False",
             "lastTransitionTime": now, **({} if initialized else {"reason": "ContainersNotInitialized"})},
            {"type": "ContainersReady", "status": "True" if ready else "False", "lastTransitionTime": now},
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now},
        ]
        status = {
            "phase": self.phase,
            "conditions": conditions,
            "hostIP": self.node["ip"],
            "podIP": self.ip,
            "podIPs": [{"ip": self.ip}],
            "startTime": self.start_time,
            "initContainerStatuses": [c.status(s.get("image", "")) for c, s in zip(self.init, self.init_specs)],
            "containerStatuses": [c.status(s.get("image", "")) for c, s in zip(self.main, self.main_specs)],
            "qosClass": "BestEffort",
        }
        if self.reason:
            status["reason"] = self.reason
        if self.message:
            status["message"] = self.message
        return status


# ------------------------------------------------------------------- agent

class Agent:
    def __init__(self, args):
        self.args = args
        self.kube = Kube(args.kubeconfig,
                         pool_size=args.workers + args.heartbeat_workers + args.lease_workers + 8)
        self.nodes = {node["name"]: node for node in load_shape(args.shape)}
        self.work_dir = os.path.abspath(args.work_dir)
        os.makedirs(os.path.join(self.work_dir, "pods"), exist_ok=True)
        self.stop = threading.Event()
        self.events = queue.Queue()
        self.timers = []  # heap of (when, seq, callback)
        self.timer_seq = 0
        self.pods = {}      # uid -> PodRun
        self.children = {}  # pid -> PodRun
        self.gone = set()   # uids deleted by us, ignored if seen again
        self.configmaps = {}
        self.configmaps_lock = threading.Lock()
        self.next_ip = 1
        self.writer = concurrent.futures.ThreadPoolExecutor(max_workers=args.workers)
        # Lease renewals and periodic node statuses (kubelet's heartbeats, a
        # loop of each node's own) go through a pool of their own: queued with
        # the pod status writes, a renewal of 1,000 leases held every pod
        # status back for seconds.
        self.heartbeats = (concurrent.futures.ThreadPoolExecutor(max_workers=args.heartbeat_workers)
                           if args.heartbeat_workers > 0 else self.writer)
        # Lease renewals have a pool of their own, wide enough that a slow
        # apiserver delays each renewal by its own latency only, as for 1,000
        # kubelets that each renew alone: through 16 threads, at 0.6 s a PATCH
        # under load, 1,000 renewals took 37 s, past kube-controller-manager's
        # 40 s grace with the wait for the next round.
        self.leases = concurrent.futures.ThreadPoolExecutor(max_workers=args.lease_workers)
        self.lease_behind = 0  # renewals skipped in the current period
        self.lease_queued = set()  # node names whose lease renewal is queued or running
        self.lease_lock = threading.Lock()
        self.pending_status = {}  # uid -> (key, status) waiting to be written
        self.inflight = set()     # uids whose writer is running
        self.pending_lock = threading.Lock()
        self.events_file = open(args.events, "a") if args.events else None
        self.events_lock = threading.Lock()
        self.exit_clock = ExitClock() if args.events else None
        self.pod_octet, node_octet, self.address_lock = address_octets(args)
        log("addresses", pods=f"127.{self.pod_octet}.0.0/16", nodes=f"127.{node_octet}.0.0/16")
        for index, node in enumerate(self.nodes.values()):
            node["ip"] = f"127.{node_octet}.{index // 250}.{index % 250 + 1}"
            node["phase"] = index / len(self.nodes)  # of each periodic status report
            node["ready"] = False
            node["created"] = False
            node["waiting"] = {}  # uid -> pod bound before the node was Ready

    # --- timers and the main loop

    def at(self, when, callback):
        self.timer_seq += 1
        heapq.heappush(self.timers, (when, self.timer_seq, callback))

    def delete_leftovers(self):
        """Before this agent's nodes appear: deletes the fake Nodes (and their
        Leases) that are not in its shape and whose Lease has not been renewed
        for --leftover-seconds, or that have no Lease and are that old. An
        agent that ended without deleting its nodes (killed, or stopped with
        its CI run) left them behind in etcd, which a reused machine keeps:
        1,000 NotReady nodes of the scale shape then carried the topology
        labels of the tests' nodes, so a test's rack of 2 nodes had 10, and
        a test counting its 4 nodes by label found 1,004. A running agent
        renews every --lease-seconds, so its nodes are never taken here."""
        label = "=".join(FAKE_NODE_LABEL)
        nodes, _ = self.kube.list("/api/v1/nodes", labelSelector=label)
        leases = {lease["metadata"]["name"]: lease for lease in self.kube.list(NODE_LEASES)[0]}
        now = time.time()

        def age(stamp):
            """Seconds since an API timestamp; 0 (kept) for one that does not parse."""
            try:
                return now - datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            except (AttributeError, ValueError):
                return 0.0

        def stale(node):
            lease = leases.get(node["metadata"]["name"])
            renewed = lease and (lease.get("spec") or {}).get("renewTime")
            return age(renewed or node["metadata"]["creationTimestamp"]) > self.args.leftover_seconds

        doomed = [node["metadata"]["name"] for node in nodes
                  if node["metadata"]["name"] not in self.nodes and stale(node)]
        if not doomed:
            return

        def delete(name):
            try:
                self.kube.delete(f"/api/v1/nodes/{name}")
                self.kube.delete(f"{NODE_LEASES}/{name}")
            except Exception as error:  # noqa: BLE001 - one left still leaves the others deleted
                log("delete-failed", node=name, error=repr(error))

        with concurrent.futures.ThreadPoolExecutor(max_workers=self.args.workers) as pool:
            list(pool.map(delete, doomed))
        log("leftover-nodes-deleted", nodes=len(doomed), label=label, first=doomed[0],
            leftover_seconds=self.args.leftover_seconds)

    def run(self):
        begun = time.monotonic()
        for node in self.nodes.values():
            self.at(begun + node["appear_after"], lambda n=node: self.appear(n))
        nodes = list(self.nodes.values())
        self.lease_slices = [nodes[part::LEASE_SLICES] for part in range(LEASE_SLICES)]
        self.at(begun + self.args.lease_seconds / LEASE_SLICES, lambda: self.renew_lease_slice(0))
        start_watch(self.kube, "/api/v1/pods", lambda t, o: self.events.put(("pod", t, o)), self.stop,
                    query={"fieldSelector": "spec.nodeName!="}, name="pods")
        start_watch(self.kube, "/api/v1/configmaps", self.on_configmap, self.stop, name="configmaps")
        log("started", nodes=len(self.nodes), work_dir=self.work_dir, sync_period=self.args.sync_period)
        while not self.stop.is_set():
            timeout = 0.05
            if self.timers:
                timeout = max(0.0, min(timeout, self.timers[0][0] - time.monotonic()))
            try:
                kind, event_type, obj = self.events.get(timeout=timeout)
                self.guarded(self.on_pod, event_type, obj)
                # Drain what else is queued before looking at timers.
                while True:
                    kind, event_type, obj = self.events.get_nowait()
                    self.guarded(self.on_pod, event_type, obj)
            except queue.Empty:
                pass
            self.guarded(self.reap_children)
            now = time.monotonic()
            while self.timers and self.timers[0][0] <= now:
                _, _, callback = heapq.heappop(self.timers)
                self.guarded(callback)

    @staticmethod
    def guarded(function, *args):
        """Runs one step of the main loop; a failure is logged with its
        traceback and the agent goes on, as kubelet does for one bad pod."""
        try:
            function(*args)
        except Exception as error:  # noqa: BLE001 - one bad pod or timer must not stop the agent
            log("step-failed", step=getattr(function, "__name__", "callback"), error=repr(error),
                where=traceback.format_exc().strip().splitlines()[-3].strip())

    def shutdown(self):
        self.stop.set()
        for run in list(self.pods.values()):
            if run.process:
                try:
                    os.killpg(run.process[0].pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        # Queued writes are dropped; nodes are deleted before waiting for the
        # writes in flight, so a slow apiserver cannot leave them behind.
        self.writer.shutdown(wait=False, cancel_futures=True)
        self.heartbeats.shutdown(wait=False, cancel_futures=True)
        self.leases.shutdown(wait=False, cancel_futures=True)
        if self.args.delete_nodes:
            def delete(name):
                try:
                    self.kube.delete(f"/api/v1/nodes/{name}")
                    self.kube.delete(f"{NODE_LEASES}/{name}")
                except Exception as error:  # noqa: BLE001 - best effort at exit
                    log("delete-failed", node=name, error=repr(error))

            created = [name for name, node in self.nodes.items() if node["created"]]
            with concurrent.futures.ThreadPoolExecutor(max_workers=self.args.workers) as pool:
                list(pool.map(delete, created))
        self.writer.shutdown(wait=True)
        self.heartbeats.shutdown(wait=True)
        self.leases.shutdown(wait=True)
        log("stopped")

    def record(self, run, container, what, **extra):
        if not self.events_file:
            return
        line = json.dumps({"t": time.time(), "pod": run.key, "uid": run.uid, "node": run.node["name"],
                           "container": container, "event": what, **extra})
        with self.events_lock:
            self.events_file.write(line + "\n")
            self.events_file.flush()

    # --- nodes

    def appear(self, node):
        """Main thread: the node comes into existence (maybe not Ready yet).

        The agent's own view is updated before the API writes go out, so a
        pod bound right after the node turns Ready is never ignored."""
        delay = max(0.0, node["ready_after"] - node["appear_after"])
        node["created"] = True
        node["ready"] = delay == 0
        self.writer.submit(self._safe, self.create_node, node, delay == 0)
        if delay:
            log("node-created", node=node["name"], ready_in=delay)
            self.at(time.monotonic() + delay, lambda: self.make_ready(node))
        else:
            log("node-created", node=node["name"])
        # Each node reports at its own phase of the period, as kubelets started
        # at different times do: the nodes of a shape appear within seconds of
        # each other, and 1,000 reports at once (a GET and a PATCH each) every
        # 5 minutes slowed whichever benchmark round they fell in.
        self.at(time.monotonic() + self.args.node_status_seconds * (1 + node["phase"]),
                lambda: self.refresh_status(node))

    def make_ready(self, node):
        node["ready"] = True
        self.writer.submit(self._safe, self.write_node_status, node, True)
        log("node-ready", node=node["name"])
        waiting, node["waiting"] = node["waiting"], {}
        for pod in waiting.values():
            self.on_pod("MODIFIED", pod)

    def refresh_status(self, node):
        self.heartbeats.submit(self._safe, self.write_node_status, node, node["ready"])
        self.at(time.monotonic() + self.args.node_status_seconds, lambda: self.refresh_status(node))

    def create_node(self, node, ready):
        """Writer thread: the Node (with its status, as kubelet registers it),
        its Lease, and when Ready the removal of the not-ready taint.

        The Node is created with its Ready condition and the not-ready taint
        in one request (Nodes accept status on create). Created bare and given
        a status a moment later, the node lifecycle controller may see a node
        without conditions, drop the taint, and let the scheduler bind pods to
        a node that is not Ready yet."""
        taints = list(node["taints"]) + [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
        body = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": node["name"], "labels": node["labels"],
                             "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
                "spec": {"taints": taints},
                "status": self.node_status(node, ready)}
        try:
            self.kube.create("/api/v1/nodes", body)
        except ApiError as error:
            if error.status != 409:
                raise
            # Left by an earlier agent: take it over as it is now.
            self.kube.patch(f"/api/v1/nodes/{node['name']}/status",
                            {"status": self.node_status(node, ready)}, kind="strategic")
            if not ready:
                self.kube.patch(f"/api/v1/nodes/{node['name']}", {"spec": {"taints": taints}})
        self.write_lease(node)
        if ready:
            self.clear_not_ready_taint(node)

    @staticmethod
    def node_status(node, ready):
        now = now_rfc3339()
        alloc = node["allocatable"]
        conditions = [{"type": t, "status": "False", "reason": f"Kubelet Has No {t}",
                       "lastHeartbeatTime": now, "lastTransitionTime": now}
                      for t in ("MemoryPressure", "DiskPressure", "PIDPressure")]
        conditions.append({"type": "Ready", "status": "True" if ready else "False",
                           "reason": "KubeletReady" if ready else "KubeletNotReady",
                           "message": "kubelet is posting ready status" if ready else "node is provisioning",
                           "lastHeartbeatTime": now, "lastTransitionTime": now})
        return {"capacity": alloc, "allocatable": alloc, "conditions": conditions,
                "addresses": [{"type": "InternalIP", "address": node["ip"]},
                              {"type": "Hostname", "address": node["name"]}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {"kubeletVersion": "v1.20.2", "kubeProxyVersion": "v1.20.2",
                             "operatingSystem": "linux", "architecture": "amd64",
                             "containerRuntimeVersion": "muster-node-agent://1", "osImage": "fake",
                             "kernelVersion": "fake", "machineID": "", "systemUUID": "", "bootID": ""}}

    def write_node_status(self, node, ready):
        """Writer thread: posts the node's status; when Ready, clears the taint."""
        self.kube.patch(f"/api/v1/nodes/{node['name']}/status", {"status": self.node_status(node, ready)},
                        kind="strategic")
        if ready:
            self.clear_not_ready_taint(node)

    def clear_not_ready_taint(self, node):
        current = self.kube.get(f"/api/v1/nodes/{node['name']}")
        taints = current["spec"].get("taints") or []
        kept = [t for t in taints if t.get("key") != "node.kubernetes.io/not-ready"]
        if len(kept) != len(taints):
            patch = [{"op": "test", "path": "/metadata/resourceVersion",
                      "value": current["metadata"]["resourceVersion"]},
                     {"op": "replace", "path": "/spec/taints", "value": kept}]
            try:
                self.kube.patch(f"/api/v1/nodes/{node['name']}", patch, kind="json")
            except ApiError as error:
                if error.status not in (409, 422):
                    raise
                time.sleep(0.2)  # a writer thread: retry on a conflict
                self.clear_not_ready_taint(node)

    def write_lease(self, node):
        path = NODE_LEASES
        renew = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        body = {"metadata": {"name": node["name"]},
                "spec": {"holderIdentity": node["name"], "leaseDurationSeconds": 40, "renewTime": renew}}
        try:
            self.kube.patch(f"{path}/{node['name']}", {"spec": body["spec"]})
        except ApiError as error:
            if error.status != 404:
                raise
            self.kube.create(path, body)

    def renew_lease_slice(self, part):
        """Main thread, every --lease-seconds / LEASE_SLICES: queues the
        renewals of one slice of the nodes (node i in slice i % LEASE_SLICES),
        so each node renews every --lease-seconds at its own phase, as kubelets
        do, instead of all 1,000 in one burst. Once a period it logs how many
        renewals it skipped because the last one was still running."""
        self.lease_behind += self.renew_leases(self.lease_slices[part])
        if part == LEASE_SLICES - 1 and self.lease_behind:
            log("lease-renewals-behind", nodes=self.lease_behind, lease_seconds=self.args.lease_seconds,
                lease_workers=self.args.lease_workers)
            self.lease_behind = 0
        self.at(time.monotonic() + self.args.lease_seconds / LEASE_SLICES,
                lambda: self.renew_lease_slice((part + 1) % LEASE_SLICES))

    def renew_leases(self, nodes=None):
        """Queues one renewal per node (every node when None), skipping a node
        whose last renewal is still queued or in flight: on a busy apiserver a
        renewal can take longer than --lease-seconds, and renewals queued
        behind each other would renew every lease later and later until
        kube-controller-manager marks healthy nodes NotReady (kubelet renews
        each node's lease alone and never queues two renewals). Returns how
        many it skipped."""
        behind = 0
        for node in self.nodes.values() if nodes is None else nodes:
            if not node["created"]:
                continue
            with self.lease_lock:
                if node["name"] in self.lease_queued:
                    behind += 1
                    continue
                self.lease_queued.add(node["name"])
            self.leases.submit(self._renew_lease, node)
        return behind

    def _renew_lease(self, node):
        try:
            self._safe(self.write_lease, node)
        finally:
            with self.lease_lock:
                self.lease_queued.discard(node["name"])

    def _safe(self, function, *args):
        """Runs an API write in a writer thread, retrying connection errors and
        server errors (an apiserver that restarts) for up to a minute."""
        delay = 0.2
        deadline = time.monotonic() + 60
        while True:
            try:
                function(*args)
                return
            except ApiError as error:
                if error.status < 500 or time.monotonic() > deadline or self.stop.is_set():
                    log("write-failed", call=function.__name__, error=str(error))
                    return
            except Exception as error:  # noqa: BLE001 - connection refused or reset
                if time.monotonic() > deadline or self.stop.is_set():
                    log("write-failed", call=function.__name__, error=repr(error))
                    return
            time.sleep(delay)
            delay = min(delay * 2, 5.0)

    # --- ConfigMaps (a cache, like kubelet's watch-based manager)

    def on_configmap(self, event_type, obj):
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        with self.configmaps_lock:
            if event_type == "DELETED":
                self.configmaps.pop(key, None)
            else:
                self.configmaps[key] = obj.get("data") or {}

    # --- pods

    def on_pod(self, event_type, pod):
        meta = pod["metadata"]
        node = self.nodes.get(pod["spec"].get("nodeName", ""))
        if node is None or meta["uid"] in self.gone:
            return
        run = self.pods.get(meta["uid"])
        if event_type == "DELETED":
            node["waiting"].pop(meta["uid"], None)
            if run:
                self.forget(run)
            return
        if run is None:
            if pod["status"].get("phase") in ("Succeeded", "Failed"):
                return  # finished before this agent started
            if meta.get("deletionTimestamp"):
                # Never started here: nothing to stop, confirm the deletion.
                self.gone.add(meta["uid"])
                path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
                body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                        "preconditions": {"uid": meta["uid"]}}
                self.writer.submit(self._safe, self.delete_pod, path, body)
                return
            if not node["ready"]:
                # Bound before this agent calls the node Ready (the scheduler
                # saw the node untainted early): started when it turns Ready.
                node["waiting"][meta["uid"]] = pod
                return
            run = self.admit(pod, node)
        old = run.pod
        run.pod = pod
        if meta.get("deletionTimestamp") and not run.stopping:
            self.stop_pod(run)
            return
        # Kubelet syncs a pod when its spec or metadata change (not its status).
        if (old is not pod and (old["spec"] != pod["spec"] or
                                old["metadata"].get("labels") != meta.get("labels") or
                                old["metadata"].get("annotations") != meta.get("annotations"))):
            self.sync(run)

    def admit(self, pod, node):
        ip = node["ip"] if pod["spec"].get("hostNetwork") else self.allocate_ip()
        run = PodRun(pod, node, ip, self.work_dir)
        self.pods[run.uid] = run
        os.makedirs(run.dir, exist_ok=True)
        log("pod-admitted", pod=run.key, node=node["name"], ip=ip)
        self.publish(run)
        self.sync(run)  # starts the first container once the volumes are there
        return run

    def allocate_ip(self):
        """The next pod address of this cluster's block: 65,024 of them,
        then round again (a pod that long gone has freed its address)."""
        n = self.next_ip % 65024
        self.next_ip += 1
        return f"127.{self.pod_octet}.{n // 254}.{n % 254 + 1}"

    def sync(self, run):
        """Kubelet's pod sync: refresh volumes, then schedule the next one."""
        run.volumes_ready = self.project_volumes(run)
        jitter = random.uniform(0, self.args.sync_jitter) * self.args.sync_period
        due = time.monotonic() + self.args.sync_period + jitter
        run.sync_due = due
        self.at(due, lambda: self.periodic_sync(run, due))
        if run.volumes_ready and run.phase == "Pending" and run.process is None and run.init_index == 0 \
                and all("waiting" in c.state for c in run.init):
            self.next_init(run)

    def periodic_sync(self, run, due):
        if run.sync_due != due or run.uid not in self.pods or run.stopping:
            return  # superseded by a sync on an event
        if run.phase in ("Succeeded", "Failed"):
            return  # kubelet stops refreshing the volumes of a finished pod
        self.sync(run)

    def project_volumes(self, run):
        """Writes every configMap volume. False when a required one is missing."""
        ok = True
        for volume in run.pod["spec"].get("volumes") or []:
            path = os.path.join(run.dir, "volumes", volume["name"])
            os.makedirs(path, exist_ok=True)
            source = volume.get("configMap")
            if not source:
                continue
            with self.configmaps_lock:
                data = self.configmaps.get((run.pod["metadata"]["namespace"], source["name"]))
            if data is None and not source.get("optional"):
                ok = False
                continue
            payload = dict(data or {})
            if source.get("items"):
                payload = {item["path"]: payload[item["key"]] for item in source["items"] if item["key"] in payload}
            if atomic_writer.write(path, payload):
                log("volume-updated", pod=run.key, volume=volume["name"], keys=",".join(sorted(payload)))
        return ok

    def publish(self, run):
        """Queues the pod's current status. Writes of one pod never overlap
        (a later status could otherwise land before an earlier one), and
        only the latest queued status is sent."""
        status = run.status()
        with self.pending_lock:
            self.pending_status[run.uid] = (run.key, status)
            if run.uid in self.inflight:
                return
            self.inflight.add(run.uid)
        self.writer.submit(self.write_status, run.uid)

    def write_status(self, uid):
        """Writer thread: sends the queued statuses of one pod until none is left."""
        while True:
            with self.pending_lock:
                item = self.pending_status.pop(uid, None)
                if item is None:
                    self.inflight.discard(uid)
                    return
            self.send_status(uid, *item)

    def send_status(self, uid, key, status):
        """One status write, retried while the apiserver is unreachable or
        returns a server error or a conflict; given up when a newer status
        is queued (the caller sends that one) or after a minute."""
        namespace, name = key.split("/", 1)
        delay, deadline = 0.1, time.monotonic() + 60
        while True:
            try:
                self.kube.patch(f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                                {"metadata": {"uid": uid}, "status": status}, kind="strategic")
                return
            except ApiError as error:
                gone = error.status in (404, 422) or (
                    error.status == 409 and "Precondition failed" in str(error))
                if gone:
                    return  # the pod was deleted or replaced: nothing to report
                retry = error.status >= 500 or error.status in (409, 429)
                failure = str(error)
            except Exception as error:  # noqa: BLE001 - connection refused or reset
                retry, failure = True, repr(error)
            with self.pending_lock:
                newer = uid in self.pending_status
            if not retry or newer or time.monotonic() > deadline or self.stop.is_set():
                if not newer:
                    log("status-write-failed", pod=key, error=failure)
                return
            time.sleep(delay)
            delay = min(delay * 2, 5.0)

    # --- containers

    def next_init(self, run):
        if run.stopping:
            return
        if run.init_index >= len(run.init):
            self.start_main(run)
            return
        spec = run.init_specs[run.init_index]
        state = run.init[run.init_index]
        state.state = {"running": {"startedAt": now_rfc3339()}}
        self.record(run, spec["name"], "started", init=True)
        if is_barrier(spec):
            self.start_barrier(run, spec)
            self.publish(run)
        else:
            self.publish(run)
            seconds = simulated_run_seconds(run.pod, spec, 0.0)
            self.at(time.monotonic() + self.cap(seconds), lambda: self.init_exited(run, 0, ""))

    def cap(self, seconds):
        return min(seconds, self.args.max_run_seconds) if self.args.max_run_seconds else seconds

    def container_env(self, run, spec):
        env = {"PATH": "/usr/bin:/bin", "HOSTNAME": run.pod["spec"].get("hostname") or
               run.pod["metadata"]["name"]}
        namespace = run.pod["metadata"]["namespace"]
        for source in spec.get("envFrom") or []:
            data = self.lookup(namespace, source)
            prefix = source.get("prefix", "")
            env.update({prefix + k: v for k, v in data.items()})
        for item in spec.get("env") or []:
            if "value" in item:
                env[item["name"]] = expand(item["value"], env)
            elif "valueFrom" in item:
                env[item["name"]] = self.env_value(run, namespace, item["valueFrom"])
        return env

    def env_value(self, run, namespace, source):
        meta = run.pod["metadata"]
        if "fieldRef" in source:
            path = source["fieldRef"]["fieldPath"]
            match = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
            if match:
                return (meta.get(match.group(1)) or {}).get(match.group(2), "")
            return {"metadata.name": meta["name"], "metadata.namespace": meta["namespace"],
                    "metadata.uid": meta["uid"], "spec.nodeName": run.node["name"],
                    "spec.serviceAccountName": run.pod["spec"].get("serviceAccountName", ""),
                    "status.hostIP": run.node["ip"], "status.podIP": run.ip,
                    "status.podIPs": run.ip}.get(path, "")
        for kind in ("secretKeyRef", "configMapKeyRef"):
            if kind in source:
                ref = source[kind]
                data = self.lookup(namespace, {kind.replace("KeyRef", "Ref"): ref})
                return data.get(ref["key"], "")
        return ""

    def lookup(self, namespace, source):
        """Data of a Secret or ConfigMap reference, {} when missing."""
        if "secretRef" in source:
            import base64
            try:
                secret = self.kube.get(f"/api/v1/namespaces/{namespace}/secrets/{source['secretRef']['name']}")
            except ApiError:
                return {}
            return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
        if "configMapRef" in source:
            with self.configmaps_lock:
                return dict(self.configmaps.get((namespace, source["configMapRef"]["name"])) or {})
        return {}

    def start_barrier(self, run, spec):
        env = self.container_env(run, spec)
        command = [expand(word, env) for word in (spec.get("command") or ["/muster-barrier"])]
        args = [expand(word, env) for word in (spec.get("args") or [])]
        if command[0].endswith("muster-barrier"):
            command[0] = self.args.barrier
        mounts = {}
        for mount in spec.get("volumeMounts") or []:
            mounts[mount["mountPath"].rstrip("/")] = os.path.join(run.dir, "volumes", mount["name"])
        container_dir = os.path.join(run.dir, "containers", spec["name"])
        os.makedirs(container_dir, exist_ok=True)
        termination = os.path.join(container_dir, "termination-log")
        open(termination, "w").close()
        mounts[spec.get("terminationMessagePath", DEFAULT_TERMINATION_PATH)] = termination
        argv = [map_path(word, mounts) for word in command + args]
        if not any(word.startswith("--termination-log") for word in argv):
            argv += ["--termination-log", termination]
        output = open(os.path.join(container_dir, "log"), "ab")
        try:
            process = subprocess.Popen(argv, env=env, stdout=output, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        except OSError as error:
            # What a runtime reports for an entrypoint that cannot start.
            log("barrier-start-failed", pod=run.key, error=repr(error))
            message = f"StartError: {error}"
            self.at(time.monotonic(), lambda: self.init_exited(run, 128, message))
            return
        finally:
            output.close()
        run.process = (process, termination)
        self.children[process.pid] = run
        if self.exit_clock:
            self.exit_clock.watch(process.pid)
        log("barrier-started", pod=run.key, pid=process.pid, argv=" ".join(argv[1:]))

    def reap_children(self):
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            run = self.children.pop(pid, None)
            exit_t = self.exit_clock.take(pid) if self.exit_clock else None
            if run is None or run.process is None or run.process[0].pid != pid:
                continue
            code = os.waitstatus_to_exitcode(status)
            code = 128 - code if code < 0 else code
            # Reaped here: tell subprocess, so that it never waits for it again.
            run.process[0].returncode = code
            termination = run.process[1]
            run.process = None
            if run.uid not in self.pods:
                continue  # the pod is gone (and its directory with it)
            try:
                with open(termination) as handle:
                    message = handle.read(4096).strip()
            except OSError:
                message = ""
            self.init_exited(run, code, message, exit_t=exit_t)

    def init_exited(self, run, code, message, exit_t=None):
        if run.stopping or run.uid not in self.pods:
            return
        spec = run.init_specs[run.init_index]
        state = run.init[run.init_index]
        started = state.state.get("running", {}).get("startedAt", now_rfc3339())
        terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                      "startedAt": started, "finishedAt": now_rfc3339(), "containerID": f"fake://{spec['name']}"}
        if message:
            terminated["message"] = message
        state.state = {"terminated": terminated}
        # exit_t: when the barrier process really ended (ExitClock), if known.
        self.record(run, spec["name"], "exited", init=True, code=code,
                    **({"exit_t": exit_t} if exit_t is not None else {}))
        log("init-exited", pod=run.key, container=spec["name"], code=code)
        if code == 0:
            run.init_index += 1
            self.next_init(run)
            self.publish(run)
            return
        if run.restart_policy() == "Never":
            run.phase = "Failed"
            for main in run.main:
                main.state = {"waiting": {"reason": "PodInitializing"}}
            self.publish(run)
            return
        # Restarted in place with kubelet's crash-loop back-off.
        state.restarts += 1
        state.last = {"terminated": terminated}
        backoff = min(10 * 2 ** (state.restarts - 1), 300) * self.args.backoff_scale
        state.state = {"waiting": {"reason": "CrashLoopBackOff",
                                   "message": f"back-off {backoff:.0f}s restarting failed container"}}
        self.publish(run)
        self.at(time.monotonic() + backoff, lambda: self.next_init(run))

    def start_main(self, run):
        if run.stopping:
            return
        run.phase = "Running"
        now = now_rfc3339()
        run.main_left = len(run.main)
        for spec, state in zip(run.main_specs, run.main):
            state.state = {"running": {"startedAt": now}}
            state.ready = not spec.get("readinessProbe")
            self.record(run, spec["name"], "started")
            seconds = self.cap(simulated_run_seconds(run.pod, spec, self.args.default_run_seconds))
            self.at(time.monotonic() + seconds, lambda s=spec, st=state: self.main_exited(run, s, st))
            probe = spec.get("readinessProbe")
            if probe:
                delay = self.cap(float(probe.get("initialDelaySeconds", 0)))
                self.at(time.monotonic() + delay, lambda st=state: self.became_ready(run, st))
        log("containers-started", pod=run.key)
        self.publish(run)

    def became_ready(self, run, state):
        if "running" in state.state and not run.stopping:
            state.ready = True
            self.publish(run)

    def main_exited(self, run, spec, state):
        if run.stopping or "running" not in state.state:
            return
        code = simulated_exit_code(run.pod)
        state.state = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                      "startedAt": state.state["running"]["startedAt"],
                                      "finishedAt": now_rfc3339(), "containerID": f"fake://{spec['name']}"}}
        state.ready = False
        self.record(run, spec["name"], "exited", code=code)
        policy = run.restart_policy()
        if code != 0 and policy in ("OnFailure", "Always"):
            state.restarts += 1
            state.last = {"terminated": state.state["terminated"]}
            state.state = {"running": {"startedAt": now_rfc3339()}}
            seconds = self.cap(simulated_run_seconds(run.pod, spec, self.args.default_run_seconds))
            self.at(time.monotonic() + seconds, lambda: self.main_exited(run, spec, state))
            self.publish(run)
            return
        run.main_left -= 1
        if run.main_left == 0:
            codes = [c.state["terminated"]["exitCode"] for c in run.main]
            run.phase = "Succeeded" if all(c == 0 for c in codes) else "Failed"
            log("pod-finished", pod=run.key, phase=run.phase)
        self.publish(run)

    def stop_pod(self, run):
        """The pod is being deleted: stop its containers, then delete it for good."""
        run.stopping = True
        if run.process:
            try:
                os.killpg(run.process[0].pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        meta = run.pod["metadata"]
        log("pod-stopping", pod=run.key)
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                "preconditions": {"uid": run.uid}}
        self.writer.submit(self._safe, self.delete_pod, path, body)

    def delete_pod(self, path, body):
        self.kube.delete(path, body, ok=(200, 202, 404, 409))

    def forget(self, run):
        if run.process:
            try:
                os.killpg(run.process[0].pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.pods.pop(run.uid, None)
        self.gone.add(run.uid)
        shutil.rmtree(run.dir, ignore_errors=True)
        log("pod-removed", pod=run.key)


def map_path(word, mounts):
    """Rewrites a container path (alone or after `--flag=`) to the agent's directory."""
    prefix, sep, value = word.partition("=") if word.startswith("-") and "=" in word else ("", "", word)
    for container_path, host_path in mounts.items():
        if value == container_path or value.startswith(container_path + "/"):
            return prefix + sep + host_path + value[len(container_path):]
    return word


def arguments(argv=None):
    """The parsed command line (argv: sys.argv[1:] when None)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--shape", required=True, help="cluster-shape YAML file")
    parser.add_argument("--work-dir", default="/tmp/muster-node-agent")
    parser.add_argument("--barrier", default=os.path.join(ROOT, "bin", "muster-barrier"))
    parser.add_argument("--sync-period", type=float, default=60.0, help="kubelet syncFrequency, seconds")
    parser.add_argument("--sync-jitter", type=float, default=0.5, help="extra random fraction of the period")
    parser.add_argument("--lease-seconds", type=float, default=10.0)
    parser.add_argument("--node-status-seconds", type=float, default=300.0)
    parser.add_argument("--default-run-seconds", type=float, default=5.0)
    parser.add_argument("--max-run-seconds", type=float, default=0.0, help="cap simulated runs (0: none)")
    parser.add_argument("--backoff-scale", type=float, default=1.0, help="scales crash-loop back-off")
    parser.add_argument("--address-block", type=int, choices=range(ADDRESS_BLOCKS), metavar=f"0..{ADDRESS_BLOCKS - 1}",
                        help="loopback block of pod and node addresses (default: the first free one "
                             "from a block derived from the kubeconfig's directory, the cluster's state dir)")
    parser.add_argument("--workers", type=int, default=16, help="parallel API writes")
    parser.add_argument("--heartbeat-workers", type=int, default=16,
                        help="parallel node status refreshes, apart from the pod status writes "
                             "(0: share --workers)")
    parser.add_argument("--lease-workers", type=int, default=128,
                        help="parallel Lease renewals, apart from every other write")
    parser.add_argument("--events", help="append container start/exit events as JSON lines here")
    parser.add_argument("--delete-nodes", action="store_true", help="delete the nodes on exit")
    parser.add_argument("--leftover-seconds", type=float, default=120.0,
                        help="at start, delete fake nodes not in the shape whose Lease is this much older "
                             "(left by an agent that ended without deleting them)")
    args = parser.parse_args(argv)
    if args.lease_workers < 1:
        parser.error("--lease-workers must be at least 1")
    if not os.access(args.barrier, os.X_OK):
        parser.error(f"--barrier {args.barrier} is not executable: run `make` first")
    return args


def main():
    agent = Agent(arguments())
    signal.signal(signal.SIGTERM, lambda *_: agent.stop.set())
    signal.signal(signal.SIGINT, lambda *_: agent.stop.set())
    try:
        agent.delete_leftovers()
        agent.run()
    finally:
        agent.shutdown()


if __name__ == "__main__":
    main()
